//! The refusal reader on the exact messages of kube-apiserver (v1.20 for RBAC, ResourceQuota,
//! LimitRanger and webhooks, as the real-server tier shows them; v1.23+ for PodSecurity, from
//! the upstream message format). Pure.

use super::*;

fn figure(resource: &str, quantity: &str) -> QuotaFigure {
    QuotaFigure {
        resource: resource.into(),
        quantity: quantity.into(),
    }
}

/// RBAC, with and without the authorizer's `: RBAC: …` suffix, namespaced and cluster-scoped.
#[test]
fn rbac_denials_name_the_user_verb_and_resource() {
    for message in [
        "pods \"apiary-a-1\" is forbidden: User \"limited\" cannot create resource \"pods\" in API \
         group \"\" in the namespace \"agents\"",
        "secrets is forbidden: User \"limited\" cannot create resource \"secrets\" in API group \
         \"\" in the namespace \"agents\": RBAC: clusterrole.rbac.authorization.k8s.io \
         \"apiary-deployer\" not found",
    ] {
        let refusal = read_refusal(message);
        let Refusal::Rbac { user, verb, .. } = &refusal else {
            panic!("{message}: {refusal:?}");
        };
        assert_eq!((user.as_str(), verb.as_str()), ("limited", "create"));
        assert_eq!(refusal.refused_by(), "rbac");
        assert_eq!(refusal.plugin(), None);
    }
    assert_eq!(
        read_refusal(
            "nodes \"n1\" is forbidden: User \"system:serviceaccount:agents:ci\" cannot get \
             resource \"nodes\" in API group \"\" at the cluster scope"
        ),
        Refusal::Rbac {
            user: "system:serviceaccount:agents:ci".into(),
            verb: "get".into(),
            resource: "nodes".into()
        }
    );
}

/// ResourceQuota: the quota's name and every figure, one resource or several.
#[test]
fn a_quota_refusal_names_the_quota_and_its_figures() {
    let refusal = read_refusal(
        "pods \"apiary-a-1\" is forbidden: exceeded quota: tight, requested: limits.memory=128Mi, \
         used: limits.memory=0, limited: limits.memory=100Mi",
    );
    assert_eq!(
        refusal,
        Refusal::Quota {
            name: "tight".into(),
            requested: vec![figure("limits.memory", "128Mi")],
            used: vec![figure("limits.memory", "0")],
            limited: vec![figure("limits.memory", "100Mi")],
        }
    );
    assert_eq!(
        (refusal.refused_by(), refusal.plugin()),
        ("admission", Some(Plugin::ResourceQuota))
    );
    let Refusal::Quota { requested, .. } = read_refusal(
        "pods \"p\" is forbidden: exceeded quota: q, requested: pods=1,requests.cpu=100m, used: \
         pods=10,requests.cpu=0, limited: pods=10,requests.cpu=1",
    ) else {
        panic!("a quota");
    };
    assert_eq!(
        requested,
        [figure("pods", "1"), figure("requests.cpu", "100m")]
    );
}

/// LimitRanger: the maximum, minimum and ratio messages, one or several in brackets.
#[test]
fn limit_range_refusals_name_each_bound() {
    assert_eq!(
        read_refusal(
            "pods \"p\" is forbidden: maximum cpu usage per Container is 200m, but limit is 500m"
        ),
        Refusal::LimitRange {
            bounds: vec!["maximum cpu usage per Container is 200m, but limit is 500m".into()]
        }
    );
    assert_eq!(
        read_refusal(
            "pods \"p\" is forbidden: [minimum memory usage per Container is 64Mi, but request is \
             16Mi, cpu max limit to request ratio per Container is 2, but provided ratio is \
             20.000000, maximum memory usage per Pod is 1Gi, but limit is 4Gi]"
        ),
        Refusal::LimitRange {
            bounds: vec![
                "minimum memory usage per Container is 64Mi, but request is 16Mi".into(),
                "cpu max limit to request ratio per Container is 2, but provided ratio is 20.000000"
                    .into(),
                "maximum memory usage per Pod is 1Gi, but limit is 4Gi".into(),
            ]
        }
    );
    assert_eq!(
        read_refusal(
            "pods \"p\" is forbidden: maximum cpu usage per Container is 200m, but limit is 500m"
        )
        .plugin(),
        Some(Plugin::LimitRanger)
    );
}

/// A webhook's denial, in the shape Gatekeeper and Kyverno use.
#[test]
fn a_webhook_denial_names_the_webhook_and_quotes_it() {
    let refusal = read_refusal(
        "admission webhook \"require-team.example.com\" denied the request: [require-team-label] \
         you must provide labels: {\"team\"}",
    );
    assert_eq!(
        refusal,
        Refusal::Webhook {
            name: "require-team.example.com".into(),
            message: "[require-team-label] you must provide labels: {\"team\"}".into()
        }
    );
    assert_eq!(refusal.plugin(), Some(Plugin::Webhook));
}

