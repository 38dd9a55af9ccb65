//! Waiting for a pod change through the real `kube::Client` over a mock service (deploy.md
//! § Cluster interface and requests, the optional pod watch): the watch request's shape, an
//! early return on an event, and the fall-back to sleeping when the watch is refused, fails or
//! brings nothing. Also the `elapsed` clock. Runs on Tokio's paused clock; contacts no network.

use std::time::Duration;

use crate::mock::{self, Answer, cluster, status};
use apiary_substrate::Substrate;
use tokio::time::Instant;

fn event(kind: &str) -> String {
    event_at(kind, "43")
}

fn event_at(kind: &str, resource_version: &str) -> String {
    serde_json::json!({
        "type": kind,
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "agent-x", "resourceVersion": resource_version}},
    })
    .to_string()
}

/// The bound every wait here is given.
const MAX: Duration = Duration::from_secs(2);

/// How long one wait for a change of `agent-x`, from `resource_version` and bounded by [`MAX`],
/// took on the paused clock.
async fn timed_wait(cluster: &impl Substrate, resource_version: Option<&str>) -> Duration {
    let started = Instant::now();
    cluster
        .wait_for_pod_change("agent-x", resource_version, MAX)
        .await;
    started.elapsed()
}

/// The wait slept out its whole bound and no longer.
fn assert_slept_out_max(waited: Duration) {
    assert!(waited >= MAX, "{waited:?}");
    assert!(waited < MAX + Duration::from_millis(100), "{waited:?}");
}

/// The request's query holds every one of `parts`.
fn assert_query_has(request: &mock::Captured, parts: &[&str]) {
    for part in parts {
        assert!(request.query().contains(part), "{part}: {}", request.uri);
    }
}

/// The watch names the one pod by field selector, starts at the observed resourceVersion, and
/// asks the server to keep it open for the longest deploy (600 s, no bookmarks), so the next
/// wait can read on from it; the wait itself ends at its bound on the client side.
#[tokio::test(start_paused = true)]
async fn watch_request_shape() {
    let (cluster, log) = cluster(vec![Answer::StreamThenHang(vec![event("MODIFIED")])]);
    timed_wait(&cluster, Some("42")).await;
    let request = log.only();
    assert_eq!(request.method, "GET");
    assert_eq!(request.path(), "/api/v1/namespaces/agents/pods");
    assert_query_has(
        &request,
        &[
            "watch=true",
            "fieldSelector=metadata.name%3Dagent-x",
            "resourceVersion=42",
            "timeoutSeconds=600",
        ],
    );
    let query = request.query();
    assert!(!query.contains("allowWatchBookmarks"), "{query}");
    assert!(!query.contains("labelSelector"), "{query}");
}

/// Without an observed resourceVersion the pod's current state is read first and the watch
/// starts after it, so the replay of that state cannot wake the wait at once (deploy.md
/// § Create: pause before re-observing a just-created pod).
#[tokio::test(start_paused = true)]
async fn watch_without_resource_version_starts_after_a_baseline_read() {
    let (cluster, log) = cluster(vec![
        mock::ok(mock::pod_json("agent-x", "u1", "77")),
        Answer::StreamThenHang(vec![event("MODIFIED")]),
    ]);
    timed_wait(&cluster, None).await;
    let requests = log.all();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].path(), "/api/v1/namespaces/agents/pods/agent-x");
    assert!(
        !requests[0].query().contains("resourceVersion"),
        "quorum read"
    );
    assert_query_has(&requests[1], &["watch=true", "resourceVersion=77"]);
}

/// Without an observed resourceVersion and with the pod absent, the watch sends none (not an
/// empty one): its appearance is the change.
#[tokio::test(start_paused = true)]
async fn watch_for_an_absent_pod_sends_no_resource_version() {
    let (cluster, log) = cluster(vec![
        status(404, "NotFound"),
        Answer::StreamThenHang(vec![event("ADDED")]),
    ]);
    timed_wait(&cluster, None).await;
    let requests = log.all();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let watch = &requests[1];
    assert!(!watch.query().contains("resourceVersion"), "{}", watch.uri);
    assert!(
        watch
            .query()
            .ends_with("fieldSelector=metadata.name%3Dagent-x"),
        "{}",
        watch.uri
    );
}

/// An event wakes the wait at once, long before `max`.
#[tokio::test(start_paused = true)]
async fn returns_early_on_an_event() {
    for kind in ["ADDED", "MODIFIED", "DELETED"] {
        let (cluster, _log) = cluster(vec![Answer::StreamThenHang(vec![event(kind)])]);
        let waited = timed_wait(&cluster, Some("42")).await;
        assert!(waited < Duration::from_millis(100), "{kind}: {waited:?}");
    }
}

