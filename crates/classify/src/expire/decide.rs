//! Whether an agent's pod has expired on the apiserver's clock (deploy.md § Expiry), and which
//! Secret may follow it once it is gone.
//!
//! Pure. Terminated pods are not the collection's: the GC pass collects them without waiting
//! (deploy.md § Execution). A pod without a well-formed expiry, or a listing without a server
//! clock, is never collectable: no local clock and no ambiguity ever kills a live agent.

use crate::binding::Owner;
use crate::expiry::{expiry_of, is_expired};
use crate::facts::{ObservedPod, ObservedSecret};
use crate::startup::{Decoded, StartupState};
use crate::verify::{PodDeletion, SecretDeletion, verify_pod, verify_secret};

/// What the listing says about the agent's pod and its expiry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpiryDecision {
    /// No pod under the agent's name.
    Absent,
    /// The name holds a pod apiary cannot verify as this agent's: never touched.
    Foreign,
    /// Ours, but without a (well-formed) expiry.
    NoExpiry,
    /// Ours with an expiry, but the listing had no server clock: nothing is decided.
    NoClock {
        /// The recorded expiry.
        expires_at: i64,
    },
    /// Ours, not yet expired.
    Alive {
        /// The recorded expiry.
        expires_at: i64,
    },
    /// Expired, but already being deleted (only awaited by whoever deleted it).
    Deleting,
    /// Expired and terminated: the GC pass collects it.
    Terminated,
    /// Expired and alive: delete it with this observation's fence.
    Collect {
        /// The fenced delete.
        deletion: PodDeletion,
        /// The Secret it references, to delete once it is gone.
        secret: Option<String>,
        /// The recorded expiry.
        expires_at: i64,
    },
}

/// Decide about the agent's pod `pod_name` from one quorum listing with its server clock.
pub fn decide_expiry(
    pods: &[ObservedPod],
    pod_name: &str,
    owner: &Owner,
    server_now: Option<i64>,
) -> ExpiryDecision {
    let Some(pod) = pods
        .iter()
        .find(|p| p.marks.name.as_deref() == Some(pod_name))
    else {
        return ExpiryDecision::Absent;
    };
    let Some(verified) = verify_pod(pod, owner) else {
        return ExpiryDecision::Foreign;
    };
    let Some(expires_at) = expiry_of(&pod.marks) else {
        return ExpiryDecision::NoExpiry;
    };
    let Some(now) = server_now else {
        return ExpiryDecision::NoClock { expires_at };
    };
    if !is_expired(expires_at, now) {
        return ExpiryDecision::Alive { expires_at };
    }
    if verified.deletion_marked() {
        return ExpiryDecision::Deleting;
    }
    if verified.decode() == Decoded::Settled(StartupState::Terminated) {
        return ExpiryDecision::Terminated;
    }
    ExpiryDecision::Collect {
        deletion: verified.deletion(),
        secret: verified.facts().env_from_secret.clone(),
        expires_at,
    }
}

/// The Secrets to delete after the collected pod is gone: the verified Secret `secret` if it is
/// listed and no listed pod (ours or not) references it.
pub fn secrets_after_collection(
    secret: &str,
    pods: &[ObservedPod],
    secrets: &[ObservedSecret],
    owner: &Owner,
) -> Vec<SecretDeletion> {
    if pods
        .iter()
        .any(|p| p.facts.env_from_secret.as_deref() == Some(secret))
    {
        return Vec::new();
    }
    secrets
        .iter()
        .filter(|s| s.marks.name.as_deref() == Some(secret))
        .filter_map(|s| verify_secret(s, owner))
        .filter_map(|s| s.deletion())
        .take(1)
        .collect()
}
