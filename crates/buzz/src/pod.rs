//! The buzz provider's pod request (buzz-provider.md § 6, § 16.3): [`BuzzPod`], what this crate
//! resolved for one agent, the checks § 16.3 puts on its [`PodOptions`] (the one declaration both
//! bindings share, in `apiary_substrate::pod_options`), and [`valid_config`], its validation into
//! the `ValidConfig` the substrate's builders, fingerprint and driver take.
//!
//! Pure: no I/O. The environment holds secret values, so `Debug` of a [`BuzzPod`] shows its keys
//! only, and no error here prints a value.

use std::collections::BTreeMap;
use std::fmt;

use apiary_substrate::config::{
    ConfigError, DEFAULT_RUN_AS_GROUP, DEFAULT_RUN_AS_USER, DEFAULT_WORKSPACE_MOUNT_PATH,
    ValidConfig, validate_namespace, validate_resources,
};
use apiary_substrate::env::{AgentEnv, Env};
use apiary_substrate::image::ImageRef;
use apiary_substrate::intent::PodShape;
use apiary_substrate::naming::AgentIdentity;
use apiary_substrate::pod_options::PodOptions;

use crate::binding::BUZZ;

/// What the buzz provider asks of one agent's pod (buzz-provider.md § 6), already parsed and
/// resolved: the environment is final (the substrate only restamps the start nonce per attempt).
/// `Debug` redacts the environment's values.
#[derive(Clone, PartialEq, Eq)]
pub struct BuzzPod {
    /// The namespace (an RFC 1123 label).
    pub namespace: String,
    /// The normalized, digest-pinned image reference (`name@sha256:<64 hex>`).
    pub image: String,
    /// CPU request, a Kubernetes quantity sent verbatim.
    pub cpu_request: String,
    /// Memory request, a Kubernetes quantity sent verbatim.
    pub memory_request: String,
    /// CPU limit, a Kubernetes quantity sent verbatim.
    pub cpu_limit: String,
    /// Memory limit, a Kubernetes quantity sent verbatim.
    pub memory_limit: String,
    /// The pod's service account; its token is never mounted.
    pub service_account: Option<String>,
    /// The placement, storage and lifetime options (buzz-provider.md § 16.3).
    pub pod_options: PodOptions,
    /// The final environment (secret values).
    pub env: BTreeMap<String, String>,
}

impl fmt::Debug for BuzzPod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Env = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        f.debug_struct("BuzzPod")
            .field("namespace", &self.namespace)
            .field("image", &self.image)
            .field("cpu_request", &self.cpu_request)
            .field("memory_request", &self.memory_request)
            .field("cpu_limit", &self.cpu_limit)
            .field("memory_limit", &self.memory_limit)
            .field("service_account", &self.service_account)
            .field("pod_options", &self.pod_options)
            .field("env", &env)
            .finish()
    }
}

/// Why a buzz pod option was refused (buzz-provider.md § 16.3: the provider's exact messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PodOptionsError {
    /// `active_deadline_seconds` is zero or negative.
    #[error("provider_config.pod_options.active_deadline_seconds must be positive")]
    NonPositiveDeadline,
    /// A storage quantity is empty or whitespace only.
    #[error("provider_config.pod_options storage quantities must not be empty")]
    BlankStorageQuantity,
}

/// Checks the values buzz-provider.md § 16.3 constrains: a positive deadline, non-blank
/// storage quantities.
///
/// # Errors
///
/// [`PodOptionsError::NonPositiveDeadline`] or [`PodOptionsError::BlankStorageQuantity`].
pub fn validate_pod_options(options: &PodOptions) -> Result<(), PodOptionsError> {
    if options.active_deadline_seconds.is_some_and(|d| d <= 0) {
        return Err(PodOptionsError::NonPositiveDeadline);
    }
    let blank = [
        &options.workspace_size_limit,
        &options.ephemeral_storage_request,
        &options.ephemeral_storage_limit,
    ]
    .into_iter()
    .flatten()
    .any(|q| q.trim().is_empty());
    if blank {
        return Err(PodOptionsError::BlankStorageQuantity);
    }
    Ok(())
}

/// Why [`valid_config`] refused a pod request. No variant holds or prints an environment value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PodError {
    /// A field the substrate validates (namespace, image, resources, service account,
    /// environment) is refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A pod option is refused (buzz-provider.md § 16.3).
    #[error(transparent)]
    PodOptions(#[from] PodOptionsError),
    /// The identity is of another binding (not secret).
    #[error("agent {agent} is not buzz-bound: build it with apiary_buzz::binding::identity")]
    WrongBinding {
        /// The agent's name.
        agent: String,
    },
}

/// The configuration of a buzz-bound agent (buzz-provider.md § 6): `pod` as this crate resolved
/// it, the pod shape of § 6.2 (no command or args, workspace `/home/agent`, UID and GID 10001),
/// the § 7 fingerprint template (the binding's), and the 600 s deadline.
///
/// # Errors
///
/// [`PodError::WrongBinding`] unless `agent` is bound to [`BUZZ`]; then, in order, the
/// namespace, the image, a blank resource, an empty service account, the pod options, and the
/// environment (a non-POSIX key or over 1 MiB of values).
pub fn valid_config(agent: &AgentIdentity, pod: BuzzPod) -> Result<ValidConfig, PodError> {
    if agent.binding() != BUZZ {
        return Err(PodError::WrongBinding {
            agent: agent.name().to_owned(),
        });
    }
    validate_namespace(&pod.namespace)?;
    let image = ImageRef::parse(&pod.image).map_err(ConfigError::from)?;
    validate_resources(
        &pod.cpu_request,
        &pod.memory_request,
        &pod.cpu_limit,
        &pod.memory_limit,
    )?;
    if pod.service_account.as_deref() == Some("") {
        return Err(ConfigError::EmptyServiceAccount.into());
    }
    validate_pod_options(&pod.pod_options)?;
    let env = AgentEnv::given(pod.env.into_iter().collect(), agent.binding())
        .map_err(ConfigError::from)?;
    let shape = PodShape {
        namespace: pod.namespace,
        image,
        cpu_request: pod.cpu_request,
        memory_request: pod.memory_request,
        cpu_limit: pod.cpu_limit,
        memory_limit: pod.memory_limit,
        service_account: pod.service_account,
        command: None,
        args: None,
        env_keys: env.keys(),
        workspace_mount_path: DEFAULT_WORKSPACE_MOUNT_PATH.to_owned(),
        run_as_user: DEFAULT_RUN_AS_USER,
        run_as_group: DEFAULT_RUN_AS_GROUP,
        pod_options: pod.pod_options,
        // The buzz provider's template has no grace member (buzz-provider.md § 7): 60 s.
        grace_period: None,
    };
    Ok(ValidConfig::from_parts(agent, shape, env))
}

#[cfg(test)]
mod tests;
