//! Deploy, undeploy and seeds against the real `kube-apiserver` through the envtest fault proxy
//! (the real-server tier's faults, README.md § Testing): with 500s, 503s, 429 + `Retry-After` and
//! connection resets injected on chosen requests they still converge, and faulted requests never
//! reach the server. And the fault no model gives: the apiserver killed in the middle of a deploy
//! and started again on the same port and etcd data; the deploy finishes inside its deadline or
//! fails with a clear message, and after the next deploy's GC nothing of that attempt is left.
//!
//! Layer: integration tests of the real `Cluster`/`PodSeeds` over real HTTP on 127.0.0.1 (the
//! `apiary-envtest` control plane, its fake kubelet and its proxy). They decide nothing. Skipped,
//! with one line naming `setup-envtest`, when `KUBEBUILDER_ASSETS` is unset. No timed assertions:
//! waits are bounded only so a broken run fails instead of hanging.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use apiary_apiserver_sim::{FaultAction, FaultRule, Faults, Matcher, Resource, Verb};
use apiary_envtest::kubelet::{self, Kubelet};
use apiary_envtest::proxy::{FaultProxy, ProxiedRequest};
use apiary_envtest::{ControlPlane, Identity};
use apiary_seeds::{Pods, Port};
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::driver::{self, DeployOptions, UndeployOptions};
use apiary_substrate_kube::{ClientOptions, Cluster, PodSeeds, SeedsMode, SeedsOptions, connect};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, ListParams, PostParams};

use crate::real_support::fixtures::{agent, image, secret_ref, transient_weather};

/// Model seconds per real second for the fake kubelet: the pod's 60 s grace period takes 60 ms.
const KUBELET_SCALE: f64 = 1000.0;
fn config(namespace: &str) -> ValidConfig {
    DeployConfig::new(namespace, image(""))
        .validate(&agent())
        .expect("a valid configuration")
}

fn deploy_options(deadline: Duration) -> DeployOptions {
    DeployOptions {
        deadline,
        poll: Duration::from_millis(200),
        replace: false,
        min_running: Duration::ZERO,
    }
}

/// A namespace of the control plane, a fake kubelet for it, the fault proxy in front of the
/// apiserver and a kubeconfig for the proxy.
struct Stage<'p> {
    plane: &'p ControlPlane,
    ns: String,
    proxy: FaultProxy,
    kubeconfig: PathBuf,
    _kubelet: Kubelet,
    _logs: apiary_envtest::LogGuard,
    _dir: tempfile::TempDir,
}

async fn stage<'p>(plane: &'p ControlPlane, prefix: &str) -> Stage<'p> {
    stage_with(plane, prefix, KUBELET_START).await
}

/// The kubelet's start delay in model time: 1 ms of real time at [`KUBELET_SCALE`].
const KUBELET_START: Duration = Duration::from_secs(1);

async fn stage_with<'p>(plane: &'p ControlPlane, prefix: &str, start_delay: Duration) -> Stage<'p> {
    // The one crypto provider in the tree; a second install is a no-op.
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let ns = plane.namespace(prefix);
    let kubelet = Kubelet::start(
        plane.config(Identity::Admin),
        kubelet::Options::in_namespace(&ns)
            .with_time_scale(KUBELET_SCALE)
            .with_start_delay(start_delay),
    )
    .expect("the fake kubelet registers its node");
    let proxy = FaultProxy::start(
        &plane.server_url(),
        plane.ca_pem(),
        plane.token(Identity::Admin),
    )
    .await
    .expect("the proxy starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    proxy
        .kubeconfig(&kubeconfig, &ns)
        .expect("kubeconfig written");
    Stage {
        plane,
        ns: ns.name().to_owned(),
        proxy,
        kubeconfig,
        _kubelet: kubelet,
        _logs: plane.log_guard(),
        _dir: dir,
    }
}

/// A [`Stage`] on the suite's shared control plane; `None` (the test skips) without one.
async fn shared_stage(prefix: &str) -> Option<Stage<'static>> {
    Some(stage(apiary_envtest::shared()?, prefix).await)
}

