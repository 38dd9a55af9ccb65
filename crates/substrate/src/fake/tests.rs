//! Unit tests of the fake substrate: the apiserver behaviour it must reproduce (stamping, 409 on
//! a taken name, stale fence → PreconditionFailed, graceful deletion on the virtual clock,
//! terminal pods removed at once), the scripted winner, scripted answers, poll hooks and the
//! ordered call log. The fixture objects here are minimal hand-built pods: these tests pin the
//! fake, not apiary's templates. No I/O; futures are polled once and must be ready.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvFromSource, PodSpec, PodStatus, SecretEnvSource};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use std::sync::Mutex;
use std::time::Duration;

use apiary_classify::failure::Operation;
use apiary_classify::verify::PodDeletion;
use apiary_cluster_model::kubelet::PodScript;
use chrono::DateTime;
use k8s_openapi::api::core::v1::{Pod, Secret};

use super::*;
use crate::fake::proof::{pod_deletion, secret_deletion};
use crate::substrate::{CreateAnswer, DeleteAnswer, NamespaceFailure, Substrate};

const NS: &str = "agents";
const SELECTOR: &str = "apiary.dev/agent=abc,app.kubernetes.io/managed-by=apiary";

use crate::fake::run_now as run;

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("apiary.dev/agent".to_owned(), "abc".to_owned()),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            "apiary".to_owned(),
        ),
    ])
}

fn pod(name: &str, secret: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            labels: Some(labels()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "agent".into(),
                image: Some("registry.example.com/team/agent@sha256:aaaa".into()),
                env_from: secret.map(|s| {
                    vec![EnvFromSource {
                        secret_ref: Some(SecretEnvSource {
                            name: s.into(),
                            optional: Some(false),
                        }),
                        ..EnvFromSource::default()
                    }]
                }),
                ..Container::default()
            }],
            restart_policy: Some("Never".into()),
            termination_grace_period_seconds: Some(60),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn secret(name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            labels: Some(labels()),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([(
            "TOKEN".to_owned(),
            "SUPERSECRET-VALUE".to_owned(),
        )])),
        immutable: Some(true),
        ..Secret::default()
    }
}

/// The deletion an observation of `pod` authorises (its name, uid and resourceVersion).
fn fence_of(pod: &Pod) -> PodDeletion {
    deletion_of(pod, pod.metadata.name.as_deref().unwrap())
}

/// The deletion an observation of `pod` under `name` authorises.
fn deletion_of(pod: &Pod, name: &str) -> PodDeletion {
    pod_deletion(
        name,
        pod.metadata.uid.as_deref().unwrap(),
        pod.metadata.resource_version.as_deref().unwrap(),
    )
}

fn agent_running(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == "agent"))
        .and_then(|c| c.state.as_ref())
        .is_some_and(|s| s.running.is_some())
}

fn waiting_reason(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == "agent"))
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.waiting.as_ref())
        .and_then(|w| w.reason.clone())
}

