//! Shared fixture of the CLI end-to-end tests: one scenario, two backends. A [`Fixture`] is either
//! the loopback apiserver simulator running on a Tokio runtime inside the test process, or the
//! real `kube-apiserver` of `apiary-envtest` (a fresh namespace per test, the fake kubelet
//! driving its pods by the same per-image scripts, and the envtest fault proxy in pass-through
//! mode in front of it, whose request log is the record of what a command sent). Either way the
//! binary gets a kubeconfig in a temporary directory whose context names the test's namespace,
//! and runs with a clean environment (no `KUBECONFIG`, `HOME` in the temporary directory, so the
//! user's kubeconfig is never read).
//!
//! [`on_both_backends!`] turns one scenario into two `#[test]`s, `<name>::sim` and
//! `<name>::real`; the real one returns at once (after one line naming `setup-envtest`) when
//! `KUBEBUILDER_ASSETS` is unset, and fails when `APIARY_ENVTEST_REQUIRED=1` says it must run.
//!
//! Test-only code: it decides nothing about apiary, never contacts anything but loopback and
//! never prints a Secret value or a token.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the fixture"
)]

pub mod buzz;
pub mod node;
pub mod real;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use apiary_apiserver_sim::{LoggedRequest, Resource, SimOptions, Simulator, Verb};
use apiary_cluster_model::kubelet::PodScript;
use k8s_openapi::api::core::v1::{Pod, PodStatus, Secret};

/// The namespace on the simulator fixture's kubeconfig context (the real server's is unique
/// per test: ask [`Fixture::namespace`]).
pub const NAMESPACE: &str = "agents";

/// A digest-pinned image that starts normally in the simulator and under the fake kubelet.
pub const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// Model seconds per real second: a 60 s grace period passes in 0.3 s, a 1 s start in 5 ms.
pub const TIME_SCALE: f64 = 200.0;

/// How long [`Fixture::wait_pod`] waits for a pod state before failing: a bound against hangs,
/// far above what any scripted step takes on either backend, not a performance assertion.
pub const WAIT_BOUND: Duration = Duration::from_secs(90);

/// Turns each scenario `fn name(fx) { … }` into a module `name` with two tests, `sim` and
/// `real`, each running the one body on a fixture of that backend. Attributes (doc comments,
/// `#[cfg(unix)]`) carry over to the module.
#[allow(
    unused_macros,
    reason = "refusals.rs and demo.rs have no two-backend scenario"
)]
macro_rules! on_both_backends {
    ($($(#[$attr:meta])* fn $name:ident($fx:pat_param) $body:block)*) => {$(
        $(#[$attr])*
        mod $name {
            #[allow(unused_imports, reason = "each scenario uses a different part of its file")]
            use super::*;

            fn scenario($fx: crate::common::Fixture) $body

            #[test]
            fn sim() {
                scenario(crate::common::Fixture::on_sim());
            }

            #[test]
            fn real() {
                if let Some(fx) = crate::common::Fixture::on_real(stringify!($name)) {
                    scenario(fx);
                }
            }
        }
    )*};
}
#[allow(
    unused_imports,
    reason = "refusals.rs and demo.rs have no two-backend scenario"
)]
pub(crate) use on_both_backends;

/// Which server a fixture runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// apiary's loopback simulator.
    Sim,
    /// The real `kube-apiserver` + `etcd` of `apiary-envtest`, with the fake kubelet.
    Real,
}

enum Backend {
    /// The simulator (taken out on drop, before the runtime goes).
    Sim(Option<Simulator>),
    /// The real server (taken out on drop, inside the runtime).
    Real(Option<Box<real::Real>>),
}

/// A server (simulator or real) plus a kubeconfig for it.
pub struct Fixture {
    backend: Backend,
    runtime: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
    namespace: String,
    /// The kubeconfig whose context namespace is [`Fixture::namespace`].
    pub kubeconfig: PathBuf,
}

/// One finished `apiary` run.
#[derive(Debug, Clone)]
pub struct Run {
    /// The exit code (-1 when killed by a signal).
    pub code: i32,
    /// Captured stdout.
    pub stdout: String,
    /// Captured stderr.
    pub stderr: String,
}

