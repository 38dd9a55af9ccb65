//! The `Substrate` trait: the narrow I/O interface of deploy.md § Cluster interface and requests.
//! Every implementation (the kube-rs `Cluster`, the in-memory fake) is bound to one namespace.
//!
//! It speaks the decisions' vocabulary: expected answers are `apiary-classify`'s
//! ([`CreateAnswer`], [`DeleteAnswer`], [`WriteAnswer`]), every failure is a typed
//! [`RequestFailure`] (operation, object, and the status or the transport cause). A delete takes
//! the proof-carrying deletion that only `apiary-classify`'s verification can make
//! (`PodDeletion`, `SecretDeletion`), so no implementation is ever asked to delete with a fence
//! that no observation produced.

use std::future::Future;
use std::num::NonZeroU32;
use std::time::Duration;

pub use apiary_classify::answer::{CreateAnswer, DeleteAnswer};
use apiary_classify::failure::RequestFailure;
use apiary_classify::fence::Fence;
use apiary_classify::policy::PolicyDeletion;
use apiary_classify::request::{ExpiryWrite, WriteAnswer};
pub use apiary_classify::request::{NamespaceCheck, NamespaceFailure};
use apiary_classify::verify::{PodDeletion, SecretDeletion};
use apiary_classify::workspace::ClaimDeletion;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;

use crate::env::SecretValues;

