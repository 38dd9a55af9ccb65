//! A loopback Kubernetes apiserver simulator serving a subset of core/v1 (namespaces, pods,
//! Secrets) over HTTP on `127.0.0.1:<free port>`: the HTTP face of `apiary-cluster-model` on a
//! scaled real clock, so the real `kube::Client`, the `apiary` binary and `kubectl` can talk to it.
//!
//! Layer: test and demo infrastructure. It owns no object state (the cluster model does: uid,
//! resourceVersion, creationTimestamp, selectors, pagination, preconditions, graceful deletion,
//! the watch event log and the kubelet scripts); it routes requests, validates what the apiserver
//! validates before storage, injects faults, logs requests, stamps `Date` headers and writes
//! kubeconfigs. It must never contact a real cluster or touch the user's kubeconfig.
//!
//! # Serving
//!
//! | request | answer |
//! |---|---|
//! | `GET /version`, `/api`, `/api/v1`, `/apis` | discovery documents (kube-rs and kubectl fall back to them from aggregated discovery) |
//! | `GET /api/v1/namespaces[/<name>]`, `POST /api/v1/namespaces`, `DELETE /api/v1/namespaces/<name>` | namespaces |
//! | `GET\|POST /api/v1/namespaces/<ns>/{pods,secrets}`, `GET\|DELETE …/{pods,secrets}/<name>` | pods and Secrets |
//! | `GET /api/v1/{pods,secrets}` | lists and watches across namespaces |
//! | `POST …/serviceaccounts`, `GET …/serviceaccounts/<name>` | ServiceAccounts (other verbs 405); with the model's ServiceAccount admission on, a pod create without its account gets the real 403 (`with_model(\|m\| m.set_service_account_admission(true))`) |
//! | `GET /api/v1/nodes/<name>` | a node the test registered in the model (`with_model(\|m\| m.create_node(…))`), 404 `NotFound` otherwise; other verbs 405; deny reads with `faults().deny(Verb::Get, Some(Resource::Nodes))` |
//! | `…?watch=true` (or `watch=1`) | a stream of `{"type":…,"object":…}` lines |
//! | `PATCH …/pods/<name>` (`application/merge-patch+json`) | changes `metadata.annotations` only, guarded by `metadata.resourceVersion` (409 `Conflict` when stale); other fields 422, other patch types 415 |
//! | any other `PUT`/`PATCH` on an object | 422 `Invalid` on an immutable Secret, else 405 (no update verb) |
//! | anything else | 404 `NotFound` Status, as the apiserver words it |
//!
//! Answers follow the apiserver: create 201 (409 `AlreadyExists`; a missing namespace 404
//! `namespaces "x" not found`; malformed names, Secret keys, Secrets over 1 MiB and pods without
//! containers 422 `Invalid`); list `labelSelector`, `fieldSelector`, `limit`/`continue` (410
//! `Expired` once the token's snapshot was compacted); DELETE reads `preconditions` and
//! `gracePeriodSeconds` from the `DeleteOptions` body (or the grace from the query), answers 409
//! `Conflict` on a failed precondition, 200 with the pod (still present with its deletion mark
//! during its grace, or its last state when removed at once), 200 with a `Success` Status for a
//! Secret. `kubectl get` receives `Table`s; `kubectl create namespace|secret` may send protobuf
//! bodies, which are decoded. Every response carries a `Date` header on the model clock.
//!
//! Watches send synthetic ADDED events first when started without `resourceVersion` (or with
//! `"0"`), otherwise every change after it; objects entering or leaving the selectors read as
//! ADDED or DELETED; `allowWatchBookmarks` adds BOOKMARK events every
//! [`SimOptions::bookmark_interval`] and one before a `timeoutSeconds` end; a resourceVersion
//! below the model's compaction horizon answers 200 with one ERROR event carrying a 410 `Expired`
//! Status, then ends. `timeoutSeconds` and the bookmark interval are real time.
//!
//! # Time
//!
//! The model clock runs [`SimOptions::time_scale`] times faster than real time from
//! [`SimOptions::start_time`]; a background task advances it every [`SimOptions::tick`] (and every
//! request advances it first), which runs the kubelet scripts and graceful removals that fell
//! due. At scale 1000 a 60 s grace period takes 60 ms and the model's default 1 s start delay
//! takes 1 ms. `creationTimestamp`, `deletionTimestamp` and `Date` all read this clock.
//!
//! # Setting up, choosing kubelet scripts, inspecting
//!
//! [`Simulator::with_model`] runs a closure on the [`ClusterModel`](apiary_cluster_model::ClusterModel) and
//! [`Simulator::model`] locks it (clock advanced to now either way; watches are woken afterwards):
//! insert foreign pods, choose kubelet scripts by name (`script_pods_named`,
//! `queue_pod_scripts`), by default (`set_default_script`,
//! `set_start_delay`), or by image reference (see [`apiary_cluster_model::kubelet`]: an image whose repository
//! path contains `crash`, `pullfail-unauthorized`, `never-starts`, … selects that script), play
//! the kubelet by hand (`start_pod`, `terminate_pod`), or compact the event log (`compact`) so
//! continue tokens and old resourceVersions expire.
//!
//! # Faults and the request log
//!
//! [`Simulator::faults`] adds [`FaultRule`]s (a [`Matcher`] on verb, resource, method or path; a
//! [`Budget`] of always, n times, or a seeded fraction; a [`FaultAction`]: 500, 503, 429 with
//! `Retry-After`, a dropped connection, a delay, 403 `Forbidden`, or any Status), denies verbs with
//! 403 ([`Faults::deny`]) and omits or garbles the `Date` header ([`DateMode`]).
//! [`Simulator::end_watches`] and [`Simulator::break_watches`] end open watch streams normally or
//! abort them. [`Simulator::requests`] returns every request received ([`LoggedRequest`]: method,
//! path, raw query, body, routed verb and resource, whether a fault answered it, the status).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use std::time::Duration;
//! use apiary_cluster_model::kubelet::PodScript;
//! use apiary_apiserver_sim::{FaultAction, FaultRule, Matcher, Resource, SimOptions, Simulator, Verb};
//!
//! let sim = Simulator::start(SimOptions::default().with_time_scale(1000.0)).await?;
//! sim.ensure_namespace("agents");
//! sim.with_model(|m| m.script_pods_named("agents", "agent-0", PodScript::Exit {
//!     after: Duration::from_secs(1),
//!     run_for: Duration::ZERO,
//!     exit_code: 1,
//! }));
//! sim.faults().add(FaultRule::times(
//!     2,
//!     Matcher::verb(Verb::Create, Resource::Pods),
//!     FaultAction::ServiceUnavailable,
//! ));
//! sim.write_kubeconfig(std::path::Path::new("/tmp/sim.kubeconfig"), "agents")?;
//! println!("serving on {}", sim.url());
//! let creates = sim.requests().iter().filter(|r| r.is(Verb::Create, Resource::Pods)).count();
//! # let _ = creates;
//! # Ok(()) }
//! ```
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod api;
mod clock;
mod discovery;
mod faults;
mod kubeconfig;
mod log;
mod logs;
mod options;
mod patch;
mod protobuf;
mod response;
mod route;
mod selection;
mod server;
mod shared;
mod status;
mod table;
mod watch;

pub use clock::{ScaledClock, http_date};
pub use faults::{
    Budget, DateMode, FaultAction, FaultAnswer, FaultRule, Faults, GARBLED_DATE, Matcher,
    RequestFacts, RuleId,
};
pub use kubeconfig::{CONTEXT_NAME, kubeconfig_yaml};
pub use log::{LoggedRequest, RequestLog};
pub use options::SimOptions;
pub use route::{Query, Resource, ResourceRequest, Route, Verb, route};
pub use server::{ModelGuard, Simulator};
pub use status::ApiError;
