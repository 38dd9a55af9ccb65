//! The agent's NetworkPolicy (deploy.md § Egress control): whether a deploy that isolates its
//! agent may use, must update or must refuse the policy that holds the agent's policy name, and
//! the fenced delete of a verified one (undeploy, GC).
//!
//! Pure. Like a pod, the policy is apiary's only when its marks say so (the two marker labels and
//! the agent-id annotation); an update or delete carries the `{uid, resourceVersion}` of the
//! observation that proved it, and nothing else can build one. The sequences (create, read,
//! decide, update; read, fenced delete) are the machines of `crate::object`, run over
//! [`Policy`].

use std::fmt;

use crate::binding::Owner;
use crate::facts::ObjectMarks;
use crate::failure::RequestFailure;
use crate::fence::Fence;
use crate::object::{Kind, Problem, fence_of};

/// The NetworkPolicy as a [`Kind`] of the agent's objects: ours is updated, fenced, when its
/// create intent (the fingerprint of its spec, its `apiary.dev/create-intent` annotation) is not
/// the one the deploy builds; one fenced delete, and a lost precondition leaves it to the next
/// undeploy or `gc`; a refused read is done without.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy;

impl Kind for Policy {
    type Shape = Option<String>;
    type Deletion = PolicyDeletion;
    type Failure = PolicyFailure;

    const UPDATES: bool = true;
    const DELETE_ATTEMPTS: u32 = 1;
    const SKIPS_FORBIDDEN_READ: bool = true;

    fn differs(wanted: &Option<String>, found: &Option<String>) -> bool {
        wanted != found
    }

    fn deletion(observed: &ObjectMarks, owner: &Owner) -> Option<PolicyDeletion> {
        policy_deletion(observed, owner)
    }

    fn problem(problem: Problem) -> PolicyFailure {
        PolicyFailure::Problem(match problem {
            Problem::Foreign => PolicyProblem::Foreign,
            Problem::Deleting => PolicyProblem::Deleting,
            Problem::Raced => PolicyProblem::Conflict,
        })
    }

    fn failed(failure: RequestFailure) -> PolicyFailure {
        PolicyFailure::Failed(failure)
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
    Failed(RequestFailure),
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
