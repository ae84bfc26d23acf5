//! Totals per system, the markdown table, the one-line totals and the PNG chart (recall against
//! p50 latency per system).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::Context;
use plotters::prelude::*;
use serde::Serialize;

use super::score::percentile;
use super::{BenchReport, DaemonStats, Row};

/// Totals of one system over all files.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    /// System name.
    pub system: String,
    /// Files run.
    pub files: usize,
    /// Files that failed (`error` rows).
    pub errors: usize,
    /// `must_keep` strings over all files.
    pub must_keep: usize,
    /// Of them, found in the returned texts.
    pub kept: usize,
    /// `kept / must_keep` over all files (each string weighs the same).
    pub recall: f64,
    /// Mean of the per-file recalls (each file weighs the same).
    pub recall_mean: f64,
    /// Invented facts over all files.
    pub invented: usize,
    /// Returned tokens over all files.
    pub output_tokens: usize,
    /// Largest returned size of one file (tokens).
    pub output_tokens_max: usize,
    /// Input tokens over all files.
    pub input_tokens: usize,
    /// `output_tokens / input_tokens`.
    pub ratio: f64,
    /// Median wall time per file (ms).
    pub p50_ms: f64,
    /// 95th percentile wall time per file (ms, nearest rank).
    pub p95_ms: f64,
    /// Sum of wall times (ms).
    pub wall_ms: f64,
    /// Sum of the responses' time split (ms): total, queue, count, reduce, prefill, decode.
    pub timings_ms: crate::guard::Timings,
    /// Prefill speed (tokens/s): the daemon's for toolsum, the mean over files for naive.
    pub prefill_tok_s: Option<f64>,
    /// Decode speed (tokens/s), as `prefill_tok_s`.
    pub decode_tok_s: Option<f64>,
    /// How many files came back as each result kind (`summary`, `preview`, `cut`, ...).
    pub results: BTreeMap<String, usize>,
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

impl Totals {
    /// Totals of `rows` (all of one system); toolsum's speeds come from the daemon.
    pub fn of(system: &str, rows: &[Row], daemon: &DaemonStats) -> Totals {
        let must_keep: usize = rows.iter().map(|r| r.must_keep).sum();
        let kept: usize = rows.iter().map(|r| r.kept).sum();
        let output_tokens: usize = rows.iter().map(|r| r.output_tokens).sum();
        let input_tokens: usize = rows.iter().map(|r| r.input_tokens).sum();
        let walls: Vec<f64> = rows.iter().map(|r| r.wall_ms).collect();
        let mut t = crate::guard::Timings::default();
        for r in rows {
            let x = &r.timings_ms;
            t.total += x.total;
            t.queue += x.queue;
            t.count += x.count;
            t.reduce += x.reduce;
            t.prefill += x.prefill;
            t.decode += x.decode;
        }
        let mut results = BTreeMap::new();
        for r in rows {
            *results.entry(r.result.clone()).or_insert(0) += 1;
        }
        let (prefill_tok_s, decode_tok_s) = if system == "toolsum" {
            (daemon.prefill_tok_s, daemon.decode_tok_s)
        } else {
            (
                mean(rows.iter().filter_map(|r| r.prefill_tok_s)),
                mean(rows.iter().filter_map(|r| r.decode_tok_s)),
            )
        };
        Totals {
            system: system.into(),
            files: rows.len(),
            errors: rows.iter().filter(|r| r.error.is_some()).count(),
            must_keep,
            kept,
            recall: if must_keep == 0 {
                1.0
            } else {
                kept as f64 / must_keep as f64
            },
            recall_mean: mean(rows.iter().map(|r| r.recall)).unwrap_or(0.0),
            invented: rows.iter().map(|r| r.invented.len()).sum(),
            output_tokens,
            output_tokens_max: rows.iter().map(|r| r.output_tokens).max().unwrap_or(0),
            input_tokens,
            ratio: output_tokens as f64 / input_tokens.max(1) as f64,
            p50_ms: percentile(&walls, 0.5),
            p95_ms: percentile(&walls, 0.95),
            wall_ms: walls.iter().sum(),
            timings_ms: t,
            prefill_tok_s,
            decode_tok_s,
            results,
        }
    }
}

