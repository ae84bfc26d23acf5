//! The guard pipeline's driver: [`prepare`] (cheap steps, no model), [`SummaryJob`] (the model
//! step) and [`guard`] (both).
//!
//! Binary detection runs first and at every size; counting, pass-through, saving, cleaning and
//! the choice between summary and preview apply to the text that remains (see [`super`]).
//! A write failure that is not the request's fault (disk full, read-only) still yields a result:
//! a preview with `reason: "save_failed: ..."`.

use std::borrow::Cow;
use std::path::Path;
use std::time::Instant;

use crate::backend::{Narrator, TokenCounter};

use super::binary;
use super::clean::clean;
use super::decode;
use super::preview;
use super::raw::RawText;
use super::response::{binary_footer, compose, footer, response, unsaved_footer, window_footer};
use super::save::{self, thousands};
use super::summarize::{summarize_focused, SummaryBudget, SummaryInput};
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
    /// Bytes of the output as received, the size the summary states (the saved full file can
    /// differ: base64 files taken out and saved on their own).
    input_bytes: usize,
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
    /// The content is a window of the saved file (a read-back), not the whole file.
    window: bool,
    /// For a window: the lines of the saved file before its first line
    /// ([`super::reread::window_start`]), `None` when not known. The summary's `L<n>` count
    /// from the window's first line; the pointer says how they map to the file.
    window_start: Option<usize>,
    /// A saved output asked a question ([`prepare_saved`]): lines matching it outrank the rest.
    focus: bool,
    /// [`GuardResponse::encoding`]: set when the text is not the content's exact bytes.
    encoding: Option<&'static str>,
    /// The pointer to the saved raw bytes, for such a text (a line above the footer).
    note: Option<String>,
    /// Set when the text is past `limits.summarize_limit`: the `too_large: …` reason. The
    /// model still runs on such a text (it reads the reduction only, never the text: issue 17,
    /// "run it at any input size"); without a model the answer is the structural digest
    /// ([`SummaryJob::digest`]) under [`TOO_LARGE_HEADER`].
    too_large: Option<String>,
    /// Tokens of [`GuardRequest::frame`] (its bytes without a counter): the caller adds them
    /// around the result, so the sections' cap leaves room for them.
    frame_tokens: usize,
}

/// The header of the structural digest of a text past the digest's bound
/// ([`DIGEST_MAX_BYTES`]), which no model reads.
const TOO_LARGE_HEADER: &str = "[Output too large for the model; facts extracted by structure.]";

