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

/// `args` with every word that names a saved file (`…/long_responses/<name>`) taken out of
/// its strings: the digits and words of a saved file's name (`20261205T165936.351_Bash.txt`)
/// are no words of the question (`351` picked lines `… in 351 ms`).
pub fn without_saved_paths(args: &Value) -> Value {
    match args {
        Value::String(s) if s.contains(SAVE_DIR) => {
            let mut out = String::with_capacity(s.len());
            let mut word = String::new();
            let flush = |word: &mut String, out: &mut String| {
                if !word.contains(&format!("{SAVE_DIR}/")) {
                    out.push_str(word);
                }
                word.clear();
            };
            for c in s.chars() {
                if is_separator(c) {
                    flush(&mut word, &mut out);
                    out.push(c);
                } else {
                    word.push(c);
                }
            }
            flush(&mut word, &mut out);
            Value::String(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(without_saved_paths).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), without_saved_paths(v)))
                .collect(),
        ),
        v => v.clone(),
    }
}

/// Bytes of a saved file searched for a window's start; a larger file's window start is not
/// looked for (saved outputs are rarely past tens of MB; reading more per read-back is not
/// worth an anchor offset).
const MAX_SEARCHED_BYTES: u64 = 256 << 20;

/// Bytes of the window's first line looked for in the file: tools cut long lines when they
/// show a window (Claude Code's `Read` at 2,000 characters), so only a line's start is.
const MATCHED_PREFIX: usize = 160;

/// Shortest window line taken as a cut copy of a longer file line (a tool's cut of a long
/// line); a shorter one must equal its line.
const MIN_CUT_LINE: usize = 1_000;

/// Bytes compared in all, over every place tried, before the search gives up (a window
/// whose first line repeats thousands of times in a file of such repeats).
const MAX_COMPARED_BYTES: usize = 64 << 20;

/// How many lines of the saved file at `path` come before `window`, its content read back by a
/// tool (`Read` with an offset, `sed -n 'A,Bp'`, `tail -n +K`, `head`): 0 for a window from
/// its first line, `None` when it is not known.
///
/// A window is placed where it is a run of the file's lines: every line of it equal to the
/// file's line there (a long one may be cut: a prefix of [`MIN_CUT_LINE`] bytes or more; the
/// last one may be cut anywhere). Places are tried where the window's first line starts a
/// line of the file. One place: that is where it starts. Several (a window repeated in the
/// file): the one the call's offset names (`offset`, `start_line`, `startLine` 0- or 1-based,
/// `sed -n 'A,…p'`, `tail -n +K`), else `None`. Lines picked from all over the file (`grep`),
/// or changed (`cat -n`, `grep -n`), are no run of it: `None`.
pub fn window_start(window: &[u8], path: &Path, args: &Value) -> Option<usize> {
    let file = {
        let meta = std::fs::metadata(path).ok()?;
        if meta.len() > MAX_SEARCHED_BYTES {
            return None;
        }
        std::fs::read(path).ok()?
    };
    if window.is_empty() {
        return Some(0);
    }
    let wlines: Vec<&[u8]> = window
        .strip_suffix(b"\n")
        .unwrap_or(window)
        .split(|&b| b == b'\n')
        .collect();
    let first = wlines[0];
    let needle = &first[..first.len().min(MATCHED_PREFIX)];
    let mut budget = MAX_COMPARED_BYTES;
    // True when the window is a run of the file's lines from byte `at`.
    let mut run_at = |at: usize| -> Option<bool> {
        let mut pos = at;
        for (k, w) in wlines.iter().enumerate() {
            if pos > file.len() || (pos == file.len() && k > 0) {
                return Some(false);
            }
            let end = memchr::memchr(b'\n', &file[pos..]).map_or(file.len(), |e| pos + e);
            let line = &file[pos..end];
            budget = budget.checked_sub(w.len().min(line.len()) + 1)?;
            let last = k + 1 == wlines.len();
            let same = line == *w || (line.starts_with(w) && (last || w.len() >= MIN_CUT_LINE));
            if !same {
                return Some(false);
            }
            pos = end + 1;
        }
        Some(true)
    };
    let mut found = Vec::new();
    let mut line = 0;
    let mut last = 0;
    let starts: Box<dyn Iterator<Item = usize>> = if needle.is_empty() {
        Box::new(std::iter::once(0).chain(memchr::memchr_iter(b'\n', &file).map(|i| i + 1)))
    } else {
        Box::new(memchr::memmem::find_iter(&file, needle))
    };
    for at in starts {
        if at > 0 && file[at - 1] != b'\n' {
            continue;
        }
        if run_at(at)? {
            line += memchr::memchr_iter(b'\n', &file[last..at]).count();
            last = at;
            found.push(line);
        }
    }
    match found[..] {
        [only] => Some(only),
        [] => None,
        _ => {
            let named = offsets(args);
            let hit: Vec<usize> = found
                .iter()
                .copied()
                .filter(|&b| named.contains(&b) || named.contains(&(b + 1)))
                .collect();
            (hit.len() == 1).then(|| hit[0])
        }
    }
}

