//! A real control plane on loopback: an upstream `etcd` and `kube-apiserver` started from
//! `KUBEBUILDER_ASSETS` on free ports, with generated certificates, two token identities (an
//! admin and an unprivileged user), RBAC authorization, per-identity kubeconfig files and
//! `kube::Client`s, per-test namespaces, failure logs, an apiserver restart on the same port and
//! etcd data, and etcd compaction.
//!
//! Start-up, measured on the 2-core development machine (kube-apiserver v1.20.2, etcd 3.4.23):
//! with every API group on, the apiserver spends 5–6.5 CPU-seconds (etcd about 0.5) before
//! `/readyz` answers `ok`, mostly building its API storage and OpenAPI spec; with the beta groups
//! off (the default here, see `apiserver_args`) 4–4.4. Wall time from [`ControlPlane::start`] to
//! ready was 7.3–11.6 s at load 8 (other helpers' builds running), 7.7 s with every group on at
//! load 5, so about 3 s on an idle machine. Dropping a control plane takes 0.1–0.2 s
//! (SIGKILL; a graceful apiserver stop takes 1.6 s). A test may afford a fresh one, but each is
//! seconds of CPU: prefer [`crate::shared`] and a namespace per test.
//!
//! Layer: test support, the imperative shell around two child processes. It decides nothing
//! about apiary, never talks to anything but loopback and never prints a token.

mod process;
mod wire;

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::certs::Certificates;
use crate::service_accounts::DefaultServiceAccounts;
use crate::skip::{self, Decision};
use process::{Janitor, Supervised};
use wire::TlsClient;

pub use process::is_running;

/// How many times a start is retried when another process took the free port we picked.
const PORT_ATTEMPTS: usize = 5;

/// How long etcd and the apiserver may take to become ready before start fails: a bound against
/// hangs, far above the measured start-up time, not a performance assertion.
const READY_BOUND: Duration = Duration::from_secs(90);

/// How many log lines of each process a failing test prints.
const LOG_TAIL_LINES: usize = 200;

/// Who a client, kubeconfig or token speaks as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Identity {
    /// User `apiary-admin` in group `system:masters`: allowed everything.
    Admin,
    /// User `apiary-user` with no groups beyond `system:authenticated`: RBAC denies it
    /// everything a binding does not grant, with real `403 Forbidden` answers.
    User,
}

impl Identity {
    /// The user name the apiserver authenticates this identity as (the subject to bind roles to).
    pub fn user_name(self) -> &'static str {
        match self {
            Self::Admin => "apiary-admin",
            Self::User => "apiary-user",
        }
    }
}

/// How to start a control plane. `Options::default()` is what [`crate::shared`] uses.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Run the apiserver with the `ServiceAccount` admission plugin on (it is disabled by
    /// default, as envtest does, because nothing creates `default` accounts). With it on, a pod
    /// create in a namespace without its service account is refused with `403 Forbidden`.
    pub service_account_admission: bool,
    /// Start the ServiceAccount-controller stand-in ([`DefaultServiceAccounts`]): each namespace
    /// gets its `default` account this long after it appears. `None` starts no stand-in.
    pub default_service_account_delay: Option<Duration>,
    /// Keep the apiserver's watch cache on. Off by default so that a watch from a
    /// resourceVersion older than the last [`ControlPlane::compact_etcd`] is answered by etcd
    /// itself with a real `410 Gone`; with the cache on, only the cache's window decides that
    /// (and a restarted apiserver's cache starts at the current revision). Other differences
    /// with the cache off: every watch and list goes to etcd (`resourceVersion=0` included), and
    /// watches carry no `BOOKMARK` events (the cache makes those). Turn it on for a test of
    /// bookmarks or of list-from-cache semantics.
    pub watch_cache: bool,
    /// Extra `kube-apiserver` flags, appended last.
    pub apiserver_args: Vec<String>,
}

impl Options {
    /// ServiceAccount admission on, with the stand-in creating `default` accounts after `delay`:
    /// the fresh-namespace race of deploy.md § Namespace ensure, item 4.
    pub fn with_service_accounts(delay: Duration) -> Self {
        Self {
            service_account_admission: true,
            default_service_account_delay: Some(delay),
            ..Self::default()
        }
    }
}

