//! Tests of the JSON reduction.

use super::*;
use crate::guard::reduce::rank::Query;

fn ctx(q: &Query) -> Ctx<'_> {
    Ctx {
        query: q,
        exit_code: None,
        bytes: 0,
    }
}

#[test]
fn spans_find_array_elements() {
    let t = "{\n \"jobs\": [\n  {\"id\": 1},\n  {\"id\": 2}\n ]\n}";
    let (a, k) = spans(t, 3);
    let starts = line_starts(t);
    let offs = &a[&vec!["jobs".to_string()]];
    assert_eq!(
        offs.iter()
            .map(|&o| line_of(&starts, o))
            .collect::<Vec<_>>(),
        vec![3, 4]
    );
    assert_eq!(line_of(&starts, k[&vec!["jobs".to_string()]]), 2);
}

#[test]
fn failing_record_is_kept() {
    let mut jobs = Vec::new();
    for i in 0..100 {
        if i == 42 {
            jobs.push(serde_json::json!({"id": format!("job-{i}"), "status": "failed", "error": "OOMKilled", "exit_code": 137}));
        } else {
            jobs.push(serde_json::json!({"id": format!("job-{i}"), "status": "succeeded"}));
        }
    }
    let t = serde_json::json!({ "jobs": jobs }).to_string();
    let q = Query::new("did any job fail?");
    let r = reduce(&t, Kind::Json, &ctx(&q)).unwrap();
    let errs: Vec<&Item> = r
        .items
        .iter()
        .filter(|i| i.section == Section::Errors)
        .collect();
    assert_eq!(errs.len(), 1);
    // Quoted as the file writes it (minified), not re-ordered: the text is in the file.
    assert!(errs[0].text.contains("\"exit_code\":137") && errs[0].text.contains("job-42"));
    assert!(t.contains(&errs[0].text), "{}", errs[0].text);
    assert_eq!(r.failed, Some(true));
    // Pretty-printed, it reads as the file does with its whitespace collapsed.
    let pretty = serde_json::to_string_pretty(&serde_json::json!({ "jobs": jobs })).unwrap();
    let r = reduce(&pretty, Kind::Json, &ctx(&q)).unwrap();
    let err = r
        .items
        .iter()
        .find(|i| i.section == Section::Errors)
        .unwrap();
    assert!(err.text.starts_with("{ \"id\": \"job-42\""), "{}", err.text);
    assert!(crate::bench::score::collapse(&pretty).contains(&err.text));
}

#[test]
fn base64_is_described() {
    let big = "QUJD".repeat(100);
    let v = serde_json::json!({"data": big, "mimeType": "image/png"});
    let s = render(&v, 1000);
    assert!(s.contains("<base64 data, not shown>") && !s.contains("QUJDQUJD"));
    // A long string is cut after its closing quote: the quoted part is the input's.
    let long = serde_json::json!({"msg": "abc ".repeat(100)});
    let s = render(&long, 1000);
    assert!(s.contains("\"abc abc") && s.contains("\"…[cut]"), "{s}");
}

#[test]
fn a_record_shows_what_sets_it_apart_from_its_siblings() {
    // Ten records sharing boilerplate; each one's answer sits in a nested list.
    let recs: Vec<serde_json::Value> = (0..10)
        .map(|i| {
            serde_json::json!({
                "id": format!("{}", 100 + i),
                "deleted": false,
                "description": "A domain and IP address seen as a tuple in a specific time frame.",
                "uuid": "5a3c3045-ab0c-4d38-8efe-459002de0b81",
                "Attribute": [
                    {"type": "domain", "value": format!("host{i}.example"), "event_id": "9747"},
                    {"type": "ip-dst", "value": format!("10.0.0.{i}"), "event_id": "9747"}
                ]
            })
        })
        .collect();
    let maps: Vec<&serde_json::Map<String, serde_json::Value>> =
        recs.iter().filter_map(|r| r.as_object()).collect();
    let constant = render::Constant::of(&maps);
    let q = Query::new("which domains and IPs");
    let shown = render::distinct(maps[3], 200, &constant, &q);
    assert!(shown.contains("\"value\": \"host3.example\""), "{shown}");
    assert!(shown.contains("\"value\": \"10.0.0.3\""), "{shown}");
    assert!(
        !shown.contains("description"),
        "shared boilerplate: {shown}"
    );
    assert!(!shown.contains("event_id"), "{shown}");
    // A short list keeps its shared fields: there they may be the answer.
    let few = render::Constant::of(&maps[..4]);
    let shown = render::distinct(maps[0], 400, &few, &q);
    assert!(shown.contains("deleted"), "{shown}");
}

