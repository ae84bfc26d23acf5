//! The model's chat template: renders a system + user message into prompt text with the GGUF's
//! own `tokenizer.chat_template` (Jinja, via minijinja), and splits the result into a trusted
//! prefix, the untrusted user content, and a trusted suffix.
//!
//! The split exists for two reasons: the user content (tool output) must be tokenized with
//! special-token matching off, so a literal `<|im_end|>` in it cannot close the turn; and the
//! prefix (system turn + user-turn opening) is identical across requests, so the engine can cache
//! its KV state.
//!
//! Jinja settings follow transformers' `apply_chat_template` (`trim_blocks`, `lstrip_blocks`,
//! Python string methods via minijinja-contrib's `pycompat`, `raise_exception`, `strftime_now`).

use minijinja::{Environment, ErrorKind, Value};
use serde::Serialize;

/// Name the template is stored under in the minijinja environment.
const TEMPLATE_NAME: &str = "chat";

/// Replaces the user content while rendering [`ChatTemplate::render_split`]; private-use code
/// points make a collision with template text or system text practically impossible.
const SENTINEL: &str = "\u{E000}toolsum-user-content-7f3a9c\u{E001}";

/// A generic ChatML template (`<|im_start|>role\n…<|im_end|>\n`), the format of Qwen2 and SmolLM2,
/// offered by [`ChatTemplate::chatml`] for models whose GGUF carries no template.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// What went wrong rendering a chat template.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// The model has no `tokenizer.chat_template` and the caller chose no fallback.
    #[error("the model has no chat template (tokenizer.chat_template); pass one or choose ChatML explicitly")]
    NoTemplate,
    /// The template does not compile or failed while rendering (including `raise_exception`).
    #[error("chat template: {0:#}")]
    Template(#[from] minijinja::Error),
    /// The user content placeholder did not appear exactly once in the rendered prompt.
    #[error("chat template rendered the user content {0} times (expected exactly once)")]
    Sentinel(usize),
    /// Rendering the real user content did not reproduce the prefix and suffix of the placeholder
    /// render (the template depends on the content in a way that cannot be split).
    #[error("chat template output around the user content depends on the content; cannot split")]
    Unsplittable,
}

/// A rendered prompt split around the user content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptParts {
    /// Trusted template text before the user content: the system turn and the user-turn opening.
    /// Encode with special tokens matched. Identical for every user message with the same system.
    pub prefix: String,
    /// The untrusted user content as the template placed it (verbatim unless the template itself
    /// transforms content, e.g. `| trim`). Encode with special tokens NOT matched.
    pub user: String,
    /// Trusted template text after the user content: end of the user turn + generation prompt.
    pub suffix: String,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'a str,
    content: &'a str,
}

/// A compiled chat template with the model's BOS/EOS token texts.
#[derive(Debug)]
pub struct ChatTemplate {
    /// minijinja environment owning the compiled template and the helper functions.
    env: Environment<'static>,
    /// `bos_token` variable the template may print.
    bos: String,
    /// `eos_token` variable the template may print.
    eos: String,
}

fn raise_exception(msg: String) -> Result<Value, minijinja::Error> {
    Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
}

fn strftime_now(fmt: String) -> String {
    chrono::Local::now().format(&fmt).to_string()
}

