//! Lines that describe or quote rather than report: the help text of a program's options, the
//! strings of a gettext catalogue, a diff's hunks and the source line a compiler echoes above
//! its caret. Their error words (`Enable InnoDB monitor output to the
//! error log.`, `"There seems to be an error with Embedly while trying to embed this URL. "`)
//! say what a program may do or print, not what happened; read one line at a time they look
//! like errors (live set and trial of session 50: `mysqld --verbose --help` read as 82 error
//! lines, two `.pot` files as 6 and 7). So do a change log's entries (a GNU ChangeLog, a git
//! log's messages, a `git shortlog`) and a Markdown document (sessions 51 and 52).

use regex::Regex;
use std::sync::LazyLock;

/// An option as help text lists it, indented: `  -b, --basedir=name  Path to …`,
/// `  --big-tables        Old variable, …`, `  -addr string`. A letter after the dashes, so a
/// wget request line (`--2026-12-07 03:09:21--`) or a diff's `--- a/x` is none.
static OPTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[ \t]{1,8}(?:-[A-Za-z0-9?],?\s+)?--?[A-Za-z][\w.-]*(?:[=\[ ,<]|$)").unwrap()
});

/// Fewest option lines that make a text help text.
const MIN_OPTIONS: usize = 8;

/// Most lines of one option's description after its option line.
const MAX_DESCRIPTION: usize = 20;

/// A line that is one C string and nothing else (`"the image."`): a gettext entry's
/// continuation when it follows one.
static BARE_STRING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^\s*"(?:[^"\\]|\\.)*"\s*$"#).unwrap());

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// The indices of `lines` (each a 1-based line number and its text, in input order; a gap in
/// the numbers is a blank line) that describe: in help text (at least [`MIN_OPTIONS`] option
/// lines), each option line and the lines under it at its indentation or deeper (`mysqld
/// --help` writes a long option's text on the next line, at the option's), up to a blank line or
/// [`MAX_DESCRIPTION`] lines; and every line of a gettext entry's text after its first.
pub fn described(lines: &[(usize, &str)]) -> Vec<usize> {
    let mut out = Vec::new();
    let options: Vec<usize> = (0..lines.len())
        .filter(|&i| OPTION.is_match(lines[i].1))
        .collect();
    if options.len() >= MIN_OPTIONS {
        for &i in &options {
            out.push(i);
            let d = indent(lines[i].1);
            let mut j = i + 1;
            while j < lines.len()
                && j - i <= MAX_DESCRIPTION
                && lines[j].0 == lines[j - 1].0 + 1
                && indent(lines[j].1) >= d
                && !OPTION.is_match(lines[j].1)
            {
                out.push(j);
                j += 1;
            }
        }
    }
    // In an entry's text: its `msgid`/`msgstr` line, then bare strings on the lines after.
    let mut in_text = false;
    for i in 0..lines.len() {
        let follows = i > 0 && lines[i].0 == lines[i - 1].0 + 1;
        if follows && in_text && BARE_STRING.is_match(lines[i].1) {
            out.push(i);
        } else {
            in_text = super::quiet::GETTEXT_ENTRY.is_match(lines[i].1);
        }
    }
    out.extend(hunk_lines(lines));
    out.extend(echoed_source(lines));
    out.extend(change_entries(lines));
    if document(lines) {
        out.extend(0..lines.len());
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// A unified diff's hunk header: `@@ -12,7 +12,7 @@` (a count of 1 may be left out).
static HUNK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@").unwrap());

/// The indices of the lines of unified diff hunks in `lines` (numbered as for [`described`]):
/// each hunk's header, and the context, removed and added lines its counts announce (a gap in
/// the numbers is a blank context line), with the `--- a/x` and `+++ b/x` lines just above a
/// file's first hunk. A removed `-    raise ValueError(e)` or an added `+print('Error: %s' % e)`
/// is the change a tool proposes or made, not an error of the run (trial of session 51:
/// `2to3`'s diffs, after its `RefactoringTool:` lines, read as 5% error lines).
fn hunk_lines(lines: &[(usize, &str)]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(c) = HUNK.captures(lines[i].1) else {
            i += 1;
            continue;
        };
        let count = |k: usize| {
            c.get(k)
                .map_or(1, |m| m.as_str().parse::<usize>().unwrap_or(0))
        };
        let (mut old, mut new) = (count(1), count(2));
        for back in 1..=2 {
            if i >= back
                && lines[i - back].0 + back == lines[i].0
                && (lines[i - back].1.starts_with("--- ") || lines[i - back].1.starts_with("+++ "))
            {
                out.push(i - back);
            }
        }
        out.push(i);
        let mut at = lines[i].0;
        let mut j = i + 1;
        while (old > 0 || new > 0) && j < lines.len() {
            // Blank lines between: context lines whose space was trimmed.
            let blanks = lines[j].0 - at - 1;
            old = old.saturating_sub(blanks);
            new = new.saturating_sub(blanks);
            if old == 0 && new == 0 {
                break;
            }
            let l = lines[j].1;
            match l.as_bytes().first() {
                Some(b' ') => {
                    old = old.saturating_sub(1);
                    new = new.saturating_sub(1);
                }
                Some(b'-') if old > 0 => old -= 1,
                Some(b'+') if new > 0 => new -= 1,
                Some(b'\\') => {}
                _ => break,
            }
            out.push(j);
            at = lines[j].0;
            j += 1;
        }
        i = j.max(i + 1);
    }
    out
}

/// A Markdown heading of level 2 or deeper (`### exit\_on\_error[¶](#exit-on-error …)`).
static HEADING: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^#{2,6} \S").unwrap());

/// A Markdown link or image (`[text](url)`).
static LINK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\]\([^)\s]+").unwrap());

