//! A document that wraps one text: `{"log": "…"}`, `{"result": {"output": "…"}}`, `[ "…" ]`.
//! A tool's result often reaches toolsum as JSON of a shape nobody named (a hook payload an
//! agent changed, an API that returns a job's log as a string): the text is what the output
//! says, and the wrapper only a few keys around it.

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
}
