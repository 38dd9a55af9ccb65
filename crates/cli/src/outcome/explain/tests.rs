//! The shared shape on typed failures: what once, why, what to do, the json fields, the length.

use std::time::Duration;

use apiary_classify::deploy::{ObjectKind, SecretFate};

use super::*;

fn target() -> Target {
    Target {
        server: "https://127.0.0.1:6443".into(),
        context: Some("kind-dev".into()),
    }
}

fn forbidden(operation: Operation, object: &str) -> RequestFailure {
    RequestFailure::answered(
        operation,
        object,
        403,
        "Forbidden",
        format!(
            "{} is forbidden: User \"u\" cannot {} resource \"{}\" in API group \"\" in the \
             namespace \"agents\"",
            operation.resource(),
            operation.verb(),
            operation.resource()
        ),
    )
}

/// Every 403 of every request kind names the verb and resource refused and a manifest in
/// `rbac/`, after the server's own message, with the operation once.
#[test]
fn every_forbidden_request_names_verb_resource_and_manifest() {
    for operation in Operation::ALL {
        let failure = forbidden(operation, "agents/p");
        let text = request(&failure, "agents", Grant::Deployer, Some(&target())).message;
        assert!(
            text.starts_with(&format!(
                "could not {operation} agents/p: the apiserver answered 403 Forbidden: "
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "may not `{}` {}",
                operation.verb(),
                operation.resource()
            )),
            "{text}"
        );
        // Nodes (cluster-scoped, optional) have their own manifest.
        let manifest = match operation {
            Operation::GetNode => "rbac/apiary-node-reader.yaml",
            _ => "rbac/apiary-deployer.yaml",
        };
        assert!(text.contains(manifest), "{text}");
        assert_eq!(
            text.matches(&format!("could not {operation}")).count(),
            1,
            "{text}"
        );
        assert!(text.chars().count() <= MAX_MESSAGE, "{text}");
        let seeds = request(&failure, "ring", Grant::Seeds, None).message;
        let manifest = match operation {
            Operation::GetNode => manifest,
            _ => "rbac/apiary-seeds.yaml",
        };
        assert!(seeds.contains(manifest), "{seeds}");
    }
}

/// A transport failure names the server and the context tried and the cause in plain words,
/// and suggests `kubectl config current-context`; without a recorded target it says the cause.
#[test]
fn unreachable_names_server_context_and_cause() {
    let lost = RequestFailure::lost(
        Operation::GetPod,
        "agents/p",
        TransportCause::ConnectionRefused,
        "client error (Connect): tcp connect error: Connection refused (os error 111)",
    );
    let text = request(&lost, "agents", Grant::Deployer, Some(&target())).message;
    assert_eq!(
        text,
        "could not read pod agents/p: no answer from https://127.0.0.1:6443 (kubeconfig context \
         kind-dev): connection refused; check that the kubeconfig context is the cluster you \
         mean (`kubectl config current-context`) and that its server is reachable from this \
         machine (network, VPN, proxy)"
    );
    let timed = RequestFailure::lost(
        Operation::ListPods,
        "in agents matching a=b",
        TransportCause::TimedOut(Duration::from_secs(30)),
        "no answer within 30000 ms",
    );
    let text = request(&timed, "agents", Grant::Deployer, None).message;
    assert!(
        text.starts_with("could not list pods in agents matching a=b: timed out after 30 s; "),
        "{text}"
    );
    let in_cluster = Target {
        server: "https://10.0.0.1".into(),
        context: None,
    };
    let tls = RequestFailure::lost(Operation::GetPod, "a/p", TransportCause::TlsNotTrusted, "x");
    let text = request(&tls, "a", Grant::Deployer, Some(&in_cluster)).message;
    assert!(
        text.contains("(in-cluster configuration): TLS certificate not trusted"),
        "{text}"
    );
    assert!(text.contains("certificate-authority"), "{text}");
}

/// The json fields of an answered and of a lost request.
#[test]
fn json_fields_carry_the_parts() {
    let fields = request(
        &forbidden(Operation::CreatePod, "agents/p"),
        "agents",
        Grant::Deployer,
        None,
    )
    .fields;
    assert_eq!(
        Value::Object(fields),
        json!({"operation": "create_pod", "object": "agents/p", "code": 403, "reason": "Forbidden", "refused_by": "rbac"})
    );
    let lost = RequestFailure::lost(
        Operation::GetPod,
        "agents/p",
        TransportCause::Dns,
        "dns error",
    );
    let fields = request(&lost, "agents", Grant::Deployer, None).fields;
    assert_eq!(
        Value::Object(fields),
        json!({"operation": "get_pod", "object": "agents/p", "cause": "host name not resolved"})
    );
}

