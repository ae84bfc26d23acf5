//! Tests of the selector.

use super::*;
use crate::guard::reduce::Section;

pub(super) struct Bytes;
impl TokenCounter for Bytes {
    fn count(&self, text: &str) -> usize {
        text.len() / 4 + 1
    }
}

/// The generic channels' candidates for `text` of kind `kind` under `intent`.
pub(super) fn generic_candidates(
    text: &str,
    kind: crate::guard::reduce::Kind,
    intent: &str,
) -> Vec<Cand> {
    let u = crate::guard::reduce::units::build(text, kind);
    let q = crate::guard::reduce::rank::Query::new(intent);
    let s = crate::guard::reduce::signals::score(&u, &q, &Default::default());
    candidates(&u, &s, &[], &q)
}

fn cand(ch: Channel, line: usize, text: &str, score: f64, group: Option<usize>) -> Cand {
    Cand {
        item: Item::line(Section::Evidence, line, text, score),
        channel: ch,
        score,
        group,
        rel: 0.5,
    }
}

#[test]
fn no_channel_eats_the_budget() {
    let mut c = Vec::new();
    for i in 0..200 {
        c.push(cand(
            Channel::Kind,
            i + 1,
            &format!("kind line number {i} with some words"),
            100.0 - i as f64,
            None,
        ));
    }
    c.push(cand(
        Channel::Rare,
        900,
        "Accepted password for deploy",
        1.0,
        Some(7),
    ));
    c.push(cand(Channel::Extreme, 901, "largest: 99999", 1.0, Some(8)));
    let out = select(c, 300, &Bytes, &Policy::default());
    assert!(out.iter().any(|i| i.line == Some(900)));
    assert!(out.iter().any(|i| i.line == Some(901)));
    assert!(out.iter().filter(|i| i.line.unwrap() <= 200).count() > 10);
}

#[test]
fn unspent_shares_go_to_others_and_templates_are_capped() {
    let mut c = Vec::new();
    for i in 0..50 {
        c.push(cand(
            Channel::Relevance,
            i + 1,
            &format!("GET /api/users {i}"),
            1.0,
            Some(1),
        ));
    }
    for i in 0..50 {
        c.push(cand(
            Channel::Relevance,
            100 + i,
            &format!("POST /api/orders {i}"),
            0.9,
            Some(2),
        ));
    }
    let out = select(c, 400, &Bytes, &Policy::default());
    // Only one channel: it may use the whole budget, but at most 3 units per template.
    assert_eq!(out.iter().filter(|i| i.line.unwrap() < 100).count(), 3);
    assert_eq!(out.iter().filter(|i| i.line.unwrap() >= 100).count(), 3);
}

#[test]
fn musts_always_and_duplicates_once() {
    let mut m = Item::fact(1, "kind: log", MUST);
    m.prio = MUST;
    let c = vec![
        Cand {
            item: m,
            channel: Channel::Facts,
            score: 1.0,
            group: None,
            rel: 0.0,
        },
        cand(Channel::Errors, 5, "ERROR x", 1.0, None),
        cand(Channel::Kind, 5, "ERROR x", 1.0, None),
    ];
    let out = select(c, 20, &Bytes, &Policy::default());
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].text, "kind: log");
}

/// Room left after the channels' turns goes to lines not shown yet, not to copies of a line
/// written in every round of a log (`setting up fixtures` at lines 2, 155, 308, ...).
#[test]
fn a_line_written_many_times_fills_no_room_twice() {
    let mut c = vec![cand(
        Channel::Relevance,
        40,
        "order 40 took 912 ms",
        1.0,
        Some(1),
    )];
    for k in 0..20 {
        c.push(cand(
            Channel::Rare,
            2 + 153 * k,
            "setting up fixtures",
            0.5,
            None,
        ));
    }
    c.push(cand(
        Channel::Rare,
        5000,
        "connecting to db at 10.0.0.5",
        0.1,
        None,
    ));
    let out = select(c, 400, &Bytes, &Policy::default());
    let same = out
        .iter()
        .filter(|i| i.text == "setting up fixtures")
        .count();
    assert_eq!(same, 1, "{out:?}");
    assert!(out.iter().any(|i| i.line == Some(5000)), "{out:?}");
}

