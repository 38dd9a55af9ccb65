//! `Cluster::read_node` through the real `kube::Client` over a mock service (deploy.md § When a pod
//! will not go away): one GET of the cluster-scoped `/api/v1/nodes/{name}` (no namespace, no
//! `resourceVersion`), its answer mapped onto `NodeFacts` — the `Ready` condition when read,
//! `Missing` for 404 `NotFound`, `NotPermitted` for 403 `Forbidden` (never retried, never an
//! error), `Unknown` for anything else after the exchange layer's retries. Contacts no network.

use crate::mock::{Answer, cluster, ok, short_cluster, status};
use apiary_classify::stuck::NodeFacts;
use apiary_substrate::Substrate;
use serde_json::json;

fn node(ready: &str, reason: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-7", "uid": "n1", "resourceVersion": "12"},
        "status": {"conditions": [
            {"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": ready, "reason": reason, "message": "PLEG is not healthy"},
        ]},
    })
}

/// The read is one cluster-scoped GET, a quorum read, and shows the `Ready` condition.
#[tokio::test]
async fn a_node_read_is_one_cluster_scoped_get_showing_ready() {
    let (cluster, log) = cluster(vec![ok(node("False", "KubeletNotReady"))]);
    let NodeFacts::Read { ready: Some(ready) } = cluster.read_node("node-7").await else {
        panic!("read with its Ready condition");
    };
    assert_eq!(ready.kind, "Ready");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("KubeletNotReady"));
    assert_eq!(ready.message.as_deref(), Some("PLEG is not healthy"));
    let request = log.only();
    assert_eq!(request.method, "GET");
    assert_eq!(request.path(), "/api/v1/nodes/node-7");
    assert!(
        !request.query().contains("resourceVersion"),
        "{}",
        request.uri
    );
}

/// 404 `NotFound` is a node that is gone, answered at once.
#[tokio::test]
async fn not_found_is_missing() {
    let (cluster, log) = cluster(vec![status(404, "NotFound")]);
    assert_eq!(cluster.read_node("node-7").await, NodeFacts::Missing);
    assert_eq!(log.count(), 1);
}

/// 403 `Forbidden` (no `get` on nodes) is skipped silently: `NotPermitted`, one request.
#[tokio::test]
async fn forbidden_is_not_permitted_and_not_retried() {
    let (cluster, log) = cluster(vec![status(403, "Forbidden")]);
    assert_eq!(cluster.read_node("node-7").await, NodeFacts::NotPermitted);
    assert_eq!(log.count(), 1, "a refusal is never retried");
}

/// A transient 500 is retried inside the exchange window and then read normally.
#[tokio::test]
async fn a_transient_failure_is_retried() {
    let (cluster, log) = short_cluster(vec![
        status(500, "InternalError"),
        ok(node("Unknown", "NodeStatusUnknown")),
    ]);
    let NodeFacts::Read { ready: Some(ready) } = cluster.read_node("node-7").await else {
        panic!("read after the retry");
    };
    assert_eq!(ready.status, "Unknown");
    assert_eq!(log.count(), 2);
}

/// What never yields an answer (dropped connections past the budget, a 500 every time, an
/// undecodable body) is `Unknown`: nothing said about the node, no error.
#[tokio::test]
async fn no_usable_answer_is_unknown() {
    let (dropped, _) = short_cluster(vec![Answer::Drop, Answer::Drop, Answer::Drop, Answer::Drop]);
    assert_eq!(dropped.read_node("node-7").await, NodeFacts::Unknown);
    let (failing, _) = short_cluster(vec![]);
    assert_eq!(failing.read_node("node-7").await, NodeFacts::Unknown);
    let (proxied, _) = cluster(vec![Answer::Respond {
        status: 200,
        headers: vec![],
        body: b"<html>proxy</html>".to_vec(),
    }]);
    assert_eq!(proxied.read_node("node-7").await, NodeFacts::Unknown);
}
