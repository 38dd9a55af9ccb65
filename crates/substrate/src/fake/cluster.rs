//! [`FakeCluster`] itself: its state (model, call log, scripts, hooks, clocks), construction,
//! direct model access for test setup, and the scripting API (queued [`Step`]s, races, poll
//! hooks, ready-made refusals). Test-only; nothing here is logged as a call, and the `Substrate`
//! answers live in `serve` (the call log queries in `log`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use apiary_classify::failure::Operation;
use apiary_cluster_model::kubelet::PodScript;
use apiary_cluster_model::{ClusterModel, ListOptions, ModelError};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::jiff::Timestamp;

use crate::fake::call::Call;
use crate::fake::clock::{ServerClock, to_chrono};
use crate::fake::errors::{api_error, object_name};
use crate::fake::step::{ModelHook, PollHook, Step};
use crate::substrate::{CreateAnswer, DeleteAnswer, NamespaceFailure};
use apiary_classify::failure::RequestFailure;

pub(crate) struct State {
    pub(crate) calls: Vec<Call>,
    pub(crate) constructed: Timestamp,
    pub(crate) origin: Timestamp,
    pub(crate) polls: u32,
    pub(crate) latency: Duration,
    pub(crate) server_clock: ServerClock,
    pub(crate) steps: BTreeMap<Operation, VecDeque<Step>>,
    pub(crate) poll_hooks: BTreeMap<u32, Vec<ModelHook>>,
    pub(crate) every_poll: Vec<PollHook>,
    /// Whether node reads answer 403 (`FakeCluster::deny_node_reads`).
    pub(crate) node_reads_denied: bool,
    /// The NetworkPolicies of the namespace (the cluster model has no such kind), by name.
    pub(crate) policies: BTreeMap<String, NetworkPolicy>,
    /// The last resourceVersion given to a policy or claim (`fake/named.rs`).
    pub(crate) kept_version: u64,
    /// The PersistentVolumeClaims of the namespace (the model has no such kind), by name.
    pub(crate) claims: BTreeMap<String, PersistentVolumeClaim>,
}

/// The in-memory [`Substrate`](crate::Substrate) (see the module docs).
pub struct FakeCluster {
    pub(crate) namespace: String,
    pub(crate) model: Mutex<ClusterModel>,
    pub(crate) state: Mutex<State>,
}

