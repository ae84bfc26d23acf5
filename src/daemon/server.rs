//! The server: accepts connections on a Unix listener, answers protocol v1 requests, feeds the
//! model thread, and shuts down gracefully.
//!
//! Per connection, a reader task frames lines ([`read_frame`]) into a small bounded channel and
//! the handler answers them in order. `count`, `status` and everything [`prepare`] answers
//! (pass-through, binary, preview) never wait for the model; only a [`Prepared::NeedsModel`] job
//! goes to the [`ModelWorker`] queue. CPU work goes to one of two lanes ([`super::lanes`]): short
//! work (a pass-through proven by its length, a short `count`) to tokio's blocking pool, long
//! work to the [`LongLane`] at lower priority, so it never holds a slot a short request needs. When the reader sees
//! the peer hang up, the job in flight is cancelled (TGI's "closed reply channel means cancel").
//!
//! Shutdown (mini-redis `server.rs`): `run` stops accepting, tells handlers to take no new
//! request, waits up to the grace period for the in-flight ones (each handler holds a clone of
//! an mpsc sender; the channel closes when the last one drops), then cancels what is left.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot, watch, Semaphore};

use super::lanes::{count_is_short, guard_is_short, LongLane};
use super::protocol::{
    check_peer, error_response, ok_response, parse_request, read_content_path, read_frame, AskCall,
    Content, Frame, GuardCall, ProtocolError, Request,
};
use super::worker::{Job, ModelWorker};
use crate::backend::TokenCounter;
use crate::config::Config;
use crate::guard::{prepare, prepare_saved, GuardRequest, GuardResponse, Limits, Prepared};

/// Requests read ahead of the one being answered on one connection (a pipelining client).
pub const PIPELINE_DEPTH: usize = 4;
/// Extra time (ms) a handler waits past a request's deadline for the model thread before it
/// answers `deadline`: the model checks the deadline per token and per prefill chunk, so a
/// result may land slightly late.
pub const DEADLINE_SLACK_MS: u64 = 5_000;
/// Latencies kept for the p50/p95 in `status` (most recent requests).
pub const LATENCY_WINDOW: usize = 1_024;
/// Pause after a failed `accept` (e.g. EMFILE) before trying again (ms).
pub const ACCEPT_BACKOFF_MS: u64 = 100;
/// Connections accepted beyond `max_connections` for `status`, `count` and `shutdown` only (a
/// `guard` or `ask` on one is answered `overloaded`, and the client guards locally), so clients that
/// hold every slot cannot keep `status` from answering.
pub const RESERVED_SLOTS: usize = 2;

/// The server's settings, taken from [`Config`].
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// Default limits; a request's own fields override them.
    pub limits: Limits,
    /// Default deadline per request (ms).
    pub deadline_ms: u64,
    /// Concurrent connections; more are answered `overloaded` and closed.
    pub max_connections: usize,
    /// Time to finish a started request line.
    pub read_timeout: Duration,
    /// Lifetime of a connection with no request in progress.
    pub idle_timeout: Duration,
    /// Time a new connection has to send its first byte; then it is closed.
    pub first_byte_timeout: Duration,
    /// Longest request line / content file (bytes).
    pub max_request_bytes: usize,
    /// Time in-flight work gets after shutdown starts.
    pub grace: Duration,
    /// Threads of the long lane (default: the model's compute threads, else the cores).
    pub long_threads: usize,
}

impl ServerSettings {
    /// The server's part of a [`Config`].
    pub fn from_config(c: &Config) -> Self {
        Self {
            limits: c.limits,
            deadline_ms: c.deadline_ms,
            max_connections: c.max_connections,
            read_timeout: Duration::from_millis(c.read_timeout_ms),
            idle_timeout: Duration::from_millis(c.idle_timeout_ms),
            first_byte_timeout: Duration::from_millis(c.first_byte_timeout_ms),
            max_request_bytes: c.max_request_bytes,
            grace: Duration::from_millis(c.grace_ms),
            long_threads: c
                .threads
                .filter(|&n| n > 0)
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        }
    }
}

