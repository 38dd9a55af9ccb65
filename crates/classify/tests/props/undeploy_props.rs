//! Property tests of the undeploy machine (deploy.md § undeploy): arbitrary sequences of reads,
//! delete answers and listings are fed to `UndeployMachine`, and for every sequence the safety
//! rules hold — no pod delete without the fence of the verified observation just made, no Secret
//! delete while a listed pod references it (or of an unverified one), nothing at all after a
//! foreign read, and no read or wait begun after the deadline, so it is overrun by at most the
//! read in flight and the delete it authorised (the listing and the Secret deletes of a finite
//! plan then all run, so no plan is left half-done by the clock). Pure: a simulated clock, no I/O.

use apiary_classify::binding::Owner;
use apiary_classify::grace::GracePeriod;
use std::time::Duration;

use apiary_classify::answer::DeleteAnswer;
use apiary_classify::facts::{ContainerState, ObjectMarks, ObservedPod, ObservedSecret, PodFacts};
use apiary_classify::failure::RequestFailure;
use apiary_classify::request::{Answer, Listing, Machine as _, Request, Step};
use apiary_classify::undeploy::{UndeployMachine, UndeploySpec};
use apiary_classify::verify::verify_pod;
use proptest::prelude::*;

use crate::common::{AGENT_ID, Choices, OTHER_ID, POD};

/// Every request takes this long on the simulated clock.
const LATENCY: Duration = Duration::from_millis(700);

fn marks(name: &str, uid: String, rv: Option<String>, own: bool) -> ObjectMarks {
    ObjectMarks {
        name: Some(name.to_owned()),
        uid: Some(uid),
        resource_version: rv,
        managed_by: Some("apiary".into()),
        binding_version: Some("1".into()),
        agent_id: Some(if own { AGENT_ID } else { OTHER_ID }.into()),
        ..ObjectMarks::default()
    }
}

fn pod(c: &mut Choices) -> ObservedPod {
    let own = c.pick(8) != 0;
    let rv = (c.pick(10) != 0).then(|| format!("{}", c.pick(50)));
    let mut marks = marks(POD, format!("u{}", c.pick(3)), rv, own);
    marks.deletion_marked = c.pick(4) == 0;
    ObservedPod {
        marks,
        facts: PodFacts {
            phase: Some("Running".into()),
            agent: Some(ContainerState::Running),
            env_from_secret: Some(format!("s{}", c.pick(4))),
            ..PodFacts::default()
        },
    }
}

fn answer(c: &mut Choices) -> Result<DeleteAnswer, RequestFailure> {
    match c.pick(6) {
        0 => Ok(DeleteAnswer::NotFound),
        1 => Ok(DeleteAnswer::PreconditionFailed),
        2 => Err(RequestFailure::api(500, "InternalError", "boom")),
        _ => Ok(DeleteAnswer::Accepted),
    }
}

