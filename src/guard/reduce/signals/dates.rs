//! Dates written in the output, ranked when the question asks for the earliest or the latest
//! ("which certificate expires first?", "the newest release"): a field whose values are dates
//! (`"upload_time": "2024-05-29T15:37:49"`), or the dates of one line template's lines
//! (`Not After : Mar  3 12:09:48 2023 GMT`). Plain calendar formats, no rule for any tool.

use std::sync::LazyLock;

use chrono::NaiveDate;
use regex::Regex;

use super::placeholder;
use crate::guard::reduce::rank::{tokenize, Query};
use crate::guard::reduce::units::{UnitKind, Units};

/// `2024-05-29`, optionally `T15:37:49` or ` 15:37`.
static ISO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?").unwrap()
});
/// A month's name, the day, an optional time, the year: `Mar  3 12:09:48 2023` (openssl, git,
/// `ctime`), `May 29, 2024`, `Jan 15 2024` (`ls -l`).
static MDY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? +(\d{1,2}),? +",
        r"(?:(\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)? +)?(\d{4})\b"
    ))
    .unwrap()
});
/// The day, a month's name, the year, an optional time: `29 May 2024 15:37:49` (RFC 2822),
/// `29/May/2024:15:37:49` (access logs), `07-DEC-2012`.
static DMY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(\d{1,2})[ /-](jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*[ /-](\d{4})",
        r"(?:[ :T](\d{2}):(\d{2})(?::(\d{2}))?)?"
    ))
    .unwrap()
});

/// The month (1-12) a name starts with.
fn month(name: &str) -> Option<u32> {
    const NAMES: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let n = name.get(..3)?.to_ascii_lowercase();
    NAMES.iter().position(|m| *m == n).map(|k| k as u32 + 1)
}

/// Seconds since 1970-01-01 of a calendar date and time; `None` for a day that does not exist
/// or a year outside 1970..=2200 (a build number, not a date).
fn seconds(y: i32, m: u32, d: u32, h: u32, min: u32, s: u32) -> Option<f64> {
    if !(1970..=2200).contains(&y) || h > 23 || min > 59 || s > 60 {
        return None;
    }
    let t = NaiveDate::from_ymd_opt(y, m, d)?.and_hms_opt(h, min, s.min(59))?;
    Some(t.and_utc().timestamp() as f64)
}

/// The first date written in `text`: its seconds since 1970 (the time of day counted when
/// written, zones ignored) and the byte where it starts. `None` when `text` holds none.
pub(crate) fn first_date(text: &str) -> Option<(f64, usize)> {
    let num = |c: &regex::Captures, k: usize| -> u32 {
        c.get(k).and_then(|m| m.as_str().parse().ok()).unwrap_or(0)
    };
    let mut best: Option<(f64, usize)> = None;
    let mut consider = |v: Option<f64>, at: usize| {
        if let Some(v) = v {
            if best.is_none_or(|b| at < b.1) {
                best = Some((v, at));
            }
        }
    };
    if let Some(c) = ISO.captures(text) {
        let at = c.get(0).map_or(0, |m| m.start());
        let y = num(&c, 1) as i32;
        consider(
            seconds(
                y,
                num(&c, 2),
                num(&c, 3),
                num(&c, 4),
                num(&c, 5),
                num(&c, 6),
            ),
            at,
        );
    }
    if let Some(c) = MDY.captures(text) {
        let at = c.get(0).map_or(0, |m| m.start());
        let v = month(&c[1]).and_then(|m| {
            seconds(
                num(&c, 6) as i32,
                m,
                num(&c, 2),
                num(&c, 3),
                num(&c, 4),
                num(&c, 5),
            )
        });
        consider(v, at);
    }
    if let Some(c) = DMY.captures(text) {
        let at = c.get(0).map_or(0, |m| m.start());
        let v = month(&c[2]).and_then(|m| {
            seconds(
                num(&c, 3) as i32,
                m,
                num(&c, 1),
                num(&c, 4),
                num(&c, 5),
                num(&c, 6),
            )
        });
        consider(v, at);
    }
    best
}

/// Fewest dated values of a field or line template for its dates to rank.
const MIN_DATED: usize = 4;
/// Least share (tenths) of a field's values that must be dates for the field to be a date.
const MIN_DATED_TENTHS: usize = 8;
/// Longest field value read as one date (a date, a time, a zone and a weekday fit).
const MAX_DATE_VALUE: usize = 48;
/// Words that name when something ends: a question about expiry names a field or line they
/// label (`Not After`, `valid_until`, `expires_at`).
const EXPIRY_WORDS: &[&str] = &[
    "after", "until", "expir", "expiri", "valid", "end", "notaft",
];

/// A field's or a line template's dates: its label, its (seconds, unit) values in input order,
/// its field id (`None` for lines), whether the question names its label, and whether it rises
/// in input order like a clock (a log's timestamps).
pub(super) struct DateSeries {
    /// The field's name, or the words before the date in the template's first line.
    pub label: String,
    /// (seconds since 1970, unit index), in input order.
    pub vals: Vec<(f64, usize)>,
    /// The field, for a record's dates.
    pub field: Option<usize>,
    /// Whether the question names a word of the label (or asks about expiry and the label is an
    /// end of validity).
    pub named: bool,
    /// Whether the dates rise in input order (nine in ten steps or more).
    pub clock: bool,
}

