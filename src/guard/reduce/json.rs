//! JSON, NDJSON and `go test -json` reduction: shape (keys, types, array lengths), counts of
//! categorical fields, every record whose status/error/level/exit-code fields say failure (kept
//! compact, `"key": value` as pretty-printed JSON writes it), command envelopes (command, exit
//! code, stdout, stderr), and records ranked by the intent.

use super::rank::bm25;
use super::text::{normalise, reduce_lines};
use super::{count, derived, fmt_num, show_line, Ctx, Item, Kind, Reduction, Section, MUST};
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

/// Bytes of one failing record's compact rendering shown in the summary.
const FAILURE_RECORD_BYTES: usize = 700;
/// Bytes of a record's identifying fields shown as evidence.
const RECORD_BYTES: usize = 360;
/// Failing records listed at most (the Key facts give the total).
const MAX_FAILURES: usize = 30;
/// Strings longer than this that look like base64 are replaced by a descriptor.
const BASE64_MIN: usize = 200;

static OUTPUT_FILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:^|\s)(?:-o|--output|--out|-O|--output-file|--outfile)[ =]('[^']+'|\S+)|>>?\s*(\S+)",
    )
    .unwrap()
});

/// Keys of a record schema named in the Key facts (the rest are counted): the schema is a
/// must-show fact, so it is kept short.
const SCHEMA_KEYS: usize = 12;

/// Byte offsets where each line starts (index 0 is line 1).
pub fn line_starts(text: &str) -> Vec<usize> {
    let mut v = vec![0];
    v.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    v
}

/// 1-based line of a byte offset.
pub fn line_of(starts: &[usize], off: usize) -> usize {
    match starts.binary_search(&off) {
        Ok(i) => i + 1,
        Err(i) => i,
    }
}

/// Array path (object keys, `[]` for array nesting) -> byte offsets of its elements.
pub type ArraySpans = HashMap<Vec<String>, Vec<usize>>;
/// Key path -> byte offset of the key's first occurrence.
pub type KeySpans = HashMap<Vec<String>, usize>;

/// Byte offsets of the elements of every array in `text`, keyed by the array's path
/// (object keys, `[]` for array nesting), down to `max_depth`. Also the offsets of object keys
/// (path ending in the key) so a field can be anchored to its line.
pub fn spans(text: &str, max_depth: usize) -> (ArraySpans, KeySpans) {
    #[derive(Clone)]
    enum Frame {
        Arr,
        Obj(Option<String>),
    }
    let b = text.as_bytes();
    let mut arrays: HashMap<Vec<String>, Vec<usize>> = HashMap::new();
    let mut keys: HashMap<Vec<String>, usize> = HashMap::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let mut expect_value = true;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\n' | b'\r' | b'\t' | b':' => {}
            b',' => {
                expect_value = matches!(stack.last(), Some(Frame::Arr));
                if let Some(Frame::Obj(k)) = stack.last_mut() {
                    if k.take().is_some() {
                        path.pop();
                    }
                }
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let in_obj_key = matches!(stack.last(), Some(Frame::Obj(None)));
                if in_obj_key {
                    let k = String::from_utf8_lossy(&b[start + 1..i.min(b.len())]).into_owned();
                    path.push(k.clone());
                    if path.len() <= max_depth + 1 {
                        keys.entry(path.clone()).or_insert(start);
                    }
                    if let Some(Frame::Obj(slot)) = stack.last_mut() {
                        *slot = Some(k);
                    }
                } else if expect_value {
                    if let Some(Frame::Arr) = stack.last() {
                        if path.len() <= max_depth {
                            arrays.entry(path.clone()).or_default().push(start);
                        }
                    }
                    expect_value = false;
                }
            }
            b'{' | b'[' => {
                if expect_value || stack.is_empty() {
                    if let Some(Frame::Arr) = stack.last() {
                        if path.len() <= max_depth {
                            arrays.entry(path.clone()).or_default().push(i);
                        }
                    }
                }
                if matches!(stack.last(), Some(Frame::Arr)) {
                    path.push("[]".to_string());
                }
                if c == b'{' {
                    stack.push(Frame::Obj(None));
                    expect_value = false;
                } else {
                    stack.push(Frame::Arr);
                    expect_value = true;
                }
            }
            b'}' | b']' => {
                if let Some(Frame::Obj(Some(_))) = stack.last() {
                    path.pop();
                }
                stack.pop();
                if matches!(stack.last(), Some(Frame::Arr)) {
                    path.pop();
                }
                expect_value = false;
            }
            _ => {
                if expect_value {
                    if let Some(Frame::Arr) = stack.last() {
                        if path.len() <= max_depth {
                            arrays.entry(path.clone()).or_default().push(i);
                        }
                    }
                    expect_value = false;
                }
                while i + 1 < b.len()
                    && !matches!(b[i + 1], b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t')
                {
                    i += 1;
                }
            }
        }
        i += 1;
    }
    (arrays, keys)
}

