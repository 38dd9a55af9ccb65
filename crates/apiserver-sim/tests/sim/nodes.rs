//! Nodes over plain HTTP (deploy.md § When a pod will not go away): `GET /api/v1/nodes/<name>`
//! answers a node the test registered in the model with its `Ready` condition, the apiserver's 404
//! `NotFound` Status for any other name, the authorizer's cluster-scoped 403 when reads of nodes
//! are denied, and 405 for every other verb.
//!
//! Layer: integration tests over a loopback socket; they never contact a real cluster.

use crate::common::{call, get, get_table};
use apiary_apiserver_sim::{Resource, SimOptions, Simulator, Verb};
use apiary_cluster_model::NodeReady;

async fn sim() -> Simulator {
    Simulator::start(SimOptions::default())
        .await
        .expect("simulator starts")
}

/// A registered node is served with its `Ready` condition; an absent one is 404 `NotFound`.
#[tokio::test]
async fn a_registered_node_is_served_and_an_absent_one_is_not_found() {
    let s = sim().await;
    s.with_model(|m| {
        m.create_node(
            "node-7",
            Some(NodeReady::with("False", Some("KubeletNotReady"))),
        )
        .expect("registered")
    });
    let read = get(s.addr(), "/api/v1/nodes/node-7").await;
    assert_eq!(read.status, 200);
    let node = read.json();
    assert_eq!(node["kind"], "Node");
    assert_eq!(node["metadata"]["name"], "node-7");
    assert!(node["metadata"].get("namespace").is_none());
    let conditions = node["status"]["conditions"].as_array().expect("conditions");
    assert_eq!(conditions.len(), 1);
    assert_eq!(conditions[0]["type"], "Ready");
    assert_eq!(conditions[0]["status"], "False");
    assert_eq!(conditions[0]["reason"], "KubeletNotReady");

    let missing = get(s.addr(), "/api/v1/nodes/node-1").await;
    assert_eq!(missing.status, 404);
    let status = missing.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "nodes \"node-1\" not found");
    assert_eq!(status["details"]["kind"], "nodes");
}

/// A denied node read is the authorizer's 403 at the cluster scope; lifting it serves again.
#[tokio::test]
async fn denied_node_reads_are_forbidden_at_the_cluster_scope() {
    let s = sim().await;
    s.with_model(|m| {
        m.create_node("n", Some(NodeReady::ready()))
            .expect("registered")
    });
    s.faults().deny(Verb::Get, Some(Resource::Nodes));
    let denied = get(s.addr(), "/api/v1/nodes/n").await;
    assert_eq!(denied.status, 403);
    let status = denied.json();
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "nodes \"n\" is forbidden: User \"system:anonymous\" cannot get resource \"nodes\" in \
         API group \"\" at the cluster scope"
    );
    let log = s.requests();
    let last = log.last().expect("logged");
    assert!(last.is(Verb::Get, Resource::Nodes), "{last:?}");
    s.faults().allow_all();
    assert_eq!(get(s.addr(), "/api/v1/nodes/n").await.status, 200);
}

/// Nodes are read-only here: list, delete and create are not served (405).
#[tokio::test]
async fn only_get_is_served_on_nodes() {
    let s = sim().await;
    s.with_model(|m| m.create_node("n", None).expect("registered"));
    assert_eq!(get(s.addr(), "/api/v1/nodes").await.status, 405);
    assert_eq!(
        call(s.addr(), "DELETE", "/api/v1/nodes/n", None)
            .await
            .status,
        405
    );
    assert_eq!(
        call(
            s.addr(),
            "POST",
            "/api/v1/nodes",
            Some(&serde_json::json!({"kind": "Node"}))
        )
        .await
        .status,
        405
    );
    assert_eq!(get(s.addr(), "/api/v1/nodes/n").await.status, 200);
}

/// `kubectl get node` asks for a Table: the STATUS column reads Ready or NotReady.
#[tokio::test]
async fn node_tables_show_readiness() {
    let s = sim().await;
    s.with_model(|m| {
        m.create_node("up", Some(NodeReady::ready()))
            .expect("registered");
        m.create_node("down", Some(NodeReady::with("Unknown", None)))
            .expect("registered");
    });
    let up = get_table(s.addr(), "/api/v1/nodes/up").await.json();
    assert_eq!(up["rows"][0]["cells"][0], "up");
    assert_eq!(up["rows"][0]["cells"][1], "Ready");
    let down = get_table(s.addr(), "/api/v1/nodes/down").await.json();
    assert_eq!(down["rows"][0]["cells"][1], "NotReady");
}
