//! Cursor's `afterMCPExecution` hook (and `postToolUse` for MCP tools).
//!
//! Payload (stdin; Cursor's hooks documentation, cursor.com/docs/agent/hooks, hooks.json
//! `version: 1`): `hook_event_name`, `conversation_id`, `generation_id`, `workspace_roots`,
//! `tool_name`, `tool_input` (a JSON string), and the result: `result_json` (a JSON string of
//! the MCP `CallToolResult`) for `afterMCPExecution`, `tool_output` for `postToolUse`.
//!
//! Cursor replaces MCP results only: `{"updated_mcp_tool_output": {"content": [...]}}`. Built-in
//! tools (`Shell`, `Read`, ...) cannot be replaced, so nothing is printed for them.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{
    blocks_to_text, changed, intent_of, mcp_blocks, mcp_blocks_input, strip_intent, HookContext,
    ToolCall,
};

fn json_field(payload: &Value, k: &str) -> Option<Value> {
    match payload.get(k)? {
        Value::String(s) => Some(serde_json::from_str(s).unwrap_or(Value::String(s.clone()))),
        v => Some(v.clone()),
    }
}

/// The replacement for one payload, or `None` when the result stays.
///
/// # Errors
/// A payload of another event or without `tool_name`.
pub fn respond(payload: &Value, ctx: &mut HookContext) -> Result<Option<Value>, String> {
    let event = payload
        .get("hook_event_name")
        .and_then(Value::as_str)
        .unwrap_or("afterMCPExecution");
    let result_key = match event {
        "afterMCPExecution" => "result_json",
        "postToolUse" => "tool_output",
        other => return Err(format!("not an afterMCPExecution payload: {other:?}")),
    };
    let tool = payload
        .get("tool_name")
        .and_then(Value::as_str)
        .ok_or("no tool_name")?
        .to_string();
    if event == "postToolUse" && !tool.starts_with("MCP:") {
        return Ok(None);
    }
    let args = json_field(payload, "tool_input").unwrap_or(Value::Null);
    let root = payload
        .get("workspace_roots")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let cwd = payload
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| root.clone())
        .or_else(|| std::env::current_dir().ok())
        .ok_or("no cwd")?;
    let call = ToolCall {
        intent: intent_of(&args),
        args: Some(strip_intent(&args)),
        tool,
        project: root.unwrap_or_else(|| cwd.clone()),
        cwd,
        session_id: payload
            .get("conversation_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    };
    let result = json_field(payload, result_key).ok_or(format!("no {result_key}"))?;
    let input = match &result {
        Value::String(s) => s.as_bytes().to_vec(),
        v => match mcp_blocks(v) {
            Some(blocks) => mcp_blocks_input(blocks),
            None => serde_json::to_vec(v).map_err(|e| e.to_string())?,
        },
    };
    let r = ctx.guard(&call, input.clone());
    if !changed(&r, &input) {
        return Ok(None);
    }
    let mut out = json!({"content": [{"type": "text", "text": blocks_to_text(&r.text)}]});
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        out["isError"] = json!(true);
    }
    Ok(Some(json!({ "updated_mcp_tool_output": out })))
}
