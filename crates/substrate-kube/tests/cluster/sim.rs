//! `Cluster` against the loopback apiserver simulator, through a client built by `cluster::client`
//! from the simulator's kubeconfig: real HTTP on 127.0.0.1, the real `kube::Client`, the
//! simulator's request log and fault injection (deploy.md § Apiserver contract). Never contacts a
//! real cluster.

use std::time::{Duration, Instant};

/// How long a wait may take before the test fails as hung (not a performance bound).
const HANG: Duration = Duration::from_secs(60);

use apiary_apiserver_sim::{
    DateMode, FaultAction, FaultRule, Matcher, Resource, SimOptions, Simulator, Verb,
};
use apiary_classify::verify::PodDeletion;
use apiary_cluster_model::kubelet::PodScript;
use apiary_substrate::fake::proof::{pod_deletion, secret_deletion};
use apiary_substrate::{CreateAnswer, DeleteAnswer, NamespaceFailure, Substrate};
use apiary_substrate_kube::Cluster;
use apiary_substrate_kube::{ClientOptions, ConfigSource, connect_with};
use k8s_openapi::api::core::v1::{Container, EnvFromSource, Pod, PodSpec, Secret, SecretEnvSource};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const NS: &str = "agents";
const SELECTOR: &str = "app=apiary-test";

struct Harness {
    sim: Simulator,
    cluster: Cluster,
    _dir: tempfile::TempDir,
}

/// A simulator, a kubeconfig written for it, and a `Cluster` built from that kubeconfig.
async fn harness(create_namespace: bool) -> Harness {
    apiary_substrate_kube::install_crypto_provider();
    let sim = Simulator::start(SimOptions::default())
        .await
        .expect("simulator starts");
    if create_namespace {
        sim.ensure_namespace(NS);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&path, NS).expect("kubeconfig written");
    let connection = connect_with(
        &ClientOptions::default(),
        ConfigSource::Kubeconfig { paths: vec![path] },
    )
    .await
    .expect("client built");
    assert_eq!(connection.namespace.as_deref(), Some(NS));
    let cluster = Cluster::new(connection.client, NS);
    Harness {
        sim,
        cluster,
        _dir: dir,
    }
}

fn labels() -> Option<std::collections::BTreeMap<String, String>> {
    Some([("app".to_owned(), "apiary-test".to_owned())].into())
}

fn secret(name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: labels(),
            ..ObjectMeta::default()
        },
        string_data: Some([("KEY".to_owned(), "value".to_owned())].into()),
        immutable: Some(true),
        ..Secret::default()
    }
}

fn pod(name: &str, secret: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: labels(),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "agent".to_owned(),
                image: Some(format!("registry.example/agent@sha256:{}", "0".repeat(64))),
                env_from: Some(vec![EnvFromSource {
                    secret_ref: Some(SecretEnvSource {
                        name: secret.to_owned(),
                        ..SecretEnvSource::default()
                    }),
                    ..EnvFromSource::default()
                }]),
                ..Container::default()
            }],
            restart_policy: Some("Never".to_owned()),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn fence_of(pod: &Pod) -> PodDeletion {
    pod_deletion(
        pod.metadata.name.as_deref().expect("name"),
        pod.metadata.uid.as_deref().expect("uid"),
        pod.metadata.resource_version.as_deref().expect("rv"),
    )
}

/// Namespace ensure creates a missing namespace (GET then POST) and then finds it (one GET).
#[tokio::test]
async fn namespace_ensure_creates_then_finds() {
    let h = harness(false).await;
    h.cluster.ensure_namespace().await.expect("created");
    let methods: Vec<String> = h.sim.requests().iter().map(|r| r.method.clone()).collect();
    assert_eq!(methods, ["GET", "POST"]);
    h.sim.clear_requests();
    h.cluster.ensure_namespace().await.expect("exists");
    assert_eq!(h.sim.requests().len(), 1);
}

/// Forbidden namespace create is E11 naming the kubectl command; a forbidden GET continues.
#[tokio::test]
async fn forbidden_namespace() {
    let h = harness(false).await;
    h.sim
        .faults()
        .deny(Verb::Create, Some(Resource::Namespaces));
    let error = h.cluster.ensure_namespace().await.expect_err("forbidden");
    // The E11 words and their `kubectl create namespace` fix are the deploy error's.
    assert_eq!(error, NamespaceFailure::CreateForbidden);
    h.sim.faults().deny(Verb::Get, Some(Resource::Namespaces));
    h.cluster.ensure_namespace().await.expect("continues");
}

