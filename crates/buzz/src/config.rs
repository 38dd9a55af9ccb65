//! `provider_config` parsing (buzz-provider.md § 3.1, § 3.2, § 16.3): the form's flat object of
//! scalars (plus the structured `pod_options`) into a typed [`ProviderConfig`], with the exact
//! refusal texts.
//!
//! Pure. Unknown keys are ignored and never kept (so a stray `token` cannot reach `Debug` or
//! any output); credentials never come from here (I2), only from the ambient kubeconfig. Must
//! not: fall back to a default image or namespace, or downgrade `inactivity_seconds: 0` to a
//! bounded lifetime.

use serde_json::{Map, Value};

use apiary_substrate::config::PodOptions;

use crate::image::{self, ImageError};

/// `cpu_request` when unset.
pub const DEFAULT_CPU_REQUEST: &str = "1";
/// `memory_request` when unset.
pub const DEFAULT_MEMORY_REQUEST: &str = "2Gi";
/// `cpu_limit` when unset.
pub const DEFAULT_CPU_LIMIT: &str = "2";
/// `memory_limit` when unset.
pub const DEFAULT_MEMORY_LIMIT: &str = "4Gi";
/// `inactivity_seconds` when unset (2 h).
pub const DEFAULT_INACTIVITY_SECONDS: u64 = 7200;

/// Why `provider_config` was refused; each `Display` is the exact wire message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Not an object (and not `null`).
    #[error("provider_config must be a JSON object")]
    NotAnObject,
    /// A string field holds another JSON type (the value is shown as compact JSON).
    #[error("provider_config.{field} must be a string, got {json}")]
    NotAString {
        /// The field.
        field: &'static str,
        /// The value, as compact JSON.
        json: String,
    },
    /// An integer field holds something that is not a non-negative integer; `shown` is the
    /// number, the debug-quoted string, or the compact JSON.
    #[error("provider_config.{field} must be a non-negative integer, got {shown}")]
    NotAnInteger {
        /// The field.
        field: &'static str,
        /// The refused value as shown.
        shown: String,
    },
    /// The namespace is missing or blank.
    #[error(
        "provider_config.namespace is required: the info schema supplies a generated default, \
         so an empty value means the form was cleared"
    )]
    NamespaceRequired,
    /// The namespace is not an RFC 1123 label.
    #[error(
        "provider_config.namespace {0:?} is not a valid Kubernetes namespace (lowercase \
         alphanumerics and '-', ≤63 characters)"
    )]
    InvalidNamespace(String),
    /// The image is refused (buzz-provider.md § 3.4).
    #[error(transparent)]
    Image(#[from] ImageError),
    /// `inactivity_seconds: 0`.
    #[error(
        "provider_config.inactivity_seconds: 0 (indefinite lifetime) is not supported in this \
         version: it requires restartPolicy OnFailure, which is gated on the harness exit-code \
         contract. Set a positive number of seconds."
    )]
    IndefiniteLifetime,
    /// `pod_options.active_deadline_seconds` is zero or negative.
    #[error("provider_config.pod_options.active_deadline_seconds must be positive")]
    NonPositiveDeadline,
    /// A `pod_options` storage quantity is blank.
    #[error("provider_config.pod_options storage quantities must not be empty")]
    BlankStorageQuantity,
    /// `pod_options` does not deserialize (an unknown field, a wrong type).
    #[error("provider_config.pod_options: {0}")]
    PodOptions(String),
}

/// A parsed `provider_config`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderConfig {
    /// The kubeconfig context; `None` is the current context.
    pub context: Option<String>,
    /// The namespace (an RFC 1123 label).
    pub namespace: String,
    /// The normalized image, `name@sha256:<hex>`.
    pub image: String,
    /// The CPU request (a quantity, validated by the apiserver).
    pub cpu_request: String,
    /// The memory request.
    pub memory_request: String,
    /// The CPU limit.
    pub cpu_limit: String,
    /// The memory limit.
    pub memory_limit: String,
    /// `BUZZ_ACP_EXIT_AFTER_INACTIVITY`, positive.
    pub inactivity_seconds: u64,
    /// `serviceAccountName`; never re-enables token mounting.
    pub service_account: Option<String>,
    /// The optional placement, storage and lifetime controls.
    pub pod_options: PodOptions,
}

/// `optional_string`: absent, `null` or blank is unset; a string is trimmed; anything else is
/// refused.
fn optional_string(
    map: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, ConfigError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            let trimmed = text.trim();
            Ok((!trimmed.is_empty()).then(|| trimmed.to_owned()))
        }
        Some(other) => Err(ConfigError::NotAString {
            field,
            json: other.to_string(),
        }),
    }
}

