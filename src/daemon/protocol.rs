//! Protocol v1: newline-delimited JSON over a Unix stream socket (see PROTOCOL.md).
//!
//! Layers, as in mini-redis: bytes → one line ([`read_frame`], bounded and timed) → a loose
//! wire object ([`RawRequest`]) → a validated [`Request`] → a response object
//! ([`ok_response`] / [`error_response`]). Every failure is a [`ProtocolError`] whose
//! [`ProtocolError::kind`] is the stable machine-readable `error.kind` on the wire.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use crate::guard::GuardError;

/// The protocol version this build speaks (`"v": 1` in every request; a missing `v` means 1).
pub const PROTOCOL_VERSION: u64 = 1;

/// A request that cannot be answered with a result; travels as
/// `{"ok":false,"error":{"kind":…,"message":…}}`.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The line is not a JSON object.
    #[error("malformed JSON: {0}")]
    BadJson(String),
    /// The line (or a `content_path` file) is over `max_request_bytes`.
    #[error("request of {bytes} bytes is over the limit of {limit} bytes")]
    TooLarge {
        /// Bytes seen (for a line: at least this many).
        bytes: usize,
        /// The limit (bytes).
        limit: usize,
    },
    /// A field is missing, of the wrong type, or contradicts another.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// `v` is not a version this daemon speaks.
    #[error("unsupported protocol version {0} (this daemon speaks v1)")]
    UnsupportedVersion(u64),
    /// `op` is not one of guard, ask, count, status, shutdown.
    #[error("unknown op {0:?} (known: guard, ask, count, status, shutdown)")]
    UnknownOp(String),
    /// The peer may not do this (another uid, or a `content_path` it could not read itself).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The model queue or the connection cap is full; try again or fall back.
    #[error("overloaded: {0}")]
    Overloaded(String),
    /// The request's deadline passed before a result was ready.
    #[error("deadline passed: {0}")]
    Deadline(String),
    /// The daemon is shutting down and takes no new work.
    #[error("daemon is shutting down")]
    ShuttingDown,
    /// The guard pipeline refused the request (bad session dir, ...).
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// A bug or an unexpected failure inside the daemon.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ProtocolError {
    /// The stable wire kind: `bad_json`, `too_large`, `bad_request`, `unsupported_version`,
    /// `unknown_op`, `forbidden`, `overloaded`, `deadline`, `shutting_down`, `internal`, or a
    /// guard kind ([`GuardError::kind`]: `bad_session_dir`, `unsafe_save_dir`, `disk_full`,
    /// `read_only`, `io`).
    pub fn kind(&self) -> &'static str {
        match self {
            ProtocolError::BadJson(_) => "bad_json",
            ProtocolError::TooLarge { .. } => "too_large",
            ProtocolError::BadRequest(_) => "bad_request",
            ProtocolError::UnsupportedVersion(_) => "unsupported_version",
            ProtocolError::UnknownOp(_) => "unknown_op",
            ProtocolError::Forbidden(_) => "forbidden",
            ProtocolError::Overloaded(_) => "overloaded",
            ProtocolError::Deadline(_) => "deadline",
            ProtocolError::ShuttingDown => "shutting_down",
            ProtocolError::Guard(g) => g.kind(),
            ProtocolError::Internal(_) => "internal",
        }
    }
}

/// One request line as it arrives: every field optional and loosely typed.
#[derive(Debug, Default, Deserialize)]
pub struct RawRequest {
    /// Protocol version (default 1).
    pub v: Option<u64>,
    /// `guard`, `ask`, `count`, `status` or `shutdown`.
    pub op: Option<String>,
    /// Echoed back in the response, so a pipelining client can match answers.
    pub id: Option<Value>,
    /// Tool name (guard; required).
    pub tool: Option<String>,
    /// Tool arguments (guard).
    pub args: Option<Value>,
    /// What the caller wants from the output (guard).
    pub intent: Option<String>,
    /// Absolute session directory (guard; required).
    pub session_dir: Option<PathBuf>,
    /// Pass-through limit (tokens).
    pub token_limit: Option<usize>,
    /// Preview-instead-of-summary limit (tokens).
    pub summarize_limit: Option<usize>,
    /// Tool tokens the model may read.
    pub prefill_budget: Option<usize>,
    /// Tokens the model may write.
    pub max_new_tokens: Option<usize>,
    /// Head and tail characters of a preview.
    pub preview_chars: Option<usize>,
    /// Time the model may spend (ms); see `guard::Limits::model_ms`.
    pub model_ms: Option<u64>,
    /// Keep base64 files inline instead of saving them decoded.
    pub keep_binary_inline: Option<bool>,
    /// Deadline for this request, from its arrival (ms).
    pub deadline_ms: Option<u64>,
    /// Text the caller adds around the result (guard): its tokens are left out of the
    /// sections' cap ([`crate::guard::GuardRequest::frame`]).
    pub frame: Option<String>,
    /// Content as a UTF-8 string.
    pub content: Option<String>,
    /// Content as standard base64 (any bytes).
    pub content_b64: Option<String>,
    /// Content as an absolute path of a file the daemon reads.
    pub content_path: Option<PathBuf>,
    /// A saved output to ask (ask; required): an absolute path inside a `long_responses/`.
    pub path: Option<PathBuf>,
    /// The new question (ask; required).
    pub question: Option<String>,
}

