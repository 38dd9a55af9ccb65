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
        Some("downstream") => downstream::check_all(&root, false, downstream::Output::Terminal),
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
/// every publishable crate, then the whole test suite with nextest as the last step, with the
/// downstream crates built beside it (`downstream_beside`).
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
    let mut args = vec!["clippy", "--all-targets"];
    args.extend_from_slice(CLI_WITHOUT_DEMO);
    args.extend_from_slice(&["--", "-D", "warnings"]);
    cargo(root, &args, &[])?;
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
    let downstream = downstream_beside(root)?;
    say_if_real_tier_skipped();
    // The whole suite runs under one real node (crates/envtest/README.md § The real node): the
    // wrapper starts it, runs nextest with `APIARY_NODE` naming it, and stops it by PID after
    // nextest's summary. Without root or the node's packages it says so in one line and the
    // node tier skips (fails under APIARY_NODE_REQUIRED=1, as `.ci/run` sets).
    let tests = under_node(root, &["nextest", "run", "--workspace"]);
    let downstream = downstream
        .join()
        .map_err(|_| "the downstream check panicked".to_owned())?;
    tests.and(downstream)
}

/// The downstream crates' check, started beside the last step at the lowest CPU priority: the
/// test run leaves about a core idle on a 2-core machine (it mostly waits on the node and the
/// control plane), and the check, about 130 s of compiling when it ran alone, fits in it. Its
/// output goes to `target/downstream.log`, so the run still ends with nextest's summary; one line
/// says when it is done, and a failure names the log.
fn downstream_beside(root: &Path) -> Result<std::thread::JoinHandle<Result<(), String>>, String> {
    let path = root.join("target").join("downstream.log");
    std::fs::create_dir_all(root.join("target")).map_err(|e| format!("target: {e}"))?;
    let log = std::fs::File::create(&path)
        .map_err(|e| format!("could not create {}: {e}", path.display()))?;
    eprintln!(
        "xtask: the downstream crates build beside the tests (log: {})",
        path.display()
    );
    let root = root.to_owned();
    Ok(std::thread::spawn(move || {
        let started = std::time::Instant::now();
        let result = downstream::check_all(&root, true, downstream::Output::File(log));
        let seconds = started.elapsed().as_secs();
        match &result {
            Ok(()) => eprintln!("xtask: {seconds} s: the downstream crates, beside the tests"),
            Err(_) => eprintln!(
                "xtask: {seconds} s: the downstream crates FAILED (log: {})",
                path.display()
            ),
        }
        result
    }))
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

/// The one feature combination linted on its own: the CLI without the simulator (`cargo install
/// --no-default-features`), the one combination that takes code away. Every library feature is
/// on in the workspace's one `--all-features` clippy pass and in its test build (the seeds
/// crates' features through `apiary-envtest`'s dev-dependencies), so each is linted and tested
/// once (seeds.md § Cargo feature tellus). Without them the seeds crates are built by the CLI's
/// build and by the downstream crates. The CLI's unit tests are not run again without `demo`:
/// one of them differs (the completion script lists `demo` only with it), and the two-pass cost
/// was 31 s of every CI run.
const CLI_WITHOUT_DEMO: &[&str] = &["-p", "apiary", "--no-default-features"];

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

    /// Every library feature of the seeds crates is on in the workspace's test build: enabled by
    /// `apiary-envtest`'s dev-dependencies (or implied, `tellus` by `tellus-cluster-test`), so
    /// the one `cargo nextest run --workspace` tests each feature's code.
    #[test]
    fn the_workspace_test_build_enables_every_seeds_feature() {
        let root = workspace_root();
        let read = |path: &str| {
            std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
        };
        let envtest = read("crates/envtest/Cargo.toml");
        let dev = &envtest[envtest
            .find("[dev-dependencies]")
            .expect("dev-dependencies")..];
        for (manifest, package) in [
            ("crates/seeds/Cargo.toml", "apiary-seeds"),
            ("crates/seeds-kube/Cargo.toml", "apiary-seeds-kube"),
        ] {
            let text = read(manifest);
            let table = &text[text.find("[features]").expect("features")..];
            let features: Vec<&str> = table
                .lines()
                .skip(1)
                .take_while(|l| !l.starts_with('['))
                .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim()))
                .filter(|k| !k.starts_with('#'))
                .collect();
            assert!(!features.is_empty(), "{manifest}");
            let line = dev
                .lines()
                .find(|l| l.starts_with(&format!("{package} = ")))
                .unwrap_or_else(|| panic!("apiary-envtest has no dev-dependency on {package}"));
            for feature in features {
                let implied = feature == "tellus" && line.contains("\"tellus-cluster-test\"");
                assert!(
                    implied || line.contains(&format!("\"{feature}\"")),
                    "{package}'s feature {feature} is not on in the workspace's test build: \
                     add it to apiary-envtest's dev-dependency on {package}"
                );
            }
        }
    }
}
