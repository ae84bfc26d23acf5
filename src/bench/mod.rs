//! The benchmark harness (`toolsum bench`): runs every file of a corpus manifest through toolsum
//! (the real daemon, reached with the crate's client, as an agent's hook calls it) and through
//! the baselines, scores what each returns, and writes a table, JSON and a chart.
//!
//! - [`manifest`]: the corpus manifest (`MANIFEST.tsv`).
//! - [`score`]: recall of `must_keep` strings, invented facts, percentiles.
//! - [`daemon`]: the `toolsum serve` child process.
//! - [`systems`]: the baselines: head, head+tail, naive model summary.
//! - [`report`]: totals, the markdown table, the totals line, the PNG chart.
//! - [`sets`]: several corpora in one run, totals per set (`shared`, `dev`, `dev-holdout`), and
//!   the holdout rule (totals only).
//! - [`cli`]: clap arguments of `toolsum bench`.
//!
//! Systems: `toolsum` (the full guard pipeline through the daemon), `head` (first 2,000
//! characters + pointer), `head+tail` (2,000 + 2,000 characters + pointer) and, for the first
//! `naive` files, `naive` (the same model in process, a plain prompt, the whole output cut only
//! at the context).

pub mod cli;
pub mod daemon;
pub mod manifest;
pub mod report;
pub mod score;
pub mod sets;
pub mod systems;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;
use serde_json::json;

use crate::backend::TokenCounter;
use crate::daemon::client::{put_content, Client};
use crate::guard::Timings;
use crate::tokenizer::GgufTokenizer;
use manifest::ManifestRow;
use sets::NamedCorpus;

/// Characters of head (and of tail) of the cut baselines; the 2,000 that agent CLIs keep.
pub const BASELINE_CHARS: usize = 2_000;
/// KV cache of the naive baseline (tokens): Qwen2.5's 32,768 context (capped by the model's).
pub const NAIVE_CONTEXT: usize = 32_768;
/// Tokens the naive baseline may write: the guard's default `max_new_tokens`.
pub const NAIVE_MAX_NEW_TOKENS: usize = 256;
/// How long the daemon may take to load the model and answer `status` (ms).
pub const DEFAULT_START_TIMEOUT_MS: u64 = 300_000;
/// How long one guard request may take when no deadline is given (ms): far above the daemon's
/// own 60 s default deadline, so only a hung daemon hits it.
const REQUEST_TIMEOUT_MS: u64 = 900_000;
/// Extra wait (ms) for an answer past a given `deadline_ms` (the daemon answers `deadline`
/// 5 s past it).
const REQUEST_SLACK_MS: u64 = 30_000;

/// Names of the systems, in report order.
pub const SYSTEMS: [&str; 4] = ["toolsum", "head", "head+tail", "naive"];

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Directory holding `MANIFEST.tsv` and the files it names.
    pub corpus: PathBuf,
    /// The set name of `corpus`'s files; `None` = its directory's last component.
    pub corpus_name: Option<String>,
    /// Further corpora run in the same daemon session, after `corpus`; each gets its own totals.
    pub more_corpora: Vec<NamedCorpus>,
    /// Model spec (tier, path or repo:file), for the daemon, the tokenizer and naive.
    pub model: Option<String>,
    /// The `toolsum` binary that serves; `None` = this executable (right for `toolsum bench`;
    /// tests pass `CARGO_BIN_EXE_toolsum`).
    pub toolsum_bin: Option<PathBuf>,
    /// Where `bench.md`, `bench.json`, `bench.png` and `daemon.log` go.
    pub out_dir: PathBuf,
    /// Only these files (manifest `file` names); empty = all.
    pub files: Vec<String>,
    /// At most this many files (after `files`).
    pub limit: Option<usize>,
    /// Run the naive baseline on the first this many files (0 = off).
    pub naive: usize,
    /// KV cache of the naive baseline (tokens).
    pub naive_context: usize,
    /// Sent as each request's `deadline_ms`; `None` = the daemon's default.
    pub deadline_ms: Option<u64>,
    /// Sent as each request's `token_limit`; `None` = the daemon's default (15,000).
    pub token_limit: Option<usize>,
    /// Sent as each request's `model_ms` (time the model may spend); `None` = the daemon's
    /// default.
    pub model_ms: Option<u64>,
    /// Model compute threads (daemon and naive); `None` = all cores.
    pub threads: Option<usize>,
    /// Longest wait for the daemon to load and answer (ms).
    pub start_timeout_ms: u64,
    /// Draw `bench.png`.
    pub chart: bool,
    /// Print nothing (no table, no progress); the report is still returned and written.
    pub quiet: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            corpus: PathBuf::from("tests/corpus"),
            corpus_name: None,
            more_corpora: Vec::new(),
            model: None,
            toolsum_bin: None,
            out_dir: PathBuf::from("bench-out"),
            files: Vec::new(),
            limit: None,
            naive: 0,
            naive_context: NAIVE_CONTEXT,
            deadline_ms: None,
            token_limit: None,
            model_ms: None,
            threads: None,
            start_timeout_ms: DEFAULT_START_TIMEOUT_MS,
            chart: true,
            quiet: false,
        }
    }
}

