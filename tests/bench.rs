//! The benchmark harness end to end (tier 3, real model): three small corpus files through the
//! real daemon (`toolsum serve` with the tiny model) and the head / head+tail baselines.
//! No quality thresholds: it checks the report's shape, the scores' ranges and the totals line.

use toolsum::bench::{run, BenchOptions};

use crate::util;

const FILES: [&str; 3] = ["kubectl_06.txt", "json_02.json", "kubectl_02.txt"];

#[test]
fn bench_runs_three_files_through_the_daemon() {
    util::model_path("tiny");
    let out = tempfile::tempdir().unwrap();
    let rep = run(BenchOptions {
        corpus: util::corpus_dir(),
        model: Some("tiny".into()),
        toolsum_bin: Some(util::bin()),
        out_dir: out.path().to_path_buf(),
        files: FILES.iter().map(|s| s.to_string()).collect(),
        // The files are 9-15 KB: a low token limit sends them down the summary path.
        token_limit: Some(1_000),
        quiet: true,
        ..BenchOptions::default()
    })
    .expect("bench run");

    assert_eq!(rep.rows.len(), 9, "3 files x (toolsum, head, head+tail)");
    for f in FILES {
        for sys in ["toolsum", "head", "head+tail"] {
            let r = rep
                .rows
                .iter()
                .find(|r| r.file == f && r.system == sys)
                .unwrap_or_else(|| panic!("no row {f} {sys}"));
            assert!((0.0..=1.0).contains(&r.recall), "{f} {sys}: {}", r.recall);
            assert!(r.must_keep > 0 && r.kept <= r.must_keep);
            assert!(r.input_tokens > 1_000 && r.output_tokens > 0, "{f} {sys}");
            if sys == "toolsum" {
                assert!(r.error.is_none(), "{f}: {:?}", r.error);
                assert!(
                    matches!(r.result.as_str(), "summary" | "preview"),
                    "{f}: {}",
                    r.result
                );
                assert!(r.text.contains("long_responses/"), "{f}: pointer missing");
            } else {
                assert_eq!(r.result, "cut");
                assert!(
                    r.invented.is_empty(),
                    "a cut invents nothing: {:?}",
                    r.invented
                );
            }
        }
    }
    assert_eq!(rep.totals.len(), 3);
    assert!(
        rep.daemon.peak_rss_bytes.unwrap_or(0) > 10 << 20,
        "peak RSS read"
    );

    let parts: Vec<&str> = rep.totals_line.split("; ").collect();
    assert_eq!(parts.len(), 3, "{}", rep.totals_line);
    let re = regex::Regex::new(
        r"^(toolsum|head|head\+tail): recall=(\d\.\d\d) invented=\d+ p50_s=\d+\.\d\d p95_s=\d+\.\d\d$",
    )
    .unwrap();
    for (p, want) in parts.iter().zip(["toolsum", "head", "head+tail"]) {
        let c = re.captures(p).unwrap_or_else(|| panic!("bad group {p:?}"));
        assert_eq!(&c[1], want);
        let recall: f64 = c[2].parse().unwrap();
        assert!((0.0..=1.0).contains(&recall));
    }
    assert!(rep
        .markdown
        .contains("| **total** (3 files) | **toolsum** |"));
    for f in ["bench.md", "bench.json", "bench.png", "daemon.log"] {
        assert!(out.path().join(f).is_file(), "{f} written");
    }
    let md = std::fs::read_to_string(out.path().join("bench.md")).unwrap();
    assert_eq!(md.trim_end().lines().last(), Some(rep.totals_line.as_str()));
    let js: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("bench.json")).unwrap())
            .unwrap();
    assert_eq!(js["rows"].as_array().map(Vec::len), Some(9));
}

