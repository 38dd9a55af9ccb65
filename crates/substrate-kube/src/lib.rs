//! The only library crate that talks to the Kubernetes apiserver (through kube-rs): the
//! `Cluster` implementation of `Substrate`, client construction, and `PodSeeds` for seed
//! discovery.
//!
//! Layer: the imperative shell. Its modules are private: every public item has exactly one path,
//! the crate root, and the pure response-mapping and retry-decision code stays internal.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod cluster;
mod exchange;
mod logs;
mod pod_seeds;

pub use cluster::client::{
    ClientError, ClientOptions, ConfigSource, Connection, choose_source, connect,
    connect_kubeconfig_only, connect_with, install_crypto_provider,
};
pub use cluster::{Cluster, RetryPolicy};
pub use exchange::request_failure;
pub use logs::{LogsEnd, LogsError, LogsOptions, PodLogs};
pub use pod_seeds::{PodSeeds, SeedsError, SeedsMode, SeedsOptions, SeedsResolution};
