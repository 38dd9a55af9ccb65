//! `cargo xtask`: the one entry point for checks beyond `cargo build` (STYLE.md § Tooling).
//!
//! Commands: `ci` (what CI runs), `tidy` (structural rules, also an ordinary test), `mutants`
//! (mutation testing of the pure code), `props` (property tests with many more cases), `bench`
//! (the seeds decoding benchmark), `e2e` (the real-node tier alone), `downstream` (the crates
//! of `tests/downstream/`, also part of `ci`), `architecture` (rewrites the crate table of
//! `ARCHITECTURE.md`, which `tidy` checks). This is a developer tool: it shells out to cargo
//! and exits non-zero on the first failing step.

mod architecture;
mod citations;
mod cycles;
mod downstream;
mod inventory;
mod lengths;
mod mutants;
mod shell;
mod tidy;
mod tracker;
mod walk;

use std::path::Path;
use std::process::ExitCode;

use shell::{cargo, cargo_untimed, ensure_tool, workspace_root};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(&root),
        Some("tidy") => tidy::check(&root).map_err(|problems| problems.join("\n")),
        Some("mutants") => mutants::run(&root, &args[1..]),
        Some("props") => props(&root),
        Some("bench") => bench(&root),
        Some("bench-real") => bench_real(&root, &args[1..]),
        Some("e2e") => e2e(&root),
        Some("downstream") => downstream::check_all(&root),
        Some("architecture") => {
            tidy::metadata(&root).and_then(|json| architecture::write(&root, &json))
        }
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

const USAGE: &str = "usage: cargo xtask <ci | tidy | mutants [PACKAGE...] | props | bench | e2e | \
                     downstream | architecture>";

/// What CI runs: formatting, lints on every target and feature combination (the CLI without its
/// `demo` feature included), tidy, doctests, the API docs with warnings denied, packaging of
/// every publishable crate, the downstream crates, then the whole test suite with nextest as the
/// last step.
fn ci(root: &Path) -> Result<(), String> {
    ensure_tool(root, "nextest", "cargo-nextest")?;
    cargo(root, &["fmt", "--all", "--check"], &[])?;
    // One pass lints every target with every feature on (the library features of the seeds
    // crates, the fake, the demo); the CLI without `demo` is the one combination that takes code
    // away, so it is linted on its own.
    cargo(
        root,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    for features in &FEATURE_COMBINATIONS[..1] {
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
    let started = std::time::Instant::now();
    downstream::check_all(root)?;
    eprintln!(
        "xtask: {} s: the downstream crates",
        started.elapsed().as_secs()
    );
    for (features, filter) in TEST_COMBINATIONS {
        let mut args = vec!["nextest", "run", "--no-tests=pass", "-E", filter];
        args.extend_from_slice(features);
        cargo(root, &args, &[])?;
    }
    say_if_real_tier_skipped();
    // The whole suite runs under one real node (crates/envtest/README.md § The real node): the
    // wrapper starts it, runs nextest with `APIARY_NODE` naming it, and stops it by PID after
    // nextest's summary. Without root or the node's packages it says so in one line and the
    // node tier skips (fails under APIARY_NODE_REQUIRED=1, as `.ci/run` sets).
    under_node(root, &["nextest", "run", "--workspace"])
}

/// `cargo <args>` under one real node: the `apiary_node` wrapper starts it, runs the command with
/// `APIARY_NODE` naming it, and stops it by PID afterwards (crates/envtest/README.md § The real
/// node).
fn under_node(root: &Path, args: &[&str]) -> Result<(), String> {
    let mut all = vec![
        "run",
        "--quiet",
        "-p",
        "apiary-envtest",
        "--example",
        "apiary_node",
        "--",
        "cargo",
    ];
    all.extend_from_slice(args);
    cargo_untimed(root, &all, &[])
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

/// Feature combinations beyond the default build that CI compiles and tests (seeds.md § Cargo
/// feature `tellus`: a feature that is never compiled rots unnoticed).
/// The default workspace build has neither library feature; these add each one and both, and
/// take the CLI's default `demo` feature away. Clippy lints the first alone and the others in
/// its one `--all-features` pass over the workspace (each was a separate pass of 5 to 23 s).
const FEATURE_COMBINATIONS: &[&[&str]] = &[
    // The CLI without the simulator (`cargo install --no-default-features`).
    &["-p", "apiary", "--no-default-features"],
    &["-p", "apiary-seeds", "--features", "serde"],
    &["-p", "apiary-seeds-kube", "--features", "tellus"],
    // Both features, plus tellus's dev transport for the three-node cluster test.
    &[
        "-p",
        "apiary-seeds-kube",
        "--features",
        "tellus-cluster-test,apiary-seeds/serde",
    ],
];

/// The combinations whose tests run: every lint combination but `tellus` alone, whose tests all
/// run again in the `tellus-cluster-test` combination (it enables `tellus`), so building
/// seeds-kube's test binaries a third time bought nothing but CI minutes.
///
/// Each runs with a test filter. The real-server tier does not depend on these features and runs
/// in the workspace run; each of its tests starts a control plane, so it is never repeated per
/// combination. The CLI without `demo` runs only its binary's own unit tests: the feature takes
/// away the `demo` subcommand and the simulator, and nothing else the integration suite drives
/// differs (it ran whole in this combination before, 212 tests for about 70 s, and is built and
/// linted here by clippy all the same).
const TEST_COMBINATIONS: &[(&[&str], &str)] = &[
    (FEATURE_COMBINATIONS[0], "kind(bin)"),
    (FEATURE_COMBINATIONS[1], NOT_REAL_TIER),
    (FEATURE_COMBINATIONS[3], NOT_REAL_TIER),
];

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
            "apiary-seeds-kube",
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

/// The real-node tier alone (crates/envtest/README.md § The real node): the `real_node*` test
/// binaries under one node started for the run. Needs root and the node's Debian packages (the
/// wrapper says which are missing). The same tests also run in `ci`'s last step.
fn e2e(root: &Path) -> Result<(), String> {
    ensure_tool(root, "nextest", "cargo-nextest")?;
    under_node(
        root,
        &[
            "nextest",
            "run",
            "--workspace",
            "-E",
            "binary(/^real_node/)",
        ],
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
            if TEST_COMBINATIONS.iter().any(|(tested, _)| tested == combo) {
                continue;
            }
            let (package, features) = package_and_features(combo);
            let covered = TEST_COMBINATIONS.iter().any(|(tested, _)| {
                let (tested_package, tested_features) = package_and_features(tested);
                let enabled: Vec<String> =
                    tested_features.iter().flat_map(|f| implied(f)).collect();
                tested_package == package && features.iter().all(|f| enabled.contains(f))
            });
            assert!(covered, "{combo:?} is linted but its tests never run");
        }
        assert!(TEST_COMBINATIONS.len() < FEATURE_COMBINATIONS.len());
    }
}