/// The whole object life cycle: create, AlreadyExists on the second create, quorum reads, list
/// with the server's clock, a stale fence refused, the observed fence accepted, NotFound after.
#[tokio::test]
async fn object_life_cycle() {
    let h = harness(true).await;
    h.sim
        .with_model(|m| m.script_pods_named(NS, "agent-a", PodScript::Inert));
    assert_eq!(
        h.cluster.create_secret(&secret("agent-a-g1")).await,
        Ok(CreateAnswer::Created)
    );
    assert_eq!(
        h.cluster.create_secret(&secret("agent-a-g1")).await,
        Ok(CreateAnswer::AlreadyExists)
    );
    assert_eq!(
        h.cluster.create_pod(&pod("agent-a", "agent-a-g1")).await,
        Ok(CreateAnswer::Created)
    );
    assert_eq!(
        h.cluster.create_pod(&pod("agent-a", "agent-a-g1")).await,
        Ok(CreateAnswer::AlreadyExists)
    );
    assert!(h.cluster.secret_exists("agent-a-g1").await.expect("read"));
    assert!(!h.cluster.secret_exists("agent-a-g2").await.expect("read"));
    let observed = h
        .cluster
        .get_pod("agent-a")
        .await
        .expect("read")
        .expect("present");
    let listed = h.cluster.list_pods(SELECTOR).await.expect("listed");
    assert_eq!(listed.items.len(), 1);
    let server_now = listed.server_now.expect("the simulator sends Date");
    let sim_now = h.sim.now().as_second();
    assert!(
        (server_now.timestamp() - sim_now).abs() <= 2,
        "{server_now} vs {sim_now}"
    );
    let secrets = h.cluster.list_secrets(SELECTOR).await.expect("listed");
    assert_eq!(secrets.len(), 1);

    let stale = pod_deletion(
        "agent-a",
        observed.metadata.uid.as_deref().expect("uid"),
        "1",
    );
    assert_eq!(
        h.cluster.delete_pod(&stale).await,
        Ok(DeleteAnswer::PreconditionFailed)
    );
    assert_eq!(
        h.cluster.delete_pod(&fence_of(&observed)).await,
        Ok(DeleteAnswer::Accepted)
    );
    assert_eq!(h.cluster.get_pod("agent-a").await, Ok(None));
    assert_eq!(
        h.cluster.delete_pod(&fence_of(&observed)).await,
        Ok(DeleteAnswer::NotFound)
    );
    let secret_uid = secrets[0].metadata.uid.clone().expect("uid");
    assert_eq!(
        h.cluster
            .delete_secret(&secret_deletion("agent-a-g1", "wrong-uid"))
            .await,
        Ok(DeleteAnswer::PreconditionFailed)
    );
    assert_eq!(
        h.cluster
            .delete_secret(&secret_deletion("agent-a-g1", &secret_uid))
            .await,
        Ok(DeleteAnswer::Accepted)
    );
    assert_eq!(
        h.cluster
            .delete_secret(&secret_deletion("agent-a-g1", &secret_uid))
            .await,
        Ok(DeleteAnswer::NotFound)
    );

    // Every read was a quorum read, and no delete overrode the grace period.
    for request in h.sim.requests() {
        if request.method == "GET" {
            assert_eq!(request.query_param("resourceVersion"), None, "{request:?}");
        }
        if request.method == "DELETE" {
            assert!(!request.body.contains("gracePeriodSeconds"), "{request:?}");
            assert!(request.body.contains("preconditions"), "{request:?}");
        }
    }
}

/// A garbled or omitted `Date` header gives the items without a clock.
#[tokio::test]
async fn date_modes() {
    let h = harness(true).await;
    h.sim
        .with_model(|m| m.script_pods_named(NS, "agent-d", PodScript::Inert));
    h.cluster
        .create_secret(&secret("agent-d-g1"))
        .await
        .expect("created");
    h.cluster
        .create_pod(&pod("agent-d", "agent-d-g1"))
        .await
        .expect("created");
    for mode in [DateMode::Garbled, DateMode::Omit] {
        h.sim.faults().set_date_mode(mode);
        let listed = h.cluster.list_pods(SELECTOR).await.expect("listed");
        assert_eq!(listed.items.len(), 1, "{mode:?}");
        assert_eq!(listed.server_now, None, "{mode:?}");
    }
}

/// Injected 503, 500, 429 and dropped connections are retried to success; the request log
/// shows the extra attempts.
#[tokio::test]
async fn injected_faults_are_survived() {
    let h = harness(true).await;
    let actions = [
        FaultAction::ServiceUnavailable,
        FaultAction::InternalError,
        FaultAction::TooManyRequests {
            retry_after_seconds: 1,
        },
        FaultAction::DropConnection,
    ];
    for action in actions {
        h.sim.faults().clear();
        h.sim.clear_requests();
        h.sim.faults().add(FaultRule::times(
            2,
            Matcher::verb(Verb::List, Resource::Pods),
            action.clone(),
        ));
        let started = Instant::now();
        h.cluster.list_pods(SELECTOR).await.expect("survived");
        let attempts = h
            .sim
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path.ends_with("/pods"))
            .count();
        assert_eq!(attempts, 3, "{action:?}");
        if matches!(action, FaultAction::TooManyRequests { .. }) {
            assert!(
                started.elapsed() >= Duration::from_secs(2),
                "Retry-After honoured twice"
            );
        }
    }
}