/// A list answer together with the apiserver's clock at the time it answered.
#[derive(Clone, Debug, Default)]
pub struct Listed<T> {
    /// The listed objects.
    pub items: Vec<T>,
    /// The response's HTTP `Date` header, parsed; `None` when absent or malformed.
    pub server_now: Option<DateTime<Utc>>,
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
    ) -> impl Future<Output = Result<NamespaceCheck, NamespaceFailure>> + Send;

    /// Quorum-list pods by label selector, with the response's `Date` as the server clock.
    fn list_pods(
        &self,
        selector: &str,
    ) -> impl Future<Output = Result<Listed<Pod>, RequestFailure>> + Send;

    /// Every pod matching `selector` by a paginated quorum LIST of `page` objects per request,
    /// with the server clock of the first page's `Date` header: `list`'s namespace-wide listing,
    /// which may return every agent of a namespace (deploy.md § list), so an implementation
    /// pages it (`limit`/`continue`, every page of one snapshot).
    fn list_all_pods(
        &self,
        selector: &str,
        page: NonZeroU32,
    ) -> impl Future<Output = Result<Listed<Pod>, RequestFailure>> + Send;

    /// Every Secret matching `selector` by a paginated quorum LIST of `page` objects per request.
    fn list_all_secrets(
        &self,
        selector: &str,
        page: NonZeroU32,
    ) -> impl Future<Output = Result<Vec<Secret>, RequestFailure>> + Send;

    /// Quorum-list Secrets by label selector.
    fn list_secrets(
        &self,
        selector: &str,
    ) -> impl Future<Output = Result<Vec<Secret>, RequestFailure>> + Send;

    /// Quorum GET of a pod; `Ok(None)` is a confirmed absence (404 `NotFound`).
    fn get_pod(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<Pod>, RequestFailure>> + Send;

    /// Quorum metadata-only GET of a Secret (never its values); `Ok(false)` is a confirmed
    /// absence (404 `NotFound`).
    fn secret_exists(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<bool, RequestFailure>> + Send;

    /// Quorum GET of a Secret's values (`data`, decoded), for `deploy --replace` to compare the
    /// live pod's environment with the desired one; `Ok(None)` is a confirmed absence. The
    /// values are compared in memory and never logged, printed or kept.
    fn read_secret_values(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<SecretValues>, RequestFailure>> + Send;

    /// Quorum GET of a ServiceAccount; `Ok(false)` is a confirmed absence (404 `NotFound`).
    /// Read only while a pod create waits for its account (deploy.md § Namespace ensure).
    fn service_account_exists(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<bool, RequestFailure>> + Send;

    /// Create a Secret.
    fn create_secret(
        &self,
        secret: &Secret,
    ) -> impl Future<Output = Result<CreateAnswer, RequestFailure>> + Send;

    /// Create a pod. An answered failure is a refusal (ServiceAccount admission's among them,
    /// which [`RequestFailure::missing_service_account`] recognises); a transport failure means
    /// the create may have landed.
    fn create_pod(
        &self,
        pod: &Pod,
    ) -> impl Future<Output = Result<CreateAnswer, RequestFailure>> + Send;

    /// Send `pod`'s create as a server-side dry run (`dryRun=All`): validated and admitted as a
    /// create would be, nothing written. `pod` carries a `generateName` and no name, so a pod
    /// holding the name is no conflict (deploy.md § Replacing a live agent).
    fn check_pod_create(
        &self,
        pod: &Pod,
    ) -> impl Future<Output = Result<(), RequestFailure>> + Send;

    /// Delete the pod `deletion` names with `preconditions: {uid, resourceVersion}` from its
    /// fence (the observation that authorised it), and its grace period override when it carries
    /// one (never zero: deploy.md § Grace periods).
    fn delete_pod(
        &self,
        deletion: &PodDeletion,
    ) -> impl Future<Output = Result<DeleteAnswer, RequestFailure>> + Send;

    /// Delete the Secret `deletion` names with `preconditions: {uid}`.
    fn delete_secret(
        &self,
        deletion: &SecretDeletion,
    ) -> impl Future<Output = Result<DeleteAnswer, RequestFailure>> + Send;

    /// The one update apiary sends (deploy.md § Expiry): a JSON merge patch of the pod's
    /// `apiary.dev/expires-at` annotation carrying `metadata.resourceVersion` from `write`, which
    /// the apiserver checks (409 `Conflict` when the pod changed since the observation). Never a
    /// spec, status or label change.
    fn write_pod_expiry(
        &self,
        write: &ExpiryWrite,
    ) -> impl Future<Output = Result<WriteAnswer, RequestFailure>> + Send;

    /// Quorum GET of the agent's NetworkPolicy `name` (deploy.md § Egress control); `Ok(None)`
    /// is a confirmed absence.
    fn get_network_policy(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<NetworkPolicy>, RequestFailure>> + Send;

    /// Create the agent's NetworkPolicy.
    fn create_network_policy(
        &self,
        policy: &NetworkPolicy,
    ) -> impl Future<Output = Result<CreateAnswer, RequestFailure>> + Send;

    /// Replace the agent's NetworkPolicy (PUT), carrying the `uid` and `resourceVersion` of the
    /// observation `fence` comes from, which proved it ours: `Ok(false)` is 409 `Conflict` (it
    /// changed since).
    fn update_network_policy(
        &self,
        policy: &NetworkPolicy,
        fence: &Fence,
    ) -> impl Future<Output = Result<bool, RequestFailure>> + Send;

    /// Delete the NetworkPolicy `deletion` names with `preconditions: {uid, resourceVersion}`.
    fn delete_network_policy(
        &self,
        deletion: &PolicyDeletion,
    ) -> impl Future<Output = Result<DeleteAnswer, RequestFailure>> + Send;

    /// Quorum GET of the agent's workspace claim `name` (deploy.md § Persistent workspace);
    /// `Ok(None)` is a confirmed absence.
    fn get_workspace_claim(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<PersistentVolumeClaim>, RequestFailure>> + Send;

    /// Create the agent's workspace claim.
    fn create_workspace_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> impl Future<Output = Result<CreateAnswer, RequestFailure>> + Send;

    /// Delete the claim `deletion` names with `preconditions: {uid, resourceVersion}`
    /// (`undeploy --delete-workspace` only).
    fn delete_workspace_claim(
        &self,
        deletion: &ClaimDeletion,
    ) -> impl Future<Output = Result<DeleteAnswer, RequestFailure>> + Send;

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
