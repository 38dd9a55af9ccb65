//! Unit tests pinning the model's apiserver and kubelet semantics (deploy.md § Semantics relied
//! on): stamping, the shared resourceVersion counter, 404/409/410 answers, graceful deletion on
//! the model clock, pagination, the watch log and every kubelet script. Pure; no I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStatus, EnvFromSource, PodSpec,
    SecretEnvSource,
};

use super::*;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Namespace, Pod, PodStatus, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::error::{Kind, ModelError};
use crate::kubelet::PodScript;
use crate::kubelet::PullFailure;

const NS: &str = "agents";
const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaa";

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn model() -> ClusterModel {
    let mut m = ClusterModel::default();
    m.ensure_namespace(NS);
    m
}

fn pod_named(name: &str, image: &str, secret: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("app".to_owned(), name.to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "agent".into(),
                image: Some(image.into()),
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
            termination_grace_period_seconds: Some(60),
            restart_policy: Some("Never".into()),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn secret_named(name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([("K".to_owned(), "v".to_owned())])),
        immutable: Some(true),
        ..Secret::default()
    }
}

fn rv_of(meta: &ObjectMeta) -> u64 {
    meta.resource_version.as_deref().unwrap().parse().unwrap()
}

fn agent_state(pod: &Pod) -> ContainerState {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == "agent"))
        .and_then(|c| c.state.clone())
        .expect("agent container state")
}

fn waiting_reason(pod: &Pod) -> Option<String> {
    agent_state(pod).waiting.and_then(|w| w.reason)
}

fn waiting_message(pod: &Pod) -> Option<String> {
    agent_state(pod).waiting.and_then(|w| w.message)
}

fn phase(pod: &Pod) -> Option<String> {
    pod.status.as_ref().and_then(|s| s.phase.clone())
}

/// A create stamps uid, resourceVersion and creationTimestamp from the model clock, and every
/// object kind shares one increasing resourceVersion counter.
#[test]
fn create_stamps_uid_rv_and_creation_timestamp() {
    let mut m = model();
    m.advance(secs(5));
    let ns_rv = rv_of(&m.get_namespace(NS).unwrap().metadata);
    let s = m.create_secret(NS, secret_named("s")).unwrap();
    let p = m.create_pod(NS, pod_named("p", IMAGE, Some("s"))).unwrap();
    assert!(rv_of(&s.metadata) > ns_rv);
    assert_eq!(rv_of(&p.metadata), rv_of(&s.metadata) + 1);
    assert_eq!(m.resource_version(), rv_of(&p.metadata));
    assert_ne!(s.metadata.uid, p.metadata.uid);
    assert!(p.metadata.uid.as_deref().is_some_and(|u| u.len() == 36));
    assert_eq!(p.metadata.creation_timestamp, Some(Time(m.now())));
    assert_eq!(p.metadata.namespace.as_deref(), Some(NS));
    assert_eq!(phase(&p).as_deref(), Some("Pending"));
    assert_eq!(
        p.status.as_ref().and_then(|s| s.qos_class.as_deref()),
        Some("BestEffort")
    );
}

/// A create ignores any uid/resourceVersion/status the request carries.
#[test]
fn create_ignores_client_stamps() {
    let mut m = model();
    let mut pod = pod_named("p", IMAGE, None);
    pod.metadata.uid = Some("client-uid".into());
    pod.metadata.resource_version = Some("999999".into());
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        ..PodStatus::default()
    });
    let created = m.create_pod(NS, pod).unwrap();
    assert_ne!(created.metadata.uid.as_deref(), Some("client-uid"));
    assert_ne!(rv_of(&created.metadata), 999_999);
    assert_eq!(phase(&created).as_deref(), Some("Pending"));
}

/// Creating into a missing namespace answers 404 for the namespace, as the real apiserver does.
#[test]
fn create_in_missing_namespace_is_namespace_not_found() {
    let mut m = ClusterModel::default();
    for err in [
        m.create_secret("ghost", secret_named("s")).unwrap_err(),
        m.create_pod("ghost", pod_named("p", IMAGE, None))
            .unwrap_err(),
    ] {
        assert_eq!(err.code(), 404);
        assert_eq!(err.reason(), "NotFound");
        assert_eq!(err.to_string(), "namespaces \"ghost\" not found");
    }
    assert_eq!(m.resource_version(), 0, "a refused create changes nothing");
}

