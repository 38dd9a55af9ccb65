//! The driver's tracing spans and progress hand-off: deploy, undeploy and gc each run in one span
//! named after the operation with the agent and the pod as fields, every message of the operation
//! (preflight GC's included) is inside it, messages do not repeat those fields, and each change of
//! observed state reaches the caller's progress sink once, logged once.
//!
//! Layer: integration tests of the real driver over the in-memory fake (no I/O), with a
//! recording `tracing::Subscriber` written here (no subscriber crate needed). Decides nothing.

#[allow(
    dead_code,
    reason = "each conformance test binary uses a different subset"
)]
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::conformance_support::*;
use apiary_classify::status::{Progress, StatusState};
use apiary_substrate::driver::{
    DeployOptions, UndeployOptions, deploy, deploy_watching, gc, status, undeploy,
    undeploy_watching,
};
use apiary_substrate::fake::FakeCluster;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// What the recorder saw, in order: `span <name> <field=value ...>` when a span is created and
/// `event <span name or -> <message>` for each event.
#[derive(Clone, Default)]
struct Recorder {
    next: Arc<AtomicU64>,
    names: Arc<Mutex<HashMap<u64, String>>>,
    stack: Arc<Mutex<Vec<u64>>>,
    lines: Arc<Mutex<Vec<String>>>,
}

/// `name=value` pairs of a span's fields, and an event's message.
#[derive(Default)]
struct Fields {
    pairs: Vec<String>,
    message: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.pairs.push(format!("{}={value:?}", field.name()));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.pairs.push(format!("{}={value}", field.name()));
        }
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let name = attrs.metadata().name().to_owned();
        self.lines
            .lock()
            .unwrap()
            .push(format!("span {name} {}", fields.pairs.join(" ")));
        self.names.lock().unwrap().insert(id, name);
        Id::from_u64(id)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let current = self.stack.lock().unwrap().last().copied();
        let span = current
            .and_then(|id| self.names.lock().unwrap().get(&id).cloned())
            .unwrap_or_else(|| "-".to_owned());
        self.lines
            .lock()
            .unwrap()
            .push(format!("event {span} {}", fields.message));
    }

    fn enter(&self, span: &Id) {
        self.stack.lock().unwrap().push(span.into_u64());
    }

    fn exit(&self, _: &Id) {
        self.stack.lock().unwrap().pop();
    }
}

impl Recorder {
    /// Run `f` with this recorder as the thread's subscriber and return what it saw.
    fn record(f: impl FnOnce()) -> Vec<String> {
        let recorder = Recorder::default();
        let lines = Arc::clone(&recorder.lines);
        tracing::subscriber::with_default(recorder, f);
        lines.lock().unwrap().clone()
    }
}

fn spans(lines: &[String]) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| l.starts_with("span "))
        .map(String::as_str)
        .collect()
}

fn events(lines: &[String]) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| l.starts_with("event "))
        .map(String::as_str)
        .collect()
}

/// No message repeats the agent or the pod: the span carries them.
fn assert_messages_name_neither(lines: &[String]) {
    for line in events(lines) {
        assert!(!line.contains(POD), "{line}");
        assert!(!line.contains(AGENT), "{line}");
    }
}

/// A deploy runs in one `deploy` span with the agent and pod; every event, the preflight GC's
/// and the progress lines included, is inside it.
#[test]
fn deploy_runs_in_one_span_naming_agent_and_pod() {
    let fake = FakeCluster::new(NS);
    let config = config();
    let lines = Recorder::record(|| {
        run(deploy(&fake, &config, &DeployOptions::for_config(&config))).expect("deployed");
    });
    assert_eq!(
        spans(&lines),
        [format!("span deploy agent={AGENT} pod={POD}")]
    );
    let events = events(&lines);
    assert!(!events.is_empty());
    assert!(
        events.iter().all(|e| e.starts_with("event deploy ")),
        "{events:?}"
    );
    assert!(
        events.contains(&"event deploy created the pod"),
        "{events:?}"
    );
    assert!(events.contains(&"event deploy pod started"), "{events:?}");
    assert_messages_name_neither(&lines);
}

/// An undeploy runs in one `undeploy` span with the agent and pod.
#[test]
fn undeploy_runs_in_one_span_naming_agent_and_pod() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Running, true);
    let lines = Recorder::record(|| {
        run(undeploy(&fake, &agent(), &UndeployOptions::default())).expect("undeployed");
    });
    assert_eq!(
        spans(&lines),
        [format!("span undeploy agent={AGENT} pod={POD}")]
    );
    assert!(
        events(&lines)
            .iter()
            .all(|e| e.starts_with("event undeploy ")),
        "{lines:?}"
    );
    assert_messages_name_neither(&lines);
}

/// A GC pass runs in one `gc` span with the agent and pod.
#[test]
fn gc_runs_in_one_span_naming_agent_and_pod() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Terminated(1), true);
    let lines = Recorder::record(|| {
        run(gc(&fake, &agent(), false)).expect("collected");
    });
    assert_eq!(spans(&lines), [format!("span gc agent={AGENT} pod={POD}")]);
    assert!(
        events(&lines).iter().all(|e| e.starts_with("event gc ")),
        "{lines:?}"
    );
}

