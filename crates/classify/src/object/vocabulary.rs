//! The object machines' vocabulary (deploy.md § Egress control, § Persistent workspace): what a
//! [`Kind`] of the agent's other objects is, the requests the machines ask for and the answers
//! they are fed, and the fence of an object proven ours.
//!
//! Pure data and the rules every kind shares; the machines are `place` and `settle`.

use std::fmt::Debug;

use crate::answer::{CreateAnswer, DeleteAnswer};
use crate::binding::Owner;
use crate::facts::ObjectMarks;
use crate::failure::RequestFailure;
use crate::fence::Fence;
use crate::verify::marks_match;

/// One kind of the agent's other objects (`crate::policy::Policy`, `crate::workspace::Claim`):
/// what the machines need to know about it, as data.
pub trait Kind: Clone + Debug + PartialEq + Eq {
    /// What a deploy compares between the object it builds and the one it finds: the policy's
    /// create intent, the claim's requested size and class.
    type Shape: Clone + Debug + PartialEq + Eq;
    /// Its fenced delete, built only by [`Kind::deletion`].
    type Deletion: Clone + Debug + PartialEq + Eq;
    /// Why a deploy could not put it in place, in the kind's own names.
    type Failure: Clone + Debug + PartialEq + Eq;

    /// Whether an object of ours that [`Kind::differs`] from what the deploy builds is replaced,
    /// fenced by the read (the policy), rather than used as it is (the claim: never changed).
    const UPDATES: bool;
    /// How many reads a settle makes, each followed by a fenced delete, before it gives up on an
    /// object that changed at each (the volume controller writes a claim's status).
    const DELETE_ATTEMPTS: u32;
    /// Whether a settle whose read is refused (`403 Forbidden`) goes on without the object: a
    /// deployer role from before `--isolate` may not read policies, and an undeploy never fails
    /// for an option it may not have used.
    const SKIPS_FORBIDDEN_READ: bool;

    /// Whether `found` differs from `wanted`.
    fn differs(wanted: &Self::Shape, found: &Self::Shape) -> bool;
    /// The fenced delete of the object `observed`, when it is proven ours and can be fenced.
    fn deletion(observed: &ObjectMarks, owner: &Owner) -> Option<Self::Deletion>;
    /// The kind's name for `problem`.
    fn problem(problem: Problem) -> Self::Failure;
    /// The kind's failure for a request that failed.
    fn failed(failure: RequestFailure) -> Self::Failure;
}

/// Why a deploy could not put the agent's object in place, whatever its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// An object that is not apiary's for this agent (or cannot be fenced) holds the name.
    Foreign,
    /// The agent's object is being deleted.
    Deleting,
    /// Another writer is at work: the name was taken again after the object went away between
    /// the create that found it and the read, or the object changed (or went away) since the
    /// read that fenced its update. The deploy fails rather than guess or overwrite.
    Raced,
}

/// A read of the object under the agent's name: its marks and its [`Kind::Shape`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found<K: Kind> {
    /// Its identity marks.
    pub marks: ObjectMarks,
    /// What a deploy compares.
    pub shape: K::Shape,
}

/// What a machine asks the shell to do with the agent's object of kind `K`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectRequest<K: Kind> {
    /// Create the object the deploy builds. Answered by [`ObjectAnswer::Created`].
    Create,
    /// Quorum read of the object under the agent's name. Answered by [`ObjectAnswer::Read`].
    Read,
    /// Replace the object with the one the deploy builds (PUT), carrying the fence of the read
    /// that proved it ours. Answered by [`ObjectAnswer::Updated`].
    Update(Fence),
    /// The fenced delete. Answered by [`ObjectAnswer::Deleted`].
    Delete(K::Deletion),
}

/// The answer to the previous [`ObjectRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one answer per request; boxing would only burden the shell"
)]
pub enum ObjectAnswer<K: Kind> {
    /// Begin (the first answer, to no request).
    Start,
    /// To [`ObjectRequest::Create`].
    Created(Result<CreateAnswer, RequestFailure>),
    /// To [`ObjectRequest::Read`] (`Ok(None)`: confirmed absent).
    Read(Result<Option<Found<K>>, RequestFailure>),
    /// To [`ObjectRequest::Update`]: `Ok(false)` is `409 Conflict` (it changed since the read).
    Updated(Result<bool, RequestFailure>),
    /// To [`ObjectRequest::Delete`].
    Deleted(Result<DeleteAnswer, RequestFailure>),
}

/// What one step of `Place` or `Settle` returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step<K: Kind, O> {
    /// Perform this request and feed its answer back.
    Request(ObjectRequest<K>),
    /// The machine is done.
    Done(O),
}

/// The fence of an object (a policy, a workspace claim) proven ours, or `None`.
pub fn fence_of(observed: &ObjectMarks, owner: &Owner) -> Option<Fence> {
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

/// The failure of an answer no request of the machine asked for: a bug in the shell.
pub(super) fn unexpected(what: &str) -> RequestFailure {
    RequestFailure::unsent(format!(
        "internal error in apiary: the driver answered {what} request that was not asked for"
    ))
}
