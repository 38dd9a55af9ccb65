//! The in-process integration tests of the crate: apiary's real `Cluster` (a real `kube::Client`)
//! driven over a scripted mock service (`mock`) and against the loopback apiserver simulator
//! (`sim_support`), and the shipped RBAC manifests compared with the requests apiary sends. One
//! test binary, one module per suite (README.md § Testing), so kube and tokio are linked once.
//!
//! Layer: integration tests; loopback only, never a real cluster. Every test still runs in a
//! process of its own under nextest; the paused-clock suites (`deadline`, `retry`, `watch`) pause
//! only their own test's runtime.

mod mock;
// Shared with the benchmark examples, hence outside this directory.
#[path = "../sim_support/mod.rs"]
mod sim_support;

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
mod sim_namespace;
mod sim_replace;
mod sim_staying_up;
mod sim_undeploy;

// The shipped manifests.
mod cronjob_gc;
mod node_rbac;
mod rbac;
