//! Ancestry: the lines that open the indented blocks a line sits in, as words to score it by.
//!
//! In YAML, indented stanzas (`show interfaces`, `systemctl status`), pretty-printed markup and
//! any indented listing, a line says little on its own: `Threshold: 5` is the threshold of the
//! alarm named three lines above (`ConsoleSigninWithoutMfaAlarm:` / `Properties:`), and
//! `operationId: articles_image_create` belongs to the path `/articles/{slug}/image/:` that
//! opens its block. A question names the block ("the console sign-in alarm"), not the line.
//! Each line's openers, nearest first, are added to the words relevance scores it by
//! ([`super::Unit::score_text`]); the line is still shown as the file writes it. Nothing here
//! knows a format: an opener is a line above with less indentation.

use crate::guard::reduce::{clip_str, indent};

/// Most openers (levels up) whose words a line is scored with.
const MAX_DEPTH: usize = 3;
/// Bytes of an opener's text used: a key or a title, not a paragraph.
const OPENER_BYTES: usize = 60;

/// The openers of every line of a text, found in one pass (an indentation stack): 4 bytes a
/// line, the words built only for the lines asked about ([`Openers::of`]).
pub struct Openers<'a> {
    lines: Vec<&'a str>,
    /// Nearest opener of each 0-based line, as its 0-based index; `u32::MAX` for none.
    near: Vec<u32>,
}

impl<'a> Openers<'a> {
    /// Finds the nearest opener of each line of `text` (split on `\n`, as line anchors count
    /// them): the closest line above with less indentation. Blank lines open nothing and close
    /// nothing.
    pub fn new(text: &'a str) -> Self {
        let lines: Vec<&str> = text.split('\n').collect();
        let mut near = vec![u32::MAX; lines.len()];
        let mut stack: Vec<(usize, u32)> = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let d = indent(line);
            while stack.last().is_some_and(|&(sd, _)| sd >= d) {
                stack.pop();
            }
            if let Some(&(_, p)) = stack.last() {
                near[i] = p;
            }
            stack.push((d, u32::try_from(i).unwrap_or(u32::MAX)));
        }
        Openers { lines, near }
    }

    /// The words of 0-based line `i`'s openers: the texts (trimmed, a YAML list item's `- `
    /// dropped, cut to [`OPENER_BYTES`]) of up to [`MAX_DEPTH`] enclosing lines, nearest
    /// first, separated by spaces; empty for a line in no block or out of range.
    pub fn of(&self, i: usize) -> String {
        let mut out = String::new();
        let mut p = self.near.get(i).copied().unwrap_or(u32::MAX);
        let mut depth = 0;
        while p != u32::MAX && depth < MAX_DEPTH {
            let t = self.lines[p as usize].trim();
            let t = t.strip_prefix("- ").unwrap_or(t);
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(clip_str(t, OPENER_BYTES));
            p = self.near[p as usize];
            depth += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_yaml_value_is_scored_with_the_keys_above_it() {
        let yaml = "Resources:\n  ConsoleSigninAlarm:\n    Properties:\n      Threshold: 5\n\
                    \n  Other:\n    Threshold: 1\n";
        let o = Openers::new(yaml);
        let o: Vec<String> = (0..8).map(|i| o.of(i)).collect();
        assert_eq!(o[3], "Properties: ConsoleSigninAlarm: Resources:");
        assert_eq!(o[6], "Other: Resources:");
        assert_eq!(o[0], "", "the top level has no opener");
        assert_eq!(o[4], "", "a blank line has none");
    }

    #[test]
    fn a_stanza_line_is_scored_with_its_stanza_header_and_list_dashes_are_dropped() {
        let text = "Gi0/1 is up, line protocol is down\n  5 input errors, 2 CRC\n\
                    items:\n  - name: web\n    port: 80\n";
        let o = Openers::new(text);
        let o: Vec<String> = (0..6).map(|i| o.of(i)).collect();
        assert_eq!(o[1], "Gi0/1 is up, line protocol is down");
        assert_eq!(o[4], "name: web items:");
    }

    #[test]
    fn openers_are_cut_and_at_most_three_levels_up() {
        let long = "x".repeat(200);
        let text = format!("{long}\n a\n  b\n   c\n    d\n");
        let o = Openers::new(&text);
        assert_eq!(o.of(4), "c b a");
        assert_eq!(o.of(1).len(), OPENER_BYTES);
        assert_eq!(Openers::new("").of(0), "");
        assert_eq!(Openers::new("x").of(7), "", "a line out of range has none");
        assert_eq!(Openers::new("é\n  ü\n").of(1), "é");
    }
}
