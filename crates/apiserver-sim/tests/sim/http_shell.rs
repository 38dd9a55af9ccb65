//! The simulator's HTTP shell, pinned with plain HTTP: the `Date` header on every response (and
//! its omit/garble faults), discovery documents, `Status` shapes for unknown paths and methods,
//! every fault action, the request log and the kubeconfig file.
//!
//! Layer: integration tests over a loopback socket. They must not depend on object behaviour
//! (that is `objects.rs`) and never contact a real cluster.

use std::time::Duration;

use crate::common::{call, get, parse_http_date, try_call};
use apiary_apiserver_sim::{
    DateMode, FaultAction, FaultRule, GARBLED_DATE, Matcher, Resource, SimOptions, Simulator, Verb,
};
use serde_json::json;

async fn sim() -> Simulator {
    Simulator::start(SimOptions::default())
        .await
        .expect("simulator starts")
}

/// Every response carries an IMF-fixdate `Date` (deploy.md § Semantics relied on, item 8):
/// successes, 404s, 405s and injected faults alike.
#[tokio::test]
async fn date_header_on_every_response() {
    let s = sim().await;
    s.faults().add(FaultRule::times(
        1,
        Matcher::path("/version"),
        FaultAction::ServiceUnavailable,
    ));
    for (method, path) in [
        ("GET", "/version"),
        ("GET", "/version"),
        ("GET", "/api"),
        ("GET", "/nope"),
        ("PUT", "/api/v1/namespaces/a/pods/p"),
    ] {
        let r = call(s.addr(), method, path, None).await;
        let date = r
            .date()
            .unwrap_or_else(|| panic!("{method} {path} ({}) has no Date", r.status));
        assert!(parse_http_date(date).is_some(), "{date}");
    }
}

/// The Date header is the simulator's clock, which runs `time_scale` times faster than real time.
#[tokio::test]
async fn date_follows_the_scaled_clock() {
    let start: jiff::Timestamp = "2026-03-01T12:00:00Z".parse().expect("timestamp");
    let before_start = std::time::Instant::now();
    let s = Simulator::start(
        SimOptions::default()
            .with_time_scale(1000.0)
            .with_start_time(start),
    )
    .await
    .expect("simulator starts");
    tokio::time::sleep(Duration::from_millis(120)).await;
    let r = get(s.addr(), "/version").await;
    let date = parse_http_date(r.date().expect("Date")).expect("IMF-fixdate");
    let real_ms = i64::try_from(before_start.elapsed().as_millis()).expect("small");
    let elapsed = date.duration_since(start).as_secs();
    // At scale 1000 each real millisecond is one model second (Date has whole seconds).
    assert!(
        (120..=real_ms + 1).contains(&elapsed),
        "{elapsed} model seconds after {real_ms} ms real"
    );
    assert_eq!(
        s.real_duration(Duration::from_secs(60)),
        Duration::from_millis(60),
        "a 60 s grace period takes 60 ms"
    );
}

/// The Date faults: omitted entirely, or present but not an HTTP-date.
#[tokio::test]
async fn date_header_can_be_omitted_or_garbled() {
    let s = sim().await;
    s.faults().set_date_mode(DateMode::Omit);
    assert_eq!(get(s.addr(), "/api").await.date(), None);
    s.faults().set_date_mode(DateMode::Garbled);
    let r = get(s.addr(), "/api").await;
    assert_eq!(r.date(), Some(GARBLED_DATE));
    assert!(parse_http_date(GARBLED_DATE).is_none());
    s.faults().set_date_mode(DateMode::Normal);
    assert!(get(s.addr(), "/api").await.date().is_some());
}

