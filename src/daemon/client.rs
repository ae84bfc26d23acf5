//! The client: a blocking protocol-v1 connection ([`Client`]), and the `guard`, `count` and
//! `status` commands built on it.
//!
//! [`guard_cli`] never leaves the agent without a result: when no daemon answers (after trying to
//! start one, unless `no_spawn`), or the daemon errs or is late, it runs the guard pipeline
//! locally without a model ([`crate::guard::guard`] with the tokenizer from the model file's
//! header, if a model resolves) and says why in `reason`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::backend::TokenCounter;
use crate::config::Config;
use crate::guard::{GuardRequest, GuardResponse};

/// Extra time (ms) the client waits for a guard answer past the request's deadline before it
/// gives up and falls back (the daemon itself answers `deadline` 5 s past it).
pub const CLIENT_SLACK_MS: u64 = 10_000;

/// Errors of a client call.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Connecting, writing or reading failed (no daemon, or it went away).
    #[error("daemon connection: {0}")]
    Io(#[from] std::io::Error),
    /// The daemon answered `ok: false`.
    #[error("daemon error {kind}: {message}")]
    Remote {
        /// The stable wire kind (`overloaded`, `deadline`, `bad_session_dir`, ...).
        kind: String,
        /// The message.
        message: String,
    },
    /// The answer was not valid protocol.
    #[error("bad response from daemon: {0}")]
    BadResponse(String),
}

impl ClientError {
    /// True for errors that a local run of the same request would repeat (the request itself
    /// is unusable), so falling back makes no sense.
    pub fn is_request_error(&self) -> bool {
        matches!(self, ClientError::Remote { kind, .. }
            if matches!(kind.as_str(), "bad_session_dir" | "unsafe_save_dir" | "bad_request"))
    }
}

/// One connection to the daemon; requests are answered in order.
pub struct Client {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
    /// How long one call may take, sending and answer together ([`Client::set_timeout`]).
    timeout: Option<Duration>,
}

/// How long a new connection waits for each read or write until [`Client::set_timeout`] says
/// otherwise (30 s: far above a daemon's answer to `status`, below an agent's hook timeout).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

impl Client {
    /// Connects to the daemon socket.
    ///
    /// # Errors
    /// The socket does not exist or nobody listens on it.
    pub fn connect(socket: &Path) -> std::io::Result<Client> {
        let s = UnixStream::connect(socket)?;
        s.set_read_timeout(Some(CONNECT_TIMEOUT))?;
        s.set_write_timeout(Some(CONNECT_TIMEOUT))?;
        Ok(Client {
            reader: BufReader::new(s.try_clone()?),
            writer: s,
            timeout: Some(CONNECT_TIMEOUT),
        })
    }

    /// Sets how long one call may take in all, sending the request and reading its answer
    /// (`None` = forever). A daemon that is alive but does not read (stopped, hung) fills the
    /// socket's buffer: without this bound a large request would block the client, and the
    /// agent's hook, forever instead of falling back.
    ///
    /// # Errors
    /// As `set_read_timeout` / `set_write_timeout`.
    pub fn set_timeout(&mut self, t: Option<Duration>) -> std::io::Result<()> {
        self.timeout = t;
        self.writer.set_read_timeout(t)?;
        self.writer.set_write_timeout(t)
    }

