//! Tests of the signals and facts.

use super::*;

fn score_q(u: &Units, q: &Query) -> Scores {
    score(u, q, &Asks::default())
}
use crate::guard::reduce::units::build;
use crate::guard::reduce::Kind;

#[test]
fn numbers_with_units() {
    assert!((number("350ms").unwrap() - 0.35).abs() < 1e-12);
    assert_eq!(number("2G"), Some(2.0 * 1024.0 * 1024.0 * 1024.0));
    assert_eq!(number("1,234"), Some(1234.0));
    assert_eq!(number("7:53.61"), Some(473.61));
    assert_eq!(number("abc"), None);
    assert_eq!(number("v1.2"), None);
}

#[test]
fn a_rare_ordinary_line_is_rare() {
    let mut text = String::new();
    for i in 0..200 {
        text.push_str(&format!(
            "Jan  1 10:{:02}:00 sshd[{i}]: Failed password for root from 10.0.0.{} port 22\n",
            i % 60,
            i % 250
        ));
    }
    text.push_str(
        "Jan  1 11:00:00 sshd[999]: Accepted password for deploy from 10.0.0.7 port 22\n",
    );
    let u = build(&text, Kind::Log);
    let s = score_q(&u, &Query::new("did any login succeed?"));
    let last = u.units.len() - 1;
    assert!(s.rare[last] > 0.8, "{}", s.rare[last]);
    assert!(s.rare[..last].iter().all(|&r| r < 0.2));
}

#[test]
fn a_rare_categorical_value_is_rare() {
    let mut recs = Vec::new();
    for i in 0..40 {
        let st = if i == 17 { "firing" } else { "inactive" };
        recs.push(serde_json::json!({"name": format!("alert{i}"), "state": st}));
    }
    let text = serde_json::to_string_pretty(&serde_json::json!({"alerts": recs})).unwrap();
    let u = build(&text, Kind::Json);
    let s = score_q(&u, &Query::new("which alerts are active?"));
    let i = u
        .units
        .iter()
        .position(|x| x.text.contains("firing"))
        .unwrap();
    assert!(s.rare[i] > 0.8, "{}", s.rare[i]);
    let f = facts(
        &u,
        &Query::new("which alerts are active?"),
        &crate::guard::reduce::select::Headers::default(),
    );
    assert!(
        f.iter()
            .any(|x| x.text.starts_with("state: inactive ×39, firing ×1")),
        "{f:?}"
    );
}

#[test]
fn extremes_of_a_column_and_of_a_slot() {
    let mut text = String::from("PID USER %CPU RSS COMMAND\n");
    for i in 0..30 {
        text.push_str(&format!(
            "{} root {}.0 {} proc{i}\n",
            100 + i,
            i % 7,
            (i * 37) % 101 * 1000
        ));
    }
    let u = build(&text, Kind::Table);
    let s = score_q(&u, &Query::new("which processes use the most memory?"));
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    assert!(
        u.units[best].text.contains(" 97000 "),
        "{}",
        u.units[best].text
    );
    // GC pauses in log lines: the longest pause is an extreme of its slot.
    let mut log = String::new();
    for i in 0..40 {
        log.push_str(&format!(
            "[{i}.{i:03}s] GC(1{i}) Pause Young (Normal) {}M->{}M {}.{}ms\n",
            50 + i,
            10 + i,
            (i * 13) % 17,
            i
        ));
    }
    let u = build(&log, Kind::Log);
    let s = score_q(&u, &Query::new("what were the longest GC pauses?"));
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    assert!(
        u.units[best].text.ends_with("16.35ms") || u.units[best].text.contains("16."),
        "{}",
        u.units[best].text
    );
}

#[test]
fn ids_and_clocks_have_no_extremes() {
    let mut text = String::from("id,ts,size\n");
    for i in 0..20 {
        text.push_str(&format!("{},{},{}\n", 1000 - i, 1_700_000_000 + i, 5));
    }
    let u = build(&text, Kind::Csv);
    let s = score_q(&u, &Query::new("x"));
    assert!(s.ext.iter().all(|&e| e == 0.0));
}

