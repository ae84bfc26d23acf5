//! `toolsum mcp` between a real MCP client (the official Python SDK) and real servers
//! (`@modelcontextprotocol/server-filesystem` and `server-everything` from npm; the Python SDK's
//! own server for the 2026-07-28 revision), and `toolsum ask` through the real daemon.
//!
//! The client is `tests/mcp/client.py`; what each side received is recorded with `tee` around
//! the proxy (client side) and around the server (server side), so "absent upstream" and
//! "byte-identical" are checked on the bytes themselves. The pinned packages are installed by
//! `scripts/mcp-test-deps.sh` (called by `scripts/test.sh`) under `~/.cache/toolsum/ci/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::util;

/// The pinned test dependencies: the venv's Python (with `mcp`) and the npm servers.
struct Deps {
    python: PathBuf,
    filesystem: PathBuf,
    everything: PathBuf,
}

fn ci_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs::home_dir().expect("home dir").join(".cache"))
        .join("toolsum/ci")
}

/// The installed test dependencies, or a loud panic naming the command that installs them.
fn deps() -> Deps {
    let ci = ci_dir();
    let d = Deps {
        python: ci.join("venv/bin/python"),
        filesystem: ci
            .join("npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"),
        everything: ci
            .join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    };
    for p in [&d.python, &d.filesystem, &d.everything] {
        assert!(
            p.exists(),
            "MCP test dependency missing: {}\nrun `scripts/mcp-test-deps.sh` (pinned npm servers and \
             the Python MCP SDK under {})",
            p.display(),
            ci.display()
        );
    }
    d
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(name)
}

/// The client-side argv: the proxy, with what it writes to the client copied to `client_in`.
fn proxy_argv(client_in: &Path, proxy: &[String], upstream: &[String]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        "log=$1; shift; \"$@\" | tee -a \"$log\"".into(),
        "sh".into(),
        client_in.display().to_string(),
        util::bin().display().to_string(),
        "mcp".into(),
    ];
    v.extend(proxy.iter().cloned());
    v.push("--".into());
    v.extend(upstream.iter().cloned());
    v
}

/// The server-side argv: `cmd`, with its input copied to `up_in` and its output to `up_out`.
fn teed(up_in: &Path, up_out: &Path, cmd: &[String]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        "i=$1; o=$2; shift 2; tee -a \"$i\" | \"$@\" | tee -a \"$o\"".into(),
        "sh".into(),
        up_in.display().to_string(),
        up_out.display().to_string(),
    ];
    v.extend(cmd.iter().cloned());
    v
}

/// Runs one scenario of `tests/mcp/client.py`; its JSON output. A client that does not finish
/// within `limit` (a safety net against a hang, far above the scenario's run time) is killed and
/// the test fails.
fn run_client(d: &Deps, scenario: &str, cfg: &Value, limit: Duration) -> Value {
    // Output to files, so a large answer cannot fill a pipe nobody reads yet.
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("out.json"), dir.path().join("err.txt"));
    let mut child = Command::new(&d.python)
        .arg(script("client.py"))
        .arg(scenario)
        .arg(cfg.to_string())
        .env_remove("TOOLSUM_CONFIG")
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{scenario}: the MCP client hung (killed after {limit:?}); stderr:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(
        status.success(),
        "{scenario}: client failed ({status}):\n{stderr}"
    );
    let stdout = std::fs::read(&out_path).unwrap();
    serde_json::from_slice(&stdout).unwrap_or_else(|e| {
        panic!(
            "{scenario}: {e}: {}\n{stderr}",
            String::from_utf8_lossy(&stdout)
        )
    })
}

/// Every upstream tool has a required `_intent` string and no `outputSchema` (a summary
/// replaces the structured content it would require); `toolsum_ask` is listed once.
fn assert_intent_everywhere(tools: &Value) {
    let tools = tools.as_array().unwrap();
    assert!(tools.len() > 2, "{tools:?}");
    let mut asks = 0;
    for t in tools {
        if t["name"] == "toolsum_ask" {
            asks += 1;
            continue;
        }
        let has = |k: &str| t[k].as_array().unwrap().contains(&json!("_intent"));
        assert!(has("properties") && has("required"), "{t}");
        assert_eq!(t["output_schema"], false, "{t}");
        assert!(
            t["intent_description"]
                .as_str()
                .unwrap()
                .starts_with("What you are trying to accomplish with this call"),
            "{t}"
        );
    }
    assert_eq!(asks, 1, "{tools:?}");
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

/// The line of `server_out` that answers with `text` as its first content block; asserts the
/// client received that very line (byte-identical JSON-RPC message).
fn assert_passed_unchanged(server_out: &Path, client_in: &Path, text: &str) {
    let sent: Vec<String> = lines(server_out)
        .into_iter()
        .filter(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["result"]["content"][0]["text"] == json!(text))
        })
        .collect();
    assert_eq!(sent.len(), 1, "the server's answer with {text:?}");
    assert!(
        lines(client_in).contains(&sent[0]),
        "the client did not receive the server's line unchanged:\n{}",
        sent[0]
    );
}

