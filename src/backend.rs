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
    /// A restriction on what may be written, or `None` for free text.
    pub constraint: Option<OutputConstraint>,
}

/// A restriction on a model's output. The local engine enforces it while decoding (tokens that
/// would leave the allowed language get no probability); a remote backend maps it to its
/// server's structured-output option and returns text of the same shape. Either way the caller
/// validates what comes back with [`OutputConstraint::parse_ids`], so it is safe with a backend
/// that enforces nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputConstraint {
    /// The output starts with one line listing ids taken from `ids`, each at most once and at
    /// most `max` of them, separated by commas and/or spaces, or the word `none`; the line
    /// ends with `\n`. After it, free text follows when `then_text`, else the output ends.
    /// Ids are short ASCII words without commas or whitespace (the pipeline uses `1`, `2`, ...).
    Ids {
        /// The ids that may be chosen.
        ids: Vec<String>,
        /// Most ids in the line.
        max: usize,
        /// Whether free text may follow the ids line.
        then_text: bool,
    },
}

impl OutputConstraint {
    /// The ids named on the first line of `text` that are allowed (known, not repeated, at most
    /// `max`), in the order written, and the text after that line (empty when none).
    /// Unknown words are skipped, so text from a backend that did not enforce the constraint
    /// cannot bring in an id that was not offered.
    pub fn parse_ids<'t>(&self, text: &'t str) -> (Vec<String>, &'t str) {
        let OutputConstraint::Ids { ids, max, .. } = self;
        let (line, rest) = text.split_once('\n').unwrap_or((text, ""));
        let mut out: Vec<String> = Vec::new();
        for w in line.split(|c: char| c == ',' || c.is_whitespace()) {
            if out.len() >= *max {
                break;
            }
            if !w.is_empty() && ids.iter().any(|i| i == w) && !out.iter().any(|o| o == w) {
                out.push(w.to_string());
            }
        }
        (out, rest)
    }
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
