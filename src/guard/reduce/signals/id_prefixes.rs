//! Ids the question writes short. Git, Docker and most tools print a commit, image or
//! container id in full in one place (`commit e6cd4fc8a1b2...`) and abbreviate it in
//! another (`e6cd4fc`), and a question copies the short form. The short form is no token of
//! the output, so neither BM25 nor a whole-value match finds the unit; a token that starts
//! with it does.

use crate::guard::reduce::rank::Query;
use crate::guard::reduce::units::Units;

/// Fewest hex digits of a short id: git's default abbreviation.
const MIN_ID_LEN: usize = 7;

/// Most hex digits of a short id; a longer one is written in full.
const MAX_ID_LEN: usize = 39;

/// True for a word of the question that reads as a short hex id: [`MIN_ID_LEN`] to
/// [`MAX_ID_LEN`] hex digits, with a digit and a letter (not `deadbeef` alone, nor a number).
pub(super) fn short_id(w: &str) -> bool {
    (MIN_ID_LEN..=MAX_ID_LEN).contains(&w.len())
        && w.bytes().all(|b| b.is_ascii_hexdigit())
        && w.bytes().any(|b| b.is_ascii_digit())
        && w.bytes().any(|b| b.is_ascii_alphabetic())
}

/// The units that hold, as the start of a longer token, an id the question writes short,
/// for ids held so by at most `few` units (an id on every line picks nothing out). Case is
/// ignored.
pub fn named(u: &Units, q: &Query, few: usize) -> Vec<usize> {
    let ids: Vec<&String> = q.names.iter().filter(|w| short_id(w)).collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for id in ids {
        let hits: Vec<usize> = u
            .units
            .iter()
            .enumerate()
            .filter(|(_, unit)| writes_in_full(&unit.text, id))
            .map(|(i, _)| i)
            .collect();
        if !hits.is_empty() && hits.len() <= few {
            out.extend(hits);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// True when `text` holds a token that starts with `id` and is longer (ignoring case).
pub(super) fn writes_in_full(text: &str, id: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|t| t.len() > id.len() && t[..id.len()].eq_ignore_ascii_case(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    #[test]
    fn a_short_commit_id_names_the_line_that_writes_it_in_full() {
        let mut text = String::new();
        for k in 0..40u32 {
            let sha = format!("{:08x}{:032x}", 0x1000_0000u32 + k * 7919, k);
            text.push_str(&format!(
                "commit {sha}\nAuthor: dev <d@x>\n\n    change {k}\n\n"
            ));
        }
        let u = build(&text, Kind::Lines);
        let sha = format!("{:08x}{:032x}", 0x1000_0000u32 + 17 * 7919, 17);
        let q = Query::new(&format!(
            "How many insertions did commit {} make?",
            &sha[..7]
        ));
        let hits = named(&u, &q, 2);
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(u.units[hits[0]].text, format!("commit {sha}"));
    }

    #[test]
    fn words_and_numbers_are_no_ids() {
        assert!(short_id("e6cd4fc"));
        assert!(!short_id("deadbeef") && !short_id("1234567") && !short_id("e6cd4f"));
        assert!(!short_id("insertions"));
    }
}
