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

mod access;
mod lifecycle;
mod logs;
mod options;
mod process;
mod sharing;
mod users;
mod wire;

pub use access::TestNamespace;
pub use lifecycle::ControlPlane;
pub(crate) use lifecycle::free_ports;
pub use logs::LogGuard;
pub(crate) use logs::log_tail;
pub use options::{Identity, Options, StartError};
pub(crate) use process::Supervised;
pub use process::is_running;
pub use users::PLANE_VAR;
pub(crate) use users::plane_dir;

#[cfg(test)]
mod tests;
