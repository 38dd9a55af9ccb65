//! Property tests of the deploy state machine (deploy.md § The deploy operation): arbitrary
//! sequences of observations and outcomes are fed to `DeployMachine`, and for every sequence the
//! safety rules hold — no delete without the fence of the observation that authorised it, no
//! delete after this call's own create, no mutation of an unverified pod, no second create in
//! one call except after this call's pod vanished, no deletion of a referenced or foreign
//! Secret (nor of the replaced pod's own Secret before that pod was seen gone, or after this
//! call's first Secret create), no delete of a started pod but `--replace`'s one delete of the pod it first observed
//! (never two deletes with one observation's fence), and the machine finishes within the deadline plus one poll and a bounded number of
//! requests. Pure: a simulated clock, no I/O.

use apiary_classify::binding::Owner;
use apiary_classify::grace::GracePeriod;
use std::collections::BTreeSet;
use std::time::Duration;

use apiary_classify::answer::DeleteAnswer;
use apiary_classify::deploy::{DeployError, DeployMachine, DeploySpec};
use apiary_classify::facts::{ContainerState, ObjectMarks, ObservedPod, ObservedSecret, PodFacts};
use apiary_classify::failure::RequestFailure;
use apiary_classify::policy::{PolicyFailure, PolicyProblem};
use apiary_classify::request::{
    Answer, Listing, Machine as _, NamespaceCheck, NamespaceFailure, OwnSecret, PodCreateOutcome,
    Prepared, Request, SecretCreateFailure, Step,
};
use apiary_classify::verify::verify_pod;
use apiary_classify::workspace::{ClaimFailure, ClaimProblem, ClaimReport};
use proptest::prelude::*;

use crate::common::{AGENT_ID, Choices, OTHER_ID, POD};

const INTENT: &str = "26b2e7d49baf628b5f55de9996ac144c27fac0e1c85766ed2f3db5e136202c43";
const SECRET_WORD: &str = "SUPERSECRET";

fn agent_state(kind: u16) -> (Option<ContainerState>, Option<&'static str>) {
    let waiting = |reason: &str, message: Option<&str>| {
        Some(ContainerState::Waiting {
            reason: Some(reason.to_owned()),
            message: message.map(str::to_owned),
        })
    };
    match kind {
        0 => (Some(ContainerState::Running), Some(INTENT)),
        1 => (
            Some(ContainerState::Terminated {
                exit_code: 1,
                reason: Some("Error".into()),
            }),
            Some(INTENT),
        ),
        2 => (waiting("ContainerCreating", None), Some(INTENT)),
        3 => (waiting("ContainerCreating", None), Some("other-intent")),
        4 => (waiting("ContainerCreating", None), None),
        5 => (waiting("InvalidImageName", None), Some(INTENT)),
        6 => (
            waiting("ErrImagePull", Some("401 Unauthorized token=SUPERSECRET")),
            Some(INTENT),
        ),
        7 => (waiting("CreateContainerConfigError", None), Some(INTENT)),
        8 => (Some(ContainerState::Running), Some("other-intent")),
        _ => (
            waiting(
                "ImagePullBackOff",
                Some("dial tcp: i/o timeout SUPERSECRET"),
            ),
            Some(INTENT),
        ),
    }
}

/// A pod under the name: own or foreign, in any startup state, any fence, maybe dying.
fn arbitrary_pod(c: &mut Choices, secrets: &[&str]) -> ObservedPod {
    let (agent, intent) = agent_state(c.pick(10));
    let foreign = c.pick(6) == 0;
    let no_rv = c.pick(12) == 0;
    let marks = ObjectMarks {
        name: Some(POD.into()),
        uid: Some(format!("u{}", c.pick(3))),
        resource_version: (!no_rv).then(|| format!("{}", 100 * (1 + c.pick(4)))),
        managed_by: Some("apiary".into()),
        binding_version: Some(if c.pick(10) == 0 { "999" } else { "1" }.into()),
        agent_id: Some(if foreign { OTHER_ID } else { AGENT_ID }.into()),
        create_intent: intent.map(str::to_owned),
        deletion_marked: c.pick(5) == 0,
        created_at_unix: Some(1_000),
        expires_at: None,
        intent_settings: None,
    };
    let secret = secrets[usize::from(c.pick(secrets.len() as u16))];
    ObservedPod {
        marks,
        facts: PodFacts {
            phase: Some(if c.pick(4) == 0 { "Failed" } else { "Running" }.into()),
            agent,
            conditions: Vec::new(),
            env_from_secret: (!secret.is_empty()).then(|| secret.to_owned()),
            image: None,
            workspace_claim: None,
        },
    }
}

