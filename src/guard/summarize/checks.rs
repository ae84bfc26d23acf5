//! Checks on the model's text: its sections parsed, a Status checked against what the
//! reduction found (failure or success) and for substance (a word of this output, not of the
//! call or of any output), and a text clipped to whole sentences within a token budget.

use crate::backend::TokenCounter;
use regex::Regex;
use std::collections::HashSet;
use std::sync::LazyLock;

pub(super) static HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*[#*>\-\s]*(status|decisions?|open questions?|next relevant action|next action|next step)\s*\**\s*[:：]\s*\**\s*(.*)$").unwrap()
});
pub(super) static FAIL_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(fail\w*|error\w*|exit(ed)? (code|status)|crash\w*|reject\w*|denied|exception\w*|broken|abort\w*|non-?zero|unsuccessful|not succeed\w*|killed)\b").unwrap()
});
pub(super) static SUCCESS_CLAIM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(all (the )?tests? (passed|succeeded)|succeeded|successful(ly)?|passed without|no (errors?|failures?)|completed successfully)\b").unwrap()
});

#[derive(Default)]
pub(super) struct ModelSections {
    pub(super) status: String,
    pub(super) decisions: String,
    pub(super) open: String,
    pub(super) next: String,
}

pub(super) fn parse_model(text: &str) -> ModelSections {
    let mut s = ModelSections::default();
    let mut cur: Option<usize> = None;
    let mut parts: [String; 4] = Default::default();
    for line in text.lines() {
        if let Some(c) = HEADER.captures(line) {
            let h = c[1].to_ascii_lowercase();
            let k = if h.starts_with("status") {
                0
            } else if h.starts_with("decision") {
                1
            } else if h.starts_with("open") {
                2
            } else {
                3
            };
            cur = Some(k);
            parts[k].push_str(c[2].trim());
            parts[k].push('\n');
        } else if let Some(k) = cur {
            parts[k].push_str(line.trim());
            parts[k].push('\n');
        } else if !line.trim().is_empty() {
            parts[0].push_str(line.trim());
            parts[0].push('\n');
        }
    }
    let clean = |p: &str| {
        let t = p.trim();
        let none =
            t.trim_end_matches('.').eq_ignore_ascii_case("none") || t.eq_ignore_ascii_case("n/a");
        if none {
            String::new()
        } else {
            t.to_string()
        }
    };
    s.status = clean(&parts[0]);
    s.decisions = clean(&parts[1]);
    s.open = clean(&parts[2]);
    s.next = clean(&parts[3]);
    s
}

/// True when the model's Status agrees with what the reduction found.
pub(super) fn status_consistent(status: &str, failed: Option<bool>) -> bool {
    if status.is_empty() || status.contains("<|") || HEADER.is_match(status) {
        return false;
    }
    match failed {
        Some(true) => FAIL_WORD.is_match(status) && !SUCCESS_CLAIM.is_match(status),
        Some(false) => !FAIL_WORD.is_match(&status.replace("0 failed", "").replace("errors=0", "")),
        None => true,
    }
}

/// Words a Status uses about any output ("the command succeeded"), which say nothing of this
/// one.
pub(crate) const GENERIC_WORDS: &[&str] = &[
    "command",
    "commands",
    "output",
    "outputs",
    "tool",
    "result",
    "results",
    "returned",
    "succeeded",
    "successful",
    "successfully",
    "success",
    "completed",
    "complete",
    "finished",
    "failed",
    "failure",
    "failures",
    "error",
    "errors",
    "shows",
    "showed",
    "shown",
    "show",
    "listed",
    "lists",
    "list",
    "main",
    "reason",
    "that",
    "this",
    "with",
    "from",
    "were",
    "was",
    "there",
    "their",
    "which",
    "have",
    "has",
    "been",
    "into",
    "also",
    "some",
    "other",
    "does",
    "file",
    "saved",
    "lines",
    "line",
    "contains",
    "contain",
    "ran",
    "runs",
    "run",
    "executed",
    "because",
    "about",
    "above",
    "below",
    "then",
    "than",
    "when",
    "what",
    "where",
    "your",
];

/// True when `status` says something of this output: at least one word of 4+ letters that
/// occurs in the output or the facts drawn from it (`view`), is not a word of the call itself
/// (`asked`: tool name, arguments, intent) and is not [`GENERIC_WORDS`]. A Status grounded
/// only by the command line ("The command kubectl describe node succeeded") is not.
pub(super) fn has_substance(status: &str, output: &str, view: &str, asked: &str) -> bool {
    let words = |t: &str| -> HashSet<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 4)
            .map(str::to_lowercase)
            .collect()
    };
    let asked = words(asked);
    words(status).into_iter().any(|w| {
        !asked.contains(&w)
            && !GENERIC_WORDS.contains(&w.as_str())
            && (contains_word_ci(output, &w) || contains_word_ci(view, &w))
    })
}

/// True when `hay` contains `word` (lowercase) as a whole word, ignoring ASCII case.
pub(crate) fn contains_word_ci(hay: &str, word: &str) -> bool {
    let hb = hay.as_bytes();
    let w = word.as_bytes();
    if w.is_empty() || hb.len() < w.len() {
        return false;
    }
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b >= 0x80;
    (0..=hb.len() - w.len()).any(|i| {
        hb[i..i + w.len()].eq_ignore_ascii_case(w)
            && (i == 0 || !is_word(hb[i - 1]))
            && hb.get(i + w.len()).is_none_or(|&b| !is_word(b))
    })
}

pub(super) fn clip_tokens(text: &str, max: usize, counter: &dyn TokenCounter) -> String {
    if counter.count(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    for s in crate::guard::ground::split_sentences(text) {
        let cand = format!("{out}{}{}", if out.is_empty() { "" } else { " " }, s.trim());
        if counter.count(&cand) > max {
            break;
        }
        out = cand;
    }
    out
}
