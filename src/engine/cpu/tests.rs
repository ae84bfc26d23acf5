//! Tests of the CPU forward pass and its kernels.

use super::*;

#[test]
fn exp_approx_matches_std_on_the_softmax_range() {
    let mut worst = 0f32;
    let mut x = -87.0f32;
    while x <= 0.0 {
        let (a, b) = (exp_approx(x), x.exp());
        worst = worst.max(((a - b) / b).abs());
        x += 0.0137;
    }
    assert!(worst < 1e-6, "relative error {worst}");
    assert_eq!(exp_approx(0.0), 1.0);
    assert!(exp_approx(-1000.0) >= 0.0 && exp_approx(-1000.0) < 1e-37);
    assert!(exp_approx(f32::NEG_INFINITY) >= 0.0);
}

#[test]
fn swiglu_split_on_a_team_equals_one_serial_pass() {
    let team = Team::new(2);
    // 7 rows of 37: parts do not end on rows, and the serial pass has a tail.
    let (rows, n) = (7, 37);
    let x: Vec<f32> = (0..rows * n)
        .map(|i| (i as f32 * 0.37).sin() * 6.0)
        .collect();
    let u: Vec<f32> = (0..rows * n).map(|i| (i as f32 * 0.11).cos()).collect();
    for simd in [false, simd_for(Isa::Avx2)] {
        let mut want = x.clone();
        swiglu(&mut want, &u, simd);
        let mut got = x.clone();
        with_team(Some(&team), || swiglu_rows(&mut got, &u, simd, rows));
        assert_eq!(got, want, "simd={simd}");
    }
}

#[test]
fn swiglu_matches_the_definition_on_both_paths() {
    let x: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 0.9).collect();
    let u: Vec<f32> = (0..37).map(|i| 0.5 + i as f32 * 0.01).collect();
    let want: Vec<f32> = x
        .iter()
        .zip(&u)
        .map(|(&a, &b)| a / (1.0 + (-a).exp()) * b)
        .collect();
    for simd in [false, simd_for(Isa::Avx2)] {
        let mut g = x.clone();
        swiglu(&mut g, &u, simd);
        for (a, b) in g.iter().zip(&want) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                "simd={simd}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn simd_exp_rows_equal_scalar() {
    if !Isa::available().contains(&Isa::Avx2) {
        return;
    }
    for n in [1usize, 7, 8, 9, 31, 200] {
        let row: Vec<f32> = (0..n)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.37)
            .collect();
        let mut a = row.clone();
        let mut b = row.clone();
        let (ma, la) = exp_rows(&mut a);
        // SAFETY: AVX2 checked above.
        let (mb, lb) = unsafe { exp_rows_x86(&mut b) };
        assert_eq!(ma, mb);
        assert!((la - lb).abs() <= 1e-5 * la, "n={n}: sum {la} vs {lb}");
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 1e-6 * x.abs().max(1e-30),
                "n={n}: {x} vs {y}"
            );
        }
    }
}

/// Reference attention: plain loops over the standard layout.
#[allow(clippy::too_many_arguments)]
fn naive(
    q: &[f32],
    keys: &[f32],
    vals: &[f32],
    nh: usize,
    kvh: usize,
    hd: usize,
    pos: usize,
    t: usize,
) -> Vec<f32> {
    let mut y = vec![0f32; t * nh * hd];
    for h in 0..nh {
        let g = h / (nh / kvh);
        for i in 0..t {
            let n = pos + i + 1;
            let qv = &q[(i * nh + h) * hd..(i * nh + h + 1) * hd];
            let mut s: Vec<f32> = (0..n)
                .map(|p| {
                    let kv = &keys[(p * kvh + g) * hd..(p * kvh + g + 1) * hd];
                    qv.iter().zip(kv).map(|(a, b)| a * b).sum::<f32>() / (hd as f32).sqrt()
                })
                .collect();
            let m = s.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            let z: f32 = s
                .iter_mut()
                .map(|v| {
                    *v = (*v - m).exp();
                    *v
                })
                .sum();
            for p in 0..n {
                for dd in 0..hd {
                    y[(i * nh + h) * hd + dd] += s[p] / z * vals[(p * kvh + g) * hd + dd];
                }
            }
        }
    }
    y
}

#[test]
fn attention_matches_naive_with_gqa_and_a_chunk_after_a_prefix() {
    let cfg = ModelConfig {
        arch: "llama".into(),
        n_layer: 1,
        n_embd: 4 * 32,
        n_head: 4,
        n_head_kv: 2,
        head_dim: 32,
        train_ctx: 64,
        rope_base: 10_000.0,
        rms_eps: 1e-5,
        rope_interleaved: false,
        tied_embeddings: true,
        vocab: 1,
    };
    // (13, 11): 24 positions, one 16-wide SIMD block and a tail, 8 queries per task (two
    // register blocks). (1100, 1) and (1090, 3): decode-sized calls whose positions are
    // split across tasks and merged (2 splits); (600, 1): one split.
    // (1600, 1, 1605): a context that is not whole key blocks, three splits.
    for (pos, t, ctx) in [
        (13usize, 11usize, 40usize),
        (1100, 1, 1140),
        (1090, 3, 1100),
        (600, 1, 640),
        (1600, 1, 1605),
    ] {
        attention_case(&cfg, pos, t, ctx);
    }
    // SmolLM2's shape (3 query heads per KV head) and Qwen2.5-0.5B's (7), head_dim 64:
    // the one-pass decode kernel's instances, at a decode step on a partial last key
    // block (split in two and merged), a step inside the first block, and a prefill chunk.
    for (n_head, n_head_kv) in [(9, 3), (14, 2)] {
        let cfg = ModelConfig {
            n_embd: n_head * 64,
            n_head,
            n_head_kv,
            head_dim: 64,
            ..cfg.clone()
        };
        for (pos, t, ctx) in [(1033usize, 1usize, 1060usize), (5, 1, 16), (40, 20, 64)] {
            attention_case(&cfg, pos, t, ctx);
        }
    }
}

