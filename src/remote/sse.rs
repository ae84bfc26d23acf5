//! Replies of the chat-completions API: the stream of server-sent events that `"stream": true`
//! asks for (`data: {chunk}` lines, blank-line separated, `data: [DONE]` at the end), and the
//! single JSON object of a server that does not stream.
//!
//! A chunk is `{"choices":[{"delta":{"content":"..."},"finish_reason":null}]}`; the last ones
//! carry `finish_reason` (`stop`, `length`) and, with `stream_options.include_usage`, `usage`.
//! An `{"error":{...}}` event (llama-server, vLLM on a failure mid-stream) ends the reply with
//! that error. Anything that is not an event stream fails at its first line, so a garbage reply
//! costs no more than its first bytes.

use serde_json::Value;

use super::BackendError;

/// Token counts the server reports (its own tokenizer's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens of the rendered prompt.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub completion_tokens: usize,
}

/// A whole reply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// The assistant message's text.
    pub text: String,
    /// `finish_reason` of the first choice (`stop`, `length`, ...), if the server sent one.
    pub finish: Option<String>,
    /// Usage, if the server sent it.
    pub usage: Option<Usage>,
    /// Chunks that carried text (about one per token on llama-server and vLLM).
    pub content_chunks: usize,
}

/// What a line did to the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Nothing to report (a field, comment, or an event without text).
    More,
    /// An event added text.
    Text,
    /// `data: [DONE]`: the reply is complete.
    Done,
}

/// Longest text shown from a bad reply in an error message (chars).
const SHOW: usize = 120;

fn show(s: &str) -> String {
    let t: String = s.chars().take(SHOW).collect();
    if t.len() < s.len() {
        format!("{t}...")
    } else {
        t
    }
}

/// The `{"error": ...}` of an API reply as a [`BackendError::Status`] (`code` from the object
/// when it is a number, else `fallback_code`).
pub fn api_error(v: &Value, fallback_code: u16) -> Option<BackendError> {
    let e = v.get("error")?;
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| show(&e.to_string()));
    let code = e
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(fallback_code);
    Some(BackendError::Status {
        code,
        message: show(&message),
    })
}

/// Parses a stream line by line ([`StreamParser::line`]), then [`StreamParser::finish`].
#[derive(Debug)]
pub struct StreamParser {
    data: Option<String>,
    reply: Reply,
    done: bool,
    max_chunks: usize,
}

impl StreamParser {
    /// A parser that fails with [`BackendError::Overrun`] after `max_chunks` text chunks (a
    /// server that ignores `max_tokens`).
    pub fn new(max_chunks: usize) -> Self {
        Self {
            data: None,
            reply: Reply::default(),
            done: false,
            max_chunks,
        }
    }

    /// The reply so far.
    pub fn reply(&self) -> &Reply {
        &self.reply
    }

    /// Feeds one line (without its `\n`; a trailing `\r` is ignored).
    ///
    /// # Errors
    /// [`BackendError::Malformed`] for a line that is not part of an event stream or an event
    /// that is not a chunk; [`BackendError::Status`] for an error event;
    /// [`BackendError::Overrun`] past `max_chunks`.
    pub fn line(&mut self, line: &str) -> Result<Progress, BackendError> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if self.done {
            return Ok(Progress::Done);
        }
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return Ok(Progress::More);
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                match &mut self.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => self.data = Some(value.to_string()),
                }
                Ok(Progress::More)
            }
            "event" | "id" | "retry" => Ok(Progress::More),
            _ => Err(BackendError::Malformed(format!(
                "not an event stream: {:?}",
                show(line)
            ))),
        }
    }

    fn dispatch(&mut self) -> Result<Progress, BackendError> {
        let Some(data) = self.data.take() else {
            return Ok(Progress::More);
        };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Progress::Done);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            BackendError::Malformed(format!("stream event is not JSON ({e}): {:?}", show(data)))
        })?;
        if let Some(e) = api_error(&v, 500) {
            return Err(e);
        }
        if !v.is_object() {
            return Err(BackendError::Malformed(format!(
                "stream event is not an object: {:?}",
                show(data)
            )));
        }
        if let Some(u) = usage(&v) {
            self.reply.usage = Some(u);
        }
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Ok(Progress::More);
        };
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.reply.finish = Some(f.to_string());
        }
        match choice.get("delta").and_then(|d| d.get("content")) {
            Some(Value::String(s)) if !s.is_empty() => {
                self.reply.text.push_str(s);
                self.reply.content_chunks += 1;
                if self.reply.content_chunks > self.max_chunks {
                    return Err(BackendError::Overrun(format!(
                        "more than {} chunks of text without an end",
                        self.max_chunks
                    )));
                }
                Ok(Progress::Text)
            }
            Some(Value::String(_)) | Some(Value::Null) | None => Ok(Progress::More),
            Some(other) => Err(BackendError::Malformed(format!(
                "delta.content is not a string: {}",
                show(&other.to_string())
            ))),
        }
    }

    /// Ends the stream (the connection closed): the reply, if it was complete.
    ///
    /// # Errors
    /// [`BackendError::Io`] when the stream stopped before `[DONE]` or a `finish_reason`
    /// (a server that went away, or one that closes without an event).
    pub fn finish(mut self) -> Result<Reply, BackendError> {
        if !self.done {
            self.dispatch()?;
        }
        if self.done || self.reply.finish.is_some() {
            return Ok(self.reply);
        }
        Err(BackendError::Io(format!(
            "the stream ended after {} chunks of text, before its end",
            self.reply.content_chunks
        )))
    }
}

