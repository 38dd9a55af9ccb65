//! The only library crate that talks to the Kubernetes apiserver (through kube-rs): the
//! `Cluster` implementation of `Substrate`, and `PodSeeds` for seed discovery.
#![deny(missing_docs)]

pub mod cluster;
pub mod pod_seeds;
