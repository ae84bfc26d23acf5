//! Facts mined from the whole input for the Key facts: counts per template and per value of
//! categorical fields and template slots, and small objects shown whole.

use super::{field_dists, normalise, slot_dist, summary_key, Dist};
use crate::guard::reduce::rank::{bm25, stem, Query};
use crate::guard::reduce::select::Headers;
use crate::guard::reduce::units::Units;
use crate::guard::reduce::{clip_str, show_line_max};

/// A fact mined from the whole input, for the Key facts section.
#[derive(Debug, Clone)]
pub struct Fact {
    /// The rendered fact.
    pub text: String,
    /// Anchor line, if any.
    pub line: Option<usize>,
    /// 0..=1: how much it matters (relevance to the intent, rarity, summary-ness).
    pub weight: f64,
    /// It lists what the question asks for (the records a value it names picks): proposed
    /// with the units that match the intent, not with the counts.
    pub answers: bool,
}

/// Renders a count the way the summary states counts: `×N` (a count toolsum made, never read
/// as a figure quoted from the input).
fn times(n: usize) -> String {
    format!("×{n}")
}

/// The top counts of a distribution, largest first: two distributions with the same
/// signature state the same counts.
fn signature(d: &Dist) -> Vec<usize> {
    let mut c: Vec<usize> = d.counts.iter().map(|x| x.1).collect();
    c.sort_unstable_by(|a, b| b.cmp(a));
    c.truncate(6);
    c
}

/// What a distribution of [`MIN_TALLY_VALUES`] or more values counts: its most frequent
/// value with its count, and all its values, sorted. Two alike (a field's values and the same
/// field's template slot) tell one thing; the same values led by other counts (before and
/// after) are two distributions.
type Tally = Option<(String, usize, Vec<String>)>;

/// Fewest values a distribution counts for [`tally`] to compare it.
const MIN_TALLY_VALUES: usize = 3;

/// The [`Tally`] of `d`.
fn tally(d: &Dist) -> Tally {
    let (lead, n) = d.counts.first()?;
    let mut names: Vec<String> = d.counts.iter().map(|c| c.0.clone()).collect();
    names.sort();
    (names.len() >= MIN_TALLY_VALUES).then(|| (lead.clone(), *n, names))
}

