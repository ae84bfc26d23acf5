//! Tests of the unit builders.

use super::*;

/// The record units of `u`, in order.
fn records(u: &Units) -> Vec<&Unit> {
    u.units
        .iter()
        .filter(|x| x.kind == UnitKind::Record)
        .collect()
}

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
    let rec = records(&u);
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
    let rec = records(&u);
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

#[test]
fn nested_records_are_anchored_where_the_file_has_them() {
    // Suites of specs of results: each level's records end with a nested array, so the
    // next record's key must be searched after it, not one record further on.
    let mut suites = Vec::new();
    for s in 0..3 {
        let specs: Vec<_> = (0..3)
            .map(|k| {
                let results: Vec<_> = (0..3)
                    .map(|r| serde_json::json!({"worker": s * 10 + k, "retry": r, "status": "passed"}))
                    .collect();
                serde_json::json!({"title": format!("spec {s}.{k}"), "results": results})
            })
            .collect();
        suites.push(serde_json::json!({"title": format!("suite {s}"), "specs": specs}));
    }
    let text = serde_json::to_string_pretty(&serde_json::json!({ "suites": suites })).unwrap();
    let u = build(&text, Kind::Json);
    let lines: Vec<&str> = text.lines().collect();
    let mut checked = 0;
    for x in u.units.iter().filter(|x| x.kind == UnitKind::Record) {
        // The anchor line holds the record's first pair.
        let first = x.pairs[0].trim_end_matches(',');
        assert!(
            lines[x.line - 1].contains(first),
            "L{} is {:?}, not {first}",
            x.line,
            lines[x.line - 1]
        );
        checked += 1;
    }
    assert_eq!(checked, 3 + 9 + 27);
}

#[test]
fn json_pairs_and_leaves_keep_the_files_commas() {
    let text = "{\n  \"cpu_count\": 8,\n  \"os\": \"Linux\",\n  \"items\": [\n    {\"id\": 1, \"ok\": true},\n    {\"id\": 2, \"ok\": false},\n    {\"id\": 3, \"ok\": true}\n  ]\n}";
    let u = build(text, Kind::Json);
    let leaf = |ctx: &str| {
        u.units
            .iter()
            .find(|x| x.kind == UnitKind::Leaf && x.context == ctx)
            .map(|x| x.text.clone())
    };
    // As the file writes them: a comma after every member but an object's last.
    assert_eq!(leaf("cpu_count").as_deref(), Some("\"cpu_count\": 8,"));
    assert_eq!(leaf("os").as_deref(), Some("\"os\": \"Linux\","));
    let rec = u.units.iter().find(|x| x.kind == UnitKind::Record).unwrap();
    assert_eq!(rec.pairs, vec!["\"id\": 1,", "\"ok\": true"]);
    // Shown in part or whole, no comma is doubled or left before a brace.
    assert_eq!(rec.render_pairs(&[0]), "\"id\": 1, …");
    assert_eq!(rec.render_pairs(&[1]), "… \"ok\": true");
    assert_eq!(rec.render_pairs(&[0, 1]), "{\"id\": 1, \"ok\": true}");
}

#[test]
fn long_arrays_of_strings_are_lines_of_text() {
    // A notebook cell's stream output: one string per printed line.
    let out: Vec<String> = (1..=20).map(|i| format!("repo{i} - id: {i}\n")).collect();
    let doc = serde_json::json!({"cells": [
        {"cell_type": "code", "outputs": [{"name": "stdout", "text": out}]},
        {"cell_type": "code", "outputs": []},
        {"cell_type": "markdown", "source": ["# Title"]}
    ]});
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let u = build(&text, Kind::Json);
    let lines: Vec<&str> = text.lines().collect();
    let l = u
        .units
        .iter()
        .find(|x| x.text == "repo17 - id: 17")
        .expect("each string is a line unit, without its newline");
    assert_eq!(l.kind, UnitKind::Line);
    assert!(lines[l.line - 1].contains("repo17 - id: 17"), "L{}", l.line);
}