#[test]
fn a_field_of_mostly_words_has_no_extremes_and_placeholders_do_not_count() {
    // Package versions: a third of them read as numbers (dates), the rest do not.
    let mut text = String::from("name,versionInfo,size\n");
    for i in 0..30 {
        let version = if i % 3 == 1 {
            format!("2018{:04}.1", (i * 7919) % 10000)
        } else {
            format!("1.{i}.1d-0+deb10u4")
        };
        // Sizes: mostly `-` (not measured), some numbers, one far the largest.
        let size = match i {
            3 => "99000".to_string(),
            _ if i % 3 == 0 => format!("{}", 100 + i),
            _ => "-".to_string(),
        };
        text.push_str(&format!("pkg{i},{version},{size}\n"));
    }
    let u = build(&text, Kind::Csv);
    let s = score_q(&u, &Query::new("which package is largest?"));
    let why: Vec<&String> = s.ext_why.values().collect();
    assert!(why.iter().all(|w| !w.contains("versionInfo")), "{why:?}");
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    assert!(
        u.units[best].text.contains("99000"),
        "{}",
        u.units[best].text
    );
}

#[test]
fn a_summary_key_on_every_record_of_a_map_is_no_summary() {
    // `scanned_packages` maps names to records, each with its `version`; the report's own
    // `version` at the top is its summary.
    let mut pkgs = serde_json::Map::new();
    for i in 0..12 {
        pkgs.insert(
            format!("pkg{i}"),
            serde_json::json!({"name": format!("pkg{i}"), "version": format!("1.{i}")}),
        );
    }
    let v =
        serde_json::json!({"report": {"version": "2.0.0", "found": 4}, "scanned_packages": pkgs});
    let text = serde_json::to_string_pretty(&v).unwrap();
    let u = build(&text, Kind::Json);
    let s = score_q(&u, &Query::new("which packages are vulnerable?"));
    let salient: Vec<&str> = (0..u.units.len())
        .filter(|&i| s.sal[i] > 0.0)
        .map(|i| u.units[i].text.as_str())
        .collect();
    assert_eq!(salient, ["\"version\": \"2.0.0\","], "{salient:?}");
}

#[test]
fn small_summary_objects_become_facts() {
    let mut tests = Vec::new();
    for i in 0..50 {
        tests.push(serde_json::json!({"title": format!("t{i}"), "state": "passed"}));
    }
    let v = serde_json::json!({"stats": {"suites": 3, "tests": 50, "passes": 49, "failures": 1}, "tests": tests});
    let text = serde_json::to_string_pretty(&v).unwrap();
    let u = build(&text, Kind::Json);
    let f = facts(
        &u,
        &Query::new("how many tests failed?"),
        &crate::guard::reduce::select::Headers::default(),
    );
    // Its key as the file writes it, before it: one quote of the file.
    let stats = f
        .iter()
        .find(|x| x.text.starts_with("\"stats\": {"))
        .expect("stats shown");
    assert!(stats.text.contains("\"failures\": 1"), "{}", stats.text);
    // Compact, and nested: the path, then the key as written.
    let v = serde_json::json!({"schema": {"block": {"ami": {"type": "string", "required": true}}}, "tests": tests});
    let text = serde_json::to_string(&v).unwrap();
    let u = build(&text, Kind::Json);
    let f = facts(
        &u,
        &Query::new("which arguments are required?"),
        &crate::guard::reduce::select::Headers::default(),
    );
    let ami = f
        .iter()
        .find(|x| x.text.contains("\"ami\""))
        .expect("ami shown");
    assert!(
        ami.text
            .starts_with("schema › block › \"ami\":{\"type\":\"string\",\"required\":true}"),
        "{}",
        ami.text
    );
    assert!(text.contains("\"ami\":{\"type\":\"string\",\"required\":true}"));
}

#[test]
fn the_largest_count_of_a_template_peaks() {
    let mut text = String::new();
    for (i, n) in [1, 0, 3, 28898, 2, 1, 0].iter().enumerate() {
        text.push_str(&format!("port{i}: {n} input errors, 0 CRC\n"));
    }
    let u = build(&text, Kind::Lines);
    let s = score_q(&u, &Query::new("which port has input errors"));
    let top = (0..u.units.len())
        .max_by(|&a, &b| s.peak[a].total_cmp(&s.peak[b]))
        .unwrap();
    assert!(u.units[top].text.contains("28898"), "{}", u.units[top].text);
    assert!((s.peak[top] - 1.0).abs() < 1e-9);
    // A rising column (a clock, a sequence) is no peak.
    let clock: String = (0..10).map(|i| format!("t={i} done\n")).collect();
    let u = build(&clock, Kind::Lines);
    let s = score_q(&u, &Query::new("done"));
    assert!(s.peak.iter().all(|&p| p == 0.0), "{:?}", s.peak);
}

