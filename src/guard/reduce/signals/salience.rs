//! Salience: how much a unit says about the output's outcome on its own, whatever the question
//! asks (an error 1.0, a totals or exit line 0.9, a summary key near a document's top 0.6, a
//! warning 0.5, or as much as an error when the question asks for warnings).

use std::collections::HashMap;

use super::super::clip_str;
use super::super::rank::Query;
use super::super::signal::{self, Severity};
use super::super::units::{UnitKind, Units};

/// The salience of each unit of `u` (by index), in `0.0..=1.2`, for the question `q`.
pub(super) fn salience(u: &Units, q: &Query) -> Vec<f64> {
    let mut sal = vec![0.0; u.units.len()];
    // A summary key that many objects of one parent have (each scanned package's
    // `scanned_packages.<name>.version`) is a field of records keyed by name, not the
    // output's summary. Counted by the path with its object's own key as `*`.
    let last_key = |p: &str| {
        let mut seg: Vec<&str> = p.split('.').collect();
        if seg.len() >= 2 {
            let k = seg.len() - 2;
            seg[k] = "*";
        }
        seg.join(".").to_ascii_lowercase()
    };
    let mut summary_keys: HashMap<String, usize> = HashMap::new();
    for unit in &u.units {
        if unit.kind == UnitKind::Leaf && summary_key(&unit.context) {
            *summary_keys.entry(last_key(&unit.context)).or_default() += 1;
        }
    }
    // A question that names warnings ("what security warnings did the audit raise?") asks
    // for them as another asks for errors: a warning is as salient as an error (Lynis' two
    // `Warning:` lines had been left for its 3% of `not found` results: live set of
    // session 47).
    // Asked for warnings and not for errors, they go before the errors.
    let warn_sal = match (
        q.has("warn") || q.has("warning"),
        q.has("error") || q.has("err") || q.has("fail"),
    ) {
        (true, false) => 1.2,
        (true, true) => 1.0,
        _ => 0.5,
    };
    for (i, unit) in u.units.iter().enumerate() {
        let text = clip_str(&unit.text, 400);
        let mut v: f64 = match unit.sev {
            Severity::Error => 1.0,
            Severity::Warn => warn_sal,
            Severity::None => 0.0,
        };
        if signal::is_totals(text) || signal::exit_code(text).is_some() {
            v = v.max(0.9);
        }
        // A summary's leaf near the top (`stats.failures`, `terraform_version`), not every
        // `version` deep in a schema.
        if unit.kind == UnitKind::Leaf
            && summary_key(&unit.context)
            && unit.context.matches('.').count() < SUMMARY_DEPTH
            && summary_keys[&last_key(&unit.context)] <= MAX_SUMMARY_LEAVES
        {
            v = v.max(0.6);
        }
        sal[i] = v;
    }
    sal
}

/// Most leaves with one summary key (`version`, `status`) for them to be summary leaves.
const MAX_SUMMARY_LEAVES: usize = 3;

/// Path segments below which a leaf with a summary key is no summary of the output.
const SUMMARY_DEPTH: usize = 3;

/// Keys that name summaries, totals or verdicts.
pub(super) fn summary_key(path: &str) -> bool {
    let last = path.rsplit('.').next().unwrap_or(path).to_ascii_lowercase();
    let top = path.split('.').next().unwrap_or(path).to_ascii_lowercase();
    const KEYS: &[&str] = &[
        "stats",
        "statistics",
        "summary",
        "totals",
        "total",
        "result",
        "results",
        "status",
        "state",
        "verdict",
        "conclusion",
        "outcome",
        "overall",
        "version",
        "passed",
        "failed",
        "failures",
        "errors",
        "error",
        "message",
        "success",
        "ok",
        "exit_code",
        "exitcode",
        "returncode",
        "count",
    ];
    KEYS.contains(&last.as_str()) || (KEYS.contains(&top.as_str()) && path.split('.').count() <= 3)
}

/// True for a row that totals the others: its first word is `TOTAL`, `Total:`, `Sum`, `All`
/// or `Overall` (any case).
pub(super) fn totals_row(text: &str) -> bool {
    let first = text
        .split([' ', '\t', '|', ','])
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .trim_end_matches(':')
        .to_ascii_lowercase();
    matches!(
        first.as_str(),
        "total" | "totals" | "sum" | "all" | "overall"
    )
}