/// Facts mined from the whole input: counts per template, per value of categorical fields and
/// template slots (a slot's counts once when a field states them too), and small objects
/// shown whole. `headers` names records of indented text that have no naming field (the line
/// that opens each one's block); [`Headers::default`] for none.
pub fn facts(u: &Units, q: &Query, headers: &Headers) -> Vec<Fact> {
    let mut out = Vec::new();
    let mut slot_sigs: Vec<(usize, Vec<usize>, Tally)> = Vec::new();
    let n = u.units.len().max(1);
    // Templates by count (line inputs that repeat).
    if !u.structured {
        let texts: Vec<String> = u.templates.iter().map(|t| t.text.clone()).collect();
        let mut rel = bm25(q, &texts);
        normalise(&mut rel);
        let mut order: Vec<usize> = (0..u.templates.len())
            .filter(|&i| u.templates[i].count >= 3 && !u.templates[i].shaped)
            .collect();
        order.sort_by(|&a, &b| {
            let ka = u.templates[a].count as f64 / n as f64 + rel[a];
            let kb = u.templates[b].count as f64 / n as f64 + rel[b];
            kb.total_cmp(&ka)
        });
        for &i in order.iter().take(5) {
            let t = &u.templates[i];
            let example = u
                .units
                .iter()
                .find(|x| x.template == i)
                .map(|x| show_line_max(&x.text, 140))
                .unwrap_or_default();
            out.push(Fact {
                text: format!(
                    "{} lines like L{}: {} (first L{}, last L{})",
                    times(t.lines),
                    t.first,
                    example,
                    t.first,
                    t.last
                ),
                line: None,
                weight: 0.35 + 0.4 * rel[i] + 0.25 * (t.count as f64 / n as f64),
                answers: false,
            });
            // Counts per value of a categorical slot ("requests per endpoint").
            for m in &t.slots {
                let d = slot_dist(m, t.count);
                if d.categorical() {
                    let vals: Vec<String> = d.counts.iter().map(|c| c.0.clone()).collect();
                    let vrel = bm25(q, &vals).iter().cloned().fold(0.0, f64::max);
                    // Asked a question none of the slot's values answer, the counts of a
                    // line's variable part (times, hex bytes, frame names) are noise that
                    // costs the excerpts their room: dev 522 the same, every holdout batch
                    // the same or +1 (session 31). With no question they are the best guess.
                    if !q.is_empty() && vrel <= 0.0 {
                        continue;
                    }
                    slot_sigs.push((out.len(), signature(&d), tally(&d)));
                    out.push(Fact {
                        // The count of lines says the values are counted in them only:
                        // `503 ×40` of one line shape was read as every 503 (trial 46: 61).
                        text: format!(
                            "values in the {} lines like L{}: {}",
                            crate::guard::reduce::fmt_num(t.lines),
                            t.first,
                            dist_text(&d)
                        ),
                        line: None,
                        weight: 0.3 + 0.4 * (vrel > 0.0) as u8 as f64 + 0.3 * rel[i],
                        answers: false,
                    });
                }
            }
        }
    }
    // Categorical fields of records.
    let dists = field_dists(u);
    let names: Vec<String> = dists
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d.name,
                d.counts
                    .iter()
                    .take(12)
                    .map(|c| c.0.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        })
        .collect();
    let mut rel = bm25(q, &names);
    normalise(&mut rel);
    let mut cats: Vec<(f64, usize)> = dists
        .iter()
        .enumerate()
        // A column headed by a source location (`# eval.c:1327:` over `gcc -fverbose-asm`'s
        // lines, trial of session 51) is an aligned line read as a header, not a field.
        .filter(|(_, d)| {
            d.categorical() && d.n * 5 >= n.min(d.n * 5) && !super::extremes::line_ref(&d.name)
        })
        .map(|(i, d)| {
            let rare = d.counts.iter().any(|(v, _)| d.rarity(v) > 0.0) as u8 as f64;
            (0.2 + 0.5 * rel[i] + 0.3 * rare, i)
        })
        .collect();
    cats.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut field_sigs = Vec::new();
    let mut field_tallies: Vec<Tally> = Vec::new();
    for (w, i) in cats {
        if field_sigs.len() == 4 {
            break;
        }
        // A field counting what one taken counts (`Hardware Class:` and `Class:` of
        // `hwinfo`, live set of session 55) is the same fact again.
        let t = tally(&dists[i]);
        if t.is_some() && field_tallies.contains(&t) {
            continue;
        }
        field_tallies.push(t);
        field_sigs.push(signature(&dists[i]));
        let list;
        let shown = if dists[i].name.ends_with("[]") {
            list = super::fields::list_dist(u, i);
            &list
        } else {
            &dists[i]
        };
        out.push(Fact {
            text: format!("{}: {}", shown_path(&dists[i].name), dist_text(shown)),
            line: None,
            weight: w,
            answers: false,
        });
    }
    // The records a value the question names picks, by their names.
    out.extend(super::chosen::chosen(u, &dists, q, headers));
    // A slot's counts that a field states already (`path=/a ×3` and `path: /a ×3`) once.
    // Or the same values led by the same value and count (the slot's lines are some of the
    // field's).
    let dup: std::collections::HashSet<usize> = slot_sigs
        .iter()
        .filter(|(_, sig, t)| field_sigs.contains(sig) || t.is_some() && field_tallies.contains(t))
        .map(|(k, _, _)| *k)
        .collect();
    if !dup.is_empty() {
        let mut k = 0;
        out.retain(|_| {
            k += 1;
            !dup.contains(&(k - 1))
        });
    }
    // Small objects shown whole: summaries and the ones the intent names.
    if !u.objects.is_empty() {
        let docs: Vec<String> = u
            .objects
            .iter()
            .map(|(_, p, r)| format!("{p} {}", clip_str(r, 300)))
            .collect();
        let mut rel = bm25(q, &docs);
        normalise(&mut rel);
        // A question about what failed or passed is answered in part by a run's totals
        // (`"stats": {"expected": 78, "unexpected": 3, "flaky": 6}`), whatever their words.
        let outcome = OUTCOME_WORDS.iter().any(|w| q.has(&stem(w))) as u8 as f64;
        let mut objs: Vec<(f64, usize)> = u
            .objects
            .iter()
            .enumerate()
            .map(|(i, (_, p, _))| {
                let sum = summary_key(p) as u8 as f64;
                let shallow = 1.0 / p.split('.').count() as f64;
                (
                    0.25 + 0.4 * rel[i] + (0.25 + OUTCOME_BONUS * outcome) * sum + 0.1 * shallow,
                    i,
                )
            })
            .collect();
        objs.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (w, i) in objs.into_iter().take(4) {
            let (line, path, r) = &u.objects[i];
            out.push(Fact {
                text: object_text(path, r),
                line: Some(*line),
                weight: w,
                // A run's totals under a question about its outcome answer it.
                answers: outcome > 0.0 && summary_key(path),
            });
        }
    }
    out
}

