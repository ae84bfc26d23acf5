//! A JSON record's scalar leaves and their rendering as the file writes them: `"key": value`
//! pairs (with the openers of nested objects and lists), a record's flat rendering, and the
//! layouts a JSON text may be written in.

use serde_json::Value;

use super::{MAX_PAIR_ARRAY, RECORD_SHOW_BYTES};
use crate::guard::reduce::{clip_str, show_line_max, CUT_MARK};

/// How the JSON text writes a key and its value: `"k": v` (pretty; also `"k":\tv`, as
/// `iperf3 -J` does) or `"k":v` (compact).
pub(crate) fn pretty_style(text: &str) -> bool {
    let head = clip_str(text, 64 * 1024);
    let spaced = head.matches("\": ").count() + head.matches("\":\t").count();
    let tight = head.matches("\":").count().saturating_sub(spaced);
    spaced >= tight
}

/// How a JSON text writes its values around the pairs it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Style {
    /// `"k": v` and `, ` ([`pretty_style`]), else `"k":v` and `,`.
    pub(super) spaced: bool,
    /// A space inside an object's or a list's brackets, `{ "a": 1 }` ([`padded_style`]).
    pub(super) padded: bool,
}

impl Style {
    /// What a key's colon is followed by, and what stands inside a bracket.
    fn marks(self) -> (&'static str, &'static str) {
        (
            if self.spaced { "\": " } else { "\":" },
            if self.padded { " " } else { "" },
        )
    }
}

/// True when the JSON text puts whitespace inside its brackets: a document of one member per
/// line, as read with its whitespace collapsed (`{ "a": [ 1 ] }`), known by a bracket that
/// ends its line (a newline in JSON text is whitespace between tokens, never in a string);
/// on one line, by more brackets followed by a space than by a value. Python's one-line
/// `json.dumps` is spaced but writes `{"a": [1]}` (trial of session 53: a dbt manifest quoted
/// as `"refs": [ { "name": "customers",`, which is in no file). Judged on the text's first
/// 64 KiB.
pub(super) fn padded_style(text: &str) -> bool {
    let head = clip_str(text, 64 * 1024).as_bytes();
    let (mut spaced, mut tight) = (0usize, 0usize);
    for (i, &c) in head.iter().enumerate() {
        if !matches!(c, b'{' | b'[') {
            continue;
        }
        let rest = &head[i + 1..];
        let blank = rest
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
        match rest.get(blank) {
            Some(b'\n' | b'\r') => return true,
            Some(b'}' | b']') | None => {}
            Some(_) if blank > 0 => spaced += 1,
            Some(_) => tight += 1,
        }
    }
    spaced > tight
}

/// True when `v` holds, at any depth, a list of objects walked as records of their own (not
/// a [`small_object_array`]): a record shown whole would repeat them.
pub(super) fn has_records(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.values().any(has_records),
        Value::Array(a) => {
            (a.iter().any(Value::is_object) && !small_object_array(a)) || a.iter().any(has_records)
        }
        _ => false,
    }
}

/// `v` as `raw` writes it, when it fits in `max` bytes: minified (`compact`, its
/// `serde_json::to_string`, found in `raw`), or spaced or one member per line ([`layout`]),
/// found in `flat`, the text of `raw` with its whitespace collapsed (made on first use, so a
/// caller quoting several records of one text collapses it once). `None` when `raw` writes it
/// otherwise (other escapes, other number forms): then it is not quoted as written.
pub(crate) fn written_in(
    v: &Value,
    compact: String,
    raw: &str,
    flat: &mut Option<String>,
    max: usize,
) -> Option<String> {
    if compact.len() > max {
        return None;
    }
    if raw.contains(&compact) {
        return Some(compact);
    }
    let flat = flat.get_or_insert_with(|| raw.split_whitespace().collect::<Vec<_>>().join(" "));
    [layout(v, false), layout(v, true)]
        .into_iter()
        .find(|l| l.len() <= max && flat.contains(l.as_str()))
        .or_else(|| spaced_as_written(&compact, raw, max))
}

