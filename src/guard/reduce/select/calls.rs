//! Recorded HTTP calls: test cassettes (VCR, Betamax, go-vcr), HAR files, API replay logs and
//! request logs written as `method:` / `uri:` / `code:` fields, in YAML or JSON, of any tool.
//! Hundreds of recorded `GET`s of a listing bury the one `DELETE`, the `POST` that answered
//! `202` and the last call's state; a question about what the calls did needs those.
//!
//! Nothing here knows a recorder: a call is a line naming an HTTP method under a `method` or
//! `verb` key, its URL the nearest `uri`/`url`/`path` line of its block, its status the first
//! `code`/`status` line with a three-digit number after the URL. The calls whose method or
//! status is rare among the output's calls are proposed as one line each (the three lines as
//! the file writes them, trimmed) to the rarity channel, first those whose URL holds a word of
//! the question and the last call; the counts per method and per status are a fact. (Proposed
//! to the relevance channel, and the last call always, they cost the dev-holdout split 4
//! facts: they displaced the units that matched the question.)

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::{Cand, Channel};
use crate::guard::reduce::rank::{tokenize, Query};
use crate::guard::reduce::{clip_str, Item, Section, CUT_MARK};

static METHOD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)^\s*(?:-\s*)?["']?(?:method|verb|request_?method)["']?\s*[:=]\s*["']?(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\b"#,
    )
    .expect("valid regex")
});
static URI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)^\s*(?:-\s*)?["']?(?:uri|url|path|request_?uri)["']?\s*[:=]\s*["']?\S"#)
        .expect("valid regex")
});
static STATUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)^\s*(?:-\s*)?["']?(?:code|status|status_?code)["']?\s*[:=]\s*["']?([1-5]\d\d)\b"#,
    )
    .expect("valid regex")
});

/// Fewest calls for the output to be a recording of calls.
const MIN_CALLS: usize = 3;
/// Lines after a call's method line searched for its URL and status (up to the next call).
const CALL_SPAN: usize = 80;
/// Lines before a method line searched for a URL written above it.
const URL_BEFORE: usize = 6;
/// Most calls proposed.
const MAX_PROPOSED: usize = 10;
/// Longest URL shown whole (bytes); a longer one keeps its start and its end.
const MAX_URL_BYTES: usize = 160;
/// Bytes kept of a long URL's start and end.
const URL_HEAD: usize = 48;
const URL_TAIL: usize = 96;
/// Share of calls under which a method or status is rare.
const RARE_SHARE: f64 = 0.2;

/// One recorded call: 1-based line of its method, and its three lines as the file writes them.
struct Call {
    line: usize,
    method: String,
    method_text: String,
    url: Option<String>,
    status: Option<(String, String)>,
}

/// A line trimmed, and a long URL line cut in its middle with [`CUT_MARK`] between spaces,
/// so both ends stay verbatim.
fn shown(line: &str) -> String {
    let t = line.trim().trim_start_matches("- ");
    if t.len() <= MAX_URL_BYTES {
        return t.to_string();
    }
    let head = clip_str(t, URL_HEAD);
    let mut start = t.len() - URL_TAIL;
    while !t.is_char_boundary(start) {
        start += 1;
    }
    format!("{head} {CUT_MARK} {}", &t[start..])
}

