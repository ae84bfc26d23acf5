//! The batched CPU pass: rows of several sequences, each with its own KV cache and position,
//! through one forward pass.
//!
//! Why: a decode step reads every weight once for one row of activations, so on this CPU it
//! is bound by the weights' read bandwidth (SmolLM2 ~60 MB, Qwen2.5-0.5B ~300 MB per step);
//! the quantized matmuls take `m` rows for little more than the cost of one (each weight
//! block is loaded once and dotted with every row). So `B` concurrent sequences that decode
//! together pay for the weights once per step instead of `B` times (the "continuous
//! batching" of Orca, Yu et al. 2022, and of vLLM / llama-server's slots). What cannot be
//! shared stays per sequence: RoPE at its own position, the write of its keys and values into
//! its own cache, and attention over that cache.
//!
//! Each row is computed exactly as a one-row decode step at its position would compute it
//! (same per-row activation quantization, per-row sums and norms, one-row attention), as long
//! as the pass has fewer than `kernels::amx::MIN_ROWS` rows; so greedy output does not change
//! with what else is in the batch.

use super::{write_kv, CpuModel, ModelConfig, RawLayer, Scratch};

/// One sequence's share of a batched pass: `rows` consecutive tokens at positions
/// `pos..pos + rows`, whose keys and values go into `cache` (one [`RawLayer`] per layer).
pub(crate) struct SeqRows<'a> {
    /// Tokens this sequence already holds in `cache` (the first row's position).
    pub pos: usize,
    /// Rows (tokens) of this sequence in the pass, at least 1.
    pub rows: usize,
    /// The sequence's KV cache, one entry per layer.
    pub cache: &'a mut [RawLayer],
}

impl CpuModel {
    /// Runs the embedded rows `x` (`[sum of rows, n_embd]`, the sequences' rows in the order
    /// of `seqs`) through every layer, writes each sequence's keys and values into its own
    /// cache at its own positions, and returns the logits of every row, `[sum of rows,
    /// vocab]`. Each row's attention is a one-row call over its own cache (see the module
    /// docs for why each row's logits equal a one-row decode step's).
    pub fn forward_batch(
        &self,
        cfg: &ModelConfig,
        mut x: Vec<f32>,
        seqs: &mut [SeqRows<'_>],
    ) -> Vec<f32> {
        let t = x.len() / cfg.n_embd;
        debug_assert_eq!(t, seqs.iter().map(|s| s.rows).sum::<usize>());
        let hd = cfg.head_dim;
        let (nq, nkv) = (cfg.n_head * hd, cfg.n_head_kv * hd);
        // Each row's position, for RoPE.
        let at: Vec<usize> = seqs.iter().flat_map(|s| s.pos..s.pos + s.rows).collect();
        let mut s = Scratch::new(self, cfg, t);
        for (li, blk) in self.blocks.iter().enumerate() {
            self.attn_in(cfg, blk, &x, &mut s, |i| at[i]);
            let mut r0 = 0;
            for seq in seqs.iter_mut() {
                let layer = &mut seq.cache[li];
                let rows = r0..r0 + seq.rows;
                write_kv(
                    layer,
                    &s.k[rows.start * nkv..rows.end * nkv],
                    &s.v[rows.start * nkv..rows.end * nkv],
                    seq.pos,
                    seq.rows,
                    cfg.n_head_kv,
                    hd,
                    self.ctx,
                );
                for (j, r) in rows.enumerate() {
                    let span = r * nq..(r + 1) * nq;
                    self.attention(
                        cfg,
                        &s.q[span.clone()],
                        layer,
                        seq.pos + j,
                        1,
                        &mut s.y[span],
                    );
                }
                r0 += seq.rows;
            }
            self.attn_out_and_mlp(cfg, blk, &mut x, &mut s, t);
        }
        self.logits(cfg, &x, t)
    }
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    use super::super::{simd_for, wide_for, CpuBlock};
    use super::*;
    use crate::engine::kernels::{Isa, QLinear};

    /// Deterministic values in `[-0.5, 0.5)` (a linear congruential generator).
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect()
    }

    fn linear(n: usize, k: usize, seed: u32, isa: Isa) -> QLinear {
        let t = Tensor::from_vec(values(n * k, seed), (n, k), &Device::Cpu).unwrap();
        let q = QTensor::quantize(&t, GgmlDType::Q8_0).unwrap();
        QLinear::new(&q, isa).unwrap().unwrap()
    }

