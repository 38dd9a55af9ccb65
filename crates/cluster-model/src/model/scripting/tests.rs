//! Unit tests of the model's kubelet: every script's real status shapes and timing, the image
//! convention, the Secret check before a start, queued and default scripts, and the manual
//! hooks. Pure; no I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::kubelet::{PodScript, PullFailure};
use crate::model::test_support::*;
use crate::model::*;

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
