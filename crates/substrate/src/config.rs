//! The deploy configuration (deploy.md § Configuration): the struct the CLI fills from flags,
//! its defaults, and its validation into a [`ValidConfig`] before any cluster contact.
//!
//! Pure: no I/O, no clock. Errors name the field and flag, the problem and the fix; none ever
//! contains an environment value (`Debug` of the configuration redacts them too).

use apiary_classify::grace::GracePeriod;
use std::fmt;
use std::time::Duration;

// The pod options have a module of their own; this is their path beside the configuration.
pub use crate::pod_options::PodOptions;
// Timeout parsing has a module of its own; this is its path.
use crate::env::{AgentEnv, Env, EnvError};
use crate::image::{ImageError, ImageRef};
use crate::intent::{CreateIntent, PodShape};
use crate::naming::AgentIdentity;
pub use crate::timeout::{MAX_TIMEOUT, TimeoutError, parse_timeout, validate_timeout};

/// Default `cpu_request`: a tenth of a core. Agents mostly wait on the network and a model's
/// answer, and requests are what the scheduler reserves, so `1` let a 2-core node hold two agents
/// (seen on a real node); the limits below still allow bursts (deploy.md § Configuration).
pub const DEFAULT_CPU_REQUEST: &str = "100m";
/// Default `memory_request` (see [`DEFAULT_CPU_REQUEST`]).
pub const DEFAULT_MEMORY_REQUEST: &str = "256Mi";
/// Default `cpu_limit`.
pub const DEFAULT_CPU_LIMIT: &str = "2";
/// Default `memory_limit`.
pub const DEFAULT_MEMORY_LIMIT: &str = "4Gi";
/// Default `workspace_mount_path`.
pub const DEFAULT_WORKSPACE_MOUNT_PATH: &str = "/home/agent";
/// Default `run_as_user`.
pub const DEFAULT_RUN_AS_USER: i64 = 10001;
/// Default `run_as_group`.
pub const DEFAULT_RUN_AS_GROUP: i64 = 10001;
/// The largest UID or GID accepted.
pub const MAX_RUN_AS_ID: i64 = 2_147_483_647;
/// The default timeout.
pub const DEFAULT_TIMEOUT: Duration = MAX_TIMEOUT;
/// The longest namespace name (an RFC 1123 label).
pub const MAX_NAMESPACE_LEN: usize = 63;

/// One of the four resource quantities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceField {
    /// `cpu_request` / `--cpu-request`.
    CpuRequest,
    /// `memory_request` / `--memory-request`.
    MemoryRequest,
    /// `cpu_limit` / `--cpu-limit`.
    CpuLimit,
    /// `memory_limit` / `--memory-limit`.
    MemoryLimit,
}

impl fmt::Display for ResourceField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::CpuRequest => "cpu_request (--cpu-request)",
            Self::MemoryRequest => "memory_request (--memory-request)",
            Self::CpuLimit => "cpu_limit (--cpu-limit)",
            Self::MemoryLimit => "memory_limit (--memory-limit)",
        })
    }
}

/// Which RFC 1123 label rule a namespace breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespaceProblem {
    /// The namespace is empty.
    Empty,
    /// Longer than 63 characters.
    TooLong,
    /// A character outside `[a-z0-9-]` (uppercase included).
    InvalidCharacter,
    /// Does not start with a letter or digit.
    BadStart,
    /// Does not end with a letter or digit.
    BadEnd,
}

impl fmt::Display for NamespaceProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "it is empty",
            Self::TooLong => "it is longer than 63 characters",
            Self::InvalidCharacter => "it contains a character outside [a-z0-9-]",
            Self::BadStart => "it does not start with a lowercase letter or digit",
            Self::BadEnd => "it does not end with a lowercase letter or digit",
        })
    }
}

