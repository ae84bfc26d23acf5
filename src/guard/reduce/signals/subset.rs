//! Records nested in records ([`crate::guard::reduce::units::Unit::parent`] names their outermost record): the parts of
//! the one the question is about follow it ([`siblings_follow`]), and the records a question
//! names, when it asks for an extreme among them ([`named_records`]): "Among the IBM Security
//! Verify CVEs on this page, which has the highest CVSS score?". The largest value of the
//! whole output answers for another record; the largest among the records the question names
//! is the answer.

use std::collections::{HashMap, HashSet};

use crate::guard::reduce::rank::Query;
use crate::guard::reduce::units::{UnitKind, Units};

/// Fewest outer records for a subset of them to be named (fewer are all read alike).
const MIN_GROUPS: usize = 6;

/// Least relevance of an outer record, as a share of the best one's, for it to be one of the
/// records the question names.
const MEMBER_SHARE: f64 = 0.8;

/// Most outer records the question may name, as a share of them all: more is most of the
/// output, and its extremes are the whole output's.
const MAX_SHARE: f64 = 0.34;

/// The units of the outer records the question names: records nested in records
/// ([`crate::guard::reduce::units::Unit::parent`] names their outermost record) are grouped
/// by that record, with that record (the unit holding its naming pair); a group's relevance is
/// its best unit's (`rel`, per unit, best 1.0). The
/// groups within [`MEMBER_SHARE`] of the best are named when there are at least two of them,
/// at least [`MIN_GROUPS`] groups in all, and at most [`MAX_SHARE`] of them are named.
/// `None` otherwise.
pub(super) fn named_records(u: &Units, rel: &[f64]) -> Option<HashSet<usize>> {
    let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, x) in u.units.iter().enumerate() {
        if !x.parent.is_empty() {
            groups.entry(x.parent.as_str()).or_default().push(i);
        }
    }
    if groups.len() < MIN_GROUPS {
        return None;
    }
    // The outermost records themselves: each holds its naming pair among its pairs.
    for (i, x) in u.units.iter().enumerate() {
        if x.parent.is_empty() {
            let key = x.pairs.iter().find(|p| groups.contains_key(p.as_str()));
            if let Some(g) = key.and_then(|p| groups.get_mut(p.as_str())) {
                g.push(i);
            }
        }
    }
    let best_of = |v: &[usize]| v.iter().map(|&i| rel[i]).fold(0.0, f64::max);
    let best = groups.values().map(|v| best_of(v)).fold(0.0, f64::max);
    if best <= 0.0 {
        return None;
    }
    let named: Vec<&Vec<usize>> = groups
        .values()
        .filter(|v| best_of(v) >= MEMBER_SHARE * best)
        .collect();
    if named.len() < 2 || named.len() as f64 > MAX_SHARE * groups.len() as f64 {
        return None;
    }
    Some(named.into_iter().flatten().copied().collect())
}

/// Shortest path-like word of the question (`src/plugins`) that names the records under it.
const MIN_PATH_WORD: usize = 5;

/// The records under a path the question writes ("the largest files under
/// `risuclient/plugins/`"): the units of kind record whose text holds, at the start of a
/// path (after a separator or at the start), a word of the question that has a `/` in it and
/// at least [`MIN_PATH_WORD`] bytes. `None` unless at least two records do and at least one
/// does not (all of them is the whole output, whose extremes are ranked anyway).
pub(super) fn under_named_path(u: &Units, q: &Query) -> Option<HashSet<usize>> {
    let words: Vec<&str> = q
        .names
        .iter()
        .map(|w| w.trim_matches('/'))
        .filter(|w| w.len() >= MIN_PATH_WORD && w.contains('/'))
        .collect();
    if words.is_empty() {
        return None;
    }
    let mut records = 0usize;
    let mut under = HashSet::new();
    for (i, x) in u.units.iter().enumerate() {
        if x.kind != UnitKind::Record {
            continue;
        }
        records += 1;
        let lower = x.text.to_lowercase();
        let holds = words.iter().any(|w| {
            lower.match_indices(w).any(|(at, _)| {
                let before = lower[..at].chars().next_back();
                let after = lower[at + w.len()..].chars().next();
                before.is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != '-')
                    && after == Some('/')
            })
        });
        if holds {
            under.insert(i);
        }
    }
    (under.len() >= 2 && under.len() < records).then_some(under)
}

/// Most records nested side by side in one outer record for them to be its parts, all shown
/// with the best of them ([`siblings_follow`]); more are a listing.
const MAX_SIBLINGS: usize = 6;
/// Least relevance (normalised, the best is 1) of the nested record that brings its siblings
/// (0.5 to 0.98 measured alike: dev +2, other sets the same).
pub(super) const SIBLINGS_LEAD: f64 = 0.7;
/// The relevance siblings take, against the record that brings them.
pub(super) const SIBLING_REL: f64 = 0.9;

