//! A fake kubelet for the real apiserver (like kwok): it registers a Ready `Node`, binds every
//! unscheduled pod to it with a real `Binding`, and drives each pod's status through the real
//! status subresource, step by step, the way a kubelet would — chosen by the same per-image
//! scripts the simulator uses ([`apiary_cluster_model::kubelet::PodScript::from_pod`]) and shaped and
//! sequenced by the same pure code ([`apiary_cluster_model::kubelet::sequence::step`]). There
//! is no second script table here.
//!
//! Layer: test support. All I/O goes through kube-rs on the kubelet's own thread and Tokio
//! runtime, so sync and async tests can start it and it never depends on the test's runtime.
//! It never logs pod specs (they may carry environment values) and never decides anything about
//! apiary.
//!
//! # What it does to a pod
//!
//! | script (image keyword) | what the apiserver sees |
//! |---|---|
//! | any other image | bound; `Pending`/`ContainerCreating`; after the start delay `Running` with a pod IP from [`POD_CIDR`] and a container ID |
//! | `crash` | bound; `ContainerCreating`; then `terminated` exit code 1 (`Error`), phase `Failed` |
//! | `pullfail-*` | bound; `ErrImagePull` ↔ `ImagePullBackOff` forever, with containerd-shaped messages and the kubelet's doubling back-off |
//! | `never-starts` | bound; `ContainerCreating` forever |
//! | `unschedulable` | not bound; `PodScheduled=False`, reason `Unschedulable` |
//! | `vanish` | bound; removed after the start delay (`DELETE`, grace 0, uid precondition) |
//!
//! A pod whose `envFrom` Secret is missing waits `CreateContainerConfigError` (`secret "X" not
//! found`), checked again every 10 s (model time) and at once when a Secret appears in its
//! namespace. Times are model time: [`Options::time_scale`] model seconds pass per real second.
//!
//! **Deletion.** When a pod it runs is deletion-marked, the kubelet writes its running containers
//! as `terminated` (exit code [`SIGTERM_EXIT_CODE`]) at once, and when the (scaled)
//! `deletionGracePeriodSeconds` has passed it finishes the deletion with `DELETE` carrying
//! `gracePeriodSeconds: 0` and a `uid` precondition, as the real kubelet does: a pod recreated
//! under the same name meanwhile is never removed.
//!
//! **Conflicts.** Every status write is a `PUT …/pods/NAME/status` carrying the
//! resourceVersion it was computed from; a `409` re-reads the pod and computes the step again.
//! Any other failure is retried later. Nothing is fatal once the node is registered.
//!
//! ```no_run
//! use apiary_envtest::kubelet::{Kubelet, Options};
//! let Some(plane) = apiary_envtest::shared() else { return };
//! let namespace = plane.namespace("kubelet-doc");
//! let kubelet = Kubelet::start(
//!     plane.config(apiary_envtest::Identity::Admin),
//!     Options::in_namespace(&namespace),
//! )
//! .expect("the fake kubelet registers its node");
//! // ... create pods in `namespace`; they run. Dropping `kubelet` stops it.
//! # drop(kubelet);
//! ```

mod node;
mod shell;
mod tracker;

use std::sync::{Arc, Mutex, MutexGuard, mpsc as std_mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use apiary_cluster_model::kubelet::PodScript;
use tokio::sync::{mpsc, oneshot};

pub use node::FAKE_NODE_LABEL;

/// The node name of a kubelet started with [`Options::default`].
pub const DEFAULT_NODE_NAME: &str = "apiary-envtest-node";

/// The node's `InternalIP` address, and every pod's `hostIP`.
pub const NODE_IP: &str = "127.0.0.1";

/// The pod CIDR sandbox addresses come from (each pod gets its own, unique in the process).
pub const POD_CIDR: &str = "10.244.0.0/16";

/// The exit code a running container reports when its pod is deletion-marked (killed by
/// SIGTERM: 128 + 15).
pub const SIGTERM_EXIT_CODE: i32 = 143;

/// Model seconds per real second by default: the model's 1 s start delay takes 100 ms and a
/// 30 s grace period 3 s.
pub const DEFAULT_TIME_SCALE: f64 = 10.0;

/// Which pods (and Secrets) the kubelet watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every namespace.
    AllNamespaces,
    /// Only these namespaces (one watch each).
    Namespaces(Vec<String>),
}