    /// Sends `buf` whole before `deadline` (`None`: no limit): each write waits at most for
    /// the time left, so a daemon that takes the request a little at a time cannot stretch
    /// the call past its timeout.
    fn send_by(&mut self, buf: &[u8], deadline: Option<std::time::Instant>) -> std::io::Result<()> {
        let mut rest = buf;
        while !rest.is_empty() {
            if let Some(d) = deadline {
                let left = d.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the daemon did not take the request in time",
                    ));
                }
                self.writer.set_write_timeout(Some(left))?;
            }
            match self.writer.write(rest) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.writer.flush()
    }

    /// Sends one request object and reads its answer; an `ok: false` answer becomes
    /// [`ClientError::Remote`].
    ///
    /// A daemon that refuses a connection (another uid, the connection cap) answers one error
    /// line and closes without reading: when sending fails because of that (`EPIPE`,
    /// `ECONNRESET`), that answer is still read and returned.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn call(&mut self, req: &Value) -> Result<Value, ClientError> {
        use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
        let mut line =
            serde_json::to_vec(req).map_err(|e| ClientError::BadResponse(e.to_string()))?;
        line.push(b'\n');
        let deadline = self.timeout.map(|t| std::time::Instant::now() + t);
        let sent = self.send_by(&line, deadline);
        // The answer gets the time the sending left (at least a second: a refusal is
        // already waiting).
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(std::time::Instant::now());
            self.writer
                .set_read_timeout(Some(left.max(Duration::from_secs(1))))?;
        }
        let mut resp = String::new();
        match sent {
            Ok(()) => {}
            Err(e) if matches!(e.kind(), BrokenPipe | ConnectionReset) => {
                if !matches!(self.reader.read_line(&mut resp), Ok(n) if n > 0) {
                    return Err(e.into());
                }
            }
            Err(e) => return Err(e.into()),
        }
        if resp.is_empty() && self.reader.read_line(&mut resp)? == 0 {
            return Err(ClientError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the daemon closed the connection",
            )));
        }
        let v: Value =
            serde_json::from_str(&resp).map_err(|e| ClientError::BadResponse(e.to_string()))?;
        if v.get("ok") == Some(&Value::Bool(true)) {
            return Ok(v);
        }
        let err = v.get("error");
        let field = |k: &str| {
            err.and_then(|e| e.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        Err(ClientError::Remote {
            kind: field("kind"),
            message: field("message"),
        })
    }

    /// `status`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn status(&mut self) -> Result<Value, ClientError> {
        self.call(&json!({"v": 1, "op": "status"}))
    }

    /// `count`: `{tokens, bytes, chars}` of `content`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn count(&mut self, content: &[u8]) -> Result<Value, ClientError> {
        let mut req = json!({"v": 1, "op": "count"});
        put_content(&mut req, content);
        self.call(&req)
    }

    /// `shutdown`.
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn shutdown(&mut self) -> Result<Value, ClientError> {
        self.call(&json!({"v": 1, "op": "shutdown"}))
    }

    /// `ask` with a full request object (`path`, `question`, ...; `op` is set here).
    ///
    /// # Errors
    /// [`ClientError`], including `BadResponse` when the answer is not a guard response.
    pub fn ask(&mut self, req: &Value) -> Result<GuardResponse, ClientError> {
        let mut req = req.clone();
        req["v"] = json!(1);
        req["op"] = json!("ask");
        let v = self.call(&req)?;
        serde_json::from_value(v).map_err(|e| ClientError::BadResponse(e.to_string()))
    }

    /// `guard` with a full request object (`op` is set here).
    ///
    /// # Errors
    /// [`ClientError`], including `BadResponse` when the answer is not a guard response.
    pub fn guard(&mut self, req: &Value) -> Result<GuardResponse, ClientError> {
        let mut req = req.clone();
        req["v"] = json!(1);
        req["op"] = json!("guard");
        let v = self.call(&req)?;
        serde_json::from_value(v).map_err(|e| ClientError::BadResponse(e.to_string()))
    }
}

/// Puts `content` into a request as `content` (valid UTF-8) or `content_b64` (anything else).
pub fn put_content(req: &mut Value, content: &[u8]) {
    match std::str::from_utf8(content) {
        Ok(s) => req["content"] = json!(s),
        Err(_) => {
            req["content_b64"] = json!(base64::engine::general_purpose::STANDARD.encode(content))
        }
    }
}

/// Where the `guard` command's input comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Standard input.
    Stdin,
    /// A file (sent to the daemon as `content_path`, so its bytes need not cross the socket).
    File(PathBuf),
    /// The bytes themselves (a hook's payload, an MCP result).
    Bytes(Vec<u8>),
}

