//! Base64 files inside JSON string fields, also inside JSON documents held in string fields up
//! to [`MAX_NESTING`] deep: found ([`find_blobs`]), and saved and replaced by their
//! descriptions ([`replace_blobs`]).

use std::ops::Range;
use std::path::Path;

use super::{decode_file, is_b64_byte, split_data_uri, Blob, MAX_NESTING, MIN_BLOB_CHARS};
use crate::guard::{GuardError, SavedFile};

/// A blob found by [`scan`]: in a string literal, or inside a JSON document held in one.
#[derive(Debug)]
enum Hit {
    /// The literal at this byte range is a base64 file.
    Blob(Range<usize>, Blob),
    /// The literal at this byte range is a string (its decoded value here) holding blobs.
    Nested(Range<usize>, String, Vec<Hit>),
}

impl Hit {
    fn flatten(self, range: Option<&Range<usize>>, out: &mut Vec<(Range<usize>, Blob)>) {
        match self {
            Hit::Blob(r, b) => out.push((range.cloned().unwrap_or(r), b)),
            Hit::Nested(r, _, hits) => {
                let outer = range.cloned().unwrap_or(r);
                for h in hits {
                    h.flatten(Some(&outer), out);
                }
            }
        }
    }
}

/// Base64 files inside double-quoted string fields of `text` (JSON or JSON-like), at any depth
/// of JSON held in string fields up to [`MAX_NESTING`]: byte ranges of the whole quoted literals
/// of `text` (quotes included; for a nested blob, the outer literal that holds it) and the
/// decoded files, in order.
///
/// A candidate is a string of at least [`MIN_BLOB_CHARS`] chars, on one line, made of base64
/// characters (JSON escapes allowed) or a base64 `data:` URI, not all hex digits, that decodes to
/// a known file type. A longer string with an escaped quote (`\"`) is decoded and searched in
/// turn.
pub fn find_blobs(text: &str) -> Vec<(Range<usize>, Blob)> {
    let mut out = Vec::new();
    for h in scan(text, 0) {
        h.flatten(None, &mut out);
    }
    out
}

/// The blobs of `text` at nesting `depth` (see [`find_blobs`]).
fn scan(text: &str, depth: usize) -> Vec<Hit> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(q) = memchr::memchr(b'"', &b[i..]) {
        let open = i + q;
        let mut j = open + 1;
        let mut escaped = false;
        let close = loop {
            match b.get(j) {
                None => break None,
                Some(b'\\') => {
                    escaped = true;
                    j += 2;
                }
                Some(b'"') => break Some(j),
                Some(b'\n') => break None,
                Some(_) => j += 1,
            }
        };
        let Some(close) = close else {
            i = j.min(b.len());
            if i >= b.len() {
                break;
            }
            continue;
        };
        i = close + 1;
        let inner = &b[open + 1..close];
        if inner.len() < MIN_BLOB_CHARS {
            continue;
        }
        let decoded = || serde_json::from_str::<String>(&text[open..=close]).ok();
        let body_start = split_data_uri(inner).map_or(0, |(_, p)| inner.len() - p.len());
        let body = &inner[body_start..];
        if body.iter().all(|&c| is_b64_byte(c) || c == b'\\')
            && !body.iter().all(u8::is_ascii_hexdigit)
        {
            let owned;
            let value: &[u8] = if escaped {
                match decoded() {
                    Some(s) => {
                        owned = s;
                        owned.as_bytes()
                    }
                    None => continue,
                }
            } else {
                inner
            };
            if let Some(blob) = decode_file(value) {
                found.push(Hit::Blob(open..close + 1, blob));
            }
            continue;
        }
        // A JSON document (or JSON-like text) inside this string: its quotes are escaped.
        if escaped && depth < MAX_NESTING && memchr::memchr(b'"', inner).is_some() {
            if let Some(s) = decoded() {
                let hits = scan(&s, depth + 1);
                if !hits.is_empty() {
                    found.push(Hit::Nested(open..close + 1, s, hits));
                }
            }
        }
    }
    found
}

/// The outcome of [`replace_blobs`].
#[derive(Debug)]
pub struct Replaced {
    /// The text with each blob's string literal replaced by a quoted description.
    pub text: String,
    /// Files saved, in order.
    pub saved: Vec<SavedFile>,
    /// The first save failure (disk full, read-only), if any; its blobs were described as not
    /// saved.
    pub failure: Option<GuardError>,
}

/// Saves every blob [`find_blobs`] finds in `text` and replaces it by a JSON string holding its
/// description (so JSON stays valid; a nested one inside its re-encoded outer string, so the
/// outer JSON stays valid too). `None` when there is no blob.
///
/// # Errors
/// A request error ([`GuardError::is_request_error`]) from saving; other save errors are
/// reported in [`Replaced::failure`] and the blob is described as not saved.
pub fn replace_blobs(
    text: &str,
    session_dir: &Path,
    tool: &str,
) -> Result<Option<Replaced>, GuardError> {
    let hits = scan(text, 0);
    if hits.is_empty() {
        return Ok(None);
    }
    let mut r = Replaced {
        text: String::new(),
        saved: Vec::new(),
        failure: None,
    };
    r.text = rewrite(text, hits, session_dir, tool, &mut r)?;
    Ok(Some(r))
}

/// `text` with each hit replaced (see [`replace_blobs`]); saved files and failures go to `acc`.
fn rewrite(
    text: &str,
    hits: Vec<Hit>,
    session_dir: &Path,
    tool: &str,
    acc: &mut Replaced,
) -> Result<String, GuardError> {
    let mut out = String::with_capacity(text.len().min(1 << 20));
    let mut last = 0;
    for hit in hits {
        let range = match hit {
            Hit::Blob(range, blob) => {
                out.push_str(&text[last..range.start]);
                let desc = match blob.save(session_dir, tool) {
                    Ok((f, d)) => {
                        acc.saved.push(f);
                        d
                    }
                    Err(e) if e.is_request_error() => return Err(e),
                    Err(e) => {
                        let d = blob.describe(&format!("not saved: {}", e.kind()));
                        acc.failure.get_or_insert(e);
                        d
                    }
                };
                out.push('"');
                out.push_str(&desc);
                out.push('"');
                range
            }
            Hit::Nested(range, inner, hits) => {
                out.push_str(&text[last..range.start]);
                let replaced = rewrite(&inner, hits, session_dir, tool, acc)?;
                out.push_str(&serde_json::Value::String(replaced).to_string());
                range
            }
        };
        last = range.end;
    }
    out.push_str(&text[last..]);
    Ok(out)
}