/// Discovery answers what kube-rs and kubectl need to find pods, Secrets and namespaces.
#[tokio::test]
async fn discovery_documents() {
    let s = sim().await;
    let api = get(s.addr(), "/api").await;
    assert_eq!(api.status, 200);
    assert_eq!(api.headers["content-type"], "application/json");
    assert_eq!(api.json()["versions"], json!(["v1"]));
    let v1 = get(s.addr(), "/api/v1").await.json();
    assert_eq!(v1["groupVersion"], "v1");
    let names: Vec<_> = v1["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["name"].clone())
        .collect();
    assert_eq!(
        names,
        vec![json!("namespaces"), json!("pods"), json!("secrets")]
    );
    assert_eq!(get(s.addr(), "/apis").await.json()["kind"], "APIGroupList");
    assert_eq!(get(s.addr(), "/version").await.json()["major"], "1");
}

/// Unknown paths answer the apiserver's 404 Status; unserved methods (POST to an object) 405.
#[tokio::test]
async fn unknown_paths_and_methods_answer_status_bodies() {
    let s = sim().await;
    let r = get(s.addr(), "/openapi/v2").await;
    assert_eq!(r.status, 404);
    let b = r.json();
    assert_eq!(b["kind"], "Status");
    assert_eq!(b["status"], "Failure");
    assert_eq!(b["reason"], "NotFound");
    assert_eq!(
        b["message"],
        "the server could not find the requested resource"
    );
    let r = call(
        s.addr(),
        "POST",
        "/api/v1/namespaces/a/pods/p",
        Some(&json!({})),
    )
    .await;
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["reason"], "MethodNotAllowed");
}

/// 500 and 503 faults answer Status bodies with those codes, for the matched requests only.
#[tokio::test]
async fn server_error_faults() {
    let s = sim().await;
    s.faults().add(FaultRule::times(
        1,
        Matcher::path("/api/v1"),
        FaultAction::InternalError,
    ));
    s.faults().add(FaultRule::times(
        1,
        Matcher::path("/api/v1"),
        FaultAction::ServiceUnavailable,
    ));
    assert_eq!(get(s.addr(), "/api").await.status, 200, "not matched");
    let r = get(s.addr(), "/api/v1").await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (500, json!("InternalError"))
    );
    let r = get(s.addr(), "/api/v1").await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (503, json!("ServiceUnavailable"))
    );
    assert_eq!(get(s.addr(), "/api/v1").await.status, 200, "budgets spent");
    assert_eq!(s.faults().injected(), 2);
}

/// A 429 fault carries `Retry-After` in seconds, as the apiserver's throttling does.
#[tokio::test]
async fn throttle_fault_has_retry_after() {
    let s = sim().await;
    s.faults().add(FaultRule::times(
        1,
        Matcher::any(),
        FaultAction::TooManyRequests {
            retry_after_seconds: 3,
        },
    ));
    let r = get(s.addr(), "/api").await;
    assert_eq!(r.status, 429);
    assert_eq!(r.headers["retry-after"], "3");
    assert_eq!(r.json()["reason"], "TooManyRequests");
    assert_eq!(r.json()["details"]["retryAfterSeconds"], 3);
}

/// A dropped connection gives the client a transport error and no status at all, and the log
/// records it with no status.
#[tokio::test]
async fn dropped_connection_fault() {
    let s = sim().await;
    s.faults().add(FaultRule::times(
        1,
        Matcher::any(),
        FaultAction::DropConnection,
    ));
    let err = try_call(s.addr(), "GET", "/api", None)
        .await
        .expect_err("connection dropped");
    assert!(!err.is_empty());
    assert_eq!(get(s.addr(), "/api").await.status, 200);
    let log = s.requests();
    assert_eq!(log.len(), 2);
    assert!(log[0].faulted);
    assert_eq!(log[0].status, None);
    assert_eq!(log[1].status, Some(200));
}

/// A denied verb answers 403 Forbidden in the authorizer's wording, other verbs pass the denial.
#[tokio::test]
async fn denied_verb_is_forbidden() {
    let s = sim().await;
    s.faults().deny(Verb::Create, Some(Resource::Namespaces));
    let r = call(
        s.addr(),
        "POST",
        "/api/v1/namespaces",
        Some(&json!({"metadata": {"name": "x"}})),
    )
    .await;
    assert_eq!(r.status, 403);
    let b = r.json();
    assert_eq!(b["reason"], "Forbidden");
    assert_eq!(b["code"], 403);
    assert_eq!(
        b["message"],
        "namespaces is forbidden: User \"system:anonymous\" cannot create resource \"namespaces\" in API group \"\" at the cluster scope"
    );
    let r = get(s.addr(), "/api/v1/namespaces/x").await;
    assert_ne!(r.status, 403, "get is not denied");
}

