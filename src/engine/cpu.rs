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
pub(crate) use batch::SeqRows;

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
        let d = cfg.n_embd;
        let t = x.len() / d;
        let hd = cfg.head_dim;
        let (nq, nkv) = (cfg.n_head * hd, cfg.n_head_kv * hd);
        let mut h = vec![0f32; t * d];
        let mut q = vec![0f32; t * nq];
        let mut k = vec![0f32; t * nkv];
        let mut v = vec![0f32; t * nkv];
        let mut y = vec![0f32; t * nq];
        let mut proj = vec![0f32; t * d];
        let nff = self.blocks.first().map_or(0, |b| b.gate.n());
        let mut g = vec![0f32; t * nff];
        let mut u = vec![0f32; t * nff];
        for (blk, layer) in self.blocks.iter().zip(cache.iter_mut()) {
            rms_norm_rows(&x, &blk.attn_norm, cfg.rms_eps, &mut h);
            matmul_many(
                &[&blk.q, &blk.k, &blk.v],
                &h,
                &mut [&mut q[..], &mut k[..], &mut v[..]],
            );
            add_bias(&mut q, blk.bq.as_deref());
            add_bias(&mut k, blk.bk.as_deref());
            add_bias(&mut v, blk.bv.as_deref());
            for (x, len) in [(&mut q, nq), (&mut k, nkv)] {
                par_rows(x, len, |i, row| {
                    let (c, s) = self.rope_row(pos + i, hd);
                    rope(row, hd, c, s, cfg.rope_interleaved);
                });
            }
            write_kv(layer, &k, &v, pos, t, cfg.n_head_kv, hd, self.ctx);
            if all_rows && t > 1 {
                for r in 0..t {
                    let rows = r * nq..(r + 1) * nq;
                    self.attention(cfg, &q[rows.clone()], layer, pos + r, 1, &mut y[rows]);
                }
            } else {
                self.attention(cfg, &q, layer, pos, t, &mut y);
            }
            blk.o.matmul(&y, &mut proj);
            add_bias(&mut proj, blk.bo.as_deref());
            add(&mut x, &proj);
            rms_norm_rows(&x, &blk.ffn_norm, cfg.rms_eps, &mut h);
            matmul_many(&[&blk.gate, &blk.up], &h, &mut [&mut g[..], &mut u[..]]);
            swiglu_rows(&mut g, &u, self.simd, t);
            blk.down.matmul(&g, &mut proj);
            add(&mut x, &proj);
        }
        let rows = if all_rows { t } else { 1 };
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

/// Runs forward passes on a [`Team`] of compute threads, and decode steps on the team or on the
/// calling thread alone, whichever is measured faster now.
///
/// Why: beside a process that holds a core, a parallel loop can wait a scheduler time slice
/// for the thread that lost its core, and a decode step has ~150 loops; one thread then beats
/// two (measured here: 62 vs 50 tok/s on SmolLM2 with one core busy, 64 vs 100 idle). So the
/// chooser keeps a moving average of ms per step for each mode, uses the faster, and every
/// [`PROBE_EVERY`] steps re-measures the other for [`PROBE_LEN`] steps (the first of which is
/// not counted: it pays the hand-over), less often while the other stays clearly slower (up to
/// every [`MAX_PROBE_EVERY`] steps). Prefill (many rows per call) always uses the team.
#[derive(Debug)]
pub(crate) struct Threads {
    /// Team size: the global rayon pool's (set by `init_threads` / the daemon).
    size: usize,
    /// Spawned on the first pass, from the thread that runs it, so the workers inherit that
    /// thread's priority (the daemon's model thread runs at a lower one).
    team: std::sync::OnceLock<Team>,
    state: std::sync::Mutex<Chooser>,
}

/// Steps between probes of the mode not in use, at first and after the mode changes.
const PROBE_EVERY: usize = 48;
/// Most steps between probes: each probe that finds the other mode slower by
/// [`BACKOFF_MARGIN`] doubles the interval up to this. Why: beside a busy process, a team
/// step is ~3x a one-thread step, so 3 probe steps in 51 cost ~10% (measured: 2 threads
/// beside a busy process reached 0.93 of one thread alone); at 384 they cost ~1.5%, and a
/// change of load is still noticed within a few seconds of decoding.
const MAX_PROBE_EVERY: usize = 384;
/// How much slower the probed mode must be for the next probe to wait twice as long.
const BACKOFF_MARGIN: f64 = 1.25;
/// Steps per probe.
const PROBE_LEN: usize = 3;

#[derive(Debug, Default)]
struct Chooser {
    /// Moving average of ms per step: `[team, one thread]`; 0 = not measured yet.
    ema_ms: [f64; 2],
    since_probe: usize,
    probe_left: usize,
    probe_mode: usize,
    /// A probe ran since the last step in the chosen mode (judged on the next pick).
    probed: bool,
    /// The mode in use (outside probes).
    current: usize,
    /// Steps between probes now (0 = [`PROBE_EVERY`]).
    interval: usize,
    /// Per mode: the next counted step starts its average afresh (set when a probe starts).
    fresh: [bool; 2],
}

