//! Generation as a state machine per sequence, so several requests decode together: the
//! engine's continuous-batching loop ([`Engine::serve`]) and its thin [`EngineHandle`]s.
//!
//! A `Seq` is one request in flight in its own KV slot (a [`KvCache`] of the engine): it is
//! prefilled one chunk per round, then every round samples its next token and names the tokens
//! it feeds to the next pass (the token, and drafted ones when it decodes alone). A round runs
//! one batched pass ([`super::model::Transformer::forward_batch`]) for every sequence that
//! feeds, so the weights are read once for all of them (Orca's iteration-level scheduling, Yu
//! et al. 2022; what vLLM and llama-server's slots do). Each sequence keeps its own stop
//! conditions (end of turn, token budget, deadline, cancel flag, loop detector), output
//! constraint, repetition penalty and sampler. A batched row is bit-identical to a one-row
//! step, so greedy output does not depend on what else decodes beside it; drafts (prompt
//! lookup) are made only while one sequence is in flight, where they pay (in a batch, another
//! sequence's row is worth more than a draft's). [`Engine::generate`] is the same machine with
//! one sequence.
//!
//! Every slot restores the engine's system-prompt snapshot, so batching keeps the prefix
//! cache. Slot 0 is the engine's committed cache; slots 1.. are made on first use, their pages
//! are committed as positions are written (a slot in use costs up to the KV size noted at
//! [`super::DEFAULT_MAX_CONTEXT`], in proportion to its request's length), and handed back to
//! the OS when the engine goes idle ([`KvCache::release`]).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use candle_core::{Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling as CandleSampling};

use super::model::{self, KvCache, Transformer};
use super::{constrain, detect_loop, ema, lookup_draft, Engine, Sampling, REPEAT_WINDOW};
use crate::backend::{NarrateRequest, Narration, Narrator, StopReason};

/// Default `local_parallel`: local summaries in flight at once. Measured with
/// `cargo bench --bench engine` (batched decode, 2 cores): aggregate decode at 4 sequences
/// was 1.7x one sequence's on tiny and 2.7x on small, with little more from 8 on tiny; each
/// slot in use adds its KV pages (see the module docs).
pub const DEFAULT_LOCAL_PARALLEL: usize = 4;

/// Most `local_parallel`: sequences in one batched pass ([`Transformer::MAX_BATCH_ROWS`]).
pub const MAX_LOCAL_PARALLEL: usize = Transformer::MAX_BATCH_ROWS;

/// One request in flight: its prompt and generated tokens, sampler, constraint, and the rows
/// it waits on or feeds next.
pub(crate) struct Seq {
    req: NarrateRequest,
    /// The KV slot (index into the engine's caches).
    slot: usize,
    out: Narration,
    /// The prompt, then the generated tokens (`hist[plen..]`): drafts are looked up in both.
    hist: Vec<u32>,
    plen: usize,
    max_new: usize,
    /// Prompt tokens in the slot's cache so far (`plen` once decoding).
    prefilled: usize,
    t_prefill: Instant,
    /// When decoding started (`None` while prefilling).
    t_decode: Option<Instant>,
    proc: LogitsProcessor,
    constrained: Option<constrain::Constrained>,
    /// Logits rows not yet sampled (the front one is the next token's), and the drafted tokens
    /// they check: `pending[i + 1]` follows `drafts[i]`.
    pending: VecDeque<Tensor>,
    drafts: VecDeque<u32>,
    /// Tokens to feed to the next pass (empty: none needed).
    feed: Vec<u32>,
    /// Set once the sequence ended (`out.stop` says why) or failed (`error`).
    finished: bool,
    error: Option<anyhow::Error>,
}

impl Seq {
    /// Why this sequence should stop now (cancel flag or deadline), if it should.
    fn stopped(&self) -> Option<StopReason> {
        if self.req.cancel.load(Ordering::Relaxed) {
            Some(StopReason::Cancelled)
        } else if self.req.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(StopReason::Deadline)
        } else {
            None
        }
    }

    /// Whether the sequence has ended (or failed).
    pub(crate) fn finished(&self) -> bool {
        self.finished
    }

    fn prefilling(&self) -> bool {
        !self.finished && self.t_decode.is_none()
    }

    /// The outcome: the narration, or the error that ended it.
    pub(crate) fn result(self) -> anyhow::Result<Narration> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.out),
        }
    }
}

