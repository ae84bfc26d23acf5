//! The lines of a line template whose fixed words the question writes: "when were the release
//! tarballs made" asks for every `* 4.1.4: Release tar ball made.` of a ChangeLog, each an
//! answer of its own (its version), not one example of a shape shown once with a count.

use std::collections::HashSet;

use crate::guard::reduce::rank::{tokenize, Query};
use crate::guard::reduce::units::{UnitKind, Units};

/// Fewest distinct question terms (the question's own words, not synonyms) a template's fixed
/// words must hold.
const MIN_TERMS: usize = 2;

/// Most lines of a template whose lines are each an answer: past that, a shape the question
/// describes is a kind of line, shown by example and count (a log's 400 `GET /api` lines).
const MAX_MEMBERS: usize = 12;

/// Longest line (trimmed, bytes) of a template whose lines are each an answer.
const MAX_LINE_BYTES: usize = 100;

/// Most templates picked: the ones holding the most question terms, ties included.
const MAX_TEMPLATES: usize = 3;

/// The units of the line templates (2 to [`MAX_MEMBERS`] lines each) whose fixed words hold
/// the most distinct question terms, at least [`MIN_TERMS`]; at most [`MAX_TEMPLATES`]
/// templates, in template order. Empty for records (their fields are picked by value) and an
/// empty question.
pub(super) fn worded(u: &Units, q: &Query) -> Vec<usize> {
    if u.structured || q.is_empty() {
        return Vec::new();
    }
    let matched: Vec<(usize, usize)> = u
        .templates
        .iter()
        .enumerate()
        // Lines that differ (identical ones are one answer) and are short: a long line whose
        // fixed words the question writes is a wrapper (`<system_message … type="ERROR">`) whose
        // answer is on the lines inside it.
        .filter(|(k, t)| {
            (2..=MAX_MEMBERS).contains(&t.count)
                && t.text.contains("<*>")
                && u.units
                    .iter()
                    .filter(|x| x.template == *k)
                    .all(|x| x.text.trim().len() <= MAX_LINE_BYTES)
        })
        .filter_map(|(k, t)| {
            let fixed: HashSet<String> = t
                .text
                .split_whitespace()
                .filter(|w| !w.contains("<*>"))
                .flat_map(tokenize)
                .filter(|w| q.terms.get(w).is_some_and(|&x| x >= 1.0))
                .collect();
            (fixed.len() >= MIN_TERMS).then_some((k, fixed.len()))
        })
        .collect();
    let Some(best) = matched.iter().map(|m| m.1).max() else {
        return Vec::new();
    };
    let chosen: Vec<usize> = matched
        .iter()
        .filter(|m| m.1 == best)
        .map(|m| m.0)
        .collect();
    if chosen.len() > MAX_TEMPLATES {
        return Vec::new();
    }
    (0..u.units.len())
        .filter(|&i| u.units[i].kind == UnitKind::Line && chosen.contains(&u.units[i].template))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    fn changelog(releases: usize) -> String {
        let mut text = String::new();
        for k in 0..30 {
            text.push_str(&format!(
                "2019-0{}-1{}  Arnold D. Robbins  <arnold@skeeve.com>\n\n\t* io.c (fn{k}): Tidy.\n\n",
                k % 9 + 1,
                k % 10
            ));
            if k % 3 == 0 && k / 3 < releases {
                text.push_str(&format!(
                    "\t* 4.{}.{}: Release tar ball made.\n\n",
                    k / 9,
                    k % 9
                ));
            }
        }
        text
    }

    #[test]
    fn the_lines_a_question_spells_are_its_answers() {
        let text = changelog(8);
        let u = build(&text, Kind::Log);
        let q = Query::new("When were the 4.x release tarballs made?");
        let got: Vec<&str> = worded(&u, &q)
            .iter()
            .map(|&i| u.units[i].text.trim())
            .collect();
        assert_eq!(got.len(), 8, "{got:?}");
        assert!(got.iter().all(|l| l.ends_with("Release tar ball made.")));
        assert!(got.contains(&"* 4.2.0: Release tar ball made."), "{got:?}");
        // One question word is no shape's words; nor are more lines than a list's.
        assert!(worded(&u, &Query::new("When was it released?")).is_empty());
        let many = changelog(10);
        let mut many = many.repeat(2);
        many.push_str("\t* 5.0.0: Release tar ball made.\n");
        let u = build(&many, Kind::Log);
        assert!(worded(&u, &q).is_empty());
    }
}
