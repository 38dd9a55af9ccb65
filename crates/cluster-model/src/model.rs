//! [`ClusterModel`]: the object store (namespaces, pods, Secrets), the resourceVersion counter,
//! the watch event log, graceful deletion and the kubelet scheduler, driven by a clock the
//! caller advances. Pure state: performs no I/O, spawns nothing and never reads a real clock.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, NamespaceStatus, Pod, PodStatus, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::error::{Kind, ModelError};
use crate::kubelet::sequence::{Moment, Outcome, Progress, Resources};
use crate::kubelet::{self, Placement, PodScript, Stage};
use crate::selector::{FieldSelector, HasFields, LabelSelector};

/// The clock reading a default model starts at: 2026-08-02T04:00:00Z.
pub const DEFAULT_EPOCH_SECONDS: i64 = 1_785_643_200;

/// How long a pod waiting `CreateContainerConfigError` waits before the kubelet checks again
/// (creating a Secret in its namespace makes it check at once instead).
pub const CONFIG_ERROR_RETRY: Duration = Duration::from_secs(10);

/// How many watch events the log keeps by default before compacting the oldest.
pub const DEFAULT_EVENT_CAPACITY: usize = 10_000;

type Key = (String, String);

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

/// An object of any stored kind. `Debug` shows a Secret's name and keys, never its values.
#[allow(clippy::large_enum_variant)] // reason: plain values matched by the simulator; boxing adds noise for no measurable gain.
#[derive(Clone, PartialEq)]
pub enum Object {
    /// A namespace.
    Namespace(Namespace),
    /// A pod.
    Pod(Pod),
    /// A Secret.
    Secret(Secret),
}

/// The names of a Secret's keys, for value-free `Debug` output.
fn secret_keys(secret: &Secret) -> Vec<&String> {
    let mut keys: Vec<&String> = secret
        .data
        .iter()
        .flat_map(BTreeMap::keys)
        .chain(secret.string_data.iter().flat_map(BTreeMap::keys))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Namespace(o) => f.debug_tuple("Namespace").field(o).finish(),
            Self::Pod(o) => f.debug_tuple("Pod").field(o).finish(),
            Self::Secret(o) => f
                .debug_struct("Secret")
                .field("metadata", &o.metadata)
                .field("keys", &secret_keys(o))
                .field("immutable", &o.immutable)
                .finish_non_exhaustive(),
        }
    }
}

impl Object {
    /// The object's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Self::Namespace(_) => Kind::Namespace,
            Self::Pod(_) => Kind::Pod,
            Self::Secret(_) => Kind::Secret,
        }
    }

    /// The object's metadata.
    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            Self::Namespace(o) => &o.metadata,
            Self::Pod(o) => &o.metadata,
            Self::Secret(o) => &o.metadata,
        }
    }

    /// Whether the object matches the selectors (absent = match everything). Field selectors
    /// must have been parsed for this object's kind.
    pub fn matches(&self, labels: &LabelSelector, fields: &FieldSelector) -> bool {
        labels.matches(self.metadata().labels.as_ref())
            && match self {
                Self::Namespace(o) => fields.matches(o),
                Self::Pod(o) => fields.matches(o),
                Self::Secret(o) => fields.matches(o),
            }
    }

    /// The object as the apiserver serializes it (with `apiVersion` and `kind`).
    pub fn to_json(&self) -> serde_json::Value {
        let value = match self {
            Self::Namespace(o) => serde_json::to_value(o),
            Self::Pod(o) => serde_json::to_value(o),
            Self::Secret(o) => serde_json::to_value(o),
        };
        // k8s-openapi objects serialize infallibly (plain maps, strings and numbers).
        value.unwrap_or(serde_json::Value::Null)
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

/// Delete preconditions (`DeleteOptions.preconditions`); `None` fields are not checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The uid the object must have.
    pub uid: Option<String>,
    /// The resourceVersion the object must have.
    pub resource_version: Option<String>,
}

/// What a successful pod delete did.
#[derive(Clone, Debug, PartialEq)]
pub enum PodDeletion {
    /// Removed from the store at once (terminal or unscheduled pod, or grace 0); the pod's last
    /// state.
    Removed(Pod),
    /// Marked for graceful deletion: `deletionTimestamp` (= now + grace) and
    /// `deletionGracePeriodSeconds` set; removed once the grace has elapsed on the model clock.
    /// Deleting a pod that is already marked returns it unchanged.
    Marked(Pod),
}

impl PodDeletion {
    /// The pod the delete answered with.
    pub fn pod(&self) -> &Pod {
        match self {
            Self::Removed(p) | Self::Marked(p) => p,
        }
    }
}

/// List parameters (the query of a list request).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit`; `None` or 0 = everything.
    pub limit: Option<u64>,
    /// `continue`: a token from a previous page.
    pub continue_token: Option<String>,
}

/// One page of a list answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ListPage<T> {
    /// The objects, ordered by namespace then name.
    pub items: Vec<T>,
    /// `metadata.resourceVersion` of the list: the counter when the first page was served.
    pub resource_version: String,
    /// `metadata.continue`: present when more items match; opaque.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`: how many matching items follow this page.
    pub remaining_item_count: Option<i64>,
}

/// The simulated kubelet's per-pod bookkeeping.
#[derive(Clone, Debug)]
struct Runtime {
    script: PodScript,
    anchor: Timestamp,
    stage: Stage,
    due: Option<Timestamp>,
    delete_at: Option<Timestamp>,
    pull_attempts: u32,
    started_at: Option<Timestamp>,
    container_id: Option<String>,
    placement: Option<Placement>,
}

impl Runtime {
    fn next_at(&self) -> Option<Timestamp> {
        // A deletion-marked pod's kubelet is frozen: only its removal is pending.
        self.delete_at.or(self.due)
    }
}

