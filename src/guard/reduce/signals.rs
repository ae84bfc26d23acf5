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

use std::collections::HashMap;

use super::intent::Asks;
use super::rank::{bm25_discriminating, tokenize, Query};

use super::units::{Unit, UnitKind, Units};
use slots::{slot_label, slot_rankings, Series};

mod chosen;
mod dates;
mod each;
mod extremes;
pub(crate) mod fields;
mod id_prefixes;
mod limit;
mod mining;
mod salience;
mod scoped;
mod series;
mod set_aside;
mod slots;
mod subset;

pub use each::section_firsts;
use extremes::extreme_field;
pub(crate) use extremes::line_ref;
use fields::slot_dist;
pub use fields::{field_dists, number, tagged_number, Dist};
pub use mining::{facts, shown_path, Fact};
use salience::summary_key;
pub(crate) use salience::totals_row;
pub use scoped::named_section;

/// Scores of every unit (index = unit index), each 0..=1.
#[derive(Debug, Clone, Default)]
pub struct Scores {
    /// Relevance to the intent.
    pub rel: Vec<f64>,
    /// Rarity of its template or of one of its field values.
    pub rare: Vec<f64>,
    /// Salience ([`salience::salience`]): error 1.0, totals/exit lines 0.9, summary keys 0.6,
    /// warning 0.5 (1.0-1.2 when the question asks for warnings).
    pub sal: Vec<f64>,
    /// Extreme value of a numeric field or slot (the largest: 1.0, next 0.85, then 0.7).
    pub ext: Vec<f64>,
    /// First and last units.
    pub pos: Vec<f64>,
    /// How large a unit's numbers are among its template's (0..=1, log scale, the largest
    /// value of any numeric slot): of ten `N input errors` lines, the one with 28898. A tie
    /// breaker inside the error and relevance channels ([`extremes::peaks`]).
    pub peak: Vec<f64>,
    /// Why a unit is extreme, for the unit's annotation: the field and its rank.
    pub ext_why: HashMap<usize, String>,
    /// The fields that make a unit rare or extreme (unit -> field ids), shown when the unit is
    /// a record shown in part.
    pub hot: HashMap<usize, Vec<usize>>,
    /// Per unit, the fields of [`Scores::hot`] that are extremes (the ones that made it an
    /// extreme, without the rare values it also has).
    pub ext_hot: HashMap<usize, Vec<usize>>,
    /// Units a value the question names or negates picks ([`chosen::picked`]): members of the
    /// set the question asks for, each an answer of its own rather than a repeat of its
    /// template.
    pub picked: std::collections::HashSet<usize>,
    /// Units past a threshold the question states ([`limit::crossing`]): its answers, ranked
    /// before the plain word matches, which can all share the top relevance.
    pub past_limit: std::collections::HashSet<usize>,
}

impl Scores {
    /// Marks unit `i` an answer of its own ([`Scores::picked`]) with at least relevance
    /// `rel`, shown by field `f` when it has one ([`Scores::hot`]).
    pub fn pick(&mut self, i: usize, f: Option<usize>, rel: f64) {
        self.rel[i] = self.rel[i].max(rel);
        self.picked.insert(i);
        if let Some(f) = f {
            let hot = self.hot.entry(i).or_default();
            if !hot.contains(&f) {
                hot.push(f);
            }
        }
    }
}

