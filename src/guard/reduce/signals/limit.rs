//! The records on the asked side of a threshold the question states ("at which hit do the
//! e-values stop being significant (above 0.001)?", "requests over 500 ms").
//!
//! The field is any numeric field the question names ([`Query::names_word`]), or one whose
//! values carry a unit when the threshold has one ("over 500 ms" of `rt=612ms`); the
//! threshold is the number it compares with ([`Limit`]). A few records past it are the answer, each one;
//! many are a run, and what answers is where it starts: the last record before the first
//! crossing and the first past it, in the file's order. Nothing here knows a format.

use super::number;
use crate::guard::reduce::intent::Limit;
use crate::guard::reduce::rank::{tokenize, Query};
use crate::guard::reduce::units::{UnitKind, Units};

/// Fewest records with the field for a threshold on it to mean anything.
const MIN_VALUES: usize = 4;
/// Most records past the threshold shown each; more are shown by where the run starts.
const MAX_LISTED: usize = 8;

/// (unit index, field id; `None` for a number in a line) of the records that answer a
/// threshold question ([`answers`]). Fields where no record or every record is past it are
/// skipped (the threshold does not split them).
pub fn crossing(u: &Units, q: &Query, limit: Limit) -> Vec<(usize, Option<usize>)> {
    let mut out = slot_crossing(u, limit, false);
    for (f, field) in u.fields.iter().enumerate() {
        let own = field
            .name
            .rsplit(['.', '/', ' '])
            .next()
            .unwrap_or(&field.name);
        let named = tokenize(own).iter().any(|w| q.names_word(w));
        // (unit index, value, whether it is written with a unit: `612ms`, `1.2G`).
        let vals: Vec<(usize, f64, bool)> = u
            .units
            .iter()
            .enumerate()
            .filter_map(|(i, unit)| {
                let v = unit.fields.iter().find(|(id, _)| *id == f)?;
                let x = number(&v.1)?;
                Some((i, x, v.1.trim().ends_with(|c: char| c.is_alphabetic())))
            })
            .collect();
        if vals.len() < MIN_VALUES {
            continue;
        }
        // A field the question does not name answers it when its values carry a unit and
        // the threshold has one ("over 500 ms" of `rt=612ms`): compared scaled.
        let with_units = vals.iter().filter(|v| v.2).count() * 10 >= vals.len() * 8;
        let by_unit = !named && with_units && limit.unit;
        if !named && !by_unit {
            continue;
        }
        let vals: Vec<(usize, f64)> = vals.into_iter().map(|(i, x, _)| (i, x)).collect();
        // The threshold as written, else scaled by its unit, whichever splits the values.
        let sides: &[bool] = if by_unit { &[true] } else { &[false, true] };
        if let Some(found) = sides
            .iter()
            .find_map(|&scaled| answers(&vals, &limit.with(scaled)))
        {
            out.extend(found.into_iter().map(|i| (i, Some(f))));
        }
    }
    // Nothing named or written with a unit: the one number of a line template (`51200` of
    // `du -k`'s `51200\t./vendor/x`), compared as written.
    if out.is_empty() && !limit.unit {
        out = slot_crossing(u, limit, true);
    }
    out
}

