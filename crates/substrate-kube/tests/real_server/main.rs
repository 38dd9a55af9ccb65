//! The real-server tier of the crate (README.md § Testing): the real driver and the real
//! `Cluster` against an upstream `kube-apiserver` + etcd with the fake kubelet (`apiary-envtest`),
//! most scenarios also run against the loopback simulator through the shared `real_support`
//! harness. One test binary, one module per suite; its name starts with `real_` so the nextest
//! filters that single out the tier (`binary(/^real_/)`, in `.config/nextest.toml` and the
//! xtask) still select it. The real-node tier keeps its own binary, `real_node`.
//!
//! Layer: integration tests over loopback. The real runs skip (one stderr line) without
//! `KUBEBUILDER_ASSETS` and fail with `APIARY_ENVTEST_REQUIRED=1`.

// Shared with the seeds tier's `real_seeds` binary, hence outside this directory; its
// `on_both_backends!` is used by the modules below.
// The fixtures of the harness, declared once here.
#[path = "../fixtures/mod.rs"]
mod fixtures;
#[macro_use]
#[path = "../real_support/mod.rs"]
mod real_support;

/// The tests of one backend of a scenario-table row: this binary runs the real apiserver; the
/// fake and the simulator are the `cluster` binary's.
macro_rules! backend_test {
    (real, $row:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn real() {
            let backend = crate::scenarios::world::Backend::Real;
            crate::scenarios::run(super::$row(), backend).await;
        }
    };
    ($backend:ident, $row:ident) => {};
}

// The scenario table (real).
#[path = "../scenarios/mod.rs"]
mod scenarios;

mod cluster;
mod faults;
mod gc_all;
mod list;
mod logs;
mod namespace;
mod rbac;
mod replace;
mod stuck;
