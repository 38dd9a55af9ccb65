//! A downstream tellus user of `apiary-seeds-kube` (feature `tellus`) on k8s-openapi
//! `latest`: it hands tellus cluster bootstrap a `SeedDiscovery` that finds the other members
//! as the pods of its own app.
//!
//! Proof of use: it must compile against the libraries as published; `tests/resolve.rs` runs a
//! resolve against apiary's loopback apiserver simulator.

use std::net::SocketAddr;

use apiary_seeds::{Pods, Port};
use apiary_seeds_kube::{PodSeeds, SeedsError};
use tellus::cluster::SeedDiscovery;

/// The seed source of a ring member: pods labelled `app=<app>` in `namespace`, at their
/// container port named `gossip`.
///
/// # Errors
/// [`SeedsError::Config`] when `app` or `namespace` is blank.
pub fn ring_seeds(
    client: kube::Client,
    namespace: &str,
    app: &str,
) -> Result<impl SeedDiscovery<Error = SeedsError> + Send + 'static, SeedsError> {
    let pods = Pods {
        namespace: Some(namespace.to_owned()),
        label_selector: format!("app={app}"),
        port: Port::Name("gossip".to_owned()),
    };
    PodSeeds::with_client(pods, client)
}

/// What bootstrap does with any `SeedDiscovery`: ask it once for the current seeds.
///
/// # Errors
/// The discovery's own error.
pub async fn first_seeds<D: SeedDiscovery>(discovery: &mut D) -> Result<Vec<SocketAddr>, D::Error> {
    discovery.resolve().await
}
