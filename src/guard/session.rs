//! Session directories as agents and users give them, made usable: created when missing, a
//! fallback under the user's state dir when unusable, pointers the agent can open from its own
//! working directory, and the file a dead daemon already saved.
//!
//! The daemon itself stays strict (a request with a missing session dir is `bad_session_dir`,
//! see PROTOCOL.md); these are the client-side steps that make the guard and hook paths answer
//! whatever they are given.

use std::fs;
use std::io::Read;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::save::{sanitize_tool, SAVE_DIR};
use super::SavedFile;

/// Name of the per-project directory that holds hook sessions: `<project>/.toolsum/<session>/`.
pub const PROJECT_DIR: &str = ".toolsum";

/// Name of the fallback session dir under [`state_dir`], used when the given one is unusable.
pub const FALLBACK_DIR: &str = "fallback";

/// toolsum's per-user state directory: `$XDG_STATE_HOME/toolsum` (`~/.local/state/toolsum`),
/// else the platform's local data dir, else `<temp dir>/toolsum-<uid>`. Holds the fallback
/// session dir and the hook log.
pub fn state_dir() -> PathBuf {
    dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .map(|d| d.join("toolsum"))
        .unwrap_or_else(|| {
            // SAFETY: getuid has no preconditions and cannot fail.
            let uid = unsafe { libc::getuid() };
            std::env::temp_dir().join(format!("toolsum-{uid}"))
        })
}

fn mkdir_private(dir: &Path, recursive: bool) -> std::io::Result<()> {
    match fs::DirBuilder::new()
        .mode(0o700)
        .recursive(recursive)
        .create(dir)
    {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        r => r,
    }
}

/// `<state dir>/fallback`, created (mode 0700, parents too) when missing.
///
/// # Errors
/// It cannot be created.
pub fn fallback_session_dir() -> std::io::Result<PathBuf> {
    let dir = state_dir().join(FALLBACK_DIR);
    mkdir_private(&dir, true)?;
    Ok(dir)
}

/// A session dir ready for the guard: `wanted` when it is (or could be made) a directory,
/// else the fallback dir. The second value names the fault, if any, for a warning.
///
/// - an existing directory: used as it is;
/// - missing with an existing parent directory: created, mode 0700, with a `.gitignore` of
///   `*` (no fault);
/// - relative: made absolute against the current dir first;
/// - anything else (a file, a missing parent, no permission): [`fallback_session_dir`], and
///   the fault says why.
pub fn prepare_session_dir(wanted: &Path) -> (PathBuf, Option<String>) {
    let wanted = if wanted.is_absolute() {
        wanted.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(c) => c.join(wanted),
            Err(e) => return fallback(format!("no current dir to resolve {wanted:?}: {e}")),
        }
    };
    let why = match fs::metadata(&wanted) {
        Ok(m) if m.is_dir() => return (wanted, None),
        Ok(_) => format!("session dir {} is not a directory", wanted.display()),
        Err(_) => match wanted.parent() {
            Some(parent) if parent.is_dir() => match mkdir_private(&wanted, false) {
                Ok(()) => {
                    // Made by toolsum, so toolsum's: saved outputs stay out of commits
                    // (`--session-dir .toolsum` in a repository), as a hook's do.
                    let _ = fs::write(wanted.join(".gitignore"), "*\n");
                    return (wanted, None);
                }
                Err(e) => format!("session dir {} cannot be created: {e}", wanted.display()),
            },
            _ => format!(
                "session dir {} does not exist, nor does its parent",
                wanted.display()
            ),
        },
    };
    fallback(why)
}

fn fallback(why: String) -> (PathBuf, Option<String>) {
    match fallback_session_dir() {
        Ok(d) => {
            let msg = format!("{why}; saving under {} instead", d.display());
            (d, Some(msg))
        }
        Err(e) => {
            // The temp dir is the last place left; the guard's own checks report it if even
            // that fails.
            let d = std::env::temp_dir();
            let msg = format!(
                "{why}; the fallback dir cannot be created either ({e}); using {}",
                d.display()
            );
            (d, Some(msg))
        }
    }
}

/// The session dir of an agent hook: `<project>/.toolsum/<session id>` (the id reduced to a
/// plain file name; `default` when empty). `.toolsum` is created (0700) with a `.gitignore`
/// of `*`, so saved outputs stay out of commits; the session dir itself is left to
/// [`prepare_session_dir`].
pub fn hook_session_dir(project: &Path, session_id: &str) -> PathBuf {
    let root = project.join(PROJECT_DIR);
    if !root.exists() && project.is_dir() && mkdir_private(&root, false).is_ok() {
        let _ = fs::write(root.join(".gitignore"), "*\n");
    }
    let id = if session_id.trim().is_empty() {
        "default".to_string()
    } else {
        sanitize_tool(session_id)
    };
    root.join(id)
}

/// A file under `<session>/long_responses/` written at or after `since` (less a second of
/// clock slack) whose bytes are exactly `content`: the copy a daemon saved before it died
/// mid-request, which the client's local fallback reuses instead of saving a second one.
pub fn find_identical(session_dir: &Path, content: &[u8], since: SystemTime) -> Option<SavedFile> {
    let since = since.checked_sub(Duration::from_secs(1)).unwrap_or(since);
    let dir = session_dir.join(SAVE_DIR);
    for e in fs::read_dir(&dir).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let Ok(m) = fs::symlink_metadata(e.path()) else {
            continue;
        };
        let fresh = m.modified().is_ok_and(|t| t >= since);
        if !m.file_type().is_file() || m.len() != content.len() as u64 || !fresh {
            continue;
        }
        if same_bytes(&e.path(), content) {
            return Some(SavedFile {
                path: format!("{SAVE_DIR}/{name}"),
                bytes: m.len(),
                media_type: super::save::text_kind(content).1.to_string(),
            });
        }
    }
    None
}

