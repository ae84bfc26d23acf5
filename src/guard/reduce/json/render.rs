//! JSON values and records on one line: rendering (long strings, base64 and big containers
//! abbreviated; failure and identity keys first), a record's identifying fields, and the test of
//! whether a record says it failed.

use serde_json::{Map, Value};

use crate::guard::reduce::{clip_str, count, show_line_max};

/// Strings longer than this that look like base64 are replaced by a descriptor.
const BASE64_MIN: usize = 200;

fn looks_base64(s: &str) -> bool {
    s.len() >= BASE64_MIN
        && !s.contains(' ')
        && s.bytes().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'-' | b'_' | b'\n')
        })
}

pub(super) fn render_str(s: &str, max: usize) -> String {
    if looks_base64(s) {
        // Not quoted: the description is not a string of the input.
        return "<base64 data, not shown>".to_string();
    }
    if s.len() > max {
        let cut = clip_str(s, max);
        // The marker goes after the closing quote: the quoted part is then a prefix of the
        // input's string, and the marker no claim about it.
        let q = serde_json::to_string(cut).unwrap_or_default();
        return format!("{q}…[cut]");
    }
    serde_json::to_string(s).unwrap_or_default()
}

/// Renders a value on one line with `": "` and `", "` separators (so `"status": 422` reads as in
/// pretty-printed JSON), abbreviating long strings, base64, and big arrays/objects, within `max` bytes.
pub fn render(v: &Value, max: usize) -> String {
    let mut out = String::new();
    render_into(v, max, 0, &mut out);
    if out.len() > max {
        let cut = clip_str(&out, max).to_string();
        return format!("{cut}…");
    }
    out
}

