//! Codex CLI's `PostToolUse` hook.
//!
//! Payload (stdin; `codex-rs/hooks/schema/generated/post-tool-use.command.input.schema.json` of
//! openai/codex, and Codex CLI 0.169.0): `session_id`, `turn_id`, `transcript_path`, `cwd`,
//! `hook_event_name`, `model`, `permission_mode`, `tool_name` (`Bash` for shell commands,
//! `apply_patch`, `mcp__<server>__<tool>`), `tool_input` (`{"command": ...}` for shell),
//! `tool_use_id` and `tool_response`: a string in some versions, an object in others (handled
//! both: a string, MCP content blocks, `stdout`/`stderr`, `output`, else its JSON).
//!
//! Codex has no field that replaces a tool output (0.169.0 rejects `updatedMCPToolOutput` as
//! unsupported), but `{"decision":"block","reason":TEXT}` makes TEXT the tool output the model
//! reads (`PostToolUseHookOutcome::replacement_text`; the turn goes on). So that is the
//! replacement.

use serde_json::{json, Value};

use super::{blocks_to_text, changed, common_call, mcp_blocks, mcp_blocks_input, HookContext};

/// The text of a Codex `tool_response` (see the module docs).
pub fn response_text(v: &Value) -> Vec<u8> {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    match v {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Null => Vec::new(),
        _ => {
            if let Some(blocks) = mcp_blocks(v) {
                return mcp_blocks_input(blocks);
            }
            if let Some(out) = s("stdout") {
                let mut t = out.to_string();
                if let Some(err) = s("stderr").filter(|e| !e.is_empty()) {
                    if !t.is_empty() && !t.ends_with('\n') {
                        t.push('\n');
                    }
                    t.push_str(err);
                }
                return t.into_bytes();
            }
            for k in ["output", "formatted_output", "aggregated_output", "text"] {
                if let Some(t) = s(k) {
                    return t.as_bytes().to_vec();
                }
            }
            serde_json::to_vec(v).unwrap_or_default()
        }
    }
}

/// The replacement for one payload, or `None` when the result stays.
///
/// # Errors
/// A payload of another event or without `tool_name`.
pub fn respond(payload: &Value, ctx: &mut HookContext) -> Result<Option<Value>, String> {
    let event = payload.get("hook_event_name").and_then(Value::as_str);
    if event.is_some_and(|e| e != "PostToolUse") {
        return Err(format!("not a PostToolUse payload: {event:?}"));
    }
    let call = common_call(payload, None)?;
    let text = response_text(payload.get("tool_response").unwrap_or(&Value::Null));
    if text.is_empty() {
        // Nothing to guard; the log says so (trial of session 50: `{"tool_name":"Bash"}`
        // left a log line with no reason).
        let why = if payload.get("tool_response").is_some() {
            "an empty tool_response"
        } else {
            "no tool_response"
        };
        ctx.report.notes.push(format!("nothing to guard: {why}"));
        return Ok(None);
    }
    // What the reason opens with is counted in the cap, whichever line it is.
    let line = exit_line(payload.get("tool_response").unwrap_or(&Value::Null))
        .unwrap_or_else(|| REPLACED.to_string());
    ctx.frame = line.clone();
    let r = ctx.guard(&call, text.clone());
    if !changed(&r, &text) {
        return Ok(None);
    }
    let summary = blocks_to_text(&r.text);
    // The model reads the reason in place of the output: it opens saying so, with the
    // command's failure when the response reports one.
    let reason = format!("{line}\n\n{summary}");
    Ok(Some(json!({"decision": "block", "reason": reason})))
}

/// What the reason opens with when the response reports no failure: the output was replaced,
/// not the command refused (a string `tool_response` carries no exit code).
const REPLACED: &str =
    "toolsum saved this command's long output and replaced it with the summary below.";

/// The line that keeps a failed command's status when its output is replaced: the exit code a
/// `tool_response` object reports (`exit_code`, `exitCode`), when it is not 0. The summary is
/// of the output alone, which may not say the command failed.
pub fn exit_line(resp: &Value) -> Option<String> {
    let code = ["exit_code", "exitCode"]
        .iter()
        .find_map(|k| resp.get(*k).and_then(Value::as_i64))?;
    (code != 0).then(|| {
        format!(
            "The command exited with code {code}; toolsum saved its long output and replaced it \
             with the summary below."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_commands_exit_code_is_kept() {
        let line = exit_line(&json!({"exit_code": 1, "stdout": "…"})).unwrap();
        assert!(
            line.starts_with("The command exited with code 1;"),
            "{line}"
        );
        assert!(exit_line(&json!({"exitCode": 101}))
            .unwrap()
            .contains("code 101"));
        assert_eq!(exit_line(&json!({"exit_code": 0, "stdout": "ok"})), None);
        assert_eq!(exit_line(&json!("plain output")), None);
    }
}
