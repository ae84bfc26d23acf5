//! A JSON document cut off before its end (a response capped at N bytes, a stream stopped
//! mid-record): what was read up to the cut, closed so that it parses, and where the cut is.
//!
//! The reduction then reads the complete records before the cut as JSON units (with their
//! line anchors unchanged: the closed text is a prefix of the input plus closing brackets on
//! its last line), and the summary says the document is invalid as a whole.

use serde_json::error::Category;

/// What [`repair`] found: the input's complete part, closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated {
    /// The input up to the end of its last complete value, then the brackets still open at
    /// that point, closed (`]}`). Parses as JSON.
    pub text: String,
    /// Bytes of the input kept (the end of the last complete value before the cut).
    pub kept: usize,
    /// Bytes of the input (the cut is at its end).
    pub bytes: usize,
    /// 1-based line of the input where its complete part ends.
    pub line: usize,
    /// The input ends inside a string (a value or key cut in the middle).
    pub in_string: bool,
    /// Containers still open at the cut, outermost first (`{`, `[`).
    pub open: String,
}

impl Truncated {
    /// One sentence for the Status and the Key facts: `JSON cut off at byte 200,000 inside a
    /// string, 3 brackets unclosed: invalid as a whole; its complete records up to L1 are
    /// read`. The byte figure is the input's size; no other figure toolsum derived is stated
    /// (every 3+ digit number of a summary is one the input or its size gives).
    pub fn describe(&self) -> String {
        let n = self.open.chars().count();
        format!(
            "JSON cut off at byte {}{}, {} bracket{} unclosed: invalid as a whole; its complete \
             records up to L{} are read",
            super::fmt_num(self.bytes),
            if self.in_string {
                " inside a string"
            } else {
                ""
            },
            n,
            if n == 1 { "" } else { "s" },
            self.line,
        )
    }

    /// The next action for a cut document: `jq` fails on the saved file, so grep it.
    pub fn next_action(&self) -> String {
        format!(
            "Grep the saved file for the records you need (it is not valid JSON, so jq fails \
             on it); Read from L{} to see where it stops.",
            self.line
        )
    }
}

/// Shortest input (bytes) worth repairing: below it nothing is summarized anyway.
const MIN_BYTES: usize = 2;

/// The complete part of `text` when it is a JSON document whose end is missing (the parser
/// runs out of input: [`Category::Eof`]), closed so that it parses; `None` for valid JSON,
/// for text that is not JSON, and for JSON with an error before its end (a syntax error is
/// not a cut). The cut is placed after the last complete member or element: before the last
/// `,` outside strings, or after the last `}`/`]` or complete scalar, whichever is later;
/// the brackets open there are closed in order.
pub fn repair(text: &str) -> Option<Truncated> {
    let body = text.trim_start();
    if body.len() < MIN_BYTES || !body.starts_with(['{', '[']) {
        return None;
    }
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Ok(_) => return None,
        Err(e) if e.classify() != Category::Eof => return None,
        Err(_) => {}
    }
    let b = text.as_bytes();
    let end = last_complete(b)?;
    let (open, _) = scan(&b[..end]);
    if open.is_empty() {
        return None;
    }
    let (_, in_string) = scan(b);
    let mut out = String::with_capacity(end + open.len());
    out.push_str(&text[..end]);
    for &o in open.iter().rev() {
        out.push(if o == b'{' { '}' } else { ']' });
    }
    serde_json::from_str::<serde::de::IgnoredAny>(&out).ok()?;
    Some(Truncated {
        line: text[..end].matches('\n').count() + 1,
        text: out,
        kept: end,
        bytes: text.len(),
        in_string,
        open: open.iter().map(|&c| c as char).collect(),
    })
}

/// Where a byte stands with respect to JSON strings ([`Strings::step`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    /// Outside every string (an opening `"` included).
    Outside,
    /// Inside a string.
    Inside,
    /// The `"` that closes a string.
    Closed,
}

/// The string state of a byte scan: inside a string or not, after a backslash or not.
#[derive(Default)]
struct Strings {
    in_str: bool,
    esc: bool,
}

impl Strings {
    fn step(&mut self, c: u8) -> At {
        if self.in_str {
            if self.esc {
                self.esc = false;
            } else if c == b'\\' {
                self.esc = true;
            } else if c == b'"' {
                self.in_str = false;
                return At::Closed;
            }
            return At::Inside;
        }
        if c == b'"' {
            self.in_str = true;
        }
        At::Outside
    }
}

/// Byte end of the last complete value inside a container of `b` (a string value, a closed
/// `}`/`]`, a scalar followed by a delimiter); `None` when there is none, or when a
/// top-level value closes before the end (more follows it: not a cut document).
fn last_complete(b: &[u8]) -> Option<usize> {
    let mut stack: Vec<u8> = Vec::new();
    let mut strings = Strings::default();
    let (mut is_key, mut in_scalar) = (false, false);
    let mut safe = None;
    for (i, &c) in b.iter().enumerate() {
        match strings.step(c) {
            At::Inside => continue,
            At::Closed => {
                if !is_key {
                    safe = Some(i + 1);
                }
                continue;
            }
            At::Outside => {}
        }
        let scalar_byte = c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'+');
        if in_scalar && !scalar_byte {
            in_scalar = false;
            safe = Some(i);
        }
        match c {
            b'"' => is_key = stack.last() == Some(&b'{') && expecting_key(b, i),
            b'{' | b'[' => stack.push(c),
            b'}' | b']' => {
                stack.pop()?;
                if stack.is_empty() {
                    return None;
                }
                safe = Some(i + 1);
            }
            _ if scalar_byte => in_scalar = true,
            _ => {}
        }
    }
    safe
}

