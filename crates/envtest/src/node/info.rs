//! What a running node tells its tests: addresses, the CA, the test images and their digests,
//! the kubelet's command line (to restart it) and the apiserver's flags (to start a second one
//! on the same etcd). Written by the process that started the node to `run/node.json`, read by
//! every test process through `APIARY_NODE`.
//!
//! Layer: test support, plain values plus their file and client plumbing. The admin token is
//! read from its file when a client or kubeconfig is made, never stored here or printed.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The test images pushed to the node's registries (same digests on every machine).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Images {
    /// `127.0.0.1:5000/agent@sha256:…`: busybox, entrypoint `/bin/sh`.
    pub agent: String,
    /// The same digest on the registry behind htpasswd (`127.0.0.1:5001`): a pull without
    /// credentials is refused with `401`.
    pub auth: String,
    /// A digest of zeros in the open registry: the manifest does not exist.
    pub missing: String,
    /// An index holding only a `linux/arm64` image.
    pub arm64: String,
    /// The agent image under another repository of the registry behind htpasswd
    /// (`127.0.0.1:5001/private@…`), pushed for the pull-secret tests only: no other test pulls
    /// it, so the node never has it cached when a test expects the `401`.
    #[serde(default)]
    pub private: String,
}

impl Images {
    /// Reads the recipe's `images.env`.
    ///
    /// # Errors
    /// When the file cannot be read or lacks one of the four references.
    pub fn read(file: &Path) -> io::Result<Self> {
        let text = fs::read_to_string(file)?;
        let value = |key: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
                .map(str::to_owned)
                .ok_or_else(|| io::Error::other(format!("{} has no {key}", file.display())))
        };
        Ok(Self {
            agent: value("AGENT_REF")?,
            auth: value("AUTH_REF")?,
            missing: value("MISSING_REF")?,
            arm64: value("ARM64_REF")?,
            private: String::new(),
        })
    }
}

/// A running node, as its tests see it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeInfo {
    /// The node's directory (the recipe's `RN`).
    pub dir: PathBuf,
    /// The recipe's directory (`shared/node`).
    pub recipe: PathBuf,
    /// `https://127.0.0.1:<port>` of the apiserver the kubelet talks to.
    pub server_url: String,
    /// `http://127.0.0.1:<port>` of etcd.
    pub etcd_url: String,
    /// The CA certificate every serving certificate of the node is signed by.
    pub ca_path: PathBuf,
    /// The apiserver's flags without `--secure-port`.
    pub apiserver_args: Vec<String>,
    /// The kubelet's program and flags.
    pub kubelet_argv: Vec<String>,
    /// The pushed test images.
    pub images: Images,
    /// How long the start took, in milliseconds.
    pub started_in_ms: u128,
}

impl NodeInfo {
    /// An info with only its directories, filled in while the node starts.
    pub(super) fn placeholder(dir: PathBuf, recipe: PathBuf) -> Self {
        Self {
            dir,
            recipe,
            server_url: String::new(),
            etcd_url: String::new(),
            ca_path: PathBuf::new(),
            apiserver_args: Vec::new(),
            kubelet_argv: Vec::new(),
            images: Images::default(),
            started_in_ms: 0,
        }
    }

    /// The file this info is written to.
    pub fn file(dir: &Path) -> PathBuf {
        dir.join("run/node.json")
    }

    pub(super) fn write(&self) -> io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(io::Error::other)?;
        fs::write(Self::file(&self.dir), text)
    }

    /// Reads the info of the node in `dir`.
    ///
    /// # Errors
    /// When the file is missing or not an info.
    pub fn read(dir: &Path) -> io::Result<Self> {
        let text = fs::read_to_string(Self::file(dir))?;
        serde_json::from_str(&text).map_err(io::Error::other)
    }

    /// The registry behind htpasswd: its host and port, and the user and password that may
    /// pull from it (for a `kubernetes.io/dockerconfigjson` Secret). Test credentials of a
    /// loopback registry, never printed by the fixture.
    ///
    /// # Panics
    /// When the password file cannot be read (the node is gone).
    pub fn private_registry(&self) -> (String, String, String) {
        let password = fs::read_to_string(self.dir.join("registry/auth/password"))
            .expect("the registry's password file is readable");
        (
            "127.0.0.1:5001".to_owned(),
            "pusher".to_owned(),
            password.trim().to_owned(),
        )
    }

    /// The log file of one component (`kubelet`, `containerd`, `kube-apiserver`, …).
    pub fn log_path(&self, component: &str) -> PathBuf {
        self.dir.join("run/logs").join(format!("{component}.log"))
    }

    /// The admin's bearer token (group `system:masters`), read from its file.
    ///
    /// # Panics
    /// When the file cannot be read (the node is gone).
    pub fn admin_token(&self) -> String {
        fs::read_to_string(self.dir.join("certs/admin.token"))
            .expect("the node's admin token is readable")
            .trim()
            .to_owned()
    }

    /// A kubeconfig for `token` on this node's apiserver with `namespace` on its context.
    pub fn kubeconfig_yaml(&self, token: &str, namespace: &str) -> String {
        kubeconfig_yaml(&self.server_url, &self.ca_path, token, namespace)
    }

    /// The admin's client on this node's apiserver.
    ///
    /// # Errors
    /// When the kubeconfig cannot be turned into a client (the message says why).
    pub async fn admin_client(&self) -> Result<kube::Client, String> {
        client_for(&self.kubeconfig_yaml(&self.admin_token(), "default")).await
    }
}

/// A kubeconfig named `node` for `token` on `server` trusting `ca`, context namespace `namespace`.
pub(super) fn kubeconfig_yaml(server: &str, ca: &Path, token: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: node\n  cluster:\n    server: {server}\n    \
         certificate-authority: {}\nusers:\n- name: admin\n  user:\n    token: {token}\n\
         contexts:\n- name: admin@node\n  context: {{cluster: node, user: admin, namespace: {namespace}}}\n\
         current-context: admin@node\n",
        ca.display()
    )
}

/// A client from kubeconfig text.
pub(super) async fn client_for(yaml: &str) -> Result<kube::Client, String> {
    // The one crypto provider in the tree; installing it is a no-op after the first time.
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(yaml).map_err(|e| e.to_string())?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .map_err(|e| e.to_string())?;
    kube::Client::try_from(config).map_err(|e| e.to_string())
}
