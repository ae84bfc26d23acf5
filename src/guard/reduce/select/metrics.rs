//! Metrics in the Prometheus text exposition format (what `curl host:9100/metrics` returns
//! from any exporter: node_exporter, kube-state-metrics, a VMware or database exporter).
//!
//! Each sample line is `family{label="v",...} value [timestamp]`; `# HELP` and `# TYPE` lines
//! describe a family. The line miner sees `family{...}` as one word, so every family's
//! samples fall into one template and a ranking over it compares bytes with temperatures. Here
//! a sample's family is its own: for the families the question names (by the words of the
//! family's name and its `# HELP` text: "free space" names `vmware_datastore_freespace_size`;
//! a word it negates, or a state's opposite: "down" names `up`; a histogram's or summary's
//! `_count`, `_sum` and `_bucket` series by their family's help), the samples that answer are
//! quoted as the file writes them, a sample written twice once:
//!
//! - a family whose samples all hold one value: one of them, said to stand for all;
//! - the few samples whose value differs from the one nearly all share (an `_accessible`
//!   family of `1.0` with one `0.0`: "not accessible");
//! - otherwise the extremes, ranked (`smallest`, `2nd smallest`, ...): the smallest when the
//!   question asks for the least or lowest, the largest when it asks for the most, both ends
//!   when it asks for neither;
//! - a family with a single sample is quoted whole ("how much memory": one
//!   `process_resident_memory_bytes`).
//!
//! Grammar: <https://prometheus.io/docs/instrumenting/exposition_formats/>.

use std::collections::HashMap;

use super::{Cand, Channel};
use crate::guard::reduce::intent::Asks;
use crate::guard::reduce::rank::{stem, tokenize, Query};
use crate::guard::reduce::{show_line_max, Item, Section};

/// Rank of the quoted samples in [`Channel::Relevance`]: above any line the question's words
/// match (1.0 at best), since the question names their family. In [`Channel::Kind`] a log's
/// error lines (a sensor's `Failed` label) would take their room.
const SCORE: f64 = 1.5;

/// Priority of the quoted samples: the best match of the question.
const PRIO: f64 = 1.0;

/// Share of the non-blank lines that must be samples or `#` comments for the text to be a
/// metrics exposition.
const MIN_SHARE: f64 = 0.8;

/// Fewest samples for the text to be an exposition worth reading as one.
const MIN_SAMPLES: usize = 10;

/// Most families the question may name at once; past that its words name the whole text.
const MAX_FAMILIES: usize = 3;

/// Samples quoted at each end of a named family's values.
const PER_END: usize = 3;

/// Least share of a family's samples that hold its most common value for the others to be
/// the odd ones out.
const MIN_MODE_SHARE: f64 = 0.75;

/// Most odd samples quoted for one family.
const MAX_ODD: usize = 5;

/// States and their opposites: a family of 0/1 samples is named by either ("which targets
/// are down?" names `up`, whose odd samples are the answer).
const STATES: &[(&str, &str)] = &[
    ("up", "down"),
    ("healthy", "unhealthy"),
    ("ready", "unready"),
    ("online", "offline"),
    ("available", "unavailable"),
    ("accessible", "inaccessible"),
    ("connected", "disconnected"),
    ("reachable", "unreachable"),
    ("enabled", "disabled"),
    ("running", "stopped"),
    ("success", "failure"),
];

/// Longest sample line quoted, in bytes.
const MAX_LINE_BYTES: usize = 300;

/// One sample: its family, value and 1-based line.
struct Sample {
    family: String,
    value: f64,
    raw: String,
    line: usize,
}

