//! `cargo xtask tidy`: structural rules that prose cannot keep (STYLE.md § Crates and
//! dependencies). Reads files and `cargo metadata`; changes nothing.
//!
//! Rules: every `.rs` file starts with a `//!` doc comment; `apiary-classify` has no normal
//! dependencies; only `apiary-substrate-kube` and `apiary` (the CLI) depend on `kube`;
//! `apiary-seeds` depends on no apiary crate; no doctest is ignored.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Packages allowed a normal or build dependency on `kube`.
const KUBE_USERS: &[&str] = &["apiary-substrate-kube", "apiary"];

/// Run every rule; `Err` lists every problem found, one per line.
pub fn check(root: &Path) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    for file in rust_files(root) {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) => {
                problems.push(format!("{}: unreadable: {e}", file.display()));
                continue;
            }
        };
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        problems.extend(file_problems(&shown, &text));
    }
    match metadata(root) {
        Ok(json) => problems.extend(dependency_problems(&json)),
        Err(e) => problems.push(e),
    }
    problems.extend(crate::citations::check(root));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// The problems of one source file: a missing leading `//!` and ignored doctests.
fn file_problems(shown: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if !text.starts_with("//!") {
        problems.push(format!("{shown}: does not start with a `//!` doc comment"));
    }
    for (index, line) in text.lines().enumerate() {
        let trimmed = line
            .trim_start()
            .trim_start_matches("///")
            .trim_start_matches("//!");
        let fence = trimmed.trim_start();
        if let Some(info) = fence.strip_prefix("```")
            && info.split(',').any(|attr| attr.trim() == "ignore")
        {
            problems.push(format!("{shown}:{}: ignored doctest", index + 1));
        }
    }
    problems
}

/// The problems in the dependency graph given by `cargo metadata --no-deps` JSON.
fn dependency_problems(json: &serde_json::Value) -> Vec<String> {
    let mut problems = Vec::new();
    let packages = json
        .get("packages")
        .and_then(|p| p.as_array())
        .cloned()
        .unwrap_or_default();
    if packages.is_empty() {
        problems.push("cargo metadata listed no packages".to_owned());
    }
    for package in &packages {
        let name = package.get("name").and_then(|n| n.as_str()).unwrap_or("?");
        let deps = package
            .get("dependencies")
            .and_then(|d| d.as_array())
            .cloned()
            .unwrap_or_default();
        for dep in &deps {
            let dep_name = dep.get("name").and_then(|n| n.as_str()).unwrap_or("?");
            // `kind` is null for normal dependencies, "dev" or "build" otherwise.
            let kind = dep.get("kind").and_then(|k| k.as_str()).unwrap_or("normal");
            if kind == "dev" {
                continue;
            }
            if name == "apiary-classify" {
                problems.push(format!(
                    "apiary-classify must have no dependencies, has {dep_name}"
                ));
            }
            if dep_name == "kube" && !KUBE_USERS.contains(&name) {
                problems.push(format!("{name} depends on kube; only {KUBE_USERS:?} may"));
            }
            if name == "apiary-seeds" && dep_name.starts_with("apiary") {
                problems.push(format!("apiary-seeds must not depend on {dep_name}"));
            }
        }
    }
    problems
}

fn metadata(root: &Path) -> Result<serde_json::Value, String> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .map_err(|e| format!("could not run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("cargo metadata output: {e}"))
}

/// Every `.rs` file of the workspace outside `target` directories and hidden folders.
fn rust_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !(name.starts_with('.') || name == "target" || name.starts_with("mutants.out")) {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file without a leading `//!` is reported.
    #[test]
    fn missing_module_doc_is_reported() {
        assert_eq!(file_problems("a.rs", "fn main() {}\n").len(), 1);
        assert!(file_problems("a.rs", "//! Docs.\nfn main() {}\n").is_empty());
    }

    /// An ignored doctest is reported with its line.
    #[test]
    fn ignored_doctest_is_reported() {
        let text = "//! Docs.\n/// ```rust,ignore\n/// x\n/// ```\nfn f() {}\n";
        assert_eq!(
            file_problems("a.rs", text),
            vec!["a.rs:2: ignored doctest".to_owned()]
        );
        assert!(file_problems("a.rs", "//! Docs.\n/// ```no_run\n/// ```\n").is_empty());
    }

    /// classify with a normal dependency, and kube outside the allowed crates, are reported;
    /// dev-dependencies are not.
    #[test]
    fn dependency_arrows_are_checked() {
        let json = serde_json::json!({"packages": [
            {"name": "apiary-classify", "dependencies": [
                {"name": "proptest", "kind": "dev"}, {"name": "serde", "kind": null}]},
            {"name": "apiary-seeds", "dependencies": [{"name": "kube", "kind": null}]},
            {"name": "apiary", "dependencies": [{"name": "kube", "kind": null}]},
        ]});
        let problems = dependency_problems(&json);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("serde"));
        assert!(problems[1].contains("apiary-seeds depends on kube"));
    }
}