impl Threads {
    /// A chooser for a team as large as rayon's global pool; both modes unmeasured.
    pub fn new() -> Self {
        Threads {
            size: rayon::current_num_threads().max(1),
            team: Default::default(),
            state: Default::default(),
        }
    }

    /// Runs `f` on the calling thread with its parallel loops on the team, or on this thread
    /// alone when that is faster for decode steps (`decode`), measured as described on
    /// [`Threads`].
    pub fn run<R>(&self, decode: bool, f: impl FnOnce() -> R) -> R {
        let team = self.team.get_or_init(|| Team::new(self.size));
        if !decode || team.size() == 1 {
            return with_team(Some(team), f);
        }
        let (mode, counted) = self.pick();
        let t0 = std::time::Instant::now();
        let r = with_team((mode == 0).then_some(team), f);
        if counted {
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            // A probe's first counted step replaces the stale average of its mode, so a mode
            // that became faster wins at once instead of after the back-off's longer waits.
            let fresh = std::mem::take(&mut s.fresh[mode]);
            let e = &mut s.ema_ms[mode];
            *e = if *e == 0.0 || fresh {
                ms
            } else {
                0.5 * *e + 0.5 * ms
            };
        }
        r
    }

    /// The mode for the next step and whether its time counts.
    fn pick(&self) -> (usize, bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.probe_left > 0 {
            s.probe_left -= 1;
            return (s.probe_mode, s.probe_left < PROBE_LEN - 1);
        }
        let [pool, one] = s.ema_ms;
        let best = usize::from(one > 0.0 && (pool == 0.0 || one < pool));
        if best != s.current {
            // A new mode (after a probe, or the one in use got slower): probe soon.
            s.current = best;
            s.interval = PROBE_EVERY;
            s.probed = false;
        } else if std::mem::take(&mut s.probed) {
            let clearly_slower = s.ema_ms[1 - best] > BACKOFF_MARGIN * s.ema_ms[best];
            s.interval = if clearly_slower {
                (s.interval.max(PROBE_EVERY) * 2).min(MAX_PROBE_EVERY)
            } else {
                PROBE_EVERY
            };
        }
        s.since_probe += 1;
        if s.since_probe >= s.interval.max(PROBE_EVERY) {
            s.probed = true;
            s.fresh[1 - best] = true;
            s.since_probe = 0;
            s.probe_mode = 1 - best;
            s.probe_left = PROBE_LEN - 1;
            return (1 - best, false);
        }
        (best, true)
    }
}

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

/// Queries per register block of the attention micro-kernels: `QB x 2` accumulators of 8
/// lanes, plus two operand registers, fit AVX2's 16.
const QB: usize = 6;

/// `s[qi * ld + p] = sum_d q[qi * hd + d] * k[p][d]` for `qi < nq` and every position `p` of
/// the key blocks covering `0..n`, with `kt` in blocks `[.., hd, KEY_BLOCK]` and
/// `ld >= n` rounded up to a block.
fn scores_generic(kt: &[u16], hd: usize, q: &[f32], nq: usize, n: usize, s: &mut [f32], ld: usize) {
    for b in 0..n.div_ceil(KEY_BLOCK) {
        let blk = &kt[b * hd * KEY_BLOCK..(b + 1) * hd * KEY_BLOCK];
        for qi in 0..nq {
            let o = &mut s[qi * ld + b * KEY_BLOCK..qi * ld + (b + 1) * KEY_BLOCK];
            o.fill(0.0);
            for (dd, kr) in blk.chunks_exact(KEY_BLOCK).enumerate() {
                axpy_h(o, q[qi * hd + dd], kr);
            }
        }
    }
}

/// `o[qi * hd + d] = sum_p w[qi * ld + p] * v[p * hd + d]` for `qi < nq`, `p < n`.
fn weighted_generic(
    v: &[u16],
    hd: usize,
    w: &[f32],
    ld: usize,
    nq: usize,
    n: usize,
    o: &mut [f32],
) {
    o[..nq * hd].fill(0.0);
    for p in 0..n {
        let vr = &v[p * hd..(p + 1) * hd];
        for qi in 0..nq {
            axpy_h(&mut o[qi * hd..(qi + 1) * hd], w[qi * ld + p], vr);
        }
    }
}

