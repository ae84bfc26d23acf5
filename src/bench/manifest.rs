//! The corpus manifest (`MANIFEST.tsv`): one row per tool output, with the facts a faithful
//! summary must keep.
//!
//! Format (tests/corpus/README.md): plain tab-separated values, no quoting (many `must_keep`
//! strings start with `"`), a header row, then `file, kind, bytes, source, license, intent,
//! must_keep, notes, sha256`, and optionally `split` (`dev` or `holdout`: the dev corpus,
//! tests/devcorpus/README.md). `must_keep` strings are joined by ` || `; a literal `\t` in one
//! means a tab, unless only its literal reading occurs in the input ([`ManifestRow::resolve_tabs`]). `sha256` is a prefix (16 hex digits in the repo copy, all 64 in the dev corpus) of
//! the file's SHA-256.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Separator of the `must_keep` strings in one field.
pub const MUST_KEEP_SEPARATOR: &str = " || ";

/// One manifest row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ManifestRow {
    /// File name, relative to the corpus directory.
    pub file: String,
    /// Kind of tool output (`log`, `ci`, `test`, `listing`, `shell`, `kubectl`, `json`, `sql`,
    /// `html`, `b64`); chooses the tool name sent with the request ([`tool_for_kind`]).
    pub kind: String,
    /// Size stated by the manifest (bytes).
    pub bytes: u64,
    /// What the caller wanted from the tool call; sent as the request's `intent`.
    pub intent: String,
    /// Exact substrings a faithful summary keeps (literal `\t` already turned into a tab).
    pub must_keep: Vec<String>,
    /// The same strings as written in the manifest (`\t` not turned into a tab), for
    /// [`ManifestRow::resolve_tabs`].
    pub must_keep_as_written: Vec<String>,
    /// Hex prefix of the file's SHA-256 (may be empty).
    pub sha256: String,
    /// The split the file belongs to (`dev`, `holdout`; empty when the manifest has none).
    /// Holdout files are reported only through totals ([`HOLDOUT`]).
    pub split: String,
}

/// The split whose files are looked at only through the benchmark's totals: no per-file row,
/// score or text of it is printed or written.
pub const HOLDOUT: &str = "holdout";

impl ManifestRow {
    /// A row is labelled when it has `must_keep` strings; the bench skips unlabelled rows.
    pub fn is_labelled(&self) -> bool {
        !self.must_keep.is_empty()
    }

    /// Settles what each `\t` of a `must_keep` string meant, against the input it was copied
    /// from (`collapsed_input`: the input after [`super::score::collapse`]): a string whose
    /// tab reading does not occur there but whose literal reading does (a Windows path such as
    /// `c:\test_app.exe`) keeps its literal text. Other strings are left as parsed.
    pub fn resolve_tabs(&mut self, collapsed_input: &str) {
        use super::score::collapse;
        for (m, raw) in self.must_keep.iter_mut().zip(&self.must_keep_as_written) {
            if m != raw
                && !collapsed_input.contains(&collapse(m))
                && collapsed_input.contains(&collapse(raw))
            {
                *m = raw.clone();
            }
        }
    }

    /// True for a [`HOLDOUT`] row.
    pub fn is_holdout(&self) -> bool {
        self.split == HOLDOUT
    }
}

/// Errors reading a manifest or a corpus file.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The manifest or a corpus file could not be read.
    #[error("reading {path:?}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A data row has fewer than the 7 required fields.
    #[error("manifest line {line}: {fields} fields, need at least 7 (file .. must_keep)")]
    ShortRow {
        /// 1-based line number.
        line: usize,
        /// Fields found.
        fields: usize,
    },
    /// The `bytes` field is not a number.
    #[error("manifest line {line}: bytes field {value:?} is not a number")]
    BadBytes {
        /// 1-based line number.
        line: usize,
        /// The field.
        value: String,
    },
    /// A corpus file's SHA-256 does not start with the manifest's prefix.
    #[error("{file}: sha256 {actual} does not match the manifest's {expected}")]
    Checksum {
        /// The file.
        file: String,
        /// The manifest's prefix.
        expected: String,
        /// The file's full digest.
        actual: String,
    },
}

