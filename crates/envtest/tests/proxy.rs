//! The fault proxy in front of the real `kube-apiserver` (skipped, with one line naming
//! `setup-envtest`, when `KUBEBUILDER_ASSETS` is unset): GET, LIST and WATCH pass through with the
//! server's own bodies, a watch streams events while they happen, every fault action is answered
//! as configured without the server ever seeing the request, `Retry-After` arrives, a reset is a
//! transport error for a kube client, the latency knob adds its delay by the proxy's own
//! accounting, and the counters match a known request sequence.
//!
//! Layer: integration test of `apiary_envtest::proxy` against the shared control plane. Loopback
//! only; no timed assertions (waits are bounded only so a broken run fails instead of hanging).

use std::time::Duration;

use apiary_apiserver_sim::{FaultAction, FaultRule, Matcher, Resource, Verb};
use apiary_envtest::proxy::{FaultProxy, Latency};
use apiary_envtest::{ControlPlane, Identity};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};

async fn proxy_for(plane: &ControlPlane) -> FaultProxy {
    FaultProxy::start(
        &plane.server_url(),
        plane.ca_pem(),
        plane.token(Identity::Admin),
    )
    .await
    .expect("the proxy starts")
}

/// A kube client through the proxy that does not retry on its own, so every fault is seen.
fn no_retry_client(proxy: &FaultProxy, namespace: &str) -> kube::Client {
    let _already = rustls::crypto::ring::default_provider().install_default();
    let mut config = proxy.config(namespace);
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name },
        "spec": { "containers": [{ "name": "agent", "image": "registry.example/agent:1" }] },
    }))
    .expect("a pod")
}

fn pod_body(name: &str) -> Vec<u8> {
    serde_json::to_vec(&pod(name)).expect("json")
}

/// Waits (bounded) until `check` holds.
async fn until(what: &str, check: impl Fn() -> bool) {
    for _ in 0..2000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting for {what}");
}

/// GET, LIST and WATCH through the proxy see what the server says directly, and a watch
/// delivers an ADDED event for a pod created after the watch started.
#[tokio::test(flavor = "multi_thread")]
async fn get_list_watch_pass_through_and_watches_stream_live() {
    let Some(plane) = apiary_envtest::shared() else {
        return;
    };
    let ns = plane.namespace("proxy-pass");
    let proxy = proxy_for(plane).await;
    let via: Api<Pod> = Api::namespaced(proxy.client(&ns).expect("client"), &ns);
    let direct: Api<Pod> = Api::namespaced(plane.client(Identity::Admin), &ns);

    let created = via
        .create(&PostParams::default(), &pod("first"))
        .await
        .expect("create");
    let through = via.get("first").await.expect("get through the proxy");
    let straight = direct.get("first").await.expect("get directly");
    assert_eq!(through.metadata.uid, created.metadata.uid);
    assert_eq!(through.metadata.uid, straight.metadata.uid);
    assert_eq!(
        through.metadata.resource_version,
        straight.metadata.resource_version
    );

    let list = via.list(&ListParams::default()).await.expect("list");
    let names: Vec<_> = list
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(names, ["first"]);
    let rv = list
        .metadata
        .resource_version
        .expect("a list resourceVersion");

    let mut events = via
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .expect("watch starts")
        .boxed();
    until("the watch's response head through the proxy", || {
        proxy
            .requests()
            .iter()
            .any(|r| r.request.is(Verb::Watch, Resource::Pods) && r.request.status == Some(200))
    })
    .await;
    direct
        .create(&PostParams::default(), &pod("late"))
        .await
        .expect("create late");
    let added = loop {
        match events
            .try_next()
            .await
            .expect("watch stream")
            .expect("an event")
        {
            WatchEvent::Added(p) => break p,
            WatchEvent::Bookmark(_) => continue,
            other => panic!("unexpected event {other:?}"),
        }
    };
    assert_eq!(added.metadata.name.as_deref(), Some("late"));
    let watch = proxy
        .requests()
        .into_iter()
        .find(|r| r.request.is(Verb::Watch, Resource::Pods))
        .expect("the watch was logged");
    assert!(
        watch.forwarded && watch.bytes_from_upstream > 0,
        "{watch:?}"
    );
}

