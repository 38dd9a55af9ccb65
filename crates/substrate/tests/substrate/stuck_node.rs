//! The node of a pod that will not go away (deploy.md § When a pod will not go away), through the
//! real driver over the in-memory fake: once an undeploy's wait outlasts the pod's grace period,
//! the driver reads the pod's node once and the one warning says what its `Ready` condition shows;
//! a user who may not read nodes gets no node sentence and no error; a node that is gone is said to
//! be gone; a pod that names no node, or goes within its grace, causes no node read at all.
//!
//! Layer: integration tests of the real driver over the fake (no I/O), with a small recording
//! `tracing::Subscriber` written here. Asserts on the warning and on the fake's call log.

#[allow(
    dead_code,
    reason = "each conformance test binary uses a different subset"
)]
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::conformance_support::*;
use apiary_classify::failure::Operation;
use apiary_cluster_model::NodeReady;
use apiary_substrate::driver::{UndeployOptions, undeploy};
use apiary_substrate::fake::{Call, FakeCluster, server_error};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

const NODE: &str = "node-7";
const FINALIZER: &str = "example.com/hold";

/// Every event at WARN or above, as `<LEVEL> <message>`, in order.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Warnings {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        if *event.metadata().level() <= Level::WARN {
            let mut message = Message(String::new());
            event.record(&mut message);
            let line = format!("{} {}", event.metadata().level(), message.0);
            self.0.lock().expect("lines").push(line);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Our running pod, bound to [`NODE`] (or to no node), with a finalizer nobody removes.
fn held_pod(fake: &FakeCluster, node: Option<&str>) {
    let (pod, secret, _) = attempt(&config(), 1);
    fake.insert_secret(secret).expect("secret inserted");
    let mut pod = shaped(fake, pod, &Shape::Running);
    pod.metadata.finalizers = Some(vec![FINALIZER.into()]);
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = node.map(str::to_owned);
    }
    fake.insert_pod(pod).expect("pod inserted");
}

/// Undeploy with a 300 s deadline (the pod's grace is 60 s); the warnings it logged and the
/// error it ended with, as text.
fn undeploy_stuck(fake: &FakeCluster) -> (Vec<String>, String) {
    let options = UndeployOptions {
        deadline: Duration::from_secs(300),
        ..UndeployOptions::default()
    };
    let recorder = Warnings::default();
    let lines = Arc::clone(&recorder.0);
    let outcome =
        tracing::subscriber::with_default(recorder, || run(undeploy(fake, &agent(), &options)));
    let error = outcome.expect_err("the finalizer keeps the pod past the deadline");
    let lines = lines.lock().expect("lines").clone();
    (lines, error.to_string())
}

/// A fake in [`NS`] with [`NODE`], whose `Ready` condition is `ready`.
fn fake_with_node(ready: NodeReady) -> FakeCluster {
    let fake = FakeCluster::new(NS);
    fake.add_node(NODE, Some(ready)).expect("node");
    fake
}

/// Undeploy as [`undeploy_stuck`] does: the one warning that the pod is still terminating (there
/// must be exactly one), every warning logged, and the error.
fn the_stuck_warning(fake: &FakeCluster) -> (String, Vec<String>, String) {
    let (lines, error) = undeploy_stuck(fake);
    let warnings = stuck(&lines);
    assert_eq!(warnings.len(), 1, "{lines:?}");
    let warning = warnings[0].clone();
    (warning, lines, error)
}

/// The warnings that explain a pod that will not go away.
fn stuck(lines: &[String]) -> Vec<&String> {
    lines
        .iter()
        .filter(|l| l.contains("is still terminating"))
        .collect()
}

/// The node reads the driver made.
fn node_reads(fake: &FakeCluster) -> Vec<String> {
    fake.calls()
        .iter()
        .filter(|c| matches!(c, Call::GetNode { .. }))
        .map(Call::summary)
        .collect()
}

/// A stuck pod with finalizers on a NotReady node: the one warning names the finalizer, the node
/// and its Ready condition with its reason; the node was read once, only after the grace.
#[test]
fn a_stuck_pod_on_a_not_ready_node_names_the_node_and_its_condition() {
    let fake = fake_with_node(NodeReady::ready());
    fake.set_node_ready(NODE, NodeReady::with("False", Some("KubeletNotReady")))
        .expect("scripted");
    held_pod(&fake, Some(NODE));
    let (warning, _, _) = the_stuck_warning(&fake);
    assert!(warning.starts_with(&format!("WARN pod {NS}/{POD} is still terminating after ")));
    assert!(
        warning.contains(&format!("it has finalizers ({FINALIZER})")),
        "{warning}"
    );
    assert!(
        warning.contains(&format!(
            "its node {NODE} is not Ready (Ready=False, KubeletNotReady), so its kubelet cannot \
             confirm the containers have stopped"
        )),
        "{warning}"
    );
    assert!(
        warning.contains(&format!("kubectl get node {NODE} -o yaml")),
        "{warning}"
    );
    assert_eq!(node_reads(&fake), [format!("get_node {NODE}")]);
    // The read came after the grace: after the fenced delete and a poll past 60 s.
    let calls = fake.calls();
    let read_at = calls.iter().position(|c| matches!(c, Call::GetNode { .. }));
    let delete_at = calls
        .iter()
        .position(|c| matches!(c, Call::DeletePod { .. }));
    assert!(delete_at < read_at, "{calls:?}");
    assert_eq!(
        fake.pod_deletes().len(),
        1,
        "one graceful fenced delete, never a force"
    );
}

