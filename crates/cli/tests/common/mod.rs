//! Shared fixture of the CLI end-to-end tests: a loopback apiserver simulator running on a
//! Tokio runtime inside the test process, a kubeconfig pointing at it in a temporary directory,
//! and a runner for the built `apiary` binary with a clean environment (no `KUBECONFIG`, `HOME`
//! in the temporary directory, so the user's kubeconfig is never read). Test-only code.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the fixture"
)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use apiary_apiserver_sim::{LoggedRequest, SimOptions, Simulator};

/// The namespace on the fixture kubeconfig's context.
pub const NAMESPACE: &str = "agents";

/// A digest-pinned image that starts normally in the simulator.
pub const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// Model seconds per real second: a 60 s grace period passes in 0.3 s, a 1 s start in 5 ms.
pub const TIME_SCALE: f64 = 200.0;

/// A simulator plus a kubeconfig for it.
pub struct Fixture {
    /// The simulator (dropped before the runtime).
    pub sim: Option<Simulator>,
    runtime: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
    /// The kubeconfig whose context namespace is [`NAMESPACE`].
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

impl Fixture {
    /// Start a simulator with the fixture namespace created.
    pub fn start() -> Self {
        Self::start_with(|_| {})
    }

    /// Start a simulator and run `setup` on it before anything else.
    pub fn start_with(setup: impl FnOnce(&Simulator)) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
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
            sim: Some(sim),
            runtime,
            dir,
            kubeconfig,
        }
    }

    /// The simulator.
    pub fn sim(&self) -> &Simulator {
        self.sim.as_ref().expect("simulator running")
    }

    /// The temporary directory (also `HOME` of every run).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Write a kubeconfig for the simulator whose context has no namespace.
    pub fn kubeconfig_without_namespace(&self) -> PathBuf {
        let yaml: String = self
            .sim()
            .kubeconfig_yaml(NAMESPACE)
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

    /// Every request the simulator received.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.sim().requests()
    }

    /// Assert that the simulator received no request at all.
    pub fn assert_no_requests(&self, context: &str) {
        let requests = self.requests();
        assert!(
            requests.is_empty(),
            "{context}: the simulator received {} request(s): {:?}",
            requests.len(),
            requests
                .iter()
                .map(|r| format!("{} {}", r.method, r.path))
                .collect::<Vec<_>>()
        );
    }

    /// Run `f` on the simulator's model.
    pub fn with_model<R>(
        &self,
        f: impl FnOnce(&mut apiary_apiserver_sim::model::ClusterModel) -> R,
    ) -> R {
        self.sim().with_model(f)
    }

    /// Wait (real time) for `model` time to pass in the simulator.
    pub fn wait_model(&self, model: Duration) {
        std::thread::sleep(self.sim().real_duration(model));
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let sim = self.sim.take();
        let _guard = self.runtime.enter();
        drop(sim);
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

/// A validated configuration of `agent` with `image` in [`NAMESPACE`] (defaults otherwise).
pub fn valid_config(agent: &str, image: &str) -> apiary_substrate::config::ValidConfig {
    let identity = apiary_substrate::naming::AgentIdentity::new(agent).expect("valid agent");
    apiary_substrate::config::DeployConfig::new(NAMESPACE, image)
        .validate(&identity)
        .expect("valid config")
}

/// The image `registry.example.com/team/<repo>@sha256:<64 × a>`; the repository name selects
/// the simulated kubelet's script (`agent-crash`, `agent-pullfail-manifest`, …).
pub fn image(repo: &str) -> String {
    format!("registry.example.com/team/{repo}@sha256:{}", "a".repeat(64))
}

impl Fixture {
    /// Insert an apiary-built pod for `agent` (and its Secret when `with_secret`), scripted by
    /// `script`; `deleting` gives it a `deletionTimestamp` a day ahead of the model clock.
    pub fn insert_attempt(
        &self,
        agent: &str,
        image: &str,
        script: apiary_apiserver_sim::model::PodScript,
        with_secret: bool,
        deleting: bool,
    ) -> apiary_substrate::build::Attempt {
        let config = valid_config(agent, image);
        let attempt = apiary_substrate::build::build_attempt(
            &config,
            apiary_substrate::naming::Generation::from_u32(0x0a0b_0c0d),
        );
        let mut pod = attempt.pod.clone();
        if deleting {
            let later = self.sim().now() + jiff::SignedDuration::from_hours(24);
            pod.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(later));
        }
        let secret = attempt.secret.clone();
        self.with_model(|m| {
            if with_secret {
                m.insert_secret(secret).expect("secret inserted");
            }
            m.insert_pod_with_script(pod, script).expect("pod inserted");
        });
        self.sim().clear_requests();
        attempt
    }

    /// The names of the pods in [`NAMESPACE`].
    pub fn pod_names(&self) -> Vec<String> {
        self.with_model(|m| {
            m.list_pods(Some(NAMESPACE), &Default::default())
                .expect("list pods")
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect()
        })
    }

    /// The names of the Secrets in [`NAMESPACE`].
    pub fn secret_names(&self) -> Vec<String> {
        self.with_model(|m| {
            m.list_secrets(Some(NAMESPACE), &Default::default())
                .expect("list secrets")
                .items
                .into_iter()
                .filter_map(|s| s.metadata.name)
                .collect()
        })
    }

    /// The requests that could change state (POST, PUT, PATCH, DELETE).
    pub fn mutations(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r.is_mutation())
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    }
}

/// A seed pod named `name` labelled `app=<app>` with a container port `gossip` = `port`.
pub fn seed_pod(name: &str, app: &str, port: i64) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": app}},
        "spec": {"containers": [{
            "name": "node",
            "image": IMAGE,
            "ports": [{"name": "gossip", "containerPort": port}, {"name": "http", "containerPort": 80}]
        }]}
    }))
    .expect("pod json")
}

impl Fixture {
    /// Insert seed pods that the simulated kubelet starts (and gives 10.244.x.y addresses).
    pub fn start_seed_pods(&self, app: &str, names: &[&str]) {
        self.with_model(|m| {
            for name in names {
                m.insert_pod_with_script(
                    seed_pod(name, app, 7000),
                    apiary_apiserver_sim::model::PodScript::Start {
                        after: Duration::ZERO,
                    },
                )
                .expect("seed pod inserted");
            }
        });
        self.wait_model(Duration::from_secs(5));
        self.sim().clear_requests();
    }
}
