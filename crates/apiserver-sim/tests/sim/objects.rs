//! Object behaviour over plain HTTP, pinned against the apiserver's documented shapes: stamping
//! (uid, monotonic resourceVersion, creationTimestamp on the server clock), 404/409 reasons,
//! creating into a missing namespace, selectors, `limit`/`continue` with 410 `Expired`, delete
//! preconditions, graceful deletion under time scaling, immutable Secrets, validation, and the
//! kubelet scripts seen through the API (deploy.md § Apiserver contract and § apiary demo, item 4;
//! seeds.md § The request).
//!
//! Layer: integration tests over a loopback socket; they never contact a real cluster.

use std::time::{Duration, Instant};

use crate::common::{
    IMAGE, Resp, call, call_raw, create_namespace, create_pod, get, get_table, parse_http_date,
    pod_body, poll,
};
use apiary_apiserver_sim::{SimOptions, Simulator};
use apiary_cluster_model::kubelet::PodScript;
use serde_json::{Value, json};

async fn fast() -> Simulator {
    Simulator::start(SimOptions::default().with_time_scale(1000.0))
        .await
        .expect("simulator starts")
}

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .parse()
        .expect("numeric rv")
}

const PODS: &str = "/api/v1/namespaces/agents/pods";
const SECRETS: &str = "/api/v1/namespaces/agents/secrets";

/// `POST path` with the JSON `body`.
async fn post(s: &Simulator, path: &str, body: &Value) -> Resp {
    call(s.addr(), "POST", path, Some(body)).await
}

/// Namespaces: create answers 201 with a uid; a second create is 409 AlreadyExists; get and
/// NotFound use the literal reasons (deploy.md § Cluster interface and requests, rows 1–2).
#[tokio::test]
async fn namespace_get_create_already_exists() {
    let s = fast().await;
    let missing = get(s.addr(), "/api/v1/namespaces/agents").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["reason"], "NotFound");
    assert_eq!(missing.json()["message"], "namespaces \"agents\" not found");
    create_namespace(s.addr(), "agents").await;
    let again = post(
        &s,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "agents"}}),
    )
    .await;
    assert_eq!(again.status, 409);
    assert_eq!(again.json()["reason"], "AlreadyExists");
    let ns = get(s.addr(), "/api/v1/namespaces/agents").await;
    assert_eq!(ns.status, 200);
    assert_eq!(ns.json()["kind"], "Namespace");
    assert_eq!(ns.json()["status"]["phase"], "Active");
    let list = get(s.addr(), "/api/v1/namespaces").await.json();
    assert_eq!(list["kind"], "NamespaceList");
    assert_eq!(list["items"][0]["metadata"]["name"], "agents");
}

/// Creating a pod or Secret into a missing namespace fails as the real apiserver does: 404
/// NotFound naming the namespace.
#[tokio::test]
async fn create_into_missing_namespace_is_namespace_not_found() {
    let s = fast().await;
    for (path, body) in [
        (
            "/api/v1/namespaces/ghost/pods",
            pod_body("p", IMAGE, json!({})),
        ),
        (
            "/api/v1/namespaces/ghost/secrets",
            json!({"metadata": {"name": "s"}}),
        ),
    ] {
        let r = call(s.addr(), "POST", path, Some(&body)).await;
        assert_eq!(r.status, 404, "{path}");
        let b = r.json();
        assert_eq!(b["reason"], "NotFound");
        assert_eq!(b["message"], "namespaces \"ghost\" not found");
        assert_eq!(b["details"]["kind"], "namespaces");
        assert_eq!(b["details"]["name"], "ghost");
    }
}

