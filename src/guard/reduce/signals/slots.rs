//! Extremes of line templates' number slots (`took <*>ms`, `blob <sha> <*> <path>`): each
//! slot's numbers, split into series by the category words at the template's other slots,
//! ranked like a field's values.

use std::collections::HashMap;

use super::extremes::{self, extreme_field};
use super::fields::{self, Dist};
use super::{number, placeholder, RankedField, Side, MIN_FIELD_UNITS, MIN_NUMERIC_TENTHS};
use crate::guard::reduce::intent::Asks;
use crate::guard::reduce::rank::{tokenize, Query};
use crate::guard::reduce::select::is_banner;
use crate::guard::reduce::units::{UnitKind, Units};

/// Fewest words of a section's banner the question must write for the banner to name the
/// numbers of its lines ([`slot_extremes`]): one shared word (`table`) names too much.
const MIN_TITLE_TERMS: usize = 2;
/// Longest banner title used as a label, in bytes.
const TITLE_BYTES: usize = 60;

/// What a template slot's extremes weigh when no word names its numbers (no literal token
/// before or after it), against a slot a word labels (measured: dev +3, holdout sets 0).
const UNNAMED_SLOT: f64 = 0.85;

/// The rankings of every template slot that measures something, on side `lo` (smallest
/// first when true), each with its `top_n` lines: `(weight, "<label> (in lines like L<n>)",
/// top values, None, side)`.
pub(super) fn slot_extremes(
    u: &Units,
    q: &Query,
    asks: &Asks,
    lo: bool,
    top_n: usize,
) -> Vec<RankedField> {
    let mut ranked: Vec<RankedField> = Vec::new();
    // The banners that title a report's sections (`*** Page counts for all tables with their
    // indices ***`), by line: the name of the numbers no word on their own lines names.
    let banners: Vec<(usize, &str)> = u
        .units
        .iter()
        .filter(|x| x.kind == UnitKind::Line && is_banner(&x.text))
        .map(|x| (x.line, x.text.as_str()))
        .collect();
    for (ti, t) in u.templates.iter().enumerate() {
        if t.count < extremes::MIN_NAMED_UNITS || t.shaped {
            continue;
        }
        let tt: Vec<&str> = t.text.split(' ').collect();
        let slots = tt.iter().filter(|x| **x == "<*>").count();
        // The slots whose words are a category (a few values: `blob`, `tree`), not a name
        // of each line (a path, an id): only those split a slot's numbers into series.
        let mut distinct: Vec<std::collections::HashSet<&str>> = vec![Default::default(); slots];
        for unit in u.units.iter().filter(|x| x.template == ti) {
            let mut k = 0;
            for (p, tok) in unit.text.split_whitespace().enumerate().take(tt.len()) {
                if tt[p] == "<*>" {
                    if distinct[k].len() <= MAX_SLOT_SERIES {
                        distinct[k].insert(tok);
                    }
                    k += 1;
                }
            }
        }
        let category = |k: usize| distinct[k].len() <= MAX_SLOT_SERIES;
        for slot in 0..slots {
            // The slot's numbers, by the words the template's other slots hold (`# of
            // <*> failures <*>`: the unexpected failures are one series, the expected
            // another).
            let mut series: std::collections::BTreeMap<Vec<String>, Series> =
                std::collections::BTreeMap::new();
            // A line written again word for word (`Retention index (RI) = 0.7727` of 60 of
            // 89 trees) is one value, not the smallest three times over.
            let mut said: std::collections::HashSet<&str> = Default::default();
            let mut slot_lines = 0usize;
            let pos = tt
                .iter()
                .enumerate()
                .filter(|(_, x)| **x == "<*>")
                .nth(slot)
                .map_or(0, |(p, _)| p);
            // The unit the template writes after the slot, the same on every line of it.
            let scale = unit_scale(tt.get(pos + 1).copied());
            // Or the units a slot right after it holds, a few of them (`46 bytes each:` and
            // `1 byte each:` of `fdupes -S`, trial of session 50): each line's own.
            let unit_slot = (tt.get(pos + 1) == Some(&"<*>"))
                .then(|| &distinct[slot + 1])
                .filter(|d| {
                    !d.is_empty() && d.len() <= MAX_SLOT_SERIES && d.iter().all(|w| unit_word(w))
                })
                .and_then(|d| d.iter().max_by_key(|w| (w.len(), **w)).copied());
            for (i, unit) in u.units.iter().enumerate().filter(|(_, x)| x.template == ti) {
                if !said.insert(unit.text.trim()) {
                    continue;
                }
                let mut k = 0;
                let mut val = None;
                let mut counted = false;
                let mut words: Vec<String> = Vec::new();
                let toks: Vec<&str> = unit.text.split_whitespace().collect();
                for (p, &tok) in toks.iter().enumerate().take(tt.len()) {
                    if tt[p] == "<*>" {
                        if k == slot {
                            val = fields::slot_number(tok)
                                .filter(|_| {
                                    !extremes::line_ref(tok)
                                        && !extremes::hex_byte(&toks, p)
                                        && !gutter(&toks, p)
                                })
                                .map(|x| {
                                    let own = unit_slot.and(toks.get(p + 1).copied());
                                    x * own.map_or(scale, |u| unit_scale(Some(u)))
                                });
                            counted = !placeholder(tok);
                        } else if number(tok).is_none()
                            && !tok.chars().any(|c| c.is_ascii_digit())
                            && category(k)
                        {
                            words.push(tok.to_string());
                        }
                        k += 1;
                    }
                }
                slot_lines += usize::from(counted || val.is_some());
                if let Some(x) = val {
                    series.entry(words).or_default().push((x, i));
                }
            }
            // A slot mostly of other tokens (objdump's opcode bytes `c5`, `f0` beside `30`)
            // is no measure, as a field of mostly words is not.
            let numbers: usize = series.values().map(Vec::len).sum();
            if numbers * 10 < slot_lines * MIN_NUMERIC_TENTHS {
                continue;
            }
            // Words that split the series into a few large ones (a category); ids or names
            // unique to each line split nothing.
            let big = series
                .values()
                .filter(|v| v.len() >= MIN_FIELD_UNITS)
                .count();
            let series: Vec<(Vec<String>, Series)> =
                if series.len() >= 2 && series.len() <= MAX_SLOT_SERIES && big == series.len() {
                    series.into_iter().collect()
                } else {
                    vec![(Vec::new(), series.into_values().flatten().collect())]
                };
            // The label of a slot: the nearest literal token before it; but a count written
            // before its noun after a clause's end (`…input, <*> bytes`, `…collisions, <*>
            // interface resets`) is labelled by the words after it.
            let before = tt[..pos].iter().rev().find(|x| **x != "<*>").copied();
            // A closing bracket ends the words, not the label (`(4 lines, 36 tokens)`: the
            // 36 is in `tokens`; read as `lines`, the one before it, the trial of session 47
            // ranked token counts as the smallest lines).
            let after: Vec<&str> = tt
                .get(pos + 1..)
                .unwrap_or(&[])
                .iter()
                .take(2)
                .map(|x| x.trim_end_matches([')', ']', '}']))
                .take_while(|x| !x.is_empty() && x.chars().all(|c| c.is_alphabetic() || c == ','))
                .collect();
            let after = after
                .iter()
                .position(|x| x.ends_with(','))
                .map_or(&after[..], |k| &after[..=k])
                .iter()
                .map(|x| x.trim_end_matches(','))
                .collect::<Vec<_>>()
                .join(" ");
            let no_word = before.is_none() && after.is_empty();
            // A number written before its unit (`83077 ns/op  4080 B/op  538 allocs/op`) is
            // named by that unit, unless a word names it first (`took <*> ms` is a `took`):
            // the literal before it is then the last value's unit or a number.
            let unit_after = tt
                .get(pos + 1)
                .copied()
                .filter(|x| unit_word(x))
                .or(unit_slot)
                .filter(|_| {
                    // `0.01 secs: 1532634 bytes` (siege, trial of session 55): the `secs:`
                    // before the bytes is the last value's unit, colon and all.
                    before.is_none_or(|b| {
                        unit_word(b) || unit_word(b.trim_end_matches(':')) || number(b).is_some()
                    })
                });
            // A slot right after another (`[938:22 - 948:12] (801 lines, …)`) is named by the
            // words after it when it has them: the literal before both names the first.
            let after_slot = pos > 0 && tt[pos - 1] == "<*>";
            // A number no word on its line names, in a section a banner titles with words
            // the question writes (sqlite3_analyzer's `SF_TEMPS....... 154  31.7%` rows under
            // `*** Page counts for all tables with their indices ***`, asked which tables use
            // the most pages; trial and live set of session 47): named by that title.
            let titled = no_word
                .then(|| {
                    let first = series
                        .iter()
                        .flat_map(|s| &s.1)
                        .map(|v| u.units[v.1].line)
                        .min()?;
                    let k = banners.partition_point(|b| b.0 < first);
                    let title = banners[..k]
                        .last()?
                        .1
                        .trim_matches(|c: char| c.is_whitespace() || "=-*#~".contains(c));
                    let named = tokenize(title).iter().filter(|t| q.names_word(t)).count();
                    (named >= MIN_TITLE_TERMS)
                        .then(|| crate::guard::reduce::clip_str(title, TITLE_BYTES).to_string())
                })
                .flatten();
            let label = match before {
                _ if titled.is_some() => titled.clone().unwrap_or_default(),
                _ if unit_after.is_some() => unit_after.unwrap_or_default().to_string(),
                _ if after_slot && !after.is_empty() => after,
                Some(b) if !b.ends_with([',', ';']) => b.to_string(),
                _ if !after.is_empty() => after,
                Some(b) => b.to_string(),
                None => "value".to_string(),
            };
            // A number no word names (`setfield_gc(p159, 291, descr=…)`: no literal token
            // before or after it). A label of punctuation (`i155 = int_sub(…)`'s `=`) is not
            // counted as unnamed: that cost the `_d` holdout 2 facts.
            let unnamed = no_word && titled.is_none();
            // A dot leader joined to its name (`Percentage of total database.......... 90.3%`,
            // sqlite3_analyzer's report, live set of session 47) is no part of the label.
            let literal = leaderless(&label);
            if code_word(literal) {
                continue;
            }
            for (words, mut vals) in series {
                vals.sort_by_key(|v| v.1);
                let label = if words.is_empty() {
                    literal.to_string()
                } else {
                    let words: Vec<&str> = words.iter().map(|w| leaderless(w)).collect();
                    format!("{} {literal}", words.join(" "))
                };
                let d = Dist::series(&label, vals.len());
                // A number no word names is named by the word of its series the question
                // writes (`blob <sha> 615304 <path>` among `tree …` lines, asked which blob
                // is the largest).
                let series_named = words
                    .iter()
                    .any(|w| tokenize(w).iter().any(|t| q.names_word(t)));
                if let Some(r) = extreme_field(&label, vals, &d, q, lo, top_n, asks.ranked()) {
                    ranked.push((
                        r.0 * 0.9
                            * if unnamed && !series_named {
                                UNNAMED_SLOT
                            } else {
                                1.0
                            },
                        format!("{label} (in lines like L{})", t.first),
                        r.1,
                        None,
                        Side::of(lo),
                    ));
                }
            }
        }
    }
    ranked
}

