//! `gc --all` as the CronJob's ServiceAccount against a real `kube-apiserver` with RBAC on
//! (deploy.md § Expiry): the ServiceAccount, Role and RoleBinding of `deploy/cronjob-gc.yaml`
//! are created by the admin in the test's namespace, and acting as
//! `system:serviceaccount:<ns>:apiary-gc` (the admin's impersonation, RBAC-authorized exactly
//! like the account's token) `gc --all` finds every agent, collects the one whose expiry has
//! passed on the server's clock — pod by fenced graceful delete, then its Secret — and leaves the
//! others; its dry run deletes nothing; no request is refused. The Role is sufficient.
//!
//! Layer: integration test; loopback only; it skips without `KUBEBUILDER_ASSETS`.

use std::time::Duration;

use crate::real_support::{Backend, Stage, Tap, image, options, shipped};
use apiary_substrate::driver::{self, EXPIRE_DEADLINE};
use apiary_substrate::naming::AgentIdentity;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, PostParams};

async fn install_role(s: &Stage) {
    let ns = s.namespace();
    let pp = PostParams::default();
    let account: ServiceAccount =
        serde_json::from_value(shipped("ServiceAccount", ns)).expect("ServiceAccount");
    Api::<ServiceAccount>::namespaced(s.admin(), ns)
        .create(&pp, &account)
        .await
        .expect("ServiceAccount created");
    let role: Role = serde_json::from_value(shipped("Role", ns)).expect("Role");
    Api::<Role>::namespaced(s.admin(), ns)
        .create(&pp, &role)
        .await
        .expect("Role created");
    let binding: RoleBinding =
        serde_json::from_value(shipped("RoleBinding", ns)).expect("RoleBinding");
    Api::<RoleBinding>::namespaced(s.admin(), ns)
        .create(&pp, &binding)
        .await
        .expect("RoleBinding created");
}

/// The admin's configuration acting as the CronJob's ServiceAccount.
fn as_gc_account(s: &Stage) -> kube::Config {
    let ns = s.namespace();
    let mut config = s
        .plane()
        .expect("real")
        .config(apiary_envtest::Identity::Admin);
    config.auth_info.impersonate = Some(format!("system:serviceaccount:{ns}:apiary-gc"));
    config.auth_info.impersonate_groups = Some(vec![
        "system:serviceaccounts".to_owned(),
        format!("system:serviceaccounts:{ns}"),
        "system:authenticated".to_owned(),
    ]);
    config
}

/// Deploy `name` as the admin, expiring `offset` seconds from the server's clock (none: never).
async fn deploy(s: &Stage, name: &str, offset: Option<i64>) -> AgentIdentity {
    let agent = AgentIdentity::new(name).expect("agent");
    let admin = s.cluster();
    let mut config = s.config_for(&agent, &image(""));
    if let Some(offset) = offset {
        let now = driver::server_clock(&admin, &agent)
            .await
            .expect("listed")
            .expect("the real apiserver sends Date");
        config = config.expiring_at(now + offset);
    }
    driver::deploy(&admin, &config, &options(Duration::from_secs(60)))
        .await
        .expect("the admin deploys");
    agent
}

/// The shipped Role is sufficient: as the ServiceAccount, `gc --all` (dry run, then for real)
/// collects exactly the expired agent, pod then Secret, with no request refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cronjob_role_is_sufficient_for_gc_all() {
    let Some(s) = Stage::start(Backend::Real).await else {
        return;
    };
    install_role(&s).await;
    let expired = deploy(&s, "expired", Some(-30)).await;
    let alive = deploy(&s, "alive", Some(7_200)).await;
    let plain = deploy(&s, "plain", None).await;

    let tap = Tap::new();
    let gc = s.cluster_as(as_gc_account(&s), &tap);
    let dry = driver::gc_all(&gc, true, EXPIRE_DEADLINE, None)
        .await
        .expect("discovery as the account");
    let names: Vec<&str> = dry.agents.iter().map(|a| a.agent.name()).collect();
    assert_eq!(names, ["alive", "expired", "plain"]);
    assert!(dry.agents.iter().all(|a| !a.failed()), "{dry:?}");
    assert!(
        tap.requests().iter().all(|r| r.method == "GET"),
        "dry run reads only"
    );
    let planned: Vec<_> = dry
        .agents
        .iter()
        .filter_map(|a| a.expired.clone()?.ok()?.pod)
        .collect();
    assert_eq!(planned, [expired.pod_name()]);

    let done = driver::gc_all(&gc, false, EXPIRE_DEADLINE, None)
        .await
        .expect("gc --all as the account");
    assert!(done.agents.iter().all(|a| !a.failed()), "{done:?}");
    let refused: Vec<_> = tap
        .requests()
        .into_iter()
        .filter(|r| r.status == Some(403))
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
    assert!(s.pod_named(&expired.pod_name()).await.is_none());
    assert!(s.pod_named(&alive.pod_name()).await.is_some());
    assert!(s.pod_named(&plain.pod_name()).await.is_some());
    let secrets = s.secret_names().await;
    assert!(
        !secrets.iter().any(|n| n.starts_with(&expired.pod_name())),
        "{secrets:?}"
    );
    assert!(secrets.iter().any(|n| n.starts_with(&alive.pod_name())));
}
