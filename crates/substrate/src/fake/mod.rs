//! `FakeCluster`: an in-memory [`Substrate`] for tests (deploy.md § Test fixtures), built on the
//! shared apiserver + kubelet model of `apiary-cluster-model` and a **virtual clock**. Test-only
//! (feature `fake`); performs no I/O, never reads a real clock, and never builds apiary pods or
//! Secrets itself — it stores whatever objects it is given (fixture pods come from the real
//! builder in `crate::build`).
//!
//! # The clock
//!
//! The model clock starts at 2026-08-02T04:00:00Z
//! ([`apiary_cluster_model::DEFAULT_EPOCH_SECONDS`]) and advances **only** in
//! [`Substrate::sleep`] (by exactly the duration), in [`Substrate::wait_for_pod_change`] (until
//! the pod changes or `max` has passed) and by the per-request latency (default 0, see
//! [`FakeCluster::set_request_latency`]), plus explicit test calls ([`FakeCluster::advance`]).
//! Kubelet steps and graceful removals run at their own due times as the clock passes them.
//! [`Substrate::now`] is the virtual time since construction; [`FakeCluster::elapsed`] is a test's
//! stopwatch over the same clock, restarted by [`FakeCluster::reset_elapsed`] (R18: "clock reset
//! between" two deploys).
//!
//! # What each call does
//!
//! | call | model operation | answer |
//! |---|---|---|
//! | `ensure_namespace` | create the namespace when missing | `Ok(())` |
//! | `list_pods(sel)` | list in the namespace with the label selector | items (name order) + `server_now` from [`ServerClock`] (default none) |
//! | `list_secrets(sel)` | same for Secrets | items |
//! | `get_pod(name)` | get | `Some(pod)`, `None` on 404 |
//! | `secret_exists(name)` | get | `true`, `false` on 404 |
//! | `create_secret` / `create_pod` | create (uid, rv, creationTimestamp stamped; the kubelet script attached) | `Created`, `AlreadyExists` on 409; a missing namespace is `Err(Api 404 NotFound)` |
//! | `delete_pod(deletion)` | delete with preconditions `{uid, resourceVersion}`, no grace override | `Accepted` (graceful mark or removal), `NotFound`, `PreconditionFailed` on 409 Conflict |
//! | `delete_secret(deletion)` | delete with precondition `{uid}` | `Accepted`, `NotFound`, `PreconditionFailed` |
//! | `sleep(d)` | advance the clock by `d` | — |
//! | `wait_for_pod_change(name, rv, max)` | advance step by step until the pod's rv differs from `rv` (or, with `None`, from its state at the call; appearing/disappearing counts) or `max` passed; returns at once if it already differs | — |
//!
//! Errors are [`SubstrateError::Api`] with the apiserver's literal code/reason/message and the
//! object named `pod/<name>`, `secret/<name>`, `namespace/<ns>`, or `pods` / `secrets` for lists.
//!
//! # The call log
//!
//! Every call is appended to an ordered log of [`Call`]s — also calls answered by a scripted
//! step. Query it with [`FakeCluster::calls`], [`FakeCluster::mutations`] (namespace ensure,
//! creates, deletes: the "writes" of R2/R21/S5), [`FakeCluster::mutation_summaries`] (strings
//! like `ensure_namespace agents`, `delete_pod p uid=u rv=7`), [`FakeCluster::creates_of_secrets`],
//! [`FakeCluster::creates_of_pods`], [`FakeCluster::pod_deletes`] (with fences),
//! [`FakeCluster::secret_deletes`] (with uids), [`FakeCluster::sleeps`]; reset it with
//! [`FakeCluster::clear_calls`].
//!
//! # Scripting
//!
//! * **Scripted answers** ([`Step`]): a FIFO queue per request kind ([`Op`]); each call of that
//!   kind consumes the next step: [`Step::Pass`] (behave normally), [`Step::Fail`] (answer the
//!   error, model untouched), [`Step::LandThenFail`] (perform on the model, then answer the
//!   error — a create that landed but whose answer was lost), [`Step::Create`] /
//!   [`Step::Delete`] (answer that outcome, model untouched), [`Step::Before`] (run a closure on
//!   the model, then behave normally — e.g. start the pod between a read and its delete, R7),
//!   [`Step::Namespace`] (fail `ensure_namespace` with that error). Shorthands:
//!   [`FakeCluster::fail_next`], [`FakeCluster::answer_next_create_pod`],
//!   [`FakeCluster::answer_next_delete_pod`], [`FakeCluster::before_next`], …; ready-made errors:
//!   [`FakeCluster::forbidden`], [`FakeCluster::quota_exceeded`], [`transport_failure`],
//!   [`server_error`], [`api_error`].
//! * **The create race** ([`FakeCluster::race_next_pod_create`]): the next `create_pod` first
//!   inserts the test's winner pod (absent at observation, present at create — the real order),
//!   so the model itself answers `AlreadyExists`. The winner is inert unless given a script
//!   ([`FakeCluster::race_next_pod_create_with_script`]).
//! * **Poll hooks** ([`FakeCluster::on_poll`], [`FakeCluster::on_every_poll`]): every `sleep`
//!   and every `wait_for_pod_change` is a *poll*, numbered from 1 since construction; the hook
//!   for poll `n` runs on the model right after that poll's clock advance, before the caller
//!   re-observes — "the pod runs from poll 5" is `on_poll(5, |m| { m.start_pod(NS, name); })`.
//! * **Kubelet scripts** (from the model): pods created through `create_pod` follow a
//!   [`PodScript`] — by default they are scheduled at once and start 1 s later (if their
//!   `envFrom` Secret exists; otherwise `CreateContainerConfigError`); choose another with
//!   [`FakeCluster::script_pods_named`], [`FakeCluster::queue_pod_scripts`],
//!   [`FakeCluster::set_pod_script`] or the image convention of
//!   [`apiary_cluster_model::kubelet`] (`…-crash@sha256:…` crashes, etc.).
//! * **Direct state**: [`FakeCluster::insert_pod`] / [`FakeCluster::insert_secret`] insert
//!   objects as given (chosen uid, resourceVersion above the counter, creationTimestamp for GC
//!   age scenarios, status); [`FakeCluster::start_pod`], [`FakeCluster::terminate_pod`],
//!   [`FakeCluster::remove_pod`], and anything else through [`FakeCluster::with_model`] /
//!   [`FakeCluster::model`]. None of these is logged as a call.
//!
//! Graceful deletion is the model's: a bound, non-terminal pod (it has `spec.nodeName` or
//! container statuses) stays visible with `deletionTimestamp` for its
//! `terminationGracePeriodSeconds` (60 for apiary pods) of virtual time; terminal and unbound
//! pods vanish at once.
//!
//! The fake is `Send + Sync`; its futures complete without yielding. Several tasks may share it,
//! but they share one virtual clock: each `sleep` moves it for everyone.
//!
//! ```
//! # use std::time::Duration;
//! use apiary_substrate::fake::FakeCluster;
//! use apiary_substrate::Substrate;
//!
//! # futures_lite(async {
//! let fake = FakeCluster::new("agents");
//! fake.ensure_namespace().await.unwrap();
//! assert!(fake.get_pod("p").await.unwrap().is_none());
//! fake.sleep(Duration::from_secs(2)).await;
//! assert_eq!(fake.elapsed(), Duration::from_secs(2));
//! assert_eq!(fake.mutation_summaries(), ["ensure_namespace agents"]);
//! # });
//! # fn futures_lite(f: impl std::future::Future<Output = ()>) {
//! #     let waker = std::task::Waker::noop();
//! #     let mut cx = std::task::Context::from_waker(&waker);
//! #     let mut f = std::pin::pin!(f);
//! #     assert!(f.as_mut().poll(&mut cx).is_ready(), "fake futures complete at once");
//! # }
//! ```

