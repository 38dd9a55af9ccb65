//! The real-node tier of the built `apiary` binary (crates/envtest/README.md § The real node), in
//! one test binary named `real_node` (the filters of `.config/nextest.toml` and `cargo xtask e2e`
//! select the tier by that name): the life cycle of a deploy, the day-two commands, and the pod
//! options only a kubelet and a scheduler can show.

#[path = "../common/mod.rs"]
mod common;

mod day_two;
mod lifecycle;
mod paths;
mod pod_options;