/// Options of [`guard_cli`] and [`guard_resilient`].
#[derive(Debug, Clone)]
pub struct GuardCliOptions {
    /// Effective configuration (socket, model for the fallback tokenizer, limits). Only the
    /// limits the caller set ([`Config::explicit`]) travel to the daemon; the daemon's own
    /// settings hold for the rest.
    pub config: Config,
    /// Tool name (empty = `tool`, with a warning).
    pub tool: String,
    /// Tool arguments (JSON).
    pub args: Option<Value>,
    /// What the caller wants from the output.
    pub intent: Option<String>,
    /// Session dir; `None` = the current directory. Made absolute against the current dir;
    /// created (0700) when missing and its parent exists; the fallback dir when unusable
    /// ([`crate::guard::session::prepare_session_dir`]).
    pub session_dir: Option<PathBuf>,
    /// The tool output.
    pub input: Input,
    /// Do not start a daemon when none answers.
    pub no_spawn: bool,
    /// Keep base64 files inline.
    pub keep_binary_inline: bool,
    /// The agent's working directory: pointers in the text are rewritten to open from it
    /// ([`crate::guard::session::relocate`]); `saved[].path` stays session-relative. `None` =
    /// pointers as the pipeline wrote them (session-relative).
    pub cwd: Option<PathBuf>,
    /// Text the caller adds around the result ([`GuardRequest::frame`]): an agent hook's
    /// sentence, the session dir a relocated pointer names. Empty for none.
    pub frame: String,
}

/// What [`guard_resilient`] returns: always a response, plus what went wrong on the way.
#[derive(Debug, Clone)]
pub struct GuardOutcome {
    /// The synthetic result (or the output itself when it is small or nothing else worked).
    pub response: GuardResponse,
    /// Faults met and worked around, one line each (for stderr / a log): a bad session dir,
    /// an empty tool name, a dead daemon, ...
    pub faults: Vec<String>,
    /// The session dir the saved files are in (the fallback dir when the given one was unusable).
    pub session_dir: PathBuf,
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

/// How long a daemon that accepts a connection has to answer a `status` probe before
/// [`connect_or_spawn`] calls it hung (3 s). A live daemon answers `status` on its reserved
/// slots in milliseconds however busy its model is (`scripts/hook-latency.sh`: p95 under
/// 20 ms for a whole hook run); one stopped (`SIGSTOP`) or wedged accepts connections in the
/// kernel's backlog and never answers, and each call would wait out `deadline_ms` before
/// falling back (71 s in a new user's trial).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Whether the daemon behind `c` (on `socket`) answers a `status` call within
/// [`PROBE_TIMEOUT`], on the connection the request then uses (the daemon answers requests
/// one after another on a connection); `c`'s timeout is [`CONNECT_TIMEOUT`] again after it.
///
/// # Errors
/// It does not answer in time, or the connection fails.
fn probe(c: &mut Client, socket: &Path) -> anyhow::Result<()> {
    c.set_timeout(Some(PROBE_TIMEOUT))?;
    c.status().map_err(|e| {
        anyhow::anyhow!(
            "the daemon on {} accepts connections but did not answer a status probe within {} s ({e}); is it stopped or hung?",
            socket.display(),
            PROBE_TIMEOUT.as_secs()
        )
    })?;
    c.set_timeout(Some(CONNECT_TIMEOUT))?;
    Ok(())
}

/// Connects to the daemon, starting one (`toolsum serve --socket S [--model M]`, detached) when
/// none answers and `spawn` is true. A daemon that accepts connections but does not answer a
/// `status` probe within [`PROBE_TIMEOUT`] is an error, not a connection: the caller falls
/// back rather than waiting out the request's deadline.
///
/// # Errors
/// No daemon answers and none could be started; or the daemon is hung.
pub fn connect_or_spawn(config: &Config, spawn: bool) -> anyhow::Result<Client> {
    match Client::connect(&config.socket) {
        Ok(mut c) => {
            probe(&mut c, &config.socket)?;
            return Ok(c);
        }
        Err(e) if !spawn => {
            return Err(
                anyhow::Error::new(e).context(format!("no daemon on {}", config.socket.display()))
            )
        }
        Err(_) => {}
    }
    let dir = config
        .socket
        .parent()
        .ok_or_else(|| anyhow::anyhow!("the socket path has no directory"))?;
    super::ensure_socket_dir(dir)?;
    let mut args: Vec<std::ffi::OsString> = vec!["serve".into(), "--socket".into()];
    args.push(config.socket.clone().into_os_string());
    if let Some(m) = &config.model {
        args.push("--model".into());
        args.push(m.into());
    }
    super::spawn_daemon(
        &args,
        &config.socket,
        Duration::from_millis(config.spawn_timeout_ms),
    )?;
    Ok(Client::connect(&config.socket)?)
}

/// The tokenizer of the configured model, read from its GGUF header, for the local fallback;
/// `None` when no model resolves or the header cannot be read.
pub fn fallback_counter(config: &Config) -> Option<Box<dyn TokenCounter>> {
    let path = crate::models::resolve(config.model.as_deref()).ok()?;
    match crate::tokenizer::GgufTokenizer::from_gguf_path(&path) {
        Ok(t) => Some(Box::new(t)),
        Err(e) => {
            tracing::warn!("fallback tokenizer from {}: {e}", path.display());
            None
        }
    }
}

/// The request fields for the limits the caller set (flags, `TOOLSUM_*`, config file): a
/// limit left unset is left out, so the daemon's own configuration decides it. `l` is
/// [`Config::explicit`].
pub fn explicit_limits(l: &crate::config::ConfigLayer) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    let mut put = |k: &str, v: Option<u64>| {
        if let Some(v) = v {
            m.insert(k.into(), json!(v));
        }
    };
    put("token_limit", l.token_limit.map(|v| v as u64));
    put("summarize_limit", l.summarize_limit.map(|v| v as u64));
    put("prefill_budget", l.prefill_budget.map(|v| v as u64));
    put("max_new_tokens", l.max_new_tokens.map(|v| v as u64));
    put("preview_chars", l.preview_chars.map(|v| v as u64));
    put("model_ms", l.model_ms);
    put("deadline_ms", l.deadline_ms);
    m
}

