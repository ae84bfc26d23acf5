//! The CPU forward pass on plain `f32` buffers: our quantized kernels for every matrix, fused
//! causal attention over a KV cache laid out for it, and no tensor-library dispatch per op.
//!
//! Why: at decode (one token) the matrices are small, and candle's per-op overhead (allocation,
//! layout checks, a parallel dispatch per op) dominated: 30 layers x ~40 ops per token. Here a
//! layer is five parallel passes (q/k/v together, attention, output projection, gate/up
//! together, down); norms, RoPE and residuals are plain loops on the calling thread.
//!
//! KV layout per layer (IEEE f16, as llama.cpp keeps its KV cache by default: half the memory
//! and half the bytes read per decoded token of f32): keys transposed in blocks of
//! [`KEY_BLOCK`] positions, `kt[g][p / 16][d][p % 16]` (`[n_head_kv, ctx / 16, head_dim, 16]`),
//! values `v[g][p][d]` (`[n_head_kv, ctx, head_dim]`). Both attention products are then
//! outer-product loops over contiguous memory: scores `s[p] += q[d] * kt[g][d][p]` run along
//! positions, and the output `o[d] += s[p] * v[g][p][d]` along the head dimension; no
//! horizontal reductions. The key blocks keep one block's keys for every dimension in one
//! 2 KiB run (head_dim 64): with plain `[head_dim, ctx]` rows, a decode step read `head_dim`
//! rows a page apart at once, more streams than the hardware prefetcher follows, and
//! attention ran at ~5 GB/s (4.8 µs per cached position per token on SmolLM2).
//! With `--kv-decode q8` a layer also holds an 8-bit copy that one-row attention reads
//! instead ([`super::kv8`]).
//!
//! Math (same as [`super::model::Transformer`]'s candle path): RMSNorm (Zhang & Sennrich
//! 2019), RoPE (Su et al. 2021) with the file's layout, grouped-query attention with heads
//! `g * n_rep .. (g + 1) * n_rep` sharing KV head `g`, softmax in f32, SwiGLU feed-forward
//! (Shazeer 2020).

use half::f16;

use super::kernels::{matmul_many, Isa, QLinear};
use super::kv8::{queries, Kv8Head, Kv8Layer, Q8Query, SUB};
use super::model::ModelConfig;
use super::team::{par_chunks_mut, par_for, parallelism, with_team, SharedMut, Team};

mod batch;
mod simd;
mod threads;

pub(crate) use batch::SeqRows;
#[cfg(target_arch = "x86_64")]
pub(super) use simd::softmax_block;
use simd::*;
pub(crate) use threads::Threads;

/// One layer's weights for the CPU path.
#[derive(Debug, Clone)]
pub(crate) struct CpuBlock {
    pub attn_norm: Vec<f32>,
    pub q: QLinear,
    pub k: QLinear,
    pub v: QLinear,
    pub o: QLinear,
    pub bq: Option<Vec<f32>>,
    pub bk: Option<Vec<f32>>,
    pub bv: Option<Vec<f32>>,
    pub bo: Option<Vec<f32>>,
    pub ffn_norm: Vec<f32>,
    pub gate: QLinear,
    pub up: QLinear,
    pub down: QLinear,
}

/// The whole model for the CPU path (the token embedding stays with the caller).
#[derive(Debug, Clone)]
pub(crate) struct CpuModel {
    pub blocks: Vec<CpuBlock>,
    pub out_norm: Vec<f32>,
    pub output: QLinear,
    /// RoPE tables `[ctx, head_dim / 2]`.
    pub cos: Vec<f32>,
    /// See `cos`.
    pub sin: Vec<f32>,
    /// Context the tables and caches are sized for (tokens).
    pub ctx: usize,
    /// Whether to run the attention loops in their AVX2 build.
    pub simd: bool,
    /// Whether the attention products run on 512-bit vectors (AVX-512F; see [`wide_for`]).
    pub wide: bool,
}

/// Positions per block of transposed keys (see the module docs): one block is 16 f16 lanes,
/// the width of the attention kernels' register block.
pub(crate) const KEY_BLOCK: usize = 16;

/// One layer's KV cache for the CPU path (layout in the module docs; f16 bits); zero-initialised
/// with `vec![0; ..]`, so pages are committed only as positions are written.
#[derive(Debug, Clone)]
pub(crate) struct RawLayer {
    pub kt: Vec<u16>,
    pub v: Vec<u16>,
    /// The 8-bit copy one-row attention reads instead (`--kv-decode q8`; see [`super::kv8`]).
    pub q8: Option<Kv8Layer>,
}

/// Index of key `(g, d, p)` in a blocked `kt` of `ctx` positions (`ctx` rounded up to whole
/// blocks).
#[inline(always)]
fn kt_at(g: usize, d: usize, p: usize, hd: usize, ctx: usize) -> usize {
    ((g * ctx.div_ceil(KEY_BLOCK) + p / KEY_BLOCK) * hd + d) * KEY_BLOCK + p % KEY_BLOCK
}