#[test]
fn one_record_rendered_by_two_channels_a_line_apart_is_shown_once() {
    // The kind reducer anchors a record at its brace, the units at its first key.
    let id = "\"id\": \"vulnerability--8323404c-1fdd-4272-822b-829f85556c53\"";
    let kind = format!("{{\"type\": \"vulnerability\" … {id} … \"name\": \"CVE-2011-3544\"}}");
    let unit = format!(
        "\"type\": \"vulnerability\", \"spec_version\": \"2.1\", {id}, … \"name\": \"CVE-2011-3544\""
    );
    // Another record's rendering that shares one long pair (a title) with it, and shows more.
    let other = format!(
        "\"url\": \"https://example.com/pulls/8031\", \"number\": 8031, \"state\": \"open\", {id}"
    );
    let c = vec![
        cand(Channel::Kind, 10, &kind, 2.0, None),
        cand(Channel::Relevance, 11, &unit, 1.0, None),
        cand(Channel::Relevance, 9, &other, 0.9, None),
    ];
    let out = select(c, 400, &Bytes, &Policy::default());
    let texts: Vec<&str> = out.iter().map(|i| i.text.as_str()).collect();
    assert!(texts.contains(&kind.as_str()), "{texts:?}");
    assert!(!texts.contains(&unit.as_str()), "{texts:?}");
    assert!(texts.contains(&other.as_str()), "{texts:?}");
}

#[test]
fn an_error_line_listed_again_far_below_is_not_shown_twice() {
    // A test log names a failure where it happens and again in its final report.
    let fail = "FAILED: java/net/MulticastSocket/Promiscuous.java";
    let err = |line: usize, text: &str, score: f64| Cand {
        item: Item::line(Section::Errors, line, text, score),
        channel: Channel::Errors,
        score,
        group: None,
        rel: 0.5,
    };
    let c = vec![
        err(2167, fail, 3.0),
        err(6031, fail, 2.0),
        err(
            6033,
            "FAILED: java/net/MulticastSocket/SetLoopbackModeIPv4.java",
            1.0,
        ),
    ];
    let out = select(c, 400, &Bytes, &Policy::default());
    let lines: Vec<Option<usize>> = out.iter().map(|i| i.line).collect();
    assert_eq!(lines, [Some(2167), Some(6033)], "{out:?}");
    // Evidence lines of the same text in different blocks (each interface's counters) stay,
    // each with its block's header; in a flat text, a copy goes.
    let stanza = |name: &str| {
        let rates: String = (0..99).map(|i| format!("  input rate {i}\n")).collect();
        format!("{name} is up, line protocol is up\n  0 runts, 0 giants, 0 throttles\n{rates}")
    };
    let text = stanza("Gi0/1") + &stanza("Gi0/2");
    let counters = || {
        vec![
            cand(
                Channel::Relevance,
                2,
                "  0 runts, 0 giants, 0 throttles",
                1.0,
                None,
            ),
            cand(
                Channel::Relevance,
                103,
                "  0 runts, 0 giants, 0 throttles",
                0.9,
                None,
            ),
        ]
    };
    let h = Headers::of(&text);
    let out = select_with(counters(), 400, &Bytes, &Policy::default(), &h);
    let lines: Vec<Option<usize>> = out.iter().map(|i| i.line).collect();
    assert_eq!(lines, [Some(1), Some(2), Some(102), Some(103)], "{out:?}");
    assert_eq!(select(counters(), 400, &Bytes, &Policy::default()).len(), 1);
}

#[test]
fn an_excerpt_holding_a_short_one_of_its_line_still_shows_more() {
    // A one-line document: a leaf of line 1 is taken first; the excerpt of line 1 that holds
    // it and much more is no copy of it. A part holding most of a taken one is.
    let long = "\"aws_instance\":{\"version\":1,\"block\":{\"attributes\":{\"ami\":{\"type\":\"string\",\"required\":true}";
    let c = vec![
        cand(Channel::Errors, 1, "\"required\":true", 2.0, None),
        cand(Channel::Relevance, 1, long, 1.0, None),
        cand(
            Channel::Position,
            1,
            "\"type\":\"string\",\"required\":true",
            1.0,
            None,
        ),
    ];
    let out = select(c, 400, &Bytes, &Policy::default());
    assert!(out.iter().any(|i| i.text == long), "{out:?}");
    assert_eq!(out.len(), 2, "{out:?}");
}