impl Stage<'_> {
    /// A `Cluster` through the proxy, built by the real client construction from its kubeconfig.
    async fn cluster(&self) -> Cluster {
        let connection = connect(&ClientOptions {
            kubeconfig: Some(self.kubeconfig.clone()),
            ..ClientOptions::default()
        })
        .await
        .expect("a client from the proxy's kubeconfig");
        Cluster::new(connection.client, &self.ns)
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.plane.client(Identity::Admin), &self.ns)
    }

    fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.plane.client(Identity::Admin), &self.ns)
    }

    /// The pods and Secrets in the namespace now, read directly (not through the proxy).
    async fn objects(&self) -> (Vec<Pod>, Vec<Secret>) {
        let pods = self
            .pods()
            .list(&ListParams::default())
            .await
            .expect("list pods");
        let secrets = self
            .secrets()
            .list(&ListParams::default())
            .await
            .expect("list secrets");
        (pods.items, secrets.items)
    }

    /// Requests of `verb` on `resource` the server answered with a 2xx.
    fn succeeded(&self, verb: Verb, resource: Resource) -> Vec<ProxiedRequest> {
        self.proxy
            .requests()
            .into_iter()
            .filter(|r| {
                r.request.is(verb, resource)
                    && r.forwarded
                    && r.request.status.is_some_and(|s| (200..300).contains(&s))
            })
            .collect()
    }
}

fn name<K: kube::Resource>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}

/// Exactly one pod (running) and one Secret, the one the pod references: what a converged deploy
/// leaves.
async fn assert_one_pod_and_its_secret(s: &Stage<'_>, pod_name: &str) {
    let (pods, secrets) = s.objects().await;
    let pod_names: Vec<_> = pods.iter().map(name).collect();
    assert_eq!(pod_names, [pod_name]);
    let secret_names: Vec<_> = secrets.iter().map(name).collect();
    assert_eq!(secret_names, [secret_ref(&pods[0]).expect("envFrom")]);
}

