//! Tables written as arrays of arrays: `{"columns": ["id", "state"], "rows": [[1, "up"], ...]}`
//! (SQL-over-HTTP APIs: Datasette, Elasticsearch SQL, Trino, ClickHouse's JSONCompact, Kusto,
//! pandas' `orient="split"`), a spreadsheet's `values` whose first row is its header, or bare
//! tuples (`[timestamp, "value"]` samples). Each row is a record whose fields are the columns,
//! so the signals read them as they read CSV rows: a column's extremes, a value's rarity, the
//! row a question's value picks.

use serde_json::{Map, Value};

use super::leaves::{plain, scalar};
use super::{Builder, JsonWalk, UnitKind, MAX_UNITS, MIN_RECORDS};
use crate::guard::reduce::units::keep_line;

/// Keys (compared in lower case) of a member that names the columns of a rows array beside it:
/// an array of strings, or of objects named by one of [`COLUMN_NAME_KEYS`].
const COLUMN_KEYS: &[&str] = &[
    "columns",
    "column_names",
    "columnnames",
    "fields",
    "header",
    "headers",
    "cols",
    "meta",
    "schema",
    "names",
];
/// Keys (lower case) of a column object that hold its name (`{"name": "id", "type": "int"}`,
/// Kusto's `{"ColumnName": ...}`).
const COLUMN_NAME_KEYS: &[&str] = &["name", "columnname", "column_name", "label", "field", "key"];
/// Most columns of a row for the array to be read as a table (wider arrays are vectors).
const MAX_COLUMNS: usize = 64;

/// The column names that a member of object `m` gives (see [`COLUMN_KEYS`]): 2 to
/// [`MAX_COLUMNS`] names, all present; `None` when no member names columns.
pub(super) fn sibling_header(m: &Map<String, Value>) -> Option<Vec<String>> {
    for (k, v) in m {
        if !COLUMN_KEYS.contains(&k.to_ascii_lowercase().as_str()) {
            continue;
        }
        let Value::Array(a) = v else { continue };
        let names: Option<Vec<String>> = a
            .iter()
            .map(|e| match e {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => o
                    .iter()
                    .find(|(k, _)| COLUMN_NAME_KEYS.contains(&k.to_ascii_lowercase().as_str()))
                    .and_then(|(_, v)| v.as_str())
                    .map(str::to_string),
                _ => None,
            })
            .collect();
        if let Some(n) = names.filter(|n| (2..=MAX_COLUMNS).contains(&n.len())) {
            return Some(n);
        }
    }
    None
}

/// `a` read as a table: at least [`MIN_RECORDS`] rows, every element an array of scalars of
/// one length (2 to [`MAX_COLUMNS`]). Returns the column names and the index of the first data
/// row: the names of `hint` (a sibling's, [`sibling_header`]) when they are as many as the
/// columns; else the first row's, when it is all distinct strings and the other rows are not
/// all strings (a spreadsheet's header); else `key[0]`, `key[1]`, ... (`key`: the array's).
pub(super) fn shape(
    a: &[Value],
    hint: Option<&[String]>,
    key: &str,
) -> Option<(Vec<String>, usize)> {
    if a.len() < MIN_RECORDS {
        return None;
    }
    let w = a[0].as_array()?.len();
    if !(2..=MAX_COLUMNS).contains(&w) {
        return None;
    }
    for row in a {
        let r = row.as_array()?;
        if r.len() != w || r.iter().any(|x| scalar(x).is_none()) {
            return None;
        }
    }
    if let Some(h) = hint.filter(|h| h.len() == w) {
        return Some((h.to_vec(), 0));
    }
    let strings = |r: &Value| r.as_array().is_some_and(|r| r.iter().all(Value::is_string));
    if strings(&a[0]) && !a[1..].iter().all(strings) {
        let names: Vec<String> = a[0]
            .as_array()?
            .iter()
            .map(|x| x.as_str().unwrap_or("").to_string())
            .collect();
        let distinct: std::collections::HashSet<&String> = names.iter().collect();
        if distinct.len() == w && names.iter().all(|n| !n.trim().is_empty()) {
            return Some((names, 1));
        }
    }
    Some(((0..w).map(|i| format!("{key}[{i}]")).collect(), 0))
}

