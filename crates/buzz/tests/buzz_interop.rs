//! Interop of the buzz binding with objects the original `buzz-backend-kubernetes` creates
//! (buzz-provider.md §§ 4.3, 6, 7): a pod and Secrets written by hand in this file from the spec's
//! templates — serde_json literals, never apiary's builders — are verified as ours, no-op'd (the
//! same fingerprint), and collected by GC under the buzz binding; and in one namespace with
//! identical-looking ids, apiary's binding never touches buzz objects nor buzz's apiary objects.
//! Runs the real driver over the in-memory fake; asserts on its call log.

// The substrate's conformance fixtures (apiary's agent, configurations, the executor), shared
// with this binding's interop suite rather than copied.
#[allow(
    dead_code,
    reason = "each conformance test binary uses a different subset"
)]
#[path = "../../substrate/tests/conformance_support/mod.rs"]
mod conformance_support;
#[path = "common/original_backend.rs"]
mod original_backend;

use std::time::Duration;

use apiary_buzz::binding::identity;
use apiary_buzz::pod::{BuzzPod, valid_config};
use apiary_substrate::config::{PodOptions, ValidConfig};
use apiary_substrate::driver::{DeployError, DeployOptions, Deployed, deploy, gc};
use apiary_substrate::fake::{FakeCluster, ServerClock};
use apiary_substrate::naming::AgentIdentity;
use conformance_support::{Shape, attempt, fence_of, run, shaped};
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use original_backend::Attempt;
use serde_json::json;

/// The namespace of the spec's buzz-provider.md § 7 vector.
const NS: &str = "buzz-agents-test";
/// The fixture key's pubkey (buzz-provider.md § 2.5).
const PUBKEY: &str = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e";
/// The fingerprint of the spec's buzz-provider.md § 7 vector, as the original computes it (taken from the spec,
/// not computed here).
const SPEC_INTENT: &str = "8ad2592a0cf5416dc57fe986f6fb7113443444f76d364e74391cdbbcdb8f6a81";

fn image() -> String {
    format!("ghcr.io/block/buzz-sprig@sha256:{}", "a".repeat(64))
}

fn buzz_agent(pubkey: &str) -> AgentIdentity {
    identity(pubkey).expect("64 lowercase hex")
}

/// The configuration of the buzz-provider.md § 7 vector: default resources, no service account, one env key.
fn buzz_config(pubkey: &str) -> ValidConfig {
    let pod = BuzzPod {
        namespace: NS.to_owned(),
        image: image(),
        cpu_request: "1".to_owned(),
        memory_request: "2Gi".to_owned(),
        cpu_limit: "2".to_owned(),
        memory_limit: "4Gi".to_owned(),
        service_account: None,
        pod_options: PodOptions::default(),
        env: [("BUZZ_RELAY_URL".to_owned(), "wss://relay".to_owned())].into(),
    };
    valid_config(&buzz_agent(pubkey), pod).expect("valid buzz pod")
}

/// The original backend's attempt `generation` for `pubkey` in the vector's namespace.
fn original(pubkey: &str, generation: &str) -> Attempt {
    Attempt::new(NS, pubkey, generation, &image())
}

/// The original's Secret of attempt `generation` (the vector's one env key and the start
/// nonce), created `age` before the fake's now.
fn original_secret(fake: &FakeCluster, pubkey: &str, generation: &str, age: Duration) -> Secret {
    let data = json!({
        "BUZZ_RELAY_URL": "wss://relay",
        "BUZZ_MANAGED_AGENT_START_NONCE": generation,
    });
    let mut secret: Secret = serde_json::from_value(original(pubkey, generation).secret(data))
        .expect("a Secret literal");
    let created = fake
        .model()
        .now()
        .checked_sub(k8s_openapi::jiff::SignedDuration::try_from(age).unwrap())
        .unwrap();
    secret.metadata.creation_timestamp = Some(Time(created));
    secret
}