fn secret(name: &str, agent: &str) -> ObservedSecret {
    ObservedSecret {
        marks: ObjectMarks {
            name: Some(name.into()),
            uid: Some(format!("s-{name}")),
            resource_version: Some("1".into()),
            managed_by: Some("apiary".into()),
            binding_version: Some("1".into()),
            agent_id: Some(agent.into()),
            create_intent: None,
            deletion_marked: false,
            created_at_unix: Some(1),
            expires_at: None,
            intent_settings: None,
        },
    }
}

fn read_pod(c: &mut Choices, own_secret: &str) -> Answer {
    match c.pick(8) {
        0 | 1 => Answer::PodRead(Ok(None)),
        2 => Answer::PodRead(Err(RequestFailure::transport(format!(
            "read failed {SECRET_WORD}"
        )))),
        _ => Answer::PodRead(Ok(Some(arbitrary_pod(c, &[own_secret, "other-s", ""])))),
    }
}

/// Remember a read of the pod name (the preflight's first read or a later GET).
fn note_read(seen: &mut Seen, read: &Result<Option<ObservedPod>, RequestFailure>) {
    seen.last_read = read.as_ref().ok().cloned().flatten();
    seen.read_since_delete = true;
    seen.fresh_read = Some(seen.last_read.clone());
    if seen.first_read.is_none() {
        seen.first_read = Some(
            seen.last_read
                .as_ref()
                .and_then(|pod| pod.marks.uid.clone()),
        );
    }
    if matches!(read, Ok(None)) && seen.created {
        seen.absent_since_created = true;
    }
    if let (Some((uid, _)), Ok(pod)) = (&seen.retiring, read)
        && pod.as_ref().and_then(|p| p.marks.uid.as_ref()) != Some(uid)
    {
        seen.retired_gone = true;
    }
    if let Ok(pod) = read {
        let now = pod.as_ref().and_then(|p| p.marks.uid.clone());
        for (uid, secret) in &seen.deleting {
            if now.as_ref() != Some(uid) {
                seen.gone_secrets.insert(secret.clone());
            }
        }
        if let Some(pod) = pod
            && pod.marks.deletion_marked
            && verify_pod(pod, &Owner::apiary(AGENT_ID)).is_some()
            && let (Some(uid), Some(secret)) = (&pod.marks.uid, &pod.facts.env_from_secret)
        {
            seen.deleting.push((uid.clone(), secret.clone()));
        }
    }
    if seen.retired_gone
        && let Some((_, secret)) = &seen.retiring
    {
        seen.gone_secrets.insert(secret.clone());
    }
}

fn delete_answer(c: &mut Choices) -> Result<DeleteAnswer, RequestFailure> {
    match c.pick(5) {
        0 => Ok(DeleteAnswer::Accepted),
        1 => Ok(DeleteAnswer::NotFound),
        2 => Ok(DeleteAnswer::PreconditionFailed),
        3 => Ok(DeleteAnswer::Accepted),
        _ => Err(RequestFailure::api(500, "InternalError", "delete failed")),
    }
}

