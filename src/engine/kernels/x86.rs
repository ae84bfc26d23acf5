//! x86-64 micro-kernels: AVX2 (`vpmaddubsw` + `vpmaddwd`) and VNNI (`vpdpbusd`, from
//! AVX-512 VNNI with VL, or AVX-VNNI). One macro body serves every ISA so the paths cannot
//! drift apart; they differ only in the 8-bit dot instruction and in how Q8_0's signed weights
//! meet the unsigned operand (AVX2: `vpsignb` on both sides; VNNI: bias by 128 and subtract
//! `128 * sum(y)` through the block offset).
//!
//! A tile is `MR` activation rows by `NR` weight rows: each weight block is decoded once per
//! tile and reused for `MR` rows; each of the `MR * NR` accumulators holds 8 f32 lanes.

use std::arch::x86_64::*;

use super::act::ActQ;
use super::formats::{Layout, Packed};

/// `L` tags of the micro-kernels (const generic stand-ins for [`Layout`]).
pub const L_U4: u8 = 0;
/// See [`L_U4`].
pub const L_U5: u8 = 1;
/// See [`L_U4`].
pub const L_I8: u8 = 2;

/// The `L` tag of a layout.
pub fn tag(l: Layout) -> u8 {
    match l {
        Layout::U4 => L_U4,
        Layout::U5 => L_U5,
        Layout::I8 => L_I8,
    }
}

/// Output pointer and row stride shared by the tasks of one matmul: each task writes a
/// disjoint set of columns.
#[derive(Clone, Copy)]
pub struct Out {
    /// `out[i * ld + j]` is activation row `i`, weight row `j`.
    pub ptr: *mut f32,
    /// Row stride of the output (= weight rows `n`).
    pub ld: usize,
}

/// How far ahead of the tile it runs, in bytes of packed quants, a kernel prefetches the
/// weight rows it will read next (`prefetcht0` on the quants, scales, mins and fifth bits).
///
/// Why: decode streams every weight from DRAM once per token, and the hardware prefetchers
/// stop at each 4 KiB page and restart on each task's chunk of rows, so without it a core
/// waited on misses and then computed (one thread: ~6 GB/s against ~10 GB/s for a plain
/// sum). Measured on the 2-core AVX-512 Xeon (one process, alternating; SmolLM2-135M shapes,
/// 30 layers + Q8_0 output): 0 → 11.8 ms/token, 1 KiB → 9.3, 2 KiB → 6.4, 4 KiB → 5.7,
/// 8 KiB → 5.9, 16 KiB → 6.1 (Q4_1; Q5_0 and Q8_0 alike), so 6 KiB: the middle of the flat
/// part.
pub const PREFETCH_BYTES: usize = 6 * 1024;

/// Weight blocks ahead to prefetch for a matrix of `nb` blocks per row with `per` quant bytes
/// per block, tiles of `c` weight rows: whole rows covering [`PREFETCH_BYTES`], at least one
/// tile.
#[inline]
pub fn prefetch_ahead(nb: usize, per: usize, c: usize) -> usize {
    PREFETCH_BYTES.div_ceil(nb * per).max(c) * nb
}

/// Quant bytes per block of layout tag `L`.
#[inline]
pub const fn quant_bytes<const L: u8>() -> usize {
    if L == L_I8 {
        32
    } else {
        16
    }
}

/// Prefetches block `blk` of `w` (`blk` may run past the matrix: a prefetch never faults):
/// the line holding the start of its quants, its scale, min and fifth bits as the layout has
/// them. Called once per block (or pair of blocks) in order along a row, so a line a block
/// straddles into is fetched by the call for the next block.
///
/// # Safety
/// Only computes addresses (`wrapping_add`) and issues prefetch hints; any `blk` is fine.
#[inline]
#[target_feature(enable = "sse")]
pub unsafe fn prefetch_block<const L: u8>(w: &Packed, blk: usize) {
    let q = w.qs.as_ptr().wrapping_add(blk * quant_bytes::<L>());
    _mm_prefetch::<_MM_HINT_T0>(q as *const i8);
    _mm_prefetch::<_MM_HINT_T0>(w.d.as_ptr().wrapping_add(blk) as *const i8);
    if !w.c.is_empty() {
        _mm_prefetch::<_MM_HINT_T0>(w.c.as_ptr().wrapping_add(blk) as *const i8);
    }
    if L == L_U5 {
        _mm_prefetch::<_MM_HINT_T0>(w.qh.as_ptr().wrapping_add(blk) as *const i8);
    }
}

