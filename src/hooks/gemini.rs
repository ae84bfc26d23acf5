//! Gemini CLI's `AfterTool` hook.
//!
//! Payload (stdin; `docs/hooks/reference.md` of google-gemini/gemini-cli at 0.56.0-nightly,
//! commit 5411f113): `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`,
//! `tool_name` (`run_shell_command`, `read_file`, ..., MCP tools `mcp_<server>_<tool>`),
//! `tool_input`, `tool_response` `{llmContent, returnDisplay, error}` (`llmContent`: a string, a
//! part `{text}` / `{inlineData}`, or a list of parts); `GEMINI_PROJECT_DIR` in the environment.
//!
//! The only way to replace a result is `{"decision":"deny","reason":TEXT}`: the model then reads
//! `Tool result blocked: TEXT` as an error result (`packages/core/src/core/coreToolHookTriggers.ts`;
//! `additionalContext` only appends). So TEXT starts by saying the output was saved, not lost.

use serde_json::{json, Value};

use super::{blocks_to_text, changed, common_call, HookContext};

/// First line of the reason: the model reads it after `Tool result blocked: `.
pub const PREFACE: &str =
    "not an error: toolsum saved this long tool output and replaced it with the summary below.";

/// The text of Gemini's `llmContent` to guard: a string as it is; parts that are all text
/// joined by newlines; parts with inline data (images, audio) as JSON, so the guard saves them
/// decoded.
pub fn llm_content_text(v: &Value) -> Vec<u8> {
    let parts: Vec<&Value> = match v {
        Value::String(s) => return s.as_bytes().to_vec(),
        Value::Array(a) => a.iter().collect(),
        Value::Null => return Vec::new(),
        other => vec![other],
    };
    let texts: Option<Vec<&str>> = parts
        .iter()
        .map(|p| p.as_str().or_else(|| p.get("text").and_then(Value::as_str)))
        .collect();
    match texts {
        Some(t) => t.join("\n").into_bytes(),
        None => serde_json::to_vec(&parts).unwrap_or_default(),
    }
}

/// The replacement for one payload, or `None` when the result stays.
///
/// # Errors
/// A payload of another event or without `tool_name`.
pub fn respond(payload: &Value, ctx: &mut HookContext) -> Result<Option<Value>, String> {
    let event = payload.get("hook_event_name").and_then(Value::as_str);
    if event.is_some_and(|e| e != "AfterTool") {
        return Err(format!("not an AfterTool payload: {event:?}"));
    }
    let call = common_call(payload, Some("GEMINI_PROJECT_DIR"))?;
    let resp = payload.get("tool_response").ok_or("no tool_response")?;
    let content = resp.get("llmContent").unwrap_or(resp);
    let text = llm_content_text(content);
    if text.is_empty() {
        return Ok(None);
    }
    ctx.frame = preface(resp);
    let r = ctx.guard(&call, text.clone());
    if !changed(&r, &text) {
        return Ok(None);
    }
    Ok(Some(json!({
        "decision": "deny",
        "reason": format!("{}\n\n{}", preface(resp), blocks_to_text(&r.text)),
    })))
}

/// Most characters of the tool's error message quoted in [`preface`]'s line.
const MAX_ERROR_CHARS: usize = 300;

/// The reason's first line: [`PREFACE`], or, when the tool reported an error (`error`: an
/// object with a `message`, or a string), that error, which the summary of the output alone
/// may not say (`Command exited with code 101`).
pub fn preface(resp: &Value) -> String {
    let error = resp.get("error").filter(|e| !e.is_null());
    let message = error.map(|e| {
        e.get("message")
            .and_then(Value::as_str)
            .or_else(|| e.as_str())
            .map_or_else(|| e.to_string(), str::to_string)
    });
    // A long error (a stack trace as the message) is the output's to show, not this line's: the
    // line stays short, as its tokens come out of the answer's cap.
    let message = message.map(|m| {
        if m.chars().count() > MAX_ERROR_CHARS {
            let head: String = m.chars().take(MAX_ERROR_CHARS).collect();
            format!("{head}…")
        } else {
            m
        }
    });
    match message {
        Some(m) => format!(
            "the tool reported an error ({m}); toolsum saved its long output and replaced it \
             with the summary below."
        ),
        None => PREFACE.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_error_is_clipped_in_the_first_line() {
        let long = "x".repeat(5_000);
        let p = preface(&json!({"error": {"message": long}}));
        assert!(p.chars().count() < MAX_ERROR_CHARS + 120, "{}", p.len());
        assert!(p.starts_with("the tool reported an error (xxx"), "{p}");
        assert!(p.contains("…); toolsum saved"), "{p}");
    }

    #[test]
    fn a_reported_error_is_kept_in_the_reason() {
        let p = preface(&json!({
            "llmContent": "…",
            "error": {"message": "Command exited with code 101"}
        }));
        assert!(
            p.starts_with("the tool reported an error (Command exited with code 101);"),
            "{p}"
        );
        assert!(preface(&json!({"error": "killed"})).contains("(killed)"));
        assert_eq!(preface(&json!({"llmContent": "…", "error": null})), PREFACE);
        assert_eq!(preface(&json!({"llmContent": "…"})), PREFACE);
    }
}
