//! A saved file read back through a tool is never saved again.
//!
//! When an agent follows a pointer (`Read` of `…/long_responses/<file>`, `sed -n 1,200p
//! .toolsum/<s>/long_responses/<file>`, an MCP `read_file` with that path), the output is (a
//! window of) a file toolsum already saved. Saving it again would add a copy per read, and a
//! summary pointing at the copy would send the agent round in a loop, never seeing the body
//! (reported by users of other guards). So the guard answers with the window itself when it is
//! under the limit (the usual pass-through), and over it with the summary pointing at the same
//! file, nothing saved.
//!
//! [`saved_source`] finds such a file in the call's arguments: every string value (nested
//! anywhere) is split into words, and a word naming `long_responses/<name>` is taken when
//! - it is an absolute path whose parent directory is named `long_responses` and which is a
//!   regular file (not a symlink), or
//! - `<session>/long_responses/<name>` is a regular file of this session (relative paths from
//!   any working directory, e.g. `.toolsum/<session>/long_responses/<name>`).

use std::path::Path;

use serde_json::Value;

use super::save::{text_kind, SAVE_DIR};
use super::SavedFile;

/// Most string values of the arguments looked at (a huge argument list is not a read).
const MAX_STRINGS: usize = 256;

/// Bytes of a found file read to tell its media type.
const SNIFF_BYTES: usize = 64 * 1024;

/// The saved file the call's `args` read back, if any (see the module docs). `path` is
/// session-relative (`long_responses/<name>`) for a file of this session, else absolute; `bytes`
/// is the file's size.
pub fn saved_source(args: &Value, session_dir: &Path) -> Option<SavedFile> {
    let mut strings = Vec::new();
    collect_strings(args, &mut strings);
    strings
        .into_iter()
        .take(MAX_STRINGS)
        .flat_map(|s| s.split(is_separator).collect::<Vec<_>>())
        .filter(|w| w.contains(SAVE_DIR))
        .find_map(|w| resolve(w, session_dir))
}

fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | '`' | '=' | ',' | ';' | '(' | ')' | '<' | '>' | '|' | '&'
        )
}

fn regular_file(p: &Path) -> Option<u64> {
    std::fs::symlink_metadata(p)
        .ok()
        .filter(|m| m.file_type().is_file())
        .map(|m| m.len())
}

fn resolve(word: &str, session_dir: &Path) -> Option<SavedFile> {
    let word = word.trim_end_matches([':', '.']);
    let name = word.rsplit_once(&format!("{SAVE_DIR}/"))?.1;
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return None;
    }
    let own = session_dir.join(SAVE_DIR).join(name);
    let p = Path::new(word);
    let (path, shown) = if let Some(bytes) = regular_file(&own) {
        (own, (format!("{SAVE_DIR}/{name}"), bytes))
    } else if p.is_absolute() {
        let bytes = regular_file(p)?;
        (p.to_path_buf(), (word.to_string(), bytes))
    } else {
        return None;
    };
    let media_type = media_type_of(&path);
    Some(SavedFile {
        path: shown.0,
        bytes: shown.1,
        media_type,
    })
}

fn media_type_of(path: &Path) -> String {
    use std::io::Read;
    let mut head = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(SNIFF_BYTES as u64).read_to_end(&mut head);
    }
    if let Some(t) = infer::get(&head).filter(|t| t.matcher_type() != infer::MatcherType::Text) {
        return t.mime_type().to_string();
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => "application/json".into(),
        Some("html") => "text/html".into(),
        Some("xml") => "application/xml".into(),
        _ => text_kind(&head).1.to_string(),
    }
}

/// Bytes of a saved file searched for a window's start; a larger file's window start is not
/// looked for (saved outputs are rarely past tens of MB; reading more per read-back is not
/// worth an anchor offset).
const MAX_SEARCHED_BYTES: u64 = 256 << 20;

/// Lines of a window matched against the saved file to find where it starts.
const MATCHED_LINES: usize = 3;