/// Asserts the namespace holds no pod and no Secret (read directly, not through the proxy).
async fn assert_nothing_left(s: &Stage<'_>) {
    let (pods, secrets) = s.objects().await;
    let names: Vec<_> = pods
        .iter()
        .map(name)
        .chain(secrets.iter().map(name))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

/// Adds each `(times, verb, resource, action)` as a rule on `f`.
fn inject<const N: usize>(f: &Faults, rules: [(u32, Verb, Resource, FaultAction); N]) {
    for (times, verb, resource, action) in rules {
        f.add(FaultRule::times(
            times,
            Matcher::verb(verb, resource),
            action,
        ));
    }
}

/// A 429 carrying `Retry-After: seconds`.
fn too_many(seconds: u32) -> FaultAction {
    FaultAction::TooManyRequests {
        retry_after_seconds: seconds,
    }
}

/// Holds the next pod create at the proxy for a second, long enough to kill the server behind it.
fn hold_pod_create(s: &Stage<'_>) {
    inject(
        s.proxy.faults(),
        [(
            1,
            Verb::Create,
            Resource::Pods,
            FaultAction::Delay(Duration::from_secs(1)),
        )],
    );
}

/// Polls `done` up to `tries` times, `step` apart (bounded, so a broken run fails later on its
/// own assertion instead of hanging).
async fn poll(tries: u32, step: Duration, done: impl Fn() -> bool) {
    for _ in 0..tries {
        if done() {
            return;
        }
        tokio::time::sleep(step).await;
    }
}

/// A deploy of the stage's agent through `cluster`, with `deadline`.
async fn deploy(
    s: &Stage<'_>,
    cluster: &Cluster,
    deadline: Duration,
) -> Result<driver::Deployed, driver::DeployError> {
    driver::deploy(cluster, &config(&s.ns), &deploy_options(deadline)).await
}

/// A deploy of the stage's agent running on its own task, with `deadline`.
fn spawn_deploy(
    s: &Stage<'_>,
    cluster: &Arc<Cluster>,
    deadline: Duration,
) -> tokio::task::JoinHandle<Result<driver::Deployed, driver::DeployError>> {
    let cluster = Arc::clone(cluster);
    let config = config(&s.ns);
    tokio::spawn(async move { driver::deploy(&*cluster, &config, &deploy_options(deadline)).await })
}

/// SIGKILLs the apiserver (open connections reset), off the runtime's threads.
async fn kill(plane: &Arc<ControlPlane>) {
    let killer = Arc::clone(plane);
    tokio::task::spawn_blocking(move || killer.kill_apiserver())
        .await
        .expect("the kill ran");
}

/// Starts the apiserver again on the same port and etcd data.
async fn restart(plane: &Arc<ControlPlane>) {
    let restarter = Arc::clone(plane);
    tokio::task::spawn_blocking(move || restarter.start_apiserver())
        .await
        .expect("the restart ran")
        .expect("the apiserver started again");
}

/// A failed deploy's message names the pod or the namespace, and never the admin's token.
fn assert_names_what_failed(s: &Stage<'_>, plane: &ControlPlane, text: &str) {
    assert!(
        text.contains(&config(&s.ns).pod_name()) || text.contains(&s.ns),
        "the message names what failed: {text}"
    );
    assert!(!text.contains(plane.token(Identity::Admin)), "{text}");
}

/// The next deploy, its GC reading a server clock 21 minutes later (past the orphan age gate),
/// converges.
async fn next_deploy_past_the_age_gate(s: &Stage<'_>, cluster: &Cluster) -> driver::Deployed {
    s.proxy.set_date_shift(Duration::from_secs(21 * 60));
    deploy(s, cluster, Duration::from_secs(90))
        .await
        .expect("the next deploy converges")
}

/// Injects one of each fault on the first requests a deploy makes (a 429 with `Retry-After: 0`
/// among them), plus a seeded fraction of 500, 503, resets and 429 on everything, as the
/// simulator's stormy weather does.
fn storm(proxy: &FaultProxy) {
    let f = proxy.faults();
    inject(
        f,
        [
            (
                1,
                Verb::Get,
                Resource::Namespaces,
                FaultAction::DropConnection,
            ),
            (1, Verb::List, Resource::Pods, too_many(1)),
            (
                1,
                Verb::Get,
                Resource::Pods,
                FaultAction::ServiceUnavailable,
            ),
            // `Retry-After: 0` on the preflight GC's Secret list: retried after the plain backoff.
            (1, Verb::List, Resource::Secrets, too_many(0)),
            (
                1,
                Verb::Create,
                Resource::Secrets,
                FaultAction::InternalError,
            ),
            (1, Verb::Create, Resource::Pods, FaultAction::DropConnection),
        ],
    );
    transient_weather(f, 0.05);
}

/// A deploy through 500, 503, 429 + `Retry-After` and resets converges on the real server: one
/// pod running, one Secret, exactly one successful create of each, and the faulted creates never
/// reached the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_converges_through_injected_faults() {
    let Some(s) = shared_stage("faults-deploy").await else {
        return;
    };
    storm(&s.proxy);
    let cluster = s.cluster().await;
    let deployed = deploy(&s, &cluster, Duration::from_secs(90))
        .await
        .expect("deployed through the faults");
    assert!(s.proxy.faults().injected() >= 6, "the chosen faults fired");
    let secret_lists: Vec<Option<u16>> = s
        .proxy
        .requests()
        .into_iter()
        .filter(|r| r.request.is(Verb::List, Resource::Secrets))
        .map(|r| r.request.status)
        .collect();
    assert_eq!(
        secret_lists.first(),
        Some(&Some(429)),
        "the first Secret list got the 429 with Retry-After: 0: {secret_lists:?}"
    );
    assert!(
        !s.succeeded(Verb::List, Resource::Secrets).is_empty(),
        "a retried Secret list reached the server: {secret_lists:?}"
    );
    assert_eq!(s.succeeded(Verb::Create, Resource::Secrets).len(), 1);
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    let faulted_creates = s
        .proxy
        .requests()
        .into_iter()
        .filter(|r| r.request.is_mutation() && r.request.faulted)
        .count();
    assert!(
        faulted_creates >= 2,
        "the Secret and pod creates were faulted once each"
    );
    assert!(
        s.proxy
            .requests()
            .iter()
            .all(|r| !(r.request.faulted && r.forwarded)),
        "no faulted request reached the server"
    );
    assert_one_pod_and_its_secret(&s, &deployed.pod).await;
    let pod = s.pods().get(&deployed.pod).await.expect("the pod");
    assert_eq!(
        pod.status.and_then(|st| st.phase).as_deref(),
        Some("Running")
    );
}

