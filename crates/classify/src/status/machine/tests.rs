//! Tests of the status machine (deploy.md § status; S1, S2): the reads it makes and the report.

use super::*;
use crate::binding::Owner;
use crate::request::Machine as _;
use crate::testkit::{
    AGENT_ID, INTENT, OTHER_AGENT_ID, OTHER_INTENT, POD, own_pod, running, waiting,
};
use crate::workspace::{ClaimShape, ClaimStatus};
use std::time::Duration;

const SECRET: &str = "apiary-research-bot-1-72bea12366a3-0000abcd";

fn spec(desired_intent: Option<&str>) -> StatusSpec {
    StatusSpec {
        pod_name: POD.into(),
        owner: Owner::apiary(AGENT_ID),
        image: None,
        desired_intent: desired_intent.map(str::to_owned),
        compare_env: false,
        desired_settings: None,
        desired_claim: None,
    }
}

/// The report a status ends with after `answer`.
fn report_after(status: &mut StatusMachine, answer: Answer) -> StatusReport {
    let step = status.step(Duration::ZERO, answer);
    report(status, step)
}

/// The report a status ends with after `step`, the workspace read it asks for last answered
/// with no claim.
fn report(status: &mut StatusMachine, step: StatusStep) -> StatusReport {
    match step {
        Step::Request(Request::ReadWorkspace) => report_after(status, Answer::WorkspaceRead(None)),
        Step::Done(Ok(report)) => report,
        other => panic!("expected a report, got {other:?}"),
    }
}

/// A started pod: one read, one Secret check, the report with the intent compared by the
/// verified pod's own rule.
#[test]
fn s1_s2_started_pod_reads_its_secret_and_compares_intent() {
    for (desired, matches) in [
        (Some(INTENT), Some(true)),
        (Some(OTHER_INTENT), Some(false)),
        (None, None),
    ] {
        let mut status = StatusMachine::new(spec(desired));
        assert_eq!(
            status.step(Duration::ZERO, Answer::Start),
            Step::Request(Request::GetPod { name: POD.into() })
        );
        assert_eq!(
            status.step(
                Duration::ZERO,
                Answer::PodRead(Ok(Some(own_pod(running()))))
            ),
            Step::Request(Request::SecretExists {
                name: SECRET.into()
            })
        );
        let done = report_after(&mut status, Answer::Exists(Ok(true)));
        assert_eq!(done.state, StatusState::Started);
        assert_eq!(
            done.secret,
            Some(SecretStatus {
                name: SECRET.into(),
                exists: true
            })
        );
        assert_eq!(done.intent_matches, matches);
    }
}

/// Absent and foreign: one read, no Secret, nothing of a foreign pod reported.
#[test]
fn s1_absent_and_foreign_read_nothing_more() {
    let mut status = StatusMachine::new(spec(Some(INTENT)));
    status.step(Duration::ZERO, Answer::Start);
    let done = report_after(&mut status, Answer::PodRead(Ok(None)));
    assert_eq!(
        (done.state, done.secret, done.intent_matches),
        (StatusState::Absent, None, None)
    );
    let mut status = StatusMachine::new(spec(Some(INTENT)));
    status.step(Duration::ZERO, Answer::Start);
    let mut foreign = own_pod(running());
    foreign.marks.agent_id = Some(OTHER_AGENT_ID.into());
    let done = report_after(&mut status, Answer::PodRead(Ok(Some(foreign))));
    assert_eq!(done.state, StatusState::Foreign);
    assert_eq!(
        (done.condition, done.secret, done.intent_matches),
        (None, None, None)
    );
}

/// A pod pending its Secret check is settled by the one check, which is also the report's
/// Secret: a missing Secret settles as broken.
#[test]
fn a_pending_pod_is_settled_by_one_check() {
    let mut status = StatusMachine::new(spec(None));
    status.step(Duration::ZERO, Answer::Start);
    let pending = own_pod(waiting(Some("CreateContainerConfigError"), None));
    assert_eq!(
        status.step(Duration::ZERO, Answer::PodRead(Ok(Some(pending)))),
        Step::Request(Request::SecretExists {
            name: SECRET.into()
        })
    );
    let done = report_after(&mut status, Answer::Exists(Ok(false)));
    assert_eq!(done.state, StatusState::Broken);
    assert_eq!(done.secret.map(|s| s.exists), Some(false));
}

/// Pull-failure text names the configured image, else the pod's own.
#[test]
fn pull_failure_names_the_image() {
    for (configured, expected) in [
        (Some("registry.example.com/x:1"), "registry.example.com/x:1"),
        (None, crate::testkit::IMAGE),
    ] {
        let mut status = StatusMachine::new(StatusSpec {
            image: configured.map(str::to_owned),
            ..spec(None)
        });
        status.step(Duration::ZERO, Answer::Start);
        let pulling = own_pod(waiting(Some("ErrImagePull"), Some("manifest unknown")));
        status.step(Duration::ZERO, Answer::PodRead(Ok(Some(pulling))));
        let done = report_after(&mut status, Answer::Exists(Ok(true)));
        assert_eq!(done.state, StatusState::PullFailing);
        assert!(
            done.condition
                .as_deref()
                .is_some_and(|c| c.contains(expected)),
            "{:?}",
            done.condition
        );
    }
}

