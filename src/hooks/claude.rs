//! Claude Code's `PostToolUse` hook.
//!
//! Payload (stdin; Claude Code 2.1.328, `sdk-tools.d.ts` of `@anthropic-ai/claude-code` and
//! its hook input): `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `tool_name`,
//! `tool_input`, `tool_response`, `tool_use_id`; `CLAUDE_PROJECT_DIR` in the environment.
//!
//! A replacement is `{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":V}}`
//! (2.1.121+). Claude Code checks `V` against a built-in tool's output schema and silently keeps
//! the original when it does not match (it logs `PostToolUse hook returned updatedToolOutput that
//! does not match Bash's output shape`), so `V` keeps the tool's own shape:
//!
//! - `Bash` (and `PowerShell`): `{stdout, stderr, interrupted, ...}`: stdout and then stderr,
//!   the one result the model reads, are guarded as one text (two large streams get one
//!   summary within the cap); a replacement puts it in `stdout`, empties `stderr` and copies
//!   the other fields. When the output was too large to keep inline, Claude
//!   Code saved it and passes `persistedOutputPath`/`persistedOutputSize` (with a cut `stdout`):
//!   the full text is read from that file, and both fields are dropped from the replacement,
//!   since with them Claude Code shows its own preview of the file instead of `stdout`.
//!   Image output (`isImage`) is left alone.
//! - MCP tools (`mcp__<server>__<tool>`): content blocks `[{"type":"text","text":…}]` (not
//!   schema-checked), also sent as `updatedMCPToolOutput` for versions before 2.1.121.
//! - Other built-ins (`Read`, `Grep`, `WebFetch`, `Task`, ...): the longest string in the
//!   response (e.g. `file.content`, `content`, `result`) is guarded and replaced in place; image
//!   and PDF reads are left alone.

use serde_json::{json, Value};

use super::{
    blocks_to_text, changed, common_call, mcp_blocks, mcp_blocks_input, HookContext,
    MAX_PAYLOAD_BYTES,
};

/// The event this hook answers.
pub const EVENT: &str = "PostToolUse";

/// Fields of a Bash result that point Claude Code at its own saved copy of the output; dropped
/// from a replacement (see the module docs).
const PERSISTED_FIELDS: [&str; 3] = [
    "persistedOutputPath",
    "persistedOutputSize",
    "rawOutputPath",
];

/// The replacement for one payload, or `None` when the result stays (see the module docs).
///
/// # Errors
/// A payload of another event or without the fields above.
pub fn respond(payload: &Value, ctx: &mut HookContext) -> Result<Option<Value>, String> {
    let event = payload.get("hook_event_name").and_then(Value::as_str);
    if event.is_some_and(|e| e != EVENT) {
        return Err(format!("not a {EVENT} payload: {event:?}"));
    }
    let call = common_call(payload, Some("CLAUDE_PROJECT_DIR"))?;
    let response = payload.get("tool_response").ok_or("no tool_response")?;
    let updated = if call.tool.starts_with("mcp__") {
        mcp(&call, response, ctx)?
    } else if matches!(call.tool.as_str(), "Bash" | "PowerShell") && response.is_object() {
        bash(&call, response, ctx)?
    } else {
        longest_string(&call, response, ctx)?
    };
    Ok(updated.map(|v| {
        let mut out = json!({"hookEventName": EVENT, "updatedToolOutput": v});
        if call.tool.starts_with("mcp__") {
            out["updatedMCPToolOutput"] = out["updatedToolOutput"].clone();
        }
        json!({ "hookSpecificOutput": out })
    }))
}

