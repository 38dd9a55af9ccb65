//! The pod options of deploy.md § Pod options on the real node (crates/envtest/README.md § The
//! real node), where only a real kubelet and scheduler can show them: a private image pulled
//! with `--image-pull-secret` from the registry behind htpasswd (and the `401` without it),
//! `--runtime-class` with a RuntimeClass whose handler is containerd's `runc`, a PriorityClass
//! resolved by admission, a node selector the scheduler cannot satisfy, reported as the
//! scheduler wrote it, and a Secret referenced by `--env-from-secret` deleted after the deploy
//! checked it, reported from the kubelet's own `CreateContainerConfigError`.
//!
//! Test-only code: it decides nothing about apiary and never prints a credential.

use std::collections::BTreeMap;

use crate::common::node::{SLEEPER, Scene, deploy_args, pod_name, running};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, PostParams};

/// `--image-pull-secret` on a real kubelet: without the Secret the registry's `401` is reported
/// at once (E3, unauthorized); with a `kubernetes.io/dockerconfigjson` Secret holding the
/// registry's credentials the private image is pulled and the container runs.
#[test]
fn a_private_image_is_pulled_with_the_pull_secret() {
    let Some(scene) = Scene::new("pull-secret") else {
        return;
    };
    let image = scene.node.info().images.private.clone();
    assert!(
        image.starts_with("127.0.0.1:5001/private@sha256:"),
        "{image}"
    );
    let refused = scene.apiary(&deploy_args("no credentials", &image, SLEEPER, &[]));
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("is not authorized to pull"),
        "{refused:?}"
    );

    let (registry, user, password) = scene.node.info().private_registry();
    let auth = crate::common::base64(format!("{user}:{password}").as_bytes());
    let config = serde_json::json!({"auths": {registry: {"auth": auth}}}).to_string();
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("regcred".to_owned()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".to_owned()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_owned(),
            ByteString(config.into_bytes()),
        )])),
        ..Secret::default()
    };
    let secrets: Api<Secret> = Api::namespaced(scene.admin.clone(), &scene.namespace);
    scene
        .rt
        .block_on(secrets.create(&PostParams::default(), &secret))
        .expect("the pull Secret");
    let agent = "with credentials";
    let run = scene
        .apiary(&deploy_args(
            agent,
            &image,
            SLEEPER,
            &["--image-pull-secret", "regcred"],
        ))
        .ok();
    let pod = scene.pod(&pod_name(agent)).expect("the pod");
    assert!(running(Some(&pod)), "{run:?}");
    assert!(!run.stderr.contains(&password), "the password never shows");
}

/// `--runtime-class` and `--priority-class` on a real node: a RuntimeClass whose handler is
/// `runc` runs the container; the PriorityClass's value is resolved into `spec.priority` by
/// admission; both names stay on the pod.
#[test]
fn runtime_class_and_priority_class_reach_a_running_pod() {
    let Some(scene) = Scene::new("runtime-class") else {
        return;
    };
    let suffix = std::process::id();
    let runtime_class = format!("apiary-runc-{suffix}");
    let priority_class = format!("apiary-high-{suffix}");
    let create = |api_version: &str, kind: &str, plural: &str, body: serde_json::Value| {
        let (group, version) = api_version.split_once('/').expect("a group");
        let resource = kube::api::ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            plural: plural.to_owned(),
        };
        let api: Api<DynamicObject> = Api::all_with(scene.admin.clone(), &resource);
        let object: DynamicObject = serde_json::from_value(body).expect("an object");
        scene
            .rt
            .block_on(api.create(&PostParams::default(), &object))
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
    };
    create(
        "node.k8s.io/v1",
        "RuntimeClass",
        "runtimeclasses",
        serde_json::json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": runtime_class}, "handler": "runc"}),
    );
    create(
        "scheduling.k8s.io/v1",
        "PriorityClass",
        "priorityclasses",
        serde_json::json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": priority_class}, "value": 1000}),
    );
    let agent = "isolated agent";
    let image = scene.image();
    scene
        .apiary(&deploy_args(
            agent,
            &image,
            SLEEPER,
            &[
                "--runtime-class",
                &runtime_class,
                "--priority-class",
                &priority_class,
            ],
        ))
        .ok();
    let pod = scene.pod(&pod_name(agent)).expect("the pod");
    assert!(running(Some(&pod)));
    let spec = pod.spec.as_ref().expect("a spec");
    assert_eq!(
        spec.runtime_class_name.as_deref(),
        Some(runtime_class.as_str())
    );
    assert_eq!(
        spec.priority_class_name.as_deref(),
        Some(priority_class.as_str())
    );
    assert_eq!(spec.priority, Some(1000), "admission resolved the class");
}

