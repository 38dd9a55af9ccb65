//! The environment rules of buzz-provider.md § 5 and § 16.1, one test per rule.

use serde_json::{Value, json};

use super::*;

const NSEC: &str = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
const INPUTS: EnvInputs<'static> = EnvInputs {
    generation: "0a1b2c3d",
    inactivity_seconds: 3600,
};

fn agent(value: Value) -> AgentPayload {
    let mut base = json!({"relay_url": " wss://relay.example ", "private_key_nsec": NSEC});
    if let (Some(base), Some(extra)) = (base.as_object_mut(), value.as_object()) {
        base.extend(extra.clone());
    }
    serde_json::from_value(base).expect("payload")
}

fn build(value: Value) -> Result<EnvMap, EnvError> {
    build_env(&agent(value), &INPUTS)
}

fn keys(env: &EnvMap) -> Vec<&str> {
    env.keys().map(String::as_str).collect()
}

/// The full desktop launch of the `deploy-full-launch` fixture: every tier-3 key, the policy
/// and user tiers, nothing else.
#[test]
fn full_launch_builds_every_tier() {
    let a = "a".repeat(64);
    let b = "b".repeat(64);
    let env = build(json!({
        "respond_to": "allowlist",
        "respond_to_allowlist": [a, b],
        "launch": {
            "command": "goose",
            "args": ["acp"],
            "env": {"GOOSE_MODEL": "m", "GOOSE_PROVIDER": "p", "USER_KEY": "u"},
            "policy_env": {
                "BUZZ_ACP_AGENTS": "10", "BUZZ_ACP_DISPLAY_NAME": "d", "BUZZ_ACP_LAZY_POOL": "true",
                "BUZZ_ACP_MODEL": "x", "BUZZ_ACP_RELAY_OBSERVER": "true",
                "BUZZ_ACP_SESSION_TITLE": "t", "GOOSE_MODE": "auto"
            },
            "owner_pubkey": a
        }
    }))
    .unwrap();
    let expected = json!({
        "BUZZ_ACP_AGENTS": "10",
        "BUZZ_ACP_AGENT_ARGS": "acp",
        "BUZZ_ACP_AGENT_COMMAND": "goose",
        "BUZZ_ACP_AGENT_OWNER": a,
        "BUZZ_ACP_DISPLAY_NAME": "d",
        "BUZZ_ACP_EXIT_AFTER_INACTIVITY": "3600",
        "BUZZ_ACP_LAZY_POOL": "true",
        "BUZZ_ACP_MCP_COMMAND": "buzz-dev-mcp",
        "BUZZ_ACP_MODEL": "x",
        "BUZZ_ACP_RELAY_OBSERVER": "true",
        "BUZZ_ACP_RESPOND_TO": "allowlist",
        "BUZZ_ACP_RESPOND_TO_ALLOWLIST": format!("{a},{b}"),
        "BUZZ_ACP_SESSION_TITLE": "t",
        "BUZZ_MANAGED_AGENT_START_NONCE": "0a1b2c3d",
        "BUZZ_PRIVATE_KEY": NSEC,
        "BUZZ_RELAY_URL": "wss://relay.example",
        "GOOSE_MODE": "auto",
        "GOOSE_MODEL": "m",
        "GOOSE_PROVIDER": "p",
        "NOSTR_PRIVATE_KEY": NSEC,
        "USER_KEY": "u"
    });
    assert_eq!(serde_json::to_value(&env).unwrap(), expected);
}

/// Tier 2 wins over tier 1 for non-reserved keys: the documented hazard of buzz-provider.md § 5.3 (a stale
/// `BUZZ_ACP_MODEL` in `launch.env` overrides the canonical policy value).
#[test]
fn user_tier_overrides_policy_tier_hazard() {
    let env = build(json!({
        "auth_tag": "t",
        "launch": {
            "policy_env": {"BUZZ_ACP_MODEL": "canonical", "ANTHROPIC_MODEL": "canonical"},
            "env": {"BUZZ_ACP_MODEL": "stale", "ANTHROPIC_MODEL": "stale"}
        }
    }))
    .unwrap();
    assert_eq!(env["BUZZ_ACP_MODEL"], "stale");
    assert_eq!(env["ANTHROPIC_MODEL"], "stale");
}

