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
                let mut cols = Vec::new();
                let mut j = i + 1;
                while j < lines.len() && j < i + 200 {
                    let t = lines[j].trim();
                    if t.starts_with(')') || t.is_empty() {
                        break;
                    }
                    if let Some(w) = t.split_whitespace().next() {
                        let up = w.to_ascii_uppercase();
                        if !["CONSTRAINT", "PRIMARY", "FOREIGN", "UNIQUE", "CHECK"]
                            .contains(&up.as_str())
                        {
                            cols.push(w.trim_end_matches(',').to_string());
                        }
                    }
                    j += 1;
                }
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
                "{} -- columns: {}",
                show_line(lines[*i].trim_end()),
                show_line_max(&cols.join(", "), 160)
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