fn rv(pod: &Pod) -> u64 {
    pod.metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// Creates stamp uid and a resourceVersion from one increasing counter; the stored object is
/// the request plus those stamps.
#[test]
fn create_stamps_uid_and_resource_version() {
    let fake = FakeCluster::new(NS);
    assert_eq!(
        run(fake.create_secret(&secret("p-1"))),
        Ok(CreateAnswer::Created)
    );
    assert_eq!(
        run(fake.create_pod(&pod("p", Some("p-1")))),
        Ok(CreateAnswer::Created)
    );
    let s = fake.secret("p-1").unwrap();
    let p = run(fake.get_pod("p")).unwrap().unwrap();
    assert!(s.metadata.uid.is_some() && p.metadata.uid.is_some());
    assert_ne!(s.metadata.uid, p.metadata.uid);
    assert!(rv(&p) > s.metadata.resource_version.unwrap().parse::<u64>().unwrap());
    assert_eq!(
        p.metadata.creation_timestamp,
        Some(Time(fake.model().now()))
    );
    assert_eq!(p.metadata.labels, Some(labels()));
}

/// A taken name answers AlreadyExists (409) for pods and Secrets, leaving the first object.
#[test]
fn taken_name_answers_already_exists() {
    let fake = FakeCluster::new(NS);
    run(fake.create_pod(&pod("p", None))).unwrap();
    let uid = fake.pod("p").unwrap().metadata.uid;
    assert_eq!(
        run(fake.create_pod(&pod("p", None))),
        Ok(CreateAnswer::AlreadyExists)
    );
    assert_eq!(fake.pod("p").unwrap().metadata.uid, uid);
    run(fake.create_secret(&secret("s"))).unwrap();
    assert_eq!(
        run(fake.create_secret(&secret("s"))),
        Ok(CreateAnswer::AlreadyExists)
    );
}

/// A delete with a stale fence (the pod changed since the observation) answers
/// PreconditionFailed and leaves the pod; the current fence is accepted.
#[test]
fn stale_fence_answers_precondition_failed() {
    let fake = FakeCluster::new(NS);
    run(fake.create_pod(&pod("p", None))).unwrap();
    let observed = run(fake.get_pod("p")).unwrap().unwrap();
    run(fake.sleep(Duration::from_secs(2)));
    let now = run(fake.get_pod("p")).unwrap().unwrap();
    assert!(rv(&now) > rv(&observed), "the kubelet moved the pod on");
    assert_eq!(
        run(fake.delete_pod(&fence_of(&observed))),
        Ok(DeleteAnswer::PreconditionFailed)
    );
    let other_uid = pod_deletion(
        "p",
        "someone-else",
        now.metadata.resource_version.as_deref().unwrap(),
    );
    assert_eq!(
        run(fake.delete_pod(&other_uid)),
        Ok(DeleteAnswer::PreconditionFailed)
    );
    assert!(fake.pod("p").is_some());
    assert_eq!(
        run(fake.delete_pod(&fence_of(&now))),
        Ok(DeleteAnswer::Accepted)
    );
    assert_eq!(
        run(fake.delete_pod(&deletion_of(&now, "nope"))),
        Ok(DeleteAnswer::NotFound)
    );
}

/// Graceful deletion: a running pod stays visible with deletionTimestamp (phase Running) for
/// its 60 s grace on the virtual clock, then disappears.
#[test]
fn graceful_deletion_on_virtual_clock() {
    let fake = FakeCluster::new(NS);
    run(fake.create_pod(&pod("p", None))).unwrap();
    run(fake.sleep(Duration::from_secs(2)));
    let running = run(fake.get_pod("p")).unwrap().unwrap();
    assert!(agent_running(&running));
    assert_eq!(
        run(fake.delete_pod(&fence_of(&running))),
        Ok(DeleteAnswer::Accepted)
    );
    let marked = run(fake.get_pod("p")).unwrap().unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(60));
    assert_eq!(
        marked.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Running")
    );
    run(fake.sleep(Duration::from_secs(59)));
    assert!(
        run(fake.get_pod("p")).unwrap().is_some(),
        "visible through the grace"
    );
    run(fake.sleep(Duration::from_secs(1)));
    assert_eq!(run(fake.get_pod("p")), Ok(None));
    assert_eq!(fake.elapsed(), Duration::from_secs(62));
}

/// Terminal pods (phase Failed) are removed at once by a delete.
#[test]
fn terminal_pod_removed_at_once() {
    let fake = FakeCluster::new(NS);
    let mut failed = pod("p", None);
    failed.status = Some(PodStatus {
        phase: Some("Failed".into()),
        ..PodStatus::default()
    });
    if let Some(spec) = failed.spec.as_mut() {
        spec.node_name = Some("node-1".into());
    }
    let inserted = fake.insert_pod(failed).unwrap();
    assert_eq!(
        run(fake.delete_pod(&fence_of(&inserted))),
        Ok(DeleteAnswer::Accepted)
    );
    assert_eq!(run(fake.get_pod("p")), Ok(None));
    assert_eq!(fake.elapsed(), Duration::ZERO);
}

/// The scripted winner: absent at observation, present at create; the create answers
/// AlreadyExists and the winner (not the loser's pod) is what a read returns.
#[test]
fn scripted_winner_wins_the_create_race() {
    let fake = FakeCluster::new(NS);
    let mut winner = pod("p", Some("p-winner"));
    winner.metadata.uid = Some("winner-uid".into());
    fake.race_next_pod_create(winner);
    assert_eq!(run(fake.get_pod("p")), Ok(None), "absent at observation");
    assert_eq!(
        run(fake.create_pod(&pod("p", Some("p-loser")))),
        Ok(CreateAnswer::AlreadyExists)
    );
    let seen = run(fake.get_pod("p")).unwrap().unwrap();
    assert_eq!(seen.metadata.uid.as_deref(), Some("winner-uid"));
    let env_from = &seen.spec.unwrap().containers[0].env_from.clone().unwrap()[0];
    assert_eq!(env_from.secret_ref.as_ref().unwrap().name, "p-winner");
    // The race is scripted once: the next create behaves normally again.
    run(fake.create_pod(&pod("q", None))).unwrap();
    assert!(fake.pod("q").is_some());
}

