//! The records a question picks by a value it names: "which *domains*" among records whose
//! `type` is `domain`, `ip-dst`, `sha1`; "which MRs were *merged*" among `state` values
//! `opened`, `closed`, `merged`. The answer is those records' names, and a list of them as
//! the file writes them (`"value": "servicecdp.com"`) is what a reader needs, not the counts
//! per value (issue 17, mechanism 3: the rare value the question is about).
//!
//! Nothing here knows a format: the field is any categorical field ([`Dist::categorical`]),
//! the value any of its values that the question names (the word itself, or another form of
//! it by [`stem`]), and the name shown the field of those records whose values differ the most
//! (not a number, an id of hex digits or a date).

use std::collections::{HashMap, HashSet};

use super::mining::shown_path;
use super::set_aside::set_aside;
use super::{number, Dist, Fact};
use crate::guard::reduce::rank::{stem, Query};
use crate::guard::reduce::select::Headers;
use crate::guard::reduce::show_line_max;
use crate::guard::reduce::units::{UnitKind, Units};

/// Most records a chosen value may have: more are a listing, not a choice.
pub(super) const MAX_CHOSEN: usize = 60;
/// Most names listed in one fact.
const MAX_LISTED: usize = 8;
/// Longest name shown, in bytes.
const MAX_NAME_BYTES: usize = 100;
/// Weight of the fact: the question names the value, so the list is its answer; it ranks
/// above the records past a threshold the question states and the best word matches (1.0):
/// at 0.9 it lost to them (the list of 'up' ports behind lines that only hold the word); at
/// 1.0 it tied with one of the records it lists, which took the channel's room first (the six
/// CVEs of a STIX bundle's `vulnerability` records, four shown one by one; dev +2 at 1.05).
const WEIGHT: f64 = 1.05;
/// Keys whose values name their records (compared with the key's last segment, lowercase).
const NAME_KEYS: &[&str] = &[
    "name",
    "title",
    "value",
    "summary",
    "subject",
    "path",
    "file",
    "filename",
    "url",
    "key",
    "label",
    "host",
    "hostname",
    "package",
    "package_name",
    "address",
    "addr",
    "username",
];
/// Most words of a value the question can name word by word.
const MAX_VALUE_WORDS: usize = 3;
/// Most pairs from a record's name to the value it is listed by for the two to be shown
/// together as the file writes them ([`Unit::span`]).
const MAX_SPAN_PAIRS: usize = 3;
/// Bytes of names after which no more are listed: eight short names, or about five shown
/// with the value they are listed by ([`MAX_SPAN_PAIRS`]); a longer list cost a third of the
/// summary and lost its room to other facts.
const MAX_LIST_BYTES: usize = 520;
/// Most such facts for one input.
const MAX_FACTS: usize = 2;

/// True when the question names `value`: one of its words is the value (any case), or has its
/// stem (`domains` names `domain`), for a one-word value of 3+ letters.
pub(super) fn named(value: &str, q: &Query) -> bool {
    let v = value.trim().to_ascii_lowercase();
    // A value of a few words (`UNUSUAL EVENT`, `Accepted password`) is named when the
    // question has each of its words.
    let words: Vec<&str> = v.split_whitespace().collect();
    if (2..=MAX_VALUE_WORDS).contains(&words.len()) {
        // Its short words (`in`, `of`) are the question's stopwords: the others name it.
        let long: Vec<&&str> = words.iter().filter(|w| w.len() >= 3).collect();
        return !long.is_empty() && long.iter().all(|w| named(w, q));
    }
    // A two-letter value (`up`, `ok`, `no`) is named by the question's own word, whole: no
    // stem or other form of so short a word is safe.
    if v.len() == 2 && v.chars().all(|c| c.is_ascii_alphabetic()) {
        return q.terms.get(&v) == Some(&1.0);
    }
    if v.len() < 3
        || !v
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == '-' || c == '_')
    {
        return false;
    }
    let st = stem(&v);
    // A compound value (`ip-dst`) is named by its first part too: "IPs".
    let head = v.split(['-', '_']).next().unwrap_or(&v);
    q.names.iter().any(|n| {
        *n == v
            || (n.len() >= 4 && stem(n) == st)
            || (head.len() >= 2 && head != v && n.strip_suffix('s') == Some(head))
    })
}

