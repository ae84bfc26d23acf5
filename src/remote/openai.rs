//! The OpenAI-compatible chat client (ureq, blocking: one thread per request in flight).
//!
//! One request per narration: `POST <base>/chat/completions` with the system and user messages
//! the local model would get, `temperature: 0` (greedy), `max_tokens`, the [`STOP`] sequences,
//! `stream: true` (with `stream_options.include_usage`), and `Authorization: Bearer <key>` when
//! `TOOLSUM_BACKEND_API_KEY` is set. Only standard fields are sent, so vLLM, llama-server, TGI,
//! SGLang, Ollama and hosted APIs all take the request (the local engine's repetition penalty
//! has no standard field; `max_tokens` bounds a loop instead, and grounding drops its text).
//!
//! Time: the whole request, connect included, must end by the narration's deadline (the
//! request's `model_ms` or its deadline, whichever is first): ureq's overall timeout is set to
//! the time left, and the stream is read line by line, checking the deadline and the cancel
//! flag between lines. A stream still open at the deadline ends there: its text so far is used
//! if there is any (as the local engine does), else it is a [`BackendError::Timeout`]. A stream
//! that goes on past `max_tokens` (plus [`CHUNK_SLACK`]) or [`MAX_STREAM_BYTES`] is cut as an
//! [`BackendError::Overrun`]. Only connect failures are retried ([`super::CONNECT_ATTEMPTS`]).
//!
//! Sizing: the pipeline sizes the model's input from [`Narrator::prefill_tok_per_s`] and
//! [`Narrator::decode_tok_per_s`]. For this backend both are measured in *local* tokens (the
//! local tokenizer counts the user message and the reply) per second of wall time as this
//! client sees it: time to the first text chunk (connect, the server's queue and prefill), and
//! from there to the end. So a remote model whose tokenizer needs more tokens for the same text
//! (Llama 3's and Qwen 2.5's vocabularies take within about 10% of each other's token counts on
//! code and logs; a small-vocabulary model such as SmolLM2's up to ~30% more) simply shows a
//! lower rate, and a loaded server a longer time to first token; the pipeline then keeps 10% of
//! the time in reserve. The budgets stay far below any served context (1,500 + 256 tokens by
//! default, plus a ~250-token system prompt), but a server that splits a small context across
//! slots (llama-server `-c 8192 -np 4` gives each 2,048) must leave each slot at least 4,096.
//! A timed-out request halves both rates (down to a floor), so a slow server soon gets requests
//! it can answer in time.

use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::sse::{api_error, parse_completion, Progress, Reply, StreamParser};
use super::stats::RemoteStats;
use super::{BackendError, RemoteSettings, CONNECT_ATTEMPTS, CONNECT_BACKOFF_MS};
use crate::backend::{NarrateRequest, Narration, Narrator, StopReason, TokenCounter};

/// Stop sequences sent with every request: chat-template markers, in case a server's template
/// does not stop on them, and the opening delimiter of the tool output (a model that starts
/// echoing its input). OpenAI's API takes at most four.
pub const STOP: [&str; 3] = [
    "<|im_start|>",
    "<|im_end|>",
    crate::guard::prompt::DATA_START,
];
/// Text chunks accepted past `max_tokens` before a stream counts as endless (servers send about
/// one chunk per token, some a few more).
pub const CHUNK_SLACK: usize = 64;
/// Most bytes read from one reply (4 MiB; a 256-token reply is a few KiB of events).
pub const MAX_STREAM_BYTES: u64 = 4 << 20;
/// Longest line of a reply (1 MiB).
pub const MAX_LINE_BYTES: u64 = 1 << 20;
/// Most bytes of an error reply's body that are read for its message.
pub const MAX_ERROR_BODY: u64 = 64 << 10;
/// Time a request gets when the narration has no deadline (ms).
pub const NO_DEADLINE_MS: u64 = 60_000;
/// Most time `/models` gets to name the default model (ms).
pub const MODELS_TIMEOUT_MS: u64 = 5_000;
/// Rates assumed before the first measurement (local tokens/s): a GPU server's order of
/// magnitude, so the first requests get the whole budget; a slower server is measured on them.
pub const INITIAL_PREFILL_TOK_PER_S: f64 = 1_000.0;
/// As [`INITIAL_PREFILL_TOK_PER_S`], for decode.
pub const INITIAL_DECODE_TOK_PER_S: f64 = 40.0;
/// Floors of the measured rates, so a slow spell never sizes every later request out of the
/// model: at the default 4.5 s `model_ms` (90% of it planned), a minimal request at these
/// rates needs 3.6 s (200 tokens read at 100 tok/s, 32 written at 20 tok/s), so it still fits.
pub const MIN_PREFILL_TOK_PER_S: f64 = 100.0;
/// As [`MIN_PREFILL_TOK_PER_S`], for decode.
pub const MIN_DECODE_TOK_PER_S: f64 = 20.0;
/// Weight of a new measurement in the rates' moving average.
const EWMA: f64 = 0.3;

