//! The agent's objects besides its pod and Secrets, and the requests that handle them: the
//! deploy machine's prepare step puts them in place (`prepare`); undeploy and an emptying GC pass
//! remove the policy (`remove_policy`), undeploy settles the workspace claim
//! (`settle_workspace`), and status reads it (`read_workspace`).
//!
//! Both kinds run one path: `apiary-classify`'s object machines (`object::Place`,
//! `object::Settle`) decide every step, and [`perform`] answers their requests through the
//! [`Object`] trait, which maps them onto the `Substrate` methods of the NetworkPolicy of
//! `deploy --isolate` (deploy.md § Egress control) and of the workspace claim of `deploy
//! --workspace-size` (deploy.md § Persistent workspace). What remains per kind is the report:
//! its log lines and the answer of the operation's request.
//!
//! Shell only: it performs requests and logs what the machines decided; it decides nothing.

use std::future::Future;

use apiary_classify::binding::Binding;
use apiary_classify::failure::RequestFailure;
use apiary_classify::fence::Fence;
use apiary_classify::object::{
    Found, Kind, ObjectAnswer, ObjectRequest, Place, Placed, Settle, Settled, Step,
};
use apiary_classify::policy::{Policy, PolicyDeletion, PolicyFailure};
use apiary_classify::request::Prepared;
use apiary_classify::workspace::{
    Claim, ClaimDeletion, ClaimFailure, ClaimFate, ClaimReport, ClaimShape, ClaimStatus,
    claim_report,
};
use k8s_openapi::Metadata;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::build::policy::build_network_policy;
use crate::build::workspace::build_workspace_claim;
use crate::config::ValidConfig;
use crate::naming::AgentIdentity;
use crate::observe::object_marks;
use crate::substrate::{CreateAnswer, DeleteAnswer, Substrate};

/// One kind of the agent's other objects as the shell handles it: the `Substrate` methods that
/// answer its machines' requests, and what a read of one shows them.
pub(crate) trait Object: Metadata<Ty = ObjectMeta> + Sized + Sync {
    /// Its kind in `apiary-classify`'s object machines.
    type Kind: Kind;

    /// What the machines compare, as `binding` reads it from this object.
    fn shape(&self, binding: Binding) -> <Self::Kind as Kind>::Shape;

    /// Create it.
    fn create<S: Substrate>(
        &self,
        substrate: &S,
    ) -> impl Future<Output = Result<CreateAnswer, RequestFailure>> + Send;

    /// Quorum read of the one named `name`.
    fn get<S: Substrate>(
        substrate: &S,
        name: &str,
    ) -> impl Future<Output = Result<Option<Self>, RequestFailure>> + Send;

    /// Replace the one under its name with this, fenced by `fence`.
    fn update<S: Substrate>(
        &self,
        substrate: &S,
        fence: &Fence,
    ) -> impl Future<Output = Result<bool, RequestFailure>> + Send;

    /// The fenced delete.
    fn delete<S: Substrate>(
        substrate: &S,
        deletion: &<Self::Kind as Kind>::Deletion,
    ) -> impl Future<Output = Result<DeleteAnswer, RequestFailure>> + Send;
}

impl Object for NetworkPolicy {
    type Kind = Policy;

    fn shape(&self, binding: Binding) -> Option<String> {
        object_marks(&self.metadata, binding).create_intent
    }

    async fn create<S: Substrate>(&self, substrate: &S) -> Result<CreateAnswer, RequestFailure> {
        substrate.create_network_policy(self).await
    }

    async fn get<S: Substrate>(substrate: &S, name: &str) -> Result<Option<Self>, RequestFailure> {
        substrate.get_network_policy(name).await
    }

    async fn update<S: Substrate>(
        &self,
        substrate: &S,
        fence: &Fence,
    ) -> Result<bool, RequestFailure> {
        substrate.update_network_policy(self, fence).await
    }

    async fn delete<S: Substrate>(
        substrate: &S,
        deletion: &PolicyDeletion,
    ) -> Result<DeleteAnswer, RequestFailure> {
        substrate.delete_network_policy(deletion).await
    }
}

impl Object for PersistentVolumeClaim {
    type Kind = Claim;

