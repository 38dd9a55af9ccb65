//! The provider wire protocol (buzz-provider.md § 2): the request envelope, the dispatch order
//! of `respond`, and the three response shapes (info, deployed, error), serialized as one JSON
//! line.
//!
//! Pure: [`dispatch`] answers `info` and every refusal it can reach without a cluster itself,
//! and hands a typed [`DeployRequest`] back for the shell to run. Must not: echo `request_id`,
//! print any field of the agent payload in `Debug`, or let typed parsing run before the
//! relay-mesh backstop.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::entropy::Entropy;
use crate::schema;

/// The refusal for an agent configured for shared compute (buzz-provider.md § 2.2, step 2).
pub const RELAY_MESH_REFUSAL: &str = "deploy refused: this agent is configured for shared \
     compute (relay-mesh), which runs on the relay rather than in a pod. Switch the agent to a \
     local runtime before deploying it to Kubernetes.";

/// The answer to any argument vector other than none (buzz-provider.md § 2.1, newer revisions).
pub const UNSUPPORTED_ARGUMENTS: &str = "unsupported provider arguments";

/// The answer to `--check-identity`: the identity-policy preflight (buzz-provider.md § 16.2) needs an SDK that is
/// not published, so this build does not have it (an in-band error, exit 0).
pub const CHECK_IDENTITY_UNSUPPORTED: &str = "--check-identity is not supported by this build: \
     the identity-policy preflight needs the buzz identity SDK, which this provider does not \
     include";

/// What the desktop sends about the agent. Only the consumed fields are typed; every other
/// field (`name`, `model`, `provider`, `system_prompt`, …) is accepted and ignored.
#[derive(Clone, Deserialize)]
pub struct AgentPayload {
    /// `BUZZ_RELAY_URL` (the key must be present).
    pub relay_url: String,
    /// The agent's `nsec1…` key: identity, `BUZZ_PRIVATE_KEY`, `NOSTR_PRIVATE_KEY`.
    pub private_key_nsec: String,
    /// `BUZZ_AUTH_TAG` (blank is absent).
    #[serde(default)]
    pub auth_tag: Option<String>,
    /// `BUZZ_ACP_RESPOND_TO` (validated, buzz-provider.md § 5.4).
    #[serde(default)]
    pub respond_to: Option<String>,
    /// `BUZZ_ACP_RESPOND_TO_ALLOWLIST` (comma-joined).
    #[serde(default)]
    pub respond_to_allowlist: Option<Vec<String>>,
    /// Legacy tier-2 environment, used only when `launch` is absent.
    #[serde(default)]
    pub env_vars: BTreeMap<String, String>,
    /// The desktop-resolved launch contract.
    #[serde(default)]
    pub launch: Option<Launch>,
}

/// The desktop-resolved launch contract (every field defaults when absent).
#[derive(Clone, Default, Deserialize)]
pub struct Launch {
    /// A command name resolved in the image: `BUZZ_ACP_AGENT_COMMAND`.
    #[serde(default)]
    pub command: Option<String>,
    /// `BUZZ_ACP_AGENT_ARGS` (or `BUZZ_ACP_AGENT_ARGS_JSON`, buzz-provider.md § 16.1).
    #[serde(default)]
    pub args: Vec<String>,
    /// Tier 2: the user's layered environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Tier 1: overridable behaviour defaults.
    #[serde(default)]
    pub policy_env: BTreeMap<String, String>,
    /// `BUZZ_ACP_AGENT_OWNER` (blank is absent).
    #[serde(default)]
    pub owner_pubkey: Option<String>,
}

// The payload holds the nsec and every environment value: `Debug` names the keys only.
impl fmt::Debug for AgentPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentPayload")
            .field("env_vars", &self.env_vars.keys().collect::<Vec<_>>())
            .field("launch", &self.launch)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Launch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Launch")
            .field("args", &self.args.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("policy_env", &self.policy_env.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// A typed `deploy` request.
#[derive(Clone, Debug)]
pub struct DeployRequest {
    /// The agent.
    pub agent: AgentPayload,
    /// `provider_config` as sent (`null` when absent; rejected later for its missing namespace).
    pub provider_config: Value,
}

/// The request enum, tagged by `op`; `request_id` and every unknown field are ignored.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Request {
    Info {},
    Deploy {
        agent: Box<AgentPayload>,
        #[serde(default)]
        provider_config: Value,
    },
}

/// One response; [`Response::to_line`] writes exactly its wire shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    /// `info`'s answer (boxed: it is by far the largest variant).
    Info(Box<schema::Info>),
    /// `{"ok":true,"agent_id":…}`.
    Deployed {
        /// The started pod's name.
        agent_id: String,
    },
    /// `{"ok":false,"error":…}`.
    Error(String),
}