/// Words of a question about a run's outcome: a summary object (its totals) answers it.
const OUTCOME_WORDS: &[&str] = &[
    "fail", "failed", "failing", "failure", "pass", "passed", "passing", "succeed", "success",
    "error", "errors", "broken", "flaky",
];

/// What a summary object's weight gains under such a question: a top-level one (1.1) ranks
/// above a value the question names (0.9) and the best relevance match (1.0). (0.3: level
/// with those, it lost to them; playwright_a1's `"unexpected": 3` was not shown.)
const OUTCOME_BONUS: f64 = 0.5;

/// A small object as a fact shows it: its path, and its own key as the file writes it before
/// it (`… › attributes › "ami":{"type":"string","required":true}`), so key and object read as
/// one quote of the file.
fn object_text(path: &str, r: &str) -> String {
    let (parent, key) = path.rsplit_once('.').unwrap_or(("", path));
    if key.is_empty() || key.contains(['[', ']', '"']) {
        return format!("{}: {r}", shown_path(path));
    }
    let sep = if r.contains("\": ") || r.starts_with("{ ") {
        ": "
    } else {
        ":"
    };
    if parent.is_empty() {
        format!("\"{key}\"{sep}{r}")
    } else {
        format!("{} › \"{key}\"{sep}{r}", shown_path(parent))
    }
}

/// A field or object path as a fact names it: segments joined by ` › ` rather than `.` or
/// `/`, so that a path we built (`slices.64513:775.HitTest`, `set/item/price`) never reads
/// as a file path or `file:line` quoted from the output.
pub fn shown_path(p: &str) -> String {
    p.replace(['.', '/'], " › ")
}

/// `v1 ×n1, v2 ×n2, ...` most frequent first; rare values always shown; at most 10.
fn dist_text(d: &Dist) -> String {
    let mut shown: Vec<&(String, usize)> = d.counts.iter().take(8).collect();
    for c in d.counts.iter().skip(8) {
        if d.rarity(&c.0) > 0.0 && shown.len() < 10 {
            shown.push(c);
        }
    }
    let mut s = shown
        .iter()
        .map(|(v, c)| format!("{} {}", show_line_max(v, 60), times(*c)))
        .collect::<Vec<_>>()
        .join(", ");
    if d.counts.len() > shown.len() {
        s.push_str(&format!(
            ", and {} more values",
            d.counts.len() - shown.len()
        ));
    }
    s
}
