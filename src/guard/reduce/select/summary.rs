//! Summary blocks: the few lines of counts a tool prints under a title that says it sums up
//! (`=== gas Summary ===` then `# of expected passes 1660`, `Test Summary:` then `Passed: 12`,
//! `PLAY RECAP ***` then one `ok=3 failed=0` line per host). A run of several test suites
//! prints one block per suite; each block is the answer to "did any fail" for its suite, and
//! its lines are one template, so the template round-robin would show one line of the first.
//!
//! Nothing here knows a tool: a title is a short line, a banner ([`super::headers::is_banner`]),
//! a label ending in `:` or a heading underlined by a rule on the next line (rkhunter's `System
//! checks summary` over `=====`), holding a word that says it sums up ([`SUMMARY_WORDS`]); a
//! log's time stamp before it is no part of it. Its block is the lines under it up to a blank
//! line or the next banner (under an underlined heading, up to the next title, banner or
//! heading: its parts may stand apart), at most [`MAX_BLOCK_LINES`], most of them holding a
//! number. Each block line is proposed to the facts channel, above the mined facts, in file
//! order.

use super::{Cand, Channel};
use crate::guard::reduce::{show_line_max, Item, Section};

/// Words of a title that says the block under it sums up (compared lowercase, whole words).
const SUMMARY_WORDS: &[&str] = &[
    "summary",
    "results",
    "totals",
    "total",
    "recap",
    "statistics",
    "stats",
];
/// Most lines of one block; a longer run under a title is a listing, not a summary.
const MAX_BLOCK_LINES: usize = 12;
/// Longest title line, in bytes.
const MAX_TITLE_BYTES: usize = 80;
/// Most blocks proposed: the last ones (a run's summaries close each part, the overall last).
const MAX_BLOCKS: usize = 4;
/// Longest block line shown, in bytes.
const MAX_LINE_BYTES: usize = 160;
/// Score of a block line in its channel: above mined facts (at most 1).
const SCORE: f64 = 1.2;
/// Less score for a block line with no figure of its own (a time stamp's are not).
const UNCOUNTED_LESS: f64 = 0.1;

/// `line` without a log's time stamp before it (`[12:07:56] Suspect files: 1` → `Suspect
/// files: 1`), trimmed.
fn unstamped(line: &str) -> &str {
    let t = line.trim();
    match t.split_once(char::is_whitespace) {
        Some((w, rest)) if super::propose::is_stamp(w) => rest.trim(),
        None if super::propose::is_stamp(t) => "",
        _ => t,
    }
}

/// True for a rule of one mark, `=` or `-`, at least 3 long: a heading's underline.
fn is_rule(line: &str) -> bool {
    let t = unstamped(line);
    t.len() >= 3 && (t.bytes().all(|b| b == b'=') || t.bytes().all(|b| b == b'-'))
}

/// True for a short line of words that holds a word that sums up.
fn sums_up(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= MAX_TITLE_BYTES
        && t.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| SUMMARY_WORDS.contains(&w.to_ascii_lowercase().as_str()))
}

/// True for a line that titles a summary block.
fn is_title(line: &str) -> bool {
    let t = unstamped(line);
    if !sums_up(t) {
        return false;
    }
    let label = t.ends_with(':') && t.split_whitespace().count() <= 5;
    label || super::headers::is_banner(t) || trailing_rule(t)
}

/// True for a heading that sums up, underlined by the next line ([`is_rule`]).
fn is_underlined_title(line: &str, next: Option<&&str>) -> bool {
    let t = unstamped(line);
    next.is_some_and(|n| is_rule(n))
        && sums_up(t)
        && !is_rule(line)
        && t.split_whitespace().count() <= 6
}

/// A title followed by a rule of one mark (`PLAY RECAP *********`).
fn trailing_rule(t: &str) -> bool {
    let Some(c) = t.chars().last().filter(|c| "=-*#~".contains(*c)) else {
        return false;
    };
    t.chars().rev().take_while(|x| *x == c).count() >= 3
        && t.chars().next().is_some_and(|x| x.is_ascii_alphabetic())
}

