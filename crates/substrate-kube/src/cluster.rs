//! `Cluster`: the kube-rs implementation of `apiary_substrate::Substrate`
//! (deploy.md § Cluster interface and requests).
//!
//! Layer: the imperative shell. It builds each request and sends it through the crate's one
//! exchange layer (`crate::exchange`: `kube::Client::send`, so every answer's status, headers and
//! body are visible; transient failures retried inside the operation's budget; refusals described
//! by its quoting rule), and hands the answer to the pure `mapping` and `retry` modules, which
//! decide everything. It must not decide anything itself, must never send a `resourceVersion` on
//! a read, a grace period or propagation policy on a delete, and must never put a request or
//! response body (Secret values) into an error, a log line or `Debug` output.

pub mod client;
mod expiry;
mod listing;
pub mod mapping;
mod named;
mod node;
pub mod retry;
mod watch;

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::num::NonZeroU32;

use apiary_classify::failure::{Operation, RequestFailure, TransportCause};
use apiary_classify::fence::Fence;
use apiary_classify::policy::PolicyDeletion;
use apiary_classify::request::{ExpiryWrite, WriteAnswer};
use apiary_classify::verify::{PodDeletion, SecretDeletion};
use apiary_classify::workspace::ClaimDeletion;
use apiary_substrate::env::SecretValues;
use apiary_substrate::{
    CreateAnswer, DeleteAnswer, Listed, NamespaceCheck, NamespaceFailure, Substrate,
};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod, Secret, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::core::params::{DeleteParams, GetParams, ListParams, PostParams, Preconditions};
use kube::core::{ObjectList, Request};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use crate::exchange::{self, Exchanged, Reply};
use mapping::{AfterNamespaceCreate, AfterNamespaceGet, Failure, TransportKind};
pub use retry::RetryPolicy;
use retry::Window;

/// The kube-rs `Substrate`, bound to one namespace.
///
/// Every operation is one exchange: attempts are retried on transient failures (5xx, 429 with
/// its `Retry-After`, dropped connections, timeouts) with capped, jittered exponential backoff,
/// and the whole exchange ends within the request timeout (at most 30 s). Build the client with
/// [`client::connect`], which turns kube's own retries off so these are the only ones.
pub struct Cluster {
    client: kube::Client,
    namespace: String,
    policy: RetryPolicy,
    /// The operation's deadline on the `origin` clock, when one was set: retries stop at it.
    deadline: Option<Instant>,
    /// The origin of [`Substrate::now`]: construction, fixed for the `Cluster`'s life.
    origin: Instant,
    jitter_seed: RandomState,
    jitter_draws: AtomicU64,
    /// The pod watches kept between waits and the resourceVersions this `Cluster`'s creates
    /// answered (`watch`).
    watches: watch::Watches,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("namespace", &self.namespace)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// One operation on one object, as its errors name it (`could not read pod agents/x: …`).
struct Call {
    operation: Operation,
    object: String,
}

impl Call {
    fn new(operation: Operation, object: impl Into<String>) -> Self {
        Self {
            operation,
            object: object.into(),
        }
    }

    /// The caller's error for a failure of this call.
    fn error(&self, failure: Failure) -> RequestFailure {
        failure.into_failure(self.operation, self.object.clone())
    }
}

/// A request as kube's builders return it.
type Built = Result<http::Request<Vec<u8>>, kube::core::request::Error>;

impl Cluster {
    /// A `Cluster` working in `namespace` through `client`, with the default retry policy
    /// (30 s per operation).
    pub fn new(client: kube::Client, namespace: impl Into<String>) -> Self {
        Self {
            client,
            namespace: namespace.into(),
            policy: RetryPolicy::default(),
            deadline: None,
            origin: Instant::now(),
            jitter_seed: RandomState::new(),
            jitter_draws: AtomicU64::new(0),
            watches: watch::Watches::default(),
        }
    }

    /// This `Cluster` with every operation (all its attempts and waits) bounded by `timeout`,
    /// clamped to 1 ms ..= 30 s.
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.policy = self.policy.with_budget(timeout);
        self
    }