    fn shape(&self, _: Binding) -> ClaimShape {
        let spec = self.spec.as_ref();
        ClaimShape {
            size: spec
                .and_then(|s| s.resources.as_ref())
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get("storage"))
                .map(|q| q.0.clone()),
            storage_class: spec.and_then(|s| s.storage_class_name.clone()),
        }
    }

    async fn create<S: Substrate>(&self, substrate: &S) -> Result<CreateAnswer, RequestFailure> {
        substrate.create_workspace_claim(self).await
    }

    async fn get<S: Substrate>(substrate: &S, name: &str) -> Result<Option<Self>, RequestFailure> {
        substrate.get_workspace_claim(name).await
    }

    /// Never asked for: a claim is never changed (`Claim::UPDATES`).
    async fn update<S: Substrate>(&self, _: &S, _: &Fence) -> Result<bool, RequestFailure> {
        Err(not_asked("a workspace claim update"))
    }

    async fn delete<S: Substrate>(
        substrate: &S,
        deletion: &ClaimDeletion,
    ) -> Result<DeleteAnswer, RequestFailure> {
        substrate.delete_workspace_claim(deletion).await
    }
}

/// A request the machine cannot ask for this kind or without an object built: a bug in apiary,
/// never sent.
fn not_asked(what: &str) -> RequestFailure {
    RequestFailure::unsent(format!(
        "internal error in apiary (please report it): {what} was asked for"
    ))
}

/// Answer one request of an object machine: the object `name` of kind `O`, `built` being the
/// one a deploy builds (none for a settle, which never creates or updates).
async fn perform<S: Substrate, O: Object>(
    substrate: &S,
    binding: Binding,
    name: &str,
    built: Option<&O>,
    request: ObjectRequest<O::Kind>,
) -> ObjectAnswer<O::Kind> {
    match request {
        ObjectRequest::Create => ObjectAnswer::Created(match built {
            Some(object) => object.create(substrate).await,
            None => Err(not_asked("a create without an object")),
        }),
        ObjectRequest::Read => ObjectAnswer::Read(O::get(substrate, name).await.map(|found| {
            found.map(|object| Found {
                marks: object_marks(object.metadata(), binding),
                shape: object.shape(binding),
            })
        })),
        ObjectRequest::Update(fence) => ObjectAnswer::Updated(match built {
            Some(object) => object.update(substrate, &fence).await,
            None => Err(not_asked("an update without an object")),
        }),
        ObjectRequest::Delete(deletion) => {
            ObjectAnswer::Deleted(O::delete(substrate, &deletion).await)
        }
    }
}

/// Run the object machine `step` to its end, each request answered by [`perform`].
async fn drive<S: Substrate, O: Object, Output>(
    substrate: &S,
    agent: &AgentIdentity,
    name: &str,
    built: Option<&O>,
    mut step: impl FnMut(ObjectAnswer<O::Kind>) -> Step<O::Kind, Output>,
) -> Output {
    let mut answer = ObjectAnswer::Start;
    loop {
        match step(answer) {
            Step::Done(output) => return output,
            Step::Request(request) => {
                answer = perform(substrate, agent.binding(), name, built, request).await;
            }
        }
    }
}

/// The agent's object `built`, named `name`, put in place as `object::Place` decides.
async fn place<S: Substrate, O: Object>(
    substrate: &S,
    agent: &AgentIdentity,
    name: &str,
    built: &O,
) -> Result<Placed<<O::Kind as Kind>::Shape>, <O::Kind as Kind>::Failure> {
    let mut machine = Place::<O::Kind>::new(agent.owner(), built.shape(agent.binding()));
    drive(substrate, agent, name, Some(built), |answer| {
        machine.step(answer)
    })
    .await
}

