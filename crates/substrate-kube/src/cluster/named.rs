//! `Cluster`'s requests on the agent's namespaced objects besides pods and Secrets, through the
//! exchange layer and its retry window like every request: the NetworkPolicy (deploy.md § Egress
//! control: quorum GET, create, a PUT carrying the `uid` and `resourceVersion` of the
//! observation that proved it apiary's, the fenced delete) and the workspace claim (deploy.md
//! § Persistent workspace: quorum GET, create, the fenced delete). One generic GET, create and
//! fenced delete serve both kinds.
//!
//! Layer: the imperative shell; the answers are mapped, nothing here decides.

use apiary_classify::failure::{Operation, RequestFailure};
use apiary_classify::fence::Fence;
use apiary_classify::policy::PolicyDeletion;
use apiary_classify::workspace::ClaimDeletion;
use apiary_substrate::{CreateAnswer, DeleteAnswer};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Resource;
use kube::core::Request;
use kube::core::params::{GetParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Call, Cluster, decode, encode, fenced_delete, mapping};

/// The reason of a `409` whose precondition (here: the carried resourceVersion) did not hold.
const REASON_CONFLICT: &str = "Conflict";

impl Cluster {
    fn path_of<K: Resource<DynamicType = ()>>(&self) -> String {
        K::url_path(&(), Some(&self.namespace))
    }

    /// Quorum GET of the `K` named `name`; `Ok(None)` is a confirmed absence.
    async fn named_get<K: Resource<DynamicType = ()> + DeserializeOwned>(
        &self,
        operation: Operation,
        name: &str,
        what: &str,
    ) -> Result<Option<K>, RequestFailure> {
        let call = Call::new(operation, self.object(name));
        let request = Request::new(self.path_of::<K>()).get(name, &GetParams::default());
        match self.read(&call, request).await? {
            Some(reply) => decode(&reply.body, what)
                .map(Some)
                .map_err(|failure| call.error(failure)),
            None => Ok(None),
        }
    }

    async fn named_create<K: Resource<DynamicType = ()> + Serialize>(
        &self,
        operation: Operation,
        object: &K,
    ) -> Result<CreateAnswer, RequestFailure> {
        let name = object.meta().name.as_deref().unwrap_or("<unnamed>");
        let call = Call::new(operation, self.object(name));
        let body = encode(object).map_err(|failure| call.error(failure))?;
        let request = Request::new(self.path_of::<K>()).create(&PostParams::default(), body);
        self.decide(
            &call,
            request,
            CreateAnswer::Created,
            mapping::create_answer,
        )
        .await
    }

    async fn named_delete<K: Resource<DynamicType = ()>>(
        &self,
        operation: Operation,
        name: &str,
        fence: &Fence,
    ) -> Result<DeleteAnswer, RequestFailure> {
        let call = Call::new(operation, self.object(name));
        let request = Request::new(self.path_of::<K>()).delete(name, &fenced_delete(fence));
        self.decide(
            &call,
            request,
            DeleteAnswer::Accepted,
            mapping::delete_answer,
        )
        .await
    }

    pub(super) async fn policy_get(
        &self,
        name: &str,
    ) -> Result<Option<NetworkPolicy>, RequestFailure> {
        self.named_get(Operation::GetNetworkPolicy, name, "a network policy")
            .await
    }

    pub(super) async fn policy_create(
        &self,
        policy: &NetworkPolicy,
    ) -> Result<CreateAnswer, RequestFailure> {
        self.named_create(Operation::CreateNetworkPolicy, policy)
            .await
    }

    pub(super) async fn policy_update(
        &self,
        policy: &NetworkPolicy,
        fence: &Fence,
    ) -> Result<bool, RequestFailure> {
        let name = policy.metadata.name.as_deref().unwrap_or("<unnamed>");
        let call = Call::new(Operation::UpdateNetworkPolicy, self.object(name));
        let mut fenced = policy.clone();
        fenced.metadata.uid = Some(fence.uid().to_owned());
        fenced.metadata.resource_version = Some(fence.resource_version().to_owned());
        let body = encode(&fenced).map_err(|failure| call.error(failure))?;
        let request = Request::new(self.path_of::<NetworkPolicy>()).replace(
            name,
            &PostParams::default(),
            body,
        );
        self.decide(&call, request, true, |failure| {
            failure.has_reason(REASON_CONFLICT).then_some(false)
        })
        .await
    }

    pub(super) async fn policy_delete(
        &self,
        deletion: &PolicyDeletion,
    ) -> Result<DeleteAnswer, RequestFailure> {
        self.named_delete::<NetworkPolicy>(
            Operation::DeleteNetworkPolicy,
            deletion.name(),
            deletion.fence(),
        )
        .await
    }

    pub(super) async fn claim_get(
        &self,
        name: &str,
    ) -> Result<Option<PersistentVolumeClaim>, RequestFailure> {
        self.named_get(
            Operation::GetWorkspaceClaim,
            name,
            "a persistent volume claim",
        )
        .await
    }

    pub(super) async fn claim_create(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<CreateAnswer, RequestFailure> {
        self.named_create(Operation::CreateWorkspaceClaim, claim)
            .await
    }

    pub(super) async fn claim_delete(
        &self,
        deletion: &ClaimDeletion,
    ) -> Result<DeleteAnswer, RequestFailure> {
        self.named_delete::<PersistentVolumeClaim>(
            Operation::DeleteWorkspaceClaim,
            deletion.name(),
            deletion.fence(),
        )
        .await
    }
}