#[test]
fn json_inside_a_long_line_of_text_is_walked() {
    // A recorded HTTP exchange: header lines, then the body as one compact JSON line.
    let items: Vec<_> = (0..30)
        .map(|i| {
            serde_json::json!({"full_name": format!("o/r{i}"), "stargazers_count": 1000 - i,
            "description": "x".repeat(40)})
        })
        .collect();
    let body = serde_json::json!({"total_count": 2723, "items": items}).to_string();
    let text = format!("https\nGET\napi.example.com\n200\n{body}\n");
    let u = build(&text, Kind::Lines);
    let rec = records(&u);
    assert_eq!(rec.len(), 30);
    assert!(rec.iter().all(|x| x.line == 5));
    assert!(
        rec[3].text.contains("\"full_name\":\"o/r3\","),
        "{}",
        rec[3].text
    );
    // Records are grouped by their shape, the text's lines still mined.
    assert!(rec.iter().all(|x| x.template == rec[0].template));
    assert!(u.templates[rec[0].template].shaped);
    assert!(u
        .units
        .iter()
        .any(|x| x.kind == UnitKind::Leaf && x.text == "\"total_count\":2723,"));
    // After a bracketed prefix, as a log line writes its payload.
    let u = build(&format!("2024-05-01 [INFO] payload {body}\n"), Kind::Lines);
    assert_eq!(records(&u).len(), 30);
    assert!(u.units[0].text.starts_with("2024-05-01 [INFO] payload"));
    // A long line that is not JSON is cut into parts as before.
    let u = build(&format!("{{not json {}\n", "a, ".repeat(800)), Kind::Lines);
    assert!(u.units.iter().all(|x| x.kind == UnitKind::Part));
}

#[test]
fn a_records_nested_scalars_are_its_pairs_not_leaves_again() {
    // Listing children: each record's `data` object is walked for its `preview` array, but
    // its title and counts are pairs of the record already.
    let kids: Vec<_> = (0..4)
        .map(|i| {
            serde_json::json!({"kind": "t3", "data": {"title": format!("post {i}"),
            "num_comments": 10 * i, "preview": [{"url": format!("https://i/{i}")}]}})
        })
        .collect();
    let text =
        serde_json::to_string_pretty(&serde_json::json!({"data": {"children": kids}})).unwrap();
    let u = build(&text, Kind::Json);
    let with = |s: &str| u.units.iter().filter(|x| x.text.contains(s)).count();
    assert_eq!(with("\"post 2\""), 1, "{:#?}", u.units);
    assert!(u.units.iter().any(
        |x| x.kind == UnitKind::Record && x.pairs.iter().any(|p| p == "\"num_comments\": 20,")
    ));
    // The nested one-object array is part of the record, once.
    assert_eq!(with("https://i/3"), 1);
}

#[test]
fn delimited_rows_keep_their_cells_as_the_file_writes_them() {
    // A `|`-separated export whose free-text column holds an unbalanced quote.
    let mut text = String::from("Class|No|Site|Text\n");
    for i in 0..6 {
        let class = if i == 4 {
            "UNUSUAL EVENT"
        } else {
            "NON EMERGENCY"
        };
        text.push_str(&format!(
            "{class}|{}|SITE {i}|COOLING  \"On May {i}, the unit tripped\n",
            46600 + i
        ));
    }
    let u = build(&text, Kind::Lines);
    let rec = records(&u);
    assert_eq!(
        rec.len(),
        6,
        "the quote inside a cell does not merge the rows' cells"
    );
    let r = rec[4];
    assert_eq!(r.pairs[0], "UNUSUAL EVENT");
    assert_eq!(r.pairs[3], "COOLING  \"On May 4, the unit tripped");
    assert_eq!(r.render_pairs(&[1, 2]), "… 46604|SITE 4 …");
    assert_eq!(r.render_pairs(&[0, 1, 2, 3]), text.lines().nth(5).unwrap());
    // Quoted CSV fields still hold their delimiter.
    let csv = "a,b,c\n\"x, y\",2,3\n\"p \"\"q\"\"\",5,6\nz,8,9\n";
    let u = build(csv, Kind::Csv);
    let r = u.units.iter().find(|x| x.kind == UnitKind::Record).unwrap();
    assert_eq!(r.pairs, vec!["\"x, y\"", "2", "3"]);
}

