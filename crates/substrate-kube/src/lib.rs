//! The only library crate that talks to the Kubernetes apiserver (through kube-rs): the
//! `Cluster` implementation of `Substrate`, and `PodSeeds` for seed discovery.
#![deny(missing_docs)]

pub mod cluster;
pub use cluster::client::{ClientError, ClientOptions, Connection, connect};
pub use cluster::{Cluster, RetryPolicy};
pub mod pod_seeds;
pub use pod_seeds::{PodSeeds, SeedsError, SeedsMode, SeedsOptions, SeedsResolution};