/// Each change of observed state reaches the deploy's progress sink once, in order, ending in
/// `started`, and is logged once as `pod <state>`.
#[test]
fn deploy_hands_each_change_to_the_progress_sink_once() {
    let fake = FakeCluster::new(NS);
    let config = config();
    let mut seen: Vec<StatusState> = Vec::new();
    let lines = Recorder::record(|| {
        run(deploy_watching(
            &fake,
            &config,
            &DeployOptions::for_config(&config),
            &mut |p: &Progress| seen.push(p.state),
        ))
        .expect("deployed");
    });
    assert_eq!(seen.last(), Some(&StatusState::Started), "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] != w[1]), "{seen:?}");
    let logged: Vec<&str> = events(&lines)
        .into_iter()
        .filter_map(|e| e.strip_prefix("event deploy pod "))
        .collect();
    let states: Vec<&str> = seen.iter().map(|s| s.as_str()).collect();
    assert_eq!(logged, states);
}

/// Undeploy hands its progress to the sink too: the pod is seen going.
#[test]
fn undeploy_hands_progress_to_the_sink() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Running, true);
    let mut seen: Vec<StatusState> = Vec::new();
    run(undeploy_watching(
        &fake,
        &agent(),
        &UndeployOptions::default(),
        &mut |p: &Progress| seen.push(p.state),
    ))
    .expect("undeployed");
    assert!(!seen.is_empty());
}

/// Our running pod, bound to `node-7`, with a finalizer nobody removes, stored in the fake.
fn held_pod(fake: &FakeCluster) -> k8s_openapi::api::core::v1::Pod {
    let (pod, secret, _) = attempt(&config(), 1);
    fake.insert_secret(secret).expect("secret inserted");
    let mut pod = shaped(fake, pod, &Shape::Running);
    pod.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = Some("node-7".into());
    }
    fake.insert_pod(pod).expect("pod inserted")
}

/// The warnings of `lines` that explain a pod that will not go away.
fn stuck_warnings(lines: &[String]) -> Vec<&str> {
    events(lines)
        .into_iter()
        .filter(|e| e.contains("is still terminating"))
        .collect()
}

/// deploy.md § When a pod will not go away, on the fake: an undeploy waiting for a pod a finalizer
/// keeps says once, after the pod's 60 s grace, that it is still terminating, names the finalizer
/// and the kubectl commands, and never forces: its only pod delete is the one fenced graceful
/// delete.
#[test]
fn undeploy_explains_a_pod_a_finalizer_keeps() {
    let fake = FakeCluster::new(NS);
    let pod = held_pod(&fake);
    let options = UndeployOptions {
        deadline: std::time::Duration::from_secs(300),
        ..UndeployOptions::default()
    };
    let mut outcome = None;
    let lines = Recorder::record(|| {
        outcome = Some(run(undeploy(&fake, &agent(), &options)));
    });
    let outcome = outcome.expect("ran");
    assert!(outcome.is_err(), "the pod never goes: {outcome:?}");
    let warnings = stuck_warnings(&lines);
    assert_eq!(warnings.len(), 1, "{lines:?}");
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .expect("bound");
    let warning = warnings[0];
    assert!(
        warning.starts_with(&format!(
            "event undeploy pod {NS}/{POD} is still terminating after "
        )),
        "{warning}"
    );
    assert!(warning.contains("(grace period 60 s)"), "{warning}");
    assert!(
        warning.contains("it has finalizers (example.com/hold)"),
        "{warning}"
    );
    assert!(
        warning.ends_with(&format!(
            "kubectl describe pod -n {NS} {POD} and kubectl get node {node} -o yaml"
        )),
        "{warning}"
    );
    assert_eq!(fake.pod_deletes().len(), 1, "one graceful fenced delete");
    assert!(fake.pod(POD).is_some(), "still there: apiary never forces");
}

/// A pod that goes within its grace is never reported as stuck.
#[test]
fn undeploy_of_a_pod_that_goes_in_its_grace_warns_nothing() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Running, true);
    let lines = Recorder::record(|| {
        run(undeploy(&fake, &agent(), &UndeployOptions::default())).expect("undeployed");
    });
    assert!(stuck_warnings(&lines).is_empty(), "{lines:?}");
}

/// Deploy's wait for a deleting pod's disappearance explains it too when a finalizer keeps it
/// past its grace, and the deploy ends without deleting anything.
#[test]
fn deploy_waiting_for_a_held_pod_explains_it() {
    let fake = FakeCluster::new(NS);
    let pod = held_pod(&fake);
    let (uid, rv) = fence_of(&pod);
    fake.with_model(|m| {
        let fence = apiary_cluster_model::Preconditions {
            uid: Some(uid),
            resource_version: Some(rv),
        };
        m.delete_pod(NS, POD, &fence, None).expect("marked");
    });
    let config = config_with(|c| c.timeout = std::time::Duration::from_secs(120));
    let lines = Recorder::record(|| {
        let _ = run(deploy(&fake, &config, &DeployOptions::for_config(&config)));
    });
    let warnings = stuck_warnings(&lines);
    assert_eq!(warnings.len(), 1, "{lines:?}");
    assert!(warnings[0].starts_with("event deploy pod "), "{warnings:?}");
    assert!(warnings[0].contains("example.com/hold"), "{warnings:?}");
    assert!(fake.pod_deletes().is_empty());
}

