//! SQL dumps and scripts: header comments, the object list (CREATE TABLE/TYPE/DOMAIN/VIEW/...
//! with their first line verbatim, tables with their columns), partitioning clauses, and
//! INSERT/COPY row counts per table.

use super::rank::bm25;
use super::text::normalise;
use super::{
    derived, fmt_num, show_line, show_line_max, Ctx, Item, Kind, Reduction, Section, MUST,
};
use regex::Regex;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::LazyLock;

static CREATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^CREATE\s+(?:OR\s+REPLACE\s+)?(?:UNLOGGED\s+|TEMP(?:ORARY)?\s+)?(TABLE|TYPE|DOMAIN|VIEW|MATERIALIZED\s+VIEW|FUNCTION|PROCEDURE|SEQUENCE|UNIQUE\s+INDEX|INDEX|TRIGGER|SCHEMA|EXTENSION|AGGREGATE|RULE|POLICY)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:ON\s+\S+\s+)?([^\s(]+)").unwrap()
});
static INSERT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^\s*(?:INSERT\s+INTO|COPY)\s+([^\s(]+)").unwrap());
static ATTACH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)ALTER\s+TABLE\s+(?:ONLY\s+)?(\S+)\s+ATTACH\s+PARTITION\s+(\S+)").unwrap()
});
static PARTITION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bPARTITION\s+(BY|OF)\b|\bATTACH\s+PARTITION\b").unwrap());

/// True when at least 5 statements start lines and a CREATE TABLE / INSERT INTO is among them.
pub fn looks_like_sql(nonblank: &[&str]) -> bool {
    let stmts = nonblank
        .iter()
        .filter(|l| {
            CREATE.is_match(l)
                || INSERT.is_match(l)
                || l.starts_with("ALTER ")
                || l.starts_with("SET ")
        })
        .count();
    stmts >= 5
        && nonblank.iter().any(|l| {
            let u = l.to_ascii_uppercase();
            u.starts_with("CREATE TABLE") || u.starts_with("INSERT INTO") || u.starts_with("COPY ")
        })
}

/// Constraint words a column list's entry may start with instead of a column name.
const CONSTRAINTS: &[&str] = &[
    "CONSTRAINT",
    "PRIMARY",
    "FOREIGN",
    "UNIQUE",
    "CHECK",
    "EXCLUDE",
];

/// The column names of the CREATE TABLE statement that starts `stmt`'s first line: the first
/// word of each entry between the parentheses after the table name, split at the commas
/// outside nested parentheses, whether the statement is on one line (SQLite's `.dump`) or one
/// column per line (pg_dump). Constraint entries are skipped; reading stops at the closing
/// parenthesis or the statement's `;`. Empty when no parenthesis opens the list (`CREATE
/// TABLE t AS SELECT …`, `PARTITION OF`).
fn table_columns(stmt: &[&str]) -> Vec<String> {
    let mut cols = Vec::new();
    let mut depth = 0usize;
    let mut entry = String::new();
    let mut push = |entry: &mut String| {
        if let Some(w) = entry.split_whitespace().next() {
            let w = w.trim_matches(['"', '`', '[', ']']);
            if !w.is_empty()
                && !w.starts_with('\'')
                && !CONSTRAINTS.contains(&w.to_ascii_uppercase().as_str())
            {
                cols.push(w.to_string());
            }
        }
        entry.clear();
    };
    // A child table or a query's result has no column list of its own.
    let head = stmt.first().map_or(String::new(), |l| {
        l.split('(').next().unwrap_or("").to_ascii_uppercase()
    });
    if head.contains(" PARTITION OF ") || head.contains(" AS ") {
        return cols;
    }
    for (k, line) in stmt.iter().enumerate() {
        let mut in_quote = false;
        for c in line.chars() {
            match c {
                '\'' => {
                    in_quote = !in_quote;
                    if depth > 0 {
                        entry.push(c);
                    }
                }
                _ if in_quote => entry.push(c),
                '(' => {
                    depth += 1;
                    if depth > 1 {
                        entry.push(c);
                    }
                }
                ')' if depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        push(&mut entry);
                        return cols;
                    }
                    entry.push(c);
                }
                ',' if depth == 1 => push(&mut entry),
                ';' if depth == 0 => return cols,
                _ if depth > 0 => entry.push(c),
                _ => {}
            }
        }
        if k == 0 && depth == 0 && line.trim_end().ends_with(';') {
            return cols;
        }
        entry.push(' ');
    }
    cols
}

