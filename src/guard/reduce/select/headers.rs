//! Record headers: the line that opens the indented block a quoted line sits in.
//!
//! In outputs made of indented stanzas (`show ip bgp neighbors`, `show interfaces`, YAML,
//! pretty-printed XML, stack traces, `systemctl status`), a line such as `BGP state = Idle`
//! or `<name>log4j</name>` says little without the line that opens its block (`BGP neighbor
//! is 10.0.0.1`, `<component bom-ref="log4j@1.2.17">`). The selector quotes that header with
//! any line it takes from inside the block ([`super::select_with`]). Nothing here knows a
//! format: a header is the nearest line above with less indentation.

use super::super::indent;
use super::super::Item;

/// Longest block a header may open, in lines, in a text of up to `4 * MAX_BLOCK` lines; in a
/// longer text, a quarter of its lines. A longer block is the document or a whole list
/// (`<components>`, a YAML `items:`), whose first line names no record.
pub const MAX_BLOCK: usize = 150;

/// Longest block a header may open in any text, in lines.
const MAX_BLOCK_ANY: usize = 2_000;

/// Fewest ASCII letters or digits a header must have to be worth its tokens (not `{`, `-`,
/// `</a>`).
const MIN_ALNUM: usize = 4;

/// A header line written this many times or more, word for word, names no record.
const MAX_SAME_HEADER: usize = 10;

/// Longest header quoted, in bytes; a longer one is cut like any shown line.
const MAX_HEADER_BYTES: usize = 200;

/// The header line of every line of a text, found once in one pass (an indentation stack).
#[derive(Debug, Default, Clone)]
pub struct Headers {
    /// 1-based header line of each 1-based line (index `n - 1`); 0 when it has none.
    parent: Vec<u32>,
    /// The header lines' texts as shown, by 1-based line.
    text: std::collections::HashMap<usize, String>,
    /// Per 1-based line (index `n - 1`), the 1-based line opening the repeated section it is
    /// in (a [`repeat_openers`] line or a banner; 0 for none), with no limit on its length.
    sections: Vec<u32>,
    /// The kind of each section opener (by its 1-based line): its lead word ([`lead`]), or
    /// one key for every banner. Sections of one kind are parts of one whole.
    kinds: std::collections::HashMap<usize, String>,
}

/// True for a tag with no attributes and nothing else (`<brick>`, `</a>`).
pub fn bare_tag(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('<') && t.ends_with('>') && !t.contains([' ', '\t'])
}

/// Most lines before an opener, at its indentation and with no block of their own, that make
/// one header with it (`commit 9f1c…`, `Author: …`, `Date: …` before a git log message).
const MAX_HEADER_RUN: usize = 3;

/// The first line of the header that 1-based line `p` (an opener) ends: the lines just before
/// it at its indentation, with no blank line between and no block of their own (`end[x] == x`),
/// when at most [`MAX_HEADER_RUN`] of them follow a blank line, a line of another indentation
/// or the text's start (a longer run is a listing, and `p` alone heads its block). Its first
/// line names the record (`commit 9f1c…`); `p` itself is often its last field (`Date: …`).
fn run_start(lines: &[&str], p: usize, end: &[usize]) -> usize {
    let d = indent(lines[p - 1]);
    let mut b = p;
    while b > 1 && p - (b - 1) <= MAX_HEADER_RUN {
        let prev = lines[b - 2];
        if prev.trim().is_empty() || indent(prev) != d || end[b - 1] != b - 1 {
            break;
        }
        b -= 1;
    }
    let before = b.checked_sub(2).map(|i| lines[i]);
    let bounded = before.is_none_or(|l| l.trim().is_empty() || indent(l) != d);
    if b < p && bounded && header_like(lines[b - 1]) {
        b
    } else {
        p
    }
}

/// True when a line could name a record: enough letters or digits, and not only a tag with no
/// attributes (`<entry>`, `</a>`) or a bracket.
fn header_like(line: &str) -> bool {
    let t = line.trim();
    t.bytes().filter(u8::is_ascii_alphanumeric).count() >= MIN_ALNUM && !bare_tag(t)
}