impl Run {
    fn from_output(out: Output) -> Self {
        Self {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// stdout parsed as exactly one JSON document followed by one newline.
    pub fn json(&self) -> serde_json::Value {
        assert!(
            self.stdout.ends_with('\n') && self.stdout.matches('\n').count() == 1,
            "stdout is not one line: {:?} (stderr {:?})",
            self.stdout,
            self.stderr
        );
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!("stdout is not JSON ({e}): {:?}", self.stdout);
        })
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

impl Fixture {
    /// Start a simulator with the fixture namespace created.
    pub fn start() -> Self {
        Self::start_with(|_| {})
    }

    /// A simulator fixture (what [`on_both_backends!`] runs as `sim`).
    pub fn on_sim() -> Self {
        Self::start()
    }

    /// A real-server fixture with a fresh namespace named after `scenario`, or `None` when the
    /// tier is skipped (what [`on_both_backends!`] runs as `real`).
    ///
    /// # Panics
    /// When the tier is required but cannot run, or the kubelet or proxy cannot start.
    pub fn on_real(scenario: &str) -> Option<Self> {
        let plane = apiary_envtest::shared()?;
        let runtime = runtime();
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        let real = real::Real::start(plane, &runtime, scenario, &kubeconfig);
        Some(Self {
            namespace: real.namespace().to_owned(),
            backend: Backend::Real(Some(Box::new(real))),
            runtime,
            dir,
            kubeconfig,
        })
    }

    /// Start a simulator and run `setup` on it before anything else.
    pub fn start_with(setup: impl FnOnce(&Simulator)) -> Self {
        let runtime = runtime();
        let sim = runtime
            .block_on(Simulator::start(
                SimOptions::default().with_time_scale(TIME_SCALE),
            ))
            .expect("simulator starts");
        sim.ensure_namespace(NAMESPACE);
        setup(&sim);
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig, NAMESPACE)
            .expect("kubeconfig written");
        sim.clear_requests();
        Self {
            backend: Backend::Sim(Some(sim)),
            runtime,
            dir,
            namespace: NAMESPACE.to_owned(),
            kubeconfig,
        }
    }

    /// Which backend this fixture runs against.
    pub fn kind(&self) -> BackendKind {
        match self.backend {
            Backend::Sim(_) => BackendKind::Sim,
            Backend::Real(_) => BackendKind::Real,
        }
    }

    /// The simulator.
    ///
    /// # Panics
    /// On the real backend: a scenario that needs the simulator's own controls is sim-only.
    pub fn sim(&self) -> &Simulator {
        match &self.backend {
            Backend::Sim(sim) => sim.as_ref().expect("simulator running"),
            Backend::Real(_) => panic!("a simulator-only control was used on the real server"),
        }
    }

    fn real(&self) -> &real::Real {
        match &self.backend {
            Backend::Real(real) => real.as_ref().expect("real backend running"),
            Backend::Sim(_) => unreachable!("checked by the caller"),
        }
    }

    /// The real backend's shared stage (`apiary_envtest::stage`): its admin in the fixture's
    /// namespace, for [`Fixture::on_stage`].
    fn stage(&self) -> &apiary_envtest::stage::Admin {
        self.real().stage()
    }

    /// Run one of the stage's requests to completion on the fixture's runtime.
    fn on_stage<T>(&self, request: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(request)
    }

    /// The namespace on the kubeconfig's context.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The temporary directory (also `HOME` of every run).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Write a kubeconfig for the server whose context has no namespace.
    pub fn kubeconfig_without_namespace(&self) -> PathBuf {
        let yaml: String = std::fs::read_to_string(&self.kubeconfig)
            .expect("read kubeconfig")
            .lines()
            .filter(|line| !line.trim_start().starts_with("namespace:"))
            .map(|line| format!("{line}\n"))
            .collect();
        let path = self.dir().join("kubeconfig-no-namespace");
        std::fs::write(&path, yaml).expect("write kubeconfig");
        path
    }

    /// A command for the built binary with `--kubeconfig` set and a clean environment.
    pub fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut cmd = bare_command(self.dir());
        cmd.arg("--kubeconfig").arg(&self.kubeconfig);
        cmd.args(args);
        cmd
    }

    /// Run the binary with `args` (after `--kubeconfig <fixture>`).
    pub fn apiary<S: AsRef<OsStr>>(&self, args: &[S]) -> Run {
        run(self.command(args))
    }

