//! Command-line arguments of `serve`, `guard`, `status` and `stop`, and their entry points, so
//! the binary only adds one enum variant and one match arm per command.
//!
//! Every command flattens [`ConfigLayer`], so `--socket`, `--model`, `--token-limit`, ... mean
//! the same everywhere and take precedence over `TOOLSUM_*` variables and the config file.

use std::path::PathBuf;
use std::time::Duration;

use super::client::{
    ask_cli, guard_resilient, shutdown_cli, status_cli, AskCliOptions, GuardCliOptions, Input,
};
use super::{serve, ServeOptions};
use crate::config::{Config, ConfigLayer};

/// `toolsum serve [--model M] [--socket PATH] [--threads N] [--detach]`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Settings (flags beat TOOLSUM_* env beat the config file).
    #[command(flatten)]
    pub config: ConfigLayer,
    /// Start in the background and return once the daemon answers.
    #[arg(long)]
    pub detach: bool,
}

/// `toolsum guard --tool NAME [--args JSON] [--intent TEXT] [--session-dir DIR] [--json]
/// [--no-spawn] [FILE|-]`.
#[derive(Debug, Clone, clap::Args)]
pub struct GuardArgs {
    /// Settings (flags beat TOOLSUM_* env beat the config file).
    #[command(flatten)]
    pub config: ConfigLayer,
    /// The tool's name (e.g. Bash, Read, mcp__github__search).
    // Values may start with `-` (`--intent "-v: why?"`): a usage error here would lose the
    // output that guard exists to pass on.
    #[arg(long, allow_hyphen_values = true)]
    pub tool: String,
    /// The tool's arguments as JSON.
    #[arg(long, allow_hyphen_values = true)]
    pub args: Option<String>,
    /// What the agent wants from the output.
    #[arg(long, allow_hyphen_values = true)]
    pub intent: Option<String>,
    /// The agent session's directory (default: the current directory).
    #[arg(long)]
    pub session_dir: Option<PathBuf>,
    /// Print the whole response as JSON instead of its text.
    #[arg(long)]
    pub json: bool,
    /// Do not start a daemon when none answers (guard locally instead).
    #[arg(long)]
    pub no_spawn: bool,
    /// Keep base64 files inline instead of saving them decoded.
    #[arg(long)]
    pub keep_binary_inline: bool,
    /// The tool output: a file, or - for stdin.
    #[arg(default_value = "-")]
    pub file: String,
}

/// `toolsum ask [--session-dir DIR] [--json] [--no-spawn] FILE QUESTION`.
#[derive(Debug, Clone, clap::Args)]
pub struct AskArgs {
    /// Settings (flags beat TOOLSUM_* env beat the config file).
    #[command(flatten)]
    pub config: ConfigLayer,
    /// Refuse a file outside this session dir's long_responses/ (default: any long_responses/).
    #[arg(long)]
    pub session_dir: Option<PathBuf>,
    /// Print the whole response as JSON instead of its text.
    #[arg(long)]
    pub json: bool,
    /// Do not start a daemon when none answers (answer locally, without the model).
    #[arg(long)]
    pub no_spawn: bool,
    /// A file saved by toolsum under a session's long_responses/.
    pub file: PathBuf,
    /// The new question, e.g. "which port does the exporter listen on?".
    #[arg(allow_hyphen_values = true)]
    pub question: String,
}

/// `toolsum status [--socket PATH]` and `toolsum stop [--socket PATH]`.
#[derive(Debug, Clone, clap::Args)]
pub struct SocketArgs {
    /// Daemon socket path (default: as `serve` resolves it, from `TOOLSUM_SOCKET`, the
    /// config file or the runtime dir).
    #[arg(long)]
    pub socket: Option<PathBuf>,
}

impl SocketArgs {
    /// The settings these flags name: the socket, over the environment and config file.
    fn config(self) -> Result<Config, crate::config::ConfigError> {
        Config::load(ConfigLayer {
            socket: self.socket,
            ..ConfigLayer::default()
        })
    }
}