impl RawLayer {
    /// An empty layer cache for `ctx` positions: `2 * n_head_kv * head_dim * ctx` f16 values
    /// (2 bytes each; keys rounded up to whole [`KEY_BLOCK`]s), zeroed pages the OS commits on
    /// first write (on huge pages, 2 MiB at a time; the engine commits all at load). With
    /// `q8` (and a head_dim that is a multiple of 32), also the 8-bit copy (see
    /// [`Kv8Layer::new`] for its size).
    pub fn new(cfg: &ModelConfig, ctx: usize, q8: bool) -> Self {
        let (g, hd) = (cfg.n_head_kv, cfg.head_dim);
        RawLayer {
            kt: vec![0; g * hd * ctx.next_multiple_of(KEY_BLOCK)],
            v: vec![0; g * hd * ctx],
            q8: (q8 && hd.is_multiple_of(SUB)).then(|| Kv8Layer::new(g, hd, ctx)),
        }
    }

    /// Copies positions `0..n` into a compact snapshot: `kt` as whole key blocks
    /// `[n_head_kv, n / 16 (rounded up), head_dim, 16]`, `v` as `[n_head_kv, n, head_dim]`.
    pub fn prefix(&self, n: usize, ctx: usize, hd: usize) -> RawLayer {
        let heads = self.v.len() / (ctx * hd);
        let (blk, nb) = (hd * KEY_BLOCK, n.div_ceil(KEY_BLOCK));
        let mut kt = Vec::with_capacity(heads * nb * blk);
        let mut v = Vec::with_capacity(heads * n * hd);
        for g in 0..heads {
            let k0 = kt_at(g, 0, 0, hd, ctx);
            kt.extend_from_slice(&self.kt[k0..k0 + nb * blk]);
            v.extend_from_slice(&self.v[g * ctx * hd..(g * ctx + n) * hd]);
        }
        let q8 = self.q8.as_ref().map(|c| c.prefix(n));
        RawLayer { kt, v, q8 }
    }

    /// Writes a snapshot made by [`RawLayer::prefix`] (of `n` positions) back at `0..n`.
    pub fn restore(&mut self, snap: &RawLayer, n: usize, ctx: usize, hd: usize) {
        let heads = self.v.len() / (ctx * hd);
        let (blk, nb) = (hd * KEY_BLOCK, n.div_ceil(KEY_BLOCK));
        for g in 0..heads {
            let k0 = kt_at(g, 0, 0, hd, ctx);
            self.kt[k0..k0 + nb * blk].copy_from_slice(&snap.kt[g * nb * blk..(g + 1) * nb * blk]);
            self.v[g * ctx * hd..(g * ctx + n) * hd]
                .copy_from_slice(&snap.v[g * n * hd..(g + 1) * n * hd]);
        }
        if let (Some(c), Some(s)) = (&mut self.q8, &snap.q8) {
            c.restore(s, n);
        }
    }
}

/// Activation buffers of one pass of `t` rows, reused by every layer.
struct Scratch {
    /// Normed input, `[t, n_embd]`.
    h: Vec<f32>,
    /// Queries, `[t, n_head * head_dim]`.
    q: Vec<f32>,
    /// Keys, `[t, n_head_kv * head_dim]`.
    k: Vec<f32>,
    /// Values, `[t, n_head_kv * head_dim]`.
    v: Vec<f32>,
    /// Attention output, `[t, n_head * head_dim]`.
    y: Vec<f32>,
    /// A projection's output, `[t, n_embd]`.
    proj: Vec<f32>,
    /// MLP gate, `[t, n_ff]`.
    g: Vec<f32>,
    /// MLP up projection, `[t, n_ff]`.
    u: Vec<f32>,
}

impl Scratch {
    fn new(m: &CpuModel, cfg: &ModelConfig, t: usize) -> Self {
        let hd = cfg.head_dim;
        let (nq, nkv) = (cfg.n_head * hd, cfg.n_head_kv * hd);
        let nff = m.blocks.first().map_or(0, |b| b.gate.n());
        Scratch {
            h: vec![0f32; t * cfg.n_embd],
            q: vec![0f32; t * nq],
            k: vec![0f32; t * nkv],
            v: vec![0f32; t * nkv],
            y: vec![0f32; t * nq],
            proj: vec![0f32; t * cfg.n_embd],
            g: vec![0f32; t * nff],
            u: vec![0f32; t * nff],
        }
    }
}

impl CpuModel {
    /// Runs the embedded rows `x` (`[t, n_embd]`) at positions `pos..pos + t`, writes their keys
    /// and values into `cache` and returns the logits of the last row (`[vocab]`), or with
    /// `all_rows` those of every row (`[t, vocab]`).
    ///
    /// With `all_rows` (speculative verification), each row's attention runs as its own
    /// one-row call, so every row's logits are bit-identical to a decode step at its position:
    /// the other steps are per-row already (8-bit activation blocks, the VNNI tiles' per-row
    /// sums, norms, RoPE), as long as `t` stays under `kernels::amx::MIN_ROWS`, where the
    /// tile kernel would sum in another order.
    pub fn forward(
        &self,
        cfg: &ModelConfig,
        mut x: Vec<f32>,
        pos: usize,
        cache: &mut [RawLayer],
        all_rows: bool,
    ) -> Vec<f32> {
        let t = x.len() / cfg.n_embd;
        let nq = cfg.n_head * cfg.head_dim;
        let mut s = Scratch::new(self, cfg, t);
        for (blk, layer) in self.blocks.iter().zip(cache.iter_mut()) {
            self.attn_in(cfg, blk, &x, &mut s, |i| pos + i);
            write_kv(
                layer,
                &s.k,
                &s.v,
                pos,
                t,
                cfg.n_head_kv,
                cfg.head_dim,
                self.ctx,
            );
            if all_rows && t > 1 {
                for r in 0..t {
                    let rows = r * nq..(r + 1) * nq;
                    self.attention(cfg, &s.q[rows.clone()], layer, pos + r, 1, &mut s.y[rows]);
                }
            } else {
                self.attention(cfg, &s.q, layer, pos, t, &mut s.y);
            }
            self.attn_out_and_mlp(cfg, blk, &mut x, &mut s, t);
        }
        self.logits(cfg, &x, if all_rows { t } else { 1 })
    }

