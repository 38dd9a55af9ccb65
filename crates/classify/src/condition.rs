//! The redacted condition text (deploy.md § Redacted condition text) and the "latest condition"
//! an error carries (deploy.md § Latest condition, deadline, zero mutation).
//!
//! Pure. The container's waiting message and terminated message are never included: the first
//! can echo registry credentials, the second is process output. Pod-condition messages are
//! included, because the scheduler and kubelet compose them from pod shape and capacity.

use std::fmt;

use crate::facts::{ContainerState, PodFacts};

/// What callers say when the cluster reported no condition at all.
pub const NO_CONDITION: &str = "no condition reported by the cluster";

/// The redacted condition text of a pod, first applicable rule wins; `None` when nothing applies.
pub fn condition_text(facts: &PodFacts) -> Option<String> {
    match &facts.agent {
        Some(ContainerState::Waiting {
            reason: Some(reason),
            ..
        }) if !reason.is_empty() => {
            return Some(format!("the container is waiting, reason {reason}"));
        }
        Some(ContainerState::Terminated { exit_code, reason }) => {
            return Some(match reason.as_deref() {
                Some(reason) if !reason.is_empty() => {
                    format!("the container exited with code {exit_code} ({reason})")
                }
                _ => format!("the container exited with code {exit_code}"),
            });
        }
        _ => {}
    }
    if let Some(condition) = facts.conditions.iter().find(|c| c.status == "False") {
        let mut text = format!("pod condition {} is false", condition.kind);
        for part in [&condition.reason, &condition.message]
            .into_iter()
            .flatten()
        {
            if !part.is_empty() {
                text.push_str(": ");
                text.push_str(part);
            }
        }
        return Some(text);
    }
    facts
        .phase
        .as_deref()
        .filter(|phase| !phase.is_empty())
        .map(|phase| format!("the pod is {phase}"))
}

/// The latest condition of a pod, read fresh at the moment of failing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LatestCondition {
    /// The text of deploy.md § Redacted condition text for the pod as read.
    Reported(String),
    /// The pod exists but no rule of deploy.md § Redacted condition text applied.
    NoneReported,
    /// The pod no longer exists.
    PodGone,
    /// The read failed; the text is the read error (never an env value: apiary never sends one
    /// in a read).
    Unreadable(String),
}

impl LatestCondition {
    /// The latest condition from a fresh read: `Some(facts)` when the pod exists.
    pub fn from_read(facts: Option<&PodFacts>) -> LatestCondition {
        match facts {
            None => LatestCondition::PodGone,
            Some(facts) => match condition_text(facts) {
                Some(text) => LatestCondition::Reported(text),
                None => LatestCondition::NoneReported,
            },
        }
    }
}

impl fmt::Display for LatestCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LatestCondition::Reported(text) => f.write_str(text),
            LatestCondition::NoneReported => f.write_str(NO_CONDITION),
            LatestCondition::PodGone => f.write_str("the pod no longer exists"),
            LatestCondition::Unreadable(error) => {
                write!(f, "the pod's condition could not be read: {error}")
            }
        }
    }
}

#[cfg(test)]
mod tests;
