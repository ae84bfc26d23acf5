//! Binary content in tool results: detect it, save it decoded, describe it.
//!
//! Three shapes are handled, at every size (this step runs before counting):
//! - the whole result is base64 (plain, line-wrapped, a JSON string, or a `data:` URI) of a
//!   known file type ([`whole`]);
//! - the whole result is raw non-text bytes: NUL bytes or many invalid UTF-8 bytes ([`whole`]);
//! - base64 files inside JSON string fields, such as MCP content blocks
//!   `{"type":"image","data":"iVBOR…","mimeType":"image/png"}` ([`find_blobs`], [`replace_blobs`]).
//!
//! "Known file type" means the magic bytes are recognised by the `infer` crate (PNG, JPEG, GIF,
//! WebP, PDF, ZIP, GZIP, ...), excluding its text matchers (HTML, XML, shell scripts). A
//! `data:` URI also counts when it declares a non-text media type.

use std::ops::Range;
use std::path::Path;

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;

use super::save::{self, thousands};
use super::{GuardError, SavedFile};

/// Shortest base64 string field (in chars) inside text that is tried as a file; shorter strings
/// are ids and hashes, not files. 64 chars decode to 48 bytes, enough for any magic number.
pub const MIN_BLOB_CHARS: usize = 64;

/// Raw results whose first this many bytes contain a NUL are binary (git's heuristic, 8,000 bytes).
const NUL_SCAN_BYTES: usize = 8_000;

/// Raw results with more than 1 in this many bytes invalid UTF-8 (or NUL) are binary (10 %);
/// fewer are text with a few bad bytes, decoded lossily.
const INVALID_RATIO_DIVISOR: usize = 10;

/// Where a blob came from, for its description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Decoded from base64 text.
    Base64,
    /// Raw bytes that are not text.
    Raw,
}

/// A file found in a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// The decoded (or raw) bytes, as saved.
    pub bytes: Vec<u8>,
    /// Media type, e.g. `image/png`; `application/octet-stream` when unknown.
    pub media_type: String,
    /// File extension for the saved copy, e.g. `png`; `bin` when unknown.
    pub ext: String,
    /// Image width × height in pixels, when the blob is an image `imagesize` can read.
    pub dims: Option<(usize, usize)>,
    /// How it was found.
    pub origin: Origin,
}

impl Blob {
    fn new(bytes: Vec<u8>, media_type: String, ext: String, origin: Origin) -> Self {
        let dims = imagesize::blob_size(&bytes)
            .ok()
            .map(|s| (s.width, s.height));
        Blob {
            bytes,
            media_type,
            ext,
            dims,
            origin,
        }
    }

    /// A one-line description: `[image/png 200x120, 28,627 bytes decoded from base64, saved to
    /// long_responses/….png]`, with `where_` as the last part.
    pub fn describe(&self, where_: &str) -> String {
        let dims = self
            .dims
            .map(|(w, h)| format!(" {w}x{h}"))
            .unwrap_or_default();
        let from = match self.origin {
            Origin::Base64 => " decoded from base64",
            Origin::Raw => " of raw binary data",
        };
        format!(
            "[{}{dims}, {} bytes{from}, {where_}]",
            self.media_type,
            thousands(self.bytes.len() as u64)
        )
    }

    /// Saves the blob under `long_responses/` and returns the file and its description.
    ///
    /// # Errors
    /// As [`save::save`].
    pub fn save(&self, session_dir: &Path, tool: &str) -> Result<(SavedFile, String), GuardError> {
        let f = save::save(session_dir, tool, &self.bytes, &self.ext, &self.media_type)?;
        let d = self.describe(&format!("saved to {}", f.path));
        Ok((f, d))
    }
}