/// Two corpora in one run (a second one built from shared files: a dev row, a holdout row and an
/// unlabelled row): each set gets its totals, the holdout file appears in no per-file row, in
/// neither bench.md nor bench.json, and the unlabelled row is skipped with a note.
#[test]
fn bench_reports_sets_and_keeps_holdout_to_totals() {
    use toolsum::bench::sets::NamedCorpus;
    util::model_path("tiny");
    let shared = util::corpus_dir();
    let text = std::fs::read_to_string(shared.join("MANIFEST.tsv")).unwrap();
    let line_of = |f: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{f}\t")))
            .unwrap_or_else(|| panic!("{f} not in the shared manifest"))
            .to_string()
    };
    let dev = tempfile::tempdir().unwrap();
    let mut manifest = String::from(
        "file\tkind\tbytes\tsource\tlicense\tintent\tmust_keep\tnotes\tsha256\tsplit\n",
    );
    let mut holdout_must_keep = 0;
    for (src, dst, split, labelled) in [
        ("json_02.json", "devrow_a.json", "dev", true),
        ("kubectl_02.txt", "secret_hold.txt", "holdout", true),
        ("kubectl_06.txt", "unlabelled_x.txt", "dev", false),
    ] {
        std::fs::copy(shared.join(src), dev.path().join(dst)).unwrap();
        let mut f: Vec<String> = line_of(src).split('\t').map(str::to_string).collect();
        f.resize(9, String::new());
        f[0] = dst.into();
        if !labelled {
            f[5].clear();
            f[6].clear();
        }
        if split == "holdout" {
            holdout_must_keep = f[6].split(" || ").count();
        }
        f.push(split.into());
        manifest.push_str(&f.join("\t"));
        manifest.push('\n');
    }
    std::fs::write(dev.path().join("MANIFEST.tsv"), manifest).unwrap();

    let out = tempfile::tempdir().unwrap();
    let rep = run(BenchOptions {
        corpus: shared,
        corpus_name: Some("shared".into()),
        more_corpora: vec![NamedCorpus {
            name: "dev".into(),
            dir: dev.path().to_path_buf(),
        }],
        model: Some("tiny".into()),
        toolsum_bin: Some(util::bin()),
        out_dir: out.path().to_path_buf(),
        files: [
            "kubectl_06.txt",
            "devrow_a.json",
            "secret_hold.txt",
            "unlabelled_x.txt",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        quiet: true,
        ..BenchOptions::default()
    })
    .expect("bench run");

    assert_eq!(
        rep.notes,
        ["dev: skipped 1 unlabelled file(s) (no must_keep yet)"]
    );
    let names: Vec<&str> = rep.sets.iter().map(|s| s.set.as_str()).collect();
    assert_eq!(names, ["shared", "dev", "dev-holdout"]);
    assert!(rep.sets[2].holdout && !rep.sets[1].holdout);
    for s in &rep.sets {
        assert_eq!(s.files, 1, "{}", s.set);
        let systems: Vec<&str> = s.totals.iter().map(|t| t.system.as_str()).collect();
        assert_eq!(systems, ["toolsum", "head", "head+tail"], "{}", s.set);
    }
    // The holdout file was run and scored, but only its totals are reported.
    let hold = &rep.sets[2].totals[0];
    assert_eq!(hold.must_keep, holdout_must_keep);
    assert_eq!(hold.errors, 0);
    assert_eq!(rep.holdout_files, 1);
    assert_eq!(rep.rows.len(), 6, "2 visible files x 3 systems");
    assert!(rep.rows.iter().all(|r| r.file != "secret_hold.txt"));
    for f in ["bench.md", "bench.json"] {
        let body = std::fs::read_to_string(out.path().join(f)).unwrap();
        assert!(!body.contains("secret_hold"), "{f} names the holdout file");
    }
    let lines: Vec<&str> = rep.totals_line.lines().collect();
    assert_eq!(lines.len(), 3, "{}", rep.totals_line);
    for (l, set) in lines.iter().zip(["shared", "dev", "dev-holdout"]) {
        assert!(
            l.starts_with(&format!("[{set}] toolsum: recall=")) && l.contains("; head+tail: "),
            "{l}"
        );
    }
    assert!(rep
        .markdown
        .contains("| dev-holdout (holdout) | 1 | toolsum |"));
}

/// The dev corpus tool's own tests (tiny in-memory archives, no network) and the committed
/// SOURCES.tsv / LABELS.tsv / README checks.
#[test]
fn devcorpus_tool_selftest_passes() {
    let out = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/devcorpus.py"))
        .arg("selftest")
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "devcorpus.py selftest failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
