//! Tests of the row unit builders: tables inside text, CSV cells.

use super::super::*;

#[test]
fn an_aligned_table_inside_text_has_its_headers_columns() {
    let mut text = String::from(
        "# search report\nQuery:       alpha  [L=300]\nScores for each sequence, best first:\n\
         \x20   E-value  score  bias    E-value  score  Model       Description\n\
         \x20   -------  -----  ----    -------  -----  -----       -----------\n",
    );
    for (e, s, m) in [
        ("1e-90", "310.2", "Kinase"),
        ("2e-40", "140.7", "Ligase"),
        ("3e-9", "35.1", "Pump"),
    ] {
        text.push_str(&format!(
            "    {e:>7}  {s:>5}   0.1    {e:>7}  {s:>5}  {m:<10}  a domain\n"
        ));
    }
    text.push_str("\nDomain annotation for each model, in  three  groups  here\nend of report\n");
    let u = build(&text, Kind::Lines);
    let id = |n: &str| u.fields.iter().position(|f| f.name == n);
    let (score, score2, model) = (
        id("score").unwrap(),
        id("score (2)").unwrap(),
        id("Model").unwrap(),
    );
    let row = u.units.iter().find(|x| x.text.contains("140.7")).unwrap();
    assert!(
        row.fields.contains(&(score, "140.7".to_string())),
        "{:?}",
        row.fields
    );
    assert!(row.fields.contains(&(score2, "140.7".to_string())));
    assert!(row.fields.contains(&(model, "Ligase".to_string())));
    // The lines around the table, and prose laid out with wide gaps, have no columns.
    for t in ["Query:", "Scores for", "Domain annotation", "end of report"] {
        let x = u.units.iter().find(|x| x.text.starts_with(t)).unwrap();
        assert!(
            x.fields.iter().all(|(f, _)| *f != score),
            "{t}: {:?}",
            x.fields
        );
    }
}

#[test]
fn a_comment_naming_the_columns_names_a_tab_separated_tables_columns() {
    let mut text = String::from(
        "# BLASTN 2.2\n# Fields: query id, subject id, evalue, bit score\n# 5 hits found\n",
    );
    for (s, e, b) in [
        ("NM_1", "1e-50", "200"),
        ("XM_2", "3e-37", "152"),
        ("NM_3", "0.5", "30"),
        ("XM_4", "2", "20"),
        ("NM_5", "4", "18"),
    ] {
        text.push_str(&format!("q1\t{s}\t{e}\t{b}\n"));
    }
    text.push_str("# BLAST processed 1 queries\n");
    let u = build(&text, Kind::Lines);
    let id = |n: &str| {
        u.fields
            .iter()
            .position(|f| f.name == n)
            .unwrap_or_else(|| panic!("{n}: {:?}", u.fields))
    };
    let (subject, score) = (id("subject id"), id("bit score"));
    // The first row is a row, not the header.
    let first = u.units.iter().find(|x| x.text.contains("NM_1")).unwrap();
    assert!(
        first.fields.contains(&(subject, "NM_1".to_string())),
        "{:?}",
        first.fields
    );
    assert!(first.fields.contains(&(score, "200".to_string())));
    assert!(!u.fields.iter().any(|f| f.name == "NM_1"));
    // The same table inside a longer text (lines of prose around it): its rows too.
    let long =
        format!("Search started.\nUsing database refseq.\n{text}Search finished in 2 s.\nDone.\n");
    let u = build(&long, Kind::Lines);
    assert!(!u.structured);
    let subject = u
        .fields
        .iter()
        .position(|f| f.name == "subject id")
        .unwrap();
    let first = u.units.iter().find(|x| x.text.contains("NM_1")).unwrap();
    assert!(
        first.fields.contains(&(subject, "NM_1".to_string())),
        "{:?}",
        first.fields
    );
    // Zeek and W3C declare theirs with tabs and spaces.
    assert_eq!(
        rows::fields_line("#fields\tts\tuid\tid.orig_h", 3),
        Some(vec!["ts".into(), "uid".into(), "id.orig_h".into()])
    );
    assert_eq!(
        rows::fields_line("#Fields: date time c-ip cs-method", 4).map(|v| v.len()),
        Some(4)
    );
    assert_eq!(rows::fields_line("# fields of the form", 9), None);
    assert_eq!(rows::fields_line("no comment", 2), None);
    assert_eq!(rows::fields_line("#fieldset a b", 2), None);
}

