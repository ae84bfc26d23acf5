//! Batched decode, step by step: for each batch size, the median and fastest wall time of one
//! `Transformer::forward_batch` step (every sequence after its own prompt of 320 + 16 i
//! tokens), and the aggregate tok/s the median gives, alternating the sizes round by round so
//! they share the machine's noise alike.
//!
//! `cargo run --release --example batch_decode -- [tier] [sizes] [steps]`, e.g.
//! `small 1,2,4,8 64`. The benchmark of record is `cargo bench --bench engine` (batched decode
//! group); this shows where a size's time goes when the two disagree.

use std::time::Instant;

use candle_core::Device;
use toolsum::engine::model::{KvCache, KvDecode, LoadOptions, Transformer};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tier = args.get(1).map_or("small", String::as_str);
    let sizes: Vec<usize> = args
        .get(2)
        .map_or("1,2,4,8", String::as_str)
        .split(',')
        .filter_map(|s| s.parse().ok())
        .collect();
    let steps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);
    toolsum::engine::init_threads(None);
    let path = toolsum::models::resolve(Some(tier)).expect("model (scripts/fetch-models.sh)");
    let m = Transformer::open(
        &path,
        &Device::Cpu,
        LoadOptions {
            convert_to_q8: false,
            max_context: 1024,
            kernels: None,
            kv_decode: KvDecode::default(),
        },
    )
    .expect("load");
    let most = sizes.iter().copied().max().unwrap_or(1);
    let mut caches: Vec<KvCache> = (0..most)
        .map(|_| {
            let mut c = m.new_cache().expect("cache");
            c.commit();
            c
        })
        .collect();
    let vocab = m.cfg.vocab as u32;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    for round in 0..3 {
        for (si, &b) in sizes.iter().enumerate() {
            for (i, c) in caches[..b].iter_mut().enumerate() {
                c.reset();
                let ids: Vec<u32> = (0..320 + 16 * i as u32)
                    .map(|t| 1 + (t * 7919 + i as u32) % (vocab - 1))
                    .collect();
                for ch in ids.chunks(256) {
                    m.forward(ch, c).expect("prefill");
                }
            }
            for s in 0..steps {
                let toks: Vec<[u32; 1]> = (0..b)
                    .map(|i| [1 + ((s * 31 + i * 7 + round) as u32 * 2654435761) % (vocab - 1)])
                    .collect();
                let mut st: Vec<(&[u32], &mut KvCache)> = toks
                    .iter()
                    .zip(caches.iter_mut())
                    .map(|(t, c)| (&t[..], c))
                    .collect();
                let t = Instant::now();
                m.forward_batch(&mut st).expect("step");
                times[si].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    println!("| {tier} sequences | median ms per step | fastest ms | aggregate tok/s (median) |");
    println!("|---|---|---|---|");
    for (&b, t) in sizes.iter().zip(times.iter_mut()) {
        t.sort_by(|a, b| a.total_cmp(b));
        let med = t[t.len() / 2];
        println!(
            "| {b} | {med:.2} | {:.2} | {:.1} |",
            t[0],
            b as f64 * 1e3 / med
        );
    }
}
