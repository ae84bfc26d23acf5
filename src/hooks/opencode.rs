//! OpenCode, through its plugin (`integrations/opencode/toolsum.ts`, installed by `toolsum
//! install opencode`).
//!
//! OpenCode plugins get `tool.execute.after(input, output)` with `input = {tool, sessionID,
//! callID, args}` and `output = {title, output, metadata}` (`@opencode-ai/plugin` 1.18.33,
//! `dist/index.d.ts`), and replace the result by setting `output.output`. The plugin sends
//! `{tool, sessionID, callID, args, output, directory}` to `toolsum hook opencode`; the answer is
//! `{"output": TEXT}`, or nothing when the result stays.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{changed, intent_of, strip_intent, HookContext, ToolCall};

/// The replacement for one payload, or `None` when the result stays.
///
/// # Errors
/// A payload without `tool` or `output`.
pub fn respond(payload: &Value, ctx: &mut HookContext) -> Result<Option<Value>, String> {
    let tool = payload
        .get("tool")
        .and_then(Value::as_str)
        .ok_or("no tool")?
        .to_string();
    let output = payload
        .get("output")
        .and_then(Value::as_str)
        .ok_or("no output string")?;
    let args = payload.get("args").cloned().unwrap_or(Value::Null);
    let cwd = payload
        .get("directory")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::current_dir().ok())
        .ok_or("no directory")?;
    let call = ToolCall {
        intent: intent_of(&args),
        args: Some(strip_intent(&args)),
        tool,
        project: payload
            .get("worktree")
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.is_dir())
            .unwrap_or_else(|| cwd.clone()),
        cwd,
        session_id: payload
            .get("sessionID")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    };
    let r = ctx.guard(&call, output.as_bytes().to_vec());
    if !changed(&r, output.as_bytes()) {
        return Ok(None);
    }
    Ok(Some(json!({ "output": r.text })))
}