mod call;
pub mod proof;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use apiary_classify::fence::Fence;
use apiary_classify::verify::{PodDeletion, SecretDeletion};
use apiary_cluster_model::kubelet::PodScript;
use apiary_cluster_model::{ClusterModel, ListOptions, ModelError, Preconditions, add};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::jiff::Timestamp;

pub use call::{Call, Op};

use crate::substrate::{
    CreateOutcome, DeleteOutcome, Listed, NamespaceError, Operation, Substrate, SubstrateError,
};

/// A closure run on the model by a [`Step::Before`] or a poll hook.
pub type ModelHook = Box<dyn FnOnce(&mut ClusterModel) + Send>;

/// A closure run on the model after every poll, with the poll's number (1-based).
pub type PollHook = Box<dyn FnMut(u32, &mut ClusterModel) + Send>;

/// A scripted answer for the next call of one request kind (see the module docs).
pub enum Step {
    /// Behave normally (use it to let earlier calls through and target a later one).
    Pass,
    /// Answer this error; the model is untouched.
    Fail(SubstrateError),
    /// Perform the call on the model, then answer this error (the request landed, the answer
    /// was lost).
    LandThenFail(SubstrateError),
    /// Answer this create outcome without touching the model (`create_pod`/`create_secret`).
    Create(CreateOutcome),
    /// Answer this delete outcome without touching the model (`delete_pod`/`delete_secret`).
    Delete(DeleteOutcome),
    /// Run the closure on the model, then behave normally.
    Before(ModelHook),
    /// Fail `ensure_namespace` with this error (only for [`Op::EnsureNamespace`]).
    Namespace(NamespaceError),
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pass => f.write_str("Pass"),
            Self::Fail(e) => f.debug_tuple("Fail").field(e).finish(),
            Self::LandThenFail(e) => f.debug_tuple("LandThenFail").field(e).finish(),
            Self::Create(o) => f.debug_tuple("Create").field(o).finish(),
            Self::Delete(o) => f.debug_tuple("Delete").field(o).finish(),
            Self::Before(_) => f.write_str("Before(..)"),
            Self::Namespace(e) => f.debug_tuple("Namespace").field(e).finish(),
        }
    }
}

