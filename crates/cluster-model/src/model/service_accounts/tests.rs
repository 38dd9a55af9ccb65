//! Tests of the model's ServiceAccounts: the admission refusal in the real apiserver's words, the
//! controller stand-in's delayed `default` on the model clock, and that both are off by default.
//! Pure; no I/O.

use k8s_openapi::api::core::v1::{Container, Namespace, PodSpec};

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::error::{Kind, ModelError};
use crate::model::{ClusterModel, DEFAULT_EPOCH_SECONDS, ListOptions, Preconditions, add};

const NS: &str = "fresh";

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn pod(name: &str, account: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "agent".into(),
                image: Some("registry.example.com/a@sha256:00".into()),
                ..Container::default()
            }],
            service_account_name: account.map(str::to_owned),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn account(name: &str) -> ServiceAccount {
    ServiceAccount {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    }
}

fn namespace(name: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}

/// A model with admission on and the controller creating `default` 2 s after each namespace.
fn admitting() -> ClusterModel {
    let mut m = ClusterModel::default();
    m.set_service_account_admission(true);
    m.set_service_account_controller(Some(secs(2)));
    m.create_namespace(namespace(NS)).unwrap();
    m
}

/// Without admission (the default, like a bare kube-apiserver) pods need no account and no
/// account is ever created.
#[test]
fn off_by_default() {
    let mut m = ClusterModel::default();
    m.ensure_namespace(NS);
    m.create_pod(NS, pod("p", None)).unwrap();
    m.advance(secs(60));
    assert!(matches!(
        m.get_service_account(NS, "default"),
        Err(ModelError::NotFound {
            kind: Kind::ServiceAccount,
            ..
        })
    ));
}

/// The refusal is the real apiserver's: 403, reason `Forbidden`, the admission plugin's message,
/// details naming the pod — and it comes before the name check, as admission precedes storage.
#[test]
fn a_pod_without_its_account_is_refused_as_the_real_server_does() {
    let mut m = admitting();
    let error = m.create_pod(NS, pod("p", None)).unwrap_err();
    assert_eq!(error.code(), 403);
    assert_eq!(error.reason(), "Forbidden");
    assert_eq!(
        error.to_string(),
        "pods \"p\" is forbidden: error looking up service account fresh/default: \
         serviceaccount \"default\" not found"
    );
    let status = serde_json::to_value(error.to_status()).unwrap();
    assert_eq!(status["details"]["kind"], "pods");
    assert_eq!(status["details"]["name"], "p");
    assert_eq!(status["code"], 403);
    let named = m.create_pod(NS, pod("q", Some("runner"))).unwrap_err();
    assert!(
        named
            .to_string()
            .ends_with("fresh/runner: serviceaccount \"runner\" not found"),
        "{named}"
    );
    assert!(
        m.list_pods(Some(NS), &ListOptions::default())
            .unwrap()
            .items
            .is_empty()
    );
}

/// With the plugin on, a pod that names no account is stored running as `default`, as the real
/// server stores it; a named account is kept; without the plugin the field stays unset.
#[test]
fn admission_sets_the_default_account_as_the_real_server_does() {
    let mut m = admitting();
    m.advance(secs(2));
    m.create_service_account(NS, account("runner")).unwrap();
    let created = m.create_pod(NS, pod("p", None)).unwrap();
    let named = m.create_pod(NS, pod("q", Some("runner"))).unwrap();
    let account_of = |p: &Pod| p.spec.as_ref().and_then(|s| s.service_account_name.clone());
    assert_eq!(account_of(&created).as_deref(), Some("default"));
    assert_eq!(
        account_of(&m.get_pod(NS, "p").unwrap()).as_deref(),
        Some("default")
    );
    assert_eq!(account_of(&named).as_deref(), Some("runner"));
    let mut off = ClusterModel::default();
    off.ensure_namespace(NS);
    assert_eq!(
        account_of(&off.create_pod(NS, pod("p", None)).unwrap()),
        None
    );
}

/// The controller creates `default` after its delay on the model clock, not before; then pods
/// running as `default` are admitted, and a named account still has to be created by hand.
#[test]
fn the_controller_creates_default_after_its_delay() {
    let mut m = admitting();
    m.advance(Duration::from_millis(1999));
    assert!(m.get_service_account(NS, "default").is_err());
    assert_eq!(m.next_due(), Some(add(m.now(), Duration::from_millis(1))));
    m.advance(Duration::from_millis(1));
    let created = m.get_service_account(NS, "default").unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some(NS));
    assert!(created.metadata.uid.is_some());
    assert_eq!(m.next_due(), None);
    m.create_pod(NS, pod("p", None)).unwrap();
    m.create_pod(NS, pod("p2", Some("default"))).unwrap();
    m.create_pod(NS, pod("p3", Some(""))).unwrap();
    assert!(m.create_pod(NS, pod("q", Some("runner"))).is_err());
    m.create_service_account(NS, account("runner")).unwrap();
    m.create_pod(NS, pod("q", Some("runner"))).unwrap();
}

/// An existing namespace without `default` gets one when the controller starts; stopping the
/// controller cancels what is pending; a `default` created by hand first is kept.
#[test]
fn controller_start_stop_and_a_hand_made_default() {
    let mut m = ClusterModel::default();
    m.ensure_namespace("old");
    m.set_service_account_controller(Some(secs(1)));
    m.advance(secs(1));
    assert!(m.get_service_account("old", "default").is_ok());
    m.ensure_namespace("other");
    m.set_service_account_controller(None);
    m.advance(secs(5));
    assert!(m.get_service_account("other", "default").is_err());
    let mut m = admitting();
    let by_hand = m.create_service_account(NS, account("default")).unwrap();
    assert_eq!(m.next_due(), None);
    m.advance(secs(5));
    assert_eq!(m.get_service_account(NS, "default").unwrap(), by_hand);
}

/// Creates are checked like every other kind; deleting the namespace drops its accounts and
/// its pending `default`.
#[test]
fn account_create_refusals_and_namespace_deletion() {
    let mut m = admitting();
    assert!(matches!(
        m.create_service_account("missing", account("a")),
        Err(ModelError::NotFound {
            kind: Kind::Namespace,
            ..
        })
    ));
    assert!(matches!(
        m.create_service_account(NS, account("")),
        Err(ModelError::Invalid { .. })
    ));
    m.create_service_account(NS, account("a")).unwrap();
    assert!(matches!(
        m.create_service_account(NS, account("a")),
        Err(ModelError::AlreadyExists {
            kind: Kind::ServiceAccount,
            ..
        })
    ));
    m.delete_namespace(NS, &Preconditions::default()).unwrap();
    assert_eq!(m.next_due(), None);
    m.create_namespace(namespace(NS)).unwrap();
    assert!(m.get_service_account(NS, "a").is_err());
}

/// Pending account creations interleave with kubelet steps in time order.
#[test]
fn account_creation_runs_in_time_order_with_the_kubelet() {
    let mut m = admitting();
    m.set_service_account_admission(false);
    m.create_pod(NS, pod("p", None)).unwrap();
    // The pod is scheduled at once and starts 1 s later; the account comes at 2 s.
    m.advance(secs(1));
    assert!(m.get_service_account(NS, "default").is_err());
    m.advance(secs(1));
    let account = m.get_service_account(NS, "default").unwrap();
    assert_eq!(
        account.metadata.creation_timestamp.map(|t| t.0),
        Some(add(
            Timestamp::from_second(DEFAULT_EPOCH_SECONDS).unwrap(),
            secs(2)
        ))
    );
}
