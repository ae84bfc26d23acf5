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
}