/// Any Status can be injected, e.g. 410 Gone on a watch request.
#[tokio::test]
async fn arbitrary_status_fault() {
    let s = sim().await;
    s.faults().add(FaultRule::always(
        Matcher::any_resource(Verb::Watch),
        FaultAction::Status {
            code: 410,
            reason: "Gone".into(),
            message: "gone".into(),
        },
    ));
    let r = get(s.addr(), "/api/v1/namespaces/a/pods?watch=true").await;
    assert_eq!(r.status, 410);
    assert_eq!(r.json()["reason"], "Gone");
    assert_ne!(
        get(s.addr(), "/api/v1/namespaces/a/pods").await.status,
        410,
        "list is not a watch"
    );
}

/// The log records method, path, raw query, body, verb, fault and status in arrival order, and
/// can be cleared.
#[tokio::test]
async fn request_log_records_every_request() {
    let s = sim().await;
    s.faults().add(FaultRule::times(
        1,
        Matcher::verb(Verb::Delete, Resource::Pods),
        FaultAction::ServiceUnavailable,
    ));
    let body = json!({"preconditions": {"uid": "u1", "resourceVersion": "7"}});
    call(
        s.addr(),
        "DELETE",
        "/api/v1/namespaces/a/pods/p",
        Some(&body),
    )
    .await;
    get(
        s.addr(),
        "/api/v1/namespaces/a/pods?&labelSelector=app%3Dweb",
    )
    .await;
    let log = s.requests();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].method, "DELETE");
    assert_eq!(log[0].path, "/api/v1/namespaces/a/pods/p");
    assert!(log[0].is(Verb::Delete, Resource::Pods));
    assert!(log[0].is_mutation());
    assert!(log[0].faulted);
    assert_eq!(log[0].status, Some(503));
    assert_eq!(log[0].body_json(), Some(body));
    assert_eq!(log[1].query, "&labelSelector=app%3Dweb");
    assert_eq!(
        log[1].query_param("labelSelector").as_deref(),
        Some("app=web")
    );
    assert_eq!(log[1].query_param("resourceVersion"), None);
    assert!(log[1].is(Verb::List, Resource::Pods));
    assert!(!log[1].is_mutation());
    s.clear_requests();
    assert!(s.requests().is_empty());
}

/// The written kubeconfig points at the simulator's URL with the namespace on its context.
#[tokio::test]
async fn kubeconfig_file_points_at_the_simulator() {
    let s = sim().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config");
    s.write_kubeconfig(&path, "agents").expect("written");
    let text = std::fs::read_to_string(&path).expect("readable");
    assert!(s.url().starts_with("http://127.0.0.1:"));
    assert!(text.contains(&format!("server: \"{}\"", s.url())), "{text}");
    assert!(text.contains("namespace: \"agents\""), "{text}");
    assert_eq!(text, s.kubeconfig_yaml("agents"));
}

/// After shutdown the port no longer answers.
#[tokio::test]
async fn shutdown_stops_serving() {
    let s = sim().await;
    let addr = s.addr();
    assert_eq!(get(addr, "/api").await.status, 200);
    s.shutdown();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(try_call(addr, "GET", "/api", None).await.is_err());
}

/// A delay fault answers normally, only late (a slow apiserver, for client timeouts).
#[tokio::test]
async fn delay_fault_answers_late() {
    let s = sim().await;
    s.faults().add(FaultRule::times(
        1,
        Matcher::path("/version"),
        FaultAction::Delay(Duration::from_millis(150)),
    ));
    let began = std::time::Instant::now();
    let r = get(s.addr(), "/version").await;
    assert_eq!(r.status, 200);
    assert!(began.elapsed() >= Duration::from_millis(150));
    assert!(s.requests()[0].faulted);
    get(s.addr(), "/version").await;
    assert!(!s.requests()[1].faulted, "budget spent");
}
