//! Tests of the deploy state machine (deploy.md § The deploy operation): one test per rule,
//! each a script (`crate::testkit::script`): answers in, requests out. The property tests over
//! arbitrary answer sequences live in `tests/props/machine_props.rs`.

use crate::binding::Owner;
use crate::startup::Missing;
use std::cell::Cell;
use std::time::Duration;

use super::*;
use crate::deploy::*;
use crate::request::{
    Answer, Listing, Machine as _, NamespaceCheck, NamespaceFailure, OwnSecret, PodCreateOutcome,
    Prepared, Request, SecretCreateFailure, SecretDrop, Step,
};

use crate::answer::{CreateAnswer, DeleteAnswer};
use crate::condition::LatestCondition;
use crate::facts::ObservedPod;
use crate::failure::RequestFailure;
use crate::policy::PolicyFailure;
use crate::pull::PullFailure;
use crate::testkit::script::{
    Beat, Check, Play, all, any, ask, asks, done, feed, last_is, run, that, wait_out,
};
use crate::testkit::{
    AGENT_ID, IMAGE, INTENT, OTHER_AGENT_ID, OTHER_INTENT, POD, own_pod, own_secret, running,
    terminated, waiting,
};
use crate::workspace::{ClaimFailure, ClaimProblem, ClaimReport};

const SECRET: &str = "apiary-research-bot-1-72bea12366a3-0badc0de";
/// The Secret of the pods `own_pod` builds (a replaced or observed pod's own).
const OLD_SECRET: &str = "apiary-research-bot-1-72bea12366a3-0000abcd";
const S: fn(u64) -> Duration = Duration::from_secs;

/// What the deploy machine ends with.
type Output = Result<Deployed, DeployError>;
/// The beats of a deploy script.
type Beats = Vec<Beat<DeployMachine>>;

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

/// A deploy of `spec` whose dry-run create checks (a replace's) are admitted by the runner (the
/// tests of the check itself use [`checked`]).
fn deploy(spec: DeploySpec) -> Play<DeployMachine> {
    checked(spec)
        .answering(|r| (*r == Request::CheckPodCreate).then_some(Answer::PodCreateChecked(Ok(()))))
}

/// A deploy of `spec` whose scripts answer every request themselves.
fn checked(spec: DeploySpec) -> Play<DeployMachine> {
    Play::new(DeployMachine::new(spec))
}

/// A deploy of `spec` started: the preflight (namespace ensure, GC, first read) asked for.
#[track_caller]
fn started(spec: DeploySpec) -> Play<DeployMachine> {
    deploy(spec).then(start())
}

/// A deploy of the default spec, started.
#[track_caller]
fn begun() -> Play<DeployMachine> {
    started(spec())
}

/// The start, asking for the preflight with GC.
fn start() -> Beats {
    vec![feed(Answer::Start, is_preflight(true))]
}

/// The first read, answered by the preflight with the namespace present: `pod`, or none.
fn first(pod: Option<ObservedPod>) -> Answer {
    preflighted(Ok(NamespaceCheck::Present), Ok(pod))
}

/// The preflight's answer: the namespace as `namespace` says, the first read as `pod` says.
fn preflighted(
    namespace: Result<NamespaceCheck, NamespaceFailure>,
    pod: Result<Option<ObservedPod>, RequestFailure>,
) -> Answer {
    Answer::Preflighted { namespace, pod }
}

/// The create path after a read found nothing: the Secret created, the pod create asked for.
fn secret_then_pod() -> Beats {
    vec![feed(Answer::SecretCreated(Ok(own())), create_pod())]
}