impl Engine {
    /// KV slot `i`, made on first use.
    fn slot(&mut self, i: usize) -> anyhow::Result<&mut KvCache> {
        while self.caches.len() <= i {
            self.caches.push(self.model.new_cache()?);
        }
        Ok(&mut self.caches[i])
    }

    /// Starts `req` in KV slot `slot`: renders the prompt, restores the prefix snapshot when
    /// the prompt starts with it (else prefills the prefix and snapshots it); the rest of the
    /// prompt is prefilled by [`Engine::round`]s.
    ///
    /// # Errors
    /// Template errors; a prompt longer than the context; model errors in the prefix prefill.
    pub(crate) fn start(&mut self, req: NarrateRequest, slot: usize) -> anyhow::Result<Seq> {
        let (ids, prefix_len) = self.prompt_ids(&req.system, &req.user)?;
        let ctx = self.model.ctx;
        if ids.len() + 1 > ctx {
            return Err(model::ModelError::ContextOverflow {
                prompt: ids.len(),
                new: req.max_new_tokens,
                ctx,
            }
            .into());
        }
        let t_prefill = Instant::now();
        let mut out = Narration {
            prompt_tokens: ids.len(),
            ..Default::default()
        };
        self.slot(slot)?.reset();
        let mut done = 0;
        if let Some(snap) = &self.snapshot {
            if ids.len() > snap.tokens.len() && ids.starts_with(&snap.tokens) {
                self.caches[slot].restore(snap)?;
                done = snap.tokens.len();
                out.cached_prefix_tokens = done;
            }
        }
        if done == 0 && prefix_len > 0 {
            let chunk = self.opts.prefill_chunk.max(1);
            for c in ids[..prefix_len].chunks(chunk) {
                self.model.forward(c, &mut self.caches[slot])?;
            }
            self.snapshot = Some(self.caches[slot].snapshot(&ids[..prefix_len])?);
            done = prefix_len;
        }
        let proc = match self.opts.sampling {
            Sampling::Greedy => LogitsProcessor::from_sampling(0, CandleSampling::ArgMax),
            Sampling::TopP {
                temperature,
                top_p,
                seed,
            } => LogitsProcessor::from_sampling(
                seed,
                CandleSampling::TopP {
                    p: top_p,
                    temperature,
                },
            ),
        };
        if req.constraint.is_some() && self.token_texts.is_none() {
            self.token_texts = Some(constrain::TokenTexts::new(&self.tokenizer));
        }
        let constrained = match (&req.constraint, &self.token_texts) {
            (Some(c), Some(t)) => Some(constrain::Constrained::new(c, t)),
            _ => None,
        };
        Ok(Seq {
            max_new: req.max_new_tokens.min(ctx - ids.len()),
            plen: ids.len(),
            hist: ids,
            req,
            slot,
            out,
            prefilled: done,
            t_prefill,
            t_decode: None,
            proc,
            constrained,
            pending: VecDeque::new(),
            drafts: VecDeque::new(),
            feed: Vec::new(),
            finished: false,
            error: None,
        })
    }

    /// One round over `seqs`: the first sequence still prefilling gets one prefill chunk, then
    /// every sequence that feeds tokens runs in one batched pass (in groups of at most
    /// [`Transformer::MAX_BATCH_ROWS`] rows), and samples what it can from the new rows.
    /// Drafts are made only when `seqs` holds one unfinished sequence. A sequence that fails
    /// is finished with its error; the others go on.
    pub(crate) fn round(&mut self, seqs: &mut [Seq]) {
        let alone = seqs.iter().filter(|s| !s.finished).count() == 1;
        if let Some(s) = seqs.iter_mut().find(|s| s.prefilling()) {
            if let Err(e) = self.prefill_chunk(s, alone) {
                s.error = Some(e);
                s.finished = true;
            }
        }
        let mut feeding: Vec<&mut Seq> = seqs
            .iter_mut()
            .filter(|s| !s.finished && !s.feed.is_empty())
            .collect();
        while !feeding.is_empty() {
            let mut rows = 0;
            let n = feeding
                .iter()
                .take_while(|s| {
                    rows += s.feed.len();
                    rows <= Transformer::MAX_BATCH_ROWS
                })
                .count()
                .max(1);
            let rest = feeding.split_off(n);
            let group = std::mem::replace(&mut feeding, rest);
            self.decode_group(group, alone);
        }
    }

