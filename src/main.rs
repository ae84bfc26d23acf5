//! The `toolsum` binary: parses flags, sets up logging, calls one library entry point per
//! subcommand, prints the whole error chain and picks the exit code.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use toolsum::backend::NarrateRequest;
use toolsum::daemon::cli::out_line;
use toolsum::engine::{Engine, EngineOptions, Sampling};
use toolsum::models;

#[derive(Parser)]
#[command(
    name = "toolsum",
    version,
    about = "Guards LLM agents from huge tool outputs with a local model"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// Engine flags shared by the commands that load a model.
#[derive(clap::Args, Clone, Debug)]
struct EngineArgs {
    /// Model: a .gguf path, a tier (tiny, small, large) or org/repo:file.gguf.
    #[arg(long, env = "TOOLSUM_MODEL")]
    model: Option<String>,
    /// Compute threads (default: cores available to the process).
    #[arg(long, env = "TOOLSUM_THREADS")]
    threads: Option<usize>,
    /// cpu, cuda[:N] (feature cuda) or metal (feature metal).
    #[arg(long, default_value = "cpu", env = "TOOLSUM_DEVICE")]
    device: String,
    /// Keep Q4_1/Q5_0 weights as they are instead of converting them to Q8_0 at load.
    #[arg(long)]
    no_q8: bool,
    /// Tokens per prefill forward pass.
    #[arg(long, default_value_t = toolsum::engine::DEFAULT_PREFILL_CHUNK)]
    prefill_chunk: usize,
    /// KV cache size in tokens (capped by the model's context).
    #[arg(long, default_value_t = toolsum::engine::DEFAULT_MAX_CONTEXT)]
    ctx: usize,
    /// Most tokens drafted per decode step by prompt lookup and checked in one pass
    /// (speculative decoding: same output, fewer steps when the text quotes its input; 0 = off).
    #[arg(long, default_value_t = toolsum::engine::DEFAULT_DRAFT_TOKENS, env = "TOOLSUM_DRAFT_TOKENS")]
    draft_tokens: usize,
    /// KV cache decode steps read: q8 (default: an 8-bit copy, fewer bytes per step at long
    /// contexts; needs AVX-512 VNNI, else f16) or f16 (the cache itself).
    #[arg(long, default_value = "q8", env = "TOOLSUM_KV_DECODE")]
    kv_decode: toolsum::engine::model::KvDecode,
}

