//! The guard pipeline's driver: [`prepare`] (cheap steps, no model), [`SummaryJob`] (the model
//! step) and [`guard`] (both).
//!
//! Binary detection runs first and at every size; counting, pass-through, saving, cleaning and
//! the choice between summary and preview apply to the text that remains (see [`super`]).
//! A write failure that is not the request's fault (disk full, read-only) still yields a result:
//! a preview with `reason: "save_failed: ..."`.

use std::borrow::Cow;
use std::time::Instant;

use crate::backend::{Narrator, TokenCounter};

use super::binary;
use super::clean::clean;
use super::preview;
use super::response::{binary_footer, compose, footer, response, unsaved_footer};
use super::save::{self, thousands};
use super::summarize::{summarize, SummaryBudget, SummaryInput};
use super::{GuardError, GuardRequest, GuardResponse, Limits, ResultKind, SavedFile, TokenStats};

/// Texts longer than this are counted in pieces cut at line ends, so counting can stop as soon
/// as the total passes `summarize_limit` (256 KiB: well above the 15,000-token default limit, so
/// pass-through decisions always see one exact count).
const COUNT_CHUNK_BYTES: usize = 256 * 1024;

/// The outcome of [`prepare`].
#[derive(Debug)]
pub enum Prepared {
    /// Answered without the model: pass-through, binary, preview, or a save failure's preview.
    Done(GuardResponse),
    /// Saved and cleaned; the summary step remains ([`SummaryJob::run`]).
    NeedsModel(SummaryJob),
}

/// A saved, cleaned text that waits for the summary step.
#[derive(Debug)]
pub struct SummaryJob {
    /// Cleaned text (ANSI stripped, `\r` resolved, base64 files replaced by descriptions).
    text: String,
    /// Tool name as given.
    tool: String,
    /// Tool arguments as JSON text.
    args: Option<String>,
    /// The caller's intent.
    intent: Option<String>,
    /// Tokens of the (uncleaned) text.
    input_tokens: usize,
    /// Files saved so far; the full result is the last one.
    saved: Vec<SavedFile>,
    /// Limits of the request.
    limits: Limits,
    /// When the model step must give up.
    deadline: Option<Instant>,
    /// When [`prepare`] started, for `timings_ms.total`.
    started: Instant,
    /// Time spent counting tokens (ms).
    count_ms: f64,
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Counts tokens of `text`: skipped (byte count) when the byte count is within `token_limit` or
/// there is no counter; otherwise counted in line-aligned pieces of [`COUNT_CHUNK_BYTES`],
/// stopping once past `summarize_limit`. Returns the count and the time spent (ms).
fn count_tokens(text: &str, counter: Option<&dyn TokenCounter>, limits: &Limits) -> (usize, f64) {
    let Some(counter) = counter else {
        return (text.len(), 0.0);
    };
    if text.len() <= limits.token_limit {
        return (text.len(), 0.0);
    }
    let t = Instant::now();
    let mut total = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(COUNT_CHUNK_BYTES);
        if cut < rest.len() {
            cut = match rest[..cut].rfind('\n') {
                Some(p) if p > 0 => p + 1,
                _ => (cut..rest.len())
                    .find(|&i| rest.is_char_boundary(i))
                    .unwrap_or(rest.len()),
            };
        }
        total += counter.count(&rest[..cut]);
        rest = &rest[cut..];
        if total > limits.summarize_limit {
            break;
        }
    }
    (total, ms(t))
}

fn count_output(text: &str, counter: Option<&dyn TokenCounter>) -> usize {
    counter.map_or(text.len(), |c| c.count(text))
}

