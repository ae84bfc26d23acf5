//! A document that wraps one text: `{"log": "…"}`, `{"result": {"output": "…"}}`, `[ "…" ]`.
//! A tool's result often reaches toolsum as JSON of a shape nobody named (a hook payload an
//! agent changed, an API that returns a job's log as a string): the text is what the output
//! says, and the wrapper only a few keys around it.
//!
//! A document that holds many texts (a source map's `sourcesContent`, a capture's response
//! bodies) is read the same way, one text at a time: the text that best matches the question.

use super::super::rank::{bm25, bm25_discriminating, Query};
use super::super::text::normalise;
use super::super::{clip_str, count, Ctx, Kind, Reduction, Section, MUST};
use super::Facts;
use serde_json::Value;

/// Least share of the document's bytes one string must hold to be what it says (the rest is
/// keys, quotes and escapes around it: 0.8 leaves room for a few short fields beside it).
const MIN_SHARE: f64 = 0.8;

/// Fewest lines the string must have: a long one-line value is a blob, not a text to read.
const MIN_LINES: usize = 20;

/// Deepest nesting searched (the wrapper is a few levels, not a data set).
const MAX_DEPTH: usize = 6;

/// Array elements searched per array.
const MAX_ELEMENTS: usize = 16;

/// The string that makes up the document, with its jq path (`.weird[0]`, `.["a b"]`): a
/// string of at least [`MIN_LINES`] lines whose length is at least [`MIN_SHARE`] of
/// `doc_bytes` (the document's size in bytes), and that is not itself a JSON document; `None`
/// when no string does.
pub(super) fn dominant_text(v: &Value, doc_bytes: usize) -> Option<(String, &str)> {
    let mut best: Option<(String, &str)> = None;
    walk(v, String::new(), 0, &mut best);
    // A JSON document in a string (a recorded response's body) is walked as JSON elsewhere.
    best.filter(|(_, s)| {
        s.len() as f64 >= MIN_SHARE * doc_bytes as f64
            && s.lines().count() >= MIN_LINES
            && serde_json::from_str::<Value>(s).is_err()
    })
}

fn walk<'v>(v: &'v Value, path: String, depth: usize, best: &mut Option<(String, &'v str)>) {
    match v {
        Value::String(s) if best.as_ref().is_none_or(|(_, b)| s.len() > b.len()) => {
            *best = Some((if path.is_empty() { ".".into() } else { path }, s));
        }
        Value::Object(m) if depth < MAX_DEPTH => {
            for (k, x) in m {
                let key = super::jq_path(std::slice::from_ref(k));
                walk(x, format!("{path}{key}"), depth + 1, best);
            }
        }
        Value::Array(a) if depth < MAX_DEPTH => {
            for (i, x) in a.iter().take(MAX_ELEMENTS).enumerate() {
                let p = if path.is_empty() { "." } else { &path };
                walk(x, format!("{p}[{i}]"), depth + 1, best);
            }
        }
        _ => {}
    }
}

