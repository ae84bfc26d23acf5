//! The local inference engine: a GGUF model on candle, its own tokenizer and chat template,
//! chunked prefill, a reusable system-prompt KV snapshot, and greedy or seeded sampling.
//!
//! [`Engine`] owns everything one request needs and implements [`crate::backend::Narrator`].
//! It is not `Sync`: the daemon gives it to one thread (STYLE.md, habit 4).

pub mod chat;

/// Runs `$go!(N, R)` for the one-row attention kernels' shapes, `N` query heads per KV head and
/// head_dim `16 * R`: head_dim 64 or 128 with up to 8 query heads, 32 with up to 4; any other
/// shape makes the calling function `return false`.
macro_rules! one_row_shapes {
    ($n_rep:expr, $hd:expr, $go:ident) => {
        match ($n_rep, $hd) {
            (1, 32) => $go!(1, 2),
            (2, 32) => $go!(2, 2),
            (3, 32) => $go!(3, 2),
            (4, 32) => $go!(4, 2),
            (1, 64) => $go!(1, 4),
            (2, 64) => $go!(2, 4),
            (3, 64) => $go!(3, 4),
            (4, 64) => $go!(4, 4),
            (5, 64) => $go!(5, 4),
            (6, 64) => $go!(6, 4),
            (7, 64) => $go!(7, 4),
            (8, 64) => $go!(8, 4),
            (1, 128) => $go!(1, 8),
            (2, 128) => $go!(2, 8),
            (3, 128) => $go!(3, 8),
            (4, 128) => $go!(4, 8),
            (5, 128) => $go!(5, 8),
            (6, 128) => $go!(6, 8),
            (7, 128) => $go!(7, 8),
            (8, 128) => $go!(8, 8),
            _ => return false,
        }
    };
}
use one_row_shapes;

/// Whether the one-row attention kernels have an instance for `n_rep` query heads per KV head
/// of `head_dim` (see `one_row_shapes`).
fn has_one_row_kernel(n_rep: usize, head_dim: usize) -> bool {
    macro_rules! yes {
        ($n:literal, $r:literal) => {
            return true
        };
    }
    one_row_shapes!(n_rep, head_dim, yes)
}

pub mod batch;
mod constrain;
mod cpu;
pub mod hugepages;
pub mod kernels;
mod kv8;
pub mod model;
mod team;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use candle_core::Device;

use crate::backend::{NarrateRequest, Narration, Narrator};
use crate::tokenizer::GgufTokenizer;
use chat::ChatTemplate;
use model::{KvCache, KvSnapshot, LoadOptions, Transformer};

/// Default prefill chunk (tokens per forward pass during prefill). Measured on the 2-core dev
/// machine (scripts/bench-engine.sh, `--chunk` sweep): 256 was fastest for both shipped models;
/// larger chunks pay for the quadratic attention scores without gaining matmul efficiency.
pub const DEFAULT_PREFILL_CHUNK: usize = 256;

/// Default context the KV cache is preallocated for (tokens), capped by the file's context.
/// 8,192 covers the pipeline's prompts (system ~250 + input budget + output) with room for the
/// benchmark's naive mode; KV memory at this size: 189 MB (SmolLM2), 100 MB (Qwen2.5-0.5B).
pub const DEFAULT_MAX_CONTEXT: usize = 8_192;

/// How the next token is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// Always the most likely token (deterministic; the default and what tests use).
    Greedy,
    /// Temperature + nucleus (top-p) sampling with a fixed seed (reproducible per seed).
    TopP {
        /// Softmax temperature (> 0).
        temperature: f64,
        /// Cumulative probability kept (0 < p <= 1).
        top_p: f64,
        /// RNG seed.
        seed: u64,
    },
}

