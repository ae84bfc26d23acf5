//! Kernel tests: repacking against candle's dequantization, every SIMD path against the
//! scalar path, and the matmul against dequantize + f32 matmul.

use super::*;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

/// xorshift64*: deterministic test data without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [-1, 1).
    fn f(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f()).collect()
    }
}

const TYPES: &[GgmlDType] = &[
    GgmlDType::Q4_0,
    GgmlDType::Q4_1,
    GgmlDType::Q5_0,
    GgmlDType::Q5_1,
    GgmlDType::Q8_0,
    GgmlDType::Q4K,
    GgmlDType::Q6K,
];

fn qtensor(dt: GgmlDType, n: usize, k: usize, seed: u64) -> QTensor {
    let mut r = Rng(seed);
    let w = Tensor::from_vec(r.vec(n * k), (n, k), &Device::Cpu).unwrap();
    QTensor::quantize(&w, dt).unwrap()
}

#[test]
fn repacked_weights_equal_candle_dequantize() {
    for &dt in TYPES {
        let qt = qtensor(dt, 7, 512, 1);
        let ql = QLinear::new(&qt, Isa::Scalar).unwrap().expect("supported");
        let ours = ql.dequantize();
        let theirs = qt.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap();
        let theirs = theirs.to_vec1::<f32>().unwrap();
        // Exact repacks agree to f32 rounding of d*u + c; Q6_K goes through Q8_0.
        let tol = if dt == GgmlDType::Q6K { 0.02 } else { 1e-6 };
        for (a, b) in ours.iter().zip(&theirs) {
            assert!((a - b).abs() <= tol, "{dt:?}: {a} vs {b}");
        }
    }
}

#[test]
fn f16_conversion_matches_known_values() {
    use formats::f16_to_f32;
    assert_eq!(f16_to_f32(0x3c00), 1.0);
    assert_eq!(f16_to_f32(0xc000), -2.0);
    assert_eq!(f16_to_f32(0x7bff), 65504.0);
    assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000);
    assert!(f16_to_f32(0x7c00).is_infinite());
    assert!(f16_to_f32(0x7e00).is_nan());
}