/// The calls of `text` ([`MIN_CALLS`] or more), in order.
fn find(text: &str) -> Vec<Call> {
    let lines: Vec<&str> = text.split('\n').collect();
    let at: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].len() < 200 && METHOD.is_match(lines[i]))
        .collect();
    if at.len() < MIN_CALLS {
        return Vec::new();
    }
    let mut calls = Vec::new();
    for (k, &i) in at.iter().enumerate() {
        let end = at
            .get(k + 1)
            .copied()
            .unwrap_or(lines.len())
            .min(i + CALL_SPAN);
        let lo = if k == 0 { 0 } else { at[k - 1] + 1 };
        let url_at = (i + 1..end).find(|&j| URI.is_match(lines[j])).or_else(|| {
            (lo.max(i.saturating_sub(URL_BEFORE))..i)
                .rev()
                .find(|&j| URI.is_match(lines[j]))
        });
        let from = url_at.unwrap_or(i).max(i) + 1;
        let status = (from..end).find_map(|j| {
            STATUS
                .captures(lines[j])
                .map(|c| (c[1].to_string(), shown(lines[j])))
        });
        let method = METHOD
            .captures(lines[i])
            .map(|c| c[1].to_ascii_uppercase())
            .unwrap_or_default();
        calls.push(Call {
            line: i + 1,
            method,
            method_text: shown(lines[i]),
            url: url_at.map(|j| shown(lines[j])),
            status,
        });
    }
    calls
}

/// `v1 ×n1, v2 ×n2, ...`, most first.
fn counts(values: impl Iterator<Item = String>) -> (HashMap<String, usize>, String) {
    let mut m: HashMap<String, usize> = HashMap::new();
    for v in values {
        *m.entry(v).or_default() += 1;
    }
    let mut v: Vec<(&String, &usize)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let s = v
        .iter()
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    (m, s)
}

/// Candidates for the recorded calls of `text`: a fact with the counts per method and status
/// ([`Channel::Facts`]), and up to [`MAX_PROPOSED`] calls whose method or status is rare, one
/// line each, ranked by how rare, then by the question's words in their URL and being the last
/// call ([`Channel::Rare`]). Nothing when the text records fewer than [`MIN_CALLS`] calls.
pub fn calls(text: &str, q: &Query) -> Vec<Cand> {
    let calls = find(text);
    if calls.is_empty() {
        return Vec::new();
    }
    let n = calls.len() as f64;
    let (by_method, methods) = counts(calls.iter().map(|c| c.method.clone()));
    let (by_status, statuses) = counts(
        calls
            .iter()
            .filter_map(|c| c.status.as_ref().map(|s| s.0.clone())),
    );
    let mut out = vec![Cand {
        item: Item::fact(
            4_900,
            format!(
                "recorded HTTP calls: {} (first L{}, last L{}); methods: {methods}{}",
                calls.len(),
                calls[0].line,
                calls[calls.len() - 1].line,
                if statuses.is_empty() {
                    String::new()
                } else {
                    format!("; status codes: {statuses}")
                }
            ),
            FACT_SCORE,
        ),
        channel: Channel::Facts,
        score: FACT_SCORE,
        group: None,
        rel: FACT_SCORE,
    }];
    let rare = |m: &HashMap<String, usize>, v: &str| {
        let share = m.get(v).copied().unwrap_or(0) as f64 / n;
        if share <= RARE_SHARE {
            1.0 - share
        } else {
            0.0
        }
    };
    let mut ranked: Vec<(f64, usize)> = calls
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let words = tokenize(c.url.as_deref().unwrap_or(""));
            let hits = q
                .terms
                .keys()
                .filter(|t| t.len() >= 3 && words.contains(t))
                .count();
            let odd = rare(&by_method, &c.method)
                + c.status.as_ref().map_or(0.0, |st| rare(&by_status, &st.0));
            // The last call is the recording's final state, when it is one of the rare.
            let last = if k + 1 == calls.len() && odd > 0.0 {
                0.3
            } else {
                0.0
            };
            (
                odd + 0.3 * hits.min(3) as f64 * (odd > 0.0) as u8 as f64 + last,
                k,
            )
        })
        .filter(|(s, _)| *s > 0.0)
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (s, k) in ranked.into_iter().take(MAX_PROPOSED) {
        let c = &calls[k];
        let mut text = c.method_text.clone();
        if let Some(u) = &c.url {
            text.push_str(" · ");
            text.push_str(u);
        }
        if let Some((_, st)) = &c.status {
            text.push_str(" · ");
            text.push_str(st);
        }
        let score = CALL_SCORE + s / 10.0;
        out.push(Cand {
            item: Item::line(Section::Evidence, c.line, text, score),
            channel: Channel::Rare,
            score,
            group: None,
            rel: (s / 2.0).min(1.0),
        });
    }
    out
}

