//! The agent's objects besides its pod and Secrets, and the requests that handle them: the
//! deploy machine's prepare step puts them in place; undeploy and an emptying GC pass remove
//! the policy (`remove_policy`), undeploy settles the workspace claim (`settle_workspace`), and
//! status reads it (`read_workspace`).
//!
//! The prepare step puts the objects the pod depends on in place concurrently before the first
//! Secret create, each create first (one round trip when there is none), and when the name is
//! taken, reads them and lets `apiary-classify` decide:
//!
//! - the NetworkPolicy of `deploy --isolate` (deploy.md § Egress control): `policy_step` keeps
//!   ours, updates ours (fenced by the read), or refuses a foreign or deleting one;
//! - the workspace claim of `deploy --workspace-size` (deploy.md § Persistent workspace):
//!   `claim_step` uses ours as it is (reporting how it differs from what was asked), or refuses
//!   a foreign or deleting one. Nothing here ever deletes or changes a claim.
//!
//! Shell only.

use apiary_classify::failure::RequestFailure;
use apiary_classify::policy::{
    PolicyFailure, PolicyProblem, PolicyStep, policy_deletion, policy_step,
};
use apiary_classify::request::Prepared;
use apiary_classify::workspace::{
    AfterClaimDelete, ClaimFailure, ClaimFate, ClaimProblem, ClaimReport, ClaimSettle, ClaimShape,
    ClaimStatus, ClaimStep, after_claim_delete, claim_differences, claim_step, settle_claim,
};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use crate::build::policy::build_network_policy;
use crate::build::workspace::build_workspace_claim;
use crate::config::ValidConfig;
use crate::naming::AgentIdentity;
use crate::observe::object_marks;
use crate::substrate::{CreateAnswer, DeleteAnswer, Substrate};

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

/// deploy.md § Persistent workspace: read the agent's claim and report it kept, or, when
/// `delete` (`--delete-workspace` and its pod gone), delete it fenced by the read that proved it
/// ours, as `apiary-classify`'s workspace rules decide. A foreign claim is never touched. Without
/// `delete` a read that fails only loses the report line, never the undeploy (an older deployer
/// role may not read claims).
pub(super) async fn settle_workspace<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    delete: bool,
) -> Result<Option<ClaimFate>, RequestFailure> {
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
            Err(error) => return Err(error),
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
        let answer = substrate.delete_workspace_claim(&deletion).await?;
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
) -> Result<Option<String>, RequestFailure> {
    let policy = match substrate.get_network_policy(&agent.pod_name()).await {
        Ok(Some(policy)) => policy,
        Ok(None) => return Ok(None),
        // A deployer role from before `--isolate` may not read policies: undeploy never fails
        // for an option it may not have used; `gc` with the current role collects a leftover.
        Err(error) if error.reason() == Some("Forbidden") => {
            tracing::debug!("not allowed to read network policies: {error}");
            return Ok(None);
        }
        Err(error) => return Err(error),
    };
    let marks = object_marks(&policy.metadata, agent.binding());
    let Some(deletion) = policy_deletion(&marks, &agent.owner()) else {
        tracing::warn!(policy = %agent.pod_name(), "a network policy apiary did not create holds the agent's name; left alone");
        return Ok(None);
    };
    match substrate.delete_network_policy(&deletion).await? {
        DeleteAnswer::Accepted => Ok(Some(deletion.name().to_owned())),
        DeleteAnswer::NotFound | DeleteAnswer::PreconditionFailed => Ok(None),
    }
}

/// deploy.md § Persistent workspace: the claim under the agent's workspace name, when any. A
/// failed read only loses the line (an older deployer role may not read claims).
pub async fn read_workspace<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
) -> Option<ClaimStatus> {
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
