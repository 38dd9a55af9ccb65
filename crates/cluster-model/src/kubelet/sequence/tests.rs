//! Unit tests of the kubelet's sequencing table ([`step`]) for every script, driven by hand with
//! a counting [`Resources`]. Pure; no I/O, no clock.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStatus, EnvFromSource, Pod, PodSpec, SecretEnvSource,
};

use super::*;
use crate::kubelet::PullFailure;

const SECOND: Duration = Duration::from_secs(1);

/// Counts what the step asked for; `secret_present` decides `missing_secret`.
struct Counting {
    placements: u32,
    container_ids: u32,
    secret_present: bool,
}

impl Counting {
    fn new() -> Self {
        Self {
            placements: 0,
            container_ids: 0,
            secret_present: true,
        }
    }
}

impl Resources for Counting {
    fn placement(&mut self) -> Placement {
        self.placements += 1;
        Placement {
            node_name: "node-a".to_owned(),
            host_ip: "127.0.0.1".to_owned(),
            pod_ip: "10.244.0.7".to_owned(),
        }
    }

    fn container_id(&mut self) -> String {
        self.container_ids += 1;
        format!("containerd://{:064x}", 1)
    }

    fn missing_secret(&mut self, pod: &Pod) -> Option<String> {
        let needed = super::super::required_secrets(pod);
        if self.secret_present {
            None
        } else {
            needed.into_iter().next()
        }
    }
}

