//! Puts the agent's NetworkPolicy in place for `deploy --isolate` (deploy.md § Egress control):
//! create first (one round trip when there is none), and when the name is taken, read it and do
//! what `apiary-classify`'s `policy_step` decides: keep ours, update ours (fenced by the read), or
//! refuse a foreign or deleting one. Shell only.

use apiary_classify::policy::{PolicyFailure, PolicyProblem, PolicyStep, policy_step};

use crate::build::policy::build_network_policy;
use crate::config::ValidConfig;
use crate::observe::object_marks;
use crate::substrate::{CreateOutcome, Substrate, SubstrateError};

fn failed(error: &SubstrateError) -> PolicyFailure {
    PolicyFailure::Failed(error.failure())
}

/// The agent's policy in place as `config` builds it; nothing to do without `--isolate`.
pub(super) async fn prepare_policy<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
) -> Result<(), PolicyFailure> {
    let Some(policy) = build_network_policy(config) else {
        return Ok(());
    };
    let name = config.pod_name();
    match substrate.create_network_policy(&policy).await {
        Ok(CreateOutcome::Created) => {
            tracing::info!(policy = %name, "created the network policy");
            return Ok(());
        }
        Ok(CreateOutcome::AlreadyExists) => {}
        Err(error) => return Err(failed(&error)),
    }
    let Some(observed) = substrate
        .get_network_policy(&name)
        .await
        .map_err(|e| failed(&e))?
    else {
        // Deleted since the create found it: one create more, then give up to the caller.
        return match substrate.create_network_policy(&policy).await {
            Ok(CreateOutcome::Created) => Ok(()),
            Ok(CreateOutcome::AlreadyExists) => {
                Err(PolicyFailure::Problem(PolicyProblem::Conflict))
            }
            Err(error) => Err(failed(&error)),
        };
    };
    let agent = config.agent();
    let marks = object_marks(&observed.metadata, agent.binding());
    let desired = policy
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(agent.binding().annotation_create_intent))
        .cloned()
        .unwrap_or_default();
    match policy_step(&marks, &agent.owner(), &desired) {
        PolicyStep::Keep => Ok(()),
        PolicyStep::Update(fence) => match substrate.update_network_policy(&policy, &fence).await {
            Ok(true) => {
                tracing::info!(policy = %name, "updated the network policy");
                Ok(())
            }
            Ok(false) => Err(PolicyFailure::Problem(PolicyProblem::Conflict)),
            // Gone since the read: someone else is changing it.
            Err(error) if error.reason() == Some("NotFound") => {
                Err(PolicyFailure::Problem(PolicyProblem::Conflict))
            }
            Err(error) => Err(failed(&error)),
        },
        PolicyStep::Foreign => Err(PolicyFailure::Problem(PolicyProblem::Foreign)),
        PolicyStep::Deleting => Err(PolicyFailure::Problem(PolicyProblem::Deleting)),
    }
}
