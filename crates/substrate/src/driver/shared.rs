//! The requests and helpers every operation of the driver shares: quorum reads mapped onto the
//! classify vocabulary, delete answers, the paired listing, and the progress sink. Imperative
//! shell; it decides nothing.

use std::time::Duration;

use apiary_classify::facts::{ObservedPod, ObservedSecret};
use apiary_classify::failure::RequestFailure;
use apiary_classify::machine::DeleteAnswer;
use apiary_classify::status::Progress;

use crate::observe::{observe_pod, observe_secret};
use crate::substrate::{DeleteOutcome, Substrate, SubstrateError};

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

pub(super) async fn read_pod<S: Substrate>(
    substrate: &S,
    name: &str,
) -> Result<Option<ObservedPod>, RequestFailure> {
    substrate
        .get_pod(name)
        .await
        .map(|pod| pod.as_ref().map(observe_pod))
        .map_err(|e| e.failure())
}

pub(super) fn delete_answer(outcome: DeleteOutcome) -> DeleteAnswer {
    match outcome {
        DeleteOutcome::Accepted => DeleteAnswer::Accepted,
        DeleteOutcome::NotFound => DeleteAnswer::NotFound,
        DeleteOutcome::PreconditionFailed => DeleteAnswer::PreconditionFailed,
    }
}

/// Quorum-list pods (with the server clock as Unix seconds) and then Secrets by `selector`.
pub(super) async fn list_both<S: Substrate>(
    substrate: &S,
    selector: &str,
) -> Result<(Vec<ObservedPod>, Vec<ObservedSecret>, Option<i64>), SubstrateError> {
    let pods = substrate.list_pods(selector).await?;
    let secrets = substrate.list_secrets(selector).await?;
    Ok((
        pods.items.iter().map(observe_pod).collect(),
        secrets.iter().map(observe_secret).collect(),
        pods.server_now.map(|now| now.timestamp()),
    ))
}