/// A taken name answers 409 AlreadyExists for every kind, and the stored object is unchanged.
#[test]
fn taken_name_is_already_exists() {
    let mut m = model();
    let first = m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    let err = m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap_err();
    assert_eq!((err.code(), err.reason()), (409, "AlreadyExists"));
    assert_eq!(err.to_string(), "pods \"p\" already exists");
    assert_eq!(m.get_pod(NS, "p").unwrap().metadata.uid, first.metadata.uid);
    m.create_secret(NS, secret_named("s")).unwrap();
    let err = m.create_secret(NS, secret_named("s")).unwrap_err();
    assert_eq!(err.to_string(), "secrets \"s\" already exists");
    let err = m
        .create_namespace(Namespace {
            metadata: ObjectMeta {
                name: Some(NS.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        })
        .unwrap_err();
    assert_eq!(err.reason(), "AlreadyExists");
}

/// Objects without a name are Invalid (422); an object naming another namespace is 400.
#[test]
fn validation_refusals() {
    let mut m = model();
    let mut nameless = pod_named("p", IMAGE, None);
    nameless.metadata.name = None;
    let err = m.create_pod(NS, nameless).unwrap_err();
    assert_eq!((err.code(), err.reason()), (422, "Invalid"));
    let mut elsewhere = secret_named("s");
    elsewhere.metadata.namespace = Some("other".into());
    let err = m.create_secret(NS, elsewhere).unwrap_err();
    assert_eq!((err.code(), err.reason()), (400, "BadRequest"));
}

/// Secrets: stringData merged into data, type Opaque, immutable kept.
#[test]
fn secret_create_normalizes_string_data() {
    let mut m = model();
    let s = m.create_secret(NS, secret_named("s")).unwrap();
    assert_eq!(s.string_data, None);
    assert_eq!(
        s.data
            .as_ref()
            .and_then(|d| d.get("K"))
            .map(|b| b.0.clone()),
        Some(b"v".to_vec())
    );
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    assert_eq!(s.immutable, Some(true));
    assert_eq!(m.get_secret(NS, "s").unwrap(), s);
}

/// Delete preconditions: a wrong uid or resourceVersion answers 409 Conflict with the
/// apiserver's message and leaves the object; an absent object answers 404.
#[test]
fn delete_preconditions_conflict_and_not_found() {
    let mut m = model();
    let s = m.create_secret(NS, secret_named("s")).unwrap();
    let err = m
        .delete_secret(
            NS,
            "s",
            &Preconditions {
                uid: Some("other".into()),
                resource_version: None,
            },
        )
        .unwrap_err();
    assert_eq!((err.code(), err.reason()), (409, "Conflict"));
    assert!(err.to_string().starts_with(
        "Operation cannot be fulfilled on Secret \"s\": the UID in the precondition (other) \
         does not match the UID in record ("
    ));
    let p = m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    let stale = Preconditions {
        uid: p.metadata.uid.clone(),
        resource_version: Some("1".into()),
    };
    let err = m.delete_pod(NS, "p", &stale, None).unwrap_err();
    assert_eq!(err.reason(), "Conflict");
    assert!(
        err.to_string()
            .contains("the ResourceVersion in the precondition (1) does not match")
    );
    assert!(m.get_pod(NS, "p").is_ok());
    let ok = Preconditions {
        uid: s.metadata.uid.clone(),
        resource_version: None,
    };
    m.delete_secret(NS, "s", &ok).unwrap();
    let err = m.delete_secret(NS, "s", &ok).unwrap_err();
    assert_eq!((err.code(), err.reason()), (404, "NotFound"));
    assert_eq!(err.to_string(), "secrets \"s\" not found");
}

fn fence(pod: &Pod) -> Preconditions {
    Preconditions {
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
    }
}

/// Graceful deletion: a running pod gets deletionTimestamp = now + its grace (60 s) and a new
/// rv, stays visible (phase Running) through the grace, and is removed when it has elapsed.
#[test]
fn graceful_deletion_keeps_running_pod_for_its_grace() {
    let mut m = model();
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(2));
    let running = m.get_pod(NS, "p").unwrap();
    assert!(agent_state(&running).running.is_some());
    let deleted_at = m.now();
    let answer = m.delete_pod(NS, "p", &fence(&running), None).unwrap();
    let PodDeletion::Marked(marked) = answer else {
        panic!("a running pod must be marked, not removed: {answer:?}");
    };
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(60));
    assert_eq!(
        marked.metadata.deletion_timestamp,
        Some(Time(add(deleted_at, secs(60))))
    );
    assert!(rv_of(&marked.metadata) > rv_of(&running.metadata));
    m.advance(secs(59));
    let still = m.get_pod(NS, "p").unwrap();
    assert_eq!(phase(&still).as_deref(), Some("Running"));
    assert!(still.metadata.deletion_timestamp.is_some());
    m.advance(secs(1));
    assert_eq!(m.get_pod(NS, "p").unwrap_err().reason(), "NotFound");
}

/// Without terminationGracePeriodSeconds on an inserted pod the grace is 30 s; a create
/// defaults the field to 30.
#[test]
fn default_grace_is_30_seconds() {
    let mut m = model();
    let mut pod = pod_named("p", IMAGE, None);
    pod.metadata.namespace = Some(NS.into());
    if let Some(spec) = pod.spec.as_mut() {
        spec.termination_grace_period_seconds = None;
        spec.node_name = Some("node-1".into());
    }
    let inserted = m.insert_pod(pod).unwrap();
    let answer = m.delete_pod(NS, "p", &fence(&inserted), None).unwrap();
    assert_eq!(
        answer.pod().metadata.deletion_grace_period_seconds,
        Some(30)
    );
    m.advance(secs(29));
    assert!(m.get_pod(NS, "p").is_ok());
    m.advance(secs(1));
    assert!(m.get_pod(NS, "p").is_err());
    let mut fresh = pod_named("q", IMAGE, None);
    if let Some(spec) = fresh.spec.as_mut() {
        spec.termination_grace_period_seconds = None;
    }
    let created = m.create_pod(NS, fresh).unwrap();
    assert_eq!(
        created
            .spec
            .and_then(|s| s.termination_grace_period_seconds),
        Some(30)
    );
}

