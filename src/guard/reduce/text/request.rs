//! The request an HTTP error answers.
//!
//! A trace of HTTP traffic (`curl -v` and `--trace-ascii`, `wget -d`, Python's
//! `http.client` debug, a proxy's dump) writes each request line, its headers, then the
//! response's status line: `0000: GET /nginx/changelog.gz HTTP/1.1` … `0000: HTTP/1.0 404
//! File not found` (live set of session 56). The status says a request failed; the request
//! line above it says which. Only the two standard line shapes are read, whatever the prefix.

use regex::Regex;
use std::sync::LazyLock;

/// An HTTP response's status line with a 4xx or 5xx code (`HTTP/1.1 404 Not Found`,
/// `reply: 'HTTP/1.1 500 …'`, `< HTTP/2 503`).
static ERROR_STATUS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bHTTP/\d(?:\.\d)? [45]\d\d\b").unwrap());

/// An HTTP request line (`GET /a HTTP/1.1`, `> POST /api/v1/x HTTP/2`).
static REQUEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS|CONNECT|TRACE) \S+ HTTP/\d(?:\.\d)?\b")
        .unwrap()
});

/// Most lines above a status searched for its request: a request's headers (a few dozen at
/// most) lie between them.
const MAX_DISTANCE: usize = 60;

/// The 0-based index of the request line that the error status at `idx` answers: the nearest
/// request line above it, within [`MAX_DISTANCE`] lines. `None` when `lines[idx]` is no
/// 4xx/5xx status line, holds its request itself (an access log's `"GET /x HTTP/1.1" 404`), or
/// no request line is near.
pub fn request_of(lines: &[&str], idx: usize) -> Option<usize> {
    let line = lines.get(idx)?;
    if !ERROR_STATUS.is_match(line) || REQUEST.is_match(line) {
        return None;
    }
    (idx.saturating_sub(MAX_DISTANCE)..idx)
        .rev()
        .find(|&j| REQUEST.is_match(lines[j]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_status_points_at_its_request() {
        let trace = [
            "0000: GET / HTTP/1.1",
            "0000: HTTP/1.0 200 OK",
            "23:19:16.923 => Send header, 96 bytes (0x60)",
            "0000: GET /nginx/changelog.gz HTTP/1.1",
            "0010: Host: 127.0.0.1:8765",
            "23:19:16.924 <= Recv header, 32 bytes (0x20)",
            "0000: HTTP/1.0 404 File not found",
        ];
        assert_eq!(request_of(&trace, 6), Some(3));
        // A success, or a line holding its own request, points nowhere.
        assert_eq!(request_of(&trace, 1), None);
        let access = [r#"1.2.3.4 - - [07/Dec/2026] "GET /x HTTP/1.1" 404 12"#];
        assert_eq!(request_of(&access, 0), None);
        // Nor does a status with no request near.
        assert_eq!(request_of(&["HTTP/1.1 500 Internal Server Error"], 0), None);
    }
}
