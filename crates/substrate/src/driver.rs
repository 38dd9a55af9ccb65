//! The driver: executes the decisions of `apiary-classify` against any [`Substrate`] — the deploy
//! state machine's effects (deploy.md § The deploy operation), the GC pass (§ Execution),
//! undeploy and status (§ status, undeploy, gc).
//!
//! Imperative shell: it performs I/O, maps answers onto the classify vocabulary, mints the
//! generation and builds objects. It takes **no decisions**: which pod to delete, with which
//! fence, which Secret may go, when the deadline is over — all of that is decided by pure code
//! in `apiary-classify`. It never logs, prints or returns an env value (it never reads one back).

use std::time::Duration;

use apiary_classify::facts::{ObservedPod, ObservedSecret};
use apiary_classify::failure::RequestFailure;
use apiary_classify::gc::{GcPodDecision, OrphanSweep, decide_gc_reread, plan_gc};
use apiary_classify::machine::{
    DeleteAnswer, DeployMachine, DeploySpec, Effect, Event, Listing, NamespaceFailure, OwnSecret,
    PodCreateOutcome, SecretCreateFailure,
};
pub use apiary_classify::machine::{DeployError, Deployed};
use apiary_classify::status::{StatusState, pod_status};
use apiary_classify::undeploy::{
    Disappearance, UndeployPodStep, disappearance, undeploy_pod_step, undeploy_secrets,
};
use apiary_classify::verify::{PodView, view_pod};
use k8s_openapi::api::core::v1::Pod;

use crate::build::{build_pod, build_secret};
use crate::config::ValidConfig;
use crate::naming::{ANNOTATION_IMAGE, AgentIdentity, Generation};
use crate::observe::{observe_pod, observe_secret};
use crate::substrate::{CreateOutcome, DeleteOutcome, NamespaceError, Substrate, SubstrateError};

/// The default poll interval (deploy.md § Loop).
pub const DEFAULT_POLL: Duration = apiary_classify::machine::DEFAULT_POLL;

/// How one deploy runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeployOptions {
    /// The operation deadline (the validated timeout, at most 600 s).
    pub deadline: Duration,
    /// The poll interval.
    pub poll: Duration,
}

impl DeployOptions {
    /// The options a validated configuration asks for: its timeout and a 2 s poll.
    pub fn for_config(config: &ValidConfig) -> DeployOptions {
        DeployOptions {
            deadline: config.timeout(),
            poll: DEFAULT_POLL,
        }
    }
}

/// The machine's spec for deploying `config` with `options`, preflight GC on. A test that must
/// reach classification row 4 directly switches `preflight_gc` off and calls [`deploy_spec`].
pub fn spec_for(config: &ValidConfig, options: &DeployOptions) -> DeploySpec {
    DeploySpec {
        namespace: config.namespace().to_owned(),
        pod_name: config.pod_name(),
        agent_id: config.agent().id().to_owned(),
        image: config.image().as_str().to_owned(),
        desired_intent: config.fingerprint(),
        deadline: options.deadline,
        poll: options.poll,
        service_account: config.service_account().map(str::to_owned),
        preflight_gc: true,
    }
}

/// Deploy the agent of `config`: converge the namespace to exactly one started pod (deploy.md
/// § The deploy operation). Returns the started pod's name and whether its recorded intent
/// matches this configuration.
///
/// # Errors
/// Every failure row E1–E12 of deploy.md § Errors, as decided by the deploy state machine.
pub async fn deploy<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
    options: &DeployOptions,
) -> Result<Deployed, DeployError> {
    deploy_spec(substrate, config, spec_for(config, options)).await
}

