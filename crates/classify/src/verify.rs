//! Verification (deploy.md § Verification): whether an observed pod or Secret is
//! apiary's object for this agent, and the proof-carrying types only verification can build.
//!
//! Pure. [`VerifiedPod`] has private fields and no public constructor: the classifier, the GC
//! planner and undeploy accept only it, so an unverified object can never be mutated or adopted.
//! A [`PodDeletion`] can only be made from a verified observation and carries that observation's
//! fence, so no later step can substitute a fresher one.

use crate::binding::Owner;
use crate::facts::{ObjectMarks, ObservedPod, ObservedSecret, PodFacts};
use crate::fence::Fence;
use crate::grace::GracePeriod;
use crate::startup::{Decoded, StartupState, decode, settle_secret_check};

/// Whether the two marker labels and the agent-id annotation match the owner's binding and id
/// (shared by pods and Secrets). `marks` must have been read with the owner's binding keys.
pub(crate) fn marks_match(marks: &ObjectMarks, owner: &Owner) -> bool {
    marks.managed_by.as_deref() == Some(owner.binding.managed_by)
        && marks.binding_version.as_deref() == Some(owner.binding.binding_version)
        && marks.agent_id.as_deref() == Some(owner.agent_id.as_str())
}

fn non_empty(value: &Option<String>) -> Option<String> {
    value.as_ref().filter(|v| !v.is_empty()).cloned()
}

/// A pod proven to be apiary's pod for this agent, with the fence of the observation that proved
/// it. Only [`verify_pod`] builds one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedPod {
    name: String,
    fence: Fence,
    deletion_marked: bool,
    recorded_intent: Option<String>,
    recorded_settings: Option<String>,
    created_at_unix: Option<i64>,
    facts: PodFacts,
}

/// Verify an observed pod against `owner`: its binding's managed-by and binding version, and
/// byte equality of the agent-id annotation; `None` when it is not ours or lacks the name, uid or
/// resourceVersion a fence needs.
pub fn verify_pod(pod: &ObservedPod, owner: &Owner) -> Option<VerifiedPod> {
    let marks = &pod.marks;
    if !marks_match(marks, owner) {
        return None;
    }
    Some(VerifiedPod {
        name: non_empty(&marks.name)?,
        fence: Fence::new(non_empty(&marks.uid)?, non_empty(&marks.resource_version)?),
        deletion_marked: marks.deletion_marked,
        recorded_intent: marks.create_intent.clone(),
        recorded_settings: marks.intent_settings.clone(),
        created_at_unix: marks.created_at_unix,
        facts: pod.facts.clone(),
    })
}

impl VerifiedPod {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fence of this observation.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// Whether `deletionTimestamp` was set.
    pub fn deletion_marked(&self) -> bool {
        self.deletion_marked
    }

    /// The recorded create-intent annotation, verbatim; `None` when absent.
    pub fn recorded_intent(&self) -> Option<&str> {
        self.recorded_intent.as_deref()
    }

    /// The recorded intent-settings annotation, verbatim; `None` when absent (deploy.md § Naming
    /// what differs).
    pub fn recorded_settings(&self) -> Option<&str> {
        self.recorded_settings.as_deref()
    }

    /// Whether the recorded intent equals `desired` (string equality; absent differs).
    pub fn intent_matches(&self, desired: &str) -> bool {
        self.recorded_intent.as_deref() == Some(desired)
    }

    /// `creationTimestamp` in Unix seconds, when present.
    pub fn created_at_unix(&self) -> Option<i64> {
        self.created_at_unix
    }

    /// The observed status and spec facts.
    pub fn facts(&self) -> &PodFacts {
        &self.facts
    }

    /// Decode this pod's startup state.
    pub fn decode(&self) -> Decoded {
        decode(&self.facts)
    }