    /// This `Cluster` with its operation's deadline `after` its construction (the clock of
    /// [`Substrate::now`], the one the driver's deadline is measured on): no request is
    /// retried past it, and no attempt runs longer than one attempt limit after it, so the
    /// operation overruns the deadline by at most the request in flight (`retry::Window`).
    #[must_use]
    pub fn with_deadline(mut self, after: Duration) -> Self {
        self.deadline = Some(self.origin + after);
        self
    }

    /// This `Cluster` with a custom retry policy (its budget clamped to 1 ms ..= 30 s).
    #[must_use]
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy.with_budget(policy.budget);
        self
    }

    /// The retry policy in force.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.policy
    }

    fn pods_path(&self) -> String {
        Pod::url_path(&(), Some(&self.namespace))
    }

    fn secrets_path(&self) -> String {
        Secret::url_path(&(), Some(&self.namespace))
    }

    /// A list as errors name it: `in <namespace> matching <selector>`.
    fn list_object(&self, selector: &str) -> String {
        format!("in {} matching {selector}", self.namespace)
    }

    /// An object as errors name it: `<namespace>/<name>`.
    fn object(&self, name: &str) -> String {
        format!("{}/{name}", self.namespace)
    }

    /// A fresh random word for backoff jitter.
    fn jitter(&self) -> u64 {
        let draw = self.jitter_draws.fetch_add(1, Ordering::Relaxed);
        let mut hasher = self.jitter_seed.build_hasher();
        hasher.write_u64(draw);
        hasher.finish()
    }

    /// Send `request` through the exchange layer, retried within the budget.
    async fn exchange(&self, call: &Call, request: Built) -> Exchanged {
        let request = match request {
            Ok(request) => request,
            Err(error) => {
                return Exchanged {
                    result: Err(Failure::Transport {
                        kind: TransportKind::Other,
                        cause: TransportCause::Other,
                        message: format!(
                            "the request could not be built: {}",
                            mapping::describe_chain(&error)
                        ),
                    }),
                    retried: false,
                };
            }
        };
        let jitter = || self.jitter();
        let window = match self.deadline {
            None => Window::budget(&self.policy),
            Some(deadline) => {
                let now = Instant::now();
                Window::before_deadline(
                    &self.policy,
                    deadline.saturating_duration_since(now),
                    now.saturating_duration_since(deadline),
                )
            }
        };
        exchange::retrying(
            &self.client,
            &self.policy,
            window,
            jitter,
            &request,
            call.operation,
            &call.object,
        )
        .await
    }

    /// A request that must answer 2xx: its reply, or the call's error.
    async fn fetch(&self, call: &Call, request: Built) -> Result<Reply, RequestFailure> {
        self.exchange(call, request)
            .await
            .result
            .map_err(|failure| call.error(failure))
    }

    /// A read that may confirm absence: `None` for a `NotFound` refusal.
    async fn read(&self, call: &Call, request: Built) -> Result<Option<Reply>, RequestFailure> {
        match self.exchange(call, request).await.result {
            Ok(reply) => Ok(Some(reply)),
            Err(failure) if mapping::is_absent(&failure) => Ok(None),
            Err(failure) => Err(call.error(failure)),
        }
    }

    /// A request whose refusal may be an outcome: `done` for a 2xx, `outcome`'s answer for a
    /// refusal it recognises, else the call's error.
    async fn decide<T>(
        &self,
        call: &Call,
        request: Built,
        done: T,
        outcome: impl Fn(&Failure) -> Option<T>,
    ) -> Result<T, RequestFailure> {
        match self.exchange(call, request).await.result {
            Ok(_) => Ok(done),
            Err(failure) => outcome(&failure).ok_or_else(|| call.error(failure)),
        }
    }

    /// The pod's current resourceVersion by a quorum read; `None` when it is absent or the
    /// read failed (the watch then starts from "now", which costs at most an early wake-up).
    async fn current_resource_version(&self, name: &str) -> Option<String> {
        match self.get_pod(name).await {
            Ok(Some(pod)) => pod.metadata.resource_version,
            Ok(None) => None,
            Err(error) => {
                tracing::debug!(pod = name, error = %error, "baseline read for the watch failed");
                None
            }
        }
    }
}

