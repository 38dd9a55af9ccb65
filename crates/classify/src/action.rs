//! The classification table (deploy.md § Classification): what to do about the observed
//! pod, eight rows in order, first match wins.
//!
//! Pure. Pod age is not an input. A `Delete` can only carry the fence of the verified
//! observation it was classified from, and the pull-failure kind exists only in `Report`, so a
//! reason string can never authorise a delete.

use crate::facts::{ContainerState, PodFacts};
use crate::pull::PullFailure;
use crate::startup::{Missing, StartupState, missing_secret_named, parse_missing};
use crate::verify::{PodDeletion, SettledPod};

/// What the deploy loop does about one observation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Row 1: no verified pod. Create one.
    Create,
    /// Row 2: the pod is deletion-marked; wait until the observed uid is gone.
    AwaitDisappearance {
        /// The pod name.
        name: String,
        /// The uid of the dying pod.
        uid: String,
    },
    /// Row 3: started — the only success, regardless of intent.
    NoOp {
        /// The pod name to return.
        name: String,
        /// Whether the recorded intent equals the desired one (a warning when not).
        intent_matches: bool,
    },
    /// Rows 4, 5, 8: fenced delete with the fence of this observation.
    Delete(PodDeletion),
    /// Row 6: a pull failure that will not heal; report it, never delete.
    Report {
        /// The pod name.
        name: String,
        /// The pull-failure kind (diagnostic only).
        kind: PullFailure,
    },
    /// Row 6 for a Secret the pod references besides its own (`--env-from-secret`,
    /// `--env-secret`) confirmed absent: report it, never delete (the kubelet starts the pod once
    /// the Secret exists again).
    ReportMissingSecret {
        /// The pod name.
        name: String,
        /// What is missing, as the kubelet named it (a missing Secret confirmed by a quorum
        /// read).
        missing: Missing,
    },
    /// Row 7: recoverable with the same intent; keep observing, never delete.
    Observe {
        /// The pod name.
        name: String,
    },
}

/// Classify an optional settled observation against the desired create-intent fingerprint.
pub fn classify(observed: Option<&SettledPod>, desired_intent: &str) -> Action {
    let Some(settled) = observed else {
        return Action::Create;
    };
    let pod = settled.pod();
    let name = pod.name().to_owned();
    if pod.deletion_marked() {
        return Action::AwaitDisappearance {
            name,
            uid: pod.fence().uid().to_owned(),
        };
    }
    match settled.startup() {
        StartupState::Started => Action::NoOp {
            name,
            intent_matches: pod.intent_matches(desired_intent),
        },
        StartupState::Terminated | StartupState::NeverStartedProvablyBroken => {
            Action::Delete(pod.deletion())
        }
        StartupState::NeverStartedPullFailing(kind) => Action::Report { name, kind },
        StartupState::NeverStartedMissingSecret => Action::ReportMissingSecret {
            name,
            missing: missing_config(pod.facts()).unwrap_or_default(),
        },
        StartupState::NeverStartedRecoverable if pod.intent_matches(desired_intent) => {
            Action::Observe { name }
        }
        StartupState::NeverStartedRecoverable => Action::Delete(pod.deletion()),
    }
}

/// What the kubelet's `CreateContainerConfigError` says is missing (a Secret, a key of one, a
/// ConfigMap or a key of one), when the container waits with such a message.
pub fn missing_config(facts: &PodFacts) -> Option<Missing> {
    match &facts.agent {
        Some(ContainerState::Waiting {
            message: Some(message),
            ..
        }) => parse_missing(message),
        _ => None,
    }
}

/// The Secret the kubelet's `CreateContainerConfigError` names, when the container waits with
/// one (the name a [`StartupState::NeverStartedMissingSecret`] was settled from).
pub fn missing_reference(facts: &PodFacts) -> Option<String> {
    match &facts.agent {
        Some(ContainerState::Waiting {
            message: Some(message),
            ..
        }) => missing_secret_named(message).map(str::to_owned),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