fn looks_base64(s: &str) -> bool {
    s.len() >= BASE64_MIN
        && !s.contains(' ')
        && s.bytes().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'-' | b'_' | b'\n')
        })
}

fn render_str(s: &str, max: usize) -> String {
    if looks_base64(s) {
        // Not quoted: the description is not a string of the input.
        return "<base64 data, not shown>".to_string();
    }
    if s.len() > max {
        let cut = super::clip_str(s, max);
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
        let cut = super::clip_str(&out, max).to_string();
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

fn type_name(v: &Value) -> &'static str {
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

/// True when an object's status/state/level/exit-code/error fields say it failed.
pub fn is_failure(m: &Map<String, Value>) -> bool {
    m.iter().any(|(k, v)| {
        let k = k.to_ascii_lowercase();
        match k.as_str() {
            "status" | "state" | "conclusion" | "result" | "outcome" | "level" | "severity"
            | "phase" | "action" => match v {
                Value::String(s) => FAIL_WORDS.contains(&s.to_ascii_lowercase().as_str()),
                Value::Number(n) => {
                    k == "status" && n.as_u64().is_some_and(|c| (400..600).contains(&c))
                }
                _ => false,
            },
            "exit_code" | "exitcode" | "returncode" | "exit_status" | "exitstatus"
            | "statuscode" | "status_code" => v.as_i64().is_some_and(|c| c != 0),
            "error" | "errors" | "exception" | "err" | "stderr_error" => match v {
                Value::Null | Value::Bool(false) => false,
                Value::String(s) => !s.is_empty(),
                Value::Array(a) => !a.is_empty(),
                Value::Object(o) => !o.is_empty(),
                _ => true,
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

/// A record's identifying fields, rendered compactly.
fn identity(m: &Map<String, Value>, max: usize) -> String {
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
    let mut out = String::from("{");
    for (i, (k, v)) in picked.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let val = match v {
            Value::Object(o) => {
                let inner: Vec<String> = ["login", "name", "id", "title", "message", "code"]
                    .iter()
                    .filter_map(|ik| o.get(*ik).map(|x| format!("\"{ik}\": {}", render(x, 80))))
                    .take(2)
                    .collect();
                format!("{{{}}}", inner.join(", "))
            }
            other => render(other, 120),
        };
        out.push_str(&format!("\"{k}\": {val}"));
    }
    out.push('}');
    super::show_line_max(&out, max)
}

/// Reduces JSON-family text; `None` when it does not parse (the caller falls back to lines).
pub fn reduce(text: &str, kind: Kind, ctx: &Ctx<'_>) -> Option<Reduction> {
    match kind {
        Kind::GoTestJson => gotest(text, ctx),
        Kind::Ndjson => ndjson(text, ctx),
        _ => {
            let v: Value = serde_json::from_str(text).ok()?;
            Some(document(text, &v, ctx))
        }
    }
}

struct Facts {
    items: Vec<Item>,
    seq: usize,
}

impl Facts {
    fn push(&mut self, text: String, prio: f64) {
        self.seq += 1;
        self.items.push(Item::fact(self.seq, text, prio));
    }
}

/// Analyses a list of records (objects) with their 1-based start lines.
fn records(
    recs: &[(&Map<String, Value>, Option<usize>)],
    label: &str,
    ctx: &Ctx<'_>,
    f: &mut Facts,
) -> usize {
    let n = recs.len();
    // Schema: key -> (types, presence).
    let mut schema: BTreeMap<&str, (Vec<&'static str>, usize, usize)> = BTreeMap::new();
    for (i, (m, _)) in recs.iter().enumerate() {
        for (k, v) in m.iter() {
            let e = schema.entry(k.as_str()).or_insert((Vec::new(), 0, i));
            let t = type_name(v);
            if !e.0.contains(&t) {
                e.0.push(t);
            }
            e.1 += 1;
        }
    }
    type Profile = (Vec<&'static str>, usize, usize);
    let mut keys: Vec<(&str, &Profile)> = schema.iter().map(|(k, v)| (*k, v)).collect();
    keys.sort_by_key(|(_, v)| (v.2, std::cmp::Reverse(v.1)));
    let shown: Vec<String> = keys
        .iter()
        .take(SCHEMA_KEYS)
        .map(|(k, (t, c, _))| {
            if *c == n {
                format!("{k}: {}", t.join("|"))
            } else {
                format!("{k}: {} (in {} of {})", t.join("|"), count(*c), count(n))
            }
        })
        .collect();
    let more = if keys.len() > SCHEMA_KEYS {
        format!(", …{} more keys", count(keys.len() - SCHEMA_KEYS))
    } else {
        String::new()
    };
    f.push(
        format!(
            "{label}: {} records; record schema: {}{more}",
            count(n),
            shown.join(", ")
        ),
        MUST,
    );
    // Counts per value of categorical fields are mined for every kind (signals::facts).
    // Failures.
    let failing: Vec<&(&Map<String, Value>, Option<usize>)> =
        recs.iter().filter(|(m, _)| is_failure(m)).collect();
    if !failing.is_empty() {
        f.push(
            format!("failing records: {} of {}", count(failing.len()), count(n)),
            MUST,
        );
    }
    for (k, (m, line)) in failing.iter().take(MAX_FAILURES).enumerate() {
        let text = render(&Value::Object((*m).clone()), FAILURE_RECORD_BYTES);
        f.items.push(Item {
            section: Section::Errors,
            order: line.unwrap_or(0) * 1000 + k,
            line: *line,
            text,
            prio: 150.0 - k as f64,
        });
    }
    // Records ranked by the intent.
    let ids: Vec<String> = recs
        .iter()
        .map(|(m, _)| identity(m, RECORD_BYTES))
        .collect();
    let scores = normalise(&bm25(ctx.query, &ids));
    for (i, ((m, line), id)) in recs.iter().zip(ids).enumerate() {
        if is_failure(m) {
            continue;
        }
        let head = if i < 3 { 15.0 } else { 0.0 };
        f.items.push(Item {
            section: Section::Evidence,
            order: line.unwrap_or(0) * 1000 + i,
            line: *line,
            text: id,
            prio: 5.0 + head + 40.0 * scores[i] - i as f64 * 0.001,
        });
    }
    failing.len()
}

fn find_records<'a>(
    v: &'a Value,
    path: &mut Vec<String>,
    best: &mut Option<(Vec<String>, &'a Vec<Value>)>,
    depth: usize,
) {
    match v {
        Value::Array(a) => {
            let objs = a.iter().filter(|x| x.is_object()).count();
            if objs >= 2
                && objs * 2 >= a.len()
                && best.as_ref().is_none_or(|(_, b)| a.len() > b.len())
            {
                *best = Some((path.clone(), a));
            }
        }
        Value::Object(m) if depth < 3 => {
            for (k, x) in m {
                path.push(k.clone());
                find_records(x, path, best, depth + 1);
                path.pop();
            }
        }
        _ => {}
    }
}

fn exit_field(m: &Map<String, Value>) -> Option<(&str, i64)> {
    for k in [
        "returncode",
        "exit_code",
        "exitCode",
        "exitcode",
        "exit_status",
        "status_code",
        "code",
        "status",
    ] {
        if let Some(c) = m.get(k).and_then(Value::as_i64) {
            return Some((k, c));
        }
    }
    None
}

/// Multi-line text inside a JSON string field, reduced as lines and anchored to the field's line.
fn embedded(
    field: &str,
    s: &str,
    anchor: Option<usize>,
    ctx: &Ctx<'_>,
    f: &mut Facts,
) -> Reduction {
    let lines: Vec<&str> = s.split('\n').collect();
    let inner = reduce_lines(&lines, Kind::Lines, ctx);
    // Sizes of the inner text are counts toolsum made: written as such.
    f.push(
        format!(
            "{field}: a text of {} lines, {} bytes",
            count(lines.len()),
            count(s.len())
        ),
        MUST / 10.0,
    );
    for it in &inner.items {
        match (it.section, it.line) {
            (Section::KeyFacts, _) if it.prio < MUST => {}
            (Section::KeyFacts, _) if it.text.starts_with("kind: ") => {}
            (Section::KeyFacts, _) => f.push(format!("{field}: {}", it.text), it.prio / 10.0),
            (sec, Some(k)) => f.items.push(Item {
                section: sec,
                order: anchor.unwrap_or(0) * 100_000 + k,
                line: anchor,
                text: format!("{field} L{k}: {}", it.text),
                prio: it.prio,
            }),
            _ => {}
        }
    }
    inner
}

fn document(text: &str, v: &Value, ctx: &Ctx<'_>) -> Reduction {
    let starts = line_starts(text);
    let n_lines = text.lines().count();
    let (arrays, keys) = spans(text, 3);
    let key_line = |p: &[&str]| -> Option<usize> {
        let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        keys.get(&p).map(|&o| line_of(&starts, o))
    };
    let mut f = Facts {
        items: Vec::new(),
        seq: 0,
    };
    let shape = match v {
        Value::Object(m) => {
            let ks: Vec<String> = m
                .iter()
                .take(20)
                .map(|(k, x)| format!("{k}: {}", type_name(x)))
                .collect();
            format!(
                "top-level object with {} keys ({})",
                count(m.len()),
                ks.join(", ")
            )
        }
        Value::Array(a) => format!("top-level array of {} items", count(a.len())),
        other => format!("top-level {}", type_name(other)),
    };
    f.push(
        format!(
            "kind: json; {} bytes, {} lines; {shape}",
            fmt_num(ctx.size(text)),
            fmt_num(n_lines)
        ),
        MUST,
    );
    let mut failed: Option<bool> = None;
    let mut status = String::new();
    let mut next_action = String::new();

    // Command envelope: {"command": ..., "returncode": 1, "stdout": ..., "stderr": ...}.
    if let Value::Object(m) = v {
        let has_streams = m.contains_key("stdout") || m.contains_key("stderr");
        if let (true, Some((ek, code))) = (has_streams, exit_field(m)) {
            let cmd = m.get("command").or_else(|| m.get("cmd")).map(|c| match c {
                Value::String(s) => s.clone(),
                other => render(other, 300),
            });
            if let Some(c) = &cmd {
                f.push(format!("command: {c}"), MUST);
            }
            f.push(format!("{ek}: {code}"), MUST);
            let mut empty = Vec::new();
            let mut streams = Vec::new();
            for s in ["stdout", "stderr"] {
                match m.get(s) {
                    Some(Value::String(x)) if x.trim().is_empty() => {
                        f.push(format!("{s}: empty"), MUST);
                        empty.push(s);
                    }
                    Some(Value::String(x)) => {
                        f.push(
                            format!("{s}: {} lines", derived(x.lines().count(), 0, "")),
                            MUST,
                        );
                        embedded(s, x, key_line(&[s]), ctx, &mut f);
                        streams.push(s);
                    }
                    _ => {}
                }
            }
            for (k, x) in m {
                if !matches!(k.as_str(), "command" | "cmd" | "stdout" | "stderr") && k != ek {
                    f.push(format!("{k}: {}", render(x, 200)), 50.0);
                }
            }
            let out_file = cmd.as_deref().and_then(|c| {
                OUTPUT_FILE
                    .captures(c)
                    .and_then(|cap| cap.get(1).or(cap.get(2)))
                    .map(|x| x.as_str().trim_matches('\'').to_string())
            });
            if let Some(p) = &out_file {
                f.push(format!("output file named in the command: {p}"), MUST);
            }
            let streams_txt = if empty.len() == 2 {
                "stdout and stderr were empty".to_string()
            } else if empty.is_empty() {
                format!("{} had output", streams.join(" and "))
            } else {
                format!(
                    "{} was empty, {} had output",
                    empty.join(" and "),
                    streams.join(" and ")
                )
            };
            let cmd_txt = cmd
                .as_deref()
                .map(|c| format!(" `{}`", super::show_line_max(c, 120)))
                .unwrap_or_default();
            failed = Some(code != 0);
            status = if code != 0 {
                format!("Command{cmd_txt} failed ({ek} {code}); {streams_txt}.")
            } else {
                format!("Command{cmd_txt} completed ({ek} {code}); {streams_txt}.")
            };
            next_action = match (&out_file, code) {
                (Some(p), _) => format!("Read {p} (the command wrote its results there, not to stdout)."),
                (None, 0) => "Nothing to do for this output; read the saved file only if a detail is missing.".to_string(),
                (None, _) => "Read the stderr lines above and fix the cause before rerunning the command.".to_string(),
            };
            return Reduction {
                kind: Kind::Json,
                items: f.items,
                status,
                failed,
                next_action,
            };
        }
        // MCP-style content blocks: text kept as lines, images described.
        if let Some(Value::Array(blocks)) = m.get("content") {
            let mut any = false;
            for (bi, b) in blocks.iter().enumerate() {
                let Value::Object(bm) = b else { continue };
                let anchor = arrays
                    .get(&vec!["content".to_string()])
                    .and_then(|o| o.get(bi))
                    .map(|&o| line_of(&starts, o));
                match (
                    bm.get("type").and_then(Value::as_str),
                    bm.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(t)) => {
                        any = true;
                        embedded(&format!("content[{bi}].text"), t, anchor, ctx, &mut f);
                    }
                    (Some(ty), _) => {
                        any = true;
                        let mime = bm
                            .get("mimeType")
                            .or_else(|| bm.get("mime_type"))
                            .and_then(Value::as_str)
                            .unwrap_or("?");
                        let size = bm
                            .get("data")
                            .and_then(Value::as_str)
                            .map(|d| d.len())
                            .unwrap_or(0);
                        f.push(
                            format!(
                                "content[{bi}]: {ty} block, {mime}, base64 data{} (not shown)",
                                if size == 0 { " (empty)" } else { "" }
                            ),
                            MUST,
                        );
                    }
                    _ => {}
                }
            }
            if any {
                let is_err = m.get("isError").and_then(Value::as_bool);
                failed = is_err;
                status = format!(
                    "Tool result with {} content block(s){}.",
                    blocks.len(),
                    if is_err == Some(true) {
                        ", flagged isError"
                    } else {
                        ""
                    }
                );
                next_action =
                    "Use the text above; open the saved file only for the raw blocks.".to_string();
                return Reduction {
                    kind: Kind::Json,
                    items: f.items,
                    status,
                    failed,
                    next_action,
                };
            }
        }
    }

    let mut best = None;
    find_records(v, &mut Vec::new(), &mut best, 0);
    let mut n_fail = 0;
    if let Some((path, arr)) = best {
        let offs = arrays.get(&path);
        let recs: Vec<(&Map<String, Value>, Option<usize>)> = arr
            .iter()
            .enumerate()
            .filter_map(|(i, x)| {
                x.as_object()
                    .map(|m| (m, offs.and_then(|o| o.get(i)).map(|&o| line_of(&starts, o))))
            })
            .collect();
        let label = if path.is_empty() {
            "top-level array".to_string()
        } else {
            format!("array .{}", path.join("."))
        };
        n_fail = records(&recs, &label, ctx, &mut f);
        let jq = if path.is_empty() {
            ".[]".to_string()
        } else {
            format!(".{}[]", path.join("."))
        };
        // No ready-made filter in quotes: a command line is not a string of the input.
        next_action = format!(
            "Page or filter the saved file with jq on the records at {jq} (select on the fields you need)."
        );
        status = format!(
            "JSON with {} records at {label}{}.",
            count(arr.len()),
            if n_fail > 0 {
                format!(", {} failing", count(n_fail))
            } else {
                ", none failing by their status or error fields".to_string()
            }
        );
        failed = Some(n_fail > 0);
    }
    // The document itself when it is small once long strings are abbreviated.
    let whole = render(v, 3000);
    if !whole.ends_with('…') && n_fail == 0 {
        f.items.push(Item {
            section: Section::Evidence,
            order: 0,
            line: Some(1),
            text: whole,
            prio: 90.0,
        });
    } else if best_is_none(v) {
        // Large document without records: rank its leaves by the intent.
        let mut leaves_out = Vec::new();
        flat(v, String::new(), &mut leaves_out, 0);
        let docs: Vec<String> = leaves_out
            .iter()
            .map(|(p, x)| format!("{p}: {x}"))
            .collect();
        let scores = normalise(&bm25(ctx.query, &docs));
        for (i, d) in docs.iter().enumerate() {
            let path: Vec<&str> = leaves_out[i]
                .0
                .split('.')
                .filter(|s| !s.is_empty())
                .collect();
            f.items.push(Item {
                section: Section::Evidence,
                order: 10 + i,
                line: key_line(&path),
                text: show_line(d),
                prio: 5.0 + 40.0 * scores[i] - i as f64 * 0.01,
            });
        }
        status = format!("JSON document of {} bytes.", fmt_num(ctx.size(text)));
        next_action = "Query the saved file with jq for the fields you need.".to_string();
    }
    if status.is_empty() {
        status = format!("JSON document of {} bytes.", fmt_num(ctx.size(text)));
        next_action = "Query the saved file with jq for the fields you need.".to_string();
    }
    Reduction {
        kind: Kind::Json,
        items: f.items,
        status,
        failed,
        next_action,
    }
}

fn best_is_none(v: &Value) -> bool {
    let mut b = None;
    find_records(v, &mut Vec::new(), &mut b, 0);
    b.is_none()
}

fn flat(v: &Value, path: String, out: &mut Vec<(String, String)>, depth: usize) {
    match v {
        Value::Object(m) if depth < 6 => {
            for (k, x) in m {
                flat(
                    x,
                    if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    },
                    out,
                    depth + 1,
                )
            }
        }
        Value::Array(a) if depth < 6 && a.len() <= 50 => {
            for (i, x) in a.iter().enumerate() {
                flat(x, format!("{path}.{i}"), out, depth + 1)
            }
        }
        other => {
            if out.len() < 5000 {
                out.push((path, render(other, 200)))
            }
        }
    }
}

fn ndjson(text: &str, ctx: &Ctx<'_>) -> Option<Reduction> {
    let mut parsed = Vec::new();
    let mut bad = 0;
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(l) {
            Ok(Value::Object(m)) => parsed.push((m, i + 1)),
            _ => bad += 1,
        }
    }
    if parsed.is_empty() {
        return None;
    }
    let mut f = Facts {
        items: Vec::new(),
        seq: 0,
    };
    f.push(
        format!(
            "kind: ndjson; {} bytes, {} records, {} unparsable lines",
            fmt_num(ctx.size(text)),
            count(parsed.len()),
            count(bad)
        ),
        MUST,
    );
    let recs: Vec<(&Map<String, Value>, Option<usize>)> =
        parsed.iter().map(|(m, l)| (m, Some(*l))).collect();
    let n_fail = records(&recs, "records", ctx, &mut f);
    Some(Reduction {
        kind: Kind::Ndjson,
        items: f.items,
        status: format!(
            "NDJSON stream of {} records, {} failing by their status, level or error fields.",
            count(parsed.len()),
            count(n_fail)
        ),
        failed: Some(n_fail > 0),
        next_action: "Filter the saved file with jq (select on the fields you need) for the records you need."
            .to_string(),
    })
}

fn gotest(text: &str, ctx: &Ctx<'_>) -> Option<Reduction> {
    // (package, test) -> outputs (line, text); final actions.
    let mut outputs: HashMap<(String, String), Vec<(usize, String)>> = HashMap::new();
    let mut finals: Vec<((String, String), String, usize)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let Ok(Value::Object(m)) = serde_json::from_str::<Value>(l) else {
            continue;
        };
        let pkg = m
            .get("Package")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let test = m
            .get("Test")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let action = m.get("Action").and_then(Value::as_str).unwrap_or("");
        match action {
            "output" => {
                let o = m.get("Output").and_then(Value::as_str).unwrap_or("");
                let t = o.trim_end();
                let noise = ["=== RUN", "=== PAUSE", "=== CONT", "=== NAME"]
                    .iter()
                    .any(|p| t.trim_start().starts_with(p));
                if !noise && !t.trim().is_empty() {
                    outputs
                        .entry((pkg, test))
                        .or_default()
                        .push((i + 1, t.to_string()));
                }
            }
            "pass" | "fail" | "skip" => finals.push(((pkg, test), action.to_string(), i + 1)),
            _ => {}
        }
    }
    if finals.is_empty() {
        return None;
    }
    let count = |tests: bool, a: &str| {
        finals
            .iter()
            .filter(|((_, t), act, _)| t.is_empty() != tests && act == a)
            .count()
    };
    let (tp, tf, ts) = (
        count(true, "pass"),
        count(true, "fail"),
        count(true, "skip"),
    );
    let (pp, pf) = (count(false, "pass"), count(false, "fail"));
    let mut f = Facts {
        items: Vec::new(),
        seq: 0,
    };
    f.push(
        format!(
            "kind: go test -json; {} bytes, {} events (one a line)",
            fmt_num(ctx.size(text)),
            fmt_num(text.lines().count())
        ),
        MUST,
    );
    let (dp, df, ds) = (super::count(tp), super::count(tf), super::count(ts));
    f.push(
        format!(
            "tests: {dp} passed, {df} failed, {ds} skipped; packages: {} ok, {} failed",
            super::count(pp),
            super::count(pf)
        ),
        MUST,
    );
    let failed_tests: Vec<String> = finals
        .iter()
        .filter(|(_, a, _)| a == "fail")
        .map(|((p, t), _, _)| {
            if t.is_empty() {
                format!("package {p}")
            } else {
                t.clone()
            }
        })
        .collect();
    if !failed_tests.is_empty() {
        f.push(format!("failed: {}", failed_tests.join(", ")), MUST);
    }
    let mut k = 0;
    for (key, act, _) in &finals {
        if act != "fail" {
            continue;
        }
        let outs = outputs.get(key).cloned().unwrap_or_default();
        // Skip a parent test's copy of its subtests' output beyond the first lines.
        for (j, (line, o)) in outs.iter().enumerate() {
            let text = if key.1.is_empty() {
                format!("[{}] {o}", key.0)
            } else {
                o.clone()
            };
            f.items.push(Item::line(
                Section::Errors,
                *line,
                show_line(&text),
                140.0 - k as f64 - j as f64 * 0.5,
            ));
        }
        k += 1;
    }
    let status = if tf + pf > 0 {
        format!(
            "Tests failed: {df} failed, {dp} passed, {ds} skipped; {} of {} packages failed.",
            super::count(pf),
            super::count(pp + pf)
        )
    } else {
        format!(
            "Tests passed: {dp} passed, {ds} skipped in {} packages.",
            super::count(pp + pf)
        )
    };
    let first_fail = finals
        .iter()
        .find(|(_, a, _)| a == "fail")
        .map(|(_, _, l)| *l)
        .unwrap_or(1);
    Some(Reduction {
        kind: Kind::GoTestJson,
        items: f.items,
        status,
        failed: Some(tf + pf > 0),
        next_action: format!(
            "Read L{}-L{} of the saved file for the first failure, or grep it for a failed test's name to see that test's output.",
            first_fail.saturating_sub(15).max(1),
            first_fail
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::rank::Query;

    fn ctx(q: &Query) -> Ctx<'_> {
        Ctx {
            query: q,
            exit_code: None,
            bytes: 0,
        }
    }

    #[test]
    fn spans_find_array_elements() {
        let t = "{\n \"jobs\": [\n  {\"id\": 1},\n  {\"id\": 2}\n ]\n}";
        let (a, k) = spans(t, 3);
        let starts = line_starts(t);
        let offs = &a[&vec!["jobs".to_string()]];
        assert_eq!(
            offs.iter()
                .map(|&o| line_of(&starts, o))
                .collect::<Vec<_>>(),
            vec![3, 4]
        );
        assert_eq!(line_of(&starts, k[&vec!["jobs".to_string()]]), 2);
    }

    #[test]
    fn failing_record_is_kept() {
        let mut jobs = Vec::new();
        for i in 0..100 {
            if i == 42 {
                jobs.push(serde_json::json!({"id": format!("job-{i}"), "status": "failed", "error": "OOMKilled", "exit_code": 137}));
            } else {
                jobs.push(serde_json::json!({"id": format!("job-{i}"), "status": "succeeded"}));
            }
        }
        let t = serde_json::json!({ "jobs": jobs }).to_string();
        let q = Query::new("did any job fail?");
        let r = reduce(&t, Kind::Json, &ctx(&q)).unwrap();
        let errs: Vec<&Item> = r
            .items
            .iter()
            .filter(|i| i.section == Section::Errors)
            .collect();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].text.contains("\"exit_code\": 137") && errs[0].text.contains("job-42"));
        assert_eq!(r.failed, Some(true));
    }

    #[test]
    fn base64_is_described() {
        let big = "QUJD".repeat(100);
        let v = serde_json::json!({"data": big, "mimeType": "image/png"});
        let s = render(&v, 1000);
        assert!(s.contains("<base64 data, not shown>") && !s.contains("QUJDQUJD"));
        // A long string is cut after its closing quote: the quoted part is the input's.
        let long = serde_json::json!({"msg": "abc ".repeat(100)});
        let s = render(&long, 1000);
        assert!(s.contains("\"abc abc") && s.contains("\"…[cut]"), "{s}");
    }
}
