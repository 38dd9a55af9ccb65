//! The expiry decision and the collection machine: fence of the listing, the wait for
//! disappearance, the Secret only afterwards. The machine's tests are scripts
//! (`crate::testkit::script`): answers in, requests out.

use crate::binding::Owner;
use std::time::Duration;

use super::*;
use crate::facts::{ObservedPod, ObservedSecret};
use crate::testkit::script::{Beat, Check, ask, asks, done, ends, feed, play};
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, POD, own_pod, own_secret, running, terminated};

const S: fn(u64) -> Duration = Duration::from_secs;
const EXPIRY: &str = "2026-08-02T04:00:00Z";
const AT: i64 = 1_785_643_200;

type ExpireOutput = Result<ExpireReport, ExpireError>;

fn expiring(rv: &str) -> ObservedPod {
    let mut pod = own_pod(running());
    pod.marks.resource_version = Some(rv.to_owned());
    pod.marks.expires_at = Some(EXPIRY.to_owned());
    pod
}

/// The Secret the expiring pod references.
fn its_secret() -> String {
    expiring("100")
        .facts
        .env_from_secret
        .expect("references one")
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

/// The listing of the expiring pod at `rv`, expired on the server clock.
fn expired(rv: &str) -> Answer {
    listed(vec![expiring(rv)], vec![], Some(AT))
}

/// The listing of no pod and the expiring pod's Secret.
fn its_secret_listed() -> Answer {
    listed(vec![], vec![own_secret(&its_secret(), Some(1))], Some(AT))
}

fn deleted(answer: DeleteAnswer) -> Answer {
    Answer::Deleted(Ok(answer))
}

/// A listing; the collection reports a failed one itself.
fn list(secrets: bool) -> Check<ExpireOutput> {
    ask(Request::List {
        secrets,
        dropping: None,
    })
}

/// A re-read, not through the stuck-pod watch (a timeout is the collection's report).
fn get() -> Check<ExpireOutput> {
    ask(Request::GetPod {
        name: POD.into(),
        watch_stuck: false,
    })
}

fn wait(resource_version: Option<&str>) -> Check<ExpireOutput> {
    ask(Request::Wait {
        pod: POD.into(),
        resource_version: resource_version.map(str::to_owned),
        max: S(2),
    })
}

fn delete_pod() -> Check<ExpireOutput> {
    asks("the pod delete fenced by the listing", |r| {
        matches!(r, Request::DeletePod { deletion: d, note: Some("deleting the expired pod") }
            if d.fence().uid() == "u1" && d.fence().resource_version() == "100")
    })
}

/// A report `test` accepts.
fn reports(
    what: &'static str,
    test: impl FnOnce(&ExpireReport) -> bool + 'static,
) -> Check<ExpireOutput> {
    ends(what, move |o: &ExpireOutput| o.as_ref().is_ok_and(test))
}

/// Start, and the expiring pod listed and deleted with the listing's fence.
fn to_delete() -> Vec<Beat<ExpireMachine>> {
    vec![
        feed(Answer::Start, list(false)),
        feed(expired("100"), delete_pod()),
    ]
}

/// Expired exactly at the instant on the server clock; alive one second before; a missing
/// clock, a missing or malformed annotation, a foreign pod decide nothing.
#[test]
fn expiry_is_decided_on_the_server_clock_only() {
    let decide = |pod: &ObservedPod, now| {
        decide_expiry(
            std::slice::from_ref(pod),
            POD,
            &Owner::apiary(AGENT_ID),
            now,
        )
    };
    let pod = expiring("100");
    let change = |f: fn(&mut ObservedPod)| {
        let mut pod = pod.clone();
        f(&mut pod);
        pod
    };
    assert_eq!(
        decide(&pod, Some(AT - 1)),
        ExpiryDecision::Alive { expires_at: AT }
    );
    let ExpiryDecision::Collect {
        deletion,
        secret,
        expires_at,
    } = decide(&pod, Some(AT))
    else {
        panic!("collectable at the instant")
    };
    assert_eq!(deletion.fence().resource_version(), "100");
    assert_eq!(secret, pod.facts.env_from_secret);
    assert_eq!(expires_at, AT);
    assert_eq!(
        decide(&pod, None),
        ExpiryDecision::NoClock { expires_at: AT }
    );
    let mut dead = own_pod(terminated(1, Some("Error")));
    dead.marks.expires_at = Some(EXPIRY.into());
    for (pod, now, decision) in [
        (
            change(|p| p.marks.expires_at = Some("soon".into())),
            AT * 2,
            ExpiryDecision::NoExpiry,
        ),
        (own_pod(running()), AT * 2, ExpiryDecision::NoExpiry),
        (
            change(|p| p.marks.agent_id = Some(OTHER_AGENT_ID.into())),
            AT * 2,
            ExpiryDecision::Foreign,
        ),
        (
            change(|p| p.marks.deletion_marked = true),
            AT,
            ExpiryDecision::Deleting,
        ),
        (dead, AT, ExpiryDecision::Terminated),
    ] {
        assert_eq!(decide(&pod, Some(now)), decision, "{pod:?}");
    }
    assert_eq!(
        decide_expiry(&[], POD, &Owner::apiary(AGENT_ID), Some(AT)),
        ExpiryDecision::Absent
    );
}

/// The whole collection: fenced delete with the listing's fence, wait, re-read until gone,
/// then the Secret, uid-fenced, only after the pod is gone.
#[test]
fn collects_pod_then_waits_then_its_secret() {
    let mut marked = expiring("101");
    marked.marks.deletion_marked = true;
    let secret = asks("the Secret's delete", |r| {
        matches!(r, Request::DeleteSecret { deletion: d, warn_on_failure: false }
                if d.name() == its_secret())
    });
    let report = ExpireReport {
        dry_run: false,
        pod: Some(POD.into()),
        expired_at: Some(AT),
        secrets: vec![its_secret()],
        replaced: false,
        failures: vec![],
    };
    play(ExpireMachine::new(spec(false)), to_delete()).then([
        feed(deleted(DeleteAnswer::Accepted), wait(None)).at(S(1)),
        feed(Answer::Waited, get()).at(S(3)),
        feed(Answer::PodRead(Ok(Some(marked))), wait(Some("101"))),
        feed(Answer::Waited, get()).at(S(5)),
        feed(Answer::PodRead(Ok(None)), list(true)),
        feed(its_secret_listed(), secret),
        feed(deleted(DeleteAnswer::Accepted), done(Ok(report))),
    ]);
}

/// A dry run plans the pod and its Secret and performs nothing after the listing.
#[test]
fn dry_run_only_lists() {
    let plan = reports("the plan", |r| {
        r.dry_run && r.pod.as_deref() == Some(POD) && r.secrets == [its_secret()]
    });
    play(
        ExpireMachine::new(spec(true)),
        [feed(Answer::Start, list(false)), feed(expired("100"), plan)],
    );
}

/// An alive or clockless agent is left alone: the pass finishes with nothing collected.
#[test]
fn alive_agents_are_left_alone() {
    for now in [Some(AT - 1), None] {
        let alive = listed(vec![expiring("100")], vec![], now);
        play(
            ExpireMachine::new(spec(false)),
            [
                feed(Answer::Start, list(false)),
                feed(alive, done(Ok(ExpireReport::default()))),
            ],
        );
    }
}

/// A failed precondition (renewed since the listing) lists again and decides afresh: a renewed
/// pod is kept, never deleted with the old fence.
#[test]
fn precondition_failed_decides_again() {
    let mut renewed = expiring("102");
    renewed.marks.expires_at = Some("2026-08-02T06:00:00Z".into());
    let renewed = listed(vec![renewed], vec![], Some(AT + 1));
    play(ExpireMachine::new(spec(false)), to_delete()).then([
        feed(deleted(DeleteAnswer::PreconditionFailed), list(false)),
        feed(renewed, done(Ok(ExpireReport::default()))).at(S(1)),
    ]);
}

/// The wait ends at the deadline and then no Secret is deleted.
#[test]
fn timeout_keeps_the_secret() {
    let timeout = Err(ExpireError::Timeout {
        pod: POD.into(),
        deadline: S(120),
    });
    play(ExpireMachine::new(spec(false)), to_delete()).then([
        feed(deleted(DeleteAnswer::Accepted), wait(None)),
        feed(Answer::Waited, get()).at(S(119)),
        feed(Answer::PodRead(Ok(Some(expiring("101")))), done(timeout)).at(S(120)),
    ]);
}

/// A new pod under the name (a concurrent deploy) ends the wait; it references its own Secret,
/// and a listed pod still referencing the old Secret protects it.
#[test]
fn replaced_pod_is_left_and_references_protect() {
    let mut new = own_pod(running());
    new.marks.uid = Some("u2".into());
    let both = listed(
        vec![new.clone()],
        vec![own_secret(&its_secret(), Some(1))],
        Some(AT),
    );
    let left = reports("replaced, the Secret its", |r| {
        r.replaced && r.secrets.is_empty()
    });
    play(ExpireMachine::new(spec(false)), to_delete()).then([
        feed(deleted(DeleteAnswer::Accepted), wait(None)),
        feed(Answer::Waited, get()).at(S(2)),
        feed(Answer::PodRead(Ok(Some(new))), list(true)),
        feed(both, left),
    ]);
}

/// Pod gone before the delete: straight to the Secret; failures of reads end it; Secret delete
/// failures are reported.
#[test]
fn not_found_and_failures() {
    let failure = RequestFailure::api(500, "InternalError", "boom");
    let reported = failure.clone();
    let secret = asks("a Secret delete", |r| {
        matches!(r, Request::DeleteSecret { .. })
    });
    play(ExpireMachine::new(spec(false)), to_delete()).then([
        feed(deleted(DeleteAnswer::NotFound), list(true)),
        feed(its_secret_listed(), secret),
        feed(
            Answer::Deleted(Err(failure.clone())),
            reports("the failure", move |r| r.failures == [reported]),
        ),
    ]);
    play(
        ExpireMachine::new(spec(false)),
        [
            feed(Answer::Start, list(false)),
            feed(
                Answer::Listed(Err(failure.clone())),
                done(Err(ExpireError::Failed(failure))),
            ),
        ],
    );
    let internal = ends("an internal failure", |o: &ExpireOutput| {
        matches!(o, Err(ExpireError::Failed(_)))
    });
    play(
        ExpireMachine::new(spec(false)),
        [feed(Answer::Waited, internal)],
    );
}
