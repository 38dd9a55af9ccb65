//! `ValidConfig::buzz` (buzz-provider.md § 6, § 7): validation of a buzz pod request into the
//! configuration the builders, the fingerprint and the driver take, and the accessors only a
//! buzz configuration needs.
//!
//! Pure: no I/O. The environment arrives final from `apiary-buzz`; nothing here reads or
//! prints a value.

use apiary_classify::binding::BUZZ;

use crate::config::{
    BuzzPod, ConfigError, DEFAULT_RUN_AS_GROUP, DEFAULT_RUN_AS_USER, DEFAULT_WORKSPACE_MOUNT_PATH,
    PodOptions, ResourceField, ValidConfig, validate_namespace,
};
use crate::env::AgentEnv;
use crate::image::ImageRef;
use crate::intent::PodShape;
use crate::naming::AgentIdentity;

impl ValidConfig {
    /// The configuration of a buzz-bound agent (buzz-provider.md § 6): `pod` as `apiary-buzz`
    /// resolved it, the pod shape of § 6.2 (no command or args, workspace `/home/agent`, UID and
    /// GID 10001), the § 7 fingerprint template, and the 600 s deadline.
    ///
    /// # Errors
    ///
    /// [`ConfigError::WrongBinding`] unless `agent` came from `AgentIdentity::buzz`; then, in
    /// order, the namespace, the image, a blank resource, an empty service account, the pod
    /// options, and the environment (a non-POSIX key or over 1 MiB of values).
    pub fn buzz(agent: &AgentIdentity, pod: BuzzPod) -> Result<ValidConfig, ConfigError> {
        if agent.binding() != BUZZ {
            return Err(ConfigError::WrongBinding {
                agent: agent.name().to_owned(),
            });
        }
        validate_namespace(&pod.namespace)?;
        let image = ImageRef::parse(&pod.image)?;
        for (field, value) in [
            (ResourceField::CpuRequest, &pod.cpu_request),
            (ResourceField::MemoryRequest, &pod.memory_request),
            (ResourceField::CpuLimit, &pod.cpu_limit),
            (ResourceField::MemoryLimit, &pod.memory_limit),
        ] {
            if value.trim().is_empty() {
                return Err(ConfigError::BlankResource { field });
            }
        }
        if pod.service_account.as_deref() == Some("") {
            return Err(ConfigError::EmptyServiceAccount);
        }
        pod.pod_options.validate()?;
        let env = AgentEnv::given(pod.env.into_iter().collect(), agent.binding())?;
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
        };
        Ok(ValidConfig::from_parts(agent, shape, env))
    }

    /// The placement, storage and lifetime options (default for apiary's binding).
    #[must_use]
    pub fn pod_options(&self) -> &PodOptions {
        &self.shape().pod_options
    }
}
