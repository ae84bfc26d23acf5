//! One `tools/call` result, guarded as a whole: its parts ([`split`]), its blobs saved decoded
//! ([`save_blobs`]), and the result the client gets instead ([`build`]).
//!
//! - Text blocks and embedded text resources are counted together (joined by `\n`).
//! - `image` / `audio` blocks and `resource` blobs are decoded from base64 and saved, typed by
//!   their magic bytes (declared type as the fallback), and replaced by a one-line description
//!   and a `resource_link` to the file.
//! - `structuredContent` that repeats the content (the spec asks servers that declare an
//!   `outputSchema` to send both; server-filesystem sends `{"content": <the text>}`) is counted
//!   once; other structured content is counted as JSON text beside the blocks.
//! - `isError`, `_meta`, `resultType` and any other field are kept. A summarized result has
//!   no `structuredContent`: kept, it would carry the summary a second time (twice the
//!   tokens), and the proxy does not show clients the `outputSchema` that would require it
//!   ([`super::tools::add_intent`]). A result only its blobs were taken out of keeps the
//!   `structuredContent` of a tool with an `outputSchema`, each blob replaced by its
//!   description; without one, repeated structured content is dropped.

use std::path::Path;

use rmcp::model::{ContentBlock, Resource, ResourceContents};
use serde_json::Value;

use super::tools::ToolInfo;
use crate::guard::binary::{decode_base64, Blob};
use crate::guard::save::{human_size, thousands};
use crate::guard::{GuardResponse, ResultKind, SavedFile};

/// Shortest string (chars) of `structuredContent` that counts as repeating a block; shorter
/// strings are field values such as a type or a MIME type (as `binary::MIN_BLOB_CHARS`).
pub const MIN_REPEAT_CHARS: usize = 64;

/// Most bytes of `structuredContent` besides its repeated strings for it to count as a
/// repetition of the content (keys, short values and punctuation of a wrapper object).
pub const MAX_WRAPPER_BYTES: usize = 2_048;

/// A base64 blob of the result.
#[derive(Debug, Clone)]
pub struct BlobPart {
    /// Index of its block in `content`.
    pub index: usize,
    /// The base64 text as sent.
    pub data: String,
    /// The declared media type (`mimeType`), if any.
    pub declared: Option<String>,
}

/// How `structuredContent` relates to the content blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum Structured {
    /// No `structuredContent`.
    Absent,
    /// It repeats the blocks (a text block's JSON, or the blocks' strings in a small wrapper):
    /// counted once.
    Repeats,
    /// Its own data, counted as this JSON text.
    Extra(String),
}

/// The guardable parts of one `CallToolResult`.
#[derive(Debug, Clone)]
pub struct Parts {
    /// Block index and text of each text block and embedded text resource, in order.
    pub texts: Vec<(usize, String)>,
    /// The base64 blobs, in order.
    pub blobs: Vec<BlobPart>,
    /// `structuredContent`, classified.
    pub structured: Structured,
    /// Bytes of everything counted: the joined text, the blobs' base64 and extra structured
    /// content. At or under the token limit the result passes through unchanged (every
    /// byte-level BPE token covers at least one byte).
    pub bytes: usize,
}

