//! Tests of the block headers.

use super::*;
use crate::guard::reduce::Section;

#[test]
fn a_line_inside_a_stanza_has_the_stanza_header() {
    let text = "neighbor is 10.0.0.1, remote AS 1\n  state = Established\n  up 3d\n\
                neighbor is 10.0.0.2, remote AS 2\n  state = Idle\n    retry in 5s\n";
    let h = Headers::of(text);
    let it = Item::line(Section::Evidence, 5, "  state = Idle", 1.0);
    let head = h.header(5, &it).expect("line 5 is inside a block");
    assert_eq!(head.line, Some(4));
    assert_eq!(head.text, "neighbor is 10.0.0.2, remote AS 2");
    assert_eq!(head.section, Section::Evidence);
    // The outermost opener of a record: line 6's is line 4, not the line 5 it is
    // indented under.
    assert_eq!(h.header(6, &it).and_then(|i| i.line), Some(4));
    // Top-level lines have none.
    assert!(h.header(4, &it).is_none());
    assert!(h.header(1, &it).is_none());
}

#[test]
fn a_header_of_a_few_lines_is_named_by_its_first() {
    // git log: the message's opener is `Date:`, the record's name its `commit` line.
    let mut text = String::new();
    for (sha, title) in [
        ("9f1c2e", "Revert \"Use render node\""),
        ("72a0b1", "Fix leak"),
    ] {
        text.push_str(&format!(
            "commit {sha}a4b\nAuthor: A <a@x.org>\nDate:   Fri Mar 1 2019\n\n    {title}\n\n    Body.\n\n"
        ));
    }
    let h = Headers::of(&text);
    let it = Item::line(Section::Evidence, 5, "    Revert", 1.0);
    let head = h.header(5, &it).expect("the title is inside a block");
    assert_eq!(
        (head.line, head.text.as_str()),
        (Some(1), "commit 9f1c2ea4b")
    );
    // A longer run of flat lines is a listing: the opener alone heads its block.
    let text = "alpha: one\nbravo: two\ncharlie: three\ndelta: four\necho: five\n  in echo\n";
    assert_eq!(
        Headers::of(text).header(6, &it).and_then(|i| i.line),
        Some(5)
    );
}

#[test]
fn flat_text_brackets_and_far_openers_give_no_header() {
    assert!(Headers::of("a 1\nb 2\nc 3\n").is_empty());
    let json = "{\n  \"a\": 1,\n  \"b\": 2\n}";
    assert!(Headers::of(json).is_empty(), "a bare brace is no header");
    // A block longer than a record opens no record: its lines have no header.
    let mut long = String::from("section one\n");
    for i in 0..MAX_BLOCK + 5 {
        long.push_str(&format!("  item {i}\n"));
    }
    let it = Item::line(Section::Evidence, 3, "x", 1.0);
    assert!(Headers::of(&long).header(3, &it).is_none());
    // Inside it, a record of its own still has its header.
    long.push_str("  record seven\n    state = Idle\n");
    let h = Headers::of(&long);
    let n = MAX_BLOCK + 8;
    assert_eq!(h.header(n, &it).and_then(|i| i.line), Some(n - 1));
    // A tag with no attributes names nothing.
    let xml = "<feed lang=\"ru\">\n  <entry>\n    <title>A</title>\n  </entry>\n</feed>";
    assert_eq!(
        Headers::of(xml).header(3, &it).and_then(|i| i.line),
        Some(1)
    );
    let xml = "<entry>\n    <title>A</title>\n</entry>";
    assert!(Headers::of(xml).header(2, &it).is_none());
    // A bare tag's first child, when it names something, stands for it.
    let xml = "<bricks>\n  <brick>\n    <brickName>h1:/b</brickName>\n    <stats>\n      <max>9</max>\n    </stats>\n  </brick>\n</bricks>";
    let h = Headers::of(xml);
    assert_eq!(
        h.header(5, &it).map(|i| i.text.trim().to_string()),
        Some("<brickName>h1:/b</brickName>".into())
    );
    assert!(
        h.header(3, &it).is_none(),
        "the naming child itself has no header"
    );
}

