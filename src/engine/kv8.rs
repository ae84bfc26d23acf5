//! The 8-bit copy of the KV cache that decode steps read (`--kv-decode q8`).
//!
//! Why: a decode step reads every weight and every cached key and value once, so past a few
//! thousand positions the cache's bytes set the step's time (SmolLM2-135M at 2,048 positions:
//! 97 MB of weights, 47 MB of f16 KV). This copy holds each key and value in 8 bits with one
//! f32 scale per 32 values of a position's head (GGUF `Q8_0`'s block: `x = scale * q`, `scale =
//! max|x| / 127`, `q` rounded to nearest), 72 bytes per 64 values instead of 128.
//!
//! The f16 cache ([`super::cpu::RawLayer`]) stays as it is: prefill and the paths without
//! AVX-512 VNNI read it at full precision; only one-row attention (decode steps, and each row of
//! a speculative verification pass, so drafts still do not change the output) reads this copy.
//! The scores then run as 8-bit dot products (`vpdpbusd`) of the key blocks with the query,
//! itself rounded to 8 bits per 32 values as llama.cpp does for a `q8_0` K cache, and the
//! values are widened to f32 for the weighted sum.
//!
//! Layout per layer (`nb = ctx / 16` rounded up; `S = head_dim / 32` scales per position):
//! keys `k[g][p / 16][d / 4][p % 16][d % 4]` as `i8 + 128` (`u8`, the unsigned operand of
//! `vpdpbusd`), key scales `ks[g][p / 16][d / 32][p % 16]`, values `v[g][p][d]` (`i8`), value
//! scales `vs[g][p / 16][d / 32][p % 16]`: a block of 16 positions is one run of each, and one
//! 64-byte load holds 4 dimensions of 16 keys.

/// Values per scale (as GGUF `Q8_0`).
pub(crate) const SUB: usize = 32;
/// Positions per block (the attention kernels' `KEY_BLOCK`).
const BLK: usize = 16;

/// One layer's 8-bit keys and values (layout in the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Kv8Layer {
    /// Keys, `i8 + 128`, `[n_head_kv, nb, head_dim / 4, 16, 4]`.
    pub k: Vec<u8>,
    /// Key scales, `[n_head_kv, nb, head_dim / 32, 16]`.
    pub ks: Vec<f32>,
    /// Values, `[n_head_kv, ctx, head_dim]`.
    pub v: Vec<i8>,
    /// Value scales, `[n_head_kv, nb, head_dim / 32, 16]`.
    pub vs: Vec<f32>,
    /// Positions the buffers are sized for (a multiple of 16).
    ctx: usize,
    hd: usize,
}

/// One KV head's part of a [`Kv8Layer`], from position 0.
#[derive(Clone, Copy)]
pub(crate) struct Kv8Head<'a> {
    pub k: &'a [u8],
    pub ks: &'a [f32],
    pub v: &'a [i8],
    pub vs: &'a [f32],
}

/// Rounds `x` (32 values) to 8 bits: returns the scale (`max|x| / 127`, 0 for all zeros) and
/// `sum(q)`. Rounds half away from zero on `x * 127 / max|x|`, as GGUF's `Q8_0` reference
/// quantizer does. Not the activation quantizer (`kernels::act`, half to even on `x / scale`):
/// trying it here moved a logit of the kernel-path test past its 1.5 bound (1.60), and the
/// corpus fidelity run was measured with this rounding.
pub(crate) fn quantize32(x: &[f32], q: &mut [i8]) -> (f32, i32) {
    debug_assert!(x.len() == SUB && q.len() == SUB);
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let inv = if amax > 0.0 { 127.0 / amax } else { 0.0 };
    let mut sum = 0;
    for (d, &v) in q.iter_mut().zip(x) {
        *d = (v * inv).round().clamp(-127.0, 127.0) as i8;
        sum += *d as i32;
    }
    (amax / 127.0, sum)
}

impl Kv8Layer {
    /// An empty copy for `n_head_kv` heads of `hd` (a multiple of 32) and `ctx` positions:
    /// `n_head_kv * ctx * (2 * hd + 2 * hd / 32 * 4)` bytes (`ctx` rounded up to 16), zeroed
    /// pages committed on first write.
    pub fn new(n_head_kv: usize, hd: usize, ctx: usize) -> Self {
        debug_assert!(hd.is_multiple_of(SUB));
        let ctx = ctx.next_multiple_of(BLK);
        Kv8Layer {
            k: vec![0; n_head_kv * ctx * hd],
            ks: vec![0.0; n_head_kv * ctx * hd / SUB],
            v: vec![0; n_head_kv * ctx * hd],
            vs: vec![0.0; n_head_kv * ctx * hd / SUB],
            ctx,
            hd,
        }
    }

