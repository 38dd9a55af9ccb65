//! `cargo xtask`: the one entry point for checks beyond `cargo build` (STYLE.md § Tooling).
//!
//! Commands: `ci` (what CI runs), `tidy` (structural rules, also an ordinary test), `mutants`
//! (mutation testing of the pure code), `props` (property tests with many more cases), `bench`
//! (the seeds decoding benchmark), `e2e` (tests that need a real cluster), `downstream` (the crates
//! of `tests/downstream/`, also part of `ci`). This is a developer tool: it shells out to cargo
//! and exits non-zero on the first failing step.

mod citations;
mod cycles;
mod downstream;
mod lengths;
mod tidy;
mod walk;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// One mutation-testing target: a package, extra cargo-mutants arguments, and (when only some of
/// its files are pure) the files to mutate.
struct MutantTarget {
    package: &'static str,
    extra: &'static [&'static str],
    files: &'static [&'static str],
}

/// The pure code kept honest by mutation testing (STYLE.md § Tests).
const MUTANT_TARGETS: &[MutantTarget] = &[
    MutantTarget {
        package: "apiary-classify",
        extra: &[],
        files: &[],
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
            // The driver executes the machines; every mutant of its mapping must be caught by
            // the conformance suites (issue 10 § 1).
            "crates/substrate/src/driver/*.rs",
        ],
    },
    // Every feature, so the serde form is mutated too.
    MutantTarget {
        package: "apiary-seeds",
        extra: &["--all-features"],
        files: &[],
    },
    // The response-mapping and retry-decision code of the kube-rs substrate.
    MutantTarget {
        package: "apiary-substrate-kube",
        extra: &[],
        files: &[
            "crates/substrate-kube/src/cluster/mapping.rs",
            "crates/substrate-kube/src/cluster/retry.rs",
        ],
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(&root),
        Some("tidy") => tidy::check(&root).map_err(|problems| problems.join("\n")),
        Some("mutants") => mutants(&root, &args[1..]),
        Some("props") => props(&root),
        Some("bench") => bench(&root),
        Some("bench-real") => bench_real(&root, &args[1..]),
        Some("e2e") => e2e(&root),
        Some("downstream") => downstream::check_all(&root),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str =
    "usage: cargo xtask <ci | tidy | mutants [PACKAGE...] | props | bench | e2e | downstream>";

/// The workspace root: the parent of this crate's manifest directory.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Run `cargo <args>` in the workspace root with extra environment, failing on a non-zero exit.
fn cargo(root: &Path, args: &[&str], envs: &[(&str, &str)]) -> Result<(), String> {
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
fn ensure_tool(root: &Path, sub: &str, krate: &str) -> Result<(), String> {
    if has_cargo_subcommand(sub) {
        return Ok(());
    }
    cargo(root, &["install", "--locked", krate], &[])
}

/// What CI runs: formatting, lints on every target and feature combination (the CLI without its
/// `demo` feature included), tidy, doctests, the API docs with warnings denied, packaging of
/// every publishable crate, the downstream crates, then the whole test suite with nextest as the
/// last step.
fn ci(root: &Path) -> Result<(), String> {
    ensure_tool(root, "nextest", "cargo-nextest")?;
    cargo(root, &["fmt", "--all", "--check"], &[])?;
    cargo(
        root,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    for features in FEATURE_COMBINATIONS {
        let mut args = vec!["clippy", "--all-targets"];
        args.extend_from_slice(features);
        args.extend_from_slice(&["--", "-D", "warnings"]);
        cargo(root, &args, &[])?;
    }
    tidy::check(root).map_err(|problems| problems.join("\n"))?;
    cargo(root, &["test", "--doc", "--workspace"], &[])?;
    // Broken intra-doc links (and every other rustdoc warning) fail CI.
    cargo(
        root,
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    // Every path dependency carries a version, so each publishable crate packages. `--no-verify`:
    // the unpublished apiary crates cannot be fetched back from crates.io to rebuild the tarballs.
    // The test-support crate and xtask are `publish = false` and not packaged.
    cargo(
        root,
        &[
            "package",
            "--workspace",
            "--no-verify",
            "--allow-dirty",
            "--exclude",
            "apiary-envtest",
            "--exclude",
            "xtask",
        ],
        &[],
    )?;
    downstream::check_all(root)?;
    for features in TEST_COMBINATIONS {
        // The real-server tier does not depend on these features and runs in the workspace run
        // below; each of its tests starts a control plane, so it is not repeated per combination.
        let mut args = vec!["nextest", "run", "--no-tests=pass", "-E", NOT_REAL_TIER];
        args.extend_from_slice(features);
        cargo(root, &args, &[])?;
    }
    say_if_real_tier_skipped();
    cargo(root, &["nextest", "run", "--workspace"], &[])
}

/// The nextest filter that leaves out the real-server tier: the `real_*` test binaries and the
/// CLI scenarios' `::real` instances.
const NOT_REAL_TIER: &str = "not (binary(/^real_/) | test(/::real$/))";

/// nextest hides the output of passing tests, so the tier's own skip line is not shown: say it
/// here, once, when `KUBEBUILDER_ASSETS` is unset (crates/envtest/README.md).
fn say_if_real_tier_skipped() {
    if std::env::var_os("KUBEBUILDER_ASSETS").is_none_or(|v| v.is_empty()) {
        eprintln!(
            "xtask: the real-server tier is skipped: KUBEBUILDER_ASSETS is not set (install the \
             binaries with `setup-envtest use 1.30 -p path` and export KUBEBUILDER_ASSETS=<that \
             path>; see crates/envtest/README.md)"
        );
    }
}

/// Feature combinations beyond the default build that CI lints and tests (seeds.md § Cargo
/// feature `tellus`: a feature that is never compiled rots unnoticed).
/// The default workspace build has neither library feature; these add each one and both, and
/// take the CLI's default `demo` feature away.
const FEATURE_COMBINATIONS: &[&[&str]] = &[
    // The CLI without the simulator (`cargo install --no-default-features`).
    &["-p", "apiary", "--no-default-features"],
    &["-p", "apiary-seeds", "--features", "serde"],
    &["-p", "apiary-substrate-kube", "--features", "tellus"],
    // Both features, plus tellus's dev transport for the three-node cluster test.
    &[
        "-p",
        "apiary-substrate-kube",
        "--features",
        "tellus-cluster-test,apiary-seeds/serde",
    ],
];

/// The combinations whose tests run: every lint combination but `tellus` alone, whose tests all
/// run again in the `tellus-cluster-test` combination (it enables `tellus`), so building
/// substrate-kube's test binaries a third time bought nothing but CI minutes.
const TEST_COMBINATIONS: &[&[&str]] = &[
    FEATURE_COMBINATIONS[0],
    FEATURE_COMBINATIONS[1],
    FEATURE_COMBINATIONS[3],
];

/// Mutation testing of the pure code; fails on any missed or timed-out mutant, or none found.
fn mutants(root: &Path, packages: &[String]) -> Result<(), String> {
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
    command
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
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

/// The property tests with many more cases than the default run.
fn props(root: &Path) -> Result<(), String> {
    ensure_tool(root, "nextest", "cargo-nextest")?;
    cargo(
        root,
        // The whole suite: property tests are spread over every crate and named after their rule,
        // not their technique; the other tests simply run once more.
        &["nextest", "run", "--workspace", "--release"],
        &[("PROPTEST_CASES", "20000")],
    )
}

/// The seeds decoding benchmark (seeds.md § Lean decoding), lean against full in one run.
fn bench(root: &Path) -> Result<(), String> {
    cargo(
        root,
        &[
            "run",
            "--release",
            "-p",
            "apiary-seeds",
            "--example",
            "bench_decode",
        ],
        &[],
    )
}

/// The real-server figures (BENCHMARKS.md § Against a real API server): the release `apiary`
/// binary against `kubectl` on an envtest control plane (needs `KUBEBUILDER_ASSETS`; slow; not
/// part of `ci`). Extra arguments go to the benchmark (`--runs N`, `--pods N`, `--latencies
/// 0,20,50`, `--pages 1000,2500`, `--apiary-before PATH`, `--full`, `--no-deploy`).
fn bench_real(root: &Path, extra: &[String]) -> Result<(), String> {
    cargo(root, &["build", "--release", "-p", "apiary"], &[])?;
    // The page-size child (`--pages`) of the seeds comparison.
    cargo(
        root,
        &[
            "build",
            "--release",
            "-p",
            "apiary-substrate-kube",
            "--example",
            "seeds_once",
        ],
        &[],
    )?;
    let mut args = vec![
        "run",
        "--release",
        "-p",
        "apiary-envtest",
        "--example",
        "bench_real",
        "--",
    ];
    args.extend(extra.iter().map(String::as_str));
    cargo(root, &args, &[])
}

/// The tests that need a kind cluster (see README § Cluster tests on kind): the ignored tests of
/// the `e2e_cluster` targets of `apiary-substrate-kube` (the library) and `apiary` (the built
/// binary), one at a time. Only those: `--ignored` across the workspace would also run ignored
/// tests that need something else (the buzz provider's own image and namespace in
/// `buzz_scenarios.rs`, a known defect kept failing in `real_rbac.rs`).
fn e2e(root: &Path) -> Result<(), String> {
    cargo(
        root,
        &[
            "test",
            "-p",
            "apiary-substrate-kube",
            "-p",
            "apiary",
            "--test",
            "e2e_cluster",
            "--",
            "--ignored",
            "--test-threads=1",
        ],
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The structural rules of the workspace hold (runs tidy as an ordinary test).
    #[test]
    fn tidy_passes() {
        if let Err(problems) = tidy::check(&workspace_root()) {
            panic!("tidy found problems:\n{}", problems.join("\n"));
        }
    }

    /// Every lint combination whose tests are not run is covered by one that is: the same
    /// package, and every feature it names is named (or implied, `tellus` by
    /// `tellus-cluster-test`) by the tested one.
    #[test]
    fn every_untested_combination_is_covered_by_a_tested_one() {
        fn package_and_features(combo: &[&str]) -> (String, Vec<String>) {
            let package = combo[combo.iter().position(|a| *a == "-p").expect("-p") + 1];
            let features = combo
                .iter()
                .position(|a| *a == "--features")
                .map(|i| combo[i + 1].split(',').map(str::to_owned).collect())
                .unwrap_or_default();
            (package.to_owned(), features)
        }
        let implied = |feature: &str| -> Vec<String> {
            match feature {
                "tellus-cluster-test" => vec!["tellus-cluster-test".into(), "tellus".into()],
                other => vec![other.to_owned()],
            }
        };
        for combo in FEATURE_COMBINATIONS {
            if TEST_COMBINATIONS.contains(combo) {
                continue;
            }
            let (package, features) = package_and_features(combo);
            let covered = TEST_COMBINATIONS.iter().any(|tested| {
                let (tested_package, tested_features) = package_and_features(tested);
                let enabled: Vec<String> =
                    tested_features.iter().flat_map(|f| implied(f)).collect();
                tested_package == package && features.iter().all(|f| enabled.contains(f))
            });
            assert!(covered, "{combo:?} is linted but its tests never run");
        }
        assert!(TEST_COMBINATIONS.len() < FEATURE_COMBINATIONS.len());
    }

    /// cargo-mutants never inherits a shared target directory: both environment spellings are
    /// removed from the command, the real `target/` is not copied, and it does not mutate in
    /// place (issue 9 § 4: a leaked mutant of classify broke a later nextest run).
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
        assert!(envs.iter().all(|(_, value)| value.is_none()), "{envs:?}");
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
