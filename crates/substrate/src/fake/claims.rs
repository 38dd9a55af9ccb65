//! The fake's PersistentVolumeClaims (deploy.md § Persistent workspace): the cluster model has no
//! such kind, so the fake keeps the namespace's claims itself, stamped as the apiserver stamps
//! them (a uid, a resourceVersion from the policies' counter), with the apiserver's answers:
//! `AlreadyExists` on a taken name, `409 Conflict` on a stale delete precondition, `404` for a
//! missing namespace. Every call is logged and takes a scripted [`Step`]. Test-only.

use apiary_classify::failure::Operation;
use apiary_classify::workspace::ClaimDeletion;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use crate::fake::call::Call;
use crate::fake::cluster::{FakeCluster, lock};
use crate::fake::policies::fence_holds;
use crate::fake::step::Step;
use crate::substrate::{CreateOutcome, DeleteOutcome, SubstrateError};

impl FakeCluster {
    /// The claims in the fake's namespace, by name (not logged).
    pub fn workspace_claims(&self) -> Vec<PersistentVolumeClaim> {
        lock(&self.state).claims.values().cloned().collect()
    }

    /// Put `claim` in place as is, stamped with a uid and resourceVersion (a test hook: a
    /// foreign claim, one being deleted, or one of another size). Not logged.
    pub fn insert_workspace_claim(
        &self,
        mut claim: PersistentVolumeClaim,
    ) -> PersistentVolumeClaim {
        let mut state = lock(&self.state);
        state.policy_version += 1;
        let version = state.policy_version;
        claim.metadata.uid = Some(format!("pvc-{version}"));
        claim.metadata.resource_version = Some(format!("pvc{version}"));
        claim.metadata.namespace = Some(self.namespace.clone());
        let name = claim.metadata.name.clone().unwrap_or_default();
        state.claims.insert(name, claim.clone());
        claim
    }

    pub(crate) fn serve_get_claim(
        &self,
        name: &str,
    ) -> Result<Option<PersistentVolumeClaim>, SubstrateError> {
        match self.begin(Call::GetWorkspaceClaim {
            name: name.to_owned(),
        }) {
            Step::Fail(error) | Step::LandThenFail(error) => Err(error),
            _ => Ok(lock(&self.state).claims.get(name).cloned()),
        }
    }

    pub(crate) fn serve_create_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<CreateOutcome, SubstrateError> {
        let name = claim.metadata.name.clone().unwrap_or_default();
        let step = self.begin(Call::CreateWorkspaceClaim { name: name.clone() });
        let landed = match step {
            Step::Fail(error) => return Err(error),
            Step::Create(outcome) => return Ok(outcome),
            Step::LandThenFail(error) => Some(error),
            _ => None,
        };
        if self.model().get_namespace(&self.namespace).is_err() {
            return Err(self.namespace_missing(Operation::CreateWorkspaceClaim, &name));
        }
        let outcome = if lock(&self.state).claims.contains_key(&name) {
            CreateOutcome::AlreadyExists
        } else {
            self.insert_workspace_claim(claim.clone());
            CreateOutcome::Created
        };
        landed.map_or(Ok(outcome), Err)
    }

    pub(crate) fn serve_delete_claim(
        &self,
        deletion: &ClaimDeletion,
    ) -> Result<DeleteOutcome, SubstrateError> {
        let name = deletion.name().to_owned();
        let step = self.begin(Call::DeleteWorkspaceClaim {
            name: name.clone(),
            fence: deletion.fence().clone(),
        });
        match step {
            Step::Fail(error) | Step::LandThenFail(error) => return Err(error),
            Step::Delete(outcome) => return Ok(outcome),
            _ => {}
        }
        let mut state = lock(&self.state);
        match state.claims.get(&name) {
            None => Ok(DeleteOutcome::NotFound),
            Some(current) if !fence_holds(&current.metadata, deletion.fence()) => {
                Ok(DeleteOutcome::PreconditionFailed)
            }
            Some(_) => {
                state.claims.remove(&name);
                Ok(DeleteOutcome::Accepted)
            }
        }
    }
}
