//! Tests of the deploy state machine (deploy.md § The deploy operation): one test per rule,
//! driven step by step. The property tests over arbitrary answer sequences live in
//! `tests/props/machine_props.rs`.

use crate::binding::Owner;
use crate::startup::Missing;
use std::time::Duration;

use super::*;
use crate::deploy::*;
use crate::request::{
    Answer, Listing, Machine as _, NamespaceCheck, NamespaceFailure, OwnSecret, PodCreateOutcome,
    Prepared, Request, SecretCreateFailure, Step,
};

/// What one step of the deploy machine returns.
type DeployStep = Step<Result<Deployed, DeployError>>;
use crate::answer::{CreateAnswer, DeleteAnswer};
use crate::condition::LatestCondition;
use crate::facts::ObservedPod;
use crate::failure::RequestFailure;
use crate::fence::Fence;
use crate::policy::PolicyFailure;
use crate::pull::PullFailure;
use crate::testkit::{
    AGENT_ID, IMAGE, INTENT, OTHER_AGENT_ID, OTHER_INTENT, POD, own_pod, own_secret, running,
    terminated, waiting,
};
use crate::workspace::{ClaimFailure, ClaimProblem, ClaimReport};

const SECRET: &str = "apiary-research-bot-1-72bea12366a3-0badc0de";

fn spec() -> DeploySpec {
    DeploySpec {
        namespace: "agents".into(),
        pod_name: POD.into(),
        owner: Owner::apiary(AGENT_ID),
        image: IMAGE.into(),
        desired_intent: INTENT.into(),
        deadline: DEFAULT_DEADLINE,
        poll: DEFAULT_POLL,
        service_account: None,
        preflight_gc: true,
        replace: false,
        min_running: Duration::ZERO,
        referenced_secrets: Vec::new(),
        isolate: false,
        workspace_claim: None,
        delete_grace: None,
    }
}

/// An apiserver failure with these words (a 500: no hint applies).
fn boom(message: &str) -> RequestFailure {
    RequestFailure::api(500, "InternalError", message)
}

/// This attempt's Secret, as the driver reports it.
fn own() -> OwnSecret {
    OwnSecret {
        generation: "0badc0de".into(),
        name: SECRET.into(),
    }
}

/// A machine with a fake elapsed clock advanced by the test.
struct Run {
    machine: DeployMachine,
    elapsed: Duration,
    /// The machine waits for the preflight's answer: the next pod read answers it, with the
    /// namespace present.
    preflight: bool,
    /// A replace's dry-run create check is answered "admitted" at once (the tests of the check
    /// itself turn this off and answer it).
    admit_checks: bool,
}

impl Run {
    fn new() -> Run {
        Run::with(spec())
    }

    fn with(spec: DeploySpec) -> Run {
        Run {
            machine: DeployMachine::new(spec),
            elapsed: Duration::ZERO,
            preflight: false,
            admit_checks: true,
        }
    }

    fn step(&mut self, event: Answer) -> DeployStep {
        let event = match event {
            Answer::PodRead(pod) if std::mem::take(&mut self.preflight) => Answer::Preflighted {
                namespace: Ok(NamespaceCheck::Present),
                pod,
            },
            other => other,
        };
        match self.machine.step(self.elapsed, event) {
            Step::Request(Request::CheckPodCreate) if self.admit_checks => self
                .machine
                .step(self.elapsed, Answer::PodCreateChecked(Ok(()))),
            step => step,
        }
    }

    /// Start: the preflight (namespace ensure, GC, first read) is asked for; the next pod read
    /// the test feeds answers it.
    fn reach_first_get(&mut self) {
        assert_eq!(self.step(Answer::Start), preflight(true));
        self.preflight = true;
    }

    /// Answer a Wait by advancing the clock by its `max`.
    fn wait(&mut self, effect: &DeployStep) -> DeployStep {
        match effect {
            Step::Request(Request::Wait { max, .. }) => {
                self.elapsed += *max;
                self.step(Answer::Waited)
            }
            other => panic!("expected a wait, got {other:?}"),
        }
    }
}

fn get() -> DeployStep {
    Step::Request(Request::GetPod { name: POD.into() })
}

fn preflight(gc: bool) -> DeployStep {
    Step::Request(Request::Preflight {
        pod: POD.into(),
        gc,
    })
}

/// The preflight's answer: the namespace as `namespace` says, the first read as `pod` says.
fn preflighted(
    namespace: Result<NamespaceCheck, NamespaceFailure>,
    pod: Result<Option<ObservedPod>, RequestFailure>,
) -> Answer {
    Answer::Preflighted { namespace, pod }
}

fn read(pod: ObservedPod) -> Answer {
    Answer::PodRead(Ok(Some(pod)))
}

fn absent() -> Answer {
    Answer::PodRead(Ok(None))
}

fn with_rv(mut pod: ObservedPod, uid: &str, rv: &str) -> ObservedPod {
    pod.marks.uid = Some(uid.into());
    pod.marks.resource_version = Some(rv.into());
    pod
}

fn marked(mut pod: ObservedPod) -> ObservedPod {
    pod.marks.deletion_marked = true;
    pod
}

fn foreign(mut pod: ObservedPod) -> ObservedPod {
    pod.marks.agent_id = Some(OTHER_AGENT_ID.into());
    pod
}

fn recoverable() -> ObservedPod {
    own_pod(waiting(Some("ContainerCreating"), None))
}

fn ok(pod: &str, intent_matches: bool) -> DeployStep {
    Step::Done(Ok(Deployed {
        pod: pod.into(),
        intent_matches,
        workspace: None,
        recorded_settings: None,
    }))
}

fn error(effect: DeployStep) -> DeployError {
    match effect {
        Step::Done(Err(e)) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn expect_wait(effect: &DeployStep, max: Duration) {
    match effect {
        Step::Request(Request::Wait { max: m, pod, .. }) => {
            assert_eq!(*m, max);
            assert_eq!(pod, POD);
        }
        other => panic!("expected a wait, got {other:?}"),
    }
}

/// Answer waits (advancing the clock) and reads (with `pod`) until another effect comes.
fn observe_until(run: &mut Run, mut effect: DeployStep, pod: &ObservedPod) -> (DeployStep, usize) {
    let mut polls = 0;
    // Once the deadline has passed, the read asked for is the one for the latest condition of
    // the error, where observing ends.
    for _ in 0..10_000 {
        effect = match effect {
            Step::Request(Request::Wait { .. }) => {
                polls += 1;
                run.wait(&effect)
            }
            Step::Request(Request::GetPod { .. }) if run.elapsed < run.machine.spec().deadline => {
                run.step(read(pod.clone()))
            }
            other => return (other, polls),
        }
    }
    panic!("the machine kept observing without end");
}

/// Create path up to the pod create: CreateSecret, then CreatePod naming the reported Secret.
fn create(run: &mut Run, after_absent: DeployStep) {
    assert_eq!(after_absent, Step::Request(Request::CreateSecret));
    assert_eq!(
        run.step(Answer::SecretCreated(Ok(own()))),
        Step::Request(Request::CreatePod { secret: own() })
    );
}

/// R2 (pure part): a verified started pod finishes at once; the only effects before are the
/// namespace ensure, GC and one read — zero mutation.
#[test]
fn r2_started_pod_is_noop_without_mutation() {
    let mut run = Run::new();
    run.reach_first_get();
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
    assert!(!run.machine.created_this_call());
}

/// R3: a started pod with a stale intent is returned, intent reported as not matching.
#[test]
fn r3_stale_intent_returned_not_matching() {
    let mut run = Run::with(DeploySpec {
        desired_intent: OTHER_INTENT.into(),
        ..spec()
    });
    run.reach_first_get();
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, false));
}

/// R1: empty cluster: Secret created before the pod, a poll wait, then the started pod.
#[test]
fn r1_create_then_observe_started() {
    let mut run = Run::new();
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
    expect_wait(&effect, DEFAULT_POLL);
    assert!(run.machine.created_this_call());
    assert_eq!(run.wait(&effect), get());
    let effect = run.step(read(recoverable()));
    expect_wait(&effect, DEFAULT_POLL);
    assert_eq!(run.wait(&effect), get());
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
}

/// R5/C5: a terminated pod is deleted with exactly its observed fence, then awaited, then
/// recreated.
#[test]
fn r5_terminated_fenced_delete_then_recreate() {
    let mut run = Run::new();
    run.reach_first_get();
    let pod = with_rv(own_pod(terminated(1, Some("Error"))), "u9", "100");
    match run.step(read(pod)) {
        Step::Request(Request::DeletePod(d)) => {
            assert_eq!(d.name(), POD);
            assert_eq!(d.fence(), &Fence::new("u9".into(), "100".into()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    assert_eq!(
        run.step(absent()),
        get(),
        "disappeared: back to the loop top"
    );
    let effect = run.step(absent());
    create(&mut run, effect);
}

/// deploy.md § Delete and waiting for disappearance: NotFound on delete is success too.
#[test]
fn delete_not_found_waits_for_disappearance() {
    let mut run = Run::new();
    run.reach_first_get();
    assert!(matches!(
        run.step(read(own_pod(terminated(0, None)))),
        Step::Request(Request::DeletePod(_))
    ));
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::NotFound))), get());
}

/// R7: PreconditionFailed → sleep a poll, re-classify; the pod started meanwhile → NoOp, with
/// exactly one delete.
#[test]
fn r7_precondition_failed_reclassifies_without_fresher_fence() {
    let mut run = Run::new();
    run.reach_first_get();
    let dead = with_rv(own_pod(terminated(1, None)), "u1", "100");
    assert!(matches!(
        run.step(read(dead)),
        Step::Request(Request::DeletePod(_))
    ));
    let effect = run.step(Answer::Deleted(Ok(DeleteAnswer::PreconditionFailed)));
    expect_wait(&effect, DEFAULT_POLL);
    assert_eq!(run.wait(&effect), get());
    let live = with_rv(own_pod(running()), "u1", "200");
    assert_eq!(run.step(read(live)), ok(POD, true));
}

/// R6-like: after PreconditionFailed a still-terminated pod is deleted with the fence of the
/// new observation (the new observation authorises it), never a substituted one.
#[test]
fn r6_second_delete_uses_new_observation() {
    let mut run = Run::new();
    run.reach_first_get();
    let dead = with_rv(own_pod(terminated(1, None)), "u1", "100");
    assert!(matches!(
        run.step(read(dead.clone())),
        Step::Request(Request::DeletePod(_))
    ));
    let effect = run.step(Answer::Deleted(Ok(DeleteAnswer::PreconditionFailed)));
    run.wait(&effect);
    match run.step(read(dead)) {
        Step::Request(Request::DeletePod(d)) => assert_eq!(d.fence().resource_version(), "100"),
        other => panic!("{other:?}"),
    }
}

