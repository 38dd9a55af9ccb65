//! The deploy shell, talking to the Kubernetes apiserver through kube-rs: the `Cluster`
//! implementation of `Substrate`, client construction and `PodLogs`. Seed discovery (`PodSeeds`)
//! is `apiary-seeds-kube`, whose exchange layer this crate sends through too; its types are
//! re-exported here for compatibility.
//!
//! Layer: the imperative shell. Its modules are private: every public item has exactly one path,
//! the crate root, and the pure response-mapping and retry-decision code stays internal.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod cluster;
mod exchange;
mod logs;

/// Seed discovery, re-exported from `apiary-seeds-kube` for compatibility: depend on that crate
/// instead, which builds without the deploy code.
pub use apiary_seeds_kube::{PodSeeds, SeedsError, SeedsMode, SeedsOptions, SeedsResolution};
pub use cluster::client::{
    ClientError, ClientOptions, ConfigSource, Connection, choose_source, connect,
    connect_kubeconfig_only, connect_with, install_crypto_provider,
};
pub use cluster::{Cluster, RetryPolicy};
pub use exchange::request_failure;
pub use logs::{LogsEnd, LogsError, LogsOptions, PodLogs};