/// Terminal (Failed/Succeeded) and never-bound pods are removed at once: as on the real
/// apiserver (tests/differential.rs in apiserver-sim), a MODIFIED event writes the zero grace
/// (`deletionTimestamp` set, `deletionGracePeriodSeconds: 0`), then a DELETED event removes it,
/// and the answer carries that mark.
#[test]
fn terminal_and_unscheduled_pods_vanish_at_once() {
    let mut m = model();
    m.script_pods_named(
        NS,
        "crashed",
        PodScript::Exit {
            after: secs(1),
            run_for: Duration::ZERO,
            exit_code: 1,
        },
    );
    m.create_pod(NS, pod_named("crashed", IMAGE, None)).unwrap();
    m.script_pods_named(NS, "pending", PodScript::Unschedulable);
    m.create_pod(NS, pod_named("pending", IMAGE, None)).unwrap();
    m.advance(secs(2));
    for name in ["crashed", "pending"] {
        let pod = m.get_pod(NS, name).unwrap();
        let before = m.resource_version();
        let answer = m.delete_pod(NS, name, &fence(&pod), None).unwrap();
        let PodDeletion::Removed(removed) = answer else {
            panic!("{name}: {answer:?}");
        };
        assert_eq!(removed.metadata.deletion_grace_period_seconds, Some(0));
        assert_eq!(
            removed.metadata.deletion_timestamp.as_ref().map(|t| t.0),
            Some(m.now())
        );
        assert!(m.get_pod(NS, name).is_err(), "{name}");
        let events = m.events_since(before).unwrap();
        let types: Vec<EventType> = events.iter().map(|e| e.event_type).collect();
        assert_eq!(types, [EventType::Modified, EventType::Deleted], "{name}");
        assert_eq!(events[0].resource_version, before + 1);
        assert_eq!(events[1].resource_version, before + 2);
    }
}

/// A second delete of a marked pod changes nothing; grace 0 removes it at once.
#[test]
fn redelete_of_marked_pod() {
    let mut m = model();
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(2));
    let pod = m.get_pod(NS, "p").unwrap();
    let marked = m.delete_pod(NS, "p", &fence(&pod), None).unwrap();
    let again = m
        .delete_pod(NS, "p", &Preconditions::default(), None)
        .unwrap();
    assert_eq!(again, marked);
    let forced = m
        .delete_pod(NS, "p", &Preconditions::default(), Some(0))
        .unwrap();
    assert!(matches!(forced, PodDeletion::Removed(_)));
    assert!(m.get_pod(NS, "p").is_err());
}

/// The default script: scheduled (waiting ContainerCreating, no pod IP) at creation, running
/// with a 10.x pod IP after the 1 s start delay; each change a new rv and a MODIFIED event.
#[test]
fn default_script_starts_pod_with_real_shapes() {
    let mut m = model();
    let created = m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    let created_rv = rv_of(&created.metadata);
    m.settle();
    let creating = m.get_pod(NS, "p").unwrap();
    assert_eq!(
        waiting_reason(&creating).as_deref(),
        Some("ContainerCreating")
    );
    assert_eq!(phase(&creating).as_deref(), Some("Pending"));
    assert!(creating.spec.as_ref().unwrap().node_name.is_some());
    assert_eq!(creating.status.as_ref().unwrap().pod_ip, None);
    let t0 = m.now();
    m.advance(secs(5));
    let running = m.get_pod(NS, "p").unwrap();
    let started_at = agent_state(&running).running.and_then(|r| r.started_at);
    assert_eq!(
        started_at,
        Some(Time(add(t0, secs(1)))),
        "steps run at their due time"
    );
    assert_eq!(phase(&running).as_deref(), Some("Running"));
    let ip = running.status.as_ref().unwrap().pod_ip.clone().unwrap();
    assert!(ip.starts_with("10."), "{ip}");
    let status = &running
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0];
    assert!(status.ready);
    assert!(
        status
            .container_id
            .as_deref()
            .unwrap()
            .starts_with("containerd://")
    );
    let events = m.events_since(created_rv).unwrap();
    let kinds: Vec<_> = events
        .iter()
        .map(|e| (e.event_type, e.resource_version))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (EventType::Modified, created_rv + 1),
            (EventType::Modified, created_rv + 2)
        ]
    );
    assert_eq!(rv_of(&running.metadata), created_rv + 2);
}

/// Two pods get different IPs.
#[test]
fn pod_ips_are_distinct() {
    let mut m = model();
    m.create_pod(NS, pod_named("a", IMAGE, None)).unwrap();
    m.create_pod(NS, pod_named("b", IMAGE, None)).unwrap();
    m.advance(secs(2));
    let ip = |n| m.get_pod(NS, n).unwrap().status.unwrap().pod_ip.unwrap();
    assert_ne!(ip("a"), ip("b"));
}

