//! The fake's own objects: the kinds the cluster model does not have, the agent's NetworkPolicy
//! (deploy.md § Egress control) and its workspace PersistentVolumeClaim (deploy.md § Persistent
//! workspace). One store serves both: objects by name, stamped as the apiserver stamps them (a
//! uid, a resourceVersion from one counter), with the apiserver's answers: `AlreadyExists` on a
//! taken name, `409 Conflict` on a stale update or delete precondition, `404` for a missing
//! namespace. Every call is logged and takes a scripted [`Step`] like every request. Test-only.

use std::collections::BTreeMap;

use apiary_classify::failure::{Operation, RequestFailure};
use apiary_classify::fence::Fence;
use k8s_openapi::Metadata;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::fake::call::Call;
use crate::fake::cluster::{FakeCluster, State, lock};
use crate::fake::errors::api_error;
use crate::fake::step::Step;
use crate::substrate::{CreateAnswer, DeleteAnswer};

/// A kind the fake keeps itself: where its objects live in the state, how their uid and
/// resourceVersion are stamped (`<stamp>-<n>` and `<stamp><n>`), and the calls that log its
/// requests. Everything else is one generic path for both kinds.
pub(crate) trait Kept: Metadata<Ty = ObjectMeta> + Clone {
    /// The stamp's prefix.
    const STAMP: &'static str;
    /// The resource a `404` names (`<resource> "<name>" not found`).
    const RESOURCE: &'static str;
    /// The create's operation (a missing namespace's `404` names it).
    const CREATE: Operation;
    /// This kind's objects, by name.
    fn store(state: &mut State) -> &mut BTreeMap<String, Self>;
    /// The logged read of `name`.
    fn get_call(name: String) -> Call;
    /// The logged create of `name`.
    fn create_call(name: String) -> Call;
    /// The logged fenced delete of `name`.
    fn delete_call(name: String, fence: Fence) -> Call;
}

impl Kept for NetworkPolicy {
    const STAMP: &'static str = "np";
    const RESOURCE: &'static str = "networkpolicies.networking.k8s.io";
    const CREATE: Operation = Operation::CreateNetworkPolicy;
    fn store(state: &mut State) -> &mut BTreeMap<String, Self> {
        &mut state.policies
    }
    fn get_call(name: String) -> Call {
        Call::GetNetworkPolicy { name }
    }
    fn create_call(name: String) -> Call {
        Call::CreateNetworkPolicy { name }
    }
    fn delete_call(name: String, fence: Fence) -> Call {
        Call::DeleteNetworkPolicy { name, fence }
    }
}

impl Kept for PersistentVolumeClaim {
    const STAMP: &'static str = "pvc";
    const RESOURCE: &'static str = "persistentvolumeclaims";
    const CREATE: Operation = Operation::CreateWorkspaceClaim;
    fn store(state: &mut State) -> &mut BTreeMap<String, Self> {
        &mut state.claims
    }
    fn get_call(name: String) -> Call {
        Call::GetWorkspaceClaim { name }
    }
    fn create_call(name: String) -> Call {
        Call::CreateWorkspaceClaim { name }
    }
    fn delete_call(name: String, fence: Fence) -> Call {
        Call::DeleteWorkspaceClaim { name, fence }
    }
}

impl FakeCluster {
    /// The NetworkPolicies in the fake's namespace, by name (not logged).
    pub fn network_policies(&self) -> Vec<NetworkPolicy> {
        self.kept()
    }

    /// Put `policy` in place as is, stamped with a uid and resourceVersion (a test hook: a
    /// foreign policy, or one left from an earlier deploy). Not logged.
    pub fn insert_network_policy(&self, policy: NetworkPolicy) -> NetworkPolicy {
        self.keep(policy)
    }

    /// The claims in the fake's namespace, by name (not logged).
    pub fn workspace_claims(&self) -> Vec<PersistentVolumeClaim> {
        self.kept()
    }

    /// Put `claim` in place as is, stamped with a uid and resourceVersion (a test hook: a
    /// foreign claim, one being deleted, or one of another size). Not logged.
    pub fn insert_workspace_claim(&self, claim: PersistentVolumeClaim) -> PersistentVolumeClaim {
        self.keep(claim)
    }

    fn kept<K: Kept>(&self) -> Vec<K> {
        K::store(&mut lock(&self.state)).values().cloned().collect()
    }