/// Decode a 2xx body. The message names only the position of the problem, never the content,
/// because a Secret body holds environment values.
fn decode<T: DeserializeOwned>(body: &[u8], what: &str) -> Result<T, Failure> {
    serde_json::from_slice(body).map_err(|error| Failure::Transport {
        kind: TransportKind::Undecodable,
        cause: TransportCause::Other,
        message: format!(
            "the answer could not be decoded as {what} (line {}, column {})",
            error.line(),
            error.column()
        ),
    })
}

/// The delete options of a fenced delete: `preconditions: {uid, resourceVersion}` of the
/// observation that authorised it, and nothing else: no gracePeriodSeconds (the object's own
/// grace applies; 0 would be a force kill) and no propagation policy (deploy.md § Semantics
/// relied on, items 3 and 5).
fn fenced_delete(fence: &Fence) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(fence.uid().to_owned()),
            resource_version: Some(fence.resource_version().to_owned()),
        }),
        ..DeleteParams::default()
    }
}

/// Serialize a request body. Only the position of a failure is reported, never the content.
fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, Failure> {
    serde_json::to_vec(value).map_err(|_| Failure::Transport {
        kind: TransportKind::Other,
        cause: TransportCause::Other,
        message: "the object could not be serialized".to_owned(),
    })
}

impl Substrate for Cluster {
    fn namespace(&self) -> &str {
        &self.namespace
    }

    async fn ensure_namespace(&self) -> Result<NamespaceCheck, NamespaceFailure> {
        let namespace = self.namespace.clone();
        let get = Call::new(Operation::GetNamespace, namespace.clone());
        let create = Call::new(Operation::CreateNamespace, get.object.clone());
        let failed = |call: &Call, failure: Failure| NamespaceFailure::Failed(call.error(failure));
        let request =
            Request::new(Namespace::url_path(&(), None)).get(&namespace, &GetParams::default());
        let got = self.exchange(&get, request).await.result;
        match mapping::after_namespace_get(got.map(|_| ())) {
            AfterNamespaceGet::Exists => return Ok(NamespaceCheck::Present),
            AfterNamespaceGet::Continue => {
                tracing::debug!(%namespace, "reading the namespace is forbidden; continuing without ensuring it");
                return Ok(NamespaceCheck::Unchecked);
            }
            AfterNamespaceGet::Fail(failure) => return Err(failed(&get, failure)),
            AfterNamespaceGet::Create => {}
        }
        let body = Namespace {
            metadata: ObjectMeta {
                name: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let body = encode(&body).map_err(|failure| failed(&create, failure))?;
        let request =
            Request::new(Namespace::url_path(&(), None)).create(&PostParams::default(), body);
        let created = self.exchange(&create, request).await.result;
        match mapping::after_namespace_create(created.map(|_| ())) {
            AfterNamespaceCreate::Done => Ok(NamespaceCheck::Present),
            AfterNamespaceCreate::Forbidden => Err(NamespaceFailure::CreateForbidden),
            AfterNamespaceCreate::Fail(failure) => Err(failed(&create, failure)),
        }
    }

    async fn list_pods(&self, selector: &str) -> Result<Listed<Pod>, RequestFailure> {
        let call = Call::new(Operation::ListPods, self.list_object(selector));
        let request = Request::new(self.pods_path()).list(&ListParams::default().labels(selector));
        let reply = self.fetch(&call, request).await?;
        let server_now = reply
            .headers
            .get(http::header::DATE)
            .and_then(|value| value.to_str().ok())
            .and_then(mapping::parse_imf_fixdate);
        let list: ObjectList<Pod> =
            decode(&reply.body, "a pod list").map_err(|failure| call.error(failure))?;
        Ok(Listed {
            items: list.items,
            server_now,
        })
    }

    async fn list_all_pods(
        &self,
        selector: &str,
        page: NonZeroU32,
    ) -> Result<Listed<Pod>, RequestFailure> {
        self.all_pods(selector, page).await
    }

    async fn list_all_secrets(
        &self,
        selector: &str,
        page: NonZeroU32,
    ) -> Result<Vec<Secret>, RequestFailure> {
        self.all_secrets(selector, page).await
    }

    async fn write_pod_expiry(&self, write: &ExpiryWrite) -> Result<WriteAnswer, RequestFailure> {
        self.patch_expiry(write).await
    }

    async fn list_secrets(&self, selector: &str) -> Result<Vec<Secret>, RequestFailure> {
        let call = Call::new(Operation::ListSecrets, self.list_object(selector));
        let request =
            Request::new(self.secrets_path()).list(&ListParams::default().labels(selector));
        let reply = self.fetch(&call, request).await?;
        let list: ObjectList<Secret> =
            decode(&reply.body, "a secret list").map_err(|failure| call.error(failure))?;
        Ok(list.items)
    }

    async fn get_pod(&self, name: &str) -> Result<Option<Pod>, RequestFailure> {
        let call = Call::new(Operation::GetPod, self.object(name));
        let request = Request::new(self.pods_path()).get(name, &GetParams::default());
        match self.read(&call, request).await? {
            Some(reply) => decode(&reply.body, "a pod")
                .map(Some)
                .map_err(|failure| call.error(failure)),
            None => Ok(None),
        }
    }

    async fn secret_exists(&self, name: &str) -> Result<bool, RequestFailure> {
        let call = Call::new(Operation::GetSecret, self.object(name));
        // Metadata only (`as=PartialObjectMetadata`): the values never travel. A 2xx is the
        // proof of existence; the body is not decoded.
        let request = Request::new(self.secrets_path()).get_metadata(name, &GetParams::default());
        Ok(self.read(&call, request).await?.is_some())
    }

    async fn read_secret_values(&self, name: &str) -> Result<Option<SecretValues>, RequestFailure> {
        let call = Call::new(Operation::GetSecret, self.object(name));
        let request = Request::new(self.secrets_path()).get(name, &GetParams::default());
        let Some(reply) = self.read(&call, request).await? else {
            return Ok(None);
        };
        let secret: Secret = decode(&reply.body, "a secret").map_err(|f| call.error(f))?;
        let values = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key, value.0))
            .collect();
        Ok(Some(SecretValues::new(values)))
    }

