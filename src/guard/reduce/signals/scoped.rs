//! The section a question names: "In the yahoo-news trace summary, what were LCP and CLS?"
//!
//! A text of repeated sections ([`Headers::section_of`]: `Title: … yahoo-news.json.gz` then its
//! lines, `=== Build ===` then its lines) often writes the same kind of line in every section
//! (`- LCP: 464 ms` in each trace's summary). The question's other words then match every
//! section alike, and the best matches of the whole text are spread over sections the question
//! did not ask about. When one section's opener holds more of the question's words than any
//! other opener of its kind (`trace`, `summary`, `yahoo` and `news`: other `Title:` lines
//! hold `yahoo-news` or `formatTraceSummary`, not both), the question names that section: its lines that match the question rank
//! with the best matches of the whole text. Nothing here knows a format.

use std::collections::{HashMap, HashSet};

use crate::guard::reduce::rank::{bm25, split_joined, stem, tokenize, Query};

use crate::guard::reduce::select::Headers;
use crate::guard::reduce::units::{UnitKind, Units};

/// Least relevance (of the text's best match, 1.0) of the opener that names a section: a
/// weak match names nothing.
const MIN_OPENER_REL: f64 = 0.3;

/// Most relevance of the second-best opener as a share of the best one's: the question must
/// Least weight of a question term counted in an opener: the
/// question's own words and two of them written as one (`ratelimit`), not synonyms
/// ([`Query::terms`]).
const OWN_TERM: f64 = 0.7;

/// Least relevance a line of the named section must have for the rest of the question
/// (the words its opener does not hold), as a share of the section's best, to be raised.
const MIN_LINE_REL: f64 = 0.02;

/// Relevance of the named section's best-matching line; its other matches rank below it in
/// proportion to their own relevance, down to [`SCOPED_FLOOR`]. Level with the best match of
/// the whole text: the same line in a sibling section ranks just below it
/// ([`OTHER_SECTION_WEIGHT`]). (0.8: the sibling sections' best matches at 1.0 came first.)
const SCOPED_TOP: f64 = 1.0;

/// Relevance of the named section's weakest match.
const SCOPED_FLOOR: f64 = 0.5;

/// Factor on the relevance of the lines of the other sections of the named one's kind: they
/// match the question's other words as well (`LCP:` in every trace) and answer for another.
/// (With the section's best at 1.0: 0.9, old holdout -1; 0.95 and 1.0, no total moved.)
const OTHER_SECTION_WEIGHT: f64 = 0.95;

/// Most units a named section may hold: a longer one is most of the text, and raising it
/// picks nothing out.
const MAX_SECTION_SHARE: f64 = 0.34;

