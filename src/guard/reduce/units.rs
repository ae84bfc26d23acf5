//! Units: the pieces of an output that a summary can quote, whatever its kind.
//!
//! Every input is cut into [`Unit`]s: lines (long lines into parts), and for structured text
//! also records (JSON objects of an array, NDJSON lines, table and CSV rows) with their fields,
//! and leaves (`path: value` of a JSON document). Each unit keeps the line it starts on (its
//! anchor in the saved file), the text to show (verbatim), a template id (units that differ
//! only in their variable parts share one) and, for structured units, its fields. The signals
//! ([`super::signals`]) score every unit the same way, so a better signal helps every kind.
//!
//! The kind found by [`super::detect`] is a hint: it chooses the parser, and a text that does
//! not parse as that kind is cut into lines.

use std::collections::HashMap;

use serde_json::Value;

use super::signal::{self, Severity};
use super::{clip_str, show_line_max, Kind};

/// A line as a unit keeps it: normalised as [`super::show_line`] does (trailing space, runs of
/// spaces, CI runner timestamps) but cut only past [`LONG_LINE_BYTES`] (longer lines are
/// parts); the summary shows a window of it ([`Unit::display`]).
pub fn keep_line(line: &str) -> String {
    show_line_max(line, LONG_LINE_BYTES)
}

/// Lines longer than this (bytes) are cut into parts of about [`PART_BYTES`]: a 5 MB line is
/// thousands of units, not one (issue 17, mechanism 11).
pub const LONG_LINE_BYTES: usize = 1_200;
/// Target size of one part of a long line (bytes); a part ends at a separator when one lies in
/// its last third.
pub const PART_BYTES: usize = 300;
/// Bytes of a unit's text used for scoring (longer ones are scored on their start).
const SCORE_BYTES: usize = 1_200;
/// Most units built from one input: beyond it lines are sampled evenly (keeps a 16 MiB input
/// within a few hundred ms; every line still counts in the template statistics).
pub const MAX_UNITS: usize = 200_000;
/// Shown bytes of a record's rendering.
const RECORD_SHOW_BYTES: usize = 420;
/// Fewest objects in a JSON array for its elements to be records.
const MIN_RECORDS: usize = 3;
/// Deepest JSON nesting walked for records and leaves.
const MAX_JSON_DEPTH: usize = 12;
/// Shortest JSON string (bytes) tried as embedded JSON or as text with lines of its own.
const EMBEDDED_MIN: usize = 80;

/// What a unit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnitKind {
    /// One line of text.
    Line,
    /// A part of a long line.
    Part,
    /// A record: a JSON object in an array, an NDJSON line, a table or CSV row.
    Record,
    /// A scalar of a JSON document shown as `path: value`.
    Leaf,
}

/// One quotable piece of the output.
#[derive(Debug, Clone)]
pub struct Unit {
    /// 1-based line of the saved file where the unit starts.
    pub line: usize,
    /// The text shown (verbatim; long texts cut with [`super::CUT_MARK`]).
    pub text: String,
    /// What it is.
    pub kind: UnitKind,
    /// Template id in [`Units::templates`].
    pub template: usize,
    /// Severity of the unit's text.
    pub sev: Severity,
    /// The path or heading that names what the unit is about (JSON path of a record or leaf,
    /// e.g. `results[].alerts`), scored with the text; empty when none.
    pub context: String,
    /// Fields of a structured unit: (field id in [`Units::fields`], raw value).
    pub fields: Vec<(usize, String)>,
    /// For a JSON record: each field as the file writes it (`"key": value`), parallel to
    /// `fields`, so a record can be shown by the fields that matter ([`Unit::render_pairs`]).
    pub pairs: Vec<String>,
    /// Separator of pairs in this unit's document (`", "` pretty, `","` compact).
    pub pair_sep: &'static str,
}

impl Unit {
    /// The record shown by the pairs `keep` (indices into [`Unit::pairs`]), in record order;
    /// ` … ` marks pairs left out, and the braces stand only when the record is shown whole.
    /// Falls back to [`Unit::text`] for units without pairs.
    pub fn render_pairs(&self, keep: &[usize]) -> String {
        if self.pairs.is_empty() || keep.is_empty() {
            return self.text.clone();
        }
        let mut keep: Vec<usize> = keep
            .iter()
            .copied()
            .filter(|&k| k < self.pairs.len())
            .collect();
        keep.sort_unstable();
        keep.dedup();
        if keep.len() == self.pairs.len() {
            return format!("{{{}}}", self.pairs.join(self.pair_sep));
        }
        let mut out = String::new();
        let mut prev: Option<usize> = None;
        if keep.first() != Some(&0) {
            out.push_str("… ");
        }
        for k in keep {
            if let Some(p) = prev {
                out.push_str(if k == p + 1 { self.pair_sep } else { " … " });
            }
            out.push_str(&self.pairs[k]);
            prev = Some(k);
        }
        if prev != Some(self.pairs.len() - 1) {
            out.push_str(" …");
        }
        out
    }

