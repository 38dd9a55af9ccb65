//! Child processes that die with the test process: each binary runs under `sh -c` holding the
//! read end of a pipe (its "lifeline") whose only write end is in the test process. When that end
//! closes — on `Drop`, or because the test process exited, panicked or aborted — the shell sees
//! EOF and stops the binary (SIGTERM, then SIGKILL after five seconds). The line `kill` on the
//! lifeline sends SIGKILL at once (a crash, and a fast teardown). No `unsafe`, no `prctl`.
//!
//! Layer: test support, process I/O only. It decides nothing about Kubernetes. It must never
//! signal a process it did not start: the shell only ever signals its own child's pid, and stops
//! watching once it has reaped that child.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The supervising shell. `$1` is the pid file, `$2...` the command. fd 3 keeps the lifeline: an
/// asynchronous list's stdin is `/dev/null` in a non-interactive shell, so the watcher reads the
/// pipe through fd 3 instead. The binary itself gets neither.
const SUPERVISOR: &str = r#"
pid_file=$1; shift
exec 3<&0 </dev/null
"$@" 3<&- &
child=$!
echo "$child" > "$pid_file.tmp" && mv "$pid_file.tmp" "$pid_file"
(
  while read -r line <&3; do
    if [ "$line" = kill ]; then kill -KILL "$child" 2>/dev/null; fi
  done
  kill -TERM "$child" 2>/dev/null
  sleep 5
  kill -KILL "$child" 2>/dev/null
) &
watcher=$!
exec 3<&-
wait "$child"
status=$?
kill "$watcher" 2>/dev/null
rm -f "$pid_file"
exit "$status"
"#;