/// The client side of one OpenAI-compatible server, shared by every narrator thread.
pub struct OpenAiBackend {
    settings: RemoteSettings,
    agent: ureq::Agent,
    /// The model name, once configured or listed by the server.
    model: Mutex<Option<String>>,
    counter: Arc<dyn TokenCounter>,
    stats: RemoteStats,
    /// (prefill, decode) in local tokens per second.
    speeds: Mutex<(f64, f64)>,
    /// Set once the server refused `response_format`: constrained requests then go without it
    /// (their replies are validated all the same).
    no_structured: AtomicBool,
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// The message of a transport error, without the URL ureq puts in front.
fn transport_message(t: &ureq::Transport) -> String {
    let mut s = t
        .message()
        .map_or_else(|| t.kind().to_string(), str::to_string);
    if let Some(src) = std::error::Error::source(t) {
        s.push_str(": ");
        s.push_str(&src.to_string());
    }
    s
}

fn is_timeout(t: &ureq::Transport) -> bool {
    std::error::Error::source(t)
        .and_then(|e| e.downcast_ref::<std::io::Error>())
        .is_some_and(|e| {
            matches!(
                e.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            )
        })
}

/// Reads an error reply's body (at most [`MAX_ERROR_BODY`]) into a [`BackendError::Status`].
fn status_error(code: u16, resp: ureq::Response) -> BackendError {
    let mut body = String::new();
    let _ = resp
        .into_reader()
        .take(MAX_ERROR_BODY)
        .read_to_string(&mut body);
    serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| api_error(&v, code))
        .map(|e| match e {
            BackendError::Status { message, .. } => BackendError::Status { code, message },
            other => other,
        })
        .unwrap_or_else(|| BackendError::Status {
            code,
            message: body.trim().chars().take(120).collect(),
        })
}

impl OpenAiBackend {
    /// A client for `settings` (its URL normalized); `counter` is the local tokenizer, which
    /// measures the rates ([`Narrator::prefill_tok_per_s`]).
    ///
    /// # Errors
    /// The URL is not an http(s) URL with a host.
    pub fn new(
        mut settings: RemoteSettings,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Arc<Self>, String> {
        settings.url = super::normalize_base_url(&settings.url)?;
        settings.parallel = settings.parallel.max(1);
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_millis(settings.connect_ms.max(1)))
            .max_idle_connections_per_host(settings.parallel)
            .user_agent(concat!("toolsum/", env!("CARGO_PKG_VERSION")))
            .build();
        let model = settings.model.clone().filter(|m| !m.trim().is_empty());
        Ok(Arc::new(Self {
            settings,
            agent,
            model: Mutex::new(model),
            counter,
            stats: RemoteStats::default(),
            speeds: Mutex::new((INITIAL_PREFILL_TOK_PER_S, INITIAL_DECODE_TOK_PER_S)),
            no_structured: AtomicBool::new(false),
        }))
    }

    /// The normalized base URL (`.../v1`).
    pub fn url(&self) -> &str {
        &self.settings.url
    }