/// Where a request's content comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// The bytes themselves (`content` or decoded `content_b64`).
    Bytes(Vec<u8>),
    /// A file to read after checking that the peer could read it ([`peer_can_read`]).
    Path(PathBuf),
}

/// A validated `guard` request. Limits left `None` take the daemon's configured defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardCall {
    /// Tool name (non-empty).
    pub tool: String,
    /// Tool arguments.
    pub args: Option<Value>,
    /// Caller's intent.
    pub intent: Option<String>,
    /// Absolute session directory.
    pub session_dir: PathBuf,
    /// Per-request limit overrides.
    pub token_limit: Option<usize>,
    /// Per-request limit override.
    pub summarize_limit: Option<usize>,
    /// Per-request limit override.
    pub prefill_budget: Option<usize>,
    /// Per-request limit override.
    pub max_new_tokens: Option<usize>,
    /// Per-request limit override.
    pub preview_chars: Option<usize>,
    /// Time the model may spend (ms); see `guard::Limits::model_ms`.
    pub model_ms: Option<u64>,
    /// Keep base64 files inline.
    pub keep_binary_inline: bool,
    /// Deadline from arrival (ms); `None` = the daemon default.
    pub deadline_ms: Option<u64>,
    /// Text the caller adds around the result ([`crate::guard::GuardRequest::frame`]).
    pub frame: Option<String>,
    /// The tool result.
    pub content: Content,
}

/// A validated `ask` request: a saved output and a new question. Limits left `None` take the
/// daemon's configured defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct AskCall {
    /// Absolute path of the saved output (confined to a `long_responses/` directory).
    pub path: PathBuf,
    /// The new question (non-empty).
    pub question: String,
    /// When given (absolute), the file must be inside `<session_dir>/long_responses/`.
    pub session_dir: Option<PathBuf>,
    /// Per-request limit override (tokens).
    pub token_limit: Option<usize>,
    /// Per-request limit override (tokens).
    pub summarize_limit: Option<usize>,
    /// Per-request limit override (tokens).
    pub prefill_budget: Option<usize>,
    /// Per-request limit override (tokens).
    pub max_new_tokens: Option<usize>,
    /// Per-request limit override (characters).
    pub preview_chars: Option<usize>,
    /// Time the model may spend (ms).
    pub model_ms: Option<u64>,
    /// Deadline from arrival (ms); `None` = the daemon default.
    pub deadline_ms: Option<u64>,
}

/// A validated request.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Guard one tool result.
    Guard(Box<GuardCall>),
    /// Ask a saved output a new question.
    Ask(Box<AskCall>),
    /// Count tokens of content.
    Count(Content),
    /// Report daemon state.
    Status,
    /// Stop the daemon (graceful, as SIGTERM).
    Shutdown,
}

fn content_of(raw: &mut RawRequest) -> Result<Content, ProtocolError> {
    let n = raw.content.is_some() as u8
        + raw.content_b64.is_some() as u8
        + raw.content_path.is_some() as u8;
    if n != 1 {
        return Err(ProtocolError::BadRequest(
            "exactly one of content, content_b64, content_path is required".into(),
        ));
    }
    if let Some(s) = raw.content.take() {
        return Ok(Content::Bytes(s.into_bytes()));
    }
    if let Some(b) = raw.content_b64.take() {
        return base64::engine::general_purpose::STANDARD
            .decode(b.trim())
            .map(Content::Bytes)
            .map_err(|e| ProtocolError::BadRequest(format!("content_b64 is not base64: {e}")));
    }
    let p = raw.content_path.take().expect("counted above");
    if !p.is_absolute() {
        return Err(ProtocolError::BadRequest(format!(
            "content_path {p:?} is not absolute"
        )));
    }
    Ok(Content::Path(p))
}

