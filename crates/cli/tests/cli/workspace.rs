//! End-to-end: `deploy --workspace-size` (deploy.md § Persistent workspace) through the built
//! binary on a real `kube-apiserver` with the fake kubelet (the simulator has no claim kind): the
//! server holds the claim apiary built and the pod mounts it; `status` and `list` show it; a
//! `--replace` asking another size keeps the running pod (a claim is never resized, so a new
//! pod would change nothing) and says how the claim differs with the fix, as `status` does; a
//! plain undeploy keeps it and says so; only `undeploy --delete-workspace` deletes it. And the
//! refusals a person meets.
//!
//! Test-only code: it asserts on exit codes, output and the server's objects.

use crate::common::{Fixture, IMAGE};

const AGENT: &str = "workspace agent";

#[test]
fn a_workspace_claim_is_kept_until_delete_workspace() {
    let Some(fx) = Fixture::on_real("workspace") else {
        return;
    };
    let first = [
        "deploy",
        AGENT,
        "--image",
        IMAGE,
        "--workspace-size",
        "1Gi",
        "--storage-class",
        "apiary-e2e",
        "-o",
        "json",
    ];
    let run = fx.apiary(&first);
    assert_eq!(run.code, 0, "{run:?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let pod_name = doc["pod"].as_str().unwrap().to_owned();
    let claim_name = format!("{pod_name}-workspace");
    assert_eq!(
        doc["workspace"],
        serde_json::json!({"name": claim_name, "created": true, "differences": []})
    );
    let claims = fx.workspace_claims();
    assert_eq!(claims.len(), 1, "{claims:?}");
    let claim = &claims[0];
    assert_eq!(claim.metadata.name.as_deref(), Some(claim_name.as_str()));
    let labels = claim.metadata.labels.clone().unwrap();
    assert_eq!(labels["app.kubernetes.io/managed-by"], "apiary");
    let spec = claim.spec.as_ref().unwrap();
    assert_eq!(spec.storage_class_name.as_deref(), Some("apiary-e2e"));
    assert_eq!(
        spec.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].0,
        "1Gi"
    );
    let pod = fx.pod(&pod_name).expect("the pod");
    let volumes = pod.spec.unwrap().volumes.unwrap();
    let mounted = volumes.iter().find(|v| v.name == "workspace").unwrap();
    assert_eq!(
        mounted.persistent_volume_claim.as_ref().unwrap().claim_name,
        claim_name
    );

    let status = fx.apiary(&["status", AGENT]);
    assert_eq!(status.code, 0, "{status:?}");
    assert!(
        status
            .stdout
            .contains(&format!("workspace: {claim_name} (1Gi, class apiary-e2e")),
        "{status:?}"
    );
    let list = fx.apiary(&["list"]);
    assert!(
        list.stdout.lines().next().unwrap().ends_with("WORKSPACE"),
        "{list:?}"
    );
    assert!(list.stdout.contains(&claim_name), "{list:?}");

    // Another size with --replace: the intent is the pod's, which the claim's size does not
    // change, so the running pod is kept; the difference is said with its fix, the claim
    // neither recreated nor resized.
    let pod_uid = fx.pod(&pod_name).and_then(|p| p.metadata.uid);
    let status = fx.apiary(&[
        "status",
        AGENT,
        "--image",
        IMAGE,
        "--workspace-size",
        "2Gi",
        "--storage-class",
        "apiary-e2e",
        "-o",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(doc["intent_matches"], true, "{doc}");
    assert_eq!(
        doc["workspace_differs"],
        serde_json::json!(["size 1Gi (asked 2Gi)"]),
        "{doc}"
    );
    fx.clear_requests();
    let replaced = fx.apiary(&[
        "deploy",
        AGENT,
        "--image",
        IMAGE,
        "--workspace-size",
        "2Gi",
        "--storage-class",
        "apiary-e2e",
        "--replace",
    ]);
    assert_eq!(replaced.code, 0, "{replaced:?}");
    assert!(
        replaced
            .stderr
            .contains("workspace differs: size 1Gi (asked 2Gi)"),
        "{replaced:?}"
    );
    assert!(replaced.stderr.contains("never resized"), "{replaced:?}");
    assert!(
        replaced.stderr.contains("--delete-workspace"),
        "{replaced:?}"
    );
    assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    assert_eq!(
        fx.pod(&pod_name).and_then(|p| p.metadata.uid),
        pod_uid,
        "the running pod is kept"
    );
    assert_eq!(fx.workspace_claims()[0].metadata.uid, claim.metadata.uid);

    let kept = fx.apiary(&["undeploy", AGENT]);
    assert_eq!(kept.code, 0, "{kept:?}");
    assert!(
        kept.stdout
            .contains(&format!("persistentvolumeclaim/{claim_name} kept")),
        "{kept:?}"
    );
    assert_eq!(fx.workspace_claims().len(), 1);

    let gone = fx.apiary(&["undeploy", AGENT, "--delete-workspace", "-o", "json"]);
    assert_eq!(gone.code, 0, "{gone:?}");
    let doc: serde_json::Value = serde_json::from_str(&gone.stdout).unwrap();
    assert_eq!(
        doc["workspace"],
        serde_json::json!({"name": claim_name, "deleted": true})
    );
    // Without a controller manager the `kubernetes.io/pvc-protection` finalizer stays: the
    // claim is gone or being deleted.
    assert!(
        fx.workspace_claims()
            .iter()
            .all(|c| c.metadata.deletion_timestamp.is_some()),
        "{:?}",
        fx.workspace_claims()
    );
}

/// The simulator serves no claim API, like an apiserver without it: the deploy fails before
/// anything else is written (E16, not the missing-namespace E11), naming the claim.
#[test]
fn a_workspace_against_an_apiserver_without_claims_writes_nothing() {
    let fx = Fixture::on_sim();
    let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--workspace-size", "1Gi"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("persistentvolumeclaim"), "{run:?}");
    assert!(!run.stderr.contains("kubectl create namespace"), "{run:?}");
    assert!(run.stderr.contains("no pod was created"), "{run:?}");
    assert!(fx.pod_names().is_empty());
    assert!(fx.secret_names().is_empty());
}

/// Refused before any cluster contact (exit 2), naming the flag and the fix.
#[test]
fn workspace_flags_are_checked_before_any_request() {
    let fx = Fixture::on_sim();
    for (args, expected) in [
        (
            &["deploy", AGENT, "--image", IMAGE, "--storage-class", "fast"][..],
            "add --workspace-size SIZE",
        ),
        (
            &["deploy", AGENT, "--image", IMAGE, "--workspace-size", "ten"][..],
            "--workspace-size \"ten\": not a Kubernetes quantity",
        ),
        (
            &["undeploy", AGENT, "--delete-workspace", "--no-wait"][..],
            "--no-wait",
        ),
    ] {
        let run = fx.apiary(args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stderr.contains(expected), "{args:?}: {run:?}");
    }
    assert!(fx.requests().is_empty(), "{:?}", fx.requests());
}

/// The one command of README § Commands: an agent onto a tainted GPU node with gVisor, a
/// private image, a persistent workspace, its team's labels, a cluster Secret and an egress
/// allow-list. The real kube-apiserver accepts it and holds every field; the pod starts.
#[test]
fn one_command_carries_every_option() {
    let Some(fx) = Fixture::on_real("one-command") else {
        return;
    };
    let runtime_class = k8s_openapi::api::node::v1::RuntimeClass {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("gvisor-{}", fx.namespace())),
            ..Default::default()
        },
        handler: "runsc".to_owned(),
        ..Default::default()
    };
    fx.create_cluster_object(&runtime_class);
    fx.create_user_secret("research-creds", &[("API_TOKEN", "tok-not-printed")]);
    let gvisor = runtime_class.metadata.name.clone().unwrap();
    let run = fx.apiary(&[
        "deploy",
        "research-bot",
        "--image",
        IMAGE,
        "--node-selector",
        "nvidia.com/gpu.present=true",
        "--toleration",
        "nvidia.com/gpu:NoSchedule",
        "--resource",
        "nvidia.com/gpu=1",
        "--runtime-class",
        &gvisor,
        "--image-pull-secret",
        "regcred",
        "--workspace-size",
        "20Gi",
        "--label",
        "team=research",
        "--env-from-secret",
        "research-creds",
        "--isolate",
        "--allow-egress",
        "10.0.0.0/8:443",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stdout.contains("tok-not-printed") && !run.stderr.contains("tok-not-printed"));
    let pod_name = run.stdout.trim().to_owned();
    let pod = fx.pod(&pod_name).expect("the pod");
    let spec = serde_json::to_value(pod.spec.as_ref().unwrap()).unwrap();
    assert_eq!(spec["nodeSelector"]["nvidia.com/gpu.present"], "true");
    assert_eq!(
        spec["tolerations"][0],
        serde_json::json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
    );
    assert_eq!(spec["runtimeClassName"], gvisor.as_str());
    assert_eq!(
        spec["imagePullSecrets"],
        serde_json::json!([{"name": "regcred"}])
    );
    let agent = &spec["containers"][0];
    assert_eq!(agent["resources"]["limits"]["nvidia.com/gpu"], "1");
    assert_eq!(agent["resources"]["requests"]["nvidia.com/gpu"], "1");
    assert_eq!(agent["envFrom"][0]["secretRef"]["name"], "research-creds");
    let workspace = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "workspace")
        .unwrap()
        .clone();
    assert_eq!(
        workspace["persistentVolumeClaim"]["claimName"],
        format!("{pod_name}-workspace")
    );
    let labels = pod.metadata.labels.unwrap();
    assert_eq!(labels["team"], "research");
    assert_eq!(labels["apiary.dev/isolated"], "true");
    assert_eq!(fx.workspace_claims().len(), 1);
    assert_eq!(fx.network_policies().len(), 1);
}
