//! The library's one Kubernetes input type: a whole k8s-openapi `Pod` reduced to the
//! [`LeanPod`] record discovery works on, for a caller that already holds `Pod` objects (from its
//! own client, a cache or a test) rather than list bytes.
//!
//! Pure layer: no I/O. It must read exactly the fields the lean decoder reads, with the same
//! meaning (seeds.md § Lean decoding: the two paths are proven equivalent on every fixture).
//! It names no k8s-openapi version feature: the crate where the build ends chooses it.

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::lean::{LeanContainer, LeanPod, LeanPort};

/// `LeanPod::from(&pod)`: the fields seed discovery reads (name, uid, resourceVersion, the
/// deletion mark, the phase, `podIP`, every `podIPs[].ip`, the running containers' names, and
/// every container's name, ports and restart policy), read with the same meaning as the lean
/// decoder reads them.
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
            pod_ips: status
                .and_then(|status| status.pod_ips.as_ref())
                .map(|ips| ips.iter().map(|entry| entry.ip.clone()).collect())
                .unwrap_or_default(),
            running_containers: status
                .map(|status| {
                    let regular = status.container_statuses.iter().flatten();
                    let init = status.init_container_statuses.iter().flatten();
                    regular
                        .chain(init)
                        .filter(|container| {
                            container
                                .state
                                .as_ref()
                                .is_some_and(|state| state.running.is_some())
                        })
                        .map(|container| container.name.clone())
                        .collect()
                })
                .unwrap_or_default(),
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
        name: Some(container.name.clone()),
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
