//! Shared fixtures of the simulator suites (`sim_*` in the `cluster` test binary, and the benchmark
//! examples): a loopback apiserver simulator with a kubeconfig written for it, `Cluster`s built
//! from that kubeconfig through the real client construction (so every request is real HTTP through
//! `kube::Client`), the agent and configurations under test, and readers of the simulator's request
//! log.
//!
//! Layer: test-only harness. It decides nothing about deploys; it only sets the stage (faults,
//! scripts, objects inserted through the model) and reads what happened. It must never contact
//! anything but 127.0.0.1.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the shared fixtures"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apiary_apiserver_sim::{LoggedRequest, Resource, SimOptions, Simulator, Verb};
use apiary_cluster_model::kubelet::PodScript;
use apiary_substrate::build::build_attempt;
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::driver::DeployOptions;
use apiary_substrate::naming::Generation;
use apiary_substrate_kube::Cluster;
use apiary_substrate_kube::{ClientOptions, ConfigSource, connect_with};
use k8s_openapi::api::core::v1::{Pod, Secret};
use tokio::task::JoinHandle;

// The shared fixtures, declared once by the including crate (`#[path = "…/fixtures/mod.rs"]`).
use crate::fixtures;
#[allow(
    unused_imports,
    reason = "each test binary uses a different subset of the shared fixtures"
)]
pub use fixtures::{POD, after_preflight, agent, delete_fence, image, secret_ref};

/// The namespace of every scenario.
pub const NS: &str = "agents";
/// Model seconds per real second in most scenarios: a 60 s grace period passes in 60 ms and the
/// kubelet's 1 s start delay in 1 ms.
pub const FAST: f64 = 1000.0;

/// Whether a scenario runs on a healthy apiserver or one that fails a fraction of requests
/// transiently (every scenario runs both ways and must reach the same outcome).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weather {
    /// Every request answered normally.
    Calm,
    /// A fraction of requests answered 500, 503, 429 (with `Retry-After`) or dropped.
    Stormy,
}

/// A running simulator with a kubeconfig pointing at it.
pub struct Sim {
    /// The simulator.
    pub sim: Simulator,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

/// Start a simulator at `time_scale`, with namespace [`NS`] present when `with_namespace`.
pub async fn start(time_scale: f64, with_namespace: bool) -> Sim {
    start_with(
        SimOptions::default().with_time_scale(time_scale),
        with_namespace,
    )
    .await
}

/// Start a simulator with `options`.
pub async fn start_with(options: SimOptions, with_namespace: bool) -> Sim {
    apiary_substrate_kube::install_crypto_provider();
    let sim = Simulator::start(options).await.expect("simulator starts");
    if with_namespace {
        sim.ensure_namespace(NS);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig, NS)
        .expect("kubeconfig written");
    Sim {
        sim,
        kubeconfig,
        _dir: dir,
    }
}

impl Sim {
    /// A fresh `Cluster` (its own `kube::Client`) built from the simulator's kubeconfig.
    pub async fn cluster(&self) -> Cluster {
        let connection = connect_with(
            &ClientOptions::default(),
            ConfigSource::Kubeconfig {
                paths: vec![self.kubeconfig.clone()],
            },
        )
        .await
        .expect("client built from the simulator's kubeconfig");
        assert_eq!(connection.namespace.as_deref(), Some(NS));
        Cluster::new(connection.client, NS)
    }

    /// Inject transient faults into a fraction of all requests when `weather` is stormy:
    /// 500, 503, dropped connections and 429 with `Retry-After: 1`.
    pub fn set_weather(&self, weather: Weather) {
        if weather == Weather::Calm {
            return;
        }
        fixtures::transient_weather(self.sim.faults(), 0.06);
    }

    /// Every request that reached the model (not answered by an injected fault).
    pub fn served(&self) -> Vec<LoggedRequest> {
        self.sim
            .requests()
            .into_iter()
            .filter(|r| !r.faulted)
            .collect()
    }

