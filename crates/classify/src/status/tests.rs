//! Tests of the status mapping (deploy.md § status; scenarios S1, S2 as far as they are pure).

use super::*;
use crate::binding::Owner;
use crate::facts::ObservedPod;
use crate::pull::PullFailure;
use crate::testkit::{AGENT_ID, IMAGE, OTHER_AGENT_ID, own_pod, running, terminated, waiting};
use crate::verify::view_pod;

fn status_of(pod: Option<&ObservedPod>) -> PodStatus {
    pod_status(&view_pod(pod, &Owner::apiary(AGENT_ID)), IMAGE)
}

/// S1: each startup state maps to its state name.
#[test]
fn s1_each_state_maps() {
    let cases = [
        (running(), "started"),
        (terminated(1, Some("Error")), "terminated"),
        (waiting(Some("ContainerCreating"), None), "starting"),
        (waiting(Some("InvalidImageName"), None), "broken"),
        (
            waiting(Some("ErrImagePull"), Some("manifest unknown")),
            "pull-failing",
        ),
    ];
    for (agent, name) in cases {
        assert_eq!(status_of(Some(&own_pod(agent))).state.as_str(), name);
    }
    assert_eq!(status_of(None).state.as_str(), "absent");
}

/// S1: every state has its wire name.
#[test]
fn s1_wire_names() {
    let names: Vec<_> = StatusState::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        names,
        [
            "absent",
            "starting",
            "started",
            "terminated",
            "broken",
            "pull-failing",
            "deleting",
            "foreign"
        ]
    );
    assert_eq!(
        startup_status(StartupState::NeverStartedPullFailing(
            PullFailure::ArchMismatch
        )),
        StatusState::PullFailing
    );
}

/// S1: a foreign pod reports no condition and no Secret.
#[test]
fn s1_foreign_reports_nothing() {
    let mut pod = own_pod(terminated(1, Some("Error")));
    pod.marks.agent_id = Some(OTHER_AGENT_ID.into());
    let status = status_of(Some(&pod));
    assert_eq!(status.state, StatusState::Foreign);
    assert_eq!(status.condition, None);
    assert_eq!(status.secret, None);
    assert_eq!(status.recorded_intent, None);
}

/// S1: deletion-marked is `deleting` whatever the startup state.
#[test]
fn s1_deleting_beats_startup_state() {
    for agent in [
        running(),
        terminated(0, None),
        waiting(Some("ErrImagePull"), Some("401")),
    ] {
        let mut pod = own_pod(agent);
        pod.marks.deletion_marked = true;
        assert_eq!(status_of(Some(&pod)).state, StatusState::Deleting);
    }
}

/// The condition is the pull text for pull-failing, else the redacted text; the Secret and
/// recorded intent come from the verified pod.
#[test]
fn condition_secret_and_intent() {
    let status = status_of(Some(&own_pod(waiting(
        Some("ErrImagePull"),
        Some("manifest unknown token=SUPERSECRET"),
    ))));
    let condition = status.condition.unwrap();
    assert!(condition.contains("has no image at"), "{condition}");
    assert!(!condition.contains("SUPERSECRET"));
    let status = status_of(Some(&own_pod(terminated(1, Some("Error")))));
    assert_eq!(
        status.condition.as_deref(),
        Some("the container exited with code 1 (Error)")
    );
    assert_eq!(
        status.secret.as_deref(),
        Some("apiary-research-bot-1-72bea12366a3-0000abcd")
    );
    assert_eq!(
        status.recorded_intent.as_deref(),
        Some(crate::testkit::INTENT)
    );
}

/// A pending pod (Secret not checked) reads as starting until settled.
#[test]
fn pending_is_starting() {
    let status = status_of(Some(&own_pod(waiting(
        Some("CreateContainerConfigError"),
        None,
    ))));
    assert_eq!(status.state, StatusState::Starting);
    assert_eq!(
        status.condition.as_deref(),
        Some("the container is waiting, reason CreateContainerConfigError")
    );
}

/// A deletion-marked pull-failing pod is `deleting` and shows the deploy.md § Redacted condition
/// text, not the pull report (kills the mutant that drops the `PullFailing` guard).
#[test]
fn deleting_pull_failing_pod_shows_redacted_text() {
    let mut pod = own_pod(waiting(Some("ErrImagePull"), Some("manifest unknown")));
    pod.marks.deletion_marked = true;
    let status = status_of(Some(&pod));
    assert_eq!(status.state, StatusState::Deleting);
    assert_eq!(
        status.condition.as_deref(),
        Some("the container is waiting, reason ErrImagePull")
    );
}

/// Progress shows a verified pod's state with its redacted condition (never the pull report,
/// never the waiting message); a foreign pod shows nothing of itself; absence is `absent`.
#[test]
fn progress_shows_state_and_redacted_condition() {
    let pulling = own_pod(waiting(Some("ErrImagePull"), Some("token=SUPERSECRET")));
    let shown = progress_of(Some(&pulling), &Owner::apiary(AGENT_ID));
    assert_eq!(shown.state, StatusState::Starting);
    assert_eq!(
        shown.condition.as_deref(),
        Some("the container is waiting, reason ErrImagePull")
    );
    let pending = own_pod(waiting(Some("CreateContainerConfigError"), None));
    assert_eq!(
        progress_of(Some(&pending), &Owner::apiary(AGENT_ID)).state,
        StatusState::Starting
    );
    let foreign = progress_of(Some(&own_pod(running())), &Owner::apiary(OTHER_AGENT_ID));
    assert_eq!(foreign.state, StatusState::Foreign);
    assert_eq!(foreign.condition, None);
    let absent = progress_of(None, &Owner::apiary(AGENT_ID));
    assert_eq!(
        (absent.state, absent.condition),
        (StatusState::Absent, None)
    );
}

/// The log reports each change once and a repeat not at all.
#[test]
fn progress_log_reports_each_change_once() {
    let mut log = ProgressLog::default();
    assert_eq!(log.poll(), None);
    log.observe(None, &Owner::apiary(AGENT_ID));
    log.observe(None, &Owner::apiary(AGENT_ID));
    assert_eq!(log.poll().map(|p| p.state), Some(StatusState::Absent));
    log.observe(None, &Owner::apiary(AGENT_ID));
    assert_eq!(log.poll(), None, "a repeat is no change");
    log.observe(Some(&own_pod(running())), &Owner::apiary(AGENT_ID));
    assert_eq!(log.poll().map(|p| p.state), Some(StatusState::Started));
    assert_eq!(log.poll(), None);
}
