//! Tests of the extremes of template slots: few lines the question names, units the reader
//! does not know, lines written twice, and slots that are no measure.

use super::*;
use crate::guard::reduce::units::build;
use crate::guard::reduce::Kind;

#[test]
fn a_few_lines_the_question_names_are_ranked_by_their_number_in_any_unit() {
    let widths = ["12.5", "30.25", "973.2854", "40.0", "7.75"];
    let mut log = String::new();
    for i in 0..40 {
        log.push_str(&format!("[{i}] (./chapter{i}.tex) page shipped\n"));
        if i % 8 == 3 {
            log.push_str(&format!(
                "Overfull \\hbox ({}pt too wide) in paragraph at lines {}--{}\n",
                widths[i / 8],
                i + 50,
                i + 70
            ));
        }
    }
    let intent = "Which overfull hbox warnings are there, and which one is the widest?";
    let u = build(&log, Kind::Log);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    // Five lines (fewer than a measure no one names needs), their widths in points.
    assert!(
        u.units[best].text.contains("(973.2854pt too wide)"),
        "{}",
        u.units[best].text
    );
    assert_eq!(fields::slot_number("(973.2854pt"), Some(973.2854));
    assert_eq!(fields::slot_number("-3dB"), Some(-3.0));
    assert_eq!(fields::slot_number("2nd"), None);
    assert_eq!(fields::slot_number("12abcd"), None);
}

#[test]
fn a_line_written_again_word_for_word_is_one_extreme() {
    let mut log = String::new();
    for i in 0..30 {
        log.push_str(&format!(
            "Tree number {i}:\nRetention index (RI) = 0.7{}5\n",
            i % 9
        ));
    }
    log.push_str("Retention index (RI) = 0.6999\n");
    let intent = "which trees have the smallest retention index?";
    let u = build(&log, Kind::Log);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let shown: Vec<&str> = (0..u.units.len())
        .filter(|&i| s.ext[i] > 0.0)
        .map(|i| u.units[i].text.as_str())
        .collect();
    // The smallest, then the next values up, each once (not the second smallest six times).
    assert!(
        shown.contains(&"Retention index (RI) = 0.6999"),
        "{shown:?}"
    );
    assert_eq!(
        shown.iter().filter(|t| t.ends_with("0.705")).count(),
        1,
        "{shown:?}"
    );
    assert!(shown.iter().any(|t| t.ends_with("0.715")), "{shown:?}");
}

#[test]
fn a_slot_mostly_of_other_tokens_is_no_measure() {
    // objdump: the byte before the mnemonic is `30`, `10`, `08` on some lines and `c5`, `f0`
    // on most: hex bytes, not a number to rank.
    let bytes = ["c5", "f0", "30", "d0", "10", "e8", "08", "ff", "c3", "4d"];
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!(
            "  {:x}:\t48 83 {}  \tadd  $0x{},%rbp\n",
            0xafed + i * 4,
            bytes[i % bytes.len()],
            i
        ));
    }
    let intent = "which add has the largest immediate?";
    let u = build(&text, Kind::Log);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let ranked: Vec<&String> = s.ext_why.values().collect();
    assert!(ranked.iter().all(|w| !w.contains("add")), "{ranked:?}");
    assert_eq!(fields::number("24.00bytes"), Some(24.0));
    let toks = ["afed:", "48", "83", "c5", "30", "add", "$0x30,%rbp"];
    assert!(extremes::hex_byte(&toks, 4));
    // Two-digit decimals side by side are no hex bytes.
    assert!(!extremes::hex_byte(&["load", "12", "30", "45"], 2));
}

/// gdb's threads, numbered from 154 down to 1: the numbers count threads, and "the largest
/// Thread" is no answer to anything; a column of sizes in that order still ranks.
#[test]
fn a_numbering_is_no_measure() {
    let mut bt = String::new();
    for t in (1..=40).rev() {
        bt.push_str(&format!(
            "Thread {t} (Thread 0x7ffb4f3e16c0 (LWP {}) \"dl\"):\n#0  futex_wait (private=0) at futex.h:146\n\n",
            16600 + t * 7 % 13
        ));
    }
    let intent = "Which threads are deadlocked?";
    let u = build(&bt, Kind::StackTrace);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let ranked: Vec<&str> = (0..u.units.len())
        .filter(|&i| s.ext[i] > 0.0 && u.units[i].text.starts_with("Thread"))
        .map(|i| s.ext_why.get(&i).map_or("", String::as_str))
        .collect();
    assert!(
        ranked.iter().all(|why| !why.contains("Thread")),
        "{ranked:?}"
    );
    let sizes: Vec<(f64, usize)> = [900.0, 700.0, 650.0, 80.0, 12.0]
        .iter()
        .enumerate()
        .map(|(i, &v)| (v, i))
        .collect();
    assert!(!super::extremes::numbering(&sizes, 12.0, 900.0));
    let ids: Vec<(f64, usize)> = (1..=9).rev().map(|v| (v as f64, v)).collect();
    assert!(super::extremes::numbering(&ids, 1.0, 9.0));
}

