//! The remote backend (issue 16): the real daemon with `--backend openai` against a real
//! llama.cpp `llama-server` serving the small GGUF on 127.0.0.1 (built once by
//! `scripts/build-llama-server.sh` and cached; `TOOLSUM_LLAMA_SERVER` names another binary).
//!
//! One server carries the first test: summaries through it, six requests in flight at once
//! (seen in `status`), then the server killed mid-request (every client still gets a result)
//! and the server gone. The second: the API key (a wrong one is refused by the server), the
//! server stopped (SIGSTOP: it accepts and never answers, so "slow" is deterministic), and the
//! local model answering for a dead backend. The third: a tiny TCP responder for the replies a
//! real server does not give (garbage, an error page, endless streams), which also shows the
//! exact `Authorization` header.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolsum::daemon::client::Client;
use toolsum::guard::GuardResponse;

use crate::util;

/// The model name llama-server reports (`--alias`).
const ALIAS: &str = "qwen-small";
/// The API key the server is started with.
const KEY: &str = "sk-toolsum-test";

/// A child process, SIGKILLed when dropped.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The cached llama-server binary, or a loud panic naming the command that builds it.
fn llama_server_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("TOOLSUM_LLAMA_SERVER") {
        return PathBuf::from(p);
    }
    let p = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs::home_dir().expect("home dir").join(".cache"))
        .join("toolsum/ci/llama-server-0.3.36/bin/llama-server");
    assert!(
        p.exists(),
        "llama-server missing at {}: run `scripts/build-llama-server.sh` first \
         (or point TOOLSUM_LLAMA_SERVER at a llama-server binary)",
        p.display()
    );
    p
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts llama-server with the small model (`slots` parallel slots of 4,096 tokens each, one
/// thread: on a shared 2-core machine llama.cpp's spinning threads slow down many times when a
/// core is taken; `--no-repack`: its AMX repacked path crashes on this CPU) and waits until it
/// lists its model.
fn start_llama(port: u16, slots: usize) -> Proc {
    let child = Command::new(llama_server_bin())
        .arg("-m")
        .arg(util::model_path("small"))
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-np", &slots.to_string(), "-c", &(4096 * slots).to_string()])
        .args(["-t", "1", "--no-repack", "--alias", ALIAS, "--api-key", KEY])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut p = Proc(child);
    let url = format!("http://127.0.0.1:{port}/v1/models");
    wait_for("llama-server up", Duration::from_secs(120), || {
        assert!(p.0.try_wait().unwrap().is_none(), "llama-server exited");
        ureq::get(&url)
            .set("Authorization", &format!("Bearer {KEY}"))
            .call()
            .is_ok()
    });
    p
}

/// Starts `toolsum serve` on `socket` with `args` and `envs` (the small model's tokenizer
/// unless `args` names a model) and waits until `status` answers.
fn start_daemon(socket: &Path, args: &[&str], envs: &[(&str, &str)]) -> Proc {
    let mut cmd = Command::new(util::bin());
    cmd.args(["serve", "--socket"]).arg(socket);
    if !args.contains(&"--model") {
        cmd.arg("--model").arg(util::model_path("small"));
    }
    let child = cmd
        .args(args)
        .env_remove("TOOLSUM_CONFIG")
        .env_remove("TOOLSUM_BACKEND_API_KEY")
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut d = Proc(child);
    wait_for("daemon up", Duration::from_secs(120), || {
        assert!(d.0.try_wait().unwrap().is_none(), "daemon exited early");
        status(socket).is_some()
    });
    d
}

fn status(socket: &Path) -> Option<Value> {
    Client::connect(socket).ok()?.status().ok()
}

fn corpus(name: &str) -> String {
    String::from_utf8_lossy(&std::fs::read(util::corpus_dir().join(name)).unwrap()).into_owned()
}

/// A guard request for `content` over a 500-token limit, with a small model budget (the server
/// shares two cores with everything else) and generous time.
fn guard_req(session: &Path, content: &str, model_ms: u64) -> Value {
    json!({"tool": "Bash", "session_dir": session, "content": content,
           "intent": "why did the build fail", "token_limit": 500,
           "prefill_budget": 200, "max_new_tokens": 32,
           "model_ms": model_ms, "deadline_ms": model_ms + 30_000})
}

fn guard(socket: &Path, req: &Value) -> GuardResponse {
    let mut c = Client::connect(socket).unwrap();
    c.set_timeout(Some(Duration::from_secs(300))).unwrap();
    c.guard(req).unwrap()
}

fn kind(r: &GuardResponse) -> String {
    serde_json::to_value(r.kind)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

/// The saved file the response points at holds `content`, byte for byte.
fn pointer_opens(session: &Path, r: &GuardResponse, content: &str) {
    let saved = r.saved.last().expect("a saved file");
    assert!(r.text.contains(&saved.path), "{}", r.text);
    assert_eq!(
        std::fs::read_to_string(session.join(&saved.path)).unwrap(),
        content
    );
}

/// Six corpus outputs between the 500-token limit and the 100,000-token summarize limit.
const INPUTS: [&str; 6] = [
    "ci_08.log",
    "ci_05.log",
    "log_02.log",
    "test_04.xml",
    "sql_01.sql",
    "shell_03.txt",
];

#[test]
fn summaries_through_llama_server_six_at_once_then_killed() {
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("run/toolsum.sock");
    let session = tmp.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let port = free_port();
    let mut server = start_llama(port, 2);
    let url = format!("http://127.0.0.1:{port}/v1");
    let _d = start_daemon(
        &socket,
        &["--backend", "openai", "--backend-url", &url],
        &[("TOOLSUM_BACKEND_API_KEY", KEY)],
    );
    let st = status(&socket).unwrap();
    assert_eq!(
        st["backend"],
        json!({"kind": "openai", "url": url, "model": ALIAS, "parallel": 8, "fallback": "none"}),
        "{st}"
    );
    assert_eq!(st["model"], json!(format!("openai:{ALIAS}")));

    // ---- One summary: the server narrates; facts and pointer as with the local model.
    let log = corpus("ci_08.log");
    let r = guard(&socket, &guard_req(&session, &log, 120_000));
    assert_eq!(kind(&r), "summary", "{r:?}");
    assert_eq!(r.model.as_deref(), Some("openai:qwen-small"), "{r:?}");
    assert!(r.timings_ms.decode > 0.0, "{:?}", r.timings_ms);
    assert!(r.text.contains("DurationUtilsTest"), "{}", r.text);
    assert!(r.text.contains("BUILD FAILURE"), "{}", r.text);
    pointer_opens(&session, &r, &log);
    let st = status(&socket).unwrap();
    assert_eq!(st["remote_requests"]["ok"], json!(1), "{st}");
    assert_eq!(st["requests"]["summary"], json!(1), "{st}");

    // ---- Six at once: all in flight together (two slots on the server, four in its queue).
    let inputs: Vec<String> = INPUTS.iter().map(|f| corpus(f)).collect();
    let clients: Vec<_> = inputs
        .iter()
        .map(|content| {
            let (s, req) = (socket.clone(), guard_req(&session, content, 240_000));
            std::thread::spawn(move || guard(&s, &req))
        })
        .collect();
    wait_for(
        "six remote requests in flight",
        Duration::from_secs(60),
        || status(&socket).unwrap()["remote_in_flight"] == json!(6),
    );
    for (i, c) in clients.into_iter().enumerate() {
        let r = c.join().unwrap();
        assert_eq!(kind(&r), "summary", "{i}: {r:?}");
        assert_eq!(r.model.as_deref(), Some("openai:qwen-small"), "{i}: {r:?}");
        pointer_opens(&session, &r, &inputs[i]);
    }
    let st = status(&socket).unwrap();
    assert!(st["remote_in_flight_max"].as_u64().unwrap() >= 6, "{st}");
    assert_eq!(st["remote_in_flight"], json!(0), "{st}");
    assert!(
        st["remote_latency_ms"]["p95"].as_f64().unwrap() > 0.0,
        "{st}"
    );

    // ---- The server killed mid-request: every client still gets a result, in time.
    let t = Instant::now();
    let clients: Vec<_> = inputs[..3]
        .iter()
        .map(|content| {
            let (s, req) = (socket.clone(), guard_req(&session, content, 240_000));
            std::thread::spawn(move || guard(&s, &req))
        })
        .collect();
    wait_for(
        "three remote requests in flight",
        Duration::from_secs(60),
        || status(&socket).unwrap()["remote_in_flight"] == json!(3),
    );
    unsafe { libc::kill(server.0.id() as i32, libc::SIGKILL) };
    let _ = server.0.wait();
    for (i, c) in clients.into_iter().enumerate() {
        let r = c.join().unwrap();
        assert!(r.ok);
        assert!(r.model.is_none(), "{i}: {r:?}");
        let why = r.reason.clone().unwrap_or_default();
        assert!(why.contains(&format!("openai backend {url}")), "{i}: {why}");
        assert!(r.text.contains("Status: "), "{i}: the digest: {}", r.text);
        pointer_opens(&session, &r, &inputs[i]);
    }
    assert!(t.elapsed() < Duration::from_secs(240), "{:?}", t.elapsed());

    // ---- Nothing listens any more: a bounded number of connect attempts, then the digest.
    let t = Instant::now();
    let r = guard(&socket, &guard_req(&session, &log, 30_000));
    let why = r.reason.clone().unwrap_or_default();
    assert!(
        why.contains("cannot connect") && why.contains("3 attempts"),
        "{why}"
    );
    assert!(r.text.contains("DurationUtilsTest"), "{}", r.text);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let st = status(&socket).unwrap();
    assert!(
        st["remote_requests"]["connect"].as_u64().unwrap() >= 1,
        "{st}"
    );
}

#[test]
fn api_key_stopped_server_and_local_fallback() {
    let tmp = tempfile::tempdir().unwrap();
    let session = tmp.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let port = free_port();
    let server = start_llama(port, 1);
    let url = format!("http://127.0.0.1:{port}/v1");
    let log = corpus("ci_08.log");

    // ---- An id-list constraint goes as a JSON schema and comes back in the engine's shape.
    constrained_output(&url);

    // ---- A wrong key: the server refuses it (so the header is sent), the digest says so.
    let socket = tmp.path().join("a/toolsum.sock");
    let d = start_daemon(
        &socket,
        &["--backend", "openai", "--backend-url", &url],
        &[("TOOLSUM_BACKEND_API_KEY", "sk-wrong")],
    );
    let r = guard(&socket, &guard_req(&session, &log, 30_000));
    let why = r.reason.clone().unwrap_or_default();
    assert!(why.contains("HTTP 401"), "{why}");
    assert!(!why.contains("sk-wrong"), "the key is never shown: {why}");
    assert!(r.model.is_none());
    pointer_opens(&session, &r, &log);
    let st = status(&socket).unwrap();
    assert_eq!(st["remote_requests"]["http_4xx"], json!(1), "{st}");
    drop(d);

    // ---- A stopped server accepts connections and never answers: the digest at the deadline.
    let socket = tmp.path().join("b/toolsum.sock");
    let _d = start_daemon(
        &socket,
        &[
            "--backend",
            "openai",
            "--backend-url",
            &url,
            "--backend-model",
            ALIAS,
        ],
        &[("TOOLSUM_BACKEND_API_KEY", KEY)],
    );
    unsafe { libc::kill(server.0.id() as i32, libc::SIGSTOP) };
    let t = Instant::now();
    let r = guard(&socket, &guard_req(&session, &log, 3_000));
    let took = t.elapsed();
    unsafe { libc::kill(server.0.id() as i32, libc::SIGCONT) };
    let why = r.reason.clone().unwrap_or_default();
    assert!(why.contains("timed out"), "{why}");
    assert!(r.text.contains("DurationUtilsTest"), "{}", r.text);
    assert!(took < Duration::from_secs(6), "{took:?}");
    let st = status(&socket).unwrap();
    assert_eq!(st["remote_requests"]["timeout"], json!(1), "{st}");
    drop(server);

    // ---- The local model answers for a backend that is down.
    let socket = tmp.path().join("c/toolsum.sock");
    let dead = format!("http://127.0.0.1:{}/v1", free_port());
    let tiny = util::model_path("tiny");
    let _d = start_daemon(
        &socket,
        &[
            "--backend",
            "openai",
            "--backend-url",
            &dead,
            "--backend-model",
            "gone",
            "--backend-fallback",
            "local",
            "--model",
            tiny.to_str().unwrap(),
        ],
        &[],
    );
    let st = status(&socket).unwrap();
    let local_name = st["fallback"]["model"].as_str().unwrap().to_string();
    assert!(
        !local_name.is_empty() && !local_name.starts_with("openai:"),
        "{st}"
    );
    assert_eq!(st["engine"]["path"], json!(tiny), "{st}");
    let r = guard(&socket, &guard_req(&session, &log, 60_000));
    assert_eq!(kind(&r), "summary", "{r:?}");
    assert_eq!(r.model.as_deref(), Some(local_name.as_str()), "{r:?}");
    assert!(r.timings_ms.decode > 0.0, "{:?}", r.timings_ms);
    pointer_opens(&session, &r, &log);
    let st = status(&socket).unwrap();
    assert_eq!(st["remote_requests"]["connect"], json!(1), "{st}");
    assert_eq!(st["remote_fallback"]["local"], json!(1), "{st}");
}

/// The library's narrator on the real server with an [`OutputConstraint`]: the server's
/// structured output picks the one offered id the prompt points at, and the reply reads as the
/// local engine's (`e2\n`, then the text when asked for).
fn constrained_output(url: &str) {
    use toolsum::backend::{NarrateRequest, Narrator, OutputConstraint};
    use toolsum::remote::{ApiKey, OpenAiBackend, OpenAiNarrator, RemoteSettings};
    let counter = Arc::new(
        toolsum::tokenizer::GgufTokenizer::from_gguf_path(&util::model_path("small")).unwrap(),
    );
    let backend = OpenAiBackend::new(
        RemoteSettings {
            url: url.to_string(),
            model: None,
            parallel: 1,
            connect_ms: 2_000,
            api_key: ApiKey::new(KEY),
        },
        counter,
    )
    .unwrap();
    let mut n = OpenAiNarrator::new(backend.clone(), None);
    let ids: Vec<String> = ["e1", "e2", "e3"].map(String::from).to_vec();
    let mut req = NarrateRequest {
        system: "You pick lines of a log by their id.".into(),
        user: "Lines:\ne1: build started\ne2: ERROR: disk full on /dev/sda1\ne3: build finished\n\
               Give the id of the line that reports an error."
            .into(),
        max_new_tokens: 32,
        deadline: Some(Instant::now() + Duration::from_secs(120)),
        cancel: Default::default(),
        constraint: Some(OutputConstraint::Ids {
            ids: ids.clone(),
            max: 1,
            then_text: false,
        }),
    };
    let out = n.narrate(&req).unwrap();
    assert_eq!(out.text, "e2\n", "{out:?}");
    assert_eq!(n.model_name(), format!("openai:{ALIAS}"));
    req.constraint = Some(OutputConstraint::Ids {
        ids,
        max: 2,
        then_text: true,
    });
    let out = n.narrate(&req).unwrap();
    let c = req.constraint.as_ref().unwrap();
    let (picked, rest) = c.parse_ids(&out.text);
    assert!(
        picked.contains(&"e2".to_string()) && picked.len() <= 2,
        "{out:?}"
    );
    assert!(
        out.text.starts_with(&format!("{}\n", picked.join(", "))),
        "{out:?}"
    );
    assert!(!rest.trim().is_empty(), "text after the ids line: {out:?}");
    assert_eq!(backend.stats().report()["remote_requests"]["ok"], json!(2));
}

/// What the responder sends for the n-th chat request.
#[derive(Clone, Copy, Debug)]
enum Reply {
    /// An event stream whose event is not JSON.
    BadEvent,
    /// A JSON reply without choices.
    NoChoices,
    /// A proxy's HTML error page.
    Html503,
    /// Text chunks forever, ignoring `max_tokens`.
    Endless,
    /// Headers, then nothing.
    Silent,
}

const SCRIPT: [Reply; 5] = [
    Reply::BadEvent,
    Reply::NoChoices,
    Reply::Html503,
    Reply::Endless,
    Reply::Silent,
];

/// Reads one HTTP request; returns its request line and `Authorization` header.
fn read_request(s: &TcpStream) -> Option<(String, Option<String>)> {
    let mut r = BufReader::new(s.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let (mut len, mut auth) = (0usize, None);
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 || h == "\r\n" {
            break;
        }
        let (k, v) = h.split_once(':')?;
        match k.to_ascii_lowercase().as_str() {
            "content-length" => len = v.trim().parse().ok()?,
            "authorization" => auth = Some(v.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some((line, auth))
}

/// A garbage server on 127.0.0.1: `/models` lists one model; chat requests get [`SCRIPT`] in
/// turn. Records every `Authorization` header.
fn responder() -> (u16, Arc<Mutex<Vec<Option<String>>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let auths = Arc::new(Mutex::new(Vec::new()));
    let seen = auths.clone();
    std::thread::spawn(move || {
        let mut n = 0;
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let Some((line, auth)) = read_request(&s) else {
                continue;
            };
            seen.lock().unwrap().push(auth);
            if line.contains("/models") {
                let b = r#"{"object":"list","data":[{"id":"garbage-model"}]}"#;
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                    b.len()
                );
                continue;
            }
            let reply = SCRIPT[n % SCRIPT.len()];
            n += 1;
            std::thread::spawn(move || {
                let sse = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
                let _ = match reply {
                    Reply::BadEvent => write!(s, "{sse}data: {{\"choices\": [{{\"delta\"\n\n"),
                    Reply::NoChoices => {
                        let b = r#"{"id":"x","object":"chat.completion","choices":7}"#;
                        write!(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}", b.len())
                    }
                    Reply::Html503 => {
                        let b = "<html><body><h1>503 Service Unavailable</h1></body></html>";
                        write!(s, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}", b.len())
                    }
                    Reply::Endless => {
                        let _ = write!(s, "{sse}");
                        let chunk = "data: {\"choices\":[{\"delta\":{\"content\":\"more \"}}]}\n\n";
                        // Until the client hangs up (bounded: 100,000 chunks).
                        for _ in 0..100_000 {
                            if s.write_all(chunk.as_bytes()).is_err() {
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(2));
                        }
                        Ok(())
                    }
                    Reply::Silent => {
                        let _ = write!(s, "{sse}");
                        // Until the client hangs up (bounded: 60 s).
                        let mut b = [0u8; 1];
                        s.set_read_timeout(Some(Duration::from_secs(60))).ok();
                        let _ = s.read(&mut b);
                        Ok(())
                    }
                };
            });
        }
    });
    (port, auths)
}

#[test]
fn garbage_replies_give_the_digest_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("run/toolsum.sock");
    let session = tmp.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let (port, auths) = responder();
    let url = format!("http://127.0.0.1:{port}/v1");
    let _d = start_daemon(
        &socket,
        &["--backend", "openai", "--backend-url", &url],
        &[("TOOLSUM_BACKEND_API_KEY", "sk-garbage")],
    );
    assert_eq!(
        status(&socket).unwrap()["backend"]["model"],
        json!("garbage-model")
    );
    let log = corpus("ci_08.log");
    let expect = [
        ("malformed reply", "stream event is not JSON"),
        ("malformed reply", "no choices"),
        ("HTTP 503", "503 Service Unavailable"),
        ("endless stream", "chunks of text without an end"),
        ("timed out", "no text within"),
    ];
    for (i, (what, detail)) in expect.iter().enumerate() {
        let t = Instant::now();
        let r = guard(&socket, &guard_req(&session, &log, 4_000));
        let took = t.elapsed();
        let why = r.reason.clone().unwrap_or_default();
        assert!(
            why.contains(&format!("openai backend {url}: {what}")) && why.contains(detail),
            "{i} {:?}: {why}",
            SCRIPT[i]
        );
        assert!(r.model.is_none(), "{i}");
        assert!(r.text.contains("DurationUtilsTest"), "{i}: {}", r.text);
        pointer_opens(&session, &r, &log);
        assert!(took < Duration::from_secs(8), "{i}: {took:?}");
    }
    let st = status(&socket).unwrap();
    let outcomes = &st["remote_requests"];
    assert_eq!(outcomes["malformed"], json!(2), "{st}");
    assert_eq!(outcomes["http_5xx"], json!(1), "{st}");
    assert_eq!(outcomes["overrun"], json!(1), "{st}");
    assert_eq!(outcomes["timeout"], json!(1), "{st}");
    let auths = auths.lock().unwrap();
    assert!(auths.len() >= 6, "{auths:?}");
    assert!(
        auths
            .iter()
            .all(|a| a.as_deref() == Some("Bearer sk-garbage")),
        "{auths:?}"
    );
}