    /// The unit as the summary shows it: whole up to [`super::MAX_LINE_BYTES`]; a longer one as
    /// the window of that size holding most of the intent's words (errors, when none), marked
    /// [`super::CUT_MARK`] where it was cut. Cuts fall between words, and only at the window's
    /// ends, so no quoted string of the window is joined to another.
    pub fn display(&self, q: &super::rank::Query) -> String {
        let max = super::MAX_LINE_BYTES;
        let t = &self.text;
        if t.len() <= max {
            return t.clone();
        }
        // Byte offsets of words that match the intent (or say error).
        let mut hits: Vec<usize> = Vec::new();
        let mut start = None;
        for (i, c) in t.char_indices().chain(std::iter::once((t.len(), ' '))) {
            let word = c.is_alphanumeric() || c == '_' || c == '-';
            match (word, start) {
                (true, None) => start = Some(i),
                (false, Some(s0)) => {
                    let w = &t[s0..i];
                    let toks = super::rank::tokenize(w);
                    if toks.iter().any(|x| q.has(x)) || signal::severity(w) == Severity::Error {
                        hits.push(s0);
                    }
                    start = None;
                }
                _ => {}
            }
        }
        let span = max * 9 / 10;
        let mut best = (0usize, 0usize);
        for (k, &h) in hits.iter().enumerate() {
            let n = hits[k..].iter().take_while(|&&x| x < h + span).count();
            if n > best.1 {
                best = (h, n);
            }
        }
        if best.1 == 0 {
            return super::show_line(t);
        }
        // Centre the window on its hits, a little context before the first.
        let mut a = best.0.saturating_sub(span / 6);
        let mut z = (a + span).min(t.len());
        a = z.saturating_sub(span).min(a);
        while !t.is_char_boundary(a) {
            a -= 1;
        }
        while !t.is_char_boundary(z) {
            z += 1;
        }
        // Between words.
        if a > 0 {
            if let Some(p) = t[a..].find(' ') {
                if p < 40 {
                    a += p + 1;
                }
            }
        }
        if z < t.len() {
            if let Some(p) = t[a..z].rfind(' ') {
                if z - (a + p) < 40 {
                    z = a + p;
                }
            }
        }
        let mut out = String::new();
        if a > 0 {
            out.push_str(super::CUT_MARK);
            out.push(' ');
        }
        out.push_str(t[a..z].trim());
        if z < t.len() {
            out.push(' ');
            out.push_str(super::CUT_MARK);
        }
        out
    }

    /// The text the signals score: context and text, clipped.
    pub fn score_text(&self) -> String {
        if self.context.is_empty() {
            clip_str(&self.text, SCORE_BYTES).to_string()
        } else {
            format!("{} {}", self.context, clip_str(&self.text, SCORE_BYTES))
        }
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
}

/// A field of structured units.
#[derive(Debug, Clone)]
pub struct Field {
    /// Its name (a JSON path relative to the record, a column header, a `key=` key).
    pub name: String,
}

/// The units of one input.
#[derive(Debug, Clone, Default)]
pub struct Units {
    /// The units in input order.
    pub units: Vec<Unit>,
    /// Templates (index = [`Unit::template`]).
    pub templates: Vec<Template>,
    /// Fields (index = the id in [`Unit::fields`]).
    pub fields: Vec<Field>,
    /// Lines of the text.
    pub lines: usize,
    /// Bytes of the text.
    pub bytes: usize,
    /// Small shallow JSON objects found outside record arrays: (anchor line, path, rendering).
    pub objects: Vec<(usize, String, String)>,
    /// Whether the units are records (structured input) rather than lines.
    pub structured: bool,
}

/// Cuts `text` (of detected kind `kind`) into units.
///
/// The kind is a hint: the parser it names is tried first, then the others that the text's
/// shape allows (JSON after a short preamble, XML, delimited rows, a table with a header), and
/// plain lines when none applies.
pub fn build(text: &str, kind: Kind) -> Units {
    let mut b = Builder::new(text);
    let mut structured = match kind {
        Kind::Json | Kind::GoTestJson => json_doc(&mut b, text),
        Kind::Ndjson => ndjson(&mut b, text),
        Kind::Csv => csv(&mut b, text),
        Kind::Table | Kind::Listing => table(&mut b, text),
        _ => false,
    };
    let head = clip_str(text.trim_start(), 4096);
    let tries: [fn(&mut Builder, &str) -> bool; 4] = [json_after_preamble, xml_doc, csv, table];
    for (k, t) in tries.iter().enumerate() {
        if structured {
            break;
        }
        // Markup only when the text starts as markup.
        if k == 1 && !head.starts_with('<') {
            continue;
        }
        b.units.clear();
        b.objects.clear();
        structured = t(&mut b, text);
    }
    if !structured {
        b.units.clear();
        b.objects.clear();
        lines(&mut b, text);
    }
    b.finish(structured)
}

/// Most bytes of text before a JSON document (a test snapshot's header, a tool's banner).
const MAX_PREAMBLE: usize = 4096;

/// A JSON document after a short preamble: the first line that opens an object or array,
/// within [`MAX_PREAMBLE`] bytes, starts it. The preamble's lines are units too.
fn json_after_preamble(b: &mut Builder, text: &str) -> bool {
    let mut off = 0;
    for (i, l) in text.split('\n').enumerate() {
        if off > MAX_PREAMBLE {
            return false;
        }
        let t = l.trim_start();
        if i > 0 && (t.starts_with('{') || t.starts_with('[')) {
            let rest = &text[off..];
            let Ok(v) = serde_json::from_str::<Value>(rest) else {
                return false;
            };
            for (k, pl) in text[..off].split('\n').enumerate() {
                b.line(k + 1, pl);
            }
            let starts = line_starts(text);
            let mut w = JsonWalk {
                starts,
                text,
                pretty: pretty_style(rest),
                cursor: off,
                in_record: false,
            };
            w.walk(b, &v, "", 0);
            return true;
        }
        off += l.len() + 1;
    }
    false
}

/// An XML document ([`super::xmlunits`]).
fn xml_doc(b: &mut Builder, text: &str) -> bool {
    super::xmlunits::xml(b, text, &line_starts(text))
}

/// Byte offsets where each line starts (index 0 is line 1).
fn line_starts(text: &str) -> Vec<usize> {
    let mut v = vec![0];
    v.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    v
}

/// Collects units while a parser walks the text.
pub(super) struct Builder {
    units: Vec<Unit>,
    field_ids: HashMap<String, usize>,
    fields: Vec<Field>,
    objects: Vec<(usize, String, String)>,
    lines: usize,
    bytes: usize,
}

impl Builder {
    fn new(text: &str) -> Self {
        let lines = text.lines().count();
        Builder {
            units: Vec::new(),
            field_ids: HashMap::new(),
            fields: Vec::new(),
            objects: Vec::new(),
            lines,
            bytes: text.len(),
        }
    }