    /// Requests in flight at once (`backend_parallel`).
    pub fn parallel(&self) -> usize {
        self.settings.parallel
    }

    /// The counters for `status`.
    pub fn stats(&self) -> &RemoteStats {
        &self.stats
    }

    /// The model name if known (configured, or listed by the server once).
    pub fn model(&self) -> Option<String> {
        self.model.lock().expect("model lock").clone()
    }

    /// The name the guard response's `model` field gets: `openai:<model>`.
    pub fn name(&self) -> String {
        format!(
            "openai:{}",
            self.model().unwrap_or_else(|| "(unknown model)".into())
        )
    }

    /// `status`'s `backend` object: `{"kind":"openai","url","model","parallel"}`.
    pub fn describe(&self) -> Value {
        json!({
            "kind": "openai",
            "url": self.settings.url,
            "model": self.model(),
            "parallel": self.settings.parallel,
        })
    }

    /// `status`'s remote fields ([`RemoteStats::report`]) plus the measured rates
    /// (`remote_prefill_tok_per_s`, `remote_decode_tok_per_s`, local tokens per second).
    pub fn report(&self) -> Value {
        let mut r = self.stats.report();
        let (p, d) = *self.speeds.lock().expect("speeds lock");
        r["remote_prefill_tok_per_s"] = p.into();
        r["remote_decode_tok_per_s"] = d.into();
        r
    }

    fn rates(&self) -> (f64, f64) {
        *self.speeds.lock().expect("speeds lock")
    }

    fn learn(&self, prefill: Option<f64>, decode: Option<f64>) {
        let mut s = self.speeds.lock().expect("speeds lock");
        if let Some(p) = prefill.filter(|p| p.is_finite() && *p > 0.0) {
            s.0 = (s.0 * (1.0 - EWMA) + p * EWMA).max(MIN_PREFILL_TOK_PER_S);
        }
        if let Some(d) = decode.filter(|d| d.is_finite() && *d > 0.0) {
            s.1 = (s.1 * (1.0 - EWMA) + d * EWMA).max(MIN_DECODE_TOK_PER_S);
        }
    }

    fn slow_down(&self) {
        let mut s = self.speeds.lock().expect("speeds lock");
        s.0 = (s.0 / 2.0).max(MIN_PREFILL_TOK_PER_S);
        s.1 = (s.1 / 2.0).max(MIN_DECODE_TOK_PER_S);
    }

    fn authorize(&self, r: ureq::Request) -> ureq::Request {
        match &self.settings.api_key {
            Some(k) => r.set("Authorization", &k.bearer()),
            None => r,
        }
    }