/// Parses and validates one request line (without its `\n`). Returns the request's `id` (if
/// the line was an object with one) beside the outcome, so errors can echo it too.
///
/// The error is [`ProtocolError::BadJson`] when the line is not a JSON object;
/// `UnsupportedVersion`, `UnknownOp` or `BadRequest` when it is one but not a valid request.
pub fn parse_request(line: &[u8]) -> (Option<Value>, Result<Request, ProtocolError>) {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => return (None, Err(ProtocolError::BadJson(e.to_string()))),
    };
    if !value.is_object() {
        let e = ProtocolError::BadJson("a request must be a JSON object".into());
        return (None, Err(e));
    }
    let id = value.get("id").cloned();
    let res = serde_json::from_value::<RawRequest>(value)
        .map_err(|e| ProtocolError::BadRequest(e.to_string()))
        .and_then(|mut raw| validate(&mut raw));
    (id, res)
}

/// Validates a [`RawRequest`] into a [`Request`].
///
/// # Errors
/// As [`parse_request`], minus `BadJson`.
pub fn validate(raw: &mut RawRequest) -> Result<Request, ProtocolError> {
    let v = raw.v.unwrap_or(PROTOCOL_VERSION);
    if v != PROTOCOL_VERSION {
        return Err(ProtocolError::UnsupportedVersion(v));
    }
    let op = raw
        .op
        .take()
        .ok_or_else(|| ProtocolError::BadRequest("missing field op".into()))?;
    match op.as_str() {
        "status" => Ok(Request::Status),
        "shutdown" => Ok(Request::Shutdown),
        "count" => Ok(Request::Count(content_of(raw)?)),
        "guard" => {
            let tool = raw
                .tool
                .take()
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| ProtocolError::BadRequest("missing field tool".into()))?;
            let session_dir = raw
                .session_dir
                .take()
                .ok_or_else(|| ProtocolError::BadRequest("missing field session_dir".into()))?;
            if !session_dir.is_absolute() {
                return Err(ProtocolError::BadRequest(format!(
                    "session_dir {session_dir:?} is not absolute"
                )));
            }
            for (name, val) in [
                ("token_limit", raw.token_limit),
                ("summarize_limit", raw.summarize_limit),
                ("max_new_tokens", raw.max_new_tokens),
            ] {
                if val == Some(0) {
                    return Err(ProtocolError::BadRequest(format!("{name} must be > 0")));
                }
            }
            let content = content_of(raw)?;
            Ok(Request::Guard(Box::new(GuardCall {
                tool,
                args: raw.args.take(),
                intent: raw.intent.take(),
                session_dir,
                token_limit: raw.token_limit,
                summarize_limit: raw.summarize_limit,
                prefill_budget: raw.prefill_budget,
                max_new_tokens: raw.max_new_tokens,
                preview_chars: raw.preview_chars,
                model_ms: raw.model_ms,
                keep_binary_inline: raw.keep_binary_inline.unwrap_or(false),
                deadline_ms: raw.deadline_ms,
                frame: raw.frame.take(),
                content,
            })))
        }
        "ask" => {
            let path = raw
                .path
                .take()
                .ok_or_else(|| ProtocolError::BadRequest("missing field path".into()))?;
            let question = raw
                .question
                .take()
                .filter(|q| !q.trim().is_empty())
                .ok_or_else(|| ProtocolError::BadRequest("missing field question".into()))?;
            for (name, p) in [
                ("path", Some(&path)),
                ("session_dir", raw.session_dir.as_ref()),
            ] {
                if p.is_some_and(|p| !p.is_absolute()) {
                    return Err(ProtocolError::BadRequest(format!(
                        "{name} {p:?} is not absolute"
                    )));
                }
            }
            for (name, val) in [
                ("token_limit", raw.token_limit),
                ("summarize_limit", raw.summarize_limit),
                ("max_new_tokens", raw.max_new_tokens),
            ] {
                if val == Some(0) {
                    return Err(ProtocolError::BadRequest(format!("{name} must be > 0")));
                }
            }
            Ok(Request::Ask(Box::new(AskCall {
                path,
                question,
                session_dir: raw.session_dir.take(),
                token_limit: raw.token_limit,
                summarize_limit: raw.summarize_limit,
                prefill_budget: raw.prefill_budget,
                max_new_tokens: raw.max_new_tokens,
                preview_chars: raw.preview_chars,
                model_ms: raw.model_ms,
                deadline_ms: raw.deadline_ms,
            })))
        }
        other => Err(ProtocolError::UnknownOp(other.to_string())),
    }
}