/// The SIMD scores loop: `block(b_ptr, out_ptr, count)` computes `count` consecutive key
/// blocks (16 positions each; 2 at a time with `pairs`, else 1) for the `nq` queries of `q`
/// into `out_ptr` (rows `ld` apart), with the keys [`ATTN_AHEAD`] blocks ahead prefetched (and
/// the values `v` of those positions, when given, into L2).
///
/// # Safety
/// `nq <= QB`; slice bounds as in [`scores_generic`]; `block` is safe to call on this CPU.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn scores_blocks(
    kt: &[u16],
    hd: usize,
    q: &[f32],
    nq: usize,
    n: usize,
    s: &mut [f32],
    ld: usize,
    v: Option<&[u16]>,
    pairs: bool,
    block: impl Fn(*const u16, *mut f32, usize),
) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0, _MM_HINT_T1};
    let nb = n.div_ceil(KEY_BLOCK);
    debug_assert!(nq <= QB && q.len() >= nq * hd && s.len() >= (nq - 1) * ld + nb * KEY_BLOCK);
    debug_assert!(kt.len() >= nb * hd * KEY_BLOCK);
    let (ktp, sp) = (kt.as_ptr(), s.as_mut_ptr());
    // A key block and the 16 value rows of the same positions take `hd * 32` bytes each.
    let lines = hd * KEY_BLOCK * 2 / 64;
    let fetch = |b: usize| {
        if b >= nb {
            return;
        }
        let kb = ktp.wrapping_add(b * hd * KEY_BLOCK) as *const i8;
        for l in 0..lines {
            // SAFETY: a prefetch is a hint and never faults; the address is only computed.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(kb.wrapping_add(l * 64)) };
        }
        if let Some(v) = v {
            let vb = v.as_ptr().wrapping_add(b * KEY_BLOCK * hd) as *const i8;
            for l in 0..lines {
                // SAFETY: as above.
                unsafe { _mm_prefetch::<_MM_HINT_T1>(vb.wrapping_add(l * 64)) };
            }
        }
    };
    for b in 0..ATTN_AHEAD {
        fetch(b);
    }
    let mut b = 0;
    while b < nb {
        let count = if pairs && b + 1 < nb { 2 } else { 1 };
        for i in 0..count {
            fetch(b + i + ATTN_AHEAD);
        }
        // kk runs over the head dimension: rows of 16 positions, contiguous in the block.
        block(ktp.add(b * hd * KEY_BLOCK), sp.add(b * KEY_BLOCK), count);
        b += count;
    }
}

/// Key blocks the scores loop prefetches ahead of the one it computes (with the values of the
/// same positions, into L2 for the weighted sum that follows): 3 blocks are 6 KiB of keys at
/// head_dim 64, the distance the matmul kernels use (`kernels::x86::PREFETCH_BYTES`). Why:
/// a decode task reads 256 to a few thousand positions of one head, too short a run for the
/// hardware prefetchers to get ahead.
const ATTN_AHEAD: usize = 3;

/// AVX2 [`scores_generic`]: one key block (16 positions) x up to [`QB`] queries per
/// register block. With `v` (this task's values), also prefetches the values of the positions
/// ahead (see [`ATTN_AHEAD`]).
///
/// # Safety
/// AVX2, FMA and F16C; `nq <= QB`; `hd % 16 == 0`; slice bounds as in [`scores_generic`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
#[allow(clippy::too_many_arguments)]
unsafe fn scores_x86(
    kt: &[u16],
    hd: usize,
    q: &[f32],
    nq: usize,
    n: usize,
    s: &mut [f32],
    ld: usize,
    v: Option<&[u16]>,
) {
    let qp = q.as_ptr();
    // SAFETY (closure): this function's features; pointers as checked in `scores_blocks`.
    scores_blocks(kt, hd, q, nq, n, s, ld, v, false, |kb, out, _| unsafe {
        outer16(nq, qp, hd, kb, KEY_BLOCK, hd, out, ld)
    });
}

/// AVX2 [`weighted_generic`]: 16 output dims x up to [`QB`] queries per register block.
///
/// # Safety
/// AVX2, FMA and F16C; `nq <= QB`; `hd % 16 == 0`; slice bounds as in [`weighted_generic`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn weighted_x86(
    v: &[u16],
    hd: usize,
    w: &[f32],
    ld: usize,
    nq: usize,
    n: usize,
    o: &mut [f32],
) {
    debug_assert!(nq <= QB && hd.is_multiple_of(16) && v.len() >= n * hd);
    let (vp, wp, op) = (v.as_ptr(), w.as_ptr(), o.as_mut_ptr());
    let mut d0 = 0;
    while d0 < hd {
        // Output dims d0..d0+16: kk runs over positions (rows of the values).
        outer16(nq, wp, ld, vp.add(d0), hd, n, op.add(d0), hd);
        d0 += 16;
    }
}

/// AVX-512 [`scores_generic`]: one key block (16 positions, one register) x up to [`QB`]
/// queries; `v` as in [`scores_x86`].
///
/// # Safety
/// AVX-512F, FMA and F16C; `nq <= QB`; `hd % 16 == 0`; slice bounds as in [`scores_generic`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
#[allow(clippy::too_many_arguments)]
unsafe fn scores_x86_512(
    kt: &[u16],
    hd: usize,
    q: &[f32],
    nq: usize,
    n: usize,
    s: &mut [f32],
    ld: usize,
    v: Option<&[u16]>,
) {
    let qp = q.as_ptr();
    // SAFETY (closure): this function's features; pointers as checked in `scores_blocks`.
    // Two key blocks per register pass: 2 x nq accumulators keep both FMA ports busy (one
    // block's nq <= 6 chains wait on the FMA latency); each score sums in the same order.
    let next = hd * KEY_BLOCK;
    scores_blocks(kt, hd, q, nq, n, s, ld, v, true, |kb, out, count| unsafe {
        if count == 2 {
            outer_wide::<2>(nq, qp, hd, kb, KEY_BLOCK, next, hd, out, ld)
        } else {
            outer_wide::<1>(nq, qp, hd, kb, KEY_BLOCK, next, hd, out, ld)
        }
    });
}

