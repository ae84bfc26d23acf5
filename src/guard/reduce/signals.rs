//! Signals: cheap, explainable scores computed the same way on every [`Unit`], whatever the
//! kind of the input, and the facts they mine from the whole input.
//!
//! | signal | what it rewards | issue 17 mechanism |
//! |---|---|---|
//! | relevance | BM25 of the unit (text and path) against the intent | 5, 6 |
//! | rarity | a rare template among frequent ones; a rare value of a categorical field | 1, 3 |
//! | salience | errors and warnings, totals and verdict lines, exit codes, summary keys | — |
//! | extremes | the largest values of a numeric field or template slot | 4 |
//! | position | the first and last units | — |
//!
//! Each score is in 0..=1. The facts ([`facts`]) are counts per template and per value of a
//! categorical field (ordered by relevance and rarity, not alphabetically), numeric extremes and
//! small objects shown whole (mechanisms 2, 3, 4, 9).

use std::collections::{HashMap, HashSet};

use super::intent::Asks;
use super::rank::{bm25, tokenize, Query};
use super::signal::{self, Severity};
use super::units::{Unit, UnitKind, Units};
use super::{clip_str, show_line_max};

/// Scores of every unit (index = unit index), each 0..=1.
#[derive(Debug, Clone, Default)]
pub struct Scores {
    /// Relevance to the intent.
    pub rel: Vec<f64>,
    /// Rarity of its template or of one of its field values.
    pub rare: Vec<f64>,
    /// Salience: error 1.0, totals/exit lines 0.9, warning 0.5, summary keys 0.6.
    pub sal: Vec<f64>,
    /// Extreme value of a numeric field or slot (the largest: 1.0, next 0.85, then 0.7).
    pub ext: Vec<f64>,
    /// First and last units.
    pub pos: Vec<f64>,
    /// Why a unit is extreme, for the unit's annotation: the field and its rank.
    pub ext_why: HashMap<usize, String>,
    /// The fields that make a unit rare or extreme (unit -> field ids), shown when the unit is
    /// a record shown in part.
    pub hot: HashMap<usize, Vec<usize>>,
}

/// Templates covering at most this share of the units are rare (when the input repeats).
const RARE_SHARE: f64 = 0.01;
/// A value of a categorical field is rare at or under this share of the field's units.
const RARE_VALUE_SHARE: f64 = 0.15;
/// Most distinct values for a field to count as categorical.
const MAX_CATEGORIES: usize = 16;
/// Weight of a rare value in a field the intent does not name (1.0 when it does).
const UNNAMED_FIELD_WEIGHT: f64 = 0.5;
/// Weight of a rare value in a field that holds a state or verdict: where an anomaly is,
/// whatever words the intent uses ("active" for `state: firing`).
const STATUS_FIELD_WEIGHT: f64 = 0.9;
/// Names of fields that hold a state or verdict.
const STATUS_FIELDS: &[&str] = &[
    "status",
    "state",
    "level",
    "severity",
    "result",
    "outcome",
    "conclusion",
    "phase",
    "health",
    "verdict",
    "action",
    "type",
    "kind",
    "priority",
    "risk",
    "confidence",
    "decision",
    "mode",
    "health_status",
    "exit_code",
    "exitcode",
    "returncode",
    "code",
    "enabled",
    "success",
    "ok",
];
/// Most distinct integer values of a categorical field (HTTP statuses, exit codes, levels).
const MAX_NUMERIC_CATEGORIES: usize = 8;
/// Fewest units with a field for its statistics to mean anything.
const MIN_FIELD_UNITS: usize = 8;
/// Units at the start with a position score (a header, a report's summary lines).
const HEAD_UNITS: usize = 6;
/// Units at the end with a position score (the final status, totals).
const TAIL_UNITS: usize = 6;
/// Extremes kept per numeric field.
const TOP_EXTREMES: usize = 3;
/// Extremes kept per numeric field when the intent asks for a ranking ("the top five").
const TOP_RANKED: usize = 5;

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