/// Options for [`Engine::load`].
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// The GGUF file (see [`crate::models::resolve`]).
    pub model_path: PathBuf,
    /// Compute threads; `None` = the cores available to the process.
    pub threads: Option<usize>,
    /// `cpu`, `cuda[:N]` (feature `cuda`) or `metal` (feature `metal`).
    pub device: String,
    /// Convert Q4_0/Q4_1/Q5_0/Q5_1 matrices to Q8_0 at load when they run on candle's kernels
    /// (see [`LoadOptions`]; our kernels always run the file's types). Default on.
    pub convert_to_q8: bool,
    /// Tokens per prefill forward pass.
    pub prefill_chunk: usize,
    /// KV cache size (tokens), capped by the file's context length.
    pub max_context: usize,
    /// System prompt to prefill at load and keep as a KV snapshot (requests with the same
    /// system prompt skip its prefill).
    pub system_prompt: Option<String>,
    /// Chat template to use instead of the GGUF's own (Jinja source).
    pub chat_template: Option<String>,
    /// Force a CPU kernel path (`None`: run-time detection or `TOOLSUM_KERNELS`); tests
    /// check that greedy output does not depend on it.
    pub kernels: Option<kernels::Isa>,
    /// Token choice.
    pub sampling: Sampling,
    /// Repetition penalty over the last [`REPEAT_WINDOW`] generated tokens (1.0 = off).
    pub repeat_penalty: f32,
    /// Most tokens drafted per decode step by prompt lookup ([`lookup_draft`]) and checked in
    /// one forward pass (0 = off; capped at `Transformer::MAX_VERIFY_ROWS - 1`). The output is
    /// the same token for token either way; CPU path only.
    pub draft_tokens: usize,
    /// What decode steps read on the CPU path: the f16 KV cache or its 8-bit copy
    /// ([`model::KvDecode`]).
    pub kv_decode: model::KvDecode,
}

/// Default [`EngineOptions::draft_tokens`]. Measured over the 24-file corpus with the small
/// model (`scripts/bench.sh`, alternating runs): ms per generated token 22.0-22.5 without
/// drafts, 20.1-21.7 with 1, 19.3-19.8 with 2 (60% of drafts accepted), 19.9-20.2 with 3,
/// 22.3-22.9 with 8: checking a draft costs ~20% of a step per row (the kernels' compute
/// grows with the rows), so only short, likely drafts pay.
pub const DEFAULT_DRAFT_TOKENS: usize = 2;

/// Window (tokens) over which the repetition penalty and the loop detector look back.
pub const REPEAT_WINDOW: usize = 64;

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            model_path: PathBuf::new(),
            threads: None,
            device: "cpu".into(),
            convert_to_q8: true,
            prefill_chunk: DEFAULT_PREFILL_CHUNK,
            max_context: DEFAULT_MAX_CONTEXT,
            system_prompt: None,
            chat_template: None,
            kernels: None,
            sampling: Sampling::Greedy,
            repeat_penalty: 1.1,
            draft_tokens: DEFAULT_DRAFT_TOKENS,
            kv_decode: model::KvDecode::default(),
        }
    }
}

/// Parses a device spec: `cpu`, `cuda`, `cuda:N`, `metal`.
///
/// # Errors
/// An unknown spec, or a GPU device whose cargo feature was not compiled in.
pub fn parse_device(spec: &str) -> anyhow::Result<Device> {
    match spec {
        "cpu" | "" => Ok(Device::Cpu),
        "metal" => {
            if cfg!(feature = "metal") {
                Ok(Device::new_metal(0)?)
            } else {
                anyhow::bail!("device 'metal' needs a build with `--features metal`")
            }
        }
        s if s == "cuda" || s.starts_with("cuda:") => {
            let n: usize = s
                .strip_prefix("cuda:")
                .map(|n| n.parse())
                .transpose()
                .context("cuda:N wants a number")?
                .unwrap_or(0);
            if cfg!(feature = "cuda") {
                Ok(Device::new_cuda(n)?)
            } else {
                anyhow::bail!("device '{s}' needs a build with `--features cuda`")
            }
        }
        other => anyhow::bail!("unknown device '{other}': use cpu, cuda[:N] or metal"),
    }
}

/// Sets the compute thread count for candle's CPU kernels (its rayon pool and
/// `candle_core::utils::get_num_threads`, which reads `RAYON_NUM_THREADS`). Effective once, before
/// the first model op; later calls keep the first value.
pub fn init_threads(threads: Option<usize>) -> usize {
    let n = threads
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    }
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global();
    rayon::current_num_threads()
}

/// Exponential moving average weight for measured speeds (new sample's share).
const SPEED_EMA: f64 = 0.3;

