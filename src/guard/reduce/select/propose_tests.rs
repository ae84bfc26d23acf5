//! Tests of what the generic channels propose ([`super::propose`]): the answers that share a
//! template, a match's next line, an error's message and location.

use super::tests::{generic_candidates, Bytes};
use super::*;
use crate::guard::reduce::Section;

#[test]
fn every_line_a_negated_value_picks_is_shown_though_they_share_a_template() {
    // Forty stanzas, four of them not Established: the four `peer state = Idle` lines are one
    // template, and each is an answer (with the line that opens its stanza), not a repeat.
    let mut text = String::new();
    for i in 0..40 {
        let state = if i % 10 == 3 { "Idle" } else { "Established" };
        text.push_str(&format!(
            "neighbor is 10.0.{i}.1, remote AS {}\n  peer state = {state}, for {i}d\n  \
             table version {}, neighbor version {}\n  {} accepted paths\n",
            64000 + i,
            i * 37,
            i * 37,
            i * 11
        ));
    }
    let kind = crate::guard::reduce::Kind::Lines;
    let c = generic_candidates(&text, kind, "Which neighbors are not Established?");
    let out = select_with(c, 400, &Bytes, &Policy::default(), &Headers::of(&text));
    let shown: Vec<&str> = out.iter().map(|i| i.text.as_str()).collect();
    for i in [3, 13, 23, 33] {
        assert!(
            shown
                .iter()
                .any(|t| t.contains(&format!("peer state = Idle, for {i}d"))),
            "{shown:?}"
        );
        assert!(
            shown
                .iter()
                .any(|t| t.starts_with(&format!("neighbor is 10.0.{i}.1,"))),
            "{shown:?}"
        );
    }
}

#[test]
fn every_line_holding_an_id_the_question_writes_is_shown_though_they_share_a_template() {
    // An obfuscation map: 300 class lines of one template; the question names four of the
    // obfuscated names, each an answer (the relevance channel alone takes 3 of a template).
    let mut text = String::new();
    for i in 0..300 {
        text.push_str(&format!(
            "com.example.pkg{}.Widget{i}Renderer -> q{i}.f:\n    void draw():{}:{} -> a\n",
            i % 7,
            i + 10,
            i + 10
        ));
    }
    let kind = crate::guard::reduce::Kind::Lines;
    let c = generic_candidates(
        &text,
        kind,
        "The stack trace has frames in q17.f, q120.f, q201.f and q299.f; which classes are they?",
    );
    let out = select_with(c, 600, &Bytes, &Policy::default(), &Headers::default());
    let shown: Vec<&str> = out.iter().map(|i| i.text.as_str()).collect();
    for i in [17, 120, 201, 299] {
        assert!(
            shown
                .iter()
                .any(|t| t.contains(&format!("Widget{i}Renderer -> q{i}.f:"))),
            "{i}: {shown:?}"
        );
    }
}

#[test]
fn every_unit_holding_a_question_word_few_units_hold_is_shown_though_they_share_a_template() {
    // A deploy log: 400 step lines of one template, four of them rolled back; the question's
    // own word `rollback` is in those four only, each one of the answers (the relevance
    // channel alone takes 3 of a template, after every other template's best).
    let mut text = String::new();
    for i in 0..400 {
        // Every other step's word is as rare as `rollback` (4 of 400), so rarity alone does
        // not pick the answers.
        let verb = if [40, 170, 260, 390].contains(&i) {
            "rollback".to_string()
        } else {
            format!("phase{}", i % 100)
        };
        text.push_str(&format!(
            "2024-05-01 10:{:02}:{:02} deploy step {i} {verb} on node-{} in {} ms\n",
            i / 60,
            i % 60,
            i % 9,
            100 + (i * 37) % 900
        ));
        // Notes of many shapes that name deploy steps too: each template's best match
        // comes before any template's second.
        if i % 10 == 0 {
            let words = ["plan", "queue", "lock", "ready"][..1 + (i / 10) % 4].join(" ");
            let pad = "x ".repeat(i / 40);
            text.push_str(&format!("deploy steps note {pad}{words} for step {i}\n"));
        }
    }
    let kind = crate::guard::reduce::Kind::Lines;
    let c = generic_candidates(&text, kind, "Which deploy steps needed a rollback?");
    let out = select_with(c, 600, &Bytes, &Policy::default(), &Headers::default());
    let shown: Vec<&str> = out.iter().map(|i| i.text.as_str()).collect();
    for i in [40, 170, 260, 390] {
        assert!(
            shown
                .iter()
                .any(|t| t.contains(&format!("deploy step {i} rollback on"))),
            "{i}: {shown:?}"
        );
    }
}

