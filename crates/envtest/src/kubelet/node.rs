//! The `Node` the fake kubelet registers: the object it creates (name, hostname label, pod
//! CIDR) and the status it writes through the status subresource (`Ready=True`, addresses,
//! capacity, node info).
//!
//! Pure: builds values from the node name and the time it is given; performs no I/O and reads
//! no clock.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::options::{NODE_IP, POD_CIDR};

/// The label that marks nodes registered by this fake kubelet.
pub const FAKE_NODE_LABEL: &str = "apiary.dev/envtest-fake-kubelet";

/// The Node object to create (status is written separately, as a kubelet does).
pub(crate) fn node_object(name: &str) -> Node {
    let labels = BTreeMap::from([
        ("kubernetes.io/hostname".to_owned(), name.to_owned()),
        ("kubernetes.io/os".to_owned(), "linux".to_owned()),
        ("kubernetes.io/arch".to_owned(), "amd64".to_owned()),
        (FAKE_NODE_LABEL.to_owned(), "true".to_owned()),
    ]);
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            pod_cidr: Some(POD_CIDR.to_owned()),
            pod_cidrs: Some(vec![POD_CIDR.to_owned()]),
            ..NodeSpec::default()
        }),
        status: None,
    }
}

/// The merge patch for the node's status subresource: Ready, addresses, capacity, node info.
pub(crate) fn node_status_patch(name: &str, now: Timestamp) -> serde_json::Value {
    let now = now.to_string();
    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        serde_json::json!({
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        })
    };
    let resources = serde_json::json!({ "cpu": "8", "memory": "32Gi", "pods": "110" });
    serde_json::json!({
        "status": {
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                          "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                          "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID",
                          "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                { "type": "InternalIP", "address": NODE_IP },
                { "type": "Hostname", "address": name },
            ],
            "capacity": resources,
            "allocatable": resources,
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kernelVersion": "",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.20.2-apiary-envtest",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "apiary envtest fake kubelet",
                "systemUUID": "",
            },
        }
    })
}
