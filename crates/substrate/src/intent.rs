//! The create-intent fingerprint (deploy.md § Create-intent fingerprint): the template of the
//! pod shape, serialized as compact JSON in a fixed field order and hashed with SHA-256.
//!
//! Pure. The template is read from a [`PodShape`], the plain value validation computes once and
//! the validated configuration carries, so this module knows nothing about configuration. The
//! template structurally cannot hold an environment value, the Secret name or the generation: it
//! holds env *keys* and a fixed placeholder. The constants below are the same definitions the pod
//! builder uses, so the template cannot describe a different pod.

use serde::Serialize;
use sha2::{Digest, Sha256};

use apiary_classify::binding::Binding;
use apiary_classify::grace::{DEFAULT_POD_GRACE, GracePeriod};
use apiary_classify::settings::{Member, SETTINGS};

use crate::image::ImageRef;
use crate::naming::hex;
use crate::pod_options::PodOptions;

/// The template version. Any change to the pod shape must bump it, re-keying every pod.
pub const TEMPLATE_VERSION: u32 = 1;
/// The pod's `restartPolicy`.
pub const RESTART_POLICY: &str = "Never";
/// What the template records in place of the per-attempt Secret name.
pub const ENV_FROM_SECRET_PLACEHOLDER: &str = "<per-attempt-secret>";

/// What a validated configuration asks of its pod, as plain values: everything the create-intent
/// template varies on, and nothing it must not see (no environment value, no timeout, no agent).
/// Computed once by `DeployConfig::validate`; the fingerprint and the configuration's accessors
/// both read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodShape {
    /// The namespace.
    pub namespace: String,
    /// The normalized, digest-pinned image reference.
    pub image: ImageRef,
    /// The CPU request, verbatim.
    pub cpu_request: String,
    /// The memory request, verbatim.
    pub memory_request: String,
    /// The CPU limit, verbatim.
    pub cpu_limit: String,
    /// The memory limit, verbatim.
    pub memory_limit: String,
    /// The service account, when configured.
    pub service_account: Option<String>,
    /// The command, when configured (never empty).
    pub command: Option<Vec<String>>,
    /// The args, when configured: `None` for an empty list (Kubernetes cannot tell them apart).
    pub args: Option<Vec<String>>,
    /// The environment's keys (authoritative included), sorted bytewise; never values.
    pub env_keys: Vec<String>,
    /// The workspace mount path.
    pub workspace_mount_path: String,
    /// The container UID.
    pub run_as_user: i64,
    /// The container GID, also the pod's fsGroup.
    pub run_as_group: i64,
    /// The pod options (deploy.md § Pod options; buzz-provider.md § 16.3 under the buzz binding).
    pub pod_options: PodOptions,
    /// `deploy --grace-period` (deploy.md § Grace periods): `None` is [`DEFAULT_POD_GRACE`].
    pub grace_period: Option<GracePeriod>,
}

impl PodShape {
    /// The pod's `terminationGracePeriodSeconds`: `--grace-period`, or the 60 s default.
    #[must_use]
    pub fn termination_grace_seconds(&self) -> i64 {
        i64::from(self.grace_period.unwrap_or(DEFAULT_POD_GRACE).seconds())
    }
}

/// The members every template opens with, in their serialization order (deploy.md § Create-intent
/// fingerprint, buzz-provider.md § 7). Flattened into each template, so the bytes are the same as
/// if the members were written there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
struct Leading<'a> {
    template_version: u32,
    namespace: &'a str,
    image: &'a str,
    cpu_request: &'a str,
    memory_request: &'a str,
    cpu_limit: &'a str,
    memory_limit: &'a str,
    service_account: Option<&'a str>,
}

impl<'a> Leading<'a> {
    fn of(shape: &'a PodShape) -> Self {
        Self {
            template_version: TEMPLATE_VERSION,
            namespace: &shape.namespace,
            image: shape.image.as_str(),
            cpu_request: &shape.cpu_request,
            memory_request: &shape.memory_request,
            cpu_limit: &shape.cpu_limit,
            memory_limit: &shape.memory_limit,
            service_account: shape.service_account.as_deref(),
        }
    }
}

