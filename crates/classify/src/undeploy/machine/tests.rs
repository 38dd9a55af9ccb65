//! Tests of the undeploy machine (deploy.md § undeploy; scenarios S3–S7), one per transition,
//! driven step by step. The property tests over arbitrary answer sequences are in
//! `tests/props/undeploy_props.rs`.

use super::*;
use crate::binding::Owner;
use crate::request::Listing;
use crate::request::Machine as _;
use crate::status::StatusState;
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, POD, own_pod, own_secret, running};
use crate::workspace::ClaimFate;

const S: fn(u64) -> Duration = Duration::from_secs;
const SECRET: &str = "apiary-research-bot-1-72bea12366a3-0000abcd";

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

/// A machine with a clock advanced by the test. The agent's other objects, asked for after the
/// Secrets, answer that it has none (their own tests step the machine directly).
struct Run {
    machine: UndeployMachine,
    now: Duration,
    /// The requests about the agent's other objects, in order.
    objects: Vec<Request>,
}

impl Run {
    fn new(wait: bool) -> Run {
        // A reading far from zero: the deadline counts from the first step, not from zero.
        Run {
            machine: UndeployMachine::new(spec(wait)),
            now: S(1_000),
            objects: Vec::new(),
        }
    }

    fn step(&mut self, event: Answer) -> UndeployStep {
        let mut step = self.machine.step(self.now, event);
        loop {
            let answer = match &step {
                Step::Request(Request::RemovePolicy) => Answer::PolicyRemoved(Ok(None)),
                Step::Request(Request::SettleWorkspace { .. }) => {
                    Answer::WorkspaceSettled(Ok(None))
                }
                _ => return step,
            };
            if let Step::Request(request) = step {
                self.objects.push(request);
            }
            step = self.machine.step(self.now, answer);
        }
    }

    fn wait(&mut self, effect: &UndeployStep) -> UndeployStep {
        match effect {
            Step::Request(Request::Wait { max, .. }) => {
                self.now += *max;
                self.step(Answer::Waited)
            }
            other => panic!("expected a wait, got {other:?}"),
        }
    }
}

fn get() -> UndeployStep {
    Step::Request(Request::GetPod { name: POD.into() })
}

fn read(pod: Option<ObservedPod>) -> Answer {
    Answer::PodRead(Ok(pod))
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

fn report(effect: UndeployStep) -> UndeployReport {
    match effect {
        Step::Done(Ok(report)) => report,
        other => panic!("expected a report, got {other:?}"),
    }
}

fn error(effect: UndeployStep) -> UndeployError {
    match effect {
        Step::Done(Err(error)) => error,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn boom() -> RequestFailure {
    RequestFailure::api(500, "InternalError", "could not delete")
}

/// S3: a started pod gets one fenced delete with the observed fence, is awaited until gone,
/// then its Secret is deleted.
#[test]
fn s3_delete_wait_then_secrets() {
    let mut run = Run::new(true);
    assert_eq!(run.step(Answer::Start), get());
    let pod = with_rv(own_pod(running()), "u1", "100");
    let deletion = match run.step(read(Some(pod.clone()))) {
        Step::Request(Request::DeletePod(d)) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (deletion.fence().uid(), deletion.fence().resource_version()),
        ("u1", "100")
    );
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    let effect = run.step(read(Some(pod)));
    assert!(matches!(effect, Step::Request(Request::Wait { max, .. }) if max == S(2)));
    assert_eq!(run.wait(&effect), get());
    assert_eq!(
        run.step(read(None)),
        Step::Request(Request::List { secrets: true })
    );
    let effect = run.step(listing(&[SECRET], vec![]));
    assert!(matches!(effect, Step::Request(Request::DeleteSecret(ref d)) if d.name() == SECRET));
    let done = report(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))));
    // The pod waited for until gone: the policy goes, then the claim is settled (kept).
    assert_eq!(
        run.objects,
        [
            Request::RemovePolicy,
            Request::SettleWorkspace { delete: false }
        ]
    );
    assert_eq!(
        done,
        UndeployReport {
            pod: Some(POD.into()),
            pod_deleted: true,
            waited: true,
            secrets: vec![SECRET.into()],
            kept_secrets: vec![],
            network_policy: None,
            workspace: None,
        }
    );
}

/// S4: no pod and no Secrets: a read, a list, success with nothing done.
#[test]
fn s4_absent_lists_and_succeeds() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    assert_eq!(
        run.step(read(None)),
        Step::Request(Request::List { secrets: true })
    );
    assert_eq!(
        report(run.step(listing(&[], vec![]))),
        UndeployReport::default()
    );
}

/// S5: a foreign pod ends undeploy at once: no delete, no list.
#[test]
fn s5_foreign_touches_nothing() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    let mut pod = own_pod(running());
    pod.marks.agent_id = Some(OTHER_AGENT_ID.into());
    assert_eq!(
        error(run.step(read(Some(pod)))),
        UndeployError::ForeignPod { pod: POD.into() }
    );
}

