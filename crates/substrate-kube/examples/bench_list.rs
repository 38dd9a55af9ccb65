//! The `apiary list` benchmark of BENCHMARKS.md § list with 1,000 agents: the real driver with
//! the real `Cluster` against the loopback simulator, one namespace holding 1,000 apiary agents
//! (a started pod and a Secret each). It measures `driver::list` (one paginated pod LIST, one
//! paginated Secret LIST) against the baseline a script would run without it, 1,000 ×
//! `driver::status` (a pod GET and a Secret GET per agent), in the same run: requests and time,
//! the median of RUNS runs.
//!
//! Run: `cargo run --release -p apiary-substrate-kube --example bench_list [-- RUNS]`. Prints
//! figures and asserts nothing about time (the request counts are asserted by
//! `cli/tests/cli/list.rs` and `tests/real_server/list.rs`).
//!
//! Layer: benchmark over real HTTP on 127.0.0.1; decides nothing, contacts nothing else.

#[path = "../tests/fixtures/mod.rs"]
mod fixtures;
#[path = "../tests/sim_support/mod.rs"]
mod sim_support;

use std::time::{Duration, Instant};

use apiary_cluster_model::kubelet::PodScript;
use apiary_substrate::build::build_attempt;
use apiary_substrate::config::DeployConfig;
use apiary_substrate::driver::{self, ListOptions};
use apiary_substrate::naming::{AgentIdentity, Generation};
use sim_support::{NS, image, start};

const AGENTS: usize = 1_000;

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let s = start(1000.0, true).await;
    let agents: Vec<AgentIdentity> = (0..AGENTS)
        .map(|i| AgentIdentity::new(&format!("bench agent {i:04}")).expect("agent"))
        .collect();
    s.sim.with_model(|m| {
        for agent in &agents {
            let config = DeployConfig::new(NS, image(""))
                .validate(agent)
                .expect("valid configuration");
            let attempt = build_attempt(&config, Generation::from_u32(1));
            m.insert_secret(attempt.secret).expect("secret");
            m.insert_pod_with_script(
                attempt.pod,
                PodScript::Start {
                    after: Duration::ZERO,
                },
            )
            .expect("pod");
        }
    });
    let cluster = s.cluster().await;
    let (mut list_times, mut status_times) = (Vec::new(), Vec::new());
    let (mut list_requests, mut status_requests) = (0, 0);
    for _ in 0..runs {
        s.sim.clear_requests();
        let began = Instant::now();
        let inventory = driver::list(&cluster, &ListOptions::default())
            .await
            .expect("listed");
        list_times.push(began.elapsed());
        assert_eq!(inventory.rows.len(), AGENTS);
        list_requests = s.sim.requests().len();
        s.sim.clear_requests();
        let began = Instant::now();
        for agent in &agents {
            driver::status(&cluster, agent, None).await.expect("status");
        }
        status_times.push(began.elapsed());
        status_requests = s.sim.requests().len();
    }
    let (list, status) = (median(list_times), median(status_times));
    println!("agents: {AGENTS}, runs: {runs} (median)");
    println!(
        "list: {list_requests} requests, {:.1} ms",
        list.as_secs_f64() * 1e3
    );
    println!(
        "{AGENTS} x status: {status_requests} requests, {:.1} ms",
        status.as_secs_f64() * 1e3
    );
    println!(
        "ratio list / status loop: requests {:.4}, time {:.4}",
        list_requests as f64 / status_requests as f64,
        list.as_secs_f64() / status.as_secs_f64()
    );
}
