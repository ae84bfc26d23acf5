//! The daemon, protocol v1 and the client.
//!
//! Tier 2 (no weights): the server's queue shape with a fake slow narrator and a counter that is
//! slow on a marked text, driven through the library and the real client: short requests wait
//! neither for the model nor for the long lane. Tier 3: the real binary with the tiny model, one daemon for the
//! whole group (loading costs seconds), plus the client's fallback and auto-spawn.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolsum::backend::{NarrateRequest, Narration, Narrator, StopReason, TokenCounter};
use toolsum::config::{Config, ConfigLayer};
use toolsum::daemon::client::Client;
use toolsum::daemon::server::{Server, ServerSettings};
use toolsum::daemon::worker::{Loaded, ModelWorker};
use toolsum::guard::GuardResponse;

use crate::util;

// ---------------------------------------------------------------- tier 2: fake narrator

/// Marks a text whose count is slow: [`WordCounter`] takes [`SLOW_COUNT`] over it.
const SLOW_MARK: &str = "SLOW-COUNT";
/// How long counting a text with [`SLOW_MARK`] takes.
const SLOW_COUNT: Duration = Duration::from_secs(4);
/// Set while a slow count runs.
static SLOW_COUNT_RUNNING: AtomicBool = AtomicBool::new(false);

/// Counts whitespace-separated words: deterministic, no weights; slow on [`SLOW_MARK`].
struct WordCounter;
impl TokenCounter for WordCounter {
    fn count(&self, text: &str) -> usize {
        if text.starts_with(SLOW_MARK) {
            SLOW_COUNT_RUNNING.store(true, Ordering::SeqCst);
            std::thread::sleep(SLOW_COUNT);
            SLOW_COUNT_RUNNING.store(false, Ordering::SeqCst);
        }
        text.split_whitespace().count()
    }
}

