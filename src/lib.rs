//! toolsum: guards LLM coding agents from huge tool outputs.
//!
//! A tool result under the token limit passes through unchanged; a larger one is saved under
//! `<session>/long_responses/`, reduced by structure, narrated by a small local GGUF model and
//! returned as a short synthetic tool result that points at the saved file.
//!
//! Layers, one module each (see README.md):
//! - [`models`]: the pinned model manifest, fetching/verifying weights, resolving a model spec to a file.
//! - [`tokenizer`]: a `tokenizers::Tokenizer` built from a GGUF's own `tokenizer.ggml.*` metadata.
//! - [`engine`]: the decoder-only transformer on candle, KV cache, prefix snapshot, chat template, generation.
//! - [`guard`]: the guard pipeline (binary detection, save, count, pass-through, reduce, summarize, preview).
//! - [`bench`]: the benchmark harness (`toolsum bench`): corpus through toolsum and baselines, scored.
//! - [`daemon`]: protocol v1 over a Unix socket, the server, the model-owner thread and the client.
//! - [`mcp`]: `toolsum mcp`, a stdio MCP proxy that adds `_intent` and guards tool results.
//! - [`remote`]: the remote backend: narration by an OpenAI-compatible server (vLLM, llama-server).
#![deny(missing_docs)]

pub mod backend;
pub mod bench;
pub mod config;
pub mod daemon;
pub mod engine;
pub mod guard;
pub mod hooks;
pub mod mcp;
pub mod models;
pub mod remote;
pub mod tokenizer;