    /// Every request the server received from the binary (the simulator's log, or the proxy's
    /// log in front of the real server), in arrival order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        match self.kind() {
            BackendKind::Sim => self.sim().requests(),
            BackendKind::Real => self.real().requests(),
        }
    }

    /// Forget the requests received so far.
    pub fn clear_requests(&self) {
        match self.kind() {
            BackendKind::Sim => self.sim().clear_requests(),
            BackendKind::Real => self.real().clear_requests(),
        }
    }

    /// Assert that the server received no request at all.
    pub fn assert_no_requests(&self, context: &str) {
        let requests = self.requests();
        assert!(
            requests.is_empty(),
            "{context}: the server received {} request(s): {:?}",
            requests.len(),
            requests
                .iter()
                .map(|r| format!("{} {}", r.method, r.path))
                .collect::<Vec<_>>()
        );
    }

    /// The requests that could change state (POST, PUT, PATCH, DELETE).
    pub fn mutations(&self) -> Vec<String> {
        apiary_envtest::stage::mutations(&self.requests())
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    }

    /// Make `verb` on `resource` (every resource when `None`) answer `403 Forbidden` from now on.
    /// The simulator denies it with a fault rule; on the real server the binary from now on runs
    /// as the unprivileged user, bound to a ClusterRole granting every verb on the resources
    /// apiary uses except this one, so the refusal is RBAC's own.
    pub fn deny(&mut self, verb: Verb, resource: Option<Resource>) {
        match &mut self.backend {
            Backend::Sim(sim) => sim
                .as_ref()
                .expect("simulator running")
                .faults()
                .deny(verb, resource),
            Backend::Real(real) => real.as_mut().expect("real backend running").deny(
                &self.runtime,
                verb,
                resource,
                &self.kubeconfig,
            ),
        }
    }

    /// A second namespace (`other` on the simulator, unique on the real server), created.
    pub fn other_namespace(&self) -> String {
        match self.kind() {
            BackendKind::Sim => {
                self.sim().ensure_namespace("other");
                "other".to_owned()
            }
            BackendKind::Real => self.real().other_namespace(),
        }
    }

    /// A namespace name that does not exist (`fresh-ns` on the simulator, unique on the real
    /// server, where other tests may share the control plane).
    pub fn absent_namespace(&self) -> String {
        match self.kind() {
            BackendKind::Sim => "fresh-ns".to_owned(),
            BackendKind::Real => format!("fresh-{}", self.namespace),
        }
    }

    /// Run `f` on the simulator's model.
    ///
    /// # Panics
    /// On the real backend.
    pub fn with_model<R>(&self, f: impl FnOnce(&mut apiary_cluster_model::ClusterModel) -> R) -> R {
        self.sim().with_model(f)
    }

    /// Wait (real time) for `model` time to pass in the simulator.
    pub fn wait_model(&self, model: Duration) {
        std::thread::sleep(self.sim().real_duration(model));
    }

    /// The pods in the fixture's namespace.
    pub fn pods(&self) -> Vec<Pod> {
        match self.kind() {
            BackendKind::Sim => {
                let ns = self.namespace.clone();
                self.with_model(|m| {
                    m.list_pods(Some(&ns), &Default::default())
                        .expect("list pods")
                        .items
                })
            }
            BackendKind::Real => self.on_stage(self.stage().pods()),
        }
    }

    /// The names of the pods in the fixture's namespace.
    pub fn pod_names(&self) -> Vec<String> {
        self.pods()
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect()
    }

    /// The pod `name` in the fixture's namespace, if it exists.
    pub fn pod(&self, name: &str) -> Option<Pod> {
        match self.kind() {
            BackendKind::Sim => {
                let ns = self.namespace.clone();
                self.with_model(|m| m.get_pod(&ns, name).ok())
            }
            BackendKind::Real => self.on_stage(self.stage().pod_named(name)),
        }
    }

    /// The Secrets in the fixture's namespace.
    pub fn secrets(&self) -> Vec<Secret> {
        match self.kind() {
            BackendKind::Sim => {
                let ns = self.namespace.clone();
                self.with_model(|m| {
                    m.list_secrets(Some(&ns), &Default::default())
                        .expect("list secrets")
                        .items
                })
            }
            BackendKind::Real => self.on_stage(self.stage().secrets()),
        }
    }

    /// The names of the Secrets in the fixture's namespace.
    pub fn secret_names(&self) -> Vec<String> {
        self.secrets()
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect()
    }

    /// The Secret `name` in the fixture's namespace.
    ///
    /// # Panics
    /// When it does not exist.
    pub fn secret(&self, name: &str) -> Secret {
        self.secrets()
            .into_iter()
            .find(|s| s.metadata.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("secret {name} exists"))
    }

    /// The NetworkPolicies of the fixture's namespace (the real backend only: the simulator has no
    /// such kind).
    ///
    /// # Panics
    /// On the simulator.
    pub fn network_policies(&self) -> Vec<k8s_openapi::api::networking::v1::NetworkPolicy> {
        self.on_stage(self.stage().objects())
    }

    /// Create `object` in the fixture's namespace as the admin (the real backend only): a
    /// ResourceQuota, a LimitRange.
    ///
    /// # Panics
    /// On the simulator.
    pub fn create_namespaced_object<K>(&self, object: &K)
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + k8s_openapi::serde::Serialize
            + for<'de> k8s_openapi::serde::Deserialize<'de>
            + std::fmt::Debug,
    {
        self.on_stage(self.stage().create_object(object));
    }

    /// Merge `status` into the status of the object `name` of the fixture's namespace, as a
    /// controller would (the real backend only; the tier runs no controller manager, so a
    /// ResourceQuota's `status.hard` and `status.used` are written here).
    ///
    /// # Panics
    /// On the simulator.
    pub fn patch_namespaced_status<K>(&self, name: &str, status: serde_json::Value)
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + for<'de> k8s_openapi::serde::Deserialize<'de>
            + std::fmt::Debug,
    {
        self.on_stage(self.stage().patch_status::<K>(name, status));
    }

    /// Create the cluster-scoped `object` as the admin (the real backend only).
    ///
    /// # Panics
    /// On the simulator.
    pub fn create_cluster_object<K>(&self, object: &K)
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::ClusterResourceScope>
            + Clone
            + k8s_openapi::serde::Serialize
            + for<'de> k8s_openapi::serde::Deserialize<'de>
            + std::fmt::Debug,
    {
        self.on_stage(self.stage().create_cluster_object(object));
    }

    /// Serve a validating webhook denying pods without the label `required` and register it
    /// as `name` for this fixture's namespace only (the real backend only). The configuration
    /// is deleted when the returned guard drops, on a panic too.
    ///
    /// # Panics
    /// On the simulator.
    pub fn require_label_webhook(&self, name: &str, required: &str) -> RegisteredWebhook<'_> {
        let webhook = self.on_stage(self.stage().register_label_webhook(name, required));
        RegisteredWebhook {
            fixture: self,
            name: name.to_owned(),
            webhook: Some(webhook),
        }
    }

    /// The PersistentVolumeClaims of the fixture's namespace (the real backend only).
    ///
    /// # Panics
    /// On the simulator.
    pub fn workspace_claims(&self) -> Vec<k8s_openapi::api::core::v1::PersistentVolumeClaim> {
        self.on_stage(self.stage().objects())
    }

    /// Create a user's Secret `name` holding `data` (`stringData`) in the fixture's namespace,
    /// outside apiary (`--env-from-secret`, `--env-secret`). The request log is cleared.
    pub fn create_user_secret(&self, name: &str, data: &[(&str, &str)]) {
        let secret = Secret {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(self.namespace.clone()),
                ..Default::default()
            },
            string_data: Some(
                data.iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Secret::default()
        };
        match self.kind() {
            BackendKind::Sim => {
                let ns = self.namespace.clone();
                self.with_model(|m| m.create_secret(&ns, secret).map(|_| ()))
                    .expect("secret created");
            }
            BackendKind::Real => drop(self.on_stage(self.stage().create_secret(&secret))),
        }
        self.clear_requests();
    }

    /// Delete the Secret `name` from the fixture's namespace, outside apiary.
    pub fn delete_user_secret(&self, name: &str) {
        match self.kind() {
            BackendKind::Sim => {
                let ns = self.namespace.clone();
                self.with_model(|m| m.delete_secret(&ns, name, &Default::default()).map(|_| ()))
                    .expect("secret deleted");
            }
            BackendKind::Real => self.on_stage(self.stage().delete_secret(name)),
        }
    }

    /// Wait until pod `name` satisfies `ready` (`what` names the state in the failure message).
    /// Bounded by [`WAIT_BOUND`] so a broken run fails instead of hanging.
    pub fn wait_pod(&self, name: &str, what: &str, ready: impl Fn(&Pod) -> bool) -> Pod {
        let began = Instant::now();
        let mut last = None;
        while began.elapsed() < WAIT_BOUND {
            if let Some(pod) = self.pod(name) {
                if ready(&pod) {
                    return pod;
                }
                last = Some(pod.status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("pod {name} never became {what}; last status {last:?}")
    }

    /// A validated configuration of `agent` with `image` in the fixture's namespace.
    pub fn config(&self, agent: &str, image: &str) -> apiary_substrate::config::ValidConfig {
        valid_config(agent, image, &self.namespace)
    }

    /// Create an apiary-built attempt for `agent` (the pod, and its Secret when `with_secret`);
    /// the image's repository keyword selects what the kubelet does with it (the simulator's
    /// script from the same convention). `deleting` leaves the pod deletion-marked but present:
    /// on the simulator with a `deletionTimestamp` a day ahead, on the real server with a
    /// finalizer and a real DELETE. The request log is cleared afterwards.
    pub fn insert_attempt(
        &self,
        agent: &str,
        image: &str,
        with_secret: bool,
        deleting: bool,
    ) -> apiary_substrate::build::Attempt {
        let config = self.config(agent, image);
        let attempt = apiary_substrate::build::build_attempt(
            &config,
            apiary_substrate::naming::Generation::from_u32(0x0a0b_0c0d),
        );
        match self.kind() {
            BackendKind::Sim => {
                let mut pod = attempt.pod.clone();
                if deleting {
                    let later = self.sim().now() + jiff::SignedDuration::from_hours(24);
                    pod.metadata.deletion_timestamp =
                        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(later));
                }
                let script = script_for(&pod);
                let secret = attempt.secret.clone();
                self.with_model(|m| {
                    if with_secret {
                        m.insert_secret(secret).expect("secret inserted");
                    }
                    m.insert_pod_with_script(pod, script).expect("pod inserted");
                });
            }
            BackendKind::Real => {
                let secret = with_secret.then_some(&attempt.secret);
                self.on_stage(
                    self.stage()
                        .create_attempt(secret, attempt.pod.clone(), deleting),
                );
            }
        }
        self.clear_requests();
        attempt
    }

    /// Put a copy of `pod` (another agent's) under the name `name`: a foreign pod there.
    pub fn insert_foreign_pod(&self, pod: &Pod, name: &str) {
        let mut pod = pod.clone();
        pod.metadata.name = Some(name.to_owned());
        pod.metadata.uid = None;
        pod.metadata.resource_version = None;
        match self.kind() {
            BackendKind::Sim => {
                self.with_model(|m| m.insert_pod(pod).expect("insert"));
            }
            BackendKind::Real => drop(self.on_stage(self.stage().create_pod(&pod))),
        }
        self.clear_requests();
    }

    /// A seed pod named `name` labelled `app=<app>` in the fixture's namespace.
    pub fn seed_pod(&self, name: &str, app: &str, port: i64) -> Pod {
        seed_pod(name, app, port, &self.namespace)
    }

    /// Create seed pods that the kubelet starts (10.244.x.y addresses) and wait until each runs
    /// with an address; the request log is cleared afterwards.
    pub fn start_seed_pods(&self, app: &str, names: &[&str]) {
        match self.kind() {
            BackendKind::Sim => {
                self.with_model(|m| {
                    for name in names {
                        m.insert_pod_with_script(
                            seed_pod(name, app, 7000, NAMESPACE),
                            PodScript::Start {
                                after: Duration::ZERO,
                            },
                        )
                        .expect("seed pod inserted");
                    }
                });
            }
            BackendKind::Real => {
                for name in names {
                    let pod = self.seed_pod(name, app, 7000);
                    self.on_stage(self.stage().create_pod(&pod));
                }
            }
        }
        for name in names {
            self.wait_pod(name, "running with an address", |p| {
                container_state(p) == "running"
                    && p.status.as_ref().is_some_and(|s| s.pod_ip.is_some())
            });
        }
        self.clear_requests();
    }

    /// Put `pod` in place with `status`, a pod no kubelet touches (the simulator's `Inert`
    /// script; on the real server, a pod bound to a node no kubelet runs, its status written
    /// through the status subresource); `deleting` then deletion-marks it (a `deletionTimestamp`
    /// an hour ahead on the simulator, a real DELETE whose grace period nobody finishes).
    pub fn insert_inert_pod(&self, mut pod: Pod, status: PodStatus, deleting: bool) {
        match self.kind() {
            BackendKind::Sim => {
                pod.status = Some(status);
                if deleting {
                    pod.metadata.deletion_timestamp =
                        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                            self.sim().now() + jiff::SignedDuration::from_hours(1),
                        ));
                }
                self.with_model(|m| {
                    m.insert_pod_with_script(pod, PodScript::Inert)
                        .expect("inert pod inserted");
                });
            }
            BackendKind::Real => {
                self.on_stage(self.stage().create_inert_pod(pod, status, deleting));
            }
        }
        self.clear_requests();
    }
}