/// A create stamps uid, a strictly increasing resourceVersion and creationTimestamp from the same
/// clock as the Date header (deploy.md § Semantics relied on, item 8); a taken name is 409
/// AlreadyExists.
#[tokio::test]
async fn create_stamps_uid_rv_and_server_clock_timestamp() {
    let start: jiff::Timestamp = "2026-05-01T10:00:00Z".parse().expect("timestamp");
    let s = Simulator::start(SimOptions::default().with_start_time(start))
        .await
        .expect("starts");
    create_namespace(s.addr(), "agents").await;
    let r = post(&s, PODS, &pod_body("a", IMAGE, json!({}))).await;
    assert_eq!(r.status, 201);
    let a = r.json();
    let date = parse_http_date(r.date().expect("Date")).expect("IMF-fixdate");
    let created: jiff::Timestamp = a["metadata"]["creationTimestamp"]
        .as_str()
        .expect("ts")
        .parse()
        .expect("RFC 3339");
    assert!(
        date.duration_since(created).as_secs().abs() <= 1,
        "{date} vs {created}"
    );
    assert!(
        created.duration_since(start).as_secs() < 5,
        "server clock, not wall clock drift"
    );
    assert!(!a["metadata"]["uid"].as_str().expect("uid").is_empty());
    assert_eq!(a["metadata"]["namespace"], "agents");
    assert_eq!(a["status"]["phase"], "Pending");
    let b = create_pod(s.addr(), "agents", &pod_body("b", IMAGE, json!({}))).await;
    assert!(rv(&b) > rv(&a));
    assert_ne!(a["metadata"]["uid"], b["metadata"]["uid"]);
    let dup = post(&s, PODS, &pod_body("a", IMAGE, json!({}))).await;
    assert_eq!(dup.status, 409);
    assert_eq!(dup.json()["reason"], "AlreadyExists");
    assert_eq!(dup.json()["message"], "pods \"a\" already exists");
}

/// GET of a missing pod or Secret is 404 NotFound with the object named: a confirmed absence.
#[tokio::test]
async fn get_missing_is_not_found() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    for (path, msg) in [
        (
            "/api/v1/namespaces/agents/pods/nope",
            "pods \"nope\" not found",
        ),
        (
            "/api/v1/namespaces/agents/secrets/nope",
            "secrets \"nope\" not found",
        ),
    ] {
        let r = get(s.addr(), path).await;
        assert_eq!(r.status, 404);
        assert_eq!(r.json()["reason"], "NotFound");
        assert_eq!(r.json()["message"], msg);
    }
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().expect("name").to_owned())
        .collect()
}

/// Label selectors (equality, set-based, existence) and field selectors (metadata.name,
/// status.phase) filter lists as the apiserver does.
#[tokio::test]
async fn list_selectors() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    create_pod(
        s.addr(),
        "agents",
        &pod_body("a", IMAGE, json!({"app": "web", "tier": "front"})),
    )
    .await;
    create_pod(
        s.addr(),
        "agents",
        &pod_body("b", IMAGE, json!({"app": "web"})),
    )
    .await;
    create_pod(
        s.addr(),
        "agents",
        &pod_body(
            "c",
            "r.example/never-starts@sha256:00",
            json!({"app": "db"}),
        ),
    )
    .await;
    let q = |sel: &str| format!("{PODS}?labelSelector={sel}");
    assert_eq!(
        names(&get(s.addr(), &q("app%3Dweb")).await.json()),
        ["a", "b"]
    );
    assert_eq!(
        names(&get(s.addr(), &q("app%21%3Dweb")).await.json()),
        ["c"]
    );
    assert_eq!(
        names(
            &get(s.addr(), &q("app+in+%28db%2Cweb%29%2Ctier"))
                .await
                .json()
        ),
        ["a"]
    );
    assert_eq!(
        names(&get(s.addr(), &q("%21tier")).await.json()),
        ["b", "c"]
    );
    assert_eq!(
        names(&get(s.addr(), &q("app+notin+%28web%29")).await.json()),
        ["c"]
    );
    let by_name = get(s.addr(), &format!("{PODS}?fieldSelector=metadata.name%3Db"))
        .await
        .json();
    assert_eq!(names(&by_name), ["b"]);
    assert_eq!(by_name["kind"], "PodList");
    assert!(
        by_name["items"][0].get("kind").is_none(),
        "list items carry no kind, as the apiserver sends them"
    );
    poll(s.addr(), "/api/v1/namespaces/agents/pods/a", |_, p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    poll(s.addr(), "/api/v1/namespaces/agents/pods/b", |_, p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    let running = get(
        s.addr(),
        &format!("{PODS}?fieldSelector=status.phase%3DRunning"),
    )
    .await
    .json();
    assert_eq!(names(&running), ["a", "b"]);
    let bad = get(s.addr(), &q("app%3D%3D%3D")).await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["reason"], "BadRequest");
}