#[test]
fn a_negated_word_lowers_relevance() {
    let mut text = String::new();
    for i in 0..30 {
        text.push_str(&format!("neighbor 10.0.0.{i} state = Established\n"));
    }
    text.push_str("neighbor 10.0.0.99 state = Idle\n");
    let u = build(&text, Kind::Lines);
    let s = score_q(&u, &Query::new("which neighbors are not Established?"));
    let idle = u
        .units
        .iter()
        .position(|x| x.text.contains("Idle"))
        .unwrap();
    assert!(s.rel.iter().all(|&r| r <= s.rel[idle]), "{:?}", s.rel);
}

#[test]
fn a_slot_count_a_field_states_is_stated_once() {
    let text: String = (0..60)
        .map(|i| format!("req id={i} path=/api/{}\n", ["a", "b", "c"][i % 3]))
        .collect();
    let u = build(&text, Kind::Log);
    let f = facts(
        &u,
        &Query::new("requests per path"),
        &crate::guard::reduce::select::Headers::default(),
    );
    let n = f.iter().filter(|x| x.text.contains("/api/a ×20")).count();
    assert!(
        n <= 1,
        "{:?}",
        f.iter().map(|x| &x.text).collect::<Vec<_>>()
    );
}

#[test]
fn a_slots_values_are_counted_only_when_asked_about_or_nothing_is_asked() {
    // A log line's clock is its variable part: asked why a node left, its counts answer
    // nothing; asked nothing, they are shown; asked about the values, they are shown.
    let text: String = (0..60)
        .map(|i| format!("11:02:{:02} node left the ring\n", i % 4))
        .collect();
    let u = build(&text, Kind::Log);
    let counted = |q: &str| {
        facts(
            &u,
            &Query::new(q),
            &crate::guard::reduce::select::Headers::default(),
        )
        .iter()
        .any(|x| x.text.starts_with("values in the ") && x.text.contains(" lines like"))
    };
    assert!(!counted("why did the node leave the cluster"));
    assert!(counted(""));
    // The counts say how many lines they are counted in.
    let f = facts(
        &u,
        &Query::new(""),
        &crate::guard::reduce::select::Headers::default(),
    );
    assert!(
        f.iter()
            .any(|x| x.text.starts_with("values in the 60 lines like L1: ")),
        "{f:?}"
    );
    assert!(counted("how many at 11:02:03"));
}

#[test]
fn a_nested_texts_first_and_last_lines_have_a_position() {
    // A command envelope whose stdout is long: the document's own first and last units are
    // its keys; the stream's last line (how far it got) must rank with them.
    let stdout: String = (1..=40).map(|i| format!("copied file {i}.dat\n")).collect();
    let doc = serde_json::json!({"command": "sync", "stdout": stdout, "exit_code": 3,
        "host": "a", "user": "b"});
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let u = build(&text, Kind::Json);
    let s = score_q(&u, &Query::new("how far did the sync get?"));
    let at = |t: &str| u.units.iter().position(|x| x.text == t).unwrap();
    assert!(s.pos[at("copied file 40.dat")] >= 0.85);
    assert!(s.pos[at("copied file 1.dat")] >= 0.7);
    assert_eq!(s.pos[at("copied file 20.dat")], 0.0);
}

#[test]
fn asked_for_both_ends_both_are_extremes() {
    let recs: Vec<_> = (0..20)
        .map(|i| serde_json::json!({"name": format!("sub{i}"), "subscribers": 1000 + 37 * ((i * 7) % 20)}))
        .collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({ "children": recs })).unwrap();
    let u = build(&text, Kind::Json);
    let intent = "which has the most subscribers and which has the fewest?";
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let why: Vec<&String> = s.ext_why.values().collect();
    assert!(why.iter().any(|w| w.starts_with("largest")), "{why:?}");
    assert!(why.iter().any(|w| w.starts_with("smallest")), "{why:?}");
    // The smallest takes turns with the largest.
    let best = |side: &str| {
        s.ext_why
            .iter()
            .find(|(_, w)| w.starts_with(side))
            .map(|(&i, _)| s.ext[i])
            .unwrap()
    };
    assert!(best("smallest") > 0.9 * best("largest"));
}

#[test]
fn a_slot_is_ranked_within_the_words_its_template_varies() {
    // `# of <*> failures <*>`: the expected failures are larger, the question is about the
    // unexpected ones.
    let mut text = String::new();
    for i in 0..12 {
        text.push_str(&format!("\t\t=== suite{i} Summary ===\n"));
        text.push_str(&format!("# of expected failures\t{}\n", 4000 + i * 10));
        text.push_str(&format!("# of unexpected failures\t{}\n", (i * 37) % 50));
    }
    text.push_str("# of unexpected failures\t1226\n");
    let u = build(&text, Kind::Lines);
    let intent = "which suite had the most unexpected failures?";
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    assert!(
        u.units[best].text.contains("1226"),
        "{}",
        u.units[best].text
    );
    assert!(
        s.ext_why[&best].contains("unexpected failures"),
        "{:?}",
        s.ext_why[&best]
    );
}

