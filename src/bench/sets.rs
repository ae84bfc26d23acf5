//! Named corpora and the sets their totals are reported under.
//!
//! One bench run may take several corpora (`--corpus shared=tests/corpus --corpus dev=DIR`).
//! Each file belongs to a *set*: its corpus's name, or `<name>-<split>` for a split other than
//! `dev` (so the dev corpus gives `dev` and `dev-holdout`). Every set gets its own totals per
//! system, side by side with the baselines run on the same files in the same run.
//!
//! Holdout files ([`super::manifest::HOLDOUT`]) count only in totals: their per-file rows are neither
//! printed nor written (not in bench.md, bench.json or the chart). Anything written per file is
//! something that can be opened while tuning; the totals say whether a change generalizes, and
//! that is all the holdout is for.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::manifest::ManifestRow;
use super::report::Totals;
use super::{DaemonStats, Row};

/// A corpus directory and the name its files are reported under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedCorpus {
    /// Set name (`shared`, `dev`, ...).
    pub name: String,
    /// Directory holding `MANIFEST.tsv` and its files.
    pub dir: PathBuf,
}

impl NamedCorpus {
    /// Parses `NAME=DIR` (NAME: letters, digits, `_`, `-`) or a bare `DIR`, named after its last
    /// path component.
    pub fn parse(spec: &str) -> NamedCorpus {
        if let Some((name, dir)) = spec.split_once('=') {
            let plain = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if plain && !Path::new(spec).exists() {
                return NamedCorpus {
                    name: name.into(),
                    dir: dir.into(),
                };
            }
        }
        NamedCorpus::unnamed(Path::new(spec))
    }

    /// A corpus named after the directory's last component (`corpus` for `tests/corpus`).
    pub fn unnamed(dir: &Path) -> NamedCorpus {
        let name = dir
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty() && s != "." && s != "..")
            .unwrap_or_else(|| "corpus".into());
        NamedCorpus {
            name,
            dir: dir.into(),
        }
    }
}

/// The set a row of corpus `name` is reported under: `name` for no split or `dev`, else
/// `name-split`.
pub fn set_name(name: &str, row: &ManifestRow) -> String {
    if row.split.is_empty() || row.split == "dev" {
        name.to_string()
    } else {
        format!("{name}-{}", row.split)
    }
}

/// Totals of one set, per system.
#[derive(Debug, Clone, Serialize)]
pub struct SetTotals {
    /// Set name.
    pub set: String,
    /// True for a holdout set: only these totals are reported for its files.
    pub holdout: bool,
    /// Files in the set.
    pub files: usize,
    /// One entry per system that ran on files of the set, in [`super::SYSTEMS`] order.
    pub totals: Vec<Totals>,
}

/// Per-set totals of `rows` (any order, all systems; each with its set in `Row::set`), sets in
/// `order` ((name, holdout), from [`set_order`]), systems in [`super::SYSTEMS`] order.
pub fn totals_by_set(
    rows: &[Row],
    order: &[(String, bool)],
    daemon: &DaemonStats,
) -> Vec<SetTotals> {
    order
        .iter()
        .map(|(set, holdout)| {
            let of_set: Vec<&Row> = rows.iter().filter(|r| &r.set == set).collect();
            let totals = super::SYSTEMS
                .iter()
                .filter_map(|sys| {
                    let rs: Vec<Row> = of_set
                        .iter()
                        .filter(|r| r.system == *sys)
                        .map(|r| (*r).clone())
                        .collect();
                    (!rs.is_empty()).then(|| Totals::of(sys, &rs, daemon))
                })
                .collect::<Vec<_>>();
            SetTotals {
                set: set.clone(),
                holdout: *holdout,
                files: totals.iter().map(|t| t.files).max().unwrap_or(0),
                totals,
            }
        })
        .collect()
}

/// True when the report needs per-set totals: more than one corpus or set, or a holdout set.
pub fn reported_by_set(corpora: usize, sets: &[SetTotals]) -> bool {
    corpora > 1 || sets.len() > 1 || sets.iter().any(|s| s.holdout)
}

