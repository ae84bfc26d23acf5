//! Asking a saved output a new question: the guard's reduction and model re-run on a file that
//! an earlier guard saved under `<session>/long_responses/`, steered by the new question
//! instead of the first call's intent, so an agent gets a second fact without reading the file.
//!
//! Only saved outputs can be asked: [`resolve_saved`] resolves symlinks and refuses any path
//! whose real location is not directly inside a session's `long_responses/` directory (the one
//! given, or, without one, any directory of that name). The summary itself is the guard
//! pipeline's ([`super::pipeline::prepare_saved`], then [`super::SummaryJob::run`]).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::save::{text_kind, SAVE_DIR};
use super::{Limits, SavedFile};

/// Why a path cannot be asked.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The path is not a saved output: outside `<session>/long_responses/`, a symlink out of it,
    /// a directory, or the session dir's `long_responses` is itself a symlink.
    #[error("{path:?} is not a saved output: {why} (only files directly inside a session's long_responses/ can be asked)")]
    NotSaved {
        /// The path as given.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The file or the session dir cannot be read (missing, permissions, ...).
    #[error("cannot read {path:?}: {source}")]
    Io {
        /// The path being read.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is over the size limit (bytes).
    #[error("{path:?} is {bytes} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size (bytes).
        bytes: u64,
        /// The limit (bytes).
        limit: u64,
    },
}

/// A saved output, resolved and read.
#[derive(Debug, Clone)]
pub struct SavedOutput {
    /// The file's real path (symlinks resolved).
    pub path: PathBuf,
    /// Its session dir (the parent of `long_responses/`, symlinks resolved).
    pub session_dir: PathBuf,
    /// The file as a [`SavedFile`] (path relative to the session dir, size, media type).
    pub saved: SavedFile,
    /// The tool name recorded in the file name (`<timestamp>_<tool>.<ext>`), else `saved_output`.
    pub tool: String,
    /// The file's bytes.
    pub content: Vec<u8>,
    /// Owner uid, group gid and permission bits of the opened file (for the daemon's peer check).
    pub owner: (u32, u32, u32),
}

/// The tool part of a saved file's name: `20250101T120000.123_Bash-2.txt` → `Bash-2`;
/// `saved_output` when the name has no `_`.
pub fn tool_of(file_name: &str) -> String {
    let stem = file_name
        .rsplit_once('.')
        .map_or(file_name, |(stem, _)| stem);
    match stem.split_once('_') {
        Some((_, tool)) if !tool.is_empty() => tool.to_string(),
        _ => "saved_output".to_string(),
    }
}

fn not_saved(path: &Path, why: impl Into<String>) -> AskError {
    AskError::NotSaved {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// Resolves `path` (absolute, or relative to the current dir) to a saved output and reads it
/// (at most `max_bytes`).
///
/// The path's real location (symlinks resolved) must be a regular file directly inside a
/// directory named `long_responses`; with `session_dir`, that directory must be
/// `<session_dir>/long_responses` itself, which must not be a symlink. The final component is
/// opened with `O_NOFOLLOW`, so a symlink swapped in after the check is refused too.
///
/// # Errors
/// [`AskError::NotSaved`] for any path outside, [`AskError::Io`] when it cannot be read,
/// [`AskError::TooLarge`] past `max_bytes`.
pub fn resolve_saved(
    path: &Path,
    session_dir: Option<&Path>,
    max_bytes: u64,
) -> Result<SavedOutput, AskError> {
    let io = |p: &Path, source| AskError::Io {
        path: p.to_path_buf(),
        source,
    };
    let real = std::fs::canonicalize(path).map_err(|e| io(path, e))?;
    let parent = real
        .parent()
        .ok_or_else(|| not_saved(path, "it has no parent directory"))?;
    if parent.file_name() != Some(std::ffi::OsStr::new(SAVE_DIR)) {
        return Err(not_saved(
            path,
            format!(
                "its real location {} is not in a {SAVE_DIR}/ directory",
                real.display()
            ),
        ));
    }
    let session = parent
        .parent()
        .ok_or_else(|| not_saved(path, "its long_responses/ has no session dir"))?
        .to_path_buf();
    if let Some(want) = session_dir {
        let save_dir = want.join(SAVE_DIR);
        let meta = std::fs::symlink_metadata(&save_dir).map_err(|e| io(&save_dir, e))?;
        if meta.file_type().is_symlink() {
            return Err(not_saved(
                path,
                format!("{} is a symlink", save_dir.display()),
            ));
        }
        let want_real = std::fs::canonicalize(want).map_err(|e| io(want, e))?;
        if want_real != session {
            return Err(not_saved(
                path,
                format!(
                    "its real location {} is outside {}",
                    real.display(),
                    save_dir.display()
                ),
            ));
        }
    }
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&real)
        .map_err(|e| io(&real, e))?;
    let meta = file.metadata().map_err(|e| io(&real, e))?;
    if !meta.is_file() {
        return Err(not_saved(path, "it is not a regular file"));
    }
    if meta.len() > max_bytes {
        return Err(AskError::TooLarge {
            path: real,
            bytes: meta.len(),
            limit: max_bytes,
        });
    }
    let mut content = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes + 1)
        .read_to_end(&mut content)
        .map_err(|e| io(&real, e))?;
    if content.len() as u64 > max_bytes {
        return Err(AskError::TooLarge {
            path: real,
            bytes: content.len() as u64,
            limit: max_bytes,
        });
    }
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let media_type = match super::binary::whole(&content) {
        Some(b) => b.media_type,
        None => text_kind(&content).1.to_string(),
    };
    Ok(SavedOutput {
        saved: SavedFile {
            path: format!("{SAVE_DIR}/{name}"),
            bytes: content.len() as u64,
            media_type,
        },
        tool: tool_of(&name),
        path: real,
        session_dir: session,
        content,
        owner: (meta.uid(), meta.gid(), meta.mode()),
    })
}

