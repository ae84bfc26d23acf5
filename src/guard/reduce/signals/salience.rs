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
    // The last names of the records' fields: a leaf of that name under an aggregate
    // (`end.sum_sent.retransmits` beside the per-interval records' `retransmits`) is their
    // total, the run's figure.
    let record_fields: std::collections::HashSet<String> = u
        .units
        .iter()
        .filter(|x| x.kind == UnitKind::Record)
        .flat_map(|x| x.fields.iter().map(|(f, _)| *f))
        .collect::<std::collections::HashSet<usize>>()
        .into_iter()
        .map(|f| last_segment(&u.fields[f].name))
        .collect();
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
        if unit.kind == UnitKind::Leaf
            && aggregate_leaf(&unit.context)
            && record_fields.contains(&last_segment(&unit.context))
        {
            // Above the other aggregates when the question names its field.
            let last = last_segment(&unit.context);
            let named = last.split(['_', '-']).any(|w| q.names_word(w));
            v = v.max(if named { 0.7 } else { 0.6 });
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

/// The last name of a path (`end.sum_sent.retransmits` -> `retransmits`, `a[].b` -> `b`),
/// in lower case.
fn last_segment(path: &str) -> String {
    path.rsplit('.')
        .next()
        .unwrap_or(path)
        .trim_end_matches("[]")
        .to_ascii_lowercase()
}

/// Path segments below which a leaf is no aggregate of the run (a record's own `sum`).
const AGGREGATE_DEPTH: usize = 4;

/// True for a leaf's path under an object that aggregates (`end.sum_sent.bits_per_second`,
/// `totals.bytes`, `summary.duration`): a parent segment is `sum`, `total(s)`, `summary`,
/// `overall`, `aggregate(d)` or one of them with a qualifier (`sum_sent`, `total_stats`), at
/// most [`AGGREGATE_DEPTH`] segments deep and outside any array.
pub(super) fn aggregate_leaf(path: &str) -> bool {
    let seg: Vec<&str> = path.split('.').collect();
    if seg.len() < 2 || seg.len() > AGGREGATE_DEPTH || path.contains("[]") {
        return false;
    }
    seg[..seg.len() - 1].iter().any(|s| {
        let s = s.to_ascii_lowercase();
        let head = s.split(['_', '-']).next().unwrap_or("");
        matches!(
            head,
            "sum" | "total" | "totals" | "summary" | "overall" | "aggregate" | "aggregated"
        )
    })
}

/// True for a row that totals the others: its first word is `TOTAL`, `Total:`, `Sum`, `All`
/// or `Overall` (any case), or its last is `(TOTALS)` or `total` (`size -t`'s last row,
/// ranked the largest library in the trial of session 54; `wc -l`'s `455953 total`).
pub(crate) fn totals_row(text: &str) -> bool {
    let mut words = text.split([' ', '\t', '|', ',']).filter(|w| !w.is_empty());
    let first = words.next().unwrap_or("");
    let last = words.next_back().unwrap_or("");
    let word = |w: &str| {
        w.trim_end_matches(':')
            .trim_matches(['(', ')', '[', ']'])
            .to_ascii_lowercase()
    };
    matches!(
        word(first).as_str(),
        "total" | "totals" | "sum" | "all" | "overall"
    ) || matches!(word(last).as_str(), "total" | "totals")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    #[test]
    fn an_aggregate_is_under_a_sum_or_total_outside_arrays() {
        assert!(aggregate_leaf("end.sum_sent.retransmits"));
        assert!(aggregate_leaf("totals.bytes"));
        assert!(aggregate_leaf("Summary.Duration"));
        assert!(!aggregate_leaf("end.streams[].sender.retransmits"));
        assert!(!aggregate_leaf("summary"));
        assert!(!aggregate_leaf("a.b.c.sum.d"));
        assert!(!aggregate_leaf("end.summit.x"));
    }

    #[test]
    fn the_total_of_a_records_field_is_salient() {
        let mut text = String::from("{\"intervals\": [\n");
        for k in 0..30 {
            text.push_str(&format!(
                "{{\"start\": {k}, \"retransmits\": {}, \"bytes\": {}}},\n",
                k % 3,
                1000 + k * 7 % 11
            ));
        }
        text.push_str("{\"start\": 30, \"retransmits\": 0, \"bytes\": 5}],\n");
        text.push_str("\"end\": {\"sum_sent\": {\"retransmits\": 105, \"bytes\": 30405},\n");
        text.push_str("\"host\": {\"retransmits\": 7, \"name\": \"a\"}}}\n");
        let u = build(&text, Kind::Json);
        let q = Query::new("how many retransmits were there?");
        let sal = salience(&u, &q);
        let of = |needle: &str| {
            let i = u
                .units
                .iter()
                .position(|x| x.kind == UnitKind::Leaf && x.text.contains(needle))
                .unwrap_or_else(|| panic!("no leaf {needle}"));
            sal[i]
        };
        assert_eq!(of("105"), 0.7, "the total the question names");
        assert_eq!(of("30405"), 0.6, "another total");
        assert_eq!(of("\"retransmits\": 7"), 0.0, "not under an aggregate");
    }
}