fn pod(image: &str) -> Pod {
    Pod {
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "agent".to_owned(),
                image: Some(image.to_owned()),
                env_from: Some(vec![EnvFromSource {
                    secret_ref: Some(SecretEnvSource {
                        name: "env-1".to_owned(),
                        optional: None,
                    }),
                    ..EnvFromSource::default()
                }]),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn at(second: i64) -> Moment {
    Moment {
        now: Timestamp::from_second(1_785_643_200 + second).unwrap_or(Timestamp::UNIX_EPOCH),
        since_anchor: Duration::from_secs(second.unsigned_abs()),
    }
}

fn waiting_reason(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.phase.as_deref()
}

/// Start: scheduled (`ContainerCreating`, next step after the delay), then running with the IP.
#[test]
fn start_schedules_then_runs() {
    let script = PodScript::Start { after: SECOND };
    let mut progress = KubeletMemory::new();
    let mut pod = pod("r.io/agent");
    let mut res = Counting::new();
    let first = step(&script, &mut progress, &mut pod, at(0), &mut res);
    assert_eq!(first, Outcome::Reshaped { next: Some(SECOND) });
    assert_eq!(progress.stage, Stage::Scheduled);
    assert_eq!(waiting_reason(&pod).as_deref(), Some("ContainerCreating"));
    let second = step(&script, &mut progress, &mut pod, at(1), &mut res);
    assert_eq!(second, Outcome::Reshaped { next: None });
    assert_eq!(progress.stage, Stage::Running);
    assert_eq!(phase(&pod), Some("Running"));
    assert_eq!(
        pod.status.as_ref().and_then(|s| s.pod_ip.as_deref()),
        Some("10.244.0.7")
    );
    assert_eq!(progress.started_at, Some(at(1).now));
    assert_eq!((res.placements, res.container_ids), (2, 1));
    let third = step(&script, &mut progress, &mut pod, at(5), &mut res);
    assert_eq!(third, Outcome::Reshaped { next: None });
    assert_eq!(progress.stage, Stage::Running);
}

/// The first delay counts from the attachment: a late first step waits only the remainder.
#[test]
fn first_delay_counts_from_the_anchor() {
    let script = PodScript::Start {
        after: Duration::from_secs(5),
    };
    let mut progress = KubeletMemory::new();
    let mut pod = pod("r.io/agent");
    let outcome = step(
        &script,
        &mut progress,
        &mut pod,
        at(2),
        &mut Counting::new(),
    );
    assert_eq!(
        outcome,
        Outcome::Reshaped {
            next: Some(Duration::from_secs(3))
        }
    );
}

/// A missing Secret holds the start in `CreateContainerConfigError`, retried; it recovers.
#[test]
fn missing_secret_is_a_config_error_until_it_exists() {
    let script = PodScript::Start { after: SECOND };
    let mut progress = KubeletMemory::new();
    let mut pod = pod("r.io/agent");
    let mut res = Counting::new();
    res.secret_present = false;
    step(&script, &mut progress, &mut pod, at(0), &mut res);
    let held = step(&script, &mut progress, &mut pod, at(1), &mut res);
    assert_eq!(
        held,
        Outcome::Reshaped {
            next: Some(CONFIG_ERROR_RETRY)
        }
    );
    assert_eq!(progress.stage, Stage::ConfigError);
    assert_eq!(
        waiting_reason(&pod).as_deref(),
        Some("CreateContainerConfigError")
    );
    res.secret_present = true;
    step(&script, &mut progress, &mut pod, at(3), &mut res);
    assert_eq!(progress.stage, Stage::Running);
}

/// Pull failure: ErrImagePull, one second later ImagePullBackOff, then the doubling back-off.
#[test]
fn pull_failure_loops_with_doubling_backoff() {
    let script = PodScript::PullFailure {
        after: SECOND,
        failure: PullFailure::ManifestUnknown,
    };
    let mut progress = KubeletMemory::new();
    let mut pod = pod("r.io/pullfail-manifest");
    let mut res = Counting::new();
    step(&script, &mut progress, &mut pod, at(0), &mut res);
    let mut seen = Vec::new();
    for i in 1..=4 {
        let outcome = step(&script, &mut progress, &mut pod, at(i), &mut res);
        seen.push((waiting_reason(&pod).unwrap_or_default(), outcome));
    }
    let expected = [
        ("ErrImagePull", Some(SECOND)),
        ("ImagePullBackOff", Some(Duration::from_secs(10))),
        ("ErrImagePull", Some(SECOND)),
        ("ImagePullBackOff", Some(Duration::from_secs(20))),
    ];
    for ((reason, outcome), (want_reason, want_next)) in seen.iter().zip(expected) {
        assert_eq!(reason, want_reason);
        assert_eq!(*outcome, Outcome::Reshaped { next: want_next });
    }
    assert_eq!(progress.pull_attempts, 2);
    assert_eq!(res.container_ids, 0);
}

/// An exit after zero run time goes straight from waiting to terminated; a longer one runs first.
#[test]
fn exit_terminates_with_its_code() {
    for run_for in [Duration::ZERO, Duration::from_secs(4)] {
        let script = PodScript::Exit {
            after: SECOND,
            run_for,
            exit_code: 1,
        };
        let mut progress = KubeletMemory::new();
        let mut pod = pod("r.io/crash");
        let mut res = Counting::new();
        step(&script, &mut progress, &mut pod, at(0), &mut res);
        let started = step(&script, &mut progress, &mut pod, at(1), &mut res);
        if run_for.is_zero() {
            assert_eq!(started, Outcome::Reshaped { next: None });
        } else {
            assert_eq!(
                started,
                Outcome::Reshaped {
                    next: Some(run_for)
                }
            );
            assert_eq!(phase(&pod), Some("Running"));
            step(&script, &mut progress, &mut pod, at(5), &mut res);
        }
        assert_eq!(progress.stage, Stage::Finished);
        assert_eq!(phase(&pod), Some("Failed"));
        let terminated = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first())
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.terminated.as_ref())
            .map(|t| (t.exit_code, t.reason.clone()));
        assert_eq!(terminated, Some((1, Some("Error".to_owned()))));
    }
}

