//! Executes expiry's writes (deploy.md § Expiry): reading the apiserver's clock for `deploy
//! --ttl`, and `renew` — the drive of `apiary-classify`'s `RenewMachine`, whose write is
//! guarded by the `resourceVersion` of the observation that authorised it.
//!
//! Imperative shell: it lists, writes and maps answers; every decision (which pod, which
//! version, which instant, when to retry, when to give up) is the machine's. The instant always
//! comes from a response's `Date` header, never from this machine's clock. The annotation write
//! is the one update apiary performs ([`Substrate::write_pod_expiry`]).

use std::time::Duration;

use apiary_classify::expiry::{ANNOTATION_EXPIRES_AT, expires_at};
use apiary_classify::failure::RequestFailure;
use apiary_classify::renew::{RenewError, RenewMachine, RenewSpec, Renewed};
use apiary_classify::request::ExpiryWrite;

use super::perform::{Performer, drive};
use super::shared::{Operation, ignore, in_span};
use crate::config::ValidConfig;
use crate::naming::AgentIdentity;
use crate::substrate::Substrate;

/// The pause between conflict retries after the second conflict in a row.
pub const RENEW_BACKOFF: Duration = Duration::from_millis(250);

/// The merge patch [`Substrate::write_pod_expiry`] sends, for implementations that speak
/// HTTP: `metadata.resourceVersion` (the guard) and the annotation, nothing else.
#[must_use]
pub fn expiry_patch(write: &ExpiryWrite) -> serde_json::Value {
    serde_json::json!({
        "metadata": {
            "resourceVersion": write.resource_version(),
            "annotations": { ANNOTATION_EXPIRES_AT: write.annotation_value() },
        }
    })
}

/// Why `deploy --ttl` could not stamp its expiry. Nothing was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StampError {
    /// The pod list that reads the server clock failed.
    #[error("{0}")]
    Request(RequestFailure),
    /// The apiserver's answer carried no usable `Date` header.
    #[error(
        "the apiserver's answer carried no usable Date header, so --ttl has no server clock to \
         count from (the local clock is never used): deploy without --ttl, or check the proxy \
         in front of the apiserver"
    )]
    NoServerClock,
}

/// The apiserver's clock now, from the `Date` of one quorum pod list by `agent`'s selector
/// (Unix seconds; `None` without a usable header).
///
/// # Errors
/// The list failed.
pub async fn server_clock<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
) -> Result<Option<i64>, RequestFailure> {
    substrate
        .list_pods(&agent.selector())
        .await
        .map(|listed| listed.server_now.map(|now| now.timestamp()))
}

/// `config` with the expiry `ttl_secs` after the apiserver's clock now (`deploy --ttl`): one
/// quorum pod list reads the `Date` header before any write.
///
/// # Errors
/// [`StampError`]: the list failed or carried no server clock.
pub async fn stamp_expiry<S: Substrate>(
    substrate: &S,
    config: ValidConfig,
    ttl_secs: u64,
) -> Result<ValidConfig, StampError> {
    let now = server_clock(substrate, config.agent())
        .await
        .map_err(StampError::Request)?
        .ok_or(StampError::NoServerClock)?;
    Ok(config.expiring_at(expires_at(now, ttl_secs)))
}

/// How one renew runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenewOptions {
    /// The new TTL in seconds, from the apiserver's clock at the authorising observation.
    pub ttl_secs: u64,
    /// The bound of conflict retries.
    pub deadline: Duration,
    /// The pause between retries after the second conflict in a row.
    pub backoff: Duration,
}

/// Move the expiry of `agent`'s running pod to `ttl_secs` from the server clock (deploy.md
/// § Expiry): observe, write guarded by the observed `resourceVersion`, re-observe on conflict.
///
/// # Errors
/// [`RenewError`] as the machine decides; nothing was written then.
pub async fn renew<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    options: &RenewOptions,
) -> Result<Renewed, RenewError> {
    let machine = RenewMachine::new(RenewSpec {
        pod_name: agent.pod_name(),
        owner: agent.owner(),
        ttl_secs: options.ttl_secs,
        deadline: options.deadline,
        backoff: options.backoff,
    });
    let mut performer = Performer::new(substrate, agent);
    let mut on_progress = ignore;
    let run = drive(machine, &mut performer, &mut on_progress);
    in_span(Operation::Renew, agent, &agent.pod_name(), run).await
}

#[cfg(all(test, feature = "fake"))]
mod tests;
