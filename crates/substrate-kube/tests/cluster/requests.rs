//! Request shapes of `Cluster` through the real `kube::Client` over a mock service
//! (deploy.md § Cluster interface and requests; § Apiserver mapping A1, A2, A7, A8; § Persistent
//! workspace): paths, query strings, bodies, and the pod list's `Date` server clock. Contacts no
//! network.

use crate::mock::{cluster, created, ok, pod_json, pod_list, status, with_header};
use apiary_classify::binding::{APIARY, Owner};
use apiary_classify::facts::ObjectMarks;
use apiary_classify::workspace::{ClaimDeletion, claim_deletion};
use apiary_substrate::fake::proof::{pod_deletion, secret_deletion};
use apiary_substrate::{CreateAnswer, DeleteAnswer, Substrate};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const SELECTOR: &str = "apiary.dev/agent-id=abc,apiary.dev/managed=true";

/// A1: the pod list goes to `/api/v1/namespaces/<ns>/pods?` with the URL-encoded selector and
/// no `resourceVersion` or `limit`, and the `Date` header becomes the server clock.
#[tokio::test]
async fn a1_pod_list_request_and_date_clock() {
    let answer = with_header(
        ok(pod_list(vec![pod_json("agent-x", "u1", "7")])),
        "date",
        "Sun, 02 Aug 2026 04:00:00 GMT",
    );
    let (cluster, log) = cluster(vec![answer]);
    let listed = cluster.list_pods(SELECTOR).await.expect("listed");
    let request = log.only();
    assert_eq!(request.method, "GET");
    assert!(
        request.uri.starts_with("/api/v1/namespaces/agents/pods?"),
        "{}",
        request.uri
    );
    assert!(
        request
            .query()
            .contains("labelSelector=apiary.dev%2Fagent-id%3Dabc%2Capiary.dev%2Fmanaged%3Dtrue"),
        "{}",
        request.uri
    );
    assert!(
        !request.query().contains("resourceVersion"),
        "{}",
        request.uri
    );
    assert!(!request.query().contains("limit"), "{}", request.uri);
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].metadata.name.as_deref(), Some("agent-x"));
    assert_eq!(
        listed
            .server_now
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        Some("2026-08-02T04:00:00Z".to_owned())
    );
}

/// A2: a garbled `Date` header still returns the items, with no clock.
#[tokio::test]
async fn a2_garbled_date_items_without_clock() {
    let answer = with_header(
        ok(pod_list(vec![pod_json("agent-x", "u1", "7")])),
        "date",
        "not a date",
    );
    let (cluster, _log) = cluster(vec![answer]);
    let listed = cluster.list_pods(SELECTOR).await.expect("listed");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.server_now, None);
}

/// A2: no `Date` header at all: items returned, no clock.
#[tokio::test]
async fn a2_absent_date_items_without_clock() {
    let (cluster, _log) = cluster(vec![ok(pod_list(vec![pod_json("agent-x", "u1", "7")]))]);
    let listed = cluster.list_pods(SELECTOR).await.expect("listed");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.server_now, None);
}

/// The Secret list goes to `/api/v1/namespaces/<ns>/secrets?` with the selector and no
/// `resourceVersion`.
#[tokio::test]
async fn secret_list_is_a_quorum_read() {
    let list = serde_json::json!({
        "apiVersion": "v1", "kind": "SecretList", "metadata": {},
        "items": [{"metadata": {"name": "agent-x-g1", "uid": "s1"}}],
    });
    let (cluster, log) = cluster(vec![ok(list)]);
    let secrets = cluster.list_secrets(SELECTOR).await.expect("listed");
    assert_eq!(secrets.len(), 1);
    let request = log.only();
    assert_eq!(request.method, "GET");
    assert!(
        request
            .uri
            .starts_with("/api/v1/namespaces/agents/secrets?"),
        "{}",
        request.uri
    );
    assert!(
        request
            .query()
            .contains("labelSelector=apiary.dev%2Fagent-id%3Dabc")
    );
    assert!(!request.query().contains("resourceVersion"));
}

/// A8: pod and Secret GETs carry no `resourceVersion` (no query at all).
#[tokio::test]
async fn a8_gets_carry_no_resource_version() {
    let secret =
        serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let (cluster, log) = cluster(vec![ok(pod_json("agent-x", "u1", "7")), ok(secret)]);
    let pod = cluster.get_pod("agent-x").await.expect("read");
    assert_eq!(pod.and_then(|p| p.metadata.uid).as_deref(), Some("u1"));
    assert!(cluster.secret_exists("agent-x-g1").await.expect("read"));
    let requests = log.all();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].uri, "/api/v1/namespaces/agents/pods/agent-x");
    assert_eq!(requests[1].method, "GET");
    assert_eq!(
        requests[1].uri,
        "/api/v1/namespaces/agents/secrets/agent-x-g1"
    );
}

