//! JSON, NDJSON and `go test -json` reduction: shape (keys, types, array lengths), counts of
//! categorical fields, every record whose status/error/level/exit-code fields say failure (kept
//! compact, `"key": value` as pretty-printed JSON writes it), command envelopes (command, exit
//! code, stdout, stderr), and records ranked by the intent.

use super::rank::bm25;
use super::text::{normalise, reduce_lines};
use super::units::{pretty_style, table_columns, written_in, Escapes};
use super::{count, derived, fmt_num, show_line, Ctx, Item, Kind, Reduction, Section, MUST};
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::LazyLock;

mod failures;
mod gotest;
mod named;
mod offsets;
mod records;
mod render;
mod wrapped;

use failures::{distinct_first, failing_objects};
use gotest::gotest;
pub use offsets::{line_of, line_starts, spans, ArraySpans, KeySpans};
use records::{best_is_none, has_map_of_records, lists_of, records_of};
pub(crate) use render::{colon_spaced, colon_spacing, StringScan};
use render::{compact_spacing, distinct, type_name, Constant};
pub use render::{is_failure, record_fails, render};

/// Bytes of one failing record's compact rendering shown in the summary.
const FAILURE_RECORD_BYTES: usize = 700;
/// Bytes of a record's identifying fields shown as evidence.
const RECORD_BYTES: usize = 360;
/// Priority of a value the question names by its key ([`named`]): below the whole small
/// document (90), above the leaves ranked by the question (at most 45).
const NAMED_PRIO: f64 = 80.0;
/// Failing records listed at most (the Key facts give the total).
const MAX_FAILURES: usize = 30;

static OUTPUT_FILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:^|\s)(?:-o|--output|--out|-O|--output-file|--outfile)[ =]('[^']+'|\S+)|>>?\s*(\S+)",
    )
    .unwrap()
});

/// Least share of a document's bytes (percent, minified) that a map of lists holds for its
/// lists' objects to be the document's records.
const MAJOR_LISTS_PCT: usize = 40;

/// Keys of a record schema named in the Key facts (the rest are counted): the schema is a
/// must-show fact, so it is kept short.
const SCHEMA_KEYS: usize = 12;

/// Reduces JSON-family text; `None` when it does not parse (the caller falls back to lines).
pub fn reduce(text: &str, kind: Kind, ctx: &Ctx<'_>) -> Option<Reduction> {
    match kind {
        Kind::GoTestJson => gotest(text, ctx),
        Kind::Ndjson => ndjson(text, ctx),
        _ => {
            let v: Value = serde_json::from_str(text).ok()?;
            Some(document(text, &v, ctx))
        }
    }
}

struct Facts {
    items: Vec<Item>,
    seq: usize,
}

impl Facts {
    fn push(&mut self, text: String, prio: f64) {
        self.seq += 1;
        self.items.push(Item::fact(self.seq, text, prio));
    }
}