fn same_bytes(path: &Path, content: &[u8]) -> bool {
    let Ok(mut f) = fs::File::open(path) else {
        return false;
    };
    let mut buf = vec![0u8; 1 << 16];
    let mut at = 0;
    loop {
        match f.read(&mut buf) {
            Ok(0) => return at == content.len(),
            Ok(n) => {
                if content.get(at..at + n) != Some(&buf[..n]) {
                    return false;
                }
                at += n;
            }
            Err(_) => return false,
        }
    }
}

/// How a saved file is named in the text the model reads: relative to the agent's `cwd` when
/// it lies inside it (`.toolsum/<s>/long_responses/x.txt`), else absolute. `path` is a
/// [`SavedFile::path`]: session-relative or already absolute.
pub fn display_path(session_dir: &Path, path: &str, cwd: &Path) -> String {
    let full = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        session_dir.join(path)
    };
    match full.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => full.display().to_string(),
    }
}

/// Rewrites every pointer to `saved` files in `text` (each occurrence of a saved file's path
/// that starts a word) to [`display_path`], so the agent opens it from `cwd`.
pub fn relocate(text: &str, saved: &[SavedFile], session_dir: &Path, cwd: &Path) -> String {
    let mut out = text.to_string();
    for f in saved {
        if Path::new(&f.path).is_absolute() {
            continue;
        }
        let shown = display_path(session_dir, &f.path, cwd);
        if shown == f.path {
            continue;
        }
        let mut next = String::with_capacity(out.len() + 64);
        let mut rest = out.as_str();
        while let Some(i) = rest.find(&f.path) {
            let starts_word = rest[..i]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')));
            next.push_str(&rest[..i]);
            next.push_str(if starts_word { &shown } else { &f.path });
            rest = &rest[i + f.path.len()..];
        }
        next.push_str(rest);
        out = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn missing_dir_is_created_private_and_bad_ones_fall_back() {
        let t = tempfile::tempdir().unwrap();
        let want = t.path().join("sess");
        let (d, fault) = prepare_session_dir(&want);
        assert_eq!((d.as_path(), fault), (want.as_path(), None));
        assert_eq!(
            fs::metadata(&want).unwrap().permissions().mode() & 0o777,
            0o700
        );
        // Created by toolsum, it keeps its saved outputs out of commits.
        assert_eq!(fs::read_to_string(want.join(".gitignore")).unwrap(), "*\n");
        // A directory the user made is left as it is.
        let (d, _) = prepare_session_dir(t.path());
        assert_eq!(d, t.path());
        assert!(!t.path().join(".gitignore").exists());
        let file = t.path().join("f");
        fs::write(&file, b"x").unwrap();
        let (d, fault) = prepare_session_dir(&file);
        assert_ne!(d, file);
        assert!(d.is_dir());
        assert!(fault.unwrap().contains("is not a directory"));
        let (d, fault) = prepare_session_dir(&t.path().join("a/b/c"));
        assert!(d.is_dir());
        assert!(fault.unwrap().contains("nor does its parent"));
        assert!(!t.path().join("a").exists());
    }

    #[test]
    fn hook_dirs_and_pointers() {
        let t = tempfile::tempdir().unwrap();
        let s = hook_session_dir(t.path(), "../x y");
        assert_eq!(s, t.path().join(".toolsum/_x_y"));
        assert_eq!(
            fs::read_to_string(t.path().join(".toolsum/.gitignore")).unwrap(),
            "*\n"
        );
        let f = SavedFile {
            path: "long_responses/a.txt".into(),
            bytes: 1,
            media_type: "text/plain".into(),
        };
        let text = "Full response saved to: long_responses/a.txt (1 bytes)\n\
                    [png, saved to long_responses/a.txt] x/long_responses/a.txt";
        let r = relocate(text, std::slice::from_ref(&f), &s, t.path());
        assert_eq!(
            r,
            "Full response saved to: .toolsum/_x_y/long_responses/a.txt (1 bytes)\n\
             [png, saved to .toolsum/_x_y/long_responses/a.txt] x/long_responses/a.txt"
        );
        let elsewhere = tempfile::tempdir().unwrap();
        let abs = display_path(&s, &f.path, elsewhere.path());
        assert_eq!(abs, s.join("long_responses/a.txt").display().to_string());
    }

    #[test]
    fn identical_recent_copy_is_found() {
        let t = tempfile::tempdir().unwrap();
        let before = SystemTime::now();
        let f =
            super::super::save::save(t.path(), "Bash", b"hello log", "txt", "text/plain").unwrap();
        assert_eq!(
            find_identical(t.path(), b"hello log", before).unwrap().path,
            f.path
        );
        assert!(find_identical(t.path(), b"hello lot", before).is_none());
        let later = SystemTime::now() + Duration::from_secs(5);
        assert!(find_identical(t.path(), b"hello log", later).is_none());
    }
}