/// A scripted winner can follow a kubelet script (ContainerCreating, running from 4 s).
#[test]
fn scripted_winner_with_script_starts_later() {
    let fake = FakeCluster::new(NS);
    fake.race_next_pod_create_with_script(
        pod("p", None),
        PodScript::Start {
            after: Duration::from_secs(4),
        },
    );
    run(fake.create_pod(&pod("p", None))).unwrap();
    run(fake.sleep(Duration::from_secs(2)));
    let creating = run(fake.get_pod("p")).unwrap().unwrap();
    assert_eq!(
        waiting_reason(&creating).as_deref(),
        Some("ContainerCreating")
    );
    run(fake.sleep(Duration::from_secs(2)));
    assert!(agent_running(&run(fake.get_pod("p")).unwrap().unwrap()));
}

/// The call log records every call in order, deletes with their fences and Secret deletes
/// with their uids; the write log filters the reads and sleeps out.
#[test]
fn call_log_is_ordered() {
    let fake = FakeCluster::new(NS);
    run(fake.ensure_namespace()).unwrap();
    run(fake.list_pods(SELECTOR)).unwrap();
    run(fake.list_secrets(SELECTOR)).unwrap();
    run(fake.get_pod("p")).unwrap();
    run(fake.create_secret(&secret("p-1"))).unwrap();
    run(fake.create_pod(&pod("p", Some("p-1")))).unwrap();
    run(fake.sleep(Duration::from_secs(2)));
    let p = run(fake.get_pod("p")).unwrap().unwrap();
    run(fake.secret_exists("p-1")).unwrap();
    run(fake.delete_pod(&fence_of(&p))).unwrap();
    let uid = fake.secret("p-1").unwrap().metadata.uid.unwrap();
    run(fake.delete_secret(&secret_deletion("p-1", &uid))).unwrap();
    run(fake.wait_for_pod_change("p", Some("7"), Duration::from_millis(500)));
    let f = fence_of(&p);
    assert_eq!(
        fake.call_summaries(),
        [
            "ensure_namespace agents".to_owned(),
            format!("list_pods {SELECTOR}"),
            format!("list_secrets {SELECTOR}"),
            "get_pod p".to_owned(),
            "create_secret p-1".to_owned(),
            "create_pod p".to_owned(),
            "sleep 2s".to_owned(),
            "get_pod p".to_owned(),
            "secret_exists p-1".to_owned(),
            format!(
                "delete_pod p uid={} rv={}",
                f.fence().uid(),
                f.fence().resource_version()
            ),
            format!("delete_secret p-1 uid={uid}"),
            "wait_for_pod_change p rv=7 max=0.5s".to_owned(),
        ]
    );
    assert_eq!(
        fake.mutation_summaries(),
        [
            "ensure_namespace agents".to_owned(),
            "create_secret p-1".to_owned(),
            "create_pod p".to_owned(),
            format!(
                "delete_pod p uid={} rv={}",
                f.fence().uid(),
                f.fence().resource_version()
            ),
            format!("delete_secret p-1 uid={uid}"),
        ]
    );
    assert_eq!(
        fake.pod_deletes(),
        vec![("p".to_owned(), f.fence().clone())]
    );
    assert_eq!(fake.secret_deletes(), vec![("p-1".to_owned(), uid)]);
    assert_eq!(fake.creates_of_secrets().len(), 1);
    assert_eq!(
        fake.creates_of_pods()[0].metadata.name.as_deref(),
        Some("p")
    );
    assert_eq!(fake.sleeps(), vec![Duration::from_secs(2)]);
    assert_eq!(fake.polls(), 2);
    fake.clear_calls();
    assert!(fake.calls().is_empty());
}

