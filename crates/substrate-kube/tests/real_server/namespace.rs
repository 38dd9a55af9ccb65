//! deploy.md § Namespace ensure, item 4, against a real `kube-apiserver` with the ServiceAccount
//! admission plugin on: the two scenarios of `cluster/sim_namespace.rs`, through `apiary-envtest`.
//! A deploy into a namespace it creates, whose `default` ServiceAccount the controller stand-in
//! creates 2 s later, is refused with the real server's `403 Forbidden … serviceaccount "default"
//! not found` until then, waits, and succeeds with exactly one Secret; with `--service-account
//! missing` it fails at once with the `kubectl create serviceaccount` fix. Pods are run by the
//! envtest fake kubelet.
//!
//! Layer: integration tests over loopback TLS. Without `KUBEBUILDER_ASSETS` every test returns at
//! once after one stderr line (`APIARY_ENVTEST_REQUIRED=1` turns that into a failure).
//! Assertions are on outcomes and on what the real server holds, never on timings.

use std::time::Duration;

use apiary_envtest::kubelet::{Kubelet, Options as KubeletOptions};
use apiary_envtest::{ControlPlane, Identity, Options};
use apiary_substrate::Substrate;
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::driver::{self, DeployError, DeployOptions};
use apiary_substrate_kube::{ClientOptions, Cluster, ConfigSource, connect_with};
use k8s_openapi::api::core::v1::{Pod, Secret, ServiceAccount};
use kube::api::{Api, ListParams};

use crate::real_support::fixtures::{agent, image};

/// The controller stand-in's delay before `default` appears in a new namespace.
const ACCOUNT_DELAY: Duration = Duration::from_secs(2);
/// Far beyond what either scenario needs; only turns a hang into a failure.
const DEADLINE: Duration = Duration::from_secs(120);

/// A control plane with ServiceAccount admission and the 2 s stand-in; `None` = tier skipped.
fn plane() -> Option<ControlPlane> {
    apiary_envtest::fresh(Options::with_service_accounts(ACCOUNT_DELAY))
}

/// A namespace name nobody created yet (the deploy creates it: the race starts there).
fn fresh_name(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{prefix}-{nanos:x}")
}

fn config(namespace: &str, service_account: Option<&str>) -> ValidConfig {
    // The default image: the fake kubelet starts it after its start delay.
    let mut config = DeployConfig::new(namespace, image(""));
    config.service_account = service_account.map(str::to_owned);
    config.validate(&agent()).expect("valid configuration")
}

fn options() -> DeployOptions {
    DeployOptions {
        deadline: DEADLINE,
        poll: Duration::from_millis(200),
        replace: false,
        min_running: Duration::ZERO,
    }
}

/// apiary's own `Cluster` for `namespace`, built from the admin kubeconfig as the CLI builds it.
async fn cluster(plane: &ControlPlane, namespace: &str) -> Cluster {
    apiary_substrate_kube::install_crypto_provider();
    let connection = connect_with(
        &ClientOptions::default(),
        ConfigSource::Kubeconfig {
            paths: vec![plane.kubeconfig(Identity::Admin, namespace)],
        },
    )
    .await
    .expect("client from the envtest kubeconfig");
    Cluster::new(connection.client, namespace)
}

/// The fresh-namespace race on the real server: refused with 403 first, then created with the
/// same (only) Secret once `default` exists; the pod runs as `default`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_namespace_deploy_waits_for_the_default_account() {
    let Some(plane) = plane() else { return };
    let _logs = plane.log_guard();
    let namespace = fresh_name("sa-race");
    let _kubelet = Kubelet::start(
        plane.config(Identity::Admin),
        KubeletOptions::in_namespace(&namespace),
    )
    .expect("the fake kubelet starts");
    let cluster = cluster(&plane, &namespace).await;
    let deployed = driver::deploy(&cluster, &config(&namespace, None), &options())
        .await
        .expect("deployed once the account exists");
    let client = plane.client(Identity::Admin);
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &namespace);
    let account = accounts
        .get_opt("default")
        .await
        .expect("read")
        .expect("the controller stand-in created default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let pod = pods.get(&deployed.pod).await.expect("the deployed pod");
    let secrets: Api<Secret> = Api::namespaced(client, &namespace);
    let listed = secrets
        .list(&ListParams::default().labels("app.kubernetes.io/managed-by=apiary"))
        .await
        .expect("secrets");
    assert_eq!(listed.items.len(), 1, "exactly one Secret");
    let secret = listed.items[0].metadata.name.clone();
    let referenced = pod.spec.as_ref().and_then(|s| {
        s.containers[0]
            .env_from
            .as_ref()?
            .iter()
            .find_map(|e| e.secret_ref.as_ref().map(|r| r.name.clone()))
    });
    assert_eq!(referenced, secret);
    // Order, not duration: the one Secret predates the account (whole seconds apart, given the
    // 2 s delay), so the pod create that succeeded came after the account and reused it.
    let created = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        meta.creation_timestamp
            .clone()
            .expect("creationTimestamp")
            .0
    };
    assert!(created(&listed.items[0].metadata) < created(&account.metadata));
    assert!(created(&account.metadata) <= created(&pod.metadata));
    // The real server's own account for the pod, and apiary's quorum read of it answers yes.
    assert_eq!(
        pod.spec.and_then(|s| s.service_account_name).as_deref(),
        Some("default")
    );
    assert_eq!(cluster.service_account_exists("default").await, Ok(true));
    assert_eq!(cluster.service_account_exists("nobody").await, Ok(false));
}

/// A pod naming a missing account fails at once on the real server: E10 with the real 403, the
/// fix, and the attempt's Secret removed; no pod exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_missing_account_fails_at_once_with_the_fix() {
    let Some(plane) = plane() else { return };
    let _logs = plane.log_guard();
    let namespace = fresh_name("sa-named");
    let cluster = cluster(&plane, &namespace).await;
    let error = driver::deploy(&cluster, &config(&namespace, Some("missing")), &options())
        .await
        .expect_err("refused");
    let text = error.to_string();
    assert!(matches!(error, DeployError::CreateFailed { .. }), "{text}");
    for needle in [
        "403 Forbidden",
        "error looking up service account",
        "serviceaccount \"missing\" not found",
        &format!("kubectl create serviceaccount missing -n {namespace}"),
        "was removed",
    ] {
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
    let client = plane.client(Identity::Admin);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    assert!(
        secrets
            .list(&ListParams::default().labels("app.kubernetes.io/managed-by=apiary"))
            .await
            .expect("secrets")
            .items
            .is_empty()
    );
    let pods: Api<Pod> = Api::namespaced(client, &namespace);
    assert!(
        pods.list(&ListParams::default())
            .await
            .expect("pods")
            .items
            .is_empty()
    );
}
