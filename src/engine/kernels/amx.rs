//! AMX-INT8 prefill kernel: Intel's tile unit (Sapphire Rapids and later) does one
//! `16 x 16 x 32` 8-bit product per block in a single `tdpbsud`, where the AVX-512 kernel
//! needs eight `vpdpbusd` plus their scaling for the same work.
//!
//! Per block `b` of 32, with `t` an activation row (token) and `r` a weight row:
//! `C[t, r] = dot(q[t, b], u[r, b])` in int32 (signed activations × unsigned weight quants:
//! `tdpbsud`; signed Q8_0 weights: `tdpbssd`), then in f32
//! `acc[t, r] += C[t, r] * dy[t, b] * dw[r, b] + s[t, b] * c[r, b]` (the same sum as the
//! scalar kernel, [`super::act`]'s `s = dy * sum(q)` and the block offset `c`).
//!
//! Tiles (Intel SDM vol. 1 ch. 3 "Intel AMX", palette 1): A = 16 tokens × 32 bytes, read in
//! place from [`ActQ`]'s row-major quants (stride `k` bytes); B = 16 weight rows of one block
//! in the "VNNI" layout (8 rows of 16 × 4 bytes: row `i` holds quants `4i..4i+4` of each
//! weight row), unpacked from the packed rows once per 32 weight rows and reused for every
//! token; C = 16 × 16 int32. A task computes 32 tokens × 32 weight rows per pass: two A, two
//! B and four C tiles, all eight tile registers.
//!
//! Linux hands out the tile state only on request (`arch_prctl(ARCH_REQ_XCOMP_PERM,
//! XFEATURE_XTILEDATA)`, kernel 5.16+); [`available`] asks once per process. Rust has no
//! stable AMX intrinsics, so the tile instructions are inline assembly.

use std::arch::asm;
use std::arch::x86_64::*;
use std::cell::RefCell;
use std::sync::OnceLock;

use super::act::ActQ;
use super::formats::Packed;
use super::x86::{Out, L_I8, L_U5};

/// Activation rows (tokens) from which a matmul uses tiles: below it the padding to 16-row
/// tiles costs more than the VNNI kernel saves (decode's one row never uses them). Measured
/// on SmolLM2 (2 threads), prefill tok/s VNNI vs tiles: 8 rows (padded to 32) 629-632 vs
/// 552-628, 16 rows 685-692 vs 877 (one 16-row group), 32 rows 707-731 vs 1155-1174.
pub const MIN_ROWS: usize = 16;

/// Tokens per pass (two A tiles of 16 rows); [`ActQ`] rows are padded to a multiple of it.
pub const PASS_ROWS: usize = 32;

/// Weight rows per pass (two B tiles of 16 columns).
pub const PASS_COLS: usize = 32;

/// Bytes of one B tile: 8 rows × 64 bytes.
const B_TILE: usize = 512;

/// Whether this CPU and OS run AMX-INT8 with AVX-512 beside it: CPUID leaf 7 (AMX-TILE,
/// AMX-INT8), AVX-512F/BW/VL, and the kernel granting the tile data state to this process.
/// Asked once; the answer is cached.
pub fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        // CPUID.(EAX=7,ECX=0):EDX bit 24 = AMX-TILE, bit 25 = AMX-INT8 (Intel SDM vol. 2A).
        #[allow(unused_unsafe)] // `__cpuid_count` is safe on newer toolchains
        let l7 = unsafe { __cpuid_count(7, 0) };
        let hw = l7.edx & (1 << 24) != 0 && l7.edx & (1 << 25) != 0;
        hw && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("fma")
            && request_tile_state()
    })
}

/// Asks Linux for the AMX tile data state (`ARCH_REQ_XCOMP_PERM` = 0x1023,
/// `XFEATURE_XTILEDATA` = 18, from the kernel's `arch/x86/include/uapi/asm/prctl.h`).
#[cfg(target_os = "linux")]
fn request_tile_state() -> bool {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: arch_prctl with these arguments only changes this process's permissions.
    unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        ) == 0
    }
}

#[cfg(not(target_os = "linux"))]
fn request_tile_state() -> bool {
    false
}

/// The 64-byte tile configuration (`ldtilecfg`'s operand, palette 1).
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    /// Bytes per row of tmm0..tmm15.
    colsb: [u16; 16],
    /// Rows of tmm0..tmm15.
    rows: [u8; 16],
}

