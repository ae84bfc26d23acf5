//! Passes of several rows whose logits come back row by row: [`Transformer::forward_rows`]
//! (one sequence's drafted tokens, checked in one pass) and [`Transformer::forward_batch`]
//! (several sequences, each with its own KV cache, in one pass). Both run on the CPU path's
//! per-row kernels, so every row equals a one-token decode step at its position.

use candle_core::{DType, Tensor};

use super::{KvCache, ModelError, Result, Store, Transformer};
use crate::engine::cpu::SeqRows;

// Rows of `forward_rows` must stay on the per-row kernels (see `MAX_VERIFY_ROWS`).
#[cfg(target_arch = "x86_64")]
const _: () = assert!(Transformer::MAX_VERIFY_ROWS < crate::engine::kernels::amx::MIN_ROWS);

impl Transformer {
    /// Most tokens [`Transformer::forward_rows`] takes: below the AMX tile kernel's row count,
    /// so each row is computed exactly as a one-token decode step.
    pub const MAX_VERIFY_ROWS: usize = 15;

    /// Runs `tokens` like [`Transformer::forward`] and returns the logits after each of them,
    /// `[t][vocab]`, each bit-identical to what a one-token `forward` at that position gives
    /// (speculative decoding checks drafted tokens with it).
    ///
    /// # Errors
    /// Not on the CPU path, more than [`Transformer::MAX_VERIFY_ROWS`] tokens, or as
    /// [`Transformer::forward`].
    pub fn forward_rows(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<Vec<f32>>> {
        let t = tokens.len();
        if t == 0 || t > Self::MAX_VERIFY_ROWS {
            return Err(ModelError::Unsupported(format!(
                "forward_rows takes 1..={} tokens, got {t}",
                Self::MAX_VERIFY_ROWS
            )));
        }
        if self.cpu.is_none() {
            return Err(ModelError::Unsupported(
                "forward_rows (speculative decoding) runs on the CPU path only".into(),
            ));
        }
        let logits = self.cpu_pass(tokens, cache, true)?;
        Ok(logits
            .chunks_exact(self.cfg.vocab)
            .map(<[f32]>::to_vec)
            .collect())
    }

    /// Most rows (tokens, all sequences together) one [`Transformer::forward_batch`] pass
    /// takes: as [`Transformer::MAX_VERIFY_ROWS`], so every row is computed exactly as a
    /// one-token decode step.
    pub const MAX_BATCH_ROWS: usize = Self::MAX_VERIFY_ROWS;

    /// One decode pass for several sequences: `steps[i]` feeds `tokens` (1 or more; more are
    /// drafts to verify) to its own cache at that cache's length, so the weights are read once
    /// for all rows. Returns the logits after every fed token, `[rows][vocab]`, the rows of
    /// `steps[0]` first; each row bit-identical to what a one-token [`Transformer::forward`]
    /// at its position gives. Each cache grows by its tokens.
    ///
    /// Off the CPU path (candle devices) the steps run one after another as single forwards
    /// (one token per step only).
    ///
    /// # Errors
    /// No rows, more than [`Transformer::MAX_BATCH_ROWS`] rows, a step with no token, a step
    /// that does not fit its cache ([`ModelError::ContextOverflow`]), several tokens in a step
    /// off the CPU path, or a cache made by another model.
    pub fn forward_batch(&self, steps: &mut [(&[u32], &mut KvCache)]) -> Result<Vec<Vec<f32>>> {
        let t: usize = steps.iter().map(|s| s.0.len()).sum();
        if t == 0 || t > Self::MAX_BATCH_ROWS || steps.iter().any(|s| s.0.is_empty()) {
            return Err(ModelError::Unsupported(format!(
                "forward_batch takes 1..={} rows with at least one per step, got {:?}",
                Self::MAX_BATCH_ROWS,
                steps.iter().map(|s| s.0.len()).collect::<Vec<_>>()
            )));
        }
        for (tokens, cache) in steps.iter() {
            self.check_room(cache.len, tokens.len())?;
        }
        let Some(cpu) = &self.cpu else {
            let mut out = Vec::with_capacity(steps.len());
            for (tokens, cache) in steps.iter_mut() {
                if tokens.len() != 1 {
                    return Err(ModelError::Unsupported(
                        "forward_batch with drafts runs on the CPU path only".into(),
                    ));
                }
                let logits = self.forward(tokens, cache)?;
                out.push(logits.to_dtype(DType::F32)?.to_vec1::<f32>()?);
            }
            return Ok(out);
        };
        let ids: Vec<u32> = steps.iter().flat_map(|s| s.0.iter().copied()).collect();
        let ids = Tensor::new(ids.as_slice(), &self.device)?;
        let x = self.embd.embedding(&ids)?.flatten_all()?.to_vec1::<f32>()?;
        let mut seqs = Vec::with_capacity(steps.len());
        for (tokens, cache) in steps.iter_mut() {
            let pos = cache.len;
            let Store::Raw(layers) = &mut cache.store else {
                return Err(ModelError::Missing(
                    "a KV cache made by this model (new_cache)".into(),
                ));
            };
            seqs.push(SeqRows {
                pos,
                rows: tokens.len(),
                cache: layers,
            });
        }
        let cfg = &self.cfg;
        let logits = self
            .threads
            .run(t == 1, || cpu.forward_batch(cfg, x, &mut seqs));
        drop(seqs);
        for (tokens, cache) in steps.iter_mut() {
            cache.len += tokens.len();
        }
        Ok(logits
            .chunks_exact(self.cfg.vocab)
            .map(<[f32]>::to_vec)
            .collect())
    }
}
