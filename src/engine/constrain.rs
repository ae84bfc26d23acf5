//! Constrained decoding for [`OutputConstraint`]: before each token is chosen, every token that
//! would take the output out of the allowed language gets a logit of minus infinity, so greedy
//! and sampled decoding alike can only write what the constraint allows.
//!
//! The language of [`OutputConstraint::Ids`]: one line of ids from the offered list (each at most
//! once, at most `max`), separated by commas and/or spaces, or the word `none`, ended by `\n`;
//! then free text (`then_text`) or the end of the output. Only tokens whose text is made of the
//! ids' characters, separators, `\n` and the letters of `none` can be chosen inside the line;
//! they are found once per request in [`TokenTexts`], the vocabulary's token texts computed once
//! per engine.

use std::collections::HashSet;

use crate::backend::OutputConstraint;
use crate::tokenizer::GgufTokenizer;

/// The decoded text of every token of the vocabulary (empty for special tokens), computed once
/// per engine: a vocabulary of 151,665 tokens (Qwen2.5) takes ~0.1 s and ~3 MB.
pub(crate) struct TokenTexts(Vec<String>);

impl TokenTexts {
    /// Decodes every token id of `tok` on its own.
    pub(crate) fn new(tok: &GgufTokenizer) -> Self {
        let n = tok.vocab_size() as u32;
        TokenTexts((0..n).map(|id| tok.decode(&[id], true)).collect())
    }
}

/// Where the ids line stands after some text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineState {
    /// The text cannot be extended into a valid line.
    Invalid,
    /// A valid prefix; `complete` when the line could end here (every word is a whole id).
    Open { complete: bool },
    /// The line ended with `\n` (what follows is not part of it).
    Done,
}

/// The decoding-time state of one constrained generation.
pub(crate) struct Constrained {
    ids: HashSet<String>,
    max: usize,
    then_text: bool,
    /// Tokens that may occur inside the ids line, with their text.
    alphabet: Vec<(u32, String)>,
    /// Text of the ids line generated so far.
    line: String,
    /// Whether the line has ended.
    done: bool,
}

const SEPARATORS: [char; 3] = [',', ' ', '\t'];
const NONE: &str = "none";

