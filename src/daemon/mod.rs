//! The daemon and its client: protocol v1 over a Unix socket (see PROTOCOL.md).
//!
//! - [`protocol`]: framing, wire types, validation, stable error kinds.
//! - [`server`]: the accept loop, connection handlers, `status` counters, graceful shutdown.
//! - [`worker`]: the model-owner thread behind a bounded queue.
//! - [`client`]: a blocking client, and the `guard` command with its local fallback.
//! - [`cli`]: clap arguments of `serve`, `guard`, `status`, for the binary to flatten.
//!
//! [`serve`] is the daemon's entry point: it secures the socket directory, takes the daemon
//! lock, loads the model on the model thread (or, with `backend = openai`, starts the remote
//! backend's pool: the model's tokenizer alone, plus the model when it is the fallback), binds
//! the socket (mode 0600) only once that is done, and runs [`server::run`] until SIGTERM/SIGINT
//! or a `shutdown` request.

pub mod cli;
pub mod client;
pub mod lanes;
pub mod protocol;
pub mod server;
pub mod worker;

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::backend::{NarrateRequest, Narration, Narrator, TokenCounter};
use crate::config::Config;
use crate::remote::openai::LocalFallback;
use crate::remote::{Fallback, OpenAiBackend, OpenAiNarrator};
use worker::{Loaded, ModelWorker, PoolSpec};

/// Name of the daemon's log file, beside the socket (written by `--detach` and by the client's
/// auto-spawn).
pub const LOG_FILE_NAME: &str = "toolsum.log";

/// Options of [`serve`].
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The effective configuration (socket, model, threads, limits, ...).
    pub config: Config,
    /// Re-spawn in the background (new session, output to the log file) and return once the
    /// socket answers `status`.
    pub detach: bool,
}

/// Errors of the socket setup, so the binary can tell "already running" from a failure.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// Another daemon serves (or is starting) on this socket.
    #[error("a toolsum daemon is already running on {0:?}")]
    AlreadyRunning(PathBuf),
    /// The socket directory belongs to another user, or is not a directory.
    #[error("unsafe socket directory {path:?}: {why}")]
    UnsafeDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The socket path holds something that is not a socket (a regular file, a directory):
    /// left as it is.
    #[error(
        "{0:?} exists and is not a socket; not removing it (choose another --socket, or move it)"
    )]
    NotASocket(PathBuf),
    /// An I/O error while setting up.
    #[error("{what} {path:?}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// OS error.
        source: std::io::Error,
    },
}

/// Checks the owner of a socket directory against the daemon's uid (pure, for tests).
///
/// # Errors
/// [`SocketError::UnsafeDir`] when `dir_uid != own_uid`.
pub fn check_dir_owner(path: &Path, dir_uid: u32, own_uid: u32) -> Result<(), SocketError> {
    if dir_uid != own_uid {
        return Err(SocketError::UnsafeDir {
            path: path.to_path_buf(),
            why: format!("owned by uid {dir_uid}, not {own_uid}"),
        });
    }
    Ok(())
}

fn own_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Creates the socket's directory (mode 0700) if missing; refuses a symlink, a non-directory,
/// one owned by another user, or one writable by group or others.
///
/// # Errors
/// [`SocketError::UnsafeDir`] or [`SocketError::Io`].
pub fn ensure_socket_dir(dir: &Path) -> Result<(), SocketError> {
    let io = |what, source| SocketError::Io {
        what,
        path: dir.to_path_buf(),
        source,
    };
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .recursive(true)
                .create(dir)
                .map_err(|e| io("creating", e))?;
        }
        Err(e) => return Err(io("creating", e)),
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| io("inspecting", e))?;
    if !meta.file_type().is_dir() {
        return Err(SocketError::UnsafeDir {
            path: dir.to_path_buf(),
            why: "not a directory (or a symlink)".into(),
        });
    }
    check_dir_owner(dir, meta.uid(), own_uid())?;
    // A directory others can write to (e.g. /tmp itself) would let them replace the socket.
    // It is refused rather than chmod-ed: it may be shared on purpose.
    if meta.mode() & 0o022 != 0 {
        return Err(SocketError::UnsafeDir {
            path: dir.to_path_buf(),
            why: format!(
                "writable by group or others (mode {:o}); use a private directory",
                meta.mode() & 0o7777
            ),
        });
    }
    Ok(())
}