/// S6: without waiting, the deleting pod still references its Secret, which is kept.
#[test]
fn s6_no_wait_keeps_the_referenced_secret() {
    let mut run = Run::new(false);
    run.step(Answer::Start);
    let pod = own_pod(running());
    run.step(read(Some(pod.clone())));
    assert_eq!(
        run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))),
        Step::Request(Request::List { secrets: true })
    );
    let mut marked = pod;
    marked.marks.deletion_marked = true;
    let done = report(run.step(listing(&[SECRET], vec![marked])));
    assert!(done.pod_deleted && !done.waited);
    assert_eq!(done.kept_secrets, [SECRET]);
    assert!(done.secrets.is_empty());
}

/// S7: PreconditionFailed waits one poll, re-observes, and deletes with the new fence.
#[test]
fn s7_precondition_failed_waits_and_uses_the_new_fence() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    run.step(read(Some(with_rv(own_pod(running()), "u1", "100"))));
    let effect = run.step(Answer::Deleted(Ok(DeleteAnswer::PreconditionFailed)));
    assert!(
        matches!(effect, Step::Request(Request::Wait { .. })),
        "no re-read without a wait: {effect:?}"
    );
    assert_eq!(run.wait(&effect), get());
    match run.step(read(Some(with_rv(own_pod(running()), "u1", "200")))) {
        Step::Request(Request::DeletePod(d)) => assert_eq!(d.fence().resource_version(), "200"),
        other => panic!("{other:?}"),
    }
}

/// A deletion-marked pod is only awaited: no delete.
#[test]
fn a_deletion_marked_pod_is_only_awaited() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    let mut pod = own_pod(running());
    pod.marks.deletion_marked = true;
    assert_eq!(run.step(read(Some(pod))), get());
    assert_eq!(
        run.step(read(None)),
        Step::Request(Request::List { secrets: true })
    );
    let done = report(run.step(listing(&[], vec![])));
    assert_eq!(done.pod.as_deref(), Some(POD));
    assert!(!done.pod_deleted && done.waited);
}

/// A delete answered NotFound goes straight to the Secrets (nothing to await).
#[test]
fn not_found_goes_to_the_secrets() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    run.step(read(Some(own_pod(running()))));
    assert_eq!(
        run.step(Answer::Deleted(Ok(DeleteAnswer::NotFound))),
        Step::Request(Request::List { secrets: true })
    );
}

/// E4: the uid still there at the deadline: Timeout, and no list, so no Secret is deleted.
#[test]
fn e4_timeout_deletes_no_secret() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    let pod = own_pod(running());
    run.step(read(Some(pod.clone())));
    let mut effect = run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    let mut steps = 0;
    let last_max = loop {
        steps += 1;
        assert!(steps < 2_000, "never expired");
        effect = match effect {
            Step::Request(Request::GetPod { .. }) => run.step(read(Some(pod.clone()))),
            Step::Request(Request::Wait { max, .. }) => {
                let effect = Step::Request(Request::Wait {
                    max,
                    pod: POD.into(),
                    resource_version: None,
                });
                let next = run.wait(&effect);
                if !matches!(next, Step::Request(Request::GetPod { .. })) {
                    break max;
                }
                next
            }
            Step::Done(_) => break Duration::ZERO,
            other => panic!("{other:?}"),
        };
    };
    assert_eq!(
        error(run.step(Answer::Waited)),
        UndeployError::Timeout {
            pod: POD.into(),
            deadline: S(600)
        }
    );
    assert!(last_max <= S(2));
    assert_eq!(run.now, S(1_600), "waits end exactly at the deadline");
}

/// A different uid under the name: the new pod is left alone, the Secrets still planned (its
/// reference protects its own), and the result says a concurrent deploy replaced it.
#[test]
fn a_replacement_is_left_and_reported() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    run.step(read(Some(with_rv(own_pod(running()), "u1", "100"))));
    run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    let newer = with_rv(own_pod(running()), "u2", "300");
    assert_eq!(
        run.step(read(Some(newer.clone()))),
        Step::Request(Request::List { secrets: true })
    );
    match error(run.step(listing(&[SECRET], vec![newer]))) {
        UndeployError::Replaced { pod, report } => {
            assert_eq!(pod, POD);
            assert_eq!(report.kept_secrets, [SECRET]);
            assert!(report.pod_deleted && !report.waited);
        }
        other => panic!("{other:?}"),
    }
}

/// Every planned Secret is attempted; the first failure is the result, a changed one is kept.
#[test]
fn every_secret_is_attempted_and_the_first_failure_reported() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    run.step(read(None));
    let first = run.step(listing(&["a", "b", "c"], vec![]));
    assert!(matches!(first, Step::Request(Request::DeleteSecret(ref d)) if d.name() == "a"));
    let second = run.step(Answer::Deleted(Err(boom())));
    assert!(matches!(second, Step::Request(Request::DeleteSecret(ref d)) if d.name() == "b"));
    let third = run.step(Answer::Deleted(Ok(DeleteAnswer::PreconditionFailed)));
    assert!(matches!(third, Step::Request(Request::DeleteSecret(ref d)) if d.name() == "c"));
    let e = error(run.step(Answer::Deleted(Err(RequestFailure::transport("later")))));
    assert_eq!(e, UndeployError::Failed(boom()));
}