/// Analyses a list of records (objects) with their 1-based start lines: their schema and
/// failing records as facts, and, when `rank`, every record ranked by the intent as evidence.
/// Returns how many fail.
fn records(
    text: &str,
    recs: &[(&Map<String, Value>, Option<usize>)],
    label: &str,
    ctx: &Ctx<'_>,
    f: &mut Facts,
    rank: bool,
) -> usize {
    let n = recs.len();
    let lines: Vec<&str> = text.split('\n').collect();
    // A record rendered (not quoted) is spaced and escaped as the file writes JSON.
    let pretty = pretty_style(text);
    let (escapes, colons) = (Escapes::of(text), colon_spaced(text));
    let spaced = |r: String| {
        let r = if !pretty {
            compact_spacing(&r)
        } else if colons {
            colon_spacing(&r)
        } else {
            r
        };
        escapes.apply(&r).unwrap_or(r)
    };
    // Schema: key -> (types, presence).
    let mut schema: BTreeMap<&str, (Vec<&'static str>, usize, usize)> = BTreeMap::new();
    for (i, (m, _)) in recs.iter().enumerate() {
        for (k, v) in m.iter() {
            let e = schema.entry(k.as_str()).or_insert((Vec::new(), 0, i));
            let t = type_name(v);
            if !e.0.contains(&t) {
                e.0.push(t);
            }
            e.1 += 1;
        }
    }
    type Profile = (Vec<&'static str>, usize, usize);
    let mut keys: Vec<(&str, &Profile)> = schema.iter().map(|(k, v)| (*k, v)).collect();
    keys.sort_by_key(|(_, v)| (v.2, std::cmp::Reverse(v.1)));
    let shown: Vec<String> = keys
        .iter()
        .take(SCHEMA_KEYS)
        .map(|(k, (t, c, _))| {
            if *c == n {
                format!("{k}: {}", t.join("|"))
            } else {
                format!("{k}: {} (in {} of {})", t.join("|"), count(*c), count(n))
            }
        })
        .collect();
    let more = if keys.len() > SCHEMA_KEYS {
        format!(", …{} more keys", count(keys.len() - SCHEMA_KEYS))
    } else {
        String::new()
    };
    f.push(
        format!(
            "{label}: {} records; record schema: {}{more}",
            count(n),
            shown.join(", ")
        ),
        MUST,
    );
    // Counts per value of categorical fields are mined for every kind (signals::facts).
    // Failures.
    let failing: Vec<&(&Map<String, Value>, Option<usize>)> =
        recs.iter().filter(|(m, _)| record_fails(m)).collect();
    if !failing.is_empty() {
        f.push(
            format!("failing records: {} of {}", count(failing.len()), count(n)),
            MUST,
        );
    }
    // The text collapsed, for finding a failing record as a pretty document writes it.
    let mut flat: Option<String> = None;
    for (k, (m, line)) in distinct_first(&failing, MAX_FAILURES)
        .into_iter()
        .take(MAX_FAILURES)
        .enumerate()
    {
        let text = own_line(&lines, *line, m, FAILURE_RECORD_BYTES)
            .or_else(|| {
                // Quoted, not rendered with its keys re-ordered (`{"status": "failed",
                // "error": ..., "id": 10137}` is in no file).
                let v = Value::Object((*m).clone());
                let compact = serde_json::to_string(&v).ok()?;
                written_in(&v, compact, text, &mut flat, FAILURE_RECORD_BYTES)
            })
            .unwrap_or_else(|| spaced(render(&Value::Object((*m).clone()), FAILURE_RECORD_BYTES)));
        f.items.push(Item {
            section: Section::Errors,
            order: line.unwrap_or(0) * 1000 + k,
            line: *line,
            text,
            prio: 150.0 - k as f64,
        });
    }
    // Records ranked by the intent; the lists of a map of lists are left to the units, which
    // quote each record where the file has it (ranked here too, each was shown twice).
    if !rank {
        return failing.len();
    }
    let constant = Constant::of(&recs.iter().map(|(m, _)| *m).collect::<Vec<_>>());
    let ids: Vec<String> = recs
        .iter()
        .map(|(m, line)| {
            own_line(&lines, *line, m, RECORD_BYTES)
                .unwrap_or_else(|| spaced(distinct(m, RECORD_BYTES, &constant, ctx.query)))
        })
        .collect();
    let scores = normalise(&bm25(ctx.query, &ids));
    for (i, ((m, line), id)) in recs.iter().zip(ids).enumerate() {
        if record_fails(m) || id.is_empty() {
            continue;
        }
        let head = if i < 3 { 15.0 } else { 0.0 };
        f.items.push(Item {
            section: Section::Evidence,
            order: line.unwrap_or(0) * 1000 + i,
            line: *line,
            text: id,
            prio: 5.0 + head + 40.0 * scores[i] - i as f64 * 0.001,
        });
    }
    failing.len()
}

/// Record `m`'s own line of `lines` (1-based `line`) as the file writes it, when the record is
/// that whole line (an NDJSON line, a compact record in a pretty array: `{"id": 3, ...},`) and
/// it fits in `max` bytes: a quote rather than a rendering, so the summary shows the file's
/// text once and not beside a re-ordered copy of it.
fn own_line(
    lines: &[&str],
    line: Option<usize>,
    m: &Map<String, Value>,
    max: usize,
) -> Option<String> {
    let l = lines.get(line?.checked_sub(1)?)?.trim();
    let body = l.strip_suffix(',').unwrap_or(l);
    if body.len() > max || !body.starts_with('{') || !body.ends_with('}') {
        return None;
    }
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(o)) if &o == m => Some(show_line(l)),
        _ => None,
    }
}