/// A quiet watch (only a bookmark, then silence) waits the whole `max` and no longer.
#[tokio::test(start_paused = true)]
async fn quiet_watch_waits_max() {
    let bookmark = serde_json::json!({
        "type": "BOOKMARK",
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": "50"}},
    })
    .to_string();
    let (cluster, _log) = cluster(vec![Answer::StreamThenHang(vec![bookmark])]);
    assert_slept_out_max(timed_wait(&cluster, Some("42")).await);
}

/// A refused watch (403, no `watch` permission) falls back to sleeping `max`.
#[tokio::test(start_paused = true)]
async fn refused_watch_sleeps_max() {
    let (cluster, log) = cluster(vec![status(403, "Forbidden")]);
    assert_slept_out_max(timed_wait(&cluster, Some("42")).await);
    assert_eq!(log.count(), 1, "a refused watch is not retried");
}

/// A watch ending with an ERROR event (410 Gone) or a dropped connection falls back to
/// sleeping out `max`.
#[tokio::test(start_paused = true)]
async fn failed_watch_sleeps_out_max() {
    let gone = serde_json::json!({
        "type": "ERROR",
        "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410, "message": "too old resource version"},
    })
    .to_string();
    for answer in [
        Answer::StreamThenHang(vec![gone]),
        Answer::Drop,
        Answer::Stream(vec![]),
    ] {
        let (cluster, _log) = cluster(vec![answer]);
        assert_slept_out_max(timed_wait(&cluster, Some("42")).await);
    }
}

/// `now` is one monotonic reading from construction: it never restarts, so two operations on
/// one `Cluster` each anchor their own deadline at their first reading.
#[tokio::test(start_paused = true)]
async fn now_is_monotonic_from_construction() {
    let (cluster, _log) = cluster(vec![]);
    let first = cluster.now();
    cluster.sleep(Duration::from_secs(5)).await;
    let second = cluster.now();
    assert!(
        second >= first + Duration::from_secs(5),
        "{first:?} {second:?}"
    );
    cluster.sleep(Duration::from_secs(2)).await;
    assert!(cluster.now() >= second + Duration::from_secs(2));
}

/// deploy.md § Loop (one watch serves every wait): consecutive waits on one pod read on from the
/// watch the first opened. An event the caller's read already reflects (its resourceVersion is the
/// one passed in, or comes before it in the stream) never wakes a wait; the next one does.
#[tokio::test(start_paused = true)]
async fn one_watch_serves_consecutive_waits() {
    let (cluster, log) = cluster(vec![Answer::StreamThenHang(vec![
        event_at("MODIFIED", "43"),
        event_at("MODIFIED", "44"),
        event_at("MODIFIED", "45"),
    ])]);
    let woken = timed_wait(&cluster, Some("42")).await;
    assert!(woken < MAX, "woken by 43: {woken:?}");
    // The caller's re-read saw 44: 43 and 44 are old news, 45 wakes.
    let woken = timed_wait(&cluster, Some("44")).await;
    assert!(woken < MAX, "woken by 45: {woken:?}");
    // Then 45 was read: nothing new arrives, so the whole bound passes.
    let waited = timed_wait(&cluster, Some("45")).await;
    assert!(waited >= MAX, "{waited:?}");
    assert_eq!(
        log.count(),
        1,
        "one watch for the three waits: {:?}",
        log.all()
    );
}

/// deploy.md § Loop (no baseline re-read a create already answers): the wait right after this
/// `Cluster`'s own pod create watches from the resourceVersion the create answered, without a GET
/// first.
#[tokio::test(start_paused = true)]
async fn the_wait_after_a_create_starts_from_the_created_resource_version() {
    let (cluster, log) = cluster(vec![
        mock::created(mock::pod_json("agent-x", "u1", "77")),
        Answer::StreamThenHang(vec![event_at("MODIFIED", "78")]),
    ]);
    let pod: k8s_openapi::api::core::v1::Pod =
        serde_json::from_value(mock::pod_json("agent-x", "u1", "")).expect("a pod");
    cluster.create_pod(&pod).await.expect("created");
    assert!(timed_wait(&cluster, None).await < MAX, "woken by 78");
    let requests = log.all();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].method, "POST");
    assert_query_has(&requests[1], &["watch=true", "resourceVersion=77"]);
}

/// A watch the server ends (its timeout) is reopened by the next wait from the last position it
/// delivered, and that wait wakes on the new watch's event.
#[tokio::test(start_paused = true)]
async fn an_ended_watch_is_reopened() {
    let (cluster, log) = cluster(vec![
        Answer::Stream(vec![event_at("MODIFIED", "43")]),
        Answer::StreamThenHang(vec![event_at("MODIFIED", "50")]),
    ]);
    timed_wait(&cluster, Some("42")).await;
    timed_wait(&cluster, Some("43")).await;
    let requests = log.all();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_query_has(&requests[1], &["resourceVersion=43"]);
}
