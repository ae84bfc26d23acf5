//! A `tokenizers::Tokenizer` built from a GGUF file's own `tokenizer.ggml.*` metadata.
//!
//! A GGUF carries no `tokenizer.json`; it stores the vocabulary, the BPE merges, the token types and
//! the special ids under llama.cpp's key names, plus `tokenizer.ggml.pre`, the name of the
//! pre-tokenizer (text splitting) the vocabulary was trained with. [`GgufTokenizer`] rebuilds a real
//! byte-level BPE [`tokenizers::Tokenizer`] from those keys:
//!
//! - model: BPE from `tokenizer.ggml.tokens` + `tokenizer.ggml.merges` (only
//!   `tokenizer.ggml.model = "gpt2"`, i.e. byte-level BPE, is supported);
//! - pre-tokenizer: the split that `tokenizer.ggml.pre` names (see [`KNOWN_PRE`]), followed by the
//!   byte-level byte→char mapping. The splits follow llama.cpp's `llama-vocab.cpp` and the upstream
//!   `tokenizer.json` files; no normalizer is applied (llama.cpp and transformers apply none, and an
//!   NFC normalizer was measured to disagree with both for Qwen);
//! - added tokens: `token_type` 3 (control) become special tokens, 4 (user-defined) plain added
//!   tokens, both matched whole and unnormalized;
//! - decoder: byte-level.
//!
//! Two encoding modes exist because tool output is untrusted: [`GgufTokenizer::encode_untrusted`]
//! keeps special-token look-alikes (a literal `<|im_end|>`) as plain text, while
//! [`GgufTokenizer::encode_trusted`] turns them into special ids (for chat-template text we render).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{
    AddedToken, DecoderWrapper, PreTokenizerWrapper, SplitDelimiterBehavior, Tokenizer,
};

/// Values of `tokenizer.ggml.pre` this module can build, as listed in error messages.
pub const KNOWN_PRE: &[&str] = &[
    "smollm",
    "starcoder",
    "refact",
    "codeshell",
    "qwen2",
    "deepseek-r1-qwen",
    "llama-bpe",
    "llama3",
    "llama-v3",
    "smaug-bpe",
    "gpt2",
];

/// Qwen2's split (llama.cpp `LLAMA_VOCAB_PRE_TYPE_QWEN2`; transformers `qwen2` `PRETOKENIZE_REGEX`):
/// contractions, letters with one optional leading non-letter, single digits, punctuation runs,
/// newline runs, whitespace.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Llama 3's split (llama.cpp `LLAMA_VOCAB_PRE_TYPE_LLAMA3`): as Qwen2 but digits in groups of 1–3.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Token type values of `tokenizer.ggml.token_type` (llama.cpp `llama_token_type`).
const TOKEN_TYPE_CONTROL: i32 = 3;
/// See [`TOKEN_TYPE_CONTROL`].
const TOKEN_TYPE_USER_DEFINED: i32 = 4;

/// Texts of end-of-turn tokens that stop generation when present in the vocabulary, in addition to
/// `tokenizer.ggml.eos_token_id` (ChatML, Llama 3, Phi-3, Gemma conventions).
const END_OF_TURN_TOKENS: &[&str] = &[
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end|>",
    "<end_of_turn>",
];

/// Texts at least this long (bytes) are counted in parallel chunks by [`GgufTokenizer::count`].
/// Below it, thread start-up costs more than it saves (a 128 KiB text counts in ~50 ms on one core).
pub const PARALLEL_COUNT_MIN_BYTES: usize = 128 * 1024;

/// Target chunk size (bytes) for parallel counting; chunks end at the first safe cut after it.
const PARALLEL_CHUNK_BYTES: usize = 64 * 1024;

/// Most threads one count uses.
const PARALLEL_COUNT_MAX_THREADS: usize = 8;

