//! Which numeric fields and template slots have extremes worth showing: not identifiers,
//! positions, clocks or categories; measures weigh more, and fields the intent names most.

use super::{Dist, MIN_FIELD_UNITS};
use crate::guard::reduce::rank::{tokenize, Query};
use crate::guard::reduce::signals::number;
use crate::guard::reduce::units::{UnitKind, Units};

/// How many times its slot's median a value must reach for [`peaks`] to count it.
const PEAK_RATIO: f64 = 10.0;

/// Fewest units of a line template for [`peaks`] to compare their numbers.
const MIN_PEAK_UNITS: usize = 3;

/// Each unit's [`super::Scores::peak`]: for line templates of [`MIN_PEAK_UNITS`] or more
/// units, per numeric slot, where the unit's value sits between the template's smallest and
/// largest on a log scale (1.0 for the largest); the unit's best slot. Slots that rise in input
/// order (clocks, sequence numbers) and slots with one value are skipped. Records get 0.
pub(crate) fn peaks(u: &Units) -> Vec<f64> {
    let mut out = vec![0.0; u.units.len()];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); u.templates.len()];
    for (i, unit) in u.units.iter().enumerate() {
        if unit.kind != UnitKind::Record && unit.template < members.len() {
            members[unit.template].push(i);
        }
    }
    for (ti, m) in members.iter().enumerate() {
        if m.len() < MIN_PEAK_UNITS {
            continue;
        }
        let tt: Vec<&str> = u.templates[ti].text.split(' ').collect();
        let slots: Vec<usize> = (0..tt.len()).filter(|&p| tt[p] == "<*>").collect();
        for &p in &slots {
            let vals: Vec<(usize, f64)> = m
                .iter()
                .filter_map(|&i| {
                    let tok = u.units[i].text.split_whitespace().nth(p)?;
                    Some((i, number(tok.trim_end_matches([',', ';', ':']))?))
                })
                .filter(|(_, v)| v.is_finite() && *v >= 0.0)
                .collect();
            if vals.len() < MIN_PEAK_UNITS {
                continue;
            }
            let ups = vals.windows(2).filter(|w| w[1].1 > w[0].1).count();
            if ups * 10 >= (vals.len() - 1) * 9 {
                continue;
            }
            // Only an outlier peaks (`28898` among `0`, `1`, `2`): a slot whose largest value
            // is within [`PEAK_RATIO`] of its median (clocks, ids, sizes spread evenly) says
            // nothing about which unit matters.
            let mut sorted: Vec<f64> = vals.iter().map(|v| v.1).collect();
            sorted.sort_by(f64::total_cmp);
            let median = sorted[sorted.len() / 2];
            if sorted[sorted.len() - 1] < PEAK_RATIO * median.max(1.0) {
                continue;
            }
            let lo = vals
                .iter()
                .map(|v| v.1)
                .fold(f64::INFINITY, f64::min)
                .ln_1p();
            let hi = vals.iter().map(|v| v.1).fold(0.0, f64::max).ln_1p();
            if hi - lo < 1e-9 {
                continue;
            }
            for (i, v) in vals {
                let x = ((v.ln_1p() - lo) / (hi - lo)).clamp(0.0, 1.0);
                out[i] = f64::max(out[i], x);
            }
        }
    }
    out
}

/// True for a token that points into a file (`(ClassLoader.java:767)`, `src/main.rs:12:5`,
/// `app.py:88`): its number is a line, a position and not a measure, so its extremes say
/// nothing (a stack trace's deepest frame is not its largest anything).
pub(crate) fn line_ref(tok: &str) -> bool {
    let b = tok.as_bytes();
    // `.ext:` then a digit, the extension 1 to 6 letters after a name character.
    b.iter().enumerate().any(|(i, &c)| {
        c == b':' && b.get(i + 1).is_some_and(u8::is_ascii_digit) && {
            let ext = b[..i]
                .iter()
                .rev()
                .take_while(|x| x.is_ascii_alphabetic())
                .count();
            (1..=6).contains(&ext)
                && i > ext + 1
                && b[i - ext - 1] == b'.'
                && (b[i - ext - 2].is_ascii_alphanumeric() || b[i - ext - 2] == b'_')
        }
    })
}

