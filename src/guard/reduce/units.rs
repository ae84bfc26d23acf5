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

use super::signal::{self, Severity};
use super::{clip_str, show_line_max, Kind};

mod ancestry;
mod described;
mod json;
mod rows;
pub(crate) use rows::split_csv;
mod stanzas;
mod templates;

use described::{described_only, descriptive_key};
use json::{json_after_preamble, json_doc, json_stream, ndjson};
pub(crate) use json::{
    map_of_lists, map_of_records, pretty_style, table_columns, written_in, Escapes,
};
use rows::{aligned_runs, csv, table, table_runs};
use stanzas::stanzas;
use templates::mine;
pub use templates::Template;

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
/// Longest first token a line cut around its matches keeps before the cut (bytes).
const HEAD_TOKEN_BYTES: usize = 48;
/// Bytes of a unit's text used for scoring (longer ones are scored on their start).
const SCORE_BYTES: usize = 1_200;
/// Most units built from one input: beyond it lines are sampled evenly (keeps a 16 MiB input
/// within a few hundred ms; every line still counts in the template statistics).
pub const MAX_UNITS: usize = 200_000;

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
    /// Whether [`Unit::pairs`] stop before the record ends (a record of more leaves than are
    /// read): it is never shown as whole, and ends on ` …`.
    pub cut: bool,
    /// For a record nested in records: the outermost one's naming pair as the file writes it
    /// (`"title": "tests/retry.spec.ts",`), which says whose result this is; empty otherwise.
    pub parent: String,
    /// Words of the lines that open the indented blocks this line sits in, nearest first
    /// ([`ancestry::Openers`]); scored with the text, never shown. Empty for units that are not
    /// plain lines, or lines in no block.
    pub ancestry: String,
}

impl Unit {
    /// The record shown by the pairs `keep` (indices into [`Unit::pairs`]), in record order;
    /// ` … ` marks pairs left out, and the braces stand only when the record is shown whole.
    /// Falls back to [`Unit::text`] for units without pairs.
    pub fn render_pairs(&self, keep: &[usize]) -> String {
        self.render_pairs_with(keep, &HashMap::new())
    }

    /// [`Unit::render_pairs`], with the pairs in `heads` shown as the text given there (a
    /// long pair's head, already marked where it was cut).
    pub fn render_pairs_with(&self, keep: &[usize], heads: &HashMap<usize, String>) -> String {
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
        let mut out = String::new();
        let whole = keep.len() == self.pairs.len() && heads.is_empty() && !self.cut;
        // Braces for a JSON record shown whole; rows and elements are their pairs alone.
        let braces = whole && matches!(self.pair_sep, ", " | ",");
        if braces {
            out.push('{');
        } else if keep.first() != Some(&0) {
            out.push_str("… ");
        }
        let mut prev: Option<usize> = None;
        for k in keep {
            // Pairs that share one text (an XML leaf's attribute has its leaf's pair) are
            // shown once.
            if prev.is_some_and(|p| k == p + 1 && self.pairs[p] == self.pairs[k]) {
                prev = Some(k);
                continue;
            }
            if let Some(p) = prev {
                out.push_str(if k == p + 1 && !heads.contains_key(&p) {
                    self.joiner(p)
                } else {
                    " … "
                });
            }
            out.push_str(heads.get(&k).unwrap_or(&self.pairs[k]));
            prev = Some(k);
        }
        if braces {
            // A record cut at its most leaves ends at a member the file follows with a comma.
            if out.ends_with(',') {
                out.pop();
            }
            out.push('}');
        } else if !whole && (prev != Some(self.pairs.len() - 1) || self.cut) {
            out.push_str(" …");
        }
        out
    }

