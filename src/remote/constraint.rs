//! [`OutputConstraint`] on a remote server: the server's structured-output option (OpenAI's
//! `response_format` with a JSON schema, which vLLM, llama-server, SGLang and TGI take too), and
//! the reply turned back into the text shape the local engine writes.
//!
//! `Ids { ids, max, then_text }` asks for `{"ids": [...], "text": "..."}`: `ids` an array of at
//! most `max` strings from the offered list (`enum`), `text` only when `then_text`. The reply
//! becomes `1, 3\n` (or `none\n`) followed by the text, so the caller's
//! [`OutputConstraint::parse_ids`] reads it as it reads the engine's output. Whatever comes back
//! is validated here too: ids not offered, repeated or past `max` are dropped, from JSON and
//! from the plain text of a server that ignored the schema alike; a reply cut at the deadline
//! keeps the ids it completed.

use serde_json::{json, Value};

use crate::backend::OutputConstraint;

/// Tokens a JSON reply costs beyond the plain shape: the braces, keys and quotes around `max`
/// ids (about 3 tokens each) and the text (added to `max_tokens`).
pub fn json_overhead_tokens(c: &OutputConstraint) -> usize {
    let OutputConstraint::Ids { max, .. } = c;
    12 + 3 * max
}

/// The `response_format` object for `c`: a strict JSON schema with only keywords every server
/// above supports (`type`, `properties`, `required`, `additionalProperties`, `items`, `enum`,
/// `maxItems`).
pub fn response_format(c: &OutputConstraint) -> Value {
    let OutputConstraint::Ids {
        ids,
        max,
        then_text,
    } = c;
    let mut properties = json!({
        "ids": {"type": "array", "items": {"type": "string", "enum": ids}, "maxItems": max},
    });
    let mut required = vec!["ids"];
    if *then_text {
        properties["text"] = json!({"type": "string"});
        required.push("text");
    }
    json!({
        "type": "json_schema",
        "json_schema": {
            "name": "ids",
            "strict": true,
            "schema": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            },
        },
    })
}

/// The ids of a reply cut short (`{"ids": ["1", "3", "`): the complete strings of the `ids`
/// array up to where the text stops.
fn ids_of_partial(raw: &str) -> Vec<String> {
    let Some(k) = raw.find("\"ids\"") else {
        return Vec::new();
    };
    let rest = &raw[k + 5..];
    let Some(open) = rest.find('[') else {
        return Vec::new();
    };
    let body = &rest[open + 1..];
    let body = &body[..body.find(']').unwrap_or(body.len())];
    let mut out = Vec::new();
    let mut parts = body.split('"');
    parts.next();
    while let (Some(id), Some(_sep)) = (parts.next(), parts.next()) {
        out.push(id.to_string());
    }
    out
}

/// The engine's text shape for `ids` (validated against `c`) and `text`.
fn shape(c: &OutputConstraint, ids: &[String], text: &str) -> String {
    let OutputConstraint::Ids { then_text, .. } = c;
    let (valid, _) = c.parse_ids(&ids.join(", "));
    let mut out = if valid.is_empty() {
        "none".to_string()
    } else {
        valid.join(", ")
    };
    out.push('\n');
    if *then_text {
        out.push_str(text.trim());
    }
    out
}

/// Turns a reply to a [`response_format`] request back into the engine's shape. A JSON object
/// that does not parse (cut at the deadline) keeps the ids it finished.
pub fn to_text(c: &OutputConstraint, raw: &str) -> String {
    let t = raw.trim();
    if !t.starts_with('{') {
        // The server ignored the schema and wrote plain text: validated the same way.
        let (ids, rest) = c.parse_ids(t);
        return shape(c, &ids, rest);
    }
    match serde_json::from_str::<Value>(t) {
        Ok(v) => {
            let ids: Vec<String> = v
                .get("ids")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| match x {
                            Value::String(s) => Some(s.clone()),
                            Value::Number(n) => Some(n.to_string()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let text = v.get("text").and_then(Value::as_str).unwrap_or("");
            shape(c, &ids, text)
        }
        Err(_) => shape(c, &ids_of_partial(t), ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(then_text: bool) -> OutputConstraint {
        OutputConstraint::Ids {
            ids: ["1", "2", "3", "4"].map(String::from).to_vec(),
            max: 2,
            then_text,
        }
    }

    #[test]
    fn the_schema_names_the_ids_and_the_text_only_when_asked() {
        let f = response_format(&c(false));
        let s = &f["json_schema"]["schema"];
        assert_eq!(f["type"], "json_schema");
        assert_eq!(
            s["properties"]["ids"]["items"]["enum"],
            json!(["1", "2", "3", "4"])
        );
        assert_eq!(s["properties"]["ids"]["maxItems"], 2);
        assert_eq!(s["required"], json!(["ids"]));
        assert!(s["properties"].get("text").is_none());
        let f = response_format(&c(true));
        assert_eq!(
            f["json_schema"]["schema"]["required"],
            json!(["ids", "text"])
        );
    }

    #[test]
    fn replies_become_the_engines_shape_and_are_validated() {
        assert_eq!(
            to_text(&c(true), r#"{"ids":["3","1"],"text":" Both failed. "}"#),
            "3, 1\nBoth failed."
        );
        // Not offered, repeated, past max: dropped; nothing left: none.
        assert_eq!(
            to_text(&c(false), r#"{"ids":["9","2","2",4,"1"]}"#),
            "2, 4\n"
        );
        assert_eq!(to_text(&c(false), r#"{"ids":["7"]}"#), "none\n");
        assert_eq!(to_text(&c(true), r#"{"text":"x"}"#), "none\nx");
        // Cut at the deadline: the finished ids survive.
        assert_eq!(to_text(&c(true), r#"{"ids": ["2", "3"#), "2\n");
        assert_eq!(to_text(&c(true), r#"{"ids": ["2", "3"], "te"#), "2, 3\n");
        // A server that ignored the schema: its plain text, validated the same way.
        assert_eq!(to_text(&c(true), "1, 9\nfree"), "1\nfree");
        assert_eq!(to_text(&c(false), "1, 9\nfree"), "1\n");
    }
}