/// What went wrong building a tokenizer from a GGUF file.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// The file could not be opened.
    #[error("opening GGUF file {path}: {source}")]
    Open {
        /// The file that was asked for.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The GGUF header (metadata + tensor infos) could not be parsed: truncated or not a GGUF.
    #[error("{path} is not a valid GGUF file ({detail}): re-fetch it with `scripts/fetch-models.sh`, or check the path")]
    Header {
        /// The file that was read.
        path: PathBuf,
        /// The first line of candle's parse error (it appends a backtrace when RUST_BACKTRACE
        /// is set).
        detail: String,
    },
    /// A required metadata key is absent.
    #[error("GGUF metadata has no `{0}`")]
    MissingKey(&'static str),
    /// A metadata key has an unexpected value type.
    #[error("GGUF metadata `{key}` is not {expected}")]
    WrongType {
        /// The key.
        key: &'static str,
        /// What type was expected, in words.
        expected: &'static str,
    },
    /// `tokenizer.ggml.model` is not byte-level BPE.
    #[error("unsupported tokenizer.ggml.model `{0}` (supported: gpt2, i.e. byte-level BPE)")]
    UnsupportedModel(String),
    /// `tokenizer.ggml.pre` names a pre-tokenizer this module does not know.
    #[error("unsupported tokenizer.ggml.pre `{pre}` (known: {})", KNOWN_PRE.join(", "))]
    UnsupportedPre {
        /// The name found in the file.
        pre: String,
    },
    /// A merge line is not two space-separated tokens.
    #[error("tokenizer.ggml.merges[{index}] = {merge:?} is not `left right`")]
    BadMerge {
        /// Position in the merges array.
        index: usize,
        /// The offending line.
        merge: String,
    },
    /// `token_type` does not have one entry per token.
    #[error("tokenizer.ggml.token_type has {types} entries for {tokens} tokens")]
    TokenTypeLength {
        /// Entries in `token_type`.
        types: usize,
        /// Entries in `tokens`.
        tokens: usize,
    },
    /// A special-token id is outside the vocabulary.
    #[error("`{key}` = {id} is outside the vocabulary of {vocab} tokens")]
    BadTokenId {
        /// The key holding the id.
        key: &'static str,
        /// The id found.
        id: u32,
        /// Vocabulary size.
        vocab: usize,
    },
    /// The `tokenizers` library refused the parts (bad merges, bad regex).
    #[error("building tokenizer: {0}")]
    Build(#[source] tokenizers::Error),
}

/// A real tokenizer for a GGUF model, with trusted/untrusted encoding modes and the model's
/// special ids and chat template. `Send + Sync`; cheap to share behind an `Arc`.
#[derive(Clone)]
pub struct GgufTokenizer {
    /// Matches special tokens in text (for chat-template text rendered by us).
    trusted: Tokenizer,
    /// Same tokenizer with `encode_special_tokens = true`: special look-alikes stay plain text.
    untrusted: Tokenizer,
    /// `tokenizer.ggml.bos_token_id`, if the file names one.
    bos_id: Option<u32>,
    /// `tokenizer.ggml.eos_token_id` first, then end-of-turn tokens found in the vocabulary.
    eos_ids: Vec<u32>,
    /// `tokenizer.chat_template`, the model's own Jinja chat template.
    chat_template: Option<String>,
    /// `tokenizer.ggml.pre`, kept for reports.
    pre: String,
    /// Id of each byte's single-char token, used only as a fallback encoding (see `encode_*`).
    byte_ids: Vec<Option<u32>>,
    /// Whether text may be cut at `X\nY` for parallel counting: false when an added token
    /// contains a newline (it could straddle the cut).
    parallel_ok: bool,
}

impl std::fmt::Debug for GgufTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufTokenizer")
            .field("pre", &self.pre)
            .field("vocab_size", &self.vocab_size())
            .field("bos_id", &self.bos_id)
            .field("eos_ids", &self.eos_ids)
            .finish_non_exhaustive()
    }
}

/// GPT-2's byte → printable char table (the byte-level BPE alphabet): printable Latin-1 bytes map
/// to themselves, the other 68 bytes to U+0100.. in byte order.
fn bytes_to_unicode() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut extra = 0u32;
    for b in 0u32..256 {
        let printable =
            (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b);
        let c = if printable {
            b
        } else {
            extra += 1;
            255 + extra
        };
        table[b as usize] = char::from_u32(c).unwrap_or('\0');
    }
    table
}

