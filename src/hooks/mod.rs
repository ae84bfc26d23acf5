//! `toolsum hook <agent>`: an agent's post-tool hook. It reads the agent's hook JSON on stdin,
//! guards the tool result, and prints exactly what that agent accepts as a replacement —
//! nothing when the result stays as it is. It always exits 0: on any failure it prints
//! nothing (the agent's original result stands) and logs why, to stderr and to
//! [`log_path`].
//!
//! | agent | event | replacement printed |
//! |---|---|---|
//! | Claude Code ([`claude`]) | `PostToolUse` | `hookSpecificOutput.updatedToolOutput` in the tool's own shape |
//! | Codex CLI ([`codex`]) | `PostToolUse` | `{"decision":"block","reason":TEXT}`: the reason is what the model reads |
//! | Gemini CLI ([`gemini`]) | `AfterTool` | `{"decision":"deny","reason":TEXT}`: read as `Tool result blocked: TEXT` |
//! | Cursor ([`cursor`]) | `afterMCPExecution` | `{"updated_mcp_tool_output":{"content":[…]}}` (MCP tools only) |
//! | OpenCode ([`opencode`]) | plugin `tool.execute.after` | `{"output":TEXT}` for the plugin to put in `output.output` |
//!
//! Every agent's payload becomes a [`ToolCall`] plus the text to guard; [`guard_call`] guards it
//! through the daemon (or locally) with the session dir `<project>/.toolsum/<session id>/`, and
//! the pointer in the text opens from the agent's `cwd`.

pub mod claude;
pub mod codex;
pub mod cursor;
pub mod gemini;
pub mod install;
pub mod opencode;
pub mod transcript;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use crate::config::{Config, ConfigLayer};
use crate::daemon::client::{guard_resilient, GuardCliOptions, GuardOutcome, Input};
use crate::guard::{session, GuardResponse, ResultKind};

/// Largest hook payload read from stdin (bytes): the daemon's `max_request_bytes` default.
pub const MAX_PAYLOAD_BYTES: usize = crate::config::DEFAULT_MAX_REQUEST_BYTES;

/// Longest intent taken from a command or the arguments (characters).
pub const MAX_INTENT_CHARS: usize = 500;

/// The agents `toolsum hook` and `toolsum install` know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code (`PostToolUse`).
    ClaudeCode,
    /// OpenAI Codex CLI (`PostToolUse`).
    Codex,
    /// Google Gemini CLI (`AfterTool`).
    Gemini,
    /// Cursor (`afterMCPExecution`).
    Cursor,
    /// OpenCode (the plugin's `tool.execute.after`).
    Opencode,
}

impl Agent {
    /// The name on the command line (`claude-code`, `codex`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
            Agent::Opencode => "opencode",
        }
    }
}

/// `toolsum hook <agent>`.
#[derive(Debug, Clone, clap::Args)]
pub struct HookArgs {
    /// The agent whose hook payload arrives on stdin.
    #[arg(value_enum)]
    pub agent: Agent,
    /// Settings (flags beat TOOLSUM_* env beat the config file).
    #[command(flatten)]
    pub config: ConfigLayer,
    /// Session dir to save into (default: `<project>/.toolsum/<session id>/`).
    #[arg(long)]
    pub session_dir: Option<PathBuf>,
    /// Do not start a daemon when none answers (guard locally instead).
    #[arg(long)]
    pub no_spawn: bool,
}

/// One tool call as every agent's payload reduces to it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name as the agent gives it (`Bash`, `mcp__github__search`, ...).
    pub tool: String,
    /// The tool's arguments (`_intent` removed).
    pub args: Option<Value>,
    /// What the call is for ([`call_intent`]; Cursor's: [`intent_of`]).
    pub intent: Option<String>,
    /// The agent's working directory (absolute); pointers open from here.
    pub cwd: PathBuf,
    /// The project root (session dirs go under `<project>/.toolsum/`).
    pub project: PathBuf,
    /// The agent's session (conversation) id.
    pub session_id: String,
}