/// R8/R29: recoverable with the same intent is observed to the deadline, never deleted; E1
/// names the seconds, the pod and the latest condition.
#[test]
fn r8_r29_recoverable_observed_to_deadline_then_e1() {
    let mut run = Run::new();
    run.reach_first_get();
    let effect = run.step(read(recoverable()));
    let (effect, polls) = observe_until(&mut run, effect, &recoverable());
    assert_eq!(polls, 300);
    assert_eq!(run.elapsed, DEFAULT_DEADLINE);
    assert_eq!(effect, Step::Request(Request::GetPod { name: POD.into() }));
    let e = error(run.step(read(recoverable())));
    let text = e.to_string();
    assert!(matches!(e, DeployError::DeadlineExceeded { .. }));
    assert!(text.contains("600s"), "{text}");
    assert!(text.contains(POD), "{text}");
    assert!(text.contains("ContainerCreating"), "{text}");
}

/// R30: a lowered deadline is honoured and named.
#[test]
fn r30_lowered_deadline_named() {
    let mut run = Run::with(DeploySpec {
        deadline: Duration::from_secs(60),
        ..spec()
    });
    run.reach_first_get();
    let effect = run.step(read(recoverable()));
    let (effect, polls) = observe_until(&mut run, effect, &recoverable());
    assert_eq!(effect, Step::Request(Request::GetPod { name: POD.into() }));
    assert_eq!(polls, 30);
    assert_eq!(run.elapsed, Duration::from_secs(60));
    let text = error(run.step(absent())).to_string();
    assert!(text.contains("60s"), "{text}");
    assert!(text.contains("the pod no longer exists"), "{text}");
}

/// A wait never extends past the deadline.
#[test]
fn wait_is_clamped_to_the_deadline() {
    let mut run = Run::new();
    run.reach_first_get();
    run.elapsed = Duration::from_millis(599_500);
    let effect = run.step(read(recoverable()));
    expect_wait(&effect, Duration::from_millis(500));
    run.elapsed = Duration::from_secs(601);
    assert_eq!(
        run.step(Answer::Waited),
        Step::Request(Request::GetPod { name: POD.into() })
    );
}

/// With no time left, a would-be wait continues at once into the deadline error (E1).
#[test]
fn no_time_left_skips_the_wait() {
    let mut run = Run::new();
    run.reach_first_get();
    run.elapsed = DEFAULT_DEADLINE;
    assert_eq!(
        run.step(read(recoverable())),
        Step::Request(Request::GetPod { name: POD.into() })
    );
}

/// The deadline check is `elapsed ≥ deadline`: just below still observes.
#[test]
fn deadline_boundary_is_inclusive() {
    let mut run = Run::new();
    run.reach_first_get();
    run.elapsed = DEFAULT_DEADLINE - Duration::from_nanos(1);
    assert!(matches!(
        run.step(absent()),
        Step::Request(Request::CreateSecret)
    ));
    let mut run = Run::new();
    run.reach_first_get();
    run.elapsed = DEFAULT_DEADLINE;
    assert_eq!(
        run.step(absent()),
        Step::Request(Request::GetPod { name: POD.into() })
    );
}

/// R10/R11: a pull failure reports E3 at once, with the registry text and no kubelet message.
#[test]
fn r10_r11_pull_failure_reports_e3_at_once() {
    let mut run = Run::new();
    run.reach_first_get();
    let pod = own_pod(waiting(
        Some("ImagePullBackOff"),
        Some("manifest unknown token=SUPERSECRET"),
    ));
    let e = error(run.step(read(pod)));
    assert_eq!(
        e,
        DeployError::PullFailing {
            pod: POD.into(),
            image: IMAGE.into(),
            kind: PullFailure::ManifestUnknown
        }
    );
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("{POD} did not start: ")),
        "{text}"
    );
    assert!(text.contains("has no image at"), "{text}");
    assert!(!text.contains("SUPERSECRET"));
    assert_eq!(run.elapsed, Duration::ZERO);
}

/// R12/C4: a deletion-marked running pod is awaited (no delete); once it is gone its own Secret
/// goes (uid-fenced, unreferenced: deploy.md § Replacing a live agent, rule 6), then the pod is
/// recreated.
#[test]
fn r12_deletion_marked_awaited_without_delete() {
    let mut run = Run::new();
    run.reach_first_get();
    let dying = marked(own_pod(running()));
    assert_eq!(run.step(read(dying.clone())), get());
    let effect = run.step(read(dying));
    expect_wait(&effect, DEFAULT_POLL);
    assert_eq!(run.wait(&effect), get());
    assert_eq!(run.step(absent()), list(), "gone: its Secret is looked up");
    let Step::Request(Request::DeleteSecret(deletion)) =
        run.step(Answer::Listed(Ok(old_secret_listing())))
    else {
        panic!("expected the gone pod's Secret's delete");
    };
    assert_eq!(deletion.name(), OLD_SECRET);
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    let effect = run.step(absent());
    create(&mut run, effect);
}

/// The disappearance wait ends when a different uid holds the name; what holds it now is
/// classified afresh.
#[test]
fn disappearance_ends_on_a_new_uid() {
    let mut run = Run::new();
    run.reach_first_get();
    assert_eq!(run.step(read(marked(own_pod(running())))), get());
    let successor = with_rv(own_pod(running()), "u2", "300");
    assert_eq!(
        run.step(read(successor.clone())),
        list(),
        "the old pod's Secret looked up"
    );
    // The successor references that Secret here, so it is kept.
    let listing = Listing {
        pods: vec![successor.clone()],
        ..old_secret_listing()
    };
    assert_eq!(run.step(Answer::Listed(Ok(listing))), get());
    assert_eq!(run.step(read(successor)), ok(POD, true));
}

/// E4: the disappearance wait times out at the deadline, naming the seconds and the pod.
#[test]
fn e4_disappearance_timeout() {
    let mut run = Run::new();
    run.reach_first_get();
    let dying = marked(own_pod(running()));
    let mut effect = run.step(read(dying.clone()));
    for _ in 0..10_000 {
        effect = match effect {
            Step::Request(Request::GetPod { .. }) => run.step(read(dying.clone())),
            Step::Request(Request::Wait { .. }) => run.wait(&effect),
            other => {
                assert_eq!(
                    error(other).to_string(),
                    format!("timed out after 600s waiting for pod {POD} to finish terminating")
                );
                assert_eq!(run.elapsed, DEFAULT_DEADLINE);
                return;
            }
        }
    }
    panic!("the disappearance wait never ended");
}

/// R13: `CreateContainerConfigError`, Secret exists → Recoverable → observed, no delete.
#[test]
fn r13_config_error_secret_exists_observes() {
    let mut run = Run::new();
    run.reach_first_get();
    let pod = own_pod(waiting(Some("CreateContainerConfigError"), None));
    assert_eq!(
        run.step(read(pod)),
        Step::Request(Request::SecretExists {
            name: format!("{POD}-0000abcd")
        })
    );
    expect_wait(&run.step(Answer::Exists(Ok(true))), DEFAULT_POLL);
}

/// R14: the same, Secret confirmed absent → ProvablyBroken → fenced delete.
#[test]
fn r14_config_error_secret_absent_deletes() {
    let mut run = Run::new();
    run.reach_first_get();
    let pod = own_pod(waiting(Some("CreateContainerConfigError"), None));
    run.step(read(pod));
    assert!(matches!(
        run.step(Answer::Exists(Ok(false))),
        Step::Request(Request::DeletePod(_))
    ));
}

/// A failed Secret check fails the operation (E12), naming the Secret.
#[test]
fn secret_check_error_is_e12() {
    let mut run = Run::new();
    run.reach_first_get();
    run.step(read(own_pod(waiting(
        Some("CreateContainerConfigError"),
        None,
    ))));
    let e = error(run.step(Answer::Exists(Err(boom("timeout")))));
    assert_eq!(
        e,
        DeployError::Failed {
            operation: "read secret".into(),
            object: format!("{POD}-0000abcd"),
            failure: boom("timeout")
        }
    );
}

/// R16: this call's pod terminates → E2 with the exit code; no delete; a single create.
#[test]
fn r16_own_pod_crash_reports_e2_not_delete() {
    let mut run = Run::new();
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
    run.wait(&effect);
    let crashed = own_pod(terminated(1, Some("Error")));
    assert_eq!(
        run.step(read(crashed.clone())),
        Step::Request(Request::GetPod { name: POD.into() })
    );
    let e = error(run.step(read(crashed)));
    let text = e.to_string();
    assert!(matches!(e, DeployError::CreatedPodFailed { .. }));
    assert!(text.contains("exited with code 1"), "{text}");
    assert!(
        text.contains(&format!("kubectl logs -n agents {POD} -c agent")),
        "{text}"
    );
    assert!(run.elapsed < DEFAULT_DEADLINE);
}

/// deploy.md § One create attempt per call: every replace classification after this call's create
/// is reported (rows 4, 5, 8).
#[test]
fn every_replace_after_own_create_is_e2() {
    let broken = own_pod(waiting(Some("InvalidImageName"), None));
    let mut divergent = recoverable();
    divergent.marks.create_intent = Some(OTHER_INTENT.into());
    for pod in [own_pod(terminated(0, None)), broken, divergent] {
        let mut run = Run::new();
        run.reach_first_get();
        let effect = run.step(absent());
        create(&mut run, effect);
        let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
        run.wait(&effect);
        assert_eq!(
            run.step(read(pod)),
            Step::Request(Request::GetPod { name: POD.into() })
        );
    }
}

/// R35: this call's pod vanishes → the loop may create again.
#[test]
fn r35_vanished_own_pod_may_be_recreated() {
    let mut run = Run::new();
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
    run.wait(&effect);
    let effect = run.step(absent());
    create(&mut run, effect);
}

