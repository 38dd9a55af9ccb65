//! What the fault proxy records and what its tasks share: the latency it adds, its request log
//! (cleared by generation, so a late byte count never lands on a newer entry) and its totals.
//!
//! Layer: test infrastructure, plain shared state behind locks and atomics. Records request
//! bodies as the client sent them and never the admin token.

use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use apiary_apiserver_sim::{Faults, LoggedRequest};

use super::upstream::Upstream;

/// The fixed delays the latency knob adds: one before forwarding each request, one before
/// returning each response head (faulted answers included), as a network `request` and
/// `response` one-way trip would.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Latency {
    /// Added before a request is forwarded (or answered by a fault).
    pub request: Duration,
    /// Added before a response head is returned to the client.
    pub response: Duration,
}

impl Latency {
    /// The same delay each way: `one_way` per request and `one_way` per response.
    pub fn symmetric(one_way: Duration) -> Latency {
        Latency {
            request: one_way,
            response: one_way,
        }
    }
}

/// Totals since start or the last [`FaultProxy::clear`](crate::proxy::FaultProxy::clear).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Requests received from clients.
    pub requests: u64,
    /// Requests forwarded to the upstream (not answered by a fault).
    pub forwarded: u64,
    /// Requests answered (or dropped) by a fault.
    pub faulted: u64,
    /// Request body bytes received from clients.
    pub bytes_from_client: u64,
    /// Response body bytes received from the upstream, as they went over the wire (compressed
    /// when the upstream compressed).
    pub bytes_from_upstream: u64,
}

/// One request as the proxy saw it.
///
/// `Debug` leaves out Secret bodies (through [`LoggedRequest`]'s own `Debug`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProxiedRequest {
    /// Method, path, raw query, body, parsed verb and resource, whether a fault answered it,
    /// and the status answered (`None` when the connection was dropped, by a fault or because the
    /// upstream failed).
    pub request: LoggedRequest,
    /// Whether the request was sent to the upstream.
    pub forwarded: bool,
    /// Request body bytes received from the client.
    pub bytes_from_client: u64,
    /// Response body bytes received from the upstream so far (a watch keeps growing).
    pub bytes_from_upstream: u64,
    /// The latency the knob actually added to this request (request and response delays as
    /// slept; at least the configured values).
    pub added_latency: Duration,
    /// Why the upstream exchange failed, when it did (connect, TLS or HTTP error; never a token).
    pub upstream_error: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct Record {
    pub(super) entries: Vec<ProxiedRequest>,
    /// Bumped by every clear, so late byte counts never land on a newer entry.
    pub(super) generation: u64,
}

#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub(super) index: usize,
    pub(super) generation: u64,
}

#[derive(Default)]
pub(super) struct Totals {
    pub(super) requests: AtomicU64,
    pub(super) forwarded: AtomicU64,
    pub(super) faulted: AtomicU64,
    pub(super) bytes_from_client: AtomicU64,
    pub(super) bytes_from_upstream: AtomicU64,
}

pub(super) struct Shared {
    pub(super) upstream: Upstream,
    pub(super) faults: Faults,
    pub(super) latency: Mutex<Latency>,
    pub(super) date_shift: Mutex<Duration>,
    pub(super) record: Mutex<Record>,
    pub(super) totals: Totals,
}

impl Shared {
    pub(super) fn record(&self) -> MutexGuard<'_, Record> {
        // Entries are appended and updated whole; a poisoned lock still holds a consistent log.
        self.record.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn latency(&self) -> Latency {
        *self.latency.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn push(&self, entry: ProxiedRequest) -> Slot {
        let mut r = self.record();
        r.entries.push(entry);
        Slot {
            index: r.entries.len() - 1,
            generation: r.generation,
        }
    }

    pub(super) fn update(&self, slot: Slot, f: impl FnOnce(&mut ProxiedRequest)) {
        let mut r = self.record();
        if r.generation != slot.generation {
            return;
        }
        if let Some(e) = r.entries.get_mut(slot.index) {
            f(e);
        }
    }
}
