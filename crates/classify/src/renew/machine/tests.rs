//! The renew machine, transition by transition: the guarded write, conflict retries, refusals.
//! Each test is a script (`crate::testkit::script`): answers in, requests out.

use crate::binding::Owner;
use std::time::Duration;

use super::*;
use crate::facts::ObservedPod;
use crate::testkit::script::{Beat, Check, ask, asks, done, ends, feed, play, wait_out};
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, POD, own_pod, running, terminated};

const S: fn(u64) -> Duration = Duration::from_secs;
const NOW: i64 = 1_785_643_200;

type RenewOutput = Result<Renewed, RenewError>;

fn spec() -> RenewSpec {
    RenewSpec {
        pod_name: POD.to_owned(),
        owner: Owner::apiary(AGENT_ID),
        ttl_secs: 7_200,
        deadline: S(60),
        backoff: Duration::from_millis(200),
    }
}

fn listed(pod: Option<ObservedPod>, server_now: Option<i64>) -> Answer {
    Answer::Listed(Ok(Listing {
        pods: pod.into_iter().collect(),
        server_now,
        ..Listing::default()
    }))
}

fn listing(rv: &str, server_now: Option<i64>) -> Answer {
    let mut pod = own_pod(running());
    pod.marks.resource_version = Some(rv.to_owned());
    pod.marks.expires_at = Some("2026-08-02T05:00:00Z".into());
    listed(Some(pod), server_now)
}

fn list() -> Check<RenewOutput> {
    ask(Request::List {
        secrets: false,
        dropping: None,
    })
}

fn written(answer: WriteAnswer) -> Answer {
    Answer::Written(Ok(answer))
}

/// A write guarded by `rv` of `expires_at`.
fn writes(rv: &'static str, expires_at: i64) -> Check<RenewOutput> {
    asks("the guarded write", move |r| {
        matches!(r, Request::WriteExpiry(w)
            if w.name() == POD && w.resource_version() == rv && w.expires_at() == expires_at)
    })
}

/// Start, then the first listing at `rv` answered with a write.
fn to_first_write() -> Vec<Beat<RenewMachine>> {
    vec![
        feed(Answer::Start, list()),
        feed(listing("100", Some(NOW)), writes("100", NOW + 7_200)).after(S(1)),
    ]
}

/// The write carries the observation's resourceVersion and server clock + TTL; the result says
/// what was before.
#[test]
fn write_carries_the_observed_resource_version() {
    let renewed = Ok(Renewed {
        pod: POD.to_owned(),
        previous: Some(NOW + 3_600),
        expires_at: NOW + 7_200,
        server_now: NOW,
        conflicts: 0,
    });
    let wire = asks("the write at rv 100, in the wire form", |r| {
        matches!(r, Request::WriteExpiry(w) if w.name() == POD && w.resource_version() == "100"
            && w.expires_at() == NOW + 7_200 && w.annotation_value() == "2026-08-02T06:00:00Z")
    });
    play(RenewMachine::new(spec()), [feed(Answer::Start, list())]).then([
        feed(listing("100", Some(NOW)), wire).after(S(1)),
        feed(written(WriteAnswer::Written), done(renewed.clone())),
        // Finished stays finished.
        feed(Answer::Start, done(renewed)).after(S(1)),
    ]);
}

/// A conflict re-observes (at once the first time, after a pause later) and writes with the
/// new observation's version, never the old one.
#[test]
fn conflict_reobserves_and_uses_the_fresh_version() {
    let pause = ask(Request::Sleep(Duration::from_millis(200)));
    let renewed = ends(
        "two conflicts",
        |o: &RenewOutput| matches!(o, Ok(r) if r.conflicts == 2 && r.expires_at == NOW + 2 + 7_200),
    );
    play(RenewMachine::new(spec()), to_first_write()).then([
        feed(written(WriteAnswer::Conflict), list()),
        feed(
            listing("101", Some(NOW + 1)),
            writes("101", NOW + 1 + 7_200),
        )
        .after(S(1)),
        feed(written(WriteAnswer::Conflict), pause),
        feed(Answer::Waited, list()).at(S(3)),
        feed(
            listing("102", Some(NOW + 2)),
            writes("102", NOW + 2 + 7_200),
        ),
        feed(written(WriteAnswer::Written), renewed),
    ]);
}