/// R15/R22: lost race to a running winner: own Secret dropped (uid-fenced) when unreferenced,
/// winner adopted.
#[test]
fn r15_r22_lost_race_drops_own_secret_adopts_winner() {
    let mut run = Run::new();
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    assert_eq!(
        run.step(Answer::PodCreated(PodCreateOutcome::AlreadyExists)),
        get()
    );
    let winner = own_pod(running());
    assert_eq!(
        run.step(read(winner.clone())),
        Step::Request(Request::List { secrets: true })
    );
    let listing = Listing {
        pods: vec![winner.clone()],
        secrets: vec![
            own_secret(SECRET, Some(1)),
            own_secret(&format!("{POD}-0000abcd"), Some(1)),
        ],
        ..Listing::default()
    };
    match run.step(Answer::Listed(Ok(listing))) {
        Step::Request(Request::DeleteSecret(d)) => {
            assert_eq!(d.name(), SECRET);
            assert_eq!(d.uid(), format!("s-{SECRET}"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    assert_eq!(run.step(read(winner)), ok(POD, true));
}

/// deploy.md § Losing the create race, step 2: a referenced own Secret is kept; a failed listing
/// keeps it too.
#[test]
fn lost_race_keeps_referenced_own_secret() {
    for listed in [
        Ok(Listing {
            pods: vec![{
                let mut p = recoverable();
                p.facts.env_from_secret = Some(SECRET.into());
                p
            }],
            secrets: vec![own_secret(SECRET, Some(1))],
            ..Listing::default()
        }),
        Err(boom("forbidden")),
    ] {
        let mut run = Run::new();
        run.reach_first_get();
        let effect = run.step(absent());
        create(&mut run, effect);
        run.step(Answer::PodCreated(PodCreateOutcome::AlreadyExists));
        run.step(read(recoverable()));
        assert_eq!(run.step(Answer::Listed(listed)), get());
    }
}

fn lost_race_to(winner: ObservedPod) -> (Run, DeployStep) {
    let mut run = Run::new();
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    run.step(Answer::PodCreated(PodCreateOutcome::AlreadyExists));
    run.step(read(winner.clone()));
    let effect = run.step(Answer::Listed(Ok(Listing::default())));
    assert_eq!(effect, get());
    let effect = run.step(read(winner));
    (run, effect)
}

/// R19/R20: the winner is foreign → own Secret dropped, E8, no pod delete.
#[test]
fn r19_r20_foreign_winner_drops_own_secret_e8() {
    let mut look_alike = own_pod(running());
    look_alike.marks.managed_by = None;
    for winner in [look_alike, foreign(own_pod(running()))] {
        let mut run = Run::new();
        run.reach_first_get();
        let effect = run.step(absent());
        create(&mut run, effect);
        run.step(Answer::PodCreated(PodCreateOutcome::AlreadyExists));
        assert_eq!(
            run.step(read(winner)),
            Step::Request(Request::List { secrets: true })
        );
        let listing = Listing {
            pods: vec![],
            secrets: vec![own_secret(SECRET, Some(1))],
            ..Listing::default()
        };
        assert!(matches!(
            run.step(Answer::Listed(Ok(listing))),
            Step::Request(Request::DeleteSecret(_))
        ));
        let e = error(run.step(Answer::Deleted(Err(boom("boom")))));
        assert_eq!(e, DeployError::ForeignPod { pod: POD.into() });
    }
}

/// R23/R25: a started winner is adopted — with a different intent, and even deletion-marked.
#[test]
fn r23_r25_started_winner_adopted() {
    let mut divergent = own_pod(running());
    divergent.marks.create_intent = Some(OTHER_INTENT.into());
    let (_, effect) = lost_race_to(divergent);
    assert_eq!(effect, ok(POD, false));
    let (_, effect) = lost_race_to(marked(own_pod(running())));
    assert_eq!(effect, ok(POD, true));
}

/// R26: a deletion-marked winner that has not started → E6.
#[test]
fn r26_deleting_winner_e6() {
    let (_, effect) = lost_race_to(marked(recoverable()));
    let text = error(effect).to_string();
    assert!(text.contains("already being deleted; try again"), "{text}");
}

/// R27: a terminated or broken winner → E7 with the latest condition; never a delete.
#[test]
fn r27_terminated_winner_e7() {
    for winner in [
        own_pod(terminated(1, Some("Error"))),
        own_pod(waiting(Some("InvalidImageName"), None)),
    ] {
        let (mut run, effect) = lost_race_to(winner.clone());
        assert_eq!(effect, Step::Request(Request::GetPod { name: POD.into() }));
        let e = error(run.step(read(winner)));
        assert!(matches!(e, DeployError::WinnerFailed { .. }), "{e:?}");
        assert!(e.to_string().contains("another deploy"));
    }
}

/// R24/R28: a recoverable or pull-failing winner is observed; E5 at the deadline.
#[test]
fn r24_r28_winner_observed_to_deadline_e5() {
    let pulling = own_pod(waiting(Some("ErrImagePull"), Some("401 Unauthorized")));
    let (mut run, effect) = lost_race_to(pulling.clone());
    let (effect, _) = observe_until(&mut run, effect, &pulling);
    assert_eq!(run.elapsed, DEFAULT_DEADLINE);
    assert_eq!(effect, Step::Request(Request::GetPod { name: POD.into() }));
    let e = error(run.step(read(pulling)));
    assert!(matches!(e, DeployError::RaceDeadlineExceeded { .. }));
    let text = e.to_string();
    assert!(
        text.contains("another deploy of this agent created the pod"),
        "{text}"
    );
    assert!(text.contains("600s"));
    let (mut run, effect) = lost_race_to(recoverable());
    assert_eq!(run.wait(&effect), get());
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
}

/// The race path settles a pending winner with a Secret check, and an absent winner is waited
/// for; it turns foreign → E8.
#[test]
fn race_path_settles_and_waits() {
    let pending = own_pod(waiting(Some("CreateContainerConfigError"), None));
    let (mut run, effect) = lost_race_to(pending);
    assert!(matches!(
        effect,
        Step::Request(Request::SecretExists { .. })
    ));
    let effect = run.step(Answer::Exists(Ok(false)));
    assert_eq!(effect, Step::Request(Request::GetPod { name: POD.into() }));
    let (mut run, effect) = lost_race_to(recoverable());
    run.wait(&effect);
    let effect = run.step(absent());
    assert_eq!(run.wait(&effect), get());
    let e = error(run.step(read(foreign(own_pod(running())))));
    assert_eq!(e, DeployError::ForeignPod { pod: POD.into() });
}

/// R21: a foreign pod at observation → E8 before anything is written.
#[test]
fn r21_foreign_at_observation_e8_before_writing() {
    let mut run = Run::new();
    run.reach_first_get();
    let e = error(run.step(read(foreign(own_pod(running())))));
    let text = e.to_string();
    assert!(text.contains(POD));
    assert!(
        text.contains("not managed by apiary for this agent"),
        "{text}"
    );
    assert!(
        text.contains("remove it or use another namespace"),
        "{text}"
    );
}

/// R31/E11/E9: namespace failures end the deploy before anything is written.
#[test]
fn r31_namespace_failures() {
    let mut run = Run::new();
    run.step(Answer::Start);
    let e = error(run.step(preflighted(
        Err(NamespaceFailure::CreateForbidden),
        Ok(None),
    )));
    assert!(e.to_string().contains("`kubectl create namespace agents`"));
    let mut run = Run::new();
    run.step(Answer::Start);
    let e = error(run.step(preflighted(
        Err(NamespaceFailure::Failed(boom(
            "could not read namespace agents: 500",
        ))),
        Ok(None),
    )));
    assert_eq!(
        e.to_string(),
        "namespace agents: could not read namespace agents: 500"
    );
}

/// E11: a Secret create answered NotFound means the namespace is missing.
#[test]
fn e11_secret_create_not_found() {
    let mut run = Run::new();
    run.reach_first_get();
    assert_eq!(run.step(absent()), Step::Request(Request::CreateSecret));
    let e = error(run.step(Answer::SecretCreated(Err(SecretCreateFailure {
        name: SECRET.into(),
        failure: RequestFailure::api(404, "NotFound", "404"),
    }))));
    assert_eq!(
        e,
        DeployError::NamespaceMissing {
            namespace: "agents".into()
        }
    );
}

/// E10: a Secret create failure names the Secret and the error; nothing to clean up.
#[test]
fn e10_secret_create_failed() {
    let mut run = Run::new();
    run.reach_first_get();
    run.step(absent());
    let e = error(run.step(Answer::SecretCreated(Err(SecretCreateFailure {
        name: SECRET.into(),
        failure: RequestFailure::api(403, "Forbidden", "403 Forbidden"),
    }))));
    assert_eq!(
        e.to_string(),
        format!("could not create secret {SECRET}: 403 Forbidden; nothing was written")
    );
}

/// R33: a refused pod create drops own Secret and reports E10 saying it was removed.
#[test]
fn r33_refused_create_drops_own_secret() {
    let mut run = Run::new();
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    let effect = run.step(Answer::PodCreated(PodCreateOutcome::Refused(boom(
        "403 Forbidden: exceeded quota",
    ))));
    assert_eq!(effect, Step::Request(Request::List { secrets: true }));
    let listing = Listing {
        pods: vec![],
        secrets: vec![own_secret(SECRET, Some(1))],
        ..Listing::default()
    };
    assert!(matches!(
        run.step(Answer::Listed(Ok(listing.clone()))),
        Step::Request(Request::DeleteSecret(_))
    ));
    let text = error(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted)))).to_string();
    assert!(text.contains(&format!(
        "could not create pod {POD}: 403 Forbidden: exceeded quota"
    )));
    assert!(
        text.contains(&format!("secret {SECRET} was removed")),
        "{text}"
    );
    // A failed drop says the Secret was left.
    let mut run = Run::new();
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    run.step(Answer::PodCreated(PodCreateOutcome::Refused(boom("quota"))));
    run.step(Answer::Listed(Ok(listing)));
    let text = error(run.step(Answer::Deleted(Ok(DeleteAnswer::PreconditionFailed)))).to_string();
    assert!(text.contains("was left in place"), "{text}");
}

/// R34: a transport failure on pod create leaves the Secret (no drop attempted).
#[test]
fn r34_transport_failure_leaves_secret() {
    let mut run = Run::new();
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    let e = error(
        run.step(Answer::PodCreated(PodCreateOutcome::TransportFailed(
            RequestFailure::transport("connection reset"),
        ))),
    );
    assert_eq!(
        e,
        DeployError::CreateFailed {
            kind: ObjectKind::Pod,
            name: POD.into(),
            failure: RequestFailure::transport("connection reset"),
            secret: SecretFate::Left(SECRET.into())
        }
    );
}

/// E12: read and delete failures name the operation and the pod.
#[test]
fn e12_read_and_delete_failures() {
    let mut run = Run::new();
    run.reach_first_get();
    let text = error(run.step(Answer::PodRead(Err(boom("timeout"))))).to_string();
    assert_eq!(text, format!("could not read pod pod {POD}: timeout"));
    let mut run = Run::new();
    run.reach_first_get();
    run.step(read(own_pod(terminated(0, None))));
    let e = error(run.step(Answer::Deleted(Err(boom("500")))));
    assert!(matches!(e, DeployError::Failed { ref operation, .. } if operation == "delete pod"));
}

/// A failed latest-condition read still fails with the deadline error, saying why.
#[test]
fn unreadable_latest_condition() {
    let mut run = Run::new();
    run.reach_first_get();
    run.elapsed = DEFAULT_DEADLINE;
    run.step(absent());
    let text = error(run.step(Answer::PodRead(Err(boom("refused"))))).to_string();
    assert!(
        text.contains("the pod's condition could not be read: refused"),
        "{text}"
    );
}

/// A driver answering the wrong event ends the deploy (E12) without echoing event content.
#[test]
fn unexpected_event_is_e12_without_content() {
    let mut run = Run::new();
    run.step(Answer::Start);
    let mut pod = own_pod(waiting(Some("ErrImagePull"), Some("token=SUPERSECRET")));
    pod.marks.name = Some("x".into());
    let e = error(run.step(read(pod)));
    let text = e.to_string();
    assert!(!text.contains("SUPERSECRET"), "{text}");
    assert!(
        text.contains("PodRead") && text.contains("Preflighted"),
        "{text}"
    );
}

/// Once finished, every step repeats the Finish.
#[test]
fn finished_machine_repeats_finish() {
    let mut run = Run::new();
    run.reach_first_get();
    let done = run.step(read(own_pod(running())));
    assert_eq!(run.step(Answer::Waited), done);
    assert_eq!(run.step(Answer::Start), done);
}

/// A wait carries the pod's last observed resourceVersion for the watch.
#[test]
fn wait_carries_last_resource_version() {
    let mut run = Run::new();
    run.reach_first_get();
    let pod = with_rv(recoverable(), "u1", "4711");
    match run.step(read(pod)) {
        Step::Request(Request::Wait {
            resource_version, ..
        }) => assert_eq!(resource_version.as_deref(), Some("4711")),
        other => panic!("{other:?}"),
    }
}

/// Every error message names what deploy.md § Errors requires.
#[test]
fn error_texts_name_required_content() {
    let c = LatestCondition::Reported("the container is waiting, reason X".into());
    let d = Duration::from_secs(90);
    let cases = [
        (
            DeployError::DeadlineExceeded {
                pod: "p".into(),
                deadline: d,
                condition: c.clone(),
            },
            vec!["not confirmed within 90s", "p", "reason X"],
        ),
        (
            DeployError::RaceDeadlineExceeded {
                pod: "p".into(),
                deadline: d,
                condition: c.clone(),
            },
            vec!["90s", "another deploy", "reason X"],
        ),
        (
            DeployError::WinnerFailed {
                pod: "p".into(),
                condition: c.clone(),
            },
            vec!["another deploy", "did not start", "reason X"],
        ),
        (
            DeployError::CreatedPodFailed {
                namespace: "ns".into(),
                pod: "p".into(),
                condition: c,
            },
            vec![
                "created by this deploy",
                "did not stay running",
                "not retried",
                "kubectl logs -n ns p -c agent",
                "deploy again",
            ],
        ),
        (
            DeployError::DisappearanceTimeout {
                pod: "p".into(),
                deadline: d,
            },
            vec!["timed out after 90s", "p"],
        ),
        (
            DeployError::ServiceAccountMissing {
                namespace: "ns".into(),
                pod: "p".into(),
                account: "default".into(),
                deadline: d,
                secret: "s".into(),
            },
            vec![
                "pod p not confirmed within 90s",
                "service account default does not exist in namespace ns",
                "kubectl create serviceaccount default -n ns",
                "secret s was left",
            ],
        ),
        (
            DeployError::WinnerDeleting { pod: "p".into() },
            vec!["another deploy", "being deleted", "try again"],
        ),
        (
            DeployError::NamespaceMissing {
                namespace: "ns".into(),
            },
            vec!["ns", "may not create", "kubectl create namespace ns"],
        ),
        (
            DeployError::CreateFailed {
                kind: ObjectKind::Pod,
                name: "p".into(),
                failure: boom("409 x"),
                secret: SecretFate::Left("s".into()),
            },
            vec!["pod p", "409 x", "secret s was left"],
        ),
        (
            DeployError::Failed {
                operation: "delete pod".into(),
                object: "p".into(),
                failure: boom("500"),
            },
            vec!["delete pod", "p", "500"],
        ),
    ];
    for (error, needles) in cases {
        let text = error.to_string();
        for needle in needles {
            assert!(text.contains(needle), "{text} lacks {needle}");
        }
    }
    assert_eq!(ObjectKind::Secret.to_string(), "secret");
}

// ---- deploy.md § Namespace ensure, item 4: a just-created namespace has no service account yet

/// The literal refusal of ServiceAccount admission for `default` in `agents`.
const SA_DETAIL: &str = "the apiserver answered 403 Forbidden: pods \"p\" is forbidden: error \
                         looking up service account agents/default: serviceaccount \"default\" \
                         not found";

fn account_missing(account: &str) -> Answer {
    Answer::PodCreated(PodCreateOutcome::ServiceAccountMissing {
        account: account.into(),
        failure: RequestFailure::api(403, "Forbidden", SA_DETAIL),
    })
}

fn get_account(name: &str) -> DeployStep {
    Step::Request(Request::ServiceAccountExists { name: name.into() })
}

fn create_pod_again() -> DeployStep {
    Step::Request(Request::CreatePod { secret: own() })
}

/// Up to the first refused pod create of a fresh deploy.
fn refused_for_account(run: &mut Run) -> DeployStep {
    run.reach_first_get();
    let effect = run.step(absent());
    create(run, effect);
    run.step(account_missing("default"))
}

/// A pod running as `default` refused for its missing account keeps its Secret, reads the
/// account, waits while it is absent, and retries the create with the same Secret once it
/// exists: no second Secret, no drop.
#[test]
fn missing_default_account_waits_and_retries_with_the_same_secret() {
    let mut run = Run::new();
    assert_eq!(refused_for_account(&mut run), get_account("default"));
    let effect = run.step(Answer::Exists(Ok(false)));
    expect_wait(&effect, DEFAULT_POLL);
    assert_eq!(run.wait(&effect), get_account("default"));
    let effect = run.step(Answer::Exists(Ok(false)));
    assert_eq!(run.wait(&effect), get_account("default"));
    assert_eq!(run.step(Answer::Exists(Ok(true))), create_pod_again());
    let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
    assert!(run.machine.created_this_call());
    run.wait(&effect);
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
}

/// An account that appeared between the refusal and the read is used at once: no wait.
#[test]
fn an_account_that_already_exists_retries_at_once() {
    let mut run = Run::new();
    refused_for_account(&mut run);
    assert_eq!(run.step(Answer::Exists(Ok(true))), create_pod_again());
    assert_eq!(run.elapsed, Duration::ZERO);
}

/// Only one retry follows a refusal without a wait: when the admission cache still refuses
/// after the account read found it, the next create waits a poll first (no hot spin).
#[test]
fn a_second_refusal_waits_before_the_next_create() {
    let mut run = Run::new();
    refused_for_account(&mut run);
    run.step(Answer::Exists(Ok(true)));
    assert_eq!(run.step(account_missing("default")), get_account("default"));
    let effect = run.step(Answer::Exists(Ok(true)));
    expect_wait(&effect, DEFAULT_POLL);
    assert_eq!(run.wait(&effect), get_account("default"));
    assert_eq!(run.step(Answer::Exists(Ok(true))), create_pod_again());
}

/// `--service-account default` runs as `default` too: the refusal is just as transient.
#[test]
fn naming_default_explicitly_is_still_transient() {
    let mut run = Run::with(DeploySpec {
        service_account: Some("default".into()),
        ..spec()
    });
    assert_eq!(refused_for_account(&mut run), get_account("default"));
}

/// At the deadline the wait ends with E1 naming the missing account and the `kubectl create
/// serviceaccount` fix; the Secret is left (a deadline cleans up nothing).
#[test]
fn the_deadline_names_the_missing_account() {
    let mut run = Run::with(DeploySpec {
        deadline: Duration::from_secs(5),
        ..spec()
    });
    refused_for_account(&mut run);
    let mut effect = run.step(Answer::Exists(Ok(false)));
    let mut reads = 1;
    // Bounded, so a machine that never expires fails here instead of hanging (kills the
    // `expired -> false` mutant within the test timeout).
    let mut ended = None;
    for _ in 0..100 {
        effect = match effect {
            Step::Request(Request::Wait { .. }) => run.wait(&effect),
            Step::Request(Request::ServiceAccountExists { .. }) => {
                reads += 1;
                run.step(Answer::Exists(Ok(false)))
            }
            other => {
                ended = Some(error(other));
                break;
            }
        };
    }
    let e = ended.expect("the wait for the account ends at the deadline");
    assert_eq!(
        reads, 3,
        "reads at 0 s, 2 s and 4 s; the wait to 5 s ends the call"
    );
    assert_eq!(
        e,
        DeployError::ServiceAccountMissing {
            namespace: "agents".into(),
            pod: POD.into(),
            account: "default".into(),
            deadline: Duration::from_secs(5),
            secret: SECRET.into(),
        }
    );
}

/// An account read answered after the deadline ends the call even when the account exists: a
/// create past the deadline would start an attempt nobody waits for.
#[test]
fn no_create_after_the_deadline() {
    let mut run = Run::with(DeploySpec {
        deadline: Duration::from_secs(5),
        ..spec()
    });
    refused_for_account(&mut run);
    run.elapsed = Duration::from_secs(5);
    let e = error(run.step(Answer::Exists(Ok(true))));
    assert!(
        matches!(e, DeployError::ServiceAccountMissing { .. }),
        "{e}"
    );
}

/// A failed account read is E12 naming the account.
#[test]
fn a_failed_account_read_is_e12() {
    let mut run = Run::new();
    refused_for_account(&mut run);
    let e = error(run.step(Answer::Exists(Err(boom("500 boom")))));
    assert_eq!(
        e,
        DeployError::Failed {
            operation: "read service account".into(),
            object: "default".into(),
            failure: boom("500 boom"),
        }
    );
}

/// A pod that names its own account (`--service-account runner`) is refused for good: the
/// Secret is dropped as for any refused create and E10 gives the `kubectl create
/// serviceaccount` fix at once.
#[test]
fn a_named_missing_account_is_reported_at_once_with_the_fix() {
    let mut run = Run::with(DeploySpec {
        service_account: Some("runner".into()),
        ..spec()
    });
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    assert_eq!(
        run.step(account_missing("runner")),
        Step::Request(Request::List { secrets: true })
    );
    let listing = Listing {
        pods: vec![],
        secrets: vec![own_secret(SECRET, Some(1))],
        ..Listing::default()
    };
    assert!(matches!(
        run.step(Answer::Listed(Ok(listing))),
        Step::Request(Request::DeleteSecret(_))
    ));
    let e = error(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))));
    let text = e.to_string();
    assert!(
        matches!(
            e,
            DeployError::CreateFailed {
                kind: ObjectKind::Pod,
                ..
            }
        ),
        "{text}"
    );
    for needle in [
        "403 Forbidden",
        "service account runner does not exist in namespace agents",
        "kubectl create serviceaccount runner -n agents",
        &format!("secret {SECRET} was removed"),
    ] {
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
}