/// A webhook registered by [`Fixture::require_label_webhook`]: dropped, its configuration is
/// deleted (so no later pod of the namespace reaches a server that is gone) and it stops.
pub struct RegisteredWebhook<'a> {
    fixture: &'a Fixture,
    name: String,
    webhook: Option<apiary_envtest::webhook::LabelWebhook>,
}

impl Drop for RegisteredWebhook<'_> {
    fn drop(&mut self) {
        let deleted = self.fixture.on_stage(self.fixture.stage().delete_cluster_object::<
            k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
        >(&self.name));
        // A second panic while unwinding would abort the test process and hide the first.
        if let Err(error) = deleted
            && !std::thread::panicking()
        {
            panic!("delete the webhook configuration {}: {error}", self.name);
        }
        let _guard = self.fixture.runtime.enter();
        drop(self.webhook.take());
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _guard = self.runtime.enter();
        match &mut self.backend {
            Backend::Sim(sim) => drop(sim.take()),
            Backend::Real(real) => drop(real.take()),
        }
    }
}

/// The simulator's script for an apiary-built pod: what the image convention selects, else a
/// start without delay.
fn script_for(pod: &Pod) -> PodScript {
    PodScript::from_pod(pod, Duration::ZERO).unwrap_or(PodScript::Start {
        after: Duration::ZERO,
    })
}

