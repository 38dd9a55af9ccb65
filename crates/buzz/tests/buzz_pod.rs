//! The buzz binding at the substrate's pure layer (buzz-provider.md §§ 4.2, 6, 7, 16.3): the
//! buzz identity's names, labels and selector; the § 7 fingerprint vector and a second worked
//! example computed by hand; each pod option's effect on the fingerprint; every field of the
//! § 6 Secret and Pod templates; and `Debug` redaction of a buzz configuration.
//!
//! Pure: builds values through the public API and never contacts a cluster.

use std::collections::BTreeMap;

use apiary_buzz::binding::{BUZZ, identity};
use apiary_buzz::pod::{BuzzPod, PodError, PodOptionsError, valid_config};
use apiary_classify::binding::APIARY;
use apiary_classify::verify::{verify_pod, verify_secret};
use apiary_substrate::build::build_attempt;
use apiary_substrate::config::{PodOptions, ValidConfig};
use apiary_substrate::naming::{AgentIdentity, Generation};
use apiary_substrate::observe::{observe_pod, observe_secret};
use k8s_openapi::api::core::v1::Toleration;
use serde_json::json;

#[path = "common/original_backend.rs"]
mod original_backend;

use original_backend::Attempt;

/// The pubkey of the spec's fixture key (buzz-provider.md § 2.5).
const PUBKEY: &str = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e";
const NSEC: &str = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
const TOKEN: &str = "sprt_tok_5b1f0c9e77d24a8a";

fn agent() -> AgentIdentity {
    identity(PUBKEY).expect("the fixture pubkey is 64 lowercase hex")
}

fn image(fill: char) -> String {
    format!(
        "ghcr.io/block/buzz-sprig@sha256:{}",
        fill.to_string().repeat(64)
    )
}

/// The original backend's attempt `0a1b2c3d` in `agents` on `image`, the one the builder tests
/// compare apiary's objects with.
fn original_attempt(image: &str) -> Attempt {
    Attempt::new("agents", PUBKEY, "0a1b2c3d", image)
}

/// A pod request with the spec's default resources and `env`.
fn pod(namespace: &str, env: &[(&str, &str)]) -> BuzzPod {
    BuzzPod {
        namespace: namespace.to_owned(),
        image: image('a'),
        cpu_request: "1".to_owned(),
        memory_request: "2Gi".to_owned(),
        cpu_limit: "2".to_owned(),
        memory_limit: "4Gi".to_owned(),
        service_account: None,
        pod_options: PodOptions::default(),
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

/// A realistic resolved buzz environment (tiers 1–3 of buzz-provider.md § 5.1; one user key).
fn realistic_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("BUZZ_RELAY_URL", "wss://relay.example.com"),
        ("BUZZ_PRIVATE_KEY", NSEC),
        ("NOSTR_PRIVATE_KEY", NSEC),
        ("BUZZ_AUTH_TAG", TOKEN),
        ("BUZZ_ACP_AGENT_COMMAND", "claude-code-acp"),
        ("BUZZ_ACP_MCP_COMMAND", "buzz-dev-mcp"),
        ("BUZZ_ACP_EXIT_AFTER_INACTIVITY", "3600"),
        ("BUZZ_ACP_RESPOND_TO", "owner-only"),
        ("BUZZ_MANAGED_AGENT_START_NONCE", "00000000"),
        ("ANTHROPIC_API_KEY", "sk-ant-distinctive-value-1234"),
    ]
}

fn valid(pod: BuzzPod) -> ValidConfig {
    valid_config(&agent(), pod).expect("a valid buzz pod")
}

