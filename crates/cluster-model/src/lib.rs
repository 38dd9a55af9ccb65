//! The in-memory apiserver + kubelet model (object store, resourceVersions, graceful deletion,
//! kubelet scripts) shared by `apiary-substrate`'s fake and `apiary-apiserver-sim`. Time is an
//! input: the caller advances the model's clock; the model never reads a real clock, performs no
//! I/O and spawns nothing. The fake runs it on a virtual clock, the simulator on a scaled real one
//! (it calls [`ClusterModel::set_now`] before serving each request).
//!
//! # What it models (deploy.md § Semantics relied on)
//!
//! * **Objects**: namespaces, pods and Secrets as `k8s-openapi` types, keyed by namespace/name.
//! * **Stamping**: a create assigns `uid` (deterministic UUID-shaped strings), `resourceVersion`
//!   from ONE counter shared by all objects (every change — create, status change, deletion
//!   mark, removal — takes the next value), `creationTimestamp` from the model clock and
//!   `generation` 1. Creating into a missing namespace answers `NotFound` for the namespace
//!   (`namespaces "X" not found`); a taken name answers `AlreadyExists`.
//! * **Pod validation** (deploy.md § Pod options): a created pod's labels, annotations,
//!   resources, node selector, tolerations and class names are checked as the apiserver checks
//!   them, with its 400, 403 and 422 answers word for word (`causes` included), its defaulting
//!   (a limit without a request is requested) and its canonical quantities; the deliberate
//!   differences are listed under "Pod validation against the real apiserver" below.
//! * **Secrets**: `stringData` is merged into `data`; `type` defaults to `Opaque`; `immutable` is
//!   kept, and since there is no update verb nobody can change the payload.
//! * **Lists**: ordered by namespace then name; label selectors (`=`, `==`, `!=`, `in`,
//!   `notin`, `key`, `!key`) and field selectors (`metadata.name`, `metadata.namespace`,
//!   `status.phase`, …) — see [`selector`]; `limit`/`continue` pagination with opaque tokens
//!   that expire (410 `Expired`) once [`ClusterModel::compact`] (or the event-log capacity) moves
//!   the compaction horizon past them.
//! * **Deletes**: preconditions `{uid, resourceVersion}` → 409 `Conflict` on mismatch, 404
//!   `NotFound` when absent; graceful pod deletion ([`ClusterModel::delete_pod`]): a bound, non-
//!   terminal pod gets `deletionTimestamp` = now + grace and `deletionGracePeriodSeconds` = its
//!   `terminationGracePeriodSeconds` (default 30), stays visible, and is removed when the grace
//!   has elapsed on the model clock; terminal or unbound pods vanish at once.
//! * **Watch**: an event log ([`WatchEvent`]: ADDED / MODIFIED / DELETED with their
//!   resourceVersions); [`ClusterModel::events_since`] answers 410 `Expired` below the horizon.
//! * **Kubelet**: every pod created through the API gets a [`PodScript`](kubelet::PodScript) (by name via
//!   [`ClusterModel::script_pods_named`] / [`ClusterModel::queue_pod_scripts`], else by the
//!   image convention documented in [`kubelet`], else the default) that moves it through real
//!   status shapes on the model clock; it checks the `envFrom` Secret before starting and
//!   reports `CreateContainerConfigError` (`secret "X" not found`) until it appears. Each status
//!   change takes a new resourceVersion and records MODIFIED.
//! * **ServiceAccounts** (deploy.md § Namespace ensure, item 4): get and create; off by default,
//!   [`ClusterModel::set_service_account_admission`] refuses a pod create whose account does not
//!   exist with the real apiserver's 403 `Forbidden`, and
//!   [`ClusterModel::set_service_account_controller`] creates `default` in each new namespace
//!   after a delay on the model clock, as the controller manager does.
//! * **Nodes** (deploy.md § When a pod will not go away): cluster-scoped, get only through the
//!   API; a test registers them ([`ClusterModel::create_node`]) and scripts their `Ready`
//!   condition ([`ClusterModel::set_node_ready`], [`NodeReady`]) or removes them. The kubelet's
//!   placements (`node-1` … `node-3`) name nodes the model does not hold unless a test registers
//!   them.
//! * **Test hooks**: insert any object directly with chosen uid/rv/creationTimestamp/status
//!   ([`ClusterModel::insert_pod`], [`ClusterModel::insert_secret`]), change a pod
//!   ([`ClusterModel::modify_pod`], [`ClusterModel::set_pod_status`]), play the kubelet by hand
//!   ([`ClusterModel::start_pod`], [`ClusterModel::terminate_pod`],
//!   [`ClusterModel::set_pod_waiting`], [`ClusterModel::set_pod_unschedulable`]) and make a pod
//!   vanish ([`ClusterModel::remove_pod`]).
//!
//! Errors are [`ModelError`]s whose `code`/`reason`/`message` are the apiserver's.
//!
//! # One path per item
//!
//! The model itself — [`ClusterModel`], the values its methods take and return, its errors — is
//! at the crate root. The kubelet's vocabulary ([`kubelet`]: scripts, pull failures, status
//! shapes, the shared sequencing) and the selector grammar ([`selector`]) are public modules
//! whose items are reached only through them: the root re-exports nothing from a public module,
//! and no other apiary crate re-exports this one.
//!
//! ```
//! use std::time::Duration;
//! use apiary_cluster_model::ClusterModel;
//! use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!
//! let mut model = ClusterModel::default();
//! model.ensure_namespace("agents");
//! let pod = Pod {
//!     metadata: ObjectMeta { name: Some("p".into()), ..Default::default() },
//!     spec: Some(PodSpec {
//!         containers: vec![Container { name: "agent".into(), image: Some("x@sha256:00".into()), ..Default::default() }],
//!         ..Default::default()
//!     }),
//!     ..Default::default()
//! };
//! model.create_pod("agents", pod).unwrap();
//! model.advance(Duration::from_secs(2));
//! let running = model.get_pod("agents", "p").unwrap();
//! assert_eq!(running.status.unwrap().phase.as_deref(), Some("Running"));
//! ```
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod error;
pub mod kubelet;
mod model;
pub mod selector;

pub use error::{FieldCause, Kind, ModelError};
pub use model::{
    ClusterModel, DEFAULT_EPOCH_SECONDS, DEFAULT_EVENT_CAPACITY, EventType, ListOptions, ListPage,
    LogLine, LogQuery, LogRead, NodeReady, Object, PodDeletion, Preconditions, WatchEvent, add,
};
