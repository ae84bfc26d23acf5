//! The decoder-only transformer, on candle-core ops, configured from GGUF metadata.
//!
//! One module serves `llama` (SmolLM2) and `qwen2` (Qwen2.5): the differences are configuration
//! read from the file (qkv bias, rope base and layout, norm epsilon, tied embeddings). The KV
//! cache is preallocated for the whole context and written in place ([`KvCache`]); a
//! [`KvSnapshot`] of the first tokens (the system prompt) can be restored in O(prefix) so later
//! requests skip prefilling it. No state survives between requests except what a snapshot
//! restores, and no per-request allocation is kept (the causal mask is built per call).

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, IndexOp, Module, Tensor};

use super::cpu::{simd_for, wide_for, CpuBlock, CpuModel, RawLayer, Threads};
use super::kernels::{Isa, QLinear};

mod rows;

/// Architectures this engine runs (`general.architecture`).
pub const SUPPORTED_ARCHS: &[&str] = &["llama", "qwen2"];

/// Errors of loading or running the model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file is not a readable GGUF (truncated, wrong magic, bad header).
    #[error(
        "{path} is not a valid GGUF file ({detail}): re-fetch it with `scripts/fetch-models.sh`"
    )]
    BadFile {
        /// File path.
        path: String,
        /// What the reader said.
        detail: String,
    },
    /// `general.architecture` is not one of [`SUPPORTED_ARCHS`].
    #[error("unsupported architecture '{0}': supported are llama, qwen2")]
    UnsupportedArch(String),
    /// A required metadata key or tensor is missing or has the wrong type.
    #[error("GGUF is missing {0}")]
    Missing(String),
    /// The prompt plus requested tokens exceed the context.
    #[error("prompt of {prompt} tokens + {new} new tokens exceeds the context of {ctx} tokens")]
    ContextOverflow {
        /// Prompt tokens.
        prompt: usize,
        /// Tokens to generate.
        new: usize,
        /// Context size.
        ctx: usize,
    },
    /// A call this model or device cannot serve (e.g. [`Transformer::forward_rows`] off the
    /// CPU path).
    #[error("{0}")]
    Unsupported(String),
    /// An error from candle.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

type Result<T> = std::result::Result<T, ModelError>;

/// Hyper-parameters read from the GGUF header.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelConfig {
    /// `general.architecture`.
    pub arch: String,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Hidden size.
    pub n_embd: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads (grouped-query attention when < `n_head`).
    pub n_head_kv: usize,
    /// Per-head dimension (`n_embd / n_head`).
    pub head_dim: usize,
    /// Context length the model was trained for (`<arch>.context_length`).
    pub train_ctx: usize,
    /// RoPE base frequency (`<arch>.rope.freq_base`; 10,000 if absent, the GGUF default).
    pub rope_base: f32,
    /// RMSNorm epsilon (`<arch>.attention.layer_norm_rms_epsilon`).
    pub rms_eps: f32,
    /// Interleaved (GGML "normal", adjacent pairs) RoPE for llama; halves ("NEOX") for qwen2,
    /// as llama.cpp's `llama_model_rope_type` assigns them.
    pub rope_interleaved: bool,
    /// Whether the output projection reuses `token_embd.weight` (no `output.weight` tensor).
    pub tied_embeddings: bool,
    /// Vocabulary size (rows of `token_embd.weight`).
    pub vocab: usize,
}

fn md_u32(c: &Content, key: &str) -> Result<usize> {
    match c.metadata.get(key) {
        Some(v) => {
            Ok(v.to_u32()
                .or_else(|_| v.to_u64().map(|x| x as u32))
                .map_err(|_| ModelError::Missing(format!("{key} (u32)")))? as usize)
        }
        None => Err(ModelError::Missing(key.to_string())),
    }
}

fn md_f32(c: &Content, key: &str) -> Option<f32> {
    c.metadata.get(key).and_then(|v| match v {
        Value::F32(x) => Some(*x),
        Value::F64(x) => Some(*x as f32),
        _ => None,
    })
}