fn run(
    values: Vec<u16>,
    wait: bool,
    deadline_secs: u64,
    delete_workspace: bool,
) -> Result<(), TestCaseError> {
    let deadline = Duration::from_secs(deadline_secs);
    let mut machine = UndeployMachine::new(UndeploySpec {
        pod_name: POD.into(),
        owner: Owner::apiary(AGENT_ID),
        wait,
        deadline,
        poll: Duration::from_secs(2),
        delete_workspace,
        grace: GracePeriod::from_seconds(deadline_secs % 3),
    });
    let mut c = Choices::new(values);
    let mut policy_removed = false;
    let mut settled = false;
    let start = Duration::from_secs(77);
    let mut now = start;
    let mut last_read: Option<ObservedPod> = None;
    let mut referenced: Vec<String> = Vec::new();
    let mut listed_own: Vec<String> = Vec::new();
    let mut foreign_seen = false;
    let mut cleanup_requests = 0u32;
    let mut event = Answer::Start;
    for _ in 0..5_000 {
        let effect = machine.step(now, event);
        let deadline_passed = now.saturating_sub(start) >= deadline;
        event = match effect {
            Step::Done(_) => {
                // The read in flight and the delete it authorised, never a wait past it; the
                // cleanup (list + planned deletes) is bounded by its plan, not by the clock.
                prop_assert!(
                    now.saturating_sub(start) <= deadline + LATENCY * (2 + cleanup_requests)
                );
                return Ok(());
            }
            _ if foreign_seen => {
                return Err(TestCaseError::fail("an effect after a foreign read"));
            }
            Step::Request(Request::GetPod { name, .. }) => {
                prop_assert_eq!(name, POD);
                prop_assert!(!deadline_passed, "a read started after the deadline");
                now += LATENCY;
                let read = match c.pick(7) {
                    0 => Err(RequestFailure::transport("reset")),
                    1 | 2 => Ok(None),
                    _ => Ok(Some(pod(&mut c))),
                };
                last_read = read.clone().ok().flatten();
                // A foreign read at the top ends the operation (checked when it finishes); in
                // the disappearance wait it is a replacement and the Secrets step follows.
                foreign_seen = false;
                Answer::PodRead(read)
            }
            Step::Request(Request::DeletePod { deletion, .. }) => {
                prop_assert_eq!(
                    deletion.grace(),
                    GracePeriod::from_seconds(deadline_secs % 3),
                    "the delete carries the spec's grace"
                );
                let observed = last_read.as_ref().expect("a delete follows a read");
                prop_assert!(
                    verify_pod(observed, &Owner::apiary(AGENT_ID)).is_some(),
                    "unverified delete"
                );
                prop_assert!(!observed.marks.deletion_marked, "delete of a dying pod");
                prop_assert_eq!(Some(deletion.fence().uid()), observed.marks.uid.as_deref());
                prop_assert_eq!(
                    Some(deletion.fence().resource_version()),
                    observed.marks.resource_version.as_deref()
                );
                now += LATENCY;
                Answer::Deleted(answer(&mut c))
            }
            Step::Request(Request::Wait { max, .. }) => {
                prop_assert!(!max.is_zero());
                prop_assert!(
                    now.saturating_sub(start) + max <= deadline,
                    "a wait past it"
                );
                now += max;
                Answer::Waited
            }
            Step::Request(Request::List { secrets: true, .. }) => {
                cleanup_requests += 1;
                now += LATENCY;
                if c.pick(8) == 0 {
                    Answer::Listed(Err(RequestFailure::api(403, "Forbidden", "no")))
                } else {
                    let pods: Vec<ObservedPod> = (0..c.pick(3)).map(|_| pod(&mut c)).collect();
                    referenced = pods
                        .iter()
                        .filter_map(|p| p.facts.env_from_secret.clone())
                        .collect();
                    let secrets: Vec<ObservedSecret> = (0..4)
                        .map(|i| ObservedSecret {
                            marks: marks(&format!("s{i}"), format!("su{i}"), None, i != 3),
                        })
                        .collect();
                    listed_own = (0..3).map(|i| format!("s{i}")).collect();
                    Answer::Listed(Ok(Listing {
                        pods,
                        secrets,
                        ..Listing::default()
                    }))
                }
            }
            Step::Request(Request::DeleteSecret { deletion, .. }) => {
                let name = deletion.name().to_owned();
                prop_assert!(!referenced.contains(&name), "deleted referenced {}", name);
                prop_assert!(listed_own.contains(&name), "deleted unverified {}", name);
                cleanup_requests += 1;
                now += LATENCY;
                Answer::Deleted(answer(&mut c))
            }
            Step::Request(Request::RemovePolicy) => {
                prop_assert!(!policy_removed && !settled, "the policy step out of order");
                policy_removed = true;
                cleanup_requests += 1;
                now += LATENCY;
                Answer::PolicyRemoved(match c.pick(4) {
                    0 => Err(RequestFailure::api(500, "InternalError", "boom")),
                    1 => Ok(None),
                    _ => Ok(Some(POD.to_owned())),
                })
            }
            Step::Request(Request::SettleWorkspace { delete }) => {
                prop_assert!(!settled, "the claim settled twice");
                if delete {
                    prop_assert!(
                        delete_workspace,
                        "a claim deleted without --delete-workspace"
                    );
                    // Deleted only once no pod of the agent can run: the same condition as the
                    // policy's removal, which comes first.
                    prop_assert!(policy_removed, "a claim deleted while its pod may run");
                }
                settled = true;
                cleanup_requests += 1;
                now += LATENCY;
                Answer::WorkspaceSettled(match c.pick(4) {
                    0 => Err(RequestFailure::api(500, "InternalError", "boom")),
                    1 => Ok(None),
                    _ => Ok(Some(apiary_classify::workspace::ClaimFate {
                        name: format!("{POD}-workspace"),
                        deleted: delete,
                    })),
                })
            }
            other => panic!("a request this machine never makes: {other:?}"),
        };
    }
    Err(TestCaseError::fail("the machine did not finish"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The safety rules of undeploy hold over arbitrary answer sequences.
    #[test]
    fn undeploy_is_safe_over_arbitrary_answers(
        values in proptest::collection::vec(any::<u16>(), 1..64),
        wait in any::<bool>(),
        deadline_secs in 0u64..40,
        delete_workspace in any::<bool>(),
    ) {
        run(values, wait, deadline_secs, delete_workspace)?;
    }
}
