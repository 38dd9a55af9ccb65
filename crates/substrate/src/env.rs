//! The agent's environment (deploy.md § Environment): POSIX key validation, removal of the three
//! authoritative keys from user input, the values apiary writes for them, and the 1 MiB cap on
//! summed value bytes.
//!
//! Pure: no I/O (reading `--env KEY` from the process environment is the CLI's job). Values are
//! secrets: no `Debug`, `Display` or error in this module ever contains one.

use std::collections::BTreeMap;
use std::fmt;

use apiary_classify::binding::Binding;

use crate::naming::{AgentIdentity, Generation};

/// Authoritative key: AGENT verbatim.
pub const APIARY_AGENT_NAME: &str = "APIARY_AGENT_NAME";
/// Authoritative key: the 64-hex agent_id.
pub const APIARY_AGENT_ID: &str = "APIARY_AGENT_ID";
/// Authoritative key: the generation of this attempt (the Secret-name suffix); apiary's
/// binding's start-nonce key.
pub const APIARY_START_NONCE: &str = apiary_classify::binding::APIARY.start_nonce_key;
/// The keys apiary owns; user input setting them is removed with a warning.
pub const AUTHORITATIVE_KEYS: [&str; 3] = [APIARY_AGENT_NAME, APIARY_AGENT_ID, APIARY_START_NONCE];
/// The explicit container variable a pod with `setup_pending` gets (the buzz provider's name,
/// buzz-provider.md § 16.3); set by apiary, so never by `--env-secret`.
pub const PILOT_POD_UID_ENV: &str = "BUZZ_PILOT_POD_UID";
/// The cap on the summed UTF-8 bytes of all values (the Kubernetes Secret data limit).
pub const MAX_ENV_VALUE_BYTES: usize = 1_048_576;

/// Length of every generation value.
const GENERATION_BYTES: usize = 8;

/// What is wrong with an environment key. Keys are not secret; values never appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyProblem {
    /// The key is the empty string.
    Empty,
    /// The key starts with a digit.
    LeadingDigit,
    /// The key contains a character outside `[A-Za-z0-9_]`.
    InvalidCharacter,
}

impl fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "it is empty",
            Self::LeadingDigit => "it starts with a digit",
            Self::InvalidCharacter => "it contains a character outside [A-Za-z0-9_]",
        })
    }
}

/// Why an environment was refused. No variant holds or prints a value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A key is not a POSIX name `[A-Za-z_][A-Za-z0-9_]*`.
    #[error(
        "environment key {key:?} (--env/--env-file) is not a POSIX name [A-Za-z_][A-Za-z0-9_]*: \
         {problem}; rename it, because kubelets differ on other keys (older ones silently drop \
         them, newer ones inject them)"
    )]
    InvalidKey {
        /// The refused key.
        key: String,
        /// Which part of the rule it breaks.
        problem: KeyProblem,
    },
    /// `--env KEY` names a variable that is unset (or not valid UTF-8) in apiary's environment.
    #[error(
        "environment variable {key:?} (--env {key}) is not set in apiary's own environment, or \
         is not valid UTF-8: set it, or pass --env {key}=VALUE"
    )]
    InheritedUnset {
        /// The key that could not be read.
        key: String,
    },
    /// The summed value bytes exceed [`MAX_ENV_VALUE_BYTES`].
    #[error(
        "the environment values (--env/--env-file) total {total} bytes including apiary's own \
         keys, over the Kubernetes Secret limit of {limit} bytes: remove or shorten values"
    )]
    TooLarge {
        /// The summed UTF-8 bytes of all values, authoritative ones included.
        total: usize,
        /// The limit, [`MAX_ENV_VALUE_BYTES`].
        limit: usize,
    },
}

/// Checks that `key` is a POSIX name `[A-Za-z_][A-Za-z0-9_]*`.
///
/// # Errors
///
/// Returns [`EnvError::InvalidKey`] naming the key and the rule broken.
pub fn validate_key(key: &str) -> Result<(), EnvError> {
    let problem = match key.bytes().next() {
        None => Some(KeyProblem::Empty),
        Some(first) if first.is_ascii_digit() => Some(KeyProblem::LeadingDigit),
        Some(_) => key
            .bytes()
            .any(|b| !(b.is_ascii_alphanumeric() || b == b'_'))
            .then_some(KeyProblem::InvalidCharacter),
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(EnvError::InvalidKey {
            key: key.to_owned(),
            problem,
        }),
    }
}