/// Answering an account read the machine did not ask for is a driver bug, reported by name.
#[test]
fn an_unasked_account_read_is_a_driver_error() {
    let mut run = Run::new();
    run.reach_first_get();
    run.step(read(recoverable()));
    let text = error(run.step(Answer::Exists(Ok(true)))).to_string();
    assert!(
        text.contains("answered Exists while the machine waited for"),
        "{text}"
    );
    let mut run = Run::new();
    refused_for_account(&mut run);
    let text = error(run.step(Answer::Waited)).to_string();
    assert!(
        text.contains("answered Waited while the machine waited for Exists"),
        "{text}"
    );
}

/// The preflight asks for GC only when the spec does (the knob tests use to reach
/// classification directly); either way the namespace ensure and the first read come with it.
#[test]
fn preflight_gc_is_asked_for_only_when_on() {
    let mut run = Run::with(DeploySpec {
        preflight_gc: false,
        ..spec()
    });
    assert_eq!(run.step(Answer::Start), preflight(false));
    let mut with_gc = Run::new();
    assert_eq!(with_gc.step(Answer::Start), preflight(true));
}

/// deploy.md § Sequence (the preflight): the first read the preflight answers is the loop's first
/// observation; no second GET of the pod follows (an absent pod goes straight to the create).
#[test]
fn the_preflight_read_is_the_first_observation() {
    let mut run = Run::new();
    run.step(Answer::Start);
    assert_eq!(
        run.step(preflighted(Ok(NamespaceCheck::Present), Ok(None))),
        Step::Request(Request::CreateSecret)
    );
    let mut run = Run::new();
    run.step(Answer::Start);
    let started = run.step(preflighted(
        Ok(NamespaceCheck::Present),
        Ok(Some(own_pod(running()))),
    ));
    assert!(matches!(started, Step::Done(Ok(_))), "{started:?}");
}

