//! `toolsum mcp [--session-dir DIR] -- CMD ARGS...`: a stdio MCP proxy in front of one server.
//!
//! It spawns `CMD ARGS...` and relays newline-delimited JSON-RPC both ways, byte for byte,
//! except:
//! - a `tools/list` result gets a required `_intent` string on every tool's `inputSchema`
//!   ([`tools::add_intent`]) and, on its last page, the proxy's own `toolsum_ask` tool;
//! - a `tools/call` loses `_intent` from its arguments before it goes upstream
//!   ([`tools::take_intent`]); it becomes the intent of the call's guard;
//! - a `tools/call` result over the token limit is guarded as a whole ([`result`]): its text
//!   through the daemon (started on first use; in-process without the model when it is down,
//!   [`remote`]), its blobs saved decoded; the client gets the summary and a `resource_link`
//!   per saved file. A result at or under the limit passes as the very bytes the server sent;
//! - a `tools/call` of `toolsum_ask` is answered by the proxy (the daemon's `ask` op on a file
//!   of this session's `long_responses/`).
//!
//! Everything else passes through untouched in both directions, whatever the protocol
//! revision: `initialize` (2025-11-25) or per-request `_meta` and `server/discover`
//! (2026-07-28), notifications, progress, cancellation, server-to-client requests (sampling,
//! elicitation, roots) and their answers, `input_required` results and their retries, lines
//! that are not JSON (a result with raw non-UTF-8 bytes or a lone surrogate escape is JSON
//! enough: read with U+FFFD, it is guarded like any other, `mended_line`). When the server
//! exits or closes its output, every request it did not answer gets a JSON-RPC error (code
//! [`UPSTREAM_GONE`]) and the proxy exits.
//!
//! Why a relay on `serde_json` and not rmcp's service layer: the service layer answers
//! `initialize` and `ping` itself, parses every message into the revision's types it knows
//! (rejecting what a newer revision adds) and re-serializes what it forwards, so a small result
//! would not reach the client byte-identical and an unknown method would not pass. rmcp's model
//! types ([`rmcp::model`]) type the content blocks the proxy reads and the ones it writes.

pub mod remote;
pub mod result;
pub mod tools;

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::config::{Config, ConfigLayer};
use remote::Remote;
use tools::{ToolInfo, ASK_TOOL};

/// JSON-RPC error code sent for each request the upstream server left unanswered when it
/// exited (the "connection closed" code of the MCP SDKs, in JSON-RPC's server-error range).
pub const UPSTREAM_GONE: i64 = -32000;

/// After the client closes its input, the server gets this long to exit before SIGTERM, and as
/// long again before SIGKILL (ms; the MCP stdio transport's shutdown order).
pub const EXIT_GRACE_MS: u64 = 3_000;

/// After the server process exits, its output is still read this long (ms): a child of the
/// server may hold it open, and the lines already written still reach the client.
pub const DRAIN_MS: u64 = 1_000;

/// Lines buffered towards each side before a reader waits (backpressure).
const CHANNEL_LINES: usize = 64;

