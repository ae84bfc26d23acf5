//! The guard pipeline: what happens to one tool result.
//!
//! Order of the steps (the numbering):
//! 4. [`decode`] and [`binary`] run first, at every size: the bytes are read as text in their
//!    encoding (UTF-8, UTF-16, a legacy code page; a few NULs shown as `␀`), or else are raw
//!    binary; base64 files (whole result, `data:` URIs, blobs inside JSON, also JSON nested in
//!    JSON strings) and raw binary are saved decoded under `long_responses/` and described. A
//!    text that is not the exact bytes has its raw bytes saved and pointed to.
//! 1. Tokens are counted with the real tokenizer ([`crate::backend::TokenCounter`]); a result with
//!    fewer bytes than the token limit is not counted (a byte-level BPE token covers ≥ 1 byte).
//! 2. A result at or under [`Limits::token_limit`] passes through byte-identical.
//! 3. A larger one is saved first ([`save`]), so a later failure never loses it.
//! 5. It is cleaned ([`clean`]) and handed to [`summarize::summarize`] (the model step, run
//!    through [`SummaryJob::run`]). Above [`Limits::summarize_limit`] the model still runs (it
//!    reads only the bounded reduction) and the reason says `too_large`.
//! 6. When the model is unavailable or late, the structural digest; past 16 MiB of text, or
//!    without a tokenizer, a head/tail [`preview`].
//! 7. The result is a synthetic tool result ([`response`]) ending with the saved file's path.
//!
//! [`prepare`] does everything cheap (no model); [`SummaryJob::run`] does the model step, so the
//! daemon can do the first on the connection task and queue only the second for the model thread.
//! [`guard`] does both in one call (the client's fallback without a daemon).

pub mod ask;
pub mod binary;
pub mod clean;
pub mod decode;
pub mod ground;
pub mod pipeline;
pub mod preview;
pub mod prompt;
pub mod raw;
pub mod reduce;
pub mod reread;
pub mod response;
pub mod save;
pub mod session;
pub mod summarize;

pub use pipeline::{guard, prepare, prepare_saved, Prepared, SummaryJob};

use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Size limits of one guard request. Defaults come from the issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Results at or under this many tokens pass through unchanged (default 15,000 tokens).
    pub token_limit: usize,
    /// Results above this many tokens take the bounded path: counting stops there, the reason
    /// says `too_large`, and only the structural reduction is summarized (the model reads its
    /// excerpts, as always), or digested without a model (default 100,000 tokens).
    pub summarize_limit: usize,
    /// Tokens of tool text the model may see in its prompt (default 1,500 tokens).
    pub prefill_budget: usize,
    /// Upper bound on tokens the model generates (default 256 tokens).
    pub max_new_tokens: usize,
    /// Characters (Unicode scalar values) of head and of tail in a preview (default 2,000 each).
    pub preview_chars: usize,
    /// Time the model may spend on one summary (ms, default 4,500): the model's input and
    /// output are sized from the engine's measured prefill/decode speeds to fit it, so a summary
    /// answers in about this time whatever the request's (hard) deadline. 0 = no model, the
    /// reduction alone. Chosen for issue 17's p50 <= 5 s end-to-end target on a 2-core CPU:
    /// counting and the reduction take about 0.3 s, and on a CPU that prefills only ~234 tok/s
    /// the former 8 s let the model read ~1,200 tokens and put the p50 at 5.1 s, while its
    /// picks and Status moved no fact (dev 546 with it, 547 without; docs/BENCHMARKS.md,
    /// session 32). A CPU that prefills ~650 tok/s or more (decoding ~60), or a GPU, still reads
    /// the whole `prefill_budget` in this time.
    pub model_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            token_limit: 15_000,
            summarize_limit: 100_000,
            prefill_budget: 1_500,
            max_new_tokens: 256,
            preview_chars: 2_000,
            model_ms: 4_500,
        }
    }
}

/// One tool result to guard, as validated by the daemon or the client.
#[derive(Debug, Clone)]
pub struct GuardRequest {
    /// The tool result exactly as the tool returned it (any bytes, any size).
    pub content: Vec<u8>,
    /// The tool's name (free text; sanitized before it goes into a file name).
    pub tool: String,
    /// The tool's arguments, shown to the model as context.
    pub args: Option<serde_json::Value>,
    /// What the caller wants from the output, shown to the model as context.
    pub intent: Option<String>,
    /// The agent session's directory: must be absolute and exist; saved files go to its
    /// `long_responses/` subdirectory, which is created (mode 0700) when missing.
    pub session_dir: PathBuf,
    /// Size limits.
    pub limits: Limits,
    /// When true, base64 files are left as text instead of being saved decoded and described.
    pub keep_binary_inline: bool,
    /// The model step gives up (preview instead) when this instant passes.
    pub deadline: Option<Instant>,
    /// The content is (a window of) this file, already saved: it is not saved again and the
    /// pointer names it. `None` = found from `args` when they read a saved file back
    /// ([`reread::saved_source`]), else the content is saved as usual.
    pub source: Option<SavedFile>,
    /// Text the caller adds around the returned text before the agent reads it (a hook's
    /// sentence, the saved file's path when the pointer is rewritten to open from elsewhere):
    /// its tokens are left out of the sections' cap, so what the agent reads stays within
    /// [`summarize::RESULT_TOKEN_CAP`]. Empty for none.
    pub frame: String,
}