/// buzz-provider.md § 4.2: names, labels, annotations and selector of the fixture key, as literals.
#[test]
fn buzz_identity_names_labels_and_selector_are_the_spec_literals() {
    let agent = agent();
    assert_eq!(agent.binding(), BUZZ);
    assert_eq!(agent.id(), PUBKEY);
    assert_eq!(agent.pod_name(), "buzz-agent-7e7e9c42a91b");
    assert_eq!(
        agent.secret_name(Generation::from_u32(0x0a1b_2c3d)),
        "buzz-agent-7e7e9c42a91b-0a1b2c3d"
    );
    assert_eq!(agent.label_value(), "7e7e9c42a91bfef19fa929e5fda1b72e");
    assert_eq!(
        agent.labels(),
        BTreeMap::from([
            (
                "app.kubernetes.io/managed-by".to_owned(),
                "buzz-backend-kubernetes".to_owned()
            ),
            ("buzz.block.xyz/binding-version".to_owned(), "1".to_owned()),
            (
                "buzz.block.xyz/agent-pubkey".to_owned(),
                "7e7e9c42a91bfef19fa929e5fda1b72e".to_owned()
            ),
        ])
    );
    assert_eq!(
        agent.annotations(),
        BTreeMap::from([(
            "buzz.block.xyz/agent-pubkey-full".to_owned(),
            PUBKEY.to_owned()
        )])
    );
    assert_eq!(
        agent.selector(),
        "buzz.block.xyz/agent-pubkey=7e7e9c42a91bfef19fa929e5fda1b72e,\
         app.kubernetes.io/managed-by=buzz-backend-kubernetes"
    );
    assert_eq!(agent.owner().binding, BUZZ);
    assert_eq!(agent.owner().agent_id, PUBKEY);
}

/// buzz-provider.md § 4.1: only exactly 64 lowercase hex characters are a pubkey.
#[test]
fn buzz_identity_refuses_anything_but_64_lowercase_hex() {
    for bad in [
        "",
        &PUBKEY[..63],
        &format!("{PUBKEY}0"),
        &PUBKEY.to_uppercase(),
        &format!("{}g", &PUBKEY[..63]),
        NSEC,
    ] {
        assert!(identity(bad).is_err(), "{bad:?}");
    }
    // The apiary identity of the same text is another binding with other names.
    let apiary = AgentIdentity::new(PUBKEY).unwrap();
    assert_eq!(apiary.binding(), APIARY);
    assert_ne!(apiary.pod_name(), agent().pod_name());
}

/// buzz-provider.md § 7: the spec's test vector, canonical bytes and digest.
#[test]
fn buzz_fingerprint_matches_the_spec_vector() {
    let config = valid(pod(
        "buzz-agents-test",
        &[("BUZZ_RELAY_URL", "wss://relay")],
    ));
    let expected = format!(
        concat!(
            r#"{{"template_version":1,"namespace":"buzz-agents-test","#,
            r#""image":"ghcr.io/block/buzz-sprig@sha256:{}","#,
            r#""cpu_request":"1","memory_request":"2Gi","cpu_limit":"2","memory_limit":"4Gi","#,
            r#""service_account":null,"restart_policy":"Never","#,
            r#""termination_grace_period_seconds":60,"env_keys":["BUZZ_RELAY_URL"],"#,
            r#""env_from_secret":"<per-attempt-secret>","workspace_mount_path":"/home/agent","#,
            r#""run_as_user":10001,"run_as_group":10001}}"#
        ),
        "a".repeat(64)
    );
    assert_eq!(config.intent_json(), expected);
    assert_eq!(
        config.fingerprint(),
        "8ad2592a0cf5416dc57fe986f6fb7113443444f76d364e74391cdbbcdb8f6a81"
    );
}

/// buzz-provider.md § 7, a second worked example computed by hand (python3 hashlib over the bytes below): a
/// realistic resolved env (ten keys, sorted bytewise, the nonce key among them), a service
/// account and non-default requests. Values never reach the bytes.
#[test]
fn buzz_fingerprint_second_worked_example() {
    let mut request = pod("agents", &realistic_env());
    request.image = image('b');
    request.cpu_request = "500m".to_owned();
    request.memory_request = "1Gi".to_owned();
    request.service_account = Some("buzz-agent".to_owned());
    let config = valid(request);
    let expected = format!(
        concat!(
            r#"{{"template_version":1,"namespace":"agents","#,
            r#""image":"ghcr.io/block/buzz-sprig@sha256:{}","#,
            r#""cpu_request":"500m","memory_request":"1Gi","cpu_limit":"2","memory_limit":"4Gi","#,
            r#""service_account":"buzz-agent","restart_policy":"Never","#,
            r#""termination_grace_period_seconds":60,"#,
            r#""env_keys":["ANTHROPIC_API_KEY","BUZZ_ACP_AGENT_COMMAND","#,
            r#""BUZZ_ACP_EXIT_AFTER_INACTIVITY","BUZZ_ACP_MCP_COMMAND","BUZZ_ACP_RESPOND_TO","#,
            r#""BUZZ_AUTH_TAG","BUZZ_MANAGED_AGENT_START_NONCE","BUZZ_PRIVATE_KEY","#,
            r#""BUZZ_RELAY_URL","NOSTR_PRIVATE_KEY"],"#,
            r#""env_from_secret":"<per-attempt-secret>","workspace_mount_path":"/home/agent","#,
            r#""run_as_user":10001,"run_as_group":10001}}"#
        ),
        "b".repeat(64)
    );
    assert_eq!(config.intent_json(), expected);
    assert_eq!(
        config.fingerprint(),
        "17cc0606dce9ee3483a531f38b374b9fe55a70ab1cbd34f3630775843cc8358f"
    );
    assert!(!config.intent_json().contains("sk-ant"));
    assert!(!config.intent_json().contains("nsec1"));
}

