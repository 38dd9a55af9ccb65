//! Tests of the GC pass machine (deploy.md § Execution; scenarios S8, S9 as far as they are
//! pure): the order of effects, the re-read fence, and what aborts the pass and what does not.
//! Each test is a script (`crate::testkit::script`): answers in, requests out.

use super::*;
use crate::binding::Owner;
use crate::facts::ObservedPod;
use crate::testkit::script::{Beat, Check, ask, asks, done, ends, feed, play};
use crate::testkit::{AGENT_ID, POD, marks, own_pod, own_secret, running, terminated};

type GcOutput = Result<GcReport, RequestFailure>;

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

/// A listing of no pod and these old Secrets, with a server clock.
fn orphans(secrets: &[&str]) -> Answer {
    Answer::Listed(Ok(Listing {
        pods: Vec::new(),
        secrets: secrets.iter().map(|s| own_secret(s, Some(0))).collect(),
        server_now: Some(5_000),
    }))
}

fn boom() -> RequestFailure {
    RequestFailure::api(500, "InternalError", "boom")
}

fn deleted(answer: DeleteAnswer) -> Answer {
    Answer::Deleted(Ok(answer))
}

fn reread(pod: Option<ObservedPod>) -> Answer {
    Answer::PodRead(Ok(pod))
}

/// The pass's listing; the pass reports a failed one itself.
fn list() -> Check<GcOutput> {
    ask(Request::List {
        secrets: true,
        dropping: None,
    })
}

/// A re-read, not through the stuck-pod watch (the pass never waits for a pod).
fn get() -> Check<GcOutput> {
    ask(Request::GetPod {
        name: POD.into(),
        watch_stuck: false,
    })
}

/// A pod delete the shell logs no line for (the report names it).
fn delete_pod() -> Check<GcOutput> {
    asks("a pod delete", |r| {
        matches!(r, Request::DeletePod { note: None, .. })
    })
}

/// A Secret delete, of `name` when given.
fn delete_secret(name: Option<&'static str>) -> Check<GcOutput> {
    asks("a Secret delete", move |r| {
        // The report lists a failed delete: the shell adds no warning.
        matches!(r, Request::DeleteSecret { deletion: d, warn_on_failure: false }
                if name.is_none_or(|n| d.name() == n))
    })
}

/// A report `test` accepts.
fn reports(what: &'static str, test: impl FnOnce(&GcReport) -> bool + 'static) -> Check<GcOutput> {
    ends(what, move |o: &GcOutput| o.as_ref().is_ok_and(test))
}

/// Start, the listing of one dead pod and two Secrets (no clock), and its re-read asked.
fn to_reread() -> Vec<Beat<GcMachine>> {
    vec![feed(Answer::Start, list()), feed(listing(None), get())]
}

/// The full pass: list, re-read, delete with the **re-read** fence, then the planned Secrets
/// (the doomed pod's and, with a server clock, the old orphan).
#[test]
fn list_reread_delete_with_the_reread_fence_then_secrets() {
    let fenced = asks(
        "the delete fenced by rv 205",
        |r| matches!(r, Request::DeletePod { deletion: d, .. } if d.fence().resource_version() == "205"),
    );
    let own = asks(
        "the doomed pod's Secret",
        |r| matches!(r, Request::DeleteSecret { deletion: d, .. } if d.name().ends_with("0000abcd")),
    );
    let report = reports("the full report", |r| {
        r.pods == [POD]
            && r.secrets == [format!("{POD}-0000abcd")]
            && r.orphan_sweep == Some(OrphanSweep::Ran)
            && r.failures.is_empty()
            && !r.dry_run
    });
    play(
        GcMachine::new(spec(false)),
        [
            feed(Answer::Start, list()),
            feed(listing(Some(5_000)), get()),
            feed(reread(Some(dead("205"))), fenced),
            feed(deleted(DeleteAnswer::Accepted), own),
            feed(
                deleted(DeleteAnswer::Accepted),
                delete_secret(Some("orphan")),
            ),
            feed(deleted(DeleteAnswer::NotFound), report),
        ],
    );
}

/// S8: a dry run ends after the list with the plan, no re-read and no delete.
#[test]
fn s8_dry_run_reports_the_plan() {
    let plan = reports("the plan", |r| {
        r.dry_run
            && r.pods == [POD]
            && r.secrets == [format!("{POD}-0000abcd")]
            && r.orphan_sweep == Some(OrphanSweep::Skipped)
    });
    play(
        GcMachine::new(spec(true)),
        [feed(Answer::Start, list()), feed(listing(None), plan)],
    );
}

/// A pod started since the listing is skipped at re-read; its Secret is still deleted.
#[test]
fn a_pod_no_longer_terminated_is_skipped() {
    let nothing = reports("nothing deleted", |r| {
        r.pods.is_empty() && r.secrets.is_empty()
    });
    play(GcMachine::new(spec(false)), to_reread()).then([
        feed(reread(Some(own_pod(running()))), delete_secret(None)),
        feed(deleted(DeleteAnswer::PreconditionFailed), nothing),
    ]);
}