    /// Served requests that could change state (POST, PUT, PATCH, DELETE).
    pub fn mutations(&self) -> Vec<LoggedRequest> {
        self.served()
            .into_iter()
            .filter(LoggedRequest::is_mutation)
            .collect()
    }

    /// Requests of `verb` on `resource` answered with a 2xx (only the model answers 2xx; an
    /// injected delay still lets the model answer).
    pub fn succeeded(&self, verb: Verb, resource: Resource) -> Vec<LoggedRequest> {
        self.of(verb, resource)
            .into_iter()
            .filter(|r| r.status.is_some_and(|s| (200..300).contains(&s)))
            .collect()
    }

    /// Every request of `verb` on `resource` (faulted ones included), in arrival order.
    pub fn of(&self, verb: Verb, resource: Resource) -> Vec<LoggedRequest> {
        self.sim
            .requests()
            .into_iter()
            .filter(|r| r.is(verb, resource))
            .collect()
    }

    /// Names of the pods in [`NS`] now.
    pub fn pod_names(&self) -> Vec<String> {
        self.sim.with_model(|m| {
            m.list_pods(Some(NS), &Default::default())
                .expect("list")
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect()
        })
    }

    /// Names of the Secrets in [`NS`] now.
    pub fn secret_names(&self) -> Vec<String> {
        self.sim.with_model(|m| {
            m.list_secrets(Some(NS), &Default::default())
                .expect("list")
                .items
                .into_iter()
                .filter_map(|s| s.metadata.name)
                .collect()
        })
    }

    /// The pod [`POD`] as the model holds it now.
    pub fn pod(&self) -> Option<Pod> {
        self.sim.with_model(|m| m.get_pod(NS, POD).ok())
    }

    /// Wait (real time, bounded) until `check` holds on the model.
    pub async fn until(&self, what: &str, check: impl Fn(&Sim) -> bool) {
        let started = std::time::Instant::now();
        while !check(self) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// The default configuration for `image`, edited by `edit`.
pub fn config_with(image: &str, edit: impl FnOnce(&mut DeployConfig)) -> ValidConfig {
    let mut config = DeployConfig::new(NS, image);
    edit(&mut config);
    config.validate(&agent()).expect("valid configuration")
}

/// The default configuration for `image`.
pub fn config(image: &str) -> ValidConfig {
    config_with(image, |_| {})
}

/// Deploy options with a short `deadline` and `poll`, preflight GC on.
pub fn options(deadline: Duration, poll: Duration) -> DeployOptions {
    DeployOptions {
        deadline,
        poll,
        replace: false,
        min_running: Duration::ZERO,
    }
}

/// The pod and Secret of the attempt with `generation` of `config`, built by the real builder,
/// namespaced for direct insertion into the model.
pub fn attempt(config: &ValidConfig, generation: u32) -> (Pod, Secret) {
    let mut attempt = build_attempt(config, Generation::from_u32(generation));
    attempt.pod.metadata.namespace = Some(NS.to_owned());
    attempt.secret.metadata.namespace = Some(NS.to_owned());
    (attempt.pod, attempt.secret)
}

/// Starts the container of [`POD`] (scripted inert from now on) right after the driver's first
/// successful read of it or its first watch of it, i.e. once a deploy is waiting on the created
/// pod (the wait after a create watches from the create's answer, with no read first). The task
/// answers how many requests were logged at the start, and when it was.
pub fn start_after_first_reread(s: &Arc<Sim>) -> JoinHandle<(usize, Instant)> {
    s.sim
        .with_model(|m| m.script_pods_named(NS, POD, PodScript::Inert));
    let s = Arc::clone(s);
    tokio::spawn(async move {
        s.until("the driver re-read or watched the created pod", |s| {
            s.sim.requests().iter().any(|r| {
                (r.is(Verb::Get, Resource::Pods) && r.status == Some(200))
                    || r.is(Verb::Watch, Resource::Pods)
            })
        })
        .await;
        let logged = s.sim.requests().len();
        s.sim
            .with_model(|m| m.start_pod(NS, POD).map(|_| ()))
            .expect("started");
        (logged, Instant::now())
    })
}