impl Parts {
    /// The text to guard: text blocks joined by `\n`, then extra structured content as JSON.
    pub fn text(&self) -> String {
        let mut t = self
            .texts
            .iter()
            .map(|(_, s)| s.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if let Structured::Extra(j) = &self.structured {
            if !t.is_empty() {
                t.push('\n');
            }
            t.push_str(j);
        }
        t
    }
}

/// Splits a `tools/call` result into its guardable parts; `None` when it is not a complete
/// `CallToolResult` with a `content` array (an `input_required` or task result, an error
/// object): such a result passes through as it is.
pub fn split(result: &Value) -> Option<Parts> {
    let obj = result.as_object()?;
    if obj
        .get("resultType")
        .is_some_and(|t| t.as_str() != Some("complete"))
    {
        return None;
    }
    let content = obj.get("content")?.as_array()?;
    let mut texts = Vec::new();
    let mut blobs = Vec::new();
    for (index, block) in content.iter().enumerate() {
        let Ok(b) = serde_json::from_value::<ContentBlock>(block.clone()) else {
            continue; // an unknown block type: kept as it is
        };
        match b {
            ContentBlock::Text(t) => texts.push((index, t.text)),
            ContentBlock::Image(i) => blobs.push(BlobPart {
                index,
                data: i.data,
                declared: Some(i.mime_type),
            }),
            ContentBlock::Audio(a) => blobs.push(BlobPart {
                index,
                data: a.data,
                declared: Some(a.mime_type),
            }),
            ContentBlock::Resource(r) => match r.resource {
                ResourceContents::TextResourceContents { text, .. } => texts.push((index, text)),
                ResourceContents::BlobResourceContents {
                    blob, mime_type, ..
                } => blobs.push(BlobPart {
                    index,
                    data: blob,
                    declared: mime_type,
                }),
                _ => {}
            },
            ContentBlock::ResourceLink(_) => {}
            _ => {}
        }
    }
    let structured = match obj.get("structuredContent") {
        None => Structured::Absent,
        Some(s) if repeats(s, &texts, &blobs) => Structured::Repeats,
        Some(s) => Structured::Extra(s.to_string()),
    };
    let text_bytes: usize =
        texts.iter().map(|(_, t)| t.len()).sum::<usize>() + texts.len().saturating_sub(1);
    let extra = match &structured {
        Structured::Extra(j) => j.len() + 1,
        _ => 0,
    };
    let bytes = text_bytes + blobs.iter().map(|b| b.data.len()).sum::<usize>() + extra;
    Some(Parts {
        texts,
        blobs,
        structured,
        bytes,
    })
}

fn string_leaves<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| string_leaves(x, out)),
        Value::Object(m) => m.values().for_each(|x| string_leaves(x, out)),
        _ => {}
    }
}

/// True when `structured` repeats the blocks: it equals a text block parsed as JSON, or every
/// string of it of at least [`MIN_REPEAT_CHARS`] chars is a block's text (or part of it) or a
/// blob's base64, there is at least one, and the rest is at most [`MAX_WRAPPER_BYTES`].
fn repeats(structured: &Value, texts: &[(usize, String)], blobs: &[BlobPart]) -> bool {
    for (_, t) in texts {
        let s = t.trim_start();
        if (s.starts_with('{') || s.starts_with('['))
            && serde_json::from_str::<Value>(s).is_ok_and(|v| &v == structured)
        {
            return true;
        }
    }
    let mut leaves = Vec::new();
    string_leaves(structured, &mut leaves);
    let long: Vec<&str> = leaves
        .into_iter()
        .filter(|s| s.chars().count() >= MIN_REPEAT_CHARS)
        .collect();
    if long.is_empty() {
        return false;
    }
    let known =
        |s: &str| texts.iter().any(|(_, t)| t.contains(s)) || blobs.iter().any(|b| b.data == s);
    if !long.iter().all(|s| known(s)) {
        return false;
    }
    // The wrapper's size: the structure serialized with its repeated strings emptied.
    let mut wrapper = structured.clone();
    replace_strings(&mut wrapper, &|s: &str| {
        (s.chars().count() >= MIN_REPEAT_CHARS).then(String::new)
    });
    wrapper.to_string().len() <= MAX_WRAPPER_BYTES
}

/// A blob after saving: its file and description, or the description of why it was not saved.
#[derive(Debug, Clone)]
pub struct SavedBlob {
    /// Index of its block in `content`.
    pub index: usize,
    /// The base64 text it replaces (for `structuredContent`).
    pub data: String,
    /// The saved file, when saving worked.
    pub file: Option<SavedFile>,
    /// `[image/png 200x120, 28,627 bytes decoded from base64, saved to /abs/…png]`, or with
    /// `not saved: <kind>` / `not base64`.
    pub description: String,
}