/// The `guard` command: [`guard_resilient`] without the faults (they are logged at `warn`).
///
/// # Errors
/// Never, since the resilient path always has an answer; kept fallible for callers.
pub fn guard_cli(opts: GuardCliOptions) -> anyhow::Result<GuardResponse> {
    let out = guard_resilient(opts);
    for f in &out.faults {
        tracing::warn!("{f}");
    }
    Ok(out.response)
}

/// Guards one tool result and always answers: asks the daemon, and falls back to a local
/// model-less run when the daemon is unavailable, overloaded, erroring or late (the local
/// result's `reason` starts with `daemon_unavailable: <why>`). What it works around:
///
/// - a session dir that is missing (created when its parent exists), a file, or refused by the
///   daemon (`bad_session_dir`, `unsafe_save_dir`): the fallback dir
///   ([`crate::guard::session::fallback_session_dir`]);
/// - an empty tool name: `tool`;
/// - a daemon killed mid-request after it saved the output: that copy is reused, not saved
///   twice ([`crate::guard::session::find_identical`]);
/// - input that cannot be read, or a local run that fails too: the output as it is (never
///   lost), with the reason.
///
/// Each fault is one line of [`GuardOutcome::faults`].
pub fn guard_resilient(opts: GuardCliOptions) -> GuardOutcome {
    use crate::guard::session;
    let cfg = &opts.config;
    let mut faults = Vec::new();
    let tool = if opts.tool.trim().is_empty() {
        faults.push("the tool name is empty; using `tool`".to_string());
        "tool".to_string()
    } else {
        opts.tool.clone()
    };
    let wanted = opts
        .session_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    let (mut session_dir, fault) = session::prepare_session_dir(&wanted);
    faults.extend(fault);

    // The content: bytes in hand, or a file the daemon reads itself.
    let mut content: Option<Vec<u8>> = None;
    let mut content_path: Option<PathBuf> = None;
    match &opts.input {
        Input::Stdin => {
            let mut b = Vec::new();
            if let Err(e) = std::io::stdin().read_to_end(&mut b) {
                faults.push(format!("reading stdin: {e}; guarding what was read"));
            }
            content = Some(b);
        }
        Input::Bytes(b) => content = Some(b.clone()),
        Input::File(p) => match absolute(p) {
            Ok(p) => content_path = Some(p),
            Err(e) => faults.push(format!("resolving {}: {e}", p.display())),
        },
    }

    let mut req = json!({
        "tool": tool,
        "keep_binary_inline": opts.keep_binary_inline,
    });
    req.as_object_mut()
        .expect("an object")
        .extend(explicit_limits(&cfg.explicit));
    if let Some(a) = &opts.args {
        req["args"] = a.clone();
    }
    if let Some(i) = &opts.intent {
        req["intent"] = json!(i);
    }
    if !opts.frame.is_empty() {
        req["frame"] = json!(opts.frame);
    }
    match (&content, &content_path) {
        (Some(b), _) => put_content(&mut req, b),
        (None, Some(p)) => req["content_path"] = json!(p),
        (None, None) => put_content(&mut req, b""),
    }

    let sent_at = std::time::SystemTime::now();
    let mut why = String::new();
    // The daemon answered with an error (a request too large for it): it is up, not unavailable.
    let mut refused = false;
    for attempt in 0..2 {
        req["session_dir"] = json!(session_dir);
        let daemon = (|| -> anyhow::Result<GuardResponse> {
            let mut c = connect_or_spawn(cfg, !opts.no_spawn)?;
            // The deadline counts from the request, not from a daemon start the client waited for.
            let wait = Duration::from_millis(cfg.deadline_ms + CLIENT_SLACK_MS);
            c.set_timeout(Some(wait.max(Duration::from_secs(1))))?;
            Ok(c.guard(&req)?)
        })();
        match daemon {
            Ok(r) => return finish(r, faults, session_dir, opts.cwd.as_deref()),
            Err(e) => {
                let request_error = e.downcast_ref::<ClientError>().is_some_and(|c| {
                    matches!(c, ClientError::Remote { kind, .. }
                        if kind == "bad_session_dir" || kind == "unsafe_save_dir")
                });
                if request_error && attempt == 0 {
                    faults.push(format!(
                        "the daemon refused the request: {e:#}; retrying with the fallback dir"
                    ));
                    session_dir = match session::fallback_session_dir() {
                        Ok(d) => d,
                        Err(_) => break,
                    };
                    continue;
                }
                why = format!("{e:#}");
                refused = e
                    .downcast_ref::<ClientError>()
                    .is_some_and(|c| matches!(c, ClientError::Remote { .. }));
                break;
            }
        }
    }
    tracing::info!("guarding locally: {why}");
    let bytes = match (content, &content_path) {
        (Some(b), _) => b,
        (None, Some(p)) => match std::fs::read(p) {
            Ok(b) => b,
            Err(e) => {
                faults.push(format!("reading {}: {e}", p.display()));
                Vec::new()
            }
        },
        (None, None) => Vec::new(),
    };
    let counter = fallback_counter(cfg);
    let mut last_error = None;
    for attempt in 0..2 {
        let local = GuardRequest {
            source: session::find_identical(&session_dir, &bytes, sent_at),
            content: bytes.clone(),
            tool: tool.clone(),
            args: opts.args.clone(),
            intent: opts.intent.clone(),
            session_dir: session_dir.clone(),
            limits: cfg.limits,
            keep_binary_inline: opts.keep_binary_inline,
            deadline: None,
            frame: opts.frame.clone(),
        };
        match crate::guard::guard(local, counter.as_deref(), None) {
            Ok(mut r) => {
                // Said where faults are read (stderr, hook.log), not only in the response.
                faults.push(if refused {
                    format!("guarded in process: the daemon refused the request ({why})")
                } else {
                    format!("guarded in process: the daemon is unavailable ({why})")
                });
                let prefix = format!("daemon_unavailable: {why}");
                r.reason = Some(match r.reason.take() {
                    Some(inner) => format!("{prefix}; {inner}"),
                    None => prefix,
                });
                return finish(r, faults, session_dir, opts.cwd.as_deref());
            }
            Err(e) if attempt == 0 && e.is_request_error() => {
                faults.push(format!("{e}; retrying with the fallback dir"));
                match session::fallback_session_dir() {
                    Ok(d) => session_dir = d,
                    Err(_) => {
                        last_error = Some(e.to_string());
                        break;
                    }
                }
            }
            Err(e) => {
                last_error = Some(e.to_string());
                break;
            }
        }
    }
    // Nothing could guard it: the output as it is, never lost.
    let reason = format!(
        "unguarded: {}",
        last_error.unwrap_or_else(|| "no guard could run".into())
    );
    faults.push(reason.clone());
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let mut r = crate::guard::response::passthrough(text);
    r.reason = Some(reason);
    GuardOutcome {
        response: r,
        faults,
        session_dir,
    }
}

