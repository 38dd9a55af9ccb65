//! Test fixtures shared by the `apiary-seeds` integration tests: pods built as JSON the way the
//! apiserver sends them, list pages, and a resolve helper that runs BOTH the lean and the full
//! decoding path and insists they agree (seeds.md § Lean decoding: equivalence on every fixture).
//!
//! Test-only; it decides nothing and must not hide a disagreement between the two paths.
#![allow(dead_code)] // reason: each test binary uses a different subset of the helpers

use std::net::SocketAddr;
use std::num::NonZeroU16;

#[path = "../../examples/support/full.rs"]
pub mod full;

use apiary_seeds::{Extraction, Filter, Pods, Port, decode_pod_list, extract_with};
use full::decode_pod_list_full;
use serde_json::{Value, json};

/// A fixed port.
pub fn number(port: u16) -> Port {
    Port::Number(NonZeroU16::new(port).expect("test ports are non-zero"))
}

/// A named port.
pub fn name(port: &str) -> Port {
    Port::Name(port.to_owned())
}

/// A valid configuration for `app=ring-node` with this port.
pub fn pods(port: Port) -> Pods {
    Pods {
        namespace: Some("ring".to_owned()),
        label_selector: "app=ring-node".to_owned(),
        port,
    }
}

/// A running pod with one container and no ports; `uid` is derived from the name.
pub fn running(name: &str, ip: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "ring", "uid": format!("uid-{name}"), "resourceVersion": "1",
                      "labels": {"app": "ring-node"}},
        "spec": {"containers": [{"name": "main", "image": "ring:1"}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
    })
}

/// A running pod marked for deletion.
pub fn terminating(name: &str, ip: &str) -> Value {
    let mut pod = running(name, ip);
    pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    pod
}

/// A pod in the given phase with an address.
pub fn in_phase(name: &str, ip: &str, phase: &str) -> Value {
    let mut pod = running(name, ip);
    pod["status"]["phase"] = json!(phase);
    pod
}

/// A pending pod that has no address yet.
pub fn pending_without_address(name: &str) -> Value {
    json!({
        "metadata": {"name": name, "uid": format!("uid-{name}")},
        "spec": {"containers": [{"name": "main", "image": "ring:1"}]},
        "status": {"phase": "Pending"}
    })
}

/// A running pod whose first container declares these `(name, containerPort)` ports.
pub fn with_ports(name: &str, ip: &str, ports: &[(&str, i64)]) -> Value {
    let mut pod = running(name, ip);
    pod["spec"]["containers"][0]["ports"] = ports_json(ports);
    pod
}

/// The JSON of a container's `ports`.
pub fn ports_json(ports: &[(&str, i64)]) -> Value {
    Value::Array(
        ports
            .iter()
            .map(|(name, number)| json!({"name": name, "containerPort": number, "protocol": "TCP"}))
            .collect(),
    )
}

/// A pod list page with these items and an optional continue token.
pub fn page(items: &[Value], continue_token: Option<&str>) -> Vec<u8> {
    let mut metadata = json!({"resourceVersion": "100"});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    serde_json::to_vec(
        &json!({"kind": "PodList", "apiVersion": "v1", "metadata": metadata, "items": items}),
    )
    .expect("fixtures serialize")
}

/// Resolves a page through the lean decoder, after checking the full `Pod` path agrees exactly.
pub fn resolve(items: &[Value], port: &Port) -> Extraction {
    resolve_with(items, port, Filter::default())
}

/// [`resolve`] narrowed by `filter` (IP family, running containers), both paths compared.
pub fn resolve_with(items: &[Value], port: &Port, filter: Filter) -> Extraction {
    let bytes = page(items, None);
    let lean = decode_pod_list(&bytes).expect("lean decoding of a fixture");
    let full = decode_pod_list_full(&bytes).expect("full decoding of a fixture");
    let from_lean = extract_with(&lean.items, port, filter);
    let from_full = extract_with(&full.items, port, filter);
    assert_eq!(
        from_lean, from_full,
        "lean and full decoding disagree on a fixture"
    );
    from_lean
}

/// `pod` with its `status.podIP` and `status.podIPs` replaced (`None` removes `podIP`).
pub fn with_ips(mut pod: Value, pod_ip: Option<&str>, pod_ips: &[&str]) -> Value {
    let ips: Vec<Value> = pod_ips.iter().map(|ip| json!({"ip": ip})).collect();
    pod["status"]["podIPs"] = Value::Array(ips);
    match pod_ip {
        Some(ip) => pod["status"]["podIP"] = json!(ip),
        None => {
            if let Some(status) = pod["status"].as_object_mut() {
                status.remove("podIP");
            }
        }
    }
    pod
}

/// `pod` with `status.containerStatuses` naming each `(container, state)`, where state is
/// `running`, `waiting` or `terminated`.
pub fn with_container_states(mut pod: Value, states: &[(&str, &str)]) -> Value {
    pod["status"]["containerStatuses"] =
        Value::Array(states.iter().map(container_status).collect());
    pod
}

/// One container status in the given state, shaped as the kubelet writes it.
pub fn container_status((name, state): &(&str, &str)) -> Value {
    let state = match *state {
        "running" => json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}}),
        "terminated" => json!({"terminated": {"exitCode": 1, "reason": "Error"}}),
        _ => json!({"waiting": {"reason": "ContainerCreating"}}),
    };
    json!({"name": name, "image": "ring:1", "imageID": "", "ready": false, "restartCount": 0,
           "state": state})
}

/// Parses `ip:port` text into a socket address.
pub fn addr(text: &str) -> SocketAddr {
    text.parse().expect("test addresses parse")
}

/// Parses several addresses.
pub fn addrs(texts: &[&str]) -> Vec<SocketAddr> {
    texts.iter().map(|text| addr(text)).collect()
}
