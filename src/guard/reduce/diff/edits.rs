//! Rare edits: in a diff of many alike changes (a license header added to every file, `"""`
//! made `r"""` in every docstring), the one change of its own kind (`max_line_length = 78`
//! made `= 998`) is what a reader looks for.

use std::collections::{HashMap, HashSet};

/// Fewest changed lines for alike changes to be told from rare ones.
const MIN_CHANGED: usize = 20;

/// Most times an edit may occur to be rare.
const MAX_RARE: usize = 1;

/// Largest share of the changed lines that rare edits may hold: where most edits are each of
/// their own kind (an ordinary code change), none stands out.
const MAX_RARE_SHARE: f64 = 0.2;

/// The 0-based lines (of `changed`, each a `-` or `+` line of `lines`) that make an edit
/// occurring at most [`MAX_RARE`] times. An edit is a removed line paired with the added
/// line at its place in the run of `+` lines just after (the same number of each), told by
/// what differs once their common start and end are cut (`7` → `99` for `= 78` → `= 998`);
/// a lone added or removed line by its text with digits as `0`. Empty when the diff has
/// fewer than [`MIN_CHANGED`] changed lines or too many rare ones ([`MAX_RARE_SHARE`]).
pub(super) fn rare_edits(lines: &[&str], changed: &[usize]) -> HashSet<usize> {
    let mut out = HashSet::new();
    if changed.len() < MIN_CHANGED {
        return out;
    }
    // Runs of adjacent changed lines: removed lines, then added ones.
    let mut edits: Vec<(String, Vec<usize>)> = Vec::new();
    let mut k = 0;
    while k < changed.len() {
        let start = k;
        while k + 1 < changed.len() && changed[k + 1] == changed[k] + 1 {
            k += 1;
        }
        let run = &changed[start..=k];
        k += 1;
        let del: Vec<usize> = run
            .iter()
            .copied()
            .filter(|&i| lines[i].starts_with('-'))
            .collect();
        let add: Vec<usize> = run
            .iter()
            .copied()
            .filter(|&i| lines[i].starts_with('+'))
            .collect();
        let ordered = del.iter().zip(&add).all(|(d, a)| d < a);
        if del.len() == add.len() && ordered {
            for (&d, &a) in del.iter().zip(&add) {
                edits.push((change(&lines[d][1..], &lines[a][1..]), vec![d, a]));
            }
        } else {
            for &i in run {
                edits.push((
                    format!("{}{}", &lines[i][..1], shape(&lines[i][1..])),
                    vec![i],
                ));
            }
        }
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (sig, _) in &edits {
        *counts.entry(sig.as_str()).or_default() += 1;
    }
    for (sig, at) in &edits {
        if counts[sig.as_str()] <= MAX_RARE && !sig.trim().is_empty() {
            out.extend(at);
        }
    }
    if out.len() as f64 > MAX_RARE_SHARE * changed.len() as f64 {
        out.clear();
    }
    out
}

/// What differs between an old and a new line once their common start and end are cut,
/// trimmed: `"7 -> 99"`.
fn change(old: &str, new: &str) -> String {
    let (o, n) = (old.as_bytes(), new.as_bytes());
    let mut p = 0;
    while p < o.len() && p < n.len() && o[p] == n[p] {
        p += 1;
    }
    let mut s = 0;
    while s < o.len() - p && s < n.len() - p && o[o.len() - 1 - s] == n[n.len() - 1 - s] {
        s += 1;
    }
    let cut = |t: &str, a: usize, b: usize| -> String {
        String::from_utf8_lossy(&t.as_bytes()[a..t.len() - b])
            .trim()
            .to_string()
    };
    format!("{} -> {}", cut(old, p, s), cut(new, p, s))
}

/// A line's text with each run of digits as `0`, trimmed: `# Copyright 2004-2006` and
/// `# Copyright 2001-2007` are one shape.
fn shape(t: &str) -> String {
    let mut out = String::new();
    let mut digit = false;
    for c in t.trim().chars() {
        if c.is_ascii_digit() {
            if !digit {
                out.push('0');
            }
            digit = true;
        } else {
            out.push(c);
            digit = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_edit_of_its_kind_among_alike_edits_is_rare() {
        let mut text = String::new();
        for i in 0..30 {
            text.push_str(&format!(
                "@@ -{i},3 +{i},3 @@\n-    \"\"\"Doc {i}.\n+    r\"\"\"Doc {i}.\n     x = {i}\n"
            ));
        }
        text.push_str("@@ -90,3 +90,3 @@\n     cte_type = '8bit'\n-    max_line_length = 78\n+    max_line_length = 998\n");
        let lines: Vec<&str> = text.lines().collect();
        let changed: Vec<usize> = (0..lines.len())
            .filter(|&i| {
                (lines[i].starts_with('-') || lines[i].starts_with('+'))
                    && !lines[i].starts_with("@@")
            })
            .collect();
        let rare = rare_edits(&lines, &changed);
        let shown: Vec<&str> = rare.iter().map(|&i| lines[i]).collect();
        assert_eq!(rare.len(), 2, "{shown:?}");
        assert!(shown.contains(&"+    max_line_length = 998"), "{shown:?}");
        assert!(shown.contains(&"-    max_line_length = 78"), "{shown:?}");
    }

    #[test]
    fn an_ordinary_change_has_no_rare_edit() {
        // Every edit differs: none stands out.
        let mut text = String::new();
        for i in 0..30 {
            text.push_str(&format!(
                "-    let v{i} = old_{i}();\n+    let w{i} = new_thing_{i}(arg);\n"
            ));
        }
        let lines: Vec<&str> = text.lines().collect();
        let changed: Vec<usize> = (0..lines.len()).collect();
        assert!(rare_edits(&lines, &changed).is_empty());
    }

    #[test]
    fn the_change_is_what_differs() {
        assert_eq!(change("    x = 78", "    x = 998"), "7 -> 99");
        assert_eq!(change("    \"\"\"Doc.", "    r\"\"\"Doc."), " -> r");
        assert_eq!(shape(" # Copyright 2004-2006 PSF"), "# Copyright 0-0 PSF");
    }
}