/// Runs `serve`.
///
/// # Errors
/// As [`serve`] and [`Config::load`].
pub fn serve_cmd(a: ServeArgs) -> anyhow::Result<()> {
    serve(ServeOptions {
        config: Config::load(a.config)?,
        detach: a.detach,
    })
}

/// Runs `guard` and prints the text (or, with `--json`, the response) to stdout.
///
/// Never loses the output: a config error, `--args` that is not JSON, an empty `--tool`, an
/// unusable session dir or a dead daemon each get a `toolsum: warning: ...` line on stderr and a
/// way around ([`guard_resilient`]), and the result is printed, exit 0. A summary, preview or
/// binary description ends with a newline; a passthrough is the original bytes as they are.
///
/// # Errors
/// When `FILE` names a file that cannot be opened, or a directory (there is no output to
/// keep), and when stdout
/// cannot be written.
pub fn guard_cmd(a: GuardArgs) -> anyhow::Result<()> {
    let mut warnings: Vec<String> = Vec::new();
    let (config, errors) = Config::load_lenient(a.config);
    warnings.extend(
        errors
            .into_iter()
            .map(|e| format!("{e} (ignored; its default applies)")),
    );
    let args = a
        .args
        .as_deref()
        .map(|raw| match serde_json::from_str(raw) {
            Ok(v) => v,
            Err(e) => {
                warnings.push(format!(
                    "--args is not valid JSON ({e}); passing it on as a string"
                ));
                serde_json::Value::String(raw.to_string())
            }
        });
    for w in &warnings {
        eprintln!("toolsum: warning: {w}");
    }
    // A named file that cannot be read has no output to keep: say so and fail, rather than
    // guard an empty result and exit 0.
    if a.file != "-" {
        let dir = std::fs::File::open(&a.file)
            .and_then(|f| f.metadata())
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", a.file))?
            .is_dir();
        if dir {
            anyhow::bail!("reading {}: it is a directory", a.file);
        }
    }
    let out = guard_resilient(GuardCliOptions {
        config,
        tool: a.tool,
        args,
        intent: a.intent,
        session_dir: a.session_dir,
        input: if a.file == "-" {
            Input::Stdin
        } else {
            Input::File(PathBuf::from(a.file))
        },
        no_spawn: a.no_spawn,
        keep_binary_inline: a.keep_binary_inline,
        cwd: std::env::current_dir().ok(),
        frame: String::new(),
    });
    for f in &out.faults {
        eprintln!("toolsum: warning: {f}");
    }
    use std::io::Write;
    let json = if a.json {
        // The response's `saved[].path` is relative to the session dir, which may be the
        // fallback one rather than the dir asked for: the CLI names it (absolute).
        let mut v = serde_json::to_value(&out.response)?;
        if let Some(o) = v.as_object_mut() {
            let dir = std::path::absolute(&out.session_dir).unwrap_or(out.session_dir.clone());
            o.insert(
                "session_dir".into(),
                serde_json::Value::String(dir.display().to_string()),
            );
        }
        Some(serde_json::to_string(&v)?)
    } else {
        None
    };
    let mut stdout = std::io::stdout().lock();
    let written = match json {
        Some(j) => writeln!(stdout, "{j}"),
        None => write!(stdout, "{}", out.response.text).and_then(|()| {
            // A summary ends its last line; an original result is written back byte for byte.
            if out.response.kind != crate::guard::ResultKind::Passthrough
                && !out.response.text.ends_with('\n')
            {
                writeln!(stdout)
            } else {
                Ok(())
            }
        }),
    };
    written.and_then(|()| stdout.flush()).map_err(stdout_error)
}