fn finish(
    mut r: GuardResponse,
    faults: Vec<String>,
    session_dir: PathBuf,
    cwd: Option<&Path>,
) -> GuardOutcome {
    if let Some(cwd) = cwd {
        r.text = crate::guard::session::relocate(&r.text, &r.saved, &session_dir, cwd);
    }
    GuardOutcome {
        response: r,
        faults,
        session_dir,
    }
}

/// `status` through the daemon.
///
/// # Errors
/// No daemon, it errs, or it does not answer within [`PROBE_TIMEOUT`] (stopped or hung).
pub fn status_cli(config: &Config) -> anyhow::Result<Value> {
    let mut c = Client::connect(&config.socket).map_err(|e| {
        anyhow::Error::new(e).context(format!("no daemon on {}", config.socket.display()))
    })?;
    // A stopped or hung daemon is named as one within [`PROBE_TIMEOUT`], not after the 30 s
    // read timeout with the socket's bare `EAGAIN`.
    c.set_timeout(Some(PROBE_TIMEOUT))?;
    c.status().map_err(|e| {
        anyhow::anyhow!(
            "the daemon on {} accepts connections but did not answer `status` within {} s ({e}); is it stopped or hung?",
            config.socket.display(),
            PROBE_TIMEOUT.as_secs()
        )
    })
}

