//! Tests of the redacted condition text (deploy.md § Redacted condition text; scenario O13).

use super::*;
use crate::testkit::{facts, false_condition, running, terminated, waiting};

/// O13: the waiting reason is shown, the waiting message never.
#[test]
fn o13_waiting_message_never_appears() {
    let f = facts(waiting(Some("ErrImagePull"), Some("token=SUPERSECRET")));
    let text = condition_text(&f).unwrap();
    assert_eq!(text, "the container is waiting, reason ErrImagePull");
}

/// O13: the exit code and reason are shown, the terminated message never.
#[test]
fn o13_terminated_message_never_appears() {
    let f = facts(terminated(1, Some("Error")));
    assert_eq!(
        condition_text(&f).unwrap(),
        "the container exited with code 1 (Error)"
    );
    let f = facts(terminated(137, None));
    assert_eq!(
        condition_text(&f).unwrap(),
        "the container exited with code 137"
    );
    let f = facts(terminated(2, Some("")));
    assert_eq!(
        condition_text(&f).unwrap(),
        "the container exited with code 2"
    );
}

/// O13: the first False condition's message is included; empty parts are dropped.
#[test]
fn o13_condition_message_appears() {
    let mut f = facts(None);
    f.conditions = vec![
        crate::facts::ConditionFacts {
            kind: "Initialized".into(),
            status: "True".into(),
            reason: None,
            message: None,
        },
        false_condition(
            "PodScheduled",
            "Unschedulable",
            "0/3 nodes are available: Insufficient memory",
        ),
        false_condition("Ready", "NotReady", "x"),
    ];
    assert_eq!(
        condition_text(&f).unwrap(),
        "pod condition PodScheduled is false: Unschedulable: 0/3 nodes are available: Insufficient memory"
    );
    f.conditions[1].reason = Some(String::new());
    assert_eq!(
        condition_text(&f).unwrap(),
        "pod condition PodScheduled is false: 0/3 nodes are available: Insufficient memory"
    );
    f.conditions[1].message = None;
    assert_eq!(
        condition_text(&f).unwrap(),
        "pod condition PodScheduled is false"
    );
}

/// A waiting container without a reason falls through to conditions.
#[test]
fn waiting_without_reason_falls_through() {
    let mut f = facts(waiting(None, Some("secret")));
    f.conditions = vec![false_condition("PodScheduled", "Unschedulable", "m")];
    assert_eq!(
        condition_text(&f).unwrap(),
        "pod condition PodScheduled is false: Unschedulable: m"
    );
    let mut f = facts(waiting(Some(""), None));
    f.phase = Some("Pending".into());
    assert_eq!(condition_text(&f).unwrap(), "the pod is Pending");
}

/// O13: phase fallback, and none at all.
#[test]
fn o13_phase_fallback_and_none() {
    let f = facts(running());
    assert_eq!(condition_text(&f).unwrap(), "the pod is Running");
    let mut f = facts(None);
    f.phase = None;
    assert_eq!(condition_text(&f), None);
    f.phase = Some(String::new());
    assert_eq!(condition_text(&f), None);
    assert_eq!(
        LatestCondition::from_read(Some(&f)).to_string(),
        "no condition reported by the cluster"
    );
}

/// The latest condition says when the pod is gone or unreadable.
#[test]
fn latest_condition_texts() {
    assert_eq!(
        LatestCondition::from_read(None).to_string(),
        "the pod no longer exists"
    );
    assert_eq!(
        LatestCondition::Unreadable("boom".into()).to_string(),
        "the pod's condition could not be read: boom"
    );
    let f = facts(terminated(1, Some("Error")));
    assert_eq!(
        LatestCondition::from_read(Some(&f)),
        LatestCondition::Reported("the container exited with code 1 (Error)".into())
    );
}