/// Keys of a read tool's arguments that name the first line read (Claude Code's `Read` and
/// Codex's `read_file` count from 1, Gemini CLI's `read_file` and OpenCode's `read` from 0).
const OFFSET_KEYS: [&str; 5] = [
    "offset",
    "start_line",
    "startLine",
    "line_start",
    "from_line",
];

/// The first lines a call names: the numbers of [`OFFSET_KEYS`] anywhere in `args`, and in
/// its strings `sed -n 'A,Bp'` / `sed -n Ap` (A) and `tail -n +K` / `tail +K` (K). Never the
/// other numbers (a `limit`, a `head -n N`, the digits of a file name).
fn offsets(args: &Value) -> Vec<usize> {
    static SHELL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"\bsed\s+-n\s+['"]?(\d+)\s*[,p]|\btail\s+(?:-n\s*)?\+(\d+)"#).unwrap()
    });
    let mut out = Vec::new();
    let mut walk = vec![args];
    while let Some(v) = walk.pop() {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    match x.as_u64() {
                        Some(n) if OFFSET_KEYS.contains(&k.as_str()) => out.push(n as usize),
                        _ => walk.push(x),
                    }
                }
            }
            Value::Array(a) => walk.extend(a),
            Value::String(s) => out.extend(SHELL.captures_iter(s).filter_map(|c| {
                c.get(1)
                    .or_else(|| c.get(2))
                    .and_then(|m| m.as_str().parse::<usize>().ok())
            })),
            _ => {}
        }
    }
    out
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

    /// A log of blocks that open on the same three lines (a load test's iterations): a window
    /// is placed by all of its lines, not by its first three, and never by a `limit` or a
    /// `head -n` count that happens to name a later block.
    #[test]
    fn a_window_is_placed_by_all_its_lines() {
        let body: String = (0..60)
            .flat_map(|b| {
                [
                    "==== iteration start ====".to_string(),
                    "setting up".into(),
                    "connecting".into(),
                ]
                .into_iter()
                .chain((0..7).map(move |k| format!("order id={} done", b * 7 + k)))
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let d = session_with("b.txt", body.as_bytes());
        let path = d.path().join(SAVE_DIR).join("b.txt");
        let lines: Vec<&str> = body.lines().collect();
        let take = |from: usize, n: usize| -> String {
            lines[from..from + n]
                .iter()
                .map(|l| format!("{l}\n"))
                .collect()
        };
        // `head -n 100` / `Read` with a limit of 100: from line 1, though 100 is a block start.
        let head = json!({"command": "head -n 100 long_responses/b.txt"});
        assert_eq!(window_start(take(0, 100).as_bytes(), &path, &head), Some(0));
        let read = json!({"file_path": "x", "limit": 100});
        assert_eq!(window_start(take(0, 100).as_bytes(), &path, &read), Some(0));
        // `tail -n 300`: where it starts, whatever the count says.
        let tail = json!({"command": "tail -n 300 long_responses/b.txt"});
        assert_eq!(
            window_start(take(300, 300).as_bytes(), &path, &tail),
            Some(300)
        );
        // `grep`: the three opening lines, then lines from all over the file.
        let grep: String = lines
            .iter()
            .enumerate()
            .filter(|(i, l)| *i < 3 || l.contains("id=4"))
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        assert_eq!(window_start(grep.as_bytes(), &path, &Value::Null), None);
    }

    #[test]
    fn a_saved_files_name_is_taken_out_of_the_arguments() {
        let args = json!({
            "command": "sed -n '5001,7000p' .toolsum/demo/long_responses/20261205T165936.351_Bash.txt | grep ms",
            "file_path": "/p/.toolsum/s/long_responses/x.txt",
            "limit": 2000
        });
        let got = without_saved_paths(&args);
        assert_eq!(got["command"], "sed -n '5001,7000p'  | grep ms");
        assert_eq!(got["file_path"], "");
        assert_eq!(got["limit"], 2000);
    }
}
