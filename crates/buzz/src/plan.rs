//! The deploy pipeline up to "connect" (buzz-provider.md § 2.4, steps 1–3): `provider_config`,
//! the identity, the environment, and the validated configuration the unchanged deploy driver
//! runs, under the buzz binding.
//!
//! Pure: answers what the shell must run (the context to connect with and the `ValidConfig`).
//! Every refusal here happens before any cluster contact, so a malformed key or config is a
//! refusal, never a connection error. Must not: connect, read the environment, or keep the
//! nsec anywhere but the env map that becomes the Secret.

use apiary_substrate::config::ValidConfig;

use crate::binding;
use crate::config::{self, ConfigError};
use crate::entropy::{self, Entropy, EntropyError};
use crate::env::{self, EnvError, EnvInputs};
use crate::identity::{self, IdentityError};
use crate::pod::{self, BuzzPod};
use crate::wire::DeployRequest;

/// What the shell runs: connect with `context` (the current context when `None`), then deploy
/// `config` in its namespace.
#[derive(Debug)]
pub struct DeployPlan {
    /// The kubeconfig context, `None` for the current one.
    pub context: Option<String>,
    /// The validated buzz-bound configuration (its `Debug` redacts env values).
    pub config: ValidConfig,
}

/// Why a deploy was refused before the cluster stage; `Display` is the wire message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// `provider_config` was refused (step 1).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The nsec does not decode (step 2).
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// No randomness for the generation placeholder (step 3).
    #[error("could not mint a generation: {0}")]
    Entropy(#[from] EntropyError),
    /// The environment was refused (step 3).
    #[error(transparent)]
    Env(#[from] EnvError),
    /// The binding's identity or pod validation refused (a bug if it happens: the rules above
    /// are stricter).
    #[error("the configuration was refused: {0}")]
    Substrate(String),
}

/// Steps 1–3 of `deploy_agent`, then the buzz-bound `ValidConfig`.
///
/// # Errors
///
/// [`PlanError`]: the first step that refused, in the pipeline's order.
pub fn plan_deploy(
    request: &DeployRequest,
    entropy: &mut dyn Entropy,
) -> Result<DeployPlan, PlanError> {
    let provider = config::parse(&request.provider_config)?;
    let pubkey = identity::derive(&request.agent.private_key_nsec)?;
    let generation = entropy::generation_placeholder(entropy)?;
    let env = env::build_env(
        &request.agent,
        &EnvInputs {
            generation: &generation,
            inactivity_seconds: provider.inactivity_seconds,
        },
    )?;
    let agent = binding::identity(pubkey.as_hex())
        .map_err(|error| PlanError::Substrate(error.to_string()))?;
    let pod = BuzzPod {
        namespace: provider.namespace,
        image: provider.image,
        cpu_request: provider.cpu_request,
        memory_request: provider.memory_request,
        cpu_limit: provider.cpu_limit,
        memory_limit: provider.memory_limit,
        service_account: provider.service_account,
        pod_options: provider.pod_options,
        env,
    };
    let config =
        pod::valid_config(&agent, pod).map_err(|error| PlanError::Substrate(error.to_string()))?;
    Ok(DeployPlan {
        context: provider.context,
        config,
    })
}

#[cfg(test)]
mod tests;
