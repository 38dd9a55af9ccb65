//! The object templates (deploy.md § Object templates): the per-attempt Secret and the bare,
//! hardened pod that references it through `envFrom`.
//!
//! Pure: given a validated configuration and a generation, returns Kubernetes objects; performs
//! no I/O. Environment values go only into the Secret's `stringData`, never into the pod.

use apiary_classify::settings::ANNOTATION_INTENT_SETTINGS;
use std::collections::BTreeMap;
use std::fmt;

use apiary_classify::expiry::{ANNOTATION_EXPIRES_AT, format_instant};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvFromSource, EnvVar, EnvVarSource,
    LocalObjectReference, ObjectFieldSelector, PersistentVolumeClaimVolumeSource, Pod,
    PodSecurityContext, PodSpec, ResourceRequirements, SeccompProfile, Secret, SecretEnvSource,
    SecretKeySelector, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::config::ValidConfig;
use crate::intent::RESTART_POLICY;
use crate::naming::Generation;
use crate::pod_options::overrides::OverridesError;

pub mod policy;
pub mod workspace;

/// The name of the one container; observation and tooling address it by this name.
pub const CONTAINER_NAME: &str = "agent";
/// The name of the workspace emptyDir volume and its mount.
pub const WORKSPACE_VOLUME: &str = "workspace";
/// The seccomp profile type of the pod.
pub const SECCOMP_PROFILE: &str = "RuntimeDefault";
/// The capability set dropped from the container.
pub const DROPPED_CAPABILITIES: &str = "ALL";
/// The explicit container variable a pod with `setup_pending` gets (buzz-provider.md § 16.3).
pub use crate::env::PILOT_POD_UID_ENV;
/// The downward-API field it is read from.
pub const POD_UID_FIELD: &str = "metadata.uid";
/// The resource name of a container's ephemeral storage.
const EPHEMERAL_STORAGE: &str = "ephemeral-storage";

impl ValidConfig {
    /// This configuration with the pod's expiry instant (Unix seconds on the apiserver's clock,
    /// from `driver::stamp_expiry`). Not part of the create intent (deploy.md § Expiry): a
    /// different `--ttl` is not a different configuration.
    #[must_use]
    pub fn expiring_at(mut self, expires_at: i64) -> ValidConfig {
        self.expires_at = Some(expires_at);
        self
    }

    /// The pod's expiry instant, when the deploy asked for one (`--ttl`).
    #[must_use]
    pub fn expires_at(&self) -> Option<i64> {
        self.expires_at
    }
}

/// The objects of one create attempt: the Secret (created first) and the pod referencing it.
/// `Debug` shows the Secret's keys, never its values.
#[derive(Clone, PartialEq)]
pub struct Attempt {
    /// The generation minted for this attempt.
    pub generation: Generation,
    /// The Secret name, `<pod>-<generation>`.
    pub secret_name: String,
    /// The immutable Secret holding the final environment.
    pub secret: Secret,
    /// The pod referencing [`Attempt::secret_name`] through `envFrom`.
    pub pod: Pod,
}

impl fmt::Debug for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<&String> = self
            .secret
            .string_data
            .iter()
            .flat_map(BTreeMap::keys)
            .collect();
        f.debug_struct("Attempt")
            .field("generation", &self.generation)
            .field("secret_name", &self.secret_name)
            .field("secret_keys", &keys)
            .field("pod", &self.pod.metadata.name)
            .finish_non_exhaustive()
    }
}

/// Builds both objects of the attempt with `generation`.
#[must_use]
pub fn build_attempt(config: &ValidConfig, generation: Generation) -> Attempt {
    Attempt {
        generation,
        secret_name: config.agent().secret_name(generation),
        secret: build_secret(config, generation),
        pod: build_pod(config, generation),
    }
}

/// The Secret of one attempt (deploy.md § Secret): marked and annotated, `stringData` = the
/// final env with `APIARY_START_NONCE` = `generation`, `data` and `type` unset, immutable, no
/// owner references.
#[must_use]
pub fn build_secret(config: &ValidConfig, generation: Generation) -> Secret {
    let agent = config.agent();
    Secret {
        metadata: ObjectMeta {
            name: Some(agent.secret_name(generation)),
            namespace: Some(config.namespace().to_owned()),
            labels: Some(labels(config)),
            annotations: Some(agent.annotations()),
            ..ObjectMeta::default()
        },
        string_data: Some(config.env().for_attempt(generation).into_map()),
        immutable: Some(true),
        ..Secret::default()
    }
}