/// `env_vars` is used only when `launch` is absent, and never re-merged on top of it.
#[test]
fn legacy_env_vars_only_without_launch() {
    let without = build(json!({"auth_tag": "t", "env_vars": {"LEGACY": "1"}})).unwrap();
    assert_eq!(without["LEGACY"], "1");
    let with = build(json!({
        "auth_tag": "t",
        "env_vars": {"LEGACY": "1"},
        "launch": {"env": {"NEW": "2"}}
    }))
    .unwrap();
    assert!(!with.contains_key("LEGACY"));
    assert_eq!(with["NEW"], "2");
}

/// Lower tiers cannot spoof authoritative keys: each is removed before tier 3 writes, so one
/// tier 3 has no value for is absent (including buzz-provider.md § 16.1's two additions).
#[test]
fn authoritative_keys_are_cleared_before_tier_three() {
    let spoofed: serde_json::Map<String, Value> = AUTHORITATIVE_KEYS
        .iter()
        .map(|key| ((*key).to_owned(), json!("spoofed")))
        .collect();
    let env = build(json!({
        "auth_tag": "t",
        "launch": {"policy_env": spoofed.clone(), "env": spoofed}
    }))
    .unwrap();
    for key in [
        "BUZZ_ACP_AGENT_OWNER",
        "BUZZ_ACP_AGENT_COMMAND",
        "BUZZ_ACP_AGENT_ARGS",
        "BUZZ_ACP_RESPOND_TO",
        "BUZZ_ACP_RESPOND_TO_ALLOWLIST",
        "BUZZ_ACP_MCP_SERVERS_FILE",
        "BUZZ_ACP_AGENT_ARGS_JSON",
    ] {
        assert!(!env.contains_key(key), "{key}");
    }
    assert!(env.values().all(|value| value != "spoofed"), "{env:?}");
    assert_eq!(env["BUZZ_AUTH_TAG"], "t");
    assert_eq!(env["BUZZ_ACP_MCP_COMMAND"], "buzz-dev-mcp");
}

/// buzz-provider.md § 16.1: the MCP servers file key cannot be set by a lower tier.
#[test]
fn mcp_servers_file_is_authoritative() {
    let env = build(json!({
        "auth_tag": "t",
        "launch": {"env": {"BUZZ_ACP_MCP_SERVERS_FILE": "/tmp/evil.json"}}
    }))
    .unwrap();
    assert!(!env.contains_key("BUZZ_ACP_MCP_SERVERS_FILE"));
}

