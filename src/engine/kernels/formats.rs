//! Reading GGML block formats into the kernels' own row-major layouts.
//!
//! Block formats (GGML `ggml-common.h`, read for the layouts; no code copied): every type here
//! covers 32 weights per scale except the K-quants, whose 256-weight super-blocks are split into
//! 32-weight sub-blocks on load. A weight of a 4- or 5-bit block is `d * u + c` with `u`
//! unsigned (`0..=15` or `0..=31`) and `c` the block's offset (`-8 d`, `-16 d` or the stored
//! min); a Q8_0 weight is `d * q` with `q` a signed byte.

use candle_core::quantized::GgmlDType;

/// Weights per block in every internal layout (GGML `QK4_0 = QK8_0 = 32`).
pub const BLOCK: usize = 32;

/// Weights per K-quant super-block (GGML `QK_K = 256`).
const QK_K: usize = 256;

/// The internal layouts the SIMD kernels read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// 16 bytes of nibbles per block: byte `i` holds weight `i` (low) and `i + 16` (high).
    U4,
    /// [`Layout::U4`] nibbles plus a `u32` of fifth bits (bit `i` = bit 4 of weight `i`).
    U5,
    /// 32 signed bytes per block.
    I8,
}

/// A matrix in an internal layout: `n` rows of `k` weights, `k / 32` blocks per row.
#[derive(Debug, Clone)]
pub struct Packed {
    /// Layout of `qs`/`qh`.
    pub layout: Layout,
    /// Rows (output features).
    pub n: usize,
    /// Columns (input features), a multiple of [`BLOCK`].
    pub k: usize,
    /// Per-block scale `d`, `[n * k/32]` row-major.
    pub d: Vec<f32>,
    /// Per-block stored min `c` (`weight = d*u + c`), `[n * k/32]`, for types with one (Q4_1,
    /// Q5_1, Q4_K); empty when [`Packed::offset`] gives `c = -o * d` (see [`Packed::c_at`]).
    pub c: Vec<f32>,
    /// Fifth bits per block ([`Layout::U5`] only, else empty).
    pub qh: Vec<u32>,
    /// Packed quants: 16 bytes per block (U4/U5) or 32 (I8).
    pub qs: Vec<u8>,
    /// The integer offset `o` when `c = -o * d` for every block (Q4_0: 8, Q5_0: 16, and 128
    /// for biased Q8_0); `None` for types with a stored min (Q4_1, Q5_1, Q4_K).
    pub offset: Option<i32>,
}

/// IEEE binary16 bits to f32 (exact; handles subnormals, infinities and NaN).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            // Subnormal: value = man * 2^-24.
            let v = man as f32 * f32::from_bits(0x3380_0000); // 2^-24
            return if sign != 0 { -v } else { v };
        }
    } else if exp == 0x1f {
        sign | 0x7f80_0000 | (man << 13)
    } else {
        sign | ((exp + 112) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

fn rd16(b: &[u8], o: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[o], b[o + 1]]))
}

/// Bytes per GGML block and weights per block of the types [`pack`] reads.
pub fn block_geometry(dtype: GgmlDType) -> Option<(usize, usize)> {
    Some(match dtype {
        GgmlDType::Q4_0 => (18, 32),
        GgmlDType::Q4_1 => (20, 32),
        GgmlDType::Q5_0 => (22, 32),
        GgmlDType::Q5_1 => (24, 32),
        GgmlDType::Q8_0 => (34, 32),
        GgmlDType::Q4K => (144, QK_K),
        _ => return None,
    })
}

struct Builder {
    p: Packed,
}

impl Builder {
    /// `mins`: the type stores a min per block (else `c` stays empty: the offset gives it).
    fn new(layout: Layout, n: usize, k: usize, mins: bool) -> Self {
        let nb = n * k / BLOCK;
        let per = if layout == Layout::I8 { 32 } else { 16 };
        Builder {
            p: Packed {
                layout,
                n,
                k,
                d: Vec::with_capacity(nb),
                c: Vec::with_capacity(if mins { nb } else { 0 }),
                qh: Vec::with_capacity(if layout == Layout::U5 { nb } else { 0 }),
                qs: Vec::with_capacity(nb * per),
                offset: None,
            },
        }
    }

    /// Appends one block of unsigned quants `u` (values < 16 for U4, < 32 for U5) with scale
    /// `d` and stored min `c` (`None` for offset types).
    fn push_u(&mut self, d: f32, c: Option<f32>, u: &[u8; 32]) {
        self.p.d.push(d);
        if let Some(c) = c {
            self.p.c.push(c);
        }
        for i in 0..16 {
            self.p.qs.push((u[i] & 0xf) | ((u[i + 16] & 0xf) << 4));
        }
        if self.p.layout == Layout::U5 {
            let mut h = 0u32;
            for (i, &v) in u.iter().enumerate() {
                h |= (((v >> 4) & 1) as u32) << i;
            }
            self.p.qh.push(h);
        }
    }

    fn push_i8(&mut self, d: f32, q: &[u8]) {
        self.p.d.push(d);
        self.p.qs.extend_from_slice(&q[..32]);
    }
}