/// What a hook run did, for the log.
#[derive(Debug, Default)]
pub struct HookReport {
    /// The tool name, if the payload had one.
    pub tool: String,
    /// Result kinds of the guarded parts (`passthrough`, `summary`, ...).
    pub kinds: Vec<String>,
    /// Bytes of tool output guarded.
    pub bytes_in: usize,
    /// Bytes printed.
    pub bytes_out: usize,
    /// Faults worked around, and why nothing was printed when nothing was.
    pub notes: Vec<String>,
}

/// Context every agent module needs to guard its payload's parts.
pub struct HookContext {
    /// Effective configuration.
    pub config: Config,
    /// `--session-dir`, overriding the default.
    pub session_dir: Option<PathBuf>,
    /// `--no-spawn`.
    pub no_spawn: bool,
    /// What happened, for the log.
    pub report: HookReport,
    /// The text the agent's module adds around the result it prints (Gemini's and Codex's
    /// first line): its tokens are left out of the cap ([`guard_call`]). Empty for none.
    pub frame: String,
}

impl HookContext {
    /// Guards one piece of tool output of `call` ([`guard_call`]), recording it in the report.
    pub fn guard(&mut self, call: &ToolCall, content: Vec<u8>) -> GuardResponse {
        self.report.bytes_in += content.len();
        let out = guard_call(
            &self.config,
            call,
            content,
            self.session_dir.clone(),
            self.no_spawn,
            &self.frame,
        );
        self.report.notes.extend(out.faults);
        let kind = serde_json::to_value(out.response.kind)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        self.report.kinds.push(kind);
        out.response
    }
}

/// True when the guard changed the result (anything but a pass-through of the same text).
pub fn changed(r: &GuardResponse, original: &[u8]) -> bool {
    r.kind != ResultKind::Passthrough || r.text.as_bytes() != original
}

/// Guards `content` of `call`: the session dir is `session_dir`, else
/// `<project>/.toolsum/<session id>/` ([`session::hook_session_dir`]); the pointers in the text
/// open from `call.cwd`. Never fails ([`guard_resilient`]). The library entry point for any
/// agent integration (hooks, the MCP proxy). `frame` is what the caller prints around the
/// result; with the session dir (a relocated pointer names it) its tokens are left out of
/// the cap, so what the agent reads stays within it.
pub fn guard_call(
    config: &Config,
    call: &ToolCall,
    content: Vec<u8>,
    session_dir: Option<PathBuf>,
    no_spawn: bool,
    frame: &str,
) -> GuardOutcome {
    let dir =
        session_dir.unwrap_or_else(|| session::hook_session_dir(&call.project, &call.session_id));
    let frame = format!("{frame}\n\n{}", dir.display());
    guard_resilient(GuardCliOptions {
        frame,
        config: config.clone(),
        tool: call.tool.clone(),
        args: call.args.clone(),
        intent: call.intent.clone(),
        session_dir: Some(dir),
        input: Input::Bytes(content),
        no_spawn,
        keep_binary_inline: false,
        cwd: Some(call.cwd.clone()),
    })
}

/// The intent of a call: [`stated_intent`] (`_intent`, WebFetch's `prompt`, a shell call's
/// `description`), else the command (`command`, `cmd`; an argv array joined by spaces), else the
/// arguments as compact JSON; at most [`MAX_INTENT_CHARS`] characters.
pub fn intent_of(args: &Value) -> Option<String> {
    let s = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    let argv = |k: &str| {
        args.get(k).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    let picked = stated_intent(args)
        .or_else(|| s("command"))
        .or_else(|| argv("command"))
        .or_else(|| s("cmd"))
        .or_else(|| match args {
            Value::Null => None,
            Value::Object(o) if o.is_empty() => None,
            v => Some(v.to_string()),
        })?;
    Some(picked.chars().take(MAX_INTENT_CHARS).collect())
}

/// What the call says it is for, in words: `_intent`, else `prompt` (Claude Code's WebFetch:
/// what to find on the page), else `description` (Claude Code's and Gemini CLI's shell
/// command). `None` when it says none: [`intent_of`] then falls back on the command or the
/// arguments, and a hook first on the user's last request ([`call_intent`]).
pub fn stated_intent(args: &Value) -> Option<String> {
    own_question(args).or_else(|| string_arg(args, "description"))
}

/// The question a call asks itself: `_intent`, else `prompt` (Claude Code's WebFetch).
fn own_question(args: &Value) -> Option<String> {
    ["_intent", "prompt"]
        .into_iter()
        .find_map(|k| string_arg(args, k))
}

/// The trimmed, non-empty string argument `k`, at most [`MAX_INTENT_CHARS`] characters.
fn string_arg(args: &Value, k: &str) -> Option<String> {
    args.get(k)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.chars().take(MAX_INTENT_CHARS).collect())
}