/// True for a one-line element with text (`<brickName>host:/b</brickName>`): the child that
/// names a record opened by a bare tag.
fn named_child(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('<')
        && !t.starts_with("</")
        && t.ends_with('>')
        && t.contains("</")
        && t.find('>')
            .is_some_and(|g| g + 1 < t.rfind("</").unwrap_or(0))
}

/// True for a banner line that titles what follows: a few words between runs of one
/// punctuation mark (`=== gcc Summary ===`, `----- Build -----`, `*** Tests ***`) or a
/// Markdown heading (`## Results`).
pub fn is_banner(line: &str) -> bool {
    let t = line.trim();
    if t.len() > MAX_HEADER_BYTES {
        return false;
    }
    let words = t.bytes().filter(u8::is_ascii_alphanumeric).count() >= MIN_ALNUM;
    if let Some(rest) = t.strip_prefix("## ").or_else(|| t.strip_prefix("### ")) {
        return words && !rest.starts_with('#');
    }
    let Some(c) = t.chars().next().filter(|c| "=-*#~".contains(*c)) else {
        return false;
    };
    let run = |s: &str| s.chars().take_while(|x| *x == c).count();
    let rev: String = t.chars().rev().collect();
    words && run(t) >= 2 && run(&rev) >= 2 && t.trim_matches(c).trim() != "" && {
        let inner = t.trim_matches(c).trim();
        !inner.contains(c) || inner.chars().filter(|x| *x == c).count() <= 2
    }
}

/// Bytes at a line's start searched for a clock time by [`clock_early`].
const CLOCK_BYTES: usize = 48;

/// True when a clock time (`10:51:52`, `9:05:01`) stands among a line's first
/// [`CLOCK_BYTES`] bytes: a log's line, stamped.
fn clock_early(line: &str) -> bool {
    let b = &line.as_bytes()[..line.len().min(CLOCK_BYTES)];
    let d = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    (0..b.len()).any(|i| {
        d(i) && b.get(i + 1) == Some(&b':')
            && d(i + 2)
            && d(i + 3)
            && b.get(i + 4) == Some(&b':')
            && d(i + 5)
            && d(i + 6)
    })
}

/// Fewest sections for a line shape to open repeated sections ([`repeat_openers`]).
const MIN_SECTIONS: usize = 2;

/// Share (of ten) of a shape's lines that must be followed by lines of one shape for the shape
/// to open sections.
const SAME_NEXT_TENTHS: usize = 9;

/// Fewest lines a section has on average, its opener included.
const MIN_SECTION_LINES: usize = 3;

/// The shape of a top-level line that may open a section: its first word with digits taken
/// out (`Query:`, `commit`, `>>`); `None` for an indented, blank or long line, a banner, or a
/// line with too few letters to name anything.
fn shape(line: &str) -> Option<String> {
    if line.len() > MAX_HEADER_BYTES || indent(line) > 0 || !header_like(line) || is_banner(line) {
        return None;
    }
    lead(line)
}

/// Marks of a line's start that [`format_of`] keeps.
const FORMAT_MARKS: usize = 12;

/// The format of a line's start: every run of letters, digits and `._-/:@` one `w`, every run
/// of spaces one space, other marks as they are, the first [`FORMAT_MARKS`] of them.
/// `proxy-724.aol.com - - [22/Apr/2009:18:55:45 +1200] "GET /a` and `192.48.147.2 - -
/// [22/Apr/2009:…` read alike (`w w w [w +w] "w`).
fn format_of(line: &str) -> String {
    let mut out = String::new();
    let mut last = ' ';
    for c in super::super::clip_str(line, MAX_HEADER_BYTES).chars() {
        if out.chars().count() >= FORMAT_MARKS {
            break;
        }
        let k = if c.is_alphanumeric() || "._-/:@".contains(c) {
            'w'
        } else if c.is_whitespace() {
            ' '
        } else {
            c
        };
        if !((k == 'w' || k == ' ') && k == last) {
            out.push(k);
        }
        last = k;
    }
    out
}

/// The kind of every banner section ([`Headers::section_of`]): banners title parts of one
/// whole, whatever words they hold.
const BANNER_KIND: &str = "\u{1}banner";

/// Shortest name (bytes) a header's line is taken to repeat.
const MIN_NAME_BYTES: usize = 3;