/// A namespace failure decides the preflight whatever the first read said: E11 and E9 win over
/// a pod the read found (deploy.md § Namespace ensure).
#[test]
fn a_namespace_failure_wins_over_the_first_read() {
    let mut run = Run::new();
    run.step(Answer::Start);
    let e = error(run.step(preflighted(
        Err(NamespaceFailure::CreateForbidden),
        Ok(Some(own_pod(running()))),
    )));
    assert!(matches!(e, DeployError::NamespaceMissing { .. }), "{e:?}");
}

/// deploy.md § Namespace ensure, item 1: with the namespace GET forbidden (unchecked), a
/// forbidden first read means the namespace may be missing: E12 carries E11's literal command
/// (and still the refusal). With the namespace present, the same refusal has no such hint.
#[test]
fn forbidden_read_in_an_unchecked_namespace_names_the_kubectl_command() {
    let refused = || RequestFailure::api(403, "Forbidden", "pods \"p\" is forbidden");
    let mut run = Run::new();
    run.step(Answer::Start);
    let e = error(run.step(preflighted(Ok(NamespaceCheck::Unchecked), Err(refused()))));
    let text = e.to_string();
    assert!(text.contains("`kubectl create namespace agents`"), "{text}");
    assert!(text.contains("is forbidden"), "{text}");
    let mut run = Run::new();
    run.step(Answer::Start);
    let text =
        error(run.step(preflighted(Ok(NamespaceCheck::Present), Err(refused())))).to_string();
    assert!(!text.contains("kubectl create namespace"), "{text}");
    // An unchecked namespace with a failure other than 403 keeps the failure as it is.
    let mut run = Run::new();
    run.step(Answer::Start);
    let text =
        error(run.step(preflighted(Ok(NamespaceCheck::Unchecked), Err(boom("500"))))).to_string();
    assert!(!text.contains("kubectl create namespace"), "{text}");
}

/// Progress is an output of the machine: one value per change of observed state, polled after
/// a step, and nothing more until the state changes again (deploy.md § Loop).
#[test]
fn progress_is_reported_once_per_change_of_state() {
    use crate::status::StatusState;
    let mut run = Run::new();
    run.reach_first_get();
    assert_eq!(run.machine.poll_progress(), None, "nothing observed yet");
    let _ = run.step(read(recoverable()));
    let first = run
        .machine
        .poll_progress()
        .expect("the first observation is a change");
    assert_eq!(first.state, StatusState::Starting);
    assert_eq!(run.machine.poll_progress(), None, "polled once");
    let _ = run.step(Answer::Waited);
    let _ = run.step(read(own_pod(running())));
    assert_eq!(
        run.machine.poll_progress().map(|p| p.state),
        Some(StatusState::Started)
    );
    assert_eq!(run.machine.poll_progress(), None);
}

/// The failed request behind E9, E10 and E12 is handed to the shell (its status code picks the
/// RBAC hint); errors with no request behind them have none.
#[test]
fn request_failure_is_exposed_for_e9_e10_and_e12_only() {
    let denied = RequestFailure::api(403, "Forbidden", "pods is forbidden");
    let with_failure = [
        DeployError::Namespace {
            namespace: "agents".into(),
            failure: denied.clone(),
        },
        DeployError::CreateFailed {
            kind: ObjectKind::Pod,
            name: POD.into(),
            failure: denied.clone(),
            secret: SecretFate::Left(SECRET.into()),
        },
        DeployError::Failed {
            operation: "read pod".into(),
            object: POD.into(),
            failure: denied.clone(),
        },
    ];
    for error in &with_failure {
        assert_eq!(error.request_failure(), Some(&denied), "{error:?}");
    }
    let without = [
        DeployError::NamespaceMissing {
            namespace: "agents".into(),
        },
        DeployError::Internal {
            detail: "no attempt".into(),
        },
    ];
    for error in &without {
        assert_eq!(error.request_failure(), None, "{error:?}");
    }
}

fn replacing() -> Run {
    Run::with(DeploySpec {
        replace: true,
        ..spec()
    })
}

fn started_other_intent(uid: &str, rv: &str) -> ObservedPod {
    let mut pod = with_rv(own_pod(running()), uid, rv);
    pod.marks.create_intent = Some(OTHER_INTENT.into());
    pod
}

/// `--replace`: a started pod of another intent is deleted with the fence of the observation that
/// authorised it, its disappearance awaited, then the normal create follows.
#[test]
fn replace_deletes_the_started_pod_of_another_intent_then_creates() {
    let mut run = replacing();
    run.reach_first_get();
    let old = started_other_intent("u1", "7");
    let effect = run.step(read(old.clone()));
    let Step::Request(Request::DeletePod(deletion)) = effect else {
        panic!("expected a delete, got {effect:?}");
    };
    assert_eq!(deletion.name(), POD);
    assert_eq!(deletion.fence().uid(), "u1");
    assert_eq!(deletion.fence().resource_version(), "7");
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    let effect = run.step(read(marked(old)));
    let effect = run.wait(&effect);
    assert_eq!(effect, get(), "the disappearance is awaited");
    assert_eq!(run.step(absent()), list(), "gone: its Secret is looked up");
    let Step::Request(Request::DeleteSecret(deletion)) =
        run.step(Answer::Listed(Ok(old_secret_listing())))
    else {
        panic!("expected the old Secret's delete");
    };
    assert_eq!(deletion.uid(), format!("s-{OLD_SECRET}"));
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    let after_absent = run.step(absent());
    create(&mut run, after_absent);
    let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
    let effect = run.wait(&effect);
    assert_eq!(effect, get());
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
}

/// The Secret of the pods `own_pod` builds (the replaced pod's own).
const OLD_SECRET: &str = "apiary-research-bot-1-72bea12366a3-0000abcd";

fn list() -> DeployStep {
    Step::Request(Request::List { secrets: true })
}

/// A listing after the replaced pod went: nothing references its Secret.
fn old_secret_listing() -> Listing {
    Listing {
        secrets: vec![own_secret(OLD_SECRET, Some(1))],
        ..Listing::default()
    }
}

/// Drive a replacing call through the replace delete of a started pod `u1` and its
/// disappearance, up to the listing of the agent's pods and Secrets.
fn replaced_and_gone() -> Run {
    let mut run = replacing();
    run.reach_first_get();
    assert!(matches!(
        run.step(read(started_other_intent("u1", "7"))),
        Step::Request(Request::DeletePod(_))
    ));
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    assert_eq!(run.step(absent()), list(), "gone: its Secret is looked up");
    run
}

/// deploy.md § Replacing a live agent, rule 6: once the replaced pod is gone, its own Secret is
/// deleted fenced by the uid the listing showed, before this call creates anything; a pod that
/// now holds the name (a concurrent deploy's) references only its own Secret, which is kept.
#[test]
fn replace_deletes_the_replaced_pods_secret_once_it_is_gone() {
    let mut run = replaced_and_gone();
    let mut newcomer = with_rv(recoverable(), "u2", "9");
    newcomer.facts.env_from_secret = Some(SECRET.into());
    let listing = Listing {
        pods: vec![newcomer],
        secrets: vec![own_secret(OLD_SECRET, Some(1)), own_secret(SECRET, Some(1))],
        ..Listing::default()
    };
    let Step::Request(Request::DeleteSecret(deletion)) = run.step(Answer::Listed(Ok(listing)))
    else {
        panic!("expected the old Secret's delete");
    };
    assert_eq!(deletion.name(), OLD_SECRET);
    assert_eq!(
        deletion.uid(),
        format!("s-{OLD_SECRET}"),
        "fenced by its uid"
    );
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    let effect = run.step(absent());
    create(&mut run, effect);
}

