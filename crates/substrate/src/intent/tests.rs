//! Unit tests of `intent`: F1–F8 of deploy.md § Templates, fingerprint, names, image, input.
//! Pure; no I/O.

use proptest::prelude::*;

use super::*;
use crate::config::DeployConfig;
use crate::naming::AgentIdentity;
use crate::pod_options::overrides::Overrides;

fn image() -> String {
    format!("registry.example.com/team/agent@sha256:{}", "a".repeat(64))
}

fn agent() -> AgentIdentity {
    AgentIdentity::new("Research Bot #1").unwrap()
}

fn base() -> DeployConfig {
    DeployConfig::new("agents", image())
}

/// [`base`] with the requests of the vectors (the defaults before 100m and 256Mi).
fn first_vector_base() -> DeployConfig {
    let mut config = base();
    config.cpu_request = "1".to_owned();
    config.memory_request = "2Gi".to_owned();
    config
}

fn fingerprint_of(config: &DeployConfig) -> String {
    config.validate(&agent()).unwrap().fingerprint()
}

/// F8: the first vector of deploy.md § Create-intent fingerprint, serialization and digest (the
/// defaults of the time it was written: requests 1 CPU and 2Gi, set here explicitly).
#[test]
fn f8_first_vector() {
    let valid = first_vector_base().validate(&agent()).unwrap();
    let expected_json = format!(
        concat!(
            r#"{{"template_version":1,"namespace":"agents","image":"registry.example.com/team/agent@sha256:{}","#,
            r#""cpu_request":"1","memory_request":"2Gi","cpu_limit":"2","memory_limit":"4Gi","#,
            r#""service_account":null,"command":null,"args":null,"restart_policy":"Never","#,
            r#""termination_grace_period_seconds":60,"#,
            r#""env_keys":["APIARY_AGENT_ID","APIARY_AGENT_NAME","APIARY_START_NONCE"],"#,
            r#""env_from_secret":"<per-attempt-secret>","workspace_mount_path":"/home/agent","#,
            r#""run_as_user":10001,"run_as_group":10001}}"#
        ),
        "a".repeat(64)
    );
    assert_eq!(valid.intent().to_json(), expected_json);
    assert_eq!(
        valid.fingerprint(),
        "26b2e7d49baf628b5f55de9996ac144c27fac0e1c85766ed2f3db5e136202c43"
    );
}

/// F8: the second vector of deploy.md § Create-intent fingerprint (command, args, one user key).
#[test]
fn f8_second_vector() {
    let mut c = first_vector_base();
    c.command = Some(vec!["agentd".into()]);
    c.args = vec!["--serve".into(), "--port=8080".into()];
    c.env.set("LOG_LEVEL", "debug");
    assert_eq!(
        fingerprint_of(&c),
        "0e5e7c53ccd0a7e5b5ecf45d93ab7f7d8465058032e1dfbaeaa900d1a3ccf0d3"
    );
}