/// A saved file named by `toolsum_ask`: absolute as given; relative, the first that exists of
/// the path under the session dir, under the proxy's working dir (the agent's project, where a
/// pointer `.toolsum/mcp/long_responses/…` starts) and, for a bare name, in the session dir's
/// `long_responses/`; else the path under the session dir (the daemon says it is missing).
fn resolve_saved(path: &Path, session_dir: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    let cwd = std::env::current_dir().ok();
    [
        Some(session_dir.join(path)),
        cwd.map(|c| c.join(path)),
        Some(session_dir.join(crate::guard::save::SAVE_DIR).join(path)),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
    .unwrap_or_else(|| session_dir.join(path))
}

/// Name of the default session dir inside `<cwd>/.toolsum/`.
pub const DEFAULT_SESSION: &str = "mcp";

/// `toolsum mcp [--session-dir DIR] [--no-spawn] [settings] -- CMD ARGS...`.
#[derive(Debug, Clone, clap::Args)]
pub struct McpArgs {
    /// Settings (flags beat TOOLSUM_* env beat the config file).
    #[command(flatten)]
    pub config: ConfigLayer,
    /// Where large results are saved (`<dir>/long_responses/`; default: ./.toolsum/mcp,
    /// created with mode 0700).
    #[arg(long)]
    pub session_dir: Option<PathBuf>,
    /// Do not start a daemon when none answers (guard in-process, without the model).
    #[arg(long)]
    pub no_spawn: bool,
    /// The MCP server to run, after `--`: its command and arguments.
    #[arg(last = true, required = true, value_name = "CMD ARGS")]
    pub command: Vec<OsString>,
}

/// What the proxy needs besides its two byte streams.
pub struct ProxyOptions {
    /// The server's command and arguments (non-empty).
    pub command: Vec<OsString>,
    /// Absolute session dir (created on first save).
    pub session_dir: PathBuf,
    /// The daemon, with the in-process fallback.
    pub remote: Remote,
}

/// Runs `toolsum mcp` on the process's stdin/stdout; exits with the server's status when it
/// was not 0.
///
/// # Errors
/// The configuration does not load, the current dir is unknown, or the server cannot start.
pub fn mcp_cmd(a: McpArgs) -> anyhow::Result<()> {
    let config = Config::load(a.config.clone())?;
    let cwd = std::env::current_dir().context("the current dir")?;
    let session_dir = match a.session_dir {
        Some(d) if d.is_absolute() => d,
        Some(d) => cwd.join(d),
        // `.toolsum/` gets its `.gitignore` of `*`, as a hook's does.
        None => crate::guard::session::hook_session_dir(&cwd, DEFAULT_SESSION),
    };
    let opts = ProxyOptions {
        command: a.command,
        session_dir,
        remote: Remote::new(config, !a.no_spawn),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("toolsum-mcp")
        .build()
        .context("starting the tokio runtime")?;
    let code = rt.block_on(run(opts, tokio::io::stdin(), tokio::io::stdout()))?;
    // The runtime's stdin thread may be blocked in a read: do not wait for it.
    rt.shutdown_timeout(Duration::from_millis(100));
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// A request forwarded upstream and not answered yet.
struct Pending {
    id: Value,
    method: String,
    call: Option<Call>,
}

/// A `tools/call` on its way.
#[derive(Clone)]
struct Call {
    tool: String,
    args: Option<Value>,
    intent: Option<String>,
}

#[derive(Default)]
struct State {
    /// Forwarded requests by id (its JSON text).
    pending: HashMap<String, Pending>,
    /// Upstream tools seen in `tools/list`.
    tools: HashMap<String, ToolInfo>,
    /// `toolsum_ask` calls being answered, by id.
    local: HashMap<String, tokio::task::AbortHandle>,
    /// Results being guarded, by id; a cancelled one is not sent.
    guarding: HashSet<String>,
    /// Ids cancelled by the client while their result was being guarded.
    cancelled: HashSet<String>,
}

struct Ctx {
    state: Mutex<State>,
    session_dir: PathBuf,
    remote: Remote,
}

impl Ctx {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("proxy state lock")
    }
}

/// The key of a JSON-RPC id (`1` and `"1"` differ).
fn key(id: &Value) -> String {
    id.to_string()
}

fn strip_eol(line: &[u8]) -> &[u8] {
    let l = line.strip_suffix(b"\n").unwrap_or(line);
    l.strip_suffix(b"\r").unwrap_or(l)
}

fn with_eol(mut v: Vec<u8>) -> Vec<u8> {
    if v.last() != Some(&b'\n') {
        v.push(b'\n');
    }
    v
}

fn to_line(v: &Value) -> Vec<u8> {
    with_eol(serde_json::to_vec(v).expect("a Value always serializes"))
}

/// What to do with one line from the client.
enum FromClient {
    /// Send these bytes upstream.
    Forward(Vec<u8>),
    /// A `toolsum_ask` call: answered here.
    Ask { id: Value, params: Value },
    /// Nothing (a cancellation of a call answered here).
    Drop,
}

fn on_client_line(line: Vec<u8>, ctx: &Ctx) -> FromClient {
    // A request with bytes that are not UTF-8 (a Latin-1 `é` in an `_intent`; trial of
    // session 56) is read as the server's lines are ([`mended_line`]): its call is still
    // tracked and guarded and its `_intent` taken out, instead of passing through unguarded.
    let parsed = serde_json::from_slice::<Value>(strip_eol(&line))
        .ok()
        .or_else(|| mended_line(strip_eol(&line)));
    let Some(mut v) = parsed else {
        return FromClient::Forward(line);
    };
    let Some(obj) = v.as_object() else {
        return FromClient::Forward(line);
    };
    let method = obj
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    let id = obj.get("id").cloned();
    let mut st = ctx.state();
    match (method.as_deref(), id) {
        (Some("tools/call"), Some(id)) => {
            let params = v.get("params").cloned().unwrap_or(Value::Null);
            let tool = params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if tool == ASK_TOOL && !st.tools.contains_key(ASK_TOOL) {
                return FromClient::Ask { id, params };
            }
            let own = st.tools.get(&tool).is_some_and(|t| t.own_intent);
            let intent = v
                .get_mut("params")
                .and_then(|p| tools::take_intent(p, &st.tools));
            let args = v.get("params").and_then(|p| p.get("arguments")).cloned();
            st.pending.insert(
                key(&id),
                Pending {
                    id,
                    method: "tools/call".into(),
                    call: Some(Call {
                        tool,
                        args,
                        intent: intent.clone(),
                    }),
                },
            );
            if intent.is_some() && !own {
                FromClient::Forward(to_line(&v))
            } else {
                FromClient::Forward(line)
            }
        }
        (Some(m), Some(id)) => {
            st.pending.insert(
                key(&id),
                Pending {
                    id,
                    method: m.to_string(),
                    call: None,
                },
            );
            FromClient::Forward(line)
        }
        (Some("notifications/cancelled"), None) => {
            let rid = v
                .get("params")
                .and_then(|p| p.get("requestId"))
                .map(key)
                .unwrap_or_default();
            if let Some(h) = st.local.remove(&rid) {
                h.abort();
                return FromClient::Drop;
            }
            // The server need not answer a cancelled request: it is no longer pending.
            st.pending.remove(&rid);
            if st.guarding.contains(&rid) {
                st.cancelled.insert(rid);
            }
            FromClient::Forward(line)
        }
        _ => FromClient::Forward(line),
    }
}

/// What to do with one line from the server.
enum FromServer {
    /// Send these bytes to the client.
    Forward(Vec<u8>),
    /// A large `tools/call` result: guard it, then send.
    Guard(Box<GuardJob>),
}

struct GuardJob {
    line: Vec<u8>,
    message: Value,
    parts: result::Parts,
    call: Call,
    info: ToolInfo,
    key: String,
}

/// A server's line that serde_json refuses but that is JSON with two flaws a tool's text may
/// bring: raw bytes that are not UTF-8, or a lone UTF-16 surrogate escaped in a string
/// (`\udcff`, as JavaScript's `JSON.stringify` writes a string cut between a pair's halves).
/// Read with U+FFFD for each, so the result is still guarded (as the hooks read such a
/// payload); `None` when it has neither flaw or still does not parse. The line as sent is kept
/// for a result passed through.
fn mended_line(raw: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(raw);
    let bad = if std::str::from_utf8(raw).is_err() {
        text.matches('\u{FFFD}').count()
    } else {
        0
    };
    let (mended, lone) = crate::hooks::lone_surrogates_replaced(&text);
    if bad == 0 && lone == 0 {
        return None;
    }
    let v = serde_json::from_str(&mended).ok()?;
    tracing::warn!(
        "a server message read with U+FFFD for {bad} invalid UTF-8 sequence(s) and {lone} lone \
         surrogate escape(s)"
    );
    Some(v)
}

fn on_server_line(line: Vec<u8>, ctx: &Ctx) -> FromServer {
    let raw = strip_eol(&line);
    let Some(mut v) = serde_json::from_slice::<Value>(raw)
        .ok()
        .or_else(|| mended_line(raw))
    else {
        return FromServer::Forward(line);
    };
    let is_response =
        v.get("method").is_none() && (v.get("result").is_some() || v.get("error").is_some());
    let Some(id) = v.get("id").filter(|_| is_response) else {
        return FromServer::Forward(line);
    };
    let k = key(id);
    let mut st = ctx.state();
    let Some(p) = st.pending.remove(&k) else {
        return FromServer::Forward(line);
    };
    if p.method == "tools/list" {
        let Some(result) = v.get_mut("result") else {
            return FromServer::Forward(line);
        };
        let last_page = result.get("nextCursor").is_none_or(Value::is_null);
        return if tools::add_intent(result, &mut st.tools, last_page) {
            FromServer::Forward(to_line(&v))
        } else {
            FromServer::Forward(line)
        };
    }
    let Some(call) = p.call else {
        return FromServer::Forward(line);
    };
    let Some(parts) = v.get("result").and_then(result::split) else {
        return FromServer::Forward(line);
    };
    if parts.bytes <= ctx.remote.token_limit() {
        return FromServer::Forward(line);
    }
    let info = st.tools.get(&call.tool).copied().unwrap_or_default();
    st.guarding.insert(k.clone());
    FromServer::Guard(Box::new(GuardJob {
        line,
        message: v,
        parts,
        call,
        info,
        key: k,
    }))
}

/// Creates the session dir (and its parents) with mode 0700 when missing.
fn ensure_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// The guarded message for `job`, or its original bytes when nothing was saved (the text
/// passed through after counting) or the session dir is unusable (the output is never lost).
fn guard_job(job: GuardJob, ctx: &Ctx) -> Vec<u8> {
    let GuardJob {
        line,
        mut message,
        parts,
        call,
        info,
        ..
    } = job;
    if let Err(e) = ensure_dir(&ctx.session_dir) {
        tracing::warn!(
            "session dir {}: {e}; result of {} passed through",
            ctx.session_dir.display(),
            call.tool
        );
        return line;
    }
    let blobs = result::save_blobs(&parts, &ctx.session_dir, &call.tool);
    let text = parts.text();
    let answer = if text.len() > ctx.remote.token_limit() {
        let r = ctx.remote.guard(remote::GuardCall {
            content: text,
            tool: call.tool.clone(),
            args: call.args.clone(),
            intent: call.intent.clone(),
            session_dir: ctx.session_dir.clone(),
        });
        match r {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!("guarding {}: {e:#}; its text passed through", call.tool);
                None
            }
        }
    } else {
        None
    };
    let summarized = answer
        .as_ref()
        .is_some_and(|r| r.kind != crate::guard::ResultKind::Passthrough);
    if !summarized && blobs.iter().all(|b| b.file.is_none()) {
        return line;
    }
    let Some(res) = message.get("result") else {
        return line;
    };
    let out = result::build(
        res,
        &parts,
        answer.as_ref(),
        &blobs,
        &ctx.session_dir,
        info,
        &call.tool,
    );
    message["result"] = out;
    to_line(&message)
}

/// `toolsum_ask`: the answer as a `CallToolResult` (an error result for a bad file or a
/// refused path, so the model sees why).
fn ask_job(params: &Value, ctx: &Ctx) -> CallToolResult {
    let args = params.get("arguments");
    let arg = |k: &str| {
        args.and_then(|a| a.get(k))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let (Some(file), Some(question)) = (arg("file"), arg("question")) else {
        return CallToolResult::error(vec![ContentBlock::text(
            "toolsum_ask needs `file` (a saved file's path or file:// URI) and `question`.",
        )]);
    };
    let path = match file.strip_prefix("file://") {
        Some(p) => PathBuf::from(percent_decode(p)),
        None => PathBuf::from(file),
    };
    let path = resolve_saved(&path, &ctx.session_dir);
    match ctx.remote.ask(&path, question, &ctx.session_dir) {
        Ok(r) => {
            let text = result::absolute_pointers(&r.text, &ctx.session_dir, &r.saved);
            CallToolResult::success(vec![ContentBlock::text(text)])
        }
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("toolsum_ask: {e:#}"))]),
    }
}

