//! The `provider_config` rules of buzz-provider.md § 3.1, § 3.2 and § 16.3.

use serde_json::{Value, json};

use super::*;

const IMAGE: &str = "ghcr.io/block/buzz-sprig@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn base() -> Value {
    json!({"namespace": "buzz-agents-test", "image": IMAGE})
}

fn with(key: &str, value: Value) -> Value {
    let mut config = base();
    config[key] = value;
    config
}

fn message(value: &Value) -> String {
    parse(value).expect_err("refused").to_string()
}

/// Only an object or `null` is accepted; `null` then fails on the namespace.
#[test]
fn provider_config_must_be_an_object() {
    for value in [json!([]), json!("x"), json!(1), json!(true)] {
        assert_eq!(message(&value), "provider_config must be a JSON object");
    }
    assert_eq!(
        message(&Value::Null),
        "provider_config.namespace is required: the info schema supplies a generated default, \
         so an empty value means the form was cleared"
    );
}

/// The defaults of buzz-provider.md § 3.2.
#[test]
fn defaults_apply() {
    let config = parse(&base()).unwrap();
    assert_eq!(config.context, None);
    assert_eq!(config.cpu_request, "1");
    assert_eq!(config.memory_request, "2Gi");
    assert_eq!(config.cpu_limit, "2");
    assert_eq!(config.memory_limit, "4Gi");
    assert_eq!(config.inactivity_seconds, 7200);
    assert_eq!(config.service_account, None);
    assert_eq!(config.pod_options, PodOptions::default());
}

/// Strings: absent, `null`, `""` and blank are unset; others are trimmed.
#[test]
fn string_fields_are_trimmed_and_blank_is_unset() {
    for unset in [Value::Null, json!(""), json!("  \t")] {
        let config = parse(&with("context", unset.clone())).unwrap();
        assert_eq!(config.context, None);
        let config = parse(&with("cpu_request", unset)).unwrap();
        assert_eq!(config.cpu_request, "1");
    }
    let config = parse(&with("service_account", json!("  runner "))).unwrap();
    assert_eq!(config.service_account.as_deref(), Some("runner"));
    let config = parse(&with("namespace", json!(" ns-1 "))).unwrap();
    assert_eq!(config.namespace, "ns-1");
}

/// A non-string in a string field is refused with its compact JSON.
#[test]
fn non_string_is_refused_with_its_json() {
    assert_eq!(
        message(&with("cpu_limit", json!(2))),
        "provider_config.cpu_limit must be a string, got 2"
    );
    assert_eq!(
        message(&with("context", json!({"a": [1, true]}))),
        "provider_config.context must be a string, got {\"a\":[1,true]}"
    );
    assert_eq!(
        message(&with("namespace", json!(false))),
        "provider_config.namespace must be a string, got false"
    );
}

/// `inactivity_seconds`: numbers and numeric strings; each refusal shows the value its way.
#[test]
fn inactivity_seconds_parsing() {
    assert_eq!(
        parse(&with("inactivity_seconds", json!(3600)))
            .unwrap()
            .inactivity_seconds,
        3600
    );
    assert_eq!(
        parse(&with("inactivity_seconds", json!(" 90 ")))
            .unwrap()
            .inactivity_seconds,
        90
    );
    for unset in [Value::Null, json!(""), json!("   ")] {
        assert_eq!(
            parse(&with("inactivity_seconds", unset))
                .unwrap()
                .inactivity_seconds,
            7200
        );
    }
    let refused = [
        (json!(-1), "-1"),
        (json!(1.5), "1.5"),
        (json!("ten"), "\"ten\""),
        (json!("-5"), "\"-5\""),
        (json!(true), "true"),
        (json!([1]), "[1]"),
    ];
    for (value, shown) in refused {
        assert_eq!(
            message(&with("inactivity_seconds", value)),
            format!(
                "provider_config.inactivity_seconds must be a non-negative integer, got {shown}"
            )
        );
    }
}

/// `inactivity_seconds: 0` is refused, never downgraded (also as a string).
#[test]
fn inactivity_zero_is_refused() {
    for zero in [json!(0), json!("0")] {
        assert_eq!(
            message(&with("inactivity_seconds", zero)),
            "provider_config.inactivity_seconds: 0 (indefinite lifetime) is not supported in \
             this version: it requires restartPolicy OnFailure, which is gated on the harness \
             exit-code contract. Set a positive number of seconds."
        );
    }
}

/// The namespace is required and must be an RFC 1123 label.
#[test]
fn namespace_rules() {
    let required = "provider_config.namespace is required: the info schema supplies a generated \
                    default, so an empty value means the form was cleared";
    assert_eq!(message(&json!({"image": IMAGE})), required);
    assert_eq!(message(&with("namespace", json!("  "))), required);
    let long = "a".repeat(64);
    for bad in ["Agents", "-a", "a-", "a_b", "a.b", long.as_str()] {
        assert_eq!(
            message(&with("namespace", json!(bad))),
            format!(
                "provider_config.namespace \"{bad}\" is not a valid Kubernetes namespace \
                 (lowercase alphanumerics and '-', ≤63 characters)"
            )
        );
    }
    for good in ["a", "0", "a-b-1", &"z".repeat(63)] {
        assert!(parse(&with("namespace", json!(good))).is_ok(), "{good}");
    }
}