/// The janitor: once its lifeline closes it waits (bounded) until every supervised process has
/// removed its pid file, then deletes the fixture's directory. This is what cleans up after the
/// shared control plane, which lives in a `static` and is never dropped.
const JANITOR: &str = r#"
dir=$1
while read -r _; do :; done
i=0
while [ "$i" -lt 200 ] && ls "$dir"/*.pid >/dev/null 2>&1; do sleep 0.05; i=$((i+1)); done
rm -rf "$dir"
"#;

/// One binary running under a supervising shell.
pub(crate) struct Supervised {
    shell: Child,
    lifeline: Option<ChildStdin>,
    pid: Option<u32>,
}

impl Supervised {
    /// Starts `program args...`, appending its stdout and stderr to `log`, and waits until the
    /// shell has written the binary's pid to `pid_file` (or has exited: a binary that fails at
    /// once may be gone before its pid could be read; [`Self::exited`] then says how).
    pub(crate) fn spawn(
        program: &Path,
        args: &[String],
        log: &Path,
        pid_file: &Path,
    ) -> io::Result<Self> {
        let out = File::options().create(true).append(true).open(log)?;
        let mut shell = Command::new("sh")
            .arg("-c")
            .arg(SUPERVISOR)
            .arg("apiary-envtest-supervisor")
            .arg(pid_file)
            .arg(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()?;
        let lifeline = shell.stdin.take();
        let pid = read_pid(&mut shell, pid_file)?;
        Ok(Self {
            shell,
            lifeline,
            pid,
        })
    }

    /// The binary's own process id (not the shell's); `None` if it exited before it was read.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The binary's exit status if it has exited (the shell exits with it).
    pub(crate) fn exited(&mut self) -> io::Result<Option<ExitStatus>> {
        self.shell.try_wait()
    }

    /// Closes the lifeline (SIGTERM: a graceful shutdown) and waits until the binary and its
    /// shell are gone.
    pub(crate) fn stop(mut self) {
        self.stop_in_place();
    }

    /// Sends SIGKILL through the lifeline (no shutdown at all, like a crash or an OOM kill) and
    /// waits until the binary and its shell are gone.
    pub(crate) fn kill(mut self) {
        if let Some(lifeline) = self.lifeline.as_mut() {
            // A shell that is already gone cannot read it; stop_in_place then just reaps it.
            let _gone = lifeline.write_all(b"kill\n");
        }
        self.stop_in_place();
    }

    fn stop_in_place(&mut self) {
        drop(self.lifeline.take());
        // The shell returns once it has reaped the binary; an error means it is already reaped.
        let _status = self.shell.wait();
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop_in_place();
    }
}

/// Waits for the pid file the supervisor writes right after forking the binary; `None` when the
/// shell exited first (it removes the file once the binary has exited).
fn read_pid(shell: &mut Child, pid_file: &Path) -> io::Result<Option<u32>> {
    let bound = Instant::now() + Duration::from_secs(10);
    loop {
        let exited = shell.try_wait()?.is_some();
        if let Ok(text) = std::fs::read_to_string(pid_file)
            && let Ok(pid) = text.trim().parse()
        {
            return Ok(Some(pid));
        }
        if exited {
            return Ok(None);
        }
        if Instant::now() > bound {
            return Err(io::Error::other(
                "the supervising shell wrote no pid within 10 s",
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Deletes the fixture's directory once the test process lets go of it (see [`JANITOR`]).
pub(crate) struct Janitor {
    shell: Child,
    lifeline: Option<ChildStdin>,
}

impl Janitor {
    /// Starts the janitor for `dir`.
    pub(crate) fn spawn(dir: &Path) -> io::Result<Self> {
        let mut shell = Command::new("sh")
            .arg("-c")
            .arg(JANITOR)
            .arg("apiary-envtest-janitor")
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let lifeline = shell.stdin.take();
        Ok(Self { shell, lifeline })
    }
}

impl Drop for Janitor {
    fn drop(&mut self) {
        drop(self.lifeline.take());
        let _status = self.shell.wait();
    }
}

/// Whether a process with this pid still exists (and is not a zombie), read from `/proc`.
pub fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(PathBuf::from(format!("/proc/{pid}/stat"))) {
        // The state is the first field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dropping the handle stops the binary: its pid is gone afterwards and its pid file removed.
    #[test]
    fn drop_stops_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("sleep.pid");
        let child = Supervised::spawn(
            Path::new("sleep"),
            &["600".to_owned()],
            &dir.path().join("sleep.log"),
            &pid_file,
        )
        .unwrap();
        let pid = child.pid().unwrap();
        assert!(is_running(pid));
        drop(child);
        assert!(!is_running(pid));
        assert!(!pid_file.exists());
    }

    /// `kill` ends a binary that ignores SIGTERM at once, without the five-second fallback.
    #[test]
    fn kill_ends_a_child_that_ignores_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        let child = Supervised::spawn(
            Path::new("sh"),
            &[
                "-c".to_owned(),
                "trap '' TERM; while :; do sleep 1; done".to_owned(),
            ],
            &dir.path().join("stubborn.log"),
            &dir.path().join("stubborn.pid"),
        )
        .unwrap();
        let pid = child.pid().unwrap();
        child.kill();
        assert!(!is_running(pid));
    }

    /// A binary that exits on its own is seen as exited, with its status.
    #[test]
    fn an_exited_child_reports_its_status() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Supervised::spawn(
            Path::new("sh"),
            &["-c".to_owned(), "echo started; exit 3".to_owned()],
            &dir.path().join("sh.log"),
            &dir.path().join("sh.pid"),
        )
        .unwrap();
        let status = loop {
            if let Some(status) = child.exited().unwrap() {
                break status;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(status.code(), Some(3));
        let log = std::fs::read_to_string(dir.path().join("sh.log")).unwrap();
        assert_eq!(log, "started\n");
    }

    /// The janitor removes the directory once its lifeline closes.
    #[test]
    fn the_janitor_removes_the_directory() {
        let dir = tempfile::tempdir().unwrap().keep();
        std::fs::write(dir.join("file"), "x").unwrap();
        let janitor = Janitor::spawn(&dir).unwrap();
        assert!(dir.exists());
        drop(janitor);
        assert!(!dir.exists());
    }
}
