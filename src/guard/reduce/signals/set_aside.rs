//! The records a question sets aside a list of values for ("licenses other than
//! MIT/Apache-2.0"): the values of a field outside that list, read as an SPDX expression reads
//! (`MIT OR Zlib` offers MIT; `(MIT OR Apache-2.0) AND Unicode-3.0` also needs Unicode-3.0).

use std::collections::HashSet;

use super::chosen::MAX_CHOSEN;
use super::Dist;
use crate::guard::reduce::rank::Query;

/// The words of a field's value, for [`set_aside`]: split at whitespace and `/,()+;|`,
/// lower case, the connectives `or`, `and`, `with` dropped (`(MIT OR Apache-2.0) AND
/// Unicode-DFS-2016` is `mit`, `apache-2.0`, `unicode-dfs-2016`).
fn value_words(v: &str) -> Vec<String> {
    v.split(|c: char| c.is_whitespace() || "/,()+;|".contains(c))
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty() && !matches!(w.as_str(), "or" | "and" | "with"))
        .collect()
}

/// True when value `v` is made of the listed words alone, or offers a choice of one that
/// is (an SPDX expression's `OR`, or the older `/`: `MIT OR Zlib`, `Apache-2.0 WITH
/// LLVM-exception OR Apache-2.0 OR MIT` and `Unlicense/MIT` may each be taken as MIT): each
/// alternative at the top level (outside parentheses) is tried, one in parentheses as a value of
/// its own. An `AND` joins what must all be listed (`(MIT OR Apache-2.0) AND Unicode-3.0` is
/// not, for MIT and Apache-2.0).
fn within(v: &str, listed: &[String]) -> bool {
    let v = v.trim();
    if let Some(inner) = v.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        // Whole in parentheses only when the first one closes at the end.
        if closes_at_end(inner) {
            return within(inner, listed);
        }
    }
    let alternatives = split_or(v);
    if alternatives.len() > 1 {
        return alternatives.iter().any(|a| within(a, listed));
    }
    let w = value_words(v);
    !w.is_empty() && w.iter().all(|x| listed.contains(x))
}

/// True when no `)` in `s` closes a `(` opened before `s` (its parentheses balance).
fn closes_at_end(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

/// `v` split at its top-level alternatives: ` OR ` (any case) and `/` outside parentheses.
fn split_or(v: &str) -> Vec<&str> {
    let b = v.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut start, mut i) = (0i32, 0, 0);
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b'/' if depth == 0 => {
                out.push(&v[start..i]);
                start = i + 1;
            }
            b' ' if depth == 0
                && b.len() >= i + 4
                && b[i + 1..i + 3].eq_ignore_ascii_case(b"or")
                && b[i + 3] == b' ' =>
            {
                out.push(&v[start..i]);
                start = i + 4;
                i += 3;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&v[start..]);
    out
}

/// The values of field `d` outside the list the question sets aside ([`Query::set_aside`]:
/// "licenses other than MIT/Apache-2.0/Unlicense"), with the list as the fact shows it (`MIT,
/// Apache-2.0 and Unlicense`): when
/// most of the list's words are words of the field's values, some value is made of them
/// alone, and the other values are held by at most [`MAX_CHOSEN`] records and fewer than half.
pub(super) fn set_aside(d: &Dist, q: &Query) -> Option<(String, HashSet<String>)> {
    if q.set_aside.is_empty() {
        return None;
    }
    let listed: Vec<String> = q.set_aside.iter().map(|w| w.to_lowercase()).collect();
    let words: Vec<(&String, usize, Vec<String>)> = d
        .counts
        .iter()
        .map(|(v, c)| (v, *c, value_words(v)))
        .collect();
    let matched: Vec<&String> = q
        .set_aside
        .iter()
        .zip(&listed)
        .filter(|(_, l)| words.iter().any(|(_, _, w)| w.contains(l)))
        .map(|(w, _)| w)
        .collect();
    if matched.is_empty() || matched.len() * 2 < listed.len() {
        return None;
    }
    // Any value with a word off the list is another (`Apache-2.0 OR BSL-1.0` names BSL);
    // when those are too many to pick, a value offering a listed choice is not (it may be
    // taken as Apache-2.0): 62 of 386 crates of a `cargo metadata` name another licence, 32
    // need one.
    let split = |strict: bool| {
        let (mut usual, mut other, mut others) = (false, HashSet::new(), 0);
        for (v, c, w) in &words {
            let listed_only = !w.is_empty() && w.iter().all(|x| listed.contains(x));
            if listed_only || (!strict && within(v, &listed)) {
                usual |= listed_only;
            } else {
                other.insert((*v).clone());
                others += c;
            }
        }
        (usual, other, others)
    };
    let picks = |(usual, _, others): &(bool, HashSet<String>, usize)| {
        *usual && *others > 0 && *others <= MAX_CHOSEN && others * 2 < d.n
    };
    let mut found = split(true);
    if !picks(&found) {
        found = split(false);
    }
    // Joined by commas, not as the question may write it (`MIT/Apache-2.0`): a slashed
    // string the file never writes reads as a quoted path, and the fact would be dropped
    // as not verbatim.
    let label = match matched.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!(
            "{} and {last}",
            rest.iter()
                .map(|w| w.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => matched.iter().map(|w| w.as_str()).collect(),
    };
    picks(&found).then_some((label, found.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_of_licences_is_within_the_list_when_one_of_them_is() {
        let listed = ["mit".to_string(), "apache-2.0".to_string()];
        for v in [
            "MIT OR Apache-2.0",
            "MIT/Apache-2.0",
            "Apache-2.0 / MIT",
            "MIT OR Zlib",
            "Unlicense/MIT",
            "Apache-2.0 WITH LLVM-exception OR Apache-2.0 OR MIT",
            "(MIT OR Apache-2.0)",
            "MIT",
        ] {
            assert!(within(v, &listed), "{v}");
        }
        for v in [
            "Unicode-3.0",
            "(MIT OR Apache-2.0) AND Unicode-3.0",
            "(Apache-2.0 OR MIT) AND BSD-3-Clause",
            "Apache-2.0 AND ISC",
            "Apache-2.0 WITH LLVM-exception",
            "0BSD",
            "(MIT) AND (Zlib)",
        ] {
            assert!(!within(v, &listed), "{v}");
        }
    }
}
