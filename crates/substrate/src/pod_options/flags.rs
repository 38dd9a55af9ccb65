//! The native binding's pod-option flags (deploy.md § Pod options): their syntax
//! (`KEY=VALUE`, `kubectl taint`'s `KEY[=VALUE][:EFFECT]`, `NAME=QUANTITY`) and the rules that are
//! certain without a cluster (label-key and value syntax, object-name syntax, taint effects, a
//! resource name that is not `cpu`/`memory`, keys apiary owns). Everything else is sent as is and
//! left to the apiserver. Every refusal names the flag, the problem and the fix.
//!
//! Pure: no I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;

use super::{EgressRule, PodOptions, SecretKey, WorkspaceClaim};
use syntax::{is_dns_subdomain, is_label_token, is_quantity};

mod syntax;
use crate::env::{AUTHORITATIVE_KEYS, PILOT_POD_UID_ENV};

/// A flag that sets a pod option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    /// `--node-selector KEY=VALUE`.
    NodeSelector,
    /// `--toleration KEY[=VALUE][:EFFECT]`.
    Toleration,
    /// `--runtime-class NAME`.
    RuntimeClass,
    /// `--priority-class NAME`.
    PriorityClass,
    /// `--resource NAME=QUANTITY`.
    Resource,
    /// `--ephemeral-storage-request Q`.
    EphemeralStorageRequest,
    /// `--ephemeral-storage-limit Q`.
    EphemeralStorageLimit,
    /// `--image-pull-secret NAME`.
    ImagePullSecret,
    /// `--label KEY=VALUE`.
    Label,
    /// `--annotation KEY=VALUE`.
    Annotation,
    /// `--env-from-secret NAME`.
    EnvFromSecret,
    /// `--env-secret VAR=SECRET/KEY`.
    EnvSecret,
    /// `--allow-egress CIDR[:PORT]`.
    AllowEgress,
    /// `--workspace-size SIZE`.
    WorkspaceSize,
    /// `--storage-class NAME`.
    StorageClass,
}

impl Flag {
    /// The flag as typed.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::NodeSelector => "--node-selector",
            Self::Toleration => "--toleration",
            Self::RuntimeClass => "--runtime-class",
            Self::PriorityClass => "--priority-class",
            Self::Resource => "--resource",
            Self::EphemeralStorageRequest => "--ephemeral-storage-request",
            Self::EphemeralStorageLimit => "--ephemeral-storage-limit",
            Self::ImagePullSecret => "--image-pull-secret",
            Self::Label => "--label",
            Self::Annotation => "--annotation",
            Self::EnvFromSecret => "--env-from-secret",
            Self::EnvSecret => "--env-secret",
            Self::AllowEgress => "--allow-egress",
            Self::WorkspaceSize => "--workspace-size",
            Self::StorageClass => "--storage-class",
        }
    }
}

/// Why a pod-option flag was refused. The message names the flag, the value's problem and how
/// to fix it; the value itself is not secret (none of these flags carries a secret).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} {text:?}: {problem}", flag.name())]
pub struct PodOptionError {
    /// The flag.
    pub flag: Flag,
    /// The value as given.
    pub text: String,
    /// What is wrong and how to fix it.
    pub problem: String,
}

fn refuse(flag: Flag, text: &str, problem: impl Into<String>) -> PodOptionError {
    PodOptionError {
        flag,
        text: text.to_owned(),
        problem: problem.into(),
    }
}

/// The taint effects a toleration may name (`kubectl taint`'s).
pub const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// Label and annotation keys apiary (or a binding it implements) owns: a prefix ending in `/`,
/// or a whole key.
pub const OWNED_KEYS: [&str; 3] = [
    "apiary.dev/",
    "buzz.block.xyz/",
    "app.kubernetes.io/managed-by",
];

/// Resource names with flags of their own, refused by `--resource`.
const BASE_RESOURCES: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];

