//! Unit tests of pod deletion: preconditions (409/404), graceful deletion on the model clock,
//! the default 30 s grace, pods that vanish at once, re-deletes, and that a marked pod is never
//! started. Pure; no I/O.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::kubelet::PodScript;
use crate::model::test_support::*;
use crate::model::*;

/// Delete preconditions: a wrong uid or resourceVersion answers 409 Conflict with the
/// apiserver's message and leaves the object; an absent object answers 404.
#[test]
fn delete_preconditions_conflict_and_not_found() {
    let mut m = model();
    let s = m.create_secret(NS, secret_named("s")).unwrap();
    let err = m
        .delete_secret(
            NS,
            "s",
            &Preconditions {
                uid: Some("other".into()),
                resource_version: None,
            },
        )
        .unwrap_err();
    assert_eq!((err.code(), err.reason()), (409, "Conflict"));
    assert!(err.to_string().starts_with(
        "Operation cannot be fulfilled on Secret \"s\": the UID in the precondition (other) \
         does not match the UID in record ("
    ));
    let p = m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    let stale = Preconditions {
        uid: p.metadata.uid.clone(),
        resource_version: Some("1".into()),
    };
    let err = m.delete_pod(NS, "p", &stale, None).unwrap_err();
    assert_eq!(err.reason(), "Conflict");
    assert!(
        err.to_string()
            .contains("the ResourceVersion in the precondition (1) does not match")
    );
    assert!(m.get_pod(NS, "p").is_ok());
    let ok = Preconditions {
        uid: s.metadata.uid.clone(),
        resource_version: None,
    };
    m.delete_secret(NS, "s", &ok).unwrap();
    let err = m.delete_secret(NS, "s", &ok).unwrap_err();
    assert_eq!((err.code(), err.reason()), (404, "NotFound"));
    assert_eq!(err.to_string(), "secrets \"s\" not found");
}

/// Graceful deletion: a running pod gets deletionTimestamp = now + its grace (60 s) and a new
/// rv, stays visible (phase Running) through the grace, and is removed when it has elapsed.
#[test]
fn graceful_deletion_keeps_running_pod_for_its_grace() {
    let mut m = model();
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(2));
    let running = m.get_pod(NS, "p").unwrap();
    assert!(agent_state(&running).running.is_some());
    let deleted_at = m.now();
    let answer = m.delete_pod(NS, "p", &fence(&running), None).unwrap();
    let PodDeletion::Marked(marked) = answer else {
        panic!("a running pod must be marked, not removed: {answer:?}");
    };
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(60));
    assert_eq!(
        marked.metadata.deletion_timestamp,
        Some(Time(add(deleted_at, secs(60))))
    );
    assert!(rv_of(&marked.metadata) > rv_of(&running.metadata));
    m.advance(secs(59));
    let still = m.get_pod(NS, "p").unwrap();
    assert_eq!(phase(&still).as_deref(), Some("Running"));
    assert!(still.metadata.deletion_timestamp.is_some());
    m.advance(secs(1));
    assert_eq!(m.get_pod(NS, "p").unwrap_err().reason(), "NotFound");
}

/// Without terminationGracePeriodSeconds on an inserted pod the grace is 30 s; a create
/// defaults the field to 30.
#[test]
fn default_grace_is_30_seconds() {
    let mut m = model();
    let mut pod = pod_named("p", IMAGE, None);
    pod.metadata.namespace = Some(NS.into());
    if let Some(spec) = pod.spec.as_mut() {
        spec.termination_grace_period_seconds = None;
        spec.node_name = Some("node-1".into());
    }
    let inserted = m.insert_pod(pod).unwrap();
    let answer = m.delete_pod(NS, "p", &fence(&inserted), None).unwrap();
    assert_eq!(
        answer.pod().metadata.deletion_grace_period_seconds,
        Some(30)
    );
    m.advance(secs(29));
    assert!(m.get_pod(NS, "p").is_ok());
    m.advance(secs(1));
    assert!(m.get_pod(NS, "p").is_err());
    let mut fresh = pod_named("q", IMAGE, None);
    if let Some(spec) = fresh.spec.as_mut() {
        spec.termination_grace_period_seconds = None;
    }
    let created = m.create_pod(NS, fresh).unwrap();
    assert_eq!(
        created
            .spec
            .and_then(|s| s.termination_grace_period_seconds),
        Some(30)
    );
}

