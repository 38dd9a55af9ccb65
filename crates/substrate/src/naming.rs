//! Agent identity and every name derived from it (deploy.md § Identity, names, labels): AGENT
//! validation, the SHA-256 `agent_id`, the slug and pod name, the per-attempt [`Generation`] and
//! Secret name, the marker labels, annotations and the list selector.
//!
//! Pure: no I/O and no clock. The only randomness in the crate is [`Generation::mint`], which
//! reads the OS RNG; everything else takes a generation as input.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

// The marker label and annotation names are defined once, by the bindings of
// `apiary_classify::binding` (verification reads them); names, labels and observation read
// them from the identity's binding.
use apiary_classify::binding::{APIARY, Binding, Owner};

/// The longest AGENT accepted, in UTF-8 bytes.
pub const MAX_AGENT_BYTES: usize = 253;
/// The longest slug, in characters (all ASCII).
pub const MAX_SLUG_CHARS: usize = 30;
/// Hex characters of the agent_id used in the pod name.
const POD_NAME_ID_CHARS: usize = 12;
/// Hex characters of the agent_id used as the agent label value (both bindings).
const LABEL_ID_CHARS: usize = 32;
/// Hex characters of an agent id.
const AGENT_ID_HEX_CHARS: usize = 64;

/// An agent id given by a binding's front end ([`AgentIdentity::bound`]) that is not exactly 64
/// lowercase hex characters. The id is public; the message still names only its length.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the agent id is {length} characters of which some are not lowercase hex: it must be \
     exactly 64 lowercase hex characters"
)]
pub struct AgentIdError {
    /// The length of the refused value, in bytes.
    pub length: usize,
}

/// Why an AGENT was refused (deploy.md § AGENT and agent_id). AGENT is not secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentNameError {
    /// AGENT is the empty string.
    #[error("the agent name is empty: AGENT must be 1 to 253 bytes of UTF-8")]
    Empty,
    /// AGENT is longer than [`MAX_AGENT_BYTES`] bytes.
    #[error("the agent name is {bytes} bytes long: AGENT must be 1 to 253 bytes of UTF-8")]
    TooLong {
        /// The length of the refused name in bytes.
        bytes: usize,
    },
    /// AGENT contains a control character (Unicode category Cc).
    #[error(
        "the agent name contains a control character at byte {position}: AGENT must contain no \
         control characters, because it is written into annotations, logs and the environment"
    )]
    ControlCharacter {
        /// The byte offset of the first control character.
        position: usize,
    },
    /// AGENT begins with whitespace.
    #[error(
        "the agent name begins with whitespace: AGENT must not begin or end with whitespace \
         (it is refused, never trimmed, so two spellings cannot map onto one identity)"
    )]
    LeadingWhitespace,
    /// AGENT ends with whitespace.
    #[error(
        "the agent name ends with whitespace: AGENT must not begin or end with whitespace \
         (it is refused, never trimmed, so two spellings cannot map onto one identity)"
    )]
    TrailingWhitespace,
}

/// Checks AGENT against every rule of deploy.md § AGENT and agent_id, without normalizing it.
///
/// # Errors
///
/// Returns the first rule broken, in the order: empty, too long, control character, leading
/// whitespace, trailing whitespace.
pub fn validate_agent_name(name: &str) -> Result<(), AgentNameError> {
    if name.is_empty() {
        return Err(AgentNameError::Empty);
    }
    if name.len() > MAX_AGENT_BYTES {
        return Err(AgentNameError::TooLong { bytes: name.len() });
    }
    if let Some((position, _)) = name.char_indices().find(|(_, c)| c.is_control()) {
        return Err(AgentNameError::ControlCharacter { position });
    }
    // `char::is_whitespace` is exactly the Unicode White_Space property.
    if name.starts_with(char::is_whitespace) {
        return Err(AgentNameError::LeadingWhitespace);
    }
    if name.ends_with(char::is_whitespace) {
        return Err(AgentNameError::TrailingWhitespace);
    }
    Ok(())
}