/// `limit`/`continue` pagination walks every item once; a continue token that outlived the
/// history answers 410 with reason `Expired` (seeds.md § The request, item 3).
#[tokio::test]
async fn pagination_and_expired_continue() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    for n in ["a", "b", "c", "d", "e"] {
        create_pod(
            s.addr(),
            "agents",
            &pod_body(n, "r.example/never-starts@sha256:00", json!({"app": "x"})),
        )
        .await;
    }
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let path = if token.is_empty() {
            format!("{PODS}?labelSelector=app%3Dx&limit=2")
        } else {
            format!("{PODS}?labelSelector=app%3Dx&limit=2&continue={token}")
        };
        let page = get(s.addr(), &path).await.json();
        pages += 1;
        seen.extend(names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => {
                // As the apiserver: a selected list does not count what remains
                // (tests/sim/differential.rs checks this against a real one).
                assert!(page["metadata"]["remainingItemCount"].is_null());
                token = t.to_owned();
            }
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, ["a", "b", "c", "d", "e"]);
    let first = get(s.addr(), &format!("{PODS}?limit=2")).await.json();
    let token = first["metadata"]["continue"]
        .as_str()
        .expect("token")
        .to_owned();
    // History moves on past the token's snapshot and is compacted.
    create_pod(
        s.addr(),
        "agents",
        &pod_body("f", "r.example/never-starts@sha256:00", json!({})),
    )
    .await;
    s.with_model(|m| m.compact());
    let r = get(s.addr(), &format!("{PODS}?limit=2&continue={token}")).await;
    assert_eq!(r.status, 410);
    assert_eq!(r.json()["reason"], "Expired");
    assert_eq!(r.json()["code"], 410);
}

/// Delete preconditions: a uid or resourceVersion mismatch is 409 Conflict (not AlreadyExists)
/// and changes nothing; matching preconditions delete; a missing object is 404 (deploy.md
/// § Semantics relied on, item 3).
#[tokio::test]
async fn delete_preconditions_conflict_and_not_found() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    let p = create_pod(
        s.addr(),
        "agents",
        &pod_body("p", "r.example/never-starts@sha256:00", json!({})),
    )
    .await;
    let uid = p["metadata"]["uid"].as_str().expect("uid").to_owned();
    let path = "/api/v1/namespaces/agents/pods/p";
    let current = poll(s.addr(), path, |_, p| p["spec"]["nodeName"].is_string()).await;
    let current_rv = current["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_owned();
    let wrong_uid = json!({"preconditions": {"uid": "other", "resourceVersion": current_rv}});
    let r = call(s.addr(), "DELETE", path, Some(&wrong_uid)).await;
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["reason"], "Conflict");
    assert!(
        r.json()["message"]
            .as_str()
            .expect("message")
            .contains("the UID in the precondition (other) does not match")
    );
    let stale_rv = json!({"preconditions": {"uid": uid, "resourceVersion": "1"}});
    let r = call(s.addr(), "DELETE", path, Some(&stale_rv)).await;
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["reason"], "Conflict");
    assert!(
        get(s.addr(), path).await.json()["metadata"]["deletionTimestamp"].is_null(),
        "a failed precondition changes nothing"
    );
    let fenced = json!({"preconditions": {"uid": uid, "resourceVersion": current_rv}});
    let r = call(s.addr(), "DELETE", path, Some(&fenced)).await;
    assert_eq!(r.status, 200);
    let r = call(
        s.addr(),
        "DELETE",
        "/api/v1/namespaces/agents/pods/gone",
        Some(&fenced),
    )
    .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["reason"], "NotFound");
}

