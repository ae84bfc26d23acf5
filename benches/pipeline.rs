//! Micro benchmarks of the model-free steps: token counting with the real tokenizer over 1 MB
//! of mixed corpus text, and the pre-model reduction (`summarize` without a narrator) over every
//! corpus file. Throughput is reported in bytes/s (criterion prints MiB/s).
//!
//! Model: `TOOLSUM_MODEL` (tier or path), else the `small` tier; only its tokenizer is read.
//! Corpus: `TOOLSUM_CORPUS`, else `tests/corpus`.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

use toolsum::bench::manifest;
use toolsum::guard::clean::clean;
use toolsum::guard::summarize::{summarize, SummaryBudget, SummaryInput};
use toolsum::tokenizer::GgufTokenizer;

/// Size of the mixed text for the counting benchmark (bytes): the "1 MB".
const MIXED_BYTES: usize = 1_000_000;

fn corpus_dir() -> PathBuf {
    std::env::var_os("TOOLSUM_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus"))
}

fn tokenizer() -> GgufTokenizer {
    let spec = std::env::var("TOOLSUM_MODEL").unwrap_or_else(|_| "small".into());
    let path = toolsum::models::resolve(Some(&spec)).unwrap_or_else(|e| {
        panic!("model {spec}: {e}; fetch it with `toolsum models fetch {spec}`")
    });
    GgufTokenizer::from_gguf_path(&path).expect("reading the tokenizer from the GGUF header")
}

/// Every corpus file as (manifest row, lossy UTF-8 text).
fn corpus() -> Vec<(manifest::ManifestRow, String)> {
    let dir = corpus_dir();
    manifest::load(&dir)
        .expect("reading MANIFEST.tsv")
        .into_iter()
        .map(|r| {
            let b = manifest::read_checked(&dir, &r).expect("reading a corpus file");
            let t = String::from_utf8_lossy(&b).into_owned();
            (r, t)
        })
        .collect()
}

/// 1 MB of text taken round-robin from the corpus files in 16 KiB slices (cut on char
/// boundaries), so every kind of output is in the mix.
fn mixed(files: &[(manifest::ManifestRow, String)]) -> String {
    const SLICE: usize = 16 * 1024;
    let mut out = String::with_capacity(MIXED_BYTES + SLICE);
    let mut offset = 0;
    while out.len() < MIXED_BYTES {
        let before = out.len();
        for (_, t) in files {
            if offset >= t.len() {
                continue;
            }
            let mut a = offset;
            while !t.is_char_boundary(a) {
                a += 1;
            }
            let mut b = (offset + SLICE).min(t.len());
            while !t.is_char_boundary(b) {
                b -= 1;
            }
            if a < b {
                out.push_str(&t[a..b]);
                out.push('\n');
            }
            if out.len() >= MIXED_BYTES {
                break;
            }
        }
        if out.len() == before {
            offset = 0;
        } else {
            offset += SLICE;
        }
    }
    let mut end = MIXED_BYTES;
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    out
}

fn benches(c: &mut Criterion) {
    let tok = tokenizer();
    let files = corpus();
    let text = mixed(&files);

    let mut g = c.benchmark_group("count");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("mixed_1MB", |b| b.iter(|| tok.count(black_box(&text))));
    g.finish();

    // Cleaned once outside the loop, as the pipeline does before reducing; input tokens counted
    // once too (they only feed the 5% output cap).
    let prepared: Vec<(manifest::ManifestRow, String, usize)> = files
        .iter()
        .map(|(r, t)| {
            let c = clean(t).into_owned();
            let n = tok.count(&c);
            (r.clone(), c, n)
        })
        .collect();
    let total: usize = prepared.iter().map(|(_, t, _)| t.len()).sum();
    let mut g = c.benchmark_group("reduce");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.throughput(Throughput::Bytes(total as u64));
    g.bench_function("corpus_all_files", |b| {
        b.iter(|| {
            for (r, t, n) in &prepared {
                let s = summarize(
                    &SummaryInput {
                        text: t,
                        tool: manifest::tool_for_kind(&r.kind),
                        args: None,
                        intent: Some(&r.intent),
                        input_tokens: *n,
                        bytes: t.len(),
                        frame_tokens: 0,
                    },
                    &SummaryBudget {
                        prefill_budget: 1_500,
                        max_new_tokens: 256,
                        deadline: None,
                    },
                    &tok,
                    None,
                );
                black_box(s.text);
            }
        })
    });
    g.finish();
}

/// Reading a 1 MB output as text ([`toolsum::guard::decode::decode`]): UTF-8 (the fast path),
/// GBK (a Chinese line every 20 lines; `chardetng` reads the first 256 KiB) and UTF-16LE.
fn decode_benches(c: &mut Criterion) {
    use toolsum::guard::decode::decode;
    let text = mixed(&corpus());
    let with_cjk: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i % 20 == 0 {
                format!("{l}\n2024-05-01 错误：数据库连接失败，正在重试。\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let (gbk, _, _) = encoding_rs::GBK.encode(&with_cjk);
    let utf16: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let mut g = c.benchmark_group("decode");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    for (name, bytes) in [
        ("utf8_1MB", text.as_bytes()),
        ("gbk_1MB", &gbk[..]),
        ("utf16le_2MB", &utf16[..]),
    ] {
        assert!(decode(bytes).is_some(), "{name} read as binary");
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| decode(black_box(bytes)).map(|d| d.nuls))
        });
    }
    g.finish();
}

criterion_group!(pipeline, benches, decode_benches);
criterion_main!(pipeline);