impl Response {
    /// An error response.
    pub fn error(message: impl Into<String>) -> Response {
        Response::Error(message.into())
    }

    /// The response as one JSON line, with its trailing `\n`.
    ///
    /// # Errors
    ///
    /// The serializer's error (it cannot fail for these types; the shell then prints
    /// [`serialize_failure_line`]).
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        #[derive(Serialize)]
        struct Deployed<'a> {
            ok: bool,
            agent_id: &'a str,
        }
        #[derive(Serialize)]
        struct Failed<'a> {
            ok: bool,
            error: &'a str,
        }
        let mut line = match self {
            Response::Info(info) => serde_json::to_string(info)?,
            Response::Deployed { agent_id } => {
                serde_json::to_string(&Deployed { ok: true, agent_id })?
            }
            Response::Error(error) => serde_json::to_string(&Failed { ok: false, error })?,
        };
        line.push('\n');
        Ok(line)
    }
}

/// The hand-built line for a response that could not be serialized (buzz-provider.md § 2.1): no serializer is
/// involved, so the error text is escaped here.
pub fn serialize_failure_line(error: &str) -> String {
    let mut escaped = String::with_capacity(error.len());
    for c in error.chars() {
        match c {
            '"' => escaped.push_str("\\\""),
            '\\' => escaped.push_str("\\\\"),
            c if u32::from(c) < 0x20 => escaped.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => escaped.push(c),
        }
    }
    format!("{{\"ok\":false,\"error\":\"could not serialize a response: {escaped}\"}}\n")
}

/// What the shell must do with a request.
#[derive(Debug)]
pub enum Dispatch {
    /// Write this response: `info`, or a refusal reached before any cluster contact.
    Answer(Response),
    /// Run this deploy (on a current-thread runtime, buzz-provider.md § 2.2 step 5).
    Deploy(Box<DeployRequest>),
}

/// The argument rule of the newer revisions (buzz-provider.md § 2.1): no argument dispatches stdin; anything
/// else is answered without reading the request.
pub fn check_arguments<S: AsRef<str>>(args: &[S]) -> Option<Response> {
    match args {
        [] => None,
        [only] if only.as_ref() == "--check-identity" => {
            Some(Response::error(CHECK_IDENTITY_UNSUPPORTED))
        }
        _ => Some(Response::error(UNSUPPORTED_ARGUMENTS)),
    }
}

/// `respond(input)`'s dispatch order (buzz-provider.md § 2.2): raw JSON parse; the relay-mesh backstop on the
/// raw `agent.provider`; the typed parse; `info` answered at once; `deploy` handed back.
pub fn dispatch(input: &str, entropy: &mut dyn Entropy) -> Dispatch {
    let raw: Value = match serde_json::from_str(input) {
        Ok(raw) => raw,
        Err(error) => {
            return Dispatch::Answer(Response::error(format!(
                "request is not valid JSON: {error}"
            )));
        }
    };
    // Before typed parsing, so it fires for an otherwise malformed request and for `info` too.
    let provider = raw.get("agent").and_then(|agent| agent.get("provider"));
    if let Some(Value::String(provider)) = provider
        && provider.trim() == "relay-mesh"
    {
        return Dispatch::Answer(Response::error(RELAY_MESH_REFUSAL));
    }
    match serde_json::from_value::<Request>(raw) {
        Err(error) => Dispatch::Answer(Response::error(format!(
            "could not understand the request: {error}"
        ))),
        Ok(Request::Info {}) => Dispatch::Answer(match schema::info(entropy) {
            Ok(info) => Response::Info(Box::new(info)),
            Err(error) => Response::error(error.to_string()),
        }),
        Ok(Request::Deploy {
            agent,
            provider_config,
        }) => Dispatch::Deploy(Box::new(DeployRequest {
            agent: *agent,
            provider_config,
        })),
    }
}

#[cfg(test)]
mod tests;
