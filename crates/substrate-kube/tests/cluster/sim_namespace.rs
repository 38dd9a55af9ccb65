//! deploy.md § Namespace ensure, item 4, against the loopback simulator with ServiceAccount
//! admission on: the real driver and the real `Cluster` deploy into a namespace they create, whose
//! `default` ServiceAccount the controller stand-in creates 2 s (model time) later. The pod create
//! is refused with the real server's 403 until then; the deploy waits, retries with the same Secret
//! and succeeds with exactly one Secret. With `--service-account missing` it fails at once with the
//! `kubectl create serviceaccount` fix.
//!
//! Layer: integration tests over real HTTP on 127.0.0.1; the same two scenarios run against a
//! real `kube-apiserver` in `real_server/namespace.rs`. They decide nothing and contact nothing but
//! loopback. Assertions are on the request log and the final state, never on timings.

use std::time::Duration;

use crate::sim_support::{NS, POD, Sim, config, config_with, image, options, secret_ref, start};
use apiary_apiserver_sim::{Resource, Verb};
use apiary_substrate::driver::{self, DeployError};

/// The controller's delay, in model time.
const ACCOUNT_DELAY: Duration = Duration::from_secs(2);
/// Model seconds per real second: the account appears about 200 ms after the namespace, long
/// after the deploy's first pod create (a handful of loopback requests).
const SCALE: f64 = 10.0;
/// Far beyond what either scenario needs.
const DEADLINE: Duration = Duration::from_secs(20);
/// The poll interval (model-independent: a real duration).
const POLL: Duration = Duration::from_millis(200);

/// A simulator without the namespace, running ServiceAccount admission and a controller that
/// creates `default` [`ACCOUNT_DELAY`] after each new namespace.
async fn admitting() -> Sim {
    let s = start(SCALE, false).await;
    s.sim.with_model(|m| {
        m.set_service_account_admission(true);
        m.set_service_account_controller(Some(ACCOUNT_DELAY));
    });
    s
}

/// The fresh-namespace race: the first pod create is refused with 403 `Forbidden`, apiary reads
/// the account (quorum GETs) until it exists, then creates the pod again with the same Secret;
/// one Secret, one pod, nothing deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_namespace_deploy_waits_for_the_default_account() {
    let s = admitting().await;
    let cluster = s.cluster().await;
    let deployed = driver::deploy(&cluster, &config(&image("")), &options(DEADLINE, POLL))
        .await
        .expect("deployed once the account exists");
    assert_eq!(deployed.pod, POD);
    let creates = s.of(Verb::Create, Resource::Pods);
    let refused: Vec<_> = creates.iter().filter(|r| r.status == Some(403)).collect();
    assert!(
        !refused.is_empty(),
        "the first create was refused: {creates:?}"
    );
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    assert_eq!(creates.last().and_then(|r| r.status), Some(201));
    // Every attempt carried the same Secret reference.
    let referenced: Vec<_> = creates
        .iter()
        .map(|r| r.body_json().expect("pod body")["spec"]["containers"][0]["envFrom"].clone())
        .collect();
    assert!(
        referenced.windows(2).all(|w| w[0] == w[1]),
        "{referenced:?}"
    );
    assert_eq!(s.succeeded(Verb::Create, Resource::Secrets).len(), 1);
    let reads = s.of(Verb::Get, Resource::ServiceAccounts);
    assert!(!reads.is_empty());
    for read in &reads {
        assert_eq!(
            read.path,
            format!("/api/v1/namespaces/{NS}/serviceaccounts/default")
        );
        assert_eq!(read.query_param("resourceVersion"), None, "a quorum read");
    }
    // The account was read after the refusal and before the successful create.
    let log = s.sim.requests();
    let first_refusal = log
        .iter()
        .position(|r| r.is(Verb::Create, Resource::Pods))
        .unwrap();
    let first_read = log
        .iter()
        .position(|r| r.is(Verb::Get, Resource::ServiceAccounts))
        .unwrap();
    let created = log
        .iter()
        .position(|r| r.is(Verb::Create, Resource::Pods) && r.status == Some(201))
        .unwrap();
    assert!(first_refusal < first_read && first_read < created);
    assert!(log.iter().all(|r| r.method != "DELETE"), "nothing deleted");
    let pod = s.pod().expect("the pod");
    assert_eq!(s.secret_names(), [secret_ref(&pod).expect("envFrom")]);
}

/// A pod naming a missing account fails at once: E10 with the fix, the attempt's Secret deleted
/// (uid-fenced), no wait for the account and no second create.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_missing_account_fails_at_once_with_the_fix() {
    let s = admitting().await;
    let cluster = s.cluster().await;
    let config = config_with(&image(""), |c| c.service_account = Some("missing".into()));
    let error = driver::deploy(&cluster, &config, &options(DEADLINE, POLL))
        .await
        .expect_err("refused");
    let text = error.to_string();
    assert!(matches!(error, DeployError::CreateFailed { .. }), "{text}");
    for needle in [
        "403 Forbidden",
        "error looking up service account",
        "serviceaccount \"missing\" not found",
        &format!("kubectl create serviceaccount missing -n {NS}"),
        "was removed",
    ] {
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
    assert_eq!(s.of(Verb::Create, Resource::Pods).len(), 1);
    assert!(s.of(Verb::Get, Resource::ServiceAccounts).is_empty());
    let deletes = s.succeeded(Verb::Delete, Resource::Secrets);
    assert_eq!(deletes.len(), 1);
    assert!(deletes[0].body_json().expect("body")["preconditions"]["uid"].is_string());
    assert!(s.secret_names().is_empty());
    assert!(s.pod_names().is_empty());
}