    /// A layer's input to attention, for the `t` rows of `x` (`[t, n_embd]`): RMS norm, the
    /// Q/K/V projections with their biases, and RoPE with row `i` at position `pos_of(i)`.
    /// Leaves `s.q` (`[t, n_head * head_dim]`), `s.k` and `s.v` (`[t, n_head_kv * head_dim]`).
    fn attn_in(
        &self,
        cfg: &ModelConfig,
        blk: &CpuBlock,
        x: &[f32],
        s: &mut Scratch,
        pos_of: impl Fn(usize) -> usize + Sync,
    ) {
        let hd = cfg.head_dim;
        let (nq, nkv) = (cfg.n_head * hd, cfg.n_head_kv * hd);
        rms_norm_rows(x, &blk.attn_norm, cfg.rms_eps, &mut s.h);
        matmul_many(
            &[&blk.q, &blk.k, &blk.v],
            &s.h,
            &mut [&mut s.q[..], &mut s.k[..], &mut s.v[..]],
        );
        add_bias(&mut s.q, blk.bq.as_deref());
        add_bias(&mut s.k, blk.bk.as_deref());
        add_bias(&mut s.v, blk.bv.as_deref());
        for (buf, len) in [(&mut s.q, nq), (&mut s.k, nkv)] {
            par_rows(buf, len, |i, row| {
                let (c, sn) = self.rope_row(pos_of(i), hd);
                rope(row, hd, c, sn, cfg.rope_interleaved);
            });
        }
    }

    /// The rest of a layer once attention wrote `s.y`: the output projection and its
    /// residual, then the SwiGLU MLP and its residual, into `x` (`[t, n_embd]`).
    fn attn_out_and_mlp(
        &self,
        cfg: &ModelConfig,
        blk: &CpuBlock,
        x: &mut [f32],
        s: &mut Scratch,
        t: usize,
    ) {
        blk.o.matmul(&s.y, &mut s.proj);
        add_bias(&mut s.proj, blk.bo.as_deref());
        add(x, &s.proj);
        rms_norm_rows(x, &blk.ffn_norm, cfg.rms_eps, &mut s.h);
        matmul_many(
            &[&blk.gate, &blk.up],
            &s.h,
            &mut [&mut s.g[..], &mut s.u[..]],
        );
        swiglu_rows(&mut s.g, &s.u, self.simd, t);
        blk.down.matmul(&s.g, &mut s.proj);
        add(x, &s.proj);
    }

    /// The logits of the last `rows` rows of `x` (`[t, n_embd]`): final norm and output head,
    /// `[rows, vocab]`.
    fn logits(&self, cfg: &ModelConfig, x: &[f32], rows: usize) -> Vec<f32> {
        let d = cfg.n_embd;
        let t = x.len() / d;
        let mut last = vec![0f32; rows * d];
        rms_norm_rows(&x[(t - rows) * d..], &self.out_norm, cfg.rms_eps, &mut last);
        let mut logits = vec![0f32; rows * self.output.n()];
        self.output.matmul(&last, &mut logits);
        logits
    }

    fn rope_row(&self, p: usize, hd: usize) -> (&[f32], &[f32]) {
        let half = hd / 2;
        (
            &self.cos[p * half..(p + 1) * half],
            &self.sin[p * half..(p + 1) * half],
        )
    }

