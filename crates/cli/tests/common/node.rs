//! The real-node half of the CLI tests' fixture: one test's share of the node of the test run
//! (crates/envtest/README.md § The real node) — a namespace, a kubeconfig for the `apiary`
//! binary pointing at it, an admin client that stages and inspects what apiary never does — and
//! the helpers every real-node scenario uses (deploy arguments sized for a two-core node, the
//! `agent` container's state).
//!
//! Test-only code: it decides nothing about apiary, talks only to loopback and the node's
//! bridge, and never prints a token or an env value.

#![allow(dead_code, reason = "each real-node test binary uses a different part")]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use apiary_envtest::node::{NodeHandle, NodeNamespace};
use apiary_substrate::naming::AgentIdentity;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

/// A container that runs until told to stop and exits at once on SIGTERM (a shell as PID 1
/// ignores SIGTERM unless it traps it).
pub const SLEEPER: &str = "trap 'exit 0' TERM; sleep 3600 & wait";

/// How long a wait of this file may take before it fails as hung: a bound, not a figure.
pub const BOUND: Duration = Duration::from_secs(150);

/// What one run of the binary gave.
#[derive(Debug)]
pub struct NodeRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl NodeRun {
    pub fn ok(self) -> NodeRun {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is one JSON document ({e}): {self:?}"))
    }

    /// The lines of stderr that start with `error:`.
    pub fn error_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("error:"))
            .collect()
    }
}

/// One test's share of the node: a namespace, a kubeconfig pointing at it, an admin client.
pub struct Scene {
    pub node: &'static NodeHandle,
    pub rt: tokio::runtime::Runtime,
    pub namespace: NodeNamespace,
    pub kubeconfig: PathBuf,
    pub home: tempfile::TempDir,
    pub admin: kube::Client,
}

impl Scene {
    /// `None` when the tier is skipped.
    pub fn new(name: &str) -> Option<Self> {
        let node = apiary_envtest::node::shared()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let namespace = rt.block_on(node.namespace(name));
        let kubeconfig = node.kubeconfig(&namespace);
        let admin = rt.block_on(node.client());
        Some(Self {
            node,
            rt,
            namespace,
            kubeconfig,
            home: tempfile::tempdir().expect("a home"),
            admin,
        })
    }

    pub fn image(&self) -> String {
        self.node.info().images.agent.clone()
    }

    pub fn command(&self, kubeconfig: &std::path::Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_apiary"));
        cmd.arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("KUBECONFIG")
            .env("HOME", self.home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs the binary against the node's apiserver.
    pub fn apiary(&self, args: &[&str]) -> NodeRun {
        let kubeconfig = self.kubeconfig.clone();
        finish(
            self.command(&kubeconfig, args)
                .spawn()
                .expect("apiary runs"),
            Instant::now(),
        )
    }

    /// Starts the binary in the background.
    pub fn spawn(&self, args: &[&str]) -> (Child, Instant) {
        let kubeconfig = self.kubeconfig.clone();
        self.spawn_with(&kubeconfig, args)
    }

    pub fn spawn_with(&self, kubeconfig: &std::path::Path, args: &[&str]) -> (Child, Instant) {
        (
            self.command(kubeconfig, args).spawn().expect("apiary runs"),
            Instant::now(),
        )
    }

    pub fn pods_api(&self) -> Api<Pod> {
        Api::namespaced(self.admin.clone(), &self.namespace)
    }

    pub fn pods(&self) -> Vec<Pod> {
        self.rt
            .block_on(self.pods_api().list(&ListParams::default()))
            .expect("list pods")
            .items
    }

    pub fn pod(&self, name: &str) -> Option<Pod> {
        self.rt
            .block_on(self.pods_api().get_opt(name))
            .expect("get pod")
    }

    /// Polls the pod named `name` every 100 ms until `done` holds.
    pub fn wait_pod(
        &self,
        name: &str,
        what: &str,
        done: impl Fn(Option<&Pod>) -> bool,
    ) -> Option<Pod> {
        let deadline = Instant::now() + BOUND;
        loop {
            let pod = self.pod(name);
            if done(pod.as_ref()) {
                return pod;
            }
            assert!(
                Instant::now() < deadline,
                "{name}: {what} within {BOUND:?}: {pod:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The arguments of `apiary deploy AGENT` running `sh -c script` in `image`, sized for a
/// two-core node, plus `extra`.
pub fn deploy_args<'a>(
    agent: &'a str,
    image: &'a str,
    script: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "deploy",
        agent,
        "--image",
        image,
        "--command",
        "sh",
        "--arg=-c",
        "--arg",
        script,
        "--cpu-request",
        "10m",
        "--memory-request",
        "16Mi",
        "--cpu-limit",
        "200m",
        "--memory-limit",
        "64Mi",
    ];
    args.extend_from_slice(extra);
    args
}

pub fn finish(child: Child, began: Instant) -> NodeRun {
    let out = child.wait_with_output().expect("apiary ran");
    NodeRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: began.elapsed(),
    }
}

pub fn pod_name(agent: &str) -> String {
    AgentIdentity::new(agent).expect("a valid agent").pod_name()
}

pub fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().expect("a uid")
}

/// The `agent` container's status.
pub fn agent_status(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::ContainerStatus> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|s| s.name == "agent")
}

pub fn running(pod: Option<&Pod>) -> bool {
    pod.and_then(agent_status)
        .and_then(|s| s.state.as_ref())
        .is_some_and(|s| s.running.is_some())
}
