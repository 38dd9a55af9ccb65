//! End-to-end: `apiary logs` (deploy.md § logs) through the built binary against the simulator's
//! scripted container logs: the whole log, `--tail`, the json form, `-f` until the container ends,
//! `-f` across a broken stream (every line exactly once, in order), the refusals of a missing pod,
//! a foreign pod and a container that never started (exit 1), and bad flags (exit 2, nothing sent).

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use crate::common::{Fixture, IMAGE, NAMESPACE, image};
use apiary_cluster_model::kubelet::PodScript;

const AGENT: &str = "Research Bot #1";
const POD: &str = "apiary-research-bot-1-72bea12366a3";

/// Put `agent`'s apiary-built pod and Secret in place, run by `script`, writing `lines` at the
/// given model offsets.
fn agent_with_log(fx: &Fixture, agent: &str, script: PodScript, lines: &[(u64, &str)]) {
    let attempt = apiary_substrate::build::build_attempt(
        &fx.config(agent, IMAGE),
        apiary_substrate::naming::Generation::from_u32(3),
    );
    let pod = attempt.pod.metadata.name.clone().expect("pod name");
    fx.with_model(|m| {
        m.script_pod_log(
            NAMESPACE,
            &pod,
            "agent",
            lines
                .iter()
                .map(|(at, text)| (Duration::from_secs(*at), (*text).to_owned())),
        );
        m.insert_secret(attempt.secret).expect("secret");
        m.script_pods_named(NAMESPACE, &pod, script);
        m.create_pod(NAMESPACE, attempt.pod).expect("pod");
    });
    fx.wait_pod(&pod, "started", |p| {
        crate::common::container_state(p) == "running"
            || crate::common::container_state(p) == "terminated"
    });
    fx.clear_requests();
}

fn started() -> PodScript {
    PodScript::Start {
        after: Duration::ZERO,
    }
}

/// The whole log, then `--tail 1`, then the json document.
#[test]
fn logs_prints_the_agent_log() {
    let fx = Fixture::start();
    agent_with_log(
        &fx,
        AGENT,
        started(),
        &[(0, "hello"), (0, "from the agent")],
    );
    let run = fx.apiary(&["logs", AGENT]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "hello\nfrom the agent\n");
    let tail = fx.apiary(&["logs", AGENT, "--tail", "1"]);
    assert_eq!(tail.stdout, "from the agent\n");
    let json = fx.apiary(&["-o", "json", "logs", AGENT]);
    assert_eq!(json.code, 0, "{json:?}");
    let doc = json.json();
    assert_eq!(doc["pod"], POD);
    assert_eq!(doc["namespace"], NAMESPACE);
    assert_eq!(doc["lines"], serde_json::json!(["hello", "from the agent"]));
    let logged: Vec<_> = fx
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/log"))
        .map(|r| r.query.clone())
        .collect();
    assert_eq!(logged.len(), 3, "{logged:?}");
    assert!(
        logged.iter().all(|q| q.contains("container=agent")),
        "{logged:?}"
    );
}

/// `-f` prints each line as the container writes it and ends, exit 0, when it exits.
#[test]
fn follow_ends_when_the_container_ends() {
    let fx = Fixture::start();
    agent_with_log(
        &fx,
        AGENT,
        PodScript::Exit {
            after: Duration::ZERO,
            run_for: Duration::from_secs(60),
            exit_code: 0,
        },
        &[(0, "one"), (20, "two"), (40, "three")],
    );
    let run = fx.apiary(&["logs", AGENT, "-f"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "one\ntwo\nthree\n");
}

/// `-f` keeps following across a broken stream: after the break it reconnects and every line
/// arrives exactly once, in order, until the container ends.
#[test]
fn follow_survives_a_broken_stream() {
    let fx = Fixture::start();
    agent_with_log(
        &fx,
        AGENT,
        PodScript::Exit {
            after: Duration::ZERO,
            run_for: Duration::from_secs(600),
            exit_code: 0,
        },
        &[(0, "first"), (300, "second"), (590, "third")],
    );
    let mut child = fx
        .command(&["logs", AGENT, "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("apiary runs");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("first line");
    assert_eq!(first, "first\n");
    fx.sim().break_watches();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).expect("rest");
    let status = child.wait().expect("exit");
    assert_eq!(status.code(), Some(0));
    assert_eq!(rest, "second\nthird\n");
    let opened = fx
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/log"))
        .count();
    assert!(
        opened >= 2,
        "the stream was reopened: {opened} log requests"
    );
}

/// A missing pod, a foreign pod and a container that never started: exit 1 with a message
/// that names the pod and what to do; nothing on stdout.
#[test]
fn missing_foreign_and_never_started_are_clear_failures() {
    let fx = Fixture::start();
    let missing = fx.apiary(&["logs", AGENT]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(missing.stdout.is_empty());
    assert!(missing.stderr.contains("has no pod"), "{}", missing.stderr);
    let other = fx.insert_attempt("someone else", IMAGE, true, false);
    fx.insert_foreign_pod(&other.pod, POD);
    let foreign = fx.apiary(&["logs", AGENT]);
    assert_eq!(foreign.code, 1, "{foreign:?}");
    assert!(
        foreign.stderr.contains("not apiary's pod"),
        "{}",
        foreign.stderr
    );
    assert!(
        !fx.requests().iter().any(|r| r.path.ends_with("/log")),
        "a foreign pod's log is never read"
    );
    fx.insert_attempt("waiter", &image("agent-never-starts"), true, false);
    let waiting = fx.apiary(&["logs", "waiter"]);
    assert_eq!(waiting.code, 1, "{waiting:?}");
    assert!(
        waiting
            .stderr
            .contains("has not started: it is waiting (ContainerCreating)"),
        "{}",
        waiting.stderr
    );
    let json = fx.apiary(&["-o", "json", "logs", "waiter"]);
    assert_eq!(json.code, 1);
    assert!(
        json.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("has not started"))
    );
}

/// Bad `--since` and `--tail` values are exit 2 before any request.
#[test]
fn bad_flags_are_refused_before_any_request() {
    let fx = Fixture::start();
    for args in [
        vec!["logs", AGENT, "--since", "5x"],
        vec!["logs", AGENT, "--since", "0s"],
        vec!["logs", AGENT, "--since", ""],
        vec!["logs", AGENT, "--tail", "many"],
        vec!["logs", AGENT, "--tail", "-3"],
        vec!["logs", ""],
    ] {
        let run = fx.apiary(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stdout.is_empty());
    }
    let since = fx.apiary(&["logs", AGENT, "--since", "5x"]);
    assert!(since.stderr.contains("--since"), "{}", since.stderr);
    fx.assert_no_requests("logs refusals");
}