#[test]
fn a_record_shown_in_part_marks_the_members_left_out_in_file_order() {
    let recs: Vec<serde_json::Value> = (0..20)
        .map(|i| {
            serde_json::json!({
                "Key": format!("builds/api/{i}.tar.gz"),
                "ETag": format!("\"{i:032x}\""),
                "ChecksumAlgorithm": ["CRC32"],
                "Size": 1000 + i,
                "StorageClass": "STANDARD"
            })
        })
        .collect();
    let maps: Vec<&serde_json::Map<String, serde_json::Value>> =
        recs.iter().filter_map(|r| r.as_object()).collect();
    let constant = render::Constant::of(&maps);
    let shown = render::distinct(maps[3], 300, &constant, &Query::new("largest object size"));
    // The shared checksum list sits between ETag and Size, the shared class after Size.
    assert!(
        shown.contains("\"Size\": 1003, …}") && shown.contains(", … \"Size\""),
        "{shown}"
    );
    assert!(shown.starts_with("{\"Key\""), "{shown}");
}

#[test]
fn a_wide_documents_kind_fact_names_its_first_keys() {
    let mut m = serde_json::Map::new();
    for i in 0..30 {
        m.insert(format!("key_{i:02}"), serde_json::json!(i));
    }
    let t = serde_json::Value::Object(m).to_string();
    let q = Query::new("");
    let r = reduce(&t, Kind::Json, &ctx(&q)).unwrap();
    let kind = r
        .items
        .iter()
        .find(|i| i.text.starts_with("kind: json"))
        .expect("the kind fact");
    assert!(kind
        .text
        .contains("top-level object with 30 keys (key_00: number"));
    assert!(kind.text.contains("key_07: number, …)"), "{}", kind.text);
    assert!(!kind.text.contains("key_08"), "{}", kind.text);
}

#[test]
fn failures_nested_below_the_records_are_not_called_none() {
    let suite = |name: &str, status: &str| serde_json::json!({"title": name, "specs": [{"tests": [{"results": [{"status": status}]}]}]});
    let doc = |last: &str| {
        serde_json::json!({"suites": [suite("a.spec.ts", "passed"), suite("b.spec.ts", "passed"), suite("c.spec.ts", last)]})
            .to_string()
    };
    let q = Query::new("which tests failed?");
    let r = reduce(&doc("failed"), Kind::Json, &ctx(&q)).expect("a JSON document");
    assert_eq!(r.failed, Some(true), "{}", r.status);
    assert!(r.status.contains("1 nested object failing"), "{}", r.status);
    assert!(!r.status.contains("none failing by"), "{}", r.status);
    let r = reduce(&doc("passed"), Kind::Json, &ctx(&q)).expect("a JSON document");
    assert_eq!(r.failed, Some(false));
    assert!(r.status.contains("none failing by"), "{}", r.status);
}