/// [`deploy`] with the machine's spec given (see [`spec_for`]); `spec` must describe `config`.
///
/// # Errors
/// As [`deploy`].
pub async fn deploy_spec<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
    spec: DeploySpec,
) -> Result<Deployed, DeployError> {
    let agent = config.agent();
    let mut machine = DeployMachine::new(spec);
    let mut event = Event::Start;
    loop {
        let effect = machine.step(substrate.now(), event);
        while let Some(progress) = machine.poll_progress() {
            tracing::info!("pod {}: {}", config.pod_name(), progress.state.as_str());
        }
        event = match effect {
            Effect::Finish(result) => return result,
            Effect::EnsureNamespace => {
                Event::NamespaceEnsured(substrate.ensure_namespace().await.map_err(|error| {
                    match error {
                        NamespaceError::CreateForbidden { .. } => NamespaceFailure::CreateForbidden,
                        NamespaceError::Failed { source, .. } => {
                            NamespaceFailure::Failed(source.failure())
                        }
                    }
                }))
            }
            Effect::RunGc => {
                // GC is hygiene: a problem that matters resurfaces at create with a precise
                // message (deploy.md § Sequence step 4).
                match gc(substrate, agent, false).await {
                    Ok(report) => {
                        for error in &report.failures {
                            tracing::warn!("preflight gc: {error}");
                        }
                    }
                    Err(error) => tracing::warn!("preflight gc skipped: {error}"),
                }
                Event::GcDone
            }
            Effect::GetPod { name } | Effect::ReadLatestCondition { name } => {
                Event::PodRead(read_pod(substrate, &name).await)
            }
            Effect::GetServiceAccount { name } => Event::ServiceAccountRead(
                substrate
                    .service_account_exists(&name)
                    .await
                    .map_err(|e| e.failure()),
            ),
            Effect::CheckSecret { name } => Event::SecretChecked(
                substrate
                    .secret_exists(&name)
                    .await
                    .map_err(|e| e.failure()),
            ),
            Effect::CreateSecret => Event::SecretCreated(create_secret(substrate, config).await),
            Effect::CreatePod { secret } => {
                let Ok(generation) = secret.generation.parse::<Generation>() else {
                    return Err(DeployError::Internal {
                        detail: format!(
                            "the machine asked for the pod of secret {}, whose generation this \
                             driver did not mint",
                            secret.name
                        ),
                    });
                };
                Event::PodCreated(create_pod(substrate, config, generation, &secret).await)
            }
            Effect::DeletePod(deletion) => {
                tracing::info!(
                    "deleting pod {} (uid {}, resourceVersion {})",
                    deletion.name(),
                    deletion.fence().uid(),
                    deletion.fence().resource_version()
                );
                Event::PodDeleted(
                    substrate
                        .delete_pod(&deletion)
                        .await
                        .map(delete_answer)
                        .map_err(|e| e.failure()),
                )
            }
            Effect::ListForDrop { secret } => {
                let listed = list_both(substrate, &agent.selector()).await;
                if let Err(error) = &listed {
                    tracing::warn!("secret {secret} left for later collection: {error}");
                }
                Event::Listed(
                    listed
                        .map(|(pods, secrets, _)| Listing { pods, secrets })
                        .map_err(|e| e.failure()),
                )
            }
            Effect::DeleteSecret(deletion) => {
                let answer = substrate.delete_secret(&deletion).await;
                if let Err(error) = &answer {
                    tracing::warn!(
                        "secret {} left for later collection: {error}",
                        deletion.name()
                    );
                }
                Event::SecretDeleted(answer.map(delete_answer).map_err(|e| e.failure()))
            }
            Effect::Wait {
                max,
                pod,
                resource_version,
            } => {
                substrate
                    .wait_for_pod_change(&pod, resource_version.as_deref(), max)
                    .await;
                Event::Waited
            }
        };
    }
}

async fn read_pod<S: Substrate>(
    substrate: &S,
    name: &str,
) -> Result<Option<ObservedPod>, RequestFailure> {
    substrate
        .get_pod(name)
        .await
        .map(|pod| pod.as_ref().map(observe_pod))
        .map_err(|e| e.failure())
}

/// Mint a generation, build this attempt's Secret from it and create it.
async fn create_secret<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
) -> Result<OwnSecret, SecretCreateFailure> {
    let generation = Generation::mint().map_err(|error| SecretCreateFailure {
        name: format!("{}-<generation>", config.pod_name()),
        failure: RequestFailure::unsent(error.to_string()),
    })?;
    let name = config.agent().secret_name(generation);
    let failed = |failure| SecretCreateFailure {
        name: name.clone(),
        failure,
    };
    match substrate
        .create_secret(&build_secret(config, generation))
        .await
    {
        Ok(CreateOutcome::Created) => Ok(OwnSecret {
            generation: generation.to_string(),
            name,
        }),
        Ok(CreateOutcome::AlreadyExists) => Err(failed(RequestFailure::api(
            409,
            "AlreadyExists",
            "a secret with this freshly minted name already exists",
        ))),
        Err(error) => Err(failed(error.failure())),
    }
}

