//! Unit tests pinning what every kind shares (deploy.md § Semantics relied on): stamping, the
//! shared resourceVersion counter, create refusals (404/409/422), inserts that keep what they
//! carry, namespaces, the Status bodies of errors, serialization and value-free `Debug`. Pure;
//! no I/O.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStatus, Namespace, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::error::{Kind, ModelError};
use crate::model::test_support::*;
use crate::model::*;

/// A create stamps uid, resourceVersion and creationTimestamp from the model clock, and every
/// object kind shares one increasing resourceVersion counter.
#[test]
fn create_stamps_uid_rv_and_creation_timestamp() {
    let mut m = model();
    m.advance(secs(5));
    let ns_rv = rv_of(&m.get_namespace(NS).unwrap().metadata);
    let s = m.create_secret(NS, secret_named("s")).unwrap();
    let p = m.create_pod(NS, pod_named("p", IMAGE, Some("s"))).unwrap();
    assert!(rv_of(&s.metadata) > ns_rv);
    assert_eq!(rv_of(&p.metadata), rv_of(&s.metadata) + 1);
    assert_eq!(m.resource_version(), rv_of(&p.metadata));
    assert_ne!(s.metadata.uid, p.metadata.uid);
    assert!(p.metadata.uid.as_deref().is_some_and(|u| u.len() == 36));
    assert_eq!(p.metadata.creation_timestamp, Some(Time(m.now())));
    assert_eq!(p.metadata.namespace.as_deref(), Some(NS));
    assert_eq!(phase(&p).as_deref(), Some("Pending"));
    assert_eq!(
        p.status.as_ref().and_then(|s| s.qos_class.as_deref()),
        Some("BestEffort")
    );
}

/// A create ignores any uid/resourceVersion/status the request carries.
#[test]
fn create_ignores_client_stamps() {
    let mut m = model();
    let mut pod = pod_named("p", IMAGE, None);
    pod.metadata.uid = Some("client-uid".into());
    pod.metadata.resource_version = Some("999999".into());
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        ..PodStatus::default()
    });
    let created = m.create_pod(NS, pod).unwrap();
    assert_ne!(created.metadata.uid.as_deref(), Some("client-uid"));
    assert_ne!(rv_of(&created.metadata), 999_999);
    assert_eq!(phase(&created).as_deref(), Some("Pending"));
}

/// Creating into a missing namespace answers 404 for the namespace, as the real apiserver does.
#[test]
fn create_in_missing_namespace_is_namespace_not_found() {
    let mut m = ClusterModel::default();
    for err in [
        m.create_secret("ghost", secret_named("s")).unwrap_err(),
        m.create_pod("ghost", pod_named("p", IMAGE, None))
            .unwrap_err(),
    ] {
        assert_eq!(err.code(), 404);
        assert_eq!(err.reason(), "NotFound");
        assert_eq!(err.to_string(), "namespaces \"ghost\" not found");
    }
    assert_eq!(m.resource_version(), 0, "a refused create changes nothing");
}