    async fn get_network_policy(
        &self,
        name: &str,
    ) -> Result<Option<NetworkPolicy>, RequestFailure> {
        self.policy_get(name).await
    }

    async fn create_network_policy(
        &self,
        policy: &NetworkPolicy,
    ) -> Result<CreateAnswer, RequestFailure> {
        self.policy_create(policy).await
    }

    async fn update_network_policy(
        &self,
        policy: &NetworkPolicy,
        fence: &Fence,
    ) -> Result<bool, RequestFailure> {
        self.policy_update(policy, fence).await
    }

    async fn delete_network_policy(
        &self,
        deletion: &PolicyDeletion,
    ) -> Result<DeleteAnswer, RequestFailure> {
        self.policy_delete(deletion).await
    }

    async fn get_workspace_claim(
        &self,
        name: &str,
    ) -> Result<Option<PersistentVolumeClaim>, RequestFailure> {
        self.claim_get(name).await
    }

    async fn create_workspace_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<CreateAnswer, RequestFailure> {
        self.claim_create(claim).await
    }

    async fn delete_workspace_claim(
        &self,
        deletion: &ClaimDeletion,
    ) -> Result<DeleteAnswer, RequestFailure> {
        self.claim_delete(deletion).await
    }

    async fn service_account_exists(&self, name: &str) -> Result<bool, RequestFailure> {
        let call = Call::new(Operation::GetServiceAccount, self.object(name));
        let path = ServiceAccount::url_path(&(), Some(&self.namespace));
        let request = Request::new(path).get(name, &GetParams::default());
        // A 2xx is the proof of existence; the body (token references) is not decoded.
        Ok(self.read(&call, request).await?.is_some())
    }

