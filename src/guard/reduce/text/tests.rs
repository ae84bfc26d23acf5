//! Tests of the line templates and the line reducer.

use super::*;
use crate::guard::reduce::rank::Query;

#[test]
fn lines_with_different_labels_are_different_templates() {
    let lines = [
        "# BLASTN 2.14.0+",
        "# Query: contig_0",
        "# Database: refseq_rna",
        "# BLASTN 2.14.0+",
        "# Query: contig_1",
        "# Database: refseq_rna",
    ];
    let sevs = vec![Severity::None; lines.len()];
    let (templates, of_line) = mine(&lines, &sevs);
    assert_eq!(templates.len(), 3, "{templates:?}");
    assert_eq!(of_line[1], of_line[4], "both Query: lines are one template");
    assert_ne!(of_line[0], of_line[1]);
    let query = &templates[of_line[1].unwrap()];
    assert_eq!(query.lines, vec![2, 5], "two Query: lines, not four");
    // Values still vary under one label.
    assert!(!labels_clash(&["user=", "<*>"], &["user=", "bob"]));
    // A status word in capitals that opens a line is its kind: `SKIP a.js` and `OKK b.js`.
    assert!(labels_clash(&["SKIP", "a.js"], &["OKK", "b.js"]));
    assert!(!labels_clash(&["SKIP", "a.js"], &["SKIP", "b.js"]));
    assert!(!labels_clash(&["open", "a.js"], &["read", "b.js"]));
    assert!(labels_clash(
        &["#", "Query:", "<*>"],
        &["#", "BLASTN", "<*>"]
    ));
}

#[test]
fn an_exit_status_line_has_no_context_after_it() {
    let never = |_: usize| false;
    let ci = [
        "##[error]Process completed with exit code 1.",
        "Post job cleanup.",
        "[command]/usr/bin/git version",
    ];
    assert!(context_after(&ci, 0, &never).is_empty());
    // The same runner line without an exit status keeps its continuation.
    let other = ["##[error]Process failed.", "[command]/usr/bin/git version"];
    assert_eq!(context_after(&other, 0, &never), [1]);
    // A tally of errors counts the lines above it; the next file's statistics are no context.
    let po = [
        "./fr/django.po:432: ...but some messages have 3 plural forms",
        "msgfmt: found 1 fatal error",
        "./fr/django.po: 348 translated messages.",
    ];
    assert!(context_after(&po, 1, &never).is_empty());
    // Gemini CLI's trailer after the output (trial of session 55): a field that states
    // nothing and the exit status are no part of the last error.
    let gemini = [
        "127.0.0.1 failed: javax.net.ssl.SSLHandshakeException: No subject alternative names",
        "  cause: unknown host",
        "Error: (none)",
        "Exit Code: 0",
        "Signal: (none)",
    ];
    assert_eq!(context_after(&gemini, 0, &never), [1]);
}

#[test]
fn the_findings_a_tally_counts_are_shown_as_errors() {
    let mut lines = Vec::new();
    for k in 0..40 {
        lines.push(format!("./l{k}/django.po: 348 translated messages."));
    }
    lines.insert(
        20,
        "./fr/django.po:432: ...but some messages have 3 plural forms".into(),
    );
    lines.insert(21, "msgfmt: found 1 fatal error".into());
    let text = lines.join("\n");
    let refs: Vec<&str> = text.split('\n').collect();
    let q = Query::new("which catalogs fail with fatal errors");
    let ctx = Ctx {
        query: &q,
        exit_code: None,
        bytes: text.len(),
    };
    let r = reduce_lines(&refs, Kind::Lines, &ctx);
    let errors: Vec<&str> = r
        .items
        .iter()
        .filter(|i| i.section == Section::Errors)
        .map(|i| i.text.as_str())
        .collect();
    assert!(
        errors
            .iter()
            .any(|t| t.contains("django.po:432: ...but some messages")),
        "{errors:?}"
    );
}