    /// Causal grouped-query attention of `t` query rows (`q`: `[t, n_head * head_dim]`, at
    /// positions `pos..pos + t`) over cache positions `0..pos + t`; writes `y` (same shape as
    /// `q`). A task is one KV head with all `n_rep` query heads that share it, for a block of
    /// rows, so each key and value is read once per task; tasks go to the thread's team
    /// (`par_for`).
    fn attention(
        &self,
        cfg: &ModelConfig,
        q: &[f32],
        layer: &RawLayer,
        pos: usize,
        t: usize,
        y: &mut [f32],
    ) {
        let hd = cfg.head_dim;
        let nq = cfg.n_head * hd;
        let n_rep = cfg.n_head / cfg.n_head_kv;
        let scale = 1.0 / (hd as f32).sqrt();
        let rows_per = QUERIES.div_ceil(n_rep).max(1);
        let blocks = t.div_ceil(rows_per);
        let n_all = pos + t;
        // Few tasks (decode: one per KV head) would leave threads idle: then each task also
        // takes a range of positions, and the ranges' partial softmaxes are merged below
        // (the split-K form of attention; Dao et al. 2023, "Flash-Decoding"). The split
        // depends on the call's shape only, never on the thread count, so greedy output does
        // not change with the threads in use (see `Threads`).
        let base_tasks = cfg.n_head_kv * blocks;
        // One-row calls (decode steps and verification rows) read the 8-bit copy when there is
        // one, with the query heads rounded once for all tasks; prefill reads the f16 cache.
        let q8 = layer.q8.as_ref().filter(|_| t == 1);
        let q8q = q8.map_or_else(Vec::new, |_| queries(&q[..nq], hd, scale));
        let splits = if blocks == 1 {
            let min = if q8.is_some() {
                MIN_SPLIT_Q8
            } else {
                MIN_SPLIT
            };
            (n_all / min).clamp(1, MAX_SPLITS)
        } else {
            1
        };
        // Whole key blocks per split, so every task starts on a block.
        let span = n_all.div_ceil(splits).next_multiple_of(KEY_BLOCK);
        let kt_head = self.ctx.div_ceil(KEY_BLOCK) * KEY_BLOCK * hd;
        let w = hd + 2;
        let mut parts = vec![0f32; splits * t * cfg.n_head * w];
        let pp = SharedMut(parts.as_mut_ptr());
        let ctx = self.ctx;
        let (simd, wide) = (self.simd, self.wide);
        let n_head = cfg.n_head;
        let task = |idx: usize| {
            let (g, rest) = (idx / (blocks * splits), idx % (blocks * splits));
            let (b, c) = (rest / splits, rest % splits);
            let r0 = b * rows_per;
            let rows = rows_per.min(t - r0);
            let c0 = c * span;
            let c1 = (c0 + span).min(pos + r0 + rows);
            let job = AttnJob {
                q,
                q_stride: nq,
                head0: g * n_rep,
                n_rep,
                kt: &layer.kt[g * kt_head..(g + 1) * kt_head],
                v: &layer.v[g * ctx * hd..(g + 1) * ctx * hd],
                hd,
                scale,
                pos,
                r0,
                rows,
                c0,
                c1: c1.max(c0),
                q8: q8.map(|c| (c.head(g), &q8q[g * n_rep..(g + 1) * n_rep])),
            };
            // SAFETY: the task writes split c's partials for rows r0..r0+rows of heads
            // head0..head0+n_rep only: disjoint `hd + 2`-wide slices of `parts`, which
            // outlives the parallel loop.
            let out = |row: usize, head: usize| unsafe {
                std::slice::from_raw_parts_mut(pp.get().add(((c * t + row) * n_head + head) * w), w)
            };
            job.run(simd, wide, out);
        };
        par_for(base_tasks * splits, task);
        // Merge: y = sum_c e^(m_c - m) o_c / sum_c e^(m_c - m) l_c.
        par_rows(&mut y[..t * nq], nq, |row, yrow| {
            for head in 0..n_head {
                let part = |c: usize| {
                    let o = ((c * t + row) * n_head + head) * w;
                    &parts[o..o + w]
                };
                let m = (0..splits).fold(f32::NEG_INFINITY, |m, c| m.max(part(c)[hd]));
                let yo = &mut yrow[head * hd..(head + 1) * hd];
                yo.fill(0.0);
                let mut l = 0f32;
                for c in 0..splits {
                    let pc = part(c);
                    if pc[hd + 1] == 0.0 {
                        continue;
                    }
                    let f = (pc[hd] - m).exp();
                    l += f * pc[hd + 1];
                    #[cfg(target_arch = "x86_64")]
                    if simd {
                        // SAFETY: `simd` is set only when AVX2 and FMA were detected.
                        unsafe { axpy_fma(yo, f, &pc[..hd]) };
                        continue;
                    }
                    axpy(yo, f, &pc[..hd]);
                }
                let inv = 1.0 / l;
                for v in yo.iter_mut() {
                    *v *= inv;
                }
            }
        });
    }
}

/// Fewest positions per split of one attention task (see `CpuModel::attention`). Each task
/// pays a start (its first blocks' memory latency, its setup and hand-out), so fewer, longer
/// tasks read the cache faster, as long as there are enough to share. Measured at decode
/// 2,048 deep, 2 threads, medians of five alternating runs: tiny 126.8 tok/s at 256, 132.8 at
/// 512, 136.7 at 1024; small 40.5, 42.9, 42.4. 512 keeps 4 splits there (8 to 12 tasks) for
/// machines with more threads.
const MIN_SPLIT: usize = 512;
/// [`MIN_SPLIT`] for one-row calls on the 8-bit KV copy (`super::kv8`), whose tasks read half
/// the bytes per position, so a task's start weighs twice as much. Tiny at 2,048 deep, 2
/// threads, eight alternating runs of 256 tokens: median 158.8 tok/s at 512, 165.2 at 1024.
const MIN_SPLIT_Q8: usize = 1024;
/// Most splits per task.
const MAX_SPLITS: usize = 16;

/// Queries per attention task (rows x query heads of one KV head), about: each pass over a
/// key serves this many dot products. 42 = 7 x [`QB`]: with 1, 2, 3, 6 or 7 query heads per KV
/// head (SmolLM2 has 3, Qwen2.5-0.5B 7) the register blocks have no tail. Prefill tok/s over
/// 8 (two alternating runs): small pp2048 434-437 → 451-462, tiny 929-948 → 980-1008; 84 and
/// 126 measured the same as 42 within noise.
const QUERIES: usize = 42;

