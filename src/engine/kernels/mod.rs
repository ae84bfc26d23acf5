//! Our CPU quantized matmul: weights kept in their file's quant type (repacked at load into
//! SIMD-friendly rows), activations quantized per row to 8-bit blocks, integer dot products
//! with AVX2 / AVX-512 VNNI / AVX-VNNI chosen at run time, AMX-INT8 tiles for prefill where the
//! CPU has them ([`amx`]), and a scalar path that is always compiled and tested equal.
//!
//! Supported weights: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q4_K kept exactly (a Q4_K sub-block of
//! 32 is a Q4_1-style block with f32 scale and min); other K-quants (Q6_K, Q5_K, Q3_K, Q2_K)
//! are re-quantized to Q8_0 at load. F32/F16/BF16 stay on candle's path ([`QLinear::new`]
//! returns `None`).
//!
//! Math per weight row `j`, activation row `i`, over blocks `b` of 32:
//! `y[i,j] = sum_b dw[j,b] * dy[i,b] * dot(u[j,b], q[i,b]) + c[j,b] * dy[i,b] * sum(q[i,b])`,
//! with `u` the unsigned (or signed, for Q8_0 off VNNI) weight quants and `c` the block offset;
//! the second term is a small `[m, nb] x [nb, n]` product done per task after the tiles.
//!
//! Threads: the weight rows are cut into about 4 chunks per thread of the calling thread's
//! executor (the forward pass's compute team, else rayon's pool) and claimed one at a time,
//! so a core taken by another process only slows the chunks it would have run instead of
//! stalling a barrier.

// AVX-512 and AVX-VNNI intrinsics need Rust 1.89: Cargo.toml's rust-version.

pub mod act;
#[cfg(target_arch = "x86_64")]
pub mod amx;
pub mod formats;
#[cfg(target_arch = "x86_64")]
pub mod x86;
#[cfg(target_arch = "x86_64")]
pub mod x86_512;

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};

use crate::engine::team::{par_for, parallelism, SharedMut};
use act::ActQ;
use formats::{Layout, Packed, BLOCK};

/// Environment variable that overrides the kernel choice (see [`Isa::choose`]).
pub const KERNELS_ENV: &str = "TOOLSUM_KERNELS";

/// An instruction-set path for the integer dot products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// Portable Rust, always available; the reference the SIMD paths are tested against.
    Scalar,
    /// AVX2 + FMA (`vpmaddubsw`/`vpmaddwd`).
    Avx2,
    /// AVX-512 VNNI (+BW, VL): 512-bit `vpdpbusd` over two blocks at a time
    /// ([`x86_512`]), or the 256-bit kernel when a row has an odd number of blocks.
    Avx512Vnni,
    /// AVX-VNNI (`vpdpbusd`, VEX-encoded, 16 registers).
    AvxVnni,
    /// AMX-INT8 tiles ([`amx`]) for matmuls of at least [`amx::MIN_ROWS`] activation rows
    /// (prefill), the [`Isa::Avx512Vnni`] kernels for the rest (decode).
    Amx,
}