/// True when `line` already says which record it is in: it holds the identifier its header
/// gives after the header's lead word (`contig_0` of `# Query: contig_0`, the metric of `# HELP
/// vmware_datastore_capacity_size ...`), so the header would cost tokens and add nothing. A
/// plain word there (`neighbor` of `BGP neighbor is 10.0.0.1`) names no record.
fn names_in(header: &str, line: &str) -> bool {
    let skip = if header.split_whitespace().next().is_some_and(mark) {
        2
    } else {
        1
    };
    header
        .split_whitespace()
        .nth(skip)
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .is_some_and(|w| {
            // An identifier (`contig_0`, `vmware_disk_free`, `10.0.0.1`), not a word every
            // header of its kind may hold (`neighbor` of `BGP neighbor is 10.0.0.1`).
            let ident = w.contains(|c: char| c.is_ascii_digit() || matches!(c, '_' | '.' | '-'));
            w.len() >= MIN_NAME_BYTES && ident && line.contains(w)
        })
}

/// True for a comment or quote mark standing as a word (`#`, `//`, `>`, `====`).
fn mark(word: &str) -> bool {
    word.chars().all(|c| c.is_ascii_punctuation())
}

/// A line's first word with digits taken out, after a leading comment or quote mark if it
/// has one (`# Query:`, `// File:`, `> Author:`: the mark says what kind of line it is, not
/// what it names; a path there reads as `/`); `None` for a blank line.
pub fn lead(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let mut w: String = first.chars().filter(|c| !c.is_ascii_digit()).collect();
    if mark(first) {
        if let Some(next) = words.next() {
            w.push(' ');
            // A path after the mark is what the line names, not its kind (`=== /usr/share/
            // doc/a/README.html` over each file's `tidy` messages, trial of session 47): every
            // such line is one kind.
            if next.contains('/') {
                w.push('/');
            } else {
                w.extend(next.chars().filter(|c| !c.is_ascii_digit()));
            }
        }
    }
    (!w.is_empty()).then_some(w)
}

/// The 1-based lines that open repeated sections: top-level lines of one shape ([`shape`])
/// that occur at least [`MIN_SECTIONS`] times, are each followed (after blank lines) by lines
/// of one other shape ([`SAME_NEXT_TENTHS`]), are [`MIN_SECTION_LINES`] or more lines apart on
/// average, and name different things (half or more differ): `Query:` lines each followed by
/// `Scores for complete sequence`, `commit` lines each followed by `Author:`. A shape on more
/// than a third of the lines is the text's body, not its sections (log lines).
fn repeat_openers(lines: &[&str]) -> std::collections::HashSet<usize> {
    let shapes: Vec<Option<String>> = lines.iter().map(|l| shape(l)).collect();
    // The shape (or a stand-in for an indented line) of each line's next non-blank line.
    let next_of = |i: usize| -> Option<String> {
        let j = (i + 1..lines.len()).find(|&j| !lines[j].trim().is_empty())?;
        Some(shapes[j].clone().unwrap_or_else(|| {
            let t = lines[j].trim_start();
            format!(
                "{}\u{1}{}",
                indent(lines[j]),
                t.split_whitespace().next().unwrap_or("")
            )
        }))
    };
    let mut by: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (i, s) in shapes.iter().enumerate() {
        if let Some(s) = s {
            by.entry(s.as_str()).or_default().push(i);
        }
    }
    // The format of the text's body, when one format holds more than half its top-level
    // lines (an access log's `host - - [date] "GET …"`, whatever the host): a line of that
    // format is one more row, however its first word reads, and opens no section.
    let mut formats: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut top_level = 0;
    for l in lines
        .iter()
        .filter(|l| !l.trim().is_empty() && indent(l) == 0)
    {
        top_level += 1;
        *formats.entry(format_of(l)).or_default() += 1;
    }
    let body = formats
        .into_iter()
        .find(|&(_, n)| n * 2 > top_level)
        .map(|(f, _)| f);
    let mut found: Vec<Vec<usize>> = Vec::new();
    for (s, at) in by {
        if let Some(b) = &body {
            if at.iter().filter(|&&i| &format_of(lines[i]) == b).count() * 2 > at.len() {
                continue;
            }
        }
        let k = at.len();
        if k < MIN_SECTIONS || k * 3 > lines.len() {
            continue;
        }
        // Openers name their sections: a line written the same in each names none.
        let distinct: std::collections::HashSet<&str> =
            at.iter().map(|&i| lines[i].trim()).collect();
        if distinct.len() * 2 < k {
            continue;
        }
        let span = at[k - 1] - at[0];
        if span < (k - 1) * MIN_SECTION_LINES {
            continue;
        }
        let mut next: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for &i in &at {
            if let Some(n) = next_of(i) {
                *next.entry(n).or_default() += 1;
            }
        }
        let Some((top, c)) = next.into_iter().max_by_key(|x| x.1) else {
            continue;
        };
        if top != s && c * 10 >= k * SAME_NEXT_TENTHS {
            found.push(at);
        }
    }
    // A shape that comes right after another opener each time (`Name:` after `LOGICAL UNIT
    // NUMBER 77`, `Author:` after `commit 1a2b`) continues that opener's section; it opens
    // none of its own, or each line would be under the nearest of them, not the first.
    let opens: std::collections::HashSet<usize> = found.iter().flatten().copied().collect();
    let prev_of = |i: usize| (0..i).rev().find(|&j| !lines[j].trim().is_empty());
    let mut out = std::collections::HashSet::new();
    for at in found {
        let after = at
            .iter()
            .filter(|&&i| prev_of(i).is_some_and(|j| opens.contains(&j) && shapes[j] != shapes[i]))
            .count();
        if after * 10 < at.len() * SAME_NEXT_TENTHS {
            out.extend(at.iter().map(|i| i + 1));
        }
    }
    out
}