    /// Store `object` under its name with a fresh resourceVersion, and a fresh uid unless
    /// `uid` carries one over (an update keeps the object's uid).
    fn stamp<K: Kept>(&self, mut object: K, uid: Option<String>) -> K {
        let mut state = lock(&self.state);
        state.kept_version += 1;
        let version = state.kept_version;
        let meta = object.metadata_mut();
        meta.uid = Some(uid.unwrap_or_else(|| format!("{}-{version}", K::STAMP)));
        meta.resource_version = Some(format!("{}{version}", K::STAMP));
        meta.namespace = Some(self.namespace.clone());
        let name = meta.name.clone().unwrap_or_default();
        K::store(&mut state).insert(name, object.clone());
        object
    }

    fn keep<K: Kept>(&self, object: K) -> K {
        self.stamp(object, None)
    }

    /// A quorum GET: `Ok(None)` is absence.
    pub(crate) fn serve_get<K: Kept>(&self, name: &str) -> Result<Option<K>, RequestFailure> {
        match self.begin(K::get_call(name.to_owned())) {
            Step::Fail(error) | Step::LandThenFail(error) => Err(error),
            _ => Ok(K::store(&mut lock(&self.state)).get(name).cloned()),
        }
    }

    /// A create: `AlreadyExists` on a taken name, `404` when the namespace is missing.
    pub(crate) fn serve_create<K: Kept>(&self, object: &K) -> Result<CreateAnswer, RequestFailure> {
        let name = object.metadata().name.clone().unwrap_or_default();
        let landed = match self.begin(K::create_call(name.clone())) {
            Step::Fail(error) => return Err(error),
            Step::Create(answer) => return Ok(answer),
            Step::LandThenFail(error) => Some(error),
            _ => None,
        };
        if self.model().get_namespace(&self.namespace).is_err() {
            return Err(self.namespace_missing(K::CREATE, &name));
        }
        let taken = K::store(&mut lock(&self.state)).contains_key(&name);
        let answer = if taken {
            CreateAnswer::AlreadyExists
        } else {
            self.keep(object.clone());
            CreateAnswer::Created
        };
        landed.map_or(Ok(answer), Err)
    }

    /// A delete with `preconditions: {uid, resourceVersion}` from `fence`.
    pub(crate) fn serve_delete<K: Kept>(
        &self,
        name: &str,
        fence: &Fence,
    ) -> Result<DeleteAnswer, RequestFailure> {
        match self.begin(K::delete_call(name.to_owned(), fence.clone())) {
            Step::Fail(error) | Step::LandThenFail(error) => return Err(error),
            Step::Delete(answer) => return Ok(answer),
            _ => {}
        }
        let mut state = lock(&self.state);
        let store = K::store(&mut state);
        match store.get(name) {
            None => Ok(DeleteAnswer::NotFound),
            Some(current) if !fence_holds(current.metadata(), fence) => {
                Ok(DeleteAnswer::PreconditionFailed)
            }
            Some(_) => {
                store.remove(name);
                Ok(DeleteAnswer::Accepted)
            }
        }
    }

    /// The policy PUT with the fence's uid and resourceVersion: `Ok(false)` is `409 Conflict`.
    pub(crate) fn serve_update_policy(
        &self,
        policy: &NetworkPolicy,
        fence: &Fence,
    ) -> Result<bool, RequestFailure> {
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
            return Err(api_error(
                Operation::UpdateNetworkPolicy,
                &format!("{}/{name}", self.namespace),
                404,
                "NotFound",
                &format!("{} \"{name}\" not found", NetworkPolicy::RESOURCE),
            ));
        };
        if !fence_holds(&current.metadata, fence) {
            return Ok(false);
        }
        self.stamp(policy.clone(), current.metadata.uid);
        Ok(true)
    }

    fn namespace_missing(&self, operation: Operation, name: &str) -> RequestFailure {
        let namespace = &self.namespace;
        api_error(
            operation,
            &format!("{namespace}/{name}"),
            404,
            "NotFound",
            &format!("namespaces \"{namespace}\" not found"),
        )
    }
}

/// Whether `meta` still has the fence's uid and resourceVersion (a precondition holds).
fn fence_holds(meta: &ObjectMeta, fence: &Fence) -> bool {
    meta.uid.as_deref() == Some(fence.uid())
        && meta.resource_version.as_deref() == Some(fence.resource_version())
}
