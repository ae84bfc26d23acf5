//! Agent hooks, install, and the guard path's faults (issue 18): the real binary, the real
//! daemon with the tiny model on a temp socket, each agent's documented payloads
//! (`tests/fixtures/hooks/`, sources in its README).
//!
//! Every printed answer is checked against the shape its agent accepts, and every pointer is
//! opened from the payload's `cwd` and compared with the output byte for byte.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};
use toolsum::daemon::client::Client;

use crate::util;

/// A daemon child process, killed when dropped.
pub(crate) struct Daemon(Child);
impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn start_daemon(socket: &Path, flags: &[&str], envs: &[(&str, &str)]) -> Daemon {
    let child = Command::new(util::bin())
        .args(["serve", "--socket"])
        .arg(socket)
        .arg("--model")
        .arg(util::model_path("tiny"))
        .args(flags)
        .env_remove("TOOLSUM_CONFIG")
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut d = Daemon(child);
    let t = Instant::now();
    while Client::connect(socket)
        .ok()
        .and_then(|mut c| c.status().ok())
        .is_none()
    {
        if let Some(st) = d.0.try_wait().unwrap() {
            panic!("daemon exited early: {st}");
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "daemon did not come up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    d
}

/// The environment of one test: a temp home for state, a project dir, a socket.
pub(crate) struct Env {
    _tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) project: PathBuf,
    pub(crate) socket: PathBuf,
    pub(crate) state: PathBuf,
}

pub(crate) fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let project = root.join("proj");
    std::fs::create_dir(&project).unwrap();
    let state = root.join("state");
    Env {
        socket: root.join("run/toolsum.sock"),
        _tmp: tmp,
        root,
        project,
        state,
    }
}

pub(crate) fn run_with_stdin(mut cmd: Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let w = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    w.join().unwrap();
    out
}

/// `toolsum hook <agent>` in the project dir, the payload on stdin.
fn hook(e: &Env, agent: &str, payload: &[u8]) -> Output {
    let mut c = Command::new(util::bin());
    c.args(["hook", agent, "--no-spawn", "--socket"])
        .arg(&e.socket)
        .arg("--model")
        .arg(util::model_path("tiny"))
        .current_dir(&e.project)
        .env_remove("TOOLSUM_CONFIG")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("GEMINI_PROJECT_DIR")
        .env("XDG_STATE_HOME", &e.state);
    let out = run_with_stdin(c, payload);
    assert!(out.status.success(), "{agent}: exit {:?}", out.status);
    out
}

pub(crate) fn corpus(name: &str) -> String {
    String::from_utf8(std::fs::read(util::corpus_dir().join(name)).unwrap()).unwrap()
}

/// The base64 PNG (200x120) of the corpus's MCP screenshot case.
fn png_b64() -> String {
    let v: Value = serde_json::from_str(&corpus("cases/case_08_mcp_screenshot.json")).unwrap();
    fn find(v: &Value) -> Option<String> {
        match v {
            Value::Object(o) => {
                if o.get("type").and_then(Value::as_str) == Some("image") {
                    return o.get("data").and_then(Value::as_str).map(String::from);
                }
                o.values().find_map(find)
            }
            Value::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    find(&v).expect("the screenshot case has an image block")
}

/// Values the placeholders of a fixture take.
struct Fill<'a> {
    e: &'a Env,
    saved: Option<(String, String)>,
}

fn fill(v: &mut Value, f: &Fill) {
    match v {
        Value::String(s) if s.starts_with('@') => {
            let s2 = s.clone();
            let (kind, arg) = s2.split_once(':').unwrap_or((s2.as_str(), ""));
            *v = match kind {
                "@cwd" => json!(f.e.project),
                "@corpus" => json!(corpus(arg)),
                "@head" => {
                    let (name, n) = arg.split_once(':').unwrap();
                    let text = corpus(name);
                    let mut n: usize = n.parse().unwrap();
                    while !text.is_char_boundary(n) {
                        n -= 1;
                    }
                    json!(text[..n])
                }
                "@persisted" => {
                    // Where Claude Code keeps a large output: its own tool-results dir.
                    let dir = f.e.root.join("claude/tool-results");
                    std::fs::create_dir_all(&dir).unwrap();
                    let p = dir.join(format!("{arg}.txt"));
                    std::fs::write(&p, corpus(arg)).unwrap();
                    json!(p)
                }
                "@size" => json!(corpus(arg).len()),
                "@png" => json!(png_b64()),
                "@json" => {
                    let mut inner: Value = serde_json::from_str(arg).unwrap();
                    fill(&mut inner, f);
                    json!(inner.to_string())
                }
                "@transcript" => {
                    // Claude Code's transcript: the user's request, then the call's own
                    // assistant turn (JSON lines).
                    let p = f.e.root.join("claude/transcript.jsonl");
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    let lines = [
                        json!({"type": "user", "message": {"role": "user", "content": arg}}),
                        json!({"type": "assistant", "message": {"role": "assistant",
                            "content": [{"type": "tool_use", "name": "Read", "id": "t1"}]}}),
                    ];
                    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
                    std::fs::write(&p, body).unwrap();
                    json!(p)
                }
                "@saved" => json!(f.saved.as_ref().unwrap().0),
                "@saved-content" => json!(f.saved.as_ref().unwrap().1),
                _ => return,
            };
        }
        Value::Array(a) => a.iter_mut().for_each(|x| fill(x, f)),
        Value::Object(o) => o.values_mut().for_each(|x| fill(x, f)),
        _ => {}
    }
}

fn fixture(name: &str, f: &Fill) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    let text = std::fs::read(&path).unwrap();
    let Ok(mut v) = serde_json::from_slice::<Value>(&text) else {
        return text; // a malformed fixture goes as it is
    };
    fill(&mut v, f);
    serde_json::to_vec(&v).unwrap()
}