fn lock_path(socket: &Path) -> PathBuf {
    let mut s = socket.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Takes the daemon lock (`<socket>.lock`, `flock` exclusive, non-blocking). Held for the
/// daemon's life, it makes "one daemon per socket" race-free; it is released by the kernel
/// when the process dies, so a crash never leaves it stale.
///
/// # Errors
/// [`SocketError::AlreadyRunning`] when another process holds it.
pub fn take_lock(socket: &Path) -> Result<File, SocketError> {
    let path = lock_path(socket);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|source| SocketError::Io {
            what: "opening lock file",
            path: path.clone(),
            source,
        })?;
    // SAFETY: a valid open fd.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        return Err(SocketError::AlreadyRunning(socket.to_path_buf()));
    }
    Ok(f)
}

/// Removes a leftover socket file from an earlier run; refuses when a daemon answers on it,
/// and leaves anything that is not a socket (a file someone keeps at that path) in place.
///
/// # Errors
/// [`SocketError::AlreadyRunning`] when a daemon answers; [`SocketError::NotASocket`] when the
/// path holds something else; [`SocketError::Io`] when the leftover cannot be removed.
fn clear_stale_socket(socket: &Path) -> Result<(), SocketError> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(socket) {
        Err(_) => Ok(()),
        Ok(m) if !m.file_type().is_socket() => Err(SocketError::NotASocket(socket.to_path_buf())),
        Ok(_) => {
            if std::os::unix::net::UnixStream::connect(socket).is_ok() {
                return Err(SocketError::AlreadyRunning(socket.to_path_buf()));
            }
            tracing::info!("removing a leftover socket file {socket:?}");
            std::fs::remove_file(socket).map_err(|source| SocketError::Io {
                what: "removing stale socket",
                path: socket.to_path_buf(),
                source,
            })
        }
    }
}

/// Completes on SIGTERM or SIGINT.
///
/// # Panics
/// If the signal handlers cannot be installed (only outside a tokio runtime).
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("installing a SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("installing a SIGINT handler");
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM"),
        _ = int.recv() => tracing::info!("SIGINT"),
    }
}

/// The loader of the real engine: resolves the model spec and loads it (with the guard's
/// system prompt kept as a KV snapshot).
fn engine_opener(
    config: &Config,
) -> impl FnOnce() -> anyhow::Result<crate::engine::Engine> + Send + 'static {
    let (model, threads, device) = (config.model.clone(), config.threads, config.device.clone());
    let (draft_tokens, kv_decode) = (config.draft_tokens, config.kv_decode);
    move || {
        // Before the engine builds the compute pool itself, at normal priority.
        lanes::init_background_compute(threads);
        let path = crate::models::resolve(model.as_deref())?;
        let opts = crate::engine::EngineOptions {
            model_path: path,
            threads,
            device,
            system_prompt: Some(crate::guard::prompt::SYSTEM_PROMPT.to_string()),
            draft_tokens,
            kv_decode,
            ..Default::default()
        };
        crate::engine::Engine::load(&opts)
    }
}

/// [`engine_opener`] for the one-job model thread ([`ModelWorker::spawn`]).
fn engine_loader(config: &Config) -> impl FnOnce() -> anyhow::Result<Loaded> + Send + 'static {
    let open = engine_opener(config);
    move || {
        let engine = open()?;
        let counter: Arc<dyn crate::backend::TokenCounter> = engine.tokenizer();
        let describe = engine.describe();
        Ok(Loaded {
            narrator: Box::new(engine),
            counter,
            describe,
        })
    }
}

