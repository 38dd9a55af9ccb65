//! The shipped Role `rbac/apiary-seeds.yaml` (seeds.md § RBAC): a Role named `apiary-seeds`
//! without a namespace, granting exactly `list` and `watch` on core `pods`, with comments for
//! the binding command and for dropping `watch`.
//!
//! File test: parses the YAML; contacts no cluster.

use k8s_openapi::api::rbac::v1::Role;

const ROLE: &str = include_str!("../../../../rbac/apiary-seeds.yaml");

/// The Role parses and grants exactly list and watch on core pods, in no fixed namespace.
#[test]
fn rbac_role_grants_list_and_watch_on_pods_only() {
    let role: Role = serde_yaml::from_str(ROLE).expect("the Role parses");
    assert_eq!(role.metadata.name.as_deref(), Some("apiary-seeds"));
    assert_eq!(
        role.metadata.namespace, None,
        "installed with kubectl apply -n <ns>"
    );
    let rules = role.rules.expect("the Role has rules");
    assert_eq!(rules.len(), 1);
    let rule = &rules[0];
    assert_eq!(rule.api_groups.as_deref(), Some(&[String::new()][..]));
    assert_eq!(rule.resources.as_deref(), Some(&["pods".to_owned()][..]));
    assert_eq!(rule.verbs, ["list", "watch"]);
    assert_eq!(rule.resource_names, None);
    let kind: serde_yaml::Value = serde_yaml::from_str(ROLE).unwrap();
    assert_eq!(kind["kind"], "Role");
    assert_eq!(kind["apiVersion"], "rbac.authorization.k8s.io/v1");
}

/// The comments carry the binding command and say `watch` may be dropped without watch mode.
#[test]
fn rbac_comments_give_the_binding_command_and_the_watch_note() {
    assert!(ROLE.contains(
        "kubectl create rolebinding apiary-seeds -n <ns> --role=apiary-seeds --serviceaccount=<sa-ns>:<sa>"
    ));
    assert!(ROLE.contains("kubectl apply -n <ns> -f rbac/apiary-seeds.yaml"));
    assert!(ROLE.contains("may be dropped when watch mode is unused"));
}