#[test]
fn the_best_matchs_next_line_comes_with_it() {
    // A statistics listing: each counter's description (a line too long to be a label), then
    // its readings on a line of their own, not indented below it.
    let mut text = String::new();
    for i in 0..200 {
        text.push_str(&format!(
            "counter c{i} (resident set of the worker pool, in bytes, sampled every 10 s by the agent):\n\
             current={} peak={}\n",
            1000 + i * 37,
            2000 + i * 41
        ));
    }
    let kind = crate::guard::reduce::Kind::Lines;
    let c = generic_candidates(&text, kind, "How much is counter c117 at?");
    let out = select_with(c, 300, &Bytes, &Policy::default(), &Headers::default());
    let shown: Vec<&str> = out.iter().map(|i| i.text.as_str()).collect();
    assert!(
        shown.iter().any(|t| t.contains("current=5329 peak=6797")),
        "{shown:?}"
    );
}

/// An error element whose line is only its tag is shown with the text inside it: what went
/// wrong is on the lines below the tag, not in its attributes.
#[test]
fn an_error_elements_message_comes_with_its_tag() {
    let mut text = String::from("<document source=\"standard.rst\">\n");
    for i in 0..30 {
        text.push_str(&format!(
            "    <paragraph>\n        Paragraph {i} of the test document.\n"
        ));
    }
    text.push_str("    <section classes=\"system-messages\">\n");
    for (k, (level, kind, msg)) in [
        (
            1,
            "INFO",
            "Hyperlink target \"docutils\" is not referenced.",
        ),
        (3, "ERROR", "Unknown target name: \"5\"."),
        (1, "INFO", "Hyperlink target \"other\" is not referenced."),
        (3, "ERROR", "Unknown target name: \"nonexistent\"."),
    ]
    .iter()
    .enumerate()
    {
        text.push_str(&format!(
            "        <system_message ids=\"system-message-{k}\" level=\"{level}\" line=\"{}\" type=\"{kind}\">\n            <paragraph>\n                {msg}\n",
            100 + k
        ));
    }
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Lines,
        "what went wrong in this document?",
    );
    for msg in [
        "Unknown target name: \"5\".",
        "Unknown target name: \"nonexistent\".",
    ] {
        assert!(
            c.iter()
                .any(|c| c.item.section == Section::Errors && c.item.text.trim() == msg),
            "{msg}: {:#?}",
            c.iter()
                .map(|c| (c.item.section, &c.item.text))
                .collect::<Vec<_>>()
        );
    }
    assert!(!propose::tag_line("<paragraph>\n        Some text"));
    assert!(propose::tag_line(
        "  <system_message level=\"3\" type=\"ERROR\">"
    ));
    assert!(!propose::tag_line("<a href=\"x\">link</a>"));
    assert!(!propose::tag_line("<br/>"));
}

/// A compiler's diagnostic embedded in NDJSON (cargo's `--message-format json`: each
/// message's `rendered` text) says where on the line below its headline: the location is
/// proposed with the error, and its `= help:` advice is not an error of its own.
#[test]
fn an_embedded_diagnostic_brings_its_location() {
    let mut text = String::new();
    for k in 0..60 {
        text.push_str(&format!(
            "{{\"reason\":\"compiler-artifact\",\"package_id\":\"dep{k} 0.1.{k}\",\"fresh\":true}}\n"
        ));
    }
    let rendered = "warning: used `unwrap()` on an `Option` value\n   --> src/udeps.rs:199:21\n    |\n199 |         let issue = it.next().unwrap();\n    |                     ^^^^^^^^^^^^^^^^^^\n    |\n    = help: if this value is `None`, it will panic\n";
    let msg = serde_json::json!({
        "reason": "compiler-message",
        "message": {"rendered": rendered, "level": "warning"}
    });
    text.push_str(&format!("{msg}\n"));
    text.push_str("{\"reason\":\"build-finished\",\"success\":true}\n");
    let c = generic_candidates(
        &text,
        crate::guard::reduce::Kind::Ndjson,
        "which lint warnings does it report?",
    );
    let errors: Vec<&str> = c
        .iter()
        .filter(|c| c.item.section == Section::Errors)
        .map(|c| c.item.text.trim())
        .collect();
    assert!(
        errors
            .iter()
            .any(|t| t.ends_with("--> src/udeps.rs:199:21")),
        "{errors:#?}"
    );
    assert!(
        !errors.iter().any(|t| t.starts_with("= help:")),
        "{errors:#?}"
    );
    // The location pattern: a pointer word, a function's name or neither, then a file with
    // an extension and a line number; advice is none.
    assert!(propose::LOCATION.is_match("--> src/udeps.rs:199:21"));
    assert!(propose::LOCATION.is_match("File \"app.py\", line 3, in <module>"));
    assert!(propose::LOCATION.is_match("at handler (src/server.js:12:5)"));
    assert!(!propose::LOCATION.is_match("= help: if this value is `None`, it will panic"));
}