/// What the invariant checker remembers of the run so far.
#[derive(Default)]
struct Seen {
    /// A replace's dry-run create was admitted since the last read.
    create_checked: bool,
    last_read: Option<ObservedPod>,
    created: bool,
    absent_since_created: bool,
    lost_race: bool,
    own_secret: Option<String>,
    listing_refs: BTreeSet<String>,
    after_deadline: usize,
    /// A pod create was refused for the missing `default` account and not retried yet.
    awaiting_account: bool,
    /// Ever awaited an account (the only way to E1 for a missing account).
    awaited_account: bool,
    /// A pod create naming its own account was refused for it.
    named_account_refused: bool,
    /// Pod creates since the last wait.
    creates_since_wait: usize,
    /// Whether the first read of the name was answered, and the uid it showed.
    first_read: Option<Option<String>>,
    /// Deletes of a started pod (only `--replace` asks for them).
    started_deletes: usize,
    /// Whether the name was read since the last pod delete.
    read_since_delete: bool,
    /// The pod read by the last step, when it answered a read of the name.
    fresh_read: Option<Option<ObservedPod>>,
    /// The uid and the time of the first of the uninterrupted reads of it as running.
    running_since: Option<(String, Duration)>,
    /// Whether the agent's policy was prepared (`--isolate`).
    policy_prepared: bool,
    /// Whether an environment comparison answered "differs".
    env_differs: bool,
    /// The uid and own Secret of the started pod whose replace delete was accepted.
    retiring: Option<(String, String)>,
    /// Whether a read showed that pod gone since.
    retired_gone: bool,
    /// The uid and own Secret of every verified pod seen being deleted (deploy.md § Replacing a
    /// live agent, rule 6: its Secret may go once it is gone).
    deleting: Vec<(String, String)>,
    /// The own Secrets of those pods that a later read showed gone (absent, or another uid).
    gone_secrets: std::collections::BTreeSet<String>,
}