#[test]
fn a_summary_key_deep_in_a_schema_is_no_summary() {
    let mut res = serde_json::Map::new();
    for i in 0..30 {
        res.insert(
            format!("r{i}"),
            serde_json::json!({"block": {"version": i % 3, "attributes": {"a": {"type": "string"}}}}),
        );
    }
    let v = serde_json::json!({"stats": {"failures": 1}, "schemas": {"aws": {"resources": res}}});
    let text = serde_json::to_string_pretty(&v).unwrap();
    let u = build(&text, Kind::Json);
    let s = score_q(&u, &Query::new("what is in this schema?"));
    let sal = |needle: &str| {
        (0..u.units.len())
            .filter(|&i| u.units[i].text.contains(needle))
            .map(|i| s.sal[i])
            .fold(0.0, f64::max)
    };
    assert!(sal("\"failures\": 1") > 0.0);
    assert_eq!(sal("\"version\": 2"), 0.0);
}

#[test]
fn a_file_and_line_reference_is_no_measure() {
    use super::extremes::line_ref;
    for r in [
        "(ClassLoader.java:767)",
        "src/main.rs:12:5",
        "app.py:88",
        "at Foo.kt:3)",
    ] {
        assert!(line_ref(r), "{r}");
    }
    for not in [
        "64.33KiB",
        "10.0.0.1:8080",
        "took:12ms",
        "v1.2:3",
        "12:30:01",
        ".rs:4",
    ] {
        assert!(!line_ref(not), "{not}");
    }
}

#[test]
fn a_row_written_twice_is_one_extreme_not_the_first_and_second() {
    // A report prints its top rows in two tables; the second table's copy of the largest row
    // is not the second largest.
    let mut text = String::from("SIZE    COUNT   NAME\n");
    let rows = [
        (6433, "char"),
        (2439, "byte"),
        (1793, "string"),
        (1108, "object"),
    ];
    for (sz, name) in rows.iter().chain(rows[..1].iter()) {
        text.push_str(&format!("{sz}    {}    {name}\n", sz / 7));
    }
    for k in 0..6 {
        text.push_str(&format!("{}    {}    pad{k}\n", 10 + k, k + 1));
    }
    let u = build(&text, Kind::Table);
    let q = Query::new("which classes are largest by size?");
    let s = score(&u, &q, &Asks::of("which classes are largest by size?"));
    let second = s
        .ext_why
        .iter()
        .find(|(_, w)| w.starts_with("2nd largest SIZE"))
        .map(|(i, _)| u.units[*i].text.clone())
        .expect("a second largest");
    assert!(second.contains("byte"), "{second}");
}

#[test]
fn a_line_is_relevant_through_the_block_that_holds_it() {
    // Two alarms with the same keys: the question names one by its block's key only.
    let mut text = String::from("Resources:\n");
    for (name, t) in [
        ("UnauthorizedApiCallsAlarm", 1),
        ("ConsoleSigninWithoutMfaAlarm", 5),
    ] {
        text.push_str(&format!(
            "  {name}:\n    Type: AWS::CloudWatch::Alarm\n    Properties:\n      Threshold: {t}\n      Period: 300\n"
        ));
    }
    let u = build(&text, Kind::Lines);
    let s = score_q(
        &u,
        &Query::new("what threshold has the console signin MFA alarm?"),
    );
    let at = |needle: &str| {
        u.units
            .iter()
            .position(|x| x.text.contains(needle))
            .unwrap()
    };
    let (mine, other) = (at("Threshold: 5"), at("Threshold: 1"));
    assert!(
        s.rel[mine] > s.rel[other],
        "{} vs {}",
        s.rel[mine],
        s.rel[other]
    );
    // It is still shown as the file writes it.
    assert_eq!(u.units[mine].text.trim(), "Threshold: 5");
}

#[test]
fn the_largest_row_of_a_table_inside_text_is_an_extreme() {
    let mut text = String::from("run started\nResults:\n    Name      Calls   Time(ms)\n");
    for (i, t) in [12, 7, 950, 31, 18, 9, 22, 40, 15, 11].iter().enumerate() {
        text.push_str(&format!("    step_{i:<4}  {:>5}   {t:>8}\n", 3 + i));
    }
    text.push_str("\nrun finished in 2 s\n");
    let u = build(&text, Kind::Lines);
    let s = score(
        &u,
        &Query::new("which step took the most time?"),
        &Asks::of("which step took the most time?"),
    );
    let top = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    assert!(u.units[top].text.contains("950"), "{}", u.units[top].text);
    assert!(
        s.ext_why[&top].contains("Time(ms)"),
        "{:?}",
        s.ext_why.get(&top)
    );
}