impl Isa {
    /// The best path this CPU supports (run-time detection).
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            if avx2
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("avx512vnni")
            {
                return if amx::available() {
                    Isa::Amx
                } else {
                    Isa::Avx512Vnni
                };
            }
            if avx2 && is_x86_feature_detected!("avxvnni") {
                return Isa::AvxVnni;
            }
            if avx2 {
                return Isa::Avx2;
            }
        }
        Isa::Scalar
    }

    /// The path the engine uses: [`Isa::detect`], unless the environment variable
    /// [`KERNELS_ENV`] says `candle` (returns `None`: use candle's kernels, for A/B runs) or
    /// names a path (`scalar`, `avx2`, `avxvnni`, `avx512vnni`; ignored if this CPU lacks it).
    pub fn choose() -> Option<Isa> {
        match std::env::var(KERNELS_ENV).as_deref() {
            Ok("candle") => None,
            Ok(name) => Some(
                Isa::available()
                    .into_iter()
                    .find(|i| i.name() == name)
                    .unwrap_or_else(Isa::detect),
            ),
            Err(_) => Some(Isa::detect()),
        }
    }

    /// Every path this CPU can run, scalar first (for tests and benchmarks).
    pub fn available() -> Vec<Isa> {
        let mut v = vec![Isa::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                v.push(Isa::Avx2);
                if is_x86_feature_detected!("avxvnni") {
                    v.push(Isa::AvxVnni);
                }
                if is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vl")
                    && is_x86_feature_detected!("avx512vnni")
                {
                    v.push(Isa::Avx512Vnni);
                    if amx::available() {
                        v.push(Isa::Amx);
                    }
                }
            }
        }
        v
    }

    /// Short name used in [`QLinear::kernel_name`] (`scalar`, `avx2`, `avx512vnni`, `avxvnni`,
    /// `amx`).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512Vnni => "avx512vnni",
            Isa::AvxVnni => "avxvnni",
            Isa::Amx => "amx",
        }
    }

    /// Whether this path implies AVX-512 (F, BW, VL, VNNI) on the CPU.
    pub fn avx512(self) -> bool {
        matches!(self, Isa::Avx512Vnni | Isa::Amx)
    }

    /// Whether a matmul of `m` activation rows runs on AMX tiles.
    pub fn tiles_for(self, m: usize) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            // `available()` also asked the OS for the tile state: a forced `Isa::Amx` on a
            // CPU or kernel without it falls back to the AVX-512 kernels instead of faulting.
            self == Isa::Amx && m >= amx::MIN_ROWS && amx::available()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = m;
            false
        }
    }

    /// Whether Q8_0 weights are biased to unsigned (VNNI), so their offset term applies.
    fn biased_i8(self) -> bool {
        matches!(self, Isa::Avx512Vnni | Isa::AvxVnni | Isa::Amx)
    }
}

/// A quantized linear layer `y = x W^T` on the CPU: `W` is `[n, k]` (candle's `QMatMul`
/// weight shape), `x` is `[.., k]` f32, `y` is `[.., n]` f32.
#[derive(Debug, Clone)]
pub struct QLinear {
    w: Packed,
    isa: Isa,
    /// Name of the file's type, with the conversion if any (e.g. `Q6_K→Q8_0`).
    source: String,
}

fn dtype_name(d: GgmlDType) -> &'static str {
    match d {
        GgmlDType::F32 => "F32",
        GgmlDType::F16 => "F16",
        GgmlDType::BF16 => "BF16",
        GgmlDType::Q4_0 => "Q4_0",
        GgmlDType::Q4_1 => "Q4_1",
        GgmlDType::Q5_0 => "Q5_0",
        GgmlDType::Q5_1 => "Q5_1",
        GgmlDType::Q8_0 => "Q8_0",
        GgmlDType::Q8_1 => "Q8_1",
        GgmlDType::Q2K => "Q2_K",
        GgmlDType::Q3K => "Q3_K",
        GgmlDType::Q4K => "Q4_K",
        GgmlDType::Q5K => "Q5_K",
        GgmlDType::Q6K => "Q6_K",
        GgmlDType::Q8K => "Q8_K",
    }
}