/// Decodes and saves every blob under `<session_dir>/long_responses/` (named after `tool`).
/// A blob that is not base64 or cannot be saved is described as such; nothing fails.
pub fn save_blobs(parts: &Parts, session_dir: &Path, tool: &str) -> Vec<SavedBlob> {
    parts
        .blobs
        .iter()
        .map(|b| {
            let Some(bytes) = decode_base64(b.data.as_bytes()) else {
                return SavedBlob {
                    index: b.index,
                    data: b.data.clone(),
                    file: None,
                    description: format!(
                        "[{} bytes of {} that is not base64; not saved]",
                        thousands(b.data.len() as u64),
                        b.declared.as_deref().unwrap_or("data")
                    ),
                };
            };
            let blob = Blob::from_decoded(bytes, b.declared.as_deref());
            match blob.save(session_dir, tool) {
                Ok((f, _)) => {
                    let abs = session_dir.join(&f.path);
                    SavedBlob {
                        index: b.index,
                        data: b.data.clone(),
                        description: blob.describe(&format!("saved to {}", abs.display())),
                        file: Some(f),
                    }
                }
                Err(e) => SavedBlob {
                    index: b.index,
                    data: b.data.clone(),
                    file: None,
                    description: blob.describe(&format!("not saved: {}: {e}", e.kind())),
                },
            }
        })
        .collect()
}

/// `file://` URI of an absolute path, percent-encoding every byte outside
/// `[A-Za-z0-9-._~/]` (RFC 3986 unreserved characters and the path separator).
pub fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// A `resource_link` content block to a saved file (`file://` URI, name, type, size).
pub fn resource_link(session_dir: &Path, f: &SavedFile, tool: &str) -> Value {
    let abs = session_dir.join(&f.path);
    let name = abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| f.path.clone());
    let r = Resource::new(file_uri(&abs), name)
        .with_mime_type(f.media_type.clone())
        .with_size(f.bytes)
        .with_description(format!(
            "Full result of {tool}, saved by toolsum ({}, {} bytes)",
            human_size(f.bytes),
            thousands(f.bytes)
        ));
    serde_json::to_value(ContentBlock::ResourceLink(r)).expect("a content block serializes")
}

/// `text` with each saved file's session-relative path made absolute (the client's cwd need
/// not be the session's).
pub fn absolute_pointers(text: &str, session_dir: &Path, saved: &[SavedFile]) -> String {
    let mut t = text.to_string();
    for f in saved {
        let abs = session_dir.join(&f.path);
        t = t.replace(&f.path, &abs.display().to_string());
    }
    t
}

fn text_block(text: String) -> Value {
    serde_json::to_value(ContentBlock::text(text)).expect("a content block serializes")
}