#[test]
fn equal_values_share_their_rank() {
    // Two records tie for the largest; the next value is the 3rd largest, not the 2nd.
    let sizes = [500, 900, 120, 900, 700, 80, 60, 300, 200, 100, 40, 30];
    let recs: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, n)| serde_json::json!({"name": format!("dir{i}"), "size_kb": n}))
        .collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({ "dirs": recs })).unwrap();
    let u = build(&text, Kind::Json);
    let intent = "which directories are the largest?";
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let why_of = |name: &str| {
        let i = u
            .units
            .iter()
            .position(|x| x.text.contains(&format!("\"{name}\"")))
            .unwrap();
        s.ext_why.get(&i).cloned().unwrap_or_default()
    };
    assert_eq!(why_of("dir1"), "largest size_kb, tied");
    assert_eq!(why_of("dir3"), "largest size_kb, tied");
    assert_eq!(why_of("dir4"), "3rd largest size_kb");
}

#[test]
fn a_rare_value_in_a_joined_status_field_is_rare() {
    // `oper-status` holds a state as `status` does: its rare value is an anomaly whatever
    // words the question uses.
    let recs: Vec<_> = (0..40)
        .map(|i| {
            let st = if i == 7 || i == 29 { "up" } else { "down" };
            serde_json::json!({"name": format!("ge-0/0/{i}"), "oper-status": st, "mtu": 1514})
        })
        .collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({ "interfaces": recs })).unwrap();
    let u = build(&text, Kind::Json);
    let s = score_q(&u, &Query::new("which access ports are working?"));
    let at = |name: &str| {
        u.units
            .iter()
            .position(|x| x.text.contains(&format!("\"{name}\"")))
            .unwrap()
    };
    assert!(s.rare[at("ge-0/0/7")] >= 0.5, "{}", s.rare[at("ge-0/0/7")]);
    assert!(s.rare[at("ge-0/0/29")] >= 0.5);
    assert!(s.rare[at("ge-0/0/8")] < 0.5);
    assert!(status_field("oper-status") && status_field("healthStatus"));
    assert!(status_field("admin_state") && status_field("state"));
    assert!(!status_field("substate") && !status_field("statuses"));
}

#[test]
fn a_count_written_before_its_noun_is_labelled_by_the_noun() {
    // `show interfaces`: after a clause's comma, the number comes before what it counts.
    let mut text = String::new();
    for i in 0..60 {
        text.push_str(&format!(
            "GigabitEthernet0/{i} is up, line protocol is up\n  {} packets input, {} bytes, 0 no buffer\n",
            1000 + (i * 37) % 101,
            (i * 7919) % 9_973 * 1000
        ));
    }
    let u = build(&text, Kind::Log);
    let intent = "which interface received the most bytes?";
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let why: Vec<&String> = s.ext_why.values().collect();
    assert!(
        why.iter()
            .any(|w| w.starts_with("largest bytes (in lines like")),
        "{why:?}"
    );
    assert!(!why.iter().any(|w| w.contains("input,")), "{why:?}");
}

#[test]
fn the_odd_value_of_a_field_the_question_names_picks_its_record() {
    let mut recs = Vec::new();
    for i in 0..52 {
        let mallocs = if i == 13 { 17 } else { 0 };
        recs.push(
            serde_json::json!({"lineno": i, "line": format!("x{i} = {i}"),
            "n_mallocs": mallocs, "n_cpu_percent": (i % 7) as f64 * 1.5}),
        );
    }
    let text = serde_json::to_string_pretty(&serde_json::json!({"lines": recs})).unwrap();
    let u = build(&text, Kind::Json);
    let odd = u
        .units
        .iter()
        .position(|x| x.text.contains("x13 = 13"))
        .unwrap();
    let s = score_q(&u, &Query::new("which line does the mallocs?"));
    assert!(
        s.picked.contains(&odd),
        "the record with n_mallocs 17 is picked"
    );
    assert!(s.rel[odd] >= ODD_VALUE_REL);
    assert_eq!(s.picked.len(), 1, "no record with the common value");
    // A field the question does not name picks nothing.
    let s = score_q(&u, &Query::new("which line is slowest?"));
    assert!(!s.picked.contains(&odd));
}

