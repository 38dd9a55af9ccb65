//! The real driver (`apiary_substrate::driver`) with `Cluster` against the loopback apiserver
//! simulator: fresh deploy, no-op, 16 concurrent deploys of one agent, a deploy under injected
//! faults, and startup detection by watching versus polling (issue "substrate-kube: the real
//! Substrate", integration tests). Real HTTP on 127.0.0.1; never contacts a real cluster.

use std::time::{Duration, Instant};

use apiary_apiserver_sim::{
    FaultAction, FaultRule, Matcher, Resource, SimOptions, Simulator, Verb,
};
use apiary_cluster_model::kubelet::PodScript;
use apiary_substrate::Substrate;
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::driver::{DeployOptions, deploy};
use apiary_substrate::naming::AgentIdentity;
use apiary_substrate_kube::Cluster;
use apiary_substrate_kube::{ClientOptions, ConfigSource, connect_with};

const NS: &str = "agents";
const IMAGE: &str = "registry.example.com/team/agent@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

struct Harness {
    sim: Simulator,
    kubeconfig: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

async fn harness(start_delay: Duration) -> Harness {
    apiary_substrate_kube::install_crypto_provider();
    let sim = Simulator::start(SimOptions::default())
        .await
        .expect("simulator starts");
    sim.with_model(|m| m.set_start_delay(start_delay));
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig, NS).expect("kubeconfig");
    Harness {
        sim,
        kubeconfig,
        _dir: dir,
    }
}

impl Harness {
    /// A fresh `Cluster` (its own client and operation clock), as one CLI process would have.
    async fn cluster(&self) -> Cluster {
        let connection = connect_with(
            &ClientOptions::default(),
            ConfigSource::Kubeconfig {
                paths: vec![self.kubeconfig.clone()],
            },
        )
        .await
        .expect("client built");
        Cluster::new(connection.client, NS)
    }
}

fn agent() -> AgentIdentity {
    AgentIdentity::new("sim bot").expect("valid agent")
}

fn config() -> ValidConfig {
    DeployConfig::new(NS, IMAGE)
        .validate(&agent())
        .expect("valid configuration")
}

fn options(config: &ValidConfig) -> DeployOptions {
    DeployOptions {
        deadline: Duration::from_secs(60),
        ..DeployOptions::for_config(config)
    }
}

/// Count of the agent's pods and Secrets, by a quorum list through `cluster`.
async fn census(cluster: &Cluster) -> (usize, usize) {
    let selector = agent().selector();
    let pods = cluster.list_pods(&selector).await.expect("pods listed");
    let secrets = cluster
        .list_secrets(&selector)
        .await
        .expect("secrets listed");
    (pods.items.len(), secrets.len())
}

/// Fresh deploy: the namespace is created, exactly one pod and one Secret exist, and the
/// returned name is the pod's. Also reports the request count of a fresh deploy.
#[tokio::test]
async fn fresh_deploy_then_no_op() {
    let h = harness(Duration::from_millis(300)).await;
    let config = config();
    let cluster = h.cluster().await;
    let deployed = deploy(&cluster, &config, &options(&config))
        .await
        .expect("deployed");
    assert_eq!(deployed.pod, config.pod_name());
    assert!(deployed.intent_matches);
    let fresh_requests = h.sim.requests().len();
    eprintln!("fresh deploy against the simulator: {fresh_requests} requests");
    assert_eq!(census(&cluster).await, (1, 1));

    // No-op: a started pod means zero mutation (no create, no delete).
    h.sim.clear_requests();
    let again = h.cluster().await;
    let second = deploy(&again, &config, &options(&config))
        .await
        .expect("no-op");
    assert_eq!(second.pod, deployed.pod);
    let writes: Vec<_> = h
        .sim
        .requests()
        .into_iter()
        .filter(|r| {
            (r.method == "POST" || r.method == "DELETE") && !r.path.ends_with("/namespaces")
        })
        .collect();
    assert!(writes.is_empty(), "no-op wrote: {writes:#?}");
}

