//! JSON unit builders: a JSON document (also after a short preamble) walked into records,
//! leaves and noted objects, with embedded JSON and multi-line strings unwrapped, and NDJSON
//! lines as records.

use serde_json::Value;

use super::{keep_line, line_starts, parts, Builder, UnitKind, LONG_LINE_BYTES, MAX_UNITS};
use crate::guard::reduce::json::{colon_spaced, colon_spacing};

mod escapes;
mod grid;
mod leaves;

pub(crate) use escapes::Escapes;

pub(crate) use leaves::{pretty_style, written_in};

/// Array `a` read as a table of rows (arrays of scalars of one width), the member `key` of
/// object `parent`, whose other members may name its columns: the column names and the index
/// of its first data row ([`grid::shape`]); `None` when it is not a table.
pub(crate) fn table_columns(
    parent: Option<&serde_json::Map<String, Value>>,
    a: &[Value],
    key: &str,
) -> Option<(Vec<String>, usize)> {
    let hint = parent.and_then(grid::sibling_header);
    grid::shape(a, hint.as_deref(), key)
}

use leaves::{
    flat_leaves, has_records, padded_style, pairs, plain, render_record, scalar,
    small_object_array, Leaf, Style,
};

/// Bytes after the cursor searched for an array element ([`JsonWalk::line_of_element`]): an
/// element of a pretty array is within a line or two; a far occurrence is another element's.
const ELEMENT_WINDOW: usize = 4_096;
/// Bytes before the cursor (and after the record's compact length times four) searched for a
/// record as written ([`JsonWalk::as_written`]).
const WRITTEN_SLACK: usize = 256;
/// Shown bytes of a record's rendering.
const RECORD_SHOW_BYTES: usize = 420;
/// Fewest objects in a JSON array for its elements to be records.
const MIN_RECORDS: usize = 3;
/// Deepest JSON nesting walked for records and leaves.
const MAX_JSON_DEPTH: usize = 12;
/// Most scalar leaves of one record that become its fields and pairs: wide API records (a
/// GitHub repository has ~80) keep the measures they list late (`stargazers_count`).
const MAX_LEAVES: usize = 128;
/// Top-level keys that name a record, best first: the outermost record's naming pair is shown
/// with a record nested in it ([`super::Unit::parent`]).
const NAMING_KEYS: &[&str] = &["title", "name", "full_name", "file", "path", "key", "id"];
/// Most strings in an array for it to be pairs of its record ([`flat_leaves`]); a longer array
/// of strings is lines of text.
const MAX_PAIR_ARRAY: usize = 8;
/// Shortest JSON string (bytes) tried as embedded JSON or as text with lines of its own.
const EMBEDDED_MIN: usize = 80;

/// Most bytes of text before a JSON document (a test snapshot's header, a tool's banner).
const MAX_PREAMBLE: usize = 4096;

/// A JSON document after a short preamble: the first line that opens an object or array,
/// within [`MAX_PREAMBLE`] bytes, starts it. The preamble's lines are units too.
pub(super) fn json_after_preamble(b: &mut Builder, text: &str) -> bool {
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
            let mut w = JsonWalk::new(starts, text, pretty_style(rest), off);
            let from = b.units.len();
            w.walk(b, &v, "", 0);
            restyle(b, from, rest);
            return true;
        }
        off += l.len() + 1;
    }
    false
}

/// What `text` writes between a key's `":` and its value: a tab where more keys are
/// followed by one than by a space (`iperf3 -J`'s `"host_total":\t32.82`), so a quoted
/// member greps in the file; else a space when the text is `pretty`, else nothing. A
/// detached walk (empty `text`) follows `pretty`.
fn key_gap(text: &str, pretty: bool) -> &'static str {
    let head = crate::guard::reduce::clip_str(text, 64 * 1024);
    let tabbed = head.matches("\":\t").count();
    if tabbed > 0 && tabbed > head.matches("\": ").count() {
        "\t"
    } else if pretty {
        " "
    } else {
        ""
    }
}

