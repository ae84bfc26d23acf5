//! Unified diffs: files changed with added/removed line counts, hunk headers, and changed lines
//! ranked by the intent.

use super::rank::bm25;
use super::text::normalise;
use super::{derived, fmt_num, show_line, Ctx, Item, Kind, Reduction, Section, MUST};

/// Reduces a unified diff.
pub fn reduce(text: &str, ctx: &Ctx<'_>) -> Reduction {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut items = Vec::new();
    let mut files: Vec<(usize, String, usize, usize)> = Vec::new();
    let mut hunks = 0;
    let mut changed: Vec<usize> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix("diff --git ") {
            let name = rest.rsplit(" b/").next().unwrap_or(rest).to_string();
            files.push((i, name, 0, 0));
        } else if let Some(rest) = l.strip_prefix("+++ ") {
            let name = rest.trim_start_matches("b/").to_string();
            // A `diff --git` header already named this file unless it has changes recorded.
            if files.last().is_none_or(|f| f.2 + f.3 != 0) {
                files.push((i, name, 0, 0));
            }
        } else if l.starts_with("@@") {
            hunks += 1;
            items.push(Item::line(Section::Evidence, i + 1, show_line(l), 30.0));
        } else if l.starts_with('+') && !l.starts_with("+++") {
            if let Some(f) = files.last_mut() {
                f.2 += 1;
            }
            changed.push(i);
        } else if l.starts_with('-') && !l.starts_with("---") {
            if let Some(f) = files.last_mut() {
                f.3 += 1;
            }
            changed.push(i);
        }
    }
    let add: usize = files.iter().map(|f| f.2).sum();
    let del: usize = files.iter().map(|f| f.3).sum();
    items.push(Item::fact(
        1,
        format!(
            "kind: diff; {} lines; files changed: {}; lines added: {}, removed: {}; hunks: {}",
            fmt_num(lines.len() - usize::from(text.ends_with('\n'))),
            derived(files.len(), 0, ""),
            derived(add, 0, ""),
            derived(del, 0, ""),
            derived(hunks, 0, "")
        ),
        MUST,
    ));
    for (k, (i, name, a, d)) in files.iter().enumerate() {
        items.push(Item {
            section: Section::KeyFacts,
            order: 10 + k,
            line: Some(i + 1),
            text: format!(
                "{name}: lines added {}, removed {}",
                derived(*a, 0, ""),
                derived(*d, 0, "")
            ),
            prio: MUST / 100.0 - k as f64,
        });
    }
    let docs: Vec<&str> = changed.iter().map(|&i| lines[i]).collect();
    let scores = normalise(&bm25(ctx.query, &docs));
    for (k, &i) in changed.iter().enumerate() {
        items.push(Item::line(
            Section::Evidence,
            i + 1,
            show_line(lines[i]),
            5.0 + 50.0 * scores[k] - k as f64 * 0.001,
        ));
    }
    Reduction {
        kind: Kind::Diff,
        items,
        status: format!(
            "Diff of {} files: lines added {}, removed {}, in {} hunks.",
            derived(files.len(), 0, ""),
            derived(add, 0, ""),
            derived(del, 0, ""),
            derived(hunks, 0, "")
        ),
        failed: None,
        next_action: "Read the hunks of the file you need at their L<n> in the saved file."
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::rank::Query;

    #[test]
    fn counts_changes() {
        let d =
            "diff --git a/x.rs b/x.rs\n--- a/x.rs\n+++ b/x.rs\n@@ -1,2 +1,2 @@\n-old\n+new\n ctx\n";
        let q = Query::new("");
        let r = reduce(
            d,
            &Ctx {
                query: &q,
                exit_code: None,
                bytes: 0,
            },
        );
        assert!(r
            .items
            .iter()
            .any(|i| i.text == "x.rs: lines added 1, removed 1"));
        assert!(r.status.contains("1 files"));
        // 7 lines, as `wc -l` and the summary's `shown: … of 7 lines` count them.
        assert!(
            r.items
                .iter()
                .any(|i| i.text.starts_with("kind: diff; 7 lines;")),
            "{:?}",
            r.items
        );
    }
}
