//! Real-model tests of the engine (tier 3): the pinned tiny and small GGUF models, greedy.

use std::sync::Arc;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use toolsum::backend::NarrateRequest;
use toolsum::engine::model::{read_header, LoadOptions, Transformer};
use toolsum::engine::{Engine, EngineOptions};
use toolsum::tokenizer::GgufTokenizer;

use crate::util::model_path;

const PYTEST_LOG: &str = include_str!("fixtures/pytest_fail_2k.txt");

fn greedy_ours(tier: &str, prompt: &[u32], n: usize) -> Vec<u32> {
    let (mut f, content) = read_header(&model_path(tier)).unwrap();
    let m = Transformer::load(
        &mut f,
        &content,
        &Device::Cpu,
        LoadOptions {
            convert_to_q8: false,
            max_context: 512,
        },
    )
    .unwrap();
    let mut cache = m.new_cache().unwrap();
    let mut logits = m.forward(prompt, &mut cache).unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let next = logits.argmax(0).unwrap().to_scalar::<u32>().unwrap();
        out.push(next);
        logits = m.forward(&[next], &mut cache).unwrap();
    }
    out
}

fn greedy_reference(tier: &str, prompt: &[u32], n: usize) -> Vec<u32> {
    use candle_transformers::models::{quantized_llama, quantized_qwen2};
    let path = model_path(tier);
    let mut f = std::fs::File::open(&path).unwrap();
    let content = gguf_file::Content::read(&mut f).unwrap();
    enum M {
        L(quantized_llama::ModelWeights),
        Q(quantized_qwen2::ModelWeights),
    }
    let mut m = if tier == "tiny" {
        M::L(quantized_llama::ModelWeights::from_gguf(content, &mut f, &Device::Cpu).unwrap())
    } else {
        M::Q(quantized_qwen2::ModelWeights::from_gguf(content, &mut f, &Device::Cpu).unwrap())
    };
    let mut fwd = |ids: &[u32], pos: usize| -> Tensor {
        let x = Tensor::new(ids, &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        let l = match &mut m {
            M::L(m) => m.forward(&x, pos).unwrap(),
            M::Q(m) => m.forward(&x, pos).unwrap(),
        };
        l.flatten_all().unwrap()
    };
    let mut logits = fwd(prompt, 0);
    let mut pos = prompt.len();
    let mut out = Vec::new();
    for _ in 0..n {
        let next = logits.argmax(0).unwrap().to_scalar::<u32>().unwrap();
        out.push(next);
        logits = fwd(&[next], pos);
        pos += 1;
    }
    out
}

/// Our transformer (file quant types, no Q8_0 conversion) picks the same greedy tokens as
/// candle-transformers' reference implementations of the same architectures.
fn matches_reference(tier: &str) {
    let tok = GgufTokenizer::from_gguf_path(&model_path(tier)).unwrap();
    let prompt = tok.encode_trusted(
        "<|im_start|>user\nList three prime numbers and explain why they are prime.<|im_end|>\n<|im_start|>assistant\n",
    );
    let ours = greedy_ours(tier, &prompt, 24);
    let reference = greedy_reference(tier, &prompt, 24);
    assert_eq!(
        ours,
        reference,
        "ours: {:?}\nreference: {:?}",
        tok.decode(&ours, false),
        tok.decode(&reference, false)
    );
}

#[test]
fn tiny_matches_reference_implementation() {
    matches_reference("tiny");
}

#[test]
fn small_matches_reference_implementation() {
    matches_reference("small");
}

fn narrate_twice(tier: &str) {
    let mut eng = Engine::load(&EngineOptions {
        model_path: model_path(tier),
        system_prompt: Some("Summarize the tool output for a coding agent.".into()),
        ..EngineOptions::default()
    })
    .unwrap();
    let req = NarrateRequest {
        system: "Summarize the tool output for a coding agent.".into(),
        user: format!("Tool: pytest\n\n{PYTEST_LOG}"),
        max_new_tokens: 48,
        deadline: None,
        cancel: Arc::new(Default::default()),
    };
    let a = eng.generate(&req).unwrap();
    let b = eng.generate(&req).unwrap();
    assert!(!a.text.trim().is_empty(), "empty output");
    assert!(a.generated_tokens <= 48);
    assert_eq!(
        a.text, b.text,
        "greedy output differs between two identical calls"
    );
    // The system prompt was prefilled at load: both requests start from its snapshot.
    assert!(a.cached_prefix_tokens > 0 && a.cached_prefix_tokens == b.cached_prefix_tokens);
    // Starting from the snapshot gives the same tokens as a cold start.
    eng.clear_snapshot();
    let c = eng.generate(&req).unwrap();
    assert_eq!(c.cached_prefix_tokens, 0);
    assert_eq!(a.text, c.text, "prefix snapshot changed the output");
}

#[test]
fn tiny_generates_deterministically() {
    narrate_twice("tiny");
}

#[test]
fn small_generates_deterministically() {
    narrate_twice("small");
}

#[test]
fn deadline_and_cancel_stop_generation() {
    let mut eng = Engine::load(&EngineOptions {
        model_path: model_path("tiny"),
        ..EngineOptions::default()
    })
    .unwrap();
    let cancel = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let n = eng
        .generate(&NarrateRequest {
            system: "s".into(),
            user: PYTEST_LOG.into(),
            max_new_tokens: 32,
            deadline: None,
            cancel,
        })
        .unwrap();
    assert_eq!(n.stop, Some(toolsum::backend::StopReason::Cancelled));
    let n = eng
        .generate(&NarrateRequest {
            system: "s".into(),
            user: PYTEST_LOG.into(),
            max_new_tokens: 32,
            deadline: Some(std::time::Instant::now()),
            cancel: Arc::new(Default::default()),
        })
        .unwrap();
    assert_eq!(n.stop, Some(toolsum::backend::StopReason::Deadline));
    assert_eq!(n.generated_tokens, 0);
}

#[test]
fn truncated_gguf_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.gguf");
    let bytes = std::fs::read(model_path("tiny")).unwrap();
    std::fs::write(&p, &bytes[..1 << 20]).unwrap();
    let e = Engine::load(&EngineOptions {
        model_path: p.clone(),
        ..EngineOptions::default()
    })
    .unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("tensor") || msg.contains("GGUF"), "{msg}");
    std::fs::write(&p, b"not a gguf at all").unwrap();
    let e = Engine::load(&EngineOptions {
        model_path: p,
        ..EngineOptions::default()
    })
    .unwrap_err();
    assert!(format!("{e:#}").contains("not a valid GGUF"), "{e:#}");
}