/// The intent of a hook's call: the question the call asks itself (`_intent`, WebFetch's
/// `prompt`); else the user's last request from the agent's transcript
/// ([`transcript::last_user_request`]) followed by what [`intent_of`] falls back on in
/// brackets: the command's `description` (`why does the build fail? (Build the crate)`), else
/// the command (`why does the build fail? (cargo build)`); else that alone. A `description`
/// says what the command does (`run it`, `List files`), not what the user wants from its
/// output: alone it had steered away from the facts asked for (trial of session 56). At most
/// [`MAX_INTENT_CHARS`] characters.
pub fn call_intent(payload: &Value, args: &Value) -> Option<String> {
    if let Some(s) = own_question(args) {
        return Some(s);
    }
    let fallback = intent_of(args);
    // The request leaves a fifth of the characters to the command it brackets.
    let Some(asked) = transcript::last_user_request(payload, MAX_INTENT_CHARS * 4 / 5) else {
        return fallback;
    };
    let both = match fallback {
        Some(f) => format!("{asked} ({f})"),
        None => asked,
    };
    Some(both.chars().take(MAX_INTENT_CHARS).collect())
}

/// `args` without its `_intent` key (what the tool itself was called with).
pub fn strip_intent(args: &Value) -> Value {
    let mut a = args.clone();
    if let Some(o) = a.as_object_mut() {
        o.remove("_intent");
    }
    a
}

/// The tool-call fields shared by the agents whose payloads carry `tool_name`, `tool_input`,
/// `cwd` and `session_id` (Claude Code, Codex, Gemini). `project_env` names the agent's project
/// root variable (`CLAUDE_PROJECT_DIR`, `GEMINI_PROJECT_DIR`); the project is that, else `cwd`.
pub fn common_call(payload: &Value, project_env: Option<&str>) -> Result<ToolCall, String> {
    let tool = payload
        .get("tool_name")
        .and_then(Value::as_str)
        .ok_or("no tool_name")?
        .to_string();
    let input = payload.get("tool_input").cloned().unwrap_or(Value::Null);
    let input = match input {
        // Some agents send the arguments as a JSON string.
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        v => v,
    };
    let cwd = payload
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|c| Path::new(c).is_absolute())
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .ok_or("no cwd")?;
    let project = project_env
        .and_then(std::env::var_os)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_dir())
        .unwrap_or_else(|| cwd.clone());
    let session_id = payload
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Ok(ToolCall {
        intent: call_intent(payload, &input),
        args: Some(strip_intent(&input)),
        tool,
        cwd,
        project,
        session_id,
    })
}

