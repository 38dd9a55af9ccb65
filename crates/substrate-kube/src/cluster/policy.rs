//! `Cluster`'s NetworkPolicy requests (deploy.md § Egress control): quorum GET, create, a PUT
//! carrying the `uid` and `resourceVersion` of the observation that proved the policy apiary's,
//! and the fenced delete, at `/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies`,
//! through the exchange layer and its retry window like every request.
//!
//! Layer: the imperative shell; the answers are mapped, nothing here decides.

use apiary_classify::failure::Operation;
use apiary_classify::fence::Fence;
use apiary_classify::policy::PolicyDeletion;
use apiary_substrate::{CreateOutcome, DeleteOutcome, SubstrateError};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Resource;
use kube::core::Request;
use kube::core::params::{GetParams, PostParams};

use super::{Call, Cluster, decode, encode, fenced_delete, mapping};

/// The reason of a `409` whose precondition (here: the carried resourceVersion) did not hold.
const REASON_CONFLICT: &str = "Conflict";

impl Cluster {
    fn policies_path(&self) -> String {
        NetworkPolicy::url_path(&(), Some(&self.namespace))
    }

    pub(super) async fn policy_get(
        &self,
        name: &str,
    ) -> Result<Option<NetworkPolicy>, SubstrateError> {
        let call = Call::new(Operation::GetNetworkPolicy, self.object(name));
        let request = Request::new(self.policies_path()).get(name, &GetParams::default());
        match self.read(&call, request).await? {
            Some(reply) => decode(&reply.body, "a network policy")
                .map(Some)
                .map_err(|failure| call.error(failure)),
            None => Ok(None),
        }
    }

    pub(super) async fn policy_create(
        &self,
        policy: &NetworkPolicy,
    ) -> Result<CreateOutcome, SubstrateError> {
        let name = policy.metadata.name.as_deref().unwrap_or("<unnamed>");
        let call = Call::new(Operation::CreateNetworkPolicy, self.object(name));
        let body = encode(policy).map_err(|failure| call.error(failure))?;
        let request = Request::new(self.policies_path()).create(&PostParams::default(), body);
        self.decide(
            &call,
            request,
            CreateOutcome::Created,
            mapping::create_outcome,
        )
        .await
    }

    pub(super) async fn policy_update(
        &self,
        policy: &NetworkPolicy,
        fence: &Fence,
    ) -> Result<bool, SubstrateError> {
        let name = policy.metadata.name.as_deref().unwrap_or("<unnamed>");
        let call = Call::new(Operation::UpdateNetworkPolicy, self.object(name));
        let mut fenced = policy.clone();
        fenced.metadata.uid = Some(fence.uid().to_owned());
        fenced.metadata.resource_version = Some(fence.resource_version().to_owned());
        let body = encode(&fenced).map_err(|failure| call.error(failure))?;
        let request =
            Request::new(self.policies_path()).replace(name, &PostParams::default(), body);
        self.decide(&call, request, true, |failure| {
            failure.has_reason(REASON_CONFLICT).then_some(false)
        })
        .await
    }

    pub(super) async fn policy_delete(
        &self,
        deletion: &PolicyDeletion,
    ) -> Result<DeleteOutcome, SubstrateError> {
        let (name, fence) = (deletion.name(), deletion.fence());
        let call = Call::new(Operation::DeleteNetworkPolicy, self.object(name));
        let request = Request::new(self.policies_path()).delete(name, &fenced_delete(fence));
        self.decide(
            &call,
            request,
            DeleteOutcome::Accepted,
            mapping::delete_outcome,
        )
        .await
    }
}