/// Everything [`guard`] does before the model: binary detection, token count, pass-through,
/// saving the full result, and the preview above `summarize_limit`. Cheap: no model.
///
/// The pass-through text is the content unchanged (byte-identical when it is valid UTF-8; a
/// few invalid bytes are replaced by U+FFFD).
///
/// # Errors
/// [`GuardError::BadSessionDir`] when the session dir is not absolute (always), or missing when
/// something has to be saved; [`GuardError::UnsafeSaveDir`] when `long_responses` is a symlink
/// or not a directory. Disk full / read-only are not errors: the result is then a preview with
/// `reason: "save_failed: <kind>: ..."`.
pub fn prepare(
    req: GuardRequest,
    counter: Option<&dyn TokenCounter>,
) -> Result<Prepared, GuardError> {
    let started = Instant::now();
    if !req.session_dir.is_absolute() {
        return Err(GuardError::BadSessionDir {
            path: req.session_dir,
            why: "not an absolute path",
        });
    }
    let limits = req.limits;

    // Step 4: binary, at any size.
    if !req.keep_binary_inline {
        if let Some(blob) = binary::whole(&req.content) {
            let (text, saved, reason) = match blob.save(&req.session_dir, &req.tool) {
                Ok((f, desc)) => (compose(&desc, &binary_footer(&f)), vec![f], None),
                Err(e) if e.is_request_error() => return Err(e),
                Err(e) => (
                    blob.describe(&format!("not saved: {}", e.kind())),
                    vec![],
                    Some(format!("save_failed: {}: {e}", e.kind())),
                ),
            };
            let mut r = response(ResultKind::Binary, text, saved);
            r.reason = reason;
            r.content_kind = Some("binary".into());
            r.tokens.output = count_output(&r.text, counter);
            r.timings_ms.total = ms(started);
            return Ok(Prepared::Done(r));
        }
    }

    let mut text: Cow<'_, str> = String::from_utf8_lossy(&req.content);
    let mut saved = Vec::new();
    let mut blob_failure = None;
    let mut replaced = false;
    if !req.keep_binary_inline {
        if let Some(r) = binary::replace_blobs(&text, &req.session_dir, &req.tool)? {
            text = Cow::Owned(r.text);
            saved = r.saved;
            blob_failure = r.failure;
            replaced = true;
        }
    }

    // Steps 1-2: count, pass through.
    let (tokens, count_ms) = count_tokens(&text, counter, &limits);
    if tokens <= limits.token_limit {
        let kind = if replaced {
            ResultKind::Binary
        } else {
            ResultKind::Passthrough
        };
        let mut r = response(kind, text.into_owned(), saved);
        r.tokens = TokenStats {
            input: tokens,
            output: tokens,
        };
        if replaced {
            r.tokens.output = count_output(&r.text, counter);
            r.content_kind = Some("binary".into());
        }
        r.reason = blob_failure.map(|e| format!("save_failed: {}: {e}", e.kind()));
        r.timings_ms.count = count_ms;
        r.timings_ms.total = ms(started);
        return Ok(Prepared::Done(r));
    }

    // Step 3: save the full result (original bytes unless base64 files were taken out).
    let bytes: &[u8] = if replaced {
        text.as_bytes()
    } else {
        &req.content
    };
    let (ext, media) = save::text_kind(bytes);
    let cleaned = clean(&text).into_owned();
    let mut job = SummaryJob {
        text: cleaned,
        tool: req.tool,
        args: req.args.as_ref().map(|v| v.to_string()),
        intent: req.intent,
        input_tokens: tokens,
        saved,
        limits,
        deadline: req.deadline,
        started,
        count_ms,
    };
    match save::save(&req.session_dir, &job.tool, bytes, ext, media) {
        Ok(f) => job.saved.push(f),
        Err(e) if e.is_request_error() => return Err(e),
        Err(e) => {
            let reason = format!("save_failed: {}: {e}", e.kind());
            let header = format!(
                "[The output ({} tokens) could not be saved; showing its first and last {} characters.]",
                thousands(tokens as u64),
                thousands(limits.preview_chars as u64)
            );
            let mut r = job.preview_response(&header, &unsaved_footer(&e), reason);
            r.tokens.output = count_output(&r.text, counter);
            return Ok(Prepared::Done(r));
        }
    }

    // Step 6: too large to summarize.
    if tokens > limits.summarize_limit {
        let reason = format!(
            "too_large: at least {} tokens (summarize_limit {})",
            thousands(tokens as u64),
            thousands(limits.summarize_limit as u64)
        );
        let r = match counter {
            Some(c) => {
                // The token count is in `reason`; the text states only what the input says.
                let header = "[Output too large for the model; facts extracted by structure.]";
                job.digest(c, header, reason)
            }
            None => {
                let header = format!(
                    "[Output too large to summarize (at least {} tokens); showing its first and last {} characters.]",
                    thousands(tokens as u64),
                    thousands(limits.preview_chars as u64)
                );
                let f = footer(job.full());
                let mut r = job.preview_response(&header, &f, reason);
                r.tokens.output = count_output(&r.text, counter);
                r
            }
        };
        return Ok(Prepared::Done(r));
    }
    Ok(Prepared::NeedsModel(job))
}

