//! `tellus::cluster::SeedDiscovery` for `PodSeeds` (seeds.md § Cargo feature tellus): a drop-in
//! seed source for tellus cluster bootstrap.
//!
//! Adapter only: it delegates to the inherent `resolve`, so behaviour is identical with and
//! without the feature. Compiled only with the `tellus` feature.

use std::net::SocketAddr;

use super::{PodSeeds, SeedsError};

impl tellus::cluster::SeedDiscovery for PodSeeds {
    type Error = SeedsError;

    async fn resolve(&mut self) -> Result<Vec<SocketAddr>, SeedsError> {
        PodSeeds::resolve(self).await
    }
}
