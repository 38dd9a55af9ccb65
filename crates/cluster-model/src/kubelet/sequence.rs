//! The kubelet's sequencing: for each [`PodScript`], which status shape follows which stage and
//! how long until the next step. One table, shared by the model (on its virtual or scaled clock)
//! and by `apiary-envtest`'s fake kubelet (on a scaled real clock against a real apiserver).
//!
//! Pure: [`step`] reshapes a `Pod` value and the kubelet's [`KubeletMemory`] at a moment it is given,
//! and says when the next step is due as a delay in model time. It never reads a clock, performs
//! no I/O and allocates no addresses itself: node placement and container IDs come from the
//! caller's [`Resources`], so each caller keeps its own numbering.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;

use super::{
    Placement, PodScript, Stage, apply_running, apply_scheduled, apply_terminated,
    apply_unschedulable, apply_waiting, pull_backoff, set_pod_ip,
};

/// How long a pod waiting `CreateContainerConfigError` waits before the kubelet checks again
/// (creating a Secret in its namespace makes the model's kubelet check at once instead).
pub const CONFIG_ERROR_RETRY: Duration = Duration::from_secs(10);

/// How long a failed pull shows `ErrImagePull` before the kubelet reports `ImagePullBackOff`.
pub const PULL_ERROR_SHOWN_FOR: Duration = Duration::from_secs(1);

/// What the kubelet remembers about one pod between steps (not a progress report: apiary's one
/// progress type is the machines' `apiary_classify::status::Progress`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletMemory {
    /// Where the pod is in its script.
    pub stage: Stage,
    /// How many pulls have failed so far (drives [`pull_backoff`]).
    pub pull_attempts: u32,
    /// When the containers started, once they have.
    pub started_at: Option<Timestamp>,
}

impl KubeletMemory {
    /// A pod the kubelet has not touched yet.
    pub fn new() -> Self {
        Self {
            stage: Stage::Created,
            pull_attempts: 0,
            started_at: None,
        }
    }
}

impl Default for KubeletMemory {
    fn default() -> Self {
        Self::new()
    }
}

/// What only the caller can provide: where a pod runs and what its container is called, and
/// whether the Secrets it needs exist. Asked for lazily, only by the steps that need them, so a
/// caller's numbering advances exactly as often as the kubelet places or starts something.
pub trait Resources {
    /// The pod's placement (node, host IP, pod IP); the same one on every call for one pod.
    fn placement(&mut self) -> Placement;
    /// The pod's container ID (`containerd://…`); the same one on every call for one pod.
    fn container_id(&mut self) -> String;
    /// The first Secret the pod cannot start without that does not exist, if any.
    fn missing_secret(&mut self, pod: &Pod) -> Option<String>;
}

/// The moment a step runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment {
    /// The time written into the status (`startTime`, `startedAt`, `lastTransitionTime`, …).
    pub now: Timestamp,
    /// Model time since the script was attached (its delays count from there).
    pub since_anchor: Duration,
}

/// What the caller does after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Store the reshaped pod (if it changed); run the next step after this much model time
    /// (`None`: the script has nothing more to do).
    Reshaped {
        /// Model time until the next step.
        next: Option<Duration>,
    },
    /// Remove the pod (the `Vanish` script: as after an eviction or node loss).
    Remove,
}