/// Largest cleaned text (bytes) the structural digest reduces; larger ones get head and tail.
/// 16 MiB reduce in about 2 s at the measured ~9 MiB/s (benches/pipeline.rs).
pub const DIGEST_MAX_BYTES: usize = 16 << 20;

impl SummaryJob {
    /// The saved full result (the last saved file).
    fn full(&self) -> &SavedFile {
        self.saved
            .last()
            .expect("a SummaryJob always holds the saved full result")
    }

    /// A preview response: `header`, head/tail of the cleaned text, then `footer`.
    fn preview_response(self, header: &str, footer: &str, reason: String) -> GuardResponse {
        let body = format!(
            "{header}\n{}",
            preview::preview(&self.text, self.limits.preview_chars)
        );
        let mut r = response(ResultKind::Preview, compose(&body, footer), self.saved);
        r.reason = Some(reason);
        r.tokens.input = self.input_tokens;
        r.timings_ms.count = self.count_ms;
        r.timings_ms.total = ms(self.started);
        r
    }

    /// Runs the summary step ([`summarize`]) and returns the summary with the saved file's
    /// pointer. Falls back to a preview when the deadline has already passed or the summary is
    /// empty. Never fails.
    pub fn run(
        self,
        counter: &dyn TokenCounter,
        narrator: Option<&mut dyn Narrator>,
    ) -> GuardResponse {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return self.fallback(Some(counter), "deadline_passed: no time left for the model");
        }
        let deadline = Some(self.model_deadline());
        // The name is asked after the narration: a remote backend with a local fallback names
        // whichever of the two wrote it.
        let (summary, model_name) = match narrator {
            Some(n) => {
                let s = self.summarize(counter, Some(&mut *n), deadline);
                (s, Some(n.model_name()))
            }
            None => (self.summarize(counter, None, deadline), None),
        };
        if summary.text.trim().is_empty() {
            let reason = summary
                .reason
                .unwrap_or_else(|| "empty_summary: the summary step returned nothing".into());
            return self.fallback(Some(counter), &reason);
        }
        let text = compose(&summary.text, &footer(self.full()));
        let mut r = response(ResultKind::Summary, text, Vec::new());
        r.tokens = TokenStats {
            input: self.input_tokens,
            output: counter.count(&r.text),
        };
        r.timings_ms.count = self.count_ms;
        r.timings_ms.reduce = summary.reduce_ms;
        if let Some(n) = &summary.narration {
            r.timings_ms.prefill = n.prefill_ms;
            r.timings_ms.decode = n.decode_ms;
            r.model = model_name;
        }
        r.reason = summary.reason;
        r.ungrounded_dropped = summary.ungrounded_dropped;
        r.content_kind = Some(summary.content_kind);
        r.saved = self.saved;
        r.timings_ms.total = ms(self.started);
        r
    }

    /// The preview answer for when the model cannot be used (unavailable, overloaded, late);
    /// `reason` says why and is returned in [`GuardResponse::reason`].
    ///
    /// With a `counter`, the answer is the structural digest ([`SummaryJob::digest`]): the
    /// reduction's facts without the model, far more useful than head and tail; without one
    /// (no tokenizer at all), head and tail.
    pub fn fallback(self, counter: Option<&dyn TokenCounter>, reason: &str) -> GuardResponse {
        if let Some(c) = counter {
            let header = format!("[No model summary ({reason}); facts extracted by structure.]");
            return self.digest(c, &header, reason.to_string());
        }
        let header = format!(
            "[Summary unavailable ({reason}); showing the first and last {} characters of the output.]",
            thousands(self.limits.preview_chars as u64)
        );
        let f = footer(self.full());
        let mut r = self.preview_response(&header, &f, reason.to_string());
        r.tokens.output = r.text.len();
        r
    }

    /// The bounded path without the model: the structure-aware reduction alone (Status by
    /// rule, Key facts, Evidence, Errors, Next relevant action), as kind `preview`. It runs at
    /// ~9 MiB/s (benches/pipeline.rs), so texts over [`DIGEST_MAX_BYTES`] get head and tail
    /// instead, as does a reduction that finds nothing.
    pub fn digest(self, counter: &dyn TokenCounter, header: &str, reason: String) -> GuardResponse {
        if self.text.len() > DIGEST_MAX_BYTES {
            let h = format!(
                "{header}\n[Too large to reduce ({} bytes); showing the first and last {} characters.]",
                thousands(self.text.len() as u64),
                thousands(self.limits.preview_chars as u64)
            );
            let f = footer(self.full());
            let mut r = self.preview_response(&h, &f, reason);
            r.tokens.output = counter.count(&r.text);
            return r;
        }
        let summary = self.summarize(counter, None, None);
        if summary.text.trim().is_empty() {
            let f = footer(self.full());
            let mut r = self.preview_response(header, &f, reason);
            r.tokens.output = counter.count(&r.text);
            return r;
        }
        let text = compose(&format!("{header}\n{}", summary.text), &footer(self.full()));
        let mut r = response(ResultKind::Preview, text, Vec::new());
        r.tokens = TokenStats {
            input: self.input_tokens,
            output: counter.count(&r.text),
        };
        r.timings_ms.count = self.count_ms;
        r.timings_ms.reduce = summary.reduce_ms;
        r.reason = Some(reason);
        r.content_kind = Some(summary.content_kind);
        r.saved = self.saved;
        r.timings_ms.total = ms(self.started);
        r
    }

    /// Runs the summary step on this job's text with the job's limits.
    fn summarize(
        &self,
        counter: &dyn TokenCounter,
        narrator: Option<&mut dyn Narrator>,
        deadline: Option<Instant>,
    ) -> crate::guard::summarize::Summary {
        let input = SummaryInput {
            text: &self.text,
            tool: &self.tool,
            args: self.args.as_deref(),
            intent: self.intent.as_deref(),
            input_tokens: self.input_tokens,
            bytes: self.full().bytes as usize,
        };
        let budget = SummaryBudget {
            prefill_budget: self.limits.prefill_budget,
            max_new_tokens: self.limits.max_new_tokens,
            deadline,
        };
        summarize(&input, &budget, counter, narrator)
    }

    /// When the model must be done: the request's deadline or `limits.model_ms` from now,
    /// whichever comes first.
    fn model_deadline(&self) -> Instant {
        let soft = Instant::now() + std::time::Duration::from_millis(self.limits.model_ms);
        match self.deadline {
            Some(d) if d < soft => d,
            _ => soft,
        }
    }

    /// When the model step must give up (from the request).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Tokens of the text to summarize.
    pub fn input_tokens(&self) -> usize {
        self.input_tokens
    }
}

