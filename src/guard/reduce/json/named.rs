//! The part of a large JSON document that the question names by its key: "the `aws_instance`
//! resource in this provider schema", "the `stg_payments` model". The value under that key is
//! shown as one outline in the file's own order and spacing, within a byte budget: children
//! the question's words name first, the others while room is left, the skipped ones counted
//! (`…12 keys…`), so each `"key":value` shown is what a grep of the file finds.

use serde_json::{Map, Value};

use super::render::render_str;
use crate::guard::reduce::rank::{tokenize, Query};

/// Bytes of one named value's outline (about 200 tokens): room for a resource's first fields
/// and each of its nested blocks' first lines, a fifth of the summary at most.
pub(super) const OUTLINE_BYTES: usize = 720;
/// Named values shown at most (a key the question names may recur: a resource and a data
/// source of the same name); the budget is split between them.
const MAX_NAMED: usize = 2;
/// A name that keys more values than this is a field of every record, not one thing asked
/// about.
const MAX_OCCURRENCES: usize = 3;
/// Fewest bytes a child is given in an outline that does not fit: a key and a short value
/// (`"ami":{"type":"string","required":true}` is 39).
const MIN_CHILD: usize = 44;
/// Nodes walked at most looking for the named keys (a 3 MB document has about 200,000).
const MAX_NODES: usize = 400_000;
/// Shortest question word matched against keys: 3-letter words are field names everywhere.
const MIN_NAME: usize = 4;

/// One value the question names by its key: the object keys leading to it (the key last)
/// and its outline (`"aws_instance":{"version":1,"block":{…}}`).
pub(super) struct Named {
    pub path: Vec<String>,
    pub outline: String,
}

/// True for a question word that reads as an identifier rather than prose: it holds a `_`,
/// `.`, `:` or `/`, or mixes letters and digits (`aws_instance`, `stg_payments`, `v2beta1`).
fn identifier(name: &str) -> bool {
    name.contains(['_', '.', ':', '/'])
        || (name.chars().any(|c| c.is_ascii_digit()) && name.chars().any(|c| c.is_alphabetic()))
}

/// True when object key `key` is the question's word `name`: equal ignoring case, or, for an
/// identifier, one dot-, slash- or colon-separated part of the key (`model.shop.stg_payments`).
fn key_is(key: &str, name: &str) -> bool {
    key.eq_ignore_ascii_case(name)
        || (identifier(name)
            && key.len() > name.len()
            && key
                .split(['.', '/', ':'])
                .any(|p| p.eq_ignore_ascii_case(name)))
}

/// The values (objects and arrays) under keys the question names, each outlined in at most
/// [`OUTLINE_BYTES`] bytes (split between them), `pretty` choosing `": "` and `", "` as
/// separators (a pretty-printed file) or none (a compact one). A name keying more than
/// [`MAX_OCCURRENCES`] values is skipped, and so is a plain word (not an [`identifier`]: a
/// word of prose keys a field as often as the thing asked about). Empty when the question
/// names no key.
pub(super) fn named_values(v: &Value, q: &Query, pretty: bool) -> Vec<Named> {
    let names: Vec<&str> = q
        .names
        .iter()
        .map(String::as_str)
        .filter(|n| n.len() >= MIN_NAME && identifier(n))
        .collect();
    if names.is_empty() {
        return Vec::new();
    }
    let mut found: Vec<Vec<(Vec<String>, &Value)>> = vec![Vec::new(); names.len()];
    let mut nodes = 0;
    walk(v, &mut Vec::new(), &names, &mut found, &mut nodes);
    let mut picked: Vec<(Vec<String>, &Value)> = Vec::new();
    for hits in found {
        if hits.is_empty() || hits.len() > MAX_OCCURRENCES {
            continue;
        }
        for h in hits {
            if picked.len() < MAX_NAMED && !picked.iter().any(|(p, _)| p == &h.0) {
                picked.push(h);
            }
        }
    }
    let budget = OUTLINE_BYTES / picked.len().max(1);
    let sep = Sep::of(pretty);
    picked
        .into_iter()
        .map(|(path, x)| {
            let key = path.last().cloned().unwrap_or_default();
            let mut out = format!("{}{}", quoted(&key), sep.colon);
            outline(x, budget.saturating_sub(out.len()), q, sep, &mut out);
            Named { path, outline: out }
        })
        .collect()
}

/// 1-based line of the first `"key":` of `path`'s last key in `text` (`starts` from
/// [`super::line_starts`]), for a key deeper than the offsets scan records.
pub(super) fn key_line(text: &str, starts: &[usize], path: &[String]) -> Option<usize> {
    let key = quoted(path.last()?);
    let mut from = 0;
    while let Some(i) = text[from..].find(&key) {
        let at = from + i;
        let after = text[at + key.len()..].trim_start_matches([' ', '\t', '\r', '\n']);
        if after.starts_with(':') {
            return Some(super::line_of(starts, at));
        }
        from = at + key.len();
    }
    None
}