/// Prints `<redacted>` in place of a value.
struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A map of environment keys to secret values. Setting a key again replaces it (later wins).
/// `Debug` shows the keys with `<redacted>` values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// An empty environment.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`, replacing an earlier value.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(key.into(), value.into());
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.vars.remove(key)
    }

    /// The value of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str)
    }

    /// Whether `key` is set.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        self.vars.contains_key(key)
    }

    /// The keys, sorted bytewise.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(String::as_str)
    }

    /// The entries, sorted bytewise by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The number of keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether there are no keys.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The summed UTF-8 byte length of all values (keys excluded).
    #[must_use]
    pub fn value_bytes(&self) -> usize {
        self.vars.values().map(String::len).sum()
    }

    /// The plain map, for the Secret's `stringData`.
    #[must_use]
    pub fn into_map(self) -> BTreeMap<String, String> {
        self.vars
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.vars.keys().map(|k| (k, Redacted)))
            .finish()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Env {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut env = Self::new();
        env.extend(iter);
        env
    }
}

impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for Env {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.set(k, v);
        }
    }
}

/// One `--env` argument: `KEY=VALUE` (split at the first `=`) or `KEY` (value to be taken from
/// apiary's own environment by the caller). `Debug` redacts the value.
#[derive(Clone, PartialEq, Eq)]
pub enum EnvArg {
    /// `KEY=VALUE`; the value may be empty and may contain `=`.
    Assign {
        /// The key.
        key: String,
        /// The secret value.
        value: String,
    },
    /// `KEY` alone: the caller reads KEY from its own environment and refuses when unset.
    Inherit {
        /// The key.
        key: String,
    },
}

impl EnvArg {
    /// Splits one `--env` argument at its first `=`.
    #[must_use]
    pub fn parse(arg: &str) -> Self {
        match arg.split_once('=') {
            Some((key, value)) => Self::Assign {
                key: key.to_owned(),
                value: value.to_owned(),
            },
            None => Self::Inherit {
                key: arg.to_owned(),
            },
        }
    }

    /// The key and value of this argument; for `KEY` alone the value comes from `lookup`
    /// (the caller's read of its own environment, `None` when unset or not valid UTF-8).
    ///
    /// # Errors
    ///
    /// [`EnvError::InheritedUnset`] naming the key when `lookup` finds nothing.
    pub fn resolve(
        self,
        lookup: impl FnOnce(&str) -> Option<String>,
    ) -> Result<(String, String), EnvError> {
        match self {
            Self::Assign { key, value } => Ok((key, value)),
            Self::Inherit { key } => match lookup(&key) {
                Some(value) => Ok((key, value)),
                None => Err(EnvError::InheritedUnset { key }),
            },
        }
    }

    /// The key of either form.
    #[must_use]
    pub fn key(&self) -> &str {
        match self {
            Self::Assign { key, .. } | Self::Inherit { key } => key,
        }
    }
}

impl fmt::Debug for EnvArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Assign { key, .. } => f
                .debug_struct("Assign")
                .field("key", key)
                .field("value", &Redacted)
                .finish(),
            Self::Inherit { key } => f.debug_struct("Inherit").field("key", key).finish(),
        }
    }
}

/// The validated environment of one agent: the entries it was given (authoritative keys
/// removed) plus the values the binding stamps. Under apiary's binding those are
/// `APIARY_AGENT_NAME` and `APIARY_AGENT_ID` (deploy.md § Environment); a front end that resolves
/// the environment itself gives it final ([`AgentEnv::given`]; `apiary-buzz`, buzz-provider.md
/// § 5.1). Either way the binding's
/// start-nonce key is stamped per attempt by [`AgentEnv::for_attempt`], so it always equals the
/// Secret-name suffix. `Debug` shows keys, never a given value.
#[derive(Clone, PartialEq, Eq)]
pub struct AgentEnv {
    user: Env,
    stamped: Vec<(&'static str, String)>,
    nonce_key: &'static str,
    /// Whether the nonce key counts among [`AgentEnv::keys`]: always under apiary's binding;
    /// for an environment given final, exactly when the given map held it (the buzz provider
    /// fingerprints the key set of the map it was handed, and its tier 3 always writes the key).
    nonce_keyed: bool,
    removed: Vec<&'static str>,
}

impl AgentEnv {
    /// Validates `user` for `agent`: every key must be POSIX; authoritative keys are removed
    /// (see [`AgentEnv::removed_keys`]); the summed values, apiary's included, must fit 1 MiB.
    ///
    /// # Errors
    ///
    /// [`EnvError::InvalidKey`] for the first non-POSIX key (bytewise order);
    /// [`EnvError::TooLarge`] when the total exceeds [`MAX_ENV_VALUE_BYTES`].
    pub fn build(user: &Env, agent: &AgentIdentity) -> Result<Self, EnvError> {
        for key in user.keys() {
            validate_key(key)?;
        }
        let mut kept = user.clone();
        let removed: Vec<&'static str> = AUTHORITATIVE_KEYS
            .into_iter()
            .filter(|key| kept.remove(key).is_some())
            .collect();
        Self {
            user: kept,
            stamped: vec![
                (APIARY_AGENT_NAME, agent.name().to_owned()),
                (APIARY_AGENT_ID, agent.id().to_owned()),
            ],
            nonce_key: APIARY_START_NONCE,
            nonce_keyed: true,
            removed,
        }
        .within_cap()
    }