/// The reduction of a document that is one text wrapped in a few keys ([`dominant_text`]) or
/// many texts ([`chosen_text`]): the text's own reduction ([`super::embedded`]), labelled
/// with its jq path, in `f`; `None` when the document is neither.
pub(super) fn reduce_texts(
    v: &Value,
    doc_bytes: usize,
    ctx: &Ctx<'_>,
    key_line: &dyn Fn(&[&str]) -> Option<usize>,
    f: &mut Facts,
) -> Option<Reduction> {
    // One text wrapped in a few keys: the text is what the output says.
    if let Some((path, s)) = dominant_text(v, doc_bytes) {
        let anchor = anchor_of(&path, key_line);
        let inner = super::embedded(&path, s, anchor, ctx, f);
        let status = if inner.status.is_empty() {
            format!("JSON document wrapping a text at {path}.")
        } else {
            format!(
                "JSON document wrapping a text at {path}: {}",
                counted(&inner.status, s)
            )
        };
        return Some(Reduction {
            kind: Kind::Json,
            items: std::mem::take(&mut f.items),
            status,
            failed: inner.failed,
            next_action: format!(
                "Extract the text at {path} with jq -r (the path quoted for the shell) from the saved file, then Read or Grep it."
            ),
        });
    }
    // Many texts (a source map's sources): the one that best matches the question.
    if let Some(c) = chosen_text(v, doc_bytes, ctx.query) {
        let anchor = anchor_of(&c.path, key_line);
        let label = match &c.name {
            Some((np, n)) => format!("{} ({np}: {n})", c.path),
            None => c.path.clone(),
        };
        f.push(
            format!(
                "texts: {} strings of {}+ lines; the best match for the intent is {label}",
                count(c.of),
                MIN_TEXT_LINES
            ),
            MUST,
        );
        if !c.others.is_empty() {
            f.push(
                format!("next best matches: {}", c.others.join(", ")),
                MUST / 20.0,
            );
        }
        let start = f.items.len();
        let inner = super::embedded(&c.path, c.text, anchor, ctx, f);
        // Chosen for the question, the text is read for it: its lines rank by how well they
        // match (a source file's `throw new AxiosError(…)` is code, not a failure).
        let lines: Vec<&str> = c.text.split('\n').map(|l| clip_str(l, 600)).collect();
        let scores = normalise(&bm25_discriminating(ctx.query, &lines));
        let prefix = format!("{} L", c.path);
        for it in &mut f.items[start..] {
            let k = it.order % 100_000;
            if it.line == anchor && it.text.starts_with(&prefix) && k >= 1 && k <= lines.len() {
                it.section = Section::Evidence;
                it.prio = 10.0 + 90.0 * scores[k - 1];
            }
        }
        let status = format!(
            "JSON document of {} texts; shown: {label}{}",
            count(c.of),
            if inner.status.is_empty() {
                ".".to_string()
            } else {
                format!(": {}", counted(&inner.status, c.text))
            }
        );
        return Some(Reduction {
            kind: Kind::Json,
            items: std::mem::take(&mut f.items),
            status,
            failed: inner.failed,
            next_action: format!(
                "Extract the text at {} (another by its index) with jq -r from the saved file, then Read or Grep it.",
                c.path
            ),
        });
    }
    None
}

/// The line of the document's top-level key that leads to `path` (`.sourcesContent[17]` ->
/// `sourcesContent`), else line 1: where the text's excerpts are anchored.
fn anchor_of(path: &str, key_line: &dyn Fn(&[&str]) -> Option<usize>) -> Option<usize> {
    let top = path
        .trim_start_matches(['.', '['])
        .split(['.', '['])
        .next()
        .unwrap_or("")
        .trim_matches(['"', ']']);
    key_line(&[top]).or(Some(1))
}

/// `status`, a text's own Status ([`super::reduce_lines`]'s `Output of 161 lines; …`), with
/// the text's line count written as a count toolsum made ([`count`]): the document does not
/// write that number, and it must not read as quoted from it.
fn counted(status: &str, text: &str) -> String {
    let n = text.split('\n').count() - usize::from(text.ends_with('\n'));
    let plain = format!(" of {} line", super::super::fmt_num(n));
    status.replacen(&plain, &format!(" of {} line", count(n)), 1)
}

/// Fewest lines a string needs to count as one of a document's texts ([`chosen_text`]).
pub(super) const MIN_TEXT_LINES: usize = 10;

/// Shortest single-line string that is a blob (a source map's `mappings`, base64 data): left
/// out of the document's size when texts are weighed against it.
const MIN_BLOB_BYTES: usize = 4096;

/// Elements searched per array for texts (a bundle's sources: tens to hundreds).
const MAX_TEXT_ELEMENTS: usize = 4096;

/// Longest name (bytes) in an array of names parallel to the texts (`sources[k]` names
/// `sourcesContent[k]`).
const MAX_NAME_BYTES: usize = 300;

