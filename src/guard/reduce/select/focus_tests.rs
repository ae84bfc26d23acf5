//! Tests of a record's focus: which of its pairs a record shown in part is shown by.

use super::*;
use crate::guard::reduce::Section;

/// The generic channels' candidates for `text` of kind `kind` under `intent`.
fn generic_candidates(text: &str, kind: crate::guard::reduce::Kind, intent: &str) -> Vec<Cand> {
    let u = crate::guard::reduce::units::build(text, kind);
    let q = crate::guard::reduce::rank::Query::new(intent);
    let s = crate::guard::reduce::signals::score(&u, &q, &Default::default());
    candidates(&u, &s, &[], &q)
}

#[test]
fn a_record_cut_short_by_a_long_value_is_shown_by_the_pairs_that_matter() {
    // The record's rendering stops at its long stdout; the error after it must still show.
    let stdout = "progress line ".repeat(30);
    let recs: Vec<_> = (0..5)
        .map(|i| {
            let status = if i == 3 { "failed" } else { "passed" };
            let error = if i == 3 {
                "Error: Test timeout of 1ms exceeded."
            } else {
                ""
            };
            serde_json::json!({"worker": i, "status": status, "stdout": stdout, "error": error})
        })
        .collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({ "results": recs })).unwrap();
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Json,
        "which test failed and why?",
    );
    let failed = c
        .iter()
        .find(|c| c.item.text.contains("\"status\": \"failed\""))
        .expect("the failing record is a candidate");
    assert!(
        failed.item.text.contains("Test timeout of 1ms exceeded."),
        "{}",
        failed.item.text
    );
}

#[test]
fn a_query_word_in_most_pairs_of_a_record_does_not_pick_them() {
    // Wide API records: "github" is in every URL pair; the repository's own name and the
    // measure asked about are what the record is shown by.
    let recs: Vec<_> = (0..12)
        .map(|i| {
            let mut m = serde_json::Map::new();
            m.insert("id".into(), (1000 + i).into());
            m.insert("full_name".into(), format!("owner{i}/repo{i}").into());
            m.insert("owner".into(), serde_json::json!({"id": i, "url": format!("https://api.github.com/users/owner{i}")}));
            for k in ["forks", "keys", "hooks", "issues", "tags", "teams", "events", "labels"] {
                m.insert(format!("{k}_url"), format!("https://api.github.com/repos/owner{i}/repo{i}/{k}").into());
            }
            m.insert("stargazers_count".into(), (100 * (i % 5) + i).into());
            serde_json::Value::Object(m)
        })
        .collect();
    let text = serde_json::json!({"total_count": 12, "items": recs}).to_string();
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Json,
        "which github repositories have the most stars?",
    );
    let top = c
        .iter()
        .find(|c| c.channel == Channel::Extreme && c.item.text.contains("\"stargazers_count\":409"))
        .expect("the most starred repository is an extreme");
    assert!(
        top.item.text.contains("\"full_name\":\"owner9/repo9\""),
        "{}",
        top.item.text
    );
}

#[test]
fn a_wrapped_record_is_shown_by_its_own_name() {
    // `{kind, data: {...}}` listings: the record's names are one level down, and the one a
    // reader calls it by (`display_name`, after its ids and long URLs) comes with the
    // extreme.
    let recs: Vec<_> = (0..40)
        .map(|i| {
            let mut d = serde_json::Map::new();
            d.insert("id".into(), format!("2qh{i}x").into());
            for k in ["header_img", "icon_img", "banner_img", "description_html"] {
                d.insert(
                    k.into(),
                    format!("https://example.org/{k}/asset-{i}.png").into(),
                );
            }
            d.insert("name".into(), format!("t5_2qh{i}x").into());
            d.insert("display_name".into(), format!("Sub{i}").into());
            d.insert("subscribers".into(), (1000 * (i % 7) + i).into());
            serde_json::json!({"kind": "t5", "data": d})
        })
        .collect();
    let text = serde_json::json!({"data": {"children": recs}}).to_string();
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Json,
        "which listing has the most subscribers?",
    );
    let top = c
        .iter()
        .find(|c| c.channel == Channel::Extreme && c.item.text.contains("\"subscribers\":6034"))
        .unwrap_or_else(|| panic!("the largest is an extreme: {c:?}"));
    assert!(
        top.item.text.contains("\"display_name\":\"Sub34\""),
        "{}",
        top.item.text
    );
}