/// An undeploy through 500, 503, 429 + `Retry-After` and resets converges: the pod is deleted
/// with its fence and waited for, its Secret deleted, nothing of the agent is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undeploy_converges_through_injected_faults() {
    let Some(s) = shared_stage("faults-undeploy").await else {
        return;
    };
    let cluster = s.cluster().await;
    let deployed = deploy(&s, &cluster, Duration::from_secs(60))
        .await
        .expect("deployed");
    inject(
        s.proxy.faults(),
        [
            (1, Verb::Get, Resource::Pods, FaultAction::DropConnection),
            (1, Verb::Delete, Resource::Pods, FaultAction::InternalError),
            (
                1,
                Verb::Delete,
                Resource::Secrets,
                FaultAction::ServiceUnavailable,
            ),
            (2, Verb::List, Resource::Secrets, too_many(1)),
        ],
    );
    s.proxy.clear();
    let report = driver::undeploy(
        &cluster,
        &agent(),
        &UndeployOptions {
            wait: true,
            deadline: Duration::from_secs(60),
            poll: Duration::from_millis(200),
            ..UndeployOptions::default()
        },
    )
    .await
    .expect("undeployed through the faults");
    assert_eq!(report.pod.as_deref(), Some(deployed.pod.as_str()));
    assert!(report.pod_deleted && report.waited, "{report:?}");
    assert_eq!(report.secrets.len(), 1, "{report:?}");
    assert!(s.proxy.faults().injected() >= 3);
    assert_eq!(s.succeeded(Verb::Delete, Resource::Pods).len(), 1);
    assert_nothing_left(&s).await;
}

fn seed_pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "labels": { "app": "ring-node" } },
        "spec": { "containers": [{
            "name": "main",
            "image": "registry.example.com/ring:1",
            "ports": [{ "name": "gossip", "containerPort": 7000 }],
        }] },
    }))
    .expect("a pod")
}

fn seed_pods(ns: &str) -> Pods {
    Pods {
        namespace: Some(ns.to_owned()),
        label_selector: "app=ring-node".to_owned(),
        port: Port::Name("gossip".to_owned()),
    }
}

