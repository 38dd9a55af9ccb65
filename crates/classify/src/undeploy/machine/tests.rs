//! Tests of the undeploy machine (deploy.md § undeploy; scenarios S3–S7), one per transition,
//! each a script (`crate::testkit::script`): answers in, requests out. The property tests over
//! arbitrary answer sequences are in `tests/props/undeploy_props.rs`.

use super::*;
use crate::binding::Owner;
use crate::request::Listing;
use crate::request::Machine as _;
use crate::status::StatusState;
use crate::testkit::script::{Beat, Check, Play, ask, asks, done, ends, feed, run, wait_out};
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, POD, own_pod, own_secret, running};
use crate::workspace::ClaimFate;

const S: fn(u64) -> Duration = Duration::from_secs;
const SECRET: &str = "apiary-research-bot-1-72bea12366a3-0000abcd";

type UndeployOutput = Result<UndeployReport, UndeployError>;

fn spec(wait: bool) -> UndeploySpec {
    UndeploySpec {
        pod_name: POD.into(),
        owner: Owner::apiary(AGENT_ID),
        wait,
        deadline: S(600),
        poll: S(2),
        delete_workspace: false,
        grace: None,
    }
}

/// A play of `spec` from a reading far from zero (the deadline counts from the first step, not
/// from zero), started: the first read asked for.
fn started(spec: UndeploySpec) -> Play<UndeployMachine> {
    Play::new(UndeployMachine::new(spec))
        .at(S(1_000))
        .then([feed(Answer::Start, get())])
}

/// `beats` after the start of an undeploy (waiting when `wait`); the agent's other objects,
/// asked for after the Secrets, answer that it has none (the tests of those requests answer
/// them in their scripts).
#[track_caller]
fn play(wait: bool, beats: Vec<Beat<UndeployMachine>>) -> Play<UndeployMachine> {
    Play::new(UndeployMachine::new(spec(wait)))
        .at(S(1_000))
        .answering(|r| match r {
            Request::RemovePolicy => Some(Answer::PolicyRemoved(Ok(None))),
            Request::SettleWorkspace { .. } => Some(Answer::WorkspaceSettled(Ok(None))),
            _ => None,
        })
        .then([feed(Answer::Start, get())])
        .then(beats)
}

/// A read of the pod name, through the stuck-pod watch (undeploy waits for its pod to go).
fn get() -> Check<UndeployOutput> {
    ask(Request::GetPod {
        name: POD.into(),
        watch_stuck: true,
    })
}

/// The listing of step 4; undeploy reports a failed one itself.
fn list() -> Check<UndeployOutput> {
    ask(Request::List {
        secrets: true,
        dropping: None,
    })
}

fn read(pod: Option<ObservedPod>) -> Answer {
    Answer::PodRead(Ok(pod))
}

fn deleted(answer: DeleteAnswer) -> Answer {
    Answer::Deleted(Ok(answer))
}

fn with_rv(mut pod: ObservedPod, uid: &str, rv: &str) -> ObservedPod {
    pod.marks.uid = Some(uid.into());
    pod.marks.resource_version = Some(rv.into());
    pod
}

fn listing(secrets: &[&str], pods: Vec<ObservedPod>) -> Answer {
    Answer::Listed(Ok(Listing {
        pods,
        secrets: secrets.iter().map(|s| own_secret(s, Some(0))).collect(),
        ..Listing::default()
    }))
}

/// The pod delete fenced by `uid` and `rv`.
fn delete_pod(uid: &'static str, rv: &'static str) -> Check<UndeployOutput> {
    asks("the fenced pod delete", move |r| {
        matches!(r, Request::DeletePod { deletion: d, note: None }
            if (d.fence().uid(), d.fence().resource_version()) == (uid, rv))
    })
}

fn delete_secret(name: &'static str) -> Check<UndeployOutput> {
    asks(
        "the Secret delete, a failure a warning of the shell's",
        move |r| {
            matches!(r, Request::DeleteSecret { deletion: d, warn_on_failure: true }
                if d.name() == name)
        },
    )
}