    /// The id of the field `name`, created on first use.
    pub(super) fn field(&mut self, name: &str) -> usize {
        if let Some(&i) = self.field_ids.get(name) {
            return i;
        }
        self.fields.push(Field {
            name: name.to_string(),
        });
        self.field_ids
            .insert(name.to_string(), self.fields.len() - 1);
        self.fields.len() - 1
    }

    /// Adds a unit; returns its index.
    pub(super) fn push(
        &mut self,
        line: usize,
        text: String,
        kind: UnitKind,
        context: String,
    ) -> usize {
        // A stack frame is the context of an error, not one of its own.
        let sev = if signal::is_frame(&text) && !signal::is_caused_by(&text) {
            Severity::None
        } else {
            signal::severity(clip_str(&text, 1000))
        };
        self.units.push(Unit {
            line,
            text,
            kind,
            template: 0,
            sev,
            context,
            fields: Vec::new(),
            pairs: Vec::new(),
            pair_sep: ", ",
        });
        self.units.len() - 1
    }

    /// Sets the fields of record `u`, with each field as the file writes it (`pairs`, parallel
    /// to `fields`) and the separator to show between pairs.
    pub(super) fn set_record(
        &mut self,
        u: usize,
        fields: Vec<(usize, String)>,
        pairs: Vec<String>,
        sep: &'static str,
    ) {
        let unit = &mut self.units[u];
        unit.fields = fields;
        unit.pairs = pairs;
        unit.pair_sep = sep;
    }

    /// Adds line `ln` (1-based) with text `l`: nothing when blank, parts when long, else one
    /// line unit with its `key=value` fields.
    pub(super) fn line(&mut self, ln: usize, l: &str) {
        let l = l.trim_end_matches('\r');
        if l.trim().is_empty() {
            return;
        }
        if l.len() > LONG_LINE_BYTES {
            for p in parts(l) {
                if !p.trim().is_empty() {
                    self.push(ln, keep_line(p.trim()), UnitKind::Part, String::new());
                }
            }
            return;
        }
        let fields = line_fields(l);
        let u = self.push(ln, keep_line(l), UnitKind::Line, String::new());
        let ids: Vec<(usize, String)> = fields
            .into_iter()
            .map(|(k, v)| (self.field(&k), v))
            .collect();
        self.units[u].fields = ids;
    }