/// buzz-provider.md § 7: values never matter, keys do (adding or dropping a key changes the fingerprint).
#[test]
fn buzz_fingerprint_reads_keys_not_values() {
    let base = valid(pod("agents", &realistic_env())).fingerprint();
    let mut other_values = realistic_env();
    for entry in &mut other_values {
        entry.1 = "changed";
    }
    assert_eq!(valid(pod("agents", &other_values)).fingerprint(), base);
    let mut dropped = realistic_env();
    dropped.retain(|(k, _)| *k != "BUZZ_AUTH_TAG");
    assert_ne!(valid(pod("agents", &dropped)).fingerprint(), base);
    let mut added = realistic_env();
    added.push(("BUZZ_ACP_AGENT_ARGS", "acp"));
    assert_ne!(valid(pod("agents", &added)).fingerprint(), base);
}

fn each_option() -> Vec<(&'static str, PodOptions)> {
    let d = PodOptions::default;
    vec![
        (
            "node_selector",
            PodOptions {
                node_selector: BTreeMap::from([("pool".to_owned(), "agents".to_owned())]),
                ..d()
            },
        ),
        (
            "tolerations",
            PodOptions {
                tolerations: vec![Toleration {
                    key: Some("dedicated".to_owned()),
                    operator: Some("Equal".to_owned()),
                    value: Some("agents".to_owned()),
                    effect: Some("NoSchedule".to_owned()),
                    ..Toleration::default()
                }],
                ..d()
            },
        ),
        (
            "workspace_size_limit",
            PodOptions {
                workspace_size_limit: Some("10Gi".to_owned()),
                ..d()
            },
        ),
        (
            "ephemeral_storage_request",
            PodOptions {
                ephemeral_storage_request: Some("1Gi".to_owned()),
                ..d()
            },
        ),
        (
            "ephemeral_storage_limit",
            PodOptions {
                ephemeral_storage_limit: Some("20Gi".to_owned()),
                ..d()
            },
        ),
        (
            "active_deadline_seconds",
            PodOptions {
                active_deadline_seconds: Some(86_400),
                ..d()
            },
        ),
        (
            "setup_pending",
            PodOptions {
                setup_pending: true,
                ..d()
            },
        ),
    ]
}

