//! The buzz provider's pod request (buzz-provider.md § 6, § 16.3): [`BuzzPod`], what
//! `apiary-buzz` resolved for one agent, and its [`PodOptions`]. Reached through `config`,
//! which re-exports every item; `ValidConfig::buzz` (in `buzz_config`) validates them.
//!
//! Pure data and two checks: no I/O. The environment holds secret values, so `Debug` of a
//! [`BuzzPod`] shows its keys only.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::Toleration;
use serde::{Deserialize, Serialize};

use crate::env::Env;

/// Why a buzz pod option was refused (buzz-provider.md § 16.3: the provider's exact messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PodOptionsError {
    /// `active_deadline_seconds` is zero or negative.
    #[error("provider_config.pod_options.active_deadline_seconds must be positive")]
    NonPositiveDeadline,
    /// A storage quantity is empty or whitespace only.
    #[error("provider_config.pod_options storage quantities must not be empty")]
    BlankStorageQuantity,
}

/// The optional placement, storage and lifetime controls of a buzz pod (buzz-provider.md
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

    /// Checks the values buzz-provider.md § 16.3 constrains: a positive deadline, non-blank
    /// storage quantities.
    ///
    /// # Errors
    ///
    /// [`PodOptionsError::NonPositiveDeadline`] or [`PodOptionsError::BlankStorageQuantity`].
    pub fn validate(&self) -> Result<(), PodOptionsError> {
        if self.active_deadline_seconds.is_some_and(|d| d <= 0) {
            return Err(PodOptionsError::NonPositiveDeadline);
        }
        let blank = [
            &self.workspace_size_limit,
            &self.ephemeral_storage_request,
            &self.ephemeral_storage_limit,
        ]
        .into_iter()
        .flatten()
        .any(|q| q.trim().is_empty());
        if blank {
            return Err(PodOptionsError::BlankStorageQuantity);
        }
        Ok(())
    }
}

/// What the buzz provider asks of one agent's pod (buzz-provider.md § 6), already parsed and
/// resolved by `apiary-buzz`: the environment is final (the substrate only restamps the start
/// nonce per attempt). `Debug` redacts the environment's values.
#[derive(Clone, PartialEq, Eq)]
pub struct BuzzPod {
    /// The namespace (an RFC 1123 label).
    pub namespace: String,
    /// The normalized, digest-pinned image reference (`name@sha256:<64 hex>`).
    pub image: String,
    /// CPU request, a Kubernetes quantity sent verbatim.
    pub cpu_request: String,
    /// Memory request, a Kubernetes quantity sent verbatim.
    pub memory_request: String,
    /// CPU limit, a Kubernetes quantity sent verbatim.
    pub cpu_limit: String,
    /// Memory limit, a Kubernetes quantity sent verbatim.
    pub memory_limit: String,
    /// The pod's service account; its token is never mounted.
    pub service_account: Option<String>,
    /// The placement, storage and lifetime options (buzz-provider.md § 16.3).
    pub pod_options: PodOptions,
    /// The final environment (secret values).
    pub env: BTreeMap<String, String>,
}

impl fmt::Debug for BuzzPod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Env = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        f.debug_struct("BuzzPod")
            .field("namespace", &self.namespace)
            .field("image", &self.image)
            .field("cpu_request", &self.cpu_request)
            .field("memory_request", &self.memory_request)
            .field("cpu_limit", &self.cpu_limit)
            .field("memory_limit", &self.memory_limit)
            .field("service_account", &self.service_account)
            .field("pod_options", &self.pod_options)
            .field("env", &env)
            .finish()
    }
}