impl ModelConfig {
    /// Reads the configuration from a GGUF header.
    ///
    /// # Errors
    /// [`ModelError::UnsupportedArch`] or [`ModelError::Missing`].
    pub fn from_gguf(c: &Content) -> Result<Self> {
        let arch = match c.metadata.get("general.architecture") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(ModelError::Missing("general.architecture".into())),
        };
        if !SUPPORTED_ARCHS.contains(&arch.as_str()) {
            return Err(ModelError::UnsupportedArch(arch));
        }
        let n_embd = md_u32(c, &format!("{arch}.embedding_length"))?;
        let n_head = md_u32(c, &format!("{arch}.attention.head_count"))?;
        let n_head_kv = md_u32(c, &format!("{arch}.attention.head_count_kv")).unwrap_or(n_head);
        let head_dim = n_embd / n_head;
        if let Ok(rd) = md_u32(c, &format!("{arch}.rope.dimension_count")) {
            if rd != head_dim {
                return Err(ModelError::Missing(format!(
                    "support for partial rotary embeddings (rope dim {rd} != head dim {head_dim})"
                )));
            }
        }
        let emb = c
            .tensor_infos
            .get("token_embd.weight")
            .ok_or_else(|| ModelError::Missing("tensor token_embd.weight".into()))?;
        Ok(Self {
            n_layer: md_u32(c, &format!("{arch}.block_count"))?,
            n_embd,
            n_head,
            n_head_kv,
            head_dim,
            train_ctx: md_u32(c, &format!("{arch}.context_length")).unwrap_or(2048),
            rope_base: md_f32(c, &format!("{arch}.rope.freq_base")).unwrap_or(10_000.0),
            rms_eps: md_f32(c, &format!("{arch}.attention.layer_norm_rms_epsilon")).unwrap_or(1e-6),
            rope_interleaved: arch == "llama",
            tied_embeddings: !c.tensor_infos.contains_key("output.weight"),
            vocab: emb.shape.dims()[0],
            arch,
        })
    }
}

/// A quantized matrix multiply, chosen at load: our CPU kernels ([`QLinear`]) where they
/// support the weight type, candle's `QMatMul` for other devices and types.
#[derive(Debug, Clone)]
enum Matmul {
    Ours(QLinear),
    Candle(QMatMul),
}

impl Matmul {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Matmul::Ours(q) => q.forward(x),
            Matmul::Candle(m) => m.forward(x),
        }
    }
}

/// A linear layer: quantized weight, optional f32 bias.
#[derive(Debug, Clone)]
struct Linear {
    w: Matmul,
    b: Option<Tensor>,
}

impl Linear {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = self.w.forward(x)?;
        match &self.b {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}

#[derive(Debug, Clone)]
struct Block {
    attn_norm: Tensor,
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    ffn_norm: Tensor,
    gate: Matmul,
    up: Matmul,
    down: Matmul,
}

/// Load-time options for the weights.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions {
    /// Re-quantize Q4_1/Q5_0/Q5_1 matrices to Q8_0 at load when they run on candle's kernels
    /// (GPU, or `TOOLSUM_KERNELS=candle`): candle 0.11.1 has only scalar CPU kernels for those
    /// types (measured 4-6x slower than its Q8_0 SIMD path on this CPU). Ignored for our
    /// kernels, which run the file's types.
    pub convert_to_q8: bool,
    /// Context to preallocate the KV cache for (tokens); capped at the file's context length.
    pub max_context: usize,
    /// Kernel path for our CPU kernels: `None` = [`Isa::choose`] (run-time detection, or the
    /// `TOOLSUM_KERNELS` override); `Some(isa)` forces one (tests compare paths with it).
    pub kernels: Option<Isa>,
    /// What one-row attention (decode steps) reads: the f16 cache, or an 8-bit copy of it
    /// (see [`KvDecode`]).
    pub kv_decode: KvDecode,
}

/// The KV cache that decode steps read on the CPU path.
///
/// [`KvDecode::Q8`] keeps, beside the f16 cache, a copy with 8 bits per key and value and one
/// f32 scale per 32 (GGUF `Q8_0`'s block): a decode step then reads 72 bytes per 64 cached
/// values instead of 128, and its scores run as 8-bit dot products. Prefill still reads the
/// f16 cache. The copy costs 0.56x the f16 cache's memory. It needs AVX-512 VNNI (the
/// [`Isa::Avx512Vnni`] and [`Isa::Amx`] paths) and the one-row kernels' shapes (head_dim 64 or
/// 128 with up to 8 query heads per KV head, 32 with up to 4); elsewhere the setting is
/// ignored. Outputs differ from [`KvDecode::F16`] by the rounding of keys, values and the
/// query to 8 bits.
///
/// The default is `Q8`: over the 24-file corpus with the small model (`scripts/bench.sh`) it
/// kept the same facts as `F16` file by file (recall 0.99, nothing invented), and tiny decodes
/// 2,048 deep ~10% faster with it (see README, Benchmarks); the daemon's RSS grew 822 → 854
/// MB (8,192-token context).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvDecode {
    /// Decode reads the f16 cache (exact to the cache's values).
    F16,
    /// Decode reads the 8-bit copy.
    #[default]
    Q8,
}

