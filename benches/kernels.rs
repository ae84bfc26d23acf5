//! Quantized matmul: our kernels (`toolsum::engine::kernels::QLinear`) against candle's
//! `QMatMul`, per quant type, at the shapes of the shipped models (SmolLM2-135M: d=576,
//! ffn=1536; Qwen2.5-0.5B: d=896, ffn=4864), for m = 1 (decode) and m = 256 (a prefill chunk).
//! Both run in the same process on the same global rayon pool, so the ratio holds on a shared
//! machine even when absolute times move.
//!
//! Run: `cargo bench --bench kernels` (filter e.g. `-- Q5_0`). Set `RAYON_NUM_THREADS` to pin
//! the thread count.

use std::time::Duration;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use toolsum::engine::kernels::{Isa, QLinear};

/// (type, weight rows n, input features k) as the models use them.
const CASES: &[(GgmlDType, usize, usize)] = &[
    (GgmlDType::Q5_0, 896, 896),
    (GgmlDType::Q5_0, 4864, 896),
    (GgmlDType::Q8_0, 896, 896),
    (GgmlDType::Q8_0, 4864, 896),
    (GgmlDType::Q4K, 896, 4864),
    (GgmlDType::Q6K, 896, 4864),
    (GgmlDType::Q4_1, 576, 576),
    (GgmlDType::Q4_1, 1536, 576),
    (GgmlDType::Q4_1, 576, 1536),
];

fn weights(dt: GgmlDType, n: usize, k: usize) -> QTensor {
    let w = Tensor::randn(0f32, 0.05, (n, k), &Device::Cpu).expect("randn");
    QTensor::quantize(&w, dt).expect("quantize")
}

fn bench(c: &mut Criterion) {
    let isa = Isa::detect();
    for &(dt, n, k) in CASES {
        let qt = weights(dt, n, k);
        let ours = QLinear::new(&qt, isa).expect("repack").expect("supported");
        let candle = QMatMul::from_qtensor(weights(dt, n, k)).expect("qmatmul");
        let mut g = c.benchmark_group(format!("{dt:?}_{n}x{k}"));
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
        for m in [1usize, 256] {
            let x = Tensor::randn(0f32, 1.0, (1, m, k), &Device::Cpu).expect("randn");
            g.throughput(Throughput::Elements((m * n * k) as u64));
            g.bench_with_input(BenchmarkId::new(ours.kernel_name(), m), &x, |b, x| {
                b.iter(|| ours.forward(x).expect("ours"))
            });
            g.bench_with_input(BenchmarkId::new("candle", m), &x, |b, x| {
                b.iter(|| candle.forward(x).expect("candle"))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