impl Blob {
    /// A file decoded from base64 that arrived with a declared media type (an MCP `image`,
    /// `audio` or `resource` blob): typed by its magic bytes when `infer` knows them, else by
    /// the declared type (sanitized: `[A-Za-z0-9/.+-]`, at most 64 characters), else
    /// `application/octet-stream`. The extension follows the type (`bin` when unknown).
    pub fn from_decoded(bytes: Vec<u8>, declared: Option<&str>) -> Blob {
        if let Some((mime, ext)) = sniff(&bytes) {
            return Blob::new(bytes, mime.into(), ext.into(), Origin::Base64);
        }
        let declared: String = declared
            .unwrap_or("")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '+' | '-'))
            .take(64)
            .collect();
        if declared.is_empty() || !declared.contains('/') {
            return Blob::new(
                bytes,
                "application/octet-stream".into(),
                "bin".into(),
                Origin::Base64,
            );
        }
        let ext = declared_ext(&declared);
        Blob::new(bytes, declared, ext, Origin::Base64)
    }
}

/// The extension of a declared media type: `audio/x-wav` → `x-wav`, `image/svg+xml` → `svg`.
fn declared_ext(declared: &str) -> String {
    declared
        .rsplit('/')
        .next()
        .unwrap_or("bin")
        .split('+')
        .next()
        .unwrap_or("bin")
        .to_string()
}

/// Media type and extension of `bytes` when `infer` knows their magic (text types excluded).
pub fn sniff(bytes: &[u8]) -> Option<(&'static str, &'static str)> {
    infer::get(bytes)
        .filter(|t| t.matcher_type() != infer::MatcherType::Text)
        .map(|t| (t.mime_type(), t.extension()))
}

fn engine(url_safe: bool) -> GeneralPurpose {
    let cfg = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    if url_safe {
        GeneralPurpose::new(&alphabet::URL_SAFE, cfg)
    } else {
        GeneralPurpose::new(&alphabet::STANDARD, cfg)
    }
}

fn is_b64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_' | b'=')
}

/// Decodes base64 (standard or URL-safe alphabet, padding optional, `\n`/`\r` line breaks
/// allowed). `None` when `s` is not base64.
pub fn decode_base64(s: &[u8]) -> Option<Vec<u8>> {
    let mut compact = Vec::with_capacity(s.len());
    let (mut std_chars, mut url_chars) = (false, false);
    for &b in s {
        match b {
            b'\n' | b'\r' => continue,
            b'+' | b'/' => std_chars = true,
            b'-' | b'_' => url_chars = true,
            _ if is_b64_byte(b) => {}
            _ => return None,
        }
        compact.push(b);
    }
    if compact.is_empty() || (std_chars && url_chars) {
        return None;
    }
    engine(url_chars).decode(&compact).ok()
}

/// Splits a `data:` URI into its declared media type and base64 payload
/// (`data:image/png;base64,iVBOR…`). `None` when `s` is not a base64 `data:` URI.
pub fn split_data_uri(s: &[u8]) -> Option<(&str, &[u8])> {
    let rest = s.strip_prefix(b"data:")?;
    let comma = memchr::memchr(b',', &rest[..rest.len().min(256)])?;
    let header = std::str::from_utf8(&rest[..comma]).ok()?;
    let mut parts = header.split(';');
    let media = parts.next().unwrap_or("");
    if !parts.any(|p| p.eq_ignore_ascii_case("base64")) {
        return None;
    }
    Some((media, &rest[comma + 1..]))
}

fn is_textual_media(m: &str) -> bool {
    let m = m.to_ascii_lowercase();
    m.is_empty()
        || m.starts_with("text/")
        || m.ends_with("json")
        || m.ends_with("xml")
        || m.ends_with("javascript")
}