/// The header of the structural digest of a text past `summarize_limit` when no model runs
/// (none configured, `model_ms` 0, or the client's in-process fallback with the daemon
/// down): the model would read its reduction at any size, so size is not why it did not.
const NO_MODEL_HEADER: &str = "[No model ran on this output; facts extracted by structure.]";

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
/// The pass-through text is the content unchanged when it is valid UTF-8 without NUL; other
/// text ([`decode`]: a legacy encoding, UTF-16, a few NULs or invalid bytes) is passed on
/// decoded, followed by a line pointing to its raw bytes, saved ([`GuardResponse::encoding`]
/// names the encoding).
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

    // Step 4: encoding, and a raw binary at any size (no text to hand back unchanged).
    let decoded = decode::decode(&req.content);
    if !req.keep_binary_inline && decoded.is_none() {
        return Ok(Prepared::Done(binary_result(
            binary::raw(&req.content),
            &req,
            None,
            counter,
            started,
        )?));
    }
    // Binary kept inline on request: UTF-8 with U+FFFD (and pointed to, as any inexact text).
    let decoded = decoded.unwrap_or_else(|| decode::lossy(&req.content));
    let raw = RawText {
        bytes: &req.content,
        encoding: decoded.encoding,
        label: decoded.label(),
        what: decoded.describe(),
    };
    let mut text: Cow<'_, str> = decoded.text;
    let (mut tokens, mut count_ms) = count_tokens(&text, counter, &limits);
    // Base64 files in a text over the limit: the whole text one file, or files in its string
    // fields, saved decoded. A text under the limit goes back as it came, base64 and all (a
    // certificate in `kubectl get secret -o json` is a value the agent may need as written).
    let mut saved = Vec::new();
    let mut blob_failure = None;
    let mut replaced = false;
    let over = tokens > limits.token_limit;
    // A saved file read back (see [`super::reread`]) holds its base64 as received: saving its
    // files again on every read would add copies, so they stay in the text.
    let read_back = req
        .args
        .as_ref()
        .and_then(|a| super::reread::saved_source(a, &req.session_dir));
    if !req.keep_binary_inline
        && read_back.is_none()
        && (over || text.len() >= INLINE_BLOB_MIN_CHARS)
    {
        if let Some(blob) = binary::whole_base64(text.as_bytes()) {
            return Ok(Prepared::Done(binary_result(
                blob, &req, raw.label, counter, started,
            )?));
        }
        let worth = over
            || binary::find_blobs(&text)
                .iter()
                .any(|(r, _)| r.len() >= INLINE_BLOB_MIN_CHARS);
        let found = if worth {
            binary::replace_blobs(&text, &req.session_dir, &req.tool)?
        } else {
            None
        };
        if let Some(r) = found {
            text = Cow::Owned(r.text);
            saved = r.saved;
            blob_failure = r.failure;
            replaced = true;
            let (t, c) = count_tokens(&text, counter, &limits);
            tokens = t;
            count_ms += c;
        }
    }

    // Steps 1-2: count, pass through (an inexact text with a pointer to its raw bytes).
    if tokens <= limits.token_limit {
        let kind = if replaced {
            ResultKind::Binary
        } else {
            ResultKind::Passthrough
        };
        let mut body = text.into_owned();
        let mut failure = blob_failure;
        if replaced {
            // The output as received is saved whole beside the files taken out of it, and
            // named in the first one's description (a line after it would make a JSON result
            // invalid JSON).
            let (ext, media) = raw.kind(&body);
            match save::save(&req.session_dir, &req.tool, &req.content, ext, &media) {
                Ok(f) => {
                    if let Some(first) = saved.first() {
                        let at = format!("saved to {}", first.path);
                        body = body.replacen(
                            &at,
                            &format!("{at} and the output as received to {}", f.path),
                            1,
                        );
                    }
                    saved.push(f);
                }
                Err(e) if e.is_request_error() => return Err(e),
                Err(e) => failure = failure.or(Some(e)),
            }
        } else if raw.label.is_some() {
            // The caller's copy of the same bytes, when it has one; else a copy of our own.
            let copy = req.source.filter(|f| f.bytes == req.content.len() as u64);
            let (note, f, err) = match copy {
                Some(f) => (raw.pointer(&f), Some(f), None),
                None => raw.save(&req.session_dir, &req.tool, &body)?,
            };
            body.push_str(if body.ends_with('\n') { "" } else { "\n" });
            body.push_str(&note);
            saved.extend(f);
            failure = failure.or(err);
        }
        let mut r = response(kind, body, saved);
        r.tokens = TokenStats {
            input: tokens,
            output: tokens,
        };
        if replaced || raw.label.is_some() {
            r.tokens.output = count_output(&r.text, counter);
        }
        if replaced {
            r.content_kind = Some("binary".into());
        }
        r.encoding = raw.label.map(Into::into);
        r.reason = failure.map(|e| format!("save_failed: {}: {e}", e.kind()));
        r.timings_ms.count = count_ms;
        r.timings_ms.total = ms(started);
        return Ok(Prepared::Done(r));
    }

    // Step 3: save the full result: its bytes as received (base64 files taken out of the
    // text are saved beside it; they sat on one line each, so its line numbers hold).
    let bytes: &[u8] = &req.content;
    let (ext, media) = raw.kind(&text);
    let cleaned = clean(&text).into_owned();
    let mut job = SummaryJob {
        text: cleaned,
        tool: req.tool,
        // A read-back's saved file name is no part of the question (see `without_saved_paths`).
        args: req.args.as_ref().map(|v| match &read_back {
            Some(_) => super::reread::without_saved_paths(v).to_string(),
            None => v.to_string(),
        }),
        intent: req.intent,
        input_tokens: tokens,
        input_bytes: req.content.len(),
        saved,
        limits,
        deadline: req.deadline,
        started,
        count_ms,
        window: false,
        window_start: Some(0),
        focus: false,
        encoding: raw.label,
        note: None,
        too_large: None,
        frame_tokens: count_output(&req.frame, counter),
    };
    // Already saved: the caller's copy (a whole file unless sizes differ), or a saved file the
    // call read back (always pointed at as a read-back, so the agent reads a window next).
    let source = match req.source.clone() {
        Some(f) => Some((f.bytes != bytes.len() as u64, f)),
        None => read_back.map(|f| (true, f)),
    };
    let saved = match source {
        Some((window, f)) => {
            job.window = window;
            if window {
                let path = Path::new(&f.path);
                let path = if path.is_absolute() {
                    path.to_path_buf()
                } else {
                    req.session_dir.join(path)
                };
                let args = req.args.clone().unwrap_or(serde_json::Value::Null);
                job.window_start = super::reread::window_start(&req.content, &path, &args);
            }
            Ok(f)
        }
        None => save::save(&req.session_dir, &job.tool, bytes, ext, &media),
    };
    match saved {
        Ok(f) => {
            if job.note.is_none() && raw.label.is_some() {
                job.note = Some(raw.pointer(&f));
            }
            job.saved.push(f)
        }
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

    // Step 6: too large to summarize whole. The reduction is bounded (DIGEST_MAX_BYTES) and
    // the model reads only its excerpts, so the model step still runs; past the digest's
    // bound, or with no tokenizer, head and tail.
    if tokens > limits.summarize_limit {
        let reason = format!(
            "too_large: at least {} tokens (summarize_limit {})",
            thousands(tokens as u64),
            thousands(limits.summarize_limit as u64)
        );
        match counter {
            Some(_) if job.text.len() <= DIGEST_MAX_BYTES => job.too_large = Some(reason),
            Some(c) => return Ok(Prepared::Done(job.digest(c, TOO_LARGE_HEADER, reason))),
            None => {
                // With no tokenizer the count is the byte count, an upper bound: no token
                // count is stated.
                let header = format!(
                    "[Output too large to summarize ({} bytes; no tokenizer was found to count its tokens); showing its first and last {} characters.]",
                    thousands(tokens as u64),
                    thousands(limits.preview_chars as u64)
                );
                let f = job.pointer();
                let mut r = job.preview_response(&header, &f, reason);
                r.tokens.output = count_output(&r.text, counter);
                return Ok(Prepared::Done(r));
            }
        }
    }
    Ok(Prepared::NeedsModel(job))
}

