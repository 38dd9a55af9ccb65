//! How a fake kubelet runs: its node, the namespaces it watches, its time scale and default
//! script, and the fixed addresses and exit code it reports.
//!
//! Layer: test support, plain values. Starts nothing.

use std::time::Duration;

use apiary_cluster_model::kubelet::PodScript;

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