thread_local! {
    /// Per-thread score and output scratch for attention tasks (kept between calls).
    static SCRATCH: std::cell::RefCell<(Vec<f32>, Vec<f32>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// One attention task: `rows` query rows of the `n_rep` heads sharing one KV head.
struct AttnJob<'a> {
    q: &'a [f32],
    q_stride: usize,
    head0: usize,
    n_rep: usize,
    /// This KV head's transposed keys in blocks, `[ctx / 16, head_dim, 16]` (f16 bits).
    kt: &'a [u16],
    /// This KV head's values `[ctx, head_dim]` (f16 bits).
    v: &'a [u16],
    hd: usize,
    scale: f32,
    pos: usize,
    r0: usize,
    rows: usize,
    /// Positions `c0..c1` of the cache this task covers (a split of the visible range; `c0`
    /// is a multiple of [`KEY_BLOCK`]).
    c0: usize,
    /// See `c0`.
    c1: usize,
    /// This KV head's 8-bit copy and its query heads rounded to 8 bits, which one-row tasks
    /// read when the CPU has AVX-512 VNNI.
    q8: Option<(Kv8Head<'a>, &'a [Q8Query])>,
}

impl AttnJob<'_> {
    /// Runs the task on the widest path allowed: 512-bit products (`wide`), AVX2 (`simd`),
    /// or portable loops.
    fn run<'o>(&self, simd: bool, wide: bool, out: impl FnMut(usize, usize) -> &'o mut [f32]) {
        SCRATCH.with(|cell| {
            let (s, o) = &mut *cell.borrow_mut();
            #[cfg(target_arch = "x86_64")]
            if simd && wide {
                let mut out = out;
                if let (Some((kv, qs)), 1) = (self.q8, self.rows) {
                    let mut o = |qi: usize| out(self.r0, self.head0 + qi);
                    // SAFETY: `wide` is set only for the AVX-512 VNNI kernels (AVX-512F, BW,
                    // VNNI; AVX2, FMA detected); c0 starts a block; the copy covers the cache.
                    let done =
                        unsafe { super::kv8::attend(qs, self.hd, kv, self.c0, self.c1, &mut o) };
                    if done {
                        return;
                    }
                }
                // SAFETY: `wide` is set only when AVX-512F (and AVX2, FMA, F16C) were detected.
                if !unsafe { self.run_fused(&mut out) } {
                    // SAFETY: as above.
                    unsafe { self.run_avx512(s, o, out) };
                }
                return;
            }
            #[cfg(target_arch = "x86_64")]
            if simd {
                // SAFETY: `simd` is set only when AVX2 and FMA were detected.
                unsafe { self.run_avx2(s, o, out) };
                return;
            }
            self.run_generic(0, s, o, out);
        })
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn run_avx2<'o>(
        &self,
        s: &mut Vec<f32>,
        o: &mut Vec<f32>,
        out: impl FnMut(usize, usize) -> &'o mut [f32],
    ) {
        self.run_generic(1, s, o, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    unsafe fn run_avx512<'o>(
        &self,
        s: &mut Vec<f32>,
        o: &mut Vec<f32>,
        out: impl FnMut(usize, usize) -> &'o mut [f32],
    ) {
        self.run_generic(2, s, o, out);
    }

    /// The one-row task (a decode step, or one row of a verification pass) in a single pass
    /// over its positions: per key block of 16, the scores, an online-softmax update and the
    /// weighted sum of the block's values (Milakov & Gimelshein 2018, "Online normalizer
    /// calculation for softmax"; the form FlashAttention uses). The three passes of
    /// [`AttnJob::run_generic`] read the cache in the first and left the memory idle in the
    /// other two, and their prefetches came in bursts of a whole block that stalled on the
    /// core's fill buffers. Here the next blocks' lines are requested a few per dimension
    /// while this block computes, so the reads overlap the arithmetic (which, with the f16 to
    /// f32 conversions, is now most of the kernel's time). Measured on tiny
    /// (SmolLM2-135M, 2 threads, medians of 4-6 alternating runs): tg128 @2048 111.8 →
    /// 121-123 tok/s, @512 167-173 → 171-176. Returns false, doing nothing,
    /// for shapes it has no instance for (head_dim other than 64 or 128 with up to 8 query
    /// heads per KV head, or 32 with up to 4), which take the three-pass loops.
    ///
    /// # Safety
    /// AVX-512F, AVX2, FMA and F16C.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    unsafe fn run_fused<'o>(&self, out: &mut impl FnMut(usize, usize) -> &'o mut [f32]) -> bool {
        if self.rows != 1 {
            return false;
        }
        macro_rules! go {
            ($n:literal, $r:literal) => {
                self.fused::<$n, $r>(out)
            };
        }
        super::one_row_shapes!(self.n_rep, self.hd, go);
        true
    }

    /// [`AttnJob::run_fused`] for `N` query heads and `R * 16 = head_dim`.
    ///
    /// # Safety
    /// As [`AttnJob::run_fused`]; `self.rows == 1`, `self.n_rep == N`, `self.hd == 16 * R`.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    #[allow(clippy::needless_range_loop)] // indexes run over several arrays at once
    unsafe fn fused<'o, const N: usize, const R: usize>(
        &self,
        out: &mut impl FnMut(usize, usize) -> &'o mut [f32],
    ) {
        use std::arch::x86_64::*;
        let hd = 16 * R;
        debug_assert!(self.rows == 1 && self.n_rep == N && self.hd == hd);
        let (c0, n) = (self.c0, self.c1 - self.c0);
        debug_assert!(self.pos + self.r0 + 1 >= self.c1);
        let mut qs = [[0f32; 128]; N];
        let qbase = self.r0 * self.q_stride + self.head0 * hd;
        for (qi, dst) in qs.iter_mut().enumerate() {
            for (d, x) in dst[..hd].iter_mut().enumerate() {
                *x = self.q[qbase + qi * hd + d] * self.scale;
            }
        }
        let mut o = [[_mm512_setzero_ps(); R]; N];
        let mut m = [f32::NEG_INFINITY; N];
        let mut l = [_mm512_setzero_ps(); N];
        let nb = n.div_ceil(KEY_BLOCK);
        debug_assert!(c0.is_multiple_of(KEY_BLOCK));
        debug_assert!(self.kt.len() >= (c0 / KEY_BLOCK + nb) * hd * KEY_BLOCK);
        debug_assert!(self.v.len() >= (c0 + n) * hd);
        let kt = self.kt.as_ptr().add(c0 * hd);
        let v = self.v.as_ptr().add(c0 * hd);
        // The first blocks' keys and values now; then, spread over each block's scores loop
        // (one key line and one value line every second dimension: a block's keys and its
        // 16 value rows are `hd / 2` lines each), those of the block ATTN_AHEAD ahead.
        for b in 0..ATTN_AHEAD.min(nb) {
            let (kb, vb) = (
                kt.wrapping_add(b * hd * KEY_BLOCK) as *const i8,
                v.wrapping_add(b * hd * KEY_BLOCK) as *const i8,
            );
            for i in 0..hd / 2 {
                _mm_prefetch::<_MM_HINT_T0>(kb.wrapping_add(i * 64));
                _mm_prefetch::<_MM_HINT_T0>(vb.wrapping_add(i * 64));
            }
        }
        let mut p = [[0f32; KEY_BLOCK]; N];
        for b in 0..nb {
            let ahead = (b + ATTN_AHEAD < nb).then(|| {
                let pb = b + ATTN_AHEAD;
                (
                    kt.wrapping_add(pb * hd * KEY_BLOCK) as *const i8,
                    v.wrapping_add(pb * hd * KEY_BLOCK) as *const i8,
                )
            });
            let kb = kt.add(b * hd * KEY_BLOCK);
            let mut s = [_mm512_setzero_ps(); N];
            for d in 0..hd {
                if let (Some((pk, pv)), true) = (ahead, d % 2 == 0) {
                    _mm_prefetch::<_MM_HINT_T0>(pk.wrapping_add(d / 2 * 64));
                    _mm_prefetch::<_MM_HINT_T0>(pv.wrapping_add(d / 2 * 64));
                }
                let k =
                    _mm512_cvtph_ps(_mm256_loadu_si256(kb.add(d * KEY_BLOCK) as *const __m256i));
                for (qi, sq) in s.iter_mut().enumerate() {
                    *sq = _mm512_fmadd_ps(_mm512_set1_ps(qs[qi][d]), k, *sq);
                }
            }
            let valid = KEY_BLOCK.min(n - b * KEY_BLOCK);
            let mask: __mmask16 = if valid == KEY_BLOCK {
                0xffff
            } else {
                (1u16 << valid) - 1
            };
            for qi in 0..N {
                let e = softmax_block(s[qi], mask, &mut m[qi], &mut l[qi], &mut o[qi]);
                _mm512_storeu_ps(p[qi].as_mut_ptr(), e);
            }
            let vb = v.add(b * KEY_BLOCK * hd);
            for j in 0..valid {
                let row = vb.add(j * hd);
                let mut vr = [_mm512_setzero_ps(); R];
                for (r, x) in vr.iter_mut().enumerate() {
                    *x = _mm512_cvtph_ps(_mm256_loadu_si256(row.add(16 * r) as *const __m256i));
                }
                for qi in 0..N {
                    let w = _mm512_set1_ps(p[qi][j]);
                    for (acc, x) in o[qi].iter_mut().zip(&vr) {
                        *acc = _mm512_fmadd_ps(w, *x, *acc);
                    }
                }
            }
        }
        for qi in 0..N {
            let dst = out(self.r0, self.head0 + qi);
            for (r, acc) in o[qi].iter().enumerate() {
                _mm512_storeu_ps(dst.as_mut_ptr().add(16 * r), *acc);
            }
            dst[hd] = m[qi];
            dst[hd + 1] = _mm512_reduce_add_ps(l[qi]);
        }
    }

    /// The task's loops; `level` 0 = portable, 1 = AVX2, 2 = AVX-512 products (the caller
    /// has checked the CPU for the level).
    #[inline(always)]
    fn run_generic<'o>(
        &self,
        level: u8,
        s: &mut Vec<f32>,
        o: &mut Vec<f32>,
        mut out: impl FnMut(usize, usize) -> &'o mut [f32],
    ) {
        let simd = level >= 1;
        let hd = self.hd;
        let nqry = self.rows * self.n_rep;
        let (c0, n) = (self.c0, self.c1 - self.c0);
        // Query `qi` is row r0 + qi / n_rep, head head0 + qi % n_rep; of this task's `n`
        // positions it sees the first `seen(qi)`.
        let seen = |qi: usize| {
            (self.pos + self.r0 + qi / self.n_rep + 1)
                .saturating_sub(c0)
                .min(n)
        };
        // Score rows cover whole key blocks: `ld` positions each (those past `n` are unused).
        let ld = n.next_multiple_of(KEY_BLOCK);
        s.clear();
        s.resize(nqry * ld, 0.0);
        o.clear();
        o.resize(nqry * hd, 0.0);
        // Scaled queries, `[nqry, hd]`.
        let mut qs = vec![0f32; nqry * hd];
        for (qi, dst) in qs.chunks_exact_mut(hd).enumerate() {
            let base =
                (self.r0 + qi / self.n_rep) * self.q_stride + (self.head0 + qi % self.n_rep) * hd;
            for (d, &x) in dst.iter_mut().zip(&self.q[base..base + hd]) {
                *d = x * self.scale;
            }
        }
        let simd = simd && hd.is_multiple_of(16);
        debug_assert!(c0.is_multiple_of(KEY_BLOCK));
        let kt = &self.kt[c0 / KEY_BLOCK * hd * KEY_BLOCK..];
        let v = &self.v[c0 * hd..];
        // Scores `s[qi, p] = q_qi . k_(c0 + p)` for p < n, in blocks of at most QB queries.
        let mut q0 = 0;
        while q0 < nqry && n > 0 {
            let qb = QB.min(nqry - q0);
            let (qp, sp) = (&qs[q0 * hd..(q0 + qb) * hd], &mut s[q0 * ld..]);
            if simd {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: AVX2+FMA detected (`simd`), AVX-512F for level 2; `kt` holds the
                // key blocks covering 0..n (c0 + n <= ctx, whose blocks are whole); `qp`
                // holds qb rows of hd; `sp` holds qb rows of ld.
                unsafe {
                    // The first query block streams the keys from memory and prefetches the
                    // values for the weighted sum; later ones find both in cache.
                    let vpf = (q0 == 0).then_some(v);
                    if level == 2 {
                        scores_x86_512(kt, hd, qp, qb, n, sp, ld, vpf)
                    } else {
                        scores_x86(kt, hd, qp, qb, n, sp, ld, vpf)
                    }
                };
            } else {
                scores_generic(kt, hd, qp, qb, n, sp, ld);
            }
            q0 += qb;
        }
        // Unnormalized weights e^(s - m) over the visible positions; (m, l) per query.
        let mut ml = vec![(f32::NEG_INFINITY, 0f32); nqry];
        for (qi, stat) in ml.iter_mut().enumerate() {
            let row = &mut s[qi * ld..qi * ld + n];
            let (vis, hidden) = row.split_at_mut(seen(qi));
            if !vis.is_empty() {
                #[cfg(target_arch = "x86_64")]
                {
                    *stat = if simd {
                        // SAFETY: AVX2+FMA detected (`simd`).
                        unsafe { exp_rows_x86(vis) }
                    } else {
                        exp_rows(vis)
                    };
                }
                #[cfg(not(target_arch = "x86_64"))]
                {
                    *stat = exp_rows(vis);
                }
            }
            hidden.fill(0.0);
        }
        // Outputs `o[qi] = sum_p w[qi, p] v_p` (masked positions have weight 0).
        let mut q0 = 0;
        while q0 < nqry && n > 0 {
            let qb = QB.min(nqry - q0);
            let (sp, op) = (&s[q0 * ld..(q0 + qb) * ld], &mut o[q0 * hd..]);
            if simd {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: AVX2+FMA detected, AVX-512F for level 2; `v` holds n rows of hd
                // (hd % 16 == 0); `sp` qb rows of ld >= n; `op` qb rows of hd.
                unsafe {
                    if level == 2 {
                        weighted_x86_512(v, hd, sp, ld, qb, n, op)
                    } else {
                        weighted_x86(v, hd, sp, ld, qb, n, op)
                    }
                };
            } else {
                weighted_generic(v, hd, sp, ld, qb, n, op);
            }
            q0 += qb;
        }
        for (qi, &(m, l)) in ml.iter().enumerate() {
            let dst = out(self.r0 + qi / self.n_rep, self.head0 + qi % self.n_rep);
            dst[..hd].copy_from_slice(&o[qi * hd..(qi + 1) * hd]);
            dst[hd] = m;
            dst[hd + 1] = l;
        }
    }
}