/// Shortest base64 text (chars of its string literal, quotes included, or of the whole output)
/// saved decoded from an output under the limit: about 1,500 tokens of base64 (a screenshot,
/// a recording). A shorter one (a certificate or a key in `kubectl get secret -o json`, an
/// icon) goes back as written, with the rest of the output: a value the agent may need as is.
/// Over the limit every base64 file found ([`binary::MIN_BLOB_CHARS`]) is saved decoded.
pub const INLINE_BLOB_MIN_CHARS: usize = 4096;

/// The result for a whole output that is one file (raw binary bytes, or one base64 file):
/// saved and described, with `label` the encoding its text was read in, if any.
///
/// # Errors
/// A request error from saving; other save errors are the result's `save_failed` reason.
fn binary_result(
    blob: binary::Blob,
    req: &GuardRequest,
    label: Option<&'static str>,
    counter: Option<&dyn TokenCounter>,
    started: Instant,
) -> Result<GuardResponse, GuardError> {
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
    r.encoding = label.map(Into::into);
    r.tokens.output = count_output(&r.text, counter);
    r.timings_ms.total = ms(started);
    Ok(r)
}

/// Largest cleaned text (bytes) the structural digest reduces; larger ones get head and tail.
/// 16 MiB reduce in about 2 s at the measured ~9 MiB/s (benches/pipeline.rs).
pub const DIGEST_MAX_BYTES: usize = 16 << 20;

