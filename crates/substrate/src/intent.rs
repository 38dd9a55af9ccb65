//! The create-intent fingerprint (deploy.md § Create-intent fingerprint): the template of the
//! pod shape, serialized as compact JSON in a fixed field order and hashed with SHA-256.
//!
//! Pure. The template structurally cannot hold an environment value, the Secret name or the
//! generation: it holds env *keys* and a fixed placeholder. The constants below are the same
//! definitions the pod builder uses, so the template cannot describe a different pod.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::config::ValidConfig;
use crate::naming::hex;

/// The template version. Any change to the pod shape must bump it, re-keying every pod.
pub const TEMPLATE_VERSION: u32 = 1;
/// The pod's `restartPolicy`.
pub const RESTART_POLICY: &str = "Never";
/// The pod's `terminationGracePeriodSeconds`.
pub const TERMINATION_GRACE_PERIOD_SECONDS: i64 = 60;
/// What the template records in place of the per-attempt Secret name.
pub const ENV_FROM_SECRET_PLACEHOLDER: &str = "<per-attempt-secret>";

/// The create-intent template of one configuration. Field order is the serialization order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CreateIntent<'a> {
    template_version: u32,
    namespace: &'a str,
    image: &'a str,
    cpu_request: &'a str,
    memory_request: &'a str,
    cpu_limit: &'a str,
    memory_limit: &'a str,
    service_account: Option<&'a str>,
    command: Option<&'a [String]>,
    args: Option<&'a [String]>,
    restart_policy: &'static str,
    termination_grace_period_seconds: i64,
    env_keys: Vec<String>,
    env_from_secret: &'static str,
    workspace_mount_path: &'a str,
    run_as_user: i64,
    run_as_group: i64,
}

impl<'a> CreateIntent<'a> {
    /// The template of `config`: env keys (authoritative included, sorted bytewise), never
    /// values; empty args as null.
    #[must_use]
    pub fn of(config: &'a ValidConfig) -> Self {
        Self {
            template_version: TEMPLATE_VERSION,
            namespace: config.namespace(),
            image: config.image().as_str(),
            cpu_request: config.cpu_request(),
            memory_request: config.memory_request(),
            cpu_limit: config.cpu_limit(),
            memory_limit: config.memory_limit(),
            service_account: config.service_account(),
            command: config.command(),
            args: config.args(),
            restart_policy: RESTART_POLICY,
            termination_grace_period_seconds: TERMINATION_GRACE_PERIOD_SECONDS,
            env_keys: config.env().keys(),
            env_from_secret: ENV_FROM_SECRET_PLACEHOLDER,
            workspace_mount_path: config.workspace_mount_path(),
            run_as_user: config.run_as_user(),
            run_as_group: config.run_as_group(),
        }
    }

    /// The compact JSON serialization that is hashed (no whitespace, non-ASCII as raw UTF-8).
    #[must_use]
    pub fn to_json(&self) -> String {
        // Strings, integers, arrays and nulls always serialize; serde_json cannot fail here.
        #[allow(clippy::expect_used)] // reason: infallible for this struct, see above
        serde_json::to_string(self).expect("the create-intent template always serializes")
    }

    /// The fingerprint: lowercase hex SHA-256 of [`CreateIntent::to_json`] (64 characters).
    #[must_use]
    pub fn fingerprint(&self) -> String {
        hex(&Sha256::digest(self.to_json().as_bytes()))
    }
}

/// Whether a pod's recorded `create-intent` annotation equals the desired fingerprint: string
/// equality only; a missing or malformed annotation is divergence.
#[must_use]
pub fn intent_matches(recorded: Option<&str>, desired: &str) -> bool {
    recorded == Some(desired)
}

#[cfg(test)]
mod tests;
