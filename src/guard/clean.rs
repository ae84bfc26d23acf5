//! Terminal clean-up of tool text: ANSI escapes removed, `\r` overwrites resolved.
//!
//! The output is what a terminal would show once the program finished: CSI sequences (colors,
//! cursor moves), OSC sequences (hyperlinks, titles) and other escapes are removed; a bare `\r`
//! returns to column 0 so later text overwrites earlier text (progress bars keep only their last
//! frame); `ESC[K` erases; backspace moves back one column. `\r\n` is a newline. Columns are
//! counted in chars, not display cells (a CJK char counts as one column).
//!
//! One input line stays one output line (line numbers point into the saved file), so a move to
//! another screen row (`ESC[24;1H`, `ESC[1B`: a full-screen program's redraw) cannot be drawn
//! where it goes: the text after it starts a new stretch of the line, one space after what is
//! there, and the erases and column moves after it act on that stretch only. Without this,
//! htop's `Tasks: 363` then (on row 24) `1:htop*` read as `Tasks: 3631:htop*`, a number the
//! output never showed (session 31, a raw PTY recording).

use std::borrow::Cow;

/// Furthest column a cursor move may reach (a hostile `ESC[99999999G` must not allocate
/// gigabytes of padding); 512 columns is wider than any real terminal line of interest.
const MAX_COLUMN: usize = 512;

/// Cleans `text` (see the module docs). Borrows when there is nothing to clean.
pub fn clean(text: &str) -> Cow<'_, str> {
    if !text
        .chars()
        .any(|c| matches!(c, '\x1b' | '\r' | '\x08' | '\x07' | '\u{9b}'))
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut line = Line::default();
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\n' => line.flush(&mut out, true),
            '\r' => {
                if it.peek() == Some(&'\n') {
                    it.next();
                    line.flush(&mut out, true);
                } else {
                    line.cursor = line.start;
                }
            }
            '\x08' => line.cursor = line.cursor.saturating_sub(1).max(line.start),
            '\x07' => {}
            '\x1b' => match it.peek().copied() {
                Some('[') => {
                    it.next();
                    csi(&mut it, &mut line);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    it.next();
                    string_sequence(&mut it);
                }
                Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%' | ' ') => {
                    it.next();
                    // The designator byte, but never a newline (a cut-off `ESC (` at a line's
                    // end must not merge two lines; found by `clean_prop`).
                    if it.peek() != Some(&'\n') {
                        it.next();
                    }
                }
                Some('\n') | None => {}
                Some(_) => {
                    it.next();
                }
            },
            '\u{9b}' => csi(&mut it, &mut line),
            c => line.put(c),
        }
    }
    line.flush(&mut out, false);
    Cow::Owned(out)
}

/// The line being drawn and the cursor's column in it.
#[derive(Default)]
struct Line {
    /// Characters of the current line, one per column.
    cells: Vec<char>,
    /// Column where the next character lands.
    cursor: usize,
    /// Column where the current screen row's stretch starts: 0, or past the text drawn before
    /// the last move to another row (see the module docs).
    start: usize,
}

impl Line {
    /// Furthest column a cursor move may reach: the line's end or [`MAX_COLUMN`].
    fn max_cursor(&self) -> usize {
        self.cells.len().max(MAX_COLUMN)
    }

    fn put(&mut self, c: char) {
        if self.cursor < self.cells.len() {
            self.cells[self.cursor] = c;
        } else {
            self.cells.resize(self.cursor, ' ');
            self.cells.push(c);
        }
        self.cursor += 1;
    }

    fn flush(&mut self, out: &mut String, newline: bool) {
        out.extend(self.cells.drain(..));
        if newline {
            out.push('\n');
        }
        self.cursor = 0;
        self.start = 0;
    }

    /// A move to another screen row: what follows starts a new stretch, one space after the
    /// text drawn so far (none when there is none, or it already ends in a space).
    fn next_row(&mut self) {
        if self.cells.last().is_some_and(|c| *c != ' ') {
            self.cells.push(' ');
        }
        self.start = self.cells.len();
        self.cursor = self.start;
    }
}