/// The family name and value of a sample line (`name{labels} value [timestamp]`), or `None`
/// when the line is not one.
fn sample(line: &str) -> Option<(&str, f64, &str)> {
    let t = line.trim_end();
    let name_end = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(t.len());
    let name = &t[..name_end];
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    let mut rest = &t[name_end..];
    if rest.starts_with('{') {
        // Label values may hold `}` inside quotes.
        let mut quoted = false;
        let mut escaped = false;
        let mut close = None;
        for (i, c) in rest.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = !quoted,
                '}' if !quoted => {
                    close = Some(i);
                    break;
                }
                _ => {}
            }
        }
        rest = &rest[close? + 1..];
    }
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let mut fields = rest.split_whitespace();
    let v = fields.next()?;
    let value = match v {
        "NaN" => f64::NAN,
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => v.parse::<f64>().ok()?,
    };
    // An optional integer timestamp, nothing after it.
    if let Some(ts) = fields.next() {
        if ts.parse::<i64>().is_err() || fields.next().is_some() {
            return None;
        }
    }
    Some((name, value, v))
}

/// The stemmed words of a family: its name's parts (`vmware_datastore_freespace_size` ->
/// `vmwar`, `datastor`, `freespac`, `size`) and its `# HELP` text's words, sorted, once each.
fn words_of(family: &str, help: Option<&String>) -> Vec<String> {
    let mut w: Vec<String> = family
        .split(['_', ':'])
        .filter(|p| p.len() >= 2)
        .map(|p| stem(&p.to_ascii_lowercase()))
        .collect();
    if let Some(h) = help {
        w.extend(tokenize(h));
    }
    w.sort_unstable();
    w.dedup();
    w
}

/// Candidates of [`Channel::Relevance`]: the samples of the families the question names (see the
/// module's doc); none when the text is not a metrics exposition or the question names no
/// family.
pub fn metrics(text: &str, q: &Query, asks: &Asks) -> Vec<Cand> {
    let mut samples: Vec<Sample> = Vec::new();
    let mut help: HashMap<String, String> = HashMap::new();
    let (mut lines, mut known) = (0usize, 0usize);
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        lines += 1;
        if let Some(c) = t.strip_prefix('#') {
            known += 1;
            let c = c.trim_start();
            if let Some(h) = c.strip_prefix("HELP ") {
                let mut parts = h.splitn(2, ' ');
                if let (Some(name), Some(doc)) = (parts.next(), parts.next()) {
                    help.insert(name.to_string(), doc.to_string());
                }
            }
            continue;
        }
        if let Some((name, value, _)) = sample(line) {
            known += 1;
            samples.push(Sample {
                family: name.to_string(),
                value,
                raw: line.trim_end().to_string(),
                line: i + 1,
            });
        }
    }
    if samples.len() < MIN_SAMPLES || (known as f64) < MIN_SHARE * lines as f64 {
        return Vec::new();
    }
    // Families in order of first sample.
    let mut order: Vec<&str> = Vec::new();
    let mut by: HashMap<&str, Vec<&Sample>> = HashMap::new();
    for s in &samples {
        by.entry(s.family.as_str())
            .or_insert_with(|| {
                order.push(s.family.as_str());
                Vec::new()
            })
            .push(s);
    }
    // How many of the question's own words each family's name and help hold; the families
    // holding the most are the ones asked about.
    // A word the question negates ("not accessible") names the family all the same: its
    // odd samples are the answer; so does a state's opposite ("down" names `up`).
    let opposite: Vec<String> = STATES
        .iter()
        .filter_map(|(a, b)| {
            let (a, b) = (stem(a), stem(b));
            if q.terms.contains_key(&a) {
                Some(b)
            } else if q.terms.contains_key(&b) {
                Some(a)
            } else {
                None
            }
        })
        .collect();
    let own = |w: &String| {
        q.terms.get(w).is_some_and(|&x| x >= 0.7) || q.negated.contains(w) || opposite.contains(w)
    };
    let scored: Vec<(usize, &str)> = order
        .iter()
        .map(|f| {
            // A histogram's or summary's series (`_bucket`, `_sum`, `_count`) carry the
            // family's `# HELP`.
            let base = ["_bucket", "_sum", "_count", "_total", "_created"]
                .iter()
                .find_map(|x| f.strip_suffix(x).filter(|b| help.contains_key(*b)))
                .unwrap_or(f);
            let ws = words_of(f, help.get(*f).or_else(|| help.get(base)));
            let joined = f.to_ascii_lowercase().replace(['_', ':'], "");
            // Two question words written as one in the name ("free space": `freespace`).
            let glued = q
                .terms
                .iter()
                .filter(|(t, &w)| {
                    (0.7..1.0).contains(&w) && t.len() >= 6 && joined.contains(t.as_str())
                })
                .count();
            (ws.iter().filter(|w| own(w)).count() + glued, *f)
        })
        .collect();
    let best = scored.iter().map(|s| s.0).max().unwrap_or(0);
    if best == 0 {
        return Vec::new();
    }
    // Families one word short of the best still answer a two-part question ("low on free
    // space or not accessible").
    let floor = best.saturating_sub(1).max(1);
    let named: Vec<&str> = scored
        .iter()
        .filter(|s| s.0 >= floor)
        .map(|s| s.1)
        .collect();
    if named.len() > MAX_FAMILIES {
        let top: Vec<&str> = scored.iter().filter(|s| s.0 == best).map(|s| s.1).collect();
        if top.len() > MAX_FAMILIES {
            return Vec::new();
        }
        return quote(&top, &by, asks);
    }
    quote(&named, &by, asks)
}

