//! The lines of a summary that frame its excerpts: the "shown" fact (lines quoted, bytes
//! omitted) and where the next action points.

use super::{reduce, Item, Section, MUST};
use std::collections::HashSet;

/// The "shown" fact: the lines quoted of all the lines, and the bytes omitted (a single 5 MB
/// line is one line, so lines alone would say nothing was left out). The total size is the
/// kind fact's, and the pointer says the rest is in the saved file: each is said once, as
/// each digit is a token (session 18: dev recall +1).
///
/// The bytes are the saved file's (`bytes`, the output as received): the text's omitted share
/// of them, so a decoded or cleaned text (Latin-1 grows when decoded, ANSI escapes shrink)
/// never says more was omitted than was received.
pub(super) fn shown_fact(text: &str, bytes: usize, packed: &[Item]) -> Item {
    let total_lines = text.lines().count();
    let shown = excerpt_lines(packed);
    let shown_bytes: usize = packed
        .iter()
        .filter(|i| i.section != Section::KeyFacts && i.line.is_some())
        .map(|i| i.text.len())
        .sum::<usize>()
        .min(text.len());
    Item::fact(
        usize::MAX,
        format!(
            "shown: {} of {} lines quoted below; about {} bytes omitted",
            reduce::fmt_num(shown.len()),
            reduce::fmt_num(total_lines),
            reduce::fmt_num(omitted_bytes(text.len(), shown_bytes, bytes)),
        ),
        MUST,
    )
}

/// How the text reducer's next action ends when it points at the best BM25 window
/// ([`reduce::text`]): a guess that the signals' answer can replace.
pub(super) const BEST_MATCH_ACTION: &str = "(best match for the intent).";

/// How the text reducer's next action ends when it points at the last error line
/// ([`reduce::text`]): right for a question about what failed, a guess for any other.
pub(super) const LAST_ERROR_ACTION: &str = "(around the last error line).";

/// How the text reducer's next action ends when nothing matched the intent: a guess too.
pub(super) const LAST_LINES_ACTION: &str = "or search it for what you need.";

/// Least relevance (0..=1) of a shown excerpt for the next action to point at it.
const MIN_NEXT_REL: f64 = 0.5;

/// The lines of the excerpts shown (Evidence and Errors): counted in the Key facts, and where
/// the next action may point.
fn excerpt_lines(packed: &[Item]) -> HashSet<usize> {
    packed
        .iter()
        .filter(|i| i.section != Section::KeyFacts)
        .filter_map(|i| i.line)
        .collect()
}

/// The first of `lines` that an excerpt shows (Evidence or Errors), in `lines`' order: where
/// a next action may point when a mechanism knows its answer's lines best first.
pub(super) fn first_shown(lines: &[usize], packed: &[Item]) -> Option<usize> {
    let shown = excerpt_lines(packed);
    lines.iter().copied().find(|l| shown.contains(l))
}

/// The line of the shown excerpt most relevant to the question (the highest
/// [`reduce::select::Cand::rel`], then an excerpt before an error line, since the question is
/// not about what failed, then score, then the earliest line), for the next action:
/// where the answer the signals found is, rather than the last error line of a text whose
/// errors the question is not about.
pub(super) fn top_relevant_shown(cands: &[reduce::select::Cand], packed: &[Item]) -> Option<usize> {
    let shown = excerpt_lines(packed);
    cands
        .iter()
        .filter(|c| c.rel >= MIN_NEXT_REL && c.item.section != Section::KeyFacts)
        .filter_map(|c| {
            c.item
                .line
                .filter(|l| shown.contains(l))
                .map(|l| (c.rel, c.item.section != Section::Errors, c.score, l))
        })
        .max_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(a.1.cmp(&b.1))
                .then(a.2.total_cmp(&b.2))
                .then(b.3.cmp(&a.3))
        })
        .map(|(_, _, _, l)| l)
}

/// Relevance under which a shown error line matches none of the question's words
/// ([`errors_off_question`]): a stray word of a long line scores a little.
const OFF_QUESTION_REL: f64 = 0.2;

/// Whether the error lines shown are off the question while an excerpt shown answers it:
/// every shown line of the Errors section has a relevance under [`OFF_QUESTION_REL`] and a
/// shown excerpt elsewhere reaches [`MIN_NEXT_REL`]. "Why is the exporter's port closed?"
/// over a log whose errors are start-up warnings: the next action points at the lines that
/// match, not at the last warning.
pub(super) fn errors_off_question(cands: &[reduce::select::Cand], packed: &[Item]) -> bool {
    let shown = excerpt_lines(packed);
    let rel_of = |pred: &dyn Fn(&reduce::select::Cand) -> bool| {
        cands
            .iter()
            .filter(|c| pred(c) && c.item.line.is_some_and(|l| shown.contains(&l)))
            .map(|c| c.rel)
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))))
    };
    let errors = rel_of(&|c| c.item.section == Section::Errors);
    let answer =
        rel_of(&|c| c.item.section != Section::Errors && c.item.section != Section::KeyFacts);
    errors.is_none_or(|r| r < OFF_QUESTION_REL) && answer.is_some_and(|r| r >= MIN_NEXT_REL)
}

/// The line of the shown excerpt that tops the extremes (the largest of what a ranking
/// question asks for), for the next action: the answer the signals found, not the window of
/// the intent's words (which can be a file's header lines).
pub(super) fn top_extreme_shown(cands: &[reduce::select::Cand], packed: &[Item]) -> Option<usize> {
    let shown = excerpt_lines(packed);
    cands
        .iter()
        .filter(|c| c.channel == reduce::select::Channel::Extreme)
        .filter_map(|c| {
            c.item
                .line
                .filter(|l| shown.contains(l))
                .map(|l| (c.score, l))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
        .map(|(_, l)| l)
}

/// Bytes of the saved file (`bytes`) left out when `shown` of the text's `text_len` bytes are
/// quoted: the text's omitted share of the file, at most the file's size.
pub(super) fn omitted_bytes(text_len: usize, shown: usize, bytes: usize) -> usize {
    let left = text_len.saturating_sub(shown);
    if bytes == 0 || bytes == text_len || text_len == 0 {
        return left;
    }
    ((left as f64 / text_len as f64) * bytes as f64).round() as usize
}