#[test]
fn tabs_multibyte_and_blank_lines() {
    let text = "Übersicht: Dienst läuft\n\n\tZustand: aktiv ✓\n";
    let h = Headers::of(text);
    let it = Item::line(Section::Evidence, 3, "x", 1.0);
    assert_eq!(
        h.header(3, &it).map(|i| i.text),
        Some("Übersicht: Dienst läuft".into())
    );
    assert!(h.header(99, &it).is_none());
    assert!(h.header(0, &it).is_none());
}

#[test]
fn a_line_under_a_banner_has_the_banner_for_header() {
    let text = "\t\t=== gcc Summary ===\n\n# of expected passes\t310\n\
                # of unexpected failures\t194\n\t\t=== libgo Summary ===\n\
                # of unexpected failures\t200\n## Notes\nsee below\n";
    let h = Headers::of(text);
    let it = Item::line(Section::Evidence, 4, "x", 1.0);
    let head = |n| h.header(n, &it).map(|i| i.text.trim().to_string());
    assert_eq!(head(4).as_deref(), Some("=== gcc Summary ==="));
    assert_eq!(head(6).as_deref(), Some("=== libgo Summary ==="));
    assert_eq!(head(8).as_deref(), Some("## Notes"));
    assert_eq!(head(5), None, "a banner has none");
    for not in [
        "-----",
        "--- a/src/x.rs",
        "== 1",
        "# comment here",
        "----- x ---- y ---- z ----",
    ] {
        assert!(!is_banner(not), "{not}");
    }
    assert!(is_banner("----- Build -----"));
}

#[test]
fn a_header_written_the_same_everywhere_names_nothing() {
    let mut text = String::from("interactions:\n");
    for i in 0..MAX_SAME_HEADER {
        text.push_str(&format!(
            "- request:\n    method: GET\n    uri: https://x/{i}\n"
        ));
    }
    let h = Headers::of(&text);
    let it = Item::line(Section::Evidence, 3, "x", 1.0);
    assert!(h.header(3, &it).is_none(), "{:?}", h.header(3, &it));
    // Written fewer times, it opens its records.
    let h = Headers::of("- request:\n    method: GET\n- response:\n    code: 202\n");
    assert_eq!(h.header(4, &it).map(|i| i.line), Some(Some(3)));
}

#[test]
fn a_log_line_is_in_no_section_a_multi_line_message_opened() {
    let mut text = String::new();
    for k in 0..4 {
        text.push_str(&format!(
            "REQ: curl -i http://10.0.0.{k}:9696/v2.0/subnets.json -X GET\n\
             RESP: [200] {{'content-length': '{k}'}}\n"
        ));
        for j in 0..5 {
            text.push_str(&format!(
                "2015-10-29 10:5{k}:0{j}.141 29022 INFO nova.compute.manager [-] step {j}\n"
            ));
        }
    }
    let h = Headers::of(&text);
    let it = Item::line(Section::Evidence, 1, "x", 1.0);
    // Line 10 is a log line after the second request: it has no header.
    assert!(h.header(10, &it).is_none(), "{:?}", h.header(10, &it));
    // The response line is still the request's.
    assert_eq!(h.header(9, &it).and_then(|i| i.line), Some(8));
}

#[test]
fn rows_with_no_clock_time_are_their_sections_own() {
    // `go test -bench` over packages: each `pkg:` line opens its package's rows, and the
    // slowest row says nothing of its package without it.
    let mut text = String::new();
    for p in 0..6 {
        text.push_str(&format!(
            "goos: linux\ngoarch: amd64\npkg: example.com/inventory/pkg{p:02}\ncpu: Xeon\n"
        ));
        for v in 0..8 {
            text.push_str(&format!(
                "BenchmarkReport/size=16/variant={v}-2  \t  300\t  {}.5 ns/op\n",
                300 + p * 10 + v
            ));
        }
        text.push_str("PASS\n");
    }
    let h = Headers::of(&text);
    let it = Item::line(Section::Evidence, 1, "x", 1.0);
    // Line 33 is the third row of the third package (pkg02, line 29).
    let head = h
        .header(33, &it)
        .expect("a benchmark row is in its package's section");
    assert_eq!(
        (head.line, head.text.as_str()),
        (Some(29), "pkg: example.com/inventory/pkg02")
    );
    assert!(clock_early("2015-10-29 10:51:52.887 5127 INFO nova"));
    assert!(clock_early("[9:05:01] started"));
    assert!(!clock_early(
        "BenchmarkReport/size=16/variant=0-2  300  330.7 ns/op"
    ));
}