impl JsonWalk<'_> {
    /// The rows of table `a` (its columns `names`, data from row `first`) at `path`: a header
    /// row is a line unit, each data row a record of one field per column, shown as the file
    /// writes it, and anchored on the line of its first cell.
    pub(super) fn grid(
        &mut self,
        b: &mut Builder,
        a: &[Value],
        names: &[String],
        first: usize,
        path: &str,
    ) {
        for (i, row) in a.iter().enumerate() {
            // As many rows as a delimited table's ([`MAX_UNITS`]): the rest are in the file.
            if b.units.len() >= MAX_UNITS {
                break;
            }
            let Some(cells) = row.as_array() else {
                continue;
            };
            let line = cells
                .first()
                .map_or(self.here(), |c| self.line_of_element(c));
            let cell = |k: usize, c: &Value| {
                let v = scalar(c).unwrap_or_default();
                if k + 1 < cells.len() {
                    format!("{v},")
                } else {
                    v
                }
            };
            let pairs: Vec<String> = cells.iter().enumerate().map(|(k, c)| cell(k, c)).collect();
            let sep = if self.pretty { " " } else { "" };
            let shown = self.as_written(row).unwrap_or_else(|| {
                let joined: Vec<&str> = pairs.iter().map(String::as_str).collect();
                format!("[{}]", joined.join(sep))
            });
            // The cursor passes the row's cells, so the next row is searched after it.
            for c in cells.iter().skip(1) {
                self.line_of_element(c);
            }
            if i < first {
                b.push(line, keep_line(&shown), UnitKind::Line, path.to_string());
                continue;
            }
            let u = b.push(line, keep_line(&shown), UnitKind::Record, path.to_string());
            let fields: Vec<(usize, String)> = names
                .iter()
                .zip(cells)
                .map(|(n, c)| (b.field(n), plain(c)))
                .collect();
            b.set_record(u, fields, pairs, sep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn columns_come_from_a_sibling_the_first_row_or_the_position() {
        let m = json!({"columns": [{"name": "id", "type": "int"}, {"name": "state"}], "rows": []});
        let h = sibling_header(m.as_object().unwrap()).unwrap();
        assert_eq!(h, ["id", "state"]);
        let rows = json!([[1, "up"], [2, "down"], [3, "up"]]);
        let a = rows.as_array().unwrap();
        assert_eq!(shape(a, Some(&h), "rows").unwrap(), (h.clone(), 0));
        // A header of another width is not theirs.
        let three = vec!["a".to_string(), "b".into(), "c".into()];
        assert_eq!(
            shape(a, Some(&three), "rows").unwrap().0,
            ["rows[0]", "rows[1]"]
        );
        // A spreadsheet: the first row names the columns.
        let sheet = json!([["host", "ms"], ["a", 3], ["b", 5]]);
        assert_eq!(
            shape(sheet.as_array().unwrap(), None, "values").unwrap(),
            (vec!["host".to_string(), "ms".into()], 1)
        );
        // All strings: no row is a header.
        let pairs = json!([["IFLA_MTU", "1500"], ["IFLA_IFNAME", "eth0"], ["X", "y"]]);
        assert_eq!(
            shape(pairs.as_array().unwrap(), None, "attrs").unwrap().1,
            0
        );
        // Not tables: ragged, nested, too few, one column.
        for v in [
            json!([[1, 2], [3], [4, 5]]),
            json!([[1, [2]], [3, [4]], [5, [6]]]),
            json!([[1, 2], [3, 4]]),
            json!([[1], [2], [3]]),
        ] {
            assert!(shape(v.as_array().unwrap(), None, "x").is_none(), "{v}");
        }
    }
}

#[cfg(test)]
mod walk_tests {
    use crate::guard::reduce::units::{build, UnitKind, MAX_UNITS};
    use crate::guard::reduce::Kind;

    #[test]
    fn each_row_of_a_table_is_a_record_with_its_columns() {
        let text = r#"{"columns": [{"name": "id", "type": "int"}, {"name": "state"}, {"name": "ms"}],
 "rows": [[1, "up", 12], [2, "down", 950], [3, "up", 14], [4, "up", 11]]}"#;
        let u = build(text, Kind::Json);
        let recs: Vec<_> = u
            .units
            .iter()
            .filter(|x| x.kind == UnitKind::Record && x.context == "rows[]")
            .collect();
        assert_eq!(recs.len(), 4, "{:#?}", u.units);
        assert_eq!(recs[1].text, r#"[2, "down", 950]"#);
        assert_eq!(recs[1].line, 2);
        let named: Vec<(&str, &str)> = recs[1]
            .fields
            .iter()
            .map(|(f, v)| (u.fields[*f].name.as_str(), v.as_str()))
            .collect();
        assert_eq!(named, [("id", "2"), ("state", "down"), ("ms", "950")]);
        assert_eq!(recs[1].render_pairs(&[1, 2]), r#"… "down", 950"#);
    }

    #[test]
    fn a_table_longer_than_the_unit_cap_stops_at_it() {
        let rows: Vec<String> = (0..MAX_UNITS + 10)
            .map(|i| format!("[{i},{}]", i % 7))
            .collect();
        let text = format!("{{\"rows\":[{}]}}", rows.join(","));
        let u = build(&text, Kind::Json);
        assert_eq!(u.units.len(), MAX_UNITS);
        assert_eq!(u.units[0].text, "[0,0]");
    }
}