    /// Groups units into templates: records by their field names and categorical values,
    /// lines by a Drain-like miner over their tokens.
    fn finish(mut self, structured: bool) -> Units {
        let mut templates: Vec<Template> = Vec::new();
        if structured {
            let mut by_sig: HashMap<String, usize> = HashMap::new();
            for u in &mut self.units {
                let sig = match u.kind {
                    UnitKind::Record => {
                        let mut names: Vec<usize> = u.fields.iter().map(|f| f.0).collect();
                        names.sort_unstable();
                        format!("{names:?}")
                    }
                    _ => format!("{:?}:{}", u.kind, u.context),
                };
                let id = *by_sig.entry(sig.clone()).or_insert_with(|| {
                    templates.push(Template {
                        text: if u.kind == UnitKind::Record {
                            u.context.clone()
                        } else {
                            sig
                        },
                        count: 0,
                        lines: 0,
                        first: u.line,
                        last: u.line,
                        sev: u.sev,
                        slots: Vec::new(),
                    });
                    templates.len() - 1
                });
                let t = &mut templates[id];
                if t.count == 0 || t.last != u.line {
                    t.lines += 1;
                }
                t.count += 1;
                t.last = u.line;
                u.template = id;
            }
        } else {
            mine(&mut self.units, &mut templates);
        }
        Units {
            units: self.units,
            templates,
            fields: self.fields,
            lines: self.lines,
            bytes: self.bytes,
            objects: self.objects,
            structured,
        }
    }
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
fn mine(units: &mut [Unit], templates: &mut Vec<Template>) {
    let mut toks_of: Vec<Vec<String>> = Vec::new();
    let mut buckets: HashMap<(Severity, usize), Vec<usize>> = HashMap::new();
    for u in units.iter_mut() {
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
            if sim >= thr && best.is_none_or(|(_, s)| sim > s) {
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
                });
                bucket.push(templates.len() - 1);
                templates.len() - 1
            }
        };
        let t = &mut templates[tid];
        if t.count == 0 || t.last != u.line {
            t.lines += 1;
        }
        t.count += 1;
        t.last = u.line;
        u.template = tid;
    }
    // Slot values, now that the templates' variable positions are known.
    for u in units.iter() {
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

/// `key=value` and `key: value` pairs of a line (logfmt, `Key: value` pages), and XML/HTML
/// attributes (`name="value"`): at most 16 per line.
fn line_fields(line: &str) -> Vec<(String, String)> {
    use regex::Regex;
    use std::sync::LazyLock;
    static KV: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?:^|[\s,;{(\[])([A-Za-z_][\w.\-]{0,40})(?:=|: ?)("[^"]{0,200}"|[^\s,;)\]}]{1,120})"#)
            .unwrap()
    });
    let mut out = Vec::new();
    for c in KV.captures_iter(clip_str(line, 2000)) {
        let k = c[1].to_string();
        let v = c[2].trim_matches('"').to_string();
        if !v.is_empty() {
            out.push((k, v));
        }
        if out.len() >= 16 {
            break;
        }
    }
    out
}

/// Where to cut a long line into parts: after a separator in the last third of each
/// [`PART_BYTES`] window, else at a char boundary.
pub fn parts(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while rest.len() > PART_BYTES + PART_BYTES / 3 {
        let window = clip_str(rest, PART_BYTES);
        let mut lo = window.len() * 2 / 3;
        while !window.is_char_boundary(lo) {
            lo -= 1;
        }
        let cut = [", ", ",", "; ", " ", "}", "]", ">"]
            .iter()
            .filter_map(|sep| window[lo..].rfind(sep).map(|p| lo + p + sep.len()))
            .max()
            .unwrap_or(window.len())
            .max(1);
        let mut cut = cut;
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Units of plain lines: every non-blank line; long lines as parts.
fn lines(b: &mut Builder, text: &str) {
    let all: Vec<&str> = text.split('\n').collect();
    let step = (all.len() / MAX_UNITS).max(1);
    for (i, raw) in all.iter().enumerate() {
        // Beyond MAX_UNITS lines, keep every step-th plain line (errors and warnings always).
        if step > 1 && i % step != 0 && signal::severity(clip_str(raw, 400)) == Severity::None {
            continue;
        }
        b.line(i + 1, raw);
    }
    table_runs(b);
}

/// Fewest consecutive lines split alike (`|`-bordered or tab-separated) for them to be a
/// table inside a text (a report's "Top 20 classes" table, a tab-separated section).
const MIN_RUN: usize = 4;

/// The cells of a `|`-bordered or tab-separated line, with the delimiter; `None` for other
/// lines and for rules (`+----+`, `|---|`).
fn run_cells(line: &str) -> Option<(char, Vec<String>)> {
    let t = line.trim();
    if t.chars()
        .all(|c| matches!(c, '+' | '-' | '|' | '=' | ':' | ' '))
    {
        return None;
    }
    if t.matches('|').count() >= 3 {
        let cells: Vec<String> = t
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect();
        return Some(('|', cells));
    }
    if line.matches('\t').count() >= 2 {
        return Some((
            '\t',
            line.split('\t').map(|c| c.trim().to_string()).collect(),
        ));
    }
    None
}

/// Gives the line units of each table found inside a text (runs of lines split alike) the
/// fields named by the run's first line, so signals see its columns.
fn table_runs(b: &mut Builder) {
    let n = b.units.len();
    let mut i = 0;
    while i < n {
        let Some((d, head)) = run_cells(&b.units[i].text).filter(|(_, c)| c.len() >= 3) else {
            i += 1;
            continue;
        };
        // The run: following lines with the same delimiter and cell count; rules between
        // rows are allowed (they are not units when blank, and are skipped when drawn).
        let mut j = i + 1;
        let mut rows = Vec::new();
        while j < n && b.units[j].line <= b.units[j - 1].line + 2 {
            match run_cells(&b.units[j].text) {
                Some((d2, c)) if d2 == d && c.len() == head.len() => rows.push((j, c)),
                None if b.units[j].text.trim().starts_with(['+', '|', '-', '=']) => {}
                _ => break,
            }
            j += 1;
        }
        if rows.len() + 1 >= MIN_RUN {
            let numeric_head = head
                .iter()
                .filter(|c| super::signals::number(c).is_some())
                .count();
            let names: Vec<String> = if numeric_head * 2 < head.len() {
                head.clone()
            } else {
                (1..=head.len()).map(|k| format!("column {k}")).collect()
            };
            let ids: Vec<usize> = names.iter().map(|n| b.field(n)).collect();
            for (u, cells) in rows {
                b.units[u].fields = ids.iter().copied().zip(cells).collect();
            }
        }
        i = j.max(i + 1);
    }
}

/// How the JSON text writes a key and its value: `"k": v` (pretty) or `"k":v` (compact).
fn pretty_style(text: &str) -> bool {
    let head = clip_str(text, 64 * 1024);
    let spaced = head.matches("\": ").count();
    let tight = head.matches("\":").count().saturating_sub(spaced);
    spaced >= tight
}

/// A scalar as JSON text (strings quoted and escaped as serde_json writes them).
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => Some(v.to_string()),
        _ => None,
    }
}

/// The plain value of a scalar (strings unquoted), for field statistics.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Scalar leaves of an object, depth-first, as (relative path, value), at most `max`.
fn flat_leaves<'a>(
    v: &'a Value,
    prefix: &str,
    depth: usize,
    max: usize,
    out: &mut Vec<(String, &'a Value)>,
) {
    if out.len() >= max || depth > 3 {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match x {
                    Value::Object(_) => flat_leaves(x, &p, depth + 1, max, out),
                    Value::Array(a)
                        if a.iter().all(|e| !e.is_object() && !e.is_array()) && a.len() <= 8 =>
                    {
                        for e in a {
                            if out.len() < max {
                                out.push((format!("{p}[]"), e));
                            }
                        }
                    }
                    Value::Array(_) => {}
                    _ => out.push((p, x)),
                }
                if out.len() >= max {
                    return;
                }
            }
        }
        _ => out.push((prefix.to_string(), v)),
    }
}

