//! The undeploy decisions (deploy.md § undeploy): what to do about one observation of the pod
//! name, and which Secrets an explicit removal deletes. Pure; the sibling machine sequences them.

use crate::binding::Owner;
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
pub fn undeploy_pod_step(pod: Option<&ObservedPod>, owner: &Owner) -> UndeployPodStep {
    let Some(pod) = pod else {
        return UndeployPodStep::Absent;
    };
    match verify_pod(pod, owner) {
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
    owner: &Owner,
) -> SecretsPlan {
    let referenced = referenced_secrets(pods);
    let mut plan = SecretsPlan {
        delete: Vec::new(),
        kept: Vec::new(),
    };
    let mut seen = BTreeSet::new();
    for secret in secrets.iter().filter_map(|s| verify_secret(s, owner)) {
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

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