impl Constrained {
    /// The state for `c` over the vocabulary `texts` (owns what it needs of both, so a
    /// sequence can keep it across batched decode steps).
    pub(crate) fn new(c: &OutputConstraint, texts: &TokenTexts) -> Self {
        let OutputConstraint::Ids {
            ids,
            max,
            then_text,
        } = c;
        let ids: HashSet<String> = ids.iter().cloned().collect();
        let mut chars: HashSet<char> = ids.iter().flat_map(|i| i.chars()).collect();
        chars.extend(SEPARATORS);
        chars.extend(NONE.chars());
        chars.insert('\n');
        let alphabet = texts
            .0
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_empty() && t.chars().all(|ch| chars.contains(&ch)))
            .map(|(i, t)| (i as u32, t.clone()))
            .collect();
        Constrained {
            ids,
            max: *max,
            then_text: *then_text,
            alphabet,
            line: String::new(),
            done: false,
        }
    }

    /// True once the ids line has ended and free text may follow: no more masking.
    pub(crate) fn free(&self) -> bool {
        self.done && self.then_text
    }

    /// Sets every logit the constraint forbids to minus infinity. `eos` are the end-of-turn
    /// ids, allowed where the output may end.
    pub(crate) fn mask(&self, logits: &mut [f32], eos: &[u32]) {
        if self.free() {
            return;
        }
        let mut allowed = vec![false; logits.len()];
        let mut any = false;
        if self.done {
            // Only the end may follow a finished line without free text.
            for &e in eos {
                if let Some(a) = allowed.get_mut(e as usize) {
                    *a = true;
                    any = true;
                }
            }
        } else {
            if matches!(self.state(&self.line), LineState::Open { complete: true }) {
                for &e in eos {
                    if let Some(a) = allowed.get_mut(e as usize) {
                        *a = true;
                        any = true;
                    }
                }
            }
            let mut cand = String::with_capacity(self.line.len() + 16);
            for (id, text) in &self.alphabet {
                let id = *id;
                cand.clear();
                cand.push_str(&self.line);
                cand.push_str(text);
                let ok = match text.find('\n') {
                    // The line ends inside this token: what follows it must be allowed too.
                    Some(p) => {
                        let end = self.line.len() + p + 1;
                        self.state(&cand[..end]) == LineState::Done
                            && (self.then_text || end == cand.len())
                    }
                    None => self.state(&cand) != LineState::Invalid,
                };
                if ok {
                    if let Some(a) = allowed.get_mut(id as usize) {
                        *a = true;
                        any = true;
                    }
                }
            }
        }
        if !any {
            // Cannot happen for a well-formed constraint (`\n` ends any complete line); leave
            // the logits alone rather than forbid everything.
            return;
        }
        for (l, a) in logits.iter_mut().zip(allowed) {
            if !a {
                *l = f32::NEG_INFINITY;
            }
        }
    }

    /// Records the text of the chosen token.
    pub(crate) fn push(&mut self, text: &str) {
        if self.done {
            return;
        }
        match text.find('\n') {
            Some(p) => {
                self.line.push_str(&text[..p]);
                self.done = true;
            }
            None => self.line.push_str(text),
        }
    }

    /// Classifies a candidate line text.
    fn state(&self, s: &str) -> LineState {
        let (body, ended) = match s.find('\n') {
            Some(p) if p + 1 == s.len() => (&s[..p], true),
            Some(_) => return LineState::Invalid,
            None => (s, false),
        };
        let t = body.trim_start_matches(SEPARATORS);
        // Two commas in a row, or runs of separators longer than 2, only waste tokens.
        if t.contains(",,") || t.contains(", ,") || t.contains("   ") {
            return LineState::Invalid;
        }
        let ok_open = |complete: bool| {
            if ended {
                if complete {
                    LineState::Done
                } else {
                    LineState::Invalid
                }
            } else {
                LineState::Open { complete }
            }
        };
        if t.is_empty() {
            return ok_open(true);
        }
        if NONE.starts_with(t) && !self.ids.iter().any(|i| i.starts_with(t)) {
            return ok_open(t == NONE);
        }
        if let Some(rest) = t.strip_prefix(NONE) {
            if rest.trim_matches(SEPARATORS).is_empty() && !self.ids.contains(NONE) {
                return ok_open(true);
            }
        }
        let trailing_sep = t.ends_with(SEPARATORS);
        let words: Vec<&str> = t.split(SEPARATORS).filter(|w| !w.is_empty()).collect();
        if words.len() > self.max {
            return LineState::Invalid;
        }
        let mut seen: HashSet<&str> = HashSet::new();
        for (k, w) in words.iter().enumerate() {
            let last = k + 1 == words.len();
            if last && !trailing_sep {
                // The word being written: a prefix of an id not yet used.
                let whole = self.ids.contains(*w) && !seen.contains(w);
                let prefix = self
                    .ids
                    .iter()
                    .any(|i| i.len() > w.len() && i.starts_with(w) && !seen.contains(i.as_str()));
                return match (whole, prefix) {
                    (false, false) => LineState::Invalid,
                    (whole, _) => ok_open(whole),
                };
            }
            if !self.ids.contains(*w) || !seen.insert(w) {
                return LineState::Invalid;
            }
        }
        ok_open(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(v: &[&str]) -> TokenTexts {
        TokenTexts(v.iter().map(|s| s.to_string()).collect())
    }

    fn ids(list: &[&str], max: usize, then_text: bool) -> OutputConstraint {
        OutputConstraint::Ids {
            ids: list.iter().map(|s| s.to_string()).collect(),
            max,
            then_text,
        }
    }

    /// Greedy decoding over a fake vocabulary whose preferences are `prefs` (token texts, most
    /// preferred first): returns the text written under the constraint.
    fn decode(c: &OutputConstraint, vocab: &TokenTexts, prefs: &[&str], eos: u32) -> String {
        let mut st = Constrained::new(c, vocab);
        let mut out = String::new();
        for _ in 0..40 {
            let mut logits: Vec<f32> = vocab
                .0
                .iter()
                .map(|t| {
                    prefs
                        .iter()
                        .position(|p| p == t)
                        .map_or(-100.0, |k| 50.0 - k as f32)
                })
                .collect();
            st.mask(&mut logits, &[eos]);
            let (best, _) = logits
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .unwrap();
            if best as u32 == eos {
                break;
            }
            let t = &vocab.0[best];
            out.push_str(t);
            st.push(t);
        }
        out
    }

    #[test]
    fn only_offered_ids_are_written() {
        // "7" and "99" are not offered; the model would rather write them.
        let v = texts(&[
            "<eos>", "7", "9", "1", "2", ", ", ",", " ", "\n", "Status", ":",
        ]);
        let c = ids(&["1", "2", "12"], 5, false);
        let out = decode(&c, &v, &["7", "9", "1", ", ", "2", "\n"], 0);
        let (got, _) = c.parse_ids(&out);
        assert!(
            got.iter().all(|g| ["1", "2", "12"].contains(&g.as_str())),
            "{out:?}"
        );
        assert!(!out.contains('7') && !out.contains('9'), "{out:?}");
    }

    #[test]
    fn ids_are_not_repeated_and_max_holds() {
        let v = texts(&["<eos>", "1", "2", "3", ", ", "\n"]);
        let c = ids(&["1", "2", "3"], 2, false);
        // Prefers "1, 1, 1, ..." forever.
        let out = decode(&c, &v, &["1", ", ", "2", "3", "\n"], 0);
        let (got, _) = c.parse_ids(&out);
        assert_eq!(got, vec!["1", "2"], "{out:?}");
        assert!(out.ends_with('\n') || !out.contains("3"), "{out:?}");
    }

    #[test]
    fn free_text_follows_the_line_when_allowed() {
        let v = texts(&["<eos>", "3", ", ", "\n", "Status", ": ok", "\nStatus"]);
        let c = ids(&["3"], 4, true);
        // Inside the line only id characters can be written ("Status" is masked); after its
        // newline the model's own first choice comes back.
        let out = decode(&c, &v, &["Status", "3", "\n"], 0);
        assert!(out.starts_with("3\nStatus"), "{out:?}");
        let (got, rest) = c.parse_ids(&out);
        assert_eq!(got, vec!["3"]);
        assert!(rest.starts_with("Status"));
        // Without then_text nothing follows the line.
        let c = ids(&["3"], 4, false);
        let out = decode(&c, &v, &["Status", "3", "\n"], 0);
        assert_eq!(out, "3\n");
    }

    #[test]
    fn none_is_allowed_and_prose_is_not() {
        let v = texts(&["<eos>", "The", " answer", "none", "no", "ne", "\n", "5"]);
        let c = ids(&["5"], 3, false);
        let out = decode(&c, &v, &["The", " answer", "none", "\n"], 0);
        assert_eq!(out, "none\n");
        assert!(c.parse_ids(&out).0.is_empty());
    }

    #[test]
    fn parse_ids_skips_what_was_not_offered() {
        let c = ids(&["1", "2", "3"], 2, true);
        let (got, rest) = c.parse_ids("9, 2, 2, 1, 3\nStatus: x");
        assert_eq!(got, vec!["2", "1"]);
        assert_eq!(rest, "Status: x");
    }
}
