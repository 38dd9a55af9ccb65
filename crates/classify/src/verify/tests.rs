//! Tests of verification (deploy.md § Verification; scenarios O8, O9, O10, O12).

use super::*;
use crate::binding::Owner;
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, POD, own_pod, own_secret, running, waiting};

/// O8: own pod verifies and carries its name and fence.
#[test]
fn o8_own_pod_verifies() {
    let v = verify_pod(&own_pod(running()), &Owner::apiary(AGENT_ID)).expect("verified");
    assert_eq!(v.name(), POD);
    assert_eq!(v.fence(), &Fence::new("u1".into(), "100".into()));
    assert!(!v.deletion_marked());
    assert_eq!(v.created_at_unix(), Some(1_000));
}

/// O8: every broken mark makes the pod unverified.
#[test]
fn o8_each_missing_or_wrong_mark_is_unverified() {
    type Mutation = fn(&mut ObjectMarks);
    let mutations: [(&str, Mutation); 14] = [
        ("labels stripped", |m| {
            m.managed_by = None;
            m.binding_version = None;
        }),
        ("managed-by missing", |m| m.managed_by = None),
        ("managed-by other", |m| m.managed_by = Some("helm".into())),
        ("binding 999", |m| m.binding_version = Some("999".into())),
        ("binding missing", |m| m.binding_version = None),
        ("other agent", |m| m.agent_id = Some(OTHER_AGENT_ID.into())),
        ("annotation missing", |m| m.agent_id = None),
        ("id prefix only", |m| {
            m.agent_id = Some(AGENT_ID[..32].into())
        }),
        ("uid missing", |m| m.uid = None),
        ("uid empty", |m| m.uid = Some(String::new())),
        ("rv missing", |m| m.resource_version = None),
        ("rv empty", |m| m.resource_version = Some(String::new())),
        ("name missing", |m| m.name = None),
        ("name empty", |m| m.name = Some(String::new())),
    ];
    for (what, mutate) in mutations {
        let mut pod = own_pod(running());
        mutate(&mut pod.marks);
        assert!(
            verify_pod(&pod, &Owner::apiary(AGENT_ID)).is_none(),
            "{what}"
        );
    }
}

/// O8: the comparison is byte equality, not case-insensitive.
#[test]
fn o8_agent_id_compared_bytewise() {
    let mut pod = own_pod(running());
    pod.marks.agent_id = Some(AGENT_ID.to_uppercase());
    assert!(verify_pod(&pod, &Owner::apiary(AGENT_ID)).is_none());
}

/// O9: a deletion-marked pod keeps its fence and reports the mark.
#[test]
fn o9_deletion_timestamp_keeps_fence() {
    let mut pod = own_pod(running());
    pod.marks.deletion_marked = true;
    let v = verify_pod(&pod, &Owner::apiary(AGENT_ID)).unwrap();
    assert!(v.deletion_marked());
    assert_eq!(v.fence().uid(), "u1");
    assert_eq!(v.fence().resource_version(), "100");
}

/// O10: no create-intent annotation means recorded intent none, which never matches.
#[test]
fn o10_no_intent_annotation_is_none() {
    let mut pod = own_pod(running());
    pod.marks.create_intent = None;
    let v = verify_pod(&pod, &Owner::apiary(AGENT_ID)).unwrap();
    assert_eq!(v.recorded_intent(), None);
    assert!(!v.intent_matches(""));
    let v = verify_pod(&own_pod(running()), &Owner::apiary(AGENT_ID)).unwrap();
    assert!(v.intent_matches(crate::testkit::INTENT));
    assert!(!v.intent_matches(crate::testkit::OTHER_INTENT));
}

/// O12: Secret verification: own, other agent, no labels, binding 999.
#[test]
fn o12_secret_verification() {
    let own = own_secret("s1", Some(5));
    let v = verify_secret(&own, &Owner::apiary(AGENT_ID)).expect("own verifies");
    assert_eq!(v.name(), Some("s1"));
    assert_eq!(v.uid(), Some("s-s1"));
    assert_eq!(v.created_at_unix(), Some(5));
    let mut other = own.clone();
    other.marks.agent_id = Some(OTHER_AGENT_ID.into());
    assert!(verify_secret(&other, &Owner::apiary(AGENT_ID)).is_none());
    let mut bare = own.clone();
    bare.marks.managed_by = None;
    bare.marks.binding_version = None;
    assert!(verify_secret(&bare, &Owner::apiary(AGENT_ID)).is_none());
    let mut v999 = own.clone();
    v999.marks.binding_version = Some("999".into());
    assert!(verify_secret(&v999, &Owner::apiary(AGENT_ID)).is_none());
    let mut managed = own;
    managed.marks.managed_by = Some("other".into());
    assert!(verify_secret(&managed, &Owner::apiary(AGENT_ID)).is_none());
}

