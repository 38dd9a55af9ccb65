//! Watch streams over plain HTTP: resourceVersion-tracked JSON lines (ADDED, MODIFIED, DELETED),
//! the snapshot start, field and label selectors (objects entering or leaving the filter read as
//! ADDED or DELETED), BOOKMARK events, `timeoutSeconds`, the ERROR event with a 410 Status for a
//! too-old resourceVersion (seeds.md § Watch mode, deploy.md § Cluster interface and requests) and
//! the `watch=1` spelling.
//!
//! Layer: integration tests over a loopback socket; they never contact a real cluster.

use std::time::{Duration, Instant};

use crate::common::{BROKEN, IMAGE, Watch, call, create_namespace, create_pod, get, pod_body};
use apiary_apiserver_sim::{SimOptions, Simulator};
use apiary_cluster_model::kubelet::PodScript;
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/agents/pods";

async fn fast() -> Simulator {
    let s = Simulator::start(SimOptions::default().with_time_scale(1000.0))
        .await
        .expect("simulator starts");
    create_namespace(s.addr(), "agents").await;
    s
}

fn rv_of(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .parse()
        .expect("numeric rv")
}

/// The pod list's resourceVersion now: where a watch starts to see only what follows.
async fn list_rv(s: &Simulator) -> String {
    get(s.addr(), PODS).await.json()["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_owned()
}

/// A pod watch from the list's resourceVersion now, with `query` added to the request.
async fn watch_from_now(s: &Simulator, query: &str) -> Watch {
    let from = list_rv(s).await;
    Watch::open(
        s.addr(),
        &format!("{PODS}?watch=true&resourceVersion={from}{query}"),
    )
    .await
}

/// A watch from a list's resourceVersion reports the pod's whole life in order: ADDED, MODIFIED
/// (scheduling, start, deletion mark), DELETED — with increasing resourceVersions.
#[tokio::test]
async fn watch_from_list_rv_reports_the_pod_lifecycle() {
    let s = fast().await;
    let mut w = watch_from_now(&s, "").await;
    assert_eq!(w.status, 200);
    assert_eq!(w.headers["content-type"], "application/json");
    assert!(
        w.headers.contains_key("date"),
        "a watch response carries Date too"
    );
    create_pod(s.addr(), "agents", &pod_body("p", IMAGE, json!({}))).await;
    let added = w.next().await;
    assert_eq!(added["type"], "ADDED");
    assert_eq!(added["object"]["kind"], "Pod");
    assert_eq!(added["object"]["metadata"]["name"], "p");
    let mut last = rv_of(&added["object"]);
    loop {
        let e = w.next().await;
        assert_eq!(e["type"], "MODIFIED");
        assert!(rv_of(&e["object"]) > last);
        last = rv_of(&e["object"]);
        if e["object"]["status"]["phase"] == "Running" {
            break;
        }
    }
    let r = call(s.addr(), "DELETE", &format!("{PODS}/p"), None).await;
    assert_eq!(r.status, 200);
    let marked = w.next().await;
    assert_eq!(marked["type"], "MODIFIED");
    assert!(marked["object"]["metadata"]["deletionTimestamp"].is_string());
    let deleted = w.next().await;
    assert_eq!(deleted["type"], "DELETED");
    assert!(rv_of(&deleted["object"]) > rv_of(&marked["object"]));
}

/// Without a resourceVersion a watch starts with synthetic ADDED events for existing objects.
#[tokio::test]
async fn watch_without_rv_starts_with_the_current_objects() {
    let s = fast().await;
    for n in ["a", "b"] {
        create_pod(
            s.addr(),
            "agents",
            &pod_body(n, "r.example/never-starts@sha256:00", json!({})),
        )
        .await;
    }
    let mut w = Watch::open(s.addr(), &format!("{PODS}?watch=1")).await;
    let first = w.next().await;
    let second = w.next().await;
    assert_eq!(
        (first["type"].as_str(), second["type"].as_str()),
        (Some("ADDED"), Some("ADDED"))
    );
    assert_eq!(first["object"]["metadata"]["name"], "a");
    assert_eq!(second["object"]["metadata"]["name"], "b");
}

/// A field selector on the name sees only that pod (the wait-for-change watch of deploy.md
/// § Cluster interface and requests).
#[tokio::test]
async fn field_selector_on_name_filters_events() {
    let s = fast().await;
    s.with_model(|m| m.set_default_script(Some(PodScript::NeverStarts)));
    let mut w = watch_from_now(&s, "&fieldSelector=metadata.name%3Dmine&timeoutSeconds=1").await;
    create_pod(s.addr(), "agents", &pod_body("other", IMAGE, json!({}))).await;
    create_pod(s.addr(), "agents", &pod_body("mine", IMAGE, json!({}))).await;
    let mut names = Vec::new();
    while let Ok(Some(e)) = w.next_within(Duration::from_secs(3)).await {
        names.push(
            e["object"]["metadata"]["name"]
                .as_str()
                .expect("name")
                .to_owned(),
        );
    }
    assert!(!names.is_empty());
    assert!(names.iter().all(|n| n == "mine"), "{names:?}");
}

/// An object entering a selector reads as ADDED and one leaving it as DELETED, as the
/// apiserver's filtered watch presents them.
#[tokio::test]
async fn objects_entering_and_leaving_a_selector() {
    let s = fast().await;
    s.with_model(|m| m.set_default_script(Some(PodScript::Inert)));
    create_pod(s.addr(), "agents", &pod_body("p", IMAGE, json!({}))).await;
    let mut w = watch_from_now(&s, "&fieldSelector=status.phase%3DRunning").await;
    s.with_model(|m| m.start_pod("agents", "p"))
        .expect("started");
    let entered = w.next().await;
    assert_eq!(entered["type"], "ADDED");
    assert_eq!(entered["object"]["status"]["phase"], "Running");
    s.with_model(|m| m.terminate_pod("agents", "p", 2))
        .expect("terminated");
    let left = w.next().await;
    assert_eq!(left["type"], "DELETED");
    assert_eq!(left["object"]["status"]["phase"], "Failed");
}

/// A resourceVersion older than the retained history gets a 200 stream holding one ERROR event
/// with a 410 `Expired` Status, then the stream ends (seeds.md § Watch mode, item 4).
#[tokio::test]
async fn too_old_resource_version_is_an_error_event_with_410() {
    let s = fast().await;
    create_pod(s.addr(), "agents", &pod_body("p", IMAGE, json!({}))).await;
    s.with_model(|m| m.compact());
    let mut w = Watch::open(s.addr(), &format!("{PODS}?watch=true&resourceVersion=1")).await;
    assert_eq!(w.status, 200);
    let e = w.next().await;
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["kind"], "Status");
    assert_eq!(e["object"]["status"], "Failure");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
    assert!(
        e["object"]["message"]
            .as_str()
            .expect("message")
            .starts_with("too old resource version: 1")
    );
    assert_eq!(
        w.next_within(Duration::from_secs(2)).await,
        Ok(None),
        "the stream ends"
    );
}