/// True for a value that names nothing a reader would look for: a number, a date or time, an
/// id of hex digits (`5a3ce58a-6e14-...`), a boolean.
fn is_name(v: &str) -> bool {
    let v = v.trim().trim_matches('"');
    if v.len() < 2 || v.len() > MAX_NAME_BYTES || number(v).is_some() {
        return false;
    }
    if matches!(v, "true" | "false" | "null") {
        return false;
    }
    // A hash names nothing a reader knows; an id with its kind before a dash (`i-2e3d…`,
    // `vol-0a1b…`, `sg-…`, as AWS writes them) names one record.
    let hex = v.chars().filter(|c| c.is_ascii_hexdigit()).count();
    let kind_prefixed = v.split_once('-').is_some_and(|(k, rest)| {
        (1..=6).contains(&k.len())
            && k.chars().all(|c| c.is_ascii_lowercase())
            && rest.chars().all(|c| c.is_ascii_hexdigit())
    });
    if hex >= 16 && hex * 10 >= v.len() * 8 && !kind_prefixed {
        return false;
    }
    // A date or time starts with a digit and holds a colon or only digits and separators.
    !(v.starts_with(|c: char| c.is_ascii_digit())
        && (v.contains(':') || !v.chars().any(|c| c.is_ascii_alphabetic())))
}

/// True when the question negates `value` ("neighbors that are *not Established*", "steps that
/// did *not pass*" for `passed`): a one-word value whose stem is one of [`Query::negated`].
fn negated(value: &str, q: &Query) -> bool {
    let v = value.trim().to_ascii_lowercase();
    v.len() >= 3 && v.chars().all(|c| c.is_ascii_alphabetic()) && q.negated.contains(&stem(&v))
}

/// True when the question negates the key that ends field `name` ("without PIE" for `pie`,
/// "not enabled" for `enabled`).
fn field_negated(name: &str, q: &Query) -> bool {
    let own = name.rsplit(['.', '/']).next().unwrap_or(name);
    let own = own.trim_start_matches('@').to_ascii_lowercase();
    own.len() >= 2
        && own
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && q.negated.contains(&stem(&own))
}

/// True for a value that says a yes/no property is absent (`no`, `false`, `0`, `off`,
/// `disabled`, `n`, `none`).
fn is_no(v: &str) -> bool {
    let v = v.trim().trim_matches('"');
    [
        "no", "false", "0", "off", "disabled", "n", "none", "missing", "absent",
    ]
    .iter()
    .any(|x| v.eq_ignore_ascii_case(x))
}

/// Records a question picks: the field id, what picks them as a fact shows it, the indices
/// of the units, whether the question negates the value (the records hold any other), and
/// whether they are its answer by themselves, above the records that share its words: picked
/// by a value it negates ("not Established"), by the "no" of a field it negates ("without
/// PIE").
type Pick = (usize, String, Vec<usize>, bool, bool);

/// The keys the question calls keys that pick some records ([`keyed`], first), then each value
/// the question names that picks some records, in field order: (field id, what picks them as
/// the fact shows it (the field's path and the value, or the key's path), the indices of the units holding it, whether the question
/// negates the value). A categorical field's value held by at most [`MAX_CHOSEN`] records
/// and 60% of them; a list's items
/// (`features.default[]`) hold a value among others and class no record. A value the
/// question negates picks the records with any other value of its field, when those are at
/// most [`MAX_CHOSEN`] and fewer than half: "not Established" among 52 `Established`, 4
/// `Idle` and 1 `Shut` picks the 5.
fn picks(u: &Units, dists: &[Dist], q: &Query) -> Vec<Pick> {
    // A key the question calls one first: it says what it asks about in so many words.
    let mut out = keyed(u, q);
    let holding = |f: usize, keep: &dyn Fn(&str) -> bool| -> Vec<usize> {
        (0..u.units.len())
            .filter(|&i| u.units[i].fields.iter().any(|(g, v)| *g == f && keep(v)))
            .collect()
    };
    for (f, d) in dists.iter().enumerate() {
        if d.name.ends_with("[]") {
            continue;
        }
        let what = |v: &str| format!("{} {}", shown_path(&d.name), show_line_max(v, 60));
        // A list set aside needs only values that repeat, not few of them (`cargo
        // metadata`'s 386 crates hold 30 licence expressions).
        if !d.open && d.counts.len() >= 2 && d.counts.len() * 2 <= d.n {
            if let Some((label, other)) = set_aside(d, q) {
                let recs = holding(f, &|v| other.contains(v));
                out.push((f, what(&format!("other than {label}")), recs, true, true));
            }
        }
        if !d.categorical() {
            continue;
        }
        // A yes/no field the question names as lacking ("binaries built *without PIE*" over
        // `"pie":"no"` in 15 of 620): the records holding its "no" are the answer.
        if d.counts.len() <= 3 && field_negated(&d.name, q) {
            if let Some((value, count)) = d.counts.iter().find(|(v, _)| is_no(v)) {
                if *count <= MAX_CHOSEN && count * 2 < d.n {
                    out.push((f, what(value), holding(f, &|v| v == value), false, true));
                    continue;
                }
            }
        }
        for (value, count) in &d.counts {
            if negated(value, q) {
                let others = d.n - count;
                if others > 0 && others <= MAX_CHOSEN && others * 2 < d.n {
                    let recs = holding(f, &|v| v != value);
                    out.push((f, what(&format!("other than {value}")), recs, true, true));
                }
                continue;
            }
            if *count > MAX_CHOSEN || count * 5 > d.n * 3 || !named(value, q) {
                continue;
            }
            out.push((f, what(value), holding(f, &|v| v == value), false, false));
        }
    }
    out
}