/// The block lines of `text`'s summary blocks (1-based line, text), the last [`MAX_BLOCKS`]
/// blocks in file order.
fn blocks(text: &str) -> Vec<Vec<(usize, &str)>> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<Vec<(usize, &str)>> = Vec::new();
    let mut i = 0;
    // A levelled log's blank line is its prefix alone (`2022-…Z [INFO] `).
    let blank = |l: &str| {
        l.trim().is_empty() || super::propose::level_only(&show_line_max(l, MAX_LINE_BYTES))
    };
    while i < lines.len() {
        let underlined = is_underlined_title(lines[i], lines.get(i + 1));
        if !underlined && !is_title(lines[i]) {
            i += 1;
            continue;
        }
        let mut block = Vec::new();
        let mut j = i + 1 + usize::from(underlined);
        // One blank line may stand between a banner and its block.
        if j < lines.len() && blank(lines[j]) {
            j += 1;
        }
        // Under an underlined heading, where the last part that fits whole ends.
        let mut whole = 0;
        while j < lines.len() {
            let l = lines[j];
            let next_heading = is_underlined_title(l, lines.get(j + 1))
                || lines.get(j + 1).is_some_and(|n| is_rule(n) && !blank(l));
            if super::headers::is_banner(l) || is_title(l) || underlined && next_heading {
                break;
            }
            if blank(l) {
                if !underlined {
                    break;
                }
                whole = block.len();
                j += 1;
                continue;
            }
            block.push((j + 1, l.trim_end_matches('\r')));
            j += 1;
            if block.len() > MAX_BLOCK_LINES {
                break;
            }
        }
        if underlined && block.len() > MAX_BLOCK_LINES {
            block.truncate(whole);
        }
        let numbered = block
            .iter()
            .filter(|(_, l)| l.bytes().any(|b| b.is_ascii_digit()))
            .count();
        if !block.is_empty() && block.len() <= MAX_BLOCK_LINES && numbered * 2 > block.len() {
            out.push(block);
        }
        i = j.max(i + 1);
    }
    let skip = out.len().saturating_sub(MAX_BLOCKS);
    out.into_iter().skip(skip).collect()
}

