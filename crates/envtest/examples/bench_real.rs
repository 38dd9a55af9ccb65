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

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use apiary_envtest::kubelet::{Kubelet, Options as KubeletOptions};
use apiary_envtest::proxy::{FaultProxy, Latency};
use apiary_envtest::{ControlPlane, Identity, Options};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

/// The image both deploy paths run (pinned by digest, as `apiary deploy` requires).
const IMAGE: &str = "registry.example/agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The synthetic pods' selector and named port.
const SELECTOR: &str = "app=ring-node";
const PORT_NAME: &str = "gossip";

/// The page size of apiary's list mode (`SeedsOptions::default`) and of the full-decode baseline.
const PAGE_SIZE: u32 = 500;

/// How many pod creates (and status writes) are in flight while the fixture is built.
const CREATE_CONCURRENCY: usize = 32;

struct Args {
    apiary: PathBuf,
    /// An older `apiary` binary whose deploy is measured in the same runs (before/after).
    apiary_before: Option<PathBuf>,
    /// Extra deploy flags for the `--apiary-before` runs (`--before-args "--isolate …"`), so the
    /// same binary with and without options is compared in one run.
    before_args: Vec<String>,
    seeds_once: PathBuf,
    runs: usize,
    pods: usize,
    /// Round trips (ms) the proxy adds, half each way.
    latencies: Vec<u64>,
    /// Page sizes measured through `seeds_once` (empty: none).
    page_sizes: Vec<u32>,
    /// Also the full-decode and `kubectl get` baselines (at the first latency only: slow).
    full: bool,
    /// Whether the deploy comparison runs.
    deploy: bool,
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

fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
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

/// What one measured child process cost.
#[derive(Clone, Copy, Debug)]
struct Sample {
    wall: Duration,
    cpu: Duration,
    peak_rss_kib: u64,
    requests: u64,
    bytes: u64,
}

/// This process's reaped children's user + system time, in clock ticks.
fn children_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the command name: field 3 (state) is index 0, so cutime (16) and cstime (17) are
    // indexes 13 and 14.
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(13) + field(14)
}

fn clock_ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

struct Meter {
    ticks_per_second: u64,
}

impl Meter {
    /// Runs one command to completion, measuring it; fails when it exits non-zero.
    fn run(&self, proxy: &FaultProxy, command: &mut Command) -> Result<Sample, String> {
        let counts = proxy.counts();
        let ticks = children_ticks();
        let start = Instant::now();
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let pid = child.id();
        let mut peak = 0;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break status;
            }
            peak = peak.max(vm_hwm_kib(pid).unwrap_or(0));
            std::thread::sleep(Duration::from_millis(2));
        };
        let wall = start.elapsed();
        let cpu_ticks = children_ticks().saturating_sub(ticks);
        if !status.success() {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _unread = std::io::Read::read_to_string(&mut pipe, &mut stderr);
            }
            return Err(format!("{command:?} failed ({status}): {stderr}"));
        }
        let after = proxy.counts();
        Ok(Sample {
            wall,
            cpu: Duration::from_millis(cpu_ticks * 1000 / self.ticks_per_second),
            peak_rss_kib: peak,
            requests: after.requests - counts.requests,
            bytes: after.bytes_from_upstream - counts.bytes_from_upstream,
        })
    }

    /// Runs several commands in sequence as one measured step (their costs add up).
    fn run_all(&self, proxy: &FaultProxy, commands: &mut [Command]) -> Result<Sample, String> {
        let mut total = Sample {
            wall: Duration::ZERO,
            cpu: Duration::ZERO,
            peak_rss_kib: 0,
            requests: 0,
            bytes: 0,
        };
        for command in commands {
            let one = self.run(proxy, command)?;
            total.wall += one.wall;
            total.cpu += one.cpu;
            total.peak_rss_kib = total.peak_rss_kib.max(one.peak_rss_kib);
            total.requests += one.requests;
            total.bytes += one.bytes;
        }
        Ok(total)
    }
}

