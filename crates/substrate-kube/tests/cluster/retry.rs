//! Transient failures survived by `Cluster` through the real `kube::Client` over a mock
//! service: 5xx, 429 with `Retry-After`, dropped connections and hangs are retried inside the
//! operation budget; other refusals are not; a retried Secret create answering
//! `AlreadyExists` is success, a retried pod create goes the adopt path. Runs on Tokio's paused
//! clock, so waits cost no real time; contacts no network.

use std::time::Duration;

use crate::mock::{
    Answer, agent_pod, client, cluster, created, ok, pod_json, pod_list, status, with_header,
};
use apiary_classify::failure::Operation;
use apiary_substrate::{CreateAnswer, Substrate};
use apiary_substrate_kube::Cluster;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::time::Instant;

fn secret() -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some("agent-x-g1".to_owned()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    }
}

/// 503 then 200: the operation succeeds after exactly two requests.
#[tokio::test(start_paused = true)]
async fn retries_503_then_succeeds() {
    let (cluster, log) = cluster(vec![
        status(503, "ServiceUnavailable"),
        ok(pod_json("agent-x", "u1", "7")),
    ]);
    let pod = cluster.get_pod("agent-x").await.expect("read");
    assert!(pod.is_some());
    assert_eq!(log.count(), 2);
}

/// Every 5xx is retried, 500 included (kube's own retry does not; ours does).
#[tokio::test(start_paused = true)]
async fn retries_500_and_504() {
    let (cluster, log) = cluster(vec![
        status(500, "InternalError"),
        status(504, "Timeout"),
        ok(pod_list(vec![])),
    ]);
    cluster.list_pods("a=b").await.expect("listed");
    assert_eq!(log.count(), 3);
}

/// 429 with `Retry-After: 3` waits at least 3 s before the next attempt.
#[tokio::test(start_paused = true)]
async fn honours_retry_after_on_429() {
    let (cluster, log) = cluster(vec![
        with_header(status(429, "TooManyRequests"), "retry-after", "3"),
        ok(pod_json("agent-x", "u1", "7")),
    ]);
    let started = Instant::now();
    cluster.get_pod("agent-x").await.expect("read");
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(log.count(), 2);
}