/// Most lines of a paragraph whose first line heads the others ([`paragraphs`]).
const MAX_PARAGRAPH: usize = 8;

/// Fewest paragraphs a text must be made of for [`paragraphs`] to head their lines.
const MIN_PARAGRAPHS: usize = 10;

/// In a text made of short paragraphs at the margin (blank-line separated runs of 2 to
/// [`MAX_PARAGRAPH`] lines holding most of its lines, at least [`MIN_PARAGRAPHS`] of them),
/// sets the header of each paragraph line that has none to the paragraph's first line, when
/// that line could name a record ([`header_like`]).
fn paragraphs(lines: &[&str], parent: &mut [u32], used: &mut std::collections::HashSet<usize>) {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            if let Some(s) = start.take() {
                runs.push((s, i));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        runs.push((s, lines.len()));
    }
    let short: Vec<&(usize, usize)> = runs
        .iter()
        .filter(|(a, b)| (2..=MAX_PARAGRAPH).contains(&(b - a)) && indent(lines[*a]) == 0)
        .collect();
    let in_short: usize = short.iter().map(|(a, b)| b - a).sum();
    let nonblank = lines.iter().filter(|l| !l.trim().is_empty()).count();
    if short.len() < MIN_PARAGRAPHS || in_short * 2 < nonblank {
        return;
    }
    for &&(a, b) in &short {
        if !header_like(lines[a]) || lines[a].len() > MAX_HEADER_BYTES {
            continue;
        }
        for p in parent[a + 1..b].iter_mut().filter(|p| **p == 0) {
            *p = (a + 1) as u32;
            used.insert(a + 1);
        }
    }
}