/// A taken name answers 409 AlreadyExists for every kind, and the stored object is unchanged.
#[test]
fn taken_name_is_already_exists() {
    let mut m = model();
    let first = m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    let err = m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap_err();
    assert_eq!((err.code(), err.reason()), (409, "AlreadyExists"));
    assert_eq!(err.to_string(), "pods \"p\" already exists");
    assert_eq!(m.get_pod(NS, "p").unwrap().metadata.uid, first.metadata.uid);
    m.create_secret(NS, secret_named("s")).unwrap();
    let err = m.create_secret(NS, secret_named("s")).unwrap_err();
    assert_eq!(err.to_string(), "secrets \"s\" already exists");
    let err = m
        .create_namespace(Namespace {
            metadata: ObjectMeta {
                name: Some(NS.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        })
        .unwrap_err();
    assert_eq!(err.reason(), "AlreadyExists");
}

/// Objects without a name are Invalid (422); an object naming another namespace is 400.
#[test]
fn validation_refusals() {
    let mut m = model();
    let mut nameless = pod_named("p", IMAGE, None);
    nameless.metadata.name = None;
    let err = m.create_pod(NS, nameless).unwrap_err();
    assert_eq!((err.code(), err.reason()), (422, "Invalid"));
    let mut elsewhere = secret_named("s");
    elsewhere.metadata.namespace = Some("other".into());
    let err = m.create_secret(NS, elsewhere).unwrap_err();
    assert_eq!((err.code(), err.reason()), (400, "BadRequest"));
}

/// Secrets: stringData merged into data, type Opaque, immutable kept.
#[test]
fn secret_create_normalizes_string_data() {
    let mut m = model();
    let s = m.create_secret(NS, secret_named("s")).unwrap();
    assert_eq!(s.string_data, None);
    assert_eq!(
        s.data
            .as_ref()
            .and_then(|d| d.get("K"))
            .map(|b| b.0.clone()),
        Some(b"v".to_vec())
    );
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    assert_eq!(s.immutable, Some(true));
    assert_eq!(m.get_secret(NS, "s").unwrap(), s);
}

/// insert_pod keeps status, uid, creationTimestamp and an explicit rv above the counter; the
/// counter moves there; the kubelet leaves the pod alone.
#[test]
fn insert_pod_keeps_what_it_carries() {
    let mut m = model();
    let mut pod = pod_named("foreign", IMAGE, None);
    pod.metadata.namespace = Some("elsewhere".into());
    pod.metadata.uid = Some("u-1".into());
    pod.metadata.resource_version = Some("100".into());
    let created = Time(Timestamp::from_second(1_000_000).unwrap());
    pod.metadata.creation_timestamp = Some(created.clone());
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        container_statuses: Some(vec![ContainerStatus {
            name: "agent".into(),
            state: Some(ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        }]),
        ..PodStatus::default()
    });
    let inserted = m.insert_pod(pod.clone()).unwrap();
    assert_eq!(inserted.metadata.uid.as_deref(), Some("u-1"));
    assert_eq!(inserted.metadata.resource_version.as_deref(), Some("100"));
    assert_eq!(inserted.metadata.creation_timestamp, Some(created));
    assert_eq!(m.resource_version(), 100);
    assert!(m.get_namespace("elsewhere").is_ok(), "namespace created");
    m.advance(secs(3600));
    assert_eq!(m.get_pod("elsewhere", "foreign").unwrap(), inserted);
    // A stale explicit rv is replaced by a fresh one.
    let mut again = pod_named("second", IMAGE, None);
    again.metadata.namespace = Some(NS.into());
    again.metadata.resource_version = Some("5".into());
    let second = m.insert_pod(again).unwrap();
    assert_eq!(rv_of(&second.metadata), 101);
    assert_eq!(m.insert_pod(pod).unwrap_err().reason(), "AlreadyExists");
    // A running pod without a node is still deleted gracefully: a kubelet reports it.
    let answer = m.delete_pod("elsewhere", "foreign", &Preconditions::default(), None);
    assert!(matches!(answer, Ok(PodDeletion::Marked(_))));
}

/// insert_secret keeps a chosen creationTimestamp (for GC age scenarios).
#[test]
fn insert_secret_keeps_creation_timestamp() {
    let mut m = model();
    let mut s = secret_named("old");
    s.metadata.namespace = Some(NS.into());
    let old = Time(Timestamp::from_second(DEFAULT_EPOCH_SECONDS - 1200).unwrap());
    s.metadata.creation_timestamp = Some(old.clone());
    let inserted = m.insert_secret(s).unwrap();
    assert_eq!(inserted.metadata.creation_timestamp, Some(old));
    let mut nameless = secret_named("x");
    nameless.metadata.namespace = None;
    assert_eq!(m.insert_secret(nameless).unwrap_err().reason(), "Invalid");
}

/// The clock never goes backwards; set_now to the past only runs what is due.
#[test]
fn clock_is_monotonic() {
    let mut m = model();
    let t0 = m.now();
    m.advance(secs(10));
    m.set_now(t0);
    assert_eq!(m.now(), add(t0, secs(10)));
    m.set_now(add(t0, secs(20)));
    assert_eq!(m.now(), add(t0, secs(20)));
}

/// Deleting a namespace removes its objects (DELETED events) and the namespace.
#[test]
fn namespace_delete_cascades() {
    let mut m = model();
    m.create_secret(NS, secret_named("s")).unwrap();
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    let before = m.resource_version();
    m.delete_namespace(NS, &Preconditions::default()).unwrap();
    assert!(m.get_namespace(NS).is_err());
    assert!(m.get_pod(NS, "p").is_err());
    assert!(m.get_secret(NS, "s").is_err());
    let events = m.events_since(before).unwrap();
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|e| e.event_type == EventType::Deleted));
    assert_eq!(events[2].object.kind(), Kind::Namespace);
}