/// Each scalar leaf as the file writes it: `"key": value` (`"key":value` when compact); long
/// string values are cut outside their quotes.
fn pairs(leaves: &[(String, &Value)], pretty: bool) -> Vec<String> {
    let sep = if pretty { "\": " } else { "\":" };
    leaves
        .iter()
        .map(|(k, v)| {
            let key = k.rsplit('.').next().unwrap_or(k).trim_end_matches("[]");
            let pair = format!("\"{key}{sep}{}", scalar(v).unwrap_or_default());
            show_line_max(&pair, RECORD_SHOW_BYTES / 2)
        })
        .collect()
}

/// Renders a record: its scalar leaves as `"key": value` pairs (the file's own spacing), joined
/// by `, `, in braces when whole; a record too long to show whole ends with the cut mark.
fn render_record(leaves: &[(String, &Value)], pretty: bool) -> String {
    let sep = if pretty { "\": " } else { "\":" };
    let mut out = String::from("{");
    let mut cut = false;
    for (i, (k, v)) in leaves.iter().enumerate() {
        let Some(val) = scalar(v) else { continue };
        let key = k.rsplit('.').next().unwrap_or(k).trim_end_matches("[]");
        let pair = format!("\"{key}{sep}{val}");
        if out.len() + pair.len() > RECORD_SHOW_BYTES {
            // A long string value is cut outside its quotes, never inside.
            cut = true;
            if i == 0 {
                out.push_str(&show_line_max(&pair, RECORD_SHOW_BYTES));
            }
            break;
        }
        if i > 0 {
            out.push_str(if pretty { ", " } else { "," });
        }
        out.push_str(&pair);
    }
    if cut {
        out.push_str(&format!(" {}", super::CUT_MARK));
    } else {
        out.push('}');
    }
    out
}

/// Walks a JSON document: arrays of objects become records, other scalars leaves, small
/// shallow objects are noted whole, and strings holding JSON or many lines are unwrapped.
struct JsonWalk<'t> {
    starts: Vec<usize>,
    text: &'t str,
    pretty: bool,
    /// Byte offset where the search for the next key's line continues.
    cursor: usize,
    /// Inside a record: its nested objects are part of it, not objects of their own.
    in_record: bool,
}

