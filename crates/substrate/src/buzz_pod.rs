//! The buzz provider's pod request (buzz-provider.md § 6, § 16.3): [`BuzzPod`], what
//! `apiary-buzz` resolved for one agent, with its [`PodOptions`] (declared in `pod_options`, the
//! one declaration both bindings share). Reached through `config`,
//! which re-exports every item; `ValidConfig::buzz` (in `buzz_config`) validates them.
//!
//! Pure data and two checks: no I/O. The environment holds secret values, so `Debug` of a
//! [`BuzzPod`] shows its keys only.

use std::collections::BTreeMap;
use std::fmt;

use crate::env::Env;
pub use crate::pod_options::{PodOptions, PodOptionsError};

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