/// `g = silu(g) * u` with `silu(x) = x * sigmoid(x)`; the sigmoid from `e^(-|x|)` (in the
/// range of [`exp_approx`]): `1 / (1 + e)` for `x >= 0`, `e / (1 + e)` below.
/// Runs `f(i, row_i)` for each `len`-long row of `out`, split into row ranges across the
/// executor's threads when there are enough rows (prefill); one pass on the caller otherwise.
/// Each row is computed on its own, so the result does not depend on the split.
fn par_rows(out: &mut [f32], len: usize, f: impl Fn(usize, &mut [f32]) + Sync) {
    let rows = out.len() / len.max(1);
    let threads = parallelism();
    if threads == 1 || rows < 2 * threads {
        for (i, row) in out.chunks_exact_mut(len).enumerate() {
            f(i, row);
        }
        return;
    }
    let per = rows.div_ceil(threads * 2);
    par_chunks_mut(out, per * len, |p, part| {
        for (i, row) in part.chunks_exact_mut(len).enumerate() {
            f(p * per + i, row);
        }
    });
}

/// [`swiglu`] over `rows` rows, split across the executor's threads when there are enough
/// rows (prefill); bit-identical to one serial pass.
fn swiglu_rows(g: &mut [f32], u: &[f32], simd: bool, rows: usize) {
    let threads = parallelism();
    if threads == 1 || rows < 2 * threads {
        swiglu(g, u, simd);
        return;
    }
    // Parts start on multiples of 8 elements, so each element takes the same (SIMD or tail)
    // path as in one serial pass.
    let per = (rows.div_ceil(threads * 2) * (g.len() / rows)).next_multiple_of(8);
    par_chunks_mut(g, per, |p, part| {
        swiglu(part, &u[p * per..p * per + part.len()], simd);
    });
}

