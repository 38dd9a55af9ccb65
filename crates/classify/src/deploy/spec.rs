//! What one deploy works towards ([`DeploySpec`]) and the defaults it starts from (deploy.md §
//! Timeout, § Namespace ensure).
//!
//! Pure data. Configuration validates the values before a spec is built; nothing here checks them.

use crate::binding::Owner;
use crate::grace::GracePeriod;
use std::time::Duration;

/// The default operation deadline (deploy.md § Timeout).
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);
/// The default poll interval.
pub const DEFAULT_POLL: Duration = Duration::from_secs(2);

/// What one deploy works towards: identity, desired intent and timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeploySpec {
    /// The namespace (for messages).
    pub namespace: String,
    /// The deterministic pod name.
    pub pod_name: String,
    /// The binding and full agent id verification compares against.
    pub owner: Owner,
    /// The normalized image (for pull-failure reports).
    pub image: String,
    /// The desired create-intent fingerprint.
    pub desired_intent: String,
    /// The operation deadline (at most 600 s; validated by configuration).
    pub deadline: Duration,
    /// The poll interval.
    pub poll: Duration,
    /// The service account the pod names (`--service-account`); `None` runs it as `default`.
    pub service_account: Option<String>,
    /// Whether to run preflight GC (deploy.md § Sequence, step 4). Always on for a deploy; a
    /// test switches it off to reach classification row 4 directly.
    pub preflight_gc: bool,
    /// `--replace` (deploy.md § Replacing a live agent): delete the started pod this call first
    /// observes when its intent differs, await its disappearance, then create as usual.
    pub replace: bool,
    /// `--min-running` (deploy.md § Staying up): how long the container `agent` must have been
    /// running continuously before the deploy succeeds; zero succeeds at the first started read.
    pub min_running: Duration,
    /// The Secrets the pod references besides its own (`--env-from-secret`, `--env-secret`),
    /// each checked to exist before anything is created (deploy.md § Credentials from the
    /// cluster).
    pub referenced_secrets: Vec<String>,
    /// `--isolate` (deploy.md § Egress control): put the agent's NetworkPolicy in place before
    /// the first pod create of this call.
    pub isolate: bool,
    /// `--workspace-size` (deploy.md § Persistent workspace): the name of the agent's workspace
    /// claim, created or found before the first pod create of this call (with the policy, in
    /// the same step); `None` keeps the emptyDir workspace.
    pub workspace_claim: Option<String>,
    /// `--grace-period` (deploy.md § Grace periods): the grace period override of this call's
    /// pod deletes (the replace delete of a started pod among them); `None` keeps each pod's own.
    pub delete_grace: Option<GracePeriod>,
}

/// The account a pod runs as when it names none, and the one the ServiceAccount controller
/// creates in every new namespace.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
