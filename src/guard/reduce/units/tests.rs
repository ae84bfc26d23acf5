//! Tests of the unit builders.

use super::*;

#[test]
fn long_lines_become_parts() {
    let line = format!(
        "{}FATAL: disk quota exceeded{}",
        "a, ".repeat(3000),
        ", b".repeat(3000)
    );
    let u = build(&line, Kind::Lines);
    assert!(u.units.len() > 20, "{}", u.units.len());
    assert!(u
        .units
        .iter()
        .all(|x| x.line == 1 && x.kind == UnitKind::Part));
    assert!(u
        .units
        .iter()
        .any(|x| x.text.contains("FATAL: disk quota") || x.text.contains("disk quota exceeded")));
    assert!(u.units.iter().any(|x| x.sev == Severity::Error));
}

#[test]
fn json_records_and_leaves() {
    let text = r#"{
  "stats": {"tests": 12, "failures": 1, "passes": 11},
  "results": [
    {"name": "a", "state": "passed", "ms": 3},
    {"name": "b", "state": "failed", "ms": 900},
    {"name": "c", "state": "passed", "ms": 4}
  ]
}"#;
    let u = build(text, Kind::Json);
    assert!(u.structured);
    let rec: Vec<&Unit> = u
        .units
        .iter()
        .filter(|x| x.kind == UnitKind::Record)
        .collect();
    assert_eq!(rec.len(), 3);
    assert_eq!(rec[1].line, 5);
    assert!(
        rec[1].text.contains("\"state\": \"failed\""),
        "{}",
        rec[1].text
    );
    assert!(
        u.objects
            .iter()
            .any(|(l, p, r)| *l == 2 && p == "stats" && r.contains("\"failures\": 1")),
        "{:?}",
        u.objects
    );
    // Leaves carry their path.
    assert!(u
        .units
        .iter()
        .any(|x| x.kind == UnitKind::Leaf && x.context == "stats.failures"));
}

#[test]
fn embedded_json_and_text_are_unwrapped() {
    let inner = r#"{"alerts":[{"name":"cpu","state":"inactive"},{"name":"disk","state":"firing"},{"name":"mem","state":"inactive"}]}"#;
    let text = serde_json::json!({"content": [{"type": "text", "text": inner}]}).to_string();
    let u = build(&text, Kind::Json);
    assert!(
        u.units.iter().any(|x| x.kind == UnitKind::Record
            && x.text
                .contains(r#"{\"name\":\"disk\",\"state\":\"firing\"}"#)),
        "{:?}",
        u.units
    );
    let log = serde_json::json!({"output": "step 1 ok\nstep 2 ok\nERROR: step 3 failed: exit 2\n"})
        .to_string();
    let u = build(&log, Kind::Json);
    assert!(u
        .units
        .iter()
        .any(|x| x.text == "ERROR: step 3 failed: exit 2" && x.sev == Severity::Error));
}

#[test]
fn templates_count_lines_and_slot_values() {
    let mut text = String::new();
    for i in 0..30 {
        let ep = ["/api/users", "/api/orders", "/health"][i % 3];
        text.push_str(&format!(
            "2024-01-01T10:00:{:02} GET {ep} 200 {i}ms id={}\n",
            i,
            1000 + i
        ));
    }
    text.push_str("2024-01-01T10:01:00 Accepted password for root from 10.0.0.1\n");
    let u = build(&text, Kind::Log);
    let big = u.templates.iter().max_by_key(|t| t.count).unwrap();
    assert_eq!(big.count, 30, "{:?}", u.templates);
    assert_eq!(u.templates.len(), 2);
    // The endpoint is a variable position: its values are counted.
    assert!(
        big.slots.iter().any(|s| s.get("/api/users") == Some(&10)),
        "{:?}",
        big.slots
    );
    let t = &u.templates[u.units.last().unwrap().template];
    assert_eq!(t.count, 1);
}

#[test]
fn csv_rows_have_columns() {
    let text = "name,size,owner\nalpha,10,root\nbeta,2000,bob\ngamma,3,root\n";
    let u = build(text, Kind::Csv);
    assert!(u.structured);
    let size = u.fields.iter().position(|f| f.name == "size").unwrap();
    let rec: Vec<&Unit> = u
        .units
        .iter()
        .filter(|x| x.kind == UnitKind::Record)
        .collect();
    assert_eq!(rec.len(), 3);
    assert!(rec[1].fields.contains(&(size, "2000".to_string())));
}

#[test]
fn ndjson_text_fields_at_depth_are_lines() {
    let text = "{\"reason\":\"compiler-message\",\"message\":{\"rendered\":\"warning: unused variable `x` in this function body, and one more word\\n  --> src/main.rs:3:9\\n\",\"level\":\"warning\"}}\n{\"reason\":\"build-finished\",\"success\":true}\n";
    let u = build(text, Kind::Ndjson);
    assert!(u.units.iter().any(|x| x.kind == UnitKind::Line
        && x.text.contains("--> src/main.rs:3:9")
        && x.line == 1));
    assert!(u
        .units
        .iter()
        .any(|x| x.text.starts_with("warning: unused variable") && x.sev == Severity::Warn));
}

#[test]
fn a_minified_html_page_is_cut_into_its_paragraphs() {
    let body: String = (0..40)
        .map(|i| {
            format!("<p class=\"x\">Paragraph {i} says the fleet is at {i}0 percent today.</p>")
        })
        .collect();
    let page = format!(
        "<html><head><title>T</title><script>var a = 1;</script></head><body>{body}</body></html>"
    );
    let u = build(&page, Kind::Html);
    assert!(u.units.len() >= 40, "{}", u.units.len());
    assert!(u
        .units
        .iter()
        .any(|x| x.text == "Paragraph 7 says the fleet is at 70 percent today."));
    assert!(u.units.iter().all(|x| !x.text.contains("var a")));
}