impl KvDecode {
    /// `f16` or `q8`.
    pub fn name(self) -> &'static str {
        match self {
            KvDecode::F16 => "f16",
            KvDecode::Q8 => "q8",
        }
    }
}

impl std::str::FromStr for KvDecode {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "f16" => Ok(KvDecode::F16),
            "q8" => Ok(KvDecode::Q8),
            other => Err(format!(
                "unknown KV decode cache {other:?} (expected f16 or q8)"
            )),
        }
    }
}

/// The loaded weights and RoPE tables. Immutable after load: all per-request state lives in
/// [`KvCache`].
#[derive(Debug)]
pub struct Transformer {
    /// Hyper-parameters.
    pub cfg: ModelConfig,
    /// Context the caches are sized for (tokens).
    pub ctx: usize,
    embd: Arc<QTensor>,
    blocks: Vec<Block>,
    out_norm: Tensor,
    /// The output projection on the candle path (`None` when [`Transformer::cpu`] has it).
    output: Option<Matmul>,
    cos: Tensor,
    sin: Tensor,
    device: Device,
    /// The plain-buffer CPU forward ([`super::cpu`]), used when every matrix runs on our
    /// kernels; `blocks` is then empty.
    cpu: Option<CpuModel>,
    threads: Threads,
    /// Whether caches get the 8-bit copy for decode ([`KvDecode::Q8`] on a CPU that runs it).
    kv8: bool,
    /// Count of matrices per kernel as used at run time, `type/path` (e.g. `{"Q5_0/avx512vnni":
    /// 144, "Q6_K→Q8_0/avx512vnni": 12}`; candle's kernels show as `Q8_0/candle`), for status.
    pub kernel_types: HashMap<String, usize>,
}

/// Opens a GGUF file and reads its header (metadata and tensor infos; no weights).
///
/// # Errors
/// [`ModelError::BadFile`] if the file cannot be opened or parsed.
pub fn read_header(path: &Path) -> Result<(File, Content)> {
    let bad = |detail: String| ModelError::BadFile {
        path: path.display().to_string(),
        detail,
    };
    // First line only: candle appends a backtrace to its errors when RUST_BACKTRACE is set.
    let first = |e: &dyn std::fmt::Display| e.to_string().lines().next().unwrap_or("").to_string();
    let mut f = File::open(path).map_err(|e| bad(first(&e)))?;
    let content = gguf_file::Content::read(&mut f).map_err(|e| bad(first(&e)))?;
    Ok((f, content))
}

impl Transformer {
    /// [`read_header`] then [`Transformer::load`]: the model in the GGUF file at `path`.
    ///
    /// # Errors
    /// As those two.
    pub fn open(path: &Path, device: &Device, opts: LoadOptions) -> Result<Self> {
        let (mut f, content) = read_header(path)?;
        Self::load(&mut f, &content, device, opts)
    }
}

