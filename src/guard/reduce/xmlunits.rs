//! XML (and XHTML-like markup) cut into records: an element that repeats under one parent path
//! (`<item>` of an API response, `<host>` of a scan, `<testcase>` of a report) is a record whose
//! fields are its attributes and its leaf children (`<spotPrice>1.122000</spotPrice>`), shown as
//! the file writes them. Lines outside records stay lines. quick-xml reads the events; every
//! shown text is a span of the source, so it quotes the file verbatim.

use std::collections::HashMap;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::units::{keep_line, Builder, UnitKind};

/// Fewest elements at one path for them to be records.
const MIN_RECORDS: usize = 3;
/// Deepest element path followed.
const MAX_DEPTH: usize = 24;
/// Most leaf children of an element that occurs once for it to be a record of its own.
const MAX_SINGLE_LEAVES: usize = 24;
/// Most elements read (a bound on the cost of huge documents).
const MAX_ELEMENTS: usize = 400_000;

/// A leaf child of an element: `<name attr="…">value</name>` or `<name attr="…"/>`; or a
/// property list's `<key>name</key>` and the leaf after it, one leaf named by the key.
struct Leaf {
    name: String,
    value: String,
    attrs: Vec<(String, String)>,
    span: (usize, usize),
    /// The span of the `<key>` element naming this leaf, when a key names it.
    key_span: Option<(usize, usize)>,
}

impl Leaf {
    /// The leaf as the file writes it, on one line: a key and its value joined by a space, a
    /// value written over several lines (`<data>` of base64) joined by spaces.
    fn shown(&self, text: &str) -> String {
        let own = one_line(text[self.span.0..self.span.1].trim());
        match self.key_span {
            Some((a, z)) => keep_line(&format!("{} {own}", text[a..z].trim())),
            None => keep_line(&own),
        }
    }
}

/// An element being read.
struct Open {
    name: String,
    path: String,
    start: usize,
    text_start: usize,
    attrs: Vec<(String, String)>,
    leaves: Vec<Leaf>,
    children: usize,
    /// The child count when the last child was a `<key>` leaf: the next leaf is its value.
    key_at: Option<usize>,
}

impl Open {
    /// The text of the `<key>` leaf that is this element's last child, if it is one: it names
    /// the next child.
    fn pending_key(&self) -> Option<&str> {
        if self.key_at != Some(self.children) {
            return None;
        }
        self.leaves.last().map(|l| l.value.as_str())
    }

    /// Adds leaf child `l`. In a property list (`<dict>`: `<key>BSSID</key>` then
    /// `<string>d8:47:…</string>`) a leaf right after a key leaf is that key's value: one leaf
    /// named by the key, so a record's fields are its keys. A key followed by an element with
    /// children (a nested `<dict>`) stays a leaf of its own.
    fn push_leaf(&mut self, text: &str, mut l: Leaf) {
        self.children += 1;
        if l.name == "key" && l.attrs.is_empty() && !l.value.is_empty() {
            self.key_at = Some(self.children);
            self.leaves.push(l);
            return;
        }
        if self.key_at == Some(self.children - 1) {
            if let Some(k) = self.leaves.pop() {
                if l.value.is_empty() && text[l.span.0..l.span.1].ends_with("/>") {
                    // `<true/>`, `<false/>`: the element is the value.
                    l.value = l.name.clone();
                }
                l.name = k.value;
                l.key_span = Some(k.span);
            }
        }
        self.key_at = None;
        self.leaves.push(l);
    }
}

/// A finished element that may be a record.
struct Cand {
    path: String,
    span: (usize, usize),
    attrs: Vec<(String, String)>,
    leaves: Vec<Leaf>,
}

fn attrs(e: &BytesStart<'_>) -> Vec<(String, String)> {
    e.attributes()
        .flatten()
        .take(32)
        .map(|a| {
            (
                String::from_utf8_lossy(a.key.as_ref()).into_owned(),
                String::from_utf8_lossy(&a.value).into_owned(),
            )
        })
        .collect()
}

fn name(e: &BytesStart<'_>) -> String {
    String::from_utf8_lossy(e.name().as_ref()).into_owned()
}

