//! The deploy operation (deploy.md § The deploy operation): its options, the machine's spec, and
//! the drive of `apiary-classify`'s `DeployMachine` (the performer mints the generation, builds
//! this attempt's Secret and rebuilds its pod from the generation the machine holds). Shell
//! only: every decision is the machine's.

use apiary_classify::deploy::{DeployError, DeployMachine, DeploySpec, Deployed};
use std::time::Duration;

use super::perform::{Performer, drive};
use super::shared::{DEFAULT_POLL, OnProgress, Operation, ignore, in_span};
use crate::config::ValidConfig;
use crate::substrate::Substrate;

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
        delete_grace: config.shape().grace_period,
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
    let mut performer = Performer::deploying(substrate, config);
    let run = drive(DeployMachine::new(spec), &mut performer, on_progress);
    in_span(Operation::Deploy, config.agent(), &pod, run).await
}