impl Transformer {
    /// Loads the weights of `content` from `file` onto `device`.
    ///
    /// # Errors
    /// [`ModelError`] if a tensor is missing, truncated or the architecture is unsupported.
    pub fn load(
        file: &mut File,
        content: &Content,
        device: &Device,
        opts: LoadOptions,
    ) -> Result<Self> {
        let cfg = ModelConfig::from_gguf(content)?;
        let mut kernel_types = HashMap::new();
        let mut get = |name: &str| -> Result<QTensor> {
            content
                .tensor(file, name, device)
                .map_err(|e| ModelError::Missing(format!("tensor {name} ({e})")))
        };
        let isa = match opts.kernels {
            Some(i) => Some(i),
            None => Isa::choose(),
        }
        .filter(|_| device.is_cpu());
        let mut to_matmul = |t: QTensor| -> Result<Matmul> {
            if let Some(isa) = isa {
                if let Some(q) = QLinear::new(&t, isa)? {
                    *kernel_types.entry(q.kernel_name()).or_insert(0) += 1;
                    return Ok(Matmul::Ours(q));
                }
            }
            *kernel_types
                .entry(format!("{:?}/candle", t.dtype()))
                .or_insert(0) += 1;
            Ok(Matmul::Candle(QMatMul::from_qtensor(t)?))
        };
        let mut mat =
            |name: &str, get: &mut dyn FnMut(&str) -> Result<QTensor>| -> Result<Matmul> {
                let t = get(name)?;
                // Our kernels run the file's types; the conversion helps candle's only.
                let t = if opts.convert_to_q8
                    && isa.is_none()
                    && matches!(
                        t.dtype(),
                        GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1 | GgmlDType::Q4_0
                    )
                    && device.is_cpu()
                {
                    QTensor::quantize(&t.dequantize(device)?, GgmlDType::Q8_0)?
                } else {
                    t
                };
                to_matmul(t)
            };
        let f32t = |name: &str, get: &mut dyn FnMut(&str) -> Result<QTensor>| -> Result<Tensor> {
            Ok(get(name)?.dequantize(device)?)
        };
        let bias =
            |name: &str, get: &mut dyn FnMut(&str) -> Result<QTensor>| -> Result<Option<Tensor>> {
                if content.tensor_infos.contains_key(name) {
                    Ok(Some(get(name)?.dequantize(device)?))
                } else {
                    Ok(None)
                }
            };
        let embd = Arc::new(get("token_embd.weight")?);
        let mut blocks = Vec::with_capacity(cfg.n_layer);
        for i in 0..cfg.n_layer {
            let p = format!("blk.{i}");
            blocks.push(Block {
                attn_norm: f32t(&format!("{p}.attn_norm.weight"), &mut get)?,
                q: Linear {
                    w: mat(&format!("{p}.attn_q.weight"), &mut get)?,
                    b: bias(&format!("{p}.attn_q.bias"), &mut get)?,
                },
                k: Linear {
                    w: mat(&format!("{p}.attn_k.weight"), &mut get)?,
                    b: bias(&format!("{p}.attn_k.bias"), &mut get)?,
                },
                v: Linear {
                    w: mat(&format!("{p}.attn_v.weight"), &mut get)?,
                    b: bias(&format!("{p}.attn_v.bias"), &mut get)?,
                },
                o: Linear {
                    w: mat(&format!("{p}.attn_output.weight"), &mut get)?,
                    b: bias(&format!("{p}.attn_output.bias"), &mut get)?,
                },
                ffn_norm: f32t(&format!("{p}.ffn_norm.weight"), &mut get)?,
                gate: mat(&format!("{p}.ffn_gate.weight"), &mut get)?,
                up: mat(&format!("{p}.ffn_up.weight"), &mut get)?,
                down: mat(&format!("{p}.ffn_down.weight"), &mut get)?,
            });
        }
        let out_norm = f32t("output_norm.weight", &mut get)?;
        let output = if cfg.tied_embeddings {
            // Our kernels keep their own repacked copy; the QTensor stays for the embedding.
            let ours = match isa {
                Some(isa) => QLinear::new(&embd, isa)?,
                None => None,
            };
            match ours {
                Some(q) => {
                    *kernel_types.entry(q.kernel_name()).or_insert(0) += 1;
                    Matmul::Ours(q)
                }
                _ => Matmul::Candle(QMatMul::from_arc(embd.clone())?),
            }
        } else {
            mat("output.weight", &mut get)?
        };
        let ctx = opts.max_context.min(cfg.train_ctx).max(16);
        let (cos, sin) = rope_tables(&cfg, ctx, device)?;
        // The CPU path takes the matrices over (moved, not copied: one copy of the weights).
        let (cpu, blocks, output) = match isa {
            Some(isa) if all_ours(&blocks, &output) => {
                let cpu = cpu_model(blocks, &out_norm, output, &cos, &sin, ctx, isa)?;
                (Some(cpu), Vec::new(), None)
            }
            _ => (None, blocks, Some(output)),
        };
        let model = Self {
            cfg,
            ctx,
            embd,
            blocks,
            out_norm,
            output,
            cos,
            sin,
            device: device.clone(),
            cpu,
            threads: Threads::new(),
            kv8: false,
            kernel_types,
        };
        let mut model = model;
        model.kv8 = opts.kv_decode == KvDecode::Q8
            && model.cpu.as_ref().is_some_and(|c| c.wide)
            && super::has_one_row_kernel(
                model.cfg.n_head / model.cfg.n_head_kv,
                model.cfg.head_dim,
            );
        let huge = model.huge_pages();
        tracing::debug!(bytes = huge, "weights on huge pages");
        Ok(model)
    }

    /// Whether the forward pass runs on the plain-buffer CPU path (every matrix on our
    /// kernels, in its file's type) rather than on candle's ops.
    pub fn on_cpu_path(&self) -> bool {
        self.cpu.is_some()
    }

    /// The cache decode steps read: [`KvDecode::Q8`] only when it was asked for and this CPU
    /// and model run it (see [`KvDecode`]).
    pub fn kv_decode(&self) -> KvDecode {
        if self.kv8 {
            KvDecode::Q8
        } else {
            KvDecode::F16
        }
    }

