//! The test side of the real node: a handle on the node named by `APIARY_NODE` (started once for
//! the whole test run by `apiary-node`), with a fresh namespace per test, kubeconfigs for the
//! `apiary` binary, the kubelet restarted in place, and a second apiserver of the test's own on
//! the node's etcd (restarted or killed without disturbing the other tests).
//!
//! Layer: test support, the imperative shell. Never prints a token.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, DeleteParams, PostParams};

use super::boot::{record_pid, spawn_daemon};
use super::info::{NodeInfo, client_for, kubeconfig_yaml};
use crate::control_plane::{LogGuard, Supervised, free_ports, is_running};

/// How long a fixture wait may take before it fails: a bound against hangs, not a figure.
const BOUND: Duration = Duration::from_secs(120);

/// A handle on the running node.
#[derive(Debug)]
pub struct NodeHandle {
    info: NodeInfo,
    namespaces_made: AtomicU64,
    files: tempfile::TempDir,
}

impl NodeHandle {
    pub(super) fn open(dir: &Path) -> io::Result<Self> {
        Ok(Self {
            info: NodeInfo::read(dir)?,
            namespaces_made: AtomicU64::new(0),
            // Inside the node's directory, which the node's stop removes: the handle lives in a
            // static and is never dropped, so a directory of its own would outlive the run.
            files: tempfile::Builder::new()
                .prefix("test-")
                .tempdir_in(dir.join("run"))?,
        })
    }

    /// The node's description (addresses, images, paths).
    pub fn info(&self) -> &NodeInfo {
        &self.info
    }

    /// The admin's client. Call it inside the test's Tokio runtime.
    ///
    /// # Panics
    /// When the client cannot be built.
    pub async fn client(&self) -> kube::Client {
        self.info
            .admin_client()
            .await
            .expect("the node's admin client builds")
    }

    /// A fresh namespace `<prefix>-<n>-<pid>` whose `default` ServiceAccount exists (pods are
    /// refused until the controller manager has made it). Deleted when the value drops; while
    /// the thread panics, the end of the kubelet's and containerd's logs is printed first.
    ///
    /// # Panics
    /// When the apiserver refuses.
    pub async fn namespace(&self, prefix: &str) -> NodeNamespace {
        let n = self.namespaces_made.fetch_add(1, Ordering::Relaxed);
        let prefix: String = prefix
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(40)
            .collect();
        let name = format!("{}-{n}-{}", prefix.trim_matches('-'), std::process::id());
        let client = self.client().await;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let mut object = Namespace::default();
        object.metadata.name = Some(name.clone());
        namespaces
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("cannot create namespace {name}: {e}"));
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &name);
        let deadline = Instant::now() + BOUND;
        while accounts.get_opt("default").await.ok().flatten().is_none() {
            assert!(
                Instant::now() < deadline,
                "no default ServiceAccount in {name}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        NodeNamespace {
            name,
            info: self.info.clone(),
            _logs: self.log_guard(),
        }
    }

    /// A guard that prints the end of the node's logs if dropped while the thread panics.
    pub fn log_guard(&self) -> LogGuard {
        LogGuard {
            logs: ["kubelet", "containerd", "kube-apiserver"]
                .into_iter()
                .map(|component| (component, self.info.log_path(component)))
                .collect(),
            // The kubelet logs every pod of every test: the end is what matters.
            lines: 40,
        }
    }

    /// A kubeconfig file for the admin on the node's apiserver, `namespace` on its context.
    pub fn kubeconfig(&self, namespace: &str) -> PathBuf {
        self.kubeconfig_for(&self.info.server_url, namespace)
    }

    /// A kubeconfig file for the admin on `server` (a [`PrivateApiserver`]'s URL), `namespace`
    /// on its context.
    pub fn kubeconfig_on(&self, server: &str, namespace: &str) -> PathBuf {
        self.kubeconfig_for(server, namespace)
    }

    fn kubeconfig_for(&self, server: &str, namespace: &str) -> PathBuf {
        let n = self.namespaces_made.fetch_add(1, Ordering::Relaxed);
        let file = self.files.path().join(format!("kubeconfig-{n}"));
        let yaml = kubeconfig_yaml(
            server,
            &self.info.ca_path,
            &self.info.admin_token(),
            namespace,
        );
        std::fs::write(&file, yaml).expect("kubeconfig written");
        file
    }

    /// Stops the kubelet (SIGTERM, as a service manager would), waits until it is gone, and
    /// starts it again with the same command line. Running containers are left alone by a
    /// kubelet stop; the new one picks them up. Every test sharing the node sees the gap.
    ///
    /// # Panics
    /// When the kubelet's pid is unknown or it does not stop or start.
    pub fn restart_kubelet(&self, down_for: Duration) {
        let pids = std::fs::read_to_string(self.info.dir.join("run/pids")).expect("run/pids");
        let pid: u32 = pids
            .lines()
            .find_map(|line| line.strip_prefix("kubelet "))
            .and_then(|pid| pid.trim().parse().ok())
            .expect("the kubelet's pid is recorded");
        let status = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {pid}");
        let deadline = Instant::now() + BOUND;
        while is_running(pid) {
            assert!(Instant::now() < deadline, "the kubelet did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(down_for);
        let (program, args) = self
            .info
            .kubelet_argv
            .split_first()
            .expect("a kubelet argv");
        let child = spawn_daemon(&self.info.dir, "kubelet", Path::new(program), args)
            .expect("the kubelet starts again");
        record_pid(&self.info.dir, "kubelet", child.id()).expect("pid recorded");
        // Not waited on: the node's stop (by pid) ends it; a zombie left by this test process
        // is reaped when it exits.
        std::mem::forget(child);
    }

    /// A second apiserver of this test's own on the node's etcd, on a free port (the kubelet
    /// stays on the node's first one). Stopped when dropped, or when the test process dies.
    ///
    /// # Panics
    /// When it does not become ready.
    pub fn private_apiserver(&self) -> PrivateApiserver {
        let [port] = free_ports::<1>().expect("a free port");
        let apiserver = PrivateApiserver {
            program: PathBuf::from(&self.info.dir).join("bin/kube-apiserver"),
            args: self
                .info
                .apiserver_args
                .iter()
                .cloned()
                .chain([format!("--secure-port={port}")])
                .collect(),
            log: self.files.path().join(format!("kube-apiserver-{port}.log")),
            pid_file: self.files.path().join(format!("kube-apiserver-{port}.pid")),
            url: format!("https://127.0.0.1:{port}"),
            kubeconfig: self.kubeconfig_for(&format!("https://127.0.0.1:{port}"), "default"),
            process: std::sync::Mutex::new(None),
        };
        apiserver.start();
        apiserver
    }
}

/// A namespace made for one test by [`NodeHandle::namespace`]; derefs to its name.
pub struct NodeNamespace {
    name: String,
    info: NodeInfo,
    _logs: LogGuard,
}

impl std::fmt::Debug for NodeNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl std::ops::Deref for NodeNamespace {
    type Target = str;

    fn deref(&self) -> &str {
        &self.name
    }
}

impl Drop for NodeNamespace {
    fn drop(&mut self) {
        // The namespace controller removes its pods (gracefully) after the test; nothing waits
        // for that. The delete runs on a thread of its own with a client of its own: the test's
        // client belongs to the test's runtime, whose only thread may be the one dropping this.
        let info = self.info.clone();
        let name = self.name.clone();
        let deleting = std::thread::spawn(move || {
            if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                runtime.block_on(async {
                    if let Ok(client) = info.admin_client().await {
                        let namespaces: Api<Namespace> = Api::all(client);
                        let _best_effort =
                            namespaces.delete(&name, &DeleteParams::background()).await;
                    }
                });
            }
        });
        let _joined = deleting.join();
    }
}