/// A question about what failed is answered in part by the run's totals, whatever their
/// words (`unexpected`, `flaky`): the summary object ranks first among facts and answers.
#[test]
fn a_runs_totals_answer_a_question_about_what_failed() {
    let tests: Vec<_> = (0..30)
        .map(|i| serde_json::json!({"title": format!("spec{i}.ts"), "status": if i == 4 { "failed" } else { "passed" }}))
        .collect();
    let doc = serde_json::json!({
        "config": {"workers": 4, "retries": 2, "timeout": 30000},
        "suites": tests,
        "stats": {"expected": 26, "skipped": 1, "unexpected": 3, "flaky": 6}
    });
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let u = build(&text, Kind::Json);
    let headers = crate::guard::reduce::select::Headers::default();
    let stats = |q: &str| {
        facts(&u, &Query::new(q), &headers)
            .into_iter()
            .find(|f| f.text.contains("\"unexpected\": 3"))
            .unwrap_or_else(|| panic!("{q}"))
    };
    let asked = stats("Which tests genuinely failed, and which passed only after retries?");
    assert!(asked.answers && asked.weight > 1.0, "{asked:?}");
    // Another question leaves the totals a plain fact.
    let other = stats("How many workers ran?");
    assert!(!other.answers && other.weight < 1.0, "{other:?}");
}

/// Counts of one noun written by two line templates, each too small to rank alone, are one
/// series; a slot no word names (an operation's argument) ranks below it.
#[test]
fn counts_of_one_noun_across_templates_are_ranked_together() {
    let mut text = String::new();
    let traces = [
        "# Loop 0 : loop with 145 ops",
        "# Loop 1 : entry bridge with 188 ops",
        "# bridge out of Guard 21 with 13 ops",
        "# bridge out of Guard 3 with 260 ops",
        "# bridge out of Guard 110 with 23 ops",
        "# bridge out of Guard 58 with 13 ops",
        "# bridge out of Guard 24 with 264 ops",
        "# bridge out of Guard 65 with 72 ops",
    ];
    for (k, t) in traces.iter().enumerate() {
        text.push_str(t);
        text.push('\n');
        for j in 0..12 {
            let n = (k * 12 + j) * 53 % 997;
            text.push_str(&format!("setfield_gc(p{j}, {n}, descr=<FieldDescr {j}>)\n"));
        }
    }
    let u = build(&text, Kind::Lines);
    let intent = "which traces did the JIT compile, and which one is the largest?";
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    assert_eq!(u.units[best].text, "# bridge out of Guard 24 with 264 ops");
    assert_eq!(s.ext_why[&best], "largest ops");
    let q = extremes::quantities(&u);
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!(q[0].0, "ops");
    assert_eq!(q[0].1.len(), 8);
}

#[test]
fn an_empty_leaf_has_no_position() {
    let mut text = String::from(
        "{\n  \"Comments\": null,\n  \"DropFrames\": \"\",\n  \"DurationNanos\": 10000181321,\n  \"Location\": [\n",
    );
    for i in 0..40 {
        text.push_str(&format!(
            "    {{\"ID\": {i}, \"Address\": {}}},\n",
            1000 + i
        ));
    }
    text.push_str("    {\"ID\": 40, \"Address\": 2000}\n  ],\n  \"Period\": 10000000\n}\n");
    let u = build(&text, Kind::Json);
    let s = score_q(&u, &Query::new("which collector uses the most CPU?"));
    let at = |t: &str| u.units.iter().position(|x| x.text.contains(t)).unwrap();
    assert_eq!(s.pos[at("Comments")], 0.0);
    assert_eq!(s.pos[at("DropFrames")], 0.0);
    assert_eq!(s.pos[at("DurationNanos")], 0.8);
}