/// Why a control plane could not start (or restart).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `KUBEBUILDER_ASSETS` is unset or lacks a binary; the message says how to install them.
    #[error("{0}")]
    Assets(String),
    /// `rcgen` could not generate the certificates.
    #[error("cannot generate the control plane's certificates: {0}")]
    Certificates(#[from] rcgen::Error),
    /// A file or process operation failed.
    #[error("cannot {what}: {source}")]
    Io {
        /// What the fixture was doing.
        what: String,
        /// The underlying error.
        source: io::Error,
    },
    /// A binary exited before it was ready.
    #[error("{component} exited ({status}) before it was ready; the end of its log:\n{log}")]
    Exited {
        /// `etcd` or `kube-apiserver`.
        component: &'static str,
        /// Its exit status.
        status: String,
        /// The last lines of its log.
        log: String,
    },
    /// A binary did not become ready within the bound.
    #[error("{component} was not ready after {bound:?}; the end of its log:\n{log}")]
    NotReady {
        /// `etcd` or `kube-apiserver`.
        component: &'static str,
        /// The bound that passed.
        bound: Duration,
        /// The last lines of its log.
        log: String,
    },
    /// Every attempt found its port taken by another process.
    #[error("{component} found its port taken {PORT_ATTEMPTS} times in a row")]
    PortsTaken {
        /// `etcd` or `kube-apiserver`.
        component: &'static str,
    },
}

fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> StartError {
    let what = what.into();
    move |source| StartError::Io { what, source }
}

/// A running `etcd` + `kube-apiserver` pair. Dropping it stops both and deletes its directory;
/// if the test process dies first, the children stop on their own (see `process`).
pub struct ControlPlane {
    dir: PathBuf,
    assets: PathBuf,
    options: Options,
    certs: Certificates,
    ca_der: Vec<u8>,
    tls: TlsClient,
    admin_token: String,
    user_token: String,
    etcd_client: SocketAddr,
    etcd_peer: SocketAddr,
    apiserver_addr: SocketAddr,
    etcd: Mutex<Option<Supervised>>,
    apiserver: Mutex<Option<Supervised>>,
    service_accounts: Mutex<Option<DefaultServiceAccounts>>,
    janitor: Option<Janitor>,
    namespaces_made: AtomicU64,
    started_in: Duration,
}

impl fmt::Debug for ControlPlane {
    /// Shows addresses and paths, never a token.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControlPlane")
            .field("server_url", &self.server_url())
            .field("etcd_url", &self.etcd_url())
            .field("dir", &self.dir)
            .field("options", &self.options)
            .field("started_in", &self.started_in)
            .finish_non_exhaustive()
    }
}

impl ControlPlane {
    /// Starts a fresh control plane with the binaries named by `KUBEBUILDER_ASSETS`, and waits
    /// until `/readyz` answers `ok`. Blocking; call it from any thread, inside a Tokio runtime or
    /// not. Most tests want [`crate::shared`] (or [`crate::fresh`], which also skips) instead.
    ///
    /// # Errors
    /// [`StartError::Assets`] when the binaries are not there (whatever
    /// `APIARY_ENVTEST_REQUIRED` says: skipping is the caller's decision), and the other
    /// variants when generating, writing or starting fails.
    pub fn start(options: Options) -> Result<Self, StartError> {
        let assets = std::env::var_os(skip::ASSETS_VAR);
        match skip::decide(assets.as_deref(), Some(OsStr::new("1")), Path::is_file) {
            Decision::Run(assets) => Self::start_with_assets(&assets, options),
            Decision::Skip(message) | Decision::Fail(message) => Err(StartError::Assets(message)),
        }
    }