/// AVX-512 [`weighted_generic`]: up to 64 output dims (4 registers) x up to [`QB`] queries per
/// pass over the values, so a head of 64 dims reads each value row once.
///
/// # Safety
/// AVX-512F, FMA and F16C; `nq <= QB`; `hd % 16 == 0`; slice bounds as in
/// [`weighted_generic`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
unsafe fn weighted_x86_512(
    v: &[u16],
    hd: usize,
    w: &[f32],
    ld: usize,
    nq: usize,
    n: usize,
    o: &mut [f32],
) {
    debug_assert!(nq <= QB && hd.is_multiple_of(16) && v.len() >= n * hd);
    let (vp, wp, op) = (v.as_ptr(), w.as_ptr(), o.as_mut_ptr());
    let mut d0 = 0;
    while d0 < hd {
        let (vb, ob) = (vp.add(d0), op.add(d0));
        match (hd - d0) / 16 {
            1 => outer_wide::<1>(nq, wp, ld, vb, hd, 16, n, ob, hd),
            2 => outer_wide::<2>(nq, wp, ld, vb, hd, 16, n, ob, hd),
            3 => outer_wide::<3>(nq, wp, ld, vb, hd, 16, n, ob, hd),
            _ => outer_wide::<4>(nq, wp, ld, vb, hd, 16, n, ob, hd),
        }
        d0 += 64.min(hd - d0);
    }
}

/// [`outer16`] on 512-bit vectors for `16 * R` lanes: `out[qi * o_stride + 16 r + l] =
/// sum_{kk < kn} a[qi * a_stride + kk] * b[kk * b_stride + r * r_stride + l]` for `qi < nq` (at
/// most [`QB`]), `r < R` and `l < 16`, `b` in f16; `nq x R` accumulators stay in registers
/// over all of `kk`.
///
/// # Safety
/// AVX-512F, FMA and F16C; every index above in bounds of its pointer.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
unsafe fn outer_wide<const R: usize>(
    nq: usize,
    a: *const f32,
    a_stride: usize,
    b: *const u16,
    b_stride: usize,
    r_stride: usize,
    kn: usize,
    out: *mut f32,
    o_stride: usize,
) {
    macro_rules! go {
        ($n:literal) => {
            outer_wide_n::<$n, R>(a, a_stride, b, b_stride, r_stride, kn, out, o_stride)
        };
    }
    match nq {
        1 => go!(1),
        2 => go!(2),
        3 => go!(3),
        4 => go!(4),
        5 => go!(5),
        _ => go!(6),
    }
}

/// [`outer_wide`] for `N` queries.
///
/// # Safety
/// As [`outer_wide`].
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
#[allow(clippy::too_many_arguments)]
unsafe fn outer_wide_n<const N: usize, const R: usize>(
    a: *const f32,
    a_stride: usize,
    b: *const u16,
    b_stride: usize,
    r_stride: usize,
    kn: usize,
    out: *mut f32,
    o_stride: usize,
) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); R]; N];
    for kk in 0..kn {
        let row = b.add(kk * b_stride);
        let mut bv = [_mm512_setzero_ps(); R];
        for (r, x) in bv.iter_mut().enumerate() {
            *x = _mm512_cvtph_ps(_mm256_loadu_si256(row.add(r * r_stride) as *const __m256i));
        }
        for (qi, accq) in acc.iter_mut().enumerate() {
            let x = _mm512_set1_ps(*a.add(qi * a_stride + kk));
            for (r, ar) in accq.iter_mut().enumerate() {
                *ar = _mm512_fmadd_ps(x, bv[r], *ar);
            }
        }
    }
    for (qi, accq) in acc.iter().enumerate() {
        for (r, ar) in accq.iter().enumerate() {
            _mm512_storeu_ps(out.add(qi * o_stride + 16 * r), *ar);
        }
    }
}

/// The register block both attention products share: for `qi < nq` (at most [`QB`]) and 16
/// lanes `l`, `out[qi * o_stride + l] = sum_{kk < kn} a[qi * a_stride + kk] * b[kk * b_stride
/// + l]`, with `b` in f16. `nq x 2` accumulators of 8 lanes stay in registers over all of `kk`
/// (one instance per `nq`, so the accumulator array is a compile-time size).
///
/// # Safety
/// AVX2, FMA and F16C; every index above in bounds of its pointer.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn outer16(
    nq: usize,
    a: *const f32,
    a_stride: usize,
    b: *const u16,
    b_stride: usize,
    kn: usize,
    out: *mut f32,
    o_stride: usize,
) {
    macro_rules! go {
        ($n:literal) => {
            outer16_n::<$n>(a, a_stride, b, b_stride, kn, out, o_stride)
        };
    }
    match nq {
        1 => go!(1),
        2 => go!(2),
        3 => go!(3),
        4 => go!(4),
        5 => go!(5),
        _ => go!(6),
    }
}

