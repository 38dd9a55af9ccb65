//! The agent's objects besides its pod and Secrets, as one kind of object: its NetworkPolicy
//! (deploy.md § Egress control) and its workspace claim (deploy.md § Persistent workspace). Two
//! small sans-IO machines handle either kind: [`Place`] puts the object a deploy builds in place
//! before the first Secret create (create, and when the name is taken read and decide), and
//! [`Settle`] reads it and, when asked, deletes it fenced by that read (undeploy, an emptying GC
//! pass). What differs between the kinds is data, a [`Kind`]: whether an object of ours that
//! differs is updated, what "differs" means, how often a delete that lost its precondition reads
//! again, whether a refused read may be done without, and the names of its problems.
//!
//! Pure: requests out ([`ObjectRequest`]), answers in ([`ObjectAnswer`]); the shell only performs
//! them. Like a pod, an object is apiary's only when its marks say so (the two marker labels and
//! the agent-id annotation), and an update or delete carries the `{uid, resourceVersion}` of the
//! read that proved it, which nothing else can build.

mod place;
mod settle;
mod vocabulary;

pub use place::{Place, PlaceOutput, Placed};
pub use settle::{Settle, SettleOutput, Settled};
pub use vocabulary::{Found, Kind, ObjectAnswer, ObjectRequest, Problem, Step, fence_of};

#[cfg(test)]
mod tests;