/// Decodes one base64 or `data:` URI string into a known file, or `None`.
fn decode_file(s: &[u8]) -> Option<Blob> {
    if let Some((declared, payload)) = split_data_uri(s) {
        let bytes = decode_base64(payload)?;
        if let Some((mime, ext)) = sniff(&bytes) {
            return Some(Blob::new(bytes, mime.into(), ext.into(), Origin::Base64));
        }
        if is_textual_media(declared) {
            return None;
        }
        // The declared type is untrusted text that ends up in a description inside JSON.
        let declared: String = declared
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '+' | '-'))
            .take(64)
            .collect();
        let ext = declared_ext(&declared);
        return Some(Blob::new(bytes, declared.to_string(), ext, Origin::Base64));
    }
    let bytes = decode_base64(s)?;
    let (mime, ext) = sniff(&bytes)?;
    Some(Blob::new(bytes, mime.into(), ext.into(), Origin::Base64))
}

/// True when `content` is raw binary rather than text: a NUL in its first 8,000 bytes, or more
/// than 10 % of its bytes NUL or invalid UTF-8.
pub fn is_raw_binary(content: &[u8]) -> bool {
    if memchr::memchr(0, &content[..content.len().min(NUL_SCAN_BYTES)]).is_some() {
        return true;
    }
    let mut bad = memchr::memchr_iter(0, content).count();
    for chunk in content.utf8_chunks() {
        bad += chunk.invalid().len();
    }
    bad * INVALID_RATIO_DIVISOR > content.len()
}

/// The whole result as one file: base64 (plain, wrapped, JSON string or `data:` URI) of a known
/// type, or raw non-text bytes. `None` for text.
pub fn whole(content: &[u8]) -> Option<Blob> {
    if content.is_empty() {
        return None;
    }
    if is_raw_binary(content) {
        let (mime, ext) = sniff(content).unwrap_or(("application/octet-stream", "bin"));
        return Some(Blob::new(
            content.to_vec(),
            mime.into(),
            ext.into(),
            Origin::Raw,
        ));
    }
    let start = content.iter().position(|b| !b.is_ascii_whitespace())?;
    let end = content.iter().rposition(|b| !b.is_ascii_whitespace())? + 1;
    let mut s = &content[start..end];
    let unquoted;
    if s.len() >= 2 && s[0] == b'"' && s[s.len() - 1] == b'"' {
        unquoted = serde_json::from_slice::<String>(s).ok()?;
        s = unquoted.as_bytes();
    }
    decode_file(s)
}