/// tmm0-3: C (token group × weight group), tmm4-5: A (token groups), tmm6-7: B (weight
/// groups).
const CONFIG: TileConfig = {
    let mut c = TileConfig {
        palette: 1,
        start_row: 0,
        reserved: [0; 14],
        colsb: [0; 16],
        rows: [0; 16],
    };
    let mut i = 0;
    while i < 4 {
        c.colsb[i] = 64;
        c.rows[i] = 16;
        i += 1;
    }
    c.colsb[4] = 32;
    c.rows[4] = 16;
    c.colsb[5] = 32;
    c.rows[5] = 16;
    c.colsb[6] = 64;
    c.rows[6] = 8;
    c.colsb[7] = 64;
    c.rows[7] = 8;
    c
};

/// Per-thread buffers of one task: unpacked B tiles and the weights' per-block scales and
/// offsets for 32 weight rows, the f32 accumulators of a pass and the stored C tiles.
#[derive(Default)]
struct Scratch {
    /// `[block][group (2)][512]` bytes: one block's two B tiles are adjacent.
    bt: Vec<u8>,
    /// `[block][group][16]` weight scales `dw`.
    dw: Vec<f32>,
    /// `[block][group][16]` block offsets `c`.
    cw: Vec<f32>,
    /// `[token (32)][weight row (32)]`.
    acc: Vec<f32>,
    /// Four C tiles, `[tile][16][16]` int32.
    c: Vec<i32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Pads `a`'s rows with zeros to a multiple of [`PASS_ROWS`] (tiles read whole passes; the
/// padding rows' results are never written).
pub fn pad_rows(a: &mut ActQ, k: usize) {
    let m = a.qs.len() / k;
    let mp = m.next_multiple_of(PASS_ROWS);
    let nb = k / 32;
    a.qs.resize(mp * k, 0);
    a.d.resize(mp * nb, 0.0);
    a.s.resize(mp * nb, 0.0);
    a.sq.resize(mp * nb, 0);
}

/// `dword m` with byte `e` = 0x10 where bit `e` of `m` is set: the fifth bits of four
/// weights, expanded with one `vpermd`.
const fn fifth_bits_table() -> [i32; 16] {
    let mut t = [0i32; 16];
    let mut m = 0;
    while m < 16 {
        let mut e = 0;
        while e < 4 {
            if (m >> e) & 1 == 1 {
                t[m] |= 0x10 << (8 * e);
            }
            e += 1;
        }
        m += 1;
    }
    t
}

/// Unpacks block `b` of the 16 weight rows `rows` (byte offsets of each row's first block,
/// relative to block 0 of the group's first row, as `idx`) into one B tile at `dst` (512
/// bytes), and their scales and offsets into `dw`/`cw` (16 each).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn unpack_block<const L: u8>(
    w: &Packed,
    row0: usize,
    rows: __m512i,
    b: usize,
    dst: *mut u8,
    dw: *mut f32,
    cw: *mut f32,
) {
    let nb = w.nb();
    let blk0 = row0 * nb + b;
    // Row offsets in blocks → in bytes of each array.
    let idx4 = _mm512_slli_epi32(rows, 2);
    let d = _mm512_i32gather_ps::<1>(idx4, w.d.as_ptr().add(blk0));
    _mm512_storeu_ps(dw, d);
    // Q8_0 stays signed here (`tdpbssd`): no offset, unlike the VNNI kernels' biased form.
    let c = match w.offset {
        _ if L == L_I8 => _mm512_setzero_ps(),
        Some(o) => _mm512_mul_ps(d, _mm512_set1_ps(-(o as f32))),
        None => _mm512_i32gather_ps::<1>(idx4, w.c.as_ptr().add(blk0)),
    };
    _mm512_storeu_ps(cw, c);
    let out = dst as *mut __m512i;
    if L == L_I8 {
        // 32 signed bytes per block: tile row i = dword i of each weight row.
        let base = w.qs.as_ptr().add(blk0 * 32);
        let idx = _mm512_slli_epi32(rows, 5);
        for i in 0..8 {
            let g = _mm512_i32gather_epi32::<1>(idx, base.add(4 * i) as *const i32);
            _mm512_storeu_si512(out.add(i), g);
        }
        return;
    }
    // 16 bytes of nibbles: dword i holds weights 4i..4i+4 (low) and 16+4i.. (high).
    let base = w.qs.as_ptr().add(blk0 * 16);
    let idx = _mm512_slli_epi32(rows, 4);
    let nib = _mm512_set1_epi8(0x0f);
    let h = if L == L_U5 {
        _mm512_i32gather_epi32::<1>(idx4, w.qh.as_ptr().add(blk0) as *const i32)
    } else {
        _mm512_setzero_si512()
    };
    let table = {
        let t = fifth_bits_table();
        _mm512_loadu_si512(t.as_ptr() as *const __m512i)
    };
    let fifteen = _mm512_set1_epi32(15);
    for i in 0..4 {
        let g = _mm512_i32gather_epi32::<1>(idx, base.add(4 * i) as *const i32);
        let mut lo = _mm512_and_si512(g, nib);
        let mut hi = _mm512_and_si512(_mm512_srli_epi16(g, 4), nib);
        if L == L_U5 {
            let hl = _mm512_and_si512(
                _mm512_srlv_epi32(h, _mm512_set1_epi32(4 * i as i32)),
                fifteen,
            );
            let hh = _mm512_and_si512(
                _mm512_srlv_epi32(h, _mm512_set1_epi32(16 + 4 * i as i32)),
                fifteen,
            );
            lo = _mm512_or_si512(lo, _mm512_permutexvar_epi32(hl, table));
            hi = _mm512_or_si512(hi, _mm512_permutexvar_epi32(hh, table));
        }
        _mm512_storeu_si512(out.add(i), lo);
        _mm512_storeu_si512(out.add(i + 4), hi);
    }
}