/// The image is required (no default at parse time) and normalized.
#[test]
fn image_is_required_and_normalized() {
    let mut config = base();
    config.as_object_mut().unwrap().remove("image");
    assert!(matches!(
        parse(&config),
        Err(ConfigError::Image(ImageError::Missing))
    ));
    let hex = "b".repeat(64);
    let config = parse(&with("image", json!(format!("r.io/a/b:v1@sha256:{hex}")))).unwrap();
    assert_eq!(config.image, format!("r.io/a/b@sha256:{hex}"));
}

/// Unknown keys are ignored and do not reach the parsed struct's `Debug`.
#[test]
fn unknown_keys_are_ignored_and_never_kept() {
    let mut config = base();
    config["token"] = json!("sprt_tok_shouldnotappear");
    config["client_key"] = json!("client-key-value");
    let parsed = parse(&config).unwrap();
    assert_eq!(parsed, parse(&base()).unwrap());
    let debug = format!("{parsed:?}");
    assert!(
        !debug.contains("sprt_tok_") && !debug.contains("client-key-value"),
        "{debug}"
    );
}

/// `pod_options` validation: unknown fields, wrong types, a non-positive deadline and blank
/// storage quantities are refused with the exact texts (buzz-provider.md § 16.3).
#[test]
fn refuses_invalid_pod_options() {
    assert_eq!(
        message(&with("pod_options", json!({"active_deadline_seconds": 0}))),
        "provider_config.pod_options.active_deadline_seconds must be positive"
    );
    assert_eq!(
        message(&with("pod_options", json!({"active_deadline_seconds": -3}))),
        "provider_config.pod_options.active_deadline_seconds must be positive"
    );
    for field in [
        "workspace_size_limit",
        "ephemeral_storage_request",
        "ephemeral_storage_limit",
    ] {
        for blank in ["", "  "] {
            assert_eq!(
                message(&with("pod_options", json!({field: blank}))),
                "provider_config.pod_options storage quantities must not be empty"
            );
        }
    }
    let unknown = message(&with("pod_options", json!({"host_network": true})));
    assert!(
        unknown.starts_with("provider_config.pod_options: unknown field `host_network`"),
        "{unknown}"
    );
    let wrong = message(&with("pod_options", json!({"setup_pending": "yes"})));
    assert!(
        wrong.starts_with("provider_config.pod_options: "),
        "{wrong}"
    );
    let not_object = message(&with("pod_options", json!(3)));
    assert!(
        not_object.starts_with("provider_config.pod_options: "),
        "{not_object}"
    );
}

/// Valid `pod_options` reach the parsed config; absent and `null` are the default.
#[test]
fn pod_options_are_parsed() {
    let config = parse(&with(
        "pod_options",
        json!({
            "node_selector": {"pool": "agents"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "agents", "effect": "NoSchedule"}],
            "workspace_size_limit": "10Gi",
            "ephemeral_storage_request": "1Gi",
            "ephemeral_storage_limit": "2Gi",
            "active_deadline_seconds": 86400,
            "setup_pending": true
        }),
    ))
    .unwrap();
    let options = config.pod_options;
    assert_eq!(
        options.node_selector.get("pool").map(String::as_str),
        Some("agents")
    );
    assert_eq!(options.tolerations.len(), 1);
    assert_eq!(options.workspace_size_limit.as_deref(), Some("10Gi"));
    assert_eq!(options.ephemeral_storage_request.as_deref(), Some("1Gi"));
    assert_eq!(options.ephemeral_storage_limit.as_deref(), Some("2Gi"));
    assert_eq!(options.active_deadline_seconds, Some(86400));
    assert!(options.setup_pending);
    assert_eq!(
        parse(&with("pod_options", Value::Null))
            .unwrap()
            .pod_options,
        PodOptions::default()
    );
}

/// buzz-provider.md § 3.2: resource quantities are passed through verbatim (after trimming),
/// never validated locally; the API server is the one that judges them.
#[test]
fn resource_quantities_are_not_validated_locally() {
    let mut config = base();
    config["cpu_request"] = json!("lots");
    config["memory_request"] = json!(" 2 gigs ");
    config["cpu_limit"] = json!("-3");
    config["memory_limit"] = json!("4Zz");
    let config = parse(&config).unwrap();
    assert_eq!(config.cpu_request, "lots");
    assert_eq!(config.memory_request, "2 gigs");
    assert_eq!(config.cpu_limit, "-3");
    assert_eq!(config.memory_limit, "4Zz");
}
