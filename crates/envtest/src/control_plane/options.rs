//! How a control plane is started and why it may fail to start: the identities it knows, the
//! start options, and the start error with its one constructor for I/O failures.
//!
//! Layer: test support, plain values. Starts nothing and never holds a token.

use std::io;
use std::time::Duration;

/// How many times a start is retried when another process took the free port we picked.
pub(super) const PORT_ATTEMPTS: usize = 5;

/// Who a client, kubeconfig or token speaks as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Identity {
    /// User `apiary-admin` in group `system:masters`: allowed everything.
    Admin,
    /// User `apiary-user` (on a plane shared between processes, `apiary-user-<i>`, a user of
    /// this process alone) with no groups beyond `system:authenticated`: RBAC denies it
    /// everything a binding does not grant, with real `403 Forbidden` answers.
    User,
}

impl Identity {
    /// The user name the apiserver authenticates this identity as (the subject to bind roles to).
    /// The unprivileged user's name is this process's: tests bind roles to it cluster-wide, so
    /// processes sharing a control plane must not share it (`users::process_user`).
    pub fn user_name(self) -> &'static str {
        match self {
            Self::Admin => "apiary-admin",
            Self::User => super::users::process_user().name.as_str(),
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
    /// Start the ServiceAccount-controller stand-in ([`DefaultServiceAccounts`](crate::DefaultServiceAccounts)): each namespace
    /// gets its `default` account this long after it appears. `None` starts no stand-in.
    pub default_service_account_delay: Option<Duration>,
    /// Keep the apiserver's watch cache on. Off by default so that a watch from a
    /// resourceVersion older than the last [`ControlPlane::compact_etcd`](crate::ControlPlane::compact_etcd) is answered by etcd
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

pub(super) fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> StartError {
    let what = what.into();
    move |source| StartError::Io { what, source }
}
