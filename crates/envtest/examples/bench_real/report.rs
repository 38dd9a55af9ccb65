//! The results and their report: the medians at each latency ([`AtLatency`]), printed as one
//! JSON document (with notes on the machine) followed by the Markdown tables of BENCHMARKS.md.
//! Writes stdout; measures nothing.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::args::Args;
use crate::meter::Sample;

/// One latency's medians.
pub struct AtLatency {
    pub rtt_ms: u64,
    pub deploy: Option<(Sample, Sample)>,
    /// `--apiary-before`'s deploy, measured in the same runs.
    pub before: Option<Sample>,
    pub seeds: Option<SeedsSamples>,
}

pub struct SeedsSamples {
    pub gzip: Sample,
    pub plain: Sample,
    pub curl: Sample,
    pub pages: Vec<(u32, Sample)>,
    pub full: Option<(Sample, Sample)>,
}

pub fn report(args: &Args, results: &[AtLatency]) {
    let json_of = |at: &AtLatency| {
        json!({
            "rtt_ms": at.rtt_ms,
            "deploy": at.deploy.as_ref().map(|(a, k)| json!({
                "apiary": sample_json(a), "kubectl_run_wait": sample_json(k),
                "apiary_before": at.before.as_ref().map(sample_json),
            })),
            "seeds": at.seeds.as_ref().map(|s| json!({
                "apiary_gzip": sample_json(&s.gzip),
                "apiary_uncompressed": sample_json(&s.plain),
                "curl_compressed_unpaginated": sample_json(&s.curl),
                "page_sizes": s.pages.iter().map(|(size, p)| json!({
                    "page_size": size, "sample": sample_json(p),
                })).collect::<Vec<_>>(),
                "full_decode": s.full.as_ref().map(|(f, _)| sample_json(f)),
                "kubectl_get_json": s.full.as_ref().map(|(_, g)| sample_json(g)),
            })),
        })
    };
    let report = json!({
        "machine": machine_notes(),
        "runs": args.runs,
        "pods": args.pods,
        "latencies": results.iter().map(json_of).collect::<Vec<_>>(),
    });
    println!("{report:#}");
    println!();
    if results.iter().any(|at| at.deploy.is_some()) {
        println!(
            "| fresh deploy, round trip | apiary wall | kubectl run + wait wall | wall ratio | \
             apiary requests | kubectl requests | apiary bytes | kubectl bytes |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for at in results {
            if let Some((a, k)) = &at.deploy {
                println!(
                    "| {} ms | {} | {} | **{}** | {} | {} | {:.1} KB | {:.1} KB |",
                    at.rtt_ms,
                    ms(a.wall),
                    ms(k.wall),
                    ratio(a.wall, k.wall),
                    a.requests,
                    k.requests,
                    a.bytes as f64 / 1e3,
                    k.bytes as f64 / 1e3
                );
            }
            if let (Some(b), Some((_, k))) = (&at.before, &at.deploy) {
                let label = if args.before_args.is_empty() {
                    "`--apiary-before`".to_owned()
                } else {
                    format!("`{}`", args.before_args.join(" "))
                };
                println!(
                    "| {} ms, {label} | {} | {} | {} | {} | {} | {:.1} KB | |",
                    at.rtt_ms,
                    ms(b.wall),
                    ms(k.wall),
                    ratio(b.wall, k.wall),
                    b.requests,
                    k.requests,
                    b.bytes as f64 / 1e3
                );
            }
        }
        println!();
    }
    for at in results {
        let Some(s) = &at.seeds else { continue };
        println!(
            "| {} pods at {} ms round trip | wall | CPU | peak RSS | requests | bytes received |",
            args.pods, at.rtt_ms
        );
        println!("|---|---|---|---|---|---|");
        let mut rows: Vec<(String, &Sample)> = vec![
            ("`apiary seeds` (gzip)".to_owned(), &s.gzip),
            ("`apiary seeds` (compression off)".to_owned(), &s.plain),
            (
                "`curl --compressed`, one unpaginated list".to_owned(),
                &s.curl,
            ),
        ];
        for (size, p) in &s.pages {
            rows.push((format!("seeds_once, pages of {size} (gzip)"), p));
        }
        if let Some((f, g)) = &s.full {
            rows.push(("full `k8s_openapi` decode (kube-rs list)".to_owned(), f));
            rows.push(("`kubectl get pods -o json`".to_owned(), g));
        }
        for (what, p) in rows {
            println!(
                "| {what} | {} | {} | {:.1} MiB | {} | {:.2} MB |",
                ms(p.wall),
                ms(p.cpu),
                p.peak_rss_kib as f64 / 1024.0,
                p.requests,
                p.bytes as f64 / 1e6
            );
        }
        println!(
            "| ratio gzip / compression off | {} | {} | {:.2} | | **{:.3}** |",
            ratio(s.gzip.wall, s.plain.wall),
            ratio(s.gzip.cpu, s.plain.cpu),
            s.gzip.peak_rss_kib as f64 / s.plain.peak_rss_kib.max(1) as f64,
            s.gzip.bytes as f64 / s.plain.bytes.max(1) as f64
        );
        println!(
            "| ratio apiary (gzip) / curl | **{}** | | | | {:.2} |",
            ratio(s.gzip.wall, s.curl.wall),
            s.gzip.bytes as f64 / s.curl.bytes.max(1) as f64
        );
        println!();
    }
}

fn sample_json(s: &Sample) -> Value {
    json!({
        "wall_ms": s.wall.as_secs_f64() * 1000.0,
        "cpu_ms": s.cpu.as_secs_f64() * 1000.0,
        "peak_rss_kib": s.peak_rss_kib,
        "requests": s.requests,
        "bytes_from_upstream": s.bytes,
    })
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.2}", a.as_secs_f64() / b.as_secs_f64().max(1e-9))
}

fn machine_notes() -> Value {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown", |(_, m)| m.trim())
        .to_owned();
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let memory = read("/proc/meminfo")
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    let output = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    json!({
        "date": output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        "cpu": model,
        "cpus": cpus,
        "memory": memory,
        "kernel": output("uname", &["-r"]),
        "kubectl": output("kubectl", &["version", "--client", "-o", "json"])
            .parse::<Value>()
            .ok()
            .and_then(|v| v["clientVersion"]["gitVersion"].as_str().map(str::to_owned)),
    })
}