/// Terminal (Failed/Succeeded) and never-bound pods are removed at once: as on the real
/// apiserver (tests/differential.rs in apiserver-sim), a MODIFIED event writes the zero grace
/// (`deletionTimestamp` set, `deletionGracePeriodSeconds: 0`), then a DELETED event removes it,
/// and the answer carries that mark.
#[test]
fn terminal_and_unscheduled_pods_vanish_at_once() {
    let mut m = model();
    m.script_pods_named(
        NS,
        "crashed",
        PodScript::Exit {
            after: secs(1),
            run_for: Duration::ZERO,
            exit_code: 1,
        },
    );
    m.create_pod(NS, pod_named("crashed", IMAGE, None)).unwrap();
    m.script_pods_named(NS, "pending", PodScript::Unschedulable);
    m.create_pod(NS, pod_named("pending", IMAGE, None)).unwrap();
    m.advance(secs(2));
    for name in ["crashed", "pending"] {
        let pod = m.get_pod(NS, name).unwrap();
        let before = m.resource_version();
        let answer = m.delete_pod(NS, name, &fence(&pod), None).unwrap();
        let PodDeletion::Removed(removed) = answer else {
            panic!("{name}: {answer:?}");
        };
        assert_eq!(removed.metadata.deletion_grace_period_seconds, Some(0));
        assert_eq!(
            removed.metadata.deletion_timestamp.as_ref().map(|t| t.0),
            Some(m.now())
        );
        assert!(m.get_pod(NS, name).is_err(), "{name}");
        let events = m.events_since(before).unwrap();
        let types: Vec<EventType> = events.iter().map(|e| e.event_type).collect();
        assert_eq!(types, [EventType::Modified, EventType::Deleted], "{name}");
        assert_eq!(events[0].resource_version, before + 1);
        assert_eq!(events[1].resource_version, before + 2);
    }
}

/// A second delete of a marked pod changes nothing; grace 0 removes it at once.
#[test]
fn redelete_of_marked_pod() {
    let mut m = model();
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(2));
    let pod = m.get_pod(NS, "p").unwrap();
    let marked = m.delete_pod(NS, "p", &fence(&pod), None).unwrap();
    let again = m
        .delete_pod(NS, "p", &Preconditions::default(), None)
        .unwrap();
    assert_eq!(again, marked);
    let forced = m
        .delete_pod(NS, "p", &Preconditions::default(), Some(0))
        .unwrap();
    assert!(matches!(forced, PodDeletion::Removed(_)));
    assert!(m.get_pod(NS, "p").is_err());
}

/// The deletion mark freezes the kubelet: a ContainerCreating pod marked for deletion does not
/// start during its grace, and is removed at the end.
#[test]
fn marked_pod_is_not_started() {
    let mut m = model();
    m.script_pods_named(NS, "p", PodScript::Start { after: secs(30) });
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(1));
    let pod = m.get_pod(NS, "p").unwrap();
    m.delete_pod(NS, "p", &fence(&pod), None).unwrap();
    m.advance(secs(59));
    assert!(agent_state(&m.get_pod(NS, "p").unwrap()).waiting.is_some());
    m.advance(secs(1));
    assert!(m.get_pod(NS, "p").is_err());
}

/// `pod_named("p")` with a finalizer, in [`NS`].
fn finalized(name: &str) -> k8s_openapi::api::core::v1::Pod {
    let mut pod = pod_named(name, IMAGE, None);
    pod.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    pod
}