#[test]
fn a_key_that_is_no_identifier_is_quoted_in_the_jq_path() {
    let k = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        jq_path(&k(&["items", "machineTypes"])),
        ".items.machineTypes"
    );
    assert_eq!(
        jq_path(&k(&["items", "zones/us-central1-a", "machineTypes"])),
        r#".items["zones/us-central1-a"].machineTypes"#
    );
    assert_eq!(jq_path(&k(&["a \"b\"", "x"])), r#".["a \"b\""].x"#);
    assert_eq!(jq_path(&k(&["2024", "é"])), r#".["2024"]["é"]"#);
    // The document's label and the next action name the records by that path.
    let doc = serde_json::json!({"items": {"zones/us-central1-a": {"machineTypes": [
        {"name": "n1-standard-1", "guestCpus": 1}, {"name": "n1-standard-2", "guestCpus": 2},
        {"name": "n1-standard-4", "guestCpus": 4}]}}})
    .to_string();
    let q = Query::new("");
    let r = reduce(&doc, Kind::Json, &ctx(&q)).expect("a JSON document");
    assert!(
        r.status
            .contains(r#"array .items["zones/us-central1-a"].machineTypes"#),
        "{}",
        r.status
    );
    assert!(
        r.next_action
            .contains(r#".items["zones/us-central1-a"].machineTypes[]"#),
        "{}",
        r.next_action
    );
}

#[test]
fn a_nested_object_without_a_naming_field_is_never_shown_empty() {
    // Build events: each `id` is an object keyed by the event's type, none of whose fields
    // name it. `{"id": {}}` would say the id is empty: such a record is not shown by it.
    let events: Vec<serde_json::Value> = ["started", "progress", "buildFinished", "testResult"]
        .iter()
        .map(|k| serde_json::json!({"id": {*k: {"attempt": 1}}, "children": [{"progress": {}}]}))
        .collect();
    let m = events[0].as_object().expect("an object");
    assert_eq!(render::identity(m, 200), "");
    // A nested object that has a naming field is shown by it.
    let named = serde_json::json!({"id": {"name": "//src:lib_test", "extra": 3}, "x": 1});
    let s = render::identity(named.as_object().expect("an object"), 200);
    assert!(s.contains("\"id\": {\"name\": \"//src:lib_test\"}"), "{s}");
    // In the reduction, no record is shown as an empty id.
    let doc = serde_json::json!({ "events": events }).to_string();
    let q = Query::new("did the tests run?");
    let r = reduce(&doc, Kind::Json, &ctx(&q)).expect("a JSON document");
    assert!(
        r.items.iter().all(|i| !i.text.contains("\"id\": {}")),
        "{:?}",
        r.items.iter().map(|i| &i.text).collect::<Vec<_>>()
    );
}

#[test]
fn a_record_that_is_its_whole_line_is_quoted_as_the_file_writes_it() {
    let mut text = String::new();
    for i in 0..6 {
        text.push_str(&format!(
            "{{\"status\":\"Downloading\",\"progressDetail\":{{\"current\":{i}}},\"id\":\"layer{i}\"}}\n"
        ));
    }
    let done = "{\"status\":\"Pull complete\",\"progressDetail\":{},\"id\":\"layer3\"}";
    text.push_str(done);
    text.push('\n');
    let q = Query::new("did the pull complete?");
    let r = reduce(&text, Kind::Ndjson, &ctx(&q)).unwrap();
    let quoted: Vec<&Item> = r.items.iter().filter(|i| i.line == Some(7)).collect();
    assert!(!quoted.is_empty());
    // The line itself, never a re-ordered rendering (`{"id": "layer3", "status": ...}`).
    for it in quoted {
        assert_eq!(it.text, done);
    }
    // A record on a line with more than itself is rendered as before.
    let lines = ["  {\"a\": 1}, {\"a\": 2}"];
    let m: Map<String, Value> = serde_json::from_str("{\"a\": 1}").unwrap();
    assert_eq!(own_line(&lines, Some(1), &m, 400), None);
    let lines = ["  {\"a\": 1},"];
    assert_eq!(
        own_line(&lines, Some(1), &m, 400).as_deref(),
        Some("{\"a\": 1},")
    );
    assert_eq!(
        own_line(&lines, Some(1), &m, 5),
        None,
        "too long to quote whole"
    );
}

#[test]
fn a_records_list_of_values_is_shown_under_its_key_once() {
    let recs: Vec<serde_json::Value> = (0..10)
        .map(|i| {
            serde_json::json!({
                "kind": "update",
                "title": format!("KB{}", 5000 + i),
                "categories": ["Security Updates", format!("Server {i}")]
            })
        })
        .collect();
    let maps: Vec<&serde_json::Map<String, serde_json::Value>> =
        recs.iter().filter_map(|r| r.as_object()).collect();
    let constant = render::Constant::of(&maps);
    let shown = render::distinct(maps[2], 300, &constant, &Query::new("which categories"));
    assert!(
        shown.contains("\"categories\": [\"Security Updates\", \"Server 2\"]"),
        "{shown}"
    );
    assert_eq!(shown.matches("\"categories\"").count(), 1, "{shown}");
}

#[test]
fn a_count_of_errors_fails_only_when_not_zero() {
    let m = |v: serde_json::Value| v.as_object().unwrap().clone();
    assert!(!render::is_failure(&m(
        serde_json::json!({"name": "a", "errors": 0})
    )));
    assert!(!render::is_failure(&m(
        serde_json::json!({"errors": 0.0, "error": null})
    )));
    assert!(render::is_failure(&m(
        serde_json::json!({"name": "b", "errors": 2})
    )));
    assert!(render::is_failure(&m(serde_json::json!({"error": true}))));
    assert!(render::is_failure(&m(serde_json::json!({"error": "boom"}))));
}

#[test]
fn http_statuses_fail_from_400_and_nested_objects_fail_their_record() {
    let m = |v: serde_json::Value| v.as_object().unwrap().clone();
    // A Chrome trace's response: an HTTP status, not an exit status.
    assert!(!render::is_failure(&m(
        serde_json::json!({"statusCode": 200})
    )));
    assert!(render::is_failure(&m(
        serde_json::json!({"statusCode": 503})
    )));
    assert!(render::is_failure(&m(
        serde_json::json!({"status_code": 1})
    )));
    // k6 writes the status as a string.
    assert!(render::is_failure(&m(serde_json::json!({"status": "404"}))));
    assert!(!render::is_failure(&m(
        serde_json::json!({"status": "200"})
    )));
    // A record fails by an object nested in it, not by one in an array or too deep.
    let k6 = m(serde_json::json!(
        {"type": "Point", "data": {"value": 1, "tags": {"status": "404", "url": "http://x/users/20"}}}
    ));
    assert!(!render::is_failure(&k6) && render::record_fails(&k6));
    let ok = m(serde_json::json!({"data": {"tags": {"status": "200"}}}));
    assert!(!render::record_fails(&ok));
    let listed = m(serde_json::json!({"runs": [{"status": "failed"}]}));
    assert!(!render::record_fails(&listed));
    let deep = m(serde_json::json!({"a": {"b": {"c": {"d": {"status": "failed"}}}}}));
    assert!(!render::record_fails(&deep));
}

/// A compact file's record, shown by the pairs that set it apart, is spaced as the file
/// writes JSON: what the summary shows is what a grep of the file finds.
#[test]
fn a_compact_files_record_is_shown_as_the_file_spaces_json() {
    let mut text = String::new();
    for i in 0..8 {
        text.push_str(&format!(
            "{{\"type\":\"auditAdvisory\",\"data\":{{\"resolution\":{{\"id\":{i},\"path\":\"a>b{i}>tough-cookie\",\"dev\":false}},\"advisory\":{{\"findings\":[{{\"version\":\"2.2.{i}\"}}],\"severity\":\"{}\",\"overview\":\"{}\"}}}}}}\n",
            if i == 5 { "high" } else { "low" },
            "x ".repeat(200)
        ));
    }
    let q = Query::new("which package has a high severity advisory, by dependency path?");
    let red = reduce(&text, Kind::Ndjson, &ctx(&q)).unwrap();
    let rec = red
        .items
        .iter()
        .find(|i| i.line == Some(6) && i.section == Section::Evidence)
        .unwrap_or_else(|| panic!("{:#?}", red.items));
    assert!(
        rec.text.contains("\"path\":\"a>b5>tough-cookie\""),
        "{}",
        rec.text
    );
    assert!(!rec.text.contains("\": "), "{}", rec.text);
    // Strings keep their own spaces and escapes.
    assert_eq!(
        render::compact_spacing(r#"{"a": "x: y, z", "b": ["c\"d, e", 1], …3 more}"#),
        r#"{"a":"x: y, z","b":["c\"d, e",1],…3 more}"#
    );
}

/// A record shown by the leaves that set it apart says where it leaves leaves out: two pairs
/// written side by side are side by side in the file, and a pair followed by left-out ones
/// keeps the comma the file writes after it.
#[test]
fn a_records_left_out_leaves_are_marked() {
    let recs: Vec<serde_json::Value> = (0..10)
        .map(|i| {
            serde_json::json!({
                "id": 9100 + i,
                "node_id": "WFR_kwLO",
                "head_branch": if i == 4 { "release/2.4" } else { "main" },
                "display_title": format!("Merge pull request #{i}"),
                "event": "push",
                "conclusion": if i == 4 { "failure" } else { "success" }
            })
        })
        .collect();
    let maps: Vec<&serde_json::Map<String, serde_json::Value>> =
        recs.iter().filter_map(|r| r.as_object()).collect();
    let constant = render::Constant::of(&maps);
    let q = Query::new("which run failed, on which branch?");
    let shown = render::distinct(maps[4], 300, &constant, &q);
    // `node_id` and `event` are the same in every record: left out, and marked.
    assert!(
        shown.contains("\"id\": 9104, … \"head_branch\": \"release/2.4\","),
        "{shown}"
    );
    assert!(
        shown.contains(", … \"conclusion\": \"failure\"}"),
        "{shown}"
    );
    assert!(
        !shown.contains("node_id") && !shown.contains("push"),
        "{shown}"
    );
}

/// A key with dots (`app.kubernetes.io/name`) is shown whole, never as its tail after the
/// last dot (`io/name` is in no file).
#[test]
fn a_dotted_key_is_shown_whole() {
    let recs: Vec<serde_json::Value> = (0..10)
        .map(|i| {
            serde_json::json!({
                "kind": "Deployment",
                "metadata": {"labels": {"app.kubernetes.io/name": format!("svc-{i}")}},
                "status": {"readyReplicas": i}
            })
        })
        .collect();
    let maps: Vec<&serde_json::Map<String, serde_json::Value>> =
        recs.iter().filter_map(|r| r.as_object()).collect();
    let constant = render::Constant::of(&maps);
    let shown = render::distinct(
        maps[3],
        300,
        &constant,
        &Query::new("which svc is not ready?"),
    );
    assert!(
        shown.contains("\"app.kubernetes.io/name\": \"svc-3\""),
        "{shown}"
    );
}

#[test]
fn a_failure_told_once_per_metric_is_listed_after_the_other_failures() {
    // k6's NDJSON: each failed request is a point of several metrics with the same tags.
    let mut lines = Vec::new();
    for user in 11..=20 {
        for metric in [
            "http_reqs",
            "http_req_duration",
            "http_req_blocked",
            "http_req_waiting",
        ] {
            lines.push(
                serde_json::json!({"type": "Point", "metric": metric, "data": {
                "time": format!("2019-10-13T16:36:08.{user}Z"), "value": user,
                "tags": {"status": "404", "error": "Not Found",
                         "url": format!("http://api.test/users/{user}")}}})
                .to_string(),
            );
        }
    }
    let t = lines.join("\n");
    let q = Query::new("which requests failed?");
    let r = reduce(&t, Kind::Ndjson, &ctx(&q)).unwrap();
    let mut errs: Vec<&Item> = r
        .items
        .iter()
        .filter(|i| i.section == Section::Errors)
        .collect();
    errs.sort_by(|a, b| b.prio.total_cmp(&a.prio));
    // The ten best listed are the ten failed requests, not the first three requests' metrics.
    for (k, e) in errs.iter().take(10).enumerate() {
        let url = format!("users/{}\"", 11 + k);
        assert!(e.text.contains(&url), "{k}: {}", e.text);
    }
    assert!(errs.len() > 10);
}

#[test]
fn a_large_document_without_records_lists_only_the_leaves_the_question_names() {
    // A map of coverage counters: no array of records, too large to show whole.
    let mut files = serde_json::Map::new();
    for i in 0..40 {
        let counts: serde_json::Map<String, serde_json::Value> = (0..30)
            .map(|k| (k.to_string(), serde_json::json!((i * 7 + k) % 11)))
            .collect();
        files.insert(
            format!("src/mod{i}.ts"),
            serde_json::json!({"statementMap": {"start": {"line": i}}, "s": counts}),
        );
    }
    files.insert("owner".into(), serde_json::json!("platform-team"));
    let text = serde_json::to_string_pretty(&serde_json::Value::Object(files)).unwrap();
    let q = Query::new("which team is the owner?");
    let r = reduce(&text, Kind::Json, &ctx(&q)).unwrap();
    let ev: Vec<&str> = r
        .items
        .iter()
        .filter(|i| i.section == Section::Evidence)
        .map(|i| i.text.as_str())
        .collect();
    assert!(ev.iter().any(|t| t.contains("platform-team")), "{ev:?}");
    // A leaf no word of the question names is the walk's order, not an answer.
    assert!(!ev.iter().any(|t| t.contains("statementMap")), "{ev:?}");
    // Asked nothing, the first leaves are still shown.
    let none = Query::new("");
    let r = reduce(&text, Kind::Json, &ctx(&none)).unwrap();
    assert!(r
        .items
        .iter()
        .any(|i| i.section == Section::Evidence && i.text.contains("statementMap")));
}

#[test]
fn a_text_wrapped_in_a_few_keys_is_reduced_as_the_text() {
    // A hook payload of a shape nobody named: the log is what the output says.
    let mut log: String = (0..200)
        .map(|i| format!("2024-01-02T10:00:{:02}Z step {i} ok\n", i % 60))
        .collect();
    log.push_str("ERROR: linking crate `app` failed: undefined symbol foo_init\n");
    log.push_str("Process completed with exit code 1.\n");
    let t = serde_json::json!({"weird": [log], "v": 2}).to_string();
    let q = Query::new("why did the build fail?");
    let r = reduce(&t, Kind::Json, &ctx(&q)).unwrap();
    assert!(
        r.status.contains("wrapping a text at .weird[0]"),
        "{}",
        r.status
    );
    assert_eq!(r.failed, Some(true), "{}", r.status);
    assert!(
        r.items
            .iter()
            .any(|i| i.text.contains("undefined symbol foo_init")),
        "{:?}",
        r.items.iter().map(|i| &i.text).collect::<Vec<_>>()
    );
    assert!(
        r.next_action.contains("text at .weird[0] with jq -r"),
        "{}",
        r.next_action
    );
}

#[test]
fn the_source_a_question_names_is_read_for_it_among_many_texts() {
    // A source map: texts parallel to their names, beside a blob of mappings.
    let code = |body: &str| -> String {
        let mut s: String = (0..60)
            .map(|i| format!("  throw new AxiosError('Request failed {i}', ERR_BAD_RESPONSE);\n"))
            .collect();
        s.push_str(body);
        s
    };
    let a = code("export default bind;\n");
    let b = code("  maxBodyLength: -1,\n  xsrfCookieName: 'XSRF-TOKEN',\n");
    let t = serde_json::json!({
        "version": 3,
        "sources": ["../../lib/helpers/bind.js", "../../lib/defaults/index.js"],
        "sourcesContent": [a, b],
        "mappings": "AAAA,".repeat(4000),
    })
    .to_string();
    let q = Query::new("what body size limit does lib/defaults/index.js set?");
    let r = reduce(&t, Kind::Json, &ctx(&q)).unwrap();
    assert!(
        r.status
            .contains(".sourcesContent[1] (.sources[1]: ../../lib/defaults/index.js)"),
        "{}",
        r.status
    );
    let answer = r
        .items
        .iter()
        .find(|i| i.text.contains("maxBodyLength: -1"))
        .expect("the answer line is an item");
    assert_eq!(answer.section, Section::Evidence);
    // Code that names an error is not a failure: it ranks below the line asked about.
    for i in r.items.iter().filter(|i| i.text.contains("AxiosError(")) {
        assert!(i.prio < answer.prio, "{} over the answer", i.text);
    }
    assert!(
        r.next_action
            .contains("text at .sourcesContent[1] (another by its index) with jq -r"),
        "{}",
        r.next_action
    );
}

#[test]
fn a_document_that_is_one_string_is_read_as_its_text() {
    let mut log: String = (0..100)
        .map(|i| format!("10:00:{:02} step {i} ok\n", i % 60))
        .collect();
    log.push_str("ERROR: java.lang.OutOfMemoryError: Java heap space\n");
    let t = serde_json::to_string(&log).unwrap();
    assert_eq!(crate::guard::reduce::detect(&t), Kind::Json);
    let q = Query::new("why did it crash?");
    let r = reduce(&t, Kind::Json, &ctx(&q)).unwrap();
    assert!(r.status.contains("wrapping a text at ."), "{}", r.status);
    assert!(r.items.iter().any(|i| i
        .text
        .contains("L101: ERROR: java.lang.OutOfMemoryError: Java heap space")));
    assert!(
        r.next_action.contains("text at . with jq -r"),
        "{}",
        r.next_action
    );
    // The text's line count is toolsum's, not a number the document writes.
    assert!(r.status.contains("of ×101 lines"), "{}", r.status);
}

#[test]
fn an_event_that_failed_counts_and_a_line_that_is_not_json_changes_the_jq_advice() {
    // `cargo test -- -Z unstable-options --format json`: the outcome is the `event` field.
    let mut t = String::new();
    for i in 0..30 {
        t.push_str(&format!(
            "{{\"type\":\"test\",\"event\":\"ok\",\"name\":\"t{i}\"}}\n"
        ));
    }
    t.push_str("{\"type\":\"test\",\"event\":\"failed\",\"name\":\"tests::parse\"}\n");
    t.push_str("error: test failed, to rerun pass `--lib`\n");
    let q = Query::new("which test failed?");
    let r = reduce(&t, Kind::Ndjson, &ctx(&q)).unwrap();
    assert!(r.status.contains("31 records, 1 failing"), "{}", r.status);
    assert_eq!(r.failed, Some(true));
    assert!(r
        .items
        .iter()
        .any(|i| i.text.contains("1 unparsable line") && !i.text.contains("lines")));
    assert!(
        r.next_action.contains("jq -R and fromjson?"),
        "{}",
        r.next_action
    );
}

/// A PyPI project page: a map of releases, each a list of two or three files, beside the
/// latest release's `urls` and three `ownership.roles`. No one list is the document's
/// records: the Status names none of them, and the latest wheel is still shown.
#[test]
fn the_lists_of_a_map_and_a_few_roles_are_not_the_documents_records() {
    let file = |v: &str, kind: &str| serde_json::json!({"filename": format!("requests-{v}-{kind}"), "requires_python": null, "size": 73075});
    let mut releases = serde_json::Map::new();
    for i in 0..40 {
        let v = format!("2.{i}.0");
        let mut files = vec![file(&v, "py3-none-any.whl"), file(&v, "tar.gz")];
        if i == 23 {
            files.push(file(&v, "py2.py3-none-any.whl"));
        }
        releases.insert(v, serde_json::Value::Array(files));
    }
    let doc = serde_json::json!({
        "info": {"description": "Requests is a simple, yet elegant, HTTP library. ".repeat(400),
                 "requires_python": ">=3.10", "version": "2.34.2"},
        "releases": releases,
        "urls": [{"filename": "requests-2.34.2-py3-none-any.whl", "requires_python": ">=3.10"},
                 {"filename": "requests-2.34.2.tar.gz", "requires_python": ">=3.10"}],
        "ownership": {"roles": [{"role": "Owner", "user": "a"}, {"role": "Owner", "user": "b"},
                                {"role": "Owner", "user": "c"}]}
    })
    .to_string();
    let q = Query::new("What is the latest version and which Python versions does it require?");
    let r = reduce(&doc, Kind::Json, &ctx(&q)).unwrap();
    assert!(
        !r.status.contains("releases") && !r.status.contains("roles"),
        "{}",
        r.status
    );
    assert!(!r.next_action.contains("releases"), "{}", r.next_action);
}

#[test]
fn a_record_named_by_its_ids_keeps_its_key_order() {
    // Session 43's trial: `{"id":…,"status":…,"node":…,"duration_ms":…}` was shown for a
    // record the file writes with `duration_ms` before `node`, a text no grep finds.
    let v: serde_json::Value = serde_json::from_str(
        r#"{"id":"job-1","status":"ok","duration_ms":1026,"node":"n6","tags":{"a":1}}"#,
    )
    .unwrap();
    let shown = compact_spacing(&render::identity(v.as_object().unwrap(), 300));
    // The `tags` left out after them are marked: the braces close no record short.
    assert_eq!(
        shown,
        r#"{"id":"job-1","status":"ok","duration_ms":1026,"node":"n6",…}"#
    );
    // Members left out between two shown ones are marked.
    let v: serde_json::Value =
        serde_json::from_str(r#"{"size":3,"blob":{"x":1},"name":"a","id":7}"#).unwrap();
    let shown = render::identity(v.as_object().unwrap(), 300);
    assert_eq!(shown, r#"{"size": 3, … "name": "a", "id": 7}"#);
}

/// ast-grep's `--json=stream` match: nested objects whose leaves are read one after another
/// (trial of session 53: `"end":5778,"line":200` was shown where the file writes
/// `"end":5778},"start":{"line":200`, and `"trailing":0,"language":"Python"` where it writes
/// `"trailing":0},"language"`). Every part shown greps in the file; leaves of different
/// objects are apart by ` … `.
#[test]
fn leaves_of_different_nested_objects_are_not_joined() {
    let recs: Vec<serde_json::Value> = (0..12)
        .map(|i| {
            serde_json::json!({
                "text": format!("raise TypeError(\"bad {i}\")"),
                "range": {
                    "byteOffset": {"start": 5705 + i, "end": 5778 + i},
                    "start": {"line": 200 + i, "column": 12},
                    "end": {"line": 200 + i, "column": 85}
                },
                "file": format!("django/f{i}.py"),
                "charCount": {"leading": 12 + i, "trailing": 0},
                "language": "Python"
            })
        })
        .collect();
    let file: String = recs
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    let maps: Vec<&serde_json::Map<String, serde_json::Value>> =
        recs.iter().filter_map(|r| r.as_object()).collect();
    let constant = render::Constant::of(&maps);
    let q = Query::new("where is TypeError raised");
    let shown = compact_spacing(&render::distinct(maps[3], 1000, &constant, &q));
    assert!(shown.contains(r#""start":5708,"end":5781"#), "{shown}");
    assert!(!shown.contains(r#""end":5781,"line""#), "{shown}");
    assert!(
        !shown.contains(r#""trailing""#) || !shown.contains(r#"0,"language""#),
        "{shown}"
    );
    // Each part between the marks is the file's own text.
    for part in shown.trim_matches(['{', '}']).split('…') {
        let part = part.trim_matches([',', ' ']);
        if !part.is_empty() {
            assert!(file.contains(part), "{part:?} is not in the file: {shown}");
        }
    }
}

/// detect-secrets' shape: a few plugins in an array, the findings in lists by file name.
fn findings_by_file() -> String {
    let plugins: Vec<serde_json::Value> = (0..12)
        .map(|i| serde_json::json!({"name": format!("Detector{i}")}))
        .collect();
    let mut results = serde_json::Map::new();
    for f in 0..20 {
        let n = if f % 4 == 0 { 1 } else { 3 };
        let list: Vec<serde_json::Value> = (0..n)
            .map(|k| {
                let kind = if f == 8 { "Private Key" } else { "Secret Keyword" };
                serde_json::json!({"type": kind, "filename": format!("src/f{f}.py"), "line_number": k + 1})
            })
            .collect();
        results.insert(format!("src/f{f}.py"), serde_json::Value::Array(list));
    }
    serde_json::to_string_pretty(&serde_json::json!({"plugins_used": plugins, "results": results}))
        .unwrap()
}

#[test]
fn a_map_of_lists_is_the_records_the_document_lists() {
    let t = findings_by_file();
    let q = Query::new("which files hold private keys?");
    let r = reduce(&t, Kind::Json, &ctx(&q)).unwrap();
    // 15 files of 3 findings and 5 of 1: 50 records, not the 12 plugins.
    assert_eq!(
        r.status,
        "JSON with 50 records in 20 lists at .results, none failing by their status or error fields."
    );
    // The units quote the records: none is ranked here too.
    assert!(r
        .items
        .iter()
        .all(|i| i.section != Section::Evidence || !i.text.contains("\"type\"")));
    // Every finding counts, the ones alone in their file's list too.
    let u = crate::guard::reduce::units::build(&t, Kind::Json);
    let d = crate::guard::reduce::signals::field_dists(&u);
    let ty = d.iter().find(|x| x.name == "type").unwrap();
    assert_eq!(
        ty.counts,
        vec![
            ("Secret Keyword".to_string(), 49),
            ("Private Key".to_string(), 1)
        ]
    );
}