    /// Asks the server for its models (`GET <base>/models`) once the name is not configured,
    /// and keeps the first one's `id`. Called at start (so `status` names the model) and, until
    /// it succeeds, before each request.
    ///
    /// # Errors
    /// As a chat request, plus [`BackendError::Malformed`] when the list is empty.
    pub fn resolve_model(&self, deadline: Instant) -> Result<String, BackendError> {
        if let Some(m) = self.model() {
            return Ok(m);
        }
        let timeout = left(deadline).min(Duration::from_millis(MODELS_TIMEOUT_MS));
        if timeout.is_zero() {
            return Err(BackendError::Timeout(
                "no time left to list the models".into(),
            ));
        }
        let url = format!("{}/models", self.settings.url);
        let resp = self.with_connect_retries(deadline, || {
            self.authorize(self.agent.get(&url).timeout(timeout))
                .call()
                .map_err(Box::new)
        })?;
        let mut body = String::new();
        resp.into_reader()
            .take(MAX_STREAM_BYTES)
            .read_to_string(&mut body)
            .map_err(|e| BackendError::Io(format!("reading /models: {e}")))?;
        let v: Value = serde_json::from_str(&body)
            .map_err(|e| BackendError::Malformed(format!("/models is not JSON: {e}")))?;
        let id = v
            .get("data")
            .and_then(|d| d.get(0))
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| BackendError::Malformed("/models lists no model".into()))?
            .to_string();
        *self.model.lock().expect("model lock") = Some(id.clone());
        Ok(id)
    }

    /// Runs `send` (one HTTP exchange), again after a connect failure while attempts and time
    /// are left; maps ureq's errors onto [`BackendError`].
    fn with_connect_retries(
        &self,
        deadline: Instant,
        mut send: impl FnMut() -> Result<ureq::Response, Box<ureq::Error>>,
    ) -> Result<ureq::Response, BackendError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let err = match send().map_err(|e| *e) {
                Ok(r) => return Ok(r),
                Err(ureq::Error::Status(code, resp)) => return Err(status_error(code, resp)),
                Err(ureq::Error::Transport(t)) => t,
            };
            let msg = transport_message(&err);
            use ureq::ErrorKind as K;
            match err.kind() {
                K::Dns | K::ConnectionFailed if is_timeout(&err) || left(deadline).is_zero() => {
                    return Err(BackendError::Timeout(format!("connect: {msg}")))
                }
                K::Dns | K::ConnectionFailed => {
                    let pause = CONNECT_BACKOFF_MS
                        .get(attempt - 1)
                        .map(|&ms| Duration::from_millis(ms));
                    match pause {
                        Some(p) if attempt < CONNECT_ATTEMPTS && left(deadline) > p => {
                            tracing::debug!("connect attempt {attempt} failed: {msg}");
                            std::thread::sleep(p);
                        }
                        _ => {
                            return Err(BackendError::Connect(format!(
                                "{msg} ({attempt} attempts)"
                            )))
                        }
                    }
                }
                K::Io if is_timeout(&err) => return Err(BackendError::Timeout(msg)),
                K::Io => return Err(BackendError::Io(msg)),
                _ => return Err(BackendError::Malformed(msg)),
            }
        }
    }

    /// One chat completion for `req`, counted in the stats. With a constraint, the server's
    /// structured-output option is used ([`super::constraint`]) and the reply comes back in the
    /// local engine's text shape, validated; a server that refuses the option (HTTP 400/422
    /// naming it) is asked again without it, and not offered it again.
    ///
    /// # Errors
    /// [`BackendError`]; a cancelled request is `Ok` with [`StopReason::Cancelled`].
    pub fn chat(&self, req: &NarrateRequest) -> Result<Narration, BackendError> {
        let t0 = Instant::now();
        let deadline = req
            .deadline
            .unwrap_or(t0 + Duration::from_millis(NO_DEADLINE_MS));
        let _in_flight = self.stats.start();
        let mut res = self.chat_inner(req, deadline, t0);
        if let (Some(_), Err(BackendError::Status { code, message })) = (&req.constraint, &res) {
            let refused = matches!(code, 400 | 422)
                && ["response_format", "json_schema", "schema", "grammar"]
                    .iter()
                    .any(|w| message.contains(w));
            if refused && !self.no_structured.swap(true, Ordering::SeqCst) {
                tracing::warn!(
                    "{} refused structured output ({message}); sending constraints as text",
                    self.settings.url
                );
                res = self.chat_inner(req, deadline, t0);
            }
        }
        let outcome = match &res {
            Ok(n) if n.stop == Some(StopReason::Cancelled) => "cancelled",
            Ok(n) if n.stop == Some(StopReason::Deadline) => "deadline",
            Ok(_) => "ok",
            Err(e) => e.kind(),
        };
        self.stats.finish(outcome, ms_since(t0));
        if matches!(&res, Err(BackendError::Timeout(_)))
            || matches!(&res, Ok(n) if n.stop == Some(StopReason::Deadline))
        {
            self.slow_down();
        }
        res
    }

    fn chat_inner(
        &self,
        req: &NarrateRequest,
        deadline: Instant,
        t0: Instant,
    ) -> Result<Narration, BackendError> {
        let cancelled = || req.cancel.load(Ordering::Relaxed);
        if cancelled() {
            return Ok(Narration {
                stop: Some(StopReason::Cancelled),
                ..Default::default()
            });
        }
        let model = self.resolve_model(deadline)?;
        let structured = req
            .constraint
            .as_ref()
            .filter(|_| !self.no_structured.load(Ordering::SeqCst));
        let max_tokens = req.max_new_tokens.max(1)
            + structured.map_or(0, super::constraint::json_overhead_tokens);
        let mut body = json!({
            "model": model,
            "messages": [
                {"role": "system", "content": req.system},
                {"role": "user", "content": req.user},
            ],
            "temperature": 0,
            "max_tokens": max_tokens,
            "stop": STOP,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if let Some(c) = structured {
            body["response_format"] = super::constraint::response_format(c);
        }
        let url = format!("{}/chat/completions", self.settings.url);
        let resp = self.with_connect_retries(deadline, || {
            let r = self
                .agent
                .post(&url)
                .timeout(left(deadline).max(Duration::from_millis(1)))
                .set("Accept", "text/event-stream, application/json");
            self.authorize(r).send_json(&body).map_err(Box::new)
        })?;
        let mut first_text: Option<Instant> = None;
        let mut cut: Option<StopReason> = None;
        let mut reply = if resp.content_type() == "application/json" {
            let mut body = String::new();
            read_limited(resp.into_reader(), &mut body, deadline)?;
            first_text = Some(Instant::now());
            parse_completion(&body)?
        } else {
            let mut rd = BufReader::new(resp.into_reader().take(MAX_STREAM_BYTES + 1));
            let mut parser = StreamParser::new(max_tokens + CHUNK_SLACK);
            let mut buf = Vec::new();
            let mut total = 0u64;
            loop {
                if cancelled() {
                    cut = Some(StopReason::Cancelled);
                    break;
                }
                if Instant::now() >= deadline {
                    cut = Some(StopReason::Deadline);
                    break;
                }
                buf.clear();
                let n = match rd.by_ref().take(MAX_LINE_BYTES).read_until(b'\n', &mut buf) {
                    Ok(n) => n,
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                        ) =>
                    {
                        cut = Some(StopReason::Deadline);
                        break;
                    }
                    Err(e) => return Err(BackendError::Io(format!("reading the stream: {e}"))),
                };
                if n == 0 {
                    break;
                }
                total += n as u64;
                if total > MAX_STREAM_BYTES {
                    return Err(BackendError::Overrun(format!(
                        "more than {MAX_STREAM_BYTES} bytes"
                    )));
                }
                if buf.last() != Some(&b'\n') && n as u64 == MAX_LINE_BYTES {
                    return Err(BackendError::Malformed(format!(
                        "a line of more than {MAX_LINE_BYTES} bytes"
                    )));
                }
                let line = String::from_utf8_lossy(buf.strip_suffix(b"\n").unwrap_or(&buf));
                match parser.line(&line)? {
                    Progress::Text if first_text.is_none() => first_text = Some(Instant::now()),
                    Progress::Done => break,
                    _ => {}
                }
            }
            match cut {
                None => parser.finish()?,
                Some(StopReason::Deadline) if parser.reply().content_chunks == 0 => {
                    return Err(BackendError::Timeout(format!(
                        "no text within {:.0} ms",
                        ms_since(t0)
                    )))
                }
                Some(_) => parser.reply().clone(),
            }
        };
        if let Some(c) = &req.constraint {
            reply.text = super::constraint::to_text(c, &reply.text);
        }
        Ok(self.narration(req, reply, cut, t0, first_text))
    }

    /// Turns a reply into a [`Narration`] and learns the rates from its timing.
    fn narration(
        &self,
        req: &NarrateRequest,
        reply: Reply,
        cut: Option<StopReason>,
        t0: Instant,
        first_text: Option<Instant>,
    ) -> Narration {
        let end = Instant::now();
        let first = first_text.unwrap_or(end);
        let local_in = self.counter.count(&req.user);
        let local_out = self.counter.count(&reply.text);
        let ttft = first.duration_since(t0).as_secs_f64();
        let decode_s = end.duration_since(first).as_secs_f64();
        if cut.is_none() {
            self.learn(
                (first_text.is_some() && ttft > 0.0).then(|| local_in as f64 / ttft),
                (local_out >= 8 && decode_s > 0.05).then(|| local_out as f64 / decode_s),
            );
        }
        let stop = cut.or(match reply.finish.as_deref() {
            Some("length") => Some(StopReason::MaxTokens),
            _ => Some(StopReason::Eos),
        });
        let usage = reply.usage.unwrap_or_default();
        Narration {
            prompt_tokens: if usage.prompt_tokens > 0 {
                usage.prompt_tokens
            } else {
                self.counter.count(&req.system) + local_in
            },
            generated_tokens: if usage.completion_tokens > 0 {
                usage.completion_tokens
            } else {
                local_out
            },
            text: reply.text,
            // From the request's start: connect, the server's queue and its prefill.
            prefill_ms: ttft * 1e3,
            decode_ms: decode_s * 1e3,
            stop,
            ..Default::default()
        }
    }
}

