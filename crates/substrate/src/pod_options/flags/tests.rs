//! The pod-option flags' syntax and certain rules (deploy.md § Pod options).

use super::*;
use crate::pod_options::EgressRule;

/// `kubectl taint`'s four forms: value and effect (Equal), value only (Equal, every effect),
/// effect only (Exists), key only (Exists, every effect).
#[test]
fn toleration_forms_follow_kubectl_taint() {
    let t = parse_toleration("nvidia.com/gpu=present:NoSchedule").expect("valid");
    assert_eq!(t.key.as_deref(), Some("nvidia.com/gpu"));
    assert_eq!(t.operator.as_deref(), Some("Equal"));
    assert_eq!(t.value.as_deref(), Some("present"));
    assert_eq!(t.effect.as_deref(), Some("NoSchedule"));
    let t = parse_toleration("dedicated=agents").expect("valid");
    assert_eq!(
        (t.operator.as_deref(), t.value.as_deref(), t.effect),
        (Some("Equal"), Some("agents"), None)
    );
    let t = parse_toleration("gpu:NoExecute").expect("valid");
    assert_eq!(
        (t.operator.as_deref(), t.value, t.effect.as_deref()),
        (Some("Exists"), None, Some("NoExecute"))
    );
    let t = parse_toleration("gpu").expect("valid");
    assert_eq!(
        (t.operator.as_deref(), t.value, t.effect),
        (Some("Exists"), None, None)
    );
    assert_eq!(t.toleration_seconds, None);
}

/// Every effect of [`EFFECTS`] is accepted; anything else is refused naming the flag and the
/// three effects.
#[test]
fn toleration_effects_are_the_three_taint_effects() {
    for effect in EFFECTS {
        assert!(parse_toleration(&format!("k:{effect}")).is_ok(), "{effect}");
    }
    for bad in ["k:noschedule", "k:", "k=v:Always"] {
        let error = parse_toleration(bad).expect_err(bad).to_string();
        assert!(error.starts_with("--toleration "), "{error}");
        assert!(
            error.contains("NoSchedule, PreferNoSchedule, NoExecute"),
            "{error}"
        );
    }
}

/// A toleration's key and value follow label syntax.
#[test]
fn toleration_key_and_value_are_checked() {
    for bad in ["=v:NoSchedule", "bad key", "k=bad value", "-k"] {
        assert!(parse_toleration(bad).is_err(), "{bad}");
    }
}

/// `KEY=VALUE`: the first `=` splits; keys are qualified names (prefix a DNS subdomain, name
/// 1–63 alphanumerics with `-_.` inside); label and selector values up to 63 such characters or
/// empty; annotation values are anything.
#[test]
fn key_value_syntax() {
    assert_eq!(
        parse_key_value(Flag::Label, "team=ml-infra").expect("valid"),
        ("team".to_owned(), "ml-infra".to_owned())
    );
    assert_eq!(
        parse_key_value(Flag::NodeSelector, "example.com/pool=gpu=a").map_err(|e| e.flag),
        Err(Flag::NodeSelector)
    );
    assert!(parse_key_value(Flag::Label, "example.com/team=").is_ok());
    assert!(parse_key_value(Flag::Annotation, "example.com/note=any text: at all=yes").is_ok());
    for bad in [
        "team",
        "=v",
        "Example.com/x=v",
        "a/b/c=v",
        "x_=v",
        &format!("{}=v", "k".repeat(64)),
    ] {
        let error = parse_key_value(Flag::Label, bad).expect_err(bad);
        assert_eq!(error.flag, Flag::Label);
        assert!(error.to_string().starts_with("--label "), "{error}");
    }
    assert!(parse_key_value(Flag::Label, &format!("k={}", "v".repeat(64))).is_err());
    assert!(parse_key_value(Flag::Label, &format!("k={}", "v".repeat(63))).is_ok());
}

/// The keys apiary owns are refused for `--label` and `--annotation`, naming the key.
#[test]
fn keys_apiary_owns_are_refused() {
    for key in [
        "apiary.dev/agent",
        "apiary.dev/anything",
        "buzz.block.xyz/agent-pubkey",
        "app.kubernetes.io/managed-by",
    ] {
        for flag in [Flag::Label, Flag::Annotation] {
            let error = parse_key_value(flag, &format!("{key}=x"))
                .expect_err(key)
                .to_string();
            assert!(
                error.contains(&format!("the key {key} is apiary's own")),
                "{error}"
            );
        }
    }
    assert!(parse_key_value(Flag::Label, "app.kubernetes.io/name=x").is_ok());
    assert!(parse_key_value(Flag::NodeSelector, "apiary.dev/pool=x").is_ok());
}

