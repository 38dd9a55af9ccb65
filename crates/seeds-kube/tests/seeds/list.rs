//! `PodSeeds` in list mode through a real `kube::Client` over a scripted service (seeds.md
//! § Construction and options, § Resolving, § Errors; scenarios K6–K9, K20–K25, K27, K28).
//!
//! I/O mapping tests: they pin the requests sent and how answers map onto results and the three
//! error cases. Networking only on 127.0.0.1 (K22).

use std::net::SocketAddr;
use std::num::{NonZeroU16, NonZeroU32};
use std::sync::{Arc, Mutex};

use crate::mock::*;
use apiary_seeds::{InvalidPods, Pods, Port, SkipReason};
use apiary_seeds_kube::{PodSeeds, SeedsError, SeedsMode, SeedsOptions};
use serde_json::Value;

fn pods(namespace: Option<&str>, port: Port) -> Pods {
    Pods {
        namespace: namespace.map(str::to_owned),
        label_selector: "app=ring-node".to_owned(),
        port,
    }
}

fn gossip() -> Port {
    Port::Name("gossip".to_owned())
}

fn fixed(port: u16) -> Port {
    Port::Number(NonZeroU16::new(port).unwrap())
}

fn addrs(texts: &[&str]) -> Vec<SocketAddr> {
    texts.iter().map(|text| text.parse().unwrap()).collect()
}

fn one_page(items: Vec<Value>) -> MockApi {
    let body = page(&items, None, "100");
    MockApi::new(move |_| Reply::Json(200, body.clone()))
}

/// K6: the LIST path, selector, limit; no resourceVersion, no fieldSelector, no continue on the
/// first page.
#[tokio::test]
async fn k6_list_request_is_a_quorum_read_of_the_namespace() {
    let api = one_page(vec![running("a", "10.0.0.1")]);
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    assert_eq!(seeds.resolve().await.unwrap(), addrs(&["10.0.0.1:7000"]));
    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    let uri = &requests[0];
    assert!(uri.starts_with("/api/v1/namespaces/ring/pods?"), "{uri}");
    assert!(uri.contains("labelSelector=app%3Dring-node"), "{uri}");
    assert_eq!(query_param(uri, "limit").as_deref(), Some("500"));
    for absent in ["resourceVersion", "fieldSelector", "continue", "watch"] {
        assert_eq!(query_param(uri, absent), None, "{absent} in {uri}");
    }
}

/// K6: `namespace: None` lists the client's default namespace.
#[tokio::test]
async fn k6_no_namespace_means_the_clients_default() {
    let api = one_page(vec![running("a", "10.0.0.1")]);
    let mut seeds = PodSeeds::with_client(pods(None, gossip()), api.client()).unwrap();
    assert_eq!(seeds.namespace(), "default-ns");
    seeds.resolve().await.unwrap();
    assert!(api.requests()[0].starts_with("/api/v1/namespaces/default-ns/pods?"));
}

/// The page size option is the `limit` sent.
#[tokio::test]
async fn page_size_option_is_the_limit() {
    let api = one_page(vec![running("a", "10.0.0.1")]);
    let options = SeedsOptions {
        page_size: NonZeroU32::new(7).unwrap(),
        mode: SeedsMode::List,
    };
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client())
        .unwrap()
        .with_options(options);
    seeds.resolve().await.unwrap();
    assert_eq!(
        query_param(&api.requests()[0], "limit").as_deref(),
        Some("7")
    );
    assert_eq!(SeedsOptions::default().page_size.get(), 500);
    assert_eq!(SeedsOptions::default().mode, SeedsMode::List);
}

/// K7: a 403 is a `Client` error carrying the status, never `NoAddresses` or an empty list.
#[tokio::test]
async fn k7_forbidden_is_a_client_error() {
    let body = status(
        403,
        "Forbidden",
        "pods is forbidden: User \"x\" cannot list resource \"pods\"",
    );
    let api = MockApi::new(move |_| Reply::Json(403, body.clone()));
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    let error = seeds.resolve().await.unwrap_err();
    match &error {
        SeedsError::Client(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403);
            assert_eq!(status.reason, "Forbidden");
        }
        other => panic!("expected a client error, got {other:?}"),
    }
    assert_eq!(error.status_code(), Some(403));
    assert!(error.to_string().contains("forbidden"), "{error}");
}

