//! The simulated kubelet: per-pod scripts ([`PodScript`]), the image-reference convention that
//! selects one, and the real status shapes it writes (ContainerCreating, running, terminated,
//! image-pull failures, `CreateContainerConfigError`, unschedulable). Pure: the functions here
//! only reshape a `Pod` value at a time they are given; the model decides when to call them and
//! records the resulting resourceVersion and watch event. Never reads a clock.
//!
//! # The image convention
//!
//! A pod created through [`crate::ClusterModel::create_pod`] with no script chosen by name gets
//! its script from the image of its containers ([`PodScript::from_image`]): the first container
//! whose *repository path* (the image reference without registry host, tag and digest) contains
//! one of these keywords decides, checked in this order:
//!
//! | keyword | script |
//! |---|---|
//! | `pullfail-unauthorized` | [`PodScript::PullFailure`] with [`PullFailure::Unauthorized`] (401) |
//! | `pullfail-manifest` | [`PodScript::PullFailure`] with [`PullFailure::ManifestUnknown`] |
//! | `pullfail-platform` | [`PodScript::PullFailure`] with [`PullFailure::PlatformMismatch`] |
//! | `unschedulable` | [`PodScript::Unschedulable`] |
//! | `never-starts` | [`PodScript::NeverStarts`] |
//! | `vanish` | [`PodScript::Vanish`] after the start delay |
//! | `crash` | [`PodScript::Exit`] with exit code 1, straight from waiting to terminated |
//!
//! e.g. `registry.example.com/team/agent-crash@sha256:…` crashes. Any other image gets the
//! model's default script ([`PodScript::Start`] after the start delay unless changed).

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Why an image pull fails, with the kubelet message each produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullFailure {
    /// The registry answers 401 Unauthorized.
    Unauthorized,
    /// The registry has no manifest at the digest (containerd: `<ref>: not found`).
    ManifestUnknown,
    /// The image has no variant for the node's platform (`no match for platform in manifest:
    /// not found`).
    PlatformMismatch,
}

impl PullFailure {
    /// The kubelet's `ErrImagePull` waiting message for `image`, in containerd 1.6's own words
    /// (CRI `rpc error` prefix included), as the real kubelet wrote them (shared/node README §
    /// What the real kubelet writes): a 401 on the manifest (`pulling from host <host> failed
    /// with status code [manifests <digest or tag>]: 401 Unauthorized`), a registry 404 reported
    /// as `<ref>: not found`, and a platform mismatch reported as `no match for platform in
    /// manifest: not found` — which ends in `not found` too, as the real one does.
    pub fn message(self, image: &str) -> String {
        let host = registry_host(image);
        match self {
            Self::Unauthorized => format!(
                "rpc error: code = Unknown desc = failed to pull and unpack image \"{image}\": \
                 failed to resolve reference \"{image}\": pulling from host {host} failed with \
                 status code [manifests {reference}]: 401 Unauthorized",
                reference = manifest_reference(image)
            ),
            Self::ManifestUnknown => format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": \
                 failed to resolve reference \"{image}\": {image}: not found"
            ),
            Self::PlatformMismatch => format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": \
                 no match for platform in manifest: not found"
            ),
        }
    }

    /// The model's `ImagePullBackOff` waiting message for `image`: the real kubelet's
    /// `Back-off pulling image "<image>"`, followed by `: ErrImagePull: ` and the pull error.
    ///
    /// The real one stops after the quoted image (shared/node README § What the real kubelet
    /// writes). The model keeps the pull error so that a client observing the pod during the
    /// back-off can still tell the failure's kind: a deliberate simplification, listed in this
    /// crate's README § The model against the real kubelet.
    pub fn backoff_message(self, image: &str) -> String {
        format!(
            "Back-off pulling image \"{image}\": ErrImagePull: {}",
            self.message(image)
        )
    }
}

