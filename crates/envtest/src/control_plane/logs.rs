//! The end of the control plane's logs for a failing test: a guard that prints the last lines
//! of both processes' logs when it is dropped during a panic.
//!
//! Layer: test support. Reads log files only; the logs never hold a token (tokens reach the
//! apiserver through a file, never its command line or output).

use std::path::{Path, PathBuf};

/// How many log lines of each process a failing test prints.
pub(crate) const LOG_TAIL_LINES: usize = 200;

/// Prints the end of the control plane's logs when dropped during a panic (see
/// [`ControlPlane::log_guard`](crate::ControlPlane::log_guard)).
#[derive(Debug)]
pub struct LogGuard {
    pub(crate) logs: Vec<(&'static str, PathBuf)>,
    /// How many lines of each log to print.
    pub(crate) lines: usize,
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for (component, path) in &self.logs {
            // eprintln!, not io::stderr(): the test harness shows it with the failing test.
            eprintln!(
                "----- last {} lines of {component} ({}) -----\n{}",
                self.lines,
                path.display(),
                log_tail(path, self.lines)
            );
        }
    }
}

/// The last `lines` lines of a log file, or why it cannot be read.
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(error) => format!("(cannot read {}: {error})", path.display()),
    }
}
