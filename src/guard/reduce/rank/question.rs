//! What a question's words say beyond its terms: the keys it names ("a `decorator` field"),
//! the clock times it writes, the values it sets aside and the words it negates. Each is read
//! once by [`super::Query::new`].

use std::collections::HashSet;

/// Nouns that make the word beside them a key's name ("a `decorator` field", "attribute
/// deprecated").
pub(super) const KEY_NOUNS: &[&str] = &[
    "field",
    "fields",
    "key",
    "keys",
    "attribute",
    "attributes",
    "property",
    "properties",
];

/// The words right before or after one of [`KEY_NOUNS`] in `text`, lower case, 3+ characters,
/// not a stopword or another key noun (split at whitespace and punctuation other than `_`,
/// `-` and `.`, outer punctuation trimmed).
pub(super) fn keys_in(text: &str, stop: &HashSet<&str>) -> Vec<String> {
    let words: Vec<String> = text
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let mut out: Vec<String> = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if !KEY_NOUNS.contains(&w.as_str()) {
            continue;
        }
        for j in [i.wrapping_sub(1), i + 1] {
            let Some(k) = words.get(j) else { continue };
            if k.chars().count() >= 3
                && !stop.contains(k.as_str())
                && !KEY_NOUNS.contains(&k.as_str())
                && !out.contains(k)
            {
                out.push(k.clone());
            }
        }
    }
    out
}

/// Weight of a clock time the question writes, as a query term: the minute asked about.
pub(super) const CLOCK_WEIGHT: f64 = 1.5;

/// The query term that stands for clock time `hhmm` (`HH:MM`) in [`Query::terms`]: no token
/// of text can be it (a control character opens it).
pub(super) fn clock_term(hhmm: &str) -> String {
    format!("\u{1}{hhmm}")
}