/// The text of `raw` that is `compact` (minified JSON) with whitespace of its own between
/// tokens, in whatever style (checksec's `{ "relro":"full","canary":"no", … }`): found by
/// reading `raw` without its whitespace outside strings. Returned as written, its whitespace
/// runs collapsed to one space when it spans lines; `None` when not found or longer than
/// `max` bytes.
///
/// `raw` may be a window cut anywhere in a document, inside a string: read first as starting
/// outside one, then as starting inside one.
fn spaced_as_written(compact: &str, raw: &str, max: usize) -> Option<String> {
    spaced_from(compact, raw, max, false).or_else(|| spaced_from(compact, raw, max, true))
}

/// [`spaced_as_written`] with `raw` read as starting inside a string when `in_string`.
fn spaced_from(compact: &str, raw: &str, max: usize, in_string: bool) -> Option<String> {
    // `raw` without whitespace outside strings, and where each kept byte was.
    let mut bare = String::with_capacity(raw.len());
    let mut at: Vec<usize> = Vec::with_capacity(raw.len());
    let mut scan = crate::guard::reduce::json::StringScan::starting(in_string);
    for (i, c) in raw.char_indices() {
        if scan.outside(c) && c.is_whitespace() {
            continue;
        }
        bare.push(c);
        at.extend(std::iter::repeat_n(i, c.len_utf8()));
    }
    let start = bare.find(compact)?;
    let last = start + compact.len() - 1;
    let (lo, hi) = (at[start], at[last] + 1);
    let hi = (hi..=raw.len())
        .find(|&h| raw.is_char_boundary(h))
        .unwrap_or(raw.len());
    let text = &raw[lo..hi];
    let shown = if text.contains('\n') {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        text.to_string()
    };
    (shown.len() <= max).then_some(shown)
}

/// `v` as JSON text with a space after each `:` and `,`: `{"a": 1, "b": [1, 2]}` (Python's
/// `json.dumps`), or with `lines`, as a document of one member per line reads with its
/// whitespace collapsed: `{ "a": 1, "b": [ 1, 2 ] }` (empty ones stay `{}` and `[]`).
pub(super) fn layout(v: &Value, lines: bool) -> String {
    let pad = if lines { " " } else { "" };
    match v {
        Value::Object(m) if !m.is_empty() => {
            let inner: Vec<String> = m
                .iter()
                .map(|(k, x)| format!("{}: {}", Value::String(k.clone()), layout(x, lines)))
                .collect();
            format!("{{{pad}{}{pad}}}", inner.join(", "))
        }
        Value::Array(a) if !a.is_empty() => {
            let inner: Vec<String> = a.iter().map(|x| layout(x, lines)).collect();
            format!("[{pad}{}{pad}]", inner.join(", "))
        }
        other => other.to_string(),
    }
}

/// A scalar as JSON text (strings quoted and escaped as serde_json writes them).
pub(super) fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => Some(v.to_string()),
        _ => None,
    }
}

/// The plain value of a scalar (strings unquoted), for field statistics.
pub(super) fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A scalar leaf of a record.
pub(super) struct Leaf<'a> {
    /// Its path relative to the record (`data.title`, `tags[]`, `refs[].url`).
    pub(super) path: String,
    /// Its own key as the file writes it (a key may hold dots: `app.kubernetes.io/name`).
    pub(super) key: String,
    pub(super) value: &'a Value,
    /// Whether a comma follows it in the file (it is not the last member of its object or
    /// array; JSON writes that comma right after the value, so `"key": value,` is the file's
    /// own text).
    pub(super) comma: bool,
    /// What the file writes right before its key when it is the first member of nested
    /// objects or of a small list's first object (`"code":{`, `"author": [ { `, whitespace as
    /// a collapsed reading of the file); empty otherwise.
    pub(super) opens: String,
    /// For an element of a short list of scalars, what the file writes around it: `[` before
    /// the first (after the key), `]` after the last, with the list's own comma when another
    /// member follows it (`"tags": [ "a", "b" ],`); `None` for other leaves.
    pub(super) elem: Option<Elem>,
}

/// Where a leaf sits in a short list of scalars ([`Leaf::elem`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Elem {
    pub(super) first: bool,
    pub(super) last: bool,
    /// A comma follows the list's `]`.
    pub(super) list_comma: bool,
}

