//! The `info` answer and the `config_schema` the desktop renders its form from
//! (buzz-provider.md § 2.3, § 3.3, with § 16.3's `pod_options` object).
//!
//! Pure but for the namespace default, which is random on every call (from the [`Entropy`]
//! passed in). Serialized from structs, so the properties keep the spec's order (the form's
//! order). Must not: declare a property whose `_`/`-`-split words include an I2-banned word, or
//! advertise `identity_policy` (buzz-provider.md § 16.2 is not implemented: a form field for a policy this build
//! never checks would look enforced and be ignored).

use serde::Serialize;
use serde_json::{Value, json};

use crate::entropy::{Entropy, EntropyError};

/// `info`'s `name`.
pub const PROVIDER_NAME: &str = "kubernetes";
/// `info`'s `protocol_version`.
pub const PROTOCOL_VERSION: u32 = 1;
/// `info`'s `description`.
pub const DESCRIPTION: &str = "Runs agents as pods in a Kubernetes cluster";
/// The schema's image prefill (never a parse-time fallback: `image` is required).
pub const DEFAULT_IMAGE: &str = "ghcr.io/block/buzz-sprig:sha-6530b58@sha256:\
     17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76";
/// The prefix of the schema's namespace default.
pub const NAMESPACE_PREFIX: &str = "buzz-agents-";
/// The words D's I2 check refuses in a `provider_config` key.
pub const BANNED_WORDS: [&str; 5] = ["secret", "password", "token", "key", "credential"];

/// `info`'s answer (its keys at the top level, no variant tag).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Info {
    ok: bool,
    name: &'static str,
    version: &'static str,
    protocol_version: u32,
    description: &'static str,
    /// The JSON Schema of `provider_config`.
    pub config_schema: ConfigSchema,
}

/// The JSON Schema object of `provider_config`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigSchema {
    #[serde(rename = "type")]
    kind: &'static str,
    /// `["namespace","image"]`.
    pub required: [&'static str; 2],
    /// The fields, in the form's order.
    pub properties: Properties,
}

/// The properties of buzz-provider.md § 3.3 in order, then `pod_options`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Properties {
    context: Property,
    /// Carries the fresh namespace default.
    pub namespace: Property,
    /// Carries the image prefill.
    pub image: Property,
    cpu_request: Property,
    memory_request: Property,
    cpu_limit: Property,
    memory_limit: Property,
    inactivity_seconds: Property,
    service_account: Property,
    pod_options: Value,
}

/// One scalar property.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Property {
    #[serde(rename = "type")]
    kind: &'static str,
    title: &'static str,
    /// The prefill, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'static str>,
}

fn property(
    kind: &'static str,
    title: &'static str,
    default: Option<Value>,
    description: Option<&'static str>,
) -> Property {
    Property {
        kind,
        title,
        default,
        description,
    }
}

/// A fresh namespace default: `buzz-agents-` and 6 random characters of `[a-z0-9]`.
///
/// # Errors
///
/// [`EntropyError`] when no randomness is available.
pub fn namespace_default(entropy: &mut dyn Entropy) -> Result<String, EntropyError> {
    const ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut namespace = String::from(NAMESPACE_PREFIX);
    for _ in 0..6 {
        let index = entropy.next_u32()? % 36;
        namespace.push(char::from(ALPHABET[index as usize]));
    }
    Ok(namespace)
}

/// The `pod_options` object (buzz-provider.md § 16.3): no unknown sub-fields, each typed.
fn pod_options_property() -> Value {
    json!({
        "type": "object",
        "title": "Pod options",
        "description": "Optional placement, storage and lifetime controls for the agent's pod.",
        "additionalProperties": false,
        "properties": {
            "node_selector": {
                "type": "object",
                "title": "Node selector",
                "additionalProperties": {"type": "string"}
            },
            "tolerations": {
                "type": "array",
                "title": "Tolerations",
                "items": {"type": "object"}
            },
            "workspace_size_limit": {"type": "string", "title": "Workspace size limit"},
            "ephemeral_storage_request": {"type": "string", "title": "Ephemeral storage request"},
            "ephemeral_storage_limit": {"type": "string", "title": "Ephemeral storage limit"},
            "active_deadline_seconds": {
                "type": "integer",
                "title": "Active deadline (seconds)",
                "minimum": 1
            },
            "setup_pending": {"type": "boolean", "title": "Expose the pod UID for setup"}
        }
    })
}

/// The `config_schema`, with a fresh namespace default.
///
/// # Errors
///
/// [`EntropyError`] when no randomness is available.
pub fn config_schema(entropy: &mut dyn Entropy) -> Result<ConfigSchema, EntropyError> {
    let string = "string";
    Ok(ConfigSchema {
        kind: "object",
        required: ["namespace", "image"],
        properties: Properties {
            context: property(
                string,
                "Kubeconfig context",
                None,
                Some("Leave empty to use the current context."),
            ),
            namespace: property(
                string,
                "Namespace",
                Some(Value::String(namespace_default(entropy)?)),
                Some("Created if it does not exist."),
            ),
            image: property(
                string,
                "Agent image",
                Some(Value::String(DEFAULT_IMAGE.to_owned())),
                Some(
                    "A digest-pinned image (name@sha256:...) that contains the buzz-acp runtime \
                     ABI. A tag alone is refused, because the pod runs with the agent's private \
                     key.",
                ),
            ),
            cpu_request: property(string, "CPU request", Some(json!("1")), None),
            memory_request: property(string, "Memory request", Some(json!("2Gi")), None),
            cpu_limit: property(string, "CPU limit", Some(json!("2")), None),
            memory_limit: property(string, "Memory limit", Some(json!("4Gi")), None),
            inactivity_seconds: property(
                "number",
                "Stop after inactivity (seconds)",
                Some(json!(7200)),
                Some(
                    "The agent exits after this long with no work, and can be started again at \
                     any time.",
                ),
            ),
            service_account: property(
                string,
                "Service account",
                None,
                Some("Scheduling/RBAC identity only. No API token is mounted."),
            ),
            pod_options: pod_options_property(),
        },
    })
}

/// `info`'s answer (no cluster contact).
///
/// # Errors
///
/// [`EntropyError`] when no randomness is available for the namespace default.
pub fn info(entropy: &mut dyn Entropy) -> Result<Info, EntropyError> {
    Ok(Info {
        ok: true,
        name: PROVIDER_NAME,
        version: env!("CARGO_PKG_VERSION"),
        protocol_version: PROTOCOL_VERSION,
        description: DESCRIPTION,
        config_schema: config_schema(entropy)?,
    })
}

#[cfg(test)]
mod tests;