/// True when a peer with `peer_uid`/`peer_gid` could read a file with owner `file_uid`, group
/// `file_gid` and permission bits `mode` by itself (root reads anything). Supplementary groups
/// of the peer are unknown to the daemon, so group access counts only for its primary group.
pub fn peer_can_read(
    file_uid: u32,
    file_gid: u32,
    mode: u32,
    peer_uid: u32,
    peer_gid: u32,
) -> bool {
    if peer_uid == 0 {
        return true;
    }
    if file_uid == peer_uid {
        return mode & 0o400 != 0;
    }
    if file_gid == peer_gid {
        return mode & 0o040 != 0;
    }
    mode & 0o004 != 0
}

/// Refuses a peer whose uid differs from the daemon's (or is unknown).
///
/// # Errors
/// [`ProtocolError::Forbidden`].
pub fn check_peer(peer_uid: Option<u32>, own_uid: u32) -> Result<(), ProtocolError> {
    match peer_uid {
        Some(u) if u == own_uid => Ok(()),
        Some(u) => Err(ProtocolError::Forbidden(format!(
            "peer uid {u} is not the daemon's uid {own_uid}"
        ))),
        None => Err(ProtocolError::Forbidden(
            "peer credentials unavailable".into(),
        )),
    }
}

/// Reads a `content_path` file for a peer: refuses one the peer could not read itself, one
/// that is not a regular file, or one over `max_bytes`.
///
/// # Errors
/// `Forbidden`, `TooLarge`, or `BadRequest` (missing file, I/O error).
pub fn read_content_path(
    path: &std::path::Path,
    peer_uid: u32,
    peer_gid: u32,
    max_bytes: usize,
) -> Result<Vec<u8>, ProtocolError> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let file = std::fs::File::open(path)
        .map_err(|e| ProtocolError::BadRequest(format!("content_path {path:?}: {e}")))?;
    // Checked on the opened file, so a swap of the path after the check changes nothing.
    let meta = file
        .metadata()
        .map_err(|e| ProtocolError::BadRequest(format!("content_path {path:?}: {e}")))?;
    if !meta.is_file() {
        return Err(ProtocolError::BadRequest(format!(
            "content_path {path:?} is not a regular file"
        )));
    }
    if !peer_can_read(meta.uid(), meta.gid(), meta.mode(), peer_uid, peer_gid) {
        return Err(ProtocolError::Forbidden(format!(
            "content_path {path:?} is not readable by uid {peer_uid}"
        )));
    }
    if meta.len() > max_bytes as u64 {
        return Err(ProtocolError::TooLarge {
            bytes: meta.len() as usize,
            limit: max_bytes,
        });
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ProtocolError::BadRequest(format!("content_path {path:?}: {e}")))?;
    if buf.len() > max_bytes {
        return Err(ProtocolError::TooLarge {
            bytes: buf.len(),
            limit: max_bytes,
        });
    }
    Ok(buf)
}

/// A successful response: `body` (an object) with `ok: true` and the request's `id`, if any.
pub fn ok_response(id: Option<&Value>, mut body: Value) -> Value {
    if let Value::Object(m) = &mut body {
        m.insert("ok".into(), Value::Bool(true));
        if let Some(id) = id {
            m.insert("id".into(), id.clone());
        }
    }
    body
}

/// An error response: `{"ok":false,"error":{"kind":…,"message":…}}` plus the `id`, if any.
pub fn error_response(id: Option<&Value>, err: &ProtocolError) -> Value {
    let mut v = json!({"ok": false, "error": {"kind": err.kind(), "message": err.to_string()}});
    if let Some(id) = id {
        v["id"] = id.clone();
    }
    v
}