#[test]
fn a_records_embedded_json_copy_gives_way_to_the_pairs_that_answer() {
    // Records whose annotation holds a JSON copy of the record, longer than a focus.
    let copy = format!(
        "{{\\\"apiVersion\\\":\\\"apps/v1\\\",\\\"kind\\\":\\\"Deployment\\\",\\\"spec\\\":{{\\\"replicas\\\":2,\\\"template\\\":\\\"{}\\\"}}}}",
        "x".repeat(300)
    );
    let mut text = String::from("[\n");
    for i in 0..4 {
        text.push_str(&format!(
            "  {{\"name\": \"app{i}\", \"config\": \"{copy}\", \"other\": \"{}\", \"readyReplicas\": {i}, \"updatedReplicas\": {i}}}{}\n",
            "y".repeat(120),
            if i < 3 { "," } else { "" }
        ));
    }
    text.push_str("]\n");
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Json,
        "are all replicas ready?",
    );
    let rec = c
        .iter()
        .find(|c| c.item.text.contains("\"name\": \"app3\""))
        .unwrap_or_else(|| panic!("{:#?}", c.iter().map(|c| &c.item.text).collect::<Vec<_>>()));
    assert!(
        rec.item.text.contains("\"readyReplicas\": 3"),
        "{}",
        rec.item.text
    );
    assert!(!rec.item.text.contains("apiVersion"), "{}", rec.item.text);
    assert!(focus::embedded_json(&format!("\"config\": \"{copy}\"")));
    assert!(!focus::embedded_json("\"name\": \"app2\""));
    assert!(!focus::embedded_json("\"note\": \"{not json\""));
}

/// A record shown under Errors shows the pair that put it there: a deprecated flag deep in a
/// long record, not only its name and the first pairs.
#[test]
fn a_severe_records_focus_shows_its_severe_pair() {
    let mut text = String::from("[\n");
    for i in 0..6 {
        let flag = if i == 4 {
            "--deprecated-kubelet-completely-insecure=true"
        } else {
            "--secure-port=10250"
        };
        text.push_str(&format!(
            "  {{\"name\": \"app{i}\", \"image\": \"gcr.io/app{i}:v1.{i}\", \"notes\": \"{}\", \"args\": [\"--v=2\", \"--cert-dir=/tmp\", \"{flag}\"], \"cpu\": \"{i}0m\"}}{}\n",
            "n".repeat(200),
            if i < 5 { "," } else { "" }
        ));
    }
    text.push_str("]\n");
    let c = generic_candidates(&text, crate::guard::reduce::Kind::Json, "which images run?");
    let rec = c
        .iter()
        .find(|c| c.item.text.contains("\"name\": \"app4\"") && c.item.section == Section::Errors)
        .unwrap_or_else(|| panic!("{:#?}", c.iter().map(|c| &c.item.text).collect::<Vec<_>>()));
    assert!(
        rec.item.text.contains("--deprecated-kubelet"),
        "{}",
        rec.item.text
    );
}

/// A record's name repeated under other keys (labels, selectors, an account) is shown once:
/// the room goes to the pair that answers, late in the record.
#[test]
fn a_records_repeated_value_gives_way_to_the_pair_that_answers() {
    let mut text = String::from("[\n");
    for i in 0..4 {
        let n = format!("kube-dns-{i}");
        text.push_str(&format!(
            "  {{\"name\": \"{n}\", \"uid\": \"{}\", \"labels\": {{\"k8s-app\": \"{n}\", \"app\": \"{n}\"}}, \
             \"selector\": {{\"k8s-app\": \"{n}\"}}, \"spec\": {{\"serviceAccountName\": \"{n}\", \"serviceAccount\": \"{n}\"}}, \
             \"volume\": \"{n}\", \"configMap\": \"{n}\", \"owner\": \"{n}\", {}\"notes\": \"{}\", \"readyReplicas\": {i}}}{}\n",
            "u".repeat(36),
            (0..16).map(|f| format!("\"f{f}\": {f}, ")).collect::<String>(),
            "n".repeat(200),
            if i < 3 { "," } else { "" }
        ));
    }
    text.push_str("]\n");
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Json,
        "are all kube-dns-3 replicas ready?",
    );
    let rec = c
        .iter()
        .find(|c| c.item.text.contains("\"name\": \"kube-dns-3\""))
        .unwrap_or_else(|| panic!("{:#?}", c.iter().map(|c| &c.item.text).collect::<Vec<_>>()));
    assert!(
        rec.item.text.contains("\"readyReplicas\": 3"),
        "{}",
        rec.item.text
    );
    assert_eq!(
        rec.item.text.matches("kube-dns-3").count(),
        1,
        "{}",
        rec.item.text
    );
}

