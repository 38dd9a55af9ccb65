//! The `info` answer of buzz-provider.md § 2.3 and the schema of § 3.3 / § 16.3.

use serde_json::{Value, json};

use super::*;
use crate::config;
use crate::entropy::FixedEntropy;

fn schema_value(seed: u32) -> Value {
    serde_json::to_value(config_schema(&mut FixedEntropy::new([seed, seed + 1])).unwrap()).unwrap()
}

/// The top-level fields of `info`, as literals.
#[test]
fn info_fields() {
    let info = serde_json::to_value(info(&mut FixedEntropy::new([0])).unwrap()).unwrap();
    assert_eq!(info["ok"], true);
    assert_eq!(info["name"], "kubernetes");
    assert_eq!(info["version"], "0.1.0");
    assert_eq!(info["protocol_version"], 1);
    assert_eq!(
        info["description"],
        "Runs agents as pods in a Kubernetes cluster"
    );
    let keys: Vec<&str> = info
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "config_schema",
            "description",
            "name",
            "ok",
            "protocol_version",
            "version"
        ]
    );
}

/// The pinned schema (buzz-provider.md § 16.3's `schema_declares_scalar_fields_and_optional_pod_controls`): the
/// 9 scalar fields in the spec's order, then `pod_options`; 10 keys, not the upstream 11,
/// because `identity_policy` (buzz-provider.md § 16.2) is not implemented and is deliberately not advertised.
#[test]
fn schema_declares_scalar_fields_and_optional_pod_controls() {
    let whole =
        serde_json::to_string(&config_schema(&mut FixedEntropy::new([0])).unwrap()).unwrap();
    let text = &whole[whole.find("\"properties\"").unwrap()..];
    let order = [
        "\"context\"",
        "\"namespace\"",
        "\"image\"",
        "\"cpu_request\"",
        "\"memory_request\"",
        "\"cpu_limit\"",
        "\"memory_limit\"",
        "\"inactivity_seconds\"",
        "\"service_account\"",
        "\"pod_options\"",
    ];
    let positions: Vec<usize> = order.iter().map(|key| text.find(key).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    let schema = schema_value(0);
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["namespace", "image"]));
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.len(), 10);
    assert!(!properties.contains_key("identity_policy"));
    let pod_options = &properties["pod_options"];
    assert_eq!(pod_options["type"], "object");
    assert_eq!(pod_options["additionalProperties"], false);
    let sub: Vec<&str> = pod_options["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        sub,
        [
            "active_deadline_seconds",
            "ephemeral_storage_limit",
            "ephemeral_storage_request",
            "node_selector",
            "setup_pending",
            "tolerations",
            "workspace_size_limit"
        ]
    );
}

/// Each scalar property's type, title and default, as literals.
#[test]
fn scalar_properties_are_pinned() {
    let schema = schema_value(0);
    let p = &schema["properties"];
    let expect = [
        ("context", "string", "Kubeconfig context", Value::Null),
        ("image", "string", "Agent image", json!(DEFAULT_IMAGE)),
        ("cpu_request", "string", "CPU request", json!("1")),
        ("memory_request", "string", "Memory request", json!("2Gi")),
        ("cpu_limit", "string", "CPU limit", json!("2")),
        ("memory_limit", "string", "Memory limit", json!("4Gi")),
        (
            "inactivity_seconds",
            "number",
            "Stop after inactivity (seconds)",
            json!(7200),
        ),
        ("service_account", "string", "Service account", Value::Null),
    ];
    for (key, kind, title, default) in expect {
        assert_eq!(p[key]["type"], kind, "{key}");
        assert_eq!(p[key]["title"], title, "{key}");
        assert_eq!(p[key]["default"], default, "{key}");
    }
    assert_eq!(p["namespace"]["title"], "Namespace");
    assert_eq!(
        p["context"]["description"],
        "Leave empty to use the current context."
    );
    assert_eq!(
        p["namespace"]["description"],
        "Created if it does not exist."
    );
    assert_eq!(
        p["service_account"]["description"],
        "Scheduling/RBAC identity only. No API token is mounted."
    );
    assert_eq!(
        DEFAULT_IMAGE,
        "ghcr.io/block/buzz-sprig:sha-6530b58@sha256:\
         17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76"
    );
}

/// I2: no property name (nor `pod_options` sub-property), split on `_` or `-`, contains a
/// banned word.
#[test]
fn no_property_name_holds_a_banned_word() {
    let schema = schema_value(0);
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    names.extend(
        schema["properties"]["pod_options"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned(),
    );
    for name in names {
        for word in name.split(['_', '-']) {
            assert!(!BANNED_WORDS.contains(&word), "{name}");
        }
    }
}

/// The namespace default is `buzz-agents-` and 6 characters of `[a-z0-9]`, fresh per call.
#[test]
fn namespace_default_is_random_per_call() {
    let mut entropy = FixedEntropy::new([0, 25, 26, 35, 36, 71, 1, 2, 3, 4, 5, 6]);
    assert_eq!(
        namespace_default(&mut entropy).unwrap(),
        "buzz-agents-az09a9"
    );
    assert_eq!(
        namespace_default(&mut entropy).unwrap(),
        "buzz-agents-bcdefg"
    );
    let a = schema_value(3);
    let b = schema_value(4);
    assert_ne!(
        a["properties"]["namespace"]["default"],
        b["properties"]["namespace"]["default"]
    );
}

/// Both defaults round-trip through `parse`: the prefilled form deploys as is.
#[test]
fn defaults_round_trip_through_parse() {
    let schema = schema_value(9);
    let namespace = schema["properties"]["namespace"]["default"].clone();
    let image = schema["properties"]["image"]["default"].clone();
    let parsed = config::parse(&json!({"namespace": namespace, "image": image})).unwrap();
    assert_eq!(parsed.namespace, namespace.as_str().unwrap());
    assert_eq!(
        parsed.image,
        "ghcr.io/block/buzz-sprig@sha256:17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76"
    );
}

/// buzz-provider.md § 3.3: the rest of the property table. `namespace`'s type and default shape,
/// the `image` description's gist (digest-pinned, buzz-acp runtime ABI, tags refused because of
/// the private key), the `inactivity_seconds` description verbatim, and no description (nor
/// default) where the table has none.
#[test]
fn remaining_schema_columns_are_pinned() {
    let schema = schema_value(0);
    let p = &schema["properties"];
    assert_eq!(p["namespace"]["type"], "string");
    let namespace = p["namespace"]["default"].as_str().unwrap();
    let suffix = namespace.strip_prefix("buzz-agents-").unwrap();
    assert_eq!(suffix.len(), 6, "{namespace}");
    assert!(
        suffix
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
        "{namespace}"
    );
    let image = p["image"]["description"].as_str().unwrap();
    for gist in [
        "digest-pinned",
        "buzz-acp runtime ABI",
        "tag alone is refused",
        "private key",
    ] {
        assert!(image.contains(gist), "{gist:?} not in {image:?}");
    }
    assert_eq!(
        p["inactivity_seconds"]["description"],
        "The agent exits after this long with no work, and can be started again at any time."
    );
    for key in ["cpu_request", "memory_request", "cpu_limit", "memory_limit"] {
        assert!(p[key].get("description").is_none(), "{key}");
    }
    for key in ["context", "service_account"] {
        assert!(p[key].get("default").is_none(), "{key}");
    }
}
