//! Saving a full tool result under `<session>/long_responses/`, safely and atomically.
//!
//! Names are `<UTC yyyymmddThhmmss.mmm>_<tool>[-N].<ext>`: the tool name is reduced to
//! `[A-Za-z0-9._-]`, at most [`MAX_TOOL_CHARS`] characters and never led by a dot, so it cannot
//! leave the directory. The content is written to a hidden temp file in the same directory and
//! then linked under its final name without overwriting (`renameat2(RENAME_NOREPLACE)` or
//! `link`), so no partial file ever carries a final name and two requests in the same
//! millisecond get two files (`-1`, `-2`, ... on a clash). Files are mode 0600, the directory 0700.
//!
//! Not fsynced: a crash may lose a just-saved file, but never leaves a truncated one under a
//! final name that a later request could mistake for complete (the temp name is hidden).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::{GuardError, SavedFile};

/// Name of the directory, inside the session dir, that holds saved results.
pub const SAVE_DIR: &str = "long_responses";

/// Longest sanitized tool name kept in a file name, in characters (from the issue).
pub const MAX_TOOL_CHARS: usize = 64;

/// Most `-N` suffixes tried when names clash before giving up with an I/O error.
const MAX_CLASH_SUFFIX: usize = 10_000;

/// Reduces a tool name to a safe file-name part: characters outside `[A-Za-z0-9._-]` become `_`,
/// leading dots are dropped (never `.`/`..`-led), at most [`MAX_TOOL_CHARS`] characters;
/// an empty result becomes `tool`.
pub fn sanitize_tool(tool: &str) -> String {
    let mapped: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let trimmed: String = mapped
        .trim_start_matches('.')
        .chars()
        .take(MAX_TOOL_CHARS)
        .collect();
    if trimmed.is_empty() {
        "tool".to_string()
    } else {
        trimmed
    }
}

/// Extension and media type for a text result, from its content: `json` if it parses as JSON,
/// `html` if it starts with a doctype/`<html`, `xml` if it starts with `<?xml` (or is a single
/// element), `txt` otherwise.
pub fn text_kind(bytes: &[u8]) -> (&'static str, &'static str) {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let body = &bytes[start..];
    let first = body.first().copied();
    if matches!(first, Some(b'{' | b'[' | b'"'))
        && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
    {
        return ("json", "application/json");
    }
    if first == Some(b'<') {
        let head: Vec<u8> = body
            .iter()
            .take(64)
            .map(|b| b.to_ascii_lowercase())
            .collect();
        if head.starts_with(b"<!doctype html") || head.starts_with(b"<html") {
            return ("html", "text/html");
        }
        let end = bytes
            .iter()
            .rposition(|b| !b.is_ascii_whitespace())
            .map(|i| bytes[i]);
        if head.starts_with(b"<?xml") || end == Some(b'>') {
            return ("xml", "application/xml");
        }
    }
    ("txt", "text/plain")
}

/// Human-readable size in 1024-based units with one decimal: `812 bytes`, `281.1 KB`, `3.4 MB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Formats an integer with `,` thousands separators: `28627` → `28,627`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Checks that the session dir is absolute and an existing directory.
///
/// # Errors
/// [`GuardError::BadSessionDir`] when it is relative, missing or not a directory.
pub fn check_session_dir(session_dir: &Path) -> Result<(), GuardError> {
    let bad = |why| GuardError::BadSessionDir {
        path: session_dir.to_path_buf(),
        why,
    };
    if !session_dir.is_absolute() {
        return Err(bad("not an absolute path"));
    }
    match fs::metadata(session_dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(bad("not a directory")),
        Err(_) => Err(bad("does not exist")),
    }
}

