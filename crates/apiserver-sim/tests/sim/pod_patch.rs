//! The one update the simulator performs: a JSON merge patch of a pod's annotations through the
//! real `kube::Client` (`Api::patch` with `Patch::Merge`), applied with the stored
//! `metadata.resourceVersion` and refused with 409 `Conflict` for a stale one, as the apiserver
//! does; other patch types and fields are refused, and an injected fault on the `patch` verb
//! answers instead (what `apiary renew`'s conflict tests use).
//!
//! Layer: integration test over a loopback socket; it never contacts a real cluster.

use crate::common::kube_client::{api_reason, kube_client};
use apiary_apiserver_sim::{
    FaultAction, FaultRule, Matcher, Resource, SimOptions, Simulator, Verb,
};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

async fn setup() -> (Simulator, Api<Pod>) {
    let sim = Simulator::start(SimOptions::default().with_time_scale(1000.0))
        .await
        .expect("starts");
    let client = kube_client(&sim, "agents").await;
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "agents"}})).expect("ns");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    let pods: Api<Pod> = Api::namespaced(client, "agents");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "annotations": {"keep": "me"}},
        "spec": {"containers": [{"name": "agent", "image": "r.example/agent@sha256:00"}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("pod");
    (sim, pods)
}

/// The pod once the simulated kubelet has stopped writing its status (two reads 50 ms apart
/// show one resourceVersion), so a patch with the version read is not raced by a status write.
async fn settled(pods: &Api<Pod>) -> Pod {
    let mut last = pods.get("p").await.expect("get");
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let now = pods.get("p").await.expect("get");
        if now.metadata.resource_version == last.metadata.resource_version {
            return now;
        }
        last = now;
    }
    panic!("the pod's status kept changing: {last:?}");
}

/// The stored resourceVersion applies the annotation (others kept, version bumped); the old
/// one is then 409 `Conflict` and changes nothing.
#[tokio::test]
async fn merge_patch_of_annotations_is_guarded_by_the_resource_version() {
    let (_sim, pods) = setup().await;
    let before = settled(&pods).await;
    let rv = before.metadata.resource_version.clone().expect("rv");
    let patch = json!({"metadata": {"resourceVersion": rv, "annotations": {"apiary.dev/expires-at": "2026-08-02T04:00:00Z"}}});
    let after = pods
        .patch("p", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("applied");
    let annotations = after.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations.get("apiary.dev/expires-at").map(String::as_str),
        Some("2026-08-02T04:00:00Z")
    );
    assert_eq!(annotations.get("keep").map(String::as_str), Some("me"));
    assert_ne!(
        after.metadata.resource_version,
        before.metadata.resource_version
    );
    let stale = pods
        .patch("p", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect_err("stale version");
    assert_eq!(api_reason(&stale), (409, "Conflict".to_owned()));
    let missing = pods
        .patch("nope", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect_err("missing pod");
    assert_eq!(api_reason(&missing).0, 404);
}

/// Anything but an annotations merge patch is refused and changes nothing.
#[tokio::test]
async fn other_patches_are_refused() {
    let (_sim, pods) = setup().await;
    let spec = json!({"spec": {"activeDeadlineSeconds": 5}});
    let refused = pods
        .patch("p", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .expect_err("spec patch");
    assert_eq!(api_reason(&refused), (422, "Invalid".to_owned()));
    let strategic = json!({"metadata": {"annotations": {"a": "b"}}});
    let refused = pods
        .patch("p", &PatchParams::default(), &Patch::Strategic(&strategic))
        .await
        .expect_err("strategic patch");
    assert_eq!(api_reason(&refused).0, 415);
}

/// A fault on the `patch` verb answers in place of the model (renew's conflict retry tests).
#[tokio::test]
async fn a_patch_fault_answers_first() {
    let (sim, pods) = setup().await;
    sim.faults().add(FaultRule::times(
        1,
        Matcher::verb(Verb::Patch, Resource::Pods),
        FaultAction::Status {
            code: 409,
            reason: "Conflict".into(),
            message: "injected".into(),
        },
    ));
    let patch = json!({"metadata": {"annotations": {"a": "b"}}});
    let first = pods
        .patch("p", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect_err("injected");
    assert_eq!(api_reason(&first), (409, "Conflict".to_owned()));
    pods.patch("p", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("then applied");
}
