//! Failing records of a JSON document: how many objects fail, and which failures to list first.

use super::render::is_failure;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// Share of its words ([`record_words`]) a failing record must share with one listed before
/// it to be a near copy of it.
const NEAR_COPY_SHARE: f64 = 0.8;

/// `failing` with each near copy of a record before it (the same failed request told once per
/// metric: k6 writes `http_reqs`, `http_req_duration`, ... each with the request's url, status
/// and error code) moved after every record that is not one, so the listed failures are
/// different failures first. Order is kept otherwise; once `max` distinct ones are found, the
/// rest follow unexamined (only the first `max` are listed).
pub(super) fn distinct_first<'a, T>(
    failing: &[&'a (&'a Map<String, Value>, T)],
    max: usize,
) -> Vec<&'a (&'a Map<String, Value>, T)> {
    let mut kept: Vec<HashSet<(String, &str)>> = Vec::new();
    let (mut firsts, mut copies) = (Vec::new(), Vec::new());
    for (k, &r) in failing.iter().enumerate() {
        if firsts.len() >= max {
            firsts.extend_from_slice(&failing[k..]);
            break;
        }
        let mut w = HashSet::new();
        for (key, x) in r.0 {
            record_words(x, key, &mut w);
        }
        let most = |k: &HashSet<(String, &str)>| k.len().max(w.len());
        if kept.iter().any(|k| {
            most(k) >= 3 && k.intersection(&w).count() as f64 >= NEAR_COPY_SHARE * most(k) as f64
        }) {
            copies.push(r);
        } else {
            kept.push(w);
            firsts.push(r);
        }
    }
    firsts.extend(copies);
    firsts
}

/// The words of a record: its leaves that are not numbers (a measure, a duration), as (path,
/// value).
fn record_words<'v>(v: &'v Value, path: &str, out: &mut HashSet<(String, &'v str)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                record_words(x, &format!("{path}.{k}"), out);
            }
        }
        Value::Array(a) => {
            for x in a {
                record_words(x, &format!("{path}[]"), out);
            }
        }
        Value::Number(_) | Value::Null => {}
        Value::String(s) if s.is_empty() || s.parse::<f64>().is_ok() => {}
        Value::String(s) => {
            out.insert((path.to_string(), s.as_str()));
        }
        Value::Bool(b) => {
            out.insert((path.to_string(), if *b { "true" } else { "false" }));
        }
    }
}

/// Objects anywhere in `v` that fail by their status or error fields ([`is_failure`]).
pub(super) fn failing_objects(v: &Value) -> usize {
    match v {
        Value::Array(a) => a.iter().map(failing_objects).sum(),
        Value::Object(m) => is_failure(m) as usize + m.values().map(failing_objects).sum::<usize>(),
        _ => 0,
    }
}
