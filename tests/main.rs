//! Integration tests, compiled as one crate (STYLE.md, tier 2 and 3).
mod bench;
mod daemon;
mod encoding;
mod engine;
mod faults;
mod hooks;
mod install;
mod mcp;
mod remote;
mod selection;
mod tokenizer;
mod util;
