//! Tests of Secret references and dropping this attempt's own Secret (deploy.md § Losing the
//! create race, step 2).

use super::*;
use crate::binding::Owner;
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, own_pod, own_secret, running, waiting};

fn pod_referencing(secret: &str) -> ObservedPod {
    let mut pod = own_pod(waiting(Some("ErrImagePull"), None));
    pod.facts.env_from_secret = Some(secret.into());
    pod
}

/// An unreferenced, listed, verified own Secret is dropped with its uid.
#[test]
fn own_unreferenced_secret_is_dropped() {
    let d = own_secret_deletion(
        "mine",
        &[own_pod(running())],
        &[own_secret("mine", None), own_secret("theirs", None)],
        &Owner::apiary(AGENT_ID),
    )
    .unwrap();
    assert_eq!((d.name(), d.uid()), ("mine", "s-mine"));
}

/// A Secret any listed pod references is kept — a still-pulling one, or a foreign one.
#[test]
fn referenced_own_secret_is_kept() {
    let pods = [pod_referencing("mine")];
    assert!(
        own_secret_deletion(
            "mine",
            &pods,
            &[own_secret("mine", None)],
            &Owner::apiary(AGENT_ID)
        )
        .is_none()
    );
    let mut foreign = pod_referencing("mine");
    foreign.marks.agent_id = Some(OTHER_AGENT_ID.into());
    assert!(
        own_secret_deletion(
            "mine",
            &[foreign],
            &[own_secret("mine", None)],
            &Owner::apiary(AGENT_ID)
        )
        .is_none()
    );
}

/// Not listed, or not verified: nothing proves which object to delete.
#[test]
fn unlisted_or_unverified_own_secret_is_not_dropped() {
    assert!(
        own_secret_deletion(
            "mine",
            &[],
            &[own_secret("other", None)],
            &Owner::apiary(AGENT_ID)
        )
        .is_none()
    );
    let mut forged = own_secret("mine", None);
    forged.marks.agent_id = Some(OTHER_AGENT_ID.into());
    assert!(own_secret_deletion("mine", &[], &[forged], &Owner::apiary(AGENT_ID)).is_none());
}

/// References collect every listed pod's envFrom Secret.
#[test]
fn references_of_all_listed_pods() {
    let mut no_ref = own_pod(running());
    no_ref.facts.env_from_secret = None;
    let pods = [pod_referencing("a"), no_ref, pod_referencing("b")];
    let refs = referenced_secrets(&pods);
    assert_eq!(refs.into_iter().collect::<Vec<_>>(), ["a", "b"]);
}