#[test]
fn an_opener_always_right_after_another_continues_its_section() {
    let mut text = String::new();
    for (n, pct) in [(203, "19.15"), (77, "31.91"), (12, "8.50")] {
        text.push_str(&format!(
            "LOGICAL UNIT NUMBER {n}\nName:  lun_{n}\nUID:  60:06:{n}\nCurrent Owner:  SP B\n\
             Pool Name:  Pool_cl\nExtreme Performance:  {pct}%\n\n"
        ));
    }
    let h = Headers::of(&text);
    let it = Item::line(Section::Evidence, 1, "x", 1.0);
    let head = |n| h.header(n, &it).map(|i| i.text);
    // LUN 77's tier line (13) is under its first line, not under its Name or UID line,
    // which come right after it in every section.
    assert_eq!(head(13).as_deref(), Some("LOGICAL UNIT NUMBER 77"));
    assert_eq!(head(9).as_deref(), Some("LOGICAL UNIT NUMBER 77"));
}

#[test]
fn a_repeated_sections_opener_is_the_header_of_its_lines() {
    let mut text = String::from("# report\n\n");
    for (q, hit) in [
        ("alpha", "Kinase 310.2"),
        ("beta", "Ligase 99.1"),
        ("gamma", "Pump 7.5"),
    ] {
        text.push_str(&format!(
            "Query:  {q}  [L=300]\nScores for complete sequence:\n    E-value  score  Model\n    1e-9  {hit}\n\n"
        ));
    }
    let h = Headers::of(&text);
    let it = Item::line(Section::Evidence, 1, "x", 1.0);
    let head = |n| h.header(n, &it).map(|i| i.text.trim().to_string());
    // The row of beta's table (line 11) and the line opening its table (line 9, written
    // the same in every section) have beta's opener.
    assert_eq!(head(11).as_deref(), Some("Query:  beta  [L=300]"));
    assert_eq!(head(9).as_deref(), Some("Query:  beta  [L=300]"));
    assert_eq!(head(4).as_deref(), Some("Query:  alpha  [L=300]"));
    assert_eq!(head(8), None, "an opener has none");
    assert_eq!(head(1), None, "nor a line before the first section");
    // A line written the same in every section opens none; nor do lines that are the
    // text's body (log lines), or sections of one line each.
    assert!(repeat_openers(&["a x", "b 1", "a y", "b 2", "a z", "b 3"]).is_empty());
    let same = [
        "Scores:", "  1", "  2", "Scores:", "  3", "  4", "Scores:", "  5",
    ];
    assert!(repeat_openers(&same).is_empty());
    let log: Vec<String> = (0..30).map(|i| format!("INFO step {i}")).collect();
    let log: Vec<&str> = log.iter().map(String::as_str).collect();
    assert!(repeat_openers(&log).is_empty());
    // An access log: a host that comes back twice, each time before the same other host,
    // is one more row of the log (one format on most lines), not a section's opener.
    let mut log = Vec::new();
    for i in 0..40 {
        let host = match i {
            7 | 23 => "proxy-724.aol.com".to_string(),
            8 | 24 => "www.aol.com".to_string(),
            _ => format!("192.48.{i}.2"),
        };
        log.push(format!(
            "{host} - - [22/Apr/2009:18:55:{i:02} +1200] \"GET /p{i}.html HTTP/1.1\" 200 {i}"
        ));
    }
    let log: Vec<&str> = log.iter().map(String::as_str).collect();
    assert!(repeat_openers(&log).is_empty());
    assert_eq!(format_of(log[7]), format_of(log[0]));
}