/// Which rule a workspace mount path breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkspaceProblem {
    /// Not absolute (empty included).
    NotAbsolute,
    /// It is `/` itself.
    Root,
    /// It has a `..` component.
    ParentComponent,
    /// It contains `:`.
    Colon,
    /// It contains a NUL character.
    Nul,
}

impl fmt::Display for WorkspaceProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotAbsolute => "it is not an absolute path",
            Self::Root => "it is the root directory /",
            Self::ParentComponent => "it has a '..' component",
            Self::Colon => "it contains ':'",
            Self::Nul => "it contains a NUL character",
        })
    }
}

/// Why a configuration was refused. No variant holds or prints an environment value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The namespace is not an RFC 1123 label.
    #[error(
        "namespace {namespace:?} (-n/--namespace) is not a valid RFC 1123 label: {problem}; use \
         1 to 63 characters of [a-z0-9-] starting and ending with a letter or digit"
    )]
    Namespace {
        /// The refused namespace.
        namespace: String,
        /// The rule broken.
        problem: NamespaceProblem,
    },
    /// The image reference is refused.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// A pod option (deploy.md § Pod options) is refused: the message names the flag.
    #[error(transparent)]
    PodOption(#[from] crate::pod_options::flags::PodOptionError),
    /// `--overrides` is refused (deploy.md § Pod options): the message names the JSON path.
    #[error(transparent)]
    Overrides(#[from] crate::pod_options::overrides::OverridesError),
    /// A resource quantity is empty or whitespace only.
    #[error(
        "{field} is empty: give a Kubernetes quantity (for example 500m, 2, 1Gi) or omit the \
         flag to use the default"
    )]
    BlankResource {
        /// The field.
        field: ResourceField,
    },
    /// The service account was given but is empty.
    #[error("service_account (--service-account) is empty: give a service account name or omit it")]
    EmptyServiceAccount,
    /// The command was given as an empty list.
    #[error(
        "command (--command) is an empty list: give at least one non-empty element, or none to \
         use the image's entrypoint"
    )]
    EmptyCommand,
    /// An element of the command is empty.
    #[error(
        "command (--command) element {index} is empty: every element must be a non-empty string"
    )]
    EmptyCommandElement {
        /// The 0-based index of the empty element.
        index: usize,
    },
    /// The workspace mount path is refused.
    #[error(
        "workspace_mount_path (--workspace) {path:?} is refused: {problem}; give an absolute \
         path other than / without '..', ':' or NUL, such as /home/agent"
    )]
    Workspace {
        /// The refused path.
        path: String,
        /// The rule broken.
        problem: WorkspaceProblem,
    },
    /// `run_as_user` outside 1..=2147483647.
    #[error(
        "run_as_user (--run-as-user) {value} is out of range: give a UID from 1 to 2147483647, \
         because the pod sets runAsNonRoot and UID 0 could never start"
    )]
    RunAsUser {
        /// The refused UID.
        value: i64,
    },
    /// `run_as_group` outside 0..=2147483647.
    #[error(
        "run_as_group (--run-as-group) {value} is out of range: give a GID from 0 to 2147483647"
    )]
    RunAsGroup {
        /// The refused GID.
        value: i64,
    },
    /// The timeout is refused.
    #[error(transparent)]
    Timeout(#[from] TimeoutError),
    /// The environment is refused.
    #[error(transparent)]
    Env(#[from] EnvError),
}

/// Checks that `namespace` is an RFC 1123 label.
///
/// # Errors
///
/// [`ConfigError::Namespace`] naming the rule broken.
pub fn validate_namespace(namespace: &str) -> Result<(), ConfigError> {
    let problem = if namespace.is_empty() {
        Some(NamespaceProblem::Empty)
    } else if namespace.len() > MAX_NAMESPACE_LEN {
        Some(NamespaceProblem::TooLong)
    } else if !namespace
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        Some(NamespaceProblem::InvalidCharacter)
    } else if namespace.starts_with('-') {
        Some(NamespaceProblem::BadStart)
    } else if namespace.ends_with('-') {
        Some(NamespaceProblem::BadEnd)
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(ConfigError::Namespace {
            namespace: namespace.to_owned(),
            problem,
        }),
    }
}

