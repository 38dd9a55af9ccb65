//! The deploy machine's prepare step: the agent's objects its pod depends on, put in place
//! concurrently before the first Secret create, each create first (one round trip when there is
//! none), and when the name is taken, read and decided by `apiary-classify`:
//!
//! - the NetworkPolicy of `deploy --isolate` (deploy.md § Egress control): `policy_step` keeps
//!   ours, updates ours (fenced by the read), or refuses a foreign or deleting one;
//! - the workspace claim of `deploy --workspace-size` (deploy.md § Persistent workspace):
//!   `claim_step` uses ours as it is (reporting how it differs from what was asked), or refuses
//!   a foreign or deleting one. Nothing here ever deletes or changes a claim.
//!
//! Shell only.

use apiary_classify::failure::RequestFailure;
use apiary_classify::policy::{PolicyFailure, PolicyProblem, PolicyStep, policy_step};
use apiary_classify::request::Prepared;
use apiary_classify::workspace::{
    ClaimFailure, ClaimProblem, ClaimReport, ClaimShape, ClaimStep, claim_differences, claim_step,
};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use crate::build::policy::build_network_policy;
use crate::build::workspace::build_workspace_claim;
use crate::config::ValidConfig;
use crate::observe::object_marks;
use crate::substrate::{CreateAnswer, Substrate};

fn failed(error: RequestFailure) -> PolicyFailure {
    PolicyFailure::Failed(error)
}

/// The halves the machine asked for, concurrently; an unasked half answers `Ok`.
pub(super) async fn prepare<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
    policy: bool,
    workspace: bool,
) -> Prepared {
    let policy = async {
        if policy {
            prepare_policy(substrate, config).await
        } else {
            Ok(())
        }
    };
    let workspace = async {
        if workspace {
            prepare_workspace(substrate, config).await
        } else {
            Ok(None)
        }
    };
    let (policy, workspace) = futures::future::join(policy, workspace).await;
    Prepared { policy, workspace }
}

/// The requested size and class of a claim as built or found.
pub(crate) fn claim_shape(claim: &PersistentVolumeClaim) -> ClaimShape {
    let spec = claim.spec.as_ref();
    ClaimShape {
        size: spec
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage"))
            .map(|q| q.0.clone()),
        storage_class: spec.and_then(|s| s.storage_class_name.clone()),
    }
}

/// The agent's claim created, or found and proven ours (then used as it is); `None` without
/// `--workspace-size`.
async fn prepare_workspace<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
) -> Result<Option<ClaimReport>, ClaimFailure> {
    let Some(claim) = build_workspace_claim(config) else {
        return Ok(None);
    };
    let failed = ClaimFailure::Failed;
    let name = config.agent().workspace_claim_name();
    let created = |name: String| {
        tracing::info!(claim = %name, "created the workspace claim");
        Ok(Some(ClaimReport {
            name,
            created: true,
            differences: Vec::new(),
        }))
    };
    match substrate
        .create_workspace_claim(&claim)
        .await
        .map_err(failed)?
    {
        CreateAnswer::Created => return created(name),
        CreateAnswer::AlreadyExists => {}
    }
    let Some(found) = substrate.get_workspace_claim(&name).await.map_err(failed)? else {
        // Deleted since the create found it: one create more, then give up to the caller.
        return match substrate
            .create_workspace_claim(&claim)
            .await
            .map_err(failed)?
        {
            CreateAnswer::Created => created(name),
            CreateAnswer::AlreadyExists => Err(ClaimFailure::Problem(ClaimProblem::Contended)),
        };
    };
    let agent = config.agent();
    let marks = object_marks(&found.metadata, agent.binding());
    match claim_step(&marks, &agent.owner()) {
        ClaimStep::Use => {
            let differences = claim_differences(&claim_shape(&claim), &claim_shape(&found));
            for difference in &differences {
                tracing::warn!(
                    claim = %name,
                    "workspace claim {name} has {difference}; it is used as it is (apiary never \
                     recreates a claim)"
                );
            }
            Ok(Some(ClaimReport {
                name,
                created: false,
                differences,
            }))
        }
        ClaimStep::Foreign => Err(ClaimFailure::Problem(ClaimProblem::Foreign)),
        ClaimStep::Deleting => Err(ClaimFailure::Problem(ClaimProblem::Deleting)),
    }
}

/// The agent's policy in place as `config` builds it; nothing to do without `--isolate`.
async fn prepare_policy<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
) -> Result<(), PolicyFailure> {
    let Some(policy) = build_network_policy(config) else {
        return Ok(());
    };
    let name = config.pod_name();
    match substrate.create_network_policy(&policy).await {
        Ok(CreateAnswer::Created) => {
            tracing::info!(policy = %name, "created the network policy");
            return Ok(());
        }
        Ok(CreateAnswer::AlreadyExists) => {}
        Err(error) => return Err(failed(error)),
    }
    let Some(observed) = substrate.get_network_policy(&name).await.map_err(failed)? else {
        // Deleted since the create found it: one create more, then give up to the caller.
        return match substrate.create_network_policy(&policy).await {
            Ok(CreateAnswer::Created) => Ok(()),
            Ok(CreateAnswer::AlreadyExists) => Err(PolicyFailure::Problem(PolicyProblem::Conflict)),
            Err(error) => Err(failed(error)),
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
            Err(error) => Err(failed(error)),
        },
        PolicyStep::Foreign => Err(PolicyFailure::Problem(PolicyProblem::Foreign)),
        PolicyStep::Deleting => Err(PolicyFailure::Problem(PolicyProblem::Deleting)),
    }
}
