//! The shared harness of the real-server tier (`real_server`, `real_seeds*`) and of the scenario
//! table's simulator runs (`cluster`): one [`Stage`] type that is either the loopback apiserver
//! simulator or a real `kube-apiserver` + `etcd` (`apiary-envtest`) with the fake kubelet, so
//! every scenario is written once and runs against both backends without drifting.
//!
//! Both backends are driven and observed the same way: apiary's `Cluster`s are built from a
//! `kube::Config` with kube's own retries off (as `connect_with` does) and a client-side [`Tap`]
//! that logs every request in the simulator's `LoggedRequest` shape; objects are staged and read
//! back over HTTP (never through the model) by the shared admin stage,
//! `apiary_envtest::stage::Admin`, which the CLI's harness uses too, so a scenario cannot reach
//! past the API (only the scenario table's model-staged rows and storms reach the simulator's
//! model and faults, through [`Stage::sim`]). The pods are run by the same per-image scripts on
//! both sides (the simulator's model, or the fake kubelet sharing its script table).
//!
//! Layer: test-only harness. It decides nothing about deploys, only sets the stage and reads what
//! happened. It talks to 127.0.0.1 only; real-server stages return `None` (the tier is skipped,
//! one stderr line) without `KUBEBUILDER_ASSETS`.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the shared harness"
)]

pub mod scenarios;
pub mod tap;

use std::ops::Deref;
use std::time::Duration;

use apiary_apiserver_sim::{LoggedRequest, Resource, SimOptions, Simulator, Verb};
use apiary_envtest::kubelet::{self, Kubelet};
use apiary_envtest::stage::{self, Admin};
use apiary_envtest::{ControlPlane, Identity, TestNamespace};
use apiary_substrate::build::build_attempt;
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::driver::DeployOptions;
use apiary_substrate::naming::{AgentIdentity, Generation};
use apiary_substrate_kube::Cluster;
use k8s_openapi::api::core::v1::{Pod, Secret};

// The staging, reading and request-log filters shared with the CLI's harness.
#[allow(
    unused_imports,
    reason = "each test binary uses a different subset of the shared harness"
)]
pub use apiary_envtest::stage::{HANG, KUBELET_SCALE, of, succeeded};
pub use tap::{Tap, tapped_client};

// The shared fixtures, declared once by the including crate (`#[path = "…/fixtures/mod.rs"]`).
pub(crate) use crate::fixtures;
#[allow(
    unused_imports,
    reason = "each test binary uses a different subset of the shared fixtures"
)]
pub use fixtures::{
    Captured, POD, after_preflight, agent, delete_fence, image, secret_ref, shipped,
};

/// Model seconds per real second on the simulator: a 60 s grace period passes in 60 ms.
pub const SIM_SCALE: f64 = 1000.0;
/// The namespace of a simulator stage (a real stage gets a unique one).
const SIM_NAMESPACE: &str = "agents";

/// Which apiserver a stage runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// apiary's loopback simulator (`apiary-apiserver-sim`).
    Sim,
    /// An upstream `kube-apiserver` v1.20 with etcd and the fake kubelet (`apiary-envtest`).
    Real,
}

/// What keeps a stage's apiserver (and kubelet) alive.
enum Keep {
    Sim(Simulator),
    // Fields drop in order: the kubelet stops before a plane of the stage's own does.
    Real {
        kubelet: Option<Kubelet>,
        _namespace: Option<TestNamespace>,
        plane: Plane,
    },
}

/// A real stage's control plane: the run's shared one, or one of the stage's own (other start
/// options), stopped with the stage.
enum Plane {
    Shared(&'static ControlPlane),
    Own(Box<ControlPlane>),
}

/// How long after a namespace appears its `default` ServiceAccount does on an admitting stage
/// ([`Stage::admitting`]): real time on the real server; model time on the simulator, where it
/// is 0.2 s of real time at [`SIM_SCALE`] (long after a deploy's first pod create, a handful of
/// loopback requests).
pub const ACCOUNT_DELAY_REAL: Duration = Duration::from_secs(2);
/// The same delay in the simulator's model time.
pub const ACCOUNT_DELAY_MODEL: Duration = Duration::from_secs(200);

/// One scenario's apiserver, namespace, kubelet and request tap. It dereferences to its
/// [`Admin`] (the shared staging and reading: `create_pod`, `pod_named`, `secret_names`,
/// `until_pod`, ...), so a scenario says `stage.create_pod(..)`.
pub struct Stage {
    /// The backend.
    pub backend: Backend,
    /// The admin's hands on the stage's namespace.
    stage: Admin,
    /// The configuration apiary's clients are built from (the admin identity).
    config: kube::Config,
    /// The log of every request the stage's `Cluster`s sent.
    pub tap: Tap,
    keep: Keep,
}

/// A `kube::Config` as apiary's client construction leaves it: kube's own retries off.
fn apiary_config(mut config: kube::Config) -> kube::Config {
    config.default_retry = false;
    config
}

impl Deref for Stage {
    type Target = Admin;