/// A table of rows found in a document: its key path, its rows (header included), its column
/// names and the index of its first data row.
type Grid = (Vec<String>, usize, Vec<String>, usize);

/// The longest table of rows (arrays of scalars of one width, [`table_columns`]) within three
/// object levels of `v` ([`Grid`]).
fn find_grid(
    v: &Value,
    parent: Option<&Map<String, Value>>,
    path: &mut Vec<String>,
    best: &mut Option<Grid>,
    depth: usize,
) {
    match v {
        Value::Array(a) if best.as_ref().is_none_or(|b| a.len() > b.1) => {
            let key = path.last().map_or("", String::as_str);
            if let Some((names, first)) = table_columns(parent, a, key) {
                *best = Some((path.clone(), a.len(), names, first));
            }
        }
        Value::Object(m) if depth < 3 => {
            for (k, x) in m {
                path.push(k.clone());
                find_grid(x, Some(m), path, best, depth + 1);
                path.pop();
            }
        }
        _ => {}
    }
}

fn exit_field(m: &Map<String, Value>) -> Option<(&str, i64)> {
    for k in [
        "returncode",
        "exit_code",
        "exitCode",
        "exitcode",
        "exit_status",
        "status_code",
        "code",
        "status",
    ] {
        if let Some(c) = m.get(k).and_then(Value::as_i64) {
            return Some((k, c));
        }
    }
    None
}

/// Multi-line text inside a JSON string field, reduced as lines and anchored to the field's line.
fn embedded(
    field: &str,
    s: &str,
    anchor: Option<usize>,
    ctx: &Ctx<'_>,
    f: &mut Facts,
) -> Reduction {
    let lines: Vec<&str> = s.split('\n').collect();
    let inner = reduce_lines(&lines, Kind::Lines, ctx);
    // Sizes of the inner text are counts toolsum made: written as such.
    f.push(
        format!(
            "{field}: a text of {} lines, {} bytes",
            count(s.lines().count()),
            count(s.len())
        ),
        MUST / 10.0,
    );
    for it in &inner.items {
        match (it.section, it.line) {
            (Section::KeyFacts, _) if it.prio < MUST => {}
            (Section::KeyFacts, _) if it.text.starts_with("kind: ") => {}
            (Section::KeyFacts, _) => f.push(format!("{field}: {}", it.text), it.prio / 10.0),
            (sec, Some(k)) => f.items.push(Item {
                section: sec,
                order: anchor.unwrap_or(0) * 100_000 + k,
                line: anchor,
                text: format!("{field} L{k}: {}", it.text),
                prio: it.prio,
            }),
            _ => {}
        }
    }
    inner
}

/// Most top-level keys the `kind: json` fact lists (with their types).
const TOP_KEYS_SHOWN: usize = 8;