    /// An environment given final (its front end resolved it; the buzz provider's tiers): only the
    /// binding's start-nonce key is replaced, per attempt. Keys must still be POSIX and the
    /// values, the nonce included, must fit 1 MiB.
    ///
    /// # Errors
    ///
    /// [`EnvError::InvalidKey`] for the first non-POSIX key (bytewise order);
    /// [`EnvError::TooLarge`] when the total exceeds [`MAX_ENV_VALUE_BYTES`].
    pub fn given(env: Env, binding: Binding) -> Result<Self, EnvError> {
        for key in env.keys() {
            validate_key(key)?;
        }
        let mut kept = env;
        // Its value is restamped per attempt; a given one never survives.
        let nonce_keyed = kept.remove(binding.start_nonce_key).is_some();
        Self {
            user: kept,
            stamped: Vec::new(),
            nonce_key: binding.start_nonce_key,
            nonce_keyed,
            removed: Vec::new(),
        }
        .within_cap()
    }

    fn within_cap(self) -> Result<Self, EnvError> {
        let total = self.value_bytes();
        if total > MAX_ENV_VALUE_BYTES {
            return Err(EnvError::TooLarge {
                total,
                limit: MAX_ENV_VALUE_BYTES,
            });
        }
        Ok(self)
    }

    /// The authoritative keys that user input set and that were removed, for a warning that
    /// names the key (never the value).
    #[must_use]
    pub fn removed_keys(&self) -> &[&'static str] {
        &self.removed
    }

    /// The key the per-attempt start nonce is stamped under.
    #[must_use]
    pub fn nonce_key(&self) -> &'static str {
        self.nonce_key
    }

    /// Every key of the environment the fingerprint sees, stamped ones included, sorted
    /// bytewise: the final environment's keys, except that an environment given final without its
    /// nonce key is fingerprinted without it (the Secret still gets it).
    #[must_use]
    pub fn keys(&self) -> Vec<String> {
        let nonce = self.nonce_keyed.then_some(self.nonce_key);
        let mut keys: Vec<String> = self
            .user
            .keys()
            .chain(self.stamped.iter().map(|(k, _)| *k))
            .chain(nonce)
            .map(str::to_owned)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The summed value bytes of the final environment (the nonce is always 8 bytes).
    #[must_use]
    pub fn value_bytes(&self) -> usize {
        self.user.value_bytes()
            + self.stamped.iter().map(|(_, v)| v.len()).sum::<usize>()
            + GENERATION_BYTES
    }

    /// The final environment of the attempt with `generation`: the given entries plus the
    /// stamped ones (`APIARY_AGENT_NAME`, `APIARY_AGENT_ID` under apiary's binding) and the
    /// start-nonce key = `generation`.
    #[must_use]
    pub fn for_attempt(&self, generation: Generation) -> Env {
        let mut env = self.user.clone();
        for (key, value) in &self.stamped {
            env.set(*key, value.clone());
        }
        env.set(self.nonce_key, generation.to_string());
        env
    }
}

/// A Secret's values as read back (`deploy --replace` compares them with the desired
/// environment, deploy.md § Replacing a live agent). `Debug` shows the keys, never a value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretValues(BTreeMap<String, Vec<u8>>);

impl SecretValues {
    /// The values of a Secret's `data`, decoded.
    #[must_use]
    pub fn new(values: BTreeMap<String, Vec<u8>>) -> Self {
        Self(values)
    }
}

impl fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretValues")
            .field("keys", &self.0.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl AgentEnv {
    /// The keys whose values differ between this environment and `live`, a pod's own Secret:
    /// set on one side only, or set to other bytes; the per-attempt start nonce is never
    /// compared. Sorted; keys only, so the answer can be shown.
    #[must_use]
    pub fn differing_keys(&self, live: &SecretValues) -> Vec<String> {
        let mut desired: BTreeMap<&str, &[u8]> = self
            .user
            .iter()
            .map(|(key, value)| (key, value.as_bytes()))
            .collect();
        for (key, value) in &self.stamped {
            desired.insert(key, value.as_bytes());
        }
        let live: BTreeMap<&str, &[u8]> = live
            .0
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_slice()))
            .filter(|(key, _)| *key != self.nonce_key)
            .collect();
        let mut keys: Vec<String> = desired
            .keys()
            .chain(live.keys())
            .filter(|key| desired.get(*key) != live.get(*key))
            .map(|key| (*key).to_owned())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

impl fmt::Debug for AgentEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The stamped values are the agent's public name and id; only given values are secret.
        f.debug_struct("AgentEnv")
            .field("user", &self.user)
            .field("stamped", &self.stamped)
            .field("nonce_key", &self.nonce_key)
            .field("nonce_keyed", &self.nonce_keyed)
            .field("removed", &self.removed)
            .finish()
    }
}

#[cfg(test)]
mod tests;
