//! `cargo xtask mutants`: mutation testing of the pure code (STYLE.md § Tests), each target in
//! cargo-mutants' own scratch copies, judged by the counts cargo-mutants writes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::shell::ensure_tool;

/// One mutation-testing target: a package, extra cargo-mutants arguments, (when only some of its
/// files are pure) the files to mutate, and arguments for its test binaries (`--skip` filters).
struct MutantTarget {
    package: &'static str,
    extra: &'static [&'static str],
    files: &'static [&'static str],
    test_args: &'static [&'static str],
}

/// The pure code kept honest by mutation testing (STYLE.md § Tests).
const MUTANT_TARGETS: &[MutantTarget] = &[
    MutantTarget {
        package: "apiary-classify",
        extra: &[],
        files: &[],
        test_args: &[],
    },
    MutantTarget {
        package: "apiary-substrate",
        extra: &[],
        files: &[
            "crates/substrate/src/naming.rs",
            "crates/substrate/src/config.rs",
            "crates/substrate/src/image.rs",
            "crates/substrate/src/env.rs",
            "crates/substrate/src/dotenv.rs",
            "crates/substrate/src/intent.rs",
            "crates/substrate/src/build.rs",
            "crates/substrate/src/observe.rs",
            "crates/substrate/src/pod_options.rs",
            "crates/substrate/src/pod_options/flags.rs",
            "crates/substrate/src/pod_options/overrides.rs",
            // The driver executes the machines; every mutant of its mapping must be caught by the
            // conformance suites.
            "crates/substrate/src/driver/*.rs",
        ],
        test_args: &[],
    },
    // The buzz binding's own decisions: its pod request's checks and validation.
    MutantTarget {
        package: "apiary-buzz",
        extra: &[],
        files: &["crates/buzz/src/binding.rs", "crates/buzz/src/pod.rs"],
        test_args: &[],
    },
    // Every feature, so the serde form is mutated too.
    MutantTarget {
        package: "apiary-seeds",
        extra: &["--all-features"],
        files: &[],
        test_args: &[],
    },
    // The pure half of the exchange layer both kube-rs shells send through (decoding a refusal by
    // the quoting rule, `Retry-After`, the chain of causes): its unit tests and the mock-tier
    // seeds binary, whose list-mode tests drive the real `kube::Client` over a scripted service.
    MutantTarget {
        package: "apiary-seeds-kube",
        extra: &["--cargo-arg=--lib", "--cargo-arg=--test=seeds"],
        files: &["crates/seeds-kube/src/exchange/decode.rs"],
        test_args: &[],
    },
    // The response-mapping and retry-decision code of the kube-rs substrate. Only the unit
    // tests and the `cluster` test binary are built for each mutant (the real-server tier's
    // binaries take minutes to link per mutant), and of `cluster` only the suites that drive the
    // real `kube::Client` over a mock service run: its simulator suites (`sim`, `sim_*`) and the
    // scenario table (`scenarios`, on the fake and the simulator) take half a minute each and
    // reach this code only through those same mappings.
    MutantTarget {
        package: "apiary-substrate-kube",
        extra: &["--cargo-arg=--lib", "--cargo-arg=--test=cluster"],
        files: &[
            "crates/substrate-kube/src/cluster/mapping.rs",
            "crates/substrate-kube/src/cluster/retry.rs",
        ],
        test_args: &["--skip", "sim::", "--skip", "sim_", "--skip", "scenarios::"],
    },
];

/// Mutation testing of the pure code; fails on any missed or timed-out mutant, or none found.
pub(crate) fn run(root: &Path, packages: &[String]) -> Result<(), String> {
    ensure_tool(root, "mutants", "cargo-mutants")?;
    let selected: Vec<&MutantTarget> = MUTANT_TARGETS
        .iter()
        .filter(|t| packages.is_empty() || packages.iter().any(|p| p == t.package))
        .collect();
    if selected.is_empty() {
        return Err(format!("no mutation target named {packages:?}"));
    }
    let shared = shared_target_dir(root);
    for target in selected {
        let package = target.package;
        let out = root.join("target").join("mutants").join(package);
        std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
        let before = artifact_fingerprint(&shared);
        let mut command = mutants_command(root, target, &out);
        eprintln!("xtask: {command:?}");
        // The exit code says "missed" or "timeout" too, but the summary below is the verdict.
        let _ = command.status();
        let after = artifact_fingerprint(&shared);
        if before != after {
            return Err(format!(
                "the real tree's artifacts changed during the mutation run of {package} \
                 ({}/debug/deps/libapiary_classify-*.rlib): a mutant may have been written \
                 there; rebuild before testing (or another cargo ran at the same time)",
                shared.display()
            ));
        }
        let summary = read_mutants_summary(&out.join("mutants.out").join("outcomes.json"))?;
        eprintln!("xtask: mutants {package}: {summary}");
        summary.verdict()?;
    }
    Ok(())
}