/// `optional_u64`: absent, `null` or a blank string is unset; a number must be a u64; a string
/// is trimmed and parsed as one; anything else is refused.
fn optional_u64(map: &Map<String, Value>, field: &'static str) -> Result<Option<u64>, ConfigError> {
    let refuse = |shown: String| ConfigError::NotAnInteger { field, shown };
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => number
            .as_u64()
            .map(Some)
            .ok_or_else(|| refuse(number.to_string())),
        Some(Value::String(text)) => {
            let trimmed = text.trim();
            if trimmed.is_empty() {
                return Ok(None);
            }
            trimmed
                .parse::<u64>()
                .map(Some)
                .map_err(|_| refuse(format!("{text:?}")))
        }
        Some(other) => Err(refuse(other.to_string())),
    }
}

/// Whether `namespace` is an RFC 1123 label: 1–63 characters of `[a-z0-9-]`, starting and
/// ending with `[a-z0-9]`.
pub fn is_valid_namespace(namespace: &str) -> bool {
    let bytes = namespace.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=63).contains(&bytes.len())
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
}

/// Parse `pod_options` (absent or `null` is the default) and validate it (buzz-provider.md § 16.3).
///
/// # Errors
///
/// [`ConfigError::PodOptions`] for an unknown field or a wrong type,
/// [`ConfigError::NonPositiveDeadline`], [`ConfigError::BlankStorageQuantity`].
pub fn parse_pod_options(value: Option<&Value>) -> Result<PodOptions, ConfigError> {
    let options = match value {
        None | Some(Value::Null) => return Ok(PodOptions::default()),
        Some(value) => serde_json::from_value::<PodOptions>(value.clone())
            .map_err(|error| ConfigError::PodOptions(error.to_string()))?,
    };
    if options
        .active_deadline_seconds
        .is_some_and(|seconds| seconds <= 0)
    {
        return Err(ConfigError::NonPositiveDeadline);
    }
    let quantities = [
        &options.workspace_size_limit,
        &options.ephemeral_storage_request,
        &options.ephemeral_storage_limit,
    ];
    if quantities
        .iter()
        .any(|quantity| quantity.as_deref().is_some_and(|q| q.trim().is_empty()))
    {
        return Err(ConfigError::BlankStorageQuantity);
    }
    Ok(options)
}

/// Parse `provider_config`, field by field in the schema's order.
///
/// # Errors
///
/// [`ConfigError`]: the first refused field.
pub fn parse(value: &Value) -> Result<ProviderConfig, ConfigError> {
    let empty = Map::new();
    let map = match value {
        Value::Object(map) => map,
        // `null` passes here and then fails on the missing namespace.
        Value::Null => &empty,
        _ => return Err(ConfigError::NotAnObject),
    };
    let context = optional_string(map, "context")?;
    let namespace = optional_string(map, "namespace")?.ok_or(ConfigError::NamespaceRequired)?;
    if !is_valid_namespace(&namespace) {
        return Err(ConfigError::InvalidNamespace(namespace));
    }
    let image = image::parse(&optional_string(map, "image")?.unwrap_or_default())?;
    let quantity = |field, default: &str| {
        optional_string(map, field).map(|value| value.unwrap_or_else(|| default.to_owned()))
    };
    let cpu_request = quantity("cpu_request", DEFAULT_CPU_REQUEST)?;
    let memory_request = quantity("memory_request", DEFAULT_MEMORY_REQUEST)?;
    let cpu_limit = quantity("cpu_limit", DEFAULT_CPU_LIMIT)?;
    let memory_limit = quantity("memory_limit", DEFAULT_MEMORY_LIMIT)?;
    let inactivity_seconds =
        optional_u64(map, "inactivity_seconds")?.unwrap_or(DEFAULT_INACTIVITY_SECONDS);
    // Refused, never silently downgraded to a bounded lifetime (`restartPolicy: Never`).
    if inactivity_seconds == 0 {
        return Err(ConfigError::IndefiniteLifetime);
    }
    let service_account = optional_string(map, "service_account")?;
    let pod_options = parse_pod_options(map.get("pod_options"))?;
    Ok(ProviderConfig {
        context,
        namespace,
        image,
        cpu_request,
        memory_request,
        cpu_limit,
        memory_limit,
        inactivity_seconds,
        service_account,
        pod_options,
    })
}

#[cfg(test)]
mod tests;
