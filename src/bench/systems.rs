//! The baselines toolsum is compared with: a head cut, a head+tail cut (what agent CLIs do
//! today), and a naive model summary of the whole output.

use std::path::Path;
use std::sync::Arc;

use crate::backend::{NarrateRequest, Narration};
use crate::engine::{Engine, EngineOptions};
use crate::guard::response::{compose, footer};
use crate::guard::SavedFile;

/// The pointer lines a cut result ends with, as if the full output had been saved as
/// `long_responses/<file>`.
pub fn pointer(file: &str, bytes: u64) -> String {
    footer(&SavedFile {
        path: format!("long_responses/{file}"),
        bytes,
        media_type: "text/plain".into(),
    })
}

/// Byte index just past the first `chars` characters of `text`, or `None` when it is shorter.
fn char_cut(text: &str, chars: usize) -> Option<usize> {
    text.char_indices().nth(chars).map(|(i, _)| i)
}

/// The first `chars` characters, then the pointer; the whole text when it is not longer.
pub fn head(text: &str, chars: usize, pointer: &str) -> String {
    match char_cut(text, chars) {
        None => text.to_string(),
        Some(i) => compose(&text[..i], pointer),
    }
}

/// The first and the last `chars` characters with a `[... N characters omitted ...]` line
/// between them, then the pointer; the whole text when it has at most `2 * chars` characters.
pub fn head_tail(text: &str, chars: usize, pointer: &str) -> String {
    let total = text.chars().count();
    if total <= 2 * chars {
        return text.to_string();
    }
    let h = char_cut(text, chars).unwrap_or(text.len());
    let t = char_cut(text, total - chars).unwrap_or(text.len());
    let mut body = String::with_capacity(h + (text.len() - t) + 64);
    body.push_str(&text[..h]);
    if !body.ends_with('\n') {
        body.push('\n');
    }
    body.push_str(&format!(
        "[... {} characters omitted ...]\n",
        crate::guard::save::thousands((total - 2 * chars) as u64)
    ));
    body.push_str(&text[t..]);
    compose(&body, pointer)
}

/// System prompt of the naive summary: deliberately plain.
pub const NAIVE_SYSTEM: &str = "You are a helpful assistant.";

/// The naive summary's user message.
pub fn naive_user(tool: &str, intent: &str, output: &str) -> String {
    format!(
        "Summarize the following output of the {tool} tool. What I want to know: {intent}\n\n\
         Output:\n{output}"
    )
}

/// What [`Naive::summarize`] returns.
pub struct NaiveResult {
    /// The model's summary.
    pub text: String,
    /// The model's timings and token counts.
    pub narration: Narration,
    /// Characters of the output the model saw (the output is cut to fit the context).
    pub shown_chars: usize,
    /// True when the output was cut.
    pub cut: bool,
}

/// The same model, in process, with a plain summarization prompt over the whole output (cut
/// only at the model's context).
pub struct Naive {
    engine: Engine,
    context: usize,
}

impl Naive {
    /// Loads the model with a KV cache of `max_context` tokens (capped by the file's context).
    ///
    /// # Errors
    /// As [`Engine::load`].
    pub fn load(
        model_path: &Path,
        threads: Option<usize>,
        max_context: usize,
    ) -> anyhow::Result<Naive> {
        let engine = Engine::load(&EngineOptions {
            model_path: model_path.to_path_buf(),
            threads,
            max_context,
            ..EngineOptions::default()
        })?;
        let context = engine.describe()["context"]
            .as_u64()
            .map_or(max_context, |c| c as usize);
        Ok(Naive { engine, context })
    }

    /// The KV cache size in tokens.
    pub fn context(&self) -> usize {
        self.context
    }

    /// Summarizes `output`, cut from the end until the prompt plus `max_new_tokens` fits the
    /// context.
    ///
    /// # Errors
    /// Template or model errors.
    pub fn summarize(
        &mut self,
        tool: &str,
        intent: &str,
        output: &str,
        max_new_tokens: usize,
    ) -> anyhow::Result<NaiveResult> {
        let budget = self.context.saturating_sub(max_new_tokens + 1);
        let mut cut = output.len();
        let user = loop {
            let user = naive_user(tool, intent, &output[..cut]);
            let n = self.engine.prompt_tokens(NAIVE_SYSTEM, &user)?;
            if n <= budget || cut == 0 {
                break user;
            }
            // Shrink in proportion, 2% under, and retry (tokens per byte vary along the text).
            let mut next = ((cut as f64) * (budget as f64 / n as f64) * 0.98) as usize;
            next = next.min(cut - 1);
            while !output.is_char_boundary(next) {
                next -= 1;
            }
            cut = next;
        };
        let narration = self.engine.generate(&NarrateRequest {
            system: NAIVE_SYSTEM.into(),
            user,
            max_new_tokens,
            deadline: None,
            cancel: Arc::new(Default::default()),
            constraint: None,
        })?;
        Ok(NaiveResult {
            text: narration.text.clone(),
            narration,
            shown_chars: output[..cut].chars().count(),
            cut: cut < output.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_cuts_on_chars_and_adds_pointer() {
        let p = pointer("x.log", 10);
        assert_eq!(head("short", 10, &p), "short");
        let h = head("héllo world", 3, &p);
        assert!(h.starts_with("hél\n\nFull response saved to: long_responses/x.log"));
    }

    #[test]
    fn head_tail_keeps_both_ends() {
        let p = pointer("x.log", 10);
        assert_eq!(head_tail("abcdef", 3, &p), "abcdef");
        let t = head_tail("aaaa\nmiddle\nzzzz", 4, &p);
        assert!(
            t.starts_with("aaaa\n[... 8 characters omitted ...]\nzzzz\n\nFull response"),
            "{t}"
        );
    }
}