    /// One batched pass for `group` (each feeding), then each samples from its new rows.
    fn decode_group(&mut self, mut group: Vec<&mut Seq>, alone: bool) {
        let vocab = self.model.cfg.vocab;
        let result = {
            let mut slots: Vec<Option<&mut KvCache>> = self.caches.iter_mut().map(Some).collect();
            let mut steps: Vec<(&[u32], &mut KvCache)> = Vec::with_capacity(group.len());
            let mut bad = false;
            for s in group.iter() {
                match slots.get_mut(s.slot).and_then(Option::take) {
                    Some(c) => steps.push((&s.feed, c)),
                    None => bad = true,
                }
            }
            if bad {
                Err(anyhow::anyhow!("two sequences in one KV slot"))
            } else {
                self.passes.0 += 1;
                self.passes.1 += steps.iter().map(|s| s.0.len() as u64).sum::<u64>();
                self.model
                    .forward_batch(&mut steps)
                    .map_err(anyhow::Error::from)
            }
        };
        let rows = match result {
            Ok(r) => r,
            Err(e) => {
                for s in group {
                    s.error = Some(anyhow::anyhow!("{e:#}"));
                    s.finished = true;
                }
                return;
            }
        };
        let mut rows = rows.into_iter();
        for s in group.iter_mut() {
            for _ in 0..s.feed.len() {
                let r = rows.next().expect("a logits row per fed token");
                match Tensor::from_vec(r, vocab, &Device::Cpu) {
                    Ok(t) => s.pending.push_back(t),
                    Err(e) => s.error = Some(e.into()),
                }
            }
            s.feed.clear();
            if s.error.is_some() {
                s.finished = true;
                continue;
            }
            if let Err(e) = self.advance(s, alone) {
                s.error = Some(e);
                s.finished = true;
            }
        }
    }

    /// Prefills the next chunk of `s`'s prompt (or stops it on its cancel flag or deadline);
    /// after the last chunk, samples its first token.
    fn prefill_chunk(&mut self, s: &mut Seq, alone: bool) -> anyhow::Result<()> {
        if let Some(stop) = s.stopped() {
            s.out.stop = Some(stop);
            s.out.prefill_ms = s.t_prefill.elapsed().as_secs_f64() * 1e3;
            s.finished = true;
            return Ok(());
        }
        let chunk = self.opts.prefill_chunk.max(1);
        let end = (s.prefilled + chunk).min(s.plen);
        let logits = self
            .model
            .forward(&s.hist[s.prefilled..end], &mut self.caches[s.slot])?;
        s.prefilled = end;
        if end < s.plen {
            return Ok(());
        }
        s.out.prefill_ms = s.t_prefill.elapsed().as_secs_f64() * 1e3;
        let prefilled = s.plen - s.out.cached_prefix_tokens;
        if s.out.prefill_ms > 0.0 && prefilled >= 16 {
            let tps = prefilled as f64 / (s.out.prefill_ms / 1e3);
            self.prefill_tps = ema(self.prefill_tps, tps);
        }
        s.t_decode = Some(Instant::now());
        s.pending.push_back(logits);
        self.advance(s, alone)
    }

