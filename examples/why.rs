//! Development diagnostic: for each `must_keep` fact of the dev split, which unit holds it and
//! where that unit ranks in each signal (relevance, rarity, salience, extremes, position).
//! Holdout files are refused: they are looked at only through the benchmark's totals.
//!
//! ```sh
//! cargo run --release --example why -- DIR [--files a,b] [--quiet]
//! ```

use std::path::PathBuf;

use toolsum::bench::{manifest, score};
use toolsum::guard::reduce::{self, intent, rank::Query, signals, units};

fn rank_of(v: &[f64], i: usize) -> usize {
    let x = v[i];
    if x <= 0.0 {
        return usize::MAX;
    }
    v.iter().filter(|&&y| y > x).count() + 1
}

fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn bucket(r: usize) -> &'static str {
    match r {
        1..=5 => "1-5",
        6..=20 => "6-20",
        21..=100 => "21-100",
        usize::MAX => "none",
        _ => ">100",
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().expect("corpus dir"));
    let (mut files, mut quiet, mut dump) = (Vec::<String>::new(), false, None::<PathBuf>);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--files" => files = args.next().unwrap().split(',').map(String::from).collect(),
            "--quiet" => quiet = true,
            "--dump" => dump = Some(PathBuf::from(args.next().unwrap())),
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    let mut hist: std::collections::BTreeMap<String, usize> = Default::default();
    for row in manifest::load(&dir)? {
        if !row.is_labelled() || row.is_holdout() {
            continue;
        }
        if !files.is_empty() && !files.contains(&row.file) {
            continue;
        }
        let bytes = manifest::read_checked(&dir, &row)?;
        let text = toolsum::guard::decode::decode(&bytes)
            .map(|d| d.into_text())
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
        if text.len() < 60_000 {
            continue; // passthrough-sized
        }
        let kind = reduce::detect(&text);
        let mut q = Query::new(&row.intent);
        intent::add_measures(&mut q, &row.intent);
        let asks = intent::Asks::of(&row.intent);
        let u = units::build(&text, kind);
        let s = signals::score(&u, &q, &asks);
        if !quiet {
            println!("## {} kind={:?} units={}", row.file, kind, u.units.len());
        }
        // WHY_GREP=word: every unit whose text has it, with its anchor and kind.
        if let Ok(g) = std::env::var("WHY_GREP") {
            for (i, x) in u
                .units
                .iter()
                .enumerate()
                .filter(|(_, x)| x.text.contains(&g))
            {
                println!(
                    "  unit L{} {:?} rel={:.2} (rank {}) :: {}",
                    x.line,
                    x.kind,
                    s.rel[i],
                    rank_of(&s.rel, i),
                    clip(&x.text, 140)
                );
            }
        }
        let out = dump
            .as_ref()
            .and_then(|d| std::fs::read_to_string(d.join(format!("{}.txt", row.file))).ok());
        for m in &row.must_keep {
            let cm = score::collapse(m);
            let tag = match &out {
                Some(o) if score::recall(o, std::slice::from_ref(m)).0 == 1 => "kept ",
                Some(_) => "MISS ",
                None => "",
            };
            let hit = u
                .units
                .iter()
                .position(|x| score::collapse(&x.text).contains(&cm));
            let Some(i) = hit else {
                *hist.entry(format!("{tag}no unit holds it")).or_default() += 1;
                if !quiet {
                    println!(
                        "  {tag}[no unit] {}",
                        m.chars().take(90).collect::<String>()
                    );
                }
                continue;
            };
            let r = [
                ("rel", rank_of(&s.rel, i)),
                ("rare", rank_of(&s.rare, i)),
                ("sal", rank_of(&s.sal, i)),
                ("ext", rank_of(&s.ext, i)),
                ("pos", rank_of(&s.pos, i)),
            ];
            let best = r.iter().map(|x| x.1).min().unwrap_or(usize::MAX);
            *hist
                .entry(format!("{tag}best {}", bucket(best)))
                .or_default() += 1;
            for (name, k) in r {
                *hist
                    .entry(format!("{tag}{name} {}", bucket(k)))
                    .or_default() += 1;
            }
            if !quiet {
                println!(
                    "  {tag}L{} {:?} tmpl×{} {:?} :: {}",
                    u.units[i].line,
                    u.units[i].kind,
                    u.templates[u.units[i].template].count,
                    r.iter()
                        .map(|(n, k)| format!(
                            "{n}={}",
                            if *k == usize::MAX {
                                "-".into()
                            } else {
                                k.to_string()
                            }
                        ))
                        .collect::<Vec<_>>()
                        .join(" "),
                    m.chars().take(80).collect::<String>()
                );
            }
        }
    }
    for (k, v) in hist {
        println!("{k:<24} {v}");
    }
    Ok(())
}