/// The machine the times were measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// CPU model (`model name` of /proc/cpuinfo, else the architecture).
    pub cpu: String,
    /// Cores available to this process.
    pub cores: usize,
}

impl Machine {
    /// Reads the CPU model and the available cores.
    pub fn detect() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// `"<cpu>, <n> cores"`.
    pub fn label(&self) -> String {
        format!("{}, {} cores", self.cpu, self.cores)
    }
}

/// One file through one system.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Manifest file name.
    pub file: String,
    /// The set the file is reported under ([`sets::set_name`]).
    pub set: String,
    /// Manifest kind.
    pub kind: String,
    /// System name (one of [`SYSTEMS`]).
    pub system: String,
    /// Input size (bytes).
    pub input_bytes: usize,
    /// Input size (tokens, real tokenizer).
    pub input_tokens: usize,
    /// What came back: toolsum's `kind` (`passthrough`, `summary`, `preview`, `binary`), `cut`
    /// for the cut baselines, `whole` when the input was short enough to return whole, `naive`,
    /// or `error`.
    pub result: String,
    /// toolsum's `reason` (why the model was not used), or the naive note (input cut).
    pub reason: Option<String>,
    /// The error, when the system failed on this file (then the text is empty).
    pub error: Option<String>,
    /// Number of `must_keep` strings.
    pub must_keep: usize,
    /// Number of them found in the returned text.
    pub kept: usize,
    /// `kept / must_keep` (1 when there are none).
    pub recall: f64,
    /// The `must_keep` strings not found.
    pub missing: Vec<String>,
    /// Facts quoted in the returned text that occur nowhere in the input.
    pub invented: Vec<String>,
    /// Returned size (tokens, real tokenizer).
    pub output_tokens: usize,
    /// `output_tokens / input_tokens`.
    pub ratio: f64,
    /// Wall time of the call (ms), measured by the caller.
    pub wall_ms: f64,
    /// The response's own timings (ms); zero for the cut baselines.
    pub timings_ms: Timings,
    /// Prefill speed of this call (tokens/s), where known (naive).
    pub prefill_tok_s: Option<f64>,
    /// Decode speed of this call (tokens/s), where known (naive).
    pub decode_tok_s: Option<f64>,
    /// The returned text.
    pub text: String,
}

/// Daemon figures read at the end of the toolsum run.
#[derive(Debug, Clone, Serialize, Default)]
pub struct DaemonStats {
    /// Peak resident set size of the daemon (`VmHWM`, bytes).
    pub peak_rss_bytes: Option<u64>,
    /// The engine's measured prefill speed (tokens/s, moving average over the run).
    pub prefill_tok_s: Option<f64>,
    /// The engine's measured decode speed (tokens/s, moving average over the run).
    pub decode_tok_s: Option<f64>,
    /// Model compute threads.
    pub threads: Option<u64>,
    /// Model load time, including the system-prompt warm-up (ms).
    pub load_ms: Option<f64>,
    /// Time from spawning the daemon to its first `status` answer (ms).
    pub ready_ms: f64,
    /// The daemon's `status` answer at the end of the run.
    pub status: serde_json::Value,
}