/// Bytes of each matched line compared: tools cut long lines when they show a window (Claude
/// Code's `Read` at 2,000 characters), so only a line's start is compared.
const MATCHED_PREFIX: usize = 160;

/// How many lines of the saved file at `path` come before `window`, its content read back by a
/// tool (`Read` with an offset, `sed -n 'A,Bp'`, `tail -n +K`): 0 for a window from its first
/// line, `None` when it is not known.
///
/// The window's first [`MATCHED_LINES`] lines (their first [`MATCHED_PREFIX`] bytes) are
/// looked for at line starts of the file. One place: that is where it starts. Several (a
/// window that opens with lines repeated in the file): the one a number of the call's `args`
/// names (an `offset` or a `sed` line, 0- or 1-based), else `None`. A window with line numbers
/// added (`cat -n`, `grep -n`) or changed lines matches nowhere: `None`.
pub fn window_start(window: &[u8], path: &Path, args: &Value) -> Option<usize> {
    let file = {
        let meta = std::fs::metadata(path).ok()?;
        if meta.len() > MAX_SEARCHED_BYTES {
            return None;
        }
        std::fs::read(path).ok()?
    };
    let first: Vec<&[u8]> = window
        .split(|&b| b == b'\n')
        .take(MATCHED_LINES)
        .map(|l| &l[..l.len().min(MATCHED_PREFIX)])
        .collect();
    // A window of one short line, or blank first lines, says too little to place.
    if first.iter().all(|l| l.iter().all(u8::is_ascii_whitespace)) {
        return (window.is_empty() || file.starts_with(window)).then_some(0);
    }
    let file_line = |start: usize, k: usize| -> Option<&[u8]> {
        let mut at = start;
        for _ in 0..k {
            at += memchr::memchr(b'\n', &file[at..])? + 1;
        }
        let end = memchr::memchr(b'\n', &file[at..]).map_or(file.len(), |e| at + e);
        Some(&file[at..end])
    };
    let mut found = Vec::new();
    let mut line = 0;
    let mut last = 0;
    for at in memchr::memmem::find_iter(&file, first[0]) {
        if at > 0 && file[at - 1] != b'\n' {
            continue;
        }
        let matches = first.iter().enumerate().skip(1).all(|(k, want)| {
            file_line(at, k)
                .is_some_and(|l| l.starts_with(want) || (want.is_empty() && l.is_empty()))
        });
        if matches {
            line += memchr::memchr_iter(b'\n', &file[last..at]).count();
            last = at;
            found.push(line);
        }
    }
    match found[..] {
        [only] => Some(only),
        [] => None,
        _ => {
            let mut named = Vec::new();
            numbers(args, &mut named);
            let hit: Vec<usize> = found
                .iter()
                .copied()
                .filter(|&b| named.contains(&(b as u64)) || named.contains(&(b as u64 + 1)))
                .collect();
            (hit.len() == 1).then(|| hit[0])
        }
    }
}