/// Rebuild this attempt's pod from its generation and create it.
async fn create_pod<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
    generation: Generation,
    secret: &OwnSecret,
) -> PodCreateOutcome {
    match substrate.create_pod(&build_pod(config, generation)).await {
        Ok(CreateOutcome::Created) => {
            tracing::info!(
                "created pod {} with secret {}",
                config.pod_name(),
                secret.name
            );
            PodCreateOutcome::Created
        }
        Ok(CreateOutcome::AlreadyExists) => PodCreateOutcome::AlreadyExists,
        Err(error) => match &error {
            // The machine decides whether to wait for the account (deploy.md § Namespace ensure,
            // item 4); the driver only passes it on.
            SubstrateError::ServiceAccountMissing { account, .. } => {
                PodCreateOutcome::ServiceAccountMissing {
                    account: account.clone(),
                    failure: error.failure(),
                }
            }
            _ if error.is_api() => PodCreateOutcome::Refused(error.failure()),
            _ => PodCreateOutcome::TransportFailed(error.failure()),
        },
    }
}

fn delete_answer(outcome: DeleteOutcome) -> DeleteAnswer {
    match outcome {
        DeleteOutcome::Accepted => DeleteAnswer::Accepted,
        DeleteOutcome::NotFound => DeleteAnswer::NotFound,
        DeleteOutcome::PreconditionFailed => DeleteAnswer::PreconditionFailed,
    }
}

/// Quorum-list pods (with the server clock as Unix seconds) and then Secrets by `selector`.
async fn list_both<S: Substrate>(
    substrate: &S,
    selector: &str,
) -> Result<(Vec<ObservedPod>, Vec<ObservedSecret>, Option<i64>), SubstrateError> {
    let pods = substrate.list_pods(selector).await?;
    let secrets = substrate.list_secrets(selector).await?;
    Ok((
        pods.items.iter().map(observe_pod).collect(),
        secrets.iter().map(observe_secret).collect(),
        pods.server_now.map(|now| now.timestamp()),
    ))
}

/// What one GC pass collected (or, in dry-run, planned).
#[derive(Debug, Default)]
pub struct GcReport {
    /// Whether this was a dry run (reads only).
    pub dry_run: bool,
    /// Pods whose delete the apiserver accepted (planned ones in dry-run).
    pub pods: Vec<String>,
    /// Secrets whose delete the apiserver accepted (planned ones in dry-run).
    pub secrets: Vec<String>,
    /// Whether the orphan sweep ran (it needs the server clock).
    pub orphan_sweep: Option<OrphanSweep>,
    /// Individual delete failures; every other deletion was still attempted.
    pub failures: Vec<SubstrateError>,
}

/// Run one GC pass for `agent` (deploy.md § Execution): list, plan, re-read each planned pod
/// and delete it with the re-read fence when still ours and terminated, then delete the planned
/// Secrets. With `dry_run`, only the reads happen and the plan is reported.
///
/// # Errors
/// A list or re-read failure aborts the pass. Individual delete failures do not: they are in
/// [`GcReport::failures`].
pub async fn gc<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    dry_run: bool,
) -> Result<GcReport, SubstrateError> {
    let (pods, secrets, server_now) = list_both(substrate, &agent.selector()).await?;
    // deploy.md § Execution, step 2, settles every verified pod; no Secret GET is needed for that
    // here: a pod pending a Secret check is waiting, so it can never be Terminated whatever the
    // answer.
    let plan = plan_gc(&pods, &secrets, server_now, agent.id());
    let mut report = GcReport {
        dry_run,
        orphan_sweep: Some(plan.orphan_sweep),
        ..GcReport::default()
    };
    if dry_run {
        report.pods = plan.pods;
        report.secrets = plan.secrets.iter().map(|s| s.name().to_owned()).collect();
        return Ok(report);
    }
    for name in &plan.pods {
        let reread = substrate.get_pod(name).await?;
        let observed = reread.as_ref().map(observe_pod);
        let decision = decide_gc_reread(&view_pod(observed.as_ref(), agent.id()));
        let GcPodDecision::Delete(deletion) = decision else {
            tracing::debug!("gc: pod {name} skipped at re-read: {decision:?}");
            continue;
        };
        match substrate.delete_pod(&deletion).await {
            Ok(DeleteOutcome::Accepted) => report.pods.push(name.clone()),
            // Changed or already gone since the re-read: silently accepted (deploy.md § Execution).
            Ok(DeleteOutcome::NotFound | DeleteOutcome::PreconditionFailed) => {}
            Err(error) => report.failures.push(error),
        }
    }
    for secret in &plan.secrets {
        match substrate.delete_secret(secret).await {
            Ok(DeleteOutcome::Accepted) => report.secrets.push(secret.name().to_owned()),
            Ok(DeleteOutcome::NotFound) => {}
            Ok(DeleteOutcome::PreconditionFailed) => {
                tracing::info!(
                    "gc: secret {} changed since listing; skipped",
                    secret.name()
                );
            }
            Err(error) => report.failures.push(error),
        }
    }
    Ok(report)
}

