//! [`ClusterModel`]: the state of the in-memory apiserver + kubelet and its bookkeeping — the one
//! resourceVersion counter, uids, stamping, the clock reading and the watch event log. Each verb
//! lives in the child module named for it (`verbs` for what every kind shares, then
//! `namespaces`, `secrets`, `pods`, `service_accounts`, `nodes`, `scripting` for the kubelet, `clock`);
//! the plain data they work on lives in the leaf modules (`store`, `list`, `watch`, `runtime`,
//! `accounts`, `object`, `time`, `node_ready`, `quantity`), which know nothing of `ClusterModel`.
//!
//! Layer: pure state. Performs no I/O, spawns nothing and never reads a real clock.

use std::fmt;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use self::accounts::Accounts;
use self::runtime::Kubelet;
use self::store::{Store, Stored};
use self::watch::EventLog;
use crate::error::ModelError;

pub use self::list::{ListOptions, ListPage};
pub use self::log_store::{LogLine, LogQuery, LogRead};
pub use self::node_ready::NodeReady;
pub use self::object::{Object, PodDeletion};
pub use self::store::Preconditions;
pub use self::time::{DEFAULT_EPOCH_SECONDS, add};
pub use self::watch::{DEFAULT_EVENT_CAPACITY, EventType, WatchEvent};

mod accounts;
mod annotate;
mod clock;
mod list;
mod log_store;
mod logs;
mod namespaces;
mod node_ready;
mod nodes;
mod object;
mod pods;
mod quantity;
mod runtime;
mod scripting;
mod secrets;
mod service_accounts;
mod store;
mod time;
mod verbs;
mod watch;

/// The in-memory apiserver + kubelet. See the crate docs for the semantics. `Debug` shows the
/// clock, the counter and object names, never Secret contents.
#[derive(Clone)]
pub struct ClusterModel {
    now: Timestamp,
    rv: u64,
    uids: u64,
    namespaces: Store<Namespace>,
    pods: Store<Pod>,
    secrets: Store<Secret>,
    nodes: Store<Node>,
    accounts: Accounts,
    events: EventLog,
    kubelet: Kubelet,
    logs: log_store::Logs,
}

impl fmt::Debug for ClusterModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |keys: &mut dyn Iterator<Item = &(String, String)>| -> Vec<String> {
            keys.map(|(ns, name)| format!("{ns}/{name}")).collect()
        };
        f.debug_struct("ClusterModel")
            .field("now", &self.now)
            .field("resource_version", &self.rv)
            .field(
                "namespaces",
                &self.namespaces.keys().map(|k| &k.1).collect::<Vec<_>>(),
            )
            .field("pods", &names(&mut self.pods.keys()))
            .field("secrets", &names(&mut self.secrets.keys()))
            .field(
                "nodes",
                &self.nodes.keys().map(|k| &k.1).collect::<Vec<_>>(),
            )
            .field("events", &self.events.len())
            .field("horizon", &self.events.horizon())
            .finish_non_exhaustive()
    }
}

impl Default for ClusterModel {
    fn default() -> Self {
        // DEFAULT_EPOCH_SECONDS is a valid timestamp (2026), so this never falls back.
        Self::new(Timestamp::from_second(DEFAULT_EPOCH_SECONDS).unwrap_or(Timestamp::UNIX_EPOCH))
    }
}

impl ClusterModel {
    /// An empty cluster (no namespaces) whose clock reads `now`.
    pub fn new(now: Timestamp) -> Self {
        Self {
            now,
            rv: 0,
            uids: 0,
            namespaces: Store::default(),
            pods: Store::default(),
            secrets: Store::default(),
            nodes: Store::default(),
            accounts: Accounts::default(),
            events: EventLog::default(),
            kubelet: Kubelet::default(),
            logs: log_store::Logs::default(),
        }
    }

    /// The model clock.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The current resourceVersion counter (the rv of the latest change; 0 before any).
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// Every event with a resourceVersion greater than `after`, oldest first (all kinds and
    /// namespaces; filter with [`Object::kind`], [`Object::metadata`] and [`Object::matches`]).
    ///
    /// # Errors
    /// `Expired` (`too old resource version: X (H)`) when `after` is below the compaction
    /// horizon H: events after it were discarded.
    pub fn events_since(&self, after: u64) -> Result<Vec<WatchEvent>, ModelError> {
        self.events.since(after)
    }

    /// The oldest resourceVersion a watch or continue token may still start from.
    pub fn compaction_horizon(&self) -> u64 {
        self.events.horizon()
    }

    /// Discard the whole event log: watches from any resourceVersion below the current counter
    /// and every outstanding continue token now answer 410 `Expired`.
    pub fn compact(&mut self) {
        self.events.compact(self.rv);
    }

    /// Keep at most `capacity` events; older ones are compacted as they fall out.
    pub fn set_event_capacity(&mut self, capacity: usize) {
        self.events.set_capacity(capacity);
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn next_uid(&mut self) -> String {
        self.uids += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.uids)
    }

    /// Log a change of `object` at `rv` (nothing for kinds without events).
    fn record<T: Stored>(&mut self, event_type: EventType, rv: u64, object: &T) {
        if let Some(object) = object.to_object() {
            self.events.record(WatchEvent {
                event_type,
                resource_version: rv,
                object,
            });
        }
    }

    /// Stamp uid, resourceVersion and creationTimestamp for a create: ignores whatever the
    /// request carried there.
    fn stamp_new(&mut self, meta: &mut ObjectMeta, namespace: Option<&str>) -> u64 {
        let rv = self.next_rv();
        meta.uid = Some(self.next_uid());
        meta.resource_version = Some(rv.to_string());
        meta.creation_timestamp = Some(Time(self.now));
        meta.deletion_timestamp = None;
        meta.deletion_grace_period_seconds = None;
        meta.generation = Some(1);
        meta.namespace = namespace.map(str::to_owned);
        rv
    }

    /// Stamp an inserted object: keeps what it carries, fills what is missing (see
    /// [`ClusterModel::insert_pod`]).
    fn stamp_insert(&mut self, meta: &mut ObjectMeta) -> u64 {
        let explicit = meta
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok());
        let rv = match explicit {
            Some(explicit) if explicit > self.rv => {
                self.rv = explicit;
                explicit
            }
            _ => self.next_rv(),
        };
        meta.resource_version = Some(rv.to_string());
        if meta.uid.as_deref().is_none_or(str::is_empty) {
            meta.uid = Some(self.next_uid());
        }
        if meta.creation_timestamp.is_none() {
            meta.creation_timestamp = Some(Time(self.now));
        }
        rv
    }
}

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;
