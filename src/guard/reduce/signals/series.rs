//! The last record of a numbered series, for a question that asks how many ("How many hits
//! did the search return?"): records numbered 1, 2, 3, ... in the file's order (`Hit_num`,
//! `"index"`, a `#` column) end at their count, and the record that says so is the last.
//! Nothing here knows a format: any integer field whose values count up by one from 1.

use super::number;
use crate::guard::reduce::units::Units;

/// Fewest records for a field to be a numbered series.
const MIN_SERIES: usize = 5;

/// (unit index, field id) of the last record of each numbered series: a field whose values,
/// in the file's order, are 1, 2, ..., N with N at least [`MIN_SERIES`].
pub fn series_ends(u: &Units) -> Vec<(usize, usize)> {
    // Per field: the next value expected, the last unit, and whether it still counts.
    let mut state: Vec<(u64, usize, bool)> = vec![(1, 0, true); u.fields.len()];
    for (i, unit) in u.units.iter().enumerate() {
        for (f, v) in &unit.fields {
            let st = &mut state[*f];
            if !st.2 {
                continue;
            }
            match number(v) {
                Some(x) if x == st.0 as f64 && v.trim().bytes().all(|b| b.is_ascii_digit()) => {
                    st.0 += 1;
                    st.1 = i;
                }
                _ => st.2 = false,
            }
        }
    }
    state
        .iter()
        .enumerate()
        .filter(|(_, (next, _, ok))| *ok && (*next as usize) > MIN_SERIES)
        .map(|(f, (_, last, _))| (*last, f))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    #[test]
    fn a_series_counted_from_one_ends_at_its_count() {
        let recs: Vec<String> = (1..=12)
            .map(|i| {
                format!(
                    "{{\"num\": {i}, \"len\": {}, \"id\": \"a{i}\"}}",
                    100 + i * 7 % 5
                )
            })
            .collect();
        let text = format!("[\n{}\n]\n", recs.join(",\n"));
        let u = build(&text, Kind::Json);
        let ends = series_ends(&u);
        assert_eq!(ends.len(), 1, "only num counts up by one: {ends:?}");
        assert!(u.units[ends[0].0].text.contains("\"num\": 12"));
        // A series that skips or repeats is no count.
        let text =
            "[{\"n\": 1}, {\"n\": 2}, {\"n\": 2}, {\"n\": 3}, {\"n\": 4}, {\"n\": 5}, {\"n\": 6}]";
        assert!(series_ends(&build(text, Kind::Json)).is_empty());
    }
}
