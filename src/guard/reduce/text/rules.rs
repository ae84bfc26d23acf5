//! The rules a linter's findings name, counted: `which lint rules fire most often` asks for
//! them, and one example per line template shows a few (trial of session 50: oxlint's 485
//! warnings under 97 rules, `  ! eslint(no-unused-vars): …`).

use regex::Regex;
use std::collections::HashMap;
use std::sync::LazyLock;

/// A finding's rule: a diagnostic renderer's `name(code)` after its mark (miette:
/// `  ! eslint(no-unused-vars):`), or a compiler's warning flag in brackets at a line's end
/// (gcc's and clang's `[-Wunused-variable]`). Not any bracketed word there: a log line's
/// `[pool-1/thread-2]` names no rule.
static RULE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s{0,4}[!x×⚠]\s+([\w@/.-]+\([\w@/.:-]+\)):|\[(-W[\w=+-]+)\]\s*$").unwrap()
});

/// Fewest findings naming a rule, and fewest rules, for the count to be given.
const MIN_FINDINGS: usize = 5;
const MIN_RULES: usize = 2;

/// Most rules named in the fact.
const MAX_NAMED: usize = 8;

/// `findings by rule: eslint(no-unused-vars) ×201, … (N rules)` over the lines `flagged`
/// (0-based indices of the warning and error lines), most first; `None` when fewer than
/// [`MIN_FINDINGS`] lines or [`MIN_RULES`] rules are named.
pub fn by_rule(lines: &[&str], flagged: &[usize]) -> Option<String> {
    let mut n: HashMap<&str, usize> = HashMap::new();
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut total = 0;
    for &i in flagged {
        let Some(c) = RULE.captures(lines[i]) else {
            continue;
        };
        let Some(m) = c.get(1).or_else(|| c.get(2)) else {
            continue;
        };
        *n.entry(m.as_str()).or_default() += 1;
        first.entry(m.as_str()).or_insert(i);
        total += 1;
    }
    if total < MIN_FINDINGS || n.len() < MIN_RULES {
        return None;
    }
    let mut v: Vec<(&str, usize)> = n.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(first[a.0].cmp(&first[b.0])));
    let shown: Vec<String> = v
        .iter()
        .take(MAX_NAMED)
        .map(|(r, k)| format!("{r} ×{k}"))
        .collect();
    let more = if v.len() > MAX_NAMED {
        format!(", and {} more rules", v.len() - MAX_NAMED)
    } else {
        String::new()
    };
    Some(format!(
        "findings by rule ({total} lines): {}{more}",
        shown.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_rules_most_first() {
        let mut lines = Vec::new();
        for k in 0..9 {
            lines.push(if k % 3 == 0 {
                "  ! eslint(no-cond-assign): Expected a conditional expression".to_string()
            } else {
                "  ! eslint(no-unused-vars): Catch parameter 'e' is caught but never used."
                    .to_string()
            });
        }
        lines.push("a.c:3:9: warning: unused variable 'x' [-Wunused-variable]".to_string());
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let all: Vec<usize> = (0..refs.len()).collect();
        assert_eq!(
            by_rule(&refs, &all).as_deref(),
            Some("findings by rule (10 lines): eslint(no-unused-vars) ×6, eslint(no-cond-assign) ×3, -Wunused-variable ×1")
        );
        assert_eq!(by_rule(&refs[..4], &[0, 1, 2, 3]), None);
    }
}
