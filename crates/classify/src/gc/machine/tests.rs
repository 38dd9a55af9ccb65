//! Tests of the GC pass machine (deploy.md § Execution; scenarios S8, S9 as far as they are
//! pure): the order of effects, the re-read fence, and what aborts the pass and what does not.

use super::*;
use crate::binding::Owner;
use crate::facts::ObservedPod;
use crate::request::Machine as _;
use crate::testkit::{AGENT_ID, POD, marks, own_pod, own_secret, running, terminated};
use std::time::Duration;

fn spec(dry_run: bool) -> GcSpec {
    GcSpec {
        owner: Owner::apiary(AGENT_ID),
        dry_run,
        remove_policy: false,
    }
}

fn dead(rv: &str) -> ObservedPod {
    let mut pod = own_pod(terminated(1, Some("Error")));
    pod.marks = marks(POD, "u1", rv);
    pod
}

fn listing(server_now: Option<i64>) -> Answer {
    Answer::Listed(Ok(Listing {
        pods: vec![dead("100")],
        secrets: vec![
            own_secret(&format!("{POD}-0000abcd"), Some(0)),
            own_secret("orphan", Some(0)),
        ],
        server_now,
    }))
}

fn boom() -> RequestFailure {
    RequestFailure::api(500, "InternalError", "boom")
}

fn finished(effect: GcStep) -> GcReport {
    match effect {
        Step::Done(Ok(report)) => report,
        other => panic!("expected a report, got {other:?}"),
    }
}

