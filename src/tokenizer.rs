//! A `tokenizers::Tokenizer` built from GGUF metadata (being written).