/// Weight of the counts fact, with the best mined facts.
const FACT_SCORE: f64 = 0.9;
/// Base relevance score of a proposed call (plus a tenth of its interest).
const CALL_SCORE: f64 = 1.0;

#[cfg(test)]
mod tests {
    use super::*;

    fn cassette() -> String {
        let mut t = String::from("interactions:\n");
        let call = |m: &str, uri: &str, code: u16| {
            format!(
                "- request:\n    body: null\n    method: {m}\n    uri: {uri}\n  response:\n    body:\n      string: ''\n    status:\n      code: {code}\n      message: OK\n"
            )
        };
        for i in 0..30 {
            t.push_str(&call(
                "GET",
                &format!("https://api.example.com/vaults?page={i}"),
                200,
            ));
        }
        t.push_str(&call(
            "DELETE",
            "https://api.example.com/vaults/myvault",
            200,
        ));
        t.push_str(&call(
            "POST",
            "https://api.example.com/deletedVaults/myvault/purge?api-version=2019-09-01",
            202,
        ));
        t.push_str(&call(
            "GET",
            "https://api.example.com/operationResults/1",
            200,
        ));
        t
    }

    #[test]
    fn the_rare_calls_are_proposed_with_their_url_and_status() {
        let t = cassette();
        let c = calls(&t, &Query::new("was the vault deleted and purged?"));
        let fact = &c[0].item.text;
        assert!(fact.contains("recorded HTTP calls: 33"), "{fact}");
        assert!(fact.contains("GET ×31, DELETE ×1, POST ×1"), "{fact}");
        assert!(fact.contains("200 ×32, 202 ×1"), "{fact}");
        let shown: Vec<&str> = c[1..].iter().map(|x| x.item.text.as_str()).collect();
        assert!(
            shown.iter().any(|s| s.contains("method: POST")
                && s.contains("deletedVaults/myvault/purge?api-version=2019-09-01")
                && s.contains("code: 202")),
            "{shown:?}"
        );
        assert!(
            shown.iter().any(|s| s.contains("method: DELETE")),
            "{shown:?}"
        );
        // The common calls (a GET answered 200), the last one too, are left to the others.
        assert!(
            !shown
                .iter()
                .any(|s| s.contains("operationResults/1") || s.contains("page=")),
            "{shown:?}"
        );
        // Every part is the file's own text.
        for s in &shown {
            for part in s.split(" · ") {
                assert!(t.contains(part), "{part}");
            }
        }
        // JSON recordings (HAR, Betamax) too.
        let mut har = String::from("{\"log\": {\"entries\": [\n");
        for i in 0..5 {
            let m = if i == 3 { "PUT" } else { "GET" };
            har.push_str(&format!(
                "  {{\"request\": {{\n    \"method\": \"{m}\",\n    \"url\": \"https://x.test/item/{i}\"\n  }},\n  \"response\": {{\n    \"status\": {},\n    \"statusText\": \"OK\"\n  }}}},\n",
                if i == 3 { 409 } else { 200 }
            ));
        }
        let c = calls(&har, &Query::new("what happened?"));
        assert!(c.iter().any(|x| x.item.text.contains("\"method\": \"PUT\"")
            && x.item.text.contains("item/3")
            && x.item.text.contains("409")));
    }

    #[test]
    fn prose_and_few_calls_are_no_recording() {
        assert!(calls("method: GET\nuri: /a\n", &Query::new("x")).is_empty());
        assert!(calls(
            "the GET method is used\n".repeat(10).as_str(),
            &Query::new("x")
        )
        .is_empty());
        let long = format!(
            "method: GET\nuri: https://a.test/{}\ncode: 200\n",
            "x".repeat(400)
        );
        let c = calls(&long.repeat(3), &Query::new("x"));
        assert!(c.iter().all(|x| !x.item.text.contains(&"x".repeat(200))));
    }
}
