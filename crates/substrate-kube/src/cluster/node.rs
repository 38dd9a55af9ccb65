//! `Cluster`'s node read (deploy.md § When a pod will not go away): one quorum GET of
//! `/api/v1/nodes/{name}` (cluster scoped) through the exchange layer and its retry window, for the
//! explanation of a pod that outlives its grace period. The answer is mapped by
//! `mapping::node_facts`; nothing here decides.
//!
//! Layer: the imperative shell. It never fails the operation that asked: a refusal or a lost
//! answer becomes `NodeFacts` (logged at debug level, never above, because reading nodes is
//! optional), and it never puts a response body into a log line.

use apiary_classify::failure::Operation;
use apiary_classify::stuck::NodeFacts;
use k8s_openapi::api::core::v1::Node;
use kube::Resource;
use kube::core::Request;
use kube::core::params::GetParams;

use super::{Call, Cluster, decode, mapping};

impl Cluster {
    /// Read the node `name` and say what it shows.
    pub(super) async fn node_facts(&self, name: &str) -> NodeFacts {
        let call = Call::new(Operation::GetNode, name);
        let request = Request::new(Node::url_path(&(), None)).get(name, &GetParams::default());
        let answer = self
            .exchange(&call, request)
            .await
            .result
            .and_then(|reply| decode::<Node>(&reply.body, "a node"));
        let facts = mapping::node_facts(answer.as_ref());
        if let Err(failure) = &answer {
            let error = call.error(failure.clone());
            tracing::debug!(node = name, %error, "the node read said nothing about the node");
        }
        facts
    }
}
