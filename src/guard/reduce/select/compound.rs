//! Keys the question spells in words (issue 17, live set of session 50): "max connections,
//! InnoDB buffer pool size, bind address" asks for `max-connections  151`,
//! `innodb-buffer-pool-size  134217728` and `bind-address  127.0.0.1` of a `mysqld --help`
//! table, `max_connections = 100` of a config dump, `maxConnections` of a JSON document. The
//! words match such a line's terms one by one, as they match the option's description and
//! every other line that says "max" or "size"; the joined key is what names the setting.

use std::collections::{HashMap, HashSet};

use super::{Cand, Channel};
use crate::guard::reduce::rank::{split_joined, stem, token_sep, Query};
use crate::guard::reduce::{clip_str, Item, Section};

/// Most lines a key may occur on for it to name one setting (a key on every record names a
/// field, which the records' signals show).
const MAX_OCCURRENCES: usize = 4;
/// Most keys shown: the most specific (most parts) first.
const MAX_KEYS: usize = 10;
/// A key found: its text (lower case), its number of parts, its rows (line number, byte
/// offset).
type Key = (String, usize, Vec<(usize, usize)>);

/// Longest token read as a key, in bytes.
const MAX_TOKEN: usize = 64;
/// Bytes of a line shown.
const LINE_BYTES: usize = 200;
/// Relevance score of a row: above any unit's (at most 1 plus small bonuses), as
/// [`super::named_keys`]'s excerpts.
const ROW_SCORE: f64 = 2.0;
/// Longest line read as a `key value` row, in bytes.
const MAX_ROW: usize = 200;
/// Most words of a row's value (a description after an option's name is no value).
const MAX_VALUE_WORDS: usize = 4;

/// Candidates of [`Channel::Relevance`]: the `key value` rows ([`row`]) whose key is joined
/// (`-`, `_`, `.` or camelCase) from words of the question, two of its parts side by side in
/// one of [`Query::phrases`]; each such key on at most [`MAX_OCCURRENCES`] rows, at most
/// [`MAX_KEYS`] keys. A row is trimmed and cut at [`LINE_BYTES`].
pub fn compounds(text: &str, q: &Query) -> Vec<Cand> {
    let mut out = Vec::new();
    if q.phrases.is_empty() {
        return out;
    }
    let words: HashSet<&str> = q.phrases.iter().flatten().map(String::as_str).collect();
    let pairs: HashSet<(&str, &str)> = q
        .phrases
        .iter()
        .flat_map(|p| p.windows(2).map(|w| (w[0].as_str(), w[1].as_str())))
        .collect();
    // Each distinct key's verdict, and each key's rows (line number, byte offset).
    let mut verdict: HashMap<&str, Option<usize>> = HashMap::new();
    let mut found: HashMap<String, (usize, Vec<(usize, usize)>)> = HashMap::new();
    let mut off = 0;
    for (n, line) in text.split('\n').enumerate() {
        let start = off;
        off += line.len() + 1;
        let Some(tok) = row(line) else { continue };
        let parts = *verdict
            .entry(tok)
            .or_insert_with(|| joined_parts(tok, &words, &pairs));
        let Some(parts) = parts else { continue };
        let e = found
            .entry(tok.to_ascii_lowercase())
            .or_insert((parts, Vec::new()));
        if e.1.len() <= MAX_OCCURRENCES {
            e.1.push((n + 1, start));
        }
    }
    let mut keys: Vec<Key> = found
        .into_iter()
        .filter(|(_, (_, lines))| lines.len() <= MAX_OCCURRENCES)
        .map(|(k, (p, l))| (k, p, l))
        .collect();
    // The most specific keys first, then in the order the output writes them.
    keys.sort_by(|a, b| b.1.cmp(&a.1).then(a.2[0].0.cmp(&b.2[0].0)));
    keys.truncate(MAX_KEYS);
    for (_, _, lines) in keys {
        for (n, start) in lines {
            let line = text[start..].split('\n').next().unwrap_or("").trim();
            let score = ROW_SCORE;
            out.push(Cand {
                item: Item::line(
                    Section::Evidence,
                    n,
                    clip_str(line, LINE_BYTES).to_string(),
                    score,
                ),
                channel: Channel::Relevance,
                score,
                group: None,
                rel: 1.0,
            });
        }
    }
    out
}