/// Cuts an XML text into record, leaf and line units. Returns false when the text is not
/// well-formed XML or holds no repeated element (the caller then cuts it into lines).
pub(super) fn xml(b: &mut Builder, text: &str, starts: &[usize]) -> bool {
    let mut r = Reader::from_str(text);
    r.config_mut().check_end_names = false;
    let mut stack: Vec<Open> = Vec::new();
    let mut cands: Vec<Cand> = Vec::new();
    let mut elements = 0usize;
    loop {
        let p0 = r.buffer_position() as usize;
        let ev = match r.read_event() {
            Ok(ev) => ev,
            // A document cut short (an output truncated mid-element) keeps the records read.
            Err(_) if !cands.is_empty() => break,
            Err(_) => return false,
        };
        let p1 = r.buffer_position() as usize;
        match ev {
            Event::Start(e) => {
                elements += 1;
                if elements > MAX_ELEMENTS || stack.len() >= MAX_DEPTH {
                    break;
                }
                let n = name(&e);
                let path = match stack.last() {
                    // A property list's `<key>EXT_CAPS</key><dict>…`: the key names the path.
                    Some(p) => match p.pending_key() {
                        Some(k) => format!("{}/{k}", p.path),
                        None => format!("{}/{n}", p.path),
                    },
                    None => n.clone(),
                };
                stack.push(Open {
                    name: n,
                    path,
                    start: p0,
                    text_start: p1,
                    attrs: attrs(&e),
                    leaves: Vec::new(),
                    children: 0,
                    key_at: None,
                });
            }
            Event::Empty(e) => {
                elements += 1;
                let n = name(&e);
                let a = attrs(&e);
                let path = match stack.last() {
                    Some(p) => format!("{}/{n}", p.path),
                    None => n.clone(),
                };
                if !a.is_empty() {
                    cands.push(Cand {
                        path,
                        span: (p0, p1),
                        attrs: a.clone(),
                        leaves: Vec::new(),
                    });
                }
                if let Some(p) = stack.last_mut() {
                    p.push_leaf(
                        text,
                        Leaf {
                            name: n,
                            value: String::new(),
                            attrs: a,
                            span: (p0, p1),
                            key_span: None,
                        },
                    );
                }
            }
            Event::End(_) => {
                let Some(o) = stack.pop() else { break };
                if o.children == 0 {
                    let value = text.get(o.text_start..p0).unwrap_or("").trim().to_string();
                    if !o.attrs.is_empty() {
                        cands.push(Cand {
                            path: o.path.clone(),
                            span: (o.start, p1),
                            attrs: o.attrs.clone(),
                            leaves: Vec::new(),
                        });
                    }
                    if let Some(p) = stack.last_mut() {
                        p.push_leaf(
                            text,
                            Leaf {
                                name: o.name,
                                value,
                                attrs: o.attrs,
                                span: (o.start, p1),
                                key_span: None,
                            },
                        );
                    }
                } else {
                    if let Some(p) = stack.last_mut() {
                        // The key naming this element says nothing as a leaf of its own.
                        if p.pending_key().is_some() {
                            p.leaves.pop();
                            p.key_at = None;
                        }
                        p.children += 1;
                    }
                    if !o.leaves.is_empty() || !o.attrs.is_empty() {
                        cands.push(Cand {
                            path: o.path,
                            span: (o.start, p1),
                            attrs: o.attrs,
                            leaves: o.leaves,
                        });
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let mut per_path: HashMap<&str, usize> = HashMap::new();
    for c in &cands {
        *per_path.entry(c.path.as_str()).or_default() += 1;
    }
    let line_of = |off: usize| match starts.binary_search(&off) {
        Ok(i) => i + 1,
        Err(i) => i.max(1),
    };
    let mut covered: Vec<(usize, usize)> = Vec::new();
    // Records, outermost first when they nest (a record inside another stays a record too).
    let mut records: Vec<&Cand> = cands
        .iter()
        .filter(|c| per_path[c.path.as_str()] >= MIN_RECORDS)
        .collect();
    if records.is_empty() {
        return false;
    }
    records.sort_by_key(|c| c.span.0);
    let spans: Vec<(usize, usize)> = records.iter().map(|c| c.span).collect();
    // The outermost record holding each one, by its naming leaf (a port's host by its
    // `<address addr="192.168.1.1" .../>`): whose record it is.
    let mut outer: Option<(usize, Option<String>)> = None;
    for c in records {
        let inside = outer.as_ref().is_some_and(|(end, _)| c.span.1 <= *end);
        if !inside {
            outer = Some((c.span.1, naming_leaf(text, c)));
        }
        let u = record(b, text, c, &line_of);
        if inside {
            if let Some((_, Some(p))) = &outer {
                b.set_parent(u, p.clone());
            }
        }
        covered.push((line_of(c.span.0), line_of(c.span.1.saturating_sub(1))));
    }
    // Lines outside every record.
    covered.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, z) in covered {
        match merged.last_mut() {
            Some(m) if a <= m.1 + 1 => m.1 = m.1.max(z),
            _ => merged.push((a, z)),
        }
    }
    // An element with leaf children that occurs once (a `<summary>` of totals, a server's
    // `<config>`) on a line a record covers (a document written on one line): a record of its
    // own, as the lines outside records cannot show it.
    let on_covered = |ln: usize| merged.iter().any(|&(a, z)| a <= ln && ln <= z);
    for c in &cands {
        let inside = spans.iter().any(|&(a, z)| a <= c.span.0 && c.span.1 <= z);
        if per_path[c.path.as_str()] < MIN_RECORDS
            && !c.leaves.is_empty()
            && c.leaves.len() <= MAX_SINGLE_LEAVES
            && !inside
            && on_covered(line_of(c.span.0))
        {
            record(b, text, c, &line_of);
        }
    }
    let mut k = 0;
    for (i, l) in text.split('\n').enumerate() {
        let ln = i + 1;
        while k < merged.len() && merged[k].1 < ln {
            k += 1;
        }
        if k < merged.len() && merged[k].0 <= ln && ln <= merged[k].1 {
            continue;
        }
        b.line(ln, l);
    }
    true
}

/// Adds element `c` as a record unit: its tag line and leaves as the file writes them, its
/// attributes and leaves as fields.
fn record(b: &mut Builder, text: &str, c: &Cand, line_of: &dyn Fn(usize) -> usize) -> usize {
    let src = &text[c.span.0..c.span.1];
    let line = line_of(c.span.0);
    let mut pairs: Vec<String> = Vec::new();
    let mut fields: Vec<(String, String)> = Vec::new();
    for (k, v) in &c.attrs {
        pairs.push(format!("{k}=\"{v}\""));
        fields.push((format!("@{k}"), v.clone()));
    }
    for l in &c.leaves {
        pairs.push(l.shown(text));
        fields.push((l.name.clone(), l.value.clone()));
        for (k, v) in &l.attrs {
            fields.push((format!("{}@{k}", l.name), v.clone()));
        }
    }
    let one_line = !src.contains('\n');
    let shown = if one_line || c.leaves.is_empty() {
        keep_line(src.trim())
    } else {
        // The element's tag line, then its leaves as the file writes them.
        let head = src.lines().next().unwrap_or("").trim();
        format!("{head} {}", pairs[c.attrs.len()..].join(" "))
    };
    let u = b.push(line, keep_line(&shown), UnitKind::Record, c.path.clone());
    let ids: Vec<(usize, String)> = fields
        .iter()
        .map(|(k, v)| (b.field(k), v.clone()))
        .collect();
    // Pairs parallel to fields: attributes of leaves have no pair of their own, so they
    // share their leaf's.
    let mut par: Vec<String> = Vec::new();
    for (k, v) in &c.attrs {
        par.push(format!("{k}=\"{v}\""));
    }
    for l in &c.leaves {
        let p = l.shown(text);
        par.push(p.clone());
        for _ in &l.attrs {
            par.push(p.clone());
        }
    }
    b.set_record(u, ids, par, " ");
    u
}

/// `s` with each run of whitespace that holds a line break made one space.
fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\n') {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    for (i, l) in s.split('\n').enumerate() {
        let l = if i == 0 { l.trim_end() } else { l.trim() };
        if l.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(l);
    }
    out.into()
}

/// Leaf names (or attribute names) that say which record an element is.
const NAMING: &[&str] = &[
    "name", "title", "id", "address", "addr", "host", "hostname", "key", "path", "file", "url",
    "uri", "label",
];

/// The leaf of record `c` that names it, as the file writes it: the first whose element name
/// or one of whose attributes is a naming word ([`NAMING`]).
fn naming_leaf(text: &str, c: &Cand) -> Option<String> {
    let names = |n: &str| {
        let n = n.rsplit(':').next().unwrap_or(n).to_ascii_lowercase();
        NAMING.contains(&n.as_str())
    };
    c.leaves
        .iter()
        .find(|l| names(&l.name) || l.attrs.iter().any(|(k, _)| names(k)))
        .map(|l| l.shown(text))
        .filter(|t| t.len() <= MAX_NAMING_BYTES)
}

/// Longest naming leaf shown with a nested record, in bytes.
const MAX_NAMING_BYTES: usize = 160;

#[cfg(test)]
mod tests;