/// The pod of one attempt (deploy.md § Pod): one container `agent` with `envFrom` of this
/// attempt's Secret, the hardening fields, and the four annotations (five with an expiry).
/// Every key is the agent's binding's, and a binding without expiry never gets the expiry
/// annotation (the buzz provider's, buzz-provider.md § 6.2); the pod options add only what they
/// set. `--overrides` is applied last (deploy.md § Pod options, The escape hatch).
#[must_use]
pub fn build_pod(config: &ValidConfig, generation: Generation) -> Pod {
    let pod = build_base_pod(config, generation);
    let Some(overrides) = &config.pod_options().overrides else {
        return pod;
    };
    // Validation applied the patch to the pods of two generations ([`ValidConfig::check_overrides`]),
    // and the pods of any two generations differ only in the attempt's Secret name, so this
    // cannot fail for a validated configuration.
    overrides.apply(&pod).unwrap_or_else(|error| {
        tracing::error!(%error, "internal error: a validated --overrides no longer applies");
        pod
    })
}

impl ValidConfig {
    /// Refuses an `--overrides` patch that does not apply to this configuration's pod, before any
    /// request: it is applied to the pods of two generations, so a patch that names one
    /// attempt's Secret (it restated the agent's `envFrom`) is refused as well.
    ///
    /// # Errors
    /// The first refusal of [`crate::pod_options::overrides::Overrides::apply`].
    pub fn check_overrides(&self) -> Result<(), OverridesError> {
        let Some(overrides) = &self.pod_options().overrides else {
            return Ok(());
        };
        for generation in [Generation::from_u32(1), Generation::from_u32(2)] {
            overrides.apply(&build_base_pod(self, generation))?;
        }
        Ok(())
    }
}