/// The key of a `key value` row: a line of at most [`MAX_ROW`] bytes whose first
/// token (split at whitespace, `=`, `:`, quotes and brackets; outer punctuation such as an
/// option's `--` trimmed) is a joined word and whose rest, at most [`MAX_VALUE_WORDS`] words,
/// is not empty: `max-connections  151`, `net.core.somaxconn = 4096`, `"poolSize": 12,`.
fn row(line: &str) -> Option<&str> {
    if line.len() > MAX_ROW {
        return None;
    }
    // A backquote too: a Markdown table's or a linter's quoted key.
    let sep = |c: char| token_sep(c) || c == '`';
    let body = line.trim_start_matches(sep);
    let end = body.find(sep).unwrap_or(body.len());
    let tok = body[..end].trim_matches(|c: char| !c.is_alphanumeric());
    let value = body[end..].trim_matches(sep);
    let joined =
        tok.contains(['-', '_', '.']) || tok.chars().skip(1).any(|c| c.is_ascii_uppercase());
    (joined
        && tok.len() <= MAX_TOKEN
        && !value.is_empty()
        && value.split_whitespace().count() <= MAX_VALUE_WORDS)
        .then_some(tok)
}

/// The number of parts of `tok` when it is a key the question spells: two or more parts
/// (split at `.`, `-`, `_` and camelCase), each 2+ characters whose stem is one of `words`,
/// and two side by side that are side by side in a phrase (`pairs`); `None` otherwise.
fn joined_parts(tok: &str, words: &HashSet<&str>, pairs: &HashSet<(&str, &str)>) -> Option<usize> {
    let mut stems = Vec::new();
    for piece in tok.split('.') {
        for part in split_joined(piece) {
            if part.len() < 2 {
                return None;
            }
            let s = stem(&part.to_lowercase());
            if !words.contains(s.as_str()) {
                return None;
            }
            stems.push(s);
        }
    }
    (stems.len() >= 2
        && stems
            .windows(2)
            .any(|w| pairs.contains(&(w[0].as_str(), w[1].as_str()))))
    .then_some(stems.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(c: &[Cand]) -> Vec<(usize, &str)> {
        c.iter()
            .map(|c| (c.item.line.unwrap(), c.item.text.as_str()))
            .collect()
    }

    #[test]
    fn a_setting_the_question_spells_is_shown_where_its_key_opens_a_row() {
        let mut text = String::from(
            "Options:\n  --max-connections=#  The number of simultaneous clients allowed.\n",
        );
        for i in 0..200 {
            text.push_str(&format!(
                "  --max-thing-{i}=#  Max size of thing {i}, in connections\n"
            ));
        }
        text.push_str("\nVariables                Value\n");
        for i in 0..200 {
            text.push_str(&format!("max-thing-{i}  {i}\n"));
        }
        text.push_str("max-connections  151\ninnodb-buffer-pool-size  134217728\ninnodb-buffer-pool-chunk-size  134217728\nbind-address  127.0.0.1\n");
        let q = Query::new("what are the defaults of max connections, InnoDB buffer pool size and the bind address?");
        let c = compounds(&text, &q);
        let got = lines(&c);
        assert!(got.contains(&(405, "max-connections  151")), "{got:?}");
        // The option's synopsis is a description, not a value.
        assert!(!got.iter().any(|(n, _)| *n == 2), "{got:?}");
        assert!(
            got.contains(&(406, "innodb-buffer-pool-size  134217728")),
            "{got:?}"
        );
        assert!(got.contains(&(408, "bind-address  127.0.0.1")), "{got:?}");
        // A part the question does not say (`chunk`, `thing`) makes another setting.
        assert!(
            !got.iter()
                .any(|(_, t)| t.contains("chunk") || t.contains("thing")),
            "{got:?}"
        );
    }

    #[test]
    fn camel_case_and_dotted_keys_are_read_and_a_field_on_every_record_is_not() {
        let mut text = String::new();
        for i in 0..30 {
            text.push_str(&format!("{{\"id\": {i}, \"retryCount\": {}}}\n", i % 3));
        }
        text.push_str("{\"poolSize\": 12}\nnet.core.somaxconn = 4096\n");
        let q = Query::new("what is the pool size and the retry count? and net core somaxconn");
        let got = lines(&compounds(&text, &q))
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>();
        assert_eq!(got, vec![32, 31], "{got:?}");
    }

    #[test]
    fn words_that_are_not_side_by_side_in_the_question_join_nothing() {
        let text = "buffer-size  16384\nmax-size  1024\n";
        let q = Query::new("which buffer has the max, and what size");
        assert!(compounds(text, &q).is_empty());
    }
}
