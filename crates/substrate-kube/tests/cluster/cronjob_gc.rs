//! The shipped `deploy/cronjob-gc.yaml` (deploy.md § Expiry): its Role grants exactly the
//! table of what `gc --all` sends (`driver::GC_ALL_GRANTS`, the code's own list), nothing more
//! and nothing less; the RoleBinding binds that Role to the ServiceAccount the CronJob runs as;
//! the CronJob runs `gc --all`, one pass at a time, hardened. Reads one file; contacts nothing.

use std::collections::{BTreeMap, BTreeSet};

use apiary_substrate::driver::GC_ALL_GRANTS;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};

struct Shipped {
    account: ServiceAccount,
    role: Role,
    binding: RoleBinding,
    cronjob: CronJob,
}

fn shipped() -> Shipped {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/cronjob-gc.yaml");
    let text = std::fs::read_to_string(path).expect("deploy/cronjob-gc.yaml is shipped");
    let mut docs: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    for document in serde_yaml::Deserializer::from_str(&text) {
        let value = <serde_json::Value as serde::Deserialize>::deserialize(document)
            .expect("valid YAML document");
        if value.is_null() {
            continue;
        }
        let kind = value["kind"].as_str().expect("kind").to_owned();
        assert!(docs.insert(kind.clone(), value).is_none(), "{kind} twice");
    }
    let take = |kind: &str| {
        docs.get(kind)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind}"))
    };
    assert_eq!(docs.len(), 4, "ServiceAccount, Role, RoleBinding, CronJob");
    Shipped {
        account: serde_json::from_value(take("ServiceAccount")).expect("ServiceAccount"),
        role: serde_json::from_value(take("Role")).expect("Role"),
        binding: serde_json::from_value(take("RoleBinding")).expect("RoleBinding"),
        cronjob: serde_json::from_value(take("CronJob")).expect("CronJob"),
    }
}

/// The Role's rules are exactly `GC_ALL_GRANTS`: core group only, no resourceNames, no other
/// resource, no missing or extra verb.
#[test]
fn role_grants_exactly_what_gc_all_sends() {
    let role = shipped().role;
    let mut granted: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for rule in role.rules.unwrap_or_default() {
        assert_eq!(rule.api_groups.as_deref(), Some(&[String::new()][..]));
        assert!(rule.resource_names.is_none());
        for resource in rule.resources.unwrap_or_default() {
            granted
                .entry(resource)
                .or_default()
                .extend(rule.verbs.iter().cloned());
        }
    }
    let needed: BTreeMap<String, BTreeSet<String>> = GC_ALL_GRANTS
        .iter()
        .map(|(resource, verbs)| {
            (
                (*resource).to_owned(),
                verbs.iter().map(|v| (*v).to_owned()).collect(),
            )
        })
        .collect();
    assert_eq!(granted, needed);
    assert!(
        !granted
            .values()
            .flatten()
            .any(|v| v == "create" || v == "patch" || v == "*"),
        "gc never creates or updates"
    );
}

/// The binding ties that Role to the CronJob's ServiceAccount, all in one namespace.
#[test]
fn binding_ties_the_role_to_the_cronjobs_account() {
    let s = shipped();
    let ns = s.account.metadata.namespace.clone().expect("namespaced");
    for other in [
        &s.role.metadata.namespace,
        &s.binding.metadata.namespace,
        &s.cronjob.metadata.namespace,
    ] {
        assert_eq!(other.as_deref(), Some(ns.as_str()));
    }
    assert_eq!(s.binding.role_ref.kind, "Role");
    assert_eq!(
        Some(&s.binding.role_ref.name),
        s.role.metadata.name.as_ref()
    );
    let subjects = s.binding.subjects.unwrap_or_default();
    assert_eq!(subjects.len(), 1);
    assert_eq!(subjects[0].kind, "ServiceAccount");
    assert_eq!(Some(&subjects[0].name), s.account.metadata.name.as_ref());
    assert_eq!(subjects[0].namespace.as_deref(), Some(ns.as_str()));
    let spec = s.cronjob.spec.expect("spec");
    let pod = spec
        .job_template
        .spec
        .expect("job spec")
        .template
        .spec
        .expect("pod spec");
    assert_eq!(
        pod.service_account_name.as_ref(),
        s.account.metadata.name.as_ref()
    );
}

/// The CronJob runs `apiary gc --all` in that namespace, never two passes at once, hardened.
#[test]
fn cronjob_runs_gc_all_once_at_a_time() {
    let s = shipped();
    let ns = s.account.metadata.namespace.clone().expect("namespaced");
    let spec = s.cronjob.spec.expect("spec");
    assert_eq!(spec.concurrency_policy.as_deref(), Some("Forbid"));
    let pod = spec
        .job_template
        .spec
        .expect("job spec")
        .template
        .spec
        .expect("pod spec");
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    let [container] = pod.containers.as_slice() else {
        panic!("one container")
    };
    let args = container.args.clone().unwrap_or_default();
    assert_eq!(args[..2], ["gc", "--all"]);
    assert!(args.windows(2).any(|w| w[0] == "-n" && w[1] == ns));
    assert!(
        container
            .image
            .as_deref()
            .is_some_and(|i| i.contains("@sha256:"))
    );
    let hardening = container.security_context.clone().expect("securityContext");
    assert_eq!(hardening.allow_privilege_escalation, Some(false));
    assert_eq!(hardening.read_only_root_filesystem, Some(true));
    assert_eq!(
        hardening.capabilities.and_then(|c| c.drop),
        Some(vec!["ALL".to_owned()])
    );
    assert_eq!(
        pod.security_context.and_then(|c| c.run_as_non_root),
        Some(true)
    );
}