#[cfg(target_arch = "x86_64")]
#[test]
fn simd_quantizer_equals_scalar() {
    if !Isa::available().contains(&Isa::Avx2) {
        return;
    }
    let mut r = Rng(7);
    for t in 0..200 {
        let mut x = r.vec(32);
        if t % 3 == 0 {
            // Exact ties after scaling: multiples of amax/254.
            for v in x.iter_mut() {
                *v = ((*v * 127.0).round() + 0.5) / 127.0;
            }
        }
        if t == 1 {
            x.iter_mut().for_each(|v| *v = 0.0);
        }
        let mut qa = [0i8; 32];
        let mut qb = [0i8; 32];
        let a = act::quantize_block_scalar(&x, &mut qa);
        // SAFETY: AVX2 checked above; both buffers hold 32 elements.
        let b = unsafe { act::quantize_block_avx2(x.as_ptr(), qb.as_mut_ptr()) };
        assert_eq!(qa, qb);
        assert_eq!(a.0.to_bits(), b.0.to_bits());
        assert_eq!(a.1, b.1);
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn simd_block_dots_are_exact() {
    use std::arch::x86_64::*;
    let isas = Isa::available();
    let mut r = Rng(3);
    for _ in 0..500 {
        let w: Vec<u8> = (0..32).map(|_| (r.next() % 32) as u8).collect();
        let y: Vec<i8> = (0..32)
            .map(|_| ((r.next() % 255) as i32 - 127) as i8)
            .collect();
        let want: i32 = w.iter().zip(&y).map(|(&a, &b)| a as i32 * b as i32).sum();
        let run = |f: unsafe fn(__m256i, __m256i) -> __m256i| -> i32 {
            // SAFETY: the caller only passes paths this CPU has; 32-byte loads of 32 bytes.
            unsafe {
                let v = f(
                    _mm256_loadu_si256(w.as_ptr() as *const __m256i),
                    _mm256_loadu_si256(y.as_ptr() as *const __m256i),
                );
                let mut lanes = [0i32; 8];
                _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, v);
                lanes.iter().sum()
            }
        };
        if isas.contains(&Isa::Avx2) {
            assert_eq!(run(x86::avx2::dot), want);
        }
        if isas.contains(&Isa::Avx512Vnni) {
            assert_eq!(run(x86::avx512vnni::dot), want);
        }
        if isas.contains(&Isa::AvxVnni) {
            assert_eq!(run(x86::avxvnni::dot), want);
        }
    }
}

/// Every path gives the scalar path's result (same integer dots; f32 sums in another order),
/// over tile remainders in both dimensions.
#[test]
fn simd_paths_equal_scalar() {
    let mut r = Rng(11);
    for &dt in TYPES {
        // k = 480: an odd number of blocks per row (the 512-bit kernel's fallback).
        for &(n, m, k) in &[
            (13usize, 1usize, 512usize),
            (9, 5, 512),
            (16, 8, 512),
            (40, 6, 576),
            (7, 3, 480),
            // Prefill shapes (AMX tiles from 16 rows): partial passes in both dimensions.
            (45, 37, 576),
            (32, 16, 512),
            (20, 33, 480),
        ] {
            if k % 256 != 0 && matches!(dt, GgmlDType::Q4K | GgmlDType::Q6K) {
                continue;
            }
            let ql = QLinear::new(&qtensor(dt, n, k, 5 + n as u64), Isa::Scalar)
                .unwrap()
                .unwrap();
            // Activations with outliers, as in real hidden states.
            let x: Vec<f32> = r
                .vec(m * k)
                .into_iter()
                .enumerate()
                .map(|(i, v)| if i % 97 == 0 { v * 40.0 } else { v })
                .collect();
            let mut want = vec![0f32; m * n];
            ql.matmul(&x, &mut want);
            for isa in Isa::available().into_iter().skip(1) {
                let mut got = vec![0f32; m * n];
                ql.with_isa(isa).matmul(&x, &mut got);
                for (a, b) in got.iter().zip(&want) {
                    assert!(
                        (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                        "{dt:?} {isa:?} n={n} m={m}: {a} vs {b}"
                    );
                }
            }
        }
    }
}

/// Matmul against candle's dequantized weights times f32 activations: the only difference is
/// the activations' 8-bit quantization (relative error well under 2%).
#[test]
fn matmul_matches_dequantized_f32_matmul() {
    let mut r = Rng(21);
    let (n, k, m) = (24, 768, 4);
    for &dt in TYPES {
        let qt = qtensor(dt, n, k, 99);
        let wf = qt.dequantize(&Device::Cpu).unwrap();
        let x = r.vec(m * k);
        let xt = Tensor::from_vec(x.clone(), (m, k), &Device::Cpu).unwrap();
        let want = xt.matmul(&wf.t().unwrap()).unwrap();
        let want = want.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        for isa in Isa::available() {
            let ql = QLinear::new(&qt, isa).unwrap().unwrap();
            let got = ql
                .forward(&xt.reshape((1, m, k)).unwrap())
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap();
            let err: f32 = got.iter().zip(&want).map(|(a, b)| (a - b) * (a - b)).sum();
            let norm: f32 = want.iter().map(|b| b * b).sum();
            assert!(
                (err / norm).sqrt() < 0.02,
                "{dt:?} {isa:?}: relative error {}",
                (err / norm).sqrt()
            );
        }
    }
}

#[test]
fn unsupported_types_fall_back() {
    let w = Tensor::zeros((4, 64), candle_core::DType::F32, &Device::Cpu).unwrap();
    let qt = QTensor::quantize(&w, GgmlDType::F16).unwrap();
    assert!(QLinear::new(&qt, Isa::Scalar).unwrap().is_none());
}

#[test]
fn split_activation_quantization_equals_serial_in_any_order() {
    let mut rng = Rng(11);
    let (m, k) = (13, 96);
    let x = rng.vec(m * k);
    for simd in [false, Isa::detect() != Isa::Scalar] {
        let mut serial = ActQ::default();
        serial.quantize_rows(&x, k, simd);
        for rows in [1, 3, 5, 13] {
            let mut split = ActQ::default();
            // Parts run last to first, as threads may.
            split.quantize_rows_split(&x, k, simd, rows * k, |n, f| (0..n).rev().for_each(f));
            assert_eq!(split.qs, serial.qs, "rows per part {rows}");
            assert_eq!(split.d, serial.d);
            assert_eq!(split.s, serial.s);
            assert_eq!(split.sq, serial.sq);
        }
    }
}