/// A loaded model ready to generate.
pub struct Engine {
    model: Transformer,
    tokenizer: Arc<GgufTokenizer>,
    template: ChatTemplate,
    add_bos: bool,
    /// KV slots, one per sequence in flight: slot 0 committed at load, the others made on
    /// first use ([`batch`]).
    caches: Vec<KvCache>,
    snapshot: Option<KvSnapshot>,
    /// Every token's text, for constrained decoding; computed on the first constrained request.
    token_texts: Option<constrain::TokenTexts>,
    opts: EngineOptions,
    name: String,
    threads: usize,
    prefill_tps: f64,
    decode_tps: f64,
    load_ms: f64,
    /// Drafted tokens checked and accepted since load (speculative decoding).
    drafts: (u64, u64),
    /// Decode passes run since load, and the rows (tokens of all sequences) they took.
    passes: (u64, u64),
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("name", &self.name).finish()
    }
}

impl Engine {
    /// Loads the model: header, tokenizer, chat template, weights, KV cache; then prefills the
    /// system prompt (if given) into a snapshot and measures prefill/decode speed on it.
    ///
    /// # Errors
    /// A missing/corrupt file, an unsupported architecture, no chat template, a device that was
    /// not compiled in.
    pub fn load(opts: &EngineOptions) -> anyhow::Result<Engine> {
        let t0 = Instant::now();
        let threads = init_threads(opts.threads);
        let device = parse_device(&opts.device)?;
        let (mut file, content) = model::read_header(&opts.model_path)?;
        let tokenizer = Arc::new(
            GgufTokenizer::from_content(&content)
                .with_context(|| format!("tokenizer of {}", opts.model_path.display()))?,
        );
        let template = match (&opts.chat_template, tokenizer.chat_template()) {
            (Some(src), _) => {
                let name = |id: Option<u32>| {
                    id.and_then(|i| tokenizer.id_to_token(i))
                        .unwrap_or_default()
                };
                ChatTemplate::new(
                    src,
                    &name(tokenizer.bos_id()),
                    &name(tokenizer.eos_ids().first().copied()),
                )?
            }
            (None, Some(_)) => ChatTemplate::from_tokenizer(&tokenizer)?,
            (None, None) => anyhow::bail!(
                "{} has no tokenizer.chat_template: pass one with --chat-template FILE",
                opts.model_path.display()
            ),
        };
        let model = Transformer::load(
            &mut file,
            &content,
            &device,
            LoadOptions {
                convert_to_q8: opts.convert_to_q8,
                max_context: opts.max_context,
                kernels: opts.kernels,
                kv_decode: opts.kv_decode,
            },
        )?;
        let mut cache = model.new_cache()?;
        // The daemon's footprint is set here: RSS stays flat over requests (issue 6's
        // RSS-after-1,000 / after-10 check).
        cache.commit();
        let name = match content.metadata.get("general.name") {
            Some(candle_core::quantized::gguf_file::Value::String(s)) => s.clone(),
            _ => opts
                .model_path
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default(),
        };
        let add_bos = matches!(
            content.metadata.get("tokenizer.ggml.add_bos_token"),
            Some(candle_core::quantized::gguf_file::Value::Bool(true))
        );
        let mut engine = Engine {
            model,
            tokenizer,
            template,
            add_bos,
            caches: vec![cache],
            snapshot: None,
            token_texts: None,
            opts: opts.clone(),
            name,
            threads,
            prefill_tps: 0.0,
            decode_tps: 0.0,
            load_ms: 0.0,
            drafts: (0, 0),
            passes: (0, 0),
        };
        if let Some(sys) = opts.system_prompt.clone() {
            engine.warm_up(&sys)?;
        }
        engine.load_ms = t0.elapsed().as_secs_f64() * 1e3;
        Ok(engine)
    }

    /// Prefills the prompt prefix of `system` into the snapshot and runs a short generation to
    /// measure prefill and decode speed.
    fn warm_up(&mut self, system: &str) -> anyhow::Result<()> {
        let req = NarrateRequest {
            system: system.to_string(),
            // A reply of a dozen tokens whatever the system prompt asks for, so decode speed
            // is measured too.
            user: "Count from one to twenty in words, separated by commas.".into(),
            max_new_tokens: 16,
            deadline: None,
            cancel: Arc::new(Default::default()),
            constraint: None,
        };
        let n = self.generate(&req)?;
        if n.prefill_ms > 0.0 {
            self.prefill_tps = n.prompt_tokens as f64 / (n.prefill_ms / 1e3);
        }
        if self.decode_tps <= 0.0 && n.generated_tokens >= 2 && n.decode_ms > 0.0 {
            self.decode_tps = n.generated_tokens as f64 / (n.decode_ms / 1e3);
        }
        Ok(())
    }