impl std::fmt::Debug for FakeCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeCluster")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking test hook poisons the lock; the data is still consistent for inspection.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FakeCluster {
    /// A fake bound to `namespace`, which exists (created at construction).
    pub fn new(namespace: &str) -> Self {
        let mut model = ClusterModel::default();
        model.ensure_namespace(namespace);
        Self::from_model(namespace, model)
    }

    /// A fake bound to `namespace`, which does not exist yet (creates into it answer 404 until
    /// `ensure_namespace` or a test creates it).
    pub fn without_namespace(namespace: &str) -> Self {
        Self::from_model(namespace, ClusterModel::default())
    }

    /// A fake over a prepared model; `now` and `elapsed` count from the model's current clock.
    pub fn from_model(namespace: &str, model: ClusterModel) -> Self {
        let origin = model.now();
        Self {
            namespace: namespace.to_owned(),
            model: Mutex::new(model),
            state: Mutex::new(State {
                calls: Vec::new(),
                constructed: origin,
                origin,
                polls: 0,
                latency: Duration::ZERO,
                server_clock: ServerClock::None,
                steps: BTreeMap::new(),
                poll_hooks: BTreeMap::new(),
                every_poll: Vec::new(),
                node_reads_denied: false,
                policies: BTreeMap::new(),
                kept_version: 0,
                claims: BTreeMap::new(),
            }),
        }
    }

    // ---- model access --------------------------------------------------------------------

    /// Lock the model for direct inspection or change (not logged). Do not hold the guard
    /// across a call on the fake.
    pub fn model(&self) -> MutexGuard<'_, ClusterModel> {
        lock(&self.model)
    }

    /// Run `f` on the model (not logged).
    pub fn with_model<R>(&self, f: impl FnOnce(&mut ClusterModel) -> R) -> R {
        f(&mut self.model())
    }

    /// The virtual clock.
    pub fn now(&self) -> DateTime<Utc> {
        to_chrono(self.model().now())
    }

    /// Advance the virtual clock without a call (test setup; not a poll, not logged).
    pub fn advance(&self, by: Duration) {
        self.model().advance(by);
    }

    /// Virtual time since construction or the last [`FakeCluster::reset_elapsed`] (a test's
    /// stopwatch; the driver reads [`Substrate::now`](crate::Substrate::now), which never
    /// restarts).
    pub fn elapsed(&self) -> Duration {
        let origin = lock(&self.state).origin;
        self.since(origin)
    }

    pub(crate) fn since(&self, origin: Timestamp) -> Duration {
        let now = self.model().now();
        Duration::try_from(now.duration_since(origin)).unwrap_or_default()
    }

    /// Restart [`FakeCluster::elapsed`] from the current virtual time (a new operation).
    pub fn reset_elapsed(&self) {
        let now = self.model().now();
        lock(&self.state).origin = now;
    }

    /// Virtual time each request (not `sleep`/`wait_for_pod_change`) takes; default 0.
    pub fn set_request_latency(&self, latency: Duration) {
        lock(&self.state).latency = latency;
    }

    /// What `list_pods` reports as `server_now` (default [`ServerClock::None`]).
    pub fn set_server_clock(&self, clock: ServerClock) {
        lock(&self.state).server_clock = clock;
    }

    /// The pod `name` in the fake's namespace, if present.
    pub fn pod(&self, name: &str) -> Option<Pod> {
        self.model().get_pod(&self.namespace, name).ok()
    }

    /// The Secret `name` in the fake's namespace, if present.
    pub fn secret(&self, name: &str) -> Option<Secret> {
        self.model().get_secret(&self.namespace, name).ok()
    }

    /// Every pod in the fake's namespace, by name.
    pub fn pods(&self) -> Vec<Pod> {
        self.model()
            .list_pods(Some(&self.namespace), &ListOptions::default())
            .map(|p| p.items)
            .unwrap_or_default()
    }

    /// Every Secret in the fake's namespace, by name.
    pub fn secrets(&self) -> Vec<Secret> {
        self.model()
            .list_secrets(Some(&self.namespace), &ListOptions::default())
            .map(|p| p.items)
            .unwrap_or_default()
    }

    /// Insert a pod as given (see [`ClusterModel::insert_pod`]); its namespace defaults to the
    /// fake's. Inert: the kubelet never changes it.
    ///
    /// # Errors
    /// `AlreadyExists` when the name is taken; `Invalid` without a name.
    pub fn insert_pod(&self, pod: Pod) -> Result<Pod, ModelError> {
        self.insert_pod_with_script(pod, PodScript::Inert)
    }

    /// [`FakeCluster::insert_pod`] with a kubelet script.
    ///
    /// # Errors
    /// As [`FakeCluster::insert_pod`].
    pub fn insert_pod_with_script(&self, pod: Pod, script: PodScript) -> Result<Pod, ModelError> {
        let pod = self.in_namespace_pod(pod);
        self.model().insert_pod_with_script(pod, script)
    }

    /// Insert a Secret as given (chosen uid and creationTimestamp kept); its namespace defaults
    /// to the fake's.
    ///
    /// # Errors
    /// `AlreadyExists` when the name is taken; `Invalid` without a name.
    pub fn insert_secret(&self, mut secret: Secret) -> Result<Secret, ModelError> {
        secret
            .metadata
            .namespace
            .get_or_insert_with(|| self.namespace.clone());
        self.model().insert_secret(secret)
    }

    pub(crate) fn in_namespace_pod(&self, mut pod: Pod) -> Pod {
        pod.metadata
            .namespace
            .get_or_insert_with(|| self.namespace.clone());
        pod
    }

    /// Start pod `name` now (the kubelet stops scripting it).
    ///
    /// # Errors
    /// `NotFound` when absent.
    pub fn start_pod(&self, name: &str) -> Result<Pod, ModelError> {
        self.model().start_pod(&self.namespace, name)
    }

    /// Terminate pod `name` now with `exit_code` (phase Failed, Succeeded for 0).
    ///
    /// # Errors
    /// `NotFound` when absent.
    pub fn terminate_pod(&self, name: &str, exit_code: i32) -> Result<Pod, ModelError> {
        self.model().terminate_pod(&self.namespace, name, exit_code)
    }

    /// Remove pod `name` at once (it vanishes).
    ///
    /// # Errors
    /// `NotFound` when absent.
    pub fn remove_pod(&self, name: &str) -> Result<Pod, ModelError> {
        self.model().remove_pod(&self.namespace, name)
    }

    /// Every future pod created under `name` follows `script` (unless one is queued).
    pub fn script_pods_named(&self, name: &str, script: PodScript) {
        self.model()
            .script_pods_named(&self.namespace, name, script);
    }

    /// The next pods created under `name` follow these scripts, one per create.
    pub fn queue_pod_scripts(&self, name: &str, scripts: impl IntoIterator<Item = PodScript>) {
        self.model()
            .queue_pod_scripts(&self.namespace, name, scripts);
    }

    /// Give the existing pod `name` a new script starting now.
    ///
    /// # Errors
    /// `NotFound` when absent.
    pub fn set_pod_script(&self, name: &str, script: PodScript) -> Result<(), ModelError> {
        self.model().set_pod_script(&self.namespace, name, script)
    }

    // ---- scripting -----------------------------------------------------------------------

    /// Append `step` to the queue of `op`: the next call of `op` not answered by an earlier
    /// step gets it.
    ///
    /// # Panics
    /// When the step cannot answer `op` (a create outcome for a delete, a namespace error for
    /// anything but `ensure_namespace`): a mistake in the test's setup.
    pub fn queue(&self, op: Operation, step: Step) {
        assert!(step.fits(op), "{step:?} cannot answer {op:?}");
        lock(&self.state)
            .steps
            .entry(op)
            .or_default()
            .push_back(step);
    }

    /// The next call of `op` behaves normally (to target the one after).
    pub fn pass_next(&self, op: Operation) {
        self.queue(op, Step::Pass);
    }

    /// The next call of `op` answers `error`, touching nothing.
    pub fn fail_next(&self, op: Operation, error: RequestFailure) {
        self.queue(op, Step::Fail(error));
    }

    /// The next `n` calls of `op` answer `error`, touching nothing.
    pub fn fail_next_n(&self, op: Operation, n: usize, error: &RequestFailure) {
        for _ in 0..n {
            self.queue(op, Step::Fail(error.clone()));
        }
    }

    /// The next call of `op` is performed on the model, then answers `error`.
    pub fn land_then_fail_next(&self, op: Operation, error: RequestFailure) {
        self.queue(op, Step::LandThenFail(error));
    }

    /// The next `ensure_namespace` answers `error`.
    pub fn fail_next_ensure_namespace(&self, error: NamespaceFailure) {
        self.queue(Operation::EnsureNamespace, Step::Namespace(error));
    }

    /// The next `create_pod` answers `outcome` without touching the model.
    pub fn answer_next_create_pod(&self, outcome: CreateAnswer) {
        self.queue(Operation::CreatePod, Step::Create(outcome));
    }

    /// The next `create_secret` answers `outcome` without touching the model.
    pub fn answer_next_create_secret(&self, outcome: CreateAnswer) {
        self.queue(Operation::CreateSecret, Step::Create(outcome));
    }

    /// The next `delete_pod` answers `outcome` without touching the model (R6: GC's delete
    /// answers PreconditionFailed while the pod stays).
    pub fn answer_next_delete_pod(&self, outcome: DeleteAnswer) {
        self.queue(Operation::DeletePod, Step::Delete(outcome));
    }

    /// The next `delete_secret` answers `outcome` without touching the model.
    pub fn answer_next_delete_secret(&self, outcome: DeleteAnswer) {
        self.queue(Operation::DeleteSecret, Step::Delete(outcome));
    }

    /// Run `hook` on the model just before the next call of `op`, which then behaves normally.
    pub fn before_next(
        &self,
        op: Operation,
        hook: impl FnOnce(&mut ClusterModel) + Send + 'static,
    ) {
        self.queue(op, Step::Before(Box::new(hook)));
    }

    /// The next `create_pod` loses the race: `winner` (built by the test, same name) is inserted
    /// first, so the model answers `AlreadyExists`. The winner is inert.
    pub fn race_next_pod_create(&self, winner: Pod) {
        self.race_next_pod_create_with_script(winner, PodScript::Inert);
    }

    /// [`FakeCluster::race_next_pod_create`] with a kubelet script for the winner.
    pub fn race_next_pod_create_with_script(&self, winner: Pod, script: PodScript) {
        let winner = self.in_namespace_pod(winner);
        self.before_next(Operation::CreatePod, move |model| {
            // A winner that cannot be inserted is a broken test setup; say so loudly.
            if let Err(e) = model.insert_pod_with_script(winner, script) {
                panic!("race winner could not be inserted: {e}");
            }
        });
    }

    /// Run `hook` on the model when poll `n` (1-based; every `sleep` and
    /// `wait_for_pod_change` is a poll) has advanced the clock.
    pub fn on_poll(&self, n: u32, hook: impl FnOnce(&mut ClusterModel) + Send + 'static) {
        lock(&self.state)
            .poll_hooks
            .entry(n)
            .or_default()
            .push(Box::new(hook));
    }

    /// Run `hook` after every poll, with the poll's number.
    pub fn on_every_poll(&self, hook: impl FnMut(u32, &mut ClusterModel) + Send + 'static) {
        lock(&self.state).every_poll.push(Box::new(hook));
    }

    /// A 403 `Forbidden` refusal as RBAC words it, for `operation` on `object` (`agents/x`,
    /// or a list's `in agents matching …`: no name).
    pub fn forbidden(&self, operation: Operation, object: &str) -> RequestFailure {
        let name = object_name(object);
        let subject = if name.is_empty() {
            operation.resource().to_owned()
        } else {
            format!("{} \"{name}\"", operation.resource())
        };
        api_error(
            operation,
            object,
            403,
            "Forbidden",
            &format!(
                "{subject} is forbidden: User \"apiary-test\" cannot {} resource \"{}\" in API \
                 group \"\" in the namespace \"{}\"",
                operation.verb(),
                operation.resource(),
                self.namespace
            ),
        )
    }

    /// A 403 `Forbidden` ResourceQuota refusal of creating `object` (`agents/x`).
    pub fn quota_exceeded(&self, operation: Operation, object: &str) -> RequestFailure {
        api_error(
            operation,
            object,
            403,
            "Forbidden",
            &format!(
                "{} \"{}\" is forbidden: exceeded quota: compute, requested: \
                 limits.memory=4Gi, used: limits.memory=8Gi, limited: limits.memory=8Gi",
                operation.resource(),
                object_name(object)
            ),
        )
    }
}
