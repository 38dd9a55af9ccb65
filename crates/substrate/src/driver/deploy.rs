//! Executes the deploy machine (deploy.md § The deploy operation): mints the generation, builds
//! this attempt's Secret and rebuilds its pod from the generation the machine holds, and maps
//! every answer back. Shell only: every decision is `apiary-classify`'s `DeployMachine`'s.

use apiary_classify::failure::RequestFailure;
use apiary_classify::machine::{
    DeployError, DeployMachine, DeploySpec, Deployed, Effect, Event, OwnSecret, PodCreateOutcome,
    SecretCreateFailure,
};
use apiary_classify::stuck::TerminationWatch;
use std::time::Duration;

use super::gc;
use super::shared::{
    DEFAULT_POLL, OnProgress, Operation, delete_pod, drop_secret, ignore, in_span, listing,
    read_pod_watching, report_progress,
};
use crate::build::{build_pod, build_secret};
use crate::config::ValidConfig;
use crate::naming::Generation;
use crate::substrate::{CreateAnswer, Substrate};

/// How one deploy runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeployOptions {
    /// The operation deadline (the validated timeout, at most 600 s).
    pub deadline: Duration,
    /// The poll interval.
    pub poll: Duration,
    /// `--replace` (deploy.md § Replacing a live agent): replace the started pod first observed
    /// when its intent differs, instead of keeping it.
    pub replace: bool,
    /// `--min-running` (deploy.md § Staying up): how long the container must have run
    /// continuously before the deploy succeeds; zero (the default) succeeds once started.
    pub min_running: Duration,
}

impl DeployOptions {
    /// The options a validated configuration asks for: its timeout, a 2 s poll, and a started
    /// pod kept whatever its intent.
    pub fn for_config(config: &ValidConfig) -> DeployOptions {
        DeployOptions {
            deadline: config.timeout(),
            poll: DEFAULT_POLL,
            replace: false,
            min_running: Duration::ZERO,
        }
    }

    /// These options with `--min-running` set to `window`.
    pub fn staying_up(self, window: Duration) -> DeployOptions {
        DeployOptions {
            min_running: window,
            ..self
        }
    }

    /// These options with `--replace` set to `replace`.
    pub fn replacing(self, replace: bool) -> DeployOptions {
        DeployOptions { replace, ..self }
    }
}

/// The machine's spec for deploying `config` with `options`, preflight GC on. A test that must
/// reach classification row 4 directly switches `preflight_gc` off and calls [`deploy_spec`].
pub fn spec_for(config: &ValidConfig, options: &DeployOptions) -> DeploySpec {
    DeploySpec {
        namespace: config.namespace().to_owned(),
        pod_name: config.pod_name(),
        owner: config.agent().owner(),
        image: config.image().as_str().to_owned(),
        desired_intent: config.fingerprint(),
        deadline: options.deadline,
        poll: options.poll,
        service_account: config.service_account().map(str::to_owned),
        preflight_gc: true,
        replace: options.replace,
        min_running: options.min_running,
        referenced_secrets: config.pod_options().referenced_secrets(),
        isolate: config.pod_options().isolate,
        workspace_claim: config
            .pod_options()
            .workspace_claim
            .as_ref()
            .map(|_| config.agent().workspace_claim_name()),
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
    deploy_spec(substrate, config, spec_for(config, options), &mut ignore).await
}

/// [`deploy`], handing each change of observed state to `on_progress`.
///
/// # Errors
/// As [`deploy`].
pub async fn deploy_watching<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
    options: &DeployOptions,
    on_progress: OnProgress<'_>,
) -> Result<Deployed, DeployError> {
    deploy_spec(substrate, config, spec_for(config, options), on_progress).await
}

/// [`deploy`] with the machine's spec given (see [`spec_for`]); `spec` must describe `config`.
///
/// # Errors
/// As [`deploy`].
pub async fn deploy_spec<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
    spec: DeploySpec,
    on_progress: OnProgress<'_>,
) -> Result<Deployed, DeployError> {
    let pod = spec.pod_name.clone();
    in_span(
        Operation::Deploy,
        config.agent(),
        &pod,
        run(substrate, config, spec, on_progress),
    )
    .await
}