/// Nothing the server received carries `_intent` (its `tools/call`s are there).
fn assert_no_intent_upstream(up_in: &Path, calls: usize) {
    let got = lines(up_in);
    let n = got.iter().filter(|l| l.contains("\"tools/call\"")).count();
    assert!(n >= calls, "{n} tools/call upstream: {got:?}");
    for l in &got {
        assert!(!l.contains("_intent"), "the server received _intent: {l}");
    }
}

fn file_of_uri(uri: &str) -> PathBuf {
    let p = uri.strip_prefix("file://").expect("a file:// URI");
    let mut out = Vec::new();
    let b = p.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&p[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    PathBuf::from(String::from_utf8(out).unwrap())
}

/// The blocks of `content` of one type.
fn blocks<'a>(result: &'a Value, kind: &str) -> Vec<&'a Value> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == kind)
        .collect()
}

/// Stops the daemon the proxy started on first use.
struct StopDaemon(PathBuf);
impl Drop for StopDaemon {
    fn drop(&mut self) {
        let _ = Command::new(util::bin())
            .args(["stop", "--socket"])
            .arg(&self.0)
            .output();
    }
}

/// The PNG inside the corpus's MCP screenshot result (846x1006, 53,949 bytes).
fn corpus_png() -> Vec<u8> {
    let v: Value =
        serde_json::from_slice(&std::fs::read(util::corpus_dir().join("b64_01.json")).unwrap())
            .unwrap();
    let data = v["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap()["data"]
        .as_str()
        .unwrap()
        .to_string();
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap()
}

#[test]
fn mcp_proxy_guards_filesystem_reads_and_answers_toolsum_ask() {
    let d = deps();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let log = std::fs::read(util::corpus_dir().join("ci_05.log")).unwrap();
    let png = corpus_png();
    std::fs::write(root.join("build.log"), &log).unwrap();
    std::fs::write(root.join("chart.png"), &png).unwrap();
    std::fs::write(root.join("small.conf"), "port = 8080\n").unwrap();
    // server-filesystem resolves symlinks in its allowed roots: give it the real path.
    let root = std::fs::canonicalize(&root).unwrap();
    let session = tmp.path().join("session");
    let socket = tmp.path().join("run/toolsum.sock");
    let _stop = StopDaemon(socket.clone());
    let (up_in, up_out, client_in) = (
        tmp.path().join("up_in.log"),
        tmp.path().join("up_out.log"),
        tmp.path().join("client_in.log"),
    );
    let upstream = teed(
        &up_in,
        &up_out,
        &[
            "node".into(),
            d.filesystem.display().to_string(),
            root.display().to_string(),
        ],
    );
    let proxy = [
        "--session-dir".to_string(),
        session.display().to_string(),
        "--socket".into(),
        socket.display().to_string(),
        "--model".into(),
        util::model_path("tiny").display().to_string(),
    ];
    let cfg = json!({
        "proxy": proxy_argv(&client_in, &proxy, &upstream),
        "small": root.join("small.conf"),
        "large": root.join("build.log"),
        "image": root.join("chart.png"),
        "intent": "Why did this GitHub Actions build of google/auto fail?",
        "question": "Which Java version did actions/setup-java download?",
    });
    let out = run_client(&d, "fs", &cfg, Duration::from_secs(300));

    assert_intent_everywhere(&out["tools"]);
    assert!(
        lines(&up_out)
            .iter()
            .any(|l| l.contains("\"outputSchema\"")),
        "the server declared output schemas that the client was not shown"
    );
    assert_no_intent_upstream(&up_in, 3);

    // A small read: the server's message, unchanged.
    assert_eq!(out["small"]["content"][0]["text"], "port = 8080\n");
    assert_passed_unchanged(&up_out, &client_in, "port = 8080\n");

    // The large log: a summary with the failure, and a resource_link to a byte-identical copy.
    let large = &out["large"];
    let text = blocks(large, "text");
    assert_eq!(text.len(), 1, "{large}");
    let summary = text[0]["text"].as_str().unwrap();
    assert!(
        summary.contains("class file has wrong version 55.0, should be 52.0"),
        "{summary}"
    );
    assert!(summary.len() < log.len() / 20, "{} bytes", summary.len());
    let links = blocks(large, "resource_link");
    assert_eq!(links.len(), 1, "{large}");
    let saved = file_of_uri(links[0]["uri"].as_str().unwrap());
    assert!(
        saved.starts_with(session.join("long_responses")),
        "{saved:?}"
    );
    assert_eq!(
        std::fs::read(&saved).unwrap(),
        log,
        "the link opens to the log as read"
    );
    assert_eq!(links[0]["size"], json!(log.len()));
    assert_eq!(links[0]["mimeType"], "text/plain");
    assert!(
        summary.contains(&format!("Full response saved to: {}", saved.display())),
        "an absolute pointer: {summary}"
    );
    // server-filesystem declares an outputSchema {content: string}, which the proxy hides:
    // the summary is sent once, not again as structured content.
    assert!(large.get("structuredContent").is_none(), "{large}");

    // The image: saved decoded (typed by its magic bytes), described, linked; no base64 left.
    let image = &out["image"];
    let desc = blocks(image, "text")[0]["text"].as_str().unwrap();
    assert!(
        desc.starts_with("[image/png 846x1006, 53,949 bytes decoded from base64, saved to "),
        "{desc}"
    );
    let links = blocks(image, "resource_link");
    assert_eq!(links[0]["mimeType"], "image/png");
    let saved_png = file_of_uri(links[0]["uri"].as_str().unwrap());
    assert!(std::fs::read(&saved_png).unwrap() == png, "the PNG as read");
    assert!(blocks(image, "image").is_empty());
    assert!(!image.to_string().contains("iVBORw0KGgo"), "{image}");

    // toolsum_ask on the saved log answers the new question from it; nothing is saved again.
    let ask = &out["ask"];
    assert_ne!(ask["isError"], true, "{ask}");
    let answer = blocks(ask, "text")[0]["text"].as_str().unwrap();
    assert!(answer.contains("Java 8.0.322+6 was downloaded"), "{answer}");
    assert!(
        !summary.contains("8.0.322"),
        "the first summary did not show it"
    );
    assert_eq!(
        std::fs::read_dir(session.join("long_responses"))
            .unwrap()
            .count(),
        2,
        "the log and the image, once each"
    );
    // A file outside the session's long_responses/ is refused, with the reason.
    let outside = &out["ask_outside"];
    assert_eq!(outside["isError"], true, "{outside}");
    assert!(
        outside.to_string().contains("is not a saved output"),
        "{outside}"
    );
}

#[test]
fn mcp_proxy_passes_requests_notifications_and_cancellation_through() {
    let d = deps();
    let tmp = tempfile::tempdir().unwrap();
    let (up_in, up_out, client_in) = (
        tmp.path().join("up_in.log"),
        tmp.path().join("up_out.log"),
        tmp.path().join("client_in.log"),
    );
    let upstream = teed(
        &up_in,
        &up_out,
        &[
            "node".into(),
            d.everything.display().to_string(),
            "stdio".into(),
        ],
    );
    // Nothing here is large: no daemon is needed (and none may be started).
    let proxy = [
        "--no-spawn".to_string(),
        "--socket".into(),
        tmp.path().join("none/toolsum.sock").display().to_string(),
        "--session-dir".into(),
        tmp.path().join("session").display().to_string(),
    ];
    let cfg = json!({"proxy": proxy_argv(&client_in, &proxy, &upstream)});
    let out = run_client(&d, "everything", &cfg, Duration::from_secs(180));

    assert_eq!(out["protocol"], "2025-11-25");
    assert_intent_everywhere(&out["tools"]);
    assert_no_intent_upstream(&up_in, 6);
    assert_eq!(out["echo"]["content"][0]["text"], "Echo: hello proxy");
    assert_passed_unchanged(&up_out, &client_in, "Echo: hello proxy");
    // A small image result passes unchanged too.
    let tiny = out["tiny_image"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert_passed_unchanged(&up_out, &client_in, &tiny);
    assert_eq!(blocks(&out["tiny_image"], "image").len(), 1);
    // Server-to-client requests and their answers pass both ways.
    assert!(
        out["sampling"]
            .to_string()
            .contains("sampled by the test client"),
        "{}",
        out["sampling"]
    );
    assert!(out["elicitation"].to_string().contains("octocat"), "{out}");
    // Progress notifications reach the client.
    assert_eq!(out["progress"], json!([[1.0, 3.0], [2.0, 3.0], [3.0, 3.0]]));
    // The client's cancellation reaches the server, and the session goes on.
    assert_eq!(out["cancelled"], true);
    assert!(
        lines(&up_in)
            .iter()
            .any(|l| l.contains("\"notifications/cancelled\"")),
        "no cancellation upstream"
    );
    assert_eq!(
        out["echo_after_cancel"]["content"][0]["text"],
        "Echo: still here"
    );
    assert!(!tmp.path().join("session/long_responses").exists());
}

#[test]
fn mcp_proxy_answers_an_error_when_the_server_dies_mid_call() {
    let d = deps();
    let tmp = tempfile::tempdir().unwrap();
    let pidfile = tmp.path().join("server.pid");
    let upstream = [
        "sh".to_string(),
        "-c".into(),
        "echo $$ > \"$1\"; shift; exec \"$@\"".into(),
        "sh".into(),
        pidfile.display().to_string(),
        "node".into(),
        d.everything.display().to_string(),
        "stdio".into(),
    ];
    let proxy = [
        "--no-spawn".to_string(),
        "--session-dir".into(),
        tmp.path().join("session").display().to_string(),
    ];
    let cfg = json!({
        "proxy": proxy_argv(&tmp.path().join("client_in.log"), &proxy, &upstream),
        "pidfile": pidfile,
        "timeout": 60,
    });
    let out = run_client(&d, "kill", &cfg, Duration::from_secs(120));
    assert!(
        out.get("seconds_after_kill").is_some(),
        "the server was killed: {out}"
    );
    assert_ne!(out["result"], "hang", "{out}");
    assert_eq!(out["error_code"], -32000, "{out}");
    let msg = out["error_message"].as_str().unwrap();
    assert!(
        msg.contains("upstream MCP server") && msg.contains("before answering tools/call"),
        "{msg}"
    );
    assert!(
        msg.contains("SIGKILL") || msg.contains("signal: 9"),
        "{msg}"
    );
}

#[test]
fn mcp_proxy_speaks_the_2026_07_28_revision() {
    let d = deps();
    let tmp = tempfile::tempdir().unwrap();
    let log = std::fs::read(util::corpus_dir().join("ci_08.log")).unwrap();
    let log_path = tmp.path().join("jenkins.log");
    std::fs::write(&log_path, &log).unwrap();
    let (up_in, up_out, client_in) = (
        tmp.path().join("up_in.log"),
        tmp.path().join("up_out.log"),
        tmp.path().join("client_in.log"),
    );
    let upstream = teed(
        &up_in,
        &up_out,
        &[
            d.python.display().to_string(),
            script("modern_server.py").display().to_string(),
        ],
    );
    let session = tmp.path().join("session");
    // No daemon: the large result is guarded in-process without the model (the fallback).
    let proxy = [
        "--no-spawn".to_string(),
        "--socket".into(),
        tmp.path().join("none/toolsum.sock").display().to_string(),
        "--session-dir".into(),
        session.display().to_string(),
        "--model".into(),
        util::model_path("tiny").display().to_string(),
        "--token-limit".into(),
        "2000".into(),
    ];
    let cfg = json!({
        "proxy": proxy_argv(&client_in, &proxy, &upstream),
        "large": log_path,
        "intent": "Did the commons-lang Jenkins build pass? If not, which test failed and where?",
    });
    let out = run_client(&d, "modern", &cfg, Duration::from_secs(180));

    assert_eq!(out["protocol"], "2026-07-28");
    assert_intent_everywhere(&out["tools"]);
    assert!(lines(&up_out)
        .iter()
        .any(|l| l.contains("\"outputSchema\"")));
    assert_no_intent_upstream(&up_in, 3);
    let sent = lines(&up_in);
    assert!(
        !sent.iter().any(|l| l.contains("\"initialize\"")),
        "no handshake in this revision"
    );
    assert!(
        sent.iter()
            .any(|l| l.contains("\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"")),
        "per-request _meta passed through"
    );
    // An input_required result and the client's retry with the answer pass through.
    assert_eq!(out["greet"]["content"][0]["text"], "Hello, octocat");
    assert!(sent.iter().any(|l| l.contains("\"inputResponses\"")));
    assert_eq!(out["small"]["content"][0]["text"], "pong");
    assert_passed_unchanged(&up_out, &client_in, "pong");
    // The large read: guarded (by the in-process fallback), linked, the summary sent once.
    let large = &out["large"];
    assert_eq!(large["resultType"], "complete");
    let summary = blocks(large, "text")[0]["text"].as_str().unwrap();
    assert!(summary.contains("DurationUtilsTest"), "{summary}");
    let link = blocks(large, "resource_link")[0];
    assert!(
        std::fs::read(file_of_uri(link["uri"].as_str().unwrap())).unwrap() == log,
        "the link opens to the log as sent"
    );
    assert!(large.get("structuredContent").is_none(), "{large}");
}

/// `toolsum ask` through the real daemon with the small model: the new question's answer is a
/// fact the first summary did not show, from the same saved file; paths outside a session's
/// `long_responses/` are refused.
#[test]
fn ask_answers_a_new_question_from_a_saved_output() {
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("run/toolsum.sock");
    let session = tmp.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let small = util::model_path("small");
    let mut daemon = Command::new(util::bin())
        .args(["serve", "--socket"])
        .arg(&socket)
        .arg("--model")
        .arg(&small)
        .env_remove("TOOLSUM_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    struct Kill<'a>(&'a mut std::process::Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let t = Instant::now();
    while toolsum::daemon::client::Client::connect(&socket)
        .and_then(|mut c| c.status().map_err(std::io::Error::other))
        .is_err()
    {
        assert!(daemon.try_wait().unwrap().is_none(), "daemon exited");
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "daemon did not come up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _kill = Kill(&mut daemon);
    let toolsum = |args: &[&str]| {
        Command::new(util::bin())
            .args(args)
            .arg("--socket")
            .arg(&socket)
            .arg("--no-spawn")
            .arg("--model-ms")
            .arg("50000")
            .env_remove("TOOLSUM_CONFIG")
            .output()
            .unwrap()
    };
    let log = util::corpus_dir().join("ci_05.log");
    let first = toolsum(&[
        "guard",
        "--json",
        "--tool",
        "Bash",
        "--intent",
        "Why did this GitHub Actions build of google/auto fail?",
        "--session-dir",
        session.to_str().unwrap(),
        log.to_str().unwrap(),
    ]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let first: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(first["kind"], "summary", "{first}");
    let text = first["text"].as_str().unwrap();
    assert!(text.contains("class file has wrong version 55.0"), "{text}");
    assert!(!text.contains("8.0.322"), "{text}");
    let saved_rel = first["saved"][0]["path"].as_str().unwrap();
    let saved = session.join(saved_rel);

    let ask = toolsum(&[
        "ask",
        "--json",
        "--session-dir",
        session.to_str().unwrap(),
        saved.to_str().unwrap(),
        "Which Java version did actions/setup-java download?",
    ]);
    assert!(
        ask.status.success(),
        "{}",
        String::from_utf8_lossy(&ask.stderr)
    );
    let ask: Value = serde_json::from_slice(&ask.stdout).unwrap();
    assert_eq!(ask["kind"], "summary", "{ask}");
    assert!(ask["model"].is_string(), "the model ran: {ask}");
    assert!(ask["reason"]
        .as_str()
        .is_none_or(|r| !r.starts_with("daemon_unavailable")));
    let answer = ask["text"].as_str().unwrap();
    assert!(answer.contains("Java 8.0.322+6 was downloaded"), "{answer}");
    assert!(
        answer.contains(saved_rel),
        "points at the same file: {answer}"
    );
    // The pointer opens from where the command ran (here outside the session dir), as
    // `guard`'s does.
    let pointer = answer
        .lines()
        .find_map(|l| l.strip_prefix("Full response saved to: "))
        .and_then(|l| l.split(" (").next())
        .expect("a pointer line");
    assert!(std::path::Path::new(pointer).is_file(), "{pointer}");
    assert_eq!(ask["saved"][0]["path"], json!(saved_rel));
    assert_eq!(
        std::fs::read_dir(session.join("long_responses"))
            .unwrap()
            .count(),
        1,
        "nothing saved again"
    );

    // Refused: a file outside long_responses/, a symlink out of it, another session's file.
    let outside = tmp.path().join("notes.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    let link = session.join("long_responses/20990101T000000.000_x.txt");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    for p in [&outside, &link] {
        let r = toolsum(&["ask", p.to_str().unwrap(), "what is in it?"]);
        assert!(!r.status.success());
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains("is not a saved output"), "{err}");
    }
    let other = tempfile::tempdir().unwrap();
    let r = toolsum(&[
        "ask",
        "--session-dir",
        other.path().to_str().unwrap(),
        saved.to_str().unwrap(),
        "q",
    ]);
    assert!(!r.status.success());
    // The daemon refuses too (the protocol op, without the CLI's own check).
    let mut c = toolsum::daemon::client::Client::connect(&socket).unwrap();
    let e = c
        .ask(&json!({"path": outside, "question": "what is in it?"}))
        .unwrap_err();
    assert!(
        matches!(&e, toolsum::daemon::client::ClientError::Remote { kind, .. } if kind == "forbidden"),
        "{e}"
    );
}