/// `count` through the daemon (the model is already loaded there).
///
/// # Errors
/// No daemon, or it errs.
pub fn count_cli(config: &Config, content: &[u8]) -> anyhow::Result<Value> {
    let mut c = Client::connect(&config.socket).map_err(|e| {
        anyhow::Error::new(e).context(format!("no daemon on {}", config.socket.display()))
    })?;
    Ok(c.count(content)?)
}

/// Asks the daemon to stop (graceful).
///
/// # Errors
/// No daemon, or it errs.
pub fn shutdown_cli(config: &Config) -> anyhow::Result<Value> {
    let mut c = Client::connect(&config.socket).map_err(|e| {
        anyhow::Error::new(e).context(format!("no daemon on {}", config.socket.display()))
    })?;
    Ok(c.shutdown()?)
}

/// Options of [`ask_cli`].
#[derive(Debug, Clone)]
pub struct AskCliOptions {
    /// Effective configuration (socket, model for the fallback tokenizer, limits).
    pub config: Config,
    /// The saved output (absolute, or relative to the current dir).
    pub file: PathBuf,
    /// The new question.
    pub question: String,
    /// When given, the file must be inside `<session_dir>/long_responses/`.
    pub session_dir: Option<PathBuf>,
    /// Do not start a daemon when none answers.
    pub no_spawn: bool,
}

