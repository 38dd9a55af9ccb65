//! Nodes in the model (apiary reads the node of a pod that will not go away: deploy.md § When a pod
//! will not go away): cluster-scoped `v1/Node` objects with a scriptable `Ready` condition —
//! create, get, set the condition, remove. The model's kubelet places pods on `node-1` … `node-3`
//! without holding those nodes: a node exists only when a test registers it, so a read of an
//! unregistered one answers 404 `NotFound`, as for a node deleted from a real cluster.
//!
//! Layer: part of the pure model; performs no I/O and reads no clock (a changed condition's
//! `lastTransitionTime` is the model clock). Nothing in apiary watches nodes, so no watch events.

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use super::ClusterModel;
use super::node_ready::{NodeReady, set_ready};
use super::store::key;
use crate::error::ModelError;

impl ClusterModel {
    /// Register the node `name` with `ready` as its `Ready` condition (`None`: the node reports
    /// no conditions at all). Stamped like every object; no watch event.
    ///
    /// # Errors
    /// `Invalid` without a name; `AlreadyExists` when the node exists.
    pub fn create_node(
        &mut self,
        name: &str,
        ready: Option<NodeReady>,
    ) -> Result<Node, ModelError> {
        let mut node = Node {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..Node::default()
        };
        if let Some(ready) = ready {
            set_ready(&mut node, ready, Time(self.now));
        }
        self.create_object(None, node, |_, _| Ok(()))
    }

    /// Read a node.
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn get_node(&self, name: &str) -> Result<Node, ModelError> {
        self.get_object("", name)
    }

    /// Set the node's `Ready` condition (the transition time moves only when the status
    /// changes, as a kubelet or the node controller writes it); the change takes a new
    /// resourceVersion.
    ///
    /// # Errors
    /// `NotFound` when the node does not exist.
    pub fn set_node_ready(&mut self, name: &str, ready: NodeReady) -> Result<Node, ModelError> {
        let mut node = self.get_node(name)?;
        set_ready(&mut node, ready, Time(self.now));
        node.metadata.resource_version = Some(self.next_rv().to_string());
        self.nodes.put(key("", name), node.clone());
        Ok(node)
    }

    /// Remove a node at once (a node deleted from the cluster while pods were bound to it).
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn remove_node(&mut self, name: &str) -> Result<Node, ModelError> {
        let existing = self.get_node(name)?;
        Ok(self
            .remove_object::<Node>(&key("", name))
            .unwrap_or(existing))
    }
}

#[cfg(test)]
mod tests;