fn get<'a>(content: &'a Content, key: &'static str) -> Result<&'a Value, TokenizerError> {
    content
        .metadata
        .get(key)
        .ok_or(TokenizerError::MissingKey(key))
}

fn get_str<'a>(content: &'a Content, key: &'static str) -> Result<&'a str, TokenizerError> {
    get(content, key)?
        .to_string()
        .map(String::as_str)
        .map_err(|_| TokenizerError::WrongType {
            key,
            expected: "a string",
        })
}

fn get_str_array<'a>(
    content: &'a Content,
    key: &'static str,
) -> Result<Vec<&'a str>, TokenizerError> {
    let wrong = || TokenizerError::WrongType {
        key,
        expected: "an array of strings",
    };
    get(content, key)?
        .to_vec()
        .map_err(|_| wrong())?
        .iter()
        .map(|v| v.to_string().map(String::as_str).map_err(|_| wrong()))
        .collect()
}

fn get_opt_id(content: &Content, key: &'static str) -> Result<Option<u32>, TokenizerError> {
    let Some(v) = content.metadata.get(key) else {
        return Ok(None);
    };
    let id = match v {
        Value::U32(x) => Some(*x),
        Value::I32(x) => u32::try_from(*x).ok(),
        Value::U64(x) => u32::try_from(*x).ok(),
        Value::I64(x) => u32::try_from(*x).ok(),
        Value::U16(x) => Some(u32::from(*x)),
        Value::I16(x) => u32::try_from(*x).ok(),
        _ => {
            return Err(TokenizerError::WrongType {
                key,
                expected: "an integer token id",
            })
        }
    };
    // A negative id means "none" in llama.cpp.
    Ok(id)
}

/// The pre-tokenizer for a `tokenizer.ggml.pre` name (sources in [`KNOWN_PRE`]'s docs above).
fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper, TokenizerError> {
    let split_then_bytes = |regex: &str| -> Result<PreTokenizerWrapper, TokenizerError> {
        let split = Split::new(
            SplitPattern::Regex(regex.to_string()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(TokenizerError::Build)?;
        Ok(PreTokenizerWrapper::Sequence(Sequence::new(vec![
            PreTokenizerWrapper::Split(split),
            PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, false)),
        ])))
    };
    match pre {
        // llama.cpp: `\p{N}` split first, then the GPT-2 split; upstream SmolLM2/StarCoder
        // tokenizer.json: Digits(individual_digits) then ByteLevel(use_regex). The same thing.
        "smollm" | "starcoder" | "refact" | "codeshell" => {
            Ok(PreTokenizerWrapper::Sequence(Sequence::new(vec![
                PreTokenizerWrapper::Digits(Digits::new(true)),
                PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, true)),
            ])))
        }
        "qwen2" | "deepseek-r1-qwen" => split_then_bytes(QWEN2_SPLIT),
        "llama-bpe" | "llama3" | "llama-v3" | "smaug-bpe" => split_then_bytes(LLAMA3_SPLIT),
        // Plain GPT-2: ByteLevel's own GPT-2 regex.
        "gpt2" => Ok(PreTokenizerWrapper::ByteLevel(ByteLevel::new(
            false, false, true,
        ))),
        other => Err(TokenizerError::UnsupportedPre {
            pre: other.to_string(),
        }),
    }
}