#[test]
fn markup_alone_is_no_candidate() {
    use super::propose::markup_only;
    assert!(markup_only("</brick>"));
    // Encoded data says nothing: base64 and VLQ mappings; ids, hashes and paths stay.
    use super::propose::encoded;
    for t in [
        "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTESMBAGA1UEChMJ",
        ";AAEe,SAAS,IAAI,CAAC,EAAE,EAAE,OAAO,EAAE;AAC1C,EAAE,OAAO,SAAS,IAAI,GAAG;AACzB",
    ] {
        assert!(encoded(t), "{t}");
    }
    for t in [
        "9998f02e4544c3adaf1946f1560890068503d5009998f02e4544c3adaf1946f15600",
        "org/eclipse/jdt/internal/compiler/tool/EclipseCompilerImplementationClass",
        "CVE-2022-22375",
        "/home/runner/.m2/repository/org/eclipse/jdt/ecj/3.29.0/ecj-3.29.0.jar",
    ] {
        assert!(!encoded(t), "{t}");
    }
    // A line that only opens an object or a list says nothing of its own.
    use super::propose::opener_only;
    for t in [
        "{",
        "  \"cve\": {",
        "items: [",
        "[×2 lines like it, last L9] \"a.b\": [",
    ] {
        assert!(opener_only(t), "{t}");
    }
    for t in [
        "\"id\": \"CVE-1\", \"x\": {",
        "Found 3 issues: [",
        "}",
        "\"cve\": {}",
    ] {
        assert!(!opener_only(t), "{t}");
    }
    assert!(markup_only("[×12 lines like it, last L5192]   <brick>"));
    assert!(markup_only("  },"));
    assert!(!markup_only("<brickName>h1:/b</brickName>"));
    assert!(!markup_only("<component type=\"library\">"));
    assert!(!markup_only("a < b > c"));
    assert!(!markup_only(""));
}

#[test]
fn a_long_free_text_pair_that_matters_shows_its_head() {
    // Pipe-separated rows whose last column is a long description: the row answering the
    // question shows the description's head (its title), cut between words and marked.
    let mut text = String::from("Class|No|Site Name|City Name|Description\n");
    for i in 0..40 {
        let (class, desc) = if i == 17 {
            (
                "UNUSUAL EVENT",
                "NOTICE OF UNUSUAL EVENT DUE TO A TSUNAMI WARNING IN THE AREA",
            )
        } else {
            (
                "NON EMERGENCY",
                "ROUTINE REPORT OF A VALVE FOUND OUT OF POSITION DURING TESTING",
            )
        };
        let body = format!(
            "\"{}\" the licensee said.",
            "the plant is stable and the inspector was notified ".repeat(8)
        );
        text.push_str(&format!(
            "{class}|{}|SITE {i}|CITY {i}|{desc}  {body}\n",
            46600 + i
        ));
    }
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Lines,
        "which events were classified as an unusual event?",
    );
    let row = c
        .iter()
        .find(|c| c.item.text.contains("TSUNAMI"))
        .unwrap_or_else(|| panic!("the unusual row is a candidate: {c:?}"));
    assert!(
        row.item
            .text
            .contains("NOTICE OF UNUSUAL EVENT DUE TO A TSUNAMI WARNING IN THE AREA"),
        "{}",
        row.item.text
    );
    // The head stops before the quote it would leave open.
    assert!(!row.item.text.contains("\"the plant"), "{}", row.item.text);
    assert!(row.item.text.contains(crate::guard::reduce::CUT_MARK));
}

#[test]
fn a_short_pair_between_two_shown_ones_joins_them() {
    // The failing run is shown by `event` (an intent word) and `conclusion` (its rare
    // value): the short `run_attempt` between them comes too, so the run reads as the file has it.
    let recs: Vec<_> = (0..30)
        .map(|i| {
            let mut m = serde_json::Map::new();
            m.insert("id".into(), (2_800_000_000u64 + i).into());
            for k in ["node_id", "check_suite_url", "jobs_url", "logs_url"] {
                m.insert(
                    k.into(),
                    format!("https://api.example.org/runs/{i}/{k}/with/a/long/path").into(),
                );
            }
            m.insert("event".into(), "pull_request".into());
            m.insert("run_attempt".into(), 1.into());
            let c = if i == 12 { "failure" } else { "success" };
            m.insert("conclusion".into(), c.into());
            m.insert(
                "workflow_url".into(),
                format!("https://api.example.org/workflows/{i}").into(),
            );
            serde_json::Value::Object(m)
        })
        .collect();
    let text = serde_json::json!({"total_count": 30, "workflow_runs": recs}).to_string();
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Json,
        "which pull request event run failed?",
    );
    let failed = c
        .iter()
        .find(|c| c.item.text.contains("\"conclusion\":\"failure\""))
        .unwrap_or_else(|| panic!("the failed run is a candidate: {c:?}"));
    assert!(
        failed
            .item
            .text
            .contains("\"event\":\"pull_request\",\"run_attempt\":1,\"conclusion\":\"failure\""),
        "{}",
        failed.item.text
    );
}