/// BLAST tabular with comments: `# Query:` lines open the sections (a leading comment
/// mark is not the line's lead word), and a row that names its query brings no header.
#[test]
fn comment_marked_openers_open_sections_and_a_named_row_needs_no_header() {
    let mut text = String::new();
    for q in ["contig_0", "contig_1", "contig_2"] {
        text.push_str(&format!(
            "# BLASTN 2.14.0+\n# Query: {q}\n# Database: refseq_rna\n{q}\tNM_1.2\t99.1\n{q}\tNM_3.1\t80.0\n"
        ));
    }
    assert_eq!(lead("# Query: contig_0").as_deref(), Some("# Query:"));
    assert_eq!(lead("// File: a.c").as_deref(), Some("// File:"));
    // A number first is no mark: its lead is empty, not the word after it (stack frames
    // `10  crash-client!...` are no section openers).
    assert_eq!(lead("10  crash-client!main"), None);
    let h = Headers::of(&text);
    assert_eq!(
        h.section_of(9),
        Some((7, "# Query:")),
        "contig_1's first row is in its section"
    );
    assert_eq!(h.section_of(7), None, "an opener is in none");
    let row = Item::line(Section::Evidence, 9, "contig_1\tNM_1.2\t99.1", 1.0);
    assert!(h.header(9, &row).is_none(), "the row names contig_1 itself");
    assert!(!names_in(
        "BGP neighbor is 10.0.0.1",
        "  BGP neighbor version 4"
    ));
    let other = Item::line(Section::Evidence, 9, "NM_1.2 99.1", 1.0);
    assert_eq!(
        h.header(9, &other).map(|i| i.text),
        Some("# Query: contig_1".to_string())
    );
}

#[test]
fn a_path_after_a_mark_is_one_kind_of_opener() {
    // tidy over many files: `=== <path>` then that file's messages (trial of session 47).
    assert_eq!(
        lead("=== /usr/share/doc/libjson-c5/README.html"),
        lead("=== /usr/share/doc/nodejs/api/v8.html")
    );
    assert_ne!(lead("# Query: contig_0"), lead("# File: a.txt"));
    let mut text = String::new();
    for f in ["a/one.html", "b/two.html", "c/three.html"] {
        text.push_str(&format!("=== /usr/share/doc/{f}\n"));
        text.push_str("line 3 column 1 - Warning: missing <!DOCTYPE> declaration\n");
        text.push_str("line 9 column 2 - Warning: trimming empty <p>\n");
        text.push_str("exit=1\n");
    }
    let h = Headers::of(&text);
    assert_eq!(
        h.of_line(6).map(|(n, t)| (n, t.to_string())),
        Some((5, "=== /usr/share/doc/b/two.html".to_string()))
    );
}

#[test]
fn a_text_of_short_paragraphs_heads_each_by_its_first_line() {
    // A gettext catalogue: each entry's `#:` location names it (live set of session 50).
    let mut text = String::from("# SOME TITLE\nmsgid \"\"\nmsgstr \"\"\n\n");
    for k in 0..12 {
        text.push_str(&format!(
            "#: wagtail/admin/forms/pages.py:{k}\nmsgid \"one {k}\"\nmsgid_plural \"many {k}\"\nmsgstr[0] \"\"\n\n"
        ));
    }
    let h = Headers::of(&text);
    // Line 12 is the third entry's `msgid_plural`, under its `#:` line 10.
    assert_eq!(
        h.of_line(12).map(|(n, t)| (n, t.to_string())),
        Some((10, "#: wagtail/admin/forms/pages.py:1".to_string()))
    );
    // Nine paragraphs are too few to be the text's structure.
    let short: String = text.split("\n\n").take(9).collect::<Vec<_>>().join("\n\n");
    assert_eq!(Headers::of(&short).of_line(12), None);
}