/// Starts the local engine: with `local_parallel` above 1, its batching loop behind that many
/// job threads ([`ModelWorker::spawn_batched`]); with 1, the one-job model thread.
///
/// # Errors
/// The model does not load.
fn start_local(cfg: &Config) -> anyhow::Result<(ModelWorker, Arc<dyn TokenCounter>)> {
    if cfg.local_parallel > 1 {
        ModelWorker::spawn_batched(cfg.queue_capacity, cfg.local_parallel, engine_opener(cfg))
    } else {
        ModelWorker::spawn(cfg.queue_capacity, engine_loader(cfg))
    }
}

/// Time the daemon gives a remote server at start to list its models (so `status` names the
/// model at once); a server that is down then is no error: requests ask again (ms).
pub const REMOTE_PROBE_MS: u64 = 3_000;

/// The local model as the remote backend's fallback: narrations queue on its model thread.
struct LocalModel(Arc<ModelWorker>);

impl LocalFallback for LocalModel {
    fn narrate(&self, req: &NarrateRequest) -> anyhow::Result<Narration> {
        self.0.narrate(req)
    }
    fn name(&self) -> String {
        self.0.model_name()
    }
}

/// Starts the backend the configuration names: the local engine (`start_local`), or the
/// remote pool
/// (`backend_parallel` narrator threads on one [`OpenAiBackend`]). Returns it and the local
/// tokenizer.
///
/// # Errors
/// The model (or, for a remote backend without the local fallback, its tokenizer) does not
/// load; `backend = openai` without a URL, or with a bad one.
pub fn start_backend(cfg: &Config) -> anyhow::Result<(ModelWorker, Arc<dyn TokenCounter>)> {
    let Some(remote) = cfg.remote().map_err(anyhow::Error::msg)? else {
        return start_local(cfg);
    };
    let (local, counter) = match cfg.backend_fallback {
        Fallback::Local => {
            let (w, c) = start_local(cfg)?;
            (Some(Arc::new(w)), c)
        }
        Fallback::None => {
            let path = crate::models::resolve(cfg.model.as_deref())?;
            let tok = crate::tokenizer::GgufTokenizer::from_gguf_path(&path)
                .with_context(|| format!("reading the tokenizer of {}", path.display()))?;
            (None, Arc::new(tok) as Arc<dyn TokenCounter>)
        }
    };
    let backend = OpenAiBackend::new(remote, counter.clone()).map_err(anyhow::Error::msg)?;
    match backend.resolve_model(Instant::now() + Duration::from_millis(REMOTE_PROBE_MS)) {
        Ok(m) => tracing::info!("remote backend {}: model {m}", backend.url()),
        Err(e) => tracing::warn!(
            "remote backend {} did not list its models ({e}); each request asks again",
            backend.url()
        ),
    }
    let fallback = local
        .clone()
        .map(|w| Arc::new(LocalModel(w)) as Arc<dyn LocalFallback>);
    let narrators: Vec<Box<dyn Narrator>> = (0..backend.parallel())
        .map(|_| {
            Box::new(OpenAiNarrator::new(backend.clone(), fallback.clone())) as Box<dyn Narrator>
        })
        .collect();
    let fallback_kind = if local.is_some() { "local" } else { "none" };
    let describe_backend = {
        let b = backend.clone();
        move || {
            let mut d = b.describe();
            d["fallback"] = fallback_kind.into();
            d
        }
    };
    let (b_name, b_report) = (backend.clone(), backend.clone());
    let report_backend = describe_backend.clone();
    let pool = ModelWorker::spawn_pool(PoolSpec {
        capacity: cfg.queue_capacity,
        narrators,
        counter: counter.clone(),
        backend: describe_backend(),
        describe: local
            .as_ref()
            .map_or_else(|| serde_json::json!({"device": "remote"}), |w| w.describe()),
        name: Arc::new(move || b_name.name()),
        report: Some(Arc::new(move || {
            let mut r = b_report.report();
            r["backend"] = report_backend();
            r
        })),
        companion: local,
        thread_name: "toolsum-remote".into(),
    })
    .context("starting the remote backend's threads")?;
    Ok((pool, counter))
}

