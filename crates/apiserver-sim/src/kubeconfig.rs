//! The kubeconfig that points a client (kube-rs, `kubectl`, `apiary`) at the simulator.
//!
//! Layer: pure text generation. One cluster, one user without credentials, one context carrying the
//! namespace, made current. Strings are written as JSON strings, which YAML reads verbatim, so no
//! value can break the document. It must never read or write the user's own kubeconfig.

/// The cluster, user and context name used in the generated kubeconfig.
pub const CONTEXT_NAME: &str = "apiary-sim";

/// A kubeconfig YAML document for `server` (e.g. `http://127.0.0.1:4321`) whose current context
/// has `namespace` as its default namespace.
pub fn kubeconfig_yaml(server: &str, namespace: &str) -> String {
    let q = |s: &str| serde_json::Value::from(s).to_string();
    let name = q(CONTEXT_NAME);
    let server = q(server);
    let namespace = q(namespace);
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: {server}
users:
- name: {name}
  user: {{}}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {name}
    namespace: {namespace}
current-context: {name}
preferences: {{}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document names the server and the namespace on the current context.
    #[test]
    fn kubeconfig_points_at_server_with_namespace() {
        let y = kubeconfig_yaml("http://127.0.0.1:1234", "agents");
        assert!(y.contains("    server: \"http://127.0.0.1:1234\"\n"), "{y}");
        assert!(y.contains("    namespace: \"agents\"\n"), "{y}");
        assert!(y.contains("current-context: \"apiary-sim\"\n"), "{y}");
    }

    /// Characters that mean something in YAML are quoted, not interpreted.
    #[test]
    fn values_are_quoted() {
        let y = kubeconfig_yaml("http://h: #x", "a\"b");
        assert!(y.contains("server: \"http://h: #x\""), "{y}");
        assert!(y.contains("namespace: \"a\\\"b\""), "{y}");
    }
}