/// The `ask` command: resolves the saved output here first (so a refused path gets its error
/// at once, daemon or not), asks the daemon, and falls back to the summary step without the
/// model when the daemon is unavailable; the local result's `reason` starts with
/// `daemon_unavailable: <why>`.
///
/// # Errors
/// The path is not a saved output or cannot be read ([`crate::guard::ask::AskError`]), or the
/// daemon refuses the request.
pub fn ask_cli(opts: AskCliOptions) -> anyhow::Result<GuardResponse> {
    use crate::guard::ask::{ask, resolve_saved, AskRequest};
    let cfg = &opts.config;
    let session_dir = opts.session_dir.as_deref().map(absolute).transpose()?;
    let output = resolve_saved(
        &absolute(&opts.file)?,
        session_dir.as_deref(),
        cfg.max_request_bytes as u64,
    )?;
    // The answer points at the saved file relative to its session dir; from the caller's
    // directory, as `guard` does, so the pointer opens where the agent runs.
    let saved = vec![output.saved.clone()];
    let saved_dir = output.session_dir.clone();
    let cwd = std::env::current_dir().ok();
    let relocate = |mut r: GuardResponse| {
        if let Some(cwd) = &cwd {
            r.text = crate::guard::session::relocate(&r.text, &saved, &saved_dir, cwd);
        }
        r
    };
    let mut req = Value::Object(explicit_limits(&opts.config.explicit));
    req["path"] = json!(output.path);
    req["question"] = json!(opts.question);
    if let Some(d) = &session_dir {
        req["session_dir"] = json!(d);
    }
    let daemon = (|| -> anyhow::Result<GuardResponse> {
        let mut c = connect_or_spawn(cfg, !opts.no_spawn)?;
        let wait = Duration::from_millis(cfg.deadline_ms + CLIENT_SLACK_MS);
        c.set_timeout(Some(wait.max(Duration::from_secs(1))))?;
        Ok(c.ask(&req)?)
    })();
    let why = match daemon {
        Ok(r) => return Ok(relocate(r)),
        Err(e) => {
            if let Some(ClientError::Remote { kind, .. }) = e.downcast_ref::<ClientError>() {
                if matches!(kind.as_str(), "forbidden" | "bad_request" | "too_large") {
                    return Err(e);
                }
            }
            format!("{e:#}")
        }
    };
    tracing::info!("asking locally: {why}");
    let counter = fallback_counter(cfg);
    let mut r = ask(
        AskRequest {
            output,
            question: opts.question,
            limits: cfg.limits,
            deadline: None,
        },
        counter.as_deref(),
        None,
    );
    let prefix = format!("daemon_unavailable: {why}");
    r.reason = Some(match r.reason.take() {
        Some(inner) => format!("{prefix}; {inner}"),
        None => prefix,
    });
    Ok(relocate(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_sent_before_the_request_is_still_read() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("s.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let daemon = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(
                b"{\"ok\":false,\"error\":{\"kind\":\"forbidden\",\"message\":\"peer uid 1\"}}\n",
            )
            .unwrap();
        });
        let mut c = Client::connect(&path).unwrap();
        // The daemon has answered and closed before the request is sent: sending fails (EPIPE).
        daemon.join().unwrap();
        let e = c.writer.write_all(b"\n").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        match c.status() {
            Err(ClientError::Remote { kind, message }) => {
                assert_eq!(
                    (kind.as_str(), message.as_str()),
                    ("forbidden", "peer uid 1")
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_daemon_that_accepts_but_never_answers_is_not_connected_to() {
        // Stopped with SIGSTOP: the kernel still queues connections, nobody answers.
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let cfg = Config::load(crate::config::ConfigLayer {
            socket: Some(path),
            ..Default::default()
        })
        .unwrap();
        match connect_or_spawn(&cfg, false) {
            Err(e) => assert!(
                e.to_string().contains("did not answer a status probe"),
                "{e}"
            ),
            Ok(_) => panic!("a hung daemon was connected to"),
        }
    }

    #[test]
    fn a_daemon_that_does_not_read_times_the_request_out() {
        // A daemon that accepts and never reads (stopped with SIGSTOP, hung): the request,
        // larger than the socket's buffers, cannot be sent whole. The call must give up when
        // the timeout runs out, so the caller can fall back, instead of blocking forever.
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("s.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
        let daemon = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            // Hold the connection open, unread, until the client has given up.
            let _ = hold_rx.recv();
            drop(s);
        });
        let mut c = Client::connect(&path).unwrap();
        c.set_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut req = json!({"op": "guard", "tool": "Bash"});
        put_content(&mut req, &vec![b'x'; 8 << 20]);
        match c.call(&req) {
            Err(ClientError::Io(e)) => assert!(
                matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "{e:?}"
            ),
            other => panic!("{other:?}"),
        }
        hold_tx.send(()).unwrap();
        daemon.join().unwrap();
    }
}