fn bash(
    call: &super::ToolCall,
    response: &Value,
    ctx: &mut HookContext,
) -> Result<Option<Value>, String> {
    if response.get("isImage").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    let stdout = response
        .get("stdout")
        .and_then(Value::as_str)
        .ok_or("a Bash response without stdout")?;
    let stderr = response.get("stderr").and_then(Value::as_str).unwrap_or("");
    let persisted = response
        .get("persistedOutputPath")
        .and_then(Value::as_str)
        .and_then(|p| read_persisted(p, ctx));
    let mut full = persisted.unwrap_or_else(|| stdout.as_bytes().to_vec());
    // The model reads one result, stdout then stderr: guarded as one text, so two large
    // streams get one summary within the cap, not two.
    if !stderr.is_empty() {
        if !full.is_empty() && !full.ends_with(b"\n") {
            full.push(b'\n');
        }
        full.extend_from_slice(stderr.as_bytes());
    }
    let out = ctx.guard(call, full.clone());
    // A saved output that still passes through stays Claude Code's to preview.
    if !changed(&out, &full) {
        return Ok(None);
    }
    let mut v = response.clone();
    let o = v.as_object_mut().expect("checked to be an object");
    for k in PERSISTED_FIELDS {
        o.remove(k);
    }
    o.insert("stdout".into(), json!(out.text));
    o.insert("stderr".into(), json!(""));
    o.entry("interrupted").or_insert(json!(false));
    Ok(Some(v))
}

/// The full output Claude Code saved at `path`, when it is a readable regular file of at most
/// [`MAX_PAYLOAD_BYTES`].
fn read_persisted(path: &str, ctx: &mut HookContext) -> Option<Vec<u8>> {
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file());
    match meta {
        Some(m) if m.len() <= MAX_PAYLOAD_BYTES as u64 => match std::fs::read(path) {
            Ok(b) => Some(b),
            Err(e) => {
                ctx.report
                    .notes
                    .push(format!("persistedOutputPath {path}: {e}; guarding stdout"));
                None
            }
        },
        _ => {
            ctx.report.notes.push(format!(
                "persistedOutputPath {path} is not a readable file under {MAX_PAYLOAD_BYTES} bytes; guarding stdout"
            ));
            None
        }
    }
}

fn mcp(
    call: &super::ToolCall,
    response: &Value,
    ctx: &mut HookContext,
) -> Result<Option<Value>, String> {
    let input = match response {
        Value::String(s) => s.as_bytes().to_vec(),
        v => match mcp_blocks(v) {
            Some(blocks) => mcp_blocks_input(blocks),
            None => serde_json::to_vec(v).map_err(|e| e.to_string())?,
        },
    };
    let r = ctx.guard(call, input.clone());
    if !changed(&r, &input) {
        return Ok(None);
    }
    Ok(Some(
        json!([{"type": "text", "text": blocks_to_text(&r.text)}]),
    ))
}

/// JSON-pointer of the longest string in `v` (depth-first), and its length in bytes.
fn longest(v: &Value, at: String, best: &mut Option<(String, usize)>) {
    match v {
        Value::String(s) if best.as_ref().is_none_or(|(_, n)| s.len() > *n) => {
            *best = Some((at, s.len()));
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                longest(x, format!("{at}/{i}"), best);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let k = k.replace('~', "~0").replace('/', "~1");
                longest(x, format!("{at}/{k}"), best);
            }
        }
        _ => {}
    }
}

fn longest_string(
    call: &super::ToolCall,
    response: &Value,
    ctx: &mut HookContext,
) -> Result<Option<Value>, String> {
    if call.tool == "Read"
        && response
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "text")
    {
        return Ok(None);
    }
    let mut best = None;
    longest(response, String::new(), &mut best);
    let Some((pointer, _)) = best else {
        return Ok(None);
    };
    let text = if pointer.is_empty() {
        response.as_str()
    } else {
        response.pointer(&pointer).and_then(Value::as_str)
    }
    .unwrap_or("")
    .to_string();
    let r = ctx.guard(call, text.clone().into_bytes());
    if !changed(&r, text.as_bytes()) {
        return Ok(None);
    }
    let mut v = response.clone();
    if pointer.is_empty() {
        v = json!(r.text);
    } else if let Some(slot) = v.pointer_mut(&pointer) {
        *slot = json!(r.text);
    }
    Ok(Some(v))
}
