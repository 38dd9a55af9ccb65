//! What every operation of the driver shares besides the drive loop (`perform`): the operation's
//! tracing span, the default poll, and the progress sink. Imperative shell; it decides nothing.

use std::time::Duration;

use apiary_classify::status::Progress;
use tracing::Instrument;
use tracing::instrument::Instrumented;

use crate::naming::AgentIdentity;

/// The operations, each run in a span of its own. Only a label: the performer never sees it
/// (what differs per operation is in the requests its machine asks for).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Operation {
    /// `deploy`.
    Deploy,
    /// `undeploy`.
    Undeploy,
    /// One GC pass (`gc`; preflight GC runs inside the deploy's span instead).
    Gc,
    /// The collection of an expired agent.
    Expire,
    /// `renew`.
    Renew,
    /// `status` (reads only).
    Status,
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
        Operation::Expire => span!("expire"),
        Operation::Renew => span!("renew"),
        Operation::Status => span!("status"),
    };
    future.instrument(span)
}

/// The default poll interval (deploy.md § Loop).
pub const DEFAULT_POLL: Duration = apiary_classify::deploy::DEFAULT_POLL;

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