/// Delete failures are collected and every other deletion still attempted; a silent
/// PreconditionFailed or NotFound on the pod is no failure.
#[test]
fn delete_failures_are_collected() {
    let both = reports("both failures", |r| r.failures == [boom(), boom()]);
    play(GcMachine::new(spec(false)), to_reread()).then([
        feed(reread(Some(dead("100"))), delete_pod()),
        feed(Answer::Deleted(Err(boom())), delete_secret(None)),
        feed(Answer::Deleted(Err(boom())), both),
    ]);
    for answer in [DeleteAnswer::NotFound, DeleteAnswer::PreconditionFailed] {
        let silent = reports("no pod, no failure", |r| {
            r.pods.is_empty() && r.failures.is_empty()
        });
        play(GcMachine::new(spec(false)), to_reread()).then([
            feed(reread(Some(dead("100"))), delete_pod()),
            feed(deleted(answer), delete_secret(None)),
            feed(deleted(DeleteAnswer::Accepted), silent),
        ]);
    }
}

/// A list or re-read failure aborts the pass; an unasked answer is an internal error; a
/// finished pass repeats its result.
#[test]
fn list_and_reread_failures_abort() {
    play(
        GcMachine::new(spec(false)),
        [
            feed(Answer::Start, list()),
            feed(Answer::Listed(Err(boom())), done(Err(boom()))),
            feed(Answer::Start, done(Err(boom()))),
        ],
    );
    play(GcMachine::new(spec(false)), to_reread())
        .then([feed(Answer::PodRead(Err(boom())), done(Err(boom())))]);
    let internal = ends("an internal error", |o: &GcOutput| {
        o.as_ref().is_err_and(|f| f.message().contains("internal"))
    });
    play(GcMachine::new(spec(false)), [feed(reread(None), internal)]);
}

/// A pod gone at re-read is skipped (G18) and the pass goes on.
#[test]
fn a_pod_gone_at_reread_is_skipped() {
    play(GcMachine::new(spec(false)), to_reread()).then([feed(reread(None), delete_secret(None))]);
}

/// deploy.md § Egress control: a pass empties the agent only when its listing showed no pod
/// and every listed Secret's delete was accepted; a listed pod, a skipped or failed Secret
/// delete, or a dry run never does.
#[test]
fn an_emptying_pass_is_one_without_pods_whose_secrets_all_went() {
    let emptied = |yes: bool| reports("whether emptied", move |r| r.agent_emptied == yes);
    let accepted = || Ok(DeleteAnswer::Accepted);
    for (answers, empty) in [
        ([accepted(), accepted()], true),
        ([accepted(), Ok(DeleteAnswer::NotFound)], false),
        ([Ok(DeleteAnswer::PreconditionFailed), accepted()], false),
        ([accepted(), Err(boom())], false),
    ] {
        let [first, second] = answers;
        play(
            GcMachine::new(spec(false)),
            [
                feed(Answer::Start, list()),
                feed(orphans(&["a", "b"]), delete_secret(Some("a"))),
                feed(Answer::Deleted(first), delete_secret(Some("b"))),
                feed(Answer::Deleted(second), emptied(empty)),
            ],
        );
    }
    // Nothing listed: empty, but never in a dry run.
    for (dry_run, empty) in [(false, true), (true, false)] {
        play(
            GcMachine::new(spec(dry_run)),
            [
                feed(Answer::Start, list()),
                feed(orphans(&[]), emptied(empty)),
            ],
        );
    }
    // A listed pod, even one the pass deletes, keeps the agent non-empty (it may still be
    // terminating).
    play(
        GcMachine::new(spec(false)),
        [
            feed(Answer::Start, list()),
            feed(listing(Some(5_000)), get()),
            feed(reread(Some(dead("205"))), delete_pod()),
            feed(deleted(DeleteAnswer::Accepted), delete_secret(None)),
            feed(
                deleted(DeleteAnswer::Accepted),
                delete_secret(Some("orphan")),
            ),
            feed(deleted(DeleteAnswer::Accepted), emptied(false)),
        ],
    );
}

/// deploy.md § Egress control: a pass that empties the agent removes its policy when asked to
/// (`gc`), reporting the name, or a failure as one more individual failure; a pass that leaves
/// something, or the deploy's preflight pass, never asks.
#[test]
fn an_emptying_pass_removes_the_policy_when_asked() {
    let emptied = |remove_policy, then: Check<GcOutput>| {
        let listing = Answer::Listed(Ok(Listing {
            secrets: vec![own_secret("orphan", Some(0))],
            server_now: Some(1_000_000),
            ..Listing::default()
        }));
        let spec = GcSpec {
            remove_policy,
            ..spec(false)
        };
        play(
            GcMachine::new(spec),
            [
                feed(Answer::Start, list()),
                feed(listing, delete_secret(None)),
                feed(deleted(DeleteAnswer::Accepted), then),
            ],
        )
    };
    emptied(
        false,
        reports("emptied, no policy", |r| {
            r.agent_emptied && r.network_policy.is_none()
        }),
    );
    emptied(true, ask(Request::RemovePolicy)).then([feed(
        Answer::PolicyRemoved(Ok(Some(POD.into()))),
        reports("the policy named", |r| {
            r.network_policy.as_deref() == Some(POD)
        }),
    )]);
    emptied(true, ask(Request::RemovePolicy)).then([feed(
        Answer::PolicyRemoved(Err(boom())),
        reports("the failure", |r| {
            r.failures == [boom()] && r.network_policy.is_none()
        }),
    )]);
}