/// K8: every invalid configuration is refused by `with_client` before any request.
#[tokio::test]
async fn k8_with_client_validates_before_any_request() {
    let api = MockApi::new(|_| Reply::Never);
    let cases = [
        (
            Pods {
                label_selector: " ".to_owned(),
                ..pods(Some("ring"), gossip())
            },
            InvalidPods::BlankLabelSelector,
        ),
        (pods(Some(""), gossip()), InvalidPods::BlankNamespace),
        (
            pods(Some("ring"), Port::Name(String::new())),
            InvalidPods::BlankPortName,
        ),
    ];
    for (config, expected) in cases {
        let error = PodSeeds::with_client(config, api.client()).unwrap_err();
        assert!(
            matches!(error, SeedsError::Config(found) if found == expected),
            "{error:?}"
        );
        assert_eq!(error.to_string(), expected.to_string());
        assert_eq!(error.status_code(), None);
    }
    assert!(api.requests().is_empty());
}

/// K9: `new` validates before building a client, so a bad configuration is reported as such
/// even where no cluster configuration exists. The test re-runs itself in a child process whose
/// environment has no kubeconfig and no in-cluster service account (the environment cannot be
/// changed in-process without `unsafe`); there a valid configuration must fail as `Client`,
/// which proves the environment really has no cluster configuration, while the blank selector
/// still fails as `Config`.
#[tokio::test]
async fn k9_new_validates_before_inferring_a_client() {
    const CHILD: &str = "APIARY_K9_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let blank = Pods {
            label_selector: String::new(),
            ..pods(None, gossip())
        };
        let error = PodSeeds::new(blank).await.unwrap_err();
        assert!(
            matches!(error, SeedsError::Config(InvalidPods::BlankLabelSelector)),
            "{error:?}"
        );
        let error = PodSeeds::new(pods(None, gossip())).await.unwrap_err();
        assert!(matches!(error, SeedsError::Client(_)), "{error:?}");
        return;
    }
    let nowhere = tempfile::tempdir().expect("temporary directory");
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            // Its path in the one mock-tier binary (`tests/seeds/main.rs`).
            "list::k9_new_validates_before_inferring_a_client",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("HOME", nowhere.path())
        .env("KUBECONFIG", nowhere.path().join("no-such-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .output()
        .expect("re-run the test binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// K20, K21, K24: 401, 400, 500 and 503 are `Client` errors with their status.
#[tokio::test]
async fn k20_k21_k24_refusals_are_client_errors() {
    for (code, reason) in [
        (401, "Unauthorized"),
        (400, "BadRequest"),
        (500, "InternalError"),
        (503, "ServiceUnavailable"),
    ] {
        let body = status(code, reason, "refused");
        let api = MockApi::new(move |_| Reply::Json(code, body.clone()));
        let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
        let error = seeds.resolve().await.unwrap_err();
        assert_eq!(error.status_code(), Some(code), "{error:?}");
        assert_eq!(api.requests().len(), 1, "no retry inside list mode");
    }
}

/// A refusal whose body is not a Status keeps the HTTP status and is never quoted (the quoting
/// rule of the crate's exchange layer, the same as `Cluster`'s).
#[tokio::test]
async fn non_status_refusal_keeps_the_http_status() {
    let api = MockApi::new(|_| Reply::Json(502, "<html>bad gateway</html>".to_owned()));
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    let error = seeds.resolve().await.unwrap_err();
    assert_eq!(error.status_code(), Some(502));
    assert_eq!(
        error.to_string(),
        "the apiserver answered 502 Bad Gateway: the response carried no Status body (24 bytes)"
    );
    assert!(!format!("{error:?}").contains("bad gateway"), "{error:?}");
}

/// K22: connection refused on loopback is a `Client` error.
#[tokio::test]
async fn k22_connection_refused_is_a_client_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), client).unwrap();
    let error = seeds.resolve().await.unwrap_err();
    assert!(matches!(error, SeedsError::Client(_)), "{error:?}");
    assert_eq!(error.status_code(), None);
}