/// The whole pipeline in one call: [`prepare`], then [`SummaryJob::run`] (or, without a token
/// counter, [`SummaryJob::fallback`]: there is no model without a tokenizer). Used by the
/// client's fallback with `narrator: None`.
///
/// # Errors
/// As [`prepare`].
pub fn guard(
    req: GuardRequest,
    counter: Option<&dyn TokenCounter>,
    narrator: Option<&mut dyn Narrator>,
) -> Result<GuardResponse, GuardError> {
    Ok(match prepare(req, counter)? {
        Prepared::Done(r) => r,
        Prepared::NeedsModel(job) => match counter {
            Some(c) => job.run(c, narrator),
            None => job.fallback(None, "no_tokenizer: no model available"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{NarrateRequest, Narration, StopReason};
    use crate::guard::binary::tests::png;
    use base64::Engine as _;
    use std::path::Path;

    /// Test counter: one token per 4 bytes, rounded up (the real tokenizer is tested elsewhere).
    struct QuarterCounter;
    impl TokenCounter for QuarterCounter {
        fn count(&self, text: &str) -> usize {
            text.len().div_ceil(4)
        }
    }

    /// Stand-in narrator: answers with canned sections quoting `quote`.
    struct CannedNarrator {
        quote: String,
        calls: usize,
    }
    impl Narrator for CannedNarrator {
        fn narrate(&mut self, req: &NarrateRequest) -> anyhow::Result<Narration> {
            self.calls += 1;
            assert!(
                req.user.len() < 64 * 1024,
                "the model sees the reduction only"
            );
            Ok(Narration {
                text: format!("Status: failed\nKey facts:\n- {}\n", self.quote),
                prompt_tokens: 100,
                generated_tokens: 10,
                prefill_ms: 5.0,
                decode_ms: 7.0,
                stop: Some(StopReason::Eos),
                ..Default::default()
            })
        }
        fn prefill_tok_per_s(&self) -> f64 {
            1000.0
        }
        fn decode_tok_per_s(&self) -> f64 {
            100.0
        }
        fn model_name(&self) -> String {
            "canned".into()
        }
    }

    fn req(dir: &Path, content: impl Into<Vec<u8>>) -> GuardRequest {
        GuardRequest {
            content: content.into(),
            tool: "Bash".into(),
            args: Some(serde_json::json!({"command": "make test"})),
            intent: Some("did the tests pass?".into()),
            session_dir: dir.to_path_buf(),
            limits: Limits::default(),
            keep_binary_inline: false,
            deadline: None,
        }
    }

    fn corpus(name: &str) -> Vec<u8> {
        crate::guard::test_corpus(name)
    }

    fn big_log(lines: usize) -> String {
        let mut s: String = (0..lines)
            .map(|i| {
                format!(
                    "2024-05-01T10:00:{:02} INFO worker {i} processed batch ok\n",
                    i % 60
                )
            })
            .collect();
        s.push_str("ERROR: unexpected status 401 Unauthorized\nexited with status 1\n");
        s
    }

    fn done(p: Prepared) -> GuardResponse {
        match p {
            Prepared::Done(r) => r,
            Prepared::NeedsModel(_) => panic!("expected a finished response"),
        }
    }

    fn job(p: Prepared) -> SummaryJob {
        match p {
            Prepared::NeedsModel(j) => j,
            Prepared::Done(r) => panic!("expected a model job, got {:?}: {}", r.kind, r.text),
        }
    }

    #[test]
    fn small_result_passes_through_byte_identical() {
        let d = tempfile::tempdir().unwrap();
        let content = "line one\n\x1b[31mred\x1b[0m\r\n日本語 \u{1F600}\n";
        let r = done(prepare(req(d.path(), content), Some(&QuarterCounter)).unwrap());
        assert_eq!(r.kind, ResultKind::Passthrough);
        assert_eq!(r.text.as_bytes(), content.as_bytes());
        assert!(r.saved.is_empty());
        assert!(!d.path().join("long_responses").exists());
        // Without a counter, bytes are the bound: still within the limit here.
        let r = done(prepare(req(d.path(), content), None).unwrap());
        assert_eq!(r.kind, ResultKind::Passthrough);
    }

    #[test]
    fn counted_result_under_limit_passes_through() {
        let d = tempfile::tempdir().unwrap();
        let text = "x".repeat(40_000); // 40,000 bytes > 15,000, but 10,000 tokens.
        let r = done(prepare(req(d.path(), text.clone()), Some(&QuarterCounter)).unwrap());
        assert_eq!(r.kind, ResultKind::Passthrough);
        assert_eq!(r.tokens.input, 10_000);
        assert_eq!(r.text, text);
        // With no counter the byte count decides, and the result is saved.
        let j = job(prepare(req(d.path(), text), None).unwrap());
        assert_eq!(j.input_tokens(), 40_000);
    }

    #[test]
    fn large_result_is_saved_then_summarized() {
        let d = tempfile::tempdir().unwrap();
        let log = big_log(3_000);
        let j = job(prepare(req(d.path(), log.clone()), Some(&QuarterCounter)).unwrap());
        assert!(j.input_tokens() > 15_000);
        // Saved before the model runs, byte-identical, as .txt.
        let saved = j.full().clone();
        assert!(saved.path.ends_with("_Bash.txt"), "{}", saved.path);
        assert_eq!(
            std::fs::read(d.path().join(&saved.path)).unwrap(),
            log.as_bytes()
        );
        let mut n = CannedNarrator {
            quote: "ERROR: unexpected status 401 Unauthorized".into(),
            calls: 0,
        };
        let r = j.run(&QuarterCounter, Some(&mut n));
        assert!(matches!(r.kind, ResultKind::Summary | ResultKind::Preview));
        assert!(r
            .text
            .contains(&format!("Full response saved to: {} (", saved.path)));
        assert!(r.text.contains("Use Read"));
        assert!(r.text.len() < log.len() / 10);
        assert_eq!(r.saved.last(), Some(&saved));
        if r.kind == ResultKind::Summary && n.calls > 0 {
            assert_eq!(r.model.as_deref(), Some("canned"));
            assert_eq!(r.timings_ms.decode, 7.0);
        }
    }

    #[test]
    fn guard_without_model_still_answers() {
        let d = tempfile::tempdir().unwrap();
        let log = big_log(3_000);
        assert!(log.len() > 100_000);
        let r = guard(req(d.path(), log), Some(&QuarterCounter), None).unwrap();
        assert!(matches!(r.kind, ResultKind::Summary | ResultKind::Preview));
        assert!(r.model.is_none());
        assert!(r.text.contains("Full response saved to: long_responses/"));
        // No counter: bytes bound the tokens (here between the two limits).
        let r = guard(req(d.path(), big_log(1_000)), None, None).unwrap();
        assert_eq!(r.kind, ResultKind::Preview);
        assert!(r.reason.unwrap().starts_with("no_tokenizer"));
        assert!(r.text.contains("exited with status 1"), "tail kept");
    }

    #[test]
    fn above_summarize_limit_is_previewed() {
        let d = tempfile::tempdir().unwrap();
        let mut rq = req(d.path(), big_log(3_000));
        rq.limits.summarize_limit = 20_000;
        let r = done(prepare(rq, Some(&QuarterCounter)).unwrap());
        assert_eq!(r.kind, ResultKind::Preview);
        assert!(r.reason.as_deref().unwrap().starts_with("too_large"));
        assert!(
            r.text.contains("facts extracted by structure"),
            "{}",
            r.text
        );
        assert!(r.text.contains("ERROR: unexpected status 401 Unauthorized"));
        assert!(r.text.len() < 2 * 2_000 * 2 + 1_000);
        assert_eq!(r.saved.len(), 1);
        assert!(r.text.contains(&r.saved[0].path));
    }

    #[test]
    fn late_model_falls_back_to_preview() {
        let d = tempfile::tempdir().unwrap();
        let mut rq = req(d.path(), big_log(3_000));
        rq.deadline = Some(Instant::now());
        let j = job(prepare(rq, Some(&QuarterCounter)).unwrap());
        assert!(j.deadline().is_some());
        let mut n = CannedNarrator {
            quote: String::new(),
            calls: 0,
        };
        let r = j.run(&QuarterCounter, Some(&mut n));
        assert_eq!(n.calls, 0);
        assert_eq!(r.kind, ResultKind::Preview);
        assert!(r.reason.unwrap().starts_with("deadline_passed"));
        assert!(r.text.contains("Full response saved to: "));
    }

    #[test]
    fn ansi_progress_is_cleaned_before_the_model() {
        let d = tempfile::tempdir().unwrap();
        let mut rq = req(d.path(), corpus("cases/case_16_ansi_progress.txt"));
        rq.limits.token_limit = 100;
        let j = job(prepare(rq, Some(&QuarterCounter)).unwrap());
        let saved = j.full().clone();
        let r = j.fallback(None, "model_unavailable: test");
        assert!(!r.text.contains('\x1b'));
        assert!(r.text.contains("FAIL  src/auth.test.js"), "{}", r.text);
        assert!(r.text.contains("1 failed, 41 passed, 42 total"));
        // The saved file keeps the escapes.
        assert_eq!(
            std::fs::read(d.path().join(saved.path)).unwrap(),
            corpus("cases/case_16_ansi_progress.txt")
        );
    }

    #[test]
    fn whole_base64_png_is_saved_decoded() {
        let d = tempfile::tempdir().unwrap();
        let p = png(200, 120);
        let b64 = base64::engine::general_purpose::STANDARD.encode(&p);
        for content in [b64.clone(), format!("data:image/png;base64,{b64}")] {
            let r = done(prepare(req(d.path(), content), Some(&QuarterCounter)).unwrap());
            assert_eq!(r.kind, ResultKind::Binary);
            assert_eq!(r.saved.len(), 1);
            assert!(r.saved[0].path.ends_with(".png"));
            assert_eq!(r.saved[0].media_type, "image/png");
            assert_eq!(std::fs::read(d.path().join(&r.saved[0].path)).unwrap(), p);
            assert!(r.text.starts_with("[image/png 200x120, "), "{}", r.text);
            assert!(r.text.contains("Full response saved to: long_responses/"));
            assert!(!r.text.contains("iVBOR"));
        }
        // keep_binary_inline: the base64 goes on as text.
        let mut rq = req(d.path(), b64.clone());
        rq.keep_binary_inline = true;
        let r = done(prepare(rq, Some(&QuarterCounter)).unwrap());
        assert_eq!(r.kind, ResultKind::Passthrough);
        assert_eq!(r.text, b64);
    }

    #[test]
    fn case_08_mcp_screenshot() {
        let d = tempfile::tempdir().unwrap();
        let r = done(
            prepare(
                req(d.path(), corpus("cases/case_08_mcp_screenshot.json")),
                Some(&QuarterCounter),
            )
            .unwrap(),
        );
        assert_eq!(r.kind, ResultKind::Binary);
        assert!(r.text.len() < 1024, "{} bytes: {}", r.text.len(), r.text);
        assert!(r.text.contains("image/png 200x120, 28,627 bytes"));
        assert!(r
            .text
            .contains("Took a screenshot of the full current page."));
        assert!(!r.text.contains("iVBOR"));
        assert_eq!(r.saved.len(), 1);
        assert!(r.text.contains(&r.saved[0].path));
        assert!(serde_json::from_str::<serde_json::Value>(&r.text).is_ok());
    }

    #[test]
    fn b64_01_corpus() {
        let d = tempfile::tempdir().unwrap();
        let mut rq = req(d.path(), corpus("b64_01.json"));
        rq.tool = "mcp__playwright__browser_take_screenshot".into();
        let r = done(prepare(rq, Some(&QuarterCounter)).unwrap());
        assert_eq!(r.kind, ResultKind::Binary);
        assert!(
            r.text.contains("image/png 846x1006, 53,949 bytes"),
            "{}",
            r.text
        );
        assert!(r
            .text
            .contains("/tmp/playwright-output/test-report-error-details.png"));
        assert!(r.text.contains("Took the viewport screenshot"));
        assert!(r.text.len() < 1024);
        let png_bytes = std::fs::read(d.path().join(&r.saved[0].path)).unwrap();
        assert_eq!(&png_bytes[..8], b"\x89PNG\r\n\x1a\n");
    }

    #[test]
    fn raw_binary_is_saved_as_is() {
        let d = tempfile::tempdir().unwrap();
        let content: Vec<u8> = (0..5_000u32).map(|i| (i % 256) as u8).collect();
        let r = done(prepare(req(d.path(), content.clone()), Some(&QuarterCounter)).unwrap());
        assert_eq!(r.kind, ResultKind::Binary);
        assert_eq!(
            std::fs::read(d.path().join(&r.saved[0].path)).unwrap(),
            content
        );
        assert!(r
            .text
            .contains("application/octet-stream, 5,000 bytes of raw binary data"));
        assert!(r.saved[0].path.ends_with(".bin"));
    }

    #[test]
    fn few_invalid_bytes_are_lossy_for_the_model_exact_on_disk() {
        let d = tempfile::tempdir().unwrap();
        let mut content = big_log(3_000).into_bytes();
        content.splice(10..10, [0xff, 0xfe]);
        let j = job(prepare(req(d.path(), content.clone()), Some(&QuarterCounter)).unwrap());
        assert!(j.text.contains('\u{FFFD}'));
        let saved = j.full().clone();
        assert_eq!(std::fs::read(d.path().join(saved.path)).unwrap(), content);
    }

    #[test]
    fn bad_session_dirs_are_errors() {
        let d = tempfile::tempdir().unwrap();
        let e = prepare(req(Path::new("rel"), "x"), None).unwrap_err();
        assert_eq!(e.kind(), "bad_session_dir");
        let e = prepare(req(&d.path().join("missing"), big_log(3_000)), None).unwrap_err();
        assert_eq!(e.kind(), "bad_session_dir");
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("long_responses")).unwrap();
        let e = prepare(req(d.path(), big_log(3_000)), Some(&QuarterCounter)).unwrap_err();
        assert_eq!(e.kind(), "unsafe_save_dir");
        let e = prepare(req(d.path(), png(2, 2)), None).unwrap_err();
        assert_eq!(e.kind(), "unsafe_save_dir");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn json_result_saved_as_json() {
        let d = tempfile::tempdir().unwrap();
        let items: Vec<_> = (0..2_000)
            .map(|i| serde_json::json!({"id": i, "name": format!("item-{i}"), "ok": i != 417}))
            .collect();
        let text = serde_json::to_string(&items).unwrap();
        let j = job(prepare(req(d.path(), text), Some(&QuarterCounter)).unwrap());
        assert!(j.full().path.ends_with(".json"));
        assert_eq!(j.full().media_type, "application/json");
    }

    /// A write failure (here EFBIG from a 1 KiB file-size limit, set in a child process so it
    /// cannot affect other tests) still yields a preview, and the reason says why.
    #[test]
    fn save_failure_returns_preview_with_reason() {
        const CHILD: &str = "TOOLSUM_TEST_FSIZE_CHILD";
        if std::env::var_os(CHILD).is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "guard::pipeline::tests::save_failure_returns_preview_with_reason",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains("CHILD_OK"),
                "child failed: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        // SAFETY: plain libc calls with valid arguments, in a child process of our own.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
        }
        let d = tempfile::tempdir().unwrap();
        let log = big_log(3_000);
        let r = done(prepare(req(d.path(), log), Some(&QuarterCounter)).unwrap());
        assert_eq!(r.kind, ResultKind::Preview);
        assert!(r.ok);
        assert!(
            r.reason
                .as_deref()
                .unwrap()
                .starts_with("save_failed: io: "),
            "{:?}",
            r.reason
        );
        assert!(r.text.contains("could not be saved"));
        assert!(r.text.contains("exited with status 1"));
        assert!(r.saved.is_empty());
        // A base64 image that cannot be saved is still described, never inlined.
        let r = done(
            prepare(
                req(d.path(), corpus("cases/case_08_mcp_screenshot.json")),
                Some(&QuarterCounter),
            )
            .unwrap(),
        );
        assert!(r.text.contains("image/png 200x120, 28,627 bytes"));
        assert!(r.text.contains("not saved: io"));
        assert!(!r.text.contains("iVBOR"));
        assert!(r.reason.as_deref().unwrap().starts_with("save_failed"));
        println!("CHILD_OK");
    }

    #[test]
    fn jobs_can_move_to_the_model_thread() {
        fn assert_send<T: Send + 'static>() {}
        assert_send::<SummaryJob>();
        assert_send::<Prepared>();
        assert_send::<GuardError>();
    }

    #[test]
    fn response_serializes_with_lowercase_kind() {
        let d = tempfile::tempdir().unwrap();
        let r = done(prepare(req(d.path(), "ok"), None).unwrap());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["kind"], "passthrough");
        let back: GuardResponse = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
        let l: Limits = serde_json::from_str(r#"{"token_limit": 10}"#).unwrap();
        assert_eq!(l.token_limit, 10);
        assert_eq!(l.summarize_limit, 100_000);
    }
}
