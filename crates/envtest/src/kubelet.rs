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

mod feeds;
mod node;
mod options;
mod protocol;
mod shell;
mod tracker;
mod work;

use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use std::thread::JoinHandle;

use tokio::sync::{mpsc, oneshot};

pub use node::FAKE_NODE_LABEL;
pub use options::{
    DEFAULT_NODE_NAME, DEFAULT_TIME_SCALE, NODE_IP, Options, POD_CIDR, SIGTERM_EXIT_CODE, Scope,
};
pub use protocol::{Action, FinishOutcome, KubeletError};
use protocol::{Command, lock};

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
