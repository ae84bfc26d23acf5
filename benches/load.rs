//! Load test of the real daemon (issue 7): `toolsum serve` with the tiny model on a temp socket,
//! driven by N concurrent clients (N = 1, 4, 16, 64) over the loopback Unix socket with a mix
//! drawn from tests/corpus: 70% pass-through (small inputs), 20% summary, 5% binary (a base64
//! PNG), 5% over-limit preview. Beside the N clients, one probe client sends a short `count`
//! every 20 ms. Prints one markdown table: requests/s of pass-through, p50/p95/p99 latency per
//! kind and of the `count` probe, the summaries' model-queue wait, `overloaded` answers, the
//! daemon's peak RSS (VmHWM), RSS after 10, 100 and 1,000 requests, RSS at rest after 10
//! requests and after all of them (their ratio is issue 6's growth check), and open fds
//! before/after each level.
//!
//! Closed loop by default: each client sends its next request when the last one is answered, so
//! latency is at least N / throughput. With `LOAD_RATE` (requests/s, all clients together) it is
//! open loop: requests arrive at exponentially distributed intervals (a fixed seed) and the N
//! clients take them in turn; latency counts from the arrival, so waiting for a free client is
//! included.
//!
//! Bounded: at most `LOAD_REQUESTS` (default 300) requests and `LOAD_SECS` (default 20) seconds
//! of issuing per level; `LOAD_LEVELS` (e.g. `1,4`) picks the levels; `LOAD_BIN` runs another
//! `toolsum` binary (to compare builds). Run with `scripts/load.sh`.
//!
//! Backends (issue 16), `LOAD_BACKENDS` (default `local,openai`): the same levels against the
//! local engine, then against the remote backend: a llama.cpp `llama-server` on 127.0.0.1
//! serving the same tiny GGUF with `LOAD_REMOTE_SLOTS` (default 4) slots and
//! `LOAD_REMOTE_THREADS` (default 1) threads (`scripts/build-llama-server.sh` builds it;
//! `TOOLSUM_LLAMA_SERVER` names another binary), and the daemon with `--backend openai`
//! (`backend_parallel` 8, the tokenizer alone loaded). One table, a row per backend and level.
//! `local:N` is the local engine with `--local-parallel N` (e.g. `LOAD_BACKENDS=local:1,local:4`
//! compares one summary at a time with four decoding together); `local` takes the default.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolsum::daemon::client::Client;

/// The request kinds of the mix, with their weights in percent.
const MIX: [(&str, u32); 4] = [
    ("passthrough", 70),
    ("summary", 20),
    ("binary", 5),
    ("preview", 5),
];

/// A 1×1 PNG as standard base64.
const PNG_1X1_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn model_path() -> PathBuf {
    let p = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs::home_dir().expect("home dir").join(".cache"))
        .join("toolsum/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        p.exists(),
        "tiny model missing at {}: run `scripts/fetch-models.sh tiny` first",
        p.display()
    );
    p
}

fn corpus(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()
}

/// The daemon's RSS once it has been idle for 2 s (the long lane trims freed heap memory after
/// its tasks; see `daemon::lanes::release_free_memory`), in bytes.
fn rss_at_rest(pid: u32) -> u64 {
    std::thread::sleep(Duration::from_secs(2));
    proc_status_bytes(pid, "VmRSS:")
}