    /// Moves the CPU path's packed weights onto huge pages (see `engine::hugepages`); returns
    /// the bytes moved (0 on candle's path or where the OS cannot). Called by
    /// [`Transformer::load`].
    fn huge_pages(&self) -> usize {
        let Some(cpu) = &self.cpu else {
            return 0;
        };
        let layers = cpu.blocks.iter().flat_map(|b| {
            [&b.q, &b.k, &b.v, &b.o, &b.gate, &b.up, &b.down]
                .into_iter()
                .flat_map(|l| l.buffers())
        });
        crate::engine::hugepages::collapse(layers.chain(cpu.output.buffers()))
    }

    /// A fresh KV cache for this model: `n_layer` pairs of `[1, n_head_kv, ctx, head_dim]` f32
    /// tensors, zeroed, written in place (on the CPU path: f16 buffers, see `RawLayer`).
    ///
    /// # Errors
    /// Allocation failure on the device.
    pub fn new_cache(&self) -> Result<KvCache> {
        if self.cpu.is_some() {
            let layers: Vec<RawLayer> = (0..self.cfg.n_layer)
                .map(|_| RawLayer::new(&self.cfg, self.ctx, self.kv8))
                .collect();
            return Ok(KvCache {
                store: Store::Raw(layers),
                len: 0,
                ctx: self.ctx,
                hd: self.cfg.head_dim,
            });
        }
        let shape = (1, self.cfg.n_head_kv, self.ctx, self.cfg.head_dim);
        let mut layers = Vec::with_capacity(self.cfg.n_layer);
        for _ in 0..self.cfg.n_layer {
            layers.push((
                Tensor::zeros(shape, DType::F32, &self.device)?,
                Tensor::zeros(shape, DType::F32, &self.device)?,
            ));
        }
        Ok(KvCache {
            store: Store::Tensors(layers),
            len: 0,
            ctx: self.ctx,
            hd: self.cfg.head_dim,
        })
    }

    /// Runs `tokens` at positions `cache.len..cache.len + tokens.len()`, appends their keys and
    /// values to `cache`, and returns the logits of the last token, shape `[vocab]` (f32).
    ///
    /// # Errors
    /// [`ModelError::ContextOverflow`] when the cache is full; candle errors.
    pub fn forward(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Tensor> {
        if self.cpu.is_some() {
            let logits = self.cpu_pass(tokens, cache, false)?;
            return Ok(Tensor::from_vec(logits, self.cfg.vocab, &self.device)?);
        }
        let t = tokens.len();
        let pos = cache.len;
        self.check_room(pos, t)?;
        let cfg = &self.cfg;
        let Store::Tensors(layers) = &mut cache.store else {
            return Err(ModelError::Missing(
                "a KV cache made by this model (new_cache)".into(),
            ));
        };
        let ids = Tensor::new(tokens, &self.device)?;
        let emb = self.embd.embedding(&ids)?; // [t, d]
        let mut x = emb.unsqueeze(0)?; // [1, t, d]
        let cos = self.cos.narrow(0, pos, t)?;
        let sin = self.sin.narrow(0, pos, t)?;
        let total = pos + t;
        let mask = causal_mask(t, pos, &self.device)?;
        let n_rep = cfg.n_head / cfg.n_head_kv;
        let scale = 1.0 / (cfg.head_dim as f64).sqrt();
        for (blk, (ck, cv)) in self.blocks.iter().zip(layers.iter_mut()) {
            let h = candle_nn::ops::rms_norm(&x, &blk.attn_norm, cfg.rms_eps)?;
            let q = blk.q.forward(&h)?;
            let k = blk.k.forward(&h)?;
            let v = blk.v.forward(&h)?;
            let q = q
                .reshape((1, t, cfg.n_head, cfg.head_dim))?
                .transpose(1, 2)?
                .contiguous()?;
            let k = k
                .reshape((1, t, cfg.n_head_kv, cfg.head_dim))?
                .transpose(1, 2)?
                .contiguous()?;
            let v = v
                .reshape((1, t, cfg.n_head_kv, cfg.head_dim))?
                .transpose(1, 2)?
                .contiguous()?;
            let (q, k) = if cfg.rope_interleaved {
                (
                    candle_nn::rotary_emb::rope_i(&q, &cos, &sin)?,
                    candle_nn::rotary_emb::rope_i(&k, &cos, &sin)?,
                )
            } else {
                (
                    candle_nn::rotary_emb::rope(&q, &cos, &sin)?,
                    candle_nn::rotary_emb::rope(&k, &cos, &sin)?,
                )
            };
            ck.slice_set(&k, 2, pos)?;
            cv.slice_set(&v, 2, pos)?;
            let k_all = ck.narrow(2, 0, total)?;
            let v_all = cv.narrow(2, 0, total)?;
            // Grouped-query attention without copying K/V n_rep times: fold the n_rep query
            // heads that share a KV head into the row dimension.
            let qg = q.reshape((1, cfg.n_head_kv, n_rep * t, cfg.head_dim))?;
            let att = (qg.matmul(&k_all.t()?)? * scale)?;
            let att = att
                .reshape((1, cfg.n_head_kv, n_rep, t, total))?
                .broadcast_add(&mask)?;
            let att = candle_nn::ops::softmax_last_dim(&att)?.reshape((
                1,
                cfg.n_head_kv,
                n_rep * t,
                total,
            ))?;
            let y = att.matmul(&v_all.contiguous()?)?; // [1, kvh, n_rep*t, hd]
            let y = y
                .reshape((1, cfg.n_head, t, cfg.head_dim))?
                .transpose(1, 2)?
                .reshape((1, t, cfg.n_embd))?;
            x = (x + blk.o.forward(&y)?)?;
            let h = candle_nn::ops::rms_norm(&x, &blk.ffn_norm, cfg.rms_eps)?;
            let g = blk.gate.forward(&h)?.silu()?;
            let u = blk.up.forward(&h)?;
            x = (x + blk.down.forward(&(g * u)?)?)?;
        }
        cache.len = total;
        let last = x.i((.., t - 1..t, ..))?;
        let last = candle_nn::ops::rms_norm(&last, &self.out_norm, cfg.rms_eps)?;
        let output = self
            .output
            .as_ref()
            .ok_or_else(|| ModelError::Missing("the output projection".into()))?;
        let logits = output.forward(&last)?;
        Ok(logits.flatten_all()?.to_dtype(DType::F32)?)
    }
}

impl Transformer {
    /// [`ModelError::ContextOverflow`] unless `t` more tokens fit after `pos`.
    fn check_room(&self, pos: usize, t: usize) -> Result<()> {
        if pos + t > self.ctx {
            return Err(ModelError::ContextOverflow {
                prompt: pos + t,
                new: 0,
                ctx: self.ctx,
            });
        }
        Ok(())
    }

