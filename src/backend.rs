//! The small traits that separate the guard pipeline from the model.
//!
//! The pipeline and the daemon talk to the model only through [`TokenCounter`] and [`Narrator`],
//! so tests can swap in a fake and the client's fallback can run with a tokenizer alone.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// Counts tokens of untrusted text with a real tokenizer.
///
/// Special-token look-alikes in the text (a literal `<|im_end|>`) are counted as plain text.
pub trait TokenCounter: Send + Sync {
    /// Number of tokens `text` encodes to, without BOS/EOS or chat-template tokens.
    fn count(&self, text: &str) -> usize;
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model emitted an end-of-sequence / end-of-turn token.
    Eos,
    /// `max_new_tokens` were generated.
    MaxTokens,
    /// The wall-clock deadline passed.
    Deadline,
    /// The cancel flag was set (the client went away).
    Cancelled,
    /// A repetition loop was detected and generation was cut.
    Loop,
}

/// One request to the model: a system and a user message, rendered with the model's chat template.
#[derive(Debug, Clone)]
pub struct NarrateRequest {
    /// System message (constant across requests, so its KV cache prefix can be reused).
    pub system: String,
    /// User message: tool name, arguments, intent and the reduced tool output (untrusted data).
    pub user: String,
    /// Upper bound on generated tokens.
    pub max_new_tokens: usize,
    /// Stop generating when this instant passes (checked per token and per prefill chunk).
    pub deadline: Option<Instant>,
    /// Set by the daemon when the client disconnects; checked per token.
    pub cancel: Arc<AtomicBool>,
}

/// The result of a [`NarrateRequest`], with timings.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Narration {
    /// Generated text, special tokens removed.
    pub text: String,
    /// Tokens in the rendered prompt (cached prefix included).
    pub prompt_tokens: usize,
    /// Prompt tokens served from the prefix snapshot instead of being prefilled.
    pub cached_prefix_tokens: usize,
    /// Tokens generated.
    pub generated_tokens: usize,
    /// Wall time of prefill (ms).
    pub prefill_ms: f64,
    /// Wall time of decode (ms).
    pub decode_ms: f64,
    /// Why generation stopped (`None` if nothing was generated).
    pub stop: Option<StopReason>,
    /// Tokens drafted by prompt lookup and checked (speculative decoding; 0 when off).
    pub draft_proposed: usize,
    /// Of those, tokens accepted (each saved one decode step).
    pub draft_accepted: usize,
}

/// Something that writes text for a prompt: the local model, or a fake in tests.
pub trait Narrator: Send {
    /// Runs one request to completion (or deadline/cancel).
    ///
    /// # Errors
    /// Returns an error when the prompt does not fit the context or the model fails.
    fn narrate(&mut self, req: &NarrateRequest) -> anyhow::Result<Narration>;
    /// Measured prefill speed (tokens/s), used to size the model's input to a deadline.
    fn prefill_tok_per_s(&self) -> f64;
    /// Measured decode speed (tokens/s).
    fn decode_tok_per_s(&self) -> f64;
    /// Model name for reports.
    fn model_name(&self) -> String;
}
