//! Vertical records ("stanzas"): blocks of `key = value`, `key: value` or `key | value` lines,
//! one field per line, that repeat one shape (`sqlite3 -line`, `mysql \G`, `psql \x`,
//! `ffprobe -show_frames`, `/proc/cpuinfo`, Debian control stanzas, LDIF). Each block is a
//! record whose fields are its lines, so a record is chosen and shown whole (its id with the
//! odd value) as the rows of a table are, not as lines cut from their record.
//!
//! Blocks end at a blank line or at a line that is no field (`*** 12. row ***`, `[FRAME]`,
//! `-[ RECORD 3 ]-+-----`), which stays a line; an indented line that is no field continues
//! the block (a control file's folded `Description`) and stays a line too.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::{keep_line, Builder, UnitKind, MAX_UNITS};

/// Fewest records for blocks to be vertical records.
const MIN_RECORDS: usize = 4;
/// Fewest share of the non-blank lines (percent) that are fields of records.
const MIN_FIELD_LINES_PCT: usize = 60;
/// Fewest share of the records (percent) whose first key is the most common first key: the
/// blocks repeat one shape.
const MIN_SAME_FIRST_PCT: usize = 50;
/// Fewest share of the records (percent) that name each key once: a record, not a run of
/// `INFO: …` lines.
const MIN_UNIQUE_KEYS_PCT: usize = 80;
/// Most share of the non-blank lines (percent) that are YAML list items or document markers:
/// above it the text is YAML, whose nesting these records would flatten.
const MAX_YAML_PCT: usize = 5;
/// Longest key, in bytes.
const MAX_KEY_BYTES: usize = 48;
/// What a record's fields are joined with when it is shown.
const SEP: &str = "; ";

/// How a key and its value are separated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sep {
    Eq,
    Colon,
    Pipe,
}

/// `key = value` (ffprobe's `TAG:language=eng` keeps its colon in the key).
static EQ: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^[ \t]*([A-Za-z_][\w.\-/:\[\]]*(?: [A-Za-z_][\w.\-/]*){0,5}?)[ \t]*=(?:[ \t]?(.*))?$",
    )
    .expect("eq field pattern")
});
/// `key: value` or `key:` (a colon followed by a blank or the end: no URL, no drive letter).
static COLON: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^[ \t]*([A-Za-z_][\w.\-/]*(?: [A-Za-z_(][\w.\-/()]*){0,7}?)[ \t]*:(?:[ \t]+(.*))?$",
    )
    .expect("colon field pattern")
});
/// `key | value` (`psql \x`).
static PIPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[ \t]*([A-Za-z_][\w.\-]*)[ \t]*\|(?:[ \t]?(.*))?$").expect("pipe field pattern")
});

fn pattern(s: Sep) -> &'static Regex {
    match s {
        Sep::Eq => &EQ,
        Sep::Colon => &COLON,
        Sep::Pipe => &PIPE,
    }
}

/// The key and value of `line` written with separator `s`.
fn field(line: &str, s: Sep) -> Option<(String, String)> {
    let c = pattern(s).captures(line)?;
    let key = c.get(1)?.as_str();
    if key.len() > MAX_KEY_BYTES {
        return None;
    }
    let value = c.get(2).map_or("", |m| m.as_str()).trim();
    Some((key.to_string(), value.to_string()))
}

/// One block: the lines (0-based) of its fields, its last line (a field or a line it
/// continues), and the line right above its first field when that is no field (a title:
/// `LOGICAL UNIT NUMBER 77`, `*** 12. row ***`).
#[derive(Default)]
struct Block {
    fields: Vec<usize>,
    last: usize,
    title: Option<usize>,
}

