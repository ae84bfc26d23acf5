//! Quick recall check without the daemon: runs the guard pipeline in process on every file of a
//! corpus (or one split of it) and prints recall and invented facts per file and in total.
//! Files of the `holdout` split are never printed one by one: only their totals.
//!
//! ```sh
//! cargo run --release --example recall -- DIR [--split dev|holdout|all] [--model small] [--narrate]
//!     [--files a,b] [--dump OUTDIR]
//! ```
//!
//! Without `--narrate` the model is not run (the reduction alone, as `--model-ms 0`); the
//! model's tokenizer still counts. The benchmark of record is `scripts/bench.sh`; this is the
//! development loop.

use std::path::PathBuf;
use std::time::Instant;

use toolsum::backend::Narrator;
use toolsum::bench::{manifest, score};
use toolsum::engine::{Engine, EngineOptions};
use toolsum::guard::{self, GuardRequest, Limits};
use toolsum::tokenizer::GgufTokenizer;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().expect("corpus dir"));
    let (mut split, mut model, mut narrate, mut files, mut dump) = (
        "all".to_string(),
        "small".to_string(),
        false,
        Vec::<String>::new(),
        None,
    );
    while let Some(a) = args.next() {
        match a.as_str() {
            "--split" => split = args.next().unwrap(),
            "--model" => model = args.next().unwrap(),
            "--narrate" => narrate = true,
            "--files" => files = args.next().unwrap().split(',').map(String::from).collect(),
            "--dump" => dump = Some(PathBuf::from(args.next().unwrap())),
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    let path = toolsum::models::resolve(Some(&model))?;
    let counter = GgufTokenizer::from_gguf_path(&path)?;
    let mut engine = if narrate {
        Some(Engine::load(&EngineOptions {
            model_path: path.clone(),
            system_prompt: Some(toolsum::guard::prompt::SYSTEM_PROMPT.to_string()),
            ..EngineOptions::default()
        })?)
    } else {
        None
    };
    let rows = manifest::load(&dir)?;
    let session = tempfile::tempdir()?;
    let (mut kept, mut total, mut inv, mut n) = (0, 0, 0, 0);
    let mut out_tokens = Vec::new();
    let mut inv_by_kind = std::collections::BTreeMap::new();
    for row in rows {
        if !row.is_labelled() {
            continue;
        }
        let holdout = row.is_holdout();
        match split.as_str() {
            "dev" if holdout => continue,
            "holdout" if !holdout => continue,
            _ => {}
        }
        if !files.is_empty() && !files.contains(&row.file) {
            continue;
        }
        let bytes = manifest::read_checked(&dir, &row)?;
        let raw = toolsum::guard::decode::decode(&bytes)
            .map(|d| d.into_text())
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
        let t = Instant::now();
        let limits = Limits {
            model_ms: if narrate {
                Limits::default().model_ms
            } else {
                0
            },
            ..Limits::default()
        };
        let req = GuardRequest {
            content: bytes.clone(),
            tool: manifest::tool_for_kind(&row.kind).to_string(),
            args: None,
            intent: Some(row.intent.clone()),
            session_dir: session.path().to_path_buf(),
            limits,
            keep_binary_inline: false,
            deadline: None,
            source: None,
            frame: String::new(),
        };
        let narrator = engine.as_mut().map(|e| e as &mut dyn Narrator);
        let r = guard::guard(req, Some(&counter), narrator)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let mut row = row;
        let collapsed = score::collapse(&raw);
        row.resolve_tabs(&collapsed);
        let (k, missing) = score::recall(&r.text, &row.must_keep);
        let sizes = [
            bytes.len() as u64,
            raw.len() as u64,
            raw.lines().count() as u64,
            raw.split('\n').count() as u64,
            raw.chars().count() as u64,
        ];
        let invented = score::invented(&r.text, &collapsed, &sizes);
        let toks = counter.count(&r.text);
        kept += k;
        total += row.must_keep.len();
        inv += invented.len();
        *inv_by_kind.entry(format!("{:?}", r.kind)).or_insert(0usize) += invented.len();
        n += 1;
        if r.kind != guard::ResultKind::Passthrough {
            out_tokens.push(toks);
        }
        if !holdout {
            println!(
                "{:<28} {:<11} {}/{} {:>5} tok {:>6.0} ms reason={:?} missing={:?} invented={:?}",
                row.file,
                format!("{:?}", r.kind),
                k,
                row.must_keep.len(),
                toks,
                ms,
                r.reason
                    .as_deref()
                    .map(|x| x.chars().take(60).collect::<String>()),
                missing,
                invented
            );
            if let Some(d) = &dump {
                std::fs::create_dir_all(d)?;
                std::fs::write(d.join(format!("{}.txt", row.file)), &r.text)?;
            }
        }
    }
    out_tokens.sort_unstable();
    println!(
        "TOTAL split={split} files={n} recall={:.3} ({kept}/{total}) invented={inv} max_out_tokens={}",
        kept as f64 / total.max(1) as f64,
        out_tokens.last().copied().unwrap_or(0)
    );
    println!("invented by result kind: {inv_by_kind:?}");
    Ok(())
}