    /// Pairs `a..=b` as the file writes them one after another (`<name>ge-0/0/0</name>
    /// <admin-status>up</admin-status>`), with no marks for the pairs around them; a pair that
    /// shares its text with the one before it (an XML leaf's attribute) is shown once.
    /// `None` when the unit holds no such pairs (`b` past its last, or `a > b`).
    pub fn span(&self, a: usize, b: usize) -> Option<String> {
        if a > b || b >= self.pairs.len() {
            return None;
        }
        let mut out = self.pairs[a].clone();
        for k in a + 1..=b {
            if self.pairs[k] == self.pairs[k - 1] {
                continue;
            }
            out.push_str(self.joiner(k - 1));
            out.push_str(&self.pairs[k]);
        }
        Some(out)
    }

    /// What goes between pair `k` and the next one: [`Unit::pair_sep`], or only its spacing
    /// when the pair already ends with the file's own comma (JSON leaves, `"key": value,`).
    fn joiner(&self, k: usize) -> &'static str {
        if self.pairs[k].ends_with(',') {
            if self.pair_sep.ends_with(' ') {
                " "
            } else {
                ""
            }
        } else {
            self.pair_sep
        }
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
            // A row's first token names it when it is an id (a read `SRR065390.25192538`, a
            // request `req-42`: letters and digits): kept when short.
            let head = t.split_whitespace().next().unwrap_or("");
            let id =
                head.chars().any(|c| c.is_ascii_digit()) && head.chars().any(char::is_alphabetic);
            // Wholly before the window (after any indentation), so nothing is shown twice.
            let head_end = t.len() - t.trim_start().len() + head.len();
            if id && head.len() <= HEAD_TOKEN_BYTES && head_end < a {
                out.push_str(head);
                out.push(' ');
            }
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

    /// The text the signals score: context, ancestry and text, clipped.
    pub fn score_text(&self) -> String {
        let mut out = String::new();
        for part in [self.context.as_str(), self.ancestry.as_str()] {
            if !part.is_empty() {
                out.push_str(part);
                out.push(' ');
            }
        }
        out.push_str(clip_str(&self.text, SCORE_BYTES));
        out
    }
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
    /// Line ranges (1-based, inclusive) of records written over several lines (vertical
    /// records), sorted: a line inside one is shown as part of its record, not on its own.
    pub spans: Vec<(usize, usize)>,
    /// Whether the units are records (structured input) rather than lines.
    pub structured: bool,
}

/// Cuts `text` (of detected kind `kind`) into units.
///
/// The kind is a hint: the parser it names is tried first, then the others that the text's
/// shape allows (a stream of JSON objects, JSON after a short preamble, XML, vertical records,
/// delimited rows, a table with a header), and
/// plain lines when none applies.
pub fn build(text: &str, kind: Kind) -> Units {
    let mut b = Builder::new(text);
    if kind == Kind::Html {
        html_blocks(&mut b, text);
        return b.finish(false);
    }
    let mut structured = match kind {
        Kind::Json | Kind::GoTestJson => json_doc(&mut b, text),
        Kind::Ndjson => ndjson(&mut b, text),
        Kind::Csv => csv(&mut b, text),
        Kind::Table | Kind::Listing => table(&mut b, text),
        _ => false,
    };
    let head = clip_str(text.trim_start(), 4096);
    let tries: [fn(&mut Builder, &str) -> bool; 6] = [
        json_stream,
        json_after_preamble,
        xml_doc,
        stanzas,
        csv,
        table,
    ];
    for (k, t) in tries.iter().enumerate() {
        if structured {
            break;
        }
        // Markup only when the text starts as markup, or declares itself after a short
        // preamble (the `$ airport --scan --xml` command line it was printed by).
        if k == 2 && !head.starts_with('<') && !declared_markup(head) {
            continue;
        }
        b.units.clear();
        b.objects.clear();
        b.spans.clear();
        structured = t(&mut b, text);
    }
    if !structured {
        b.units.clear();
        b.objects.clear();
        b.spans.clear();
        lines(&mut b, text);
    }
    b.finish(structured)
}

/// Fewest words of an HTML block for it to be a unit (not a menu entry or a button).
const MIN_HTML_BLOCK_WORDS: usize = 4;