/// Candidates of [`Channel::Facts`]: every line of the last [`MAX_BLOCKS`] summary blocks of
/// `text`, anchored at its line, in file order (the title comes with them as their block's
/// header, [`super::Headers`]).
pub fn summary_blocks(text: &str) -> Vec<Cand> {
    blocks(text)
        .into_iter()
        .flatten()
        .map(|(n, l)| {
            let shown = show_line_max(l, MAX_LINE_BYTES);
            // A line with no figure of its own (a part's title, `Rootkit checks...`) waits
            // for the block's counts when the channel's share runs short.
            let score = if unstamped(l).bytes().any(|b| b.is_ascii_digit()) {
                SCORE
            } else {
                SCORE - UNCOUNTED_LESS
            };
            Cand {
                item: Item::line(Section::Evidence, n, shown, score),
                channel: Channel::Facts,
                score,
                group: None,
                rel: 0.5,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_suites_summary_block_is_proposed_whole() {
        let mut text = String::new();
        for (suite, passes) in [("binutils", 310), ("gas", 1660), ("ld", 2867)] {
            text.push_str(&format!("\t\t=== {suite} tests ===\n"));
            for i in 0..50 {
                text.push_str(&format!("PASS: {suite} test {i}\n"));
            }
            text.push_str(&format!(
                "\n\t\t=== {suite} Summary ===\n\n# of expected passes\t\t{passes}\n\
                 # of unsupported tests\t\t2\n{suite}-new 2.40\n\n"
            ));
        }
        let c = summary_blocks(&text);
        let shown: Vec<&str> = c.iter().map(|c| c.item.text.as_str()).collect();
        for p in [310, 1660, 2867] {
            assert!(
                shown.contains(&format!("# of expected passes\t\t{p}").as_str()),
                "{shown:?}"
            );
        }
        assert_eq!(shown.len(), 9, "{shown:?}");
        assert!(c
            .iter()
            .all(|c| c.channel == Channel::Facts && c.group.is_none()));
        // In file order.
        let lines: Vec<usize> = c.iter().filter_map(|c| c.item.line).collect();
        assert!(lines.windows(2).all(|w| w[0] < w[1]), "{lines:?}");
    }

    /// In a levelled log a blank line is its prefix alone (`2022-…Z [INFO] `): it ends the
    /// block like an empty line, and is no line of it.
    #[test]
    fn a_levelled_logs_blank_line_ends_a_block() {
        let ts = "2022-03-15T21:06:51.6285276Z";
        let text = format!(
            "{ts} [INFO] Results:\n{ts} [INFO] \n{ts} [INFO] Tests run: 6, Failures: 0, Errors: 0, Skipped: 0\n\
             {ts} [INFO] \n{ts} [INFO] \n{ts} [INFO] --- maven-jar-plugin:3.2.2:jar (default-jar) @ gwt ---\n"
        );
        let shown: Vec<String> = summary_blocks(&text)
            .into_iter()
            .map(|c| c.item.text)
            .collect();
        assert_eq!(
            shown,
            ["[INFO] Tests run: 6, Failures: 0, Errors: 0, Skipped: 0"]
        );
        assert!(super::super::propose::level_only("[INFO]"));
        assert!(super::super::propose::level_only("WARNING:"));
        assert!(!super::super::propose::level_only("[INFO] BUILD"));
        // Whatever level it writes, and stamped or not: a blank line of the log.
        assert!(super::super::propose::level_only("[ERROR]"));
        assert!(super::super::propose::level_only(
            "[×6 lines like it, last L1990] [ERROR]"
        ));
        assert!(super::super::propose::level_only(
            "2022-03-15T21:06:07.8974672Z"
        ));
        assert!(super::super::propose::level_only("[12:00:01.250] WARN:"));
        assert!(super::super::propose::level_only(
            "[INFO] -------------------"
        ));
        assert!(!super::super::propose::level_only("[ERROR] x"));
        assert!(!super::super::propose::level_only("-------------------"));
        // Numbers, versions and addresses are content, not stamps.
        for t in [
            "1024",
            "3.10.1",
            "192.168.1.10",
            "10.0.0.1:80",
            "2024-01-02 failed",
        ] {
            assert!(!super::super::propose::level_only(t), "{t}");
        }
    }

    #[test]
    fn titles_say_they_sum_up_and_blocks_are_short_runs_of_counts() {
        assert!(is_title("=== gcc Summary ==="));
        assert!(is_title("Test Summary:"));
        assert!(is_title("PLAY RECAP *********************"));
        assert!(!is_title("=== RUN TestSummary"));
        assert!(!is_title(
            "Summary of the changes made to the parser in this release:"
        ));
        assert!(!is_title("total 48"));
        // Prose under a title is no block of counts.
        assert!(summary_blocks("Results:\nthe run went well\nnothing to add\n").is_empty());
        // A long listing under a title is no summary.
        let long: String = (0..40).map(|i| format!("row {i}\n")).collect();
        assert!(summary_blocks(&format!("Results:\n{long}")).is_empty());
        assert_eq!(summary_blocks("Results:\npassed 3\nfailed 1\n").len(), 2);
    }

    /// rkhunter's closing block (live set of session 52): a heading underlined by a rule, its
    /// parts apart by blank lines, every line after a time stamp.
    #[test]
    fn an_underlined_heading_titles_its_parts_and_counts_come_first() {
        let text = "[12:07:55]   Checking for hidden files   [ Warning ]\n\
                    [12:07:56]\n[12:07:56] System checks summary\n[12:07:56] =====================\n\
                    [12:07:56]\n[12:07:56] File properties checks...\n[12:07:56] Files checked: 124\n\
                    [12:07:56] Suspect files: 1\n[12:07:56]\n[12:07:56] Rootkit checks...\n\
                    [12:07:56] Rootkits checked : 496\n[12:07:57] Possible rootkits: 0\n\
                    [12:07:57]\n[12:07:57] The system checks took: 9 minutes and 47 seconds\n";
        let c = summary_blocks(text);
        let shown: Vec<&str> = c.iter().map(|c| c.item.text.as_str()).collect();
        for want in [
            "Suspect files: 1",
            "Possible rootkits: 0",
            "Rootkits checked : 496",
        ] {
            assert!(shown.iter().any(|s| s.ends_with(want)), "{want}: {shown:?}");
        }
        assert!(!shown.iter().any(|s| s.contains("=====")), "{shown:?}");
        // A part's title holds no figure of its own: it ranks below the counts.
        let score = |w: &str| c.iter().find(|c| c.item.text.ends_with(w)).unwrap().score;
        assert!(score("Rootkit checks...") < score("Possible rootkits: 0"));
        // A heading underlined by a rule that does not sum up titles nothing.
        assert!(
            summary_blocks("Installed files\n===============\nfiles: 3\nbytes: 9\n").is_empty()
        );
    }
}
