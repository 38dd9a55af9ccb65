//! Drives the simulator with the real `kubectl` through the kubeconfig it writes: `kubectl create
//! namespace` (protobuf body), `kubectl get pods -n X`, `kubectl create secret`, and `kubectl
//! delete pod` (which waits for the pod to vanish by watching it). Skipped, with a message, when
//! `kubectl` is not on PATH.
//!
//! Layer: integration test with an external client; it never contacts a real cluster (the
//! kubeconfig names only the loopback simulator, and kubectl's cache goes to a temp dir).

use std::path::{Path, PathBuf};

use crate::common::{IMAGE, create_pod, get, pod_body, poll};
use apiary_apiserver_sim::{Resource, SimOptions, Simulator, Verb};
use serde_json::json;

fn kubectl_on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|candidate| candidate.is_file())
}

struct Kubectl {
    bin: PathBuf,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = tokio::process::Command::new(&self.bin)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .env_remove("KUBECONFIG")
            .output()
            .await
            .expect("kubectl runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    async fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args).await;
        assert!(ok, "kubectl {args:?} failed: {stderr}");
        stdout
    }
}

fn setup(sim: &Simulator, dir: &Path, bin: PathBuf) -> Kubectl {
    let kubeconfig = dir.join("config");
    sim.write_kubeconfig(&kubeconfig, "agents")
        .expect("kubeconfig written");
    Kubectl {
        bin,
        kubeconfig,
        cache: dir.join("cache"),
    }
}

/// kubectl, configured only by the written kubeconfig, creates a namespace, lists and reads
/// pods, creates a Secret and deletes a pod (waiting for it to vanish) against the simulator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drives_the_simulator_through_the_written_kubeconfig() {
    let Some(bin) = kubectl_on_path() else {
        eprintln!(
            "skipping kubectl_drives_the_simulator_through_the_written_kubeconfig: kubectl is not on PATH"
        );
        return;
    };
    let sim = Simulator::start(SimOptions::default().with_time_scale(1000.0))
        .await
        .expect("simulator starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let k = setup(&sim, dir.path(), bin);

    let out = k.ok(&["create", "namespace", "agents"]).await;
    assert_eq!(out.trim(), "namespace/agents created");
    assert_eq!(
        get(sim.addr(), "/api/v1/namespaces/agents").await.status,
        200
    );
    let (ok, _, stderr) = k.run(&["create", "namespace", "agents"]).await;
    assert!(!ok);
    assert!(stderr.contains("AlreadyExists"), "{stderr}");

    let (ok, stdout, stderr) = k.run(&["get", "pods", "-n", "agents"]).await;
    assert!(ok, "{stderr}");
    assert!(
        stdout.is_empty() && stderr.contains("No resources found in agents namespace"),
        "{stdout}{stderr}"
    );

    create_pod(
        sim.addr(),
        "agents",
        &pod_body("p", IMAGE, json!({"app": "x"})),
    )
    .await;
    poll(sim.addr(), "/api/v1/namespaces/agents/pods/p", |_, p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    assert_eq!(
        k.ok(&["get", "pods", "-n", "agents", "-o", "name"])
            .await
            .trim(),
        "pod/p"
    );
    assert_eq!(
        k.ok(&["get", "pods", "-l", "app=x", "-o", "name"])
            .await
            .trim(),
        "pod/p",
        "namespace from the context"
    );
    let phase = k
        .ok(&[
            "get",
            "pod",
            "p",
            "-n",
            "agents",
            "-o",
            "jsonpath={.status.phase}",
        ])
        .await;
    assert_eq!(phase, "Running");

    let out = k
        .ok(&[
            "create",
            "secret",
            "generic",
            "env-1",
            "-n",
            "agents",
            "--from-literal=K=v",
        ])
        .await;
    assert_eq!(out.trim(), "secret/env-1 created");
    let data = k
        .ok(&[
            "get",
            "secret",
            "env-1",
            "-n",
            "agents",
            "-o",
            "jsonpath={.data.K}",
        ])
        .await;
    assert_eq!(data, "dg==");
    let secrets = k.ok(&["get", "secrets", "-n", "agents"]).await;
    assert!(
        secrets
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("env-1") && l.contains("Opaque")),
        "{secrets}"
    );

    sim.clear_requests();
    let out = k.ok(&["delete", "pod", "p", "-n", "agents"]).await;
    assert_eq!(out.trim(), "pod \"p\" deleted");
    assert_eq!(
        get(sim.addr(), "/api/v1/namespaces/agents/pods/p")
            .await
            .status,
        404,
        "kubectl waited until it was gone"
    );
    let log = sim.requests();
    assert!(
        log.iter()
            .any(|r| r.is(Verb::Delete, Resource::Pods) && r.path.ends_with("/pods/p"))
    );
    assert!(
        log.iter().any(|r| r.is(Verb::Watch, Resource::Pods)),
        "kubectl waits by watching"
    );
    let (ok, _, stderr) = k.run(&["get", "pod", "p", "-n", "agents"]).await;
    assert!(!ok);
    assert!(
        stderr.contains("NotFound") && stderr.contains("pods \"p\" not found"),
        "{stderr}"
    );
}