fn run(
    values: Vec<u16>,
    deadline_secs: u64,
    poll_secs: u64,
    named_account: bool,
    replace: bool,
    min_running: Duration,
) -> Result<(), TestCaseError> {
    let deadline = Duration::from_secs(deadline_secs);
    let poll = Duration::from_secs(poll_secs);
    let mut machine = DeployMachine::new(DeploySpec {
        namespace: "agents".into(),
        pod_name: POD.into(),
        owner: Owner::apiary(AGENT_ID),
        image: "registry.example.com/a@sha256:00".into(),
        desired_intent: INTENT.into(),
        deadline,
        poll,
        service_account: named_account.then(|| "runner".to_owned()),
        // Preflight GC on or off: the safety rules hold either way.
        preflight_gc: poll_secs.is_multiple_of(2),
        replace,
        min_running,
        referenced_secrets: Vec::new(),
        // deploy.md § Egress control: the policy rules hold with and without it.
        isolate: deadline_secs.is_multiple_of(3),
        // deploy.md § Persistent workspace: likewise with and without a claim.
        workspace_claim: deadline_secs
            .is_multiple_of(2)
            .then(|| format!("{POD}-workspace")),
        // deploy.md § Grace periods: every pod delete carries the spec's override, or none.
        delete_grace: GracePeriod::from_seconds(poll_secs % 4),
    });
    let delete_grace = GracePeriod::from_seconds(poll_secs % 4);
    let isolate = deadline_secs.is_multiple_of(3);
    let workspace = deadline_secs.is_multiple_of(2);
    let mut c = Choices::new(values);
    let mut elapsed = Duration::ZERO;
    let mut seen = Seen::default();
    let mut generation = 0u32;
    let mut effect = machine.step(elapsed, Answer::Start);
    for _ in 0..20_000 {
        if elapsed >= deadline {
            seen.after_deadline += 1;
            prop_assert!(
                seen.after_deadline <= 8,
                "too many effects after the deadline"
            );
            prop_assert!(
                !matches!(effect, Step::Request(Request::Wait { .. })),
                "wait after the deadline"
            );
        }
        let own = seen.own_secret.clone().unwrap_or_default();
        if seen.awaiting_account {
            // deploy.md § Namespace ensure item 4: keep the Secret, write nothing else, and
            // retry the pod create with it.
            prop_assert!(
                matches!(
                    effect,
                    Step::Request(Request::ServiceAccountExists { .. })
                        | Step::Request(Request::Wait { .. })
                        | Step::Request(Request::CreatePod { .. })
                        | Step::Done(_)
                ),
                "{:?} while waiting for the service account",
                effect
            );
        }
        if seen.named_account_refused {
            prop_assert!(
                matches!(
                    effect,
                    Step::Request(Request::List { secrets: true, .. })
                        | Step::Request(Request::DeleteSecret { .. })
                        | Step::Done(_)
                ),
                "{:?} after a named account was refused",
                effect
            );
        }
        let event = match &effect {
            Step::Done(result) => {
                if result.is_ok() {
                    // deploy.md § Staying up: success only after the window of uninterrupted
                    // started reads of one pod.
                    let since = seen.running_since.as_ref().map(|(_, since)| *since);
                    prop_assert!(
                        since.is_some_and(|since| elapsed - since >= min_running),
                        "success {:?} after a run from {:?} shorter than {:?}",
                        elapsed,
                        since,
                        min_running
                    );
                }
                return check_finish(result, &seen, elapsed, deadline);
            }
            Step::Request(Request::Preflight { pod, .. }) => {
                prop_assert_eq!(pod, POD);
                let namespace = match c.pick(12) {
                    0 => Err(NamespaceFailure::CreateForbidden),
                    1 => Err(NamespaceFailure::Failed(RequestFailure::api(
                        500, "", "boom",
                    ))),
                    2 => Ok(NamespaceCheck::Unchecked),
                    _ => Ok(NamespaceCheck::Present),
                };
                let Answer::PodRead(pod) = read_pod(&mut c, &own) else {
                    unreachable!("read_pod answers a read");
                };
                // The first read counts as an observation only when the namespace ensure let
                // the machine use it.
                if namespace.is_ok() {
                    note_read(&mut seen, &pod);
                }
                Answer::Preflighted { namespace, pod }
            }
            Step::Request(Request::GetPod { name, .. }) => {
                prop_assert_eq!(name, POD);
                let event = read_pod(&mut c, &own);
                if let (Step::Request(Request::GetPod { .. }), Answer::PodRead(pod)) =
                    (&effect, &event)
                {
                    note_read(&mut seen, pod);
                }
                event
            }
            &Step::Request(Request::Prepare {
                policy,
                workspace: claim,
            }) => {
                // Exactly what was asked for, once per call, and before any Secret is created.
                prop_assert_eq!(policy, isolate, "the policy half without --isolate");
                prop_assert_eq!(claim, workspace, "the claim half without --workspace-size");
                prop_assert!(!seen.policy_prepared, "prepared twice");
                prop_assert!(
                    seen.own_secret.is_none(),
                    "the policy or claim after a Secret create"
                );
                seen.policy_prepared = true;
                let policy = match c.pick(8) {
                    0 if policy => Err(PolicyFailure::Problem(PolicyProblem::Foreign)),
                    1 if policy => Err(PolicyFailure::Failed(RequestFailure::api(
                        500,
                        "InternalError",
                        "policy create failed",
                    ))),
                    _ => Ok(()),
                };
                let workspace = match c.pick(8) {
                    _ if !claim => Ok(None),
                    0 => Err(ClaimFailure::Problem(ClaimProblem::Foreign)),
                    1 => Err(ClaimFailure::Failed(RequestFailure::api(
                        500,
                        "InternalError",
                        "claim create failed",
                    ))),
                    n => Ok(Some(ClaimReport {
                        name: format!("{POD}-workspace"),
                        created: n % 2 == 0,
                        differences: Vec::new(),
                    })),
                };
                Answer::Prepared(Prepared { policy, workspace })
            }
            Step::Request(Request::CheckReferences { .. }) => {
                unreachable!("the generated specs reference no Secret")
            }
            Step::Request(Request::CompareEnv { .. }) => Answer::EnvCompared(match c.pick(4) {
                0 => Err(RequestFailure::api(
                    500,
                    "InternalError",
                    "secret read failed",
                )),
                1 => {
                    seen.env_differs = true;
                    Ok(Some(vec!["TOKEN".to_owned()]))
                }
                2 => {
                    // The pod's own Secret is gone: that differs too.
                    seen.env_differs = true;
                    Ok(None)
                }
                _ => Ok(Some(Vec::new())),
            }),
            Step::Request(Request::SecretExists { .. }) => Answer::Exists(match c.pick(5) {
                0 => Err(RequestFailure::api(
                    500,
                    "InternalError",
                    "secret read failed",
                )),
                1 | 2 => Ok(false),
                _ => Ok(true),
            }),
            Step::Request(Request::CreateSecret) => {
                prop_assert!(!seen.lost_race, "create after a lost race");
                prop_assert!(
                    !(isolate || workspace) || seen.policy_prepared,
                    "a Secret (and so a pod) before the policy or claim"
                );
                prop_assert!(
                    !seen.created || seen.absent_since_created,
                    "second create while this call's pod may exist"
                );
                generation += 1;
                let name = format!("{POD}-{generation:08x}");
                match c.pick(12) {
                    0 => Answer::SecretCreated(Err(SecretCreateFailure {
                        name,
                        failure: if c.pick(2) == 0 {
                            RequestFailure::api(404, "NotFound", "namespaces not found")
                        } else {
                            RequestFailure::api(422, "Invalid", "refused")
                        },
                    })),
                    _ => {
                        seen.own_secret = Some(name.clone());
                        Answer::SecretCreated(Ok(OwnSecret {
                            generation: format!("{generation:08x}"),
                            name,
                        }))
                    }
                }
            }
            Step::Request(Request::CreatePod { secret }) => {
                prop_assert_eq!(Some(&secret.name), seen.own_secret.as_ref());
                prop_assert!(!seen.created || seen.absent_since_created);
                seen.awaiting_account = false;
                seen.creates_since_wait += 1;
                prop_assert!(
                    seen.creates_since_wait <= 2,
                    "pod creates without a wait between them: a hot spin"
                );
                let outcome = match c.pick(10) {
                    0 | 1 => PodCreateOutcome::AlreadyExists,
                    2 => PodCreateOutcome::Refused(RequestFailure::api(403, "Forbidden", "quota")),
                    3 => PodCreateOutcome::TransportFailed(RequestFailure::transport("reset")),
                    4 | 5 => PodCreateOutcome::ServiceAccountMissing {
                        account: if named_account { "runner" } else { "default" }.into(),
                        failure: RequestFailure::api(403, "Forbidden", "sa missing"),
                    },
                    _ => PodCreateOutcome::Created,
                };
                match outcome {
                    PodCreateOutcome::Created => {
                        seen.created = true;
                        seen.absent_since_created = false;
                    }
                    PodCreateOutcome::AlreadyExists => seen.lost_race = true,
                    PodCreateOutcome::ServiceAccountMissing { .. } if named_account => {
                        seen.named_account_refused = true;
                    }
                    PodCreateOutcome::ServiceAccountMissing { .. } => {
                        seen.awaiting_account = true;
                        seen.awaited_account = true;
                    }
                    _ => {}
                }
                Answer::PodCreated(outcome)
            }
            Step::Request(Request::DeletePod { deletion, .. }) => {
                prop_assert_eq!(
                    deletion.grace(),
                    delete_grace,
                    "the delete carries the spec's grace"
                );
                let mut return_answer = None;
                prop_assert!(!seen.created, "pod delete after this call's own create");
                prop_assert!(!seen.lost_race, "pod delete on the lost-race path");
                let observed = seen.last_read.as_ref();
                prop_assert!(observed.is_some(), "delete without an observation");
                let observed = observed.unwrap();
                prop_assert!(
                    verify_pod(observed, &Owner::apiary(AGENT_ID)).is_some(),
                    "delete of an unverified pod"
                );
                prop_assert_eq!(deletion.name(), POD);
                prop_assert_eq!(Some(deletion.fence().uid()), observed.marks.uid.as_deref());
                prop_assert_eq!(
                    Some(deletion.fence().resource_version()),
                    observed.marks.resource_version.as_deref()
                );
                // Never more than one delete per observation: each delete is authorised by a
                // read of its own.
                prop_assert!(
                    std::mem::take(&mut seen.read_since_delete),
                    "a second delete authorised by one observation"
                );
                if observed.facts.agent == Some(ContainerState::Running) {
                    // deploy.md § Replacing a live agent (only with --replace, only the pod the
                    // first read showed, only once).
                    prop_assert!(replace, "a started pod deleted without --replace");
                    prop_assert_eq!(
                        seen.first_read.clone().flatten(),
                        Some(deletion.fence().uid().to_owned()),
                        "a replace delete of a pod this call did not first observe"
                    );
                    // deploy.md § Replacing a live agent: a matching intent is replaced only when
                    // its environment was answered as differing.
                    prop_assert!(
                        observed.marks.create_intent.as_deref() != Some(INTENT) || seen.env_differs,
                        "a replace delete of a pod whose intent and environment match"
                    );
                    // deploy.md § Replacing a live agent, rule 1a: only after the new pod's create
                    // was admitted by a dry run.
                    prop_assert!(
                        std::mem::take(&mut seen.create_checked),
                        "a replace delete without an admitted dry run"
                    );
                    seen.started_deletes += 1;
                    prop_assert!(seen.started_deletes <= 1, "a second replace delete");
                    let answer = delete_answer(&mut c);
                    if let (Ok(DeleteAnswer::Accepted | DeleteAnswer::NotFound), Some(secret)) =
                        (&answer, &observed.facts.env_from_secret)
                    {
                        seen.retiring = Some((deletion.fence().uid().to_owned(), secret.clone()));
                    }
                    return_answer = Some(Answer::Deleted(answer));
                }
                return_answer.unwrap_or_else(|| Answer::Deleted(delete_answer(&mut c)))
            }
            Step::Request(Request::List { secrets: true, .. }) => {
                // deploy.md § Replacing a live agent: before this call's own Secret exists, the
                // only listing is the one that retires the replaced pod's Secret.
                prop_assert!(
                    seen.own_secret.is_some() || !seen.gone_secrets.is_empty(),
                    "a drop listing without an own Secret or a deleted pod gone"
                );
                let own = match (&seen.own_secret, seen.gone_secrets.iter().next()) {
                    (None, Some(retired)) => retired.clone(),
                    _ => own.clone(),
                };
                if c.pick(6) == 0 {
                    seen.listing_refs.clear();
                    Answer::Listed(Err(RequestFailure::api(
                        500,
                        "InternalError",
                        "list forbidden",
                    )))
                } else {
                    let pods: Vec<ObservedPod> = (0..c.pick(3))
                        .map(|_| arbitrary_pod(&mut c, &[&own, "other-s", ""]))
                        .collect();
                    seen.listing_refs = pods
                        .iter()
                        .filter_map(|p| p.facts.env_from_secret.clone())
                        .collect();
                    let mut secrets = vec![secret("other-s", AGENT_ID)];
                    match c.pick(4) {
                        0 => {}
                        1 => secrets.push(secret(&own, OTHER_ID)),
                        _ => secrets.push(secret(&own, AGENT_ID)),
                    }
                    Answer::Listed(Ok(Listing {
                        pods,
                        secrets,
                        ..Listing::default()
                    }))
                }
            }
            Step::Request(Request::DeleteSecret { deletion, .. }) => {
                // This call's own Secret, or the own Secret of a pod this call deleted or saw
                // being deleted, once a read showed that pod gone: also after this call created
                // its own (a create that met the old pod terminating waits for it to go, then
                // retires its Secret; deploy.md § Replacing a live agent).
                let own = seen.own_secret.as_deref() == Some(deletion.name());
                prop_assert!(
                    own || seen.gone_secrets.contains(deletion.name()),
                    "a Secret deleted while its pod may live: {}",
                    deletion.name()
                );
                prop_assert!(
                    !seen.listing_refs.contains(deletion.name()),
                    "deleted a Secret a listed pod references"
                );
                prop_assert_eq!(deletion.uid(), format!("s-{}", deletion.name()));
                Answer::Deleted(delete_answer(&mut c))
            }
            Step::Request(Request::CheckPodCreate) => {
                prop_assert!(replace, "a dry-run create without --replace");
                prop_assert!(seen.own_secret.is_none(), "a dry run after a Secret create");
                let admitted = c.pick(4) != 0;
                seen.create_checked = admitted;
                Answer::PodCreateChecked(if admitted {
                    Ok(())
                } else {
                    Err(RequestFailure::api(403, "Forbidden", "exceeded quota: q"))
                })
            }
            Step::Request(Request::ServiceAccountExists { name }) => {
                prop_assert!(seen.awaiting_account, "account read without a refusal");
                prop_assert_eq!(name, "default");
                Answer::Exists(match c.pick(6) {
                    0 => Err(RequestFailure::api(
                        500,
                        "InternalError",
                        "account read failed",
                    )),
                    1 | 2 => Ok(true),
                    _ => Ok(false),
                })
            }
            Step::Request(Request::Wait { max, pod, .. }) => {
                seen.creates_since_wait = 0;
                prop_assert_eq!(pod, POD);
                prop_assert!(!max.is_zero() && *max <= poll, "wait of {max:?}");
                prop_assert!(elapsed + *max <= deadline, "wait past the deadline");
                elapsed += *max;
                effect = machine.step(elapsed, Answer::Waited);
                continue;
            }
            other => panic!("a request this machine never makes: {other:?}"),
        };
        elapsed += Duration::from_millis(100 + u64::from(c.pick(1400)));
        if let Some(read) = seen.fresh_read.take() {
            let running = read
                .filter(|pod| pod.facts.agent == Some(ContainerState::Running))
                .and_then(|pod| pod.marks.uid);
            seen.running_since = match (running, seen.running_since.take()) {
                (Some(uid), Some((since_uid, since))) if uid == since_uid => Some((uid, since)),
                (Some(uid), _) => Some((uid, elapsed)),
                (None, _) => None,
            };
        }
        effect = machine.step(elapsed, event);
    }
    Err(TestCaseError::fail("the machine did not finish"))
}