/// The brackets open at the end of `b`, outermost first, and whether it ends inside a string.
fn scan(b: &[u8]) -> (Vec<u8>, bool) {
    let mut stack = Vec::new();
    let mut strings = Strings::default();
    for &c in b {
        if strings.step(c) != At::Outside {
            continue;
        }
        match c {
            b'{' | b'[' => stack.push(c),
            b'}' | b']' => {
                stack.pop();
            }
            _ => {}
        }
    }
    (stack, strings.in_str)
}

/// True when the `"` at `i` starts an object's key: the last byte before it that is not
/// whitespace is `{`, or `,` inside an object (an array's `,` is followed by a value).
fn expecting_key(b: &[u8], i: usize) -> bool {
    b[..i]
        .iter()
        .rev()
        .find(|c| !c.is_ascii_whitespace())
        .is_some_and(|&c| c == b'{' || c == b',')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_cut_inside_a_record_keeps_the_records_before_it() {
        let t = r#"{"items": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "na"#;
        let r = repair(t).expect("cut document");
        let v: serde_json::Value = serde_json::from_str(&r.text).unwrap();
        let items = v["items"].as_array().unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1]["name"], "b");
        // The cut record keeps its complete members only.
        assert_eq!(items[2], serde_json::json!({"id": 3}));
        assert!(r.in_string);
        assert_eq!(r.open, "{[{");
        assert_eq!(r.bytes, t.len());
        assert!(
            r.describe().contains("invalid as a whole"),
            "{}",
            r.describe()
        );
    }

    #[test]
    fn the_closed_text_is_a_prefix_of_the_input_so_line_anchors_hold() {
        let t = "[\n  {\"a\": 1},\n  {\"a\": 2},\n  {\"a\": 3";
        let r = repair(t).unwrap();
        assert!(t.starts_with(&r.text[..r.kept]));
        assert_eq!(r.text.lines().count(), r.line);
        // `3` may be the head of `30`: the last complete value is the second record.
        assert_eq!(r.line, 3);
        let v: serde_json::Value = serde_json::from_str(&r.text).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_key_without_its_value_is_dropped() {
        let t = r#"{"a": {"b": 1, "c": "#;
        let r = repair(t).unwrap();
        assert_eq!(r.text, r#"{"a": {"b": 1}}"#);
        let t = r#"{"a": {"b": 1, "c""#;
        assert_eq!(repair(t).unwrap().text, r#"{"a": {"b": 1}}"#);
    }

    #[test]
    fn a_number_cut_at_the_end_is_not_kept_as_complete() {
        // `12` may be the head of `1234`: the last complete value is the one before it.
        let t = r#"[1, 2, 12"#;
        assert_eq!(repair(t).unwrap().text, "[1, 2]");
    }

    #[test]
    fn valid_json_text_and_syntax_errors_are_not_cuts() {
        assert_eq!(repair(r#"{"a": [1, 2]}"#), None);
        assert_eq!(repair("plain text {"), None);
        assert_eq!(repair(r#"{"a": 1,, "b": 2}"#), None);
        assert_eq!(repair(r#"{"a": 1} {"b": 2"#), None);
        assert_eq!(repair("{"), None);
        assert_eq!(repair(""), None);
    }

    #[test]
    fn escaped_quotes_and_brackets_in_strings_do_not_count() {
        let t = r#"[{"s": "a \"]}\" b"}, {"s": "x]"#;
        let r = repair(t).unwrap();
        let v: serde_json::Value = serde_json::from_str(&r.text).unwrap();
        assert_eq!(v[0]["s"], "a \"]}\" b");
    }

    #[test]
    fn multibyte_text_is_cut_on_a_char_boundary() {
        let t = "[\"héllo\", \"wörld\", \"ünfin";
        let r = repair(t).unwrap();
        assert_eq!(r.text, "[\"héllo\", \"wörld\"]");
    }

    #[test]
    fn every_prefix_of_a_document_is_closed_into_json_or_left_alone() {
        let doc =
            "{\"a\": [1, -2.5e3, true, null, \"x\\\"]}\", {\"b\": {\"c\": \"ünï\"}}],\n \"d\": []}";
        for end in 1..doc.len() {
            if !doc.is_char_boundary(end) {
                continue;
            }
            let prefix = &doc[..end];
            if let Some(r) = repair(prefix) {
                assert!(
                    serde_json::from_str::<serde_json::Value>(&r.text).is_ok(),
                    "{prefix}"
                );
                assert_eq!(&r.text[..r.kept], &prefix[..r.kept]);
                assert_eq!(r.bytes, prefix.len());
            }
        }
    }
}
