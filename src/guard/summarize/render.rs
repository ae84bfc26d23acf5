//! Rendering the packed items into the Key facts, Evidence and Errors sections.

use std::collections::HashSet;

use crate::guard::reduce::signal::{severity, Severity};
use crate::guard::reduce::{Item, Section, MUST};

/// The three sections' texts (Key facts, Evidence, Errors) of the packed `items`, each one
/// line per item: facts in priority order ([`MUST`] facts first, in their given order),
/// Evidence and Errors by line. `text` is the output the items quote: a warning shown beside
/// an error goes to Evidence ([`warnings_beside_errors`]). The fourth value is true when the
/// Errors items are warnings and no error ([`only_warnings`]), so the section's heading says so.
pub(super) fn sections(items: &[Item], text: &str) -> (String, String, String, bool) {
    // The lines above each Errors item are read once, for both uses.
    let heads = error_heads(items, text);
    let moved = warnings_beside_errors(&heads);
    let warned = only_warnings(&heads);
    let mut by: [Vec<&Item>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for (j, it) in items.iter().enumerate() {
        let k = match it.section {
            Section::Errors if moved.contains(&j) => 1,
            Section::KeyFacts => 0,
            Section::Evidence => 1,
            Section::Errors => 2,
        };
        by[k].push(it);
    }
    let mut outs = Vec::new();
    for (k, v) in by.iter_mut().enumerate() {
        if k == 0 {
            v.sort_by(|a, b| b.prio.total_cmp(&a.prio).then(a.order.cmp(&b.order)));
            // Musts first in their given order, then the rest by priority.
            v.sort_by_key(|i| (i.prio < MUST, if i.prio >= MUST { i.order } else { 0 }));
        } else {
            v.sort_by_key(|i| (i.line.unwrap_or(0), i.order));
        }
        outs.push(v.iter().map(|i| i.render()).collect::<Vec<_>>().join("\n"));
    }
    let e = outs.pop().unwrap_or_default();
    let ev = outs.pop().unwrap_or_default();
    let kf = outs.pop().unwrap_or_default();
    (kf, ev, e, warned)
}

/// Lines above an Errors item searched for the diagnostic it belongs to (its headline, when
/// the item is a location `  --> src/a.rs:1:5` or a source line `12 |   let x = 1;`).
const HEADLINE_LINES: usize = 6;

/// The indexes of the Errors items that belong to a warning (its line, or one of the lines
/// under it up to the next blank line) while another Errors item belongs to an error: a
/// build that failed with one error among 960 warnings lists the error under Errors and the
/// warnings it shows under Evidence, as they did not fail it. An output of warnings only
/// keeps them under Errors, its problems. `heads`: [`error_heads`].
fn warnings_beside_errors(heads: &[(usize, Severity)]) -> HashSet<usize> {
    if !heads.iter().any(|(_, s)| *s == Severity::Error) {
        return HashSet::new();
    }
    heads
        .iter()
        .filter(|(_, s)| *s == Severity::Warn)
        .map(|&(j, _)| j)
        .collect()
}

/// True when some Errors item belongs to a warning and none to an error: gcc's `-Wextra` run
/// over a file that compiled. Its warnings stay under Errors (the output's problems), under a
/// heading that says no error is among them; `Errors:` over warnings alone was read as a
/// failed build while the Status said `no error lines` (trial of session 47).
fn only_warnings(heads: &[(usize, Severity)]) -> bool {
    heads.iter().any(|(_, s)| *s == Severity::Warn)
        && !heads.iter().any(|(_, s)| *s == Severity::Error)
}

/// Each Errors item's index with the severity of the diagnostic it belongs to: its own line's,
/// else the first of the [`HEADLINE_LINES`] lines above it (up to a blank line) that has one.
fn error_heads(items: &[Item], text: &str) -> Vec<(usize, Severity)> {
    let lines: Vec<&str> = text.split('\n').collect();
    let head = |n: usize| -> Severity {
        let mut i = n.saturating_sub(1);
        for _ in 0..=HEADLINE_LINES {
            let Some(l) = lines.get(i) else {
                return Severity::None;
            };
            if l.trim().is_empty() {
                return Severity::None;
            }
            let sev = severity(l);
            if sev != Severity::None {
                return sev;
            }
            if i == 0 {
                break;
            }
            i -= 1;
        }
        Severity::None
    };
    items
        .iter()
        .enumerate()
        .filter(|(_, it)| it.section == Section::Errors)
        .filter_map(|(j, it)| Some((j, head(it.line?))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_beside_an_error_go_to_evidence() {
        let text = "error[E0308]: mismatched types\n  --> src/taxes.rs:230:22\n\n\
                    warning: unused variable: `region`\n --> src/billing.rs:1:50\n  |\n\
                    1 | pub fn f(region: &str) {}\n";
        let items = vec![
            Item::line(Section::Errors, 1, "error[E0308]: mismatched types", 100.0),
            Item::line(Section::Errors, 2, "  --> src/taxes.rs:230:22", 99.0),
            Item::line(
                Section::Errors,
                4,
                "warning: unused variable: `region`",
                60.0,
            ),
            Item::line(Section::Errors, 5, " --> src/billing.rs:1:50", 59.0),
            Item::line(Section::Errors, 7, "1 | pub fn f(region: &str) {}", 58.0),
        ];
        let (_, evidence, errors, _) = sections(&items, text);
        assert_eq!(
            errors,
            "L1: error[E0308]: mismatched types\nL2:   --> src/taxes.rs:230:22"
        );
        assert!(
            evidence.contains("L4: warning: unused variable"),
            "{evidence}"
        );
        assert!(
            evidence.contains("L5:  --> src/billing.rs:1:50"),
            "{evidence}"
        );
        assert!(evidence.contains("L7: 1 | pub fn f"), "{evidence}");
    }

    #[test]
    fn warnings_alone_stay_under_errors() {
        let text = "warning: unused variable: `a`\n --> src/a.rs:1:5\n";
        let items = vec![
            Item::line(Section::Errors, 1, "warning: unused variable: `a`", 60.0),
            Item::line(Section::Errors, 2, " --> src/a.rs:1:5", 59.0),
        ];
        let (_, evidence, errors, warned) = sections(&items, text);
        assert!(warned, "the heading says they are warnings");
        assert!(evidence.is_empty());
        assert!(
            errors.contains("L1: warning") && errors.contains("L2:"),
            "{errors}"
        );
    }
}
