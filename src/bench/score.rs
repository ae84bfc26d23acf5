//! Scores of one returned text against its input: recall of the manifest's `must_keep`
//! strings, and facts quoted in the text that the input does not contain ("invented").
//!
//! Both compare with whitespace runs collapsed to one space on both sides. The fact extractor is
//! written here on purpose rather than reusing `guard::ground`: the benchmark should not grade
//! the pipeline with the pipeline's own checker.

use std::sync::LazyLock;

use regex::Regex;

/// A terminal's CSI escape sequence (`ESC [ 1;33 m`: colour, erase line): markup, not content.
static CSI: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\x1b\[[0-?]*[ -/]*[@-~]").unwrap());

/// Collapses every run of whitespace to one space and trims the ends, with terminal escape
/// sequences ([`CSI`]) removed first: `grep --color` writes `src/a.rs<ESC>[m<ESC>[K:12`, which a
/// summary quotes as `src/a.rs:12` (the text a reader sees), and a `must_keep` string written
/// between two escapes stays whole.
pub fn collapse(s: &str) -> String {
    let s = if s.contains('\x1b') {
        CSI.replace_all(s, "")
    } else {
        std::borrow::Cow::Borrowed(s)
    };
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How many of `must_keep` occur verbatim (whitespace collapsed) in `text`, and which are
/// missing.
pub fn recall(text: &str, must_keep: &[String]) -> (usize, Vec<String>) {
    let hay = collapse(text);
    let mut kept = 0;
    let mut missing = Vec::new();
    for m in must_keep {
        if hay.contains(&collapse(m)) {
            kept += 1;
        } else {
            missing.push(m.clone());
        }
    }
    (kept, missing)
}

static URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"https?://[^\s)\]>"'`]+"#).unwrap());
static FILE_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\w./-]*\w\.\w+:\d+(?::\d+)?").unwrap());
static PATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:~|\.{1,2})?/?[\w.@+-]+(?:/[\w.@+-]+)+/?").unwrap());
static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d(?:[\d,._:]*\d)?").unwrap());
static DOUBLE_QUOTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""([^"\n]+)""#).unwrap());
static BACKTICKED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`\n]+)`").unwrap());
static SINGLE_QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[\s(\[{:=,])'([^'\n]{2,})'(?:$|[\s)\]},.;:!?])").unwrap());
/// Line references into the saved file (`L794`, `L12-L40`, `L5-9`) and repeat counts (`×539`):
/// locations, not facts quoted from the input.
static LINE_REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bL\d+(?:[-–]L?\d+)?\b|×\d+").unwrap());
/// Lines that describe the cut rather than the input: the saved-file pointer and its hint, the
/// unsaved-result note, the preview's "too large" header, an omission marker, and the summary's
/// "shown: N of M lines" count.
static CUT_METADATA: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)^\s*(?:[-*]\s*)?(?:
            Full\ response\ saved\ to:
          | Use\ Read\ (?:\(with\ offset/limit\)\ or\ Grep\ )?on\ that\ file
          | The\ full\ response\ could\ not\ be\ saved
          | \[Output\ too\ large\ to\ summarize
          | \[\.\.\.\ .*\ omitted\ \.\.\.\]
          | shown:\ [\d,]+\ of\ [\d,]+\ lines
        )",
    )
    .unwrap()
});

/// The checkable facts quoted in `text` (cut-metadata lines and line references excluded): URLs,
/// `file:line`, paths, numbers of 3+ digits, and double-quoted, single-quoted or backticked
/// strings. Each is returned once, in order of appearance.
pub fn facts(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim_end_matches(['.', ',', ';', ':', ')']).trim();
        // A reference to a file toolsum saved points at the saved copy, like the pointer line.
        if !s.is_empty() && !s.contains("long_responses/") && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for line in text.lines().filter(|l| !CUT_METADATA.is_match(l)) {
        // Each kind of fact is blanked out of `rest` once taken, so a number inside a path or
        // a quoted string is not counted a second time.
        let mut rest = line.to_string();
        // Blanks a byte range of `rest` with spaces (same length, so later ranges stay put).
        fn blank(rest: &mut String, r: std::ops::Range<usize>) {
            let spaces = " ".repeat(rest[r.clone()].len());
            rest.replace_range(r, &spaces);
        }
        // Quoted strings first, as the line has them (a URL inside one is part of it), each
        // blanked where it stands once taken. A quote is read from the line itself, not from
        // `rest`: a backticked span holding a double-quoted string taken before
        // (`` `"" "a" ""` ``) is the line's text, not the blanks left in its place.
        for re in [&*DOUBLE_QUOTED, &*BACKTICKED, &*SINGLE_QUOTED] {
            let caps: Vec<(std::ops::Range<usize>, String)> = re
                .captures_iter(&rest)
                .filter_map(|c| Some((c.get(0)?.range(), line[c.get(1)?.range()].to_string())))
                .collect();
            for (r, q) in caps {
                if !q.trim().is_empty() {
                    push(&q);
                }
                blank(&mut rest, r);
            }
        }
        let urls: Vec<(std::ops::Range<usize>, String)> = URL
            .find_iter(&rest)
            .map(|m| (m.range(), m.as_str().to_string()))
            .collect();
        for (r, u) in urls {
            push(&u);
            blank(&mut rest, r);
        }
        let file_lines: Vec<String> = FILE_LINE
            .find_iter(&rest)
            .map(|m| m.as_str().to_string())
            .collect();
        for m in &file_lines {
            push(m);
            rest = rest.replace(m.as_str(), " ");
        }
        let paths: Vec<String> = PATH
            .find_iter(&rest)
            .map(|m| m.as_str().to_string())
            .collect();
        for p in &paths {
            // A bare "a/b" is often prose ("and/or", "pass/fail"): require a path-like shape.
            let path_like = p.starts_with('/')
                || p.starts_with("~/")
                || p.starts_with("./")
                || p.starts_with("../")
                || p.matches('/').count() >= 2
                || p.rsplit('/').next().is_some_and(|last| {
                    last.contains('.') && !last.ends_with('.') && !last.starts_with('.')
                });
            if path_like && p.len() >= 3 {
                push(p);
                rest = rest.replace(p.as_str(), " ");
            }
        }
        let rest = LINE_REF.replace_all(&rest, " ");
        for m in NUMBER.find_iter(&rest) {
            if m.as_str().chars().filter(char::is_ascii_digit).count() >= 3 {
                push(m.as_str());
            }
        }
    }
    out
}