#[test]
fn the_best_nested_record_brings_its_few_siblings() {
    let mut panels = Vec::new();
    for (id, title) in [
        (1, "CPU Load"),
        (2, "Pool Up/Down Summary"),
        (3, "Member Status"),
    ] {
        let targets: Vec<_> = (0..3)
            .map(|k| {
                // One query of each panel says what it shows in the panel's words.
                let legend = if k == 0 { format!("{title} total") } else { format!("series {k}") };
                serde_json::json!({"refId": format!("R{k}"), "expr": format!("sum(metric_{id}_{k})"),
                    "legendFormat": legend})
            })
            .collect();
        panels.push(
            serde_json::json!({"id": id, "title": title, "type": "stat", "targets": targets}),
        );
    }
    for id in 10..30 {
        panels.push(
            serde_json::json!({"id": id, "title": format!("Graph {id}"), "type": "timeseries"}),
        );
    }
    let text = serde_json::to_string_pretty(&serde_json::json!({ "panels": panels })).unwrap();
    let u = build(&text, Kind::Json);
    let s = score_q(
        &u,
        &Query::new("Which queries does the pool up/down summary panel use?"),
    );
    let rel_of = |t: &str| {
        let i = u.units.iter().position(|x| x.text.contains(t)).unwrap();
        s.rel[i]
    };
    // Every query of the panel the question names ranks near the top, not only the one
    // whose words match best.
    let lead = rel_of("metric_2_0");
    assert!(lead >= subset::SIBLINGS_LEAD, "{lead}");
    for k in 1..3 {
        let r = rel_of(&format!("metric_2_{k}"));
        assert!(
            r >= subset::SIBLING_REL * lead - 1e-9,
            "{k}: {r} against {lead}"
        );
        // Another panel's queries do not follow.
        assert!(rel_of(&format!("metric_3_{k}")) < 0.1);
    }
}

#[test]
fn numbers_named_in_their_token() {
    assert_eq!(tagged_number("NM:i:25"), Some(("NM:i", 25.0)));
    assert_eq!(tagged_number("ino:45163"), Some(("ino", 45163.0)));
    assert_eq!(tagged_number("retries=3,"), Some(("retries", 3.0)));
    assert_eq!(tagged_number("12:30:45"), None);
    assert_eq!(tagged_number("(ClassLoader.java:52)"), None);
    assert_eq!(tagged_number("MD:Z:57C0C1"), None);
    assert_eq!(tagged_number("cgroup:/system.slice"), None);
}

#[test]
fn the_largest_number_named_in_its_token_is_an_extreme_in_any_column() {
    let mut text = String::new();
    for i in 0..40 {
        let nm = if i == 17 { 28 } else { i % 3 };
        // The aligner writes its tags in two orders.
        let tags = if i % 2 == 0 {
            format!("AS:i:{}\tNM:i:{nm}", 90 + i % 7)
        } else {
            format!("NM:i:{nm}\tAS:i:{}", 90 + i % 7)
        };
        text.push_str(&format!(
            "read{i}.{}\t0\tchrI\t{}\t60\t100M\t{tags}\n",
            1000 + i,
            100 + i
        ));
    }
    let u = build(&text, Kind::Lines);
    let q = Query::new("Which reads have the highest edit distance (NM)?");
    let asks = Asks::of("Which reads have the highest edit distance (NM)?");
    let s = score(&u, &q, &asks);
    let top = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    assert!(
        u.units[top].text.starts_with("read17."),
        "{}",
        u.units[top].text
    );
    assert!(s.ext_why[&top].contains("NM:i"), "{}", s.ext_why[&top]);
}

#[test]
fn the_earliest_date_of_a_line_template_answers_expires_first() {
    // Certificates printed one after another, in no order of expiry: the earliest `Not
    // After` is the answer, the latest when asked for the newest.
    let ends = [
        "Dec 31 09:37:37 2030 GMT",
        "Jan  1 00:00:00 2030 GMT",
        "Mar  3 12:09:48 2023 GMT",
        "Dec 20 09:37:33 2043 GMT",
        "Jun  1 00:00:00 2035 GMT",
        "Feb  2 10:00:00 2031 GMT",
    ];
    let mut text = String::new();
    for (k, end) in ends.iter().enumerate() {
        text.push_str(&format!(
            "Certificate:\n    Validity\n        Not Before: Jan  1 00:00:00 20{:02} GMT\n        Not After : {end}\n        Subject: CN=Root CA {k}\n",
            10 + k
        ));
    }
    let u = build(&text, Kind::Lines);
    let intent = "Which certificate in the bundle expires first?";
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    assert!(
        u.units[best].text.contains("Mar  3 12:09:48 2023"),
        "{}",
        u.units[best].text
    );
    assert!(
        s.ext_why[&best].starts_with("earliest Not After"),
        "{}",
        s.ext_why[&best]
    );
    let intent = "Which certificate has the latest Not After date?";
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    assert!(
        u.units[best].text.contains("Dec 20 09:37:33 2043"),
        "{}",
        u.units[best].text
    );
    // No time word, no date ranking.
    let intent = "Which certificate is issued to Root CA 3?";
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    assert!(s
        .ext_why
        .values()
        .all(|w| !w.contains("earliest") && !w.contains("latest")));
}