/// A Secret without name or uid verifies but cannot be deleted (a delete needs the uid).
#[test]
fn secret_deletion_needs_name_and_uid() {
    let v = verify_secret(&own_secret("s1", None), &Owner::apiary(AGENT_ID)).unwrap();
    let d = v.deletion().unwrap();
    assert_eq!((d.name(), d.uid()), ("s1", "s-s1"));
    let mut no_uid = own_secret("s1", None);
    no_uid.marks.uid = None;
    assert!(
        verify_secret(&no_uid, &Owner::apiary(AGENT_ID))
            .unwrap()
            .deletion()
            .is_none()
    );
    let mut no_name = own_secret("s1", None);
    no_name.marks.name = Some(String::new());
    assert!(
        verify_secret(&no_name, &Owner::apiary(AGENT_ID))
            .unwrap()
            .deletion()
            .is_none()
    );
}

/// Settling a pending pod needs the Secret answer; a settled pod ignores it.
#[test]
fn settle_pending_needs_answer() {
    let pod = own_pod(waiting(Some("CreateContainerConfigError"), None));
    let v = verify_pod(&pod, &Owner::apiary(AGENT_ID)).unwrap();
    let pending = v.clone().settle(None).unwrap_err();
    assert_eq!(pending.secret, format!("{POD}-0000abcd"));
    assert_eq!(
        v.clone().settle(Some(false)).unwrap().startup(),
        StartupState::NeverStartedProvablyBroken
    );
    assert_eq!(
        v.settle(Some(true)).unwrap().startup(),
        StartupState::NeverStartedRecoverable
    );
    let started = verify_pod(&own_pod(running()), &Owner::apiary(AGENT_ID)).unwrap();
    assert_eq!(
        started.settle(Some(false)).unwrap().startup(),
        StartupState::Started
    );
}

/// `view_pod` distinguishes absent, foreign, pending and settled.
#[test]
fn view_pod_cases() {
    assert_eq!(view_pod(None, &Owner::apiary(AGENT_ID)), PodView::Absent);
    assert_eq!(
        view_pod(Some(&own_pod(running())), &Owner::apiary(OTHER_AGENT_ID)),
        PodView::Foreign
    );
    assert!(matches!(
        view_pod(
            Some(&own_pod(waiting(Some("CreateContainerConfigError"), None))),
            &Owner::apiary(AGENT_ID),
        ),
        PodView::Pending(_)
    ));
    match view_pod(Some(&own_pod(running())), &Owner::apiary(AGENT_ID)) {
        PodView::Settled(s) => {
            assert_eq!(s.startup(), StartupState::Started);
            assert_eq!(
                s.pod().facts().env_from_secret.as_deref(),
                Some("apiary-research-bot-1-72bea12366a3-0000abcd")
            );
        }
        other => panic!("{other:?}"),
    }
}

/// The deletion a verified pod authorises carries exactly its name and fence.
#[test]
fn deletion_carries_observed_fence() {
    let v = verify_pod(&own_pod(running()), &Owner::apiary(AGENT_ID)).unwrap();
    let d = v.deletion();
    assert_eq!(d.name(), POD);
    assert_eq!(d.fence(), v.fence());
}

/// Bindings (deploy.md § Bindings): marks written under one binding verify only under an owner
/// of that binding, for pods and Secrets alike, even when the agent id is the same.
#[test]
fn verification_compares_under_the_owners_binding() {
    use crate::binding::{APIARY, Binding, Owner};
    // A second binding that differs from apiary's in its manager only (the buzz provider's,
    // which differs in every key, is checked the same way in `apiary-buzz`).
    const OTHER: Binding = Binding {
        managed_by: "other-manager",
        ..APIARY
    };
    let mut other_pod = own_pod(running());
    other_pod.marks.managed_by = Some("other-manager".to_owned());
    let mut other_secret = own_secret("s1", None);
    other_secret.marks.managed_by = Some("other-manager".to_owned());
    let other = Owner::new(OTHER, AGENT_ID);
    let apiary = Owner::new(APIARY, AGENT_ID);
    assert!(verify_pod(&other_pod, &other).is_some());
    assert!(verify_secret(&other_secret, &other).is_some());
    assert!(verify_pod(&other_pod, &apiary).is_none());
    assert!(verify_secret(&other_secret, &apiary).is_none());
    assert!(verify_pod(&own_pod(running()), &other).is_none());
    assert!(verify_secret(&own_secret("s1", None), &other).is_none());
    assert_eq!(
        view_pod(Some(&own_pod(running())), &other),
        PodView::Foreign
    );
}