/// Repacks raw GGML bytes of an `[n, k]` matrix of `dtype` into an internal layout, exactly
/// (no re-quantization). Returns `None` for a type without a layout here.
///
/// # Panics
/// If `data` is shorter than `n * k` weights of `dtype` or `k` is not a block multiple.
pub fn pack(dtype: GgmlDType, data: &[u8], n: usize, k: usize) -> Option<Packed> {
    let (bytes, per) = block_geometry(dtype)?;
    assert!(k.is_multiple_of(per), "k = {k} is not a multiple of {per}");
    assert!(data.len() >= n * k / per * bytes, "GGML data too short");
    let layout = match dtype {
        GgmlDType::Q4_0 | GgmlDType::Q4_1 | GgmlDType::Q4K => Layout::U4,
        GgmlDType::Q5_0 | GgmlDType::Q5_1 => Layout::U5,
        _ => Layout::I8,
    };
    let mins = matches!(dtype, GgmlDType::Q4_1 | GgmlDType::Q5_1 | GgmlDType::Q4K);
    let mut b = Builder::new(layout, n, k, mins);
    b.p.offset = match dtype {
        GgmlDType::Q4_0 => Some(8),
        GgmlDType::Q5_0 => Some(16),
        GgmlDType::Q8_0 => Some(128),
        _ => None,
    };
    let mut u = [0u8; 32];
    for blk in data[..n * k / per * bytes].chunks_exact(bytes) {
        match dtype {
            GgmlDType::Q4_0 | GgmlDType::Q4_1 => {
                let d = rd16(blk, 0);
                let (c, qs) = if dtype == GgmlDType::Q4_0 {
                    (None, &blk[2..18])
                } else {
                    (Some(rd16(blk, 2)), &blk[4..20])
                };
                for i in 0..16 {
                    u[i] = qs[i] & 0xf;
                    u[i + 16] = qs[i] >> 4;
                }
                b.push_u(d, c, &u);
            }
            GgmlDType::Q5_0 | GgmlDType::Q5_1 => {
                let d = rd16(blk, 0);
                let (c, o) = if dtype == GgmlDType::Q5_0 {
                    (None, 2)
                } else {
                    (Some(rd16(blk, 2)), 4)
                };
                let qh = u32::from_le_bytes([blk[o], blk[o + 1], blk[o + 2], blk[o + 3]]);
                let qs = &blk[o + 4..o + 20];
                for i in 0..16 {
                    u[i] = (qs[i] & 0xf) | ((((qh >> i) & 1) as u8) << 4);
                    u[i + 16] = (qs[i] >> 4) | ((((qh >> (i + 16)) & 1) as u8) << 4);
                }
                b.push_u(d, c, &u);
            }
            GgmlDType::Q8_0 => b.push_i8(rd16(blk, 0), &blk[2..34]),
            GgmlDType::Q4K => {
                // d, dmin (f16), 12 bytes of 6-bit scales/mins, 128 bytes of nibbles: each
                // 32-byte group holds sub-block 2j (low nibbles) and 2j+1 (high nibbles).
                let d = rd16(blk, 0);
                let dmin = rd16(blk, 2);
                let sc = &blk[4..16];
                let qs = &blk[16..144];
                for sb in 0..8 {
                    let (s, m) = scale_min_k4(sb, sc);
                    let group = &qs[(sb / 2) * 32..(sb / 2) * 32 + 32];
                    for (l, &q) in group.iter().enumerate() {
                        u[l] = if sb % 2 == 0 { q & 0xf } else { q >> 4 };
                    }
                    b.push_u(d * s as f32, Some(-dmin * m as f32), &u);
                }
            }
            _ => return None,
        }
    }
    Some(b.p)
}

/// The 6-bit scale and min of sub-block `j` (0..8) of a Q4_K/Q5_K super-block (GGML
/// `get_scale_min_k4`'s packing: the first four pairs in the low 6 bits of bytes 0..8, the
/// last four split over bytes 8..12 and the top 2 bits of bytes 0..8).
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

impl Packed {
    /// Blocks per row.
    pub fn nb(&self) -> usize {
        self.k / BLOCK
    }

    /// Offset of block `blk` (global index `row * nb + b`): the stored min, or `-o * d` for
    /// an offset type (for [`Layout::I8`], `-128 d`: the correction the VNNI kernels need
    /// after biasing signed weights to unsigned).
    #[inline]
    pub fn c_at(&self, blk: usize) -> f32 {
        match self.offset {
            Some(o) => -(o as f32) * self.d[blk],
            None => self.c[blk],
        }
    }

    /// The 32 quants of block `blk` (global index `row * nb + b`) as integers: unsigned `u`
    /// for U4/U5, signed `q` for I8.
    pub fn quants(&self, blk: usize) -> [i32; 32] {
        let mut out = [0i32; 32];
        match self.layout {
            Layout::I8 => {
                for (o, &q) in out.iter_mut().zip(&self.qs[blk * 32..blk * 32 + 32]) {
                    *o = q as i8 as i32;
                }
            }
            Layout::U4 | Layout::U5 => {
                let qs = &self.qs[blk * 16..blk * 16 + 16];
                let h = if self.layout == Layout::U5 {
                    self.qh[blk]
                } else {
                    0
                };
                for i in 0..16 {
                    out[i] = (qs[i] & 0xf) as i32 | ((((h >> i) & 1) << 4) as i32);
                    out[i + 16] = (qs[i] >> 4) as i32 | ((((h >> (i + 16)) & 1) << 4) as i32);
                }
            }
        }
        out
    }

    /// Dequantizes the whole matrix to f32, `[n * k]` row-major (tests and checks).
    pub fn dequantize(&self) -> Vec<f32> {
        let nbt = self.n * self.nb();
        let mut out = Vec::with_capacity(nbt * BLOCK);
        for blk in 0..nbt {
            let q = self.quants(blk);
            let (d, c) = (self.d[blk], self.c_at(blk));
            for v in q {
                out.push(match self.layout {
                    Layout::I8 => d * v as f32,
                    _ => d * v as f32 + c,
                });
            }
        }
        out
    }
}