/// The parts of the object the question is about (the queries of the one dashboard panel it
/// names, the steps of one job): a record nested in an outer record ([`Unit::parent`]) near the
/// top of the relevance ranking raises its few siblings (the records of the same array in
/// the same outer record) to just below it, whatever words they hold themselves.
pub(super) fn siblings_follow(u: &Units, rel: &mut [f64]) {
    let mut groups: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, x) in u.units.iter().enumerate() {
        if x.kind == UnitKind::Record && !x.parent.is_empty() {
            groups
                .entry((x.parent.as_str(), x.context.as_str()))
                .or_default()
                .push(i);
        }
    }
    for v in groups
        .values()
        .filter(|v| (2..=MAX_SIBLINGS).contains(&v.len()))
    {
        let best = v.iter().map(|&i| rel[i]).fold(0.0, f64::max);
        if best >= SIBLINGS_LEAD {
            for &i in v {
                rel[i] = rel[i].max(SIBLING_REL * best);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::guard::reduce::intent::Asks;
    use crate::guard::reduce::rank::Query;
    use crate::guard::reduce::signals::score;
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    /// Records that wrap one object (`{"cve": {"id": …, "metrics": […]}}`), some of a product the
    /// question names: the largest score among those is the answer, not the largest of all.
    fn wrapped_records() -> String {
        let recs: Vec<serde_json::Value> = (0..18)
            .map(|i| {
                let product = if i % 3 == 0 { "Acme Gateway 11.5" } else { "Other Thing" };
                // The largest of all is another product's (i = 4); Acme's best is i = 9.
                let score = match i {
                    4 => 9.8,
                    9 => 8.8,
                    _ => 3.0 + i as f64 * 0.1,
                };
                serde_json::json!({"cve": {
                    "id": format!("CVE-2022-{:05}", 100 + i),
                    "descriptions": [{"lang": "en", "value": format!("{product} could allow a remote attacker {i}")},
                                     {"lang": "es", "value": format!("texto {i}")}],
                    "metrics": [{"source": "nvd", "type": "Primary",
                                 "cvssData": {"version": "3.1", "baseScore": score}},
                                {"source": "vendor", "type": "Secondary",
                                 "cvssData": {"version": "3.1", "baseScore": score - 1.0}}]
                }})
            })
            .collect();
        serde_json::to_string_pretty(&serde_json::json!({ "vulnerabilities": recs })).unwrap()
    }

    #[test]
    fn the_extreme_among_the_records_the_question_names_is_found() {
        let text = wrapped_records();
        let u = build(&text, Kind::Json);
        // The nested records are named by the id of the object their record wraps.
        assert!(
            u.units
                .iter()
                .any(|x| x.parent.contains("\"id\": \"CVE-2022-00109\"")),
            "{:?}",
            u.units.iter().map(|x| &x.parent).collect::<Vec<_>>()
        );
        let question = "Among the Acme Gateway 11.5 CVEs, which has the highest baseScore?";
        let s = score(&u, &Query::new(question), &Asks::of(question));
        let best = (0..u.units.len())
            .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
            .unwrap();
        assert!(u.units[best].text.contains("8.8"), "{}", u.units[best].text);
        assert!(
            u.units[best].parent.contains("CVE-2022-00109"),
            "{}",
            u.units[best].parent
        );
        assert!(
            s.ext_why[&best].contains("of the records asked about"),
            "{}",
            s.ext_why[&best]
        );
    }

    /// A wheel's RECORD: no header, paths with their sizes; the largest file of all is
    /// outside the folder the question names.
    fn record() -> String {
        let mut t = String::from("pkg/__init__.py,sha256=AAAA,118\n");
        t.push_str("pkg/shell.py,sha256=BBBB,55789\n");
        for i in 0..30 {
            // Sizes in no order (a rising column reads as an id).
            let size = 100 + (i * 7919) % 5000;
            t.push_str(&format!("pkg/plugins/p{i}.sh,sha256=C{i},{size}\n"));
        }
        t.push_str("pkg/plugins/core/numa.sh,sha256=DDDD,13754\n");
        t.push_str("pkg/plugins-old/big.sh,sha256=EEEE,40000\n");
        t
    }

    #[test]
    fn the_extreme_among_the_records_under_a_path_the_question_writes_is_found() {
        let text = record();
        let u = build(&text, Kind::Csv);
        // No header: the first line is a row, its columns numbered.
        assert!(u.fields.iter().any(|f| f.name == "column 3"));
        assert!(u.fields.iter().all(|f| f.name != "118"));
        let q = Query::new("Which files under pkg/plugins/ are the largest?");
        let under = super::under_named_path(&u, &q).expect("records under pkg/plugins");
        // `pkg/plugins-old/` is another folder.
        assert_eq!(under.len(), 31);
        let question = "Which files under pkg/plugins/ are the largest?";
        let s = score(&u, &q, &Asks::of(question));
        let best = (0..u.units.len())
            .filter(|i| s.ext_why.get(i).is_some_and(|w| w.contains("asked about")))
            .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
            .expect("an extreme among the records asked about");
        assert!(
            u.units[best].text.contains("numa.sh"),
            "{}",
            u.units[best].text
        );
        // A path that every record, or one record, holds names no subset.
        assert!(super::under_named_path(&u, &Query::new("largest under pkg/ ?")).is_none());
        assert!(super::under_named_path(&u, &Query::new("size of pkg/plugins/core/")).is_none());
    }
}
