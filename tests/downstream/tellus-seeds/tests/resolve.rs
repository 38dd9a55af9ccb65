//! A `SeedDiscovery` resolve through the tellus trait against `apiary-apiserver-sim` on
//! 127.0.0.1: live pods of the app count, a finished one and another app's do not.
//!
//! Loopback only; the simulator is a dev-dependency, as it would be in a user's crate.

use apiary_apiserver_sim::{SimOptions, Simulator};
use downstream_tellus_seeds::{first_seeds, ring_seeds};
use kube::config::{KubeConfigOptions, Kubeconfig};

fn pod(name: &str, app: &str, ip: &str, phase: &str) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "ring", "labels": {"app": app}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "node", "image": "ring:1",
                 "ports": [{"name": "gossip", "containerPort": 7946}]}]},
        "status": {"phase": phase, "podIP": ip, "podIPs": [{"ip": ip}]}
    }))
    .expect("a pod")
}

#[tokio::test(flavor = "current_thread")]
async fn seed_discovery_resolves_against_the_simulator() {
    // One TLS crypto provider for the client, as the workspace installs it: ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = Simulator::start(SimOptions::default())
        .await
        .expect("the simulator starts on loopback");
    sim.ensure_namespace("ring");
    sim.with_model(|model| {
        model
            .insert_pod(pod("ring-1", "ring-node", "10.1.0.2", "Running"))
            .unwrap();
        model
            .insert_pod(pod("ring-0", "ring-node", "10.1.0.1", "Running"))
            .unwrap();
        model
            .insert_pod(pod("ring-old", "ring-node", "10.1.0.9", "Succeeded"))
            .unwrap();
        model
            .insert_pod(pod("web-0", "web", "10.2.0.1", "Running"))
            .unwrap();
    });
    assert!(sim.url().starts_with("http://127.0.0.1:"), "{}", sim.url());

    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig_yaml("ring")).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client configuration");
    let client = kube::Client::try_from(config).expect("a client");

    let mut discovery = ring_seeds(client, "ring", "ring-node").expect("a valid configuration");
    let seeds = first_seeds(&mut discovery).await.expect("seeds");
    assert_eq!(
        seeds,
        vec![
            "10.1.0.1:7946".parse().unwrap(),
            "10.1.0.2:7946".parse().unwrap()
        ]
    );
}
