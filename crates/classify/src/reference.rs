//! Secret references (deploy.md § Losing the create race, step 2; § Plan; § undeploy, step
//! 4; § Replacing a live agent): which Secrets a listed pod's `envFrom` holds on to, and whether
//! this attempt's own Secret, or the Secret of the pod a replace deleted, may be dropped.
//!
//! Pure. A reference from any listed pod — still pulling, foreign, or running — is load-bearing:
//! deleting the Secret it names could strand that pod.

use crate::binding::Owner;
use std::collections::BTreeSet;

use crate::facts::{ObservedPod, ObservedSecret};
use crate::verify::{SecretDeletion, verify_secret};

/// The Secret names referenced by `envFrom` of any of `pods`.
pub fn referenced_secrets(pods: &[ObservedPod]) -> BTreeSet<&str> {
    pods.iter()
        .filter_map(|pod| pod.facts.env_from_secret.as_deref())
        .collect()
}

/// The uid-fenced delete of this attempt's own Secret `own`, after a lost race or a refused pod
/// create, or of the Secret of the pod a replacing deploy deleted, once that pod is gone:
/// `None` when any listed pod references it, or when it is not listed as a verified
/// Secret with a uid (then nothing proves which object to delete; the age-gated sweep collects
/// it later).
pub fn own_secret_deletion(
    own: &str,
    pods: &[ObservedPod],
    secrets: &[ObservedSecret],
    owner: &Owner,
) -> Option<SecretDeletion> {
    if referenced_secrets(pods).contains(own) {
        return None;
    }
    secrets
        .iter()
        .filter_map(|secret| verify_secret(secret, owner))
        .filter(|secret| secret.name() == Some(own))
        .find_map(|secret| secret.deletion())
}

#[cfg(test)]
mod tests;
