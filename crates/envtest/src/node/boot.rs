//! Bringing the real node up and down: the recipe's `setup.sh` writes the configuration,
//! certificates and binaries into a fresh directory; this module starts containerd, the two
//! registries, etcd, the apiserver, scheduler, controller manager and the kubelet itself (free
//! loopback ports wherever the recipe allows one), pushes the test images with the recipe's
//! `images.sh`, waits for the Node to be `Ready`, and writes [`NodeInfo`] for the tests.
//!
//! Every process is recorded by name and PID in `run/pids`, the file the recipe's `stop.sh`
//! reads. A watchdog shell holds a pipe from this process: when the pipe closes (on drop, or
//! because this process exited, panicked or was killed) it runs `stop.sh`, which stops exactly
//! those PIDs, kills the pod containers, unmounts, deletes the bridge, restores the sysctls and
//! removes the directories created outside the node's own, and then the directory goes.
//!
//! Layer: test support, the imperative shell. Never prints a token or a password.

use std::fs::{self, File};
use std::io::{self, Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node as NodeObject, ServiceAccount};
use kube::api::{Api, Patch, PatchParams};

use super::flags::{apiserver_args, kubelet_args};
use super::info::{Images, NodeInfo};
use crate::control_plane::free_ports;

/// The node's name.
pub const NODE_NAME: &str = "apiary-node-1";

/// The registry ports the recipe's configuration and image references use (fixed by `setup.sh`).
const REGISTRY_PORTS: [u16; 2] = [5000, 5001];

/// How long one start-up step may take before start fails: a bound against hangs, far above
/// the measured times (README of the recipe: the whole start takes 8–13 s).
const STEP_BOUND: Duration = Duration::from_secs(120);

/// Sysctls the kubelet and the bridge plugin change; saved before start, restored by `stop.sh`.
const SYSCTLS: [&str; 7] = [
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/ipv4/ip_forward",
];

/// Directories the components create outside the node's own; those absent before start are
/// removed by `stop.sh`.
const OUTSIDE_DIRS: [&str; 6] = [
    "/var/lib/kubelet",
    "/var/log/pods",
    "/var/log/containers",
    "/var/lib/cni",
    "/run/containerd",
    "/sys/fs/cgroup/memory/k8s.io",
];

/// The watchdog: once its stdin closes it runs the recipe's `stop.sh` on the node directory
/// (`$1`), then deletes the directory unless `$3` is `keep`.
const WATCHDOG: &str = r#"
while read -r _; do :; done
RN="$1" "$2/stop.sh" > "$1/stop.log" 2>&1
[ "$3" = keep ] || rm -rf "$1"
"#;

/// A running node. Dropping it stops everything (see the module docs).
pub struct Node {
    info: NodeInfo,
    watchdog: Child,
    lifeline: Option<ChildStdin>,
    /// The daemons, kept so none is reaped by anyone else; `stop.sh` stops them by PID.
    _children: Vec<Child>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("dir", &self.info.dir)
            .field("server_url", &self.info.server_url)
            .finish_non_exhaustive()
    }
}

/// Why the node did not start.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    /// A file or process operation failed.
    #[error("cannot {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: io::Error,
    },
    /// A step did not finish; the message names it and the log to read.
    #[error("{0}")]
    Step(String),
}

fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> BootError {
    let what = what.into();
    move |source| BootError::Io { what, source }
}

impl Node {
    /// Starts a node with the recipe in `recipe` (the `shared/node` directory) and the binaries
    /// of `assets` when given (a `KUBEBUILDER_ASSETS` directory already unpacked: its binaries are
    /// linked instead of unpacked again). Blocking. `keep` leaves the node's directory in place
    /// after stop (its logs), for a person debugging the fixture.
    ///
    /// # Errors
    /// When a step fails or does not finish in time; what was started is stopped again.
    pub fn start(recipe: &Path, assets: Option<&Path>, keep: bool) -> Result<Self, BootError> {
        let began = Instant::now();
        let dir = tempfile::Builder::new()
            .prefix("apiary-node-")
            .tempdir()
            .map_err(io_error("create the node's directory"))?
            .keep();
        let run = dir.join("run");
        fs::create_dir_all(run.join("logs")).map_err(io_error("create run/logs"))?;
        fs::write(run.join("pids"), "").map_err(io_error("create run/pids"))?;
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("apiary-node-watchdog")
            .arg(&dir)
            .arg(recipe)
            .arg(if keep { "keep" } else { "remove" })
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: a Ctrl-C of the test run must not kill the cleanup.
            .process_group(0)
            .spawn()
            .map_err(io_error("start the node's watchdog"))?;
        let lifeline = watchdog.stdin.take();
        let mut node = Self {
            info: NodeInfo::placeholder(dir.clone(), recipe.to_owned()),
            watchdog,
            lifeline,
            _children: Vec::new(),
        };
        node.boot(assets)?;
        node.info.started_in_ms = began.elapsed().as_millis();
        node.info
            .write()
            .map_err(io_error("write the node's info file"))?;
        Ok(node)
    }