/// How a kubelet runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The Node it registers and binds pods to. Kubelets sharing a name share the Node.
    pub node_name: String,
    /// Which pods it runs.
    pub scope: Scope,
    /// Model seconds per real second (script delays, back-offs and grace periods are divided by
    /// it). Not finite or not positive: real time.
    pub time_scale: f64,
    /// The delay (model time) of the image convention and of the default script, as
    /// `ClusterModel::set_start_delay`.
    pub start_delay: Duration,
    /// The script for images the convention does not recognise (`None`: start after
    /// [`Options::start_delay`]).
    pub default_script: Option<PodScript>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            node_name: DEFAULT_NODE_NAME.to_owned(),
            scope: Scope::AllNamespaces,
            time_scale: DEFAULT_TIME_SCALE,
            start_delay: Duration::from_secs(1),
            default_script: None,
        }
    }
}

impl Options {
    /// The defaults, watching only `namespace` (what a test sharing a control plane wants).
    pub fn in_namespace(namespace: &str) -> Self {
        Self {
            scope: Scope::Namespaces(vec![namespace.to_owned()]),
            ..Self::default()
        }
    }

    /// With another time scale (model seconds per real second).
    #[must_use]
    pub fn with_time_scale(mut self, time_scale: f64) -> Self {
        self.time_scale = time_scale;
        self
    }

    /// With another node name.
    #[must_use]
    pub fn with_node_name(mut self, node_name: &str) -> Self {
        node_name.clone_into(&mut self.node_name);
        self
    }

    /// With another start delay (model time).
    #[must_use]
    pub fn with_start_delay(mut self, start_delay: Duration) -> Self {
        self.start_delay = start_delay;
        self
    }

    /// With a script for images the convention does not recognise.
    #[must_use]
    pub fn with_default_script(mut self, script: PodScript) -> Self {
        self.default_script = Some(script);
        self
    }
}

/// How the kubelet's final delete of a deletion-marked (or vanishing) pod was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishOutcome {
    /// `200`: the pod is gone.
    Deleted,
    /// `404`: someone else removed it first.
    AlreadyGone,
    /// `409`: the uid precondition failed — the name now belongs to another pod, left alone.
    PreconditionFailed,
}

/// One thing the kubelet did to the apiserver, in order (see [`Kubelet::actions`]). Carries
/// names and status summaries only, never a pod spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// The pod was bound to the node (`POST …/pods/NAME/binding`).
    Bound {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
    },
    /// A status was written (`PUT …/pods/NAME/status`).
    StatusWritten {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// Phase and the first container's state, e.g. `Pending/ContainerCreating`,
        /// `Running/running`, `Failed/terminated(1)`.
        summary: String,
    },
    /// A status write answered `409 Conflict`; the pod was re-read and the step computed again.
    Conflict {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
    },
    /// The final delete: `gracePeriodSeconds: 0` with `preconditions.uid`.
    Finished {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// The uid precondition the delete carried.
        uid: String,
        /// The grace period it carried (always 0).
        grace_period_seconds: u32,
        /// The answer.
        outcome: FinishOutcome,
    },
}