    fn deref(&self) -> &Admin {
        &self.stage
    }
}

impl Stage {
    /// A stage on `backend`, with its namespace present; `None` when the real tier is skipped.
    pub async fn start(backend: Backend) -> Option<Stage> {
        Self::start_with(backend, Some(kubelet::Options::default())).await
    }

    /// A stage whose fake kubelet (real backend only) starts from `options` (its scope and time
    /// scale are set here), or none: then nothing binds or drives pods but the test itself.
    pub async fn start_with(
        backend: Backend,
        kubelet_options: Option<kubelet::Options>,
    ) -> Option<Stage> {
        apiary_substrate_kube::install_crypto_provider();
        match backend {
            Backend::Sim => Some(Self::start_sim(SIM_NAMESPACE, true).await),
            Backend::Real => {
                let plane = apiary_envtest::shared()?;
                let namespace = tokio::task::block_in_place(|| plane.namespace("real"));
                let kubelet = kubelet_options.map(|options| {
                    tokio::task::block_in_place(|| stage::start_kubelet(plane, &namespace, options))
                });
                Some(Stage {
                    backend,
                    stage: Admin::new(plane.client(Identity::Admin), namespace.to_string()),
                    config: apiary_config(plane.config(Identity::Admin)),
                    tap: Tap::new(),
                    keep: Keep::Real {
                        plane: Plane::Shared(plane),
                        _namespace: Some(namespace),
                        kubelet,
                    },
                })
            }
        }
    }

    /// A stage whose namespace does not exist yet (the act creates it), with the ServiceAccount
    /// admission plugin on and the controller's stand-in creating `default` in each new namespace
    /// after [`ACCOUNT_DELAY_REAL`] ([`ACCOUNT_DELAY_MODEL`] on the simulator): deploy.md §
    /// Namespace ensure, item 4. The real one is a control plane of the stage's own (the shared
    /// one runs without the plugin); `None` when the real tier is skipped.
    pub async fn admitting(backend: Backend) -> Option<Stage> {
        apiary_substrate_kube::install_crypto_provider();
        if backend == Backend::Sim {
            let stage = Self::start_sim(SIM_NAMESPACE, false).await;
            stage.sim().expect("a simulator stage").with_model(|m| {
                m.set_service_account_admission(true);
                m.set_service_account_controller(Some(ACCOUNT_DELAY_MODEL));
            });
            return Some(stage);
        }
        let plane = tokio::task::block_in_place(|| {
            apiary_envtest::fresh(apiary_envtest::Options::with_service_accounts(
                ACCOUNT_DELAY_REAL,
            ))
        })?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let namespace = format!("admitting-{nanos:x}");
        let kubelet = tokio::task::block_in_place(|| {
            stage::start_kubelet(&plane, &namespace, kubelet::Options::default())
        });
        Some(Stage {
            backend,
            stage: Admin::new(plane.client(Identity::Admin), namespace),
            config: apiary_config(plane.config(Identity::Admin)),
            tap: Tap::new(),
            keep: Keep::Real {
                plane: Plane::Own(Box::new(plane)),
                _namespace: None,
                kubelet: Some(kubelet),
            },
        })
    }

    /// A simulator stage in `namespace`, which exists when `with_namespace`.
    pub async fn start_sim(namespace: &str, with_namespace: bool) -> Stage {
        apiary_substrate_kube::install_crypto_provider();
        let sim = Simulator::start(SimOptions::default().with_time_scale(SIM_SCALE))
            .await
            .expect("the simulator starts");
        if with_namespace {
            sim.ensure_namespace(namespace);
        }
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig_yaml(namespace))
            .expect("the simulator's kubeconfig parses");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("the simulator's kubeconfig resolves");
        let admin = kube::Client::try_from(config.clone()).expect("admin client");
        Stage {
            backend: Backend::Sim,
            stage: Admin::new(admin, namespace),
            config: apiary_config(config),
            tap: Tap::new(),
            keep: Keep::Sim(sim),
        }
    }

    /// The real control plane, on a real stage.
    pub fn plane(&self) -> Option<&ControlPlane> {
        match &self.keep {
            Keep::Real {
                plane: Plane::Shared(plane),
                ..
            } => Some(plane),
            Keep::Real {
                plane: Plane::Own(plane),
                ..
            } => Some(plane),
            Keep::Sim(_) => None,
        }
    }

    /// The fake kubelet, on a real stage.
    pub fn kubelet(&self) -> Option<&Kubelet> {
        match &self.keep {
            Keep::Real { kubelet, .. } => kubelet.as_ref(),
            Keep::Sim(_) => None,
        }
    }

    /// The simulator, on a simulator stage.
    pub fn sim(&self) -> Option<&Simulator> {
        match &self.keep {
            Keep::Sim(sim) => Some(sim),
            Keep::Real { .. } => None,
        }
    }

