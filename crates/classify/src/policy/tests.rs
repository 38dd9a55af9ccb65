//! Tests of the policy's own rules (deploy.md § Egress control): its fenced delete, never of a
//! foreign or unfenceable policy, and its problems' words. The sequences are `crate::object`'s,
//! tested there over this kind.

use super::*;
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, marks};

fn owner() -> Owner {
    Owner::apiary(AGENT_ID)
}

/// Another agent's, unmarked, or without a uid or resourceVersion: no deletion can be built
/// for it.
#[test]
fn foreign_and_unfenceable_policies_have_no_deletion() {
    let mut other = marks("apiary-x", "u1", "7");
    other.agent_id = Some(OTHER_AGENT_ID.into());
    let mut unmarked = marks("apiary-x", "u1", "7");
    unmarked.managed_by = None;
    let mut no_uid = marks("apiary-x", "", "7");
    no_uid.uid = Some(String::new());
    let mut no_rv = marks("apiary-x", "u1", "7");
    no_rv.resource_version = None;
    for foreign in [other, unmarked, no_uid, no_rv] {
        assert_eq!(policy_deletion(&foreign, &owner()), None, "{foreign:?}");
    }
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