/// Creates `n` seed pods directly and waits (bounded) until the kubelet gave each an IP.
async fn running_seed_pods(s: &Stage<'_>, range: std::ops::Range<usize>) {
    let pods = s.pods();
    for i in range.clone() {
        pods.create(&PostParams::default(), &seed_pod(&format!("ring-{i:02}")))
            .await
            .expect("create a seed pod");
    }
    for _ in 0..2000 {
        let list = pods
            .list(&ListParams::default().labels("app=ring-node"))
            .await
            .expect("list");
        let running = list
            .items
            .iter()
            .filter(|p| {
                p.status
                    .as_ref()
                    .and_then(|st| st.pod_ip.as_ref())
                    .is_some()
            })
            .count();
        if running >= range.end {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the seed pods never got their IPs");
}

/// Seeds in list mode through faults: a 429 and a 503 on the first page are retried by the
/// client and the resolve still sees every pod across three pages; a 500 or a reset fails that one resolve with a
/// client error, and the next resolve sees every pod again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_list_mode_converges_through_injected_faults() {
    let Some(s) = shared_stage("faults-seeds").await else {
        return;
    };
    running_seed_pods(&s, 0..12).await;
    let client = s.proxy.client(&s.ns).expect("client");
    let mut seeds = PodSeeds::with_client(seed_pods(&s.ns), client)
        .expect("seeds")
        .with_options(SeedsOptions {
            page_size: NonZeroU32::new(5).expect("non-zero"),
            mode: SeedsMode::List,
        });
    let f = s.proxy.faults();
    inject(
        f,
        [
            (1, Verb::List, Resource::Pods, too_many(1)),
            (
                1,
                Verb::List,
                Resource::Pods,
                FaultAction::ServiceUnavailable,
            ),
        ],
    );
    let all = seeds
        .resolve_detailed()
        .await
        .expect("resolved through 429 and 503");
    assert_eq!(all.addresses.len(), 12);
    assert_eq!(f.injected(), 2);

    for action in [FaultAction::InternalError, FaultAction::DropConnection] {
        inject(f, [(1, Verb::List, Resource::Pods, action.clone())]);
        let error = seeds.resolve().await.expect_err("this resolve fails");
        assert!(
            !error.to_string().is_empty(),
            "{action:?}: a message names the failure"
        );
        let again = seeds
            .resolve_detailed()
            .await
            .expect("the next resolve converges");
        assert_eq!(again, all, "{action:?}");
    }
    let faulted_lists = s
        .proxy
        .requests()
        .into_iter()
        .filter(|r| r.request.is(Verb::List, Resource::Pods) && r.request.faulted)
        .count();
    assert_eq!(faulted_lists, 4);
}

/// Seeds in watch mode through faults: the watch is reset and refused with a 500, the task
/// reconnects with its backoff, and a pod created afterwards reaches the resolved addresses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_watch_mode_converges_through_injected_faults() {
    let Some(s) = shared_stage("faults-watch").await else {
        return;
    };
    running_seed_pods(&s, 0..3).await;
    inject(
        s.proxy.faults(),
        [
            (1, Verb::Watch, Resource::Pods, FaultAction::DropConnection),
            (1, Verb::Watch, Resource::Pods, FaultAction::InternalError),
        ],
    );
    let client = s.proxy.client(&s.ns).expect("client");
    let mut seeds = PodSeeds::with_client(seed_pods(&s.ns), client)
        .expect("seeds")
        .with_options(SeedsOptions {
            page_size: NonZeroU32::new(500).expect("non-zero"),
            mode: SeedsMode::Watch,
        });
    assert_eq!(seeds.resolve().await.expect("first resolve").len(), 3);
    running_seed_pods(&s, 3..4).await;
    let mut seen = 0;
    for _ in 0..400 {
        seen = seeds.resolve().await.map(|a| a.len()).unwrap_or(0);
        if seen == 4 && seeds.watch_synced() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(seen, 4, "the new pod reached the resolved addresses");
    let watches: Vec<_> = s
        .proxy
        .requests()
        .into_iter()
        .filter(|r| r.request.is(Verb::Watch, Resource::Pods))
        .map(|r| (r.request.faulted, r.request.status))
        .collect();
    assert!(watches.len() >= 3, "{watches:?}");
    assert_eq!(watches[..2], [(true, None), (true, Some(500))]);
    assert!(watches[2..].contains(&(false, Some(200))), "{watches:?}");
}

/// Where in a deploy the apiserver is killed.
#[derive(Clone, Copy, Debug)]
enum KillPoint {
    /// Right after the Secret was created, while the proxy holds the pod create for 1 s: the
    /// create is forwarded to the dead server.
    PodCreateInFlight,
    /// Right after the pod was created, while the deploy's watch waits for the pod to start
    /// (the kubelet starts it only 3 s later): the open watch is reset by the kill.
    WaitingForStartup,
}

/// The apiserver is SIGKILLed (a crash: open connections reset) while the pod create is in
/// flight and started again on the same port and etcd data: the deploy finishes inside its
/// 90 s deadline, and the next deploy leaves exactly one pod and its Secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_killed_while_the_pod_create_is_in_flight() {
    killed_mid_deploy(KillPoint::PodCreateInFlight, Duration::from_secs(90)).await;
}

/// The same crash while the deploy's watch waits for startup: the deploy re-establishes its
/// wait and finishes inside its deadline; nothing of the attempt but its pod and Secret is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_killed_while_the_deploy_waits_for_startup() {
    killed_mid_deploy(KillPoint::WaitingForStartup, Duration::from_secs(90)).await;
}

/// The crash with a deadline (5 s) that expires while the apiserver is down: the deploy fails
/// with a clear message naming the pod (or, when the retried create landed first, finishes), and
/// the next deploy, its GC reading a server clock 21 minutes later (past the orphan age gate),
/// leaves exactly one pod and its one Secret: nothing else of the interrupted attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_killed_past_a_short_deadline() {
    killed_mid_deploy(KillPoint::PodCreateInFlight, Duration::from_secs(5)).await;
}

