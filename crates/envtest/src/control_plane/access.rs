//! How a test reaches a running control plane: its addresses, CA and tokens, kubeconfigs,
//! `kube::Config`s and clients per identity, per-test namespaces, and the guard that prints the
//! processes' logs when a test fails.
//!
//! Layer: test support. Starts and stops nothing (that is the parent module); talks to loopback
//! only and never prints a token.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::lifecycle::{ControlPlane, lock, random_token};
use super::logs::LogGuard;
use super::options::Identity;
use super::process::Supervised;

impl ControlPlane {
    /// The apiserver's URL, `https://127.0.0.1:<port>` (stable across restarts).
    pub fn server_url(&self) -> String {
        format!("https://{}", self.apiserver_addr)
    }

    /// The apiserver's socket address.
    pub fn server_addr(&self) -> SocketAddr {
        self.apiserver_addr
    }

    /// The PEM of the CA that signed the apiserver's serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.certs.ca_pem
    }

    /// The same CA certificate in DER (what `kube::Config::root_cert` holds).
    pub fn ca_der(&self) -> &[u8] {
        &self.ca_der
    }

    /// The bearer token of an identity (for a proxy that forwards as that identity). Never print
    /// it.
    pub fn token(&self, identity: Identity) -> &str {
        match identity {
            Identity::Admin => &self.admin_token,
            Identity::User => &self.user_token,
        }
    }

    /// etcd's client URL, `http://127.0.0.1:<port>`.
    pub fn etcd_url(&self) -> String {
        format!("http://{}", self.etcd_client)
    }

    /// The apiserver's process id while it runs.
    pub fn apiserver_pid(&self) -> Option<u32> {
        lock(&self.apiserver).as_ref().and_then(Supervised::pid)
    }

    /// etcd's process id while it runs.
    pub fn etcd_pid(&self) -> Option<u32> {
        lock(&self.etcd).as_ref().and_then(Supervised::pid)
    }

    /// How long [`Self::start`] took until the apiserver was ready.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The control plane's private directory (certificates, logs, etcd data, kubeconfigs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log file of `etcd` or `kube-apiserver` (stdout and stderr together).
    pub fn log_path(&self, component: &str) -> PathBuf {
        self.dir.join(format!("{component}.log"))
    }

    /// A kubeconfig for `identity` whose context's namespace is `namespace`: the server URL,
    /// the CA embedded as `certificate-authority-data`, and the token.
    pub fn kubeconfig_yaml(&self, identity: Identity, namespace: &str) -> String {
        let user = identity.user_name();
        let context = format!("{user}@envtest");
        // k8s-openapi's ByteString serializes as base64, exactly as `*-data` fields want.
        let ca = k8s_openapi::ByteString(self.certs.ca_pem.clone().into_bytes());
        let config = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{
                "name": "envtest",
                "cluster": { "server": self.server_url(), "certificate-authority-data": ca },
            }],
            "users": [{ "name": user, "user": { "token": self.token(identity) } }],
            "contexts": [{
                "name": context,
                "context": { "cluster": "envtest", "user": user, "namespace": namespace },
            }],
            "current-context": context,
        });
        serde_yaml::to_string(&config).expect("a JSON value always renders as YAML")
    }

    /// Writes [`Self::kubeconfig_yaml`] to a file in the control plane's directory and returns
    /// its path, for `apiary --kubeconfig` and `kubectl --kubeconfig`.
    ///
    /// # Panics
    /// If the file cannot be written.
    pub fn kubeconfig(&self, identity: Identity, namespace: &str) -> PathBuf {
        let path = self.dir.join(format!(
            "kubeconfig-{}-{namespace}.yaml",
            identity.user_name()
        ));
        std::fs::write(&path, self.kubeconfig_yaml(identity, namespace))
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", path.display()));
        path
    }

    /// A `kube::Config` for `identity` (default namespace `default`), to adjust before building a
    /// client (for example `default_retry = false`).
    pub fn config(&self, identity: Identity) -> kube::Config {
        let mut config = kube::Config::new(
            self.server_url()
                .parse()
                .expect("a loopback https URL is a valid URI"),
        );
        config.root_cert = Some(vec![self.ca_der.clone()]);
        // `AuthInfo.token` is a `secrecy::SecretString`; deserializing keeps it out of Debug
        // without a direct dependency on secrecy.
        config.auth_info = serde_json::from_value(serde_json::json!({
            "token": self.token(identity)
        }))
        .expect("a token-only AuthInfo deserializes");
        config
    }

    /// A `kube::Client` for `identity`. Call it inside the test's Tokio runtime, and let the client
    /// go before the runtime does (that is why the fixture stores none).
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub fn client(&self, identity: Identity) -> kube::Client {
        // The one crypto provider in the tree; installing it is a no-op after the first time.
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        kube::Client::try_from(self.config(identity))
            .expect("a kube::Client builds from the fixture's config")
    }

    /// Creates a uniquely named namespace (`<prefix>-<n>-<random>`) as the admin and returns it
    /// with a [`LogGuard`]: if the test panics while the namespace value is alive, the end of
    /// both processes' logs is printed. The namespace is left in place (nothing deletes a
    /// namespace's contents on this control plane, so deleting it would only mark it).
    ///
    /// # Panics
    /// If the apiserver refuses or cannot be reached.
    pub fn namespace(&self, prefix: &str) -> TestNamespace {
        let n = self.namespaces_made.fetch_add(1, Ordering::Relaxed);
        let suffix = &random_token()[..6];
        let prefix: String = prefix.chars().take(40).collect();
        let name = format!("{prefix}-{n}-{suffix}");
        let body = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": { "name": name },
        })
        .to_string();
        let response = self
            .tls
            .send(
                self.apiserver_addr,
                &self.admin_token,
                "POST",
                "/api/v1/namespaces",
                Some(&body),
            )
            .unwrap_or_else(|error| panic!("cannot create namespace {name}: {error}"));
        assert_eq!(
            response.status, 201,
            "creating namespace {name} answered {}: {}",
            response.status, response.body
        );
        TestNamespace {
            name,
            _logs: self.log_guard(),
        }
    }

    /// A guard that prints the last 200 lines of the etcd and apiserver logs to stderr if it is
    /// dropped while the thread panics (a failing test).
    pub fn log_guard(&self) -> LogGuard {
        LogGuard {
            logs: ["etcd", "kube-apiserver"]
                .into_iter()
                .map(|component| (component, self.log_path(component)))
                .collect(),
            lines: super::logs::LOG_TAIL_LINES,
        }
    }
}

/// A namespace made for one test by [`ControlPlane::namespace`]; derefs to its name.
#[derive(Debug)]
pub struct TestNamespace {
    name: String,
    _logs: LogGuard,
}

impl TestNamespace {
    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::ops::Deref for TestNamespace {
    type Target = str;

    fn deref(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for TestNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}
