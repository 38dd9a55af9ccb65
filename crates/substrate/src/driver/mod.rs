//! The driver: executes the machines of `apiary-classify` against any [`Substrate`] — deploy
//! (deploy.md § The deploy operation), undeploy and status (§ status, undeploy, gc) and the GC
//! pass (§ Execution), one file each.
//!
//! Imperative shell: it performs I/O, maps answers onto the classify vocabulary, mints the
//! generation and rebuilds objects from the pure builders. It takes **no decisions**: which pod
//! to delete, with which fence, which Secret may go, when the deadline is over, what progress to
//! show — all of that is decided by the machines. Each operation runs in a `tracing` span with the
//! agent and pod as fields, so its messages name neither. It never logs, prints or returns an env
//! value (it never reads one back).

mod deploy;
mod gc;
mod status;
mod undeploy;

use std::time::Duration;

use apiary_classify::facts::{ObservedPod, ObservedSecret};
use apiary_classify::failure::RequestFailure;
pub use apiary_classify::gc::GcReport;
use apiary_classify::machine::DeleteAnswer;
pub use apiary_classify::machine::{DeployError, Deployed};
use apiary_classify::status::Progress;
pub use apiary_classify::status::{SecretStatus, StatusReport};
pub use apiary_classify::undeploy::{UndeployError, UndeployReport};

pub use deploy::{DeployOptions, deploy, deploy_spec, deploy_watching, spec_for};
pub use gc::gc;
pub use status::status;
pub use undeploy::{UndeployOptions, undeploy, undeploy_watching};

use crate::observe::{observe_pod, observe_secret};
use crate::substrate::{DeleteOutcome, Substrate, SubstrateError};

/// The default poll interval (deploy.md § Loop).
pub const DEFAULT_POLL: Duration = apiary_classify::machine::DEFAULT_POLL;

/// Where the driver hands each change of observed state a machine reports (the CLI renders
/// it). Called between requests, never with anything but a state and a redacted condition.
pub type OnProgress<'a> = &'a mut (dyn FnMut(&Progress) + Send);

/// Log one change of observed state (deploy.md § Loop: one line per change) and pass it on.
fn report_progress(progress: Progress, on_progress: &mut (dyn FnMut(&Progress) + Send)) {
    tracing::info!("pod {}", progress.state.as_str());
    on_progress(&progress);
}

/// A progress sink that only logs.
fn ignore(_: &Progress) {}

async fn read_pod<S: Substrate>(
    substrate: &S,
    name: &str,
) -> Result<Option<ObservedPod>, RequestFailure> {
    substrate
        .get_pod(name)
        .await
        .map(|pod| pod.as_ref().map(observe_pod))
        .map_err(|e| e.failure())
}

fn delete_answer(outcome: DeleteOutcome) -> DeleteAnswer {
    match outcome {
        DeleteOutcome::Accepted => DeleteAnswer::Accepted,
        DeleteOutcome::NotFound => DeleteAnswer::NotFound,
        DeleteOutcome::PreconditionFailed => DeleteAnswer::PreconditionFailed,
    }
}

/// Quorum-list pods (with the server clock as Unix seconds) and then Secrets by `selector`.
async fn list_both<S: Substrate>(
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