impl Step {
    /// Whether this step can answer a call of `op`.
    fn fits(&self, op: Op) -> bool {
        match self {
            Self::Pass | Self::Fail(_) | Self::LandThenFail(_) | Self::Before(_) => true,
            Self::Create(_) => matches!(op, Op::CreatePod | Op::CreateSecret),
            Self::Delete(_) => matches!(op, Op::DeletePod | Op::DeleteSecret),
            Self::Namespace(_) => op == Op::EnsureNamespace,
        }
    }
}

/// What `list_pods` reports as the apiserver's clock (`server_now`, the `Date` header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServerClock {
    /// No `Date` header: `server_now` is `None` (the default; GC skips the orphan sweep).
    #[default]
    None,
    /// The model clock — the clock `creationTimestamp`s come from.
    Model,
    /// The model clock shifted by this many seconds (a skewed server clock).
    ModelOffset(i64),
    /// A fixed instant.
    Fixed(DateTime<Utc>),
}

struct State {
    calls: Vec<Call>,
    constructed: Timestamp,
    origin: Timestamp,
    polls: u32,
    latency: Duration,
    server_clock: ServerClock,
    steps: BTreeMap<Op, VecDeque<Step>>,
    poll_hooks: BTreeMap<u32, Vec<ModelHook>>,
    every_poll: Vec<PollHook>,
}

/// The in-memory [`Substrate`] (see the module docs).
pub struct FakeCluster {
    namespace: String,
    model: Mutex<ClusterModel>,
    state: Mutex<State>,
}

