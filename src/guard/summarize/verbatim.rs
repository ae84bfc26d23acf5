//! The verbatim check of a summary's excerpts (issue 17: no summary may state what the output
//! does not say): each item's quoted facts must occur in the output, or the item falls back
//! to its line as the file has it, or goes.

use std::collections::HashSet;

use crate::guard::reduce::{self, Item, Section, MUST};

/// The items whose quoted facts (strings, URLs, paths, `file:line`, numbers of 3+ digits, by
/// [`crate::bench::score::facts`], the benchmark's own checker) all occur in `text`, as
/// `check` ([`Verbatim`], built from `text`) judges: an excerpt that a rendering changed (an
/// escape decoded, a record re-joined, a cut inside a quote) is replaced by its line as the
/// file has it, cut to [`reduce::MAX_LINE_BYTES`], or dropped when that fails too or that line
/// says nothing (it only opens an object, or is a log's blank line). [`MUST`]
/// facts (sizes, kinds) and figures equal to one of the output's sizes (bytes, lines) pass.
/// Issue 17: no summary may state what the output does not say.
pub(super) fn verbatim_only(items: Vec<Item>, text: &str, check: &Verbatim) -> Vec<Item> {
    let passes: Vec<bool> = items.iter().map(|it| check.passes(it)).collect();
    if passes.iter().all(|&p| p) {
        return items;
    }
    let lines: Vec<&str> = text.lines().collect();
    // Lines an excerpt falls back to, each once: the records of a one-line JSON document
    // (all on L1) fell back to eight copies of that line, cut (checksec, live set of session
    // 48). A line quoted whole by an excerpt that passes needs no copy either.
    let mut shown: HashSet<usize> = items
        .iter()
        .zip(&passes)
        .filter(|(it, &p)| {
            p && it.line.is_some_and(|n| {
                lines.get(n.saturating_sub(1)).map(|l| l.trim()) == Some(it.text.trim())
            })
        })
        .filter_map(|(it, _)| it.line)
        .collect();
    items
        .into_iter()
        .zip(passes)
        .filter_map(|(mut it, passed)| {
            if passed {
                return Some(it);
            }
            if std::env::var_os("TOOLSUM_DEBUG_SELECT").is_some() {
                eprintln!(
                    "verbatim drop? {:?} in {}",
                    crate::bench::score::invented(&it.render(), &check.collapsed, &check.sizes),
                    it.render()
                );
            }
            let n = it.line?;
            if it.section == Section::KeyFacts {
                return None;
            }
            let raw = lines.get(n.checked_sub(1)?)?;
            // A line that only opens an object (`{`, `"cve": {`) or is a log's blank line
            // says nothing in the excerpt's place.
            use reduce::select::propose::{level_only, markup_only, opener_only};
            if level_only(raw) || markup_only(raw) || opener_only(raw) {
                return None;
            }
            it.text = reduce::show_line(raw);
            (check.ok(&it.render()) && shown.insert(n)).then_some(it)
        })
        .collect()
}

/// `cands` without the candidates of the items of `packed` that fail `check`, or `None` when
/// every packed item passes (nothing to pack again).
pub(super) fn without_failed(
    cands: Vec<reduce::select::Cand>,
    packed: &[Item],
    check: &Verbatim,
) -> Option<Vec<reduce::select::Cand>> {
    let failed: HashSet<(Option<usize>, &str)> = packed
        .iter()
        .filter(|it| !check.passes(it))
        .map(|it| (it.line, it.text.as_str()))
        .collect();
    (!failed.is_empty()).then(|| {
        cands
            .into_iter()
            .filter(|c| !failed.contains(&(c.item.line, c.item.text.as_str())))
            .collect()
    })
}

/// The checker [`verbatim_only`] applies: the output's text collapsed as the benchmark's
/// scorer reads it, and the sizes (bytes, lines) a figure may state.
pub(super) struct Verbatim {
    collapsed: String,
    sizes: Vec<u64>,
}

impl Verbatim {
    /// The checker for `text`, whose sizes in bytes are `sizes`.
    pub(super) fn new(text: &str, sizes: &[usize]) -> Self {
        let mut sizes: Vec<u64> = sizes.iter().map(|&b| b as u64).collect();
        sizes.push(text.lines().count() as u64);
        sizes.push(text.split('\n').count() as u64);
        Verbatim {
            collapsed: crate::bench::score::collapse(text),
            sizes,
        }
    }

    /// Whether `t` states nothing the output does not say.
    fn ok(&self, t: &str) -> bool {
        crate::bench::score::invented(t, &self.collapsed, &self.sizes).is_empty()
    }

    /// Whether item `it` is shown as it is: a [`MUST`] fact, or text that passes [`Self::ok`].
    fn passes(&self, it: &Item) -> bool {
        it.prio >= MUST || self.ok(&it.render())
    }
}
