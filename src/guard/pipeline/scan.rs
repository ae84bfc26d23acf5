//! The error lines of a text too large to reduce ([`super::DIGEST_MAX_BYTES`]): one linear
//! pass, each line judged as the reducer judges it ([`line_severity`]), so the one error in
//! the middle of 20 MB is not lost between the head and the tail shown; and the lines that
//! hold the question's words ([`matching_lines`]), so a question asked of such a text is
//! answered by what it asks about.

use super::preview;
use super::save::thousands;
use super::{compose, response};
use super::{ms, SummaryJob, MAX_SCANNED_ERRORS, MAX_SCANNED_MATCHES};
use crate::backend::TokenCounter;
use crate::guard::reduce::signal::Severity;
use crate::guard::reduce::text::line_severity;
use crate::guard::reduce::units::parts;
use crate::guard::reduce::{fmt_num, show_line_max};
use crate::guard::summarize::RESULT_TOKEN_CAP;
use crate::guard::{GuardResponse, ResultKind};

/// Fewest characters of the head and of the tail shown when the answer must shrink to fit
/// [`RESULT_TOKEN_CAP`].
const MIN_PREVIEW_CHARS: usize = 200;

impl SummaryJob {
    /// The answer for a text over [`super::DIGEST_MAX_BYTES`], as kind `preview`: the lines
    /// with the question's words (best first) and the error lines a scan of all of it finds,
    /// then its first and last `preview_chars` characters, and the pointer. It fits
    /// [`RESULT_TOKEN_CAP`] as any summary does: the head and tail shrink first (halved, down
    /// to [`MIN_PREVIEW_CHARS`]), then the quoted lines (one of each list at a time), as a
    /// megabyte line of digits quotes at about a token per character.
    pub(super) fn scanned(self, counter: &dyn TokenCounter, reason: String) -> GuardResponse {
        let (n, errors) = error_lines(&self.text, MAX_SCANNED_ERRORS);
        // A question's words: the lines that hold them, best first, before the errors.
        let names = self
            .intent
            .as_deref()
            .map(|i| crate::guard::reduce::rank::Query::new(i).names)
            .unwrap_or_default();
        let (m, matches) = if names.is_empty() {
            (0, Vec::new())
        } else {
            matching_lines(&self.text, &names, MAX_SCANNED_MATCHES)
        };
        let footer = self.pointer();
        let answer = |chars: usize, keep: usize| -> String {
            let mut h = format!(
                "[Output too large to reduce ({} bytes); the lines a scan of all of it finds (with the question's words, and errors), then its first and last {} characters.]",
                thousands(self.text.len() as u64),
                thousands(chars as u64)
            );
            if !names.is_empty() {
                let k = keep.min(matches.len());
                push_scanned(
                    &mut h,
                    "Lines with the question's words",
                    "best",
                    m,
                    &matches[..k],
                );
            }
            push_scanned(
                &mut h,
                "Error lines",
                "first",
                n,
                &errors[..keep.min(errors.len())],
            );
            compose(
                &format!("{h}\n{}", preview::preview(&self.text, chars)),
                &footer,
            )
        };
        let mut chars = self.limits.preview_chars;
        let mut keep = MAX_SCANNED_ERRORS.max(MAX_SCANNED_MATCHES);
        let mut text = answer(chars, keep);
        let mut tokens = counter.count(&text);
        while tokens > RESULT_TOKEN_CAP && (chars > MIN_PREVIEW_CHARS || keep > 1) {
            if chars > MIN_PREVIEW_CHARS {
                chars = (chars / 2).max(MIN_PREVIEW_CHARS);
            } else {
                keep = (keep - 1)
                    .min(matches.len().max(errors.len()).saturating_sub(1))
                    .max(1);
            }
            text = answer(chars, keep);
            tokens = counter.count(&text);
        }
        let mut r = response(ResultKind::Preview, text, self.saved);
        r.encoding = self.encoding.map(Into::into);
        r.reason = Some(reason);
        r.tokens.input = self.input_tokens;
        r.tokens.output = tokens;
        r.timings_ms.count = self.count_ms;
        r.timings_ms.total = ms(self.started);
        r
    }
}

/// Appends to `h` what a scan found: `<label>: none found.`, or `<label>: <n>` (`, the <which>
/// <k>` when only `k` of the `n` are quoted), then the quoted lines.
pub(super) fn push_scanned(h: &mut String, label: &str, which: &str, n: usize, quoted: &[String]) {
    if quoted.is_empty() {
        h.push_str(&format!("\n{label}: none found."));
        return;
    }
    let more = if n > quoted.len() {
        format!(", the {which} {}:", quoted.len())
    } else {
        ":".to_string()
    };
    h.push_str(&format!("\n{label}: {}{more}", fmt_num(n)));
    for l in quoted {
        h.push_str(&format!("\n{l}"));
    }
}

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

