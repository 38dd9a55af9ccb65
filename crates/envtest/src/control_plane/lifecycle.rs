//! Starting, stopping and restarting the control plane's two processes: certificates and files
//! written, etcd and the apiserver started on free loopback ports (retried when a port is taken),
//! waited on until ready, killed on drop; etcd compaction.
//!
//! Layer: test support, the imperative shell around two child processes. Never prints a token.

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use super::logs::log_tail;
use super::options::{Identity, Options, PORT_ATTEMPTS, StartError, io_error};
use super::process::{Janitor, Supervised};
use super::wire::{self, TlsClient};
use crate::certs::Certificates;
use crate::service_accounts::DefaultServiceAccounts;
use crate::skip::{self, Decision};

/// How long etcd and the apiserver may take to become ready before start fails: a bound against
/// hangs, far above the measured start-up time, not a performance assertion.
const READY_BOUND: Duration = Duration::from_secs(90);

/// A running `etcd` + `kube-apiserver` pair. Dropping it stops both and deletes its directory;
/// if the test process dies first, the children stop on their own (see `process`).
pub struct ControlPlane {
    pub(super) dir: PathBuf,
    pub(super) assets: PathBuf,
    pub(super) options: Options,
    pub(super) certs: Certificates,
    pub(super) ca_der: Vec<u8>,
    pub(super) tls: TlsClient,
    pub(super) admin_token: String,
    pub(super) user_token: String,
    pub(super) etcd_client: SocketAddr,
    pub(super) etcd_peer: SocketAddr,
    pub(super) apiserver_addr: SocketAddr,
    pub(super) etcd: Mutex<Option<Supervised>>,
    pub(super) apiserver: Mutex<Option<Supervised>>,
    pub(super) service_accounts: Mutex<Option<DefaultServiceAccounts>>,
    pub(super) janitor: Option<Janitor>,
    pub(super) namespaces_made: AtomicU64,
    pub(super) started_in: Duration,
    /// The tokens of the users `apiary-user-<i>` of a plane shared between processes
    /// (`sharing`), one per process; empty otherwise.
    pub(super) shared_users: Vec<String>,
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
        Self::start_knowing(assets, options, Vec::new())
    }

    /// [`Self::start_with_assets`], with the users of `shared_users` (tokens) known too.
    pub(super) fn start_knowing(
        assets: &Path,
        options: Options,
        shared_users: Vec<String>,
    ) -> Result<Self, StartError> {
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
            shared_users,
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
        let mut tokens = format!(
            "{},{admin},{admin},\"system:masters\"\n{},{user},{user}\n",
            self.admin_token, self.user_token
        );
        for (index, token) in self.shared_users.iter().enumerate() {
            let name = super::users::shared_user_name(index);
            tokens.push_str(&format!("{token},{name},{name}\n"));
        }
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

pub(super) fn port_taken(log: &str) -> bool {
    log.contains("address already in use")
}

pub(super) fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// `N` distinct ports the kernel considers free right now (all bound at once, then released).
/// Another process may take one before the binary binds it; start-up retries then.
pub(crate) fn free_ports<const N: usize>() -> io::Result<[u16; N]> {
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
pub(super) fn random_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let half = || {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(Instant::now().elapsed().as_nanos());
        hasher.finish()
    };
    format!("{:016x}{:016x}", half(), half())
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep going.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
