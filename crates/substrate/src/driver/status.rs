//! The `status` operation (deploy.md § status): the drive of `apiary-classify`'s status machine,
//! then the environment comparison and the workspace claim. Shell only, and read-only.

use apiary_classify::failure::RequestFailure;
use apiary_classify::status::{StatusMachine, StatusReport, StatusSpec};

use apiary_classify::workspace::{ClaimStatus, ClaimStep, claim_step};

use super::perform::{Performer, drive};
use super::prepare::claim_shape;
use super::shared::{Operation, ignore, in_span};
use crate::config::ValidConfig;
use crate::naming::AgentIdentity;
use crate::observe::object_marks;
use crate::substrate::Substrate;

/// Report the status of `agent`'s pod (read-only). With `config`, also whether the pod's
/// recorded intent matches it and, when its own Secret exists, which environment keys differ
/// from the configuration's (deploy.md § status).
///
/// # Errors
/// A failed read of the pod or of its Secret.
pub async fn status<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    config: Option<&ValidConfig>,
) -> Result<StatusReport, RequestFailure> {
    let machine = StatusMachine::new(StatusSpec {
        pod_name: agent.pod_name(),
        owner: agent.owner(),
        image: config.map(|c| c.image().as_str().to_owned()),
        desired_intent: config.map(ValidConfig::fingerprint),
    });
    let run = async {
        let mut performer = Performer::new(substrate, agent, Operation::Status);
        let mut report = drive(machine, &mut performer, &mut ignore).await?;
        let secret = report.secret.as_ref().filter(|s| s.exists);
        if let (Some(config), Some(secret)) = (config, secret) {
            report.env_differs = substrate
                .read_secret_values(&secret.name)
                .await?
                .map(|live| config.env().differing_keys(&live));
        }
        report.workspace = read_workspace(substrate, agent).await;
        Ok(report)
    };
    in_span(Operation::Status, agent, &agent.pod_name(), run).await
}

/// deploy.md § Persistent workspace: the claim under the agent's workspace name, when any. A
/// failed read only loses the line (an older deployer role may not read claims).
async fn read_workspace<S: Substrate>(substrate: &S, agent: &AgentIdentity) -> Option<ClaimStatus> {
    let name = agent.workspace_claim_name();
    let claim = match substrate.get_workspace_claim(&name).await {
        Ok(claim) => claim?,
        Err(error) => {
            tracing::debug!("could not read the workspace claim: {error}");
            return None;
        }
    };
    let marks = object_marks(&claim.metadata, agent.binding());
    Some(ClaimStatus {
        name,
        ours: claim_step(&marks, &agent.owner()) != ClaimStep::Foreign,
        shape: claim_shape(&claim),
        phase: claim.status.as_ref().and_then(|s| s.phase.clone()),
        deleting: marks.deletion_marked,
    })
}