/// One line per set: `[set] system: recall=R invented=N p50_s=S p95_s=S out_tok=T
/// max_out_tok=M; system: ...`.
pub fn totals_lines(sets: &[SetTotals]) -> String {
    sets.iter()
        .map(|s| {
            let groups = s
                .totals
                .iter()
                .map(|t| {
                    format!(
                        "{}: recall={:.2} invented={} p50_s={:.2} p95_s={:.2} out_tok={} max_out_tok={}",
                        t.system,
                        t.recall,
                        t.invented,
                        t.p50_ms / 1e3,
                        t.p95_ms / 1e3,
                        t.output_tokens,
                        t.output_tokens_max
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            format!("[{}] {groups}", s.set)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The markdown table of totals by set: one row per set and system.
pub fn markdown(sets: &[SetTotals]) -> String {
    let mut s = String::from(
        "## Totals by set\n\n\
         Holdout sets are reported only here (no per-file rows anywhere).\n\n\
         | set | files | system | recall | recall (file mean) | invented | p50 s | p95 s | out tok | max out tok | out/in | errors | results |\n\
         |---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for set in sets {
        for t in &set.totals {
            s.push_str(&format!(
                "| {}{} | {} | {} | **{:.2}** ({}/{}) | {:.2} | {} | {:.2} | {:.2} | {} | {} | {:.3} | {} | {} |\n",
                set.set,
                if set.holdout { " (holdout)" } else { "" },
                t.files,
                t.system,
                t.recall,
                t.kept,
                t.must_keep,
                t.recall_mean,
                t.invented,
                t.p50_ms / 1e3,
                t.p95_ms / 1e3,
                t.output_tokens,
                t.output_tokens_max,
                t.ratio,
                t.errors,
                t.results
                    .iter()
                    .map(|(k, v)| format!("{k}×{v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
    }
    s
}

/// A selected manifest row with the index of its corpus.
pub type Selected = (usize, ManifestRow);

/// Which of `corpora` (one manifest per corpus) a run takes: labelled rows only, the named
/// `files` (each must be in some manifest), at most `limit`. Returns the rows with their corpus
/// index, and one note per corpus that had unlabelled rows among those named (they are skipped).
///
/// # Errors
/// A name in `files` that no manifest holds; nothing left to run.
pub fn select(
    corpora: &[NamedCorpus],
    manifests: Vec<Vec<ManifestRow>>,
    files: &[String],
    limit: Option<usize>,
) -> anyhow::Result<(Vec<Selected>, Vec<String>)> {
    for f in files {
        if !manifests.iter().flatten().any(|r| &r.file == f) {
            anyhow::bail!("--files: {f:?} is not in the manifest");
        }
    }
    let mut unlabelled = vec![0usize; manifests.len()];
    let mut sel = Vec::new();
    for (ci, rows) in manifests.into_iter().enumerate() {
        for r in rows {
            if !(files.is_empty() || files.contains(&r.file)) {
                continue;
            }
            if r.is_labelled() {
                sel.push((ci, r));
            } else {
                unlabelled[ci] += 1;
            }
        }
    }
    if let Some(n) = limit {
        sel.truncate(n);
    }
    let notes: Vec<String> = unlabelled
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(ci, n)| {
            let name = corpora.get(ci).map_or("?", |c| c.name.as_str());
            format!("{name}: skipped {n} unlabelled file(s) (no must_keep yet)")
        })
        .collect();
    if sel.is_empty() {
        anyhow::bail!("no files selected ({})", notes.join("; "));
    }
    Ok((sel, notes))
}

/// The order sets are reported in: corpus by corpus, each corpus's non-holdout sets before its
/// holdout sets, first appearance within those. Input: (corpus index, set name, holdout) per file.
pub fn set_order(files: &[(usize, String, bool)]) -> Vec<(String, bool)> {
    let mut v: Vec<(usize, bool, usize, String)> = Vec::new();
    for (i, (ci, set, hold)) in files.iter().enumerate() {
        if !v.iter().any(|x| &x.3 == set) {
            v.push((*ci, *hold, i, set.clone()));
        }
    }
    v.sort();
    v.into_iter().map(|(_, h, _, s)| (s, h)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mrow(file: &str, split: &str, labelled: bool) -> ManifestRow {
        ManifestRow {
            file: file.into(),
            kind: "log".into(),
            bytes: 1,
            intent: "i".into(),
            must_keep: if labelled { vec!["x".into()] } else { vec![] },
            must_keep_as_written: if labelled { vec!["x".into()] } else { vec![] },
            sha256: String::new(),
            split: split.into(),
        }
    }

    fn row(set: &str, system: &str, kept: usize, out: usize) -> Row {
        Row {
            file: "f".into(),
            set: set.into(),
            kind: "log".into(),
            system: system.into(),
            input_bytes: 100,
            input_tokens: 50,
            result: "cut".into(),
            reason: None,
            error: None,
            must_keep: 2,
            kept,
            recall: kept as f64 / 2.0,
            missing: vec![],
            invented: vec![],
            output_tokens: out,
            ratio: out as f64 / 50.0,
            wall_ms: 1.0,
            timings_ms: Default::default(),
            prefill_tok_s: None,
            decode_tok_s: None,
            text: String::new(),
        }
    }

    #[test]
    fn names_parse_and_default_to_the_dir() {
        assert_eq!(
            NamedCorpus::parse("dev=/x/y"),
            NamedCorpus {
                name: "dev".into(),
                dir: "/x/y".into()
            }
        );
        assert_eq!(NamedCorpus::parse("tests/corpus").name, "corpus");
        assert_eq!(NamedCorpus::parse("/a/b=c/d").name, "d"); // "/a/b" is not a plain name
        assert_eq!(
            NamedCorpus::parse("/a/b=c/d").dir,
            PathBuf::from("/a/b=c/d")
        );
    }

    #[test]
    fn set_names_follow_the_split() {
        assert_eq!(set_name("shared", &mrow("a", "", true)), "shared");
        assert_eq!(set_name("dev", &mrow("a", "dev", true)), "dev");
        assert_eq!(set_name("dev", &mrow("a", "holdout", true)), "dev-holdout");
    }

    #[test]
    fn select_skips_unlabelled_and_checks_names() {
        let corpora = [NamedCorpus::parse("a=/x"), NamedCorpus::parse("b=/y")];
        let m = || {
            vec![
                vec![mrow("a", "dev", true), mrow("b", "dev", false)],
                vec![mrow("c", "holdout", true)],
            ]
        };
        let (sel, notes) = select(&corpora, m(), &[], None).unwrap();
        assert_eq!(
            sel.iter()
                .map(|(ci, r)| (*ci, r.file.as_str()))
                .collect::<Vec<_>>(),
            [(0, "a"), (1, "c")]
        );
        assert_eq!(
            notes,
            ["a: skipped 1 unlabelled file(s) (no must_keep yet)"]
        );
        assert!(select(&corpora, m(), &["zz".into()], None).is_err());
        let e = select(&corpora, m(), &["b".into()], None).unwrap_err();
        assert!(e.to_string().contains("skipped 1 unlabelled"), "{e}");
        let (sel, notes) = select(&corpora, m(), &["c".into()], Some(5)).unwrap();
        assert_eq!(sel.len(), 1);
        assert!(notes.is_empty());
    }

    #[test]
    fn sets_are_ordered_by_corpus_then_holdout_last() {
        let files = [
            (1, "dev-holdout".to_string(), true),
            (1, "dev".to_string(), false),
            (0, "shared".to_string(), false),
            (1, "dev".to_string(), false),
        ];
        assert_eq!(
            set_order(&files),
            [
                ("shared".to_string(), false),
                ("dev".to_string(), false),
                ("dev-holdout".to_string(), true)
            ]
        );
    }

    #[test]
    fn totals_are_per_set_and_system() {
        let d = DaemonStats::default();
        let rows = vec![
            row("shared", "toolsum", 2, 10),
            row("shared", "head+tail", 1, 30),
            row("dev-holdout", "toolsum", 0, 7),
            row("dev-holdout", "toolsum", 2, 9),
            row("dev-holdout", "head+tail", 1, 30),
            row("dev-holdout", "head+tail", 1, 30),
        ];
        let order = [
            ("shared".to_string(), false),
            ("dev-holdout".to_string(), true),
        ];
        let sets = totals_by_set(&rows, &order, &d);
        assert_eq!(sets.len(), 2);
        assert_eq!(sets[0].set, "shared");
        assert!(!sets[0].holdout && sets[1].holdout);
        assert_eq!(sets[1].files, 2);
        let t = &sets[1].totals[0];
        assert_eq!((t.system.as_str(), t.kept, t.must_keep), ("toolsum", 2, 4));
        assert_eq!((t.output_tokens, t.output_tokens_max), (16, 9));
        assert_eq!(sets[1].totals[1].system, "head+tail");
        assert!(reported_by_set(1, &sets));
        assert!(!reported_by_set(1, &sets[..1]) && reported_by_set(2, &sets[..1]));
        let lines = totals_lines(&sets);
        assert_eq!(lines.lines().count(), 2);
        assert!(lines.starts_with(
            "[shared] toolsum: recall=1.00 invented=0 p50_s=0.00 p95_s=0.00 out_tok=10 max_out_tok=10; head+tail: recall=0.50"
        ));
        assert!(lines.contains("\n[dev-holdout] toolsum: recall=0.50"));
        let md = markdown(&sets);
        assert!(md.contains("| dev-holdout (holdout) | 2 | toolsum | **0.50** (2/4) |"));
    }
}
