//! Startup states and decoding (deploy.md § Startup states, § Decoding a pod, § Pull-failure
//! classifier and Secret settling): what the container named `agent` says about whether the agent
//! started.
//!
//! Pure: reads only [`PodFacts`]. Pod age, `lastState`, `restartCount`, readiness and pod
//! conditions play no part. The one fact decoding cannot settle alone — whether the Secret a
//! `CreateContainerConfigError` pod references exists — is returned as a pending check for the
//! shell to answer with a quorum GET.

use crate::facts::{ContainerState, PodFacts};
use crate::pull::{PullFailure, classify_pull_message};

/// The settled startup state of a pod (deploy.md § Startup states).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StartupState {
    /// The container `agent` has `state.running`.
    Started,
    /// It ran and reached a terminal state.
    Terminated,
    /// Never started, and self-healing is plausible.
    NeverStartedRecoverable,
    /// Never started, with a verified cause: confirmed Secret absence or an invalid image.
    NeverStartedProvablyBroken,
    /// Never started; a pull failure that will not heal. Reporting only.
    NeverStartedPullFailing(PullFailure),
    /// Never started because something the pod references besides its own Secret is missing: a
    /// Secret (`--env-from-secret`, `--env-secret`) confirmed absent by a quorum read, a key of
    /// such a Secret, or a ConfigMap or its key (through `--overrides`), as the kubelet reports.
    /// Reporting only: the pod is not apiary's to break further, and the kubelet starts it once
    /// the reference resolves.
    NeverStartedMissingSecret,
}

impl StartupState {
    /// Every state, for loops over "each startup state".
    pub const ALL: [StartupState; 8] = [
        StartupState::Started,
        StartupState::Terminated,
        StartupState::NeverStartedRecoverable,
        StartupState::NeverStartedProvablyBroken,
        StartupState::NeverStartedPullFailing(PullFailure::Unauthorized),
        StartupState::NeverStartedPullFailing(PullFailure::ManifestUnknown),
        StartupState::NeverStartedPullFailing(PullFailure::ArchMismatch),
        StartupState::NeverStartedMissingSecret,
    ];
}

/// The result of decoding a pod's facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// Decoding alone settled the state.
    Settled(StartupState),
    /// `CreateContainerConfigError` with an `envFrom` Secret: settle by a quorum GET of `secret`
    /// ([`settle_secret_check`]). The kubelet's reason is a hint, never proof.
    PendingSecretCheck {
        /// The pod's own Secret, or the referenced one the kubelet's message names.
        secret: String,
        /// Whether `secret` is a Secret the pod references besides its own (its absence is then
        /// [`StartupState::NeverStartedMissingSecret`], not a broken pod).
        referenced: bool,
    },
}

/// Waiting reasons with a meaning of their own (every other reason is recoverable).
const INVALID_IMAGE_NAME: &str = "InvalidImageName";
const ERR_IMAGE_PULL: &str = "ErrImagePull";
const IMAGE_PULL_BACK_OFF: &str = "ImagePullBackOff";
const CREATE_CONTAINER_CONFIG_ERROR: &str = "CreateContainerConfigError";

/// Decode the startup state of a pod from its facts (deploy.md § Decoding a pod).
pub fn decode(facts: &PodFacts) -> Decoded {
    let settled = match &facts.agent {
        Some(ContainerState::Running) => StartupState::Started,
        Some(ContainerState::Terminated { .. }) => StartupState::Terminated,
        Some(ContainerState::Waiting { reason, message }) => {
            return decode_waiting(reason.as_deref(), message.as_deref(), facts);
        }
        Some(ContainerState::Empty) | None => decode_phase(facts.phase.as_deref()),
    };
    Decoded::Settled(settled)
}

fn decode_waiting(reason: Option<&str>, message: Option<&str>, facts: &PodFacts) -> Decoded {
    let settled = match reason {
        Some(INVALID_IMAGE_NAME) => StartupState::NeverStartedProvablyBroken,
        Some(ERR_IMAGE_PULL | IMAGE_PULL_BACK_OFF) => {
            let image = facts.image.as_deref().unwrap_or_default();
            match message.and_then(|m| classify_pull_message(m, image)) {
                Some(kind) => StartupState::NeverStartedPullFailing(kind),
                None => StartupState::NeverStartedRecoverable,
            }
        }
        Some(CREATE_CONTAINER_CONFIG_ERROR) => {
            // A missing key, or a ConfigMap, is the kubelet's own reading of an object the pod
            // references besides its own Secret: reported at once, never a reason to delete
            // (deploy.md § Pull-failure classifier and Secret settling).
            let missing = message.and_then(parse_missing);
            let own = facts.env_from_secret.as_deref();
            if let Some(missing) = &missing
                && (missing.kind == RefKind::ConfigMap
                    || (missing.key.is_some() && own.is_some_and(|own| own != missing.name)))
            {
                return Decoded::Settled(StartupState::NeverStartedMissingSecret);
            }
            // The kubelet names the first Secret it could not find; one that is not the pod's own
            // is a reference (`--env-from-secret`, `--env-secret`).
            let named = message.and_then(missing_secret_named);
            match (&facts.env_from_secret, named) {
                (Some(own), Some(named)) if named != own => {
                    return Decoded::PendingSecretCheck {
                        secret: named.to_owned(),
                        referenced: true,
                    };
                }
                (Some(own), _) => {
                    return Decoded::PendingSecretCheck {
                        secret: own.clone(),
                        referenced: false,
                    };
                }
                (None, _) => StartupState::NeverStartedRecoverable,
            }
        }
        _ => StartupState::NeverStartedRecoverable,
    };
    Decoded::Settled(settled)
}