impl Headers {
    /// Headers of `text`'s lines (split on `\n`, as line anchors count them). A line's header
    /// is the outermost line above it that opens a block holding it, of at most [`MAX_BLOCK`]
    /// lines (a record, not the document or a whole list), and that is [`header_like`]: the
    /// `FastEthernet1/0/29 is up` that opens an interface's stanza rather than the `5 minute
    /// output rate` line its counters happen to be indented under. A text with no indented
    /// line gets none.
    pub fn of(text: &str) -> Headers {
        let lines: Vec<&str> = text.split('\n').collect();
        // Pass 1: nearest opener (1-based, 0 for none) and last line of each line's block.
        let mut near = vec![0usize; lines.len() + 1];
        let mut end: Vec<usize> = (0..=lines.len()).collect();
        let mut stack: Vec<(usize, usize)> = Vec::new();
        let mut last = 0;
        for (i, line) in lines.iter().enumerate() {
            let n = i + 1;
            if line.trim().is_empty() {
                continue;
            }
            let d = indent(line);
            while let Some(&(sd, l)) = stack.last() {
                if sd < d {
                    break;
                }
                end[l] = last;
                stack.pop();
            }
            near[n] = stack.last().map_or(0, |&(_, l)| l);
            stack.push((d, n));
            last = n;
        }
        for (_, l) in stack {
            end[l] = last;
        }
        // A header written the same way many times (`- request:` of every recorded call)
        // names no record.
        let mut freq: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for line in &lines {
            let t = line.trim();
            if !t.is_empty() && t.len() <= MAX_HEADER_BYTES {
                *freq.entry(t).or_default() += 1;
            }
        }
        let same_everywhere = |l: &str| freq.get(l.trim()).copied().unwrap_or(0) >= MAX_SAME_HEADER;
        // Pass 2: walk each line's openers outwards.
        let mut parent = vec![0u32; lines.len()];
        let mut used = std::collections::HashSet::new();
        let max_block = MAX_BLOCK.max(lines.len() / 4).min(MAX_BLOCK_ANY);
        for n in 1..=lines.len() {
            let mut best = 0;
            let mut p = near[n];
            let node = p > 0 && super::super::tree_node(lines[n - 1]);
            while p > 0 {
                if end[p] - p < max_block {
                    if header_like(lines[p - 1]) && !same_everywhere(lines[p - 1]) {
                        best = p;
                    } else if bare_tag(lines[p - 1])
                        && p < lines.len()
                        && p + 1 != n
                        && near[p + 1] == p
                        && named_child(lines[p])
                    {
                        // `<brick>` names nothing; its first child does.
                        best = p + 1;
                    }
                }
                // A tree's node is named by its parent node, not the root (`zip v9.8.2`
                // under `candle-core v0.11.1`, which pulls it in).
                if best > 0 && node {
                    break;
                }
                p = near[p];
            }
            if best > 0 {
                best = run_start(&lines, best, &end);
            }
            if best > 0 {
                used.insert(best);
                parent[n - 1] = best as u32;
            }
        }
        // A line in no indented block, under a banner (`=== libgomp Summary ===`, `## Tests`):
        // the banner is its header, up to the next banner or blank-line-free MAX_BLOCK lines.
        let mut sections = vec![0u32; lines.len()];
        let mut kinds = std::collections::HashMap::new();
        let mut banner = 0usize;
        let mut in_banner = 0usize;
        for (i, line) in lines.iter().enumerate() {
            let n = i + 1;
            if is_banner(line) {
                in_banner = n;
                kinds.insert(n, BANNER_KIND.to_string());
            } else if in_banner > 0 && !line.trim().is_empty() {
                sections[i] = in_banner as u32;
            }
            if is_banner(line) {
                // A banner titles; it is no line of the block above it.
                banner = n;
                parent[i] = 0;
                continue;
            }
            if banner > 0 && n - banner > MAX_BLOCK {
                banner = 0;
            }
            if banner > 0 && parent[i] == 0 && !line.trim().is_empty() {
                used.insert(banner);
                parent[i] = banner as u32;
            }
        }
        // A top-level line in no block of its own, in a text made of repeated sections that
        // no indentation or banner marks (`Query: bpsA` then its tables, `commit 1a2b` then
        // `Author:`): the line that opens its section is its header ([`repeat_openers`]). So
        // is it for a line whose indented block opens with a line written the same in every
        // section (`Scores for complete sequence:`), which names none of them.
        let openers = repeat_openers(&lines);
        if !openers.is_empty() {
            // A line of the text's body (a log's timestamped lines: one lead on more than
            // half of the top-level lines, whatever their length) is a record of its own, not
            // a line of the section some multi-line message above it opened (`REQ: curl
            // ...`). (A third was too few: a BLAST report's rows and an HMMER report's
            // `Scores` lines lost the section they are in.)
            let mut leads: std::collections::HashMap<String, usize> = Default::default();
            let mut nonblank = 0;
            for l in lines
                .iter()
                .filter(|l| !l.trim().is_empty() && indent(l) == 0)
            {
                nonblank += 1;
                if let Some(w) = lead(l) {
                    *leads.entry(w).or_default() += 1;
                }
            }
            let body = |l: &str| {
                indent(l) == 0
                    && lead(l).is_some_and(|w| leads.get(&w).copied().unwrap_or(0) * 2 > nonblank)
            };
            // Rows that are not a log's (no clock time at their start: `go test -bench`'s
            // `BenchmarkX-2  300  83077 ns/op` lines under each `pkg:` opener) are the
            // section's own: their opener says whose they are.
            let timed = lines
                .iter()
                .find(|l| body(l))
                .is_none_or(|l| clock_early(l));
            let body = |l: &str| timed && body(l);
            let mut cur = 0usize;
            for (i, line) in lines.iter().enumerate() {
                let n = i + 1;
                if openers.contains(&n) {
                    cur = n;
                    parent[i] = 0;
                    kinds.insert(n, lead(line).unwrap_or_default());
                    continue;
                }
                if cur > 0 && sections[i] == 0 && !line.trim().is_empty() {
                    sections[i] = cur as u32;
                }
                if cur == 0 || line.trim().is_empty() || body(line) {
                    continue;
                }
                let p = parent[i] as usize;
                let weak = p == 0 || freq.get(lines[p - 1].trim()).copied().unwrap_or(0) > 1;
                if weak && p != cur {
                    used.insert(cur);
                    parent[i] = cur as u32;
                }
            }
        }
        // A text of short paragraphs (a gettext catalogue's entries, wget's requests): a line
        // in none of the blocks above is under its paragraph's first line.
        paragraphs(&lines, &mut parent, &mut used);
        if std::env::var_os("HDBG").is_some() {
            let mut o: Vec<_> = openers.iter().copied().collect();
            o.sort();
            for n in o.iter().take(40) {
                eprintln!(
                    "HDBG opener L{n}: {}",
                    super::super::clip_str(lines[n - 1], 100)
                );
            }
        }
        let text = used
            .into_iter()
            .map(|l| {
                (
                    l,
                    super::super::show_line_max(lines[l - 1], MAX_HEADER_BYTES),
                )
            })
            .collect();
        Headers {
            parent,
            text,
            sections,
            kinds,
        }
    }