impl GgufTokenizer {
    /// Reads only the GGUF header (metadata and tensor infos, not the weights) of `path` and
    /// builds the tokenizer.
    ///
    /// # Errors
    /// [`TokenizerError::Open`] / [`TokenizerError::Header`] when the file is missing, truncated or
    /// not a GGUF; otherwise as [`GgufTokenizer::from_content`].
    pub fn from_gguf_path(path: &Path) -> Result<Self, TokenizerError> {
        let file = File::open(path).map_err(|source| TokenizerError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader = BufReader::new(file);
        let content = Content::read(&mut reader).map_err(|e| TokenizerError::Header {
            path: path.to_path_buf(),
            detail: e.to_string().lines().next().unwrap_or("").to_string(),
        })?;
        Self::from_content(&content)
    }

    /// Builds the tokenizer from an already-read GGUF header.
    ///
    /// Required keys: `tokenizer.ggml.model` (= `gpt2`), `tokenizer.ggml.pre` (one of
    /// [`KNOWN_PRE`]), `tokenizer.ggml.tokens`, `tokenizer.ggml.merges`. Optional:
    /// `tokenizer.ggml.token_type`, `tokenizer.ggml.bos_token_id`, `tokenizer.ggml.eos_token_id`,
    /// `tokenizer.ggml.eot_token_id`, `tokenizer.ggml.eom_token_id`, `tokenizer.chat_template`.
    ///
    /// # Errors
    /// A [`TokenizerError`] naming the missing/mistyped key, the unsupported model or pre-tokenizer,
    /// a malformed merge, or an id outside the vocabulary.
    pub fn from_content(content: &Content) -> Result<Self, TokenizerError> {
        let model = get_str(content, "tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(TokenizerError::UnsupportedModel(model.to_string()));
        }
        let pre = get_str(content, "tokenizer.ggml.pre")?.to_string();
        let pre_tok = pre_tokenizer(&pre)?;
        let tokens = get_str_array(content, "tokenizer.ggml.tokens")?;
        let merges = get_str_array(content, "tokenizer.ggml.merges")?;
        let token_types: Option<Vec<i32>> = match content.metadata.get("tokenizer.ggml.token_type")
        {
            None => None,
            Some(v) => {
                let wrong = || TokenizerError::WrongType {
                    key: "tokenizer.ggml.token_type",
                    expected: "an array of i32",
                };
                let arr = v.to_vec().map_err(|_| wrong())?;
                Some(
                    arr.iter()
                        .map(|x| x.to_i32().map_err(|_| wrong()))
                        .collect::<Result<_, _>>()?,
                )
            }
        };
        if let Some(tt) = &token_types {
            if tt.len() != tokens.len() {
                return Err(TokenizerError::TokenTypeLength {
                    types: tt.len(),
                    tokens: tokens.len(),
                });
            }
        }

        // Tokens are spelled in the byte-level alphabet; a token using any other char (rare, a
        // converter quirk) is respelled from its UTF-8 bytes, as transformers does.
        let table = bytes_to_unicode();
        let alphabet: std::collections::HashSet<char> = table.iter().copied().collect();
        let mut vocab = tokenizers::models::bpe::Vocab::with_capacity(tokens.len());
        for (id, tok) in tokens.iter().enumerate() {
            let spelled = if tok.chars().all(|c| alphabet.contains(&c)) {
                (*tok).to_string()
            } else {
                tok.bytes().map(|b| table[b as usize]).collect()
            };
            // First occurrence wins on duplicates, like llama.cpp's token_to_id map.
            vocab.entry(spelled).or_insert(id as u32);
        }
        let byte_ids: Vec<Option<u32>> = table
            .iter()
            .map(|c| vocab.get(c.to_string().as_str()).copied())
            .collect();

        let mut pairs = Vec::with_capacity(merges.len());
        for (index, m) in merges.iter().enumerate() {
            match m.split_once(' ') {
                Some((l, r)) if !l.is_empty() && !r.is_empty() => {
                    pairs.push((l.to_string(), r.to_string()))
                }
                _ => {
                    return Err(TokenizerError::BadMerge {
                        index,
                        merge: (*m).to_string(),
                    })
                }
            }
        }

        // Llama 3 vocabularies are used with `ignore_merges` (a whole word in the vocabulary is
        // taken as is): upstream tokenizer.json and llama.cpp's `tokenizer_ignore_merges`.
        let ignore_merges = matches!(
            pre.as_str(),
            "llama-bpe" | "llama3" | "llama-v3" | "smaug-bpe"
        );
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, pairs)
            .ignore_merges(ignore_merges)
            .build()
            .map_err(TokenizerError::Build)?;
        let mut tk = Tokenizer::new(bpe);
        tk.with_pre_tokenizer(Some(pre_tok));
        tk.with_decoder(Some(DecoderWrapper::ByteLevel(ByteLevelDecoder::default())));

        if let Some(tt) = &token_types {
            let mut special = Vec::new();
            let mut user = Vec::new();
            for (tok, ty) in tokens.iter().zip(tt) {
                match *ty {
                    TOKEN_TYPE_CONTROL if tok.chars().all(|c| alphabet.contains(&c)) => {
                        special.push(AddedToken::from(*tok, true).normalized(false))
                    }
                    TOKEN_TYPE_USER_DEFINED => {
                        user.push(AddedToken::from(*tok, false).normalized(false))
                    }
                    _ => {}
                }
            }
            tk.add_special_tokens(special)
                .map_err(TokenizerError::Build)?;
            tk.add_tokens(user).map_err(TokenizerError::Build)?;
        }

        let n = tokens.len();
        let check = |key: &'static str, id: Option<u32>| -> Result<Option<u32>, TokenizerError> {
            match id {
                Some(id) if id as usize >= n => {
                    Err(TokenizerError::BadTokenId { key, id, vocab: n })
                }
                other => Ok(other),
            }
        };
        let bos_id = check(
            "tokenizer.ggml.bos_token_id",
            get_opt_id(content, "tokenizer.ggml.bos_token_id")?,
        )?;
        let mut eos_ids = Vec::new();
        for key in [
            "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.eot_token_id",
            "tokenizer.ggml.eom_token_id",
        ] {
            if let Some(id) = check(key, get_opt_id(content, key)?)? {
                if !eos_ids.contains(&id) {
                    eos_ids.push(id);
                }
            }
        }
        for t in END_OF_TURN_TOKENS {
            if let Some(id) = tk.token_to_id(t) {
                if !eos_ids.contains(&id) {
                    eos_ids.push(id);
                }
            }
        }
        let chat_template = match content.metadata.get("tokenizer.chat_template") {
            None => None,
            Some(v) => Some(
                v.to_string()
                    .map_err(|_| TokenizerError::WrongType {
                        key: "tokenizer.chat_template",
                        expected: "a string",
                    })?
                    .clone(),
            ),
        };

