//! Field statistics: numbers read from field values (with unit suffixes), and the value
//! distributions of fields and template slots that say which values are categorical and rare.

use std::collections::{HashMap, HashSet};

use super::MIN_FIELD_UNITS;
use crate::guard::reduce::units::Units;

/// A value of a categorical field is rare at or under this share of the field's units.
const RARE_VALUE_SHARE: f64 = 0.15;
/// Most distinct values for a field to count as categorical.
const MAX_CATEGORIES: usize = 16;

/// Most distinct integer values of a categorical field (HTTP statuses, exit codes, levels).
const MAX_NUMERIC_CATEGORIES: usize = 8;

/// A number written with its name in one token (`NM:i:25`, `ino:45163`, `retries=3`): the
/// name (before the last `:` or `=`; it starts with a letter and holds letters, digits and
/// `_ - :`) and the number after it, as [`number`] reads it. `None` for any other token: a
/// clock time (`12:30:45`), and a source line (`(ClassLoader.java:52)`, whose name has a dot:
/// a line number is no measure).
pub fn tagged_number(tok: &str) -> Option<(&str, f64)> {
    let tok = tok.trim_matches(['"', '\'', '(', ')', '[', ']', ',', ';']);
    let at = tok.rfind([':', '='])?;
    let (name, v) = (&tok[..at], &tok[at + 1..]);
    let named = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':'));
    if !named || v.is_empty() || !v.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        return None;
    }
    number(v).map(|x| (name, x))
}

/// A number with an optional unit suffix, normalised (bytes, seconds); `None` for text.
/// "350ms" -> 0.35, "2.1G" -> 2.1e9, "15%" -> 15, "7:53.61" -> 473.61, "1,234" -> 1234.
pub fn number(v: &str) -> Option<f64> {
    let v = v
        .trim()
        .trim_matches(['"', '\'', '(', ')', '[', ']', ',', ';']);
    if v.is_empty() || v.len() > 24 {
        return None;
    }
    // Scientific notation as written (`4.20576e-46`, `1e-9`, Fortran's `-.11424513E+04`), finite only (not `inf`, `NaN`).
    if v.contains(['e', 'E']) && v.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.')
    {
        if let Ok(x) = v.parse::<f64>() {
            return x.is_finite().then_some(x);
        }
    }
    if let Some((m, s)) = v.split_once(':') {
        if m.chars().all(|c| c.is_ascii_digit()) && !m.is_empty() && s.len() <= 6 {
            return Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?);
        }
        return None;
    }
    let end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == ','))
        .unwrap_or(v.len());
    let digits = v[..end].replace(',', "");
    if digits.is_empty() || !digits.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: f64 = digits.parse().ok()?;
    // A size or duration with its unit a space apart (`19.9 MiB`, `315852 kB`, `12 ms`), as
    // a field's value keeps it ([`SPACED_UNITS`]); other words after a space are no unit.
    let unit = match v[end..].strip_prefix(' ') {
        Some(u) if SPACED_UNITS.contains(&u) => u,
        Some(_) => return None,
        None => &v[end..],
    };
    let mult = match unit {
        "" | "%" | "x" => 1.0,
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" | "secs" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "B" | "b" | "bytes" => 1.0,
        "K" | "k" | "Ki" | "KB" | "KiB" | "kB" => 1024.0,
        "M" | "Mi" | "MB" | "MiB" => 1024.0 * 1024.0,
        "G" | "Gi" | "GB" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "T" | "Ti" | "TB" | "TiB" => 1024f64.powi(4),
        _ => return None,
    };
    Some(n * mult)
}

/// Units [`number`] reads a space after the number: sizes and durations written as words
/// of their own, no letter that could be a word (`m`, `h`, `K`).
pub(crate) const SPACED_UNITS: &[&str] = &[
    "ns", "us", "µs", "ms", "s", "sec", "secs", "B", "bytes", "KB", "kB", "KiB", "MB", "MiB", "GB",
    "GiB", "TB", "TiB",
];

/// [`number`], or a number followed by a unit it does not know, of one to three letters
/// (`973.2854pt`, `-3dB`, `12ops`), read as the number alone: the slot of one line template
/// writes one unit, so its values compare as written. Not an ordinal (`2nd`, `21st`).
pub fn slot_number(v: &str) -> Option<f64> {
    if let Some(x) = number(v) {
        return Some(x);
    }
    let v = v
        .trim()
        .trim_matches(['"', '\'', '(', ')', '[', ']', ',', ';']);
    let end = v.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = v.split_at(end);
    let ordinal = matches!(unit, "st" | "nd" | "rd" | "th");
    if unit.len() > 3 || ordinal || !unit.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let x = number(n)?;
    (!n.ends_with(['.', '-', ','])).then_some(x)
}

/// Value counts of one field (or one template slot) over the units that have it.
#[derive(Debug, Clone)]
pub struct Dist {
    /// Field name, or the template text for a slot.
    pub name: String,
    /// (value, count), most frequent first.
    pub counts: Vec<(String, usize)>,
    /// Units with the field.
    pub n: usize,
    /// Whether there are more values than kept in `counts`.
    pub open: bool,
}

impl Dist {
    /// The distribution of a numeric series read from lines (a template slot, one noun's
    /// counts): `n` values, none counted, so it is never [`Dist::categorical`].
    pub fn series(name: &str, n: usize) -> Dist {
        Dist {
            name: name.to_string(),
            counts: Vec::new(),
            n,
            open: true,
        }
    }