/// The replaced pod's Secret is kept while any listed pod references it, when the listing
/// fails (nothing proves it unreferenced), and when it is not listed as ours with a uid.
#[test]
fn replace_keeps_the_replaced_pods_secret_without_proof() {
    let mut referencing = recoverable();
    referencing.facts.env_from_secret = Some(OLD_SECRET.into());
    let mut foreign_secret = own_secret(OLD_SECRET, Some(1));
    foreign_secret.marks.agent_id = Some(OTHER_AGENT_ID.into());
    for listed in [
        Ok(Listing {
            pods: vec![referencing],
            ..old_secret_listing()
        }),
        Err(boom("list forbidden")),
        Ok(Listing::default()),
        Ok(Listing {
            secrets: vec![foreign_secret],
            ..Listing::default()
        }),
    ] {
        let mut run = replaced_and_gone();
        assert_eq!(run.step(Answer::Listed(listed)), get());
        let effect = run.step(absent());
        assert_eq!(effect, Step::Request(Request::CreateSecret));
    }
}

/// A failed or refused delete of the replaced pod's Secret never fails the deploy: it goes on
/// to create, and GC collects the Secret later.
#[test]
fn replace_goes_on_when_the_old_secrets_delete_fails() {
    for answer in [
        Err(boom("delete failed")),
        Ok(DeleteAnswer::PreconditionFailed),
        Ok(DeleteAnswer::NotFound),
    ] {
        let mut run = replaced_and_gone();
        assert!(matches!(
            run.step(Answer::Listed(Ok(old_secret_listing()))),
            Step::Request(Request::DeleteSecret(_))
        ));
        assert_eq!(run.step(Answer::Deleted(answer)), get());
        let effect = run.step(absent());
        create(&mut run, effect);
        let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
        assert_eq!(run.wait(&effect), get());
        assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
    }
}

/// A failed replace (the new pod create refused) has already dropped the old Secret: its delete
/// comes before this call's Secret create, and the refusal then drops the new one too.
#[test]
fn a_failed_replace_leaves_no_old_secret() {
    let mut run = replaced_and_gone();
    assert!(matches!(
        run.step(Answer::Listed(Ok(old_secret_listing()))),
        Step::Request(Request::DeleteSecret(_))
    ));
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    let effect = run.step(absent());
    create(&mut run, effect);
    let refused = PodCreateOutcome::Refused(RequestFailure::api(403, "Forbidden", "quota"));
    assert_eq!(run.step(Answer::PodCreated(refused)), list());
}

/// What retires a Secret: after a failed precondition the same pod, seen deleting (another
/// replacer's delete) and then gone, has its Secret looked up too (rule 6: a pod awaited until
/// gone); a plain deploy's delete (row 4) retires nothing (the GC pass collects a terminated
/// pod's Secret); and at the deadline nothing is cleaned up.
#[test]
fn only_an_accepted_replace_delete_retires_before_the_deadline() {
    let mut run = replacing();
    run.reach_first_get();
    run.step(read(started_other_intent("u1", "7")));
    let effect = run.step(Answer::Deleted(Ok(DeleteAnswer::PreconditionFailed)));
    assert_eq!(run.wait(&effect), get());
    let effect = run.step(read(marked(started_other_intent("u1", "8"))));
    assert_eq!(effect, get(), "a deleting pod is awaited");
    assert_eq!(run.step(absent()), list(), "gone: its Secret is looked up");

    let mut run = replacing();
    run.reach_first_get();
    let dead = with_rv(own_pod(terminated(1, Some("Error"))), "u1", "7");
    assert!(matches!(
        run.step(read(dead)),
        Step::Request(Request::DeletePod(_))
    ));
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    assert_eq!(run.step(absent()), get(), "row 4: GC's to collect");

    let mut run = replacing();
    run.reach_first_get();
    run.step(read(started_other_intent("u1", "7")));
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    run.elapsed = DEFAULT_DEADLINE;
    assert_eq!(
        run.step(absent()),
        get(),
        "the latest condition, nothing deleted"
    );
    assert!(matches!(
        error(run.step(absent())),
        DeployError::DeadlineExceeded { .. }
    ));
}

/// `--replace` is a no-op when the intent and the environment match: one read of the pod's own
/// Secret to compare, zero mutation.
#[test]
fn replace_is_a_noop_when_the_intent_matches() {
    let mut run = replacing();
    run.reach_first_get();
    assert_eq!(
        run.step(read(own_pod(running()))),
        Step::Request(Request::CompareEnv {
            secret: format!("{POD}-0000abcd")
        })
    );
    assert_eq!(
        run.step(Answer::EnvCompared(Ok(Some(Vec::new())))),
        ok(POD, true)
    );
}

/// deploy.md § Replacing a live agent: with `--replace`, a started pod of the same intent whose
/// Secret holds another environment (a rotated key) is replaced like one of another intent: a
/// fenced delete with the observation's fence. The comparison is asked for once per call.
#[test]
fn replace_replaces_a_pod_whose_environment_differs() {
    let mut run = replacing();
    run.reach_first_get();
    let pod = with_rv(own_pod(running()), "u1", "7");
    assert!(matches!(
        run.step(read(pod.clone())),
        Step::Request(Request::CompareEnv { .. })
    ));
    let Step::Request(Request::DeletePod(deletion)) =
        run.step(Answer::EnvCompared(Ok(Some(vec!["TOKEN".into()]))))
    else {
        panic!("expected the fenced delete");
    };
    assert_eq!(deletion.fence().uid(), "u1");
    assert_eq!(deletion.fence().resource_version(), "7");
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    assert_eq!(run.step(absent()), list(), "gone: its Secret is looked up");
    let effect = run.step(Answer::Listed(Ok(Listing {
        secrets: vec![own_secret(OLD_SECRET, Some(1))],
        ..Listing::default()
    })));
    assert!(matches!(effect, Step::Request(Request::DeleteSecret(_))));
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    let effect = run.step(absent());
    create(&mut run, effect);
    let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
    assert_eq!(run.wait(&effect), get());
    assert_eq!(
        run.step(read(with_rv(own_pod(running()), "u2", "9"))),
        ok(POD, true),
        "the new pod is not compared again"
    );
}

/// Without `--replace` the environment is never read; a failed comparison read fails the
/// deploy (E12) naming the Secret, with no delete.
#[test]
fn the_environment_is_compared_only_when_replacing() {
    let mut run = Run::new();
    run.reach_first_get();
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
    let mut run = replacing();
    run.reach_first_get();
    run.step(read(own_pod(running())));
    assert_eq!(
        error(run.step(Answer::EnvCompared(Err(boom("timeout"))))),
        DeployError::Failed {
            operation: "read secret".into(),
            object: format!("{POD}-0000abcd"),
            failure: boom("timeout")
        }
    );
    // A pod of another intent is replaced without reading its environment.
    let mut run = replacing();
    run.reach_first_get();
    assert!(matches!(
        run.step(read(started_other_intent("u1", "7"))),
        Step::Request(Request::DeletePod(_))
    ));
}

fn referencing(names: &[&str]) -> Run {
    Run::with(DeploySpec {
        referenced_secrets: names.iter().map(|n| (*n).to_owned()).collect(),
        ..spec()
    })
}

/// deploy.md § Credentials from the cluster: the referenced Secrets are checked before anything
/// else; all present → the preflight as usual.
#[test]
fn referenced_secrets_are_checked_before_the_preflight() {
    let mut run = referencing(&["creds", "keys"]);
    assert_eq!(
        run.step(Answer::Start),
        Step::Request(Request::CheckReferences {
            names: vec!["creds".into(), "keys".into()]
        })
    );
    assert_eq!(
        run.step(Answer::ReferencesChecked(Ok(vec![true, true]))),
        preflight(true)
    );
}

/// A missing reference is refused before any other request (zero mutation), naming the first
/// missing Secret and the command that creates it; a short answer counts as missing; a failed
/// read is E12 naming the Secrets.
#[test]
fn a_missing_reference_is_refused_before_anything_is_created() {
    let mut run = referencing(&["creds", "keys"]);
    run.step(Answer::Start);
    let e = error(run.step(Answer::ReferencesChecked(Ok(vec![true, false]))));
    assert_eq!(
        e,
        DeployError::ReferencedSecretMissing {
            namespace: "agents".into(),
            missing: Box::new(Missing {
                name: "keys".into(),
                ..Missing::default()
            }),
            pod: None
        }
    );
    let text = e.to_string();
    assert!(text.contains("secret keys"), "{text}");
    assert!(text.contains("nothing was created"), "{text}");
    assert!(
        text.contains("kubectl create secret generic keys -n agents"),
        "{text}"
    );
    let mut run = referencing(&["creds", "keys"]);
    run.step(Answer::Start);
    assert!(matches!(
        error(run.step(Answer::ReferencesChecked(Ok(vec![true])))),
        DeployError::ReferencedSecretMissing { missing, .. } if missing.name == "keys"
    ));
    let mut run = referencing(&["creds"]);
    run.step(Answer::Start);
    assert_eq!(
        error(run.step(Answer::ReferencesChecked(Err(boom("timeout"))))),
        DeployError::Failed {
            operation: "read secret".into(),
            object: "creds".into(),
            failure: boom("timeout")
        }
    );
}

/// A referenced Secret deleted after the check: the kubelet's `CreateContainerConfigError`
/// naming it is settled by a quorum read of that Secret; confirmed absent, the deploy fails at
/// once naming it, and the pod is kept (the kubelet starts it once the Secret exists); present,
/// it is observed as usual.
#[test]
fn a_referenced_secret_gone_after_the_check_is_reported_not_waited_out() {
    let waiting_for = |name: &str| {
        own_pod(waiting(
            Some("CreateContainerConfigError"),
            Some(&format!("secret \"{name}\" not found")),
        ))
    };
    let mut run = Run::new();
    run.reach_first_get();
    assert_eq!(
        run.step(read(waiting_for("creds"))),
        Step::Request(Request::SecretExists {
            name: "creds".into()
        })
    );
    let e = error(run.step(Answer::Exists(Ok(false))));
    assert_eq!(
        e,
        DeployError::ReferencedSecretMissing {
            namespace: "agents".into(),
            missing: Box::new(Missing {
                name: "creds".into(),
                ..Missing::default()
            }),
            pod: Some(POD.into())
        }
    );
    assert!(e.to_string().contains("the pod is kept"), "{e}");
    let mut run = Run::new();
    run.reach_first_get();
    run.step(read(waiting_for("creds")));
    expect_wait(&run.step(Answer::Exists(Ok(true))), DEFAULT_POLL);
}

/// Without `--replace` the same pod is kept and reported as differing (R3).
#[test]
fn without_replace_a_started_pod_of_another_intent_is_kept() {
    let mut run = Run::new();
    run.reach_first_get();
    assert_eq!(
        run.step(read(started_other_intent("u1", "7"))),
        ok(POD, false)
    );
}