/// Runs `ask` and prints the answer's text, ending with a newline (or, with `--json`, the response)
/// to stdout.
///
/// # Errors
/// As [`ask_cli`] and [`Config::load`].
pub fn ask_cmd(a: AskArgs) -> anyhow::Result<()> {
    if a.question.trim().is_empty() {
        anyhow::bail!(
            "the question is empty: ask what you want from {} (e.g. \"which test failed?\")",
            a.file.display()
        );
    }
    let r = ask_cli(AskCliOptions {
        config: Config::load(a.config)?,
        file: a.file,
        question: a.question,
        session_dir: a.session_dir,
        no_spawn: a.no_spawn,
    })?;
    if a.json {
        out_line(serde_json::to_string(&r)?)?;
    } else {
        // An answer is a summary: it ends with a newline, as `guard`'s do.
        out_line(r.text.strip_suffix('\n').unwrap_or(&r.text))?;
    }
    Ok(())
}

/// Runs `status`: prints the daemon's status JSON (pretty).
///
/// # Errors
/// No daemon answers.
pub fn status_cmd(a: SocketArgs) -> anyhow::Result<()> {
    let v = status_cli(&a.config()?)?;
    out_line(serde_json::to_string_pretty(&v)?)?;
    Ok(())
}

/// Extra time (ms) past the grace period that `stop` waits for the daemon to exit: its model
/// thread and runtime wind down after the last request.
const STOP_WAIT_SLACK_MS: u64 = 10_000;

/// Runs `stop`: asks the daemon to shut down gracefully, then waits until it has exited (its
/// socket lock is free), at most the grace period plus [`STOP_WAIT_SLACK_MS`], so a command
/// right after `stop` finds no daemon rather than one still shutting down (which would hold
/// the socket and keep a new one from starting).
///
/// # Errors
/// No daemon answers.
pub fn stop_cmd(a: SocketArgs) -> anyhow::Result<()> {
    let cfg = a.config()?;
    let v = shutdown_cli(&cfg)?;
    let wait = Duration::from_millis(cfg.grace_ms + STOP_WAIT_SLACK_MS);
    let start = std::time::Instant::now();
    // Only while another process holds the lock: a lock file that cannot be opened (its
    // directory gone with the daemon) is no daemon to wait for.
    while matches!(
        super::take_lock(&cfg.socket),
        Err(super::SocketError::AlreadyRunning(_))
    ) {
        if start.elapsed() >= wait {
            eprintln!(
                "toolsum: the daemon on {} was asked to stop but still runs after {} s",
                cfg.socket.display(),
                wait.as_secs()
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    out_line(v)?;
    Ok(())
}

/// stdout's reader went away (`toolsum status | head -1`): for a CLI a normal end, as for
/// `cat`, not a failure to report. Only stdout's own writes give it, so a broken pipe to the
/// daemon stays an error.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed by its reader")]
pub struct StdoutClosed;

/// `e`, an error writing to stdout, as the CLI reports it: [`StdoutClosed`] for a broken pipe.
fn stdout_error(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        StdoutClosed.into()
    } else {
        anyhow::Error::new(e).context("writing to stdout")
    }
}

/// Writes `text` and a newline to stdout, returning the write error instead of panicking as
/// `println!` does.
///
/// # Errors
/// [`StdoutClosed`] when the reader closed the pipe early, which `main` treats as a normal
/// end; any other error writing to or flushing stdout.
pub fn out_line(text: impl std::fmt::Display) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}")
        .and_then(|()| stdout.flush())
        .map_err(stdout_error)
}

/// True when `e`'s cause chain holds [`StdoutClosed`].
pub fn is_stdout_closed(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<StdoutClosed>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_stdouts_own_broken_pipe_is_a_quiet_end() {
        let closed = stdout_error(std::io::ErrorKind::BrokenPipe.into());
        assert!(is_stdout_closed(&closed.context("printing the status")));
        // A broken pipe to the daemon is an error to report.
        let socket = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            .context("sending the request to the daemon");
        assert!(!is_stdout_closed(&socket));
        assert!(!is_stdout_closed(&stdout_error(
            std::io::ErrorKind::StorageFull.into()
        )));
    }
}
