//! The shipped `rbac/apiary-node-reader.yaml` grants exactly what the node read of a pod that will
//! not go away needs (deploy.md § When a pod will not go away): one ClusterRole whose only rule is
//! the verb and resource of `Operation::GetNode` in the core group, no namespace (nodes are
//! cluster-scoped) and no resourceNames; its header shows the binding command and an example
//! binding. Reads one file; contacts nothing. (That the role is sufficient on a real server:
//! `real_server/stuck.rs`.)

use apiary_classify::failure::Operation;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};

fn shipped_text() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../rbac/apiary-node-reader.yaml"
    );
    std::fs::read_to_string(path).expect("rbac/apiary-node-reader.yaml is shipped")
}

/// Every YAML document of the file (comments are not documents).
fn documents() -> Vec<serde_json::Value> {
    serde_yaml::Deserializer::from_str(&shipped_text())
        .map(|document| {
            <serde_json::Value as serde::Deserialize>::deserialize(document).expect("valid YAML")
        })
        .filter(|value| !value.is_null())
        .collect()
}

/// The file is one ClusterRole granting the node read's verb on its resource, and nothing else.
#[test]
fn node_reader_grants_exactly_the_node_read() {
    let [role] = documents().try_into().expect("one document");
    assert_eq!(role["apiVersion"], "rbac.authorization.k8s.io/v1");
    assert_eq!(role["kind"], "ClusterRole");
    assert!(role["metadata"].get("namespace").is_none(), "{role}");
    let role: ClusterRole = serde_json::from_value(role).expect("a ClusterRole");
    assert_eq!(role.metadata.name.as_deref(), Some("apiary-node-reader"));
    let needed = PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(vec![Operation::GetNode.resource().to_owned()]),
        verbs: vec![Operation::GetNode.verb().to_owned()],
        ..PolicyRule::default()
    };
    assert_eq!(role.rules, Some(vec![needed]));
    assert!(role.aggregation_rule.is_none());
}

/// The literal grant, so a wrong `Operation::GetNode` cannot hide a wrong file.
#[test]
fn node_reader_is_get_on_nodes() {
    let [role] = documents().try_into().expect("one document");
    let rules = role["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["apiGroups"], serde_json::json!([""]));
    assert_eq!(rules[0]["resources"], serde_json::json!(["nodes"]));
    assert_eq!(rules[0]["verbs"], serde_json::json!(["get"]));
}

/// The header shows the binding command, and its commented example binding parses as a
/// ClusterRoleBinding to this role.
#[test]
fn node_reader_shows_how_to_bind_it() {
    let text = shipped_text();
    assert!(
        text.lines().any(|line| line.starts_with('#')
            && line.contains(
                "kubectl create clusterrolebinding apiary-node-reader \
                 --clusterrole=apiary-node-reader --user=<you>"
            )),
        "binding command comment missing"
    );
    let example: String = text
        .lines()
        .skip_while(|line| !line.starts_with("#   apiVersion:"))
        .take_while(|line| line.starts_with("#   "))
        .map(|line| format!("{}\n", &line[4..]))
        .collect();
    let binding: ClusterRoleBinding = serde_yaml::from_str(&example).expect("a ClusterRoleBinding");
    assert_eq!(binding.role_ref.kind, "ClusterRole");
    assert_eq!(binding.role_ref.name, "apiary-node-reader");
    assert_eq!(binding.subjects.map(|s| s.len()), Some(1));
}
