//! Property tests of the status machine (deploy.md § status) over arbitrary pods and answers:
//! it reads the pod once and at most one Secret, and only the Secret a verified pod refers to; an
//! absent or foreign pod reports no condition and no Secret and reads nothing more; a
//! deletion-marked pod of ours is `deleting`; `intent_matches` is reported exactly when a
//! configuration was given and the pod is ours, and says whether the recorded intent equals it;
//! any failed read ends the operation with that failure; nothing follows the end. Pure: no I/O.

use std::time::Duration;

use apiary_classify::action::missing_reference;
use apiary_classify::binding::Owner;
use apiary_classify::facts::{ContainerState, ObjectMarks, ObservedPod, PodFacts};
use apiary_classify::failure::RequestFailure;
use apiary_classify::request::{Answer, Machine as _, Request, Step};
use apiary_classify::status::{StatusMachine, StatusSpec, StatusState};
use apiary_classify::verify::verify_pod;
use proptest::prelude::*;

const AGENT_ID: &str = "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98";
const POD: &str = "apiary-research-bot-1-72bea12366a3";
const INTENTS: [&str; 2] = ["intent-a", "intent-b"];

/// The shape of the observed pod: ours or not, deletion-marked or not, its agent container's
/// state (running, crashed, waiting on its Secret, pulling, unknown), Secret and recorded intent.
fn pod_strategy() -> impl Strategy<Value = Option<ObservedPod>> {
    prop::option::of(
        (
            any::<bool>(),
            any::<bool>(),
            0u8..5,
            prop::option::of(0usize..2),
            prop::option::of(0usize..2),
        )
            .prop_map(|(own, marked, state, secret, intent)| ObservedPod {
                marks: ObjectMarks {
                    name: Some(POD.into()),
                    uid: Some("u1".into()),
                    resource_version: Some("7".into()),
                    managed_by: Some("apiary".into()),
                    binding_version: Some("1".into()),
                    agent_id: Some(if own { AGENT_ID } else { "other" }.into()),
                    create_intent: intent.map(|i| INTENTS[i].to_owned()),
                    deletion_marked: marked,
                    created_at_unix: Some(0),
                    expires_at: None,
                    intent_settings: None,
                },
                facts: PodFacts {
                    phase: Some(if state == 1 { "Failed" } else { "Running" }.into()),
                    agent: match state {
                        0 => Some(ContainerState::Running),
                        1 => Some(ContainerState::Terminated {
                            exit_code: 2,
                            reason: Some("Error".into()),
                        }),
                        2 => Some(ContainerState::Waiting {
                            reason: Some("CreateContainerConfigError".into()),
                            message: Some("secret \"s0\" not found".into()),
                        }),
                        3 => Some(ContainerState::Waiting {
                            reason: Some("ImagePullBackOff".into()),
                            message: Some("pull access denied".into()),
                        }),
                        _ => None,
                    },
                    conditions: Vec::new(),
                    env_from_secret: secret.map(|s| format!("s{s}")),
                    image: Some("registry.example/agent@sha256:00".into()),
                    workspace_claim: None,
                },
            }),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every status run keeps the read-only and reporting rules.
    #[test]
    fn status_reports_by_the_rules_over_arbitrary_answers(
        observed in pod_strategy(),
        desired in prop::option::of(0usize..2),
        pod_read_fails in any::<bool>(),
        secret_answer in prop::option::of(any::<bool>()),
    ) {
        let mut machine = StatusMachine::new(StatusSpec {
            pod_name: POD.into(),
            owner: Owner::apiary(AGENT_ID),
            image: None,
            desired_intent: desired.map(|i| INTENTS[i].to_owned()),
            compare_env: desired.is_some(),
            desired_settings: desired.map(|_| "image=11".to_owned()),
            desired_claim: None,
        });
        let verified = observed.as_ref().and_then(|p| verify_pod(p, &Owner::apiary(AGENT_ID)));
        let mut event = Answer::Start;
        let mut reads = 0;
        let mut secret_checks = 0;
        let mut failed_read = false;
        let mut compared = 0;
        let mut workspace_reads = 0;
        let mut finished = None;
        for _ in 0..10 {
            event = match machine.step(Duration::ZERO, event) {
                Step::Done(result) => {
                    finished = Some(result);
                    break;
                }
                Step::Request(Request::GetPod { name, .. }) => {
                    prop_assert_eq!(name, POD);
                    reads += 1;
                    if pod_read_fails {
                        failed_read = true;
                        Answer::PodRead(Err(RequestFailure::transport("reset")))
                    } else {
                        Answer::PodRead(Ok(observed.clone()))
                    }
                }
                Step::Request(Request::SecretExists { name }) => {
                    secret_checks += 1;
                    let pod = verified.as_ref();
                    prop_assert!(pod.is_some(), "a Secret read for a pod that is not ours");
                    // The pod's own Secret, or the referenced one the kubelet's message names.
                    let referenced = pod.and_then(|p| missing_reference(p.facts()));
                    prop_assert!(
                        pod.and_then(|p| p.facts().env_from_secret.as_deref()) == Some(name.as_str())
                            || referenced.as_deref() == Some(name.as_str()),
                        "a Secret the pod does not refer to: {}", name
                    );
                    match secret_answer {
                        Some(exists) => Answer::Exists(Ok(exists)),
                        None => {
                            failed_read = true;
                            Answer::Exists(Err(RequestFailure::api(
                                503,
                                "ServiceUnavailable",
                                "busy",
                            )))
                        }
                    }
                }
                Step::Request(Request::CompareEnv { secret, .. }) => {
                    prop_assert!(desired.is_some(), "an environment compared without a configuration");
                    let own = verified.as_ref().and_then(|p| p.facts().env_from_secret.clone());
                    prop_assert_eq!(Some(secret), own, "another Secret's environment compared");
                    compared += 1;
                    Answer::EnvCompared(Ok(Some(Vec::new())))
                }
                Step::Request(Request::ReadWorkspace) => {
                    workspace_reads += 1;
                    Answer::WorkspaceRead(None)
                }
                other => panic!("a request this machine never makes: {other:?}"),
            };
        }
        let finished = finished.expect("status ends");
        prop_assert!(compared <= 1, "the environment compared twice");
        prop_assert_eq!(reads, 1);
        // The pod's own Secret once; a referenced one the kubelet names, at most once before.
        let names_reference = verified
            .as_ref()
            .and_then(|p| missing_reference(p.facts()))
            .is_some_and(|named| {
                verified.as_ref().and_then(|p| p.facts().env_from_secret.clone()) != Some(named)
            });
        prop_assert!(secret_checks <= 1 + usize::from(names_reference));
        if failed_read {
            prop_assert!(finished.is_err(), "a failed read ends status with its failure");
        } else {
            let report = finished.clone().expect("no failed read");
            prop_assert_eq!(&report.pod, POD);
            prop_assert_eq!(workspace_reads, 1, "the claim is read once, last");
            let own_present = report.secret.as_ref().is_some_and(|s| s.exists);
            prop_assert_eq!(compared, usize::from(desired.is_some() && own_present));
            match (&observed, &verified) {
                (None, _) => {
                    prop_assert_eq!(report.state, StatusState::Absent);
                    prop_assert_eq!(secret_checks, 0);
                }
                (Some(_), None) => {
                    prop_assert_eq!(report.state, StatusState::Foreign);
                    prop_assert!(report.condition.is_none(), "a foreign pod's condition shown");
                    prop_assert!(report.secret.is_none(), "a foreign pod's Secret shown");
                    prop_assert_eq!(secret_checks, 0);
                }
                (Some(pod), Some(ours)) => {
                    if pod.marks.deletion_marked {
                        prop_assert_eq!(report.state, StatusState::Deleting);
                    }
                    let refers = ours.facts().env_from_secret.clone();
                    prop_assert_eq!(report.secret.as_ref().map(|s| s.name.clone()), refers.clone());
                    if let (Some(secret), Some(exists)) = (&report.secret, secret_answer) {
                        prop_assert_eq!(secret.exists, exists);
                    }
                }
            }
            let expected_match = desired
                .zip(verified.as_ref())
                .map(|(i, pod)| pod.intent_matches(INTENTS[i]));
            prop_assert_eq!(report.intent_matches, expected_match);
            if let (Some(i), Some(pod), Some(_)) = (desired, &observed, &verified) {
                prop_assert_eq!(
                    report.intent_matches,
                    Some(pod.marks.create_intent.as_deref() == Some(INTENTS[i]))
                );
            }
        }
        prop_assert_eq!(machine.step(Duration::ZERO, Answer::Start), Step::Done(finished));
    }
}