/// Walks a JSON document: arrays of objects become records, other scalars leaves, small
/// shallow objects are noted whole, and strings holding JSON or many lines are unwrapped.
struct JsonWalk<'t> {
    starts: Vec<usize>,
    text: &'t str,
    pretty: bool,
    /// Whether the text writes a space inside its brackets ([`padded_style`]).
    padded: bool,
    /// What the text writes between a key's `":` and its value ([`key_gap`]).
    gap: &'static str,
    /// Byte offset where the search for the next key's line continues.
    cursor: usize,
    /// Inside a record: its nested objects are part of it, not objects of their own.
    in_record: bool,
    /// Paths of the leaves records already hold as pairs: a nested object walked for its
    /// arrays does not repeat them as leaves of their own.
    covered: std::collections::HashSet<String>,
    /// The naming pair of the outermost record being walked (see [`super::Unit::parent`]).
    outer: Option<String>,
    /// Column names that a sibling member gives the array walked next ([`grid::sibling_header`]).
    header: Option<Vec<String>>,
    /// The array walked next is a list of a map of lists ([`map_of_lists`]).
    listed: bool,
}

impl<'t> JsonWalk<'t> {
    /// A walk over `text` (whose line starts are `starts`), searching for keys from byte
    /// `cursor`, outside any record.
    fn new(starts: Vec<usize>, text: &'t str, pretty: bool, cursor: usize) -> Self {
        JsonWalk {
            starts,
            text,
            pretty,
            // A detached walk's caller sets it from the value's own text.
            padded: if text.is_empty() {
                pretty
            } else {
                padded_style(text)
            },
            gap: key_gap(text, pretty),
            cursor,
            in_record: false,
            covered: Default::default(),
            outer: None,
            header: None,
            listed: false,
        }
    }

    /// A walk of a value that is not the text itself (a JSON string's content, a log line's
    /// payload): the caller anchors its units.
    fn detached(pretty: bool) -> Self {
        Self::new(vec![0], "", pretty, 0)
    }

    /// How the walked text writes the pairs shown.
    fn style(&self) -> Style {
        Style {
            spaced: self.pretty,
            padded: self.padded,
        }
    }

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

    /// The line of array element `x` (a scalar, or a string walked as text): its next
    /// occurrence as JSON within [`ELEMENT_WINDOW`] bytes of the cursor, which moves past it,
    /// so each element is anchored on its own line rather than at the line opening the array;
    /// the cursor's line when it is not found there (escaped differently, or a detached walk).
    fn line_of_element(&mut self, x: &Value) -> usize {
        if let Ok(needle) = serde_json::to_string(x) {
            let from = self.cursor.min(self.text.len());
            let to = (from + ELEMENT_WINDOW + needle.len()).min(self.text.len());
            if let Some(p) =
                memchr::memmem::find(&self.text.as_bytes()[from..to], needle.as_bytes())
            {
                self.cursor = from + p;
                let line = self.here();
                self.cursor += needle.len();
                return line;
            }
        }
        self.here()
    }