fn swiglu(g: &mut [f32], u: &[f32], simd: bool) {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is set only when AVX2, FMA (and F16C) were detected.
        unsafe { swiglu_x86(g, u) };
        return;
    }
    let _ = simd;
    for (gi, &ui) in g.iter_mut().zip(u) {
        *gi = silu(*gi) * ui;
    }
}

#[inline(always)]
fn silu(x: f32) -> f32 {
    let e = exp_approx(-x.abs());
    let sig = if x >= 0.0 {
        1.0 / (1.0 + e)
    } else {
        e / (1.0 + e)
    };
    x * sig
}

/// AVX2 [`swiglu`].
///
/// # Safety
/// AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn swiglu_x86(g: &mut [f32], u: &[f32]) {
    use std::arch::x86_64::*;
    let n = g.len().min(u.len());
    let body = n / 8 * 8;
    let (gp, up) = (g.as_mut_ptr(), u.as_ptr());
    let sign = _mm256_set1_ps(-0.0);
    let one = _mm256_set1_ps(1.0);
    for i in (0..body).step_by(8) {
        let x = _mm256_loadu_ps(gp.add(i));
        let e = exp8(_mm256_or_ps(x, sign)); // e^(-|x|)
        let inv = _mm256_div_ps(one, _mm256_add_ps(one, e));
        let neg = _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_setzero_ps());
        let sig = _mm256_blendv_ps(inv, _mm256_mul_ps(e, inv), neg);
        _mm256_storeu_ps(
            gp.add(i),
            _mm256_mul_ps(_mm256_mul_ps(x, sig), _mm256_loadu_ps(up.add(i))),
        );
    }
    for i in body..n {
        g[i] = silu(g[i]) * u[i];
    }
}