    /// Starts a fresh control plane with the binaries in `assets` (see [`Self::start`]).
    ///
    /// # Errors
    /// As for [`Self::start`].
    pub fn start_with_assets(assets: &Path, options: Options) -> Result<Self, StartError> {
        let began = Instant::now();
        let dir = tempfile::Builder::new()
            .prefix("apiary-envtest-")
            .tempdir()
            .map_err(io_error("create the control plane's temp dir"))?
            .keep();
        // Started first, so the directory goes even if the rest of start-up fails or the test
        // process dies.
        let janitor = Janitor::spawn(&dir).map_err(io_error("start the janitor"))?;
        let certs = Certificates::generate()?;
        let ca_der = certs.ca_der.clone();
        let tls = TlsClient::new(&ca_der).map_err(io_error("build the TLS client"))?;
        let mut plane = Self {
            dir,
            assets: assets.to_owned(),
            options,
            certs,
            ca_der,
            tls,
            admin_token: random_token(),
            user_token: random_token(),
            etcd_client: loopback(0),
            etcd_peer: loopback(0),
            apiserver_addr: loopback(0),
            etcd: Mutex::new(None),
            apiserver: Mutex::new(None),
            service_accounts: Mutex::new(None),
            janitor: Some(janitor),
            namespaces_made: AtomicU64::new(0),
            started_in: Duration::ZERO,
        };
        plane.write_files()?;
        plane.start_etcd_on_free_ports()?;
        plane.start_apiserver_on_a_free_port()?;
        if let Some(delay) = plane.options.default_service_account_delay {
            let stand_in = DefaultServiceAccounts::spawn(plane.config(Identity::Admin), delay)
                .map_err(io_error("start the service-account stand-in"))?;
            *lock(&plane.service_accounts) = Some(stand_in);
        }
        plane.started_in = began.elapsed();
        tracing::info!(
            server = %plane.server_url(),
            started_in = ?plane.started_in,
            "envtest control plane ready"
        );
        Ok(plane)
    }

    fn write_files(&self) -> Result<(), StartError> {
        let certs = &self.certs;
        let admin = Identity::Admin.user_name();
        let user = Identity::User.user_name();
        let tokens = format!(
            "{},{admin},{admin},\"system:masters\"\n{},{user},{user}\n",
            self.admin_token, self.user_token
        );
        for (name, content) in [
            ("ca.crt", certs.ca_pem.as_str()),
            ("apiserver.crt", certs.serving_cert_pem.as_str()),
            ("apiserver.key", certs.serving_key_pem.as_str()),
            (
                "service-account.pub",
                certs.service_account_public_pem.as_str(),
            ),
            (
                "service-account.key",
                certs.service_account_private_pem.as_str(),
            ),
            ("tokens.csv", tokens.as_str()),
        ] {
            std::fs::write(self.dir.join(name), content)
                .map_err(io_error(format!("write {name}")))?;
        }
        Ok(())
    }

    fn start_etcd_on_free_ports(&mut self) -> Result<(), StartError> {
        for _ in 0..PORT_ATTEMPTS {
            let [client, peer] = free_ports::<2>().map_err(io_error("find free ports"))?;
            self.etcd_client = loopback(client);
            self.etcd_peer = loopback(peer);
            match self.launch_etcd() {
                Err(StartError::Exited { log, .. }) if port_taken(&log) => continue,
                other => return other,
            }
        }
        Err(StartError::PortsTaken { component: "etcd" })
    }

    fn launch_etcd(&self) -> Result<(), StartError> {
        let client = format!("http://{}", self.etcd_client);
        let args = vec![
            format!("--data-dir={}", self.dir.join("etcd-data").display()),
            format!("--listen-client-urls={client}"),
            format!("--advertise-client-urls={client}"),
            format!("--listen-peer-urls=http://{}", self.etcd_peer),
            format!("--initial-advertise-peer-urls=http://{}", self.etcd_peer),
            format!("--initial-cluster=default=http://{}", self.etcd_peer),
            "--logger=zap".to_owned(),
            "--log-outputs=stderr".to_owned(),
            "--log-level=warn".to_owned(),
        ];
        let mut etcd = Supervised::spawn(
            &self.assets.join("etcd"),
            &args,
            &self.log_path("etcd"),
            &self.dir.join("etcd.pid"),
        )
        .map_err(io_error("start etcd"))?;
        let addr = self.etcd_client;
        let ready = wait_ready(&mut etcd, "etcd", &self.log_path("etcd"), || {
            wire::http(addr, "GET", "/health", None)
                .is_ok_and(|response| response.status == 200 && response.body.contains("true"))
        });
        match ready {
            Ok(()) => {
                *lock(&self.etcd) = Some(etcd);
                Ok(())
            }
            Err(error) => {
                etcd.stop();
                Err(error)
            }
        }
    }