    /// Record `x` as the file writes it (whitespace collapsed), when it is short enough to
    /// show whole ([`RECORD_SHOW_BYTES`]), holds no records of its own ([`has_records`]), and one of the usual layouts of JSON text is found
    /// around the cursor (just past the record's first key): minified, `{"a": 1}` spaced, or
    /// one member per line. `None` otherwise: the caller renders the record's leaves.
    fn as_written(&self, x: &Value) -> Option<String> {
        if has_records(x) || self.text.is_empty() {
            return None;
        }
        let compact = serde_json::to_string(x).ok()?;
        if compact.len() > RECORD_SHOW_BYTES {
            return None;
        }
        let lo = self.cursor.saturating_sub(WRITTEN_SLACK);
        let hi = (self.cursor + 4 * compact.len() + WRITTEN_SLACK).min(self.text.len());
        let (mut lo, mut hi) = (lo.min(hi), hi);
        while !self.text.is_char_boundary(lo) {
            lo -= 1;
        }
        while !self.text.is_char_boundary(hi) {
            hi += 1;
        }
        written_in(x, compact, &self.text[lo..hi], &mut None, RECORD_SHOW_BYTES)
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
                    let leaves: Vec<Leaf> = m
                        .iter()
                        .filter(|(_, x)| scalar(x).is_some())
                        .map(|(k, x)| Leaf {
                            path: k.clone(),
                            key: k.clone(),
                            value: x,
                            comma: false,
                            opens: String::new(),
                            elem: None,
                        })
                        .collect();
                    let line = self.here();
                    // As the file writes it when found there (checksec's `{ "relro":"full",
                    // "canary":"no", … }`), so it greps.
                    let shown = self
                        .as_written(v)
                        .unwrap_or_else(|| render_record(&leaves, self.style()));
                    b.objects.push((line, path.to_string(), shown));
                }
                let n = m.len();
                let hint = if self.in_record {
                    None
                } else {
                    grid::sibling_header(m)
                };
                let map = !self.in_record && map_of_records(m);
                let lists = !self.in_record && map_of_lists(m);
                for (i, (k, x)) in m.iter().enumerate() {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    let line = self.line_of_key(k);
                    // A map's member that is an object is one record of the map, named by
                    // its key: its fields are counted with its siblings' (checksec's
                    // `"pie":"no"` in 15 of 620 binaries is a rare value, not 620 fields).
                    // (Every member of such a map is an object: [`map_of_records`].)
                    if map {
                        let named =
                            format!("{}{}", Value::String(k.clone()), self.sep_after_key('{'));
                        self.map_record(b, x, &named, line, &format!("{path}.*"), depth);
                        continue;
                    }
                    let comma = if i + 1 < n { "," } else { "" };
                    match x {
                        Value::String(s) if s.len() >= EMBEDDED_MIN || s.contains('\n') => {
                            self.string(b, s, &p, line, depth, comma)
                        }
                        _ if scalar(x).is_some() && self.covered.contains(&p) => {}
                        _ if scalar(x).is_some() => {
                            let v = scalar(x).unwrap_or_default();
                            let shown = keep_line(&format!("\"{k}\":{}{v}{comma}", self.gap));
                            let u = b.push(line, shown, UnitKind::Leaf, p.clone());
                            let f = b.field(&p);
                            b.units[u].fields.push((f, plain(x)));
                        }
                        _ => {
                            // A list of a map of lists opens with its key, the line that
                            // names it (`"deploy/id_deploy": [`).
                            if lists {
                                let shown = format!(
                                    "{}{}[",
                                    Value::String(k.clone()),
                                    self.sep_after_key('[')
                                );
                                b.push(line, keep_line(&shown), UnitKind::Line, p.clone());
                            }
                            self.header = if x.is_array() { hint.clone() } else { None };
                            self.listed = lists;
                            self.walk(b, x, &p, depth + 1);
                            self.listed = false;
                        }
                    }
                }
            }
            Value::Array(a) => {
                let hint = self.header.take();
                let objects = a.iter().filter(|x| x.is_object()).count();
                let p = format!("{path}[]");
                // A small list of objects a record already holds as pairs
                // ([`small_object_array`]), reached again through a nested object.
                let first_key = a
                    .first()
                    .and_then(Value::as_object)
                    .and_then(|o| o.keys().next());
                if self.in_record
                    && small_object_array(a)
                    && first_key.is_some_and(|k| self.covered.contains(&format!("{p}.{k}")))
                {
                    return;
                }
                if !self.in_record {
                    let key = path.rsplit('.').next().unwrap_or("").trim_end_matches("[]");
                    if let Some((names, first)) = grid::shape(a, hint.as_deref(), key) {
                        return self.grid(b, a, &names, first, &p);
                    }
                }
                // Inside a record, an array of objects is records however short (each
                // record's copy of it is one of many); so is a list of a map of lists (one
                // file's one finding among 91 files' findings).
                let listed = std::mem::take(&mut self.listed);
                let min = if self.in_record || listed {
                    1
                } else {
                    MIN_RECORDS
                };
                if objects >= min && objects * 10 >= a.len() * 8 {
                    for x in a {
                        self.record(b, x, &p, depth);
                    }
                } else {
                    for (i, x) in a.iter().enumerate() {
                        let comma = if i + 1 < a.len() { "," } else { "" };
                        match x {
                            Value::String(s) if s.len() >= EMBEDDED_MIN || s.contains('\n') => {
                                let line = self.line_of_element(x);
                                self.string(b, s, &p, line, depth, comma)
                            }
                            _ if scalar(x).is_some() => {
                                let line = self.line_of_element(x);
                                let v = scalar(x).unwrap_or_default();
                                let shown = keep_line(&format!("{v}{comma}"));
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

    /// What the text writes between the key just passed (the cursor is after its closing
    /// quote) and the `open` (`{` or `[`) of its value, whitespace collapsed (`": "`, `":"`,
    /// `" : "`); the walk's gap after `:` where the text does not show it (a detached walk).
    fn sep_after_key(&self, open: char) -> String {
        let rest = self.text.get(self.cursor..).unwrap_or("");
        match rest.find(open) {
            Some(e) if e <= 16 && rest[..e].trim() == ":" => {
                let s = &rest[..e];
                let mut out = String::new();
                if s.starts_with(char::is_whitespace) {
                    out.push(' ');
                }
                out.push(':');
                if s.ends_with(char::is_whitespace) {
                    out.push(' ');
                }
                out
            }
            _ => format!(":{}", self.gap),
        }
    }

    /// Member `x` (an object) of a map of records, walked as one record of path `path`
    /// (`<map>.*`, shared by its siblings) and shown after its key as the file writes it
    /// (`named`: `"/usr/bin/node": `), so the record greps and says what it is. Its parent is
    /// its key and colon (`"/usr/bin/node":`), which a record shown by a few of its fields
    /// opens with ([`crate::guard::reduce::select`]); its line is its key's, `line`.
    fn map_record(
        &mut self,
        b: &mut Builder,
        x: &Value,
        named: &str,
        line: usize,
        path: &str,
        depth: usize,
    ) {
        let from = b.units.len();
        self.record(b, x, path, depth);
        if let Some(u) = b.units.get_mut(from) {
            if u.kind == UnitKind::Record {
                u.line = line;
                u.text = keep_line(&format!("{named}{}", u.text));
                if u.parent.is_empty() {
                    u.parent = named.trim_end().to_string();
                }
            }
        }
    }

    /// One element of a record array.
    fn record(&mut self, b: &mut Builder, x: &Value, path: &str, depth: usize) {
        let Value::Object(m) = x else {
            return self.walk(b, x, path, depth + 1);
        };
        // Anchor: the record's first key. The cursor then moves through the record's keys in
        // document order, so the next record's anchor is searched after this one's last key
        // (a key whose value is nested is passed by the walk of that value, not searched again).
        let line = m.keys().next().map_or(self.here(), |k| self.line_of_key(k));
        let mut leaves = Vec::new();
        flat_leaves(x, "", 0, MAX_LEAVES, &mut leaves, self.style(), "");
        for l in leaves.iter().filter(|l| l.path.contains('.')) {
            self.covered.insert(format!("{path}.{}", l.path));
        }
        let shown = self
            .as_written(x)
            .unwrap_or_else(|| render_record(&leaves, self.style()));
        let u = b.push(line, shown, UnitKind::Record, path.to_string());
        let ids: Vec<(usize, String)> = leaves
            .iter()
            .map(|l| (b.field(&l.path), plain(l.value)))
            .collect();
        b.units[u].fields = ids;
        b.units[u].cut = leaves.len() >= MAX_LEAVES;
        let shown_pairs = pairs(&leaves, self.style());
        // The outermost record names the records nested in it.
        let outermost = self.outer.is_none();
        match &self.outer {
            Some(o) => b.units[u].parent = o.clone(),
            None => {
                // Its own naming key, else one of the object it wraps (`{"cve": {"id": …}}`).
                let nested = |l: &Leaf, want: &str| {
                    l.path.matches('.').count() == 1 && l.path.rsplit('.').next() == Some(want)
                };
                self.outer = NAMING_KEYS
                    .iter()
                    .find_map(|want| leaves.iter().position(|l| l.path == *want))
                    .or_else(|| {
                        NAMING_KEYS
                            .iter()
                            .find_map(|want| leaves.iter().position(|l| nested(l, want)))
                    })
                    .map(|p| shown_pairs[p].clone());
            }
        }
        b.units[u].pairs = shown_pairs;
        b.units[u].pair_sep = if self.pretty { ", " } else { "," };
        // Nested arrays of objects and long strings inside the record are walked too.
        let was = std::mem::replace(&mut self.in_record, true);
        for (i, (k, v)) in m.iter().enumerate() {
            let kl = if i == 0 { line } else { self.line_of_key(k) };
            let p = format!("{path}.{k}");
            match v {
                Value::Array(a) if a.iter().any(|e| e.is_object()) && !small_object_array(a) => {
                    self.walk(b, v, &p, depth + 1)
                }
                Value::Array(a) if a.len() > MAX_PAIR_ARRAY && a.iter().all(Value::is_string) => {
                    self.string_lines(b, a, &p)
                }
                Value::Object(o) if o.values().any(|e| e.is_array() || e.is_object()) => {
                    self.walk(b, v, &p, depth + 1)
                }
                Value::String(s)
                    if s.len() >= EMBEDDED_MIN
                        && (s.contains('\n') || s.trim_start().starts_with(['{', '['])) =>
                {
                    self.string(b, s, &p, kl, depth, "")
                }
                _ => {}
            }
        }
        self.in_record = was;
        if outermost {
            self.outer = None;
        }
    }

    /// An array of strings too long to be pairs of its record: the lines of a text (a
    /// notebook's `source` and `outputs[].text`, a command's output as a list). Each string is
    /// a line unit, shown as the file writes it (escaped, without its trailing `\n`) and
    /// anchored where the file has it.
    fn string_lines(&mut self, b: &mut Builder, a: &[Value], path: &str) {
        for e in a {
            let Value::String(s) = e else { continue };
            let l = s.trim_end_matches(['\n', '\r']);
            if l.trim().is_empty() {
                continue;
            }
            let shown = escape(l);
            let hay = &self.text.as_bytes()[self.cursor.min(self.text.len())..];
            if let Some(p) = memchr::memmem::find(hay, shown.as_bytes()) {
                self.cursor += p + shown.len();
            }
            let line = self.here();
            if shown.len() > LONG_LINE_BYTES {
                for p in parts(&shown) {
                    b.push(line, keep_line(p.trim()), UnitKind::Part, path.to_string());
                }
            } else {
                b.push(line, keep_line(&shown), UnitKind::Line, path.to_string());
            }
        }
    }

    /// A long string value: embedded JSON is walked as a document of its own; text with
    /// lines gives a unit per line (anchored at the string's line); else one leaf, followed
    /// by `comma` (the file's `,` after it, or nothing).
    fn string(
        &mut self,
        b: &mut Builder,
        s: &str,
        path: &str,
        line: usize,
        depth: usize,
        comma: &str,
    ) {
        let t = s.trim_start();
        if t.starts_with(['{', '[']) {
            if let Ok(inner) = serde_json::from_str::<Value>(s) {
                let mut w = JsonWalk {
                    in_record: self.in_record,
                    outer: self.outer.clone(),
                    padded: padded_style(s),
                    ..JsonWalk::detached(pretty_style(s))
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
        let whole = format!("\"{key}\":{}{}", self.gap, Value::String(s.to_string()));
        if whole.len() > LONG_LINE_BYTES {
            for p in parts(s) {
                b.push(line, keep_line(p.trim()), UnitKind::Part, path.to_string());
            }
        } else {
            let u = b.push(
                line,
                keep_line(&format!("{whole}{comma}")),
                UnitKind::Leaf,
                path.to_string(),
            );
            let f = b.field(path);
            b.units[u].fields.push((f, s.to_string()));
        }
    }
}

/// Fewest members of an object for it to be a map of records ([`map_of_records`]).
const MIN_MAP_RECORDS: usize = 5;

/// Whether object `m` maps names to records (npm's `packages`, a coverage summary's files,
/// an API's resources by name, a catalogue's messages by id): at least [`MIN_MAP_RECORDS`]
/// members, every one a non-empty object, with one key most of them share (a shape, not a
/// bag of sections).
pub(crate) fn map_of_records(m: &serde_json::Map<String, Value>) -> bool {
    if m.len() < MIN_MAP_RECORDS {
        return false;
    }
    let mut freq: std::collections::HashMap<&str, usize> = Default::default();
    for x in m.values() {
        match x {
            Value::Object(o) if !o.is_empty() => {
                for k in o.keys() {
                    *freq.entry(k.as_str()).or_default() += 1;
                }
            }
            _ => return false,
        }
    }
    freq.values().any(|&c| c * 5 >= m.len() * 4)
}

/// Whether object `m` maps names to lists of records (detect-secrets' `results`: findings by
/// file, one to a dozen each): at least [`MIN_MAP_RECORDS`] members, every one an array, most
/// of them (four in five) holding objects. Each list's objects are records however few, so
/// that counts over them count every finding.
pub(crate) fn map_of_lists(m: &serde_json::Map<String, Value>) -> bool {
    if m.len() < MIN_MAP_RECORDS || !m.values().all(Value::is_array) {
        return false;
    }
    let objects = m
        .values()
        .filter(|x| x.as_array().is_some_and(|a| a.iter().any(Value::is_object)))
        .count();
    objects * 5 >= m.len() * 4
}

/// `s` as it is written inside a JSON string (quotes, backslashes and control characters
/// escaped, as serde_json writes them), without the surrounding quotes.
fn escape(s: &str) -> String {
    let q = Value::String(s.to_string()).to_string();
    q[1..q.len() - 1].to_string()
}

/// Most bytes before the JSON value of a long line (`body: {...}`, a log line's prefix).
const MAX_LINE_PREFIX: usize = 200;

/// A long line of a text that holds a JSON object or array (a recorded HTTP body, a log
/// line's payload), after at most [`MAX_LINE_PREFIX`] bytes of prefix: the prefix is a line
/// unit and the value is walked like a document, every unit anchored at line `ln`. Returns
/// false (adding nothing) when the line holds no such value.
pub(super) fn json_line(b: &mut Builder, ln: usize, l: &str) -> bool {
    // The first `{` and the first `[` (a log line's `[INFO]` before its payload).
    let mut starts: Vec<usize> = [l.find('{'), l.find('[')]
        .into_iter()
        .flatten()
        .filter(|&p| p <= MAX_LINE_PREFIX)
        .collect();
    starts.sort_unstable();
    let Some((at, v)) = starts
        .into_iter()
        .find_map(|p| Some((p, serde_json::from_str::<Value>(l[p..].trim_end()).ok()?)))
    else {
        return false;
    };
    if !(v.is_object() || v.as_array().is_some_and(|a| a.iter().any(Value::is_object))) {
        return false;
    }
    let prefix = l[..at].trim();
    if !prefix.is_empty() {
        b.push(ln, keep_line(prefix), UnitKind::Line, String::new());
    }
    let mut w = JsonWalk {
        padded: padded_style(&l[at..]),
        ..JsonWalk::detached(pretty_style(&l[at..]))
    };
    let (units, objects) = (b.units.len(), b.objects.len());
    w.walk(b, &v, "", 0);
    restyle(b, units, &l[at..]);
    for u in &mut b.units[units..] {
        u.line = ln;
    }
    for o in &mut b.objects[objects..] {
        o.0 = ln;
    }
    true
}

/// A JSON document. Returns false when it does not parse.
pub(super) fn json_doc(b: &mut Builder, text: &str) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    let mut w = JsonWalk::new(line_starts(text), text, pretty_style(text), 0);
    let from = b.units.len();
    w.walk(b, &v, "", 0);
    restyle(b, from, text);
    !b.units.is_empty()
}

/// A stream of JSON objects one after another (`jq '.[]'` and `go list -json` print one pretty
/// object after another, not an array): the objects are walked as the records of one array,
/// each anchored at its first key. False unless the whole text is two or more objects.
pub(super) fn json_stream(b: &mut Builder, text: &str) -> bool {
    if !text.trim_start().starts_with('{') {
        return false;
    }
    let mut vals = Vec::new();
    for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        match v {
            Ok(v @ Value::Object(_)) if vals.len() < MAX_UNITS => vals.push(v),
            _ => return false,
        }
    }
    if vals.len() < 2 {
        return false;
    }
    let mut w = JsonWalk::new(line_starts(text), text, pretty_style(text), 0);
    let from = b.units.len();
    w.walk(b, &Value::Array(vals), "", 0);
    restyle(b, from, text);
    !b.units.is_empty()
}

/// Writes units `from..` of `b`, rendered from parsed values as serde_json writes them, as
/// `text` (the JSON they were read from) writes them: with the escapes it uses ([`Escapes`])
/// and, in a [`colon_spaced`] text, a space before each key's colon (records and leaves
/// only: a line's or a string's part is quoted as written). Their text, pairs and parent's
/// naming pair.
fn restyle(b: &mut Builder, from: usize, text: &str) {
    if colon_spaced(text) {
        for u in &mut b.units[from..] {
            if matches!(u.kind, UnitKind::Record | UnitKind::Leaf) {
                u.text = colon_spacing(&u.text);
            }
            for p in &mut u.pairs {
                *p = colon_spacing(p);
            }
            u.parent = colon_spacing(&u.parent);
        }
    }
    let e = Escapes::of(text);
    if e.is_plain() {
        return;
    }
    for u in &mut b.units[from..] {
        if let Some(t) = e.apply(&u.text) {
            u.text = t;
        }
        for p in &mut u.pairs {
            if let Some(t) = e.apply(p) {
                *p = t;
            }
        }
        if let Some(t) = e.apply(&u.parent) {
            u.parent = t;
        }
    }
}

/// Deepest object nesting [`text_fields`] looks into.
const MAX_TEXT_DEPTH: usize = 4;

/// The string values of `v` with lines of their own, at any depth up to [`MAX_TEXT_DEPTH`],
/// with their paths (`message.rendered`).
fn text_fields<'a>(v: &'a Value, path: String, depth: usize, out: &mut Vec<(String, &'a str)>) {
    match v {
        Value::String(s) if s.len() >= EMBEDDED_MIN && s.contains('\n') => out.push((path, s)),
        Value::Object(m) if depth < MAX_TEXT_DEPTH => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                text_fields(x, p, depth + 1, out);
            }
        }
        Value::Array(a) if depth < MAX_TEXT_DEPTH => {
            for x in a.iter().take(64) {
                text_fields(x, format!("{path}[]"), depth + 1, out);
            }
        }
        _ => {}
    }
}

/// Newline-delimited JSON: each object line is a record; other lines are lines.
pub(super) fn ndjson(b: &mut Builder, text: &str) -> bool {
    let pretty = pretty_style(text);
    let style = Style {
        spaced: pretty,
        padded: padded_style(text),
    };
    let from = b.units.len();
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
                flat_leaves(&v, "", 0, MAX_LEAVES, &mut leaves, style, "");
                // A line short enough is shown as it is; a long one as its leaves.
                let shown = if l.len() <= RECORD_SHOW_BYTES {
                    keep_line(l)
                } else {
                    render_record(&leaves, style)
                };
                let u = b.push(i + 1, shown, UnitKind::Record, String::new());
                let ids: Vec<(usize, String)> = leaves
                    .iter()
                    .map(|l| (b.field(&l.path), plain(l.value)))
                    .collect();
                b.units[u].fields = ids;
                b.units[u].pairs = pairs(&leaves, style);
                b.units[u].cut = leaves.len() >= MAX_LEAVES;
                b.units[u].pair_sep = if pretty { ", " } else { "," };
                // Long text fields at any depth (a log message with its own lines, a
                // compiler's `message.rendered` diagnostic) are units too, line by line.
                let mut texts = Vec::new();
                text_fields(&v, String::new(), 0, &mut texts);
                for (k, s) in texts {
                    let mut w = JsonWalk {
                        padded: style.padded,
                        ..JsonWalk::detached(pretty)
                    };
                    w.string(b, s, &k, i + 1, 1, "");
                }
            }
            _ => {
                b.push(i + 1, keep_line(l), UnitKind::Line, String::new());
            }
        }
    }
    restyle(b, from, text);
    !b.units.is_empty()
}

#[cfg(test)]
mod gap_tests {
    use super::*;

    #[test]
    fn a_member_is_quoted_with_the_gap_its_file_writes() {
        assert_eq!(key_gap("{\n\t\"a\":\t1,\n\t\"b\":\t2\n}", false), "\t");
        assert_eq!(key_gap("{\"a\": 1, \"b\": 2}", true), " ");
        assert_eq!(key_gap("{\"a\":1}", false), "");
        let text = "{\n\t\"end\":\t{\n\t\t\"host_total\":\t32.82,\n\t\t\"n\":\t3\n\t}\n}\n";
        let u = super::super::build(text, crate::guard::reduce::Kind::Json);
        assert!(
            u.units.iter().any(|x| x.text == "\"host_total\":\t32.82,"),
            "{:?}",
            u.units.iter().map(|x| &x.text).collect::<Vec<_>>()
        );
    }
}
