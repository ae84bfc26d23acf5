//! The subjects of an error said the same way many times.
//!
//! `wget -r` writes one paragraph per URL: `--2026-12-07 03:09:21--  http://host/docs/faq.html`,
//! `HTTP request sent, awaiting response... 404 File not found`, `... ERROR 404: File not
//! found.`. Its five 404 lines read alike word for word: one example of them says that pages
//! were missing, not which. Which is the line that opens each one's paragraph. Nothing here
//! knows a format: a paragraph is the run of lines after a blank line.

/// Most lines above an error searched for the blank line before its paragraph: a longer run
/// is no paragraph (a log with no blank lines), and its first line no subject.
const MAX_PARAGRAPH: usize = 8;

/// Most subjects given for one template (its first ones, in input order).
pub const MAX_SUBJECTS: usize = 8;

/// A line with its digits taken out and its spaces collapsed: two errors that differ only in
/// their timestamps or counts say the same thing.
fn gist(line: &str) -> String {
    line.split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| !c.is_ascii_digit())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// True for a line that starts at the margin: a log's paragraphs do; a program's indented
/// blocks (a template's embedded Lambda code, split by blank lines too) are no such records.
fn at_margin(line: &str) -> bool {
    !line.starts_with([' ', '\t'])
}

/// The 0-based line opening the paragraph of 0-based line `i`: the first line after a blank
/// line (or the text's start) at most [`MAX_PARAGRAPH`] lines above, when both start at the
/// margin; `None` for `i` itself or when no blank line is that near.
fn opener(lines: &[&str], i: usize) -> Option<usize> {
    if !at_margin(lines[i]) {
        return None;
    }
    let mut j = i;
    while j > 0 && i - j < MAX_PARAGRAPH {
        if lines[j - 1].trim().is_empty() {
            return (j < i && at_margin(lines[j])).then_some(j);
        }
        j -= 1;
    }
    (j == 0 && j < i && at_margin(lines[j])).then_some(j)
}

/// The 0-based lines that say what each of a template's lines (`instances`, 1-based, in input
/// order) is about, when those lines say the same thing ([`gist`]) and each stands in a short
/// paragraph opened by a line that names it: every paragraph's opener, at most
/// [`MAX_SUBJECTS`], when there are two or more and they differ. Empty otherwise (errors
/// that name their subject themselves, or a log with no paragraphs).
pub fn subjects(lines: &[&str], instances: &[usize]) -> Vec<usize> {
    let Some(&first) = instances.first() else {
        return Vec::new();
    };
    let said = gist(lines[first - 1]);
    if instances.len() < 2 || instances.iter().any(|&n| gist(lines[n - 1]) != said) {
        return Vec::new();
    }
    let mut out: Vec<usize> = Vec::new();
    for &n in instances {
        let Some(o) = opener(lines, n - 1) else {
            return Vec::new();
        };
        if out.last() != Some(&o) {
            out.push(o);
        }
    }
    let texts: std::collections::HashSet<&str> = out.iter().map(|&o| lines[o].trim()).collect();
    if out.len() < 2 || texts.len() < out.len() {
        return Vec::new();
    }
    out.truncate(MAX_SUBJECTS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_paragraph_opener_names_its_error() {
        let text = "--10:00:01--  http://h/a.html\nConnecting... connected.\nHTTP request sent, awaiting response... 200 OK\nsaved\n\n--10:00:02--  http://h/faq-old.html\nReusing existing connection.\nHTTP request sent, awaiting response... 404 Not Found\n10:00:02 ERROR 404: Not Found.\n\n--10:00:03--  http://h/img/x.png\nHTTP request sent, awaiting response... 404 Not Found\n10:00:03 ERROR 404: Not Found.\n";
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(subjects(&lines, &[9, 13]), vec![5, 10]);
        assert_eq!(subjects(&lines, &[8, 12]), vec![5, 10]);
    }

    #[test]
    fn errors_that_differ_or_stand_in_no_paragraph_get_none() {
        // They name their subjects themselves.
        let lines = ["a", "error: x.c missing", "", "b", "error: y.c missing"];
        assert!(subjects(&lines, &[2, 5]).is_empty());
        // No blank line near: a plain log's lines.
        let mut log = vec!["start"; 20];
        log.push("ERROR timeout");
        log.extend(["x"; 20]);
        log.push("ERROR timeout");
        assert!(subjects(&log, &[21, 42]).is_empty());
        // Openers written the same way say nothing either.
        let lines = ["run", "ERROR timeout", "", "run", "ERROR timeout"];
        assert!(subjects(&lines, &[2, 5]).is_empty());
        // A program's indented blocks are no log's paragraphs.
        let lines = ["  if a:", "    s = FAILED", "", "  if b:", "    s = FAILED"];
        assert!(subjects(&lines, &[2, 5]).is_empty());
    }
}
