//! The undeploy operation (deploy.md § undeploy): the drive of `apiary-classify`'s undeploy
//! machine. Shell only: the delete, its fence, the wait, which Secrets go, and when the agent's
//! policy and workspace claim are dealt with are the machine's.

use std::time::Duration;

use apiary_classify::grace::GracePeriod;
use apiary_classify::undeploy::{UndeployError, UndeployMachine, UndeployReport, UndeploySpec};

use super::perform::{Performer, drive};
use super::shared::{DEFAULT_POLL, OnProgress, Operation, ignore, in_span};
use crate::naming::AgentIdentity;
use crate::substrate::Substrate;

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
    /// `--grace-period`: the pod delete's grace period override; `None` keeps the pod's own
    /// (deploy.md § Grace periods).
    pub grace: Option<GracePeriod>,
}

impl Default for UndeployOptions {
    fn default() -> UndeployOptions {
        UndeployOptions {
            wait: true,
            deadline: apiary_classify::deploy::DEFAULT_DEADLINE,
            poll: DEFAULT_POLL,
            delete_workspace: false,
            grace: None,
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
        delete_workspace: options.delete_workspace,
        grace: options.grace,
    });
    let mut performer = Performer::new(substrate, agent);
    drive(machine, &mut performer, on_progress).await
}