/// The lines of `text` that hold the question's words (`names`: lower case, as
/// [`crate::guard::reduce::rank::Query::names`] writes them), best first: how many lines hold
/// any, and the best `max` quoted as `L<n>: <line>`. A line scores the sum over the words it
/// holds (ASCII case ignored, anywhere in the line) of ln(1 + lines / lines holding the word),
/// so a word on few lines (`libssl.so.3`) outranks one on many (`lib`); ties go to the
/// earlier line. One pass, one bit mask per matching line.
pub(super) fn matching_lines(text: &str, names: &[String], max: usize) -> (usize, Vec<String>) {
    let names: Vec<&String> = names.iter().take(32).collect();
    if names.is_empty() {
        return (0, Vec::new());
    }
    let finders: Vec<memchr::memmem::Finder<'_>> = names
        .iter()
        .map(|n| memchr::memmem::Finder::new(n.as_bytes()))
        .collect();
    let mut hits: Vec<(usize, u32)> = Vec::new();
    let mut df = vec![0usize; names.len()];
    let mut lines = 0usize;
    let mut lower = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        lines = i + 1;
        lower.clear();
        lower.extend(line.bytes().map(|b| b.to_ascii_lowercase()));
        let mut mask = 0u32;
        for (k, f) in finders.iter().enumerate() {
            if f.find(&lower).is_some() {
                mask |= 1 << k;
                df[k] += 1;
            }
        }
        if mask != 0 {
            hits.push((i, mask));
        }
    }
    let weight: Vec<f64> = df
        .iter()
        .map(|&d| (1.0 + lines as f64 / d.max(1) as f64).ln())
        .collect();
    let score = |mask: u32| -> f64 {
        (0..names.len())
            .filter(|k| mask & (1 << k) != 0)
            .map(|k| weight[k])
            .sum()
    };
    let mut ranked: Vec<(f64, usize)> = hits.iter().map(|&(i, m)| (score(m), i)).collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let all: Vec<&str> = if ranked.is_empty() {
        Vec::new()
    } else {
        text.split('\n').collect()
    };
    let mask_of: std::collections::HashMap<usize, u32> = hits.iter().copied().collect();
    let shown = ranked
        .iter()
        .take(max)
        .map(|&(_, i)| {
            let line = all[i];
            if line.len() <= QUOTE_BYTES {
                return format!("L{}: {}", i + 1, show_line_max(line, QUOTE_BYTES));
            }
            // A long line is quoted around the rarest of the question's words it holds.
            let mask = mask_of[&i];
            let rarest = (0..names.len())
                .filter(|k| mask & (1 << k) != 0)
                .max_by(|&a, &b| weight[a].total_cmp(&weight[b]).then(b.cmp(&a)));
            let at = rarest
                .and_then(|k| finders[k].find(&line.to_ascii_lowercase().into_bytes()))
                .unwrap_or(0);
            format!(
                "L{}: (a line of {} bytes; its part) {}",
                i + 1,
                fmt_num(line.len()),
                window(line, at, QUOTE_BYTES)
            )
        })
        .collect();
    (hits.len(), shown)
}

/// About `bytes` bytes of `line` around byte `at` (a third of them before it), cut on
/// character boundaries, `…` marking each side cut.
fn window(line: &str, at: usize, bytes: usize) -> String {
    let mut start = at.saturating_sub(bytes / 3).min(line.len());
    while !line.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + bytes).min(line.len());
    while !line.is_char_boundary(end) {
        end += 1;
    }
    let before = if start > 0 { "…" } else { "" };
    let after = if end < line.len() { "…" } else { "" };
    format!("{before}{}{after}", &line[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_with_the_questions_rarest_words_come_first() {
        let mut t: String = (0..20_000)
            .map(|i| format!("/usr/lib/x86_64-linux-gnu/libfoo{i}.so\n"))
            .collect();
        t.push_str("/usr/lib/x86_64-linux-gnu/libssl.so.3\n");
        t.push_str(&"/usr/share/doc/readme\n".repeat(100));
        let q = crate::guard::reduce::rank::Query::new("where is libssl.so.3 under lib?");
        let (n, shown) = matching_lines(&t, &q.names, 3);
        assert_eq!(n, 20_001, "{:?}", q.names);
        assert_eq!(shown[0], "L20001: /usr/lib/x86_64-linux-gnu/libssl.so.3");
        assert_eq!(shown.len(), 3);
        assert_eq!(matching_lines(&t, &[], 3), (0, Vec::new()));
    }

    #[test]
    fn a_long_line_is_quoted_around_the_questions_word() {
        let t = format!(
            "{}libssl.so.3 missing{}\n",
            "evt=ok;".repeat(5_000),
            "é;".repeat(5_000)
        );
        let q = crate::guard::reduce::rank::Query::new("where is libssl.so.3?");
        let (n, shown) = matching_lines(&t, &q.names, 3);
        assert_eq!(n, 1);
        assert!(
            shown[0].starts_with("L1: (a line of 50,019 bytes; its part) …")
                && shown[0].contains("libssl.so.3 missing")
                && shown[0].ends_with('…'),
            "{}",
            shown[0]
        );
    }

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
