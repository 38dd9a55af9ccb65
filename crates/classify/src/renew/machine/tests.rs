//! The renew machine, transition by transition: the guarded write, conflict retries, refusals.

use crate::binding::Owner;
use std::time::Duration;

use super::*;
use crate::facts::ObservedPod;
use crate::request::Machine as _;
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, POD, own_pod, running, terminated};

const S: fn(u64) -> Duration = Duration::from_secs;
const NOW: i64 = 1_785_643_200;

fn spec() -> RenewSpec {
    RenewSpec {
        pod_name: POD.to_owned(),
        owner: Owner::apiary(AGENT_ID),
        ttl_secs: 7_200,
        deadline: S(60),
        backoff: Duration::from_millis(200),
    }
}

fn listing(rv: &str, server_now: Option<i64>) -> Answer {
    let mut pod = own_pod(running());
    pod.marks.resource_version = Some(rv.to_owned());
    pod.marks.expires_at = Some("2026-08-02T05:00:00Z".into());
    Answer::Listed(Ok(Listing {
        pods: vec![pod],
        server_now,
        ..Listing::default()
    }))
}

fn started(m: &mut RenewMachine) {
    assert_eq!(
        m.step(S(0), Answer::Start),
        Step::Request(Request::List { secrets: false })
    );
}

fn write_of(effect: &RenewStep) -> &ExpiryWrite {
    match effect {
        Step::Request(Request::WriteExpiry(write)) => write,
        other => panic!("expected a write, got {other:?}"),
    }
}

/// The write carries the observation's resourceVersion and server clock + TTL; the result says
/// what was before.
#[test]
fn write_carries_the_observed_resource_version() {
    let mut m = RenewMachine::new(spec());
    started(&mut m);
    let effect = m.step(S(1), listing("100", Some(NOW)));
    let write = write_of(&effect);
    assert_eq!(write.name(), POD);
    assert_eq!(write.resource_version(), "100");
    assert_eq!(write.expires_at(), NOW + 7_200);
    assert_eq!(write.annotation_value(), "2026-08-02T06:00:00Z");
    let done = m.step(S(1), Answer::Written(Ok(WriteAnswer::Written)));
    assert_eq!(
        done,
        Step::Done(Ok(Renewed {
            pod: POD.to_owned(),
            previous: Some(NOW + 3_600),
            expires_at: NOW + 7_200,
            server_now: NOW,
            conflicts: 0,
        }))
    );
    assert_eq!(m.step(S(2), Answer::Start), done, "finished stays finished");
}

/// A conflict re-observes (at once the first time, after a pause later) and writes with the
/// new observation's version, never the old one.
#[test]
fn conflict_reobserves_and_uses_the_fresh_version() {
    let mut m = RenewMachine::new(spec());
    started(&mut m);
    write_of(&m.step(S(1), listing("100", Some(NOW))));
    assert_eq!(
        m.step(S(1), Answer::Written(Ok(WriteAnswer::Conflict))),
        Step::Request(Request::List { secrets: false })
    );
    let second = m.step(S(2), listing("101", Some(NOW + 1)));
    assert_eq!(write_of(&second).resource_version(), "101");
    assert_eq!(write_of(&second).expires_at(), NOW + 1 + 7_200);
    assert_eq!(
        m.step(S(2), Answer::Written(Ok(WriteAnswer::Conflict))),
        Step::Request(Request::Sleep(Duration::from_millis(200)))
    );
    assert_eq!(
        m.step(S(3), Answer::Waited),
        Step::Request(Request::List { secrets: false })
    );
    let third = m.step(S(3), listing("102", Some(NOW + 2)));
    assert_eq!(write_of(&third).resource_version(), "102");
    let Step::Done(Ok(renewed)) = m.step(S(3), Answer::Written(Ok(WriteAnswer::Written))) else {
        panic!("renewed")
    };
    assert_eq!(renewed.conflicts, 2);
    assert_eq!(renewed.expires_at, NOW + 2 + 7_200);
}

/// Conflicts until the deadline end with the deadline error, nothing written blind.
#[test]
fn conflicts_until_the_deadline_fail() {
    let mut m = RenewMachine::new(spec());
    started(&mut m);
    write_of(&m.step(S(1), listing("100", Some(NOW))));
    let effect = m.step(S(60), Answer::Written(Ok(WriteAnswer::Conflict)));
    assert_eq!(
        effect,
        Step::Done(Err(RenewError::Deadline {
            pod: POD.to_owned(),
            deadline: S(60),
            conflicts: 1,
        }))
    );
}