/// Graceful deletion with time scaling: DELETE of a running pod answers 200 with the pod,
/// which stays (phase Running, deletionTimestamp set) for its 60 s grace — 1.2 s at scale 50 —
/// and then vanishes (deploy.md § Semantics relied on, items 4 and 5). The scale is lower than
/// the other tests' so that the GET right after the DELETE lands inside the grace even on a loaded
/// machine (at scale 1000 the grace was 60 ms, which a busy CI runner overran).
#[tokio::test]
async fn graceful_deletion_answers_before_the_pod_is_gone() {
    let s = Simulator::start(SimOptions::default().with_time_scale(50.0))
        .await
        .expect("simulator starts");
    create_namespace(s.addr(), "agents").await;
    create_pod(s.addr(), "agents", &pod_body("p", IMAGE, json!({}))).await;
    let path = "/api/v1/namespaces/agents/pods/p";
    poll(s.addr(), path, |_, p| p["status"]["phase"] == "Running").await;
    let began = Instant::now();
    let r = call(s.addr(), "DELETE", path, None).await;
    assert_eq!(r.status, 200);
    let answered = r.json();
    assert_eq!(answered["kind"], "Pod");
    assert!(answered["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(answered["metadata"]["deletionGracePeriodSeconds"], 60);
    let still = get(s.addr(), path).await;
    assert_eq!(
        still.status, 200,
        "DELETE returns before the object is gone"
    );
    assert_eq!(still.json()["status"]["phase"], "Running");
    assert!(still.json()["metadata"]["deletionTimestamp"].is_string());
    poll(s.addr(), path, |status, _| status == 404).await;
    let took = began.elapsed();
    assert!(
        took >= Duration::from_millis(1_100),
        "gone after {took:?}, before its scaled grace"
    );
}

/// Terminal and unscheduled pods get their grace zeroed and vanish at once (deploy.md § Semantics
/// relied on, item 6); an explicit gracePeriodSeconds=0 force-deletes a running one.
#[tokio::test]
async fn terminal_unscheduled_and_forced_pods_vanish_at_once() {
    let s = Simulator::start(SimOptions::default())
        .await
        .expect("starts");
    s.ensure_namespace("agents");
    s.with_model(|m| {
        m.script_pods_named(
            "agents",
            "crashed",
            PodScript::Exit {
                after: Duration::ZERO,
                run_for: Duration::ZERO,
                exit_code: 1,
            },
        );
        m.script_pods_named("agents", "stuck", PodScript::Unschedulable);
        m.script_pods_named(
            "agents",
            "running",
            PodScript::Start {
                after: Duration::ZERO,
            },
        );
    });
    for name in ["crashed", "stuck", "running"] {
        create_pod(s.addr(), "agents", &pod_body(name, IMAGE, json!({}))).await;
    }
    type Settled = fn(&Value) -> bool;
    let settled: [(&str, Settled); 3] = [
        ("crashed", |p| p["status"]["phase"] == "Failed"),
        ("stuck", |p| {
            p["status"]["conditions"][0]["reason"] == "Unschedulable"
        }),
        ("running", |p| p["status"]["phase"] == "Running"),
    ];
    for (name, done) in settled {
        let path = format!("/api/v1/namespaces/agents/pods/{name}");
        poll(s.addr(), &path, |_, p| done(p)).await;
    }
    for name in ["crashed", "stuck"] {
        let path = format!("/api/v1/namespaces/agents/pods/{name}");
        assert_eq!(call(s.addr(), "DELETE", &path, None).await.status, 200);
        assert_eq!(
            get(s.addr(), &path).await.status,
            404,
            "{name} vanishes at once"
        );
    }
    let path = "/api/v1/namespaces/agents/pods/running";
    assert_eq!(
        call(
            s.addr(),
            "DELETE",
            &format!("{path}?gracePeriodSeconds=0"),
            None
        )
        .await
        .status,
        200
    );
    assert_eq!(get(s.addr(), path).await.status, 404);
}

/// Secrets: created with their payload, immutable ones refuse updates with 422 Invalid, delete
/// answers a Success Status and honours the uid precondition.
#[tokio::test]
async fn secrets_immutable_and_deleted_with_uid_precondition() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    let body = json!({
        "metadata": {"name": "env-1", "labels": {"app": "x"}},
        "immutable": true,
        "stringData": {"TOKEN": "hunter2"},
    });
    let r = post(&s, SECRETS, &body).await;
    assert_eq!(r.status, 201);
    let created = r.json();
    assert_eq!(created["kind"], "Secret");
    assert_eq!(created["type"], "Opaque");
    assert_eq!(created["data"]["TOKEN"], "aHVudGVyMg==");
    let path = "/api/v1/namespaces/agents/secrets/env-1";
    let r = call(s.addr(), "PUT", path, Some(&body)).await;
    assert_eq!(r.status, 422);
    assert_eq!(r.json()["reason"], "Invalid");
    let list = get(
        s.addr(),
        "/api/v1/namespaces/agents/secrets?labelSelector=app%3Dx",
    )
    .await
    .json();
    assert_eq!(list["kind"], "SecretList");
    assert_eq!(names(&list), ["env-1"]);
    let r = call(
        s.addr(),
        "DELETE",
        path,
        Some(&json!({"preconditions": {"uid": "nope"}})),
    )
    .await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (409, json!("Conflict"))
    );
    let uid = created["metadata"]["uid"].clone();
    let r = call(
        s.addr(),
        "DELETE",
        path,
        Some(&json!({"preconditions": {"uid": uid}})),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["kind"], "Status");
    assert_eq!(r.json()["status"], "Success");
    assert_eq!(r.json()["details"]["uid"], uid);
    assert_eq!(get(s.addr(), path).await.status, 404);
}

