//! The user's last request, read from the agent's transcript: the intent of a call whose
//! arguments say nothing of what it is for (Claude Code's `Read {file_path}`, Codex's bare
//! `{"command": …}`). The trial of session 53 fed six outputs through the Claude Code and
//! Codex hooks without an intent and kept 6 of 28 facts; the same files with one kept 12.
//!
//! Every payload of Claude Code, Codex and Gemini CLI names its transcript (`transcript_path`):
//!
//! - Claude Code: JSON lines; a user turn is `{"type":"user","message":{"role":"user",
//!   "content":…}}`, its content a string or blocks of which `{"type":"text","text":…}` are
//!   what the user wrote (`tool_result` blocks and `isMeta` lines are not).
//! - Codex (`~/.codex/sessions/…/rollout-….jsonl`): JSON lines `{"type":"event_msg",
//!   "payload":{"type":"user_message","message":…}}`, or a `response_item` whose payload is a
//!   `message` of role `user` with `input_text` content.
//! - Gemini CLI (`~/.gemini/tmp/<project>/chats/session-….json`): one JSON document whose
//!   `messages` are `{"type":"user","content":…}` (a string or parts `{"text":…}`).
//!
//! Text the agent itself adds to a user turn (`<environment_context>`, `<command-name>`,
//! `<system-reminder>`) starts with `<` and is skipped. Only the transcript's last
//! [`TAIL_BYTES`] are read for JSON lines; a one-document transcript longer than that is read
//! whole when it is at most [`MAX_DOC_BYTES`].

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

/// How much of a JSON-lines transcript's end is read for the last user turn (bytes): a turn's
/// tool calls and results follow it, and a large result is saved, not inlined, by the agents.
pub const TAIL_BYTES: u64 = 4 * 1024 * 1024;

/// Largest one-document transcript (Gemini CLI's) parsed whole (bytes).
pub const MAX_DOC_BYTES: u64 = 16 * 1024 * 1024;

/// The text of the last user turn in the transcript `payload` names, at most `max_chars`
/// characters (its start); `None` when there is no transcript path, the file cannot be read
/// or holds no user turn of text. Never fails: the call goes on without it.
pub fn last_user_request(payload: &Value, max_chars: usize) -> Option<String> {
    let path = payload.get("transcript_path").and_then(Value::as_str)?;
    let path = Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok().filter(|m| m.is_file())?.len();
    // The tail first: the last user turn of JSON lines is near the end (the whole file when
    // it is no longer than the tail).
    let from = len.saturating_sub(TAIL_BYTES);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).ok()?;
    if from == 0 {
        return last_in_doc(&tail, max_chars).or_else(|| last_in_lines(&tail, max_chars));
    }
    // A tail cut inside a line starts after that line.
    let found =
        memchr::memchr(b'\n', &tail).and_then(|nl| last_in_lines(&tail[nl + 1..], max_chars));
    if found.is_some() || len > MAX_DOC_BYTES {
        return found;
    }
    // One document (Gemini CLI's) longer than the tail: read whole.
    f.seek(SeekFrom::Start(0)).ok()?;
    let mut all = Vec::with_capacity(len as usize);
    f.read_to_end(&mut all).ok()?;
    last_in_doc(&all, max_chars)
}

/// The last user message of a one-document transcript (Gemini CLI's `messages`); `None` when
/// `text` is no such document.
fn last_in_doc(text: &[u8], max_chars: usize) -> Option<String> {
    if text.first() != Some(&b'{') {
        return None;
    }
    let doc = serde_json::from_slice::<Value>(text).ok()?;
    doc.get("messages")?
        .as_array()?
        .iter()
        .rev()
        .find_map(gemini_user_text)
        .map(|t| clip(&t, max_chars))
}

/// The last user turn of text among JSON lines (Claude Code's or Codex's; a Gemini CLI
/// message written one per line is read too).
fn last_in_lines(text: &[u8], max_chars: usize) -> Option<String> {
    text.split(|&b| b == b'\n')
        .rev()
        .filter(|l| l.first() == Some(&b'{'))
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .find_map(|v| {
            claude_user_text(&v)
                .or_else(|| codex_user_text(&v))
                .or_else(|| gemini_user_text(&v))
        })
        .map(|t| clip(&t, max_chars))
}

/// A Claude Code transcript line's user text (see the module docs).
fn claude_user_text(v: &Value) -> Option<String> {
    if v.get("type").and_then(Value::as_str) != Some("user")
        || v.get("isMeta").and_then(Value::as_bool) == Some(true)
    {
        return None;
    }
    let msg = v.get("message")?;
    if msg.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    match msg.get("content")? {
        Value::String(s) => written(s),
        Value::Array(blocks) => {
            if blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            {
                return None;
            }
            joined(blocks.iter().filter_map(|b| {
                (b.get("type").and_then(Value::as_str) == Some("text"))
                    .then(|| b.get("text").and_then(Value::as_str))
                    .flatten()
            }))
        }
        _ => None,
    }
}