/// A report `test` accepts.
fn reports(
    what: &'static str,
    test: impl FnOnce(&UndeployReport) -> bool + 'static,
) -> Check<UndeployOutput> {
    ends(what, move |o: &UndeployOutput| o.as_ref().is_ok_and(test))
}

fn failed(error: UndeployError) -> Check<UndeployOutput> {
    done(Err(error))
}

fn boom() -> RequestFailure {
    RequestFailure::api(500, "InternalError", "could not delete")
}

/// S3: a started pod gets one fenced delete with the observed fence, is awaited until gone,
/// then its Secret is deleted.
#[test]
fn s3_delete_wait_then_secrets() {
    let pod = with_rv(own_pod(running()), "u1", "100");
    let poll = asks(
        "a poll's wait",
        |r| matches!(r, Request::Wait { max, .. } if *max == S(2)),
    );
    let report = UndeployReport {
        pod: Some(POD.into()),
        pod_deleted: true,
        waited: true,
        secrets: vec![SECRET.into()],
        kept_secrets: vec![],
        network_policy: None,
        workspace: None,
    };
    // The pod waited for until gone: the policy goes, then the claim is settled (kept).
    started(spec(true)).then([
        feed(read(Some(pod.clone())), delete_pod("u1", "100")),
        feed(deleted(DeleteAnswer::Accepted), get()),
        feed(read(Some(pod)), poll),
        wait_out(get()),
        feed(read(None), list()),
        feed(listing(&[SECRET], vec![]), delete_secret(SECRET)),
        feed(deleted(DeleteAnswer::Accepted), ask(Request::RemovePolicy)),
        feed(
            Answer::PolicyRemoved(Ok(None)),
            ask(Request::SettleWorkspace { delete: false }),
        ),
        feed(Answer::WorkspaceSettled(Ok(None)), done(Ok(report))),
    ]);
}

/// S4: no pod and no Secrets: a read, a list, success with nothing done.
#[test]
fn s4_absent_lists_and_succeeds() {
    play(
        true,
        vec![
            feed(read(None), list()),
            feed(listing(&[], vec![]), done(Ok(UndeployReport::default()))),
        ],
    );
}

/// S5: a foreign pod ends undeploy at once: no delete, no list.
#[test]
fn s5_foreign_touches_nothing() {
    let mut pod = own_pod(running());
    pod.marks.agent_id = Some(OTHER_AGENT_ID.into());
    let foreign = failed(UndeployError::ForeignPod { pod: POD.into() });
    play(true, vec![feed(read(Some(pod)), foreign)]);
}

/// S6: without waiting, the deleting pod still references its Secret, which is kept.
#[test]
fn s6_no_wait_keeps_the_referenced_secret() {
    let pod = own_pod(running());
    let mut marked = pod.clone();
    marked.marks.deletion_marked = true;
    let kept = reports("deleted, not waited, the Secret kept", |r| {
        r.pod_deleted && !r.waited && r.kept_secrets == [SECRET] && r.secrets.is_empty()
    });
    play(
        false,
        vec![
            feed(read(Some(pod)), delete_pod("u1", "100")),
            feed(deleted(DeleteAnswer::Accepted), list()),
            feed(listing(&[SECRET], vec![marked]), kept),
        ],
    );
}

/// S7: PreconditionFailed waits one poll, re-observes, and deletes with the new fence.
#[test]
fn s7_precondition_failed_waits_and_uses_the_new_fence() {
    // No re-read without a wait.
    let wait = asks("a wait", |r| matches!(r, Request::Wait { .. }));
    play(
        true,
        vec![
            feed(
                read(Some(with_rv(own_pod(running()), "u1", "100"))),
                delete_pod("u1", "100"),
            ),
            feed(deleted(DeleteAnswer::PreconditionFailed), wait),
            wait_out(get()),
            feed(
                read(Some(with_rv(own_pod(running()), "u1", "200"))),
                delete_pod("u1", "200"),
            ),
        ],
    );
}

