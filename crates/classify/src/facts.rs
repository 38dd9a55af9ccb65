//! Plain facts observed about a pod or a Secret: the vocabulary between observation (in
//! `apiary-substrate`, which reads Kubernetes objects) and the decisions of this crate.
//!
//! Nothing here knows Kubernetes types, a clock or I/O. The shell fills these structs from what
//! the apiserver returned; every decision in this crate reads only these values.

/// The state the container named `agent` reports (deploy.md § Decoding a pod).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContainerState {
    /// `state.running` is present.
    Running,
    /// `state.terminated` is present (and `running` is not).
    Terminated {
        /// The container's exit code.
        exit_code: i32,
        /// The terminated reason (`Error`, `Completed`, ...), when the kubelet gave one.
        reason: Option<String>,
    },
    /// `state.waiting` is present (and neither `running` nor `terminated`).
    Waiting {
        /// The waiting reason (`ContainerCreating`, `ErrImagePull`, ...), when given.
        reason: Option<String>,
        /// The waiting message. Never shown to a person: it can echo registry credentials.
        message: Option<String>,
    },
    /// A `state` object with none of the three members: falls through to the phase rule.
    Empty,
}

/// One pod condition, as reported in `status.conditions[]`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ConditionFacts {
    /// `type`, e.g. `PodScheduled`.
    pub kind: String,
    /// `status`: `True`, `False` or `Unknown`.
    pub status: String,
    /// `reason`, when given.
    pub reason: Option<String>,
    /// `message`, when given (composed by the scheduler or kubelet, never by the agent).
    pub message: Option<String>,
}

/// What the pod's status and spec say about whether the agent started.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PodFacts {
    /// `status.phase`, when present.
    pub phase: Option<String>,
    /// The state of the container named `agent`; `None` when there is no status for it or the
    /// status carries no `state`.
    pub agent: Option<ContainerState>,
    /// `status.conditions`, in order.
    pub conditions: Vec<ConditionFacts>,
    /// The first `envFrom[].secretRef.name` across the pod's containers, when any.
    pub env_from_secret: Option<String>,
    /// The `image` of the container named `agent` in the pod spec, when any: the pull-failure
    /// classifier removes it from the kubelet's message before matching.
    pub image: Option<String>,
    /// The claim the pod's `workspace` volume mounts (`--workspace-size`), when it is one.
    pub workspace_claim: Option<String>,
}

/// The identity marks of an object's metadata, as read from the apiserver.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ObjectMarks {
    /// `metadata.name`.
    pub name: Option<String>,
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
    /// Label `app.kubernetes.io/managed-by`.
    pub managed_by: Option<String>,
    /// Label `apiary.dev/binding-version`.
    pub binding_version: Option<String>,
    /// Annotation `apiary.dev/agent-id`.
    pub agent_id: Option<String>,
    /// Annotation `apiary.dev/create-intent` (pods only).
    pub create_intent: Option<String>,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deletion_marked: bool,
    /// `metadata.creationTimestamp` as whole seconds since the Unix epoch (server clock).
    pub created_at_unix: Option<i64>,
    /// Annotation `apiary.dev/expires-at` verbatim (pods only; `expiry::expiry_of` parses it).
    pub expires_at: Option<String>,
    /// Annotation `apiary.dev/intent-settings` verbatim (pods only; `settings` compares it).
    pub intent_settings: Option<String>,
}

/// A pod as observed: its marks and its facts.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ObservedPod {
    /// Identity marks from `metadata`.
    pub marks: ObjectMarks,
    /// Status and spec facts.
    pub facts: PodFacts,
}

/// A Secret as observed: only its marks (apiary never reads Secret payloads back).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ObservedSecret {
    /// Identity marks from `metadata`.
    pub marks: ObjectMarks,
}
