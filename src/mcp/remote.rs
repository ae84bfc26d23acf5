//! The proxy's calls to the daemon (`guard`, `ask`), with the in-process fallback without the
//! model when the daemon is down, as `toolsum guard` does. Blocking: the relay runs these on
//! tokio's blocking pool.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::backend::TokenCounter;
use crate::config::Config;
use crate::daemon::client::{
    connect_or_spawn, explicit_limits, fallback_counter, put_content, Client, ClientError,
    CLIENT_SLACK_MS,
};
use crate::guard::ask::{resolve_saved, AskError, AskRequest};
use crate::guard::{GuardRequest, GuardResponse};

/// After a daemon failed to start, the proxy only tries to connect (no new start) for this
/// long, so a machine without a model does not pay a start attempt on every large result (ms).
pub const RESPAWN_BACKOFF_MS: u64 = 30_000;

/// The daemon as the proxy uses it.
pub struct Remote {
    config: Config,
    spawn: bool,
    counter: OnceLock<Option<Box<dyn TokenCounter>>>,
    spawn_failed: Mutex<Option<Instant>>,
}

/// One guard call of the proxy.
#[derive(Debug, Clone)]
pub struct GuardCall {
    /// The tool result's text.
    pub content: String,
    /// The upstream tool's name.
    pub tool: String,
    /// Its arguments (without `_intent`).
    pub args: Option<Value>,
    /// The call's `_intent`.
    pub intent: Option<String>,
    /// The proxy's session dir (absolute, existing).
    pub session_dir: PathBuf,
}

impl GuardCall {
    /// What the proxy adds around the result: the session dir, which the pointer's
    /// session-relative path is made absolute with ([`crate::guard::GuardRequest::frame`]).
    fn frame(&self) -> String {
        self.session_dir.display().to_string()
    }
}

impl Remote {
    /// `config` is the effective configuration (its [`Config::explicit`] limits, those the
    /// user set, are the only ones sent with a request); `spawn` starts a daemon on first use.
    pub fn new(config: Config, spawn: bool) -> Self {
        Remote {
            config,
            spawn,
            counter: OnceLock::new(),
            spawn_failed: Mutex::new(None),
        }
    }

    /// The pass-through limit (tokens) of the proxy's own configuration.
    pub fn token_limit(&self) -> usize {
        self.config.limits.token_limit
    }

    fn counter(&self) -> Option<&dyn TokenCounter> {
        self.counter
            .get_or_init(|| fallback_counter(&self.config))
            .as_deref()
    }

    fn connect(&self) -> anyhow::Result<Client> {
        let backoff = self
            .spawn_failed
            .lock()
            .expect("spawn lock")
            .is_some_and(|t| t.elapsed() < Duration::from_millis(RESPAWN_BACKOFF_MS));
        let spawn = self.spawn && !backoff;
        let c = connect_or_spawn(&self.config, spawn);
        if c.is_err() && spawn {
            *self.spawn_failed.lock().expect("spawn lock") = Some(Instant::now());
        }
        let mut c = c?;
        let wait = Duration::from_millis(self.config.deadline_ms + CLIENT_SLACK_MS);
        c.set_timeout(Some(wait.max(Duration::from_secs(1))))?;
        Ok(c)
    }

    /// Guards `call.content` through the daemon; when the daemon is unavailable, errs or is
    /// late, in-process without the model (`reason` starts with `daemon_unavailable:`).
    ///
    /// # Errors
    /// Only when the request itself is unusable (bad or unsafe session dir).
    pub fn guard(&self, call: GuardCall) -> anyhow::Result<GuardResponse> {
        let mut req = Value::Object(explicit_limits(&self.config.explicit));
        req["tool"] = json!(call.tool);
        req["session_dir"] = json!(call.session_dir);
        if let Some(a) = &call.args {
            req["args"] = a.clone();
        }
        if let Some(i) = &call.intent {
            req["intent"] = json!(i);
        }
        req["frame"] = json!(call.frame());
        put_content(&mut req, call.content.as_bytes());
        let why = match self.connect().and_then(|mut c| Ok(c.guard(&req)?)) {
            Ok(r) => return Ok(r),
            Err(e) => {
                if e.downcast_ref::<ClientError>()
                    .is_some_and(ClientError::is_request_error)
                {
                    return Err(e);
                }
                format!("{e:#}")
            }
        };
        tracing::info!("guarding locally: {why}");
        let frame = call.frame();
        let local = GuardRequest {
            frame,
            content: call.content.into_bytes(),
            tool: call.tool,
            args: call.args,
            intent: call.intent,
            session_dir: call.session_dir,
            limits: self.config.limits,
            keep_binary_inline: false,
            deadline: None,
            source: None,
        };
        let mut r = crate::guard::guard(local, self.counter(), None)?;
        r.reason = Some(unavailable(&why, r.reason.take()));
        Ok(r)
    }

    /// Asks a saved output of `session_dir` a new question through the daemon, in-process
    /// without the model when it is unavailable.
    ///
    /// # Errors
    /// The file is not a saved output of `session_dir`, or cannot be read; the daemon refuses.
    pub fn ask(
        &self,
        file: &Path,
        question: &str,
        session_dir: &Path,
    ) -> anyhow::Result<GuardResponse> {
        let output = resolve_saved(
            file,
            Some(session_dir),
            self.config.max_request_bytes as u64,
        )
        .map_err(|e: AskError| anyhow::anyhow!(e))?;
        let mut req = Value::Object(explicit_limits(&self.config.explicit));
        req["path"] = json!(output.path);
        req["question"] = json!(question);
        req["session_dir"] = json!(session_dir);
        let why = match self.connect().and_then(|mut c| Ok(c.ask(&req)?)) {
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
        let req = AskRequest {
            output,
            question: question.to_string(),
            limits: self.config.limits,
            deadline: None,
        };
        let mut r = crate::guard::ask::ask(req, self.counter(), None);
        r.reason = Some(unavailable(&why, r.reason.take()));
        Ok(r)
    }
}

fn unavailable(why: &str, inner: Option<String>) -> String {
    let prefix = format!("daemon_unavailable: {why}");
    match inner {
        Some(i) => format!("{prefix}; {i}"),
        None => prefix,
    }
}
