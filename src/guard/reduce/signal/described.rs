//! Lines that describe rather than report: the help text of a program's options and the
//! strings of a gettext catalogue. Their error words (`Enable InnoDB monitor output to the
//! error log.`, `"There seems to be an error with Embedly while trying to embed this URL. "`)
//! say what a program may do or print, not what happened; read one line at a time they look
//! like errors (live set and trial of session 50: `mysqld --verbose --help` read as 82 error
//! lines, two `.pot` files as 6 and 7).

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
            in_text = super::GETTEXT_ENTRY.is_match(lines[i].1);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
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
}