/// The totals line: one `system: recall=R invented=N p50_s=S p95_s=S` group per system,
/// `;`-separated, e.g. `toolsum: recall=0.91 invented=0 p50_s=4.20 p95_s=9.80; head: ...`.
pub fn totals_line(totals: &[Totals]) -> String {
    totals
        .iter()
        .map(|t| {
            format!(
                "{}: recall={:.2} invented={} p50_s={:.2} p95_s={:.2}",
                t.system,
                t.recall,
                t.invented,
                t.p50_ms / 1e3,
                t.p95_ms / 1e3
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn opt_speed(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.0}"))
}

/// The markdown report: a header naming the machine, model and settings, one table row per
/// file and system, the totals rows last, then where toolsum's time went.
pub fn markdown(rep: &BenchReport) -> String {
    let mut s = String::new();
    s.push_str("# toolsum benchmark\n\n");
    s.push_str(&format!(
        "- machine: {} (absolute times are for this machine)\n- model: {} ({})\n",
        rep.machine.label(),
        rep.model,
        rep.model_path.display(),
    ));
    if rep.corpora.len() <= 1 {
        s.push_str(&format!(
            "- corpus: {} ({} files)\n",
            rep.corpus.display(),
            rep.totals.first().map_or(0, |t| t.files)
        ));
    } else {
        let list: Vec<String> = rep
            .corpora
            .iter()
            .zip(&rep.corpus_files)
            .map(|(c, n)| format!("{} = {} ({n} files)", c.name, c.dir.display()))
            .collect();
        s.push_str(&format!("- corpora: {}\n", list.join(", ")));
    }
    if rep.holdout_files > 0 {
        s.push_str(&format!(
            "- holdout: {} files, in the totals by set only (no per-file rows)\n",
            rep.holdout_files
        ));
    }
    for n in &rep.notes {
        s.push_str(&format!("- note: {n}\n"));
    }
    s.push_str(&format!(
        "- deadline_ms: {}; model_ms: {}; token_limit: {}\n",
        rep.deadline_ms
            .map_or("daemon default".into(), |d| d.to_string()),
        rep.model_ms
            .map_or("daemon default".into(), |d| d.to_string()),
        rep.token_limit
            .map_or("daemon default".into(), |d| d.to_string())
    ));
    let d = &rep.daemon;
    s.push_str(&format!(
        "- daemon: peak RSS {}, ready after {:.1} s, {} threads, prefill {} tok/s, decode {} tok/s\n",
        d.peak_rss_bytes
            .map_or("-".into(), |b| format!("{:.0} MiB", b as f64 / 1048576.0)),
        d.ready_ms / 1e3,
        d.threads.map_or("-".into(), |t| t.to_string()),
        opt_speed(d.prefill_tok_s),
        opt_speed(d.decode_tok_s),
    ));
    s.push_str(
        "- recall: share of must_keep strings found verbatim (whitespace collapsed); invented: \
         paths, file:line, URLs, 3+ digit numbers and quoted strings not in the input (pointer, \
         omission and shown/omitted lines and L<n> line references excluded; the input's own byte \
         and line counts accepted); recall total = kept/all must_keep strings\n\n",
    );
    let by_set = super::sets::reported_by_set(rep.corpora.len(), &rep.sets);
    if by_set {
        s.push_str(&super::sets::markdown(&rep.sets));
        s.push_str("\n## Per file (holdout files excluded)\n\n");
    }
    s.push_str("| file | system | result | recall | invented | out tok | out/in | wall s | count ms | reduce ms | prefill ms | decode ms |\n");
    s.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in &rep.rows {
        let t = &r.timings_ms;
        let file = if rep.corpora.len() > 1 {
            format!("{}/{}", r.set, r.file)
        } else {
            r.file.clone()
        };
        s.push_str(&format!(
            "| {} | {} | {} | {:.2} ({}/{}) | {} | {} | {:.3} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} |\n",
            file,
            r.system,
            r.result,
            r.recall,
            r.kept,
            r.must_keep,
            r.invented.len(),
            r.output_tokens,
            r.ratio,
            r.wall_ms / 1e3,
            t.count,
            t.reduce,
            t.prefill,
            t.decode
        ));
    }
    for t in &rep.totals {
        let x = &t.timings_ms;
        s.push_str(&format!(
            "| **total** ({} files{}) | **{}** | {} | **{:.2}** ({}/{}) | **{}** | {} | {:.3} | p50 {:.2} / p95 {:.2} | {:.0} | {:.0} | {:.0} | {:.0} |\n",
            t.files,
            if by_set { ", all sets" } else { "" },
            t.system,
            t.results
                .iter()
                .map(|(k, v)| format!("{k}×{v}"))
                .collect::<Vec<_>>()
                .join(" "),
            t.recall,
            t.kept,
            t.must_keep,
            t.invented,
            t.output_tokens,
            t.ratio,
            t.p50_ms / 1e3,
            t.p95_ms / 1e3,
            x.count,
            x.reduce,
            x.prefill,
            x.decode
        ));
    }
    if let Some(t) = rep.totals.iter().find(|t| t.system == "toolsum") {
        let x = &t.timings_ms;
        let other = (t.wall_ms - x.count - x.reduce - x.prefill - x.decode - x.queue).max(0.0);
        let pct = |v: f64| 100.0 * v / t.wall_ms.max(1e-9);
        s.push_str(&format!(
            "\ntoolsum time ({:.1} s over {} files): count {:.0}%, reduce {:.0}%, queue {:.0}%, prefill {:.0}%, decode {:.0}%, other (save, clean, socket, JSON) {:.0}%\n",
            t.wall_ms / 1e3,
            t.files,
            pct(x.count),
            pct(x.reduce),
            pct(x.queue),
            pct(x.prefill),
            pct(x.decode),
            pct(other)
        ));
    }
    if let Some(t) = rep.totals.iter().find(|t| t.system == "naive") {
        s.push_str(&format!(
            "naive: prefill {} tok/s, decode {} tok/s (mean over files)\n",
            opt_speed(t.prefill_tok_s),
            opt_speed(t.decode_tok_s)
        ));
    }
    s
}

/// Font files tried for the chart's text (`TOOLSUM_BENCH_FONT` first); without one the chart is
/// drawn without text.
const FONT_CANDIDATES: [&str; 5] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
];

/// Registers a system font for plotters once; true when one is available.
fn font_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        let env = std::env::var("TOOLSUM_BENCH_FONT").ok();
        for p in env.iter().map(String::as_str).chain(FONT_CANDIDATES) {
            if let Ok(bytes) = std::fs::read(p) {
                // Registered fonts live for the whole process, as plotters requires.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    })
}

const COLORS: [RGBColor; 4] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

/// Fastest time shown on the log-scale axis (s); faster points sit on it.
const MIN_SECONDS: f64 = 1e-4;

/// Draws recall (y) against p50 wall time (x, seconds, log scale) per system, with each file
/// as a small dot, to a PNG at `path`. Text (axes, labels, machine) is drawn only when a font
/// is found.
///
/// # Errors
/// Drawing or writing the PNG fails.
pub fn chart(rep: &BenchReport, path: &Path) -> anyhow::Result<()> {
    let text = font_ready();
    let max_s = rep
        .rows
        .iter()
        .map(|r| r.wall_ms / 1e3)
        .fold(1.0f64, f64::max)
        * 2.0;
    let root = BitMapBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&root);
    builder.margin(20);
    if text {
        builder
            .caption(
                format!("recall vs p50 latency — {}", rep.machine.label()),
                ("sans-serif", 18),
            )
            .x_label_area_size(45)
            .y_label_area_size(55);
    } else {
        builder.x_label_area_size(5).y_label_area_size(5);
    }
    let mut ch = builder.build_cartesian_2d((MIN_SECONDS..max_s).log_scale(), 0.0f64..1.05)?;
    let mut mesh = ch.configure_mesh();
    if text {
        mesh.x_desc("p50 wall time per file (s, log)")
            .y_desc("recall of must_keep")
            .label_style(("sans-serif", 13));
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw()?;
    for (i, t) in rep.totals.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<(f64, f64)> = rep
            .rows
            .iter()
            .filter(|r| r.system == t.system)
            .map(|r| ((r.wall_ms / 1e3).max(MIN_SECONDS), r.recall))
            .collect();
        ch.draw_series(
            pts.iter()
                .map(|&p| Circle::new(p, 3, color.mix(0.35).filled())),
        )?;
        let at = ((t.p50_ms / 1e3).max(MIN_SECONDS), t.recall);
        let s = ch.draw_series(std::iter::once(Circle::new(at, 9, color.filled())))?;
        if text {
            s.label(format!(
                "{}: recall {:.2}, p50 {:.2} s",
                t.system,
                t.recall,
                t.p50_ms / 1e3
            ))
            .legend(move |(x, y)| Circle::new((x + 8, y), 6, color.filled()));
            ch.draw_series(std::iter::once(Text::new(
                t.system.clone(),
                at,
                ("sans-serif", 15).into_font().color(&BLACK),
            )))?;
        }
    }
    if text {
        ch.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::MiddleRight)
            .label_font(("sans-serif", 14))
            .draw()?;
    }
    root.present()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(system: &str, recall: f64, wall_ms: f64, invented: usize) -> Row {
        Row {
            file: "f".into(),
            set: "corpus".into(),
            kind: "log".into(),
            system: system.into(),
            input_bytes: 100,
            input_tokens: 50,
            result: "cut".into(),
            reason: None,
            error: None,
            must_keep: 4,
            kept: (recall * 4.0) as usize,
            recall,
            missing: vec![],
            invented: vec!["x".into(); invented],
            output_tokens: 10,
            ratio: 0.2,
            wall_ms,
            timings_ms: Default::default(),
            prefill_tok_s: None,
            decode_tok_s: None,
            text: String::new(),
        }
    }

    #[test]
    fn totals_and_line_format() {
        let d = DaemonStats::default();
        let t1 = Totals::of(
            "toolsum",
            &[
                row("toolsum", 1.0, 4000.0, 0),
                row("toolsum", 0.5, 9000.0, 2),
            ],
            &d,
        );
        assert_eq!(t1.kept, 6);
        assert_eq!(t1.must_keep, 8);
        assert_eq!(t1.invented, 2);
        assert_eq!(t1.p50_ms, 4000.0);
        assert_eq!(t1.p95_ms, 9000.0);
        let t2 = Totals::of("head", &[row("head", 0.25, 0.001, 0)], &d);
        let line = totals_line(&[t1, t2]);
        assert_eq!(
            line,
            "toolsum: recall=0.75 invented=2 p50_s=4.00 p95_s=9.00; head: recall=0.25 invented=0 p50_s=0.00 p95_s=0.00"
        );
    }
}