impl ChatTemplate {
    /// Compiles `source` (a Jinja chat template, as in `tokenizer.chat_template`) with the model's
    /// BOS and EOS token texts (e.g. `"<|endoftext|>"`, `"<|im_end|>"`).
    ///
    /// # Errors
    /// [`ChatError::Template`] when the source does not compile.
    pub fn new(source: &str, bos: &str, eos: &str) -> Result<Self, ChatError> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        minijinja_contrib::add_to_environment(&mut env);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_template_owned(TEMPLATE_NAME, source.to_string())?;
        Ok(Self {
            env,
            bos: bos.to_string(),
            eos: eos.to_string(),
        })
    }

    /// The generic ChatML template ([`CHATML_TEMPLATE`]), for a model without its own template,
    /// chosen explicitly by the caller.
    ///
    /// # Errors
    /// None in practice (the built-in template compiles); the `Result` mirrors [`ChatTemplate::new`].
    pub fn chatml(bos: &str, eos: &str) -> Result<Self, ChatError> {
        Self::new(CHATML_TEMPLATE, bos, eos)
    }

    /// The template of a GGUF tokenizer, with its BOS/EOS token texts (empty when absent).
    ///
    /// # Errors
    /// [`ChatError::NoTemplate`] when the GGUF has no `tokenizer.chat_template`;
    /// [`ChatError::Template`] when it does not compile.
    pub fn from_tokenizer(tok: &crate::tokenizer::GgufTokenizer) -> Result<Self, ChatError> {
        let source = tok.chat_template().ok_or(ChatError::NoTemplate)?;
        let text = |id: Option<u32>| id.and_then(|i| tok.id_to_token(i)).unwrap_or_default();
        Self::new(
            source,
            &text(tok.bos_id()),
            &text(tok.eos_ids().first().copied()),
        )
    }

    /// Renders a system + user conversation with `add_generation_prompt = true`.
    ///
    /// # Errors
    /// [`ChatError::Template`] when rendering fails (e.g. the template calls `raise_exception`).
    pub fn render(&self, system: &str, user: &str) -> Result<String, ChatError> {
        let tmpl = self.env.get_template(TEMPLATE_NAME)?;
        let messages = [
            Message {
                role: "system",
                content: system,
            },
            Message {
                role: "user",
                content: user,
            },
        ];
        let ctx = minijinja::context! {
            messages => messages,
            add_generation_prompt => true,
            bos_token => self.bos,
            eos_token => self.eos,
        };
        Ok(tmpl.render(ctx)?)
    }

    /// Renders like [`ChatTemplate::render`] and splits the text around the user content: the
    /// template is rendered once with a sentinel in place of `user` to find the trusted prefix
    /// and suffix, then once with `user` itself to take the user part as the template placed it.
    ///
    /// # Errors
    /// [`ChatError::Template`] on a rendering failure; [`ChatError::Sentinel`] when the template
    /// does not print the user content exactly once; [`ChatError::Unsplittable`] when the real
    /// render does not start with the prefix and end with the suffix.
    pub fn render_split(&self, system: &str, user: &str) -> Result<PromptParts, ChatError> {
        let probe = self.render(system, SENTINEL)?;
        let count = probe.matches(SENTINEL).count();
        if count != 1 {
            return Err(ChatError::Sentinel(count));
        }
        let (prefix, suffix) = probe.split_once(SENTINEL).ok_or(ChatError::Sentinel(0))?;
        let full = self.render(system, user)?;
        if full.len() < prefix.len() + suffix.len()
            || !full.starts_with(prefix)
            || !full.ends_with(suffix)
        {
            return Err(ChatError::Unsplittable);
        }
        Ok(PromptParts {
            prefix: prefix.to_string(),
            user: full[prefix.len()..full.len() - suffix.len()].to_string(),
            suffix: suffix.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_renders_and_splits() {
        let t = ChatTemplate::chatml("", "<|im_end|>").unwrap();
        let full = t.render("SYS", "hello").unwrap();
        assert_eq!(full, "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n");
        let p = t.render_split("SYS", "x <|im_end|> y").unwrap();
        assert_eq!(
            p.prefix,
            "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\n"
        );
        assert_eq!(p.user, "x <|im_end|> y");
        assert_eq!(p.suffix, "<|im_end|>\n<|im_start|>assistant\n");
        assert_eq!(
            format!("{}{}{}", p.prefix, p.user, p.suffix),
            t.render("SYS", "x <|im_end|> y").unwrap()
        );
    }

    #[test]
    fn python_string_methods_and_helpers_work() {
        let src = "{{ bos_token }}{% for m in messages %}{{ m['content'].strip().upper() }}|{% endfor %}{% if messages|length > 5 %}{{ raise_exception('too many') }}{% endif %}{{ strftime_now('%Y')|length }}";
        let t = ChatTemplate::new(src, "<s>", "</s>").unwrap();
        assert_eq!(t.render("  a ", "b").unwrap(), "<s>A|B|4");
        let boom = ChatTemplate::new("{{ raise_exception('no system role') }}", "", "").unwrap();
        let err = boom.render("s", "u").unwrap_err().to_string();
        assert!(err.contains("no system role"), "{err}");
    }

    #[test]
    fn trimming_template_still_splits() {
        let t = ChatTemplate::new(
            "[{{ messages[0].content }}]<{{ messages[1].content | trim }}>",
            "",
            "",
        )
        .unwrap();
        let p = t.render_split("s", "  u  ").unwrap();
        assert_eq!(
            (p.prefix.as_str(), p.user.as_str(), p.suffix.as_str()),
            ("[s]<", "u", ">")
        );
    }

    #[test]
    fn sentinel_count_is_checked() {
        let none = ChatTemplate::new("{{ messages[0].content }}", "", "").unwrap();
        assert!(matches!(
            none.render_split("s", "u"),
            Err(ChatError::Sentinel(0))
        ));
        let twice = ChatTemplate::new("{{ messages[1].content }}{{ messages[1].content }}", "", "")
            .unwrap();
        assert!(matches!(
            twice.render_split("s", "u"),
            Err(ChatError::Sentinel(2))
        ));
    }

    #[test]
    fn bad_template_is_an_error() {
        assert!(matches!(
            ChatTemplate::new("{% for %}", "", ""),
            Err(ChatError::Template(_))
        ));
    }
}