/// What the kubelet does with one pod, on the model clock. Durations count from the moment the
/// script was attached (the pod's creation, or the [`crate::ClusterModel::set_pod_script`] call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodScript {
    /// Scheduled at once (waiting `ContainerCreating`), container `running` after `after` — if
    /// every referenced Secret exists; otherwise waiting `CreateContainerConfigError` until it does.
    Start {
        /// Delay from attachment to the start.
        after: Duration,
    },
    /// Like [`PodScript::Start`], then the container exits with `exit_code` after running
    /// `run_for` (zero: straight from waiting to terminated, never observed running). Exit code
    /// 0 ends in phase `Succeeded` (reason `Completed`), any other in `Failed` (reason `Error`).
    Exit {
        /// Delay from attachment to the start.
        after: Duration,
        /// How long the container runs before exiting.
        run_for: Duration,
        /// The exit code.
        exit_code: i32,
    },
    /// Scheduled at once, then after `after` the pull fails forever: waiting `ErrImagePull`, one
    /// second later `ImagePullBackOff`, retried with the kubelet's doubling back-off (10 s … 300 s).
    PullFailure {
        /// Delay from attachment to the first failed pull.
        after: Duration,
        /// The failure.
        failure: PullFailure,
    },
    /// Never scheduled: condition `PodScheduled` False, reason `Unschedulable`, message
    /// `0/3 nodes are available: 3 Insufficient memory.`
    Unschedulable,
    /// Scheduled at once and waiting `ContainerCreating` forever.
    NeverStarts,
    /// Scheduled at once (waiting `ContainerCreating`), then removed from the store after
    /// `after` (a DELETED event, as after an eviction or node loss).
    Vanish {
        /// Delay from attachment to the removal.
        after: Duration,
    },
    /// The kubelet never touches the pod; tests set its status themselves.
    Inert,
}

/// Keywords of the image convention, in the order they are checked (see the module docs).
pub const IMAGE_KEYWORDS: [&str; 7] = [
    "pullfail-unauthorized",
    "pullfail-manifest",
    "pullfail-platform",
    "unschedulable",
    "never-starts",
    "vanish",
    "crash",
];

impl PodScript {
    /// The script the image convention selects for one image reference, with `delay` as the
    /// start (or failure, or vanish) delay; `None` when the repository path has no keyword.
    pub fn from_image(image: &str, delay: Duration) -> Option<Self> {
        let path = repository_path(image);
        let keyword = IMAGE_KEYWORDS.iter().find(|k| path.contains(*k))?;
        Some(match *keyword {
            "pullfail-unauthorized" => Self::PullFailure {
                after: delay,
                failure: PullFailure::Unauthorized,
            },
            "pullfail-manifest" => Self::PullFailure {
                after: delay,
                failure: PullFailure::ManifestUnknown,
            },
            "pullfail-platform" => Self::PullFailure {
                after: delay,
                failure: PullFailure::PlatformMismatch,
            },
            "unschedulable" => Self::Unschedulable,
            "never-starts" => Self::NeverStarts,
            "vanish" => Self::Vanish { after: delay },
            _ => Self::Exit {
                after: delay,
                run_for: Duration::ZERO,
                exit_code: 1,
            },
        })
    }

    /// The script for a pod: the first of its containers' images that selects one.
    pub fn from_pod(pod: &Pod, delay: Duration) -> Option<Self> {
        pod.spec
            .as_ref()?
            .containers
            .iter()
            .filter_map(|c| c.image.as_deref())
            .find_map(|image| Self::from_image(image, delay))
    }
}

/// The image reference without its digest (`@…`) and tag (a last `:segment` without `/`).
fn strip_tag_and_digest(image: &str) -> &str {
    let name = image.split('@').next().unwrap_or(image);
    match name.rsplit_once(':') {
        Some((before, tag)) if !tag.contains('/') => before,
        _ => name,
    }
}

fn has_registry_host(first: &str) -> bool {
    first.contains('.') || first.contains(':') || first == "localhost"
}

/// The registry host of an image reference (`docker.io` when it names none).
pub fn registry_host(image: &str) -> &str {
    let name = strip_tag_and_digest(image);
    match name.split_once('/') {
        Some((first, _)) if has_registry_host(first) => first,
        _ => "docker.io",
    }
}

/// The repository path of an image reference: no registry host, tag or digest
/// (`registry.example.com/team/agent:v1@sha256:…` → `team/agent`).
pub fn repository_path(image: &str) -> &str {
    let name = strip_tag_and_digest(image);
    match name.split_once('/') {
        Some((first, rest)) if has_registry_host(first) => rest,
        _ => name,
    }
}

/// What containerd asks the registry's manifests endpoint for: the digest of a pinned reference,
/// else its tag (`latest` when it names none).
fn manifest_reference(image: &str) -> &str {
    if let Some((_, digest)) = image.split_once('@') {
        return digest;
    }
    match image.rsplit_once(':') {
        Some((_, tag)) if !tag.contains('/') => tag,
        _ => "latest",
    }
}

/// Where the kubelet put a pod: its node, the node's IP and (once the sandbox exists) the pod IP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// `spec.nodeName`.
    pub node_name: String,
    /// `status.hostIP`.
    pub host_ip: String,
    /// `status.podIP`, from 10.244.0.0/16.
    pub pod_ip: String,
}

fn time(at: Timestamp) -> Option<Time> {
    Some(Time(at))
}

fn status_mut(pod: &mut Pod) -> &mut PodStatus {
    pod.status.get_or_insert_with(PodStatus::default)
}