    /// Categorical: few distinct values, each repeated; a measure (decimals, or more than
    /// [`MAX_NUMERIC_CATEGORIES`] distinct integers) is not, though its values repeat.
    pub fn categorical(&self) -> bool {
        if self.n < MIN_FIELD_UNITS
            || self.open
            || self.counts.len() < 2
            || self.counts.len() > MAX_CATEGORIES
            || self.counts.len() * 2 > self.n
        {
            return false;
        }
        let numeric = self.counts.iter().all(|(v, _)| number(v).is_some());
        let decimal = self.counts.iter().any(|(v, _)| v.contains('.'));
        !(numeric && (decimal || self.counts.len() > MAX_NUMERIC_CATEGORIES))
    }

    /// Share of the most frequent value.
    fn mode_share(&self) -> f64 {
        self.counts
            .first()
            .map_or(0.0, |c| c.1 as f64 / self.n.max(1) as f64)
    }

    /// 0..=1: how rare `value` is among the field's values (0 when not rare).
    pub fn rarity(&self, value: &str) -> f64 {
        if !self.categorical() {
            return 0.0;
        }
        let Some(&(_, c)) = self.counts.iter().find(|(v, _)| v == value) else {
            return 0.0;
        };
        let share = c as f64 / self.n as f64;
        let mode = self.mode_share();
        if share <= RARE_VALUE_SHARE && mode >= 2.0 * share {
            (1.0 - share / mode).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// Value distributions of every field of the units.
pub fn field_dists(u: &Units) -> Vec<Dist> {
    let mut maps: Vec<HashMap<&str, usize>> = vec![HashMap::new(); u.fields.len()];
    let mut n = vec![0usize; u.fields.len()];
    let mut open = vec![false; u.fields.len()];
    for unit in &u.units {
        let mut seen: HashSet<usize> = HashSet::new();
        for (f, v) in &unit.fields {
            if !seen.insert(*f) {
                continue;
            }
            n[*f] += 1;
            let m = &mut maps[*f];
            if m.len() < 64 || m.contains_key(v.as_str()) {
                *m.entry(v.as_str()).or_default() += 1;
            } else {
                open[*f] = true;
            }
        }
    }
    maps.into_iter()
        .enumerate()
        .map(|(i, m)| {
            let mut counts: Vec<(String, usize)> =
                m.into_iter().map(|(k, c)| (k.to_string(), c)).collect();
            counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            Dist {
                name: u.fields[i].name.clone(),
                counts,
                n: n[i],
                open: open[i],
            }
        })
        .collect()
}

/// The distribution of list field `f` (a name ending in `[]`) as a fact states it: every value
/// of a unit's list counted, each once per unit (`features › serde[]` of `["dep:serde_core",
/// "dep:serde"]` counts both). [`field_dists`] counts a unit's first value only, which ranks
/// and rates fields as before; a count a summary states must be the output's own.
pub fn list_dist(u: &Units, f: usize) -> Dist {
    let mut m: HashMap<&str, usize> = HashMap::new();
    let (mut n, mut open) = (0, false);
    for unit in &u.units {
        let mut seen: HashSet<&str> = HashSet::new();
        for (g, v) in &unit.fields {
            if *g != f || !seen.insert(v.as_str()) {
                continue;
            }
            if seen.len() == 1 {
                n += 1;
            }
            if m.len() < 64 || m.contains_key(v.as_str()) {
                *m.entry(v.as_str()).or_default() += 1;
            } else {
                open = true;
            }
        }
    }
    let mut counts: Vec<(String, usize)> = m.into_iter().map(|(k, c)| (k.to_string(), c)).collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Dist {
        name: u.fields[f].name.clone(),
        counts,
        n,
        open,
    }
}

/// The distribution of one template slot.
pub(super) fn slot_dist(m: &HashMap<String, usize>, total: usize) -> Dist {
    let mut counts: Vec<(String, usize)> = m.iter().map(|(k, v)| (k.clone(), *v)).collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let kept: usize = counts.iter().map(|c| c.1).sum();
    Dist {
        name: String::new(),
        counts,
        n: total,
        open: kept < total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    /// `cargo metadata`'s `features`: a list's every value is counted, once per record; the
    /// ranking's distribution keeps a record's first value.
    #[test]
    fn a_lists_every_value_is_counted_once_per_record() {
        let recs: Vec<String> = (0..12)
            .map(|i| {
                let serde = match i % 4 {
                    0 => r#"["dep:serde_core", "dep:serde"]"#,
                    1 => r#"["dep:serde", "dep:serde"]"#,
                    _ => r#"["dep:serde"]"#,
                };
                format!(r#"{{"name": "pkg{i}", "features": {{"serde": {serde}}}}}"#)
            })
            .collect();
        let text = format!("[\n{}\n]\n", recs.join(",\n"));
        let u = build(&text, Kind::Json);
        let f = u
            .fields
            .iter()
            .position(|x| x.name.ends_with("serde[]"))
            .unwrap_or_else(|| {
                panic!("{:?}", u.fields.iter().map(|f| &f.name).collect::<Vec<_>>())
            });
        let d = list_dist(&u, f);
        assert_eq!(d.n, 12);
        assert_eq!(
            d.counts,
            [
                ("dep:serde".to_string(), 12),
                ("dep:serde_core".to_string(), 3)
            ]
        );
        let first = &field_dists(&u)[f];
        assert_eq!(first.counts[0], ("dep:serde".to_string(), 9));
    }
}