/// The existence check of a Secret asks for its metadata only (`as=PartialObjectMetadata`), so
/// no value travels (deploy.md § Credentials from the cluster); only `read_secret_values`, the
/// `--replace` comparison, asks for the object, and decodes its `data`.
#[tokio::test]
async fn secret_existence_is_a_metadata_only_read() {
    let metadata = serde_json::json!({"apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata", "metadata": {"name": "team-creds"}});
    let secret = serde_json::json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "agent-x-g1"}, "data": {"K": "dg=="}});
    let (cluster, log) = cluster(vec![ok(metadata), ok(secret), status(404, "NotFound")]);
    assert!(cluster.secret_exists("team-creds").await.expect("read"));
    let values = cluster
        .read_secret_values("agent-x-g1")
        .await
        .expect("read");
    assert_eq!(
        format!("{values:?}"),
        r#"Some(SecretValues { keys: ["K"], .. })"#,
        "the Debug form shows keys only"
    );
    assert_eq!(cluster.read_secret_values("gone").await, Ok(None));
    let requests = log.all();
    let accept = requests[0].accept.as_deref().unwrap_or_default();
    assert!(accept.contains("as=PartialObjectMetadata"), "{accept}");
    assert!(
        !requests[1]
            .accept
            .as_deref()
            .unwrap_or_default()
            .contains("PartialObjectMetadata")
    );
    assert_eq!(
        requests[1].uri,
        "/api/v1/namespaces/agents/secrets/agent-x-g1"
    );
}

/// A7: the pod delete body carries uid and resourceVersion preconditions and nothing else: no
/// `gracePeriodSeconds`, no `propagationPolicy`.
#[tokio::test]
async fn a7_pod_delete_body_is_fenced_without_grace_override() {
    let (cluster, log) = cluster(vec![ok(pod_json("agent-x", "u1", "8"))]);
    let outcome = cluster
        .delete_pod(&pod_deletion("agent-x", "u1", "7"))
        .await
        .expect("deleted");
    assert_eq!(outcome, DeleteAnswer::Accepted);
    let request = log.only();
    assert_eq!(request.method, "DELETE");
    assert_eq!(request.path(), "/api/v1/namespaces/agents/pods/agent-x");
    assert_eq!(request.query(), "");
    let body = request.json();
    assert_eq!(
        body,
        serde_json::json!({"preconditions": {"uid": "u1", "resourceVersion": "7"}})
    );
    let text = String::from_utf8(request.body.clone()).expect("utf-8");
    assert!(!text.contains("gracePeriodSeconds"), "{text}");
    assert!(!text.contains("propagationPolicy"), "{text}");
}

/// A Secret delete is uid-fenced only.
#[tokio::test]
async fn secret_delete_is_uid_fenced() {
    let (cluster, log) = cluster(vec![ok(
        serde_json::json!({"kind": "Status", "status": "Success"}),
    )]);
    let outcome = cluster
        .delete_secret(&secret_deletion("agent-x-g1", "s1"))
        .await
        .expect("deleted");
    assert_eq!(outcome, DeleteAnswer::Accepted);
    let request = log.only();
    assert_eq!(request.method, "DELETE");
    assert_eq!(
        request.path(),
        "/api/v1/namespaces/agents/secrets/agent-x-g1"
    );
    assert_eq!(
        request.json(),
        serde_json::json!({"preconditions": {"uid": "s1"}})
    );
}

/// Creates POST the object to its collection.
#[tokio::test]
async fn creates_post_to_the_collection() {
    let (cluster, log) = cluster(vec![
        created(serde_json::json!({})),
        created(pod_json("agent-x", "u1", "1")),
    ]);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("agent-x-g1".to_owned()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("agent-x".to_owned()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    };
    assert_eq!(
        cluster.create_secret(&secret).await.expect("created"),
        CreateAnswer::Created
    );
    assert_eq!(
        cluster.create_pod(&pod).await.expect("created"),
        CreateAnswer::Created
    );
    let requests = log.all();
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path(), "/api/v1/namespaces/agents/secrets");
    assert_eq!(requests[0].json()["kind"], "Secret");
    assert_eq!(requests[0].json()["metadata"]["name"], "agent-x-g1");
    assert_eq!(requests[1].method, "POST");
    assert_eq!(requests[1].path(), "/api/v1/namespaces/agents/pods");
    assert_eq!(requests[1].json()["kind"], "Pod");
    assert_eq!(requests[1].json()["metadata"]["name"], "agent-x");
}

/// Namespace ensure: `GET /api/v1/namespaces/<ns>`, then on NotFound
/// `POST /api/v1/namespaces` with the name.
#[tokio::test]
async fn namespace_ensure_requests() {
    let (cluster, log) = cluster(vec![
        status(404, "NotFound"),
        created(serde_json::json!({})),
    ]);
    cluster.ensure_namespace().await.expect("ensured");
    let requests = log.all();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].uri, "/api/v1/namespaces/agents");
    assert_eq!(requests[1].method, "POST");
    assert_eq!(requests[1].path(), "/api/v1/namespaces");
    assert_eq!(
        requests[1].json(),
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "agents"}})
    );
}