#[test]
fn the_next_result_of_a_list_is_not_an_error_lines_context() {
    let never = |_: usize| false;
    let list = [
        "FAILED: net/Test.java",
        "Passed: net/RST.java",
        "Passed: net/Other.java",
    ];
    assert!(context_after(&list, 0, &never).is_empty());
    // pytest -v: the next test's PASSED line is the next result, whatever its shape.
    let pytest = [
        "tests/test_auth.py::test_token_expiry_window FAILED                      [  8%]",
        "tests/test_billing.py::test_billing_roundtrip[0] PASSED                  [  8%]",
        "tests/test_billing.py::test_billing_roundtrip[1] PASSED                  [  8%]",
    ];
    assert!(context_after(&pytest, 0, &never).is_empty());
    // A continuation of the error (indented, or not of the labelled shape) is context.
    let cont = [
        "Error: cannot bind port 80",
        "  reason: permission denied",
        "while starting the listener",
    ];
    assert_eq!(context_after(&cont, 0, &never), [1, 2]);
    // A note after the error, labelled but in prose, is its context too.
    let hint = [
        "error: failed to push some refs to 'origin'",
        "hint: Updates were rejected because the tip is behind",
    ];
    assert_eq!(context_after(&hint, 0, &never), [1]);
    // Lines at the error line's own indentation are the next messages, not its context
    // (a dmesg whose lines all start with a space).
    let dmesg = [
        " pci 0000:00:01.0: [8086:0e02] type 01 class 0x060400",
        " pci 0000:00:02.0: [8086:0e04] type 01 class 0x060400",
        " pci 0000:00:03.0: [8086:0e08] type 01 class 0x060400",
        " pci 0000:80:05.4: probe failed with error -22",
        " pci 0000:00:05.0: [8086:0e28] type 00 class 0x088000",
    ];
    assert!(context_after(&dmesg, 3, &never).is_empty());
    assert_eq!(labelled("  Passed: a.java"), Some(2));
    assert_eq!(labelled("src/a.rs:3: error"), None);
}

