//! The shapes of a failure, the words of each part, and the request kinds' RBAC names.

use super::*;

/// An answered refusal keeps its code, reason and message apart, and reads as one sentence that
/// names the operation and the object once.
#[test]
fn an_answered_failure_keeps_its_parts_and_reads_once() {
    let refused = RequestFailure::answered(
        Operation::CreatePod,
        "agents/apiary-m2-29c1b289e752",
        403,
        "Forbidden",
        "pods is forbidden: no",
    );
    assert_eq!(refused.operation(), Some(Operation::CreatePod));
    assert_eq!(refused.object(), "agents/apiary-m2-29c1b289e752");
    assert_eq!(refused.code(), Some(403));
    assert_eq!(refused.reason(), Some("Forbidden"));
    assert_eq!(refused.server_message(), Some("pods is forbidden: no"));
    assert!(refused.is_forbidden());
    assert!(!refused.is_transport());
    assert_eq!(refused.transport_cause(), None);
    assert_eq!(
        refused.to_string(),
        "could not create pod agents/apiary-m2-29c1b289e752: the apiserver answered 403 \
         Forbidden: pods is forbidden: no"
    );
    assert_eq!(refused.to_string().matches("create pod").count(), 1);
}

/// An empty reason reads as the HTTP reason phrase; an unknown code without a reason adds none.
#[test]
fn an_empty_reason_reads_as_the_reason_phrase() {
    let page = RequestFailure::answered(Operation::GetPod, "a/p", 502, "", "no Status body");
    assert_eq!(
        page.why(),
        "the apiserver answered 502 Bad Gateway: no Status body"
    );
    let odd = RequestFailure::answered(Operation::GetPod, "a/p", 599, "", "odd");
    assert_eq!(odd.why(), "the apiserver answered 599: odd");
}

/// Every status code an apiserver or a proxy in front of it commonly answers has its phrase.
#[test]
fn common_codes_have_their_reason_phrase() {
    for (code, phrase) in [
        (400, "Bad Request"),
        (401, "Unauthorized"),
        (403, "Forbidden"),
        (404, "Not Found"),
        (409, "Conflict"),
        (410, "Gone"),
        (422, "Unprocessable Entity"),
        (429, "Too Many Requests"),
        (500, "Internal Server Error"),
        (502, "Bad Gateway"),
        (503, "Service Unavailable"),
        (504, "Gateway Timeout"),
    ] {
        let failure = RequestFailure::answered(Operation::GetPod, "a/p", code, "", "m");
        assert_eq!(
            failure.why(),
            format!("the apiserver answered {code} {phrase}: m")
        );
    }
}

/// A transport failure has no code and no reason, and says its cause in plain words; `Other`
/// says its detail.
#[test]
fn a_transport_failure_says_its_cause() {
    let refused = RequestFailure::lost(
        Operation::GetPod,
        "agents/p",
        TransportCause::ConnectionRefused,
        "tcp connect error: Connection refused (os error 111)",
    );
    assert_eq!(refused.code(), None);
    assert_eq!(refused.reason(), None);
    assert!(refused.is_transport());
    assert!(!refused.is_forbidden());
    assert_eq!(
        refused.transport_cause(),
        Some(TransportCause::ConnectionRefused)
    );
    assert_eq!(
        refused.to_string(),
        "could not read pod agents/p: connection refused"
    );
    let other = RequestFailure::lost(
        Operation::ListPods,
        "",
        TransportCause::Other,
        "connection reset",
    );
    assert_eq!(other.to_string(), "could not list pods: connection reset");
    for (cause, words) in [
        (TransportCause::ConnectionRefused, "connection refused"),
        (
            TransportCause::TimedOut(Duration::from_secs(30)),
            "timed out after 30 s",
        ),
        (
            TransportCause::TimedOut(Duration::from_millis(1500)),
            "timed out after 1500 ms",
        ),
        (
            TransportCause::TimedOut(Duration::from_secs(2)),
            "timed out after 2 s",
        ),
        (
            TransportCause::TimedOut(Duration::from_millis(12_500)),
            "timed out after 12 s",
        ),
        (TransportCause::TlsNotTrusted, "TLS certificate not trusted"),
        (TransportCause::Dns, "host name not resolved"),
        (TransportCause::Other, "no usable answer"),
    ] {
        assert_eq!(cause.to_string(), words);
    }
}