/// K23: a 200 with a malformed body is a `Client` (decode) error.
#[tokio::test]
async fn k23_malformed_body_is_a_client_error() {
    for body in ["not json", r#"{"items": [{"status": {"podIP": 5}}]}"#] {
        let text = body.to_owned();
        let api = MockApi::new(move |_| Reply::Json(200, text.clone()));
        let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
        let error = seeds.resolve().await.unwrap_err();
        assert!(
            matches!(error, SeedsError::Client(kube::Error::SerdeError(_))),
            "{error:?}"
        );
    }
}

/// Every request is bounded: a never-answering apiserver is a `Client` error after 30 s.
#[tokio::test(start_paused = true)]
async fn hung_request_times_out_as_a_client_error() {
    let api = MockApi::new(|_| Reply::Never);
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    let started = tokio::time::Instant::now();
    let error = seeds.resolve().await.unwrap_err();
    assert!(
        matches!(error, SeedsError::Client(kube::Error::Service(_))),
        "{error:?}"
    );
    assert_eq!(started.elapsed().as_secs(), 30);
}

/// K25: each resolve lists once, and a change between calls is reflected.
#[tokio::test]
async fn k25_each_resolve_lists_again() {
    let items = Arc::new(Mutex::new(vec![running("a", "10.0.0.1")]));
    let shared = Arc::clone(&items);
    let api = MockApi::new(move |_| Reply::Json(200, page(&shared.lock().unwrap(), None, "1")));
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    assert_eq!(seeds.resolve().await.unwrap(), addrs(&["10.0.0.1:7000"]));
    items.lock().unwrap().push(running("b", "10.0.0.2"));
    assert_eq!(
        seeds.resolve().await.unwrap(),
        addrs(&["10.0.0.1:7000", "10.0.0.2:7000"])
    );
    assert_eq!(api.requests().len(), 2);
}

/// Zero addresses is `NoAddresses` with the report; `resolve_detailed` returns the report.
#[tokio::test]
async fn no_address_is_an_error_with_the_report() {
    let api = one_page(vec![
        terminating(running("a", "10.0.0.1")),
        running("b", "10.0.0.2"),
    ]);
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), fixed(9000)), api.client()).unwrap();
    let detailed = seeds.resolve_detailed().await.unwrap();
    assert_eq!(detailed.addresses, addrs(&["10.0.0.2:9000"]));
    assert_eq!(detailed.report.matched, 2);
    assert_eq!(detailed.report.skipped.get(SkipReason::Terminating), 1);

    let api = one_page(vec![terminating(running("a", "10.0.0.1"))]);
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), fixed(9000)), api.client()).unwrap();
    match seeds.resolve().await.unwrap_err() {
        SeedsError::NoAddresses(error) => {
            assert_eq!(error.selector, "app=ring-node");
            assert_eq!(error.namespace, "ring");
            assert_eq!(error.report.matched, 1);
            assert!(error.to_string().contains("skipped 1 terminating"));
        }
        other => panic!("expected NoAddresses, got {other:?}"),
    }
}

/// A paginating mock: `total` pods served `limit` at a time, continue tokens are offsets.
fn paginated(total: usize, expire: Arc<Mutex<usize>>) -> MockApi {
    let all: Vec<Value> = (0..total)
        .map(|i| {
            running(
                &format!("pod-{i}"),
                &format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256),
            )
        })
        .collect();
    MockApi::new(move |uri| {
        let limit: usize = query_param(uri, "limit").unwrap().parse().unwrap();
        let start: usize = query_param(uri, "continue").map_or(0, |token| token.parse().unwrap());
        if start > 0 {
            let mut remaining = expire.lock().unwrap();
            if *remaining > 0 {
                *remaining -= 1;
                return Reply::Json(
                    410,
                    status(410, "Expired", "The provided continue parameter is too old"),
                );
            }
        }
        let end = (start + limit).min(all.len());
        let token = (end < all.len()).then(|| end.to_string());
        Reply::Json(200, page(&all[start..end], token.as_deref(), "77"))
    })
}