/// The records that hold a key the question names when only some records do (`fields ›
/// decorator` in 8 of 324 tree-sitter node types: "which node types have a decorator
/// field?"): for each path prefix ending in a key one of the question's words names, the
/// records holding any field under it, when they are at most [`MAX_CHOSEN`] and 60% of the
/// records of their kind (same [`Unit::context`]); what picks them is the prefix as the fact
/// shows it.
fn keyed(u: &Units, q: &Query) -> Vec<Pick> {
    let mut prefixes: Vec<(String, Vec<usize>)> = Vec::new();
    for (f, field) in u.fields.iter().enumerate() {
        let segs: Vec<&str> = field.name.split(['.', '/']).collect();
        let Some(k) = segs
            .iter()
            .position(|seg| key_named(seg.trim_end_matches("[]"), q))
        else {
            continue;
        };
        let prefix = segs[..=k].join(".");
        match prefixes.iter_mut().find(|(p, _)| *p == prefix) {
            Some((_, fs)) => fs.push(f),
            None => prefixes.push((prefix, vec![f])),
        }
    }
    let mut out = Vec::new();
    for (prefix, fs) in prefixes {
        let recs: Vec<usize> = (0..u.units.len())
            .filter(|&i| {
                u.units[i].kind == UnitKind::Record
                    && u.units[i].fields.iter().any(|(g, _)| fs.contains(g))
            })
            .collect();
        let Some(&first) = recs.first() else {
            continue;
        };
        let context = &u.units[first].context;
        let total = u
            .units
            .iter()
            .filter(|x| x.kind == UnitKind::Record && x.context == *context)
            .count();
        if recs.len() > MAX_CHOSEN || recs.len() * 5 > total * 3 {
            continue;
        }
        out.push((fs[0], shown_path(&prefix), recs, false, false));
    }
    out
}

/// True when a question's word names key `seg` (3+ letters, the word itself or its stem).
fn key_named(seg: &str, q: &Query) -> bool {
    let k = seg.to_ascii_lowercase();
    k.len() >= 3
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && q.keys
            .iter()
            .any(|n| *n == k || (n.len() >= 4 && stem(n) == stem(&k)))
}

/// The records a value the question names picks (unit index, field id, whether the question
/// negates the value), as [`chosen`] lists.
/// The third member is true for records that are the question's answer by themselves (see
/// [`Pick`]): the caller ranks them above the records that merely share its words.
pub fn picked(u: &Units, dists: &[Dist], q: &Query) -> Vec<(usize, usize, bool)> {
    picks(u, dists, q)
        .into_iter()
        .flat_map(|(f, _, recs, _, answer)| recs.into_iter().map(move |i| (i, f, answer)))
        .collect()
}