/// Why a kubelet did not start.
#[derive(Debug, thiserror::Error)]
pub enum KubeletError {
    /// The OS refused a thread or the Tokio runtime could not be built.
    #[error("cannot start the fake kubelet's thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The kube client could not be built from the configuration given.
    #[error("cannot build the fake kubelet's client: {0}")]
    Client(#[source] kube::Error),
    /// Creating the Node or writing its status failed (the apiserver is not reachable, or the
    /// identity may not manage nodes: use the admin identity).
    #[error("cannot register node {node}: {source}")]
    Node {
        /// The node name.
        node: String,
        /// The apiserver's answer.
        #[source]
        source: kube::Error,
    },
    /// The kubelet's thread ended before reporting (it panicked).
    #[error("the fake kubelet's thread ended before registering its node")]
    Stopped,
}

/// Commands from the handle to the kubelet's loop.
enum Command {
    /// Stop applying watch events and running due work; acknowledge once between two pieces of
    /// work.
    Pause(std_mpsc::Sender<()>),
    /// Carry on: due work first (in due order), then the events that queued up.
    Resume,
}

/// A running fake kubelet. Dropping it stops it (its thread is joined); the Node stays.
pub struct Kubelet {
    node_name: String,
    actions: Arc<Mutex<Vec<Action>>>,
    commands: mpsc::UnboundedSender<Command>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Kubelet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubelet")
            .field("node_name", &self.node_name)
            .finish_non_exhaustive()
    }
}

fn lock(actions: &Mutex<Vec<Action>>) -> MutexGuard<'_, Vec<Action>> {
    // A panic while holding the lock leaves a complete Vec behind; keep using it.
    actions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Kubelet {
    /// Starts a kubelet with `config` (it needs to manage nodes, bind pods, write pod status,
    /// delete pods and read Secrets: use the admin identity, `ControlPlane::config(Admin)`).
    /// Returns once the Node is registered and Ready; pods are watched from then on (including
    /// the ones that exist already).
    ///
    /// # Errors
    /// [`KubeletError`] when the thread, the client or the node registration fails.
    pub fn start(config: kube::Config, options: Options) -> Result<Self, KubeletError> {
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let (commands, commands_rx) = mpsc::unbounded_channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let actions = Arc::new(Mutex::new(Vec::new()));
        let node_name = options.node_name.clone();
        let shared = Arc::clone(&actions);
        let thread = std::thread::Builder::new()
            .name(format!("envtest-kubelet-{node_name}"))
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _gone = ready_tx.send(Err(KubeletError::Thread(error)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    tokio::select! {
                        _ = stopped => {}
                        () = shell::run(config, options, shared, commands_rx, ready_tx) => {}
                    }
                });
            })
            .map_err(KubeletError::Thread)?;
        let kubelet = Self {
            node_name,
            actions,
            commands,
            stop: Some(stop),
            thread: Some(thread),
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(kubelet),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(KubeletError::Stopped),
        }
    }

    /// A kubelet with the default options for the pods of `namespace` on `plane`, as the admin:
    /// the one-liner a real-server test needs (`let _kubelet = Kubelet::for_namespace(plane,
    /// &ns);`).
    ///
    /// # Panics
    /// When the kubelet cannot register its node (the test cannot go on without it).
    pub fn for_namespace(plane: &crate::ControlPlane, namespace: &str) -> Self {
        Self::start(
            plane.config(crate::Identity::Admin),
            Options::in_namespace(namespace),
        )
        .unwrap_or_else(|error| panic!("the fake kubelet for {namespace} did not start: {error}"))
    }

    /// The Node this kubelet registered.
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// Everything the kubelet did so far, in order.
    pub fn actions(&self) -> Vec<Action> {
        lock(&self.actions).clone()
    }

    /// Freezes the kubelet: when this returns it sends nothing more (no step, no status write,
    /// no delete) and applies no watch event until [`Kubelet::resume`]. Lets a test change the
    /// world behind the kubelet's back (for example recreate a pod under the same name) and then
    /// have the kubelet act on its stale view.
    pub fn pause(&self) {
        let (ack, acked) = std_mpsc::channel();
        if self.commands.send(Command::Pause(ack)).is_ok() {
            // An error means the kubelet stopped: nothing more will be sent either way.
            let _stopped = acked.recv();
        }
    }

    /// Lets a paused kubelet carry on: first the work that fell due meanwhile (in due order),
    /// then the watch events that queued up.
    pub fn resume(&self) {
        let _stopped = self.commands.send(Command::Resume);
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _already_stopped = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _panicked = thread.join();
        }
    }
}

#[cfg(test)]
mod tests;