/// The call log's Debug never shows a Secret value (only names and keys).
#[test]
fn call_debug_redacts_secret_values() {
    let fake = FakeCluster::new(NS);
    run(fake.create_secret(&secret("p-1"))).unwrap();
    let debug = format!("{:?}", fake.calls());
    assert!(debug.contains("p-1") && debug.contains("TOKEN"), "{debug}");
    assert!(!debug.contains("SUPERSECRET"), "{debug}");
}

/// Scripted answers are consumed in order per request kind; the model is untouched by a
/// scripted answer and touched by LandThenFail.
#[test]
fn scripted_answers_in_order() {
    let fake = FakeCluster::new(NS);
    fake.pass_next(Operation::CreatePod);
    fake.fail_next(
        Operation::CreatePod,
        fake.quota_exceeded(Operation::CreatePod, "pod/b"),
    );
    fake.land_then_fail_next(
        Operation::CreatePod,
        transport_failure(Operation::CreatePod, "pod/c"),
    );
    fake.answer_next_create_pod(CreateAnswer::AlreadyExists);
    assert_eq!(
        run(fake.create_pod(&pod("a", None))),
        Ok(CreateAnswer::Created)
    );
    let quota = run(fake.create_pod(&pod("b", None))).unwrap_err();
    assert_eq!(quota.reason(), Some("Forbidden"));
    assert!(quota.to_string().contains("exceeded quota"), "{quota}");
    assert!(fake.pod("b").is_none(), "a refusal writes nothing");
    let lost = run(fake.create_pod(&pod("c", None))).unwrap_err();
    assert_eq!(lost.reason(), None, "a transport failure carries no reason");
    assert!(fake.pod("c").is_some(), "the create landed");
    assert_eq!(
        run(fake.create_pod(&pod("d", None))),
        Ok(CreateAnswer::AlreadyExists)
    );
    assert!(fake.pod("d").is_none());
    assert_eq!(
        run(fake.create_pod(&pod("e", None))),
        Ok(CreateAnswer::Created)
    );
    assert_eq!(
        fake.creates_of_pods().len(),
        5,
        "scripted calls are logged too"
    );
}

/// R6's shape: GC's delete answers PreconditionFailed (pod untouched), the next delete with the
/// same fence is performed.
#[test]
fn scripted_delete_outcome_leaves_model() {
    let fake = FakeCluster::new(NS);
    let mut dead = pod("p", None);
    dead.metadata.resource_version = Some("100".into());
    dead.status = Some(PodStatus {
        phase: Some("Failed".into()),
        ..PodStatus::default()
    });
    let dead = fake.insert_pod(dead).unwrap();
    assert_eq!(dead.metadata.resource_version.as_deref(), Some("100"));
    fake.answer_next_delete_pod(DeleteAnswer::PreconditionFailed);
    let f = fence_of(&dead);
    assert_eq!(
        run(fake.delete_pod(&f)),
        Ok(DeleteAnswer::PreconditionFailed)
    );
    assert!(fake.pod("p").is_some());
    assert_eq!(run(fake.delete_pod(&f)), Ok(DeleteAnswer::Accepted));
    assert!(fake.pod("p").is_none());
    assert_eq!(fake.pod_deletes().len(), 2);
    assert!(
        fake.pod_deletes()
            .iter()
            .all(|(_, f)| f.resource_version() == "100")
    );
}

/// R7's shape: a hook before the delete starts the pod, so the delete's fence is stale and the
/// model itself answers PreconditionFailed.
#[test]
fn before_hook_changes_model_between_read_and_delete() {
    let fake = FakeCluster::new(NS);
    let mut dead = pod("p", None);
    dead.status = Some(PodStatus {
        phase: Some("Failed".into()),
        ..PodStatus::default()
    });
    fake.insert_pod(dead).unwrap();
    let observed = run(fake.get_pod("p")).unwrap().unwrap();
    fake.before_next(Operation::DeletePod, |m| {
        m.start_pod(NS, "p").unwrap();
    });
    assert_eq!(
        run(fake.delete_pod(&fence_of(&observed))),
        Ok(DeleteAnswer::PreconditionFailed)
    );
    assert!(agent_running(&fake.pod("p").unwrap()));
}

