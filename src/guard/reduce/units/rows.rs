//! Row unit builders: CSV / TSV with a header, whitespace-aligned tables, and the tables found
//! inside plain text (runs of `|`-bordered or tab-separated lines).

use super::{keep_line, Builder, UnitKind, MAX_UNITS};
use crate::guard::reduce::{signals, table};

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
    if t.matches('|').count() >= 3 && !inside_brackets(t, '|') {
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

/// True when a delimiter `d` of `t` stands inside parentheses or brackets: an or of flags or
/// a call's arguments (`openat(AT_FDCWD, "/etc/x", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = -1
/// ENOENT`, strace), not a cell border. Text inside double quotes is a cell's, not counted
/// (`a,"[1, 2]",b` is three cells).
fn inside_brackets(t: &str, d: char) -> bool {
    let (mut depth, mut quoted) = (0i32, false);
    for c in t.chars() {
        match c {
            '"' => quoted = !quoted,
            _ if quoted => {}
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            c if c == d && depth > 0 => return true,
            _ => {}
        }
    }
    false
}

/// Lines above a table's first row searched for a comment naming its columns.
const FIELDS_LOOKBACK: usize = 8;

/// The column names a comment line declares for the rows below it, when there are `n`:
/// `#fields<TAB>ts<TAB>uid` (Zeek), `#Fields: date time c-ip` (W3C extended logs), `# Fields:
/// query id, subject id, evalue` (BLAST tabular). Tab-separated names first, then comma-
/// separated, then one name per word.
pub(super) fn fields_line(line: &str, n: usize) -> Option<Vec<String>> {
    let t = line.trim_start().strip_prefix('#')?.trim_start();
    let word = t.get(..6).filter(|w| w.eq_ignore_ascii_case("fields"))?;
    let body = &t[word.len()..];
    // `#fields`, `# Fields:`, not `# fieldset ...`.
    if !(body.is_empty() || body.starts_with([':', ' ', '\t'])) {
        return None;
    }
    let body = body.trim_start_matches(':');
    let split = |sep: &str| -> Vec<String> {
        body.split(sep)
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect()
    };
    [
        split("\t"),
        split(","),
        body.split_whitespace().map(String::from).collect(),
    ]
    .into_iter()
    .find(|names| names.len() == n)
}

/// Gives the line units of each table found inside a text (runs of lines split alike) the
/// fields named by the run's first line, so signals see its columns.
pub(super) fn table_runs(b: &mut Builder) {
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
            let numeric_head = head.iter().filter(|c| signals::number(c).is_some()).count();
            let declared = (i.saturating_sub(FIELDS_LOOKBACK)..i)
                .rev()
                .find_map(|k| fields_line(&b.units[k].text, head.len()));
            let names: Vec<String> = if let Some(names) = declared {
                // The columns are named by a comment above: the run's first line is a row.
                rows.insert(0, (i, head.clone()));
                names
            } else if numeric_head * 2 < head.len() {
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

/// Most lines a header of a whitespace-aligned table inside text is looked for above its rows
/// ([`table::find_header`] is given this many lines from a candidate header on).
const ALIGNED_PROBE: usize = 32;

/// Most candidate headers tested per text ([`aligned_runs`]): a text of wide-spaced prose
/// stays linear.
const MAX_ALIGNED_TRIES: usize = 2_000;

/// A line that may head a whitespace-aligned table inside a text: three or more groups of
/// words between runs of two or more spaces, none of them a number (cheap; the real test is
/// [`table::find_header`]).
fn may_head(line: &str) -> bool {
    let groups: Vec<&str> = line
        .split("  ")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    // `sar` stamps its header with the time of the block's first sample (`18:50:55  DEV
    // tps  rkB/s …`, `06:50:55 PM  CPU …`): the stamp heads the time column.
    let groups = match groups.split_first() {
        Some((first, rest)) if clock(first) => rest,
        _ => &groups[..],
    };
    groups.len() >= 3
        && groups
            .iter()
            .all(|g| signals::number(g).is_none() && g.chars().any(char::is_alphabetic))
}

/// True for a clock time, `18:50:55` or `06:50:55 PM` (a 12-hour clock's mark may be joined
/// to the next group by one space).
fn clock(g: &str) -> bool {
    table::clock(g.split(' ').next().unwrap_or(g))
}

/// Gives the line units of each whitespace-aligned table inside a text (a header laid out in
/// columns, then rows under it: a search report's hit list, a profiler's top table, a test
/// runner's coverage table) the fields named by the header's columns, so signals rank the rows
/// by their columns (the largest `score`) as they rank a table that is the whole output. A
/// column name the header repeats gets its place (`score (2)`). The rows run to the first
/// blank line or line that does not fit the columns; rules (`------`) between are skipped.
pub(super) fn aligned_runs(b: &mut Builder, all: &[&str]) {
    let mut at: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for (k, u) in b.units.iter().enumerate() {
        if u.kind == UnitKind::Line && u.fields.is_empty() {
            at.insert(u.line, k);
        }
    }
    let (mut i, mut tries) = (0, 0);
    while i < all.len() && tries < MAX_ALIGNED_TRIES {
        if !at.contains_key(&(i + 1)) || !may_head(all[i]) {
            i += 1;
            continue;
        }
        tries += 1;
        // The header is judged by the rows of its own block (up to a blank line), not by
        // what follows the table.
        let end = (i + 1..(i + ALIGNED_PROBE).min(all.len()))
            .find(|&k| all[k].trim().is_empty())
            .unwrap_or((i + ALIGNED_PROBE).min(all.len()));
        let Some((0, cols)) = table::find_header(&all[i..end]) else {
            i += 1;
            continue;
        };
        let mut body = Vec::new();
        let mut j = i + 1;
        while j < all.len() {
            let l = all[j].trim_end_matches('\r');
            let t = l.trim();
            if t.is_empty() {
                break;
            }
            if !t.chars().all(|c| matches!(c, '-' | '=' | '+' | ' ')) {
                if l.split_whitespace().count() + 1 < cols.len() || !at.contains_key(&(j + 1)) {
                    break;
                }
                body.push(j);
            }
            j += 1;
        }
        if body.len() + 1 >= MIN_RUN {
            let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
            let names: Vec<String> = cols
                .iter()
                .map(|(_, n)| {
                    let k = seen.entry(n.as_str()).or_default();
                    *k += 1;
                    if *k == 1 {
                        n.clone()
                    } else {
                        format!("{n} ({k})")
                    }
                })
                .collect();
            let ids: Vec<usize> = names.iter().map(|n| b.field(n)).collect();
            let layout = table::layout(all, &body, &cols);
            for r in body {
                let cells = table::split_row(all[r].trim_end_matches('\r'), &cols, layout);
                let u = at[&(r + 1)];
                b.units[u].fields = ids
                    .iter()
                    .copied()
                    .zip(cells)
                    .filter(|(_, c)| !c.is_empty())
                    .collect();
            }
        }
        i = j.max(i + 1);
    }
}

/// The delimiter of a CSV-like text: the one of `,`, `;`, tab, `|` that splits the first lines
/// into the same number of fields, most fields first.
fn delimiter(lines: &[&str]) -> Option<char> {
    let mut best: Option<(char, usize)> = None;
    for d in [',', '\t', ';', '|'] {
        // Bars and commas inside a call's parentheses split no cells (strace's lines).
        if d != '\t' && lines.first().is_some_and(|l| inside_brackets(l, d)) {
            continue;
        }
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

/// Splits one CSV line on `d`, honouring double quotes as RFC 4180 does: a quote opens a
/// quoted field only at the field's start, so a quote inside an unquoted field (free text of
/// a `|`-separated export: `... COOLING "On January 5, ...`) is text, not a quote.
pub(crate) fn split_csv(line: &str, d: char) -> Vec<String> {
    split_raw(line, d)
        .into_iter()
        .map(|s| s.trim().trim_matches('"').to_string())
        .collect()
}

/// The cells of one CSV line as the file writes them (quotes and spaces kept), split as
/// [`split_csv`] splits them.
fn split_raw(line: &str, d: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut q = false;
    for (i, c) in line.char_indices() {
        let cur = &line[start..i];
        if c == '"' && (q || cur.trim().is_empty() || cur.ends_with('"')) {
            q = !q;
        } else if c == d && !q {
            out.push(cur);
            start = i + c.len_utf8();
        }
    }
    out.push(&line[start..]);
    out
}

/// `d` as a `&'static str` (the separator a row's cells are shown with).
fn delim_str(d: char) -> &'static str {
    match d {
        ',' => ",",
        ';' => ";",
        '\t' => "\t",
        _ => "|",
    }
}

/// CSV / TSV with a header row: each row a record with its columns as fields.
pub(super) fn csv(b: &mut Builder, text: &str) -> bool {
    let all: Vec<&str> = text.split('\n').collect();
    let nonblank: Vec<&str> = all
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    if nonblank.len() < 3 {
        return false;
    }
    // Columns declared by a leading comment (`# Fields: query id, evalue, ...` of BLAST,
    // `#fields` of Zeek, `#Fields:` of W3C logs): the comments are lines, every other line
    // a row.
    let comment = |l: &str| l.trim_start().starts_with('#');
    let data: Vec<&str> = nonblank.iter().copied().filter(|l| !comment(l)).collect();
    let declared = if comment(nonblank[0]) && data.len() >= 3 {
        delimiter(&data).and_then(|d| {
            let n = split_csv(data[0], d).len();
            nonblank
                .iter()
                .take_while(|l| comment(l))
                .find_map(|l| fields_line(l, n))
                .map(|names| (d, names))
        })
    } else {
        None
    };
    let Some(d) = declared
        .as_ref()
        .map(|x| x.0)
        .or_else(|| delimiter(&nonblank))
    else {
        return false;
    };
    let mut header: Option<Vec<usize>> = declared
        .as_ref()
        .map(|(_, names)| names.iter().map(|n| b.field(n)).collect());
    for (i, raw) in all.iter().enumerate() {
        if b.units.len() >= MAX_UNITS {
            break;
        }
        let l = raw.trim_end_matches('\r');
        if l.trim().is_empty() {
            continue;
        }
        if declared.is_some() && comment(l) {
            b.line(i + 1, l);
            continue;
        }
        let cells = split_csv(l, d);
        // No header names a column with a number: a first line holding one is a row
        // (`pkg/__init__.py,sha256=…,118`, a wheel's RECORD), and the columns are numbered.
        if header.is_none()
            && table::first_line_is_row(&cells.iter().map(String::as_str).collect::<Vec<_>>())
        {
            header = Some(
                (1..=cells.len())
                    .map(|k| b.field(&format!("column {k}")))
                    .collect(),
            );
        }
        match &header {
            None => {
                header = Some(cells.iter().map(|c| b.field(c)).collect());
                b.push(i + 1, keep_line(l), UnitKind::Line, String::new());
            }
            Some(h) => {
                let h = h.clone();
                let u = b.push(i + 1, keep_line(l), UnitKind::Record, String::new());
                let fields: Vec<(usize, String)> = h.into_iter().zip(cells).collect();
                // The cells as the file writes them, so a row shown in part quotes them
                // verbatim, adjacent ones joined by the delimiter (`46668|DIABLO CANYON`).
                let mut raw: Vec<String> = split_raw(l, d).into_iter().map(String::from).collect();
                if raw.len() >= fields.len() {
                    raw.truncate(fields.len());
                    b.set_record(u, fields, raw, delim_str(d));
                } else {
                    b.units[u].fields = fields;
                }
            }
        }
    }
    header.is_some() && b.units.len() >= 3
}

/// Fewest body rows for a column to be known numeric (see [`table`]).
const MIN_TYPED_ROWS: usize = 20;

/// A whitespace-aligned table with a header (ps, kubectl get, df, dpkg -l): rows with columns.
/// A line with words in two columns that hold numbers in 9 rows of 10, or the header written
/// again, is a line, not a row.
pub(super) fn table(b: &mut Builder, text: &str) -> bool {
    let all: Vec<&str> = text.split('\n').collect();
    let Some((hdr, cols)) = table::find_header(&all) else {
        return false;
    };
    // A series of tables, each under its own header, is read block by block as lines; judged
    // on the lines kind detection reads, so the kind and its units agree.
    if table::several_tables(&all[..all.len().min(table::SERIES_PROBE_LINES)]) {
        return false;
    }
    let ids: Vec<usize> = cols.iter().map(|(_, n)| b.field(n)).collect();
    let body: Vec<usize> = (hdr + 1..all.len())
        .filter(|&i| !all[i].trim().is_empty())
        .collect();
    let layout = table::layout(&all, &body, &cols);
    // Columns whose cells are numbers in nearly every row (`PID`, `%CPU`): a line with words
    // in two of them is no row of the table but a line between its parts (`top -b`'s `MiB
    // Swap: 0.0 total, ...` above each snapshot's rows), which must not rank as a `%CPU`.
    let numeric_cell = |c: &str| {
        let c = c
            .trim()
            .trim_end_matches(['%', 'm', 'g', 'k', 'M', 'G', 'K']);
        !c.is_empty()
            && c.replace([':', '.', '-', '+', ','], "")
                .bytes()
                .all(|b| b.is_ascii_digit())
    };
    // Each body line's cells, split once: counted here, kept as its fields below.
    let mut split: Vec<Option<Vec<String>>> = vec![None; all.len()];
    let mut numeric = vec![0usize; cols.len()];
    for &i in &body {
        let cells = table::split_row(all[i].trim_end_matches('\r'), &cols, layout);
        for (k, c) in cells.iter().enumerate().take(cols.len()) {
            numeric[k] += usize::from(numeric_cell(c));
        }
        split[i] = Some(cells);
    }
    let numeric: Vec<bool> = numeric
        .iter()
        .map(|&n| body.len() >= MIN_TYPED_ROWS && n * 10 >= body.len() * 9)
        .collect();
    let header = all[hdr].trim();
    for (i, raw) in all.iter().enumerate() {
        if b.units.len() >= MAX_UNITS {
            break;
        }
        let l = raw.trim_end_matches('\r');
        if l.trim().is_empty() {
            continue;
        }
        // The header (again, above each part) and a rule under it (dpkg's `+++-====-===`)
        // are no rows.
        if i <= hdr || table::is_rule(l) || l.trim() == header {
            b.push(i + 1, keep_line(l), UnitKind::Line, String::new());
            continue;
        }
        let cells = split[i]
            .take()
            .unwrap_or_else(|| table::split_row(l, &cols, layout));
        let misfit = cells
            .iter()
            .zip(&numeric)
            .filter(|(c, &n)| n && !numeric_cell(c))
            .count();
        if misfit >= 2 {
            b.push(i + 1, keep_line(l), UnitKind::Line, String::new());
            continue;
        }
        let u = b.push(i + 1, keep_line(l), UnitKind::Record, String::new());
        b.units[u].fields = ids.iter().copied().zip(cells).collect();
    }
    true
}

#[cfg(test)]
mod tests;