/// Relevance of a record picked by a value the question names ([`chosen::picked`]).
const PICKED_REL: f64 = 0.8;
/// Relevance of a record picked by a value the question negates ("not Established"): the
/// few records with another value are the answer itself, above any word match.
const NEGATED_PICKED_REL: f64 = 0.95;
/// Factor on every unit's relevance before the records a negated value picks are ranked
/// (at [`NEGATED_PICKED_REL`]): below them, whatever words they share with the question.
const NEGATED_OTHERS_WEIGHT: f64 = 0.9;
/// Relevance of a record past a threshold the question states ([`limit::crossing`]).
const LIMIT_REL: f64 = 1.0;
/// Relevance of the last record of a numbered series when the question asks how many
/// ([`series::series_ends`]).
const SERIES_END_REL: f64 = 0.9;
/// Least rarity ([`Dist::rarity`]) of a value, in a field the question names, that makes
/// its record one of the few the question asks about (`n_mallocs: 17` where 51 of 52 records
/// have 0).
const ODD_VALUE_RARITY: f64 = 0.9;
/// Most records with such values: more are a share of the records, not the odd ones out.
const MAX_ODD_RECORDS: usize = 3;
/// Relevance of those records: level with a value the question names ([`PICKED_REL`]).
const ODD_VALUE_REL: f64 = 0.8;
/// Relevance of a unit holding in full an id the question writes short
/// ([`id_prefixes::named`]): the best match.
const ID_PREFIX_REL: f64 = 1.0;
/// Factor on every other unit's relevance when a short id picks units out.
const ID_OTHERS_WEIGHT: f64 = 0.9;
/// Factor on the relevance of a unit that holds a word the question negates.
const NEGATED_WEIGHT: f64 = 0.3;
/// Templates covering at most this share of the units are rare (when the input repeats).
const RARE_SHARE: f64 = 0.01;
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
/// True for a field that holds a state or verdict: one of [`STATUS_FIELDS`], or a joined
/// name whose last part is one (`oper-status`, `admin_state`, `healthStatus`), not a word that
/// merely ends like one (`substate`).
fn status_field(own: &str) -> bool {
    let lower = own.to_ascii_lowercase();
    STATUS_FIELDS.iter().any(|w| {
        if lower == *w {
            return true;
        }
        if lower.len() <= w.len() || !lower.ends_with(w) {
            return false;
        }
        let at = own.len() - w.len();
        let b = own.as_bytes();
        matches!(b[at - 1], b'-' | b'_' | b'.' | b' ')
            || b[at].is_ascii_uppercase() && b[at - 1].is_ascii_lowercase()
    })
}

/// Fewest units with a field for its statistics to mean anything.
const MIN_FIELD_UNITS: usize = 8;
/// Units at the start with a position score (a header, a report's summary lines).
const HEAD_UNITS: usize = 6;
/// Units at the end with a position score (the final status, totals).
const TAIL_UNITS: usize = 6;
/// Fewest lines of a nested text for its own first and last lines to get a position score.
const MIN_STREAM_UNITS: usize = 12;
/// Lines at each end of a nested text with a position score.
const STREAM_ENDS: usize = 2;
/// Least share (tenths) of a field's values that are numbers for the field to have extremes
/// (placeholders such as `null` or `-` not counted). At 5 the same dev total; 8 was chosen
/// first.
const MIN_NUMERIC_TENTHS: usize = 8;

/// A value that stands for none: empty, `null`, `-`, `N/A`, `<none>`, `none`, `nan`.
fn placeholder(v: &str) -> bool {
    let v = v.trim();
    v.is_empty()
        || [
            "null", "-", "--", "n/a", "na", "<none>", "none", "nan", "<nil>", "nil",
        ]
        .iter()
        .any(|p| v.eq_ignore_ascii_case(p))
}
/// Extremes kept per numeric field.
const TOP_EXTREMES: usize = 3;
/// Weight of a field's extremes among the records the question names ([`subset`]), against
/// the same field's over the whole output.
const AMONG_WEIGHT: f64 = 1.1;

/// Extremes kept per numeric field when the intent asks for a ranking ("the top five").
const TOP_RANKED: usize = 5;

/// A numeric field or template slot ranked for the extremes signal: its weight, its name as
/// shown, its top (value, unit index) pairs, its field id (`None` for a template slot), and
/// which end of it those are.
type RankedField = (f64, String, Vec<(f64, usize)>, Option<usize>, Side);

/// Which end of a ranked field its top values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Side {
    /// Its smallest numbers.
    Smallest,
    /// Its largest numbers.
    Largest,
    /// Its earliest dates.
    Earliest,
    /// Its latest dates.
    Latest,
}

impl Side {
    /// The side of a number ranked smallest first when `lo`.
    fn of(lo: bool) -> Self {
        if lo {
            Side::Smallest
        } else {
            Side::Largest
        }
    }

    /// Whether the values are the low end.
    fn low(self) -> bool {
        matches!(self, Side::Smallest | Side::Earliest)
    }