/// buzz-provider.md § 16.3 `each_optional_pod_control_changes_intent`: default options leave the baseline bytes
/// (no `pod_options` member); each single option changes the fingerprint and appears as the
/// last member.
#[test]
fn each_optional_pod_control_changes_intent() {
    let base = valid(pod("agents", &realistic_env()));
    assert!(!base.intent_json().contains("pod_options"));
    let mut seen = vec![base.fingerprint()];
    for (name, options) in each_option() {
        let mut request = pod("agents", &realistic_env());
        request.pod_options = options;
        let config = valid(request);
        let json = config.intent_json();
        assert!(
            json.contains(r#""run_as_group":10001,"pod_options":{"#),
            "{name}: pod_options is the last member: {json}"
        );
        assert!(json.contains(name), "{name}");
        assert!(
            !seen.contains(&config.fingerprint()),
            "{name} changes the fingerprint"
        );
        seen.push(config.fingerprint());
    }
}

/// buzz-provider.md § 16.3 validation: a non-positive deadline and a blank storage quantity are refused with the
/// spec's messages; unknown option fields are refused by deserialization.
#[test]
fn refuses_invalid_pod_options() {
    for deadline in [0, -1] {
        let mut request = pod("agents", &realistic_env());
        request.pod_options.active_deadline_seconds = Some(deadline);
        let err = valid_config(&agent(), request).unwrap_err();
        assert_eq!(
            err,
            PodError::PodOptions(PodOptionsError::NonPositiveDeadline)
        );
        assert_eq!(
            err.to_string(),
            "provider_config.pod_options.active_deadline_seconds must be positive"
        );
    }
    for blank in ["", "  "] {
        let mut request = pod("agents", &realistic_env());
        request.pod_options.workspace_size_limit = Some(blank.to_owned());
        let err = valid_config(&agent(), request).unwrap_err();
        assert_eq!(
            err.to_string(),
            "provider_config.pod_options storage quantities must not be empty"
        );
    }
    let unknown: Result<PodOptions, _> = serde_json::from_value(json!({"host_network": true}));
    assert!(unknown.is_err());
    let parsed: PodOptions =
        serde_json::from_value(json!({"setup_pending": true, "node_selector": {"a": "b"}}))
            .unwrap();
    assert!(parsed.setup_pending);
    assert_eq!(parsed.node_selector["a"], "b");
    assert!(PodOptions::default().is_default());
}

/// `valid_config` takes only a buzz-bound identity.
#[test]
fn buzz_config_needs_a_buzz_identity() {
    let apiary = AgentIdentity::new("research").unwrap();
    assert!(matches!(
        valid_config(&apiary, pod("agents", &realistic_env())),
        Err(PodError::WrongBinding { .. })
    ));
}

/// buzz-provider.md § 6.1: every field of the Secret of one attempt; the nonce key is restamped to the
/// generation whatever the given value.
#[test]
fn buzz_secret_has_every_field_of_the_spec() {
    let config = valid(pod("agents", &realistic_env()));
    let generation = Generation::from_u32(0x0a1b_2c3d);
    let attempt = build_attempt(&config, generation);
    let secret = serde_json::to_value(&attempt.secret).unwrap();
    let mut expected_data: serde_json::Map<String, serde_json::Value> = realistic_env()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), json!(v)))
        .collect();
    expected_data.insert("BUZZ_MANAGED_AGENT_START_NONCE".into(), json!("0a1b2c3d"));
    let image = image('a');
    let original = original_attempt(&image);
    assert_eq!(secret, original.secret(expected_data.into()));
    assert_eq!(
        secret["metadata"]["labels"]["buzz.block.xyz/agent-pubkey"],
        "7e7e9c42a91bfef19fa929e5fda1b72e"
    );
    assert_eq!(attempt.secret_name, "buzz-agent-7e7e9c42a91b-0a1b2c3d");
}