/// Field names that are identifiers, positions or times: their extremes say nothing.
fn ordinal_name(name: &str) -> bool {
    let n = name
        .rsplit(['.', '/'])
        .next()
        .unwrap_or(name)
        .to_ascii_lowercase();
    let n = n.trim_end_matches("[]");
    n == "id"
        || n.ends_with("_id")
        || n.ends_with("id") && n.len() <= 4
        || n.ends_with("ids")
        || matches!(
            n,
            "pid"
                | "ppid"
                | "uid"
                | "gid"
                | "port"
                | "line"
                | "lineno"
                | "line_number"
                | "column"
                | "col"
                | "index"
                | "idx"
                | "seq"
                | "sequence"
                | "timestamp"
                | "time"
                | "ts"
                | "date"
                | "year"
                | "month"
                | "day"
                | "hour"
                | "minute"
                | "second"
                | "version"
                | "number"
                | "no"
                | "nr"
                | "start"
                | "end"
                | "offset"
                | "row"
                | "startline"
                | "endline"
                | "start_line"
                | "end_line"
                | "ln"
                | "lines"
        )
}

/// Words of field names that measure something worth ranking by size (durations, sizes,
/// counts, costs): their extremes weigh more.
const MEASURE_WORDS: &[&str] = &[
    "time",
    "duration",
    "elapsed",
    "latency",
    "took",
    "ms",
    "size",
    "bytes",
    "length",
    "len",
    "count",
    "total",
    "mem",
    "memory",
    "rss",
    "vsz",
    "heap",
    "cpu",
    "pause",
    "cost",
    "score",
    "usage",
    "used",
    "avail",
    "load",
    "rate",
    "hits",
    "misses",
    "requests",
    "errors",
    "retries",
    "weight",
    "amount",
    "price",
    "percent",
    "pct",
    "calls",
    "samples",
    "self",
    "cumulative",
];

fn measure_like(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    MEASURE_WORDS.iter().any(|w| lower.contains(w))
}

/// True when word `p` of `toks` is a byte of a run of hex bytes (objdump's `48 83 c5 30`, a
/// hexdump's row): two hex digits among neighbours of two, one of the run with a letter. Its
/// digits are no decimal number (`30` is 0x30).
pub(super) fn hex_byte(toks: &[&str], p: usize) -> bool {
    let byte = |t: &&str| t.len() == 2 && t.bytes().all(|b| b.is_ascii_hexdigit());
    if !toks.get(p).is_some_and(byte) {
        return false;
    }
    let start = (0..p)
        .rev()
        .take_while(|&k| byte(&toks[k]))
        .last()
        .unwrap_or(p);
    let end = (p..toks.len())
        .take_while(|&k| byte(&toks[k]))
        .last()
        .unwrap_or(p);
    end > start
        && toks[start..=end]
            .iter()
            .any(|t| t.bytes().any(|b| b.is_ascii_alphabetic()))
}

/// Fewest values of a measure the question names for [`extreme_field`] to rank them.
pub(super) const MIN_NAMED_UNITS: usize = 4;

/// The weight of a numeric field's extremes and its top units, or `None` when its extremes
/// mean nothing (too few values, all equal, ids, monotonic sequences such as timestamps).
pub(super) fn extreme_field(
    name: &str,
    mut vals: Vec<(f64, usize)>,
    dist: &Dist,
    q: &Query,
    lo: bool,
    top_n: usize,
    ranked: bool,
) -> Option<(f64, Vec<(f64, usize)>)> {
    let name_terms = tokenize(name);
    let named = name_terms.iter().filter(|t| q.names_word(t)).count();
    // A measure the question names is ranked among fewer values (the six `Overfull \hbox
    // (973.2854pt too wide)` lines of a LaTeX log, asked which is widest).
    let fewest = if named > 0 {
        MIN_NAMED_UNITS
    } else {
        MIN_FIELD_UNITS
    };
    if vals.len() < fewest || ordinal_name(name) {
        return None;
    }
    // Rising in input order: a sequence or a clock (a column sorted largest first, as `ps`
    // or `du | sort -rn` print, keeps its extremes).
    let ups = vals.windows(2).filter(|w| w[1].0 > w[0].0).count();
    if ups * 10 >= (vals.len() - 1) * 9 {
        return None;
    }
    let min = vals.iter().map(|v| v.0).fold(f64::INFINITY, f64::min);
    let max = vals.iter().map(|v| v.0).fold(f64::NEG_INFINITY, f64::max);
    if max <= min || numbering(&vals, min, max) {
        return None;
    }
    // A categorical field of numbers (status codes, levels) is not a measure.
    if dist.categorical() && !measure_like(name) {
        return None;
    }
    let mut w = 0.5;
    if measure_like(name) {
        w = 0.8;
    }
    if named > 0 {
        // Of `minLatency`, `maxLatency`, `avgLatency`, the one whose every word the intent
        // names ("the worst maximum latency") first.
        w = 1.0 + 0.05 * (named - 1).min(2) as f64;
    } else if ranked {
        // The intent asks for a ranking: any measure may be it.
        w = f64::max(w, 0.7);
    }
    if lo {
        vals.sort_by(|a, b| a.0.total_cmp(&b.0));
    } else {
        vals.sort_by(|a, b| b.0.total_cmp(&a.0));
    }
    vals.truncate(top_n);
    Some((w, vals))
}