/// Facts listing the records picked by a key the question calls one ([`keyed`]) or a value it
/// names, at most [`MAX_FACTS`].
/// Records with no field that names them (lines of indented text: `BGP state = Idle`) are
/// listed by the line that opens each one's block in `headers` (`BGP neighbor is 10.0.0.1`),
/// with the value each holds.
pub fn chosen(u: &Units, dists: &[Dist], q: &Query, headers: &Headers) -> Vec<Fact> {
    let mut out = Vec::new();
    let mut listed: HashMap<usize, HashSet<usize>> = HashMap::new();
    let mut names: HashSet<String> = HashSet::new();
    for (f, what, recs, negated, _) in picks(u, dists, q) {
        // Records picked by what they are not hold values of their own: each is shown.
        let own = negated.then_some(f);
        let (by, shown) = match naming_field(u, dists, f, &recs) {
            Some(g) => (shown_path(&u.fields[g].name), by_field(u, g, own, &recs)),
            None if !u.structured && !headers.is_empty() => (
                "the line that opens each".to_string(),
                by_header(u, f, &recs, headers),
            ),
            None => continue,
        };
        // The same records picked again, by another field (`type` and `object_relation`
        // both `domain`: the same names) or by the value of the field the question negates
        // (`up`, and "the rest being down": the same records), are listed once.
        let same = listed.entry(f).or_default();
        if shown.is_empty()
            || recs.iter().all(|i| same.contains(i))
            || shown.iter().all(|x| names.contains(x))
        {
            continue;
        }
        same.extend(recs.iter().copied());
        names.extend(shown.iter().cloned());
        let more = if recs.len() > shown.len() {
            format!("; {} records in all", recs.len())
        } else {
            String::new()
        };
        // Records picked by what they are not, too many to show each: which values they
        // hold, most held first (`Unicode-3.0 ×18` of 59 crates of other licences).
        if negated && recs.len() > shown.len() {
            out.push(Fact {
                text: format!(
                    "values of {what} in {} records: {}",
                    crate::guard::reduce::count(recs.len()),
                    held_values(u, f, &recs)
                ),
                line: None,
                weight: WEIGHT,
                answers: true,
            });
        }
        out.push(Fact {
            text: format!("records with {what}, by {by}: {}{more}", shown.join("; ")),
            line: None,
            weight: WEIGHT,
            answers: true,
        });
        if out.len() >= MAX_FACTS {
            break;
        }
    }
    out
}

/// Most values [`held_values`] lists; the rest are counted.
const MAX_HELD_VALUES: usize = 8;

/// The values of field `f` that records `recs` hold, most held first (then as the file
/// first holds them), each with its count: `Unicode-3.0 ×18, ISC ×2, and 9 more values`.
fn held_values(u: &Units, f: usize, recs: &[usize]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for &i in recs {
        for (g, v) in &u.units[i].fields {
            if *g == f {
                match counts.iter_mut().find(|(x, _)| *x == v.as_str()) {
                    Some(c) => c.1 += 1,
                    None => counts.push((v.as_str(), 1)),
                }
            }
        }
    }
    // Stable: equal counts keep the file's order.
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    let mut shown: Vec<String> = counts
        .iter()
        .take(MAX_HELD_VALUES)
        .map(|(v, c)| format!("{} ×{c}", show_line_max(v, 60)))
        .collect();
    if counts.len() > MAX_HELD_VALUES {
        shown.push(format!(
            "and {} more values",
            crate::guard::reduce::count(counts.len() - MAX_HELD_VALUES)
        ));
    }
    shown.join(", ")
}

/// The field that names the records `recs` picked by field `f`: the one whose values differ
/// the most among them, a key that says "name" first, then a field of one value per record;
/// one value for several records names none of them.
fn naming_field(u: &Units, dists: &[Dist], f: usize, recs: &[usize]) -> Option<usize> {
    let mut distinct: HashMap<usize, HashSet<&str>> = HashMap::new();
    for &i in recs {
        for (g, v) in &u.units[i].fields {
            if *g != f && is_name(v) && !dists[*g].categorical() {
                distinct.entry(*g).or_default().insert(v.as_str());
            }
        }
    }
    let rank = |g: usize, n: usize| {
        let name = &u.fields[g].name;
        // A column header's last word: `Site Name` is a name.
        let own = name.rsplit(['.', '/', ' ']).next().unwrap_or(name);
        // A value inside a list (`Tags[] › Key`, one of a record's several tags) names no
        // record while a field of the record's own does (`InstanceId`).
        let list = name.contains("[]");
        let own = own
            .trim_start_matches('@')
            .trim_end_matches("[]")
            .to_ascii_lowercase();
        let id = own == "id" || own.ends_with("_id") || own.ends_with("id") && own.len() > 4;
        // Of two such, the one no two records share (`InstanceId`, not the `ImageId` many
        // instances run).
        let unique = dists[g].counts.first().is_none_or(|c| c.1 == 1);
        (!list, NAME_KEYS.contains(&own.as_str()), id, unique, n)
    };
    distinct
        .iter()
        .filter(|(_, v)| v.len() >= 2 || recs.len() == 1)
        .max_by(|a, b| {
            rank(*a.0, a.1.len())
                .cmp(&rank(*b.0, b.1.len()))
                .then(b.0.cmp(a.0))
        })
        .map(|(g, _)| *g)
}

