//! The shell-outs every xtask command shares: where the workspace is, running cargo, and
//! installing a missing cargo tool.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The workspace root: the parent of this crate's manifest directory.
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Run `cargo <args>` in the workspace root with extra environment, failing on a non-zero exit,
/// and say how long it took (where a CI run's minutes go).
pub(crate) fn cargo(root: &Path, args: &[&str], envs: &[(&str, &str)]) -> Result<(), String> {
    let started = Instant::now();
    let result = cargo_untimed(root, args, envs);
    eprintln!(
        "xtask: {} s: cargo {}",
        started.elapsed().as_secs(),
        args.join(" ")
    );
    result
}

/// [`cargo`] without the timing line: for the last step of a run, whose own summary must stay
/// the last line.
pub(crate) fn cargo_untimed(
    root: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> Result<(), String> {
    eprintln!("xtask: cargo {}", args.join(" "));
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(root)
        .status()
        .map_err(|e| format!("could not run cargo {}: {e}", args.join(" ")))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

/// Whether `cargo <sub> --version` runs, i.e. the cargo subcommand is installed.
fn has_cargo_subcommand(sub: &str) -> bool {
    Command::new("cargo")
        .args([sub, "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Install a cargo tool with `cargo install --locked` when it is missing.
pub(crate) fn ensure_tool(root: &Path, sub: &str, krate: &str) -> Result<(), String> {
    if has_cargo_subcommand(sub) {
        return Ok(());
    }
    cargo(root, &["install", "--locked", krate], &[])
}