    /// The word an annotation names it by.
    fn word(self) -> &'static str {
        match self {
            Side::Smallest => "smallest",
            Side::Largest => "largest",
            Side::Earliest => "earliest",
            Side::Latest => "latest",
        }
    }
}

/// Weight of a date series whose label the question names, against a named measure's 1.0.
const DATE_NAMED_WEIGHT: f64 = 1.1;
/// Weight of a date series the question does not name: above an unnamed measure's 0.8.
const DATE_WEIGHT: f64 = 0.9;
/// Weight of dates that rise in input order (a log's clock): its ends are its first and last
/// lines, which the position signal keeps already.
const DATE_CLOCK_WEIGHT: f64 = 0.3;

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
        peak: vec![0.0; n],
        ext_why: HashMap::new(),
        hot: HashMap::new(),
        ext_hot: HashMap::new(),
        picked: Default::default(),
        past_limit: Default::default(),
    };
    if n == 0 {
        return s;
    }
    // Relevance.
    let docs: Vec<String> = u.units.iter().map(Unit::score_text).collect();
    s.rel = bm25_discriminating(q, &docs);
    // A unit holding a word the question negates is the many, not the few asked about.
    if !q.negated.is_empty() {
        for (r, d) in s.rel.iter_mut().zip(&docs) {
            if tokenize(d).iter().any(|t| q.negated.contains(t)) {
                *r *= NEGATED_WEIGHT;
            }
        }
    }
    normalise(&mut s.rel);
    subset::siblings_follow(u, &mut s.rel);
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
            // A member of a map of records is named by its key (`"node_modules/minimist":`),
            // each of whose parts may be the word the question names it by.
            if let Some(key) = unit.parent.strip_suffix(':') {
                for part in key.trim().trim_matches('"').split(['/', ':', '@']) {
                    if part.len() >= 3 {
                        for k in q.names_in(part) {
                            if part.eq_ignore_ascii_case(&q.names[k]) && !ks.contains(&k) {
                                ks.push(k);
                            }
                        }
                    }
                }
            }
            for (_, v) in &unit.fields {
                let v = v.trim().trim_matches('"');
                if v.len() >= 3 && v.len() <= 64 {
                    for k in q.names_in(v) {
                        if v.eq_ignore_ascii_case(&q.names[k]) && !ks.contains(&k) {
                            ks.push(k);
                        }
                    }
                    // A one-word value the question names in another form (`domain` for
                    // "domains").
                    if v.len() >= 4 && v.bytes().all(|b| b.is_ascii_alphabetic()) {
                        let st = super::rank::stem(&v.to_ascii_lowercase());
                        for (k, n) in q.names.iter().enumerate() {
                            if !ks.contains(&k) && n.len() >= 4 && super::rank::stem(n) == st {
                                ks.push(k);
                            }
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

    // An id the question writes short (`commit e6cd4fc`, a container `3f2a9c1b`) names the
    // units that write it in full (`e6cd4fc8a...`): the answer, as a whole value would be.
    // Such an id picks its units out better than any word does ("commit" is on every
    // commit line): the other units rank below them.
    let by_id = id_prefixes::named(u, q, few);
    if !by_id.is_empty() {
        s.rel.iter_mut().for_each(|r| *r *= ID_OTHERS_WEIGHT);
        for i in by_id {
            s.pick(i, None, ID_PREFIX_REL);
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
    // A record a value the question names picks (`Emergency Class: UNUSUAL EVENT` for
    // "classified Unusual Event") is what the question asks about: relevant, and shown by
    // that field.
    let picked = chosen::picked(u, &dists, q);
    // Records the question picks by what they lack or are not are its answer: the records
    // that merely share its words (every checksec record has `relro` and `canary`) rank below.
    if picked.iter().any(|p| p.2) {
        s.rel.iter_mut().for_each(|r| *r *= NEGATED_OTHERS_WEIGHT);
    }
    for (i, f, negated) in picked {
        let rel = if negated {
            NEGATED_PICKED_REL
        } else {
            PICKED_REL
        };
        s.pick(i, Some(f), rel);
    }
    // Records past a threshold the question states, on a field it names: the answer, each
    // one (or where a long run past it starts).
    if let Some(limit) = asks.limit {
        for (i, f) in limit::crossing(u, q, limit) {
            s.pick(i, f, LIMIT_REL);
            s.past_limit.insert(i);
        }
    }
    // The last record of a numbered series states how many there are.
    if asks.count {
        for (i, f) in series::series_ends(u) {
            s.pick(i, Some(f), SERIES_END_REL);
        }
    }
    // A rare value matters most in a field the intent names; every record has some rare
    // value in some field.
    let field_weight: Vec<f64> = u
        .fields
        .iter()
        .map(|f| {
            let own = f.name.rsplit(['.', '/']).next().unwrap_or(&f.name);
            let own = own.trim_start_matches('@').trim_end_matches("[]");
            if tokenize(own).iter().any(|t| q.names_word(t)) {
                1.0
            } else if status_field(own) {
                STATUS_FIELD_WEIGHT
            } else {
                UNNAMED_FIELD_WEIGHT
            }
        })
        .collect();
    // Per field the question names: the units where it has a value few others have.
    let mut odd: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for (i, unit) in u.units.iter().enumerate() {
        let t = &u.templates[unit.template];
        let mut r = 0.0;
        // Records of one array differ in their optional keys, not in kind: only lines have a
        // rare template.
        if !t.shaped
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
            if field_weight[*f] >= 1.0 && fr >= ODD_VALUE_RARITY {
                odd.entry(*f).or_default().push(i);
            }
            r = f64::max(r, fr);
        }
        s.rare[i] = r;
    }
    // A field the question names ("which line does the mallocs") whose value is the same in
    // nearly every record: the few records with another value are what it asks about.
    for (f, units) in odd {
        if units.len() <= MAX_ODD_RECORDS {
            for i in units {
                s.pick(i, Some(f), ODD_VALUE_REL);
            }
        }
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
    s.sal = salience::salience(u, q);

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
    // A unit written again word for word (a report's row in two of its tables) is one value,
    // not the first and the second largest.
    let mut written: std::collections::HashSet<(usize, &[(usize, String)])> = Default::default();
    // Values per field, numbers or not: a field whose values are mostly not numbers (package
    // versions `1.1.1d-0+deb10u4`, with a date-like `20180224.1` among them) is no measure.
    let mut values = vec![0usize; u.fields.len()];
    // Numbers named in their value (`NM:i:25`, in whichever column a row writes it), by name.
    let mut by_tag: std::collections::BTreeMap<String, (Series, HashMap<usize, usize>)> =
        Default::default();
    for (i, unit) in u.units.iter().enumerate() {
        for (f, v) in &unit.fields {
            if placeholder(v) || !written.insert((*f, unit.fields.as_slice())) {
                continue;
            }
            values[*f] += 1;
            if let Some(x) = number(v) {
                by_field.entry(*f).or_default().push((x, i));
            } else if let Some((tag, x)) = tagged_number(v) {
                let (vals, cols) = by_tag.entry(tag.to_string()).or_default();
                vals.push((x, i));
                *cols.entry(*f).or_default() += 1;
            }
        }
    }
    by_field.retain(|f, vals| vals.len() * 10 >= values[*f] * MIN_NUMERIC_TENTHS);
    let mut ranked: Vec<RankedField> = Vec::new();
    // Both ends when the intent asks for both ("the most subscribers and the fewest").
    let both = asks.least && asks.most;
    // Asked for an extreme among the records it names, each field's extremes among them too.
    let among = if asks.most || asks.least {
        subset::named_records(u, &s.rel).or_else(|| subset::under_named_path(u, q))
    } else {
        None
    };
    for (f, vals) in by_field {
        let name = &u.fields[f].name;
        if let Some(sub) = &among {
            let theirs: Vec<(f64, usize)> = vals
                .iter()
                .filter(|(_, i)| sub.contains(i))
                .copied()
                .collect();
            if let Some(r) = extreme_field(name, theirs, &dists[f], q, lo, top_n, asks.ranked()) {
                // Above the same field's extremes over the whole output.
                ranked.push((
                    r.0 * AMONG_WEIGHT,
                    format!("{name} of the records asked about"),
                    r.1,
                    Some(f),
                    Side::of(lo),
                ));
            }
        }
        if both {
            let small = extreme_field(name, vals.clone(), &dists[f], q, true, top_n, true);
            if let Some(r) = small {
                ranked.push((r.0, name.clone(), r.1, Some(f), Side::Smallest));
            }
        }
        if let Some(r) = extreme_field(name, vals, &dists[f], q, lo, top_n, asks.ranked()) {
            ranked.push((r.0, name.clone(), r.1, Some(f), Side::of(lo)));
        }
    }
    for (tag, (vals, cols)) in by_tag
        .into_iter()
        .filter(|(_, v)| v.0.len() >= MIN_FIELD_UNITS)
    {
        let d = Dist::series(&tag, vals.len());
        // The column most rows write it in, whose value a record shown in part keeps.
        let col = cols
            .into_iter()
            .max_by_key(|&(f, n)| (n, std::cmp::Reverse(f)));
        if let Some(r) = extreme_field(&tag, vals, &d, q, lo, top_n, asks.ranked()) {
            ranked.push((r.0, tag, r.1, col.map(|c| c.0), Side::of(lo)));
        }
    }
    // Slots of line templates ("took 350ms", "pause 12.5ms").
    ranked.extend(slots::slot_extremes(u, q, asks, lo, top_n));
    // Counts of one noun across templates (`with 145 ops`, `with 260 ops`).
    for (noun, vals) in extremes::quantities(u) {
        let d = Dist::series(&noun, vals.len());
        if let Some(r) = extreme_field(&noun, vals, &d, q, lo, top_n, asks.ranked()) {
            ranked.push((r.0 * 0.9, noun, r.1, None, Side::of(lo)));
        }
    }
    // Dates, when the question asks for the earliest or the latest.
    if let Some(when) = asks.when {
        let expiry = q.terms.keys().any(|t| t.starts_with("expir"));
        for d in dates::series(u, q, expiry) {
            let w = if d.named {
                DATE_NAMED_WEIGHT
            } else if d.clock {
                DATE_CLOCK_WEIGHT
            } else {
                DATE_WEIGHT
            };
            for side in [Side::Earliest, Side::Latest] {
                if side == Side::Earliest && !when.earliest()
                    || side == Side::Latest && !when.latest()
                {
                    continue;
                }
                let mut vals = d.vals.clone();
                if side.low() {
                    vals.sort_by(|a, b| a.0.total_cmp(&b.0));
                } else {
                    vals.sort_by(|a, b| b.0.total_cmp(&a.0));
                }
                vals.truncate(top_n);
                ranked.push((w, d.label.clone(), vals, d.field, side));
            }
        }
    }
    // Template slots of one label (`root/root <*>` of a `tar tv` listing, split into
    // templates by how many words its file names have) each rank their own lines, but a
    // line's rank word is its place among all of them: one line is the largest.
    let whole = slot_rankings(&ranked, top_n);
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let fields_shown = if both { 6 } else { 4 };
    // A table's totals row (`TOTAL  53437  41086  23%` under coverage's files) sums the rows:
    // ranked with them, it would make the largest file the second largest.
    let sums = |i: &usize| u.units[*i].kind == UnitKind::Record && totals_row(&u.units[*i].text);
    for (w, name, mut top, field, side) in ranked.into_iter().take(fields_shown) {
        top.retain(|(_, i)| !sums(i));
        let lo = side.low();
        let together = field
            .is_none()
            .then(|| whole.get(&(slot_label(&name).to_string(), side)))
            .flatten();
        let values: Vec<f64> = together
            .unwrap_or(&top)
            .iter()
            .filter(|v| !sums(&v.1))
            .map(|v| v.0)
            .collect();
        for (k, (x, i)) in top.into_iter().enumerate() {
            // Nothing is among the largest for being zero (`definitely lost: 0 bytes in 0
            // blocks` was the "4th largest blocks, tied"; trial of session 56): only the top
            // value may be zero, when all are. Negative values still rank (`-3dB`).
            if !lo && x == 0.0 && k > 0 {
                continue;
            }
            // Not among the top of its label's lines together: ranked, but named by no rank.
            let outranked = together.is_some_and(|t| t.iter().all(|v| v.1 != i));
            if let Some(f) = field {
                s.hot.entry(i).or_default().push(f);
                s.ext_hot.entry(i).or_default().push(f);
            }
            // A ranking question wants its top five alike; otherwise the first counts most.
            let decay = if asks.ranked() { 0.05 } else { 0.12 };
            // Asked for both ends, the smallest take turns with the largest.
            let k2 = if both && lo { k as f64 + 0.5 } else { k as f64 };
            let v = w * (1.0 - decay * k2).max(0.5) * if outranked { 0.95 } else { 1.0 };
            // The top of another ranking too (the slowest benchmark also allocates the
            // most): said beside the first, so the label the question asks for is there.
            let heads_it = !outranked && values.first() == Some(&x);
            if v <= s.ext[i] && heads_it {
                let named = if field.is_some() {
                    shown_path(&name)
                } else {
                    slots::readable(slot_label(&name))
                };
                let tied = if values.iter().filter(|&&y| y == x).count() > 1 {
                    ", tied"
                } else {
                    ""
                };
                let also = format!("{} {named}{tied}", side.word());
                if let Some(w) = s.ext_why.get_mut(&i) {
                    if w.starts_with(side.word()) && !w.contains(&also) {
                        w.push_str(&format!("; {also}"));
                    }
                }
            }
            if v > s.ext[i] {
                s.ext[i] = v;
                if outranked {
                    s.ext_why.remove(&i);
                    continue;
                }
                let side = side.word();
                // Ranked as competitions rank: equal values share the place of the first
                // of them (two records at the top are both the largest), and say so.
                let place = values.iter().position(|&y| y == x).unwrap_or(k);
                let tied = values.iter().filter(|&&y| y == x).count() > 1;
                let rank = match place {
                    0 => String::new(),
                    1 => "2nd ".into(),
                    2 => "3rd ".into(),
                    k => format!("{}th ", k + 1),
                };
                let tied = if tied { ", tied" } else { "" };
                // A field's path reads ` › `-joined; a template slot's label is a word of
                // the output as written (`ns/op`).
                let name = if field.is_some() {
                    shown_path(&name)
                } else {
                    slots::readable(&name)
                };
                s.ext_why.insert(i, format!("{rank}{side} {name}{tied}"));
            }
        }
    }

    s.peak = extremes::peaks(u);

    // Position: the first and last units (a report's header and its final status).
    // A leaf that holds nothing (`"Comments": null`, `"DropFrames": ""`) says nothing about
    // the output: the window moves past it to the next unit that does.
    let says = |i: &usize| {
        let x = &u.units[*i];
        !(x.kind == UnitKind::Leaf && x.fields.iter().all(|(_, v)| placeholder(v)))
    };
    for (k, i) in (0..n).filter(says).take(HEAD_UNITS).enumerate() {
        s.pos[i] = 0.8 - 0.08 * k as f64;
    }
    for (k, i) in (0..n).rev().filter(says).take(TAIL_UNITS).enumerate() {
        s.pos[i] = s.pos[i].max(1.0 - 0.08 * k as f64);
    }
    // And the first and last lines of each long text nested in a document (a command's
    // stdout, a notebook's cell outputs, one path's text across records): where that text
    // started and how far it got.
    let mut by_ctx: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, x) in u.units.iter().enumerate() {
        if !x.context.is_empty() && matches!(x.kind, UnitKind::Line | UnitKind::Part) {
            by_ctx.entry(x.context.as_str()).or_default().push(i);
        }
    }
    for v in by_ctx.values().filter(|v| v.len() >= MIN_STREAM_UNITS) {
        for k in 0..STREAM_ENDS {
            let (h, t) = (v[k], v[v.len() - 1 - k]);
            s.pos[h] = s.pos[h].max(0.75 - 0.05 * k as f64);
            s.pos[t] = s.pos[t].max(0.9 - 0.05 * k as f64);
        }
    }
    s
}

#[cfg(test)]
mod extreme_tests;

#[cfg(test)]
mod tests;