/// A Codex rollout line's user text (see the module docs).
fn codex_user_text(v: &Value) -> Option<String> {
    let p = v.get("payload")?;
    let ptype = p.get("type").and_then(Value::as_str);
    match v.get("type").and_then(Value::as_str)? {
        "event_msg" if ptype == Some("user_message") => {
            written(p.get("message").and_then(Value::as_str)?)
        }
        "response_item"
            if ptype == Some("message")
                && p.get("role").and_then(Value::as_str) == Some("user") =>
        {
            joined(p.get("content")?.as_array()?.iter().filter_map(|b| {
                (b.get("type").and_then(Value::as_str) == Some("input_text"))
                    .then(|| b.get("text").and_then(Value::as_str))
                    .flatten()
            }))
        }
        _ => None,
    }
}

/// A Gemini CLI message's user text (see the module docs).
fn gemini_user_text(m: &Value) -> Option<String> {
    if m.get("type").and_then(Value::as_str) != Some("user") {
        return None;
    }
    match m.get("content")? {
        Value::String(s) => written(s),
        Value::Array(parts) => joined(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str)),
        ),
        _ => None,
    }
}

/// `s` when the user wrote it: not empty, not a tag the agent adds.
fn written(s: &str) -> Option<String> {
    let t = s.trim();
    (!t.is_empty() && !t.starts_with('<')).then(|| t.to_string())
}

/// The texts the user wrote, joined by a space; `None` when none is.
fn joined<'a>(texts: impl Iterator<Item = &'a str>) -> Option<String> {
    let parts: Vec<String> = texts.filter_map(written).collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// The first `max` characters of `s`.
fn clip(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_transcript(body: &str) -> (tempfile::TempDir, Value) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.jsonl");
        std::fs::write(&p, body).unwrap();
        let payload = json!({"transcript_path": p.to_str().unwrap()});
        (d, payload)
    }

    #[test]
    fn claude_codes_last_user_text_not_a_tool_result_or_meta() {
        let lines = [
            json!({"type":"user","message":{"role":"user","content":"first question"}}),
            json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":"which test fails in tests/test_api.py?"}]}}),
            json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Reading"}]}}),
            json!({"type":"user","isMeta":true,"message":{"role":"user","content":"Caveat: meta"}}),
            json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"big"}]}}),
        ];
        let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let (_d, p) = with_transcript(&body);
        assert_eq!(
            last_user_request(&p, 500).as_deref(),
            Some("which test fails in tests/test_api.py?")
        );
        assert_eq!(last_user_request(&p, 5).as_deref(), Some("which"));
    }

    #[test]
    fn codexs_user_message_and_geminis_last_user_message() {
        let lines = [
            json!({"type":"session_meta","payload":{"id":"s"}}),
            json!({"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]}}),
            json!({"type":"event_msg","payload":{"type":"user_message","message":"why does cargo build fail on linux?"}}),
            json!({"type":"response_item","payload":{"type":"function_call","name":"shell"}}),
        ];
        let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let (_d, p) = with_transcript(&body);
        assert_eq!(
            last_user_request(&p, 500).as_deref(),
            Some("why does cargo build fail on linux?")
        );
        let doc = json!({"sessionId":"s","messages":[
            {"type":"user","content":"old"},
            {"type":"user","content":[{"text":"list the slowest queries"}]},
            {"type":"gemini","content":"ok"}
        ]});
        let (_d, p) = with_transcript(&doc.to_string());
        assert_eq!(
            last_user_request(&p, 500).as_deref(),
            Some("list the slowest queries")
        );
    }

    #[test]
    fn a_transcript_longer_than_the_tail_is_read_from_its_end_or_whole_when_one_document() {
        // JSON lines: 5 MiB of tool results, then the request, found in the last 4 MiB.
        let filler = json!({"type":"user","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"x","content":"y".repeat(1 << 20)}]}});
        let mut body: String = (0..5).map(|_| format!("{filler}\n")).collect();
        body.push_str(&format!(
            "{}\n",
            json!({"type":"user","message":{"role":"user","content":"why is CI red?"}})
        ));
        let (_d, p) = with_transcript(&body);
        assert_eq!(
            last_user_request(&p, 500).as_deref(),
            Some("why is CI red?")
        );
        // One 5 MiB document: its request is near the start, read whole.
        let doc = json!({"sessionId":"s","messages":[
            {"type":"user","content":"which query is slowest?"},
            {"type":"gemini","content":"z".repeat(5 << 20)}
        ]});
        let (_d, p) = with_transcript(&doc.to_string());
        assert_eq!(
            last_user_request(&p, 500).as_deref(),
            Some("which query is slowest?")
        );
    }

    #[test]
    fn no_transcript_a_relative_path_or_garbage_is_no_request() {
        assert_eq!(last_user_request(&json!({}), 500), None);
        assert_eq!(
            last_user_request(&json!({"transcript_path": "t.jsonl"}), 500),
            None
        );
        let (_d, p) = with_transcript("not json\n{\"type\":\"user\"}\n\u{0}\u{1}");
        assert_eq!(last_user_request(&p, 500), None);
        let mut p = p;
        p["transcript_path"] = json!("/nonexistent/t.jsonl");
        assert_eq!(last_user_request(&p, 500), None);
    }
}