/// True when token `p` of a line is the line number in the gutter of a quoted source line
/// (` 2811 |  lastInner.toArray( vertices, 3 * 3 );` under an oxlint or rustc diagnostic,
/// biome's `> 978 │`): the first token, or the one after a `>` mark, before a bar. A line
/// of the file quoted, no measure (trial of session 50 ranked it the largest).
fn gutter(toks: &[&str], p: usize) -> bool {
    toks.get(p + 1).is_some_and(|t| matches!(*t, "|" | "│"))
        && toks[..p].iter().all(|t| *t == ">")
        && p <= 1
}

/// True for a label whose number is a code, not a measure: make's `*** [Makefile:12: all]
/// Error 2`, `exit 1`, `status 404`, `errno 13`, `signal 9`. Their largest is no answer (live
/// set of session 54 ranked make's `Error 2` above its `Error 1`).
pub(super) fn code_word(label: &str) -> bool {
    let w = label.trim_end_matches([':', '=', ',']).to_ascii_lowercase();
    matches!(
        w.as_str(),
        "error" | "exit" | "status" | "code" | "rc" | "errno" | "signal" | "returncode"
    )
}

/// `word` without the dot leader joined to it (`database.........` -> `database`); a word
/// ending in one dot (`etc.`) stays.
fn leaderless(word: &str) -> &str {
    if word.ends_with("..") {
        word.trim_end_matches('.')
    } else {
        word
    }
}