#[test]
fn a_slot_splits_by_a_category_word_not_by_each_lines_name() {
    // `git cat-file --batch-check`: trees and blobs in one template, each line with its own
    // path (no digits in it). The sizes split by `blob` / `tree`, not by path, so the blob
    // series the question names ranks: the largest blob is the top extreme.
    let names = [
        "docs",
        "src/main.rs",
        "README.md",
        "tests/data.xml",
        "scripts/run.sh",
    ];
    let mut text = String::new();
    for i in 0..400 {
        let kind = if i % 2 == 0 { "blob" } else { "tree" };
        let size = 100 + (i * 7919 + i * i * 31) % 90_000;
        let name = format!(
            "{}/{}",
            names[i % 5],
            ["alpha", "beta", "gamma", "delta"][i % 4]
        );
        text.push_str(&format!(
            "{kind} {:040x} {size} {name}x{}\n",
            i * 7919,
            "y".repeat(i % 7)
        ));
    }
    text.push_str(&format!("blob {:040x} 615304 tests/corpus/big.xml\n", 42));
    let intent = "Which blob is the largest object in the repository history?";
    let u = build(&text, Kind::Lines);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    assert!(
        u.units[best].text.contains("615304"),
        "{}",
        u.units[best].text
    );
    assert!(s.ext[best] >= 0.55, "{}", s.ext[best]);
}

#[test]
fn a_totals_row_is_not_ranked_with_the_rows_it_sums() {
    // Session 43's trial: coverage's `TOTAL` row made the file with most misses "2nd largest".
    let mut t = String::from(
        "Name                 Stmts   Miss  Cover\n-----------------------------------------\n",
    );
    for i in 0..30 {
        let (stmts, miss) = if i == 17 {
            (2513, 1326)
        } else {
            (100 + (i * 37) % 50, 10 + (i * 53) % 40)
        };
        t.push_str(&format!(
            "pkg/mod{i:02}.py          {stmts:>5}  {miss:>5}    50%\n"
        ));
    }
    t.push_str(
        "-----------------------------------------\nTOTAL                53437  41086    23%\n",
    );
    let intent = "Which file has the most missed statements?";
    let u = build(&t, Kind::Table);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let best = (0..u.units.len())
        .max_by(|&a, &b| s.ext[a].total_cmp(&s.ext[b]))
        .unwrap();
    let total = u
        .units
        .iter()
        .position(|x| x.text.starts_with("TOTAL"))
        .unwrap();
    assert_eq!(
        u.units[total].kind,
        UnitKind::Record,
        "{:?}",
        u.units[total]
    );
    assert!(
        u.units[best].text.starts_with("pkg/mod17.py"),
        "{}",
        u.units[best].text
    );
    assert_eq!(s.ext[total], 0.0);
}

#[test]
fn a_number_before_its_unit_is_named_by_the_unit() {
    // `go test -bench -benchmem`: each number is followed by its unit, so the unit before a
    // number is the previous number's; the largest `B/op` must not read as an `ns/op`.
    let mut text = String::new();
    for i in 0..60 {
        if i % 12 == 0 {
            text.push_str(&format!(
                "goos: linux\ngoarch: amd64\npkg: example.com/pkg{i}\n"
            ));
        }
        let (ns, b, allocs) = if i == 41 {
            (83077, 4080, 538)
        } else {
            (300 + i, 80 + i % 3, 3)
        };
        text.push_str(&format!(
            "BenchmarkReport/size=16/variant={i}-2  \t  300\t  {ns}.5 ns/op\t  {b} B/op\t  {allocs} allocs/op\n"
        ));
    }
    let intent = "Which benchmark is the slowest in ns/op?";
    let u = build(&text, Kind::Lines);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    // Each label names the unit of the number it ranks: the row with 4080 B/op is the
    // largest B/op, the rows with 82 B/op (80, 81 or 82 elsewhere) the 2nd, tied.
    let mut labels = 0;
    for (&i, why) in &s.ext_why {
        let text = &u.units[i].text;
        assert!(!why.contains('›'), "{why}");
        if why.starts_with("largest B/op") {
            assert!(text.contains("4080 B/op"), "{why}: {text}");
        } else if why.starts_with("2nd largest B/op") {
            assert!(text.contains("\t  82 B/op"), "{why}: {text}");
        } else if why.starts_with("2nd largest allocs/op") {
            assert!(text.ends_with("\t  3 allocs/op"), "{why}: {text}");
        }
        labels += 1;
    }
    assert!(labels > 0);
    assert!(slots::unit_word("ns/op") && slots::unit_word("KiB") && slots::unit_word("%"));
    assert!(!slots::unit_word("took") && !slots::unit_word("src/main.rs"));
}