/// Splits `KEY=VALUE` (the first `=`), checking the key's syntax and, for labels and node
/// selectors, the value's.
///
/// # Errors
/// A missing `=`, an invalid key or (for labels and selectors) an invalid value.
pub fn parse_key_value(flag: Flag, text: &str) -> Result<(String, String), PodOptionError> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(refuse(flag, text, "expected KEY=VALUE"));
    };
    check_key(flag, text, key)?;
    if matches!(flag, Flag::Label | Flag::NodeSelector) {
        check_label_value(flag, text, value)?;
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// Parses a toleration in `kubectl taint`'s syntax: `KEY=VALUE:EFFECT` and `KEY=VALUE` tolerate
/// that value (`Equal`); `KEY:EFFECT` and `KEY` tolerate any value (`Exists`); without
/// `:EFFECT` every effect is tolerated.
///
/// # Errors
/// An invalid key or value, or an effect that is not one of [`EFFECTS`].
pub fn parse_toleration(text: &str) -> Result<Toleration, PodOptionError> {
    let flag = Flag::Toleration;
    let (rest, effect) = match text.rsplit_once(':') {
        Some((rest, effect)) => {
            if !EFFECTS.contains(&effect) {
                return Err(refuse(
                    flag,
                    text,
                    format!(
                        "the effect {effect:?} is not one of {}; leave out :EFFECT to tolerate every effect",
                        EFFECTS.join(", ")
                    ),
                ));
            }
            (rest, Some(effect.to_owned()))
        }
        None => (text, None),
    };
    let (key, value, operator) = match rest.split_once('=') {
        Some((key, value)) => {
            check_label_value(flag, text, value)?;
            (key, Some(value.to_owned()), "Equal")
        }
        None => (rest, None, "Exists"),
    };
    check_key(flag, text, key)?;
    Ok(Toleration {
        key: Some(key.to_owned()),
        operator: Some(operator.to_owned()),
        value,
        effect,
        toleration_seconds: None,
    })
}

/// Parses `NAME=QUANTITY` for an extended resource (`nvidia.com/gpu=1`).
///
/// # Errors
/// A missing `=`, an invalid name, `cpu`/`memory`/`ephemeral-storage` (their own flags), or an
/// empty quantity.
pub fn parse_resource(text: &str) -> Result<(String, String), PodOptionError> {
    let flag = Flag::Resource;
    let Some((name, quantity)) = text.split_once('=') else {
        return Err(refuse(
            flag,
            text,
            "expected NAME=QUANTITY, e.g. nvidia.com/gpu=1",
        ));
    };
    if BASE_RESOURCES.contains(&name) {
        return Err(refuse(
            flag,
            text,
            format!(
                "{name} has its own flags (--{name}-request and --{name}-limit); --resource is for extended resources such as nvidia.com/gpu"
            ),
        ));
    }
    check_key(flag, text, name)?;
    if !is_quantity(quantity) {
        return Err(refuse(
            flag,
            text,
            "the quantity is not a Kubernetes quantity; give a number such as 1",
        ));
    }
    Ok((name.to_owned(), quantity.to_owned()))
}

/// Parses `VAR=SECRET/KEY` (`--env-secret`): the variable `VAR` takes the value of `KEY` in
/// the Secret `SECRET`.
///
/// # Errors
/// A missing `=` or `/`, a variable name that is not POSIX or is apiary's own, an invalid Secret
/// name or key.
pub fn parse_env_secret(text: &str) -> Result<(String, SecretKey), PodOptionError> {
    let flag = Flag::EnvSecret;
    let parts = text
        .split_once('=')
        .and_then(|(var, source)| source.split_once('/').map(|(s, k)| (var, s, k)));
    let Some((var, secret, key)) = parts else {
        return Err(refuse(
            flag,
            text,
            "expected VAR=SECRET/KEY, e.g. OPENAI_API_KEY=team-creds/openai",
        ));
    };
    check_env_var(flag, text, var)?;
    check_object_name(flag, secret)?;
    check_secret_key(flag, text, key)?;
    Ok((
        var.to_owned(),
        SecretKey {
            secret: secret.to_owned(),
            key: key.to_owned(),
        },
    ))
}

/// Parses `CIDR[:PORT]` (`--allow-egress`): an IPv4 or IPv6 address block with its prefix
/// length, then optionally `:` and a TCP port 1-65535 (`10.0.0.0/8:443`, `2001:db8::/32:443`).
///
/// # Errors
/// A missing prefix length, an address or prefix that does not parse, a port out of range.
pub fn parse_egress(text: &str) -> Result<EgressRule, PodOptionError> {
    let flag = Flag::AllowEgress;
    let Some((address, rest)) = text.split_once('/') else {
        return Err(refuse(
            flag,
            text,
            "expected CIDR[:PORT] with a prefix length, e.g. 10.0.0.0/8 or 203.0.113.7/32:443",
        ));
    };
    let (prefix, port) = match rest.split_once(':') {
        Some((prefix, port)) => (prefix, Some(port)),
        None => (rest, None),
    };
    let max = match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => 32,
        Ok(std::net::IpAddr::V6(_)) => 128,
        Err(_) => {
            return Err(refuse(
                flag,
                text,
                format!("{address:?} is not an IPv4 or IPv6 address"),
            ));
        }
    };
    let prefix_ok = !prefix.is_empty()
        && prefix.bytes().all(|b| b.is_ascii_digit())
        && prefix.parse::<u8>().is_ok_and(|p| p <= max);
    if !prefix_ok {
        return Err(refuse(
            flag,
            text,
            format!("the prefix length {prefix:?} must be a number from 0 to {max}"),
        ));
    }
    let port = match port {
        None => None,
        // Digits only, no leading zero: `+443` and `0443` are refused, not normalised.
        Some(port) if port.bytes().all(|b| b.is_ascii_digit()) && !port.starts_with('0') => {
            match port.parse::<u16>() {
                Ok(port) => Some(port),
                Err(_) => return Err(bad_port(text, port)),
            }
        }
        Some(port) => return Err(bad_port(text, port)),
    };
    Ok(EgressRule {
        cidr: format!("{address}/{prefix}"),
        port,
    })
}

