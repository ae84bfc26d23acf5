//! `go test -json` reduction: pass/fail/skip counts of tests and packages, the failed tests, and
//! each failed test's output as errors.

use std::collections::HashMap;

use serde_json::Value;

use super::Facts;
use crate::guard::reduce::{self, fmt_num, show_line, Ctx, Item, Kind, Reduction, Section, MUST};

pub(super) fn gotest(text: &str, ctx: &Ctx<'_>) -> Option<Reduction> {
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
    let (dp, df, ds) = (reduce::count(tp), reduce::count(tf), reduce::count(ts));
    f.push(
        format!(
            "tests: {dp} passed, {df} failed, {ds} skipped; packages: {} ok, {} failed",
            reduce::count(pp),
            reduce::count(pf)
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
            reduce::count(pf),
            reduce::count(pp + pf)
        )
    } else {
        format!(
            "Tests passed: {dp} passed, {ds} skipped in {} packages.",
            reduce::count(pp + pf)
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