/// A text found: its jq path, the text, its name from a parallel array (with that path).
type Found<'v> = (String, &'v str, Option<(String, &'v str)>);

/// One text of a document of many ([`chosen_text`]).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Chosen<'v> {
    /// jq path of the text (`.sourcesContent[17]`).
    pub path: String,
    /// The text.
    pub text: &'v str,
    /// Its name from a parallel array beside it, with that name's path
    /// (`.sources[17]`, `../../lib/defaults/index.js`).
    pub name: Option<(String, &'v str)>,
    /// How many texts the document holds.
    pub of: usize,
    /// The names (or paths) of the next best matches, best first (at most 4).
    pub others: Vec<String>,
}

/// The text that best matches `query` in a document made of several: strings of at least
/// [`MIN_TEXT_LINES`] lines (not JSON documents themselves) that together hold at least
/// [`MIN_SHARE`] of `doc_bytes` less its blobs (single-line strings of [`MIN_BLOB_BYTES`] or
/// more). Each text is scored (BM25) with its name when an array of names runs parallel to
/// it. `None` for fewer than two texts, a share under that, no question, or no text that
/// matches it.
pub(super) fn chosen_text<'v>(v: &'v Value, doc_bytes: usize, query: &Query) -> Option<Chosen<'v>> {
    if query.is_empty() {
        return None;
    }
    let mut found: Vec<Found<'v>> = Vec::new();
    let mut blobs = 0usize;
    collect(v, String::new(), 0, &mut found, &mut blobs);
    if found.len() < 2 {
        return None;
    }
    // The texts are the elements of one array (or the values of one map) of strings: a
    // document of texts. Texts that are fields of records (each issue's `body`) leave the
    // records to the record walk, which shows their other fields.
    let parent = |p: &str| -> String {
        let cut = if p.ends_with("\"]") {
            p.rfind("[\"")
        } else if p.ends_with(']') {
            p.rfind('[')
        } else {
            p.rfind('.')
        };
        p[..cut.unwrap_or(0)].to_string()
    };
    let container = parent(&found[0].0);
    if found.iter().any(|(p, _, _)| parent(p) != container) {
        return None;
    }
    let bytes: usize = found.iter().map(|(_, s, _)| s.len()).sum();
    if (bytes as f64) < MIN_SHARE * doc_bytes.saturating_sub(blobs) as f64 {
        return None;
    }
    let docs: Vec<String> = found
        .iter()
        .map(|(_, s, n)| match n {
            Some((_, n)) => format!("{n}\n{s}"),
            None => s.to_string(),
        })
        .collect();
    let mut scores = bm25(query, &docs);
    // A text the question names by its file name or path (`lib/defaults/index.js`) is the
    // one asked about, whatever its words.
    let top = scores.iter().copied().fold(0.0, f64::max);
    for (i, (p, _, n)) in found.iter().enumerate() {
        let name = n.as_ref().map_or(p.as_str(), |(_, n)| n).to_lowercase();
        if query
            .names
            .iter()
            .any(|w| w.len() >= 5 && w.contains(['/', '.']) && name.ends_with(w.as_str()))
        {
            scores[i] += top + 1.0;
        }
    }
    let mut order: Vec<usize> = (0..found.len()).filter(|&i| scores[i] > 0.0).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let &best = order.first()?;
    let of = found.len();
    let others = order[1..]
        .iter()
        .take(4)
        .map(|&i| match &found[i].2 {
            Some((_, n)) => n.to_string(),
            None => found[i].0.clone(),
        })
        .collect();
    let (path, text, name) = found.swap_remove(best);
    Some(Chosen {
        path,
        text,
        name,
        of,
        others,
    })
}

fn is_text(s: &str) -> bool {
    s.lines().nth(MIN_TEXT_LINES - 1).is_some() && serde_json::from_str::<Value>(s).is_err()
}

fn collect<'v>(
    v: &'v Value,
    path: String,
    depth: usize,
    found: &mut Vec<Found<'v>>,
    blobs: &mut usize,
) {
    match v {
        Value::String(s) if is_text(s) => found.push((path, s, None)),
        Value::String(s) if s.len() >= MIN_BLOB_BYTES && !s.contains('\n') => *blobs += s.len(),
        Value::Object(m) if depth < MAX_DEPTH => {
            for (k, x) in m {
                let key = super::jq_path(std::slice::from_ref(k));
                let at = found.len();
                collect(x, format!("{path}{key}"), depth + 1, found, blobs);
                // An array of names beside an array of texts, element for element.
                let Value::Array(texts) = x else { continue };
                let names = m.iter().find_map(|(k2, y)| match y {
                    Value::Array(a)
                        if k2 != k && a.len() == texts.len() && a.iter().all(is_name) =>
                    {
                        Some((
                            format!("{path}{}", super::jq_path(std::slice::from_ref(k2))),
                            a,
                        ))
                    }
                    _ => None,
                });
                if let Some((npath, names)) = names {
                    let prefix = format!("{path}{key}[");
                    for (p, _, n) in found[at..].iter_mut() {
                        let idx = p
                            .strip_prefix(&prefix)
                            .and_then(|r| r.split(']').next())
                            .and_then(|i| i.parse::<usize>().ok());
                        if let Some(i) =
                            idx.filter(|_| p.matches('[').count() == prefix.matches('[').count())
                        {
                            if let Some(Value::String(name)) = names.get(i) {
                                *n = Some((format!("{npath}[{i}]"), name.as_str()));
                            }
                        }
                    }
                }
            }
        }
        Value::Array(a) if depth < MAX_DEPTH => {
            for (i, x) in a.iter().take(MAX_TEXT_ELEMENTS).enumerate() {
                let p = if path.is_empty() { "." } else { &path };
                collect(x, format!("{p}[{i}]"), depth + 1, found, blobs);
            }
        }
        _ => {}
    }
}