#[test]
fn a_row_rare_in_two_columns_is_shown_beside_many_rows_rare_in_one() {
    // kubectl events: 60 `Warning Unhealthy` rows (rare in TYPE only) and one `Warning
    // OOMKilling` row (rare in TYPE and REASON) among 600 `Normal` rows. The question names
    // none of them: the OOMKilling row is a kind of its own, shown before a 2nd Unhealthy.
    let mut text = String::from("NAMESPACE  TYPE     REASON      OBJECT          MESSAGE\n");
    let reasons = ["Pulled", "Created", "Started", "Scheduled", "Killing"];
    for i in 0..660 {
        let (ty, reason, msg) = if i == 400 {
            (
                "Warning",
                "OOMKilling",
                "Memory cgroup out of memory: Killed process 48213 (java)",
            )
        } else if i % 11 == 0 {
            (
                "Warning",
                "Unhealthy",
                "Readiness probe failed: HTTP probe failed with statuscode: 503",
            )
        } else {
            ("Normal", reasons[i % 5], "Successfully did the usual thing")
        };
        text.push_str(&format!(
            "checkout   {ty:<8} {reason:<11} pod/api-{i:05}  {msg}\n"
        ));
    }
    let kind = crate::guard::reduce::Kind::Table;
    let c = generic_candidates(&text, kind, "Why is the checkout worker pod restarting?");
    let out = select_with(c, 300, &Bytes, &Policy::default(), &Headers::of(&text));
    let shown: Vec<&str> = out.iter().map(|i| i.text.as_str()).collect();
    assert!(
        shown
            .iter()
            .any(|t| t.contains("Killed process 48213 (java)")),
        "{shown:?}"
    );
}

#[test]
fn the_error_that_led_up_to_the_last_one_is_proposed_though_its_template_came_first() {
    // A config.log: a dozen header probes fail alike (one template), the last probed fails
    // the run. The template's first unit (`minix/config.h`) is not why it failed.
    let mut text = String::from("configure:4051: checking for C compiler version\n");
    let headers = [
        "minix/config.h",
        "attr/xattr.h",
        "byteswap.h",
        "endian.h",
        "malloc/malloc.h",
    ];
    for (k, h) in headers.iter().chain(["sodium.h"].iter()).enumerate() {
        text.push_str(&format!(
            "configure:{}: checking for {h}\nconfigure:{}: gcc -c -O2 conftest.c >&5\n\
             conftest.c:{}:10: fatal error: {h}: No such file or directory\n\
             compilation terminated.\nconfigure: failed program was:\n| /* confdefs.h */\n\
             | #define PACKAGE_NAME \"tinyvault\"\n",
            5000 + k,
            5000 + k,
            40 + k
        ));
    }
    text.push_str(
        "configure:6859: error: libsodium headers not found; install libsodium-dev\n\
         ## Cache variables. ##\nac_cv_header_sodium_h=no\n",
    );
    let kind = crate::guard::reduce::Kind::Log;
    let c = generic_candidates(&text, kind, "Why did ./configure fail?");
    let errors: Vec<&str> = c
        .iter()
        .filter(|c| c.channel == Channel::Errors)
        .map(|c| c.item.text.as_str())
        .collect();
    // Proposed as no near copy of the template's first unit, so the selector may show both.
    assert!(
        c.iter()
            .any(|c| c.item.text.contains("fatal error: sodium.h")
                && c.channel == Channel::Errors
                && c.group.is_none()),
        "{errors:?}"
    );
    // A run whose last error is the only one of its kind proposes nothing more.
    let one = "step 1 ok\nstep 2 ok\nerror: disk full\n";
    let c = generic_candidates(one, kind, "Why did it fail?");
    assert_eq!(c.iter().filter(|c| c.channel == Channel::Errors).count(), 1);
}

#[test]
fn a_top_extreme_proposed_by_another_channel_says_what_ranks_it() {
    let mut text = String::new();
    for i in 0..60 {
        if i % 12 == 0 {
            text.push_str(&format!(
                "goos: linux\ngoarch: amd64\npkg: example.com/pkg{i}\n"
            ));
        }
        // Irregular, as timings are (a run of consecutive numbers is a numbering).
        let (ns, b) = if i == 41 {
            (83077, 4080)
        } else {
            (300 + (i * 37) % 91, 80)
        };
        text.push_str(&format!(
            "BenchmarkReport/size=16/variant={i}-2  \t  300\t  {ns}.5 ns/op\t  {b} B/op\n"
        ));
    }
    let intent = "Which benchmark is the slowest in ns/op?";
    let u = crate::guard::reduce::units::build(&text, crate::guard::reduce::Kind::Lines);
    let q = crate::guard::reduce::rank::Query::new(intent);
    let asks = crate::guard::reduce::intent::Asks::of(intent);
    let s = crate::guard::reduce::signals::score(&u, &q, &asks);
    let c = candidates(&u, &s, &[], &q);
    let top: Vec<&Cand> = c
        .iter()
        .filter(|c| c.item.text.contains("83077.5 ns/op"))
        .collect();
    let all: Vec<_> = c.iter().map(|c| (c.channel, &c.item.text)).collect();
    assert!(top.len() > 1, "{all:?}");
    // Whichever channel proposes it, it reads as the largest of both.
    for c in &top {
        let t = &c.item.text;
        assert!(t.starts_with("[largest "), "{t:?}");
        assert!(
            t.contains("largest ns/op") && t.contains("largest B/op"),
            "{t:?}"
        );
    }
}