/// Every answering fault action comes back to a kube client as configured (code and reason),
/// and the server never saw the faulted create: no object exists under that name.
#[tokio::test(flavor = "multi_thread")]
async fn each_fault_action_is_answered_and_never_reaches_the_server() {
    let Some(plane) = apiary_envtest::shared() else {
        return;
    };
    let ns = plane.namespace("proxy-faults");
    let proxy = proxy_for(plane).await;
    let via: Api<Pod> = Api::namespaced(no_retry_client(&proxy, &ns), &ns);
    let direct: Api<Pod> = Api::namespaced(plane.client(Identity::Admin), &ns);
    let cases = [
        (FaultAction::InternalError, 500, "InternalError"),
        (FaultAction::ServiceUnavailable, 503, "ServiceUnavailable"),
        (
            FaultAction::TooManyRequests {
                retry_after_seconds: 1,
            },
            429,
            "TooManyRequests",
        ),
        (FaultAction::Forbidden, 403, "Forbidden"),
        (
            FaultAction::Status {
                code: 409,
                reason: "Conflict".into(),
                message: "injected conflict".into(),
            },
            409,
            "Conflict",
        ),
    ];
    for (i, (action, code, reason)) in cases.into_iter().enumerate() {
        let name = format!("faulted-{i}");
        proxy.faults().add(FaultRule::times(
            1,
            Matcher::verb(Verb::Create, Resource::Pods),
            action.clone(),
        ));
        let err = via
            .create(&PostParams::default(), &pod(&name))
            .await
            .expect_err("the fault answers");
        let kube::Error::Api(status) = err else {
            panic!("{action:?}: not an API error: {err}");
        };
        assert_eq!(
            (status.code, status.reason.as_str()),
            (code, reason),
            "{action:?}"
        );
        let absent = direct.get_opt(&name).await.expect("direct get");
        assert!(
            absent.is_none(),
            "{action:?}: the server saw the faulted create"
        );
    }
    let log = proxy.requests();
    assert_eq!(log.len(), 5);
    assert!(
        log.iter().all(|r| r.request.faulted && !r.forwarded),
        "{log:?}"
    );
    // Budgets spent: the next create passes through and exists.
    via.create(&PostParams::default(), &pod("after"))
        .await
        .expect("passes");
    assert!(direct.get_opt("after").await.expect("get").is_some());
}

/// A 429 carries `Retry-After` as configured, and a kube client with its default retry honours
/// it: the create succeeds after the injected refusals, and exactly one create reached the server.
#[tokio::test(flavor = "multi_thread")]
async fn retry_after_arrives_and_kube_retries_honour_it() {
    let Some(plane) = apiary_envtest::shared() else {
        return;
    };
    let ns = plane.namespace("proxy-429");
    let proxy = proxy_for(plane).await;
    proxy.faults().add(FaultRule::times(
        1,
        Matcher::verb(Verb::Get, Resource::Pods),
        FaultAction::TooManyRequests {
            retry_after_seconds: 2,
        },
    ));
    let client = no_retry_client(&proxy, &ns);
    let request = http::Request::get(format!("/api/v1/namespaces/{ns}/pods/nothing"))
        .body(Vec::new())
        .expect("request");
    let response = client
        .send(request.map(Into::into))
        .await
        .expect("answered");
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()[http::header::RETRY_AFTER], "2");

    proxy.faults().add(FaultRule::times(
        2,
        Matcher::verb(Verb::Create, Resource::Pods),
        FaultAction::TooManyRequests {
            retry_after_seconds: 1,
        },
    ));
    let retrying: Api<Pod> = Api::namespaced(proxy.client(&ns).expect("client"), &ns);
    retrying
        .create(&PostParams::default(), &pod("patient"))
        .await
        .expect("the client's own retry gets through");
    let creates: Vec<_> = proxy
        .requests()
        .into_iter()
        .filter(|r| r.request.is(Verb::Create, Resource::Pods))
        .collect();
    let shape: Vec<_> = creates
        .iter()
        .map(|r| (r.request.status, r.forwarded))
        .collect();
    assert_eq!(
        shape,
        [(Some(429), false), (Some(429), false), (Some(201), true)]
    );
}