/// RMSNorm of each `w.len()`-wide row of `x` into `out`: `x / sqrt(mean(x^2) + eps) * w`.
fn rms_norm_rows(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let d = w.len();
    par_rows(out, d, |i, or| {
        let xr = &x[i * d..(i + 1) * d];
        let ss: f32 = xr.iter().map(|v| v * v).sum::<f32>() / d as f32;
        let inv = 1.0 / (ss + eps).sqrt();
        for ((o, &xv), &wv) in or.iter_mut().zip(xr).zip(w) {
            *o = xv * inv * wv;
        }
    });
}

fn add_bias(x: &mut [f32], b: Option<&[f32]>) {
    if let Some(b) = b {
        for row in x.chunks_exact_mut(b.len()) {
            add(row, b);
        }
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// RoPE on every `hd`-wide head of `x` for one position (`c`, `s`: `[hd / 2]`). Interleaved
/// rotates pairs `(2i, 2i+1)`; otherwise halves `(i, i + hd/2)` (GPT-NeoX layout).
fn rope(x: &mut [f32], hd: usize, c: &[f32], s: &[f32], interleaved: bool) {
    let half = hd / 2;
    for head in x.chunks_exact_mut(hd) {
        for i in 0..half {
            let (ia, ib) = if interleaved {
                (2 * i, 2 * i + 1)
            } else {
                (i, i + half)
            };
            let (a, b) = (head[ia], head[ib]);
            head[ia] = a * c[i] - b * s[i];
            head[ib] = a * s[i] + b * c[i];
        }
    }
}

/// Writes `t` rows of keys and values (`[t, n_head_kv * hd]`) at positions `pos..pos + t`.
#[allow(clippy::too_many_arguments)]
fn write_kv(
    layer: &mut RawLayer,
    k: &[f32],
    v: &[f32],
    pos: usize,
    t: usize,
    kvh: usize,
    hd: usize,
    ctx: usize,
) {
    for i in 0..t {
        let p = pos + i;
        for g in 0..kvh {
            let src = &k[(i * kvh + g) * hd..(i * kvh + g + 1) * hd];
            for (dd, &val) in src.iter().enumerate() {
                layer.kt[kt_at(g, dd, p, hd, ctx)] = f16::from_f32(val).to_bits();
            }
            let vs = &v[(i * kvh + g) * hd..(i * kvh + g + 1) * hd];
            let dst = &mut layer.v[(g * ctx + p) * hd..(g * ctx + p + 1) * hd];
            for (d, &val) in dst.iter_mut().zip(vs) {
                *d = f16::from_f32(val).to_bits();
            }
            if let Some(c) = &mut layer.q8 {
                c.write(g, p, src, vs);
            }
        }
    }
}

/// Whether the attention products can use 512-bit vectors: kernels `isa` are the AVX-512 ones
/// (which imply AVX-512F) and the AVX2 build is allowed ([`simd_for`]).
pub(crate) fn wide_for(isa: Isa) -> bool {
    isa.avx512() && simd_for(isa)
}

/// Whether the attention loops can use their AVX2 + F16C build on this CPU for kernels `isa`.
pub(crate) fn simd_for(isa: Isa) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        isa != Isa::Scalar && is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        false
    }
}

#[cfg(test)]
mod tests;
