//! End-to-end tests of the pure modules of `apiary-substrate` through their public API: input
//! (dotenv, `--env`, configuration) → built objects → observation → `apiary-classify`
//! verification. Covers O8, O9, O10, O12 over real built objects, R15's nonce rule, and V11
//! across every path an env value travels. No I/O: file contents are passed in as text.

use std::path::Path;

use apiary_classify::binding::{APIARY, Owner};
use apiary_classify::verify::{verify_pod, verify_secret};
use apiary_substrate::build::{Attempt, build_attempt};
use apiary_substrate::config::{ConfigError, DeployConfig, ValidConfig};
use apiary_substrate::dotenv::parse_dotenv;
use apiary_substrate::env::{EnvArg, EnvError};
use apiary_substrate::naming::{AgentIdentity, Generation};
use apiary_substrate::observe::{observe_pod, observe_secret};
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

const SECRET: &str = "Zq8-very-distinctive-secret-value";

fn image() -> String {
    format!("registry.example.com/team/agent@sha256:{}", "a".repeat(64))
}

fn agent() -> AgentIdentity {
    AgentIdentity::new("Research Bot #1").unwrap()
}

fn valid() -> ValidConfig {
    DeployConfig::new("agents", image())
        .validate(&agent())
        .unwrap()
}

/// What the apiserver adds on create: uid, resourceVersion, creationTimestamp.
fn stamp_pod(mut pod: Pod, uid: &str, rv: &str) -> Pod {
    pod.metadata.uid = Some(uid.into());
    pod.metadata.resource_version = Some(rv.into());
    pod.metadata.creation_timestamp = Some(Time(Timestamp::from_second(1_785_643_200).unwrap()));
    pod
}

fn stamp_secret(mut secret: Secret) -> Secret {
    secret.metadata.uid = Some("s-uid".into());
    secret.metadata.resource_version = Some("7".into());
    secret.metadata.creation_timestamp = Some(Time(Timestamp::from_second(1_785_643_100).unwrap()));
    secret
}

fn attempt() -> Attempt {
    build_attempt(&valid(), Generation::from_u32(0x0bad_cafe))
}

/// O8: a pod built by the real builder and stamped by the apiserver verifies for its agent.
#[test]
fn o8_own_built_pod_verifies() {
    let pod = stamp_pod(attempt().pod, "u-1", "100");
    let verified =
        verify_pod(&observe_pod(&pod, APIARY), &agent().owner()).expect("own pod verifies");
    assert_eq!(verified.name(), "apiary-research-bot-1-72bea12366a3");
    assert_eq!(
        (verified.fence().uid(), verified.fence().resource_version()),
        ("u-1", "100")
    );
    assert_eq!(
        verified.recorded_intent(),
        Some(valid().fingerprint().as_str())
    );
    assert!(verified.intent_matches(&valid().fingerprint()));
    assert_eq!(verified.created_at_unix(), Some(1_785_643_200));
    assert!(!verified.deletion_marked());
}

/// O8: stripped labels, binding version 999, another agent's id, a missing annotation, a missing
/// uid or resourceVersion → unverified.
#[test]
fn o8_tampered_pods_unverified() {
    let own = stamp_pod(attempt().pod, "u-1", "100");
    let id = agent().id().to_owned();
    let mut cases: Vec<(&str, Pod)> = Vec::new();
    let mut p = own.clone();
    p.metadata.labels = None;
    cases.push(("labels stripped", p));
    let mut p = own.clone();
    p.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("apiary.dev/binding-version".into(), "999".into());
    cases.push(("binding version 999", p));
    let mut p = own.clone();
    p.metadata.annotations.as_mut().unwrap().insert(
        "apiary.dev/agent-id".into(),
        AgentIdentity::new("other").unwrap().id().into(),
    );
    cases.push(("another agent's id", p));
    let mut p = own.clone();
    p.metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove("apiary.dev/agent-id");
    cases.push(("annotation missing", p));
    let mut p = own.clone();
    p.metadata.uid = None;
    cases.push(("uid missing", p));
    let mut p = own.clone();
    p.metadata.resource_version = None;
    cases.push(("resourceVersion missing", p));
    for (what, pod) in cases {
        assert!(
            verify_pod(&observe_pod(&pod, APIARY), &Owner::apiary(id.clone())).is_none(),
            "{what}"
        );
    }
    // The built pod of another agent does not verify for this one.
    let other = AgentIdentity::new("other").unwrap();
    let theirs = DeployConfig::new("agents", image())
        .validate(&other)
        .unwrap();
    let pod = stamp_pod(
        build_attempt(&theirs, Generation::from_u32(1)).pod,
        "u",
        "1",
    );
    assert!(verify_pod(&observe_pod(&pod, APIARY), &Owner::apiary(id.clone())).is_none());
    assert!(verify_pod(&observe_pod(&pod, APIARY), &other.owner()).is_some());
}

