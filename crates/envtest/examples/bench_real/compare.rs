//! The comparisons themselves: starts the control plane and the fault proxy, then at each round
//! trip measures a fresh deploy (`apiary deploy` against `kubectl run` + `kubectl wait`, and
//! `--apiary-before`) and seeds over the synthetic pods (gzip, compression off, `curl`, page
//! sizes, full decode, `kubectl get`), the runs of the compared commands interleaved, and hands
//! the medians to the report.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use apiary_envtest::kubelet::{Kubelet, Options as KubeletOptions};
use apiary_envtest::proxy::{FaultProxy, Latency};
use apiary_envtest::{ControlPlane, Identity, Options};

use crate::args::Args;
use crate::fixture::{IMAGE, PORT_NAME, SELECTOR, create_pods};
use crate::meter::{Meter, Sample, clock_ticks_per_second, median};
use crate::report::{AtLatency, SeedsSamples, report};

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

pub fn bench(args: &Args) -> Result<(), String> {
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