/// Run the step of `script` that is due for a pod at `progress.stage`: reshape `pod`, advance
/// `progress`, and say when the next step falls due.
///
/// The sequence per script: scheduling first (`ContainerCreating`, or `Unschedulable`), then after the script's delay
/// either the start (`CreateContainerConfigError` every [`CONFIG_ERROR_RETRY`] while a required
/// Secret is missing; `running`; or straight to `terminated` for an exit after zero run time),
/// the pull-failure loop (`ErrImagePull`, [`PULL_ERROR_SHOWN_FOR`] later `ImagePullBackOff`,
/// retried after [`pull_backoff`]), or the removal of a vanishing pod.
pub fn step(
    script: &PodScript,
    progress: &mut KubeletMemory,
    pod: &mut Pod,
    moment: Moment,
    resources: &mut dyn Resources,
) -> Outcome {
    let now = moment.now;
    let image = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let mut next = None;
    match (script, progress.stage) {
        (PodScript::Inert, _) => {}
        (PodScript::Unschedulable, Stage::Created) => {
            apply_unschedulable(pod, now);
            progress.stage = Stage::Unschedulable;
        }
        (_, Stage::Created) => {
            let placement = resources.placement();
            apply_scheduled(pod, &placement, now);
            progress.stage = Stage::Scheduled;
            next = script_delay(script).map(|d| d.saturating_sub(moment.since_anchor));
        }
        (PodScript::Vanish { .. }, _) => return Outcome::Remove,
        (PodScript::PullFailure { failure, .. }, Stage::PullError) => {
            let message = failure.backoff_message(&image);
            let placement = resources.placement();
            apply_waiting(
                pod,
                "ImagePullBackOff",
                Some(&message),
                Some(&placement.pod_ip),
                now,
            );
            progress.stage = Stage::PullBackOff;
            next = Some(pull_backoff(progress.pull_attempts));
        }
        (PodScript::PullFailure { failure, .. }, _) => {
            // The sandbox, and with it the pod IP, exists before the image is pulled: the real
            // kubelet reports a podIP on a pod that never pulled (golden-statuses.json,
            // `pull-missing-digest`).
            let placement = resources.placement();
            apply_waiting(
                pod,
                "ErrImagePull",
                Some(&failure.message(&image)),
                Some(&placement.pod_ip),
                now,
            );
            progress.pull_attempts += 1;
            progress.stage = Stage::PullError;
            next = Some(PULL_ERROR_SHOWN_FOR);
        }
        (PodScript::Exit { exit_code, .. }, Stage::Running) => {
            let id = resources.container_id();
            let started = progress.started_at.unwrap_or(now);
            apply_terminated(pod, *exit_code, &id, started, now);
            progress.stage = Stage::Finished;
        }
        (PodScript::Start { .. } | PodScript::Exit { .. }, Stage::Running | Stage::Finished)
        | (PodScript::Unschedulable | PodScript::NeverStarts, _) => {}
        (PodScript::Start { .. } | PodScript::Exit { .. }, _) => {
            let placement = resources.placement();
            if let Some(secret) = resources.missing_secret(pod) {
                let message = format!("secret \"{secret}\" not found");
                apply_waiting(
                    pod,
                    "CreateContainerConfigError",
                    Some(&message),
                    Some(&placement.pod_ip),
                    now,
                );
                progress.stage = Stage::ConfigError;
                next = Some(CONFIG_ERROR_RETRY);
            } else {
                let id = resources.container_id();
                progress.started_at = Some(now);
                match script {
                    PodScript::Exit {
                        run_for, exit_code, ..
                    } if run_for.is_zero() => {
                        // Never observed running, yet the sandbox had its IP: the real kubelet
                        // reports it on the exited pod (golden-statuses.json, `crash-exit1`).
                        set_pod_ip(pod, &placement.pod_ip);
                        apply_terminated(pod, *exit_code, &id, now, now);
                        progress.stage = Stage::Finished;
                    }
                    PodScript::Exit { run_for, .. } => {
                        apply_running(pod, &placement.pod_ip, &id, now);
                        progress.stage = Stage::Running;
                        next = Some(*run_for);
                    }
                    _ => {
                        apply_running(pod, &placement.pod_ip, &id, now);
                        progress.stage = Stage::Running;
                    }
                }
            }
        }
    }
    Outcome::Reshaped { next }
}

/// The delay a timed script waits after its attachment before its first step past scheduling.
pub fn script_delay(script: &PodScript) -> Option<Duration> {
    match script {
        PodScript::Start { after }
        | PodScript::Exit { after, .. }
        | PodScript::PullFailure { after, .. }
        | PodScript::Vanish { after } => Some(*after),
        PodScript::Unschedulable | PodScript::NeverStarts | PodScript::Inert => None,
    }
}

#[cfg(test)]
mod tests;