/// Units of an HTML page: its readable blocks (paragraphs, headings, list items, cells; tags,
/// scripts and styles removed, entities decoded), each anchored at the line it is on, so the
/// article's sentences are ranked rather than windows of markup. The page's `<meta>`
/// descriptions and JSON-LD are on its lines too, as text.
///
/// A short line is kept as the page writes it, tags and all (`<h3>Title</h3>`), when it
/// has readable text or is a `<meta>` / `<time>` tag; only long lines (a minified page) are
/// split into their readable blocks.
fn html_blocks(b: &mut Builder, text: &str) {
    let raw: Vec<&str> = text.split('\n').collect();
    for (i, line) in super::html::strip_blocks(text).iter().enumerate() {
        let r = raw.get(i).copied().unwrap_or("");
        if r.len() <= LONG_LINE_BYTES {
            let t = r.trim_start();
            if !line.trim().is_empty() || t.starts_with("<meta") || t.starts_with("<time") {
                b.line(i + 1, r);
            }
            continue;
        }
        for block in line.split(super::html::BLOCK_SEP) {
            if block.split_whitespace().count() >= MIN_HTML_BLOCK_WORDS {
                b.line(i + 1, block);
            }
        }
        // The page's structured data (`<script type="application/ld+json">`: headline,
        // author, dates), which the readable blocks leave out with the scripts.
        let mut rest = r;
        while let Some(p) = rest.find("application/ld+json") {
            rest = &rest[p..];
            let Some(open) = rest.find('>') else { break };
            let body = &rest[open + 1..];
            let end = body.find("</script>").unwrap_or(body.len());
            json::json_line(b, i + 1, body[..end].trim());
            rest = &body[end..];
        }
    }
}

/// Lines of preamble (a command line, a banner) before an XML declaration that still make the
/// text an XML document.
const MAX_MARKUP_PREAMBLE_LINES: usize = 3;