/// `--resource`: an extended resource's name and a quantity; cpu, memory and ephemeral-storage
/// have flags of their own and are refused, naming them.
#[test]
fn resource_names_exclude_the_base_resources() {
    assert_eq!(
        parse_resource("nvidia.com/gpu=1").expect("valid"),
        ("nvidia.com/gpu".to_owned(), "1".to_owned())
    );
    for base in ["cpu", "memory", "ephemeral-storage"] {
        let error = parse_resource(&format!("{base}=1"))
            .expect_err(base)
            .to_string();
        assert!(error.contains(&format!("--{base}-request")), "{error}");
    }
    assert!(parse_resource("nvidia.com/gpu").is_err());
    assert!(parse_resource("nvidia.com/gpu= ").is_err());
}

/// Object names (runtime class, priority class, pull Secret) are DNS subdomains.
#[test]
fn object_names_are_dns_subdomains() {
    let mut options = PodOptions {
        runtime_class: Some("gvisor".to_owned()),
        priority_class: Some("agents.high".to_owned()),
        image_pull_secrets: vec!["regcred".to_owned()],
        ..PodOptions::default()
    };
    assert_eq!(options.validate_native(), Ok(()));
    options.runtime_class = Some("gVisor".to_owned());
    assert_eq!(
        options.validate_native().map_err(|e| e.flag),
        Err(Flag::RuntimeClass)
    );
    options.runtime_class = None;
    options.priority_class = Some("-high".to_owned());
    assert_eq!(
        options.validate_native().map_err(|e| e.flag),
        Err(Flag::PriorityClass)
    );
    options.priority_class = None;
    options.image_pull_secrets.push("reg cred".to_owned());
    assert_eq!(
        options.validate_native().map_err(|e| e.flag),
        Err(Flag::ImagePullSecret)
    );
}

/// `validate_native` checks maps set directly (not through the parsers) by the same rules,
/// blank ephemeral-storage quantities included.
#[test]
fn validate_native_checks_every_field() {
    let with = |edit: fn(&mut PodOptions)| {
        let mut options = PodOptions::default();
        edit(&mut options);
        options.validate_native().map_err(|e| e.flag)
    };
    assert_eq!(with(|_| {}), Ok(()));
    assert_eq!(
        with(|o| {
            o.labels.insert("apiary.dev/x".into(), "y".into());
        }),
        Err(Flag::Label)
    );
    assert_eq!(
        with(|o| {
            o.annotations.insert("bad key".into(), "y".into());
        }),
        Err(Flag::Annotation)
    );
    assert_eq!(
        with(|o| {
            o.node_selector.insert("k".into(), "bad value".into());
        }),
        Err(Flag::NodeSelector)
    );
    assert_eq!(
        with(|o| {
            o.extended_resources.insert("memory".into(), "1".into());
        }),
        Err(Flag::Resource)
    );
    assert_eq!(
        with(|o| o.ephemeral_storage_request = Some(" ".into())),
        Err(Flag::EphemeralStorageRequest)
    );
    assert_eq!(
        with(|o| o.ephemeral_storage_limit = Some(String::new())),
        Err(Flag::EphemeralStorageLimit)
    );
}

/// Repeated flags: a later entry for the same key wins.
#[test]
fn a_later_entry_wins() {
    let map = key_values(Flag::Label, &["team=a".to_owned(), "team=b".to_owned()]).expect("valid");
    assert_eq!(map.get("team").map(String::as_str), Some("b"));
    let map = key_values(Flag::Resource, &["nvidia.com/gpu=1".to_owned()]).expect("valid");
    assert_eq!(map.get("nvidia.com/gpu").map(String::as_str), Some("1"));
}

/// A `422 Invalid` names a field; the field a pod option sets names its flag (so the refusal
/// says which flag to fix); cpu, memory and fields no option sets name none.
#[test]
fn an_invalid_field_names_the_flag_that_set_it() {
    let cases = [
        (
            "spec.runtimeClassName: Invalid value: \"x\"",
            Some(Flag::RuntimeClass),
        ),
        (
            "spec.priorityClassName: Invalid value",
            Some(Flag::PriorityClass),
        ),
        ("spec.nodeSelector: Invalid value", Some(Flag::NodeSelector)),
        (
            "spec.tolerations[0].effect: Unsupported value",
            Some(Flag::Toleration),
        ),
        (
            "spec.imagePullSecrets[0].name: Required value",
            Some(Flag::ImagePullSecret),
        ),
        ("metadata.labels: Invalid value", Some(Flag::Label)),
        ("metadata.annotations: Too long", Some(Flag::Annotation)),
        (
            "spec.containers[0].resources.requests[example.com/widget]: Invalid value",
            Some(Flag::Resource),
        ),
        (
            "spec.containers[0].resources.limits[ephemeral-storage]: Invalid value",
            Some(Flag::EphemeralStorageLimit),
        ),
        (
            "spec.containers[0].resources.requests[ephemeral-storage]: Invalid value",
            Some(Flag::EphemeralStorageRequest),
        ),
        (
            "spec.containers[0].resources.requests[cpu]: Invalid value",
            None,
        ),
        ("spec.containers[0].image: Required value", None),
    ];
    for (tail, flag) in cases {
        let message = format!("Pod \"apiary-x-1\" is invalid: {tail}");
        assert_eq!(
            flag_for_invalid_field(&message).map(|(_, f)| f),
            flag,
            "{message}"
        );
    }
    let (field, _) = flag_for_invalid_field(
        "Pod \"p\" is invalid: [spec.containers[0].image: Required value, spec.runtimeClassName: Invalid value: \"X\"]",
    )
    .expect("the second field");
    assert_eq!(field, "spec.runtimeClassName");
}