/// An existing namespace is not created again: one GET only.
#[tokio::test]
async fn existing_namespace_is_one_get() {
    let (cluster, log) = cluster(vec![ok(serde_json::json!({"kind": "Namespace"}))]);
    cluster.ensure_namespace().await.expect("ensured");
    assert_eq!(log.only().method, "GET");
}

/// The agent's workspace claim as apiary sends it.
fn claim_body() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "agent-x-workspace", "namespace": "agents"},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}},
    })
}

/// The claim as the apiserver answers it, with its uid and resourceVersion.
fn claim_json(uid: &str, resource_version: &str) -> serde_json::Value {
    let mut claim = claim_body();
    claim["metadata"]["uid"] = uid.into();
    claim["metadata"]["resourceVersion"] = resource_version.into();
    claim
}

/// The fenced delete an observation of the claim at `{uid, resource_version}` authorises, as
/// `apiary-classify` builds it from the claim's marks.
fn claim_deletion_of(uid: &str, resource_version: &str) -> ClaimDeletion {
    let observed = ObjectMarks {
        name: Some("agent-x-workspace".to_owned()),
        uid: Some(uid.to_owned()),
        resource_version: Some(resource_version.to_owned()),
        managed_by: Some(APIARY.managed_by.to_owned()),
        binding_version: Some(APIARY.binding_version.to_owned()),
        agent_id: Some("abc".to_owned()),
        ..ObjectMarks::default()
    };
    claim_deletion(&observed, &Owner::apiary("abc")).expect("a marked, fenced observation")
}

/// deploy.md § Persistent workspace: the claim read is a quorum GET of
/// `/api/v1/namespaces/<ns>/persistentvolumeclaims/<name>` (no query, so no `resourceVersion`),
/// and a 404 is a confirmed absence.
#[tokio::test]
async fn workspace_claim_get_is_a_quorum_read() {
    let (cluster, log) = cluster(vec![ok(claim_json("c1", "5")), status(404, "NotFound")]);
    let found = cluster
        .get_workspace_claim("agent-x-workspace")
        .await
        .expect("read")
        .expect("found");
    assert_eq!(found.metadata.uid.as_deref(), Some("c1"));
    assert_eq!(
        cluster.get_workspace_claim("agent-x-workspace").await,
        Ok(None)
    );
    let requests = log.all();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.method, "GET");
        assert_eq!(
            request.uri,
            "/api/v1/namespaces/agents/persistentvolumeclaims/agent-x-workspace"
        );
        assert!(request.body.is_empty());
    }
}

/// The claim create POSTs the claim, as built, to the namespace's collection, with no query
/// (no dry run, no field manager); a 409 `AlreadyExists` is the outcome the deploy then reads.
#[tokio::test]
async fn workspace_claim_create_posts_to_the_collection() {
    let (cluster, log) = cluster(vec![
        created(claim_json("c1", "1")),
        status(409, "AlreadyExists"),
    ]);
    let claim: PersistentVolumeClaim = serde_json::from_value(claim_body()).expect("a claim");
    assert_eq!(
        cluster.create_workspace_claim(&claim).await,
        Ok(CreateAnswer::Created)
    );
    assert_eq!(
        cluster.create_workspace_claim(&claim).await,
        Ok(CreateAnswer::AlreadyExists)
    );
    let requests = log.all();
    assert_eq!(requests.len(), 2);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(
        request.path(),
        "/api/v1/namespaces/agents/persistentvolumeclaims"
    );
    assert_eq!(request.query(), "");
    assert_eq!(request.json(), claim_body());
    assert_eq!(requests[1].method, "POST");
}

/// `undeploy --delete-workspace`: the claim delete carries the uid and resourceVersion of the
/// observation that proved it the agent's, and nothing else (no `gracePeriodSeconds`, no
/// `propagationPolicy`), like the pod's (A7); a 409 `Conflict` is a failed precondition.
#[tokio::test]
async fn workspace_claim_delete_is_fenced_by_uid_and_resource_version() {
    let (cluster, log) = cluster(vec![ok(claim_json("c1", "6")), status(409, "Conflict")]);
    let deletion = claim_deletion_of("c1", "5");
    assert_eq!(
        cluster.delete_workspace_claim(&deletion).await,
        Ok(DeleteAnswer::Accepted)
    );
    assert_eq!(
        cluster.delete_workspace_claim(&deletion).await,
        Ok(DeleteAnswer::PreconditionFailed)
    );
    let requests = log.all();
    assert_eq!(requests.len(), 2);
    let request = &requests[0];
    assert_eq!(request.method, "DELETE");
    assert_eq!(
        request.path(),
        "/api/v1/namespaces/agents/persistentvolumeclaims/agent-x-workspace"
    );
    assert_eq!(request.query(), "");
    assert_eq!(
        request.json(),
        serde_json::json!({"preconditions": {"uid": "c1", "resourceVersion": "5"}})
    );
    let text = String::from_utf8(request.body.clone()).expect("utf-8");
    assert!(!text.contains("gracePeriodSeconds"), "{text}");
    assert!(!text.contains("propagationPolicy"), "{text}");
}