#[test]
fn a_leading_label_of_a_few_words_is_a_field() {
    let f = line_fields("  BGP state = Idle, down for 3d16h, retry in 00:00:33");
    assert_eq!(f[0], ("BGP state".to_string(), "Idle".to_string()));
    let f = line_fields("  Local host: 187.113.144.52, Local port: 42267");
    assert_eq!(
        f[0],
        ("Local host".to_string(), "187.113.144.52".to_string())
    );
    // One word is the key=value rule's; prose with a colon late in it is no label.
    assert!(line_fields("state=ok").iter().all(|(k, _)| k == "state"));
    assert!(line_fields("We saw that the build failed: see above")
        .iter()
        .all(|(k, _)| !k.contains(' ')));
}

#[test]
fn an_address_is_no_key_and_value() {
    let f = line_fields("  see https://github.blog/changelog for details, retry=3");
    assert_eq!(f, vec![("retry".to_string(), "3".to_string())]);
    assert!(line_fields("  Merge branch 'master' of github.com:obeattie/flask").is_empty());
    // A dotted key with a space before its value stays one.
    assert_eq!(
        line_fields("net.core.somaxconn: 4096"),
        vec![("net.core.somaxconn".to_string(), "4096".to_string())]
    );
}

#[test]
fn a_minified_pages_structured_data_is_walked() {
    let para =
        "<p>The warming limit is dead, unless we take purposeful actions now.</p>".repeat(30);
    let page = format!(
        "<html><head><script type=\"application/ld+json\">{{\"@type\":\"NewsArticle\",\"headline\":\"Hansen warns\",\"datePublished\":\"2023-11-02\",\"author\":[{{\"@type\":\"Person\",\"name\":\"A. de la Garza\"}}]}}</script></head><body>{para}</body></html>"
    );
    let u = build(&page, Kind::Html);
    let leaf = |t: &str| {
        u.units
            .iter()
            .any(|x| x.kind == UnitKind::Leaf && x.text == t)
    };
    assert!(leaf("\"datePublished\":\"2023-11-02\","), "{:#?}", u.units);
    assert!(leaf("\"name\":\"A. de la Garza\""));
    assert!(u
        .units
        .iter()
        .any(|x| x.text.contains("purposeful actions")));
}

#[test]
fn a_nested_record_carries_the_outermost_records_name() {
    let suites: Vec<_> = (0..3)
        .map(|s| {
            serde_json::json!({"title": format!("tests/s{s}.spec.ts"), "specs": [
                {"title": "works", "results": [{"status": "passed"}, {"status": "failed"}, {"status": "passed"}]}
            ]})
        })
        .collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({ "suites": suites })).unwrap();
    let u = build(&text, Kind::Json);
    let failed: Vec<&Unit> = u
        .units
        .iter()
        .filter(|x| x.kind == UnitKind::Record && x.text.contains("failed"))
        .collect();
    assert_eq!(failed.len(), 3);
    assert_eq!(failed[1].parent, "\"title\": \"tests/s1.spec.ts\",");
    // The outermost records themselves name nothing above them.
    assert!(u
        .units
        .iter()
        .filter(|x| x.context == "suites[]")
        .all(|x| x.parent.is_empty()));
}