    fn heads(&self) -> usize {
        self.v.len() / (self.ctx * self.hd).max(1)
    }

    /// Head `g`'s buffers.
    pub fn head(&self, g: usize) -> Kv8Head<'_> {
        let (kn, sn) = (self.ctx * self.hd, self.ctx * self.hd / SUB);
        Kv8Head {
            k: &self.k[g * kn..(g + 1) * kn],
            ks: &self.ks[g * sn..(g + 1) * sn],
            v: &self.v[g * kn..(g + 1) * kn],
            vs: &self.vs[g * sn..(g + 1) * sn],
        }
    }

    /// Writes head `g`'s key and value (`hd` values each) at position `p`.
    pub fn write(&mut self, g: usize, p: usize, key: &[f32], val: &[f32]) {
        let hd = self.hd;
        let s = hd / SUB;
        let (kn, sn) = (self.ctx * hd, self.ctx * s);
        let (blk, lane) = (p / BLK, p % BLK);
        let mut q = [0i8; SUB];
        for sub in 0..s {
            let si = g * sn + (blk * s + sub) * BLK + lane;
            self.ks[si] = quantize32(&key[sub * SUB..(sub + 1) * SUB], &mut q).0;
            for (i, &x) in q.iter().enumerate() {
                let d = sub * SUB + i;
                self.k[g * kn + ((blk * hd / 4 + d / 4) * BLK + lane) * 4 + d % 4] =
                    (x as u8) ^ 0x80;
            }
            self.vs[si] = quantize32(&val[sub * SUB..(sub + 1) * SUB], &mut q).0;
            let row = g * kn + p * hd + sub * SUB;
            for (d, &x) in self.v[row..row + SUB].iter_mut().zip(&q) {
                *d = x;
            }
        }
    }

    /// Copies positions `0..n` (whole blocks of 16) into a compact copy sized for them.
    pub fn prefix(&self, n: usize) -> Kv8Layer {
        let mut snap = Kv8Layer::new(self.heads(), self.hd, n);
        snap.copy_from(self, n);
        snap
    }

    /// Writes a copy made by [`Kv8Layer::prefix`] (of `n` positions) back at `0..n`.
    pub fn restore(&mut self, snap: &Kv8Layer, n: usize) {
        self.copy_from(snap, n);
    }

    /// Copies positions `0..n` (the blocks covering them) of every head from `src`.
    fn copy_from(&mut self, src: &Kv8Layer, n: usize) {
        let hd = self.hd;
        let nb = n.div_ceil(BLK);
        let (kb, sb) = (nb * BLK * hd, nb * BLK * hd / SUB);
        for g in 0..self.heads() {
            let (dk, ds) = (g * self.ctx * hd, g * self.ctx * hd / SUB);
            let (sk, ss) = (g * src.ctx * hd, g * src.ctx * hd / SUB);
            self.k[dk..dk + kb].copy_from_slice(&src.k[sk..sk + kb]);
            self.v[dk..dk + n * hd].copy_from_slice(&src.v[sk..sk + n * hd]);
            self.ks[ds..ds + sb].copy_from_slice(&src.ks[ss..ss + sb]);
            self.vs[ds..ds + sb].copy_from_slice(&src.vs[ss..ss + sb]);
        }
    }

    /// The buffers as (address, bytes), for committing their pages and moving them onto huge
    /// pages.
    pub fn buffers(&mut self) -> [(usize, usize); 4] {
        [
            (self.k.as_mut_ptr() as usize, self.k.len()),
            (self.ks.as_mut_ptr() as usize, self.ks.len() * 4),
            (self.v.as_mut_ptr() as usize, self.v.len()),
            (self.vs.as_mut_ptr() as usize, self.vs.len() * 4),
        ]
    }
}

/// One query head rounded to 8 bits per 32 values: `q4[d / 4]` packs dimensions `d..d + 4`,
/// `scale[s]` and `corr[s] = 128 * sum(q)` per 32 (the offset of the `u8` keys). Made once
/// per attention call for every head (`CpuModel::attention`), shared by the call's tasks.
pub(crate) struct Q8Query {
    q4: [i32; 32],
    scale: [f32; 4],
    corr: [i32; 4],
}

