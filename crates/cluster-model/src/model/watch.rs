//! The watch event log: every change as a [`WatchEvent`] (ADDED / MODIFIED / DELETED with its
//! resourceVersion), a bounded length, and the compaction horizon below which a watch or a
//! continue token has expired.
//!
//! Layer: part of the pure model; plain data. It assigns no resourceVersions (the model's one
//! counter does) and reads no clock.

use std::collections::VecDeque;

use super::object::Object;
use crate::error::ModelError;

/// How many watch events the log keeps by default before compacting the oldest.
pub const DEFAULT_EVENT_CAPACITY: usize = 10_000;

/// The kind of change a [`WatchEvent`] reports (`type` on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`: the object was created.
    Added,
    /// `MODIFIED`: the object changed (status, deletion mark).
    Modified,
    /// `DELETED`: the object was removed from the store.
    Deleted,
}

impl EventType {
    /// The wire spelling: `ADDED`, `MODIFIED`, `DELETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One entry of the watch event log.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchEvent {
    /// ADDED, MODIFIED or DELETED.
    pub event_type: EventType,
    /// The resourceVersion of this change (also the object's `metadata.resourceVersion`).
    pub resource_version: u64,
    /// The object after the change (for DELETED: its last state, stamped with the deletion rv).
    pub object: Object,
}

/// The log: events oldest first, at most `capacity` of them, and the horizon (the highest
/// resourceVersion compacted away).
#[derive(Clone, Debug)]
pub(crate) struct EventLog {
    events: VecDeque<WatchEvent>,
    capacity: usize,
    horizon: u64,
}

impl Default for EventLog {
    fn default() -> Self {
        Self {
            events: VecDeque::new(),
            capacity: DEFAULT_EVENT_CAPACITY,
            horizon: 0,
        }
    }
}

impl EventLog {
    /// Append an event, compacting the oldest beyond the capacity.
    pub(crate) fn record(&mut self, event: WatchEvent) {
        self.events.push_back(event);
        self.trim();
    }

    /// Every event after `after`, oldest first.
    ///
    /// # Errors
    /// `Expired` (`too old resource version: X (H)`) when `after` is below the horizon H.
    pub(crate) fn since(&self, after: u64) -> Result<Vec<WatchEvent>, ModelError> {
        if after < self.horizon {
            return Err(ModelError::Expired {
                message: format!("too old resource version: {after} ({})", self.horizon),
            });
        }
        Ok(self
            .events
            .iter()
            .filter(|e| e.resource_version > after)
            .cloned()
            .collect())
    }

    /// The oldest resourceVersion a watch or continue token may still start from.
    pub(crate) fn horizon(&self) -> u64 {
        self.horizon
    }

    /// How many events the log holds.
    pub(crate) fn len(&self) -> usize {
        self.events.len()
    }

    /// Discard every event; the horizon moves to `counter` (the latest resourceVersion).
    pub(crate) fn compact(&mut self, counter: u64) {
        self.events.clear();
        self.horizon = counter;
    }

    /// Keep at most `capacity` events from now on (compacting the oldest at once).
    pub(crate) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.trim();
    }

    fn trim(&mut self) {
        while self.events.len() > self.capacity {
            if let Some(dropped) = self.events.pop_front() {
                self.horizon = self.horizon.max(dropped.resource_version);
            }
        }
    }
}

#[cfg(test)]
mod tests;