fn replace_strings(v: &mut Value, f: &dyn Fn(&str) -> Option<String>) {
    match v {
        Value::String(s) => {
            if let Some(n) = f(s) {
                *s = n;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| replace_strings(x, f)),
        Value::Object(m) => m.values_mut().for_each(|x| replace_strings(x, f)),
        _ => {}
    }
}

/// The result the client gets: `result` with its text blocks replaced by `text` (the guard's
/// answer for [`Parts::text`], unless it passed through) plus a `resource_link` per saved
/// file, each blob replaced by its description and a `resource_link`, other blocks and fields
/// kept, and `structuredContent` handled as the module docs say.
pub fn build(
    result: &Value,
    parts: &Parts,
    text: Option<&GuardResponse>,
    blobs: &[SavedBlob],
    session_dir: &Path,
    info: ToolInfo,
    tool: &str,
) -> Value {
    let mut out = result.clone();
    let summary = text.filter(|r| r.kind != ResultKind::Passthrough);
    let summary_text = summary.map(|r| absolute_pointers(&r.text, session_dir, &r.saved));
    let content = result["content"].as_array().cloned().unwrap_or_default();
    let first_text = parts.texts.first().map(|(i, _)| *i);
    let mut blocks = Vec::with_capacity(content.len() + 2);
    for (i, block) in content.into_iter().enumerate() {
        if let Some(b) = blobs.iter().find(|b| b.index == i) {
            let mut desc = b.description.clone();
            if b.file.is_some() {
                desc.push_str("\nUse Read on that file to view it; its bytes are not shown here.");
            }
            blocks.push(text_block(desc));
            if let Some(f) = &b.file {
                blocks.push(resource_link(session_dir, f, tool));
            }
            continue;
        }
        let is_text = parts.texts.iter().any(|(j, _)| *j == i);
        match (&summary_text, is_text) {
            (Some(t), true) if first_text == Some(i) => {
                blocks.push(text_block(t.clone()));
                for f in &summary.expect("summary_text implies summary").saved {
                    blocks.push(resource_link(session_dir, f, tool));
                }
            }
            (Some(_), true) => {}
            _ => blocks.push(block),
        }
    }
    // Extra structured content alone (no text block) was guarded too: its answer goes last.
    if let (Some(t), None) = (&summary_text, first_text) {
        blocks.push(text_block(t.clone()));
        for f in &summary.expect("summary_text implies summary").saved {
            blocks.push(resource_link(session_dir, f, tool));
        }
    }
    out["content"] = Value::Array(blocks);

    let Some(obj) = out.as_object_mut() else {
        return out;
    };
    let summarized = summary_text.is_some();
    match (&parts.structured, info.has_output_schema) {
        (Structured::Absent, _) => {}
        (Structured::Repeats, true) if summarized => {
            obj.remove("structuredContent");
        }
        (Structured::Repeats, true) => {
            // Only blobs were taken out: each is replaced by its description.
            if let Some(s) = obj.get_mut("structuredContent") {
                let f = |leaf: &str| -> Option<String> {
                    blobs
                        .iter()
                        .find(|b| b.data == leaf)
                        .map(|b| b.description.clone())
                };
                replace_strings(s, &f);
            }
        }
        (Structured::Repeats, false) => {
            if summarized || !blobs.is_empty() {
                obj.remove("structuredContent");
            }
        }
        (Structured::Extra(_), _) => {
            if summarized {
                obj.remove("structuredContent");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::{Timings, TokenStats};
    use base64::Engine as _;
    use serde_json::json;

    fn summary(path: &str) -> GuardResponse {
        GuardResponse {
            ok: true,
            kind: ResultKind::Summary,
            text: format!("Status: failed\n\nFull response saved to: {path} (1.0 KB, 1,024 bytes)"),
            saved: vec![SavedFile {
                path: path.into(),
                bytes: 1024,
                media_type: "text/plain".into(),
            }],
            tokens: TokenStats::default(),
            timings_ms: Timings::default(),
            model: None,
            reason: None,
            ungrounded_dropped: 0,
            content_kind: None,
            encoding: None,
        }
    }

    #[test]
    fn text_blocks_count_together_and_wrapped_structured_content_once() {
        // Escapes make the serialized structure longer than the text: still a repetition.
        let log = "ERROR \"boom\"\tat\n".repeat(1_000);
        let r = json!({"content": [{"type": "text", "text": log}], "structuredContent": {"content": log}});
        let p = split(&r).unwrap();
        assert_eq!(p.structured, Structured::Repeats);
        assert_eq!(p.bytes, log.len());
        assert_eq!(p.text(), log);
        // JSON text repeated as structured content.
        let r = json!({"content": [{"type": "text", "text": "{\"a\": [1, 2]}"}, {"type": "text", "text": "more"}], "structuredContent": {"a": [1, 2]}});
        let p = split(&r).unwrap();
        assert_eq!(p.structured, Structured::Repeats);
        assert_eq!(p.text(), "{\"a\": [1, 2]}\nmore");
        // Structured data of its own is counted as JSON.
        let r = json!({"content": [{"type": "text", "text": "see data"}], "structuredContent": {"rows": [1, 2, 3]}});
        let p = split(&r).unwrap();
        assert_eq!(p.structured, Structured::Extra("{\"rows\":[1,2,3]}".into()));
        assert_eq!(p.text(), "see data\n{\"rows\":[1,2,3]}");
        // Not a complete CallToolResult: passed through.
        assert!(split(&json!({"resultType": "input_required", "inputRequests": {}})).is_none());
        assert!(split(&json!({"task": {"taskId": "t"}})).is_none());
    }

    #[test]
    fn guarded_result_keeps_fields_links_the_file_and_shortens_structured_content() {
        let d = tempfile::tempdir().unwrap();
        let log = "ERROR boom at step 7\n".repeat(100);
        let r = json!({"content": [{"type": "text", "text": log}], "structuredContent": {"content": log},
                       "isError": true, "_meta": {"k": 1}, "resultType": "complete"});
        let p = split(&r).unwrap();
        let s = summary("long_responses/20261201T000000.000_read_text_file.txt");
        let info = ToolInfo {
            has_output_schema: true,
            own_intent: false,
        };
        let out = build(&r, &p, Some(&s), &[], d.path(), info, "read_text_file");
        let abs = d
            .path()
            .join("long_responses/20261201T000000.000_read_text_file.txt");
        let c = out["content"].as_array().unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0]["type"], "text");
        let t = c[0]["text"].as_str().unwrap();
        assert!(
            t.contains(&format!("Full response saved to: {}", abs.display())),
            "{t}"
        );
        assert_eq!(c[1]["type"], "resource_link");
        assert_eq!(c[1]["uri"], file_uri(&abs));
        assert_eq!(c[1]["name"], "20261201T000000.000_read_text_file.txt");
        assert_eq!(c[1]["size"], 1024);
        assert_eq!(out["isError"], true);
        assert_eq!(out["_meta"], json!({"k": 1}));
        assert_eq!(out["resultType"], "complete");
        assert!(
            out.get("structuredContent").is_none(),
            "the summary is sent once, not again as structured content"
        );
        // Without an outputSchema the repetition is dropped too.
        let out = build(&r, &p, Some(&s), &[], d.path(), ToolInfo::default(), "t");
        assert!(out.get("structuredContent").is_none());
        // Structured content of its own (not the text again) is summarized with the text and
        // dropped, schema or not: the summary stands for it.
        let rows: Vec<Value> = (0..200)
            .map(|i| json!({"id": i, "state": "ok", "note": "x".repeat(40)}))
            .collect();
        let r = json!({"content": [{"type": "text", "text": "see rows"}],
                       "structuredContent": {"rows": rows}});
        let p = split(&r).unwrap();
        assert!(matches!(p.structured, Structured::Extra(_)));
        for info in [info, ToolInfo::default()] {
            let out = build(&r, &p, Some(&s), &[], d.path(), info, "t");
            assert!(out.get("structuredContent").is_none(), "{info:?}");
            assert!(out["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("Full response saved to:"));
        }
    }

    #[test]
    fn blobs_are_saved_decoded_and_linked() {
        let d = tempfile::tempdir().unwrap();
        let png = crate::guard::binary::tests::png(30, 20);
        let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
        let item = json!({"type": "image", "data": b64, "mimeType": "image/png"});
        let r = json!({"content": [item.clone(), {"type": "text", "text": "a screenshot"}],
                       "structuredContent": {"content": [item]}});
        let p = split(&r).unwrap();
        assert_eq!(p.structured, Structured::Repeats);
        assert_eq!(p.bytes, b64.len() + "a screenshot".len());
        let saved = save_blobs(&p, d.path(), "read_media_file");
        let f = saved[0].file.as_ref().unwrap();
        assert_eq!(std::fs::read(d.path().join(&f.path)).unwrap(), png);
        assert_eq!(f.media_type, "image/png");
        let info = ToolInfo {
            has_output_schema: true,
            own_intent: false,
        };
        let out = build(&r, &p, None, &saved, d.path(), info, "read_media_file");
        let c = out["content"].as_array().unwrap();
        assert!(
            c[0]["text"]
                .as_str()
                .unwrap()
                .starts_with("[image/png 30x20, "),
            "{c:?}"
        );
        assert_eq!(c[1]["type"], "resource_link");
        assert_eq!(c[1]["mimeType"], "image/png");
        assert_eq!(c[2], json!({"type": "text", "text": "a screenshot"}));
        let sdata = out["structuredContent"]["content"][0]["data"]
            .as_str()
            .unwrap();
        assert!(sdata.starts_with("[image/png 30x20"), "{sdata}");
        assert!(!out.to_string().contains(&b64[..100]));
    }

    #[test]
    fn file_uris_are_percent_encoded() {
        assert_eq!(
            file_uri(Path::new("/tmp/a b/ü%.txt")),
            "file:///tmp/a%20b/%C3%BC%25.txt"
        );
    }
}