/// The first container's state: `running`, `terminated`, `waiting:<reason>`, or `none`.
pub fn container_state(pod: &Pod) -> String {
    let state = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref());
    match state {
        Some(s) if s.running.is_some() => "running".to_owned(),
        Some(s) if s.terminated.is_some() => "terminated".to_owned(),
        Some(s) => format!(
            "waiting:{}",
            s.waiting
                .as_ref()
                .and_then(|w| w.reason.as_deref())
                .unwrap_or("")
        ),
        None => "none".to_owned(),
    }
}

/// A command for the built binary with a clean environment and `HOME` at `home`.
pub fn bare_command(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_apiary"));
    cmd.env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("HOME", home)
        .stdin(Stdio::null());
    cmd
}

/// Run a prepared command to completion.
pub fn run(mut cmd: Command) -> Run {
    Run::from_output(cmd.output().expect("the apiary binary runs"))
}

/// Run the built binary to completion with a clean environment, `HOME` at `home`, the
/// kubeconfig at `kubeconfig` and `args`.
pub fn run_with_kubeconfig(home: &Path, kubeconfig: &Path, args: &[&str]) -> Run {
    let mut cmd = bare_command(home);
    cmd.arg("--kubeconfig").arg(kubeconfig).args(args);
    run(cmd)
}

