//! The result documents and text lines of deploy.md § Deploy-side subcommands, pinned as
//! literals (key sets, `-` for unknown values, `present|missing`, `matches|differs`).

use apiary_classify::status::StatusState;
use apiary_substrate::driver::SecretStatus;

use super::*;

fn agent() -> AgentIdentity {
    AgentIdentity::new("Research Bot #1").expect("agent")
}

/// A report of `pod` in `state` with nothing else known; each test sets what it looks at.
fn bare(pod: &str, state: StatusState) -> StatusReport {
    StatusReport {
        pod: pod.into(),
        state,
        condition: None,
        secret: None,
        intent_matches: None,
        env_differs: None,
        intent_differs: None,
        workspace_differs: None,
        workspace: None,
        expiry: None,
    }
}

fn keys(doc: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = doc
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

/// deploy: text is the pod name alone; json has exactly the five contract keys.
#[test]
fn deploy_document_shape() {
    let r = deploy_report(&agent(), "agents", "apiary-research-bot-1-72bea12366a3");
    assert_eq!(r.text, "apiary-research-bot-1-72bea12366a3");
    assert_eq!(
        keys(&r.json),
        ["agent", "agent_id", "namespace", "pod", "state"]
    );
    assert_eq!(r.json["state"], "started");
    assert_eq!(r.json["agent"], "Research Bot #1");
    assert_eq!(
        r.json["agent_id"],
        "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98"
    );
}

/// status of a started pod with a present Secret and a matching intent.
#[test]
fn status_document_and_lines_for_a_started_pod() {
    let report = StatusReport {
        condition: Some("the pod is Running".into()),
        secret: Some(SecretStatus {
            name: "apiary-x-0a0b0c0d".into(),
            exists: true,
        }),
        intent_matches: Some(true),
        ..bare("apiary-x", StatusState::Started)
    };
    let r = status_report(&agent(), "agents", &report);
    assert_eq!(
        keys(&r.json),
        [
            "agent",
            "agent_id",
            "condition",
            "environment_differs",
            "intent_differs",
            "intent_matches",
            "namespace",
            "pod",
            "secret",
            "state",
            "workspace",
            "workspace_differs"
        ]
    );
    assert_eq!(r.json["state"], "started");
    assert_eq!(r.json["secret"]["name"], "apiary-x-0a0b0c0d");
    assert_eq!(r.json["secret"]["exists"], true);
    assert_eq!(r.json["intent_matches"], true);
    assert_eq!(
        r.text,
        "state: started\npod: apiary-x\ncondition: the pod is Running\n\
         secret: apiary-x-0a0b0c0d (present)\nintent: matches"
    );
}

/// status of an absent agent: nulls in json, `-` in text.
#[test]
fn status_absent_uses_null_and_dashes() {
    let report = bare("apiary-x", StatusState::Absent);
    let r = status_report(&agent(), "agents", &report);
    assert_eq!(r.json["state"], "absent");
    assert!(r.json["pod"].is_null());
    assert!(r.json["condition"].is_null());
    assert!(r.json["secret"].is_null());
    assert!(r.json["intent_matches"].is_null());
    assert_eq!(
        r.text,
        "state: absent\npod: -\ncondition: -\nsecret: -\nintent: -"
    );
}

/// status: a missing Secret reads `missing`, a different intent `differs`.
#[test]
fn status_missing_secret_and_differing_intent() {
    let report = StatusReport {
        secret: Some(SecretStatus {
            name: "s".into(),
            exists: false,
        }),
        intent_matches: Some(false),
        ..bare("apiary-x", StatusState::Broken)
    };
    let r = status_report(&agent(), "agents", &report);
    assert!(r.text.contains("secret: s (missing)"));
    assert!(r.text.contains("intent: differs"));
    assert!(!r.text.contains("environment"), "not compared: no line");
    assert_eq!(r.json["state"], "broken");
    assert_eq!(r.json["secret"]["exists"], false);
    assert_eq!(r.json["environment_differs"], serde_json::Value::Null);
}

/// status with a configuration: the environment line names the differing keys (never a
/// value), or says it matches.
#[test]
fn status_names_the_differing_environment_keys() {
    let mut report = StatusReport {
        secret: Some(SecretStatus {
            name: "s".into(),
            exists: true,
        }),
        intent_matches: Some(true),
        env_differs: Some(vec!["API_KEY".into(), "MODEL".into()]),
        ..bare("apiary-x", StatusState::Started)
    };
    let r = status_report(&agent(), "agents", &report);
    assert!(
        r.text.ends_with("\nenvironment differs: API_KEY, MODEL"),
        "{}",
        r.text
    );
    assert_eq!(
        r.json["environment_differs"],
        serde_json::json!(["API_KEY", "MODEL"])
    );
    report.env_differs = Some(Vec::new());
    let r = status_report(&agent(), "agents", &report);
    assert!(r.text.ends_with("\nenvironment: matches"), "{}", r.text);
}

/// deploy.md § Expiry: a pod with an expiry adds `expires_at` and `expires_in_seconds` and a
/// last `expires:` line with the time left, `(expired)` once it is past, or the instant alone
/// without a server clock; without one neither key nor line appears.
#[test]
fn status_renders_the_expiry_it_is_given() {
    let mut report = bare("apiary-x", StatusState::Started);
    let r = status_report(&agent(), "agents", &report);
    assert!(r.json.get("expires_at").is_none(), "{}", r.json);
    assert!(!r.text.contains("expires"), "{}", r.text);
    for (left, line) in [
        (Some(7_140), "expires: 2026-01-01T02:00:00Z (in 1h59m)"),
        (Some(0), "expires: 2026-01-01T02:00:00Z (expired)"),
        (None, "expires: 2026-01-01T02:00:00Z"),
    ] {
        report.expiry = Some(StatusExpiry {
            expires_at: 1_767_232_800,
            seconds_left: left,
        });
        let r = status_report(&agent(), "agents", &report);
        assert!(
            r.text.ends_with(&format!("\nintent: -\n{line}")),
            "{}",
            r.text
        );
        assert_eq!(r.json["expires_at"], "2026-01-01T02:00:00Z");
        assert_eq!(r.json["expires_in_seconds"], serde_json::json!(left));
    }
}

/// Every status state is printed with its contract spelling.
#[test]
fn status_prints_every_state() {
    for (state, word) in [
        (StatusState::Absent, "absent"),
        (StatusState::Starting, "starting"),
        (StatusState::Started, "started"),
        (StatusState::Terminated, "terminated"),
        (StatusState::Broken, "broken"),
        (StatusState::PullFailing, "pull-failing"),
        (StatusState::Deleting, "deleting"),
        (StatusState::Foreign, "foreign"),
    ] {
        let report = bare("p", state);
        let r = status_report(&agent(), "agents", &report);
        assert_eq!(r.json["state"], word);
        assert!(r.text.starts_with(&format!("state: {word}\n")));
    }
}

/// undeploy: one line per object; `deleted` after the wait, `deleting` without it; json keys.
#[test]
fn undeploy_lines_and_document() {
    let waited = UndeployReport {
        pod: Some("apiary-x".into()),
        pod_deleted: true,
        waited: true,
        secrets: vec!["apiary-x-1".into()],
        kept_secrets: vec![],
        network_policy: None,
        workspace: None,
    };
    let r = undeploy_report(&agent(), "agents", &waited);
    assert_eq!(r.text, "pod/apiary-x deleted\nsecret/apiary-x-1 deleted");
    assert_eq!(
        keys(&r.json),
        [
            "agent",
            "agent_id",
            "kept_secrets",
            "namespace",
            "network_policy",
            "pod",
            "pod_deleted",
            "secrets",
            "waited",
            "workspace"
        ]
    );
    let no_wait = UndeployReport {
        pod: Some("apiary-x".into()),
        pod_deleted: true,
        waited: false,
        secrets: vec![],
        kept_secrets: vec!["apiary-x-1".into()],
        network_policy: None,
        workspace: None,
    };
    let r = undeploy_report(&agent(), "agents", &no_wait);
    assert_eq!(r.text, "pod/apiary-x deleting\nsecret/apiary-x-1 kept");
    assert_eq!(r.json["kept_secrets"][0], "apiary-x-1");
}

/// undeploy with nothing to delete: empty text (success with empty output).
#[test]
fn undeploy_nothing_is_empty_output() {
    let r = undeploy_report(&agent(), "agents", &UndeployReport::default());
    assert_eq!(r.text, "");
    assert!(r.json["pod"].is_null());
    assert_eq!(r.json["pod_deleted"], false);
}

/// gc: `pod/` then `secret/` lines; json carries dry_run and the orphan sweep word.
/// A 403 of any deploy-side request names the manifest and the binding that grant the right,
/// once, after the server's own message; other failures get no RBAC hint.
#[test]
fn forbidden_requests_get_the_deployer_rbac_hint() {
    use apiary_classify::failure::{Operation, RequestFailure};
    let denied = RequestFailure::answered(
        Operation::CreatePod,
        "agents/p",
        403,
        "Forbidden",
        "pods is forbidden: User \"u\" cannot create resource \"pods\"",
    );
    let hinted = Failure::request(&denied, "agents").message;
    assert!(hinted.starts_with(&denied.to_string()), "{hinted}");
    assert!(hinted.contains("rbac/apiary-deployer.yaml"), "{hinted}");
    assert!(
        hinted
            .contains("kubectl create rolebinding apiary -n agents --clusterrole=apiary-deployer"),
        "{hinted}"
    );
    assert_eq!(hinted.matches("rbac/apiary-deployer.yaml").count(), 2);
    let busy = RequestFailure::answered(
        Operation::GetPod,
        "agents/p",
        503,
        "ServiceUnavailable",
        "busy",
    );
    assert!(!Failure::request(&busy, "agents").message.contains("rbac/"));
}

/// deploy.md § What a failure leaves: each kind of leftover ends the message with what is left
/// and the command that removes it, the agent quoted for a shell, and JSON `left`.
#[test]
fn a_failure_names_what_it_left() {
    let agent = AgentIdentity::new("Research Bot #1").unwrap();
    let kept = with_left(
        Failure::failed("pod p did not start."),
        &Left::Pod("p".into()),
        &agent,
    );
    assert_eq!(
        kept.message,
        "pod p did not start. Left in the cluster: pod p and its Secret, kept for `apiary logs \
         'Research Bot #1'`; `apiary undeploy 'Research Bot #1'` removes them"
    );
    assert_eq!(kept.to_json()["left"], json!({"pod": "p", "state": "kept"}));
    let gone = with_left(
        Failure::failed("x"),
        &Left::Terminating("old".into()),
        &agent,
    );
    assert!(
        gone.message
            .contains("No new pod was created: once pod old is gone")
    );
    assert!(gone.message.contains("nothing of the agent runs"));
    assert_eq!(gone.to_json()["left"]["state"], "terminating");
    let maybe = with_left(Failure::failed("x"), &Left::MaybePod("p".into()), &agent);
    assert_eq!(maybe.to_json()["left"]["state"], "unknown");
    assert_eq!(shell_word("bot-1"), "bot-1");
    assert_eq!(shell_word("it's"), r"'it'\''s'");
}