/// A number with an optional unit suffix, normalised (bytes, seconds); `None` for text.
/// "350ms" -> 0.35, "2.1G" -> 2.1e9, "15%" -> 15, "7:53.61" -> 473.61, "1,234" -> 1234.
pub fn number(v: &str) -> Option<f64> {
    let v = v
        .trim()
        .trim_matches(['"', '\'', '(', ')', '[', ']', ',', ';']);
    if v.is_empty() || v.len() > 24 {
        return None;
    }
    if let Some((m, s)) = v.split_once(':') {
        if m.chars().all(|c| c.is_ascii_digit()) && !m.is_empty() && s.len() <= 6 {
            return Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?);
        }
        return None;
    }
    let end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == ','))
        .unwrap_or(v.len());
    let digits = v[..end].replace(',', "");
    if digits.is_empty() || !digits.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: f64 = digits.parse().ok()?;
    let mult = match &v[end..] {
        "" | "%" | "x" => 1.0,
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" | "secs" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "B" | "b" => 1.0,
        "K" | "k" | "Ki" | "KB" | "KiB" | "kB" => 1024.0,
        "M" | "Mi" | "MB" | "MiB" => 1024.0 * 1024.0,
        "G" | "Gi" | "GB" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "T" | "Ti" | "TB" | "TiB" => 1024f64.powi(4),
        _ => return None,
    };
    Some(n * mult)
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

/// Value counts of one field (or one template slot) over the units that have it.
#[derive(Debug, Clone)]
pub struct Dist {
    /// Field name, or the template text for a slot.
    pub name: String,
    /// (value, count), most frequent first.
    pub counts: Vec<(String, usize)>,
    /// Units with the field.
    pub n: usize,
    /// Whether there are more values than kept in `counts`.
    pub open: bool,
}

impl Dist {
    /// Categorical: few distinct values, each repeated; a measure (decimals, or more than
    /// [`MAX_NUMERIC_CATEGORIES`] distinct integers) is not, though its values repeat.
    pub fn categorical(&self) -> bool {
        if self.n < MIN_FIELD_UNITS
            || self.open
            || self.counts.len() < 2
            || self.counts.len() > MAX_CATEGORIES
            || self.counts.len() * 2 > self.n
        {
            return false;
        }
        let numeric = self.counts.iter().all(|(v, _)| number(v).is_some());
        let decimal = self.counts.iter().any(|(v, _)| v.contains('.'));
        !(numeric && (decimal || self.counts.len() > MAX_NUMERIC_CATEGORIES))
    }

    /// Share of the most frequent value.
    fn mode_share(&self) -> f64 {
        self.counts
            .first()
            .map_or(0.0, |c| c.1 as f64 / self.n.max(1) as f64)
    }