/// One block of a pass: loads the A tiles (tokens `t0..t0+32`) and B tiles, computes the four
/// C tiles and stores them to `c` (`[tile][16][16]`, tile = 2 × token group + weight group).
/// With `half`, only the first 16 tokens (tiles 0 and 1): the last pass of a call whose rows
/// end within it.
#[inline(always)]
unsafe fn block_products<const L: u8>(
    a0: *const i8,
    lda: usize,
    b0: *const u8,
    c: *mut i32,
    half: bool,
) {
    // `tdpbssd` (signed weights, Q8_0) or `tdpbsud` (unsigned quants) on pairs of tiles.
    macro_rules! dp {
        ($($op:literal),+) => {
            if L == L_I8 {
                asm!($(concat!("tdpbssd ", $op)),+, options(nostack, nomem, preserves_flags));
            } else {
                asm!($(concat!("tdpbsud ", $op)),+, options(nostack, nomem, preserves_flags));
            }
        };
    }
    let b1 = b0.add(B_TILE);
    // Tokens t0..t0+16: C0 = A0 B0, C1 = A0 B1.
    asm!(
        "tilezero tmm0",
        "tilezero tmm1",
        "tileloadd tmm4, [{a0} + {lda}*1]",
        "tileloadd tmm6, [{b0} + {ldb}*1]",
        "tileloadd tmm7, [{b1} + {ldb}*1]",
        a0 = in(reg) a0,
        b0 = in(reg) b0,
        b1 = in(reg) b1,
        lda = in(reg) lda,
        ldb = in(reg) 64usize,
        options(nostack, readonly, preserves_flags),
    );
    dp!("tmm0, tmm4, tmm6", "tmm1, tmm4, tmm7");
    asm!(
        "tilestored [{c0} + {ldc}*1], tmm0",
        "tilestored [{c1} + {ldc}*1], tmm1",
        c0 = in(reg) c,
        c1 = in(reg) c.add(256),
        ldc = in(reg) 64usize,
        options(nostack, preserves_flags),
    );
    if half {
        return;
    }
    // Tokens t0+16..t0+32: C2 = A1 B0, C3 = A1 B1 (the B tiles are still loaded).
    asm!(
        "tilezero tmm2",
        "tilezero tmm3",
        "tileloadd tmm5, [{a1} + {lda}*1]",
        a1 = in(reg) a0.add(16 * lda),
        lda = in(reg) lda,
        options(nostack, readonly, preserves_flags),
    );
    dp!("tmm2, tmm5, tmm6", "tmm3, tmm5, tmm7");
    asm!(
        "tilestored [{c2} + {ldc}*1], tmm2",
        "tilestored [{c3} + {ldc}*1], tmm3",
        c2 = in(reg) c.add(512),
        c3 = in(reg) c.add(768),
        ldc = in(reg) 64usize,
        options(nostack, preserves_flags),
    );
}

