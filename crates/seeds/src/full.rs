//! The reference path: full `Pod` objects (k8s-openapi) reduced to [`LeanPod`] records.
//!
//! Pure layer. It exists so the lean decoder can be proven equivalent to decoding whole pods
//! (seeds.md § Lean decoding) and measured against it; discovery itself never takes this path.
//! It must read exactly the fields the lean decoder reads, with the same meaning.

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::Deserialize;

use crate::lean::{DecodeError, LeanContainer, LeanPod, LeanPodList, LeanPort};

impl From<&Pod> for LeanPod {
    fn from(pod: &Pod) -> Self {
        let meta = &pod.metadata;
        let status = pod.status.as_ref();
        let spec = pod.spec.as_ref();
        LeanPod {
            name: meta.name.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            terminating: meta.deletion_timestamp.is_some(),
            finished: status
                .and_then(|status| status.phase.as_deref())
                .is_some_and(|phase| phase == "Succeeded" || phase == "Failed"),
            pod_ip: status.and_then(|status| status.pod_ip.clone()),
            first_pod_ips_ip: status
                .and_then(|status| status.pod_ips.as_ref())
                .and_then(|ips| ips.first())
                .map(|entry| entry.ip.clone()),
            containers: spec
                .map(|spec| spec.containers.iter().map(lean_container).collect())
                .unwrap_or_default(),
            init_containers: spec
                .and_then(|spec| spec.init_containers.as_ref())
                .map(|containers| containers.iter().map(lean_container).collect())
                .unwrap_or_default(),
        }
    }
}

fn lean_container(container: &Container) -> LeanContainer {
    LeanContainer {
        restart_always: container.restart_policy.as_deref() == Some("Always"),
        ports: container
            .ports
            .iter()
            .flatten()
            .map(|port| LeanPort {
                name: port.name.clone(),
                container_port: i64::from(port.container_port),
            })
            .collect(),
    }
}

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