/// Consumes a CSI sequence after `ESC [` (parameters, intermediates, final byte) and applies the
/// few that change what a line shows: `K` (erase in line), `G`/`C`/`D` (cursor column), and
/// the moves to another row (`H`/`f`, `d`, `A`/`B`/`E`/`F`: [`Line::next_row`]).
fn csi(it: &mut std::iter::Peekable<std::str::Chars<'_>>, line: &mut Line) {
    let mut params = String::new();
    while let Some(&c) = it.peek() {
        match c {
            '\x30'..='\x3f' | '\x20'..='\x2f' => {
                params.push(c);
                it.next();
            }
            '\x40'..='\x7e' => {
                it.next();
                let n = |default: usize| -> usize {
                    params
                        .split(';')
                        .next()
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(default)
                };
                match c {
                    'K' => match n(0) {
                        0 => line.cells.truncate(line.cursor.max(line.start)),
                        1 => {
                            let end = (line.cursor + 1).min(line.cells.len());
                            let from = line.start.min(end);
                            line.cells[from..end].iter_mut().for_each(|x| *x = ' ');
                        }
                        _ => line.cells.truncate(line.start),
                    },
                    'G' => {
                        line.cursor = (line.start + n(1).max(1) - 1)
                            .min(line.max_cursor())
                            .max(line.start)
                    }
                    'A' | 'B' | 'E' | 'F' | 'd' => line.next_row(),
                    // `ESC[H`, `ESC[1;5H`: a move to row 1 is a move too (the row drawn
                    // before is not known).
                    'H' | 'f' => line.next_row(),
                    'C' => {
                        line.cursor = line
                            .cursor
                            .saturating_add(n(1).max(1))
                            .min(line.max_cursor())
                    }
                    'D' => line.cursor = line.cursor.saturating_sub(n(1).max(1)).max(line.start),
                    _ => {}
                }
                return;
            }
            // Malformed: stop here and let the character be handled as text.
            _ => return,
        }
    }
}