/// A node whose `Ready` is `Unknown` (the node controller's word for a silent kubelet) is named
/// with that status; a Ready node adds nothing about the node.
#[test]
fn ready_unknown_is_named_and_ready_true_adds_nothing() {
    let fake = fake_with_node(NodeReady::with("Unknown", Some("NodeStatusUnknown")));
    held_pod(&fake, Some(NODE));
    let (warning, _, _) = the_stuck_warning(&fake);
    assert!(
        warning.contains(&format!(
            "its node {NODE} is not Ready (Ready=Unknown, NodeStatusUnknown)"
        )),
        "{warning}"
    );

    let fake = fake_with_node(NodeReady::ready());
    held_pod(&fake, Some(NODE));
    let (warning, _, _) = the_stuck_warning(&fake);
    assert!(!warning.contains("its node"), "{warning}");
    assert!(warning.contains(FINALIZER), "{warning}");
    assert_eq!(node_reads(&fake).len(), 1);
}

/// A user who may not read nodes: the node was asked once, the warning has no node sentence
/// (it still names the finalizer and the commands), no other warning appears, and the
/// operation's error is the deadline's, with nothing about nodes.
#[test]
fn a_forbidden_node_read_says_nothing_about_the_node_and_fails_nothing() {
    let fake = fake_with_node(NodeReady::with("False", Some("KubeletNotReady")));
    fake.deny_node_reads(true);
    held_pod(&fake, Some(NODE));
    let (warning, lines, error) = the_stuck_warning(&fake);
    assert_eq!(lines.len(), 1, "no other warning: {lines:?}");
    assert!(!warning.contains("its node"), "{warning}");
    assert!(!warning.contains("Ready"), "{warning}");
    assert!(!warning.contains("forbidden"), "{warning}");
    assert!(warning.contains(FINALIZER), "{warning}");
    assert!(
        warning.contains(&format!("kubectl get node {NODE} -o yaml")),
        "{warning}"
    );
    assert_eq!(node_reads(&fake), [format!("get_node {NODE}")]);
    assert!(!error.contains("node"), "{error}");
}

/// A node that no longer exists is said to be gone.
#[test]
fn a_missing_node_is_said_to_be_gone() {
    let fake = FakeCluster::new(NS);
    held_pod(&fake, Some(NODE));
    let (warning, _, _) = the_stuck_warning(&fake);
    assert!(
        warning.contains(&format!(
            "its node {NODE} no longer exists, so no kubelet will confirm the containers have \
             stopped"
        )),
        "{warning}"
    );
}

/// Any other failure of the node read (a 500 here) says nothing about the node and fails
/// nothing: the warning is still given once.
#[test]
fn a_failed_node_read_says_nothing_about_the_node() {
    let fake = fake_with_node(NodeReady::with("False", None));
    fake.fail_next(Operation::GetNode, server_error(Operation::GetNode, NODE));
    held_pod(&fake, Some(NODE));
    let (warning, _, error) = the_stuck_warning(&fake);
    assert!(!warning.contains("its node"), "{warning}");
    assert!(!error.contains("node"), "{error}");
    assert_eq!(node_reads(&fake).len(), 1, "never retried by the driver");
}

/// A pod that names no node causes no node read, and its warning names no node command.
#[test]
fn an_unbound_pod_causes_no_node_read() {
    let fake = FakeCluster::new(NS);
    held_pod(&fake, None);
    let (warning, _, _) = the_stuck_warning(&fake);
    assert!(!warning.contains("kubectl get node"), "{warning}");
    assert!(node_reads(&fake).is_empty(), "{:?}", fake.calls());
}

/// A pod that goes within its grace is never reported, and its node is never read.
#[test]
fn a_pod_that_goes_in_its_grace_causes_no_node_read() {
    let fake = fake_with_node(NodeReady::with("False", None));
    seed(&fake, &config(), 1, &Shape::Running, true);
    let recorder = Warnings::default();
    let lines = Arc::clone(&recorder.0);
    tracing::subscriber::with_default(recorder, || {
        run(undeploy(&fake, &agent(), &UndeployOptions::default())).expect("undeployed");
    });
    assert!(stuck(&lines.lock().expect("lines")).is_empty());
    assert!(node_reads(&fake).is_empty(), "{:?}", fake.calls());
}
