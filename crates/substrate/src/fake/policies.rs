//! The fake's NetworkPolicies (deploy.md § Egress control): the cluster model has no such kind,
//! so the fake keeps the namespace's policies itself, stamped as the apiserver stamps them (a
//! uid, a resourceVersion from one counter), with the apiserver's answers: `AlreadyExists` on a
//! taken name, `409 Conflict` on a stale update or delete precondition, `404` for a missing
//! namespace. Every call is logged and takes a scripted [`Step`] like every request. Test-only.

use apiary_classify::failure::Operation;
use apiary_classify::fence::Fence;
use apiary_classify::policy::PolicyDeletion;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::fake::call::Call;
use crate::fake::cluster::{FakeCluster, lock};
use crate::fake::errors::api_error;
use crate::fake::step::Step;
use crate::substrate::{CreateOutcome, DeleteOutcome, SubstrateError};

impl FakeCluster {
    /// The policies in the fake's namespace, by name (not logged).
    pub fn network_policies(&self) -> Vec<NetworkPolicy> {
        lock(&self.state).policies.values().cloned().collect()
    }

    /// Put `policy` in place as is, stamped with a uid and resourceVersion (a test hook: a
    /// foreign policy, or one left from an earlier deploy). Not logged.
    pub fn insert_network_policy(&self, mut policy: NetworkPolicy) -> NetworkPolicy {
        let mut state = lock(&self.state);
        state.policy_version += 1;
        let version = state.policy_version;
        policy.metadata.uid = Some(format!("np-{version}"));
        policy.metadata.resource_version = Some(format!("np{version}"));
        policy.metadata.namespace = Some(self.namespace.clone());
        let name = policy.metadata.name.clone().unwrap_or_default();
        state.policies.insert(name, policy.clone());
        policy
    }

    pub(crate) fn serve_get_policy(
        &self,
        name: &str,
    ) -> Result<Option<NetworkPolicy>, SubstrateError> {
        match self.begin(Call::GetNetworkPolicy {
            name: name.to_owned(),
        }) {
            Step::Fail(error) | Step::LandThenFail(error) => Err(error),
            _ => Ok(lock(&self.state).policies.get(name).cloned()),
        }
    }

    pub(crate) fn serve_create_policy(
        &self,
        policy: &NetworkPolicy,
    ) -> Result<CreateOutcome, SubstrateError> {
        let name = policy.metadata.name.clone().unwrap_or_default();
        let step = self.begin(Call::CreateNetworkPolicy { name: name.clone() });
        let landed = match step {
            Step::Fail(error) => return Err(error),
            Step::Create(outcome) => return Ok(outcome),
            Step::LandThenFail(error) => Some(error),
            _ => None,
        };
        if self.model().get_namespace(&self.namespace).is_err() {
            return Err(self.namespace_missing(Operation::CreateNetworkPolicy, &name));
        }
        let outcome = if lock(&self.state).policies.contains_key(&name) {
            CreateOutcome::AlreadyExists
        } else {
            self.insert_network_policy(policy.clone());
            CreateOutcome::Created
        };
        landed.map_or(Ok(outcome), Err)
    }

    pub(crate) fn serve_update_policy(
        &self,
        policy: &NetworkPolicy,
        fence: &Fence,
    ) -> Result<bool, SubstrateError> {
        let name = policy.metadata.name.clone().unwrap_or_default();
        let step = self.begin(Call::UpdateNetworkPolicy {
            name: name.clone(),
            fence: fence.clone(),
        });
        if let Step::Fail(error) | Step::LandThenFail(error) = step {
            return Err(error);
        }
        let current = lock(&self.state).policies.get(&name).cloned();
        let Some(current) = current else {
            return Err(self.policy_not_found(Operation::UpdateNetworkPolicy, &name));
        };
        if !fence_holds(&current.metadata, fence) {
            return Ok(false);
        }
        let mut state = lock(&self.state);
        state.policy_version += 1;
        let mut updated = policy.clone();
        updated.metadata.uid = current.metadata.uid;
        updated.metadata.resource_version = Some(format!("np{}", state.policy_version));
        updated.metadata.namespace = Some(self.namespace.clone());
        state.policies.insert(name, updated);
        Ok(true)
    }

    pub(crate) fn serve_delete_policy(
        &self,
        deletion: &PolicyDeletion,
    ) -> Result<DeleteOutcome, SubstrateError> {
        let name = deletion.name().to_owned();
        let step = self.begin(Call::DeleteNetworkPolicy {
            name: name.clone(),
            fence: deletion.fence().clone(),
        });
        match step {
            Step::Fail(error) | Step::LandThenFail(error) => return Err(error),
            Step::Delete(outcome) => return Ok(outcome),
            _ => {}
        }
        let mut state = lock(&self.state);
        match state.policies.get(&name) {
            None => Ok(DeleteOutcome::NotFound),
            Some(current) if !fence_holds(&current.metadata, deletion.fence()) => {
                Ok(DeleteOutcome::PreconditionFailed)
            }
            Some(_) => {
                state.policies.remove(&name);
                Ok(DeleteOutcome::Accepted)
            }
        }
    }

    pub(super) fn namespace_missing(&self, operation: Operation, name: &str) -> SubstrateError {
        let namespace = &self.namespace;
        api_error(
            operation,
            &format!("{namespace}/{name}"),
            404,
            "NotFound",
            &format!("namespaces \"{namespace}\" not found"),
        )
    }

    fn policy_not_found(&self, operation: Operation, name: &str) -> SubstrateError {
        api_error(
            operation,
            &format!("{}/{name}", self.namespace),
            404,
            "NotFound",
            &format!("networkpolicies.networking.k8s.io \"{name}\" not found"),
        )
    }
}

/// Whether `meta` still has the fence's uid and resourceVersion (a precondition holds).
pub(super) fn fence_holds(meta: &ObjectMeta, fence: &Fence) -> bool {
    meta.uid.as_deref() == Some(fence.uid())
        && meta.resource_version.as_deref() == Some(fence.resource_version())
}
