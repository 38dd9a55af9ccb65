//! A downstream crate that depends only on `apiary-classify`: it describes observed pods as plain
//! facts and asks what the deploy loop should do about each, with no Kubernetes types at all.
//!
//! Proof of use, not a test of the rules (the library's own tests do that): it must compile
//! against the library as published, and it exits non-zero if an answer is not the expected one.

use apiary_classify::action::{Action, classify};
use apiary_classify::binding::Owner;
use apiary_classify::facts::{ContainerState, ObjectMarks, ObservedPod, PodFacts};
use apiary_classify::startup::StartupState;
use apiary_classify::verify::verify_pod;

const AGENT_ID: &str = "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98";
const POD: &str = "apiary-research-bot-1-72bea12366a3";

fn observed(agent: ContainerState, phase: &str) -> ObservedPod {
    ObservedPod {
        marks: ObjectMarks {
            name: Some(POD.to_owned()),
            uid: Some("0b6f".to_owned()),
            resource_version: Some("41".to_owned()),
            managed_by: Some("apiary".to_owned()),
            binding_version: Some("1".to_owned()),
            agent_id: Some(AGENT_ID.to_owned()),
            create_intent: Some("intent-a".to_owned()),
            ..Default::default()
        },
        facts: PodFacts {
            phase: Some(phase.to_owned()),
            agent: Some(agent),
            ..Default::default()
        },
    }
}

fn main() {
    // Started: the only success.
    let running = verify_pod(
        &observed(ContainerState::Running, "Running"),
        &Owner::apiary(AGENT_ID),
    )
    .expect("apiary's pod for this agent")
    .settle(None)
    .expect("a running pod needs no Secret check");
    assert_eq!(running.startup(), StartupState::Started);
    assert_eq!(
        classify(Some(&running), "intent-a"),
        Action::NoOp {
            name: POD.to_owned(),
            intent_matches: true
        }
    );

    // Terminated: replaced through a delete that carries this observation's fence.
    let exited = ContainerState::Terminated {
        exit_code: 1,
        reason: Some("Error".to_owned()),
    };
    let terminated = verify_pod(&observed(exited, "Failed"), &Owner::apiary(AGENT_ID))
        .expect("apiary's pod for this agent")
        .settle(None)
        .expect("a terminated pod needs no Secret check");
    match classify(Some(&terminated), "intent-a") {
        Action::Delete(deletion) => {
            assert_eq!(deletion.name(), POD);
            assert_eq!(deletion.fence().uid(), "0b6f");
            assert_eq!(deletion.fence().resource_version(), "41");
        }
        other => panic!("a terminated pod is replaced, got {other:?}"),
    }

    // Another agent's pod is never ours to classify.
    assert!(
        verify_pod(
            &observed(ContainerState::Running, "Running"),
            &Owner::apiary("someone-else")
        )
        .is_none()
    );
    // No pod: create one.
    assert_eq!(classify(None, "intent-a"), Action::Create);
    println!("classified: started, terminated, foreign, absent");
}