/// The records `recs` shown by their field `g` as the file writes it (`"value": "x.com" (L12)`),
/// each name once, at most [`MAX_LISTED`]; with field `own`'s pair after it when given (`"name":
/// "ryu" (L7524): "license": "Apache-2.0 OR BSL-1.0"`).
fn by_field(u: &Units, g: usize, own: Option<usize>, recs: &[usize]) -> Vec<String> {
    // As the file writes it when the unit keeps its pairs, else the raw value.
    let pair_of = |unit: &crate::guard::reduce::units::Unit, k: usize| {
        unit.pairs
            .get(k)
            .map(|p| p.trim_end_matches(',').to_string())
            .unwrap_or_else(|| unit.fields[k].1.clone())
    };
    let mut shown: Vec<String> = Vec::new();
    let mut names: HashSet<String> = HashSet::new();
    for &i in recs {
        let unit = &u.units[i];
        let Some(k) = unit.fields.iter().position(|(h, _)| *h == g) else {
            continue;
        };
        let pair = pair_of(unit, k);
        let j = own.and_then(|f| unit.fields.iter().position(|(h, _)| *h == f));
        // The name and the value a few pairs after it are shown as the file writes them
        // together, the pairs between them included: one quote a reader can find, not two.
        let together = j
            .filter(|&j| j > k && j - k <= MAX_SPAN_PAIRS)
            .and_then(|j| unit.span(k, j))
            .filter(|t| t.len() <= 2 * MAX_NAME_BYTES);
        let mut s = format!(
            "{} (L{})",
            show_line_max(
                together.as_deref().unwrap_or(&pair),
                2 * MAX_NAME_BYTES + 20
            ),
            unit.line
        );
        if let (Some(j), None) = (j, &together) {
            s.push_str(&format!(
                ": {}",
                show_line_max(&pair_of(unit, j), MAX_NAME_BYTES)
            ));
        }
        // Each name once, whether shown alone or with its value.
        if names.insert(pair) {
            shown.push(s);
        }
        let bytes: usize = shown.iter().map(String::len).sum();
        if shown.len() >= MAX_LISTED || bytes >= MAX_LIST_BYTES {
            break;
        }
    }
    shown
}