/// Sent as is, decided by the cluster: a node selector no node satisfies leaves the pod
/// unscheduled, and the deploy ends at its deadline with the scheduler's own condition; a
/// selector and a label the node has schedule and run it.
#[test]
fn node_selectors_are_decided_by_the_real_scheduler() {
    let Some(scene) = Scene::new("node-selector") else {
        return;
    };
    let image = scene.image();
    let stuck = scene.apiary(&deploy_args(
        "nowhere",
        &image,
        SLEEPER,
        &[
            "--node-selector",
            "example.com/pool=gpu",
            "--timeout",
            "10s",
        ],
    ));
    assert_eq!(stuck.code, 1, "{stuck:?}");
    assert!(stuck.stderr.contains("PodScheduled is false"), "{stuck:?}");
    assert!(
        stuck.stderr.contains("didn't match"),
        "the scheduler's words: {stuck:?}"
    );
    // deploy.md § Output rules, rule 5: the scheduler's reason is on a progress line as soon as
    // the pod condition reports it, before the final error, at the default verbosity.
    let progress = stuck
        .stderr
        .lines()
        .position(|l| l.starts_with("deploying ") && l.contains("PodScheduled is false"));
    let error = stuck.stderr.lines().position(|l| l.starts_with("error:"));
    assert!(
        progress.is_some() && progress < error,
        "a progress line with the reason before the error: {stuck:?}"
    );
    let agent = "placed";
    scene
        .apiary(&deploy_args(
            agent,
            &image,
            SLEEPER,
            &[
                "--node-selector",
                "kubernetes.io/hostname=apiary-node-1",
                "--toleration",
                "example.com/dedicated=agents:NoSchedule",
                "--label",
                "team=ml",
            ],
        ))
        .ok();
    assert!(running(scene.pod(&pod_name(agent)).as_ref()));
    let listed = scene
        .apiary(&["-o", "json", "list", "--selector", "team=ml"])
        .ok()
        .json();
    assert_eq!(listed[0]["agent"], agent, "{listed}");
}

/// deploy.md § Credentials from the cluster, on a real kubelet: the referenced Secret exists when
/// the deploy checks it and is deleted before the kubelet creates the container (the pod waits
/// for a node label until then, so the order is certain). The kubelet's real
/// `CreateContainerConfigError` (`secret "<name>" not found`) ends the deploy at once with E14,
/// the pod kept; once the Secret exists again the kubelet starts it. No value is printed.
#[test]
fn a_referenced_secret_deleted_after_the_check_is_reported_from_the_kubelet() {
    let Some(scene) = Scene::new("env-secret-gone") else {
        return;
    };
    let value = "sk-node-value-41aa";
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("team-creds".to_owned()),
            ..Default::default()
        },
        string_data: Some(BTreeMap::from([("TOKEN".to_owned(), value.to_owned())])),
        ..Secret::default()
    };
    let secrets: Api<Secret> = Api::namespaced(scene.admin.clone(), &scene.namespace);
    let create = || {
        scene
            .rt
            .block_on(secrets.create(&PostParams::default(), &secret))
            .expect("the team's Secret")
    };
    create();
    let label = format!("apiary-test/env-secret-{}", std::process::id());
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(scene.admin.clone());
    let set_label = |value: serde_json::Value| {
        let patch = serde_json::json!({"metadata": {"labels": {label.clone(): value}}});
        scene
            .rt
            .block_on(nodes.patch(
                "apiary-node-1",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(patch),
            ))
            .expect("label the node");
    };
    let agent = "env secret gone";
    let selector = format!("{label}=yes");
    let (child, began) = scene.spawn(&deploy_args(
        agent,
        &scene.image(),
        SLEEPER,
        &[
            "--env-from-secret",
            "team-creds",
            "--env-secret",
            "API_TOKEN=team-creds/TOKEN",
            "--node-selector",
            &selector,
        ],
    ));
    let name = pod_name(agent);
    scene.wait_pod(&name, "created (after the check)", |pod| pod.is_some());
    scene
        .rt
        .block_on(secrets.delete("team-creds", &Default::default()))
        .expect("delete the Secret");
    set_label(serde_json::json!("yes"));
    let run = crate::common::node::finish(child, began);
    set_label(serde_json::Value::Null);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("secret team-creds"), "{run:?}");
    assert!(run.stderr.contains("the pod is kept"), "{run:?}");
    assert!(!run.stderr.contains(value) && !run.stdout.contains(value));
    let pod = scene.pod(&name).expect("the pod is kept");
    let waiting = crate::common::node::agent_status(&pod)
        .and_then(|s| s.state.as_ref())
        .and_then(|s| s.waiting.as_ref())
        .expect("waiting");
    assert_eq!(
        waiting.reason.as_deref(),
        Some("CreateContainerConfigError")
    );
    assert_eq!(
        waiting.message.as_deref(),
        Some("secret \"team-creds\" not found")
    );
    create();
    scene.wait_pod(&name, "started once the Secret exists", running);
}