/// buzz-provider.md § 16.1: an arg with a comma moves the list to `BUZZ_ACP_AGENT_ARGS_JSON` and sets
/// `BUZZ_ACP_AGENT_ARGS=acp`; without one the baseline comma join, and no JSON key.
#[test]
fn args_containing_commas_use_json_transport() {
    let env = build(json!({
        "auth_tag": "t",
        "launch": {"args": ["--flags", "a,b", "c"]}
    }))
    .unwrap();
    assert_eq!(env["BUZZ_ACP_AGENT_ARGS_JSON"], r#"["--flags","a,b","c"]"#);
    assert_eq!(env["BUZZ_ACP_AGENT_ARGS"], "acp");
    let plain = build(json!({"auth_tag": "t", "launch": {"args": ["acp", "--x"]}})).unwrap();
    assert_eq!(plain["BUZZ_ACP_AGENT_ARGS"], "acp,--x");
    assert!(!plain.contains_key("BUZZ_ACP_AGENT_ARGS_JSON"));
    let none = build(json!({"auth_tag": "t", "launch": {"args": []}})).unwrap();
    assert!(!none.contains_key("BUZZ_ACP_AGENT_ARGS"));
}

/// Conditional tier-3 keys: blank `auth_tag`/`owner_pubkey`/`command`/`respond_to` are absent;
/// the nsec is kept as given (untrimmed); the relay URL and tag are trimmed.
#[test]
fn conditional_keys_and_trimming() {
    let padded = format!(" {NSEC} ");
    let env = build_env(
        &agent(json!({
            "private_key_nsec": padded,
            "auth_tag": "  tag  ",
            "respond_to": "",
            "launch": {"command": "", "owner_pubkey": "   "}
        })),
        &INPUTS,
    )
    .unwrap();
    assert_eq!(env["BUZZ_PRIVATE_KEY"], padded);
    assert_eq!(env["NOSTR_PRIVATE_KEY"], padded);
    assert_eq!(env["BUZZ_AUTH_TAG"], "tag");
    assert_eq!(env["BUZZ_RELAY_URL"], "wss://relay.example");
    for key in [
        "BUZZ_ACP_AGENT_OWNER",
        "BUZZ_ACP_AGENT_COMMAND",
        "BUZZ_ACP_RESPOND_TO",
        "BUZZ_ACP_RESPOND_TO_ALLOWLIST",
    ] {
        assert!(!env.contains_key(key), "{key}");
    }
    assert_eq!(
        keys(&env),
        [
            "BUZZ_ACP_EXIT_AFTER_INACTIVITY",
            "BUZZ_ACP_MCP_COMMAND",
            "BUZZ_AUTH_TAG",
            "BUZZ_MANAGED_AGENT_START_NONCE",
            "BUZZ_PRIVATE_KEY",
            "BUZZ_RELAY_URL",
            "NOSTR_PRIVATE_KEY"
        ]
    );
}

/// buzz-provider.md § 5.2: top-level `model`, `provider`, timeouts, prompt and parallelism are not mapped, and
/// nothing remote says `BUZZ_ACP_NO_PRESENCE`, `BUZZ_MANAGED_AGENT` or a setup payload.
#[test]
fn desktop_fields_are_not_mapped() {
    let env = build(json!({
        "auth_tag": "t",
        "model": "m", "provider": "p", "system_prompt": "s", "turn_timeout_seconds": 9,
        "idle_timeout_seconds": 1, "max_turn_duration_seconds": 2, "parallelism": 3
    }))
    .unwrap();
    for key in env.keys() {
        assert!(!key.contains("TURN_TIMEOUT"), "{key}");
        assert!(
            ![
                "BUZZ_AGENT_MODEL",
                "BUZZ_AGENT_PROVIDER",
                "GOOSE_MODEL",
                "GOOSE_PROVIDER",
                "BUZZ_ACP_SYSTEM_PROMPT",
                "BUZZ_ACP_SETUP_PAYLOAD",
                "BUZZ_MANAGED_AGENT",
                "BUZZ_ACP_DEDUP",
                "BUZZ_ACP_MULTIPLE_EVENT_HANDLING",
            ]
            .contains(&key.as_str()),
            "{key}"
        );
    }
}

/// A blank relay URL is refused.
#[test]
fn blank_relay_is_refused() {
    let error = build_env(
        &serde_json::from_value(
            json!({"relay_url": "  ", "private_key_nsec": NSEC, "auth_tag": "t"}),
        )
        .unwrap(),
        &INPUTS,
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "deploy refused: relay_url is empty — the agent would have no relay to connect to"
    );
}

/// The owner rule: blank or absent `auth_tag` and `owner_pubkey` are refused; either one
/// suffices.
#[test]
fn owner_rule() {
    let message = "deploy refused: neither auth_tag nor launch.owner_pubkey resolved — without \
                   an owner the agent cannot honor !shutdown";
    for value in [
        json!({}),
        json!({"auth_tag": "  ", "launch": {"owner_pubkey": ""}}),
        json!({"auth_tag": null, "launch": {}}),
    ] {
        assert_eq!(build(value).unwrap_err().to_string(), message);
    }
    assert!(build(json!({"auth_tag": "t"})).is_ok());
    assert!(build(json!({"launch": {"owner_pubkey": "o"}})).is_ok());
}

/// Tier 1 and 2 keys must be POSIX names.
#[test]
fn non_posix_keys_are_refused() {
    for key in ["1A", "A-B", "A.B", "", "É"] {
        let error = build(json!({"auth_tag": "t", "launch": {"env": {key: "v"}}})).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "env key {key:?} is not a POSIX environment variable name \
                 ([A-Za-z_][A-Za-z0-9_]*); Kubernetes would treat it inconsistently across \
                 cluster versions"
            )
        );
    }
    assert!(build(json!({"auth_tag": "t", "launch": {"policy_env": {"_a1": "v"}}})).is_ok());
}