/// Counters for `status`.
#[derive(Debug, Default)]
struct Stats {
    /// Answered guard requests by result kind, and `error` for failed ones.
    by_kind: BTreeMap<String, u64>,
    /// Error responses by wire kind.
    errors: BTreeMap<String, u64>,
    /// Recent guard latencies (ms).
    latencies: VecDeque<f64>,
}

/// The `p`-th percentile (0..=100) of `v` by nearest rank; 0 for an empty slice.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

/// The `limits` object of `status`: the defaults a request's own fields override (the
/// [`Limits`] fields, in tokens, characters and ms, and `deadline_ms`), so a user sees which
/// outputs pass through unchanged and how long a summary may take.
fn limits_json(s: &ServerSettings) -> Value {
    let mut v = serde_json::to_value(s.limits).unwrap_or_else(|_| json!({}));
    v["deadline_ms"] = s.deadline_ms.into();
    v
}

/// Resident set size of this process (bytes), from `VmRSS` in `/proc/self/status`; `None`
/// where that file does not exist.
pub fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vmrss(&s)
}

fn parse_vmrss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Everything the connection handlers share.
pub struct Server {
    settings: ServerSettings,
    worker: ModelWorker,
    counter: Arc<dyn TokenCounter>,
    long: LongLane,
    started: Instant,
    own_uid: u32,
    stats: Mutex<Stats>,
    /// Set by the `shutdown` op; `run` watches it.
    stop_requested: watch::Sender<bool>,
    /// Cancel flags of jobs in flight, so shutdown can cancel what outlives the grace period.
    inflight: Mutex<HashMap<u64, Arc<AtomicBool>>>,
    next_job: AtomicU64,
    connections: AtomicUsize,
    /// Connections closed because they sent nothing within the first-byte timeout.
    first_byte_timeouts: AtomicU64,
}

impl Server {
    /// A server around a started [`ModelWorker`] and the model's token counter; starts the
    /// long lane's threads.
    ///
    /// # Errors
    /// The OS refuses a thread of the long lane.
    pub fn new(
        settings: ServerSettings,
        worker: ModelWorker,
        counter: Arc<dyn TokenCounter>,
    ) -> std::io::Result<Arc<Self>> {
        let long = LongLane::new(settings.long_threads)?;
        Ok(Arc::new(Self {
            settings,
            worker,
            counter,
            long,
            started: Instant::now(),
            // SAFETY: geteuid has no preconditions and cannot fail.
            own_uid: unsafe { libc::geteuid() },
            stats: Mutex::new(Stats::default()),
            stop_requested: watch::channel(false).0,
            inflight: Mutex::new(HashMap::new()),
            next_job: AtomicU64::new(0),
            connections: AtomicUsize::new(0),
            first_byte_timeouts: AtomicU64::new(0),
        }))
    }

    /// The model worker (to shut it down after [`run`]).
    pub fn worker(&self) -> &ModelWorker {
        &self.worker
    }

    /// Stops the model worker and the long lane after [`run`] (queued work finishes first).
    pub fn shutdown(&self) {
        self.worker.shutdown();
        self.long.shutdown();
    }

