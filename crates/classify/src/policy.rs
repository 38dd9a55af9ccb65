//! The agent's NetworkPolicy (deploy.md § Egress control): whether a deploy that isolates its
//! agent may use, must update or must refuse the policy that holds the agent's policy name, and
//! the fenced delete of a verified one (undeploy, GC).
//!
//! Pure. Like a pod, the policy is apiary's only when its marks say so (the two marker labels and
//! the agent-id annotation); an update or delete carries the `{uid, resourceVersion}` of the
//! observation that proved it, and nothing else can build one.

use std::fmt;

use crate::binding::Owner;
use crate::facts::ObjectMarks;
use crate::fence::Fence;
use crate::verify::marks_match;

/// What to do with the policy a deploy found under the agent's policy name, before its pod is
/// created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyStep {
    /// It is ours and says what the deploy wants: use it.
    Keep,
    /// It is ours with another egress list: replace its spec, fenced by this observation.
    Update(Fence),
    /// It is not ours (or cannot be fenced): never used, never touched; the deploy fails.
    Foreign,
    /// It is ours and being deleted: the deploy fails (a pod created now could start
    /// unisolated once the deletion completes); deploy again once it is gone.
    Deleting,
}

/// Decide about the policy observed under the agent's policy name; `desired_intent` is the
/// fingerprint of the policy the deploy builds (its `apiary.dev/create-intent` annotation).
pub fn policy_step(observed: &ObjectMarks, owner: &Owner, desired_intent: &str) -> PolicyStep {
    let Some(fence) = fence_of(observed, owner) else {
        return PolicyStep::Foreign;
    };
    if observed.deletion_marked {
        return PolicyStep::Deleting;
    }
    if observed.create_intent.as_deref() == Some(desired_intent) {
        PolicyStep::Keep
    } else {
        PolicyStep::Update(fence)
    }
}

/// The fenced delete of the agent's policy, when `observed` is proven ours and can be fenced.
pub fn policy_deletion(observed: &ObjectMarks, owner: &Owner) -> Option<PolicyDeletion> {
    let fence = fence_of(observed, owner)?;
    Some(PolicyDeletion {
        name: observed.name.clone()?,
        fence,
    })
}

/// The fence of an object (a policy, a workspace claim) proven ours, or `None`.
pub(crate) fn fence_of(observed: &ObjectMarks, owner: &Owner) -> Option<Fence> {
    if !marks_match(observed, owner) {
        return None;
    }
    let uid = observed.uid.clone().filter(|u| !u.is_empty())?;
    let rv = observed
        .resource_version
        .clone()
        .filter(|r| !r.is_empty())?;
    Some(Fence::new(uid, rv))
}

/// A fenced NetworkPolicy delete (`preconditions: {uid, resourceVersion}`) of a policy proven
/// ours. Only this module builds one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyDeletion {
    name: String,
    fence: Fence,
}

impl PolicyDeletion {
    /// The policy to delete.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The observation's fence.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }
}

/// Why the agent's NetworkPolicy could not be put in place (E15).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyFailure {
    /// The policy under the name is foreign, being deleted, or changed concurrently.
    Problem(PolicyProblem),
    /// A request failed.
    Failed(crate::failure::RequestFailure),
}

/// Why a deploy could not put its agent's policy in place (E15).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyProblem {
    /// A policy that is not apiary's for this agent holds the name.
    Foreign,
    /// The agent's policy is being deleted.
    Deleting,
    /// Its update lost to a concurrent write (409 Conflict): the deploy fails rather than
    /// overwrite a newer policy.
    Conflict,
}

impl fmt::Display for PolicyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Foreign => {
                "exists but is not apiary's for this agent; apiary never uses or changes it: \
                 remove it or use another namespace"
            }
            Self::Deleting => "is being deleted; deploy again once it is gone",
            Self::Conflict => {
                "was changed by someone else while this deploy updated it; deploy again"
            }
        })
    }
}

#[cfg(test)]
mod tests;
