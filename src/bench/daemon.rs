//! A `toolsum serve` child process for the benchmark: started on a private temporary socket,
//! reached with the crate's client, measured (peak RSS) and stopped.
//!
//! The benchmark goes through the daemon on purpose: that is how an agent's hook calls toolsum,
//! so socket, JSON framing, queueing and the model thread are all in the measured time.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::daemon::client::Client;

/// How often the starting daemon is polled for a `status` answer.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// A running daemon owned by the benchmark; killed on drop if [`DaemonProcess::stop`] was not
/// called.
pub struct DaemonProcess {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
    // Holds the socket's private directory (mode 0700) until the daemon is gone.
    _dir: tempfile::TempDir,
}

impl DaemonProcess {
    /// Starts `<bin> serve --socket <tmp>/toolsum.sock [--model M] [--threads N]`, its stdout
    /// and stderr appended to `log`, and waits until it answers `status` (at most `timeout`).
    ///
    /// # Errors
    /// The binary cannot be spawned, the daemon exits before answering (the error quotes the end
    /// of `log`), or it does not answer within `timeout`.
    pub fn start(
        bin: &Path,
        model: Option<&str>,
        threads: Option<usize>,
        log: &Path,
        timeout: Duration,
    ) -> anyhow::Result<DaemonProcess> {
        let dir = tempfile::Builder::new()
            .prefix("toolsum-bench-")
            .tempdir()
            .context("creating the daemon's socket directory")?;
        let socket = dir.path().join("toolsum.sock");
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("opening {}", log.display()))?;
        let mut cmd = Command::new(bin);
        cmd.arg("serve").arg("--socket").arg(&socket);
        if let Some(m) = model {
            cmd.arg("--model").arg(m);
        }
        if let Some(t) = threads {
            cmd.arg("--threads").arg(t.to_string());
        }
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {} serve", bin.display()))?;
        let mut d = DaemonProcess {
            child,
            socket,
            log: log.to_path_buf(),
            _dir: dir,
        };
        let t0 = Instant::now();
        loop {
            if let Ok(mut c) = Client::connect(&d.socket) {
                if c.status().is_ok() {
                    return Ok(d);
                }
            }
            if let Some(status) = d.child.try_wait()? {
                bail!(
                    "the daemon exited with {status} before answering; end of {}:\n{}",
                    d.log.display(),
                    log_tail(&d.log)
                );
            }
            if t0.elapsed() > timeout {
                bail!(
                    "the daemon did not answer within {} s; end of {}:\n{}",
                    timeout.as_secs(),
                    d.log.display(),
                    log_tail(&d.log)
                );
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// A new connection to the daemon.
    ///
    /// # Errors
    /// The socket does not answer.
    pub fn connect(&self) -> std::io::Result<Client> {
        Client::connect(&self.socket)
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The daemon's peak resident set size so far (`VmHWM` of `/proc/<pid>/status`, bytes);
    /// `None` where /proc is missing.
    pub fn peak_rss_bytes(&self) -> Option<u64> {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        proc_status_kb(&s, "VmHWM:").map(|kb| kb * 1024)
    }

    /// Asks the daemon to shut down and waits for it (at most `timeout`, then kills it).
    ///
    /// # Errors
    /// Waiting on the child fails.
    pub fn stop(mut self, timeout: Duration) -> anyhow::Result<()> {
        if let Ok(mut c) = self.connect() {
            let _ = c.shutdown();
        }
        let t0 = Instant::now();
        while t0.elapsed() < timeout {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        tracing::warn!("daemon {} did not stop in time; killing it", self.pid());
        let _ = self.child.kill();
        self.child.wait()?;
        Ok(())
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A `kB` field of `/proc/<pid>/status` (e.g. `VmHWM:`), in kB.
pub fn proc_status_kb(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

fn log_tail(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vmhwm() {
        let s = "Name:\ttoolsum\nVmPeak:\t  900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(proc_status_kb(s, "VmHWM:"), Some(123_456));
        assert_eq!(proc_status_kb(s, "VmSwap:"), None);
    }

    #[test]
    fn a_binary_that_exits_is_reported_with_its_log() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("d.log");
        let err = DaemonProcess::start(
            Path::new("/bin/false"),
            None,
            None,
            &log,
            Duration::from_secs(10),
        )
        .err()
        .expect("/bin/false never answers");
        assert!(err.to_string().contains("exited"), "{err:#}");
    }
}
