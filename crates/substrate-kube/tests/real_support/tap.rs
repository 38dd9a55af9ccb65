//! The client-side request tap of the `real_*` tests, which lives in `apiary-envtest`
//! (`apiary_envtest::tap`) so that `apiary-seeds-kube`'s real-server tests use the same one;
//! re-exported here so this harness's paths (`real_support::tap`, and the `#[path]` include of
//! `real_node.rs`) stay as they were.
//!
//! Layer: test-only harness; it only re-exports.

pub use apiary_envtest::tap::*;
