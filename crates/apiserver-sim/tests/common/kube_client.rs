//! The real `kube::Client` the kube-rs compatibility tests talk to the simulator with: built from
//! the simulator's own kubeconfig YAML, with kube's retries off so every answer is seen as sent,
//! and the reader of the refusals it reports.
//!
//! Layer: test support only; it talks to the simulator over loopback like any client.

use apiary_apiserver_sim::Simulator;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// A `kube::Client` for `sim` whose default namespace is `namespace` (checked), retries off.
pub async fn kube_client(sim: &Simulator, namespace: &str) -> Client {
    let kubeconfig =
        Kubeconfig::from_yaml(&sim.kubeconfig_yaml(namespace)).expect("kubeconfig parses");
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig is usable");
    assert_eq!(config.default_namespace, namespace);
    config.default_retry = false;
    Client::try_from(config).expect("client builds")
}

/// The status code and literal reason of a refusal kube-rs reports as `Error::Api`.
pub fn api_reason(e: &kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(status) => (status.code, status.reason.clone()),
        other => panic!("not an API error: {other}"),
    }
}