/// Checks that no resource quantity is blank or whitespace only (each is otherwise sent
/// verbatim, for the apiserver to judge).
///
/// # Errors
///
/// [`ConfigError::BlankResource`] naming the first blank one, in the order CPU request, memory
/// request, CPU limit, memory limit.
pub fn validate_resources(
    cpu_request: &str,
    memory_request: &str,
    cpu_limit: &str,
    memory_limit: &str,
) -> Result<(), ConfigError> {
    for (field, value) in [
        (ResourceField::CpuRequest, cpu_request),
        (ResourceField::MemoryRequest, memory_request),
        (ResourceField::CpuLimit, cpu_limit),
        (ResourceField::MemoryLimit, memory_limit),
    ] {
        if value.trim().is_empty() {
            return Err(ConfigError::BlankResource { field });
        }
    }
    Ok(())
}

/// Checks a workspace mount path: absolute, not `/`, no `..` component, no `:` or NUL.
///
/// # Errors
///
/// [`ConfigError::Workspace`] naming the rule broken.
pub fn validate_workspace(path: &str) -> Result<(), ConfigError> {
    let problem = if !path.starts_with('/') {
        Some(WorkspaceProblem::NotAbsolute)
    } else if path.bytes().all(|b| b == b'/') {
        Some(WorkspaceProblem::Root)
    } else if path.split('/').any(|component| component == "..") {
        Some(WorkspaceProblem::ParentComponent)
    } else if path.contains(':') {
        Some(WorkspaceProblem::Colon)
    } else if path.contains('\0') {
        Some(WorkspaceProblem::Nul)
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(ConfigError::Workspace {
            path: path.to_owned(),
            problem,
        }),
    }
}

/// The deploy configuration as given (deploy.md § Fields). Build it with
/// [`DeployConfig::new`] (which applies every default) and validate it with
/// [`DeployConfig::validate`]. `Debug` redacts environment values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeployConfig {
    /// The namespace (an RFC 1123 label).
    pub namespace: String,
    /// The image reference as given; must be digest-pinned.
    pub image: String,
    /// CPU request, a Kubernetes quantity sent verbatim.
    pub cpu_request: String,
    /// Memory request, a Kubernetes quantity sent verbatim.
    pub memory_request: String,
    /// CPU limit, a Kubernetes quantity sent verbatim.
    pub cpu_limit: String,
    /// Memory limit, a Kubernetes quantity sent verbatim.
    pub memory_limit: String,
    /// The pod's service account (its token is never mounted).
    pub service_account: Option<String>,
    /// The container command; `None` keeps the image's entrypoint. Not secret.
    pub command: Option<Vec<String>>,
    /// The container args; empty means the image's default. Not secret.
    pub args: Vec<String>,
    /// Where the workspace emptyDir is mounted.
    pub workspace_mount_path: String,
    /// The container UID (1..=2147483647).
    pub run_as_user: i64,
    /// The container GID and fsGroup (0..=2147483647).
    pub run_as_group: i64,
    /// The operation deadline (whole seconds, 1..=600).
    pub timeout: Duration,
    /// The user's environment (secret values).
    pub env: Env,
    /// Placement, isolation, pull credentials, labels and annotations (deploy.md § Pod options).
    pub pod_options: PodOptions,
    /// `--grace-period` (deploy.md § Grace periods): the pod's termination grace period, and
    /// the override of this call's pod deletes; `None` is the 60 s default and no override.
    pub grace_period: Option<GracePeriod>,
}