/// Scalar leaves of an object, depth-first, at most `max`; `pending` is the opener of the
/// object `v` itself (given to its first leaf), `style` the document's.
pub(super) fn flat_leaves<'a>(
    v: &'a Value,
    prefix: &str,
    depth: usize,
    max: usize,
    out: &mut Vec<Leaf<'a>>,
    style: Style,
    pending: &str,
) {
    if out.len() >= max || depth > 3 {
        return;
    }
    let (sep, sp) = style.marks();
    match v {
        Value::Object(m) => {
            let n = m.len();
            for (i, (k, x)) in m.iter().enumerate() {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                let before = if i == 0 { pending } else { "" };
                match x {
                    Value::Object(_) => {
                        let opens = format!("{before}\"{k}{sep}{{{sp}");
                        flat_leaves(x, &p, depth + 1, max, out, style, &opens)
                    }
                    Value::Array(a)
                        if a.iter().all(|e| !e.is_object() && !e.is_array())
                            && a.len() <= MAX_PAIR_ARRAY =>
                    {
                        for (j, e) in a.iter().enumerate() {
                            if out.len() < max {
                                out.push(Leaf {
                                    path: format!("{p}[]"),
                                    key: k.clone(),
                                    value: e,
                                    comma: j + 1 < a.len(),
                                    opens: if j == 0 {
                                        before.to_string()
                                    } else {
                                        String::new()
                                    },
                                    elem: Some(Elem {
                                        first: j == 0,
                                        last: j + 1 == a.len(),
                                        list_comma: i + 1 < n,
                                    }),
                                });
                            }
                        }
                    }
                    Value::Array(a) if small_object_array(a) => {
                        for (ei, e) in a.iter().enumerate() {
                            let Value::Object(o) = e else { continue };
                            let m = o.len();
                            for (j, (kk, y)) in o.iter().enumerate() {
                                if out.len() < max {
                                    let opens = if ei == 0 && j == 0 {
                                        format!("{before}\"{k}{sep}[{sp}{{{sp}")
                                    } else {
                                        String::new()
                                    };
                                    out.push(Leaf {
                                        path: format!("{p}[].{kk}"),
                                        key: kk.clone(),
                                        value: y,
                                        comma: j + 1 < m,
                                        opens,
                                        elem: None,
                                    });
                                }
                            }
                        }
                    }
                    Value::Array(_) => {}
                    _ => out.push(Leaf {
                        path: p,
                        key: k.clone(),
                        value: x,
                        comma: i + 1 < n,
                        opens: before.to_string(),
                        elem: None,
                    }),
                }
                if out.len() >= max {
                    return;
                }
            }
        }
        _ => out.push(Leaf {
            path: prefix.to_string(),
            key: prefix.rsplit('.').next().unwrap_or(prefix).to_string(),
            value: v,
            comma: false,
            opens: String::new(),
            elem: None,
        }),
    }
}

/// Most objects in an array of a record for their scalars to be pairs of the record.
pub(super) const SMALL_OBJECT_ARRAY: usize = 2;
/// Most members of each of those objects.
pub(super) const SMALL_OBJECT_KEYS: usize = 6;

/// An array of at most [`SMALL_OBJECT_ARRAY`] objects of at most [`SMALL_OBJECT_KEYS`]
/// scalars each (a package's one `externalRefs` entry, a resource's two tags): part of its
/// record, shown with it, not records of their own.
pub(super) fn small_object_array(a: &[Value]) -> bool {
    !a.is_empty()
        && a.len() <= SMALL_OBJECT_ARRAY
        && a.iter().all(|e| {
            e.as_object().is_some_and(|o| {
                !o.is_empty()
                    && o.len() <= SMALL_OBJECT_KEYS
                    && o.values().all(|x| scalar(x).is_some())
            })
        })
}

/// Each scalar leaf as the file writes it: `"key": value` (`"key":value` when compact); long
/// string values are cut outside their quotes.
pub(super) fn pairs(leaves: &[Leaf], style: Style) -> Vec<String> {
    let (sep, sp) = style.marks();
    leaves
        .iter()
        .map(|l| {
            let v = scalar(l.value).unwrap_or_default();
            let pair = match l.elem {
                // A list's elements as the file writes them: `"tags": [ "a",`, `"b",`, `"c" ]`.
                Some(e) if e.first => format!("{}\"{}{sep}[{sp}{v}", l.opens, l.key),
                Some(_) => format!("{}{v}", l.opens),
                None => format!("{}\"{}{sep}{v}", l.opens, l.key),
            };
            let shown = show_line_max(&pair, RECORD_SHOW_BYTES / 2);
            if shown.len() != pair.len() {
                // Cut: no closing bracket or comma glued to a cut value.
                return shown;
            }
            match l.elem {
                Some(e) if e.last => {
                    format!("{shown}{sp}]{}", if e.list_comma { "," } else { "" })
                }
                _ if l.comma => shown + ",",
                _ => shown,
            }
        })
        .collect()
}

