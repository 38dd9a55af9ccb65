//! The shipped `rbac/apiary-deployer.yaml` matches deploy.md § RBAC: its rules are compared,
//! verb by verb, with that section's table, so the file and the spec cannot drift. Reads one
//! file; contacts nothing.

use std::collections::{BTreeMap, BTreeSet};

use apiary_classify::failure::Operation;

/// deploy.md § RBAC, as data: (operation, resource, verbs). Optional verbs are included: the
/// shipped roles grant them so the faster or fuller path is available.
const TABLE: &[(&str, &str, &[&str])] = &[
    ("deploy", "namespaces", &["get", "create"]),
    (
        "deploy",
        "pods",
        &["get", "list", "create", "delete", "watch"],
    ),
    ("deploy", "secrets", &["get", "list", "create", "delete"]),
    // deploy.md § Namespace ensure, item 4: deploy reads the pod's service account while a pod
    // create waits for the ServiceAccount controller (§ RBAC's table predates the rule).
    ("deploy", "serviceaccounts", &["get"]),
    ("status", "pods", &["get"]),
    ("status", "secrets", &["get"]),
    ("undeploy", "pods", &["get", "list", "delete"]),
    ("undeploy", "secrets", &["list", "delete"]),
    ("gc", "pods", &["get", "list", "delete"]),
    // deploy.md § Expiry: renew lists the pod with the clock and patches its annotation.
    ("renew", "pods", &["list", "patch"]),
    ("gc", "secrets", &["get", "list", "delete"]),
    // deploy.md § list and logs: logs verifies the pod by a GET, then reads its log.
    ("list", "pods", &["list"]),
    ("list", "secrets", &["list"]),
    ("logs", "pods", &["get"]),
    ("logs", "pods/log", &["get"]),
    // deploy.md § Egress control: `deploy --isolate` creates, reads and updates the agent's
    // NetworkPolicy; undeploy and gc delete it.
    ("deploy", "networkpolicies", &["get", "create", "update"]),
    ("undeploy", "networkpolicies", &["get", "delete"]),
    ("gc", "networkpolicies", &["get", "delete"]),
    // deploy.md § Persistent workspace: `deploy --workspace-size` creates the agent's claim and
    // reads it when it exists; status and undeploy read it; only `undeploy --delete-workspace`
    // deletes it (gc never does).
    ("deploy", "persistentvolumeclaims", &["get", "create"]),
    ("status", "persistentvolumeclaims", &["get"]),
    ("undeploy", "persistentvolumeclaims", &["get", "delete"]),
];

/// Which role grants which resource (deploy.md § RBAC: pods and Secrets per namespace through
/// `apiary-deployer`, namespaces cluster-wide through `apiary-namespace-creator`).
const ROLE_OF: &[(&str, &str)] = &[
    ("pods", "apiary-deployer"),
    ("pods/log", "apiary-deployer"),
    ("secrets", "apiary-deployer"),
    ("serviceaccounts", "apiary-deployer"),
    ("networkpolicies", "apiary-deployer"),
    ("persistentvolumeclaims", "apiary-deployer"),
    ("namespaces", "apiary-namespace-creator"),
];

type Grants = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn shipped_text() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../rbac/apiary-deployer.yaml"
    );
    std::fs::read_to_string(path).expect("rbac/apiary-deployer.yaml is shipped")
}

/// role name → resource → verbs, from the shipped multi-document YAML.
fn shipped_grants() -> Grants {
    let text = shipped_text();
    let mut grants = Grants::new();
    for document in serde_yaml::Deserializer::from_str(&text) {
        let value = <serde_yaml::Value as serde::Deserialize>::deserialize(document)
            .expect("valid YAML document");
        if value.is_null() {
            continue;
        }
        assert_eq!(
            value["apiVersion"].as_str(),
            Some("rbac.authorization.k8s.io/v1")
        );
        assert_eq!(value["kind"].as_str(), Some("ClusterRole"));
        let name = value["metadata"]["name"]
            .as_str()
            .expect("named role")
            .to_owned();
        assert!(!grants.contains_key(&name), "role {name} defined twice");
        let role = grants.entry(name.clone()).or_default();
        for rule in value["rules"].as_sequence().expect("rules") {
            let groups: Vec<&str> = rule["apiGroups"]
                .as_sequence()
                .expect("apiGroups")
                .iter()
                .map(|g| g.as_str().expect("string"))
                .collect();
            // The core group, and networking.k8s.io for NetworkPolicies alone.
            let resources: Vec<&str> = rule["resources"]
                .as_sequence()
                .expect("resources")
                .iter()
                .map(|r| r.as_str().expect("string"))
                .collect();
            let expected = if resources == ["networkpolicies"] {
                "networking.k8s.io"
            } else {
                ""
            };
            assert_eq!(groups, [expected], "{name}: {resources:?}");
            assert!(
                rule.get("resourceNames").is_none(),
                "{name}: no resourceNames"
            );
            for resource in rule["resources"].as_sequence().expect("resources") {
                let verbs = role
                    .entry(resource.as_str().expect("string").to_owned())
                    .or_default();
                for verb in rule["verbs"].as_sequence().expect("verbs") {
                    verbs.insert(verb.as_str().expect("string").to_owned());
                }
            }
        }
    }
    grants
}