impl DeployConfig {
    /// A configuration for `namespace` and `image` with every other field at its default.
    #[must_use]
    pub fn new(namespace: impl Into<String>, image: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            image: image.into(),
            cpu_request: DEFAULT_CPU_REQUEST.to_owned(),
            memory_request: DEFAULT_MEMORY_REQUEST.to_owned(),
            cpu_limit: DEFAULT_CPU_LIMIT.to_owned(),
            memory_limit: DEFAULT_MEMORY_LIMIT.to_owned(),
            service_account: None,
            command: None,
            args: Vec::new(),
            workspace_mount_path: DEFAULT_WORKSPACE_MOUNT_PATH.to_owned(),
            run_as_user: DEFAULT_RUN_AS_USER,
            run_as_group: DEFAULT_RUN_AS_GROUP,
            timeout: DEFAULT_TIMEOUT,
            env: Env::new(),
            pod_options: PodOptions::default(),
            grace_period: None,
        }
    }

    /// Validates every field for `agent` (deploy.md § Configuration), in the order namespace,
    /// image, resources, service account, command, workspace, UID, GID, timeout, pod options,
    /// environment.
    ///
    /// # Errors
    ///
    /// The [`ConfigError`] of the first field refused.
    pub fn validate(&self, agent: &AgentIdentity) -> Result<ValidConfig, ConfigError> {
        validate_namespace(&self.namespace)?;
        let image = ImageRef::parse(&self.image)?;
        validate_resources(
            &self.cpu_request,
            &self.memory_request,
            &self.cpu_limit,
            &self.memory_limit,
        )?;
        if self.service_account.as_deref() == Some("") {
            return Err(ConfigError::EmptyServiceAccount);
        }
        if let Some(command) = &self.command {
            if command.is_empty() {
                return Err(ConfigError::EmptyCommand);
            }
            if let Some(index) = command.iter().position(String::is_empty) {
                return Err(ConfigError::EmptyCommandElement { index });
            }
        }
        validate_workspace(&self.workspace_mount_path)?;
        if !(1..=MAX_RUN_AS_ID).contains(&self.run_as_user) {
            return Err(ConfigError::RunAsUser {
                value: self.run_as_user,
            });
        }
        if !(0..=MAX_RUN_AS_ID).contains(&self.run_as_group) {
            return Err(ConfigError::RunAsGroup {
                value: self.run_as_group,
            });
        }
        let timeout = validate_timeout(self.timeout)?;
        self.pod_options.validate_native()?;
        // An explicit variable beats the attempt's Secret: one set both ways is refused.
        if let Some(var) = (self.pod_options.env_secrets.keys()).find(|v| self.env.contains_key(v))
        {
            return Err(crate::pod_options::flags::PodOptionError {
                flag: crate::pod_options::flags::Flag::EnvSecret,
                text: var.clone(),
                problem: "the variable is also set by --env or --env-file; set it in one place"
                    .to_owned(),
            }
            .into());
        }
        let env = AgentEnv::build(&self.env, agent)?;
        let shape = PodShape {
            namespace: self.namespace.clone(),
            image,
            cpu_request: self.cpu_request.clone(),
            memory_request: self.memory_request.clone(),
            cpu_limit: self.cpu_limit.clone(),
            memory_limit: self.memory_limit.clone(),
            service_account: self.service_account.clone(),
            command: self.command.clone(),
            args: (!self.args.is_empty()).then(|| self.args.clone()),
            env_keys: env.keys(),
            workspace_mount_path: self.workspace_mount_path.clone(),
            run_as_user: self.run_as_user,
            run_as_group: self.run_as_group,
            pod_options: self.pod_options.clone(),
            grace_period: self.grace_period,
        };
        let valid = ValidConfig {
            agent: agent.clone(),
            shape,
            timeout,
            env,
            expires_at: None,
        };
        valid.check_overrides()?;
        Ok(valid)
    }
}

/// A validated configuration bound to one agent: the only input of the builders and the
/// fingerprint. `Debug` redacts environment values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidConfig {
    agent: AgentIdentity,
    shape: PodShape,
    timeout: Duration,
    env: AgentEnv,
    /// The pod's expiry instant (apiserver clock); set and read in `build` (deploy.md § Expiry).
    pub(crate) expires_at: Option<i64>,
}