        let parallel_ok = !tk
            .get_added_tokens_decoder()
            .values()
            .any(|t| t.content.contains('\n'));
        let mut untrusted = tk.clone();
        untrusted.set_encode_special_tokens(true);
        Ok(Self {
            trusted: tk,
            untrusted,
            bos_id,
            eos_ids,
            chat_template,
            pre,
            byte_ids,
            parallel_ok,
        })
    }

    /// Encodes with `tk`; if the library fails (not observed for byte-level BPE, whose alphabet
    /// covers every byte), falls back to one token per byte, a valid if longer encoding.
    fn encode_with(&self, tk: &Tokenizer, text: &str) -> Vec<u32> {
        match tk.encode_fast(text, false) {
            Ok(enc) => enc.get_ids().to_vec(),
            Err(err) => {
                tracing::error!(%err, "tokenizer failed; falling back to byte tokens");
                text.bytes()
                    .filter_map(|b| self.byte_ids[b as usize])
                    .collect()
            }
        }
    }

    /// Token ids of untrusted text (tool output, user data), no BOS/EOS: special-token
    /// look-alikes such as a literal `<|im_end|>` are encoded as plain text.
    pub fn encode_untrusted(&self, text: &str) -> Vec<u32> {
        self.encode_with(&self.untrusted, text)
    }

    /// Token ids of trusted text (chat-template text we rendered), no BOS/EOS added: special
    /// markers such as `<|im_start|>` become their special ids.
    pub fn encode_trusted(&self, text: &str) -> Vec<u32> {
        self.encode_with(&self.trusted, text)
    }

    /// Number of tokens of untrusted `text` (as [`GgufTokenizer::encode_untrusted`]).
    ///
    /// Texts of [`PARALLEL_COUNT_MIN_BYTES`] or more are cut into ~64 KiB chunks at safe points and
    /// counted on up to 8 threads; the sum equals the one-piece count (see [`safe_cuts`]).
    pub fn count(&self, text: &str) -> usize {
        if !self.parallel_ok || text.len() < PARALLEL_COUNT_MIN_BYTES {
            return self.encode_untrusted(text).len();
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(PARALLEL_COUNT_MAX_THREADS);
        let cuts = safe_cuts(text, PARALLEL_CHUNK_BYTES);
        if threads < 2 || cuts.len() < 2 {
            return self.encode_untrusted(text).len();
        }
        let mut bounds = Vec::with_capacity(cuts.len() + 2);
        bounds.push(0);
        bounds.extend_from_slice(&cuts);
        bounds.push(text.len());
        let chunks: Vec<&str> = bounds.windows(2).map(|w| &text[w[0]..w[1]]).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads.min(chunks.len()))
                .map(|_| {
                    scope.spawn(|| {
                        let mut n = 0;
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(chunk) = chunks.get(i) else { break n };
                            n += self.encode_untrusted(chunk).len();
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .sum()
        })
    }

    /// Text of `ids`; special tokens are dropped when `skip_special`. Invalid UTF-8 from a cut
    /// multi-byte character becomes U+FFFD. Unknown ids are skipped.
    pub fn decode(&self, ids: &[u32], skip_special: bool) -> String {
        match self.trusted.decode(ids, skip_special) {
            Ok(s) => s,
            Err(err) => {
                tracing::error!(%err, "decode failed");
                String::new()
            }
        }
    }

    /// Ids that end a turn: `tokenizer.ggml.eos_token_id` (and eot/eom ids) first, then
    /// end-of-turn tokens present in the vocabulary (`<|im_end|>`, `<|endoftext|>`, `<|eot_id|>`, …).
    pub fn eos_ids(&self) -> &[u32] {
        &self.eos_ids
    }

    /// `tokenizer.ggml.bos_token_id`, if the file names one.
    pub fn bos_id(&self) -> Option<u32> {
        self.bos_id
    }

    /// The token text of `id` (byte-level spelling for ordinary tokens), if in the vocabulary.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.trusted.id_to_token(id)
    }

    /// The model's own Jinja chat template (`tokenizer.chat_template`), if present.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    /// The `tokenizer.ggml.pre` name this tokenizer was built for.
    pub fn pre(&self) -> &str {
        &self.pre
    }

    /// Vocabulary size in tokens, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.trusted.get_vocab_size(true)
    }

    /// The underlying trusted-mode tokenizer (special markers matched).
    pub fn inner(&self) -> &Tokenizer {
        &self.trusted
    }
}