/// The constructors that name no request read as their message alone; an unsent request is
/// neither an answer nor a lost one.
#[test]
fn failures_without_a_request_read_as_their_message() {
    let bare = RequestFailure::api(403, "Forbidden", "could not read pod pod/p: no");
    assert_eq!(bare.to_string(), "could not read pod pod/p: no");
    assert_eq!(bare.operation(), None);
    assert_eq!(bare.object(), "");
    let lost = RequestFailure::transport("connection reset");
    assert!(lost.is_transport());
    assert_eq!(lost.to_string(), "connection reset");
    let unsent = RequestFailure::unsent("no randomness");
    assert!(!unsent.is_transport());
    assert_eq!(unsent.code(), None);
    assert_eq!(unsent.to_string(), "no randomness");
    assert_eq!(
        unsent.cause(),
        &Cause::Unsent {
            detail: "no randomness".into()
        }
    );
}

/// A hint is kept apart and shown once after the why; a second hint follows the first.
#[test]
fn hints_follow_the_why() {
    let hinted = RequestFailure::api(403, "Forbidden", "denied").with_hint("ask");
    assert_eq!(hinted.to_string(), "denied; ask");
    assert_eq!(hinted.hint(), Some("ask"));
    assert_eq!(hinted.code(), Some(403));
    let twice = hinted.with_hint("then retry");
    assert_eq!(twice.hint(), Some("ask; then retry"));
}

/// Every request kind names its RBAC verb and resource as rbac/apiary-deployer.yaml spells
/// them, and writes exactly when it creates, deletes or updates.
#[test]
fn every_operation_names_its_verb_and_resource() {
    for operation in Operation::ALL {
        let (verb, resource, writes) = match operation {
            Operation::EnsureNamespace => ("get", "namespaces", true),
            Operation::GetNamespace => ("get", "namespaces", false),
            Operation::CreateNamespace => ("create", "namespaces", true),
            Operation::ListPods => ("list", "pods", false),
            Operation::ListSecrets => ("list", "secrets", false),
            Operation::GetPod => ("get", "pods", false),
            Operation::GetSecret => ("get", "secrets", false),
            Operation::GetServiceAccount => ("get", "serviceaccounts", false),
            Operation::CreateSecret => ("create", "secrets", true),
            Operation::CreatePod => ("create", "pods", true),
            Operation::DeletePod => ("delete", "pods", true),
            Operation::DeleteSecret => ("delete", "secrets", true),
            Operation::WatchPod => ("watch", "pods", false),
            Operation::UpdatePod => ("patch", "pods", true),
            Operation::ReadPodLog => ("get", "pods/log", false),
            Operation::GetNode => ("get", "nodes", false),
            Operation::GetNetworkPolicy => ("get", "networkpolicies", false),
            Operation::CreateNetworkPolicy => ("create", "networkpolicies", true),
            Operation::UpdateNetworkPolicy => ("update", "networkpolicies", true),
            Operation::DeleteNetworkPolicy => ("delete", "networkpolicies", true),
            Operation::GetWorkspaceClaim => ("get", "persistentvolumeclaims", false),
            Operation::CreateWorkspaceClaim => ("create", "persistentvolumeclaims", true),
            Operation::DeleteWorkspaceClaim => ("delete", "persistentvolumeclaims", true),
        };
        assert_eq!(operation.verb(), verb, "{operation:?}");
        assert_eq!(operation.resource(), resource, "{operation:?}");
        assert_eq!(operation.is_mutation(), writes, "{operation:?}");
    }
}