/// The quoted samples of each named family, best family first.
fn quote(named: &[&str], by: &HashMap<&str, Vec<&Sample>>, asks: &Asks) -> Vec<Cand> {
    let mut out: Vec<Cand> = Vec::new();
    for f in named {
        let Some(ss) = by.get(f) else { continue };
        let picked = answer(ss, asks);
        let n = ss.len();
        for (label, s) in picked {
            let text = format!(
                "[{label} of ×{n} {f}] {}",
                show_line_max(&s.raw, MAX_LINE_BYTES)
            );
            let k = out.len();
            out.push(Cand {
                item: Item::line(Section::Evidence, s.line, text, PRIO),
                channel: Channel::Relevance,
                score: SCORE - k as f64 * 0.01,
                group: None,
                rel: 1.0,
            });
        }
    }
    out
}

/// The samples of one family that answer, with their label: the odd ones out, or the
/// extremes, or the only one.
fn answer<'a>(all: &[&'a Sample], asks: &Asks) -> Vec<(String, &'a Sample)> {
    // A sample written twice (two scrapes in one output) counts once.
    let mut seen: std::collections::HashSet<&str> = Default::default();
    let ss: Vec<&Sample> = all
        .iter()
        .copied()
        .filter(|s| seen.insert(&s.raw))
        .collect();
    if ss.len() == 1 {
        return vec![("the only sample".to_string(), ss[0])];
    }
    // Every sample the same: one says so for all.
    if ss
        .iter()
        .all(|s| s.value.to_bits() == ss[0].value.to_bits())
    {
        return vec![(format!("every one the same, {}", ss[0].value_text()), ss[0])];
    }
    // The value nearly all samples share.
    let mut counts: HashMap<u64, usize> = HashMap::new();
    for s in &ss {
        *counts.entry(s.value.to_bits()).or_default() += 1;
    }
    let (mode, c) = counts
        .iter()
        .max_by_key(|(v, c)| (**c, std::cmp::Reverse(**v)))
        .map(|(v, c)| (*v, *c))
        .unwrap_or((0, 0));
    if c < ss.len() && c as f64 >= MIN_MODE_SHARE * ss.len() as f64 && ss.len() - c <= MAX_ODD {
        return ss
            .iter()
            .filter(|s| s.value.to_bits() != mode)
            .map(|s| ("odd value".to_string(), *s))
            .collect();
    }
    let mut sorted: Vec<&Sample> = ss.iter().copied().filter(|s| !s.value.is_nan()).collect();
    sorted.sort_by(|a, b| a.value.total_cmp(&b.value).then(a.line.cmp(&b.line)));
    let k = PER_END.min(sorted.len() / 2).max(1);
    let mut out: Vec<(String, &Sample)> = Vec::new();
    let low = asks.least || !asks.most;
    let high = asks.most || !asks.least;
    if low {
        out.extend(
            sorted
                .iter()
                .take(k)
                .enumerate()
                .map(|(r, s)| (format!("{}smallest", ordinal(r)), *s)),
        );
    }
    if high {
        out.extend(
            sorted
                .iter()
                .rev()
                .take(k)
                .enumerate()
                .map(|(r, s)| (format!("{}largest", ordinal(r)), *s)),
        );
    }
    out
}