/// Scripts that stop early: unschedulable never schedules, never-starts stays creating, vanish
/// asks for removal, inert does nothing.
#[test]
fn scripts_that_stop_early() {
    let mut res = Counting::new();
    let mut progress = KubeletMemory::new();
    let mut p = pod("r.io/unschedulable");
    let outcome = step(
        &PodScript::Unschedulable,
        &mut progress,
        &mut p,
        at(0),
        &mut res,
    );
    assert_eq!(outcome, Outcome::Reshaped { next: None });
    assert_eq!(progress.stage, Stage::Unschedulable);
    assert_eq!(res.placements, 0);

    let mut progress = KubeletMemory::new();
    let mut p = pod("r.io/never-starts");
    let outcome = step(
        &PodScript::NeverStarts,
        &mut progress,
        &mut p,
        at(0),
        &mut res,
    );
    assert_eq!(outcome, Outcome::Reshaped { next: None });
    assert_eq!(waiting_reason(&p).as_deref(), Some("ContainerCreating"));

    let vanish = PodScript::Vanish { after: SECOND };
    let mut progress = KubeletMemory::new();
    let mut p = pod("r.io/vanish");
    step(&vanish, &mut progress, &mut p, at(0), &mut res);
    assert_eq!(
        step(&vanish, &mut progress, &mut p, at(1), &mut res),
        Outcome::Remove
    );

    let mut progress = KubeletMemory::new();
    let mut p = pod("r.io/agent");
    let before = p.clone();
    let outcome = step(&PodScript::Inert, &mut progress, &mut p, at(0), &mut res);
    assert_eq!(outcome, Outcome::Reshaped { next: None });
    assert_eq!(p, before);
}

// The status shapes against the real kubelet (v1.20.2 + containerd 1.6.20), from
// shared/node/golden-statuses.json; the pod IP and container ID are the model's own.

const AGENT_REF: &str =
    "127.0.0.1:5000/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394";

fn status_of(pod: &Pod) -> (&k8s_openapi::api::core::v1::PodStatus, &ContainerStatus) {
    let status = pod.status.as_ref().expect("status");
    let container = &status.container_statuses.as_ref().expect("statuses")[0];
    (status, container)
}

/// Run `script` on a pod of `image` needing Secret `env-1`, for `steps` steps one second apart.
fn run(script: &PodScript, image: &str, secret_present: bool, steps: i64) -> Pod {
    let mut progress = KubeletMemory::new();
    let mut pod = pod(image);
    let mut res = Counting::new();
    res.secret_present = secret_present;
    for i in 0..steps {
        step(script, &mut progress, &mut pod, at(i), &mut res);
    }
    pod
}

/// Source: golden-statuses.json `crash-exit1`: phase `Failed`, `terminated` `Error` exit 1 with
/// no message and `startedAt == finishedAt`, restartCount 0, not ready, not started, `lastState`
/// `{}`, the same containerID in the state and the status, imageID the pinned reference, and a
/// podIP although the container was never seen running.
#[test]
fn an_immediate_crash_is_the_real_kubelets_exit1() {
    let script = PodScript::Exit {
        after: SECOND,
        run_for: Duration::ZERO,
        exit_code: 1,
    };
    let pod = run(&script, AGENT_REF, true, 2);
    let (status, container) = status_of(&pod);
    assert_eq!(status.phase.as_deref(), Some("Failed"));
    assert_eq!(status.pod_ip.as_deref(), Some("10.244.0.7"));
    let terminated = container
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .expect("terminated");
    assert_eq!(terminated.exit_code, 1);
    assert_eq!(terminated.reason.as_deref(), Some("Error"));
    assert_eq!(terminated.message, None);
    assert_eq!(terminated.started_at, terminated.finished_at);
    assert_eq!(terminated.container_id, container.container_id);
    assert_eq!(container.last_state, Some(ContainerState::default()));
    assert_eq!(container.restart_count, 0);
    assert!(!container.ready);
    assert_eq!(container.started, Some(false));
    assert_eq!(
        container.image_id,
        "127.0.0.1:5000/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394"
    );
}

/// Source: golden-statuses.json `exit0`: phase `Succeeded`, `terminated` `Completed` exit 0.
#[test]
fn exit_zero_is_the_real_kubelets_completed() {
    let script = PodScript::Exit {
        after: SECOND,
        run_for: Duration::ZERO,
        exit_code: 0,
    };
    let pod = run(&script, AGENT_REF, true, 2);
    let (status, container) = status_of(&pod);
    assert_eq!(status.phase.as_deref(), Some("Succeeded"));
    let terminated = container.state.as_ref().and_then(|s| s.terminated.clone());
    assert_eq!(
        terminated.map(|t| (t.exit_code, t.reason)),
        Some((0, Some("Completed".to_owned())))
    );
}