impl EngineArgs {
    fn options(&self) -> anyhow::Result<EngineOptions> {
        Ok(EngineOptions {
            model_path: models::resolve(self.model.as_deref())?,
            threads: self.threads,
            device: self.device.clone(),
            convert_to_q8: !self.no_q8,
            prefill_chunk: self.prefill_chunk,
            max_context: self.ctx,
            draft_tokens: self.draft_tokens,
            kv_decode: self.kv_decode,
            ..EngineOptions::default()
        })
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Count the tokens of a file (or stdin) with the model's own tokenizer.
    Count {
        /// Model: a .gguf path, a tier or org/repo:file.gguf (only its header is read).
        #[arg(long, env = "TOOLSUM_MODEL")]
        model: Option<String>,
        /// Print bytes, chars, tokens and tokens per byte as JSON.
        #[arg(long)]
        json: bool,
        /// Input file, or - for stdin.
        #[arg(default_value = "-")]
        file: String,
    },
    /// Run the model once on a system prompt and a user prompt; completion to stdout, timings to stderr.
    Generate {
        #[command(flatten)]
        engine: EngineArgs,
        /// System prompt.
        #[arg(long, default_value = "You are a helpful assistant.")]
        system: String,
        /// File holding the user prompt (- for stdin).
        #[arg(long)]
        prompt_file: String,
        /// Most tokens to generate.
        #[arg(long, default_value_t = 256)]
        max_new_tokens: usize,
        /// Sampling temperature; 0 = greedy (deterministic).
        #[arg(long, default_value_t = 0.0)]
        temperature: f64,
        /// Nucleus sampling threshold (with --temperature > 0).
        #[arg(long, default_value_t = 0.9)]
        top_p: f64,
        /// RNG seed for sampling.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// A Jinja chat template file to use instead of the model's own.
        #[arg(long)]
        chat_template: Option<PathBuf>,
    },
    /// Run the daemon (model loaded once, protocol v1 on a Unix socket).
    Serve(toolsum::daemon::cli::ServeArgs),
    /// Guard one tool result through the daemon (local fallback when it is unavailable).
    Guard(toolsum::daemon::cli::GuardArgs),
    /// An agent's post-tool hook: reads the hook JSON on stdin, prints the agent's replacement
    /// (nothing when the result stays); always exits 0.
    Hook(toolsum::hooks::HookArgs),
    /// Add toolsum's hook to an agent's configuration (idempotent, keeps a backup).
    Install(toolsum::hooks::install::InstallArgs),
    /// Remove toolsum's hook from an agent's configuration.
    Uninstall(toolsum::hooks::install::InstallArgs),
    /// Ask a saved output a new question (the guard's reduction and model, steered by it).
    Ask(toolsum::daemon::cli::AskArgs),
    /// Run an MCP server behind a stdio proxy that adds `_intent` and guards its results.
    Mcp(toolsum::mcp::McpArgs),
    /// Print the daemon's status.
    Status(toolsum::daemon::cli::SocketArgs),
    /// Stop the daemon gracefully.
    Stop(toolsum::daemon::cli::SocketArgs),
    /// Benchmark the corpus through the daemon against head / head+tail cuts.
    Bench(toolsum::bench::cli::BenchArgs),
    /// List, fetch or locate the pinned models.
    Models {
        #[command(subcommand)]
        cmd: ModelsCmd,
    },
}

#[derive(Subcommand)]
enum ModelsCmd {
    /// The pinned tiers and whether each is cached.
    List,
    /// Download, verify and cache tiers (tiny, small, large, all).
    Fetch {
        /// Tiers to fetch.
        #[arg(default_value = "small")]
        tiers: Vec<String>,
    },
    /// Print the cached path of a model spec (fails if not fetched).
    Path {
        /// Tier, path or org/repo:file.gguf.
        spec: Option<String>,
    },
}

fn read_input(file: &str) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    if file == "-" {
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("reading stdin")?;
    } else {
        buf = std::fs::read(file).with_context(|| format!("reading {file}"))?;
    }
    Ok(buf)
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Cmd::Count { model, json, file } => {
            let path = models::resolve(model.as_deref())?;
            let tok = toolsum::tokenizer::GgufTokenizer::from_gguf_path(&path)?;
            let bytes = read_input(&file)?;
            let text = String::from_utf8_lossy(&bytes);
            let tokens = tok.count(&text);
            if json {
                let v = serde_json::json!({
                    "bytes": bytes.len(),
                    "chars": text.chars().count(),
                    "tokens": tokens,
                    "tokens_per_byte": if bytes.is_empty() { 0.0 } else { tokens as f64 / bytes.len() as f64 },
                    "model": path,
                });
                out_line(v)?;
            } else {
                out_line(tokens)?;
            }
        }
        Cmd::Generate {
            engine,
            system,
            prompt_file,
            max_new_tokens,
            temperature,
            top_p,
            seed,
            chat_template,
        } => {
            let mut opts = engine.options()?;
            if temperature > 0.0 {
                opts.sampling = Sampling::TopP {
                    temperature,
                    top_p,
                    seed,
                };
            }
            if let Some(p) = chat_template {
                opts.chat_template = Some(
                    std::fs::read_to_string(&p)
                        .with_context(|| format!("reading {}", p.display()))?,
                );
            }
            let user = String::from_utf8_lossy(&read_input(&prompt_file)?).to_string();
            let mut eng = Engine::load(&opts)?;
            let n = eng.generate(&NarrateRequest {
                system,
                user,
                max_new_tokens,
                deadline: None,
                cancel: Default::default(),
                constraint: None,
            })?;
            out_line(&n.text)?;
            eprintln!(
                "prompt_tokens={} generated_tokens={} prefill_ms={:.0} decode_ms={:.0} prefill_tok_s={:.1} decode_tok_s={:.1} drafts_accepted={}/{} stop={:?}",
                n.prompt_tokens,
                n.generated_tokens,
                n.prefill_ms,
                n.decode_ms,
                (n.prompt_tokens - n.cached_prefix_tokens) as f64 / (n.prefill_ms / 1e3).max(1e-9),
                n.generated_tokens as f64 / (n.decode_ms / 1e3).max(1e-9),
                n.draft_accepted,
                n.draft_proposed,
                n.stop
            );
        }
        Cmd::Models { cmd } => models_cmd(cmd)?,
        Cmd::Serve(a) => toolsum::daemon::cli::serve_cmd(a)?,
        Cmd::Guard(a) => toolsum::daemon::cli::guard_cmd(a)?,
        Cmd::Hook(a) => toolsum::hooks::hook_cmd(a),
        Cmd::Install(a) => toolsum::hooks::install::install_cmd(a, true)?,
        Cmd::Uninstall(a) => toolsum::hooks::install::install_cmd(a, false)?,
        Cmd::Ask(a) => toolsum::daemon::cli::ask_cmd(a)?,
        Cmd::Mcp(a) => toolsum::mcp::mcp_cmd(a)?,
        Cmd::Status(a) => toolsum::daemon::cli::status_cmd(a)?,
        Cmd::Stop(a) => toolsum::daemon::cli::stop_cmd(a)?,
        Cmd::Bench(a) => {
            toolsum::bench::cli::bench_cmd(a)?;
        }
    }
    Ok(())
}