/// The cargo-mutants invocation for one target. It always builds in cargo-mutants' own scratch
/// copies, each with its own `target/`: `CARGO_TARGET_DIR` (and its config twin) is removed from
/// the environment and the real target directory is not copied, so no mutated artifact can land
/// where a later `cargo test` or `cargo nextest run` in the real tree would link it.
fn mutants_command(root: &Path, target: &MutantTarget, out: &Path) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    command
        .args(["mutants", "--package", target.package, "--timeout", "120"])
        .arg("--output")
        .arg(out)
        .args(["--no-shuffle", "--copy-target", "false"])
        .args(target.extra);
    for file in target.files {
        command.args(["--file", file]);
    }
    if !target.test_args.is_empty() {
        // After cargo-mutants' `--` come cargo test's arguments, after cargo test's the binaries'.
        command.args(["--", "--"]).args(target.test_args);
    }
    command
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        // Every mutant relinks its test binaries; without debug info that is several times
        // faster, and no mutant outcome depends on it.
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_PROFILE_TEST_DEBUG", "0")
        .current_dir(root);
    command
}

/// The target directory the real tree builds into: `CARGO_TARGET_DIR` when set, else `target/`.
fn shared_target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// Name, length and modification time of every `libapiary_classify-*.rlib` of the debug build
/// in `target_dir`, sorted: the artifacts a leaked mutant build would overwrite.
fn artifact_fingerprint(target_dir: &Path) -> Vec<(String, u64, Option<std::time::SystemTime>)> {
    let deps = target_dir.join("debug").join("deps");
    let mut found: Vec<_> = std::fs::read_dir(&deps)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("libapiary_classify-") && name.ends_with(".rlib")) {
                return None;
            }
            let meta = entry.metadata().ok()?;
            Some((name, meta.len(), meta.modified().ok()))
        })
        .collect();
    found.sort();
    found
}

/// The counts of one cargo-mutants run.
#[derive(Debug, Default, PartialEq, Eq)]
struct MutantsSummary {
    total: u64,
    caught: u64,
    missed: u64,
    timeout: u64,
    unviable: u64,
}

impl std::fmt::Display for MutantsSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} caught, {} missed, {} timeout, {} unviable, {} total",
            self.caught, self.missed, self.timeout, self.unviable, self.total
        )
    }
}

impl MutantsSummary {
    /// A run passes only with zero missed, zero timeouts and at least one mutant.
    fn verdict(&self) -> Result<(), String> {
        if self.total == 0 {
            return Err("cargo-mutants found zero mutants: the target is misconfigured".into());
        }
        if self.missed > 0 || self.timeout > 0 {
            return Err(format!("mutants survived: {self}"));
        }
        Ok(())
    }
}

