//! The `Substrate` trait: the narrow I/O interface of deploy.md § Cluster interface and requests.
//! Every implementation (the kube-rs `Cluster`, the in-memory fake) is bound to one namespace.
//!
//! Expected answers are outcomes (`CreateOutcome`, `DeleteOutcome`), surprises are errors. A
//! delete takes the proof-carrying deletion that only `apiary-classify`'s verification can make
//! (`PodDeletion`, `SecretDeletion`), so no implementation is ever asked to delete with a fence
//! that no observation produced.

use std::future::Future;
use std::time::Duration;

use apiary_classify::failure::{Operation, RequestFailure, TransportCause};
use apiary_classify::fence::Fence;
pub use apiary_classify::machine::NamespaceCheck;
use apiary_classify::policy::PolicyDeletion;
use apiary_classify::verify::{PodDeletion, SecretDeletion};
use apiary_classify::workspace::ClaimDeletion;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;

use crate::env::SecretValues;

/// What a create answered when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The object was created.
    Created,
    /// 409 with reason `AlreadyExists`: the name is taken (for a pod, the lost create race).
    AlreadyExists,
}

/// What a delete answered when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// The apiserver accepted the delete (the object may still exist, deletion-marked).
    Accepted,
    /// 404 `NotFound`: the object was already gone.
    NotFound,
    /// 409 with reason `Conflict`: a precondition (uid or resourceVersion) did not hold.
    PreconditionFailed,
}

/// A list answer together with the apiserver's clock at the time it answered.
#[derive(Clone, Debug, Default)]
pub struct Listed<T> {
    /// The listed objects.
    pub items: Vec<T>,
    /// The response's HTTP `Date` header, parsed; `None` when absent or malformed.
    pub server_now: Option<DateTime<Utc>>,
}

/// A request the apiserver answered with an error status, or that got no answer at all. Its
/// message is [`SubstrateError::failure`]'s: `could not <operation> <object>: <why>`, each part
/// once (docs/errors.md).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.failure())]
pub enum SubstrateError {
    /// The apiserver answered with a `Status` (4xx/5xx). `reason` is the literal `Status.reason`,
    /// empty when absent: a 409 is split on it, never on the code.
    Api {
        /// The failed operation.
        operation: Operation,
        /// The object: `<namespace>/<name>` for a pod, Secret or account, the namespace's name
        /// for a namespace request, `in <namespace> matching <selector>` for a list.
        object: String,
        /// The HTTP status code.
        code: u16,
        /// `Status.reason`, verbatim (empty when absent).
        reason: String,
        /// `Status.message`, verbatim.
        message: String,
    },
    /// A pod create refused by ServiceAccount admission (403, reason `Forbidden`, message
    /// `… error looking up service account <ns>/<sa>: serviceaccount "<sa>" not found`): the
    /// account the pod runs as does not exist (yet). The kube shell recognises the answer; the
    /// deploy machine decides whether to wait for the account (deploy.md § Namespace ensure).
    ServiceAccountMissing {
        /// The failed operation.
        operation: Operation,
        /// The object (`<namespace>/<pod>`).
        object: String,
        /// The HTTP status code (403).
        code: u16,
        /// The missing account, as the message names it.
        account: String,
        /// `Status.message`, verbatim.
        message: String,
    },
    /// No usable answer: connection refused or dropped, timeout, TLS, an undecodable body.
    Transport {
        /// The failed operation.
        operation: Operation,
        /// The object, as for [`SubstrateError::Api`].
        object: String,
        /// The cause in plain words.
        cause: TransportCause,
        /// What the client said, in words (never a body).
        message: String,
    },
}