/// One ask: a resolved saved output and the new question.
#[derive(Debug, Clone)]
pub struct AskRequest {
    /// The saved output.
    pub output: SavedOutput,
    /// The new question; it steers the reduction and the model as a guard call's intent does.
    pub question: String,
    /// Size limits, as for a guard request.
    pub limits: Limits,
    /// The model step gives up (digest instead) when this instant passes.
    pub deadline: Option<Instant>,
}

/// The whole ask in one call: [`super::prepare_saved`], then the summary step with `narrator`
/// (none: the reduction alone, as the client's fallback runs it). Never fails.
pub fn ask(
    req: AskRequest,
    counter: Option<&dyn crate::backend::TokenCounter>,
    narrator: Option<&mut dyn crate::backend::Narrator>,
) -> super::GuardResponse {
    match super::prepare_saved(req, counter) {
        super::Prepared::Done(r) => r,
        super::Prepared::NeedsModel(job) => match counter {
            Some(c) => job.run(c, narrator),
            None => job.fallback(None, "no_tokenizer: no model available"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let lr = d.path().join(SAVE_DIR);
        std::fs::create_dir(&lr).unwrap();
        let f = lr.join("20261201T101010.000_read_text_file.txt");
        std::fs::write(&f, b"line one\nline two\n").unwrap();
        (d, f)
    }

    #[test]
    fn tool_names_come_from_the_file_name() {
        assert_eq!(tool_of("20250101T120000.123_Bash.txt"), "Bash");
        assert_eq!(tool_of("20250101T120000.123_mcp_x-2.json"), "mcp_x-2");
        assert_eq!(tool_of("plain.txt"), "saved_output");
    }

    #[test]
    fn saved_files_resolve_and_others_are_refused() {
        let (d, f) = session();
        let out = resolve_saved(&f, Some(d.path()), 1 << 20).unwrap();
        assert_eq!(out.content, b"line one\nline two\n");
        assert_eq!(
            out.saved.path,
            "long_responses/20261201T101010.000_read_text_file.txt"
        );
        assert_eq!(out.tool, "read_text_file");
        assert_eq!(out.session_dir, std::fs::canonicalize(d.path()).unwrap());
        // Without a session dir, any long_responses/ will do.
        assert!(resolve_saved(&f, None, 1 << 20).is_ok());

        // A file outside long_responses/.
        let outside = d.path().join("notes.txt");
        std::fs::write(&outside, b"secret").unwrap();
        let e = resolve_saved(&outside, Some(d.path()), 1 << 20).unwrap_err();
        assert!(matches!(e, AskError::NotSaved { .. }), "{e}");
        assert!(e.to_string().contains("long_responses"), "{e}");
        // A symlink inside long_responses/ pointing out of it.
        let link = d.path().join(SAVE_DIR).join("20261201T101011.000_x.txt");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let e = resolve_saved(&link, Some(d.path()), 1 << 20).unwrap_err();
        assert!(matches!(e, AskError::NotSaved { .. }), "{e}");
        // `..` out of it.
        let dotdot = d.path().join(SAVE_DIR).join("../notes.txt");
        assert!(matches!(
            resolve_saved(&dotdot, None, 1 << 20),
            Err(AskError::NotSaved { .. })
        ));
        // Another session's file, when a session dir is given.
        let (_d2, f2) = session();
        assert!(matches!(
            resolve_saved(&f2, Some(d.path()), 1 << 20),
            Err(AskError::NotSaved { .. })
        ));
        // Too large, missing, a directory.
        assert!(matches!(
            resolve_saved(&f, None, 3),
            Err(AskError::TooLarge { .. })
        ));
        assert!(matches!(
            resolve_saved(&d.path().join("missing"), None, 10),
            Err(AskError::Io { .. })
        ));
        let sub = d.path().join(SAVE_DIR).join("dir");
        std::fs::create_dir(&sub).unwrap();
        assert!(resolve_saved(&sub, None, 10).is_err());
    }

    struct QuarterCounter;
    impl crate::backend::TokenCounter for QuarterCounter {
        fn count(&self, text: &str) -> usize {
            text.len().div_ceil(4)
        }
    }

    /// The question steers which lines the summary quotes; nothing is saved again, and the
    /// answer points at the same file.
    #[test]
    fn asking_reruns_the_summary_step_on_the_same_file() {
        use crate::guard::{prepare_saved, Prepared, ResultKind};
        let (d, f) = session();
        let mut log = String::new();
        for i in 0..3_000 {
            log.push_str(&format!(
                "2026-12-01T10:00:{:02} INFO worker {i} processed batch {}\n",
                i % 60,
                i * 3
            ));
            if i == 1_717 {
                log.push_str("2026-12-01T10:28:37 INFO metrics exporter listening on port 9464\n");
            }
        }
        std::fs::write(&f, &log).unwrap();
        let out = resolve_saved(&f, Some(d.path()), 1 << 24).unwrap();
        let limits = Limits {
            token_limit: 1_000,
            ..Limits::default()
        };
        let req = AskRequest {
            output: out,
            question: "which port does the metrics exporter listen on".into(),
            limits,
            deadline: None,
        };
        let Prepared::NeedsModel(job) = prepare_saved(req, Some(&QuarterCounter)) else {
            panic!("a large text needs the summary step")
        };
        let r = job.run(&QuarterCounter, None);
        assert_eq!(r.kind, ResultKind::Summary);
        assert!(r.text.contains("listening on port 9464"), "{}", r.text);
        assert_eq!(r.saved.len(), 1);
        assert_eq!(
            r.saved[0].path,
            "long_responses/20261201T101010.000_read_text_file.txt"
        );
        assert!(r.text.contains(&r.saved[0].path));
        assert_eq!(
            std::fs::read_dir(d.path().join(SAVE_DIR)).unwrap().count(),
            1
        );

        // A small saved file comes back whole; a binary one is described.
        std::fs::write(&f, b"short\n").unwrap();
        let req = AskRequest {
            output: resolve_saved(&f, None, 1 << 20).unwrap(),
            question: "q".into(),
            limits,
            deadline: None,
        };
        let Prepared::Done(r) = prepare_saved(req, Some(&QuarterCounter)) else {
            panic!()
        };
        assert_eq!(
            (r.kind, r.text.as_str()),
            (ResultKind::Passthrough, "short\n")
        );
        let png = d.path().join(SAVE_DIR).join("20261201T101012.000_shot.png");
        std::fs::write(&png, crate::guard::binary::tests::png(4, 3)).unwrap();
        let req = AskRequest {
            output: resolve_saved(&png, None, 1 << 20).unwrap(),
            question: "q".into(),
            limits,
            deadline: None,
        };
        let Prepared::Done(r) = prepare_saved(req, Some(&QuarterCounter)) else {
            panic!()
        };
        assert_eq!(r.kind, ResultKind::Binary);
        assert!(r.text.starts_with("[image/png 4x3, "), "{}", r.text);
    }

    #[test]
    fn a_symlinked_long_responses_is_refused() {
        let (d, _) = session();
        let other = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(d.path().join(SAVE_DIR), other.path().join(SAVE_DIR)).unwrap();
        let via = other
            .path()
            .join(SAVE_DIR)
            .join("20261201T101010.000_read_text_file.txt");
        let e = resolve_saved(&via, Some(other.path()), 1 << 20).unwrap_err();
        assert!(matches!(e, AskError::NotSaved { .. }), "{e}");
    }
}
