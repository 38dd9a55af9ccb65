//! Progress on stderr while a command waits on the cluster (deploy.md § Output rules): on a
//! terminal an indicatif spinner with the elapsed time and the latest redacted condition; when
//! stderr is not a terminal, one plain line per change of condition. Shell layer.
//!
//! Log lines are routed through [`LogWriter`], which suspends an active spinner while a line is
//! written, so logs and the spinner never garble each other. Must not: receive or print
//! anything but redacted condition text (deploy.md § Redacted condition text) and names.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The spinner currently on screen, if any; log lines are written around it.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

fn active() -> Option<ProgressBar> {
    ACTIVE.lock().ok().and_then(|guard| guard.clone())
}

fn set_active(bar: Option<ProgressBar>) {
    if let Ok(mut guard) = ACTIVE.lock() {
        *guard = bar;
    }
}

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A spinner line redrawn in place (stderr is a terminal).
    Spinner,
    /// One plain line per change (stderr is a file or a pipe).
    Lines,
    /// Nothing (used by the demo's concurrent tasks and by tests).
    #[cfg_attr(
        not(feature = "demo"),
        allow(dead_code, reason = "without the demo only the unit tests stay silent")
    )]
    Silent,
}

impl Style {
    /// Spinner on a terminal, plain lines otherwise.
    pub fn for_stderr() -> Self {
        if std::io::stderr().is_terminal() {
            Self::Spinner
        } else {
            Self::Lines
        }
    }
}

/// One operation's progress line on stderr: it shows the machines' progress (the one progress
/// type, [`apiary_classify::status::Progress`]) as text. Updates are deduplicated: only a change
/// is shown.
pub struct StatusLine {
    label: String,
    bar: Option<ProgressBar>,
    style: Style,
    last: Mutex<Option<String>>,
}

impl StatusLine {
    /// Start showing progress for `label` (for example `deploying agent "x"`).
    pub fn start(label: impl Into<String>, style: Style) -> Self {
        let label = label.into();
        let bar = (style == Style::Spinner).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            let template = ProgressStyle::with_template("{spinner} {prefix} [{elapsed}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            bar.set_style(template);
            bar.set_prefix(label.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            set_active(Some(bar.clone()));
            bar
        });
        Self {
            label,
            bar,
            style,
            last: Mutex::new(None),
        }
    }

    /// Show `condition` if it differs from the last one shown. Returns whether it was new.
    pub fn update(&self, condition: &str) -> bool {
        let Ok(mut last) = self.last.lock() else {
            return false;
        };
        if last.as_deref() == Some(condition) {
            return false;
        }
        *last = Some(condition.to_owned());
        drop(last);
        match (&self.bar, self.style) {
            // A pod condition carries the scheduler's or the kubelet's own explanation, often
            // wider than a terminal: it is also written once as a line above the spinner, so it
            // is read in full as soon as it is reported (deploy.md § Output rules).
            (Some(bar), _) if explains(condition) => {
                bar.println(format!("{}: {condition}", self.label));
                bar.set_message(condition.to_owned());
            }
            (Some(bar), _) => bar.set_message(condition.to_owned()),
            (None, Style::Lines) => {
                let line = format!("{}: {condition}\n", self.label);
                let _ = std::io::stderr().write_all(line.as_bytes());
            }
            (None, _) => {}
        }
        true
    }

    /// The last condition shown, if any.
    #[cfg(test)]
    pub fn last(&self) -> Option<String> {
        self.last.lock().ok().and_then(|last| last.clone())
    }

    /// Remove the spinner (nothing stays on screen; the result follows on stdout).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            set_active(None);
        }
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The stderr writer of the log subscriber: writes around an active spinner.
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match active() {
            Some(bar) => bar.suspend(|| std::io::stderr().write_all(buf))?,
            None => std::io::stderr().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Whether a progress text is a pod condition (deploy.md § Redacted condition text, rule 3): the
/// scheduler's or the kubelet's explanation of why the pod waits, kept as a line on a terminal.
pub fn explains(condition: &str) -> bool {
    condition.starts_with("pod condition ")
}

/// Write one line a person should read whatever the verbosity (a result note, not a log
/// event) to stderr, around an active spinner. Callers pass names and counts only.
pub fn notice(line: &str) {
    let _ = writeln!(LogWriter, "{line}");
}

#[cfg(test)]
mod tests {
    //! Deduplication: one display per change, never per poll.

    use super::*;

    /// The same condition twice is shown once; a change is shown again.
    #[test]
    fn only_changes_are_shown() {
        let p = StatusLine::start("deploying", Style::Silent);
        assert!(p.update("the container is waiting, reason ContainerCreating"));
        assert!(!p.update("the container is waiting, reason ContainerCreating"));
        assert!(p.update("the pod is Running"));
        assert!(p.update("the container is waiting, reason ContainerCreating"));
    }

    /// A pod condition (the scheduler's or kubelet's explanation) is kept as a line on a
    /// terminal; a container's waiting reason or a phase only updates the spinner.
    #[test]
    fn pod_conditions_are_explanations() {
        assert!(explains(
            "pod condition PodScheduled is false: Unschedulable: 0/1 nodes are available: 1 \
             node(s) had taint {example.com/dedicated: agents}, that the pod didn't tolerate."
        ));
        assert!(!explains(
            "the container is waiting, reason ContainerCreating"
        ));
        assert!(!explains("the pod is Pending"));
    }

    /// A silent progress never installs a spinner for the log writer.
    #[test]
    fn silent_progress_has_no_spinner() {
        let p = StatusLine::start("x", Style::Silent);
        assert!(p.bar.is_none());
        p.finish();
    }
}