/// Read, delete and list failures end the operation with that failure.
#[test]
fn request_failures_end_the_operation() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    assert_eq!(
        error(run.step(Answer::PodRead(Err(boom())))),
        UndeployError::Failed(boom())
    );
    let mut run = Run::new(true);
    run.step(Answer::Start);
    run.step(read(Some(own_pod(running()))));
    assert_eq!(
        error(run.step(Answer::Deleted(Err(boom())))),
        UndeployError::Failed(boom())
    );
    let mut run = Run::new(true);
    run.step(Answer::Start);
    run.step(read(None));
    assert_eq!(
        error(run.step(Answer::Listed(Err(boom())))),
        UndeployError::Failed(boom())
    );
}

/// An answer to an effect the machine did not ask for is an internal error, by name; once
/// finished the machine repeats its result.
#[test]
fn an_unasked_answer_is_internal_and_finish_repeats() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    let e = error(run.step(Answer::Waited));
    assert!(
        e.to_string()
            .contains("answered Waited while undeploy waited for PodRead"),
        "{e}"
    );
    assert!(matches!(
        run.step(Answer::Start),
        Step::Done(Err(UndeployError::Internal { .. }))
    ));
}

/// Progress reports each read of the pod name once per change, and the texts name the pod.
#[test]
fn progress_and_texts() {
    let mut run = Run::new(true);
    run.step(Answer::Start);
    run.step(read(Some(own_pod(running()))));
    assert_eq!(
        run.machine.poll_progress().map(|p| p.state),
        Some(StatusState::Started)
    );
    assert_eq!(run.machine.poll_progress(), None);
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

/// The machine at the end of an undeploy whose pod was absent and whose one Secret went: what
/// it asks next.
fn after_secrets(delete_workspace: bool) -> (UndeployMachine, UndeployStep) {
    let mut machine = UndeployMachine::new(UndeploySpec {
        delete_workspace,
        ..spec(true)
    });
    let now = S(1_000);
    machine.step(now, Answer::Start);
    machine.step(now, read(None));
    machine.step(now, listing(&[SECRET], vec![]));
    let next = machine.step(now, Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    (machine, next)
}

/// deploy.md § Egress control and § Persistent workspace: once no pod of the agent can run,
/// its policy is removed and then its claim settled — deleted only with `--delete-workspace`;
/// both land in the report.
#[test]
fn a_gone_agent_loses_its_policy_then_settles_its_claim() {
    for delete in [false, true] {
        let (mut machine, next) = after_secrets(delete);
        let now = S(1_000);
        assert_eq!(next, Step::Request(Request::RemovePolicy));
        let next = machine.step(now, Answer::PolicyRemoved(Ok(Some(POD.into()))));
        assert_eq!(next, Step::Request(Request::SettleWorkspace { delete }));
        let fate = ClaimFate {
            name: format!("{POD}-workspace"),
            deleted: delete,
        };
        let done = report(machine.step(now, Answer::WorkspaceSettled(Ok(Some(fate.clone())))));
        assert_eq!(done.network_policy.as_deref(), Some(POD));
        assert_eq!(done.workspace, Some(fate));
        assert_eq!(done.secrets, [SECRET]);
    }
}

/// After `--no-wait` the pod may still run: its policy stays and its claim is only reported,
/// even with `--delete-workspace`.
#[test]
fn a_pod_not_waited_for_keeps_its_policy_and_claim() {
    let mut machine = UndeployMachine::new(UndeploySpec {
        delete_workspace: true,
        ..spec(false)
    });
    let now = S(1_000);
    machine.step(now, Answer::Start);
    let pod = with_rv(own_pod(running()), "u1", "100");
    machine.step(now, read(Some(pod)));
    machine.step(now, Answer::Deleted(Ok(DeleteAnswer::Accepted)));
    let next = machine.step(now, listing(&[], vec![]));
    assert_eq!(
        next,
        Step::Request(Request::SettleWorkspace { delete: false })
    );
    let done = report(machine.step(now, Answer::WorkspaceSettled(Ok(None))));
    assert!(done.pod_deleted && !done.waited);
    assert_eq!(done.network_policy, None);
}

/// A failed policy removal or claim settle fails the undeploy with its failure (E12).
#[test]
fn a_failed_policy_or_claim_request_fails_the_undeploy() {
    let now = S(1_000);
    let (mut machine, _) = after_secrets(true);
    assert_eq!(
        error(machine.step(now, Answer::PolicyRemoved(Err(boom())))),
        UndeployError::Failed(boom())
    );
    let (mut machine, _) = after_secrets(true);
    machine.step(now, Answer::PolicyRemoved(Ok(None)));
    assert_eq!(
        error(machine.step(now, Answer::WorkspaceSettled(Err(boom())))),
        UndeployError::Failed(boom())
    );
}