/// Threads of tokio's blocking pool, the short lane ([`lanes`]): reading content files, a
/// pass-through proven by its length, a short `count`. Bounded so a burst of 64 clients cannot
/// start 64 threads, each of which would also get its own malloc arena (measured: daemon RSS
/// 411 MB after 100 requests, 1,094 MB after 1,000 with tokio's default of 512). Long work and
/// the model never take these threads.
pub const MAX_BLOCKING_THREADS: usize = 8;

/// glibc's malloc gives each thread that allocates its own arena (up to 8 x cores), and keeps
/// freed memory in them: with a burst of threads the daemon's RSS ratchets up and stays. Four
/// arenas keep RSS flat across requests at no measurable cost to a daemon whose hot path is one
/// model thread. No-op on other C libraries.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; called before the runtime starts threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 4);
    }
}

/// Runs the daemon in the foreground until SIGTERM/SIGINT or a `shutdown` request (or, with
/// `detach`, starts it in the background and returns once it answers; when a daemon already
/// answers on the socket, says so on stderr and returns).
///
/// # Errors
/// [`SocketError::AlreadyRunning`] when a daemon serves on the socket, an unsafe socket dir, a
/// model that does not load, or a bind failure.
pub fn serve(opts: ServeOptions) -> anyhow::Result<()> {
    limit_malloc_arenas();
    let cfg = opts.config;
    let socket = cfg.socket.clone();
    let dir = socket
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .context("the socket path has no directory")?
        .to_path_buf();
    ensure_socket_dir(&dir)?;
    if opts.detach {
        // Idempotent, as a script wants it, but not silent: the foreground `serve` refuses
        // (`already running`).
        if client::Client::connect(&socket)
            .and_then(|mut c| c.status().map_err(std::io::Error::other))
            .is_ok()
        {
            eprintln!(
                "toolsum: a daemon already answers on {}; none started",
                socket.display()
            );
            return Ok(());
        }
        let args: Vec<OsString> = std::env::args_os()
            .skip(1)
            .filter(|a| a != "--detach")
            .collect();
        return spawn_daemon(&args, &socket, Duration::from_millis(cfg.spawn_timeout_ms));
    }
    let _lock = take_lock(&socket)?;
    clear_stale_socket(&socket)?;
    let t = Instant::now();
    let (worker, counter) = start_backend(&cfg)?;
    tracing::info!(
        "backend {} ready in {:.1} s",
        worker.model_name(),
        t.elapsed().as_secs_f64()
    );
    let settings = server::ServerSettings::from_config(&cfg);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_name("toolsum-io")
        .build()
        .context("starting the tokio runtime")?;
    let server =
        server::Server::new(settings, worker, counter).context("starting the long lane")?;
    let res = rt.block_on(serve_on(&socket, server.clone(), shutdown_signal()));
    server.shutdown();
    let _ = std::fs::remove_file(&socket);
    rt.shutdown_timeout(Duration::from_secs(1));
    res
}

/// Binds `socket` (mode 0600), then runs [`server::run`] until `shutdown`. For [`serve`] and
/// for tests that bring their own [`server::Server`].
///
/// # Errors
/// A bind or chmod failure.
pub async fn serve_on(
    socket: &Path,
    server: Arc<server::Server>,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let listener = tokio::net::UnixListener::bind(socket)
        .with_context(|| format!("binding socket {}", socket.display()))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("chmod 0600 {}", socket.display()))?;
    tracing::info!("listening on {}", socket.display());
    server::run(listener, shutdown, server).await;
    Ok(())
}

