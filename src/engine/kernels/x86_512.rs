//! AVX-512 VNNI micro-kernel on 512-bit vectors: two 32-weight blocks per instruction.
//!
//! Per tile step the two blocks' scales are expanded once per activation row and once per
//! weight row into `[s_b x8 | s_b+1 x8]` vectors (4-bit weights: `[s_b x4 | s_b+1 x4]` twice, see
//! `nibbles2`), so each (row, row) pair costs one `vpdpbusd`,
//! one convert, one multiply and one FMA per two blocks (the 256-bit kernels need a scalar
//! multiply and a broadcast per block on top). Used when a row has an even number of blocks
//! (every shipped model); otherwise the 256-bit VNNI kernel runs.

use std::arch::x86_64::*;

use super::act::ActQ;
use super::formats::Packed;
use super::x86::{prefetch_ahead, prefetch_block, quant_bytes, Out, L_U4, L_U5};

/// Features this module needs.
pub const FEATURES: &str = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma";

/// Activation rows per full tile.
pub const MR: usize = 4;
/// Weight rows per full tile.
pub const NR: usize = 4;

/// `[p[0] x8 | p[1] x8]` (`SPLIT` false), or `[p[0] x4 | p[1] x4 | p[0] x4 | p[1] x4]` (`SPLIT`
/// true: the lanes of [`nibbles2`]'s order).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
unsafe fn pair<const SPLIT: bool>(p: *const f32) -> __m512 {
    let v = _mm_castpd_ps(_mm_load_sd(p as *const f64));
    let idx = if SPLIT {
        _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1)
    } else {
        _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)
    };
    _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v))
}

/// Two consecutive blocks of 16 nibble bytes → 64 unsigned bytes in the order
/// `[b: w0..w15 | b+1: w0..w15 | b: w16..w31 | b+1: w16..w31]` (low nibbles, then high): the
/// bytes as they lie, with no cross-lane shuffle per weight row. The activations are put in the
/// same order once per activation row instead (see `tile`), and the scales follow
/// ([`pair`] with `SPLIT`).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
unsafe fn nibbles2(p: *const u8) -> __m512i {
    let t = _mm256_loadu_si256(p as *const __m256i);
    let z = _mm512_inserti64x4(_mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4), 1);
    _mm512_and_si512(z, _mm512_set1_epi8(0x0f))
}

/// [`nibbles2`] in block order, `[b: w0..w31 | b+1: w0..w31]` (for 5-bit weights, whose
/// high-bit masks are in that order).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
unsafe fn nibbles2_ordered(p: *const u8) -> __m512i {
    let z = nibbles2(p);
    _mm512_shuffle_i64x2(z, z, 0b11_01_10_00)
}