/// The words and the snake-case names of every request kind, pinned as literals.
#[test]
fn every_operation_has_its_words_and_name() {
    let words: Vec<String> = Operation::ALL.iter().map(ToString::to_string).collect();
    assert_eq!(
        words,
        [
            "ensure namespace",
            "read namespace",
            "create namespace",
            "list pods",
            "list secrets",
            "read pod",
            "read secret",
            "read service account",
            "create secret",
            "create pod",
            "delete pod",
            "delete secret",
            "watch pod",
            "update pod",
            "read the log of pod",
            "read node",
            "read networkpolicy",
            "create networkpolicy",
            "update networkpolicy",
            "delete networkpolicy",
            "read persistentvolumeclaim",
            "create persistentvolumeclaim",
            "delete persistentvolumeclaim",
        ]
    );
    let names: Vec<&str> = Operation::ALL.iter().map(|o| o.as_str()).collect();
    assert_eq!(
        names,
        [
            "ensure_namespace",
            "get_namespace",
            "create_namespace",
            "list_pods",
            "list_secrets",
            "get_pod",
            "get_secret",
            "get_service_account",
            "create_secret",
            "create_pod",
            "delete_pod",
            "delete_secret",
            "watch_pod",
            "update_pod",
            "read_pod_log",
            "get_node",
            "get_network_policy",
            "create_network_policy",
            "update_network_policy",
            "delete_network_policy",
            "get_workspace_claim",
            "create_workspace_claim",
            "delete_workspace_claim",
        ]
    );
}

// ---- deploy.md § Namespace ensure, item 4: ServiceAccount admission's refusal

/// A pod create refused with `reason` and `message` (403).
fn refused_with(reason: &str, message: &str) -> RequestFailure {
    RequestFailure::answered(Operation::CreatePod, "agents/p", 403, reason, message)
}

/// The message a real kube-apiserver (v1.20) answers a pod create with while the namespace has
/// no `default` ServiceAccount names the account.
#[test]
fn service_account_admission_names_the_missing_account() {
    let failure = refused_with(
        "Forbidden",
        "pods \"apiary-research-bot-1-72bea12366a3\" is forbidden: error looking up service \
         account agents/default: serviceaccount \"default\" not found",
    );
    assert_eq!(
        failure.missing_service_account().as_deref(),
        Some("default")
    );
    // A dotted or dashed name survives whole.
    let named = refused_with(
        "Forbidden",
        "pods \"p\" is forbidden: error looking up service account ns-1/ci.runner-2: \
         serviceaccount \"ci.runner-2\" not found",
    );
    assert_eq!(
        named.missing_service_account().as_deref(),
        Some("ci.runner-2")
    );
}

/// Only reason `Forbidden` plus the whole message shape is admission's refusal. RBAC's 403, a
/// different reason with the same words, an empty reason, mismatched names, an empty name, a
/// missing namespace, another ending and a transport failure are all ordinary failures (each
/// kills one dropped check of the matcher).
#[test]
fn every_other_failure_names_no_missing_account() {
    let shape = "pods \"p\" is forbidden: error looking up service account ns/default: \
                 serviceaccount \"default\" not found";
    for failure in [
        refused_with(
            "Forbidden",
            "pods is forbidden: User \"dev\" cannot create resource \"pods\" in API group \"\" \
             in the namespace \"ns\"",
        ),
        refused_with("", shape),
        refused_with("Invalid", shape),
        refused_with(
            "Forbidden",
            "error looking up service account ns/a: serviceaccount \"b\" not found",
        ),
        refused_with(
            "Forbidden",
            "error looking up service account ns/ab: serviceaccount \"a\" not found",
        ),
        refused_with(
            "Forbidden",
            "error looking up service account ns/: serviceaccount \"\" not found",
        ),
        refused_with(
            "Forbidden",
            "error looking up service account default: serviceaccount \"default\" not found",
        ),
        refused_with(
            "Forbidden",
            "error looking up service account ns/default: serviceaccount \"default\" is terminating",
        ),
        refused_with("Forbidden", "error looking up service account ns/default"),
        RequestFailure::lost(
            Operation::CreatePod,
            "agents/p",
            TransportCause::ConnectionRefused,
            shape,
        ),
    ] {
        assert_eq!(failure.missing_service_account(), None, "{failure:?}");
    }
}