/// A dropped connection is a transport error for a kube client, not an API error, and the
/// request after it passes.
#[tokio::test(flavor = "multi_thread")]
async fn a_reset_is_a_transport_error_for_a_kube_client() {
    let Some(plane) = apiary_envtest::shared() else {
        return;
    };
    let ns = plane.namespace("proxy-reset");
    let proxy = proxy_for(plane).await;
    let via: Api<Pod> = Api::namespaced(no_retry_client(&proxy, &ns), &ns);
    proxy.faults().add(FaultRule::times(
        1,
        Matcher::verb(Verb::List, Resource::Pods),
        FaultAction::DropConnection,
    ));
    let err = via.list(&ListParams::default()).await.expect_err("dropped");
    assert!(!matches!(err, kube::Error::Api(_)), "an API error: {err}");
    via.list(&ListParams::default())
        .await
        .expect("the next list passes");
    let statuses: Vec<_> = proxy.requests().iter().map(|r| r.request.status).collect();
    assert_eq!(statuses, [None, Some(200)]);
}

/// The latency knob adds at least request + response delay to every request, by the proxy's
/// own accounting, and nothing once it is set back to zero.
#[tokio::test(flavor = "multi_thread")]
async fn latency_adds_at_least_the_configured_delay() {
    let Some(plane) = apiary_envtest::shared() else {
        return;
    };
    let ns = plane.namespace("proxy-latency");
    let proxy = proxy_for(plane).await;
    let via: Api<Pod> = Api::namespaced(proxy.client(&ns).expect("client"), &ns);
    proxy.set_latency(Latency {
        request: Duration::from_millis(20),
        response: Duration::from_millis(30),
    });
    via.list(&ListParams::default()).await.expect("list");
    via.get_opt("absent").await.expect("get");
    proxy.set_latency(Latency::default());
    via.list(&ListParams::default()).await.expect("list");
    let added: Vec<_> = proxy.requests().iter().map(|r| r.added_latency).collect();
    assert_eq!(added.len(), 3, "{added:?}");
    assert!(
        added[..2].iter().all(|d| *d >= Duration::from_millis(50)),
        "{added:?}"
    );
    assert_eq!(added[2], Duration::ZERO);
}

/// The counters match a known sequence: one create with a known body, three GETs and a LIST;
/// bytes from the upstream equal the body bytes the client received.
#[tokio::test(flavor = "multi_thread")]
async fn counters_match_a_known_request_sequence() {
    let Some(plane) = apiary_envtest::shared() else {
        return;
    };
    let ns = plane.namespace("proxy-counts");
    let proxy = proxy_for(plane).await;
    let client = no_retry_client(&proxy, &ns);
    let body = pod_body("counted");
    let mut requests = vec![
        http::Request::post(format!("/api/v1/namespaces/{ns}/pods"))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.clone())
            .expect("request"),
    ];
    for _ in 0..3 {
        requests.push(
            http::Request::get(format!("/api/v1/namespaces/{ns}/pods/counted"))
                .body(Vec::new())
                .expect("request"),
        );
    }
    requests.push(
        http::Request::get(format!("/api/v1/namespaces/{ns}/pods?limit=10"))
            .body(Vec::new())
            .expect("request"),
    );
    let mut received = 0u64;
    let mut statuses = Vec::new();
    for r in requests {
        let response = client.send(r.map(Into::into)).await.expect("answered");
        statuses.push(response.status().as_u16());
        let bytes = response.into_body().collect_bytes().await.expect("body");
        received += bytes.len() as u64;
    }
    assert_eq!(statuses, [201, 200, 200, 200, 200]);
    let counts = proxy.counts();
    assert_eq!(counts.requests, 5);
    assert_eq!(counts.forwarded, 5);
    assert_eq!(counts.faulted, 0);
    assert_eq!(counts.bytes_from_client, body.len() as u64);
    assert_eq!(counts.bytes_from_upstream, received);
    let per_request: u64 = proxy.requests().iter().map(|r| r.bytes_from_upstream).sum();
    assert_eq!(per_request, received);
    let verbs: Vec<_> = proxy.requests().iter().map(|r| r.request.target).collect();
    assert_eq!(
        verbs,
        [
            Some((Resource::Pods, Verb::Create)),
            Some((Resource::Pods, Verb::Get)),
            Some((Resource::Pods, Verb::Get)),
            Some((Resource::Pods, Verb::Get)),
            Some((Resource::Pods, Verb::List)),
        ]
    );
    proxy.clear();
    assert_eq!(proxy.counts(), Default::default());
    assert!(proxy.requests().is_empty());
}