/// The full pass: list, re-read, delete with the **re-read** fence, then the planned Secrets
/// (the doomed pod's and, with a server clock, the old orphan).
#[test]
fn list_reread_delete_with_the_reread_fence_then_secrets() {
    let mut gc = GcMachine::new(spec(false));
    assert_eq!(
        gc.step(Duration::ZERO, Answer::Start),
        Step::Request(Request::List { secrets: true })
    );
    assert_eq!(
        gc.step(Duration::ZERO, listing(Some(5_000))),
        Step::Request(Request::GetPod { name: POD.into() })
    );
    match gc.step(Duration::ZERO, Answer::PodRead(Ok(Some(dead("205"))))) {
        Step::Request(Request::DeletePod(d)) => assert_eq!(d.fence().resource_version(), "205"),
        other => panic!("{other:?}"),
    }
    let first = gc.step(Duration::ZERO, Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    assert!(
        matches!(first, Step::Request(Request::DeleteSecret(ref d)) if d.name().ends_with("0000abcd"))
    );
    let second = gc.step(Duration::ZERO, Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    assert!(matches!(second, Step::Request(Request::DeleteSecret(ref d)) if d.name() == "orphan"));
    let report = finished(gc.step(Duration::ZERO, Answer::Deleted(Ok(DeleteAnswer::NotFound))));
    assert_eq!(report.pods, [POD]);
    assert_eq!(report.secrets, [format!("{POD}-0000abcd")]);
    assert_eq!(report.orphan_sweep, Some(OrphanSweep::Ran));
    assert!(report.failures.is_empty() && !report.dry_run);
}

/// S8: a dry run ends after the list with the plan, no re-read and no delete.
#[test]
fn s8_dry_run_reports_the_plan() {
    let mut gc = GcMachine::new(spec(true));
    gc.step(Duration::ZERO, Answer::Start);
    let report = finished(gc.step(Duration::ZERO, listing(None)));
    assert!(report.dry_run);
    assert_eq!(report.pods, [POD]);
    assert_eq!(report.secrets, [format!("{POD}-0000abcd")]);
    assert_eq!(report.orphan_sweep, Some(OrphanSweep::Skipped));
}

/// A pod started since the listing is skipped at re-read; its Secret is still deleted.
#[test]
fn a_pod_no_longer_terminated_is_skipped() {
    let mut gc = GcMachine::new(spec(false));
    gc.step(Duration::ZERO, Answer::Start);
    gc.step(Duration::ZERO, listing(None));
    let next = gc.step(
        Duration::ZERO,
        Answer::PodRead(Ok(Some(own_pod(running())))),
    );
    assert!(
        matches!(next, Step::Request(Request::DeleteSecret(_))),
        "{next:?}"
    );
    let next = gc.step(
        Duration::ZERO,
        Answer::Deleted(Ok(DeleteAnswer::PreconditionFailed)),
    );
    let report = finished(next);
    assert!(report.pods.is_empty() && report.secrets.is_empty());
}

/// Delete failures are collected and every other deletion still attempted; a silent
/// PreconditionFailed or NotFound on the pod is no failure.
#[test]
fn delete_failures_are_collected() {
    let mut gc = GcMachine::new(spec(false));
    gc.step(Duration::ZERO, Answer::Start);
    gc.step(Duration::ZERO, listing(None));
    gc.step(Duration::ZERO, Answer::PodRead(Ok(Some(dead("100")))));
    let next = gc.step(Duration::ZERO, Answer::Deleted(Err(boom())));
    assert!(matches!(next, Step::Request(Request::DeleteSecret(_))));
    let report = finished(gc.step(Duration::ZERO, Answer::Deleted(Err(boom()))));
    assert_eq!(report.failures, [boom(), boom()]);
    for answer in [DeleteAnswer::NotFound, DeleteAnswer::PreconditionFailed] {
        let mut gc = GcMachine::new(spec(false));
        gc.step(Duration::ZERO, Answer::Start);
        gc.step(Duration::ZERO, listing(None));
        gc.step(Duration::ZERO, Answer::PodRead(Ok(Some(dead("100")))));
        gc.step(Duration::ZERO, Answer::Deleted(Ok(answer)));
        let report = finished(gc.step(Duration::ZERO, Answer::Deleted(Ok(DeleteAnswer::Accepted))));
        assert!(report.pods.is_empty() && report.failures.is_empty());
    }
}

/// A list or re-read failure aborts the pass; an unasked answer is an internal error; a
/// finished pass repeats its result.
#[test]
fn list_and_reread_failures_abort() {
    let mut gc = GcMachine::new(spec(false));
    gc.step(Duration::ZERO, Answer::Start);
    assert_eq!(
        gc.step(Duration::ZERO, Answer::Listed(Err(boom()))),
        Step::Done(Err(boom()))
    );
    assert_eq!(
        gc.step(Duration::ZERO, Answer::Start),
        Step::Done(Err(boom()))
    );
    let mut gc = GcMachine::new(spec(false));
    gc.step(Duration::ZERO, Answer::Start);
    gc.step(Duration::ZERO, listing(None));
    assert_eq!(
        gc.step(Duration::ZERO, Answer::PodRead(Err(boom()))),
        Step::Done(Err(boom()))
    );
    let mut gc = GcMachine::new(spec(false));
    match gc.step(Duration::ZERO, Answer::PodRead(Ok(None))) {
        Step::Done(Err(failure)) => assert!(failure.message().contains("internal")),
        other => panic!("{other:?}"),
    }
}

/// A pod gone at re-read is skipped (G18) and the pass goes on.
#[test]
fn a_pod_gone_at_reread_is_skipped() {
    let mut gc = GcMachine::new(spec(false));
    gc.step(Duration::ZERO, Answer::Start);
    gc.step(Duration::ZERO, listing(None));
    assert!(matches!(
        gc.step(Duration::ZERO, Answer::PodRead(Ok(None))),
        Step::Request(Request::DeleteSecret(_))
    ));
}

/// deploy.md § Egress control: a pass empties the agent only when its listing showed no pod
/// and every listed Secret's delete was accepted; a listed pod, a skipped or failed Secret
/// delete, or a dry run never does.
#[test]
fn an_emptying_pass_is_one_without_pods_whose_secrets_all_went() {
    let orphans = |secrets: &[&str]| {
        Answer::Listed(Ok(Listing {
            pods: Vec::new(),
            secrets: secrets.iter().map(|s| own_secret(s, Some(0))).collect(),
            server_now: Some(5_000),
        }))
    };
    let run = |answers: &[Result<DeleteAnswer, RequestFailure>]| {
        let mut gc = GcMachine::new(spec(false));
        gc.step(Duration::ZERO, Answer::Start);
        let mut effect = gc.step(Duration::ZERO, orphans(&["a", "b"][..answers.len()]));
        for answer in answers {
            assert!(
                matches!(effect, Step::Request(Request::DeleteSecret(_))),
                "{effect:?}"
            );
            effect = gc.step(Duration::ZERO, Answer::Deleted(answer.clone()));
        }
        finished(effect).agent_emptied
    };
    assert!(run(&[
        Ok(DeleteAnswer::Accepted),
        Ok(DeleteAnswer::Accepted)
    ]));
    assert!(!run(&[
        Ok(DeleteAnswer::Accepted),
        Ok(DeleteAnswer::NotFound)
    ]));
    assert!(!run(&[
        Ok(DeleteAnswer::PreconditionFailed),
        Ok(DeleteAnswer::Accepted)
    ]));
    assert!(!run(&[Ok(DeleteAnswer::Accepted), Err(boom())]));
    let mut gc = GcMachine::new(spec(false));
    gc.step(Duration::ZERO, Answer::Start);
    assert!(
        finished(gc.step(Duration::ZERO, orphans(&[]))).agent_emptied,
        "nothing listed: empty"
    );
    let mut gc = GcMachine::new(spec(true));
    gc.step(Duration::ZERO, Answer::Start);
    assert!(
        !finished(gc.step(Duration::ZERO, orphans(&[]))).agent_emptied,
        "never in a dry run"
    );
    // A listed pod, even one the pass deletes, keeps the agent non-empty (it may still be
    // terminating).
    let mut gc = GcMachine::new(spec(false));
    gc.step(Duration::ZERO, Answer::Start);
    gc.step(Duration::ZERO, listing(Some(5_000)));
    gc.step(Duration::ZERO, Answer::PodRead(Ok(Some(dead("205")))));
    let mut effect = gc.step(Duration::ZERO, Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    while let Step::Request(Request::DeleteSecret(_)) = effect {
        effect = gc.step(Duration::ZERO, Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    }
    assert!(!finished(effect).agent_emptied);
}

/// deploy.md § Egress control: a pass that empties the agent removes its policy when asked to
/// (`gc`), reporting the name, or a failure as one more individual failure; a pass that leaves
/// something, or the deploy's preflight pass, never asks.
#[test]
fn an_emptying_pass_removes_the_policy_when_asked() {
    let now = Duration::ZERO;
    let emptied = |remove_policy| {
        let mut m = GcMachine::new(GcSpec {
            remove_policy,
            ..spec(false)
        });
        m.step(now, Answer::Start);
        let listing = Listing {
            secrets: vec![own_secret("orphan", Some(0))],
            server_now: Some(1_000_000),
            ..Listing::default()
        };
        let next = m.step(now, Answer::Listed(Ok(listing)));
        assert!(
            matches!(next, Step::Request(Request::DeleteSecret(_))),
            "{next:?}"
        );
        let next = m.step(now, Answer::Deleted(Ok(DeleteAnswer::Accepted)));
        (m, next)
    };
    let (_, next) = emptied(false);
    assert!(matches!(&next, Step::Done(Ok(r)) if r.agent_emptied && r.network_policy.is_none()));
    let (mut m, next) = emptied(true);
    assert_eq!(next, Step::Request(Request::RemovePolicy));
    let Step::Done(Ok(report)) = m.step(now, Answer::PolicyRemoved(Ok(Some(POD.into())))) else {
        panic!("the pass ends");
    };
    assert_eq!(report.network_policy.as_deref(), Some(POD));
    let (mut m, _) = emptied(true);
    let boom = RequestFailure::api(500, "InternalError", "boom");
    let Step::Done(Ok(report)) = m.step(now, Answer::PolicyRemoved(Err(boom.clone()))) else {
        panic!("the pass ends");
    };
    assert_eq!(report.failures, [boom]);
    assert_eq!(report.network_policy, None);
}