fn walk<'v>(
    v: &'v Value,
    path: &mut Vec<&'v str>,
    names: &[&str],
    found: &mut [Vec<(Vec<String>, &'v Value)>],
    nodes: &mut usize,
) {
    *nodes += 1;
    if *nodes > MAX_NODES {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if x.is_object() || x.is_array() {
                    for (i, n) in names.iter().enumerate() {
                        // Counted past the limit only to know it is past it.
                        if key_is(k, n) && found[i].len() <= MAX_OCCURRENCES {
                            let mut p: Vec<String> = path.iter().map(|s| s.to_string()).collect();
                            p.push(k.clone());
                            found[i].push((p, x));
                        }
                    }
                }
                path.push(k.as_str());
                walk(x, path, names, found, nodes);
                path.pop();
            }
        }
        Value::Array(a) => {
            for x in a {
                walk(x, path, names, found, nodes);
            }
        }
        _ => {}
    }
}

/// Separators as the file writes them.
#[derive(Clone, Copy)]
struct Sep {
    colon: &'static str,
    comma: &'static str,
}

impl Sep {
    fn of(pretty: bool) -> Sep {
        if pretty {
            Sep {
                colon: ": ",
                comma: ", ",
            }
        } else {
            Sep {
                colon: ":",
                comma: ",",
            }
        }
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Bytes of `v` written compactly, counted up to `cap` (past it the count stops growing
/// much: the caller only asks whether it fits).
fn size(v: &Value, cap: usize) -> usize {
    fn go(v: &Value, cap: usize, acc: &mut usize) {
        if *acc > cap {
            return;
        }
        match v {
            Value::String(s) => *acc += s.len() + 2,
            Value::Number(n) => *acc += n.to_string().len(),
            Value::Bool(b) => *acc += if *b { 4 } else { 5 },
            Value::Null => *acc += 4,
            Value::Array(a) => {
                *acc += 2 + a.len().saturating_sub(1);
                for x in a {
                    go(x, cap, acc);
                }
            }
            Value::Object(m) => {
                *acc += 2 + m.len().saturating_sub(1);
                for (k, x) in m {
                    *acc += k.len() + 3;
                    go(x, cap, acc);
                }
            }
        }
    }
    let mut acc = 0;
    go(v, cap, &mut acc);
    acc
}

/// How many of the question's terms a child names: in its key, its scalar value, or the keys
/// and scalar values one level down (an attribute `{"type":"string","required":true}` is
/// named by "required").
fn score(key: &str, v: &Value, q: &Query) -> usize {
    let mut toks = tokenize(key);
    let scalar = |x: &Value| match x {
        Value::String(s) if s.len() <= 200 => Some(s.clone()),
        Value::Bool(true) => Some(String::new()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter().take(32) {
                if let Some(s) = scalar(x) {
                    // A flag set true names the flag (`"required":true`); false does not.
                    if !matches!(x, Value::Bool(false)) {
                        toks.extend(tokenize(k));
                    }
                    toks.extend(tokenize(&s));
                } else {
                    toks.extend(tokenize(k));
                }
            }
        }
        x => {
            if let Some(s) = scalar(x) {
                toks.extend(tokenize(&s));
            }
        }
    }
    toks.sort();
    toks.dedup();
    toks.iter().filter(|t| q.has(t)).count()
}

/// Writes `v` into `out` in at most about `budget` bytes (see the module doc).
fn outline(v: &Value, budget: usize, q: &Query, sep: Sep, out: &mut String) {
    if (v.is_object() || v.is_array()) && size(v, budget) <= budget {
        out.push_str(&whole(v, sep));
        return;
    }
    match v {
        Value::Object(m) => object(m, budget, q, sep, out),
        Value::Array(a) => array(a, budget, q, sep, out),
        Value::String(s) => out.push_str(&render_str(s, budget.clamp(12, 160))),
        other => out.push_str(&other.to_string()),
    }
}

fn whole(v: &Value, sep: Sep) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    if sep.colon == ":" {
        s
    } else {
        spaced(&s)
    }
}

/// Compact JSON with `": "` and `", "` between items (strings left as they are).
fn spaced(compact: &str) -> String {
    let mut out = String::with_capacity(compact.len() + compact.len() / 8);
    let mut scan = super::render::StringScan::default();
    for c in compact.chars() {
        out.push(c);
        if scan.outside(c) && (c == ':' || c == ',') {
            out.push(' ');
        }
    }
    out
}

/// An object that does not fit its budget (see [`outline`]).
fn object(m: &Map<String, Value>, budget: usize, q: &Query, sep: Sep, out: &mut String) {
    if m.is_empty() || budget < MIN_CHILD / 2 {
        out.push_str(&format!("{{…{} keys}}", m.len()));
        return;
    }
    let entries: Vec<(&String, &Value)> = m.iter().collect();
    let n = entries.len();
    let room = (budget / MIN_CHILD).clamp(1, n);
    let mut order: Vec<(usize, usize)> = entries
        .iter()
        .enumerate()
        .map(|(i, (k, x))| (i, score(k, x, q)))
        .collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut shown: Vec<usize> = order.iter().take(room).map(|&(i, _)| i).collect();
    shown.sort_unstable();
    out.push('{');
    let start = out.len();
    let mut left = budget;
    let mut prev: Option<usize> = None;
    for (j, &i) in shown.iter().enumerate() {
        let (k, x) = entries[i];
        let skipped = i - prev.map_or(0, |p| p + 1);
        if out.len() > start {
            out.push_str(sep.comma);
        }
        if skipped > 0 {
            out.push_str(&format!(
                "…{skipped} {}…{}",
                plural(skipped, "key"),
                sep.comma
            ));
        }
        let before = out.len();
        out.push_str(&quoted(k));
        out.push_str(sep.colon);
        let cap = (left / (shown.len() - j)).max(MIN_CHILD);
        outline(x, cap.saturating_sub(out.len() - before), q, sep, out);
        left = left.saturating_sub(out.len() - before);
        prev = Some(i);
    }
    let rest = n - prev.map_or(0, |p| p + 1);
    if rest > 0 {
        out.push_str(&format!(
            "{}…{rest} more {}",
            sep.comma,
            plural(rest, "key")
        ));
    }
    out.push('}');
}

/// An array that does not fit its budget (see [`outline`]).
fn array(a: &[Value], budget: usize, q: &Query, sep: Sep, out: &mut String) {
    if a.is_empty() || budget < MIN_CHILD / 2 {
        out.push_str(&format!("[…{} items]", a.len()));
        return;
    }
    out.push('[');
    let mut left = budget;
    let room = (budget / MIN_CHILD).clamp(1, a.len());
    let mut shown = 0;
    for (j, x) in a.iter().take(room).enumerate() {
        if j > 0 {
            out.push_str(sep.comma);
        }
        let before = out.len();
        outline(x, (left / (room - j)).max(MIN_CHILD), q, sep, out);
        left = left.saturating_sub(out.len() - before);
        shown += 1;
        if left < MIN_CHILD / 2 {
            break;
        }
    }
    if a.len() > shown {
        let rest = a.len() - shown;
        out.push_str(&format!(
            "{}…{rest} more {}",
            sep.comma,
            plural(rest, "item")
        ));
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Query {
        Query::new(s)
    }

    #[test]
    fn a_key_the_question_names_is_outlined_in_file_order_within_budget() {
        let mut attrs = Map::new();
        for i in 0..60 {
            let req = i == 40;
            attrs.insert(
                format!("attr_{i:02}"),
                serde_json::json!({"type": "string", if req {"required"} else {"optional"}: true}),
            );
        }
        let doc = serde_json::json!({
            "schemas": {
                "aws_vpc": {"version": 1, "block": {"attributes": {"cidr": {"type": "string"}}}},
                "aws_instance": {"version": 1, "block": {
                    "attributes": attrs,
                    "block_types": {"ebs_block_device": {"nesting_mode": "set", "block": {"attributes": {}}}}
                }}
            }
        });
        let got = named_values(
            &doc,
            &q("What are the required arguments and nested blocks of the aws_instance resource?"),
            false,
        );
        assert_eq!(got.len(), 1);
        let o = &got[0].outline;
        assert_eq!(got[0].path, vec!["schemas", "aws_instance"]);
        assert!(
            o.starts_with(r#""aws_instance":{"version":1,"block":{"attributes":{"#),
            "{o}"
        );
        // The one required attribute is shown though it is the 41st, and so is the nested block.
        assert!(
            o.contains(r#""attr_40":{"type":"string","required":true}"#),
            "{o}"
        );
        assert!(
            o.contains(r#""ebs_block_device":{"nesting_mode":"set""#),
            "{o}"
        );
        assert!(o.contains("keys…"), "skipped keys are counted: {o}");
        assert!(o.len() <= OUTLINE_BYTES + 80, "{} bytes: {o}", o.len());
        assert!(!o.contains("aws_vpc"));
    }

    #[test]
    fn a_plain_word_is_no_name() {
        let doc = serde_json::json!([
            {"status": {"code": 1}}, {"required": {"code": 2}}
        ]);
        assert!(named_values(&doc, &q("what status is required"), false).is_empty());
        // An identifier keying one value is one.
        let doc =
            serde_json::json!({"nodes": {"model.shop.stg_payments": {"columns": {"id": {}}}}});
        let got = named_values(&doc, &q("which columns has stg_payments"), true);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].outline,
            r#""model.shop.stg_payments": {"columns": {"id": {}}}"#
        );
    }
}