fn render_into(v: &Value, max: usize, depth: usize, out: &mut String) {
    if out.len() > max {
        return;
    }
    match v {
        Value::String(s) => out.push_str(&render_str(s, 160)),
        Value::Array(a) => {
            if depth > 3 {
                out.push_str(&format!("[…{} items]", count(a.len())));
                return;
            }
            if a.len() > 8 && a.iter().all(|x| !x.is_object()) {
                out.push_str(&format!("[…{} items]", count(a.len())));
                return;
            }
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i >= 5 {
                    out.push_str(&format!(", …{} more", count(a.len() - 5)));
                    break;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                render_into(x, max, depth + 1, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            if depth > 3 || (depth > 0 && m.len() > 16) {
                out.push_str(&format!("{{…{} keys}}", count(m.len())));
                return;
            }
            out.push('{');
            // Failure and identity fields first, so a cut keeps them.
            let mut keys: Vec<(&String, &Value)> = m.iter().collect();
            keys.sort_by_key(|(k, _)| {
                let l = k.to_ascii_lowercase();
                if FIRST_KEYS.contains(&l.as_str()) {
                    0
                } else if ID_KEYS.contains(&l.as_str()) {
                    1
                } else {
                    2
                }
            });
            for (i, (k, x)) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&format!("\"{k}\": "));
                render_into(x, max, depth + 1, out);
                if out.len() > max {
                    break;
                }
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

const FAIL_WORDS: &[&str] = &[
    "failed",
    "failure",
    "fail",
    "error",
    "errored",
    "fatal",
    "crashed",
    "timed_out",
    "timeout",
    "critical",
    "crashloopbackoff",
    "oomkilled",
    "aborted",
    "rejected",
    "err",
    "broken",
    "unhealthy",
];

/// Levels of objects nested in a record that [`record_fails`] looks into.
const NESTED_FAIL_DEPTH: usize = 3;

/// True when a record failed by its own fields ([`is_failure`]) or by those of an object
/// nested in it, at most [`NESTED_FAIL_DEPTH`] levels down and outside arrays (k6's
/// `{"data": {"tags": {"status": "404"}}}`, a job's `{"result": {"conclusion": "failure"}}`).
pub fn record_fails(m: &Map<String, Value>) -> bool {
    fn nested(m: &Map<String, Value>, depth: usize) -> bool {
        is_failure(m)
            || depth < NESTED_FAIL_DEPTH
                && m.values()
                    .filter_map(Value::as_object)
                    .any(|o| nested(o, depth + 1))
    }
    nested(m, 0)
}

/// True when an object's status/state/level/exit-code/error fields say it failed.
pub fn is_failure(m: &Map<String, Value>) -> bool {
    m.iter().any(|(k, v)| {
        let k = k.to_ascii_lowercase();
        match k.as_str() {
            "status" | "state" | "conclusion" | "result" | "outcome" | "level" | "severity"
            | "phase" | "action" | "event" => match v {
                Value::String(s) => {
                    FAIL_WORDS.contains(&s.to_ascii_lowercase().as_str())
                        // An HTTP status written as a string (k6's tags: `"status":"404"`).
                        || k == "status" && s.parse::<u64>().is_ok_and(|c| (400..600).contains(&c))
                }
                Value::Number(n) => {
                    k == "status" && n.as_u64().is_some_and(|c| (400..600).contains(&c))
                }
                _ => false,
            },
            "exit_code" | "exitcode" | "returncode" | "exit_status" | "exitstatus" => {
                v.as_i64().is_some_and(|c| c != 0)
            }
            // An exit status or an HTTP status (`"statusCode": 200` of a Chrome trace's
            // response): 2xx and 3xx are no failure.
            "statuscode" | "status_code" => v
                .as_i64()
                .is_some_and(|c| c != 0 && !(100..400).contains(&c)),
            "error" | "errors" | "exception" | "err" | "stderr_error" => match v {
                Value::Null | Value::Bool(false) => false,
                Value::String(s) => !s.is_empty(),
                Value::Array(a) => !a.is_empty(),
                Value::Object(o) => !o.is_empty(),
                // A count of errors (`"errors": 0` in every passing suite) fails when not 0.
                Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
                Value::Bool(true) => true,
            },
            "success" | "ok" | "passed" => v == &Value::Bool(false),
            "iserror" | "is_error" => v == &Value::Bool(true),
            _ => false,
        }
    })
}

/// Keys rendered first in a record: they say whether and why it failed.
const FIRST_KEYS: &[&str] = &[
    "status",
    "state",
    "level",
    "severity",
    "conclusion",
    "result",
    "outcome",
    "error",
    "errors",
    "exception",
    "message",
    "exit_code",
    "exitcode",
    "returncode",
    "code",
    "response",
    "reason",
];

const ID_KEYS: &[&str] = &[
    "id",
    "number",
    "name",
    "title",
    "state",
    "status",
    "type",
    "kind",
    "login",
    "user",
    "message",
    "error",
    "code",
    "level",
    "path",
    "exit_code",
    "returncode",
    "unique_id",
    "resource_type",
    "method",
    "url",
    "key",
    "phase",
    "result",
    "conclusion",
    "node",
];

/// Joins a leaf path's keys in [`leaves`]: a character no key holds, where a dot is in
/// keys (`app.kubernetes.io/name`, whose key is not `io/name`).
const PATH_SEP: char = '\u{1f}';

/// The scalar leaves of a record: (path relative to the record, its keys joined by
/// [`PATH_SEP`]; the leaf), arrays as `[]`, in document order, at most `cap`.
fn leaves<'a>(v: &'a Value, path: &mut String, out: &mut Vec<(String, &'a Value)>, cap: usize) {
    if out.len() >= cap {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let len = path.len();
                if !path.is_empty() {
                    path.push(PATH_SEP);
                }
                path.push_str(k);
                leaves(x, path, out, cap);
                path.truncate(len);
            }
        }
        Value::Array(a) => {
            let len = path.len();
            path.push_str("[]");
            for x in a {
                leaves(x, path, out, cap);
            }
            path.truncate(len);
        }
        other => out.push((path.clone(), other)),
    }
}

/// Fewest records for [`Constant`] to call a shared value boilerplate.
const MIN_CONSTANT_RECORDS: usize = 8;

/// Most values of one leaf path (the elements of a nested list) [`distinct`] shows.
const MAX_PER_PATH: usize = 2;

/// Most leaves of one record [`Constant`] looks at.
const MAX_RECORD_LEAVES: usize = 400;

/// The leaf paths whose value is the same in every record of a list (`"deleted": false`,
/// `"event_id": "9747"`, a shared description): they say nothing about which record is which.
#[derive(Debug, Default)]
pub(super) struct Constant(std::collections::HashSet<String>);

impl Constant {
    /// The constant leaf paths of `recs`: present in at least half of them with one value.
    /// Fewer than [`MIN_CONSTANT_RECORDS`] records: none (in a short list the shared value is
    /// often the answer: the one package all four findings are in).
    pub(super) fn of(recs: &[&Map<String, Value>]) -> Constant {
        use std::collections::HashMap;
        if recs.len() < MIN_CONSTANT_RECORDS {
            return Constant::default();
        }
        // path -> (first value, records having it, all equal)
        let mut seen: HashMap<String, (&Value, usize, bool)> = HashMap::new();
        for m in recs {
            let mut ls = Vec::new();
            for (k, v) in m.iter() {
                let mut p = k.clone();
                leaves(v, &mut p, &mut ls, MAX_RECORD_LEAVES);
            }
            let mut mine = std::collections::HashSet::new();
            for (p, v) in ls {
                let first = mine.insert(p.clone());
                let e = seen.entry(p).or_insert((v, 0, true));
                if first {
                    e.1 += 1;
                }
                if e.0 != v {
                    e.2 = false;
                }
            }
        }
        Constant(
            seen.into_iter()
                .filter(|(_, (_, c, eq))| *eq && c * 2 >= recs.len())
                .map(|(p, _)| p)
                .collect(),
        )
    }

    fn has(&self, path: &str) -> bool {
        self.0.contains(path)
    }
}

/// True for a leaf that identifies nothing a reader asks about: an empty string, null, a
/// UUID, a long hex digest.
fn opaque(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => {
            s.is_empty() || (s.len() >= 32 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
        }
        _ => false,
    }
}

/// A record's identifying fields, rendered compactly: [`identity`] without the fields that
/// are the same in every record of its list (`constant`), and with the varying scalar leaves
/// of its nested objects and arrays (`"value": "movieultimate.com"` inside a record's
/// `Attribute` list) when its own fields leave room.
pub(super) fn distinct(
    m: &Map<String, Value>,
    max: usize,
    constant: &Constant,
    q: &crate::guard::reduce::rank::Query,
) -> String {
    if constant.0.is_empty() {
        return identity(m, max);
    }
    // Every scalar leaf, the record's own first, then nested ones (document order).
    let mut order: Vec<(String, &Value)> = Vec::new();
    // The index in `m` of the member each leaf belongs to (its place in the file).
    let mut member: Vec<usize> = Vec::new();
    for (i, (k, v)) in m.iter().enumerate() {
        if !matches!(v, Value::Object(_) | Value::Array(_)) {
            order.push((k.clone(), v));
            member.push(i);
        }
    }
    for (i, (k, v)) in m.iter().enumerate() {
        if matches!(v, Value::Object(_) | Value::Array(_)) {
            let mut p = k.clone();
            leaves(v, &mut p, &mut order, MAX_RECORD_LEAVES);
            member.resize(order.len(), i);
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut per_path: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut cands: Vec<(usize, f64, String, &Value)> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    for (pos, (path, v)) in order.into_iter().enumerate() {
        if constant.has(&path) || k_is_url(&path) || opaque(v) {
            continue;
        }
        let key = path
            .rsplit([PATH_SEP, ']', '['])
            .find(|x| !x.is_empty())
            .unwrap_or(&path)
            .to_string();
        if !seen.insert(format!("{path}={v}")) {
            continue;
        }
        // A list's elements: its first few, not all of them.
        let c = per_path.entry(path.clone()).or_insert(0usize);
        *c += 1;
        if *c > MAX_PER_PATH {
            continue;
        }
        let nested = if path.contains([PATH_SEP, '[']) {
            0.3
        } else {
            0.0
        };
        cands.push((pos, leaf_weight(&key, v, q) - nested, key, v));
        paths.push(path);
    }
    if cands.is_empty() {
        return identity(m, max);
    }
    // The best leaves that fit, shown in document order.
    let mut by_weight: Vec<usize> = (0..cands.len()).collect();
    by_weight.sort_by(|&a, &b| cands[b].1.total_cmp(&cands[a].1).then(a.cmp(&b)));
    let mut keep = vec![false; cands.len()];
    let mut len = 2;
    for i in by_weight {
        let (_, _, key, v) = &cands[i];
        // A part and its separator: `, ` or a ` … ` for the leaves left out before it.
        let n = key.len() + render(v, 120).len() + 9;
        if len + n > max && len > 2 {
            continue;
        }
        len += n;
        keep[i] = true;
    }
    // The elements of one list under their key once, in brackets (`"categories": ["a",
    // "b"]`), never the key repeated per element.
    // Each part with the positions (in `order`) of its first and last leaf: where a leaf
    // between two parts is left out, ` … ` says so, as at either end.
    let mut parts: Vec<(usize, usize, String)> = Vec::new();
    let mut list: Option<(&str, &str, usize, usize, Vec<String>)> = None;
    for (i, (pos, _, key, v)) in cands.iter().enumerate() {
        if !keep[i] {
            continue;
        }
        let path = paths[i].as_str();
        let val = render(v, 120);
        if let Some((p, k, first, _, vals)) = list.take() {
            if p == path {
                let mut vals = vals;
                vals.push(val);
                list = Some((p, k, first, *pos, vals));
                continue;
            }
            parts.push((first, *pos, format!("\"{k}\": [{}]", vals.join(", "))));
        }
        if path.ends_with("[]") {
            list = Some((path, key.as_str(), *pos, *pos, vec![val]));
        } else {
            parts.push((*pos, *pos, format!("\"{key}\": {val}")));
        }
    }
    if let Some((_, k, first, last, vals)) = list {
        parts.push((first, last, format!("\"{k}\": [{}]", vals.join(", "))));
    }
    // In the file's order of members (the record's own scalars were read first); a member
    // left out before, between or after the parts shown is marked ` … `, so the braces never
    // close a record on fewer members than it has.
    parts.sort_by_key(|(first, _, _)| (member[*first], *first));
    // Whether leaf `i` opens (closes) its member: a scalar member is one leaf; a nested
    // one's leaves are read one after another.
    let opens = |i: usize| i == 0 || member[i - 1] != member[i];
    let closes = |i: usize| member.get(i + 1).is_none_or(|&x| x != member[i]);
    // The object a nested leaf sits in (its path less its own key); none for the record's
    // own members. Leaves of two objects shown side by side would read as one object's
    // (`"end": 5778, "line": 200` where the file has `"end":5778},"start":{"line":200`;
    // trial of session 53), and a nested leaf next to the record's braces as its member:
    // only leaves of one object that the file writes one after another are joined, and a
    // nested leaf is marked off from the rest by ` … `.
    let path_at: std::collections::HashMap<usize, &str> = cands
        .iter()
        .zip(&paths)
        .map(|((pos, ..), path)| (*pos, path.as_str()))
        .collect();
    let parent = |i: usize| {
        path_at
            .get(&i)
            .and_then(|p| p.rsplit_once(PATH_SEP))
            .map(|(up, _)| up)
    };
    let mut out = String::from("{");
    if parts
        .first()
        .is_some_and(|(f, _, _)| member[*f] > 0 || !opens(*f) || parent(*f).is_some())
    {
        out.push_str("… ");
    }
    let mut prev: Option<usize> = None;
    for (first, last, text) in &parts {
        if let Some(p) = prev {
            let next_leaf = member[*first] == member[p]
                && *first == p + 1
                && parent(p).is_some_and(|up| !up.contains("[]") && parent(*first) == Some(up));
            let next_member = member[*first] == member[p] + 1
                && closes(p)
                && opens(*first)
                && parent(p).is_none()
                && parent(*first).is_none();
            // The file follows a member with a comma when another comes after it.
            out.push_str(if next_leaf || next_member {
                ", "
            } else {
                ", … "
            });
        }
        out.push_str(text);
        prev = Some(*last);
    }
    if prev.is_some_and(|p| member[p] + 1 < m.len() || !closes(p) || parent(p).is_some()) {
        out.push_str(", …");
    }
    out.push('}');
    show_line_max(&out, max)
}

/// How much a varying leaf says about which record this is, for [`distinct`]: a key or value
/// the intent names most, then names and states ([`ID_KEYS`]), then short values; long prose,
/// clocks and counters least.
fn leaf_weight(key: &str, v: &Value, q: &crate::guard::reduce::rank::Query) -> f64 {
    use crate::guard::reduce::rank::tokenize;
    let text = match v {
        Value::String(s) => s.as_str(),
        _ => "",
    };
    let mut w = 0.0;
    let lower = key.to_ascii_lowercase();
    if tokenize(key).iter().any(|t| q.has(t))
        || (text.len() <= 200 && tokenize(text).iter().any(|t| q.has(t)))
    {
        w += 2.0;
    }
    if ID_KEYS.contains(&lower.as_str()) || FIRST_KEYS.contains(&lower.as_str()) {
        w += 1.0;
    }
    if lower == "value" || lower.ends_with("name") || lower.ends_with("title") {
        w += 0.8;
    }
    match v {
        Value::String(s) if s.len() > 80 => w -= 1.0,
        Value::String(s) if s.parse::<f64>().is_err() => w += 0.5,
        Value::Bool(_) => w -= 0.3,
        _ => {}
    }
    if [
        "time",
        "date",
        "timestamp",
        "uuid",
        "created",
        "modified",
        "updated",
    ]
    .iter()
    .any(|x| lower.contains(x))
        || (lower.ends_with("id") && lower != "id")
    {
        w -= 0.8;
    }
    w
}

/// True for a URL-valued key (`html_url`, `events_url`), which repeats the record's id.
fn k_is_url(path: &str) -> bool {
    path.ends_with("url") && !path.ends_with("/url")
}

/// A record's identifying fields, rendered compactly.
pub(super) fn identity(m: &Map<String, Value>, max: usize) -> String {
    let mut picked: Vec<(&String, &Value)> = Vec::new();
    for k in ID_KEYS {
        if let Some((kk, v)) = m.get_key_value(*k) {
            picked.push((kk, v));
        }
    }
    for (k, v) in m {
        if picked.len() >= 10 {
            break;
        }
        let scalar = matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_));
        if scalar && !k.ends_with("url") && k != "node_id" && !picked.iter().any(|(pk, _)| *pk == k)
        {
            picked.push((k, v));
        }
    }
    // Shown in the record's own order, a ` … ` where members are left out between two shown
    // ones: the ids first (`{"id": …, "status": …, "node": …}` of a record that writes
    // `duration_ms` before `node`) would be a record no file holds.
    let pos = |k: &str| m.keys().position(|x| x == k).unwrap_or(usize::MAX);
    picked.sort_by_key(|(k, _)| pos(k));
    let mut out = String::from("{");
    let mut n = 0;
    let mut prev: Option<usize> = None;
    for (k, v) in &picked {
        let val = match v {
            // A nested object by the fields that name it; one with none of them is left out,
            // never shown as `{}` (the file's object is not empty).
            Value::Object(o) => {
                let inner: Vec<String> = ["login", "name", "id", "title", "message", "code"]
                    .iter()
                    .filter_map(|ik| o.get(*ik).map(|x| format!("\"{ik}\": {}", render(x, 80))))
                    .take(2)
                    .collect();
                if inner.is_empty() {
                    continue;
                }
                format!("{{{}}}", inner.join(", "))
            }
            other => render(other, 120),
        };
        let at = pos(k);
        match prev {
            None => {}
            Some(p) if at == p + 1 => out.push_str(", "),
            Some(_) => out.push_str(", … "),
        }
        prev = Some(at);
        n += 1;
        out.push_str(&format!("\"{k}\": {val}"));
    }
    if n == 0 {
        return String::new();
    }
    // Members left out before the first shown or after the last are marked too: the braces
    // never close a record on fewer members than it has.
    if picked.first().is_some_and(|(k, _)| pos(k) > 0) {
        out.insert_str(1, "… ");
    }
    if prev.is_some_and(|p| p + 1 < m.len()) {
        out.push_str(", …");
    }
    out.push('}');
    show_line_max(&out, max)
}

/// `rendered` (a [`render`], [`distinct`] or [`identity`] text) spaced as a compact file
/// writes JSON: no space after a `:` or `,` outside strings (`{"path":"a>b","id":525}`), so
/// what the summary shows is what a grep of a compact file (NDJSON, minified) finds. Strings,
/// escapes included, are left as they are.
pub(crate) fn compact_spacing(rendered: &str) -> String {
    let mut out = String::with_capacity(rendered.len());
    let mut scan = StringScan::default();
    let mut after_sep = false;
    for c in rendered.chars() {
        if !scan.outside(c) {
            after_sep = false;
            out.push(c);
            continue;
        }
        if after_sep && c == ' ' {
            after_sep = false;
            continue;
        }
        after_sep = matches!(c, ':' | ',');
        out.push(c);
    }
    out
}

/// True when the JSON text writes a space before a key's colon, as Jackson's default pretty
/// printer does (`"status" : "COMPLETE"`: Spark's history server REST API, live set of
/// session 53, where every member was quoted as `"status": …`, which greps nowhere): more
/// keys closed by `" :` than by `":` in the text's first 64 KiB.
pub(crate) fn colon_spaced(text: &str) -> bool {
    let head = crate::guard::reduce::clip_str(text, 64 * 1024);
    let before = head.matches("\" : ").count() + head.matches("\" :\n").count();
    before > head.matches("\":").count()
}

/// `rendered` (spaced JSON text: a [`render`], a record's pairs, an outline) with a space
/// before each key's colon, as a [`colon_spaced`] file writes it: a `:` outside strings
/// right after a string's closing quote gets one. Idempotent: a colon already spaced, and
/// strings, escapes included, are left as they are.
pub(crate) fn colon_spacing(rendered: &str) -> String {
    let mut out = String::with_capacity(rendered.len() + rendered.len() / 8);
    let mut scan = StringScan::default();
    let mut after_quote = false;
    for c in rendered.chars() {
        let outside = scan.outside(c);
        if outside && c == ':' && after_quote {
            out.push(' ');
        }
        // A quote that `outside` read as closing a string.
        after_quote = c == '"' && !outside && !scan.in_str;
        out.push(c);
    }
    out
}

/// Where a JSON text's characters stand, read one at a time: inside a string (its quotes and
/// escapes included) or outside any. The one reading of strings that the JSON spacers share
/// ([`compact_spacing`], the outline's spacing, the search for a record as written).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StringScan {
    in_str: bool,
    escaped: bool,
}

impl StringScan {
    /// A scan of a text that starts inside a string when `in_string` (a window cut in one).
    pub(crate) fn starting(in_string: bool) -> Self {
        StringScan {
            in_str: in_string,
            escaped: false,
        }
    }

    /// Reads `c`: true when it stands outside every string and is no quote (a `:`, `,`,
    /// bracket, number or whitespace of the JSON itself).
    pub(crate) fn outside(&mut self, c: char) -> bool {
        if self.in_str {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == '"' {
                self.in_str = false;
            }
            false
        } else if c == '"' {
            self.in_str = true;
            false
        } else {
            true
        }
    }
}

#[cfg(test)]
mod colon_tests {
    use super::super::{reduce, Ctx};
    use super::*;
    use crate::guard::reduce::{rank::Query, Kind, Section};

    /// A file that writes `"key" : value` (Jackson's pretty printer) has its records and
    /// leaves quoted with the space before the colon, so each quote greps in the file.
    #[test]
    fn a_record_of_a_file_spacing_its_colons_is_quoted_as_written() {
        let stages: Vec<String> = (0..12)
            .map(|i| {
                format!(
                    "{{\n  \"status\" : \"{}\",\n  \"stageId\" : {i},\n  \"executorRunTime\" : {},\n  \"name\" : \"collect at Indexer.scala:{}\"\n}}",
                    if i == 4 { "SKIPPED" } else { "COMPLETE" },
                    if i == 7 { 2319 } else { 10 + i },
                    200 + i
                )
            })
            .collect();
        let text = format!("[ {} ]\n", stages.join(", "));
        assert!(colon_spaced(&text) && !colon_spaced(r#"{"a": 1, "b": {"c": 2}}"#));
        let q = Query::new("which stage used the most executor run time, and was any skipped?");
        let ctx = Ctx {
            query: &q,
            exit_code: None,
            bytes: 0,
        };
        let red = reduce(&text, Kind::Json, &ctx).unwrap();
        let shown: Vec<&str> = red
            .items
            .iter()
            .filter(|i| i.section == Section::Evidence)
            .map(|i| i.text.as_str())
            .collect();
        assert!(
            shown
                .iter()
                .any(|t| t.contains("\"executorRunTime\" : 2319")),
            "{shown:#?}"
        );
        assert!(!shown.iter().any(|t| t.contains("\": ")), "{shown:#?}");
        // Strings (an escaped quote before a colon included) are left as written; a colon
        // already spaced is not spaced twice.
        let r = r#"{"a": "x\": y", "b": [1, {"c": 2}]}"#;
        assert_eq!(
            colon_spacing(r),
            r#"{"a" : "x\": y", "b" : [1, {"c" : 2}]}"#
        );
        assert_eq!(colon_spacing(&colon_spacing(r)), colon_spacing(r));
    }
}
