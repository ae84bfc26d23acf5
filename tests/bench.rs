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