/// A deletion-marked pod is only awaited: no delete.
#[test]
fn a_deletion_marked_pod_is_only_awaited() {
    let mut pod = own_pod(running());
    pod.marks.deletion_marked = true;
    let awaited = reports("awaited, not deleted", |r| {
        r.pod.as_deref() == Some(POD) && !r.pod_deleted && r.waited
    });
    play(
        true,
        vec![
            feed(read(Some(pod)), get()),
            feed(read(None), list()),
            feed(listing(&[], vec![]), awaited),
        ],
    );
}

/// A delete answered NotFound goes straight to the Secrets (nothing to await).
#[test]
fn not_found_goes_to_the_secrets() {
    play(
        true,
        vec![
            feed(read(Some(own_pod(running()))), delete_pod("u1", "100")),
            feed(deleted(DeleteAnswer::NotFound), list()),
        ],
    );
}

/// E4: the uid still there at the deadline: Timeout, and no list, so no Secret is deleted.
#[test]
fn e4_timeout_deletes_no_secret() {
    let pod = own_pod(running());
    let timeout = failed(UndeployError::Timeout {
        pod: POD.into(),
        deadline: S(600),
    });
    let observe = run(move |play: &mut Play<UndeployMachine>| {
        let waits = play.keep_answering(|_, r| {
            matches!(r, Request::GetPod { .. }).then(|| read(Some(pod.clone())))
        });
        assert!(waits.iter().all(|max| *max <= S(2)), "{waits:?}");
        assert_eq!(play.now, S(1_600), "waits end exactly at the deadline");
    });
    play(
        true,
        vec![
            feed(read(Some(own_pod(running()))), delete_pod("u1", "100")),
            feed(deleted(DeleteAnswer::Accepted), get()),
            observe,
            feed(Answer::Waited, timeout),
        ],
    );
}

/// A different uid under the name: the new pod is left alone, the Secrets still planned (its
/// reference protects its own), and the result says a concurrent deploy replaced it.
#[test]
fn a_replacement_is_left_and_reported() {
    let newer = with_rv(own_pod(running()), "u2", "300");
    let replaced = ends("replaced", |o: &UndeployOutput| {
        matches!(o, Err(UndeployError::Replaced { pod, report })
            if pod == POD && report.kept_secrets == [SECRET]
                && report.pod_deleted && !report.waited)
    });
    play(
        true,
        vec![
            feed(
                read(Some(with_rv(own_pod(running()), "u1", "100"))),
                delete_pod("u1", "100"),
            ),
            feed(deleted(DeleteAnswer::Accepted), get()),
            feed(read(Some(newer.clone())), list()),
            feed(listing(&[SECRET], vec![newer]), replaced),
        ],
    );
}

/// Every planned Secret is attempted; the first failure is the result, a changed one is kept.
#[test]
fn every_secret_is_attempted_and_the_first_failure_reported() {
    play(
        true,
        vec![
            feed(read(None), list()),
            feed(listing(&["a", "b", "c"], vec![]), delete_secret("a")),
            feed(Answer::Deleted(Err(boom())), delete_secret("b")),
            feed(
                deleted(DeleteAnswer::PreconditionFailed),
                delete_secret("c"),
            ),
            feed(
                Answer::Deleted(Err(RequestFailure::transport("later"))),
                failed(UndeployError::Failed(boom())),
            ),
        ],
    );
}

/// Read, delete and list failures end the operation with that failure.
#[test]
fn request_failures_end_the_operation() {
    let failure = || failed(UndeployError::Failed(boom()));
    for beats in [
        vec![feed(Answer::PodRead(Err(boom())), failure())],
        vec![
            feed(read(Some(own_pod(running()))), delete_pod("u1", "100")),
            feed(Answer::Deleted(Err(boom())), failure()),
        ],
        vec![
            feed(read(None), list()),
            feed(Answer::Listed(Err(boom())), failure()),
        ],
    ] {
        play(true, beats);
    }
}

/// An answer to an effect the machine did not ask for is an internal error, by name; once
/// finished the machine repeats its result.
#[test]
fn an_unasked_answer_is_internal_and_finish_repeats() {
    let named = ends("the internal error naming both", |o: &UndeployOutput| {
        o.as_ref().is_err_and(|e| {
            e.to_string()
                .contains("answered Waited while undeploy waited for PodRead")
        })
    });
    let repeated = ends("the internal error again", |o: &UndeployOutput| {
        matches!(o, Err(UndeployError::Internal { .. }))
    });
    play(
        true,
        vec![feed(Answer::Waited, named), feed(Answer::Start, repeated)],
    );
}