    fn start_apiserver_on_a_free_port(&mut self) -> Result<(), StartError> {
        for _ in 0..PORT_ATTEMPTS {
            let [port] = free_ports::<1>().map_err(io_error("find a free port"))?;
            self.apiserver_addr = loopback(port);
            match self.start_apiserver() {
                Err(StartError::Exited { log, .. }) if port_taken(&log) => continue,
                other => return other,
            }
        }
        Err(StartError::PortsTaken {
            component: "kube-apiserver",
        })
    }

    fn apiserver_args(&self) -> Vec<String> {
        let file = |name: &str| self.dir.join(name).display().to_string();
        let mut args = vec![
            format!("--etcd-servers=http://{}", self.etcd_client),
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            format!("--secure-port={}", self.apiserver_addr.port()),
            format!("--cert-dir={}", file("apiserver-certs")),
            format!("--tls-cert-file={}", file("apiserver.crt")),
            format!("--tls-private-key-file={}", file("apiserver.key")),
            format!("--service-account-key-file={}", file("service-account.pub")),
            format!(
                "--service-account-signing-key-file={}",
                file("service-account.key")
            ),
            "--service-account-issuer=https://kubernetes.default.svc".to_owned(),
            "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
            format!("--token-auth-file={}", file("tokens.csv")),
            "--authorization-mode=RBAC".to_owned(),
            "--endpoint-reconciler-type=none".to_owned(),
            "--allow-privileged=true".to_owned(),
            "--profiling=false".to_owned(),
            // A third less start-up CPU (4–4.4 instead of 5.5–6.5 CPU-seconds on v1.20): no beta
            // API groups (apiary uses only GA core/v1 and RBAC), and so no priority-and-fairness
            // (whose configuration API is beta on 1.20). Append `--runtime-config=api/beta=true`
            // and `--enable-priority-and-fairness=true` to `Options::apiserver_args` to get both.
            "--runtime-config=api/beta=false".to_owned(),
            "--enable-priority-and-fairness=false".to_owned(),
            format!("--watch-cache={}", self.options.watch_cache),
        ];
        if !self.options.service_account_admission {
            args.push("--disable-admission-plugins=ServiceAccount".to_owned());
        }
        args.extend(self.options.apiserver_args.iter().cloned());
        args
    }

    /// Starts the apiserver again after [`Self::stop_apiserver`], on the same port and against
    /// the same etcd (so every object and resourceVersion survives), and waits for `/readyz`.
    /// Does nothing when it is running.
    ///
    /// # Errors
    /// As for [`Self::start`]; in particular [`StartError::Exited`] if another process took the
    /// port in the meantime.
    pub fn start_apiserver(&self) -> Result<(), StartError> {
        let mut slot = lock(&self.apiserver);
        if slot.is_some() {
            return Ok(());
        }
        let log = self.log_path("kube-apiserver");
        let mut apiserver = Supervised::spawn(
            &self.assets.join("kube-apiserver"),
            &self.apiserver_args(),
            &log,
            &self.dir.join("kube-apiserver.pid"),
        )
        .map_err(io_error("start kube-apiserver"))?;
        match wait_ready(&mut apiserver, "kube-apiserver", &log, || self.is_ready()) {
            Ok(()) => {
                *slot = Some(apiserver);
                Ok(())
            }
            Err(error) => {
                apiserver.stop();
                Err(error)
            }
        }
    }

    /// Stops the apiserver (SIGTERM, SIGKILL after 5 s) and waits until it is gone; etcd keeps
    /// running. Requests fail with connection refused until [`Self::start_apiserver`]. Use it on
    /// a [`crate::fresh`] control plane: the shared one serves other tests at the same time.
    pub fn stop_apiserver(&self) {
        if let Some(apiserver) = lock(&self.apiserver).take() {
            apiserver.stop();
        }
    }

    /// Kills the apiserver with SIGKILL (no graceful shutdown: open connections are reset, as
    /// in a crash) and waits until it is gone; etcd keeps running. [`Self::start_apiserver`]
    /// brings it back on the same port and data.
    pub fn kill_apiserver(&self) {
        if let Some(apiserver) = lock(&self.apiserver).take() {
            apiserver.kill();
        }
    }

    /// Whether `/readyz` answers `ok` to the admin right now.
    pub fn is_ready(&self) -> bool {
        self.tls
            .send(
                self.apiserver_addr,
                &self.admin_token,
                "GET",
                "/readyz",
                None,
            )
            .is_ok_and(|response| response.status == 200 && response.body.trim() == "ok")
    }