/// A wait never runs past the deadline: with no time left the machine fails instead.
#[test]
fn wait_is_bounded_by_the_deadline() {
    let mut m = RenewMachine::new(spec());
    started(&mut m);
    write_of(&m.step(S(1), listing("100", Some(NOW))));
    m.step(S(1), Answer::Written(Ok(WriteAnswer::Conflict)));
    write_of(&m.step(S(1), listing("101", Some(NOW))));
    let at = Duration::from_millis(59_900);
    assert_eq!(
        m.step(at, Answer::Written(Ok(WriteAnswer::Conflict))),
        Step::Request(Request::Sleep(Duration::from_millis(100)))
    );
    assert!(matches!(
        m.step(S(60), Answer::Waited),
        Step::Done(Err(RenewError::Deadline { conflicts: 2, .. }))
    ));
}

/// A pod gone at the write is re-observed and reported absent.
#[test]
fn not_found_at_write_reobserves() {
    let mut m = RenewMachine::new(spec());
    started(&mut m);
    write_of(&m.step(S(1), listing("100", Some(NOW))));
    assert_eq!(
        m.step(S(1), Answer::Written(Ok(WriteAnswer::NotFound))),
        Step::Request(Request::List { secrets: false })
    );
    let empty = Answer::Listed(Ok(Listing {
        pods: vec![],
        server_now: Some(NOW),
        ..Listing::default()
    }));
    assert_eq!(
        m.step(S(1), empty),
        Step::Done(Err(RenewError::Absent {
            pod: POD.to_owned()
        }))
    );
}

/// Foreign, deleting, terminated and clockless observations write nothing.
#[test]
fn refusals_write_nothing() {
    let finish = |pod: ObservedPod, now: Option<i64>| {
        let mut m = RenewMachine::new(spec());
        started(&mut m);
        m.step(
            S(1),
            Answer::Listed(Ok(Listing {
                pods: vec![pod],
                server_now: now,
                ..Listing::default()
            })),
        )
    };
    let mut foreign = own_pod(running());
    foreign.marks.agent_id = Some(OTHER_AGENT_ID.into());
    assert_eq!(
        finish(foreign, Some(NOW)),
        Step::Done(Err(RenewError::Foreign { pod: POD.into() }))
    );
    let mut deleting = own_pod(running());
    deleting.marks.deletion_marked = true;
    assert_eq!(
        finish(deleting, Some(NOW)),
        Step::Done(Err(RenewError::Deleting { pod: POD.into() }))
    );
    assert_eq!(
        finish(own_pod(terminated(0, Some("Completed"))), Some(NOW)),
        Step::Done(Err(RenewError::Terminated { pod: POD.into() }))
    );
    assert_eq!(
        finish(own_pod(running()), None),
        Step::Done(Err(RenewError::NoServerClock))
    );
    let mut other_name = own_pod(running());
    other_name.marks.name = Some("someone-else".into());
    assert_eq!(
        finish(other_name, Some(NOW)),
        Step::Done(Err(RenewError::Absent { pod: POD.into() }))
    );
}

/// Request failures end it; an answer nobody asked for is an internal error.
#[test]
fn failures_end_it() {
    let failure = RequestFailure::api(403, "Forbidden", "no");
    let mut m = RenewMachine::new(spec());
    started(&mut m);
    assert_eq!(
        m.step(S(1), Answer::Listed(Err(failure.clone()))),
        Step::Done(Err(RenewError::Request(failure.clone())))
    );
    let mut m = RenewMachine::new(spec());
    started(&mut m);
    write_of(&m.step(S(1), listing("100", Some(NOW))));
    assert_eq!(
        m.step(S(1), Answer::Written(Err(failure.clone()))),
        Step::Done(Err(RenewError::Request(failure)))
    );
    let mut m = RenewMachine::new(spec());
    assert!(matches!(
        m.step(S(0), Answer::Waited),
        Step::Done(Err(RenewError::Request(_)))
    ));
}

/// Every refusal's text names the pod (or the missing clock, or the failed request).
#[test]
fn refusal_texts_name_what_happened() {
    let pod = || POD.to_owned();
    for (error, needle) in [
        (RenewError::Absent { pod: pod() }, "does not exist"),
        (RenewError::Foreign { pod: pod() }, "not apiary's"),
        (RenewError::Deleting { pod: pod() }, "being deleted"),
        (RenewError::Terminated { pod: pod() }, "terminated"),
        (
            RenewError::Deadline {
                pod: pod(),
                deadline: S(60),
                conflicts: 3,
            },
            "3 conflict(s) within 60s",
        ),
    ] {
        let text = error.to_string();
        assert!(text.contains(POD) && text.contains(needle), "{text}");
    }
    assert!(RenewError::NoServerClock.to_string().contains("Date"));
    let failure = RequestFailure::api(403, "Forbidden", "cannot patch pods");
    assert_eq!(
        RenewError::Request(failure.clone()).to_string(),
        failure.to_string()
    );
}
