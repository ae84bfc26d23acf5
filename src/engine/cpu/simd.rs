//! Attention micro-kernels (scores, weighted sums, softmax; portable and x86 SIMD) and the
//! fast `exp` they share.

use super::*;

/// Queries per register block of the attention micro-kernels: `QB x 2` accumulators of 8
/// lanes, plus two operand registers, fit AVX2's 16.
pub(super) const QB: usize = 6;

/// `s[qi * ld + p] = sum_d q[qi * hd + d] * k[p][d]` for `qi < nq` and every position `p` of
/// the key blocks covering `0..n`, with `kt` in blocks `[.., hd, KEY_BLOCK]` and
/// `ld >= n` rounded up to a block.
pub(super) fn scores_generic(
    kt: &[u16],
    hd: usize,
    q: &[f32],
    nq: usize,
    n: usize,
    s: &mut [f32],
    ld: usize,
) {
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
pub(super) fn weighted_generic(
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
pub(super) unsafe fn scores_blocks(
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
pub(super) const ATTN_AHEAD: usize = 3;

/// AVX2 [`scores_generic`]: one key block (16 positions) x up to [`QB`] queries per
/// register block. With `v` (this task's values), also prefetches the values of the positions
/// ahead (see [`ATTN_AHEAD`]).
///
/// # Safety
/// AVX2, FMA and F16C; `nq <= QB`; `hd % 16 == 0`; slice bounds as in [`scores_generic`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn scores_x86(
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
pub(super) unsafe fn weighted_x86(
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
pub(super) unsafe fn scores_x86_512(
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
pub(super) unsafe fn weighted_x86_512(
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
pub(super) unsafe fn outer_wide<const R: usize>(
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
pub(super) unsafe fn outer_wide_n<const N: usize, const R: usize>(
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
pub(super) unsafe fn outer16(
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
pub(super) unsafe fn outer16_n<const N: usize>(
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
pub(super) fn axpy_h(y: &mut [f32], a: f32, x: &[u16]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi = a.mul_add(f16::from_bits(xi).to_f32(), *yi);
    }
}

/// `y += a * x` (same length).
#[inline(always)]
pub(super) fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
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
pub(super) unsafe fn axpy_fma(y: &mut [f32], a: f32, x: &[f32]) {
    axpy(y, a, x);
}

/// Replaces a row of scores by `e^(x - max)` and returns `(max, sum)`: the unnormalized
/// softmax, normalized after the weighted sum of values (or after merging splits).
#[inline(always)]
pub(super) fn exp_rows(row: &mut [f32]) -> (f32, f32) {
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
pub(super) unsafe fn exp_rows_x86(row: &mut [f32]) -> (f32, f32) {
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
pub(super) unsafe fn exp8(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
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
pub(crate) unsafe fn softmax_block(
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
pub(super) unsafe fn exp16(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
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
pub(super) fn exp_approx(x: f32) -> f32 {
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