/// Put the original's Secret of attempt `generation`, `age` old, in the fake.
fn insert_original_secret(fake: &FakeCluster, pubkey: &str, generation: &str, age: Duration) {
    fake.insert_secret(original_secret(fake, pubkey, generation, age))
        .unwrap();
}

/// The original's pod of attempt `generation`, recording `intent`.
fn original_pod(pubkey: &str, generation: &str, intent: &str) -> Pod {
    serde_json::from_value(original(pubkey, generation).pod(intent)).expect("a Pod literal")
}

/// Seed the original's attempt `generation`: its Secret, then `pod` in `shape`.
fn seed(fake: &FakeCluster, pubkey: &str, generation: &str, pod: Pod, shape: &Shape) -> Pod {
    insert_original_secret(fake, pubkey, generation, Duration::ZERO);
    fake.insert_pod(shaped(fake, pod, shape)).unwrap()
}

/// Seed the original's attempt `generation` recording the vector's intent, its pod in `shape`.
fn seed_original(fake: &FakeCluster, pubkey: &str, generation: &str, shape: &Shape) -> Pod {
    let pod = original_pod(pubkey, generation, SPEC_INTENT);
    seed(fake, pubkey, generation, pod, shape)
}

fn deploy_buzz(fake: &FakeCluster, config: &ValidConfig) -> Result<Deployed, DeployError> {
    run(deploy(fake, config, &DeployOptions::for_config(config)))
}

/// A deploy's answer for the vector's pubkey: its pod, started, with this request's intent.
fn deployed() -> Result<Deployed, DeployError> {
    Ok(Deployed {
        pod: "buzz-agent-7e7e9c42a91b".to_owned(),
        intent_matches: true,
        workspace: None,
        recorded_settings: None,
    })
}

/// Deploy `config` over the wedged `stored` pod and assert that it was replaced: exactly one
/// delete, fenced by the stored pod's uid and resourceVersion, and one create recording the
/// vector's intent. `case` names the scenario in a failure.
fn assert_replaced(fake: &FakeCluster, config: &ValidConfig, stored: &Pod, case: &str) {
    assert_eq!(deploy_buzz(fake, config), deployed(), "{case}");
    let deletes = fake.pod_deletes();
    assert_eq!(deletes.len(), 1, "{case}");
    let (uid, rv) = fence_of(stored);
    assert_eq!(deletes[0].1.uid(), uid, "{case}");
    assert_eq!(deletes[0].1.resource_version(), rv, "{case}");
    let created = fake.creates_of_pods();
    assert_eq!(created.len(), 1, "{case}");
    let annotations = created[0].metadata.annotations.as_ref().unwrap();
    assert_eq!(
        annotations["buzz.block.xyz/create-intent"], SPEC_INTENT,
        "{case}"
    );
}

/// buzz-provider.md § 7: the fingerprint apiary computes for the vector's request is the original's.
#[test]
fn buzz_fingerprint_equals_the_originals_for_the_spec_vector() {
    assert_eq!(buzz_config(PUBKEY).fingerprint(), SPEC_INTENT);
}

/// A running pod the original created is verified and adopted as a no-op: the only write is the
/// namespace ensure, and its recorded intent matches.
#[test]
fn original_running_pod_is_a_no_op() {
    let fake = FakeCluster::new(NS);
    seed_original(&fake, PUBKEY, "0a1b2c3d", &Shape::Running);
    assert_eq!(deploy_buzz(&fake, &buzz_config(PUBKEY)), deployed());
    assert_eq!(
        fake.mutation_summaries(),
        [format!("ensure_namespace {NS}")]
    );
}

/// A wedged (never-started, unschedulable) pod the original created with the same intent is
/// never replaced; with a different recorded intent it is replaced by a buzz-shaped pod.
#[test]
fn original_wedged_pod_is_replaced_exactly_when_the_intent_differs() {
    let fake = FakeCluster::new(NS);
    seed_original(&fake, PUBKEY, "0a1b2c3d", &Shape::Unschedulable);
    let config = buzz_config(PUBKEY);
    let same = deploy_buzz(&fake, &config).unwrap_err();
    assert!(
        matches!(same, DeployError::DeadlineExceeded { .. }),
        "{same}"
    );
    assert!(fake.pod_deletes().is_empty(), "same intent: never replaced");

    let fake = FakeCluster::new(NS);
    let stale = original_pod(PUBKEY, "0a1b2c3d", &"0".repeat(64));
    let stored = seed(&fake, PUBKEY, "0a1b2c3d", stale, &Shape::Unschedulable);
    assert_replaced(&fake, &config, &stored, "another intent");
}