/// Source: golden-statuses.json `hello`: phase `Running`, `running` with a `startedAt`, ready,
/// started, restartCount 0, `lastState` `{}`, imageID the pinned reference, a containerID.
#[test]
fn a_started_pod_is_the_real_kubelets_hello() {
    let pod = run(&PodScript::Start { after: SECOND }, AGENT_REF, true, 2);
    let (status, container) = status_of(&pod);
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert!(status.pod_ip.is_some());
    let running = container.state.as_ref().and_then(|s| s.running.clone());
    assert!(running.and_then(|r| r.started_at).is_some());
    assert!(container.ready);
    assert_eq!(container.started, Some(true));
    assert_eq!(container.restart_count, 0);
    assert_eq!(container.last_state, Some(ContainerState::default()));
    assert_eq!(
        container.image_id,
        "127.0.0.1:5000/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394"
    );
    assert!(container.container_id.is_some());
}

/// Source: golden-statuses.json `pull-missing-digest` and `pull-401`: phase `Pending`, a podIP
/// (the sandbox exists before the pull), `image` as written in the spec, imageID `""`, no
/// containerID, not ready, not started, restartCount 0, `lastState` `{}` — in `ErrImagePull`
/// and in `ImagePullBackOff`, whose message starts with
/// `Back-off pulling image "<image as written in the spec>"`.
#[test]
fn a_failing_pull_is_the_real_kubelets_pull_failure() {
    let image = "127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000";
    let script = PodScript::PullFailure {
        after: SECOND,
        failure: PullFailure::ManifestUnknown,
    };
    for (steps, reason) in [(2, "ErrImagePull"), (3, "ImagePullBackOff")] {
        let pod = run(&script, image, true, steps);
        let (status, container) = status_of(&pod);
        assert_eq!(status.phase.as_deref(), Some("Pending"));
        assert_eq!(status.pod_ip.as_deref(), Some("10.244.0.7"), "{reason}");
        let waiting = container
            .state
            .as_ref()
            .and_then(|s| s.waiting.clone())
            .expect("waiting");
        assert_eq!(waiting.reason.as_deref(), Some(reason));
        assert_eq!(container.image, image);
        assert_eq!(container.image_id, "");
        assert_eq!(container.container_id, None);
        assert!(!container.ready);
        assert_eq!(container.started, Some(false));
        assert_eq!(container.restart_count, 0);
        assert_eq!(container.last_state, Some(ContainerState::default()));
        if reason == "ImagePullBackOff" {
            let message = waiting.message.unwrap_or_default();
            assert!(
                message.starts_with(
                    "Back-off pulling image \"127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000\""
                ),
                "{message}"
            );
        }
    }
}

/// Source: golden-statuses.json `create-container-config-error`: phase `Pending`, waiting
/// `CreateContainerConfigError` with message `secret "nope" not found`, a podIP, `image` as
/// written in the spec, imageID `""`, `lastState` `{}`.
#[test]
fn a_missing_secret_is_the_real_kubelets_config_error() {
    let mut progress = KubeletMemory::new();
    let mut pod = pod(AGENT_REF);
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers[0].env_from = Some(vec![EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: "nope".to_owned(),
                optional: None,
            }),
            ..EnvFromSource::default()
        }]);
    }
    let mut res = Counting::new();
    res.secret_present = false;
    for i in 0..2 {
        step(
            &PodScript::Start { after: SECOND },
            &mut progress,
            &mut pod,
            at(i),
            &mut res,
        );
    }
    let (status, container) = status_of(&pod);
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert!(status.pod_ip.is_some());
    let waiting = container.state.as_ref().and_then(|s| s.waiting.clone());
    assert_eq!(
        waiting.map(|w| (w.reason, w.message)),
        Some((
            Some("CreateContainerConfigError".to_owned()),
            Some("secret \"nope\" not found".to_owned())
        ))
    );
    assert_eq!(container.image, AGENT_REF);
    assert_eq!(container.image_id, "");
    assert_eq!(container.last_state, Some(ContainerState::default()));
}
