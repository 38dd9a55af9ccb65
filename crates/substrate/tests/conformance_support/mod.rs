//! Shared fixtures of the conformance suite (deploy.md § Test fixtures): the agent under test,
//! configurations, fixture pods built with the real builder and fingerprint, status shapes from
//! the simulated kubelet, and a tiny executor for the fake's never-yielding futures. Test-only;
//! decides nothing.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use apiary_classify::binding::APIARY;
use apiary_cluster_model::kubelet;
use apiary_substrate::build::build_attempt;
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::fake::FakeCluster;
use apiary_substrate::naming::{AgentIdentity, Generation};
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The namespace of every scenario.
pub const NS: &str = "agents";
/// The agent under test.
pub const AGENT: &str = "Research Bot #1";
/// Its pod name (deploy.md § Names, the vectors).
pub const POD: &str = "apiary-research-bot-1-72bea12366a3";
/// A digest-pinned image whose pods start after 1 s under the fake's default script.
pub const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// Run a driver future over the fake: the fake never yields, so the future completes on the
/// first poll.
pub fn run<F: Future>(future: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut cx) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("a driver future over the fake must complete without yielding"),
    }
}

/// The identity of [`AGENT`].
pub fn agent() -> AgentIdentity {
    AgentIdentity::new(AGENT).expect("valid agent name")
}

/// The default configuration for [`IMAGE`], edited by `edit`.
pub fn config_with(edit: impl FnOnce(&mut DeployConfig)) -> ValidConfig {
    let mut config = DeployConfig::new(NS, IMAGE);
    edit(&mut config);
    config.validate(&agent()).expect("valid configuration")
}

/// The default configuration.
pub fn config() -> ValidConfig {
    config_with(|_| {})
}

/// An image whose pods follow the model's image convention `keyword` (crash, never-starts, ...).
pub fn image_with(keyword: &str) -> String {
    format!(
        "registry.example.com/team/agent-{keyword}@sha256:{}",
        "a".repeat(64)
    )
}

/// The shape a fixture pod is given.
#[derive(Clone, Debug)]
pub enum Shape {
    /// Container `agent` running.
    Running,
    /// Container `agent` terminated with this exit code.
    Terminated(i32),
    /// Container `agent` waiting with this reason and message.
    Waiting(&'static str, Option<&'static str>),
    /// Unschedulable: `PodScheduled` False.
    Unschedulable,
}

/// The pod and Secret of the attempt with `generation` of `config`, built by the real builder.
pub fn attempt(config: &ValidConfig, generation: u32) -> (Pod, Secret, String) {
    let attempt = build_attempt(config, Generation::from_u32(generation));
    (attempt.pod, attempt.secret, attempt.secret_name)
}

/// Give `pod` the status `shape` as the simulated kubelet writes it, at the fake's `now`.
pub fn shaped(fake: &FakeCluster, mut pod: Pod, shape: &Shape) -> Pod {
    let now = fake.model().now();
    match shape {
        Shape::Running => kubelet::apply_running(&mut pod, "10.0.0.7", "containerd://c1", now),
        Shape::Terminated(code) => {
            kubelet::apply_terminated(&mut pod, *code, "containerd://c1", now, now);
        }
        Shape::Waiting(reason, message) => {
            kubelet::apply_waiting(&mut pod, reason, *message, None, now);
        }
        Shape::Unschedulable => kubelet::apply_unschedulable(&mut pod, now),
    }
    pod
}

/// Mark `pod` as deleting with `grace` left (deletionTimestamp = now + grace, as after a
/// graceful delete; the model removes it then).
pub fn deleting_for(fake: &FakeCluster, mut pod: Pod, grace: Duration) -> Pod {
    let at = apiary_cluster_model::add(fake.model().now(), grace);
    pod.metadata.deletion_timestamp = Some(Time(at));
    pod.metadata.deletion_grace_period_seconds = i64::try_from(grace.as_secs()).ok();
    pod
}

/// Mark `pod` as deleting with the 60 s grace of an apiary pod.
pub fn deleting(fake: &FakeCluster, pod: Pod) -> Pod {
    deleting_for(fake, pod, Duration::from_secs(60))
}

/// Seed the fake with the attempt `generation` of `config`: its Secret (when `with_secret`) and
/// its pod in `shape` (inert). Returns the stored pod (uid and resourceVersion stamped) and the
/// Secret name.
pub fn seed(
    fake: &FakeCluster,
    config: &ValidConfig,
    generation: u32,
    shape: &Shape,
    with_secret: bool,
) -> (Pod, String) {
    let (pod, secret, secret_name) = attempt(config, generation);
    if with_secret {
        fake.insert_secret(secret).expect("secret inserted");
    }
    let pod = fake
        .insert_pod(shaped(fake, pod, shape))
        .expect("pod inserted");
    (pod, secret_name)
}

/// Our pod re-annotated with another agent's id.
pub fn other_agent(mut pod: Pod) -> Pod {
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(APIARY.annotation_agent_id.into(), "f".repeat(64));
    pod
}

/// `(uid, resourceVersion)` of a stored object's metadata.
pub fn fence_of(pod: &Pod) -> (String, String) {
    (
        pod.metadata.uid.clone().expect("uid"),
        pod.metadata
            .resource_version
            .clone()
            .expect("resourceVersion"),
    )
}
