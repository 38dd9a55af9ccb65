//! The state one running simulator shares between its accept loop, its connections, its clock
//! task, its watch sessions and the `Simulator` handle: the model behind its lock, the clock, the
//! fault rules, the request log and the channels that wake and end watches.
//!
//! Layer: shared state of the imperative shell. It owns the lock discipline (the model clock is
//! advanced before every access) and nothing else; it must not answer requests or decide
//! anything about objects.

use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};

use apiary_cluster_model::ClusterModel;

use crate::clock::ScaledClock;
use crate::faults::Faults;
use crate::log::RequestLog;
use crate::options::SimOptions;

/// How `Simulator::end_watches` and `Simulator::break_watches` end open watch streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchEnd {
    /// The stream ends normally (as after `timeoutSeconds`).
    Close,
    /// The connection is aborted mid-stream.
    Break,
}

/// State shared by the accept loop, the connections, the clock task and the `Simulator` handle.
pub(crate) struct Shared {
    model: Mutex<ClusterModel>,
    pub(crate) clock: ScaledClock,
    pub(crate) faults: Faults,
    pub(crate) log: RequestLog,
    /// The model's resourceVersion as last published; watches wait on it.
    pub(crate) changes: tokio::sync::watch::Sender<u64>,
    /// Orders to end every open watch stream.
    pub(crate) watch_ends: tokio::sync::broadcast::Sender<WatchEnd>,
    pub(crate) options: SimOptions,
    pub(crate) addr: SocketAddr,
}

impl Shared {
    /// The state of a simulator serving `model` on `addr`.
    pub(crate) fn new(
        model: ClusterModel,
        clock: ScaledClock,
        options: SimOptions,
        addr: SocketAddr,
    ) -> Shared {
        let (changes, _) = tokio::sync::watch::channel(0u64);
        let (watch_ends, _) = tokio::sync::broadcast::channel(8);
        Shared {
            model: Mutex::new(model),
            clock,
            faults: Faults::new(options.fault_seed),
            log: RequestLog::default(),
            changes,
            watch_ends,
            options,
            addr,
        }
    }

    /// Locks the model after advancing its clock to now.
    pub(crate) fn model(&self) -> MutexGuard<'_, ClusterModel> {
        // A panic while holding the lock leaves the model as it was between two whole operations.
        let mut m = self.model.lock().unwrap_or_else(|p| p.into_inner());
        m.advance_to(self.clock.now());
        m
    }

    /// Wakes every watch when the model's resourceVersion moved since the last wake-up.
    pub(crate) fn publish(&self) {
        let rv = self.model().resource_version();
        self.publish_rv(rv);
    }

    /// Wakes every watch when `rv` differs from the last published resourceVersion.
    pub(crate) fn publish_rv(&self, rv: u64) {
        self.changes.send_if_modified(|last| {
            let moved = *last != rv;
            *last = rv;
            moved
        });
    }
}