#[test]
fn mines_templates_and_keeps_errors() {
    let mut text = String::new();
    for i in 0..50 {
        text.push_str(&format!(
            "2024-01-01 10:00:{:02} INFO served request {i} in {i}ms\n",
            i % 60
        ));
    }
    text.push_str("2024-01-01 10:01:00 ERROR database connection refused host=db1\n");
    text.push_str("    at com.acme.Db.connect(Db.java:42)\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let sevs: Vec<Severity> = lines.iter().map(|l| signal::severity(l)).collect();
    let (t, _) = mine(&lines, &sevs);
    assert_eq!(t.len(), 3, "{t:?}");
    let q = Query::new("why did the database fail?");
    let r = reduce_lines(
        &lines,
        Kind::Log,
        &Ctx {
            query: &q,
            exit_code: None,
            bytes: 0,
        },
    );
    let err: Vec<&Item> = r
        .items
        .iter()
        .filter(|i| i.section == Section::Errors)
        .collect();
    assert!(err
        .iter()
        .any(|i| i.line == Some(51) && i.text.contains("connection refused")));
    assert!(err
        .iter()
        .any(|i| i.line == Some(52) && i.text.contains("Db.java:42")));
    assert!(r.next_action.contains("L"));
}

/// kubectl_06 (corpus): the pool's configuration line, 78 lines above the error, is the
/// manifest's `maxSize=10` fact; it shares the error's terms, not the intent's.
#[test]
fn intent_matches_are_not_all_one_template() {
    // Sixty name lines match the question best; a line that matches it less well still
    // gets a place among the matches.
    let mut text = String::new();
    for i in 0..60 {
        text.push_str(&format!("  <name>ge-0/0/{i}</name>\n  <mtu>1514</mtu>\n"));
        for f in [
            "speed", "duplex", "flow", "media", "fault", "loopback", "snmp", "index",
        ] {
            text.push_str(&format!("  <{f}>{}</{f}>\n", i * 7 % 13));
        }
    }
    text.push_str("ports in service: 3\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let q = Query::new("which ge-0/0 port names are in service?");
    let ctx = Ctx {
        query: &q,
        exit_code: None,
        bytes: text.len(),
    };
    let r = reduce_lines(&lines, Kind::Lines, &ctx);
    let names = r
        .items
        .iter()
        .filter(|i| i.text.contains("<name>ge-0/0/"))
        .count();
    assert!(names <= MATCHES_PER_TEMPLATE + 3, "{names}");
    assert!(r.items.iter().any(|i| i.text.contains("ports in service")));
}

#[test]
fn keeps_the_setting_an_error_refers_to() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/kubectl_06.txt");
    let text = std::fs::read_to_string(p).unwrap();
    let lines: Vec<&str> = text.split('\n').collect();
    let q = Query::new(
        "kubectl logs payment-service-7d9f8c4b-xk2p9 what is causing intermittent 500s?",
    );
    let ctx = Ctx {
        query: &q,
        exit_code: None,
        bytes: text.len(),
    };
    let r = reduce_lines(&lines, Kind::Log, &ctx);
    let cfg = r
        .items
        .iter()
        .filter(|i| i.text.contains("maxSize=10"))
        .max_by(|a, b| a.prio.total_cmp(&b.prio))
        .expect("the pool configuration line is a candidate");
    assert_eq!(cfg.section, Section::Evidence);
    assert!(cfg.prio >= 45.0, "{}", cfg.prio);
    // The size stated is the file's, and no derived count of 3+ digits is written.
    let kind = r
        .items
        .iter()
        .find(|i| i.text.starts_with("kind:"))
        .unwrap();
    assert!(
        kind.text
            .contains(&format!("{} bytes", fmt_num(text.len()))),
        "{}",
        kind.text
    );
}

#[test]
fn the_output_going_on_is_not_an_error_lines_context() {
    let never = |_: usize| false;
    let mut log: Vec<String> = (0..6)
        .map(|i| format!("gcc -O2 -c src/file_{i}.c -o build/file_{i}.o"))
        .collect();
    log.push("src/file_5.c:391:5: warning: unused variable 'len'".into());
    log.extend((6..9).map(|i| format!("gcc -O2 -c src/file_{i}.c -o build/file_{i}.o")));
    let lines: Vec<&str> = log.iter().map(String::as_str).collect();
    assert!(context_after(&lines, 6, &never).is_empty(), "{lines:?}");
    // An exception at the margin below a failure is its context.
    let maven = [
        "[INFO] Running a.BTest",
        "[INFO] Running a.CTest",
        "[INFO] Running a.DTest",
        "[ERROR] a.DTest.testOf  Time elapsed: 0.003 s  <<< FAILURE!",
        "org.opentest4j.AssertionFailedError: expected: <true> but was: <false>",
        "\tat a.DTest.testOf(DTest.java:84)",
    ];
    assert_eq!(context_after(&maven, 3, &never), [4, 5]);
}

/// A make log that stops on a link error has failed, though no exit code came with it: the
/// Status says so, and the line that says it is a key fact.
#[test]
fn a_make_log_that_stops_on_an_error_has_failed() {
    let mut log: Vec<String> = (0..40)
        .map(|i| format!("gcc -O2 -c src/file_{i}.c -o build/file_{i}.o"))
        .collect();
    log.push("/home/ci/src/seg.c:214: undefined reference to `crc32c_update'".into());
    log.push("collect2: error: ld returned 1 exit status".into());
    log.push("make[1]: *** [Makefile:88: build/kvd] Error 1".into());
    log.push("make: *** [Makefile:42: all] Error 2".into());
    let lines: Vec<&str> = log.iter().map(String::as_str).collect();
    let q = Query::new("why did the build fail?");
    let ctx = Ctx {
        query: &q,
        exit_code: None,
        bytes: 4000,
    };
    let r = reduce_lines(&lines, Kind::Lines, &ctx);
    assert!(r.status.starts_with("Failed: "), "{}", r.status);
    assert!(
        r.items
            .iter()
            .any(|i| i.text == "exit status line: make: *** [Makefile:42: all] Error 2"),
        "{:#?}",
        r.items
    );
}

#[test]
fn a_count_of_templates_from_100_on_is_marked_as_toolsums_own() {
    // 120 different error messages: the count of their templates is toolsum's, not a figure
    // of the input, so it is written `×N` (as records and keys are), never bare.
    let words = |i: usize| -> String {
        let a = (b'a' + (i % 26) as u8) as char;
        let b = (b'a' + (i / 26) as u8) as char;
        format!("{a}{b}x")
    };
    let mut text = String::new();
    for i in 0..120 {
        let w = words(i);
        let pad = vec![w.as_str(); 1 + i % 7].join(" ");
        text.push_str(&format!("ERROR {w} {pad} broke\n"));
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let sevs: Vec<Severity> = lines.iter().map(|l| signal::severity(l)).collect();
    let (t, _) = mine(&lines, &sevs);
    assert!(t.len() >= 100, "{}", t.len());
    let q = Query::new("what broke?");
    let r = reduce_lines(
        &lines,
        Kind::Log,
        &Ctx {
            query: &q,
            exit_code: None,
            bytes: 0,
        },
    );
    let fact = r
        .items
        .iter()
        .find(|i| i.text.starts_with("error lines:"))
        .expect("the error lines fact");
    assert!(
        fact.text
            .contains(&format!("in ×{} line templates", t.len())),
        "{}",
        fact.text
    );
}

#[test]
fn the_line_before_an_error_from_its_own_source_goes_with_it() {
    let mut text = String::new();
    for i in 0..30 {
        text.push_str(&format!(
            " pci 0000:00:{i:02x}.0: [8086:0e02] type 01 class 0x060400\n"
        ));
    }
    text.push_str(" mei_me 0000:00:16.0: Device doesn't have valid ME Interface\n");
    text.push_str(" mei_me 0000:00:16.0: initialization failed.\n");
    text.push_str(" usbcore: registered new interface driver usbfs\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let q = Query::new("did any driver fail to initialize?");
    let ctx = Ctx {
        query: &q,
        exit_code: None,
        bytes: text.len(),
    };
    let r = reduce_lines(&lines, Kind::Lines, &ctx);
    assert!(
        r.items
            .iter()
            .any(|i| i.text.contains("valid ME Interface") && i.section == Section::Errors),
        "the line before the error goes with it"
    );
    assert!(same_source(lines[30], lines[31]));
    assert!(!same_source(lines[29], lines[31]));
    assert!(
        !same_source("a b", "a b"),
        "a second word without ':' is no source"
    );
    assert!(same_source(
        "sd 2:0:1:0: [sdb] Sense Key : Medium Error",
        "sd 2:0:1:0: [sdb] tag#0 FAILED Result"
    ));
}

#[test]
fn a_giant_line_is_read_for_errors_part_by_part() {
    let filler = "step ok value 42 ".repeat(GIANT_LINE_BYTES / 8);
    let line = format!("{filler}FATAL: disk quota exceeded {filler}");
    assert_eq!(
        signal::severity(&line),
        Severity::None,
        "read by its head only"
    );
    assert_eq!(line_severity(&line), Severity::Error);
    assert_eq!(line_severity(&filler), Severity::None);
    // A short line reads as before.
    assert_eq!(line_severity("ERROR: x"), signal::severity("ERROR: x"));
}

#[test]
fn a_run_that_says_at_its_end_it_failed_is_failed() {
    let ctx_q = Query::new("why did it fail?");
    let ctx = Ctx {
        query: &ctx_q,
        exit_code: None,
        bytes: 0,
    };
    let status = |end: &[&str]| {
        let mut lines: Vec<String> = (0..300)
            .map(|i| format!("warning: unused variable: `v{i}`"))
            .collect();
        lines.extend(end.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        reduce_lines(&refs, Kind::Lines, &ctx).status
    };
    for end in [
        &["error: could not compile `ledger_core` (lib) due to 1 previous error; 960 warnings emitted"][..],
        &["# tests 1350", "# pass 1347", "# fail 2", "# cancelled 1"][..],
        &[
            "Traceback (most recent call last):",
            "  File \"invoice_calc.py\", line 5, in line_total",
            "TypeError: unsupported operand type(s) for *: 'int' and 'str'",
        ][..],
        // go test -v (session 43's trial: its Status said "Completed").
        &["--- PASS: TestEdgeClock (0.00s)", "FAIL", "FAIL\texample.com/ratelimit\t1.311s", "FAIL"][..],
        &["configure: error: libzstd >= 1.4.0 is required for the segment codec"][..],
        &["-- Configuring incomplete, errors occurred!"][..],
        &["make: *** [Makefile:12: all] Error 2"][..],
    ] {
        assert!(status(end).starts_with("Failed: "), "{end:?}: {}", status(end));
    }
    // An exception's name in the last lines, with no traceback, is no verdict.
    let s = status(&["see ValueError: in the docs"]);
    assert!(!s.starts_with("Failed"), "{s}");
    let s = status(&["ok  \texample.com/ratelimit\t1.311s"]);
    assert!(!s.starts_with("Failed"), "{s}");
    let s = status(&["# fail 0"]);
    assert!(!s.starts_with("Failed"), "{s}");
}

#[test]
fn an_nginx_error_log_is_a_log_not_a_table() {
    let lines: Vec<String> = (0..40)
        .map(|i| {
            format!(
                "2025/12/06 03:00:{:02} [error] 2203#2203: *{} upstream timed out (110: Connection timed out) while reading response header from upstream, client: 203.0.113.{i}, server: shop.example.com, request: \"GET /api/v2/cart HTTP/1.1\", host: \"shop.example.com\"",
                i % 60,
                100_000 + i
            )
        })
        .collect();
    let text = lines.join("\n");
    assert_eq!(crate::guard::reduce::detect(&text), Kind::Log);
}

#[test]
fn a_step_that_succeeded_does_not_say_a_run_that_ends_on_an_error_completed() {
    // meson's log: a compiler check's `-- returncode: 0` early, its failure last.
    let mut lines: Vec<String> = vec!["Build started at 2026-12-07T03:15:49".into()];
    lines.push("Command line: cc sanitycheckc.c -o sanitycheckc.exe".into());
    lines.push("-- returncode: 0".into());
    for i in 0..60 {
        lines.push(format!("Checking for function \"f{i}\" : YES"));
    }
    lines.push(
        "meson.build:67:6: ERROR: Dependency \"libsodium\" not found (tried pkg-config)".into(),
    );
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let q = Query::new("Why did meson setup fail?");
    let ctx = Ctx {
        query: &q,
        exit_code: None,
        bytes: 0,
    };
    let r = reduce_lines(&refs, Kind::Lines, &ctx);
    assert!(!r.status.starts_with("Completed"), "{}", r.status);
    assert_ne!(r.failed, Some(false));
    assert!(r
        .items
        .iter()
        .all(|i| !i.text.starts_with("exit status line")));
    // Ending on the success it reports, the output completed.
    let r = reduce_lines(&refs[..refs.len() - 1], Kind::Lines, &ctx);
    assert!(r.status.starts_with("Completed"), "{}", r.status);
}
