//! The undeploy operation (deploy.md § undeploy): what to do with the pod, which Secrets an
//! explicit removal deletes, and the whole operation as a sans-IO machine in the deploy machine's
//! style (`crate::deploy`: the same deadline, the same disappearance wait, the same capped poll).
//!
//! Pure. An unverified pod stops undeploy before anything is touched (E8), Secrets included. A
//! delete carries the fence of the observation that authorised it; after a failed precondition
//! the machine waits one poll, re-observes and decides again, never reusing the fence. The age
//! gate does not apply: undeploy is an explicit removal instruction, but no Secret a listed pod
//! references is ever deleted.

mod decide;
mod machine;

pub use decide::{SecretsPlan, UndeployPodStep, undeploy_pod_step, undeploy_secrets};
pub use machine::{
    UndeployError, UndeployMachine, UndeployReport, UndeploySpec, UndeployStep,
    undeploy_removes_policy,
};
