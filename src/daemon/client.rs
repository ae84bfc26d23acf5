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
}

impl Client {
    /// Connects to the daemon socket.
    ///
    /// # Errors
    /// The socket does not exist or nobody listens on it.
    pub fn connect(socket: &Path) -> std::io::Result<Client> {
        let s = UnixStream::connect(socket)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Client {
            reader: BufReader::new(s.try_clone()?),
            writer: s,
        })
    }

    /// Sets how long a call waits for its answer (`None` = forever).
    ///
    /// # Errors
    /// As `set_read_timeout`.
    pub fn set_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        self.writer.set_read_timeout(t)
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
        let sent = self
            .writer
            .write_all(&line)
            .and_then(|()| self.writer.flush());
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
}

/// Options of [`guard_cli`].
#[derive(Debug, Clone)]
pub struct GuardCliOptions {
    /// Effective configuration (socket, model for the fallback tokenizer, default limits).
    pub config: Config,
    /// Tool name.
    pub tool: String,
    /// Tool arguments (JSON).
    pub args: Option<Value>,
    /// What the caller wants from the output.
    pub intent: Option<String>,
    /// Session dir; `None` = the current directory. Made absolute against the current dir.
    pub session_dir: Option<PathBuf>,
    /// The tool output.
    pub input: Input,
    /// Do not start a daemon when none answers.
    pub no_spawn: bool,
    /// Keep base64 files inline.
    pub keep_binary_inline: bool,
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

/// Connects to the daemon, starting one (`toolsum serve --socket S [--model M]`, detached) when
/// none answers and `spawn` is true.
///
/// # Errors
/// No daemon answers and none could be started.
pub fn connect_or_spawn(config: &Config, spawn: bool) -> anyhow::Result<Client> {
    match Client::connect(&config.socket) {
        Ok(c) => return Ok(c),
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

/// The `guard` command: asks the daemon, and falls back to a local model-less run when the
/// daemon is unavailable, overloaded, erroring or late. The local result's `reason` starts
/// with `daemon_unavailable: <why>`.
///
/// # Errors
/// The input cannot be read, the session dir is unusable (bad/unsafe), or both the daemon and
/// the local run fail.
pub fn guard_cli(opts: GuardCliOptions) -> anyhow::Result<GuardResponse> {
    let session_dir = absolute(opts.session_dir.as_deref().unwrap_or(Path::new(".")))?;
    let cfg = &opts.config;
    let mut stdin_bytes = None;
    let mut req = json!({
        "tool": opts.tool,
        "session_dir": session_dir,
        "token_limit": cfg.limits.token_limit,
        "summarize_limit": cfg.limits.summarize_limit,
        "prefill_budget": cfg.limits.prefill_budget,
        "max_new_tokens": cfg.limits.max_new_tokens,
        "preview_chars": cfg.limits.preview_chars,
        "model_ms": cfg.limits.model_ms,
        "deadline_ms": cfg.deadline_ms,
        "keep_binary_inline": opts.keep_binary_inline,
    });
    if let Some(a) = &opts.args {
        req["args"] = a.clone();
    }
    if let Some(i) = &opts.intent {
        req["intent"] = json!(i);
    }
    match &opts.input {
        Input::File(p) => req["content_path"] = json!(absolute(p)?),
        Input::Stdin => {
            let mut b = Vec::new();
            std::io::stdin().read_to_end(&mut b)?;
            put_content(&mut req, &b);
            stdin_bytes = Some(b);
        }
    }
    let daemon = (|| -> anyhow::Result<GuardResponse> {
        let mut c = connect_or_spawn(cfg, !opts.no_spawn)?;
        // The deadline counts from the request, not from a daemon start the client waited for.
        let wait = Duration::from_millis(cfg.deadline_ms + CLIENT_SLACK_MS);
        c.set_timeout(Some(wait.max(Duration::from_secs(1))))?;
        Ok(c.guard(&req)?)
    })();
    let why = match daemon {
        Ok(r) => return Ok(r),
        Err(e) => {
            if let Some(ce) = e.downcast_ref::<ClientError>() {
                if ce.is_request_error() {
                    return Err(e);
                }
            }
            format!("{e:#}")
        }
    };
    tracing::info!("guarding locally: {why}");
    let content = match (stdin_bytes, &opts.input) {
        (Some(b), _) => b,
        (None, Input::File(p)) => std::fs::read(p)?,
        (None, Input::Stdin) => Vec::new(),
    };
    let local = GuardRequest {
        content,
        tool: opts.tool.clone(),
        args: opts.args.clone(),
        intent: opts.intent.clone(),
        session_dir,
        limits: cfg.limits,
        keep_binary_inline: opts.keep_binary_inline,
        deadline: None,
    };
    let counter = fallback_counter(cfg);
    let mut r = crate::guard::guard(local, counter.as_deref(), None)?;
    let prefix = format!("daemon_unavailable: {why}");
    r.reason = Some(match r.reason.take() {
        Some(inner) => format!("{prefix}; {inner}"),
        None => prefix,
    });
    Ok(r)
}

/// `status` through the daemon.
///
/// # Errors
/// No daemon, or it errs.
pub fn status_cli(config: &Config) -> anyhow::Result<Value> {
    let mut c = Client::connect(&config.socket).map_err(|e| {
        anyhow::Error::new(e).context(format!("no daemon on {}", config.socket.display()))
    })?;
    Ok(c.status()?)
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

/// The limits a caller set itself (flags of its command line), as request fields; the daemon
/// fills in the rest from its own configuration.
pub fn explicit_limits(layer: &crate::config::ConfigLayer) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    let mut put = |k: &str, v: Option<u64>| {
        if let Some(v) = v {
            m.insert(k.into(), json!(v));
        }
    };
    put("token_limit", layer.token_limit.map(|v| v as u64));
    put("summarize_limit", layer.summarize_limit.map(|v| v as u64));
    put("prefill_budget", layer.prefill_budget.map(|v| v as u64));
    put("max_new_tokens", layer.max_new_tokens.map(|v| v as u64));
    put("preview_chars", layer.preview_chars.map(|v| v as u64));
    put("model_ms", layer.model_ms);
    put("deadline_ms", layer.deadline_ms);
    m
}

/// Options of [`ask_cli`].
#[derive(Debug, Clone)]
pub struct AskCliOptions {
    /// Effective configuration (socket, model for the fallback tokenizer, limits).
    pub config: Config,
    /// The settings the caller gave on its command line (sent as request fields).
    pub explicit: crate::config::ConfigLayer,
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
    let mut req = Value::Object(explicit_limits(&opts.explicit));
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
        Ok(r) => return Ok(r),
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
    Ok(r)
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
}