fn read_mutants_summary(path: &Path) -> Result<MutantsSummary, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cargo-mutants wrote no {}: {e}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let count = |key: &str| {
        json.get(key)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    Ok(MutantsSummary {
        total: count("total_mutants"),
        caught: count("caught"),
        missed: count("missed"),
        timeout: count("timeout"),
        unviable: count("unviable"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::workspace_root;

    /// cargo-mutants never inherits a shared target directory: both environment spellings are
    /// removed from the command, the real `target/` is not copied, and it does not mutate in place
    /// (a leaked mutant of classify once broke a later nextest run).
    #[test]
    fn mutants_command_builds_in_its_own_target_dir() {
        let root = workspace_root();
        let out = root.join("target").join("mutants").join("apiary-classify");
        let command = mutants_command(&root, &MUTANT_TARGETS[0], &out);
        let envs: Vec<_> = command.get_envs().collect();
        for key in ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"] {
            assert!(
                envs.contains(&(std::ffi::OsStr::new(key), None)),
                "{key} not removed: {envs:?}"
            );
        }
        let set: Vec<_> = envs.iter().filter(|(_, value)| value.is_some()).collect();
        assert_eq!(
            set.len(),
            2,
            "only the two debug-info switches are set: {envs:?}"
        );
        for (key, value) in set {
            assert!(key.to_string_lossy().ends_with("_DEBUG"), "{envs:?}");
            assert_eq!(*value, Some(std::ffi::OsStr::new("0")), "{envs:?}");
        }
        let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
        let joined = args.join(" ");
        assert!(joined.contains("--copy-target false"), "{joined}");
        assert!(
            joined.starts_with("mutants --package apiary-classify "),
            "{joined}"
        );
        assert!(!args.iter().any(|a| a == "--in-place"), "{joined}");
        assert_eq!(command.get_current_dir(), Some(root.as_path()));
    }

    /// A target's test-binary arguments come last, after two separators (cargo-mutants' own and
    /// cargo test's), so they reach the test binaries and no `--file` is taken for one of them.
    #[test]
    fn test_args_come_last_after_two_separators() {
        let root = workspace_root();
        let target = MUTANT_TARGETS
            .iter()
            .find(|t| !t.test_args.is_empty())
            .expect("a target with test arguments");
        let out = root.join("target").join("mutants").join(target.package);
        let args: Vec<String> = mutants_command(&root, target, &out)
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let tail = &args[args.len() - target.test_args.len() - 2..];
        assert_eq!(&tail[..2], ["--", "--"], "{args:?}");
        assert_eq!(&tail[2..], target.test_args, "{args:?}");
        assert_eq!(args.iter().filter(|a| *a == "--").count(), 2, "{args:?}");
    }

    /// Every test target a mutation target restricts itself to exists, so a renamed suite
    /// fails here instead of failing every mutant's build.
    #[test]
    fn restricted_test_targets_exist() {
        let root = workspace_root();
        let mut checked = 0;
        for target in MUTANT_TARGETS {
            let dir = target.package.trim_start_matches("apiary-");
            for name in target
                .extra
                .iter()
                .filter_map(|a| a.strip_prefix("--cargo-arg=--test="))
            {
                // Cargo's two layouts of a test target: `tests/<name>.rs` and
                // `tests/<name>/main.rs`.
                let tests = root.join("crates").join(dir).join("tests");
                let file = tests.join(format!("{name}.rs"));
                let folder = tests.join(name).join("main.rs");
                assert!(
                    file.is_file() || folder.is_file(),
                    "{} names a missing {} (or {})",
                    target.package,
                    file.display(),
                    folder.display()
                );
                checked += 1;
            }
        }
        assert!(checked > 0, "no restricted target was checked");
    }

    /// The artifact fingerprint sees a classify rlib appear or change, and nothing else.
    #[test]
    fn artifact_fingerprint_tracks_classify_rlibs() {
        let dir = std::env::temp_dir().join(format!("xtask-fingerprint-{}", std::process::id()));
        let deps = dir.join("debug").join("deps");
        std::fs::create_dir_all(&deps).unwrap();
        assert!(artifact_fingerprint(&dir).is_empty());
        std::fs::write(deps.join("libapiary_seeds-1.rlib"), b"x").unwrap();
        assert!(artifact_fingerprint(&dir).is_empty());
        std::fs::write(deps.join("libapiary_classify-1.rlib"), b"x").unwrap();
        let first = artifact_fingerprint(&dir);
        assert_eq!(first.len(), 1);
        std::fs::write(deps.join("libapiary_classify-1.rlib"), b"mutant").unwrap();
        assert_ne!(artifact_fingerprint(&dir), first);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A mutation run that found nothing is a failure, not a pass.
    #[test]
    fn zero_mutants_is_a_failure() {
        assert!(MutantsSummary::default().verdict().is_err());
    }

    /// Any missed or timed-out mutant fails the run; only caught/unviable ones pass.
    #[test]
    fn missed_or_timeout_fails_caught_passes() {
        let base = MutantsSummary {
            total: 3,
            caught: 2,
            unviable: 1,
            ..Default::default()
        };
        assert!(base.verdict().is_ok());
        assert!(MutantsSummary { missed: 1, ..base }.verdict().is_err());
        let timed_out = MutantsSummary {
            total: 3,
            caught: 2,
            timeout: 1,
            ..Default::default()
        };
        assert!(timed_out.verdict().is_err());
    }
}