/// Everything one benchmark run measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Where the times were measured.
    pub machine: Machine,
    /// The model's name.
    pub model: String,
    /// The model file.
    pub model_path: PathBuf,
    /// The (first) corpus directory.
    pub corpus: PathBuf,
    /// Every corpus run, with its set name.
    pub corpora: Vec<NamedCorpus>,
    /// Files run per corpus (labelled ones; holdout included).
    pub corpus_files: Vec<usize>,
    /// Files of holdout sets: in the totals only.
    pub holdout_files: usize,
    /// Notes on what was not run (unlabelled rows skipped).
    pub notes: Vec<String>,
    /// The `deadline_ms` sent with each request, if any.
    pub deadline_ms: Option<u64>,
    /// The `token_limit` sent with each request, if any.
    pub token_limit: Option<usize>,
    /// The `model_ms` sent with each request, if any.
    pub model_ms: Option<u64>,
    /// One row per file and system, files in manifest order, systems in [`SYSTEMS`] order;
    /// holdout files have none ([`sets`]).
    pub rows: Vec<Row>,
    /// Totals per system over every file run (holdout included), in [`SYSTEMS`] order (systems
    /// that ran).
    pub totals: Vec<report::Totals>,
    /// Totals per set and system.
    pub sets: Vec<sets::SetTotals>,
    /// Daemon figures.
    pub daemon: DaemonStats,
    /// The markdown table (also in `bench.md`).
    pub markdown: String,
    /// The totals line, printed last: [`report::totals_line`] for one set without holdout,
    /// else one [`sets::totals_lines`] line per set.
    pub totals_line: String,
    /// Files written under the out dir.
    pub written: Vec<PathBuf>,
}

struct Input {
    row: ManifestRow,
    corpus: usize,
    set: String,
    bytes: Vec<u8>,
    text: String,
    tokens: usize,
    collapsed: String,
}