fn bad_port(text: &str, port: &str) -> PodOptionError {
    refuse(
        Flag::AllowEgress,
        text,
        format!("the port {port:?} must be a number from 1 to 65535"),
    )
}

/// A variable an `--env-secret` sets: a POSIX name, never one apiary sets itself (an explicit
/// variable beats the attempt's Secret, so it could spoof one).
fn check_env_var(flag: Flag, text: &str, var: &str) -> Result<(), PodOptionError> {
    if crate::env::validate_key(var).is_err() {
        return Err(refuse(
            flag,
            text,
            format!(
                "the variable {var:?} is not a POSIX name (letters, digits and '_', not starting with a digit)"
            ),
        ));
    }
    if AUTHORITATIVE_KEYS.contains(&var) || var == PILOT_POD_UID_ENV {
        return Err(refuse(
            flag,
            text,
            format!("{var} is set by apiary itself; choose another variable name"),
        ));
    }
    Ok(())
}

/// A Secret's data key: 1-253 letters, digits, '-', '_' or '.'.
fn check_secret_key(flag: Flag, text: &str, key: &str) -> Result<(), PodOptionError> {
    let valid = !key.is_empty()
        && key.len() <= 253
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if valid {
        return Ok(());
    }
    Err(refuse(
        flag,
        text,
        format!("the key {key:?} must be 1-253 letters, digits, '-', '_' or '.'"),
    ))
}

impl PodOptions {
    /// Checks what the native flags set, by the rules that are certain without a cluster (the
    /// module docs). Run by `DeployConfig::validate`.
    ///
    /// # Errors
    /// The first refused option.
    pub fn validate_native(&self) -> Result<(), PodOptionError> {
        for (flag, map) in [
            (Flag::NodeSelector, &self.node_selector),
            (Flag::Label, &self.labels),
            (Flag::Annotation, &self.annotations),
        ] {
            for (key, value) in map {
                let text = format!("{key}={value}");
                check_key(flag, &text, key)?;
                if flag != Flag::Annotation {
                    check_label_value(flag, &text, value)?;
                }
            }
        }
        for (name, quantity) in &self.extended_resources {
            parse_resource(&format!("{name}={quantity}"))?;
        }
        for (flag, name) in [
            (Flag::RuntimeClass, self.runtime_class.as_deref()),
            (Flag::PriorityClass, self.priority_class.as_deref()),
        ] {
            if let Some(name) = name {
                check_object_name(flag, name)?;
            }
        }
        for name in &self.image_pull_secrets {
            check_object_name(Flag::ImagePullSecret, name)?;
        }
        for name in &self.env_from_secrets {
            check_object_name(Flag::EnvFromSecret, name)?;
        }
        for (var, source) in &self.env_secrets {
            parse_env_secret(&format!("{var}={}/{}", source.secret, source.key))?;
        }
        if let Some(first) = self.allow_egress.first()
            && !self.isolate
        {
            // The rule as typed: the block and, when one was given, its port.
            let typed = match first.port {
                Some(port) => format!("{}:{port}", first.cidr),
                None => first.cidr.clone(),
            };
            return Err(refuse(
                Flag::AllowEgress,
                &typed,
                "an allow-list only means something with --isolate; add --isolate",
            ));
        }
        if let Some(claim) = &self.workspace_claim {
            check_workspace(claim)?;
        }
        for (flag, quantity) in [
            (
                Flag::EphemeralStorageRequest,
                &self.ephemeral_storage_request,
            ),
            (Flag::EphemeralStorageLimit, &self.ephemeral_storage_limit),
        ] {
            if let Some(quantity) = quantity
                && !is_quantity(quantity)
            {
                return Err(refuse(
                    flag,
                    quantity,
                    "not a Kubernetes quantity; give one such as 1Gi or 500M",
                ));
            }
        }
        Ok(())
    }
}

