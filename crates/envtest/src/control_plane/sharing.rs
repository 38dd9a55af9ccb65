//! One control plane for many test processes. nextest runs each test in a process of its own, so
//! [`crate::private`] starts one control plane per test (4 CPU-seconds each). A wrapper (the
//! `apiary_node` example, around the whole suite) starts one with [`ControlPlane::start_shared`]
//! and names its directory in [`PLANE_VAR`]; [`crate::shared`] then attaches to it
//! ([`ControlPlane::attach`]) and each test works in a namespace of its own.
//!
//! The shared plane knows [`SHARED_USERS`] unprivileged users, one per process (`users`).
//!
//! Layer: test support. Reads and writes files of the plane's directory; never prints a token.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use super::lifecycle::{ControlPlane, random_token};
use super::options::{Options, StartError, io_error};
use super::users::{PLANE_VAR, SHARED_USERS, process_user};
use super::wire::TlsClient;
use crate::certs::Certificates;

/// The description a shared plane writes for the processes that attach to it.
const DESCRIPTION: &str = "shared.json";

/// What [`ControlPlane::attach`] reads: addresses and tokens (the certificates are files of the
/// directory already).
#[derive(serde::Serialize, serde::Deserialize)]
struct Description {
    apiserver: SocketAddr,
    etcd_client: SocketAddr,
    etcd_peer: SocketAddr,
    admin_token: String,
    user_tokens: Vec<String>,
    started_in_ms: u64,
}

impl ControlPlane {
    /// Starts a control plane with [`Options::default`] for the test processes to share: it
    /// knows 1,024 unprivileged users (`apiary-user-<i>`) and describes itself in its directory,
    /// which the caller names in [`PLANE_VAR`] to the processes. Dropped, it stops.
    ///
    /// # Errors
    /// As for [`ControlPlane::start_with_assets`].
    pub fn start_shared(assets: &Path) -> Result<Self, StartError> {
        let tokens: Vec<String> = (0..SHARED_USERS).map(|_| random_token()).collect();
        let plane = Self::start_knowing(assets, Options::default(), tokens.clone())?;
        std::fs::create_dir_all(plane.dir.join("users"))
            .map_err(io_error("create the users directory"))?;
        std::fs::write(plane.dir.join("ca.der"), &plane.ca_der)
            .map_err(io_error("write ca.der"))?;
        let description = Description {
            apiserver: plane.apiserver_addr,
            etcd_client: plane.etcd_client,
            etcd_peer: plane.etcd_peer,
            admin_token: plane.admin_token.clone(),
            user_tokens: tokens,
            started_in_ms: u64::try_from(plane.started_in.as_millis()).unwrap_or(u64::MAX),
        };
        let text = serde_json::to_string(&description)
            .map_err(|e| io_error("describe the plane")(std::io::Error::other(e)))?;
        std::fs::write(plane.dir.join(DESCRIPTION), text)
            .map_err(io_error(format!("write {DESCRIPTION}")))?;
        Ok(plane)
    }

    /// The plane [`Self::start_shared`] described in `dir`, as this process's: its unprivileged
    /// user is the one this process claimed ([`Identity::user_name`](super::Identity::user_name)).
    /// It owns no process: dropping it stops nothing, and stopping or restarting its apiserver is
    /// for a plane of a test's own ([`crate::fresh`]).
    ///
    /// # Errors
    /// When the description or a certificate cannot be read, or no user is left to claim.
    pub fn attach(dir: &Path) -> Result<Self, StartError> {
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name)).map_err(io_error(format!("read {name}")))
        };
        let description: Description = serde_json::from_str(&read(DESCRIPTION)?)
            .map_err(|e| io_error("parse the plane's description")(std::io::Error::other(e)))?;
        let index = process_user().index.ok_or_else(|| {
            io_error("attach")(std::io::Error::other(format!("{PLANE_VAR} is not set")))
        })?;
        let user_token =
            description.user_tokens.get(index).cloned().ok_or_else(|| {
                io_error("find the claimed user")(std::io::Error::other("no token"))
            })?;
        let ca_der = std::fs::read(dir.join("ca.der")).map_err(io_error("read ca.der"))?;
        let certs = Certificates {
            ca_pem: read("ca.crt")?,
            ca_der: ca_der.clone(),
            serving_cert_pem: read("apiserver.crt")?,
            serving_key_pem: read("apiserver.key")?,
            service_account_public_pem: read("service-account.pub")?,
            service_account_private_pem: read("service-account.key")?,
        };
        let tls = TlsClient::new(&ca_der).map_err(io_error("build the TLS client"))?;
        Ok(Self {
            dir: dir.to_owned(),
            assets: std::path::PathBuf::new(),
            options: Options::default(),
            certs,
            ca_der,
            tls,
            admin_token: description.admin_token,
            user_token,
            etcd_client: description.etcd_client,
            etcd_peer: description.etcd_peer,
            apiserver_addr: description.apiserver,
            etcd: Mutex::new(None),
            apiserver: Mutex::new(None),
            service_accounts: Mutex::new(None),
            janitor: None,
            namespaces_made: AtomicU64::new(0),
            started_in: Duration::from_millis(description.started_in_ms),
            shared_users: Vec::new(),
        })
    }
}