/// O9: a deletion-marked own pod still carries its fence and reads as deletion-marked.
#[test]
fn o9_deletion_marked_fence_carried() {
    let mut pod = stamp_pod(attempt().pod, "u-9", "900");
    pod.metadata.deletion_timestamp = Some(Time(Timestamp::from_second(1_785_643_260).unwrap()));
    let verified = verify_pod(&observe_pod(&pod, APIARY), &agent().owner()).unwrap();
    assert!(verified.deletion_marked());
    assert_eq!(verified.fence().uid(), "u-9");
    assert_eq!(verified.fence().resource_version(), "900");
}

/// O10: an own pod without the create-intent annotation records no intent.
#[test]
fn o10_no_intent_recorded() {
    let mut pod = stamp_pod(attempt().pod, "u", "1");
    pod.metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove("apiary.dev/create-intent");
    let verified = verify_pod(&observe_pod(&pod, APIARY), &agent().owner()).unwrap();
    assert_eq!(verified.recorded_intent(), None);
    assert!(!verified.intent_matches(&valid().fingerprint()));
}

/// O12: own Secret verifies; another agent's id, no labels, binding version 999 do not.
#[test]
fn o12_secret_verification() {
    let own = stamp_secret(attempt().secret);
    let id = agent().id().to_owned();
    let verified = verify_secret(&observe_secret(&own, APIARY), &Owner::apiary(id.clone()))
        .expect("own Secret verifies");
    assert_eq!(
        verified.name(),
        Some("apiary-research-bot-1-72bea12366a3-0badcafe")
    );
    assert_eq!(verified.uid(), Some("s-uid"));
    assert_eq!(verified.created_at_unix(), Some(1_785_643_100));
    let mut other = own.clone();
    other
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert("apiary.dev/agent-id".into(), "f".repeat(64));
    assert!(verify_secret(&observe_secret(&other, APIARY), &Owner::apiary(id.clone())).is_none());
    let mut bare = own.clone();
    bare.metadata.labels = None;
    assert!(verify_secret(&observe_secret(&bare, APIARY), &Owner::apiary(id.clone())).is_none());
    let mut v999 = own;
    v999.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("apiary.dev/binding-version".into(), "999".into());
    assert!(verify_secret(&observe_secret(&v999, APIARY), &Owner::apiary(id.clone())).is_none());
}

/// R15 support: the pod references exactly this attempt's Secret, whose name ends with its
/// `APIARY_START_NONCE` value.
#[test]
fn r15_secret_name_ends_with_nonce() {
    let attempt = attempt();
    let pod = stamp_pod(attempt.pod.clone(), "u", "1");
    let facts = observe_pod(&pod, APIARY).facts;
    assert_eq!(
        facts.env_from_secret.as_deref(),
        Some(attempt.secret_name.as_str())
    );
    let nonce = attempt.secret.string_data.as_ref().unwrap()["APIARY_START_NONCE"].clone();
    assert_eq!(nonce, "0badcafe");
    assert!(attempt.secret_name.ends_with(&format!("-{nonce}")));
}

