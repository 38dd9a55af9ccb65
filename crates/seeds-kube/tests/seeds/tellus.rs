//! Feature `tellus` (seeds.md § Cargo feature tellus; K38): `PodSeeds` is a
//! `tellus::cluster::SeedDiscovery` (`Send + 'static`, error `Send + Sync`), and resolving
//! through the trait equals the inherent `resolve`.
//!
//! Compiled only with the `tellus` feature; contacts only a scripted service.
#![cfg(feature = "tellus")]

use std::num::NonZeroU16;

use crate::mock::*;
use apiary_seeds::{Pods, Port};
use apiary_seeds_kube::{PodSeeds, SeedsError};
use tellus::cluster::SeedDiscovery;

fn assert_discovery<D: SeedDiscovery<Error = SeedsError> + Send + 'static>() {}
fn assert_error<E: std::error::Error + Send + Sync + 'static>() {}

/// K38: the compile-time contract of the trait.
#[test]
fn k38_pod_seeds_is_a_seed_discovery() {
    assert_discovery::<PodSeeds>();
    assert_error::<SeedsError>();
}

/// K38: resolving through the trait equals the inherent resolve, errors included, and the
/// trait's future is `Send` (it is spawned).
#[tokio::test]
async fn k38_trait_resolve_equals_inherent_resolve() {
    let body = page(
        &[running("b", "10.0.0.2"), running("a", "10.0.0.1")],
        None,
        "1",
    );
    let api = MockApi::new(move |_| Reply::Json(200, body.clone()));
    let pods = Pods {
        namespace: Some("ring".to_owned()),
        label_selector: "app=ring-node".to_owned(),
        port: Port::Number(NonZeroU16::new(7000).unwrap()),
    };
    let mut inherent = PodSeeds::with_client(pods.clone(), api.client()).unwrap();
    let expected = inherent.resolve().await.unwrap();
    let mut through_trait = PodSeeds::with_client(pods.clone(), api.client()).unwrap();
    let resolved = tokio::spawn(async move { SeedDiscovery::resolve(&mut through_trait).await })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(resolved, expected);

    let forbidden = status(403, "Forbidden", "no");
    let refused = MockApi::new(move |_| Reply::Json(403, forbidden.clone()));
    let mut seeds = PodSeeds::with_client(pods, refused.client()).unwrap();
    let error = SeedDiscovery::resolve(&mut seeds).await.unwrap_err();
    assert_eq!(error.status_code(), Some(403));
}