/// The relevance units should have when the question names one section: the lines of that
/// section that match the question raised, up to the best match's, the lines of the other
/// sections of its kind lowered ([`OTHER_SECTION_WEIGHT`]); `rel` is per unit, normalised to
/// a best of 1.0, as [`super::score`] computes it. Empty when no single opener holds more of the
/// question's words than any other opener of its kind, or it matches the question weakly
/// ([`MIN_OPENER_REL`]), or the text has no repeated sections.
pub fn named_section(
    u: &Units,
    h: &Headers,
    q: &Query,
    question: &str,
    rel: &[f64],
) -> Vec<(usize, f64)> {
    // Each line unit's index, by its 1-based line (the first unit of a line).
    let mut at: HashMap<usize, usize> = HashMap::new();
    for (i, unit) in u.units.iter().enumerate() {
        if unit.kind == UnitKind::Line {
            at.entry(unit.line).or_insert(i);
        }
    }
    // Openers by kind, in input order, with their relevance.
    let mut by: HashMap<&str, Vec<(usize, f64)>> = HashMap::new();
    for (n, kind) in h.openers() {
        let r = at
            .get(&n)
            .map_or(0.0, |&i| rel.get(i).copied().unwrap_or(0.0));
        by.entry(kind).or_default().push((n, r));
    }
    // The kind with one opener that holds more of the question's words than any other opener
    // of its kind; its section runs to the next opener of its kind.
    let mut best: Option<(f64, usize, usize, usize)> = None;
    for openers in by.values() {
        if openers.len() < 2 {
            continue;
        }
        let pairs = question_pairs(question, q);
        let score: Vec<usize> = openers
            .iter()
            .map(|&(n, _)| {
                at.get(&n)
                    .map_or(0, |&i| matched(&u.units[i].text, q, &pairs))
            })
            .collect();
        // The opener that matches the question better than any other.
        let mut rank: Vec<(usize, usize)> = score.iter().copied().zip(0..).collect();
        rank.sort_unstable_by(|a, b| b.cmp(a));
        let (most, k) = rank[0];
        if most == 0 || rank[1].0 == most {
            continue;
        }
        let top = openers[k].1;
        if top < MIN_OPENER_REL {
            continue;
        }
        let start = openers[k].0;
        let end = openers.get(k + 1).map_or(usize::MAX, |o| o.0);
        if best.is_none_or(|b| top > b.0 || (top == b.0 && start < b.1)) {
            best = Some((top, start, end, openers[0].0));
        }
    }
    let Some((_, start, end, first)) = best else {
        return Vec::new();
    };
    let units: Vec<usize> = (0..u.units.len())
        .filter(|&i| u.units[i].line > start && u.units[i].line < end)
        .collect();
    if units.is_empty() || units.len() as f64 > MAX_SECTION_SHARE * u.units.len() as f64 {
        return Vec::new();
    }
    // The section's lines rank by the rest of the question: the words its opener holds
    // (`yahoo`, `trace`) are what every line of the section is about.
    let mut rest = q.clone();
    if let Some(&o) = at.get(&start) {
        for t in tokenize(&u.units[o].text) {
            rest.terms.remove(&t);
        }
    }
    let own: Vec<f64> = if rest.terms.is_empty() {
        units.iter().map(|&i| rel[i]).collect()
    } else {
        let docs: Vec<String> = units.iter().map(|&i| u.units[i].score_text()).collect();
        bm25(&rest, &docs)
    };
    let top = own.iter().copied().fold(0.0, f64::max);
    if top <= 0.0 {
        return Vec::new();
    }
    let mut out: Vec<(usize, f64)> = units
        .iter()
        .zip(&own)
        .filter(|&(_, &r)| r / top >= MIN_LINE_REL)
        .map(|(&i, &r)| {
            let r = SCOPED_FLOOR + (SCOPED_TOP - SCOPED_FLOOR) * r / top;
            (i, r.max(rel[i]))
        })
        .collect();
    // The other sections of its kind, openers included, answer for another: their lines
    // rank just below the same match in the section asked about.
    out.extend(
        (0..u.units.len())
            .filter(|&i| {
                let l = u.units[i].line;
                l >= first && !(start..end).contains(&l) && rel[i] > 0.0
            })
            .map(|i| (i, rel[i] * OTHER_SECTION_WEIGHT)),
    );
    out
}

/// The stems of a text's words in order, joined words in their parts (`formatTraceSummary`
/// -> `format`, `trac`, `summari`; `yahoo-news` -> `yahoo`, `new`).
fn stems_in_order(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')) {
        for part in split_joined(raw) {
            if !part.is_empty() {
                out.push(stem(&part.to_lowercase()));
            }
        }
    }
    out
}

/// Pairs of the question's words written next to each other (stopwords skipped; a joined
/// word's parts): `yahoo-news trace summary` -> (`yahoo`, `new`), (`new`, `trac`), (`trac`,
/// `summari`).
fn question_pairs(question: &str, q: &Query) -> HashSet<(String, String)> {
    let seq: Vec<String> = stems_in_order(question)
        .into_iter()
        .filter(|t| q.terms.get(t).is_some_and(|&w| w >= OWN_TERM))
        .collect();
    seq.windows(2)
        .filter(|w| w[0] != w[1])
        .map(|w| (w[0].clone(), w[1].clone()))
        .collect()
}

