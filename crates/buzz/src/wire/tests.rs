//! The envelope and dispatch order of buzz-provider.md § 2.2 and the response shapes of § 2.4.

use serde_json::{Value, json};

use super::*;
use crate::entropy::FixedEntropy;

const NSEC: &str = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";

fn answer(input: &str) -> Response {
    match dispatch(input, &mut FixedEntropy::new([7])) {
        Dispatch::Answer(response) => response,
        Dispatch::Deploy(request) => panic!("expected an answer, got a deploy: {request:?}"),
    }
}

fn error_of(input: &str) -> String {
    match answer(input) {
        Response::Error(message) => message,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn line(response: &Response) -> Value {
    serde_json::from_str(&response.to_line().expect("serializes")).expect("json")
}

/// Step 1: input that is not JSON is answered with serde's reason.
#[test]
fn invalid_json_is_refused() {
    let message = error_of("{not json");
    assert!(
        message.starts_with("request is not valid JSON: "),
        "{message}"
    );
    assert!(error_of("").starts_with("request is not valid JSON: "));
}

/// Step 2: the relay-mesh backstop, exact text.
#[test]
fn relay_mesh_is_refused() {
    let input = json!({"op":"deploy","agent":{"provider":"relay-mesh"}}).to_string();
    assert_eq!(
        error_of(&input),
        "deploy refused: this agent is configured for shared compute (relay-mesh), which runs \
         on the relay rather than in a pod. Switch the agent to a local runtime before deploying \
         it to Kubernetes."
    );
}

/// Step 2: the provider is compared after trimming.
#[test]
fn padded_relay_mesh_is_refused() {
    let input = json!({"op":"deploy","agent":{"provider":"  relay-mesh  "}}).to_string();
    assert_eq!(error_of(&input), RELAY_MESH_REFUSAL);
}

/// Step 2 runs before typed parsing: it fires for a malformed request (no op) and for `info`.
#[test]
fn relay_mesh_fires_before_typed_parsing() {
    for input in [
        json!({"agent":{"provider":"relay-mesh"}}),
        json!({"op":"info","agent":{"provider":"relay-mesh"}}),
        json!({"op":"nope","agent":{"provider":"relay-mesh"},"provider_config":7}),
    ] {
        assert_eq!(error_of(&input.to_string()), RELAY_MESH_REFUSAL);
    }
}

/// Step 2: an absent provider, another string or a non-string passes the backstop.
#[test]
fn other_providers_pass_the_backstop() {
    for provider in [
        json!("local"),
        json!("relay-mesh-2"),
        json!(["relay-mesh"]),
        json!(1),
    ] {
        let input = json!({"op":"info","agent":{"provider":provider}}).to_string();
        assert!(matches!(answer(&input), Response::Info(_)));
    }
}

/// Step 3: an unknown op, a missing required field and a wrong type are "could not
/// understand".
#[test]
fn typed_parse_failures_are_not_understood() {
    for input in [
        json!({"op":"undeploy"}),
        json!({"op":"INFO"}),
        json!({"request_id":"r"}),
        json!({"op":"deploy","agent":{"relay_url":"wss://r"}}),
        json!({"op":"deploy","agent":{"private_key_nsec":NSEC}}),
        json!({"op":"deploy","agent":{"relay_url":1,"private_key_nsec":NSEC}}),
        json!([1, 2]),
    ] {
        let message = error_of(&input.to_string());
        assert!(
            message.starts_with("could not understand the request: "),
            "{input}: {message}"
        );
    }
}

/// The missing field is named by serde.
#[test]
fn missing_relay_url_is_named() {
    let input = json!({"op":"deploy","agent":{"private_key_nsec":NSEC}}).to_string();
    assert_eq!(
        error_of(&input),
        "could not understand the request: missing field `relay_url`"
    );
}

/// Step 4: `info` is answered at once; `request_id` and unknown fields are ignored and nothing
/// echoes them.
#[test]
fn info_ignores_request_id_and_unknown_fields() {
    let response = answer(r#"{"op":"info","request_id":"req-1","extra":{"x":1}}"#);
    let value = line(&response);
    assert_eq!(value["ok"], true);
    assert!(!response.to_line().unwrap().contains("req-1"));
}

/// Step 5: a deploy is handed back typed; unknown agent fields are ignored and a missing
/// `provider_config` is `null`.
#[test]
fn deploy_is_handed_back_with_unknown_fields_ignored() {
    let input = json!({
        "op": "deploy",
        "request_id": "r",
        "agent": {
            "relay_url": "wss://relay",
            "private_key_nsec": NSEC,
            "name": "n", "model": "m", "provider": "local", "system_prompt": "s",
            "turn_timeout_seconds": 5, "parallelism": 2, "agent_command": "x",
            "agent_args": ["y"], "idle_timeout_seconds": 3, "max_turn_duration_seconds": 4,
            "launch": {"command": "goose", "unknown": true}
        }
    })
    .to_string();
    let Dispatch::Deploy(request) = dispatch(&input, &mut FixedEntropy::new([1])) else {
        panic!("expected a deploy");
    };
    assert_eq!(request.provider_config, Value::Null);
    assert_eq!(request.agent.relay_url, "wss://relay");
    let launch = request.agent.launch.as_ref().expect("launch");
    assert_eq!(launch.command.as_deref(), Some("goose"));
    assert!(launch.args.is_empty() && launch.env.is_empty());
}

/// The payload's `Debug` shows no nsec and no env value.
#[test]
fn payload_debug_redacts_secrets() {
    let input = json!({
        "op": "deploy",
        "agent": {
            "relay_url": "wss://relay", "private_key_nsec": NSEC, "auth_tag": "tag-value",
            "env_vars": {"K": "env-value-1"},
            "launch": {"env": {"L": "env-value-2"}, "policy_env": {"P": "env-value-3"}}
        }
    })
    .to_string();
    let Dispatch::Deploy(request) = dispatch(&input, &mut FixedEntropy::new([1])) else {
        panic!("expected a deploy");
    };
    let debug = format!("{request:?}");
    for secret in [
        NSEC,
        "tag-value",
        "env-value-1",
        "env-value-2",
        "env-value-3",
    ] {
        assert!(!debug.contains(secret), "{debug}");
    }
}

/// Success has exactly `ok` and `agent_id`; failure exactly `ok` and `error`.
#[test]
fn responses_have_exactly_two_keys() {
    let deployed = Response::Deployed {
        agent_id: "buzz-agent-7e7e9c42a91b".to_owned(),
    };
    assert_eq!(
        line(&deployed),
        json!({"ok":true,"agent_id":"buzz-agent-7e7e9c42a91b"})
    );
    assert_eq!(
        line(&Response::error("no")),
        json!({"ok":false,"error":"no"})
    );
}

/// Each line is one line: the trailing newline and no other.
#[test]
fn each_response_is_exactly_one_line() {
    for response in [
        Response::error("a\nb"),
        answer(r#"{"op":"info"}"#),
        Response::Deployed {
            agent_id: "x".to_owned(),
        },
    ] {
        let text = response.to_line().unwrap();
        assert!(text.ends_with('\n'));
        assert_eq!(text.matches('\n').count(), 1, "{text}");
    }
}

/// The hand-built serialize-failure object is valid JSON with the message escaped.
#[test]
fn serialize_failure_line_is_hand_built_json() {
    let text = serialize_failure_line("bad \"x\" \\ \n");
    assert!(text.ends_with('\n') && text.matches('\n').count() == 1);
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value,
        json!({"ok":false,"error":"could not serialize a response: bad \"x\" \\ \n"})
    );
    assert_eq!(
        serialize_failure_line("e"),
        "{\"ok\":false,\"error\":\"could not serialize a response: e\"}\n"
    );
}

/// The argument rule: none dispatches, `--check-identity` is unsupported in-band, anything else
/// is "unsupported provider arguments".
#[test]
fn argument_vectors() {
    assert_eq!(check_arguments::<&str>(&[]), None);
    assert_eq!(
        check_arguments(&["--check-identity"]),
        Some(Response::error(CHECK_IDENTITY_UNSUPPORTED))
    );
    for args in [
        vec!["info"],
        vec!["--check-identity", "x"],
        vec!["--help"],
        vec![""],
    ] {
        assert_eq!(
            check_arguments(&args),
            Some(Response::error("unsupported provider arguments"))
        );
    }
}