/// Injected list and namespace failures; a forbidden message names verb, resource and namespace.
#[test]
fn injected_failures() {
    let fake = FakeCluster::new(NS);
    fake.fail_next(
        Operation::ListPods,
        fake.forbidden(Operation::ListPods, "pods"),
    );
    let err = run(fake.list_pods(SELECTOR)).unwrap_err();
    assert_eq!(err.reason(), Some("Forbidden"));
    assert!(
        err.to_string().contains("cannot list resource \"pods\""),
        "{err}"
    );
    assert!(err.to_string().contains(NS));
    assert!(
        run(fake.list_pods(SELECTOR)).is_ok(),
        "only the next call fails"
    );
    fake.fail_next_ensure_namespace(NamespaceFailure::CreateForbidden);
    assert_eq!(
        run(fake.ensure_namespace()),
        Err(NamespaceFailure::CreateForbidden)
    );
    fake.fail_next(
        Operation::EnsureNamespace,
        server_error(Operation::GetNamespace, "namespace/agents"),
    );
    assert!(matches!(
        run(fake.ensure_namespace()),
        Err(NamespaceFailure::Failed(_))
    ));
    fake.fail_next_n(
        Operation::GetPod,
        2,
        &transport_failure(Operation::GetPod, "pod/p"),
    );
    assert!(run(fake.get_pod("p")).is_err());
    assert!(run(fake.get_pod("p")).is_err());
    assert_eq!(run(fake.get_pod("p")), Ok(None));
}

/// A step that cannot answer the request kind is a test-setup mistake and panics at once.
#[test]
#[should_panic(expected = "cannot answer")]
fn mismatched_step_panics() {
    FakeCluster::new(NS).queue(Operation::DeletePod, Step::Create(CreateAnswer::Created));
}

/// Without the namespace, creates answer 404 for the namespace (E11's trigger); ensure creates
/// it.
#[test]
fn missing_namespace_until_ensured() {
    let fake = FakeCluster::without_namespace(NS);
    let err = run(fake.create_secret(&secret("s"))).unwrap_err();
    assert_eq!(err.operation(), Some(Operation::CreateSecret));
    assert_eq!(err.object(), format!("{NS}/s"));
    assert_eq!(err.code(), Some(404));
    assert_eq!(err.reason(), Some("NotFound"));
    assert_eq!(
        err.server_message(),
        Some("namespaces \"agents\" not found")
    );
    run(fake.ensure_namespace()).unwrap();
    assert_eq!(
        run(fake.create_secret(&secret("s"))),
        Ok(CreateAnswer::Created)
    );
}

/// Poll hooks run after the n-th poll's clock advance, before the caller re-observes.
#[test]
fn poll_hooks_run_at_their_poll() {
    let fake = FakeCluster::new(NS);
    fake.script_pods_named("p", PodScript::NeverStarts);
    run(fake.create_pod(&pod("p", None))).unwrap();
    fake.on_poll(3, |m| {
        m.start_pod(NS, "p").unwrap();
    });
    let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    fake.on_every_poll(move |n, _| log.lock().unwrap().push(n));
    for poll in 1..=3 {
        let before = run(fake.get_pod("p")).unwrap().unwrap();
        assert!(!agent_running(&before), "not before poll 3 (poll {poll})");
        run(fake.sleep(Duration::from_secs(2)));
    }
    let after = run(fake.get_pod("p")).unwrap().unwrap();
    assert!(agent_running(&after));
    let started = after.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .running
        .unwrap()
        .started_at
        .unwrap();
    assert_eq!(
        to_chrono(started.0),
        fake.now(),
        "the hook ran after the advance"
    );
    assert_eq!(*seen.lock().unwrap(), [1, 2, 3]);
}

/// wait_for_pod_change returns when the kubelet changes the pod (not after max), at once when
/// the rv already differs, and after max when nothing changes; each is a poll.
#[test]
fn wait_for_pod_change_wakes_on_change() {
    let fake = FakeCluster::new(NS);
    fake.script_pods_named(
        "p",
        PodScript::Start {
            after: Duration::from_secs(5),
        },
    );
    run(fake.create_pod(&pod("p", None))).unwrap();
    let created = fake.pod("p").unwrap();
    let stale = created.metadata.resource_version.clone().unwrap();
    run(fake.wait_for_pod_change("p", Some(&stale), Duration::from_secs(30)));
    assert_eq!(
        fake.elapsed(),
        Duration::ZERO,
        "scheduled at creation: a change at once"
    );
    let creating = fake.pod("p").unwrap();
    let rv_now = creating.metadata.resource_version.clone().unwrap();
    run(fake.wait_for_pod_change("p", Some(&rv_now), Duration::from_secs(30)));
    assert_eq!(fake.elapsed(), Duration::from_secs(5), "woke at the start");
    assert!(agent_running(&fake.pod("p").unwrap()));
    let rv_running = fake.pod("p").unwrap().metadata.resource_version.unwrap();
    run(fake.wait_for_pod_change("p", Some(&rv_running), Duration::from_secs(2)));
    assert_eq!(
        fake.elapsed(),
        Duration::from_secs(7),
        "nothing changed: max"
    );
    run(fake.wait_for_pod_change("absent", None, Duration::from_secs(2)));
    assert_eq!(fake.elapsed(), Duration::from_secs(9));
    assert_eq!(fake.polls(), 4);
}

