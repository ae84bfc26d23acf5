//! The tool list as the client sees it: an `_intent` argument on every upstream tool, stripped
//! again from the calls, and the proxy's own `toolsum_ask` tool.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Value};

/// The argument every upstream tool gets in `tools/list` and loses in `tools/call`.
pub const INTENT: &str = "_intent";

/// The one-line description of [`INTENT`] in each schema (from the issue).
pub const INTENT_DESCRIPTION: &str =
    "What you are trying to accomplish with this call (one line). \
     A large result is summarized for this purpose; the full result is saved to a file.";

/// The proxy's own tool: asks a saved result a new question.
pub const ASK_TOOL: &str = "toolsum_ask";

/// What the proxy remembers of one upstream tool from `tools/list`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolInfo {
    /// The upstream tool declares an `outputSchema` (the client is not shown it: see
    /// [`add_intent`]). A guarded result whose `structuredContent` only repeats the text keeps
    /// that shape, its repeated strings shortened.
    pub has_output_schema: bool,
    /// The upstream schema declares `_intent` itself: it is neither added nor stripped.
    pub own_intent: bool,
}

/// Adds [`INTENT`] (a required string) to the `inputSchema` of every tool of a `tools/list`
/// result, removes its `outputSchema`, records each tool in `tools`, and, when `add_ask`,
/// appends [`ask_tool`] unless the server has a tool of that name. A result without a `tools`
/// array is left as it is. Returns whether anything changed.
///
/// The `outputSchema` goes because a guarded result replaces structured content that the
/// schema describes by a summary: a client that validates (the MCP TypeScript SDK's does)
/// would reject a result without it and the agent would get an error instead of the summary.
pub fn add_intent(
    result: &mut Value,
    tools: &mut HashMap<String, ToolInfo>,
    add_ask: bool,
) -> bool {
    let Some(list) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return false;
    };
    let mut changed = false;
    for tool in list.iter_mut() {
        let Some(t) = tool.as_object_mut() else {
            continue;
        };
        let name = t
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut info = ToolInfo {
            has_output_schema: t.get("outputSchema").is_some_and(|s| !s.is_null()),
            own_intent: false,
        };
        changed |= t.remove("outputSchema").is_some();
        let schema = t
            .entry("inputSchema")
            .or_insert_with(|| json!({"type": "object"}));
        if let Some(s) = schema.as_object_mut() {
            let props = s
                .entry("properties")
                .or_insert_with(|| Value::Object(Default::default()));
            match props.as_object_mut() {
                Some(p) if p.contains_key(INTENT) => info.own_intent = true,
                Some(p) => {
                    p.insert(
                        INTENT.into(),
                        json!({"type": "string", "description": INTENT_DESCRIPTION}),
                    );
                    let req = s.entry("required").or_insert_with(|| json!([]));
                    if let Some(r) = req.as_array_mut() {
                        r.push(json!(INTENT));
                    }
                    changed = true;
                }
                None => {}
            }
        }
        tools.insert(name, info);
    }
    if add_ask && !tools.contains_key(ASK_TOOL) {
        list.push(serde_json::to_value(ask_tool()).expect("a Tool serializes"));
        changed = true;
    }
    changed
}

/// Removes [`INTENT`] from a `tools/call`'s `params.arguments` (unless the tool declares it
/// itself) and returns it as the call's intent when it is a string with some text. Any other
/// value (`42`, `null`, an object) is no question: removed all the same, it steers nothing
/// (a number as the intent would rank every line holding it), and the call is guarded with
/// no intent.
pub fn take_intent(params: &mut Value, tools: &HashMap<String, ToolInfo>) -> Option<String> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let own = tools.get(&name).is_some_and(|t| t.own_intent);
    let args = params.get_mut("arguments")?.as_object_mut()?;
    let v = if own {
        args.get(INTENT).cloned()?
    } else {
        args.remove(INTENT)?
    };
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s),
        other => {
            tracing::warn!("{name}: {INTENT} is not a question ({other}); guarded with no intent");
            None
        }
    }
}