/// The median of each field over the samples (each field on its own).
fn median(samples: &[Sample]) -> Sample {
    fn mid<T: Ord + Copy>(mut values: Vec<T>) -> T {
        values.sort_unstable();
        values[values.len() / 2]
    }
    Sample {
        wall: mid(samples.iter().map(|s| s.wall).collect()),
        cpu: mid(samples.iter().map(|s| s.cpu).collect()),
        peak_rss_kib: mid(samples.iter().map(|s| s.peak_rss_kib).collect()),
        requests: mid(samples.iter().map(|s| s.requests).collect()),
        bytes: mid(samples.iter().map(|s| s.bytes).collect()),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.2}", a.as_secs_f64() / b.as_secs_f64().max(1e-9))
}

/// `--full-list KUBECONFIG NAMESPACE`: the baseline child. Lists the synthetic pods page by page
/// with kube-rs into full `k8s_openapi` `Pod`s (every field decoded) and counts the addressed ones.
fn full_list(kubeconfig: &str, namespace: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let kubeconfig = Kubeconfig::read_from(kubeconfig).map_err(|e| e.to_string())?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| e.to_string())?;
        let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
        let pods: Api<Pod> = Api::namespaced(client, namespace);
        let mut params = ListParams::default().labels(SELECTOR).limit(PAGE_SIZE);
        let mut addressed = 0usize;
        loop {
            let page = pods.list(&params).await.map_err(|e| e.to_string())?;
            addressed += page
                .items
                .iter()
                .filter(|p| p.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_some())
                .count();
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
        println!("{addressed}");
        Ok(())
    })
}