/// Add a std duration to a timestamp, saturating at the end of time.
pub fn add(at: Timestamp, by: Duration) -> Timestamp {
    SignedDuration::try_from(by)
        .ok()
        .and_then(|d| at.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

fn hex_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for b in text.bytes() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn hex_decode(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

fn parse_rv(value: Option<&str>) -> Option<u64> {
    value.and_then(|v| v.parse().ok())
}

/// The in-memory apiserver + kubelet. See the crate docs for the semantics. `Debug` shows the
/// clock, the counter and object names, never Secret contents.
#[derive(Clone)]
pub struct ClusterModel {
    now: Timestamp,
    rv: u64,
    uids: u64,
    namespaces: BTreeMap<String, Namespace>,
    pods: BTreeMap<Key, Pod>,
    secrets: BTreeMap<Key, Secret>,
    runtimes: BTreeMap<Key, Runtime>,
    events: VecDeque<WatchEvent>,
    event_capacity: usize,
    horizon: u64,
    start_delay: Duration,
    default_script: Option<PodScript>,
    name_scripts: BTreeMap<Key, PodScript>,
    queued_scripts: BTreeMap<Key, VecDeque<PodScript>>,
    placements: u32,
    containers: u64,
    accounts: accounts::Accounts,
}

impl std::fmt::Debug for ClusterModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |keys: &mut dyn Iterator<Item = &Key>| -> Vec<String> {
            keys.map(|(ns, name)| format!("{ns}/{name}")).collect()
        };
        f.debug_struct("ClusterModel")
            .field("now", &self.now)
            .field("resource_version", &self.rv)
            .field("namespaces", &self.namespaces.keys().collect::<Vec<_>>())
            .field("pods", &names(&mut self.pods.keys()))
            .field("secrets", &names(&mut self.secrets.keys()))
            .field("events", &self.events.len())
            .field("horizon", &self.horizon)
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
            namespaces: BTreeMap::new(),
            pods: BTreeMap::new(),
            secrets: BTreeMap::new(),
            runtimes: BTreeMap::new(),
            events: VecDeque::new(),
            event_capacity: DEFAULT_EVENT_CAPACITY,
            horizon: 0,
            start_delay: Duration::from_secs(1),
            default_script: None,
            name_scripts: BTreeMap::new(),
            queued_scripts: BTreeMap::new(),
            placements: 0,
            containers: 0,
            accounts: accounts::Accounts::default(),
        }
    }

    // ---- clock ---------------------------------------------------------------------------

    /// The model clock.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Advance the clock by `by`, running every kubelet step and graceful removal that falls due
    /// on the way, each at its own due time (in time order; ties in namespace/name order).
    pub fn advance(&mut self, by: Duration) {
        self.advance_to(add(self.now, by));
    }

    /// Move the clock to `at` (as [`ClusterModel::advance`]). The clock never goes backwards:
    /// an earlier `at` only runs what is already due.
    pub fn advance_to(&mut self, at: Timestamp) {
        loop {
            let pod = self.next_due_entry();
            // The ServiceAccount controller's pending creations run in time order with the
            // kubelet's steps; on a tie the account comes first.
            if let Some((due, namespace)) = self.accounts.next_due()
                && due <= at
                && pod.as_ref().is_none_or(|(pod_due, _)| due <= *pod_due)
            {
                if due > self.now {
                    self.now = due;
                }
                self.create_due_account(&namespace);
                continue;
            }
            let Some((due, key)) = pod else { break };
            if due > at {
                break;
            }
            if due > self.now {
                self.now = due;
            }
            self.run_due(&key);
        }
        if at > self.now {
            self.now = at;
        }
    }

    /// Same as [`ClusterModel::advance_to`]; the name the simulator's scaled clock uses.
    pub fn set_now(&mut self, at: Timestamp) {
        self.advance_to(at);
    }

    /// Run whatever is due at the current time without moving the clock (for example the
    /// scheduling of a pod created just now).
    pub fn settle(&mut self) {
        self.advance_to(self.now);
    }

    /// When the next kubelet step or graceful removal is due, if any.
    pub fn next_due(&self) -> Option<Timestamp> {
        let pod = self.next_due_entry().map(|(t, _)| t);
        let account = self.accounts.next_due().map(|(t, _)| t);
        pod.into_iter().chain(account).min()
    }

    fn next_due_entry(&self) -> Option<(Timestamp, Key)> {
        self.runtimes
            .iter()
            .filter_map(|(k, r)| r.next_at().map(|t| (t, k.clone())))
            .min()
    }

    // ---- counters and stamping -----------------------------------------------------------

    /// The current resourceVersion counter (the rv of the latest change; 0 before any).
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn next_uid(&mut self) -> String {
        self.uids += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.uids)
    }

    fn record(&mut self, event_type: EventType, rv: u64, object: Object) {
        self.events.push_back(WatchEvent {
            event_type,
            resource_version: rv,
            object,
        });
        while self.events.len() > self.event_capacity {
            if let Some(dropped) = self.events.pop_front() {
                self.horizon = self.horizon.max(dropped.resource_version);
            }
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
        let rv = match parse_rv(meta.resource_version.as_deref()) {
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

    fn bad_namespace(meta: &ObjectMeta, namespace: &str) -> Result<(), ModelError> {
        match meta.namespace.as_deref() {
            Some(ns) if !ns.is_empty() && ns != namespace => Err(ModelError::BadRequest {
                message: "the namespace of the provided object does not match the namespace \
                          sent on the request"
                    .to_owned(),
            }),
            _ => Ok(()),
        }
    }

    fn required_name(kind: Kind, meta: &ObjectMeta) -> Result<String, ModelError> {
        match meta.name.as_deref() {
            Some(name) if !name.is_empty() => Ok(name.to_owned()),
            _ => Err(ModelError::Invalid {
                kind,
                name: String::new(),
                detail: "metadata.name: Required value: name or generateName is required"
                    .to_owned(),
            }),
        }
    }

    fn require_namespace(&self, namespace: &str) -> Result<(), ModelError> {
        if self.namespaces.contains_key(namespace) {
            Ok(())
        } else {
            Err(ModelError::NotFound {
                kind: Kind::Namespace,
                name: namespace.to_owned(),
            })
        }
    }

    // ---- namespaces ----------------------------------------------------------------------

    /// Create a namespace (status phase `Active`, label `kubernetes.io/metadata.name`).
    ///
    /// # Errors
    /// `Invalid` without a name; `AlreadyExists` when it exists.
    pub fn create_namespace(&mut self, mut namespace: Namespace) -> Result<Namespace, ModelError> {
        let name = Self::required_name(Kind::Namespace, &namespace.metadata)?;
        if self.namespaces.contains_key(&name) {
            return Err(ModelError::AlreadyExists {
                kind: Kind::Namespace,
                name,
            });
        }
        let rv = self.stamp_new(&mut namespace.metadata, None);
        namespace
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("kubernetes.io/metadata.name".to_owned(), name.clone());
        namespace.status = Some(NamespaceStatus {
            phase: Some("Active".to_owned()),
            ..NamespaceStatus::default()
        });
        self.namespaces.insert(name.clone(), namespace.clone());
        self.record(EventType::Added, rv, Object::Namespace(namespace.clone()));
        self.schedule_default_account(&name);
        Ok(namespace)
    }

    /// Create the namespace `name` unless it exists; returns it either way.
    pub fn ensure_namespace(&mut self, name: &str) -> Namespace {
        if let Some(existing) = self.namespaces.get(name) {
            return existing.clone();
        }
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        match self.create_namespace(namespace) {
            Ok(created) => created,
            // Unreachable: the name is non-empty and was just checked to be free.
            Err(_) => self.namespaces.get(name).cloned().unwrap_or_default(),
        }
    }

    /// Read a namespace.
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn get_namespace(&self, name: &str) -> Result<Namespace, ModelError> {
        self.namespaces
            .get(name)
            .cloned()
            .ok_or_else(|| ModelError::NotFound {
                kind: Kind::Namespace,
                name: name.to_owned(),
            })
    }

    /// List namespaces.
    ///
    /// # Errors
    /// `BadRequest` for a malformed selector or continue token; `Expired` for a compacted token.
    pub fn list_namespaces(
        &self,
        options: &ListOptions,
    ) -> Result<ListPage<Namespace>, ModelError> {
        let all = self
            .namespaces
            .iter()
            .map(|(name, ns)| ((String::new(), name.clone()), ns));
        self.page(Kind::Namespace, all, options)
    }

    /// Delete a namespace and, at once, everything in it (DELETED events for each). The real
    /// apiserver passes through a `Terminating` phase first; the model does not.
    ///
    /// # Errors
    /// `NotFound`; `Conflict` when a precondition fails.
    pub fn delete_namespace(
        &mut self,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<Namespace, ModelError> {
        let existing = self.get_namespace(name)?;
        check_preconditions(Kind::Namespace, name, &existing.metadata, preconditions)?;
        let pods: Vec<Key> = self.pods.keys().filter(|k| k.0 == name).cloned().collect();
        for key in pods {
            self.remove_pod_key(&key);
        }
        let secrets: Vec<Key> = self
            .secrets
            .keys()
            .filter(|k| k.0 == name)
            .cloned()
            .collect();
        for key in secrets {
            self.remove_secret_key(&key);
        }
        self.forget_accounts(name);
        let mut namespace = self.namespaces.remove(name).unwrap_or(existing);
        let rv = self.next_rv();
        namespace.metadata.resource_version = Some(rv.to_string());
        self.record(EventType::Deleted, rv, Object::Namespace(namespace.clone()));
        Ok(namespace)
    }

    // ---- Secrets -------------------------------------------------------------------------

    /// Create a Secret: `stringData` is merged into `data` and dropped, `type` defaults to
    /// `Opaque`, `immutable` is kept (the model has no update verb, so an immutable Secret's
    /// payload can never change).
    ///
    /// # Errors
    /// `NotFound` (kind Namespace) when `namespace` does not exist; `BadRequest` when the object
    /// names another namespace; `Invalid` without a name; `AlreadyExists` when the name is taken.
    pub fn create_secret(
        &mut self,
        namespace: &str,
        mut secret: Secret,
    ) -> Result<Secret, ModelError> {
        Self::bad_namespace(&secret.metadata, namespace)?;
        let name = Self::required_name(Kind::Secret, &secret.metadata)?;
        self.require_namespace(namespace)?;
        let key = (namespace.to_owned(), name.clone());
        if self.secrets.contains_key(&key) {
            return Err(ModelError::AlreadyExists {
                kind: Kind::Secret,
                name,
            });
        }
        let rv = self.stamp_new(&mut secret.metadata, Some(namespace));
        normalize_secret(&mut secret);
        self.secrets.insert(key, secret.clone());
        self.record(EventType::Added, rv, Object::Secret(secret.clone()));
        self.wake_config_errors(namespace);
        Ok(secret)
    }

    /// Insert a Secret directly (a test hook): as [`ClusterModel::insert_pod`] — keeps its
    /// uid, creationTimestamp and a resourceVersion above the counter, creates the namespace
    /// when missing.
    ///
    /// # Errors
    /// `Invalid` without a name or namespace; `AlreadyExists` when the name is taken.
    pub fn insert_secret(&mut self, mut secret: Secret) -> Result<Secret, ModelError> {
        let name = Self::required_name(Kind::Secret, &secret.metadata)?;
        let namespace = Self::required_namespace(Kind::Secret, &name, &secret.metadata)?;
        let key = (namespace.clone(), name.clone());
        if self.secrets.contains_key(&key) {
            return Err(ModelError::AlreadyExists {
                kind: Kind::Secret,
                name,
            });
        }
        self.ensure_namespace(&namespace);
        let rv = self.stamp_insert(&mut secret.metadata);
        normalize_secret(&mut secret);
        self.secrets.insert(key, secret.clone());
        self.record(EventType::Added, rv, Object::Secret(secret.clone()));
        self.wake_config_errors(&namespace);
        Ok(secret)
    }

    fn required_namespace(kind: Kind, name: &str, meta: &ObjectMeta) -> Result<String, ModelError> {
        match meta.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => Ok(ns.to_owned()),
            _ => Err(ModelError::Invalid {
                kind,
                name: name.to_owned(),
                detail: "metadata.namespace: Required value".to_owned(),
            }),
        }
    }

    /// Read a Secret.
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn get_secret(&self, namespace: &str, name: &str) -> Result<Secret, ModelError> {
        self.secrets
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
            .ok_or_else(|| ModelError::NotFound {
                kind: Kind::Secret,
                name: name.to_owned(),
            })
    }

    /// List Secrets in `namespace` (`None`: all namespaces).
    ///
    /// # Errors
    /// `BadRequest` for a malformed selector or continue token; `Expired` for a compacted token.
    pub fn list_secrets(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ListPage<Secret>, ModelError> {
        let all = self
            .secrets
            .iter()
            .filter(|(k, _)| namespace.is_none_or(|ns| k.0 == ns))
            .map(|(k, s)| (k.clone(), s));
        self.page(Kind::Secret, all, options)
    }

    /// Delete a Secret (removed at once).
    ///
    /// # Errors
    /// `NotFound`; `Conflict` when a precondition fails.
    pub fn delete_secret(
        &mut self,
        namespace: &str,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<Secret, ModelError> {
        let existing = self.get_secret(namespace, name)?;
        check_preconditions(Kind::Secret, name, &existing.metadata, preconditions)?;
        Ok(self
            .remove_secret_key(&(namespace.to_owned(), name.to_owned()))
            .unwrap_or(existing))
    }

    fn remove_secret_key(&mut self, key: &Key) -> Option<Secret> {
        let mut secret = self.secrets.remove(key)?;
        let rv = self.next_rv();
        secret.metadata.resource_version = Some(rv.to_string());
        self.record(EventType::Deleted, rv, Object::Secret(secret.clone()));
        Some(secret)
    }

    // ---- pods ----------------------------------------------------------------------------

    /// Create a pod: stamps metadata, resets `status` to `{phase: Pending, qosClass}`, defaults
    /// `terminationGracePeriodSeconds` to 30 and `restartPolicy` to `Always`, and attaches a
    /// kubelet script: the next one queued for this name ([`ClusterModel::queue_pod_scripts`]),
    /// else the one set for this name ([`ClusterModel::script_pods_named`]), else the image
    /// convention ([`PodScript::from_image`]), else the default script. The kubelet's first step
    /// (scheduling) is due at the creation time and runs at the next clock movement or
    /// [`ClusterModel::settle`].
    ///
    /// # Errors
    /// `NotFound` (kind Namespace, message `namespaces "X" not found`) when the namespace does
    /// not exist; `BadRequest` when the object names another namespace; `Invalid` without a
    /// name; `AlreadyExists` when the name is taken.
    pub fn create_pod(&mut self, namespace: &str, mut pod: Pod) -> Result<Pod, ModelError> {
        Self::bad_namespace(&pod.metadata, namespace)?;
        let name = Self::required_name(Kind::Pod, &pod.metadata)?;
        self.require_namespace(namespace)?;
        let key = (namespace.to_owned(), name.clone());
        // Admission runs before storage, so a missing account is refused even under a taken name.
        self.admit_service_account(namespace, &name, &pod)?;
        if self.pods.contains_key(&key) {
            return Err(ModelError::AlreadyExists {
                kind: Kind::Pod,
                name,
            });
        }
        let rv = self.stamp_new(&mut pod.metadata, Some(namespace));
        let spec = pod.spec.get_or_insert_with(Default::default);
        spec.termination_grace_period_seconds.get_or_insert(30);
        spec.restart_policy
            .get_or_insert_with(|| "Always".to_owned());
        spec.node_name = None;
        pod.status = Some(PodStatus {
            phase: Some("Pending".to_owned()),
            qos_class: Some(kubelet::qos_class(&pod).to_owned()),
            ..PodStatus::default()
        });
        let script = self.script_for_new_pod(&key, &pod);
        self.pods.insert(key.clone(), pod.clone());
        self.attach(key, script, Stage::Created);
        self.record(EventType::Added, rv, Object::Pod(pod.clone()));
        Ok(pod)
    }

    fn script_for_new_pod(&mut self, key: &Key, pod: &Pod) -> PodScript {
        if let Some(queue) = self.queued_scripts.get_mut(key)
            && let Some(script) = queue.pop_front()
        {
            return script;
        }
        if let Some(script) = self.name_scripts.get(key) {
            return script.clone();
        }
        PodScript::from_pod(pod, self.start_delay)
            .or_else(|| self.default_script.clone())
            .unwrap_or(PodScript::Start {
                after: self.start_delay,
            })
    }

    fn attach(&mut self, key: Key, script: PodScript, stage: Stage) {
        let mut runtime = Runtime {
            script,
            anchor: self.now,
            stage,
            due: None,
            delete_at: None,
            pull_attempts: 0,
            started_at: None,
            container_id: None,
            placement: None,
        };
        if let Some(previous) = self.runtimes.remove(&key) {
            runtime.delete_at = previous.delete_at;
            runtime.started_at = previous.started_at;
            runtime.container_id = previous.container_id;
            runtime.placement = previous.placement;
            runtime.pull_attempts = previous.pull_attempts;
        }
        runtime.due = initial_due(&runtime);
        self.runtimes.insert(key, runtime);
    }

    /// Insert a pod directly (a test hook: a foreign pod, a race winner, residue with a chosen
    /// age). Unlike a create it keeps what the pod carries — `status`, `spec.nodeName`, labels,
    /// `uid`, `creationTimestamp`, even a `deletionTimestamp` (honoured: the pod is removed once
    /// the clock reaches it, so give a future one) — and only fills what is missing
    /// (uid, creationTimestamp = now). An explicit numeric `resourceVersion` greater than the
    /// counter is kept and moves the counter there; otherwise a fresh one is stamped. The
    /// namespace (from `metadata.namespace`) is created when missing. The kubelet leaves the pod
    /// alone ([`PodScript::Inert`]); use [`ClusterModel::insert_pod_with_script`] to script it.
    ///
    /// # Errors
    /// `Invalid` without a name or namespace; `AlreadyExists` when the name is taken.
    pub fn insert_pod(&mut self, pod: Pod) -> Result<Pod, ModelError> {
        self.insert_pod_with_script(pod, PodScript::Inert)
    }

    /// [`ClusterModel::insert_pod`] with a kubelet script, which starts from the pod's current
    /// shape: a pod inserted without a node is scheduled first; one already bound (with
    /// `spec.nodeName` or container statuses) continues from there.
    ///
    /// # Errors
    /// As [`ClusterModel::insert_pod`].
    pub fn insert_pod_with_script(
        &mut self,
        mut pod: Pod,
        script: PodScript,
    ) -> Result<Pod, ModelError> {
        let name = Self::required_name(Kind::Pod, &pod.metadata)?;
        let namespace = Self::required_namespace(Kind::Pod, &name, &pod.metadata)?;
        let key = (namespace.clone(), name.clone());
        if self.pods.contains_key(&key) {
            return Err(ModelError::AlreadyExists {
                kind: Kind::Pod,
                name,
            });
        }
        self.ensure_namespace(&namespace);
        let rv = self.stamp_insert(&mut pod.metadata);
        let stage = inferred_stage(&pod);
        let delete_at = pod.metadata.deletion_timestamp.as_ref().map(|t| t.0);
        self.pods.insert(key.clone(), pod.clone());
        self.attach(key.clone(), script, stage);
        if let Some(runtime) = self.runtimes.get_mut(&key) {
            runtime.delete_at = delete_at;
        }
        self.record(EventType::Added, rv, Object::Pod(pod.clone()));
        Ok(pod)
    }

    /// Read a pod.
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn get_pod(&self, namespace: &str, name: &str) -> Result<Pod, ModelError> {
        self.pods
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
            .ok_or_else(|| ModelError::NotFound {
                kind: Kind::Pod,
                name: name.to_owned(),
            })
    }

    /// List pods in `namespace` (`None`: all namespaces).
    ///
    /// # Errors
    /// `BadRequest` for a malformed selector or continue token; `Expired` for a compacted token.
    pub fn list_pods(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ListPage<Pod>, ModelError> {
        let all = self
            .pods
            .iter()
            .filter(|(k, _)| namespace.is_none_or(|ns| k.0 == ns))
            .map(|(k, p)| (k.clone(), p));
        self.page(Kind::Pod, all, options)
    }

    /// Delete a pod. Preconditions are checked first (uid, then resourceVersion → `Conflict`).
    /// A pod in phase `Succeeded`/`Failed`, or never bound (no `spec.nodeName` and no container
    /// statuses), or deleted with `grace_seconds` 0, is removed at once. Any other pod is marked:
    /// grace = `grace_seconds`, else its `terminationGracePeriodSeconds` (else 30);
    /// `deletionTimestamp` = now + grace, `deletionGracePeriodSeconds` = grace, rv bumped, a
    /// MODIFIED event; the kubelet stops scripting it and it is removed (DELETED) when the grace
    /// has elapsed on the model clock. A second delete of a marked pod returns it unchanged
    /// (or removes it at once with `grace_seconds` 0).
    ///
    /// # Errors
    /// `NotFound`; `Conflict` when a precondition fails.
    pub fn delete_pod(
        &mut self,
        namespace: &str,
        name: &str,
        preconditions: &Preconditions,
        grace_seconds: Option<i64>,
    ) -> Result<PodDeletion, ModelError> {
        let existing = self.get_pod(namespace, name)?;
        check_preconditions(Kind::Pod, name, &existing.metadata, preconditions)?;
        let key = (namespace.to_owned(), name.to_owned());
        let force = grace_seconds == Some(0);
        if existing.metadata.deletion_timestamp.is_some() && !force {
            return Ok(PodDeletion::Marked(existing));
        }
        let grace = grace_seconds
            .or_else(|| {
                existing
                    .spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
            })
            .unwrap_or(30)
            .max(0);
        if grace == 0 || !is_graceful(&existing) {
            // As the apiserver: the zero grace is written first (a MODIFIED event carrying
            // `deletionTimestamp` and `deletionGracePeriodSeconds: 0`), then the pod is removed;
            // the answer is that last state. A mark keeps the time of the first delete.
            let mut pod = existing;
            let requested_at = match (
                &pod.metadata.deletion_timestamp,
                pod.metadata.deletion_grace_period_seconds,
            ) {
                (Some(Time(at)), Some(old_grace)) => at
                    .checked_sub(SignedDuration::from_secs(old_grace))
                    .unwrap_or(self.now),
                _ => self.now,
            };
            pod.metadata.deletion_timestamp = Some(Time(requested_at));
            pod.metadata.deletion_grace_period_seconds = Some(0);
            self.store_modified(&key, pod.clone());
            let removed = self.remove_pod_key(&key).unwrap_or(pod);
            return Ok(PodDeletion::Removed(removed));
        }
        let delete_at = add(self.now, Duration::from_secs(grace.unsigned_abs()));
        let rv = self.next_rv();
        let mut pod = existing;
        pod.metadata.deletion_timestamp = Some(Time(delete_at));
        pod.metadata.deletion_grace_period_seconds = Some(grace);
        pod.metadata.resource_version = Some(rv.to_string());
        self.pods.insert(key.clone(), pod.clone());
        if let Some(runtime) = self.runtimes.get_mut(&key) {
            runtime.delete_at = Some(delete_at);
        }
        self.record(EventType::Modified, rv, Object::Pod(pod.clone()));
        Ok(PodDeletion::Marked(pod))
    }

    /// Remove a pod from the store at once, whatever its state (a test hook for "the pod
    /// vanishes": eviction, node loss, someone else's force delete). Returns its last state.
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn remove_pod(&mut self, namespace: &str, name: &str) -> Result<Pod, ModelError> {
        self.remove_pod_key(&(namespace.to_owned(), name.to_owned()))
            .ok_or_else(|| ModelError::NotFound {
                kind: Kind::Pod,
                name: name.to_owned(),
            })
    }

    /// Remove a Secret from the store at once (a test hook).
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn remove_secret(&mut self, namespace: &str, name: &str) -> Result<Secret, ModelError> {
        self.remove_secret_key(&(namespace.to_owned(), name.to_owned()))
            .ok_or_else(|| ModelError::NotFound {
                kind: Kind::Secret,
                name: name.to_owned(),
            })
    }

    fn remove_pod_key(&mut self, key: &Key) -> Option<Pod> {
        let mut pod = self.pods.remove(key)?;
        self.runtimes.remove(key);
        let rv = self.next_rv();
        pod.metadata.resource_version = Some(rv.to_string());
        self.record(EventType::Deleted, rv, Object::Pod(pod.clone()));
        Some(pod)
    }

    /// Change a pod directly (a test hook): `change` may edit anything but its namespace and
    /// name; the pod gets a new resourceVersion and a MODIFIED event. The kubelet script is
    /// unchanged — it may overwrite the status at its next step; attach
    /// [`PodScript::Inert`] with [`ClusterModel::set_pod_script`] to stop it.
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn modify_pod(
        &mut self,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut Pod),
    ) -> Result<Pod, ModelError> {
        let key = (namespace.to_owned(), name.to_owned());
        let mut pod = self.get_pod(namespace, name)?;
        change(&mut pod);
        pod.metadata.namespace = Some(key.0.clone());
        pod.metadata.name = Some(key.1.clone());
        Ok(self.store_modified(&key, pod))
    }

    /// Replace a pod's `status` (a test hook); as [`ClusterModel::modify_pod`].
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn set_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: PodStatus,
    ) -> Result<Pod, ModelError> {
        self.modify_pod(namespace, name, |pod| pod.status = Some(status))
    }

    fn store_modified(&mut self, key: &Key, mut pod: Pod) -> Pod {
        let rv = self.next_rv();
        pod.metadata.resource_version = Some(rv.to_string());
        self.pods.insert(key.clone(), pod.clone());
        if let Some(runtime) = self.runtimes.get_mut(key) {
            runtime.delete_at = pod.metadata.deletion_timestamp.as_ref().map(|t| t.0);
        }
        self.record(EventType::Modified, rv, Object::Pod(pod.clone()));
        pod
    }

    // ---- manual kubelet actions (test hooks) ---------------------------------------------

    /// Start the pod's containers now, as the kubelet would (binding it to a node first if
    /// needed, assigning its IP); the script becomes [`PodScript::Inert`]. Does not check
    /// Secrets.
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn start_pod(&mut self, namespace: &str, name: &str) -> Result<Pod, ModelError> {
        let key = self.manual(namespace, name)?;
        let now = self.now;
        let placement = self.placement_for(&key);
        let container_id = self.container_id_for(&key);
        let mut pod = self.get_pod(namespace, name)?;
        if pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_none()
        {
            kubelet::apply_scheduled(&mut pod, &placement, now);
        }
        kubelet::apply_running(&mut pod, &placement.pod_ip, &container_id, now);
        self.set_stage(&key, Stage::Running, Some(now));
        Ok(self.store_modified(&key, pod))
    }

    /// Terminate the pod's containers now with `exit_code` (phase `Failed`, or `Succeeded` for
    /// 0); the script becomes [`PodScript::Inert`].
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn terminate_pod(
        &mut self,
        namespace: &str,
        name: &str,
        exit_code: i32,
    ) -> Result<Pod, ModelError> {
        let key = self.manual(namespace, name)?;
        let now = self.now;
        let placement = self.placement_for(&key);
        let container_id = self.container_id_for(&key);
        let started_at = self
            .runtimes
            .get(&key)
            .and_then(|r| r.started_at)
            .unwrap_or(now);
        let mut pod = self.get_pod(namespace, name)?;
        if pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_none()
        {
            kubelet::apply_scheduled(&mut pod, &placement, now);
        }
        kubelet::apply_terminated(&mut pod, exit_code, &container_id, started_at, now);
        self.set_stage(&key, Stage::Finished, None);
        Ok(self.store_modified(&key, pod))
    }

    /// Put the pod's containers in `waiting` with `reason` and `message` now (binding it to a
    /// node first if needed); the script becomes [`PodScript::Inert`].
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn set_pod_waiting(
        &mut self,
        namespace: &str,
        name: &str,
        reason: &str,
        message: Option<&str>,
    ) -> Result<Pod, ModelError> {
        let key = self.manual(namespace, name)?;
        let now = self.now;
        let placement = self.placement_for(&key);
        let mut pod = self.get_pod(namespace, name)?;
        if pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_none()
        {
            kubelet::apply_scheduled(&mut pod, &placement, now);
        }
        let ip = (reason != "ContainerCreating").then_some(placement.pod_ip.as_str());
        kubelet::apply_waiting(&mut pod, reason, message, ip, now);
        self.set_stage(&key, Stage::Scheduled, None);
        Ok(self.store_modified(&key, pod))
    }

    /// Mark the pod unschedulable now (`PodScheduled` False, reason `Unschedulable`); the script
    /// becomes [`PodScript::Inert`].
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn set_pod_unschedulable(
        &mut self,
        namespace: &str,
        name: &str,
    ) -> Result<Pod, ModelError> {
        let key = self.manual(namespace, name)?;
        let now = self.now;
        let mut pod = self.get_pod(namespace, name)?;
        kubelet::apply_unschedulable(&mut pod, now);
        self.set_stage(&key, Stage::Unschedulable, None);
        Ok(self.store_modified(&key, pod))
    }

    fn manual(&mut self, namespace: &str, name: &str) -> Result<Key, ModelError> {
        let key = (namespace.to_owned(), name.to_owned());
        if !self.pods.contains_key(&key) {
            return Err(ModelError::NotFound {
                kind: Kind::Pod,
                name: name.to_owned(),
            });
        }
        if !self.runtimes.contains_key(&key) {
            self.attach(key.clone(), PodScript::Inert, Stage::Created);
        }
        if let Some(runtime) = self.runtimes.get_mut(&key) {
            runtime.script = PodScript::Inert;
            runtime.due = None;
        }
        Ok(key)
    }

    fn set_stage(&mut self, key: &Key, stage: Stage, started_at: Option<Timestamp>) {
        if let Some(runtime) = self.runtimes.get_mut(key) {
            runtime.stage = stage;
            if started_at.is_some() {
                runtime.started_at = started_at;
            }
        }
    }

    // ---- kubelet scripts -----------------------------------------------------------------

    /// The delay the image convention and the built-in default script use (default 1 s).
    pub fn set_start_delay(&mut self, delay: Duration) {
        self.start_delay = delay;
    }

    /// The script for pods that nothing else selects one for (`None`: [`PodScript::Start`]
    /// after the start delay).
    pub fn set_default_script(&mut self, script: Option<PodScript>) {
        self.default_script = script;
    }

    /// Every future pod created under this name gets `script` (unless one is queued).
    pub fn script_pods_named(&mut self, namespace: &str, name: &str, script: PodScript) {
        self.name_scripts
            .insert((namespace.to_owned(), name.to_owned()), script);
    }

    /// The next pods created under this name get these scripts, one per create, in order; after
    /// that the usual selection applies.
    pub fn queue_pod_scripts(
        &mut self,
        namespace: &str,
        name: &str,
        scripts: impl IntoIterator<Item = PodScript>,
    ) {
        self.queued_scripts
            .entry((namespace.to_owned(), name.to_owned()))
            .or_default()
            .extend(scripts);
    }

    /// Give an existing pod a new script, starting now from the pod's current stage (for
    /// example [`PodScript::Start`] on a pod waiting `ContainerCreating` starts it `after` from
    /// now; [`PodScript::Inert`] freezes it).
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn set_pod_script(
        &mut self,
        namespace: &str,
        name: &str,
        script: PodScript,
    ) -> Result<(), ModelError> {
        let key = (namespace.to_owned(), name.to_owned());
        let Some(pod) = self.pods.get(&key) else {
            return Err(ModelError::NotFound {
                kind: Kind::Pod,
                name: name.to_owned(),
            });
        };
        let stage = self
            .runtimes
            .get(&key)
            .map_or_else(|| inferred_stage(pod), |r| r.stage);
        self.attach(key, script, stage);
        Ok(())
    }

    /// The script currently attached to a pod.
    pub fn pod_script(&self, namespace: &str, name: &str) -> Option<PodScript> {
        self.runtimes
            .get(&(namespace.to_owned(), name.to_owned()))
            .map(|r| r.script.clone())
    }

    fn wake_config_errors(&mut self, namespace: &str) {
        let now = self.now;
        for (key, runtime) in &mut self.runtimes {
            if key.0 == namespace && runtime.stage == Stage::ConfigError {
                runtime.due = Some(now);
            }
        }
    }

    fn placement_for(&mut self, key: &Key) -> Placement {
        if let Some(p) = self.runtimes.get(key).and_then(|r| r.placement.clone()) {
            return p;
        }
        let n = self.placements;
        self.placements += 1;
        let node = n % 3 + 1;
        let ip = n + 2;
        let placement = Placement {
            node_name: format!("node-{node}"),
            host_ip: format!("172.18.0.{}", node + 1),
            pod_ip: format!("10.244.{}.{}", ip / 250, ip % 250),
        };
        if let Some(runtime) = self.runtimes.get_mut(key) {
            runtime.placement = Some(placement.clone());
        }
        placement
    }

    fn container_id_for(&mut self, key: &Key) -> String {
        if let Some(id) = self.runtimes.get(key).and_then(|r| r.container_id.clone()) {
            return id;
        }
        self.containers += 1;
        let id = format!("containerd://{:064x}", self.containers);
        if let Some(runtime) = self.runtimes.get_mut(key) {
            runtime.container_id = Some(id.clone());
        }
        id
    }

    fn missing_secret(&self, key: &Key, pod: &Pod) -> Option<String> {
        kubelet::required_secrets(pod)
            .into_iter()
            .find(|s| !self.secrets.contains_key(&(key.0.clone(), s.clone())))
    }

    /// Run the due step of one pod: its graceful removal, or its kubelet script's next step
    /// (the sequencing is [`kubelet::sequence::step`], shared with `apiary-envtest`'s kubelet).
    fn run_due(&mut self, key: &Key) {
        let Some(runtime) = self.runtimes.get(key).cloned() else {
            return;
        };
        if runtime.delete_at.is_some_and(|t| t <= self.now) {
            self.remove_pod_key(key);
            return;
        }
        let Some(mut pod) = self.pods.get(key).cloned() else {
            self.runtimes.remove(key);
            return;
        };
        let now = self.now;
        let mut next = runtime.clone();
        let mut progress = Progress {
            stage: runtime.stage,
            pull_attempts: runtime.pull_attempts,
            started_at: runtime.started_at,
        };
        let moment = Moment {
            now,
            since_anchor: Duration::try_from(now.duration_since(runtime.anchor))
                .unwrap_or(Duration::ZERO),
        };
        let mut resources = ModelResources {
            // Only the scheduling step records the placement in the runtime; later steps reuse
            // it from there (so an inserted, already-bound pod is placed at each start attempt).
            record_placement: runtime.stage == Stage::Created,
            model: self,
            key,
            runtime: &mut next,
        };
        let outcome = kubelet::sequence::step(
            &runtime.script,
            &mut progress,
            &mut pod,
            moment,
            &mut resources,
        );
        let delay = match outcome {
            Outcome::Remove => {
                self.remove_pod_key(key);
                return;
            }
            Outcome::Reshaped { next } => next,
        };
        next.due = delay.map(|d| add(now, d));
        next.stage = progress.stage;
        next.pull_attempts = progress.pull_attempts;
        next.started_at = progress.started_at;
        let changed = self.pods.get(key) != Some(&pod);
        self.runtimes.insert(key.clone(), next);
        if changed {
            self.store_modified(key, pod);
        }
    }

    // ---- lists, pagination, watch --------------------------------------------------------

    fn page<'a, T>(
        &self,
        kind: Kind,
        all: impl Iterator<Item = (Key, &'a T)>,
        options: &ListOptions,
    ) -> Result<ListPage<T>, ModelError>
    where
        T: HasFields + Clone + 'a,
        T: MetaOf,
    {
        let labels = LabelSelector::parse(options.label_selector.as_deref().unwrap_or(""))?;
        let fields = FieldSelector::parse(kind, options.field_selector.as_deref().unwrap_or(""))?;
        let (list_rv, after) = match options.continue_token.as_deref() {
            Some(token) if !token.is_empty() => {
                let (rv, key) = self.decode_continue(token)?;
                (rv, Some(key))
            }
            _ => (self.rv, None),
        };
        let keys: Vec<(Key, &T)> = all
            .filter(|(k, _)| after.as_ref().is_none_or(|a| k > a))
            .collect();
        let matching: Vec<(Key, &T)> = keys
            .iter()
            .filter(|(_, o)| labels.matches(o.meta().labels.as_ref()) && fields.matches(*o))
            .cloned()
            .collect();
        let limit = options
            .limit
            .filter(|l| *l > 0)
            .and_then(|l| usize::try_from(l).ok());
        let (taken, rest) = match limit {
            Some(l) if l < matching.len() => matching.split_at(l),
            _ => (matching.as_slice(), &[][..]),
        };
        // The apiserver pages over the stored keys, not over the matches: a page that filled its
        // limit carries a continue token whenever any key follows it, even when none of those
        // match (the next page is then empty), as kube-apiserver v1.20 does.
        let filled = limit.is_some_and(|l| taken.len() == l);
        let continue_token = match taken.last() {
            Some((last, _))
                if !rest.is_empty() || (filled && keys.iter().any(|(k, _)| k > last)) =>
            {
                Some(hex_encode(&format!("{list_rv}/{}/{}", last.0, last.1)))
            }
            _ => None,
        };
        Ok(ListPage {
            items: taken.iter().map(|(_, o)| (*o).clone()).collect(),
            resource_version: list_rv.to_string(),
            // The apiserver counts the rest only for an unfiltered list (it cannot know how
            // many of the remaining keys a selector would match without reading them).
            remaining_item_count: continue_token
                .as_ref()
                .filter(|_| labels.requirements().is_empty() && fields.requirements().is_empty())
                .map(|_| i64::try_from(rest.len()).unwrap_or(i64::MAX)),
            continue_token,
        })
    }

    fn decode_continue(&self, token: &str) -> Result<(u64, Key), ModelError> {
        let invalid = || ModelError::BadRequest {
            message: "invalid continue token: continue key is not valid: the continue token is \
                      malformed"
                .to_owned(),
        };
        let text = hex_decode(token).ok_or_else(invalid)?;
        let mut parts = text.splitn(3, '/');
        let rv: u64 = parts
            .next()
            .and_then(|r| r.parse().ok())
            .ok_or_else(invalid)?;
        let ns = parts.next().ok_or_else(invalid)?;
        let name = parts.next().ok_or_else(invalid)?;
        if rv < self.horizon {
            return Err(ModelError::Expired {
                message: "The provided continue parameter is too old to display a consistent \
                          list result. You can start a new list without the continue parameter, \
                          or use the continue token in this response to retrieve the remainder \
                          of the results. Continuing with the provided token results in an \
                          inconsistent list - objects that were created, modified, or deleted \
                          between the time the first chunk was returned and now may show up in \
                          the list."
                    .to_owned(),
            });
        }
        Ok((rv, (ns.to_owned(), name.to_owned())))
    }

    /// Every event with a resourceVersion greater than `after`, oldest first (all kinds and
    /// namespaces; filter with [`Object::kind`], [`Object::metadata`] and [`Object::matches`]).
    ///
    /// # Errors
    /// `Expired` (`too old resource version: X (H)`) when `after` is below the compaction
    /// horizon H: events after it were discarded.
    pub fn events_since(&self, after: u64) -> Result<Vec<WatchEvent>, ModelError> {
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
    pub fn compaction_horizon(&self) -> u64 {
        self.horizon
    }

    /// Discard the whole event log: watches from any resourceVersion below the current counter
    /// and every outstanding continue token now answer 410 `Expired`.
    pub fn compact(&mut self) {
        self.events.clear();
        self.horizon = self.rv;
    }

    /// Keep at most `capacity` events; older ones are compacted as they fall out.
    pub fn set_event_capacity(&mut self, capacity: usize) {
        self.event_capacity = capacity;
        while self.events.len() > capacity {
            if let Some(dropped) = self.events.pop_front() {
                self.horizon = self.horizon.max(dropped.resource_version);
            }
        }
    }
}

/// The model's answers to the kubelet step's questions: its placement and container-ID
/// numbering, and its Secret store.
struct ModelResources<'a> {
    model: &'a mut ClusterModel,
    key: &'a Key,
    runtime: &'a mut Runtime,
    record_placement: bool,
}

impl Resources for ModelResources<'_> {
    fn placement(&mut self) -> Placement {
        let placement = self.model.placement_for(self.key);
        if self.record_placement {
            self.runtime.placement = Some(placement.clone());
        }
        placement
    }

    fn container_id(&mut self) -> String {
        let id = self.model.container_id_for(self.key);
        self.runtime.container_id = Some(id.clone());
        id
    }

    fn missing_secret(&mut self, pod: &Pod) -> Option<String> {
        self.model.missing_secret(self.key, pod)
    }
}

/// Access to an object's metadata, for the generic list code.
pub trait MetaOf {
    /// The object's metadata.
    fn meta(&self) -> &ObjectMeta;
}

impl MetaOf for Pod {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

impl MetaOf for Secret {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

impl MetaOf for Namespace {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

fn normalize_secret(secret: &mut Secret) {
    if let Some(string_data) = secret.string_data.take() {
        let data = secret.data.get_or_insert_with(BTreeMap::new);
        for (k, v) in string_data {
            data.insert(k, ByteString(v.into_bytes()));
        }
    }
    secret.type_.get_or_insert_with(|| "Opaque".to_owned());
}

fn check_preconditions(
    kind: Kind,
    name: &str,
    meta: &ObjectMeta,
    preconditions: &Preconditions,
) -> Result<(), ModelError> {
    if let Some(uid) = &preconditions.uid {
        let have = meta.uid.as_deref().unwrap_or("");
        if uid != have {
            return Err(ModelError::Conflict {
                kind,
                name: name.to_owned(),
                detail: format!(
                    "the UID in the precondition ({uid}) does not match the UID in record \
                     ({have}). The object might have been deleted and then recreated"
                ),
            });
        }
    }
    if let Some(rv) = &preconditions.resource_version {
        let have = meta.resource_version.as_deref().unwrap_or("");
        if rv != have {
            return Err(ModelError::Conflict {
                kind,
                name: name.to_owned(),
                detail: format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the \
                     ResourceVersion in record ({have}). The object might have been modified"
                ),
            });
        }
    }
    Ok(())
}

/// Whether deleting this pod waits for its grace period: it is not terminal and a kubelet has
/// it (bound to a node, or reporting container statuses).
fn is_graceful(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let terminal = status
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed");
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let reported = status
        .and_then(|s| s.container_statuses.as_ref())
        .is_some_and(|c| !c.is_empty());
    !terminal && (bound || reported)
}

/// The script stage an inserted pod is at, judged from its shape.
fn inferred_stage(pod: &Pod) -> Stage {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return Stage::Finished;
    }
    let states = status.and_then(|s| s.container_statuses.as_ref());
    if states.is_some_and(|c| {
        c.iter()
            .any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
    }) {
        return Stage::Running;
    }
    if states.is_some_and(|c| {
        c.iter()
            .any(|c| c.state.as_ref().is_some_and(|s| s.terminated.is_some()))
    }) {
        return Stage::Finished;
    }
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if bound || states.is_some_and(|c| !c.is_empty()) {
        Stage::Scheduled
    } else {
        Stage::Created
    }
}

/// When a timed script's next step falls due, counted from its anchor.
fn timed_due(script: &PodScript, anchor: Timestamp) -> Option<Timestamp> {
    kubelet::sequence::script_delay(script).map(|d| add(anchor, d))
}

/// The first due time of a freshly attached script.
fn initial_due(runtime: &Runtime) -> Option<Timestamp> {
    match (&runtime.script, runtime.stage) {
        (PodScript::Inert, _) => None,
        (_, Stage::Created) => Some(runtime.anchor),
        (PodScript::Exit { run_for, .. }, Stage::Running) => Some(add(runtime.anchor, *run_for)),
        (PodScript::Vanish { after }, _) => Some(add(runtime.anchor, *after)),
        (PodScript::Start { .. } | PodScript::Exit { .. }, Stage::Running | Stage::Finished) => {
            None
        }
        (_, Stage::Finished) => None,
        (script, _) => timed_due(script, runtime.anchor),
    }
}

mod accounts;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;
