//! The exact text of every failure message the CLI prints (docs/errors.md), pinned as `insta`
//! snapshots in `tests/cli/snapshots/` and produced by the built binary against the loopback simulator:
//! each row of deploy.md § Errors the simulator can stage, each seeds failure, every refusal of bad
//! input, an unreachable server, a bad kubeconfig, a missing credential plugin and each 403. Every
//! message is also scanned for `Debug` artefacts, doubled words, repeated prefixes, line breaks and
//! length.
//!
//! Deterministic by construction: fixed agents and images give fixed pod names, the server URL of
//! the unreachable cases is fixed, and what varies per run (the temporary directory, the
//! simulator's port, a Secret's random generation) is redacted before the comparison. A changed
//! message fails plain `cargo test` (insta writes a `.snap.new` to review; CI writes nothing).
//!
//! Test-only; talks to loopback only.

use crate::common::{Fixture, IMAGE, NAMESPACE, Run, image, run_with_kubeconfig};
use apiary_apiserver_sim::{FaultAction, FaultRule, Matcher, Resource, Verb};

const AGENT: &str = "Research Bot #1";
const POD: &str = "apiary-research-bot-1-72bea12366a3";
/// What an unreachable server's kubeconfig names: the discard port, closed on loopback.
const NOWHERE: &str = "http://127.0.0.1:9";

/// The one `error: ` line of a run, redacted; asserts the shape rules on it.
fn message(fx: Option<&Fixture>, run: &Run) -> String {
    let errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "one error line: {run:?}");
    let text = redact(fx, errors[0]);
    assert_shape(&text);
    text
}

/// The json-mode error document of a run, redacted, with its `error` checked like a text line.
fn document(fx: Option<&Fixture>, run: &Run) -> String {
    let doc = run.json();
    let error = doc["error"].as_str().expect("error is a string");
    assert_shape(&format!("error: {error}"));
    redact(fx, &serde_json::to_string_pretty(&doc).expect("json"))
}

/// What varies per run: the temporary directory, the simulator's port, a Secret's generation.
fn redact(fx: Option<&Fixture>, text: &str) -> String {
    let mut text = text.to_owned();
    if let Some(fx) = fx {
        text = text.replace(&fx.dir().display().to_string(), "[TMP]");
    }
    text = redact_after(&text, "127.0.0.1:", |c| c.is_ascii_digit(), "[PORT]");
    redact_after(
        &text,
        &format!("{POD}-"),
        |c| c.is_ascii_hexdigit(),
        "[GEN]",
    )
}

/// Replace each run of `keep`-characters right after `marker` with `with` (the port `9` of
/// [`NOWHERE`] stays: it is part of the input, not of the run).
fn redact_after(text: &str, marker: &str, keep: impl Fn(char) -> bool, with: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at + marker.len()]);
        rest = &rest[at + marker.len()..];
        let end = rest.find(|c: char| !keep(c)).unwrap_or(rest.len());
        if end > 1 {
            out.push_str(with);
        } else {
            out.push_str(&rest[..end]);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The rules every message keeps: no `Debug` artefacts, no doubled word, no repeated "could
/// not" prefix, one line, at most about 600 characters.
fn assert_shape(line: &str) {
    let text = line.strip_prefix("error: ").unwrap_or(line);
    for artefact in [
        "Some(",
        "None",
        "Status {",
        "\\\"",
        "'\"",
        "ErrorResponse",
        "Error {",
        "{ ",
        "Option<",
    ] {
        assert!(!text.contains(artefact), "{artefact:?} in {text}");
    }
    assert!(!text.contains('\n'), "{text}");
    assert!(text.chars().count() <= 620, "{} chars: {text}", text.len());
    assert!(
        text.matches("could not").count() <= 1,
        "prefix twice: {text}"
    );
    assert!(!text.contains("error: "), "re-prefixed: {text}");
    // A doubled word is two equal words in a row; a flag named after its field in parentheses
    // (`timeout (--timeout)`) is not one.
    let words: Vec<&str> = text.split_whitespace().collect();
    for pair in words.windows(2) {
        let clean = |w: &str| w.trim_end_matches([',', ';', ':', '.']).to_lowercase();
        let (a, b) = (clean(pair[0]), clean(pair[1]));
        assert!(
            a.is_empty() || !a.chars().all(char::is_alphabetic) || a != b,
            "doubled word {a:?} in {text}"
        );
    }
}

/// A kubeconfig for an unreachable server, in a fresh directory.
fn unreachable() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("dir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        apiary_apiserver_sim::kubeconfig_yaml(NOWHERE, NAMESPACE),
    )
    .expect("write");
    (dir, kubeconfig)
}