/// True when one of the first lines after a short preamble is an XML declaration or a
/// document type (`<?xml version=...`, `<!DOCTYPE plist ...`).
fn declared_markup(head: &str) -> bool {
    head.lines().take(MAX_MARKUP_PREAMBLE_LINES + 1).any(|l| {
        let l = l.trim_start();
        l.starts_with("<?xml") || l.starts_with("<!DOCTYPE")
    })
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

/// True when 1-based line `n` lies in one of `spans` (sorted, 1-based inclusive line ranges,
/// as [`Units::spans`]).
pub fn in_spans(spans: &[(usize, usize)], n: usize) -> bool {
    let k = spans.partition_point(|s| s.0 <= n);
    k > 0 && spans[k - 1].1 >= n
}

/// Collects units while a parser walks the text.
pub(super) struct Builder {
    units: Vec<Unit>,
    field_ids: HashMap<String, usize>,
    fields: Vec<Field>,
    objects: Vec<(usize, String, String)>,
    spans: Vec<(usize, usize)>,
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
            spans: Vec::new(),
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
            cut: false,
            parent: String::new(),
            ancestry: String::new(),
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

    /// Says whose record unit `u` is: the outermost record's naming pair ([`Unit::parent`]).
    pub(super) fn set_parent(&mut self, u: usize, parent: String) {
        self.units[u].parent = parent;
    }

    /// Adds line `ln` (1-based) with text `l`: nothing when blank, parts when long, else one
    /// line unit with its `key=value` fields.
    pub(super) fn line(&mut self, ln: usize, l: &str) {
        let l = l.trim_end_matches('\r');
        if l.trim().is_empty() {
            return;
        }
        if l.len() > LONG_LINE_BYTES {
            if json::json_line(self, ln, l) {
                return;
            }
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

    /// Marks as errors the lines a tally of errors counts ([`signal::counted_by_tally`]):
    /// the line units right above it, one line after another.
    fn count_tallied(&mut self) {
        let mut i = 0;
        while i < self.units.len() {
            // A run of line units on consecutive lines.
            let mut j = i + 1;
            while j < self.units.len()
                && self.units[j].kind == UnitKind::Line
                && self.units[j].line == self.units[j - 1].line + 1
            {
                j += 1;
            }
            let run = &self.units[i..j];
            if run.len() > 1 && run[0].kind == UnitKind::Line {
                let texts: Vec<&str> = run.iter().map(|u| u.text.as_str()).collect();
                let sevs: Vec<Severity> = run.iter().map(|u| u.sev).collect();
                for k in signal::counted_by_tally(&texts, &sevs) {
                    self.units[i + k].sev = Severity::Error;
                }
            }
            i = j;
        }
    }

    /// Groups units into templates: records by their field names and categorical values,
    /// lines by a Drain-like miner over their tokens.
    fn finish(mut self, structured: bool) -> Units {
        // A record whose error words are all in what describes or names it is no error, nor
        // is a value or a piece of a long text under such a key (a crate's README lines).
        for u in self.units.iter_mut().filter(|u| u.sev != Severity::None) {
            let descriptive = match u.kind {
                UnitKind::Record => described_only(u, &self.fields),
                // Or a name in a list (`errors` among a Go package's `Imports`).
                UnitKind::Leaf | UnitKind::Part => {
                    descriptive_key(&u.context)
                        || u.context.ends_with("[]") && !u.text.trim().contains(char::is_whitespace)
                }
                // A line of a document's string value (`"description": "…\n…"`), or one name
                // of a list (`errors` among a Go package's `Imports`).
                UnitKind::Line if structured => {
                    descriptive_key(&u.context) || !u.text.trim().contains(char::is_whitespace)
                }
                _ => false,
            };
            if descriptive {
                u.sev = Severity::None;
            }
        }
        if !structured {
            self.count_tallied();
            // Help text and a catalogue's strings describe ([`signal::described`]).
            let lines: Vec<usize> = (0..self.units.len())
                .filter(|&i| self.units[i].kind == UnitKind::Line)
                .collect();
            let numbered: Vec<(usize, &str)> = lines
                .iter()
                .map(|&i| (self.units[i].line, self.units[i].text.as_str()))
                .collect();
            for k in signal::described(&numbered) {
                self.units[lines[k]].sev = Severity::None;
            }
        }
        let mut templates: Vec<Template> = Vec::new();
        // Lines are mined; records and leaves (of a document, or of JSON inside a line of
        // text) are grouped by their shape.
        if !structured {
            mine(&mut self.units, &mut templates);
        }
        {
            let mut by_sig: HashMap<String, usize> = HashMap::new();
            let shaped =
                |u: &Unit| structured || matches!(u.kind, UnitKind::Record | UnitKind::Leaf);
            for u in self.units.iter_mut().filter(|u| shaped(u)) {
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
                        shaped: true,
                    });
                    templates.len() - 1
                });
                templates[id].add(u.line);
                u.template = id;
            }
        }
        Units {
            units: self.units,
            templates,
            fields: self.fields,
            lines: self.lines,
            bytes: self.bytes,
            objects: self.objects,
            spans: self.spans,
            structured,
        }
    }
}

/// A field's number `v` with the unit written a space after it in `rest` (`size=19.9 MiB`,
/// `Rss:  315852 kB`), so sizes written in `B`, `KiB` and `MiB` compare as sizes; `v` alone
/// when it is no number or no such unit follows.
fn with_unit(v: String, rest: &str) -> String {
    let Some(after) = rest.strip_prefix(' ') else {
        return v;
    };
    let unit = after
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ')' | ']' | '}'))
        .next()
        .unwrap_or("");
    if super::signals::fields::SPACED_UNITS.contains(&unit)
        && v.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && v.bytes().any(|b| b.is_ascii_digit())
    {
        format!("{v} {unit}")
    } else {
        v
    }
}

