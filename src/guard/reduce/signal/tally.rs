//! Lines a tally of errors counts: a checker that writes its findings without a level word
//! (`django.po:432: ...but some messages have 3 plural forms`) and then how many errors they
//! were (`msgfmt: found 1 fatal error`, cpplint's `Total errors found: 42`, jshint's `3
//! errors`, clang's `2 errors generated.`). The tally is the only line with an error word; the
//! findings above it are the errors it counts, and they say what failed.

use super::Severity;
use regex::Regex;
use std::sync::LazyLock;

/// A line that counts errors, the count captured (`found 6 fatal errors`, `Total errors
/// found: 42`, `3 errors`, `2 errors generated.`, `✖ 12 problems`, `Found 5 errors in 2
/// files`). A line that only counts, so a finding that names a count (`expected 2 errors`)
/// is none.
static TALLY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(?:^|:\s)found\s+(\d+)\s+(?:fatal\s+)?errors?\b",
        r"|^\s*total errors found:?\s*(\d+)",
        r"|^\s*(?:✖\s*)?(\d+)\s+(?:fatal\s+)?(?:errors?|problems?)(?:\s+generated|\s+found|\s+in\s+\d+\s+files?|\s*\(|,|\.|$)",
    ))
    .unwrap()
});

/// A finding's location at the start of its line: `path:LINE:` (`./a/b.po:432: ...`,
/// `src/x.cc:12:  Missing space`), or jshint's `a.js: line 3, col 5,`.
static LOCATED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[^\s:]+:(?:\d+(?::\d+)?:\s|\s*line \d+,)").unwrap());

/// Most lines above one tally read as what it counts: a tally counts the findings of one
/// file or one run, and a run's hundreds of findings are one template either way.
pub const MAX_COUNTED: usize = 50;

/// The count a tally line reports (`msgfmt: found 6 fatal errors` -> 6), if it is one.
pub fn tally(line: &str) -> Option<usize> {
    let c = TALLY.captures(crate::guard::reduce::clip_str(line, 200))?;
    (1..=3)
        .find_map(|k| c.get(k))
        .and_then(|m| m.as_str().parse().ok())
}

/// Indices of the lines a tally of errors counts: for each error line that is a tally of one
/// or more, the located lines right above it (no blank between, at most [`MAX_COUNTED`]) that
/// have no severity of their own. A located line with a level (`a.c:3: warning: …`) ends the
/// run: its level is its own. `lines` and `sevs` are parallel (0-based).
pub fn counted_by_tally(lines: &[&str], sevs: &[Severity]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if sevs[i] != Severity::Error || tally(l).is_none_or(|n| n == 0) {
            continue;
        }
        for j in (i.saturating_sub(MAX_COUNTED)..i).rev() {
            if sevs[j] != Severity::None || !LOCATED.is_match(lines[j]) {
                break;
            }
            out.push(j);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sev(l: &str) -> Severity {
        super::super::severity(l)
    }

    #[test]
    fn a_tally_reads_its_count() {
        assert_eq!(tally("msgfmt: found 6 fatal errors"), Some(6));
        assert_eq!(tally("msgfmt: found 1 fatal error"), Some(1));
        assert_eq!(tally("Total errors found: 42"), Some(42));
        assert_eq!(tally("3 errors"), Some(3));
        assert_eq!(tally("2 errors generated."), Some(2));
        assert_eq!(tally("✖ 12 problems (10 errors, 2 warnings)"), Some(12));
        assert_eq!(
            tally("Found 5 errors in 2 files (checked 9 source files)"),
            Some(5)
        );
        assert_eq!(tally("a.py:3: expected 2 errors, got 1"), None);
        assert_eq!(tally("error: found a cycle"), None);
        assert_eq!(tally("error: found 2 conflicting versions of serde"), None);
    }

    #[test]
    fn the_findings_above_a_tally_are_its_errors() {
        let lines = [
            "./conf/locale/es/LC_MESSAGES/django.po: 348 translated messages.",
            "./conf/locale/fr/LC_MESSAGES/django.po:13: nplurals = 2...",
            "./conf/locale/fr/LC_MESSAGES/django.po:432: ...but some messages have 3 plural forms",
            "msgfmt: found 1 fatal error",
            "./conf/locale/fr/LC_MESSAGES/django.po: 348 translated messages.",
        ];
        let sevs: Vec<Severity> = lines.iter().map(|l| sev(l)).collect();
        assert_eq!(sevs[3], Severity::Error);
        assert_eq!(counted_by_tally(&lines, &sevs), [1, 2]);
    }

    #[test]
    fn no_tally_or_a_zero_one_counts_nothing() {
        let lines = [
            "src/a.cc:3:  Missing space before {",
            "Total errors found: 0",
        ];
        let sevs: Vec<Severity> = lines.iter().map(|l| sev(l)).collect();
        assert!(counted_by_tally(&lines, &sevs).is_empty());
        let lines = [
            "src/a.cc:3:  Missing space before {",
            "Done processing src/a.cc",
        ];
        let sevs: Vec<Severity> = lines.iter().map(|l| sev(l)).collect();
        assert!(counted_by_tally(&lines, &sevs).is_empty());
    }

    #[test]
    fn a_leveled_finding_or_a_blank_line_ends_what_a_tally_counts() {
        let lines = [
            "a.c:1:5: note: in expansion of macro",
            "a.js: line 3, col 5, Missing semicolon.",
            "",
            "a.js: line 9, col 1, Unused variable.",
            "b.js: line 2, col 7, Bad escaping.",
            "2 errors",
        ];
        let sevs: Vec<Severity> = lines.iter().map(|l| sev(l)).collect();
        assert_eq!(counted_by_tally(&lines, &sevs), [3, 4]);
    }
}