/// Whether the `agent` container of `pod` has terminated.
fn ended(pod: Option<&k8s_openapi::api::core::v1::Pod>) -> bool {
    pod.and_then(crate::common::node::agent_status)
        .and_then(|s| s.state.as_ref())
        .is_some_and(|s| s.terminated.is_some())
}

/// deploy.md § Persistent workspace on a real node: a claim bound (by the real volume
/// controller) to a hostPath volume the test provides, mounted at the workspace; each run
/// appends a line and exits, so the data written by the first pod is read by the pod a crash
/// revival creates and by the pod a `--replace` creates; `undeploy --delete-workspace` removes
/// the claim once the pod is gone.
#[test]
fn a_workspace_keeps_its_data_across_a_crash_revival_and_a_replace() {
    use k8s_openapi::api::core::v1::{
        HostPathVolumeSource, PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec, Pod,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use kube::api::{DeleteParams, LogParams};
    use std::os::unix::fs::PermissionsExt as _;

    let Some(scene) = Scene::new("workspace") else {
        return;
    };
    let class = format!("apiary-ws-{}", &*scene.namespace);
    let dir = tempfile::tempdir().expect("a volume directory");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
        .expect("writable by the agent's user");
    let volume = PersistentVolume {
        metadata: kube::api::ObjectMeta {
            name: Some(class.clone()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(BTreeMap::from([(
                "storage".to_owned(),
                Quantity("16Mi".to_owned()),
            )])),
            access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
            storage_class_name: Some(class.clone()),
            persistent_volume_reclaim_policy: Some("Retain".to_owned()),
            host_path: Some(HostPathVolumeSource {
                path: dir.path().display().to_string(),
                type_: Some("Directory".to_owned()),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let volumes: Api<PersistentVolume> = Api::all(scene.admin.clone());
    scene
        .rt
        .block_on(volumes.create(&PostParams::default(), &volume))
        .expect("the volume");

    let agent = "with a workspace";
    let name = pod_name(agent);
    let script = "echo run >> /home/agent/runs; cat /home/agent/runs; sleep 4; exit 1";
    let extra = ["--workspace-size", "8Mi", "--storage-class", class.as_str()];
    let lines = |scene: &Scene| {
        let pods: Api<Pod> = Api::namespaced(scene.admin.clone(), &scene.namespace);
        let log = scene
            .rt
            .block_on(pods.logs(&name, &LogParams::default()))
            .expect("the log");
        log.lines().filter(|l| *l == "run").count()
    };
    scene
        .apiary(&deploy_args(agent, &scene.image(), script, &extra))
        .ok();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(scene.admin.clone(), &scene.namespace);
    let claim_name = format!("{name}-workspace");
    let claim = scene
        .rt
        .block_on(claims.get(&claim_name))
        .expect("the claim");
    assert_eq!(
        claim.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Bound")
    );
    assert_eq!(
        claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()),
        Some(class.as_str())
    );
    scene.wait_pod(&name, "the first run ends", ended);
    assert_eq!(lines(&scene), 1);

    // Crash revival: the terminated pod is replaced by a new one on the same claim.
    let first = crate::common::node::uid(&scene.pod(&name).expect("the pod"));
    scene
        .apiary(&deploy_args(agent, &scene.image(), script, &extra))
        .ok();
    let revived = scene.pod(&name).expect("the revived pod");
    assert_ne!(crate::common::node::uid(&revived), first);
    scene.wait_pod(&name, "the revived run ends", ended);
    assert_eq!(
        lines(&scene),
        2,
        "the first run's line survived the revival"
    );

    // --replace with another configuration (a label): again the same claim.
    let image = scene.image();
    let mut replacing = deploy_args(agent, &image, script, &extra);
    replacing.extend(["--label", "team=storage", "--replace"]);
    scene.apiary(&replacing).ok();
    scene.wait_pod(&name, "the replaced run ends", ended);
    assert_eq!(lines(&scene), 3, "both earlier lines survived the replace");
    let same = scene
        .rt
        .block_on(claims.get(&claim_name))
        .expect("the claim");
    assert_eq!(same.metadata.uid, claim.metadata.uid, "never recreated");

    let gone = scene
        .apiary(&["undeploy", agent, "--delete-workspace"])
        .ok();
    assert!(
        gone.stdout
            .contains(&format!("persistentvolumeclaim/{claim_name} deleted")),
        "{gone:?}"
    );
    let began = std::time::Instant::now();
    while scene
        .rt
        .block_on(claims.get_opt(&claim_name))
        .expect("claim read")
        .is_some()
    {
        assert!(
            began.elapsed() < std::time::Duration::from_secs(60),
            "the claim goes once its pod is gone"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(
        std::fs::read_to_string(dir.path().join("runs"))
            .expect("the data stays on the volume (Retain)")
            .lines()
            .count()
            == 3
    );
    scene
        .rt
        .block_on(volumes.delete(&class, &DeleteParams::default()))
        .expect("the volume is removed");
}