fn is_name(v: &Value) -> bool {
    matches!(v, Value::String(s) if !s.is_empty() && s.len() <= MAX_NAME_BYTES && !s.contains('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_long_text_of_a_wrapper_is_found_with_its_path() {
        let log: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let doc = serde_json::json!({"weird": [log.clone()], "ok": false});
        let text = doc.to_string();
        let (path, s) = dominant_text(&doc, text.len()).unwrap();
        assert_eq!(path, ".weird[0]");
        assert_eq!(s, log);
        let doc = serde_json::json!({"a b": {"out": log.clone()}});
        assert_eq!(
            dominant_text(&doc, doc.to_string().len()).unwrap().0,
            ".[\"a b\"].out"
        );
        // A string beside as much other data, or a long single line, is not the document.
        let doc = serde_json::json!({"log": log.clone(), "data": log.replace('\n', " ")});
        assert!(dominant_text(&doc, doc.to_string().len()).is_none());
        let inner =
            serde_json::to_string_pretty(&serde_json::json!({"a": (0..40).collect::<Vec<_>>()}))
                .unwrap();
        let doc = serde_json::json!({ "body": inner });
        assert!(dominant_text(&doc, doc.to_string().len()).is_none());
        let one = "x".repeat(5000);
        let doc = serde_json::json!({ "blob": one });
        assert!(dominant_text(&doc, doc.to_string().len()).is_none());
    }

    fn source(lines: &[&str]) -> String {
        (0..12)
            .map(|i| format!("{} // {i}\n", lines[i % lines.len()]))
            .collect()
    }

    #[test]
    fn the_text_the_question_names_or_matches_is_chosen_among_many() {
        let a = source(&["import x from './x.js';", "export const retries = 3;"]);
        let b = source(&["const timeout = 0;", "xsrfCookieName: 'XSRF-TOKEN',"]);
        let c = source(&[
            "function bind(fn) {",
            "return fn.apply(thisArg, arguments);",
        ]);
        let doc = serde_json::json!({
            "version": 3,
            "sources": ["../../lib/a.js", "../../lib/defaults/index.js", "../../lib/bind.js"],
            "sourcesContent": [a, b, c],
            "mappings": "AAAA,".repeat(2000),
        });
        let n = doc.to_string().len();
        // By its words: the names parallel to the texts come with it.
        let got = chosen_text(&doc, n, &Query::new("what is the XSRF cookie name?")).unwrap();
        assert_eq!(got.path, ".sourcesContent[1]");
        assert_eq!(got.text, b);
        assert_eq!(
            got.name,
            Some((".sources[1]".to_string(), "../../lib/defaults/index.js"))
        );
        assert_eq!(got.of, 3);
        // By its name, written in the question, over a text whose words match better.
        let q = Query::new("what does lib/bind.js export, and how many retries?");
        let got = chosen_text(&doc, n, &q).unwrap();
        assert_eq!(got.path, ".sourcesContent[2]");
        // No question, or one that no text matches: nothing is chosen.
        assert!(chosen_text(&doc, n, &Query::new("")).is_none());
        assert!(chosen_text(&doc, n, &Query::new("zebra giraffe")).is_none());
    }

    #[test]
    fn texts_that_are_fields_of_records_or_a_small_share_are_not_a_document_of_texts() {
        let a = source(&["line one of a body", "the XSRF cookie"]);
        // Each issue's body: the records have other fields to show.
        let doc = serde_json::json!({"items": [
            {"id": 1, "body": a.clone()}, {"id": 2, "body": a.clone()}
        ]});
        let q = Query::new("which issue mentions the XSRF cookie?");
        assert!(chosen_text(&doc, doc.to_string().len(), &q).is_none());
        // Two texts beside as much data in records.
        let rows: Vec<_> = (0..200)
            .map(|i| serde_json::json!({"n": i, "v": "x"}))
            .collect();
        let doc = serde_json::json!({"texts": [a.clone(), a.clone()], "rows": rows});
        assert!(chosen_text(&doc, doc.to_string().len(), &q).is_none());
    }
}