/// A missing envFrom Secret holds the pod in CreateContainerConfigError (`secret "X" not
/// found`); creating the Secret lets it start.
#[test]
fn missing_secret_is_config_error_until_it_appears() {
    let mut m = model();
    m.create_pod(NS, pod_named("p", IMAGE, Some("p-1234abcd")))
        .unwrap();
    m.advance(secs(60));
    let stuck = m.get_pod(NS, "p").unwrap();
    assert_eq!(
        waiting_reason(&stuck).as_deref(),
        Some("CreateContainerConfigError")
    );
    assert_eq!(
        waiting_message(&stuck).as_deref(),
        Some("secret \"p-1234abcd\" not found")
    );
    let stuck_rv = rv_of(&stuck.metadata);
    m.advance(secs(60));
    assert_eq!(
        rv_of(&m.get_pod(NS, "p").unwrap().metadata),
        stuck_rv,
        "an unchanged status takes no new resourceVersion"
    );
    m.create_secret(NS, secret_named("p-1234abcd")).unwrap();
    m.settle();
    assert!(agent_state(&m.get_pod(NS, "p").unwrap()).running.is_some());
}

/// With the Secret present the container starts without passing through the config error.
#[test]
fn present_secret_starts_directly() {
    let mut m = model();
    m.create_secret(NS, secret_named("s")).unwrap();
    m.create_pod(NS, pod_named("p", IMAGE, Some("s"))).unwrap();
    m.advance(secs(1));
    let events = m.events_since(0).unwrap();
    assert!(events.iter().all(|e| {
        match &e.object {
            Object::Pod(p) => p
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .is_none_or(|c| {
                    c.iter().all(|c| {
                        c.state
                            .as_ref()
                            .and_then(|s| s.waiting.as_ref())
                            .is_none_or(|w| w.reason.as_deref() == Some("ContainerCreating"))
                    })
                }),
            _ => true,
        }
    }));
    assert!(agent_state(&m.get_pod(NS, "p").unwrap()).running.is_some());
}

/// `crash` images exit with code 1, reason Error, phase Failed — never observed running.
#[test]
fn crash_image_terminates_with_error() {
    let mut m = model();
    m.create_pod(NS, pod_named("p", "r.io/team/agent-crash@sha256:aa", None))
        .unwrap();
    m.advance(secs(1));
    let pod = m.get_pod(NS, "p").unwrap();
    let terminated = agent_state(&pod).terminated.expect("terminated");
    assert_eq!(terminated.exit_code, 1);
    assert_eq!(terminated.reason.as_deref(), Some("Error"));
    assert_eq!(phase(&pod).as_deref(), Some("Failed"));
}

/// An Exit script with a run time is observed running, then terminated; exit 0 is Succeeded.
#[test]
fn exit_script_runs_then_exits() {
    let mut m = model();
    m.script_pods_named(
        NS,
        "p",
        PodScript::Exit {
            after: secs(1),
            run_for: secs(10),
            exit_code: 0,
        },
    );
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(10));
    assert!(agent_state(&m.get_pod(NS, "p").unwrap()).running.is_some());
    m.advance(secs(1));
    let pod = m.get_pod(NS, "p").unwrap();
    let terminated = agent_state(&pod).terminated.expect("terminated");
    assert_eq!(terminated.reason.as_deref(), Some("Completed"));
    assert_eq!(phase(&pod).as_deref(), Some("Succeeded"));
}

/// Pull failures: ErrImagePull with the failure's message, then ImagePullBackOff, alternating.
#[test]
fn pull_failures_alternate_err_and_backoff() {
    for (repo, needle) in [
        ("pullfail-unauthorized", "401 Unauthorized"),
        ("pullfail-manifest", "@sha256:aa: not found"),
        (
            "pullfail-platform",
            "no match for platform in manifest: not found",
        ),
    ] {
        let mut m = model();
        let image = format!("r.io/team/{repo}@sha256:aa");
        m.create_pod(NS, pod_named("p", &image, None)).unwrap();
        m.advance(secs(1));
        let pod = m.get_pod(NS, "p").unwrap();
        assert_eq!(
            waiting_reason(&pod).as_deref(),
            Some("ErrImagePull"),
            "{repo}"
        );
        assert!(waiting_message(&pod).unwrap().contains(needle), "{repo}");
        m.advance(secs(1));
        let pod = m.get_pod(NS, "p").unwrap();
        assert_eq!(waiting_reason(&pod).as_deref(), Some("ImagePullBackOff"));
        assert!(waiting_message(&pod).unwrap().contains(needle));
        m.advance(secs(10));
        assert_eq!(
            waiting_reason(&m.get_pod(NS, "p").unwrap()).as_deref(),
            Some("ErrImagePull")
        );
        m.advance(secs(3600));
        assert_eq!(
            phase(&m.get_pod(NS, "p").unwrap()).as_deref(),
            Some("Pending")
        );
    }
}

/// Unschedulable: PodScheduled False with the scheduler's message; no node, no container status.
#[test]
fn unschedulable_shape() {
    let mut m = model();
    m.create_pod(NS, pod_named("p", "r.io/unschedulable@sha256:aa", None))
        .unwrap();
    m.advance(secs(600));
    let pod = m.get_pod(NS, "p").unwrap();
    let status = pod.status.clone().unwrap();
    let cond = &status.conditions.unwrap()[0];
    assert_eq!(
        (
            cond.type_.as_str(),
            cond.status.as_str(),
            cond.reason.as_deref()
        ),
        ("PodScheduled", "False", Some("Unschedulable"))
    );
    assert_eq!(
        cond.message.as_deref(),
        Some("0/3 nodes are available: 3 Insufficient memory.")
    );
    assert_eq!(status.container_statuses, None);
    assert_eq!(pod.spec.unwrap().node_name, None);
}