/// Reads a whole (non-streamed) body, at most [`MAX_STREAM_BYTES`].
fn read_limited(r: impl Read, out: &mut String, deadline: Instant) -> Result<(), BackendError> {
    let mut bytes = Vec::new();
    r.take(MAX_STREAM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            if Instant::now() >= deadline
                || matches!(
                    e.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                )
            {
                BackendError::Timeout(format!("reading the reply: {e}"))
            } else {
                BackendError::Io(format!("reading the reply: {e}"))
            }
        })?;
    if bytes.len() as u64 > MAX_STREAM_BYTES {
        return Err(BackendError::Overrun(format!(
            "a reply of more than {MAX_STREAM_BYTES} bytes"
        )));
    }
    *out = String::from_utf8_lossy(&bytes).into_owned();
    Ok(())
}

/// The local model as a stand-in when the remote backend fails (`backend_fallback = local`).
pub trait LocalFallback: Send + Sync {
    /// Runs `req` on the local model (waiting for its queue), or says why it could not.
    ///
    /// # Errors
    /// The local queue is full, the deadline passed, or the model failed.
    fn narrate(&self, req: &NarrateRequest) -> anyhow::Result<Narration>;
    /// The local model's name.
    fn name(&self) -> String;
}

/// One narrator thread's handle on the backend: a [`Narrator`] whose `model_name` names whoever
/// wrote the last narration (`openai:<model>`, or the local model after a fallback).
pub struct OpenAiNarrator {
    backend: Arc<OpenAiBackend>,
    fallback: Option<Arc<dyn LocalFallback>>,
    writer: Option<String>,
}