    /// A two-layer model with random Q8_0 weights: 4 query heads sharing 2 KV heads of 32,
    /// qwen2-style biases and RoPE halves, a 64-token vocabulary.
    fn model(isa: Isa, ctx: usize) -> (ModelConfig, CpuModel) {
        let cfg = ModelConfig {
            arch: "qwen2".into(),
            n_layer: 2,
            n_embd: 128,
            n_head: 4,
            n_head_kv: 2,
            head_dim: 32,
            train_ctx: ctx,
            rope_base: 10_000.0,
            rms_eps: 1e-6,
            rope_interleaved: false,
            tied_embeddings: false,
            vocab: 64,
        };
        let (d, nkv, nff) = (cfg.n_embd, cfg.n_head_kv * cfg.head_dim, 256);
        let blocks = (0..cfg.n_layer as u32)
            .map(|l| CpuBlock {
                attn_norm: values(d, 10 + l).iter().map(|v| 1.0 + v).collect(),
                q: linear(d, d, 20 + l, isa),
                k: linear(nkv, d, 30 + l, isa),
                v: linear(nkv, d, 40 + l, isa),
                o: linear(d, d, 50 + l, isa),
                bq: Some(values(d, 60 + l)),
                bk: Some(values(nkv, 70 + l)),
                bv: Some(values(nkv, 80 + l)),
                bo: None,
                ffn_norm: values(d, 90 + l).iter().map(|v| 1.0 + v).collect(),
                gate: linear(nff, d, 100 + l, isa),
                up: linear(nff, d, 110 + l, isa),
                down: linear(d, nff, 120 + l, isa),
            })
            .collect();
        let half = cfg.head_dim / 2;
        let ang = |p: usize, i: usize| p as f32 * 10_000f32.powf(-2.0 * i as f32 / 32.0);
        let table = |f: fn(f32) -> f32| -> Vec<f32> {
            (0..ctx * half)
                .map(|j| f(ang(j / half, j % half)))
                .collect()
        };
        let m = CpuModel {
            blocks,
            out_norm: vec![1.0; d],
            output: linear(cfg.vocab, d, 130, isa),
            cos: table(f32::cos),
            sin: table(f32::sin),
            ctx,
            simd: simd_for(isa),
            wide: wide_for(isa),
        };
        (cfg, m)
    }

    /// Each row of a batched pass (three sequences at different depths, one of them with two
    /// drafted tokens) equals the one-sequence pass at that position bit for bit, on every
    /// kernel path, with the f16 and the 8-bit KV copy; and the caches end up the same.
    #[test]
    fn batched_rows_equal_one_sequence_passes() {
        let ctx = 96;
        for isa in Isa::available() {
            for q8 in [false, true] {
                let (cfg, m) = model(isa, ctx);
                let d = cfg.n_embd;
                let embed = |tokens: &[u32]| -> Vec<f32> {
                    tokens.iter().flat_map(|&t| values(d, 1000 + t)).collect()
                };
                let new_cache = || -> Vec<RawLayer> {
                    (0..cfg.n_layer)
                        .map(|_| RawLayer::new(&cfg, ctx, q8))
                        .collect()
                };
                // Prompts of 5, 17 and 40 tokens, then the tokens fed in the batched step.
                let prompts: Vec<Vec<u32>> = [5usize, 17, 40]
                    .iter()
                    .enumerate()
                    .map(|(s, &n)| (0..n as u32).map(|i| (i * 7 + s as u32) % 64).collect())
                    .collect();
                let feeds: [&[u32]; 3] = [&[3], &[9, 11, 13], &[60]];
                let mut single: Vec<Vec<RawLayer>> = Vec::new();
                let mut want: Vec<Vec<f32>> = Vec::new();
                for (p, feed) in prompts.iter().zip(feeds) {
                    let mut cache = new_cache();
                    m.forward(&cfg, embed(p), 0, &mut cache, false);
                    for (j, &tok) in feed.iter().enumerate() {
                        want.push(m.forward(&cfg, embed(&[tok]), p.len() + j, &mut cache, false));
                    }
                    single.push(cache);
                }
                let mut batched: Vec<Vec<RawLayer>> = prompts
                    .iter()
                    .map(|p| {
                        let mut cache = new_cache();
                        m.forward(&cfg, embed(p), 0, &mut cache, false);
                        cache
                    })
                    .collect();
                let x: Vec<f32> = feeds.iter().flat_map(|f| embed(f)).collect();
                let mut seqs: Vec<SeqRows<'_>> = batched
                    .iter_mut()
                    .zip(prompts.iter().zip(feeds))
                    .map(|(cache, (p, f))| SeqRows {
                        pos: p.len(),
                        rows: f.len(),
                        cache,
                    })
                    .collect();
                let got = m.forward_batch(&cfg, x, &mut seqs);
                let got: Vec<&[f32]> = got.chunks_exact(cfg.vocab).collect();
                assert_eq!(got.len(), want.len());
                for (r, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(*g, &w[..], "{isa:?} q8={q8}: row {r} differs");
                }
                for (s, (a, b)) in single.iter().zip(&batched).enumerate() {
                    for (la, lb) in a.iter().zip(b) {
                        assert!(la.kt == lb.kt && la.v == lb.v, "{isa:?}: cache {s} differs");
                    }
                }
            }
        }
    }
}