/// The pod field a `422 Invalid` message names (`Pod "x" is invalid: spec.runtimeClassName:
/// Invalid value: …`) and the flag that sets it, when a pod option sets it: so the refusal can
/// say which flag to fix. The first field of the message that an option sets wins.
#[must_use]
pub fn flag_for_invalid_field(message: &str) -> Option<(String, Flag)> {
    let fields = message
        .split(|c: char| c.is_whitespace())
        .filter_map(|word| word.strip_suffix(':'))
        .filter(|word| word.starts_with("spec.") || word.starts_with("metadata."));
    for field in fields {
        let flag = if field.starts_with("spec.runtimeClassName") {
            Flag::RuntimeClass
        } else if field.starts_with("spec.priorityClassName") {
            Flag::PriorityClass
        } else if field.starts_with("spec.nodeSelector") {
            Flag::NodeSelector
        } else if field.starts_with("spec.tolerations") {
            Flag::Toleration
        } else if field.starts_with("spec.imagePullSecrets") {
            Flag::ImagePullSecret
        } else if field.starts_with("metadata.labels") {
            Flag::Label
        } else if field.starts_with("metadata.annotations") {
            Flag::Annotation
        } else if let Some((side, name)) = field
            .split_once(".resources.")
            .and_then(|(_, rest)| rest.split_once('['))
        {
            match (side, name.trim_end_matches(']')) {
                (_, "cpu" | "memory") => continue,
                ("requests", "ephemeral-storage") => Flag::EphemeralStorageRequest,
                ("limits", "ephemeral-storage") => Flag::EphemeralStorageLimit,
                _ => Flag::Resource,
            }
        } else {
            continue;
        };
        return Some((field.to_owned(), flag));
    }
    None
}

/// Collects repeated `KEY=VALUE` flags; a later entry for the same key wins (as for `--env`).
///
/// # Errors
/// The first refused entry.
pub fn key_values(
    flag: Flag,
    texts: &[String],
) -> Result<BTreeMap<String, String>, PodOptionError> {
    let mut map = BTreeMap::new();
    for text in texts {
        let (key, value) = match flag {
            Flag::Resource => parse_resource(text)?,
            _ => parse_key_value(flag, text)?,
        };
        map.insert(key, value);
    }
    Ok(map)
}

/// A label or annotation key (a Kubernetes qualified name): an optional DNS-subdomain prefix
/// and `/`, then a name of 1–63 characters, alphanumeric at both ends, `-`, `_`, `.` inside.
/// For `--label` and `--annotation`, never a key apiary owns.
fn check_key(flag: Flag, text: &str, key: &str) -> Result<(), PodOptionError> {
    if matches!(flag, Flag::Label | Flag::Annotation)
        && OWNED_KEYS.iter().any(|owned| {
            if owned.ends_with('/') {
                key.starts_with(owned)
            } else {
                key == *owned
            }
        })
    {
        return Err(refuse(
            flag,
            text,
            format!(
                "the key {key} is apiary's own (apiary.dev/*, buzz.block.xyz/*, app.kubernetes.io/managed-by); choose a key of your own"
            ),
        ));
    }
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && !is_dns_subdomain(prefix)
    {
        return Err(refuse(
            flag,
            text,
            format!(
                "the key's prefix {prefix:?} is not a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253)"
            ),
        ));
    }
    if !is_label_token(name) || name.is_empty() {
        return Err(refuse(
            flag,
            text,
            format!(
                "the key's name {name:?} must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
            ),
        ));
    }
    Ok(())
}

/// A label value: empty, or 1–63 characters like a key's name.
fn check_label_value(flag: Flag, text: &str, value: &str) -> Result<(), PodOptionError> {
    if value.is_empty() || is_label_token(value) {
        return Ok(());
    }
    Err(refuse(
        flag,
        text,
        format!(
            "the value {value:?} must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        ),
    ))
}

/// An object name (RuntimeClass, PriorityClass, Secret): a DNS subdomain.
/// `--workspace-size` is a positive quantity; `--storage-class` a DNS subdomain.
fn check_workspace(claim: &WorkspaceClaim) -> Result<(), PodOptionError> {
    let size = &claim.size;
    let value = is_quantity(size)
        .then(|| apiary_classify::workspace::quantity_value(size))
        .flatten();
    let Some(value) = value else {
        return Err(refuse(
            Flag::WorkspaceSize,
            size,
            "not a Kubernetes quantity; give a size such as 10Gi or 500M",
        ));
    };
    if value < 1000 {
        return Err(refuse(
            Flag::WorkspaceSize,
            size,
            "a workspace needs at least one byte; give a size such as 10Gi or 500M",
        ));
    }
    if let Some(class) = &claim.storage_class {
        check_object_name(Flag::StorageClass, class)?;
    }
    Ok(())
}

fn check_object_name(flag: Flag, name: &str) -> Result<(), PodOptionError> {
    if is_dns_subdomain(name) {
        return Ok(());
    }
    Err(refuse(
        flag,
        name,
        "not a valid object name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253",
    ))
}

#[cfg(test)]
mod tests;
