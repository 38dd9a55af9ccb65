//! Property tests of the GC pass machine (deploy.md § Execution) over arbitrary listings,
//! re-reads and delete answers: a pod delete always carries the fence of the re-read just made,
//! and only of a verified, terminated pod; a Secret delete is always of a verified Secret from the
//! listing that no listed living pod of this agent references; a dry run deletes nothing; a list
//! or re-read failure ends the pass; the pass always ends, and nothing follows its end. Pure: no
//! I/O, no clock (GC has no deadline).

use std::time::Duration;

use apiary_classify::binding::Owner;
use std::collections::BTreeSet;

use apiary_classify::answer::DeleteAnswer;
use apiary_classify::facts::{ContainerState, ObjectMarks, ObservedPod, ObservedSecret, PodFacts};
use apiary_classify::failure::RequestFailure;
use apiary_classify::gc::{GcMachine, GcSpec};
use apiary_classify::request::{Answer, Listing, Machine as _, Request, Step};
use apiary_classify::startup::{Decoded, StartupState};
use apiary_classify::verify::{verify_pod, verify_secret};
use proptest::prelude::*;

const AGENT_ID: &str = "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98";
const SECRETS: [&str; 4] = ["s0", "s1", "s2", "s3"];

fn marks(name: &str, uid: String, rv: &str, own: bool, created: Option<i64>) -> ObjectMarks {
    ObjectMarks {
        name: Some(name.to_owned()),
        uid: Some(uid),
        resource_version: Some(rv.to_owned()),
        managed_by: Some("apiary".into()),
        binding_version: Some("1".into()),
        agent_id: Some(if own { AGENT_ID } else { "other" }.into()),
        create_intent: None,
        deletion_marked: false,
        created_at_unix: created,
        expires_at: None,
        intent_settings: None,
    }
}

/// A pod under `name`: ours or not, running or terminated, referring to one of four Secrets.
fn pod(name: &str, own: bool, terminated: bool, secret: usize, uid: u8, rv: u8) -> ObservedPod {
    ObservedPod {
        marks: marks(name, format!("u{uid}"), &rv.to_string(), own, Some(0)),
        facts: PodFacts {
            phase: Some(if terminated { "Failed" } else { "Running" }.into()),
            agent: Some(if terminated {
                ContainerState::Terminated {
                    exit_code: 1,
                    reason: None,
                }
            } else {
                ContainerState::Running
            }),
            conditions: Vec::new(),
            env_from_secret: SECRETS.get(secret).map(|s| (*s).to_owned()),
            image: None,
            workspace_claim: None,
        },
    }
}

fn pod_strategy() -> impl Strategy<Value = (bool, bool, usize, u8, u8)> {
    (any::<bool>(), any::<bool>(), 0usize..5, 0u8..2, 0u8..3)
}

fn secret_strategy() -> impl Strategy<Value = ObservedSecret> {
    (0usize..4, any::<bool>(), prop::option::of(-2000i64..3000)).prop_map(|(name, own, age)| {
        ObservedSecret {
            marks: marks(
                SECRETS[name],
                format!("uid-{}", SECRETS[name]),
                "1",
                own,
                age.map(|a| 10_000 - a),
            ),
        }
    })
}

fn is_dead(pod: &ObservedPod) -> bool {
    verify_pod(pod, &Owner::apiary(AGENT_ID))
        .is_some_and(|p| p.decode() == Decoded::Settled(StartupState::Terminated))
}