impl std::fmt::Debug for FakeCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeCluster")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// Convert a model timestamp to the `chrono` type the `Substrate` trait uses.
pub fn to_chrono(at: Timestamp) -> DateTime<Utc> {
    let nanos = u32::try_from(at.subsec_nanosecond()).unwrap_or(0);
    DateTime::from_timestamp(at.as_second(), nanos).unwrap_or_default()
}

/// An apiserver refusal with a chosen status.
pub fn api_error(
    operation: Operation,
    object: &str,
    code: u16,
    reason: &str,
    message: &str,
) -> SubstrateError {
    SubstrateError::Api {
        operation,
        object: object.to_owned(),
        code,
        reason: reason.to_owned(),
        message: message.to_owned(),
    }
}

/// No answer at all (`connection reset by peer`): a transport failure carries no reason.
pub fn transport_failure(operation: Operation, object: &str) -> SubstrateError {
    SubstrateError::Transport {
        operation,
        object: object.to_owned(),
        message: "error trying to connect: connection reset by peer".to_owned(),
    }
}

/// 500 `InternalError`.
pub fn server_error(operation: Operation, object: &str) -> SubstrateError {
    api_error(
        operation,
        object,
        500,
        "InternalError",
        "Internal error occurred: etcdserver: request timed out",
    )
}

fn verb_of(operation: Operation) -> &'static str {
    match operation {
        Operation::GetNamespace
        | Operation::GetPod
        | Operation::GetSecret
        | Operation::GetServiceAccount => "get",
        Operation::CreateNamespace | Operation::CreateSecret | Operation::CreatePod => "create",
        Operation::ListPods | Operation::ListSecrets => "list",
        Operation::DeletePod | Operation::DeleteSecret => "delete",
        Operation::WatchPod => "watch",
    }
}

fn resource_of(operation: Operation) -> &'static str {
    match operation {
        Operation::GetNamespace | Operation::CreateNamespace => "namespaces",
        Operation::ListPods
        | Operation::GetPod
        | Operation::CreatePod
        | Operation::DeletePod
        | Operation::WatchPod => "pods",
        Operation::ListSecrets
        | Operation::GetSecret
        | Operation::CreateSecret
        | Operation::DeleteSecret => "secrets",
        Operation::GetServiceAccount => "serviceaccounts",
    }
}