/// A unit of measure written after its number (`ns/op`, `B/op`, `allocs/op`, `ms`, `KiB`,
/// `bytes`, `%`, `req/s`): a few letters, `%`, or a word per word (`ops/sec`).
pub(super) fn unit_word(tok: &str) -> bool {
    const UNITS: &[&str] = &[
        "ns", "us", "µs", "ms", "s", "sec", "secs", "seconds", "B", "KB", "MB", "GB", "TB", "kB",
        "KiB", "MiB", "GiB", "TiB", "bytes", "byte", "%",
    ];
    if UNITS.contains(&tok) {
        return true;
    }
    tok.split_once('/').is_some_and(|(a, b)| {
        !a.is_empty()
            && a.len() <= 8
            && (1..=5).contains(&b.len())
            && a.chars().all(|c| c.is_alphabetic())
            && b.chars().all(|c| c.is_ascii_lowercase())
    })
}

/// What a number is multiplied by when the template writes `unit` after it: a size or a
/// duration in bytes or seconds (`19.9 MiB` is 20,866,662), so a slot ranked with the same
/// slot of another template (the lines written in `KiB` and those in `B`) compares sizes, not
/// digits. 1 for no unit or one that is no size or duration.
fn unit_scale(unit: Option<&str>) -> f64 {
    match unit {
        Some(u) if unit_word(u) && !u.contains('/') => {
            fields::number(&format!("1{u}")).unwrap_or(1.0)
        }
        _ => 1.0,
    }
}