impl Q8Query {
    /// `q * mul` (head_dim values, at most 128) rounded.
    pub(crate) fn new(q: &[f32], mul: f32) -> Self {
        let mut out = Q8Query {
            q4: [0; 32],
            scale: [0.0; 4],
            corr: [0; 4],
        };
        let mut x = [0f32; SUB];
        let mut b = [0i8; SUB];
        for (s, chunk) in q.chunks_exact(SUB).enumerate() {
            for (d, &v) in x.iter_mut().zip(chunk) {
                *d = v * mul;
            }
            let (scale, sum) = quantize32(&x, &mut b);
            out.scale[s] = scale;
            out.corr[s] = 128 * sum;
            for (i, w) in b.chunks_exact(4).enumerate() {
                out.q4[s * 8 + i] =
                    i32::from_le_bytes([w[0] as u8, w[1] as u8, w[2] as u8, w[3] as u8]);
            }
        }
        out
    }
}

/// The query heads of `q` (`[heads, hd]`) times `scale`, rounded: one [`Q8Query`] each.
pub(crate) fn queries(q: &[f32], hd: usize, scale: f32) -> Vec<Q8Query> {
    q.chunks_exact(hd).map(|h| Q8Query::new(h, scale)).collect()
}

/// One-row attention of `n_rep` query heads (`qs`: their rounded, scaled queries) over positions
/// `c0..c1` of one KV head's 8-bit copy: writes per head, into `out(head)`, the unnormalized
/// output (`hd` values), the scores' maximum and the sum of `e^(s - max)` (the split-K partials
/// of `CpuModel::attention`). Returns false, doing nothing, for shapes it has no instance for
/// (see `one_row_shapes`).
///
/// # Safety
/// AVX-512F, BW, VNNI, AVX2 and FMA; `c0` a multiple of 16; `kv` covers `c1` positions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn attend<'o>(
    qs: &[Q8Query],
    hd: usize,
    kv: Kv8Head<'_>,
    c0: usize,
    c1: usize,
    out: &mut impl FnMut(usize) -> &'o mut [f32],
) -> bool {
    macro_rules! go {
        ($n:literal, $r:literal) => {
            fused::<$n, $r>(qs, kv, c0, c1, out)
        };
    }
    super::one_row_shapes!(qs.len(), hd, go);
    true
}

/// Blocks ahead whose lines are requested during a block's scores (as the f16 kernel's).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const AHEAD: usize = 3;