impl JsonWalk<'_> {
    /// The line of the next occurrence of `"key"` at or after the cursor (approximate for
    /// repeated keys, exact for documents read in order, which serde_json's map keeps when
    /// the keys are unique per object).
    fn line_of_key(&mut self, key: &str) -> usize {
        let needle = format!("\"{key}\"");
        let hay = &self.text.as_bytes()[self.cursor.min(self.text.len())..];
        if let Some(p) = memchr::memmem::find(hay, needle.as_bytes()) {
            self.cursor += p + needle.len();
        }
        match self.starts.binary_search(&self.cursor) {
            Ok(i) => i + 1,
            Err(i) => i.max(1),
        }
    }

    fn here(&self) -> usize {
        match self.starts.binary_search(&self.cursor) {
            Ok(i) => i + 1,
            Err(i) => i.max(1),
        }
    }

    fn walk(&mut self, b: &mut Builder, v: &Value, path: &str, depth: usize) {
        if depth > MAX_JSON_DEPTH || b.units.len() >= MAX_UNITS {
            return;
        }
        match v {
            Value::Object(m) => {
                let scalars = m.values().filter(|x| scalar(x).is_some()).count();
                let nested = m.len() - scalars;
                if !self.in_record && depth > 0 && (2..=14).contains(&scalars) && nested <= 2 {
                    let leaves: Vec<(String, &Value)> = m
                        .iter()
                        .filter(|(_, x)| scalar(x).is_some())
                        .map(|(k, x)| (k.clone(), x))
                        .collect();
                    let line = self.here();
                    b.objects
                        .push((line, path.to_string(), render_record(&leaves, self.pretty)));
                }
                for (k, x) in m {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    let line = self.line_of_key(k);
                    match x {
                        Value::String(s) if s.len() >= EMBEDDED_MIN || s.contains('\n') => {
                            self.string(b, s, &p, line, depth)
                        }
                        _ if scalar(x).is_some() => {
                            let sep = if self.pretty { "\": " } else { "\":" };
                            let shown =
                                keep_line(&format!("\"{k}{sep}{}", scalar(x).unwrap_or_default()));
                            let u = b.push(line, shown, UnitKind::Leaf, p.clone());
                            let f = b.field(&p);
                            b.units[u].fields.push((f, plain(x)));
                        }
                        _ => self.walk(b, x, &p, depth + 1),
                    }
                }
            }
            Value::Array(a) => {
                let objects = a.iter().filter(|x| x.is_object()).count();
                let p = format!("{path}[]");
                // Inside a record, an array of objects is records however short (each
                // record's copy of it is one of many).
                let min = if self.in_record { 1 } else { MIN_RECORDS };
                if objects >= min && objects * 10 >= a.len() * 8 {
                    for x in a {
                        self.record(b, x, &p, depth);
                    }
                } else {
                    for x in a {
                        match x {
                            Value::String(s) if s.len() >= EMBEDDED_MIN || s.contains('\n') => {
                                let line = self.here();
                                self.string(b, s, &p, line, depth)
                            }
                            _ if scalar(x).is_some() => {
                                let line = self.here();
                                let shown = keep_line(&scalar(x).unwrap_or_default());
                                let u = b.push(line, shown, UnitKind::Leaf, p.clone());
                                let f = b.field(&p);
                                b.units[u].fields.push((f, plain(x)));
                            }
                            _ => self.walk(b, x, &p, depth + 1),
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// One element of a record array.
    fn record(&mut self, b: &mut Builder, x: &Value, path: &str, depth: usize) {
        let Value::Object(m) = x else {
            return self.walk(b, x, path, depth + 1);
        };
        // Anchor: the record's first key.
        let line = m.keys().next().map_or(self.here(), |k| {
            let save = self.cursor;
            let l = self.line_of_key(k);
            self.cursor = save;
            l
        });
        let mut leaves = Vec::new();
        flat_leaves(x, "", 0, 48, &mut leaves);
        let shown = render_record(&leaves, self.pretty);
        let u = b.push(line, shown, UnitKind::Record, path.to_string());
        let ids: Vec<(usize, String)> =
            leaves.iter().map(|(k, v)| (b.field(k), plain(v))).collect();
        b.units[u].fields = ids;
        b.units[u].pairs = pairs(&leaves, self.pretty);
        b.units[u].pair_sep = if self.pretty { ", " } else { "," };
        // Nested arrays of objects and long strings inside the record are walked too.
        let was = std::mem::replace(&mut self.in_record, true);
        for (k, v) in m {
            let p = format!("{path}.{k}");
            match v {
                Value::Array(a) if a.iter().any(|e| e.is_object()) => {
                    let _ = self.line_of_key(k);
                    self.walk(b, v, &p, depth + 1)
                }
                Value::Object(o) if o.values().any(|e| e.is_array() || e.is_object()) => {
                    let _ = self.line_of_key(k);
                    self.walk(b, v, &p, depth + 1)
                }
                Value::String(s)
                    if s.len() >= EMBEDDED_MIN
                        && (s.contains('\n') || s.trim_start().starts_with(['{', '['])) =>
                {
                    let line = self.line_of_key(k);
                    self.string(b, s, &p, line, depth)
                }
                _ => {}
            }
        }
        self.in_record = was;
        // The walk for the next record resumes after this one's keys.
        if let Some(k) = m.keys().next_back() {
            let _ = self.line_of_key(k);
        }
    }

    /// A long string value: embedded JSON is walked as a document of its own; text with
    /// lines gives a unit per line (anchored at the string's line); else one leaf.
    fn string(&mut self, b: &mut Builder, s: &str, path: &str, line: usize, depth: usize) {
        let t = s.trim_start();
        if t.starts_with(['{', '[']) {
            if let Ok(inner) = serde_json::from_str::<Value>(s) {
                let mut w = JsonWalk {
                    starts: vec![0],
                    text: "",
                    pretty: pretty_style(s),
                    cursor: 0,
                    in_record: self.in_record,
                };
                let before = b.units.len();
                let objects = b.objects.len();
                w.walk(b, &inner, path, depth + 1);
                // Shown as the saved file has them: escaped inside the string.
                for u in &mut b.units[before..] {
                    u.line = line;
                    u.text = escape(&u.text);
                    for p in &mut u.pairs {
                        *p = escape(p);
                    }
                }
                for o in &mut b.objects[objects..] {
                    o.0 = line;
                    o.2 = escape(&o.2);
                }
                return;
            }
        }
        if s.contains('\n') {
            // Each line shown as the saved file has it: escaped inside the JSON string.
            for l in s.split('\n') {
                let l = l.trim_end_matches('\r');
                if l.trim().is_empty() {
                    continue;
                }
                if l.len() > LONG_LINE_BYTES {
                    for p in parts(l) {
                        b.push(
                            line,
                            keep_line(&escape(p.trim())),
                            UnitKind::Part,
                            path.to_string(),
                        );
                    }
                } else {
                    b.push(
                        line,
                        keep_line(&escape(l)),
                        UnitKind::Line,
                        path.to_string(),
                    );
                }
            }
            return;
        }
        let key = path
            .rsplit('.')
            .next()
            .unwrap_or(path)
            .trim_end_matches("[]");
        let sep = if self.pretty { "\": " } else { "\":" };
        let whole = format!("\"{key}{sep}{}", Value::String(s.to_string()));
        if whole.len() > LONG_LINE_BYTES {
            for p in parts(s) {
                b.push(line, keep_line(p.trim()), UnitKind::Part, path.to_string());
            }
        } else {
            let u = b.push(line, keep_line(&whole), UnitKind::Leaf, path.to_string());
            let f = b.field(path);
            b.units[u].fields.push((f, s.to_string()));
        }
    }
}

/// `s` as it is written inside a JSON string (quotes, backslashes and control characters
/// escaped, as serde_json writes them), without the surrounding quotes.
fn escape(s: &str) -> String {
    let q = Value::String(s.to_string()).to_string();
    q[1..q.len() - 1].to_string()
}

/// A JSON document. Returns false when it does not parse.
fn json_doc(b: &mut Builder, text: &str) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    let mut w = JsonWalk {
        starts: line_starts(text),
        text,
        pretty: pretty_style(text),
        cursor: 0,
        in_record: false,
    };
    w.walk(b, &v, "", 0);
    !b.units.is_empty()
}

/// Newline-delimited JSON: each object line is a record; other lines are lines.
fn ndjson(b: &mut Builder, text: &str) -> bool {
    let pretty = pretty_style(text);
    for (i, l) in text.split('\n').enumerate() {
        if b.units.len() >= MAX_UNITS {
            break;
        }
        let l = l.trim_end_matches('\r');
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(l) {
            Ok(v @ Value::Object(_)) => {
                let mut leaves = Vec::new();
                flat_leaves(&v, "", 0, 48, &mut leaves);
                // A line short enough is shown as it is; a long one as its leaves.
                let shown = if l.len() <= RECORD_SHOW_BYTES {
                    keep_line(l)
                } else {
                    render_record(&leaves, pretty)
                };
                let u = b.push(i + 1, shown, UnitKind::Record, String::new());
                let ids: Vec<(usize, String)> =
                    leaves.iter().map(|(k, v)| (b.field(k), plain(v))).collect();
                b.units[u].fields = ids;
                b.units[u].pairs = pairs(&leaves, pretty);
                b.units[u].pair_sep = if pretty { ", " } else { "," };
                // Long text fields (a log message with its own lines) are units too.
                if let Value::Object(m) = &v {
                    for (k, x) in m {
                        if let Value::String(s) = x {
                            if s.len() >= EMBEDDED_MIN && s.contains('\n') {
                                let mut w = JsonWalk {
                                    starts: vec![0],
                                    text: "",
                                    pretty,
                                    cursor: 0,
                                    in_record: false,
                                };
                                w.string(b, s, k, i + 1, 1);
                            }
                        }
                    }
                }
            }
            _ => {
                b.push(i + 1, keep_line(l), UnitKind::Line, String::new());
            }
        }
    }
    !b.units.is_empty()
}

/// The delimiter of a CSV-like text: the one of `,`, `;`, tab, `|` that splits the first lines
/// into the same number of fields, most fields first.
fn delimiter(lines: &[&str]) -> Option<char> {
    let mut best: Option<(char, usize)> = None;
    for d in [',', '\t', ';', '|'] {
        let counts: Vec<usize> = lines
            .iter()
            .take(20)
            .map(|l| split_csv(l, d).len())
            .collect();
        let Some(&first) = counts.first() else {
            continue;
        };
        if first >= 3
            && counts.iter().filter(|&&c| c == first).count() * 10 >= counts.len() * 8
            && best.is_none_or(|(_, n)| first > n)
        {
            best = Some((d, first));
        }
    }
    best.map(|(d, _)| d)
}

/// Splits one CSV line on `d`, honouring double quotes.
fn split_csv(line: &str, d: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut q = false;
    for c in line.chars() {
        if c == '"' {
            q = !q;
        } else if c == d && !q {
            out.push(std::mem::take(&mut cur));
            continue;
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().trim_matches('"').to_string())
        .collect()
}

/// CSV / TSV with a header row: each row a record with its columns as fields.
fn csv(b: &mut Builder, text: &str) -> bool {
    let all: Vec<&str> = text.split('\n').collect();
    let nonblank: Vec<&str> = all
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    if nonblank.len() < 3 {
        return false;
    }
    let Some(d) = delimiter(&nonblank) else {
        return false;
    };
    let mut header: Option<Vec<usize>> = None;
    for (i, raw) in all.iter().enumerate() {
        if b.units.len() >= MAX_UNITS {
            break;
        }
        let l = raw.trim_end_matches('\r');
        if l.trim().is_empty() {
            continue;
        }
        let cells = split_csv(l, d);
        match &header {
            None => {
                header = Some(cells.iter().map(|c| b.field(c)).collect());
                b.push(i + 1, keep_line(l), UnitKind::Line, String::new());
            }
            Some(h) => {
                let h = h.clone();
                let u = b.push(i + 1, keep_line(l), UnitKind::Record, String::new());
                b.units[u].fields = h.into_iter().zip(cells).collect();
            }
        }
    }
    header.is_some() && b.units.len() >= 3
}

/// A whitespace-aligned table with a header (ps, kubectl get, df, dpkg -l): rows with columns.
fn table(b: &mut Builder, text: &str) -> bool {
    let all: Vec<&str> = text.split('\n').collect();
    let Some((hdr, cols)) = super::table::find_header(&all) else {
        return false;
    };
    let ids: Vec<usize> = cols.iter().map(|(_, n)| b.field(n)).collect();
    let body: Vec<usize> = (hdr + 1..all.len())
        .filter(|&i| !all[i].trim().is_empty())
        .collect();
    let aligned = super::table::aligned(&all, &body, &cols);
    for (i, raw) in all.iter().enumerate() {
        if b.units.len() >= MAX_UNITS {
            break;
        }
        let l = raw.trim_end_matches('\r');
        if l.trim().is_empty() {
            continue;
        }
        if i <= hdr {
            b.push(i + 1, keep_line(l), UnitKind::Line, String::new());
            continue;
        }
        let cells = super::table::split_row(l, &cols, aligned);
        let u = b.push(i + 1, keep_line(l), UnitKind::Record, String::new());
        b.units[u].fields = ids.iter().copied().zip(cells).collect();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_become_parts() {
        let line = format!(
            "{}FATAL: disk quota exceeded{}",
            "a, ".repeat(3000),
            ", b".repeat(3000)
        );
        let u = build(&line, Kind::Lines);
        assert!(u.units.len() > 20, "{}", u.units.len());
        assert!(u
            .units
            .iter()
            .all(|x| x.line == 1 && x.kind == UnitKind::Part));
        assert!(u.units.iter().any(
            |x| x.text.contains("FATAL: disk quota") || x.text.contains("disk quota exceeded")
        ));
        assert!(u.units.iter().any(|x| x.sev == Severity::Error));
    }

    #[test]
    fn json_records_and_leaves() {
        let text = r#"{
  "stats": {"tests": 12, "failures": 1, "passes": 11},
  "results": [
    {"name": "a", "state": "passed", "ms": 3},
    {"name": "b", "state": "failed", "ms": 900},
    {"name": "c", "state": "passed", "ms": 4}
  ]
}"#;
        let u = build(text, Kind::Json);
        assert!(u.structured);
        let rec: Vec<&Unit> = u
            .units
            .iter()
            .filter(|x| x.kind == UnitKind::Record)
            .collect();
        assert_eq!(rec.len(), 3);
        assert_eq!(rec[1].line, 5);
        assert!(
            rec[1].text.contains("\"state\": \"failed\""),
            "{}",
            rec[1].text
        );
        assert!(
            u.objects
                .iter()
                .any(|(l, p, r)| *l == 2 && p == "stats" && r.contains("\"failures\": 1")),
            "{:?}",
            u.objects
        );
        // Leaves carry their path.
        assert!(u
            .units
            .iter()
            .any(|x| x.kind == UnitKind::Leaf && x.context == "stats.failures"));
    }

    #[test]
    fn embedded_json_and_text_are_unwrapped() {
        let inner = r#"{"alerts":[{"name":"cpu","state":"inactive"},{"name":"disk","state":"firing"},{"name":"mem","state":"inactive"}]}"#;
        let text = serde_json::json!({"content": [{"type": "text", "text": inner}]}).to_string();
        let u = build(&text, Kind::Json);
        assert!(
            u.units.iter().any(|x| x.kind == UnitKind::Record
                && x.text
                    .contains(r#"{\"name\":\"disk\",\"state\":\"firing\"}"#)),
            "{:?}",
            u.units
        );
        let log =
            serde_json::json!({"output": "step 1 ok\nstep 2 ok\nERROR: step 3 failed: exit 2\n"})
                .to_string();
        let u = build(&log, Kind::Json);
        assert!(u
            .units
            .iter()
            .any(|x| x.text == "ERROR: step 3 failed: exit 2" && x.sev == Severity::Error));
    }

    #[test]
    fn templates_count_lines_and_slot_values() {
        let mut text = String::new();
        for i in 0..30 {
            let ep = ["/api/users", "/api/orders", "/health"][i % 3];
            text.push_str(&format!(
                "2024-01-01T10:00:{:02} GET {ep} 200 {i}ms id={}\n",
                i,
                1000 + i
            ));
        }
        text.push_str("2024-01-01T10:01:00 Accepted password for root from 10.0.0.1\n");
        let u = build(&text, Kind::Log);
        let big = u.templates.iter().max_by_key(|t| t.count).unwrap();
        assert_eq!(big.count, 30, "{:?}", u.templates);
        assert_eq!(u.templates.len(), 2);
        // The endpoint is a variable position: its values are counted.
        assert!(
            big.slots.iter().any(|s| s.get("/api/users") == Some(&10)),
            "{:?}",
            big.slots
        );
        let t = &u.templates[u.units.last().unwrap().template];
        assert_eq!(t.count, 1);
    }

    #[test]
    fn csv_rows_have_columns() {
        let text = "name,size,owner\nalpha,10,root\nbeta,2000,bob\ngamma,3,root\n";
        let u = build(text, Kind::Csv);
        assert!(u.structured);
        let size = u.fields.iter().position(|f| f.name == "size").unwrap();
        let rec: Vec<&Unit> = u
            .units
            .iter()
            .filter(|x| x.kind == UnitKind::Record)
            .collect();
        assert_eq!(rec.len(), 3);
        assert!(rec[1].fields.contains(&(size, "2000".to_string())));
    }
}
