//! Tables: whitespace-aligned command output with a header (ps, kubectl get, dpkg -l, systemctl,
//! df), CSV, and `ls -l` listings. Keeps the header, row counts, counts of categorical columns,
//! rows flagged by error words or rare categorical values, top rows of the numeric column the
//! intent asks about ("most CPU", "largest files"), setuid files, and rows matching the intent.

use super::rank::{bm25, tokenize};
use super::signal::{self, Severity};
use super::text::normalise;
use super::{derived, fmt_num, show_line, Ctx, Item, Kind, Reduction, Section, MUST};
use regex::Regex;
use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

mod cells;
pub use cells::{layout, split_row, Layout};

static LS_ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([-dlcbpsD])([rwxsStT-]{9})[.+@]?\s+\d+\s+\S+\s+\S+\s+(\d+)\s+\w{3}\s+\d+\s+[\d:]+\s+(.*)$").unwrap()
});
static HEADER_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Z%#][A-Z0-9%_\-/()#.]*$").unwrap());
/// A column header in title case (`State`, `Recv-Q`, `Address:Port`, `Use%`), or a short
/// lowercase word of a two-word header (`on` of `Mounted on`).
static TITLE_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:[A-Z][A-Za-z0-9%_\-/()#.:]*|[a-z]{1,3})$").unwrap());

/// Rows with error words or rare values listed at most.
/// A `Key: value` line (`Current Owner:  SP B`, `Pool Name:  Pool_cl`): a field of a block of
/// such lines, not a row of a table, however its value is spaced.
static KEY_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*[A-Za-z][\w ()/.%#-]{0,48}:(\s|$)").unwrap());
const MAX_FLAGGED: usize = 30;
/// Rows shown per "top by column" ranking.
const TOP_ROWS: usize = 5;
/// Intent words that ask for a ranking by a numeric column.
const SUPERLATIVES: &[&str] = &[
    "largest", "biggest", "most", "top", "highest", "max", "heaviest", "bigg", "larg", "size",
];

/// True when at least 40% of the lines are `ls -l` rows.
pub fn looks_like_listing(nonblank: &[&str]) -> bool {
    let n = nonblank.len();
    n >= 3 && nonblank.iter().filter(|l| LS_ROW.is_match(l)).count() * 10 >= n * 4
}

/// True when the first line has 2+ commas outside quotes and 80% of the first 50 lines have as
/// many.
pub fn looks_like_csv(nonblank: &[&str]) -> bool {
    // A comma inside a CSV field's quotes separates nothing: lines that are each one quoted
    // string and a comma (a JSON array's items, as `deptry -v` prints its `Location(…, line=73,
    // column=1, …)` strings; trial of session 52) are no table.
    let Some(first) = nonblank.first() else {
        return false;
    };
    let c = unquoted_commas(first);
    // Nor are label sets, `name="value"` pairs the commas list (`{__name__="up",
    // instance="x:9090"} 1 1796675733698` of `promtool tsdb dump`, live set of session 55):
    // the first line is a series, no header.
    let cells = crate::guard::reduce::units::split_csv(first, ',');
    let labels = cells
        .iter()
        .filter(|x| {
            let t = x.trim_start().trim_start_matches(['{', '(']);
            t.split_once("=\"").is_some_and(|(k, _)| {
                !k.is_empty() && k.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
            })
        })
        .count();
    if labels * 2 >= cells.len() {
        return false;
    }
    let sample: Vec<&&str> = nonblank.iter().take(50).collect();
    c >= 2
        && sample.len() >= 3
        && sample.iter().filter(|l| unquoted_commas(l) == c).count() * 10 >= sample.len() * 8
}

/// The commas of `line` that separate CSV cells (not those in a quoted cell).
fn unquoted_commas(line: &str) -> usize {
    crate::guard::reduce::units::split_csv(line, ',').len() - 1
}

/// True for a rule drawn under a header or between rows (`+++-==============-=====`,
/// `----- -----`, `|---|---|`): only `+ - = | :` and spaces, three dashes or equals signs at
/// least. It is no row.
pub fn is_rule(line: &str) -> bool {
    let t = line.trim();
    t.chars()
        .all(|c| matches!(c, '+' | '-' | '|' | '=' | ':' | ' '))
        && t.chars().filter(|c| matches!(c, '-' | '=')).count() >= 3
}

/// A header found in the first lines: its 0-based line index and its columns (char offset, name).
pub fn find_header(lines: &[&str]) -> Option<(usize, Vec<(usize, String)>)> {
    // A line a rule of one dash run per column is drawn under (`id    name    status` over
    // `----  ------  ------`, as `sqlite3 -column` and SQL*Plus print) heads the table,
    // whatever its case and whatever precedes it (a query plan printed first). A banner over
    // one long rule is no header.
    let ruled = (0..lines.len().min(10)).find(|&i| {
        let words = lines[i].split_whitespace().count();
        lines[i].starts_with(|c: char| !c.is_whitespace())
            && !is_rule(lines[i])
            && words >= 2
            && lines.get(i + 1).is_some_and(|n| {
                is_rule(n)
                    && n.split_whitespace().count() == words
                    && n.split_whitespace().all(|g| g.chars().all(|c| c == '-'))
            })
    });
    for (i, l) in lines.iter().enumerate().take(10) {
        if ruled.is_some_and(|r| i < r) {
            continue;
        }
        let (body, shift) = match l.strip_prefix("||/ ") {
            Some(rest) => (rest, 4),
            None => (*l, 0),
        };
        let mut cols = Vec::new();
        let chars: Vec<char> = body.chars().collect();
        let mut j = 0;
        while j < chars.len() {
            if chars[j].is_whitespace() {
                j += 1;
                continue;
            }
            let s = j;
            while j < chars.len() && !chars[j].is_whitespace() {
                j += 1;
            }
            cols.push((s + shift, chars[s..j].iter().collect::<String>()));
        }
        // A header written as a comment (`#           time             counts unit events`
        // of `perf stat -I`): the `#` is its marker, no column, when nothing stands under it
        // (a `#` over row numbers is a column).
        if cols.len() > 3 && cols[0].1 == "#" && cols[0].0 == 0 {
            let under = lines[i + 1..]
                .iter()
                .filter(|r| !r.trim().is_empty())
                .take(30)
                .filter(|r| !r.starts_with(char::is_whitespace))
                .count();
            if under * 10
                < 3 * lines[i + 1..]
                    .iter()
                    .filter(|r| !r.trim().is_empty())
                    .take(30)
                    .count()
            {
                cols.remove(0);
            }
        }
        if cols.len() < 3 {
            continue;
        }
        let upper = cols.iter().filter(|(_, w)| HEADER_WORD.is_match(w)).count();
        // Title-case headers (`Netid State Recv-Q ... Local Address:Port`, `Filesystem Size
        // Used Avail Use% Mounted on`, `Proto Recv-Q Send-Q Local Address`) count when the
        // line is laid out in columns (three or more groups of words between runs of 2+
        // spaces), which prose is not.
        let title = cols.iter().filter(|(_, w)| TITLE_WORD.is_match(w)).count();
        let groups = body.split("  ").filter(|p| !p.trim().is_empty()).count();
        let rows: Vec<&&str> = lines[i + 1..]
            .iter()
            .filter(|r| !r.trim().is_empty())
            .take(30)
            .collect();
        // Any-case headers over rows of numbers (`Device r/s w/s rkB/s %util`, `total used
        // free shared buff/cache`): names laid out in columns, and most rows below mostly
        // numbers.
        // `sar` stamps a header with the time of the block's first sample: it names the
        // time column.
        let named = cols
            .iter()
            .enumerate()
            .filter(|(k, (_, w))| !w.starts_with(is_num_start) || (*k == 0 && clock(w)))
            .count();
        let numeric = rows.iter().filter(|r| numeric_row(r)).count();
        let over_numbers = groups >= 3
            && named * 10 >= cols.len() * 9
            && rows.len() >= 3
            && numeric * 10 >= rows.len() * 7;
        let header = upper * 10 >= cols.len() * 7
            || (groups >= 3 && title * 10 >= cols.len() * 7)
            || over_numbers
            || ruled == Some(i);
        // A title set off by a blank line (`UNIVERSITY OF HOUSTON BROWNIAN DYNAMICS`, then
        // the program's banner) heads no columns: a header's rows follow it at once.
        let titled = lines.get(i + 1).is_some_and(|n| n.trim().is_empty());
        if shift == 0 && (!header || titled) {
            continue;
        }
        // Only a header laid out in columns (a gap of two spaces or more somewhere) has
        // names of two words; in a header written one space apart, each word is a column.
        let cols = if shift == 0 && groups >= 2 {
            merge_names(&rows, cols)
        } else {
            cols
        };
        let fits = rows
            .iter()
            .filter(|r| r.split_whitespace().count() + 1 >= cols.len())
            .count();
        // Blocks of `Key: value` lines under a title (`LOGICAL UNIT NUMBER 203`, then `Name:
        // LUN 203`, `Current Owner:  SP B`) are records, not rows under column names.
        let keyed = rows.iter().filter(|r| KEY_VALUE.is_match(r)).count();
        if rows.len() >= 3 && fits * 10 >= rows.len() * 7 && keyed * 10 < rows.len() * 6 {
            let mut cols = cols;
            if shift > 0 {
                cols.insert(0, (0, "STATUS".to_string()));
            }
            return Some((i, cols));
        }
    }
    None
}

/// True when two or more blocks of `lines` (runs between blank lines) open with a header of
/// their own ([`find_header`] finds one on the block's first line) that names other columns
/// than the header [`find_header`] finds for the whole text: `sar -A` prints a block per
/// activity (`CPU %usr …`, `DEV tps rkB/s wkB/s …`), `iostat -x` an `avg-cpu` line over each
/// interval's `Device` block. Such a text is a series of tables, read block by block by the
/// plain-lines path ([`crate::guard::reduce::units`]'s aligned runs); one header over the
/// whole text named the other blocks' columns wrongly (trial and live set of session 46: a
/// `sar -A` disk row ranked as the CPU block's `%iowait`). The same header written again
/// above each part (`top -b`'s snapshots) is one table. A time stamp heading the first column
/// (`sar`'s `18:50:55`) is not compared.
pub fn several_tables(lines: &[&str]) -> bool {
    let names = |cols: &[(usize, String)]| -> Vec<String> {
        let skip = usize::from(cols.first().is_some_and(|c| clock(&c.1)));
        cols.iter().skip(skip).map(|c| c.1.clone()).collect()
    };
    let Some((_, head)) = find_header(lines) else {
        return false;
    };
    let head = names(&head);
    let mut count = 0;
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim().is_empty() {
            i += 1;
            continue;
        }
        let end = (i..lines.len())
            .find(|&k| lines[k].trim().is_empty())
            .unwrap_or(lines.len());
        if let Some((0, cols)) = find_header(&lines[i..end]) {
            if names(&cols) != head {
                count += 1;
                if count >= 2 {
                    return true;
                }
            }
        }
        i = end;
    }
    false
}

/// Lines from the start of a text that [`several_tables`] is given, by kind detection and by the
/// table's unit builder alike: the same lines decide both, so a text detected as one table is
/// cut into one table's rows.
pub const SERIES_PROBE_LINES: usize = 400;

/// True for a clock time (`18:50:55`, `06:50`).
pub fn clock(g: &str) -> bool {
    let parts: Vec<&str> = g.split(':').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| (1..=2).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Header words one space apart that name one column (`CONTAINER ID`, `Mounted on`,
/// `NOMINATED NODE`, netstat's `Local Address`), merged into one name.
///
/// The second word starts a column of its own when, in at least half of the first 40 `rows`,
/// the character before it is a space and a value shows under it (left- or right-aligned).
/// Otherwise a value runs across the gap (`4c01db0b339c` under `CONTAINER ID`) or nothing
/// stands under the word (`on` past the end of df's rows), and the two words are one name.
fn merge_names(rows: &[&&str], cols: Vec<(usize, String)>) -> Vec<(usize, String)> {
    let probe: Vec<Vec<char>> = rows.iter().take(40).map(|r| r.chars().collect()).collect();
    if probe.is_empty() {
        return cols;
    }
    let mut out: Vec<(usize, String)> = Vec::with_capacity(cols.len());
    for (s, name) in cols {
        if let Some((ps, pname)) = out.last_mut() {
            let end = s + name.chars().count();
            let own = |ch: &Vec<char>| {
                s > 0
                    && s < ch.len()
                    && ch[s - 1].is_whitespace()
                    && ch[s..end.min(ch.len())].iter().any(|c| !c.is_whitespace())
            };
            // A unit in parentheses one space after a name (`best (us)`, `Size (MB)`) is
            // part of it, whatever stands under it (a right-aligned value reaches under it).
            let unit = name.starts_with('(') && name.ends_with(')');
            if *ps + pname.chars().count() + 1 == s
                && (unit || probe.iter().filter(|ch| own(ch)).count() * 2 < probe.len())
            {
                pname.push(' ');
                pname.push_str(&name);
                continue;
            }
        }
        out.push((s, name));
    }
    out
}

/// True for a character a number starts with.
fn is_num_start(c: char) -> bool {
    c.is_ascii_digit() || c == '-' || c == '.'
}

/// True for a row whose words are mostly numbers (`sda  12.00  3.50  0.95`).
fn numeric_row(r: &str) -> bool {
    let words: Vec<&str> = r.split_whitespace().collect();
    let nums = words
        .iter()
        .filter(|w| w.starts_with(is_num_start) && w.bytes().any(|b| b.is_ascii_digit()))
        .count();
    words.len() >= 3 && nums * 2 >= words.len()
}

/// Parses "3.7", "15%", "25181Mi", "5039m", "7:53.61", "2.1G" as a number for ranking.
pub fn num(v: &str) -> Option<f64> {
    let v = v.trim();
    if v.is_empty() {
        return None;
    }
    if let Some((m, s)) = v.split_once(':') {
        return Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?);
    }
    let digits_end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(v.len());
    let n: f64 = v[..digits_end].parse().ok()?;
    let mult = match &v[digits_end..] {
        "" | "%" => 1.0,
        "K" | "k" | "Ki" | "KB" => 1e3,
        "M" | "Mi" | "MB" => 1e6,
        "G" | "Gi" | "GB" => 1e9,
        "T" | "Ti" | "TB" => 1e12,
        "m" => 1e-3,
        _ => return None,
    };
    Some(n * mult)
}

struct Out {
    items: Vec<Item>,
    seq: usize,
}

impl Out {
    fn fact(&mut self, t: String, p: f64) {
        self.seq += 1;
        self.items.push(Item::fact(self.seq, t, p));
    }
}

/// Whether the first line of a CSV, split into `cells`, is a row rather than a header: no
/// header names a column with a number (`pkg/__init__.py,sha256=…,118`, a wheel's RECORD),
/// except years or indices in a row (`country,1990,1991,1992`): two or more integers, each
/// above the one before.
pub fn first_line_is_row(cells: &[&str]) -> bool {
    let nums: Vec<f64> = cells.iter().filter_map(|c| num(c)).collect();
    let counted = nums.len() >= 2
        && nums.iter().all(|n| n.fract() == 0.0)
        && nums.windows(2).all(|w| w[1] > w[0]);
    !nums.is_empty() && !counted
}

/// Reduces a table, CSV or listing; `None` when no table shape is found.
pub fn reduce(text: &str, kind: Kind, ctx: &Ctx<'_>) -> Option<Reduction> {
    let lines: Vec<&str> = text.split('\n').collect();
    if kind == Kind::Listing {
        return Some(listing(&lines, ctx.size(text), ctx));
    }
    let (hidx, cols, csv) = if kind == Kind::Csv {
        let first = lines.iter().position(|l| !l.trim().is_empty())?;
        let cols: Vec<(usize, String)> = crate::guard::reduce::units::split_csv(lines[first], ',')
            .into_iter()
            .map(|c| (0, c))
            .collect();
        (first, cols, true)
    } else {
        let (h, c) = find_header(&lines)?;
        (h, c, false)
    };
    // A CSV whose first line is a row: no header names a column with a number
    // (`pkg/__init__.py,sha256=…,118`, a wheel's RECORD). Its columns are numbered.
    let headerless = csv && {
        let cells: Vec<&str> = cols.iter().map(|(_, c)| c.as_str()).collect();
        first_line_is_row(&cells)
    };
    let cols: Vec<(usize, String)> = if headerless {
        (1..=cols.len())
            .map(|k| (0, format!("column {k}")))
            .collect()
    } else {
        cols
    };
    let body_start = if headerless { hidx } else { hidx + 1 };
    let ncols = cols.len();
    let names: Vec<String> = cols.iter().map(|(_, n)| n.clone()).collect();
    // Left-aligned columns (kubectl, systemctl, dpkg) split by header offsets, right-aligned
    // ones beside values of several words by the names' spans, others by whitespace.
    let body: Vec<usize> = (body_start..lines.len())
        .filter(|&i| !lines[i].trim().is_empty() && !is_rule(lines[i]))
        .collect();
    let layout = (!csv).then(|| layout(&lines, &body, &cols));
    let mut rows: Vec<(usize, Vec<String>)> = Vec::new();
    let mut other: Vec<usize> = Vec::new();
    for &i in &body {
        let l = lines[i];
        let fields = if csv {
            // A quoted cell keeps its commas (`"RIFLE,5.56 MILLIMETER"`): split at every comma,
            // 11 of dev csv_dataset_a2's 1,575 rows had the header's count of cells.
            crate::guard::reduce::units::split_csv(l, ',')
        } else {
            split_row(l, &cols, layout.unwrap_or(Layout::Words))
        };
        // Cut by offsets or spans, a row may leave cells empty (lsof's `TID`); cut by
        // whitespace, it fills every column.
        let plausible = match layout {
            None => fields.len() == ncols,
            Some(Layout::Words) => l.split_whitespace().count() >= ncols,
            Some(_) => fields.iter().filter(|f| !f.is_empty()).count() * 2 >= ncols.max(4),
        };
        if plausible && !l.starts_with("+++-") {
            rows.push((i, fields));
        } else {
            other.push(i);
        }
    }
    let mut o = Out {
        items: Vec::new(),
        seq: 0,
    };
    o.fact(
        format!(
            "kind: {}; {} lines, {} bytes; {} × {} columns",
            kind.name(),
            fmt_num(
                lines
                    .len()
                    .saturating_sub(usize::from(text.ends_with('\n')))
            ),
            fmt_num(ctx.size(text)),
            rows_span(&rows),
            ncols
        ),
        MUST,
    );
    o.items.push(Item {
        section: Section::KeyFacts,
        order: 2,
        line: (!headerless).then_some(hidx + 1),
        text: if headerless {
            format!("no header line (the first line is a row); columns numbered 1 to {ncols}")
        } else {
            format!("header: {}", show_line(lines[hidx].trim()))
        },
        prio: MUST,
    });
    // Lines that are not rows (preamble, footers like "220 loaded units listed.").
    for (k, &i) in other.iter().rev().enumerate() {
        let prio = if k == 0 { MUST / 10.0 } else { 20.0 - k as f64 };
        o.items.push(Item::line(
            Section::Evidence,
            i + 1,
            show_line(lines[i]),
            prio,
        ));
    }
    // Column profiles.
    let mut flagged: Vec<(usize, f64, &str)> = Vec::new();
    // Every row with a rare value, counted; only a few examples of each value are shown.
    let mut rare_rows: std::collections::HashSet<usize> = Default::default();
    let mut numeric: Vec<usize> = Vec::new();
    #[allow(clippy::needless_range_loop)] // `c` indexes both the header and each row's fields
    for c in 0..ncols {
        let vals: Vec<&str> = rows
            .iter()
            .map(|(_, f)| f.get(c).map_or("", |s| s.as_str()))
            .collect();
        let nums = vals.iter().filter(|v| num(v).is_some()).count();
        // A whitespace table's last column is free text (`COMMAND`); a CSV's is a field.
        if nums * 10 >= vals.len().max(1) * 9 && (c + 1 < ncols || csv) {
            numeric.push(c);
            continue;
        }
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for v in &vals {
            *counts.entry(v).or_default() += 1;
        }
        if counts.len() <= 8 && !counts.is_empty() && rows.len() >= 4 && counts.len() < rows.len() {
            let mut cs: Vec<(&str, usize)> = counts.iter().map(|(k, v)| (*k, *v)).collect();
            cs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let top = cs[0].1;
            if top * 10 >= rows.len() * 7 {
                // A few examples of each rare value; error words are flagged separately.
                let mut shown: HashMap<&str, usize> = HashMap::new();
                for (ri, (_, f)) in rows.iter().enumerate() {
                    let v = f.get(c).map_or("", |s| s.as_str());
                    let seen = shown.entry(v).or_default();
                    *seen += 1;
                    if counts[v] * 10 <= rows.len() {
                        rare_rows.insert(ri);
                        if *seen <= 3 {
                            flagged.push((ri, 45.0, "rare value"));
                        }
                    }
                }
            }
        }
    }
    // Error words count only in low-cardinality columns (STATUS, LOAD), not in names or
    // descriptions ("command-not-found" is a package name).
    let categorical: Vec<usize> = (0..ncols.saturating_sub(1))
        .filter(|&c| {
            let distinct: std::collections::HashSet<&str> = rows
                .iter()
                .map(|(_, f)| f.get(c).map_or("", |s| s.as_str()))
                .collect();
            distinct.len() * 2 <= rows.len().max(1)
        })
        .collect();
    for (ri, (_, f)) in rows.iter().enumerate() {
        if categorical.iter().any(|&c| {
            f.get(c)
                .is_some_and(|v| signal::severity(v) == Severity::Error)
        }) {
            flagged.push((ri, 100.0, "error word"));
            rare_rows.insert(ri);
        }
    }
    flagged.sort_by_key(|(ri, _, _)| *ri);
    flagged.dedup_by_key(|(ri, _, _)| *ri);
    let n_flagged = rare_rows.len();
    if !flagged.is_empty() {
        o.fact(
            format!(
                "flagged rows (error words or rare values): {}",
                derived(n_flagged, rows.len(), "the rows")
            ),
            MUST,
        );
    }
    for (k, (ri, p, _)) in flagged.iter().take(MAX_FLAGGED).enumerate() {
        let i = rows[*ri].0;
        o.items.push(Item::line(
            Section::Errors,
            i + 1,
            show_line(lines[i]),
            p - k as f64 * 0.1,
        ));
    }
    // Top rows by the numeric columns the intent names.
    let qwords: Vec<&String> = ctx.query.terms.keys().collect();
    let superlative = SUPERLATIVES.iter().any(|s| ctx.query.has(s));
    let mut ranked_cols: Vec<usize> = numeric
        .iter()
        .copied()
        .filter(|&c| tokenize(&names[c]).iter().any(|t| ctx.query.has(t)))
        .collect();
    if ranked_cols.is_empty() && superlative {
        ranked_cols = numeric
            .iter()
            .copied()
            .max_by(|&a, &b| {
                let m = |c: usize| {
                    rows.iter()
                        .filter_map(|(_, f)| f.get(c).and_then(|v| num(v)))
                        .fold(0.0, f64::max)
                };
                m(a).total_cmp(&m(b))
            })
            .into_iter()
            .collect();
    }
    for &c in &ranked_cols {
        // A totals row (`size -t`'s `(TOTALS)`) sums the rows: it is no top row.
        let mut idx: Vec<usize> = (0..rows.len())
            .filter(|&r| !crate::guard::reduce::signals::totals_row(lines[rows[r].0]))
            .collect();
        idx.sort_by(|&a, &b| {
            let va = rows[a].1.get(c).and_then(|v| num(v)).unwrap_or(f64::MIN);
            let vb = rows[b].1.get(c).and_then(|v| num(v)).unwrap_or(f64::MIN);
            vb.total_cmp(&va)
        });
        let top: Vec<String> = idx
            .iter()
            .take(TOP_ROWS)
            .map(|&r| format!("L{}", rows[r].0 + 1))
            .collect();
        o.fact(
            format!("top rows by {}: {}", names[c], top.join(", ")),
            MUST / 100.0,
        );
        for (k, &r) in idx.iter().take(TOP_ROWS).enumerate() {
            let i = rows[r].0;
            o.items.push(Item::line(
                Section::Evidence,
                i + 1,
                show_line(lines[i]),
                85.0 - k as f64,
            ));
        }
    }
    let _ = qwords;
    // Rows matching the intent.
    let docs: Vec<&str> = rows.iter().map(|(i, _)| lines[*i]).collect();
    let scores = normalise(&bm25(ctx.query, &docs));
    for (ri, (i, _)) in rows.iter().enumerate() {
        let head = if ri < 3 { 8.0 } else { 0.0 };
        o.items.push(Item::line(
            Section::Evidence,
            i + 1,
            show_line(lines[*i]),
            2.0 + head
                + if scores[ri] >= 0.3 {
                    110.0 * scores[ri]
                } else {
                    60.0 * scores[ri]
                },
        ));
    }
    let status = format!(
        "Table of {} ({}){}.",
        rows_span(&rows),
        names.join(", "),
        if flagged.is_empty() {
            String::new()
        } else {
            format!(
                "; flagged by error words or rare values: {} rows",
                derived(n_flagged, rows.len(), "the rows")
            )
        }
    );
    let first_flag = flagged.first().map(|(ri, _, _)| rows[*ri].0 + 1);
    let next_action = match first_flag {
        Some(l) => format!("Read L{l} and the other flagged rows of the saved file; filter it with grep or awk on the column you need."),
        None => "Filter the saved file with grep or awk on the column you need.".to_string(),
    };
    Some(Reduction {
        kind,
        items: o.items,
        status,
        failed: None,
        next_action,
    })
}

/// How many rows a table has, as the summary states it: the count when under 100, otherwise
/// the line span they occupy ("rows L6–L677"), a location in the saved file rather than a
/// derived figure (see [`derived`]).
fn rows_span(rows: &[(usize, Vec<String>)]) -> String {
    match (rows.first(), rows.last()) {
        (Some(a), Some(b)) if rows.len() >= 100 => format!("rows L{}–L{}", a.0 + 1, b.0 + 1),
        _ => format!("{} rows", rows.len()),
    }
}

/// The file name of an `ls -l` row: its last field (a symlink's target left out).
fn entry_name(line: &str) -> &str {
    let l = line.split(" -> ").next().unwrap_or(line);
    l.split_whitespace().last().unwrap_or("")
}

fn listing(lines: &[&str], bytes: usize, ctx: &Ctx<'_>) -> Reduction {
    let mut o = Out {
        items: Vec::new(),
        seq: 0,
    };
    let mut dir = String::new();
    let mut rows: Vec<(usize, String, char, String, u64)> = Vec::new(); // line idx, dir, type, perms, size
    let mut dirs = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.ends_with(':') && !l.contains(' ') {
            dir = l.trim_end_matches(':').to_string();
            dirs += 1;
            continue;
        }
        if let Some(c) = LS_ROW.captures(l) {
            let t = c[1].chars().next().unwrap_or('-');
            let size = c[3].parse().unwrap_or(0);
            rows.push((i, dir.clone(), t, c[2].to_string(), size));
        }
    }
    let files = rows.iter().filter(|r| r.2 == '-').count();
    let links = rows.iter().filter(|r| r.2 == 'l').count();
    let subdirs = rows.iter().filter(|r| r.2 == 'd').count();
    o.fact(
        format!(
            "kind: ls_listing; {} lines, {} bytes; directories listed: {}",
            fmt_num(lines.len() - usize::from(lines.last() == Some(&""))),
            fmt_num(bytes),
            super::count(dirs)
        ),
        MUST,
    );
    let n = rows.len();
    o.fact(
        format!(
            "entries: {} files, {} directories, {} symlinks",
            derived(files, n, "the entries"),
            derived(subdirs, n, "the entries"),
            derived(links, n, "the entries"),
        ),
        MUST,
    );
    let with_dir = |r: &(usize, String, char, String, u64)| {
        if r.1.is_empty() {
            show_line(lines[r.0])
        } else {
            format!("({}) {}", r.1, show_line(lines[r.0]))
        }
    };
    let special: Vec<&(usize, String, char, String, u64)> = rows
        .iter()
        .filter(|r| {
            let p: Vec<char> = r.3.chars().collect();
            r.2 == '-' && (matches!(p[2], 's' | 'S') || matches!(p[5], 's' | 'S'))
        })
        .collect();
    // Their names in one line, so that all are shown even when their rows do not fit.
    let names: Vec<&str> = special
        .iter()
        .take(MAX_FLAGGED)
        .map(|r| entry_name(lines[r.0]))
        .collect();
    o.fact(
        format!(
            "setuid/setgid files: {}{}{}",
            derived(special.len(), 0, ""),
            if names.is_empty() { "" } else { ": " },
            names.join(", ")
        ),
        MUST,
    );
    for (k, r) in special.iter().take(MAX_FLAGGED).enumerate() {
        // Setuid (runs as its owner, often root) before setgid-only rows.
        let setuid = matches!(r.3.chars().nth(2), Some('s' | 'S'));
        o.items.push(Item::line(
            Section::Evidence,
            r.0 + 1,
            with_dir(r),
            if setuid { 95.0 } else { 90.0 } - k as f64 * 0.1,
        ));
    }
    let mut by_size: Vec<&(usize, String, char, String, u64)> =
        rows.iter().filter(|r| r.2 == '-').collect();
    by_size.sort_by_key(|r| std::cmp::Reverse(r.4));
    let asked = SUPERLATIVES.iter().any(|s| ctx.query.has(s));
    for (k, r) in by_size.iter().take(TOP_ROWS).enumerate() {
        // Asked for ("largest"): before the setuid rows, whose names are in the Key facts.
        let p = if asked { 96.0 } else { 50.0 };
        o.items.push(Item::line(
            Section::Evidence,
            r.0 + 1,
            with_dir(r),
            p - k as f64,
        ));
    }
    let docs: Vec<&str> = rows.iter().map(|r| lines[r.0]).collect();
    let scores = normalise(&bm25(ctx.query, &docs));
    for (ri, r) in rows.iter().enumerate() {
        if scores[ri] > 0.0 {
            o.items.push(Item::line(
                Section::Evidence,
                r.0 + 1,
                with_dir(r),
                5.0 + 60.0 * scores[ri],
            ));
        }
    }
    let mut perms: BTreeMap<String, usize> = BTreeMap::new();
    for r in &rows {
        *perms.entry(format!("{}{}", r.2, r.3)).or_default() += 1;
    }
    Reduction {
        kind: Kind::Listing,
        items: o.items,
        // Sizes as the listing writes them (no separators), so they can be searched for.
        status: format!(
            "Listing of {} directories; setuid/setgid files: {}{}.",
            super::count(dirs.max(1)),
            derived(special.len(), 0, ""),
            by_size.first().map_or(String::new(), |r| format!(
                "; largest file: {} ({} bytes, L{})",
                entry_name(lines[r.0]),
                r.4,
                r.0 + 1
            ))
        ),
        failed: None,
        next_action: "Search the saved file with grep for the names you need.".to_string(),
    }
}

#[cfg(test)]
mod tests;