/// Returns `<session>/long_responses`, creating it with mode 0700 when missing.
///
/// # Errors
/// [`GuardError::BadSessionDir`] (see [`check_session_dir`]); [`GuardError::UnsafeSaveDir`] when
/// `long_responses` is a symlink or not a directory; [`GuardError::from_io`] when it cannot be
/// created.
pub fn ensure_save_dir(session_dir: &Path) -> Result<PathBuf, GuardError> {
    check_session_dir(session_dir)?;
    let dir = session_dir.join(SAVE_DIR);
    for _ in 0..2 {
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(GuardError::UnsafeSaveDir {
                    path: dir,
                    why: "is a symlink",
                })
            }
            Ok(m) if m.is_dir() => return Ok(dir),
            Ok(_) => {
                return Err(GuardError::UnsafeSaveDir {
                    path: dir,
                    why: "is not a directory",
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match fs::DirBuilder::new().mode(0o700).create(&dir) {
                    Ok(()) => return Ok(dir),
                    // Another request created it (or a symlink) meanwhile: look again.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(GuardError::from_io(&dir, e)),
                }
            }
            Err(e) => return Err(GuardError::from_io(&dir, e)),
        }
    }
    Err(GuardError::UnsafeSaveDir {
        path: dir,
        why: "changed while being created",
    })
}

/// Saves `bytes` as `<session>/long_responses/<now>_<tool>.<ext>` (see the module docs).
///
/// `ext` must be a plain extension such as `txt` or `png` (characters outside `[A-Za-z0-9]` are
/// dropped). Returns the file's path relative to the session dir, its size and `media_type`.
///
/// # Errors
/// See [`ensure_save_dir`]; writing errors are classified by [`GuardError::from_io`]
/// (`disk_full`, `read_only`, `io`).
pub fn save(
    session_dir: &Path,
    tool: &str,
    bytes: &[u8],
    ext: &str,
    media_type: &str,
) -> Result<SavedFile, GuardError> {
    save_at(session_dir, tool, bytes, ext, media_type, Utc::now())
}