/// Quantities follow the apiserver's grammar (it refuses anything else with a `400` while
/// decoding, before validation could name the field): a number and a suffix.
#[test]
fn quantities_follow_the_apiserver_grammar() {
    for good in ["1", "500m", "1Gi", "2.5", "1e3", "+1", "0.5Ki", "1E-3"] {
        assert!(is_quantity(good), "{good}");
    }
    for bad in ["", " ", "lots", "1 Gi", "Gi", ".", "1Gx", "1e3.5"] {
        assert!(!is_quantity(bad), "{bad}");
    }
    assert!(parse_resource("example.com/widget=lots").is_err());
}

/// `--resource` entries go through the resource rules, not the plain `KEY=VALUE` ones: `cpu=1`
/// is a valid label-style pair but not an extended resource (kills the mutant that drops the
/// `Flag::Resource` arm of `key_values`).
#[test]
fn resource_entries_use_the_resource_rules() {
    assert!(key_values(Flag::Label, &["cpu=1".to_owned()]).is_ok());
    let error = key_values(Flag::Resource, &["cpu=1".to_owned()]).expect_err("cpu is refused");
    assert_eq!(error.flag, Flag::Resource);
    assert!(key_values(Flag::Resource, &["example.com/widget=lots".to_owned()]).is_err());
}

/// `--allow-egress CIDR[:PORT]`: IPv4 and IPv6 blocks with a prefix length in range, an
/// optional TCP port 1-65535 written plainly; every other form is refused naming the flag.
#[test]
fn egress_rules_parse_cidr_and_port() {
    let rule = |cidr: &str, port: Option<u16>| EgressRule {
        cidr: cidr.to_owned(),
        port,
    };
    for (text, expected) in [
        ("10.0.0.0/8", rule("10.0.0.0/8", None)),
        ("203.0.113.7/32:443", rule("203.0.113.7/32", Some(443))),
        ("0.0.0.0/0:65535", rule("0.0.0.0/0", Some(65535))),
        ("2001:db8::/32", rule("2001:db8::/32", None)),
        ("2001:db8::/128:1", rule("2001:db8::/128", Some(1))),
    ] {
        assert_eq!(parse_egress(text), Ok(expected), "{text}");
    }
    for (text, needle) in [
        ("10.0.0.0", "prefix length"),
        ("10.0.0.0/33", "from 0 to 32"),
        ("2001:db8::/129", "from 0 to 128"),
        ("10.0.0.0/", "prefix length"),
        ("10.0.0.0/+8", "prefix length"),
        ("10.0.0/8", "not an IPv4 or IPv6 address"),
        ("example.com/8", "not an IPv4 or IPv6 address"),
        ("10.0.0.0/8:0", "from 1 to 65535"),
        ("10.0.0.0/8:65536", "from 1 to 65535"),
        ("10.0.0.0/8:0443", "from 1 to 65535"),
        ("10.0.0.0/8:+443", "from 1 to 65535"),
        ("10.0.0.0/8:", "from 1 to 65535"),
    ] {
        let error = parse_egress(text).unwrap_err();
        assert_eq!(error.flag, Flag::AllowEgress, "{text}");
        assert!(error.to_string().contains(needle), "{text}: {error}");
        assert!(error.to_string().starts_with("--allow-egress"), "{error}");
    }
}

/// An allow-list needs `--isolate`; with it, it validates.
#[test]
fn an_allow_list_needs_isolate() {
    let mut options = PodOptions {
        allow_egress: vec![EgressRule {
            cidr: "10.0.0.0/8".into(),
            port: None,
        }],
        ..PodOptions::default()
    };
    let error = options.validate_native().unwrap_err();
    assert_eq!(error.flag, Flag::AllowEgress);
    assert!(error.problem.contains("add --isolate"), "{error}");
    options.isolate = true;
    assert_eq!(options.validate_native(), Ok(()));
}