/// Fewest level-2+ headings of a Markdown document ([`document`]).
const MIN_HEADINGS: usize = 5;

/// Fewest Markdown links of a Markdown document ([`document`]).
const MIN_LINKS: usize = 10;

/// True for a Markdown document (a documentation page as an MCP fetch server returns it, a
/// README): at least [`MIN_HEADINGS`] `##` headings and [`MIN_LINKS`] links. It explains what
/// a program does (`it will exit with error info`, an example's `PROG: error: no such option:
/// -2`); none of it is an error of the run that fetched it (trial of session 52: Python's
/// argparse page read as 49 error lines). A shell script's `# comment` lines are no headings.
fn document(lines: &[(usize, &str)]) -> bool {
    lines.iter().filter(|l| HEADING.is_match(l.1)).count() >= MIN_HEADINGS
        && lines
            .iter()
            .map(|l| LINK.find_iter(l.1).count())
            .sum::<usize>()
            >= MIN_LINKS
}

/// A GNU ChangeLog entry's header: `2019-02-25  Arnold D. Robbins  <arnold@skeeve.com>`.
static CHANGELOG_HEAD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d{4}-\d{2}-\d{2}\s+[^<\s][^<]*<[^<>\s]+@[^<>\s]+>\s*$").unwrap()
});

/// A `git shortlog` author line: `David Lord <davidism@gmail.com> (1833):`.
static SHORTLOG_HEAD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\S[^\t]* \(\d+\):$").unwrap());

/// A git log's commit line (`commit 9f1c2e7…`, with `--decorate`'s names after it).
static COMMIT_HEAD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^commit [0-9a-f]{7,40}\b").unwrap());

/// Fewest entry headers that make a text a change log (a GNU ChangeLog or a git log).
const MIN_ENTRIES: usize = 2;

