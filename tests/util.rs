//! Shared helpers for integration tests: model paths, temp dirs, the built binary.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Path of a pinned model tier in the user's cache (`tiny`, `small`), or a loud panic that says
/// which command fetches it.
pub fn model_path(tier: &str) -> PathBuf {
    let file = match tier {
        "tiny" => "SmolLM2-135M-Instruct.Q4_1.gguf",
        "small" => "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        other => panic!("unknown tier {other}"),
    };
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs::home_dir().expect("home dir").join(".cache"))
        .join("toolsum/models");
    let p = dir.join(file);
    assert!(
        p.exists(),
        "model {tier} missing at {}: run `scripts/fetch-models.sh {tier}` first",
        p.display()
    );
    p
}

/// Path of the built `toolsum` binary (cargo sets this for integration tests).
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolsum"))
}

/// The shared corpus directory (`../shared/corpus` beside the checkout, or `TOOLSUM_CORPUS`).
pub fn corpus_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("TOOLSUM_CORPUS") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// Runs `toolsum guard --json --no-spawn --tool TOOL` against `socket` with the tiny model for
/// its fallback, `input` on stdin and `extra` flags; returns the process output.
pub fn run_guard(
    socket: &Path,
    session: &Path,
    tool: &str,
    input: Vec<u8>,
    extra: &[&str],
) -> Output {
    let mut child = Command::new(bin())
        .args(["guard", "--json", "--no-spawn", "--tool", tool, "--socket"])
        .arg(socket)
        .arg("--session-dir")
        .arg(session)
        .arg("--model")
        .arg(model_path("tiny"))
        .args(extra)
        .env_remove("TOOLSUM_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Written from a thread so a large input cannot deadlock against a full stdout pipe.
    let w = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    w.join().unwrap();
    out
}