/// Decodes `%XX` escapes of a `file://` URI's path (invalid escapes are kept as they are).
fn percent_decode(s: &str) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    std::ffi::OsString::from_vec(out)
}

fn ask_response(id: Value, params: &Value, mut r: CallToolResult) -> Vec<u8> {
    // 2026-07-28 requests carry their revision in `_meta`; older ones never saw `resultType`.
    let modern = params
        .get("_meta")
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .is_some();
    if !modern {
        r.result_type = None;
    }
    to_line(&json!({"jsonrpc": "2.0", "id": id, "result": r}))
}

/// Writes each line it receives; on a write error, flags `broken` and stops.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    broken: Option<watch::Sender<bool>>,
) {
    while let Some(line) = rx.recv().await {
        let ok = w.write_all(&line).await.is_ok() && w.flush().await.is_ok();
        if !ok {
            if let Some(b) = &broken {
                let _ = b.send(true);
            }
            return;
        }
    }
    let _ = w.shutdown().await;
}

/// Reads lines (with their `\n`) into a channel until EOF or an error.
async fn read_lines<R: AsyncRead + Unpin>(r: R, tx: mpsc::Sender<Vec<u8>>) {
    let mut r = BufReader::new(r);
    loop {
        let mut buf = Vec::new();
        match r.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if tx.send(buf).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The client side: each line is forwarded, rewritten, or answered here (`toolsum_ask`).
async fn client_loop<R: AsyncRead + Unpin + Send + 'static>(
    input: R,
    ctx: Arc<Ctx>,
    to_server: mpsc::Sender<Vec<u8>>,
    to_client: mpsc::Sender<Vec<u8>>,
    _done: oneshot::Sender<()>,
) {
    let (tx, mut lines) = mpsc::channel(CHANNEL_LINES);
    tokio::spawn(read_lines(input, tx));
    while let Some(line) = lines.recv().await {
        match on_client_line(line, &ctx) {
            FromClient::Forward(l) => {
                if to_server.send(l).await.is_err() {
                    break;
                }
            }
            FromClient::Drop => {}
            FromClient::Ask { id, params } => {
                let (ctx2, to_client2, k) = (ctx.clone(), to_client.clone(), key(&id));
                let (ready_tx, ready_rx) = oneshot::channel::<()>();
                let task = tokio::spawn(async move {
                    let _ = ready_rx.await;
                    let c = ctx2.clone();
                    let p = params.clone();
                    let r = tokio::task::spawn_blocking(move || ask_job(&p, &c)).await;
                    let r = r.unwrap_or_else(|e| {
                        CallToolResult::error(vec![ContentBlock::text(format!(
                            "toolsum_ask failed: {e}"
                        ))])
                    });
                    let line = ask_response(id, &params, r);
                    let still = ctx2.state().local.remove(&key_of_line(&line)).is_some();
                    if still {
                        let _ = to_client2.send(line).await;
                    }
                });
                ctx.state().local.insert(k, task.abort_handle());
                let _ = ready_tx.send(());
            }
        }
    }
}

/// The id key of a response line built by [`ask_response`].
fn key_of_line(line: &[u8]) -> String {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.get("id").map(key))
        .unwrap_or_default()
}