/// Template slots of one label ranked on the same side (`root/root <*>` of a `tar tv` listing,
/// split into templates by how many words its file names have), by (label, side): the top
/// `top_n` of their values together, so that one line is the largest, not one per template.
/// Fields are left out.
pub(super) fn slot_rankings(
    ranked: &[RankedField],
    top_n: usize,
) -> HashMap<(String, Side), Series> {
    let mut out: HashMap<(String, Side), Series> = HashMap::new();
    for r in ranked.iter().filter(|r| r.3.is_none()) {
        out.entry((slot_label(&r.1).to_string(), r.4))
            .or_default()
            .extend(r.2.iter().copied());
    }
    for ((_, side), vals) in out.iter_mut() {
        if side.low() {
            vals.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        } else {
            vals.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        }
        vals.dedup_by_key(|v| v.1);
        vals.truncate(top_n);
    }
    out
}

/// A slot's ranked name as an annotation shows it: a label with no letter outside its
/// parenthesised parts (`|` before a massif tree's `->18.00% (5,258,400B)`, `(in
/// /usr/bin/gawk) |`; trial of session 51: "meaningless") reads `value`, the template kept.
pub(crate) fn readable(name: &str) -> String {
    let label = slot_label(name);
    let mut depth = 0usize;
    let named = label.chars().any(|c| {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        depth == 0 && c.is_alphabetic()
    });
    if named {
        name.to_string()
    } else {
        format!("value{}", &name[label.len()..])
    }
}

/// A ranked entry's name without the template it was read in (` (in lines like L71)`).
pub(super) fn slot_label(name: &str) -> &str {
    name.find(" (in lines like L").map_or(name, |k| &name[..k])
}

/// A numeric series: each value with its unit's index.
pub(super) type Series = Vec<(f64, usize)>;

/// Most series one template slot is split into by the words at its other slots.
const MAX_SLOT_SERIES: usize = 4;