/// Base64 files inside double-quoted string fields of `text` (JSON or JSON-like): byte ranges of
/// the whole quoted literals (quotes included) and the decoded files, in order.
///
/// A candidate is a string of at least [`MIN_BLOB_CHARS`] chars, on one line, made of base64
/// characters (JSON escapes allowed) or a base64 `data:` URI, not all hex digits, that decodes to
/// a known file type.
pub fn find_blobs(text: &str) -> Vec<(Range<usize>, Blob)> {
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
        let body_start = split_data_uri(inner).map_or(0, |(_, p)| inner.len() - p.len());
        if !inner[body_start..]
            .iter()
            .all(|&c| is_b64_byte(c) || c == b'\\')
            || inner[body_start..].iter().all(u8::is_ascii_hexdigit)
        {
            continue;
        }
        let owned;
        let value: &[u8] = if escaped {
            match serde_json::from_slice::<String>(&b[open..=close]) {
                Ok(s) => {
                    owned = s;
                    owned.as_bytes()
                }
                Err(_) => continue,
            }
        } else {
            inner
        };
        if let Some(blob) = decode_file(value) {
            found.push((open..close + 1, blob));
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
/// description (so JSON stays valid). `None` when there is no blob.
///
/// # Errors
/// A request error ([`GuardError::is_request_error`]) from saving; other save errors are
/// reported in [`Replaced::failure`] and the blob is described as not saved.
pub fn replace_blobs(
    text: &str,
    session_dir: &Path,
    tool: &str,
) -> Result<Option<Replaced>, GuardError> {
    let blobs = find_blobs(text);
    if blobs.is_empty() {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len().min(1 << 20));
    let mut saved = Vec::new();
    let mut failure = None;
    let mut last = 0;
    for (range, blob) in blobs {
        out.push_str(&text[last..range.start]);
        let desc = match blob.save(session_dir, tool) {
            Ok((f, d)) => {
                saved.push(f);
                d
            }
            Err(e) if e.is_request_error() => return Err(e),
            Err(e) => {
                let d = blob.describe(&format!("not saved: {}", e.kind()));
                failure.get_or_insert(e);
                d
            }
        };
        out.push('"');
        out.push_str(&desc);
        out.push('"');
        last = range.end;
    }
    out.push_str(&text[last..]);
    Ok(Some(Replaced {
        text: out,
        saved,
        failure,
    }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;

    /// A valid `w`×`h` PNG built in memory (8-bit grayscale, stored zlib blocks, real CRCs).
    pub(crate) fn png(w: u32, h: u32) -> Vec<u8> {
        fn crc32(data: &[u8]) -> u32 {
            let mut c = 0xffff_ffffu32;
            for &b in data {
                c ^= u32::from(b);
                for _ in 0..8 {
                    c = if c & 1 != 0 {
                        0xedb8_8320 ^ (c >> 1)
                    } else {
                        c >> 1
                    };
                }
            }
            !c
        }
        fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let mut body = kind.to_vec();
            body.extend_from_slice(data);
            out.extend_from_slice(&body);
            out.extend_from_slice(&crc32(&body).to_be_bytes());
        }
        let mut raw = Vec::new();
        for y in 0..h {
            raw.push(0u8);
            raw.extend((0..w).map(|x| ((x * 7 + y * 13) % 251) as u8));
        }
        let mut z = vec![0x78, 0x01];
        for (i, block) in raw.chunks(65_535).enumerate() {
            let last = (i + 1) * 65_535 >= raw.len();
            z.push(u8::from(last));
            let n = block.len() as u16;
            z.extend_from_slice(&n.to_le_bytes());
            z.extend_from_slice(&(!n).to_le_bytes());
            z.extend_from_slice(block);
        }
        let (mut a, mut b) = (1u32, 0u32);
        for &x in &raw {
            a = (a + u32::from(x)) % 65_521;
            b = (b + a) % 65_521;
        }
        z.extend_from_slice(&((b << 16) | a).to_be_bytes());
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = Vec::new();
        ihdr.extend_from_slice(&w.to_be_bytes());
        ihdr.extend_from_slice(&h.to_be_bytes());
        ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
        chunk(&mut out, b"IHDR", &ihdr);
        chunk(&mut out, b"IDAT", &z);
        chunk(&mut out, b"IEND", &[]);
        out
    }

    fn corpus(name: &str) -> Vec<u8> {
        crate::guard::test_corpus(name)
    }

    #[test]
    fn plain_base64_png() {
        let p = png(200, 120);
        let b64 = STANDARD.encode(&p);
        let blob = whole(b64.as_bytes()).expect("png");
        assert_eq!(blob.media_type, "image/png");
        assert_eq!(blob.ext, "png");
        assert_eq!(blob.dims, Some((200, 120)));
        assert_eq!(blob.bytes, p);
        // Line-wrapped at 76 chars with a trailing newline, and as a JSON string.
        let wrapped: String = b64
            .as_bytes()
            .chunks(76)
            .map(|c| format!("{}\n", std::str::from_utf8(c).unwrap()))
            .collect();
        assert_eq!(whole(wrapped.as_bytes()).unwrap().bytes, p);
        assert_eq!(whole(format!("\"{b64}\"").as_bytes()).unwrap().bytes, p);
    }

    #[test]
    fn data_uri_png() {
        let p = png(3, 2);
        let uri = format!("data:image/png;base64,{}", STANDARD.encode(&p));
        let blob = whole(uri.as_bytes()).unwrap();
        assert_eq!(
            (blob.media_type.as_str(), blob.dims),
            ("image/png", Some((3, 2)))
        );
        // A declared type cannot inject quotes into the description.
        let odd = format!("data:app/x\"y;base64,{}", STANDARD.encode([1u8; 64]));
        assert_eq!(whole(odd.as_bytes()).unwrap().media_type, "app/xy");
        // A text data: URI is not a file.
        let t = format!("data:text/plain;base64,{}", STANDARD.encode("hello world"));
        assert!(whole(t.as_bytes()).is_none());
    }

    #[test]
    fn text_is_not_binary() {
        assert!(whole(b"hello world\n").is_none());
        assert!(
            whole(b"SGVsbG8gd29ybGQ=").is_none(),
            "base64 of text stays text"
        );
        assert!(whole(b"").is_none());
        assert!(whole("日本語のログ\n".as_bytes()).is_none());
        // A few invalid bytes: still text.
        let mut t = b"a long enough line of ordinary log text ".repeat(10);
        t.push(0xff);
        assert!(whole(&t).is_none());
    }

    #[test]
    fn raw_bytes_are_binary() {
        let mut nul = b"abc".to_vec();
        nul.push(0);
        let blob = whole(&nul).unwrap();
        assert_eq!(blob.origin, Origin::Raw);
        assert_eq!(blob.media_type, "application/octet-stream");
        assert_eq!(blob.bytes, nul);
        let junk: Vec<u8> = (0..1000u32).map(|i| (i * 37 % 128 + 128) as u8).collect();
        assert!(whole(&junk).is_some());
        let raw_png = png(4, 4);
        let b = whole(&raw_png).unwrap();
        assert_eq!((b.media_type.as_str(), b.dims), ("image/png", Some((4, 4))));
        assert!(b.describe("x").contains("of raw binary data"));
    }

    #[test]
    fn blobs_in_mcp_json() {
        let p = png(200, 120);
        let j = serde_json::json!({"content": [
            {"type": "text", "text": "### Result\nTook a screenshot"},
            {"type": "image", "data": STANDARD.encode(&p), "mimeType": "image/png"},
            {"type": "text", "text": "x".repeat(500)},
            {"type": "resource", "blob": format!("data:image/png;base64,{}", STANDARD.encode(png(1, 1)))},
            {"sha": "ab".repeat(64)},
        ]});
        let text = serde_json::to_string_pretty(&j).unwrap();
        let found = find_blobs(&text);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].1.dims, Some((200, 120)));
        assert_eq!(found[1].1.dims, Some((1, 1)));
        let d = tempfile::tempdir().unwrap();
        let r = replace_blobs(&text, d.path(), "mcp__pw__shot")
            .unwrap()
            .unwrap();
        assert!(r.failure.is_none());
        assert_eq!(r.saved.len(), 2);
        assert_eq!(std::fs::read(d.path().join(&r.saved[0].path)).unwrap(), p);
        let v: serde_json::Value = serde_json::from_str(&r.text).expect("still JSON");
        let data = v["content"][1]["data"].as_str().unwrap();
        assert!(data.starts_with("[image/png 200x120, "), "{data}");
        assert!(data.contains(&r.saved[0].path));
        assert_eq!(v["content"][0]["text"], "### Result\nTook a screenshot");
        assert_eq!(v["content"][4]["sha"], "ab".repeat(64));
    }

    #[test]
    fn escaped_base64_in_json() {
        let p = png(10, 10);
        let b64 = STANDARD.encode(&p).replace('/', "\\/");
        let text = format!("{{\"data\":\"{b64}\"}}");
        let found = find_blobs(&text);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1.bytes, p);
    }

    #[test]
    fn case_08_screenshot() {
        let raw = corpus("cases/case_08_mcp_screenshot.json");
        let text = String::from_utf8(raw).unwrap();
        assert!(whole(text.as_bytes()).is_none());
        let d = tempfile::tempdir().unwrap();
        let r = replace_blobs(&text, d.path(), "mcp__playwright__browser_take_screenshot")
            .unwrap()
            .unwrap();
        assert!(r.text.len() < 1024, "{}", r.text);
        assert!(
            r.text.contains("image/png 200x120, 28,627 bytes"),
            "{}",
            r.text
        );
        assert!(r
            .text
            .contains("Took a screenshot of the full current page."));
        assert!(!r.text.contains("iVBOR"));
        assert_eq!(r.saved[0].bytes, 28_627);
    }

    #[test]
    fn b64_01_corpus() {
        let text = String::from_utf8(corpus("b64_01.json")).unwrap();
        let found = find_blobs(&text);
        assert_eq!(found.len(), 1);
        let b = &found[0].1;
        assert_eq!(b.media_type, "image/png");
        assert_eq!(b.dims, Some((846, 1006)));
        assert_eq!(b.bytes.len(), 53_949);
    }
}

