//! Configuration of the daemon and the client: flags, then `TOOLSUM_*` environment variables,
//! then an optional TOML file, then built-in defaults (first one that sets a key wins).
//!
//! The file is `<config dir>/toolsum/config.toml` (`~/.config/toolsum/config.toml` on Linux), or
//! the path in `TOOLSUM_CONFIG`. Every key is optional; unknown keys are an error so typos show.
//!
//! | key | env | default | meaning |
//! |---|---|---|---|
//! | `socket` | `TOOLSUM_SOCKET` | `$XDG_RUNTIME_DIR/toolsum/toolsum.sock`, else `<tmp>/toolsum-<uid>/toolsum.sock` | daemon socket |
//! | `model` | `TOOLSUM_MODEL` | default tier | model spec ([`crate::models::resolve`]) |
//! | `threads` | `TOOLSUM_THREADS` | cores | compute threads |
//! | `device` | `TOOLSUM_DEVICE` | `cpu` | `cpu`, `cuda[:N]`, `metal` |
//! | `draft_tokens` | `TOOLSUM_DRAFT_TOKENS` | 2 | prompt-lookup drafts per decode step (0 = off) |
//! | `kv_decode` | `TOOLSUM_KV_DECODE` | `q8` | KV cache decode steps read: `q8` (an 8-bit copy), or `f16` |
//! | `local_parallel` | `TOOLSUM_LOCAL_PARALLEL` | 4 | local summaries in flight at once, decoding together (1 = one at a time; at most 15) |
//! | `token_limit` | `TOOLSUM_TOKEN_LIMIT` | 15,000 | pass-through limit (tokens) |
//! | `summarize_limit` | `TOOLSUM_SUMMARIZE_LIMIT` | 100,000 | above it, the bounded path: `too_large`, the reduction only (tokens) |
//! | `prefill_budget` | `TOOLSUM_PREFILL_BUDGET` | 1,500 | tool tokens in the prompt |
//! | `max_new_tokens` | `TOOLSUM_MAX_NEW_TOKENS` | 256 | generated tokens |
//! | `preview_chars` | `TOOLSUM_PREVIEW_CHARS` | 2,000 | head and tail chars of a preview |
//! | `model_ms` | `TOOLSUM_MODEL_MS` | 4,500 | time the model may spend on one summary (ms) |
//! | `deadline_ms` | `TOOLSUM_DEADLINE_MS` | 60,000 | per-request deadline (ms) |
//! | `queue_capacity` | `TOOLSUM_QUEUE_CAPACITY` | 16 | model jobs waiting before `overloaded` |
//! | `max_connections` | `TOOLSUM_MAX_CONNECTIONS` | 64 | concurrent client connections |
//! | `read_timeout_ms` | `TOOLSUM_READ_TIMEOUT_MS` | 30,000 | time to finish a started request line (ms) |
//! | `idle_timeout_ms` | `TOOLSUM_IDLE_TIMEOUT_MS` | 600,000 | idle connection lifetime (ms) |
//! | `max_request_bytes` | `TOOLSUM_MAX_REQUEST_BYTES` | 64 MiB | longest request line / content file (bytes) |
//! | `grace_ms` | `TOOLSUM_GRACE_MS` | 10,000 | in-flight work allowed after SIGTERM (ms) |
//! | `spawn_timeout_ms` | `TOOLSUM_SPAWN_TIMEOUT_MS` | 60,000 | client wait for a daemon it started (ms) |
//! | `first_byte_timeout_ms` | `TOOLSUM_FIRST_BYTE_TIMEOUT_MS` | 5,000 | time a new connection has to send its first byte (ms) |
//! | `backend` | `TOOLSUM_BACKEND` | `local` | who narrates: `local` (the engine) or `openai` (a server) |
//! | `backend_url` | `TOOLSUM_BACKEND_URL` | none | the server's API base, e.g. `http://gpu-box:8000/v1` |
//! | `backend_model` | `TOOLSUM_BACKEND_MODEL` | the server's first model | model name sent to the server |
//! | `backend_parallel` | `TOOLSUM_BACKEND_PARALLEL` | 8 | remote summaries in flight at once |
//! | `backend_fallback` | `TOOLSUM_BACKEND_FALLBACK` | `none` | `local`: the local model answers when the server fails |
//! | `backend_connect_ms` | `TOOLSUM_BACKEND_CONNECT_MS` | 2,000 | connect timeout (ms), within the request's time |
//! | (env only) | `TOOLSUM_BACKEND_API_KEY` | none | sent as `Authorization: Bearer`; never logged |

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::guard::Limits;

/// Default per-request deadline (ms): the 60 s.
pub const DEFAULT_DEADLINE_MS: u64 = 60_000;
/// Default model-queue capacity: jobs that may wait for the model thread before new ones are
/// answered `overloaded`. 16 jobs of up to a few seconds each keep the worst wait near the
/// default deadline on a laptop CPU.
pub const DEFAULT_QUEUE_CAPACITY: usize = 16;
/// Default cap on concurrent connections (each costs a task and at most one request buffer).
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;
/// Default time a client has to finish a request line it started (ms).
pub const DEFAULT_READ_TIMEOUT_MS: u64 = 30_000;
/// Default lifetime of a connection with no request in progress (ms).
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 600_000;
/// Default longest request line, and largest `content_path` file (64 MiB, from the issue).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;
/// Default grace period for in-flight work after SIGTERM/SIGINT/`shutdown` (ms).
pub const DEFAULT_GRACE_MS: u64 = 10_000;
/// Default time the client waits for a daemon it spawned to answer `status` (ms): loading the
/// largest tier on a slow laptop takes tens of seconds.
pub const DEFAULT_SPAWN_TIMEOUT_MS: u64 = 60_000;
/// Default time a new connection has to send its first byte (ms). The client reads its input
/// before it connects and writes the request at once, so a connection that says nothing for
/// this long is idle, and it should not hold a slot for `idle_timeout_ms`.
pub const DEFAULT_FIRST_BYTE_TIMEOUT_MS: u64 = 5_000;

