//! The expiry decision and the collection machine: fence of the listing, the wait for
//! disappearance, the Secret only afterwards.

use crate::binding::Owner;
use std::time::Duration;

use super::*;
use crate::facts::{ObservedPod, ObservedSecret};
use crate::request::Machine as _;
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, POD, own_pod, own_secret, running, terminated};

const S: fn(u64) -> Duration = Duration::from_secs;
const EXPIRY: &str = "2026-08-02T04:00:00Z";
const AT: i64 = 1_785_643_200;

fn expiring(rv: &str) -> ObservedPod {
    let mut pod = own_pod(running());
    pod.marks.resource_version = Some(rv.to_owned());
    pod.marks.expires_at = Some(EXPIRY.to_owned());
    pod
}

fn spec(dry_run: bool) -> ExpireSpec {
    ExpireSpec {
        pod_name: POD.to_owned(),
        owner: Owner::apiary(AGENT_ID),
        dry_run,
        deadline: S(120),
        poll: S(2),
        grace: None,
    }
}

fn listed(pods: Vec<ObservedPod>, secrets: Vec<ObservedSecret>, now: Option<i64>) -> Answer {
    Answer::Listed(Ok(Listing {
        pods,
        secrets,
        server_now: now,
    }))
}

/// Expired exactly at the instant on the server clock; alive one second before; a missing
/// clock, a missing or malformed annotation, a foreign pod decide nothing.
#[test]
fn expiry_is_decided_on_the_server_clock_only() {
    let pod = expiring("100");
    assert_eq!(
        decide_expiry(
            std::slice::from_ref(&pod),
            POD,
            &Owner::apiary(AGENT_ID),
            Some(AT - 1)
        ),
        ExpiryDecision::Alive { expires_at: AT }
    );
    let ExpiryDecision::Collect {
        deletion,
        secret,
        expires_at,
    } = decide_expiry(
        std::slice::from_ref(&pod),
        POD,
        &Owner::apiary(AGENT_ID),
        Some(AT),
    )
    else {
        panic!("collectable at the instant")
    };
    assert_eq!(deletion.fence().resource_version(), "100");
    assert_eq!(secret, pod.facts.env_from_secret);
    assert_eq!(expires_at, AT);
    assert_eq!(
        decide_expiry(
            std::slice::from_ref(&pod),
            POD,
            &Owner::apiary(AGENT_ID),
            None
        ),
        ExpiryDecision::NoClock { expires_at: AT }
    );
    let mut malformed = pod.clone();
    malformed.marks.expires_at = Some("soon".into());
    assert_eq!(
        decide_expiry(&[malformed], POD, &Owner::apiary(AGENT_ID), Some(AT * 2)),
        ExpiryDecision::NoExpiry
    );
    assert_eq!(
        decide_expiry(
            &[own_pod(running())],
            POD,
            &Owner::apiary(AGENT_ID),
            Some(AT * 2)
        ),
        ExpiryDecision::NoExpiry
    );
    let mut foreign = pod.clone();
    foreign.marks.agent_id = Some(OTHER_AGENT_ID.into());
    assert_eq!(
        decide_expiry(&[foreign], POD, &Owner::apiary(AGENT_ID), Some(AT * 2)),
        ExpiryDecision::Foreign
    );
    assert_eq!(
        decide_expiry(&[], POD, &Owner::apiary(AGENT_ID), Some(AT)),
        ExpiryDecision::Absent
    );
    let mut deleting = pod.clone();
    deleting.marks.deletion_marked = true;
    assert_eq!(
        decide_expiry(&[deleting], POD, &Owner::apiary(AGENT_ID), Some(AT)),
        ExpiryDecision::Deleting
    );
    let mut dead = own_pod(terminated(1, Some("Error")));
    dead.marks.expires_at = Some(EXPIRY.into());
    assert_eq!(
        decide_expiry(&[dead], POD, &Owner::apiary(AGENT_ID), Some(AT)),
        ExpiryDecision::Terminated
    );
}