/// The server clock is absent by default, and settable to the model clock, an offset or a
/// fixed instant.
#[test]
fn server_clock_options() {
    let fake = FakeCluster::new(NS);
    assert_eq!(run(fake.list_pods(SELECTOR)).unwrap().server_now, None);
    fake.set_server_clock(ServerClock::Model);
    assert_eq!(
        run(fake.list_pods(SELECTOR)).unwrap().server_now,
        Some(fake.now())
    );
    fake.set_server_clock(ServerClock::ModelOffset(-30));
    assert_eq!(
        run(fake.list_pods(SELECTOR)).unwrap().server_now,
        Some(fake.now() - chrono::Duration::seconds(30))
    );
    let fixed = DateTime::from_timestamp(1_000, 0).unwrap();
    fake.set_server_clock(ServerClock::Fixed(fixed));
    assert_eq!(
        run(fake.list_pods(SELECTOR)).unwrap().server_now,
        Some(fixed)
    );
}

/// Lists filter by the label selector; a malformed selector is a 400.
#[test]
fn lists_filter_by_selector() {
    let fake = FakeCluster::new(NS);
    run(fake.create_pod(&pod("mine", None))).unwrap();
    let mut other = pod("other", None);
    other.metadata.labels = Some(BTreeMap::from([("app".to_owned(), "x".to_owned())]));
    run(fake.create_pod(&other)).unwrap();
    run(fake.create_secret(&secret("s"))).unwrap();
    let pods = run(fake.list_pods(SELECTOR)).unwrap().items;
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0].metadata.name.as_deref(), Some("mine"));
    assert_eq!(run(fake.list_secrets(SELECTOR)).unwrap().len(), 1);
    assert!(run(fake.list_secrets("app=x")).unwrap().is_empty());
    let err = run(fake.list_pods("a in (")).unwrap_err();
    assert_eq!(err.reason(), Some("BadRequest"));
}

/// Secrets: existence reads, uid-fenced deletes (a wrong uid is PreconditionFailed).
#[test]
fn secret_exists_and_uid_fenced_delete() {
    let fake = FakeCluster::new(NS);
    assert_eq!(run(fake.secret_exists("s")), Ok(false));
    run(fake.create_secret(&secret("s"))).unwrap();
    assert_eq!(run(fake.secret_exists("s")), Ok(true));
    assert_eq!(
        run(fake.delete_secret(&secret_deletion("s", "wrong"))),
        Ok(DeleteAnswer::PreconditionFailed)
    );
    let uid = fake.secret("s").unwrap().metadata.uid.unwrap();
    assert_eq!(
        run(fake.delete_secret(&secret_deletion("s", &uid))),
        Ok(DeleteAnswer::Accepted)
    );
    assert_eq!(
        run(fake.delete_secret(&secret_deletion("s", &uid))),
        Ok(DeleteAnswer::NotFound)
    );
}

/// The model's kubelet checks the envFrom Secret: CreateContainerConfigError without it,
/// running once it exists.
#[test]
fn kubelet_checks_env_secret() {
    let fake = FakeCluster::new(NS);
    run(fake.create_pod(&pod("p", Some("p-1")))).unwrap();
    run(fake.sleep(Duration::from_secs(2)));
    let stuck = run(fake.get_pod("p")).unwrap().unwrap();
    assert_eq!(
        waiting_reason(&stuck).as_deref(),
        Some("CreateContainerConfigError")
    );
    run(fake.create_secret(&secret("p-1"))).unwrap();
    run(fake.sleep(Duration::from_secs(2)));
    assert!(agent_running(&run(fake.get_pod("p")).unwrap().unwrap()));
}