/// Every whole number in `v`: number values, and digit runs inside strings (`sed -n 3001,5000p`).
fn numbers(v: &Value, out: &mut Vec<u64>) {
    match v {
        Value::Number(n) => out.extend(n.as_u64()),
        Value::String(s) => out.extend(
            s.split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse::<u64>().ok()),
        ),
        Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
        Value::Object(o) => o.values().for_each(|x| numbers(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session_with(name: &str, body: &[u8]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join(SAVE_DIR)).unwrap();
        std::fs::write(d.path().join(SAVE_DIR).join(name), body).unwrap();
        d
    }

    #[test]
    fn finds_reads_of_saved_files_in_any_argument_shape() {
        let name = "20260101T000000.000_Bash.txt";
        let d = session_with(name, b"0123456789");
        let abs = d.path().join(SAVE_DIR).join(name);
        for args in [
            json!({"file_path": abs, "offset": 10, "limit": 50}),
            json!({"command": format!("sed -n '1,200p' .toolsum/s1/long_responses/{name}")}),
            json!({"command": ["bash", "-lc", format!("grep -n ERROR \"long_responses/{name}\"")]}),
            json!({"path": format!("long_responses/{name}:")}),
        ] {
            let s = saved_source(&args, d.path()).unwrap_or_else(|| panic!("{args}"));
            assert_eq!(s.path, format!("long_responses/{name}"), "{args}");
            assert_eq!(s.bytes, 10);
            assert_eq!(s.media_type, "text/plain");
        }
        // A file of another session (e.g. the fallback dir): its absolute path.
        let other = tempfile::tempdir().unwrap();
        let s = saved_source(&json!({"file_path": abs}), other.path()).unwrap();
        assert_eq!(s.path, abs.to_str().unwrap());
    }

    #[test]
    fn ignores_what_is_not_a_saved_file() {
        let d = session_with("a.txt", b"x");
        for args in [
            json!({"command": "ls long_responses/"}),
            json!({"command": "cat long_responses/missing.txt"}),
            json!({"file_path": "/etc/passwd"}),
            json!({"command": "cat long_responses/../../etc/passwd"}),
            json!({"command": "cat long_responses/.tmp-x.part"}),
            json!(42),
        ] {
            assert!(saved_source(&args, d.path()).is_none(), "{args}");
        }
        // A symlink named like a saved file is not followed.
        std::os::unix::fs::symlink("/etc/hostname", d.path().join(SAVE_DIR).join("l.txt")).unwrap();
        let abs = d.path().join(SAVE_DIR).join("l.txt");
        assert!(saved_source(&json!({"file_path": abs}), d.path()).is_none());
    }

    #[test]
    fn finds_where_a_window_starts_in_the_saved_file() {
        let body: String = (1..=500)
            .map(|i| format!("line {i} of the log\n"))
            .collect();
        let d = session_with("w.txt", body.as_bytes());
        let path = d.path().join(SAVE_DIR).join("w.txt");
        let window = |from: usize, n: usize| -> String {
            body.lines()
                .skip(from)
                .take(n)
                .map(|l| format!("{l}\n"))
                .collect()
        };
        let none = Value::Null;
        assert_eq!(
            window_start(window(0, 40).as_bytes(), &path, &none),
            Some(0)
        );
        assert_eq!(
            window_start(window(300, 40).as_bytes(), &path, &none),
            Some(300)
        );
        // The last line without its line break, and lines a tool cut short, still place it.
        let cut = format!("{}line 499 of the l", window(497, 1));
        assert_eq!(window_start(cut.as_bytes(), &path, &none), Some(497));
        // Line numbers added by the tool (`cat -n`): not a slice of the file.
        let numbered = "   301\tline 301 of the log\n   302\tline 302 of the log\n";
        assert_eq!(window_start(numbered.as_bytes(), &path, &none), None);
    }

    #[test]
    fn a_window_of_repeated_lines_is_placed_by_the_calls_numbers_or_not_at_all() {
        // The same four lines at lines 31 and 131 (0-based 30 and 130).
        let body: String = (0..200)
            .map(|i| match i % 100 {
                30..=33 => format!("{}\n", ["a", "b", "c", "a"][i % 100 - 30]),
                _ => format!("x{i}\n"),
            })
            .collect();
        let d = session_with("r.txt", body.as_bytes());
        let path = d.path().join(SAVE_DIR).join("r.txt");
        let w = b"a\nb\nc\na\n";
        assert_eq!(window_start(w, &path, &Value::Null), None);
        // Claude Code's `Read` offset is 1-based, `sed -n` lines are too; Gemini's is 0-based.
        let read = json!({"file_path": "x", "offset": 31, "limit": 4});
        assert_eq!(window_start(w, &path, &read), Some(30));
        let sed = json!({"command": "sed -n '31,34p' long_responses/r.txt"});
        assert_eq!(window_start(w, &path, &sed), Some(30));
        let gemini = json!({"absolute_path": "x", "offset": 30});
        assert_eq!(window_start(w, &path, &gemini), Some(30));
    }
}