/// What kind of synthetic result was returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultKind {
    /// The original result, unchanged (at or under the token limit).
    Passthrough,
    /// A summary of a saved result (model narration, or the reduction alone).
    Summary,
    /// A head/tail preview of a saved result (too large, or the model was unavailable/late).
    Preview,
    /// A description of binary content that was saved decoded (plus any remaining text).
    Binary,
}

/// One file written under `<session>/long_responses/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedFile {
    /// Path relative to the session dir, e.g. `long_responses/20250101T120000.123_Bash.txt`.
    pub path: String,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// Media type of the content (`text/plain`, `application/json`, `image/png`, ...).
    pub media_type: String,
}

/// Token counts of a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenStats {
    /// Tokens of the text input. When counting was skipped (fewer bytes than the token limit, or
    /// no counter) this is the byte count, an upper bound; when counting stopped early past
    /// `summarize_limit` it is the count so far, a lower bound. 0 for a binary-only result.
    pub input: usize,
    /// Tokens of the returned text (byte count when there is no counter).
    pub output: usize,
}

/// Where the time went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Whole request, from [`prepare`] to the response (ms).
    pub total: f64,
    /// Waiting for the model thread (ms); set by the daemon, 0 otherwise.
    pub queue: f64,
    /// Counting tokens (ms).
    pub count: f64,
    /// Structural reduction before the model (ms).
    pub reduce: f64,
    /// Model prefill (ms).
    pub prefill: f64,
    /// Model decode (ms).
    pub decode: f64,
}

/// The synthetic tool result that replaces the original.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardResponse {
    /// Always true for a response; errors travel as [`GuardError`] instead.
    pub ok: bool,
    /// Which path produced `text`.
    pub kind: ResultKind,
    /// The text that goes back to the agent in place of the tool result.
    pub text: String,
    /// Files written under `long_responses/` (empty for a pass-through).
    pub saved: Vec<SavedFile>,
    /// Token counts.
    pub tokens: TokenStats,
    /// Timings (ms).
    pub timings_ms: Timings,
    /// Name of the model that narrated the summary, if one did.
    pub model: Option<String>,
    /// Why the model was not used, or why the result is degraded (e.g. `save_failed: ...`).
    pub reason: Option<String>,
    /// Model statements dropped because they were not grounded in the tool output.
    pub ungrounded_dropped: usize,
    /// Detected kind of content (from the reduction step), e.g. `log`, `json`, `binary`.
    pub content_kind: Option<String>,
    /// The encoding the text was decoded from when it is not the content's exact bytes
    /// (`GBK`, `Shift_JIS`, `UTF-16LE`, `windows-1252`, ...; `UTF-8` for UTF-8 with NULs shown
    /// as `␀` or invalid bytes as U+FFFD), see [`decode`]. The raw bytes are then saved and the
    /// text points to them. `None` when the text handed on is read from the exact bytes.
    #[serde(default)]
    pub encoding: Option<String>,
}

/// A request that cannot be answered with any safe result.
///
/// Disk full or a read-only session dir are *not* errors: the pipeline then returns a preview
/// with `reason: "save_failed: ..."`. The [`GuardError::DiskFull`], [`GuardError::ReadOnly`] and
/// [`GuardError::Io`] variants are what [`save`] reports to the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The session dir is not absolute, missing, or not a directory.
    #[error("bad session dir {path:?}: {why}")]
    BadSessionDir {
        /// The path as given.
        path: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// `long_responses` is a symlink or not a directory; writing there could escape the session.
    #[error("unsafe save dir {path:?}: {why}")]
    UnsafeSaveDir {
        /// The `long_responses` path.
        path: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// No space left on the device (ENOSPC, EDQUOT).
    #[error("disk full while saving {path:?}: {source}")]
    DiskFull {
        /// The directory being written.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The session dir is on a read-only file system or not writable (EROFS, EACCES, EPERM).
    #[error("read-only session dir {path:?}: {source}")]
    ReadOnly {
        /// The directory being written.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Any other I/O error while saving.
    #[error("i/o error on {path:?}: {source}")]
    Io {
        /// The path being written.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl GuardError {
    /// The stable machine-readable kind sent on the wire: `bad_session_dir`, `unsafe_save_dir`,
    /// `disk_full`, `read_only` or `io`.
    pub fn kind(&self) -> &'static str {
        match self {
            GuardError::BadSessionDir { .. } => "bad_session_dir",
            GuardError::UnsafeSaveDir { .. } => "unsafe_save_dir",
            GuardError::DiskFull { .. } => "disk_full",
            GuardError::ReadOnly { .. } => "read_only",
            GuardError::Io { .. } => "io",
        }
    }

    /// Classifies an I/O error on `path` into [`GuardError::DiskFull`], [`GuardError::ReadOnly`]
    /// or [`GuardError::Io`].
    pub fn from_io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        match source.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => GuardError::DiskFull { path, source },
            Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM) => {
                GuardError::ReadOnly { path, source }
            }
            _ => GuardError::Io { path, source },
        }
    }

    /// True when the request itself is unusable (bad or unsafe session dir), as opposed to a
    /// failure to write, after which a preview can still be returned.
    pub fn is_request_error(&self) -> bool {
        matches!(
            self,
            GuardError::BadSessionDir { .. } | GuardError::UnsafeSaveDir { .. }
        )
    }
}

/// A corpus file of `tests/corpus/` (the repo's copy of the shared corpus), for unit tests.
#[cfg(test)]
pub(crate) fn test_corpus(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