    /// Runs CPU work on the lane its size calls for: tokio's blocking pool when `short`, the
    /// long lane otherwise. `what` names the work in the error.
    async fn run_cpu<T, F>(&self, short: bool, what: &str, f: F) -> Result<T, ProtocolError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let r = if short {
            tokio::task::spawn_blocking(f)
                .await
                .map_err(|e| e.to_string())
        } else {
            self.long.run(f).await.map_err(|e| e.to_string())
        };
        r.map_err(|e| ProtocolError::Internal(format!("{what}: {e}")))
    }

    /// The `status` op's body.
    pub fn status(&self) -> Value {
        let stats = self.stats.lock().expect("stats lock");
        let lat: Vec<f64> = stats.latencies.iter().copied().collect();
        let total: u64 = stats.by_kind.values().sum();
        let mut requests = json!(stats.by_kind);
        requests["total"] = total.into();
        let engine = self.worker.describe();
        let mut v = json!({
            "version": env!("CARGO_PKG_VERSION"),
            "protocol": super::protocol::PROTOCOL_VERSION,
            "pid": std::process::id(),
            "model": self.worker.model_name(),
            "backend": self.worker.backend(),
            "device": engine.get("device").cloned().unwrap_or(Value::Null),
            "uptime_s": self.started.elapsed().as_secs_f64(),
            "requests": requests,
            "errors": stats.errors,
            "queue": {
                "depth": self.worker.depth(),
                "capacity": self.worker.capacity(),
                "busy": self.worker.busy(),
                "in_flight": self.worker.in_flight(),
                "parallel": self.worker.parallel(),
            },
            "connections": {
                "active": self.connections.load(Ordering::SeqCst),
                "max": self.settings.max_connections,
                "reserved": RESERVED_SLOTS,
                "first_byte_timeouts": self.first_byte_timeouts.load(Ordering::SeqCst),
            },
            "latency_ms": {
                "p50": percentile(&lat, 50.0),
                "p95": percentile(&lat, 95.0),
                "samples": lat.len(),
            },
            "limits": limits_json(&self.settings),
            "engine": engine,
            "rss_bytes": rss_bytes(),
        });
        if let (Value::Object(m), Value::Object(extra)) = (&mut v, self.worker.report()) {
            m.extend(extra);
        }
        v
    }

    fn record_ok(&self, kind: &str, ms: f64) {
        let mut s = self.stats.lock().expect("stats lock");
        *s.by_kind.entry(kind.to_string()).or_default() += 1;
        s.latencies.push_back(ms);
        while s.latencies.len() > LATENCY_WINDOW {
            s.latencies.pop_front();
        }
    }

    fn record_err(&self, kind: &str, was_guard: bool) {
        let mut s = self.stats.lock().expect("stats lock");
        *s.errors.entry(kind.to_string()).or_default() += 1;
        if was_guard {
            *s.by_kind.entry("error".into()).or_default() += 1;
        }
    }

    fn cancel_all(&self) {
        for c in self.inflight.lock().expect("inflight lock").values() {
            c.store(true, Ordering::SeqCst);
        }
    }
}

/// Accepts connections until `shutdown` completes (or a client sends `shutdown`), then stops
/// accepting, lets in-flight requests finish within the grace period, cancels the rest, and
/// returns. The caller then shuts the worker down and removes the socket.
pub async fn run(listener: UnixListener, shutdown: impl Future<Output = ()>, server: Arc<Server>) {
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    let (halt_tx, halt_rx) = watch::channel(false);
    let limit = Arc::new(Semaphore::new(server.settings.max_connections));
    let reserve = Arc::new(Semaphore::new(RESERVED_SLOTS));
    let mut stop_rx = server.stop_requested.subscribe();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            _ = until_true(&mut stop_rx) => break,
            res = listener.accept() => match res {
                Ok((stream, _)) => match limit
                    .clone()
                    .try_acquire_owned()
                    .map(|p| (p, false))
                    .or_else(|_| reserve.clone().try_acquire_owned().map(|p| (p, true)))
                {
                    Ok((permit, reserved)) => {
                        let (server, halt, done) = (server.clone(), halt_rx.clone(), done_tx.clone());
                        tokio::spawn(async move {
                            server.connections.fetch_add(1, Ordering::SeqCst);
                            handle_connection(&server, stream, halt, reserved).await;
                            if server.connections.fetch_sub(1, Ordering::SeqCst) == 1 {
                                // The last connection closed: hand what the requests freed
                                // (I/O threads, short lane, model thread) back to the OS; the
                                // long lane's own trims miss what is freed after its last task.
                                tokio::task::spawn_blocking(|| {
                                    crate::daemon::lanes::release_free_memory(true)
                                });
                            }
                            drop(permit);
                            drop(done);
                        });
                    }
                    Err(_) => {
                        let max = server.settings.max_connections;
                        tokio::spawn(async move {
                            let e = ProtocolError::Overloaded(format!("{max} connections already open"));
                            let (_, mut w) = stream.into_split();
                            let _ = write_value(&mut w, &error_response(None, &e)).await;
                        });
                    }
                },
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(ACCEPT_BACKOFF_MS)).await;
                }
            },
        }
    }
    drop(listener);
    tracing::info!("shutting down: no new connections; waiting for in-flight requests");
    let _ = halt_tx.send(true);
    drop(done_tx);
    if tokio::time::timeout(server.settings.grace, done_rx.recv())
        .await
        .is_err()
    {
        tracing::warn!("grace period over: cancelling the requests still running");
        server.cancel_all();
        let _ = tokio::time::timeout(Duration::from_secs(2), done_rx.recv()).await;
    }
}