/// The lowercase hex SHA-256 of `name`'s UTF-8 bytes (64 characters).
#[must_use]
pub fn agent_id(name: &str) -> String {
    let digest = Sha256::digest(name.as_bytes());
    hex(&digest)
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        // Writing into a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The slug of deploy.md § Names: ASCII-lowercased, runs outside `[a-z0-9]` collapsed to one
/// `-`, trimmed of `-`, cut to 30 characters and trimmed of trailing `-` again. May be empty.
#[must_use]
pub fn slug(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        // Only ASCII letters are lower-cased, so the slug is identical across implementations.
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    let trimmed = out.trim_matches('-');
    // Every character left is ASCII, so a byte cut is a character cut.
    let cut = &trimmed[..trimmed.len().min(MAX_SLUG_CHARS)];
    cut.trim_end_matches('-').to_owned()
}

/// The pod name for `name`: `apiary-<slug>-<12 hex>`, or `apiary-<12 hex>` for an empty slug.
#[must_use]
pub fn pod_name(name: &str) -> String {
    let id = agent_id(name);
    pod_name_from(APIARY.pod_name_prefix, &slug(name), &id)
}

/// `<prefix>-[<slug>-]<12 hex of id>` (the binding's data decides prefix and slug).
fn pod_name_from(prefix: &str, slug: &str, id: &str) -> String {
    let short = &id[..POD_NAME_ID_CHARS];
    if slug.is_empty() {
        format!("{prefix}-{short}")
    } else {
        format!("{prefix}-{slug}-{short}")
    }
}

/// The Secret name of one attempt: `<pod name>-<generation>`.
#[must_use]
pub fn secret_name(pod_name: &str, generation: Generation) -> String {
    format!("{pod_name}-{generation}")
}

/// A validated agent together with its agent_id and the binding it is deployed under: the only
/// way to obtain names and labels. Under apiary's binding the id is the SHA-256 of AGENT; under
/// another it is the id its front end derived ([`AgentIdentity::bound`]; the buzz provider's is
/// the x-only pubkey, buzz-provider.md § 4.1).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AgentIdentity {
    binding: Binding,
    name: String,
    id: String,
}

impl AgentIdentity {
    /// Validates `name` (deploy.md § AGENT and agent_id) and computes its agent_id.
    ///
    /// # Errors
    ///
    /// Returns the rule `name` breaks; it is refused, never trimmed or normalized.
    pub fn new(name: &str) -> Result<Self, AgentNameError> {
        validate_agent_name(name)?;
        Ok(Self {
            binding: APIARY,
            name: name.to_owned(),
            id: agent_id(name),
        })
    }

    /// The identity of the agent `id` under `binding`, for a binding whose front end derives the
    /// id itself and whose agents have no name besides it (the buzz provider's, in
    /// `apiary-buzz`): the name is the id.
    ///
    /// # Errors
    ///
    /// [`AgentIdError`] unless `id` is exactly 64 lowercase hex characters.
    pub fn bound(binding: Binding, id: &str) -> Result<Self, AgentIdError> {
        let well_formed = id.len() == AGENT_ID_HEX_CHARS
            && id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !well_formed {
            return Err(AgentIdError { length: id.len() });
        }
        Ok(Self {
            binding,
            name: id.to_owned(),
            id: id.to_owned(),
        })
    }

    /// The binding this agent is deployed under.
    #[must_use]
    pub fn binding(&self) -> Binding {
        self.binding
    }

    /// Whom this agent's objects must verify as: its binding and full id.
    #[must_use]
    pub fn owner(&self) -> Owner {
        Owner::new(self.binding, self.id.clone())
    }

    /// AGENT, verbatim (under a binding without agent names, the id).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The full 64-hex agent_id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The agent label value (under the binding's agent label key, `apiary.dev/agent` for
    /// apiary's): the first 32 hex of the agent_id.
    #[must_use]
    pub fn label_value(&self) -> &str {
        &self.id[..LABEL_ID_CHARS]
    }

    /// The slug of AGENT (possibly empty).
    #[must_use]
    pub fn slug(&self) -> String {
        slug(&self.name)
    }