/// never-starts: ContainerCreating after an hour.
#[test]
fn never_starts_stays_container_creating() {
    let mut m = model();
    m.create_pod(NS, pod_named("p", "r.io/never-starts@sha256:aa", None))
        .unwrap();
    m.advance(secs(3600));
    let pod = m.get_pod(NS, "p").unwrap();
    assert_eq!(waiting_reason(&pod).as_deref(), Some("ContainerCreating"));
    assert_eq!(m.next_due(), None);
}

/// vanish: the pod is removed after the delay.
#[test]
fn vanish_removes_pod() {
    let mut m = model();
    m.script_pods_named(NS, "p", PodScript::Vanish { after: secs(3) });
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(2));
    assert!(m.get_pod(NS, "p").is_ok());
    m.advance(secs(1));
    assert_eq!(m.get_pod(NS, "p").unwrap_err().code(), 404);
}

/// Queued scripts are consumed one per create of that name; then the name script applies.
#[test]
fn queued_scripts_are_consumed_per_create() {
    let mut m = model();
    m.script_pods_named(NS, "p", PodScript::NeverStarts);
    m.queue_pod_scripts(NS, "p", [PodScript::Vanish { after: secs(1) }]);
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    assert_eq!(
        m.pod_script(NS, "p"),
        Some(PodScript::Vanish { after: secs(1) })
    );
    m.advance(secs(1));
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    assert_eq!(m.pod_script(NS, "p"), Some(PodScript::NeverStarts));
    m.set_pod_script(NS, "p", PodScript::Start { after: secs(4) })
        .unwrap();
    m.advance(secs(3));
    assert!(agent_state(&m.get_pod(NS, "p").unwrap()).waiting.is_some());
    m.advance(secs(1));
    assert!(agent_state(&m.get_pod(NS, "p").unwrap()).running.is_some());
}

/// The default script can be replaced.
#[test]
fn default_script_is_settable() {
    let mut m = model();
    m.set_default_script(Some(PodScript::NeverStarts));
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(100));
    assert_eq!(
        waiting_reason(&m.get_pod(NS, "p").unwrap()).as_deref(),
        Some("ContainerCreating")
    );
    m.set_default_script(None);
    m.set_start_delay(secs(7));
    m.create_pod(NS, pod_named("q", IMAGE, None)).unwrap();
    assert_eq!(
        m.pod_script(NS, "q"),
        Some(PodScript::Start { after: secs(7) })
    );
}

/// Pagination: limit pages in name order with remainingItemCount; the continue token resumes
/// after the last item; all pages together are the full list.
#[test]
fn list_pagination() {
    let mut m = model();
    for n in ["a", "b", "c", "d", "e"] {
        m.create_secret(NS, secret_named(n)).unwrap();
    }
    let mut options = ListOptions {
        limit: Some(2),
        ..ListOptions::default()
    };
    let first = m.list_secrets(Some(NS), &options).unwrap();
    let names = |p: &ListPage<Secret>| -> Vec<String> {
        p.items
            .iter()
            .map(|s| s.metadata.name.clone().unwrap())
            .collect()
    };
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(first.remaining_item_count, Some(3));
    m.create_secret(NS, secret_named("f")).unwrap();
    options.continue_token = first.continue_token.clone();
    let second = m.list_secrets(Some(NS), &options).unwrap();
    assert_eq!(names(&second), ["c", "d"]);
    assert_eq!(second.resource_version, first.resource_version);
    options.continue_token = second.continue_token.clone();
    options.limit = Some(10);
    let last = m.list_secrets(Some(NS), &options).unwrap();
    assert_eq!(names(&last), ["e", "f"]);
    assert_eq!(last.continue_token, None);
    assert_eq!(last.remaining_item_count, None);
    let all = m.list_secrets(None, &ListOptions::default()).unwrap();
    assert_eq!(all.items.len(), 6);
    assert_eq!(all.resource_version, m.resource_version().to_string());
}

/// An exact-size limit yields no continue token (boundary of `l < len`).
#[test]
fn limit_equal_to_count_has_no_continue() {
    let mut m = model();
    m.create_secret(NS, secret_named("a")).unwrap();
    m.create_secret(NS, secret_named("b")).unwrap();
    let page = m
        .list_secrets(
            Some(NS),
            &ListOptions {
                limit: Some(2),
                ..ListOptions::default()
            },
        )
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.continue_token, None);
}

/// As kube-apiserver pages over stored keys, not matches: a filtered page that fills its limit
/// carries a continue token while any key follows it, even one the selector rejects, and the
/// next page is then empty without a token (found against v1.20.2 by
/// crates/substrate-kube/tests/real_seeds.rs: 2,000 matches in pages of 500 took five LISTs).
#[test]
fn filled_filtered_page_continues_while_keys_remain() {
    let mut m = model();
    for (n, app) in [("a", "ring"), ("b", "ring"), ("z", "other")] {
        let mut secret = secret_named(n);
        secret.metadata.labels = Some([("app".to_owned(), app.to_owned())].into());
        m.create_secret(NS, secret).unwrap();
    }
    let mut options = ListOptions {
        label_selector: Some("app=ring".to_owned()),
        limit: Some(2),
        ..ListOptions::default()
    };
    let first = m.list_secrets(Some(NS), &options).unwrap();
    assert_eq!(first.items.len(), 2);
    assert!(
        first.continue_token.is_some(),
        "key z follows the full page"
    );
    assert_eq!(first.remaining_item_count, None, "filtered: not counted");
    options.continue_token = first.continue_token;
    let second = m.list_secrets(Some(NS), &options).unwrap();
    assert!(second.items.is_empty());
    assert_eq!(second.continue_token, None);
    // A page that is not full ends the list, keys or not.
    options.continue_token = None;
    options.limit = Some(3);
    let whole = m.list_secrets(Some(NS), &options).unwrap();
    assert_eq!((whole.items.len(), whole.continue_token), (2, None));
}