/// Errors of [`Config::load`].
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// An environment variable could not be parsed.
    #[error(
        "environment variable {var}={value:?}: {why}; expected {}",
        expected_of(var)
    )]
    BadEnv {
        /// Variable name.
        var: &'static str,
        /// Its value.
        value: String,
        /// Parse error.
        why: String,
    },
    /// The config file could not be read.
    #[error("reading config file {path:?}: {source}")]
    Read {
        /// File path.
        path: PathBuf,
        /// OS error.
        source: std::io::Error,
    },
    /// The config file is not valid TOML. The message is the parser's, on one line, with the
    /// line and column.
    #[error("config file {path:?}: not valid TOML: {message}")]
    Parse {
        /// File path.
        path: PathBuf,
        /// The parser's message, e.g. `line 1, column 12: invalid string`.
        message: String,
    },
    /// The config file has a key that is not one of [`KEYS`].
    #[error("config file {path:?}: unknown key `{key}`{hint}; accepted keys: {accepted}")]
    UnknownKey {
        /// File path.
        path: PathBuf,
        /// The key as written.
        key: String,
        /// ` (did you mean `token_limit`?)` when a known key is close, else empty.
        hint: String,
        /// The accepted keys, comma-separated.
        accepted: String,
    },
    /// A known key of the config file has a value of the wrong type or out of range.
    #[error("config file {path:?}: key `{key}` = {value}: {why}; expected {expected}")]
    BadValue {
        /// File path.
        path: PathBuf,
        /// The key.
        key: String,
        /// The value as TOML.
        value: String,
        /// The parser's complaint.
        why: String,
        /// What the key accepts ([`KEYS`]).
        expected: &'static str,
    },
}

/// Every configuration key: `(file key, environment variable, what it accepts)`. The source of
/// the messages that name a bad key or value; the same keys as [`ConfigLayer`].
pub const KEYS: &[(&str, &str, &str)] = &[
    ("socket", "TOOLSUM_SOCKET", "a socket path"),
    (
        "model",
        "TOOLSUM_MODEL",
        "a .gguf path, a tier (tiny, small, large) or org/repo:file.gguf",
    ),
    ("threads", "TOOLSUM_THREADS", "a whole number of threads"),
    (
        "local_parallel",
        "TOOLSUM_LOCAL_PARALLEL",
        "a whole number of summaries",
    ),
    ("device", "TOOLSUM_DEVICE", "cpu, cuda[:N] or metal"),
    (
        "draft_tokens",
        "TOOLSUM_DRAFT_TOKENS",
        "a whole number of tokens (0 = off)",
    ),
    ("kv_decode", "TOOLSUM_KV_DECODE", "q8 or f16"),
    (
        "token_limit",
        "TOOLSUM_TOKEN_LIMIT",
        "a whole number of tokens",
    ),
    (
        "summarize_limit",
        "TOOLSUM_SUMMARIZE_LIMIT",
        "a whole number of tokens",
    ),
    (
        "prefill_budget",
        "TOOLSUM_PREFILL_BUDGET",
        "a whole number of tokens",
    ),
    (
        "max_new_tokens",
        "TOOLSUM_MAX_NEW_TOKENS",
        "a whole number of tokens",
    ),
    (
        "preview_chars",
        "TOOLSUM_PREVIEW_CHARS",
        "a whole number of characters",
    ),
    (
        "model_ms",
        "TOOLSUM_MODEL_MS",
        "a whole number of milliseconds",
    ),
    (
        "deadline_ms",
        "TOOLSUM_DEADLINE_MS",
        "a whole number of milliseconds",
    ),
    (
        "queue_capacity",
        "TOOLSUM_QUEUE_CAPACITY",
        "a whole number of jobs",
    ),
    (
        "max_connections",
        "TOOLSUM_MAX_CONNECTIONS",
        "a whole number of connections",
    ),
    (
        "read_timeout_ms",
        "TOOLSUM_READ_TIMEOUT_MS",
        "a whole number of milliseconds",
    ),
    (
        "idle_timeout_ms",
        "TOOLSUM_IDLE_TIMEOUT_MS",
        "a whole number of milliseconds",
    ),
    (
        "max_request_bytes",
        "TOOLSUM_MAX_REQUEST_BYTES",
        "a whole number of bytes",
    ),
    (
        "grace_ms",
        "TOOLSUM_GRACE_MS",
        "a whole number of milliseconds",
    ),
    (
        "spawn_timeout_ms",
        "TOOLSUM_SPAWN_TIMEOUT_MS",
        "a whole number of milliseconds",
    ),
    (
        "first_byte_timeout_ms",
        "TOOLSUM_FIRST_BYTE_TIMEOUT_MS",
        "a whole number of milliseconds",
    ),
    ("backend", "TOOLSUM_BACKEND", "`local` or `openai`"),
    (
        "backend_url",
        "TOOLSUM_BACKEND_URL",
        "an http:// or https:// URL such as `http://gpu-box:8000/v1`",
    ),
    ("backend_model", "TOOLSUM_BACKEND_MODEL", "a model name"),
    (
        "backend_parallel",
        "TOOLSUM_BACKEND_PARALLEL",
        "a whole number of requests",
    ),
    (
        "backend_fallback",
        "TOOLSUM_BACKEND_FALLBACK",
        "`none` or `local`",
    ),
    (
        "backend_connect_ms",
        "TOOLSUM_BACKEND_CONNECT_MS",
        "a whole number of milliseconds",
    ),
];

