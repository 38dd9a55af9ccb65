//! The deploy pipeline's order (buzz-provider.md § 2.4, steps 1–3) and its result.

use serde_json::{Value, json};

use super::*;
use crate::entropy::FixedEntropy;
use crate::wire::AgentPayload;

const NSEC: &str = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
const IMAGE: &str = "ghcr.io/block/buzz-sprig@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn request(agent: Value, provider_config: Value) -> DeployRequest {
    DeployRequest {
        agent: serde_json::from_value::<AgentPayload>(agent).expect("payload"),
        provider_config,
    }
}

fn good_agent() -> Value {
    json!({
        "relay_url": "wss://relay.example",
        "private_key_nsec": NSEC,
        "auth_tag": "auth-tag-value",
        "launch": {"env": {"USER_KEY": "user-env-value"}}
    })
}

fn good_config() -> Value {
    json!({"namespace": "buzz-agents-test", "image": IMAGE, "context": " kind-a "})
}

fn plan(request: &DeployRequest) -> Result<DeployPlan, PlanError> {
    plan_deploy(request, &mut FixedEntropy::new([0x0a1b_2c3d]))
}

/// Step 1 before step 2: a bad config wins over a bad key.
#[test]
fn config_is_checked_before_identity() {
    let mut agent = good_agent();
    agent["private_key_nsec"] = json!("not-a-key");
    let error = plan(&request(agent, Value::Null)).unwrap_err();
    assert!(matches!(
        error,
        PlanError::Config(ConfigError::NamespaceRequired)
    ));
}

/// Step 2 before step 3: a bad key wins over a missing owner, and is a refusal.
#[test]
fn identity_is_checked_before_env() {
    let agent = json!({"relay_url": "", "private_key_nsec": "npub1xyz"});
    let error = plan(&request(agent, good_config())).unwrap_err();
    assert_eq!(
        error.to_string(),
        "private_key_nsec is not a decodable nsec1 key"
    );
}

/// Step 3: the env refusals come last (the `deploy-no-owner` fixture's text).
#[test]
fn no_owner_is_refused_after_config_and_identity() {
    let agent = json!({"relay_url": "wss://r", "private_key_nsec": NSEC});
    let error = plan(&request(agent, good_config())).unwrap_err();
    assert_eq!(
        error.to_string(),
        "deploy refused: neither auth_tag nor launch.owner_pubkey resolved — without an owner \
         the agent cannot honor !shutdown"
    );
}

/// A good request plans the buzz-bound pod in the config's namespace with the given context.
#[test]
fn good_request_plans_the_buzz_pod() {
    let planned = plan(&request(good_agent(), good_config())).expect("plan");
    assert_eq!(planned.context.as_deref(), Some("kind-a"));
    assert_eq!(planned.config.namespace(), "buzz-agents-test");
    assert_eq!(planned.config.pod_name(), "buzz-agent-7e7e9c42a91b");
    assert_eq!(
        planned.config.agent().id(),
        "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"
    );
}

/// The plan's `Debug` holds neither the nsec nor any env value.
#[test]
fn plan_debug_redacts_values() {
    let planned = plan(&request(good_agent(), good_config())).expect("plan");
    let debug = format!("{planned:?}");
    for secret in [NSEC, "auth-tag-value", "user-env-value"] {
        assert!(!debug.contains(secret), "{debug}");
    }
}
