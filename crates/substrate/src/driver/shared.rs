//! The requests and helpers every operation of the driver shares: the operation's tracing span,
//! quorum reads mapped onto the classify vocabulary (a read during a wait for a disappearance also
//! feeds the stuck-pod watch and, once a pod is overdue, reads its node: deploy.md § When a pod
//! will not go away), fenced deletes and their answers, the paired listing, and the progress sink.
//! Imperative shell; it decides nothing (which pod or Secret to delete, with which fence, and how
//! long to wait all arrive from a machine).

use std::time::Duration;

use apiary_classify::answer::DeleteAnswer;
use apiary_classify::facts::{ObservedPod, ObservedSecret};
use apiary_classify::failure::RequestFailure;
use apiary_classify::machine::Listing;
use apiary_classify::status::Progress;
use apiary_classify::stuck::{NodeFacts, TerminatingPod, TerminationWatch, diagnose};
use apiary_classify::verify::{PodDeletion, SecretDeletion};
use tracing::Instrument;
use tracing::instrument::Instrumented;

use crate::naming::AgentIdentity;
use crate::observe::{observe_pod, observe_secret};
use crate::substrate::Substrate;
use apiary_classify::binding::Binding;
use k8s_openapi::api::core::v1::Pod;

/// The operations that run in a span of their own (status is one read and has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Operation {
    /// `deploy`.
    Deploy,
    /// `undeploy`.
    Undeploy,
    /// One GC pass (`gc`; preflight GC runs inside the deploy's span instead).
    Gc,
}

/// `future` inside the span of `operation`, named after it and carrying the agent and the pod
/// as fields, so `-v` output can be filtered per operation and the messages name neither.
pub(super) fn in_span<F: Future>(
    operation: Operation,
    agent: &AgentIdentity,
    pod: &str,
    future: F,
) -> Instrumented<F> {
    // A span's name is static metadata, so each operation has its own literal; the fields are
    // written once.
    macro_rules! span {
        ($name:literal) => {
            tracing::info_span!($name, agent = %agent.name(), pod = %pod)
        };
    }
    let span = match operation {
        Operation::Deploy => span!("deploy"),
        Operation::Undeploy => span!("undeploy"),
        Operation::Gc => span!("gc"),
    };
    future.instrument(span)
}

/// The default poll interval (deploy.md § Loop).
pub const DEFAULT_POLL: Duration = apiary_classify::machine::DEFAULT_POLL;

/// Where the driver hands each change of observed state a machine reports (the CLI renders
/// it). Called between requests, never with anything but a state and a redacted condition.
pub type OnProgress<'a> = &'a mut (dyn FnMut(&Progress) + Send);

/// Log one change of observed state (deploy.md § Loop: one line per change) and pass it on.
pub(super) fn report_progress(progress: Progress, on_progress: &mut (dyn FnMut(&Progress) + Send)) {
    tracing::info!("pod {}", progress.state.as_str());
    on_progress(&progress);
}

/// A progress sink that only logs.
pub(super) fn ignore(_: &Progress) {}

/// One quorum read of the pod `name`, observed under `binding`.
pub(super) async fn read_pod<S: Substrate>(
    substrate: &S,
    name: &str,
    binding: Binding,
) -> Result<Option<ObservedPod>, RequestFailure> {
    substrate
        .get_pod(name)
        .await
        .map(|pod| pod.as_ref().map(|p| observe_pod(p, binding)))
}

/// [`read_pod`] for the reads of an operation that may wait for the pod to disappear (undeploy,
/// and deploy's wait for a deleting pod or a replace): each read also goes to `watch`, and when
/// the pod has been terminating for longer than its grace period a warning says why as far as
/// the API shows (classify's `stuck::diagnose`) and which `kubectl` commands would show more.
/// Only then, once per pod and only when the pod names a node, is that node read: its `Ready`
/// condition joins the explanation, and a user who may not read nodes gets no node sentence and
/// no error. Never a forced delete.
pub(super) async fn read_pod_watching<S: Substrate>(
    substrate: &S,
    name: &str,
    binding: Binding,
    watch: &mut TerminationWatch,
) -> Result<Option<ObservedPod>, RequestFailure> {
    let pod = substrate.get_pod(name).await?;
    let terminating = pod
        .as_ref()
        .and_then(|p| terminating(p, substrate.namespace()));
    if let Some(overdue) = watch.observe(substrate.now(), terminating.as_ref())
        && let Some(pod) = &terminating
    {
        let node = match &pod.node {
            Some(node) => substrate.read_node(node).await,
            None => NodeFacts::Unknown,
        };
        tracing::warn!("{}", diagnose(pod, &node, overdue));
    }
    Ok(pod.as_ref().map(|p| observe_pod(p, binding)))
}

/// What a deletion-marked pod shows about its deletion; `None` when it is not marked.
fn terminating(pod: &Pod, namespace: &str) -> Option<TerminatingPod> {
    let meta = &pod.metadata;
    meta.deletion_timestamp.as_ref()?;
    Some(TerminatingPod {
        namespace: meta
            .namespace
            .clone()
            .unwrap_or_else(|| namespace.to_owned()),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone(),
        finalizers: meta.finalizers.clone().unwrap_or_default(),
        node: pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty()),
        grace_seconds: meta.deletion_grace_period_seconds,
    })
}

/// The fenced pod delete a machine asked for, its answer mapped back.
pub(super) async fn delete_pod<S: Substrate>(
    substrate: &S,
    deletion: &PodDeletion,
) -> Result<DeleteAnswer, RequestFailure> {
    substrate.delete_pod(deletion).await
}

/// The fenced Secret delete a machine asked for, its answer mapped back.
pub(super) async fn delete_secret<S: Substrate>(
    substrate: &S,
    deletion: &SecretDeletion,
) -> Result<DeleteAnswer, RequestFailure> {
    substrate.delete_secret(deletion).await
}

/// [`delete_secret`] for deploy and undeploy, whose reports do not list failed Secret deletes:
/// a failure is also a warning (the Secret stays for a later GC pass to collect).
pub(super) async fn drop_secret<S: Substrate>(
    substrate: &S,
    deletion: &SecretDeletion,
) -> Result<DeleteAnswer, RequestFailure> {
    let answer = delete_secret(substrate, deletion).await;
    if let Err(failure) = &answer {
        tracing::warn!(
            "secret {} left for later collection: {failure}",
            deletion.name()
        );
    }
    answer
}

/// The agent's pods and Secrets as the machines' [`Listing`] (without the server clock).
pub(super) async fn listing<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
) -> Result<Listing, RequestFailure> {
    list_both(substrate, &agent.selector(), agent.binding())
        .await
        .map(|(pods, secrets, _)| Listing { pods, secrets })
}

/// Quorum-list pods (with the server clock as Unix seconds) and then Secrets by `selector`,
/// observed under `binding`.
pub(super) async fn list_both<S: Substrate>(
    substrate: &S,
    selector: &str,
    binding: Binding,
) -> Result<(Vec<ObservedPod>, Vec<ObservedSecret>, Option<i64>), RequestFailure> {
    let pods = substrate.list_pods(selector).await?;
    let secrets = substrate.list_secrets(selector).await?;
    Ok((
        pods.items.iter().map(|p| observe_pod(p, binding)).collect(),
        secrets.iter().map(|s| observe_secret(s, binding)).collect(),
        pods.server_now.map(|now| now.timestamp()),
    ))
}