/// One framing step's outcome.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, without its `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line over the limit was read to its end and discarded; `bytes` were seen.
    TooLarge {
        /// Length of the discarded line (bytes).
        bytes: usize,
    },
    /// The peer closed its side (a partial last line is dropped).
    Eof,
    /// A started line was not finished within the read timeout.
    TimedOut,
    /// No byte of a line arrived within the idle timeout.
    Idle,
}

/// Reads one `\n`-terminated line of at most `max` bytes. A longer line is read to its end and
/// discarded ([`Frame::TooLarge`]), so the connection stays usable. Once the first byte of a
/// line has arrived the rest must follow within `read_timeout` ([`Frame::TimedOut`]); before
/// that the wait is bounded by `idle_timeout` ([`Frame::Idle`]).
///
/// # Errors
/// I/O errors of the underlying reader.
pub async fn read_frame<R: AsyncBufRead + Unpin>(
    r: &mut R,
    max: usize,
    read_timeout: Duration,
    idle_timeout: Duration,
) -> std::io::Result<Frame> {
    let mut line = Vec::new();
    let mut seen = 0usize;
    let mut started: Option<tokio::time::Instant> = None;
    let idle_until = tokio::time::Instant::now() + idle_timeout;
    loop {
        let until = started.map_or(idle_until, |s| s + read_timeout);
        let buf = match tokio::time::timeout_at(until, r.fill_buf()).await {
            Err(_) if started.is_none() => return Ok(Frame::Idle),
            Err(_) => return Ok(Frame::TimedOut),
            Ok(res) => res?,
        };
        if buf.is_empty() {
            return Ok(Frame::Eof);
        }
        if started.is_none() {
            started = Some(tokio::time::Instant::now());
        }
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        seen += chunk.len();
        if seen <= max {
            line.extend_from_slice(chunk);
        } else if !line.is_empty() {
            line = Vec::new();
        }
        let used = done.unwrap_or(chunk.len());
        r.consume(used);
        if done.is_some() {
            if seen > max {
                return Ok(Frame::TooLarge { bytes: seen });
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Frame::Line(line));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncWriteExt, BufReader};

    #[test]
    fn parses_guard_and_rejects_bad_fields() {
        let (id, r) = parse_request(
            br#"{"v":1,"op":"guard","id":7,"tool":"Bash","session_dir":"/s","content":"hi","deadline_ms":5}"#,
        );
        assert_eq!(id, Some(json!(7)));
        let Request::Guard(g) = r.unwrap() else {
            panic!()
        };
        assert_eq!(g.content, Content::Bytes(b"hi".to_vec()));
        assert_eq!(g.deadline_ms, Some(5));
        let k = |l: &[u8]| parse_request(l).1.unwrap_err().kind();
        assert_eq!(k(b"{not json"), "bad_json");
        assert_eq!(k(b"[1,2]"), "bad_json");
        assert_eq!(k(br#"{"v":2,"op":"status"}"#), "unsupported_version");
        assert_eq!(k(br#"{"op":"fly"}"#), "unknown_op");
        assert_eq!(
            k(br#"{"op":"guard","session_dir":"/s","content":"x"}"#),
            "bad_request"
        );
        assert_eq!(
            k(br#"{"op":"guard","tool":"t","session_dir":"rel","content":"x"}"#),
            "bad_request"
        );
        assert_eq!(
            k(br#"{"op":"guard","tool":"t","session_dir":"/s","content":"x","content_b64":"eA=="}"#),
            "bad_request"
        );
        assert_eq!(k(br#"{"op":"count","content_b64":"!!"}"#), "bad_request");
        assert_eq!(
            k(br#"{"op":"count","content_path":"rel/x"}"#),
            "bad_request"
        );
        assert_eq!(k(br#"{"op":"count","content":5}"#), "bad_request");
        let (id, r) = parse_request(br#"{"op":"count","id":"a","content_b64":"AP8="}"#);
        assert_eq!(id, Some(json!("a")));
        assert_eq!(r.unwrap(), Request::Count(Content::Bytes(vec![0, 255])));
    }

    #[test]
    fn parses_ask_and_rejects_bad_fields() {
        let (_, r) = parse_request(
            br#"{"op":"ask","path":"/s/long_responses/a.txt","question":"which port?","session_dir":"/s"}"#,
        );
        let Request::Ask(a) = r.unwrap() else {
            panic!()
        };
        assert_eq!(a.path, PathBuf::from("/s/long_responses/a.txt"));
        assert_eq!(a.question, "which port?");
        assert_eq!(a.session_dir, Some(PathBuf::from("/s")));
        let k = |l: &[u8]| parse_request(l).1.unwrap_err().kind();
        assert_eq!(k(br#"{"op":"ask","question":"q"}"#), "bad_request");
        assert_eq!(k(br#"{"op":"ask","path":"/a"}"#), "bad_request");
        assert_eq!(
            k(br#"{"op":"ask","path":"/a","question":"  "}"#),
            "bad_request"
        );
        assert_eq!(
            k(br#"{"op":"ask","path":"rel","question":"q"}"#),
            "bad_request"
        );
        assert_eq!(
            k(br#"{"op":"ask","path":"/a","question":"q","session_dir":"rel"}"#),
            "bad_request"
        );
    }

    #[test]
    fn peer_checks() {
        assert!(check_peer(Some(5), 5).is_ok());
        assert_eq!(check_peer(Some(6), 5).unwrap_err().kind(), "forbidden");
        assert_eq!(check_peer(None, 5).unwrap_err().kind(), "forbidden");
        // owner bits decide for the owner, even when others may read
        assert!(!peer_can_read(5, 5, 0o044, 5, 5));
        assert!(peer_can_read(5, 5, 0o400, 5, 5));
        assert!(peer_can_read(9, 5, 0o040, 5, 5));
        assert!(!peer_can_read(9, 9, 0o600, 5, 5));
        assert!(peer_can_read(9, 9, 0o604, 5, 5));
        assert!(peer_can_read(9, 9, 0o000, 0, 0));
    }

    #[test]
    fn content_path_refuses_unreadable_and_large() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"hello").unwrap();
        let uid = unsafe { libc::getuid() };
        let gid = unsafe { libc::getgid() };
        assert_eq!(read_content_path(&p, uid, gid, 100).unwrap(), b"hello");
        assert_eq!(
            read_content_path(&p, uid, gid, 3).unwrap_err().kind(),
            "too_large"
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        // a different (non-root) peer may not read a 0600 file it does not own
        if uid != 0 {
            assert_eq!(
                read_content_path(&p, uid + 1, gid + 1, 100)
                    .unwrap_err()
                    .kind(),
                "forbidden"
            );
        }
        assert_eq!(
            read_content_path(dir.path(), uid, gid, 100)
                .unwrap_err()
                .kind(),
            "bad_request"
        );
    }

    #[tokio::test]
    async fn frames_lines_oversize_and_eof() {
        let (mut w, r) = tokio::io::duplex(64);
        let mut r = BufReader::with_capacity(8, r);
        tokio::spawn(async move {
            w.write_all(b"abc\r\n").await.unwrap();
            w.write_all(&[b'x'; 100]).await.unwrap();
            w.write_all(b"\nok\npartial").await.unwrap();
        });
        let t = Duration::from_secs(5);
        assert_eq!(
            read_frame(&mut r, 10, t, t).await.unwrap(),
            Frame::Line(b"abc".to_vec())
        );
        assert_eq!(
            read_frame(&mut r, 10, t, t).await.unwrap(),
            Frame::TooLarge { bytes: 100 }
        );
        assert_eq!(
            read_frame(&mut r, 10, t, t).await.unwrap(),
            Frame::Line(b"ok".to_vec())
        );
        assert_eq!(read_frame(&mut r, 10, t, t).await.unwrap(), Frame::Eof);
    }

    #[tokio::test]
    async fn silence_is_idle() {
        let (_w, r) = tokio::io::duplex(64);
        let mut r = BufReader::new(r);
        let t = Duration::from_millis(30);
        assert_eq!(read_frame(&mut r, 100, t, t).await.unwrap(), Frame::Idle);
    }

    #[tokio::test]
    async fn half_line_times_out() {
        let (mut w, r) = tokio::io::duplex(64);
        let mut r = BufReader::new(r);
        w.write_all(b"{\"op\":").await.unwrap();
        let f = read_frame(
            &mut r,
            100,
            Duration::from_millis(50),
            Duration::from_secs(600),
        );
        assert_eq!(f.await.unwrap(), Frame::TimedOut);
        drop(w);
    }
}

#[cfg(test)]
mod parse_prop {
    use super::*;
    use proptest::prelude::*;

    /// Every wire kind [`ProtocolError::kind`] may yield.
    const KINDS: &[&str] = &[
        "bad_json",
        "too_large",
        "bad_request",
        "unsupported_version",
        "unknown_op",
        "forbidden",
        "overloaded",
        "deadline",
        "shutting_down",
        "internal",
        "bad_session_dir",
        "unsafe_save_dir",
        "disk_full",
        "read_only",
        "io",
    ];

    /// The response line a daemon would write for this parse outcome: one line, valid JSON.
    fn check(line: &[u8]) -> Result<(), TestCaseError> {
        let (id, res) = parse_request(line);
        let resp = match &res {
            Ok(_) => ok_response(id.as_ref(), json!({})),
            Err(e) => {
                prop_assert!(KINDS.contains(&e.kind()), "{}", e.kind());
                error_response(id.as_ref(), e)
            }
        };
        let text = serde_json::to_string(&resp).unwrap();
        prop_assert!(!text.contains('\n'));
        let back: Value = serde_json::from_str(&text).unwrap();
        prop_assert!(back["ok"].is_boolean());
        Ok(())
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| json!(f)),
            any::<String>().prop_map(Value::from),
            Just(json!("/tmp")),
            Just(json!("relative/dir")),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    const FIELDS: &[&str] = &[
        "v",
        "op",
        "id",
        "tool",
        "args",
        "intent",
        "session_dir",
        "content",
        "content_b64",
        "content_path",
        "token_limit",
        "summarize_limit",
        "prefill_budget",
        "max_new_tokens",
        "preview_chars",
        "keep_binary_inline",
        "deadline_ms",
        "path",
        "question",
    ];

    proptest! {
        /// Arbitrary bytes: never a panic, always a response with a known kind.
        #[test]
        fn arbitrary_bytes(line in proptest::collection::vec(any::<u8>(), 0..512)) {
            check(&line)?;
        }

        /// Objects with the real field names holding values of any type.
        #[test]
        fn request_shaped_objects(
            op in prop_oneof![
                Just("guard".to_string()),
                Just("ask".to_string()),
                Just("count".to_string()),
                Just("status".to_string()),
                Just("shutdown".to_string()),
                "[a-z]{0,6}",
            ],
            fields in proptest::collection::vec((0..FIELDS.len(), json_value()), 0..8),
        ) {
            let mut obj = serde_json::Map::new();
            obj.insert("op".into(), json!(op));
            for (i, v) in fields {
                obj.insert(FIELDS[i].into(), v);
            }
            let line = serde_json::to_vec(&Value::Object(obj)).unwrap();
            check(&line)?;
        }

        /// A valid request with bytes flipped or cut.
        #[test]
        fn mutated_valid_request(
            cut in 0usize..200,
            flips in proptest::collection::vec((0usize..200, any::<u8>()), 0..4),
        ) {
            let mut line = br#"{"v":1,"op":"guard","id":7,"tool":"Bash","session_dir":"/tmp","content":"hello \u00e9 world","token_limit":10}"#.to_vec();
            for (i, b) in flips {
                let n = line.len();
                line[i % n] = b;
            }
            line.truncate(cut.min(line.len()));
            check(&line)?;
        }

        /// The framer on an arbitrary byte stream: lines never hold `\n`, never exceed `max`,
        /// and the stream always ends in `Eof`.
        #[test]
        fn framer_on_arbitrary_stream(
            data in proptest::collection::vec(prop_oneof![any::<u8>(), Just(b'\n'), Just(b'\r')], 0..600),
            max in 1usize..64,
            cap in 1usize..32,
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
            rt.block_on(async {
                let mut r = tokio::io::BufReader::with_capacity(cap, &data[..]);
                let mut frames = 0;
                loop {
                    let f = read_frame(&mut r, max, Duration::from_secs(5), Duration::from_secs(5))
                        .await
                        .unwrap();
                    match f {
                        Frame::Line(l) => {
                            prop_assert!(!l.contains(&b'\n'));
                            prop_assert!(l.len() <= max);
                        }
                        Frame::TooLarge { bytes } => prop_assert!(bytes > max),
                        Frame::Eof => break,
                        Frame::TimedOut | Frame::Idle => prop_assert!(false, "timed out on an in-memory stream"),
                    }
                    frames += 1;
                    prop_assert!(frames <= data.len() + 1);
                }
                Ok(())
            })?;
        }
    }
}