fn check_finish(
    result: &Result<apiary_classify::deploy::Deployed, DeployError>,
    seen: &Seen,
    elapsed: Duration,
    deadline: Duration,
) -> Result<(), TestCaseError> {
    match result {
        Ok(deployed) => {
            // The only success: a verified, started pod as last observed.
            prop_assert_eq!(&deployed.pod, POD);
            let pod = seen
                .last_read
                .as_ref()
                .expect("success after an observation");
            prop_assert!(verify_pod(pod, &Owner::apiary(AGENT_ID)).is_some());
            prop_assert_eq!(&pod.facts.agent, &Some(ContainerState::Running));
            prop_assert_eq!(
                deployed.intent_matches,
                pod.marks.create_intent.as_deref() == Some(INTENT)
            );
        }
        Err(error) => {
            let text = error.to_string();
            prop_assert!(!text.contains("token="), "{}", text);
            if matches!(
                error,
                DeployError::DeadlineExceeded { .. }
                    | DeployError::RaceDeadlineExceeded { .. }
                    | DeployError::DisappearanceTimeout { .. }
            ) {
                prop_assert!(elapsed >= deadline, "deadline error before the deadline");
            }
            if matches!(error, DeployError::CreatedPodFailed { .. }) {
                prop_assert!(seen.created);
            }
            if let DeployError::ServiceAccountMissing { account, .. } = error {
                prop_assert!(seen.awaited_account, "account error without a refusal");
                prop_assert_eq!(account, "default");
                prop_assert!(elapsed >= deadline, "account deadline before the deadline");
            }
            if seen.named_account_refused {
                prop_assert!(
                    matches!(error, DeployError::CreateFailed { .. }),
                    "a named account's refusal ends in E10, not {}",
                    text
                );
                prop_assert!(text.contains("kubectl create serviceaccount runner -n agents"));
            }
        }
    }
    Ok(())
}

proptest! {
    /// Every safety rule of the deploy loop holds for every answer sequence.
    #[test]
    fn every_answer_sequence_keeps_the_deploy_rules(
        values in prop::collection::vec(any::<u16>(), 1..64),
        deadline_secs in prop_oneof![Just(5u64), Just(60), Just(600)],
        poll_secs in 1u64..=3,
        named_account in any::<bool>(),
        replace in any::<bool>(),
        min_running_secs in prop_oneof![Just(0u64), 1u64..=4],
    ) {
        let min_running = Duration::from_secs(min_running_secs);
        run(values, deadline_secs, poll_secs, named_account, replace, min_running)?;
    }
}
