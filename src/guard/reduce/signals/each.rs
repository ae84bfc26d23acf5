//! The first entry of each repeated section, for a question about each of them ("the top hit
//! for each query", "every commit's message").
//!
//! A text of repeated sections ([`Headers::section_of`]: `# Query: x` then its rows, `commit
//! 1a2b` then its lines) answers such a question once per section, and its sections mostly
//! list their entries best first (hits by score, a commit's subject before its body). The
//! best of the whole text, what the extremes give, is one section's answer. Nothing here
//! knows a format: an entry is a unit of the section that is not its boilerplate (a template
//! written at most once in most sections: `# Database: refseq_rna`, `Author:`; a line's kind is
//! its lead word, a record's its template).

use std::collections::{HashMap, HashSet};

use crate::guard::reduce::rank::{tokenize, Query};
use crate::guard::reduce::select::{lead, Headers};
use crate::guard::reduce::units::{UnitKind, Units};

/// Fewest sections for a question about each of them to be answered per section.
const MIN_SECTIONS: usize = 2;

/// The unit index of the first entry of each repeated section, in input order. Sections
/// are grouped by their opener's kind ([`Headers::section_of`]: `Query:`, `>>`, a banner): the group whose kind
/// the question names ("for each query"), else the group with the most sections (then units). Empty when
/// that group has fewer than [`MIN_SECTIONS`] sections.
///
/// When `ranked` (the question asks for the top of something in each part), each section's
/// line with the largest number ([`largest_number`]) comes too.
pub fn section_firsts(u: &Units, h: &Headers, q: &Query, ranked: bool) -> Vec<usize> {
    // Units per section, in input order, and each section's opener lead.
    let mut all: Vec<(String, Vec<usize>)> = Vec::new();
    let mut at: HashMap<usize, usize> = HashMap::new();
    for (i, unit) in u.units.iter().enumerate() {
        let Some((s, kind)) = h.section_of(unit.line) else {
            continue;
        };
        let k = *at.entry(s).or_insert_with(|| {
            all.push((kind.to_string(), Vec::new()));
            all.len() - 1
        });
        all[k].1.push(i);
    }
    // Per opener lead: sections and units in them.
    let mut groups: HashMap<&str, (usize, usize)> = HashMap::new();
    for (l, units) in &all {
        let g = groups.entry(l.as_str()).or_default();
        g.0 += 1;
        g.1 += units.len();
    }
    let named = |l: &str| tokenize(l).iter().any(|w| q.names_word(w));
    let Some(group) = groups
        .iter()
        .max_by_key(|(l, &(n, size))| (named(l), n, size, std::cmp::Reverse(**l)))
        .map(|(l, _)| l.to_string())
    else {
        return Vec::new();
    };
    let by: Vec<&Vec<usize>> = all
        .iter()
        .filter(|(l, _)| *l == group)
        .map(|(_, v)| v)
        .collect();
    if by.len() < MIN_SECTIONS {
        return Vec::new();
    }
    // A unit's kind of entry: a record's template, a line's lead word ([`lead`]).
    let key = |i: usize| -> String {
        let unit = &u.units[i];
        match unit.kind {
            UnitKind::Line => lead(&unit.text).unwrap_or_default(),
            _ => format!("\u{1}{}", unit.template),
        }
    };
    // Per kind of entry: in how many sections it occurs, and in how many more than once.
    let mut in_sections: HashMap<String, (usize, usize)> = HashMap::new();
    for units in &by {
        let mut count: HashMap<String, usize> = HashMap::new();
        for &i in units.iter() {
            *count.entry(key(i)).or_default() += 1;
        }
        for (t, c) in count {
            let e = in_sections.entry(t).or_default();
            e.0 += 1;
            if c > 1 {
                e.1 += 1;
            }
        }
    }
    // Boilerplate: in at least half the sections, and once in most of those.
    let boiler: HashSet<String> = in_sections
        .into_iter()
        .filter(|(_, (n, many))| n * 2 >= by.len() && many * 2 < *n)
        .map(|(k, _)| k)
        .collect();
    let mut out = Vec::new();
    for units in &by {
        let entries: Vec<usize> = units
            .iter()
            .copied()
            .filter(|&i| !boiler.contains(&key(i)))
            .collect();
        out.extend(entries.first().copied());
        // For a ranking in each part ("the slowest test in each file"), the line with the
        // largest number too, when it is not the first.
        if ranked {
            let top = entries
                .iter()
                .copied()
                .filter_map(|i| largest_number(u, i).map(|x| (x, i)))
                .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
            if let Some((_, t)) = top.filter(|t| entries.first() != Some(&t.1)) {
                out.push(t);
            }
        }
    }
    out
}

