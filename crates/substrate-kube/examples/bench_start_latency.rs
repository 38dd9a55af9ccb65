//! The startup-detection benchmark of BENCHMARKS.md § Deploy: startup detection latency: the real
//! driver with the real `Cluster` against the loopback simulator at real-time speed, measuring
//! the time from the simulated container start to `deploy` returning, with the pod watch and
//! with polling only (the `watch` verb denied with 403, the default 2 s poll, the start landing
//! just after a re-read: polling's worst case), and the requests a fresh deploy makes.
//!
//! Run: `cargo run -p apiary-substrate-kube --example bench_start_latency [-- RUNS]`.
//! Prints figures and asserts nothing about time: the tests (`tests/cluster/sim_latency.rs`)
//! assert the order of requests instead.
//!
//! Layer: benchmark over real HTTP on 127.0.0.1; decides nothing, contacts nothing else.

#[path = "../tests/fixtures/mod.rs"]
mod fixtures;
#[path = "../tests/sim_support/mod.rs"]
mod sim_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use apiary_apiserver_sim::{Resource, Verb};
use apiary_substrate::driver::{self, DEFAULT_POLL};
use sim_support::{config, image, options, start, start_after_first_reread};

/// One fresh deploy with the default poll; the container is started by hand right after the
/// driver's first successful re-read of the created pod. Returns (start to return, requests).
async fn measure(watch: bool) -> (Duration, usize) {
    let s = start(1.0, true).await;
    if !watch {
        s.sim.faults().deny(Verb::Watch, Some(Resource::Pods));
    }
    let s = Arc::new(s);
    let cluster = s.cluster().await;
    let kubelet = start_after_first_reread(&s);
    driver::deploy(
        &cluster,
        &config(&image("")),
        &options(Duration::from_secs(30), DEFAULT_POLL),
    )
    .await
    .expect("deployed");
    let returned = Instant::now();
    let (_, started) = kubelet.await.expect("kubelet");
    (
        returned.saturating_duration_since(started),
        s.sim.requests().len(),
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    for (name, watch) in [("watching", true), ("polling only (watch denied)", false)] {
        let mut figures = Vec::new();
        for _ in 0..runs {
            figures.push(measure(watch).await);
        }
        let millis: Vec<String> = figures
            .iter()
            .map(|(d, _)| format!("{}", d.as_millis()))
            .collect();
        let requests: Vec<String> = figures.iter().map(|(_, n)| n.to_string()).collect();
        println!(
            "{name}: container start -> deploy returned, ms: {}; requests: {}",
            millis.join(", "),
            requests.join(", ")
        );
    }
}
