//! The harness environment of a buzz agent (buzz-provider.md § 5, with § 16.1): the three tiers
//! applied later-wins, key validation, the authoritative keys, the owner rule, the respond-to
//! gate and the Secret size cap. The result is the Secret's `stringData`.
//!
//! Pure. Must not: put any value (the nsec, an `env_vars` or `launch.env` value) into an error,
//! map fields the provider deliberately leaves to the desktop (buzz-provider.md § 5.2: `model`, `provider`,
//! timeouts, host paths), or let a lower tier keep an authoritative key tier 3 has no value for.

use std::collections::BTreeMap;

use crate::wire::AgentPayload;

/// The env map: key to value (the Secret's `stringData`).
pub type EnvMap = BTreeMap<String, String>;

/// Kubernetes' `MaxSecretSize`: the most bytes of summed values a Secret may hold.
pub const MAX_SECRET_BYTES: usize = 1_048_576;

/// The harness's respond-to modes (its `clap` parser's values; the desktop refuses `nobody`,
/// the harness accepts it).
pub const RESPOND_TO_MODES: [&str; 4] = ["owner-only", "allowlist", "anyone", "nobody"];

/// The keys tier 3 owns: removed from the lower tiers before it writes, so a key it has no
/// value for ends up absent (the baseline list and buzz-provider.md § 16.1's two additions).
pub const AUTHORITATIVE_KEYS: [&str; 14] = [
    "BUZZ_RELAY_URL",
    "BUZZ_PRIVATE_KEY",
    "NOSTR_PRIVATE_KEY",
    "BUZZ_AUTH_TAG",
    "BUZZ_ACP_AGENT_OWNER",
    "BUZZ_ACP_AGENT_COMMAND",
    "BUZZ_ACP_AGENT_ARGS",
    "BUZZ_ACP_RESPOND_TO",
    "BUZZ_ACP_RESPOND_TO_ALLOWLIST",
    "BUZZ_ACP_MCP_COMMAND",
    "BUZZ_ACP_EXIT_AFTER_INACTIVITY",
    "BUZZ_MANAGED_AGENT_START_NONCE",
    "BUZZ_ACP_MCP_SERVERS_FILE",
    "BUZZ_ACP_AGENT_ARGS_JSON",
];

/// The start-nonce key, restamped per attempt by the reconciler.
pub const START_NONCE_KEY: &str = "BUZZ_MANAGED_AGENT_START_NONCE";

/// Why the environment was refused; each `Display` is the exact wire message and none holds a
/// value (only key names, the respond-to mode and allowlist entries, which are public keys).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A lower-tier key is not POSIX-shaped.
    #[error(
        "env key {0:?} is not a POSIX environment variable name ([A-Za-z_][A-Za-z0-9_]*); \
         Kubernetes would treat it inconsistently across cluster versions"
    )]
    NotPosix(String),
    /// A lower tier sets `BUZZ_ACP_NO_PRESENCE` (any case).
    #[error(
        "BUZZ_ACP_NO_PRESENCE must not be set on a remote agent: presence is the only signal \
         that a remote agent is alive"
    )]
    NoPresence,
    /// `relay_url` is blank.
    #[error("deploy refused: relay_url is empty — the agent would have no relay to connect to")]
    EmptyRelay,
    /// Neither `auth_tag` nor `launch.owner_pubkey` is set.
    #[error(
        "deploy refused: neither auth_tag nor launch.owner_pubkey resolved — without an owner \
         the agent cannot honor !shutdown"
    )]
    NoOwner,
    /// `respond_to` is not one of the harness's modes.
    #[error(
        "deploy refused: respond_to {0:?} is not a mode the harness accepts (expected one of \
         owner-only, allowlist, anyone, nobody) — the pod would fail to parse its arguments, be \
         replaced, and leave a Secret behind on every attempt"
    )]
    UnknownRespondTo(String),
    /// `allowlist` mode with no entries.
    #[error(
        "deploy refused: respond_to is \"allowlist\" but the allowlist is empty — the harness \
         refuses this at startup, so the pod would fail, be replaced, and leave a Secret behind \
         on every attempt"
    )]
    EmptyAllowlist,
    /// An allowlist entry (trimmed) is not 64 hex characters.
    #[error(
        "deploy refused: invalid pubkey in respond_to_allowlist: {0:?} (must be exactly 64 hex \
         characters)"
    )]
    InvalidAllowlistEntry(String),
    /// The summed value bytes exceed [`MAX_SECRET_BYTES`].
    #[error("agent environment is {0} bytes; Kubernetes caps Secret data at 1048576")]
    TooLarge(usize),
}

/// What the environment needs besides the agent payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvInputs<'a> {
    /// The generation token (a placeholder; the reconciler restamps it per attempt).
    pub generation: &'a str,
    /// `provider_config.inactivity_seconds`.
    pub inactivity_seconds: u64,
}

