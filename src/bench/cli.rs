//! Command-line arguments of `toolsum bench` and its entry point, so the binary only adds one
//! enum variant and one match arm.

use std::path::PathBuf;

use super::sets::NamedCorpus;
use super::{run, BenchOptions, BenchReport, DEFAULT_START_TIMEOUT_MS, NAIVE_CONTEXT};

/// `toolsum bench [--corpus [NAME=]DIR]... [--model M] [--out DIR] [--files a,b] [--limit N] [--naive N]
/// [--deadline-ms N]`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Corpus directory holding MANIFEST.tsv and its files, as `DIR` or `NAME=DIR` (NAME: the
    /// set its totals are reported under; default the directory's name). Repeat it to run
    /// several corpora in one daemon session, each with its own totals (a manifest with a
    /// `split` column gives one set per split: `dev`, `dev-holdout`).
    #[arg(
        long = "corpus",
        value_name = "[NAME=]DIR",
        default_value = "tests/corpus"
    )]
    pub corpus: Vec<String>,
    /// Model: a .gguf path, a tier (tiny, small, large) or org/repo:file.gguf.
    #[arg(long, env = "TOOLSUM_MODEL")]
    pub model: Option<String>,
    /// Output directory for bench.md, bench.json, bench.png and daemon.log.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// Only these manifest files (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    pub files: Vec<String>,
    /// At most this many files.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Also run the naive baseline (whole output, plain prompt) on the first N files; slow.
    #[arg(long, default_value_t = 0)]
    pub naive: usize,
    /// KV cache of the naive baseline (tokens).
    #[arg(long, default_value_t = NAIVE_CONTEXT)]
    pub naive_context: usize,
    /// Deadline of each guard request (ms), sent as deadline_ms.
    #[arg(long)]
    pub deadline_ms: Option<u64>,
    /// Token limit of each guard request (results at or under it pass through).
    #[arg(long)]
    pub token_limit: Option<usize>,
    /// Time the model may spend on each summary (ms), sent as model_ms.
    #[arg(long)]
    pub model_ms: Option<u64>,
    /// Model compute threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// The toolsum binary to serve with (default: this one).
    #[arg(long)]
    pub toolsum_bin: Option<PathBuf>,
    /// Longest wait for the daemon to load the model (ms).
    #[arg(long, default_value_t = DEFAULT_START_TIMEOUT_MS)]
    pub start_timeout_ms: u64,
    /// Do not draw bench.png.
    #[arg(long)]
    pub no_chart: bool,
}

impl From<BenchArgs> for BenchOptions {
    fn from(a: BenchArgs) -> Self {
        let mut corpora = a.corpus.iter().map(|c| NamedCorpus::parse(c));
        let first = corpora
            .next()
            .unwrap_or_else(|| NamedCorpus::unnamed(std::path::Path::new("tests/corpus")));
        BenchOptions {
            corpus: first.dir,
            corpus_name: Some(first.name),
            more_corpora: corpora.collect(),
            model: a.model,
            toolsum_bin: a.toolsum_bin,
            out_dir: a.out,
            files: a.files,
            limit: a.limit,
            naive: a.naive,
            naive_context: a.naive_context,
            deadline_ms: a.deadline_ms,
            token_limit: a.token_limit,
            model_ms: a.model_ms,
            threads: a.threads,
            start_timeout_ms: a.start_timeout_ms,
            chart: !a.no_chart,
            quiet: false,
        }
    }
}

/// Runs `toolsum bench`: the table goes to stdout, the totals line last.
///
/// # Errors
/// As [`run`].
pub fn bench_cmd(a: BenchArgs) -> anyhow::Result<BenchReport> {
    run(a.into())
}