    /// Compacts etcd at its current revision (through its v3 JSON gateway) and returns that
    /// revision. Afterwards a watch or a paginated list `continue` from any older
    /// resourceVersion is answered with a real `410 Gone` (with the watch cache off, the default;
    /// see [`Options::watch_cache`]). Compaction is global: on the shared plane it also expires
    /// every other test's older resourceVersions, so a test there may assert that its own old
    /// resourceVersion expired, never that a recent one is still valid.
    ///
    /// # Errors
    /// Fails if etcd does not answer or answers something unexpected.
    pub fn compact_etcd(&self) -> io::Result<i64> {
        // Any key will do: the answer's header carries the store's current revision.
        let range = wire::http(
            self.etcd_client,
            "POST",
            "/v3/kv/range",
            Some(r#"{"key":"AA==","count_only":true}"#),
        )?;
        let revision = serde_json::from_str::<serde_json::Value>(&range.body)
            .ok()
            .and_then(|body| {
                let revision = &body["header"]["revision"];
                // The gateway renders int64 as a JSON string.
                revision
                    .as_str()
                    .and_then(|text| text.parse().ok())
                    .or_else(|| revision.as_i64())
            })
            .ok_or_else(|| {
                io::Error::other(format!(
                    "etcd range answered {} without a revision: {}",
                    range.status, range.body
                ))
            })?;
        let compaction = wire::http(
            self.etcd_client,
            "POST",
            "/v3/kv/compaction",
            Some(&format!(r#"{{"revision":"{revision}","physical":true}}"#)),
        )?;
        if compaction.status != 200 {
            return Err(io::Error::other(format!(
                "etcd compaction at revision {revision} answered {}: {}",
                compaction.status, compaction.body
            )));
        }
        Ok(revision)
    }

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
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        drop(lock(&self.service_accounts).take());
        // SIGKILL: everything is thrown away, so a graceful shutdown (1.6 s for the apiserver)
        // would only slow the test down.
        self.kill_apiserver();
        if let Some(etcd) = lock(&self.etcd).take() {
            etcd.kill();
        }
        // Last: the janitor deletes the directory once its lifeline closes.
        drop(self.janitor.take());
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

/// Prints the end of the control plane's logs when dropped during a panic (see
/// [`ControlPlane::log_guard`]).
#[derive(Debug)]
pub struct LogGuard {
    logs: Vec<(&'static str, PathBuf)>,
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for (component, path) in &self.logs {
            // eprintln!, not io::stderr(): the test harness shows it with the failing test.
            eprintln!(
                "----- last {LOG_TAIL_LINES} lines of {component} ({}) -----\n{}",
                path.display(),
                log_tail(path, LOG_TAIL_LINES)
            );
        }
    }
}

/// The last `lines` lines of a log file, or why it cannot be read.
fn log_tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(error) => format!("(cannot read {}: {error})", path.display()),
    }
}

/// Polls `ready` until it holds, the process exits, or [`READY_BOUND`] passes.
fn wait_ready(
    process: &mut Supervised,
    component: &'static str,
    log: &Path,
    mut ready: impl FnMut() -> bool,
) -> Result<(), StartError> {
    let began = Instant::now();
    loop {
        if ready() {
            return Ok(());
        }
        if let Some(status) = process
            .exited()
            .map_err(io_error(format!("check on {component}")))?
        {
            return Err(StartError::Exited {
                component,
                status: status.to_string(),
                log: log_tail(log, 40),
            });
        }
        if began.elapsed() > READY_BOUND {
            return Err(StartError::NotReady {
                component,
                bound: READY_BOUND,
                log: log_tail(log, 40),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn port_taken(log: &str) -> bool {
    log.contains("address already in use")
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// `N` distinct ports the kernel considers free right now (all bound at once, then released).
/// Another process may take one before the binary binds it; start-up retries then.
fn free_ports<const N: usize>() -> io::Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind(loopback(0)))
        .collect::<io::Result<Vec<_>>>()?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener.local_addr()?.port();
    }
    Ok(ports)
}

/// 32 hex digits from the standard library's per-process random hash keys: unguessable enough
/// for a loopback test token, without a random-number dependency.
fn random_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let half = || {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(Instant::now().elapsed().as_nanos());
        hasher.finish()
    };
    format!("{:016x}{:016x}", half(), half())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep going.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