/// A fresh deploy up to its pod create: started, nothing found, the Secret created.
fn to_create(spec: DeploySpec) -> Play<DeployMachine> {
    started(spec)
        .then([feed(first(None), create_secret())])
        .then(secret_then_pod())
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

fn read(pod: ObservedPod) -> Answer {
    Answer::PodRead(Ok(Some(pod)))
}

fn absent() -> Answer {
    Answer::PodRead(Ok(None))
}

fn created() -> Answer {
    Answer::PodCreated(PodCreateOutcome::Created)
}

fn lost_race() -> Answer {
    Answer::PodCreated(PodCreateOutcome::AlreadyExists)
}

fn deleted(answer: DeleteAnswer) -> Answer {
    Answer::Deleted(Ok(answer))
}

fn accepted() -> Answer {
    deleted(DeleteAnswer::Accepted)
}

fn listed(listing: Listing) -> Answer {
    Answer::Listed(Ok(listing))
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

fn started_other_intent(uid: &str, rv: &str) -> ObservedPod {
    let mut pod = with_rv(own_pod(running()), uid, rv);
    pod.marks.create_intent = Some(OTHER_INTENT.into());
    pod
}

/// A listing of this attempt's Secret only.
fn own_secret_listing() -> Listing {
    Listing {
        secrets: vec![own_secret(SECRET, Some(1))],
        ..Listing::default()
    }
}

/// A listing after the replaced pod went: nothing references its Secret.
fn old_secret_listing() -> Listing {
    Listing {
        secrets: vec![own_secret(OLD_SECRET, Some(1))],
        ..Listing::default()
    }
}

fn is_preflight(gc: bool) -> Check<Output> {
    ask(Request::Preflight {
        pod: POD.into(),
        gc,
    })
}

/// A read of the pod name, through the stuck-pod watch (every read of a deploy is).
fn get() -> Check<Output> {
    ask(Request::GetPod {
        name: POD.into(),
        watch_stuck: true,
    })
}

/// The listing that drops this attempt's own Secret, naming it for a failure's warning.
fn list() -> Check<Output> {
    ask(Request::List {
        secrets: true,
        dropping: Some(SecretDrop::Own(SECRET.into())),
    })
}

/// The listing that retires the replaced pod's Secret (deploy.md § Replacing a live agent).
fn retire_list() -> Check<Output> {
    ask(Request::List {
        secrets: true,
        dropping: Some(SecretDrop::Replaced),
    })
}

fn create_secret() -> Check<Output> {
    ask(Request::CreateSecret)
}

fn create_pod() -> Check<Output> {
    ask(Request::CreatePod { secret: own() })
}

fn secret_exists(name: &str) -> Check<Output> {
    ask(Request::SecretExists { name: name.into() })
}

fn get_account(name: &str) -> Check<Output> {
    ask(Request::ServiceAccountExists { name: name.into() })
}

fn compare_env() -> Check<Output> {
    ask(Request::CompareEnv {
        secret: OLD_SECRET.into(),
        log_keys: true,
    })
}

fn prepare(policy: bool, workspace: bool) -> Check<Output> {
    ask(Request::Prepare { policy, workspace })
}

/// A wait of `max` on the pod.
fn wait(max: Duration) -> Check<Output> {
    asks(
        "a wait on the pod",
        move |r| matches!(r, Request::Wait { max: m, pod, .. } if *m == max && pod == POD),
    )
}

/// A wait of one poll on the pod.
fn poll() -> Check<Output> {
    wait(DEFAULT_POLL)
}

/// A pod delete fenced by `uid` and `rv`.
fn delete_pod(uid: &'static str, rv: &'static str) -> Check<Output> {
    asks("the fenced pod delete", move |r| {
        matches!(r, Request::DeletePod { deletion: d, note: Some("deleting the pod") }
            if d.name() == POD
            && (d.fence().uid(), d.fence().resource_version()) == (uid, rv))
    })
}

/// Any pod delete.
fn deletes_pod() -> Check<Output> {
    asks("a pod delete", |r| matches!(r, Request::DeletePod { .. }))
}

/// The delete of the Secret `name`, fenced by its uid (`s-<name>`).
fn delete_secret(name: &'static str) -> Check<Output> {
    asks("the Secret's uid-fenced delete", move |r| {
        matches!(r, Request::DeleteSecret { deletion: d, warn_on_failure: true }
            if d.name() == name && d.uid() == format!("s-{name}"))
    })
}

fn ok(pod: &str, intent_matches: bool) -> Check<Output> {
    done(Ok(Deployed {
        pod: pod.into(),
        intent_matches,
        workspace: None,
        recorded_settings: None,
    }))
}

fn fails_with(error: DeployError) -> Check<Output> {
    done(Err(error))
}

/// An error `test` accepts.
fn fails(what: &'static str, test: impl FnOnce(&DeployError) -> bool + 'static) -> Check<Output> {
    crate::testkit::script::ends(what, move |o: &Output| o.as_ref().is_err_and(test))
}

/// An error whose text holds every one of `needles`.
fn says<T: Into<String>>(needles: impl IntoIterator<Item = T>) -> Check<Output> {
    let needles: Vec<String> = needles.into_iter().map(Into::into).collect();
    Box::new(move |seen| match seen {
        Step::Done(Err(e)) => match needles.iter().find(|n| !e.to_string().contains(n.as_str())) {
            None => Ok(()),
            Some(needle) => Err(format!("{e} lacks {needle}")),
        },
        other => Err(format!("expected an error, got {other:?}")),
    })
}

/// An error whose text is exactly `text`.
fn says_exactly(text: impl Into<String>) -> Check<Output> {
    let text = text.into();
    fails("the error text", move |e| e.to_string() == text)
}

/// An error whose text lacks `needle`.
fn says_not(needle: &'static str) -> Check<Output> {
    fails("an error without the words", move |e| {
        !e.to_string().contains(needle)
    })
}

/// Observe `pod` at every read, each wait run out, until the deadline or another request; the
/// number of polls must pass `polls`.
fn observe(pod: ObservedPod, polls: impl FnOnce(usize) -> bool + 'static) -> Beat<DeployMachine> {
    run(move |play: &mut Play<DeployMachine>| {
        let deadline = play.machine.spec().deadline;
        let waits = play.keep_answering(|now, r| {
            (matches!(r, Request::GetPod { .. }) && now < deadline).then(|| read(pod.clone()))
        });
        assert!(polls(waits.len()), "{} polls", waits.len());
    })
}

/// The clock reads `at`.
fn clock_is(at: Duration) -> Beat<DeployMachine> {
    run(move |play: &mut Play<DeployMachine>| assert_eq!(play.now, at))
}

/// Whether this call created its pod.
fn created_this_call(yes: bool) -> Beat<DeployMachine> {
    run(move |play: &mut Play<DeployMachine>| assert_eq!(play.machine.created_this_call(), yes))
}

/// Any wait on the pod.
fn waits() -> Check<Output> {
    asks("a wait", |r| matches!(r, Request::Wait { .. }))
}

/// The first read, answered by the preflight, found `pod`.
fn found(pod: ObservedPod) -> Answer {
    first(Some(pod))
}

/// A pod whose kubelet cannot find a Secret yet (pending its Secret check).
fn config_error() -> ObservedPod {
    own_pod(waiting(Some("CreateContainerConfigError"), None))
}

/// Answer every read with `pod` (each wait run out) until another step comes.
fn keep_reading(pod: ObservedPod) -> Beat<DeployMachine> {
    run(move |play: &mut Play<DeployMachine>| {
        play.keep_answering(|_, r| matches!(r, Request::GetPod { .. }).then(|| read(pod.clone())));
    })
}

/// The pod created, observed once after a poll, started: success.
fn then_started() -> Beats {
    vec![
        feed(created(), poll()),
        wait_out(get()),
        feed(read(own_pod(running())), ok(POD, true)),
    ]
}

/// R2 (pure part): a verified started pod finishes at once; the only effects before are the
/// namespace ensure, GC and one read — zero mutation.
#[test]
fn r2_started_pod_is_noop_without_mutation() {
    begun().then([
        feed(found(own_pod(running())), ok(POD, true)),
        created_this_call(false),
    ]);
}

/// R3: a started pod with a stale intent is returned, intent reported as not matching.
#[test]
fn r3_stale_intent_returned_not_matching() {
    started(DeploySpec {
        desired_intent: OTHER_INTENT.into(),
        ..spec()
    })
    .then([feed(found(own_pod(running())), ok(POD, false))]);
}

/// R1: empty cluster: Secret created before the pod, a poll wait, then the started pod.
#[test]
fn r1_create_then_observe_started() {
    to_create(spec()).then([
        feed(created(), poll()),
        created_this_call(true),
        wait_out(get()),
        feed(read(recoverable()), poll()),
        wait_out(get()),
        feed(read(own_pod(running())), ok(POD, true)),
    ]);
}

/// R5/C5: a terminated pod is deleted with exactly its observed fence, then awaited, then
/// recreated.
#[test]
fn r5_terminated_fenced_delete_then_recreate() {
    let pod = with_rv(own_pod(terminated(1, Some("Error"))), "u9", "100");
    begun()
        .then([
            feed(found(pod), delete_pod("u9", "100")),
            feed(accepted(), get()),
            // Disappeared: back to the loop top.
            feed(absent(), get()),
            feed(absent(), create_secret()),
        ])
        .then(secret_then_pod());
}

/// deploy.md § Delete and waiting for disappearance: NotFound on delete is success too.
#[test]
fn delete_not_found_waits_for_disappearance() {
    begun().then([
        feed(found(own_pod(terminated(0, None))), deletes_pod()),
        feed(deleted(DeleteAnswer::NotFound), get()),
    ]);
}

/// R7: PreconditionFailed → sleep a poll, re-classify; the pod started meanwhile → NoOp, with
/// exactly one delete.
#[test]
fn r7_precondition_failed_reclassifies_without_fresher_fence() {
    let dead = with_rv(own_pod(terminated(1, None)), "u1", "100");
    let live = with_rv(own_pod(running()), "u1", "200");
    begun().then([
        feed(found(dead), deletes_pod()),
        feed(deleted(DeleteAnswer::PreconditionFailed), poll()),
        wait_out(get()),
        feed(read(live), ok(POD, true)),
    ]);
}

/// R6-like: after PreconditionFailed a still-terminated pod is deleted with the fence of the
/// new observation (the new observation authorises it), never a substituted one.
#[test]
fn r6_second_delete_uses_new_observation() {
    let dead = with_rv(own_pod(terminated(1, None)), "u1", "100");
    begun().then([
        feed(found(dead.clone()), deletes_pod()),
        feed(deleted(DeleteAnswer::PreconditionFailed), poll()),
        wait_out(get()),
        feed(read(dead), delete_pod("u1", "100")),
    ]);
}

/// R8/R29: recoverable with the same intent is observed to the deadline, never deleted; E1
/// names the seconds, the pod and the latest condition.
#[test]
fn r8_r29_recoverable_observed_to_deadline_then_e1() {
    let e1 = fails("E1", |e| matches!(e, DeployError::DeadlineExceeded { .. }));
    begun().then([
        feed(found(recoverable()), poll()),
        observe(recoverable(), |polls| polls == 300),
        clock_is(DEFAULT_DEADLINE),
        last_is(get()),
        feed(
            read(recoverable()),
            all(vec![e1, says(["600s", POD, "ContainerCreating"])]),
        ),
    ]);
}

/// R30: a lowered deadline is honoured and named.
#[test]
fn r30_lowered_deadline_named() {
    started(DeploySpec {
        deadline: S(60),
        ..spec()
    })
    .then([
        feed(found(recoverable()), poll()),
        observe(recoverable(), |polls| polls == 30),
        last_is(get()),
        clock_is(S(60)),
        feed(absent(), says(["60s", "the pod no longer exists"])),
    ]);
}

/// A wait never extends past the deadline.
#[test]
fn wait_is_clamped_to_the_deadline() {
    begun().then([
        feed(found(recoverable()), wait(Duration::from_millis(500)))
            .at(Duration::from_millis(599_500)),
        feed(Answer::Waited, get()).at(S(601)),
    ]);
}

/// With no time left, a would-be wait continues at once into the deadline error (E1).
#[test]
fn no_time_left_skips_the_wait() {
    begun().then([feed(found(recoverable()), get()).at(DEFAULT_DEADLINE)]);
}

/// The deadline check is `elapsed ≥ deadline`: just below still observes.
#[test]
fn deadline_boundary_is_inclusive() {
    let just_below = DEFAULT_DEADLINE - Duration::from_nanos(1);
    begun().then([feed(first(None), create_secret()).at(just_below)]);
    begun().then([feed(first(None), get()).at(DEFAULT_DEADLINE)]);
}

/// R10/R11: a pull failure reports E3 at once, with the registry text and no kubelet message.
#[test]
fn r10_r11_pull_failure_reports_e3_at_once() {
    let pod = own_pod(waiting(
        Some("ImagePullBackOff"),
        Some("manifest unknown token=SUPERSECRET"),
    ));
    let e3 = fails_with(DeployError::PullFailing {
        pod: POD.into(),
        image: IMAGE.into(),
        kind: PullFailure::ManifestUnknown,
    });
    let named = fails("the pod named first", |e| {
        e.to_string().starts_with(&format!("{POD} did not start: "))
    });
    let text = all(vec![
        e3,
        named,
        says(["has no image at"]),
        says_not("SUPERSECRET"),
    ]);
    begun().then([feed(found(pod), text), clock_is(Duration::ZERO)]);
}

/// R12/C4: a deletion-marked running pod is awaited (no delete); once it is gone its own Secret
/// goes (uid-fenced, unreferenced: deploy.md § Replacing a live agent, rule 6), then the pod is
/// recreated.
#[test]
fn r12_deletion_marked_awaited_without_delete() {
    let dying = marked(own_pod(running()));
    begun()
        .then([
            feed(found(dying.clone()), get()),
            feed(read(dying), poll()),
            wait_out(get()),
            // Gone: its Secret is looked up.
            feed(absent(), retire_list()),
            feed(listed(old_secret_listing()), delete_secret(OLD_SECRET)),
            feed(accepted(), get()),
            feed(absent(), create_secret()),
        ])
        .then(secret_then_pod());
}

/// The disappearance wait ends when a different uid holds the name; what holds it now is
/// classified afresh.
#[test]
fn disappearance_ends_on_a_new_uid() {
    let successor = with_rv(own_pod(running()), "u2", "300");
    // The successor references that Secret here, so it is kept.
    let listing = Listing {
        pods: vec![successor.clone()],
        ..old_secret_listing()
    };
    begun().then([
        feed(found(marked(own_pod(running()))), get()),
        // The old pod's Secret looked up.
        feed(read(successor.clone()), retire_list()),
        feed(listed(listing), get()),
        feed(read(successor), ok(POD, true)),
    ]);
}

/// E4: the disappearance wait times out at the deadline, naming the seconds and the pod.
#[test]
fn e4_disappearance_timeout() {
    let dying = marked(own_pod(running()));
    let text = format!("timed out after 600s waiting for pod {POD} to finish terminating");
    begun().then([
        feed(found(dying.clone()), get()),
        keep_reading(dying),
        last_is(says_exactly(text)),
        clock_is(DEFAULT_DEADLINE),
    ]);
}

/// R13: `CreateContainerConfigError`, Secret exists → Recoverable → observed, no delete.
#[test]
fn r13_config_error_secret_exists_observes() {
    begun().then([
        feed(found(config_error()), secret_exists(OLD_SECRET)),
        feed(Answer::Exists(Ok(true)), poll()),
    ]);
}

/// R14: the same, Secret confirmed absent → ProvablyBroken → fenced delete.
#[test]
fn r14_config_error_secret_absent_deletes() {
    begun().then([
        feed(found(config_error()), secret_exists(OLD_SECRET)),
        feed(Answer::Exists(Ok(false)), deletes_pod()),
    ]);
}

/// A failed Secret check fails the operation (E12), naming the Secret.
#[test]
fn secret_check_error_is_e12() {
    let e12 = fails_with(DeployError::Failed {
        operation: "read secret".into(),
        object: OLD_SECRET.into(),
        failure: boom("timeout"),
    });
    begun().then([
        feed(found(config_error()), secret_exists(OLD_SECRET)),
        feed(Answer::Exists(Err(boom("timeout"))), e12),
    ]);
}

/// R16: this call's pod terminates → E2 with the exit code; no delete; a single create.
#[test]
fn r16_own_pod_crash_reports_e2_not_delete() {
    let crashed = own_pod(terminated(1, Some("Error")));
    let e2 = fails("E2", |e| matches!(e, DeployError::CreatedPodFailed { .. }));
    let text = says([
        "exited with code 1".to_owned(),
        format!("kubectl logs -n agents {POD} -c agent"),
    ]);
    to_create(spec()).then([
        feed(created(), poll()),
        wait_out(get()),
        feed(read(crashed.clone()), get()),
        feed(read(crashed), all(vec![e2, text])),
        run(|play: &mut Play<DeployMachine>| assert!(play.now < DEFAULT_DEADLINE)),
    ]);
}

/// deploy.md § One create attempt per call: every replace classification after this call's create
/// is reported (rows 4, 5, 8).
#[test]
fn every_replace_after_own_create_is_e2() {
    let broken = own_pod(waiting(Some("InvalidImageName"), None));
    let mut divergent = recoverable();
    divergent.marks.create_intent = Some(OTHER_INTENT.into());
    for pod in [own_pod(terminated(0, None)), broken, divergent] {
        to_create(spec()).then([
            feed(created(), poll()),
            wait_out(get()),
            feed(read(pod), get()),
        ]);
    }
}

/// R35: this call's pod vanishes → the loop may create again.
#[test]
fn r35_vanished_own_pod_may_be_recreated() {
    to_create(spec())
        .then([
            feed(created(), poll()),
            wait_out(get()),
            feed(absent(), create_secret()),
        ])
        .then(secret_then_pod());
}

/// R15/R22: lost race to a running winner: own Secret dropped (uid-fenced) when unreferenced,
/// winner adopted.
#[test]
fn r15_r22_lost_race_drops_own_secret_adopts_winner() {
    let winner = own_pod(running());
    let listing = Listing {
        pods: vec![winner.clone()],
        secrets: vec![own_secret(SECRET, Some(1)), own_secret(OLD_SECRET, Some(1))],
        ..Listing::default()
    };
    to_create(spec()).then([
        feed(lost_race(), get()),
        feed(read(winner.clone()), list()),
        feed(listed(listing), delete_secret(SECRET)),
        feed(accepted(), get()),
        feed(read(winner), ok(POD, true)),
    ]);
}

/// deploy.md § Losing the create race, step 2: a referenced own Secret is kept; a failed listing
/// keeps it too.
#[test]
fn lost_race_keeps_referenced_own_secret() {
    let mut referencing = recoverable();
    referencing.facts.env_from_secret = Some(SECRET.into());
    for listing in [
        Ok(Listing {
            pods: vec![referencing],
            ..own_secret_listing()
        }),
        Err(boom("forbidden")),
    ] {
        to_create(spec()).then([
            feed(lost_race(), get()),
            feed(read(recoverable()), list()),
            feed(Answer::Listed(listing), get()),
        ]);
    }
}

/// A deploy that lost the create race to `winner`, its own Secret's lookup listing nothing: the
/// winner's next read asked for.
fn lost_race_to(winner: ObservedPod) -> Play<DeployMachine> {
    to_create(spec()).then([
        feed(lost_race(), get()),
        feed(read(winner), list()),
        feed(listed(Listing::default()), get()),
    ])
}

/// R19/R20: the winner is foreign → own Secret dropped, E8, no pod delete.
#[test]
fn r19_r20_foreign_winner_drops_own_secret_e8() {
    let mut look_alike = own_pod(running());
    look_alike.marks.managed_by = None;
    for winner in [look_alike, foreign(own_pod(running()))] {
        to_create(spec()).then([
            feed(lost_race(), get()),
            feed(read(winner), list()),
            feed(listed(own_secret_listing()), delete_secret(SECRET)),
            feed(
                Answer::Deleted(Err(boom("boom"))),
                fails_with(DeployError::ForeignPod { pod: POD.into() }),
            ),
        ]);
    }
}

/// R23/R25: a started winner is adopted — with a different intent, and even deletion-marked.
#[test]
fn r23_r25_started_winner_adopted() {
    let mut divergent = own_pod(running());
    divergent.marks.create_intent = Some(OTHER_INTENT.into());
    lost_race_to(divergent.clone()).then([feed(read(divergent), ok(POD, false))]);
    let deleting = marked(own_pod(running()));
    lost_race_to(deleting.clone()).then([feed(read(deleting), ok(POD, true))]);
}

/// R26: a deletion-marked winner that has not started → E6.
#[test]
fn r26_deleting_winner_e6() {
    lost_race_to(marked(recoverable())).then([feed(
        read(marked(recoverable())),
        says(["already being deleted; try again"]),
    )]);
}

/// R27: a terminated or broken winner → E7 with the latest condition; never a delete.
#[test]
fn r27_terminated_winner_e7() {
    for winner in [
        own_pod(terminated(1, Some("Error"))),
        own_pod(waiting(Some("InvalidImageName"), None)),
    ] {
        let e7 = fails("E7", |e| matches!(e, DeployError::WinnerFailed { .. }));
        lost_race_to(winner.clone()).then([
            feed(read(winner.clone()), get()),
            feed(read(winner), all(vec![e7, says(["another deploy"])])),
        ]);
    }
}

/// R24/R28: a recoverable or pull-failing winner is observed; E5 at the deadline.
#[test]
fn r24_r28_winner_observed_to_deadline_e5() {
    let pulling = own_pod(waiting(Some("ErrImagePull"), Some("401 Unauthorized")));
    let e5 = fails("E5", |e| {
        matches!(e, DeployError::RaceDeadlineExceeded { .. })
    });
    let text = says(["another deploy of this agent created the pod", "600s"]);
    lost_race_to(pulling.clone()).then([
        feed(read(pulling.clone()), any()),
        observe(pulling.clone(), |_| true),
        clock_is(DEFAULT_DEADLINE),
        last_is(get()),
        feed(read(pulling), all(vec![e5, text])),
    ]);
    lost_race_to(recoverable()).then([
        feed(read(recoverable()), waits()),
        wait_out(get()),
        feed(read(own_pod(running())), ok(POD, true)),
    ]);
}

/// The race path settles a pending winner with a Secret check, and an absent winner is waited
/// for; it turns foreign → E8.
#[test]
fn race_path_settles_and_waits() {
    let check = asks("a Secret check", |r| {
        matches!(r, Request::SecretExists { .. })
    });
    lost_race_to(config_error()).then([
        feed(read(config_error()), check),
        feed(Answer::Exists(Ok(false)), get()),
    ]);
    lost_race_to(recoverable()).then([
        feed(read(recoverable()), waits()),
        wait_out(get()),
        feed(absent(), waits()),
        wait_out(get()),
        feed(
            read(foreign(own_pod(running()))),
            fails_with(DeployError::ForeignPod { pod: POD.into() }),
        ),
    ]);
}

/// R21: a foreign pod at observation → E8 before anything is written.
#[test]
fn r21_foreign_at_observation_e8_before_writing() {
    let text = says([
        POD,
        "not managed by apiary for this agent",
        "remove it or use another namespace",
    ]);
    begun().then([feed(found(foreign(own_pod(running()))), text)]);
}

/// R31/E11/E9: namespace failures end the deploy before anything is written.
#[test]
fn r31_namespace_failures() {
    let forbidden = preflighted(Err(NamespaceFailure::CreateForbidden), Ok(None));
    begun().then([feed(forbidden, says(["`kubectl create namespace agents`"]))]);
    let failure = boom("could not read namespace agents: 500");
    let failed = preflighted(Err(NamespaceFailure::Failed(failure)), Ok(None));
    let text = "namespace agents: could not read namespace agents: 500";
    begun().then([feed(failed, says_exactly(text))]);
}

/// E11: a Secret create answered NotFound means the namespace is missing.
#[test]
fn e11_secret_create_not_found() {
    let not_found = Answer::SecretCreated(Err(SecretCreateFailure {
        name: SECRET.into(),
        failure: RequestFailure::api(404, "NotFound", "404"),
    }));
    let e11 = fails_with(DeployError::NamespaceMissing {
        namespace: "agents".into(),
    });
    begun().then([feed(first(None), create_secret()), feed(not_found, e11)]);
}

/// E10: a Secret create failure names the Secret and the error; nothing to clean up.
#[test]
fn e10_secret_create_failed() {
    let forbidden = Answer::SecretCreated(Err(SecretCreateFailure {
        name: SECRET.into(),
        failure: RequestFailure::api(403, "Forbidden", "403 Forbidden"),
    }));
    let text = format!("could not create secret {SECRET}: 403 Forbidden; nothing was written");
    begun().then([
        feed(first(None), create_secret()),
        feed(forbidden, says_exactly(text)),
    ]);
}

/// A pod create refused with these words.
fn refused(message: &str) -> Answer {
    Answer::PodCreated(PodCreateOutcome::Refused(boom(message)))
}

/// R33: a refused pod create drops own Secret and reports E10 saying it was removed.
#[test]
fn r33_refused_create_drops_own_secret() {
    let removed = says([
        format!("could not create pod {POD}: 403 Forbidden: exceeded quota"),
        format!("secret {SECRET} was removed"),
    ]);
    to_create(spec()).then([
        feed(refused("403 Forbidden: exceeded quota"), list()),
        feed(listed(own_secret_listing()), delete_secret(SECRET)),
        feed(accepted(), removed),
    ]);
    // A failed drop says the Secret was left.
    to_create(spec()).then([
        feed(refused("quota"), list()),
        feed(listed(own_secret_listing()), delete_secret(SECRET)),
        feed(
            deleted(DeleteAnswer::PreconditionFailed),
            says(["was left in place"]),
        ),
    ]);
}

/// R34: a transport failure on pod create leaves the Secret (no drop attempted).
#[test]
fn r34_transport_failure_leaves_secret() {
    let reset = || RequestFailure::transport("connection reset");
    let left = fails_with(DeployError::CreateFailed {
        kind: ObjectKind::Pod,
        name: POD.into(),
        failure: reset(),
        secret: SecretFate::Left(SECRET.into()),
    });
    to_create(spec()).then([feed(
        Answer::PodCreated(PodCreateOutcome::TransportFailed(reset())),
        left,
    )]);
}

/// E12: read and delete failures name the operation and the pod.
#[test]
fn e12_read_and_delete_failures() {
    let unread = preflighted(Ok(NamespaceCheck::Present), Err(boom("timeout")));
    let text = format!("could not read pod pod {POD}: timeout");
    begun().then([feed(unread, says_exactly(text))]);
    let delete_failed = fails(
        "E12 of the delete",
        |e| matches!(e, DeployError::Failed { operation, .. } if operation == "delete pod"),
    );
    begun().then([
        feed(found(own_pod(terminated(0, None))), deletes_pod()),
        feed(Answer::Deleted(Err(boom("500"))), delete_failed),
    ]);
}

/// A failed latest-condition read still fails with the deadline error, saying why.
#[test]
fn unreadable_latest_condition() {
    begun().then([
        feed(first(None), get()).at(DEFAULT_DEADLINE),
        feed(
            Answer::PodRead(Err(boom("refused"))),
            says(["the pod's condition could not be read: refused"]),
        ),
    ]);
}

/// A driver answering the wrong event ends the deploy (E12) without echoing event content.
#[test]
fn unexpected_event_is_e12_without_content() {
    let mut pod = own_pod(waiting(Some("ErrImagePull"), Some("token=SUPERSECRET")));
    pod.marks.name = Some("x".into());
    let text = all(vec![
        says_not("SUPERSECRET"),
        says(["PodRead", "Preflighted"]),
    ]);
    begun().then([feed(read(pod), text)]);
}

/// Once finished, every step repeats the Finish.
#[test]
fn finished_machine_repeats_finish() {
    begun().then([
        feed(found(own_pod(running())), ok(POD, true)),
        feed(Answer::Waited, ok(POD, true)),
        feed(Answer::Start, ok(POD, true)),
    ]);
}

/// A wait carries the pod's last observed resourceVersion for the watch.
#[test]
fn wait_carries_last_resource_version() {
    let from = asks("a wait watching from 4711", |r| {
        matches!(r, Request::Wait { resource_version, .. }
            if resource_version.as_deref() == Some("4711"))
    });
    begun().then([feed(found(with_rv(recoverable(), "u1", "4711")), from)]);
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

/// A fresh deploy of `spec` up to its first pod create, refused for the missing `default`
/// account: the account's read asked for.
fn refused_for_account(spec: DeploySpec) -> Play<DeployMachine> {
    to_create(spec).then([feed(account_missing("default"), get_account("default"))])
}

/// A pod running as `default` refused for its missing account keeps its Secret, reads the
/// account, waits while it is absent, and retries the create with the same Secret once it
/// exists: no second Secret, no drop.
#[test]
fn missing_default_account_waits_and_retries_with_the_same_secret() {
    refused_for_account(spec()).then([
        feed(Answer::Exists(Ok(false)), poll()),
        wait_out(get_account("default")),
        feed(Answer::Exists(Ok(false)), waits()),
        wait_out(get_account("default")),
        feed(Answer::Exists(Ok(true)), create_pod()),
        feed(created(), waits()),
        created_this_call(true),
        wait_out(get()),
        feed(read(own_pod(running())), ok(POD, true)),
    ]);
}

/// An account that appeared between the refusal and the read is used at once: no wait.
#[test]
fn an_account_that_already_exists_retries_at_once() {
    refused_for_account(spec()).then([
        feed(Answer::Exists(Ok(true)), create_pod()),
        clock_is(Duration::ZERO),
    ]);
}

/// Only one retry follows a refusal without a wait: when the admission cache still refuses
/// after the account read found it, the next create waits a poll first (no hot spin).
#[test]
fn a_second_refusal_waits_before_the_next_create() {
    refused_for_account(spec()).then([
        feed(Answer::Exists(Ok(true)), create_pod()),
        feed(account_missing("default"), get_account("default")),
        feed(Answer::Exists(Ok(true)), poll()),
        wait_out(get_account("default")),
        feed(Answer::Exists(Ok(true)), create_pod()),
    ]);
}

/// `--service-account default` runs as `default` too: the refusal is just as transient.
#[test]
fn naming_default_explicitly_is_still_transient() {
    refused_for_account(DeploySpec {
        service_account: Some("default".into()),
        ..spec()
    });
}

/// At the deadline the wait ends with E1 naming the missing account and the `kubectl create
/// serviceaccount` fix; the Secret is left (a deadline cleans up nothing).
#[test]
fn the_deadline_names_the_missing_account() {
    // Bounded (the runner's answering ends), so a machine that never expires fails here instead
    // of hanging (kills the `expired -> false` mutant within the test timeout).
    let reads = run(|play: &mut Play<DeployMachine>| {
        let reads = Cell::new(1);
        play.keep_answering(|_, r| {
            matches!(r, Request::ServiceAccountExists { .. }).then(|| {
                reads.set(reads.get() + 1);
                Answer::Exists(Ok(false))
            })
        });
        assert_eq!(
            reads.get(),
            3,
            "reads at 0 s, 2 s and 4 s; the wait to 5 s ends the call"
        );
    });
    let e1 = fails_with(DeployError::ServiceAccountMissing {
        namespace: "agents".into(),
        pod: POD.into(),
        account: "default".into(),
        deadline: S(5),
        secret: SECRET.into(),
    });
    refused_for_account(DeploySpec {
        deadline: S(5),
        ..spec()
    })
    .then([feed(Answer::Exists(Ok(false)), any()), reads, last_is(e1)]);
}

/// An account read answered after the deadline ends the call even when the account exists: a
/// create past the deadline would start an attempt nobody waits for.
#[test]
fn no_create_after_the_deadline() {
    let e1 = fails("E1 for the account", |e| {
        matches!(e, DeployError::ServiceAccountMissing { .. })
    });
    refused_for_account(DeploySpec {
        deadline: S(5),
        ..spec()
    })
    .then([feed(Answer::Exists(Ok(true)), e1).at(S(5))]);
}

/// A failed account read is E12 naming the account.
#[test]
fn a_failed_account_read_is_e12() {
    let e12 = fails_with(DeployError::Failed {
        operation: "read service account".into(),
        object: "default".into(),
        failure: boom("500 boom"),
    });
    refused_for_account(spec()).then([feed(Answer::Exists(Err(boom("500 boom"))), e12)]);
}

/// A pod that names its own account (`--service-account runner`) is refused for good: the
/// Secret is dropped as for any refused create and E10 gives the `kubectl create
/// serviceaccount` fix at once.
#[test]
fn a_named_missing_account_is_reported_at_once_with_the_fix() {
    let e10 = fails("E10 of the pod", |e| {
        matches!(
            e,
            DeployError::CreateFailed {
                kind: ObjectKind::Pod,
                ..
            }
        )
    });
    let text = says([
        "403 Forbidden".to_owned(),
        "service account runner does not exist in namespace agents".to_owned(),
        "kubectl create serviceaccount runner -n agents".to_owned(),
        format!("secret {SECRET} was removed"),
    ]);
    to_create(DeploySpec {
        service_account: Some("runner".into()),
        ..spec()
    })
    .then([
        feed(account_missing("runner"), list()),
        feed(listed(own_secret_listing()), delete_secret(SECRET)),
        feed(accepted(), all(vec![e10, text])),
    ]);
}

/// Answering an account read the machine did not ask for is a driver bug, reported by name.
#[test]
fn an_unasked_account_read_is_a_driver_error() {
    begun().then([
        feed(found(recoverable()), poll()),
        feed(
            Answer::Exists(Ok(true)),
            says(["answered Exists while the machine waited for"]),
        ),
    ]);
    refused_for_account(spec()).then([feed(
        Answer::Waited,
        says(["answered Waited while the machine waited for Exists"]),
    )]);
}

/// The preflight asks for GC only when the spec does (the knob tests use to reach
/// classification directly); either way the namespace ensure and the first read come with it.
#[test]
fn preflight_gc_is_asked_for_only_when_on() {
    deploy(DeploySpec {
        preflight_gc: false,
        ..spec()
    })
    .then([feed(Answer::Start, is_preflight(false))]);
    deploy(spec()).then([feed(Answer::Start, is_preflight(true))]);
}

/// deploy.md § Sequence (the preflight): the first read the preflight answers is the loop's first
/// observation; no second GET of the pod follows (an absent pod goes straight to the create).
#[test]
fn the_preflight_read_is_the_first_observation() {
    begun().then([feed(first(None), create_secret())]);
    let finished = that("a success", |s| matches!(s, Step::Done(Ok(_))));
    begun().then([feed(found(own_pod(running())), finished)]);
}

/// A namespace failure decides the preflight whatever the first read said: E11 and E9 win over
/// a pod the read found (deploy.md § Namespace ensure).
#[test]
fn a_namespace_failure_wins_over_the_first_read() {
    let forbidden = preflighted(
        Err(NamespaceFailure::CreateForbidden),
        Ok(Some(own_pod(running()))),
    );
    let e11 = fails("E11", |e| matches!(e, DeployError::NamespaceMissing { .. }));
    begun().then([feed(forbidden, e11)]);
}

/// deploy.md § Namespace ensure, item 1: with the namespace GET forbidden (unchecked), a
/// forbidden first read means the namespace may be missing: E12 carries E11's literal command
/// (and still the refusal). With the namespace present, the same refusal has no such hint.
#[test]
fn forbidden_read_in_an_unchecked_namespace_names_the_kubectl_command() {
    let refused = || {
        Err(RequestFailure::api(
            403,
            "Forbidden",
            "pods \"p\" is forbidden",
        ))
    };
    let hint = says(["`kubectl create namespace agents`", "is forbidden"]);
    begun().then([feed(
        preflighted(Ok(NamespaceCheck::Unchecked), refused()),
        hint,
    )]);
    let present = preflighted(Ok(NamespaceCheck::Present), refused());
    begun().then([feed(present, says_not("kubectl create namespace"))]);
    // An unchecked namespace with a failure other than 403 keeps the failure as it is.
    let failed = preflighted(Ok(NamespaceCheck::Unchecked), Err(boom("500")));
    begun().then([feed(failed, says_not("kubectl create namespace"))]);
}

/// Progress is an output of the machine: one value per change of observed state, polled after
/// a step, and nothing more until the state changes again (deploy.md § Loop).
#[test]
fn progress_is_reported_once_per_change_of_state() {
    use crate::status::StatusState;
    begun().then([
        run(|play: &mut Play<DeployMachine>| {
            assert_eq!(play.machine.poll_progress(), None, "nothing observed yet");
        }),
        feed(found(recoverable()), any()),
        run(|play: &mut Play<DeployMachine>| {
            let first = play
                .machine
                .poll_progress()
                .expect("the first observation is a change");
            assert_eq!(first.state, StatusState::Starting);
            assert_eq!(play.machine.poll_progress(), None, "polled once");
        }),
        feed(Answer::Waited, any()),
        feed(read(own_pod(running())), any()),
        run(|play: &mut Play<DeployMachine>| {
            let state = play.machine.poll_progress().map(|p| p.state);
            assert_eq!(state, Some(StatusState::Started));
            assert_eq!(play.machine.poll_progress(), None);
        }),
    ]);
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

fn replacing() -> DeploySpec {
    DeploySpec {
        replace: true,
        ..spec()
    }
}

/// `--replace`: a started pod of another intent is deleted with the fence of the observation that
/// authorised it, its disappearance awaited, then the normal create follows.
#[test]
fn replace_deletes_the_started_pod_of_another_intent_then_creates() {
    let old = started_other_intent("u1", "7");
    started(replacing())
        .then([
            feed(found(old.clone()), delete_pod("u1", "7")),
            feed(accepted(), get()),
            feed(read(marked(old)), waits()),
            // The disappearance is awaited.
            wait_out(get()),
            // Gone: its Secret is looked up.
            feed(absent(), retire_list()),
        ])
        .then(old_secret_goes())
        .then(then_started());
}

/// The replaced pod's Secret, listed unreferenced, deleted; then the create path from an absent
/// read up to the pod create.
fn old_secret_goes() -> Beats {
    let mut beats = vec![
        feed(listed(old_secret_listing()), delete_secret(OLD_SECRET)),
        feed(accepted(), get()),
        feed(absent(), create_secret()),
    ];
    beats.extend(secret_then_pod());
    beats
}

/// A replacing call through the replace delete of a started pod `u1` and its disappearance, up
/// to the listing of the agent's pods and Secrets.
fn replaced_and_gone() -> Play<DeployMachine> {
    started(replacing()).then([
        feed(found(started_other_intent("u1", "7")), deletes_pod()),
        feed(accepted(), get()),
        // Gone: its Secret is looked up.
        feed(absent(), retire_list()),
    ])
}

/// deploy.md § Replacing a live agent, rule 6: once the replaced pod is gone, its own Secret is
/// deleted fenced by the uid the listing showed, before this call creates anything; a pod that
/// now holds the name (a concurrent deploy's) references only its own Secret, which is kept.
#[test]
fn replace_deletes_the_replaced_pods_secret_once_it_is_gone() {
    let mut newcomer = with_rv(recoverable(), "u2", "9");
    newcomer.facts.env_from_secret = Some(SECRET.into());
    let listing = Listing {
        pods: vec![newcomer],
        secrets: vec![own_secret(OLD_SECRET, Some(1)), own_secret(SECRET, Some(1))],
        ..Listing::default()
    };
    replaced_and_gone()
        .then([
            feed(listed(listing), delete_secret(OLD_SECRET)),
            feed(accepted(), get()),
            feed(absent(), create_secret()),
        ])
        .then(secret_then_pod());
}

/// The replaced pod's Secret is kept while any listed pod references it, when the listing
/// fails (nothing proves it unreferenced), and when it is not listed as ours with a uid.
#[test]
fn replace_keeps_the_replaced_pods_secret_without_proof() {
    let mut referencing = recoverable();
    referencing.facts.env_from_secret = Some(OLD_SECRET.into());
    let mut foreign_secret = own_secret(OLD_SECRET, Some(1));
    foreign_secret.marks.agent_id = Some(OTHER_AGENT_ID.into());
    for listing in [
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
        replaced_and_gone().then([
            feed(Answer::Listed(listing), get()),
            feed(absent(), create_secret()),
        ]);
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
        replaced_and_gone()
            .then([
                feed(listed(old_secret_listing()), delete_secret(OLD_SECRET)),
                feed(Answer::Deleted(answer), get()),
                feed(absent(), create_secret()),
            ])
            .then(secret_then_pod())
            .then(then_started());
    }
}

/// A failed replace (the new pod create refused) has already dropped the old Secret: its delete
/// comes before this call's Secret create, and the refusal then drops the new one too.
#[test]
fn a_failed_replace_leaves_no_old_secret() {
    let refused = PodCreateOutcome::Refused(RequestFailure::api(403, "Forbidden", "quota"));
    replaced_and_gone()
        .then(old_secret_goes())
        .then([feed(Answer::PodCreated(refused), list())]);
}

/// What retires a Secret: after a failed precondition the same pod, seen deleting (another
/// replacer's delete) and then gone, has its Secret looked up too (rule 6: a pod awaited until
/// gone); a plain deploy's delete (row 4) retires nothing (the GC pass collects a terminated
/// pod's Secret); and at the deadline nothing is cleaned up.
#[test]
fn only_an_accepted_replace_delete_retires_before_the_deadline() {
    started(replacing()).then([
        feed(found(started_other_intent("u1", "7")), deletes_pod()),
        feed(deleted(DeleteAnswer::PreconditionFailed), waits()),
        wait_out(get()),
        // A deleting pod is awaited.
        feed(read(marked(started_other_intent("u1", "8"))), get()),
        // Gone: its Secret is looked up.
        feed(absent(), retire_list()),
    ]);
    let dead = with_rv(own_pod(terminated(1, Some("Error"))), "u1", "7");
    started(replacing()).then([
        feed(found(dead), deletes_pod()),
        feed(accepted(), get()),
        // Row 4: GC's to collect.
        feed(absent(), get()),
    ]);
    let e1 = fails("E1", |e| matches!(e, DeployError::DeadlineExceeded { .. }));
    started(replacing()).then([
        feed(found(started_other_intent("u1", "7")), deletes_pod()),
        feed(accepted(), get()),
        // The latest condition, nothing deleted.
        feed(absent(), get()).at(DEFAULT_DEADLINE),
        feed(absent(), e1),
    ]);
}

/// `--replace` is a no-op when the intent and the environment match: one read of the pod's own
/// Secret to compare, zero mutation.
#[test]
fn replace_is_a_noop_when_the_intent_matches() {
    started(replacing()).then([
        feed(found(own_pod(running())), compare_env()),
        feed(Answer::EnvCompared(Ok(Some(Vec::new()))), ok(POD, true)),
    ]);
}

/// deploy.md § Replacing a live agent: with `--replace`, a started pod of the same intent whose
/// Secret holds another environment (a rotated key) is replaced like one of another intent: a
/// fenced delete with the observation's fence. The comparison is asked for once per call.
#[test]
fn replace_replaces_a_pod_whose_environment_differs() {
    let rotated = Answer::EnvCompared(Ok(Some(vec!["TOKEN".into()])));
    started(replacing())
        .then([
            feed(found(with_rv(own_pod(running()), "u1", "7")), compare_env()),
            feed(rotated, delete_pod("u1", "7")),
            feed(accepted(), get()),
            feed(absent(), retire_list()),
        ])
        .then(old_secret_goes())
        .then([
            feed(created(), waits()),
            wait_out(get()),
            // The new pod is not compared again.
            feed(read(with_rv(own_pod(running()), "u2", "9")), ok(POD, true)),
        ]);
}

/// Without `--replace` the environment is never read; a failed comparison read fails the
/// deploy (E12) naming the Secret, with no delete.
#[test]
fn the_environment_is_compared_only_when_replacing() {
    begun().then([feed(found(own_pod(running())), ok(POD, true))]);
    let e12 = fails_with(DeployError::Failed {
        operation: "read secret".into(),
        object: OLD_SECRET.into(),
        failure: boom("timeout"),
    });
    started(replacing()).then([
        feed(found(own_pod(running())), compare_env()),
        feed(Answer::EnvCompared(Err(boom("timeout"))), e12),
    ]);
    // A pod of another intent is replaced without reading its environment.
    started(replacing()).then([feed(found(started_other_intent("u1", "7")), deletes_pod())]);
}

fn referencing(names: &[&str]) -> Play<DeployMachine> {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let check = ask(Request::CheckReferences {
        names: names.clone(),
    });
    deploy(DeploySpec {
        referenced_secrets: names,
        ..spec()
    })
    .then([feed(Answer::Start, check)])
}

/// deploy.md § Credentials from the cluster: the referenced Secrets are checked before anything
/// else; all present → the preflight as usual.
#[test]
fn referenced_secrets_are_checked_before_the_preflight() {
    referencing(&["creds", "keys"]).then([feed(
        Answer::ReferencesChecked(Ok(vec![true, true])),
        is_preflight(true),
    )]);
}

/// A missing reference is refused before any other request (zero mutation), naming the first
/// missing Secret and the command that creates it; a short answer counts as missing; a failed
/// read is E12 naming the Secrets.
#[test]
fn a_missing_reference_is_refused_before_anything_is_created() {
    let missing = fails_with(DeployError::ReferencedSecretMissing {
        namespace: "agents".into(),
        missing: Box::new(Missing {
            name: "keys".into(),
            ..Missing::default()
        }),
        pod: None,
    });
    let text = says([
        "secret keys",
        "nothing was created",
        "kubectl create secret generic keys -n agents",
    ]);
    referencing(&["creds", "keys"]).then([feed(
        Answer::ReferencesChecked(Ok(vec![true, false])),
        all(vec![missing, text]),
    )]);
    let short = fails(
        "keys missing",
        |e| matches!(e, DeployError::ReferencedSecretMissing { missing, .. } if missing.name == "keys"),
    );
    referencing(&["creds", "keys"]).then([feed(Answer::ReferencesChecked(Ok(vec![true])), short)]);
    let e12 = fails_with(DeployError::Failed {
        operation: "read secret".into(),
        object: "creds".into(),
        failure: boom("timeout"),
    });
    referencing(&["creds"]).then([feed(Answer::ReferencesChecked(Err(boom("timeout"))), e12)]);
}

/// A referenced Secret deleted after the check: the kubelet's `CreateContainerConfigError`
/// naming it is settled by a quorum read of that Secret; confirmed absent, the deploy fails at
/// once naming it, and the pod is kept (the kubelet starts it once the Secret exists); present,
/// it is observed as usual.
#[test]
fn a_referenced_secret_gone_after_the_check_is_reported_not_waited_out() {
    let waiting_for_creds = || {
        own_pod(waiting(
            Some("CreateContainerConfigError"),
            Some("secret \"creds\" not found"),
        ))
    };
    let missing = fails_with(DeployError::ReferencedSecretMissing {
        namespace: "agents".into(),
        missing: Box::new(Missing {
            name: "creds".into(),
            ..Missing::default()
        }),
        pod: Some(POD.into()),
    });
    begun().then([
        feed(found(waiting_for_creds()), secret_exists("creds")),
        feed(
            Answer::Exists(Ok(false)),
            all(vec![missing, says(["the pod is kept"])]),
        ),
    ]);
    begun().then([
        feed(found(waiting_for_creds()), secret_exists("creds")),
        feed(Answer::Exists(Ok(true)), poll()),
    ]);
}

/// Without `--replace` the same pod is kept and reported as differing (R3).
#[test]
fn without_replace_a_started_pod_of_another_intent_is_kept() {
    begun().then([feed(found(started_other_intent("u1", "7")), ok(POD, false))]);
}

/// Concurrent replaces: a started pod of another intent that this call did not first observe (a
/// concurrent replace's new pod) is adopted, never deleted: no delete loop.
#[test]
fn replace_never_deletes_a_pod_it_did_not_first_observe() {
    let mut pending = with_rv(recoverable(), "u2", "9");
    pending.marks.create_intent = Some(OTHER_INTENT.into());
    started(replacing()).then([
        feed(found(started_other_intent("u1", "7")), deletes_pod()),
        // Another replacer got there first: the precondition fails; re-observe after one poll.
        feed(deleted(DeleteAnswer::PreconditionFailed), waits()),
        wait_out(get()),
        // The other replacer's pod, pending with its (different) intent: observed, not deleted.
        feed(read(pending), any()),
        observe(started_other_intent("u2", "10"), |polls| polls >= 1),
        // Adopted, its intent reported.
        last_is(ok(POD, false)),
    ]);
}

/// The first observation spends the authorisation: after one replace delete, the same pod seen
/// again (re-observed after a failed precondition) is not deleted a second time.
#[test]
fn replace_deletes_the_first_observed_pod_at_most_once() {
    started(replacing()).then([
        feed(found(started_other_intent("u1", "7")), deletes_pod()),
        feed(deleted(DeleteAnswer::PreconditionFailed), waits()),
        wait_out(get()),
        // One delete per observed pod.
        feed(read(started_other_intent("u1", "8")), ok(POD, false)),
    ]);
}

/// A first read that finds nothing leaves nothing to replace.
#[test]
fn replace_after_an_absent_first_read_replaces_nothing() {
    to_create(replacing()).then([
        feed(lost_race(), get()),
        // The race winner, started with another intent: adopted (the race path has no delete).
        feed(read(started_other_intent("u5", "3")), list()),
    ]);
}

fn staying_up(window: u64) -> DeploySpec {
    DeploySpec {
        min_running: S(window),
        ..spec()
    }
}

/// `--min-running`: a started pod succeeds only once it has been read started for the window;
/// the waits in between never run past what is left of it.
#[test]
fn min_running_waits_for_the_window_then_succeeds() {
    started(staying_up(3)).then([
        feed(found(own_pod(running())), wait(S(2))),
        wait_out(get()),
        feed(read(own_pod(running())), wait(S(1))),
        wait_out(get()),
        feed(read(own_pod(running())), ok(POD, true)),
        clock_is(S(3)),
    ]);
}

/// `--min-running` of zero is today's behaviour: the first started read succeeds.
#[test]
fn min_running_zero_succeeds_at_the_first_started_read() {
    started(staying_up(0)).then([feed(found(own_pod(running())), ok(POD, true))]);
}

/// A crash inside the window is reported as the crash it is: E2 with the exit code, not a
/// success and not a delete.
#[test]
fn a_crash_inside_the_window_is_reported_with_its_exit_code() {
    let crashed = own_pod(terminated(137, Some("Error")));
    let e2 = fails("E2", |e| matches!(e, DeployError::CreatedPodFailed { .. }));
    to_create(staying_up(3)).then([
        feed(created(), waits()),
        wait_out(get()),
        feed(read(own_pod(running())), waits()),
        wait_out(get()),
        feed(read(crashed.clone()), get()),
        feed(read(crashed), all(vec![e2, says(["exited with code 137"])])),
    ]);
}

/// Another pod under the name (a new uid) starts the window again; so does a read in between
/// that shows no started pod.
#[test]
fn min_running_restarts_on_another_pod_or_an_interruption() {
    started(staying_up(3)).then([
        feed(found(own_pod(running())), waits()),
        wait_out(get()),
        feed(read(with_rv(own_pod(running()), "u9", "5")), wait(S(2))),
        wait_out(get()),
        feed(read(with_rv(recoverable(), "u9", "6")), waits()),
        wait_out(get()),
        feed(read(with_rv(own_pod(running()), "u9", "7")), wait(S(2))),
    ]);
}

/// A race winner, too, is adopted only after the window; a crash inside it is E7.
#[test]
fn min_running_holds_a_race_winner_for_the_window() {
    let winner = with_rv(own_pod(running()), "w1", "3");
    to_create(staying_up(2)).then([
        feed(lost_race(), get()),
        feed(read(winner.clone()), list()),
        feed(listed(Listing::default()), get()),
        feed(read(winner.clone()), wait(S(2))),
        wait_out(get()),
        feed(read(winner), ok(POD, true)),
    ]);
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

fn isolating() -> DeploySpec {
    DeploySpec {
        isolate: true,
        ..spec()
    }
}

/// A deploy of `spec` that found nothing: the agent's objects are being prepared.
fn to_prepare(spec: DeploySpec) -> Play<DeployMachine> {
    started(spec).then([feed(first(None), any())])
}

/// deploy.md § Egress control: with `--isolate` the agent's policy is put in place before the
/// Secret (and so before the pod), once per call; a started pod needs none.
#[test]
fn isolate_prepares_the_policy_before_the_secret_once() {
    started(isolating())
        .then([
            feed(first(None), prepare(true, false)),
            feed(Answer::Prepared(Prepared::nothing()), create_secret()),
        ])
        .then(secret_then_pod())
        .then([
            feed(created(), waits()),
            wait_out(get()),
            // The pod vanished: the second create of the call goes straight to the Secret.
            feed(absent(), create_secret()),
        ]);
    started(isolating()).then([feed(found(own_pod(running())), ok(POD, true))]);
}

/// A policy that cannot be put in place ends the deploy with E15 before anything else is
/// written; a NotFound on its create is the missing namespace (E11).
#[test]
fn a_policy_failure_is_e15_before_any_secret() {
    let foreign = PolicyFailure::Problem(crate::policy::PolicyProblem::Foreign);
    let e15 = fails("E15 of a foreign policy, with no request behind it", |e| {
        let text = e.to_string();
        text.starts_with(&format!(
            "networkpolicy agents/{POD} (--isolate) exists but"
        )) && text.ends_with("no pod was created")
            && e.request_failure().is_none()
    });
    to_prepare(isolating()).then([feed(policy_failed(foreign), e15)]);
    let failed = fails("E15 exposing its request's failure", |e| {
        e.request_failure() == Some(&boom("etcd down")) && e.to_string().contains("etcd down")
    });
    let etcd = PolicyFailure::Failed(boom("etcd down"));
    to_prepare(isolating()).then([feed(policy_failed(etcd), failed)]);
    let missing = RequestFailure::api(404, "NotFound", "namespaces \"agents\" not found");
    let e11 = fails_with(DeployError::NamespaceMissing {
        namespace: "agents".into(),
    });
    to_prepare(isolating()).then([feed(policy_failed(PolicyFailure::Failed(missing)), e11)]);
    // An apiserver without the NetworkPolicy API answers NotFound too: E15, not E11.
    let unserved = RequestFailure::api(
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
    let e15 = fails("E15", |e| matches!(e, DeployError::Policy { .. }));
    to_prepare(isolating()).then([feed(policy_failed(PolicyFailure::Failed(unserved)), e15)]);
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

fn with_workspace(isolate: bool) -> DeploySpec {
    DeploySpec {
        isolate,
        workspace_claim: Some(format!("{POD}-workspace")),
        ..spec()
    }
}

fn claim_report(created: bool) -> ClaimReport {
    ClaimReport {
        name: format!("{POD}-workspace"),
        created,
        differences: Vec::new(),
    }
}

/// The answer of a prepare step with the policy in place and the workspace as `workspace`.
fn claim_prepared(workspace: Result<Option<ClaimReport>, ClaimFailure>) -> Answer {
    Answer::Prepared(Prepared {
        policy: Ok(()),
        workspace,
    })
}

/// deploy.md § Persistent workspace: the claim is prepared with the policy in one step, before
/// the Secret, once per call; what was done reaches the success report.
#[test]
fn a_workspace_is_prepared_with_the_policy_before_the_secret_and_reported() {
    for isolate in [false, true] {
        let reported = done(Ok(Deployed {
            pod: POD.into(),
            intent_matches: true,
            workspace: Some(claim_report(true)),
            recorded_settings: None,
        }));
        started(with_workspace(isolate))
            .then([
                feed(first(None), prepare(isolate, true)),
                feed(
                    claim_prepared(Ok(Some(claim_report(true)))),
                    create_secret(),
                ),
            ])
            .then(secret_then_pod())
            .then([
                feed(created(), waits()),
                wait_out(get()),
                feed(read(own_pod(running())), reported),
            ]);
    }
    // A started pod is kept without preparing anything: nothing to report.
    started(with_workspace(true)).then([feed(found(own_pod(running())), ok(POD, true))]);
}

/// A claim that cannot be used ends the deploy with E16 before any Secret; the policy's failure
/// is said first when both fail; a NotFound naming the namespace is E11.
#[test]
fn a_workspace_failure_is_e16_before_any_secret() {
    let foreign = ClaimFailure::Problem(ClaimProblem::Foreign);
    let text = format!(
        "persistentvolumeclaim agents/{POD}-workspace (--workspace-size) exists but is not \
         apiary's for this agent; apiary never uses or changes it: remove it, or use another \
         namespace or agent name; no pod was created"
    );
    let no_request = fails("no request behind it", |e| e.request_failure().is_none());
    to_prepare(with_workspace(false)).then([feed(
        claim_prepared(Err(foreign.clone())),
        all(vec![says_exactly(text), no_request]),
    )]);
    let both = Answer::Prepared(Prepared {
        policy: Err(PolicyFailure::Problem(
            crate::policy::PolicyProblem::Deleting,
        )),
        workspace: Err(foreign),
    });
    let policy_first = fails("E15 first", |e| matches!(e, DeployError::Policy { .. }));
    to_prepare(with_workspace(true)).then([feed(both, policy_first)]);
    let missing = RequestFailure::api(404, "NotFound", "namespaces \"agents\" not found");
    let e11 = fails_with(DeployError::NamespaceMissing {
        namespace: "agents".into(),
    });
    to_prepare(with_workspace(true)).then([feed(
        claim_prepared(Err(ClaimFailure::Failed(missing))),
        e11,
    )]);
    let failed = fails("E16 exposing its request's failure", |e| {
        e.request_failure() == Some(&boom("etcd down"))
            && e.to_string().starts_with(&format!(
                "could not put persistentvolumeclaim agents/{POD}-workspace (--workspace-size) \
                 in place: "
            ))
    });
    let etcd = claim_prepared(Err(ClaimFailure::Failed(boom("etcd down"))));
    to_prepare(with_workspace(false)).then([feed(etcd, failed)]);
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
    let checking = || {
        checked(replacing()).then(start()).then([feed(
            found(started_other_intent("u1", "7")),
            ask(Request::CheckPodCreate),
        )])
    };
    let e17 = fails_with(DeployError::ReplaceRefused {
        namespace: "agents".into(),
        pod: POD.into(),
        failure: quota.clone(),
    });
    // The running pod is not a leftover: it runs.
    let kept = fails("no leftover", |e| e.left().is_none());
    checking().then([feed(
        Answer::PodCreateChecked(Err(quota)),
        all(vec![e17, kept, says(["keeps its old configuration"])]),
    )]);
    let delete = asks(
        "the delete of u1",
        |r| matches!(r, Request::DeletePod { deletion: d, .. } if d.fence().uid() == "u1"),
    );
    checking().then([feed(Answer::PodCreateChecked(Ok(())), delete)]);
}

/// The agent's other objects come first for a replacing call (once): a claim or policy problem
/// fails the deploy with the running pod kept; in place, the check and the delete follow, and
/// the create after the old pod is gone prepares nothing again.
#[test]
fn replace_prepares_the_agents_objects_before_deleting() {
    let with_claim = || {
        checked(DeploySpec {
            replace: true,
            workspace_claim: Some(format!("{POD}-workspace")),
            ..spec()
        })
        .then(start())
        .then([feed(
            found(started_other_intent("u1", "7")),
            prepare(false, true),
        )])
    };
    let foreign = claim_prepared(Err(ClaimFailure::Problem(ClaimProblem::Foreign)));
    let e16 = fails("E16", |e| matches!(e, DeployError::Workspace { .. }));
    with_claim().then([feed(foreign, e16)]);
    with_claim().then([
        feed(
            claim_prepared(Ok(Some(claim_report(false)))),
            ask(Request::CheckPodCreate),
        ),
        feed(Answer::PodCreateChecked(Ok(())), deletes_pod()),
        feed(accepted(), get()),
        // Gone: its Secret is looked up.
        feed(absent(), retire_list()),
        feed(listed(Listing::default()), any()),
        // Prepared once per call.
        feed(absent(), create_secret()),
    ]);
}