/// [`build_pod`] before `--overrides`.
fn build_base_pod(config: &ValidConfig, generation: Generation) -> Pod {
    let agent = config.agent();
    let mut annotations = agent.annotations();
    let binding = agent.binding();
    annotations.insert(
        binding.annotation_create_intent.to_owned(),
        config.fingerprint(),
    );
    annotations.insert(
        binding.annotation_image.to_owned(),
        config.image().as_str().to_owned(),
    );
    // deploy.md § Naming what differs: one digest per setting, under the bindings that name
    // flags (the buzz provider's template has no flags and its pod shape stays as specified).
    if binding.intent_command_args {
        annotations.insert(
            ANNOTATION_INTENT_SETTINGS.to_owned(),
            config.intent().settings(),
        );
    }
    // The expiry instant (server clock) when `--ttl` asked for one; outside the fingerprint.
    // Never under a binding without expiry (buzz-provider.md § 6.2).
    if let Some(at) = config.expires_at().filter(|_| binding.expiry_annotation) {
        annotations.insert(ANNOTATION_EXPIRES_AT.to_owned(), format_instant(at));
    }
    let options = config.pod_options();
    // The user's annotations first: apiary's own keys (refused as user keys) are written after.
    let annotations: BTreeMap<String, String> = options
        .annotations
        .clone()
        .into_iter()
        .chain(annotations)
        .collect();
    // Extended resources cannot be overcommitted: each is both request and limit.
    let quantities = |cpu: &str, memory: &str, storage: Option<&String>| {
        let mut map = BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
        ]);
        if let Some(storage) = storage {
            map.insert(EPHEMERAL_STORAGE.to_owned(), Quantity(storage.clone()));
        }
        for (name, quantity) in &options.extended_resources {
            map.insert(name.clone(), Quantity(quantity.clone()));
        }
        map
    };
    // Explicit `env` beats `envFrom`, so the Secret cannot spoof the pod's uid.
    let pod_uid = options.setup_pending.then(|| EnvVar {
        name: PILOT_POD_UID_ENV.to_owned(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: POD_UID_FIELD.to_owned(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    });
    // `--env-secret`: one key of a Secret in the cluster; validation refused apiary's own names.
    let from_secrets = options.env_secrets.iter().map(|(var, source)| EnvVar {
        name: var.clone(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: source.secret.clone(),
                key: source.key.clone(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    });
    let env: Vec<EnvVar> = pod_uid.into_iter().chain(from_secrets).collect();
    let env = (!env.is_empty()).then_some(env);
    // `--env-from-secret` sources first: for a key in several sources the last one wins, so the
    // attempt's own Secret (apiary's keys) comes last.
    let env_from = options
        .env_from_secrets
        .iter()
        .chain(std::iter::once(&agent.secret_name(generation)))
        .map(|name| EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: name.clone(),
                optional: Some(false),
            }),
            ..EnvFromSource::default()
        })
        .collect();
    let container = Container {
        name: CONTAINER_NAME.to_owned(),
        image: Some(config.image().as_str().to_owned()),
        command: config.command().map(<[String]>::to_vec),
        args: config.args().map(<[String]>::to_vec),
        env,
        env_from: Some(env_from),
        resources: Some(ResourceRequirements {
            requests: Some(quantities(
                config.cpu_request(),
                config.memory_request(),
                options.ephemeral_storage_request.as_ref(),
            )),
            limits: Some(quantities(
                config.cpu_limit(),
                config.memory_limit(),
                options.ephemeral_storage_limit.as_ref(),
            )),
            ..ResourceRequirements::default()
        }),
        volume_mounts: Some(vec![VolumeMount {
            name: WORKSPACE_VOLUME.to_owned(),
            mount_path: config.workspace_mount_path().to_owned(),
            ..VolumeMount::default()
        }]),
        // readOnlyRootFilesystem stays unset: agent toolchains write outside the workspace.
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec![DROPPED_CAPABILITIES.to_owned()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    };
    Pod {
        metadata: ObjectMeta {
            name: Some(agent.pod_name()),
            namespace: Some(config.namespace().to_owned()),
            labels: Some(pod_labels(config)),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            restart_policy: Some(RESTART_POLICY.to_owned()),
            termination_grace_period_seconds: Some(config.shape().termination_grace_seconds()),
            // False even with a service account: its token is never mounted.
            automount_service_account_token: Some(false),
            service_account_name: config.service_account().map(str::to_owned),
            security_context: Some(PodSecurityContext {
                run_as_non_root: Some(true),
                run_as_user: Some(config.run_as_user()),
                run_as_group: Some(config.run_as_group()),
                fs_group: Some(config.run_as_group()),
                seccomp_profile: Some(SeccompProfile {
                    type_: SECCOMP_PROFILE.to_owned(),
                    ..SeccompProfile::default()
                }),
                ..PodSecurityContext::default()
            }),
            volumes: Some(vec![workspace_volume(config)]),
            node_selector: (!options.node_selector.is_empty())
                .then(|| options.node_selector.clone()),
            tolerations: (!options.tolerations.is_empty()).then(|| options.tolerations.clone()),
            active_deadline_seconds: options.active_deadline_seconds,
            runtime_class_name: options.runtime_class.clone(),
            priority_class_name: options.priority_class.clone(),
            image_pull_secrets: (!options.image_pull_secrets.is_empty()).then(|| {
                options
                    .image_pull_secrets
                    .iter()
                    .map(|name| LocalObjectReference { name: name.clone() })
                    .collect()
            }),
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// The labels of the pod and its Secret: the user's (`--label`), then apiary's own, which win
/// (validation already refused a user key apiary owns).
fn labels(config: &ValidConfig) -> BTreeMap<String, String> {
    let mut labels = config.pod_options().labels.clone();
    labels.extend(config.agent().labels());
    labels
}

/// The workspace volume: the agent's claim with `--workspace-size` (deploy.md § Persistent
/// workspace), otherwise an emptyDir (with the `workspace_size_limit` option's `sizeLimit`, when set).
fn workspace_volume(config: &ValidConfig) -> Volume {
    let options = config.pod_options();
    if options.workspace_claim.is_some() {
        return Volume {
            name: WORKSPACE_VOLUME.to_owned(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: config.agent().workspace_claim_name(),
                read_only: None,
            }),
            ..Volume::default()
        };
    }
    Volume {
        name: WORKSPACE_VOLUME.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource {
            size_limit: options.workspace_size_limit.clone().map(Quantity),
            ..EmptyDirVolumeSource::default()
        }),
        ..Volume::default()
    }
}

/// The pod's labels: [`labels`], and [`policy::LABEL_ISOLATED`] when the agent is isolated (its
/// policy selects on it).
fn pod_labels(config: &ValidConfig) -> BTreeMap<String, String> {
    let mut labels = labels(config);
    if config.pod_options().isolate {
        labels.insert(policy::LABEL_ISOLATED.to_owned(), "true".to_owned());
    }
    labels
}

#[cfg(test)]
mod tests;