    /// Samples `s`'s pending rows in order until it needs a pass (then sets its feed: the new
    /// token, with drafts after it when `alone`) or it ends. The checks, penalty, constraint
    /// and sampler run exactly as a one-sequence loop would run them, so output does not
    /// depend on drafts or batching.
    fn advance(&mut self, s: &mut Seq, alone: bool) -> anyhow::Result<()> {
        let ctx = self.model.ctx;
        let vocab = self.model.cfg.vocab;
        let eos = self.tokenizer.eos_ids().to_vec();
        loop {
            if s.hist.len() - s.plen >= s.max_new {
                return self.finish(s, StopReason::MaxTokens);
            }
            if let Some(stop) = s.stopped() {
                return self.finish(s, stop);
            }
            let mut logits = s.pending.pop_front().context("a logits row per step")?;
            let generated = &s.hist[s.plen..];
            if self.opts.repeat_penalty != 1.0 && !generated.is_empty() {
                let start = generated.len().saturating_sub(REPEAT_WINDOW);
                logits = candle_transformers::utils::apply_repeat_penalty(
                    &logits,
                    self.opts.repeat_penalty,
                    &generated[start..],
                )?;
            }
            if let Some(c) = s.constrained.as_ref().filter(|c| !c.free()) {
                let mut v = logits.to_dtype(candle_core::DType::F32)?.to_vec1::<f32>()?;
                c.mask(&mut v, &eos);
                logits = Tensor::from_vec(v, vocab, &Device::Cpu)?;
            }
            let next = s.proc.sample(&logits)?;
            if let Some(c) = s.constrained.as_mut() {
                c.push(&self.tokenizer.decode(&[next], true));
            }
            if eos.contains(&next) {
                return self.finish(s, StopReason::Eos);
            }
            s.hist.push(next);
            let generated = &s.hist[s.plen..];
            if detect_loop(generated) {
                return self.finish(s, StopReason::Loop);
            }
            let n_gen = generated.len();
            if n_gen >= s.max_new {
                // The stop the loop's top would reach, without feeding this token first.
                return self.finish(s, StopReason::MaxTokens);
            }
            let cache = &mut self.caches[s.slot];
            if let Some(d) = s.drafts.pop_front() {
                if d == next {
                    // Already in the cache, and the row after it is waiting.
                    s.out.draft_accepted += 1;
                    continue;
                }
                // Rejected: forget `d` and the drafts after it.
                let stale = 1 + s.drafts.len();
                cache.truncate(cache.len() - stale);
                s.drafts.clear();
                s.pending.clear();
            }
            if cache.len() >= ctx {
                return self.finish(s, StopReason::MaxTokens);
            }
            let speculate = alone && self.model.on_cpu_path() && self.opts.draft_tokens > 0;
            // Drafts that fit the context and the token budget (every row is sampled).
            let room = self
                .opts
                .draft_tokens
                .min(Transformer::MAX_BATCH_ROWS - 1)
                .min(ctx.saturating_sub(cache.len() + 1))
                .min(s.max_new.saturating_sub(n_gen + 1));
            let mut draft = if speculate && room > 0 {
                lookup_draft(&s.hist, room)
            } else {
                Vec::new()
            };
            // Rows after an end-of-turn token would never be sampled.
            if let Some(e) = draft.iter().position(|t| eos.contains(t)) {
                draft.truncate(e);
            }
            s.feed.clear();
            s.feed.push(next);
            s.feed.extend_from_slice(&draft);
            s.out.draft_proposed += draft.len();
            s.drafts.extend(draft);
            return Ok(());
        }
    }

    /// Ends `s` with `stop`: its text, token count and decode time, and the engine's decode
    /// speed and draft counters.
    fn finish(&mut self, s: &mut Seq, stop: StopReason) -> anyhow::Result<()> {
        s.out.stop = Some(stop);
        s.finished = true;
        s.feed.clear();
        let Some(t_decode) = s.t_decode else {
            return Ok(());
        };
        s.out.decode_ms = t_decode.elapsed().as_secs_f64() * 1e3;
        let generated = &s.hist[s.plen..];
        s.out.generated_tokens = generated.len();
        self.drafts.0 += s.out.draft_proposed as u64;
        self.drafts.1 += s.out.draft_accepted as u64;
        tracing::debug!(
            generated = generated.len(),
            decode_ms = s.out.decode_ms,
            draft_proposed = s.out.draft_proposed,
            draft_accepted = s.out.draft_accepted,
            "decode"
        );
        if generated.len() >= 4 && s.out.decode_ms > 0.0 {
            let tps = generated.len() as f64 / (s.out.decode_ms / 1e3);
            self.decode_tps = ema(self.decode_tps, tps);
        }
        s.out.text = self.tokenizer.decode(generated, true);
        Ok(())
    }