/// Creates `count` synthetic pods in `namespace` as the admin and writes each one's status.
async fn create_pods(client: &kube::Client, namespace: &str, count: usize) -> Result<(), String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    futures::stream::iter(0..count)
        .map(|index| {
            let pods = pods.clone();
            async move {
                let mut body = synthetic::pod(index);
                let status = body["status"].take();
                let meta = body["metadata"].as_object_mut().ok_or("metadata")?;
                for server_owned in [
                    "uid",
                    "resourceVersion",
                    "creationTimestamp",
                    "managedFields",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generateName",
                    "ownerReferences",
                ] {
                    meta.remove(server_owned);
                }
                meta.insert("namespace".to_owned(), json!(namespace));
                let name = meta["name"].as_str().ok_or("name")?.to_owned();
                let pod: Pod = serde_json::from_value(body).map_err(|e| e.to_string())?;
                pods.create(&PostParams::default(), &pod)
                    .await
                    .map_err(|e| format!("create {name}: {e}"))?;
                let patch = Patch::Merge(json!({"status": status}));
                pods.patch_status(&name, &PatchParams::default(), &patch)
                    .await
                    .map_err(|e| format!("status of {name}: {e}"))?;
                Ok::<(), String>(())
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<()>()
        .await
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

/// The latency knob for a round trip of `rtt_ms`: half before the request is forwarded, half
/// before the response head returns.
fn round_trip(rtt_ms: u64) -> Latency {
    Latency::symmetric(Duration::from_micros(rtt_ms * 500))
}

/// The same kubeconfig with kube's compression turned off (`disable-compression: true` on the
/// cluster), so the benchmark compares compressed and uncompressed lists in one run.
fn uncompressed_kubeconfig(yaml: &str) -> String {
    yaml.replacen(
        "    server: ",
        "    disable-compression: true\n    server: ",
        1,
    )
}

/// One latency's medians.
struct AtLatency {
    rtt_ms: u64,
    deploy: Option<(Sample, Sample)>,
    /// `--apiary-before`'s deploy, measured in the same runs.
    before: Option<Sample>,
    seeds: Option<SeedsSamples>,
}

struct SeedsSamples {
    gzip: Sample,
    plain: Sample,
    curl: Sample,
    pages: Vec<(u32, Sample)>,
    full: Option<(Sample, Sample)>,
}

fn bench(args: &Args) -> Result<(), String> {
    if !args.apiary.is_file() {
        return Err(format!(
            "{} is not built: run `cargo build --release -p apiary` first (or pass --apiary)",
            args.apiary.display()
        ));
    }
    if !args.page_sizes.is_empty() && !args.seeds_once.is_file() {
        return Err(format!(
            "{} is not built: run `cargo build --release -p apiary-substrate-kube --example \
             seeds_once` first (or pass --seeds-once, or --pages '')",
            args.seeds_once.display()
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let plane = ControlPlane::start(Options::default()).map_err(|e| e.to_string())?;
    eprintln!("control plane ready in {:?}", plane.started_in());
    let proxy = runtime
        .block_on(FaultProxy::start(
            &plane.server_url(),
            plane.ca_pem(),
            plane.token(Identity::Admin),
        ))
        .map_err(|e| e.to_string())?;
    let meter = Meter {
        ticks_per_second: clock_ticks_per_second(),
    };
    let deploy_ns = plane.namespace("bench-deploy");
    let seeds_ns = plane.namespace("bench-seeds");
    let dir = plane.dir().to_owned();
    let deploy_kubeconfig = dir.join("bench-deploy.kubeconfig");
    let seeds_kubeconfig = dir.join("bench-seeds.kubeconfig");
    let plain_kubeconfig = dir.join("bench-seeds-plain.kubeconfig");
    let write = |path: &Path, yaml: String| std::fs::write(path, yaml).map_err(|e| e.to_string());
    write(&deploy_kubeconfig, proxy.kubeconfig_yaml(deploy_ns.name()))?;
    write(&seeds_kubeconfig, proxy.kubeconfig_yaml(seeds_ns.name()))?;
    write(
        &plain_kubeconfig,
        uncompressed_kubeconfig(&proxy.kubeconfig_yaml(seeds_ns.name())),
    )?;
    let kubectl_cache = dir.join("kubectl-cache");
    let kubectl = |kubeconfig: &Path| {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(&kubectl_cache);
        command
    };
    let apiary = |kubeconfig: &Path| {
        let mut command = Command::new(&args.apiary);
        command.arg("--kubeconfig").arg(kubeconfig);
        command
    };
    let apiary_seeds = |kubeconfig: &Path| {
        let mut c = apiary(kubeconfig);
        c.args(["seeds", "--selector", SELECTOR, "--port-name", PORT_NAME]);
        c
    };
    let mut results: Vec<AtLatency> = args
        .latencies
        .iter()
        .map(|&rtt_ms| AtLatency {
            rtt_ms,
            deploy: None,
            before: None,
            seeds: None,
        })
        .collect();

    // 1. A fresh deploy, apiary against kubectl run + kubectl wait, at each latency.
    if args.deploy {
        let kubelet = Kubelet::start(
            plane.config(Identity::Admin),
            KubeletOptions::in_namespace(deploy_ns.name()),
        )
        .map_err(|e| e.to_string())?;
        // A warm discovery cache, as a user who has used kubectl before has (not measured).
        meter.run(&proxy, kubectl(&deploy_kubeconfig).args(["get", "pods"]))?;
        for at in &mut results {
            proxy.set_latency(round_trip(at.rtt_ms));
            let (mut ours, mut theirs, mut before) = (Vec::new(), Vec::new(), Vec::new());
            for run in 0..args.runs {
                if let Some(old) = &args.apiary_before {
                    let agent = format!("before-{}-{run}", at.rtt_ms);
                    before.push(
                        meter.run(
                            &proxy,
                            Command::new(old)
                                .arg("--kubeconfig")
                                .arg(&deploy_kubeconfig)
                                .args(["deploy", &agent, "--image", IMAGE])
                                .args(&args.before_args),
                        )?,
                    );
                }
                let agent = format!("bench-{}-{run}", at.rtt_ms);
                ours.push(meter.run(
                    &proxy,
                    apiary(&deploy_kubeconfig).args(["deploy", &agent, "--image", IMAGE]),
                )?);
                let name = format!("kubectl-{}-{run}", at.rtt_ms);
                let image = format!("--image={IMAGE}");
                let pod = format!("pod/{name}");
                theirs.push(meter.run_all(
                    &proxy,
                    &mut [
                        {
                            let mut c = kubectl(&deploy_kubeconfig);
                            c.args(["run", &name, &image, "--restart=Never"]);
                            c
                        },
                        {
                            let mut c = kubectl(&deploy_kubeconfig);
                            c.args(["wait", "--for=condition=Ready", &pod, "--timeout=120s"]);
                            c
                        },
                    ],
                )?);
                eprintln!(
                    "deploy {} ms run {run}: apiary {:?}\n    kubectl {:?}",
                    at.rtt_ms, ours[run], theirs[run]
                );
            }
            at.deploy = Some((median(&ours), median(&theirs)));
            at.before = (!before.is_empty()).then(|| median(&before));
        }
        proxy.set_latency(Latency::default());
        drop(kubelet);
    }

    // 2. Seeds over the synthetic pods, at each latency.
    if args.pods > 0 {
        eprintln!("creating {} pods …", args.pods);
        let created = Instant::now();
        let admin = runtime.block_on(async { plane.client(Identity::Admin) });
        runtime.block_on(create_pods(&admin, seeds_ns.name(), args.pods))?;
        eprintln!("created in {:?}", created.elapsed());
        let this = std::env::current_exe().map_err(|e| e.to_string())?;
        let list_url = format!(
            "{}/api/v1/namespaces/{}/pods?labelSelector={}",
            proxy.url(),
            seeds_ns.name(),
            SELECTOR.replace('=', "%3D")
        );
        for (index, at) in results.iter_mut().enumerate() {
            proxy.set_latency(round_trip(at.rtt_ms));
            let (mut gzip, mut plain, mut curl) = (Vec::new(), Vec::new(), Vec::new());
            let mut pages: Vec<Vec<Sample>> = vec![Vec::new(); args.page_sizes.len()];
            let (mut full, mut get) = (Vec::new(), Vec::new());
            for run in 0..args.runs {
                gzip.push(meter.run(&proxy, &mut apiary_seeds(&seeds_kubeconfig))?);
                plain.push(meter.run(&proxy, &mut apiary_seeds(&plain_kubeconfig))?);
                curl.push(
                    meter.run(
                        &proxy,
                        Command::new("curl")
                            .args(["-sS", "--fail", "--compressed", "-o", "/dev/null"])
                            .arg(&list_url),
                    )?,
                );
                for (size, samples) in args.page_sizes.iter().zip(&mut pages) {
                    samples.push(meter.run(
                        &proxy,
                        Command::new(&args.seeds_once).arg(&seeds_kubeconfig).args([
                            SELECTOR,
                            PORT_NAME,
                            &size.to_string(),
                        ]),
                    )?);
                }
                if args.full && index == 0 {
                    full.push(
                        meter.run(
                            &proxy,
                            Command::new(&this)
                                .arg("--full-list")
                                .arg(&seeds_kubeconfig)
                                .arg(seeds_ns.name()),
                        )?,
                    );
                    get.push(
                        meter.run(
                            &proxy,
                            kubectl(&seeds_kubeconfig)
                                .args(["get", "pods", "-l", SELECTOR, "-o", "json"]),
                        )?,
                    );
                }
                eprintln!(
                    "seeds {} ms run {run}: apiary gzip {:?}\n    plain {:?}\n    curl {:?}",
                    at.rtt_ms, gzip[run], plain[run], curl[run]
                );
            }
            at.seeds = Some(SeedsSamples {
                gzip: median(&gzip),
                plain: median(&plain),
                curl: median(&curl),
                pages: args
                    .page_sizes
                    .iter()
                    .zip(&pages)
                    .map(|(size, s)| (*size, median(s)))
                    .collect(),
                full: (!full.is_empty()).then(|| (median(&full), median(&get))),
            });
        }
        proxy.set_latency(Latency::default());
    }

    report(args, &results);
    drop(proxy);
    drop(runtime);
    Ok(())
}

fn report(args: &Args, results: &[AtLatency]) {
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