/// All `m` activation rows against weight rows `j0..j1`, offset or min term included.
///
/// # Safety
/// [`available`] is true; `a` holds `m` rows of `w.k` padded with [`pad_rows`]; `o` is valid
/// for `m` rows and columns `j0..j1`, which no other thread writes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
pub unsafe fn rows<const L: u8>(w: &Packed, a: &ActQ, m: usize, j0: usize, j1: usize, o: Out) {
    debug_assert!(a.qs.len() >= m.next_multiple_of(PASS_ROWS) * w.k);
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        rows_with::<L>(&mut s, w, a, m, j0, j1, o);
    });
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn rows_with<const L: u8>(
    s: &mut Scratch,
    w: &Packed,
    a: &ActQ,
    m: usize,
    j0: usize,
    j1: usize,
    o: Out,
) {
    let nb = w.nb();
    let k = w.k;
    s.bt.resize(2 * nb * B_TILE, 0);
    s.dw.resize(2 * nb * 16, 0.0);
    s.cw.resize(2 * nb * 16, 0.0);
    s.acc.resize(PASS_ROWS * PASS_COLS, 0.0);
    s.c.resize(4 * 256, 0);
    asm!("ldtilecfg [{}]", in(reg) &CONFIG as *const TileConfig, options(nostack, readonly));
    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let ad = a.d.as_ptr();
    let asum = a.s.as_ptr();
    let mut j = j0;
    while j < j1 {
        let cols = (j1 - j).min(PASS_COLS);
        // Unpack 32 weight rows, `[block][group]` so one block's two B tiles are adjacent
        // (rows past j1 repeat the last one; their columns are never written out).
        for g in 0..2 {
            let first = (j + 16 * g).min(j1 - 1);
            let last = _mm512_set1_epi32((j1 - 1 - first).min(15) as i32);
            let rows =
                _mm512_mullo_epi32(_mm512_min_epi32(lanes, last), _mm512_set1_epi32(nb as i32));
            for b in 0..nb {
                let at = 2 * b + g;
                unpack_block::<L>(
                    w,
                    first,
                    rows,
                    b,
                    s.bt.as_mut_ptr().add(at * B_TILE),
                    s.dw.as_mut_ptr().add(at * 16),
                    s.cw.as_mut_ptr().add(at * 16),
                );
            }
        }
        let acc = s.acc.as_mut_ptr();
        let c = s.c.as_mut_ptr();
        let mut t0 = 0;
        while t0 < m {
            let half = m - t0 <= 16;
            let groups = if half { 1 } else { 2 };
            std::ptr::write_bytes(acc, 0, PASS_ROWS * PASS_COLS);
            for b in 0..nb {
                block_products::<L>(
                    a.qs.as_ptr().add((t0 * nb + b) * 32),
                    k,
                    s.bt.as_ptr().add(2 * b * B_TILE),
                    c,
                    half,
                );
                // acc[t][r] += C[t][r] * dy[t] * dw[r] + s[t] * c[r].
                for g in 0..2 {
                    let dw = _mm512_loadu_ps(s.dw.as_ptr().add((2 * b + g) * 16));
                    let cw = _mm512_loadu_ps(s.cw.as_ptr().add((2 * b + g) * 16));
                    for tg in 0..groups {
                        let tile = c.add((2 * tg + g) * 256);
                        for r in 0..16 {
                            let t = t0 + 16 * tg + r;
                            let dy = _mm512_set1_ps(*ad.add(t * nb + b));
                            let sy = _mm512_set1_ps(*asum.add(t * nb + b));
                            let p = _mm512_cvtepi32_ps(_mm512_loadu_si512(
                                tile.add(16 * r) as *const __m512i
                            ));
                            let at = acc.add((16 * tg + r) * PASS_COLS + 16 * g);
                            let v = _mm512_fmadd_ps(p, _mm512_mul_ps(dw, dy), _mm512_loadu_ps(at));
                            _mm512_storeu_ps(at, _mm512_fmadd_ps(cw, sy, v));
                        }
                    }
                }
            }
            // Write the valid tokens and weight rows (the lanes of `cols` columns).
            let lanes_of = |n: usize| ((1u32 << n.min(16)) - 1) as __mmask16;
            let (mask0, mask1) = (lanes_of(cols), lanes_of(cols.saturating_sub(16)));
            for t in 0..(m - t0).min(PASS_ROWS) {
                let dst = o.ptr.add((t0 + t) * o.ld + j);
                let src = acc.add(t * PASS_COLS);
                _mm512_mask_storeu_ps(dst, mask0, _mm512_loadu_ps(src));
                _mm512_mask_storeu_ps(dst.wrapping_add(16), mask1, _mm512_loadu_ps(src.add(16)));
            }
            t0 += PASS_ROWS;
        }
        j += cols;
    }
    asm!("tilerelease", options(nostack, nomem, preserves_flags));
}
