//! Benchmark of seeds.md § Lean decoding: one resolve of a synthetic 10,000-pod list (about 5 KB
//! of JSON per pod) by the lean decoder and by full `Pod` decoding, from the same bytes, in the
//! same run. Prints time per decode (median of several runs), allocated bytes, peak heap, peak
//! RSS, whether the addresses are identical, and whether the targets hold (≤ 1/3 of the time,
//! ≤ 1/10 of the allocated bytes).
//!
//! Usage: `cargo run --release -p apiary-seeds --example bench_decode -- [--pods N] [--runs N]
//! [--json] [--check]`. `--check` exits 1 when a target is missed or the addresses differ.
//!
//! Allocation is counted by the `cap` crate's wrapping global allocator (the `unsafe` part of a
//! `GlobalAlloc` lives there; this workspace forbids `unsafe`). Each path is measured in a child
//! process of its own (this binary re-run with `--measure`), so one path's peak cannot hide the
//! other's. Measurement tool only: it must not be used by any library.

#[path = "support/full.rs"]
mod full;
#[path = "support/synthetic.rs"]
mod synthetic;

use std::alloc::System;
use std::process::{Command, ExitCode};
use std::time::Instant;

use apiary_seeds::{Extraction, Port, decode_pod_list, extract};
use cap::Cap;
use full::decode_pod_list_full;
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

struct Args {
    pods: usize,
    runs: usize,
    json: bool,
    check: bool,
    measure: Option<(String, String)>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        pods: 10_000,
        runs: 5,
        json: false,
        check: false,
        measure: None,
    };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        let mut value = |name: &str| iter.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--pods" => {
                args.pods = value("--pods")?
                    .parse()
                    .map_err(|e| format!("--pods: {e}"))?
            }
            "--runs" => {
                args.runs = value("--runs")?
                    .parse()
                    .map_err(|e| format!("--runs: {e}"))?
            }
            "--json" => args.json = true,
            "--check" => args.check = true,
            "--measure" => {
                let path = value("--measure")?;
                let input = value("--measure")?;
                args.measure = Some((path, input));
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.runs == 0 {
        return Err("--runs must be at least 1".to_owned());
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("bench_decode: {error}");
            return ExitCode::from(2);
        }
    };
    match &args.measure {
        Some((path, input)) => measure(path, input, args.runs),
        None => compare(&args),
    }
}

/// The resolve being measured: decode the page, then apply the rules.
fn resolve(path: &str, bytes: &[u8], port: &Port) -> Extraction {
    let list = match path {
        "lean" => decode_pod_list(bytes),
        _ => decode_pod_list_full(bytes),
    }
    .expect("the synthetic list decodes");
    extract(&list.items, port)
}

/// Child: measures one path and prints one JSON line.
fn measure(path: &str, input: &str, runs: usize) -> ExitCode {
    let bytes = std::fs::read(input).expect("the input file is readable");
    let port = Port::Name("gossip".to_owned());
    let baseline = ALLOCATOR.allocated();
    let total_before = ALLOCATOR.total_allocated();
    let started = Instant::now();
    let first = resolve(path, &bytes, &port);
    let mut times = vec![started.elapsed().as_secs_f64()];
    let allocated_bytes = ALLOCATOR.total_allocated() - total_before;
    let peak_heap = ALLOCATOR.max_allocated().saturating_sub(baseline);
    for _ in 1..runs {
        let started = Instant::now();
        let again = resolve(path, &bytes, &port);
        times.push(started.elapsed().as_secs_f64());
        assert_eq!(again.addresses, first.addresses);
    }
    times.sort_by(f64::total_cmp);
    let addresses: Vec<String> = first.addresses.iter().map(ToString::to_string).collect();
    let line = json!({
        "path": path,
        "median_seconds": times[times.len() / 2],
        "allocated_bytes": allocated_bytes,
        "peak_heap_bytes": peak_heap,
        "peak_rss_bytes": peak_rss_bytes(),
        "addresses": addresses,
        "matched": first.report.matched,
    });
    println!("{line}");
    ExitCode::SUCCESS
}

/// Linux `VmHWM` (peak resident set) of this process, when readable.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Parent: generates the bytes once, measures both paths in children, compares.
fn compare(args: &Args) -> ExitCode {
    let bytes = synthetic::pod_list_bytes(args.pods);
    let input =
        std::env::temp_dir().join(format!("apiary-seeds-bench-{}.json", std::process::id()));
    std::fs::write(&input, &bytes).expect("the temporary input is writable");
    let exe = std::env::current_exe().expect("the benchmark knows its own path");
    let run = |path: &str| -> Value {
        let output = Command::new(&exe)
            .args([
                "--measure",
                path,
                input.to_str().expect("a UTF-8 temp path"),
                "--runs",
                &args.runs.to_string(),
            ])
            .output()
            .expect("the measuring child runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("the child prints one JSON line")
    };
    let lean = run("lean");
    let full = run("full");
    let _ = std::fs::remove_file(&input);

    let number = |value: &Value, key: &str| value[key].as_f64().unwrap_or(f64::NAN);
    let time_ratio = number(&lean, "median_seconds") / number(&full, "median_seconds");
    let alloc_ratio = number(&lean, "allocated_bytes") / number(&full, "allocated_bytes");
    let identical = lean["addresses"] == full["addresses"] && lean["matched"] == full["matched"];
    let targets_hold = identical && time_ratio <= 1.0 / 3.0 && alloc_ratio <= 0.1;
    let summary = json!({
        "pods": args.pods,
        "input_bytes": bytes.len(),
        "bytes_per_pod": bytes.len() / args.pods.max(1),
        "runs": args.runs,
        "addresses": lean["addresses"].as_array().map_or(0, Vec::len),
        "identical_addresses": identical,
        "lean": strip(&lean),
        "full": strip(&full),
        "time_ratio": time_ratio,
        "allocation_ratio": alloc_ratio,
        "targets_hold": targets_hold,
    });
    if args.json {
        println!("{summary}");
    } else {
        println!(
            "pods: {}  input: {:.1} MB ({} B/pod)  runs: {}",
            args.pods,
            mb(bytes.len() as f64),
            bytes.len() / args.pods.max(1),
            args.runs
        );
        for (name, value) in [("lean", &lean), ("full", &full)] {
            println!(
                "{name:>4}: median {:>8.1} ms  allocated {:>9.1} MB  peak heap {:>8.1} MB  peak RSS {:>8.1} MB",
                number(value, "median_seconds") * 1000.0,
                mb(number(value, "allocated_bytes")),
                mb(number(value, "peak_heap_bytes")),
                mb(number(value, "peak_rss_bytes")),
            );
        }
        println!(
            "lean/full: time {:.3} (target <= 0.333)  allocated {:.4} (target <= 0.100)",
            time_ratio, alloc_ratio
        );
        println!(
            "addresses identical: {identical} ({} addresses)",
            summary["addresses"]
        );
        println!("targets hold: {targets_hold}");
    }
    if args.check && !targets_hold {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn strip(measured: &Value) -> Value {
    let mut measured = measured.clone();
    if let Some(object) = measured.as_object_mut() {
        object.remove("addresses");
    }
    measured
}

fn mb(bytes: f64) -> f64 {
    bytes / 1_000_000.0
}