fn deny(fx: &Fixture, verb: Verb, resource: Resource) {
    fx.sim().faults().deny(verb, Some(resource));
}

fn status_fault(fx: &Fixture, verb: Verb, resource: Resource, code: u16, reason: &str, text: &str) {
    fx.sim().faults().add(FaultRule::always(
        Matcher::verb(verb, resource),
        FaultAction::Status {
            code,
            reason: reason.to_owned(),
            message: text.to_owned(),
        },
    ));
}

/// Runs `args`, asserts exit 1, pins its one error line as the snapshot `name` and answers
/// that line.
fn fails(fx: &Fixture, args: &[&str], name: &str) -> String {
    let run = fx.apiary(args);
    assert_eq!(run.code, 1, "{run:?}");
    let text = message(Some(fx), &run);
    insta::assert_snapshot!(name, text.clone());
    text
}

/// `deploy AGENT --image <image>` followed by `flags`.
fn deploy<'a>(image: &'a str, flags: &[&'a str]) -> Vec<&'a str> {
    [&["deploy", AGENT, "--image", image][..], flags].concat()
}

/// Runs `args` in json mode (`-o json` first) and pins its error document as the snapshot
/// `name`.
fn fails_in_json(fx: &Fixture, args: &[&str], name: &str) {
    let run = fx.apiary(&[&["-o", "json"][..], args].concat());
    insta::assert_snapshot!(name, document(Some(fx), &run));
}

// ---- deploy.md § Errors, E1–E12, through `apiary deploy`

/// E1: startup not confirmed before the deadline (a pod that never starts).
#[test]
fn e1_deadline() {
    let fx = Fixture::start();
    fails(
        &fx,
        &deploy(&image("agent-never-starts"), &["--timeout", "2"]),
        "e1_deadline",
    );
}

/// E1 for a missing `default` service account: names `kubectl create serviceaccount`.
#[test]
fn e1_service_account_missing() {
    let fx = Fixture::start_with(|sim| {
        sim.with_model(|m| m.set_service_account_admission(true));
    });
    let run = fx.apiary(&deploy(IMAGE, &["--timeout", "2"]));
    assert_eq!(run.code, 1, "{run:?}");
    let text = message(Some(&fx), &run);
    assert!(text.contains("kubectl create serviceaccount"), "{text}");
    insta::assert_snapshot!(text);
}

/// E2: the pod this deploy created crashed.
#[test]
fn e2_created_pod_failed() {
    let fx = Fixture::start();
    fails(
        &fx,
        &deploy(&image("agent-crash"), &[]),
        "e2_created_pod_failed",
    );
}

/// E3: each pull-failure kind.
#[test]
fn e3_pull_failures() {
    for kind in ["manifest", "unauthorized", "platform"] {
        let fx = Fixture::start();
        let run = fx.apiary(&[
            "deploy",
            AGENT,
            "--image",
            &image(&format!("agent-pullfail-{kind}")),
        ]);
        assert_eq!(run.code, 1, "{kind}: {run:?}");
        insta::assert_snapshot!(format!("e3_pull_failure_{kind}"), message(Some(&fx), &run));
    }
}

/// E4: a deletion-marked pod does not disappear before the deadline.
#[test]
fn e4_disappearance_timeout() {
    let fx = Fixture::start();
    fx.insert_attempt(AGENT, &image("agent-crash"), true, true);
    fails(
        &fx,
        &deploy(IMAGE, &["--timeout", "2"]),
        "e4_disappearance_timeout",
    );
}

/// E8: a foreign pod holds the name.
#[test]
fn e8_foreign_pod() {
    let fx = Fixture::start();
    let attempt = fx.insert_attempt("someone-else", IMAGE, true, false);
    fx.insert_foreign_pod(&attempt.pod, POD);
    fails(&fx, &deploy(IMAGE, &[]), "e8_foreign_pod");
}

/// E9: the namespace read failed with an answer apiary cannot use.
#[test]
fn e9_namespace_read_failed() {
    let fx = Fixture::start();
    status_fault(
        &fx,
        Verb::Get,
        Resource::Namespaces,
        400,
        "BadRequest",
        "the server rejected our request for an unknown reason",
    );
    fails(&fx, &deploy(IMAGE, &[]), "e9_namespace_read_failed");
    fails_in_json(&fx, &deploy(IMAGE, &[]), "e9_namespace_read_failed_json");
}

/// E10: each create refused — RBAC on the pod and on the Secret, a quota's 403, a 422, and a
/// named service account that does not exist.
#[test]
fn e10_create_failures() {
    let fx = Fixture::start();
    deny(&fx, Verb::Create, Resource::Pods);
    fails(&fx, &deploy(IMAGE, &[]), "e10_pod_create_forbidden");
    fails_in_json(&fx, &deploy(IMAGE, &[]), "e10_pod_create_forbidden_json");

    let fx = Fixture::start();
    deny(&fx, Verb::Create, Resource::Secrets);
    fails(&fx, &deploy(IMAGE, &[]), "e10_secret_create_forbidden");

    let fx = Fixture::start();
    status_fault(
        &fx,
        Verb::Create,
        Resource::Pods,
        403,
        "Forbidden",
        &format!(
            "pods \"{POD}\" is forbidden: exceeded quota: compute, requested: limits.memory=4Gi, \
             used: limits.memory=8Gi, limited: limits.memory=8Gi"
        ),
    );
    fails(&fx, &deploy(IMAGE, &[]), "e10_pod_create_quota");

    let fx = Fixture::start();
    status_fault(
        &fx,
        Verb::Create,
        Resource::Pods,
        422,
        "Invalid",
        &format!("Pod \"{POD}\" is invalid: spec.containers[0].image: Required value"),
    );
    fails(&fx, &deploy(IMAGE, &[]), "e10_pod_create_invalid");

    let fx = Fixture::start_with(|sim| {
        sim.with_model(|m| m.set_service_account_admission(true));
    });
    let text = fails(
        &fx,
        &deploy(IMAGE, &["--service-account", "robot"]),
        "e10_named_service_account_missing",
    );
    assert!(
        text.contains("kubectl create serviceaccount robot"),
        "{text}"
    );
}

/// E11: the namespace is missing and apiary may not create it.
#[test]
fn e11_namespace_missing() {
    let fx = Fixture::start();
    deny(&fx, Verb::Create, Resource::Namespaces);
    fails(
        &fx,
        &["-n", "fresh-ns", "deploy", AGENT, "--image", IMAGE],
        "e11_namespace_missing",
    );
}

/// E11 for a user without namespace rights (docs/deploy.md § Namespace ensure, item 1): reading
/// the namespace is forbidden, so it is unchecked, and the first pod read is refused too: the
/// refusal names `kubectl create namespace` beside the RBAC fix, once.
#[test]
fn e11_unchecked_namespace_and_forbidden_pod_read() {
    let fx = Fixture::start();
    deny(&fx, Verb::Get, Resource::Namespaces);
    deny(&fx, Verb::Get, Resource::Pods);
    let text = fails(
        &fx,
        &["-n", "fresh-ns", "deploy", AGENT, "--image", IMAGE],
        "e11_unchecked_namespace_pod_read_forbidden",
    );
    assert_eq!(
        text.matches("kubectl create namespace fresh-ns").count(),
        1,
        "{text}"
    );
}

/// E12: a read or delete of deploy refused.
#[test]
fn e12_read_and_delete_failures() {
    let fx = Fixture::start();
    deny(&fx, Verb::Get, Resource::Pods);
    fails(&fx, &deploy(IMAGE, &[]), "e12_pod_read_forbidden");

    let fx = Fixture::start();
    fx.insert_attempt(AGENT, &image("agent-crash"), true, false);
    fx.with_model(|m| m.terminate_pod(NAMESPACE, POD, 1).map(|_| ()))
        .expect("terminated");
    deny(&fx, Verb::Delete, Resource::Pods);
    fails(&fx, &deploy(IMAGE, &[]), "e12_pod_delete_forbidden");
}

// ---- status, undeploy, gc

/// Each 403 of status, undeploy and gc, and undeploy's foreign pod.
#[test]
fn deploy_side_commands_forbidden() {
    let fx = Fixture::start();
    deny(&fx, Verb::Get, Resource::Pods);
    for command in ["status", "undeploy"] {
        let run = fx.apiary(&[command, AGENT]);
        assert_eq!(run.code, 1, "{command}: {run:?}");
        insta::assert_snapshot!(
            format!("{command}_pod_read_forbidden"),
            message(Some(&fx), &run)
        );
    }
    let fx = Fixture::start();
    deny(&fx, Verb::List, Resource::Pods);
    fails(&fx, &["gc", AGENT], "gc_pod_list_forbidden");
    fails_in_json(&fx, &["gc", AGENT], "gc_pod_list_forbidden_json");

    let fx = Fixture::start();
    assert_eq!(fx.apiary(&deploy(&image("agent-crash"), &[])).code, 1);
    deny(&fx, Verb::Delete, Resource::Pods);
    fails(&fx, &["gc", AGENT], "gc_pod_delete_forbidden");

    let fx = Fixture::start();
    fx.insert_attempt(AGENT, IMAGE, true, false);
    deny(&fx, Verb::Delete, Resource::Pods);
    fails(&fx, &["undeploy", AGENT], "undeploy_pod_delete_forbidden");

    let fx = Fixture::start();
    let attempt = fx.insert_attempt("someone-else", IMAGE, true, false);
    fx.insert_foreign_pod(&attempt.pod, POD);
    fails(&fx, &["undeploy", AGENT], "undeploy_foreign_pod");
}

// ---- list, logs, renew

/// Answer every request whose path contains `fragment` with a `Status` of `code` that has no
/// reason and no message (what a proxy's bare 500 decodes to).
fn bare_status(fx: &Fixture, fragment: &str, code: u16) {
    fx.sim().faults().add(FaultRule::always(
        Matcher::path(fragment),
        FaultAction::Status {
            code,
            reason: String::new(),
            message: String::new(),
        },
    ));
}

/// list's, logs' and renew's failures in the shared shape: each 403 names the verb, resource
/// and manifest; a log read answered 500 with no message says so (not "answered 500 :"); and
/// the rows in their own words: no pod, a foreign pod.
#[test]
fn list_logs_renew_failures() {
    let fx = Fixture::start();
    deny(&fx, Verb::List, Resource::Pods);
    fails(&fx, &["list"], "list_pod_list_forbidden");
    fails_in_json(&fx, &["list"], "list_pod_list_forbidden_json");
    fails(
        &fx,
        &["renew", AGENT, "--ttl", "1h"],
        "renew_pod_list_forbidden",
    );

    let fx = Fixture::start();
    for (command, args) in [("logs", &[][..]), ("renew", &["--ttl", "1h"][..])] {
        let run = fx.apiary(&[&[command, AGENT][..], args].concat());
        assert_eq!(run.code, 1, "{command}: {run:?}");
        insta::assert_snapshot!(format!("{command}_pod_missing"), message(Some(&fx), &run));
    }

    // (renew finds pods by the agent's label, so another agent's pod under the name is no pod
    // of this agent to it: `renew_pod_missing` again.)
    let fx = Fixture::start();
    let attempt = fx.insert_attempt("someone-else", IMAGE, true, false);
    fx.insert_foreign_pod(&attempt.pod, POD);
    fails(&fx, &["logs", AGENT], "logs_foreign_pod");

    let fx = Fixture::start();
    assert_eq!(fx.apiary(&deploy(IMAGE, &[])).code, 0);
    bare_status(&fx, "/log", 500);
    let run = fx.apiary(&["logs", AGENT]);
    assert_eq!(run.code, 1, "{run:?}");
    let text = message(Some(&fx), &run);
    assert!(!text.contains("500 :"), "{text}");
    assert!(!text.contains(": ;"), "{text}");
    insta::assert_snapshot!("logs_read_500_no_message", text);
    fails_in_json(&fx, &["logs", AGENT], "logs_read_500_no_message_json");
    fx.sim().faults().clear();
    // The real authorizer's words for the subresource (the simulator's own `Forbidden` names
    // only its top-level resources).
    fx.sim().faults().add(FaultRule::always(
        Matcher::path("/log"),
        FaultAction::Status {
            code: 403,
            reason: "Forbidden".to_owned(),
            message: format!(
                "pods \"{POD}\" is forbidden: User \"system:anonymous\" cannot get resource \
                 \"pods/log\" in API group \"\" in the namespace \"{NAMESPACE}\""
            ),
        },
    ));
    deny(&fx, Verb::Patch, Resource::Pods);
    fails(&fx, &["logs", AGENT], "logs_read_forbidden");
    fails(
        &fx,
        &["renew", AGENT, "--ttl", "1h"],
        "renew_pod_update_forbidden",
    );
}

// ---- seeds

/// Each seeds failure: forbidden, no addresses, a refused selector.
#[test]
fn seeds_failures() {
    let fx = Fixture::start();
    deny(&fx, Verb::List, Resource::Pods);
    fails(
        &fx,
        &["seeds", "--selector", "app=ring", "--port", "7000"],
        "seeds_list_forbidden",
    );
    fails_in_json(
        &fx,
        &["seeds", "--selector", "app=ring", "--port", "7000"],
        "seeds_list_forbidden_json",
    );

    let fx = Fixture::start();
    fails(
        &fx,
        &["seeds", "--selector", "app=ring", "--port-name", "gossip"],
        "seeds_no_addresses",
    );

    let fx = Fixture::start();
    status_fault(
        &fx,
        Verb::List,
        Resource::Pods,
        400,
        "BadRequest",
        "unable to parse requirement: found '=', expected: identifier",
    );
    fails(
        &fx,
        &["seeds", "--selector", "app==", "--port", "7000"],
        "seeds_bad_selector",
    );
}

// ---- the connection: unreachable server, bad kubeconfig, missing credential plugin

/// An unreachable server names the server, the context and the cause, and what to check.
#[test]
fn unreachable_server() {
    let (dir, kubeconfig) = unreachable();
    let run = run_with_kubeconfig(dir.path(), &kubeconfig, &deploy(IMAGE, &["--timeout", "1"]));
    assert_eq!(run.code, 1, "{run:?}");
    let text = message(None, &run);
    assert!(text.contains(NOWHERE), "{text}");
    assert!(text.contains("kubectl config current-context"), "{text}");
    insta::assert_snapshot!("unreachable_deploy", text);
    let run = run_with_kubeconfig(
        dir.path(),
        &kubeconfig,
        &["seeds", "--selector", "app=ring", "--port", "7000"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    insta::assert_snapshot!("unreachable_seeds", message(None, &run));
}

/// Every other command against an unreachable server, each with `--timeout 1`: the same shape,
/// naming the request, the server, the context and the cause; and each ends at its timeout (the
/// deadline bounds the retries: deploy.md § Deadlines of the other commands, pinned without timing
/// in substrate-kube's `cluster` tests, `deadline`), so this whole test takes seconds, not minutes.
#[test]
fn unreachable_server_every_command() {
    let (dir, kubeconfig) = unreachable();
    let commands: [(&str, &[&str]); 6] = [
        ("status", &["status", AGENT, "--timeout", "1"]),
        ("undeploy", &["undeploy", AGENT, "--timeout", "1"]),
        ("gc", &["gc", AGENT, "--timeout", "1"]),
        ("list", &["list", "--timeout", "1"]),
        ("renew", &["renew", AGENT, "--ttl", "1h", "--timeout", "1"]),
        ("logs", &["logs", AGENT]),
    ];
    for (name, args) in commands {
        let run = run_with_kubeconfig(dir.path(), &kubeconfig, args);
        assert_eq!(run.code, 1, "{name}: {run:?}");
        let text = message(None, &run);
        assert!(text.contains(NOWHERE), "{text}");
        assert!(text.contains("connection refused"), "{text}");
        insta::assert_snapshot!(format!("unreachable_{name}"), text);
    }
}

/// E13: a missing kubeconfig, an unparsable one, an unknown context, a missing credential plugin.
#[test]
fn e13_kubeconfig_failures() {
    let fx = Fixture::start();
    let missing = fx.dir().join("nope.kubeconfig");
    let run = run_with_kubeconfig(fx.dir(), &missing, &["status", AGENT]);
    assert_eq!(run.code, 2, "{run:?}");
    insta::assert_snapshot!("e13_kubeconfig_missing", message(Some(&fx), &run));

    let garbled = fx.dir().join("garbled.kubeconfig");
    std::fs::write(&garbled, "apiVersion: v1\nclusters: [unclosed\n").expect("write");
    let run = run_with_kubeconfig(fx.dir(), &garbled, &["status", AGENT]);
    assert_eq!(run.code, 2, "{run:?}");
    insta::assert_snapshot!("e13_kubeconfig_unparsable", message(Some(&fx), &run));

    let run = fx.apiary(&["--context", "no-such-context", "status", AGENT]);
    assert_eq!(run.code, 2, "{run:?}");
    insta::assert_snapshot!("e13_unknown_context", message(Some(&fx), &run));

    let plugin = fx.dir().join("plugin.kubeconfig");
    std::fs::write(&plugin, crate::common::MISSING_PLUGIN_KUBECONFIG).expect("write");
    let run = run_with_kubeconfig(fx.dir(), &plugin, &deploy(IMAGE, &[]));
    assert_eq!(run.code, 2, "{run:?}");
    insta::assert_snapshot!("e13_credential_plugin_missing", message(Some(&fx), &run));
    fx.assert_no_requests("kubeconfig failures");
}

// ---- refusals of bad input (exit 2, before any request)

/// `deploy a --image IMAGE` followed by `flags`.
fn on_a<'a>(flags: &[&'a str]) -> Vec<&'a str> {
    [&["deploy", "a", "--image", IMAGE][..], flags].concat()
}