/// Byte offsets, about every `every` bytes, where `text` can be cut without changing its
/// tokenization: just after a `\n` whose neighbours on both sides are printable ASCII
/// (`X\nY`). No split regex of [`KNOWN_PRE`] lets a piece cross such a point: letters, digits and
/// punctuation runs never take a newline followed by a non-space, and a lone `\n` between two
/// non-spaces is a piece of its own (`\s*[\r\n]+`, or GPT-2's `\s+`) both in the whole text
/// and at the end of a chunk. Longer whitespace runs and CRLF are not cut, because GPT-2's
/// `\s+(?!\S)` splits them differently at the end of a string.
pub fn safe_cuts(text: &str, every: usize) -> Vec<usize> {
    let b = text.as_bytes();
    let printable = |c: u8| (0x21..=0x7E).contains(&c);
    let mut cuts = Vec::new();
    let mut from = every;
    while from < b.len() {
        let mut found = None;
        for nl in memchr::memchr_iter(b'\n', &b[from..]) {
            let i = from + nl;
            if i >= 1 && i + 1 < b.len() && printable(b[i - 1]) && printable(b[i + 1]) {
                found = Some(i + 1);
                break;
            }
        }
        match found {
            Some(p) => {
                cuts.push(p);
                from = p + every;
            }
            None => break,
        }
    }
    cuts
}

