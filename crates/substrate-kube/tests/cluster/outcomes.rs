//! Outcome and error mapping of `Cluster` through the real `kube::Client` over a mock service
//! (deploy.md § Semantics relied on, item 1; § Apiserver mapping A3–A6, A9; § Errors E9–E12):
//! the 409 split on the literal reason, confirmed absence, namespace ensure, and that every error
//! names the object and the operation. Contacts no network.

use crate::mock::{Answer, agent_pod, cluster, short_cluster, status};
use apiary_classify::failure::Operation;
use apiary_classify::verify::PodDeletion;
use apiary_substrate::fake::proof::{pod_deletion, secret_deletion};
use apiary_substrate::{CreateAnswer, DeleteAnswer, NamespaceCheck, NamespaceFailure, Substrate};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn fence() -> PodDeletion {
    pod_deletion("agent-x", "u1", "7")
}

/// A3: a pod create answered 409 `AlreadyExists` is the lost race, not an error.
#[tokio::test]
async fn a3_create_already_exists_is_lost_race() {
    let (cluster, log) = cluster(vec![status(409, "AlreadyExists")]);
    assert_eq!(
        cluster.create_pod(&agent_pod()).await,
        Ok(CreateAnswer::AlreadyExists)
    );
    assert_eq!(log.count(), 1, "a 409 is never retried");
}

/// A3: a create answered 409 `Conflict` is an error, never the lost race.
#[tokio::test]
async fn a3_create_conflict_is_not_already_exists() {
    let (cluster, _log) = cluster(vec![status(409, "Conflict")]);
    let error = cluster
        .create_pod(&agent_pod())
        .await
        .expect_err("an error");
    assert_eq!(error.reason(), Some("Conflict"));
}

/// A3: a fenced delete answered 409 `Conflict` is PreconditionFailed.
#[tokio::test]
async fn a3_delete_conflict_is_precondition_failed() {
    let (cluster, log) = cluster(vec![status(409, "Conflict")]);
    assert_eq!(
        cluster.delete_pod(&fence()).await,
        Ok(DeleteAnswer::PreconditionFailed)
    );
    assert_eq!(log.count(), 1, "a failed precondition is never retried");
}

/// A3: a delete answered 409 `AlreadyExists` is an error, never PreconditionFailed.
#[tokio::test]
async fn a3_delete_already_exists_is_not_precondition_failed() {
    let (cluster, _log) = cluster(vec![status(409, "AlreadyExists")]);
    let error = cluster.delete_pod(&fence()).await.expect_err("an error");
    assert_eq!(error.reason(), Some("AlreadyExists"));
}

/// A5: a 409 with no reason matches nothing: create and delete both fail.
#[tokio::test]
async fn a5_empty_reason_409_matches_nothing() {
    let (cluster, _log) = cluster(vec![status(409, ""), status(409, "")]);
    let create = cluster
        .create_pod(&agent_pod())
        .await
        .expect_err("an error");
    assert_eq!(create.reason(), Some(""));
    let delete = cluster.delete_pod(&fence()).await.expect_err("an error");
    assert_eq!(delete.reason(), Some(""));
}

/// A6: NotFound means absence for reads and deletes, by the literal reason.
#[tokio::test]
async fn a6_not_found_is_confirmed_absence() {
    let (cluster, _log) = cluster(vec![
        status(404, "NotFound"),
        status(404, "NotFound"),
        status(404, "NotFound"),
        status(404, "NotFound"),
    ]);
    assert_eq!(cluster.get_pod("agent-x").await, Ok(None));
    assert_eq!(cluster.secret_exists("agent-x-g1").await, Ok(false));
    assert_eq!(
        cluster.delete_pod(&fence()).await,
        Ok(DeleteAnswer::NotFound)
    );
    assert_eq!(
        cluster
            .delete_secret(&secret_deletion("agent-x-g1", "s1"))
            .await,
        Ok(DeleteAnswer::NotFound)
    );
}

/// A5/A6: a 404 without the `NotFound` reason is not an absence.
#[tokio::test]
async fn a5_404_without_reason_is_not_absence() {
    let (cluster, _log) = cluster(vec![status(404, ""), status(404, "")]);
    assert!(cluster.get_pod("agent-x").await.is_err());
    assert!(cluster.secret_exists("agent-x-g1").await.is_err());
}

/// A4: a dropped connection is never an absence: the read fails as a transport error naming
/// the operation and the object.
#[tokio::test]
async fn a4_dropped_connection_is_not_absence() {
    let (cluster, _log) = short_cluster(std::iter::repeat_with(|| Answer::Drop).take(50).collect());
    let error = cluster.get_pod("agent-x").await.expect_err("no answer");
    assert_eq!(error.reason(), None);
    assert!(
        error.is_transport()
            && error.operation() == Some(Operation::GetPod)
            && error.object() == "agents/agent-x",
        "{error:?}"
    );
    assert!(
        error.to_string().contains("connection reset by peer"),
        "{error}"
    );
}

/// A9: namespace create answered `AlreadyExists` is success.
#[tokio::test]
async fn a9_namespace_create_already_exists_is_success() {
    let (cluster, _log) = cluster(vec![status(404, "NotFound"), status(409, "AlreadyExists")]);
    assert_eq!(
        cluster.ensure_namespace().await,
        Ok(NamespaceCheck::Present)
    );
}

