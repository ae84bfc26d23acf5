//! Integration tests, compiled as one crate (STYLE.md, tier 2 and 3).
mod daemon;
mod engine;
mod tokenizer;
mod util;