    /// The tokenizer, shareable with threads that only count.
    pub fn tokenizer(&self) -> Arc<GgufTokenizer> {
        self.tokenizer.clone()
    }

    /// The loaded transformer's configuration.
    pub fn config(&self) -> &model::ModelConfig {
        &self.model.cfg
    }

    /// Tokens the prompt would take for `system`/`user` (cached prefix included).
    ///
    /// # Errors
    /// Template rendering errors.
    pub fn prompt_tokens(&self, system: &str, user: &str) -> anyhow::Result<usize> {
        Ok(self.prompt_ids(system, user)?.0.len())
    }

    /// Token ids of the rendered prompt and the length of its trusted prefix.
    fn prompt_ids(&self, system: &str, user: &str) -> anyhow::Result<(Vec<u32>, usize)> {
        let parts = self.template.render_split(system, user)?;
        let mut ids = Vec::new();
        if self.add_bos {
            if let Some(b) = self.tokenizer.bos_id() {
                ids.push(b);
            }
        }
        ids.extend(self.tokenizer.encode_trusted(&parts.prefix));
        let prefix_len = ids.len();
        ids.extend(self.tokenizer.encode_untrusted(&parts.user));
        ids.extend(self.tokenizer.encode_trusted(&parts.suffix));
        Ok((ids, prefix_len))
    }

    /// A JSON description for `toolsum status`: model, arch, device, threads, kernels in use,
    /// context, measured speeds.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "model": self.name,
            "path": self.opts.model_path,
            "arch": self.model.cfg.arch,
            "device": self.opts.device,
            "threads": self.threads,
            "context": self.model.ctx,
            "kernels": self.model.kernel_types,
            "q8_conversion": self.opts.convert_to_q8 && !self.model.on_cpu_path(),
            "prefill_chunk": self.opts.prefill_chunk,
            "cached_prefix_tokens": self.snapshot.as_ref().map_or(0, |s| s.tokens.len()),
            "prefill_tok_per_s": self.prefill_tps,
            "decode_tok_per_s": self.decode_tps,
            "load_ms": self.load_ms,
            "draft_tokens": if self.model.on_cpu_path() { self.opts.draft_tokens } else { 0 },
            "kv_decode": self.model.kv_decode().name(),
            "drafts_proposed": self.drafts.0,
            "drafts_accepted": self.drafts.1,
        })
    }

    /// Decode passes run since load and the rows they took (all sequences' tokens; a pass of
    /// several sequences has more rows than one); for tests and benchmarks.
    pub fn decode_passes(&self) -> (u64, u64) {
        self.passes
    }

    /// Sets the prefill chunk (tokens per forward pass); for benchmarks.
    pub fn set_prefill_chunk(&mut self, chunk: usize) {
        self.opts.prefill_chunk = chunk.max(1);
    }

    /// Drops the system-prompt snapshot, so the next request prefills everything; for the
    /// prefix-cache benchmark.
    pub fn clear_snapshot(&mut self) {
        self.snapshot = None;
    }

    /// Runs one request: renders the chat template, restores the prefix snapshot when the
    /// prompt starts with it (else prefills from an empty cache and snapshots the prefix),
    /// prefills the rest in chunks, then decodes until EOS/end-of-turn, `max_new_tokens`, the
    /// deadline, the cancel flag, or a repetition loop. Never starts from an earlier request's
    /// state. The same machine as [`Engine::serve`] with one sequence in flight (in KV slot
    /// 0, with prompt-lookup drafts; see [`batch`]).
    ///
    /// # Errors
    /// Prompt longer than the context; model errors.
    pub fn generate(&mut self, req: &NarrateRequest) -> anyhow::Result<Narration> {
        let mut seqs = vec![self.start(req.clone(), 0)?];
        while seqs.iter().any(|s| !s.finished()) {
            self.round(&mut seqs);
        }
        seqs.pop().context("one sequence")?.result()
    }
}

fn ema(old: f64, new: f64) -> f64 {
    if old <= 0.0 {
        new
    } else {
        old * (1.0 - SPEED_EMA) + new * SPEED_EMA
    }
}

/// Longest and shortest n-gram [`lookup_draft`] matches (tokens). Matches of 2 tokens drafted
/// often and were accepted less (about a quarter of drafts, against 60% from 3).
const DRAFT_NGRAM: (usize, usize) = (4, 3);

