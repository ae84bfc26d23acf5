//! Activations quantized per row to 8-bit blocks of 32 (GGML's Q8_1 idea: a scale and the
//! block's scaled sum, so offset and min terms of the weights cost one multiply per block).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::formats::BLOCK;

/// `m` rows of `k` activations as 8-bit blocks.
#[derive(Debug, Clone, Default)]
pub struct ActQ {
    /// Per-block scale `d = max|x| / 127`, `[m * k/32]` row-major.
    pub d: Vec<f32>,
    /// Per-block `d * sum(q)`, for the weights' offset term.
    pub s: Vec<f32>,
    /// Per-block `sum(q)` (the 512-bit kernel folds integer offsets in with it).
    pub sq: Vec<i32>,
    /// Quants in `-127..=127`, `[m * k]` row-major.
    pub qs: Vec<i8>,
}

/// Quantizes one block of 32 values; returns `(d, sum(q))`. Rounds half to even, as
/// `_mm256_round_ps` does, so the SIMD quantizer matches it bit for bit.
pub fn quantize_block_scalar(x: &[f32], q: &mut [i8]) -> (f32, i32) {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut sum = 0i32;
    for (o, &v) in q.iter_mut().zip(x) {
        let r = (v * id).round_ties_even() as i32;
        sum += r;
        *o = r as i8;
    }
    (d, sum)
}

/// AVX2 version of [`quantize_block_scalar`] (same results).
///
/// # Safety
/// `x` and `q` must hold 32 elements; the CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub unsafe fn quantize_block_avx2(x: *const f32, q: *mut i8) -> (f32, i32) {
    let v = [
        _mm256_loadu_ps(x),
        _mm256_loadu_ps(x.add(8)),
        _mm256_loadu_ps(x.add(16)),
        _mm256_loadu_ps(x.add(24)),
    ];
    let sign = _mm256_set1_ps(-0.0);
    let a = _mm256_max_ps(
        _mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
        _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])),
    );
    let m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    let m = _mm_max_ss(m, _mm_movehdup_ps(m));
    let amax = _mm_cvtss_f32(m);
    let d = amax / 127.0;
    let id = _mm256_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
    const R: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    let i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[0], id), R));
    let i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[1], id), R));
    let i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[2], id), R));
    let i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[3], id), R));
    let s = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
    let s = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    let s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    let sum = _mm_cvtsi128_si32(s);
    // packs work per 128-bit lane: restore element order with a dword permutation.
    let p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    let p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(q as *mut __m256i, p);
    (d, sum)
}

impl ActQ {
    /// Quantizes `m` rows of `k` values (`x.len() == m * k`, `k` a multiple of 32), with SIMD
    /// when `simd` is set (the caller has checked AVX2).
    pub fn quantize_rows(&mut self, x: &[f32], k: usize, simd: bool) {
        self.quantize_rows_split(x, k, simd, x.len().max(1), |n, f| (0..n).for_each(f));
    }

    /// [`ActQ::quantize_rows`] in parts of at most `part` values (a multiple of `k`; a prefill
    /// chunk's rows are split across threads), run by `run(parts, f)`, which must call `f(i)`
    /// once for every `i < parts` (serially or in parallel). Same result as the serial form:
    /// each block is quantized on its own.
    pub fn quantize_rows_split(
        &mut self,
        x: &[f32],
        k: usize,
        simd: bool,
        part: usize,
        run: impl FnOnce(usize, &(dyn Fn(usize) + Sync)),
    ) {
        debug_assert!(k.is_multiple_of(BLOCK) && x.len().is_multiple_of(k));
        debug_assert!(part.is_multiple_of(k) || part >= x.len());
        let nbt = x.len() / BLOCK;
        self.d.resize(nbt, 0.0);
        self.s.resize(nbt, 0.0);
        self.sq.resize(nbt, 0);
        self.qs.resize(x.len(), 0);
        let pb = part / BLOCK;
        // One lock per part, each taken once by the task that owns it: disjoint mutable slices
        // for a `Sync` closure without raw pointers.
        let parts: Vec<std::sync::Mutex<_>> = x
            .chunks(part)
            .zip(self.qs.chunks_mut(part))
            .zip(self.d.chunks_mut(pb))
            .zip(self.s.chunks_mut(pb))
            .zip(self.sq.chunks_mut(pb))
            .map(|((((x, q), d), s), sq)| std::sync::Mutex::new((x, q, d, s, sq)))
            .collect();
        run(parts.len(), &|i| {
            let mut g = parts[i].lock().unwrap_or_else(|e| e.into_inner());
            let (x, q, d, s, sq) = &mut *g;
            quantize_blocks(x, q, d, s, sq, simd);
        });
    }
}

/// Quantizes the blocks of `x` into `qs`, `d`, `s`, `sq` (one entry per block of 32).
fn quantize_blocks(
    x: &[f32],
    qs: &mut [i8],
    d: &mut [f32],
    s: &mut [f32],
    sq: &mut [i32],
    simd: bool,
) {
    let blocks = x
        .chunks_exact(BLOCK)
        .zip(qs.chunks_exact_mut(BLOCK))
        .zip(d.iter_mut().zip(s.iter_mut()).zip(sq.iter_mut()));
    for ((xb, qb), ((d, s), sq)) in blocks {
        #[cfg(target_arch = "x86_64")]
        let (dd, ss) = if simd {
            // SAFETY: both blocks hold 32 elements; `simd` means AVX2 was detected.
            unsafe { quantize_block_avx2(xb.as_ptr(), qb.as_mut_ptr()) }
        } else {
            quantize_block_scalar(xb, qb)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let (dd, ss) = {
            let _ = simd;
            quantize_block_scalar(xb, qb)
        };
        *d = dd;
        *s = dd * ss as f32;
        *sq = ss;
    }
}