/// Text of MCP content blocks to guard: the texts joined by newlines when every block is
/// text (so the summary sees the output, not a JSON wrapper); otherwise the blocks as JSON, so
/// that base64 images, audio and blobs inside are saved decoded by the guard.
pub fn mcp_blocks_input(blocks: &[Value]) -> Vec<u8> {
    let all_text = blocks
        .iter()
        .all(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    if all_text {
        blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes()
    } else {
        serde_json::to_vec(blocks).unwrap_or_default()
    }
}

/// The text an agent reads for a guarded result whose input was content blocks as JSON
/// ([`mcp_blocks_input`]): the guard left the blocks as JSON with each base64 payload replaced
/// by its descriptor (`[image/png 200x120, …, saved to …]`); this turns them back into lines:
/// a text block's text, a media block's descriptor (`data`, or Gemini's `inlineData.data`).
/// Any other text (a summary, a preview) is returned as it is.
pub fn blocks_to_text(guarded: &str) -> String {
    let Ok(Value::Array(blocks)) = serde_json::from_str::<Value>(guarded) else {
        return guarded.to_string();
    };
    blocks
        .iter()
        .map(|b| {
            let s = |v: Option<&Value>| v.and_then(Value::as_str).map(String::from);
            s(b.get("text"))
                .or_else(|| s(b.get("data")))
                .or_else(|| s(b.pointer("/inlineData/data")))
                .or_else(|| s(b.pointer("/resource/blob")))
                .or_else(|| s(b.pointer("/resource/text")))
                .unwrap_or_else(|| b.to_string())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The MCP content blocks of a result value: an array of blocks, or an object's `content`.
pub fn mcp_blocks(v: &Value) -> Option<&Vec<Value>> {
    match v {
        Value::Array(a) if a.iter().all(|b| b.get("type").is_some()) => Some(a),
        Value::Object(o) => o.get("content").and_then(Value::as_array),
        _ => None,
    }
}

/// Where hook runs are logged: `<state dir>/hook.log` ([`session::state_dir`]).
pub fn log_path() -> PathBuf {
    session::state_dir().join("hook.log")
}

fn log_line(agent: Agent, report: &HookReport, ms: f64) {
    let line = format!(
        "{} {} tool={:?} kinds={} in={}B out={}B {:.1}ms{}",
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ"),
        agent.name(),
        report.tool,
        report.kinds.join(","),
        report.bytes_in,
        report.bytes_out,
        ms,
        if report.notes.is_empty() {
            String::new()
        } else {
            format!(" notes: {}", report.notes.join(" | "))
        }
    );
    for n in &report.notes {
        eprintln!("toolsum hook {}: {n}", agent.name());
    }
    let path = log_path();
    if let Some(dir) = path.parent() {
        use std::os::unix::fs::DirBuilderExt;
        let _ = std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(dir);
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = writeln!(f, "{line}");
    }
}

/// Turns one payload into what `agent` accepts: `Ok(Some(json))` to print, `Ok(None)` when
/// the result stays as it is, `Err(why)` for a payload it cannot use (nothing is printed).
pub fn respond(
    agent: Agent,
    payload: &Value,
    ctx: &mut HookContext,
) -> Result<Option<Value>, String> {
    match agent {
        Agent::ClaudeCode => claude::respond(payload, ctx),
        Agent::Codex => codex::respond(payload, ctx),
        Agent::Gemini => gemini::respond(payload, ctx),
        Agent::Cursor => cursor::respond(payload, ctx),
        Agent::Opencode => opencode::respond(payload, ctx),
    }
}

/// Runs `toolsum hook <agent>`: stdin → [`respond`] → stdout. Never fails and never panics out:
/// whatever goes wrong is logged and nothing is printed.
pub fn hook_cmd(a: HookArgs) {
    let started = Instant::now();
    let agent = a.agent;
    let mut report = HookReport::default();
    let printed =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_hook(a, &mut report)));
    match printed {
        Ok(Ok(Some(out))) => {
            let mut s = out.to_string();
            s.push('\n');
            let mut stdout = std::io::stdout().lock();
            if stdout
                .write_all(s.as_bytes())
                .and_then(|()| stdout.flush())
                .is_ok()
            {
                report.bytes_out = s.len();
            } else {
                report
                    .notes
                    .push("stdout closed before the answer was written".into());
            }
        }
        Ok(Ok(None)) => {}
        Ok(Err(why)) => report.notes.push(format!("nothing printed: {why}")),
        Err(_) => report
            .notes
            .push("nothing printed: the hook panicked (a bug)".into()),
    }
    log_line(agent, &report, started.elapsed().as_secs_f64() * 1e3);
}

/// `json` with each `\uD800`-`\uDFFF` escape that is not half of a high-low pair written
/// `\ufffd`, and how many were; an escaped backslash before a `u` (`\\u`) is left alone.
pub(crate) fn lone_surrogates_replaced(json: &str) -> (String, usize) {
    let b = json.as_bytes();
    let hex = |at: usize| -> Option<u32> {
        let h = json.get(at..at + 4)?;
        u32::from_str_radix(h, 16).ok()
    };
    // The code unit of a `\uXXXX` escape starting at byte `at`, if one starts there.
    let unit = |at: usize| -> Option<u32> {
        (b.get(at) == Some(&b'\\') && b.get(at + 1) == Some(&b'u'))
            .then(|| hex(at + 2))
            .flatten()
    };
    let mut out = String::with_capacity(json.len());
    let mut n = 0;
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(u) = unit(i) else {
            // Another escape (`\\`, `\n`): it and its character.
            i += 2;
            continue;
        };
        if (0xD800..0xDC00).contains(&u)
            && unit(i + 6).is_some_and(|l| (0xDC00..0xE000).contains(&l))
        {
            i += 12;
        } else if (0xD800..0xE000).contains(&u) {
            out.push_str(&json[last..i]);
            out.push_str("\\ufffd");
            n += 1;
            i += 6;
            last = i;
        } else {
            i += 6;
        }
    }
    out.push_str(&json[last..]);
    (out, n)
}

fn run_hook(a: HookArgs, report: &mut HookReport) -> Result<Option<Value>, String> {
    let (config, errors) = Config::load_lenient(a.config);
    let mut raw = Vec::new();
    std::io::stdin()
        .take(MAX_PAYLOAD_BYTES as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(|e| format!("reading stdin: {e}"))?;
    if raw.len() > MAX_PAYLOAD_BYTES {
        return Err(format!("payload over {MAX_PAYLOAD_BYTES} bytes"));
    }
    let payload: Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        // Two flaws a payload may carry and still be read, alone or together:
        // - raw bytes that are not UTF-8 in a string (a tool's Latin-1 output pasted into the
        //   JSON unescaped): each bad sequence is read as U+FFFD;
        // - a lone UTF-16 surrogate escaped in a string (`\udcff`, or a high half `\ud83d`
        //   with no low half after it): valid JSON as JavaScript's `JSON.stringify` writes it
        //   (a string cut between the halves of a pair), but no Unicode text; serde_json
        //   refuses it, with "lone leading surrogate" or "unexpected end of hex escape"
        //   (trials of sessions 51 and 53: such an output was left unguarded). Each becomes
        //   U+FFFD.
        // The output is still guarded (and saved as read), and a note says why it differs.
        Err(e) => {
            let text = String::from_utf8_lossy(&raw);
            let bad = if std::str::from_utf8(&raw).is_err() {
                text.matches('\u{FFFD}').count()
            } else {
                0
            };
            let (mended, lone) = lone_surrogates_replaced(&text);
            if bad == 0 && lone == 0 {
                return Err(format!("the payload is not JSON: {e}"));
            }
            let v = serde_json::from_str(&mended).map_err(|e2| {
                format!(
                    "the payload is not JSON: {e}; read with U+FFFD for {bad} invalid UTF-8 \
                     sequence(s) and {lone} lone surrogate escape(s): {e2}"
                )
            })?;
            if bad > 0 {
                report.notes.push(format!(
                    "the payload is not valid UTF-8: {bad} invalid byte sequence(s) read as U+FFFD"
                ));
            }
            if lone > 0 {
                report.notes.push(format!(
                    "the payload holds {lone} lone UTF-16 surrogate escape(s), read as U+FFFD"
                ));
            }
            v
        }
    };
    report.tool = payload
        .get("tool_name")
        .or_else(|| payload.get("tool"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut ctx = HookContext {
        config,
        session_dir: a.session_dir,
        no_spawn: a.no_spawn,
        report: HookReport::default(),
        frame: String::new(),
    };
    ctx.report.notes.extend(
        errors
            .into_iter()
            .map(|e| format!("{e} (ignored; its default applies)")),
    );
    let r = respond(a.agent, &payload, &mut ctx);
    report.kinds = std::mem::take(&mut ctx.report.kinds);
    report.bytes_in = ctx.report.bytes_in;
    report.notes.append(&mut ctx.report.notes);
    r
}

#[cfg(test)]
mod tests {
    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let json = r#"{"a":"x\udcff y \ud83d\ude00 \\udcff \ud800"}"#;
        let (mended, n) = super::lone_surrogates_replaced(json);
        assert_eq!(n, 2);
        assert_eq!(mended, r#"{"a":"x\ufffd y \ud83d\ude00 \\udcff \ufffd"}"#);
        let v: serde_json::Value = serde_json::from_str(&mended).unwrap();
        assert_eq!(v["a"], "x\u{FFFD} y \u{1F600} \\udcff \u{FFFD}");
        // A high half ending the string, or before a plain character (serde_json: "unexpected
        // end of hex escape").
        let json = r#"{"a":"x\ud83d", "b":"\ud83dy"}"#;
        assert!(serde_json::from_str::<serde_json::Value>(json).is_err());
        let (mended, n) = super::lone_surrogates_replaced(json);
        assert_eq!(n, 2);
        let v: serde_json::Value = serde_json::from_str(&mended).unwrap();
        assert_eq!(v["a"], "x\u{FFFD}");
        assert_eq!(v["b"], "\u{FFFD}y");
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_without_a_stated_intent_takes_the_users_last_request() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("rollout.jsonl");
        std::fs::write(
            &t,
            format!(
                "{}\n",
                json!({"type":"event_msg","payload":{"type":"user_message","message":"why does the build fail?"}})
            ),
        )
        .unwrap();
        let payload = json!({"transcript_path": t});
        assert_eq!(
            call_intent(&payload, &json!({"command": "cargo build"})).as_deref(),
            Some("why does the build fail? (cargo build)")
        );
        // A command's description goes in the brackets, after the request.
        assert_eq!(
            call_intent(
                &payload,
                &json!({"command": "cargo build", "description": "Build it"})
            )
            .as_deref(),
            Some("why does the build fail? (Build it)")
        );
        // WebFetch's prompt is the call's own question.
        assert_eq!(
            call_intent(
                &payload,
                &json!({"url": "https://x", "prompt": "which versions are listed"})
            )
            .as_deref(),
            Some("which versions are listed")
        );
        // A stated intent wins; without a transcript the command stands alone.
        assert_eq!(
            call_intent(
                &payload,
                &json!({"command": "make", "_intent": "which target"})
            )
            .as_deref(),
            Some("which target")
        );
        assert_eq!(
            call_intent(
                &json!({"transcript_path": null}),
                &json!({"command": "make"})
            )
            .as_deref(),
            Some("make")
        );
    }

    #[test]
    fn intent_comes_from_the_call() {
        assert_eq!(
            intent_of(&json!({"_intent": "why did CI fail", "command": "make"})).as_deref(),
            Some("why did CI fail")
        );
        assert_eq!(
            intent_of(&json!({"command": "cargo test", "description": "Run the tests"})).as_deref(),
            Some("Run the tests")
        );
        assert_eq!(
            intent_of(&json!({"command": ["bash", "-lc", "ls"]})).as_deref(),
            Some("bash -lc ls")
        );
        assert_eq!(
            intent_of(&json!({"query": "select 1"})).as_deref(),
            Some(r#"{"query":"select 1"}"#)
        );
        assert_eq!(intent_of(&json!({})), None);
        let long = "x".repeat(2_000);
        assert_eq!(
            intent_of(&json!({ "command": long })).unwrap().len(),
            MAX_INTENT_CHARS
        );
        assert_eq!(
            strip_intent(&json!({"_intent": "i", "path": "/a"})),
            json!({"path": "/a"})
        );
    }

    #[test]
    fn mcp_text_blocks_are_guarded_as_text() {
        let b = vec![
            json!({"type": "text", "text": "line 1"}),
            json!({"type": "text", "text": "line 2"}),
        ];
        assert_eq!(mcp_blocks_input(&b), b"line 1\nline 2");
        let b = vec![
            json!({"type": "text", "text": "shot"}),
            json!({"type": "image", "data": "iVBOR", "mimeType": "image/png"}),
        ];
        let v: Value = serde_json::from_slice(&mcp_blocks_input(&b)).unwrap();
        assert_eq!(v[1]["type"], "image");
        assert!(mcp_blocks(&json!({"content": b})).is_some());
        let guarded = r#"[{"type":"text","text":"shot"},{"type":"image","data":"[image/png 2x2, saved to long_responses/a.png]"},{"inlineData":{"data":"[audio/wav]"}}]"#;
        assert_eq!(
            blocks_to_text(guarded),
            "shot\n[image/png 2x2, saved to long_responses/a.png]\n[audio/wav]"
        );
        assert_eq!(blocks_to_text("Status: ok"), "Status: ok");
        assert!(mcp_blocks(&json!("plain")).is_none());
    }
}