/// E10: the create failure reads once, then the Secret's fate, then the fix; a hint the machine
/// attached (a missing named account) replaces the RBAC fix.
#[test]
fn a_create_failure_reads_once_with_the_secret_fate() {
    let error = DeployError::CreateFailed {
        kind: ObjectKind::Pod,
        name: "p".into(),
        failure: forbidden(Operation::CreatePod, "agents/p"),
        secret: SecretFate::Removed("p-1".into()),
    };
    let text = deploy(&error, "agents", None).message;
    assert_eq!(text.matches("create pod").count(), 1, "{text}");
    assert!(
        text.contains("; secret p-1 was removed; the caller may not `create` pods"),
        "{text}"
    );
    let account = DeployError::CreateFailed {
        kind: ObjectKind::Pod,
        name: "p".into(),
        failure: forbidden(Operation::CreatePod, "agents/p")
            .with_hint("create it with `kubectl create serviceaccount robot -n agents`"),
        secret: SecretFate::Removed("p-1".into()),
    };
    let text = deploy(&account, "agents", None).message;
    assert!(
        text.ends_with("create it with `kubectl create serviceaccount robot -n agents`"),
        "{text}"
    );
    assert!(!text.contains("rbac/"), "{text}");
    let unnamed = DeployError::CreateFailed {
        kind: ObjectKind::Secret,
        name: "p-2".into(),
        failure: RequestFailure::api(409, "AlreadyExists", "a secret with this name exists"),
        secret: SecretFate::NotCreated,
    };
    assert_eq!(
        deploy(&unnamed, "agents", None).message,
        "could not create secret agents/p-2: a secret with this name exists; nothing was written"
    );
}

/// A long server message is cut so the fix still shows and the line stays under the cap; line
/// breaks never reach the terminal.
#[test]
fn long_messages_are_cut_before_the_fix() {
    let failure = RequestFailure::answered(
        Operation::CreatePod,
        "agents/p",
        403,
        "Forbidden",
        format!(
            "pods \"p\" is forbidden: User \"u\" cannot create resource \"pods\" in API group \
             \"\" in the namespace \"agents\": RBAC:\n{}",
            "no ".repeat(400)
        ),
    );
    let text = request(&failure, "agents", Grant::Deployer, None).message;
    assert!(text.chars().count() <= MAX_MESSAGE, "{}", text.len());
    assert!(!text.contains('\n'));
    assert!(
        text.contains("…; the caller may not `create` pods"),
        "{text}"
    );
}

/// Other deploy errors keep their own text and carry no request fields.
#[test]
fn other_deploy_errors_keep_their_text() {
    let error = DeployError::ForeignPod { pod: "p".into() };
    let explained = deploy(&error, "agents", None);
    assert_eq!(explained.message, error.to_string());
    assert!(explained.fields.is_empty());
}

/// deploy.md § Who refused it: a 403 is explained by what refused it. A quota, a LimitRange, a
/// webhook and PodSecurity name themselves, their figures and the flag, never the grant hint; a
/// failed admission lookup says retry; anything else is the server's words with no guess. JSON
/// says who refused, and the plugin.
#[test]
fn a_refusal_that_is_not_rbac_names_what_refused_it() {
    let refused = |message: &str| {
        let failure = RequestFailure::answered(
            Operation::CreatePod,
            "agents/p",
            403,
            "Forbidden",
            message.to_owned(),
        );
        request(&failure, "agents", Grant::Deployer, None)
    };
    let quota = refused(
        "pods \"p\" is forbidden: exceeded quota: tight, requested: limits.memory=128Mi, used: \
         limits.memory=0, limited: limits.memory=100Mi",
    );
    assert!(
        quota
            .message
            .contains("refused by ResourceQuota tight, not a missing role"),
        "{}",
        quota.message
    );
    assert!(
        quota
            .message
            .contains("the pod asks more than it allows at all"),
        "{}",
        quota.message
    );
    assert!(
        quota.message.contains("lower --memory-limit"),
        "{}",
        quota.message
    );
    assert!(!quota.message.contains("rbac/"), "{}", quota.message);
    assert_eq!(quota.fields["refused_by"], "admission");
    assert_eq!(quota.fields["plugin"], "ResourceQuota");
    let full = refused(
        "pods \"p\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=10, limited: \
         pods=10",
    );
    assert!(
        full.message.contains("fits once they use less"),
        "{}",
        full.message
    );
    let range = refused(
        "pods \"p\" is forbidden: maximum cpu usage per Container is 200m, but limit is 500m",
    );
    assert!(
        range.message.contains("refused by a LimitRange"),
        "{}",
        range.message
    );
    assert!(
        range.message.contains("set --cpu-limit within it"),
        "{}",
        range.message
    );
    assert_eq!(range.fields["plugin"], "LimitRanger");
    let hook = refused(
        "admission webhook \"require-team.example.com\" denied the request: [require-team-label] \
         you must provide labels: {\"team\"}",
    );
    assert!(
        hook.message
            .contains("admission webhook require-team.example.com"),
        "{}",
        hook.message
    );
    assert!(!hook.message.contains("rbac/"), "{}", hook.message);
    assert_eq!(hook.fields["plugin"], "webhook");
    let pss = refused(
        "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": runAsNonRoot != true",
    );
    assert!(
        pss.message
            .contains("PodSecurity level restricted (latest)"),
        "{}",
        pss.message
    );
    let lookup = refused(
        "pods \"p\" is forbidden: Get \"https://127.0.0.1:16443/api/v1/namespaces/a/limitranges\": \
         dial tcp 127.0.0.1:16443: connect: connection refused",
    );
    assert!(lookup.message.contains("retry"), "{}", lookup.message);
    assert!(!lookup.message.contains("rbac/"), "{}", lookup.message);
    let other = refused("pods \"p\" is forbidden: something else entirely");
    assert!(
        other
            .message
            .contains("no missing role of apiary's explains it"),
        "{}",
        other.message
    );
    assert_eq!(other.fields["refused_by"], "apiserver");
    assert!(other.fields.get("plugin").is_none());
}