/// The whole collection: fenced delete with the listing's fence, wait, re-read until gone,
/// then the Secret, uid-fenced, only after the pod is gone.
#[test]
fn collects_pod_then_waits_then_its_secret() {
    let pod = expiring("100");
    let secret_name = pod.facts.env_from_secret.clone().expect("references one");
    let mut m = ExpireMachine::new(spec(false));
    assert_eq!(
        m.step(S(0), Answer::Start),
        Step::Request(Request::List { secrets: false })
    );
    let Step::Request(Request::DeletePod(deletion)) =
        m.step(S(0), listed(vec![pod.clone()], vec![], Some(AT)))
    else {
        panic!("delete")
    };
    assert_eq!(deletion.fence().uid(), "u1");
    assert_eq!(deletion.fence().resource_version(), "100");
    assert_eq!(
        m.step(S(1), Answer::Deleted(Ok(DeleteAnswer::Accepted))),
        Step::Request(Request::Wait {
            pod: POD.into(),
            resource_version: None,
            max: S(2)
        })
    );
    assert_eq!(
        m.step(S(3), Answer::Waited),
        Step::Request(Request::GetPod { name: POD.into() })
    );
    let mut marked = pod.clone();
    marked.marks.deletion_marked = true;
    marked.marks.resource_version = Some("101".into());
    assert_eq!(
        m.step(S(3), Answer::PodRead(Ok(Some(marked)))),
        Step::Request(Request::Wait {
            pod: POD.into(),
            resource_version: Some("101".into()),
            max: S(2)
        })
    );
    m.step(S(5), Answer::Waited);
    assert_eq!(
        m.step(S(5), Answer::PodRead(Ok(None))),
        Step::Request(Request::List { secrets: true })
    );
    let Step::Request(Request::DeleteSecret(secret)) = m.step(
        S(5),
        listed(vec![], vec![own_secret(&secret_name, Some(1))], Some(AT)),
    ) else {
        panic!("secret delete")
    };
    assert_eq!(secret.name(), secret_name);
    let done = m.step(S(5), Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    assert_eq!(
        done,
        Step::Done(Ok(ExpireReport {
            dry_run: false,
            pod: Some(POD.into()),
            expired_at: Some(AT),
            secrets: vec![secret_name],
            replaced: false,
            failures: vec![],
        }))
    );
}

/// A dry run plans the pod and its Secret and performs nothing after the listing.
#[test]
fn dry_run_only_lists() {
    let pod = expiring("100");
    let mut m = ExpireMachine::new(spec(true));
    m.step(S(0), Answer::Start);
    let Step::Done(Ok(report)) = m.step(S(0), listed(vec![pod.clone()], vec![], Some(AT))) else {
        panic!("finished")
    };
    assert!(report.dry_run);
    assert_eq!(report.pod.as_deref(), Some(POD));
    assert_eq!(
        report.secrets,
        pod.facts.env_from_secret.into_iter().collect::<Vec<_>>()
    );
}

/// An alive or clockless agent is left alone: the pass finishes with nothing collected.
#[test]
fn alive_agents_are_left_alone() {
    for now in [Some(AT - 1), None] {
        let mut m = ExpireMachine::new(spec(false));
        m.step(S(0), Answer::Start);
        assert_eq!(
            m.step(S(0), listed(vec![expiring("100")], vec![], now)),
            Step::Done(Ok(ExpireReport::default()))
        );
    }
}

/// A failed precondition (renewed since the listing) lists again and decides afresh: a renewed
/// pod is kept, never deleted with the old fence.
#[test]
fn precondition_failed_decides_again() {
    let mut m = ExpireMachine::new(spec(false));
    m.step(S(0), Answer::Start);
    m.step(S(0), listed(vec![expiring("100")], vec![], Some(AT)));
    assert_eq!(
        m.step(S(0), Answer::Deleted(Ok(DeleteAnswer::PreconditionFailed))),
        Step::Request(Request::List { secrets: false })
    );
    let mut renewed = expiring("102");
    renewed.marks.expires_at = Some("2026-08-02T06:00:00Z".into());
    assert_eq!(
        m.step(S(1), listed(vec![renewed], vec![], Some(AT + 1))),
        Step::Done(Ok(ExpireReport::default()))
    );
}

/// The wait ends at the deadline and then no Secret is deleted.
#[test]
fn timeout_keeps_the_secret() {
    let mut m = ExpireMachine::new(spec(false));
    m.step(S(0), Answer::Start);
    m.step(S(0), listed(vec![expiring("100")], vec![], Some(AT)));
    m.step(S(0), Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    m.step(S(119), Answer::Waited);
    assert_eq!(
        m.step(S(120), Answer::PodRead(Ok(Some(expiring("101"))))),
        Step::Done(Err(ExpireError::Timeout {
            pod: POD.into(),
            deadline: S(120)
        }))
    );
}

/// A new pod under the name (a concurrent deploy) ends the wait; it references its own Secret,
/// and a listed pod still referencing the old Secret protects it.
#[test]
fn replaced_pod_is_left_and_references_protect() {
    let pod = expiring("100");
    let secret_name = pod.facts.env_from_secret.clone().expect("references one");
    let mut m = ExpireMachine::new(spec(false));
    m.step(S(0), Answer::Start);
    m.step(S(0), listed(vec![pod.clone()], vec![], Some(AT)));
    m.step(S(0), Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    m.step(S(2), Answer::Waited);
    let mut new = own_pod(running());
    new.marks.uid = Some("u2".into());
    assert_eq!(
        m.step(S(2), Answer::PodRead(Ok(Some(new.clone())))),
        Step::Request(Request::List { secrets: true })
    );
    let Step::Done(Ok(report)) = m.step(
        S(2),
        listed(vec![new], vec![own_secret(&secret_name, Some(1))], Some(AT)),
    ) else {
        panic!("finished")
    };
    assert!(report.replaced);
    assert!(report.secrets.is_empty(), "the new pod references it");
}

/// Pod gone before the delete: straight to the Secret; failures of reads end it; Secret delete
/// failures are reported.
#[test]
fn not_found_and_failures() {
    let pod = expiring("100");
    let secret_name = pod.facts.env_from_secret.clone().expect("references one");
    let failure = RequestFailure::api(500, "InternalError", "boom");
    let mut m = ExpireMachine::new(spec(false));
    m.step(S(0), Answer::Start);
    m.step(S(0), listed(vec![pod.clone()], vec![], Some(AT)));
    assert_eq!(
        m.step(S(0), Answer::Deleted(Ok(DeleteAnswer::NotFound))),
        Step::Request(Request::List { secrets: true })
    );
    m.step(
        S(0),
        listed(vec![], vec![own_secret(&secret_name, Some(1))], Some(AT)),
    );
    let Step::Done(Ok(report)) = m.step(S(0), Answer::Deleted(Err(failure.clone()))) else {
        panic!("finished")
    };
    assert_eq!(report.failures, vec![failure.clone()]);
    let mut m = ExpireMachine::new(spec(false));
    m.step(S(0), Answer::Start);
    assert_eq!(
        m.step(S(0), Answer::Listed(Err(failure.clone()))),
        Step::Done(Err(ExpireError::Failed(failure)))
    );
    let mut m = ExpireMachine::new(spec(false));
    assert!(matches!(
        m.step(S(0), Answer::Waited),
        Step::Done(Err(ExpireError::Failed(_)))
    ));
}