/// An XML element written once for its text and once for each attribute (`<admin-status
/// format="Enabled">up</admin-status>`) bridges the name and the pair that answers like any
/// short pair: the run reads as the file writes it.
#[test]
fn an_xml_leaf_with_attributes_bridges_the_pairs_around_it() {
    let mut text = String::from("<interface-information>\n");
    for i in 0..8 {
        let oper = if i == 5 { "up" } else { "down" };
        text.push_str(&format!(
            "  <physical-interface>\n    <name>ge-0/0/{i}</name>\n    <admin-status format=\"Enabled\">up</admin-status>\n    <oper-status>{oper}</oper-status>\n"
        ));
        for f in 0..12 {
            text.push_str(&format!("    <counter-{f}>{}</counter-{f}>\n", f * 7 + i));
        }
        text.push_str("  </physical-interface>\n");
    }
    text.push_str("</interface-information>\n");
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Lines,
        "which ports are operational?",
    );
    let rec = c
        .iter()
        .find(|c| c.item.text.contains("<oper-status>up</oper-status>"))
        .unwrap_or_else(|| panic!("{:#?}", c.iter().map(|c| &c.item.text).collect::<Vec<_>>()));
    assert!(
        rec.item.text.contains(
            "<name>ge-0/0/5</name> <admin-status format=\"Enabled\">up</admin-status> <oper-status>up</oper-status>"
        ),
        "{}",
        rec.item.text
    );
}

#[test]
fn the_top_extreme_on_a_short_line_brings_its_block() {
    // Alignment blocks: a score line over the two rows it scores, a blank line between blocks.
    let mut text = String::new();
    for i in 0..30 {
        let score = if i == 17 {
            100_358
        } else {
            20_000 + (i * 7_919) % 31 * 1_000
        };
        text.push_str(&format!(
            "a score={score}\ns human {} 300 + 70000 ACGTACGTAC\ns cow   {} 290 + 66001 ACGTTCGTAC\n\n",
            1000 + i * 400,
            2000 + i * 380
        ));
    }
    let intent = "Which alignment block has the highest score?";
    let u = crate::guard::reduce::units::build(&text, crate::guard::reduce::Kind::Lines);
    let q = crate::guard::reduce::rank::Query::new(intent);
    let asks = crate::guard::reduce::intent::Asks::of(intent);
    let s = crate::guard::reduce::signals::score(&u, &q, &asks);
    let c = candidates(&u, &s, &[], &q);
    let top = c
        .iter()
        .find(|x| x.channel == Channel::Extreme && x.item.text.contains("a score=100358"))
        .expect("the top score is an extreme");
    let line = top.item.line.unwrap();
    for (k, row) in ["s human 7800 300", "s cow  8460 290"].iter().enumerate() {
        let b = c
            .iter()
            .find(|x| x.channel == Channel::Extreme && x.item.line == Some(line + 1 + k))
            .unwrap_or_else(|| panic!("line {} of the block", line + 1 + k));
        assert!(b.item.text.starts_with(row), "{}", b.item.text);
        assert!(b.score > 0.9 * top.score && b.group.is_none());
    }
    // The next block's score line is not part of it.
    assert!(!c
        .iter()
        .any(|x| x.channel == Channel::Extreme && x.item.line == Some(line + 4)));
}
