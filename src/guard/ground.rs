//! Grounding of the model's text: every path, `file:line`, URL, number of 3+ digits and quoted or
//! backticked string in a sentence must occur in the reference (the tool output plus the reduced
//! facts the model saw), whitespace collapsed; a sentence carrying one that does not is dropped and
//! counted. Repeated sentences (a generation loop) and a truncated last sentence are dropped too.

use regex::Regex;
use std::collections::HashSet;
use std::sync::LazyLock;

static URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"https?://[^\s)\]>"'`]+"#).unwrap());
static FILE_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\w./-]+\.\w+:\d+(?::\d+)?").unwrap());
static PATH: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[\w.~@+-]*/[\w.@+/-]*[\w]").unwrap());
static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d[\d,]*\d|\d").unwrap());
static DQ: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""([^"\n]{2,200})""#).unwrap());
static BT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`\n]{2,200})`").unwrap());
static SQ: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s(\[{:=,])'([^'\n]{3,200})'(?:$|[\s)\]},.;:!?])").unwrap()
});

/// Collapses whitespace runs to one space.
pub fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The checkable claims of a sentence: paths, `file:line`, URLs, numbers of 3+ digits, quoted strings.
pub fn claims(sentence: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = sentence.to_string();
    for m in URL.find_iter(sentence) {
        out.push(
            m.as_str()
                .trim_end_matches(['.', ',', ';', ':'])
                .to_string(),
        );
        rest = rest.replace(m.as_str(), " ");
    }
    for re in [&*DQ, &*BT, &*SQ] {
        for c in re.captures_iter(sentence) {
            out.push(c[1].to_string());
        }
    }
    for m in FILE_LINE.find_iter(&rest) {
        out.push(m.as_str().to_string());
    }
    for m in PATH.find_iter(&rest) {
        let p = m.as_str();
        let path_like = p.starts_with('/')
            || p.starts_with("~/")
            || p.starts_with("./")
            || p.starts_with("../")
            || p.matches('/').count() >= 2
            || p.rsplit('/')
                .next()
                .is_some_and(|last| last.contains('.') && !last.ends_with('.'));
        if path_like && p.len() >= 3 {
            out.push(p.to_string());
        }
    }
    for m in NUMBER.find_iter(&rest) {
        let digits = m.as_str().chars().filter(char::is_ascii_digit).count();
        if digits >= 3 {
            out.push(m.as_str().to_string());
        }
    }
    out
}

/// Checks sentences of the model's text against a reference text.
pub struct Grounder {
    reference: String,
    numbers: HashSet<String>,
    seen: HashSet<String>,
    /// Sentences dropped because a claim was not found in the reference.
    pub dropped: usize,
    /// Sentences dropped as repeats or as a truncated ending.
    pub dropped_other: usize,
}

impl Grounder {
    /// Builds a grounder over `reference` (tool output, reduced facts, intent and arguments).
    pub fn new(reference: &str) -> Self {
        let reference = collapse(reference);
        let numbers = NUMBER
            .find_iter(&reference)
            .map(|m| m.as_str().replace(',', ""))
            .collect();
        Grounder {
            reference,
            numbers,
            seen: HashSet::new(),
            dropped: 0,
            dropped_other: 0,
        }
    }

    /// True when `claim` occurs in the reference (numbers also match without thousands separators).
    pub fn supports(&self, claim: &str) -> bool {
        let c = collapse(claim);
        if c.is_empty() || self.reference.contains(&c) {
            return true;
        }
        let digits_only = c.chars().all(|ch| ch.is_ascii_digit() || ch == ',');
        digits_only && self.numbers.contains(&c.replace(',', ""))
    }

    /// Keeps the grounded, new sentences of `text`; when `truncated`, a last sentence without
    /// final punctuation is dropped. Returns the kept text (sentences joined by spaces).
    pub fn keep(&mut self, text: &str, truncated: bool) -> String {
        let sentences = split_sentences(text);
        let n = sentences.len();
        let mut kept = Vec::new();
        for (i, s) in sentences.into_iter().enumerate() {
            let t = s.trim();
            if t.is_empty() {
                continue;
            }
            if truncated && i + 1 == n && !t.ends_with(['.', '!', '?', '`', ')', '"', '\'']) {
                self.dropped_other += 1;
                continue;
            }
            let key: String = collapse(&t.to_lowercase())
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_string();
            if !self.seen.insert(key) {
                self.dropped_other += 1;
                continue;
            }
            if claims(t).iter().all(|c| self.supports(c)) {
                kept.push(t.to_string());
            } else {
                self.dropped += 1;
            }
        }
        kept.join(" ")
    }
}

/// Splits at `.`, `!`, `?` followed by whitespace, and at newlines.
pub fn split_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let mut cur = String::new();
        for (i, &c) in chars.iter().enumerate() {
            cur.push(c);
            if matches!(c, '.' | '!' | '?') && chars.get(i + 1).is_some_and(|n| n.is_whitespace()) {
                out.push(std::mem::take(&mut cur));
            }
        }
        if !cur.trim().is_empty() {
            out.push(cur);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "FAILED tests/test_tax.py::test_rate - assert 200 == 409\nsrc/tax.py:17: ValueError: bad rate 'abc'\n2 failed, 7 passed in 0.22s\nsee https://example.com/docs/x.";

    #[test]
    fn keeps_grounded_and_drops_invented() {
        let mut g = Grounder::new(SRC);
        let out = g.keep(
            "The test tests/test_tax.py failed at src/tax.py:17. The tax rate is 19.5% per /etc/tax.conf. Expected 200 but got 409. See https://example.com/docs/x. It returned 1234 rows.",
            false,
        );
        assert!(out.contains("src/tax.py:17"));
        assert!(out.contains("Expected 200 but got 409."));
        assert!(out.contains("https://example.com/docs/x"));
        assert!(!out.contains("/etc/tax.conf"));
        assert!(!out.contains("1234"));
        assert_eq!(g.dropped, 2);
    }

    #[test]
    fn drops_quotes_loops_and_truncation() {
        let mut g = Grounder::new(SRC);
        let out = g.keep(
            "The error was 'abc'. The error was 'xyz'. Tests failed. Tests failed. And then the",
            true,
        );
        assert_eq!(out, "The error was 'abc'. Tests failed.");
        assert_eq!(g.dropped, 1);
        assert_eq!(g.dropped_other, 2);
    }

    #[test]
    fn numbers_match_without_separators_and_whitespace_collapses() {
        let mut g = Grounder::new("Log of 2000 lines\nERROR:   disk   full");
        assert_eq!(
            g.keep(
                "The log has 2,000 lines. It says `ERROR: disk full`.",
                false
            ),
            "The log has 2,000 lines. It says `ERROR: disk full`."
        );
        assert_eq!(g.dropped, 0);
        assert!(claims("read fails_test.go:34 and 0.22s").contains(&"fails_test.go:34".to_string()));
    }
}
