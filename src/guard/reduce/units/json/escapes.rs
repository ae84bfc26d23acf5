//! The escapes a JSON text writes that serde_json does not: `\/` for `/` (PHP's `json_encode`,
//! many Java writers, the NVD API) and `\u00e9` for every character outside ASCII (Python's
//! `json.dumps` by default). Units rendered from parsed values are written back the way their
//! text writes them, so that a quoted record is the file's own text: the verbatim check keeps
//! it, and a search of the saved file for it finds it.

/// Which of the optional JSON escapes a text uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Escapes {
    /// `/` written `\/`.
    slash: bool,
    /// Characters outside ASCII written `\uXXXX` (UTF-16 code units); `Some(true)` with
    /// upper-case hex digits.
    ascii: Option<bool>,
}

/// Characters toolsum itself puts into shown units (the cut mark `…[cut]…`): never escaped.
const OWN_MARKS: &[char] = &['…'];

impl Escapes {
    /// The escapes `text` uses: `\/` when at least half of its slashes are escaped; `\uXXXX`
    /// when the text is all ASCII and escapes at least one character outside it.
    pub(crate) fn of(text: &str) -> Self {
        let slashes = memchr::memchr_iter(b'/', text.as_bytes()).count();
        let escaped = text.matches("\\/").count();
        let slash = escaped > 0 && escaped * 2 >= slashes;
        let ascii = if text.is_ascii() {
            text.match_indices("\\u").find_map(|(i, _)| {
                let hex = text.get(i + 2..i + 6)?;
                let code = u32::from_str_radix(hex, 16).ok()?;
                // `\\u` is an escaped backslash before a `u`, not an escape.
                let backslashes = text[..i].bytes().rev().take_while(|&b| b == b'\\').count();
                (code >= 0x80 && backslashes % 2 == 0)
                    .then(|| hex.bytes().any(|b| b.is_ascii_uppercase()))
            })
        } else {
            None
        };
        Escapes { slash, ascii }
    }

    /// True when the text writes what serde_json writes: nothing to change.
    pub(crate) fn is_plain(&self) -> bool {
        *self == Escapes::default()
    }

    /// `s` (JSON text as serde_json writes it, or a string's content) with these escapes: a
    /// `/` not already escaped becomes `\/`, a character outside ASCII `\uXXXX` (two for one
    /// outside the Basic Multilingual Plane). `None` when nothing changes.
    pub(crate) fn apply(&self, s: &str) -> Option<String> {
        let needs = (self.slash && s.contains('/'))
            || (self.ascii.is_some()
                && s.chars().any(|c| !c.is_ascii() && !OWN_MARKS.contains(&c)));
        if !needs {
            return None;
        }
        let mut out = String::with_capacity(s.len() + 16);
        let mut prev = '\0';
        for c in s.chars() {
            match c {
                '/' if self.slash && prev != '\\' => out.push_str("\\/"),
                c if !c.is_ascii() && !OWN_MARKS.contains(&c) => match self.ascii {
                    Some(upper) => {
                        let mut buf = [0u16; 2];
                        for unit in c.encode_utf16(&mut buf) {
                            if upper {
                                out.push_str(&format!("\\u{unit:04X}"));
                            } else {
                                out.push_str(&format!("\\u{unit:04x}"));
                            }
                        }
                    }
                    None => out.push(c),
                },
                c => out.push(c),
            }
            prev = c;
        }
        (out != s).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slashes_and_non_ascii_are_written_as_the_text_writes_them() {
        let nvd = r#"{"url": "https:\/\/nvd.nist.gov\/vuln", "v": "CVSS:3.1\/AV:N"}"#;
        let e = Escapes::of(nvd);
        assert_eq!(
            e.apply(r#""vectorString": "CVSS:3.1/AV:N/AC:L""#)
                .as_deref(),
            Some(r#""vectorString": "CVSS:3.1\/AV:N\/AC:L""#)
        );
        // Already escaped: left as it is.
        assert_eq!(e.apply(r#"CVSS:3.1\/AV:N"#), None);
        let py = r#"{"name": "Caf\u00e9 \ud83d\ude00", "path": "a/b"}"#;
        let e = Escapes::of(py);
        assert_eq!(
            e.apply("\"name\": \"Café 😀\", …[cut]…").as_deref(),
            Some(r#""name": "Caf\u00e9 \ud83d\ude00", …[cut]…"#)
        );
        // Plain texts: serde_json's own writing.
        assert!(Escapes::of(r#"{"a": "b/c", "n": "Café"}"#).is_plain());
        assert!(Escapes::of(r#"{"a": "\\u00e9 is text"}"#).is_plain());
        assert_eq!(
            Escapes::of(r#"{"u": "\u00C9"}"#).apply("É").as_deref(),
            Some("\\u00C9")
        );
    }
}