/// Reduces an SQL dump.
pub fn reduce(text: &str, ctx: &Ctx<'_>) -> Reduction {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut items = Vec::new();
    let mut seq = 0;
    let mut fact = |items: &mut Vec<Item>, t: String, p: f64| {
        seq += 1;
        items.push(Item::fact(seq, t, p));
    };
    let mut by_type: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    let mut rows: BTreeMap<String, usize> = BTreeMap::new();
    let mut tables: Vec<(usize, String, Vec<String>)> = Vec::new();
    let mut in_copy: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(t) = &in_copy {
            if l.trim() == "\\." {
                in_copy = None;
            } else {
                *rows.entry(t.clone()).or_default() += 1;
            }
            i += 1;
            continue;
        }
        if let Some(c) = CREATE.captures(l) {
            let ty = c[1]
                .to_ascii_uppercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let name = c[2].to_string();
            by_type
                .entry(ty.clone())
                .or_default()
                .push((i, name.clone()));
            if ty == "TABLE" {
                let cols = table_columns(&lines[i..lines.len().min(i + 200)]);
                tables.push((i, name, cols));
            }
        } else if let Some(c) = INSERT.captures(l) {
            let t = c[1].to_string();
            if l.trim_start().to_ascii_uppercase().starts_with("COPY") && l.contains("FROM stdin") {
                in_copy = Some(t);
            } else {
                *rows.entry(t).or_default() += 1;
            }
        }
        i += 1;
    }
    fact(
        &mut items,
        format!(
            "kind: sql; {} lines, {} bytes",
            fmt_num(lines.len() - usize::from(text.ends_with('\n'))),
            fmt_num(ctx.size(text))
        ),
        MUST,
    );
    let counts: Vec<String> = by_type
        .iter()
        .map(|(t, v)| format!("{t} {}", derived(v.len(), 0, "")))
        .collect();
    fact(
        &mut items,
        format!("objects created: {}", counts.join(", ")),
        MUST,
    );
    for (k, l) in lines.iter().enumerate().take(40) {
        let t = l.trim();
        if t.starts_with("--")
            && (t.contains("Dumped") || t.contains("version") || t.contains("Database"))
        {
            items.push(Item {
                section: Section::KeyFacts,
                order: 10 + k,
                line: Some(k + 1),
                text: show_line(t),
                prio: MUST / 10.0,
            });
        }
    }
    if !rows.is_empty() {
        let rs: Vec<String> = rows
            .iter()
            .map(|(t, n)| format!("{t} {}", super::count(*n)))
            .collect();
        fact(
            &mut items,
            format!(
                "data rows (INSERT/COPY) per table: {}",
                show_line_max(&rs.join(", "), 600)
            ),
            MUST / 10.0,
        );
    }
    for (ty, objs) in &by_type {
        if matches!(ty.as_str(), "TABLE" | "TYPE" | "DOMAIN") {
            continue;
        }
        let names: Vec<&str> = objs.iter().map(|(_, n)| n.as_str()).collect();
        fact(
            &mut items,
            show_line_max(&format!("{ty} names: {}", names.join(", ")), 400),
            30.0,
        );
    }
    // Statements ranked by the intent.
    let docs: Vec<String> = tables
        .iter()
        .map(|(_, n, c)| format!("{n} {}", c.join(" ")))
        .collect();
    let scores = normalise(&bm25(ctx.query, &docs));
    // Partitions of one parent are one definition repeated: its first partition is shown
    // like any table, the rest after every other object (they are listed in a fact).
    let children: HashMap<String, String> = lines
        .iter()
        .filter_map(|l| ATTACH.captures(l))
        .map(|c| (c[2].to_string(), c[1].to_string()))
        .collect();
    let mut parents_shown: HashSet<&str> = HashSet::new();
    for (k, (i, name, cols)) in tables.iter().enumerate() {
        // Columns only for the tables the intent is about; the others by their CREATE line.
        let text = if scores[k] >= 0.5 {
            format!(
                "[columns: {}] {}",
                show_line_max(&cols.join(", "), 160),
                show_line(lines[*i].trim_end())
            )
        } else {
            show_line(lines[*i].trim_end())
        };
        let mut prio = 60.0 + 30.0 * scores[k] - k as f64 * 0.01;
        if let Some(parent) = children.get(name) {
            if !parents_shown.insert(parent.as_str()) {
                prio = 20.0 - k as f64 * 0.01;
            }
        }
        items.push(Item::line(Section::Evidence, i + 1, text, prio));
    }
    for ty in ["TYPE", "DOMAIN"] {
        for (k, (i, _)) in by_type.get(ty).into_iter().flatten().enumerate() {
            let prio = 75.0 - k as f64 * 0.1;
            items.push(Item::line(
                Section::Evidence,
                i + 1,
                show_line(lines[*i]),
                prio,
            ));
        }
    }
    // Partitioning: PARTITION BY lines verbatim, ATTACH PARTITION grouped per parent table.
    let mut attached: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim_start().starts_with("--") || !PARTITION.is_match(l) {
            continue;
        }
        if let Some(c) = ATTACH.captures(l) {
            attached
                .entry(c[1].to_string())
                .or_default()
                .push((i, c[2].to_string()));
        } else {
            items.push(Item::line(Section::Evidence, i + 1, show_line(l), 80.0));
        }
    }
    for (parent, parts) in &attached {
        let names: Vec<&str> = parts.iter().map(|(_, n)| n.as_str()).collect();
        let text = format!(
            "{} partitions attached to {parent}: {}",
            names.len(),
            names.join(", ")
        );
        items.push(Item {
            section: Section::KeyFacts,
            order: 50,
            line: Some(parts[0].0 + 1),
            text: show_line_max(&text, 400),
            prio: MUST / 100.0,
        });
    }
    let n_tables = tables.len();
    Reduction {
        kind: Kind::Sql,
        items,
        status: format!(
            "SQL dump of {} lines: {} tables, {}.",
            fmt_num(lines.len() - usize::from(text.ends_with('\n'))),
            super::count(n_tables),
            counts.join(", ")
        ),
        failed: None,
        next_action:
            "Read the CREATE statement of the table you need at its L<n> in the saved file."
                .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::rank::Query;

    #[test]
    fn columns_of_a_table_written_on_one_line_are_its_own() {
        let stmt = [
            "CREATE TABLE hints (  hintid INTEGER PRIMARY KEY AUTOINCREMENT,  score REAL DEFAULT 0.0,  type INTEGER CHECK( type >=0 AND type < 17) NOT NULL,  strand TEXT CHECK( strand IN ('+','-','.') ) DEFAULT '.',  FOREIGN KEY (speciesid,seqnr) REFERENCES seqnames(speciesid,seqnr));",
            "INSERT INTO hints VALUES(1,3,3,'w2h',562,571,15.0,6,'.','.',4,'',15,'W');",
        ];
        assert_eq!(table_columns(&stmt), ["hintid", "score", "type", "strand"]);
        let pg = [
            "CREATE TABLE public.t (",
            "    id integer,",
            "    \"Name\" text,",
            "    CONSTRAINT t_pk PRIMARY KEY (id)",
            ");",
            "INSERT INTO public.t VALUES (1, 'a');",
        ];
        assert_eq!(table_columns(&pg), ["id", "Name"]);
        let child = ["CREATE TABLE public.p_2024 PARTITION OF public.p FOR VALUES IN ('x');"];
        assert!(table_columns(&child).is_empty());
    }

    #[test]
    fn lists_tables_and_partitions() {
        let s = "-- Dumped from database version 12.11\nSET x = 1;\nSET y = 2;\nCREATE TABLE public.accounts (\n    id integer,\n    name text\n);\nCREATE TABLE public.p (\n    d date\n)\nPARTITION BY RANGE (d);\nINSERT INTO public.accounts VALUES (1, 'x');\nINSERT INTO public.accounts VALUES (2, 'y');\n";
        let lines: Vec<&str> = s.lines().collect();
        assert!(looks_like_sql(&lines));
        let q = Query::new("columns of accounts; how is p partitioned");
        let r = reduce(
            s,
            &Ctx {
                query: &q,
                exit_code: None,
                bytes: 0,
            },
        );
        assert!(r
            .items
            .iter()
            .any(|i| i.line == Some(4) && i.text.contains("columns: id, name")));
        assert!(r
            .items
            .iter()
            .any(|i| i.line == Some(11) && i.text.contains("PARTITION BY RANGE (d);")));
        assert!(r.items.iter().any(|i| i.text.contains("public.accounts 2")));
        assert!(r
            .items
            .iter()
            .any(|i| i.text.contains("Dumped from database version 12.11")));
    }
}