/// The indices of the lines that describe a change in a change log: in a GNU ChangeLog (at
/// least [`MIN_ENTRIES`] `date  name  <email>` headers) or a `git shortlog` (as many `name
/// <email> (count):` lines), each entry's indented lines; in a git log (as many `commit <sha>`
/// lines), a commit's message, its lines indented four spaces after `Date:`. `__attribute((pure)) since it causes failures with gcc -O2`, `return
/// zero in case there was an error opening the file.` say what a change was for, not what
/// this run hit (trial of session 51: a ChangeLog read through MCP had 76 error lines).
fn change_entries(lines: &[(usize, &str)]) -> Vec<usize> {
    let heads = |re: &Regex| lines.iter().filter(|l| re.is_match(l.1)).count() >= MIN_ENTRIES;
    let gnu = heads(&CHANGELOG_HEAD) || heads(&SHORTLOG_HEAD);
    let git = heads(&COMMIT_HEAD);
    if !gnu && !git {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut in_entry = false;
    for (i, &(_, l)) in lines.iter().enumerate() {
        let head = CHANGELOG_HEAD.is_match(l) || SHORTLOG_HEAD.is_match(l);
        if gnu && head || git && l.starts_with("Date:") {
            in_entry = true;
        } else if in_entry && (gnu && l.starts_with(['\t', ' ']) || git && l.starts_with("    ")) {
            out.push(i);
        } else {
            in_entry = false;
        }
    }
    out
}

/// A line that is only a caret and its squiggle (`        ^`, `   ^~~~~`): it points into the
/// line above it.
static CARET: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*\^[~^]*\s*$").unwrap());

/// The indices of source lines a compiler quotes above a caret line (javac's and javadoc's
/// `  private static IllegalArgumentException nullDate() {` then `  ^`, Python's `SyntaxError`
/// echo): the file's code, whose class names and `throws IOException` report nothing (trial of
/// session 51: javadoc's echoes read as error lines). A line that is itself a diagnostic
/// (`a.c:3: error: …`) is left to its own words.
fn echoed_source(lines: &[(usize, &str)]) -> Vec<usize> {
    (1..lines.len())
        .filter(|&j| lines[j].0 == lines[j - 1].0 + 1 && CARET.is_match(lines[j].1))
        .map(|j| j - 1)
        .filter(|&i| {
            !super::DIAGNOSTIC_AFTER.is_match(lines[i].1) && !super::LEVEL.is_match(lines[i].1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(text: &str) -> Vec<(usize, &str)> {
        text.split('\n')
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| (i + 1, l))
            .collect()
    }

    #[test]
    fn option_help_and_its_wrapped_lines() {
        let help = |n: usize| {
            let mut text = String::from("Usage: mysqld [OPTIONS]\n\n");
            for k in 0..n {
                text.push_str(&format!("  --opt{k}=name  Something {k}.\n"));
            }
            text.push_str("  --big-tables        Old variable, allows large result sets\n");
            text.push_str("                      avoiding 'table full' errors.\n");
            text.push_str(
                "  --innodb-status-output\n  Enable InnoDB monitor output to the error log.\n",
            );
            text.push_str("\nERROR: the server failed\n");
            text
        };
        let text = help(6);
        let lines = numbered(&text);
        let d = described(&lines);
        let texts: Vec<&str> = d.iter().map(|&i| lines[i].1.trim()).collect();
        assert!(
            texts.contains(&"avoiding 'table full' errors."),
            "{texts:?}"
        );
        assert!(texts.contains(&"Enable InnoDB monitor output to the error log."));
        assert!(!texts.contains(&"ERROR: the server failed"));
        // Seven options are no help text.
        let fewer = help(5);
        let few = numbered(&fewer);
        assert!(!described(&few)
            .iter()
            .any(|&i| few[i].1.contains("table full")));
    }

    #[test]
    fn gettext_continuations() {
        let text = "msgid \"\"\n\"There seems to be an error with Embedly. \"\n\"Please try again.\"\nmsgstr \"\"\n\n\"an error\"\n";
        let lines = numbered(text);
        assert_eq!(described(&lines), vec![1, 2]);
    }

    #[test]
    fn a_diffs_hunks_are_changes_not_errors() {
        let text = "RefactoringTool: Refactored paste/wsgilib.py\n--- paste/wsgilib.py\t(original)\n+++ paste/wsgilib.py\t(refactored)\n@@ -10,4 +10,4 @@\n try:\n-    except ValueError, e:\n+    except ValueError as e:\n\n     raise\nRefactoringTool: Error: could not parse paste/x.py\n-not a hunk line\n";
        let lines = numbered(text);
        let d: Vec<usize> = described(&lines).iter().map(|&i| lines[i].0).collect();
        assert_eq!(d, vec![2, 3, 4, 5, 6, 7, 9], "{d:?}");
        let sev = |n: usize| super::super::severity(text.split('\n').nth(n - 1).unwrap());
        // What the tool itself says after the hunk is read on its own.
        assert_eq!(sev(10), super::super::Severity::Error);
    }

    #[test]
    fn change_log_entries_describe() {
        let gnu = "2011-08-23  Arnold D. Robbins  <arnold@skeeve.com>\n\n\t* awk.h: Remove __attribute((pure)) since it causes failures\n\twith gcc -O2.\n\n2011-08-10  John Haque  <j.eh@mchsi.com>\n\n\t* io.c: Return zero in case there was an error opening the file.\nmake: *** [all] Error 2\n";
        let lines = numbered(gnu);
        let d: Vec<usize> = described(&lines).iter().map(|&i| lines[i].0).collect();
        assert_eq!(d, vec![3, 4, 8], "{d:?}");
        let git = "commit 1a2b3c4d5e\nAuthor: A <a@x.org>\nDate:   Fri Mar 1 2019\n\n    Fix the build failure on arm\n\n    It failed with an error.\n\ncommit 2b3c4d5e6f\nAuthor: B <b@x.org>\nDate:   Sat Mar 2 2019\n\n    Tidy\nerror: could not read the pack\n";
        let lines = numbered(git);
        let d: Vec<usize> = described(&lines).iter().map(|&i| lines[i].0).collect();
        assert_eq!(d, vec![5, 7, 13], "{d:?}");
        let short = "David Lord <davidism@gmail.com> (1833):\n      show error if multiple Flask instances are detected\n      fix test failure\n\nNeil Grey <neil@x.com> (3):\n      Werkzeug should not block propagated exceptions\n";
        let lines = numbered(short);
        let d: Vec<usize> = described(&lines).iter().map(|&i| lines[i].0).collect();
        assert_eq!(d, vec![2, 3, 6], "{d:?}");
        // One entry is no change log.
        let one = numbered("2011-08-10  John Haque  <j.eh@mchsi.com>\n\tan error opening it\n");
        assert!(described(&one).is_empty());
    }

    #[test]
    fn a_markdown_document_describes() {
        let mut page = String::from("# argparse\n\n");
        for k in 0..5 {
            page.push_str(&format!(
                "### exit\\_on\\_error{k}[¶](#exit-on-error{k} \"Permalink\")\n\nIt will exit with error info; see [a](https://x/{k}) and [b](https://y/{k}).\n\n"
            ));
        }
        let lines = numbered(&page);
        assert_eq!(described(&lines).len(), lines.len());
        // Three headings are no document.
        let fewer = page.replacen("### ", "", 2);
        let few = numbered(&fewer);
        assert!(!described(&few)
            .iter()
            .any(|&i| few[i].1.contains("error info")));
    }

    #[test]
    fn the_source_line_above_a_caret_is_quoted_code() {
        let text = "Foo.java:200: warning: no comment\n  private static IllegalArgumentException bad() {\n                                          ^\nFoo.java:210: error: malformed HTML\n  ^\n";
        let lines = numbered(text);
        let d: Vec<usize> = described(&lines).iter().map(|&i| lines[i].0).collect();
        assert_eq!(d, vec![2], "the diagnostic above a caret stays: {d:?}");
    }
}