/// Facts of `text` ([`facts`]) that occur nowhere in `collapsed_input` (the input after
/// [`collapse`]). A number with thousands separators also counts as present when its digits
/// without the commas are; a number equal to one of `sizes` (the input's own byte and line
/// counts, which a summary may state) is not invented either.
pub fn invented(text: &str, collapsed_input: &str, sizes: &[u64]) -> Vec<String> {
    facts(text)
        .into_iter()
        .filter(|f| {
            let c = collapse(f);
            if collapsed_input.contains(&c) {
                return false;
            }
            let plain: String = c.chars().filter(|&ch| ch != ',').collect();
            if plain.parse::<u64>().is_ok_and(|n| sizes.contains(&n)) {
                return false;
            }
            !(plain != c
                && plain.chars().all(|ch| ch.is_ascii_digit() || ch == '.')
                && collapsed_input.contains(&plain))
        })
        .collect()
}

/// The `q` quantile (0..=1) of `values` by the nearest-rank method; 0 for no values.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = (q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn recall_collapses_whitespace_both_sides() {
        let mk = s(&["a  b", "c\td", "\"x\": 1", "missing"]);
        let (kept, missing) = recall("foo a b\nc   d \"x\":\n1", &mk);
        assert_eq!(kept, 3);
        assert_eq!(missing, s(&["missing"]));
        assert_eq!(recall("", &[]).0, 0);
    }

    #[test]
    fn terminal_escapes_are_not_content() {
        let raw = "\x1b[35m\x1b[Ksrc/a.rs\x1b[m\x1b[K\x1b[36m\x1b[K:\x1b[m\x1b[K12: let x = 1;";
        // The summary shows the line as a reader sees it: nothing invented.
        assert!(invented("L1: src/a.rs:12: let x = 1;", &collapse(raw), &[]).is_empty());
        // A must_keep string copied between two escapes is still found.
        assert_eq!(recall(&collapse(raw), &s(&["let x = 1;"])).0, 1);
        assert_eq!(collapse("a\x1b[1;33mb"), "ab");
    }

    #[test]
    fn facts_finds_paths_numbers_quotes_urls() {
        let f = facts(
            "Error in src/main.rs:42 see https://x.io/a?b=1. Value \"foo bar\" and `baz` at \
             /var/log/syslog; took 1,234 ms, code 12, 'quoted one'.",
        );
        for want in [
            "https://x.io/a?b=1",
            "src/main.rs:42",
            "foo bar",
            "baz",
            "/var/log/syslog",
            "1,234",
            "quoted one",
        ] {
            assert!(f.iter().any(|x| x == want), "{want} not in {f:?}");
        }
        assert!(!f.iter().any(|x| x == "12"), "{f:?}");
        assert!(facts("pass/fail and/or").is_empty());
    }

    #[test]
    fn cut_metadata_lines_are_not_facts() {
        let t = "Status: ok\n- shown: 12 of 2,000 lines quoted below; 1,988 lines omitted\n\
                 [... 1,234 lines (99,999 bytes) omitted ...]\n\
                 [Output too large to summarize (at least 150,918 tokens); showing its first and last 2,000 characters.]\n\
                 `[image/png 846x1006, 53,949 bytes, saved to long_responses/x.png]`\n\n\
                 Full response saved to: long_responses/20250101T120000.123_Bash.txt (1.0 KB, 1,024 bytes)\n\
                 Use Read (with offset/limit) or Grep on that file for anything not shown here.";
        assert!(facts(t).is_empty(), "{:?}", facts(t));
    }

    #[test]
    fn a_quote_inside_a_backticked_span_is_no_invented_blank() {
        // The double-quoted strings are taken first; the backticked span around them is
        // still the line's own text, which the input holds.
        let raw = "args: `\"\" \"-v\" \"\"` end";
        assert!(
            invented(raw, &collapse(raw), &[]).is_empty(),
            "{:?}",
            facts(raw)
        );
    }

    #[test]
    fn invented_checks_against_collapsed_input() {
        let input = collapse("GET /api/v1/users  returned\n status 404 after 12345 ms");
        let inv = invented(
            "GET /api/v1/users gave 404 after 12,345 ms; retried /api/v2/x 500 times; \
             L794: [×539 lines like it, last L2000] 2,000 lines, 169,195 bytes, 777 errors",
            &input,
            &[169_195, 2_000],
        );
        assert_eq!(inv, s(&["/api/v2/x", "500", "777"]));
    }

    #[test]
    fn percentiles_nearest_rank() {
        let v = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&v, 0.5), 3.0);
        assert_eq!(percentile(&v, 0.95), 5.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