    /// The plain-buffer CPU pass of [`Transformer::forward`] (`all_rows` false: the last
    /// row's logits, `[vocab]`) and [`Transformer::forward_rows`] (`[t * vocab]`).
    fn cpu_pass(&self, tokens: &[u32], cache: &mut KvCache, all_rows: bool) -> Result<Vec<f32>> {
        let t = tokens.len();
        let pos = cache.len;
        self.check_room(pos, t)?;
        let (Some(cpu), Store::Raw(layers)) = (&self.cpu, &mut cache.store) else {
            return Err(ModelError::Missing(
                "a KV cache made by this model (new_cache)".into(),
            ));
        };
        let cfg = &self.cfg;
        let ids = Tensor::new(tokens, &self.device)?;
        let x = self.embd.embedding(&ids)?.flatten_all()?.to_vec1::<f32>()?;
        // The pass's parallel loops go to the compute team (spinning workers: a loop starts
        // without a wake-up); decode steps on the team or this thread alone, whichever is
        // faster now (see `Threads`).
        let logits = self
            .threads
            .run(t == 1, || cpu.forward(cfg, x, pos, layers, all_rows));
        cache.len = pos + t;
        Ok(logits)
    }
}

/// cos/sin tables `[ctx, head_dim/2]`: angle(p, i) = p * base^(-2i/head_dim) (RoFormer, Su et
/// al. 2021, eq. 15).
fn rope_tables(cfg: &ModelConfig, ctx: usize, device: &Device) -> Result<(Tensor, Tensor)> {
    let half = cfg.head_dim / 2;
    let inv: Vec<f32> = (0..half)
        .map(|i| 1.0 / cfg.rope_base.powf(2.0 * i as f32 / cfg.head_dim as f32))
        .collect();
    let inv = Tensor::from_vec(inv, (1, half), device)?;
    let pos = Tensor::arange(0u32, ctx as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((ctx, 1))?;
    let ang = pos.broadcast_mul(&inv)?;
    Ok((ang.cos()?.contiguous()?, ang.sin()?.contiguous()?))
}

/// Additive causal mask `[t, pos + t]`: row r (absolute position pos + r) sees columns
/// `0..=pos + r`; the rest get -inf. Built per call and dropped after it (never cached).
fn causal_mask(t: usize, pos: usize, device: &Device) -> Result<Tensor> {
    let total = pos + t;
    let mut m = vec![0f32; t * total];
    for r in 0..t {
        for c in (pos + r + 1)..total {
            m[r * total + c] = f32::NEG_INFINITY;
        }
    }
    Ok(Tensor::from_vec(m, (t, total), device)?)
}

/// The KV cache, preallocated for the whole context and filled up to `len` tokens: per layer,
/// keys and values, either as f32 candle tensors `[1, n_head_kv, ctx, head_dim]` (candle path)
/// or as the CPU path's f16 buffers (keys transposed in blocks; see the `engine::cpu` module).
#[derive(Debug)]
pub struct KvCache {
    store: Store,
    len: usize,
    ctx: usize,
    hd: usize,
}

#[derive(Debug, Clone)]
enum Store {
    Tensors(Vec<(Tensor, Tensor)>),
    Raw(Vec<RawLayer>),
}

/// A copy of the first `len` positions of a [`KvCache`], with the token ids that produced them.
#[derive(Debug, Clone)]
pub struct KvSnapshot {
    /// Token ids of the cached prefix.
    pub tokens: Vec<u32>,
    store: Store,
}

impl KvCache {
    /// Commits every page of the cache now (writes one zero per 4 KiB page of the CPU path's
    /// buffers; candle's tensors are left as they are), so a long-lived process's memory is
    /// what it is after load instead of growing as contexts first reach new lengths (as
    /// llama.cpp clears its KV buffer at load), then moves the CPU path's buffers onto huge
    /// pages where the OS can (see `engine::hugepages`). Returns the cache's size in bytes.
    pub fn commit(&mut self) -> usize {
        match &mut self.store {
            Store::Raw(layers) => {
                let bufs = raw_buffers(layers);
                for &(ptr, len) in &bufs {
                    // One zero byte per 4 KiB page; the zeros are what the buffers hold.
                    for off in (0..len).step_by(4096) {
                        // SAFETY: `ptr..ptr + len` is one live buffer of this cache, owned by
                        // `self` (borrowed mutably here); writing a zero byte keeps its value.
                        unsafe { std::ptr::write_volatile((ptr as *mut u8).add(off), 0) };
                    }
                }
                crate::engine::hugepages::collapse(bufs.iter().copied());
                bufs.iter().map(|b| b.1).sum()
            }
            Store::Tensors(layers) => layers
                .iter()
                .map(|(k, v)| (k.elem_count() + v.elem_count()) * k.dtype().size_in_bytes())
                .sum(),
        }
    }

    /// Forgets every token and hands the CPU path's buffers' whole pages back to the OS
    /// (`MADV_DONTNEED`: they read as zeros and are committed again as positions are written;
    /// the address space stays reserved), so a KV slot that served a long request does not
    /// keep that memory resident while idle. Candle's tensors are left as they are; no-op off
    /// Linux.
    pub fn release(&mut self) {
        self.len = 0;
        #[cfg(target_os = "linux")]
        if let Store::Raw(layers) = &mut self.store {
            const PAGE: usize = 4096;
            for (ptr, len) in raw_buffers(layers) {
                let (start, end) = (ptr.next_multiple_of(PAGE), (ptr + len) / PAGE * PAGE);
                if end > start {
                    // SAFETY: `start..end` lies inside one live buffer of this cache, owned by
                    // `self` (borrowed mutably here); its pages then read as zeros, a valid
                    // value of every element type the buffers hold.
                    unsafe {
                        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED)
                    };
                }
            }
        }
    }

    /// Tokens currently held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no token is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every token (the memory stays allocated; stale entries are masked off by length).
    pub fn reset(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `len` tokens and forgets the rest (rejected speculative drafts); a
    /// `len` at or above [`KvCache::len`] changes nothing.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Copies the first `tokens.len()` positions (which must be those `tokens`) into a snapshot.
    ///
    /// # Errors
    /// Candle errors, or if the cache holds fewer tokens than `tokens`.
    pub fn snapshot(&self, tokens: &[u32]) -> Result<KvSnapshot> {
        let n = tokens.len();
        if n > self.len {
            return Err(ModelError::Missing(format!(
                "{n} cached tokens for a snapshot (cache holds {})",
                self.len
            )));
        }
        let store = match &self.store {
            Store::Raw(layers) => Store::Raw(
                layers
                    .iter()
                    .map(|l| l.prefix(n, self.ctx, self.hd))
                    .collect(),
            ),
            Store::Tensors(layers) => {
                // A fresh buffer per layer: a narrowed view can share the cache's storage
                // (when it is contiguous), and restore() may not slice_set a tensor into its
                // own storage.
                let copy = |t: &Tensor| -> candle_core::Result<Tensor> {
                    let view = t.narrow(2, 0, n)?.contiguous()?;
                    let dst = Tensor::zeros(view.shape(), view.dtype(), view.device())?;
                    dst.slice_set(&view, 2, 0)?;
                    Ok(dst)
                };
                Store::Tensors(
                    layers
                        .iter()
                        .map(|(k, v)| Ok((copy(k)?, copy(v)?)))
                        .collect::<candle_core::Result<Vec<_>>>()?,
                )
            }
        };
        Ok(KvSnapshot {
            tokens: tokens.to_vec(),
            store,
        })
    }

    /// Restores a snapshot: positions `0..snap.tokens.len()` are overwritten and the cache then
    /// holds exactly that prefix.
    ///
    /// # Errors
    /// A snapshot of the other storage kind; candle errors (shape mismatch with a snapshot
    /// from another model).
    pub fn restore(&mut self, snap: &KvSnapshot) -> Result<()> {
        let n = snap.tokens.len();
        match (&mut self.store, &snap.store) {
            (Store::Raw(layers), Store::Raw(saved)) => {
                for (l, s) in layers.iter_mut().zip(saved) {
                    l.restore(s, n, self.ctx, self.hd);
                }
            }
            (Store::Tensors(layers), Store::Tensors(saved)) => {
                for ((k, v), (sk, sv)) in layers.iter_mut().zip(saved.iter()) {
                    k.slice_set(sk, 2, 0)?;
                    v.slice_set(sv, 2, 0)?;
                }
            }
            _ => {
                return Err(ModelError::Missing(
                    "a snapshot of the same cache kind".into(),
                ))
            }
        }
        self.len = n;
        Ok(())
    }
}

/// Every buffer of the CPU path's layers, `(address, bytes)`.
fn raw_buffers(layers: &mut [RawLayer]) -> Vec<(usize, usize)> {
    let mut bufs: Vec<(usize, usize)> = Vec::new();
    for l in layers.iter_mut() {
        bufs.push((l.kt.as_mut_ptr() as usize, l.kt.len() * 2));
        bufs.push((l.v.as_mut_ptr() as usize, l.v.len() * 2));
        if let Some(c) = &mut l.q8 {
            bufs.extend(c.buffers());
        }
    }
    bufs
}

/// Whether every matrix got one of our kernels (the CPU path's condition).
fn all_ours(blocks: &[Block], output: &Matmul) -> bool {
    let ours = |m: &Matmul| matches!(m, Matmul::Ours(_));
    ours(output)
        && blocks.iter().all(|b| {
            [&b.q.w, &b.k.w, &b.v.w, &b.o.w, &b.gate, &b.up, &b.down]
                .into_iter()
                .all(ours)
        })
}

/// Builds the CPU path's model, moving the matrices out of `blocks` and `output`.
///
/// # Errors
/// Candle errors reading norms or biases; [`ModelError::Missing`] if a matrix is not on our
/// kernels (callers check [`all_ours`] first).
fn cpu_model(
    blocks: Vec<Block>,
    out_norm: &Tensor,
    output: Matmul,
    cos: &Tensor,
    sin: &Tensor,
    ctx: usize,
    isa: Isa,
) -> Result<CpuModel> {
    fn ours(m: Matmul) -> Result<QLinear> {
        match m {
            Matmul::Ours(q) => Ok(q),
            Matmul::Candle(_) => Err(ModelError::Missing("a CPU kernel for every matrix".into())),
        }
    }
    let vec = |t: &Tensor| -> candle_core::Result<Vec<f32>> {
        t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()
    };
    let bias = |b: &Option<Tensor>| -> candle_core::Result<Option<Vec<f32>>> {
        b.as_ref().map(&vec).transpose()
    };
    let mut out = Vec::with_capacity(blocks.len());
    for b in blocks {
        out.push(CpuBlock {
            attn_norm: vec(&b.attn_norm)?,
            bq: bias(&b.q.b)?,
            bk: bias(&b.k.b)?,
            bv: bias(&b.v.b)?,
            bo: bias(&b.o.b)?,
            ffn_norm: vec(&b.ffn_norm)?,
            q: ours(b.q.w)?,
            k: ours(b.k.w)?,
            v: ours(b.v.w)?,
            o: ours(b.o.w)?,
            gate: ours(b.gate)?,
            up: ours(b.up)?,
            down: ours(b.down)?,
        });
    }
    Ok(CpuModel {
        blocks: out,
        out_norm: vec(out_norm)?,
        output: ours(output)?,
        cos: vec(cos)?,
        sin: vec(sin)?,
        ctx,
        simd: simd_for(isa),
        wide: wide_for(isa),
    })
}