fn document(text: &str, v: &Value, ctx: &Ctx<'_>) -> Reduction {
    let starts = line_starts(text);
    let n_lines = text.lines().count();
    let (arrays, keys) = spans(text, 3);
    let key_line = |p: &[&str]| -> Option<usize> {
        let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        keys.get(&p).map(|&o| line_of(&starts, o))
    };
    let mut f = Facts {
        items: Vec::new(),
        seq: 0,
    };
    let shape = match v {
        Value::Object(m) => {
            // The first keys name the document; the rest are in the saved file (a wide
            // object's key list would cost a tenth of the summary, and it is a MUST).
            let mut ks: Vec<String> = m
                .iter()
                .take(TOP_KEYS_SHOWN)
                .map(|(k, x)| format!("{k}: {}", type_name(x)))
                .collect();
            if m.len() > TOP_KEYS_SHOWN {
                ks.push("…".into());
            }
            format!(
                "top-level object with {} keys ({})",
                count(m.len()),
                ks.join(", ")
            )
        }
        Value::Array(a) => format!("top-level array of {} items", count(a.len())),
        other => format!("top-level {}", type_name(other)),
    };
    f.push(
        format!(
            "kind: json; {} bytes, {} lines; {shape}",
            fmt_num(ctx.size(text)),
            fmt_num(n_lines)
        ),
        MUST,
    );
    let mut failed: Option<bool> = None;
    let mut status = String::new();
    let mut next_action = String::new();

    // Command envelope: {"command": ..., "returncode": 1, "stdout": ..., "stderr": ...}.
    if let Value::Object(m) = v {
        let has_streams = m.contains_key("stdout") || m.contains_key("stderr");
        if let (true, Some((ek, code))) = (has_streams, exit_field(m)) {
            let cmd = m.get("command").or_else(|| m.get("cmd")).map(|c| match c {
                Value::String(s) => s.clone(),
                other => render(other, 300),
            });
            if let Some(c) = &cmd {
                f.push(format!("command: {c}"), MUST);
            }
            f.push(format!("{ek}: {code}"), MUST);
            let mut empty = Vec::new();
            let mut streams = Vec::new();
            for s in ["stdout", "stderr"] {
                match m.get(s) {
                    Some(Value::String(x)) if x.trim().is_empty() => {
                        f.push(format!("{s}: empty"), MUST);
                        empty.push(s);
                    }
                    Some(Value::String(x)) => {
                        f.push(
                            format!("{s}: {} lines", derived(x.lines().count(), 0, "")),
                            MUST,
                        );
                        embedded(s, x, key_line(&[s]), ctx, &mut f);
                        streams.push(s);
                    }
                    _ => {}
                }
            }
            for (k, x) in m {
                if !matches!(k.as_str(), "command" | "cmd" | "stdout" | "stderr") && k != ek {
                    f.push(format!("{k}: {}", render(x, 200)), 50.0);
                }
            }
            let out_file = cmd.as_deref().and_then(|c| {
                OUTPUT_FILE
                    .captures(c)
                    .and_then(|cap| cap.get(1).or(cap.get(2)))
                    .map(|x| x.as_str().trim_matches('\'').to_string())
            });
            if let Some(p) = &out_file {
                f.push(format!("output file named in the command: {p}"), MUST);
            }
            let streams_txt = if empty.len() == 2 {
                "stdout and stderr were empty".to_string()
            } else if empty.is_empty() {
                format!("{} had output", streams.join(" and "))
            } else {
                format!(
                    "{} was empty, {} had output",
                    empty.join(" and "),
                    streams.join(" and ")
                )
            };
            let cmd_txt = cmd
                .as_deref()
                .map(|c| format!(" `{}`", super::show_line_max(c, 120)))
                .unwrap_or_default();
            failed = Some(code != 0);
            status = if code != 0 {
                format!("Command{cmd_txt} failed ({ek} {code}); {streams_txt}.")
            } else {
                format!("Command{cmd_txt} completed ({ek} {code}); {streams_txt}.")
            };
            next_action = match (&out_file, code) {
                (Some(p), _) => format!("Read {p} (the command wrote its results there, not to stdout)."),
                (None, 0) => "Nothing to do for this output; read the saved file only if a detail is missing.".to_string(),
                (None, _) => "Read the stderr lines above and fix the cause before rerunning the command.".to_string(),
            };
            return Reduction {
                kind: Kind::Json,
                items: f.items,
                status,
                failed,
                next_action,
            };
        }
        // MCP-style content blocks: text kept as lines, images described.
        if let Some(Value::Array(blocks)) = m.get("content") {
            let mut any = false;
            for (bi, b) in blocks.iter().enumerate() {
                let Value::Object(bm) = b else { continue };
                let anchor = arrays
                    .get(&vec!["content".to_string()])
                    .and_then(|o| o.get(bi))
                    .map(|&o| line_of(&starts, o));
                match (
                    bm.get("type").and_then(Value::as_str),
                    bm.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(t)) => {
                        any = true;
                        embedded(&format!("content[{bi}].text"), t, anchor, ctx, &mut f);
                    }
                    (Some(ty), _) => {
                        any = true;
                        let mime = bm
                            .get("mimeType")
                            .or_else(|| bm.get("mime_type"))
                            .and_then(Value::as_str)
                            .unwrap_or("?");
                        let size = bm
                            .get("data")
                            .and_then(Value::as_str)
                            .map(|d| d.len())
                            .unwrap_or(0);
                        f.push(
                            format!(
                                "content[{bi}]: {ty} block, {mime}, base64 data{} (not shown)",
                                if size == 0 { " (empty)" } else { "" }
                            ),
                            MUST,
                        );
                    }
                    _ => {}
                }
            }
            if any {
                let is_err = m.get("isError").and_then(Value::as_bool);
                failed = is_err;
                status = format!(
                    "Tool result with {} content block(s){}.",
                    blocks.len(),
                    if is_err == Some(true) {
                        ", flagged isError"
                    } else {
                        ""
                    }
                );
                next_action =
                    "Use the text above; open the saved file only for the raw blocks.".to_string();
                return Reduction {
                    kind: Kind::Json,
                    items: f.items,
                    status,
                    failed,
                    next_action,
                };
            }
        }
    }

    // One text wrapped in a few keys, or many texts (a source map's sources).
    if let Some(r) = wrapped::reduce_texts(v, text.len(), ctx, &key_line, &mut f) {
        return r;
    }
    let best = records_of(v, text.len());
    // A table of rows (arrays) longer than any array of objects is what the document holds.
    let mut grid = None;
    find_grid(v, None, &mut Vec::new(), &mut grid, 0);
    if let Some((path, rows, names, first)) =
        grid.filter(|g| best.as_ref().is_none_or(|(_, b)| g.1 > b.len()))
    {
        let label = if path.is_empty() {
            "top-level array".to_string()
        } else {
            format!("array {}", jq_path(&path))
        };
        let data = rows.saturating_sub(first);
        let header = if first > 0 {
            "; the first row is the header"
        } else {
            ""
        };
        f.push(
            format!(
                "{label}: a table of {} rows of {} columns ({}){header}",
                count(data),
                count(names.len()),
                names.join(", ")
            ),
            MUST,
        );
        status = format!("JSON table of {} rows at {label}.", count(data));
        next_action =
            format!(
            "Filter the rows at {}[] with jq (a row is an array, its columns in the order above).",
            if path.is_empty() { String::new() } else { jq_path(&path) }
        );
        return Reduction {
            kind: Kind::Json,
            items: f.items,
            status,
            failed,
            next_action,
        };
    }
    let mut n_fail = 0;
    // A map of lists holding more objects than the largest array, and most of the document:
    // its lists' objects are what the document lists (detect-secrets' 241 findings in 91
    // files' lists, not its 27 plugins). A package page's files by release are a part of it.
    let listed = lists_of(v, 0).filter(|(_, lists)| {
        let objects: usize = lists
            .iter()
            .map(|(_, a)| a.iter().filter(|x| x.is_object()).count())
            .sum();
        let bytes: usize = lists
            .iter()
            .map(|(_, a)| serde_json::to_string(a).map_or(0, |t| t.len()))
            .sum();
        best.as_ref().is_none_or(|(_, b)| objects > b.len())
            && bytes * 100 >= text.len() * MAJOR_LISTS_PCT
    });
    if let Some((path, lists)) = listed {
        let mut recs: Vec<(&Map<String, Value>, Option<usize>)> = Vec::new();
        for (k, a) in &lists {
            let mut p = path.clone();
            p.push(k.to_string());
            let offs = arrays.get(&p);
            for (i, x) in a.iter().enumerate() {
                if let Some(m) = x.as_object() {
                    recs.push((m, offs.and_then(|o| o.get(i)).map(|&o| line_of(&starts, o))));
                }
            }
        }
        let at = if path.is_empty() {
            "the top level".to_string()
        } else {
            jq_path(&path)
        };
        let label = format!("lists of {at} ({} lists)", count(lists.len()));
        n_fail = records(text, &recs, &label, ctx, &mut f, false);
        status = format!(
            "JSON with {} records in {} lists at {at}{}.",
            count(recs.len()),
            count(lists.len()),
            if n_fail > 0 {
                format!(", {} failing", count(n_fail))
            } else {
                ", none failing by their status or error fields".to_string()
            }
        );
        failed = Some(n_fail > 0);
        let jq = if path.is_empty() {
            ".".to_string()
        } else {
            jq_path(&path)
        };
        next_action = format!(
            "Page or filter the saved file with jq on the records at {jq}[][] (select on the fields you need)."
        );
    } else if let Some((path, arr)) = best {
        let offs = arrays.get(&path);
        let recs: Vec<(&Map<String, Value>, Option<usize>)> = arr
            .iter()
            .enumerate()
            .filter_map(|(i, x)| {
                x.as_object()
                    .map(|m| (m, offs.and_then(|o| o.get(i)).map(|&o| line_of(&starts, o))))
            })
            .collect();
        let label = if path.is_empty() {
            "top-level array".to_string()
        } else {
            format!("array {}", jq_path(&path))
        };
        n_fail = records(text, &recs, &label, ctx, &mut f, true);
        let jq = if path.is_empty() {
            ".[]".to_string()
        } else {
            format!("{}[]", jq_path(&path))
        };
        // No ready-made filter in quotes: a command line is not a string of the input.
        next_action = format!(
            "Page or filter the saved file with jq on the records at {jq} (select on the fields you need)."
        );
        // Records that fail deeper down (a test's results inside its suite) make the output
        // failing too: "none failing" is said only of a document with no failing object.
        let nested = if n_fail > 0 { 0 } else { failing_objects(v) };
        status = format!(
            "JSON with {} records at {label}{}.",
            count(arr.len()),
            if n_fail > 0 {
                format!(", {} failing", count(n_fail))
            } else if nested > 0 {
                format!(
                    ", none failing at that level; {} nested object{} failing by their status or error fields",
                    count(nested),
                    if nested == 1 { "" } else { "s" }
                )
            } else {
                ", none failing by their status or error fields".to_string()
            }
        );
        failed = Some(n_fail + nested > 0);
    }
    // The values the question names by their keys, outlined (a large document only: a small
    // one is shown whole below).
    if text.len() > named::OUTLINE_BYTES * 4 {
        let named = named::named_values(v, ctx.query, pretty_style(text));
        let escapes = (!named.is_empty()).then(|| Escapes::of(text));
        let colons = !named.is_empty() && colon_spaced(text);
        for (i, nv) in named.into_iter().enumerate() {
            let outline = if colons {
                colon_spacing(&nv.outline)
            } else {
                nv.outline
            };
            let shown = escapes
                .as_ref()
                .and_then(|e| e.apply(&outline))
                .unwrap_or(outline);
            // Where it is, after it: the outline starts as the file writes it.
            let text_shown = format!("{shown} (at {})", jq_path(&nv.path));
            f.items.push(Item {
                section: Section::Evidence,
                order: 5 + i,
                line: key_line(&nv.path.iter().map(String::as_str).collect::<Vec<_>>())
                    .or_else(|| named::key_line(text, &starts, &nv.path)),
                text: text_shown,
                prio: NAMED_PRIO - i as f64,
            });
        }
    }
    // The document itself when it is small once long strings are abbreviated.
    let whole = render(v, 3000);
    let whole = if !pretty_style(text) {
        compact_spacing(&whole)
    } else if colon_spaced(text) {
        colon_spacing(&whole)
    } else {
        whole
    };
    let whole = Escapes::of(text).apply(&whole).unwrap_or(whole);
    if !whole.ends_with('…') && n_fail == 0 {
        f.items.push(Item {
            section: Section::Evidence,
            order: 0,
            line: Some(1),
            text: whole,
            prio: 90.0,
        });
    } else if best_is_none(v, text.len()) && !has_map_of_records(v, 0) {
        // Large document without records: rank its leaves by the intent.
        let mut leaves_out = Vec::new();
        flat(v, String::new(), &mut leaves_out, 0);
        let docs: Vec<String> = leaves_out
            .iter()
            .map(|(p, x)| format!("{p}: {x}"))
            .collect();
        let scores = normalise(&bm25(ctx.query, &docs));
        for (i, d) in docs.iter().enumerate() {
            // Asked something, a leaf no word of the question names is the walk's order, not
            // an answer; asked nothing (a hook's call without an intent), the first leaves are
            // the best guess.
            if scores[i] <= 0.0 && !ctx.query.is_empty() {
                continue;
            }
            let path: Vec<&str> = leaves_out[i]
                .0
                .split('.')
                .filter(|s| !s.is_empty())
                .collect();
            f.items.push(Item {
                section: Section::Evidence,
                order: 10 + i,
                line: key_line(&path),
                text: show_line(d),
                prio: 5.0 + 40.0 * scores[i] - i as f64 * 0.01,
            });
        }
        status = format!("JSON document of {} bytes.", fmt_num(ctx.size(text)));
        next_action = "Query the saved file with jq for the fields you need.".to_string();
    }
    if status.is_empty() {
        status = format!("JSON document of {} bytes.", fmt_num(ctx.size(text)));
        next_action = "Query the saved file with jq for the fields you need.".to_string();
    }
    Reduction {
        kind: Kind::Json,
        items: f.items,
        status,
        failed,
        next_action,
    }
}