    /// What the tests read (also written to `run/node.json`).
    pub fn info(&self) -> &NodeInfo {
        &self.info
    }

    fn boot(&mut self, assets: Option<&Path>) -> Result<(), BootError> {
        let dir = self.info.dir.clone();
        let recipe = self.info.recipe.clone();
        let run = dir.join("run");
        save_machine_state(&run)?;
        for port in REGISTRY_PORTS {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Err(BootError::Step(format!(
                    "port 127.0.0.1:{port} is taken (another node, or a registry already running): \
                     stop it first (one node per machine)"
                )));
            }
        }
        if let Some(assets) = assets {
            link_binaries(assets, &dir.join("bin"))?;
        }
        script(&recipe, "setup.sh", &dir, &[("NODE", NODE_NAME)])?;
        let bin = dir.join("bin");
        let certs = dir.join("certs");
        let containerd = dir.join("containerd");
        let socket = containerd.join("containerd.sock");
        let [
            etcd_port,
            etcd_peer,
            api_port,
            scheduler_port,
            kcm_port,
            kubelet_port,
            healthz_port,
        ] = free_ports::<7>().map_err(io_error("pick free ports"))?;

        self.daemon(
            "containerd",
            Path::new("containerd"),
            &["--config".into(), path(&containerd.join("config.toml"))],
        )?;
        for (name, config) in [("registry-open", "open"), ("registry-auth", "auth")] {
            let file = dir.join("registry").join(config).join("config.yml");
            self.daemon(
                name,
                Path::new("docker-registry"),
                &["serve".into(), path(&file)],
            )?;
        }
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        self.daemon(
            "etcd",
            &bin.join("etcd"),
            &[
                "--name=default".into(),
                format!("--data-dir={}", path(&run.join("etcd-data"))),
                format!("--listen-client-urls={etcd_url}"),
                format!("--advertise-client-urls={etcd_url}"),
                format!("--listen-peer-urls={peer_url}"),
                format!("--initial-advertise-peer-urls={peer_url}"),
                format!("--initial-cluster=default={peer_url}"),
                "--log-level=error".into(),
                "--logger=zap".into(),
            ],
        )?;
        let apiserver_args = apiserver_args(&certs, &etcd_url);
        let mut args = apiserver_args.clone();
        args.push(format!("--secure-port={api_port}"));
        self.daemon("kube-apiserver", &bin.join("kube-apiserver"), &args)?;