/// A finalizer keeps a gracefully deleted pod past its grace (its kubelet done, the grace
/// written down to 0, the deletion mark kept); removing the finalizer removes it at once, with
/// a DELETED event.
#[test]
fn finalizer_keeps_a_deleted_pod_until_removed() {
    let mut m = model();
    m.create_pod(NS, finalized("p")).unwrap();
    m.advance(secs(2));
    let running = m.get_pod(NS, "p").unwrap();
    assert!(agent_state(&running).running.is_some());
    let answer = m.delete_pod(NS, "p", &fence(&running), None).unwrap();
    assert!(matches!(answer, PodDeletion::Marked(_)), "{answer:?}");
    m.advance(secs(60));
    let held = m.get_pod(NS, "p").expect("a finalizer keeps the pod");
    assert!(held.metadata.deletion_timestamp.is_some());
    assert_eq!(held.metadata.deletion_grace_period_seconds, Some(0));
    m.advance(secs(3600));
    assert!(
        m.get_pod(NS, "p").is_ok(),
        "kept for as long as the finalizer"
    );
    let before = m.resource_version();
    m.modify_pod(NS, "p", |pod| pod.metadata.finalizers = None)
        .unwrap();
    assert_eq!(m.get_pod(NS, "p").unwrap_err().reason(), "NotFound");
    let types: Vec<EventType> = m
        .events_since(before)
        .unwrap()
        .iter()
        .map(|e| e.event_type)
        .collect();
    assert_eq!(types, [EventType::Modified, EventType::Deleted]);
}

/// A finalizer keeps even a pod that would vanish at once (never bound, or deleted with grace
/// 0): it is marked, not removed, and goes when the finalizer does.
#[test]
fn finalizer_keeps_a_pod_that_would_vanish_at_once() {
    let mut m = model();
    m.script_pods_named(NS, "pending", PodScript::Unschedulable);
    m.create_pod(NS, finalized("pending")).unwrap();
    m.advance(secs(2));
    let pod = m.get_pod(NS, "pending").unwrap();
    let answer = m.delete_pod(NS, "pending", &fence(&pod), None).unwrap();
    let PodDeletion::Marked(marked) = answer else {
        panic!("a finalizer keeps it: {answer:?}");
    };
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(0));
    m.advance(secs(600));
    assert!(m.get_pod(NS, "pending").is_ok());
    let forced = m
        .delete_pod(NS, "pending", &Preconditions::default(), Some(0))
        .unwrap();
    assert!(matches!(forced, PodDeletion::Marked(_)), "{forced:?}");
    assert!(
        m.get_pod(NS, "pending").is_ok(),
        "no force removes it either"
    );
    m.modify_pod(NS, "pending", |pod| pod.metadata.finalizers = Some(vec![]))
        .unwrap();
    assert!(m.get_pod(NS, "pending").is_err());
}

/// Changing a finalizer-free pod that is still in its grace does not remove it early.
#[test]
fn modifying_a_pod_in_its_grace_keeps_it() {
    let mut m = model();
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(2));
    let pod = m.get_pod(NS, "p").unwrap();
    m.delete_pod(NS, "p", &fence(&pod), None).unwrap();
    m.modify_pod(NS, "p", |pod| pod.metadata.finalizers = None)
        .unwrap();
    assert!(m.get_pod(NS, "p").is_ok());
    m.advance(secs(60));
    assert!(m.get_pod(NS, "p").is_err());
}

/// The real apiserver's DefaultTolerationSeconds admission: a pod without tolerations gets the
/// two 300 s NoExecute tolerations, after any of its own; one that already tolerates a taint
/// (its key with Exists, or an empty key with Exists) keeps only its own for that taint.
#[test]
fn create_adds_the_default_tolerations_like_the_real_apiserver() {
    use k8s_openapi::api::core::v1::{PodSpec, Toleration};
    let mut pod = Pod {
        spec: Some(PodSpec {
            tolerations: Some(vec![Toleration {
                key: Some("dedicated".to_owned()),
                operator: Some("Equal".to_owned()),
                value: Some("agents".to_owned()),
                ..Toleration::default()
            }]),
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    super::add_default_tolerations(&mut pod);
    let json = serde_json::to_value(&pod.spec.as_ref().unwrap().tolerations).unwrap();
    assert_eq!(
        json,
        serde_json::json!([
            {"key": "dedicated", "operator": "Equal", "value": "agents"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ])
    );
    let mut everything = Pod {
        spec: Some(PodSpec {
            tolerations: Some(vec![Toleration {
                operator: Some("Exists".to_owned()),
                ..Toleration::default()
            }]),
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    super::add_default_tolerations(&mut everything);
    assert_eq!(
        everything.spec.unwrap().tolerations.unwrap().len(),
        1,
        "tolerates every taint already"
    );
}
