//! The raw bytes of a text result that is handed on decoded (a legacy encoding, UTF-16, NULs
//! shown as `␀`, invalid bytes as U+FFFD): saved as they came, and pointed to by one line.

use std::borrow::Cow;

use super::save::{self, thousands};
use super::{GuardError, SavedFile};

/// The raw bytes of a text result and how they were decoded, for saving them when the text
/// handed on is not those exact bytes.
pub(crate) struct RawText<'a> {
    /// The content as received.
    pub(crate) bytes: &'a [u8],
    /// The encoding it was read in.
    pub(crate) encoding: &'static encoding_rs::Encoding,
    /// [`super::decode::Decoded::label`]: `None` when the text is the exact bytes.
    pub(crate) label: Option<&'static str>,
    /// [`super::decode::Decoded::describe`], e.g. `decoded from GBK`.
    pub(crate) what: String,
}

impl RawText<'_> {
    /// Extension and media type of the raw bytes, judged on their decoded `text`; a legacy
    /// encoding is named as the media type's `charset`.
    pub(crate) fn kind(&self, text: &str) -> (&'static str, Cow<'static, str>) {
        let (ext, media) = save::text_kind(text.as_bytes());
        if self.encoding == encoding_rs::UTF_8 {
            (ext, Cow::Borrowed(media))
        } else {
            (
                ext,
                Cow::Owned(format!("{media}; charset={}", self.encoding.name())),
            )
        }
    }

    /// The one-line pointer to the saved raw bytes:
    /// `Full response saved to: long_responses/….txt (85 bytes as received; decoded from GBK
    /// above)`. It opens like the summary's pointer line: a reader (and the benchmark's fact
    /// check) takes it as the pointer, and the encoding's name is not a figure of the output.
    pub(crate) fn pointer(&self, f: &SavedFile) -> String {
        format!(
            "Full response saved to: {} ({} bytes as received; {} above)",
            f.path,
            thousands(f.bytes),
            self.what
        )
    }

    /// Saves the raw bytes; returns the pointer line, the file, and a save failure that is
    /// not the request's fault (then the line says the bytes were not saved).
    ///
    /// # Errors
    /// A request error ([`GuardError::is_request_error`]).
    pub(crate) fn save(
        &self,
        session_dir: &std::path::Path,
        tool: &str,
        text: &str,
    ) -> Result<(String, Option<SavedFile>, Option<GuardError>), GuardError> {
        let (ext, media) = self.kind(text);
        match save::save(session_dir, tool, self.bytes, ext, &media) {
            Ok(f) => Ok((self.pointer(&f), Some(f), None)),
            Err(e) if e.is_request_error() => Err(e),
            Err(e) => Ok((
                format!("[{}; raw bytes not saved: {}]", self.what, e.kind()),
                None,
                Some(e),
            )),
        }
    }
}
