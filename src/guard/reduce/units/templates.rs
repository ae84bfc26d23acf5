//! Line templates: units that differ only in their variable parts (numbers, long hex, ids)
//! share one, mined Drain-style (He et al. 2017), with the values seen at each variable
//! position counted ("requests per endpoint").

use std::collections::HashMap;

use super::super::signal::Severity;
use super::{Unit, UnitKind};

impl Template {
    /// Counts one more unit of the template, starting on `line` (units of one line count
    /// the line once).
    pub(super) fn add(&mut self, line: usize) {
        if self.count == 0 || self.last != line {
            self.lines += 1;
        }
        self.count += 1;
        self.last = line;
    }
}

/// A group of units that differ only in variable parts.
#[derive(Debug, Clone)]
pub struct Template {
    /// The template's text, `<*>` at variable positions.
    pub text: String,
    /// Units of the template.
    pub count: usize,
    /// Distinct lines of its units (parts of one long line count once).
    pub lines: usize,
    /// First and last line of its units.
    pub first: usize,
    /// See `first`.
    pub last: usize,
    /// Severity of its first unit.
    pub sev: Severity,
    /// For templates of lines: values seen at each variable position (position -> value ->
    /// count), for counts per value ("requests per endpoint").
    pub slots: Vec<HashMap<String, usize>>,
    /// Whether the template groups units by their shape (records by their keys, leaves by
    /// their path) rather than mined lines.
    pub shaped: bool,
}

/// Similarity a line needs to join a template (share of equal token positions; Drain uses
/// 0.4-0.5).
const SIM_PLAIN: f64 = 0.5;
/// Stricter similarity for error/warning lines, so distinct failures stay distinct.
const SIM_SEVERE: f64 = 0.7;
/// Tokens of a line compared for its template.
const MAX_TEMPLATE_TOKENS: usize = 40;
/// Templates compared per bucket (most recent first), bounding the cost on huge inputs.
const MAX_CANDIDATES: usize = 200;
/// Most distinct values kept per variable position of a template.
const MAX_SLOT_VALUES: usize = 64;

/// A token that varies between lines of one template: digits, long hex, paths.
fn variable(tok: &str) -> bool {
    let hexish = tok.len() >= 8 && tok.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    tok.chars().any(|c| c.is_ascii_digit()) || hexish
}

/// Drain-like template mining over line units: bucket by severity and token count, join the
/// most similar template above a threshold, turn differing positions into `<*>`. Values at
/// variable positions are counted per template.
pub(super) fn mine(units: &mut [Unit], templates: &mut Vec<Template>) {
    let mut toks_of: Vec<Vec<String>> = Vec::new();
    let mut buckets: HashMap<(Severity, usize), Vec<usize>> = HashMap::new();
    let line = |u: &Unit| !matches!(u.kind, UnitKind::Record | UnitKind::Leaf);
    for u in units.iter_mut().filter(|u| line(u)) {
        let raw: Vec<&str> = u
            .text
            .split_whitespace()
            .take(MAX_TEMPLATE_TOKENS)
            .collect();
        let toks: Vec<String> = raw
            .iter()
            .map(|t| {
                if variable(t) {
                    "<*>".to_string()
                } else {
                    t.to_string()
                }
            })
            .collect();
        let key = (u.sev, toks.len());
        let thr = if u.sev == Severity::None {
            SIM_PLAIN
        } else {
            SIM_SEVERE
        };
        let bucket = buckets.entry(key).or_default();
        let mut best: Option<(usize, f64)> = None;
        for &tid in bucket.iter().rev().take(MAX_CANDIDATES) {
            let t = &toks_of[tid];
            let same = t.iter().zip(&toks).filter(|(a, b)| a == b).count();
            let sim = same as f64 / toks.len().max(1) as f64;
            if sim >= thr
                && best.is_none_or(|(_, s)| sim > s)
                && !super::super::text::labels_clash(t, &toks)
            {
                best = Some((tid, sim));
            }
        }
        let tid = match best {
            Some((tid, _)) => {
                for (a, b) in toks_of[tid].iter_mut().zip(&toks) {
                    if a != b {
                        *a = "<*>".to_string();
                    }
                }
                tid
            }
            None => {
                toks_of.push(toks.clone());
                templates.push(Template {
                    text: String::new(),
                    count: 0,
                    lines: 0,
                    first: u.line,
                    last: u.line,
                    sev: u.sev,
                    slots: Vec::new(),
                    shaped: false,
                });
                bucket.push(templates.len() - 1);
                templates.len() - 1
            }
        };
        templates[tid].add(u.line);
        u.template = tid;
    }
    // Slot values, now that the templates' variable positions are known.
    for u in units.iter().filter(|u| line(u)) {
        let tt = &toks_of[u.template];
        let t = &mut templates[u.template];
        if t.count < 3 {
            continue;
        }
        let mut slot = 0;
        for (pos, tok) in u
            .text
            .split_whitespace()
            .take(MAX_TEMPLATE_TOKENS)
            .enumerate()
        {
            if tt.get(pos).is_some_and(|x| x == "<*>") {
                if t.slots.len() <= slot {
                    t.slots.push(HashMap::new());
                }
                let m = &mut t.slots[slot];
                if m.len() < MAX_SLOT_VALUES || m.contains_key(tok) {
                    *m.entry(tok.to_string()).or_default() += 1;
                }
                slot += 1;
            }
        }
    }
    for (t, toks) in templates.iter_mut().zip(&toks_of) {
        t.text = toks.join(" ");
    }
}