/// `BUZZ_ACP_NO_PRESENCE` is refused in any case, from either tier (I3).
#[test]
fn no_presence_is_refused_case_insensitively() {
    for (tier, key) in [
        ("env", "BUZZ_ACP_NO_PRESENCE"),
        ("policy_env", "buzz_acp_no_presence"),
    ] {
        let error = build(json!({"auth_tag": "t", "launch": {tier: {key: "1"}}})).unwrap_err();
        assert_eq!(
            error.to_string(),
            "BUZZ_ACP_NO_PRESENCE must not be set on a remote agent: presence is the only signal \
             that a remote agent is alive"
        );
    }
    let legacy = build(json!({"auth_tag": "t", "env_vars": {"Buzz_Acp_No_Presence": "1"}}));
    assert_eq!(legacy.unwrap_err(), EnvError::NoPresence);
}

/// The size cap: summed value bytes above 1,048,576 are refused with the count; exactly the
/// cap passes.
#[test]
fn size_cap_counts_value_bytes() {
    let base = build(json!({"auth_tag": "t"})).unwrap();
    let used: usize = base.values().map(String::len).sum();
    let fill = MAX_SECRET_BYTES - used;
    assert!(build(json!({"auth_tag": "t", "env_vars": {"BIG": "x".repeat(fill)}})).is_ok());
    let error =
        build(json!({"auth_tag": "t", "env_vars": {"BIG": "x".repeat(fill + 1)}})).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "agent environment is {} bytes; Kubernetes caps Secret data at 1048576",
            MAX_SECRET_BYTES + 1
        )
    );
}

/// The respond-to gate: exact, case-sensitive, untrimmed modes.
#[test]
fn respond_to_must_be_a_harness_mode() {
    for mode in ["owner-only", "anyone", "nobody"] {
        let env = build(json!({"auth_tag": "t", "respond_to": mode})).unwrap();
        assert_eq!(env["BUZZ_ACP_RESPOND_TO"], mode);
    }
    for bad in ["Anyone", " anyone", "everyone", "owner_only"] {
        assert_eq!(
            build(json!({"auth_tag": "t", "respond_to": bad}))
                .unwrap_err()
                .to_string(),
            format!(
                "deploy refused: respond_to {bad:?} is not a mode the harness accepts (expected \
                 one of owner-only, allowlist, anyone, nobody) — the pod would fail to parse its \
                 arguments, be replaced, and leave a Secret behind on every attempt"
            )
        );
    }
}

/// Allowlist mode needs a non-empty list of 64-hex keys (trimmed, either case); the list is
/// written untrimmed.
#[test]
fn allowlist_mode_validates_its_list() {
    let empty = "deploy refused: respond_to is \"allowlist\" but the allowlist is empty — the \
                 harness refuses this at startup, so the pod would fail, be replaced, and leave \
                 a Secret behind on every attempt";
    for list in [Value::Null, json!([])] {
        let value =
            json!({"auth_tag": "t", "respond_to": "allowlist", "respond_to_allowlist": list});
        assert_eq!(build(value).unwrap_err().to_string(), empty);
    }
    let upper = format!(" {} ", "A".repeat(64));
    let env = build(json!({
        "auth_tag": "t", "respond_to": "allowlist", "respond_to_allowlist": [upper]
    }))
    .unwrap();
    assert_eq!(env["BUZZ_ACP_RESPOND_TO_ALLOWLIST"], upper);
    for bad in ["abc", &"g".repeat(64), &"a".repeat(65)] {
        let value = json!({
            "auth_tag": "t", "respond_to": "allowlist", "respond_to_allowlist": ["a".repeat(64), bad]
        });
        assert_eq!(
            build(value).unwrap_err().to_string(),
            format!(
                "deploy refused: invalid pubkey in respond_to_allowlist: {bad:?} (must be exactly \
                 64 hex characters)"
            )
        );
    }
}

/// In other modes (and with no mode) a junk list is tolerated and still written.
#[test]
fn junk_allowlist_is_tolerated_outside_allowlist_mode() {
    for mode in [json!("anyone"), Value::Null] {
        let env = build(json!({
            "auth_tag": "t", "respond_to": mode, "respond_to_allowlist": ["junk", " x "]
        }))
        .unwrap();
        assert_eq!(env["BUZZ_ACP_RESPOND_TO_ALLOWLIST"], "junk, x ");
    }
}

