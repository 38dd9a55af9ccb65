//! deploy.md § Namespace ensure, item 4, with the ServiceAccount admission plugin on: each
//! scenario written once and run twice, `<scenario>::sim` against the loopback simulator (its
//! model's admission and controller) and `<scenario>::real` against an upstream `kube-apiserver`
//! of its own with the plugin and the controller's stand-in (`apiary-envtest`), pods run by the
//! fake kubelet (`Stage::admitting`). A deploy into a namespace it creates, whose `default`
//! ServiceAccount appears a moment later, is refused with the server's `403 Forbidden …
//! serviceaccount "default" not found` until then, reads the account (quorum GETs), and creates
//! the pod again with the same, only Secret; with `--service-account missing` it fails at once
//! with the `kubectl create serviceaccount` fix.
//!
//! Layer: integration tests over loopback. They decide nothing. The real runs skip (one stderr
//! line) without `KUBEBUILDER_ASSETS` and fail with `APIARY_ENVTEST_REQUIRED=1`. Assertions are
//! on the request log and on what the server holds, never on timings.

use std::time::Duration;

use apiary_apiserver_sim::{Resource, Verb};
use apiary_substrate::Substrate;
use apiary_substrate::config::DeployConfig;
use apiary_substrate::driver::{self, DeployError};

use crate::real_support::{POD, Stage, agent, image, options, secret_ref};

/// Far beyond what either scenario needs; only turns a hang into a failure.
const DEADLINE: Duration = Duration::from_secs(60);

/// The fresh-namespace race: the first pod create is refused with 403 `Forbidden`, apiary reads
/// the account (quorum GETs) until it exists, then creates the pod again with the same Secret;
/// one Secret, one pod running as `default`, nothing deleted.
async fn fresh_namespace_deploy_waits_for_the_default_account(s: &Stage) {
    let cluster = s.cluster();
    let deployed = driver::deploy(&cluster, &s.config(&image("")), &options(DEADLINE))
        .await
        .expect("deployed once the account exists");
    assert_eq!(deployed.pod, POD);
    let creates = s.of(Verb::Create, Resource::Pods);
    assert!(
        creates.iter().any(|r| r.status == Some(403)),
        "the first create was refused: {creates:?}"
    );
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    assert_eq!(creates.last().and_then(|r| r.status), Some(201));
    let referenced: Vec<_> = creates
        .iter()
        .map(|r| r.body_json().expect("pod body")["spec"]["containers"][0]["envFrom"].clone())
        .collect();
    assert!(
        referenced.windows(2).all(|w| w[0] == w[1]),
        "every attempt carried the same Secret: {referenced:?}"
    );
    assert_eq!(s.succeeded(Verb::Create, Resource::Secrets).len(), 1);
    let reads = s.of(Verb::Get, Resource::ServiceAccounts);
    assert!(!reads.is_empty());
    for read in &reads {
        assert_eq!(
            read.path,
            format!(
                "/api/v1/namespaces/{}/serviceaccounts/default",
                s.namespace()
            )
        );
        assert_eq!(read.query_param("resourceVersion"), None, "a quorum read");
    }
    // The account was read after the refusal and before the create that succeeded.
    let log = s.requests();
    let position = |wanted: &dyn Fn(&apiary_apiserver_sim::LoggedRequest) -> bool| {
        log.iter().position(wanted).expect("in the log")
    };
    let refused = position(&|r| r.is(Verb::Create, Resource::Pods));
    let read = position(&|r| r.is(Verb::Get, Resource::ServiceAccounts));
    let created = position(&|r| r.is(Verb::Create, Resource::Pods) && r.status == Some(201));
    assert!(refused < read && read < created, "{log:?}");
    assert!(log.iter().all(|r| r.method != "DELETE"), "nothing deleted");
    let pod = s.pod().await.expect("the pod");
    assert_eq!(s.secret_names().await, [secret_ref(&pod).expect("envFrom")]);
    assert_eq!(
        pod.spec
            .and_then(|spec| spec.service_account_name)
            .as_deref(),
        Some("default")
    );
    assert_eq!(cluster.service_account_exists("default").await, Ok(true));
    assert_eq!(cluster.service_account_exists("nobody").await, Ok(false));
}
on_both_backends!(
    /// A fresh namespace's deploy waits for its `default` account, with one Secret.
    admitting: self::fresh_namespace_deploy_waits_for_the_default_account
);

/// A pod naming a missing account fails at once: E10 with the server's 403 and the fix, the
/// attempt's Secret deleted (uid-fenced), no wait for the account and no second create; nothing
/// left.
async fn named_missing_account_fails_at_once_with_the_fix(s: &Stage) {
    let mut config = DeployConfig::new(s.namespace(), image(""));
    config.service_account = Some("missing".to_owned());
    let config = config.validate(&agent()).expect("valid configuration");
    let error = driver::deploy(&s.cluster(), &config, &options(DEADLINE))
        .await
        .expect_err("refused");
    let text = error.to_string();
    assert!(matches!(error, DeployError::CreateFailed { .. }), "{text}");
    for needle in [
        "403 Forbidden",
        "error looking up service account",
        "serviceaccount \"missing\" not found",
        &format!("kubectl create serviceaccount missing -n {}", s.namespace()),
        "was removed",
    ] {
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
    assert_eq!(s.of(Verb::Create, Resource::Pods).len(), 1);
    assert!(s.of(Verb::Get, Resource::ServiceAccounts).is_empty());
    let deletes = s.succeeded(Verb::Delete, Resource::Secrets);
    assert_eq!(deletes.len(), 1);
    assert!(deletes[0].body_json().expect("body")["preconditions"]["uid"].is_string());
    assert!(s.secret_names().await.is_empty());
    assert!(s.pod_names().await.is_empty());
}
on_both_backends!(
    /// A named missing account is E10 at once with the `kubectl create serviceaccount` fix.
    admitting: self::named_missing_account_fails_at_once_with_the_fix
);