/// [`attend`] for `N` query heads and `R * 16 = head_dim`.
///
/// Per block of 16 positions: scores by `vpdpbusd` (one 64-byte load is 4 dimensions of the 16
/// keys; per 32 dimensions the integer sums, less the keys' offset, times the query's and the
/// keys' scales), an online-softmax update (Milakov & Gimelshein 2018) and the weighted sum of
/// the values widened to f32, each value row's weights pre-multiplied by its scales. The lines
/// of the block [`AHEAD`] blocks on are requested, one key and one value line per 4
/// dimensions, during the scores.
///
/// # Safety
/// As [`attend`].
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma")]
#[allow(clippy::needless_range_loop)] // indexes run over several arrays at once
unsafe fn fused<'o, const N: usize, const R: usize>(
    qs: &[Q8Query],
    kv: Kv8Head<'_>,
    c0: usize,
    c1: usize,
    out: &mut impl FnMut(usize) -> &'o mut [f32],
) {
    use std::arch::x86_64::*;
    let hd = 16 * R;
    let s_n = R / 2; // scales per position
    let groups = hd / 4;
    debug_assert!(c0.is_multiple_of(BLK) && c1 >= c0);
    let n = c1 - c0;
    let nb = n.div_ceil(BLK);
    debug_assert!(kv.k.len() >= (c0 + nb * BLK) * hd && kv.v.len() >= c1 * hd);
    debug_assert_eq!(qs.len(), N);
    let kp = kv.k.as_ptr().add(c0 * hd);
    let ksp = kv.ks.as_ptr().add(c0 * s_n);
    let vp = kv.v.as_ptr().add(c0 * hd);
    let vsp = kv.vs.as_ptr().add(c0 * s_n);
    let lines = |b: usize| {
        (
            kp.wrapping_add(b * BLK * hd) as *const i8,
            vp.wrapping_add(b * BLK * hd),
            ksp.wrapping_add(b * BLK * s_n) as *const i8,
            vsp.wrapping_add(b * BLK * s_n) as *const i8,
        )
    };
    for b in 0..AHEAD.min(nb) {
        let (k, v, ks, vs) = lines(b);
        for i in 0..groups {
            _mm_prefetch::<_MM_HINT_T0>(k.wrapping_add(i * 64));
            _mm_prefetch::<_MM_HINT_T0>(v.wrapping_add(i * 64));
        }
        for i in 0..s_n {
            _mm_prefetch::<_MM_HINT_T0>(ks.wrapping_add(i * 64));
            _mm_prefetch::<_MM_HINT_T0>(vs.wrapping_add(i * 64));
        }
    }
    let mut o = [[_mm512_setzero_ps(); R]; N];
    let mut m = [f32::NEG_INFINITY; N];
    let mut l = [_mm512_setzero_ps(); N];
    // Per query head and 32 dimensions, the 16 positions' weights times their value scales.
    let mut pw = [[[0f32; BLK]; 4]; N];
    for b in 0..nb {
        let ahead = (b + AHEAD < nb).then(|| lines(b + AHEAD));
        if let Some((_, _, ks, vs)) = ahead {
            for i in 0..s_n {
                _mm_prefetch::<_MM_HINT_T0>(ks.wrapping_add(i * 64));
                _mm_prefetch::<_MM_HINT_T0>(vs.wrapping_add(i * 64));
            }
        }
        let kb = kp.add(b * BLK * hd);
        let mut acc = [[_mm512_setzero_si512(); 4]; N];
        for g in 0..groups {
            if let Some((pk, pv, _, _)) = ahead {
                _mm_prefetch::<_MM_HINT_T0>(pk.wrapping_add(g * 64));
                _mm_prefetch::<_MM_HINT_T0>(pv.wrapping_add(g * 64));
            }
            let k = _mm512_loadu_si512(kb.add(g * 64) as *const __m512i);
            let s = g / 8;
            for qi in 0..N {
                acc[qi][s] = _mm512_dpbusd_epi32(acc[qi][s], k, _mm512_set1_epi32(qs[qi].q4[g]));
            }
        }
        let ksb = ksp.add(b * BLK * s_n);
        let valid = BLK.min(n - b * BLK);
        let mask: __mmask16 = if valid == BLK {
            0xffff
        } else {
            (1u16 << valid) - 1
        };
        let vsb = vsp.add(b * BLK * s_n);
        for qi in 0..N {
            let mut sc = _mm512_setzero_ps();
            for s in 0..s_n {
                let dot = _mm512_sub_epi32(acc[qi][s], _mm512_set1_epi32(qs[qi].corr[s]));
                let f = _mm512_mul_ps(
                    _mm512_set1_ps(qs[qi].scale[s]),
                    _mm512_loadu_ps(ksb.add(s * BLK)),
                );
                sc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), f, sc);
            }
            let e = super::cpu::softmax_block(sc, mask, &mut m[qi], &mut l[qi], &mut o[qi]);
            for s in 0..s_n {
                _mm512_storeu_ps(
                    pw[qi][s].as_mut_ptr(),
                    _mm512_mul_ps(e, _mm512_loadu_ps(vsb.add(s * BLK))),
                );
            }
        }
        let vb = vp.add(b * BLK * hd);
        for j in 0..valid {
            let row = vb.add(j * hd);
            let mut vr = [_mm512_setzero_ps(); R];
            for (r, x) in vr.iter_mut().enumerate() {
                *x = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                    row.add(16 * r) as *const __m128i
                )));
            }
            for qi in 0..N {
                for (r, x) in vr.iter().enumerate() {
                    let w = _mm512_set1_ps(pw[qi][r / 2][j]);
                    o[qi][r] = _mm512_fmadd_ps(w, *x, o[qi][r]);
                }
            }
        }
    }
    for qi in 0..N {
        let dst = out(qi);
        for (r, acc) in o[qi].iter().enumerate() {
            _mm512_storeu_ps(dst.as_mut_ptr().add(16 * r), *acc);
        }
        dst[hd] = m[qi];
        dst[hd + 1] = _mm512_reduce_add_ps(l[qi]);
    }
}

