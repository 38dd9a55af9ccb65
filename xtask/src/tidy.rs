//! `cargo xtask tidy`: structural rules that prose cannot keep (STYLE.md § Crates and
//! dependencies). Reads files and `cargo metadata`; changes nothing.
//!
//! Rules: every `.rs` file starts with a `//!` doc comment; `apiary-classify` has no normal
//! dependencies; only the two kube-rs shells (`apiary-substrate-kube`, `apiary-seeds-kube`),
//! `apiary` (the CLI) and the test support `apiary-envtest` depend on `kube`; `apiary-seeds`
//! depends on no apiary crate, and `apiary-seeds-kube` on none but `apiary-seeds` (seed discovery
//! builds without deploy code); no doctest is ignored; no library chooses a
//! k8s-openapi version feature for its normal dependencies (`k8s_version_problems`); no crate's
//! module imports form a cycle (`cycles`); no non-test source file is longer than 600 lines
//! (`lengths`); every citation of a design document names one of its headings (`citations`);
//! no comment or document cites a tracker issue by number (`tracker`); the crate table of
//! `ARCHITECTURE.md` matches `cargo metadata` (`architecture`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Packages allowed a normal or build dependency on `kube`: the kube-rs shells (deploy and seed
/// discovery), the CLI, and the real-server test-support crate (`publish = false`, never a
/// dependency of a library).
const KUBE_USERS: &[&str] = &[
    "apiary-substrate-kube",
    "apiary-seeds-kube",
    "apiary",
    "apiary-envtest",
];

/// Run every rule; `Err` lists every problem found, one per line.
pub fn check(root: &Path) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let files = rust_files(root);
    problems.extend(crate::lengths::check(root, &files));
    for file in files {
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
        Ok(json) => {
            problems.extend(dependency_problems(&json));
            problems.extend(k8s_version_problems(&json));
            problems.extend(crate::cycles::check(root, &json));
            problems.extend(crate::architecture::check(root, &json));
        }
        Err(e) => problems.push(e),
    }
    problems.extend(crate::citations::check(root));
    problems.extend(crate::tracker::check(root));
    problems.extend(crate::inventory::check(root));
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
            // Seed discovery's I/O builds without deploy code: its one apiary crate is the pure half.
            if name == "apiary-seeds-kube"
                && dep_name.starts_with("apiary")
                && dep_name != "apiary-seeds"
            {
                problems.push(format!(
                    "apiary-seeds-kube must not depend on {dep_name}; only on apiary-seeds"
                ));
            }
            // The real-server fixture starts processes and holds tokens: test support only.
            if dep_name == "apiary-envtest" {
                problems.push(format!(
                    "{name} depends on apiary-envtest outside [dev-dependencies]; it is test \
                     support only"
                ));
            }
        }
    }
    problems
}

/// k8s-openapi's version features: a build allows exactly one, chosen by the crate where the build
/// ends (STYLE.md § Crates and dependencies).
const K8S_VERSION_FEATURES: &[&str] = &[
    "earliest", "latest", "v1_33", "v1_34", "v1_35", "v1_36", "v1_37",
];

/// Whether a k8s-openapi feature name selects a Kubernetes version (also the future `v1_NN`).
fn is_k8s_version_feature(feature: &str) -> bool {
    K8S_VERSION_FEATURES.contains(&feature) || feature.starts_with("v1_")
}