    /// 0..=1: how rare `value` is among the field's values (0 when not rare).
    pub fn rarity(&self, value: &str) -> f64 {
        if !self.categorical() {
            return 0.0;
        }
        let Some(&(_, c)) = self.counts.iter().find(|(v, _)| v == value) else {
            return 0.0;
        };
        let share = c as f64 / self.n as f64;
        let mode = self.mode_share();
        if share <= RARE_VALUE_SHARE && mode >= 2.0 * share {
            (1.0 - share / mode).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// Value distributions of every field of the units.
pub fn field_dists(u: &Units) -> Vec<Dist> {
    let mut maps: Vec<HashMap<&str, usize>> = vec![HashMap::new(); u.fields.len()];
    let mut n = vec![0usize; u.fields.len()];
    let mut open = vec![false; u.fields.len()];
    for unit in &u.units {
        let mut seen: HashSet<usize> = HashSet::new();
        for (f, v) in &unit.fields {
            if !seen.insert(*f) {
                continue;
            }
            n[*f] += 1;
            let m = &mut maps[*f];
            if m.len() < 64 || m.contains_key(v.as_str()) {
                *m.entry(v.as_str()).or_default() += 1;
            } else {
                open[*f] = true;
            }
        }
    }
    maps.into_iter()
        .enumerate()
        .map(|(i, m)| {
            let mut counts: Vec<(String, usize)> =
                m.into_iter().map(|(k, c)| (k.to_string(), c)).collect();
            counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            Dist {
                name: u.fields[i].name.clone(),
                counts,
                n: n[i],
                open: open[i],
            }
        })
        .collect()
}

/// A numeric field or template slot ranked for the extremes signal: its weight, its name as
/// shown, its top (value, unit index) pairs and its field id (`None` for a template slot).
type RankedField = (f64, String, Vec<(f64, usize)>, Option<usize>);

/// Normalises scores to 0..=1 by their maximum.
fn normalise(v: &mut [f64]) {
    let max = v.iter().cloned().fold(0.0, f64::max);
    if max > 0.0 {
        v.iter_mut().for_each(|x| *x /= max);
    }
}

/// Computes every signal for every unit of `u` against `q`.
pub fn score(u: &Units, q: &Query, asks: &Asks) -> Scores {
    let n = u.units.len();
    let mut s = Scores {
        rel: vec![0.0; n],
        rare: vec![0.0; n],
        sal: vec![0.0; n],
        ext: vec![0.0; n],
        pos: vec![0.0; n],
        ext_why: HashMap::new(),
        hot: HashMap::new(),
    };
    if n == 0 {
        return s;
    }
    // Relevance.
    let docs: Vec<String> = u.units.iter().map(Unit::score_text).collect();
    s.rel = bm25(q, &docs);
    normalise(&mut s.rel);
    // A unit that holds a word of the question whole as one of its own tokens (a package
    // `openssl`, a table `payment`), where few units do, names the object asked about: it
    // ranks with the best BM25 matches whatever its length or its neighbours' repetitions.
    // A field whose whole value is a word of the question (a package column `openssl`, a
    // service `vnc`), not a word inside prose.
    let named: Vec<Vec<usize>> = u
        .units
        .iter()
        .map(|unit| {
            let mut ks: Vec<usize> = Vec::new();
            for (_, v) in &unit.fields {
                let v = v.trim().trim_matches('"');
                if v.len() >= 3 && v.len() <= 64 {
                    for k in q.names_in(v) {
                        if v.eq_ignore_ascii_case(&q.names[k]) && !ks.contains(&k) {
                            ks.push(k);
                        }
                    }
                }
            }
            ks
        })
        .collect();
    let mut df = vec![0usize; q.names.len()];
    for k in named.iter().flatten() {
        df[*k] += 1;
    }
    // Only a name few units hold picks out an object; a word on every line picks nothing.
    let few = (n / 50).max(2);
    for (r, ks) in s.rel.iter_mut().zip(&named) {
        let k = ks.iter().filter(|&&k| df[k] <= few).count();
        if k > 0 {
            *r = r.max(0.7 + 0.1 * k.min(3) as f64);
        }
    }

    // Rarity of templates: only where the input repeats itself (most units in templates of
    // 3+), so that "rare" means something.
    let repeated: usize = u
        .templates
        .iter()
        .filter(|t| t.count >= 3)
        .map(|t| t.count)
        .sum();
    let repetitive = repeated as f64 / n as f64;
    let max_count = u.templates.iter().map(|t| t.count).max().unwrap_or(1);
    let dists = field_dists(u);
    // A rare value matters most in a field the intent names; every record has some rare
    // value in some field.
    let field_weight: Vec<f64> = u
        .fields
        .iter()
        .map(|f| {
            let own = f.name.rsplit(['.', '/']).next().unwrap_or(&f.name);
            let own = own.trim_start_matches('@').trim_end_matches("[]");
            if tokenize(own).iter().any(|t| q.has(t)) {
                1.0
            } else if STATUS_FIELDS.contains(&own.to_ascii_lowercase().as_str()) {
                STATUS_FIELD_WEIGHT
            } else {
                UNNAMED_FIELD_WEIGHT
            }
        })
        .collect();
    for (i, unit) in u.units.iter().enumerate() {
        let t = &u.templates[unit.template];
        let mut r = 0.0;
        // Records of one array differ in their optional keys, not in kind: only lines have a
        // rare template.
        if !u.structured
            && max_count >= 5
            && n >= 20
            && (t.count as f64) <= (RARE_SHARE * n as f64).max(2.0)
        {
            r = (1.0 - (t.count as f64).ln() / (max_count as f64).ln()).clamp(0.0, 1.0)
                * repetitive.min(1.0);
        }
        for (f, v) in &unit.fields {
            let fr = dists[*f].rarity(v) * field_weight[*f];
            if fr >= 0.4 {
                s.hot.entry(i).or_default().push(*f);
            }
            r = f64::max(r, fr);
        }
        s.rare[i] = r;
    }
    // Template slot values: a rare value at a slot of a frequent template.
    for (i, unit) in u.units.iter().enumerate() {
        let t = &u.templates[unit.template];
        if t.count < MIN_FIELD_UNITS || t.slots.is_empty() || unit.kind == UnitKind::Record {
            continue;
        }
        let toks: Vec<&str> = unit.text.split_whitespace().collect();
        let tt: Vec<&str> = t.text.split(' ').collect();
        let mut slot = 0;
        for (p, tok) in toks.iter().enumerate().take(tt.len()) {
            if tt[p] == "<*>" {
                if let Some(m) = t.slots.get(slot) {
                    let d = slot_dist(m, t.count);
                    s.rare[i] = f64::max(s.rare[i], d.rarity(tok));
                }
                slot += 1;
            }
        }
    }

    // Salience.
    for (i, unit) in u.units.iter().enumerate() {
        let text = clip_str(&unit.text, 400);
        let mut v: f64 = match unit.sev {
            Severity::Error => 1.0,
            Severity::Warn => 0.5,
            Severity::None => 0.0,
        };
        if signal::is_totals(text) || signal::exit_code(text).is_some() {
            v = v.max(0.9);
        }
        if unit.kind == UnitKind::Leaf && summary_key(&unit.context) {
            v = v.max(0.6);
        }
        s.sal[i] = v;
    }

    // Extremes of numeric fields and template slots.
    let lo = asks.least && !asks.most;
    let top_n = if asks.ranked() {
        TOP_RANKED
    } else {
        TOP_EXTREMES
    };
    // Ordered by field id, so ties rank the same on every run.
    let mut by_field: std::collections::BTreeMap<usize, Vec<(f64, usize)>> =
        std::collections::BTreeMap::new();
    for (i, unit) in u.units.iter().enumerate() {
        for (f, v) in &unit.fields {
            if let Some(x) = number(v) {
                by_field.entry(*f).or_default().push((x, i));
            }
        }
    }
    let mut ranked: Vec<RankedField> = Vec::new();
    for (f, vals) in by_field {
        let name = &u.fields[f].name;
        if let Some(r) = extreme_field(name, vals, &dists[f], q, lo, top_n, asks.ranked()) {
            ranked.push((r.0, name.clone(), r.1, Some(f)));
        }
    }
    // Slots of line templates ("took 350ms", "pause 12.5ms").
    for (ti, t) in u.templates.iter().enumerate() {
        if t.count < MIN_FIELD_UNITS || u.structured {
            continue;
        }
        let tt: Vec<&str> = t.text.split(' ').collect();
        let slots = tt.iter().filter(|x| **x == "<*>").count();
        for slot in 0..slots {
            let mut vals: Vec<(f64, usize)> = Vec::new();
            for (i, unit) in u.units.iter().enumerate().filter(|(_, x)| x.template == ti) {
                let mut k = 0;
                for (p, tok) in unit.text.split_whitespace().enumerate().take(tt.len()) {
                    if tt[p] == "<*>" {
                        if k == slot {
                            if let Some(x) = number(tok) {
                                vals.push((x, i));
                            }
                            break;
                        }
                        k += 1;
                    }
                }
            }
            let pos = tt
                .iter()
                .enumerate()
                .filter(|(_, x)| **x == "<*>")
                .nth(slot)
                .map_or(0, |(p, _)| p);
            // The label of a slot: the nearest literal token before it.
            let label = tt[..pos]
                .iter()
                .rev()
                .find(|x| **x != "<*>")
                .copied()
                .unwrap_or("value");
            let d = Dist {
                name: label.to_string(),
                counts: Vec::new(),
                n: vals.len(),
                open: true,
            };
            if let Some(r) = extreme_field(label, vals, &d, q, lo, top_n, asks.ranked()) {
                ranked.push((
                    r.0 * 0.9,
                    format!("{label} (in lines like L{})", t.first),
                    r.1,
                    None,
                ));
            }
        }
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    for (w, name, top, field) in ranked.into_iter().take(4) {
        for (k, (_, i)) in top.into_iter().enumerate() {
            if let Some(f) = field {
                s.hot.entry(i).or_default().push(f);
            }
            let v = w * (1.0 - 0.12 * k as f64).max(0.5);
            if v > s.ext[i] {
                s.ext[i] = v;
                let side = if lo { "smallest" } else { "largest" };
                let rank = match k {
                    0 => String::new(),
                    1 => "2nd ".into(),
                    2 => "3rd ".into(),
                    k => format!("{}th ", k + 1),
                };
                s.ext_why
                    .insert(i, format!("{rank}{side} {}", shown_path(&name)));
            }
        }
    }

    // Position: the first and last units (a report's header and its final status).
    for (k, i) in (0..n).take(HEAD_UNITS).enumerate() {
        s.pos[i] = 0.8 - 0.08 * k as f64;
    }
    for (k, i) in (0..n).rev().take(TAIL_UNITS).enumerate() {
        s.pos[i] = s.pos[i].max(1.0 - 0.08 * k as f64);
    }
    s
}

/// The distribution of one template slot.
fn slot_dist(m: &HashMap<String, usize>, total: usize) -> Dist {
    let mut counts: Vec<(String, usize)> = m.iter().map(|(k, v)| (k.clone(), *v)).collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let kept: usize = counts.iter().map(|c| c.1).sum();
    Dist {
        name: String::new(),
        counts,
        n: total,
        open: kept < total,
    }
}

/// Keys that name summaries, totals or verdicts.
fn summary_key(path: &str) -> bool {
    let last = path.rsplit('.').next().unwrap_or(path).to_ascii_lowercase();
    let top = path.split('.').next().unwrap_or(path).to_ascii_lowercase();
    const KEYS: &[&str] = &[
        "stats",
        "statistics",
        "summary",
        "totals",
        "total",
        "result",
        "results",
        "status",
        "state",
        "verdict",
        "conclusion",
        "outcome",
        "overall",
        "version",
        "passed",
        "failed",
        "failures",
        "errors",
        "error",
        "message",
        "success",
        "ok",
        "exit_code",
        "exitcode",
        "returncode",
        "count",
    ];
    KEYS.contains(&last.as_str()) || (KEYS.contains(&top.as_str()) && path.split('.').count() <= 3)
}

/// The weight of a numeric field's extremes and its top units, or `None` when its extremes
/// mean nothing (too few values, all equal, ids, monotonic sequences such as timestamps).
fn extreme_field(
    name: &str,
    mut vals: Vec<(f64, usize)>,
    dist: &Dist,
    q: &Query,
    lo: bool,
    top_n: usize,
    ranked: bool,
) -> Option<(f64, Vec<(f64, usize)>)> {
    if vals.len() < MIN_FIELD_UNITS || ordinal_name(name) {
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
    if max <= min {
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
    let name_terms = tokenize(name);
    if name_terms.iter().any(|t| q.has(t)) {
        w = 1.0;
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

/// A fact mined from the whole input, for the Key facts section.
#[derive(Debug, Clone)]
pub struct Fact {
    /// The rendered fact.
    pub text: String,
    /// Anchor line, if any.
    pub line: Option<usize>,
    /// 0..=1: how much it matters (relevance to the intent, rarity, summary-ness).
    pub weight: f64,
}

/// Renders a count the way the summary states counts: `×N` (a count toolsum made, never read
/// as a figure quoted from the input).
fn times(n: usize) -> String {
    format!("×{n}")
}

/// Facts mined from the whole input: counts per template, per value of categorical fields and
/// template slots, and small objects shown whole.
pub fn facts(u: &Units, q: &Query) -> Vec<Fact> {
    let mut out = Vec::new();
    let n = u.units.len().max(1);
    // Templates by count (line inputs that repeat).
    if !u.structured {
        let texts: Vec<String> = u.templates.iter().map(|t| t.text.clone()).collect();
        let mut rel = bm25(q, &texts);
        normalise(&mut rel);
        let mut order: Vec<usize> = (0..u.templates.len())
            .filter(|&i| u.templates[i].count >= 3)
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
            });
            // Counts per value of a categorical slot ("requests per endpoint").
            for m in &t.slots {
                let d = slot_dist(m, t.count);
                if d.categorical() {
                    let vals: Vec<String> = d.counts.iter().map(|c| c.0.clone()).collect();
                    let vrel = bm25(q, &vals).iter().cloned().fold(0.0, f64::max);
                    out.push(Fact {
                        text: format!("values in lines like L{}: {}", t.first, dist_text(&d)),
                        line: None,
                        weight: 0.3 + 0.4 * (vrel > 0.0) as u8 as f64 + 0.3 * rel[i],
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
        .filter(|(_, d)| d.categorical() && d.n * 5 >= n.min(d.n * 5))
        .map(|(i, d)| {
            let rare = d.counts.iter().any(|(v, _)| d.rarity(v) > 0.0) as u8 as f64;
            (0.2 + 0.5 * rel[i] + 0.3 * rare, i)
        })
        .collect();
    cats.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (w, i) in cats.into_iter().take(4) {
        out.push(Fact {
            text: format!("{}: {}", shown_path(&dists[i].name), dist_text(&dists[i])),
            line: None,
            weight: w,
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
        let mut objs: Vec<(f64, usize)> = u
            .objects
            .iter()
            .enumerate()
            .map(|(i, (_, p, _))| {
                let sum = summary_key(p) as u8 as f64;
                let shallow = 1.0 / p.split('.').count() as f64;
                (0.25 + 0.4 * rel[i] + 0.25 * sum + 0.1 * shallow, i)
            })
            .collect();
        objs.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (w, i) in objs.into_iter().take(4) {
            let (line, path, r) = &u.objects[i];
            out.push(Fact {
                text: format!("{}: {r}", shown_path(path)),
                line: Some(*line),
                weight: w,
            });
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn score_q(u: &Units, q: &Query) -> Scores {
        score(u, q, &Asks::default())
    }
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    #[test]
    fn numbers_with_units() {
        assert!((number("350ms").unwrap() - 0.35).abs() < 1e-12);
        assert_eq!(number("2G"), Some(2.0 * 1024.0 * 1024.0 * 1024.0));
        assert_eq!(number("1,234"), Some(1234.0));
        assert_eq!(number("7:53.61"), Some(473.61));
        assert_eq!(number("abc"), None);
        assert_eq!(number("v1.2"), None);
    }

    #[test]
    fn a_rare_ordinary_line_is_rare() {
        let mut text = String::new();
        for i in 0..200 {
            text.push_str(&format!(
                "Jan  1 10:{:02}:00 sshd[{i}]: Failed password for root from 10.0.0.{} port 22\n",
                i % 60,
                i % 250
            ));
        }
        text.push_str(
            "Jan  1 11:00:00 sshd[999]: Accepted password for deploy from 10.0.0.7 port 22\n",
        );
        let u = build(&text, Kind::Log);
        let s = score_q(&u, &Query::new("did any login succeed?"));
        let last = u.units.len() - 1;
        assert!(s.rare[last] > 0.8, "{}", s.rare[last]);
        assert!(s.rare[..last].iter().all(|&r| r < 0.2));
    }

    #[test]
    fn a_rare_categorical_value_is_rare() {
        let mut recs = Vec::new();
        for i in 0..40 {
            let st = if i == 17 { "firing" } else { "inactive" };
            recs.push(serde_json::json!({"name": format!("alert{i}"), "state": st}));
        }
        let text = serde_json::to_string_pretty(&serde_json::json!({"alerts": recs})).unwrap();
        let u = build(&text, Kind::Json);
        let s = score_q(&u, &Query::new("which alerts are active?"));
        let i = u
            .units
            .iter()
            .position(|x| x.text.contains("firing"))
            .unwrap();
        assert!(s.rare[i] > 0.8, "{}", s.rare[i]);
        let f = facts(&u, &Query::new("which alerts are active?"));
        assert!(
            f.iter()
                .any(|x| x.text.starts_with("state: inactive ×39, firing ×1")),
            "{f:?}"
        );
    }

    #[test]
    fn extremes_of_a_column_and_of_a_slot() {
        let mut text = String::from("PID USER %CPU RSS COMMAND\n");
        for i in 0..30 {
            text.push_str(&format!(
                "{} root {}.0 {} proc{i}\n",
                100 + i,
                i % 7,
                (i * 37) % 101 * 1000
            ));
        }
        let u = build(&text, Kind::Table);
        let s = score_q(&u, &Query::new("which processes use the most memory?"));
        let best = (0..u.units.len())
            .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
            .unwrap();
        assert!(
            u.units[best].text.contains(" 97000 "),
            "{}",
            u.units[best].text
        );
        // GC pauses in log lines: the longest pause is an extreme of its slot.
        let mut log = String::new();
        for i in 0..40 {
            log.push_str(&format!(
                "[{i}.{i:03}s] GC(1{i}) Pause Young (Normal) {}M->{}M {}.{}ms\n",
                50 + i,
                10 + i,
                (i * 13) % 17,
                i
            ));
        }
        let u = build(&log, Kind::Log);
        let s = score_q(&u, &Query::new("what were the longest GC pauses?"));
        let best = (0..u.units.len())
            .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
            .unwrap();
        assert!(
            u.units[best].text.ends_with("16.35ms") || u.units[best].text.contains("16."),
            "{}",
            u.units[best].text
        );
    }

    #[test]
    fn ids_and_clocks_have_no_extremes() {
        let mut text = String::from("id,ts,size\n");
        for i in 0..20 {
            text.push_str(&format!("{},{},{}\n", 1000 - i, 1_700_000_000 + i, 5));
        }
        let u = build(&text, Kind::Csv);
        let s = score_q(&u, &Query::new("x"));
        assert!(s.ext.iter().all(|&e| e == 0.0));
    }

    #[test]
    fn small_summary_objects_become_facts() {
        let mut tests = Vec::new();
        for i in 0..50 {
            tests.push(serde_json::json!({"title": format!("t{i}"), "state": "passed"}));
        }
        let v = serde_json::json!({"stats": {"suites": 3, "tests": 50, "passes": 49, "failures": 1}, "tests": tests});
        let text = serde_json::to_string_pretty(&v).unwrap();
        let u = build(&text, Kind::Json);
        let f = facts(&u, &Query::new("how many tests failed?"));
        let stats = f
            .iter()
            .find(|x| x.text.starts_with("stats:"))
            .expect("stats shown");
        assert!(stats.text.contains("\"failures\": 1"), "{}", stats.text);
    }
}