/// The jq path of object keys `keys`: `.items.machineTypes`, with a key that is not a plain
/// identifier in brackets and quotes, as jq writes it (`.items["zones/us-central1-a"]`), so
/// the filter runs as given and a key with a `/` is not read as a file path.
pub(crate) fn jq_path(keys: &[String]) -> String {
    let mut out = String::new();
    for k in keys {
        let plain = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if plain {
            out.push('.');
            out.push_str(k);
        } else {
            if out.is_empty() {
                out.push('.');
            }
            out.push_str(&format!(
                "[{}]",
                serde_json::to_string(k).unwrap_or_default()
            ));
        }
    }
    out
}

fn flat(v: &Value, path: String, out: &mut Vec<(String, String)>, depth: usize) {
    match v {
        Value::Object(m) if depth < 6 => {
            for (k, x) in m {
                flat(
                    x,
                    if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    },
                    out,
                    depth + 1,
                )
            }
        }
        Value::Array(a) if depth < 6 && a.len() <= 50 => {
            for (i, x) in a.iter().enumerate() {
                flat(x, format!("{path}.{i}"), out, depth + 1)
            }
        }
        other => {
            if out.len() < 5000 {
                out.push((path, render(other, 200)))
            }
        }
    }
}

fn ndjson(text: &str, ctx: &Ctx<'_>) -> Option<Reduction> {
    let mut parsed = Vec::new();
    let mut bad = 0;
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(l) {
            Ok(Value::Object(m)) => parsed.push((m, i + 1)),
            _ => bad += 1,
        }
    }
    if parsed.is_empty() {
        return None;
    }
    let mut f = Facts {
        items: Vec::new(),
        seq: 0,
    };
    f.push(
        format!(
            "kind: ndjson; {} bytes, {} records, {} unparsable line{}",
            fmt_num(ctx.size(text)),
            count(parsed.len()),
            count(bad),
            if bad == 1 { "" } else { "s" }
        ),
        MUST,
    );
    let recs: Vec<(&Map<String, Value>, Option<usize>)> =
        parsed.iter().map(|(m, l)| (m, Some(*l))).collect();
    let n_fail = records(text, &recs, "records", ctx, &mut f, true);
    Some(Reduction {
        kind: Kind::Ndjson,
        items: f.items,
        status: format!(
            "NDJSON stream of {} records, {} failing by their status, level or error fields.",
            count(parsed.len()),
            count(n_fail)
        ),
        failed: Some(n_fail > 0),
        // Plain `jq` stops at the first line that is not JSON and drops the records after it.
        next_action: if bad == 0 {
            "Filter the saved file with jq (select on the fields you need) for the records you need."
                .to_string()
        } else {
            "Filter the saved file with jq -R and fromjson? on each line (lines that are not JSON stop plain jq) for the records you need."
                .to_string()
        },
    })
}

#[cfg(test)]
mod tests;
