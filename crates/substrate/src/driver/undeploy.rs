//! The undeploy operation (deploy.md § undeploy): the drive of `apiary-classify`'s undeploy
//! machine, then the agent's policy and workspace claim once its pod is gone. Shell only: the
//! delete, its fence, the wait and which Secrets go are the machine's.

use std::time::Duration;

use apiary_classify::undeploy::{UndeployError, UndeployMachine, UndeployReport, UndeploySpec};

use super::perform::{Performer, drive};
use super::shared::{DEFAULT_POLL, OnProgress, Operation, ignore, in_span};
use crate::naming::AgentIdentity;
use crate::observe::object_marks;
use crate::substrate::{DeleteAnswer, Substrate};
use apiary_classify::policy::policy_deletion;
use apiary_classify::undeploy::undeploy_removes_policy;
use apiary_classify::workspace::{
    AfterClaimDelete, ClaimFate, ClaimSettle, after_claim_delete, settle_claim,
};

/// How undeploy runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UndeployOptions {
    /// Wait for the pod to disappear before deleting Secrets (`--no-wait` turns it off).
    pub wait: bool,
    /// The bound of the wait.
    pub deadline: Duration,
    /// The poll interval.
    pub poll: Duration,
    /// `--delete-workspace`: delete the agent's workspace claim (fenced) once its pod is gone
    /// (deploy.md § Persistent workspace). Without it the claim is kept and reported.
    pub delete_workspace: bool,
}

impl Default for UndeployOptions {
    fn default() -> UndeployOptions {
        UndeployOptions {
            wait: true,
            deadline: apiary_classify::deploy::DEFAULT_DEADLINE,
            poll: DEFAULT_POLL,
            delete_workspace: false,
        }
    }
}

/// Undeploy `agent` (deploy.md § undeploy): fenced delete of a verified pod, optional wait for
/// its uid to go, then delete every verified Secret no listed pod references, and, once no pod
/// of the agent can run, its verified NetworkPolicy (deploy.md § Egress control).
///
/// # Errors
/// [`UndeployError`]: a foreign pod (nothing touched), a timeout, a concurrent replacement, or
/// a failed request.
pub async fn undeploy<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    options: &UndeployOptions,
) -> Result<UndeployReport, UndeployError> {
    undeploy_watching(substrate, agent, options, &mut ignore).await
}

/// [`undeploy`], handing each change of observed state to `on_progress`.
///
/// # Errors
/// As [`undeploy`].
pub async fn undeploy_watching<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    options: &UndeployOptions,
    on_progress: OnProgress<'_>,
) -> Result<UndeployReport, UndeployError> {
    in_span(
        Operation::Undeploy,
        agent,
        &agent.pod_name(),
        run(substrate, agent, options, on_progress),
    )
    .await
}

async fn run<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    options: &UndeployOptions,
    on_progress: OnProgress<'_>,
) -> Result<UndeployReport, UndeployError> {
    let machine = UndeployMachine::new(UndeploySpec {
        pod_name: agent.pod_name(),
        owner: agent.owner(),
        wait: options.wait,
        deadline: options.deadline,
        poll: options.poll,
    });
    let mut performer = Performer::new(substrate, agent, Operation::Undeploy);
    let mut report = drive(machine, &mut performer, on_progress).await?;
    let pod_gone = undeploy_removes_policy(&report);
    if pod_gone {
        report.network_policy = remove_policy(substrate, agent).await?;
    }
    report.workspace =
        settle_workspace(substrate, agent, options.delete_workspace && pod_gone).await?;
    Ok(report)
}

/// deploy.md § Persistent workspace: read the agent's claim and report it kept, or, when
/// `delete` (`--delete-workspace` and its pod gone), delete it fenced by the read that proved it
/// ours, as `apiary-classify`'s workspace rules decide. A foreign claim is never touched. Without
/// `delete` a read that fails only loses the report line, never the undeploy (an older deployer
/// role may not read claims).
async fn settle_workspace<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    delete: bool,
) -> Result<Option<ClaimFate>, UndeployError> {
    let name = agent.workspace_claim_name();
    let fate = |deleted| {
        Ok(Some(ClaimFate {
            name: name.clone(),
            deleted,
        }))
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let claim = match substrate.get_workspace_claim(&name).await {
            Ok(Some(claim)) => claim,
            Ok(None) => return Ok(None),
            Err(error) if !delete => {
                tracing::debug!("could not read the workspace claim: {error}");
                return Ok(None);
            }
            Err(error) => return Err(UndeployError::Failed(error)),
        };
        let marks = object_marks(&claim.metadata, agent.binding());
        let deletion = match settle_claim(&marks, &agent.owner(), delete) {
            ClaimSettle::Foreign => {
                tracing::warn!(claim = %name, "a persistentvolumeclaim apiary did not create holds the agent's workspace name; left alone");
                return Ok(None);
            }
            ClaimSettle::Keep => return fate(false),
            ClaimSettle::Delete(deletion) => deletion,
        };
        let answer = substrate
            .delete_workspace_claim(&deletion)
            .await
            .map_err(UndeployError::Failed)?;
        match after_claim_delete(answer, attempt) {
            AfterClaimDelete::Deleted => {
                tracing::info!(claim = %name, "deleted the workspace claim");
                return fate(true);
            }
            AfterClaimDelete::Gone => return Ok(None),
            AfterClaimDelete::ReadAgain => {}
            AfterClaimDelete::GiveUp => {
                tracing::warn!(claim = %name, "the workspace claim changed at each read; it was kept: run undeploy --delete-workspace again");
                return fate(false);
            }
        }
    }
}

/// deploy.md § Egress control: read the agent's policy and delete it, fenced, when it is proven
/// ours; the deleted name. A foreign policy is never touched; a lost precondition (it changed
/// since the read) leaves it to the next undeploy or `gc`.
pub(super) async fn remove_policy<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
) -> Result<Option<String>, UndeployError> {
    let failed = UndeployError::Failed;
    let policy = match substrate.get_network_policy(&agent.pod_name()).await {
        Ok(Some(policy)) => policy,
        Ok(None) => return Ok(None),
        // A deployer role from before `--isolate` may not read policies: undeploy never fails
        // for an option it may not have used; `gc` with the current role collects a leftover.
        Err(error) if error.reason() == Some("Forbidden") => {
            tracing::debug!("not allowed to read network policies: {error}");
            return Ok(None);
        }
        Err(error) => return Err(failed(error)),
    };
    let marks = object_marks(&policy.metadata, agent.binding());
    let Some(deletion) = policy_deletion(&marks, &agent.owner()) else {
        tracing::warn!(policy = %agent.pod_name(), "a network policy apiary did not create holds the agent's name; left alone");
        return Ok(None);
    };
    match substrate
        .delete_network_policy(&deletion)
        .await
        .map_err(failed)?
    {
        DeleteAnswer::Accepted => Ok(Some(deletion.name().to_owned())),
        DeleteAnswer::NotFound | DeleteAnswer::PreconditionFailed => Ok(None),
    }
}