#[test]
fn bars_inside_parentheses_make_no_table() {
    let mut text = String::new();
    for i in 0..6 {
        text.push_str(&format!(
            "16408 openat(AT_FDCWD, \"/etc/d{i}/\", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = -1 ENOENT (No such file or directory)\n"
        ));
    }
    let u = build(&text, Kind::Lines);
    assert!(
        u.units.iter().all(|x| x.fields.is_empty()),
        "{:?}",
        u.fields
    );
    // A pipe-separated export is still one.
    let psv = "id|name|state|size\n1|a|up|10\n2|b|down|20\n3|c|up|30\n4|d|up|40\n";
    let u = build(psv, Kind::Lines);
    assert!(u.fields.iter().any(|f| f.name == "state"), "{:?}", u.fields);
}

/// A comma inside a quoted cell's brackets still splits the line's other cells.
#[test]
fn a_quoted_cell_with_brackets_keeps_its_csv() {
    let csv = "1,\"[1, 2]\",up\n2,\"[3, 4]\",down\n3,\"[5]\",up\n4,\"[6, 7]\",up\n";
    let u = build(csv, Kind::Csv);
    assert!(u.structured);
    assert_eq!(u.fields.len(), 3, "{:?}", u.fields);
}

#[test]
fn lines_between_a_tables_parts_are_no_rows() {
    // `top -b`: each snapshot's summary lines and its header again above its rows.
    let mut text = String::new();
    for snap in 0..3 {
        text.push_str(&format!(
            "top - 12:39:1{snap} up 11:50,  0 user,  load average: 4.28, 2.66, 2.25\n\
             MiB Swap:      0.0 total,      0.0 free,      0.0 used.  23414.6 avail Mem\n\n\
             \x20 PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\n"
        ));
        for p in 0..12 {
            text.push_str(&format!(
                "{:>5} root      20   0   19460  16596   6672 R  {:>4}.0   0.1   0:02.51 worker{p}\n",
                19400 + p,
                p * 3 + snap
            ));
        }
    }
    let mut b = Builder::new(&text);
    assert!(table(&mut b, &text));
    let rows: Vec<&Unit> = b
        .units
        .iter()
        .filter(|u| u.kind == UnitKind::Record)
        .collect();
    assert_eq!(
        rows.len(),
        36,
        "{:?}",
        rows.iter().map(|u| &u.text).collect::<Vec<_>>()
    );
    assert!(rows
        .iter()
        .all(|u| !u.text.contains("MiB Swap") && !u.text.contains("PID USER")));
}

/// `sar -A`-like text: blocks of one activity each, every block under its own header stamped
/// with the time of its first sample.
fn sar_like() -> String {
    let mut text = String::from("Linux 6.1 (vm) \t12/06/26 \t_x86_64_\t(2 CPU)\n\n");
    text.push_str("18:50:55        CPU      %usr     %nice      %sys     %idle\n");
    for s in 0..32 {
        text.push_str(&format!(
            "18:5{}:{:02}        all     50.25     49.75      0.00      0.00\n",
            1 + s / 60,
            s % 60
        ));
    }
    text.push_str("\n18:50:55          DEV       tps     wkB/s     %util\n");
    for s in 0..8 {
        let (tps, w, u) = if s == 5 {
            ("808.00", "819200.00", "41.60")
        } else {
            ("0.00", "0.00", "0.00")
        };
        text.push_str(&format!(
            "18:51:{:02}          vda    {tps:>6}  {w:>9}  {u:>6}\n",
            s + 10
        ));
    }
    text.push_str("\n18:50:55         INTR       all\n");
    for s in 0..8 {
        text.push_str(&format!(
            "18:52:{:02}          sum    {}.00\n",
            s + 10,
            100 + s
        ));
    }
    text
}

#[test]
fn each_table_of_a_series_has_its_own_columns() {
    let text = sar_like();
    let lines: Vec<&str> = text.lines().collect();
    assert!(crate::guard::reduce::table::several_tables(&lines));
    // Read as one table, the DEV block's rows were ranked by the CPU block's `%usr … %idle`.
    let u = build(&text, Kind::Table);
    let id = |n: &str| u.fields.iter().position(|f| f.name == n);
    let spike = u.units.iter().find(|x| x.text.contains("819200")).unwrap();
    let w = id("wkB/s").expect("the DEV block's columns");
    assert!(
        spike
            .fields
            .iter()
            .any(|(f, v)| *f == w && v == "819200.00"),
        "{:?}",
        spike.fields
    );
    assert!(!spike.fields.iter().any(|(f, _)| Some(*f) == id("%usr")));
    // One table with one header stays one table.
    let one: String = text.split("\n\n").take(2).collect::<Vec<_>>().join("\n\n");
    let lines: Vec<&str> = one.lines().collect();
    assert!(!crate::guard::reduce::table::several_tables(&lines));
}