/// F1 / F2: deterministic, 64 lowercase hex.
#[test]
fn f1_f2_deterministic_64_hex() {
    let a = fingerprint_of(&base());
    let b = fingerprint_of(&base());
    assert_eq!(a, b);
    assert_eq!(a.len(), 64);
    assert!(
        a.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
}

/// One edit of a configuration.
type Change = Box<dyn Fn(&mut DeployConfig)>;

/// F4: each single-field change alters the digest.
#[test]
fn f4_every_field_counts() {
    let original = fingerprint_of(&base());
    let changes: Vec<(&str, Change)> = vec![
        ("namespace", Box::new(|c| c.namespace = "other".into())),
        (
            "image",
            Box::new(|c| {
                c.image = format!("registry.example.com/team/agent@sha256:{}", "b".repeat(64))
            }),
        ),
        ("cpu_request", Box::new(|c| c.cpu_request = "500m".into())),
        (
            "memory_request",
            Box::new(|c| c.memory_request = "1Gi".into()),
        ),
        ("cpu_limit", Box::new(|c| c.cpu_limit = "4".into())),
        ("memory_limit", Box::new(|c| c.memory_limit = "8Gi".into())),
        (
            "service_account",
            Box::new(|c| c.service_account = Some("sa".into())),
        ),
        ("command", Box::new(|c| c.command = Some(vec!["x".into()]))),
        ("args", Box::new(|c| c.args = vec!["x".into()])),
        ("env_keys", Box::new(|c| c.env.set("EXTRA", ""))),
        (
            "workspace",
            Box::new(|c| c.workspace_mount_path = "/work".into()),
        ),
        ("run_as_user", Box::new(|c| c.run_as_user = 10002)),
        ("run_as_group", Box::new(|c| c.run_as_group = 10002)),
    ];
    for (field, change) in changes {
        let mut c = base();
        change(&mut c);
        assert_ne!(
            fingerprint_of(&c),
            original,
            "{field} did not alter the digest"
        );
    }
}

/// F4: template_version, restart_policy and grace are part of the serialized template (they are
/// constants, so the change is made on the template itself).
#[test]
fn f4_constants_count() {
    let valid = base().validate(&agent()).unwrap();
    let original = valid.intent();
    let trailing = |trailing| CreateIntent {
        trailing,
        ..original.clone()
    };
    let variants = [
        CreateIntent {
            leading: Leading {
                template_version: 2,
                ..original.leading.clone()
            },
            ..original.clone()
        },
        trailing(Trailing {
            restart_policy: "Always",
            ..original.trailing.clone()
        }),
        trailing(Trailing {
            termination_grace_period_seconds: 30,
            ..original.trailing.clone()
        }),
        trailing(Trailing {
            env_from_secret: "x",
            ..original.trailing.clone()
        }),
    ];
    for variant in variants {
        assert_ne!(variant.fingerprint(), original.fingerprint());
    }
    assert_eq!(TEMPLATE_VERSION, 1);
    assert_eq!(RESTART_POLICY, "Never");
    assert_eq!(ENV_FROM_SECRET_PLACEHOLDER, "<per-attempt-secret>");
}

/// deploy.md § Create-intent fingerprint, rule 2: the timeout is not pod shape; an env value change
/// does not count (F1 rule 1).
#[test]
fn timeout_and_env_values_do_not_count() {
    let mut a = base();
    a.env.set("K", "one");
    let mut b = base();
    b.env.set("K", "two");
    b.timeout = std::time::Duration::from_secs(60);
    assert_eq!(fingerprint_of(&a), fingerprint_of(&b));
}

/// deploy.md § Create-intent fingerprint: empty args serialize as null, exactly like no args.
#[test]
fn empty_args_are_null() {
    let valid = base().validate(&agent()).unwrap();
    assert!(valid.intent().to_json().contains(r#""args":null"#));
}

/// F5: no env value, generation or Secret name in the serialization; placeholder exactly once.
#[test]
fn f5_serialization_holds_no_secret() {
    let mut c = base();
    c.env.set("TOKEN", "VALUE-7f3a");
    let valid = c.validate(&agent()).unwrap();
    let json = valid.intent().to_json();
    assert!(!json.contains("VALUE-7f3a"));
    assert!(json.contains("TOKEN"));
    assert_eq!(json.matches("<per-attempt-secret>").count(), 1);
    // No agent name or id value either: only keys.
    assert!(!json.contains("Research Bot"));
    assert!(!json.contains(&valid.pod_name()));
    assert!(!json.contains(agent().id()));
}

/// F6: attempts differing only by generation share the fingerprint (it takes no generation).
#[test]
fn f6_generation_independent() {
    let valid = base().validate(&agent()).unwrap();
    let env_one = valid
        .env()
        .for_attempt(crate::naming::Generation::from_u32(1));
    let env_two = valid
        .env()
        .for_attempt(crate::naming::Generation::from_u32(2));
    assert_ne!(env_one, env_two);
    assert_eq!(valid.fingerprint(), valid.clone().fingerprint());
}

/// F7: a missing or malformed annotation is divergence; only string equality matches.
#[test]
fn f7_malformed_annotation_diverges() {
    let desired = fingerprint_of(&base());
    assert!(intent_matches(Some(&desired), &desired));
    assert!(!intent_matches(Some("not-a-digest"), &desired));
    assert!(!intent_matches(None, &desired));
    assert!(!intent_matches(Some(&desired.to_uppercase()), &desired));
    assert!(!intent_matches(Some(""), &desired));
}

/// deploy.md § Create-intent fingerprint: non-ASCII is raw UTF-8 and escaping is minimal.
#[test]
fn json_escaping_minimal() {
    let mut c = base();
    c.command = Some(vec!["é/\"x\"".into()]);
    let valid = c.validate(&agent()).unwrap();
    assert!(
        valid
            .intent()
            .to_json()
            .contains(r#""command":["é/\"x\""]"#)
    );
}

proptest! {
    /// F3: the order in which env keys are given is irrelevant.
    #[test]
    fn f3_env_key_order_irrelevant(
        keys in proptest::collection::vec("[A-Za-z_][A-Za-z0-9_]{0,6}", 0..8),
        seed in any::<u64>(),
    ) {
        let mut forward = base();
        for k in &keys {
            forward.env.set(k.clone(), "v");
        }
        let mut shuffled = keys.clone();
        // A deterministic permutation driven by the seed.
        let len = shuffled.len();
        if len > 1 {
            for i in 0..len {
                let j = usize::try_from(seed.rotate_left(u32::try_from(i).unwrap_or(0)) % (len as u64)).unwrap_or(0);
                shuffled.swap(i, j);
            }
        }
        let mut backward = base();
        for k in shuffled.iter().rev() {
            backward.env.set(k.clone(), "other");
        }
        prop_assert_eq!(fingerprint_of(&forward), fingerprint_of(&backward));
    }
}

/// deploy.md § Pod options: a configuration without options keeps its fingerprint (no
/// `pod_options` member, the vectors above), and each option, set alone, enters the template as
/// the last member and changes the fingerprint.
#[test]
fn each_pod_option_enters_the_fingerprint_last() {
    let plain = fingerprint_of(&base());
    let edits: [fn(&mut PodOptions); 14] = [
        |o| drop(o.node_selector.insert("pool".into(), "gpu".into())),
        |o| o.tolerations.push(Default::default()),
        |o| o.runtime_class = Some("gvisor".into()),
        |o| o.priority_class = Some("high".into()),
        |o| {
            drop(
                o.extended_resources
                    .insert("nvidia.com/gpu".into(), "1".into()),
            )
        },
        |o| o.ephemeral_storage_limit = Some("1Gi".into()),
        |o| o.image_pull_secrets.push("regcred".into()),
        |o| drop(o.labels.insert("team".into(), "ml".into())),
        |o| drop(o.annotations.insert("example.com/note".into(), "x".into())),
        |o| o.env_from_secrets.push("team-creds".into()),
        |o| {
            drop(o.env_secrets.insert(
                "TOKEN".into(),
                crate::pod_options::SecretKey {
                    secret: "team-creds".into(),
                    key: "token".into(),
                },
            ))
        },
        |o| o.overrides = Some(Overrides::parse(r#"{"spec":{"dnsPolicy":"Default"}}"#).unwrap()),
        |o| o.isolate = true,
        |o| {
            o.isolate = true;
            o.allow_egress.push(crate::pod_options::EgressRule {
                cidr: "10.0.0.0/8".into(),
                port: Some(443),
            });
        },
    ];
    let mut seen = std::collections::BTreeSet::from([plain.clone()]);
    for edit in edits {
        let mut config = base();
        edit(&mut config.pod_options);
        let valid = config.validate(&agent()).unwrap();
        let json = valid.intent().to_json();
        assert!(json.ends_with("}}"), "{json}");
        assert!(
            json.contains(r#""run_as_group":10001,"pod_options":{"#),
            "{json}"
        );
        assert!(
            seen.insert(valid.fingerprint()),
            "each option changes it: {json}"
        );
    }
}

/// `--overrides` enters the fingerprint as its canonical text: two spellings of one patch are one
/// intent, another patch is another.
#[test]
fn overrides_enter_the_fingerprint_canonically() {
    let with = |text: &str| {
        let mut config = base();
        config.pod_options.overrides = Some(Overrides::parse(text).unwrap());
        config.validate(&agent()).unwrap().fingerprint()
    };
    let one = with(r#"{"spec":{"dnsPolicy":"Default","hostname":"a"}}"#);
    assert_eq!(
        one,
        with(r#"{ "spec": { "hostname": "a",  "dnsPolicy": "Default" } }"#)
    );
    assert_ne!(
        one,
        with(r#"{"spec":{"dnsPolicy":"Default","hostname":"b"}}"#)
    );
    assert_ne!(one, fingerprint_of(&base()));
}

/// The native options never reach the buzz template's `pod_options` member (buzz-provider.md
/// § 7 vectors stay byte-identical): they serialize only when set, and are never read from the
/// buzz wire form.
#[test]
fn native_options_are_not_part_of_the_buzz_wire_form() {
    let options = PodOptions {
        setup_pending: true,
        ..PodOptions::default()
    };
    let json = serde_json::to_string(&options).unwrap();
    for native in [
        "runtime_class",
        "priority_class",
        "extended_resources",
        "image_pull_secrets",
        "labels",
        "annotations",
        "env_from_secrets",
        "env_secrets",
        "overrides",
        "isolate",
        "allow_egress",
    ] {
        assert!(!json.contains(native), "{json}");
    }
    let read: Result<PodOptions, _> = serde_json::from_str(r#"{"runtime_class":"gvisor"}"#);
    assert!(
        read.is_err(),
        "deny_unknown_fields still refuses it: {read:?}"
    );
}

/// deploy.md § Create-intent fingerprint, rule 5: the workspace claim enters the template as
/// `true` (the pod mounts the agent's claim); its size and class, the claim's own, never change
/// the fingerprint, while mounting a claim or not does.
#[test]
fn the_claims_size_and_class_are_not_the_pods_intent() {
    let with_claim = |size: &str, class: Option<&str>| {
        let mut config = base();
        config.pod_options.workspace_claim = Some(crate::pod_options::WorkspaceClaim {
            size: size.into(),
            storage_class: class.map(str::to_owned),
        });
        config.validate(&agent()).unwrap()
    };
    let small = with_claim("1Gi", None);
    assert!(
        small.intent().to_json().ends_with(r#""pod_options":{"node_selector":{},"tolerations":[],"workspace_size_limit":null,"ephemeral_storage_request":null,"ephemeral_storage_limit":null,"active_deadline_seconds":null,"setup_pending":false,"workspace_claim":true}}"#),
        "{}",
        small.intent().to_json()
    );
    assert_eq!(
        small.fingerprint(),
        with_claim("2Gi", Some("fast")).fingerprint()
    );
    assert_ne!(small.fingerprint(), fingerprint_of(&base()));
}

/// deploy.md § Naming what differs: changing one setting names exactly that setting, by its
/// flag; the settings hold no environment value, only a digest of the keys.
#[test]
fn each_setting_is_named_by_its_flag() {
    use apiary_classify::settings::{SettingsDiff, differing_settings};
    let plain = base().validate(&agent()).unwrap().intent().settings();
    assert!(plain.starts_with("cpu-limit="), "{plain}");
    type Edit = (&'static str, fn(&mut DeployConfig));
    let edits: [Edit; 12] = [
        ("image", |c| {
            c.image = format!("registry.example.com/team/agent@sha256:{}", "b".repeat(64))
        }),
        ("cpu-limit", |c| c.cpu_limit = "3".into()),
        ("command", |c| c.command = Some(vec!["agentd".into()])),
        ("arg", |c| c.args = vec!["--serve".into()]),
        ("grace-period", |c| {
            c.grace_period = apiary_classify::grace::GracePeriod::from_seconds(5);
        }),
        ("env-keys", |c| {
            c.env.set("MODE", "fast");
        }),
        ("workspace", |c| c.workspace_mount_path = "/work".into()),
        ("run-as-user", |c| c.run_as_user = 20002),
        ("node-selector", |c| {
            drop(
                c.pod_options
                    .node_selector
                    .insert("pool".into(), "gpu".into()),
            );
        }),
        ("toleration", |c| {
            c.pod_options.tolerations.push(Default::default())
        }),
        ("env-from-secret", |c| {
            c.pod_options.env_from_secrets.push("creds".into())
        }),
        ("workspace-size", |c| {
            c.pod_options.workspace_claim = Some(crate::pod_options::WorkspaceClaim {
                size: "1Gi".into(),
                storage_class: None,
            });
        }),
    ];
    for (name, edit) in edits {
        let mut config = base();
        edit(&mut config);
        let settings = config.validate(&agent()).unwrap().intent().settings();
        assert_eq!(
            differing_settings(Some(&plain), &settings),
            SettingsDiff::Named(vec![name.to_owned()]),
            "{settings}"
        );
        assert!(!settings.contains("fast"), "no value: {settings}");
    }
}

mod pinned;