/// One value (`VmHWM`, `VmRSS`) of `/proc/<pid>/status`, in bytes.
fn proc_status_bytes(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

fn mb(b: u64) -> String {
    format!("{:.0}", b as f64 / (1024.0 * 1024.0))
}

/// Percentile `p` (0..=100) of sorted `v`, in ms; `-` when empty.
fn pct(v: &[f64], p: f64) -> String {
    if v.is_empty() {
        return "-".into();
    }
    let i = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    format!("{:.0}", v[i])
}

struct Daemon(Child);
impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Inputs for each kind of the mix.
struct Inputs {
    small: Vec<String>,
    summary: String,
    preview: String,
}

fn request(kind: &str, i: usize, inputs: &Inputs, session: &Path) -> Value {
    match kind {
        "passthrough" => json!({"tool":"Bash","session_dir":session,
            "content": inputs.small[i % inputs.small.len()]}),
        "summary" => json!({"tool":"Bash","session_dir":session,"content":inputs.summary,
            "token_limit":1000,"deadline_ms":20000}),
        "binary" => json!({"tool":"screenshot","session_dir":session,"content":PNG_1X1_B64}),
        _ => json!({"tool":"Bash","session_dir":session,"content":inputs.preview,
            "token_limit":100,"summarize_limit":1000}),
    }
}

#[derive(Default)]
struct Level {
    latencies: std::collections::BTreeMap<&'static str, Vec<f64>>,
    /// Model-queue wait of each summary request (ms).
    queue_waits: Vec<f64>,
    /// Summary requests answered by the model.
    by_model: usize,
    /// Latencies of the `count` probe (ms).
    count_probe: Vec<f64>,
    /// Outcomes of summary requests: result kind and the reason's first word.
    outcomes: std::collections::BTreeMap<String, usize>,
    /// The first few error messages.
    error_samples: Vec<String>,
    overloaded: usize,
    errors: usize,
}

/// Next value of a xorshift64 generator.
fn xorshift(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// The kind of a request, drawn by [`MIX`] weight.
fn draw_kind(rng: &mut u64) -> &'static str {
    let mut roll = (xorshift(rng) % 100) as u32;
    MIX.iter()
        .find(|(_, w)| {
            let hit = roll < *w;
            roll = roll.saturating_sub(*w);
            hit
        })
        .map_or("passthrough", |(k, _)| *k)
}

/// The cached llama-server (`scripts/build-llama-server.sh`), or `TOOLSUM_LLAMA_SERVER`.
fn llama_server_bin() -> PathBuf {
    let p = std::env::var_os("TOOLSUM_LLAMA_SERVER").map_or_else(
        || {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| dirs::home_dir().expect("home dir").join(".cache"))
                .join("toolsum/ci/llama-server-0.3.36/bin/llama-server")
        },
        PathBuf::from,
    );
    assert!(
        p.exists(),
        "llama-server missing at {}: run `scripts/build-llama-server.sh` first",
        p.display()
    );
    p
}