/// The clock times (`HH:MM`, the hour padded) that `text` writes as `H:MM` or `HH:MM`, with
/// or without seconds, not after a digit, a colon or a dot (the minutes and seconds of
/// `00:11:02`, a version's `1.11:02`).
pub(super) fn clocks_in(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = text[i..].find(':') {
        let at = i + off;
        i = at + 1;
        let mut start = at;
        while start > 0 && b[start - 1].is_ascii_digit() && at - start < 2 {
            start -= 1;
        }
        let hours = &text[start..at];
        let before = start.checked_sub(1).map(|k| b[k]);
        let mins = text.get(at + 1..at + 3).unwrap_or("");
        let after = b.get(at + 3).copied();
        let ok = !hours.is_empty()
            && before.is_none_or(|c| !c.is_ascii_digit() && c != b':' && c != b'.')
            && mins.len() == 2
            && mins.bytes().all(|c| c.is_ascii_digit())
            && after.is_none_or(|c| !c.is_ascii_digit())
            && hours.parse::<u32>().is_ok_and(|h| h < 24)
            && mins < "60";
        if ok {
            let c = format!("{:0>2}:{mins}", hours);
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// Phrases that open a list of values the answer is not (lower case).
pub(super) const SET_ASIDE: &[&str] = &[
    "other than",
    "besides",
    "except for",
    "except",
    "excluding",
    "apart from",
    "aside from",
];

/// Most words of a list after one of [`SET_ASIDE`].
pub(super) const MAX_SET_ASIDE: usize = 8;

/// The words of the lists after [`SET_ASIDE`] in `text`, up to the end of the clause (`?`,
/// `!`, `;`, `:`, or `.` before a space), as [`Query::set_aside`] keeps them.
pub(super) fn set_aside(text: &str, stop: &HashSet<&str>) -> Vec<String> {
    // ASCII lower case keeps every byte where it was: the phrases are ASCII.
    let lower = text.to_ascii_lowercase();
    let mut out: Vec<String> = Vec::new();
    for phrase in SET_ASIDE {
        let mut from = 0;
        while let Some(p) = lower[from..].find(phrase) {
            let at = from + p;
            from = at + phrase.len();
            // A whole phrase: `except`, not `exception` or `nonexcept`.
            let before_ok = lower[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric());
            let after_ok = lower[from..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric());
            if !before_ok || !after_ok {
                continue;
            }
            let rest = &text[from..];
            let end = rest
                .char_indices()
                .find(|&(i, c)| {
                    matches!(c, '?' | '!' | ';' | ':')
                        || c == '.' && rest[i + 1..].chars().next().is_none_or(char::is_whitespace)
                })
                .map_or(rest.len(), |(i, _)| i);
            for w in rest[..end].split(|c: char| c.is_whitespace() || c == '/' || c == ',') {
                let w = w.trim_matches(|c: char| !c.is_alphanumeric());
                let l = w.to_lowercase();
                if w.is_empty()
                    || stop.contains(l.as_str())
                    || matches!(l.as_str(), "or" | "and" | "nor")
                {
                    continue;
                }
                if out.len() >= MAX_SET_ASIDE {
                    break;
                }
                if !out.iter().any(|x| x.eq_ignore_ascii_case(w)) {
                    out.push(w.to_string());
                }
            }
        }
    }
    out
}

/// Words that negate the content word after them (contractions split at the apostrophe).
pub(super) const NEGATIONS: &[&str] = &[
    "not",
    "non",
    "never",
    "isn",
    "aren",
    "wasn",
    "weren",
    "doesn",
    "didn",
    "without",
    "except",
    "excluding",
];

/// Words that, after `the`, name the records the answer is not ("the rest being down", "the
/// others failed"): the state word after them (past any of [`BEING`]) is negated.
pub(super) const CONTRASTS: &[&str] = &["rest", "others"];
/// Verbs between a contrast word and the state it gives the rest.
pub(super) const BEING: &[&str] = &[
    "being", "are", "is", "were", "was", "all", "stay", "remain", "still",
];

/// The content words a negation applies to: the first word of 3+ letters that is not a
/// stopword within the two words after each of [`NEGATIONS`]. `shouted[i]` is true when word
/// `i` is written in capitals in a question that is not: `NOT IN`, `IS NOT NULL`, `NOT
/// EXISTS` quote a query language's operator, which negates nothing in the question.
pub(super) fn negated(words: &[String], shouted: &[bool], stop: &HashSet<&str>) -> Vec<String> {
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if shouted.get(i).copied().unwrap_or(false) {
            continue;
        }
        // "which ports are up (the rest being down)": the state of the rest is what the
        // answer is not.
        if i > 0 && words[i - 1] == "the" && CONTRASTS.contains(&w.as_str()) {
            let state = words[i + 1..]
                .iter()
                .take(3)
                .find(|x| !BEING.contains(&x.as_str()));
            if let Some(x) = state.filter(|x| x.len() >= 3 && !stop.contains(x.as_str())) {
                out.push(x.clone());
            }
            continue;
        }
        if !NEGATIONS.contains(&w.as_str()) {
            continue;
        }
        if let Some(x) = words[i + 1..].iter().take(3).find(|x| {
            x.len() >= 3 && !stop.contains(x.as_str()) && !NEGATIONS.contains(&x.as_str())
        }) {
            out.push(x.clone());
        }
    }
    out
}

/// Runs of two or more consecutive words of `text`, lower case and stemmed, broken at
/// punctuation (other than a joining `-`, `_` or `.`) and at stopwords: "max connections,
/// InnoDB buffer pool and log buffer size" gives `[max, connect]`, `[innodb, buffer, pool]`,
/// `[log, buffer, siz]` (a stopword such as `file` breaks a run too). An output writes such
/// a run as one key (`max-connections`, `innodb_buffer_pool_size`, `logBufferSize`): see
/// [`super::Query::phrases`].
pub(super) fn phrases_in(
    text: &str,
    stop: &HashSet<&str>,
    stem: impl Fn(&str) -> String,
) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut run: Vec<String> = Vec::new();
    let mut close = |run: &mut Vec<String>| {
        if run.len() >= 2 && !out.contains(run) {
            out.push(std::mem::take(run));
        }
        run.clear();
    };
    for piece in
        text.split_inclusive(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        let ends = piece.chars().last().is_some_and(|c| {
            !(c.is_whitespace() || c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        });
        let word = piece
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        // A trailing `.` or `-` ends the sentence or the clause.
        let breaks = ends || piece.trim_end().ends_with(['.', '-', '_']);
        if !word.is_empty() {
            if stop.contains(word.as_str()) {
                close(&mut run);
            } else {
                for part in word.split(['-', '_', '.']).filter(|p| !p.is_empty()) {
                    run.push(stem(part));
                }
            }
        }
        if breaks {
            close(&mut run);
        }
    }
    close(&mut run);
    out
}