/// Malformed names, Secret keys, oversized Secrets and pods without containers are 422 Invalid;
/// undecodable bodies 400 BadRequest.
#[tokio::test]
async fn validation_refusals() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    let big = "x".repeat(1024 * 1024 + 1);
    let cases = [
        (
            "/api/v1/namespaces",
            json!({"metadata": {"name": "Bad_Name"}}),
            422,
            "Invalid",
        ),
        (PODS, pod_body("Agent", IMAGE, json!({})), 422, "Invalid"),
        (
            PODS,
            json!({"metadata": {"name": "p"}, "spec": {"containers": []}}),
            422,
            "Invalid",
        ),
        (
            SECRETS,
            json!({"metadata": {"name": "s"}, "stringData": {"a b": "x"}}),
            422,
            "Invalid",
        ),
        (
            SECRETS,
            json!({"metadata": {"name": "s"}, "stringData": {"a": big}}),
            422,
            "Invalid",
        ),
        (PODS, json!("not a pod"), 400, "BadRequest"),
        // A name is required.
        (SECRETS, json!({"metadata": {}}), 422, "Invalid"),
    ];
    for (path, body, status, reason) in cases {
        let r = call(s.addr(), "POST", path, Some(&body)).await;
        assert_eq!(
            (r.status, r.json()["reason"].clone()),
            (status, json!(reason)),
            "{path} {}",
            body["metadata"]
        );
        if body["metadata"]["name"] == "Agent" {
            assert_eq!(r.json()["details"]["causes"][0]["field"], "metadata.name");
        }
    }
}