impl crate::backend::TokenCounter for GgufTokenizer {
    fn count(&self, text: &str) -> usize {
        GgufTokenizer::count(self, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::gguf_file::VersionedMagic;
    use std::collections::HashMap;

    fn s(x: &str) -> Value {
        Value::String(x.to_string())
    }

    /// A tiny byte-level vocabulary: all 256 byte chars, a few merges, two control tokens.
    fn content(pre: &str) -> Content {
        let table = bytes_to_unicode();
        let mut tokens: Vec<String> = table.iter().map(|c| c.to_string()).collect();
        let mut types = vec![Value::I32(1); 256];
        let merges = [
            "h e", "l l", "he ll", "hell o", "Ġ w", "Ġw o", "Ġwo r", "Ġwor l", "Ġworl d", "Ġ Ġ",
            "1 2",
        ];
        for m in merges {
            tokens.push(m.replace(' ', ""));
            types.push(Value::I32(1));
        }
        for special in ["<|im_start|>", "<|im_end|>"] {
            tokens.push(special.to_string());
            types.push(Value::I32(TOKEN_TYPE_CONTROL));
        }
        let mut metadata = HashMap::new();
        metadata.insert("tokenizer.ggml.model".to_string(), s("gpt2"));
        metadata.insert("tokenizer.ggml.pre".to_string(), s(pre));
        metadata.insert(
            "tokenizer.ggml.tokens".to_string(),
            Value::Array(tokens.iter().map(|t| s(t)).collect()),
        );
        metadata.insert(
            "tokenizer.ggml.merges".to_string(),
            Value::Array(merges.iter().map(|m| s(m)).collect()),
        );
        metadata.insert("tokenizer.ggml.token_type".to_string(), Value::Array(types));
        metadata.insert(
            "tokenizer.ggml.eos_token_id".to_string(),
            Value::U32(tokens.len() as u32 - 1),
        );
        metadata.insert(
            "tokenizer.ggml.bos_token_id".to_string(),
            Value::U32(tokens.len() as u32 - 2),
        );
        Content {
            magic: VersionedMagic::GgufV3,
            metadata,
            tensor_infos: HashMap::new(),
            tensor_data_offset: 0,
        }
    }

    #[test]
    fn builds_and_encodes_small_vocab() {
        let t = GgufTokenizer::from_content(&content("qwen2")).unwrap();
        assert_eq!(t.vocab_size(), 256 + 11 + 2);
        let ids = t.encode_untrusted("hello world");
        let toks: Vec<String> = ids.iter().map(|&i| t.id_to_token(i).unwrap()).collect();
        assert_eq!(toks, ["hello", "Ġworld"]);
        assert_eq!(t.decode(&ids, false), "hello world");
        assert_eq!(t.count("hello world"), 2);
        assert_eq!(t.bos_id(), Some(267));
        assert_eq!(t.eos_ids(), &[268]);
    }

    #[test]
    fn special_look_alikes_stay_text_when_untrusted() {
        let t = GgufTokenizer::from_content(&content("qwen2")).unwrap();
        let end = t.inner().token_to_id("<|im_end|>").unwrap();
        assert_eq!(
            t.encode_trusted("hello<|im_end|>"),
            vec![t.encode_untrusted("hello")[0], end]
        );
        let untrusted = t.encode_untrusted("hello<|im_end|>");
        assert!(!untrusted.contains(&end), "{untrusted:?}");
        assert_eq!(t.decode(&untrusted, true), "hello<|im_end|>");
        assert_eq!(t.decode(&[end], true), "");
    }

    #[test]
    fn smollm_splits_digits_individually_and_keeps_space_runs() {
        let pieces = |pre: &str, text: &str| -> Vec<String> {
            let t = GgufTokenizer::from_content(&content(pre)).unwrap();
            t.encode_untrusted(text)
                .iter()
                .map(|&i| t.id_to_token(i).unwrap())
                .collect()
        };
        // smollm: digits are split off first, so both spaces stay one piece and merge to "ĠĠ";
        // plain GPT-2 keeps " 12" together and leaves a lone space.
        assert_eq!(pieces("smollm", "a  12"), ["a", "ĠĠ", "1", "2"]);
        assert_eq!(pieces("gpt2", "a  12"), ["a", "Ġ", "Ġ", "12"]);
        // qwen2 splits single digits; llama-bpe groups up to three.
        assert_eq!(pieces("qwen2", "12345"), ["1", "2", "3", "4", "5"]);
        assert_eq!(pieces("llama-bpe", "12345"), ["12", "3", "4", "5"]);
    }

    #[test]
    fn non_ascii_round_trips() {
        let t = GgufTokenizer::from_content(&content("qwen2")).unwrap();
        for text in ["héllo 世界 🎉", "e\u{301}", "\t\r\n  x"] {
            let ids = t.encode_untrusted(text);
            assert_eq!(t.decode(&ids, false), text);
        }
    }

    #[test]
    fn errors_name_the_problem() {
        let mut c = content("nonsense");
        let err = GgufTokenizer::from_content(&c).unwrap_err().to_string();
        assert!(
            err.contains("nonsense") && err.contains("smollm") && err.contains("qwen2"),
            "{err}"
        );
        c.metadata.insert("tokenizer.ggml.model".into(), s("llama"));
        assert!(matches!(
            GgufTokenizer::from_content(&c),
            Err(TokenizerError::UnsupportedModel(_))
        ));
        let mut c = content("qwen2");
        c.metadata.remove("tokenizer.ggml.merges");
        assert!(matches!(
            GgufTokenizer::from_content(&c),
            Err(TokenizerError::MissingKey("tokenizer.ggml.merges"))
        ));
        let mut c = content("qwen2");
        c.metadata.insert(
            "tokenizer.ggml.merges".into(),
            Value::Array(vec![s("nospace")]),
        );
        assert!(matches!(
            GgufTokenizer::from_content(&c),
            Err(TokenizerError::BadMerge { index: 0, .. })
        ));
        let mut c = content("qwen2");
        c.metadata
            .insert("tokenizer.ggml.eos_token_id".into(), Value::U32(99_999));
        assert!(matches!(
            GgufTokenizer::from_content(&c),
            Err(TokenizerError::BadTokenId { .. })
        ));
        let mut c = content("qwen2");
        c.metadata
            .insert("tokenizer.ggml.pre".into(), Value::U32(3));
        assert!(matches!(
            GgufTokenizer::from_content(&c),
            Err(TokenizerError::WrongType { .. })
        ));
    }

    #[test]
    fn garbage_and_truncated_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.gguf");
        std::fs::write(&garbage, b"this is not a gguf file at all").unwrap();
        assert!(matches!(
            GgufTokenizer::from_gguf_path(&garbage),
            Err(TokenizerError::Header { .. })
        ));
        // Valid magic + version 3, then a tensor count and a metadata count claiming more than exists.
        let truncated = dir.path().join("truncated.gguf");
        let mut bytes = b"GGUF".to_vec();
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&0u64.to_le_bytes());
        bytes.extend_from_slice(&5u64.to_le_bytes());
        bytes.extend_from_slice(&u64::MAX.to_le_bytes()); // key length far beyond the file
        std::fs::write(&truncated, &bytes).unwrap();
        assert!(matches!(
            GgufTokenizer::from_gguf_path(&truncated),
            Err(TokenizerError::Header { .. })
        ));
        let empty = dir.path().join("empty.gguf");
        std::fs::write(&empty, b"").unwrap();
        assert!(matches!(
            GgufTokenizer::from_gguf_path(&empty),
            Err(TokenizerError::Header { .. })
        ));
        let missing = dir.path().join("missing.gguf");
        assert!(matches!(
            GgufTokenizer::from_gguf_path(&missing),
            Err(TokenizerError::Open { .. })
        ));
    }

    #[test]
    fn safe_cuts_only_between_printable_neighbours() {
        let text = "ab\ncd\n\nef\r\ngh \nij\nkl";
        assert_eq!(safe_cuts(text, 1), vec![3, 18]);
        assert!(safe_cuts("no newline here", 1).is_empty());
    }

    #[test]
    fn parallel_count_equals_serial_count() {
        let t = GgufTokenizer::from_content(&content("smollm")).unwrap();
        let line = "hello world  12\n\t x\r\n<|im_end|>\nworld\n  \n";
        let text = line.repeat(PARALLEL_COUNT_MIN_BYTES / line.len() + 10);
        assert!(safe_cuts(&text, PARALLEL_CHUNK_BYTES).len() >= 2);
        assert_eq!(t.count(&text), t.encode_untrusted(&text).len());
    }

    #[test]
    fn is_send_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<GgufTokenizer>();
    }
}