/// The rank word before "smallest" or "largest": none for the first, `2nd `, `3rd `, ...
fn ordinal(r: usize) -> String {
    match r {
        0 => String::new(),
        1 => "2nd ".into(),
        2 => "3rd ".into(),
        n => format!("{}th ", n + 1),
    }
}

impl Sample {
    /// The value as the file writes it (`1`, `2.3e+07`, `NaN`).
    fn value_text(&self) -> &str {
        sample(&self.raw).map_or("", |(_, _, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An exporter's page: free space and accessibility per datastore, and sensors.
    fn page() -> String {
        let mut t = String::new();
        t.push_str("# HELP ds_freespace_size Datastore freespace in bytes\n");
        t.push_str("# TYPE ds_freespace_size gauge\n");
        for (k, free) in [9.1e11, 5.08e9, 7.7e11, 4.4e11, 0.0, 6.2e11]
            .iter()
            .enumerate()
        {
            t.push_str(&format!(
                "ds_freespace_size{{ds_name=\"ds{k}\"}} {free:e}\n"
            ));
        }
        t.push_str("# HELP ds_accessible Datastore is accessible\n# TYPE ds_accessible gauge\n");
        for k in 0..6 {
            let v = if k == 4 { "0.0" } else { "1.0" };
            t.push_str(&format!("ds_accessible{{ds_name=\"ds{k}\"}} {v}\n"));
        }
        t.push_str("# HELP sensor_state Sensor state\n# TYPE sensor_state gauge\n");
        for k in 0..12 {
            t.push_str(&format!(
                "sensor_state{{name=\"Fan {k}: Failed\"}} {}\n",
                k % 3
            ));
        }
        t
    }

    /// The quoted texts of `text` for `question`.
    fn quoted_in(text: &str, question: &str) -> Vec<String> {
        metrics(text, &Query::new(question), &Asks::of(question))
            .into_iter()
            .map(|c| c.item.text)
            .collect()
    }

    fn quoted(question: &str) -> Vec<String> {
        quoted_in(&page(), question)
    }

    #[test]
    fn the_named_family_is_quoted_by_its_answer() {
        let got = quoted("Which datastores are low on free space or not accessible?");
        let has = |label: &str, tail: &str| {
            got.iter().any(|t| {
                t.starts_with(&format!("[{label} of ×6 ds_freespace_size]")) && t.ends_with(tail)
            })
        };
        assert!(
            has("smallest", "ds_freespace_size{ds_name=\"ds4\"} 0e0"),
            "{got:?}"
        );
        assert!(has("2nd smallest", "{ds_name=\"ds1\"} 5.08e9"), "{got:?}");
        assert!(has("3rd smallest", "{ds_name=\"ds3\"} 4.4e11"), "{got:?}");
        assert!(
            got.iter().all(|t| !t.contains("9.1e11")),
            "no largest: {got:?}"
        );
        // "not accessible": the one sample that differs from the rest.
        let odd: Vec<&String> = got.iter().filter(|t| t.contains("ds_accessible")).collect();
        assert_eq!(odd.len(), 1, "{got:?}");
        assert!(odd[0].ends_with("ds_accessible{ds_name=\"ds4\"} 0.0"));
        assert!(got.iter().all(|t| !t.contains("sensor_state")), "{got:?}");
    }

    #[test]
    fn a_state_names_the_family_of_its_opposite() {
        let mut t = String::from("# HELP up Whether the target is up\n# TYPE up gauge\n");
        for k in 0..20 {
            t.push_str(&format!(
                "up{{instance=\"node{k}:9100\"}} {}\n",
                u8::from(k != 7)
            ));
        }
        let q = "Which targets are down?";
        let got = quoted_in(&t, q);
        assert_eq!(
            got,
            vec!["[odd value of ×20 up] up{instance=\"node7:9100\"} 0".to_string()]
        );
    }

    #[test]
    fn a_family_of_one_value_says_so_once() {
        let mut t = String::from("# HELP pod_ready Whether the pod is ready\n");
        for k in 0..30 {
            t.push_str(&format!("pod_ready{{pod=\"p{k}\"}} 1\n"));
        }
        let q = "Which pods are not ready?";
        let got = quoted_in(&t, q);
        assert_eq!(
            got,
            vec!["[every one the same, 1 of ×30 pod_ready] pod_ready{pod=\"p0\"} 1".to_string()]
        );
    }

    #[test]
    fn a_histogram_series_is_named_by_its_family_help() {
        let mut t = String::from(
            "# HELP http_request_duration_seconds Latency of requests by handler\n\
             # TYPE http_request_duration_seconds histogram\n",
        );
        for (h, c) in [
            ("/a", 10),
            ("/orders", 41202),
            ("/b", 7),
            ("/c", 99),
            ("/d", 5),
            ("/e", 3),
        ] {
            t.push_str(&format!(
                "http_request_duration_seconds_count{{handler=\"{h}\"}} {c}\n\
                 http_request_duration_seconds_sum{{handler=\"{h}\"}} 1.5\n"
            ));
        }
        t.push_str("# HELP go_goroutines Number of goroutines\ngo_goroutines 12\n");
        let q = "Which handler served the most requests?";
        let got = quoted_in(&t, q);
        assert!(
            got.iter().any(|t| t
                .starts_with("[largest of ×6 http_request_duration_seconds_count]")
                && t.ends_with("{handler=\"/orders\"} 41202")),
            "{got:?}"
        );
    }

    #[test]
    fn no_family_named_or_no_exposition_quotes_nothing() {
        assert!(quoted("Did the deploy finish?").is_empty());
        let log = "Jan 1 started 3\n".repeat(40);
        assert!(metrics(&log, &Query::new("started"), &Asks::default()).is_empty());
    }

    #[test]
    fn sample_lines_parse_by_the_exposition_grammar() {
        assert_eq!(sample("up 1").map(|s| s.1), Some(1.0));
        assert_eq!(
            sample("a_b{x=\"}{\",y=\"q\\\"z\"} 2.5 1700000000").map(|s| s.0),
            Some("a_b")
        );
        assert!(sample("x NaN").is_some_and(|s| s.1.is_nan()));
        assert_eq!(
            sample("x{a=\"b\"} -Inf").map(|s| s.1),
            Some(f64::NEG_INFINITY)
        );
        assert!(sample("Jan 1 started").is_none());
        assert!(sample("x 1 2 3").is_none());
        assert!(sample("9lives 1").is_none());
        assert!(sample("x{a=\"b\"}1").is_none());
    }

    proptest::proptest! {
        #[test]
        fn any_exposition_quotes_only_its_own_lines(
            text in "((# HELP [a-z_]{1,8} [a-z ]{0,12}|[a-z_]{1,8}(\\{[a-z]{1,3}=\"[a-z}{ ]{0,5}\"\\})? (-?[0-9]{1,4}(\\.[0-9])?|NaN|\\+Inf))\n){0,80}",
        ) {
            for c in metrics(&text, &Query::new("which free space is lowest?"), &Asks::of("lowest")) {
                let line = c.item.line.expect("a quoted sample has its line");
                let raw = text.lines().nth(line - 1).expect("the line exists");
                proptest::prop_assert!(c.item.text.ends_with(raw.trim_end()));
            }
        }
    }
}