/// The kubelet seen through the API: it assigns a pod IP, reports `agent` waiting
/// ContainerCreating then running; with the envFrom Secret missing it reports
/// CreateContainerConfigError and recovers when the Secret appears (deploy.md § Semantics relied
/// on, item 7).
#[tokio::test]
async fn kubelet_config_error_until_the_secret_exists() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    let mut body = pod_body("p", IMAGE, json!({}));
    body["spec"]["containers"][0]["envFrom"] = json!([{"secretRef": {"name": "env-1"}}]);
    create_pod(s.addr(), "agents", &body).await;
    let path = "/api/v1/namespaces/agents/pods/p";
    let waiting = poll(s.addr(), path, |_, p| {
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
            == "CreateContainerConfigError"
    })
    .await;
    assert_eq!(waiting["status"]["containerStatuses"][0]["name"], "agent");
    assert_eq!(
        waiting["status"]["containerStatuses"][0]["state"]["waiting"]["message"],
        "secret \"env-1\" not found"
    );
    let r = post(&s, SECRETS, &json!({"metadata": {"name": "env-1"}})).await;
    assert_eq!(r.status, 201);
    let running = poll(s.addr(), path, |_, p| p["status"]["phase"] == "Running").await;
    assert!(running["status"]["podIP"].is_string());
    assert!(running["status"]["containerStatuses"][0]["state"]["running"].is_object());
}

/// Kubelet scripts are chosen by image reference (a `crash` image exits 1) or through the model
/// API (a pull failure by name).
#[tokio::test]
async fn kubelet_scripts_by_image_and_by_api() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    s.with_model(|m| {
        m.script_pods_named(
            "agents",
            "pull",
            PodScript::PullFailure {
                after: Duration::ZERO,
                failure: apiary_cluster_model::kubelet::PullFailure::Unauthorized,
            },
        );
    });
    create_pod(
        s.addr(),
        "agents",
        &pod_body("crash", "r.example/agent-crash@sha256:00", json!({})),
    )
    .await;
    create_pod(s.addr(), "agents", &pod_body("pull", IMAGE, json!({}))).await;
    let crashed = poll(s.addr(), "/api/v1/namespaces/agents/pods/crash", |_, p| {
        p["status"]["phase"] == "Failed"
    })
    .await;
    assert_eq!(
        crashed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        1
    );
    let pulling = poll(s.addr(), "/api/v1/namespaces/agents/pods/pull", |_, p| {
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ErrImagePull"
            || p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
                == "ImagePullBackOff"
    })
    .await;
    let message = pulling["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        .as_str()
        .expect("message");
    assert!(message.contains("401 Unauthorized"), "{message}");
}

/// Direct model setup through the library is visible over HTTP (a test inserts a foreign pod).
#[tokio::test]
async fn model_setup_is_served() {
    let s = fast().await;
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "foreign", "namespace": "agents", "labels": {"owner": "someone"}},
        "spec": {"containers": [{"name": "x", "image": "busybox"}]},
        "status": {"phase": "Running"},
    }))
    .expect("pod");
    s.model().insert_pod(pod).expect("inserted");
    let got = get(s.addr(), "/api/v1/namespaces/agents/pods/foreign").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.json()["status"]["phase"], "Running");
    assert_eq!(
        get(s.addr(), "/api/v1/namespaces/agents").await.status,
        200,
        "namespace created with it"
    );
}