/// Scores a returned text into a [`Row`].
#[allow(clippy::too_many_arguments)]
fn score_row(
    input: &Input,
    system: &str,
    result: String,
    text: String,
    wall_ms: f64,
    timings_ms: Timings,
    reason: Option<String>,
    error: Option<String>,
    counter: &dyn TokenCounter,
) -> Row {
    let (kept, missing) = score::recall(&text, &input.row.must_keep);
    let sizes = [
        input.bytes.len() as u64,
        input.text.lines().count() as u64,
        input.text.split('\n').count() as u64,
        input.text.chars().count() as u64,
    ];
    let invented = score::invented(&text, &input.collapsed, &sizes);
    let output_tokens = counter.count(&text);
    let must = input.row.must_keep.len();
    Row {
        file: input.row.file.clone(),
        set: input.set.clone(),
        kind: input.row.kind.clone(),
        system: system.into(),
        input_bytes: input.bytes.len(),
        input_tokens: input.tokens,
        result,
        reason,
        error,
        must_keep: must,
        kept,
        recall: if must == 0 {
            1.0
        } else {
            kept as f64 / must as f64
        },
        missing,
        invented,
        output_tokens,
        ratio: output_tokens as f64 / input.tokens.max(1) as f64,
        wall_ms,
        timings_ms,
        prefill_tok_s: None,
        decode_tok_s: None,
        text,
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Runs the benchmark and writes `bench.md`, `bench.json`, `bench.png` (unless `chart` is off)
/// and `daemon.log` under `out_dir`. Unless `quiet`, prints progress to stderr and the table to
/// stdout, the totals line last.
///
/// # Errors
/// An unreadable manifest or corpus file (or a checksum mismatch), an unknown `--files` name, a
/// model that does not resolve, a daemon that does not start, an unwritable out dir. A single
/// request that fails is not an error: its row says `error`.
pub fn run(opts: BenchOptions) -> anyhow::Result<BenchReport> {
    let say = |s: String| {
        if !opts.quiet {
            eprintln!("{s}");
        }
    };
    let mut corpora = vec![NamedCorpus {
        name: opts
            .corpus_name
            .clone()
            .unwrap_or_else(|| NamedCorpus::unnamed(&opts.corpus).name),
        dir: opts.corpus.clone(),
    }];
    corpora.extend(opts.more_corpora.iter().cloned());
    let mut manifests = Vec::new();
    for c in &corpora {
        manifests.push(manifest::load(&c.dir)?);
    }
    let (rows, notes) = sets::select(&corpora, manifests, &opts.files, opts.limit)?;
    for n in &notes {
        say(format!("bench: {n}"));
    }
    std::fs::create_dir_all(&opts.out_dir)
        .with_context(|| format!("creating {}", opts.out_dir.display()))?;
    let out_dir = opts.out_dir.canonicalize()?;
    let model_path = crate::models::resolve(opts.model.as_deref())?;
    let tokenizer = GgufTokenizer::from_gguf_path(&model_path)
        .with_context(|| format!("tokenizer of {}", model_path.display()))?;
    let machine = Machine::detect();

    let mut inputs = Vec::new();
    let mut corpus_files = vec![0usize; corpora.len()];
    for (ci, mut row) in rows {
        corpus_files[ci] += 1;
        let set = sets::set_name(&corpora[ci].name, &row);
        let bytes = manifest::read_checked(&corpora[ci].dir, &row)?;
        // The input's text as toolsum reads it (a UTF-16 or GBK file decoded), so that a
        // decoded passthrough is checked against what the output says, not its raw bytes.
        let text = crate::guard::decode::decode(&bytes)
            .map(|d| d.into_text())
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
        let tokens = tokenizer.count(&text);
        let collapsed = score::collapse(&text);
        row.resolve_tabs(&collapsed);
        inputs.push(Input {
            row,
            corpus: ci,
            set,
            bytes,
            text,
            tokens,
            collapsed,
        });
    }
    say(format!(
        "bench: {} files, model {}, machine {}",
        inputs.len(),
        model_path.display(),
        machine.label()
    ));

    let holdout_files = inputs.iter().filter(|i| i.row.is_holdout()).count();
    if holdout_files > 0 {
        say(format!(
            "bench: {holdout_files} holdout file(s): reported through totals only"
        ));
    }
    // One slot per input and system (file names may repeat across corpora).
    let mut by_system: Vec<Vec<Option<Row>>> = vec![vec![None; inputs.len()]; SYSTEMS.len()];

    // The cut baselines (no model).
    for (i, inp) in inputs.iter().enumerate() {
        let p = systems::pointer(&inp.row.file, inp.bytes.len() as u64);
        let t = Instant::now();
        let text = systems::head(&inp.text, BASELINE_CHARS, &p);
        let wall = ms(t);
        let result = if text.len() == inp.text.len() {
            "whole"
        } else {
            "cut"
        };
        by_system[1][i] = Some(score_row(
            inp,
            "head",
            result.into(),
            text,
            wall,
            Timings::default(),
            None,
            None,
            &tokenizer,
        ));
        let t = Instant::now();
        let text = systems::head_tail(&inp.text, BASELINE_CHARS, &p);
        let wall = ms(t);
        let result = if text.len() == inp.text.len() {
            "whole"
        } else {
            "cut"
        };
        by_system[2][i] = Some(score_row(
            inp,
            "head+tail",
            result.into(),
            text,
            wall,
            Timings::default(),
            None,
            None,
            &tokenizer,
        ));
    }

    // toolsum, through the daemon.
    let bin = match &opts.toolsum_bin {
        Some(b) => b.clone(),
        None => std::env::current_exe().context("locating the toolsum binary")?,
    };
    let log = out_dir.join("daemon.log");
    let _ = std::fs::remove_file(&log);
    say(format!(
        "bench: starting {} serve (log: {})",
        bin.display(),
        log.display()
    ));
    let t_start = Instant::now();
    let d = daemon::DaemonProcess::start(
        &bin,
        opts.model.as_deref(),
        opts.threads,
        &log,
        Duration::from_millis(opts.start_timeout_ms),
    )?;
    let mut stats = DaemonStats {
        ready_ms: ms(t_start),
        ..DaemonStats::default()
    };
    let session = tempfile::Builder::new()
        .prefix("toolsum-bench-session-")
        .tempdir()
        .context("creating the session dir")?;
    let timeout = Duration::from_millis(
        opts.deadline_ms
            .map_or(REQUEST_TIMEOUT_MS, |d| d + REQUEST_SLACK_MS),
    );
    let mut client: Option<Client> = None;
    for (i, inp) in inputs.iter().enumerate() {
        let mut req = json!({
            "tool": manifest::tool_for_kind(&inp.row.kind),
            "session_dir": session.path(),
            "intent": inp.row.intent,
        });
        if let Some(dl) = opts.deadline_ms {
            req["deadline_ms"] = json!(dl);
        }
        if let Some(tl) = opts.token_limit {
            req["token_limit"] = json!(tl);
        }
        if let Some(m) = opts.model_ms {
            req["model_ms"] = json!(m);
        }
        put_content(&mut req, &inp.bytes);
        let t = Instant::now();
        let resp = (|| -> anyhow::Result<crate::guard::GuardResponse> {
            if client.is_none() {
                client = Some(d.connect()?);
            }
            let c = client.as_mut().expect("connected above");
            c.set_timeout(Some(timeout))?;
            Ok(c.guard(&req)?)
        })();
        let wall = ms(t);
        let row = match resp {
            Ok(r) => score_row(
                inp,
                "toolsum",
                serde_json::to_value(r.kind)?
                    .as_str()
                    .unwrap_or("?")
                    .to_string(),
                r.text,
                wall,
                r.timings_ms,
                r.reason,
                None,
                &tokenizer,
            ),
            Err(e) => {
                client = None;
                score_row(
                    inp,
                    "toolsum",
                    "error".into(),
                    String::new(),
                    wall,
                    Timings::default(),
                    None,
                    Some(format!("{e:#}")),
                    &tokenizer,
                )
            }
        };
        if inp.row.is_holdout() {
            say(format!("[{}/{}] (holdout file)", i + 1, inputs.len()));
        } else {
            say(format!(
                "[{}/{}] {} toolsum {}: recall {:.2} invented {} {:.1} s",
                i + 1,
                inputs.len(),
                inp.row.file,
                row.result,
                row.recall,
                row.invented.len(),
                row.wall_ms / 1e3
            ));
        }
        by_system[0][i] = Some(row);
    }
    if let Ok(mut c) = d.connect() {
        if let Ok(st) = c.status() {
            let e = &st["engine"];
            stats.prefill_tok_s = e["prefill_tok_per_s"].as_f64();
            stats.decode_tok_s = e["decode_tok_per_s"].as_f64();
            stats.threads = e["threads"].as_u64();
            stats.load_ms = e["load_ms"].as_f64();
            stats.status = st;
        }
    }
    stats.peak_rss_bytes = d.peak_rss_bytes();
    d.stop(Duration::from_secs(30))?;
    let model_name = stats.status["model"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| {
            model_path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });

    // naive, in process, after the daemon is gone (so the two models never share the cores).
    if opts.naive > 0 {
        say(format!(
            "bench: naive baseline on {} file(s), context {}",
            opts.naive.min(inputs.len()),
            opts.naive_context
        ));
        let mut naive = systems::Naive::load(&model_path, opts.threads, opts.naive_context)?;
        for (i, inp) in inputs.iter().enumerate().take(opts.naive) {
            let t = Instant::now();
            let res = naive.summarize(
                manifest::tool_for_kind(&inp.row.kind),
                &inp.row.intent,
                &inp.text,
                NAIVE_MAX_NEW_TOKENS,
            );
            let wall = ms(t);
            let row = match res {
                Ok(r) => {
                    let n = &r.narration;
                    let timings = Timings {
                        total: wall,
                        prefill: n.prefill_ms,
                        decode: n.decode_ms,
                        ..Timings::default()
                    };
                    let reason = r.cut.then(|| {
                        format!(
                            "input cut to {} of {} characters to fit {} tokens",
                            r.shown_chars,
                            inp.text.chars().count(),
                            naive.context()
                        )
                    });
                    let mut row = score_row(
                        inp,
                        "naive",
                        "naive".into(),
                        r.text.clone(),
                        wall,
                        timings,
                        reason,
                        None,
                        &tokenizer,
                    );
                    let prefilled = n.prompt_tokens.saturating_sub(n.cached_prefix_tokens);
                    row.prefill_tok_s =
                        (n.prefill_ms > 0.0).then(|| prefilled as f64 / (n.prefill_ms / 1e3));
                    row.decode_tok_s = (n.decode_ms > 0.0)
                        .then(|| n.generated_tokens as f64 / (n.decode_ms / 1e3));
                    row
                }
                Err(e) => score_row(
                    inp,
                    "naive",
                    "error".into(),
                    String::new(),
                    wall,
                    Timings::default(),
                    None,
                    Some(format!("{e:#}")),
                    &tokenizer,
                ),
            };
            if inp.row.is_holdout() {
                say("naive: (holdout file)".into());
            } else {
                say(format!(
                    "naive {}: recall {:.2} invented {} {:.1} s",
                    inp.row.file,
                    row.recall,
                    row.invented.len(),
                    row.wall_ms / 1e3
                ));
            }
            by_system[3][i] = Some(row);
        }
    }

    // Rows file by file, systems in order; holdout rows only feed the totals.
    let mut all_rows = Vec::new();
    let mut rows = Vec::new();
    for (i, inp) in inputs.iter().enumerate() {
        for sys in &by_system {
            if let Some(r) = &sys[i] {
                all_rows.push(r.clone());
                if !inp.row.is_holdout() {
                    rows.push(r.clone());
                }
            }
        }
    }
    let totals: Vec<report::Totals> = SYSTEMS
        .iter()
        .zip(&by_system)
        .map(|(name, rs)| (name, rs.iter().flatten().cloned().collect::<Vec<Row>>()))
        .filter(|(_, rs)| !rs.is_empty())
        .map(|(name, rs)| report::Totals::of(name, &rs, &stats))
        .collect();
    let order = sets::set_order(
        &inputs
            .iter()
            .map(|i| (i.corpus, i.set.clone(), i.row.is_holdout()))
            .collect::<Vec<_>>(),
    );
    let set_totals = sets::totals_by_set(&all_rows, &order, &stats);
    drop(all_rows);
    let mut rep = BenchReport {
        machine,
        model: model_name,
        model_path,
        corpus: opts.corpus.clone(),
        corpora,
        corpus_files,
        holdout_files,
        notes,
        deadline_ms: opts.deadline_ms,
        token_limit: opts.token_limit,
        model_ms: opts.model_ms,
        rows,
        totals,
        sets: set_totals,
        daemon: stats,
        markdown: String::new(),
        totals_line: String::new(),
        written: Vec::new(),
    };
    rep.markdown = report::markdown(&rep);
    rep.totals_line = if sets::reported_by_set(rep.corpora.len(), &rep.sets) {
        sets::totals_lines(&rep.sets)
    } else {
        report::totals_line(&rep.totals)
    };
    write_outputs(&mut rep, &out_dir, opts.chart)?;
    if !opts.quiet {
        println!("{}", rep.markdown);
        println!("{}", rep.totals_line);
    }
    Ok(rep)
}

fn write_outputs(rep: &mut BenchReport, out_dir: &Path, chart: bool) -> anyhow::Result<()> {
    let md = out_dir.join("bench.md");
    std::fs::write(&md, format!("{}\n{}\n", rep.markdown, rep.totals_line))
        .with_context(|| format!("writing {}", md.display()))?;
    rep.written.push(md);
    if chart {
        let png = out_dir.join("bench.png");
        match report::chart(rep, &png) {
            Ok(()) => rep.written.push(png),
            Err(e) => tracing::warn!("chart not drawn: {e:#}"),
        }
    }
    let js = out_dir.join("bench.json");
    rep.written.push(js.clone());
    rep.written.push(out_dir.join("daemon.log"));
    std::fs::write(&js, serde_json::to_string_pretty(rep)?)
        .with_context(|| format!("writing {}", js.display()))?;
    Ok(())
}