/// The records `recs` shown by the line that opens each one's block, with the value of field
/// `f` it holds (`BGP neighbor is 10.0.0.1 (L411): Idle`), at most [`MAX_LISTED`]; records
/// outside any block are left out.
fn by_header(u: &Units, f: usize, recs: &[usize], headers: &Headers) -> Vec<String> {
    let mut shown: Vec<String> = Vec::new();
    for &i in recs {
        let unit = &u.units[i];
        let Some((h, text)) = headers.of_line(unit.line) else {
            continue;
        };
        let value = unit
            .fields
            .iter()
            .find(|(g, _)| *g == f)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default();
        shown.push(format!(
            "{} (L{h}): {}",
            show_line_max(text.trim(), MAX_NAME_BYTES + 20),
            show_line_max(value, 40)
        ));
        if shown.len() >= MAX_LISTED {
            break;
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::reduce::signals::field_dists;
    use crate::guard::reduce::units::build;
    use crate::guard::reduce::Kind;

    #[test]
    fn a_record_is_named_by_its_own_unique_id_not_a_shared_one_or_a_listed_tag() {
        assert!(is_name("i-2e3dd7285e653e574"));
        assert!(!is_name("1e59b61ec3662be30b817d3125fca946231f0"));
        let recs: Vec<serde_json::Value> = (0..12)
            .map(|i| {
                serde_json::json!({
                    "ImageId": "ami-03cf127a",
                    "InstanceId": format!("i-0{:016x}", 0x2e3dd7285e653e57u64 + i),
                    "State": {"Code": if i == 7 { 80 } else { 16 }, "Name": if i == 7 { "stopped" } else { "running" }},
                    "Tags": [{"Key": "Name", "Value": format!("web-{i}")}],
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({"Instances": recs})).unwrap();
        let u = build(&text, Kind::Json);
        let dists = field_dists(&u);
        let q = Query::new("Which instance is stopped?");
        let facts = chosen(&u, &dists, &q, &Headers::default());
        let f = facts
            .iter()
            .find(|f| f.text.contains("stopped"))
            .unwrap_or_else(|| panic!("{facts:?}"));
        assert!(f.text.contains("by InstanceId"), "{}", f.text);
        assert!(f.text.contains("i-02e3dd7285e653e5e"), "{}", f.text);
    }

    #[test]
    fn the_records_a_named_value_picks_are_listed_by_their_name() {
        let mut recs = Vec::new();
        for i in 0..30 {
            let (ty, v) = match i % 10 {
                0 => ("domain", format!("c2-{i}.example.com")),
                1 => ("ip-dst", format!("10.0.0.{i}")),
                _ => ("sha1", format!("{:040x}", i * 7919)),
            };
            recs.push(serde_json::json!({
                "id": format!("{}", 1000 + i),
                "type": ty,
                "uuid": format!("5a3ce58a-6e14-48ea-9746-{:012x}", i),
                "value": v,
            }));
        }
        let text = serde_json::to_string_pretty(&serde_json::json!({ "Attribute": recs })).unwrap();
        let u = build(&text, Kind::Json);
        let d = field_dists(&u);
        let q = Query::new("Which C2 domains does this event contain?");
        let f = chosen(&u, &d, &q, &Headers::default());
        assert_eq!(f.len(), 1, "{f:?}");
        for i in [0, 10, 20] {
            let pair = format!("\"value\": \"c2-{i}.example.com\"");
            assert!(f[0].text.contains(&pair), "{}", f[0].text);
        }
        assert!(!f[0].text.contains("10.0.0."), "{}", f[0].text);
        // Every quoted pair is the file's own text.
        assert!(text.contains("\"value\": \"c2-10.example.com\""));
        // A question that names no value picks nothing; nor does the value most records hold.
        let none = |q: &str| chosen(&u, &d, &Query::new(q), &Headers::default()).is_empty();
        assert!(none("what does this event contain?"));
        assert!(none("list the sha1 hashes"));
    }

    #[test]
    fn the_records_holding_a_key_the_question_names_are_listed_by_their_name() {
        // Node types of a grammar: 60 records, 5 of them with a `decorator` field.
        let recs: Vec<_> = (0..60)
            .map(|i| {
                let mut fields = serde_json::json!({
                    "body": { "multiple": false, "types": [{ "type": "statement_block" }] }
                });
                if i % 12 == 5 {
                    fields["decorator"] =
                        serde_json::json!({ "multiple": true, "types": [{ "type": "decorator" }] });
                }
                serde_json::json!({ "type": format!("node_{i}"), "named": true, "fields": fields })
            })
            .collect();
        let text = serde_json::to_string_pretty(&recs).unwrap();
        let u = build(&text, Kind::Json);
        let d = field_dists(&u);
        let q = Query::new("Which node types have a 'decorator' field?");
        assert_eq!(q.keys, ["decorator"]);
        let f = chosen(&u, &d, &q, &Headers::default());
        assert!(!f.is_empty(), "{f:?}");
        assert!(
            f[0].text
                .starts_with("records with fields › decorator, by type:"),
            "{}",
            f[0].text
        );
        for i in (0..60).filter(|i| i % 12 == 5) {
            let pair = format!("\"type\": \"node_{i}\"");
            assert!(f[0].text.contains(&pair), "{}", f[0].text);
            assert!(text.contains(&pair));
        }
        assert!(!f[0].text.contains("\"node_0\""), "{}", f[0].text);
        // A key every record holds picks none; a word not called a key is no key.
        let none = |q: &str| chosen(&u, &d, &Query::new(q), &Headers::default()).is_empty();
        assert!(none("Which node types have a 'body' field?"));
        assert!(none("Which node types take a decorator?"));
    }

    #[test]
    fn a_two_letter_value_is_named_by_the_word_itself() {
        let q = Query::new("Which ports are operationally up?");
        assert!(named("up", &q) && named("UP", &q));
        assert!(!named("ok", &q) && !named("u", &q));
        // A stopword names nothing.
        assert!(!named("on", &Query::new("which features are on?")));
    }

    #[test]
    fn a_value_of_a_few_words_is_named_by_each_of_them_and_picks_its_records() {
        let q = Query::new("Which events were classified above non-emergency (Unusual Event)?");
        assert!(named("UNUSUAL EVENT", &q));
        let idle = Query::new("Which backend is sitting 'idle in transaction'?");
        assert!(named("idle in transaction", &idle));
        assert!(!named("idle in recovery", &idle));
        assert!(!named("Power Reactor", &q));
        assert!(!named("UNUSUAL EVENT DECLARED TODAY", &q));
        let recs: Vec<_> = (0..30)
            .map(|i| {
                let class = if i % 10 == 3 {
                    "UNUSUAL EVENT"
                } else {
                    "NON EMERGENCY"
                };
                serde_json::json!({ "site": format!("SITE {i}"), "class": class })
            })
            .collect();
        let text = serde_json::to_string_pretty(&recs).unwrap();
        let u = build(&text, Kind::Json);
        let d = field_dists(&u);
        let picked = picked(&u, &d, &q);
        let sites: Vec<&str> = picked
            .iter()
            .map(|&(i, _, _)| u.units[i].fields[0].1.as_str())
            .collect();
        assert_eq!(sites, ["SITE 3", "SITE 13", "SITE 23"], "{picked:?}");
        let f = chosen(&u, &d, &q, &Headers::default());
        assert!(f[0].text.contains("\"site\": \"SITE 13\""), "{f:?}");
    }

    #[test]
    fn a_value_the_question_negates_picks_the_records_of_every_other_value() {
        let recs: Vec<_> = (0..30)
            .map(|i| {
                let phase = match i {
                    7 | 19 => "Pending",
                    23 => "Failed",
                    _ => "Running",
                };
                serde_json::json!({ "name": format!("web-{i}"), "phase": phase })
            })
            .collect();
        let text = serde_json::to_string_pretty(&recs).unwrap();
        let u = build(&text, Kind::Json);
        let d = field_dists(&u);
        let q = Query::new("Which pods are not Running?");
        let names: Vec<&str> = picked(&u, &d, &q)
            .iter()
            .map(|&(i, _, _)| u.units[i].fields[0].1.as_str())
            .collect();
        assert_eq!(names, ["web-7", "web-19", "web-23"]);
        let f = chosen(&u, &d, &q, &Headers::default());
        assert!(f[0].text.contains("other than Running"), "{f:?}");
        // Each name with its value as the file writes the two together: one quote to find.
        assert!(
            f[0].text
                .contains("\"name\": \"web-23\", \"phase\": \"Failed\" (L"),
            "{f:?}"
        );
        assert!(f[0].text.contains("\"name\": \"web-23\""), "{f:?}");
        // Negating the rare value picks nothing: the rest are the many.
        assert!(picked(&u, &d, &Query::new("which pods are not Pending?")).is_empty());
    }

    /// A pretty-printed JSON array of `n` crates (`crate0`, …) with the licence `license(i)`.
    fn crates(n: usize, license: impl Fn(usize) -> &'static str) -> String {
        let recs: Vec<_> = (0..n)
            .map(|i| serde_json::json!({ "name": format!("crate{i}"), "license": license(i) }))
            .collect();
        serde_json::to_string_pretty(&recs).unwrap()
    }

    /// Too many records of other values to show each: the values they hold are counted, the
    /// most held first, and a choice that offers a listed licence is no other (when the strict
    /// reading picks too many).
    #[test]
    fn many_records_set_aside_are_told_by_the_values_they_hold() {
        let text = crates(400, |i| match i {
            _ if i % 20 == 3 => "Unicode-3.0",
            _ if i % 50 == 7 => "ISC",
            _ if i % 10 == 5 => "MIT OR Zlib",
            _ if i % 2 == 0 => "MIT OR Apache-2.0",
            _ => "MIT",
        });
        let u = build(&text, Kind::Json);
        let d = field_dists(&u);
        let q = Query::new("which crates have licenses other than MIT/Apache-2.0?");
        let f = chosen(&u, &d, &q, &Headers::default());
        let values = f
            .iter()
            .find(|x| {
                x.text
                    .starts_with("values of license other than MIT and Apache-2.0")
            })
            .unwrap_or_else(|| panic!("{f:?}"));
        // 20 Unicode-3.0 and 8 ISC; `MIT OR Zlib` (40, too many with them) is no other.
        assert_eq!(
            values.text,
            "values of license other than MIT and Apache-2.0 in 28 records: Unicode-3.0 ×20, ISC ×8"
        );
    }

    #[test]
    fn a_list_the_question_sets_aside_picks_the_records_of_any_other_value() {
        let text = crates(30, |i| match i {
            4 => "Apache-2.0 OR BSL-1.0",
            17 => "(MIT OR Apache-2.0) AND Unicode-DFS-2016",
            _ if i % 3 == 0 => "Unlicense/MIT",
            _ if i % 3 == 1 => "MIT OR Apache-2.0",
            _ => "MIT",
        });
        let u = build(&text, Kind::Json);
        let d = field_dists(&u);
        let q = Query::new("Do any crates use licenses other than plain MIT/Apache-2.0/Unlicense?");
        assert_eq!(q.set_aside, ["plain", "MIT", "Apache-2.0", "Unlicense"]);
        // A word that only begins with a phrase opens no list.
        assert!(Query::new("Which exceptions hit the crates?")
            .set_aside
            .is_empty());
        let names: Vec<&str> = picked(&u, &d, &q)
            .iter()
            .map(|&(i, _, _)| u.units[i].fields[0].1.as_str())
            .collect();
        assert_eq!(names, ["crate4", "crate17"]);
        let f = chosen(&u, &d, &q, &Headers::default());
        assert!(
            f[0].text
                .contains("other than MIT, Apache-2.0 and Unlicense"),
            "{f:?}"
        );
        // The fact states nothing the input does not say (it is not dropped as invented).
        let invented =
            crate::bench::score::invented(&f[0].text, &crate::bench::score::collapse(&text), &[]);
        assert!(invented.is_empty(), "{invented:?} in {f:?}");
        // Picked by what they are not, each record shows the value it holds.
        assert!(
            f[0].text.contains(
                "\"name\": \"crate17\", \"license\": \"(MIT OR Apache-2.0) AND Unicode-DFS-2016\" (L"
            ),
            "{f:?}"
        );
        // A list of words no value holds picks nothing.
        let q = Query::new("which crates use licenses besides GPL-3.0 and LGPL?");
        assert_eq!(q.set_aside, ["GPL-3.0", "LGPL"]);
        assert!(picked(&u, &d, &q).is_empty());
    }

    #[test]
    fn records_of_indented_text_are_listed_by_the_line_that_opens_them() {
        let mut text = String::new();
        for i in 0..30 {
            let state = if i == 4 || i == 17 {
                "Idle"
            } else {
                "Established"
            };
            text.push_str(&format!(
                "neighbor is 10.0.0.{i}, remote AS {}\n  peer state = {state}, for 1d\n  table version {}\n",
                64000 + i,
                i * 7
            ));
        }
        let u = build(&text, Kind::Lines);
        let d = field_dists(&u);
        let q = Query::new("Which neighbors are not Established?");
        let f = chosen(&u, &d, &q, &Headers::of(&text));
        assert_eq!(f.len(), 1, "{f:?}");
        let t = &f[0].text;
        assert!(
            t.contains("neighbor is 10.0.0.4, remote AS 64004 (L13): Idle"),
            "{t}"
        );
        assert!(
            t.contains("neighbor is 10.0.0.17, remote AS 64017 (L52): Idle"),
            "{t}"
        );
        assert!(!t.contains("10.0.0.5,"), "{t}");
        // Without headers the lines name nothing, and no fact is written.
        assert!(chosen(&u, &d, &q, &Headers::default()).is_empty());
    }

    #[test]
    fn a_yes_no_field_the_question_negates_picks_the_records_that_say_no() {
        let mut rows = Vec::new();
        for i in 0..40 {
            let pie = if i % 10 == 3 { "no" } else { "yes" };
            rows.push(
                serde_json::json!({"filename": format!("/usr/bin/b{i}"), "pie": pie, "nx": "yes"}),
            );
        }
        let text = serde_json::to_string_pretty(&rows).unwrap();
        let u = build(&text, Kind::Json);
        let d = field_dists(&u);
        let q = Query::new("Which binaries are built without PIE?");
        let p = picked(&u, &d, &q);
        let names: Vec<&str> = p
            .iter()
            .map(|(i, _, _)| u.units[*i].text.as_str())
            .collect();
        assert_eq!(p.len(), 4, "{names:?}");
        assert!(p.iter().all(|(_, _, answer)| *answer));
        assert!(
            names.iter().all(|t| t.contains("\"pie\": \"no\"")),
            "{names:?}"
        );
        let f = chosen(&u, &d, &q, &Headers::default());
        assert!(
            f[0].text
                .starts_with("records with pie no, by filename: \"filename\": \"/usr/bin/b3\""),
            "{f:?}"
        );
        // Asked for the ones with it, nothing is picked by its absence.
        assert!(picked(&u, &d, &Query::new("Which binaries are built with PIE?")).is_empty());
    }

    #[test]
    fn names_are_not_numbers_dates_or_hex_ids() {
        assert!(is_name("servicecdp.com"));
        assert!(is_name("Quarantine failing test"));
        assert!(is_name("3d-secure"));
        for not in [
            "1513940362",
            "2019-08-20T08:15:51.244Z",
            "5a3ce58a-6e14-48ea-9746-48f2950d210f",
            "true",
            "x",
        ] {
            assert!(!is_name(not), "{not}");
        }
    }
}