/// Prompt-lookup draft (Saxena 2023, "Prompt Lookup Decoding"): the up to `max` tokens that
/// followed the latest earlier occurrence of `hist`'s last 4, else 3 tokens; empty when none
/// occurs. `hist` is the prompt followed by the tokens generated so far.
pub fn lookup_draft(hist: &[u32], max: usize) -> Vec<u32> {
    let n = hist.len();
    for g in (DRAFT_NGRAM.1..=DRAFT_NGRAM.0).rev() {
        if n <= g || max == 0 {
            continue;
        }
        let tail = &hist[n - g..];
        // Latest start `i < n - g` whose g tokens equal the tail.
        if let Some(i) = (0..n - g).rev().find(|&i| &hist[i..i + g] == tail) {
            let from = i + g;
            return hist[from..(from + max).min(n)].to_vec();
        }
    }
    Vec::new()
}

/// Shortest run (tokens) of a repeated block that counts as a decoding loop: short runs such as
/// a `-----` rule or `1, 1, 1` are legitimate output.
const LOOP_MIN_SPAN: usize = 16;

/// True when the tail of `gen` is one block of 1..=32 tokens repeated back to back at least
/// 3 times and over at least [`LOOP_MIN_SPAN`] tokens (a decoding loop).
fn detect_loop(gen: &[u32]) -> bool {
    let n = gen.len();
    for period in 1..=32usize {
        let reps = 3usize.max(LOOP_MIN_SPAN.div_ceil(period));
        if n < period * reps {
            continue;
        }
        let tail = &gen[n - period..];
        if (1..reps).all(|k| &gen[n - period * (k + 1)..n - period * k] == tail) {
            return true;
        }
    }
    false
}

impl Narrator for Engine {
    fn narrate(&mut self, req: &NarrateRequest) -> anyhow::Result<Narration> {
        self.generate(req)
    }

    fn prefill_tok_per_s(&self) -> f64 {
        self.prefill_tps
    }

    fn decode_tok_per_s(&self) -> f64 {
        self.decode_tps
    }

    fn model_name(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_draft_takes_what_followed_the_latest_longest_match() {
        //            0  1  2  3  4  5  6  7  8  9 10 11 12
        let hist = [1, 2, 3, 4, 9, 9, 1, 2, 3, 5, 6, 1, 2, 3];
        // Tail [1, 2, 3] (no earlier [3-before, 1, 2, 3] of 4): latest earlier match at 6.
        assert_eq!(lookup_draft(&hist, 2), vec![5, 6]);
        assert_eq!(lookup_draft(&hist, 9), vec![5, 6, 1, 2, 3]);
        // A 4-token match beats a later 3-token one.
        let hist = [7, 1, 2, 3, 8, 0, 1, 2, 3, 9, 7, 1, 2, 3];
        assert_eq!(lookup_draft(&hist, 1), vec![8]);
        // Two-token matches do not count; nothing to draft at the start or with max 0.
        assert!(lookup_draft(&[4, 5, 6, 4, 5], 3).is_empty());
        assert!(lookup_draft(&[1, 2, 3], 3).is_empty());
        assert!(lookup_draft(&[1, 2, 3, 1, 2, 3], 0).is_empty());
        // The draft stops at the end of the history.
        assert_eq!(lookup_draft(&[1, 2, 3, 1, 2, 3], 5), vec![1, 2, 3]);
    }

    #[test]
    fn loop_detector() {
        assert!(!detect_loop(&[1, 2, 3, 4, 5, 6]));
        assert!(
            !detect_loop(&[9, 1, 2, 1, 2, 1, 2]),
            "a short run is not a loop"
        );
        assert!(!detect_loop(&[5; 15]));
        assert!(detect_loop(&[5; 16]));
        let mut v = vec![9];
        for _ in 0..8 {
            v.extend([1, 2]);
        }
        assert!(detect_loop(&v));
        let block = [10, 11, 12, 13, 14, 15, 16];
        let mut v = vec![1, 2];
        for _ in 0..2 {
            v.extend(block);
        }
        assert!(!detect_loop(&v), "two repeats are not a loop");
        v.extend(block);
        assert!(detect_loop(&v));
    }

    #[test]
    fn device_specs() {
        assert!(parse_device("cpu").unwrap().is_cpu());
        assert!(parse_device("tpu").is_err());
        if !cfg!(feature = "cuda") {
            let e = parse_device("cuda:0").unwrap_err().to_string();
            assert!(e.contains("--features cuda"), "{e}");
        }
    }
}