    /// Serves requests from `rx` until every sender is gone, up to `parallel` at once (at
    /// least 1), each in its own KV slot: between rounds it admits what has arrived (waiting
    /// only when nothing is in flight), runs one round (`Engine::round`), answers the sequences
    /// that ended and publishes the measured speeds to `speeds`. A panic while starting a
    /// request fails that request, one inside a round the sequences in flight; the loop goes
    /// on.
    pub fn serve(&mut self, rx: &Receiver<BatchRequest>, parallel: usize, speeds: &EngineSpeeds) {
        let parallel = parallel.max(1);
        // The sequences in flight, and where each one's answer goes.
        let mut seqs: Vec<Seq> = Vec::new();
        let mut replies: Vec<SyncSender<anyhow::Result<Narration>>> = Vec::new();
        let mut closed = false;
        // Whether a slot other than 0 held a sequence since the engine was last idle.
        let mut extra_slots = false;
        loop {
            while seqs.len() < parallel && !closed {
                let msg = if seqs.is_empty() {
                    rx.recv().map_err(|_| TryRecvError::Disconnected)
                } else {
                    rx.try_recv()
                };
                let r = match msg {
                    Ok(r) => r,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        closed = true;
                        break;
                    }
                };
                let free = (0..parallel).find(|i| seqs.iter().all(|s| s.slot != *i));
                let slot = free.expect("fewer sequences than slots");
                extra_slots |= slot > 0;
                let started =
                    std::panic::catch_unwind(AssertUnwindSafe(|| self.start(r.req, slot)));
                let started =
                    started.unwrap_or_else(|_| Err(anyhow::anyhow!("the local model panicked")));
                match started {
                    Ok(seq) => {
                        seqs.push(seq);
                        replies.push(r.reply);
                    }
                    Err(e) => {
                        let _ = r.reply.try_send(Err(e));
                    }
                }
            }
            if seqs.is_empty() {
                if closed {
                    return;
                }
                continue;
            }
            let ok = std::panic::catch_unwind(AssertUnwindSafe(|| self.round(&mut seqs)));
            if ok.is_err() {
                tracing::error!("the model panicked in a batched round; its requests fail");
                for s in seqs.iter_mut() {
                    s.finished = true;
                    s.error = Some(anyhow::anyhow!("the local model panicked"));
                }
            }
            let mut i = 0;
            while i < seqs.len() {
                if seqs[i].finished {
                    // In order: the oldest sequence still prefilling goes first.
                    let s = seqs.remove(i);
                    let reply = replies.remove(i);
                    let _ = reply.try_send(s.result());
                } else {
                    i += 1;
                }
            }
            speeds.set(self.prefill_tps, self.decode_tps);
            if seqs.is_empty() && std::mem::take(&mut extra_slots) {
                // Idle after concurrent work: the extra slots' pages go back to the OS, so
                // the daemon's memory at rest does not grow with the concurrency it has seen.
                for c in self.caches.iter_mut().skip(1) {
                    c.release();
                }
            }
        }
    }
}

/// A request for [`Engine::serve`], answered on `reply`.
pub struct BatchRequest {
    /// The request, as the narrator got it.
    pub req: NarrateRequest,
    /// Where the outcome goes (capacity 1; a dropped receiver is ignored).
    pub reply: SyncSender<anyhow::Result<Narration>>,
}

/// The engine's measured speeds (tokens/s), published by [`Engine::serve`] for its handles.
///
/// A speed measured while the machine was busy would keep the model off for good: a request
/// refused for a slow speed runs nothing that could measure a faster one. So while the model
/// idles, the speeds read move back toward those measured at load, halfway every
/// [`SPEED_RECOVERY_HALF_LIFE_MS`]; the next run measures them again.
#[derive(Debug)]
pub struct EngineSpeeds {
    prefill: AtomicU64,
    decode: AtomicU64,
    /// The speeds measured at load (prefill, decode).
    at_load: (f64, f64),
    /// When the speeds were created: [`EngineSpeeds::updated_ms`] counts from here.
    born: Instant,
    /// Milliseconds after `born` of the last [`EngineSpeeds::set`].
    updated_ms: AtomicU64,
}

/// How long the model idles for a speed measured below the load-time one to move halfway back
/// to it (ms). Long enough that a burst of requests on a busy machine keeps the measured
/// speed; short enough that a daemon that once saw a load spike runs the model again within
/// a minute or so (a trial's daemon skipped the model for 2.5 minutes and ~40 requests).
pub const SPEED_RECOVERY_HALF_LIFE_MS: f64 = 30_000.0;

impl EngineSpeeds {
    /// Speeds measured at load: prefill and decode tokens/s.
    pub fn new(prefill: f64, decode: f64) -> Self {
        let s = Self {
            prefill: AtomicU64::default(),
            decode: AtomicU64::default(),
            at_load: (prefill, decode),
            born: Instant::now(),
            updated_ms: AtomicU64::default(),
        };
        s.set(prefill, decode);
        s
    }