impl OpenAiNarrator {
    /// A narrator on `backend`, with the local model as `fallback` if given.
    pub fn new(backend: Arc<OpenAiBackend>, fallback: Option<Arc<dyn LocalFallback>>) -> Self {
        Self {
            backend,
            fallback,
            writer: None,
        }
    }
}

impl Narrator for OpenAiNarrator {
    fn narrate(&mut self, req: &NarrateRequest) -> anyhow::Result<Narration> {
        self.writer = None;
        let e = match self.backend.chat(req) {
            Ok(n) => {
                self.writer = Some(self.backend.name());
                return Ok(n);
            }
            Err(e) => anyhow::anyhow!("openai backend {}: {e}", self.backend.url()),
        };
        let Some(f) = &self.fallback else {
            return Err(e);
        };
        if req.cancel.load(Ordering::Relaxed) || req.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(e.context("no time left for the local fallback"));
        }
        match f.narrate(req) {
            Ok(n) => {
                tracing::info!("the local model answered after: {e:#}");
                self.backend.stats.fallback(true);
                self.writer = Some(f.name());
                Ok(n)
            }
            Err(fe) => {
                self.backend.stats.fallback(false);
                Err(anyhow::anyhow!("{e:#}; local fallback: {fe:#}"))
            }
        }
    }
    fn prefill_tok_per_s(&self) -> f64 {
        self.backend.rates().0
    }
    fn decode_tok_per_s(&self) -> f64 {
        self.backend.rates().1
    }
    fn model_name(&self) -> String {
        self.writer.clone().unwrap_or_else(|| self.backend.name())
    }
}
