//! What the fake kubelet says and is told: the actions it reports in order, how a final delete
//! ended, why it did not start, and the commands its handle sends to its loop.
//!
//! Layer: test support, plain values (and the one lock helper both sides share). Carries names
//! and status summaries only, never a pod spec.

use std::sync::{Mutex, MutexGuard, mpsc as std_mpsc};

/// How the kubelet's final delete of a deletion-marked (or vanishing) pod was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishOutcome {
    /// `200`: the pod is gone.
    Deleted,
    /// `404`: someone else removed it first.
    AlreadyGone,
    /// `409`: the uid precondition failed — the name now belongs to another pod, left alone.
    PreconditionFailed,
}

/// One thing the kubelet did to the apiserver, in order (see [`Kubelet::actions`](super::Kubelet::actions)). Carries
/// names and status summaries only, never a pod spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// The pod was bound to the node (`POST …/pods/NAME/binding`).
    Bound {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
    },
    /// A status was written (`PUT …/pods/NAME/status`).
    StatusWritten {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// Phase and the first container's state, e.g. `Pending/ContainerCreating`,
        /// `Running/running`, `Failed/terminated(1)`.
        summary: String,
    },
    /// A status write answered `409 Conflict`; the pod was re-read and the step computed again.
    Conflict {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
    },
    /// The final delete: `gracePeriodSeconds: 0` with `preconditions.uid`.
    Finished {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// The uid precondition the delete carried.
        uid: String,
        /// The grace period it carried (always 0).
        grace_period_seconds: u32,
        /// The answer.
        outcome: FinishOutcome,
    },
}

/// Why a kubelet did not start.
#[derive(Debug, thiserror::Error)]
pub enum KubeletError {
    /// The OS refused a thread or the Tokio runtime could not be built.
    #[error("cannot start the fake kubelet's thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The kube client could not be built from the configuration given.
    #[error("cannot build the fake kubelet's client: {0}")]
    Client(#[source] kube::Error),
    /// Creating the Node or writing its status failed (the apiserver is not reachable, or the
    /// identity may not manage nodes: use the admin identity).
    #[error("cannot register node {node}: {source}")]
    Node {
        /// The node name.
        node: String,
        /// The apiserver's answer.
        #[source]
        source: kube::Error,
    },
    /// The kubelet's thread ended before reporting (it panicked).
    #[error("the fake kubelet's thread ended before registering its node")]
    Stopped,
}

/// Commands from the handle to the kubelet's loop.
pub(super) enum Command {
    /// Stop applying watch events and running due work; acknowledge once between two pieces of
    /// work.
    Pause(std_mpsc::Sender<()>),
    /// Carry on: due work first (in due order), then the events that queued up.
    Resume,
}

/// The action log, even after a panic elsewhere.
pub(super) fn lock(actions: &Mutex<Vec<Action>>) -> MutexGuard<'_, Vec<Action>> {
    // A panic while holding the lock leaves a complete Vec behind; keep using it.
    actions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