    /// The repeated section 1-based line `n` is in: its opener's 1-based line and kind
    /// (`Query:`, or one kind for every banner); `None` when `n` is in none or opens one.
    pub fn section_of(&self, n: usize) -> Option<(usize, &str)> {
        let p = *self.sections.get(n.checked_sub(1)?)? as usize;
        (p > 0).then(|| (p, self.kinds.get(&p).map_or("", String::as_str)))
    }

    /// Every line that opens a repeated section or is a banner, with its kind (as
    /// [`Headers::section_of`] gives it), by 1-based line, in input order.
    pub fn openers(&self) -> Vec<(usize, &str)> {
        let mut v: Vec<(usize, &str)> = self.kinds.iter().map(|(&n, k)| (n, k.as_str())).collect();
        v.sort_unstable();
        v
    }

    /// These headers, less the ones that are lines of vertical records (`spans`: sorted
    /// 1-based inclusive line ranges): a record is its own block, and the line above its
    /// indented first field (`            id = 106` of `sqlite3 -line`) is the record
    /// before's last field, no header of it. A header above the records stays theirs.
    pub fn outside(mut self, spans: &[(usize, usize)]) -> Headers {
        for p in self.parent.iter_mut() {
            if *p > 0 && crate::guard::reduce::units::in_spans(spans, *p as usize) {
                *p = 0;
            }
        }
        self
    }

    /// No line has a header.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The header of 1-based line `n`: its 1-based line and its text as shown; `None` when the
    /// line is not inside a block.
    pub fn of_line(&self, n: usize) -> Option<(usize, &str)> {
        let p = *self.parent.get(n.checked_sub(1)?)? as usize;
        if p == 0 {
            return None;
        }
        Some((p, self.text.get(&p)?.as_str()))
    }

    /// The header of 1-based line `n` as an item of `like`'s section, just above it; `None`
    /// when the line is not inside a block.
    pub fn header(&self, n: usize, like: &Item) -> Option<Item> {
        let (p, text) = self.of_line(n)?;
        if names_in(text, &like.text) {
            return None;
        }
        Some(Item::line(like.section, p, text.to_string(), like.prio))
    }
}

#[cfg(test)]
mod tests;