/// `kubectl create namespace` sends a protobuf body: a Namespace (or Secret) in the Kubernetes
/// protobuf envelope is accepted; other protobuf bodies are 415 UnsupportedMediaType.
#[tokio::test]
async fn protobuf_namespace_create_is_accepted() {
    let s = fast().await;
    // k8s\0 + Unknown{typeMeta{apiVersion "v1", kind "Namespace"}, raw Namespace{metadata{name "pb"}}}
    let body = [
        b"k8s\0".as_slice(),
        &[0x0a, 0x0f, 0x0a, 0x02],
        b"v1",
        &[0x12, 0x09],
        b"Namespace",
        &[0x12, 0x06, 0x0a, 0x04, 0x0a, 0x02],
        b"pb",
    ]
    .concat();
    let r = call_raw(
        s.addr(),
        "POST",
        "/api/v1/namespaces",
        "application/vnd.kubernetes.protobuf",
        body,
    )
    .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["metadata"]["name"], "pb");
    assert_eq!(get(s.addr(), "/api/v1/namespaces/pb").await.status, 200);
    let r = call_raw(
        s.addr(),
        "POST",
        "/api/v1/namespaces/pb/pods",
        "application/vnd.kubernetes.protobuf",
        b"k8s\0".to_vec(),
    )
    .await;
    assert_eq!(
        (r.status, r.json()["reason"].clone()),
        (415, json!("UnsupportedMediaType"))
    );
}

/// `kubectl get` asks for a Table: pods answer the apiserver's columns (Name, Ready, Status,
/// Restarts, Age), with Terminating for a deletion-marked pod; a plain Accept gets the list.
#[tokio::test]
async fn table_answers_for_kubectl_get() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    create_pod(s.addr(), "agents", &pod_body("p", IMAGE, json!({}))).await;
    poll(s.addr(), "/api/v1/namespaces/agents/pods/p", |_, p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    let t = get_table(s.addr(), PODS).await.json();
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    let columns: Vec<_> = t["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(
        columns,
        [
            json!("Name"),
            json!("Ready"),
            json!("Status"),
            json!("Restarts"),
            json!("Age")
        ]
    );
    assert_eq!(
        t["rows"][0]["cells"].as_array().expect("cells")[0..4],
        [json!("p"), json!("1/1"), json!("Running"), json!(0)]
    );
    call(s.addr(), "DELETE", "/api/v1/namespaces/agents/pods/p", None).await;
    let one = get_table(s.addr(), "/api/v1/namespaces/agents/pods/p")
        .await
        .json();
    assert_eq!(one["rows"][0]["cells"][2], "Terminating");
    let secrets = get_table(s.addr(), SECRETS).await.json();
    assert_eq!(secrets["kind"], "Table");
    assert_eq!(get(s.addr(), PODS).await.json()["kind"], "PodList");
}

/// Sixteen concurrent creates of one pod name: exactly one 201, fifteen 409 AlreadyExists — pod
/// creation elects the winner (deploy.md § Semantics relied on, item 10).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_elect_exactly_one_winner() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    let addr = s.addr();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            tokio::spawn(async move {
                let r = call(
                    addr,
                    "POST",
                    PODS,
                    Some(&pod_body("agent-0", IMAGE, json!({}))),
                )
                .await;
                (r.status, r.json()["reason"].clone())
            })
        })
        .collect();
    let mut created = 0;
    for t in tasks {
        match t.await.expect("task") {
            (201, _) => created += 1,
            (409, reason) => assert_eq!(reason, "AlreadyExists"),
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(created, 1);
    let creates = s
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path == PODS)
        .count();
    assert_eq!(creates, 16);
}

/// A Secret body that fails to decode is refused without echoing its values.
#[tokio::test]
async fn secret_decode_errors_do_not_echo_values() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    // serde's own message would be "invalid type: integer `424242`, expected a string".
    let body = json!({"metadata": {"name": "s"}, "stringData": {"TOKEN": 424242}});
    let r = post(&s, SECRETS, &body).await;
    assert_eq!(r.status, 400);
    let message = r.json()["message"].as_str().expect("message").to_owned();
    assert!(!message.contains("424242"), "{message}");
    assert!(message.contains("cannot decode Secret"), "{message}");
}
