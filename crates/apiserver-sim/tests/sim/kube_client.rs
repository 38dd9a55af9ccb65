//! The real `kube::Client`, configured from the simulator's kubeconfig YAML, against the
//! simulator: typed create/get/list/delete/watch calls map onto the shapes kube-rs expects
//! (`Error::Api` with the literal reason, `Left(pod)` for a graceful delete, `Right(Status)` for a
//! removed Secret, a 410 ERROR event as `WatchEvent::Error`), and raw `Client::send` sees the
//! `Date` header. This is the compatibility substrate-kube and the CLI build on.
//!
//! Layer: integration test (kube is a dev-dependency only); it never contacts a real cluster.

use std::time::Duration;

use crate::common::kube_client::{api_reason, kube_client};
use apiary_apiserver_sim::{SimOptions, Simulator};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use kube::api::{
    Api, DeleteParams, ListParams, PostParams, Preconditions, WatchEvent, WatchParams,
};
use serde_json::json;

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "agent"}},
        "spec": {
            "terminationGracePeriodSeconds": 60,
            "containers": [{"name": "agent", "image": "r.example/agent@sha256:00"}],
        },
    }))
    .expect("pod")
}

/// Typed calls: AlreadyExists and Conflict arrive as `Error::Api` with their literal reasons; a
/// running pod's delete is `Left` with a deletion mark, a Secret's is `Right(Status)`.
#[tokio::test]
async fn typed_calls_map_like_the_apiserver() {
    let sim = Simulator::start(SimOptions::default().with_time_scale(1000.0))
        .await
        .expect("starts");
    let client = kube_client(&sim, "agents").await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "agents"}})).expect("ns");
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("created");
    let again = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect_err("exists");
    assert_eq!(api_reason(&again), (409, "AlreadyExists".to_owned()));

    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let created = pods
        .create(&PostParams::default(), &pod("p"))
        .await
        .expect("created");
    let uid = created.metadata.uid.clone().expect("uid");
    let missing = pods.get("nope").await.expect_err("absent");
    assert_eq!(api_reason(&missing), (404, "NotFound".to_owned()));
    let running = loop {
        let p = pods.get("p").await.expect("get");
        if p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running") {
            break p;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let listed = pods
        .list(&ListParams::default().labels("app=agent"))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 1);

    let stale = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.clone()),
            resource_version: created.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    let conflict = pods.delete("p", &stale).await.expect_err("stale fence");
    assert_eq!(api_reason(&conflict), (409, "Conflict".to_owned()));
    let fenced = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: running.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    let answered = pods.delete("p", &fenced).await.expect("deleted");
    let marked = answered.left().expect("a graceful delete answers the pod");
    assert!(marked.metadata.deletion_timestamp.is_some());

    let secrets: Api<Secret> = Api::default_namespaced(client);
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "immutable": true}))
            .expect("secret");
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("created");
    let gone = secrets
        .delete("s", &DeleteParams::default())
        .await
        .expect("deleted");
    let status = gone.right().expect("a removed Secret answers a Status");
    assert_eq!(
        status.status,
        Some(kube::core::response::StatusSummary::Success)
    );
}

/// `Api::watch` sees ADDED for a new pod, and a compacted resourceVersion arrives as
/// `WatchEvent::Error` with code 410 (what `kube::runtime::watcher` relists on).
#[tokio::test]
async fn watch_events_and_410() {
    let sim = Simulator::start(SimOptions::default().with_time_scale(1000.0))
        .await
        .expect("starts");
    sim.ensure_namespace("agents");
    let client = kube_client(&sim, "agents").await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    let list = pods.list(&ListParams::default()).await.expect("list");
    let rv = list.metadata.resource_version.expect("list rv");
    let params = WatchParams::default().fields("metadata.name=w").timeout(5);
    let mut stream = pods
        .watch(&params, &rv)
        .await
        .expect("watch starts")
        .boxed();
    pods.create(&PostParams::default(), &pod("w"))
        .await
        .expect("created");
    let first = stream
        .try_next()
        .await
        .expect("event")
        .expect("stream open");
    match first {
        WatchEvent::Added(p) => assert_eq!(p.metadata.name.as_deref(), Some("w")),
        other => panic!("expected ADDED, got {other:?}"),
    }
    sim.with_model(|m| m.compact());
    let mut old = pods
        .watch(&params, "1")
        .await
        .expect("watch starts")
        .boxed();
    match old.next().await {
        Some(Ok(WatchEvent::Error(e))) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

/// `Client::send` returns the whole response, so the Date header (the server clock) is readable.
#[tokio::test]
async fn raw_send_sees_the_date_header() {
    let sim = Simulator::start(SimOptions::default())
        .await
        .expect("starts");
    sim.ensure_namespace("agents");
    let client = kube_client(&sim, "agents").await;
    let req = http::Request::get("/api/v1/namespaces/agents/pods?labelSelector=app%3Dagent")
        .body(kube::client::Body::empty())
        .expect("request");
    let resp = client.send(req).await.expect("sent");
    assert_eq!(resp.status(), 200);
    let date = resp
        .headers()
        .get(http::header::DATE)
        .expect("Date")
        .to_str()
        .expect("ASCII");
    assert!(date.ends_with(" GMT"), "{date}");
}