/// What the key (or variable) `name` accepts, from [`KEYS`].
fn expected_of(name: &str) -> &'static str {
    KEYS.iter()
        .find(|(k, v, _)| *k == name || *v == name)
        .map_or("a valid value", |(_, _, e)| e)
}

/// `TOOLSUM_*` variables read outside [`KEYS`]: the config file's path, the backend's key,
/// logging and debugging, model fetching, the engine's kernels, and the test and bench
/// scripts' settings.
pub const OTHER_ENV: &[&str] = &[
    "TOOLSUM_CONFIG",
    "TOOLSUM_BACKEND_API_KEY",
    "TOOLSUM_LOG",
    "TOOLSUM_DEBUG_SELECT",
    "TOOLSUM_WHEELHOUSE",
    "TOOLSUM_PYTHON",
    "TOOLSUM_PYPI_SIMPLE",
    "TOOLSUM_KERNELS",
    "TOOLSUM_HUGE_PAGES",
    "TOOLSUM_CUDA_DIR",
    "TOOLSUM_CUDA_COMPUTE_CAP",
    "TOOLSUM_BIN",
    "TOOLSUM_LLAMA_SERVER",
    "TOOLSUM_CORPUS",
    "TOOLSUM_DUMP",
];

/// Prefixes of `TOOLSUM_*` variables that the bench and test scripts read.
const OTHER_ENV_PREFIXES: &[&str] = &["TOOLSUM_BENCH_", "TOOLSUM_TEST_", "TOOLSUM_BIN_"];

/// A warning for each of `names` that starts with `TOOLSUM_` but is no variable toolsum
/// reads (a typo such as `TOOLSUM_TOKENLIMIT` would otherwise be ignored in silence), naming
/// the closest known one within 2 edits.
pub fn unknown_env<I: IntoIterator<Item = String>>(names: I) -> Vec<String> {
    let known = || {
        KEYS.iter()
            .map(|(_, v, _)| *v)
            .chain(OTHER_ENV.iter().copied())
    };
    let mut out: Vec<String> = names
        .into_iter()
        .filter(|n| n.starts_with("TOOLSUM_"))
        .filter(|n| {
            !known().any(|k| k == n) && !OTHER_ENV_PREFIXES.iter().any(|p| n.starts_with(p))
        })
        .map(|n| {
            let hint = known()
                .map(|k| (strsim::levenshtein(&n, k), k))
                .filter(|(d, _)| *d <= 2)
                .min()
                .map(|(_, k)| format!(" (did you mean {k}?)"))
                .unwrap_or_default();
            format!("unknown environment variable {n}{hint}; it is ignored")
        })
        .collect();
    out.sort();
    out
}