#[test]
fn a_records_small_list_of_objects_is_part_of_it() {
    // A package's one external reference is shown with the package, not as a record of its
    // own; a longer list of objects stays records.
    let pkgs: Vec<_> = (0..6)
        .map(|i| {
            serde_json::json!({
                "name": format!("pkg{i}"),
                "externalRefs": [{"referenceLocator": format!("pkg:gem/pkg{i}@1.{i}"), "referenceType": "purl"}],
                "files": (0..4).map(|j| serde_json::json!({"path": format!("f{j}"), "size": j})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({ "packages": pkgs })).unwrap();
    let u = build(&text, Kind::Json);
    let recs = records(&u);
    let pkg = recs
        .iter()
        .find(|r| r.pairs.iter().any(|p| p == "\"name\": \"pkg3\","))
        .expect("the package record");
    assert!(
        pkg.pairs
            .iter()
            .any(|p| p.ends_with("\"referenceLocator\": \"pkg:gem/pkg3@1.3\",")),
        "{:?}",
        pkg.pairs
    );
    assert!(!recs.iter().any(|r| r.context.ends_with("externalRefs[]")));
    assert!(recs.iter().any(|r| r.context.ends_with("files[]")));
}

#[test]
fn pairs_keep_dotted_keys_and_the_files_openers() {
    // A label key holds dots; a nested object's first member comes after its parent's key
    // and brace, as the file writes them.
    let recs: Vec<_> = (0..3)
        .map(|i| {
            serde_json::json!({
                "name": format!("pod{i}"),
                "app.kubernetes.io/name": "web",
                "code": {"code": "clippy::unwrap_used", "explanation": null},
                "author": [{"@type": "Person", "name": "Ada"}],
            })
        })
        .collect();
    let text = serde_json::json!({ "items": recs }).to_string();
    let u = build(&text, Kind::Json);
    let rec = records(&u)[0];
    assert!(
        rec.pairs
            .contains(&"\"app.kubernetes.io/name\":\"web\",".to_string()),
        "{:?}",
        rec.pairs
    );
    assert!(
        rec.pairs
            .contains(&"\"code\":{\"code\":\"clippy::unwrap_used\",".to_string()),
        "{:?}",
        rec.pairs
    );
    assert!(
        rec.pairs
            .contains(&"\"author\":[{\"@type\":\"Person\",".to_string()),
        "{:?}",
        rec.pairs
    );
    for p in &rec.pairs {
        assert!(
            text.contains(p.trim_end_matches(',')),
            "{p} is not the file's text"
        );
    }
}

#[test]
fn a_key_name_with_its_number_is_no_field() {
    // A Redis key alone on its line or quoted is an id: no `order` of 99567 to rank.
    assert!(line_fields("order:99567").is_empty());
    assert!(line_fields("  1) \"session:99424\"").is_empty());
    // A count written tight after its key in a line of fields is one.
    let f = line_fields("ts=12 retries:3 state=ok");
    assert!(f.iter().any(|(k, v)| k == "retries" && v == "3"), "{f:?}");
}

#[test]
fn a_file_and_its_line_are_no_field() {
    let f = line_fields("  at java.lang.ClassLoader.checkCerts (ClassLoader.java:767)");
    assert!(f.iter().all(|(k, _)| k != "ClassLoader.java"), "{f:?}");
    let f = line_fields("error at src/main.rs:12:5 took:12ms retries=3 app.version=7");
    let keys: Vec<&str> = f.iter().map(|(k, _)| k.as_str()).collect();
    assert!(
        !keys.contains(&"src/main.rs") && !keys.contains(&"main.rs"),
        "{keys:?}"
    );
    assert!(
        keys.contains(&"took") && keys.contains(&"retries"),
        "{keys:?}"
    );
    assert!(
        keys.contains(&"app.version"),
        "a key=value with a dotted key stays: {keys:?}"
    );
}

#[test]
fn a_json_arrays_elements_are_anchored_on_their_own_lines() {
    let text = "{\n  \"name\": \"pkg\",\n  \"requires\": [\n    \"alpha>=1\",\n    \"beta; extra == 'test'\",\n    7\n  ],\n  \"tags\": [\n    \"alpha>=1\"\n  ]\n}\n";
    let u = build(text, Kind::Json);
    let at = |t: &str| -> Vec<usize> {
        u.units
            .iter()
            .filter(|x| x.text.starts_with(t))
            .map(|x| x.line)
            .collect()
    };
    assert_eq!(at("\"beta"), vec![5]);
    assert_eq!(at("7"), vec![6]);
    // The same value in two arrays: each where the file has it.
    assert_eq!(at("\"alpha"), vec![4, 9]);
}

#[test]
fn a_records_short_list_is_shown_as_the_file_writes_it() {
    let mut text = String::from("[\n");
    for i in 0..4 {
        text.push_str(&format!(
            "  {{\n    \"name\": \"p{i}\",\n    \"tags\": [\n      \"a{i}\",\n      \"b{i}\"\n    ],\n    \"ok\": true\n  }}{}\n",
            if i < 3 { "," } else { "" }
        ));
    }
    text.push_str("]\n");
    let u = build(&text, Kind::Json);
    let rec = records(&u);
    assert_eq!(rec.len(), 4);
    let whole = rec[1].render_pairs(&(0..rec[1].pairs.len()).collect::<Vec<_>>());
    // One key, its list in brackets: never `"tags": "a1", "tags": "b1"`.
    assert!(whole.contains("\"tags\": [ \"a1\", \"b1\" ],"), "{whole}");
    assert_eq!(whole.matches("\"tags\"").count(), 1, "{whole}");
    assert!(
        rec[1].text.contains("\"tags\": [ \"a1\", \"b1\" ]"),
        "{}",
        rec[1].text
    );
    // Collapsed, the rendering is the file's own text.
    let flat = crate::bench::score::collapse(&text);
    assert!(
        flat.contains(&crate::bench::score::collapse(
            whole.trim_start_matches('{').trim_end_matches('}')
        )),
        "{whole}"
    );
}

#[test]
fn a_short_record_is_shown_as_the_file_writes_it() {
    let recs = |sep: &str, open: &str| -> String {
        (0..4)
            .map(|i| format!("{open}\"args\":{sep}{{\"data\":{sep}{{\"name\":{sep}\"a{i}\"}}}},{sep}\"name\":{sep}\"Ev{i}\",{sep}\"ts\":{sep}{i}}}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let flat = crate::bench::score::collapse;
    for (text, want) in [
        // Minified, and Python's `json.dumps` spacing.
        (
            format!("{{\"events\":[{}]}}", recs("", "{")),
            "{\"args\":{\"data\":{\"name\":\"a2\"}},\"name\":\"Ev2\",\"ts\":2}".to_string(),
        ),
        (
            format!("{{\"events\": [{}]}}", recs(" ", "{")),
            "{\"args\": {\"data\": {\"name\": \"a2\"}}, \"name\": \"Ev2\", \"ts\": 2}".to_string(),
        ),
    ] {
        let u = build(&text, Kind::Json);
        let r = records(&u);
        assert_eq!(r.len(), 4, "{text}");
        assert_eq!(r[2].text, want);
        assert!(flat(&text).contains(&flat(&r[2].text)));
    }
    // One member per line: shown with the whitespace collapsed, as the file reads.
    let v: serde_json::Value =
        serde_json::from_str(&format!("{{\"events\":[{}]}}", recs("", "{"))).unwrap();
    let pretty = serde_json::to_string_pretty(&v).unwrap();
    let u = build(&pretty, Kind::Json);
    let r = records(&u);
    assert_eq!(
        r[1].text,
        "{ \"args\": { \"data\": { \"name\": \"a1\" } }, \"name\": \"Ev1\", \"ts\": 1 }"
    );
    assert!(flat(&pretty).contains(&r[1].text));
}

#[test]
fn a_leaf_and_its_attribute_are_shown_once() {
    // `<admin-status format="Enabled">up</admin-status>` is one pair in the file, two fields
    // (the value and the attribute): kept both, it is written once.
    let mut text = String::from("<interfaces>\n");
    for i in 0..6 {
        text.push_str(&format!(
            "  <interface>\n    <name>ge-0/0/{i}</name>\n    <admin-status format=\"Enabled\">up</admin-status>\n    <oper-status>down</oper-status>\n  </interface>\n"
        ));
    }
    text.push_str("</interfaces>\n");
    let u = build(&text, Kind::Lines);
    let r = records(&u)
        .into_iter()
        .find(|r| r.text.contains("ge-0/0/2<"))
        .unwrap();
    let all: Vec<usize> = (0..r.pairs.len()).collect();
    let shown = r.render_pairs_with(&all, &Default::default());
    assert_eq!(
        shown,
        "<name>ge-0/0/2</name> <admin-status format=\"Enabled\">up</admin-status> <oper-status>down</oper-status>"
    );
}

#[test]
fn a_map_of_records_makes_each_member_a_record_opened_by_its_key() {
    let mut pkgs = serde_json::Map::new();
    for (i, name) in ["a", "b", "core-js", "d", "e", "f"].iter().enumerate() {
        let license = if i == 2 { "GPL-3.0" } else { "MIT" };
        pkgs.insert(
            format!("node_modules/{name}"),
            serde_json::json!({"version": "1.0.0", "license": license}),
        );
    }
    let text = serde_json::to_string_pretty(&serde_json::json!({"packages": pkgs})).unwrap();
    let u = build(&text, Kind::Json);
    let recs: Vec<&crate::guard::reduce::units::Unit> = u
        .units
        .iter()
        .filter(|x| x.kind == UnitKind::Record)
        .collect();
    assert_eq!(recs.len(), 6, "{:?}", u.units);
    let lines: Vec<&str> = text.lines().collect();
    let r = recs[2];
    // As the file writes it (whitespace collapsed), after its key.
    assert_eq!(
        r.text,
        "\"node_modules/core-js\": { \"version\": \"1.0.0\", \"license\": \"GPL-3.0\" }"
    );
    assert_eq!(
        lines[r.line - 1].trim(),
        "\"node_modules/core-js\": {",
        "its key's line"
    );
    assert_eq!(r.parent, "\"node_modules/core-js\":");
    // The members share their fields: `license` is one field of six values, not six fields.
    let lic: std::collections::HashSet<usize> = recs
        .iter()
        .flat_map(|x| x.fields.iter())
        .filter(|(f, _)| u.fields[*f].name == "license")
        .map(|(f, _)| *f)
        .collect();
    assert_eq!(lic.len(), 1);
    // Sections of a document are no map: no records.
    let doc = serde_json::json!({"a": {"x": 1}, "b": {"y": 2}, "c": {"z": 3}, "d": {"w": 4}, "e": {"v": 5}});
    let u = build(&serde_json::to_string_pretty(&doc).unwrap(), Kind::Json);
    assert!(u.units.iter().all(|x| x.kind != UnitKind::Record));
}

#[test]
fn a_one_line_map_of_records_is_quoted_with_its_own_spacing() {
    // checksec's spacing: `"key": { "a":"x","b":"y", "c":"z"}`, on one line.
    let mut text = String::from("{ \"dir\": { \"name\":\"/usr/bin\" }");
    for (i, b) in ["gzip", "node", "zstd", "file", "top", "wall"]
        .iter()
        .enumerate()
    {
        let pie = if i == 1 { "no" } else { "yes" };
        text.push_str(&format!(
            ", \"/usr/bin/{b}\": {{ \"relro\":\"full\",\"pie\":\"{pie}\", \"filename\":\"/usr/bin/{b}\"}}"
        ));
    }
    text.push_str(" }");
    let u = build(&text, Kind::Json);
    let node = u
        .units
        .iter()
        .find(|x| x.kind == UnitKind::Record && x.text.contains("node"))
        .expect("a record per binary");
    assert_eq!(
        node.text,
        "\"/usr/bin/node\": { \"relro\":\"full\",\"pie\":\"no\", \"filename\":\"/usr/bin/node\"}"
    );
    assert!(text.contains(&node.text));
}

#[test]
fn a_line_cut_around_its_matches_keeps_the_id_it_starts_with() {
    let seq = "ACGT".repeat(120);
    let line = format!("SRR065390.25192538\t0\tchrI\t95\t{seq}\tXM:i:25\tNM:i:28");
    let u = build(&line, Kind::Lines);
    let q = crate::guard::reduce::rank::Query::new("Which reads have the highest NM?");
    let shown = u.units[0].display(&q);
    assert!(
        shown.starts_with(&format!(
            "SRR065390.25192538 {}",
            crate::guard::reduce::CUT_MARK
        )),
        "{shown}"
    );
    assert!(shown.ends_with("NM:i:28"), "{shown}");
    // A first token that is no id (a word) is not kept.
    let line = format!("pair\t0\tchrI\t95\t{seq}\tNM:i:28");
    let u = build(&line, Kind::Lines);
    assert!(u.units[0]
        .display(&q)
        .starts_with(crate::guard::reduce::CUT_MARK));
}

#[test]
fn records_are_written_with_the_escapes_their_text_uses() {
    // PHP and the NVD API write `\/`; Python's json.dumps writes `\u00e9`.
    let recs: Vec<String> = (0..3)
        .map(|i| format!(r#"{{"id": "CVE-{i}", "url": "https:\/\/nvd.nist.gov\/vuln\/{i}"}}"#))
        .collect();
    let text = format!(r#"{{"items": [{}]}}"#, recs.join(", "));
    let u = build(&text, Kind::Json);
    let rec = records(&u)[0];
    assert!(
        rec.pairs
            .iter()
            .any(|p| p.contains(r#""https:\/\/nvd.nist.gov\/vuln\/0""#)),
        "{:?}",
        rec.pairs
    );
    assert!(
        text.contains(&rec.text) || rec.text.contains(r#"\/vuln\/0"#),
        "{}",
        rec.text
    );
    let recs: Vec<String> = (0..3)
        .map(|i| format!(r#"{{"name": "Caf\u00e9 {i}", "n": {i}}}"#))
        .collect();
    let text = format!(r#"{{"items": [{}]}}"#, recs.join(", "));
    let u = build(&text, Kind::Json);
    let shown: Vec<String> = records(&u).iter().flat_map(|r| r.pairs.clone()).collect();
    assert!(
        shown.iter().any(|p| p.contains(r#""Caf\u00e9 1""#)),
        "{shown:?}"
    );
}

/// Bars inside parentheses or brackets or a flags' or (strace's `O_RDONLY|O_CLOEXEC|…`): the
/// lines are no pipe-separated table, and their text names no column.
#[test]
fn a_name_with_its_scope_is_no_field() {
    // Debtags, C++ and Rust paths: `works-with::file` is no `works-with` of `:file`.
    let f = line_fields(" works-with::audio, works-with::software:package, works-with::text");
    assert!(f.is_empty(), "{f:?}");
    let f = line_fields("0000000000a8e30 T std::set_terminate(void (*)()) size=12");
    assert_eq!(f, [("size".to_string(), "12".to_string())]);
}

#[test]
fn names_listed_in_json_are_no_errors() {
    // Session 43's trial: `go list -json`'s `"errors",` imports were error lines.
    let mut text = String::new();
    for i in 0..3 {
        text.push_str(&format!(
            "{{\n\t\"ImportPath\": \"crypto/p{i}\",\n\t\"Imports\": [\n\t\t\"errors\",\n\t\t\"io\"\n\t]\n}}\n"
        ));
    }
    let u = build(&text, Kind::Lines);
    assert!(u.structured);
    assert!(
        u.units.iter().all(|x| x.sev == Severity::None),
        "{:?}",
        u.units
            .iter()
            .filter(|x| x.sev != Severity::None)
            .map(|x| &x.text)
            .collect::<Vec<_>>()
    );
    let p1 = u
        .units
        .iter()
        .find(|x| x.text.contains("crypto/p1"))
        .expect("a record per object");
    assert_eq!(p1.kind, UnitKind::Record);
    assert_eq!(p1.line, 9);
}

#[test]
fn a_size_keeps_its_unit_so_sizes_in_kib_and_mib_compare() {
    use crate::guard::reduce::signals::number;
    let f = super::line_fields(
        "a.py:10: size=19.9 MiB (+19.9 MiB), count=60001 (+60001), average=347 B",
    );
    assert!(
        f.contains(&("size".to_string(), "19.9 MiB".to_string())),
        "{f:?}"
    );
    assert!(
        f.contains(&("average".to_string(), "347 B".to_string())),
        "{f:?}"
    );
    assert!(number("19.9 MiB").unwrap() > number("10026 B").unwrap());
    assert!(number("3750 KiB").unwrap() > number("10026 B").unwrap());
    // A padded `/proc` field is one field, with its unit.
    assert_eq!(
        super::line_fields("Rss:              315852 kB"),
        vec![("Rss".to_string(), "315852 kB".to_string())]
    );
    // A word after a number is no unit.
    assert_eq!(number("3 apples"), None);
    let f = super::line_fields("took=12 apples");
    assert!(f.contains(&("took".to_string(), "12".to_string())), "{f:?}");
}

#[test]
fn a_key_joined_by_a_plus_is_one_field() {
    // An Erlang crash dump's `Stack+heap: 1439468` (live set of session 55).
    assert_eq!(
        line_fields("Stack+heap: 1439468"),
        vec![("Stack+heap".to_string(), "1439468".to_string())]
    );
}
