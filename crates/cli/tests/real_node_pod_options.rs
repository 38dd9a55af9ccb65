//! The pod options of deploy.md § Pod options on the real node (crates/envtest/README.md § The
//! real node), where only a real kubelet and scheduler can show them: a private image pulled
//! with `--image-pull-secret` from the registry behind htpasswd (and the `401` without it),
//! `--runtime-class` with a RuntimeClass whose handler is containerd's `runc`, a PriorityClass
//! resolved by admission, and a node selector the scheduler cannot satisfy, reported as the
//! scheduler wrote it.
//!
//! Test-only code: it decides nothing about apiary and never prints a credential.

mod common;

use std::collections::BTreeMap;

use common::node::{SLEEPER, Scene, deploy_args, pod_name, running};
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
    let auth = common::base64(format!("{user}:{password}").as_bytes());
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
