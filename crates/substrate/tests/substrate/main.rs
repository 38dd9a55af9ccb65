//! The integration tests of `apiary-substrate`, in one test binary (each module was its own binary
//! once; one binary links once): every operation through the driver against the in-memory fake
//! (the conformance suites and their property test), the driver's spans, the policy and workspace
//! prepare step, the pure pipeline and the stuck-node explanation.

#[path = "../conformance_support/mod.rs"]
mod conformance_support;

mod conformance_deploy;
mod conformance_ops;
mod conformance_props;
mod driver_spans;
mod policy;
mod pure_pipeline;
mod stuck_node;
mod workspace;
