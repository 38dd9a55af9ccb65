//! The `status` operation (deploy.md § status): the drive of `apiary-classify`'s status machine.
//! Shell only, and read-only.

use apiary_classify::failure::RequestFailure;
use apiary_classify::status::{StatusMachine, StatusReport, StatusSpec};
use apiary_classify::workspace::ClaimShape;

use super::perform::{Performer, drive};
use super::shared::{Operation, ignore, in_span};
use crate::config::ValidConfig;
use crate::naming::AgentIdentity;
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
        compare_env: config.is_some(),
        desired_settings: config.map(|c| c.intent().settings()),
        desired_claim: config
            .and_then(|c| c.pod_options().workspace_claim.as_ref())
            .map(|claim| ClaimShape {
                size: Some(claim.size.clone()),
                storage_class: claim.storage_class.clone(),
            }),
    });
    let mut performer = Performer::new(substrate, agent).configured(config);
    let mut on_progress = ignore;
    let run = drive(machine, &mut performer, &mut on_progress);
    in_span(Operation::Status, agent, &agent.pod_name(), run).await
}
