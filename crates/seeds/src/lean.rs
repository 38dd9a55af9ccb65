//! Lean decoding (seeds.md § Lean decoding): reads a pod list page, or a watch event, straight
//! from the response bytes into [`LeanPod`] records holding only what discovery needs.
//!
//! Decoding layer, pure: every other field is skipped by serde's derive (as
//! `serde::de::IgnoredAny`, which allocates nothing), and the flags (`deletionTimestamp` present,
//! finished phase, native sidecar, container running) are read from borrowed strings or skipped
//! objects without being kept. It must not interpret the records (that is `extract`), and it
//! must never depend on a Kubernetes client.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

/// What discovery keeps of one pod. Every field of the wire form may be absent or `null`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeanPod {
    /// `metadata.name`.
    pub name: Option<String>,
    /// `metadata.uid`: the key of the watch view and of warn-once memory.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`: a watch resume point.
    pub resource_version: Option<String>,
    /// `metadata.deletionTimestamp` is present.
    pub terminating: bool,
    /// `status.phase` is `Succeeded` or `Failed`.
    pub finished: bool,
    /// `status.podIP`.
    pub pod_ip: Option<String>,
    /// `status.podIPs[].ip`, in order; an entry without `ip` reads as empty (no address). The
    /// first entry is the fallback primary address; the others matter only with an IP family
    /// (seeds.md § Address family and running containers).
    pub pod_ips: Vec<String>,
    /// The names of the containers whose `state.running` is present, from
    /// `status.containerStatuses` and `status.initContainerStatuses`, in that order.
    pub running_containers: Vec<String>,
    /// `spec.containers`, in declaration order.
    pub containers: Vec<LeanContainer>,
    /// `spec.initContainers`, in declaration order.
    pub init_containers: Vec<LeanContainer>,
}

/// What discovery keeps of one container.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeanContainer {
    /// `name`: the key of the container's status.
    pub name: Option<String>,
    /// `restartPolicy` is `Always`: for an init container, a native sidecar.
    pub restart_always: bool,
    /// `ports`, in declaration order.
    pub ports: Vec<LeanPort>,
}

/// One declared container port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeanPort {
    /// `name`.
    pub name: Option<String>,
    /// `containerPort`, read as 64 bits so an out-of-range value is a skip reason, not a
    /// decode failure. Absent reads as 0, as in the full `Pod` type.
    pub container_port: i64,
}

/// One decoded page of a pod list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeanPodList {
    /// `metadata.continue`; `None` when absent, `null` or empty (the last page).
    pub continue_token: Option<String>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: Option<String>,
    /// `items`, in server order.
    pub items: Vec<LeanPod>,
}

/// One decoded event of a pod watch stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeanWatchEvent {
    /// `ADDED`: insert or replace.
    Added(LeanPod),
    /// `MODIFIED`: insert or replace.
    Modified(LeanPod),
    /// `DELETED`: remove.
    Deleted(LeanPod),
    /// `BOOKMARK`: only advances the resume point.
    Bookmark {
        /// The object's `metadata.resourceVersion`.
        resource_version: Option<String>,
    },
    /// `ERROR`: the object is a `Status`.
    Error(LeanStatus),
}

/// What discovery keeps of a `Status` object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeanStatus {
    /// `code`, the HTTP status it stands for (0 when absent).
    pub code: i64,
    /// `reason`, e.g. `Expired` (empty when absent).
    pub reason: String,
    /// `message` (empty when absent).
    pub message: String,
}

/// A body that is not JSON, or a wrong type in one of the fields discovery reads.
#[derive(Debug, thiserror::Error)]
#[error("cannot decode the pod list: {0}")]
pub struct DecodeError(#[from] pub serde_json::Error);

/// Decodes one page of a pod list from the response bytes, skipping every unneeded field.
///
/// # Errors
/// [`DecodeError`] when the bytes are not JSON or a needed field has a wrong type.
pub fn decode_pod_list(bytes: &[u8]) -> Result<LeanPodList, DecodeError> {
    let wire: WireList = serde_json::from_slice(bytes)?;
    Ok(LeanPodList {
        continue_token: wire
            .metadata
            .0
            .continue_token
            .filter(|token| !token.is_empty()),
        resource_version: wire.metadata.0.resource_version,
        items: wire.items.0.into_iter().map(LeanPod::from).collect(),
    })
}

/// Decodes one watch event (one line of a watch stream).
///
/// # Errors
/// [`DecodeError`] when the bytes are not JSON, the event type is unknown, or a needed field has
/// a wrong type.
pub fn decode_watch_event(bytes: &[u8]) -> Result<LeanWatchEvent, DecodeError> {
    let wire: WireEvent = serde_json::from_slice(bytes)?;
    Ok(match wire {
        WireEvent::Added(pod) => LeanWatchEvent::Added(pod.into()),
        WireEvent::Modified(pod) => LeanWatchEvent::Modified(pod.into()),
        WireEvent::Deleted(pod) => LeanWatchEvent::Deleted(pod.into()),
        WireEvent::Bookmark(pod) => LeanWatchEvent::Bookmark {
            resource_version: pod.metadata.0.resource_version,
        },
        WireEvent::Error(status) => LeanWatchEvent::Error(LeanStatus {
            code: status.code.unwrap_or_default(),
            reason: status.reason.unwrap_or_default(),
            message: status.message.unwrap_or_default(),
        }),
    })
}

// ---- The wire shapes. Unknown fields are ignored by serde's derive without allocating. ----

#[derive(Deserialize)]
struct WireList {
    #[serde(default)]
    metadata: NullDefault<WireListMeta>,
    #[serde(default)]
    items: NullDefault<Vec<WirePod>>,
}

#[derive(Deserialize, Default)]
struct WireListMeta {
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", content = "object")]
enum WireEvent {
    #[serde(rename = "ADDED")]
    Added(WirePod),
    #[serde(rename = "MODIFIED")]
    Modified(WirePod),
    #[serde(rename = "DELETED")]
    Deleted(WirePod),
    #[serde(rename = "BOOKMARK")]
    Bookmark(WirePod),
    #[serde(rename = "ERROR")]
    Error(WireStatus),
}

#[derive(Deserialize)]
struct WireStatus {
    #[serde(default)]
    code: Option<i64>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, Default)]
struct WirePod {
    #[serde(default)]
    metadata: NullDefault<WirePodMeta>,
    #[serde(default)]
    spec: NullDefault<WirePodSpec>,
    #[serde(default)]
    status: NullDefault<WirePodStatus>,
}

#[derive(Deserialize, Default)]
struct WirePodMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
    #[serde(rename = "deletionTimestamp", default)]
    deletion_timestamp: Option<Present>,
}