/// The same for the numbers at one position of a line template: written with a unit (`[0.5s]`
/// of a test line, `12M` of `du -h`) when the threshold has one, or, with `bare`, written as
/// plain numbers at the only position of the template that holds numbers.
fn slot_crossing(u: &Units, limit: Limit, bare: bool) -> Vec<(usize, Option<usize>)> {
    let mut out = Vec::new();
    if !bare && !limit.unit {
        return out;
    }
    let limit = limit.with(!bare);
    let mut by_template: Vec<Vec<usize>> = vec![Vec::new(); u.templates.len()];
    for (i, unit) in u.units.iter().enumerate() {
        if unit.kind == UnitKind::Line {
            by_template[unit.template].push(i);
        }
    }
    for (t, members) in by_template.iter().enumerate() {
        if members.len() < MIN_VALUES || u.templates[t].shaped {
            continue;
        }
        let slots: Vec<usize> = u.templates[t]
            .text
            .split(' ')
            .enumerate()
            .filter(|(_, w)| *w == "<*>")
            .map(|(p, _)| p)
            .collect();
        let values_at = |p: usize| -> Vec<(usize, f64)> {
            members
                .iter()
                .filter_map(|&i| {
                    let mut words = u.units[i].text.split_whitespace().skip(p);
                    let trim = |w: &str| {
                        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '%')
                            .to_string()
                    };
                    let t = trim(words.next()?);
                    let digit = t.starts_with(|c: char| c.is_ascii_digit());
                    let plain = t.chars().all(|c| c.is_ascii_digit() || c == '.');
                    if bare {
                        return (plain && digit).then(|| number(&t).map(|x| (i, x)))?;
                    }
                    if !digit {
                        return None;
                    }
                    if t.ends_with(|c: char| c.is_alphabetic() || c == '%') {
                        return number(&t).map(|x| (i, x));
                    }
                    // The unit as the next word (`in 898 ms`): read together.
                    let unit = words.next().map(trim).filter(|w| {
                        plain
                            && !w.is_empty()
                            && w.len() <= 3
                            && w.chars().all(|c| c.is_alphabetic() || c == '%')
                    })?;
                    number(&format!("{t}{unit}")).map(|x| (i, x))
                })
                .collect()
        };
        let numeric: Vec<(usize, Vec<(usize, f64)>)> = slots
            .into_iter()
            .map(|p| (p, values_at(p)))
            .filter(|(_, vals)| vals.len() * 10 >= members.len() * 8)
            .collect();
        // A bare number is compared only where it is the line's one number.
        if bare && numeric.len() != 1 {
            continue;
        }
        for (_, vals) in numeric {
            if let Some(found) = answers(&vals, &limit) {
                out.extend(found.into_iter().map(|i| (i, None)));
            }
        }
    }
    out
}

/// Share (of ten) of the values from the first crossing on that are past the threshold for
/// them to be a run (values that grow, an e-value column), not records scattered through
/// the file (a log's slow requests).
const RUN_TENTHS: usize = 8;