/// ` (did you mean `k`?)` for the known key closest to `key`, when one is within 2 edits.
fn did_you_mean(key: &str) -> String {
    KEYS.iter()
        .map(|(k, _, _)| (strsim::levenshtein(key, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

/// One source of settings (flags, environment or file): every key optional.
///
/// Flags map onto it with clap (`#[command(flatten)]`); the file deserializes into it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct ConfigLayer {
    /// Daemon socket path.
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// Model: a .gguf path, a tier (tiny, small, large) or org/repo:file.gguf.
    #[arg(long)]
    pub model: Option<String>,
    /// Compute threads of the model (default: cores available).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Device: cpu, `cuda[:N]` or metal.
    #[arg(long)]
    pub device: Option<String>,
    /// Local summaries in flight at once, decoding together in one pass per step (1 = one
    /// at a time on the model thread; at most 15).
    #[arg(long)]
    pub local_parallel: Option<usize>,
    /// Tokens drafted by prompt lookup per decode step (speculative decoding, same output;
    /// 0 = off).
    #[arg(long)]
    pub draft_tokens: Option<usize>,
    /// KV cache decode steps read: q8 (default: an 8-bit copy, fewer bytes per step at long
    /// contexts; needs AVX-512 VNNI, else f16) or f16 (the cache itself).
    #[arg(long)]
    pub kv_decode: Option<crate::engine::model::KvDecode>,
    /// Results at or under this many tokens pass through unchanged.
    #[arg(long)]
    pub token_limit: Option<usize>,
    /// Results above this many tokens take the bounded path: the model reads only the
    /// structural reduction (the reduction alone, kind preview, when no model runs); past
    /// 16 MiB of text (`DIGEST_MAX_BYTES`), head and tail.
    #[arg(long)]
    pub summarize_limit: Option<usize>,
    /// Tokens of tool text the model may read.
    #[arg(long)]
    pub prefill_budget: Option<usize>,
    /// Most tokens the model may write.
    #[arg(long)]
    pub max_new_tokens: Option<usize>,
    /// Characters of head and of tail in a preview.
    #[arg(long)]
    pub preview_chars: Option<usize>,
    /// Time the model may spend on one summary (ms); the input is sized to fit it.
    #[arg(long)]
    pub model_ms: Option<u64>,
    /// Per-request deadline (ms).
    #[arg(long)]
    pub deadline_ms: Option<u64>,
    /// Model jobs that may wait before new ones are answered `overloaded`.
    #[arg(long, hide = true)]
    pub queue_capacity: Option<usize>,
    /// Concurrent client connections.
    #[arg(long, hide = true)]
    pub max_connections: Option<usize>,
    /// Time to finish a started request line (ms).
    #[arg(long, hide = true)]
    pub read_timeout_ms: Option<u64>,
    /// Lifetime of an idle connection (ms).
    #[arg(long, hide = true)]
    pub idle_timeout_ms: Option<u64>,
    /// Longest request line / content file (bytes).
    #[arg(long, hide = true)]
    pub max_request_bytes: Option<usize>,
    /// In-flight work allowed after a stop signal (ms).
    #[arg(long, hide = true)]
    pub grace_ms: Option<u64>,
    /// Client wait for a daemon it started (ms).
    #[arg(long, hide = true)]
    pub spawn_timeout_ms: Option<u64>,
    /// Time a new connection has to send its first byte (ms).
    #[arg(long, hide = true)]
    pub first_byte_timeout_ms: Option<u64>,
    /// Who narrates summaries: local (the engine) or openai (an OpenAI-compatible server at
    /// --backend-url).
    #[arg(long)]
    pub backend: Option<crate::remote::BackendKind>,
    /// The OpenAI-compatible API's base URL, e.g. http://gpu-box:8000/v1.
    #[arg(long)]
    pub backend_url: Option<String>,
    /// Model name sent to the server (default: the first one it lists).
    #[arg(long)]
    pub backend_model: Option<String>,
    /// Remote summaries in flight at once.
    #[arg(long)]
    pub backend_parallel: Option<usize>,
    /// none, or local: the local model answers when the server fails.
    #[arg(long)]
    pub backend_fallback: Option<crate::remote::Fallback>,
    /// Connect timeout of the remote backend (ms), within the request's time.
    #[arg(long)]
    pub backend_connect_ms: Option<u64>,
}

fn env_parse<T: std::str::FromStr>(
    env: &dyn Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<Option<T>, ConfigError>
where
    T::Err: std::fmt::Display,
{
    match env(var) {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => v
            .trim()
            .parse::<T>()
            .map(Some)
            .map_err(|e| ConfigError::BadEnv {
                var,
                value: v.clone(),
                why: e.to_string(),
            }),
    }
}

impl ConfigLayer {
    /// Reads the `TOOLSUM_*` variables through `env` (a lookup, so tests need not touch the
    /// process environment). Empty values count as unset.
    ///
    /// # Errors
    /// [`ConfigError::BadEnv`] for a number that does not parse.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let (layer, mut errors) = Self::from_env_lenient(env);
        match errors.is_empty() {
            true => Ok(layer),
            false => Err(errors.remove(0)),
        }
    }

    /// [`ConfigLayer::from_env`] that skips each variable that does not parse and returns its
    /// error beside the layer (the guard and hook paths warn and go on without it).
    pub fn from_env_lenient(env: &dyn Fn(&str) -> Option<String>) -> (Self, Vec<ConfigError>) {
        let s = |var: &str| env(var).filter(|v| !v.trim().is_empty());
        let mut errors = Vec::new();
        macro_rules! num {
            ($var:literal) => {
                match env_parse(env, $var) {
                    Ok(v) => v,
                    Err(e) => {
                        errors.push(e);
                        None
                    }
                }
            };
        }
        let layer = Self {
            socket: s("TOOLSUM_SOCKET").map(PathBuf::from),
            model: s("TOOLSUM_MODEL"),
            threads: num!("TOOLSUM_THREADS"),
            local_parallel: num!("TOOLSUM_LOCAL_PARALLEL"),
            device: s("TOOLSUM_DEVICE"),
            draft_tokens: num!("TOOLSUM_DRAFT_TOKENS"),
            kv_decode: num!("TOOLSUM_KV_DECODE"),
            token_limit: num!("TOOLSUM_TOKEN_LIMIT"),
            summarize_limit: num!("TOOLSUM_SUMMARIZE_LIMIT"),
            prefill_budget: num!("TOOLSUM_PREFILL_BUDGET"),
            max_new_tokens: num!("TOOLSUM_MAX_NEW_TOKENS"),
            preview_chars: num!("TOOLSUM_PREVIEW_CHARS"),
            model_ms: num!("TOOLSUM_MODEL_MS"),
            deadline_ms: num!("TOOLSUM_DEADLINE_MS"),
            queue_capacity: num!("TOOLSUM_QUEUE_CAPACITY"),
            max_connections: num!("TOOLSUM_MAX_CONNECTIONS"),
            read_timeout_ms: num!("TOOLSUM_READ_TIMEOUT_MS"),
            idle_timeout_ms: num!("TOOLSUM_IDLE_TIMEOUT_MS"),
            max_request_bytes: num!("TOOLSUM_MAX_REQUEST_BYTES"),
            grace_ms: num!("TOOLSUM_GRACE_MS"),
            spawn_timeout_ms: num!("TOOLSUM_SPAWN_TIMEOUT_MS"),
            first_byte_timeout_ms: num!("TOOLSUM_FIRST_BYTE_TIMEOUT_MS"),
            backend: num!("TOOLSUM_BACKEND"),
            backend_url: s("TOOLSUM_BACKEND_URL"),
            backend_model: s("TOOLSUM_BACKEND_MODEL"),
            backend_parallel: num!("TOOLSUM_BACKEND_PARALLEL"),
            backend_fallback: num!("TOOLSUM_BACKEND_FALLBACK"),
            backend_connect_ms: num!("TOOLSUM_BACKEND_CONNECT_MS"),
        };
        (layer, errors)
    }

    /// Parses a TOML config file's text.
    ///
    /// # Errors
    /// [`ConfigError::Parse`] for bad TOML, an unknown key or a wrong type.
    pub fn from_toml(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let (layer, mut errors) = Self::from_toml_lenient(text, path);
        match errors.is_empty() {
            true => Ok(layer),
            false => Err(errors.remove(0)),
        }
    }

    /// Parses a TOML config file key by key: a key that is unknown or has a bad value is left
    /// out and its error returned beside the layer; a file that is not TOML gives an empty
    /// layer and one [`ConfigError::Parse`].
    pub fn from_toml_lenient(text: &str, path: &Path) -> (Self, Vec<ConfigError>) {
        let table: toml::Table = match text.parse() {
            Ok(t) => t,
            Err(e) => {
                let e: toml::de::Error = e;
                let at = e
                    .span()
                    .map(|s| {
                        let before = &text[..s.start.min(text.len())];
                        let line = before.matches('\n').count() + 1;
                        let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                        format!("line {line}, column {col}: ")
                    })
                    .unwrap_or_default();
                let message = format!("{at}{}", e.message().trim());
                return (
                    Self::default(),
                    vec![ConfigError::Parse {
                        path: path.to_path_buf(),
                        message,
                    }],
                );
            }
        };
        let mut layer = Self::default();
        let mut errors = Vec::new();
        for (key, value) in table {
            if !KEYS.iter().any(|(k, _, _)| *k == key) {
                errors.push(ConfigError::UnknownKey {
                    path: path.to_path_buf(),
                    hint: did_you_mean(&key),
                    key,
                    accepted: KEYS
                        .iter()
                        .map(|(k, _, _)| *k)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
                continue;
            }
            let mut one = toml::Table::new();
            one.insert(key.clone(), value.clone());
            match toml::Value::Table(one).try_into::<ConfigLayer>() {
                Ok(l) => layer = l.or(layer),
                Err(e) => errors.push(ConfigError::BadValue {
                    path: path.to_path_buf(),
                    expected: expected_of(&key),
                    key,
                    value: value.to_string(),
                    why: e.message().trim().to_string(),
                }),
            }
        }
        (layer, errors)
    }

    /// Fills every unset key of `self` from `lower`.
    pub fn or(self, lower: ConfigLayer) -> ConfigLayer {
        ConfigLayer {
            socket: self.socket.or(lower.socket),
            model: self.model.or(lower.model),
            threads: self.threads.or(lower.threads),
            local_parallel: self.local_parallel.or(lower.local_parallel),
            draft_tokens: self.draft_tokens.or(lower.draft_tokens),
            kv_decode: self.kv_decode.or(lower.kv_decode),
            device: self.device.or(lower.device),
            token_limit: self.token_limit.or(lower.token_limit),
            summarize_limit: self.summarize_limit.or(lower.summarize_limit),
            prefill_budget: self.prefill_budget.or(lower.prefill_budget),
            max_new_tokens: self.max_new_tokens.or(lower.max_new_tokens),
            preview_chars: self.preview_chars.or(lower.preview_chars),
            model_ms: self.model_ms.or(lower.model_ms),
            deadline_ms: self.deadline_ms.or(lower.deadline_ms),
            queue_capacity: self.queue_capacity.or(lower.queue_capacity),
            max_connections: self.max_connections.or(lower.max_connections),
            read_timeout_ms: self.read_timeout_ms.or(lower.read_timeout_ms),
            idle_timeout_ms: self.idle_timeout_ms.or(lower.idle_timeout_ms),
            max_request_bytes: self.max_request_bytes.or(lower.max_request_bytes),
            grace_ms: self.grace_ms.or(lower.grace_ms),
            spawn_timeout_ms: self.spawn_timeout_ms.or(lower.spawn_timeout_ms),
            first_byte_timeout_ms: self.first_byte_timeout_ms.or(lower.first_byte_timeout_ms),
            backend: self.backend.or(lower.backend),
            backend_url: self.backend_url.or(lower.backend_url),
            backend_model: self.backend_model.or(lower.backend_model),
            backend_parallel: self.backend_parallel.or(lower.backend_parallel),
            backend_fallback: self.backend_fallback.or(lower.backend_fallback),
            backend_connect_ms: self.backend_connect_ms.or(lower.backend_connect_ms),
        }
    }
}

/// The effective configuration: every key resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Daemon socket path.
    pub socket: PathBuf,
    /// Model spec; `None` = the default tier.
    pub model: Option<String>,
    /// Compute threads; `None` = cores available.
    pub threads: Option<usize>,
    /// `cpu`, `cuda[:N]` or `metal`.
    pub device: String,
    /// Local summaries in flight at once (1..=[`crate::engine::batch::MAX_LOCAL_PARALLEL`]):
    /// above 1, the engine decodes them together ([`crate::engine::Engine::serve`]).
    pub local_parallel: usize,
    /// Prompt-lookup drafts per decode step ([`crate::engine::EngineOptions::draft_tokens`]).
    pub draft_tokens: usize,
    /// KV cache decode steps read ([`crate::engine::EngineOptions::kv_decode`]).
    pub kv_decode: crate::engine::model::KvDecode,
    /// Default limits of a guard request (a request's own fields override them).
    pub limits: Limits,
    /// Default per-request deadline (ms).
    pub deadline_ms: u64,
    /// Model-queue capacity (jobs).
    pub queue_capacity: usize,
    /// Concurrent connection cap.
    pub max_connections: usize,
    /// Time to finish a started request line (ms).
    pub read_timeout_ms: u64,
    /// Lifetime of an idle connection (ms).
    pub idle_timeout_ms: u64,
    /// Longest request line and largest `content_path` file (bytes).
    pub max_request_bytes: usize,
    /// Grace period after a stop signal (ms).
    pub grace_ms: u64,
    /// Client wait for a spawned daemon (ms).
    pub spawn_timeout_ms: u64,
    /// Time a new connection has to send its first byte (ms).
    pub first_byte_timeout_ms: u64,
    /// Who narrates summaries.
    pub backend: crate::remote::BackendKind,
    /// The remote backend's API base URL (needed for `backend = openai`).
    pub backend_url: Option<String>,
    /// Model name for the remote backend; `None` = the server's first model.
    pub backend_model: Option<String>,
    /// Remote summaries in flight at once (at least 1).
    pub backend_parallel: usize,
    /// What answers when the remote backend fails.
    pub backend_fallback: crate::remote::Fallback,
    /// Remote connect timeout (ms).
    pub backend_connect_ms: u64,
    /// `TOOLSUM_BACKEND_API_KEY` (environment only: a flag or a config file would show it).
    pub backend_api_key: Option<crate::remote::ApiKey>,
    /// The keys set by flags, environment or file, before defaults: what a client sends the
    /// daemon, so that the daemon's own settings hold for every key the caller left unset.
    pub explicit: ConfigLayer,
}

/// The default socket path: `$XDG_RUNTIME_DIR/toolsum/toolsum.sock` when that variable names
/// an absolute path, else `<temp dir>/toolsum-<uid>/toolsum.sock`.
pub fn default_socket_path(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    match env("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(p) if p.is_absolute() => p.join("toolsum").join("toolsum.sock"),
        _ => {
            // SAFETY: getuid has no preconditions and cannot fail.
            let uid = unsafe { libc::getuid() };
            std::env::temp_dir()
                .join(format!("toolsum-{uid}"))
                .join("toolsum.sock")
        }
    }
}

/// The config file: `TOOLSUM_CONFIG`, else `<config dir>/toolsum/config.toml` (may not exist).
pub fn config_file_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    env("TOOLSUM_CONFIG")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::config_dir().map(|d| d.join("toolsum").join("config.toml")))
}

impl Config {
    /// Loads the configuration: `cli` (flags), then the process environment, then the config
    /// file (if it exists), then defaults.
    ///
    /// # Errors
    /// [`ConfigError`] for an unparsable variable or a bad config file. A missing file is fine,
    /// except when `TOOLSUM_CONFIG` names it.
    pub fn load(cli: ConfigLayer) -> Result<Config, ConfigError> {
        let env = |k: &str| std::env::var(k).ok();
        Self::load_with(cli, &env)
    }

    /// [`Config::load`] with an explicit environment lookup (for tests).
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn load_with(
        cli: ConfigLayer,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let env_layer = ConfigLayer::from_env(env)?;
        let explicit = env("TOOLSUM_CONFIG").is_some_and(|v| !v.is_empty());
        let file_layer = match config_file_path(env) {
            Some(path) => match std::fs::read_to_string(&path) {
                Ok(text) => ConfigLayer::from_toml(&text, &path)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                    ConfigLayer::default()
                }
                Err(source) => return Err(ConfigError::Read { path, source }),
            },
            None => ConfigLayer::default(),
        };
        Ok(Self::resolve(cli.or(env_layer).or(file_layer), env))
    }

    /// [`Config::load`] that never fails: a variable or file key that does not parse is left
    /// out (its default applies) and its error returned, to be shown as a warning. For the
    /// guard and hook paths, which must answer whatever the configuration says.
    pub fn load_lenient(cli: ConfigLayer) -> (Config, Vec<ConfigError>) {
        let env = |k: &str| std::env::var(k).ok();
        Self::load_lenient_with(cli, &env)
    }

    /// [`Config::load_lenient`] with an explicit environment lookup (for tests).
    pub fn load_lenient_with(
        cli: ConfigLayer,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> (Config, Vec<ConfigError>) {
        let (env_layer, mut errors) = ConfigLayer::from_env_lenient(env);
        let explicit = env("TOOLSUM_CONFIG").is_some_and(|v| !v.is_empty());
        let file_layer = match config_file_path(env) {
            Some(path) => match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let (l, e) = ConfigLayer::from_toml_lenient(&text, &path);
                    errors.extend(e);
                    l
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                    ConfigLayer::default()
                }
                Err(source) => {
                    errors.push(ConfigError::Read { path, source });
                    ConfigLayer::default()
                }
            },
            None => ConfigLayer::default(),
        };
        (Self::resolve(cli.or(env_layer).or(file_layer), env), errors)
    }

    /// Applies defaults to a merged layer.
    pub fn resolve(l: ConfigLayer, env: &dyn Fn(&str) -> Option<String>) -> Config {
        let d = Limits::default();
        let explicit = l.clone();
        Config {
            explicit,
            socket: l.socket.unwrap_or_else(|| default_socket_path(env)),
            model: l.model,
            threads: l.threads,
            local_parallel: l
                .local_parallel
                .unwrap_or(crate::engine::batch::DEFAULT_LOCAL_PARALLEL)
                .clamp(1, crate::engine::batch::MAX_LOCAL_PARALLEL),
            device: l.device.unwrap_or_else(|| "cpu".into()),
            draft_tokens: l
                .draft_tokens
                .unwrap_or(crate::engine::DEFAULT_DRAFT_TOKENS),
            kv_decode: l.kv_decode.unwrap_or_default(),
            limits: Limits {
                token_limit: l.token_limit.unwrap_or(d.token_limit),
                summarize_limit: l.summarize_limit.unwrap_or(d.summarize_limit),
                prefill_budget: l.prefill_budget.unwrap_or(d.prefill_budget),
                max_new_tokens: l.max_new_tokens.unwrap_or(d.max_new_tokens),
                preview_chars: l.preview_chars.unwrap_or(d.preview_chars),
                model_ms: l.model_ms.unwrap_or(d.model_ms),
            },
            deadline_ms: l.deadline_ms.unwrap_or(DEFAULT_DEADLINE_MS),
            queue_capacity: l.queue_capacity.unwrap_or(DEFAULT_QUEUE_CAPACITY).max(1),
            max_connections: l.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS).max(1),
            read_timeout_ms: l.read_timeout_ms.unwrap_or(DEFAULT_READ_TIMEOUT_MS),
            idle_timeout_ms: l.idle_timeout_ms.unwrap_or(DEFAULT_IDLE_TIMEOUT_MS),
            max_request_bytes: l.max_request_bytes.unwrap_or(DEFAULT_MAX_REQUEST_BYTES),
            grace_ms: l.grace_ms.unwrap_or(DEFAULT_GRACE_MS),
            spawn_timeout_ms: l.spawn_timeout_ms.unwrap_or(DEFAULT_SPAWN_TIMEOUT_MS),
            first_byte_timeout_ms: l
                .first_byte_timeout_ms
                .unwrap_or(DEFAULT_FIRST_BYTE_TIMEOUT_MS),
            backend: l.backend.unwrap_or_default(),
            backend_url: l.backend_url,
            backend_model: l.backend_model,
            backend_parallel: l
                .backend_parallel
                .unwrap_or(crate::remote::DEFAULT_PARALLEL)
                .max(1),
            backend_fallback: l.backend_fallback.unwrap_or_default(),
            backend_connect_ms: l
                .backend_connect_ms
                .unwrap_or(crate::remote::DEFAULT_CONNECT_MS),
            backend_api_key: env("TOOLSUM_BACKEND_API_KEY")
                .as_deref()
                .and_then(crate::remote::ApiKey::new),
        }
    }

    /// The remote backend's settings, when `backend = openai`.
    ///
    /// # Errors
    /// `backend = openai` without a `backend_url`.
    pub fn remote(&self) -> Result<Option<crate::remote::RemoteSettings>, String> {
        if self.backend != crate::remote::BackendKind::Openai {
            return Ok(None);
        }
        let url = self.backend_url.clone().ok_or_else(|| {
            "backend openai needs a URL: --backend-url (or TOOLSUM_BACKEND_URL), e.g. http://gpu-box:8000/v1".to_string()
        })?;
        Ok(Some(crate::remote::RemoteSettings {
            url,
            model: self.backend_model.clone(),
            parallel: self.backend_parallel,
            connect_ms: self.backend_connect_ms,
            api_key: self.backend_api_key.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn flags_beat_env_beat_file_beat_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "token_limit = 111\nsummarize_limit = 222\nqueue_capacity = 3\nmodel = \"small\"\n",
        )
        .unwrap();
        let env = env_of(&[
            ("TOOLSUM_CONFIG", file.to_str().unwrap()),
            ("TOOLSUM_TOKEN_LIMIT", "999"),
            ("TOOLSUM_SUMMARIZE_LIMIT", "888"),
            ("XDG_RUNTIME_DIR", "/run/user/7"),
        ]);
        let cli = ConfigLayer {
            token_limit: Some(5),
            ..Default::default()
        };
        let c = Config::load_with(cli, &env).unwrap();
        assert_eq!(c.limits.token_limit, 5);
        assert_eq!(c.limits.summarize_limit, 888);
        assert_eq!(c.queue_capacity, 3);
        assert_eq!(c.model.as_deref(), Some("small"));
        assert_eq!(c.deadline_ms, DEFAULT_DEADLINE_MS);
        assert_eq!(c.limits.prefill_budget, Limits::default().prefill_budget);
        assert_eq!(c.socket, PathBuf::from("/run/user/7/toolsum/toolsum.sock"));
    }

    #[test]
    fn unknown_key_and_bad_env_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "tokn_limit = 1\n").unwrap();
        let env = env_of(&[("TOOLSUM_CONFIG", file.to_str().unwrap())]);
        let e = Config::load_with(ConfigLayer::default(), &env).unwrap_err();
        assert!(matches!(e, ConfigError::UnknownKey { .. }), "{e}");
        let env = env_of(&[("TOOLSUM_THREADS", "four")]);
        assert!(matches!(
            Config::load_with(ConfigLayer::default(), &env),
            Err(ConfigError::BadEnv {
                var: "TOOLSUM_THREADS",
                ..
            })
        ));
        let env = env_of(&[("TOOLSUM_CONFIG", "/nonexistent/toolsum.toml")]);
        assert!(matches!(
            Config::load_with(ConfigLayer::default(), &env),
            Err(ConfigError::Read { .. })
        ));
    }

    #[test]
    fn local_parallel_defaults_to_4_and_is_clamped() {
        use crate::engine::batch::{DEFAULT_LOCAL_PARALLEL, MAX_LOCAL_PARALLEL};
        let c = Config::load_with(ConfigLayer::default(), &env_of(&[])).unwrap();
        assert_eq!(c.local_parallel, DEFAULT_LOCAL_PARALLEL);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "local_parallel = 2\n").unwrap();
        let env = env_of(&[("TOOLSUM_CONFIG", file.to_str().unwrap())]);
        assert_eq!(
            Config::load_with(ConfigLayer::default(), &env)
                .unwrap()
                .local_parallel,
            2
        );
        let env = env_of(&[("TOOLSUM_LOCAL_PARALLEL", "1")]);
        assert_eq!(
            Config::load_with(ConfigLayer::default(), &env)
                .unwrap()
                .local_parallel,
            1
        );
        let flag = ConfigLayer {
            local_parallel: Some(0),
            ..Default::default()
        };
        assert_eq!(Config::load_with(flag, &env).unwrap().local_parallel, 1);
        let flag = ConfigLayer {
            local_parallel: Some(64),
            ..Default::default()
        };
        assert_eq!(
            Config::load_with(flag, &env).unwrap().local_parallel,
            MAX_LOCAL_PARALLEL
        );
    }

    #[test]
    fn backend_settings_come_from_flags_env_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "backend = \"openai\"\nbackend_url = \"http://gpu-box:8000/v1\"\nbackend_parallel = 3\nbackend_fallback = \"local\"\n",
        )
        .unwrap();
        let env = env_of(&[
            ("TOOLSUM_CONFIG", file.to_str().unwrap()),
            ("TOOLSUM_BACKEND_MODEL", "qwen"),
            ("TOOLSUM_BACKEND_API_KEY", "sk-secret"),
        ]);
        let c = Config::load_with(ConfigLayer::default(), &env).unwrap();
        let r = c.remote().unwrap().unwrap();
        assert_eq!(r.url, "http://gpu-box:8000/v1");
        assert_eq!(r.model.as_deref(), Some("qwen"));
        assert_eq!(r.parallel, 3);
        assert_eq!(c.backend_fallback, crate::remote::Fallback::Local);
        assert!(
            !format!("{c:?}").contains("sk-secret"),
            "the key is never printed"
        );
        assert_eq!(r.api_key, crate::remote::ApiKey::new("sk-secret"));
        let env = env_of(&[("TOOLSUM_BACKEND", "openai")]);
        let c = Config::load_with(ConfigLayer::default(), &env).unwrap();
        assert!(c.remote().unwrap_err().contains("--backend-url"));
        let c = Config::load_with(ConfigLayer::default(), &env_of(&[])).unwrap();
        assert_eq!(c.remote(), Ok(None));
        assert_eq!(c.backend_parallel, crate::remote::DEFAULT_PARALLEL);
        let env = env_of(&[("TOOLSUM_BACKEND", "gpu")]);
        assert!(matches!(
            Config::load_with(ConfigLayer::default(), &env),
            Err(ConfigError::BadEnv {
                var: "TOOLSUM_BACKEND",
                ..
            })
        ));
    }

    #[test]
    fn config_errors_name_the_key_and_what_it_accepts() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "token_limt = 5\n").unwrap();
        let env = env_of(&[("TOOLSUM_CONFIG", file.to_str().unwrap())]);
        let e = Config::load_with(ConfigLayer::default(), &env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key `token_limt`"), "{e}");
        assert!(e.contains("did you mean `token_limit`?"), "{e}");
        assert!(e.contains("accepted keys: socket, model,"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
        // Lenient: every bad key reported, the good ones kept, defaults for the rest.
        std::fs::write(
            &file,
            "token_limt = 5\nkv_decode = \"q4\"\nmodel_ms = 300\n",
        )
        .unwrap();
        let (c, errs) = Config::load_lenient_with(ConfigLayer::default(), &env);
        assert_eq!(c.limits.model_ms, 300);
        assert_eq!(c.limits.token_limit, Limits::default().token_limit);
        assert_eq!(errs.len(), 2, "{errs:?}");
        let bad = errs[0].to_string();
        assert!(bad.contains("key `kv_decode` = \"q4\""), "{bad}");
        assert!(bad.contains("expected q8 or f16"), "{bad}");
        assert_eq!(c.explicit.model_ms, Some(300));
        assert_eq!(c.explicit.token_limit, None);

        std::fs::write(&file, "token_limit = = 5\n").unwrap();
        let e = Config::load_with(ConfigLayer::default(), &env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not valid TOML: line 1, column"), "{e}");

        let env = env_of(&[("TOOLSUM_TOKEN_LIMIT", "abc"), ("TOOLSUM_MODEL_MS", "9")]);
        let e = Config::load_with(ConfigLayer::default(), &env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("TOOLSUM_TOKEN_LIMIT=\"abc\""), "{e}");
        assert!(e.contains("expected a whole number of tokens"), "{e}");
        let (c, errs) = Config::load_lenient_with(ConfigLayer::default(), &env);
        assert_eq!(errs.len(), 1);
        assert_eq!(c.limits.token_limit, Limits::default().token_limit);
        assert_eq!(c.limits.model_ms, 9);
    }

    #[test]
    fn an_unknown_toolsum_variable_is_named_with_the_closest_known_one() {
        let names = [
            "TOOLSUM_TOKENLIMIT",
            "TOOLSUM_TOKEN_LIMIT",
            "TOOLSUM_CONFIG",
            "TOOLSUM_BENCH_REPS",
            "TOOLSUM_FROBNICATE",
            "PATH",
        ]
        .map(String::from);
        let w = unknown_env(names);
        assert_eq!(
            w,
            [
                "unknown environment variable TOOLSUM_FROBNICATE; it is ignored",
                "unknown environment variable TOOLSUM_TOKENLIMIT (did you mean TOOLSUM_TOKEN_LIMIT?); it is ignored",
            ]
        );
    }

    #[test]
    fn every_layer_field_is_a_key() {
        // KEYS and ConfigLayer list the same keys: a layer with every key set serializes to
        // exactly KEYS' names (checked through the TOML round trip of each key).
        for (k, _, _) in KEYS {
            let v = if *k == "kv_decode" {
                "\"f16\"".to_string()
            } else if *k == "backend" {
                "\"openai\"".to_string()
            } else if *k == "backend_fallback" {
                "\"local\"".to_string()
            } else if ["socket", "model", "device", "backend_url", "backend_model"].contains(k) {
                "\"x\"".to_string()
            } else {
                "1".to_string()
            };
            let l = ConfigLayer::from_toml(&format!("{k} = {v}\n"), Path::new("t.toml"));
            assert!(l.is_ok(), "{k}: {l:?}");
            assert_ne!(l.unwrap(), ConfigLayer::default(), "{k}");
        }
    }

    #[test]
    fn socket_falls_back_to_per_user_temp_dir() {
        let env = env_of(&[("XDG_RUNTIME_DIR", "relative")]);
        let p = default_socket_path(&env);
        let uid = unsafe { libc::getuid() };
        assert!(p.ends_with(format!("toolsum-{uid}/toolsum.sock")), "{p:?}");
    }
}