#[cfg(test)]
mod binary_prop {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// A base64 PNG, possibly mutated: `(flips, cut)` change bytes of the base64 text.
    fn mutated_png_b64(w: u32, h: u32, flips: &[(usize, u8)], cut: usize) -> String {
        let mut b64 = STANDARD.encode(tests::png(w, h)).into_bytes();
        for &(i, b) in flips {
            let n = b64.len();
            b64[i % n] = b;
        }
        b64.truncate(b64.len().saturating_sub(cut));
        String::from_utf8_lossy(&b64).into_owned()
    }

    proptest! {
        /// The detectors on arbitrary bytes never panic, and blob ranges are char-aligned
        /// string literals inside the text.
        #[test]
        fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = sniff(&bytes);
            let _ = decode_base64(&bytes);
            let _ = split_data_uri(&bytes);
            let _ = is_raw_binary(&bytes);
            let _ = whole(&bytes);
            let text = String::from_utf8_lossy(&bytes);
            for (r, _) in find_blobs(&text) {
                prop_assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end));
                prop_assert!(text[r.clone()].starts_with('"') && text[r].ends_with('"'));
            }
        }

        /// A (mutated) base64 PNG inside JSON, a data URI or alone: no panic; whenever it is
        /// replaced, the replacement text no longer holds the base64; unmutated, it is found.
        #[test]
        fn mutated_png_in_json(
            w in 1u32..24,
            h in 1u32..24,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3),
            cut in prop_oneof![Just(0usize), 0usize..40],
            wrap in 0u8..3,
            prefix in "[ -~]{0,20}",
        ) {
            let b64 = mutated_png_b64(w, h, &flips, cut);
            let clean = flips.is_empty() && cut == 0;
            let body = match wrap {
                0 => json!({"content": [{"type": "image", "data": b64}], "note": prefix}).to_string(),
                1 => json!({"src": format!("data:image/png;base64,{b64}"), "p": prefix}).to_string(),
                _ => format!("{prefix}\"{b64}\""),
            };
            let _ = whole(b64.as_bytes());
            if clean {
                let blob = whole(b64.as_bytes());
                prop_assert!(blob.is_some_and(|b| b.media_type == "image/png"));
            }
            let dir = tempfile::tempdir().unwrap();
            let found = find_blobs(&body);
            match replace_blobs(&body, dir.path(), "shot").unwrap() {
                Some(r) => {
                    prop_assert!(!found.is_empty());
                    prop_assert!(!r.text.contains(b64.as_str()), "{}", r.text);
                    prop_assert_eq!(r.saved.len(), found.len());
                    if wrap < 2 {
                        prop_assert!(serde_json::from_str::<Value>(&r.text).is_ok(), "{}", r.text);
                    }
                }
                None => {
                    prop_assert!(found.is_empty());
                    prop_assert!(!clean || wrap == 2 && prefix.contains('"'), "clean PNG not found in {body}");
                }
            }
        }
    }
}