/// Concurrent replaces: a started pod of another intent that this call did not first observe (a
/// concurrent replace's new pod) is adopted, never deleted: no delete loop.
#[test]
fn replace_never_deletes_a_pod_it_did_not_first_observe() {
    let mut run = replacing();
    run.reach_first_get();
    let effect = run.step(read(started_other_intent("u1", "7")));
    assert!(matches!(effect, Step::Request(Request::DeletePod(_))));
    // Another replacer got there first: the precondition fails; re-observe after one poll.
    let effect = run.step(Answer::Deleted(Ok(DeleteAnswer::PreconditionFailed)));
    let effect = run.wait(&effect);
    assert_eq!(effect, get());
    // The other replacer's pod, pending with its (different) intent: observed, not deleted.
    let mut pending = with_rv(recoverable(), "u2", "9");
    pending.marks.create_intent = Some(OTHER_INTENT.into());
    let effect = run.step(read(pending));
    let started = started_other_intent("u2", "10");
    let (effect, polls) = observe_until(&mut run, effect, &started);
    assert!(polls >= 1);
    assert_eq!(effect, ok(POD, false), "adopted, its intent reported");
}

/// The first observation spends the authorisation: after one replace delete, the same pod seen
/// again (re-observed after a failed precondition) is not deleted a second time.
#[test]
fn replace_deletes_the_first_observed_pod_at_most_once() {
    let mut run = replacing();
    run.reach_first_get();
    let effect = run.step(read(started_other_intent("u1", "7")));
    assert!(matches!(effect, Step::Request(Request::DeletePod(_))));
    let effect = run.step(Answer::Deleted(Ok(DeleteAnswer::PreconditionFailed)));
    let effect = run.wait(&effect);
    assert_eq!(effect, get());
    assert_eq!(
        run.step(read(started_other_intent("u1", "8"))),
        ok(POD, false),
        "one delete per observed pod"
    );
}

/// A first read that finds nothing leaves nothing to replace.
#[test]
fn replace_after_an_absent_first_read_replaces_nothing() {
    let mut run = replacing();
    run.reach_first_get();
    let after_absent = run.step(absent());
    create(&mut run, after_absent);
    assert_eq!(
        run.step(Answer::PodCreated(PodCreateOutcome::AlreadyExists)),
        get()
    );
    // The race winner, started with another intent: adopted (the race path has no delete).
    assert_eq!(
        run.step(read(started_other_intent("u5", "3"))),
        Step::Request(Request::List { secrets: true })
    );
}

fn staying_up(window: u64) -> Run {
    Run::with(DeploySpec {
        min_running: Duration::from_secs(window),
        ..spec()
    })
}

/// `--min-running`: a started pod succeeds only once it has been read started for the window;
/// the waits in between never run past what is left of it.
#[test]
fn min_running_waits_for_the_window_then_succeeds() {
    let mut run = staying_up(3);
    run.reach_first_get();
    let effect = run.step(read(own_pod(running())));
    expect_wait(&effect, Duration::from_secs(2));
    let effect = run.wait(&effect);
    assert_eq!(effect, get());
    let effect = run.step(read(own_pod(running())));
    expect_wait(&effect, Duration::from_secs(1));
    let effect = run.wait(&effect);
    assert_eq!(effect, get());
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
    assert_eq!(run.elapsed, Duration::from_secs(3));
}

/// `--min-running` of zero is today's behaviour: the first started read succeeds.
#[test]
fn min_running_zero_succeeds_at_the_first_started_read() {
    let mut run = staying_up(0);
    run.reach_first_get();
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
}

/// A crash inside the window is reported as the crash it is: E2 with the exit code, not a
/// success and not a delete.
#[test]
fn a_crash_inside_the_window_is_reported_with_its_exit_code() {
    let mut run = staying_up(3);
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
    let effect = run.wait(&effect);
    assert_eq!(effect, get());
    let effect = run.step(read(own_pod(running())));
    let effect = run.wait(&effect);
    assert_eq!(effect, get());
    let crashed = own_pod(terminated(137, Some("Error")));
    assert_eq!(
        run.step(read(crashed.clone())),
        Step::Request(Request::GetPod { name: POD.into() })
    );
    let e = error(run.step(read(crashed)));
    assert!(matches!(e, DeployError::CreatedPodFailed { .. }), "{e:?}");
    assert!(e.to_string().contains("exited with code 137"), "{e}");
}

/// Another pod under the name (a new uid) starts the window again; so does a read in between
/// that shows no started pod.
#[test]
fn min_running_restarts_on_another_pod_or_an_interruption() {
    let mut run = staying_up(3);
    run.reach_first_get();
    let effect = run.step(read(own_pod(running())));
    let effect = run.wait(&effect);
    assert_eq!(effect, get());
    let effect = run.step(read(with_rv(own_pod(running()), "u9", "5")));
    expect_wait(&effect, Duration::from_secs(2));
    assert_eq!(run.wait(&effect), get());
    let effect = run.step(read(with_rv(recoverable(), "u9", "6")));
    assert!(matches!(effect, Step::Request(Request::Wait { .. })));
    let effect = run.wait(&effect);
    assert_eq!(effect, get());
    let effect = run.step(read(with_rv(own_pod(running()), "u9", "7")));
    expect_wait(&effect, Duration::from_secs(2));
}

/// A race winner, too, is adopted only after the window; a crash inside it is E7.
#[test]
fn min_running_holds_a_race_winner_for_the_window() {
    let mut run = staying_up(2);
    run.reach_first_get();
    let effect = run.step(absent());
    create(&mut run, effect);
    assert_eq!(
        run.step(Answer::PodCreated(PodCreateOutcome::AlreadyExists)),
        get()
    );
    let winner = with_rv(own_pod(running()), "w1", "3");
    assert_eq!(
        run.step(read(winner.clone())),
        Step::Request(Request::List { secrets: true })
    );
    let effect = run.step(Answer::Listed(Ok(Listing::default())));
    assert_eq!(effect, get());
    let effect = run.step(read(winner.clone()));
    expect_wait(&effect, Duration::from_secs(2));
    let effect = run.wait(&effect);
    assert_eq!(effect, get());
    assert_eq!(run.step(read(winner)), ok(POD, true));
}

/// A failure that names its request is the whole "what failed" of E9, E10 and the generic
/// request failure (no second prefix); one that names none gets the error's own prefix.
#[test]
fn named_failures_are_not_prefixed_twice() {
    use crate::failure::Operation;
    let named = |operation| RequestFailure::answered(operation, "agents/x", 403, "Forbidden", "no");
    let bare = || RequestFailure::api(403, "Forbidden", "no");
    let namespace = |failure| DeployError::Namespace {
        namespace: "agents".into(),
        failure,
    };
    assert_eq!(
        namespace(named(Operation::GetNamespace)).to_string(),
        named(Operation::GetNamespace).to_string()
    );
    assert!(
        namespace(bare())
            .to_string()
            .starts_with("namespace agents: ")
    );
    let create = |failure| DeployError::CreateFailed {
        kind: ObjectKind::Pod,
        name: "x".into(),
        failure,
        secret: SecretFate::NotCreated,
    };
    assert_eq!(
        create(named(Operation::CreatePod)).to_string(),
        format!("{}; nothing was written", named(Operation::CreatePod))
    );
    let unnamed = create(bare()).to_string();
    assert!(unnamed.starts_with("could not create pod x: "), "{unnamed}");
    let failed = |failure| DeployError::Failed {
        operation: "read pod".into(),
        object: "x".into(),
        failure,
    };
    assert_eq!(
        failed(named(Operation::GetPod)).to_string(),
        named(Operation::GetPod).to_string()
    );
    assert!(
        failed(bare())
            .to_string()
            .starts_with("could not read pod x: ")
    );
}

/// The answer of a prepare step whose policy half failed.
fn policy_failed(failure: PolicyFailure) -> Answer {
    Answer::Prepared(Prepared {
        policy: Err(failure),
        workspace: Ok(None),
    })
}

fn isolating() -> Run {
    Run::with(DeploySpec {
        isolate: true,
        ..spec()
    })
}

/// deploy.md § Egress control: with `--isolate` the agent's policy is put in place before the
/// Secret (and so before the pod), once per call; a started pod needs none.
#[test]
fn isolate_prepares_the_policy_before_the_secret_once() {
    let mut run = isolating();
    run.reach_first_get();
    assert_eq!(
        run.step(absent()),
        Step::Request(Request::Prepare {
            policy: true,
            workspace: false
        })
    );
    let effect = run.step(Answer::Prepared(Prepared::nothing()));
    create(&mut run, effect);
    let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
    assert_eq!(run.wait(&effect), get());
    // The pod vanished: the second create of the call goes straight to the Secret.
    let effect = run.step(absent());
    assert_eq!(effect, Step::Request(Request::CreateSecret));
    let mut run = isolating();
    run.reach_first_get();
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
}

/// A policy that cannot be put in place ends the deploy with E15 before anything else is
/// written; a NotFound on its create is the missing namespace (E11).
#[test]
fn a_policy_failure_is_e15_before_any_secret() {
    let mut run = isolating();
    run.reach_first_get();
    run.step(absent());
    let e = error(run.step(policy_failed(PolicyFailure::Problem(
        crate::policy::PolicyProblem::Foreign,
    ))));
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "networkpolicy agents/{POD} (--isolate) exists but"
        )),
        "{text}"
    );
    assert!(text.ends_with("no pod was created"), "{text}");
    assert_eq!(e.request_failure(), None);
    let mut run = isolating();
    run.reach_first_get();
    run.step(absent());
    let e = error(run.step(policy_failed(PolicyFailure::Failed(boom("etcd down")))));
    assert_eq!(e.request_failure(), Some(&boom("etcd down")));
    assert!(e.to_string().contains("etcd down"), "{e}");
    let mut run = isolating();
    run.reach_first_get();
    run.step(absent());
    let missing = RequestFailure::api(404, "NotFound", "namespaces \"agents\" not found");
    assert_eq!(
        error(run.step(policy_failed(PolicyFailure::Failed(missing)))),
        DeployError::NamespaceMissing {
            namespace: "agents".into()
        }
    );
    // An apiserver without the NetworkPolicy API answers NotFound too: E15, not E11.
    let mut run = isolating();
    run.reach_first_get();
    run.step(absent());
    let unserved = RequestFailure::api(
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
    let e = error(run.step(policy_failed(PolicyFailure::Failed(unserved))));
    assert!(matches!(e, DeployError::Policy { .. }), "{e:?}");
}