fn attention_case(cfg: &ModelConfig, pos: usize, t: usize, ctx: usize) {
    let total = pos + t;
    let mut seed = 1u32;
    let mut rnd = || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
    };
    let kvw = cfg.n_head_kv * cfg.head_dim;
    let keys: Vec<f32> = (0..total * kvw).map(|_| rnd() * 4.0).collect();
    let vals: Vec<f32> = (0..total * kvw).map(|_| rnd()).collect();
    let q: Vec<f32> = (0..t * cfg.n_head * cfg.head_dim)
        .map(|_| rnd() * 4.0)
        .collect();
    for (simd, wide, q8) in [
        (false, false, false),
        (true, false, false),
        (true, true, false),
        (true, true, true),
    ] {
        if simd && !(Isa::available().contains(&Isa::Avx2) && simd_for(Isa::Avx2)) {
            continue;
        }
        if wide && !Isa::available().iter().any(|i| i.avx512()) {
            continue;
        }
        let mut layer = RawLayer::new(cfg, ctx, q8);
        write_kv(
            &mut layer,
            &keys[..pos * kvw],
            &vals[..pos * kvw],
            0,
            pos,
            cfg.n_head_kv,
            cfg.head_dim,
            ctx,
        );
        write_kv(
            &mut layer,
            &keys[pos * kvw..],
            &vals[pos * kvw..],
            pos,
            t,
            cfg.n_head_kv,
            cfg.head_dim,
            ctx,
        );
        let model = CpuModel {
            blocks: vec![],
            out_norm: vec![],
            output: dummy_linear(),
            cos: vec![],
            sin: vec![],
            ctx,
            simd,
            wide,
        };
        let mut y = vec![0f32; q.len()];
        model.attention(cfg, &q, &layer, pos, t, &mut y);
        // Bit-identical on one thread and on a compute team: the work split never depends
        // on the thread count.
        let mut y1 = vec![0f32; q.len()];
        with_team(None, || model.attention(cfg, &q, &layer, pos, t, &mut y1));
        assert_eq!(
            y, y1,
            "pos={pos} t={t} simd={simd} wide={wide}: thread count changed the result"
        );
        let team = Team::new(3);
        with_team(Some(&team), || {
            model.attention(cfg, &q, &layer, pos, t, &mut y1)
        });
        assert_eq!(
            y, y1,
            "pos={pos} t={t} simd={simd} wide={wide}: the team changed the result"
        );
        // The cache holds f16: compare with the naive loops on the same rounded values.
        let r16 =
            |x: &Vec<f32>| -> Vec<f32> { x.iter().map(|&v| f16::from_f32(v).to_f32()).collect() };
        let (nh, kvh, hd) = (cfg.n_head, cfg.n_head_kv, cfg.head_dim);
        let want = naive(&q, &r16(&keys), &r16(&vals), nh, kvh, hd, pos, t);
        // A one-row call on the 8-bit copy is within its rounding (see `kv8`'s tests for
        // the kernel against its portable form); prefill reads the f16 cache.
        let tol = if q8 && t == 1 { 0.02 } else { 1e-5 };
        for (a, b) in y.iter().zip(&want) {
            assert!(
                (a - b).abs() < tol,
                "pos={pos} t={t} simd={simd} wide={wide} q8={q8}: {a} vs {b}"
            );
        }
        // A snapshot of the first `pos` positions restores them exactly.
        let snap = layer.prefix(pos, ctx, hd);
        let mut fresh = RawLayer::new(cfg, ctx, q8);
        fresh.restore(&snap, pos, ctx, hd);
        assert_eq!(fresh.prefix(pos, ctx, hd).kt, snap.kt);
        assert_eq!(fresh.prefix(pos, ctx, hd).v, snap.v);
        assert_eq!(snap.q8.is_some(), q8 && hd % 32 == 0);
        if let (Some(a), Some(b)) = (fresh.prefix(pos, ctx, hd).q8, snap.q8) {
            assert_eq!((a.k, a.ks, a.v, a.vs), (b.k, b.ks, b.v, b.vs));
        }
    }
}

fn dummy_linear() -> QLinear {
    use candle_core::quantized::{GgmlDType, QTensor};
    let t = candle_core::Tensor::zeros((4, 32), candle_core::DType::F32, &candle_core::Device::Cpu)
        .unwrap();
    let q = QTensor::quantize(&t, GgmlDType::Q8_0).unwrap();
    QLinear::new(&q, Isa::Scalar).unwrap().unwrap()
}