fn object_name(object: &str) -> &str {
    object.split_once('/').map_or("", |(_, n)| n)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking test hook poisons the lock; the data is still consistent for inspection.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn model_error(operation: Operation, object: &str, error: &ModelError) -> SubstrateError {
    if let ModelError::ServiceAccountMissing { account, .. } = error {
        return SubstrateError::ServiceAccountMissing {
            operation,
            object: object.to_owned(),
            code: error.code(),
            account: account.clone(),
            message: error.to_string(),
        };
    }
    api_error(
        operation,
        object,
        error.code(),
        error.reason(),
        &error.to_string(),
    )
}

fn list_options(selector: &str) -> ListOptions {
    ListOptions {
        label_selector: Some(selector.to_owned()),
        ..ListOptions::default()
    }
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
    /// stopwatch; the driver reads [`Substrate::now`], which never restarts).
    pub fn elapsed(&self) -> Duration {
        let origin = lock(&self.state).origin;
        self.since(origin)
    }

    fn since(&self, origin: Timestamp) -> Duration {
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

    fn in_namespace_pod(&self, mut pod: Pod) -> Pod {
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
    pub fn queue(&self, op: Op, step: Step) {
        assert!(step.fits(op), "{step:?} cannot answer {op:?}");
        lock(&self.state)
            .steps
            .entry(op)
            .or_default()
            .push_back(step);
    }

    /// The next call of `op` behaves normally (to target the one after).
    pub fn pass_next(&self, op: Op) {
        self.queue(op, Step::Pass);
    }

    /// The next call of `op` answers `error`, touching nothing.
    pub fn fail_next(&self, op: Op, error: SubstrateError) {
        self.queue(op, Step::Fail(error));
    }

    /// The next `n` calls of `op` answer `error`, touching nothing.
    pub fn fail_next_n(&self, op: Op, n: usize, error: &SubstrateError) {
        for _ in 0..n {
            self.queue(op, Step::Fail(error.clone()));
        }
    }

    /// The next call of `op` is performed on the model, then answers `error`.
    pub fn land_then_fail_next(&self, op: Op, error: SubstrateError) {
        self.queue(op, Step::LandThenFail(error));
    }

    /// The next `ensure_namespace` answers `error`.
    pub fn fail_next_ensure_namespace(&self, error: NamespaceError) {
        self.queue(Op::EnsureNamespace, Step::Namespace(error));
    }

    /// The next `create_pod` answers `outcome` without touching the model.
    pub fn answer_next_create_pod(&self, outcome: CreateOutcome) {
        self.queue(Op::CreatePod, Step::Create(outcome));
    }

    /// The next `create_secret` answers `outcome` without touching the model.
    pub fn answer_next_create_secret(&self, outcome: CreateOutcome) {
        self.queue(Op::CreateSecret, Step::Create(outcome));
    }

    /// The next `delete_pod` answers `outcome` without touching the model (R6: GC's delete
    /// answers PreconditionFailed while the pod stays).
    pub fn answer_next_delete_pod(&self, outcome: DeleteOutcome) {
        self.queue(Op::DeletePod, Step::Delete(outcome));
    }

    /// The next `delete_secret` answers `outcome` without touching the model.
    pub fn answer_next_delete_secret(&self, outcome: DeleteOutcome) {
        self.queue(Op::DeleteSecret, Step::Delete(outcome));
    }

    /// Run `hook` on the model just before the next call of `op`, which then behaves normally.
    pub fn before_next(&self, op: Op, hook: impl FnOnce(&mut ClusterModel) + Send + 'static) {
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
        self.before_next(Op::CreatePod, move |model| {
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

    /// A 403 `Forbidden` refusal as RBAC words it, for `operation` on `object` (`pod/x`,
    /// `pods`).
    pub fn forbidden(&self, operation: Operation, object: &str) -> SubstrateError {
        let name = object_name(object);
        let subject = if name.is_empty() {
            resource_of(operation).to_owned()
        } else {
            format!("{} \"{name}\"", resource_of(operation))
        };
        api_error(
            operation,
            object,
            403,
            "Forbidden",
            &format!(
                "{subject} is forbidden: User \"apiary-test\" cannot {} resource \"{}\" in API \
                 group \"\" in the namespace \"{}\"",
                verb_of(operation),
                resource_of(operation),
                self.namespace
            ),
        )
    }

    /// A 403 `Forbidden` ResourceQuota refusal of creating `object` (`pod/x`).
    pub fn quota_exceeded(&self, operation: Operation, object: &str) -> SubstrateError {
        api_error(
            operation,
            object,
            403,
            "Forbidden",
            &format!(
                "{} \"{}\" is forbidden: exceeded quota: compute, requested: \
                 limits.memory=4Gi, used: limits.memory=8Gi, limited: limits.memory=8Gi",
                resource_of(operation),
                object_name(object)
            ),
        )
    }

    // ---- the call log --------------------------------------------------------------------

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state).calls.clone()
    }

    /// The writes so far (namespace ensure, creates, deletes), in order.
    pub fn mutations(&self) -> Vec<Call> {
        self.calls().into_iter().filter(Call::is_mutation).collect()
    }

    /// [`Call::summary`] of every write, in order.
    pub fn mutation_summaries(&self) -> Vec<String> {
        self.mutations().iter().map(Call::summary).collect()
    }

    /// [`Call::summary`] of every call, in order.
    pub fn call_summaries(&self) -> Vec<String> {
        self.calls().iter().map(Call::summary).collect()
    }

    /// The Secrets passed to `create_secret`, in order.
    pub fn creates_of_secrets(&self) -> Vec<Secret> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::CreateSecret { secret } => Some(secret),
                _ => None,
            })
            .collect()
    }

    /// The pods passed to `create_pod`, in order.
    pub fn creates_of_pods(&self) -> Vec<Pod> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::CreatePod { pod } => Some(pod),
                _ => None,
            })
            .collect()
    }

    /// Every `delete_pod` as (name, fence), in order.
    pub fn pod_deletes(&self) -> Vec<(String, Fence)> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::DeletePod { name, fence } => Some((name, fence)),
                _ => None,
            })
            .collect()
    }

    /// Every `delete_secret` as (name, uid), in order.
    pub fn secret_deletes(&self) -> Vec<(String, String)> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::DeleteSecret { name, uid } => Some((name, uid)),
                _ => None,
            })
            .collect()
    }

    /// The durations passed to `sleep`, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::Sleep { duration } => Some(duration),
                _ => None,
            })
            .collect()
    }

    /// How many polls (`sleep` + `wait_for_pod_change`) have happened.
    pub fn polls(&self) -> u32 {
        lock(&self.state).polls
    }

    /// Forget the call log (scripts, hooks and the clock are kept).
    pub fn clear_calls(&self) {
        lock(&self.state).calls.clear();
    }

    // ---- the machinery -------------------------------------------------------------------

    /// Log `call`, apply the request latency, and take the next scripted step of its kind.
    fn begin(&self, call: Call) -> Step {
        let (latency, step) = {
            let mut state = lock(&self.state);
            let op = call.op();
            state.calls.push(call);
            let step = op
                .and_then(|op| state.steps.get_mut(&op).and_then(VecDeque::pop_front))
                .unwrap_or(Step::Pass);
            (state.latency, step)
        };
        self.model().advance(latency);
        if let Step::Before(hook) = step {
            hook(&mut self.model());
            Step::Pass
        } else {
            step
        }
    }

    /// Count a poll and run its hooks (after the clock advance).
    fn end_poll(&self) {
        let (n, hooks, mut every) = {
            let mut state = lock(&self.state);
            state.polls += 1;
            let n = state.polls;
            let hooks = state.poll_hooks.remove(&n).unwrap_or_default();
            (n, hooks, std::mem::take(&mut state.every_poll))
        };
        {
            let mut model = self.model();
            for hook in hooks {
                hook(&mut model);
            }
            for hook in &mut every {
                hook(n, &mut model);
            }
        }
        let mut state = lock(&self.state);
        every.append(&mut state.every_poll);
        state.every_poll = every;
    }

    fn pod_object(name: &str) -> String {
        format!("pod/{name}")
    }

    fn secret_object(name: &str) -> String {
        format!("secret/{name}")
    }

    fn server_now(&self) -> Option<DateTime<Utc>> {
        let clock = lock(&self.state).server_clock;
        let now = self.model().now();
        match clock {
            ServerClock::None => None,
            ServerClock::Model => Some(to_chrono(now)),
            ServerClock::ModelOffset(seconds) => {
                Some(to_chrono(now) + chrono::Duration::seconds(seconds))
            }
            ServerClock::Fixed(at) => Some(at),
        }
    }

    fn pod_version(&self, name: &str) -> Option<String> {
        self.model()
            .get_pod(&self.namespace, name)
            .ok()
            .and_then(|p| p.metadata.resource_version)
    }

    fn create_answer(
        &self,
        step: Step,
        operation: Operation,
        object: &str,
        create: impl FnOnce(&mut ClusterModel) -> Result<(), ModelError>,
    ) -> Result<CreateOutcome, SubstrateError> {
        let landed_error = match step {
            Step::Fail(error) => return Err(error),
            Step::Create(outcome) => return Ok(outcome),
            Step::LandThenFail(error) => Some(error),
            _ => None,
        };
        let result = create(&mut self.model());
        if let Some(error) = landed_error {
            return Err(error);
        }
        match result {
            Ok(()) => Ok(CreateOutcome::Created),
            Err(ModelError::AlreadyExists { .. }) => Ok(CreateOutcome::AlreadyExists),
            Err(e) => Err(model_error(operation, object, &e)),
        }
    }

    fn delete_answer(
        &self,
        step: Step,
        operation: Operation,
        object: &str,
        delete: impl FnOnce(&mut ClusterModel) -> Result<(), ModelError>,
    ) -> Result<DeleteOutcome, SubstrateError> {
        let landed_error = match step {
            Step::Fail(error) => return Err(error),
            Step::Delete(outcome) => return Ok(outcome),
            Step::LandThenFail(error) => Some(error),
            _ => None,
        };
        let result = delete(&mut self.model());
        if let Some(error) = landed_error {
            return Err(error);
        }
        match result {
            Ok(()) => Ok(DeleteOutcome::Accepted),
            Err(ModelError::NotFound { .. }) => Ok(DeleteOutcome::NotFound),
            Err(ModelError::Conflict { .. }) => Ok(DeleteOutcome::PreconditionFailed),
            Err(e) => Err(model_error(operation, object, &e)),
        }
    }

    /// Perform a read, honouring `Fail` and `LandThenFail` (which, for a read, is a failure).
    fn read<T>(
        &self,
        step: Step,
        read: impl FnOnce(&ClusterModel) -> Result<T, SubstrateError>,
    ) -> Result<T, SubstrateError> {
        match step {
            Step::Fail(error) | Step::LandThenFail(error) => Err(error),
            _ => read(&self.model()),
        }
    }
}