/// K27: 1,200 pods with page size 500 take three requests, the later two with `continue`, and
/// equal a single unpaginated list.
#[tokio::test]
async fn k27_pagination_follows_continue_tokens() {
    let api = paginated(1200, Arc::default());
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    let paged = seeds.resolve_detailed().await.unwrap();
    let requests = api.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(query_param(&requests[0], "continue"), None);
    assert_eq!(
        query_param(&requests[1], "continue").as_deref(),
        Some("500")
    );
    assert_eq!(
        query_param(&requests[2], "continue").as_deref(),
        Some("1000")
    );
    for uri in &requests {
        assert_eq!(query_param(uri, "resourceVersion"), None, "{uri}");
        assert!(uri.contains("labelSelector=app%3Dring-node"));
    }

    let single = paginated(1200, Arc::default());
    let options = SeedsOptions {
        page_size: NonZeroU32::new(5000).unwrap(),
        ..SeedsOptions::default()
    };
    let mut unpaged = PodSeeds::with_client(pods(Some("ring"), gossip()), single.client())
        .unwrap()
        .with_options(options);
    let whole = unpaged.resolve_detailed().await.unwrap();
    assert_eq!(single.requests().len(), 1);
    assert_eq!(paged, whole);
    assert_eq!(paged.addresses.len(), 1200);
    assert_eq!(paged.report.matched, 1200);
}

/// K28: a `410 Expired` continue restarts from the first page with nothing counted twice.
#[tokio::test]
async fn k28_expired_continue_restarts_the_listing() {
    let api = paginated(1200, Arc::new(Mutex::new(1)));
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    let result = seeds.resolve_detailed().await.unwrap();
    assert_eq!(result.report.matched, 1200, "no pod counted twice");
    assert_eq!(result.addresses.len(), 1200);
    let continues: Vec<Option<String>> = api
        .requests()
        .iter()
        .map(|uri| query_param(uri, "continue"))
        .collect();
    let expected = [None, Some("500"), None, Some("500"), Some("1000")];
    assert_eq!(continues, expected.map(|token| token.map(str::to_owned)));
}

/// K28: two expiries still succeed (three starts); the third 410 is a `Client` error.
#[tokio::test]
async fn k28_third_expired_continue_is_a_client_error() {
    let api = paginated(1200, Arc::new(Mutex::new(2)));
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    assert_eq!(seeds.resolve().await.unwrap().len(), 1200);

    let api = paginated(1200, Arc::new(Mutex::new(3)));
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    let error = seeds.resolve().await.unwrap_err();
    assert_eq!(error.status_code(), Some(410));
    let first_pages = api
        .requests()
        .iter()
        .filter(|uri| query_param(uri, "continue").is_none())
        .count();
    assert_eq!(first_pages, 3);
}

/// A 410 on the first page (no continue token) is not a restart: it is a `Client` error.
#[tokio::test]
async fn gone_on_the_first_page_is_not_restarted() {
    let body = status(410, "Expired", "too old");
    let api = MockApi::new(move |_| Reply::Json(410, body.clone()));
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    assert_eq!(seeds.resolve().await.unwrap_err().status_code(), Some(410));
    assert_eq!(api.requests().len(), 1);
}

/// A 410 on a continue request whose reason is not `Expired` is surfaced, not restarted.
#[tokio::test]
async fn gone_with_another_reason_is_not_restarted() {
    let first = page(&[running("a", "10.0.0.1")], Some("next"), "1");
    let gone = status(410, "Gone", "gone");
    let api = MockApi::new(move |uri| {
        if uri.contains("continue=") {
            Reply::Json(410, gone.clone())
        } else {
            Reply::Json(200, first.clone())
        }
    });
    let mut seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    assert_eq!(seeds.resolve().await.unwrap_err().status_code(), Some(410));
    assert_eq!(api.requests().len(), 2);
}

/// `Debug` shows the configuration but never the client.
#[tokio::test]
async fn debug_omits_the_client() {
    let api = MockApi::new(|_| Reply::Never);
    let seeds = PodSeeds::with_client(pods(Some("ring"), gossip()), api.client()).unwrap();
    let text = format!("{seeds:?}");
    assert!(text.starts_with("PodSeeds {"), "{text}");
    assert!(
        text.contains("app=ring-node") && text.contains("ring"),
        "{text}"
    );
    assert!(!text.to_lowercase().contains("client"), "{text}");
}
