//! A node's scripted `Ready` condition ([`NodeReady`]) and how it is written into a `Node`
//! (deploy.md § When a pod will not go away).
//!
//! Layer: part of the pure model; plain data and a pure write. It knows nothing of
//! `ClusterModel`, reads no clock (the caller passes the model clock) and performs no I/O.

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The condition type a node's health is read from.
const READY: &str = "Ready";

/// A node's `Ready` condition as a test scripts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeReady {
    /// `status`: `True`, `False` or `Unknown`.
    pub status: String,
    /// `reason`, e.g. `KubeletNotReady` or `NodeStatusUnknown`.
    pub reason: Option<String>,
    /// `message`.
    pub message: Option<String>,
}

impl NodeReady {
    /// `Ready=True` with the kubelet's reason `KubeletReady`.
    pub fn ready() -> Self {
        Self {
            status: "True".to_owned(),
            reason: Some("KubeletReady".to_owned()),
            message: Some("kubelet is posting ready status".to_owned()),
        }
    }

    /// `Ready=<status>` with `reason` and no message.
    pub fn with(status: &str, reason: Option<&str>) -> Self {
        Self {
            status: status.to_owned(),
            reason: reason.map(str::to_owned),
            message: None,
        }
    }
}

/// Replace (or add) the `Ready` condition of `node`.
pub(crate) fn set_ready(node: &mut Node, ready: NodeReady, now: Time) {
    let conditions = node
        .status
        .get_or_insert_with(NodeStatus::default)
        .conditions
        .get_or_insert_with(Vec::new);
    let previous = conditions.iter().position(|c| c.type_ == READY);
    let transition = match previous.map(|i| &conditions[i]) {
        Some(old) if old.status == ready.status => old.last_transition_time.clone(),
        _ => Some(now.clone()),
    };
    let condition = NodeCondition {
        type_: READY.to_owned(),
        status: ready.status,
        reason: ready.reason,
        message: ready.message,
        last_heartbeat_time: Some(now),
        last_transition_time: transition,
    };
    match previous {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}