/// Namespaces get phase Active and the metadata.name label; list works.
#[test]
fn namespace_shape() {
    let m = model();
    let ns = m.get_namespace(NS).unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
    assert_eq!(
        ns.metadata
            .labels
            .unwrap()
            .get("kubernetes.io/metadata.name")
            .map(String::as_str),
        Some(NS)
    );
    let page = m
        .list_namespaces(&ListOptions {
            label_selector: Some(format!("kubernetes.io/metadata.name={NS}")),
            ..ListOptions::default()
        })
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(
        m.get_namespace("nope").unwrap_err().to_string(),
        "namespaces \"nope\" not found"
    );
}

/// to_status carries the literal code, reason, message and details.
#[test]
fn errors_map_to_status_bodies() {
    let err = ModelError::AlreadyExists {
        kind: Kind::Pod,
        name: "p".into(),
    };
    let status = err.to_status();
    assert_eq!(status.code, Some(409));
    assert_eq!(status.reason.as_deref(), Some("AlreadyExists"));
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.message.as_deref(), Some("pods \"p\" already exists"));
    let details = status.details.unwrap();
    assert_eq!(details.kind.as_deref(), Some("pods"));
    assert_eq!(details.name.as_deref(), Some("p"));
    let expired = ModelError::Expired {
        message: "x".into(),
    };
    assert_eq!((expired.code(), expired.reason()), (410, "Expired"));
    assert_eq!(expired.to_status().details, None);
}

/// Object JSON carries the fields as the apiserver serializes them.
#[test]
fn object_to_json() {
    let mut m = model();
    let p = m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    let json = Object::Pod(p).to_json();
    assert_eq!(json["apiVersion"], "v1");
    assert_eq!(json["kind"], "Pod");
    assert_eq!(json["metadata"]["name"], "p");
    assert_eq!(json["status"]["phase"], "Pending");
}

/// Debug output of the model and of a Secret's watch event names the Secret and its keys but
/// never a value (secrets never reach Debug output).
#[test]
fn debug_output_has_no_secret_values() {
    let mut m = model();
    let mut s = secret_named("s");
    s.string_data = Some(BTreeMap::from([(
        "TOKEN".to_owned(),
        "SUPERSECRET".to_owned(),
    )]));
    m.create_secret(NS, s).unwrap();
    let model_debug = format!("{m:?}");
    assert!(model_debug.contains("agents/s"), "{model_debug}");
    let events = format!("{:?}", m.events_since(0).unwrap());
    assert!(events.contains("TOKEN"), "{events}");
    for text in [model_debug, events] {
        assert!(!text.contains("SUPERSECRET"), "{text}");
        // ByteString's Debug would spell the bytes; none of them may appear either.
        assert!(!text.contains("83, 85, 80"), "{text}");
    }
}