/// A retried Secret create whose first attempt landed but whose answer was lost succeeds; a
/// retried pod create in the same situation goes the adopt path (AlreadyExists).
#[tokio::test]
async fn retried_creates_after_lost_answers() {
    let h = harness(true).await;
    h.sim
        .with_model(|m| m.script_pods_named(NS, "agent-r", PodScript::Inert));
    // A 504 answered after the model accepted the create is what a lost answer looks like; the
    // simulator answers faults before the model, so emulate the landed create directly.
    h.cluster
        .create_secret(&secret("agent-r-g1"))
        .await
        .expect("created");
    h.sim.faults().add(FaultRule::times(
        1,
        Matcher::verb(Verb::Create, Resource::Secrets),
        FaultAction::DropConnection,
    ));
    // The retry answers AlreadyExists: the name was this attempt's alone, so it is success.
    assert_eq!(
        h.cluster.create_secret(&secret("agent-r-g1")).await,
        Ok(CreateAnswer::Created)
    );
    h.cluster
        .create_pod(&pod("agent-r", "agent-r-g1"))
        .await
        .expect("created");
    h.sim.faults().add(FaultRule::times(
        1,
        Matcher::verb(Verb::Create, Resource::Pods),
        FaultAction::DropConnection,
    ));
    assert_eq!(
        h.cluster.create_pod(&pod("agent-r", "agent-r-g1")).await,
        Ok(CreateAnswer::AlreadyExists)
    );
}

/// A non-transient refusal (403) is not retried: RBAC's words from a ready server (one
/// `/readyz` read says so: deploy.md § Who refused it) are the answer.
#[tokio::test]
async fn forbidden_is_not_retried() {
    let h = harness(true).await;
    h.sim.faults().deny(Verb::List, Some(Resource::Secrets));
    let error = h
        .cluster
        .list_secrets(SELECTOR)
        .await
        .expect_err("forbidden");
    assert_eq!(error.reason(), Some("Forbidden"));
    let paths: Vec<String> = h.sim.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths.len(), 2, "{paths:?}");
    assert_eq!(paths[1], "/readyz");
}

/// Waiting for a change returns as soon as the kubelet starts the container, well before
/// `max`; with `watch` denied it falls back to waiting `max`.
#[tokio::test]
async fn watch_wakes_on_container_start() {
    let h = harness(true).await;
    h.sim
        .with_model(|m| m.script_pods_named(NS, "agent-w", PodScript::Inert));
    h.cluster
        .create_secret(&secret("agent-w-g1"))
        .await
        .expect("created");
    h.cluster
        .create_pod(&pod("agent-w", "agent-w-g1"))
        .await
        .expect("created");
    let observed = h
        .cluster
        .get_pod("agent-w")
        .await
        .expect("read")
        .expect("present");
    let rv = observed.metadata.resource_version.clone();

    // The wait may last an hour, so only the watch event of the start can end it; the flag
    // shows it ended after the start, not before.
    let started_pod = std::sync::atomic::AtomicBool::new(false);
    let wait = async {
        h.cluster
            .wait_for_pod_change("agent-w", rv.as_deref(), Duration::from_secs(3600))
            .await;
        started_pod.load(std::sync::atomic::Ordering::SeqCst)
    };
    let kubelet = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        h.sim
            .with_model(|m| m.start_pod(NS, "agent-w").map(|_| ()))
            .expect("started");
        started_pod.store(true, std::sync::atomic::Ordering::SeqCst);
    };
    let (woke_after_the_start, ()) =
        tokio::time::timeout(HANG, async { tokio::join!(wait, kubelet) })
            .await
            .expect("the start woke the hour-long wait");
    assert!(woke_after_the_start, "the wait ended before the start");
    let watches: Vec<_> = h
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.query_param("watch").is_some())
        .collect();
    assert_eq!(watches.len(), 1);
    assert_eq!(
        watches[0].query_param("fieldSelector").as_deref(),
        Some("metadata.name=agent-w")
    );
    assert_eq!(watches[0].query_param("resourceVersion"), rv);

    h.sim.faults().deny(Verb::Watch, Some(Resource::Pods));
    let current = h
        .cluster
        .get_pod("agent-w")
        .await
        .expect("read")
        .expect("present");
    let started = Instant::now();
    h.cluster
        .wait_for_pod_change(
            "agent-w",
            current.metadata.resource_version.as_deref(),
            Duration::from_millis(500),
        )
        .await;
    assert!(started.elapsed() >= Duration::from_millis(500));
}

/// Nothing listening: a read fails as a transport error naming the connection failure, within
/// the request budget, and never as an absence.
#[tokio::test]
async fn unreachable_apiserver_is_a_transport_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:9\ncontexts:\n- name: c\n  context:\n    cluster: c\n    namespace: agents\nusers: []\n",
    )
    .expect("written");
    let connection = connect_with(
        &ClientOptions::default(),
        ConfigSource::Kubeconfig { paths: vec![path] },
    )
    .await
    .expect("client built");
    let cluster =
        Cluster::new(connection.client, NS).with_request_timeout(Duration::from_millis(800));
    let error = cluster.get_pod("agent-x").await.expect_err("unreachable");
    assert_eq!(error.reason(), None);
    let text = error.to_string();
    assert!(text.contains(&format!("{NS}/agent-x")), "{text}");
    assert!(
        text.to_lowercase().contains("connect") || text.contains("refused"),
        "{text}"
    );
}