/// buzz-provider.md § 6.2: every field of the baseline pod, as one JSON value (no command, no args, no
/// nodeSelector, tolerations, activeDeadlineSeconds, env, sizeLimit or ephemeral storage).
#[test]
fn buzz_pod_has_every_field_of_the_spec() {
    let config = valid(pod("agents", &realistic_env()));
    let generation = Generation::from_u32(0x0a1b_2c3d);
    let pod = serde_json::to_value(build_attempt(&config, generation).pod).unwrap();
    let image = image('a');
    let original = original_attempt(&image);
    assert_eq!(pod, original.pod(&config.fingerprint()));
    // The derived names and label, pinned as the literals the spec's fixture key gives.
    assert_eq!(pod["metadata"]["name"], "buzz-agent-7e7e9c42a91b");
    assert_eq!(
        pod["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
        "buzz-agent-7e7e9c42a91b-0a1b2c3d"
    );
    assert_eq!(
        pod["metadata"]["labels"]["buzz.block.xyz/agent-pubkey"],
        "7e7e9c42a91bfef19fa929e5fda1b72e"
    );
}

/// buzz-provider.md § 6.2: a named service account is set, and the token is still not mounted; an expiry asked
/// of a buzz configuration never becomes an annotation.
#[test]
fn buzz_pod_service_account_and_no_expiry() {
    let mut request = pod("agents", &realistic_env());
    request.service_account = Some("buzz-agent".to_owned());
    let config = valid(request).expiring_at(1_900_000_000);
    let pod = build_attempt(&config, Generation::from_u32(1)).pod;
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(spec.service_account_name.as_deref(), Some("buzz-agent"));
    assert_eq!(spec.automount_service_account_token, Some(false));
    let annotations = pod.metadata.annotations.unwrap();
    assert_eq!(annotations.len(), 3, "{annotations:?}");
    assert!(annotations.keys().all(|k| k.starts_with("buzz.block.xyz/")));
}

/// buzz-provider.md § 16.3 `optional_placement_storage_and_lifetime_reach_pod_and_intent` and
/// `setup_uid_is_opt_in_and_comes_from_the_api_not_the_secret`: every option reaches its field.
#[test]
fn optional_placement_storage_and_lifetime_reach_pod() {
    let mut request = pod("agents", &realistic_env());
    request.pod_options = PodOptions {
        node_selector: BTreeMap::from([("pool".to_owned(), "agents".to_owned())]),
        tolerations: vec![Toleration {
            key: Some("dedicated".to_owned()),
            operator: Some("Exists".to_owned()),
            ..Toleration::default()
        }],
        workspace_size_limit: Some("10Gi".to_owned()),
        ephemeral_storage_request: Some("1Gi".to_owned()),
        ephemeral_storage_limit: Some("20Gi".to_owned()),
        active_deadline_seconds: Some(86_400),
        setup_pending: true,
        ..PodOptions::default()
    };
    // A spoofed UID in the Secret is overridden by the explicit env entry.
    request
        .env
        .insert("BUZZ_PILOT_POD_UID".to_owned(), "spoofed".to_owned());
    let config = valid(request);
    let built = serde_json::to_value(build_attempt(&config, Generation::from_u32(1)).pod).unwrap();
    let spec = &built["spec"];
    assert_eq!(spec["nodeSelector"], json!({"pool": "agents"}));
    assert_eq!(
        spec["tolerations"],
        json!([{"key": "dedicated", "operator": "Exists"}])
    );
    assert_eq!(spec["activeDeadlineSeconds"], json!(86_400));
    assert_eq!(
        spec["volumes"],
        json!([{"name": "workspace", "emptyDir": {"sizeLimit": "10Gi"}}])
    );
    let container = &spec["containers"][0];
    assert_eq!(
        container["resources"],
        json!({
            "requests": {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "1Gi"},
            "limits": {"cpu": "2", "memory": "4Gi", "ephemeral-storage": "20Gi"},
        })
    );
    assert_eq!(
        container["env"],
        json!([{"name": "BUZZ_PILOT_POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}])
    );
    assert!(container.get("command").is_none() && container.get("args").is_none());
    let without = valid(pod("agents", &realistic_env()));
    let plain = serde_json::to_value(build_attempt(&without, Generation::from_u32(1)).pod).unwrap();
    assert!(plain["spec"]["containers"][0].get("env").is_none());
}

/// buzz-provider.md § 4.3: the built objects verify under the buzz owner and never under apiary's, and apiary's
/// built objects never under buzz's.
#[test]
fn built_buzz_objects_verify_only_under_the_buzz_binding() {
    let config = valid(pod("agents", &realistic_env()));
    let mut attempt = build_attempt(&config, Generation::from_u32(7));
    // As the apiserver returns them: with the uid and resourceVersion a fence needs.
    attempt.pod.metadata.uid = Some("u-pod".to_owned());
    attempt.pod.metadata.resource_version = Some("5".to_owned());
    attempt.secret.metadata.uid = Some("u-secret".to_owned());
    let owner = agent().owner();
    assert!(verify_pod(&observe_pod(&attempt.pod, BUZZ), &owner).is_some());
    assert!(verify_secret(&observe_secret(&attempt.secret, BUZZ), &owner).is_some());
    let as_apiary = apiary_classify::binding::Owner::apiary(PUBKEY);
    assert!(verify_pod(&observe_pod(&attempt.pod, APIARY), &as_apiary).is_none());
    assert!(verify_pod(&observe_pod(&attempt.pod, BUZZ), &as_apiary).is_none());
    assert!(verify_secret(&observe_secret(&attempt.secret, APIARY), &as_apiary).is_none());
}

/// Redaction: `Debug` of a `BuzzPod`, its `ValidConfig`, its `AgentEnv` and its attempt never
/// shows an env value (an nsec, a `sprt_tok_` token, an API key).
#[test]
fn buzz_debug_never_shows_an_env_value() {
    let request = pod("agents", &realistic_env());
    let shown_request = format!("{request:?}");
    let config = valid(request);
    let attempt = build_attempt(&config, Generation::from_u32(3));
    for shown in [
        shown_request,
        format!("{config:?}"),
        format!("{:?}", config.env()),
        format!("{attempt:?}"),
        format!("{config:#?}"),
    ] {
        for secret in [NSEC, "nsec1", TOKEN, "sprt_tok_", "sk-ant-distinctive"] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
        assert!(shown.contains("BUZZ_PRIVATE_KEY") || shown.contains("Attempt"));
    }
}

/// buzz-provider.md § 3.2: resource quantities are not validated locally: `valid_config`
/// accepts nonsense quantities and the built pod carries them verbatim (the API server judges).
#[test]
fn buzz_resource_quantities_reach_the_pod_verbatim() {
    let mut request = pod("agents", &realistic_env());
    request.cpu_request = "lots".to_owned();
    request.memory_request = "2 gigs".to_owned();
    request.cpu_limit = "-3".to_owned();
    request.memory_limit = "4Zz".to_owned();
    let config = valid(request);
    let built = serde_json::to_value(build_attempt(&config, Generation::from_u32(1)).pod).unwrap();
    assert_eq!(
        built["spec"]["containers"][0]["resources"],
        json!({
            "requests": {"cpu": "lots", "memory": "2 gigs"},
            "limits": {"cpu": "-3", "memory": "4Zz"},
        })
    );
}

/// The observed form of a freshly built buzz pod, as the apiserver returns it (uid and
/// resourceVersion set).
fn served_pod() -> k8s_openapi::api::core::v1::Pod {
    let config = valid(pod("agents", &realistic_env()));
    let mut built = build_attempt(&config, Generation::from_u32(3)).pod;
    built.metadata.uid = Some("u-pod".to_owned());
    built.metadata.resource_version = Some("9".to_owned());
    built
}

/// buzz-provider.md § 4.3 under the buzz binding: every broken mark makes the pod not ours
/// (managed-by, binding version `999`, the full-pubkey annotation, name, uid, resourceVersion).
#[test]
fn buzz_pod_with_any_broken_mark_is_not_ours() {
    type Mutation = fn(&mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta);
    let mutations: [(&str, Mutation); 8] = [
        ("managed-by apiary", |m| {
            m.labels.as_mut().unwrap().insert(
                "app.kubernetes.io/managed-by".to_owned(),
                "apiary".to_owned(),
            );
        }),
        ("managed-by missing", |m| {
            m.labels
                .as_mut()
                .unwrap()
                .remove("app.kubernetes.io/managed-by");
        }),
        ("binding 999", |m| {
            m.labels.as_mut().unwrap().insert(
                "buzz.block.xyz/binding-version".to_owned(),
                "999".to_owned(),
            );
        }),
        ("binding missing", |m| {
            m.labels
                .as_mut()
                .unwrap()
                .remove("buzz.block.xyz/binding-version");
        }),
        ("pubkey-full of another key", |m| {
            m.annotations.as_mut().unwrap().insert(
                "buzz.block.xyz/agent-pubkey-full".to_owned(),
                "0".repeat(64),
            );
        }),
        ("pubkey-full missing", |m| {
            m.annotations
                .as_mut()
                .unwrap()
                .remove("buzz.block.xyz/agent-pubkey-full");
        }),
        ("uid missing", |m| m.uid = None),
        ("resourceVersion missing", |m| m.resource_version = None),
    ];
    let owner = agent().owner();
    assert!(verify_pod(&observe_pod(&served_pod(), BUZZ), &owner).is_some());
    for (what, mutate) in mutations {
        let mut broken = served_pod();
        mutate(&mut broken.metadata);
        assert!(
            verify_pod(&observe_pod(&broken, BUZZ), &owner).is_none(),
            "{what}"
        );
    }
}

/// buzz-provider.md § 4.3: the `agent-pubkey` label is used by the list selector only and is not
/// re-checked by verification; the full-pubkey annotation decides.
#[test]
fn buzz_agent_label_is_not_rechecked_by_verification() {
    let mut relabelled = served_pod();
    relabelled.metadata.labels.as_mut().unwrap().insert(
        "buzz.block.xyz/agent-pubkey".to_owned(),
        "ffffffffffffffffffffffffffffffff".to_owned(),
    );
    assert!(verify_pod(&observe_pod(&relabelled, BUZZ), &agent().owner()).is_some());
}

/// buzz-provider.md § 14: a buzz configuration deploys with the 600 s operation deadline and the
/// 2 s poll interval.
#[test]
fn buzz_deploy_deadline_is_600_s_and_poll_2_s() {
    let config = valid(pod("agents", &realistic_env()));
    assert_eq!(config.timeout(), std::time::Duration::from_secs(600));
    let options = apiary_substrate::driver::DeployOptions::for_config(&config);
    assert_eq!(options.deadline, std::time::Duration::from_secs(600));
    assert_eq!(options.poll, std::time::Duration::from_secs(2));
}