fn is_posix_name(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn is_hex64(entry: &str) -> bool {
    entry.len() == 64 && entry.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A trimmed value, `None` when blank or absent.
fn non_blank(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|value| !value.is_empty())
}

/// Validate the respond-to gate (buzz-provider.md § 5.4) as the harness's parser would.
///
/// # Errors
///
/// [`EnvError::UnknownRespondTo`], [`EnvError::EmptyAllowlist`],
/// [`EnvError::InvalidAllowlistEntry`].
pub fn validate_respond_to(
    respond_to: Option<&str>,
    allowlist: Option<&[String]>,
) -> Result<(), EnvError> {
    let Some(mode) = respond_to.filter(|mode| !mode.is_empty()) else {
        return Ok(());
    };
    // Exact: untrimmed and case-sensitive, as `clap` compares.
    if !RESPOND_TO_MODES.contains(&mode) {
        return Err(EnvError::UnknownRespondTo(mode.to_owned()));
    }
    if mode == "allowlist" {
        let entries = allowlist.unwrap_or_default();
        if entries.is_empty() {
            return Err(EnvError::EmptyAllowlist);
        }
        if let Some(bad) = entries.iter().find(|entry| !is_hex64(entry.trim())) {
            return Err(EnvError::InvalidAllowlistEntry(bad.trim().to_owned()));
        }
    }
    // In the other modes a junk list is tolerated (the harness only warns) and still written.
    Ok(())
}

/// Build the environment: tier 1 (`launch.policy_env`), tier 2 (`launch.env`, or the legacy
/// `env_vars` only when `launch` is absent), validation of what they contributed, then tier 3
/// (the authoritative keys, cleared first), the owner rule and the size cap.
///
/// # Errors
///
/// [`EnvError`]: the first rule broken.
pub fn build_env(agent: &AgentPayload, inputs: &EnvInputs<'_>) -> Result<EnvMap, EnvError> {
    let launch = agent.launch.clone().unwrap_or_default();
    let mut env = EnvMap::new();
    env.extend(launch.policy_env.clone());
    // Never re-merged: with a launch contract, `env_vars` is ignored altogether.
    let tier2 = if agent.launch.is_some() {
        &launch.env
    } else {
        &agent.env_vars
    };
    // Tier 2 wins over tier 1 for every non-reserved key (the documented hazard of buzz-provider.md § 5.3).
    env.extend(tier2.clone());
    for key in env.keys() {
        if !is_posix_name(key) {
            return Err(EnvError::NotPosix(key.clone()));
        }
        if key.eq_ignore_ascii_case("BUZZ_ACP_NO_PRESENCE") {
            return Err(EnvError::NoPresence);
        }
    }
    // A collision with a reserved key is not an error: tier 3 overwrites (or removes) it.
    for key in AUTHORITATIVE_KEYS {
        env.remove(key);
    }
    let relay = non_blank(Some(&agent.relay_url)).ok_or(EnvError::EmptyRelay)?;
    let auth_tag = non_blank(agent.auth_tag.as_deref());
    let owner = non_blank(launch.owner_pubkey.as_deref());
    if auth_tag.is_none() && owner.is_none() {
        return Err(EnvError::NoOwner);
    }
    validate_respond_to(
        agent.respond_to.as_deref(),
        agent.respond_to_allowlist.as_deref(),
    )?;
    let mut put = |key: &str, value: String| {
        env.insert(key.to_owned(), value);
    };
    put("BUZZ_RELAY_URL", relay.to_owned());
    // As given, not trimmed: the harness and the git helpers read exactly what the desktop holds.
    put("BUZZ_PRIVATE_KEY", agent.private_key_nsec.clone());
    put("NOSTR_PRIVATE_KEY", agent.private_key_nsec.clone());
    if let Some(tag) = auth_tag {
        put("BUZZ_AUTH_TAG", tag.to_owned());
    }
    if let Some(owner) = owner {
        put("BUZZ_ACP_AGENT_OWNER", owner.to_owned());
    }
    if let Some(command) = launch.command.as_deref().filter(|c| !c.is_empty()) {
        put("BUZZ_ACP_AGENT_COMMAND", command.to_owned());
    }
    if !launch.args.is_empty() {
        if launch.args.iter().any(|arg| arg.contains(',')) {
            // A comma cannot survive the comma-joined transport: the JSON key carries the list
            // and the plain key the harness's fixed placeholder (buzz-provider.md § 16.1).
            let json = serde_json::to_string(&launch.args).unwrap_or_default();
            put("BUZZ_ACP_AGENT_ARGS_JSON", json);
            put("BUZZ_ACP_AGENT_ARGS", "acp".to_owned());
        } else {
            put("BUZZ_ACP_AGENT_ARGS", launch.args.join(","));
        }
    }
    put("BUZZ_ACP_MCP_COMMAND", "buzz-dev-mcp".to_owned());
    if let Some(mode) = agent.respond_to.as_deref().filter(|m| !m.is_empty()) {
        put("BUZZ_ACP_RESPOND_TO", mode.to_owned());
    }
    if let Some(list) = agent
        .respond_to_allowlist
        .as_deref()
        .filter(|l| !l.is_empty())
    {
        // Untrimmed, in any mode: the harness parses (and warns about) the list itself.
        put("BUZZ_ACP_RESPOND_TO_ALLOWLIST", list.join(","));
    }
    put(
        "BUZZ_ACP_EXIT_AFTER_INACTIVITY",
        inputs.inactivity_seconds.to_string(),
    );
    put(START_NONCE_KEY, inputs.generation.to_owned());
    let size: usize = env.values().map(String::len).sum();
    if size > MAX_SECRET_BYTES {
        return Err(EnvError::TooLarge(size));
    }
    Ok(env)
}

#[cfg(test)]
mod tests;
