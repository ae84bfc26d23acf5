//! The remote inference backend: the same narration as the local engine, written by a server
//! that speaks the OpenAI-compatible chat API (`/v1/chat/completions`, `/v1/models`): vLLM,
//! llama.cpp's llama-server, TGI, SGLang, Ollama.
//!
//! Only the narration travels. Counting, saving, reduction and grounding stay on this machine:
//! the request carries the same system and user messages the local model gets (the reduced view
//! of the output, at most `prefill_budget` local tokens), and the reply goes through the same
//! grounding. The local tokenizer sizes the input; see [`openai`] for how far the remote
//! model's tokenizer may differ.
//!
//! - [`openai`]: the HTTP client ([`OpenAiBackend`], shared by every request in flight) and the
//!   per-thread [`OpenAiNarrator`] that implements [`crate::backend::Narrator`].
//! - [`sse`]: the chat-completions stream (server-sent events) and reply parsing.
//! - [`constraint`]: an [`crate::backend::OutputConstraint`] as the server's structured-output
//!   option (`response_format` with a JSON schema), and the reply back in the engine's shape.
//! - [`stats`]: requests by outcome, in flight, latencies, for `status`.
//!
//! The daemon runs `backend_parallel` narrators on as many threads behind one bounded queue
//! (`daemon::worker::ModelWorker::spawn_pool`), so remote summaries run concurrently and never
//! wait for the local model thread.

pub mod constraint;
pub mod openai;
pub mod sse;
pub mod stats;

pub use openai::{OpenAiBackend, OpenAiNarrator};

use std::fmt;
use std::str::FromStr;

/// Default `backend_parallel`: remote summaries in flight at once (the default). More
/// wait in the backend's queue (`queue_capacity`).
pub const DEFAULT_PARALLEL: usize = 8;
/// Default `backend_connect_ms`: the TCP (and TLS) connect timeout (ms), always capped by the
/// time the request has left. A server on the local network connects in well under a second.
pub const DEFAULT_CONNECT_MS: u64 = 2_000;
/// Connect attempts per request: a refused or failed connect (the server restarting) is tried
/// again this many times in all, while time is left; nothing else is retried.
pub const CONNECT_ATTEMPTS: usize = 3;
/// Pause before the second and third connect attempt (ms).
pub const CONNECT_BACKOFF_MS: [u64; 2] = [100, 300];

/// Which backend writes the narration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// The local engine (one model thread).
    #[default]
    Local,
    /// A server speaking the OpenAI-compatible chat API (`backend_url`).
    Openai,
}

impl FromStr for BackendKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "local" => Ok(BackendKind::Local),
            "openai" => Ok(BackendKind::Openai),
            o => Err(format!("unknown backend {o:?} (local or openai)")),
        }
    }
}

/// What answers when the remote backend fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Fallback {
    /// Nobody: the structural digest, with `reason` naming the backend error.
    #[default]
    None,
    /// The local model (loaded at start, as with `backend = local`).
    Local,
}

impl FromStr for Fallback {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(Fallback::None),
            "local" => Ok(Fallback::Local),
            o => Err(format!("unknown backend fallback {o:?} (none or local)")),
        }
    }
}

/// An API key: sent as `Authorization: Bearer <key>`, never printed (its `Debug` is redacted).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key; `None` for an empty or blank one.
    pub fn new(key: &str) -> Option<Self> {
        let k = key.trim();
        (!k.is_empty()).then(|| ApiKey(k.to_string()))
    }

    /// The `Authorization` header's value.
    pub(crate) fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Everything the OpenAI-compatible backend needs, from [`crate::config::Config`].
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteSettings {
    /// Base URL of the API, e.g. `http://gpu-box:8000/v1` (a URL without a path gets `/v1`).
    pub url: String,
    /// Model name; `None` = the first model the server lists at `/models`.
    pub model: Option<String>,
    /// Requests in flight at once.
    pub parallel: usize,
    /// Connect timeout (ms), capped by the request's time left.
    pub connect_ms: u64,
    /// `TOOLSUM_BACKEND_API_KEY`.
    pub api_key: Option<ApiKey>,
}

