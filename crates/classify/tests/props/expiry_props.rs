//! Property tests of the expiry machines (deploy.md § Expiry): arbitrary listings, clocks and
//! answers are fed to `RenewMachine` and `ExpireMachine`, and for every sequence the safety
//! rules hold — a renew write only right after an observation, carrying that observation's
//! `resourceVersion` and the observation's server clock plus the TTL (never a version it has
//! not seen); an expired-pod delete only with the fence of the listing that showed the pod ours
//! and expired on that listing's server clock; no Secret delete before the pod's disappearance
//! was seen; nothing but the listing in a dry run; nothing after the end. Pure: a simulated
//! clock, no I/O.

use apiary_classify::binding::Owner;
use apiary_classify::grace::GracePeriod;
use std::time::Duration;

use apiary_classify::answer::DeleteAnswer;
use apiary_classify::expire::{ExpireMachine, ExpireSpec};
use apiary_classify::expiry::{expiry_of, format_instant};
use apiary_classify::facts::{ContainerState, ObjectMarks, ObservedPod, ObservedSecret, PodFacts};
use apiary_classify::failure::RequestFailure;
use apiary_classify::renew::{RenewMachine, RenewSpec};
use apiary_classify::request::{Answer, Listing, Machine as _, Request, Step, WriteAnswer};
use apiary_classify::verify::verify_pod;
use proptest::prelude::*;

use crate::common::{AGENT_ID, Choices, OTHER_ID, POD};

/// Every request takes this long on the simulated clock.
const LATENCY: Duration = Duration::from_millis(700);
const TTL: u64 = 3_600;
const BASE: i64 = 1_785_643_200;

fn pod(c: &mut Choices) -> ObservedPod {
    let own = c.pick(8) != 0;
    let marks = ObjectMarks {
        name: Some(if c.pick(10) == 0 { "other" } else { POD }.into()),
        uid: Some(format!("u{}", c.pick(3))),
        resource_version: (c.pick(10) != 0).then(|| format!("{}", c.pick(50))),
        managed_by: Some("apiary".into()),
        binding_version: Some("1".into()),
        agent_id: Some(if own { AGENT_ID } else { OTHER_ID }.into()),
        deletion_marked: c.pick(5) == 0,
        expires_at: match c.pick(4) {
            0 => None,
            1 => Some("garbage".into()),
            _ => Some(format_instant(BASE + i64::from(c.pick(20)) - 10)),
        },
        ..ObjectMarks::default()
    };
    let agent = match c.pick(4) {
        0 => ContainerState::Terminated {
            exit_code: 1,
            reason: None,
        },
        1 => ContainerState::Waiting {
            reason: Some("ContainerCreating".into()),
            message: None,
        },
        _ => ContainerState::Running,
    };
    ObservedPod {
        marks,
        facts: PodFacts {
            phase: Some("Running".into()),
            agent: Some(agent),
            env_from_secret: Some(format!("s{}", c.pick(3))),
            ..PodFacts::default()
        },
    }
}

fn secret(c: &mut Choices) -> ObservedSecret {
    ObservedSecret {
        marks: ObjectMarks {
            name: Some(format!("s{}", c.pick(3))),
            uid: Some(format!("su{}", c.pick(3))),
            managed_by: Some("apiary".into()),
            binding_version: Some("1".into()),
            agent_id: Some(if c.pick(6) == 0 { OTHER_ID } else { AGENT_ID }.into()),
            ..ObjectMarks::default()
        },
    }
}

fn pods(c: &mut Choices) -> Vec<ObservedPod> {
    (0..c.pick(3)).map(|_| pod(c)).collect()
}

fn clock(c: &mut Choices) -> Option<i64> {
    (c.pick(6) != 0).then(|| BASE + i64::from(c.pick(20)) - 10)
}

fn failure() -> RequestFailure {
    RequestFailure::api(500, "InternalError", "boom")
}