/// The portable form of [`attend`] (same rounding of the query, same partials), the reference
/// its SIMD build is tested against.
#[cfg(test)]
#[allow(clippy::needless_range_loop)] // d indexes the output and two cache arrays
pub(crate) fn attend_ref(
    qs: &[Q8Query],
    hd: usize,
    kv: Kv8Head<'_>,
    c0: usize,
    c1: usize,
) -> Vec<Vec<f32>> {
    let s_n = hd / SUB;
    let mut res = Vec::new();
    for qq in qs {
        let scores: Vec<f32> = (c0..c1)
            .map(|p| {
                let (blk, lane) = (p / BLK, p % BLK);
                (0..s_n)
                    .map(|s| {
                        let mut dot = 0i32;
                        for d in s * SUB..(s + 1) * SUB {
                            let k = kv.k[((blk * hd / 4 + d / 4) * BLK + lane) * 4 + d % 4];
                            let qb = qq.q4[d / 4].to_le_bytes()[d % 4] as i8;
                            dot += (k as i32 - 128) * qb as i32;
                        }
                        dot as f32 * qq.scale[s] * kv.ks[(blk * s_n + s) * BLK + lane]
                    })
                    .sum()
            })
            .collect();
        let m = scores.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let mut o = vec![0f32; hd + 2];
        let mut l = 0f32;
        for (i, &s) in scores.iter().enumerate() {
            let p = c0 + i;
            let e = (s - m).exp();
            l += e;
            for d in 0..hd {
                let vsc = kv.vs[(p / BLK * s_n + d / SUB) * BLK + p % BLK];
                o[d] += e * vsc * kv.v[p * hd + d] as f32;
            }
        }
        o[hd] = m;
        o[hd + 1] = l;
        res.push(o);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize32_rounds_to_the_scale_and_keeps_zeros() {
        let x: Vec<f32> = (0..32).map(|i| (i as f32 - 15.5) * 0.25).collect();
        let mut q = [0i8; 32];
        let (s, sum) = quantize32(&x, &mut q);
        assert_eq!(sum, q.iter().map(|&v| v as i32).sum::<i32>());
        assert_eq!(s, 3.875 / 127.0);
        assert_eq!(q[0], -127);
        assert_eq!(q[31], 127);
        for (a, &b) in x.iter().zip(&q) {
            assert!((a - s * b as f32).abs() <= s / 2.0 + 1e-6);
        }
        assert_eq!(quantize32(&[0.0; 32], &mut q), (0.0, 0));
        assert!(q.iter().all(|&v| v == 0));
    }

    #[test]
    fn writes_round_trip_and_snapshots_restore() {
        let (g, hd, ctx) = (2, 64, 40);
        let mut c = Kv8Layer::new(g, hd, ctx);
        let val = |p: usize, h: usize, d: usize, w: f32| ((p * 31 + h * 7 + d) as f32 * w).sin();
        for p in 0..ctx {
            for h in 0..g {
                let k: Vec<f32> = (0..hd).map(|d| val(p, h, d, 0.37)).collect();
                let v: Vec<f32> = (0..hd).map(|d| val(p, h, d, 0.11)).collect();
                c.write(h, p, &k, &v);
            }
        }
        for p in [0, 15, 16, 39] {
            for h in 0..g {
                let kv = c.head(h);
                for d in 0..hd {
                    let sc = kv.ks[(p / 16 * 2 + d / 32) * 16 + p % 16];
                    let k = kv.k[((p / 16 * 16 + d / 4) * 16 + p % 16) * 4 + d % 4];
                    let got = sc * (k as i32 - 128) as f32;
                    assert!((got - val(p, h, d, 0.37)).abs() <= sc / 2.0 + 1e-6);
                    let vsc = kv.vs[(p / 16 * 2 + d / 32) * 16 + p % 16];
                    let got = vsc * kv.v[p * hd + d] as f32;
                    assert!((got - val(p, h, d, 0.11)).abs() <= vsc / 2.0 + 1e-6);
                }
            }
        }
        let snap = c.prefix(20);
        let mut fresh = Kv8Layer::new(g, hd, ctx);
        fresh.restore(&snap, 20);
        for h in 0..g {
            let (a, b) = (fresh.head(h), c.head(h));
            assert_eq!(a.v[..20 * hd], b.v[..20 * hd]);
            assert_eq!(a.k[..32 * hd], b.k[..32 * hd]);
            assert_eq!(a.ks[..64], b.ks[..64]);
            assert_eq!(a.vs[..64], b.vs[..64]);
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod kernel_tests {
    use super::*;

    fn vnni() -> bool {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vnni")
            && is_x86_feature_detected!("fma")
    }

    /// Random keys and values (`ctx` positions, one head), a query of `n_rep` heads.
    fn case(n_rep: usize, hd: usize, ctx: usize, seed: u32) -> (Kv8Layer, Vec<f32>, Vec<Vec<f32>>) {
        let mut s = seed.max(1);
        let mut rnd = || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let mut c = Kv8Layer::new(1, hd, ctx);
        let mut raw = Vec::new();
        for p in 0..ctx {
            let k: Vec<f32> = (0..hd).map(|_| rnd() * 4.0).collect();
            let v: Vec<f32> = (0..hd).map(|_| rnd()).collect();
            c.write(0, p, &k, &v);
            raw.push([k, v].concat());
        }
        let q: Vec<f32> = (0..n_rep * hd).map(|_| rnd() * 2.0).collect();
        (c, q, raw)
    }

    #[test]
    fn simd_attention_matches_the_portable_reference() {
        if !vnni() {
            return;
        }
        for (n_rep, hd) in [
            (3, 64),
            (7, 64),
            (1, 64),
            (8, 64),
            (2, 32),
            (4, 32),
            (4, 128),
            (8, 128),
        ] {
            let ctx = 120;
            let (c, q, _) = case(n_rep, hd, ctx, (n_rep * hd) as u32);
            let qs = queries(&q, hd, 1.0 / (hd as f32).sqrt());
            for (c0, c1) in [
                (0, 1),
                (0, 16),
                (0, 17),
                (16, 120),
                (32, 77),
                (0, 120),
                (48, 48),
            ] {
                let mut flat = vec![0f32; n_rep * (hd + 2)];
                let mut rows: Vec<&mut [f32]> = flat.chunks_mut(hd + 2).collect();
                let mut out = |qi: usize| std::mem::take(&mut rows[qi]);
                // SAFETY: AVX-512 VNNI checked above; c0 starts a block; c1 <= ctx.
                let done = unsafe { attend(&qs, hd, c.head(0), c0, c1, &mut out) };
                assert!(done, "no instance for {n_rep} x {hd}");
                let want = attend_ref(&qs, hd, c.head(0), c0, c1);
                for (g, w) in flat.chunks(hd + 2).zip(&want) {
                    if c1 == c0 {
                        assert_eq!(g[hd + 1], 0.0);
                        continue;
                    }
                    assert!(
                        (g[hd] - w[hd]).abs() <= 1e-5 * w[hd].abs().max(1.0),
                        "max {} vs {}",
                        g[hd],
                        w[hd]
                    );
                    assert!(
                        (g[hd + 1] - w[hd + 1]).abs() <= 1e-5 * w[hd + 1],
                        "sum {} vs {}",
                        g[hd + 1],
                        w[hd + 1]
                    );
                    for d in 0..hd {
                        let (a, b) = (g[d] / g[hd + 1], w[d] / w[hd + 1]);
                        assert!(
                            (a - b).abs() < 2e-5,
                            "{n_rep}x{hd} {c0}..{c1} d{d}: {a} vs {b}"
                        );
                    }
                }
            }
        }
    }

    /// The 8-bit copy's attention stays within the rounding of 8 bits of exact f32 attention.
    #[test]
    fn reference_is_close_to_exact_attention() {
        let (n_rep, hd, ctx) = (3, 64, 300);
        let (c, q, raw) = case(n_rep, hd, ctx, 9);
        let scale = 1.0 / (hd as f32).sqrt();
        let qs = queries(&q, hd, scale);
        let got = attend_ref(&qs, hd, c.head(0), 0, ctx);
        for qi in 0..n_rep {
            let qq = &q[qi * hd..(qi + 1) * hd];
            let s: Vec<f32> = raw
                .iter()
                .map(|kv| kv[..hd].iter().zip(qq).map(|(a, b)| a * b).sum::<f32>() * scale)
                .collect();
            let m = s.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            let e: Vec<f32> = s.iter().map(|x| (x - m).exp()).collect();
            let l: f32 = e.iter().sum();
            for d in 0..hd {
                let exact: f32 = raw
                    .iter()
                    .zip(&e)
                    .map(|(kv, w)| w * kv[hd + d])
                    .sum::<f32>()
                    / l;
                let approx = got[qi][d] / got[qi][hd + 1];
                assert!(
                    (exact - approx).abs() < 0.01,
                    "head {qi} d{d}: {approx} vs {exact}"
                );
            }
        }
    }
}