impl SubstrateError {
    /// The apiserver's `Status.reason` when it answered; `None` for a transport failure, so a
    /// reset connection can never read as a confirmed absence.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Api { reason, .. } => Some(reason),
            Self::ServiceAccountMissing { .. } => Some("Forbidden"),
            Self::Transport { .. } => None,
        }
    }

    /// Whether the apiserver answered (a refusal) rather than not at all.
    pub fn is_api(&self) -> bool {
        matches!(self, Self::Api { .. } | Self::ServiceAccountMissing { .. })
    }

    /// This failure in the decisions' vocabulary, its parts kept apart: the operation, the
    /// object, and the status code, reason and message when the apiserver answered, the cause
    /// when it did not.
    pub fn failure(&self) -> RequestFailure {
        match self {
            Self::Api {
                operation,
                object,
                code,
                reason,
                message,
            } => RequestFailure::answered(*operation, object, *code, reason, message),
            Self::ServiceAccountMissing {
                operation,
                object,
                code,
                message,
                ..
            } => RequestFailure::answered(*operation, object, *code, "Forbidden", message),
            Self::Transport {
                operation,
                object,
                cause,
                message,
            } => RequestFailure::lost(*operation, object, *cause, message),
        }
    }
}

/// Why ensuring the namespace failed (deploy.md § Namespace ensure).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    /// E11: creating the namespace was forbidden.
    #[error(
        "namespace {namespace} does not exist and apiary may not create it: ask a cluster \
         administrator to run `kubectl create namespace {namespace}`"
    )]
    CreateForbidden {
        /// The namespace.
        namespace: String,
    },
    /// E9: reading or creating the namespace failed otherwise. The message is the source's
    /// alone: it names the operation and the namespace already.
    #[error("{source}")]
    Failed {
        /// The namespace.
        namespace: String,
        /// The underlying failure (it names the operation).
        source: SubstrateError,
    },
}

/// The narrow interface through which every deploy-side decision reaches the cluster. Bound to
/// one namespace. Reads are quorum reads (no `resourceVersion`).
pub trait Substrate: Send + Sync {
    /// The namespace this substrate works in.
    fn namespace(&self) -> &str;

    /// Ensure the namespace exists: GET, create when absent; a forbidden GET continues,
    /// answered [`NamespaceCheck::Unchecked`] (deploy.md § Namespace ensure, item 1).
    fn ensure_namespace(
        &self,
    ) -> impl Future<Output = Result<NamespaceCheck, NamespaceError>> + Send;

    /// Quorum-list pods by label selector, with the response's `Date` as the server clock.
    fn list_pods(
        &self,
        selector: &str,
    ) -> impl Future<Output = Result<Listed<Pod>, SubstrateError>> + Send;

    /// Quorum-list Secrets by label selector.
    fn list_secrets(
        &self,
        selector: &str,
    ) -> impl Future<Output = Result<Vec<Secret>, SubstrateError>> + Send;