/// Completes when the watched flag becomes true; never, if its sender goes away first.
async fn until_true(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|v| *v).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// True when the peer closed the socket entirely (`POLLHUP`), as opposed to a half-close after
/// its last request (`shutdown(SHUT_WR)`), which only ends the read side.
fn peer_hung_up(fd: std::os::fd::RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & libc::POLLHUP != 0
}

async fn write_value(w: &mut OwnedWriteHalf, v: &Value) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(v).expect("a Value always serializes");
    line.push(b'\n');
    w.write_all(&line).await?;
    w.flush().await
}

/// Serves one connection. `reserved`: it holds one of the [`RESERVED_SLOTS`], so it gets
/// `status`, `count` and `shutdown` only.
async fn handle_connection(
    server: &Arc<Server>,
    stream: UnixStream,
    mut halt: watch::Receiver<bool>,
    reserved: bool,
) {
    let cred = stream.peer_cred().ok();
    let (peer_uid, peer_gid) = (cred.map(|c| c.uid()), cred.map_or(u32::MAX, |c| c.gid()));
    let (rd, mut wr) = stream.into_split();
    if let Err(e) = check_peer(peer_uid, server.own_uid) {
        tracing::warn!("refused a connection: {e}");
        server.record_err(e.kind(), false);
        let _ = write_value(&mut wr, &error_response(None, &e)).await;
        return;
    }
    let peer = Peer {
        uid: peer_uid.unwrap_or(u32::MAX),
        gid: peer_gid,
    };
    let (frames_tx, mut frames) = mpsc::channel::<Frame>(PIPELINE_DEPTH);
    let (gone_tx, gone_rx) = watch::channel(false);
    let settings = server.settings.clone();
    let reader = tokio::spawn(async move {
        let fd = rd.as_ref().as_raw_fd();
        let mut rd = BufReader::new(rd);
        // Until its first byte, a connection gets the short first-byte timeout: one that says
        // nothing must not hold a slot for the whole idle timeout.
        let mut idle = settings.first_byte_timeout.min(settings.idle_timeout);
        loop {
            let f = read_frame(
                &mut rd,
                settings.max_request_bytes,
                settings.read_timeout,
                idle,
            )
            .await;
            idle = settings.idle_timeout;
            match f {
                Ok(Frame::Eof) | Err(_) => {
                    if f.is_err() || peer_hung_up(fd) {
                        let _ = gone_tx.send(true);
                    }
                    break;
                }
                Ok(frame) => {
                    let last = matches!(frame, Frame::TimedOut | Frame::Idle);
                    if frames_tx.send(frame).await.is_err() || last {
                        break;
                    }
                }
            }
        }
    });
    let mut answered = 0u64;
    loop {
        let frame = tokio::select! {
            biased;
            _ = until_true(&mut halt) => break,
            f = frames.recv() => match f { Some(f) => f, None => break },
        };
        let resp = match frame {
            Frame::Idle => {
                if answered == 0 {
                    server.first_byte_timeouts.fetch_add(1, Ordering::SeqCst);
                }
                break;
            }
            Frame::Line(line) => match answer(server, &line, peer, reserved, gone_rx.clone()).await
            {
                Some(v) => v,
                None => break, // the client went away; its job was cancelled
            },
            Frame::TooLarge { bytes } => {
                let e = ProtocolError::TooLarge {
                    bytes,
                    limit: server.settings.max_request_bytes,
                };
                server.record_err(e.kind(), false);
                error_response(None, &e)
            }
            Frame::TimedOut => {
                let e = ProtocolError::BadRequest(format!(
                    "read timeout: a request line was not finished within {} ms",
                    server.settings.read_timeout.as_millis()
                ));
                server.record_err("read_timeout", false);
                let _ = write_value(&mut wr, &error_response(None, &e)).await;
                break;
            }
            Frame::Eof => break,
        };
        answered += 1;
        if write_value(&mut wr, &resp).await.is_err() {
            break;
        }
    }
    reader.abort();
}