/// Cuts `text` into vertical records and lines; false (nothing added) when the text is not
/// made of them.
pub(super) fn stanzas(b: &mut Builder, text: &str) -> bool {
    let all: Vec<&str> = text.split('\n').map(|l| l.trim_end_matches('\r')).collect();
    let nonblank = all.iter().filter(|l| !l.trim().is_empty()).count();
    if nonblank < MIN_RECORDS * 2 {
        return false;
    }
    let yaml = all
        .iter()
        .filter(|l| {
            let t = l.trim_start();
            t.starts_with("- ") || *l == &"---"
        })
        .count();
    if yaml * 100 > nonblank * MAX_YAML_PCT {
        return false;
    }
    // The separator most lines use.
    let sep = [Sep::Eq, Sep::Colon, Sep::Pipe]
        .into_iter()
        .map(|s| {
            let n = all
                .iter()
                .take(4000)
                .filter(|l| pattern(s).is_match(l))
                .count();
            (n, s)
        })
        .max_by_key(|x| x.0)
        .map(|x| x.1)
        .unwrap_or(Sep::Eq);
    // The head decides before the whole is parsed: a text whose first lines are mostly no
    // fields is not read further (a 16 MiB log costs one look at its head).
    let head: Vec<&&str> = all
        .iter()
        .filter(|l| !l.trim().is_empty())
        .take(4000)
        .collect();
    let head_fields = head.iter().filter(|l| pattern(sep).is_match(l)).count();
    if head_fields * 100 < head.len() * MIN_FIELD_LINES_PCT {
        return false;
    }
    let parsed: Vec<Option<(String, String)>> = all.iter().map(|l| field(l, sep)).collect();
    let mut blocks: Vec<Block> = Vec::new();
    let mut cur = Block::default();
    for (i, l) in all.iter().enumerate() {
        if l.trim().is_empty() {
            blocks.push(std::mem::take(&mut cur));
            continue;
        }
        if parsed[i].is_some() {
            if cur.fields.is_empty() && i > 0 && !all[i - 1].trim().is_empty() {
                cur.title = Some(i - 1);
            }
            cur.fields.push(i);
            cur.last = i;
        } else if l.starts_with([' ', '\t']) && !cur.fields.is_empty() {
            cur.last = i;
        } else {
            // A line that is no field and continues nothing: the block ends.
            blocks.push(std::mem::take(&mut cur));
        }
    }
    blocks.push(cur);
    let key = |i: usize| parsed[i].as_ref().map_or("", |p| p.0.as_str());
    let records: Vec<&Block> = blocks.iter().filter(|r| r.fields.len() >= 2).collect();
    if records.len() < MIN_RECORDS {
        return false;
    }
    let field_lines: usize = records.iter().map(|r| r.fields.len()).sum();
    if field_lines * 100 < nonblank * MIN_FIELD_LINES_PCT {
        return false;
    }
    let mut keys: HashMap<&str, usize> = HashMap::new();
    let mut firsts: HashMap<&str, usize> = HashMap::new();
    let mut unique = 0;
    for r in &records {
        *firsts.entry(key(r.fields[0])).or_default() += 1;
        let mut own: Vec<&str> = r.fields.iter().map(|&i| key(i)).collect();
        for k in &own {
            *keys.entry(k).or_default() += 1;
        }
        own.sort_unstable();
        let n = own.len();
        own.dedup();
        if own.len() == n {
            unique += 1;
        }
    }
    let same_first = firsts.values().copied().max().unwrap_or(0);
    if same_first * 100 < records.len() * MIN_SAME_FIRST_PCT
        || unique * 100 < records.len() * MIN_UNIQUE_KEYS_PCT
        || keys.len() * 3 > field_lines
    {
        return false;
    }
    // Titles name their records when they differ (`LOGICAL UNIT NUMBER 77`, `12. row`); one
    // title over and over (`[FRAME]`) says nothing of any record.
    let titles: std::collections::HashSet<String> = records
        .iter()
        .filter_map(|r| r.title.map(|t| title(all[t])))
        .collect();
    let titled = titles.len() * 2 > records.len();
    // A record starts at its title when it has one that names it, else at its first field.
    let start = |r: &Block| match r.title {
        Some(t) if titled && !title(all[t]).is_empty() => t,
        _ => r.fields[0],
    };
    let mut in_record = vec![false; all.len()];
    let mut first_of: HashMap<usize, &Block> = HashMap::new();
    for r in &records {
        in_record[start(r)] = true;
        for &i in &r.fields {
            in_record[i] = true;
        }
        first_of.insert(start(r), r);
    }
    for (i, l) in all.iter().enumerate() {
        if b.units.len() >= MAX_UNITS {
            break;
        }
        if let Some(r) = first_of.get(&i) {
            let mut pairs: Vec<String> = r.fields.iter().map(|&k| shown(all[k])).collect();
            let mut ids: Vec<(usize, String)> = Vec::new();
            if i != r.fields[0] {
                let t = title(all[i]);
                ids.push((b.field(TITLE), t.clone()));
                pairs.insert(0, t);
            }
            let u = b.push(
                i + 1,
                keep_line(&pairs.join(SEP)),
                UnitKind::Record,
                String::new(),
            );
            for (k, v) in r.fields.iter().filter_map(|&k| parsed[k].as_ref()) {
                let id = b.field(k);
                ids.push((id, v.clone()));
            }
            b.set_record(u, ids, pairs, SEP);
            b.spans.push((i + 1, r.last + 1));
        } else if !in_record[i] {
            b.line(i + 1, l);
        }
    }
    true
}

/// The field name of a record's title: a naming key of the record's focus.
const TITLE: &str = "title";