/// The `Date` shift moves the server clock the client reads forward by the set amount, and
/// leaves it alone at zero.
#[tokio::test(flavor = "multi_thread")]
async fn date_shift_moves_the_server_clock_forward() {
    let Some(plane) = apiary_envtest::shared() else {
        return;
    };
    let ns = plane.namespace("proxy-date");
    let proxy = proxy_for(plane).await;
    let client = no_retry_client(&proxy, &ns);
    let date = |r: &http::Response<kube::client::Body>| {
        let v = r.headers()[http::header::DATE].to_str().expect("ascii");
        jiff::fmt::rfc2822::parse(v)
            .expect("an HTTP-date")
            .timestamp()
    };
    let get = || {
        http::Request::get(format!("/api/v1/namespaces/{ns}/pods"))
            .body(Vec::new())
            .expect("request")
            .map(Into::into)
    };
    let before = date(&client.send(get()).await.expect("answered"));
    proxy.set_date_shift(Duration::from_secs(1300));
    let shifted = date(&client.send(get()).await.expect("answered"));
    proxy.set_date_shift(Duration::ZERO);
    let after = date(&client.send(get()).await.expect("answered"));
    assert!(
        shifted >= before + jiff::SignedDuration::from_secs(1300),
        "{before} {shifted}"
    );
    assert!(
        after < shifted && after >= before,
        "{before} {after} {shifted}"
    );
}

/// A list the client asks to be gzipped arrives compressed through the proxy and is counted at its
/// compressed size, as the gzip figures of BENCHMARKS.md § Over a real network assume.
#[tokio::test(flavor = "multi_thread")]
async fn gzipped_lists_pass_compressed_and_count_as_sent() {
    let Some(plane) = apiary_envtest::shared() else {
        return;
    };
    let ns = plane.namespace("proxy-gzip");
    let direct: Api<Pod> = Api::namespaced(plane.client(Identity::Admin), &ns);
    futures::stream::iter(0..200)
        .map(|i| {
            let direct = direct.clone();
            async move {
                direct
                    .create(&PostParams::default(), &pod(&format!("bulk-{i:03}")))
                    .await
                    .map(drop)
            }
        })
        .buffer_unordered(8)
        .try_collect::<Vec<()>>()
        .await
        .expect("create 200 pods");
    let proxy = proxy_for(plane).await;
    // kube's own decompression (its `gzip` feature) off, so the body arrives as the proxy sent it.
    let _already = rustls::crypto::ring::default_provider().install_default();
    let mut config = proxy.config(&ns);
    config.default_retry = false;
    config.disable_compression = true;
    let client = kube::Client::try_from(config).expect("client");
    let list = |gzip: bool| {
        let mut r = http::Request::get(format!("/api/v1/namespaces/{ns}/pods"));
        if gzip {
            r = r.header(http::header::ACCEPT_ENCODING, "gzip");
        }
        r.body(Vec::new()).expect("request").map(Into::into)
    };
    let plain = client.send(list(false)).await.expect("answered");
    assert!(
        plain
            .headers()
            .get(http::header::CONTENT_ENCODING)
            .is_none()
    );
    let plain_len = plain.into_body().collect_bytes().await.expect("body").len() as u64;
    proxy.clear();
    let zipped = client.send(list(true)).await.expect("answered");
    assert_eq!(zipped.headers()[http::header::CONTENT_ENCODING], "gzip");
    let zipped_len = zipped
        .into_body()
        .collect_bytes()
        .await
        .expect("body")
        .len() as u64;
    eprintln!("pod list of 200: {plain_len} bytes plain, {zipped_len} gzipped");
    assert!(zipped_len * 3 < plain_len, "{zipped_len} vs {plain_len}");
    assert_eq!(proxy.counts().bytes_from_upstream, zipped_len);
}