/// The members every template continues with after `command` and `args` (which a binding
/// without them leaves out), in their serialization order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
struct Trailing<'a> {
    restart_policy: &'static str,
    termination_grace_period_seconds: i64,
    env_keys: Vec<&'a str>,
    env_from_secret: &'static str,
    workspace_mount_path: &'a str,
    run_as_user: i64,
    run_as_group: i64,
}

impl<'a> Trailing<'a> {
    fn of(shape: &'a PodShape) -> Self {
        Self {
            restart_policy: RESTART_POLICY,
            termination_grace_period_seconds: shape.termination_grace_seconds(),
            env_keys: shape.env_keys.iter().map(String::as_str).collect(),
            env_from_secret: ENV_FROM_SECRET_PLACEHOLDER,
            workspace_mount_path: &shape.workspace_mount_path,
            run_as_user: shape.run_as_user,
            run_as_group: shape.run_as_group,
        }
    }
}

/// The create-intent template of one configuration. Field order is the serialization order.
/// The `command` and `args` members are there only under a binding whose template has them
/// ([`Binding::intent_command_args`]; buzz-provider.md § 7 has none). The `pod_options` member
/// comes last and only when an option is set, so the fingerprint of a configuration without
/// options is the one it always had (deploy.md § Create-intent fingerprint).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CreateIntent<'a> {
    #[serde(flatten)]
    leading: Leading<'a>,
    // The outer `None` leaves the member out; `Some(None)` writes `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<Option<&'a [String]>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Option<&'a [String]>>,
    #[serde(flatten)]
    trailing: Trailing<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pod_options: Option<&'a PodOptions>,
}

impl<'a> CreateIntent<'a> {
    /// The template of `shape` under `binding`: its env keys, never values; empty args as null.
    #[must_use]
    pub fn of(shape: &'a PodShape, binding: Binding) -> Self {
        let members = binding.intent_command_args;
        Self {
            leading: Leading::of(shape),
            command: members.then_some(shape.command.as_deref()),
            args: members.then_some(shape.args.as_deref()),
            trailing: Trailing::of(shape),
            pod_options: (!shape.pod_options.is_default()).then_some(&shape.pod_options),
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

    /// The intent settings (deploy.md § Naming what differs): each member of the template (each
    /// pod option on its own) that is set, named as the one declaration of the settings names
    /// it ([`SETTINGS`]), with the first 8 hex of the SHA-256 of its compact JSON; `name=digest`
    /// pairs sorted by name and joined by `,`. An unset member (null, false, empty) is left out,
    /// so "unset" reads the same whether a pod option block is there or not. Holds no value:
    /// env keys, never values, are all the template has.
    #[must_use]
    pub fn settings(&self) -> String {
        let Ok(serde_json::Value::Object(members)) = serde_json::to_value(self) else {
            return String::new();
        };
        let mut pairs = std::collections::BTreeMap::new();
        for (member, value) in &members {
            match (member.as_str(), value) {
                ("pod_options", serde_json::Value::Object(options)) => {
                    for (option, value) in options {
                        setting(&mut pairs, Member::PodOption(option), value);
                    }
                }
                (member, value) => setting(&mut pairs, Member::Template(member), value),
            }
        }
        pairs
            .into_iter()
            .map(|(name, digest)| format!("{name}={digest}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Add the setting of template member `member` with `value`, unless unset.
fn setting(
    pairs: &mut std::collections::BTreeMap<String, String>,
    member: Member<&str>,
    value: &serde_json::Value,
) {
    use serde_json::Value;
    let unset = match value {
        Value::Null | Value::Bool(false) => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(items) => items.is_empty(),
        Value::String(_) | Value::Number(_) | Value::Bool(true) => false,
    };
    if unset {
        return;
    }
    let digest = hex(&Sha256::digest(value.to_string().as_bytes()));
    pairs.insert(setting_name(member), digest[..8].to_owned());
}

/// The name of a template member's setting, as [`SETTINGS`] declares it. A member missing
/// there (the tests of this module forbid one) is named by its JSON name, dashed.
fn setting_name(member: Member<&str>) -> String {
    let declared = SETTINGS.iter().find(|setting| setting.member == member);
    match (declared, member) {
        (Some(setting), _) => setting.name.to_owned(),
        (None, Member::Template(json) | Member::PodOption(json)) => json.replace('_', "-"),
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