/// `--env-secret VAR=SECRET/KEY`: a POSIX variable that is not apiary's own, a Secret name that
/// is a DNS subdomain, a key of 1-253 letters, digits, '-', '_' or '.'.
#[test]
fn env_secret_references_are_checked() {
    let (var, source) = parse_env_secret("OPENAI_API_KEY=team-creds/openai.key-1_x").unwrap();
    assert_eq!(var, "OPENAI_API_KEY");
    assert_eq!(source.secret, "team-creds");
    assert_eq!(source.key, "openai.key-1_x");
    let long_key = format!("V=s/{}", "k".repeat(253));
    assert!(parse_env_secret(&long_key).is_ok());
    for (text, needle) in [
        ("TOKEN", "expected VAR=SECRET/KEY"),
        ("TOKEN=creds", "expected VAR=SECRET/KEY"),
        ("1TOKEN=creds/k", "not a POSIX name"),
        ("TO-KEN=creds/k", "not a POSIX name"),
        ("APIARY_AGENT_ID=creds/k", "set by apiary itself"),
        ("APIARY_START_NONCE=creds/k", "set by apiary itself"),
        ("BUZZ_PILOT_POD_UID=creds/k", "set by apiary itself"),
        ("TOKEN=Creds/k", "not a valid object name"),
        ("TOKEN=creds/", "the key"),
        ("TOKEN=creds/a b", "the key"),
        ("TOKEN=creds/a:b", "the key"),
        (&format!("V=s/{}", "k".repeat(254)), "the key"),
    ] {
        let error = parse_env_secret(text).unwrap_err();
        assert_eq!(error.flag, Flag::EnvSecret, "{text}");
        assert!(error.to_string().contains(needle), "{text}: {error}");
    }
    let mut options = PodOptions::default();
    options.env_secrets.insert(
        "1BAD".into(),
        crate::pod_options::SecretKey {
            secret: "creds".into(),
            key: "k".into(),
        },
    );
    assert_eq!(options.validate_native().unwrap_err().flag, Flag::EnvSecret);
    let options = PodOptions {
        env_from_secrets: vec!["Bad_Name".into()],
        ..PodOptions::default()
    };
    assert_eq!(
        options.validate_native().unwrap_err().flag,
        Flag::EnvFromSecret
    );
}

/// The Secrets checked before a deploy writes: `--env-from-secret` ones, then those of
/// `--env-secret`, each once.
#[test]
fn referenced_secrets_are_listed_once_in_order() {
    let mut options = PodOptions {
        env_from_secrets: vec!["b".into(), "a".into()],
        ..PodOptions::default()
    };
    for (var, secret) in [("X", "a"), ("Y", "c"), ("Z", "c")] {
        options.env_secrets.insert(
            var.into(),
            crate::pod_options::SecretKey {
                secret: secret.into(),
                key: "k".into(),
            },
        );
    }
    assert_eq!(options.referenced_secrets(), ["b", "a", "c"]);
    assert!(PodOptions::default().referenced_secrets().is_empty());
}

fn with_claim(size: &str, class: Option<&str>) -> PodOptions {
    PodOptions {
        workspace_claim: Some(WorkspaceClaim {
            size: size.to_owned(),
            storage_class: class.map(str::to_owned),
        }),
        ..PodOptions::default()
    }
}

/// deploy.md § Persistent workspace: a positive quantity and a DNS-subdomain class.
#[test]
fn workspace_size_and_class_are_checked() {
    for size in ["1", "10Gi", "500M", "1.5Gi", "1e9", "1k"] {
        assert_eq!(
            with_claim(size, Some("fast-ssd")).validate_native(),
            Ok(()),
            "{size}"
        );
    }
    for size in ["", "ten", "-1Gi", "10GB", "Gi"] {
        let refused = with_claim(size, None).validate_native().expect_err(size);
        assert_eq!(refused.flag, Flag::WorkspaceSize, "{size}");
        assert!(
            refused.problem.contains("not a Kubernetes quantity"),
            "{refused}"
        );
    }
    for size in ["0", "0Gi", "500m"] {
        let refused = with_claim(size, None).validate_native().expect_err(size);
        assert!(refused.problem.contains("at least one byte"), "{refused}");
    }
    let refused = with_claim("1Gi", Some("Fast_SSD"))
        .validate_native()
        .expect_err("class");
    assert_eq!(refused.flag, Flag::StorageClass);
    assert_eq!(
        refused.to_string().split(':').next(),
        Some("--storage-class \"Fast_SSD\"")
    );
}