    /// Quorum GET of a pod; `Ok(None)` is a confirmed absence (404 `NotFound`).
    fn get_pod(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<Pod>, SubstrateError>> + Send;

    /// Quorum metadata-only GET of a Secret (never its values); `Ok(false)` is a confirmed
    /// absence (404 `NotFound`).
    fn secret_exists(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<bool, SubstrateError>> + Send;

    /// Quorum GET of a Secret's values (`data`, decoded), for `deploy --replace` to compare the
    /// live pod's environment with the desired one; `Ok(None)` is a confirmed absence. The
    /// values are compared in memory and never logged, printed or kept.
    fn read_secret_values(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<SecretValues>, SubstrateError>> + Send;

    /// Quorum GET of a ServiceAccount; `Ok(false)` is a confirmed absence (404 `NotFound`).
    /// Read only while a pod create waits for its account (deploy.md § Namespace ensure).
    fn service_account_exists(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<bool, SubstrateError>> + Send;

    /// Create a Secret.
    fn create_secret(
        &self,
        secret: &Secret,
    ) -> impl Future<Output = Result<CreateOutcome, SubstrateError>> + Send;

    /// Create a pod. `Err(Api)` is a refusal, `Err(ServiceAccountMissing)` the refusal of
    /// ServiceAccount admission; `Err(Transport)` means the create may have landed.
    fn create_pod(
        &self,
        pod: &Pod,
    ) -> impl Future<Output = Result<CreateOutcome, SubstrateError>> + Send;

    /// Delete the pod `deletion` names with `preconditions: {uid, resourceVersion}` from its
    /// fence (the observation that authorised it), no grace override.
    fn delete_pod(
        &self,
        deletion: &PodDeletion,
    ) -> impl Future<Output = Result<DeleteOutcome, SubstrateError>> + Send;

    /// Delete the Secret `deletion` names with `preconditions: {uid}`.
    fn delete_secret(
        &self,
        deletion: &SecretDeletion,
    ) -> impl Future<Output = Result<DeleteOutcome, SubstrateError>> + Send;

    /// Quorum GET of the agent's NetworkPolicy `name` (deploy.md § Egress control); `Ok(None)`
    /// is a confirmed absence.
    fn get_network_policy(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<NetworkPolicy>, SubstrateError>> + Send;

    /// Create the agent's NetworkPolicy.
    fn create_network_policy(
        &self,
        policy: &NetworkPolicy,
    ) -> impl Future<Output = Result<CreateOutcome, SubstrateError>> + Send;

    /// Replace the agent's NetworkPolicy (PUT), carrying the `uid` and `resourceVersion` of the
    /// observation `fence` comes from, which proved it ours: `Ok(false)` is 409 `Conflict` (it
    /// changed since).
    fn update_network_policy(
        &self,
        policy: &NetworkPolicy,
        fence: &Fence,
    ) -> impl Future<Output = Result<bool, SubstrateError>> + Send;

    /// Delete the NetworkPolicy `deletion` names with `preconditions: {uid, resourceVersion}`.
    fn delete_network_policy(
        &self,
        deletion: &PolicyDeletion,
    ) -> impl Future<Output = Result<DeleteOutcome, SubstrateError>> + Send;

    /// Quorum GET of the agent's workspace claim `name` (deploy.md § Persistent workspace);
    /// `Ok(None)` is a confirmed absence.
    fn get_workspace_claim(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<PersistentVolumeClaim>, SubstrateError>> + Send;

    /// Create the agent's workspace claim.
    fn create_workspace_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> impl Future<Output = Result<CreateOutcome, SubstrateError>> + Send;

    /// Delete the claim `deletion` names with `preconditions: {uid, resourceVersion}`
    /// (`undeploy --delete-workspace` only).
    fn delete_workspace_claim(
        &self,
        deletion: &ClaimDeletion,
    ) -> impl Future<Output = Result<DeleteOutcome, SubstrateError>> + Send;

    /// Read the node `name` (cluster-scoped, a quorum GET) for the explanation of a pod that
    /// outlives its grace period (deploy.md § When a pod will not go away). Never an error, because
    /// the read only adds to a warning: 404 `NotFound` is `Missing`, 403 `Forbidden` is
    /// `NotPermitted` (reading nodes is optional, skipped silently), and any other failure is
    /// `Unknown` (logged at debug level).
    fn read_node(
        &self,
        name: &str,
    ) -> impl Future<Output = apiary_classify::stuck::NodeFacts> + Send;

    /// Sleep for `duration` (the fake advances its clock here and only here).
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send;

    /// Wait until the pod `name` changes after `resource_version` (or appears/disappears), or
    /// until `max` has passed, whichever is first. Without a `resource_version` the baseline is
    /// the pod's state when the wait begins, so its current state alone never wakes the wait.
    /// A wake-up signal only: callers re-read. Implementations without a watch sleep `max`.
    fn wait_for_pod_change(
        &self,
        name: &str,
        resource_version: Option<&str>,
        max: Duration,
    ) -> impl Future<Output = ()> + Send;

    /// A monotonic reading: the time since a fixed origin of this substrate (its construction).
    /// Only differences mean anything; each operation's machine anchors its deadline at its first
    /// reading, so one substrate serves any number of operations, one after another or at once.
    fn now(&self) -> Duration;
}