/// Runs the proxy between `client_in`/`client_out` and a server started from `opts.command`,
/// until the server exits (after the client closed its side, or on its own). Returns the
/// server's exit code (1 when it died of a signal).
///
/// # Errors
/// The server cannot be started.
pub async fn run<R, W>(opts: ProxyOptions, client_in: R, client_out: W) -> anyhow::Result<i32>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (prog, args) = opts
        .command
        .split_first()
        .context("no MCP server command given (toolsum mcp -- CMD ARGS...)")?;
    let mut child = tokio::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting the MCP server {prog:?}"))?;
    let pid = child.id();
    let server_in = child.stdin.take().context("the server's stdin")?;
    let server_out = child.stdout.take().context("the server's stdout")?;
    let name = Path::new(prog)
        .file_name()
        .map_or_else(|| "server".into(), |n| n.to_string_lossy().into_owned());

    let ctx = Arc::new(Ctx {
        state: Mutex::new(State::default()),
        session_dir: opts.session_dir,
        remote: opts.remote,
    });
    let (to_client, client_rx) = mpsc::channel::<Vec<u8>>(CHANNEL_LINES);
    let (to_server, server_rx) = mpsc::channel::<Vec<u8>>(CHANNEL_LINES);
    let (broken_tx, mut broken_rx) = watch::channel(false);
    let client_writer = tokio::spawn(write_lines(client_out, client_rx, Some(broken_tx)));
    tokio::spawn(write_lines(server_in, server_rx, None));
    let (done_tx, mut client_done) = oneshot::channel();
    let client = tokio::spawn(client_loop(
        client_in,
        ctx.clone(),
        to_server,
        to_client.clone(),
        done_tx,
    ));
    let (lines_tx, mut lines) = mpsc::channel(CHANNEL_LINES);
    tokio::spawn(read_lines(server_out, lines_tx));

    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing a SIGTERM handler")?;
    let mut guards = JoinSet::new();
    let mut exited = None;
    let mut drain_until: Option<Instant> = None;
    let mut kill_at: Option<(Instant, i32)> = None;
    let mut client_closed = false;
    let signal = |sig: i32| {
        if let Some(p) = pid {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(p as i32, sig) };
        }
    };
    loop {
        tokio::select! {
            l = lines.recv() => match l {
                None => break,
                Some(line) => match on_server_line(line, &ctx) {
                    FromServer::Forward(l) => {
                        if to_client.send(l).await.is_err() {
                            break;
                        }
                    }
                    FromServer::Guard(job) => {
                        let (c, tx) = (ctx.clone(), to_client.clone());
                        guards.spawn(async move {
                            let k = job.key.clone();
                            let c2 = c.clone();
                            let out = tokio::task::spawn_blocking(move || guard_job(*job, &c2)).await;
                            let cancelled = {
                                let mut st = c.state();
                                st.guarding.remove(&k);
                                st.cancelled.remove(&k)
                            };
                            match out {
                                Ok(l) if !cancelled => { let _ = tx.send(l).await; }
                                Ok(_) => {}
                                Err(e) => tracing::error!("guarding a result panicked: {e}"),
                            }
                        });
                    }
                },
            },
            st = child.wait(), if exited.is_none() => {
                exited = Some(st);
                drain_until = Some(Instant::now() + Duration::from_millis(DRAIN_MS));
            }
            _ = sleep_until_some(drain_until) => break,
            _ = sleep_until_some(kill_at.map(|k| k.0)) => {
                let sig = kill_at.map_or(libc::SIGKILL, |k| k.1);
                signal(sig);
                kill_at = (sig == libc::SIGTERM).then(|| {
                    (Instant::now() + Duration::from_millis(EXIT_GRACE_MS), libc::SIGKILL)
                });
            }
            _ = sigterm.recv() => {
                signal(libc::SIGTERM);
                kill_at = Some((Instant::now() + Duration::from_millis(EXIT_GRACE_MS), libc::SIGKILL));
            }
            _ = broken_rx.changed() => {
                tracing::info!("the client closed its input; stopping the server");
                signal(libc::SIGTERM);
                kill_at = Some((Instant::now() + Duration::from_millis(EXIT_GRACE_MS), libc::SIGKILL));
            }
            _ = &mut client_done, if !client_closed => {
                client_closed = true;
                if kill_at.is_none() {
                    kill_at = Some((Instant::now() + Duration::from_millis(EXIT_GRACE_MS), libc::SIGTERM));
                }
            }
            Some(_) = guards.join_next(), if !guards.is_empty() => {}
        }
    }

    // The server is gone (or closed its output): fail what it left unanswered.
    let status = match exited {
        Some(s) => s.ok(),
        None => {
            let w = tokio::time::timeout(Duration::from_millis(DRAIN_MS), child.wait()).await;
            match w {
                Ok(s) => s.ok(),
                Err(_) => {
                    let _ = child.start_kill();
                    child.wait().await.ok()
                }
            }
        }
    };
    let how = match status {
        Some(s) => format!("exited ({s})"),
        None => "closed its output".to_string(),
    };
    let left: Vec<Pending> = ctx.state().pending.drain().map(|(_, p)| p).collect();
    for p in left {
        let msg = format!(
            "toolsum mcp: the upstream MCP server ({name}) {how} before answering {}",
            p.method
        );
        tracing::warn!("{msg}");
        let err =
            json!({"jsonrpc": "2.0", "id": p.id, "error": {"code": UPSTREAM_GONE, "message": msg}});
        let _ = to_client.send(to_line(&err)).await;
    }
    while guards.join_next().await.is_some() {}
    client.abort();
    let _ = client.await;
    drop(to_client);
    let _ = tokio::time::timeout(Duration::from_secs(5), client_writer).await;
    Ok(match status {
        Some(s) => s.code().unwrap_or(1),
        None => 1,
    })
}

async fn sleep_until_some(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
