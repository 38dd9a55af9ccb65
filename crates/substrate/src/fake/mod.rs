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
//! | `read_node(name)` | get the node (cluster-scoped; a test registers it with [`FakeCluster::add_node`] and scripts its `Ready` condition with [`FakeCluster::set_node_ready`]) | `Read` with its `Ready` condition, `Missing` on 404, `NotPermitted` while [`FakeCluster::deny_node_reads`] is on, `Unknown` for any other scripted failure |
//! | `sleep(d)` | advance the clock by `d` | — |
//! | `wait_for_pod_change(name, rv, max)` | advance step by step until the pod's rv differs from `rv` (or, with `None`, from its state at the call; appearing/disappearing counts) or `max` passed; returns at once if it already differs | — |
//!
//! Failures are answered [`RequestFailure`]s with the apiserver's literal code/reason/message and
//! the object named `<ns>/<name>` for a pod, Secret or account, or `in <ns> matching <selector>` for
//! a list.
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
//! * **Scripted answers** ([`Step`]): a FIFO queue per request kind
//!   ([`apiary_classify::failure::Operation`]; `ensure_namespace` is `EnsureNamespace`); each call of that
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
//!
//! [`Substrate`]: crate::Substrate
//! [`Substrate::sleep`]: crate::Substrate::sleep
//! [`Substrate::wait_for_pod_change`]: crate::Substrate::wait_for_pod_change
//! [`Substrate::now`]: crate::Substrate::now
//! [`RequestFailure`]: apiary_classify::failure::RequestFailure
//! [`PodScript`]: apiary_cluster_model::kubelet::PodScript

mod call;
mod clock;
mod cluster;
mod errors;
mod log;
mod named;
mod nodes;
pub mod proof;
mod serve;
mod step;

pub use call::Call;
pub use clock::{ServerClock, to_chrono};
pub use cluster::FakeCluster;
pub use errors::{api_error, server_error, transport_failure};
pub use step::{ModelHook, PollHook, Step};

#[cfg(test)]
mod tests;

/// Run a future over the fake in tests: it must complete on the first poll (the fake never
/// yields).
#[cfg(test)]
pub(crate) fn run_now<F: std::future::Future>(future: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(future).poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("a fake future must complete without yielding"),
    }
}