/// No library (a package with a `lib` target) names a k8s-openapi version feature on a normal or
/// build dependency, or in one of its own features (`k8s-openapi/v1_33`): a downstream crate on
/// another Kubernetes version could not build it. Dev-dependencies may, and must, choose one.
fn k8s_version_problems(json: &serde_json::Value) -> Vec<String> {
    let mut problems = Vec::new();
    let empty = Vec::new();
    let array = |value: Option<&serde_json::Value>| -> Vec<serde_json::Value> {
        value.and_then(|v| v.as_array()).unwrap_or(&empty).clone()
    };
    for package in array(json.get("packages")) {
        let name = package.get("name").and_then(|n| n.as_str()).unwrap_or("?");
        let is_library = array(package.get("targets")).iter().any(|target| {
            array(target.get("kind"))
                .iter()
                .any(|kind| kind.as_str() == Some("lib"))
        });
        if !is_library {
            continue;
        }
        for dep in array(package.get("dependencies")) {
            let kind = dep.get("kind").and_then(|k| k.as_str()).unwrap_or("normal");
            if kind == "dev" || dep.get("name").and_then(|n| n.as_str()) != Some("k8s-openapi") {
                continue;
            }
            for feature in array(dep.get("features")) {
                if let Some(feature) = feature.as_str().filter(|f| is_k8s_version_feature(f)) {
                    problems.push(format!(
                        "{name} enables k8s-openapi/{feature} in its {kind} dependencies; a library \
                         must leave the version to the crate where the build ends"
                    ));
                }
            }
        }
        let features = package.get("features").and_then(|f| f.as_object());
        for (own, enables) in features.into_iter().flatten() {
            for entry in array(Some(enables)) {
                let entry = entry.as_str().unwrap_or("");
                let target = entry
                    .strip_prefix("k8s-openapi/")
                    .or_else(|| entry.strip_prefix("k8s-openapi?/"));
                if let Some(feature) = target.filter(|f| is_k8s_version_feature(f)) {
                    problems.push(format!(
                        "{name}'s feature `{own}` enables k8s-openapi/{feature}; a library must \
                         leave the version to the crate where the build ends"
                    ));
                }
            }
        }
    }
    problems
}

pub(crate) fn metadata(root: &Path) -> Result<serde_json::Value, String> {
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
    crate::walk::workspace_files(root)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect()
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
            {"name": "apiary-substrate-kube", "dependencies": [
                {"name": "apiary-envtest", "kind": "dev"}]},
            {"name": "apiary-substrate", "dependencies": [
                {"name": "apiary-envtest", "kind": null}]},
        ]});
        let problems = dependency_problems(&json);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("serde"));
        assert!(problems[1].contains("apiary-seeds depends on kube"));
        assert!(problems[2].contains("apiary-substrate depends on apiary-envtest"));
    }

    /// apiary-seeds-kube may depend on apiary-seeds and kube, and on any apiary crate in its
    /// dev-dependencies; a normal dependency on a deploy crate is reported.
    #[test]
    fn seeds_kube_depends_on_no_deploy_crate() {
        let json = serde_json::json!({"packages": [
            {"name": "apiary-seeds-kube", "dependencies": [
                {"name": "apiary-seeds", "kind": null},
                {"name": "kube", "kind": null},
                {"name": "apiary-apiserver-sim", "kind": "dev"},
                {"name": "apiary-substrate-kube", "kind": null},
                {"name": "apiary-classify", "kind": "build"}]},
        ]});
        let problems = dependency_problems(&json);
        assert_eq!(
            problems,
            [
                "apiary-seeds-kube must not depend on apiary-substrate-kube; only on apiary-seeds",
                "apiary-seeds-kube must not depend on apiary-classify; only on apiary-seeds",
            ],
        );
    }

    /// A library choosing a k8s-openapi version (in a normal or build dependency, or through one
    /// of its features) is reported; the same choice in dev-dependencies, in a binary-only
    /// package, or a non-version feature (`schemars`) is not.
    #[test]
    fn k8s_version_features_are_left_to_the_final_build() {
        let lib = serde_json::json!([{"kind": ["lib"]}]);
        let bin = serde_json::json!([{"kind": ["bin"]}]);
        let json = serde_json::json!({"packages": [
            {"name": "apiary-seeds", "targets": lib, "features": {}, "dependencies": [
                {"name": "k8s-openapi", "kind": null, "features": ["v1_33"]},
                {"name": "k8s-openapi", "kind": "dev", "features": ["v1_33"]}]},
            {"name": "apiary-substrate", "targets": lib, "features": {}, "dependencies": [
                {"name": "k8s-openapi", "kind": "build", "features": ["latest"]}]},
            {"name": "apiary-cluster-model", "targets": lib,
             "features": {"pinned": ["k8s-openapi/v1_36"], "docs": ["k8s-openapi?/schemars"]},
             "dependencies": [{"name": "k8s-openapi", "kind": null, "features": ["schemars"]}]},
            {"name": "apiary", "targets": bin, "features": {}, "dependencies": [
                {"name": "k8s-openapi", "kind": null, "features": ["v1_33"]}]},
        ]});
        let problems = k8s_version_problems(&json);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].starts_with("apiary-seeds enables k8s-openapi/v1_33 in its normal"));
        assert!(
            problems[1].starts_with("apiary-substrate enables k8s-openapi/latest in its build")
        );
        assert!(problems[2].starts_with("apiary-cluster-model's feature `pinned`"));
    }
}