async fn killed_mid_deploy(point: KillPoint, deadline: Duration) {
    let Some(plane) = apiary_envtest::fresh(apiary_envtest::Options::default()) else {
        return;
    };
    let plane = Arc::new(plane);
    let start_delay = match point {
        KillPoint::PodCreateInFlight => KUBELET_START,
        // 3 s of real time at the kubelet's scale.
        KillPoint::WaitingForStartup => Duration::from_secs(3000),
    };
    let s = stage_with(&plane, "killed", start_delay).await;
    let trigger = match point {
        KillPoint::PodCreateInFlight => {
            hold_pod_create(&s);
            Resource::Secrets
        }
        KillPoint::WaitingForStartup => Resource::Pods,
    };
    let cluster = Arc::new(s.cluster().await);
    let first = spawn_deploy(&s, &cluster, deadline);
    poll(4000, Duration::from_millis(1), || {
        !s.succeeded(Verb::Create, trigger).is_empty()
    })
    .await;
    assert_eq!(s.succeeded(Verb::Create, trigger).len(), 1, "{point:?}");
    kill(&plane).await;
    // The server stays down until one of the deploy's requests has met it dead.
    let failed = || {
        s.proxy
            .requests()
            .into_iter()
            .filter(|r| r.upstream_error.is_some())
            .count()
    };
    poll(3000, Duration::from_millis(10), || failed() > 0).await;
    restart(&plane).await;

    let outcome = first.await.expect("the deploy task ran");
    let upstream_failures = failed();
    eprintln!(
        "{point:?}, deadline {deadline:?}: {} upstream failures, outcome {:?}",
        upstream_failures,
        outcome
            .as_ref()
            .map(|d| &d.pod)
            .map_err(ToString::to_string)
    );
    assert!(
        upstream_failures > 0,
        "the kill was seen by the deploy's requests"
    );
    match outcome {
        Ok(deployed) => assert_eq!(deployed.pod, config(&s.ns).pod_name()),
        Err(error) => assert_names_what_failed(&s, &plane, &error.to_string()),
    }
    let second = next_deploy_past_the_age_gate(&s, &cluster).await;
    assert_one_pod_and_its_secret(&s, &second.pod).await;
}

/// The apiserver is SIGKILLed right after the deploy created its Secret and stays down until the
/// deploy has given up: the deploy fails with a clear message and leaves an orphan Secret (no
/// pod ever referenced it). Started again on the same port and etcd data, the next deploy's GC
/// (reading a server clock 21 minutes later, past the orphan age gate) deletes that Secret, and
/// the agent ends with exactly one pod and its one Secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_down_past_the_deadline_leaves_nothing_after_the_next_gc() {
    let Some(plane) = apiary_envtest::fresh(apiary_envtest::Options::default()) else {
        return;
    };
    let plane = Arc::new(plane);
    let s = stage(&plane, "down").await;
    // The pod create is held at the proxy until the server is gone.
    hold_pod_create(&s);
    let cluster = Arc::new(s.cluster().await);
    let first = spawn_deploy(&s, &cluster, Duration::from_secs(3));
    poll(4000, Duration::from_millis(1), || {
        !s.succeeded(Verb::Create, Resource::Secrets).is_empty()
    })
    .await;
    let orphan = s.succeeded(Verb::Create, Resource::Secrets);
    assert_eq!(orphan.len(), 1);
    let orphan = orphan[0]
        .request
        .body_json()
        .and_then(|b| b["metadata"]["name"].as_str().map(str::to_owned))
        .expect("the created Secret's name");
    kill(&plane).await;

    let error = first
        .await
        .expect("the deploy task ran")
        .expect_err("no pod can be created while the server is down");
    let text = error.to_string();
    eprintln!("the deploy with the server down failed: {text}");
    assert_names_what_failed(&s, &plane, &text);
    assert!(s.succeeded(Verb::Create, Resource::Pods).is_empty());

    restart(&plane).await;
    let (pods, secrets) = s.objects().await;
    let left: Vec<_> = pods
        .iter()
        .map(name)
        .chain(secrets.iter().map(name))
        .collect();
    assert_eq!(left, [orphan.as_str()], "no pod, only the orphan Secret");

    let second = next_deploy_past_the_age_gate(&s, &cluster).await;
    let deleted: Vec<_> = s
        .succeeded(Verb::Delete, Resource::Secrets)
        .into_iter()
        .map(|r| r.request.path)
        .collect();
    assert_eq!(
        deleted,
        [format!("/api/v1/namespaces/{}/secrets/{orphan}", s.ns)]
    );
    assert_one_pod_and_its_secret(&s, &second.pod).await;
    let (_, secrets) = s.objects().await;
    assert_ne!(
        name(&secrets[0]),
        orphan,
        "the orphan is gone, a fresh Secret serves the pod"
    );
}