/// A failed read fails the report; an unasked answer is an internal error; finish repeats.
#[test]
fn failures_and_unasked_answers() {
    let failure = RequestFailure::api(403, "Forbidden", "no");
    let mut status = StatusMachine::new(spec(None));
    status.step(Duration::ZERO, Answer::Start);
    assert_eq!(
        status.step(Duration::ZERO, Answer::PodRead(Err(failure.clone()))),
        Step::Done(Err(failure.clone()))
    );
    assert_eq!(
        status.step(Duration::ZERO, Answer::Start),
        Step::Done(Err(failure.clone()))
    );
    let mut status = StatusMachine::new(spec(None));
    status.step(Duration::ZERO, Answer::Start);
    status.step(
        Duration::ZERO,
        Answer::PodRead(Ok(Some(own_pod(running())))),
    );
    assert_eq!(
        status.step(Duration::ZERO, Answer::Exists(Err(failure.clone()))),
        Step::Done(Err(failure))
    );
    let mut status = StatusMachine::new(spec(None));
    assert!(matches!(
        status.step(Duration::ZERO, Answer::Exists(Ok(true))),
        Step::Done(Err(f)) if f.message().contains("internal")
    ));
}

/// deploy.md § status: with a configuration and the pod's own Secret present, its environment
/// is compared (keys only) and the claim read, in that order; a failed comparison fails the
/// status; without a configuration only the claim is read.
#[test]
fn a_configuration_compares_the_environment_then_the_claim_is_read() {
    let start = |compare_env| {
        let mut status = StatusMachine::new(StatusSpec {
            compare_env,
            ..spec(Some(INTENT))
        });
        status.step(Duration::ZERO, Answer::Start);
        status.step(
            Duration::ZERO,
            Answer::PodRead(Ok(Some(own_pod(running())))),
        );
        let next = status.step(Duration::ZERO, Answer::Exists(Ok(true)));
        (status, next)
    };
    let (mut status, next) = start(true);
    assert_eq!(
        next,
        Step::Request(Request::CompareEnv {
            secret: SECRET.into()
        })
    );
    let next = status.step(
        Duration::ZERO,
        Answer::EnvCompared(Ok(Some(vec!["TOKEN".into()]))),
    );
    assert_eq!(next, Step::Request(Request::ReadWorkspace));
    let claim = ClaimStatus {
        name: format!("{POD}-workspace"),
        ours: true,
        shape: ClaimShape {
            size: Some("1Gi".into()),
            storage_class: None,
        },
        phase: Some("Bound".into()),
        deleting: false,
    };
    let done = report_after(&mut status, Answer::WorkspaceRead(Some(claim.clone())));
    assert_eq!(done.env_differs, Some(vec!["TOKEN".to_owned()]));
    assert_eq!(done.workspace, Some(claim));

    let (mut status, _) = start(true);
    let failure = RequestFailure::api(500, "InternalError", "boom");
    assert_eq!(
        status.step(Duration::ZERO, Answer::EnvCompared(Err(failure.clone()))),
        Step::Done(Err(failure))
    );

    let (_, next) = start(false);
    assert_eq!(next, Step::Request(Request::ReadWorkspace));
}

/// deploy.md § Naming what differs and § Persistent workspace: with a configuration, a differing
/// intent names the settings whose recorded digests differ (or says none are recorded), a
/// matching one names nothing, and an own claim of another size is reported as a claim
/// difference, never as the pod's intent.
#[test]
fn a_configuration_names_the_differing_settings_and_the_claims_differences() {
    let run = |recorded_intent: &str, recorded: Option<&str>| {
        let mut status = StatusMachine::new(StatusSpec {
            desired_settings: Some("cpu-limit=aa,image=11".into()),
            desired_claim: Some(ClaimShape {
                size: Some("2Gi".into()),
                storage_class: None,
            }),
            ..spec(Some(INTENT))
        });
        let mut pod = own_pod(running());
        pod.marks.create_intent = Some(recorded_intent.to_owned());
        pod.marks.intent_settings = recorded.map(str::to_owned);
        status.step(Duration::ZERO, Answer::Start);
        status.step(Duration::ZERO, Answer::PodRead(Ok(Some(pod))));
        assert_eq!(
            status.step(Duration::ZERO, Answer::Exists(Ok(true))),
            Step::Request(Request::ReadWorkspace)
        );
        let claim = ClaimStatus {
            name: format!("{POD}-workspace"),
            ours: true,
            shape: ClaimShape {
                size: Some("1Gi".into()),
                storage_class: None,
            },
            phase: Some("Bound".into()),
            deleting: false,
        };
        report_after(&mut status, Answer::WorkspaceRead(Some(claim)))
    };
    let differs = run("other", Some("cpu-limit=bb,image=11"));
    assert_eq!(differs.intent_matches, Some(false));
    assert_eq!(
        differs.intent_differs,
        Some(SettingsDiff::Named(vec!["cpu-limit".into()]))
    );
    assert_eq!(
        differs.workspace_differs,
        Some(vec![ClaimDifference::Size {
            wanted: "2Gi".into(),
            found: Some("1Gi".into())
        }])
    );
    assert_eq!(
        run("other", None).intent_differs,
        Some(SettingsDiff::Unrecorded)
    );
    let matches = run(INTENT, Some("cpu-limit=bb"));
    assert_eq!(matches.intent_matches, Some(true));
    assert_eq!(matches.intent_differs, None);
}
