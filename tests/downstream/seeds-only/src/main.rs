//! A downstream crate that depends only on `apiary-seeds` and chooses k8s-openapi `v1_36`: it
//! builds `Pod` objects itself and resolves seed addresses over them, as a user with its own
//! pod cache would.
//!
//! Proof of use, not a test of the rules (the library's own tests do that): it must compile
//! against the library as published, and it exits non-zero if the answer is not the expected one.

use apiary_seeds::{LeanPod, Pods, Port, SkipReason, decode_pod_list, extract};
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

fn pod(name: &str, ip: &str, phase: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "node".to_owned(),
                ports: Some(vec![ContainerPort {
                    name: Some("gossip".to_owned()),
                    container_port: 7000,
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some(phase.to_owned()),
            pod_ip: Some(ip.to_owned()),
            ..Default::default()
        }),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pods = Pods {
        namespace: Some("ring".to_owned()),
        label_selector: "app=ring-node".to_owned(),
        port: Port::Name("gossip".to_owned()),
    };
    pods.validate()?;

    let mut leaving = pod("d", "10.0.0.4", "Running");
    leaving.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let listed = [
        pod("c", "10.0.0.3", "Running"),
        pod("a", "10.0.0.1", "Running"),
        pod("b", "10.0.0.2", "Failed"),
        leaving,
    ];
    let lean: Vec<LeanPod> = listed.iter().map(LeanPod::from).collect();
    let extraction = extract(&lean, &pods.port).into_result(&pods, "ring")?;

    let expected: Vec<std::net::SocketAddr> =
        vec!["10.0.0.1:7000".parse()?, "10.0.0.3:7000".parse()?];
    assert_eq!(extraction.addresses, expected);
    assert_eq!(extraction.report.matched, 4);
    assert_eq!(extraction.report.skipped.get(SkipReason::Finished), 1);
    assert_eq!(extraction.report.skipped.get(SkipReason::Terminating), 1);

    // The same pods as list bytes, decoded leanly, give the same answer.
    let page = serde_json_bytes(&listed);
    let decoded = decode_pod_list(&page)?;
    assert_eq!(extract(&decoded.items, &pods.port).addresses, expected);

    for address in &extraction.addresses {
        println!("{address}");
    }
    Ok(())
}

/// A pod list page as the apiserver would send it, through k8s-openapi's own serializer.
fn serde_json_bytes(pods: &[Pod]) -> Vec<u8> {
    let items: Vec<String> = pods
        .iter()
        .map(|pod| k8s_openapi::serde_json::to_string(pod).expect("a pod serializes"))
        .collect();
    format!(r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"7"}},"items":[{}]}}"#, items.join(","))
        .into_bytes()
}