#[test]
fn a_line_quoted_whole_in_an_excerpt_of_its_neighbourhood_is_a_copy() {
    let mut seen = Seen::default();
    seen.add(&Item::line(
        Section::Evidence,
        15,
        "<title>Armor for your phone</title> … <published>2009-09-09T14:19:45Z</published> …",
        1.0,
    ));
    let title = Item::line(
        Section::Evidence,
        16,
        "  <title>Armor for your phone</title>",
        1.0,
    );
    assert!(seen.has(&title));
    // The same text far away is another occurrence, and a different line is new.
    let far = Item::line(
        Section::Evidence,
        900,
        "<title>Armor for your phone</title>",
        1.0,
    );
    assert!(!seen.has(&far));
    let other = Item::line(Section::Evidence, 17, "<title>Another post</title>", 1.0);
    assert!(!seen.has(&other));
    // A fact that quotes a template's example line shows that line already.
    seen.add(&Item::fact(
        1,
        "×52 lines like L5:   BGP state = Established, up for 1d01h (first L5, last L3264)",
        1.0,
    ));
    let l5 = Item::line(
        Section::Evidence,
        5,
        "  BGP state = Established, up for 1d01h",
        1.0,
    );
    assert!(seen.has(&l5));
}

#[test]
fn bare_units_are_no_candidates() {
    assert!(propose::bare("https"));
    assert!(propose::bare("  fd = 91"));
    assert!(!propose::bare("\"flaky\": 6"));
    assert!(!propose::bare("api.github.com"));
}

#[test]
fn a_matching_labels_next_line_is_proposed_with_it() {
    // A translation catalog: the question's words are in the msgid, the answer on the line
    // after it.
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!(
            "#: file{i}.py:{i}\nmsgid \"Message {i}\"\nmsgstr \"Le message {i}\"\n\n"
        ));
    }
    text.push_str(
        "#: searchtools.js:132\nmsgid \"Search Results\"\nmsgstr \"Résultats de la recherche\"\n",
    );
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Lines,
        "French translation of the search results message",
    );
    let rel: Vec<&str> = c
        .iter()
        .filter(|c| c.channel == Channel::Relevance)
        .map(|c| c.item.text.as_str())
        .collect();
    let hit = rel
        .iter()
        .position(|t| t.contains("msgid \"Search Results\""))
        .expect("the match");
    assert_eq!(
        rel.get(hit + 1),
        Some(&"msgstr \"Résultats de la recherche\""),
        "{rel:?}"
    );
}

#[test]
fn another_record_with_the_same_common_values_is_not_a_copy() {
    let mut seen = Seen::default();
    let largest = "\\\"kind\\\": \\\"t5\\\", … \\\"subscribers\\\": 12220062, … \\\"subreddit_type\\\": \\\"public\\\",";
    seen.add(&Item::line(Section::Evidence, 114, largest, 1.0));
    let smallest = "\\\"kind\\\": \\\"t5\\\", … \\\"subscribers\\\": 85036, … \\\"subreddit_type\\\": \\\"public\\\",";
    assert!(!seen.has(&Item::line(Section::Evidence, 114, smallest, 1.0)));
    // The same record shown again (its numbers all shown) is one.
    let again = "\\\"kind\\\": \\\"t5\\\", … \\\"subscribers\\\": 12220062, …";
    assert!(seen.has(&Item::line(Section::Evidence, 115, again, 1.0)));
}

#[test]
fn room_the_channels_leave_is_filled() {
    // Five long lines first, then short ones: the channel stops after three long ones that do
    // not fit; the short ones behind them still get the room that is left.
    let mut c = Vec::new();
    for i in 0..5 {
        let long = format!("long answer line {i} {}", "x".repeat(120));
        c.push(cand(
            Channel::Relevance,
            i + 1,
            &long,
            10.0 - i as f64,
            None,
        ));
    }
    for i in 0..5 {
        let short = format!("short answer {i}");
        c.push(cand(
            Channel::Relevance,
            100 + i,
            &short,
            5.0 - i as f64,
            None,
        ));
    }
    let out = select(c, 100, &Bytes, &Policy::default());
    assert_eq!(out.iter().filter(|i| i.line.unwrap() < 100).count(), 2);
    assert!(
        out.iter().filter(|i| i.line.unwrap() >= 100).count() >= 3,
        "{out:?}"
    );
}