/// The largest number a line writes as a word of its own (`[8.008s]`, `1.2G`; not the digits
/// inside a name or path); `None` for a record or a line without one.
fn largest_number(u: &Units, i: usize) -> Option<f64> {
    let unit = &u.units[i];
    if unit.kind != UnitKind::Line {
        return None;
    }
    unit.text
        .split_whitespace()
        .filter(|t| !t.contains(['/', ':', '=']))
        .filter_map(super::number)
        .filter(|x| x.is_finite())
        .max_by(f64::total_cmp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    /// Three queries of BLAST tabular output, their hits best first.
    fn blast() -> String {
        let mut text = String::new();
        for (q, best) in [
            ("contig_0", "NM_100"),
            ("contig_1", "NM_200"),
            ("contig_2", "NM_300"),
        ] {
            text.push_str(&format!(
                "# BLASTN 2.14.0+\n# Query: {q}\n# Database: refseq_rna\n# 3 hits found\n\
                 {q}\t{best}.1\t99.0\t1.0e-90\t800.1\n{q}\tNM_9{q}.2\t80.0\t1.0e-20\t300.5\n\
                 {q}\tNM_8{q}.3\t70.0\t1.0e-05\t90.2\n"
            ));
        }
        text
    }

    #[test]
    fn the_first_entry_of_each_section_past_its_boilerplate() {
        let text = blast();
        let u = build(&text, Kind::Lines);
        let h = Headers::of(&text);
        let firsts: Vec<String> =
            section_firsts(&u, &h, &Query::new("top hit for each query"), false)
                .into_iter()
                .map(|i| u.units[i].text.clone())
                .collect();
        assert_eq!(firsts.len(), 3, "{firsts:?}");
        for (f, best) in firsts.iter().zip(["NM_100", "NM_200", "NM_300"]) {
            assert!(f.contains(best), "{f} is not the first hit {best}");
        }
    }

    #[test]
    fn a_text_without_repeated_sections_has_no_firsts() {
        let text = "a 1\nb 2\nc 3\n";
        let u = build(text, Kind::Lines);
        assert!(section_firsts(&u, &Headers::of(text), &Query::new("each"), false).is_empty());
    }

    #[test]
    fn a_ranking_in_each_part_brings_each_parts_largest_line() {
        let mut text = String::new();
        for (f, slow) in [("auth", 17), ("db", 5), ("api", 30)] {
            text.push_str(&format!("============ tests/test_{f}.py ============\n"));
            for i in 0..40 {
                let t = if i == slow {
                    7.5
                } else {
                    0.1 + (i % 7) as f64 / 10.0
                };
                text.push_str(&format!(
                    "tests/test_{f}.py::test_case_{i:03} PASSED [{t:.3}s]\n"
                ));
            }
        }
        let u = build(&text, Kind::Lines);
        let h = Headers::of(&text);
        let got: Vec<&str> = section_firsts(&u, &h, &Query::new("slowest test in each file"), true)
            .into_iter()
            .map(|i| u.units[i].text.as_str())
            .collect();
        for want in [
            "test_auth.py::test_case_017",
            "test_db.py::test_case_005",
            "test_api.py::test_case_030",
        ] {
            assert!(
                got.iter().any(|g| g.contains(want)),
                "{want} not in {got:?}"
            );
        }
    }
}
