//! The synthetic tool result: its text (body, pointer footer) and the [`GuardResponse`] around it.

use super::save::{human_size, thousands};
use super::{GuardError, GuardResponse, ResultKind, SavedFile, Timings, TokenStats};

/// The pointer to the saved full result, two lines:
/// `Full response saved to: long_responses/<file> (281.1 KB, 287,834 bytes)` and a hint to use
/// Read/Grep on it.
pub fn footer(saved: &SavedFile) -> String {
    format!(
        "Full response saved to: {} ({}, {} bytes)\n{READ_HINT}",
        saved.path,
        human_size(saved.bytes),
        thousands(saved.bytes)
    )
}

/// The second line of [`footer`]: how to read what the summary left out.
pub const READ_HINT: &str =
    "Use Read (with offset/limit) or Grep on that file for anything not shown here.";

/// The pointer when the content is a window of a file saved earlier (a read-back of a saved
/// file, which is not saved again): its path and size, how the summary's `L<n>` map to the
/// file's lines (`start`: the file's lines before the window, `None` when not known), and how
/// to read a smaller window.
pub fn window_footer(saved: &SavedFile, start: Option<usize>) -> String {
    let lines = match start {
        Some(0) => String::new(),
        Some(b) => format!(
            "\nThis window starts at line {} of that file: L<n> above is its line n + {}.",
            thousands(b as u64 + 1),
            b
        ),
        None => "\nL<n> above count from this output's first line, not the file's: grep -n the file for a quoted line to find it there.".to_string(),
    };
    format!(
        "This output was read from the saved file {} ({}, {} bytes); it was not saved again.{lines}\n\
         Read a smaller window of that file (Read with offset/limit, or sed -n 'A,Bp') to see lines verbatim, or Grep it.",
        saved.path,
        human_size(saved.bytes),
        thousands(saved.bytes)
    )
}

/// The pointer to a saved binary file: its path and size, and a hint to use Read on it.
pub fn binary_footer(saved: &SavedFile) -> String {
    format!(
        "Full response saved to: {} ({}, {} bytes)\n\
         Use Read on that file to view it; its bytes are not shown here.",
        saved.path,
        human_size(saved.bytes),
        thousands(saved.bytes)
    )
}

/// The footer used when the full result could not be saved.
pub fn unsaved_footer(err: &GuardError) -> String {
    format!(
        "The full response could not be saved ({}: {err}); only this preview is available.",
        err.kind()
    )
}

/// `body`, a blank line, then `footer`.
pub fn compose(body: &str, footer: &str) -> String {
    let body = body.trim_end_matches(['\n', '\r', ' ', '\t']);
    let mut s = String::with_capacity(body.len() + footer.len() + 2);
    s.push_str(body);
    if !body.is_empty() {
        s.push_str("\n\n");
    }
    s.push_str(footer);
    s
}

/// A pass-through response: `text` is the output itself, nothing saved.
pub fn passthrough(text: String) -> GuardResponse {
    let n = text.len();
    let mut r = response(ResultKind::Passthrough, text, Vec::new());
    r.tokens = TokenStats {
        input: n,
        output: n,
    };
    r
}

/// A response with the fields every path shares; the caller fills in the rest.
pub(crate) fn response(kind: ResultKind, text: String, saved: Vec<SavedFile>) -> GuardResponse {
    GuardResponse {
        ok: true,
        kind,
        text,
        saved,
        tokens: TokenStats::default(),
        timings_ms: Timings::default(),
        model: None,
        reason: None,
        ungrounded_dropped: 0,
        content_kind: None,
        encoding: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_format() {
        let f = SavedFile {
            path: "long_responses/20250101T000000.000_Bash.txt".into(),
            bytes: 287_834,
            media_type: "text/plain".into(),
        };
        let t = compose("summary\n\n", &footer(&f));
        assert_eq!(
            t,
            "summary\n\nFull response saved to: long_responses/20250101T000000.000_Bash.txt \
             (281.1 KB, 287,834 bytes)\n\
             Use Read (with offset/limit) or Grep on that file for anything not shown here."
        );
    }

    #[test]
    fn unsaved_footer_names_kind() {
        let e = GuardError::from_io("/s", std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(unsaved_footer(&e).contains("(disk_full: "));
    }
}