#[test]
fn a_raw_line_holding_the_kind_rendering_of_it_is_a_copy() {
    let mut seen = Seen::default();
    seen.add_kind(&Item::line(
        Section::Errors,
        253,
        "  fails_test.go:65: failed",
        128.0,
    ));
    let raw =
        r#"{"Action":"output","Test":"TestNested/c","Output":"  fails_test.go:65: failed\n"}"#;
    assert!(seen.has(&Item::line(Section::Evidence, 253, raw, 1.0)));
    // Taken by another channel, the short line leaves the record that holds it new.
    let mut other = Seen::default();
    other.add(&Item::line(
        Section::Errors,
        253,
        "  fails_test.go:65: failed",
        1.0,
    ));
    assert!(!other.has(&Item::line(Section::Evidence, 253, raw, 1.0)));
    // A one-line document has more to show than the part the reducer rendered.
    let doc = format!("{raw} {}", "x".repeat(KIND_RENDERED_MAX));
    assert!(!seen.has(&Item::line(Section::Evidence, 253, &doc, 1.0)));
}

/// A generic log reducer's core: 20 error lines (L1-L20) at the kind's priorities.
fn log_errors_core() -> Vec<Cand> {
    (0..20)
        .map(|i| {
            cand(
                Channel::Kind,
                i + 1,
                &format!("ERROR connection {i} refused by the upstream server, retrying later"),
                120.0 - i as f64,
                None,
            )
        })
        .collect()
}

#[test]
fn asked_for_the_slowest_a_logs_errors_do_not_come_first() {
    let mut c = log_errors_core();
    for i in 0..12 {
        c.push(cand(
            Channel::Extreme,
            100 + i,
            &format!("duration: {}.2 ms statement: select {i}", 1000 - i * 100),
            1.2 - 0.01 * i as f64,
            None,
        ));
    }
    let ranked = Policy {
        asks: Asks::of("which statements were the slowest?"),
        ..Policy::default()
    };
    let slow = |out: &[Item]| out.iter().filter(|i| i.line.unwrap() >= 100).count();
    let out = select(c.clone(), 120, &Bytes, &ranked);
    let plain = select(c, 120, &Bytes, &Policy::default());
    let errs = |out: &[Item]| out.iter().filter(|i| i.line.unwrap() < 100).count();
    assert!(
        slow(&out) > slow(&plain),
        "{} vs {}",
        slow(&out),
        slow(&plain)
    );
    // With the errors' core taken first, 3 slow statements and 4 errors fit.
    assert!(slow(&out) >= 4 && errs(&out) <= 3, "{out:?}");
}

#[test]
fn a_question_that_does_not_ask_why_takes_its_answers_before_the_errors() {
    let mut c = log_errors_core();
    for i in 0..12 {
        c.push(cand(
            Channel::Relevance,
            100 + i,
            &format!("site {i} declared an unusual event at 0{i}:00 after the inspection"),
            1.0 - 0.01 * i as f64,
            None,
        ));
    }
    let asked = Policy {
        asks: Asks::of("which sites declared an unusual event?"),
        question: true,
        ..Policy::default()
    };
    let answers = |out: &[Item]| out.iter().filter(|i| i.line.unwrap() >= 100).count();
    let with = select(c.clone(), 400, &Bytes, &asked);
    // No question: the errors are the best guess and come first.
    let without = select(c, 400, &Bytes, &Policy::default());
    assert!(
        answers(&with) > answers(&without),
        "{} vs {}",
        answers(&with),
        answers(&without)
    );
    assert!(without.first().unwrap().line.unwrap() < 100, "{without:?}");
}

#[test]
fn asked_for_a_ranking_the_best_series_keeps_its_top_five_in_order() {
    let mut c = Vec::new();
    // The best matching series (unexpected failures) and a weaker one from other templates.
    for i in 0..5 {
        c.push(cand(
            Channel::Extreme,
            10 + i,
            &format!("# of unexpected failures {}", 1226 - 200 * i),
            1.0 - 0.02 * i as f64,
            Some(1),
        ));
    }
    for i in 0..5 {
        c.push(cand(
            Channel::Extreme,
            100 + i,
            &format!("FAIL: pr{i}.c line {} arg == {}", 10 + i, 30 - i),
            0.7 - 0.02 * i as f64,
            Some(2 + i),
        ));
    }
    let ranked = Policy {
        asks: Asks::of("which testsuite had the most unexpected failures?"),
        question: true,
        ..Policy::default()
    };
    // Room for three: without the ranking order, the weaker series's largest comes second.
    let out = select(c, 35, &Bytes, &ranked);
    let lines: Vec<usize> = out.iter().filter_map(|i| i.line).collect();
    assert!(lines.len() >= 3, "{out:?}");
    assert!(lines.iter().all(|&l| l < 100), "{out:?}");
}
