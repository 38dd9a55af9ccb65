//! The command line of `bench_real` (the flags the crate doc lists, and `--seeds-once PATH`):
//! parsed into [`Args`], with each default. Performs no I/O and starts nothing.

use std::path::{Path, PathBuf};

pub struct Args {
    pub apiary: PathBuf,
    /// An older `apiary` binary whose deploy is measured in the same runs (before/after).
    pub apiary_before: Option<PathBuf>,
    /// Extra deploy flags for the `--apiary-before` runs (`--before-args "--isolate …"`), so the
    /// same binary with and without options is compared in one run.
    pub before_args: Vec<String>,
    pub seeds_once: PathBuf,
    pub runs: usize,
    pub pods: usize,
    /// Round trips (ms) the proxy adds, half each way.
    pub latencies: Vec<u64>,
    /// Page sizes measured through `seeds_once` (empty: none).
    pub page_sizes: Vec<u32>,
    /// Also the full-decode and `kubectl get` baselines (at the first latency only: slow).
    pub full: bool,
    /// Whether the deploy comparison runs.
    pub deploy: bool,
}

fn list_of<T: std::str::FromStr>(flag: &str, value: &str) -> Result<Vec<T>, String>
where
    T::Err: std::fmt::Display,
{
    value
        .split(',')
        .filter(|v| !v.trim().is_empty())
        .map(|v| v.trim().parse().map_err(|e| format!("{flag}: {e}")))
        .collect()
}

pub fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release");
    let mut args = Args {
        apiary: target.join("apiary"),
        apiary_before: None,
        before_args: Vec::new(),
        seeds_once: target.join("examples/seeds_once"),
        runs: 3,
        pods: 10_000,
        latencies: vec![0, 20, 50],
        page_sizes: Vec::new(),
        full: false,
        deploy: true,
    };
    while let Some(flag) = argv.next() {
        let mut value = || argv.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--apiary" => args.apiary = PathBuf::from(value()?),
            "--apiary-before" => args.apiary_before = Some(PathBuf::from(value()?)),
            "--before-args" => {
                args.before_args = value()?.split_whitespace().map(str::to_owned).collect();
            }
            "--seeds-once" => args.seeds_once = PathBuf::from(value()?),
            "--runs" => args.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--pods" => args.pods = value()?.parse().map_err(|e| format!("--pods: {e}"))?,
            "--latencies" => args.latencies = list_of("--latencies", &value()?)?,
            "--pages" => args.page_sizes = list_of("--pages", &value()?)?,
            "--full" => args.full = true,
            "--no-deploy" => args.deploy = false,
            // `cargo xtask bench-real -- <flags>` hands the separator on through `cargo run`.
            "--" => {}
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if args.runs == 0 || args.latencies.is_empty() {
        return Err("--runs and --latencies need at least one".to_owned());
    }
    Ok(args)
}