    fn set(&self, prefill: f64, decode: f64) {
        self.prefill.store(prefill.to_bits(), Ordering::Relaxed);
        self.decode.store(decode.to_bits(), Ordering::Relaxed);
        let ms = self.born.elapsed().as_millis() as u64;
        self.updated_ms.store(ms, Ordering::Relaxed);
    }

    /// `measured`, moved back toward `at_load` when it is below it, by how long the model has
    /// idled since it was measured.
    fn recovered(&self, measured: f64, at_load: f64) -> f64 {
        if measured >= at_load {
            return measured;
        }
        let idle =
            self.born.elapsed().as_millis() as f64 - self.updated_ms.load(Ordering::Relaxed) as f64;
        let kept = 0.5f64.powf(idle.max(0.0) / SPEED_RECOVERY_HALF_LIFE_MS);
        at_load + (measured - at_load) * kept
    }

    /// Prefill tokens/s.
    pub fn prefill(&self) -> f64 {
        let m = f64::from_bits(self.prefill.load(Ordering::Relaxed));
        self.recovered(m, self.at_load.0)
    }

    /// Decode tokens/s (per sequence, as requests see it).
    pub fn decode(&self) -> f64 {
        let m = f64::from_bits(self.decode.load(Ordering::Relaxed));
        self.recovered(m, self.at_load.1)
    }
}

/// A [`Narrator`] that sends each request to the thread running [`Engine::serve`] and waits for
/// its answer: the daemon gives one to each job thread of the local backend, so the summaries
/// of concurrent jobs decode together.
pub struct EngineHandle {
    tx: Sender<BatchRequest>,
    speeds: Arc<EngineSpeeds>,
    name: String,
}

impl EngineHandle {
    /// A handle on the serving loop that receives from `tx`'s channel; `speeds` and `name`
    /// are the engine's.
    pub fn new(tx: Sender<BatchRequest>, speeds: Arc<EngineSpeeds>, name: String) -> Self {
        Self { tx, speeds, name }
    }
}

impl Narrator for EngineHandle {
    /// Waits for the serving loop's answer; the request's deadline and cancel flag are
    /// checked there, per token and per prefill chunk.
    ///
    /// # Errors
    /// The model's error, or the serving loop has ended.
    fn narrate(&mut self, req: &NarrateRequest) -> anyhow::Result<Narration> {
        let (reply, rx) = std::sync::mpsc::sync_channel(1);
        self.tx
            .send(BatchRequest {
                req: req.clone(),
                reply,
            })
            .map_err(|_| anyhow::anyhow!("the local model thread has stopped"))?;
        rx.recv()
            .map_err(|_| anyhow::anyhow!("the local model thread stopped without an answer"))?
    }

    fn prefill_tok_per_s(&self) -> f64 {
        self.speeds.prefill()
    }

    fn decode_tok_per_s(&self) -> f64 {
        self.speeds.decode()
    }

    fn model_name(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod speed_tests {
    use super::*;

    #[test]
    fn a_slow_speed_moves_back_to_the_load_time_one_while_the_model_idles() {
        let mut s = EngineSpeeds::new(400.0, 40.0);
        s.born = Instant::now()
            .checked_sub(std::time::Duration::from_secs(600))
            .unwrap();
        // Measured slow just now: read as measured.
        s.set(100.0, 10.0);
        assert!((s.prefill() - 100.0).abs() < 1.0, "{}", s.prefill());
        // One half-life idle: halfway back; a long idle: the load-time speed.
        let now = s.born.elapsed().as_millis() as u64;
        s.updated_ms
            .store(now - SPEED_RECOVERY_HALF_LIFE_MS as u64, Ordering::Relaxed);
        assert!((s.prefill() - 250.0).abs() < 2.0, "{}", s.prefill());
        assert!((s.decode() - 25.0).abs() < 0.2, "{}", s.decode());
        s.updated_ms.store(0, Ordering::Relaxed);
        assert!(s.prefill() > 390.0, "{}", s.prefill());
        // A speed above the load-time one is what it is.
        s.set(900.0, 90.0);
        s.updated_ms.store(0, Ordering::Relaxed);
        assert_eq!(s.prefill(), 900.0);
    }
}