/// Set condition `type_` to `status`, moving `lastTransitionTime` only when the status changes.
pub fn set_condition(
    pod: &mut Pod,
    type_: &str,
    status: &str,
    reason: Option<&str>,
    message: Option<&str>,
    now: Timestamp,
) {
    let conditions = status_mut(pod).conditions.get_or_insert_with(Vec::new);
    let previous = conditions.iter().position(|c| c.type_ == type_);
    let transition = match previous {
        Some(i) if conditions[i].status == status => conditions[i].last_transition_time.clone(),
        _ => time(now),
    };
    let condition = PodCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.map(str::to_owned),
        message: message.map(str::to_owned),
        last_transition_time: transition,
        last_probe_time: None,
        observed_generation: None,
    };
    match previous {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}

fn container_names_and_images(pod: &Pod) -> Vec<(String, String)> {
    pod.spec
        .as_ref()
        .map(|s| {
            s.containers
                .iter()
                .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

fn set_container_states(
    pod: &mut Pod,
    state: &ContainerState,
    ready: bool,
    started: bool,
    container_id: Option<&str>,
) {
    let containers = container_names_and_images(pod);
    let statuses = containers
        .into_iter()
        .map(|(name, image)| ContainerStatus {
            image_id: if container_id.is_some() {
                image.clone()
            } else {
                String::new()
            },
            name,
            image,
            ready,
            restart_count: 0,
            started: Some(started),
            state: Some(state.clone()),
            // The real kubelet writes `lastState: {}` for a container that never restarted
            // (shared/node golden-statuses.json, every case).
            last_state: Some(ContainerState::default()),
            container_id: container_id.map(str::to_owned),
            ..ContainerStatus::default()
        })
        .collect();
    status_mut(pod).container_statuses = Some(statuses);
}

fn not_ready_message(pod: &Pod) -> String {
    let names: Vec<String> = container_names_and_images(pod)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    format!("containers with unready status: [{}]", names.join(" "))
}

/// Reshape `pod` as created and not yet scheduled: phase `Pending`, no conditions.
pub fn apply_pending(pod: &mut Pod) {
    let status = status_mut(pod);
    status.phase = Some("Pending".to_owned());
}

/// Reshape `pod` as unschedulable: phase `Pending`, `PodScheduled` False with reason
/// `Unschedulable` and message `0/3 nodes are available: 3 Insufficient memory.`
pub fn apply_unschedulable(pod: &mut Pod, now: Timestamp) {
    apply_pending(pod);
    set_condition(
        pod,
        "PodScheduled",
        "False",
        Some("Unschedulable"),
        Some("0/3 nodes are available: 3 Insufficient memory."),
        now,
    );
}

/// Reshape `pod` as bound to a node: `spec.nodeName`, `hostIP`, `startTime`, `PodScheduled`
/// True, every container waiting `ContainerCreating`, phase `Pending`.
pub fn apply_scheduled(pod: &mut Pod, placement: &Placement, now: Timestamp) {
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = Some(placement.node_name.clone());
    }
    let status = status_mut(pod);
    status.phase = Some("Pending".to_owned());
    status.host_ip = Some(placement.host_ip.clone());
    status.host_ips = Some(vec![HostIP {
        ip: placement.host_ip.clone(),
    }]);
    if status.start_time.is_none() {
        status.start_time = time(now);
    }
    set_condition(pod, "PodScheduled", "True", None, None, now);
    set_condition(pod, "PodReadyToStartContainers", "False", None, None, now);
    set_condition(pod, "Initialized", "True", None, None, now);
    let message = not_ready_message(pod);
    set_condition(
        pod,
        "Ready",
        "False",
        Some("ContainersNotReady"),
        Some(&message),
        now,
    );
    set_condition(
        pod,
        "ContainersReady",
        "False",
        Some("ContainersNotReady"),
        Some(&message),
        now,
    );
    apply_waiting(pod, "ContainerCreating", None, None, now);
}

fn set_pod_ip(pod: &mut Pod, ip: &str) {
    let status = status_mut(pod);
    status.pod_ip = Some(ip.to_owned());
    status.pod_ips = Some(vec![PodIP { ip: ip.to_owned() }]);
}

/// Reshape every container of `pod` as waiting with `reason` (and `message`), phase `Pending`.
/// With `pod_ip` the sandbox exists and the pod IP is reported (and `PodReadyToStartContainers`
/// turns True).
pub fn apply_waiting(
    pod: &mut Pod,
    reason: &str,
    message: Option<&str>,
    pod_ip: Option<&str>,
    now: Timestamp,
) {
    if let Some(ip) = pod_ip {
        set_pod_ip(pod, ip);
        set_condition(pod, "PodReadyToStartContainers", "True", None, None, now);
    }
    status_mut(pod).phase = Some("Pending".to_owned());
    let state = ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.to_owned()),
            message: message.map(str::to_owned),
        }),
        ..ContainerState::default()
    };
    set_container_states(pod, &state, false, false, None);
}