/// `key=value` and `key: value` pairs of a line (logfmt, `Key: value` pages), and XML/HTML
/// attributes (`name="value"`): at most 16 per line.
fn line_fields(line: &str) -> Vec<(String, String)> {
    use regex::Regex;
    use std::sync::LazyLock;
    static KV: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?:^|[\s,;{(\[])([A-Za-z_][\w.\-]{0,40}(?:\+\w[\w.\-]{0,20})?)(?:=|: ?)("[^"]{0,200}"|[^\s,;)\]}]{1,120})"#)
            .unwrap()
    });
    // A line that starts with a label of a few words (`  BGP state = Idle, down for 3d16h`,
    // `Local host: 10.0.0.1`): the label is a field, its first token the value.
    static LABEL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"^\s*([A-Za-z][\w.\-/]*(?: [A-Za-z][\w.\-/]*){1,3})\s*(?:=|:)\s+("[^"]{0,200}"|[^\s,;)\]}]{1,120})"#)
            .unwrap()
    });
    let mut out = Vec::new();
    // A line that is one word's value (`Rss:           315852 kB` of `/proc/*/smaps`,
    // `MemFree:  1024 kB`): the columns are padded, so the value is past a run of spaces.
    static PADDED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^\s*([A-Za-z][\w.\-()]{0,40}):\s{2,}(\S{1,60})(?: (\S{1,8}))?\s*$").unwrap()
    });
    let head = clip_str(line, 300);
    if let Some(c) = PADDED.captures(head) {
        let v = c[2].to_string();
        let unit = c.get(3).map_or("", |m| m.as_str());
        return vec![(c[1].to_string(), with_unit(v, &format!(" {unit}")))];
    }
    if let Some(c) = LABEL.captures(head) {
        let v = c[2].trim_matches('"').to_string();
        if !v.is_empty() {
            out.push((
                c[1].to_string(),
                with_unit(v, &head[c.get(2).map_or(0, |m| m.end())..]),
            ));
        }
    }
    let hay = clip_str(line, 2000);
    for c in KV.captures_iter(hay) {
        let k = c[1].to_string();
        let v = c[2].trim_matches('"').to_string();
        // `ClassLoader.java:767` is a file and a line, not a key and its value.
        let (ke, vs) = (
            c.get(1).map_or(0, |m| m.end()),
            c.get(2).map_or(0, |m| m.start()),
        );
        if hay[ke..vs].starts_with(':') && super::signals::line_ref(&format!("{k}:{v}")) {
            continue;
        }
        // A key name with its number (`order:99567`, a Redis key alone on its line or
        // quoted): an id, not an `order` of 99567 to rank.
        let ks = c.get(1).map_or(0, |m| m.start());
        if &hay[ke..vs] == ":"
            && v.bytes().all(|b| b.is_ascii_digit())
            && (hay.trim() == &hay[ks..c.get(2).map_or(0, |m| m.end())]
                || hay[..ks].ends_with(['"', '\'']))
        {
            continue;
        }
        // `works-with::file`, `std::ios_base`, `tokio::spawn`: a name with its scope, not a
        // key and its value.
        if v.starts_with(':') {
            continue;
        }
        // A URL (`https://github.blog/…`, read as `https: //github.blog/…` in a summary's
        // fact) and a host's path as git writes one (`github.com:obeattie/flask`): an address,
        // not a key and its value (trial of session 52).
        let tight = &hay[ke..vs] == ":";
        if v.starts_with("//") || tight && k.contains('.') && v.contains('/') {
            continue;
        }
        if !v.is_empty() {
            out.push((k, with_unit(v, &hay[c.get(2).map_or(0, |m| m.end())..])));
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
    aligned_runs(b, &all);
    // Each plain line is scored with the openers of the blocks it sits in.
    let openers = ancestry::Openers::new(text);
    for u in b.units.iter_mut() {
        if u.kind == UnitKind::Line && u.context.is_empty() {
            u.ancestry = openers.of(u.line.saturating_sub(1));
        }
    }
}

#[cfg(test)]
mod tests;
