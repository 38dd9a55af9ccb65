//! One GC pass (deploy.md § Execution): the drive of `apiary-classify`'s GC machine.
//! Shell only: the plan, the re-read decision and what counts as a failure are the machine's.

use super::perform::gc_pass;
use super::shared::{Operation, in_span};
use crate::naming::AgentIdentity;
use crate::substrate::Substrate;
use apiary_classify::failure::RequestFailure;
use apiary_classify::gc::GcReport;

/// Run one GC pass for `agent` (deploy.md § Execution). With `dry_run`, only the reads happen
/// and the plan is reported. A pass that leaves the agent with nothing also deletes its
/// verified NetworkPolicy (deploy.md § Egress control).
///
/// # Errors
/// A list or re-read failure aborts the pass. Individual delete failures do not: they are in
/// [`GcReport::failures`].
pub async fn gc<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    dry_run: bool,
) -> Result<GcReport, RequestFailure> {
    in_span(
        Operation::Gc,
        agent,
        &agent.pod_name(),
        gc_pass(substrate, agent, dry_run, true),
    )
    .await
}
