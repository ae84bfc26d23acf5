use super::*;
use crate::guard::reduce::rank::Query;

#[test]
fn kubectl_table_flags_rare_status() {
    let mut t = String::from("NAMESPACE   NAME        READY   STATUS             RESTARTS   AGE\n");
    for i in 0..20 {
        t.push_str(&format!(
            "default     web-{i:<6}  1/1     Running            0          2d\n"
        ));
    }
    t.push_str("default     db-x        0/1     CrashLoopBackOff   42         2d\n");
    let q = Query::new("are any pods unhealthy?");
    let r = reduce(
        &t,
        Kind::Table,
        &Ctx {
            query: &q,
            exit_code: None,
            bytes: 0,
        },
    )
    .unwrap();
    assert!(r
        .items
        .iter()
        .any(|i| i.section == Section::Errors && i.text.contains("CrashLoopBackOff")));
}

#[test]
fn the_flagged_count_counts_every_rare_row_not_the_examples_shown() {
    // 30 `Warning` rows among 300: a few are quoted, all 30 are counted.
    let mut t = String::from("NAMESPACE   TYPE      REASON     MESSAGE\n");
    for i in 0..300 {
        let ty = if i % 10 == 0 { "Warning" } else { "Normal " };
        t.push_str(&format!("default     {ty}   Pulled     pulled image {i}\n"));
    }
    let q = Query::new("anything odd?");
    let ctx = Ctx {
        query: &q,
        exit_code: None,
        bytes: 0,
    };
    let r = reduce(&t, Kind::Table, &ctx).unwrap();
    assert!(
        r.status
            .contains("flagged by error words or rare values: 30 rows"),
        "{}",
        r.status
    );
    let quoted = r
        .items
        .iter()
        .filter(|i| i.section == Section::Errors)
        .count();
    assert!(quoted < 30, "{quoted}");
}

#[test]
fn title_case_headers_laid_out_in_columns_are_tables_and_prose_is_not() {
    let df = "Filesystem      Size  Used Avail Use% Mounted on\n\
              /dev/sda1        50G   20G   28G  42% /\n\
              tmpfs           7.8G     0  7.8G   0% /dev/shm\n\
              /dev/sdb1       916G  801G   69G  93% /data\n";
    let lines: Vec<&str> = df.lines().collect();
    let (h, cols) = find_header(&lines).expect("df's header");
    assert_eq!(h, 0);
    assert_eq!(cols[0].1, "Filesystem");
    // Title-case prose is no header: no gaps of two spaces between its words.
    let prose = "Starting The Build For Release Candidate Two\n\
                 compiling module one of the project now\n\
                 compiling module two of the project now\n\
                 compiling module three of the project now\n";
    let lines: Vec<&str> = prose.lines().collect();
    assert!(find_header(&lines).is_none());
}

/// A program's title in capitals, set off by a blank line, heads no columns: the banner and
/// `KEY : value` lines below it are no rows (a UHBD run log read as a 3-column table).
#[test]
fn a_title_set_off_by_a_blank_line_is_no_header() {
    let log = "\n UNIVERSITY OF HOUSTON BROWNIAN DYNAMICS  (Release experimental)\n\n\
               \x20  AUTHORS                 : Jeffry Madura\n\
               \x20                         : Malcolm Davis\n\
               \x20                         : Rebecca Wade\n\
               \x20  date/time               : 27-Jan-2002  10:10:15 CST\n";
    let lines: Vec<&str> = log.split('\n').collect();
    assert!(find_header(&lines).is_none(), "{:?}", find_header(&lines));
    // The same words right above rows are a header.
    let ps = "USER PID %CPU %MEM COMMAND\nroot 1 0.0 0.1 init\nroot 2 0.0 0.0 kthreadd\nroot 3 0.1 0.0 ksoftirqd\n";
    let lines: Vec<&str> = ps.split('\n').collect();
    assert_eq!(find_header(&lines).map(|h| h.0), Some(0));
}

