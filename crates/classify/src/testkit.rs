//! Test builders shared by this crate's unit tests: plain facts for an own pod of one agent, in
//! every startup state. Test-only; builds values, decides nothing.

use crate::binding::Owner;
use crate::facts::{
    ConditionFacts, ContainerState, ObjectMarks, ObservedPod, ObservedSecret, PodFacts,
};
use crate::verify::{SettledPod, verify_pod};

/// The agent id of the agent under test (`Research Bot #1`).
pub const AGENT_ID: &str = "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98";
/// Another agent's id.
pub const OTHER_AGENT_ID: &str = "f9b32d5e68dde69e024b9bb5268f0b7a00000000000000000000000000000000";
/// The pod name of the agent under test.
pub const POD: &str = "apiary-research-bot-1-72bea12366a3";
/// The desired create intent.
pub const INTENT: &str = "26b2e7d49baf628b5f55de9996ac144c27fac0e1c85766ed2f3db5e136202c43";
/// A different create intent.
pub const OTHER_INTENT: &str = "0e5e7c53ccd0a7e5b5ecf45d93ab7f7d8465058032e1dfbaeaa900d1a3ccf0d3";
/// The image of the agent under test.
pub const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// Own marks for `name` with `uid`/`rv` and the desired intent.
pub fn marks(name: &str, uid: &str, rv: &str) -> ObjectMarks {
    ObjectMarks {
        name: Some(name.to_owned()),
        uid: Some(uid.to_owned()),
        resource_version: Some(rv.to_owned()),
        managed_by: Some("apiary".to_owned()),
        binding_version: Some("1".to_owned()),
        agent_id: Some(AGENT_ID.to_owned()),
        create_intent: Some(INTENT.to_owned()),
        deletion_marked: false,
        created_at_unix: Some(1_000),
        expires_at: None,
        intent_settings: None,
    }
}

/// `agent` running.
pub fn running() -> Option<ContainerState> {
    Some(ContainerState::Running)
}

/// `agent` terminated.
pub fn terminated(code: i32, reason: Option<&str>) -> Option<ContainerState> {
    Some(ContainerState::Terminated {
        exit_code: code,
        reason: reason.map(str::to_owned),
    })
}

/// `agent` waiting.
pub fn waiting(reason: Option<&str>, message: Option<&str>) -> Option<ContainerState> {
    Some(ContainerState::Waiting {
        reason: reason.map(str::to_owned),
        message: message.map(str::to_owned),
    })
}

/// Pod facts with the given agent state, phase `Running` and this pod's Secret reference.
pub fn facts(agent: Option<ContainerState>) -> PodFacts {
    PodFacts {
        phase: Some("Running".to_owned()),
        agent,
        conditions: Vec::new(),
        env_from_secret: Some(format!("{POD}-0000abcd")),
        image: Some(IMAGE.to_owned()),
        workspace_claim: None,
    }
}

/// An own pod (uid `u1`, rv `100`) in the given agent state.
pub fn own_pod(agent: Option<ContainerState>) -> ObservedPod {
    ObservedPod {
        marks: marks(POD, "u1", "100"),
        facts: facts(agent),
    }
}

/// An own pod settled, a pending Secret check answered: the pod's own Secret exists, a
/// referenced one the kubelet's message names does not (test-only).
pub fn settled(pod: &ObservedPod) -> SettledPod {
    let referenced_missing = crate::action::missing_reference(&pod.facts)
        .is_some_and(|named| pod.facts.env_from_secret.as_deref() != Some(named.as_str()));
    verify_pod(pod, &Owner::apiary(AGENT_ID))
        .expect("test pod verifies")
        .settle(Some(!referenced_missing))
        .expect("settles with an answer")
}

/// An own Secret named `name`, uid `s-<name>`, created at `created`.
pub fn own_secret(name: &str, created: Option<i64>) -> ObservedSecret {
    ObservedSecret {
        marks: ObjectMarks {
            name: Some(name.to_owned()),
            uid: Some(format!("s-{name}")),
            resource_version: Some("1".to_owned()),
            managed_by: Some("apiary".to_owned()),
            binding_version: Some("1".to_owned()),
            agent_id: Some(AGENT_ID.to_owned()),
            create_intent: None,
            deletion_marked: false,
            created_at_unix: created,
            expires_at: None,
            intent_settings: None,
        },
    }
}

/// A `False` pod condition.
pub fn false_condition(kind: &str, reason: &str, message: &str) -> ConditionFacts {
    ConditionFacts {
        kind: kind.to_owned(),
        status: "False".to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
    }
}