/// How well an opener line matches the question: the question's own words it holds
/// ([`OWN_TERM`]) and the short ids it writes in full (`commit e6cd4fc8…` for `e6cd4fc`), plus the pairs of them it writes next to each other as the question does
/// (`TraceSummary` for "trace summary"), which tell `formatTraceSummary yahoo-news` from
/// `formatThirdPartySummary yahoo-news` when both hold the same words.
fn matched(text: &str, q: &Query, pairs: &HashSet<(String, String)>) -> usize {
    let words: HashSet<String> = tokenize(text)
        .into_iter()
        .filter(|t| q.terms.get(t).is_some_and(|&w| w >= OWN_TERM))
        .collect();
    let seq = stems_in_order(text);
    let adjacent: HashSet<(&str, &str)> = seq
        .windows(2)
        .map(|w| (w[0].as_str(), w[1].as_str()))
        .filter(|&(a, b)| pairs.contains(&(a.to_string(), b.to_string())))
        .collect();
    // An id the question writes short (`e6cd4fc`) that the opener writes in full.
    let ids = q
        .names
        .iter()
        .filter(|w| super::id_prefixes::short_id(w) && super::id_prefixes::writes_in_full(text, w))
        .count();
    words.len() + adjacent.len() + ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    /// Four sections opened by `Title:` lines, each with an LCP line. Two hold `yahoo-news`,
    /// two `formatTraceSummary`; one holds both.
    fn traces() -> String {
        let mut t = String::new();
        for (what, name, lcp) in [
            ("formatTraceSummary", "web-dev", 120),
            ("formatThirdPartySummary", "yahoo-news", 310),
            ("formatTraceSummary", "yahoo-news", 464),
            ("formatCallTree", "gamma-blog", 980),
        ] {
            t.push_str(&format!(
                "Title: TraceFormatter {what} {name}.json.gz\nContent:\n"
            ));
            t.push_str(&format!("- LCP: {lcp} ms, event: r-{lcp}\n"));
            for k in 0..6 {
                t.push_str(&format!("  request {k} took {} ms\n", 10 + k));
            }
        }
        t
    }

    fn rel_of(u: &Units, q: &Query) -> Vec<f64> {
        let docs: Vec<String> = u.units.iter().map(|x| x.score_text()).collect();
        let mut r = bm25(q, &docs);
        let max = r.iter().cloned().fold(0.0, f64::max);
        r.iter_mut().for_each(|x| *x /= max);
        r
    }

    fn raised(question: &str) -> Vec<(String, f64, f64)> {
        let text = traces();
        let u = build(&text, Kind::Lines);
        let h = Headers::of(&text);
        let q = Query::new(question);
        let rel = rel_of(&u, &q);
        named_section(&u, &h, &q, question, &rel)
            .into_iter()
            .map(|(i, r)| (u.units[i].text.clone(), r, rel[i]))
            .collect()
    }

    #[test]
    fn the_lines_of_the_section_the_question_names_are_raised() {
        let up = raised("In the yahoo-news trace summary, what was the LCP?");
        let lcp = up.iter().find(|(t, _, _)| t.contains("r-464"));
        let (_, r, was) = lcp.unwrap_or_else(|| panic!("{up:?}"));
        assert!(*r >= SCOPED_TOP - 1e-9 && r > was, "{r} {was}");
        // The same line of the sibling sections ranks below it, and below where it was.
        for other in ["r-310", "r-120", "r-980"] {
            let (_, r, was) = up.iter().find(|(t, _, _)| t.contains(other)).unwrap();
            assert!(r < was, "{other}: {up:?}");
        }
    }

    #[test]
    fn no_section_is_named_when_the_best_openers_match_alike() {
        assert!(raised("What was the LCP in each trace summary?").is_empty());
        assert!(raised("What was the LCP for yahoo-news?").is_empty());
    }
}