#[test]
fn a_header_of_any_case_over_rows_of_numbers_is_a_table() {
    let iostat = "Device            r/s     w/s     rkB/s     wkB/s  %util\n\
                  sda             12.00    3.50    480.00     96.00   4.10\n\
                  sdb              0.20   88.10      3.20   9120.00  97.30\n\
                  nvme0n1        301.00   12.00  12040.00    192.00  35.00\n";
    let lines: Vec<&str> = iostat.lines().collect();
    let (h, cols) = find_header(&lines).expect("iostat's header");
    assert_eq!((h, cols.len()), (0, 6));
    assert_eq!(cols[5].1, "%util");
    // Lowercase words over rows of words are no table.
    let log = "starting   the   build\nfetching deps from the mirror\ncompiling crate one\ncompiling crate two\n";
    let lines: Vec<&str> = log.lines().collect();
    assert!(find_header(&lines).is_none());
}

#[test]
fn blocks_of_key_value_lines_under_a_capitalised_title_are_no_table() {
    let mut text = String::new();
    for n in [203, 202, 201] {
        text.push_str(&format!(
            "LOGICAL UNIT NUMBER {n}\nName:  LUN {n}\nCurrent Owner:  SP B\nPool Name:  Pool_cl\n\
             Extreme Performance:  19.15%\n\n"
        ));
    }
    let lines: Vec<&str> = text.lines().collect();
    assert!(find_header(&lines).is_none(), "{:?}", find_header(&lines));
    // A table whose first column holds a time with colons is still one.
    let ps =
        "PID  TTY      TIME     CMD\n1    ?        00:00:03 init\n22   pts/0    00:00:00 bash\n\
              31   pts/0    00:00:00 ps\n";
    let lines: Vec<&str> = ps.lines().collect();
    assert!(find_header(&lines).is_some());
}

#[test]
fn header_words_one_space_apart_name_one_column_when_no_value_starts_under_the_second() {
    let names = |t: &str| -> Vec<String> {
        let lines: Vec<&str> = t.lines().collect();
        find_header(&lines)
            .expect("a header")
            .1
            .into_iter()
            .map(|c| c.1)
            .collect()
    };
    let docker = "CONTAINER ID   IMAGE          COMMAND                  CREATED        STATUS\n\
                  4c01db0b339c   ubuntu:12.04   \"bash\"                   17 hours ago   Up 11 min\n\
                  d7886598dbe2   crosbymichael  \"/redis-server --dir\"   33 hours ago   Up 33 hours\n\
                  a1b2c3d4e5f6   nginx:1.25     \"nginx -g 'daemon\"      2 days ago     Exited (0)\n";
    assert_eq!(
        names(docker),
        ["CONTAINER ID", "IMAGE", "COMMAND", "CREATED", "STATUS"]
    );
    let df = "Filesystem      Size  Used Avail Use% Mounted on\n\
              /dev/sda1        50G   20G   28G  42% /\n\
              tmpfs           7.8G     0  7.8G   0% /dev/shm\n\
              /dev/sdb1       916G  801G   69G  93% /data\n";
    assert_eq!(
        names(df),
        ["Filesystem", "Size", "Used", "Avail", "Use%", "Mounted on"]
    );
    // Right-aligned numbers one space apart stay columns of their own.
    let ps = "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n\
              root           1  0.0  0.1 169316 13052 ?        Ss   Nov30   0:05 /sbin/init\n\
              root           2  0.0  0.0      0     0 ?        S    Nov30   0:00 [kthreadd]\n\
              www-data     812  3.2  1.4 221004 58212 ?        S    Nov30  12:41 nginx: worker\n";
    assert_eq!(names(ps).len(), 11);
    // A header written one space apart, over rows that are not aligned under it: each
    // word is a column.
    let plain = "PID USER %CPU RSS COMMAND\n100 root 0.0 0 proc0\n101 root 1.0 37000 proc1\n\
                 102 root 2.0 74000 proc2\n";
    assert_eq!(names(plain), ["PID", "USER", "%CPU", "RSS", "COMMAND"]);
}

#[test]
fn numbers_parse() {
    assert_eq!(num("15%"), Some(15.0));
    assert_eq!(num("7:53.61"), Some(473.61));
    assert_eq!(num("abc"), None);
}

