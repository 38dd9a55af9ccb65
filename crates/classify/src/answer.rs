//! The answers every operation's requests share: what a create and a fenced delete answered
//! when they did not fail (a failure is a [`RequestFailure`](crate::failure::RequestFailure)).
//! Each machine is fed them, and the `Substrate` seam answers in them.
//!
//! Pure data.

/// What a create answered when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateAnswer {
    /// The object was created.
    Created,
    /// 409 with reason `AlreadyExists`: the name is taken (for a pod, the lost create race).
    AlreadyExists,
}

/// What a fenced delete answered when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteAnswer {
    /// Accepted (the object may still exist, deletion-marked).
    Accepted,
    /// Already gone.
    NotFound,
    /// The precondition did not hold: the object changed since the observation.
    PreconditionFailed,
}