/// Parses manifest text. Blank lines and a header row (first field `file`) are skipped.
///
/// # Errors
/// [`ManifestError::ShortRow`] or [`ManifestError::BadBytes`].
pub fn parse(text: &str) -> Result<Vec<ManifestRow>, ManifestError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if i == 0 && f.first() == Some(&"file") {
            continue;
        }
        if f.len() < 7 {
            return Err(ManifestError::ShortRow {
                line: i + 1,
                fields: f.len(),
            });
        }
        let bytes = f[2].trim().parse().map_err(|_| ManifestError::BadBytes {
            line: i + 1,
            value: f[2].to_string(),
        })?;
        let must_keep_as_written: Vec<String> = f[6]
            .split(MUST_KEEP_SEPARATOR)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
            .collect();
        let must_keep = must_keep_as_written
            .iter()
            .map(|s| s.replace("\\t", "\t"))
            .collect();
        rows.push(ManifestRow {
            file: f[0].to_string(),
            kind: f[1].to_string(),
            bytes,
            intent: f[5].to_string(),
            must_keep,
            must_keep_as_written,
            sha256: f.get(8).map(|s| s.trim().to_string()).unwrap_or_default(),
            split: f.get(9).map(|s| s.trim().to_string()).unwrap_or_default(),
        });
    }
    Ok(rows)
}

/// Reads and parses `<corpus>/MANIFEST.tsv`.
///
/// # Errors
/// As [`parse`], or the file cannot be read.
pub fn load(corpus: &Path) -> Result<Vec<ManifestRow>, ManifestError> {
    let path = corpus.join("MANIFEST.tsv");
    let text = std::fs::read_to_string(&path).map_err(|source| ManifestError::Io {
        path: path.clone(),
        source,
    })?;
    parse(&text)
}

/// Reads a row's file and checks it against the manifest's SHA-256 prefix (when given).
///
/// # Errors
/// [`ManifestError::Io`] or [`ManifestError::Checksum`].
pub fn read_checked(corpus: &Path, row: &ManifestRow) -> Result<Vec<u8>, ManifestError> {
    let path = corpus.join(&row.file);
    let bytes = std::fs::read(&path).map_err(|source| ManifestError::Io { path, source })?;
    if !row.sha256.is_empty() {
        let actual = hex::encode(Sha256::digest(&bytes));
        if !actual.starts_with(&row.sha256.to_ascii_lowercase()) {
            return Err(ManifestError::Checksum {
                file: row.file.clone(),
                expected: row.sha256.clone(),
                actual,
            });
        }
    }
    Ok(bytes)
}