#[test]
fn a_dot_leader_is_no_part_of_a_label() {
    // sqlite3_analyzer (live set of session 47): `Percentage of total database...... 90.3%`
    // had been ranked as `largest database......................`.
    let mut text = String::new();
    for i in 0..40 {
        let pct = if i == 17 {
            85.4
        } else {
            0.1 + f64::from(i * 7 % 41) / 10.0
        };
        text.push_str(&format!(
            "*** Table T{i} ***********************\n\nPercentage of total database...................... {pct:5.1}%\n\
             Number of entries................................. {}\n\n",
            (i * 13) % 97
        ));
    }
    let intent = "Which table takes the largest share of the database?";
    let u = build(&text, Kind::Lines);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    assert!(!s.ext_why.is_empty());
    let top = s
        .ext_why
        .iter()
        .find(|(_, w)| w.starts_with("largest database"))
        .map(|(&i, _)| u.units[i].text.clone());
    assert!(
        s.ext_why.values().all(|w| !w.contains("..")),
        "{:?}",
        s.ext_why
    );
    assert!(top.is_some_and(|t| t.contains("85.4%")), "{:?}", s.ext_why);
}

#[test]
fn a_count_in_brackets_is_named_by_the_word_after_it() {
    // jscpd (trial of session 47): `(801 lines, 5090 tokens)`; the token count had been
    // labelled `lines` (the word before it) and ranked as the smallest lines.
    let mut text = String::new();
    for i in 0..200 {
        let (lines, tokens) = if i == 23 {
            (801, 5090)
        } else {
            (3 + (i * 7919) % 97, 40 + (i * 7919) % 500)
        };
        text.push_str(&format!(
            "Clone found (python):\n - src/a{i}.py [{s}:1 - {e}:28] ({lines} lines, {tokens} tokens)\n   src/b{i}.py [{s}:1 - {e}:28]\n",
            s = (i * 53) % 700 + 1,
            e = (i * 53) % 700 + lines + 1
        ));
    }
    let intent = "Which clone has the most tokens?";
    let u = build(&text, Kind::Lines);
    let ranked = slots::slot_extremes(&u, &Query::new(intent), &Asks::of(intent), false, 5);
    let labels: Vec<&str> = ranked.iter().map(|r| slots::slot_label(&r.1)).collect();
    assert!(labels.contains(&"tokens"), "{labels:?}");
    for r in &ranked {
        let top = &u.units[r.2[0].1].text;
        match slots::slot_label(&r.1) {
            "tokens" | "lines" => {
                assert!(top.contains("(801 lines, 5090 tokens)"), "{}: {top}", r.1)
            }
            l => assert!(!l.contains(','), "{l}"),
        }
    }
}

#[test]
fn a_banner_names_the_numbers_of_its_rows() {
    // sqlite3_analyzer (trial of session 47): `SF_TEMPS....... 154  31.7%` rows under a
    // banner; no word on the rows names the page counts, the banner does.
    let names = [
        "SF_TEMPS",
        "SEATTLE_TEMPS",
        "AIRPORTS",
        "CARS",
        "STOCKS",
        "IRIS",
        "WHEAT",
    ];
    let mut text = String::from("*** Page counts for all tables with their indices ******\n\n");
    for (k, n) in names.iter().enumerate() {
        let pages = [154, 141, 90, 14, 12, 5, 3][k];
        text.push_str(&format!(
            "{n:.<40} {pages:<11} {:.1}%\n",
            pages as f64 / 4.86
        ));
    }
    text.push_str("\n*** Page counts for all tables and indices separately ******\n\n");
    for (k, n) in names.iter().enumerate() {
        let pages = [68, 70, 45, 9, 7, 3, 2][k];
        text.push_str(&format!(
            "{n:.<40} {pages:<11} {:.1}%\n",
            pages as f64 / 4.86
        ));
    }
    let intent = "Which tables use the most pages?";
    let u = build(&text, Kind::Lines);
    let ranked = slots::slot_extremes(&u, &Query::new(intent), &Asks::of(intent), false, 5);
    let titled = ranked
        .iter()
        .find(|r| slots::slot_label(&r.1).starts_with("Page counts for all tables"))
        .expect("the banner labels the page counts");
    assert!(
        u.units[titled.2[0].1].text.starts_with("SF_TEMPS"),
        "{titled:?}"
    );
    // A question that writes one of the banner's words only is not named by it.
    let intent = "Which rows are largest?";
    let ranked = slots::slot_extremes(&u, &Query::new(intent), &Asks::of(intent), false, 5);
    assert!(
        ranked
            .iter()
            .all(|r| !slots::slot_label(&r.1).starts_with("Page")),
        "{ranked:?}"
    );
}