/// The units that answer a threshold among `vals` ((unit index, value) in the file's order):
/// every one past it when at most [`MAX_LISTED`] are; more, as a run ([`RUN_TENTHS`]): the
/// last before the first crossing and the first past it; more, scattered: the first
/// [`MAX_LISTED`] past it. `None` when none or all are past it.
fn answers(vals: &[(usize, f64)], limit: &Limit) -> Option<Vec<usize>> {
    let past: Vec<usize> = vals
        .iter()
        .filter(|v| limit.holds(v.1))
        .map(|v| v.0)
        .collect();
    if past.is_empty() || past.len() == vals.len() {
        return None;
    }
    if past.len() <= MAX_LISTED {
        return Some(past);
    }
    let first = vals.iter().position(|v| limit.holds(v.1)).unwrap_or(0);
    if past.len() * 10 < (vals.len() - first) * RUN_TENTHS {
        return Some(past.into_iter().take(MAX_LISTED).collect());
    }
    Some(
        vals[first.saturating_sub(1)..=first]
            .iter()
            .map(|v| v.0)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    /// "above 0.001", no unit.
    const ABOVE_MILLI: Limit = Limit {
        above: true,
        value: 0.001,
        scaled: 0.001,
        unit: false,
        inclusive: false,
    };

    fn hits(n: usize, cut: usize) -> String {
        let recs: Vec<String> = (1..=n)
            .map(|i| {
                let e = if i < cut {
                    1e-9 * i as f64
                } else {
                    0.01 * i as f64
                };
                format!("{{\"num\": {i}, \"accession\": \"ZP_{i:05}\", \"evalue\": {e:e}}}")
            })
            .collect();
        format!("[\n{}\n]\n", recs.join(",\n"))
    }

    #[test]
    fn where_a_run_past_the_threshold_starts() {
        let text = hits(40, 25);
        let u = build(&text, Kind::Json);
        let q = Query::new("at which hit do the e-values stop being significant (above 0.001)?");
        let limit = ABOVE_MILLI;
        let got: Vec<&str> = crossing(&u, &q, limit)
            .into_iter()
            .map(|(i, _)| u.units[i].text.as_str())
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].contains("ZP_00024") && got[1].contains("ZP_00025"),
            "{got:?}"
        );
    }

    #[test]
    fn a_few_past_the_threshold_are_each_an_answer() {
        let text = hits(40, 36);
        let u = build(&text, Kind::Json);
        let q = Query::new("which evalues are above 0.001?");
        let got = crossing(&u, &q, ABOVE_MILLI);
        assert_eq!(got.len(), 5);
        // A field the question does not name, or that the threshold does not split: none.
        let q = Query::new("which are above 0.001?");
        assert!(crossing(&u, &q, ABOVE_MILLI).is_empty());
        let q = Query::new("which num is above 0.001?");
        assert!(crossing(&u, &q, ABOVE_MILLI).is_empty());
    }

    #[test]
    fn a_unit_in_the_question_finds_the_field_written_with_it() {
        let lines: Vec<String> = (1..=40)
            .map(|i| {
                let rt = if i % 13 == 0 { 600 + i } else { 100 + i };
                format!("GET /api/item/{i} status=200 bytes=500 rt={rt}ms")
            })
            .collect();
        let text = lines.join("\n") + "\n";
        let u = build(&text, Kind::Log);
        let intent = "which requests took over 500 ms?";
        let got: Vec<&str> = crossing(&u, &Query::new(intent), Limit::of(intent).unwrap())
            .into_iter()
            .map(|(i, _)| u.units[i].text.as_str())
            .collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got.iter().all(|t| t.contains("rt=6")), "{got:?}");
    }

    #[test]
    fn numbers_written_with_units_in_lines_are_compared_too() {
        let lines: Vec<String> = (1..=60)
            .map(|i| {
                let t = if i == 17 || i == 44 {
                    6.5 + i as f64 / 100.0
                } else {
                    0.1 * (i % 9) as f64
                };
                format!(
                    "tests/test_mod{}.py::test_case_{i:03} PASSED [{t:.2}s]",
                    i % 4
                )
            })
            .collect();
        let text = lines.join("\n") + "\n";
        let u = build(&text, Kind::Lines);
        let intent = "which tests took longer than 5s?";
        let got: Vec<&str> = crossing(&u, &Query::new(intent), Limit::of(intent).unwrap())
            .into_iter()
            .map(|(i, _)| u.units[i].text.as_str())
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].contains("test_case_017") && got[1].contains("test_case_044"));
    }

    /// A log's `in 912 ms`: the unit is the next word. More past the threshold than are
    /// listed, scattered through the log (no run): the first ones, in the file's order.
    #[test]
    fn a_unit_written_as_the_next_word_and_scattered_records_past_it() {
        let slow = [33, 90, 141, 150, 201, 260, 300, 333, 371, 388];
        let text: String = (1..=400)
            .map(|i| {
                let ms = if slow.contains(&i) {
                    900 + i % 7
                } else {
                    5 + (i * 37) % 880
                };
                format!(
                    "2026-12-05T10:00:00 INFO worker-{} processed order id={i} in {ms} ms\n",
                    i % 8
                )
            })
            .collect();
        let u = build(&text, Kind::Log);
        let intent = "Which orders took over 898 ms?";
        let got: Vec<&str> = crossing(&u, &Query::new(intent), Limit::of(intent).unwrap())
            .into_iter()
            .map(|(i, _)| u.units[i].text.as_str())
            .collect();
        assert_eq!(got.len(), MAX_LISTED, "{got:?}");
        for (g, id) in got.iter().zip(slow) {
            assert!(
                g.contains(&format!("order id={id} in 9")),
                "{g} is not order {id}"
            );
        }
    }

    #[test]
    fn the_one_bare_number_of_a_line_is_compared_when_nothing_else_is() {
        let lines: Vec<String> = (0..50)
            .map(|i| {
                let kb = match i {
                    12 => 51200,
                    30 => 24576,
                    41 => 10300,
                    _ => 100 + i * 37,
                };
                format!("{kb}\t./node_modules/pkg{i:04}")
            })
            .collect();
        let text = lines.join("\n") + "\n";
        let u = build(&text, Kind::Lines);
        let intent = "which directories are bigger than 10000?";
        let got: Vec<&str> = crossing(&u, &Query::new(intent), Limit::of(intent).unwrap())
            .into_iter()
            .map(|(i, _)| u.units[i].text.as_str())
            .collect();
        assert_eq!(got.len(), 3, "{got:?}");
        // Lines with two numbers (a batch number and a count) are not guessed at.
        let text: String = (0..50)
            .map(|i| format!("batch {} wrote {} rows\n", i * 3 + 1, i * 500))
            .collect();
        let u = build(&text, Kind::Lines);
        assert!(crossing(&u, &Query::new(intent), Limit::of(intent).unwrap()).is_empty());
    }
}