macro_rules! isa_kernels {
    ($name:ident, $feat:literal, $vnni:literal, $mr:literal, $nr:literal, |$w:ident, $y:ident| $dot:block) => {
        /// Kernels for one ISA (see the module docs).
        pub mod $name {
            use super::*;

            /// Activation rows per full tile.
            pub const MR: usize = $mr;
            /// Weight rows per full tile.
            pub const NR: usize = $nr;
            /// Whether Q8_0 uses the biased-unsigned form (then its offset term applies).
            pub const VNNI: bool = $vnni;

            /// Unsigned 8-bit `w` times signed 8-bit `y`, summed in groups of 4 into 8 i32.
            ///
            /// # Safety
            /// The CPU must have this module's features (callers outside them need `unsafe`).
            #[inline]
            #[target_feature(enable = $feat)]
            pub fn dot($w: __m256i, $y: __m256i) -> __m256i $dot

            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn nibbles(p: *const u8) -> __m256i {
                let t = _mm_loadu_si128(p as *const __m128i);
                let v = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
                _mm256_and_si256(v, _mm256_set1_epi8(0x0f))
            }

            /// 0x10 in byte `i` where bit `i` of `h` is set.
            #[inline]
            #[target_feature(enable = $feat)]
            fn fifth_bits(h: u32) -> __m256i {
                let shuf = _mm256_set_epi64x(
                    0x0303_0303_0303_0303,
                    0x0202_0202_0202_0202,
                    0x0101_0101_0101_0101,
                    0,
                );
                let v = _mm256_shuffle_epi8(_mm256_set1_epi32(h as i32), shuf);
                // Byte k of each 8 has every bit but bit k set.
                let v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbf_dfef_f7fb_fdfe));
                let v = _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
                _mm256_and_si256(v, _mm256_set1_epi8(0x10))
            }

            #[inline]
            #[target_feature(enable = $feat)]
            fn hsum(v: __m256) -> f32 {
                let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
                let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
                let s = _mm_add_ss(s, _mm_movehdup_ps(s));
                _mm_cvtss_f32(s)
            }

            /// One `R x C` tile: activation rows `i0..i0+R`, weight rows `j0..j0+C`, over all
            /// of `k`; writes `out` (without the offset term).
            ///
            /// # Safety
            /// Rows in range; `o` valid for those rows and columns; CPU has the features.
            #[allow(clippy::needless_range_loop)] // indexes run over two arrays at once
            #[inline]
            #[target_feature(enable = $feat)]
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
                let mut acc = [[_mm256_setzero_ps(); C]; R];
                // The first activation tile of these weight rows prefetches the rows after
                // them (decode has only that tile); later tiles find them in cache.
                let ahead = if i0 == 0 {
                    prefetch_ahead(nb, quant_bytes::<L>(), C)
                } else {
                    0
                };
                for b in 0..nb {
                    let mut dy = [0f32; R];
                    for (i, d) in dy.iter_mut().enumerate() {
                        *d = *ad.add((i0 + i) * nb + b);
                    }
                    for j in 0..C {
                        let blk = (j0 + j) * nb + b;
                        if ahead > 0 {
                            prefetch_block::<L>(w, blk + ahead);
                        }
                        let dw = *wd.add(blk);
                        let raw = match L {
                            L_U4 => nibbles(wq.add(blk * 16)),
                            L_U5 => {
                                _mm256_or_si256(nibbles(wq.add(blk * 16)), fifth_bits(*wh.add(blk)))
                            }
                            _ => _mm256_loadu_si256(wq.add(blk * 32) as *const __m256i),
                        };
                        let wu = if L == L_I8 {
                            if VNNI {
                                _mm256_xor_si256(raw, _mm256_set1_epi8(-128))
                            } else {
                                _mm256_sign_epi8(raw, raw)
                            }
                        } else {
                            raw
                        };
                        for i in 0..R {
                            let y = _mm256_loadu_si256(
                                aq.add(((i0 + i) * nb + b) * 32) as *const __m256i
                            );
                            let y = if L == L_I8 && !VNNI {
                                _mm256_sign_epi8(y, raw)
                            } else {
                                y
                            };
                            let p = dot(wu, y);
                            acc[i][j] = _mm256_fmadd_ps(
                                _mm256_cvtepi32_ps(p),
                                _mm256_set1_ps(dw * dy[i]),
                                acc[i][j],
                            );
                        }
                    }
                }
                for (i, row) in acc.iter().enumerate() {
                    for (j, v) in row.iter().enumerate() {
                        *o.ptr.add((i0 + i) * o.ld + j0 + j) = hsum(*v);
                    }
                }
            }

            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn column<const L: u8, const C: usize>(
                w: &Packed,
                a: &ActQ,
                m: usize,
                j0: usize,
                o: Out,
            ) {
                let mut i = 0;
                while i + MR <= m {
                    tile::<L, MR, C>(w, a, i, j0, o);
                    i += MR;
                }
                match m - i {
                    0 => {}
                    1 => tile::<L, 1, C>(w, a, i, j0, o),
                    2 => tile::<L, 2, C>(w, a, i, j0, o),
                    3 => tile::<L, 3, C>(w, a, i, j0, o),
                    _ => tile::<L, 4, C>(w, a, i, j0, o),
                }
            }

            /// All `m` activation rows against weight rows `j0..j1`.
            ///
            /// # Safety
            /// `a` holds `m` rows of `w.k`; `o` is valid for `m` rows and columns `j0..j1`;
            /// the CPU has the features.
            #[target_feature(enable = $feat)]
            pub unsafe fn rows<const L: u8>(
                w: &Packed,
                a: &ActQ,
                m: usize,
                j0: usize,
                j1: usize,
                o: Out,
            ) {
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
        }
    };
}

isa_kernels!(avx2, "avx2,fma", false, 4, 3, |w, y| {
    _mm256_madd_epi16(_mm256_maddubs_epi16(w, y), _mm256_set1_epi16(1))
});
isa_kernels!(
    avx512vnni,
    "avx2,fma,avx512f,avx512vl,avx512vnni",
    true,
    4,
    4,
    |w, y| { _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, y) }
);
isa_kernels!(avxvnni, "avx2,fma,avxvnni", true, 4, 3, |w, y| {
    _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w, y)
});
