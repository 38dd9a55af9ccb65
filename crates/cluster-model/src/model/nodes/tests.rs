//! Tests of the model's nodes: registration, the scriptable `Ready` condition (its transition
//! time moves only with the status) and a node that is gone. Pure; no I/O.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeCondition};

use crate::error::{Kind, ModelError};
use crate::model::{ClusterModel, NodeReady};

fn ready_of(node: &Node) -> Option<&NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

/// A registered node is read back with its `Ready` condition; it is cluster-scoped.
#[test]
fn a_registered_node_reads_back_with_its_ready_condition() {
    let mut m = ClusterModel::default();
    let before = m.resource_version();
    let created = m
        .create_node(
            "node-7",
            Some(NodeReady::with("False", Some("KubeletNotReady"))),
        )
        .expect("created");
    assert_eq!(m.resource_version(), before + 1, "a create takes one rv");
    assert!(created.metadata.uid.is_some());
    assert_eq!(created.metadata.namespace, None);
    let read = m.get_node("node-7").expect("read");
    let ready = ready_of(&read).expect("a Ready condition");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("KubeletNotReady"));
    assert_eq!(
        m.create_node("node-7", None),
        Err(ModelError::AlreadyExists {
            kind: Kind::Node,
            name: "node-7".into()
        })
    );
}

/// A node without a scripted condition reports none.
#[test]
fn a_node_may_report_no_conditions() {
    let mut m = ClusterModel::default();
    m.create_node("bare", None).expect("created");
    assert!(ready_of(&m.get_node("bare").expect("read")).is_none());
}

/// An absent node answers the apiserver's 404 `nodes "x" not found`.
#[test]
fn an_absent_node_is_not_found() {
    let m = ClusterModel::default();
    let error = m.get_node("node-1").expect_err("absent");
    assert_eq!((error.code(), error.reason()), (404, "NotFound"));
    assert_eq!(error.to_string(), "nodes \"node-1\" not found");
}

/// Setting the condition takes a new rv; the transition time moves only when the status does.
#[test]
fn ready_changes_move_the_transition_time_only_with_the_status() {
    let mut m = ClusterModel::default();
    m.create_node("n", Some(NodeReady::ready()))
        .expect("created");
    let first = ready_of(&m.get_node("n").expect("read"))
        .and_then(|c| c.last_transition_time.clone())
        .expect("a transition time");
    m.advance(Duration::from_secs(30));
    let rv = m.resource_version();
    let same = m.set_node_ready("n", NodeReady::ready()).expect("set");
    assert_eq!(m.resource_version(), rv + 1);
    assert_eq!(
        same.metadata.resource_version.as_deref(),
        Some((rv + 1).to_string().as_str())
    );
    assert_eq!(
        ready_of(&same).and_then(|c| c.last_transition_time.clone()),
        Some(first.clone())
    );
    m.advance(Duration::from_secs(30));
    let changed = m
        .set_node_ready("n", NodeReady::with("Unknown", Some("NodeStatusUnknown")))
        .expect("set");
    let ready = ready_of(&changed).expect("Ready");
    assert_eq!(ready.status, "Unknown");
    assert_ne!(ready.last_transition_time, Some(first));
    let conditions = changed
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default();
    assert_eq!(conditions.len(), 1, "the condition is replaced, not added");
}

/// A removed node is gone; setting the condition of an absent node is `NotFound`.
#[test]
fn a_removed_node_is_gone() {
    let mut m = ClusterModel::default();
    m.create_node("n", Some(NodeReady::ready()))
        .expect("created");
    m.remove_node("n").expect("removed");
    assert!(m.get_node("n").is_err());
    assert!(m.set_node_ready("n", NodeReady::ready()).is_err());
    assert!(m.remove_node("n").is_err());
}