/// Starts llama-server with the tiny model on a free port; returns it and the API base URL.
fn start_llama_server() -> (Daemon, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let slots = env_usize("LOAD_REMOTE_SLOTS", 4);
    let threads = env_usize("LOAD_REMOTE_THREADS", 1);
    let child = Command::new(llama_server_bin())
        .arg("-m")
        .arg(model_path())
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-np", &slots.to_string(), "-c", &(4096 * slots).to_string()])
        // --no-repack: llama.cpp's AMX repacked path crashes on this machine's CPU.
        .args(["-t", &threads.to_string(), "--no-repack", "--alias", "tiny"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut server = Daemon(child);
    let url = format!("http://127.0.0.1:{port}/v1");
    let t = Instant::now();
    while ureq::get(&format!("{url}/models")).call().is_err() {
        assert!(
            server.0.try_wait().unwrap().is_none(),
            "llama-server exited"
        );
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "llama-server not up"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "llama-server up in {:.1} s ({slots} slots, {threads} threads)",
        t.elapsed().as_secs_f64()
    );
    (server, url)
}

fn main() {
    let levels: Vec<usize> = std::env::var("LOAD_LEVELS")
        .unwrap_or_else(|_| "1,4,16,64".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let backends: Vec<String> = std::env::var("LOAD_BACKENDS")
        .unwrap_or_else(|_| "local,openai".into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for b in &backends {
        let (r, n) = run(b, &levels);
        rows.extend(r);
        notes.extend(n);
    }
    println!();
    let mode = std::env::var("LOAD_RATE").map_or("closed loop".to_string(), |r| {
        format!("open loop at {r} requests/s")
    });
    println!(
        "Daemon load, tiny model, Unix socket, {mode}; latencies in ms as p50 / p95 / p99 (count)."
    );
    println!();
    println!("| backend | N | requests | wall s | pass-through req/s | pass-through | summary | binary | preview | count probe | summary queue wait p50 / p95 / max | summaries by the model | overloaded | errors | peak RSS MB (VmHWM) | open fds before → after |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    println!();
    for n in notes {
        println!("{n}");
    }
}

/// Runs every level against a daemon with `backend` (`local` or `openai`); returns the table's
/// rows and the notes (RSS) printed under it.
fn run(backend: &str, levels: &[usize]) -> (Vec<String>, Vec<String>) {
    let max_requests = env_usize("LOAD_REQUESTS", 300);
    let max_secs = env_usize("LOAD_SECS", 20) as u64;

    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("run/toolsum.sock");
    let session = tmp.path().join("session");
    std::fs::create_dir(&session).unwrap();
    let bin = std::env::var_os("LOAD_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_toolsum")),
        PathBuf::from,
    );
    let mut remote = None;
    let mut cmd = Command::new(bin);
    cmd.args(["serve", "--socket"])
        .arg(&socket)
        .arg("--model")
        .arg(model_path());
    match backend {
        "local" => {}
        // The local engine with `local_parallel` N (summaries decoding together).
        b if b.starts_with("local:") => {
            cmd.args(["--local-parallel", &b["local:".len()..]]);
        }
        "openai" => {
            let (server, url) = start_llama_server();
            cmd.args(["--backend", "openai", "--backend-url", &url]);
            remote = Some(server);
        }
        other => panic!("unknown backend {other:?} in LOAD_BACKENDS (local, local:N, openai)"),
    }
    let child = cmd
        .env_remove("TOOLSUM_CONFIG")
        .env("TOOLSUM_MAX_NEW_TOKENS", "48")
        .env("TOOLSUM_PREFILL_BUDGET", "384")
        // N clients, the count probe and a spare: the connection cap is not what is measured.
        .env("TOOLSUM_MAX_CONNECTIONS", "72")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut daemon = Daemon(child);
    let pid = daemon.0.id();
    let t = Instant::now();
    while Client::connect(&socket)
        .ok()
        .and_then(|mut c| c.status().ok())
        .is_none()
    {
        assert!(daemon.0.try_wait().unwrap().is_none(), "daemon exited");
        assert!(t.elapsed() < Duration::from_secs(120), "daemon not up");
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("daemon up in {:.1} s", t.elapsed().as_secs_f64());

    // Small inputs: the head of each corpus text file, 200..2,000 bytes.
    let small: Vec<String> = [
        "kubectl_01.txt",
        "shell_01.txt",
        "shell_02.txt",
        "json_03.json",
        "log_05.log",
    ]
    .iter()
    .enumerate()
    .map(|(i, f)| corpus(f).chars().take(200 + 450 * i).collect())
    .collect();
    let inputs = Arc::new(Inputs {
        small,
        summary: corpus("ci_08.log"),
        preview: corpus("log_01.log"),
    });

    // At rest after 10 requests: one client sends 10 of the mix in turn, then the daemon idles.
    // Compared with the RSS at rest after every level (growth, not in-flight requests).
    let rest_10 = {
        let mut c = Client::connect(&socket).expect("warm-up client connects");
        let _ = c.set_timeout(Some(Duration::from_secs(120)));
        let mut rng = 0x5851_f42d_4c95_7f2du64;
        for i in 0..10 {
            let kind = draw_kind(&mut rng);
            let _ = c.guard(&request(kind, i, &inputs, &session));
        }
        drop(c);
        rss_at_rest(pid)
    };
    let total = Arc::new(AtomicUsize::new(10));
    let rss_marks = Arc::new(Mutex::new((None::<u64>, None::<u64>)));
    let mut rows = Vec::new();
    for &n in levels {
        let fds_before = open_fds(pid);
        let issued = Arc::new(AtomicUsize::new(0));
        let level = Arc::new(Mutex::new(Level::default()));
        let start = Instant::now();
        let stop_at = start + Duration::from_secs(max_secs);
        let rate: Option<f64> = std::env::var("LOAD_RATE")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&r: &f64| r > 0.0);
        // Open loop: a dispatcher sends (index, kind, arrival) at Poisson times.
        type Ticket = (usize, &'static str, Instant);
        let tickets: Option<Arc<Mutex<std::sync::mpsc::Receiver<Ticket>>>> = rate.map(|rate| {
            let (tx, rx) = std::sync::mpsc::channel::<Ticket>();
            std::thread::spawn(move || {
                let mut rng = 0x2545_f491_4f6c_dd1du64 ^ n as u64;
                let mut at = Instant::now();
                for i in 0..max_requests {
                    let u = (xorshift(&mut rng) >> 11) as f64 / (1u64 << 53) as f64;
                    at += Duration::from_secs_f64(-(1.0 - u).ln() / rate);
                    if at >= stop_at {
                        break;
                    }
                    if let Some(d) = at.checked_duration_since(Instant::now()) {
                        std::thread::sleep(d);
                    }
                    let kind = draw_kind(&mut rng);
                    if tx.send((i, kind, at)).is_err() {
                        break;
                    }
                }
            });
            Arc::new(Mutex::new(rx))
        });
        let probe_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let probe = {
            let (socket, inputs, level, stop) = (
                socket.clone(),
                inputs.clone(),
                level.clone(),
                probe_stop.clone(),
            );
            std::thread::spawn(move || {
                let mut c = Client::connect(&socket).expect("probe connects");
                while !stop.load(Ordering::SeqCst) {
                    let t = Instant::now();
                    let ok = c.count(inputs.small[0].as_bytes()).is_ok();
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    let mut l = level.lock().unwrap();
                    if ok {
                        l.count_probe.push(ms);
                    } else {
                        l.errors += 1;
                    }
                    drop(l);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let handles: Vec<_> = (0..n)
            .map(|c| {
                let (socket, session, inputs) = (socket.clone(), session.clone(), inputs.clone());
                let (issued, level, total, marks, tickets) = (
                    issued.clone(),
                    level.clone(),
                    total.clone(),
                    rss_marks.clone(),
                    tickets.clone(),
                );
                std::thread::spawn(move || {
                    let mut client = None;
                    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ ((c as u64 + 1) * 0x1234_5678);
                    loop {
                        let (i, kind, arrival) = match &tickets {
                            Some(rx) => {
                                let t = rx.lock().unwrap().recv();
                                match t {
                                    Ok(t) => t,
                                    Err(_) => break,
                                }
                            }
                            None => {
                                let i = issued.fetch_add(1, Ordering::SeqCst);
                                if i >= max_requests || Instant::now() >= stop_at {
                                    break;
                                }
                                (i, draw_kind(&mut rng), Instant::now())
                            }
                        };
                        if client.is_none() {
                            client = Client::connect(&socket).ok();
                            if let Some(cl) = client.as_mut() {
                                let _ = cl.set_timeout(Some(Duration::from_secs(60)));
                            }
                        }
                        let Some(cl) = client.as_mut() else {
                            level.lock().unwrap().errors += 1;
                            continue;
                        };
                        let res = cl.guard(&request(kind, i, &inputs, &session));
                        let ms = arrival.elapsed().as_secs_f64() * 1e3;
                        let mut l = level.lock().unwrap();
                        match res {
                            Ok(r) => {
                                if r.reason
                                    .as_deref()
                                    .is_some_and(|s| s.starts_with("overloaded"))
                                {
                                    l.overloaded += 1;
                                }
                                if kind == "summary" {
                                    l.queue_waits.push(r.timings_ms.queue);
                                    l.by_model += usize::from(r.model.is_some());
                                    let why = r.reason.as_deref().unwrap_or("-");
                                    let why = why.split([':', ' ']).next().unwrap_or("-");
                                    let kind = serde_json::to_value(r.kind).unwrap_or_default();
                                    let key = format!("{} {why}", kind.as_str().unwrap_or("?"));
                                    *l.outcomes.entry(key).or_default() += 1;
                                }
                                l.latencies.entry(kind).or_default().push(ms);
                            }
                            Err(e) => {
                                if e.to_string().contains("overloaded") {
                                    l.overloaded += 1;
                                } else {
                                    l.errors += 1;
                                    if l.error_samples.len() < 3 {
                                        l.error_samples.push(format!("{kind}: {e}"));
                                    }
                                }
                                client = None;
                            }
                        }
                        drop(l);
                        let done = total.fetch_add(1, Ordering::SeqCst) + 1;
                        if done == 100 || done == 1000 {
                            let rss = proc_status_bytes(pid, "VmRSS:");
                            let mut m = marks.lock().unwrap();
                            if done == 100 {
                                m.0 = Some(rss);
                            } else {
                                m.1 = Some(rss);
                            }
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let wall = start.elapsed().as_secs_f64();
        probe_stop.store(true, Ordering::SeqCst);
        probe.join().unwrap();
        // Let the daemon close the level's connections before counting fds.
        let settle = Instant::now();
        let mut fds_after = open_fds(pid);
        while fds_after > fds_before && settle.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(50));
            fds_after = open_fds(pid);
        }
        let mut l = Arc::try_unwrap(level).ok().unwrap().into_inner().unwrap();
        for v in l.latencies.values_mut() {
            v.sort_by(f64::total_cmp);
        }
        l.count_probe.sort_by(f64::total_cmp);
        l.queue_waits.sort_by(f64::total_cmp);
        let done: usize = l.latencies.values().map(Vec::len).sum();
        let pass = l.latencies.get("passthrough").map_or(0, Vec::len);
        let mut row = format!(
            "| {backend} | {n} | {done} | {wall:.1} | {:.0} |",
            pass as f64 / wall
        );
        for (k, _) in MIX {
            let v = l.latencies.get(k).map(Vec::as_slice).unwrap_or(&[]);
            row += &format!(
                " {} / {} / {} ({}) |",
                pct(v, 50.0),
                pct(v, 95.0),
                pct(v, 99.0),
                v.len()
            );
        }
        let (c, q) = (&l.count_probe, &l.queue_waits);
        row += &format!(
            " {} / {} / {} ({}) | {} / {} / {} | {} of {} |",
            pct(c, 50.0),
            pct(c, 95.0),
            pct(c, 99.0),
            c.len(),
            pct(q, 50.0),
            pct(q, 95.0),
            pct(q, 100.0),
            l.by_model,
            q.len()
        );
        row += &format!(
            " {} | {} | {} | {fds_before} → {fds_after} |",
            l.overloaded,
            l.errors,
            mb(proc_status_bytes(pid, "VmHWM:"))
        );
        eprintln!("{row}");
        eprintln!(
            "  summary outcomes {:?}; errors {:?}",
            l.outcomes, l.error_samples
        );
        rows.push(row);
    }
    let total = total.load(Ordering::SeqCst);
    let rest_end = rss_at_rest(pid);
    let marks = *rss_marks.lock().unwrap();
    let show = |m: Option<u64>| m.map_or("n/a".into(), mb);
    let mut notes = vec![format!(
        "{backend}: RSS under load after 100 requests: {} MB; after 1,000: {} MB; now ({total} requests): {} MB; peak {} MB.",
        show(marks.0),
        show(marks.1),
        mb(proc_status_bytes(pid, "VmRSS:")),
        mb(proc_status_bytes(pid, "VmHWM:"))
    )];
    notes.push(format!(
        "{backend}: RSS at rest (no request in flight, 2 s idle) after 10 requests: {} MB; after all {total}: {} MB; ratio {:.2}.",
        mb(rest_10),
        mb(rest_end),
        rest_end as f64 / rest_10.max(1) as f64
    ));
    if let Some(st) = Client::connect(&socket)
        .ok()
        .and_then(|mut c| c.status().ok())
    {
        if backend == "openai" {
            notes.push(format!(
                "{backend}: remote requests {}; in flight at most {}; remote p50 / p95 {:.0} / {:.0} ms.",
                st["remote_requests"],
                st["remote_in_flight_max"],
                st["remote_latency_ms"]["p50"].as_f64().unwrap_or(0.0),
                st["remote_latency_ms"]["p95"].as_f64().unwrap_or(0.0)
            ));
        }
    }
    let _ = Client::connect(&socket).and_then(|mut c| {
        c.shutdown().map_err(std::io::Error::other)?;
        Ok(())
    });
    let t = Instant::now();
    while daemon.0.try_wait().unwrap().is_none() && t.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(remote);
    (rows, notes)
}
