//! The error lines of a text too large to reduce ([`super::DIGEST_MAX_BYTES`]): one linear
//! pass, each line judged as the reducer judges it ([`line_severity`]), so the one error in
//! the middle of 20 MB is not lost between the head and the tail shown.

use crate::guard::reduce::signal::Severity;
use crate::guard::reduce::text::line_severity;
use crate::guard::reduce::units::parts;
use crate::guard::reduce::{fmt_num, show_line_max};

/// Longest quote of one error line (bytes), as the reducer's excerpts.
const QUOTE_BYTES: usize = 300;

/// The error lines of `text`: how many there are, and the first `max` of them quoted as
/// `L<n>: <line>` (1-based line numbers; the line clipped to [`QUOTE_BYTES`]). A line of
/// megabytes is quoted by its part that reads as an error, with the line's size.
pub(super) fn error_lines(text: &str, max: usize) -> (usize, Vec<String>) {
    let mut n = 0;
    let mut shown = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        if line_severity(line) != Severity::Error {
            continue;
        }
        n += 1;
        if shown.len() >= max {
            continue;
        }
        let quote = if line.len() > QUOTE_BYTES {
            match parts(line)
                .into_iter()
                .find(|p| crate::guard::reduce::signal::severity(p) == Severity::Error)
            {
                Some(p) if p.len() < line.len() => format!(
                    "(a line of {} bytes; its part) {}",
                    fmt_num(line.len()),
                    show_line_max(p, QUOTE_BYTES)
                ),
                _ => show_line_max(line, QUOTE_BYTES),
            }
        } else {
            show_line_max(line, QUOTE_BYTES)
        };
        shown.push(format!("L{}: {quote}", i + 1));
    }
    (n, shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_in_the_middle_is_found_with_its_line_number() {
        let mut t: String = (0..5000).map(|i| format!("INFO step {i} ok\n")).collect();
        t.push_str("ERROR java.lang.OutOfMemoryError: Java heap space\n");
        t.push_str(&"INFO tail ok\n".repeat(100));
        let (n, shown) = error_lines(&t, 10);
        assert_eq!(n, 1);
        assert_eq!(
            shown,
            vec!["L5001: ERROR java.lang.OutOfMemoryError: Java heap space"]
        );
        let (n, shown) = error_lines("all good\nstill good\n", 10);
        assert_eq!((n, shown.len()), (0, 0));
    }
}