/// 429 with `Retry-After: 0` is no licence to hammer: the next attempt still waits the plain
/// backoff (at least half the 200 ms base), and the operation succeeds on it.
#[tokio::test(start_paused = true)]
async fn retry_after_zero_on_429_still_waits_the_backoff() {
    let (cluster, log) = cluster(vec![
        with_header(status(429, "TooManyRequests"), "retry-after", "0"),
        ok(pod_json("agent-x", "u1", "7")),
    ]);
    let started = Instant::now();
    let pod = cluster.get_pod("agent-x").await.expect("read");
    assert!(pod.is_some());
    assert_eq!(log.count(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "{:?}",
        started.elapsed()
    );
    assert!(started.elapsed() < Duration::from_secs(1));
}

/// A 429 asking for longer than the budget gives up at once instead of overrunning.
#[tokio::test(start_paused = true)]
async fn retry_after_beyond_budget_gives_up() {
    let (cluster, log) = cluster(vec![with_header(
        status(429, "TooManyRequests"),
        "retry-after",
        "60",
    )]);
    let started = Instant::now();
    let error = cluster.get_pod("agent-x").await.expect_err("gave up");
    assert_eq!(error.reason(), Some("TooManyRequests"));
    assert_eq!(log.count(), 1);
    assert!(started.elapsed() < Duration::from_secs(1));
}

/// A 400 is not retried: one request, the refusal returned.
#[tokio::test(start_paused = true)]
async fn does_not_retry_400() {
    let (cluster, log) = cluster(vec![status(400, "BadRequest"), ok(pod_json("x", "u", "1"))]);
    let error = cluster.get_pod("agent-x").await.expect_err("refused");
    assert_eq!(error.reason(), Some("BadRequest"));
    assert_eq!(log.count(), 1);
}

/// Refusals the algorithm branches on are never retried (403, 404, 409, 422).
#[tokio::test(start_paused = true)]
async fn does_not_retry_decisive_refusals() {
    let (cluster, log) = cluster(vec![
        status(403, "Forbidden"),
        status(422, "Invalid"),
        status(409, "AlreadyExists"),
    ]);
    assert!(cluster.list_pods("a=b").await.is_err());
    assert!(cluster.create_pod(&agent_pod()).await.is_err());
    assert_eq!(
        cluster.create_pod(&agent_pod()).await,
        Ok(CreateAnswer::AlreadyExists)
    );
    assert_eq!(log.count(), 3);
}

/// A dropped connection is retried.
#[tokio::test(start_paused = true)]
async fn retries_dropped_connection() {
    let (cluster, log) = cluster(vec![Answer::Drop, Answer::Drop, ok(pod_list(vec![]))]);
    cluster.list_pods("a=b").await.expect("listed");
    assert_eq!(log.count(), 3);
}

/// An attempt that never answers times out (10 s by default) and is retried.
#[tokio::test(start_paused = true)]
async fn retries_after_attempt_timeout() {
    let (cluster, log) = cluster(vec![Answer::Hang, ok(pod_json("agent-x", "u1", "7"))]);
    let started = Instant::now();
    cluster.get_pod("agent-x").await.expect("read");
    assert_eq!(log.count(), 2);
    assert!(started.elapsed() >= Duration::from_secs(10));
    assert!(started.elapsed() < Duration::from_secs(16));
}

/// Persistent failure ends within the request budget with the last failure, naming the
/// operation and object.
#[tokio::test(start_paused = true)]
async fn persistent_failure_ends_within_budget() {
    let (client, log) = client(std::iter::repeat_with(|| Answer::Drop).take(1000).collect());
    let cluster = Cluster::new(client, "agents").with_request_timeout(Duration::from_secs(5));
    let started = Instant::now();
    let error = cluster.get_pod("agent-x").await.expect_err("gave up");
    assert!(
        started.elapsed() <= Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(log.count() > 2, "retried {} times", log.count());
    assert!(
        error.is_transport()
            && error.operation() == Some(Operation::GetPod)
            && error.object() == "agents/agent-x",
        "{error:?}"
    );
}

/// Hanging attempts never stretch an operation past its budget.
#[tokio::test(start_paused = true)]
async fn hangs_end_within_budget() {
    let (client, _log) = client(std::iter::repeat_with(|| Answer::Hang).take(100).collect());
    let cluster = Cluster::new(client, "agents");
    let started = Instant::now();
    let error = cluster.list_pods("a=b").await.expect_err("timed out");
    assert!(
        started.elapsed() <= Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.reason(), None);
}

/// The request timeout is clamped to 30 s.
#[tokio::test]
async fn request_timeout_is_at_most_thirty_seconds() {
    let (client, _log) = client(vec![]);
    let cluster = Cluster::new(client, "agents").with_request_timeout(Duration::from_secs(600));
    assert_eq!(cluster.retry_policy().budget, Duration::from_secs(30));
}

/// A Secret create whose first attempt got no answer and whose retry answers `AlreadyExists`
/// created the Secret: success.
#[tokio::test(start_paused = true)]
async fn retried_secret_create_already_exists_is_created() {
    let (cluster, log) = cluster(vec![Answer::Drop, status(409, "AlreadyExists")]);
    assert_eq!(
        cluster.create_secret(&secret()).await,
        Ok(CreateAnswer::Created)
    );
    assert_eq!(log.count(), 2);
}

/// A Secret create answered `AlreadyExists` at once is reported as such.
#[tokio::test(start_paused = true)]
async fn first_secret_create_already_exists_is_reported() {
    let (cluster, _log) = cluster(vec![status(409, "AlreadyExists")]);
    assert_eq!(
        cluster.create_secret(&secret()).await,
        Ok(CreateAnswer::AlreadyExists)
    );
}

/// A retried pod create answering `AlreadyExists` goes the normal adopt path.
#[tokio::test(start_paused = true)]
async fn retried_pod_create_already_exists_is_adopt_path() {
    let (cluster, log) = cluster(vec![status(503, ""), status(409, "AlreadyExists")]);
    assert_eq!(
        cluster.create_pod(&agent_pod()).await,
        Ok(CreateAnswer::AlreadyExists)
    );
    assert_eq!(log.count(), 2);
}

/// Retries re-send the same request (same method, URI and body).
#[tokio::test(start_paused = true)]
async fn retries_resend_the_same_request() {
    let (cluster, log) = cluster(vec![Answer::Drop, created(serde_json::json!({}))]);
    cluster.create_pod(&agent_pod()).await.expect("created");
    let requests = log.all();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].method, requests[1].method);
    assert_eq!(requests[0].uri, requests[1].uri);
    assert_eq!(requests[0].body, requests[1].body);
}

/// An RBAC-shaped 403, as the authorizer words it.
fn rbac_403() -> Answer {
    Answer::Respond {
        status: 403,
        headers: vec![],
        body: serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "reason": "Forbidden", "code": 403,
            "message": "pods \"agent-x\" is forbidden: User \"limited\" cannot get resource \
                        \"pods\" in API group \"\" in the namespace \"agents\"",
        })
        .to_string()
        .into_bytes(),
    }
}

/// deploy.md § Who refused it: an RBAC 403 from a server whose `/readyz` is not ok (a restart,
/// its authorization caches not loaded) is retried until the server is ready and answers.
#[tokio::test(start_paused = true)]
async fn an_rbac_403_from_a_server_that_is_not_ready_is_retried() {
    let (cluster, log) = cluster(vec![
        rbac_403(),
        status(500, "InternalError"),
        ok(pod_json("agent-x", "u1", "7")),
    ]);
    let pod = cluster.get_pod("agent-x").await.expect("read once ready");
    assert!(pod.is_some());
    let paths: Vec<String> = log.all().iter().map(|c| c.path().to_owned()).collect();
    assert_eq!(paths.len(), 3, "{paths:?}");
    assert_eq!(paths[1], "/readyz");
}

/// A genuine denial on a ready server is reported at once, with one extra request (the
/// `/readyz` read); a 403 that is not RBAC's asks nothing more.
#[tokio::test(start_paused = true)]
async fn a_genuine_denial_on_a_ready_server_is_final_after_one_readyz() {
    let (cluster, log) = cluster(vec![rbac_403(), ok(serde_json::json!("ok"))]);
    let failure = cluster.get_pod("agent-x").await.expect_err("denied");
    assert_eq!(failure.code(), Some(403));
    assert_eq!(log.count(), 2);
    assert_eq!(log.all()[1].path(), "/readyz");
    let (cluster, log) = crate::mock::cluster(vec![status(403, "Forbidden")]);
    cluster.get_pod("agent-x").await.expect_err("denied");
    assert_eq!(
        log.count(),
        1,
        "no readiness read for a 403 that is not RBAC's"
    );
}