/// What the table says each role must grant: the union of every operation's verbs per
/// resource.
fn table_grants() -> Grants {
    let mut grants = Grants::new();
    for (_operation, resource, verbs) in TABLE {
        let role = ROLE_OF
            .iter()
            .find(|(r, _)| r == resource)
            .map(|(_, role)| *role)
            .expect("every resource has a role");
        grants
            .entry(role.to_owned())
            .or_default()
            .entry((*resource).to_owned())
            .or_default()
            .extend(verbs.iter().map(|v| (*v).to_owned()));
    }
    grants
}

/// The shipped roles grant exactly what the table lists: nothing missing, nothing extra.
#[test]
fn rbac_file_matches_spec_table() {
    assert_eq!(shipped_grants(), table_grants());
}

/// The literal expected grants, so a wrong table above cannot hide a wrong file.
#[test]
fn rbac_roles_are_the_spec_roles() {
    let grants = shipped_grants();
    let verbs = |role: &str, resource: &str| -> Vec<String> {
        grants[role][resource].iter().cloned().collect()
    };
    assert_eq!(
        grants.keys().collect::<Vec<_>>(),
        ["apiary-deployer", "apiary-namespace-creator"]
    );
    assert_eq!(
        verbs("apiary-deployer", "pods"),
        ["create", "delete", "get", "list", "patch", "watch"]
    );
    assert_eq!(
        verbs("apiary-deployer", "secrets"),
        ["create", "delete", "get", "list"]
    );
    assert_eq!(
        verbs("apiary-namespace-creator", "namespaces"),
        ["create", "get"]
    );
    assert_eq!(verbs("apiary-deployer", "serviceaccounts"), ["get"]);
    assert_eq!(verbs("apiary-deployer", "pods/log"), ["get"]);
    assert_eq!(
        verbs("apiary-deployer", "networkpolicies"),
        ["create", "delete", "get", "update"]
    );
    assert_eq!(
        verbs("apiary-deployer", "persistentvolumeclaims"),
        ["create", "delete", "get"]
    );
    assert_eq!(grants["apiary-deployer"].len(), 6);
    assert_eq!(grants["apiary-namespace-creator"].len(), 1);
}

/// Every operation's verbs are covered by the shipped roles (a user bound to both can run
/// every subcommand).
#[test]
fn every_operation_is_covered() {
    let grants = shipped_grants();
    for (operation, resource, verbs) in TABLE {
        let role = ROLE_OF
            .iter()
            .find(|(r, _)| r == resource)
            .map(|(_, role)| *role)
            .expect("role");
        for verb in *verbs {
            assert!(
                grants[role][*resource].contains(*verb),
                "{operation}: {resource} {verb} not granted by {role}"
            );
        }
    }
}

/// The roles and the kube shell cannot drift: every request kind `Cluster` sends is granted by
/// the shipped roles as `Operation::verb` and `Operation::resource` name it (the node read
/// aside: `rbac/apiary-node-reader.yaml` grants it, node_rbac.rs), and every granted verb is
/// one some request kind needs. A new request (the workspace claim's get, create and delete)
/// fails here until the manifest grants it.
#[test]
fn shipped_roles_grant_exactly_the_request_kinds() {
    let mut granted = BTreeSet::new();
    for (_role, resources) in shipped_grants() {
        for (resource, verbs) in resources {
            granted.extend(verbs.into_iter().map(|verb| (resource.clone(), verb)));
        }
    }
    let needed: BTreeSet<(String, String)> = Operation::ALL
        .into_iter()
        .filter(|operation| *operation != Operation::GetNode)
        .map(|operation| (operation.resource().to_owned(), operation.verb().to_owned()))
        .collect();
    assert_eq!(granted, needed);
    for verb in ["get", "create", "delete"] {
        assert!(
            granted.contains(&("persistentvolumeclaims".to_owned(), verb.to_owned())),
            "{verb} persistentvolumeclaims"
        );
    }
}

/// The file carries the binding command in a comment, as the spec shows it.
#[test]
fn rbac_file_shows_binding_command() {
    let text = shipped_text();
    assert!(
        text.lines().any(|line| line.starts_with('#')
            && line.contains(
                "kubectl create rolebinding apiary -n <ns> --clusterrole=apiary-deployer --user=<you>"
            )),
        "binding command comment missing"
    );
}
