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

fn render_str(s: &str, max: usize) -> String {
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
    show_line_max(&out, max)
}