/// How undeploy runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UndeployOptions {
    /// Wait for the pod to disappear before deleting Secrets (`--no-wait` turns it off).
    pub wait: bool,
    /// The bound of the wait.
    pub deadline: Duration,
    /// The poll interval.
    pub poll: Duration,
}

impl Default for UndeployOptions {
    fn default() -> UndeployOptions {
        UndeployOptions {
            wait: true,
            deadline: apiary_classify::machine::DEFAULT_DEADLINE,
            poll: DEFAULT_POLL,
        }
    }
}

/// What undeploy did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UndeployReport {
    /// The pod name when a pod of ours was found.
    pub pod: Option<String>,
    /// Whether this call's delete of the pod was accepted.
    pub pod_deleted: bool,
    /// Whether the pod was waited for until gone.
    pub waited: bool,
    /// Secrets deleted.
    pub secrets: Vec<String>,
    /// Secrets kept because a listed pod still references them.
    pub kept_secrets: Vec<String>,
}

/// Why undeploy failed.
#[derive(Debug, thiserror::Error)]
pub enum UndeployError {
    /// E8: the pod name holds an object that is not apiary's for this agent; nothing touched.
    #[error(
        "pod {pod} exists but is not managed by apiary for this agent (missing marker, different \
         agent identity, or different binding version); remove it or use another namespace"
    )]
    ForeignPod {
        /// The pod name.
        pod: String,
    },
    /// E4: the pod did not disappear in time; no Secret was deleted.
    #[error("timed out after {}s waiting for pod {pod} to finish terminating", deadline.as_secs())]
    Timeout {
        /// The pod name.
        pod: String,
        /// The bound.
        deadline: Duration,
    },
    /// A concurrent deploy created a new pod under the name; it was left untouched.
    #[error("a concurrent deploy created a new pod {pod} while undeploying; it was left untouched")]
    Replaced {
        /// The pod name.
        pod: String,
        /// What was done before noticing.
        report: UndeployReport,
    },
    /// E12: a read or delete failed.
    #[error(transparent)]
    Failed(#[from] SubstrateError),
}

/// Undeploy `agent` (deploy.md § undeploy): fenced delete of a verified pod, optional wait for
/// its uid to go, then delete every verified Secret no listed pod references.
///
/// # Errors
/// [`UndeployError`]: a foreign pod (nothing touched), a timeout, a concurrent replacement, or
/// a failed request.
pub async fn undeploy<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    options: &UndeployOptions,
) -> Result<UndeployReport, UndeployError> {
    let started = substrate.now();
    let expired = |substrate: &S| substrate.now().saturating_sub(started) >= options.deadline;
    let pod_name = agent.pod_name();
    let mut report = UndeployReport::default();
    let mut awaited: Option<String> = None;
    loop {
        let pod = substrate.get_pod(&pod_name).await?;
        let observed = pod.as_ref().map(observe_pod);
        match undeploy_pod_step(observed.as_ref(), agent.id()) {
            UndeployPodStep::Absent => break,
            UndeployPodStep::Foreign => return Err(UndeployError::ForeignPod { pod: pod_name }),
            UndeployPodStep::AwaitOnly { name, uid } => {
                report.pod = Some(name);
                awaited = Some(uid);
                break;
            }
            UndeployPodStep::Delete(deletion) => {
                report.pod = Some(deletion.name().to_owned());
                match substrate.delete_pod(&deletion).await? {
                    DeleteOutcome::Accepted => {
                        report.pod_deleted = true;
                        awaited = Some(deletion.fence().uid().to_owned());
                        break;
                    }
                    DeleteOutcome::NotFound => break,
                    // Re-observe and act on the new observation; never reuse the fence.
                    DeleteOutcome::PreconditionFailed => {
                        if expired(substrate) {
                            return Err(UndeployError::Timeout {
                                pod: pod_name,
                                deadline: options.deadline,
                            });
                        }
                    }
                }
            }
        }
    }
    let mut replaced = false;
    if let (Some(uid), true) = (&awaited, options.wait) {
        loop {
            if expired(substrate) {
                return Err(UndeployError::Timeout {
                    pod: pod_name,
                    deadline: options.deadline,
                });
            }
            let pod = substrate.get_pod(&pod_name).await?;
            let observed = pod.as_ref().map(observe_pod);
            match disappearance(uid, observed.as_ref()) {
                Disappearance::Gone => {
                    report.waited = true;
                    break;
                }
                Disappearance::Replaced => {
                    replaced = true;
                    break;
                }
                Disappearance::Present => {
                    let rv = observed
                        .as_ref()
                        .and_then(|p| p.marks.resource_version.clone());
                    substrate
                        .wait_for_pod_change(&pod_name, rv.as_deref(), options.poll)
                        .await;
                }
            }
        }
    }
    let (pods, secrets, _) = list_both(substrate, &agent.selector()).await?;
    let plan = undeploy_secrets(&pods, &secrets, agent.id());
    report.kept_secrets = plan.kept;
    let mut first_failure = None;
    for secret in &plan.delete {
        match substrate.delete_secret(secret).await {
            Ok(DeleteOutcome::Accepted | DeleteOutcome::NotFound) => {
                report.secrets.push(secret.name().to_owned());
            }
            Ok(DeleteOutcome::PreconditionFailed) => {
                tracing::info!("secret {} changed since listing; kept", secret.name());
                report.kept_secrets.push(secret.name().to_owned());
            }
            Err(error) => {
                tracing::warn!("{error}");
                first_failure.get_or_insert(error);
            }
        }
    }
    if let Some(error) = first_failure {
        return Err(UndeployError::Failed(error));
    }
    if replaced {
        return Err(UndeployError::Replaced {
            pod: pod_name,
            report,
        });
    }
    Ok(report)
}

