//! deploy.md § A quieter, more familiar terminal, end to end through the built binary: a deploy at
//! the default level prints its progress and result but no `INFO` log lines, and `-v` adds them;
//! `--help` lists the global options under their own heading after the command's own; run through a
//! symlink named `kubectl-apiary` (and through kubectl itself, when it is on PATH) apiary calls
//! itself `kubectl apiary` in usage, help and version text.
//!
//! Test-only; loopback only (the simulator), and the plugin checks contact nothing at all.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::on_both_backends;

on_both_backends! {
    /// The default level shows the progress line(s) and the result, not also the `INFO` lines
    /// that repeat them; warnings would still show. `-v` adds the log lines.
    fn deploy_is_quiet_by_default_and_v_adds_the_log_lines(fx) {
        let quiet = fx.apiary(&["deploy", "quiet agent", "--image", crate::common::IMAGE]);
        assert_eq!(quiet.code, 0, "{quiet:?}");
        assert!(quiet.stdout.starts_with("apiary-"), "{quiet:?}");
        assert!(
            quiet.stderr.lines().any(|line| line.starts_with("deploying apiary-")),
            "no progress line: {}",
            quiet.stderr
        );
        assert!(!quiet.stderr.contains("INFO"), "INFO lines by default: {}", quiet.stderr);

        let verbose = fx.apiary(&["-v", "deploy", "loud agent", "--image", crate::common::IMAGE]);
        assert_eq!(verbose.code, 0, "{verbose:?}");
        assert!(verbose.stderr.contains("INFO"), "no INFO lines with -v: {}", verbose.stderr);
        assert!(verbose.stderr.contains("created the pod"), "{}", verbose.stderr);
    }
}

/// The lines of `text` after the line `heading`, up to the next heading (a line that starts
/// without indentation and ends in `:`).
fn section(text: &str, heading: &str) -> String {
    let mut lines = text.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "no {heading:?} heading in:\n{text}");
    lines
        .take_while(|line| !line.ends_with(':') || line.starts_with(' '))
        .collect::<Vec<_>>()
        .join("\n")
}

fn help(args: &[&str]) -> String {
    let home = tempfile::tempdir().expect("dir");
    let mut cmd = crate::common::bare_command(home.path());
    cmd.args(args);
    let run = crate::common::run(cmd);
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
}

/// `--help` of a subcommand: its own flags under "Options:", then the global flags under
/// "Global options:"; the top level does the same.
#[test]
fn help_puts_global_options_under_their_own_heading_last() {
    for (args, own) in [
        (&["seeds", "--help"][..], "--selector"),
        (&["deploy", "--help"][..], "--image"),
        (&["--help"][..], "--help"),
    ] {
        let text = help(args);
        let options = text.find("\nOptions:\n").expect("an Options heading");
        let global = text
            .find("\nGlobal options:\n")
            .expect("a Global options heading");
        assert!(options < global, "{args:?}: global options first:\n{text}");
        let own_section = section(&text, "Options:");
        assert!(own_section.contains(own), "{args:?}:\n{text}");
        let global_section = section(&text, "Global options:");
        for flag in [
            "--kubeconfig",
            "--context",
            "--namespace",
            "--output",
            "--verbose",
        ] {
            assert!(
                global_section.contains(flag),
                "{args:?}: {flag} not global:\n{text}"
            );
            assert!(
                !own_section.contains(flag),
                "{args:?}: {flag} among own:\n{text}"
            );
        }
    }
}

/// A temporary directory holding a symlink `kubectl-apiary` to the built binary.
fn plugin_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("dir");
    let link = dir.path().join("kubectl-apiary");
    #[cfg(unix)]
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_apiary"), &link).expect("symlink");
    #[cfg(not(unix))]
    std::fs::copy(env!("CARGO_BIN_EXE_apiary"), &link).expect("copy");
    (dir, link)
}

fn run_as(program: &Path, home: &Path, args: &[&str]) -> crate::common::Run {
    let mut cmd = Command::new(program);
    cmd.env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", home)
        .stdin(Stdio::null())
        .args(args);
    crate::common::run(cmd)
}

/// Through the symlink: usage, help and version say `kubectl apiary`; a usage error's usage
/// line too; the plain binary still says `apiary`.
#[test]
fn symlink_named_kubectl_apiary_calls_itself_kubectl_apiary() {
    let (dir, link) = plugin_dir();
    let help = run_as(&link, dir.path(), &["--help"]);
    assert_eq!(help.code, 0, "{help:?}");
    assert!(
        help.stdout
            .contains("Usage: kubectl apiary [OPTIONS] <COMMAND>"),
        "{}",
        help.stdout
    );
    let sub = run_as(&link, dir.path(), &["seeds", "--help"]);
    assert!(
        sub.stdout.contains("Usage: kubectl apiary seeds [OPTIONS]"),
        "{}",
        sub.stdout
    );
    let version = run_as(&link, dir.path(), &["--version"]);
    assert_eq!(
        version.stdout,
        format!("kubectl apiary {}\n", env!("CARGO_PKG_VERSION"))
    );
    let usage = run_as(&link, dir.path(), &["seeds", "--port", "7000"]);
    assert_eq!(usage.code, 2, "{usage:?}");
    assert!(
        usage.stderr.contains("Usage: kubectl apiary seeds"),
        "{}",
        usage.stderr
    );

    let plain = run_as(
        Path::new(env!("CARGO_BIN_EXE_apiary")),
        dir.path(),
        &["--version"],
    );
    assert_eq!(
        plain.stdout,
        format!("apiary {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// `kubectl apiary …` itself: kubectl finds the plugin on PATH and runs it. Skipped (with a
/// line saying so) when kubectl is not installed.
#[test]
fn kubectl_runs_the_plugin_from_path() {
    let Some(kubectl) = find_on_path("kubectl") else {
        println!("skipping: kubectl is not on PATH");
        return;
    };
    let (dir, _link) = plugin_dir();
    let path = std::env::join_paths(std::iter::once(dir.path().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let mut cmd = Command::new(kubectl);
    cmd.env_remove("KUBECONFIG")
        .env("HOME", dir.path())
        .env("PATH", path)
        .stdin(Stdio::null())
        .args(["apiary", "--version"]);
    let run = crate::common::run(cmd);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!("kubectl apiary {}\n", env!("CARGO_PKG_VERSION"))
    );
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}