fn delete_answer(pick: u8) -> Result<DeleteAnswer, RequestFailure> {
    match pick % 5 {
        0 => Ok(DeleteAnswer::NotFound),
        1 => Ok(DeleteAnswer::PreconditionFailed),
        2 => Err(RequestFailure::api(500, "InternalError", "boom")),
        _ => Ok(DeleteAnswer::Accepted),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The pass keeps every protection rule whatever the cluster answers.
    #[test]
    fn gc_pass_is_safe_over_arbitrary_answers(
        listed_pods in prop::collection::vec(pod_strategy(), 0..6),
        secrets in prop::collection::vec(secret_strategy(), 0..6),
        rereads in prop::collection::vec((0u8..6, pod_strategy()), 0..8),
        answers in prop::collection::vec(any::<u8>(), 0..16),
        clock in any::<bool>(),
        dry_run in any::<bool>(),
        list_fails in any::<bool>(),
    ) {
        let pods: Vec<ObservedPod> = listed_pods
            .iter()
            .enumerate()
            .map(|(i, &(own, dead, secret, uid, rv))| pod(&format!("p{i}"), own, dead, secret, uid, rv))
            .collect();
        let protected: BTreeSet<String> = pods
            .iter()
            .filter(|p| verify_pod(p, &Owner::apiary(AGENT_ID)).is_some() && !is_dead(p))
            .filter_map(|p| p.facts.env_from_secret.clone())
            .collect();
        let listed_uids: BTreeSet<String> = secrets
            .iter()
            .filter(|s| verify_secret(s, &Owner::apiary(AGENT_ID)).is_some())
            .filter_map(|s| s.marks.uid.clone())
            .collect();

        let mut machine = GcMachine::new(GcSpec {
            owner: Owner::apiary(AGENT_ID),
            dry_run,
            remove_policy: true,
        });
        let mut removed_policy = false;
        let mut event = Answer::Start;
        let mut listed = false;
        let mut last_reread: Option<ObservedPod> = None;
        let mut rereads = rereads.into_iter();
        let mut answers = answers.into_iter();
        let mut deleted_secrets = BTreeSet::new();
        let mut finished = None;
        for _ in 0..200 {
            let effect = machine.step(Duration::ZERO, event);
            event = match effect {
                Step::Done(result) => {
                    finished = Some(result);
                    break;
                }
                Step::Request(Request::List { secrets: true, .. }) => {
                    prop_assert!(!listed, "listed twice");
                    listed = true;
                    if list_fails {
                        Answer::Listed(Err(RequestFailure::transport("reset")))
                    } else {
                        Answer::Listed(Ok(Listing {
                            pods: pods.clone(),
                            secrets: secrets.clone(),
                            server_now: clock.then_some(10_000),
                        }))
                    }
                }
                Step::Request(Request::GetPod { name, .. }) => {
                    prop_assert!(!dry_run, "a dry run re-reads nothing");
                    let planned = pods.iter().any(|p| {
                        p.marks.name.as_deref() == Some(name.as_str()) && is_dead(p)
                    });
                    prop_assert!(planned, "re-read of a pod the plan did not doom");
                    let read = match rereads.next() {
                        None | Some((0, _)) => Ok(None),
                        Some((1, _)) => Err(RequestFailure::api(503, "ServiceUnavailable", "busy")),
                        Some((_, (own, dead, secret, uid, rv))) => {
                            Ok(Some(pod(&name, own, dead, secret, uid, rv)))
                        }
                    };
                    last_reread = read.clone().ok().flatten();
                    Answer::PodRead(read)
                }
                Step::Request(Request::DeletePod { deletion, .. }) => {
                    prop_assert!(!dry_run, "a dry run deletes nothing");
                    let seen = last_reread.take();
                    let seen = seen.as_ref();
                    prop_assert!(seen.is_some_and(is_dead), "delete without a terminated re-read");
                    let seen = seen.expect("checked above");
                    prop_assert_eq!(Some(deletion.name()), seen.marks.name.as_deref());
                    prop_assert_eq!(Some(deletion.fence().uid()), seen.marks.uid.as_deref());
                    prop_assert_eq!(
                        Some(deletion.fence().resource_version()),
                        seen.marks.resource_version.as_deref()
                    );
                    Answer::Deleted(delete_answer(answers.next().unwrap_or(3)))
                }
                Step::Request(Request::DeleteSecret { deletion, .. }) => {
                    prop_assert!(!dry_run, "a dry run deletes nothing");
                    prop_assert!(listed_uids.contains(deletion.uid()), "unverified or unlisted Secret");
                    prop_assert!(!protected.contains(deletion.name()), "Secret of a living pod");
                    prop_assert!(deleted_secrets.insert(deletion.name().to_owned()), "deleted twice");
                    Answer::Deleted(delete_answer(answers.next().unwrap_or(3)))
                }
                Step::Request(Request::RemovePolicy) => {
                    prop_assert!(!dry_run, "a dry run removes no policy");
                    prop_assert!(pods.is_empty(), "the policy of an agent with a listed pod");
                    prop_assert_eq!(deleted_secrets.len(), secrets.len(), "a Secret is left");
                    prop_assert!(!removed_policy, "removed twice");
                    removed_policy = true;
                    Answer::PolicyRemoved(Ok(Some("the-policy".to_owned())))
                }
                other => panic!("a request this machine never makes: {other:?}"),
            };
        }
        let finished = finished.expect("the pass ends");
        if list_fails {
            prop_assert!(finished.is_err(), "a failed list ends the pass with its error");
        }
        if let Ok(report) = &finished {
            prop_assert_eq!(report.dry_run, dry_run);
            // An emptying pass removes the policy, and only then.
            prop_assert_eq!(removed_policy, report.agent_emptied);
            prop_assert_eq!(
                report.network_policy.is_some(),
                report.agent_emptied,
                "the removed policy is reported"
            );
            for name in &report.secrets {
                prop_assert!(!protected.contains(name));
            }
        }
        // Nothing after the end: the machine repeats its result.
        let again = machine.step(Duration::ZERO, Answer::Start);
        prop_assert_eq!(again, Step::Done(finished));
    }
}