/// Consumes an OSC/DCS/SOS/PM/APC string up to BEL or `ESC \`; stops before a newline so an
/// unterminated sequence cannot swallow the rest of the output.
fn string_sequence(it: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = it.peek() {
        match c {
            '\x07' | '\u{9c}' => {
                it.next();
                return;
            }
            '\n' => return,
            '\x1b' => {
                it.next();
                if it.peek() == Some(&'\\') {
                    it.next();
                }
                return;
            }
            _ => {
                it.next();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus(name: &str) -> Vec<u8> {
        crate::guard::test_corpus(name)
    }

    #[test]
    fn case_16_ansi_progress() {
        let raw = String::from_utf8(corpus("cases/case_16_ansi_progress.txt")).unwrap();
        let c = clean(&raw);
        assert!(!c.contains('\x1b'), "{c}");
        assert!(!c.contains('\r'));
        for keep in [
            "FAIL  src/auth.test.js",
            "auth › rejects expired token",
            "Expected: 401",
            "Received: 200",
            "src/auth.test.js:27:31",
            "Tests:       1 failed, 41 passed, 42 total",
        ] {
            assert!(c.contains(keep), "missing {keep:?} in\n{c}");
        }
        assert!(c.contains("Running tests 100% [####################]"));
        assert!(!c.contains("Running tests 5%"), "{c}");
        assert!(!c.contains("file:///"), "OSC 8 target leaked: {c}");
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(clean("a\nb\tc"), Cow::Borrowed("a\nb\tc")));
    }

    #[test]
    fn carriage_return_overwrites_and_crlf_is_newline() {
        assert_eq!(clean("abcdef\rXY"), "XYcdef");
        assert_eq!(clean("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(clean("10%\r20%\r100%\ndone"), "100%\ndone");
        assert_eq!(clean("long line\r\x1b[Kshort"), "short");
        assert_eq!(clean("abc\x08\x08X"), "aXc");
    }

    #[test]
    fn escapes_removed() {
        assert_eq!(clean("\x1b[1;31mred\x1b[0m ok"), "red ok");
        assert_eq!(clean("\x1b]0;title\x07text"), "text");
        assert_eq!(
            clean("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ end"),
            "link end"
        );
        assert_eq!(clean("\x1b(Bplain"), "plain");
        // Unterminated OSC stops at the newline.
        assert_eq!(clean("\x1b]0;oops\nnext"), "\nnext");
        // Dangling ESC at the end.
        assert_eq!(clean("x\x1b"), "x");
        assert_eq!(clean("x\x1b["), "x");
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_removes_escapes(
            text in r"(\PC|\x1b|\r|\n|\x08|\x07|\[|\]|[0-9;]|K|m|G|C|\\){0,200}"
        ) {
            let c = clean(&text);
            proptest::prop_assert!(!c.contains('\r'));
            proptest::prop_assert!(!c.contains('\x1b'));
            let lines = text.matches('\n').count() + 1;
            proptest::prop_assert!(c.len() <= text.len() * 4 + lines * MAX_COLUMN);
        }
    }

    #[test]
    fn huge_cursor_moves_are_capped() {
        let c = clean("a\x1b[99999999Gb\x1b[99999999Cc");
        assert!(c.len() < 2 * MAX_COLUMN, "{}", c.len());
        assert!(c.starts_with('a') && c.ends_with('c'));
    }

    #[test]
    fn a_move_to_another_row_keeps_the_words_apart() {
        // htop's header, then its status bar on row 24: no `3631` out of `363` and `1:htop*`.
        assert_eq!(
            clean("Tasks: \x1b[1m363\x1b[24;1H\x1b[43m1:htop*"),
            "Tasks: 363 1:htop*"
        );
        assert_eq!(clean("a\x1b[1Bb\x1b[2dc\x1b[Hd"), "a b c d");
        // An erase after the move erases that row's text, not the row drawn before it.
        assert_eq!(clean("kept\x1b[1A\x1b[2Knew"), "kept new");
        assert_eq!(clean("kept\x1b[1A\x1b[Knew\rN"), "kept New");
        // A column move counts from the stretch's start.
        assert_eq!(clean("ab\x1b[2;1Hx\x1b[3Gy"), "ab x y");
        // Columns on one row still overwrite as before.
        assert_eq!(clean("abc\x1b[2Gx"), "axc");
    }

    #[test]
    fn non_ascii_overwrite() {
        assert_eq!(clean("日本語\rab"), "ab語");
    }
}

#[cfg(test)]
mod clean_prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Arbitrary text with escape-heavy pieces: no panic, no ESC/CSI/`\r` left, and exactly
        /// as many lines out as in (an escape never eats or adds a newline).
        #[test]
        fn keeps_line_count_and_drops_escapes(
            parts in proptest::collection::vec(
                prop_oneof![
                    any::<String>(),
                    Just("\x1b".to_string()),
                    Just("\x1b[".to_string()),
                    Just("\x1b]8;;".to_string()),
                    Just("\x1b(".to_string()),
                    Just("\u{9b}".to_string()),
                    Just("\r".to_string()),
                    Just("\r\n".to_string()),
                    Just("\n".to_string()),
                    "[0-9;?]{0,6}[A-Za-z@`~]",
                ],
                0..40,
            )
        ) {
            let text: String = parts.concat();
            let c = clean(&text);
            prop_assert!(!c.contains('\x1b'), "{:?} -> {:?}", text, c);
            prop_assert!(!c.contains('\r'), "{:?} -> {:?}", text, c);
            prop_assert!(!c.contains('\u{9b}'), "{:?} -> {:?}", text, c);
            prop_assert_eq!(
                c.matches('\n').count(),
                text.matches('\n').count(),
                "{:?} -> {:?}", text, c
            );
        }
    }

    #[test]
    fn charset_escape_before_newline_keeps_the_line() {
        assert_eq!(clean("a\x1b(\nb"), "a\nb");
        assert_eq!(clean("a\x1b(\r\nb"), "a\nb");
    }
}