    /// A fresh `Cluster` (its own client, as one CLI process has) logging to the stage's tap.
    pub fn cluster(&self) -> Cluster {
        self.cluster_tapped(&self.tap)
    }

    /// A fresh `Cluster` logging to `tap`.
    pub fn cluster_tapped(&self, tap: &Tap) -> Cluster {
        Cluster::new(tapped_client(self.config.clone(), tap), self.namespace())
    }

    /// A fresh `Cluster` with `config` (another identity), logging to `tap`.
    pub fn cluster_as(&self, config: kube::Config, tap: &Tap) -> Cluster {
        Cluster::new(tapped_client(apiary_config(config), tap), self.namespace())
    }

    /// The pod [`POD`] now.
    pub async fn pod(&self) -> Option<Pod> {
        self.pod_named(POD).await
    }

    /// The stage's requests (every `Cluster` on its tap), in order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.tap.requests()
    }

    /// Requests of `verb` on `resource`, in order.
    pub fn of(&self, verb: Verb, resource: Resource) -> Vec<LoggedRequest> {
        of(&self.requests(), verb, resource)
    }

    /// Requests of `verb` on `resource` answered 2xx.
    pub fn succeeded(&self, verb: Verb, resource: Resource) -> Vec<LoggedRequest> {
        succeeded(&self.requests(), verb, resource)
    }

    /// Requests that could change state.
    pub fn mutations(&self) -> Vec<LoggedRequest> {
        stage::mutations(&self.requests())
    }

    /// The default configuration for `image` in the stage's namespace.
    pub fn config(&self, image: &str) -> ValidConfig {
        self.config_for(&agent(), image)
    }

    /// The default configuration of `agent` for `image` in the stage's namespace.
    pub fn config_for(&self, agent: &AgentIdentity, image: &str) -> ValidConfig {
        DeployConfig::new(self.namespace(), image)
            .validate(agent)
            .expect("valid configuration")
    }
}

/// Deploy options with `deadline` and a 200 ms poll, preflight GC on.
pub fn options(deadline: Duration) -> DeployOptions {
    DeployOptions {
        deadline,
        poll: Duration::from_millis(200),
        replace: false,
        min_running: Duration::ZERO,
    }
}

/// The pod and Secret of the attempt with `generation` of `config`, built by the real builder.
pub fn attempt(config: &ValidConfig, generation: u32) -> (Pod, Secret) {
    let attempt = build_attempt(config, Generation::from_u32(generation));
    (attempt.pod, attempt.secret)
}

/// The `{uid, resourceVersion}` of a pod.
pub fn fence_of(pod: &Pod) -> (String, String) {
    (
        pod.metadata.uid.clone().expect("uid"),
        pod.metadata
            .resource_version
            .clone()
            .expect("resourceVersion"),
    )
}

/// Whether the pod's `agent` container reports any status yet.
pub fn has_container_status(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .is_some_and(|c| !c.is_empty())
}

/// The waiting reason of the pod's first container, if it waits.
pub fn waiting_reason(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

/// Whether the pod's first container runs.
pub fn is_running(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref())
        .is_some_and(|s| s.running.is_some())
}

/// The pod's phase.
pub fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.phase.as_deref()
}

/// Generate the two tests of a scenario `async fn name(stage: &Stage)`: `name::sim` and
/// `name::real` (the real one skips without `KUBEBUILDER_ASSETS`). `name` is a scenario of
/// [`scenarios`]; `self::name` is one of the test file that invokes the macro. The stage is
/// [`Stage::start`]'s, or with `admitting:` first [`Stage::admitting`]'s.
#[macro_export]
macro_rules! on_both_backends {
    ($(#[doc = $doc:literal])* admitting: self::$scenario:ident) => {
        $crate::on_both_backends!(
            @tests [super::$scenario] [admitting] $(#[doc = $doc])* $scenario
        );
    };
    ($(#[doc = $doc:literal])* self::$scenario:ident) => {
        $crate::on_both_backends!(@tests [super::$scenario] [start] $(#[doc = $doc])* $scenario);
    };
    ($(#[doc = $doc:literal])* $scenario:ident) => {
        $crate::on_both_backends!(
            @tests [$crate::real_support::scenarios::$scenario] [start] $(#[doc = $doc])* $scenario
        );
    };
    (@tests [$($run:tt)*] [$stage:ident] $(#[doc = $doc:literal])* $scenario:ident) => {
        mod $scenario {
            $(#[doc = $doc])*
            /// (Against the simulator.)
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sim() {
                let stage = $crate::real_support::Stage::$stage($crate::real_support::Backend::Sim)
                    .await
                    .expect("a simulator stage always starts");
                $($run)*(&stage).await;
            }
            $(#[doc = $doc])*
            /// (Against the real kube-apiserver with the fake kubelet.)
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn real() {
                let Some(stage) =
                    $crate::real_support::Stage::$stage($crate::real_support::Backend::Real).await
                else {
                    return;
                };
                $($run)*(&stage).await;
            }
        }
    };
}
