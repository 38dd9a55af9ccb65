//! The request log: every request the simulator received, in arrival order, with its method,
//! path, raw query, body, the verb it was routed to, whether a fault was injected and the status
//! answered.
//!
//! Layer: a shared append-only record for tests to assert on ("no-op means zero mutation" is a
//! statement about this log). It never influences how a request is answered.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::route::{Query, Resource, Verb};

/// One logged request.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedRequest {
    /// The HTTP method (`GET`, `POST`, `DELETE`, …).
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The raw query string, without the `?` (empty when none).
    pub query: String,
    /// The request body as text (lossy UTF-8; empty when none).
    pub body: String,
    /// The resource and Kubernetes verb, when the path is a served resource.
    pub target: Option<(Resource, Verb)>,
    /// Whether a fault rule or denial answered this request.
    pub faulted: bool,
    /// The HTTP status answered; `None` when the connection was dropped.
    pub status: Option<u16>,
}

impl LoggedRequest {
    /// The decoded value of query parameter `key` (first occurrence).
    pub fn query_param(&self, key: &str) -> Option<String> {
        Query::parse(&self.query).get(key).map(str::to_owned)
    }

    /// The body parsed as JSON, if it is JSON.
    pub fn body_json(&self) -> Option<serde_json::Value> {
        serde_json::from_str(&self.body).ok()
    }

    /// Whether this request was `verb` on `resource`.
    pub fn is(&self, verb: Verb, resource: Resource) -> bool {
        self.target == Some((resource, verb))
    }

    /// Whether this request could change state (POST, PUT, PATCH or DELETE).
    pub fn is_mutation(&self) -> bool {
        matches!(self.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE")
    }
}

/// The shared request log.
#[derive(Debug, Clone, Default)]
pub struct RequestLog {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: Vec<LoggedRequest>,
    /// Bumped by every clear, so a late status never lands on a newer entry.
    generation: u64,
}

/// Position of an entry, used to fill in its status once answered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    index: usize,
    generation: u64,
}

impl RequestLog {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Entries are appended whole; a poisoned lock still holds a consistent log.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn push(&self, entry: LoggedRequest) -> Slot {
        let mut inner = self.lock();
        inner.entries.push(entry);
        Slot {
            index: inner.entries.len() - 1,
            generation: inner.generation,
        }
    }

    pub(crate) fn set_status(&self, slot: Slot, status: Option<u16>) {
        let mut inner = self.lock();
        if slot.generation != inner.generation {
            return;
        }
        if let Some(entry) = inner.entries.get_mut(slot.index) {
            entry.status = status;
        }
    }

    /// A snapshot of every logged request.
    pub fn snapshot(&self) -> Vec<LoggedRequest> {
        self.lock().entries.clone()
    }

    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.entries.clear();
        inner.generation += 1;
    }
}