#[allow(clippy::needless_range_loop)] // indexes run over two arrays at once
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
unsafe fn tile<const L: u8, const R: usize, const C: usize>(
    w: &Packed,
    a: &ActQ,
    i0: usize,
    j0: usize,
    o: Out,
) {
    let nb = w.k / 32;
    let wd = w.d.as_ptr();
    let wq = w.qs.as_ptr();
    let wh = w.qh.as_ptr();
    let ad = a.d.as_ptr();
    let aq = a.qs.as_ptr() as *const u8;
    let asq = a.sq.as_ptr();
    // Integer offset folded into vpdpbusd's accumulator input: lanes 0 and 8 start at
    // -o * sum(q) of their block, so the dot is exactly dot(u - o, q).
    let neg_off = _mm512_set1_epi32(-w.offset.unwrap_or(0));
    let fold = w.offset.is_some();
    // 4-bit weights come in [`nibbles2`]'s order: block b+1's sums start at lane 4, and the
    // activations are reordered to match once per row. Tiny (Q4_1) decode from an empty
    // context, five alternating runs: median 247 → 263 tok/s. 5-bit weights keep block order
    // (reordering their high-bit masks cost what the shuffle saved: small decode unchanged).
    let split = L == L_U4;
    let (lanes, two) = if split {
        (
            _mm512_setr_epi32(0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
            0x0011,
        )
    } else {
        (
            _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0),
            0x0101,
        )
    };
    let scales = |p: *const f32| {
        if split {
            pair::<true>(p)
        } else {
            pair::<false>(p)
        }
    };
    // A stored min (Q4_1, Q5_1, Q4_K): `c[j,b] * s[i,b]` goes into one lane of each block
    // (see `lanes`), one FMA per two blocks instead of a second pass over the output.
    let mins = !fold;
    let wc = w.c.as_ptr();
    let asum = a.s.as_ptr();
    let mut acc = [[_mm512_setzero_ps(); C]; R];
    // The first activation tile of these weight rows prefetches the rows after them (decode
    // has only that tile; see `x86::PREFETCH_BYTES`); later tiles find them in cache.
    let ahead = if i0 == 0 {
        prefetch_ahead(nb, quant_bytes::<L>(), C)
    } else {
        0
    };
    let mut b = 0;
    while b < nb {
        let mut dy = [_mm512_setzero_ps(); R];
        let mut sy = [_mm512_setzero_ps(); R];
        let mut init = [_mm512_setzero_si512(); R];
        let mut ys = [_mm512_setzero_si512(); R];
        for i in 0..R {
            dy[i] = scales(ad.add((i0 + i) * nb + b));
            if mins {
                let s = _mm_castpd_ps(_mm_load_sd(asum.add((i0 + i) * nb + b) as *const f64));
                sy[i] = _mm512_maskz_permutexvar_ps(two, lanes, _mm512_castps128_ps512(s));
            }
            if fold {
                let s = _mm_loadl_epi64(asq.add((i0 + i) * nb + b) as *const __m128i);
                let s = _mm512_maskz_permutexvar_epi32(two, lanes, _mm512_castsi128_si512(s));
                init[i] = _mm512_mullo_epi32(s, neg_off);
            }
            let y = _mm512_loadu_si512(aq.add(((i0 + i) * nb + b) * 32) as *const __m512i);
            // 128-bit lanes [b lo, b hi, b+1 lo, b+1 hi] → [b lo, b+1 lo, b hi, b+1 hi].
            ys[i] = if split {
                _mm512_shuffle_i64x2(y, y, 0b11_01_10_00)
            } else {
                y
            };
        }
        for j in 0..C {
            let blk = (j0 + j) * nb + b;
            if ahead > 0 {
                // One call per two blocks: the pair's quants (32 or 64 bytes) and scales
                // (8 bytes) may run into a second line, which the next call covers.
                prefetch_block::<L>(w, blk + ahead);
            }
            let dw = scales(wd.add(blk));
            let wu = match L {
                L_U4 => nibbles2(wq.add(blk * 16)),
                L_U5 => {
                    let n = nibbles2_ordered(wq.add(blk * 16));
                    let h = (wh.add(blk) as *const u64).read_unaligned();
                    _mm512_mask_add_epi8(n, h, n, _mm512_set1_epi8(0x10))
                }
                _ => _mm512_xor_si512(
                    _mm512_loadu_si512(wq.add(blk * 32) as *const __m512i),
                    _mm512_set1_epi8(-128),
                ),
            };
            let cw = if mins {
                scales(wc.add(blk))
            } else {
                _mm512_setzero_ps()
            };
            for i in 0..R {
                let p = _mm512_dpbusd_epi32(init[i], wu, ys[i]);
                acc[i][j] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, dy[i]), acc[i][j]);
                if mins {
                    acc[i][j] = _mm512_fmadd_ps(cw, sy[i], acc[i][j]);
                }
            }
        }
        b += 2;
    }
    for (i, row) in acc.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            // The split order's lanes are the block order's with 128-bit lanes 1 and 2
            // swapped, sums and min terms alike: swapped back, the reduction adds the same
            // values in the same order, so the output is bit-identical to block order.
            let v = if split {
                _mm512_shuffle_f32x4(*v, *v, 0b11_01_10_00)
            } else {
                *v
            };
            *o.ptr.add((i0 + i) * o.ld + j0 + j) = _mm512_reduce_add_ps(v);
        }
    }
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
unsafe fn column<const L: u8, const C: usize>(w: &Packed, a: &ActQ, m: usize, j0: usize, o: Out) {
    let mut i = 0;
    while i + MR <= m {
        tile::<L, MR, C>(w, a, i, j0, o);
        i += MR;
    }
    match m - i {
        0 => {}
        1 => tile::<L, 1, C>(w, a, i, j0, o),
        2 => tile::<L, 2, C>(w, a, i, j0, o),
        _ => tile::<L, 3, C>(w, a, i, j0, o),
    }
}

/// All `m` activation rows against weight rows `j0..j1`, offset or min term included.
///
/// # Safety
/// `w.k / 32` is even; `a` holds `m` rows of `w.k`; `o` is valid for `m` rows and columns
/// `j0..j1`; the CPU has [`FEATURES`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
pub unsafe fn rows<const L: u8>(w: &Packed, a: &ActQ, m: usize, j0: usize, j1: usize, o: Out) {
    debug_assert!((w.k / 32).is_multiple_of(2));
    let mut j = j0;
    while j + NR <= j1 {
        column::<L, NR>(w, a, m, j, o);
        j += NR;
    }
    while j < j1 {
        column::<L, 1>(w, a, m, j, o);
        j += 1;
    }
}