/// No refusal message holds a value: the nsec, the tag or an env value never appear.
#[test]
fn refusals_hold_no_values() {
    let cases = [
        json!({"auth_tag": "tag-secret", "launch": {"env": {"BAD-KEY": "env-secret"}}}),
        json!({"launch": {"env": {"A": "env-secret"}}}),
        json!({"auth_tag": "tag-secret", "env_vars": {"BUZZ_ACP_NO_PRESENCE": "env-secret"}}),
    ];
    for value in cases {
        let message = build(value).unwrap_err().to_string();
        for secret in [NSEC, "tag-secret", "env-secret"] {
            assert!(!message.contains(secret), "{message}");
        }
    }
}

/// buzz-provider.md § 5.1: `launch.owner_pubkey` is trimmed before it becomes
/// `BUZZ_ACP_AGENT_OWNER`; a blank `auth_tag` (with an owner present) leaves `BUZZ_AUTH_TAG` absent.
#[test]
fn owner_is_trimmed_and_blank_auth_tag_is_absent() {
    let owner = "c".repeat(64);
    let env = build(json!({
        "auth_tag": " \t ",
        "launch": {"owner_pubkey": format!("  {owner}\n")}
    }))
    .unwrap();
    assert_eq!(env["BUZZ_ACP_AGENT_OWNER"], owner);
    assert!(!env.contains_key("BUZZ_AUTH_TAG"), "{:?}", keys(&env));
    let empty = build(json!({"auth_tag": "", "launch": {"owner_pubkey": "o"}})).unwrap();
    assert!(!empty.contains_key("BUZZ_AUTH_TAG"));
    assert_eq!(empty["BUZZ_ACP_AGENT_OWNER"], "o");
}

/// buzz-provider.md § 5.1 and § 16.1: the authoritative list pinned as literals (not read back
/// from the code's constant). Each key spoofed in `policy_env` and in `launch.env` ends up either
/// absent (tier 3 writes nothing for it here) or holding tier 3's value.
#[test]
fn authoritative_list_is_the_fourteen_literal_keys() {
    let literal = [
        "BUZZ_RELAY_URL",
        "BUZZ_PRIVATE_KEY",
        "NOSTR_PRIVATE_KEY",
        "BUZZ_AUTH_TAG",
        "BUZZ_ACP_AGENT_OWNER",
        "BUZZ_ACP_AGENT_COMMAND",
        "BUZZ_ACP_AGENT_ARGS",
        "BUZZ_ACP_RESPOND_TO",
        "BUZZ_ACP_RESPOND_TO_ALLOWLIST",
        "BUZZ_ACP_MCP_COMMAND",
        "BUZZ_ACP_EXIT_AFTER_INACTIVITY",
        "BUZZ_MANAGED_AGENT_START_NONCE",
        "BUZZ_ACP_MCP_SERVERS_FILE",
        "BUZZ_ACP_AGENT_ARGS_JSON",
    ];
    let mut sorted_literal = literal.to_vec();
    sorted_literal.sort_unstable();
    let mut sorted_code = AUTHORITATIVE_KEYS.to_vec();
    sorted_code.sort_unstable();
    assert_eq!(sorted_code, sorted_literal);
    for tier in ["policy_env", "env"] {
        let spoofed: serde_json::Map<String, Value> = literal
            .iter()
            .map(|key| ((*key).to_owned(), json!("spoofed")))
            .collect();
        let env = build(json!({"launch": {"owner_pubkey": "o", tier: spoofed}})).unwrap();
        let expected = json!({
            "BUZZ_ACP_AGENT_OWNER": "o",
            "BUZZ_ACP_EXIT_AFTER_INACTIVITY": "3600",
            "BUZZ_ACP_MCP_COMMAND": "buzz-dev-mcp",
            "BUZZ_MANAGED_AGENT_START_NONCE": "0a1b2c3d",
            "BUZZ_PRIVATE_KEY": NSEC,
            "BUZZ_RELAY_URL": "wss://relay.example",
            "NOSTR_PRIVATE_KEY": NSEC
        });
        assert_eq!(serde_json::to_value(&env).unwrap(), expected, "{tier}");
    }
}