impl SummaryJob {
    /// The pointer line to the saved file: [`footer`], or [`window_footer`] for a read-back;
    /// for a text that is not the saved bytes themselves, the line pointing to its raw bytes
    /// (`Full response saved to: … (85 bytes as received; decoded from GBK above)`) instead of
    /// the footer's first line when the raw bytes are the saved file, else before the footer.
    fn pointer(&self) -> String {
        let p = if self.window {
            window_footer(self.full(), self.window_start)
        } else {
            footer(self.full())
        };
        match &self.note {
            // The raw bytes are the saved file itself: one pointer line, with the hint.
            Some(n)
                if !self.window
                    && n.starts_with(&format!(
                        "Full response saved to: {} (",
                        self.full().path
                    )) =>
            {
                format!("{n}\n{}", super::response::READ_HINT)
            }
            Some(n) => format!("{n}\n{p}"),
            None => p,
        }
    }

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
        r.encoding = self.encoding.map(Into::into);
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
        if narrator.is_none() {
            if let Some(reason) = self.too_large.clone() {
                return self.digest(counter, NO_MODEL_HEADER, reason);
            }
        }
        let deadline = Some(self.model_deadline());
        // The name is asked after the narration: a remote backend with a local fallback names
        // whichever of the two wrote it.
        let (summary, model_name) = match narrator {
            Some(n) => {
                let s = self.summarize(counter, Some(&mut *n), deadline, "");
                (s, Some(n.model_name()))
            }
            None => (self.summarize(counter, None, deadline, ""), None),
        };
        if summary.text.trim().is_empty() {
            let reason = summary
                .reason
                .unwrap_or_else(|| "empty_summary: the summary step returned nothing".into());
            return self.fallback(Some(counter), &reason);
        }
        let text = compose(&summary.text, &self.pointer());
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
        r.reason = match (&self.too_large, summary.reason) {
            (Some(t), Some(why)) => Some(format!("{t}; {why}")),
            (Some(t), None) => Some(t.clone()),
            (None, why) => why,
        };
        r.ungrounded_dropped = summary.ungrounded_dropped;
        r.content_kind = Some(summary.content_kind);
        r.encoding = self.encoding.map(Into::into);
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
        // The token count of a text past `summarize_limit` goes in the reason, not the text:
        // the text states only what the input says.
        let full = match &self.too_large {
            Some(t) => format!("{t}; {reason}"),
            None => reason.to_string(),
        };
        if let Some(c) = counter {
            let header = format!("[No model summary ({reason}); facts extracted by structure.]");
            return self.digest(c, &header, full);
        }
        let header = format!(
            "[Summary unavailable ({reason}); showing the first and last {} characters of the output.]",
            thousands(self.limits.preview_chars as u64)
        );
        let f = self.pointer();
        let mut r = self.preview_response(&header, &f, full);
        r.tokens.output = r.text.len();
        r
    }

    /// The bounded path without the model: the structure-aware reduction alone (Status by
    /// rule, Key facts, Evidence, Errors, Next relevant action), as kind `preview`. It runs at
    /// ~9 MiB/s (benches/pipeline.rs), so texts over [`DIGEST_MAX_BYTES`] get head and tail
    /// instead, as does a reduction that finds nothing.
    pub fn digest(self, counter: &dyn TokenCounter, header: &str, reason: String) -> GuardResponse {
        if self.text.len() > DIGEST_MAX_BYTES {
            // Not reduced: the lines a scan of the whole text finds, then head and tail.
            return self.scanned(counter, reason);
        }
        let summary = self.summarize(counter, None, None, header);
        if summary.text.trim().is_empty() {
            let f = self.pointer();
            let mut r = self.preview_response(header, &f, reason);
            r.tokens.output = counter.count(&r.text);
            return r;
        }
        let text = compose(&format!("{header}\n{}", summary.text), &self.pointer());
        let mut r = response(ResultKind::Preview, text, Vec::new());
        r.tokens = TokenStats {
            input: self.input_tokens,
            output: counter.count(&r.text),
        };
        r.timings_ms.count = self.count_ms;
        r.timings_ms.reduce = summary.reduce_ms;
        r.reason = Some(reason);
        r.content_kind = Some(summary.content_kind);
        r.encoding = self.encoding.map(Into::into);
        r.saved = self.saved;
        r.timings_ms.total = ms(self.started);
        r
    }

    /// Runs the summary step on this job's text with the job's limits.
    /// `header` is the line the answer puts above the sections (empty for none): with the
    /// pointer, it is the frame the sections' cap leaves room for.
    fn summarize(
        &self,
        counter: &dyn TokenCounter,
        narrator: Option<&mut dyn Narrator>,
        deadline: Option<Instant>,
        header: &str,
    ) -> crate::guard::summarize::Summary {
        let input = SummaryInput {
            text: &self.text,
            tool: &self.tool,
            args: self.args.as_deref(),
            intent: self.intent.as_deref(),
            input_tokens: self.input_tokens,
            bytes: self.input_bytes,
            // The frame as it is joined around the sections (a one-byte stand-in for them),
            // so the tokens of the line breaks between them count too.
            frame_tokens: counter.count(&compose(&format!("{header}\n."), &self.pointer()))
                + self.frame_tokens,
        };
        let budget = SummaryBudget {
            prefill_budget: self.limits.prefill_budget,
            max_new_tokens: self.limits.max_new_tokens,
            deadline,
        };
        let mut s = summarize_focused(&input, &budget, counter, narrator, self.focus);
        if self.window && self.window_start != Some(0) {
            // Its `L<n>` are lines of this window: the pointer maps them to the file.
            let this = match self.window_start {
                Some(_) => " of this window",
                None => " of this output",
            };
            s.text = s.text.replace(" of the saved file", this);
        }
        s
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

/// [`prepare`] for a saved output asked a new question ([`super::ask`]): nothing is saved
/// again; the file's text is counted and cleaned, and the summary step (with the question as
/// its intent) points at the same file. A binary file is described; a text at or under
/// `token_limit` comes back whole; above `summarize_limit`, the structural digest.
pub fn prepare_saved(req: super::ask::AskRequest, counter: Option<&dyn TokenCounter>) -> Prepared {
    let started = Instant::now();
    let super::ask::AskRequest {
        output,
        question,
        limits,
        deadline,
    } = req;
    let decoded = decode::decode(&output.content);
    let blob = match &decoded {
        None => Some(binary::raw(&output.content)),
        Some(d) => binary::whole_base64(d.text.as_bytes()),
    };
    if let Some(blob) = blob {
        let desc = blob.describe(&format!("saved at {}", output.saved.path));
        let text = compose(&desc, &binary_footer(&output.saved));
        let mut r = response(ResultKind::Binary, text, vec![output.saved]);
        r.content_kind = Some("binary".into());
        r.tokens.output = count_output(&r.text, counter);
        r.timings_ms.total = ms(started);
        return Prepared::Done(r);
    }
    // A text that is not the file's exact bytes (a legacy encoding, NULs) points to them.
    let decoded = decoded.unwrap_or_else(|| decode::lossy(&output.content));
    let raw = RawText {
        bytes: &output.content,
        encoding: decoded.encoding,
        label: decoded.label(),
        what: decoded.describe(),
    };
    let note = raw.label.map(|_| raw.pointer(&output.saved));
    let text = decoded.text;
    let (tokens, count_ms) = count_tokens(&text, counter, &limits);
    if tokens <= limits.token_limit {
        let mut body = text.into_owned();
        if let Some(n) = &note {
            body.push_str(if body.ends_with('\n') { "" } else { "\n" });
            body.push_str(n);
        }
        let mut r = response(ResultKind::Passthrough, body, vec![output.saved]);
        r.tokens = TokenStats {
            input: tokens,
            output: tokens,
        };
        if note.is_some() {
            r.tokens.output = count_output(&r.text, counter);
        }
        r.encoding = raw.label.map(Into::into);
        r.timings_ms.count = count_ms;
        r.timings_ms.total = ms(started);
        return Prepared::Done(r);
    }
    let mut job = SummaryJob {
        text: clean(&text).into_owned(),
        tool: output.tool,
        args: None,
        intent: Some(question),
        input_tokens: tokens,
        input_bytes: output.saved.bytes as usize,
        saved: vec![output.saved],
        limits,
        deadline,
        started,
        count_ms,
        window: false,
        window_start: Some(0),
        focus: true,
        encoding: raw.label,
        note,
        too_large: None,
        frame_tokens: 0,
    };
    if tokens > limits.summarize_limit {
        let reason = format!(
            "too_large: at least {} tokens (summarize_limit {})",
            thousands(tokens as u64),
            thousands(limits.summarize_limit as u64)
        );
        match counter {
            Some(_) if job.text.len() <= DIGEST_MAX_BYTES => job.too_large = Some(reason),
            Some(c) => return Prepared::Done(job.digest(c, TOO_LARGE_HEADER, reason)),
            None => return Prepared::Done(job.fallback(None, &reason)),
        }
    }
    Prepared::NeedsModel(job)
}

mod scan;

/// Most error lines quoted from a text too large to reduce ([`scan::error_lines`]).
const MAX_SCANNED_ERRORS: usize = 10;

/// Most lines with the question's words quoted from a text too large to reduce
/// ([`scan::matching_lines`]): the best few, so that with the error lines and the head and
/// tail the answer stays a few thousand tokens.
const MAX_SCANNED_MATCHES: usize = 5;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod encoding_tests;