/// A title line as its record shows it: without the rules around it (`*** 12. row ***` is
/// `12. row`, `-[ RECORD 3 ]-+----` is `RECORD 3`), blanks made one space.
fn title(line: &str) -> String {
    let t = line.trim_matches(|c: char| {
        c.is_whitespace() || matches!(c, '*' | '-' | '=' | '+' | '|' | '[' | ']' | '#' | '_')
    });
    // A bracket that closes one opened inside the title is the title's own (`… 00:00 0
    // [heap]` of `/proc/*/smaps`), not a rule around it.
    let start = t.as_ptr() as usize - line.as_ptr() as usize;
    let mut end = start + t.len();
    let mut open = t
        .matches('[')
        .count()
        .saturating_sub(t.matches(']').count());
    while open > 0 && line[end..].starts_with(']') {
        end += 1;
        open -= 1;
    }
    shown(&line[start..end])
}

/// A field's line as a record shows it: trimmed, each run of blanks (tabs of `/proc/cpuinfo`,
/// the alignment of `sqlite3 -line`) one space.
fn shown(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::{build, UnitKind};
    use crate::guard::reduce::Kind;

    #[test]
    fn a_title_keeps_a_bracket_it_opens_and_loses_the_rules_around_it() {
        assert_eq!(
            super::title("55fef89bb000-55fefa40d000 rw-p 00000000 00:00 0      [heap]"),
            "55fef89bb000-55fefa40d000 rw-p 00000000 00:00 0 [heap]"
        );
        assert_eq!(super::title("-[ RECORD 3 ]-+----"), "RECORD 3");
        assert_eq!(super::title("[FRAME]"), "FRAME");
    }

    fn sqlite_line(n: usize) -> String {
        let mut s = String::new();
        for i in 1..=n {
            let (qty, status) = if i == 37 {
                (-3, "refunded")
            } else {
                (2, "shipped")
            };
            s.push_str(&format!(
                "            id = {i}\ncustomer_email = user{i}@example.org\n           qty = {qty}\n        status = {status}\n\n"
            ));
        }
        s
    }

    #[test]
    fn sqlite_line_blocks_are_records_of_their_fields() {
        let u = build(&sqlite_line(40), Kind::Lines);
        assert!(u.structured);
        let recs: Vec<_> = u
            .units
            .iter()
            .filter(|x| x.kind == UnitKind::Record)
            .collect();
        assert_eq!(recs.len(), 40);
        let r = recs[36];
        assert_eq!(r.line, 181);
        assert_eq!(
            r.text,
            "id = 37; customer_email = user37@example.org; qty = -3; status = refunded"
        );
        let names: Vec<&str> = r
            .fields
            .iter()
            .map(|f| u.fields[f.0].name.as_str())
            .collect();
        assert_eq!(names, ["id", "customer_email", "qty", "status"]);
        assert_eq!(r.fields[2].1, "-3");
        // Shown in part, it keeps the file's words.
        assert_eq!(r.render_pairs(&[0, 2]), "id = 37 … qty = -3 …");
    }

    #[test]
    fn mysql_vertical_rows_keep_their_separator_lines() {
        let mut s = String::new();
        for i in 1..=6 {
            s.push_str(&format!(
                "*************************** {i}. row ***************************\n     id: {i}\n   name: n{i}\n  state: ok\n"
            ));
        }
        let u = build(&s, Kind::Lines);
        assert!(u.structured);
        assert_eq!(
            u.units
                .iter()
                .filter(|x| x.kind == UnitKind::Record)
                .count(),
            6
        );
        // Each row's title names it and starts it.
        let second = u.units.iter().find(|x| x.line == 5).unwrap();
        assert_eq!(second.kind, UnitKind::Record);
        assert_eq!(second.text, "2. row; id: 2; name: n2; state: ok");
    }

    #[test]
    fn logs_prose_and_settings_are_no_records() {
        // Levelled lines repeat their key within a block.
        let log = "INFO: start\nINFO: a\nWARNING: b\n\n".repeat(10);
        assert!(!build(&log, Kind::Lines).structured);
        // One block of distinct settings (`sysctl -a`) is no list of records.
        let sysctl: String = (0..200).map(|i| format!("net.k{i} = {i}\n")).collect();
        assert!(!build(&sysctl, Kind::Lines).structured);
        // YAML's list items nest.
        let yaml = "- name: a\n  image: x\n  port: 1\n\n".repeat(10);
        assert!(!build(&yaml, Kind::Lines).structured);
        // Prose with a colon here and there.
        let prose = "Note: this is text\nand more text here\nwithout fields\n\n".repeat(10);
        assert!(!build(&prose, Kind::Lines).structured);
    }
}