/// `timeoutSeconds` (real seconds) ends the stream; with bookmarks allowed the last event is a
/// BOOKMARK carrying the resourceVersion to resume from.
#[tokio::test]
async fn timeout_ends_the_stream_with_a_final_bookmark() {
    let s = fast().await;
    let began = Instant::now();
    let mut w = Watch::open(
        s.addr(),
        &format!("{PODS}?watch=true&resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=1"),
    )
    .await;
    let mut last = None;
    loop {
        match w.next_within(Duration::from_secs(3)).await {
            Ok(Some(e)) => last = Some(e),
            Ok(None) => break,
            Err(e) => panic!("{e}"),
        }
    }
    // Not before its second (the upper end is only the hang guard of `next_within`).
    let took = began.elapsed();
    assert!(took >= Duration::from_millis(950), "{took:?}");
    let last = last.expect("a final bookmark");
    assert_eq!(last["type"], "BOOKMARK");
    assert_eq!(last["object"]["kind"], "Pod");
    assert_eq!(last["object"]["apiVersion"], "v1");
    assert!(rv_of(&last["object"]) >= 1);
}

/// Bookmarks arrive periodically when allowed, and never when not.
#[tokio::test]
async fn bookmarks_only_when_allowed() {
    let s = Simulator::start(
        SimOptions::default()
            .with_time_scale(1000.0)
            .with_bookmark_interval(Duration::from_millis(30)),
    )
    .await
    .expect("starts");
    create_namespace(s.addr(), "agents").await;
    let mut with = Watch::open(
        s.addr(),
        &format!("{PODS}?watch=true&resourceVersion=1&allowWatchBookmarks=true"),
    )
    .await;
    let b = with.next().await;
    assert_eq!(b["type"], "BOOKMARK");
    let mut without = Watch::open(s.addr(), &format!("{PODS}?watch=true&resourceVersion=1")).await;
    assert!(
        without
            .next_within(Duration::from_millis(150))
            .await
            .is_err(),
        "no event at all"
    );
}

/// Secrets are watchable too.
#[tokio::test]
async fn secrets_watch() {
    let s = fast().await;
    let mut w = Watch::open(s.addr(), "/api/v1/namespaces/agents/secrets?watch=true").await;
    let r = call(
        s.addr(),
        "POST",
        "/api/v1/namespaces/agents/secrets",
        Some(&json!({"metadata": {"name": "s"}})),
    )
    .await;
    assert_eq!(r.status, 201);
    let e = w.next().await;
    assert_eq!(e["type"], "ADDED");
    assert_eq!(e["object"]["kind"], "Secret");
}

/// `end_watches` ends open streams normally (the client re-opens from its resourceVersion);
/// `break_watches` aborts them mid-stream, which the client sees as a transport failure.
#[tokio::test]
async fn streams_can_be_ended_or_broken() {
    let s = fast().await;
    let mut ended = Watch::open(s.addr(), &format!("{PODS}?watch=true&resourceVersion=1")).await;
    s.end_watches();
    assert_eq!(ended.next_within(Duration::from_secs(2)).await, Ok(None));
    let mut broken = Watch::open(s.addr(), &format!("{PODS}?watch=true&resourceVersion=1")).await;
    s.break_watches();
    assert_eq!(
        broken.next_within(Duration::from_secs(2)).await,
        Err(BROKEN)
    );
}
