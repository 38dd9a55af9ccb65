//! An operation's deadline bounds the retries of every request it sends (deploy.md § Deadlines of
//! the other commands: with the server down, a 3 s deadline once overran to about 35 s, because
//! each request retried for its own 30 s budget). Through the real `kube::Client` over a mock
//! service, on Tokio's paused clock: what is asserted is the number of requests sent and the
//! virtual time at which the operation ended, both deterministic. Contacts no network.

use std::time::Duration;

use crate::mock::{Answer, client, ok, pod_json};
use apiary_substrate::Substrate;
use apiary_substrate_kube::Cluster;
use tokio::time::Instant;

const DEADLINE: Duration = Duration::from_secs(3);

fn dropping(answers: usize) -> Vec<Answer> {
    std::iter::repeat_with(|| Answer::Drop)
        .take(answers)
        .collect()
}

/// A dead server (every connection dropped) ends a request at the deadline, not at the end
/// of its 30 s budget.
#[tokio::test(start_paused = true)]
async fn a_dead_server_ends_the_request_at_the_deadline() {
    let (client, log) = client(dropping(1_000));
    let cluster = Cluster::new(client, "agents").with_deadline(DEADLINE);
    let started = Instant::now();
    cluster.get_pod("agent-x").await.expect_err("unreachable");
    assert!(started.elapsed() <= DEADLINE, "{:?}", started.elapsed());
    assert!(
        log.count() > 1,
        "retried before the deadline: {}",
        log.count()
    );
}

/// The same request without a deadline keeps retrying past 3 s, within its budget: the
/// deadline, not a shorter budget, is what stopped it above.
#[tokio::test(start_paused = true)]
async fn without_a_deadline_the_budget_alone_bounds_it() {
    let (client, _log) = client(dropping(1_000));
    let cluster = Cluster::new(client, "agents");
    let started = Instant::now();
    cluster.get_pod("agent-x").await.expect_err("unreachable");
    assert!(started.elapsed() > DEADLINE, "{:?}", started.elapsed());
    assert!(started.elapsed() <= Duration::from_secs(30));
}

/// Requests sent after the deadline are not each given a fresh budget: the first gets one
/// attempt and no retry; once the deadline is one attempt limit past, nothing is sent. So the
/// operation ends within one request timeout of its deadline however many requests it sends.
#[tokio::test(start_paused = true)]
async fn requests_after_the_deadline_get_one_attempt_then_none() {
    let (client, log) = client(dropping(1_000));
    let cluster = Cluster::new(client, "agents").with_deadline(DEADLINE);
    let limit = cluster.retry_policy().attempt_timeout;
    cluster.get_pod("agent-x").await.expect_err("unreachable");
    tokio::time::sleep_until(Instant::now() + DEADLINE).await;
    let before = log.count();
    cluster.get_pod("agent-x").await.expect_err("one attempt");
    cluster.list_pods("a=b").await.expect_err("one attempt");
    assert_eq!(log.count(), before + 2, "one attempt each, no retry");
    tokio::time::sleep(limit).await;
    let started = Instant::now();
    let error = cluster.get_pod("agent-x").await.expect_err("not sent");
    assert_eq!(
        log.count(),
        before + 2,
        "nothing sent past deadline + one request"
    );
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert!(error.to_string().contains("deadline"), "{error}");
}

/// A hang in flight at the deadline is cut one attempt limit after it at the latest, and is
/// not retried.
#[tokio::test(start_paused = true)]
async fn a_hang_at_the_deadline_is_not_retried() {
    let (client, log) = client(vec![Answer::Hang, ok(pod_json("agent-x", "u1", "7"))]);
    let cluster = Cluster::new(client, "agents").with_deadline(DEADLINE);
    let limit = cluster.retry_policy().attempt_timeout;
    let started = Instant::now();
    cluster.get_pod("agent-x").await.expect_err("timed out");
    assert_eq!(log.count(), 1);
    assert!(
        started.elapsed() <= DEADLINE + limit,
        "{:?}",
        started.elapsed()
    );
}

/// Before the deadline a transient failure is still retried and the request succeeds.
#[tokio::test(start_paused = true)]
async fn before_the_deadline_transient_failures_are_retried() {
    let (client, log) = client(vec![Answer::Drop, ok(pod_json("agent-x", "u1", "7"))]);
    let cluster = Cluster::new(client, "agents").with_deadline(DEADLINE);
    assert!(cluster.get_pod("agent-x").await.expect("read").is_some());
    assert_eq!(log.count(), 2);
}
