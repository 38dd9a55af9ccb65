//! A synthetic pod list shaped like ordinary workload pods (seeds.md § Lean decoding, cost): per
//! pod about 5 KB of JSON with managed fields, four labels, three annotations, two containers
//! with twenty env entries each, probes, volumes, four conditions and two container statuses.
//!
//! Benchmark and test fixture only; deterministic (no randomness, no clock), decides nothing.

use serde_json::{Value, json};

/// The JSON bytes of a pod list page holding `count` synthetic pods.
pub fn pod_list_bytes(count: usize) -> Vec<u8> {
    let items: Vec<Value> = (0..count).map(pod).collect();
    let list = json!({
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "987654"},
        "items": items,
    });
    serde_json::to_vec(&list).expect("a JSON value serializes")
}

/// One synthetic pod; every tenth is terminating, every 25th finished, every 50th has no address
/// yet, so the filter has work to do.
pub fn pod(index: usize) -> Value {
    let name = format!("ring-node-7d9f8c6b5-{index:05}");
    let ip = format!(
        "10.{}.{}.{}",
        16 + index / 65536,
        (index / 256) % 256,
        index % 256
    );
    let env: Vec<Value> = (0..20)
        .map(|i| json!({"name": format!("RING_{i:02}"), "value": format!("v{i}")}))
        .collect();
    let container = |name: &str, port_name: &str, port: u16| {
        json!({
            "name": name,
            "image": format!("registry.example.com/ring/{name}:1.24.{}", index % 7),
            "imagePullPolicy": "IfNotPresent",
            "ports": [
                {"name": port_name, "containerPort": port, "protocol": "TCP"},
                {"name": format!("{port_name}-metrics"), "containerPort": port + 1000, "protocol": "TCP"}
            ],
            "env": env,
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
                              "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 1,
                              "successThreshold": 1, "failureThreshold": 3},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": port, "scheme": "HTTP"},
                               "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/ring", "readOnly": true},
                {"name": "data", "mountPath": "/var/lib/ring"}
            ],
            "terminationMessagePath": "/dev/termination-log"
        })
    };
    let condition = |kind: &str| json!({"type": kind, "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-01T10:00:00Z"});
    let container_status = |name: &str| {
        json!({
            "name": name, "ready": true, "restartCount": index % 3, "started": true,
            "image": format!("registry.example.com/ring/{name}:1.24.{}", index % 7),
            "imageID": format!("registry.example.com/ring/{name}@sha256:{:016x}", index),
            "containerID": format!("containerd://{:016x}", index * 7 + 1),
            "state": {"running": {"startedAt": "2026-11-01T10:00:05Z"}},
            "lastState": {}
        })
    };
    let mut pod = json!({
        "metadata": {
            "name": name,
            "generateName": "ring-node-7d9f8c6b5-",
            "namespace": "ring",
            "uid": format!("8f14e45f-ceea-467f-a0e6-{index:012}"),
            "resourceVersion": format!("{}", 100000 + index),
            "creationTimestamp": "2026-11-01T10:00:00Z",
            "labels": {"app": "ring-node", "pod-template-hash": "7d9f8c6b5", "tier": "backend", "release": "stable"},
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": "2026-11-01T09:59:00Z",
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "8000"
            },
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ring-node-7d9f8c6b5",
                                 "uid": "0f14e45f-ceea-467f-a0e6-000000000001", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-01T10:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                              "f:ownerReferences": {".": {}}},
                              "f:spec": {"f:containers": {"k:{\"name\":\"ring\"}": {".": {}, "f:env": {}, "f:image": {}}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-01T10:00:06Z",
                 "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:podIP": {}, "f:podIPs": {}}}}
            ]
        },
        "spec": {
            "containers": [container("ring", "gossip", 7000), container("sidecar-proxy", "proxy", 15001)],
            "volumes": [
                {"name": "config", "configMap": {"name": "ring-config", "defaultMode": 420}},
                {"name": "data", "emptyDir": {}},
                {"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
                ]}}
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "ring-node",
            "nodeName": format!("node-{}", index % 40),
            "schedulerName": "default-scheduler"
        },
        "status": {
            "phase": "Running",
            "conditions": [condition("PodReadyToStartContainers"), condition("Initialized"), condition("Ready"), condition("ContainersReady")],
            "hostIP": format!("192.168.{}.{}", index % 40, 10),
            "hostIPs": [{"ip": format!("192.168.{}.{}", index % 40, 10)}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": "2026-11-01T10:00:01Z",
            "qosClass": "Burstable",
            "containerStatuses": [container_status("ring"), container_status("sidecar-proxy")]
        }
    });
    if index % 10 == 9 {
        pod["metadata"]["deletionTimestamp"] = json!("2026-11-01T11:00:00Z");
    }
    if index % 25 == 24 {
        pod["status"]["phase"] = json!("Succeeded");
    }
    if index % 50 == 13 {
        pod["status"]["podIP"] = Value::Null;
        pod["status"]["podIPs"] = json!([]);
    }
    pod
}
