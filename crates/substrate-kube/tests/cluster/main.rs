//! The in-process integration tests of the crate: apiary's real `Cluster` (a real `kube::Client`)
//! driven over a scripted mock service (`mock`) and against the loopback apiserver simulator
//! (`sim_support`), the deploy loop's scenario table on the fake and the simulator, calm and
//! stormy (`scenarios`), and the shipped RBAC manifests compared with the requests apiary sends.
//! One test binary, one module per suite (README.md § Testing), so kube and tokio are linked once.
//!
//! Layer: integration tests; loopback only, never a real cluster. Every test still runs in a
//! process of its own under nextest; the paused-clock suites (`deadline`, `retry`, `watch`) pause
//! only their own test's runtime.

mod mock;
// The fixtures both harnesses share, declared once here.
#[path = "../fixtures/mod.rs"]
mod fixtures;
// The real-server harness, whose simulator stage the scenario table runs on.
#[path = "../real_support/mod.rs"]
mod real_support;
// Shared with the benchmark examples, hence outside this directory.
#[path = "../sim_support/mod.rs"]
mod sim_support;

/// The tests of one backend of a scenario-table row: this binary runs the fake and the
/// simulator, calm and stormy; the real apiserver is the `real_server` binary's.
macro_rules! backend_test {
    (real, $row:ident) => {};
    ($backend:ident, $row:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $backend() {
            let backend = crate::scenarios::world::Backend::named(stringify!($backend));
            crate::scenarios::run(super::$row(), backend).await;
        }
    };
}

// The scenario table (fake, calm, stormy).
#[path = "../scenarios/mod.rs"]
mod scenarios;

// Over the mock service.
mod deadline;
mod node;
mod outcomes;
mod requests;
mod retry;
mod watch;

// Against the simulator.
mod sim;
mod sim_concurrency;
mod sim_deploy;
mod sim_latency;
mod sim_staying_up;

// The shipped manifests.
mod cronjob_gc;
mod node_rbac;
mod rbac;
