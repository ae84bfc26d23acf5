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
        // Every output line of a failed test, ranked below.
        for (j, (line, o)) in outs.iter().enumerate() {
            let rank = if j + 1 == outs.len() { 0 } else { j + 1 };
            let text = if key.1.is_empty() {
                format!("[{}] {o}", key.0)
            } else {
                o.clone()
            };
            f.items.push(Item::line(
                Section::Errors,
                *line,
                show_line(&text),
                // Each failing test's verdict line (its last: `--- FAIL: name`), then its
                // messages, the first of every test before the second of any: the list
                // reaches the last failure.
                140.0 - rank as f64 * 2.0 - (k as f64 * 0.01).min(1.9),
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
        .map(|(_, _, l)| *l);
    let next_action = match first_fail {
        Some(l) => format!(
            "Read L{}-L{l} of the saved file for the first failure, or grep it for a failed test's name to see that test's output.",
            l.saturating_sub(15).max(1),
        ),
        // Nothing failed: there is no failure to point at.
        None => "Grep the saved file for a test's name to see that test's output.".to_string(),
    };
    Some(Reduction {
        kind: Kind::GoTestJson,
        items: f.items,
        status,
        failed: Some(tf + pf > 0),
        next_action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::rank::Query;

    #[test]
    fn a_run_where_all_passed_points_at_no_failure() {
        let mut text = String::new();
        for t in ["TestA", "TestB", "TestC"] {
            text.push_str(&format!(
                "{{\"Action\":\"output\",\"Package\":\"p\",\"Test\":\"{t}\",\"Output\":\"--- PASS: {t} (0.00s)\\n\"}}\n{{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"{t}\"}}\n"
            ));
        }
        text.push_str("{\"Action\":\"pass\",\"Package\":\"p\"}\n");
        let q = Query::new("did all tests pass?");
        let ctx = Ctx {
            query: &q,
            exit_code: None,
            bytes: 0,
        };
        let r = gotest(&text, &ctx).expect("go test -json");
        assert_eq!(r.failed, Some(false));
        assert!(!r.next_action.contains("failure"), "{}", r.next_action);
    }

    #[test]
    fn every_failing_tests_verdict_ranks_above_any_tests_messages() {
        let mut text = String::new();
        for t in ["TestA", "TestB", "TestC"] {
            for o in [
                format!("=== RUN   {t}"),
                format!("    a_test.go:10: {t} broke"),
                format!("    a_test.go:11: more about {t}"),
                format!("--- FAIL: {t} (0.00s)"),
            ] {
                text.push_str(&format!(
                    "{{\"Action\":\"output\",\"Package\":\"p\",\"Test\":\"{t}\",\"Output\":\"{o}\\n\"}}\n"
                ));
            }
            text.push_str(&format!(
                "{{\"Action\":\"fail\",\"Package\":\"p\",\"Test\":\"{t}\"}}\n"
            ));
        }
        text.push_str("{\"Action\":\"fail\",\"Package\":\"p\"}\n");
        let q = Query::new("list the failing tests");
        let ctx = Ctx {
            query: &q,
            exit_code: None,
            bytes: 0,
        };
        let r = gotest(&text, &ctx).expect("go test -json");
        let prio = |needle: &str| {
            r.items
                .iter()
                .find(|i| i.text.contains(needle))
                .map(|i| i.prio)
                .unwrap_or_else(|| panic!("{needle} not among {:?}", r.items))
        };
        let last_verdict = prio("--- FAIL: TestC");
        for t in ["TestA", "TestB"] {
            assert!(prio(&format!("more about {t}")) < last_verdict);
        }
        // Then each test's first message before any test's second.
        assert!(prio("TestC broke") > prio("more about TestA"));
    }
}
