//! An assembly listing's outline: the functions it defines, global ones first, and the
//! functions it calls most. `gcc -S` output is tens of thousands of instruction lines in
//! which the names that answer "which functions does it define" or "what does it call" are a
//! few dozen `.type` and `call` lines (blind sets of session 51: two `gcc -S -fverbose-asm`
//! listings, one asked for its global functions, one for the calls left after inlining).

use regex::Regex;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// A function's symbol type: `.type dupnode, @function` (ELF, x86), `%function` (Arm).
static FUNCTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\.type\s+([\w.$@]+),\s*[@%]function\b").unwrap());
/// A symbol made global: `.globl r_interpret`, `.global main`.
static GLOBAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\.globa?l\s+([\w.$@]+)\s*$").unwrap());
/// A direct call: `call set_loc@PLT`, `callq *foo`, Arm's `bl memcpy`.
static CALL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:callq?|bl)\s+([A-Za-z_][\w.$@]*)").unwrap());

/// Fewest functions for a listing to be outlined.
const MIN_FUNCTIONS: usize = 3;
/// Most function names given (the count says how many there are).
const MAX_NAMED: usize = 40;
/// Most called functions given.
const MAX_CALLED: usize = 10;

/// `functions defined (54; 12 global): r_interpret, h_interpret, …; local: dupnode, …` and
/// `calls (1,143): update_global_values@PLT ×310, …`, each `None` when the listing defines
/// fewer than [`MIN_FUNCTIONS`] functions. Names in the file's order, at most [`MAX_NAMED`]
/// and [`MAX_CALLED`].
pub fn outline(lines: &[&str]) -> Option<(String, Option<String>)> {
    // Most texts are no listing: one cheap pass before the regexes.
    if lines
        .iter()
        .filter(|l| l.contains("function"))
        .take(MIN_FUNCTIONS)
        .count()
        < MIN_FUNCTIONS
    {
        return None;
    }
    let mut defined: Vec<&str> = Vec::new();
    let mut global: HashSet<&str> = HashSet::new();
    let mut calls: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut n_calls = 0;
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = FUNCTION.captures(l) {
            let name = c.get(1).map_or("", |m| m.as_str());
            if !defined.contains(&name) {
                defined.push(name);
            }
        } else if let Some(c) = GLOBAL.captures(l) {
            global.insert(c.get(1).map_or("", |m| m.as_str()));
        } else if let Some(c) = CALL.captures(l) {
            let e = calls
                .entry(c.get(1).map_or("", |m| m.as_str()))
                .or_insert((0, i));
            e.0 += 1;
            n_calls += 1;
        }
    }
    if defined.len() < MIN_FUNCTIONS {
        return None;
    }
    let (g, local): (Vec<&str>, Vec<&str>) = defined.iter().partition(|n| global.contains(*n));
    let mut text = format!(
        "functions defined ({}; {} global)",
        crate::guard::reduce::fmt_num(defined.len()),
        crate::guard::reduce::fmt_num(g.len())
    );
    let shown = |v: &[&str], room: usize| {
        let mut s = v.iter().take(room).copied().collect::<Vec<_>>().join(", ");
        if v.len() > room {
            s.push_str(", …");
        }
        s
    };
    if !g.is_empty() {
        text.push_str(&format!(": global: {}", shown(&g, MAX_NAMED)));
    }
    let room = MAX_NAMED.saturating_sub(g.len());
    if !local.is_empty() && room > 0 {
        text.push_str(&format!(
            "{} local: {}",
            if g.is_empty() { ":" } else { ";" },
            shown(&local, room)
        ));
    }
    let called = (!calls.is_empty()).then(|| {
        let mut v: Vec<(&str, usize, usize)> =
            calls.iter().map(|(k, (n, f))| (*k, *n, *f)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
        let list: Vec<String> = v
            .iter()
            .take(MAX_CALLED)
            .map(|(k, n, _)| format!("{k} ×{n}"))
            .collect();
        format!(
            "calls ({} in all, to {} functions): {}{}",
            crate::guard::reduce::fmt_num(n_calls),
            crate::guard::reduce::fmt_num(v.len()),
            list.join(", "),
            if v.len() > MAX_CALLED { ", …" } else { "" }
        )
    });
    Some((text, called))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_global_first_and_calls_most_first() {
        let text = "\t.text\n\t.type\tdupnode, @function\ndupnode:\n\tcall\tfree@PLT\n\tret\n\t.globl\tr_interpret\n\t.type\tr_interpret, @function\nr_interpret:\n\tcall\tset_loc@PLT\t#\n\tcall\tset_loc@PLT\n\tcall\tdupnode\n\t.globl\th_interpret\n\t.type\th_interpret, @function\nh_interpret:\n\tret\n";
        let lines: Vec<&str> = text.lines().collect();
        let (defined, calls) = outline(&lines).unwrap();
        assert_eq!(
            defined,
            "functions defined (3; 2 global): global: r_interpret, h_interpret; local: dupnode"
        );
        assert_eq!(
            calls.unwrap(),
            "calls (4 in all, to 3 functions): set_loc@PLT ×2, free@PLT ×1, dupnode ×1"
        );
        // Two functions are no listing to outline.
        assert!(outline(&lines[..8]).is_none());
    }
}
