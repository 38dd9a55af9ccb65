//! The fake kubelet on a control plane of its own (not the shared one): a cluster-wide kubelet
//! runs the pods of every namespace, and a kubelet outlives an apiserver restart on the same
//! port and etcd data (its watches come back, pods created afterwards still run, and a graceful
//! delete is still finished).
//!
//! Layer: integration tests of test support. Every test skips (one stderr line) without
//! `KUBEBUILDER_ASSETS`. Loopback only. No timed assertions: waits are bounded only to turn a
//! hang into a failure.

use std::time::{Duration, Instant};

use apiary_envtest::kubelet::{Kubelet, Options};
use apiary_envtest::{ControlPlane, Identity};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};

/// How long any wait may take before the test fails as hung (a restarted apiserver takes a few
/// seconds, and the kubelet's watches back off before they reconnect).
const HANG: Duration = Duration::from_secs(90);

fn agent_pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name },
        "spec": {
            "automountServiceAccountToken": false,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 10,
            "containers": [{ "name": "agent", "image": "registry.example.com/team/agent:1" }],
        },
    }))
    .expect("a valid pod")
}

fn is_running(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref())
        .is_some_and(|s| s.running.is_some())
}

/// Polls until the pod runs; tolerates the apiserver being briefly away.
async fn wait_running(api: &Api<Pod>, name: &str) {
    let start = Instant::now();
    loop {
        if let Ok(Some(pod)) = api.get_opt(name).await
            && is_running(&pod)
        {
            return;
        }
        assert!(start.elapsed() < HANG, "pod {name} never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_gone(api: &Api<Pod>, name: &str) {
    let start = Instant::now();
    loop {
        if let Ok(None) = api.get_opt(name).await {
            return;
        }
        assert!(start.elapsed() < HANG, "pod {name} was never removed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the test's own client")
}

fn fresh() -> Option<ControlPlane> {
    apiary_envtest::fresh(apiary_envtest::Options::default())
}

/// With [`apiary_envtest::kubelet::Scope::AllNamespaces`] one kubelet runs the pods of every
/// namespace, including one created after it started.
#[test]
fn cluster_wide_kubelet_runs_every_namespace() {
    let Some(plane) = fresh() else {
        return;
    };
    let first = plane.namespace("wide-a");
    let kubelet = Kubelet::start(plane.config(Identity::Admin), Options::default())
        .expect("the kubelet registers its node");
    let second = plane.namespace("wide-b");
    runtime().block_on(async {
        let client = plane.client(Identity::Admin);
        for ns in [&first, &second] {
            let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
            pods.create(&PostParams::default(), &agent_pod("agent-0"))
                .await
                .expect("the pod is created");
        }
        for ns in [&first, &second] {
            wait_running(&Api::namespaced(client.clone(), ns), "agent-0").await;
        }
    });
    drop(kubelet);
}

/// The kubelet outlives an apiserver restart: afterwards a new pod still runs and a graceful
/// delete of a pod started before the restart is still finished.
#[test]
fn kubelet_outlives_an_apiserver_restart() {
    let Some(plane) = fresh() else {
        return;
    };
    let ns = plane.namespace("restart");
    let kubelet = Kubelet::start(plane.config(Identity::Admin), Options::in_namespace(&ns))
        .expect("the kubelet registers its node");
    let rt = runtime();
    rt.block_on(async {
        let pods: Api<Pod> = Api::namespaced(plane.client(Identity::Admin), &ns);
        pods.create(&PostParams::default(), &agent_pod("before"))
            .await
            .expect("the pod is created");
        wait_running(&pods, "before").await;
    });
    plane.stop_apiserver();
    plane.start_apiserver().expect("the apiserver restarts");
    rt.block_on(async {
        let pods: Api<Pod> = Api::namespaced(plane.client(Identity::Admin), &ns);
        pods.create(&PostParams::default(), &agent_pod("after"))
            .await
            .expect("the pod is created after the restart");
        wait_running(&pods, "after").await;
        pods.delete("before", &DeleteParams::default())
            .await
            .expect("the delete is accepted");
        wait_gone(&pods, "before").await;
    });
    drop(kubelet);
}