/// The peer's credentials.
#[derive(Debug, Clone, Copy)]
struct Peer {
    uid: u32,
    gid: u32,
}

/// Answers one line; `None` when the client hung up before its answer was ready. On a
/// `reserved` connection a `guard` or `ask` is answered `overloaded`.
async fn answer(
    server: &Arc<Server>,
    line: &[u8],
    peer: Peer,
    reserved: bool,
    gone: watch::Receiver<bool>,
) -> Option<Value> {
    let started = Instant::now();
    let (id, req) = parse_request(line);
    let is_guard = matches!(req, Ok(Request::Guard(_) | Request::Ask(_)));
    let res = match req {
        Err(e) => Err(e),
        Ok(Request::Guard(_) | Request::Ask(_)) if reserved => {
            Err(ProtocolError::Overloaded(format!(
                "{} connections already open; this one holds a slot reserved for status and count",
                server.settings.max_connections
            )))
        }
        Ok(Request::Status) => Ok(server.status()),
        Ok(Request::Shutdown) => {
            let _ = server.stop_requested.send(true);
            Ok(json!({"shutting_down": true}))
        }
        Ok(Request::Count(content)) => count(server, content, peer).await,
        Ok(Request::Guard(call)) => match guard(server, *call, peer, started, gone).await {
            Some(r) => r,
            None => return None,
        },
        Ok(Request::Ask(call)) => ask(server, *call, peer, started, gone).await?,
    };
    Some(match res {
        Ok(v) => ok_response(id.as_ref(), v),
        Err(e) => {
            server.record_err(e.kind(), is_guard);
            error_response(id.as_ref(), &e)
        }
    })
}

async fn load_content(
    server: &Server,
    content: Content,
    peer: Peer,
) -> Result<Vec<u8>, ProtocolError> {
    match content {
        Content::Bytes(b) => Ok(b),
        Content::Path(p) => {
            let max = server.settings.max_request_bytes;
            tokio::task::spawn_blocking(move || read_content_path(&p, peer.uid, peer.gid, max))
                .await
                .map_err(|e| ProtocolError::Internal(format!("reading content_path: {e}")))?
        }
    }
}

async fn count(server: &Arc<Server>, content: Content, peer: Peer) -> Result<Value, ProtocolError> {
    let bytes = load_content(server, content, peer).await?;
    let counter = server.counter.clone();
    let short = count_is_short(bytes.len());
    server
        .run_cpu(short, "count task", move || {
            let text = String::from_utf8_lossy(&bytes);
            json!({
                "tokens": counter.count(&text),
                "bytes": bytes.len(),
                "chars": text.chars().count(),
            })
        })
        .await
}