/// deploy.md § Environment: env files in order, then `--env` in order; a later entry replaces an
/// earlier one; the result reaches the Secret and only the Secret.
#[test]
fn env_sources_later_wins_into_secret() {
    let first = parse_dotenv(Path::new("a.env"), "export A=from-a\nB='from-a'\n").unwrap();
    let second = parse_dotenv(Path::new("b.env"), "B=\"from-b\"\nC=from-b # note\n").unwrap();
    let mut config = DeployConfig::new("agents", image());
    config.env.extend(first.iter());
    config.env.extend(second.iter());
    for arg in ["C=from-flag", "D=x=y", "APIARY_AGENT_NAME=spoof"] {
        match EnvArg::parse(arg) {
            EnvArg::Assign { key, value } => config.env.set(key, value),
            EnvArg::Inherit { .. } => unreachable!("every test argument has '='"),
        }
    }
    let valid = config.validate(&agent()).unwrap();
    assert_eq!(valid.removed_env_keys(), ["APIARY_AGENT_NAME"]);
    let data = build_attempt(&valid, Generation::from_u32(3))
        .secret
        .string_data
        .unwrap();
    assert_eq!(data["A"], "from-a");
    assert_eq!(data["B"], "from-b");
    assert_eq!(data["C"], "from-flag");
    assert_eq!(data["D"], "x=y");
    assert_eq!(data["APIARY_AGENT_NAME"], "Research Bot #1");
    assert_eq!(data.len(), 7);
}

/// V11: a distinctive value travels from an env file into the Secret and appears in no error,
/// no Debug output, no pod, no annotation and no fingerprint serialization.
#[test]
fn v11_value_appears_only_in_secret_payload() {
    let file = format!("TOKEN=\"{SECRET}\"\n");
    let env = parse_dotenv(Path::new("secrets.env"), &file).unwrap();
    let mut config = DeployConfig::new("agents", image());
    config.env.extend(env.iter());
    config.env.set("APIARY_START_NONCE", SECRET);
    let valid = config.validate(&agent()).unwrap();
    let attempt = build_attempt(&valid, Generation::from_u32(1));
    let pod_json = serde_json::to_string(&attempt.pod).unwrap();
    let mut shown = vec![
        format!("{env:?}"),
        format!("{config:?}"),
        format!("{config:#?}"),
        format!("{valid:?}"),
        format!("{attempt:?}"),
        format!("{:?}", attempt.pod),
        pod_json,
        valid.intent().to_json(),
        valid.fingerprint(),
        format!("{:?}", observe_pod(&attempt.pod, APIARY)),
        format!("{:?}", observe_secret(&attempt.secret, APIARY)),
        format!("{:?}", EnvArg::parse(&format!("TOKEN={SECRET}"))),
    ];
    // Every refusal path that sees the value.
    let bad_line =
        parse_dotenv(Path::new("secrets.env"), &format!("TOKEN=\"{SECRET}")).unwrap_err();
    shown.push(bad_line.to_string());
    shown.push(format!("{bad_line:?}"));
    let mut bad_key = config.clone();
    bad_key.env.set("BAD-KEY", SECRET);
    let err = bad_key.validate(&agent()).unwrap_err();
    assert!(matches!(err, ConfigError::Env(EnvError::InvalidKey { .. })));
    shown.push(err.to_string());
    shown.push(format!("{err:?}"));
    let mut big = config.clone();
    big.env.set("BIG", SECRET.repeat(40_000));
    let err = big.validate(&agent()).unwrap_err();
    assert!(matches!(err, ConfigError::Env(EnvError::TooLarge { .. })));
    shown.push(err.to_string());
    for text in &shown {
        assert!(!text.contains(SECRET), "value leaked into: {text}");
    }
    // The one place it belongs.
    assert_eq!(attempt.secret.string_data.unwrap()["TOKEN"], SECRET);
}