/// The one JSON answer a hook printed (it must print nothing else).
/// The large Claude Code payload with `flaw` spliced in before its log's first `ERROR`, run
/// through the hook: the stdout it answers, the saved file that points at, and what the hook
/// logged for this call alone (the log's earlier lines left out, so a note from another call
/// cannot pass for this one's).
fn flawed_payload(f: &Fill, flaw: &[u8]) -> (String, Vec<u8>, String) {
    let e = f.e;
    let mut payload = fixture("claude-code.bash.large.json", f);
    let at = payload
        .windows(5)
        .position(|w| w == b"ERROR")
        .expect("the large log has an ERROR");
    payload.splice(at..at, flaw.iter().copied());
    let log_path = e.state.join("toolsum/hook.log");
    let before = std::fs::read(&log_path).map_or(0, |b| b.len());
    let out = hook(e, "claude-code", &payload);
    let text = answer(&out)["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
        .as_str()
        .expect("a summary in stdout")
        .to_string();
    let saved = open_from(&e.project, &pointer(&text));
    let logged = std::fs::read(&log_path).expect("the hook log");
    let logged = String::from_utf8_lossy(&logged[before..]).into_owned();
    (text, saved, logged)
}

fn answer(out: &Output) -> Value {
    let s = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(s.trim()).unwrap_or_else(|e| {
        panic!(
            "not one JSON answer ({e}): {s:?}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The saved file a text points at, opened from `cwd`: its path as written.
pub(crate) fn pointer(text: &str) -> String {
    for pre in [
        "Full response saved to: ",
        "from the saved file ",
        "saved to ",
    ] {
        if let Some(i) = text.find(pre) {
            let rest = &text[i + pre.len()..];
            let end = rest.find([' ', ']']).unwrap();
            return rest[..end].to_string();
        }
    }
    panic!("no pointer in {text}")
}

pub(crate) fn open_from(cwd: &Path, p: &str) -> Vec<u8> {
    std::fs::read(cwd.join(p)).unwrap_or_else(|e| panic!("{p} from {}: {e}", cwd.display()))
}

fn saved_count(e: &Env) -> usize {
    let mut n = 0;
    for s in std::fs::read_dir(e.project.join(".toolsum"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(rd) = std::fs::read_dir(s.path().join("long_responses")) {
            n += rd
                .flatten()
                .filter(|f| !f.file_name().to_string_lossy().starts_with('.'))
                .count();
        }
    }
    n
}

#[test]
fn every_agent_hook_against_the_real_daemon() {
    let e = env();
    let _d = start_daemon(
        &e.socket,
        &["--model-ms", "20000"],
        &[("TOOLSUM_MAX_NEW_TOKENS", "32")],
    );
    let f = Fill { e: &e, saved: None };
    let log = corpus("ci_05.log");

    // ---- Claude Code: a large Bash result keeps Bash's shape; the pointer opens from cwd.
    let out = hook(
        &e,
        "claude-code",
        &fixture("claude-code.bash.large.json", &f),
    );
    let a = answer(&out);
    let hso = a["hookSpecificOutput"].as_object().unwrap();
    assert_eq!(hso["hookEventName"], "PostToolUse");
    assert_eq!(hso.len(), 2, "{a}");
    let u = &hso["updatedToolOutput"];
    // BashOutput (sdk-tools.d.ts): stdout, stderr strings and interrupted bool are required.
    assert!(
        u["stdout"].is_string() && u["stderr"].is_string() && u["interrupted"].is_boolean(),
        "{u}"
    );
    assert_eq!(u["noOutputExpected"], false, "other fields copied");
    let text = u["stdout"].as_str().unwrap();
    assert!(text.len() < log.len() / 20, "{} bytes", text.len());
    assert!(
        text.contains("BUILD FAILURE") || text.contains("[ERROR]"),
        "{text}"
    );
    let p = pointer(text);
    assert!(
        p.starts_with(".toolsum/5d2c7f0e-3b7a-4c1e-9a51-2f0c6f8e9b11/long_responses/"),
        "{p}"
    );
    assert_eq!(open_from(&e.project, &p), log.as_bytes());
    let mode = std::fs::metadata(
        e.project
            .join(".toolsum/5d2c7f0e-3b7a-4c1e-9a51-2f0c6f8e9b11"),
    )
    .unwrap()
    .permissions()
    .mode();
    assert_eq!(mode & 0o777, 0o700);
    let saved = (
        e.project.join(&p),
        String::from_utf8(open_from(&e.project, &p)).unwrap(),
    );

    // persistedOutputPath: the full text comes from Claude Code's saved copy, and the persisted
    // fields are dropped (with them Claude Code would show its own preview instead).
    let out = hook(
        &e,
        "claude-code",
        &fixture("claude-code.bash.persisted.json", &f),
    );
    let u = answer(&out)["hookSpecificOutput"]["updatedToolOutput"].clone();
    assert!(
        u.get("persistedOutputPath").is_none() && u.get("persistedOutputSize").is_none(),
        "{u}"
    );
    let p = pointer(u["stdout"].as_str().unwrap());
    assert_eq!(
        open_from(&e.project, &p),
        corpus("log_01.log").as_bytes(),
        "the whole log, not the cut stdout"
    );

    // stdout and stderr both large: the model reads them as one result, so they get one
    // summary within the one cap (not two), and the saved file holds both, stdout first.
    let out = hook(
        &e,
        "claude-code",
        &fixture("claude-code.bash.both.json", &f),
    );
    let u = answer(&out)["hookSpecificOutput"]["updatedToolOutput"].clone();
    assert_eq!(u["stderr"], "", "{u}");
    let text = u["stdout"].as_str().unwrap();
    let tok = toolsum::tokenizer::GgufTokenizer::from_gguf_path(&util::model_path("tiny")).unwrap();
    let n = tok.count(text);
    assert!(
        n <= toolsum::guard::summarize::RESULT_TOKEN_CAP,
        "{n} tokens"
    );
    assert!(text.contains("BUILD FAILURE"), "stderr's failure: {text}");
    let both = [corpus("log_01.log"), log.clone()].concat();
    assert_eq!(open_from(&e.project, &pointer(text)), both.as_bytes());

    // Small: nothing printed.
    let out = hook(
        &e,
        "claude-code",
        &fixture("claude-code.bash.small.json", &f),
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // MCP with an image: content blocks, in both fields; the PNG saved decoded.
    let out = hook(
        &e,
        "claude-code",
        &fixture("claude-code.mcp.image.json", &f),
    );
    let a = answer(&out);
    let blocks = &a["hookSpecificOutput"]["updatedToolOutput"];
    assert_eq!(blocks, &a["hookSpecificOutput"]["updatedMCPToolOutput"]);
    assert_eq!(blocks.as_array().unwrap().len(), 1);
    assert_eq!(blocks[0]["type"], "text");
    let text = blocks[0]["text"].as_str().unwrap();
    assert!(text.contains("image/png 200x120"), "{text}");
    assert!(
        text.contains("Took a screenshot of the full current page."),
        "{text}"
    );
    assert!(!text.contains("iVBOR"));
    let p = pointer(text);
    let png = base64::engine::general_purpose::STANDARD
        .decode(png_b64())
        .unwrap();
    assert_eq!(open_from(&e.project, &p), png);

    // MCP text: guarded as the log itself, not a JSON wrapper.
    let out = hook(
        &e,
        "claude-code",
        &fixture("claude-code.mcp.large.json", &f),
    );
    let a = answer(&out);
    let text = a["hookSpecificOutput"]["updatedToolOutput"][0]["text"]
        .as_str()
        .unwrap();
    assert!(!text.contains("JSON document"), "{text}");
    assert_eq!(open_from(&e.project, &pointer(text)), log.as_bytes());

    // A Read carries no intent: the user's last request, from the transcript the payload
    // names, steers the summary to what it asks (the failing test compile and its cause; a
    // Read steered by its arguments alone quotes neither).
    let out = hook(
        &e,
        "claude-code",
        &fixture("claude-code.read.large.json", &f),
    );
    let u = answer(&out)["hookSpecificOutput"]["updatedToolOutput"].clone();
    let text = u["file"]["content"].as_str().unwrap();
    for fact in [
        "CompileWithEclipseTest.java:[42,46] cannot access org.eclipse.jdt.internal.compiler",
        "maven-compiler-plugin:3.10.1:testCompile (default-testCompile) on project functional",
    ] {
        assert!(text.contains(fact), "{fact}: {text}");
    }
    assert_eq!(open_from(&e.project, &pointer(text)), log.as_bytes());

    // Reading the saved file back: not saved again; the summary points at the same file.
    let before = saved_count(&e);
    let f2 = Fill {
        e: &e,
        saved: Some((saved.0.display().to_string(), saved.1.clone())),
    };
    let out = hook(
        &e,
        "claude-code",
        &fixture("claude-code.read.saved.json", &f2),
    );
    let u = answer(&out)["hookSpecificOutput"]["updatedToolOutput"].clone();
    assert_eq!(u["type"], "text");
    assert_eq!(u["file"]["filePath"], json!(saved.0), "other fields kept");
    let text = u["file"]["content"].as_str().unwrap();
    assert!(text.contains("it was not saved again"), "{text}");
    assert_eq!(e.project.join(pointer(text)), saved.0);
    assert_eq!(saved_count(&e), before, "a read-back is never saved again");

    // Malformed: nothing printed, exit 0, the reason logged.
    let out = hook(
        &e,
        "claude-code",
        &fixture("claude-code.malformed.json", &f),
    );
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the payload is not JSON"));
    let logged = std::fs::read_to_string(e.state.join("toolsum/hook.log")).unwrap();
    assert!(
        logged.contains("nothing printed: the payload is not JSON"),
        "{logged}"
    );

    // Raw bytes that are not UTF-8 inside the payload's strings: still guarded (bad bytes
    // read as U+FFFD), and the reason logged.
    let (text, _, logged) = flawed_payload(&f, &[0xff, 0xfe]);
    assert!(
        text.len() < log.len() / 20,
        "summarized: {} bytes",
        text.len()
    );
    assert!(!pointer(&text).is_empty(), "{text}");
    assert!(logged.contains("not valid UTF-8"), "{logged}");

    // A lone UTF-16 surrogate escaped in a string (JavaScript's `JSON.stringify` of a string
    // cut mid-pair): still guarded, the surrogate read as U+FFFD, and the reason logged.
    let (_, saved, logged) = flawed_payload(&f, b"\\udcff");
    assert!(
        String::from_utf8_lossy(&saved).contains("\u{FFFD}ERROR"),
        "the saved output keeps the line, the surrogate as U+FFFD"
    );
    assert!(logged.contains("lone UTF-16 surrogate"), "{logged}");

    // A lone high half (`\ud83d`, an emoji cut in two: serde_json says "unexpected end of
    // hex escape") in the same payload as raw bytes that are not UTF-8 (trial of session 53:
    // nothing was printed): still guarded, both read as U+FFFD, both reasons logged.
    let (_, saved, logged) = flawed_payload(&f, b"\xff\\ud83d");
    assert!(
        String::from_utf8_lossy(&saved).contains("\u{FFFD}\u{FFFD}ERROR"),
        "the saved output keeps the line, the byte and the half pair as U+FFFD"
    );
    assert!(logged.contains("1 lone UTF-16 surrogate"), "{logged}");
    assert!(logged.contains("not valid UTF-8: 1 invalid"), "{logged}");

    codex(&e);
    gemini(&e);
    cursor(&e);
    guard_path_faults(&e);
}

fn codex(e: &Env) {
    let f = Fill { e, saved: None };
    let log = corpus("ci_05.log");
    for name in [
        "codex.bash.large.string.json",
        "codex.bash.large.object.json",
    ] {
        let a = answer(&hook(e, "codex", &fixture(name, &f)));
        // post-tool-use.command.output.schema.json: decision "block" + reason, nothing else.
        assert_eq!(a.as_object().unwrap().len(), 2, "{a}");
        assert_eq!(a["decision"], "block");
        let text = a["reason"].as_str().unwrap();
        assert!(text.len() < log.len() / 20);
        // The one cap holds for the reason as printed, its opening line counted.
        let tok =
            toolsum::tokenizer::GgufTokenizer::from_gguf_path(&util::model_path("tiny")).unwrap();
        let n = tok.count(text);
        assert!(
            n <= toolsum::guard::summarize::RESULT_TOKEN_CAP,
            "{name}: {n} tokens"
        );
        // The model is told its output was replaced, not the command refused.
        assert!(
            text.starts_with("toolsum saved this command's long output")
                || text.starts_with("The command exited with code"),
            "{name}: {text}"
        );
        let p = pointer(text);
        assert!(
            p.starts_with(".toolsum/0199a2b4-7c3d-7e10-9f00-5a6b7c8d9e0f/"),
            "{p}"
        );
        let saved = open_from(&e.project, &p);
        assert!(
            saved.starts_with(log.as_bytes()),
            "{name}: the saved file holds the output"
        );
    }
    assert!(hook(e, "codex", &fixture("codex.bash.small.json", &f))
        .stdout
        .is_empty());
    let a = answer(&hook(e, "codex", &fixture("codex.mcp.image.json", &f)));
    let text = a["reason"].as_str().unwrap();
    assert!(text.contains("image/png 200x120"), "{text}");
    let out = hook(e, "codex", &fixture("codex.malformed.json", &f));
    assert!(out.stdout.is_empty());
    // A payload with no tool_response: the result stands, and the log says why.
    let out = hook(
        e,
        "codex",
        br#"{"hook_event_name":"PostToolUse","tool_name":"Bash","cwd":"/tmp"}"#,
    );
    assert!(out.stdout.is_empty());
    let logged = std::fs::read_to_string(e.state.join("toolsum/hook.log")).unwrap();
    assert!(
        logged
            .lines()
            .last()
            .unwrap()
            .contains("nothing to guard: no tool_response"),
        "{logged}"
    );
}

fn gemini(e: &Env) {
    let f = Fill { e, saved: None };
    let a = answer(&hook(e, "gemini", &fixture("gemini.shell.large.json", &f)));
    assert_eq!(a["decision"], "deny");
    let text = a["reason"].as_str().unwrap();
    assert!(text.starts_with("not an error: toolsum saved"), "{text}");
    assert_eq!(
        open_from(&e.project, &pointer(text)),
        corpus("ci_05.log").as_bytes()
    );
    assert!(hook(e, "gemini", &fixture("gemini.shell.small.json", &f))
        .stdout
        .is_empty());
    let a = answer(&hook(e, "gemini", &fixture("gemini.mcp.image.json", &f)));
    let text = a["reason"].as_str().unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(png_b64())
        .unwrap();
    assert_eq!(open_from(&e.project, &pointer(text)), png);
    assert!(hook(e, "gemini", &fixture("gemini.malformed.json", &f))
        .stdout
        .is_empty());
}

fn cursor(e: &Env) {
    let f = Fill { e, saved: None };
    let a = answer(&hook(e, "cursor", &fixture("cursor.mcp.large.json", &f)));
    assert_eq!(a.as_object().unwrap().len(), 1, "{a}");
    let content = a["updated_mcp_tool_output"]["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    assert_eq!(content[0]["type"], "text");
    let text = content[0]["text"].as_str().unwrap();
    let p = pointer(text);
    assert!(
        p.starts_with(".toolsum/c0ffee00-1234-4abc-9def-0123456789ab/"),
        "{p}"
    );
    assert_eq!(open_from(&e.project, &p), corpus("ci_05.log").as_bytes());
    assert!(hook(e, "cursor", &fixture("cursor.mcp.small.json", &f))
        .stdout
        .is_empty());
    let a = answer(&hook(e, "cursor", &fixture("cursor.mcp.image.json", &f)));
    let text = a["updated_mcp_tool_output"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("image/png 200x120"), "{text}");
    // Built-in tools cannot be replaced in Cursor: nothing printed.
    assert!(hook(e, "cursor", &fixture("cursor.shell.json", &f))
        .stdout
        .is_empty());
    assert!(hook(e, "cursor", &fixture("cursor.malformed.json", &f))
        .stdout
        .is_empty());
}

/// `toolsum guard` with each fault of the issue: a result on stdout, exit 0, the fault on
/// stderr.
fn guard_path_faults(e: &Env) {
    let run = |args: &[&str], input: &[u8], envs: &[(&str, &str)]| -> Output {
        let mut c = Command::new(util::bin());
        c.args(["guard", "--no-spawn", "--socket"])
            .arg(&e.socket)
            .arg("--model")
            .arg(util::model_path("tiny"))
            .args(args)
            .current_dir(&e.project)
            .env_remove("TOOLSUM_CONFIG")
            .env("XDG_STATE_HOME", &e.state)
            .envs(envs.iter().copied());
        let out = run_with_stdin(c, input);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let small = b"3 passed, 0 failed\n";
    let big = corpus("ci_05.log");
    let err = |o: &Output| String::from_utf8_lossy(&o.stderr).to_string();
    let stdout = |o: &Output| String::from_utf8_lossy(&o.stdout).to_string();

    // A session dir that is a file: small output as it is; large saved in the fallback dir.
    let file = e.root.join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let fs = file.to_str().unwrap();
    let o = run(&["--tool", "Bash", "--session-dir", fs], small, &[]);
    assert_eq!(o.stdout, small);
    let o = run(
        &["--tool", "Bash", "--session-dir", fs],
        big.as_bytes(),
        &[],
    );
    assert!(err(&o).contains("is not a directory"), "{}", err(&o));
    let p = pointer(&stdout(&o));
    assert!(
        p.starts_with(e.state.join("toolsum/fallback").to_str().unwrap()),
        "{p}"
    );
    assert_eq!(std::fs::read(&p).unwrap(), big.as_bytes());

    // A missing session dir whose parent exists: created, 0700.
    let fresh = e.project.join("fresh-session");
    let o = run(
        &["--tool", "Bash", "--session-dir", fresh.to_str().unwrap()],
        big.as_bytes(),
        &[],
    );
    assert_eq!(
        std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let p = pointer(&stdout(&o));
    assert!(
        p.starts_with("fresh-session/long_responses/"),
        "relative to cwd: {p}"
    );
    assert_eq!(open_from(&e.project, &p), big.as_bytes());

    // A summary ends its last line (a passthrough is the bytes as they came, above).
    assert!(stdout(&o).ends_with(".\n"), "{:?}", stdout(&o));

    // A FILE that is not there: no output to keep, so an error naming it and a failing exit
    // (not an empty result and exit 0).
    let missing = e.project.join("no-such-output.log");
    let mut c = Command::new(util::bin());
    c.args(["guard", "--no-spawn", "--tool", "Bash", "--socket"])
        .arg(&e.socket)
        .arg(&missing)
        .current_dir(&e.project)
        .env("XDG_STATE_HOME", &e.state);
    let o = run_with_stdin(c, b"");
    assert!(!o.status.success());
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    assert!(
        err(&o).contains("no-such-output.log") && err(&o).contains("No such file"),
        "{}",
        err(&o)
    );
    let mut c = Command::new(util::bin());
    c.args(["guard", "--no-spawn", "--tool", "Bash", "--socket"])
        .arg(&e.socket)
        .arg(&e.project)
        .current_dir(&e.project)
        .env("XDG_STATE_HOME", &e.state);
    let o = run_with_stdin(c, b"");
    assert!(!o.status.success());
    assert!(err(&o).contains("it is a directory"), "{}", err(&o));

    // --args that is not JSON, an empty --tool.
    let o = run(&["--tool", "Bash", "--args", "not json"], small, &[]);
    assert_eq!(o.stdout, small);
    assert!(err(&o).contains("--args is not valid JSON"), "{}", err(&o));
    let o = run(&["--tool", ""], big.as_bytes(), &[]);
    assert!(err(&o).contains("tool name is empty"), "{}", err(&o));
    assert!(
        pointer(&stdout(&o)).ends_with("_tool.txt"),
        "{}",
        stdout(&o)
    );

    // A config typo and a bad variable: named on stderr, the result still printed.
    let cfg = e.root.join("config.toml");
    std::fs::write(&cfg, "token_limt = 5\n").unwrap();
    let o = run(
        &["--tool", "Bash"],
        small,
        &[("TOOLSUM_CONFIG", cfg.to_str().unwrap())],
    );
    assert_eq!(o.stdout, small);
    assert!(
        err(&o).contains("unknown key `token_limt` (did you mean `token_limit`?)"),
        "{}",
        err(&o)
    );
    assert!(
        err(&o).contains("accepted keys: socket, model"),
        "{}",
        err(&o)
    );
    let o = run(
        &["--tool", "Bash"],
        small,
        &[("TOOLSUM_TOKEN_LIMIT", "abc")],
    );
    assert_eq!(o.stdout, small);
    assert!(
        err(&o).contains("TOOLSUM_TOKEN_LIMIT=\"abc\"")
            && err(&o).contains("expected a whole number of tokens"),
        "{}",
        err(&o)
    );
    // The hook path takes the same faults without breaking the agent.
    let payload = fixture("claude-code.bash.large.json", &Fill { e, saved: None });
    let mut c = Command::new(util::bin());
    c.args(["hook", "claude-code", "--no-spawn", "--socket"])
        .arg(&e.socket)
        .arg("--model")
        .arg(util::model_path("tiny"))
        .current_dir(&e.project)
        .env("TOOLSUM_CONFIG", &cfg)
        .env("TOOLSUM_TOKEN_LIMIT", "abc")
        .env("XDG_STATE_HOME", &e.state);
    let o = run_with_stdin(c, &payload);
    assert!(o.status.success());
    assert!(answer(&o)["hookSpecificOutput"]["updatedToolOutput"]["stdout"].is_string());
    assert!(err(&o).contains("token_limt"), "{}", err(&o));
}

#[test]
fn daemon_settings_hold_across_the_socket() {
    let e = env();
    let _d = start_daemon(
        &e.socket,
        &["--token-limit", "300"],
        &[
            ("TOOLSUM_SUMMARIZE_LIMIT", "2000"),
            ("TOOLSUM_MAX_NEW_TOKENS", "16"),
        ],
    );
    let guard = |input: &str, extra: &[&str]| -> Value {
        let out = util::run_guard(
            &e.socket,
            &e.project,
            "Bash",
            input.as_bytes().to_vec(),
            extra,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let log = corpus("ci_05.log");
    let mid: String = log.chars().take(4_000).collect(); // ~1,000 tokens: over 300, under 2,000
    let r = guard(&mid, &[]);
    assert_ne!(
        r["kind"], "passthrough",
        "the daemon's --token-limit 300 holds: {r}"
    );
    assert!(
        r["reason"].is_null()
            || !r["reason"]
                .as_str()
                .unwrap()
                .starts_with("daemon_unavailable"),
        "{r}"
    );
    let r = guard(&log, &[]);
    assert!(
        r["reason"].as_str().unwrap().starts_with("too_large"),
        "TOOLSUM_SUMMARIZE_LIMIT=2000 holds: {r}"
    );
    // What the caller sets wins.
    let r = guard(&mid, &["--token-limit", "100000"]);
    assert_eq!(r["kind"], "passthrough", "{r}");
    let r = guard(
        &log,
        &[
            "--token-limit",
            "100",
            "--summarize-limit",
            "1000000",
            "--model-ms",
            "1",
        ],
    );
    assert!(
        !r["reason"].as_str().unwrap_or("").starts_with("too_large"),
        "{r}"
    );
}