/// Renders a record: its scalar leaves as `"key": value` pairs (the file's own spacing), joined
/// by `, `, in braces when whole; a record too long to show whole ends with the cut mark.
pub(super) fn render_record(leaves: &[Leaf], style: Style) -> String {
    let (sep, sp) = style.marks();
    let mut out = String::from("{");
    let mut cut = false;
    for (i, l) in leaves.iter().enumerate() {
        let Some(val) = scalar(l.value) else { continue };
        let close = match l.elem {
            Some(e) if e.last => format!("{sp}]"),
            _ => String::new(),
        };
        let pair = match l.elem {
            Some(e) if e.first => format!("\"{}{sep}[{sp}{val}{close}", l.key),
            Some(_) => format!("{val}{close}"),
            None => format!("\"{}{sep}{val}", l.key),
        };
        if out.len() + pair.len() > RECORD_SHOW_BYTES {
            // A long string value is cut outside its quotes, never inside.
            cut = true;
            if i == 0 {
                out.push_str(&show_line_max(&pair, RECORD_SHOW_BYTES));
            }
            break;
        }
        if i > 0 {
            out.push_str(if style.spaced { ", " } else { "," });
        }
        out.push_str(&pair);
    }
    if cut {
        out.push_str(&format!(" {}", CUT_MARK));
    } else {
        out.push('}');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_quoted_in_its_files_own_spacing() {
        let raw = r#"{ "dir": { "name":"/usr/bin" }, "/usr/bin/node": { "relro":"full","canary":"no","name":"a b" }, "x": 1 }"#;
        let v: Value = serde_json::from_str(raw).unwrap();
        let rec = &v["/usr/bin/node"];
        let compact = serde_json::to_string(rec).unwrap();
        let shown = written_in(rec, compact, raw, &mut None, 400).unwrap();
        assert_eq!(shown, r#"{ "relro":"full","canary":"no","name":"a b" }"#);
        assert!(raw.contains(&shown));
        // Across lines, its whitespace runs collapsed (a string's too: the file read collapsed).
        let raw = "{\n  \"a\" :\n    { \"k\":  \"x  y\",\n  \"n\":1 }\n}";
        let v: Value = serde_json::from_str(raw).unwrap();
        let compact = serde_json::to_string(&v["a"]).unwrap();
        assert_eq!(
            written_in(&v["a"], compact, raw, &mut None, 400).as_deref(),
            Some("{ \"k\": \"x y\", \"n\":1 }")
        );
        // Not in the text: none.
        let compact = serde_json::to_string(rec).unwrap();
        assert!(spaced_as_written(&compact, r#"{"a":1}"#, 400).is_none());
    }

    #[test]
    fn brackets_are_padded_only_where_the_file_pads_them() {
        // One member per line: collapsed, `{ "a": [ 1 ] }`.
        assert!(padded_style("{\n  \"a\": [\n    1\n  ]\n}\n"));
        // Python's one-line json.dumps, and minified JSON: `{"a": [1]}`.
        assert!(!padded_style(
            r#"{"refs": [{"name": "customers"}], "x": {"y": []}}"#
        ));
        assert!(!padded_style(r#"{"a":[1,2],"b":{"c":3}}"#));
        // A bracket in a string is no layout; a raw newline is only ever between tokens.
        assert!(!padded_style(
            r#"{"msg": "[ x ] { y }", "v": [1], "w": {"z": 2}}"#
        ));
        assert!(padded_style(r#"{ "a": [ 1, 2 ], "b": { "c": 3 } }"#));
        let v: Value =
            serde_json::from_str(r#"{"refs": [{"name": "customers", "package": null}]}"#).unwrap();
        let mut leaves = Vec::new();
        let style = Style {
            spaced: true,
            padded: false,
        };
        flat_leaves(&v, "", 0, 20, &mut leaves, style, "");
        assert_eq!(
            pairs(&leaves, style)[0],
            r#""refs": [{"name": "customers","#
        );
    }
}