/// The Secret a verified pod references, and whether a quorum GET found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretStatus {
    /// The Secret name.
    pub name: String,
    /// Whether it exists.
    pub exists: bool,
}

/// What `status` reports (deploy.md § status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusReport {
    /// The pod name.
    pub pod: String,
    /// The state.
    pub state: StatusState,
    /// The condition text, when any.
    pub condition: Option<String>,
    /// The referenced Secret of a verified pod, when any.
    pub secret: Option<SecretStatus>,
    /// Whether the recorded intent equals the given configuration's; `None` without a
    /// configuration or a verified pod.
    pub intent_matches: Option<bool>,
}

/// Report the status of `agent`'s pod (read-only). With `config`, also whether the pod's
/// recorded intent matches it.
///
/// # Errors
/// A failed read of the pod or of its Secret.
pub async fn status<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    config: Option<&ValidConfig>,
) -> Result<StatusReport, SubstrateError> {
    let pod_name = agent.pod_name();
    let pod = substrate.get_pod(&pod_name).await?;
    let observed = pod.as_ref().map(observe_pod);
    let mut view = view_pod(observed.as_ref(), agent.id());
    let mut checked: Option<SecretStatus> = None;
    if let PodView::Pending(pending) = view {
        let exists = substrate.secret_exists(&pending.secret).await?;
        checked = Some(SecretStatus {
            name: pending.secret.clone(),
            exists,
        });
        view = match pending.pod.settle(Some(exists)) {
            Ok(settled) => PodView::Settled(settled),
            Err(pending) => PodView::Pending(pending),
        };
    }
    let image = match config {
        Some(config) => config.image().as_str().to_owned(),
        None => pod.as_ref().map(pod_image).unwrap_or_default(),
    };
    let mapped = pod_status(&view, &image);
    let secret = match (checked, &mapped.secret) {
        (Some(checked), _) => Some(checked),
        (None, Some(name)) => Some(SecretStatus {
            name: name.clone(),
            exists: substrate.secret_exists(name).await?,
        }),
        (None, None) => None,
    };
    let verified = matches!(view, PodView::Settled(_) | PodView::Pending(_));
    let intent_matches = config
        .filter(|_| verified)
        .map(|config| mapped.recorded_intent.as_deref() == Some(config.fingerprint().as_str()));
    Ok(StatusReport {
        pod: pod_name,
        state: mapped.state,
        condition: mapped.condition,
        secret,
        intent_matches,
    })
}

/// The image a pod records (its `apiary.dev/image` annotation), for pull-failure text when no
/// configuration was given.
fn pod_image(pod: &Pod) -> String {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_IMAGE))
        .cloned()
        .unwrap_or_else(|| "the pod's image".to_owned())
}