/// GC under the buzz binding collects the original's terminated pod, its Secret and an orphan
/// Secret of an earlier attempt past the age gate, and keeps a young orphan.
#[test]
fn original_objects_are_collected_by_buzz_gc() {
    let fake = FakeCluster::new(NS);
    fake.set_server_clock(ServerClock::Model);
    let dead = seed_original(&fake, PUBKEY, "0a1b2c3d", &Shape::Terminated(1));
    insert_original_secret(&fake, PUBKEY, "11111111", Duration::from_secs(1300));
    insert_original_secret(&fake, PUBKEY, "22222222", Duration::from_secs(60));
    let report = run(gc(&fake, &buzz_agent(PUBKEY), false)).unwrap();
    assert_eq!(report.pods, ["buzz-agent-7e7e9c42a91b"]);
    let mut secrets = report.secrets.clone();
    secrets.sort();
    assert_eq!(
        secrets,
        [
            "buzz-agent-7e7e9c42a91b-0a1b2c3d",
            "buzz-agent-7e7e9c42a91b-11111111"
        ]
    );
    assert!(report.failures.is_empty());
    let (uid, rv) = fence_of(&dead);
    assert_eq!(fake.pod_deletes()[0].1.uid(), uid);
    assert_eq!(fake.pod_deletes()[0].1.resource_version(), rv);
    assert!(fake.secret("buzz-agent-7e7e9c42a91b-22222222").is_some());
}

/// One namespace, one id under both bindings (the buzz pubkey is the apiary agent's id): each
/// binding's GC collects only its own terminated pod and Secrets, and never the other's.
#[test]
fn bindings_never_collect_each_others_objects() {
    let fake = FakeCluster::new(NS);
    fake.set_server_clock(ServerClock::Model);
    let apiary = AgentIdentity::new("Research Bot #1").unwrap();
    let same_id = apiary.id().to_owned();
    let buzz = buzz_agent(&same_id);
    // apiary's own terminated attempt and an old orphan of it, built by apiary's builders.
    let apiary_config = conformance_support::config_with(|c| c.namespace = NS.to_owned());
    let (pod, secret, apiary_secret) = attempt(&apiary_config, 1);
    fake.insert_secret(secret).unwrap();
    fake.insert_pod(shaped(&fake, pod, &Shape::Terminated(1)))
        .unwrap();
    let (_, mut old, apiary_orphan) = attempt(&apiary_config, 2);
    old.metadata.creation_timestamp =
        original_secret(&fake, &same_id, "0", Duration::from_secs(1300))
            .metadata
            .creation_timestamp;
    fake.insert_secret(old).unwrap();
    // The original's terminated attempt and old orphan for the same id.
    seed_original(&fake, &same_id, "0a1b2c3d", &Shape::Terminated(1));
    insert_original_secret(&fake, &same_id, "11111111", Duration::from_secs(1300));
    let buzz_pod = buzz.pod_name();

    let report = run(gc(&fake, &buzz, false)).unwrap();
    assert_eq!(report.pods, std::slice::from_ref(&buzz_pod));
    assert!(report.secrets.iter().all(|s| s.starts_with("buzz-agent-")));
    assert_eq!(report.secrets.len(), 2);
    assert!(fake.pod(&apiary.pod_name()).is_some());
    assert!(fake.secret(&apiary_secret).is_some());
    assert!(fake.secret(&apiary_orphan).is_some());

    fake.clear_calls();
    let report = run(gc(&fake, &apiary, false)).unwrap();
    assert_eq!(report.pods, [apiary.pod_name()]);
    let mut secrets = report.secrets.clone();
    secrets.sort();
    let mut expected = vec![apiary_secret, apiary_orphan];
    expected.sort();
    assert_eq!(secrets, expected);
    assert!(fake.pod_deletes().iter().all(|(name, _)| *name != buzz_pod));
}