/// A9/E11: namespace create forbidden names `kubectl create namespace <ns>`.
#[tokio::test]
async fn a9_namespace_create_forbidden_is_e11() {
    let (cluster, _log) = cluster(vec![status(404, "NotFound"), status(403, "Forbidden")]);
    let error = cluster.ensure_namespace().await.expect_err("forbidden");
    // The E11 words and their `kubectl create namespace` fix are the deploy error's.
    assert_eq!(error, NamespaceFailure::CreateForbidden);
}

/// A9: a forbidden namespace GET continues without ensuring (one request, no create).
#[tokio::test]
async fn a9_namespace_get_forbidden_continues() {
    let (cluster, log) = cluster(vec![status(403, "Forbidden")]);
    assert_eq!(
        cluster.ensure_namespace().await,
        Ok(NamespaceCheck::Unchecked)
    );
    assert_eq!(log.count(), 1);
}

/// E9: any other namespace failure names the namespace, the operation and the apiserver's
/// error.
#[tokio::test]
async fn e9_namespace_failures_name_operation() {
    let (reading, _log) = cluster(vec![status(401, "Unauthorized")]);
    let Err(NamespaceFailure::Failed(error)) = reading.ensure_namespace().await else {
        panic!("the namespace read fails");
    };
    assert_eq!(error.operation(), Some(Operation::GetNamespace));
    assert_eq!(error.code(), Some(401));
    assert_eq!(error.object(), "agents");
    let text = error.to_string();
    assert!(text.contains("read namespace agents"), "{text}");
    assert!(text.contains("401 Unauthorized"), "{text}");

    let (creating, _log) = cluster(vec![status(404, "NotFound"), status(422, "Invalid")]);
    let error = creating.ensure_namespace().await.expect_err("failed");
    assert!(
        matches!(&error, NamespaceFailure::Failed(failure) if failure.operation() == Some(Operation::CreateNamespace) && failure.reason() == Some("Invalid")),
        "{error:?}"
    );
}

/// E10/E12: refusals name the operation, the object, code, reason and message.
#[tokio::test]
async fn errors_name_object_and_operation() {
    let (cluster, _log) = cluster(vec![
        status(403, "Forbidden"),
        status(422, "Invalid"),
        status(403, "Forbidden"),
        status(403, "Forbidden"),
    ]);
    let list = cluster.list_pods("a=b").await.expect_err("forbidden");
    assert_eq!(
        list.to_string(),
        "could not list pods in agents matching a=b: the apiserver answered 403 \
         Forbidden: scripted 403 Forbidden"
    );
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("agent-x-g1".to_owned()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    let create = cluster.create_secret(&secret).await.expect_err("invalid");
    assert_eq!(
        create.to_string(),
        "could not create secret agents/agent-x-g1: the apiserver answered 422 Invalid: \
         scripted 422 Invalid"
    );
    let delete = cluster
        .delete_secret(&secret_deletion("agent-x-g1", "s1"))
        .await
        .expect_err("forbidden");
    assert!(
        delete.code().is_some()
            && delete.operation() == Some(Operation::DeleteSecret)
            && delete.object() == "agents/agent-x-g1",
        "{delete:?}"
    );
    let secrets = cluster.list_secrets("a=b").await.expect_err("forbidden");
    assert!(
        secrets.code().is_some() && secrets.operation() == Some(Operation::ListSecrets),
        "{secrets:?}"
    );
}

/// A 2xx body that cannot be decoded is a transport error naming the object, never quoting
/// the body (it could hold Secret values).
#[tokio::test]
async fn undecodable_body_is_named_not_quoted() {
    let answer = Answer::Respond {
        status: 200,
        headers: vec![],
        body: br#"{"items": "TOP-SECRET-VALUE"}"#.to_vec(),
    };
    let (cluster, log) = cluster(vec![answer]);
    let error = cluster.list_secrets("a=b").await.expect_err("undecodable");
    assert_eq!(log.count(), 1, "an undecodable answer is not retried");
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains("TOP-SECRET-VALUE"), "{shown}");
    assert!(
        error.is_transport() && error.operation() == Some(Operation::ListSecrets),
        "{error:?}"
    );
}

/// Secret values in a create never reach an error or the `Cluster`'s `Debug`, even when the
/// server answers with a page that is not a Status.
#[tokio::test]
async fn secret_values_never_reach_errors() {
    let answer = Answer::Respond {
        status: 400,
        headers: vec![],
        body: b"<html>echo: TOP-SECRET-VALUE</html>".to_vec(),
    };
    let (cluster, _log) = cluster(vec![answer]);
    let mut secret = Secret {
        metadata: ObjectMeta {
            name: Some("agent-x-g1".to_owned()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    secret.string_data = Some([("KEY".to_owned(), "TOP-SECRET-VALUE".to_owned())].into());
    let error = cluster.create_secret(&secret).await.expect_err("refused");
    let shown = format!("{error} {error:?} {cluster:?}");
    assert!(!shown.contains("TOP-SECRET-VALUE"), "{shown}");
}