#[test]
fn one_line_is_the_largest_across_templates_of_one_label() {
    // A tar listing: names of one word and of three words make two templates of one slot.
    let mut text = String::new();
    for i in 0..40 {
        let size = if i == 17 {
            8_417_971
        } else {
            1_000 + (i * 7_919) % 5_000
        };
        text.push_str(&format!(
            "-rw-r--r-- root/root {size:>8} 2023-01-20 19:58 doc/pkg{i}/copyright\n"
        ));
        let small = if i == 5 { 3_538 } else { 100 + (i * 31) % 97 };
        text.push_str(&format!(
            "-rw-r--r-- root/root {small:>8} 2023-01-20 19:58 doc/pkg{i}/python 2 sunset.rst\n"
        ));
    }
    let u = build(&text, Kind::Lines);
    let intent = "Which is the largest file in the archive?";
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let largest: Vec<&str> = s
        .ext_why
        .iter()
        .filter(|(_, w)| w.starts_with("largest"))
        .map(|(i, _)| u.units[*i].text.as_str())
        .collect();
    assert_eq!(largest.len(), 1, "{largest:?}");
    assert!(largest[0].contains("8417971"), "{largest:?}");
}

#[test]
fn a_question_naming_warnings_puts_them_before_errors() {
    let text = "2026-12-06 21:23:40 Result: file system /var/log/audit not found in /etc/fstab\n\
                2026-12-06 21:24:06 Warning: Found one or more vulnerable packages. [test:PKGS-7392]\n\
                2026-12-06 21:24:07 Result: all good\n";
    let u = build(text, Kind::Log);
    let sal = |q: &str| {
        let s = score_q(&u, &Query::new(q));
        (s.sal[0], s.sal[1])
    };
    let (err, warn) = sal("what security warnings did the audit raise?");
    assert!(warn > err, "{warn} {err}");
    let (err, warn) = sal("which errors and warnings did it report?");
    assert!((warn - err).abs() < 1e-9, "{warn} {err}");
    let (err, warn) = sal("what did the audit find?");
    assert!(warn < err, "{warn} {err}");
}

#[test]
fn a_member_of_a_map_of_records_is_named_by_a_part_of_its_key() {
    let mut pkgs = serde_json::Map::new();
    for name in [
        "copy-descriptor",
        "object-copy",
        "minimist",
        "mkdirp",
        "json5",
        "yargs",
        "a",
        "b",
    ] {
        pkgs.insert(
            format!("node_modules/{name}"),
            serde_json::json!({"version": "1.0.0", "license": "MIT"}),
        );
    }
    let text = serde_json::to_string_pretty(&serde_json::json!({"packages": pkgs})).unwrap();
    let u = build(&text, Kind::Json);
    let s = score_q(
        &u,
        &Query::new("Which versions of minimist are locked, every copy?"),
    );
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.rel[a].total_cmp(&s.rel[b]))
        .unwrap();
    assert!(
        u.units[best]
            .text
            .starts_with("\"node_modules/minimist\": {"),
        "{}",
        u.units[best].text
    );
}

#[test]
fn a_slot_label_of_punctuation_reads_value() {
    assert_eq!(
        slots::readable("(in /usr/bin/xmlstarlet) | (in lines like L48)"),
        "value (in lines like L48)"
    );
    assert_eq!(
        slots::readable("ns/op (in lines like L3)"),
        "ns/op (in lines like L3)"
    );
    assert_eq!(slots::readable("BCI:"), "BCI:");
}

/// One distribution counted under two names (`Hardware Class:` and its last word `Class:` of
/// `hwinfo`, live set of session 55) is stated once; the same values led by other counts
/// (what was before, what is after) are two facts.
#[test]
fn a_distribution_counted_twice_is_stated_once() {
    let classes = [
        "unknown", "unknown", "unknown", "network", "network", "cpu", "bios", "disk",
    ];
    let mut text = String::new();
    for i in 0..40 {
        let c = classes[i % classes.len()];
        let other = [
            "network", "network", "network", "network", "unknown", "cpu", "bios", "disk",
        ][i % classes.len()];
        text.push_str(&format!(
            "{i}: PCI {i:02}.0: device\n  Hardware Class: {c}\n  before: {c}\n  after: {other}\n\n"
        ));
    }
    let u = build(&text, Kind::Lines);
    let headers = crate::guard::reduce::select::Headers::default();
    let f = facts(
        &u,
        &Query::new("what hardware classes are there?"),
        &headers,
    );
    let texts: Vec<&str> = f.iter().map(|x| x.text.as_str()).collect();
    let lead = |t: &&&str| t.contains(": unknown ×15, network ×10");
    assert_eq!(texts.iter().filter(lead).count(), 1, "{texts:#?}");
    assert!(texts.iter().any(|t| t.starts_with("after: ")), "{texts:#?}");
}