/// True when `vals` number things rather than measure them: whole numbers, each once, that
/// fill the range from `min` to `max` (gdb's `Thread 154` down to `Thread 1`, test cases 1 to
/// 40 in any order). A measure, even sorted, leaves gaps or repeats.
pub(super) fn numbering(vals: &[(f64, usize)], min: f64, max: f64) -> bool {
    if vals.iter().any(|v| v.0.fract() != 0.0) || max - min + 1.0 != vals.len() as f64 {
        return false;
    }
    let mut seen: Vec<f64> = vals.iter().map(|v| v.0).collect();
    seen.sort_by(f64::total_cmp);
    seen.dedup();
    seen.len() == vals.len()
}

/// Fewest line templates a quantity's numbers must come from for [`quantities`] to make one
/// series of them (a single template's slot is a series of its own already).
const MIN_QUANTITY_TEMPLATES: usize = 2;

/// A noun's numbers (value, unit) and the templates they come from.
type NounSeries = (Vec<(f64, usize)>, Vec<usize>);

/// Counts of one noun written across line templates: `# Loop 0 : loop with 145 ops` and
/// `# bridge out of Guard 3 with 260 ops` are two templates (each too small to rank alone)
/// whose numbers count `ops`. Per noun, the numbers of every template slot followed by it (a
/// word of letters only, lowercased, two or more letters), with their units; only nouns that
/// [`MIN_QUANTITY_TEMPLATES`] or more templates share. Records and shaped templates are left
/// to their fields.
pub(super) fn quantities(u: &Units) -> Vec<(String, Vec<(f64, usize)>)> {
    let mut by_noun: std::collections::BTreeMap<String, NounSeries> =
        std::collections::BTreeMap::new();
    for (i, unit) in u.units.iter().enumerate() {
        if unit.kind != UnitKind::Line {
            continue;
        }
        let Some(t) = u.templates.get(unit.template) else {
            continue;
        };
        if t.shaped || t.count >= MIN_FIELD_UNITS * 4 {
            continue;
        }
        let tt: Vec<&str> = t.text.split(' ').collect();
        let toks: Vec<&str> = unit.text.split_whitespace().collect();
        if toks.len() != tt.len() {
            continue;
        }
        for p in 0..tt.len().saturating_sub(1) {
            let noun = tt[p + 1];
            if tt[p] != "<*>"
                || noun.len() < 2
                || !noun.bytes().all(|b| b.is_ascii_alphabetic())
                || line_ref(toks[p])
            {
                continue;
            }
            let Some(x) = number(toks[p]).filter(|_| !hex_byte(&toks, p)) else {
                continue;
            };
            let e = by_noun.entry(noun.to_ascii_lowercase()).or_default();
            e.0.push((x, i));
            if !e.1.contains(&unit.template) {
                e.1.push(unit.template);
            }
        }
    }
    by_noun
        .into_iter()
        .filter(|(_, (_, ts))| ts.len() >= MIN_QUANTITY_TEMPLATES)
        .map(|(noun, (vals, _))| (noun, vals))
        .collect()
}
