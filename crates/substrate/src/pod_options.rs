//! The one declaration of what an agent's pod may be configured with beyond the baseline shape
//! (deploy.md § Pod options, buzz-provider.md § 16.3): [`PodOptions`]. The native flags, the
//! validation, the pod builder, the create-intent fingerprint and the buzz provider's
//! `pod_options` wire form (its serde form; `apiary-buzz` reads and checks it) all read this one
//! type; a new pod field is added here (plus its builder line and tests). The flag syntax and the
//! native validation live in `pod_options::flags`.
//!
//! Pure data and checks: no I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use serde::{Deserialize, Serialize};

pub mod flags;
pub mod overrides;

/// The optional placement, storage and lifetime controls of an agent's pod (deploy.md § Pod
/// options; the first seven fields are also the buzz provider's `pod_options`, buzz-provider.md
/// § 16.3). `Default` is "no option set": a default value leaves the pod and the fingerprint
/// exactly as the baseline shapes them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PodOptions {
    /// The pod's `nodeSelector`, written only when non-empty.
    pub node_selector: BTreeMap<String, String>,
    /// The pod's `tolerations`, written only when non-empty.
    pub tolerations: Vec<Toleration>,
    /// The workspace emptyDir's `sizeLimit`, a quantity.
    pub workspace_size_limit: Option<String>,
    /// The container's `requests.ephemeral-storage`, a quantity.
    pub ephemeral_storage_request: Option<String>,
    /// The container's `limits.ephemeral-storage`, a quantity.
    pub ephemeral_storage_limit: Option<String>,
    /// The pod's `activeDeadlineSeconds` (positive).
    pub active_deadline_seconds: Option<i64>,
    /// Whether the container gets an explicit `BUZZ_PILOT_POD_UID` from the downward API
    /// `metadata.uid` (explicit `env` beats `envFrom`, so the Secret cannot spoof it).
    pub setup_pending: bool,
    // The fields below are the native binding's (deploy.md § Pod options). They are not part of
    // the buzz provider's `pod_options` wire form (buzz-provider.md § 16.3), so they are never
    // read from it, and serialized only when set: a buzz fingerprint stays byte-identical.
    /// The pod's `runtimeClassName` (`--runtime-class`).
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub runtime_class: Option<String>,
    /// The pod's `priorityClassName` (`--priority-class`).
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub priority_class: Option<String>,
    /// Extended resources (`--resource NAME=QUANTITY`), each set as request and limit.
    #[serde(skip_deserializing, skip_serializing_if = "BTreeMap::is_empty")]
    pub extended_resources: BTreeMap<String, String>,
    /// The pod's `imagePullSecrets` (`--image-pull-secret`), in the order given.
    #[serde(skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<String>,
    /// Extra labels on the pod and its Secret (`--label`); never a key apiary owns.
    #[serde(skip_deserializing, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Extra annotations on the pod (`--annotation`); never a key apiary owns.
    #[serde(skip_deserializing, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Secrets already in the cluster whose every key becomes a variable (`--env-from-secret`),
    /// in the order given: `envFrom` entries before the attempt's own Secret, so apiary's keys
    /// win. apiary never reads their values.
    #[serde(skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub env_from_secrets: Vec<String>,
    /// Variables read from one key of a Secret already in the cluster (`--env-secret
    /// VAR=SECRET/KEY`): `env[].valueFrom.secretKeyRef`. apiary never reads their values.
    #[serde(skip_deserializing, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_secrets: BTreeMap<String, SecretKey>,
    /// `--isolate`: a NetworkPolicy selecting this agent's pods allows no ingress and egress
    /// only to DNS and [`PodOptions::allow_egress`] (deploy.md § Egress control).
    #[serde(skip_deserializing, skip_serializing_if = "std::ops::Not::not")]
    pub isolate: bool,
    /// `--allow-egress CIDR[:PORT]`, in the order given (only with `isolate`).
    #[serde(skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub allow_egress: Vec<EgressRule>,
    /// `--workspace-size` / `--storage-class`: the workspace is the agent's PersistentVolumeClaim
    /// instead of an emptyDir (deploy.md § Persistent workspace). The fingerprint records only
    /// that the pod mounts the claim (`true`): its size and class are the claim's, which a new
    /// pod would not change (deploy.md § Create-intent fingerprint).
    #[serde(
        skip_deserializing,
        skip_serializing_if = "Option::is_none",
        serialize_with = "claim_mounted"
    )]
    pub workspace_claim: Option<WorkspaceClaim>,
    /// `--overrides`: an RFC 7386 merge patch applied to the built pod and re-verified against
    /// apiary's invariants ([`overrides`]); in the fingerprint as its canonical JSON text.
    #[serde(
        skip_deserializing,
        skip_serializing_if = "Option::is_none",
        serialize_with = "canonical_overrides"
    )]
    pub overrides: Option<overrides::Overrides>,
}

/// The fingerprint's form of `--overrides`: the canonical JSON text (keys sorted at every
/// depth), so two spellings of one patch are one intent.
fn canonical_overrides<S: serde::Serializer>(
    overrides: &Option<overrides::Overrides>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match overrides {
        Some(patch) => serializer.serialize_str(&patch.canonical()),
        None => serializer.serialize_none(),
    }
}

/// The fingerprint's form of the workspace claim: that the pod mounts one. The pod names the
/// claim by the agent's identity alone, so its size and class never change the pod.
fn claim_mounted<S: serde::Serializer>(
    claim: &Option<WorkspaceClaim>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_bool(claim.is_some())
}

/// One destination an isolated agent may connect to (`--allow-egress CIDR[:PORT]`): every port
/// of the block, or one TCP port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct EgressRule {
    /// The address block, as given (`10.0.0.0/8`, `2001:db8::/32`).
    pub cidr: String,
    /// The TCP port, when one was given.
    pub port: Option<u16>,
}

/// The agent's workspace claim as asked for (`--workspace-size SIZE [--storage-class NAME]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkspaceClaim {
    /// The requested size, a quantity.
    pub size: String,
    /// The claim's `storageClassName`; `None` leaves the cluster's default class to apply.
    pub storage_class: Option<String>,
}

/// One key of a Secret (`--env-secret VAR=SECRET/KEY`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SecretKey {
    /// The Secret's name.
    pub secret: String,
    /// The key inside it.
    pub key: String,
}

// `Toleration` only derives `PartialEq`, but its fields are strings and an integer, whose
// equality is total; so is this struct's.
impl Eq for PodOptions {}

impl PodOptions {
    /// Whether no option is set (the fingerprint then omits its `pod_options` member).
    #[must_use]
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The Secrets the pod references besides its own (`--env-from-secret`, then the Secrets
    /// of `--env-secret`), each once, in that order: checked to exist before a deploy creates
    /// anything.
    #[must_use]
    pub fn referenced_secrets(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        let all = self
            .env_from_secrets
            .iter()
            .chain(self.env_secrets.values().map(|r| &r.secret));
        for name in all {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }
}