    async fn create_secret(&self, secret: &Secret) -> Result<CreateAnswer, RequestFailure> {
        let name = secret.metadata.name.as_deref().unwrap_or("<unnamed>");
        let call = Call::new(Operation::CreateSecret, self.object(name));
        let body = encode(secret).map_err(|failure| call.error(failure))?;
        let request = Request::new(self.secrets_path()).create(&PostParams::default(), body);
        let exchanged = self.exchange(&call, request).await;
        let outcome = match exchanged.result {
            Ok(_) => CreateAnswer::Created,
            Err(failure) => mapping::create_answer(&failure).ok_or_else(|| call.error(failure))?,
        };
        Ok(mapping::secret_create_answer(outcome, exchanged.retried))
    }

    async fn create_pod(&self, pod: &Pod) -> Result<CreateAnswer, RequestFailure> {
        let name = pod.metadata.name.as_deref().unwrap_or("<unnamed>");
        let call = Call::new(Operation::CreatePod, self.object(name));
        let body = encode(pod).map_err(|failure| call.error(failure))?;
        let request = Request::new(self.pods_path()).create(&PostParams::default(), body);
        // A retried create that answers AlreadyExists goes through the normal adopt path: the
        // lost-race path verifies whatever holds the name before adopting it.
        match self.exchange(&call, request).await.result {
            Ok(reply) => {
                // The wait after this create watches from here, with no baseline read.
                if let Some(rv) = serde_json::from_slice::<serde_json::Value>(&reply.body)
                    .ok()
                    .as_ref()
                    .and_then(watch::resource_version_of)
                {
                    self.watches.created(name, rv);
                }
                Ok(CreateAnswer::Created)
            }
            Err(failure) => mapping::create_answer(&failure).ok_or_else(|| call.error(failure)),
        }
    }

    async fn check_pod_create(&self, pod: &Pod) -> Result<(), RequestFailure> {
        let name = pod.metadata.generate_name.as_deref().unwrap_or_default();
        let call = Call::new(Operation::CreatePod, self.object(name));
        let body = encode(pod).map_err(|failure| call.error(failure))?;
        let dry_run = PostParams {
            dry_run: true,
            field_manager: None,
        };
        let request = Request::new(self.pods_path()).create(&dry_run, body);
        // An answered refusal is the one the create would get; a transport failure leaves the
        // check unknown, and the replacing deploy then deletes nothing.
        self.exchange(&call, request)
            .await
            .result
            .map(|_| ())
            .map_err(|failure| call.error(failure))
    }

    async fn delete_pod(&self, deletion: &PodDeletion) -> Result<DeleteAnswer, RequestFailure> {
        let (name, fence) = (deletion.name(), deletion.fence());
        let call = Call::new(Operation::DeletePod, self.object(name));
        let params = DeleteParams {
            grace_period_seconds: deletion.grace().map(|g| g.seconds()),
            ..fenced_delete(fence)
        };
        let request = Request::new(self.pods_path()).delete(name, &params);
        self.decide(
            &call,
            request,
            DeleteAnswer::Accepted,
            mapping::delete_answer,
        )
        .await
    }

    async fn delete_secret(
        &self,
        deletion: &SecretDeletion,
    ) -> Result<DeleteAnswer, RequestFailure> {
        let (name, uid) = (deletion.name(), deletion.uid());
        let call = Call::new(Operation::DeleteSecret, self.object(name));
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let request = Request::new(self.secrets_path()).delete(name, &params);
        self.decide(
            &call,
            request,
            DeleteAnswer::Accepted,
            mapping::delete_answer,
        )
        .await
    }

    async fn read_node(&self, name: &str) -> apiary_classify::stuck::NodeFacts {
        self.node_facts(name).await
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    async fn wait_for_pod_change(&self, name: &str, resource_version: Option<&str>, max: Duration) {
        let pods = watch::PodsAt {
            client: &self.client,
            namespace: &self.namespace,
        };
        let baseline = self.current_resource_version(name);
        self.watches
            .wait(pods, baseline, name, resource_version, max)
            .await;
    }

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}