/// Runs one guard request; `None` when the client hung up while its job was queued or running.
async fn guard(
    server: &Arc<Server>,
    call: GuardCall,
    peer: Peer,
    started: Instant,
    gone: watch::Receiver<bool>,
) -> Option<Result<Value, ProtocolError>> {
    let deadline_ms = call.deadline_ms.unwrap_or(server.settings.deadline_ms);
    let deadline = started + Duration::from_millis(deadline_ms);
    let content = match load_content(server, call.content, peer).await {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    let d = server.settings.limits;
    let req = GuardRequest {
        content,
        tool: call.tool,
        args: call.args,
        intent: call.intent,
        session_dir: call.session_dir,
        limits: Limits {
            token_limit: call.token_limit.unwrap_or(d.token_limit),
            summarize_limit: call.summarize_limit.unwrap_or(d.summarize_limit),
            prefill_budget: call.prefill_budget.unwrap_or(d.prefill_budget),
            max_new_tokens: call.max_new_tokens.unwrap_or(d.max_new_tokens),
            preview_chars: call.preview_chars.unwrap_or(d.preview_chars),
            model_ms: call.model_ms.unwrap_or(d.model_ms),
        },
        keep_binary_inline: call.keep_binary_inline,
        deadline: Some(deadline),
        source: None,
        frame: call.frame.unwrap_or_default(),
    };
    let counter = server.counter.clone();
    let short = guard_is_short(req.content.len(), req.limits.token_limit);
    let prepared = server
        .run_cpu(short, "prepare task", move || {
            prepare(req, Some(counter.as_ref()))
        })
        .await;
    finish(server, prepared, deadline, deadline_ms, started, gone).await
}

/// Runs one `ask` request: resolves the saved output (refused outside a `long_responses/`, or
/// when the peer could not read it itself), then the guard's summary step with the question
/// as its intent. `None` when the client hung up.
async fn ask(
    server: &Arc<Server>,
    call: AskCall,
    peer: Peer,
    started: Instant,
    gone: watch::Receiver<bool>,
) -> Option<Result<Value, ProtocolError>> {
    use crate::guard::ask::{resolve_saved, AskError, AskRequest};
    let deadline_ms = call.deadline_ms.unwrap_or(server.settings.deadline_ms);
    let deadline = started + Duration::from_millis(deadline_ms);
    let max = server.settings.max_request_bytes as u64;
    let (path, session_dir) = (call.path, call.session_dir);
    let resolved =
        tokio::task::spawn_blocking(move || resolve_saved(&path, session_dir.as_deref(), max))
            .await
            .map_err(|e| ProtocolError::Internal(format!("resolving the saved output: {e}")));
    let output = match resolved {
        Err(e) => return Some(Err(e)),
        Ok(Err(e @ AskError::NotSaved { .. })) => {
            return Some(Err(ProtocolError::Forbidden(e.to_string())))
        }
        Ok(Err(AskError::TooLarge { bytes, limit, .. })) => {
            return Some(Err(ProtocolError::TooLarge {
                bytes: bytes as usize,
                limit: limit as usize,
            }))
        }
        Ok(Err(e)) => return Some(Err(ProtocolError::BadRequest(e.to_string()))),
        Ok(Ok(o)) => o,
    };
    let (uid, gid, mode) = output.owner;
    if !super::protocol::peer_can_read(uid, gid, mode, peer.uid, peer.gid) {
        return Some(Err(ProtocolError::Forbidden(format!(
            "{} is not readable by uid {}",
            output.path.display(),
            peer.uid
        ))));
    }
    let d = server.settings.limits;
    let req = AskRequest {
        output,
        question: call.question,
        limits: Limits {
            token_limit: call.token_limit.unwrap_or(d.token_limit),
            summarize_limit: call.summarize_limit.unwrap_or(d.summarize_limit),
            prefill_budget: call.prefill_budget.unwrap_or(d.prefill_budget),
            max_new_tokens: call.max_new_tokens.unwrap_or(d.max_new_tokens),
            preview_chars: call.preview_chars.unwrap_or(d.preview_chars),
            model_ms: call.model_ms.unwrap_or(d.model_ms),
        },
        deadline: Some(deadline),
    };
    let counter = server.counter.clone();
    let prepared = server
        .run_cpu(false, "ask task", move || {
            Ok(prepare_saved(req, Some(counter.as_ref())))
        })
        .await;
    finish(server, prepared, deadline, deadline_ms, started, gone).await
}

/// The common tail of `guard` and `ask`: a prepared request answered, its model job queued
/// (or, with a full queue, its fallback), waited for until its deadline or until the client
/// hangs up, and counted; `None` when the client hung up.
async fn finish(
    server: &Arc<Server>,
    prepared: Result<Result<Prepared, crate::guard::GuardError>, ProtocolError>,
    deadline: Instant,
    deadline_ms: u64,
    started: Instant,
    mut gone: watch::Receiver<bool>,
) -> Option<Result<Value, ProtocolError>> {
    let resp: GuardResponse = match prepared {
        Err(e) => return Some(Err(e)),
        Ok(Err(g)) => return Some(Err(ProtocolError::Guard(g))),
        Ok(Ok(Prepared::Done(r))) => r,
        Ok(Ok(Prepared::NeedsModel(job))) => {
            let (reply, rx) = oneshot::channel();
            let cancel = Arc::new(AtomicBool::new(false));
            let job = Job {
                job,
                cancel: cancel.clone(),
                reply,
                enqueued: Instant::now(),
            };
            match server.worker.try_submit(job) {
                Err(job) => {
                    let w = &server.worker;
                    let reason = match w.backend()["kind"].as_str() {
                        Some("openai") => format!(
                            "overloaded: the openai backend's queue is full ({} jobs waiting, {} in flight)",
                            w.capacity(),
                            w.in_flight()
                        ),
                        _ => format!("overloaded: the model queue is full ({} jobs)", w.capacity()),
                    };
                    let counter = server.counter.clone();
                    let fallback = server.run_cpu(false, "fallback task", move || {
                        job.job.fallback(Some(counter.as_ref()), &reason)
                    });
                    match fallback.await {
                        Ok(r) => r,
                        Err(e) => return Some(Err(e)),
                    }
                }
                Ok(()) => {
                    let key = server.next_job.fetch_add(1, Ordering::SeqCst);
                    server
                        .inflight
                        .lock()
                        .expect("inflight lock")
                        .insert(key, cancel.clone());
                    let until = tokio::time::Instant::from_std(deadline)
                        + Duration::from_millis(DEADLINE_SLACK_MS);
                    let out = tokio::select! {
                        r = rx => Some(r.map_err(|_| ProtocolError::Internal("the model thread dropped the job".into()))),
                        _ = until_true(&mut gone) => None,
                        _ = tokio::time::sleep_until(until) => Some(Err(ProtocolError::Deadline(format!(
                            "no result within {deadline_ms} ms (+{DEADLINE_SLACK_MS} ms slack)"
                        )))),
                    };
                    server.inflight.lock().expect("inflight lock").remove(&key);
                    match out {
                        None => {
                            tracing::info!("client hung up; cancelling its job");
                            cancel.store(true, Ordering::SeqCst);
                            return None;
                        }
                        Some(Err(e)) => {
                            cancel.store(true, Ordering::SeqCst);
                            return Some(Err(e));
                        }
                        Some(Ok(r)) => r,
                    }
                }
            }
        }
    };
    let kind = serde_json::to_value(resp.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    server.record_ok(&kind, started.elapsed().as_secs_f64() * 1e3);
    Some(
        serde_json::to_value(&resp)
            .map_err(|e| ProtocolError::Internal(format!("serializing the response: {e}"))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        assert_eq!(percentile(&[], 50.0), 0.0);
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 95.0), 95.0);
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), 2.0);
        assert_eq!(percentile(&[7.0], 95.0), 7.0);
    }

    #[test]
    fn vmrss_parses() {
        assert_eq!(
            parse_vmrss("Name:\tx\nVmRSS:\t  1234 kB\n"),
            Some(1234 * 1024)
        );
        assert_eq!(parse_vmrss("Name:\tx\n"), None);
    }
}