/// A second apiserver on the node's etcd (see [`NodeHandle::private_apiserver`]).
pub struct PrivateApiserver {
    program: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    pid_file: PathBuf,
    url: String,
    kubeconfig: PathBuf,
    process: std::sync::Mutex<Option<Supervised>>,
}

impl PrivateApiserver {
    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A kubeconfig for the admin on this apiserver (namespace `default` on its context).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Starts it (again, on the same port) and waits until `/readyz` answers `ok`.
    ///
    /// # Panics
    /// When it does not start or become ready.
    pub fn start(&self) {
        let process = Supervised::spawn(&self.program, &self.args, &self.log, &self.pid_file)
            .expect("the second apiserver starts");
        *self.process.lock().unwrap_or_else(|e| e.into_inner()) = Some(process);
        let yaml = std::fs::read_to_string(&self.kubeconfig).expect("kubeconfig");
        let ready = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a runtime");
                    runtime.block_on(async {
                        let client = client_for(&yaml).await.expect("a client");
                        let deadline = Instant::now() + BOUND;
                        while Instant::now() < deadline {
                            if let Ok(request) = http::Request::get("/readyz").body(Vec::new())
                                && client.request_text(request).await.is_ok_and(|t| t == "ok")
                            {
                                return true;
                            }
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        false
                    })
                })
                .join()
                .expect("the readiness thread")
        });
        assert!(
            ready,
            "the second apiserver was not ready: {}",
            crate::control_plane::log_tail(&self.log, 40)
        );
    }

    /// Stops it gracefully (SIGTERM) and waits until it is gone.
    pub fn stop(&self) {
        if let Some(process) = self
            .process
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            process.stop();
        }
    }

    /// Kills it (SIGKILL) and waits until it is gone.
    pub fn kill(&self) {
        if let Some(process) = self
            .process
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            process.kill();
        }
    }
}
