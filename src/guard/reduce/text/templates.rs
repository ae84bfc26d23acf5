//! Line templates: a compact Drain-style miner that groups a text's lines by their tokens,
//! differing positions turned into `<*>` ([`mine`]).

use super::super::signal::Severity;
use super::{MAX_CANDIDATES, MAX_TEMPLATE_TOKENS, SIM_PLAIN, SIM_SEVERE};
use std::collections::HashMap;

fn mask(tok: &str) -> &str {
    let hexish = tok.len() >= 8 && tok.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if tok.chars().any(|c| c.is_ascii_digit()) || hexish || (tok.contains('/') && tok.len() > 1) {
        "<*>"
    } else {
        tok
    }
}

/// True for a token that labels the value after it (`Query:`, `Database:`, `user=`): letters,
/// digits, `_` or `-`, starting with a letter, ending in `:` or `=`.
fn label(tok: &str) -> bool {
    let Some(word) = tok.strip_suffix([':', '=']) else {
        return false;
    };
    word.starts_with(|c: char| c.is_ascii_alphabetic())
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// True when two token sequences of one length differ at a position where either holds a
/// label: `# Query: contig_0` and `# BLASTN 2.14.0+` say different things, however many
/// other positions agree, so they are never one template (Drain alone would merge them at
/// 2 of 3 positions and count 16 `Query:` lines for 8).
///
/// A first token that is a status word in capitals (jscodeshift's `SKIP` and `OKK`, `PASS`,
/// `FAIL`, a level's `INFO`) is a label too: `SKIP a.js` and `OKK b.js` are two kinds of line (trial of session
/// 52: 991 `SKIP` and 430 `OKK` lines were shown as ×1425 lines like a `SKIP` one).
pub fn labels_clash<A: AsRef<str>, B: AsRef<str>>(a: &[A], b: &[B]) -> bool {
    let status = |t: &str| (2..=8).contains(&t.len()) && t.bytes().all(|c| c.is_ascii_uppercase());
    let first = match (a.first(), b.first()) {
        (Some(x), Some(y)) => {
            let (x, y) = (x.as_ref(), y.as_ref());
            x != y && (status(x) || status(y))
        }
        _ => false,
    };
    first
        || a.iter().zip(b).any(|(x, y)| {
            let (x, y) = (x.as_ref(), y.as_ref());
            x != y && (label(x) || label(y))
        })
}

/// One mined template.
#[derive(Debug, Clone)]
pub struct Template {
    /// Token sequence with `<*>` at variable positions.
    pub tokens: Vec<String>,
    /// Severity shared by its lines.
    pub sev: Severity,
    /// 1-based line numbers of its lines, ascending.
    pub lines: Vec<usize>,
}

impl Template {
    /// The template as text, `<*>` marking variable parts.
    pub fn text(&self) -> String {
        self.tokens.join(" ")
    }
}

/// Groups the non-blank lines into templates (Drain-like: bucket by severity and token count,
/// join the most similar template above a threshold, turn differing positions into `<*>`).
/// Returns the templates and, per line index (0-based), its template id.
pub fn mine(lines: &[&str], sevs: &[Severity]) -> (Vec<Template>, Vec<Option<usize>>) {
    let mut templates: Vec<Template> = Vec::new();
    let mut buckets: HashMap<(Severity, usize), Vec<usize>> = HashMap::new();
    let mut of_line = vec![None; lines.len()];
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let toks: Vec<&str> = line
            .split_whitespace()
            .take(MAX_TEMPLATE_TOKENS)
            .map(mask)
            .collect();
        let key = (sevs[i], toks.len());
        let thr = if sevs[i] == Severity::None {
            SIM_PLAIN
        } else {
            SIM_SEVERE
        };
        let bucket = buckets.entry(key).or_default();
        let mut best: Option<(usize, f64)> = None;
        for &tid in bucket.iter().rev().take(MAX_CANDIDATES) {
            let t = &templates[tid];
            let same = t
                .tokens
                .iter()
                .zip(&toks)
                .filter(|(a, b)| a.as_str() == **b)
                .count();
            let sim = same as f64 / toks.len().max(1) as f64;
            if sim >= thr && best.is_none_or(|(_, s)| sim > s) && !labels_clash(&t.tokens, &toks) {
                best = Some((tid, sim));
            }
        }
        let tid = match best {
            Some((tid, _)) => {
                let t = &mut templates[tid];
                for (a, b) in t.tokens.iter_mut().zip(&toks) {
                    if a != b {
                        *a = "<*>".to_string();
                    }
                }
                t.lines.push(i + 1);
                tid
            }
            None => {
                templates.push(Template {
                    tokens: toks.iter().map(|s| s.to_string()).collect(),
                    sev: sevs[i],
                    lines: vec![i + 1],
                });
                bucket.push(templates.len() - 1);
                templates.len() - 1
            }
        };
        of_line[i] = Some(tid);
    }
    (templates, of_line)
}
