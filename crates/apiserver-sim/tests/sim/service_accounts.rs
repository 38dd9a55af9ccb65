//! ServiceAccounts over plain HTTP: get and create on `…/serviceaccounts`, every other verb
//! refused with 405, and the admission mode in which a pod create without its account gets the
//! real apiserver's `403 Forbidden` Status until the controller stand-in creates `default`
//! (deploy.md § Namespace ensure, item 4).
//!
//! Layer: integration tests over a loopback socket; they never contact a real cluster.

use std::time::Duration;

use crate::common::{IMAGE, call, create_namespace, get, pod_body};
use apiary_apiserver_sim::{SimOptions, Simulator};
use serde_json::json;

async fn fast() -> Simulator {
    Simulator::start(SimOptions::default().with_time_scale(1000.0))
        .await
        .expect("simulator starts")
}

/// GET of a missing account is the apiserver's 404 Status; POST creates it (201, stamped); GET
/// then answers it; list, watch and delete are not served (405).
#[tokio::test]
async fn get_and_create_are_served() {
    let s = fast().await;
    create_namespace(s.addr(), "agents").await;
    let path = "/api/v1/namespaces/agents/serviceaccounts";
    let missing = get(s.addr(), &format!("{path}/runner")).await;
    assert_eq!(missing.status, 404);
    let status = missing.json();
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "serviceaccounts \"runner\" not found");
    assert_eq!(status["details"]["kind"], "serviceaccounts");
    let body =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "runner"}});
    let created = call(s.addr(), "POST", path, Some(&body)).await;
    assert_eq!(created.status, 201);
    let created = created.json();
    assert_eq!(created["metadata"]["namespace"], "agents");
    assert!(created["metadata"]["uid"].is_string());
    let again = call(s.addr(), "POST", path, Some(&body)).await;
    assert_eq!(again.status, 409);
    assert_eq!(again.json()["reason"], "AlreadyExists");
    let read = get(s.addr(), &format!("{path}/runner")).await;
    assert_eq!(read.status, 200);
    assert_eq!(read.json()["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(get(s.addr(), path).await.status, 405);
    assert_eq!(
        call(s.addr(), "DELETE", &format!("{path}/runner"), None)
            .await
            .status,
        405
    );
}

/// With admission on, a pod create in a namespace without `default` is refused with the real
/// server's Status, word for word; once the controller stand-in has created `default` (2 s model
/// time, 2 ms here), the same create succeeds.
#[tokio::test]
async fn admission_refuses_until_the_controller_creates_default() {
    let s = fast().await;
    s.with_model(|m| {
        m.set_service_account_admission(true);
        m.set_service_account_controller(Some(Duration::from_secs(3600)));
    });
    create_namespace(s.addr(), "fresh").await;
    let pod = pod_body("p", IMAGE, json!({}));
    let refused = call(
        s.addr(),
        "POST",
        "/api/v1/namespaces/fresh/pods",
        Some(&pod),
    )
    .await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.json(),
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "pods \"p\" is forbidden: error looking up service account fresh/default: serviceaccount \"default\" not found",
            "reason": "Forbidden",
            "details": {"name": "p", "kind": "pods"},
            "code": 403
        })
    );
    s.with_model(|m| m.set_service_account_controller(Some(Duration::from_secs(2))));
    crate::common::poll(
        s.addr(),
        "/api/v1/namespaces/fresh/serviceaccounts/default",
        |code, _| code == 200,
    )
    .await;
    let created = call(
        s.addr(),
        "POST",
        "/api/v1/namespaces/fresh/pods",
        Some(&pod),
    )
    .await;
    assert_eq!(created.status, 201);
}