async fn run<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
    spec: DeploySpec,
    on_progress: OnProgress<'_>,
) -> Result<Deployed, DeployError> {
    let agent = config.agent();
    let mut machine = DeployMachine::new(spec);
    // A deleting pod (a replace's, or one found deleting) that outlives its grace is explained.
    let mut stuck = TerminationWatch::default();
    let mut event = Event::Start;
    loop {
        let effect = machine.step(substrate.now(), event);
        while let Some(progress) = machine.poll_progress() {
            report_progress(progress, on_progress);
        }
        event = match effect {
            Effect::Finish(result) => return result,
            Effect::Preflight { pod, gc } => {
                // Three independent requests (deploy.md § Sequence): the machine sends no create
                // before all three have answered, so nothing the GC decides races it.
                let (namespace, gc_warnings, pod) = futures::future::join3(
                    substrate.ensure_namespace(),
                    preflight_gc(substrate, config, gc),
                    read_pod_watching(substrate, &pod, agent.binding(), &mut stuck),
                )
                .await;
                // A failed ensure ends the deploy with its own error; a sequential preflight
                // would not have run GC at all, so its failures (usually the same cause) would
                // only repeat that error: they stay at debug level then.
                for warning in gc_warnings {
                    if namespace.is_ok() {
                        tracing::warn!("{warning}");
                    } else {
                        tracing::debug!("{warning}");
                    }
                }
                Event::Preflighted { namespace, pod }
            }
            Effect::GetPod { name } | Effect::ReadLatestCondition { name } => Event::PodRead(
                read_pod_watching(substrate, &name, agent.binding(), &mut stuck).await,
            ),
            Effect::GetServiceAccount { name } => {
                Event::ServiceAccountRead(substrate.service_account_exists(&name).await)
            }
            Effect::CheckSecret { name } => {
                Event::SecretChecked(substrate.secret_exists(&name).await)
            }
            Effect::CheckReferences { names } => {
                let checks = names.iter().map(|name| substrate.secret_exists(name));
                let answers = futures::future::join_all(checks).await;
                Event::ReferencesChecked(answers.into_iter().collect::<Result<Vec<bool>, _>>())
            }
            Effect::CompareEnv { secret } => {
                Event::EnvCompared(compare_env(substrate, config, &secret).await)
            }
            Effect::Prepare { policy, workspace } => {
                Event::Prepared(super::prepare::prepare(substrate, config, policy, workspace).await)
            }
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
                    uid = deletion.fence().uid(),
                    resource_version = deletion.fence().resource_version(),
                    "deleting the pod"
                );
                Event::PodDeleted(delete_pod(substrate, &deletion).await)
            }
            Effect::ListForDrop { secret } => {
                let listed = listing(substrate, agent).await;
                if let Err(error) = &listed {
                    tracing::warn!("secret {secret} left for later collection: {error}");
                }
                Event::Listed(listed)
            }
            Effect::DeleteSecret(deletion) => {
                Event::SecretDeleted(drop_secret(substrate, &deletion).await)
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

/// The preflight GC when `run` (deploy.md § Sequence, step 4), answering its failures as
/// warning lines. GC is hygiene: its failures are warnings, and a problem that matters
/// resurfaces at create with a precise message.
async fn preflight_gc<S: Substrate>(substrate: &S, config: &ValidConfig, run: bool) -> Vec<String> {
    if !run {
        return Vec::new();
    }
    match gc::run(substrate, config.agent(), false).await {
        Ok(report) => report
            .failures
            .iter()
            .map(|error| format!("preflight gc: {error}"))
            .collect(),
        Err(error) => vec![format!("preflight gc skipped: {error}")],
    }
}

/// deploy.md § Replacing a live agent: whether the environment in the pod's own Secret differs
/// from the desired one (a Secret gone differs). Only the keys are logged, never a value.
async fn compare_env<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
    secret: &str,
) -> Result<bool, RequestFailure> {
    let live = substrate.read_secret_values(secret).await?;
    let Some(live) = live else {
        tracing::info!(%secret, "the pod's own Secret is gone: its environment differs");
        return Ok(true);
    };
    let keys = config.env().differing_keys(&live);
    if !keys.is_empty() {
        tracing::info!(?keys, "the environment differs from the live pod's");
    }
    Ok(!keys.is_empty())
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
        Ok(CreateAnswer::Created) => Ok(OwnSecret {
            generation: generation.to_string(),
            name,
        }),
        Ok(CreateAnswer::AlreadyExists) => Err(failed(RequestFailure::api(
            409,
            "AlreadyExists",
            "a secret with this freshly minted name already exists",
        ))),
        Err(error) => Err(failed(error)),
    }
}

/// Rebuild this attempt's pod from its generation and create it.
async fn create_pod<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
    generation: Generation,
    secret: &OwnSecret,
) -> PodCreateOutcome {
    // The machine decides whether to wait for a missing account (deploy.md § Namespace
    // ensure, item 4); the driver only passes the answer on.
    let outcome = PodCreateOutcome::of(substrate.create_pod(&build_pod(config, generation)).await);
    if outcome == PodCreateOutcome::Created {
        tracing::info!(secret = %secret.name, "created the pod");
    }
    outcome
}