/// Sleeps `delay` (checking the cancel flag every 10 ms), then answers a fixed text.
struct SlowNarrator {
    delay: Duration,
    saw_cancel: Arc<AtomicBool>,
}
impl Narrator for SlowNarrator {
    fn narrate(&mut self, req: &NarrateRequest) -> anyhow::Result<Narration> {
        let t = Instant::now();
        while t.elapsed() < self.delay {
            if req.cancel.load(Ordering::SeqCst) {
                self.saw_cancel.store(true, Ordering::SeqCst);
                return Ok(Narration {
                    stop: Some(StopReason::Cancelled),
                    ..Default::default()
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Narration {
            text: "Status: done.".into(),
            generated_tokens: 3,
            stop: Some(StopReason::Eos),
            ..Default::default()
        })
    }
    fn prefill_tok_per_s(&self) -> f64 {
        1e6
    }
    fn decode_tok_per_s(&self) -> f64 {
        1e3
    }
    fn model_name(&self) -> String {
        "slow-fake".into()
    }
}

fn big_text(words: usize) -> String {
    (0..words)
        .map(|i| format!("line {i} word{i} value={}\n", i * 7))
        .collect()
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn guard_req(session: &Path, content: &str, token_limit: usize) -> Value {
    json!({"tool": "Bash", "session_dir": session, "content": content, "token_limit": token_limit})
}

#[test]
fn queue_shape_cheap_requests_never_wait_for_the_model() {
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("d.sock");
    let session = tmp.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let sc = saw_cancel.clone();
    let (worker, counter) = ModelWorker::spawn(1, move || {
        Ok(Loaded {
            narrator: Box::new(SlowNarrator {
                delay: Duration::from_secs(3),
                saw_cancel: sc,
            }),
            counter: Arc::new(WordCounter),
            describe: json!({"device": "fake"}),
        })
    })
    .unwrap();
    let cfg = Config::resolve(ConfigLayer::default(), &|_| None);
    let mut settings = ServerSettings::from_config(&cfg);
    // One long-lane thread, which a slow count below occupies.
    settings.long_threads = 1;
    let server = Server::new(settings, worker, counter).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let srv = server.clone();
    let sock = socket.clone();
    let serving = rt.spawn(async move {
        toolsum::daemon::serve_on(&sock, srv, async {
            let _ = stop_rx.await;
        })
        .await
        .unwrap()
    });
    wait_for("socket", Duration::from_secs(5), || {
        Client::connect(&socket).is_ok()
    });
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // Job 1 occupies the model for 3 s.
    let big = big_text(400);
    let (s1, b1, p1) = (socket.clone(), big.clone(), session.clone());
    let job1 = std::thread::spawn(move || {
        Client::connect(&s1)
            .unwrap()
            .guard(&guard_req(&p1, &b1, 50))
            .unwrap()
    });
    let mut status = Client::connect(&socket).unwrap();
    wait_for("model busy", Duration::from_secs(10), || {
        status.status().unwrap()["queue"]["busy"] == json!(true)
    });

    // While it runs: count, pass-through and status answer at once.
    let t = Instant::now();
    let mut c = Client::connect(&socket).unwrap();
    let n = c.count(b"three small words").unwrap();
    assert_eq!(n["tokens"], json!(3));
    assert_eq!(n["bytes"], json!(17));
    let r = c.guard(&guard_req(&session, "short output\n", 50)).unwrap();
    assert_eq!(r.text, "short output\n");
    assert_eq!(serde_json::to_value(r.kind).unwrap(), json!("passthrough"));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());

    // Job 2 waits in the queue (capacity 1); job 3 finds it full: an immediate preview.
    let (s2, b2, p2) = (socket.clone(), big.clone(), session.clone());
    let job2 = std::thread::spawn(move || {
        let mut c = Client::connect(&s2).unwrap();
        c.guard(&guard_req(&p2, &b2, 50)).unwrap()
    });
    wait_for("a queued job", Duration::from_secs(10), || {
        status.status().unwrap()["queue"]["depth"] == json!(1)
    });
    let t = Instant::now();
    let r3 = c.guard(&guard_req(&session, &big, 50)).unwrap();
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(serde_json::to_value(r3.kind).unwrap(), json!("preview"));
    assert!(
        r3.reason.as_deref().unwrap().starts_with("overloaded"),
        "{:?}",
        r3.reason
    );

    let r1 = job1.join().unwrap();
    assert_eq!(r1.model.as_deref(), Some("slow-fake"), "{r1:?}");
    let r2 = job2.join().unwrap();
    assert!(
        r2.timings_ms.queue > 500.0,
        "job 2 waited: {:?}",
        r2.timings_ms
    );

    // A client that hangs up while its job runs cancels it; the daemon keeps serving.
    {
        let mut raw = UnixStream::connect(&socket).unwrap();
        let mut line = serde_json::to_vec(&json!({"op":"guard","tool":"Bash","session_dir":session,"content":big,"token_limit":50})).unwrap();
        line.push(b'\n');
        raw.write_all(&line).unwrap();
        wait_for("model busy again", Duration::from_secs(10), || {
            status.status().unwrap()["queue"]["busy"] == json!(true)
        });
    }
    wait_for(
        "cancel reaches the narrator",
        Duration::from_secs(2),
        || saw_cancel.load(Ordering::SeqCst),
    );
    let st = status.status().unwrap();
    assert_eq!(st["model"], json!("slow-fake"));
    assert!(st["requests"]["passthrough"].as_u64().unwrap() >= 1, "{st}");

    // A long count (over the short lane's 256 KiB) holds the only long-lane thread.
    let s4 = socket.clone();
    let slow = std::thread::spawn(move || {
        let text = format!("{SLOW_MARK} {}", "x ".repeat(150_000));
        Client::connect(&s4)
            .unwrap()
            .count(text.as_bytes())
            .unwrap()
    });
    wait_for("a slow long count", Duration::from_secs(10), || {
        SLOW_COUNT_RUNNING.load(Ordering::SeqCst)
    });

    // Short work does not queue behind it (nor does `status`).
    let t = Instant::now();
    assert_eq!(c.count(b"two words").unwrap()["tokens"], json!(2));
    let r = c.guard(&guard_req(&session, "short output\n", 50)).unwrap();
    assert_eq!(serde_json::to_value(r.kind).unwrap(), json!("passthrough"));
    status.status().unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(
        SLOW_COUNT_RUNNING.load(Ordering::SeqCst),
        "the long lane was busy throughout"
    );
    assert_eq!(slow.join().unwrap()["tokens"], json!(150_001));

    stop_tx.send(()).unwrap();
    rt.block_on(serving).unwrap();
    server.shutdown();
}

// ---------------------------------------------------------------- tier 3: real binary + tiny model

/// A daemon child process, SIGKILLed if a test panics before it is stopped.
pub(crate) struct Daemon {
    child: Option<Child>,
    socket: PathBuf,
}
impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `(thread name, nice)` of every thread of process `pid` (Linux `/proc/<pid>/task/*/stat`:
/// the nice value is field 19, the 17th after the parenthesized name).
fn thread_nices(pid: u32) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let Ok(stat) = std::fs::read_to_string(e.unwrap().path().join("stat")) else {
            continue;
        };
        let (Some(a), Some(b)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let nice = stat[b + 1..]
            .split_whitespace()
            .nth(16)
            .unwrap()
            .parse()
            .unwrap();
        out.push((stat[a + 1..b].to_string(), nice));
    }
    out
}

pub(crate) fn start_daemon(socket: &Path, envs: &[(&str, &str)]) -> Daemon {
    start_daemon_with(socket, "tiny", envs)
}

/// [`start_daemon`] with the model of `tier`.
fn start_daemon_with(socket: &Path, tier: &str, envs: &[(&str, &str)]) -> Daemon {
    let model = util::model_path(tier);
    let child = Command::new(util::bin())
        .args(["serve", "--socket"])
        .arg(socket)
        .arg("--model")
        .arg(&model)
        .envs(envs.iter().copied())
        .env_remove("TOOLSUM_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut d = Daemon {
        child: Some(child),
        socket: socket.to_path_buf(),
    };
    let t = Instant::now();
    loop {
        if Client::connect(socket)
            .and_then(|mut c| c.status().map_err(std::io::Error::other))
            .is_ok()
        {
            break;
        }
        if let Some(st) = d.child.as_mut().unwrap().try_wait().unwrap() {
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

/// Runs `toolsum guard --json` against `socket` with stdin `input`; returns the response.
fn cli_guard(
    socket: &Path,
    session: &Path,
    tool: &str,
    input: &[u8],
    extra: &[&str],
) -> (GuardResponse, Output) {
    let out = util::run_guard(socket, session, tool, input.to_vec(), extra);
    assert!(
        out.status.success(),
        "guard failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: GuardResponse = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (r, out)
}

fn kind(r: &GuardResponse) -> String {
    serde_json::to_value(r.kind)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Sends raw bytes on a connection and reads one response line.
fn raw_call(stream: &mut BufReader<UnixStream>, bytes: &[u8]) -> Value {
    stream.get_mut().write_all(bytes).unwrap();
    let mut line = String::new();
    stream.read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

/// The base64 PNG (200x120, 28,627 bytes) of the shared corpus's MCP screenshot case.
fn screenshot_b64() -> String {
    let text =
        std::fs::read_to_string(util::corpus_dir().join("cases/case_08_mcp_screenshot.json"))
            .unwrap();
    let start = text.find("iVBOR").expect("the case holds a PNG");
    let len = text[start..].find('"').expect("a JSON string");
    text[start..start + len].to_string()
}

const PNG_1X1_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[test]
fn real_daemon_end_to_end() {
    let tmp = tempfile::tempdir().unwrap();
    let sockdir = tmp.path().join("run");
    let socket = sockdir.join("toolsum.sock");
    let session = tmp.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let mut d = start_daemon(
        &socket,
        &[
            ("TOOLSUM_QUEUE_CAPACITY", "1"),
            ("TOOLSUM_LOCAL_PARALLEL", "2"),
            ("TOOLSUM_MAX_REQUEST_BYTES", "1000000"),
            ("TOOLSUM_MAX_NEW_TOKENS", "48"),
        ],
    );
    assert_eq!(mode(&sockdir), 0o700);
    assert_eq!(mode(&socket), 0o600);

    // A second daemon on the same socket is refused, quickly (before loading a model).
    let second = Command::new(util::bin())
        .args(["serve", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    assert!(!second.status.success());
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("already running"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );

    // `serve --detach` there starts none and says so, without failing a script.
    let detached = Command::new(util::bin())
        .args(["serve", "--detach", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    assert!(detached.status.success());
    assert!(
        String::from_utf8_lossy(&detached.stderr).contains("already answers"),
        "{}",
        String::from_utf8_lossy(&detached.stderr)
    );

    // `toolsum status` shows the limits the daemon applies: its own setting and the defaults.
    let st = Command::new(util::bin())
        .args(["status", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let st: Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["limits"]["max_new_tokens"], json!(48), "{st}");
    assert_eq!(st["limits"]["token_limit"], json!(15_000), "{st}");
    assert!(st["limits"]["model_ms"].as_u64().is_some(), "{st}");

    // Pass-through is byte-identical (ANSI escapes and all).
    let small = "\x1b[31mFAILED\x1b[0m tests/a.rs: 1 failed\n\tüñí ✓\n";
    let (r, _) = cli_guard(&socket, &session, "Bash", small.as_bytes(), &[]);
    assert_eq!(kind(&r), "passthrough");
    assert_eq!(r.text.as_bytes(), small.as_bytes());
    assert!(r.reason.is_none(), "{:?}", r.reason);
    let plain = Command::new(util::bin())
        .args(["guard", "--no-spawn", "--tool", "Bash", "--socket"])
        .arg(&socket)
        .arg("--session-dir")
        .arg(&session)
        .arg(util::corpus_dir().join("json_02.json"))
        .output()
        .unwrap();
    assert!(plain.status.success());
    assert_eq!(
        plain.stdout,
        std::fs::read(util::corpus_dir().join("json_02.json")).unwrap(),
        "content_path pass-through is byte-identical"
    );

    // Summary of a corpus file: saved whole (0600), summarized by the model. A generous model
    // time so a loaded machine cannot make the pipeline skip the model.
    let corpus = std::fs::read(util::corpus_dir().join("ci_08.log")).unwrap();
    let (r, _) = cli_guard(
        &socket,
        &session,
        "Bash",
        &corpus,
        &["--token-limit", "2000", "--model-ms", "50000"],
    );
    assert_eq!(kind(&r), "summary", "{r:?}");
    assert!(r.model.is_some(), "{r:?}");
    let saved = session.join(&r.saved.last().unwrap().path);
    assert_eq!(std::fs::read(&saved).unwrap(), corpus);
    assert_eq!(mode(&saved), 0o600);
    assert!(r.text.contains(&r.saved.last().unwrap().path));

    // The model ran: its thread and its compute team run at the background nice value, the
    // socket's I/O threads at the daemon's own.
    let threads = thread_nices(d.child.as_ref().unwrap().id());
    let nice_of = |prefix: &str| -> Vec<i64> {
        threads
            .iter()
            .filter(|(n, _)| n.starts_with(prefix))
            .map(|&(_, v)| v)
            .collect()
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for prefix in ["toolsum-model", "toolsum-team", "toolsum-long"] {
        let v = nice_of(prefix);
        // A one-core machine has no team workers (the model thread computes alone).
        let expected = prefix != "toolsum-team" || cores > 1;
        assert!(v.len() >= usize::from(expected), "{prefix}: {threads:?}");
        assert!(v.iter().all(|&n| n >= 10), "{prefix}: {threads:?}");
    }
    assert!(nice_of("toolsum-io").iter().all(|&n| n == 0), "{threads:?}");

    // Above summarize_limit the model still reads the reduction; the reason says so.
    let (r, _) = cli_guard(
        &socket,
        &session,
        "Bash",
        &corpus,
        &["--token-limit", "100", "--summarize-limit", "1000"],
    );
    assert!(matches!(kind(&r).as_str(), "summary" | "preview"), "{r:?}");
    assert!(
        r.reason
            .as_deref()
            .is_some_and(|w| w.starts_with("too_large")),
        "{r:?}"
    );
    assert!(r.text.contains("[INFO] BUILD FAILURE"), "{r:?}");
    assert_eq!(
        std::fs::read(session.join(&r.saved.last().unwrap().path)).unwrap(),
        corpus
    );

    // A tiny base64 PNG (96 chars) under the limit goes back as written.
    let (r, _) = cli_guard(&socket, &session, "screenshot", PNG_1X1_B64.as_bytes(), &[]);
    assert_eq!(kind(&r), "passthrough", "{r:?}");
    assert_eq!(r.text, PNG_1X1_B64);
    // A screenshot's base64 (38 KB), whole and inside MCP JSON: saved decoded.
    let shot = screenshot_b64();
    let (r, _) = cli_guard(&socket, &session, "screenshot", shot.as_bytes(), &[]);
    assert_eq!(kind(&r), "binary", "{r:?}");
    let png = &r
        .saved
        .iter()
        .find(|s| s.media_type == "image/png")
        .expect("png saved");
    assert!(std::fs::read(session.join(&png.path))
        .unwrap()
        .starts_with(b"\x89PNG"));
    let mcp = json!({"content": [{"type": "image", "mimeType": "image/png", "data": shot}, {"type": "text", "text": "took a screenshot"}]});
    let (r, _) = cli_guard(
        &socket,
        &session,
        "mcp__browser__screenshot",
        mcp.to_string().as_bytes(),
        &[],
    );
    assert!(r.saved.iter().any(|s| s.media_type == "image/png"), "{r:?}");
    assert!(!r.text.contains(&shot[..200]), "{r:?}");

    // NUL bytes and invalid UTF-8 travel as content_b64 and still get a result.
    let mut bin = b"header\0\0\0".to_vec();
    bin.extend((0..4000u32).map(|i| (i * 31 % 256) as u8));
    let (r, _) = cli_guard(&socket, &session, "Read", &bin, &[]);
    assert!(r.ok);
    assert!(!r.text.contains('\0'));

    // A hostile tool name stays inside long_responses/.
    let (r, _) = cli_guard(
        &socket,
        &session,
        "../../etc/passwd",
        &corpus,
        &["--token-limit", "100", "--summarize-limit", "1000"],
    );
    let p = &r.saved.last().unwrap().path;
    assert!(p.starts_with("long_responses/"), "{p}");
    let comps: Vec<_> = Path::new(p).components().collect();
    assert_eq!(comps.len(), 2, "{p}");
    assert!(
        comps
            .iter()
            .all(|c| matches!(c, std::path::Component::Normal(_))),
        "{p}"
    );
    assert!(session.join(p).is_file());
    assert_eq!(mode(&session.join("long_responses")), 0o700);

    // Two same-tool requests at once: two files.
    let reqs: Vec<_> = (0..2)
        .map(|_| {
            let (s, sess, c) = (socket.clone(), session.clone(), corpus.clone());
            std::thread::spawn(move || {
                cli_guard(
                    &s,
                    &sess,
                    "Twin",
                    &c,
                    &["--token-limit", "100", "--summarize-limit", "1000"],
                )
                .0
            })
        })
        .collect();
    let paths: Vec<String> = reqs
        .into_iter()
        .map(|h| h.join().unwrap().saved.last().unwrap().path.clone())
        .collect();
    assert_ne!(paths[0], paths[1]);
    for p in &paths {
        assert_eq!(std::fs::read(session.join(p)).unwrap(), corpus);
    }

    // Deadline: a tiny deadline_ms gives a preview with the reason.
    let mut c = Client::connect(&socket).unwrap();
    let text = String::from_utf8_lossy(&corpus).to_string();
    let r = c
        .guard(&json!({"tool":"Bash","session_dir":session,"content":text,"token_limit":100,"deadline_ms":1}))
        .unwrap();
    assert_eq!(kind(&r), "preview");
    assert!(
        r.reason.as_deref().unwrap().contains("deadline"),
        "{:?}",
        r.reason
    );

    // Malformed JSON, an unknown op and an oversized line keep the connection usable.
    let mut raw = BufReader::new(UnixStream::connect(&socket).unwrap());
    let e = raw_call(&mut raw, b"{\"op\": \"status\",,}\n");
    assert_eq!(e["error"]["kind"], json!("bad_json"));
    let e = raw_call(&mut raw, b"{\"op\":\"fly\",\"id\":9}\n");
    assert_eq!(e["error"]["kind"], json!("unknown_op"));
    assert_eq!(e["id"], json!(9));
    let mut huge = br#"{"op":"count","content":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'a', 1_500_000));
    huge.extend(b"\"}\n");
    let e = raw_call(&mut raw, &huge);
    assert_eq!(e["error"]["kind"], json!("too_large"));
    let ok = raw_call(
        &mut raw,
        b"{\"v\":1,\"op\":\"count\",\"content\":\"hello world\"}\n",
    );
    assert_eq!(ok["ok"], json!(true));
    assert_eq!(ok["bytes"], json!(11));
    assert!(ok["tokens"].as_u64().unwrap() >= 2);

    // Overloaded (two summaries decode together, queue capacity 1): two jobs run, one waits,
    // the next is answered at once. Inputs of a few thousand characters: counting and
    // reducing them takes milliseconds, so each job, sent once the one before is on the model
    // (or queued), gets there while the first ones run (with a large input, its counting, slowed by the model's spinning threads, could
    // take longer than the whole first job), and the third arrives while the second waits.
    // Not sent together: the second could reach the queue before the worker took the first
    // and be turned away itself.
    let short: String = text.chars().take(6000).collect();
    let mut status = Client::connect(&socket).unwrap();
    let spawn_job = |s: PathBuf, sess: PathBuf, t: String| {
        std::thread::spawn(move || {
            let mut c = Client::connect(&s).unwrap();
            c.set_timeout(None).unwrap();
            c.guard(&json!({"tool":"Bash","session_dir":sess,"content":t,"token_limit":100,"max_new_tokens":64}))
        })
    };
    let j1 = spawn_job(socket.clone(), session.clone(), short.clone());
    wait_for("busy", Duration::from_secs(60), || {
        status.status().unwrap()["queue"]["busy"] == json!(true)
    });
    let j2 = spawn_job(socket.clone(), session.clone(), short.clone());
    wait_for("two in flight", Duration::from_secs(60), || {
        status.status().unwrap()["queue"]["in_flight"] == json!(2)
    });
    let j3 = spawn_job(socket.clone(), session.clone(), short.clone());
    wait_for("queued", Duration::from_secs(60), || {
        status.status().unwrap()["queue"]["depth"] == json!(1)
    });
    let r3 = c
        .guard(&json!({"tool":"Bash","session_dir":session,"content":short,"token_limit":100}))
        .unwrap();
    assert_eq!(kind(&r3), "preview");
    assert!(
        r3.reason.as_deref().unwrap().starts_with("overloaded"),
        "{:?}",
        r3.reason
    );
    j1.join().unwrap().unwrap();
    j2.join().unwrap().unwrap();
    j3.join().unwrap().unwrap();

    // Clients that hang up mid-line or mid-request; the daemon keeps serving.
    {
        let mut s = UnixStream::connect(&socket).unwrap();
        s.write_all(br#"{"op":"guard","tool":"Bash","#).unwrap();
    }
    {
        let mut s = UnixStream::connect(&socket).unwrap();
        let mut line = serde_json::to_vec(&json!({"op":"guard","tool":"Bash","session_dir":session,"content":text,"token_limit":100})).unwrap();
        line.push(b'\n');
        s.write_all(&line).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let st = status.status().unwrap();
    assert!(st["uptime_s"].as_f64().unwrap() > 0.0);
    assert!(st["rss_bytes"].as_u64().unwrap() > 1_000_000);
    assert!(st["requests"]["summary"].as_u64().unwrap() >= 1, "{st}");
    assert!(st["latency_ms"]["p95"].as_f64().unwrap() >= st["latency_ms"]["p50"].as_f64().unwrap());
    assert!(st["engine"].is_object());
    let (r, _) = cli_guard(&socket, &session, "Bash", b"still here\n", &[]);
    assert_eq!(r.text, "still here\n");

    // SIGTERM: exit 0, socket removed.
    let mut child = d.child.take().unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "daemon did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(st.success(), "{st}");
    assert!(!d.socket.exists());
}

#[test]
fn client_falls_back_without_daemon_and_spawns_one() {
    let tmp = tempfile::tempdir().unwrap();
    let session = tmp.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let corpus = std::fs::read(util::corpus_dir().join("ci_08.log")).unwrap();

    // No daemon, --no-spawn: a local result, exit 0, with the reason.
    let none = tmp.path().join("none/toolsum.sock");
    let (r, _) = cli_guard(&none, &session, "Bash", &corpus, &["--token-limit", "2000"]);
    assert!(
        r.reason
            .as_deref()
            .unwrap()
            .starts_with("daemon_unavailable"),
        "{:?}",
        r.reason
    );
    assert_eq!(
        std::fs::read(session.join(&r.saved.last().unwrap().path)).unwrap(),
        corpus
    );
    let (r, _) = cli_guard(&none, &session, "Bash", b"tiny\n", &[]);
    assert_eq!(r.text, "tiny\n");

    // Without --no-spawn the client starts a daemon, which then serves; `stop` ends it.
    let socket = tmp.path().join("auto/toolsum.sock");
    let out = Command::new(util::bin())
        .args(["guard", "--json", "--tool", "Bash", "--socket"])
        .arg(&socket)
        .arg("--model")
        .arg(util::model_path("tiny"))
        .arg("--session-dir")
        .arg(&session)
        .arg(util::corpus_dir().join("kubectl_06.txt"))
        .env_remove("TOOLSUM_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: GuardResponse = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r.reason.is_none(), "{:?}", r.reason);
    let pid = Client::connect(&socket).unwrap().status().unwrap()["pid"]
        .as_i64()
        .unwrap();
    let stop = Command::new(util::bin())
        .args(["stop", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    // `stop` returns once the daemon has let go of its socket (removed before its lock is
    // released), so a command right after it finds no daemon shutting down in its way.
    assert!(!socket.exists(), "the socket outlived `stop`");
    wait_for("spawned daemon exits", Duration::from_secs(30), || {
        (unsafe { libc::kill(pid as i32, 0) }) != 0
    });
}

/// The local engine with `local_parallel` 3 (small model): three summaries are in flight at
/// once (seen in `status`), decoding together on the one model thread, and each is written by
/// the model (greedy output is the same alone or batched: tests/engine.rs).
#[test]
fn local_summaries_run_together() {
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("d.sock");
    let session = tmp.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let _d = start_daemon_with(&socket, "small", &[("TOOLSUM_LOCAL_PARALLEL", "3")]);
    let status = || Client::connect(&socket).unwrap().status().unwrap();
    let st = status();
    assert_eq!(st["queue"]["parallel"], json!(3), "{st}");
    assert_eq!(st["backend"]["kind"], json!("local"), "{st}");
    let model = st["model"].as_str().unwrap().to_string();
    let inputs: Vec<String> = ["ci_08.log", "ci_05.log", "log_02.log"]
        .iter()
        .map(|f| {
            String::from_utf8_lossy(&std::fs::read(util::corpus_dir().join(f)).unwrap())
                .into_owned()
        })
        .collect();
    let clients: Vec<_> = inputs
        .iter()
        .map(|content| {
            let req = json!({"tool": "Bash", "session_dir": session, "content": content,
                "intent": "why did the build fail", "token_limit": 500, "prefill_budget": 300,
                "max_new_tokens": 48, "model_ms": 120_000, "deadline_ms": 150_000});
            let s = socket.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(&s).unwrap();
                c.set_timeout(Some(Duration::from_secs(300))).unwrap();
                c.guard(&req).unwrap()
            })
        })
        .collect();
    wait_for(
        "three local summaries in flight",
        Duration::from_secs(120),
        || status()["queue"]["in_flight"] == json!(3),
    );
    for (i, c) in clients.into_iter().enumerate() {
        let r = c.join().unwrap();
        assert_eq!(kind(&r), "summary", "{i}: {r:?}");
        assert_eq!(r.model.as_deref(), Some(model.as_str()), "{i}: {r:?}");
        assert!(r.timings_ms.decode > 0.0, "{i}: {:?}", r.timings_ms);
    }
    let st = status();
    assert_eq!(st["queue"]["in_flight"], json!(0), "{st}");
    assert_eq!(st["requests"]["summary"], json!(3), "{st}");
}