impl Substrate for FakeCluster {
    fn namespace(&self) -> &str {
        &self.namespace
    }

    async fn ensure_namespace(&self) -> Result<(), NamespaceError> {
        let step = self.begin(Call::EnsureNamespace {
            namespace: self.namespace.clone(),
        });
        match step {
            Step::Namespace(error) => Err(error),
            Step::Fail(source) => Err(NamespaceError::Failed {
                namespace: self.namespace.clone(),
                source,
            }),
            Step::LandThenFail(source) => {
                self.model().ensure_namespace(&self.namespace);
                Err(NamespaceError::Failed {
                    namespace: self.namespace.clone(),
                    source,
                })
            }
            _ => {
                self.model().ensure_namespace(&self.namespace);
                Ok(())
            }
        }
    }

    async fn list_pods(&self, selector: &str) -> Result<Listed<Pod>, SubstrateError> {
        let step = self.begin(Call::ListPods {
            selector: selector.to_owned(),
        });
        let items = self.read(step, |m| {
            m.list_pods(Some(&self.namespace), &list_options(selector))
                .map(|p| p.items)
                .map_err(|e| model_error(Operation::ListPods, "pods", &e))
        })?;
        Ok(Listed {
            items,
            server_now: self.server_now(),
        })
    }

    async fn list_secrets(&self, selector: &str) -> Result<Vec<Secret>, SubstrateError> {
        let step = self.begin(Call::ListSecrets {
            selector: selector.to_owned(),
        });
        self.read(step, |m| {
            m.list_secrets(Some(&self.namespace), &list_options(selector))
                .map(|p| p.items)
                .map_err(|e| model_error(Operation::ListSecrets, "secrets", &e))
        })
    }