    /// The deterministic pod name of this agent (at most 50 characters): `apiary-<slug>-<12 hex>`,
    /// or `<prefix>-<12 hex>` under a binding without slugs (`buzz-agent-<12 hex>`).
    #[must_use]
    pub fn pod_name(&self) -> String {
        let slug = if self.binding.pod_name_slug {
            self.slug()
        } else {
            String::new()
        };
        pod_name_from(self.binding.pod_name_prefix, &slug, &self.id)
    }

    /// The Secret name of the attempt with `generation` (at most 59 characters).
    #[must_use]
    pub fn secret_name(&self, generation: Generation) -> String {
        secret_name(&self.pod_name(), generation)
    }

    /// The name of this agent's workspace claim (`--workspace-size`; deploy.md § Persistent
    /// workspace): one per agent, the same for every attempt, so a redeploy finds it.
    #[must_use]
    pub fn workspace_claim_name(&self) -> String {
        format!("{}-workspace", self.pod_name())
    }

    /// The three labels every pod and Secret of this agent carries: managed-by, the binding
    /// version and the agent label, under the binding's keys.
    #[must_use]
    pub fn labels(&self) -> BTreeMap<String, String> {
        let b = self.binding;
        BTreeMap::from([
            (b.label_managed_by.to_owned(), b.managed_by.to_owned()),
            (
                b.label_binding_version.to_owned(),
                b.binding_version.to_owned(),
            ),
            (b.label_agent.to_owned(), self.label_value().to_owned()),
        ])
    }

    /// The identity annotations every pod and Secret of this agent carries: the full agent id,
    /// and the agent name when the binding has one (apiary's does).
    #[must_use]
    pub fn annotations(&self) -> BTreeMap<String, String> {
        let mut annotations =
            BTreeMap::from([(self.binding.annotation_agent_id.to_owned(), self.id.clone())]);
        if let Some(key) = self.binding.annotation_agent_name {
            annotations.insert(key.to_owned(), self.name.clone());
        }
        annotations
    }

    /// The label selector of every list: `<agent label>=<32 hex>,app.kubernetes.io/managed-by=<manager>`
    /// (`apiary.dev/agent=…,app.kubernetes.io/managed-by=apiary` under apiary's binding).
    #[must_use]
    pub fn selector(&self) -> String {
        let b = self.binding;
        format!(
            "{}={},{}={}",
            b.label_agent,
            self.label_value(),
            b.label_managed_by,
            b.managed_by
        )
    }
}

impl FromStr for AgentIdentity {
    type Err = AgentNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

/// The per-attempt generation: a random 32-bit value written as 8 lowercase hex characters.
/// It is the Secret-name suffix and the value of `APIARY_START_NONCE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Generation(u32);

/// The OS random number generator could not be read while minting a [`Generation`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("could not read the operating system's random number generator to mint a generation: {0}")]
pub struct MintError(String);

/// A string that is not a generation (exactly 8 lowercase hex characters).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a generation: a generation is exactly 8 lowercase hex characters")]
pub struct GenerationParseError(String);

impl Generation {
    /// Mints a fresh generation from the OS RNG; never reused across attempts.
    ///
    /// # Errors
    ///
    /// Returns [`MintError`] when the OS RNG cannot be read.
    pub fn mint() -> Result<Self, MintError> {
        getrandom::u32()
            .map(Self)
            .map_err(|e| MintError(e.to_string()))
    }

    /// The generation with this exact value (for tests and replays).
    #[must_use]
    pub const fn from_u32(value: u32) -> Self {
        Self(value)
    }

    /// The raw 32-bit value.
    #[must_use]
    pub const fn value(self) -> u32 {
        self.0
    }

    /// Parses 8 lowercase hex characters.
    ///
    /// # Errors
    ///
    /// Returns [`GenerationParseError`] for any other string (wrong length, uppercase, non-hex).
    pub fn parse(text: &str) -> Result<Self, GenerationParseError> {
        let well_formed = text.len() == 8
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !well_formed {
            return Err(GenerationParseError(text.to_owned()));
        }
        u32::from_str_radix(text, 16)
            .map(Self)
            .map_err(|_| GenerationParseError(text.to_owned()))
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", self.0)
    }
}

impl FromStr for Generation {
    type Err = GenerationParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests;
