//! The reference decoding path: a pod list page decoded into whole k8s-openapi `Pod` objects, then
//! reduced to [`LeanPod`](apiary_seeds::LeanPod) records through the library's `From<&Pod>`.
//!
//! Example and test support, outside the library build: the benchmark (`examples/bench_decode.rs`)
//! measures the lean decoder against it, and the equivalence tests (seeds.md § Lean decoding)
//! insist both paths agree. Discovery itself never takes this path, and no library may use it.

use apiary_seeds::{DecodeError, LeanPod, LeanPodList};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::Deserialize;

#[derive(Deserialize)]
struct FullList {
    #[serde(default)]
    metadata: Option<ListMeta>,
    #[serde(default)]
    items: Option<Vec<Pod>>,
}

/// Decodes a pod list page into full `Pod` objects and reduces them to lean records: the
/// reference the lean decoder is measured and proven against.
///
/// # Errors
/// [`DecodeError`] when the bytes are not a JSON pod list.
pub fn decode_pod_list_full(bytes: &[u8]) -> Result<LeanPodList, DecodeError> {
    let list: FullList = serde_json::from_slice(bytes)?;
    let metadata = list.metadata.unwrap_or_default();
    Ok(LeanPodList {
        continue_token: metadata.continue_.filter(|token| !token.is_empty()),
        resource_version: metadata.resource_version,
        items: list
            .items
            .unwrap_or_default()
            .iter()
            .map(LeanPod::from)
            .collect(),
    })
}