#[test]
fn a_slot_of_units_after_the_number_names_and_scales_it() {
    // `fdupes -r -S` (trial of session 50): `46 bytes each:` and one `1 byte each:` make the
    // unit a slot of its own; the sizes had gone unranked. A `KiB` line is scaled.
    let mut text = String::new();
    for i in 0..120 {
        let (n, unit) = match i {
            0 => (1, "byte"),
            37 => (40, "KiB"),
            _ => (100 + (i * 7919) % 30_000, "bytes"),
        };
        text.push_str(&format!(
            "{n} {unit} each:\n/usr/lib/a{i}/x.rb\n/usr/lib/b{i}/x.rb\n\n"
        ));
    }
    let intent = "Which duplicate files are the largest?";
    let u = build(&text, Kind::Lines);
    let ranked = slots::slot_extremes(&u, &Query::new(intent), &Asks::of(intent), false, 5);
    let bytes = ranked
        .iter()
        .find(|r| slots::slot_label(&r.1) == "bytes")
        .unwrap_or_else(|| panic!("{:?}", ranked.iter().map(|r| &r.1).collect::<Vec<_>>()));
    assert_eq!(u.units[bytes.2[0].1].text, "40 KiB each:");
}

#[test]
fn a_code_is_no_measure() {
    // Live set of session 54: make's `Error 2` lines were called the largest `Error`.
    let mut log = String::new();
    for i in 0..30 {
        log.push_str(&format!(
            "make[{}]: Entering directory '/src/d{i}'\n",
            i % 4
        ));
        log.push_str(&format!(
            "make[{}]: *** [Makefile:{}: check-d{i}] Error {}\n",
            i % 4,
            5000 + i * 37,
            1 + i % 2
        ));
    }
    let intent = "why did make check fail, and in which directory?";
    let u = build(&log, Kind::Log);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let why: Vec<&String> = s.ext_why.values().collect();
    assert!(!why.iter().any(|w| w.contains("Error")), "{why:?}");
    assert!(super::slots::code_word("Error") && super::slots::code_word("status:"));
    assert!(!super::slots::code_word("took"));
}

#[test]
fn a_unit_with_a_colon_before_a_number_is_the_last_values() {
    // `siege -v` (trial of session 55): `0.01 secs: 1532634 bytes` ranked as `largest secs:`.
    let mut text = String::new();
    for i in 0..60 {
        let bytes = if i == 23 {
            1532634
        } else {
            100 + i * 7919 % 997
        };
        text.push_str(&format!(
            "HTTP/1.1 200     0.0{} secs: {bytes:>7} bytes ==> GET  /pkg{i}/changelog.gz\n",
            i % 3
        ));
    }
    let intent = "what was the largest response?";
    let u = build(&text, Kind::Lines);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    let top = s
        .ext_why
        .iter()
        .find(|(&i, _)| u.units[i].text.contains("1532634"))
        .map(|(_, why)| why.clone());
    assert!(
        top.as_deref()
            .is_some_and(|w| w.starts_with("largest bytes")),
        "{top:?}"
    );
    assert!(
        s.ext_why.values().all(|w| !w.contains("secs:")),
        "{:?}",
        s.ext_why
    );
}

#[test]
fn a_zero_is_not_among_the_largest() {
    // valgrind's LEAK SUMMARY (trial of session 56): `definitely lost: 0 bytes in 0 blocks`
    // had been the "4th largest blocks, tied".
    let mut log = String::new();
    for i in 0..30 {
        log.push_str(&format!("==21630== checked record {i} of 30\n"));
    }
    log.push_str(
        "==21630==    definitely lost: 0 bytes in 0 blocks\n\
         ==21630==    indirectly lost: 0 bytes in 0 blocks\n\
         ==21630==      possibly lost: 120 bytes in 3 blocks\n\
         ==21630==    still reachable: 1,110,723 bytes in 200 blocks\n",
    );
    let intent = "which leak kinds hold the most blocks?";
    let u = build(&log, Kind::Log);
    let s = score(&u, &Query::new(intent), &Asks::of(intent));
    for i in 0..u.units.len() {
        if u.units[i].text.contains("0 bytes in 0 blocks") {
            let why = s.ext_why.get(&i).map_or("", String::as_str);
            assert!(
                !why.contains("largest blocks"),
                "{}: {why}",
                u.units[i].text
            );
        }
    }
    let reachable = (0..u.units.len())
        .find(|&i| u.units[i].text.contains("200 blocks"))
        .unwrap();
    assert!(s
        .ext_why
        .get(&reachable)
        .is_some_and(|w| w.contains("largest blocks")));
}