fn models_cmd(cmd: ModelsCmd) -> anyhow::Result<()> {
    let manifest = models::Manifest::load()?;
    match cmd {
        ModelsCmd::List => {
            out_line(format_args!(
                "{:<6} {:<30} {:<6} {:<22} {:>10}  cached",
                "tier", "model", "arch", "quant", "MB"
            ))?;
            for m in &manifest.models {
                let p = models::cached_path(m);
                let def = if m.tier == manifest.default { "*" } else { " " };
                out_line(format_args!(
                    "{:<6} {:<30} {:<6} {:<22} {:>10.1}  {}",
                    format!("{}{def}", m.tier),
                    m.name,
                    m.arch,
                    m.quant,
                    m.bytes as f64 / 1e6,
                    if p.is_file() {
                        p.display().to_string()
                    } else {
                        "no".into()
                    }
                ))?;
            }
        }
        ModelsCmd::Fetch { tiers } => {
            let tiers: Vec<String> = if tiers.iter().any(|t| t == "all") {
                manifest.models.iter().map(|m| m.tier.clone()).collect()
            } else {
                tiers
            };
            for t in tiers {
                let entry = manifest.get(&t).ok_or_else(|| {
                    models::ModelError::UnknownSpec(
                        t.clone(),
                        manifest
                            .models
                            .iter()
                            .map(|m| m.tier.clone())
                            .collect::<Vec<_>>()
                            .join(", "),
                    )
                })?;
                match models::fetch(entry)? {
                    models::FetchOutcome::Cached(p) => out_line(format_args!(
                        "{t}: cached, sha256 verified: {}",
                        p.display()
                    ))?,
                    models::FetchOutcome::Downloaded(p) => out_line(format_args!(
                        "{t}: fetched, sha256 verified: {}",
                        p.display()
                    ))?,
                }
            }
        }
        ModelsCmd::Path { spec } => {
            out_line(models::resolve(spec.as_deref())?.display())?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLSUM_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        // A hook never breaks its agent: bad hook flags print nothing and exit 0.
        Err(e) if std::env::args().nth(1).as_deref() == Some("hook") => {
            eprintln!("toolsum hook: {e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => e.exit(),
    };
    let names = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
    for w in toolsum::config::unknown_env(names) {
        eprintln!("toolsum: warning: {w}");
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // stdout's reader closed early (`toolsum status | head -1`): a normal end.
        Err(e) if toolsum::daemon::cli::is_stdout_closed(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // The whole cause chain, skipping a cause that the message before it already
            // quotes (thiserror messages often embed their source). A cause of several lines
            // keeps them (a daemon that failed to start quotes the end of its log).
            let mut msg = String::new();
            for cause in e.chain() {
                let c = cause.to_string();
                let c = c.trim_end();
                if !msg.contains(c) {
                    if !msg.is_empty() {
                        msg.push_str(": ");
                    }
                    msg.push_str(c);
                }
            }
            eprintln!("toolsum: error: {msg}");
            ExitCode::FAILURE
        }
    }
}