    /// Settle this pod: `secret_exists` answers a pending Secret check (`None` when not yet
    /// asked). Returns the pod back with the Secret to check when decoding needs that answer.
    ///
    /// # Errors
    /// `Err(NeedsSecretCheck)` when decoding is pending a Secret check and `secret_exists` is
    /// `None`.
    #[allow(
        clippy::result_large_err,
        reason = "the pending pod is handed back by value to be settled once; no hot path"
    )]
    pub fn settle(self, secret_exists: Option<bool>) -> Result<SettledPod, NeedsSecretCheck> {
        let startup = match (self.decode(), secret_exists) {
            (Decoded::Settled(state), _) => state,
            (Decoded::PendingSecretCheck { referenced, .. }, Some(exists)) => {
                settle_secret_check(exists, referenced)
            }
            (Decoded::PendingSecretCheck { secret, .. }, None) => {
                return Err(NeedsSecretCheck { pod: self, secret });
            }
        };
        Ok(SettledPod { pod: self, startup })
    }

    /// The deletion this observation authorises: this pod's name and fence, nothing fresher.
    /// Whether to use it is the classifier's, undeploy's or GC's decision.
    pub fn deletion(&self) -> PodDeletion {
        PodDeletion {
            name: self.name.clone(),
            fence: self.fence.clone(),
            grace: None,
        }
    }
}

/// A verified pod whose startup state still needs a quorum GET of `secret`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeedsSecretCheck {
    /// The pod, to settle once the answer is known.
    pub pod: VerifiedPod,
    /// The Secret to check.
    pub secret: String,
}

/// A verified pod with its settled startup state: the classifier's only input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettledPod {
    pod: VerifiedPod,
    startup: StartupState,
}

impl SettledPod {
    /// The verified pod.
    pub fn pod(&self) -> &VerifiedPod {
        &self.pod
    }

    /// The settled startup state.
    pub fn startup(&self) -> StartupState {
        self.startup
    }
}

/// A fenced pod delete: the name and the fence of the verified observation that authorised it.
/// Only this crate builds one, from a [`VerifiedPod`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodDeletion {
    name: String,
    fence: Fence,
    grace: Option<GracePeriod>,
}

impl PodDeletion {
    /// The same deletion with `grace` as its `gracePeriodSeconds` (`None`: the pod's own). A
    /// [`GracePeriod`] is never zero, so no deletion is ever a forced one.
    #[must_use]
    pub fn with_grace(self, grace: Option<GracePeriod>) -> PodDeletion {
        PodDeletion { grace, ..self }
    }

    /// The grace period override the delete carries, if any.
    pub fn grace(&self) -> Option<GracePeriod> {
        self.grace
    }

    /// The pod to delete.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The preconditions the delete must carry.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }
}

/// A Secret proven to be apiary's for this agent. Only [`verify_secret`] builds one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedSecret {
    name: Option<String>,
    uid: Option<String>,
    created_at_unix: Option<i64>,
}

/// Verify an observed Secret against `owner`: the two marker labels and the agent-id annotation
/// must match.
pub fn verify_secret(secret: &ObservedSecret, owner: &Owner) -> Option<VerifiedSecret> {
    marks_match(&secret.marks, owner).then(|| VerifiedSecret {
        name: non_empty(&secret.marks.name),
        uid: non_empty(&secret.marks.uid),
        created_at_unix: secret.marks.created_at_unix,
    })
}

impl VerifiedSecret {
    /// `metadata.name`, when present.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// `metadata.uid`, when present.
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    /// `creationTimestamp` in Unix seconds (server clock), when present.
    pub fn created_at_unix(&self) -> Option<i64> {
        self.created_at_unix
    }

    /// The uid-fenced delete of this Secret, when it has the name and uid a delete needs.
    pub fn deletion(&self) -> Option<SecretDeletion> {
        Some(SecretDeletion {
            name: self.name.clone()?,
            uid: self.uid.clone()?,
        })
    }
}

/// A uid-fenced Secret delete of a verified Secret. Only this crate builds one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SecretDeletion {
    name: String,
    uid: String,
}

impl SecretDeletion {
    /// The Secret to delete.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The uid precondition.
    pub fn uid(&self) -> &str {
        &self.uid
    }
}

/// One quorum read of the pod name, verified and decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodView {
    /// Confirmed absent.
    Absent,
    /// Present but not verified as ours: never mutated, adopted or reported beyond `foreign`.
    Foreign,
    /// Ours, pending a Secret check to settle.
    Pending(NeedsSecretCheck),
    /// Ours and settled.
    Settled(SettledPod),
}

/// Verify and decode one read of the pod name (`None` = confirmed absent).
pub fn view_pod(pod: Option<&ObservedPod>, owner: &Owner) -> PodView {
    let Some(pod) = pod else {
        return PodView::Absent;
    };
    match verify_pod(pod, owner) {
        None => PodView::Foreign,
        Some(verified) => match verified.settle(None) {
            Ok(settled) => PodView::Settled(settled),
            Err(pending) => PodView::Pending(pending),
        },
    }
}

#[cfg(test)]
mod tests;