/// [`outer16`] for `N` queries.
///
/// # Safety
/// As [`outer16`].
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn outer16_n<const N: usize>(
    a: *const f32,
    a_stride: usize,
    b: *const u16,
    b_stride: usize,
    kn: usize,
    out: *mut f32,
    o_stride: usize,
) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm256_setzero_ps(); 2]; N];
    for kk in 0..kn {
        let row = b.add(kk * b_stride);
        let b0 = _mm256_cvtph_ps(_mm_loadu_si128(row as *const __m128i));
        let b1 = _mm256_cvtph_ps(_mm_loadu_si128(row.add(8) as *const __m128i));
        for (qi, r) in acc.iter_mut().enumerate() {
            let x = _mm256_broadcast_ss(&*a.add(qi * a_stride + kk));
            r[0] = _mm256_fmadd_ps(x, b0, r[0]);
            r[1] = _mm256_fmadd_ps(x, b1, r[1]);
        }
    }
    for (qi, r) in acc.iter().enumerate() {
        _mm256_storeu_ps(out.add(qi * o_stride), r[0]);
        _mm256_storeu_ps(out.add(qi * o_stride + 8), r[1]);
    }
}

/// `y += a * x` for f16 `x` (same length).
#[inline(always)]
fn axpy_h(y: &mut [f32], a: f32, x: &[u16]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi = a.mul_add(f16::from_bits(xi).to_f32(), *yi);
    }
}

/// `y += a * x` (same length).
#[inline(always)]
fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi = a.mul_add(xi, *yi);
    }
}

/// [`axpy`] built with FMA: the same fused products (one rounding each), as vector
/// instructions; without the feature `mul_add` compiles to a call to the `fmaf` routine per
/// element. In the split merge of a decode step that call cost ~8 µs per layer at 2,048 deep
/// on tiny (0.24 ms per step; 0.05 ms with this).
///
/// # Safety
/// FMA and AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn axpy_fma(y: &mut [f32], a: f32, x: &[f32]) {
    axpy(y, a, x);
}

/// Replaces a row of scores by `e^(x - max)` and returns `(max, sum)`: the unnormalized
/// softmax, normalized after the weighted sum of values (or after merging splits).
#[inline(always)]
fn exp_rows(row: &mut [f32]) -> (f32, f32) {
    let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let mut sum = 0f32;
    for v in row.iter_mut() {
        *v = exp_approx(*v - max);
        sum += *v;
    }
    (max, sum)
}

/// AVX2 [`exp_rows`]: 8 lanes at a time with the same exponential as [`exp_approx`].
///
/// # Safety
/// AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_rows_x86(row: &mut [f32]) -> (f32, f32) {
    use std::arch::x86_64::*;
    let n = row.len();
    let p = row.as_mut_ptr();
    let body = n / 8 * 8;
    let mut mv = _mm256_set1_ps(f32::NEG_INFINITY);
    for i in (0..body).step_by(8) {
        mv = _mm256_max_ps(mv, _mm256_loadu_ps(p.add(i)));
    }
    let mut lanes = [0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), mv);
    let max = lanes
        .iter()
        .chain(&row[body..])
        .fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let mx = _mm256_set1_ps(max);
    let mut sv = _mm256_setzero_ps();
    for i in (0..body).step_by(8) {
        let e = exp8(_mm256_sub_ps(_mm256_loadu_ps(p.add(i)), mx));
        _mm256_storeu_ps(p.add(i), e);
        sv = _mm256_add_ps(sv, e);
    }
    _mm256_storeu_ps(lanes.as_mut_ptr(), sv);
    let mut sum: f32 = lanes.iter().sum();
    for v in &mut row[body..] {
        *v = exp_approx(*v - max);
        sum += *v;
    }
    (max, sum)
}

/// [`exp_approx`] on 8 lanes (same constants and steps).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp8(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0)), _mm256_setzero_ps());
    let n = _mm256_round_ps(
        _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E)),
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC,
    );
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693_359_4), x);
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.121_944_4e-4), r);
    let mut p = _mm256_set1_ps(1.987_569_1e-4);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.398_2e-3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.333_452e-3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.166_579_6e-2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.166_666_65));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5));
    let er = _mm256_add_ps(
        _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r),
        _mm256_set1_ps(1.0),
    );
    let e = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)),
        23,
    );
    _mm256_mul_ps(er, _mm256_castsi256_ps(e))
}

/// One key block's online-softmax step for one query head (Milakov & Gimelshein 2018,
/// "Online normalizer calculation for softmax"): the scores `s` of the block's positions in
/// `mask` raise the running maximum `m` (the output accumulators `o` and the running sum `l`
/// are rescaled by `e^(m_old - m)` when it grows); returns the block's weights `e^(s - m)`
/// (0 outside `mask`), already added to `l`.
///
/// # Safety
/// AVX-512F, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) unsafe fn softmax_block(
    s: std::arch::x86_64::__m512,
    mask: std::arch::x86_64::__mmask16,
    m: &mut f32,
    l: &mut std::arch::x86_64::__m512,
    o: &mut [std::arch::x86_64::__m512],
) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let sv = _mm512_mask_blend_ps(mask, _mm512_set1_ps(f32::NEG_INFINITY), s);
    let bm = _mm512_reduce_max_ps(sv);
    if bm > *m {
        let a = _mm512_set1_ps((*m - bm).exp());
        for r in o.iter_mut() {
            *r = _mm512_mul_ps(*r, a);
        }
        *l = _mm512_mul_ps(*l, a);
        *m = bm;
    }
    let e = _mm512_maskz_mov_ps(mask, exp16(_mm512_sub_ps(sv, _mm512_set1_ps(*m))));
    *l = _mm512_add_ps(*l, e);
    e
}

