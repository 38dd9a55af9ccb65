//! Tests of the policy decisions (deploy.md § Egress control): keep, update with the
//! observation's fence, never touch a foreign or unfenceable policy, never reuse a deleting one.

use super::*;
use crate::testkit::{AGENT_ID, INTENT, OTHER_AGENT_ID, OTHER_INTENT, marks};

fn owner() -> Owner {
    Owner::apiary(AGENT_ID)
}

/// Ours with the desired intent: kept; with another: updated, fenced by this observation.
#[test]
fn ours_is_kept_or_updated_with_its_own_fence() {
    let policy = marks("apiary-x", "u1", "7");
    assert_eq!(policy_step(&policy, &owner(), INTENT), PolicyStep::Keep);
    match policy_step(&policy, &owner(), OTHER_INTENT) {
        PolicyStep::Update(fence) => {
            assert_eq!(fence.uid(), "u1");
            assert_eq!(fence.resource_version(), "7");
        }
        other => panic!("{other:?}"),
    }
    let mut stale = policy.clone();
    stale.create_intent = None;
    assert!(matches!(
        policy_step(&stale, &owner(), INTENT),
        PolicyStep::Update(_)
    ));
}

/// Another agent's, unmarked, or without a uid or resourceVersion: foreign, and no deletion can
/// be built for it; ours and deletion-marked: deleting (never updated).
#[test]
fn foreign_unfenceable_and_deleting_policies_are_refused() {
    let mut other = marks("apiary-x", "u1", "7");
    other.agent_id = Some(OTHER_AGENT_ID.into());
    let mut unmarked = marks("apiary-x", "u1", "7");
    unmarked.managed_by = None;
    let mut no_uid = marks("apiary-x", "", "7");
    no_uid.uid = Some(String::new());
    let mut no_rv = marks("apiary-x", "u1", "7");
    no_rv.resource_version = None;
    for foreign in [other, unmarked, no_uid, no_rv] {
        assert_eq!(
            policy_step(&foreign, &owner(), INTENT),
            PolicyStep::Foreign,
            "{foreign:?}"
        );
        assert_eq!(policy_deletion(&foreign, &owner()), None);
    }
    let mut deleting = marks("apiary-x", "u1", "7");
    deleting.deletion_marked = true;
    assert_eq!(
        policy_step(&deleting, &owner(), INTENT),
        PolicyStep::Deleting
    );
}

/// A deletion carries exactly the observed name and fence.
#[test]
fn a_deletion_carries_the_observed_fence() {
    let deletion = policy_deletion(&marks("apiary-x", "u1", "7"), &owner()).unwrap();
    assert_eq!(deletion.name(), "apiary-x");
    assert_eq!(deletion.fence().uid(), "u1");
    assert_eq!(deletion.fence().resource_version(), "7");
    let mut nameless = marks("apiary-x", "u1", "7");
    nameless.name = None;
    assert_eq!(policy_deletion(&nameless, &owner()), None);
}

/// The problems are worded for a person: what is wrong and what to do.
#[test]
fn problems_say_what_to_do() {
    assert!(PolicyProblem::Foreign.to_string().contains("remove it"));
    assert!(PolicyProblem::Deleting.to_string().contains("deploy again"));
    assert!(PolicyProblem::Conflict.to_string().contains("deploy again"));
}
