//! Discovery documents: `/version`, `/api`, `/api/v1` and `/apis`, enough for kube-rs and
//! `kubectl` to find namespaces, pods and Secrets in core/v1.
//!
//! Layer: pure, constant JSON. The simulator answers aggregated-discovery requests with these
//! legacy documents (`Content-Type: application/json`), which clients accept as the fallback.

use serde_json::{Value, json};

/// `GET /version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": "v1.33.0-apiary-sim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `GET /api`: core group versions; `server_address` is `127.0.0.1:<port>`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": server_address }],
    })
}

/// `GET /apis`: no named groups.
pub fn groups() -> Value {
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": [] })
}

/// `GET /api/v1`: the three served resources and their verbs.
pub fn core_resources() -> Value {
    let verbs = json!(["create", "delete", "get", "list", "watch"]);
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "v1",
        "resources": [
            {
                "name": "namespaces", "singularName": "namespace", "namespaced": false,
                "kind": "Namespace", "verbs": verbs, "shortNames": ["ns"],
            },
            {
                "name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
                "verbs": verbs, "shortNames": ["po"], "categories": ["all"],
            },
            {
                "name": "secrets", "singularName": "secret", "namespaced": true,
                "kind": "Secret", "verbs": verbs,
            },
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pods and Secrets are namespaced and watchable; namespaces are cluster-scoped.
    #[test]
    fn core_resources_list_scopes_and_verbs() {
        let doc = core_resources();
        let res = doc["resources"].as_array().expect("resources");
        let find = |n: &str| res.iter().find(|r| r["name"] == n).expect(n).clone();
        assert_eq!(find("namespaces")["namespaced"], false);
        assert_eq!(find("pods")["namespaced"], true);
        assert_eq!(find("secrets")["kind"], "Secret");
        assert!(
            find("pods")["verbs"]
                .as_array()
                .expect("verbs")
                .contains(&json!("watch"))
        );
        assert_eq!(core_versions("127.0.0.1:1")["versions"][0], "v1");
        assert_eq!(groups()["groups"], json!([]));
        assert_eq!(version()["major"], "1");
    }
}