/// Reshape `pod` as running: every container `state.running` since `now`, ready, phase
/// `Running`, the pod IP assigned, every condition True.
pub fn apply_running(pod: &mut Pod, pod_ip: &str, container_id: &str, now: Timestamp) {
    set_pod_ip(pod, pod_ip);
    status_mut(pod).phase = Some("Running".to_owned());
    let state = ContainerState {
        running: Some(ContainerStateRunning {
            started_at: time(now),
        }),
        ..ContainerState::default()
    };
    set_container_states(pod, &state, true, true, Some(container_id));
    for type_ in [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ] {
        set_condition(pod, type_, "True", None, None, now);
    }
}

/// Reshape `pod` as exited: every container `state.terminated` with `exit_code` (reason
/// `Completed` for 0, else `Error`), phase `Succeeded` or `Failed`, `Ready`/`ContainersReady`
/// False with reason `PodCompleted`.
pub fn apply_terminated(
    pod: &mut Pod,
    exit_code: i32,
    container_id: &str,
    started_at: Timestamp,
    now: Timestamp,
) {
    let (phase, reason) = if exit_code == 0 {
        ("Succeeded", "Completed")
    } else {
        ("Failed", "Error")
    };
    status_mut(pod).phase = Some(phase.to_owned());
    let state = ContainerState {
        terminated: Some(ContainerStateTerminated {
            container_id: Some(container_id.to_owned()),
            exit_code,
            reason: Some(reason.to_owned()),
            started_at: time(started_at),
            finished_at: time(now),
            message: None,
            signal: None,
        }),
        ..ContainerState::default()
    };
    set_container_states(pod, &state, false, false, Some(container_id));
    set_condition(pod, "PodReadyToStartContainers", "False", None, None, now);
    set_condition(pod, "Ready", "False", Some("PodCompleted"), None, now);
    set_condition(
        pod,
        "ContainersReady",
        "False",
        Some("PodCompleted"),
        None,
        now,
    );
}

/// The names of the Secrets a pod cannot start without: every non-optional `envFrom[].secretRef`
/// and `env[].valueFrom.secretKeyRef` across its containers, in order.
pub fn required_secrets(pod: &Pod) -> Vec<String> {
    let mut names = Vec::new();
    let Some(spec) = pod.spec.as_ref() else {
        return names;
    };
    for container in &spec.containers {
        for source in container.env_from.iter().flatten() {
            if let Some(r) = &source.secret_ref
                && r.optional != Some(true)
            {
                names.push(r.name.clone());
            }
        }
        for var in container.env.iter().flatten() {
            if let Some(r) = var
                .value_from
                .as_ref()
                .and_then(|v| v.secret_key_ref.as_ref())
                && r.optional != Some(true)
            {
                names.push(r.name.clone());
            }
        }
    }
    names
}

/// The pod's QoS class as the apiserver computes it on create.
pub fn qos_class(pod: &Pod) -> &'static str {
    let Some(spec) = pod.spec.as_ref() else {
        return "BestEffort";
    };
    let mut any = false;
    let mut guaranteed = true;
    for container in &spec.containers {
        let resources = container.resources.as_ref();
        let requests = resources.and_then(|r| r.requests.as_ref());
        let limits = resources.and_then(|r| r.limits.as_ref());
        if requests.is_some_and(|r| !r.is_empty()) || limits.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        for resource in ["cpu", "memory"] {
            let limit = limits.and_then(|l| l.get(resource));
            let request = requests.and_then(|r| r.get(resource)).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// The kubelet's pull back-off after `attempts` failed pulls: 10 s doubling, capped at 300 s.
pub fn pull_backoff(attempts: u32) -> Duration {
    let exponent = attempts.saturating_sub(1).min(5);
    Duration::from_secs((10u64 << exponent).min(300))
}

/// Where a pod is in its script (the kubelet's memory between [`sequence::step`]s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Created, not yet seen by the scheduler.
    Created,
    /// Bound, containers waiting (`ContainerCreating`).
    Scheduled,
    /// Waiting `CreateContainerConfigError`.
    ConfigError,
    /// Containers running.
    Running,
    /// Containers terminated.
    Finished,
    /// Waiting `ErrImagePull`.
    PullError,
    /// Waiting `ImagePullBackOff`.
    PullBackOff,
    /// `PodScheduled` False.
    Unschedulable,
}

pub mod sequence;

#[cfg(test)]
mod tests;
