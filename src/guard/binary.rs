//! Binary content in tool results: detect it, save it decoded, describe it.
//!
//! Three shapes are handled, at every size (this step runs before counting):
//! - the whole result is base64 (plain, line-wrapped, a JSON string, or a `data:` URI) of a
//!   known file type ([`whole`]);
//! - the whole result is raw bytes that are not text in any encoding [`super::decode`] reads
//!   ([`whole`], [`raw`]);
//! - base64 files inside JSON string fields, such as MCP content blocks
//!   `{"type":"image","data":"iVBOR…","mimeType":"image/png"}`, also inside JSON documents held
//!   in string fields at any depth up to [`MAX_NESTING`] (an MCP text block whose text is
//!   `{"audio":"UklGR…"}`) ([`find_blobs`], [`replace_blobs`]).
//!
//! "Known file type" means the magic bytes are recognised by the `infer` crate (PNG, JPEG, GIF,
//! WebP, PDF, ZIP, GZIP, ...), excluding its text matchers (HTML, XML, shell scripts). A
//! `data:` URI also counts when it declares a non-text media type.

use std::path::Path;

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;

use super::save::{self, thousands};
use super::{GuardError, SavedFile};

mod embedded;

pub use embedded::{find_blobs, replace_blobs, Replaced};

/// Shortest base64 string field (in chars) inside text that is tried as a file; shorter strings
/// are ids and hashes, not files. 64 chars decode to 48 bytes, enough for any magic number.
pub const MIN_BLOB_CHARS: usize = 64;

/// Deepest JSON-in-a-JSON-string nesting searched for blobs (8 levels): an MCP result holds a
/// text block whose text is JSON (2 levels); tools that wrap tools add one level each.
pub const MAX_NESTING: usize = 8;

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

/// True when `content` is raw binary rather than text: [`super::decode::decode`] reads it in
/// no encoding.
pub fn is_raw_binary(content: &[u8]) -> bool {
    super::decode::decode(content).is_none()
}

/// `content` as a raw binary blob, named by its magic bytes when `infer` knows them
/// (`application/octet-stream`, `.bin` otherwise).
pub fn raw(content: &[u8]) -> Blob {
    let (mime, ext) = sniff(content).unwrap_or(("application/octet-stream", "bin"));
    Blob::new(content.to_vec(), mime.into(), ext.into(), Origin::Raw)
}

/// The whole text as one base64 file (plain, wrapped, JSON string or `data:` URI) of a known
/// type; `None` otherwise.
pub fn whole_base64(text: &[u8]) -> Option<Blob> {
    let start = text.iter().position(|b| !b.is_ascii_whitespace())?;
    let end = text.iter().rposition(|b| !b.is_ascii_whitespace())? + 1;
    let mut s = &text[start..end];
    let unquoted;
    if s.len() >= 2 && s[0] == b'"' && s[s.len() - 1] == b'"' {
        unquoted = serde_json::from_slice::<String>(s).ok()?;
        s = unquoted.as_bytes();
    }
    decode_file(s)
}

/// The whole result as one file: raw bytes that are not text ([`raw`]), or a base64 file
/// ([`whole_base64`]). `None` for text.
pub fn whole(content: &[u8]) -> Option<Blob> {
    if content.is_empty() {
        return None;
    }
    if is_raw_binary(content) {
        return Some(raw(content));
    }
    whole_base64(content)
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod binary_prop;