fn usage(v: &Value) -> Option<Usage> {
    let u = v.get("usage")?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64).map(|n| n as usize);
    Some(Usage {
        prompt_tokens: n("prompt_tokens")?,
        completion_tokens: n("completion_tokens").unwrap_or(0),
    })
}

/// Parses a non-streamed reply: `{"choices":[{"message":{"content":"..."},
/// "finish_reason":"stop"}], "usage":{...}}`.
///
/// # Errors
/// [`BackendError::Malformed`] for anything else; [`BackendError::Status`] for an error object.
pub fn parse_completion(body: &str) -> Result<Reply, BackendError> {
    let v: Value = serde_json::from_str(body).map_err(|e| {
        BackendError::Malformed(format!("reply is not JSON ({e}): {:?}", show(body)))
    })?;
    if let Some(e) = api_error(&v, 500) {
        return Err(e);
    }
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| BackendError::Malformed(format!("no choices in {:?}", show(body))))?;
    let text = match choice.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => String::new(),
        _ => {
            return Err(BackendError::Malformed(format!(
                "no message.content in {:?}",
                show(body)
            )))
        }
    };
    Ok(Reply {
        content_chunks: usize::from(!text.is_empty()),
        text,
        finish: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        usage: usage(&v),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(p: &mut StreamParser, s: &str) -> Result<(), BackendError> {
        for l in s.split('\n') {
            p.line(l)?;
        }
        Ok(())
    }

    #[test]
    fn a_stream_becomes_text_finish_and_usage() {
        let mut p = StreamParser::new(100);
        feed(
            &mut p,
            ": keep-alive\n\
             data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n\
             data: {\"choices\":[{\"delta\":{\"content\":\"Status: \"}}]}\r\n\r\n\
             event: message\n\
             data: {\"choices\":[{\"delta\":{\"content\":\"failed.\"},\"finish_reason\":null}]}\n\n\
             data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
             data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}\n\n",
        )
        .unwrap();
        assert_eq!(p.line("data: [DONE]").unwrap(), Progress::More);
        assert_eq!(p.line("").unwrap(), Progress::Done);
        let r = p.finish().unwrap();
        assert_eq!(r.text, "Status: failed.");
        assert_eq!(r.finish.as_deref(), Some("stop"));
        assert_eq!(r.content_chunks, 2);
        assert_eq!(
            r.usage,
            Some(Usage {
                prompt_tokens: 12,
                completion_tokens: 3
            })
        );
    }

    #[test]
    fn garbage_errors_and_endless_streams_fail() {
        let mut p = StreamParser::new(100);
        let e = p
            .line("<html><body>502 Bad Gateway</body></html>")
            .unwrap_err();
        assert_eq!(e.kind(), "malformed", "{e}");

        let mut p = StreamParser::new(100);
        let e = feed(&mut p, "data: {\"choices\": [\n\n").unwrap_err();
        assert_eq!(e.kind(), "malformed", "{e}");

        let mut p = StreamParser::new(100);
        let e = feed(
            &mut p,
            "data: {\"error\":{\"code\":503,\"message\":\"Loading model\"}}\n\n",
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "HTTP 503: Loading model");

        let mut p = StreamParser::new(3);
        let chunk = "data: {\"choices\":[{\"delta\":{\"content\":\"a \"}}]}\n\n";
        let e = feed(&mut p, &chunk.repeat(4)).unwrap_err();
        assert_eq!(e.kind(), "overrun", "{e}");

        // Cut before the end, and empty.
        let mut p = StreamParser::new(100);
        feed(&mut p, chunk).unwrap();
        assert_eq!(p.finish().unwrap_err().kind(), "io");
        assert_eq!(StreamParser::new(1).finish().unwrap_err().kind(), "io");
    }

    #[test]
    fn non_streamed_replies_parse() {
        let r = parse_completion(
            r#"{"choices":[{"message":{"role":"assistant","content":"Status: ok."},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":4}}"#,
        )
        .unwrap();
        assert_eq!(r.text, "Status: ok.");
        assert_eq!(r.finish.as_deref(), Some("length"));
        assert_eq!(r.usage.unwrap().completion_tokens, 4);
        assert_eq!(parse_completion("{}").unwrap_err().kind(), "malformed");
        assert_eq!(parse_completion("nope").unwrap_err().kind(), "malformed");
        let e = parse_completion(r#"{"error":{"message":"bad key","code":401}}"#).unwrap_err();
        assert_eq!(e.kind(), "http_4xx");
    }
}