/// [`exp_approx`] on 16 lanes: [`exp8`] on each half.
///
/// # Safety
/// AVX-512F, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn exp16(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let lo = exp8(_mm512_castps512_ps256(x));
    let hi = exp8(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(
        _mm512_castps_pd(x),
    )));
    _mm512_castpd_ps(_mm512_insertf64x4::<1>(
        _mm512_castpd256_pd512(_mm256_castps_pd(lo)),
        _mm256_castps_pd(hi),
    ))
}

/// `e^x` for `x <= 0` in branch-free f32 arithmetic the compiler can vectorize: `x = n ln2 +
/// r`, `e^r` by the degree-7 minimax polynomial of Cephes' `expf` (S. Moshier, Cephes Math
/// Library 2.2, `expf.c`; relative error about 1e-7 on |r| <= ln2/2), times `2^n` built in the
/// exponent bits. Inputs below -87 return about 1e-38 (never a NaN or a denormal).
#[inline(always)]
fn exp_approx(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const C1: f32 = 0.693_359_4; // ln2, high part (Cephes)
    const C2: f32 = -2.121_944_4e-4; // ln2, low part (Cephes)
    let x = x.clamp(-87.0, 0.0);
    let n = (x * LOG2E).round_ties_even();
    let r = (-n).mul_add(C1, x);
    let r = (-n).mul_add(C2, r);
    let mut p = 1.987_569_1e-4f32;
    p = p.mul_add(r, 1.398_2e-3);
    p = p.mul_add(r, 8.333_452e-3);
    p = p.mul_add(r, 4.166_579_6e-2);
    p = p.mul_add(r, 0.166_666_65);
    p = p.mul_add(r, 0.5);
    let er = p.mul_add(r * r, r) + 1.0;
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    er * scale
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
mod tests {
    use super::*;

    #[test]
    fn exp_approx_matches_std_on_the_softmax_range() {
        let mut worst = 0f32;
        let mut x = -87.0f32;
        while x <= 0.0 {
            let (a, b) = (exp_approx(x), x.exp());
            worst = worst.max(((a - b) / b).abs());
            x += 0.0137;
        }
        assert!(worst < 1e-6, "relative error {worst}");
        assert_eq!(exp_approx(0.0), 1.0);
        assert!(exp_approx(-1000.0) >= 0.0 && exp_approx(-1000.0) < 1e-37);
        assert!(exp_approx(f32::NEG_INFINITY) >= 0.0);
    }

    #[test]
    fn swiglu_split_on_a_team_equals_one_serial_pass() {
        let team = Team::new(2);
        // 7 rows of 37: parts do not end on rows, and the serial pass has a tail.
        let (rows, n) = (7, 37);
        let x: Vec<f32> = (0..rows * n)
            .map(|i| (i as f32 * 0.37).sin() * 6.0)
            .collect();
        let u: Vec<f32> = (0..rows * n).map(|i| (i as f32 * 0.11).cos()).collect();
        for simd in [false, simd_for(Isa::Avx2)] {
            let mut want = x.clone();
            swiglu(&mut want, &u, simd);
            let mut got = x.clone();
            with_team(Some(&team), || swiglu_rows(&mut got, &u, simd, rows));
            assert_eq!(got, want, "simd={simd}");
        }
    }

    #[test]
    fn swiglu_matches_the_definition_on_both_paths() {
        let x: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 0.9).collect();
        let u: Vec<f32> = (0..37).map(|i| 0.5 + i as f32 * 0.01).collect();
        let want: Vec<f32> = x
            .iter()
            .zip(&u)
            .map(|(&a, &b)| a / (1.0 + (-a).exp()) * b)
            .collect();
        for simd in [false, simd_for(Isa::Avx2)] {
            let mut g = x.clone();
            swiglu(&mut g, &u, simd);
            for (a, b) in g.iter().zip(&want) {
                assert!(
                    (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                    "simd={simd}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn thread_chooser_probes_and_switches_to_the_faster_mode() {
        let th = Threads::new();
        // Unmeasured: the pool; after PROBE_EVERY steps, a probe of one thread whose first
        // step is not counted.
        for _ in 0..PROBE_EVERY - 1 {
            assert_eq!(th.pick(), (0, true));
        }
        assert_eq!(th.pick(), (1, false));
        for _ in 1..PROBE_LEN {
            assert_eq!(th.pick(), (1, true));
        }
        // One thread measured faster: it becomes the mode, and the pool gets probed.
        th.state.lock().unwrap().ema_ms = [20.0, 12.0];
        assert_eq!(th.pick(), (1, true));
        for _ in 1..PROBE_EVERY - 1 {
            th.pick();
        }
        assert_eq!(th.pick(), (0, false));
        // The pool stays clearly slower: each probe waits twice as long as the last, up to
        // MAX_PROBE_EVERY.
        let mut gaps = Vec::new();
        let mut since = 0;
        for _ in 0..4000 {
            let (mode, _) = th.pick();
            if mode == 0 {
                if since > 0 {
                    gaps.push(since);
                }
                since = 0;
            } else {
                since += 1;
            }
        }
        // (A gap counts the steps in the chosen mode: the interval less the probe's first.)
        assert_eq!(gaps[..4], [95, 191, 383, 383]);
        // The pool measured faster: it takes over and probes come every PROBE_EVERY again.
        th.state.lock().unwrap().ema_ms = [10.0, 12.0];
        let modes: Vec<usize> = (0..3 * PROBE_EVERY + PROBE_LEN)
            .map(|_| th.pick().0)
            .collect();
        let probes = modes.iter().filter(|&&m| m == 1).count();
        assert!(
            (2 * PROBE_LEN..=3 * PROBE_LEN).contains(&probes),
            "{probes} one-thread probe steps"
        );
        // The other mode only slightly slower (under BACKOFF_MARGIN): probes stay every
        // PROBE_EVERY steps.
        th.state.lock().unwrap().ema_ms = [10.0, 11.0];
        let modes: Vec<usize> = (0..6 * PROBE_EVERY).map(|_| th.pick().0).collect();
        let probes = modes.iter().filter(|&&m| m == 1).count();
        assert!(probes >= 5 * PROBE_LEN, "{probes} one-thread probe steps");
    }

    #[test]
    fn simd_exp_rows_equal_scalar() {
        if !Isa::available().contains(&Isa::Avx2) {
            return;
        }
        for n in [1usize, 7, 8, 9, 31, 200] {
            let row: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.37)
                .collect();
            let mut a = row.clone();
            let mut b = row.clone();
            let (ma, la) = exp_rows(&mut a);
            // SAFETY: AVX2 checked above.
            let (mb, lb) = unsafe { exp_rows_x86(&mut b) };
            assert_eq!(ma, mb);
            assert!((la - lb).abs() <= 1e-5 * la, "n={n}: sum {la} vs {lb}");
            for (x, y) in a.iter().zip(&b) {
                assert!(
                    (x - y).abs() <= 1e-6 * x.abs().max(1e-30),
                    "n={n}: {x} vs {y}"
                );
            }
        }
    }

    /// Reference attention: plain loops over the standard layout.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        q: &[f32],
        keys: &[f32],
        vals: &[f32],
        nh: usize,
        kvh: usize,
        hd: usize,
        pos: usize,
        t: usize,
    ) -> Vec<f32> {
        let mut y = vec![0f32; t * nh * hd];
        for h in 0..nh {
            let g = h / (nh / kvh);
            for i in 0..t {
                let n = pos + i + 1;
                let qv = &q[(i * nh + h) * hd..(i * nh + h + 1) * hd];
                let mut s: Vec<f32> = (0..n)
                    .map(|p| {
                        let kv = &keys[(p * kvh + g) * hd..(p * kvh + g + 1) * hd];
                        qv.iter().zip(kv).map(|(a, b)| a * b).sum::<f32>() / (hd as f32).sqrt()
                    })
                    .collect();
                let m = s.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                let z: f32 = s
                    .iter_mut()
                    .map(|v| {
                        *v = (*v - m).exp();
                        *v
                    })
                    .sum();
                for p in 0..n {
                    for dd in 0..hd {
                        y[(i * nh + h) * hd + dd] += s[p] / z * vals[(p * kvh + g) * hd + dd];
                    }
                }
            }
        }
        y
    }

    #[test]
    fn attention_matches_naive_with_gqa_and_a_chunk_after_a_prefix() {
        let cfg = ModelConfig {
            arch: "llama".into(),
            n_layer: 1,
            n_embd: 4 * 32,
            n_head: 4,
            n_head_kv: 2,
            head_dim: 32,
            train_ctx: 64,
            rope_base: 10_000.0,
            rms_eps: 1e-5,
            rope_interleaved: false,
            tied_embeddings: true,
            vocab: 1,
        };
        // (13, 11): 24 positions, one 16-wide SIMD block and a tail, 8 queries per task (two
        // register blocks). (1100, 1) and (1090, 3): decode-sized calls whose positions are
        // split across tasks and merged (2 splits); (600, 1): one split.
        // (1600, 1, 1605): a context that is not whole key blocks, three splits.
        for (pos, t, ctx) in [
            (13usize, 11usize, 40usize),
            (1100, 1, 1140),
            (1090, 3, 1100),
            (600, 1, 640),
            (1600, 1, 1605),
        ] {
            attention_case(&cfg, pos, t, ctx);
        }
        // SmolLM2's shape (3 query heads per KV head) and Qwen2.5-0.5B's (7), head_dim 64:
        // the one-pass decode kernel's instances, at a decode step on a partial last key
        // block (split in two and merged), a step inside the first block, and a prefill chunk.
        for (n_head, n_head_kv) in [(9, 3), (14, 2)] {
            let cfg = ModelConfig {
                n_embd: n_head * 64,
                n_head,
                n_head_kv,
                head_dim: 64,
                ..cfg.clone()
            };
            for (pos, t, ctx) in [(1033usize, 1usize, 1060usize), (5, 1, 16), (40, 20, 64)] {
                attention_case(&cfg, pos, t, ctx);
            }
        }
    }

    fn attention_case(cfg: &ModelConfig, pos: usize, t: usize, ctx: usize) {
        let total = pos + t;
        let mut seed = 1u32;
        let mut rnd = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let kvw = cfg.n_head_kv * cfg.head_dim;
        let keys: Vec<f32> = (0..total * kvw).map(|_| rnd() * 4.0).collect();
        let vals: Vec<f32> = (0..total * kvw).map(|_| rnd()).collect();
        let q: Vec<f32> = (0..t * cfg.n_head * cfg.head_dim)
            .map(|_| rnd() * 4.0)
            .collect();
        for (simd, wide, q8) in [
            (false, false, false),
            (true, false, false),
            (true, true, false),
            (true, true, true),
        ] {
            if simd && !(Isa::available().contains(&Isa::Avx2) && simd_for(Isa::Avx2)) {
                continue;
            }
            if wide && !Isa::available().iter().any(|i| i.avx512()) {
                continue;
            }
            let mut layer = RawLayer::new(cfg, ctx, q8);
            write_kv(
                &mut layer,
                &keys[..pos * kvw],
                &vals[..pos * kvw],
                0,
                pos,
                cfg.n_head_kv,
                cfg.head_dim,
                ctx,
            );
            write_kv(
                &mut layer,
                &keys[pos * kvw..],
                &vals[pos * kvw..],
                pos,
                t,
                cfg.n_head_kv,
                cfg.head_dim,
                ctx,
            );
            let model = CpuModel {
                blocks: vec![],
                out_norm: vec![],
                output: dummy_linear(),
                cos: vec![],
                sin: vec![],
                ctx,
                simd,
                wide,
            };
            let mut y = vec![0f32; q.len()];
            model.attention(cfg, &q, &layer, pos, t, &mut y);
            // Bit-identical on one thread and on a compute team: the work split never depends
            // on the thread count.
            let mut y1 = vec![0f32; q.len()];
            with_team(None, || model.attention(cfg, &q, &layer, pos, t, &mut y1));
            assert_eq!(
                y, y1,
                "pos={pos} t={t} simd={simd} wide={wide}: thread count changed the result"
            );
            let team = Team::new(3);
            with_team(Some(&team), || {
                model.attention(cfg, &q, &layer, pos, t, &mut y1)
            });
            assert_eq!(
                y, y1,
                "pos={pos} t={t} simd={simd} wide={wide}: the team changed the result"
            );
            // The cache holds f16: compare with the naive loops on the same rounded values.
            let r16 = |x: &Vec<f32>| -> Vec<f32> {
                x.iter().map(|&v| f16::from_f32(v).to_f32()).collect()
            };
            let (nh, kvh, hd) = (cfg.n_head, cfg.n_head_kv, cfg.head_dim);
            let want = naive(&q, &r16(&keys), &r16(&vals), nh, kvh, hd, pos, t);
            // A one-row call on the 8-bit copy is within its rounding (see `kv8`'s tests for
            // the kernel against its portable form); prefill reads the f16 cache.
            let tol = if q8 && t == 1 { 0.02 } else { 1e-5 };
            for (a, b) in y.iter().zip(&want) {
                assert!(
                    (a - b).abs() < tol,
                    "pos={pos} t={t} simd={simd} wide={wide} q8={q8}: {a} vs {b}"
                );
            }
            // A snapshot of the first `pos` positions restores them exactly.
            let snap = layer.prefix(pos, ctx, hd);
            let mut fresh = RawLayer::new(cfg, ctx, q8);
            fresh.restore(&snap, pos, ctx, hd);
            assert_eq!(fresh.prefix(pos, ctx, hd).kt, snap.kt);
            assert_eq!(fresh.prefix(pos, ctx, hd).v, snap.v);
            assert_eq!(snap.q8.is_some(), q8 && hd % 32 == 0);
            if let (Some(a), Some(b)) = (fresh.prefix(pos, ctx, hd).q8, snap.q8) {
                assert_eq!((a.k, a.ks, a.v, a.vs), (b.k, b.ks, b.v, b.vs));
            }
        }
    }

    fn dummy_linear() -> QLinear {
        use candle_core::quantized::{GgmlDType, QTensor};
        let t =
            candle_core::Tensor::zeros((4, 32), candle_core::DType::F32, &candle_core::Device::Cpu)
                .unwrap();
        let q = QTensor::quantize(&t, GgmlDType::Q8_0).unwrap();
        QLinear::new(&q, Isa::Scalar).unwrap().unwrap()
    }
}