#[test]
fn a_csv_whose_first_line_is_a_row_has_numbered_columns_and_ranks_its_last() {
    // A wheel's RECORD: path, digest, size; no header line.
    let mut t = String::from("pkg/__init__.py,sha256=AAAA,118\n");
    for i in 0..20 {
        t.push_str(&format!(
            "pkg/m{i}.py,sha256=B{i},{}\n",
            100 + (i * 7919) % 3000
        ));
    }
    t.push_str("pkg/shell.py,sha256=CCCC,55789\n");
    let q = Query::new("which file is the largest?");
    let ctx = Ctx {
        query: &q,
        exit_code: None,
        bytes: 0,
    };
    let r = reduce(&t, Kind::Csv, &ctx).unwrap();
    assert!(
        r.status.contains("22 rows (column 1, column 2, column 3)"),
        "{}",
        r.status
    );
    assert!(r.items.iter().all(|i| !i.text.starts_with("header:")));
    // The size column is the last: it is ranked, its top row first.
    let top = r
        .items
        .iter()
        .find(|i| i.text.starts_with("top rows by column 3:"))
        .expect("the last column ranked");
    assert!(top.text.contains("column 3: L22,"), "{}", top.text);
    // A first line of names stays the header.
    let t = "path,digest,size\npkg/a.py,sha256=A,10\npkg/b.py,sha256=B,20\npkg/c.py,sha256=C,5\n";
    let r = reduce(t, Kind::Csv, &ctx).unwrap();
    assert!(r.items.iter().any(|i| i.text == "header: path,digest,size"));
}

#[test]
fn years_in_a_row_are_a_header_and_a_number_alone_makes_a_row() {
    assert!(first_line_is_row(&["pkg/a.py", "sha256=A", "118"]));
    assert!(first_line_is_row(&["3.5", "2.0", "x"]));
    assert!(!first_line_is_row(&["country", "1990", "1991", "1992"]));
    assert!(!first_line_is_row(&["path", "digest", "size"]));
}

/// Rules drawn under a header or between rows are no rows; a row of dashes in a cell is.
#[test]
fn rules_are_no_rows() {
    for l in [
        "+++-==============-============-============-=======",
        "----- ----------- ------",
        "|---|:---:|",
    ] {
        assert!(is_rule(l), "{l}");
    }
    for l in [
        "ii  bash  5.2.15-2+b7  amd64  GNU Bourne Again SHell",
        "--",
        "-+-",
        "",
    ] {
        assert!(!is_rule(l), "{l}");
    }
}

#[test]
fn the_line_over_a_rule_is_the_header_whatever_precedes_it() {
    // sqlite3 -column after EXPLAIN QUERY PLAN: the plan's last line is no header.
    let lines = [
        "QUERY PLAN",
        "|--SCAN o",
        "|--SEARCH c USING INTEGER PRIMARY KEY (rowid=?)",
        "`--USE TEMP B-TREE FOR ORDER BY",
        "id    name           country  status         total_cents  created",
        "----  -------------  -------  -------------  -----------  --------------------",
        "1172  Hana Kowalski  PT       paid           85112        2026-01-01T05:18:00Z",
        "900   Chen Berg      PT       paid           10546        2026-01-01T10:11:00Z",
        "17    Ana Silva      DE       refund_failed  4410         2026-01-02T08:00:00Z",
    ];
    let (h, cols) = find_header(&lines).expect("a header");
    assert_eq!(h, 4);
    let names: Vec<&str> = cols.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(
        names,
        ["id", "name", "country", "status", "total_cents", "created"]
    );
}

#[test]
fn a_unit_in_parentheses_is_part_of_its_column_name() {
    // Session 43's trial: a timeit-style table was read as plain lines.
    let mut text = String::from(
        "benchmark                          n   loops     best (us)     mean (us)   per item (ns)\n",
    );
    text.push_str(&"-".repeat(90));
    text.push('\n');
    for (name, best) in [
        ("str.join/ascii", "0.09"),
        ("list.insert0/utf8", "28015.96"),
        ("in.list/ascii", "130.38"),
        ("fstring/long", "1473.09"),
    ] {
        text.push_str(&format!(
            "{name:<30}{:>7}{:>8}{best:>14}{:>14}{:>16}\n",
            10, 20, "0.12", "8.7"
        ));
    }
    let lines: Vec<&str> = text.lines().collect();
    let (at, cols) = find_header(&lines).expect("a header");
    assert_eq!(at, 0);
    let names: Vec<&str> = cols.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(
        names,
        [
            "benchmark",
            "n",
            "loops",
            "best (us)",
            "mean (us)",
            "per item (ns)"
        ]
    );
}