/// The `toolsum_ask` tool definition: `file` (the saved file's path or `file://` URI) and
/// `question`, both required strings; read-only.
pub fn ask_tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "file": {
                "type": "string",
                "description": "The saved file named in a summary: its path or file:// URI."
            },
            "question": {
                "type": "string",
                "description": "What you want to know from it (one line)."
            }
        },
        "required": ["file", "question"]
    });
    let schema: JsonObject = match schema {
        Value::Object(m) => m,
        _ => unreachable!("a JSON object literal"),
    };
    let mut t = Tool::new(
        ASK_TOOL,
        "Ask a result that toolsum saved (the file a summary points to) a new question. \
         toolsum re-runs its reduction and local model on the saved file, steered by the \
         question, and answers with the lines that matter, without reading the whole file.",
        Arc::new(schema),
    );
    t.annotations = Some(ToolAnnotations::new().read_only(true));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_gets_a_required_intent_and_ask_is_added_once() {
        let mut r = json!({"tools": [
            {"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
            {"name": "bare", "inputSchema": {"type": "object"}},
            {"name": "none"},
            {"name": "mine", "inputSchema": {"type": "object", "properties": {"_intent": {"type": "integer"}}}, "outputSchema": {"type": "object"}},
        ], "nextCursor": null, "ttlMs": 5});
        let mut tools = HashMap::new();
        assert!(add_intent(&mut r, &mut tools, true));
        let list = r["tools"].as_array().unwrap();
        for t in &list[..3] {
            let s = &t["inputSchema"];
            assert_eq!(s["properties"][INTENT]["type"], "string", "{t}");
            assert!(
                s["required"].as_array().unwrap().contains(&json!(INTENT)),
                "{t}"
            );
        }
        assert_eq!(
            list[0]["inputSchema"]["required"],
            json!(["message", INTENT])
        );
        // A schema's own `_intent` is left alone.
        assert_eq!(
            list[3]["inputSchema"]["properties"][INTENT]["type"],
            "integer"
        );
        assert!(tools["mine"].own_intent && tools["mine"].has_output_schema);
        assert!(
            list[3].get("outputSchema").is_none(),
            "not shown to the client"
        );
        assert!(!tools["echo"].own_intent && !tools["echo"].has_output_schema);
        assert_eq!(list[4]["name"], ASK_TOOL);
        assert_eq!(
            list[4]["inputSchema"]["required"],
            json!(["file", "question"])
        );
        assert_eq!(r["ttlMs"], 5, "other fields kept");
        // A page that is not the last one does not get it; every full listing does.
        let mut p2 = json!({"tools": [{"name": "x", "inputSchema": {"type": "object"}}]});
        add_intent(&mut p2, &mut tools, false);
        assert_eq!(p2["tools"].as_array().unwrap().len(), 1);
        let mut again = json!({"tools": [{"name": "x", "inputSchema": {"type": "object"}}]});
        add_intent(&mut again, &mut tools, true);
        assert_eq!(again["tools"][1]["name"], ASK_TOOL);
        // An upstream tool of that name is left to the server.
        let mut theirs = json!({"tools": [{"name": ASK_TOOL, "inputSchema": {"type": "object"}}]});
        let mut t2 = HashMap::new();
        add_intent(&mut theirs, &mut t2, true);
        assert_eq!(theirs["tools"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn intent_is_taken_out_of_the_arguments() {
        let mut tools = HashMap::new();
        tools.insert(
            "mine".to_string(),
            ToolInfo {
                own_intent: true,
                ..Default::default()
            },
        );
        let mut p =
            json!({"name": "echo", "arguments": {"message": "hi", "_intent": "check echo"}});
        assert_eq!(take_intent(&mut p, &tools).as_deref(), Some("check echo"));
        assert_eq!(p["arguments"], json!({"message": "hi"}));
        // A number or an empty string is no question: removed, and no intent.
        let mut p = json!({"name": "echo", "arguments": {"_intent": 5}});
        assert_eq!(take_intent(&mut p, &tools), None);
        assert_eq!(p["arguments"], json!({}));
        let mut p = json!({"name": "echo", "arguments": {"_intent": " "}});
        assert_eq!(take_intent(&mut p, &tools), None);
        assert_eq!(p["arguments"], json!({}));
        let mut p = json!({"name": "mine", "arguments": {"_intent": "kept"}});
        assert_eq!(take_intent(&mut p, &tools).as_deref(), Some("kept"));
        assert_eq!(p["arguments"]["_intent"], "kept");
        let mut p = json!({"name": "echo"});
        assert_eq!(take_intent(&mut p, &tools), None);
    }
}
