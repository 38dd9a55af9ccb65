//! Tests of the classification table (deploy.md § Classification; scenarios C1–C12).

use super::*;
use crate::facts::ObservedPod;
use crate::fence::Fence;
use crate::startup::Missing;
use crate::testkit::{INTENT, OTHER_INTENT, POD, own_pod, running, settled, terminated, waiting};

fn pod_in(state: StartupState) -> ObservedPod {
    let agent = match state {
        StartupState::Started => running(),
        StartupState::Terminated => terminated(1, Some("Error")),
        StartupState::NeverStartedRecoverable => waiting(Some("ContainerCreating"), None),
        StartupState::NeverStartedProvablyBroken => waiting(Some("InvalidImageName"), None),
        StartupState::NeverStartedPullFailing(PullFailure::Unauthorized) => {
            waiting(Some("ErrImagePull"), Some("401 Unauthorized"))
        }
        StartupState::NeverStartedPullFailing(PullFailure::ManifestUnknown) => {
            waiting(Some("ErrImagePull"), Some("manifest unknown"))
        }
        StartupState::NeverStartedPullFailing(PullFailure::ArchMismatch) => {
            waiting(Some("ImagePullBackOff"), Some("no match for platform"))
        }
        StartupState::NeverStartedMissingSecret => waiting(
            Some("CreateContainerConfigError"),
            Some("secret \"team-creds\" not found"),
        ),
    };
    let pod = own_pod(agent);
    assert_eq!(
        settled(&pod).startup(),
        state,
        "fixture decodes as intended"
    );
    pod
}

fn classify_pod(pod: &ObservedPod, desired: &str) -> Action {
    classify(Some(&settled(pod)), desired)
}

fn observed_fence() -> Fence {
    Fence::new("u1".into(), "100".into())
}

/// C1: no pod → Create.
#[test]
fn c1_no_pod_creates() {
    assert_eq!(classify(None, INTENT), Action::Create);
}

/// C2: Started with the same intent → NoOp(name), intent matching.
#[test]
fn c2_started_same_intent_is_noop() {
    assert_eq!(
        classify_pod(&pod_in(StartupState::Started), INTENT),
        Action::NoOp {
            name: POD.into(),
            intent_matches: true
        }
    );
}

/// C3: Started with a different intent → still NoOp; a live agent is never killed.
#[test]
fn c3_started_different_intent_is_noop() {
    assert_eq!(
        classify_pod(&pod_in(StartupState::Started), OTHER_INTENT),
        Action::NoOp {
            name: POD.into(),
            intent_matches: false
        }
    );
}

/// C4: deletion-marked in each startup state → AwaitDisappearance (checked before row 3).
#[test]
fn c4_deletion_mark_beats_every_startup_state() {
    for state in StartupState::ALL {
        for desired in [INTENT, OTHER_INTENT] {
            let mut pod = pod_in(state);
            pod.marks.deletion_marked = true;
            assert_eq!(
                classify_pod(&pod, desired),
                Action::AwaitDisappearance {
                    name: POD.into(),
                    uid: "u1".into()
                },
                "{state:?}"
            );
        }
    }
}

/// A referenced Secret confirmed absent → ReportMissingSecret naming it, whatever the intent:
/// never a delete (deploy.md § Credentials from the cluster).
#[test]
fn a_missing_referenced_secret_is_reported_never_deleted() {
    for desired in [INTENT, OTHER_INTENT] {
        assert_eq!(
            classify_pod(&pod_in(StartupState::NeverStartedMissingSecret), desired),
            Action::ReportMissingSecret {
                name: POD.into(),
                missing: Missing {
                    name: "team-creds".into(),
                    ..Missing::default()
                }
            }
        );
    }
}

/// C5: Terminated → Delete with exactly the observed fence.
#[test]
fn c5_terminated_deletes_with_observed_fence() {
    match classify_pod(&pod_in(StartupState::Terminated), INTENT) {
        Action::Delete(d) => {
            assert_eq!(d.name(), POD);
            assert_eq!(d.fence(), &observed_fence());
        }
        other => panic!("{other:?}"),
    }
}

/// C6: ProvablyBroken → Delete, whatever the intent.
#[test]
fn c6_provably_broken_deletes() {
    for desired in [INTENT, OTHER_INTENT] {
        assert!(matches!(
            classify_pod(&pod_in(StartupState::NeverStartedProvablyBroken), desired),
            Action::Delete(_)
        ));
    }
}

/// C7: Recoverable with the same intent → Observe.
#[test]
fn c7_recoverable_same_intent_observes() {
    assert_eq!(
        classify_pod(&pod_in(StartupState::NeverStartedRecoverable), INTENT),
        Action::Observe { name: POD.into() }
    );
}

/// C8: 100 classifications of a recoverable same-intent pod never delete (no age input).
#[test]
fn c8_recoverable_same_intent_never_deletes() {
    let pod = pod_in(StartupState::NeverStartedRecoverable);
    for created in 0..100 {
        let mut pod = pod.clone();
        pod.marks.created_at_unix = Some(created * 86_400);
        assert!(!matches!(classify_pod(&pod, INTENT), Action::Delete(_)));
    }
}

/// C9: Recoverable with a different intent → Delete (the wedge escape).
#[test]
fn c9_recoverable_different_intent_deletes() {
    match classify_pod(&pod_in(StartupState::NeverStartedRecoverable), OTHER_INTENT) {
        Action::Delete(d) => assert_eq!(d.fence(), &observed_fence()),
        other => panic!("{other:?}"),
    }
}

/// C10: Recoverable without an intent annotation → Delete.
#[test]
fn c10_recoverable_no_intent_deletes() {
    let mut pod = pod_in(StartupState::NeverStartedRecoverable);
    pod.marks.create_intent = None;
    assert!(matches!(classify_pod(&pod, INTENT), Action::Delete(_)));
}

/// C11: each pull-failure kind, with the same or a different intent → Report, never Delete.
#[test]
fn c11_each_pull_failure_reports() {
    for kind in PullFailure::ALL {
        for desired in [INTENT, OTHER_INTENT] {
            assert_eq!(
                classify_pod(
                    &pod_in(StartupState::NeverStartedPullFailing(kind)),
                    desired
                ),
                Action::Report {
                    name: POD.into(),
                    kind
                }
            );
        }
    }
}

/// C12: every Delete-producing state carries the observed `{uid, resourceVersion}`.
#[test]
fn c12_every_delete_carries_the_observed_fence() {
    for state in StartupState::ALL {
        for desired in [INTENT, OTHER_INTENT] {
            for (uid, rv) in [("u1", "100"), ("other-uid", "7")] {
                let mut pod = pod_in(state);
                pod.marks.uid = Some(uid.into());
                pod.marks.resource_version = Some(rv.into());
                if let Action::Delete(d) = classify_pod(&pod, desired) {
                    assert_eq!(d.fence().uid(), uid);
                    assert_eq!(d.fence().resource_version(), rv);
                    assert_eq!(d.name(), POD);
                }
            }
        }
    }
}