#[test]
fn a_headers_comment_marker_is_no_column() {
    // Session 43's trial: perf stat -I's `#` header made the times a column named `#`.
    let mut text = String::from("#           time             counts unit events\n");
    for (t, n) in [
        ("0.010424545", "1239"),
        ("0.020698448", "5764"),
        ("0.030811203", "88"),
        ("0.040912345", "410"),
    ] {
        text.push_str(&format!(
            "{t:>16}{n:>19}      page-faults                      #  179.590 K/sec\n"
        ));
    }
    let lines: Vec<&str> = text.lines().collect();
    let (_, cols) = find_header(&lines).expect("a header");
    let names: Vec<&str> = cols.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(names[0], "time", "{names:?}");
}

#[test]
fn a_hash_over_row_numbers_is_a_column() {
    let mut text = String::from("#  Name       Status   Size\n");
    for i in 1..=5 {
        text.push_str(&format!("{i}  pkg{i:<7}  ok       {}\n", i * 10));
    }
    let lines: Vec<&str> = text.lines().collect();
    let (_, cols) = find_header(&lines).expect("a header");
    assert_eq!(cols[0].1, "#");
}

/// Commas inside a CSV field's quotes separate nothing: quoted strings each with a trailing
/// comma are a list, not a table; a CSV with a quoted comma in a field is still one.
#[test]
fn quoted_commas_make_no_csv() {
    let list: Vec<String> = (0..10)
        .map(|k| format!("    \"Location(file=PosixPath('a{k}.py'), line={k}, column=1)\","))
        .collect();
    let list: Vec<&str> = list.iter().map(String::as_str).collect();
    assert!(!looks_like_csv(&list));
    let csv = [
        "name,city,n",
        "\"Smith, J\",Oslo,3",
        "Lee,\"Bergen, NO\",4",
        "Ng,Rome,5",
    ];
    assert!(looks_like_csv(&csv));
    // Label sets (`promtool tsdb dump`, live set of session 55): series, no header row.
    let series: Vec<String> = (0..10)
        .map(|k| format!("{{__name__=\"up\", instance=\"localhost:15692\", job=\"rabbitmq\"}} {k} 1796675733698"))
        .collect();
    let series: Vec<&str> = series.iter().map(String::as_str).collect();
    assert!(!looks_like_csv(&series));
    // A CSV whose cells hold `a="b"` now and then is still one.
    let mixed = ["id,expr,n", "1,x=\"a\",3", "2,y,4", "3,z,5"];
    assert!(looks_like_csv(&mixed));
}

#[test]
fn a_totals_row_is_no_top_row() {
    // Trial of session 54: `size -t`'s `(TOTALS)` row was the top row by dec.
    let mut t = String::from("   text\t   data\t    bss\t    dec\t    hex\tfilename\n");
    for i in 0..30u64 {
        let text = 1000 + i * 37 % 11 * 500 + if i == 17 { 900_000 } else { 0 };
        t.push_str(&format!(
            "{text:>7}\t    656\t      8\t{:>7}\t{:>7x}\t/usr/lib/lib{i}.so\n",
            text + 664,
            text + 664
        ));
    }
    t.push_str("1300000\t  19680\t    240\t1319920\t 1424f0\t(TOTALS)\n");
    let q = Query::new("which shared libraries are the largest by total size?");
    let ctx = Ctx {
        query: &q,
        exit_code: None,
        bytes: 0,
    };
    let r = reduce(&t, Kind::Table, &ctx).unwrap();
    let top = r
        .items
        .iter()
        .find(|f| f.section == Section::KeyFacts && f.text.starts_with("top rows by"))
        .unwrap_or_else(|| panic!("{:#?}", r.items));
    assert!(top.text.contains(": L19,"), "{}", top.text);
    assert!(!top.text.contains("L32"), "{}", top.text);
    assert!(crate::guard::reduce::signals::totals_row("455953 total"));
    assert!(!crate::guard::reduce::signals::totals_row(
        "12 ./src/totals.py"
    ));
}