/// A preflight GC that cannot run is one warning inside the deploy's span, naming the refusal,
/// and the deploy goes on. Kills the mutants of `preflight_gc`'s return value in
/// `driver/deploy.rs` (`vec![]`, `vec![String::new()]`, `vec!["xyzzy".into()]`): each loses or
/// replaces the warning (r18 in conformance_deploy.rs catches them too, through the GC that no
/// longer runs; this test pins the warning itself).
#[test]
fn a_skipped_preflight_gc_is_one_warning_in_the_deploy_span() {
    let fake = FakeCluster::new(NS);
    let config = config();
    let forbidden = fake.forbidden(apiary_classify::failure::Operation::ListPods, "pods");
    fake.fail_next(apiary_classify::failure::Operation::ListPods, forbidden);
    let lines = Recorder::record(|| {
        run(deploy(&fake, &config, &DeployOptions::for_config(&config))).expect("deployed");
    });
    let gc: Vec<&str> = events(&lines)
        .into_iter()
        .filter(|e| e.contains("preflight gc"))
        .collect();
    assert_eq!(gc.len(), 1, "{lines:?}");
    assert!(
        gc[0].starts_with("event deploy preflight gc skipped: "),
        "{lines:?}"
    );
    assert!(
        gc[0].contains("forbidden") || gc[0].contains("Forbidden"),
        "{lines:?}"
    );
    assert!(
        events(&lines)
            .iter()
            .all(|e| e.len() > "event deploy ".len()),
        "an empty message: {lines:?}"
    );
}

/// deploy.md § Replacing a live agent and § status: a replacing deploy logs once that the
/// environment differs (its keys as a field, never a value) and nothing when it is the same;
/// `status` compares the same way but logs nothing of it, its report carries the keys.
#[test]
fn only_a_deploy_logs_the_environment_comparison() {
    let fake = FakeCluster::new(NS);
    let first = config_with(|c| c.env.set("TOKEN", "one"));
    run(deploy(&fake, &first, &DeployOptions::for_config(&first))).expect("deployed");
    let rotated = config_with(|c| c.env.set("TOKEN", "two"));
    let mut report = None;
    let lines = Recorder::record(|| {
        report = Some(run(status(&fake, &agent(), Some(&rotated))).expect("status"));
    });
    assert_eq!(
        report.and_then(|r| r.env_differs),
        Some(vec!["TOKEN".to_owned()])
    );
    assert!(
        events(&lines).iter().all(|l| !l.contains("environment")),
        "{lines:?}"
    );
    let same = Recorder::record(|| {
        run(deploy(
            &fake,
            &first,
            &DeployOptions::for_config(&first).replacing(true),
        ))
        .expect("kept");
    });
    assert!(
        events(&same).iter().all(|l| !l.contains("environment")),
        "{same:?}"
    );
    let replaced = Recorder::record(|| {
        run(deploy(
            &fake,
            &rotated,
            &DeployOptions::for_config(&rotated).replacing(true),
        ))
        .expect("replaced");
    });
    let said: Vec<&str> = events(&replaced)
        .into_iter()
        .filter(|l| l.contains("environment differs"))
        .collect();
    assert_eq!(said.len(), 1, "{replaced:?}");
    assert!(!said[0].contains("two"), "a value logged: {said:?}");
}

/// A refused Secret delete is a warning only where no report lists it: the undeploy says the
/// Secret is left for a later GC pass, while the GC pass lists the failure in its report and
/// warns nothing (the machine's request says which, so the performer never asks which
/// operation runs).
#[test]
fn a_failed_secret_delete_is_a_warning_only_where_no_report_lists_it() {
    use apiary_classify::failure::Operation;
    let left = |lines: &[String]| {
        events(lines)
            .into_iter()
            .filter(|e| e.contains("left for later collection"))
            .count()
    };
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Terminated(1), true);
    let refused = fake.forbidden(Operation::DeleteSecret, "secrets");
    fake.fail_next(Operation::DeleteSecret, refused.clone());
    let mut report = None;
    let lines = Recorder::record(|| {
        report = Some(run(gc(&fake, &agent(), false)).expect("collected"));
    });
    assert_eq!(report.map(|r| r.failures.len()), Some(1), "{lines:?}");
    assert_eq!(left(&lines), 0, "{lines:?}");
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Running, true);
    fake.fail_next(Operation::DeleteSecret, refused);
    let lines = Recorder::record(|| {
        let _ = run(undeploy(&fake, &agent(), &UndeployOptions::default()));
    });
    assert_eq!(left(&lines), 1, "{lines:?}");
}