#[derive(Deserialize, Default)]
struct WirePodSpec {
    #[serde(default)]
    containers: NullDefault<Vec<WireContainer>>,
    #[serde(rename = "initContainers", default)]
    init_containers: NullDefault<Vec<WireContainer>>,
}

#[derive(Deserialize, Default)]
struct WireContainer {
    #[serde(default)]
    name: Option<String>,
    #[serde(rename = "restartPolicy", default)]
    restart_policy: Option<Always>,
    #[serde(default)]
    ports: NullDefault<Vec<WirePort>>,
}

#[derive(Deserialize, Default)]
struct WirePort {
    #[serde(default)]
    name: Option<String>,
    #[serde(rename = "containerPort", default)]
    container_port: Option<i64>,
}

#[derive(Deserialize, Default)]
struct WirePodStatus {
    #[serde(default)]
    phase: Option<Finished>,
    #[serde(rename = "podIP", default)]
    pod_ip: Option<String>,
    #[serde(rename = "podIPs", default)]
    pod_ips: NullDefault<Vec<WirePodIp>>,
    #[serde(rename = "containerStatuses", default)]
    container_statuses: NullDefault<Vec<WireContainerStatus>>,
    #[serde(rename = "initContainerStatuses", default)]
    init_container_statuses: NullDefault<Vec<WireContainerStatus>>,
}

#[derive(Deserialize, Default)]
struct WireContainerStatus {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    state: NullDefault<WireContainerState>,
}

#[derive(Deserialize, Default)]
struct WireContainerState {
    #[serde(default)]
    running: Option<PresentObject>,
}

#[derive(Deserialize, Default)]
struct WirePodIp {
    #[serde(default)]
    ip: Option<String>,
}

impl From<WirePod> for LeanPod {
    fn from(pod: WirePod) -> Self {
        let meta = pod.metadata.0;
        let spec = pod.spec.0;
        let status = pod.status.0;
        LeanPod {
            name: meta.name,
            uid: meta.uid,
            resource_version: meta.resource_version,
            terminating: meta.deletion_timestamp.is_some(),
            finished: status.phase.is_some_and(|phase| phase.0),
            pod_ip: status.pod_ip,
            pod_ips: status
                .pod_ips
                .0
                .into_iter()
                .map(|entry| entry.ip.unwrap_or_default())
                .collect(),
            running_containers: status
                .container_statuses
                .0
                .into_iter()
                .chain(status.init_container_statuses.0)
                .filter(|status| status.state.0.running.is_some())
                .filter_map(|status| status.name)
                .collect(),
            containers: spec.containers.0.into_iter().map(Into::into).collect(),
            init_containers: spec.init_containers.0.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<WireContainer> for LeanContainer {
    fn from(container: WireContainer) -> Self {
        LeanContainer {
            name: container.name,
            restart_always: container.restart_policy.is_some_and(|policy| policy.0),
            ports: container
                .ports
                .0
                .into_iter()
                .map(|port| LeanPort {
                    name: port.name,
                    container_port: port.container_port.unwrap_or_default(),
                })
                .collect(),
        }
    }
}

/// A value where `null` means the same as absent: the type's default.
#[derive(Default)]
struct NullDefault<T>(T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for NullDefault<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(NullDefault(
            Option::<T>::deserialize(deserializer)?.unwrap_or_default(),
        ))
    }
}

/// A string field whose presence is all that matters (`deletionTimestamp`); read borrowed.
struct Present;

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(StrTest(|_| Present))
    }
}

/// `status.phase`, reduced to "is it `Succeeded` or `Failed`"; read borrowed.
struct Finished(bool);

impl<'de> Deserialize<'de> for Finished {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(StrTest(|phase| {
            Finished(phase == "Succeeded" || phase == "Failed")
        }))
    }
}

/// `restartPolicy`, reduced to "is it `Always`"; read borrowed.
struct Always(bool);

impl<'de> Deserialize<'de> for Always {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(StrTest(|policy| Always(policy == "Always")))
    }
}

/// A visitor that accepts only a string and maps it without keeping it.
struct StrTest<T>(fn(&str) -> T);

impl<'de, T> Visitor<'de> for StrTest<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<T, E> {
        Ok((self.0)(value))
    }
}

/// An object whose presence is all that matters (`state.running`): its entries are skipped
/// without allocating, but it must be an object, as in the full type.
struct PresentObject;

impl<'de> Deserialize<'de> for PresentObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PresentObjectVisitor)
    }
}

struct PresentObjectVisitor;

impl<'de> Visitor<'de> for PresentObjectVisitor {
    type Value = PresentObject;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PresentObject, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(PresentObject)
    }
}