/// The agent's object `name` of kind `O` read, and deleted when `delete`, as `object::Settle`
/// decides.
async fn settle<S: Substrate, O: Object>(
    substrate: &S,
    agent: &AgentIdentity,
    name: &str,
    delete: bool,
) -> Result<Settled<<O::Kind as Kind>::Deletion>, RequestFailure> {
    let mut machine = Settle::<O::Kind>::new(agent.owner(), delete);
    drive::<S, O, _>(substrate, agent, name, None, |answer| machine.step(answer)).await
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

/// The agent's policy in place as `config` builds it; nothing to do without `--isolate`.
async fn prepare_policy<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
) -> Result<(), PolicyFailure> {
    let Some(policy) = build_network_policy(config) else {
        return Ok(());
    };
    let name = config.pod_name();
    match place(substrate, config.agent(), &name, &policy).await? {
        Placed::Created => tracing::info!(policy = %name, "created the network policy"),
        Placed::Updated => tracing::info!(policy = %name, "updated the network policy"),
        Placed::Found(_) => {}
    }
    Ok(())
}

/// The agent's claim created, or found and proven ours (then used as it is, and how it differs
/// from what was asked reported); `None` without `--workspace-size`.
async fn prepare_workspace<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
) -> Result<Option<ClaimReport>, ClaimFailure> {
    let Some(claim) = build_workspace_claim(config) else {
        return Ok(None);
    };
    let agent = config.agent();
    let name = agent.workspace_claim_name();
    let placed = place(substrate, agent, &name, &claim).await?;
    if placed == Placed::Created {
        tracing::info!(claim = %name, "created the workspace claim");
    }
    let report = claim_report(name, placed, &claim.shape(agent.binding()));
    for difference in &report.differences {
        let name = &report.name;
        tracing::warn!(
            claim = %name,
            "workspace claim {name} has {difference}; it is used as it is (apiary never \
             recreates a claim)"
        );
    }
    Ok(Some(report))
}

/// deploy.md § Persistent workspace: read the agent's claim and report it kept, or, when
/// `delete` (`--delete-workspace` and its pod gone), delete it fenced by the read that proved it
/// ours, reading again after a lost precondition, as `object::Settle` decides. A foreign claim
/// is never touched. Without `delete` a read that fails only loses the report line, never the
/// undeploy (an older deployer role may not read claims).
pub(super) async fn settle_workspace<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    delete: bool,
) -> Result<Option<ClaimFate>, RequestFailure> {
    let name = agent.workspace_claim_name();
    let settled = settle::<S, PersistentVolumeClaim>(substrate, agent, &name, delete).await?;
    let deleted = match settled {
        Settled::Absent => return Ok(None),
        Settled::Unread(error) => {
            tracing::debug!("could not read the workspace claim: {error}");
            return Ok(None);
        }
        Settled::Foreign => {
            tracing::warn!(claim = %name, "a persistentvolumeclaim apiary did not create holds the agent's workspace name; left alone");
            return Ok(None);
        }
        Settled::Kept => false,
        Settled::Deleted(_) => {
            tracing::info!(claim = %name, "deleted the workspace claim");
            true
        }
        Settled::GaveUp => {
            tracing::warn!(claim = %name, "the workspace claim changed at each read; it was kept: run undeploy --delete-workspace again");
            false
        }
    };
    Ok(Some(ClaimFate { name, deleted }))
}

/// deploy.md § Egress control: read the agent's policy and delete it, fenced, when it is proven
/// ours; the deleted name. A foreign policy is never touched; a lost precondition (it changed
/// since the read) leaves it to the next undeploy or `gc`.
pub(super) async fn remove_policy<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
) -> Result<Option<String>, RequestFailure> {
    let name = agent.pod_name();
    match settle::<S, NetworkPolicy>(substrate, agent, &name, true).await? {
        Settled::Deleted(deletion) => Ok(Some(deletion.name().to_owned())),
        // A deployer role from before `--isolate` may not read policies: undeploy never fails
        // for an option it may not have used; `gc` with the current role collects a leftover.
        Settled::Unread(error) => {
            tracing::debug!("not allowed to read network policies: {error}");
            Ok(None)
        }
        Settled::Foreign => {
            tracing::warn!(policy = %name, "a network policy apiary did not create holds the agent's name; left alone");
            Ok(None)
        }
        Settled::Absent | Settled::Kept | Settled::GaveUp => Ok(None),
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
    let phase = claim.status.as_ref().and_then(|s| s.phase.clone());
    Some(ClaimStatus::of(
        name,
        &marks,
        &agent.owner(),
        claim.shape(agent.binding()),
        phase,
    ))
}