/// Starts `<this exe> <args>` as a daemon in a new session (stdin from /dev/null, stdout and
/// stderr appended to [`LOG_FILE_NAME`] beside the socket) and waits until the socket answers
/// `status`, at most `timeout`.
///
/// # Errors
/// The spawn fails, or no daemon answers within `timeout`, or the child exits while no other
/// daemon holds the lock (the error quotes the end of the log).
pub fn spawn_daemon(args: &[OsString], socket: &Path, timeout: Duration) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let dir = socket
        .parent()
        .context("the socket path has no directory")?;
    let log_path = dir.join(LOG_FILE_NAME);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .with_context(|| format!("opening log {}", log_path.display()))?;
    let exe = std::env::current_exe().context("locating the toolsum binary")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("spawning the daemon")?;
    let start = Instant::now();
    let mut exited = false;
    let mut respawned = false;
    while start.elapsed() < timeout {
        if client::Client::connect(socket)
            .and_then(|mut c| c.status().map_err(std::io::Error::other))
            .is_ok()
        {
            return Ok(());
        }
        if !exited {
            if let Some(status) = child.try_wait()? {
                exited = true;
                // Another daemon may be starting on the same socket: then it holds the lock,
                // and waiting on for it is right. Otherwise this child simply failed.
                match take_lock(socket) {
                    Err(SocketError::AlreadyRunning(_)) => {}
                    _ => bail!(
                        "the daemon exited with {status} before answering; end of {}:\n{}",
                        log_path.display(),
                        log_tail(&log_path)
                    ),
                }
            }
        } else if !respawned && take_lock(socket).is_ok() {
            // The lock's holder went away without answering: a daemon that was shutting down
            // (`toolsum stop` just before), not one starting. Start this one again rather
            // than wait out `timeout` (61 s in the trial of session 48).
            respawned = true;
            exited = false;
            child = cmd.spawn().context("spawning the daemon")?;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!(
        "no daemon answered on {} within {} ms; see {}",
        socket.display(),
        timeout.as_millis(),
        log_path.display()
    )
}

fn log_tail(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_owner_check() {
        assert!(check_dir_owner(Path::new("/x"), 5, 5).is_ok());
        assert!(matches!(
            check_dir_owner(Path::new("/x"), 0, 5),
            Err(SocketError::UnsafeDir { .. })
        ));
    }

    #[test]
    fn socket_dir_is_created_0700_and_shared_dirs_refused() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("a/b");
        ensure_socket_dir(&d).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_socket_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(matches!(
            ensure_socket_dir(&d),
            Err(SocketError::UnsafeDir { .. })
        ));
        assert_eq!(
            std::fs::metadata(&d).unwrap().mode() & 0o7777,
            0o1777,
            "left as it was"
        );
        let f = t.path().join("file");
        std::fs::write(&f, b"").unwrap();
        assert!(ensure_socket_dir(&f).is_err());
        let l = t.path().join("link");
        std::os::unix::fs::symlink(&d, &l).unwrap();
        assert!(matches!(
            ensure_socket_dir(&l),
            Err(SocketError::UnsafeDir { .. })
        ));
    }

    #[test]
    fn lock_is_exclusive_and_stale_socket_is_replaced() {
        let t = tempfile::tempdir().unwrap();
        let s = t.path().join("s.sock");
        let l = take_lock(&s).unwrap();
        assert!(matches!(take_lock(&s), Err(SocketError::AlreadyRunning(_))));
        drop(l);
        let _l = take_lock(&s).unwrap();
        // a socket file nobody listens on is removed
        drop(std::os::unix::net::UnixListener::bind(&s).unwrap());
        assert!(s.exists());
        clear_stale_socket(&s).unwrap();
        assert!(!s.exists());
        // a live one is not
        let _live = std::os::unix::net::UnixListener::bind(&s).unwrap();
        assert!(matches!(
            clear_stale_socket(&s),
            Err(SocketError::AlreadyRunning(_))
        ));
        // a regular file at the socket path is someone's: left as it is
        let f = t.path().join("notes.sock");
        std::fs::write(&f, "important\n").unwrap();
        let e = clear_stale_socket(&f).unwrap_err();
        assert!(matches!(e, SocketError::NotASocket(_)), "{e}");
        assert!(e.to_string().contains("is not a socket"), "{e}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "important\n");
    }
}