/// Progress reports each read of the pod name once per change, and the texts name the pod.
#[test]
fn progress_and_texts() {
    let progress = run(|play: &mut Play<UndeployMachine>| {
        assert_eq!(
            play.machine.poll_progress().map(|p| p.state),
            Some(StatusState::Started)
        );
        assert_eq!(play.machine.poll_progress(), None);
    });
    play(
        true,
        vec![
            feed(read(Some(own_pod(running()))), delete_pod("u1", "100")),
            progress,
        ],
    );
    for (error, needle) in [
        (
            UndeployError::ForeignPod { pod: "p".into() },
            "not managed by apiary",
        ),
        (
            UndeployError::Timeout {
                pod: "p".into(),
                deadline: S(600),
            },
            "timed out after 600s",
        ),
        (
            UndeployError::Replaced {
                pod: "p".into(),
                report: Box::default(),
            },
            "concurrent deploy created a new pod p",
        ),
        (UndeployError::Failed(boom()), "could not delete"),
    ] {
        assert!(error.to_string().contains(needle), "{error}");
    }
}

/// An undeploy whose pod was absent and whose one Secret went, up to the policy's removal.
fn after_secrets(delete_workspace: bool) -> Play<UndeployMachine> {
    started(UndeploySpec {
        delete_workspace,
        ..spec(true)
    })
    .then([
        feed(read(None), list()),
        feed(listing(&[SECRET], vec![]), delete_secret(SECRET)),
        feed(deleted(DeleteAnswer::Accepted), ask(Request::RemovePolicy)),
    ])
}

/// deploy.md § Egress control and § Persistent workspace: once no pod of the agent can run,
/// its policy is removed and then its claim settled — deleted only with `--delete-workspace`;
/// both land in the report.
#[test]
fn a_gone_agent_loses_its_policy_then_settles_its_claim() {
    for delete in [false, true] {
        let fate = ClaimFate {
            name: format!("{POD}-workspace"),
            deleted: delete,
        };
        let reported = fate.clone();
        let both = reports("the policy, the claim and the Secret", move |r| {
            r.network_policy.as_deref() == Some(POD)
                && r.workspace == Some(reported)
                && r.secrets == [SECRET]
        });
        after_secrets(delete).then([
            feed(
                Answer::PolicyRemoved(Ok(Some(POD.into()))),
                ask(Request::SettleWorkspace { delete }),
            ),
            feed(Answer::WorkspaceSettled(Ok(Some(fate))), both),
        ]);
    }
}

/// After `--no-wait` the pod may still run: its policy stays and its claim is only reported,
/// even with `--delete-workspace`.
#[test]
fn a_pod_not_waited_for_keeps_its_policy_and_claim() {
    let pod = with_rv(own_pod(running()), "u1", "100");
    let kept = reports("not waited, no policy removed", |r| {
        r.pod_deleted && !r.waited && r.network_policy.is_none()
    });
    started(UndeploySpec {
        delete_workspace: true,
        ..spec(false)
    })
    .then([
        feed(read(Some(pod)), delete_pod("u1", "100")),
        feed(deleted(DeleteAnswer::Accepted), list()),
        feed(
            listing(&[], vec![]),
            ask(Request::SettleWorkspace { delete: false }),
        ),
        feed(Answer::WorkspaceSettled(Ok(None)), kept),
    ]);
}

/// A failed policy removal or claim settle fails the undeploy with its failure (E12).
#[test]
fn a_failed_policy_or_claim_request_fails_the_undeploy() {
    let failure = || failed(UndeployError::Failed(boom()));
    after_secrets(true).then([feed(Answer::PolicyRemoved(Err(boom())), failure())]);
    after_secrets(true).then([
        feed(
            Answer::PolicyRemoved(Ok(None)),
            ask(Request::SettleWorkspace { delete: true }),
        ),
        feed(Answer::WorkspaceSettled(Err(boom())), failure()),
    ]);
}