fn delete_answer(c: &mut Choices) -> Result<DeleteAnswer, RequestFailure> {
    match c.pick(6) {
        0 => Ok(DeleteAnswer::NotFound),
        1 => Ok(DeleteAnswer::PreconditionFailed),
        2 => Err(failure()),
        _ => Ok(DeleteAnswer::Accepted),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every renew write follows an observation and carries that observation's resourceVersion
    /// of the verified own pod and its server clock + TTL; nothing follows the end.
    #[test]
    fn renew_writes_only_what_it_just_observed(values in prop::collection::vec(any::<u16>(), 1..64)) {
        let mut c = Choices::new(values);
        let mut m = RenewMachine::new(RenewSpec {
            pod_name: POD.into(),
            owner: Owner::apiary(AGENT_ID),
            ttl_secs: TTL,
            deadline: Duration::from_secs(20),
            backoff: Duration::from_millis(300),
        });
        let mut now = Duration::ZERO;
        let mut event = Answer::Start;
        let mut last: Option<Listing> = None;
        for _ in 0..200 {
            let effect = m.step(now, event);
            now += LATENCY;
            event = match effect {
                Step::Done(_) => {
                    let again = m.step(now, Answer::Waited);
                    prop_assert!(matches!(again, Step::Done(_)));
                    return Ok(());
                }
                Step::Request(Request::List { secrets: false, .. }) => {
                    if c.pick(12) == 0 {
                        last = None;
                        Answer::Listed(Err(failure()))
                    } else {
                        let listing = Listing { pods: pods(&mut c), server_now: clock(&mut c), ..Listing::default() };
                        last = Some(listing.clone());
                        Answer::Listed(Ok(listing))
                    }
                }
                Step::Request(Request::WriteExpiry(write)) => {
                    let listing = last.take();
                    prop_assert!(listing.is_some(), "a write without an observation just before it");
                    let listing = listing.unwrap_or_default();
                    let own = listing
                        .pods
                        .iter()
                        .find(|p| p.marks.name.as_deref() == Some(POD))
                        .and_then(|p| verify_pod(p, &Owner::apiary(AGENT_ID)));
                    prop_assert!(own.is_some(), "a write of a pod not verified as ours");
                    let own = own.expect("checked");
                    prop_assert!(!own.deletion_marked());
                    prop_assert_eq!(write.resource_version(), own.fence().resource_version());
                    let server_now = listing.server_now;
                    prop_assert!(server_now.is_some(), "a write without a server clock");
                    prop_assert_eq!(Some(write.expires_at()), server_now.map(|n| n + TTL as i64));
                    Answer::Written(match c.pick(5) {
                        0 => Ok(WriteAnswer::Written),
                        1 => Ok(WriteAnswer::NotFound),
                        2 => Err(failure()),
                        _ => Ok(WriteAnswer::Conflict),
                    })
                }
                Step::Request(Request::Sleep(max)) => {
                    prop_assert!(!max.is_zero());
                    last = None;
                    now += max;
                    Answer::Waited
                }
                other => panic!("a request this machine never makes: {other:?}"),
            };
        }
        prop_assert!(false, "the renew did not end within 200 steps");
    }

    /// An expired-pod delete carries the fence of the listing that showed the own pod expired on
    /// its server clock; Secret deletes come only after the disappearance was seen (or the pod
    /// was already gone); a dry run performs nothing after the listing.
    #[test]
    fn collection_is_fenced_and_ordered(values in prop::collection::vec(any::<u16>(), 1..64), dry_run in any::<bool>()) {
        let mut c = Choices::new(values);
        let mut m = ExpireMachine::new(ExpireSpec {
            pod_name: POD.into(),
            owner: Owner::apiary(AGENT_ID),
            dry_run,
            deadline: Duration::from_secs(30),
            poll: Duration::from_secs(2),
            grace: GracePeriod::from_seconds(u64::from(dry_run) + 4),
        });
        let mut now = Duration::ZERO;
        let mut event = Answer::Start;
        let mut last: Option<Listing> = None;
        let mut deleted_uid: Option<String> = None;
        let mut gone_seen = false;
        for _ in 0..300 {
            let effect = m.step(now, event);
            now += LATENCY;
            if dry_run {
                let reads_only = matches!(
                    effect,
                    Step::Request(Request::List { secrets: false, .. }) | Step::Done(_)
                );
                prop_assert!(reads_only);
            }
            event = match effect {
                Step::Done(_) => return Ok(()),
                Step::Request(Request::List { .. }) => {
                    if c.pick(15) == 0 {
                        Answer::Listed(Err(failure()))
                    } else {
                        let listing = Listing {
                            pods: pods(&mut c),
                            secrets: (0..c.pick(3)).map(|_| secret(&mut c)).collect(),
                            server_now: clock(&mut c),
                        };
                        last = Some(listing.clone());
                        Answer::Listed(Ok(listing))
                    }
                }
                Step::Request(Request::DeletePod { deletion, .. }) => {
                    prop_assert_eq!(deletion.grace(), GracePeriod::from_seconds(u64::from(dry_run) + 4), "the delete carries the spec's grace");
                    let listing = last.take().unwrap_or_default();
                    let own = listing
                        .pods
                        .iter()
                        .find(|p| p.marks.name.as_deref() == Some(POD));
                    prop_assert!(own.is_some());
                    let own = own.expect("checked");
                    let verified = verify_pod(own, &Owner::apiary(AGENT_ID));
                    prop_assert!(verified.is_some(), "an unverified pod deleted");
                    let verified = verified.expect("checked");
                    prop_assert_eq!(deletion.fence(), verified.fence());
                    let expiry = expiry_of(&own.marks);
                    prop_assert!(matches!((expiry, listing.server_now), (Some(e), Some(n)) if n >= e));
                    deleted_uid = Some(deletion.fence().uid().to_owned());
                    gone_seen = false;
                    let answer = delete_answer(&mut c);
                    if answer == Ok(DeleteAnswer::NotFound) {
                        gone_seen = true;
                    }
                    Answer::Deleted(answer)
                }
                Step::Request(Request::Wait { max, .. }) => {
                    prop_assert!(!max.is_zero());
                    now += max;
                    Answer::Waited
                }
                Step::Request(Request::GetPod { .. }) => match c.pick(5) {
                    0 => {
                        gone_seen = true;
                        Answer::PodRead(Ok(None))
                    }
                    1 => Answer::PodRead(Err(failure())),
                    _ => {
                        let p = pod(&mut c);
                        if p.marks.uid != deleted_uid {
                            gone_seen = true;
                        }
                        Answer::PodRead(Ok(Some(p)))
                    }
                },
                Step::Request(Request::DeleteSecret { deletion, .. }) => {
                    prop_assert!(gone_seen, "a Secret deleted before its pod was seen gone");
                    let listing = last.clone().unwrap_or_default();
                    prop_assert!(!listing.pods.iter().any(|p| p.facts.env_from_secret.as_deref() == Some(deletion.name())),
                        "a Secret a listed pod references");
                    Answer::Deleted(delete_answer(&mut c))
                }
                other => panic!("a request this machine never makes: {other:?}"),
            };
        }
        prop_assert!(false, "the collection did not end within 300 steps");
    }
}