/// Normalizes a base URL: trailing `/` removed; a URL with no path gets `/v1` (the OpenAI
/// convention), one with a path is kept as it is.
///
/// # Errors
/// Not an `http://` or `https://` URL with a host.
pub fn normalize_base_url(url: &str) -> Result<String, String> {
    let u = url.trim().trim_end_matches('/');
    let rest = u
        .strip_prefix("http://")
        .or_else(|| u.strip_prefix("https://"))
        .ok_or_else(|| format!("backend URL {url:?} is not an http:// or https:// URL"))?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if host.is_empty() {
        return Err(format!("backend URL {url:?} has no host"));
    }
    Ok(if path.is_empty() {
        format!("{u}/v1")
    } else {
        u.to_string()
    })
}

/// A failed remote call. [`BackendError::kind`] is the outcome key in `status`
/// (`remote_requests`).
#[derive(Debug, Clone, thiserror::Error)]
pub enum BackendError {
    /// No connection could be made (refused, unreachable, DNS), after [`CONNECT_ATTEMPTS`].
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The request's time ran out (slow server, or a stream that said nothing more).
    #[error("timed out: {0}")]
    Timeout(String),
    /// The server answered an HTTP error status.
    #[error("HTTP {code}: {message}")]
    Status {
        /// HTTP status code.
        code: u16,
        /// The server's `error.message`, or the start of its body.
        message: String,
    },
    /// The reply was not what the API specifies (bad JSON, no choices, bad stream).
    #[error("malformed reply: {0}")]
    Malformed(String),
    /// The stream went on past `max_tokens` (or past the byte cap): cut.
    #[error("endless stream: {0}")]
    Overrun(String),
    /// The connection failed while the reply was read (reset, closed early).
    #[error("connection lost: {0}")]
    Io(String),
    /// The reply broke the output constraint and nothing valid was left.
    #[error("invalid output: {0}")]
    Invalid(String),
}

impl BackendError {
    /// Outcome key: `connect`, `timeout`, `http_4xx`, `http_5xx`, `malformed`, `overrun`, `io`,
    /// `invalid_output`.
    pub fn kind(&self) -> &'static str {
        match self {
            BackendError::Connect(_) => "connect",
            BackendError::Timeout(_) => "timeout",
            BackendError::Status { code, .. } if *code < 500 => "http_4xx",
            BackendError::Status { .. } => "http_5xx",
            BackendError::Malformed(_) => "malformed",
            BackendError::Overrun(_) => "overrun",
            BackendError::Io(_) => "io",
            BackendError::Invalid(_) => "invalid_output",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_normalized() {
        assert_eq!(
            normalize_base_url("http://gpu-box:8000/v1/").unwrap(),
            "http://gpu-box:8000/v1"
        );
        assert_eq!(
            normalize_base_url("http://127.0.0.1:8080").unwrap(),
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(
            normalize_base_url("https://h/openai/v1").unwrap(),
            "https://h/openai/v1"
        );
        assert!(normalize_base_url("gpu-box:8000").is_err());
        assert!(normalize_base_url("http:///v1").is_err());
    }

    #[test]
    fn api_key_is_never_printed() {
        let k = ApiKey::new(" sk-secret ").unwrap();
        assert_eq!(k.bearer(), "Bearer sk-secret");
        assert!(!format!("{k:?}").contains("secret"));
        assert!(ApiKey::new("  ").is_none());
    }

    #[test]
    fn kinds_parse_and_errors_classify() {
        assert_eq!(
            "OpenAI".parse::<BackendKind>().unwrap(),
            BackendKind::Openai
        );
        assert!("gpu".parse::<BackendKind>().is_err());
        assert_eq!("local".parse::<Fallback>().unwrap(), Fallback::Local);
        let e = |code| BackendError::Status {
            code,
            message: String::new(),
        };
        assert_eq!(e(401).kind(), "http_4xx");
        assert_eq!(e(503).kind(), "http_5xx");
    }
}