        wait("containerd", STEP_BOUND, || {
            Command::new("ctr")
                .arg("--address")
                .arg(&socket)
                .arg("version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })?;
        wait("registry-open", STEP_BOUND, || {
            http_status(5000) == Some(200)
        })?;
        wait("registry-auth", STEP_BOUND, || {
            http_status(5001) == Some(401)
        })?;
        let images_log =
            File::create(run.join("logs/images.log")).map_err(io_error("create the images log"))?;
        script_to(&recipe, "images.sh", &dir, &[], images_log)?;

        self.info.server_url = format!("https://127.0.0.1:{api_port}");
        self.info.etcd_url = etcd_url;
        self.info.ca_path = certs.join("ca.crt");
        self.info.apiserver_args = apiserver_args;
        self.info.images =
            Images::read(&run.join("images.env")).map_err(io_error("read run/images.env"))?;
        self.info.images.private = push_private(&recipe, &dir)?;
        for user in ["admin", "kcm", "scheduler", "kubelet"] {
            let token = fs::read_to_string(certs.join(format!("{user}.token")))
                .map_err(io_error(format!("read the {user} token")))?;
            let file = run.join(format!("kubeconfig-{user}"));
            fs::write(&file, self.info.kubeconfig_yaml(token.trim(), "default"))
                .map_err(io_error(format!("write kubeconfig-{user}")))?;
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io_error("build a runtime"))?;
        let client = runtime.block_on(async { self.info.admin_client().await });
        let client = client.map_err(|e| BootError::Step(format!("admin client: {e}")))?;
        wait_async(&runtime, "kube-apiserver /readyz", STEP_BOUND, || {
            let client = client.clone();
            async move {
                let request = http::Request::get("/readyz").body(Vec::new());
                match request {
                    Ok(request) => client.request_text(request).await.is_ok_and(|t| t == "ok"),
                    Err(_) => false,
                }
            }
        })
        .map_err(|e| self.with_log(e, "kube-apiserver"))?;

        let kubeconfig = |user: &str| path(&run.join(format!("kubeconfig-{user}")));
        self.daemon(
            "kube-scheduler",
            &bin.join("kube-scheduler"),
            &[
                format!("--kubeconfig={}", kubeconfig("scheduler")),
                format!("--authentication-kubeconfig={}", kubeconfig("scheduler")),
                format!("--authorization-kubeconfig={}", kubeconfig("scheduler")),
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                format!("--secure-port={scheduler_port}"),
                "--port=0".into(),
            ],
        )?;
        self.daemon(
            "kube-controller-manager",
            &bin.join("kube-controller-manager"),
            &[
                format!("--kubeconfig={}", kubeconfig("kcm")),
                format!("--authentication-kubeconfig={}", kubeconfig("kcm")),
                format!("--authorization-kubeconfig={}", kubeconfig("kcm")),
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                format!("--secure-port={kcm_port}"),
                "--port=0".into(),
                format!(
                    "--service-account-private-key-file={}",
                    path(&certs.join("sa.key"))
                ),
                format!("--root-ca-file={}", path(&certs.join("ca.crt"))),
                "--use-service-account-credentials=false".into(),
                "--controllers=*".into(),
            ],
        )?;
        let kubelet_args = kubelet_args(NODE_NAME, &dir, &socket, kubelet_port, healthz_port);
        self.info.kubelet_argv = std::iter::once(path(&bin.join("kubelet")))
            .chain(kubelet_args.iter().cloned())
            .collect();
        self.daemon("kubelet", &bin.join("kubelet"), &kubelet_args)?;

        let nodes: Api<NodeObject> = Api::all(client.clone());
        wait_async(&runtime, "the Node registered", STEP_BOUND, || {
            let nodes = nodes.clone();
            async move { nodes.get_opt(NODE_NAME).await.is_ok_and(|n| n.is_some()) }
        })
        .map_err(|e| self.with_log(e, "kubelet"))?;
        // kubelet 1.20 refuses a loopback --node-ip and then publishes no address, so the
        // apiserver could not reach it for logs; it never rewrites them, so set them once.
        let addresses = serde_json::json!({"status": {"addresses": [
            {"type": "InternalIP", "address": "127.0.0.1"},
            {"type": "Hostname", "address": NODE_NAME},
        ]}});
        runtime
            .block_on(nodes.patch_status(
                NODE_NAME,
                &PatchParams::default(),
                &Patch::Merge(&addresses),
            ))
            .map_err(|e| BootError::Step(format!("cannot set the Node's addresses: {e}")))?;
        wait_async(&runtime, "the Node Ready", STEP_BOUND, || {
            let nodes = nodes.clone();
            async move {
                nodes.get(NODE_NAME).await.is_ok_and(|node| {
                    node.status
                        .and_then(|s| s.conditions)
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
                })
            }
        })
        .map_err(|e| self.with_log(e, "kubelet"))?;
        let accounts: Api<ServiceAccount> = Api::namespaced(client, "default");
        wait_async(&runtime, "ServiceAccount default", STEP_BOUND, || {
            let accounts = accounts.clone();
            async move { accounts.get_opt("default").await.is_ok_and(|a| a.is_some()) }
        })
        .map_err(|e| self.with_log(e, "kube-controller-manager"))?;
        Ok(())
    }

    /// Starts `program args...` in its own process group, its output appended to
    /// `run/logs/<name>.log`, and records `name pid` in `run/pids`.
    fn daemon(&mut self, name: &str, program: &Path, args: &[String]) -> Result<(), BootError> {
        let child = spawn_daemon(&self.info.dir, name, program, args)?;
        self._children.push(child);
        Ok(())
    }

    fn with_log(&self, error: BootError, component: &str) -> BootError {
        let log = self.info.log_path(component);
        BootError::Step(format!(
            "{error}; the end of {}:\n{}",
            log.display(),
            crate::control_plane::log_tail(&log, 40)
        ))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        drop(self.lifeline.take());
        let _status = self.watchdog.wait();
    }
}

/// Starts a daemon of the node (see [`Node::daemon`]); also what a kubelet restart uses.
pub(super) fn spawn_daemon(
    dir: &Path,
    name: &str,
    program: &Path,
    args: &[String],
) -> Result<Child, BootError> {
    let log = File::options()
        .create(true)
        .append(true)
        .open(dir.join("run/logs").join(format!("{name}.log")))
        .map_err(io_error(format!("open the {name} log")))?;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(io_error("clone a log handle"))?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(io_error(format!("start {name} ({})", program.display())))?;
    record_pid(dir, name, child.id()).map_err(io_error("record a pid"))?;
    Ok(child)
}

/// Sets `name`'s line of `run/pids` to `pid` (replacing an earlier one), atomically.
pub(super) fn record_pid(dir: &Path, name: &str, pid: u32) -> io::Result<()> {
    let file = dir.join("run/pids");
    let old = fs::read_to_string(&file).unwrap_or_default();
    let mut lines: Vec<String> = old
        .lines()
        .filter(|line| line.split_whitespace().next() != Some(name))
        .map(str::to_owned)
        .collect();
    lines.push(format!("{name} {pid}"));
    let tmp = dir.join("run/pids.tmp");
    fs::write(&tmp, lines.join("\n") + "\n")?;
    fs::rename(tmp, file)
}

/// Saves the sysctls and notes the outside directories that do not exist yet, in the files
/// `stop.sh` restores and removes from.
fn save_machine_state(run: &Path) -> Result<(), BootError> {
    let mut saved = String::new();
    for key in SYSCTLS {
        let value = fs::read_to_string(Path::new("/proc/sys").join(key))
            .map_err(io_error(format!("read sysctl {key}")))?;
        saved.push_str(&format!("{key} {}\n", value.trim()));
    }
    fs::write(run.join("sysctl.saved"), saved).map_err(io_error("save the sysctls"))?;
    let created: String = OUTSIDE_DIRS
        .into_iter()
        .filter(|d| !Path::new(d).exists())
        .map(|d| format!("{d}\n"))
        .collect();
    fs::write(run.join("created-dirs"), created).map_err(io_error("note the created dirs"))
}

/// Links the control-plane binaries of an unpacked assets directory into `bin`, so `setup.sh`
/// does not unpack them again (it checks their digests either way).
fn link_binaries(assets: &Path, bin: &Path) -> Result<(), BootError> {
    fs::create_dir_all(bin).map_err(io_error("create bin"))?;
    for name in [
        "kube-apiserver",
        "etcd",
        "kube-controller-manager",
        "kube-scheduler",
        "kubelet",
    ] {
        let source = assets.join(name);
        if source.is_file() {
            std::os::unix::fs::symlink(&source, bin.join(name))
                .map_err(io_error(format!("link {name}")))?;
        }
    }
    Ok(())
}

/// Runs one of the recipe's scripts with `RN` set to the node's directory; its output goes to
/// `run/logs/<script>.log`.
fn script(recipe: &Path, name: &str, dir: &Path, env: &[(&str, &str)]) -> Result<(), BootError> {
    let log = File::create(dir.join("run/logs").join(format!("{name}.log")))
        .map_err(io_error(format!("create the {name} log")))?;
    script_to(recipe, name, dir, env, log)
}

fn script_to(
    recipe: &Path,
    name: &str,
    dir: &Path,
    env: &[(&str, &str)],
    out: File,
) -> Result<(), BootError> {
    let err = out.try_clone().map_err(io_error("clone a log handle"))?;
    let status = Command::new("bash")
        .arg(recipe.join(name))
        .env("RN", dir)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(io_error(format!("run {name}")))?;
    if status.success() {
        Ok(())
    } else {
        let log = dir.join("run/logs").join(format!("{name}.log"));
        Err(BootError::Step(format!(
            "{name} failed ({status}); the end of {}:\n{}",
            log.display(),
            crate::control_plane::log_tail(&log, 40)
        )))
    }
}

/// Pushes the recipe's agent image once more to the registry behind htpasswd, as repository
/// `private`, with the recipe's `push.py`; returns its digest-pinned reference.
fn push_private(recipe: &Path, dir: &Path) -> Result<String, BootError> {
    let output = Command::new("python3")
        .arg(recipe.join("push.py"))
        .arg(dir.join("images/layouts/agent"))
        .args([
            "v1",
            "http://127.0.0.1:5001",
            "private",
            "v1",
            "--user",
            "pusher",
        ])
        .arg("--password-file")
        .arg(dir.join("registry/auth/password"))
        .stdin(Stdio::null())
        .output()
        .map_err(io_error("run push.py for the private image"))?;
    let digest = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || !digest.starts_with("sha256:") {
        return Err(BootError::Step(format!(
            "pushing the private image failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(format!("127.0.0.1:5001/private@{digest}"))
}

/// The status code of `GET /v2/` on a loopback registry, or `None` if it does not answer.
fn http_status(port: u16) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .write_all(b"GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// Polls `ready` every 100 ms until it holds or `bound` passes.
fn wait(what: &str, bound: Duration, mut ready: impl FnMut() -> bool) -> Result<(), BootError> {
    let deadline = Instant::now() + bound;
    while !ready() {
        if Instant::now() > deadline {
            return Err(BootError::Step(format!("{what} not up within {bound:?}")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// [`wait`] for an asynchronous check.
fn wait_async<F: std::future::Future<Output = bool>>(
    runtime: &tokio::runtime::Runtime,
    what: &str,
    bound: Duration,
    mut ready: impl FnMut() -> F,
) -> Result<(), BootError> {
    wait(what, bound, || runtime.block_on(ready()))
}

/// A path as a flag value.
fn path(path: &Path) -> String {
    path.display().to_string()
}