/// The Secret a kubelet's `CreateContainerConfigError` message says it could not find: the
/// message is `secret "<name>" not found` for a missing `envFrom` or `secretKeyRef` Secret.
pub fn missing_secret_named(message: &str) -> Option<&str> {
    let name = message
        .trim()
        .strip_prefix("secret \"")?
        .strip_suffix("\" not found")?;
    (!name.is_empty() && !name.contains('"')).then_some(name)
}

/// The kind of object a `CreateContainerConfigError` says is missing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RefKind {
    /// A Secret.
    #[default]
    Secret,
    /// A ConfigMap.
    ConfigMap,
}

/// What a kubelet's `CreateContainerConfigError` message says is missing: an object, or a key of
/// one. Read from the message's four upstream forms only, so its text is re-rendered from names
/// and keys the parser checked, never copied (deploy.md § Redacted condition text).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Missing {
    /// A Secret or a ConfigMap.
    pub kind: RefKind,
    /// Its name.
    pub name: String,
    /// The key it lacks; `None` when the object itself is missing.
    pub key: Option<String>,
    /// The namespace the kubelet named (only in the missing-key form).
    pub namespace: Option<String>,
}

impl Missing {
    /// The object as a person names it: `secret creds`, `configmap settings`.
    pub fn object(&self) -> String {
        match self.kind {
            RefKind::Secret => format!("secret {}", self.name),
            RefKind::ConfigMap => format!("configmap {}", self.name),
        }
    }

    /// The kubelet's words, re-rendered from the parsed parts.
    pub fn kubelet_words(&self) -> String {
        let (lower, upper) = match self.kind {
            RefKind::Secret => ("secret", "Secret"),
            RefKind::ConfigMap => ("configmap", "ConfigMap"),
        };
        match (&self.key, &self.namespace) {
            (Some(key), Some(ns)) => {
                format!("couldn't find key {key} in {upper} {ns}/{}", self.name)
            }
            (Some(key), None) => format!("couldn't find key {key} in {upper} {}", self.name),
            (None, _) => format!("{lower} \"{}\" not found", self.name),
        }
    }
}

/// Read a kubelet `CreateContainerConfigError` message in one of its upstream forms: `secret
/// "<name>" not found`, `configmap "<name>" not found`, `couldn't find key <key> in Secret
/// <ns>/<name>` and the same `in ConfigMap`. Names and keys must be single tokens without
/// quotes; anything else is `None`.
pub fn parse_missing(message: &str) -> Option<Missing> {
    let message = message.trim();
    let token = |t: &str| {
        (!t.is_empty() && !t.contains(|c: char| c.is_whitespace() || c == '"' || c.is_control()))
            .then(|| t.to_owned())
    };
    if let Some(rest) = message.strip_prefix("couldn't find key ") {
        let (key, rest) = rest.split_once(" in ")?;
        let (kind, object) = if let Some(o) = rest.strip_prefix("Secret ") {
            (RefKind::Secret, o)
        } else {
            (RefKind::ConfigMap, rest.strip_prefix("ConfigMap ")?)
        };
        let (namespace, name) = object.split_once('/')?;
        return Some(Missing {
            kind,
            name: token(name)?,
            key: Some(token(key)?),
            namespace: Some(token(namespace)?),
        });
    }
    let (kind, rest) = if let Some(rest) = message.strip_prefix("secret \"") {
        (RefKind::Secret, rest)
    } else {
        (RefKind::ConfigMap, message.strip_prefix("configmap \"")?)
    };
    let name = rest.strip_suffix("\" not found")?;
    Some(Missing {
        kind,
        name: token(name)?,
        key: None,
        namespace: None,
    })
}

/// No status or no state for `agent`: a terminal phase means the pod ended before the kubelet
/// reported (for example an eviction); anything else is unscheduled, blocked or still pulling.
fn decode_phase(phase: Option<&str>) -> StartupState {
    match phase {
        Some("Succeeded" | "Failed") => StartupState::Terminated,
        _ => StartupState::NeverStartedRecoverable,
    }
}

/// Settle a pending Secret check: the quorum GET found the Secret (the kubelet keeps retrying,
/// so recoverable) or confirmed its absence: the pod's own Secret gone is a provably broken pod,
/// a referenced one gone is [`StartupState::NeverStartedMissingSecret`]. Any other answer is an
/// error the caller reports instead of calling this.
pub fn settle_secret_check(secret_exists: bool, referenced: bool) -> StartupState {
    match (secret_exists, referenced) {
        (true, _) => StartupState::NeverStartedRecoverable,
        (false, false) => StartupState::NeverStartedProvablyBroken,
        (false, true) => StartupState::NeverStartedMissingSecret,
    }
}

#[cfg(test)]
mod tests;
