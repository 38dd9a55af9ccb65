//! The deserialized form of `Pods` (seeds.md § Serde form, scenario K10): the accepted forms give
//! the shown values, every rejected form fails (unknown fields, zero or too large ports, blanks,
//! both port keys).
//!
//! Pure tests; compiled only with the `serde` feature.
#![cfg(feature = "serde")]

use crate::support::*;
use apiary_seeds::{Pods, Port};

/// K10: a fixed port without namespace.
#[test]
fn k10_accepts_number_form_without_namespace() {
    let parsed: Pods =
        serde_json::from_str(r#"{"label_selector": "app=ring-node", "port": {"number": 7000}}"#)
            .unwrap();
    assert_eq!(
        parsed,
        Pods {
            namespace: None,
            label_selector: "app=ring-node".to_owned(),
            port: number(7000)
        }
    );
}

/// K10: a named port with namespace, in JSON and YAML.
#[test]
fn k10_accepts_name_form_with_namespace() {
    let expected = Pods {
        namespace: Some("ring".to_owned()),
        label_selector: "app=ring-node".to_owned(),
        port: Port::Name("gossip".to_owned()),
    };
    let json: Pods = serde_json::from_str(
        r#"{"namespace": "ring", "label_selector": "app=ring-node", "port": {"name": "gossip"}}"#,
    )
    .unwrap();
    assert_eq!(json, expected);
    let yaml: Pods = serde_yaml::from_str(
        "namespace: ring\nlabel_selector: app=ring-node\nport:\n  name: gossip\n",
    )
    .unwrap();
    assert_eq!(yaml, expected);
}

/// K10: every rejected form of the spec fails, with the validation message where it applies.
#[test]
fn k10_rejects_every_listed_form() {
    let rejected = [
        (
            r#"{"label_selector": "a=b", "port": {"number": 0}}"#,
            "nonzero",
        ),
        (
            r#"{"label_selector": "a=b", "port": {"number": 65536}}"#,
            "",
        ),
        (
            r#"{"label_selector": " ", "port": {"number": 7000}}"#,
            "label_selector is blank",
        ),
        (
            r#"{"namespace": "", "label_selector": "a=b", "port": {"number": 7000}}"#,
            "namespace is blank",
        ),
        (
            r#"{"label_selector": "a=b", "port": {"name": ""}}"#,
            "port name is blank",
        ),
        (
            r#"{"lable_selector": "a=b", "port": {"number": 7000}}"#,
            "lable_selector",
        ),
        (
            r#"{"label_selector": "a=b", "port": {"numbr": 7000}}"#,
            "numbr",
        ),
        (
            r#"{"label_selector": "a=b", "port": {"number": 7000, "name": "gossip"}}"#,
            "exactly one",
        ),
        (r#"{"label_selector": "a=b", "port": {}}"#, "exactly one"),
        (
            r#"{"label_selector": "a=b", "port": {"number": 7000}, "extra": 1}"#,
            "extra",
        ),
        (r#"{"label_selector": "a=b"}"#, "port"),
    ];
    for (text, needle) in rejected {
        let error = serde_json::from_str::<Pods>(text)
            .expect_err(text)
            .to_string();
        assert!(error.contains(needle), "{text}: {error}");
    }
}

/// The largest port is accepted (the boundary next to 65536).
#[test]
fn k10_accepts_port_65535() {
    let parsed: Pods =
        serde_json::from_str(r#"{"label_selector": "a=b", "port": {"number": 65535}}"#).unwrap();
    assert_eq!(parsed.port, number(65535));
}

/// The filter's serde form (seeds.md § Address family and running containers): both keys
/// optional, `ipv4`/`ipv6` exactly, unknown keys refused.
#[test]
fn filter_form_accepts_both_keys_and_refuses_typos() {
    use apiary_seeds::{Filter, IpFamily};
    let parsed: Filter =
        serde_json::from_str(r#"{"ip_family": "ipv6", "require_running": true}"#).unwrap();
    assert_eq!(
        parsed,
        Filter {
            ip_family: Some(IpFamily::Ipv6),
            require_running: true
        }
    );
    let yaml: Filter = serde_yaml::from_str("ip_family: ipv4\n").unwrap();
    assert_eq!(yaml.ip_family, Some(IpFamily::Ipv4));
    assert!(!yaml.require_running);
    assert_eq!(
        serde_json::from_str::<Filter>("{}").unwrap(),
        Filter::default()
    );
    for rejected in [
        r#"{"ip_family": "IPv6"}"#,
        r#"{"ip_family": "inet"}"#,
        r#"{"ipfamily": "ipv6"}"#,
        r#"{"require_running": "yes"}"#,
    ] {
        assert!(
            serde_json::from_str::<Filter>(rejected).is_err(),
            "{rejected}"
        );
    }
}