/// `seeds --selector app=x` followed by `flags`.
fn seeds_x<'a>(flags: &[&'a str]) -> Vec<&'a str> {
    [&["seeds", "--selector", "app=x"][..], flags].concat()
}

/// Every refusal of bad input, by its rule; none sends a request.
#[test]
fn refusals() {
    let fx = Fixture::start();
    let upper = format!("x@sha256:{}", "A".repeat(64));
    let env_file = fx.dir().join("bad.env");
    std::fs::write(&env_file, "GOOD=1\nnot a line\n").expect("write");
    let env_file = env_file.display().to_string();
    let no_ns = fx.kubeconfig_without_namespace();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "v1_agent_whitespace",
            vec!["deploy", " lead", "--image", IMAGE],
        ),
        ("v1_agent_empty", vec!["deploy", "", "--image", IMAGE]),
        (
            "v1_agent_control",
            vec!["deploy", "bell\u{7}", "--image", IMAGE],
        ),
        (
            "i5_tag_only_image",
            vec!["deploy", "a", "--image", "nginx:latest"],
        ),
        (
            "i7_uppercase_digest",
            vec!["deploy", "a", "--image", &upper],
        ),
        ("i8_empty_image", vec!["deploy", "a", "--image", "   "]),
        ("v6_bad_env_key", on_a(&["--env", "1LEADING=x"])),
        ("v5_timeout_too_long", on_a(&["--timeout", "601"])),
        ("v5_timeout_zero", on_a(&["--timeout", "0"])),
        ("v5_timeout_fraction", on_a(&["--timeout", "1.5s"])),
        ("v11_run_as_root", on_a(&["--run-as-user", "0"])),
        ("v10_env_file_line", on_a(&["--env-file", &env_file])),
        (
            "v3_namespace",
            vec!["--namespace=Bad_NS", "deploy", "a", "--image", IMAGE],
        ),
        (
            "status_shape_without_image",
            vec!["status", "a", "--cpu-limit", "3"],
        ),
        (
            "status_tag_only_image",
            vec!["status", "a", "--image", "nginx:latest"],
        ),
        (
            "seeds_both_ports",
            seeds_x(&["--port", "1", "--port-name", "p"]),
        ),
        ("seeds_no_port", seeds_x(&[])),
        (
            "seeds_blank_selector",
            vec!["seeds", "--selector", " ", "--port", "1"],
        ),
        ("seeds_blank_port_name", seeds_x(&["--port-name", " "])),
    ];
    for (name, args) in cases {
        let run = fx.apiary(&args);
        assert_eq!(run.code, 2, "{name}: {run:?}");
        insta::assert_snapshot!(format!("refused_{name}"), message(Some(&fx), &run));
    }
    let run = run_with_kubeconfig(fx.dir(), &no_ns, &deploy(IMAGE, &[]));
    assert_eq!(run.code, 2, "{run:?}");
    insta::assert_snapshot!("refused_v4_no_namespace", message(Some(&fx), &run));
    fx.assert_no_requests("refusals");
}

// ---- the race rows

/// E5, E6, E7: the lost-race rows need a second deploy to create the pod between this deploy's
/// observation and its create, which no simulator fault can stage from outside the process; the
/// CLI prints their `DeployError` text unchanged (the renderer passes every non-request row
/// through), so that text is pinned here.
#[test]
fn e5_e6_e7_race_rows() {
    use apiary_classify::condition::LatestCondition;
    use apiary_classify::deploy::DeployError;
    let rows = [
        (
            "e5_race_deadline",
            DeployError::RaceDeadlineExceeded {
                pod: POD.into(),
                deadline: std::time::Duration::from_secs(600),
                condition: LatestCondition::NoneReported,
            },
        ),
        (
            "e6_winner_deleting",
            DeployError::WinnerDeleting { pod: POD.into() },
        ),
        (
            "e7_winner_failed",
            DeployError::WinnerFailed {
                pod: POD.into(),
                condition: LatestCondition::NoneReported,
            },
        ),
    ];
    for (name, error) in rows {
        let text = format!("error: {error}");
        assert_shape(&text);
        insta::assert_snapshot!(name, text);
    }
}