/// Conflicts until the deadline end with the deadline error, nothing written blind.
#[test]
fn conflicts_until_the_deadline_fail() {
    let deadline = Err(RenewError::Deadline {
        pod: POD.to_owned(),
        deadline: S(60),
        conflicts: 1,
    });
    play(RenewMachine::new(spec()), to_first_write()).then([feed(
        written(WriteAnswer::Conflict),
        done(deadline),
    )
    .at(S(60))]);
}

/// A wait never runs past the deadline: with no time left the machine fails instead.
#[test]
fn wait_is_bounded_by_the_deadline() {
    let short = ask(Request::Sleep(Duration::from_millis(100)));
    let deadline = ends("the deadline after 2 conflicts", |o| {
        matches!(o, Err(RenewError::Deadline { conflicts: 2, .. }))
    });
    play(RenewMachine::new(spec()), to_first_write()).then([
        feed(written(WriteAnswer::Conflict), list()),
        feed(listing("101", Some(NOW)), writes("101", NOW + 7_200)),
        feed(written(WriteAnswer::Conflict), short).at(Duration::from_millis(59_900)),
        wait_out(deadline),
    ]);
}

/// A pod gone at the write is re-observed and reported absent.
#[test]
fn not_found_at_write_reobserves() {
    let absent = done(Err(RenewError::Absent {
        pod: POD.to_owned(),
    }));
    play(RenewMachine::new(spec()), to_first_write()).then([
        feed(written(WriteAnswer::NotFound), list()),
        feed(listed(None, Some(NOW)), absent),
    ]);
}

/// Foreign, deleting, terminated and clockless observations write nothing.
#[test]
fn refusals_write_nothing() {
    let pod = |change: fn(&mut ObservedPod)| {
        let mut pod = own_pod(running());
        change(&mut pod);
        Some(pod)
    };
    let cases = [
        (
            pod(|p| p.marks.agent_id = Some(OTHER_AGENT_ID.into())),
            Some(NOW),
            RenewError::Foreign { pod: POD.into() },
        ),
        (
            pod(|p| p.marks.deletion_marked = true),
            Some(NOW),
            RenewError::Deleting { pod: POD.into() },
        ),
        (
            Some(own_pod(terminated(0, Some("Completed")))),
            Some(NOW),
            RenewError::Terminated { pod: POD.into() },
        ),
        (pod(|_| {}), None, RenewError::NoServerClock),
        (
            pod(|p| p.marks.name = Some("someone-else".into())),
            Some(NOW),
            RenewError::Absent { pod: POD.into() },
        ),
    ];
    for (pod, server_now, error) in cases {
        play(
            RenewMachine::new(spec()),
            [
                feed(Answer::Start, list()),
                feed(listed(pod, server_now), done(Err(error))).after(S(1)),
            ],
        );
    }
}

/// Request failures end it; an answer nobody asked for is an internal error.
#[test]
fn failures_end_it() {
    let failure = RequestFailure::api(403, "Forbidden", "no");
    let failed = || done(Err(RenewError::Request(failure.clone())));
    play(
        RenewMachine::new(spec()),
        [
            feed(Answer::Start, list()),
            feed(Answer::Listed(Err(failure.clone())), failed()).after(S(1)),
        ],
    );
    play(RenewMachine::new(spec()), to_first_write())
        .then([feed(Answer::Written(Err(failure.clone())), failed())]);
    let internal = ends("an internal error", |o| {
        matches!(o, Err(RenewError::Request(_)))
    });
    play(RenewMachine::new(spec()), [feed(Answer::Waited, internal)]);
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