/// E15's wording: a failure that names its request is said once, then that no pod was created;
/// one that names none gets the policy's name and what was being done.
#[test]
fn e15_messages_name_the_request_once() {
    let named = RequestFailure::answered(
        crate::failure::Operation::CreateNetworkPolicy,
        "agents/p",
        500,
        "InternalError",
        "etcd down",
    );
    let e = DeployError::Policy {
        namespace: "agents".into(),
        name: "p".into(),
        failure: PolicyFailure::Failed(named),
    };
    let text = e.to_string();
    assert!(
        text.starts_with("could not create networkpolicy agents/p"),
        "{text}"
    );
    assert!(text.ends_with("; no pod was created"), "{text}");
    assert_eq!(text.matches("networkpolicy").count(), 1, "{text}");
    let e = DeployError::Policy {
        namespace: "agents".into(),
        name: "p".into(),
        failure: PolicyFailure::Failed(boom("etcd down")),
    };
    let text = e.to_string();
    assert!(
        text.starts_with("could not put networkpolicy agents/p (--isolate) in place: "),
        "{text}"
    );
    assert!(text.contains("etcd down"), "{text}");
}

fn with_workspace(isolate: bool) -> Run {
    Run::with(DeploySpec {
        isolate,
        workspace_claim: Some(format!("{POD}-workspace")),
        ..spec()
    })
}

fn claim_report(created: bool) -> ClaimReport {
    ClaimReport {
        name: format!("{POD}-workspace"),
        created,
        differences: Vec::new(),
    }
}

/// deploy.md § Persistent workspace: the claim is prepared with the policy in one step, before
/// the Secret, once per call; what was done reaches the success report.
#[test]
fn a_workspace_is_prepared_with_the_policy_before_the_secret_and_reported() {
    for isolate in [false, true] {
        let mut run = with_workspace(isolate);
        run.reach_first_get();
        assert_eq!(
            run.step(absent()),
            Step::Request(Request::Prepare {
                policy: isolate,
                workspace: true
            })
        );
        let effect = run.step(Answer::Prepared(Prepared {
            policy: Ok(()),
            workspace: Ok(Some(claim_report(true))),
        }));
        create(&mut run, effect);
        let effect = run.step(Answer::PodCreated(PodCreateOutcome::Created));
        assert_eq!(run.wait(&effect), get());
        assert_eq!(
            run.step(read(own_pod(running()))),
            Step::Done(Ok(Deployed {
                pod: POD.into(),
                intent_matches: true,
                workspace: Some(claim_report(true)),
                recorded_settings: None,
            }))
        );
    }
    // A started pod is kept without preparing anything: nothing to report.
    let mut run = with_workspace(true);
    run.reach_first_get();
    assert_eq!(run.step(read(own_pod(running()))), ok(POD, true));
}

/// A claim that cannot be used ends the deploy with E16 before any Secret; the policy's failure
/// is said first when both fail; a NotFound naming the namespace is E11.
#[test]
fn a_workspace_failure_is_e16_before_any_secret() {
    let foreign = ClaimFailure::Problem(ClaimProblem::Foreign);
    let mut run = with_workspace(false);
    run.reach_first_get();
    run.step(absent());
    let e = error(run.step(Answer::Prepared(Prepared {
        policy: Ok(()),
        workspace: Err(foreign.clone()),
    })));
    assert_eq!(
        e.to_string(),
        format!(
            "persistentvolumeclaim agents/{POD}-workspace (--workspace-size) exists but is not \
             apiary's for this agent; apiary never uses or changes it: remove it, or use another \
             namespace or agent name; no pod was created"
        )
    );
    assert_eq!(e.request_failure(), None);
    let mut run = with_workspace(true);
    run.reach_first_get();
    run.step(absent());
    let e = error(run.step(Answer::Prepared(Prepared {
        policy: Err(PolicyFailure::Problem(
            crate::policy::PolicyProblem::Deleting,
        )),
        workspace: Err(foreign),
    })));
    assert!(matches!(e, DeployError::Policy { .. }), "{e:?}");
    let mut run = with_workspace(true);
    run.reach_first_get();
    run.step(absent());
    let missing = RequestFailure::api(404, "NotFound", "namespaces \"agents\" not found");
    assert_eq!(
        error(run.step(Answer::Prepared(Prepared {
            policy: Ok(()),
            workspace: Err(ClaimFailure::Failed(missing)),
        }))),
        DeployError::NamespaceMissing {
            namespace: "agents".into()
        }
    );
    let mut run = with_workspace(false);
    run.reach_first_get();
    run.step(absent());
    let e = error(run.step(Answer::Prepared(Prepared {
        policy: Ok(()),
        workspace: Err(ClaimFailure::Failed(boom("etcd down"))),
    })));
    assert_eq!(e.request_failure(), Some(&boom("etcd down")));
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "could not put persistentvolumeclaim agents/{POD}-workspace (--workspace-size) in \
             place: "
        )),
        "{text}"
    );
    let named = RequestFailure::answered(
        crate::failure::Operation::CreateWorkspaceClaim,
        "agents/c",
        500,
        "InternalError",
        "etcd down",
    );
    let e = DeployError::Workspace {
        namespace: "agents".into(),
        claim: "c".into(),
        failure: ClaimFailure::Failed(named),
    };
    let text = e.to_string();
    assert!(
        text.starts_with("could not create persistentvolumeclaim agents/c"),
        "{text}"
    );
    assert_eq!(text.matches("persistentvolumeclaim").count(), 1, "{text}");
    assert!(text.ends_with("; no pod was created"), "{text}");
}

/// A pod create's answer in the machine's terms: the two answers, admission's refusal naming the
/// account, any other refusal, and no answer each land on their own outcome, the failure kept.
#[test]
fn a_pod_create_answer_becomes_its_outcome() {
    use crate::failure::{Operation, TransportCause};
    assert_eq!(
        PodCreateOutcome::of(Ok(CreateAnswer::Created)),
        PodCreateOutcome::Created
    );
    assert_eq!(
        PodCreateOutcome::of(Ok(CreateAnswer::AlreadyExists)),
        PodCreateOutcome::AlreadyExists
    );
    let missing = RequestFailure::answered(
        Operation::CreatePod,
        "agents/p",
        403,
        "Forbidden",
        "pods \"p\" is forbidden: error looking up service account agents/runner: \
         serviceaccount \"runner\" not found",
    );
    assert_eq!(
        PodCreateOutcome::of(Err(missing.clone())),
        PodCreateOutcome::ServiceAccountMissing {
            account: "runner".to_owned(),
            failure: missing,
        }
    );
    let quota = RequestFailure::answered(Operation::CreatePod, "agents/p", 403, "Forbidden", "q");
    assert_eq!(
        PodCreateOutcome::of(Err(quota.clone())),
        PodCreateOutcome::Refused(quota)
    );
    let lost = RequestFailure::lost(
        Operation::CreatePod,
        "agents/p",
        TransportCause::ConnectionRefused,
        "reset",
    );
    assert_eq!(
        PodCreateOutcome::of(Err(lost.clone())),
        PodCreateOutcome::TransportFailed(lost)
    );
}

/// deploy.md § Replacing a live agent, rule 1a: before a replacing call deletes the running pod,
/// the new pod's create is checked by a dry run; refused, the deploy fails with E17 and nothing
/// is deleted or created (the running pod keeps its old configuration); admitted, the fenced
/// delete follows.
#[test]
fn replace_checks_the_new_pods_create_before_deleting_the_running_pod() {
    let quota = RequestFailure::api(
        403,
        "Forbidden",
        "pods \"x\" is forbidden: exceeded quota: tight, requested: limits.memory=128Mi, used: \
         limits.memory=0, limited: limits.memory=100Mi",
    );
    let mut run = replacing();
    run.admit_checks = false;
    run.reach_first_get();
    assert_eq!(
        run.step(read(started_other_intent("u1", "7"))),
        Step::Request(Request::CheckPodCreate)
    );
    let e = error(run.step(Answer::PodCreateChecked(Err(quota.clone()))));
    assert_eq!(
        e,
        DeployError::ReplaceRefused {
            namespace: "agents".into(),
            pod: POD.into(),
            failure: quota,
        }
    );
    assert_eq!(e.left(), None, "the running pod is not a leftover: it runs");
    assert!(e.to_string().contains("keeps its old configuration"), "{e}");

    let mut run = replacing();
    run.admit_checks = false;
    run.reach_first_get();
    run.step(read(started_other_intent("u1", "7")));
    let effect = run.step(Answer::PodCreateChecked(Ok(())));
    assert!(
        matches!(&effect, Step::Request(Request::DeletePod(d)) if d.fence().uid() == "u1"),
        "{effect:?}"
    );
}

/// The agent's other objects come first for a replacing call (once): a claim or policy problem
/// fails the deploy with the running pod kept; in place, the check and the delete follow, and
/// the create after the old pod is gone prepares nothing again.
#[test]
fn replace_prepares_the_agents_objects_before_deleting() {
    let with_claim = || {
        let mut run = Run::with(DeploySpec {
            replace: true,
            workspace_claim: Some(format!("{POD}-workspace")),
            ..spec()
        });
        run.admit_checks = false;
        run.reach_first_get();
        assert_eq!(
            run.step(read(started_other_intent("u1", "7"))),
            Step::Request(Request::Prepare {
                policy: false,
                workspace: true
            })
        );
        run
    };
    let mut run = with_claim();
    let e = error(run.step(Answer::Prepared(Prepared {
        policy: Ok(()),
        workspace: Err(ClaimFailure::Problem(ClaimProblem::Foreign)),
    })));
    assert!(matches!(e, DeployError::Workspace { .. }), "{e:?}");

    let mut run = with_claim();
    assert_eq!(
        run.step(Answer::Prepared(Prepared {
            policy: Ok(()),
            workspace: Ok(Some(claim_report(false))),
        })),
        Step::Request(Request::CheckPodCreate)
    );
    let effect = run.step(Answer::PodCreateChecked(Ok(())));
    assert!(
        matches!(effect, Step::Request(Request::DeletePod(_))),
        "{effect:?}"
    );
    assert_eq!(run.step(Answer::Deleted(Ok(DeleteAnswer::Accepted))), get());
    assert_eq!(run.step(absent()), list(), "gone: its Secret is looked up");
    run.step(Answer::Listed(Ok(Listing::default())));
    assert_eq!(
        run.step(absent()),
        Step::Request(Request::CreateSecret),
        "prepared once per call"
    );
}