impl ValidConfig {
    /// The agent this configuration was validated for.
    #[must_use]
    pub fn agent(&self) -> &AgentIdentity {
        &self.agent
    }

    /// The agent's pod name.
    #[must_use]
    pub fn pod_name(&self) -> String {
        self.agent.pod_name()
    }

    /// The namespace.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.shape.namespace
    }

    /// The normalized image reference.
    #[must_use]
    pub fn image(&self) -> &ImageRef {
        &self.shape.image
    }

    /// The CPU request.
    #[must_use]
    pub fn cpu_request(&self) -> &str {
        &self.shape.cpu_request
    }

    /// The memory request.
    #[must_use]
    pub fn memory_request(&self) -> &str {
        &self.shape.memory_request
    }

    /// The CPU limit.
    #[must_use]
    pub fn cpu_limit(&self) -> &str {
        &self.shape.cpu_limit
    }

    /// The memory limit.
    #[must_use]
    pub fn memory_limit(&self) -> &str {
        &self.shape.memory_limit
    }

    /// The service account, when configured.
    #[must_use]
    pub fn service_account(&self) -> Option<&str> {
        self.shape.service_account.as_deref()
    }

    /// The command, when configured (never empty).
    #[must_use]
    pub fn command(&self) -> Option<&[String]> {
        self.shape.command.as_deref()
    }

    /// The args, when configured: `None` for an empty list (Kubernetes cannot tell them apart).
    #[must_use]
    pub fn args(&self) -> Option<&[String]> {
        self.shape.args.as_deref()
    }

    /// The workspace mount path.
    #[must_use]
    pub fn workspace_mount_path(&self) -> &str {
        &self.shape.workspace_mount_path
    }

    /// The container UID.
    #[must_use]
    pub fn run_as_user(&self) -> i64 {
        self.shape.run_as_user
    }

    /// The container GID, also the pod's fsGroup.
    #[must_use]
    pub fn run_as_group(&self) -> i64 {
        self.shape.run_as_group
    }

    /// The operation deadline.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The validated environment (values redacted in `Debug`).
    #[must_use]
    pub fn env(&self) -> &AgentEnv {
        &self.env
    }

    /// The authoritative keys removed from user input, for a warning naming each key.
    #[must_use]
    pub fn removed_env_keys(&self) -> &[&'static str] {
        self.env.removed_keys()
    }

    /// What this configuration asks of its pod, computed once at validation.
    #[must_use]
    pub fn shape(&self) -> &PodShape {
        &self.shape
    }

    /// The create-intent template of this configuration, under its agent's binding (deploy.md
    /// § Create-intent fingerprint).
    #[must_use]
    pub fn intent(&self) -> CreateIntent<'_> {
        CreateIntent::of(&self.shape, self.agent.binding())
    }

    /// The canonical JSON the fingerprint hashes ([`CreateIntent::to_json`]).
    #[must_use]
    pub fn intent_json(&self) -> String {
        self.intent().to_json()
    }

    /// The 64-hex create-intent fingerprint of this configuration, under its binding's template.
    #[must_use]
    pub fn fingerprint(&self) -> String {
        self.intent().fingerprint()
    }

    /// The placement, storage and lifetime options.
    #[must_use]
    pub fn pod_options(&self) -> &PodOptions {
        &self.shape.pod_options
    }

    /// A configuration of parts a binding's front end validated itself (the buzz provider's,
    /// in `apiary-buzz`), with the maximum deadline and no expiry. `shape.env_keys` must be
    /// `env.keys()`.
    #[must_use]
    pub fn from_parts(agent: &AgentIdentity, shape: PodShape, env: AgentEnv) -> Self {
        let (agent, timeout, expires_at) = (agent.clone(), MAX_TIMEOUT, None);
        Self {
            agent,
            shape,
            timeout,
            env,
            expires_at,
        }
    }
}

#[cfg(test)]
mod tests;
