//! The real-server figures of BENCHMARKS.md § Against a real API server and BENCHMARKS.md § Over
//! a real network, measured side by side in one run against
//! an upstream `kube-apiserver` + `etcd` (from `KUBEBUILDER_ASSETS`), with every client talking
//! through the envtest fault proxy (which counts requests and bytes received from the upstream,
//! compressed when compressed, and adds a fixed latency per request and per response) and the
//! fake kubelet making pods Ready. Everything runs at each round trip of `--latencies` (default
//! 0, 20 and 50 ms; half before each request is forwarded, half before its response returns):
//!
//! 1. `apiary deploy AGENT --image …` (the built release binary, and `--apiary-before PATH` for
//!    an older build in the same runs) against what a user types today, `kubectl run NAME
//!    --image=… --restart=Never` then `kubectl wait --for=condition=Ready pod/NAME`: wall time
//!    from command start to return, requests and bytes.
//! 2. `apiary seeds` over 10,000 pods shaped like ordinary workload pods (the synthetic pods of
//!    `crates/seeds/examples/support/synthetic.rs`), with kube's gzip on and, through a second
//!    kubeconfig with `disable-compression: true`, off, against one unpaginated `curl
//!    --compressed` of the same list (the transfer floor); `--pages 1000,2500` adds
//!    `substrate-kube`'s `seeds_once` example at those page sizes; `--full` adds (at the first
//!    latency) a full `k8s_openapi` decode (this program re-run with `--full-list`) and `kubectl
//!    get pods -o json`.
//!
//! Each figure is the median of `--runs` runs (default 3), the runs of the compared commands
//! interleaved so drift hits them alike. CPU is the child's user + system time, read from this
//! process's `cutime`/`cstime` (`/proc/self/stat`) before and after reaping it; peak RSS is the
//! child's `VmHWM` (`/proc/<pid>/status`), polled every 2 ms while it runs — a high-water mark, so
//! the last sample is the peak up to the final 2 ms.
//!
//! Usage (a measurement tool, not a test; slow; never run in CI): `cargo xtask bench-real --
//! [--apiary PATH] [--apiary-before PATH] [--before-args "FLAGS"] [--runs N] [--pods N] [--latencies 0,20,50] [--pages
//! N,N] [--full] [--no-deploy]` (builds the release `apiary` and `seeds_once` first; needs
//! `KUBEBUILDER_ASSETS`). It talks only to loopback and prints no token.

// The seeds benchmark's own synthetic pods (one definition, shared), not a copy.
#[path = "../../seeds/examples/support/synthetic.rs"]
#[allow(dead_code)] // only `pod` is used here; the list builder serves the seeds benchmark
mod synthetic;

// The parts of this program, one file each under `bench_real/` (a `#[path]`, so that cargo does
// not take them for examples of their own).
#[path = "bench_real/args.rs"]
mod args;
#[path = "bench_real/compare.rs"]
mod compare;
#[path = "bench_real/fixture.rs"]
mod fixture;
#[path = "bench_real/meter.rs"]
mod meter;
#[path = "bench_real/report.rs"]
mod report;

use std::process::ExitCode;

use crate::args::parse_args;
use crate::compare::bench;
use crate::fixture::full_list;

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1).peekable();
    if argv.peek().map(String::as_str) == Some("--full-list") {
        let (Some(_), Some(kubeconfig), Some(namespace)) = (argv.next(), argv.next(), argv.next())
        else {
            eprintln!("usage: bench_real --full-list KUBECONFIG NAMESPACE");
            return ExitCode::FAILURE;
        };
        return match full_list(&kubeconfig, &namespace) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("full list failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match parse_args(argv).and_then(|args| bench(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_real: {e}");
            ExitCode::FAILURE
        }
    }
}