/// Continue tokens expire with compaction (410 Expired); garbage tokens are 400.
#[test]
fn continue_tokens_expire_on_compaction() {
    let mut m = model();
    for n in ["a", "b", "c"] {
        m.create_secret(NS, secret_named(n)).unwrap();
    }
    let first = m
        .list_secrets(
            Some(NS),
            &ListOptions {
                limit: Some(1),
                ..ListOptions::default()
            },
        )
        .unwrap();
    m.create_secret(NS, secret_named("d")).unwrap();
    m.compact();
    let err = m
        .list_secrets(
            Some(NS),
            &ListOptions {
                continue_token: first.continue_token,
                ..ListOptions::default()
            },
        )
        .unwrap_err();
    assert_eq!((err.code(), err.reason()), (410, "Expired"));
    assert!(err.to_string().contains("continue parameter is too old"));
    let err = m
        .list_secrets(
            Some(NS),
            &ListOptions {
                continue_token: Some("zz".into()),
                ..ListOptions::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.code(), 400);
}

/// Label and field selectors filter lists; a bad selector is 400.
#[test]
fn list_filters_by_selectors() {
    let mut m = model();
    m.create_pod(NS, pod_named("a", IMAGE, None)).unwrap();
    m.create_pod(NS, pod_named("b", "r.io/crash@sha256:aa", None))
        .unwrap();
    m.advance(secs(2));
    let list = |m: &ClusterModel, labels: Option<&str>, fields: Option<&str>| {
        m.list_pods(
            Some(NS),
            &ListOptions {
                label_selector: labels.map(str::to_owned),
                field_selector: fields.map(str::to_owned),
                ..ListOptions::default()
            },
        )
        .map(|p| {
            p.items
                .into_iter()
                .map(|p| p.metadata.name.unwrap())
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(list(&m, Some("app=a"), None).unwrap(), ["a"]);
    assert_eq!(list(&m, Some("app in (a,b)"), None).unwrap(), ["a", "b"]);
    assert_eq!(list(&m, None, Some("status.phase=Failed")).unwrap(), ["b"]);
    assert_eq!(list(&m, None, Some("metadata.name=a")).unwrap(), ["a"]);
    assert_eq!(
        list(&m, Some("app=a"), Some("status.phase=Failed")).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(list(&m, Some("app in ("), None).unwrap_err().code(), 400);
    assert_eq!(
        list(&m, None, Some("spec.bogus=x")).unwrap_err().code(),
        400
    );
    assert!(list(&m, None, None).unwrap().len() == 2);
    assert!(
        m.list_pods(Some("other"), &ListOptions::default())
            .unwrap()
            .items
            .is_empty()
    );
}

/// The watch log: ADDED/MODIFIED/DELETED with the objects' resourceVersions, in order; events
/// below the compaction horizon answer 410 Expired ("too old resource version").
#[test]
fn watch_log_and_too_old() {
    let mut m = model();
    let start = m.resource_version();
    let p = m
        .create_pod(NS, pod_named("p", "r.io/crash@sha256:aa", None))
        .unwrap();
    m.advance(secs(1));
    let terminated = m.get_pod(NS, "p").unwrap();
    m.delete_pod(NS, "p", &fence(&terminated), None).unwrap();
    let events = m.events_since(start).unwrap();
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    // Created, started, exited, the zero grace written by the delete of a terminal pod, removed.
    assert_eq!(
        types,
        ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    );
    let rvs: Vec<u64> = events.iter().map(|e| e.resource_version).collect();
    assert!(rvs.windows(2).all(|w| w[1] == w[0] + 1), "{rvs:?}");
    assert_eq!(rvs[0], rv_of(&p.metadata));
    for e in &events {
        assert_eq!(rv_of(e.object.metadata()), e.resource_version);
        assert_eq!(e.object.kind(), Kind::Pod);
    }
    assert_eq!(m.events_since(rvs[4]).unwrap(), vec![]);
    m.compact();
    let err = m.events_since(start).unwrap_err();
    assert_eq!((err.code(), err.reason()), (410, "Expired"));
    assert_eq!(
        err.to_string(),
        format!(
            "too old resource version: {start} ({})",
            m.resource_version()
        )
    );
    assert!(m.events_since(m.resource_version()).unwrap().is_empty());
}

/// A bounded event log compacts its oldest events and moves the horizon.
#[test]
fn event_capacity_moves_horizon() {
    let mut m = model();
    m.set_event_capacity(2);
    for n in ["a", "b", "c", "d"] {
        m.create_secret(NS, secret_named(n)).unwrap();
    }
    let horizon = m.compaction_horizon();
    assert_eq!(horizon, m.resource_version() - 2);
    assert!(m.events_since(horizon - 1).is_err());
    assert_eq!(m.events_since(horizon).unwrap().len(), 2);
}

/// insert_pod keeps status, uid, creationTimestamp and an explicit rv above the counter; the
/// counter moves there; the kubelet leaves the pod alone.
#[test]
fn insert_pod_keeps_what_it_carries() {
    let mut m = model();
    let mut pod = pod_named("foreign", IMAGE, None);
    pod.metadata.namespace = Some("elsewhere".into());
    pod.metadata.uid = Some("u-1".into());
    pod.metadata.resource_version = Some("100".into());
    let created = Time(Timestamp::from_second(1_000_000).unwrap());
    pod.metadata.creation_timestamp = Some(created.clone());
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        container_statuses: Some(vec![ContainerStatus {
            name: "agent".into(),
            state: Some(ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        }]),
        ..PodStatus::default()
    });
    let inserted = m.insert_pod(pod.clone()).unwrap();
    assert_eq!(inserted.metadata.uid.as_deref(), Some("u-1"));
    assert_eq!(inserted.metadata.resource_version.as_deref(), Some("100"));
    assert_eq!(inserted.metadata.creation_timestamp, Some(created));
    assert_eq!(m.resource_version(), 100);
    assert!(m.get_namespace("elsewhere").is_ok(), "namespace created");
    m.advance(secs(3600));
    assert_eq!(m.get_pod("elsewhere", "foreign").unwrap(), inserted);
    // A stale explicit rv is replaced by a fresh one.
    let mut again = pod_named("second", IMAGE, None);
    again.metadata.namespace = Some(NS.into());
    again.metadata.resource_version = Some("5".into());
    let second = m.insert_pod(again).unwrap();
    assert_eq!(rv_of(&second.metadata), 101);
    assert_eq!(m.insert_pod(pod).unwrap_err().reason(), "AlreadyExists");
    // A running pod without a node is still deleted gracefully: a kubelet reports it.
    let answer = m.delete_pod("elsewhere", "foreign", &Preconditions::default(), None);
    assert!(matches!(answer, Ok(PodDeletion::Marked(_))));
}

/// insert_secret keeps a chosen creationTimestamp (for GC age scenarios).
#[test]
fn insert_secret_keeps_creation_timestamp() {
    let mut m = model();
    let mut s = secret_named("old");
    s.metadata.namespace = Some(NS.into());
    let old = Time(Timestamp::from_second(DEFAULT_EPOCH_SECONDS - 1200).unwrap());
    s.metadata.creation_timestamp = Some(old.clone());
    let inserted = m.insert_secret(s).unwrap();
    assert_eq!(inserted.metadata.creation_timestamp, Some(old));
    let mut nameless = secret_named("x");
    nameless.metadata.namespace = None;
    assert_eq!(m.insert_secret(nameless).unwrap_err().reason(), "Invalid");
}

/// Manual kubelet hooks: start, terminate, waiting, unschedulable, remove; each a MODIFIED with
/// a new rv, and the script becomes Inert.
#[test]
fn manual_kubelet_hooks() {
    let mut m = model();
    m.set_default_script(Some(PodScript::NeverStarts));
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    let before = m.resource_version();
    let started = m.start_pod(NS, "p").unwrap();
    assert_eq!(rv_of(&started.metadata), before + 1);
    assert!(agent_state(&started).running.is_some());
    assert_eq!(m.pod_script(NS, "p"), Some(PodScript::Inert));
    let ended = m.terminate_pod(NS, "p", 3).unwrap();
    assert_eq!(agent_state(&ended).terminated.unwrap().exit_code, 3);
    let waiting = m
        .set_pod_waiting(NS, "p", "ImagePullBackOff", Some("manifest unknown"))
        .unwrap();
    assert_eq!(
        waiting_reason(&waiting).as_deref(),
        Some("ImagePullBackOff")
    );
    let unsched = m.set_pod_unschedulable(NS, "p").unwrap();
    assert!(
        unsched
            .status
            .unwrap()
            .conditions
            .unwrap()
            .iter()
            .any(|c| c.reason.as_deref() == Some("Unschedulable"))
    );
    let status = m
        .set_pod_status(
            NS,
            "p",
            PodStatus {
                phase: Some("Succeeded".into()),
                ..PodStatus::default()
            },
        )
        .unwrap();
    assert_eq!(phase(&status).as_deref(), Some("Succeeded"));
    let modified = m
        .modify_pod(NS, "p", |p| {
            p.metadata.name = Some("renamed".into());
            p.metadata.annotations = Some(BTreeMap::from([("a".into(), "b".into())]));
        })
        .unwrap();
    assert_eq!(
        modified.metadata.name.as_deref(),
        Some("p"),
        "identity is kept"
    );
    m.remove_pod(NS, "p").unwrap();
    assert_eq!(m.remove_pod(NS, "p").unwrap_err().code(), 404);
    assert_eq!(m.start_pod(NS, "p").unwrap_err().code(), 404);
}

/// A manual status change on a scripted pod is overwritten only at the script's next step; Inert
/// freezes it.
#[test]
fn inert_script_freezes_pod() {
    let mut m = model();
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.set_pod_script(NS, "p", PodScript::Inert).unwrap();
    m.advance(secs(100));
    assert_eq!(
        phase(&m.get_pod(NS, "p").unwrap()).as_deref(),
        Some("Pending")
    );
    assert!(
        m.get_pod(NS, "p")
            .unwrap()
            .status
            .unwrap()
            .container_statuses
            .is_none()
    );
}

/// The clock never goes backwards; set_now to the past only runs what is due.
#[test]
fn clock_is_monotonic() {
    let mut m = model();
    let t0 = m.now();
    m.advance(secs(10));
    m.set_now(t0);
    assert_eq!(m.now(), add(t0, secs(10)));
    m.set_now(add(t0, secs(20)));
    assert_eq!(m.now(), add(t0, secs(20)));
}

/// The deletion mark freezes the kubelet: a ContainerCreating pod marked for deletion does not
/// start during its grace, and is removed at the end.
#[test]
fn marked_pod_is_not_started() {
    let mut m = model();
    m.script_pods_named(NS, "p", PodScript::Start { after: secs(30) });
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(1));
    let pod = m.get_pod(NS, "p").unwrap();
    m.delete_pod(NS, "p", &fence(&pod), None).unwrap();
    m.advance(secs(59));
    assert!(agent_state(&m.get_pod(NS, "p").unwrap()).waiting.is_some());
    m.advance(secs(1));
    assert!(m.get_pod(NS, "p").is_err());
}

/// Deleting a namespace removes its objects (DELETED events) and the namespace.
#[test]
fn namespace_delete_cascades() {
    let mut m = model();
    m.create_secret(NS, secret_named("s")).unwrap();
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    let before = m.resource_version();
    m.delete_namespace(NS, &Preconditions::default()).unwrap();
    assert!(m.get_namespace(NS).is_err());
    assert!(m.get_pod(NS, "p").is_err());
    assert!(m.get_secret(NS, "s").is_err());
    let events = m.events_since(before).unwrap();
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|e| e.event_type == EventType::Deleted));
    assert_eq!(events[2].object.kind(), Kind::Namespace);
}

/// Namespaces get phase Active and the metadata.name label; list works.
#[test]
fn namespace_shape() {
    let m = model();
    let ns = m.get_namespace(NS).unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
    assert_eq!(
        ns.metadata
            .labels
            .unwrap()
            .get("kubernetes.io/metadata.name")
            .map(String::as_str),
        Some(NS)
    );
    let page = m
        .list_namespaces(&ListOptions {
            label_selector: Some(format!("kubernetes.io/metadata.name={NS}")),
            ..ListOptions::default()
        })
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(
        m.get_namespace("nope").unwrap_err().to_string(),
        "namespaces \"nope\" not found"
    );
}

/// to_status carries the literal code, reason, message and details.
#[test]
fn errors_map_to_status_bodies() {
    let err = ModelError::AlreadyExists {
        kind: Kind::Pod,
        name: "p".into(),
    };
    let status = err.to_status();
    assert_eq!(status.code, Some(409));
    assert_eq!(status.reason.as_deref(), Some("AlreadyExists"));
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.message.as_deref(), Some("pods \"p\" already exists"));
    let details = status.details.unwrap();
    assert_eq!(details.kind.as_deref(), Some("pods"));
    assert_eq!(details.name.as_deref(), Some("p"));
    let expired = ModelError::Expired {
        message: "x".into(),
    };
    assert_eq!((expired.code(), expired.reason()), (410, "Expired"));
    assert_eq!(expired.to_status().details, None);
}

