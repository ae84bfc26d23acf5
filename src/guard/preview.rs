//! Head/tail preview of a text too large (or too late) to summarize.
//!
//! Keeps the first and the last `chars` characters, cut on a char boundary (never inside a UTF-8
//! sequence) and moved to a line boundary when one lies in the outer half of the cut, with one
//! line between them saying how many lines and bytes were left out.

use super::save::thousands;

/// A text split into a kept head, an omitted middle and a kept tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview<'a> {
    /// The kept beginning (a prefix of the text).
    pub head: &'a str,
    /// The kept end (a suffix of the text); empty when nothing was omitted.
    pub tail: &'a str,
    /// Lines touched by the omitted middle (newlines in it, plus one for a partial last line).
    pub omitted_lines: usize,
    /// Bytes of the omitted middle.
    pub omitted_bytes: usize,
}

/// Splits `text` into head and tail of at most `chars` characters each.
///
/// When the whole text has at most `2 * chars` characters it is all in `head` and nothing is
/// omitted. Never panics.
pub fn split(text: &str, chars: usize) -> Preview<'_> {
    let whole = Preview {
        head: text,
        tail: "",
        omitted_lines: 0,
        omitted_bytes: 0,
    };
    // Byte index after the first `chars` chars, and of the last `chars` chars.
    let Some((mut head_end, _)) = text.char_indices().nth(chars) else {
        return whole;
    };
    let mut tail_start = if chars == 0 {
        text.len()
    } else {
        match text.char_indices().rev().nth(chars - 1) {
            Some((i, _)) => i,
            None => return whole,
        }
    };
    if tail_start <= head_end {
        return whole;
    }
    // Prefer line boundaries when one is in the outer half of each cut.
    if let Some(p) = text[..head_end].rfind('\n') {
        if p + 1 >= head_end / 2 {
            head_end = p + 1;
        }
    }
    let tail_len = text.len() - tail_start;
    if let Some(q) = text[tail_start..].find('\n') {
        if q < tail_len / 2 && tail_start + q + 1 < text.len() {
            tail_start += q + 1;
        }
    }
    let middle = &text[head_end..tail_start];
    let newlines = memchr::memchr_iter(b'\n', middle.as_bytes()).count();
    let partial = usize::from(!middle.is_empty() && !middle.ends_with('\n'));
    Preview {
        head: &text[..head_end],
        tail: &text[tail_start..],
        omitted_lines: newlines + partial,
        omitted_bytes: middle.len(),
    }
}

impl Preview<'_> {
    /// The preview as text: head, an omission line, tail.
    pub fn render(&self) -> String {
        if self.omitted_bytes == 0 {
            return self.head.to_string();
        }
        let mut s = String::with_capacity(self.head.len() + self.tail.len() + 80);
        s.push_str(self.head);
        if !self.head.is_empty() && !self.head.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&format!(
            "[... {} line{} ({} bytes) omitted ...]\n",
            thousands(self.omitted_lines as u64),
            if self.omitted_lines == 1 { "" } else { "s" },
            thousands(self.omitted_bytes as u64),
        ));
        s.push_str(self.tail);
        s
    }
}

/// [`split`] then [`Preview::render`].
pub fn preview(text: &str, chars: usize) -> String {
    split(text, chars).render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_text_is_whole() {
        assert_eq!(preview("abc", 2), "abc");
        assert_eq!(preview("abcd", 2), "abcd");
        assert_eq!(preview("", 0), "");
    }

    #[test]
    fn cuts_on_lines() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let p = split(&text, 100);
        assert!(p.head.ends_with('\n'));
        assert!(p.head.starts_with("line 0\n"));
        assert!(p.tail.starts_with("line "), "{:?}", p.tail);
        assert!(p.tail.ends_with("line 999\n"));
        assert_eq!(
            p.head.len() + p.omitted_bytes + p.tail.len(),
            text.len(),
            "parts cover the text"
        );
        let lines = |s: &str| s.matches('\n').count();
        assert_eq!(lines(p.head) + p.omitted_lines + lines(p.tail), 1000);
        let r = p.render();
        assert!(r.contains(&format!("[... {} lines (", p.omitted_lines)));
    }

    #[test]
    fn single_long_line() {
        let text = "é".repeat(10_000);
        let p = split(&text, 2_000);
        assert_eq!(p.head.chars().count(), 2_000);
        assert_eq!(p.tail.chars().count(), 2_000);
        assert_eq!(p.omitted_lines, 1);
        assert_eq!(p.omitted_bytes, 6_000 * 2);
        assert!(p
            .render()
            .contains("[... 1 line (12,000 bytes) omitted ...]"));
    }

    proptest! {
        #[test]
        fn never_splits_utf8(text in "(\\PC|\n|[a-z]{0,8}){0,300}", chars in 0usize..64) {
            let p = split(&text, chars);
            prop_assert!(text.starts_with(p.head));
            prop_assert!(text.ends_with(p.tail));
            prop_assert_eq!(p.head.len() + p.omitted_bytes + p.tail.len(), text.len());
            if p.omitted_bytes > 0 {
                prop_assert!(p.head.chars().count() <= chars);
                prop_assert!(p.tail.chars().count() <= chars);
            }
            let _ = p.render();
        }
    }
}