/// A pod under the other binding's name carrying the other binding's markers for the same id is
/// foreign to each deploy: refused before any write, never deleted.
#[test]
fn each_binding_refuses_the_others_object_under_its_name() {
    let apiary = AgentIdentity::new("Research Bot #1").unwrap();
    let same_id = apiary.id().to_owned();

    // An apiary-marked pod sitting at the buzz pod name.
    let fake = FakeCluster::new(NS);
    let apiary_config = conformance_support::config_with(|c| c.namespace = NS.to_owned());
    let (mut pod, _, _) = attempt(&apiary_config, 1);
    pod.metadata.name = Some(buzz_agent(&same_id).pod_name());
    fake.insert_pod(shaped(&fake, pod, &Shape::Running))
        .unwrap();
    let error = deploy_buzz(&fake, &buzz_config(&same_id)).unwrap_err();
    assert!(matches!(error, DeployError::ForeignPod { .. }), "{error}");
    assert_eq!(
        fake.mutation_summaries(),
        [format!("ensure_namespace {NS}")]
    );

    // A buzz-marked pod sitting at the apiary pod name.
    let fake = FakeCluster::new(NS);
    let mut pod = original_pod(&same_id, "0a1b2c3d", SPEC_INTENT);
    pod.metadata.name = Some(apiary.pod_name());
    fake.insert_pod(shaped(&fake, pod, &Shape::Running))
        .unwrap();
    let error = run(deploy(
        &fake,
        &apiary_config,
        &DeployOptions::for_config(&apiary_config),
    ))
    .unwrap_err();
    assert!(matches!(error, DeployError::ForeignPod { .. }), "{error}");
    assert_eq!(
        fake.mutation_summaries(),
        [format!("ensure_namespace {NS}")]
    );
}

/// buzz-provider.md § 7: a wedged pod whose `create-intent` annotation is malformed (not 64
/// lowercase hex, or empty) or missing counts as divergent and is replaced, exactly once.
#[test]
fn malformed_or_missing_create_intent_is_divergence() {
    let config = buzz_config(PUBKEY);
    for intent in [Some("not-a-fingerprint"), Some(""), None] {
        let fake = FakeCluster::new(NS);
        let mut pod = original_pod(PUBKEY, "0a1b2c3d", intent.unwrap_or(""));
        if intent.is_none() {
            let annotations = pod.metadata.annotations.as_mut().unwrap();
            annotations.remove("buzz.block.xyz/create-intent");
            assert!(annotations.contains_key("buzz.block.xyz/agent-pubkey-full"));
        }
        let stored = seed(&fake, PUBKEY, "0a1b2c3d", pod, &Shape::Unschedulable);
        assert_replaced(&fake, &config, &stored, &format!("{intent:?}"));
    }
}

/// buzz-provider.md § 14 under the buzz binding: the orphan Secret age gate is inclusive at
/// 1200 s (collected) and keeps an orphan of 1199 s.
#[test]
fn orphan_secret_age_gate_is_inclusive_at_1200_seconds() {
    let fake = FakeCluster::new(NS);
    fake.set_server_clock(ServerClock::Model);
    insert_original_secret(&fake, PUBKEY, "12001200", Duration::from_secs(1200));
    insert_original_secret(&fake, PUBKEY, "11991199", Duration::from_secs(1199));
    let report = run(gc(&fake, &buzz_agent(PUBKEY), false)).unwrap();
    assert!(report.pods.is_empty(), "{:?}", report.pods);
    assert_eq!(report.secrets, ["buzz-agent-7e7e9c42a91b-12001200"]);
    assert!(report.failures.is_empty());
    assert!(fake.secret("buzz-agent-7e7e9c42a91b-12001200").is_none());
    assert!(fake.secret("buzz-agent-7e7e9c42a91b-11991199").is_some());
}