/// Pull-failure scripts reached through an explicit script (not the image) use the pod's image
/// in the message.
#[test]
fn explicit_pull_failure_script() {
    let mut m = model();
    m.script_pods_named(
        NS,
        "p",
        PodScript::PullFailure {
            after: secs(2),
            failure: PullFailure::Unauthorized,
        },
    );
    m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    m.advance(secs(1));
    assert_eq!(
        waiting_reason(&m.get_pod(NS, "p").unwrap()).as_deref(),
        Some("ContainerCreating")
    );
    m.advance(secs(1));
    let message = waiting_message(&m.get_pod(NS, "p").unwrap()).unwrap();
    assert!(message.contains(IMAGE));
}

/// Object JSON carries the fields as the apiserver serializes them.
#[test]
fn object_to_json() {
    let mut m = model();
    let p = m.create_pod(NS, pod_named("p", IMAGE, None)).unwrap();
    let json = Object::Pod(p).to_json();
    assert_eq!(json["apiVersion"], "v1");
    assert_eq!(json["kind"], "Pod");
    assert_eq!(json["metadata"]["name"], "p");
    assert_eq!(json["status"]["phase"], "Pending");
}

/// Debug output of the model and of a Secret's watch event names the Secret and its keys but
/// never a value (secrets never reach Debug output).
#[test]
fn debug_output_has_no_secret_values() {
    let mut m = model();
    let mut s = secret_named("s");
    s.string_data = Some(BTreeMap::from([(
        "TOKEN".to_owned(),
        "SUPERSECRET".to_owned(),
    )]));
    m.create_secret(NS, s).unwrap();
    let model_debug = format!("{m:?}");
    assert!(model_debug.contains("agents/s"), "{model_debug}");
    let events = format!("{:?}", m.events_since(0).unwrap());
    assert!(events.contains("TOKEN"), "{events}");
    for text in [model_debug, events] {
        assert!(!text.contains("SUPERSECRET"), "{text}");
        // ByteString's Debug would spell the bytes; none of them may appear either.
        assert!(!text.contains("83, 85, 80"), "{text}");
    }
}