/// 16 concurrent deploys of the same agent: exactly one pod, all 16 return its name, and after
/// the next deploy at most one Secret remains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_concurrent_deploys_one_pod() {
    let h = harness(Duration::from_millis(500)).await;
    h.sim.ensure_namespace(NS);
    let config = config();
    let mut clusters = Vec::new();
    for _ in 0..16 {
        clusters.push(h.cluster().await);
    }
    let runs = clusters.iter().map(|cluster| {
        let config = config.clone();
        async move { deploy(cluster, &config, &options(&config)).await }
    });
    let results = futures::future::join_all(runs).await;
    for result in &results {
        let deployed = result.as_ref().expect("every deploy returns the pod");
        assert_eq!(deployed.pod, config.pod_name());
    }
    let cluster = h.cluster().await;
    let (pods, _) = census(&cluster).await;
    assert_eq!(pods, 1);
    deploy(&cluster, &config, &options(&config))
        .await
        .expect("next deploy");
    let (pods, secrets) = census(&cluster).await;
    assert_eq!(pods, 1);
    assert!(secrets <= 1, "{secrets} Secrets remain");
    let creates = h
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pods") && r.status == Some(201))
        .count();
    assert_eq!(creates, 1, "exactly one pod create succeeded");
}

/// A fresh deploy with a fifth of all requests failing (503, 429, dropped connections) reaches
/// the same outcome: one started pod, one Secret.
#[tokio::test]
async fn fresh_deploy_under_faults() {
    let h = harness(Duration::from_millis(300)).await;
    for action in [
        FaultAction::ServiceUnavailable,
        FaultAction::TooManyRequests {
            retry_after_seconds: 0,
        },
        FaultAction::DropConnection,
    ] {
        h.sim
            .faults()
            .add(FaultRule::fraction(0.07, Matcher::any(), action));
    }
    let config = config();
    let cluster = h.cluster().await;
    let deployed = deploy(&cluster, &config, &options(&config))
        .await
        .expect("deployed despite faults");
    assert_eq!(deployed.pod, config.pod_name());
    assert!(h.sim.faults().injected() > 0, "faults were injected");
    h.sim.faults().clear();
    assert_eq!(census(&cluster).await, (1, 1));
}

/// The real time from the simulated container start to `deploy` returning, with the pod watch
/// and with polling only (watch denied). The kubelet is played by hand so the start instant is
/// known exactly.
async fn start_to_return(deny_watch: bool) -> Duration {
    let h = harness(Duration::from_secs(3600)).await;
    let config = config();
    let pod_name = config.pod_name();
    h.sim
        .with_model(|m| m.script_pods_named(NS, &pod_name, PodScript::Inert));
    if deny_watch {
        h.sim.faults().deny(Verb::Watch, Some(Resource::Pods));
    }
    let cluster = h.cluster().await;
    let kubelet = async {
        // Start the container once the pod exists and the deploy is waiting on it.
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if cluster.get_pod(&pod_name).await.ok().flatten().is_some() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(2700)).await;
        h.sim
            .with_model(|m| m.start_pod(NS, &pod_name).map(|_| ()))
            .expect("started");
        Instant::now()
    };
    let options = options(&config);
    let (deployed, started) = tokio::join!(deploy(&cluster, &config, &options), kubelet);
    let returned = Instant::now();
    assert_eq!(deployed.expect("deployed").pod, pod_name);
    returned.saturating_duration_since(started)
}

/// Watching detects the start within 1 s (target 100 ms); polling only takes up to the 2 s poll.
#[tokio::test]
async fn watching_detects_start_faster_than_polling() {
    let started = Instant::now();
    let watching = start_to_return(false).await;
    let polling = start_to_return(true).await;
    eprintln!(
        "container start to deploy return: watching {watching:?}, polling only {polling:?} \
         (whole test {:?})",
        started.elapsed()
    );
    assert!(watching < Duration::from_secs(1), "watching: {watching:?}");
    assert!(polling < Duration::from_secs(3), "polling: {polling:?}");
}