    async fn get_pod(&self, name: &str) -> Result<Option<Pod>, SubstrateError> {
        let step = self.begin(Call::GetPod {
            name: name.to_owned(),
        });
        self.read(step, |m| match m.get_pod(&self.namespace, name) {
            Ok(pod) => Ok(Some(pod)),
            Err(ModelError::NotFound { .. }) => Ok(None),
            Err(e) => Err(model_error(Operation::GetPod, &Self::pod_object(name), &e)),
        })
    }

    async fn secret_exists(&self, name: &str) -> Result<bool, SubstrateError> {
        let step = self.begin(Call::SecretExists {
            name: name.to_owned(),
        });
        self.read(step, |m| match m.get_secret(&self.namespace, name) {
            Ok(_) => Ok(true),
            Err(ModelError::NotFound { .. }) => Ok(false),
            Err(e) => Err(model_error(
                Operation::GetSecret,
                &Self::secret_object(name),
                &e,
            )),
        })
    }

    async fn service_account_exists(&self, name: &str) -> Result<bool, SubstrateError> {
        let step = self.begin(Call::ServiceAccountExists {
            name: name.to_owned(),
        });
        self.read(step, |m| {
            match m.get_service_account(&self.namespace, name) {
                Ok(_) => Ok(true),
                Err(ModelError::NotFound { .. }) => Ok(false),
                Err(e) => Err(model_error(
                    Operation::GetServiceAccount,
                    &format!("serviceaccount/{name}"),
                    &e,
                )),
            }
        })
    }