/// The date series of `u`, fields first: every field whose values are nearly all dates, and
/// every line template whose lines write a date, with [`MIN_DATED`] or more values of at least
/// two dates.
pub(super) fn series(u: &Units, q: &Query, intent_expiry: bool) -> Vec<DateSeries> {
    let mut out: Vec<DateSeries> = Vec::new();
    let names_label = |label: &str| {
        tokenize(label).iter().any(|t| {
            q.names_word(t) || intent_expiry && EXPIRY_WORDS.iter().any(|w| t.starts_with(w))
        })
    };
    // Fields.
    let mut values = vec![0usize; u.fields.len()];
    let mut dated: std::collections::BTreeMap<usize, Vec<(f64, usize)>> = Default::default();
    for (i, unit) in u.units.iter().enumerate() {
        for (f, v) in &unit.fields {
            if placeholder(v) || *f >= values.len() {
                continue;
            }
            values[*f] += 1;
            let v = v.trim().trim_matches('"');
            if v.len() > MAX_DATE_VALUE {
                continue;
            }
            if let Some((x, at)) = first_date(v) {
                // The value is the date (a weekday may come first), not a text that cites one.
                if at <= 5 {
                    dated.entry(*f).or_default().push((x, i));
                }
            }
        }
    }
    // Units whose date a field holds: their lines are not counted again.
    let mut by_field: std::collections::HashSet<usize> = Default::default();
    for (f, vals) in dated {
        if vals.len() >= MIN_DATED && vals.len() * 10 >= values[f] * MIN_DATED_TENTHS {
            by_field.extend(vals.iter().map(|v| v.1));
            let label = u.fields[f].name.clone();
            push(&mut out, label.clone(), vals, Some(f), names_label(&label));
        }
    }
    // Line templates.
    let mut by_template: std::collections::BTreeMap<usize, (String, Vec<(f64, usize)>)> =
        Default::default();
    let mut said: std::collections::HashSet<&str> = Default::default();
    for (i, unit) in u.units.iter().enumerate() {
        if unit.kind != UnitKind::Line || by_field.contains(&i) {
            continue;
        }
        let Some((x, at)) = first_date(&unit.text) else {
            continue;
        };
        if !said.insert(unit.text.trim()) {
            continue;
        }
        let e = by_template.entry(unit.template).or_insert_with(|| {
            let before: Vec<&str> = unit.text[..at]
                .split_whitespace()
                .filter(|w| w.chars().any(char::is_alphabetic))
                .collect();
            let label = before[before.len().saturating_sub(3)..]
                .join(" ")
                .trim_end_matches([':', '=', ','])
                .trim()
                .to_string();
            (label, Vec::new())
        });
        e.1.push((x, i));
    }
    for (t, (label, vals)) in by_template {
        let label = if label.is_empty() {
            "date".to_string()
        } else {
            label
        };
        let label = format!("{label} (in lines like L{})", u.templates[t].first);
        let named = names_label(&label);
        push(&mut out, label, vals, None, named);
    }
    out
}

/// Adds a series of [`MIN_DATED`] or more values holding two dates or more.
fn push(
    out: &mut Vec<DateSeries>,
    label: String,
    vals: Vec<(f64, usize)>,
    field: Option<usize>,
    named: bool,
) {
    if vals.len() < MIN_DATED || vals.iter().all(|v| v.0 == vals[0].0) {
        return;
    }
    let ups = vals.windows(2).filter(|w| w[1].0 > w[0].0).count();
    let clock = ups * 10 >= (vals.len() - 1) * 9;
    out.push(DateSeries {
        label,
        vals,
        field,
        named,
        clock,
    });
}

#[cfg(test)]
mod tests {
    use super::first_date;

    fn day(text: &str) -> Option<i64> {
        first_date(text).map(|(s, _)| s as i64 / 86_400)
    }

    #[test]
    fn reads_the_common_calendar_formats() {
        let d = |y, m, dd| {
            chrono::NaiveDate::from_ymd_opt(y, m, dd)
                .unwrap()
                .signed_duration_since(chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap())
                .num_days()
        };
        assert_eq!(
            day("Not After : Mar  3 12:09:48 2023 GMT"),
            Some(d(2023, 3, 3))
        );
        assert_eq!(
            day("\"upload_time\": \"2024-05-29T15:37:49\""),
            Some(d(2024, 5, 29))
        );
        assert_eq!(
            day("Date:   Mon Jan 15 12:00:00 2024 +0100"),
            Some(d(2024, 1, 15))
        );
        assert_eq!(
            day("-rw-r--r-- 1 root root 12 Jan 15  2021 a.txt"),
            Some(d(2021, 1, 15))
        );
        assert_eq!(
            day("Last-Modified: Wed, 29 May 2024 15:37:49 GMT"),
            Some(d(2024, 5, 29))
        );
        assert_eq!(
            day("1.2.3.4 - - [29/May/2024:15:37:49 +0000] \"GET /\""),
            Some(d(2024, 5, 29))
        );
        assert_eq!(day("ZZZZ,T0086,13:19:58,07-DEC-2012"), Some(d(2012, 12, 7)));
        // The earlier of two formats on a line is its date.
        assert_eq!(day("2020-02-01 built on Mar 3 2023"), Some(d(2020, 2, 1)));
    }

    #[test]
    fn leaves_what_is_no_date() {
        assert_eq!(day("version 1.2.3 build 20240529"), None);
        assert_eq!(day("2023-02-30"), None, "no such day");
        assert_eq!(day("port 8080-9090-1234"), None);
        assert_eq!(day("Mar 3 12:09"), None, "no year: which one is unknown");
        // The time of day orders two dates of one day.
        let a = first_date("2024-05-29 10:00:00").unwrap().0;
        let b = first_date("2024-05-29 11:00:00").unwrap().0;
        assert!(b > a);
    }
}