/// PodSecurity (1.23+): the level, the version and the fields.
#[test]
fn a_pod_security_refusal_names_the_level() {
    assert_eq!(
        read_refusal(
            "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": \
             allowPrivilegeEscalation != false (container \"agent\" must set \
             securityContext.allowPrivilegeEscalation=false)"
        ),
        Refusal::PodSecurity {
            level: "restricted".into(),
            version: "latest".into(),
            detail: "allowPrivilegeEscalation != false (container \"agent\" must set \
                     securityContext.allowPrivilegeEscalation=false)"
                .into()
        }
    );
}

/// The plugins' names as the API server's configuration spells them (the JSON `plugin` field).
#[test]
fn plugins_are_named_as_the_server_configures_them() {
    let names = [
        Plugin::ResourceQuota,
        Plugin::LimitRanger,
        Plugin::Webhook,
        Plugin::PodSecurity,
    ]
    .map(Plugin::as_str);
    assert_eq!(
        names,
        ["ResourceQuota", "LimitRanger", "webhook", "PodSecurity"]
    );
}

/// A transient refusal needs both: a plugin's own lookup (`Get "…"`, a webhook call) and a
/// network failure. A lookup that failed otherwise, or a network word in another message, is
/// the server's decision.
#[test]
fn a_lookup_is_transient_only_when_the_network_failed() {
    for message in [
        "pods \"p\" is forbidden: Get \"https://127.0.0.1:1/api/v1/namespaces/a/limitranges\": \
         x509: certificate signed by unknown authority",
        "pods \"p\" is forbidden: the agent's image says connection refused",
    ] {
        assert_eq!(read_refusal(message), Refusal::Other, "{message}");
    }
}

/// An admission plugin's own lookup failing is transient; anything else is the server's words.
#[test]
fn a_failed_lookup_is_transient_and_the_rest_is_no_guess() {
    for message in [
        "pods \"p\" is forbidden: Get \"https://127.0.0.1:16443/api/v1/namespaces/a/limitranges\": \
         dial tcp 127.0.0.1:16443: connect: connection refused",
        "pods \"p\" is forbidden: Get \"https://127.0.0.1:16443/api/v1/namespaces/a/resourcequotas\": \
         context deadline exceeded",
    ] {
        assert_eq!(read_refusal(message), Refusal::Transient, "{message}");
    }
    for message in [
        "pods \"p\" is forbidden: unable to validate against any pod security policy: []",
        "forbidden",
        "",
    ] {
        let refusal = read_refusal(message);
        assert_eq!(refusal, Refusal::Other, "{message}");
        assert_eq!(refusal.refused_by(), "apiserver");
    }
}

/// A request larger than the quota's limit alone can never fit; one that only does not fit
/// beside what is used may later (quantities compared by value: 1Gi is 1024Mi).
#[test]
fn a_quota_refusal_says_whether_the_request_alone_exceeds_it() {
    let alone = read_refusal(
        "pods \"p\" is forbidden: exceeded quota: q, requested: limits.memory=128Mi, used: \
         limits.memory=0, limited: limits.memory=100Mi",
    );
    assert!(alone.exceeds_quota());
    let beside = read_refusal(
        "pods \"p\" is forbidden: exceeded quota: q, requested: limits.memory=1Gi, used: \
         limits.memory=8Gi, limited: limits.memory=8192Mi",
    );
    assert!(!beside.exceeds_quota());
    assert!(!Refusal::Other.exceeds_quota());
}

/// Who refused, in words (the buzz provider's `error` has no field for it): each authority
/// named, RBAC the only one called a missing role.
#[test]
fn each_authority_is_named_in_words() {
    let cases = [
        (
            "secrets is forbidden: User \"limited\" cannot create resource \"secrets\" in API \
             group \"\" in the namespace \"a\"",
            "a missing role (RBAC)",
        ),
        (
            "pods \"p\" is forbidden: exceeded quota: tight, requested: limits.memory=128Mi, \
             used: limits.memory=0, limited: limits.memory=100Mi",
            "the ResourceQuota \"tight\"",
        ),
        (
            "pods \"p\" is forbidden: maximum cpu usage per Container is 200m, but limit is 500m",
            "the LimitRanger (a LimitRange of the namespace)",
        ),
        (
            "admission webhook \"require-team.example.com\" denied the request: no team",
            "the admission webhook \"require-team.example.com\"",
        ),
        (
            "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": runAsNonRoot != true",
            "PodSecurity \"restricted:latest\"",
        ),
        (
            "pods \"p\" is forbidden: Get \"https://127.0.0.1:1/api/v1/namespaces/a/limitranges\": \
             dial tcp 127.0.0.1:1: connect: connection refused",
            "an admission plugin whose own lookup failed (transient)",
        ),
        ("forbidden", "the API server"),
    ];
    for (message, authority) in cases {
        assert_eq!(read_refusal(message).authority(), authority, "{message}");
    }
}

/// deploy.md § Who refused it: a 403 no machine explained is read for who refused; a 403 with a
/// machine's hint, another code and a transport failure are not.
#[test]
fn only_an_unexplained_403_is_read_for_who_refused() {
    let quota = "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1";
    let refused = RequestFailure::api(403, "Forbidden", quota);
    assert_eq!(refusal_of(&refused), Some(read_refusal(quota)));
    assert_eq!(refusal_of(&refused.with_hint("create it")), None);
    assert_eq!(
        refusal_of(&RequestFailure::api(409, "Conflict", quota)),
        None
    );
    assert_eq!(
        refusal_of(&RequestFailure::transport("connection refused")),
        None
    );
}