impl QLinear {
    /// Builds the layer from a 2-D CPU `QTensor` `[n, k]`, for `isa` (use [`Isa::detect`]).
    /// Returns `Ok(None)` when this type has no kernel here (F32/F16/BF16, Q8_1, Q8_K), the
    /// tensor is not 2-D, not on the CPU, or `k` is not a multiple of 32.
    ///
    /// # Errors
    /// Candle errors reading the tensor's bytes or re-quantizing a K-quant to Q8_0.
    pub fn new(t: &QTensor, isa: Isa) -> candle_core::Result<Option<QLinear>> {
        let dims = t.shape().dims();
        if dims.len() != 2 || !dims[1].is_multiple_of(BLOCK) {
            return Ok(None);
        }
        let (n, k) = (dims[0], dims[1]);
        let dt = t.dtype();
        if formats::block_geometry(dt).is_some() {
            let data = t.data()?;
            let w = formats::pack(dt, &data, n, k);
            return Ok(w.map(|w| QLinear {
                w,
                isa,
                source: dtype_name(dt).to_string(),
            }));
        }
        match dt {
            GgmlDType::Q6K | GgmlDType::Q5K | GgmlDType::Q3K | GgmlDType::Q2K => {
                let q8 = QTensor::quantize(&t.dequantize(&Device::Cpu)?, GgmlDType::Q8_0)?;
                let data = q8.data()?;
                let w = formats::pack(GgmlDType::Q8_0, &data, n, k);
                Ok(w.map(|w| QLinear {
                    w,
                    isa,
                    source: format!("{}→Q8_0", dtype_name(dt)),
                }))
            }
            _ => Ok(None),
        }
    }

    /// Output features `n`.
    pub fn n(&self) -> usize {
        self.w.n
    }

    /// Input features `k`.
    pub fn k(&self) -> usize {
        self.w.k
    }

    /// The path in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// The same weights on another path (tests and benchmarks compare paths with it).
    pub fn with_isa(&self, isa: Isa) -> QLinear {
        QLinear {
            isa,
            ..self.clone()
        }
    }

    /// `type/isa`, e.g. `Q5_0/avx512vnni` or `Q6_K→Q8_0/avx2`.
    pub fn kernel_name(&self) -> String {
        format!("{}/{}", self.source, self.isa.name())
    }

    /// Address ranges `(start, bytes)` of the packed buffers (quants, scales, mins, fifth
    /// bits; empty ones have 0 bytes), for `hugepages::advise`.
    pub fn buffers(&self) -> [(usize, usize); 4] {
        fn r<T>(v: &[T]) -> (usize, usize) {
            (v.as_ptr() as usize, std::mem::size_of_val(v))
        }
        [r(&self.w.qs), r(&self.w.d), r(&self.w.c), r(&self.w.qh)]
    }

    /// The weights dequantized to f32, `[n * k]` row-major.
    pub fn dequantize(&self) -> Vec<f32> {
        self.w.dequantize()
    }

    /// `out[i * n + j] = sum_k x[i * k + kk] * W[j, kk]` for `m = x.len() / k` rows.
    ///
    /// # Panics
    /// If `x.len()` is not a multiple of `k` or `out.len() != m * n`.
    pub fn matmul(&self, x: &[f32], out: &mut [f32]) {
        matmul_many(&[self], x, &mut [out]);
    }

