//! The fake's nodes (deploy.md § When a pod will not go away): registering a node with a scriptable
//! `Ready` condition on the model, the node-read denial knob (RBAC without `get` on `nodes`), and
//! the answer of [`Substrate::read_node`](crate::Substrate::read_node), which is logged as a
//! [`Call::GetNode`] and takes a scripted [`Step`] like every request. Test-only; no I/O.

use apiary_classify::failure::Operation;
use apiary_classify::stuck::NodeFacts;
use apiary_cluster_model::{ModelError, NodeReady};
use k8s_openapi::api::core::v1::Node;

use crate::fake::call::Call;
use crate::fake::cluster::{FakeCluster, lock};
use crate::fake::errors::{api_error, model_error};
use crate::fake::step::Step;
use crate::observe::node_facts;
use apiary_classify::failure::RequestFailure;

impl FakeCluster {
    /// Register the node `name` with `ready` as its `Ready` condition (`None`: no conditions).
    /// Not logged.
    ///
    /// # Errors
    /// `AlreadyExists` when the node exists.
    pub fn add_node(&self, name: &str, ready: Option<NodeReady>) -> Result<Node, ModelError> {
        self.model().create_node(name, ready)
    }

    /// Script the `Ready` condition of the node `name`. Not logged.
    ///
    /// # Errors
    /// `NotFound` when the node does not exist.
    pub fn set_node_ready(&self, name: &str, ready: NodeReady) -> Result<Node, ModelError> {
        self.model().set_node_ready(name, ready)
    }

    /// Deny (`true`) or allow (`false`) every node read from now on, as RBAC without `get` on
    /// `nodes` does: a denied read answers 403 `Forbidden` at the cluster scope. Allowed by
    /// default.
    pub fn deny_node_reads(&self, denied: bool) {
        lock(&self.state).node_reads_denied = denied;
    }

    /// The 403 `Forbidden` an RBAC authorizer answers a read of the node `name`.
    pub fn node_read_forbidden(&self, name: &str) -> RequestFailure {
        api_error(
            Operation::GetNode,
            name,
            403,
            "Forbidden",
            &format!(
                "nodes \"{name}\" is forbidden: User \"apiary-test\" cannot get resource \
                 \"nodes\" in API group \"\" at the cluster scope"
            ),
        )
    }

    /// [`Substrate::read_node`](crate::Substrate::read_node): log the call, take its step, and
    /// map the model's answer (or the denial, or the scripted failure) onto [`NodeFacts`].
    pub(crate) fn serve_node_read(&self, name: &str) -> NodeFacts {
        let step = self.begin(Call::GetNode {
            name: name.to_owned(),
        });
        let denied = lock(&self.state).node_reads_denied;
        let answer = match step {
            Step::Fail(error) | Step::LandThenFail(error) => Err(error),
            _ if denied => Err(self.node_read_forbidden(name)),
            _ => self
                .model()
                .get_node(name)
                .map_err(|e| model_error(Operation::GetNode, name, &e)),
        };
        match answer {
            Ok(node) => node_facts(&node),
            Err(error) => {
                tracing::debug!(node = name, error = %error, "the node read said nothing");
                error
                    .reason()
                    .map_or(NodeFacts::Unknown, NodeFacts::refused)
            }
        }
    }
}