    async fn create_secret(&self, secret: &Secret) -> Result<CreateOutcome, SubstrateError> {
        let step = self.begin(Call::CreateSecret {
            secret: secret.clone(),
        });
        let object = Self::secret_object(secret.metadata.name.as_deref().unwrap_or(""));
        self.create_answer(step, Operation::CreateSecret, &object, |m| {
            m.create_secret(&self.namespace, secret.clone()).map(|_| ())
        })
    }

    async fn create_pod(&self, pod: &Pod) -> Result<CreateOutcome, SubstrateError> {
        let step = self.begin(Call::CreatePod { pod: pod.clone() });
        let object = Self::pod_object(pod.metadata.name.as_deref().unwrap_or(""));
        self.create_answer(step, Operation::CreatePod, &object, |m| {
            m.create_pod(&self.namespace, pod.clone()).map(|_| ())
        })
    }

    async fn delete_pod(&self, deletion: &PodDeletion) -> Result<DeleteOutcome, SubstrateError> {
        let (name, fence) = (deletion.name(), deletion.fence());
        let step = self.begin(Call::DeletePod {
            name: name.to_owned(),
            fence: fence.clone(),
        });
        let preconditions = Preconditions {
            uid: Some(fence.uid().to_owned()),
            resource_version: Some(fence.resource_version().to_owned()),
        };
        self.delete_answer(step, Operation::DeletePod, &Self::pod_object(name), |m| {
            m.delete_pod(&self.namespace, name, &preconditions, None)
                .map(|_| ())
        })
    }

    async fn delete_secret(
        &self,
        deletion: &SecretDeletion,
    ) -> Result<DeleteOutcome, SubstrateError> {
        let (name, uid) = (deletion.name(), deletion.uid());
        let step = self.begin(Call::DeleteSecret {
            name: name.to_owned(),
            uid: uid.to_owned(),
        });
        let preconditions = Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        };
        self.delete_answer(
            step,
            Operation::DeleteSecret,
            &Self::secret_object(name),
            |m| {
                m.delete_secret(&self.namespace, name, &preconditions)
                    .map(|_| ())
            },
        )
    }

    async fn sleep(&self, duration: Duration) {
        lock(&self.state).calls.push(Call::Sleep { duration });
        self.model().advance(duration);
        self.end_poll();
    }

    async fn wait_for_pod_change(&self, name: &str, resource_version: Option<&str>, max: Duration) {
        lock(&self.state).calls.push(Call::WaitForPodChange {
            name: name.to_owned(),
            resource_version: resource_version.map(str::to_owned),
            max,
        });
        let baseline = match resource_version {
            Some(rv) => Some(rv.to_owned()),
            None => self.pod_version(name),
        };
        let limit = add(self.model().now(), max);
        loop {
            if self.pod_version(name) != baseline {
                break;
            }
            let mut model = self.model();
            match model.next_due() {
                Some(due) if due <= limit => model.advance_to(due),
                _ => {
                    model.advance_to(limit);
                    break;
                }
            }
        }
        self.end_poll();
    }

    fn now(&self) -> Duration {
        let origin = lock(&self.state).constructed;
        self.since(origin)
    }
}

#[cfg(test)]
mod tests;