/// The tool name an agent would have called for an output of this kind (sent as `tool`), chosen
/// by the kind's family, read from the words of its snake_case name (kinds are free-form: the
/// shared corpus uses `log`, `ci`, ...; the dev corpus `zeek_log_tsv`, `github_api_replay_txt`):
/// - `mcp_*`: the text block of an MCP tool result, `mcp__api__call` (Claude Code's
///   `mcp__<server>__<tool>` naming);
/// - fetched over HTTP (web pages, API responses and recordings, feeds, API specs, GraphQL,
///   Prometheus scrapes): `WebFetch`;
/// - printed by a command (test runners and their reports, CI, build tools, linters, auditors,
///   VCS, network device and system CLIs, terminal transcripts and recordings): `Bash`;
/// - anything else is a file read from disk (logs, datasets, notebooks, SBOMs, templates,
///   lockfiles, catalogues, crash reports, traces): `Read`.
pub fn tool_for_kind(kind: &str) -> &'static str {
    const WEB: &[&str] = &[
        "html",
        "har",
        "http",
        "api",
        "cassette",
        "replay",
        "feed",
        "atom",
        "rss",
        "sitemap",
        "discovery",
        "openapi",
        "swagger",
        "graphql",
        "metrics",
    ];
    const SHELL: &[&str] = &[
        "ci",
        "test",
        "tests",
        "listing",
        "shell",
        "kubectl",
        "junit",
        "tap",
        "cucumber",
        "playwright",
        "ava",
        "bazel",
        "cargo",
        "clippy",
        "lint",
        "audit",
        "safety",
        "git",
        "hg",
        "diff",
        "transcript",
        "show",
        "nmap",
        "valgrind",
        "ss",
        "nft",
        "journalctl",
        "stackwalk",
        "dump",
        "mysqldump",
        "explain",
        "cov",
        "cast",
        "terminal",
    ];
    let lower = kind.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |set: &[&str]| words.iter().any(|w| set.contains(w));
    if words.first() == Some(&"mcp") {
        "mcp__api__call"
    } else if has(WEB) {
        "WebFetch"
    } else if has(SHELL) {
        "Bash"
    } else {
        "Read"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rows_without_quote_handling() {
        let text = "file\tkind\tbytes\tsource\tlicense\tintent\tmust_keep\tnotes\tsha256\n\
                    a.json\tjson\t12\ts\tl\twhat failed?\t\"status\": 422 || a\\tb || x\t\tabcd\n\
                    \n\
                    b.log\tlog\t5\ts\tl\ti\t\n";
        let rows = parse(text).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].must_keep, vec!["\"status\": 422", "a\tb", "x"]);
        assert_eq!(rows[0].intent, "what failed?");
        assert_eq!(rows[0].sha256, "abcd");
        assert_eq!(rows[0].bytes, 12);
        assert!(rows[1].must_keep.is_empty());
        assert_eq!(rows[1].sha256, "");
    }

    #[test]
    fn short_and_bad_rows_are_errors() {
        assert!(matches!(
            parse("a\tb\tc\n"),
            Err(ManifestError::ShortRow { line: 1, fields: 3 })
        ));
        assert!(matches!(
            parse("a\tb\tx\td\te\tf\tg\n"),
            Err(ManifestError::BadBytes { line: 1, .. })
        ));
    }

    #[test]
    fn repo_corpus_manifest_parses_and_matches_files() {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
        let rows = load(&corpus).unwrap();
        assert_eq!(rows.len(), 24);
        for r in &rows {
            assert!(!r.must_keep.is_empty(), "{}", r.file);
            let b = read_checked(&corpus, r).unwrap();
            assert_eq!(b.len() as u64, r.bytes, "{}", r.file);
        }
    }

    #[test]
    fn a_literal_backslash_t_is_kept_when_the_input_has_it() {
        let mut row = parse("f\tlog\t1\ts\tl\ti\tpath c:\\test_app.exe || a\\tb\n")
            .unwrap()
            .remove(0);
        assert_eq!(row.must_keep, ["path c:\test_app.exe", "a\tb"]);
        row.resolve_tabs(&crate::bench::score::collapse(
            "the path c:\\test_app.exe and a b",
        ));
        assert_eq!(row.must_keep, ["path c:\\test_app.exe", "a\tb"]);
    }

    #[test]
    fn split_column_is_optional() {
        let rows =
            parse("a\tlog\t1\ts\tl\ti\tx\t\tab\tholdout\nb\tlog\t1\ts\tl\t\t\t\t\t\n").unwrap();
        assert_eq!(rows[0].split, "holdout");
        assert!(rows[0].is_holdout() && rows[0].is_labelled());
        assert_eq!(rows[1].split, "");
        assert!(!rows[1].is_holdout() && !rows[1].is_labelled());
    }

    #[test]
    fn tools_follow_the_kind_family() {
        for (kind, tool) in [
            ("log", "Read"),
            ("ci", "Bash"),
            ("test", "Bash"),
            ("kubectl", "Bash"),
            ("html", "WebFetch"),
            ("json", "Read"),
            ("sql", "Read"),
            ("mcp_gitlab_api_response_json", "mcp__api__call"),
            ("html_page", "WebFetch"),
            ("reddit_api_cassette_json", "WebFetch"),
            ("prometheus_metrics_text", "WebFetch"),
            ("junit_xml", "Bash"),
            ("cargo_clippy_json", "Bash"),
            ("network_show_interfaces", "Bash"),
            ("mysql_explain_json_transcript", "Bash"),
            ("zeek_log_tsv", "Read"),
            ("jupyter_notebook", "Read"),
            ("sbom_cyclonedx_xml", "Read"),
            ("Git_Diff", "Bash"),
        ] {
            assert_eq!(tool_for_kind(kind), tool, "{kind}");
        }
    }

    #[test]
    fn checksum_mismatch_is_reported() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("f"), b"hello").unwrap();
        let mut row = parse("f\tlog\t5\ts\tl\ti\tx\t\t0000\n").unwrap().remove(0);
        assert!(matches!(
            read_checked(t.path(), &row),
            Err(ManifestError::Checksum { .. })
        ));
        row.sha256 = "2cf24dba5fb0a30e".into(); // sha256("hello")
        assert_eq!(read_checked(t.path(), &row).unwrap(), b"hello");
    }
}