/// Inserted Secrets keep a chosen creationTimestamp (GC age scenarios).
#[test]
fn insert_secret_with_age() {
    let fake = FakeCluster::new(NS);
    let mut old = secret("old");
    let created = fake.model().now() - k8s_openapi::jiff::SignedDuration::from_secs(1200);
    old.metadata.creation_timestamp = Some(Time(created));
    fake.insert_secret(old).unwrap();
    let listed = run(fake.list_secrets(SELECTOR)).unwrap();
    assert_eq!(listed[0].metadata.creation_timestamp, Some(Time(created)));
}

/// elapsed counts virtual time only, and restarts on reset_elapsed (R18); request latency
/// advances the clock per request.
#[test]
fn elapsed_and_latency() {
    let fake = FakeCluster::new(NS);
    run(fake.get_pod("p")).unwrap();
    assert_eq!(fake.elapsed(), Duration::ZERO);
    run(fake.sleep(Duration::from_secs(3)));
    assert_eq!(fake.elapsed(), Duration::from_secs(3));
    fake.reset_elapsed();
    assert_eq!(fake.elapsed(), Duration::ZERO);
    fake.set_request_latency(Duration::from_millis(100));
    run(fake.get_pod("p")).unwrap();
    run(fake.list_pods(SELECTOR)).unwrap();
    assert_eq!(fake.elapsed(), Duration::from_millis(200));
    fake.advance(Duration::from_secs(1));
    assert_eq!(fake.elapsed(), Duration::from_millis(1200));
    assert_eq!(fake.polls(), 1, "advance is not a poll");
}

/// Crash scripts through the fake: exit 1, reason Error, phase Failed, on every create.
#[test]
fn crash_script_on_every_create() {
    let fake = FakeCluster::new(NS);
    fake.script_pods_named(
        "p",
        PodScript::Exit {
            after: Duration::from_secs(1),
            run_for: Duration::ZERO,
            exit_code: 1,
        },
    );
    run(fake.create_pod(&pod("p", None))).unwrap();
    run(fake.sleep(Duration::from_secs(2)));
    let p = run(fake.get_pod("p")).unwrap().unwrap();
    assert_eq!(
        p.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Failed")
    );
    assert_eq!(
        run(fake.delete_pod(&fence_of(&p))),
        Ok(DeleteAnswer::Accepted)
    );
    assert!(fake.pod("p").is_none(), "terminal: removed at once");
    run(fake.create_pod(&pod("p", None))).unwrap();
    run(fake.sleep(Duration::from_secs(2)));
    assert_eq!(
        fake.pod("p").unwrap().status.and_then(|s| s.phase),
        Some("Failed".to_owned())
    );
}

/// Objects from the real builder (`crate::build`) go through the fake unchanged: the agent's
/// selector finds them, the kubelet starts the pod once its attempt Secret exists, and a delete
/// applies the builder's 60 s grace.
#[test]
fn real_builder_objects_round_trip() {
    use crate::build::build_attempt;
    use crate::config::DeployConfig;
    use crate::naming::{AgentIdentity, Generation};

    let agent = AgentIdentity::new("Research Bot #1").unwrap();
    let image = format!("registry.example.com/team/agent@sha256:{}", "a".repeat(64));
    let config = DeployConfig::new(NS, image).validate(&agent).unwrap();
    let attempt = build_attempt(&config, Generation::from_u32(0x1234_abcd));
    let fake = FakeCluster::new(NS);
    run(fake.create_secret(&attempt.secret)).unwrap();
    run(fake.create_pod(&attempt.pod)).unwrap();
    run(fake.sleep(Duration::from_secs(2)));
    let listed = run(fake.list_pods(&agent.selector())).unwrap().items;
    assert_eq!(listed.len(), 1);
    let pod = &listed[0];
    assert_eq!(pod.metadata.name, Some(agent.pod_name()));
    assert!(agent_running(pod));
    assert_eq!(pod.metadata.annotations, attempt.pod.metadata.annotations);
    assert_eq!(run(fake.list_secrets(&agent.selector())).unwrap().len(), 1);
    run(fake.delete_pod(&fence_of(pod))).unwrap();
    let marked = fake.pod(&agent.pod_name()).unwrap();
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(60));
}
