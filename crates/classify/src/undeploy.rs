//! The undeploy operation (deploy.md § undeploy): what to do with the pod, which Secrets an
//! explicit removal deletes, and the whole operation as a sans-IO machine in the deploy machine's
//! style (`crate::machine`: the same deadline, the same disappearance wait, the same capped poll).
//!
//! Pure. An unverified pod stops undeploy before anything is touched (E8), Secrets included. A
//! delete carries the fence of the observation that authorised it; after a failed precondition
//! the machine waits one poll, re-observes and decides again, never reusing the fence. The age
//! gate does not apply: undeploy is an explicit removal instruction, but no Secret a listed pod
//! references is ever deleted.

mod operation;

use std::collections::BTreeSet;

use crate::facts::{ObservedPod, ObservedSecret};
use crate::reference::referenced_secrets;
use crate::verify::{PodDeletion, SecretDeletion, verify_pod, verify_secret};

/// What undeploy does about one observation of the pod name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UndeployPodStep {
    /// No pod: go straight to the Secrets.
    Absent,
    /// Not ours: fail with E8 and touch nothing.
    Foreign,
    /// Ours and not deletion-marked: fenced delete, no grace override.
    Delete(PodDeletion),
    /// Ours and already deletion-marked: only wait for the uid to go.
    AwaitOnly {
        /// The pod name.
        name: String,
        /// The uid to wait for.
        uid: String,
    },
}

/// Decide about one quorum read of the pod name (`None` = confirmed absent).
pub fn undeploy_pod_step(pod: Option<&ObservedPod>, agent_id: &str) -> UndeployPodStep {
    let Some(pod) = pod else {
        return UndeployPodStep::Absent;
    };
    match verify_pod(pod, agent_id) {
        None => UndeployPodStep::Foreign,
        Some(verified) if verified.deletion_marked() => UndeployPodStep::AwaitOnly {
            name: verified.name().to_owned(),
            uid: verified.fence().uid().to_owned(),
        },
        Some(verified) => UndeployPodStep::Delete(verified.deletion()),
    }
}

/// The Secret part of undeploy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretsPlan {
    /// Verified Secrets no listed pod references: delete them (uid-fenced).
    pub delete: Vec<SecretDeletion>,
    /// Verified Secrets a listed pod still references: kept and reported.
    pub kept: Vec<String>,
}

/// Plan the Secret deletions of undeploy over the listed pods and Secrets.
pub fn undeploy_secrets(
    pods: &[ObservedPod],
    secrets: &[ObservedSecret],
    agent_id: &str,
) -> SecretsPlan {
    let referenced = referenced_secrets(pods);
    let mut plan = SecretsPlan {
        delete: Vec::new(),
        kept: Vec::new(),
    };
    let mut seen = BTreeSet::new();
    for secret in secrets.iter().filter_map(|s| verify_secret(s, agent_id)) {
        let Some(name) = secret.name() else { continue };
        if !seen.insert(name.to_owned()) {
            continue;
        }
        if referenced.contains(name) {
            plan.kept.push(name.to_owned());
        } else if let Some(deletion) = secret.deletion() {
            plan.delete.push(deletion);
        }
    }
    plan
}

pub use operation::{
    UndeployEffect, UndeployError, UndeployEvent, UndeployMachine, UndeployReport, UndeploySpec,
};

#[cfg(test)]
mod tests;