    /// Computes weight rows `j0..j1` for all `m` rows of `a`, offset term included.
    ///
    /// # Safety
    /// `out` is valid for `m * n` f32 and no other thread writes columns `j0..j1`.
    unsafe fn rows(&self, a: &ActQ, m: usize, j0: usize, j1: usize, out: *mut f32) {
        let w = &self.w;
        #[cfg(target_arch = "x86_64")]
        {
            let o = x86::Out { ptr: out, ld: w.n };
            macro_rules! go {
                ($isa:ident) => {
                    match x86::tag(w.layout) {
                        x86::L_U4 => x86::$isa::rows::<{ x86::L_U4 }>(w, a, m, j0, j1, o),
                        x86::L_U5 => x86::$isa::rows::<{ x86::L_U5 }>(w, a, m, j0, j1, o),
                        _ => x86::$isa::rows::<{ x86::L_I8 }>(w, a, m, j0, j1, o),
                    }
                };
            }
            match self.isa {
                Isa::Scalar => scalar_rows(w, a, m, j0, j1, out),
                Isa::Avx2 => go!(avx2),
                Isa::Amx if self.isa.tiles_for(m) => match x86::tag(w.layout) {
                    x86::L_U4 => amx::rows::<{ x86::L_U4 }>(w, a, m, j0, j1, o),
                    x86::L_U5 => amx::rows::<{ x86::L_U5 }>(w, a, m, j0, j1, o),
                    _ => amx::rows::<{ x86::L_I8 }>(w, a, m, j0, j1, o),
                },
                Isa::Avx512Vnni | Isa::Amx if w.nb().is_multiple_of(2) => {
                    match x86::tag(w.layout) {
                        x86::L_U4 => x86_512::rows::<{ x86::L_U4 }>(w, a, m, j0, j1, o),
                        x86::L_U5 => x86_512::rows::<{ x86::L_U5 }>(w, a, m, j0, j1, o),
                        _ => x86_512::rows::<{ x86::L_I8 }>(w, a, m, j0, j1, o),
                    }
                }
                Isa::Avx512Vnni | Isa::Amx => go!(avx512vnni),
                Isa::AvxVnni => go!(avxvnni),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        scalar_rows(w, a, m, j0, j1, out);
        // The 512-bit kernel folds integer offsets into its dot products and stored mins
        // into its accumulators; the tile kernel adds both per block.
        let folded = self.isa.tiles_for(m) || (self.isa.avx512() && w.nb().is_multiple_of(2));
        if !folded && (w.layout != Layout::I8 || self.isa.biased_i8()) {
            offset_term(w, a, m, j0, j1, out);
        }
    }

    /// Applies the layer to a candle tensor `[.., k]` (any float dtype; computed in f32) on
    /// the CPU and returns `[.., n]` f32.
    ///
    /// # Errors
    /// If the last dimension is not `k` or the tensor is not on the CPU.
    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        if !x.device().is_cpu() {
            candle_core::bail!("QLinear runs on the CPU only");
        }
        let dims = x.dims();
        let k = *dims.last().unwrap_or(&0);
        if k != self.w.k {
            candle_core::bail!("QLinear: input last dim {k} != k {}", self.w.k);
        }
        let xv = x.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        let m = xv.len() / k;
        let mut out = vec![0f32; m * self.w.n];
        self.matmul(&xv, &mut out);
        let mut od = dims.to_vec();
        *od.last_mut().expect("non-empty dims") = self.w.n;
        Tensor::from_vec(out, od, x.device())
    }
}

/// Applies several layers that share one input: `outs[l] = x W_l^T` for `m = x.len() / k`
/// rows (every layer's `k` equal). `x` is quantized once and the weight rows of all layers
/// form one queue of chunks (about 4 per thread, multiples of 4 rows) claimed by the
/// executor's threads (`team::par_for`), so q/k/v or gate/up cost one parallel dispatch instead of three or two.
///
/// # Panics
/// If the layers' `k` or kernel paths differ, `x.len()` is not a multiple of `k`, `outs.len()`
/// differs from `layers.len()`, or `outs[l].len() != m * n_l`.
pub fn matmul_many(layers: &[&QLinear], x: &[f32], outs: &mut [&mut [f32]]) {
    assert_eq!(layers.len(), outs.len(), "one output per layer");
    let Some(first) = layers.first() else {
        return;
    };
    let k = first.w.k;
    assert!(
        x.len().is_multiple_of(k),
        "input length {} is not a multiple of k = {k}",
        x.len()
    );
    let m = x.len() / k;
    assert!(
        layers.iter().all(|l| l.isa == first.isa),
        "layers of one matmul_many share a kernel path"
    );
    let threads = parallelism();
    // Tile passes cover 32 weight rows: chunks are multiples of 32 there.
    let tiles = first.isa.tiles_for(m);
    #[cfg(target_arch = "x86_64")]
    let grain = if tiles { amx::PASS_COLS } else { 4 };
    #[cfg(not(target_arch = "x86_64"))]
    let grain = 4;
    let mut tasks: Vec<(usize, usize, usize)> = Vec::new();
    for (l, (layer, out)) in layers.iter().zip(outs.iter()).enumerate() {
        assert_eq!(layer.w.k, k, "layers of one matmul_many share k");
        let n = layer.w.n;
        assert_eq!(out.len(), m * n, "output length");
        if m == 0 || n == 0 {
            continue;
        }
        let chunk = n.div_ceil(threads * 4).next_multiple_of(grain).max(grain);
        tasks.extend((0..n.div_ceil(chunk)).map(|c| (l, c * chunk, ((c + 1) * chunk).min(n))));
    }
    if tasks.is_empty() {
        return;
    }
    let mut a = ActQ::default();
    // Prefill: the rows' quantization is split across the executor's threads (decode's one
    // row stays on the caller).
    let rows_per = if threads > 1 && m >= 2 * threads {
        m.div_ceil(threads * 2)
    } else {
        m.max(1)
    };
    a.quantize_rows_split(x, k, first.isa != Isa::Scalar, rows_per * k, |n, f| {
        par_for(n, f)
    });
    #[cfg(target_arch = "x86_64")]
    if tiles {
        amx::pad_rows(&mut a, k);
    }
    let ptrs: Vec<SharedMut> = outs.iter_mut().map(|o| SharedMut(o.as_mut_ptr())).collect();
    let run = |&(l, j0, j1): &(usize, usize, usize)| {
        // SAFETY: tasks write disjoint columns j0..j1 of layer l's m x n output, which
        // outlives the parallel loop; `a` holds m rows of k.
        unsafe { layers[l].rows(&a, m, j0, j1, ptrs[l].get()) };
    };
    par_for(tasks.len(), |i| run(&tasks[i]));
}

/// The portable kernel: integer dot per block, f32 accumulate (same math as the SIMD tiles;
/// I8 weights stay signed so no offset term is needed for them).
///
/// # Safety
/// As [`QLinear::rows`].
unsafe fn scalar_rows(w: &Packed, a: &ActQ, m: usize, j0: usize, j1: usize, out: *mut f32) {
    let nb = w.nb();
    let mut wq = vec![[0i32; 32]; nb];
    for j in j0..j1 {
        for (b, q) in wq.iter_mut().enumerate() {
            *q = w.quants(j * nb + b);
        }
        for i in 0..m {
            let mut acc = 0f32;
            for (b, q) in wq.iter().enumerate() {
                let y = &a.qs[(i * nb + b) * 32..(i * nb + b) * 32 + 32];
                let dot: i32 = q.iter().zip(y).map(|(&u, &v)| u * v as i32).sum();
                acc += w.d[j * nb + b] * a.d[i * nb + b] * dot as f32;
            }
            *out.add(i * w.n + j) = acc;
        }
    }
}

/// Adds `sum_b c[j,b] * s[i,b]` to `out[i, j]` for `j0..j1`.
///
/// # Safety
/// As [`QLinear::rows`].
unsafe fn offset_term(w: &Packed, a: &ActQ, m: usize, j0: usize, j1: usize, out: *mut f32) {
    let nb = w.nb();
    let mut c = vec![0f32; nb];
    for j in j0..j1 {
        for (b, cb) in c.iter_mut().enumerate() {
            *cb = w.c_at(j * nb + b);
        }
        for i in 0..m {
            let s = &a.s[i * nb..(i + 1) * nb];
            // 8 partial sums so the loop vectorizes.
            let mut p = [0f32; 8];
            let (cc, cr) = c.split_at(nb / 8 * 8);
            let (sc, sr) = s.split_at(nb / 8 * 8);
            for (c8, s8) in cc.chunks_exact(8).zip(sc.chunks_exact(8)) {
                for l in 0..8 {
                    p[l] += c8[l] * s8[l];
                }
            }
            let mut t: f32 = p.iter().sum();
            for (x, y) in cr.iter().zip(sr) {
                t += x * y;
            }
            *out.add(i * w.n + j) += t;
        }
    }
}

#[cfg(test)]
mod tests;