/// [`save`] with an explicit timestamp (so tests can force same-millisecond clashes).
pub(crate) fn save_at(
    session_dir: &Path,
    tool: &str,
    bytes: &[u8],
    ext: &str,
    media_type: &str,
    now: DateTime<Utc>,
) -> Result<SavedFile, GuardError> {
    let dir = ensure_save_dir(session_dir)?;
    let stamp = now.format("%Y%m%dT%H%M%S%.3f").to_string();
    let tool = sanitize_tool(tool);
    let ext: String = ext
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(16)
        .collect();
    let ext = if ext.is_empty() {
        "bin".to_string()
    } else {
        ext
    };

    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".part")
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(&dir)
        .map_err(|e| GuardError::from_io(&dir, e))?;
    let tmp_path = tmp.path().to_path_buf();
    tmp.as_file_mut()
        .write_all(bytes)
        .and_then(|()| tmp.as_file_mut().flush())
        .map_err(|e| GuardError::from_io(&tmp_path, e))?;

    for n in 0..=MAX_CLASH_SUFFIX {
        let name = if n == 0 {
            format!("{stamp}_{tool}.{ext}")
        } else {
            format!("{stamp}_{tool}-{n}.{ext}")
        };
        let target = dir.join(&name);
        match tmp.persist_noclobber(&target) {
            Ok(_) => {
                return Ok(SavedFile {
                    path: format!("{SAVE_DIR}/{name}"),
                    bytes: bytes.len() as u64,
                    media_type: media_type.to_string(),
                })
            }
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => tmp = e.file,
            Err(e) => return Err(GuardError::from_io(&target, e.error)),
        }
    }
    Err(GuardError::Io {
        path: dir,
        source: std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "too many files with the same name",
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir.join(SAVE_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn sanitizer_keeps_paths_inside() {
        assert_eq!(sanitize_tool("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(sanitize_tool(".."), "tool");
        assert_eq!(sanitize_tool("."), "tool");
        assert_eq!(sanitize_tool(""), "tool");
        assert_eq!(sanitize_tool("...hidden"), "hidden");
        assert_eq!(sanitize_tool("mcp__pw__shot"), "mcp__pw__shot");
        assert_eq!(sanitize_tool("Bash"), "Bash");
        assert_eq!(sanitize_tool("a b/c\\d\0e"), "a_b_c_d_e");
        assert_eq!(sanitize_tool("é"), "_");
        let long = "x".repeat(200);
        assert_eq!(sanitize_tool(&long).len(), MAX_TOOL_CHARS);
    }

    #[test]
    fn traversal_tool_name_saves_inside_long_responses() {
        let d = tempfile::tempdir().unwrap();
        let s = save(d.path(), "../../etc/passwd", b"hello", "txt", "text/plain").unwrap();
        assert!(s.path.starts_with("long_responses/"), "{}", s.path);
        assert!(!s.path["long_responses/".len()..].contains('/'));
        assert!(s.path.ends_with("_.._etc_passwd.txt"), "{}", s.path);
        assert_eq!(fs::read(d.path().join(&s.path)).unwrap(), b"hello");
        let long = "y".repeat(300);
        let s = save(d.path(), &long, b"x", "txt", "text/plain").unwrap();
        let name = s.path.rsplit('/').next().unwrap();
        // 19 stamp chars + `_` + 64 + `.txt`
        assert_eq!(name.len(), 19 + 1 + MAX_TOOL_CHARS + 4, "{name}");
    }

    #[test]
    fn name_format_and_mode() {
        let d = tempfile::tempdir().unwrap();
        let s = save(d.path(), "Bash", b"abc", "txt", "text/plain").unwrap();
        let re = regex::Regex::new(r"^long_responses/\d{8}T\d{6}\.\d{3}_Bash\.txt$").unwrap();
        assert!(re.is_match(&s.path), "{}", s.path);
        assert_eq!(s.bytes, 3);
        let m = fs::metadata(d.path().join(&s.path)).unwrap();
        assert_eq!(m.mode() & 0o777, 0o600);
        let dm = fs::metadata(d.path().join(SAVE_DIR)).unwrap();
        assert_eq!(dm.mode() & 0o777, 0o700);
        // No temp file left behind.
        assert_eq!(names(d.path()).len(), 1);
    }

    #[test]
    fn same_millisecond_clashes_get_suffixes() {
        let d = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let a = save_at(d.path(), "t", b"1", "txt", "text/plain", now).unwrap();
        let b = save_at(d.path(), "t", b"2", "txt", "text/plain", now).unwrap();
        let c = save_at(d.path(), "t", b"3", "txt", "text/plain", now).unwrap();
        assert!(b.path.ends_with("_t-1.txt"), "{}", b.path);
        assert!(c.path.ends_with("_t-2.txt"), "{}", c.path);
        for (s, want) in [(a, "1"), (b, "2"), (c, "3")] {
            assert_eq!(fs::read_to_string(d.path().join(s.path)).unwrap(), want);
        }
    }

    #[test]
    fn concurrent_same_millisecond_requests_get_distinct_files() {
        let d = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let paths: Vec<String> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|i| {
                    let p = d.path();
                    s.spawn(move || {
                        save_at(p, "t", format!("{i}").as_bytes(), "txt", "text/plain", now)
                            .unwrap()
                            .path
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut uniq = paths.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), 8);
        assert_eq!(names(d.path()).len(), 8);
    }

    #[test]
    fn symlinked_long_responses_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join(SAVE_DIR)).unwrap();
        let e = save(d.path(), "t", b"x", "txt", "text/plain").unwrap_err();
        assert_eq!(e.kind(), "unsafe_save_dir");
        assert!(e.is_request_error());
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn long_responses_as_file_is_refused() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join(SAVE_DIR), b"").unwrap();
        let e = save(d.path(), "t", b"x", "txt", "text/plain").unwrap_err();
        assert_eq!(e.kind(), "unsafe_save_dir");
    }

    #[test]
    fn bad_session_dirs() {
        let e = save(Path::new("relative/dir"), "t", b"x", "txt", "text/plain").unwrap_err();
        assert_eq!(e.kind(), "bad_session_dir");
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("nope");
        let e = save(&missing, "t", b"x", "txt", "text/plain").unwrap_err();
        assert_eq!(e.kind(), "bad_session_dir");
        assert!(!missing.exists());
        let f = d.path().join("file");
        fs::write(&f, b"").unwrap();
        assert_eq!(
            save(&f, "t", b"x", "txt", "text/plain").unwrap_err().kind(),
            "bad_session_dir"
        );
    }

    #[test]
    fn read_only_dir_is_classified() {
        let d = tempfile::tempdir().unwrap();
        let lr = d.path().join(SAVE_DIR);
        fs::DirBuilder::new().mode(0o500).create(&lr).unwrap();
        let r = save(d.path(), "t", b"x", "txt", "text/plain");
        // Root ignores directory permissions; only check the classification when it failed.
        if let Err(e) = r {
            assert_eq!(e.kind(), "read_only");
            assert!(!e.is_request_error());
        }
        fs::set_permissions(&lr, fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[test]
    fn io_errors_are_classified() {
        let k = |code| GuardError::from_io("/x", std::io::Error::from_raw_os_error(code)).kind();
        assert_eq!(k(libc::ENOSPC), "disk_full");
        assert_eq!(k(libc::EROFS), "read_only");
        assert_eq!(k(libc::EIO), "io");
    }

    #[test]
    fn extension_detection() {
        assert_eq!(text_kind(br#" {"a": [1, 2]} "#).0, "json");
        assert_eq!(text_kind(b"[1,2").0, "txt");
        assert_eq!(text_kind(b"{\"a\":1}\n{\"b\":2}\n").0, "txt");
        assert_eq!(text_kind(b"<!DOCTYPE html><html></html>").0, "html");
        assert_eq!(text_kind(b"\n<html lang=en>hi").0, "html");
        assert_eq!(text_kind(b"<?xml version=\"1.0\"?><a/>").0, "xml");
        assert_eq!(text_kind(b"<testsuite name=\"x\"></testsuite>\n").0, "xml");
        assert_eq!(text_kind(b"plain log line\n").0, "txt");
        assert_eq!(text_kind(b"").0, "txt");
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(812), "812 bytes");
        assert_eq!(human_size(287_834), "281.1 KB");
        assert_eq!(human_size(3 * 1024 * 1024 + 400 * 1024), "3.4 MB");
        assert_eq!(thousands(28_627), "28,627");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}

#[cfg(test)]
mod sanitize_prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any tool name becomes one plain file-name part: never a separator, never dot-led,
        /// never empty, at most [`MAX_TOOL_CHARS`] chars of `[A-Za-z0-9._-]`.
        #[test]
        fn never_leaves_long_responses(
            tool in prop_oneof![any::<String>(), "[./\\\\a-z\u{0}-\u{1f}]{0,200}", "(\\.\\./){1,40}.{0,10}"]
        ) {
            let s = sanitize_tool(&tool);
            prop_assert!(!s.is_empty());
            prop_assert!(!s.contains('/'), "{:?}", s);
            prop_assert!(!s.starts_with('.'), "{:?}", s);
            prop_assert!(s.chars().count() <= MAX_TOOL_CHARS, "{:?}", s);
            prop_assert!(s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)), "{:?}", s);
            let p = Path::new(SAVE_DIR).join(format!("20250101T000000.000_{s}.txt"));
            let comps: Vec<_> = p.components().collect();
            prop_assert_eq!(comps.len(), 2);
            prop_assert!(comps.iter().all(|c| matches!(c, std::path::Component::Normal(_))));
        }
    }
}