/// A kubeconfig whose current context, `team-ctx` (namespace `agents`, server on a closed
/// loopback port), authenticates through an exec credential plugin that is installed nowhere:
/// `apiary-test-no-such-plugin` (E13).
pub const MISSING_PLUGIN_KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:9\n\
     users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n\
     \x20     command: apiary-test-no-such-plugin\n      interactiveMode: Never\n\
     contexts:\n- name: team-ctx\n  context:\n    cluster: c\n    user: u\n    namespace: agents\n\
     current-context: team-ctx\n";

/// A validated configuration of `agent` with `image` in `namespace` (defaults otherwise).
pub fn valid_config(
    agent: &str,
    image: &str,
    namespace: &str,
) -> apiary_substrate::config::ValidConfig {
    let identity = apiary_substrate::naming::AgentIdentity::new(agent).expect("valid agent");
    apiary_substrate::config::DeployConfig::new(namespace, image)
        .validate(&identity)
        .expect("valid config")
}

/// The image `registry.example.com/team/<repo>@sha256:<64 × a>`; the repository name selects
/// the kubelet's script on both backends (`agent-crash`, `agent-pullfail-manifest`, …).
pub fn image(repo: &str) -> String {
    format!("registry.example.com/team/{repo}@sha256:{}", "a".repeat(64))
}

/// A seed pod named `name` in `namespace` labelled `app=<app>` with a container port `gossip` =
/// `port` (and `http` = 80).
pub fn seed_pod(name: &str, app: &str, port: i64, namespace: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": {"containers": [{
            "name": "node",
            "image": IMAGE,
            "ports": [{"name": "gossip", "containerPort": port}, {"name": "http", "containerPort": 80}]
        }]}
    }))
    .expect("pod json")
}

/// Standard base64 (RFC 4648, with padding): the redaction tests look for encoded leaks, the
/// node tests write a dockerconfigjson `auth`.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
