//! The inventory of `apiary list` (deploy.md § list): from one pod listing and one
//! Secret listing of the namespace, one row per agent apiary manages — agent, pod, state in the
//! `status` vocabulary, age and expiry on the server's clock, restarts, image — sorted by agent.
//!
//! Pure: plain listed values and the server clock in, rows out. No Kubernetes types, no clock, no
//! I/O. The agent id is a SHA-256 of the name, which this crate does not compute: the shell passes
//! the derivation in (`names`). A pod is an agent's only when it verifies exactly as deploy.md
//! § Verification asks *and* sits under that agent's deterministic pod name; everything else is
//! skipped and counted, never reported beyond the count. Nothing here authorises a mutation.

use std::collections::{BTreeMap, BTreeSet};

use crate::binding::Owner;
use crate::expiry::{expiry_of, seconds_left};
use crate::facts::{ObservedPod, ObservedSecret};
use crate::status::{StatusState, pod_status};
use crate::verify::{PodView, verify_pod, verify_secret};

/// The names the shell derives from an AGENT (deploy.md § AGENT and agent_id, § Names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentNames {
    /// The binding and full 64-hex agent id the agent's objects must verify against.
    pub owner: Owner,
    /// The deterministic pod name.
    pub pod_name: String,
}

/// One listed pod, with the facts `list` shows beyond those the decisions read.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ListedPod {
    /// Marks and facts, as every decision reads them.
    pub observed: ObservedPod,
    /// The `apiary.dev/agent-name` annotation: the claim that verification then checks.
    pub agent_name: Option<String>,
    /// `restartCount` of the container `agent`, when it has a status.
    pub restarts: Option<u32>,
    /// The `apiary.dev/image` annotation (the normalized image), when present.
    pub image: Option<String>,
}

/// One listed Secret: its marks and the agent name it claims.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ListedSecret {
    /// Marks, as verification reads them.
    pub observed: ObservedSecret,
    /// The `apiary.dev/agent-name` annotation.
    pub agent_name: Option<String>,
}

/// What to include.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct InventoryOptions {
    /// Also report agents that have Secrets of their own but no pod, as state `absent`.
    pub include_absent: bool,
}

/// An image reference shortened for a table: the repository and the first 12 hex of its digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageSummary {
    /// Everything before `@` (the whole reference when it has no digest).
    pub repository: String,
    /// `sha256:` and the first 12 hex of the digest; `None` without a digest.
    pub digest: Option<String>,
}

/// Hex characters of a digest that a summary keeps.
const SHORT_DIGEST_HEX: usize = 12;

/// Shorten `reference` (`repo@sha256:<hex>`) to its repository and short digest.
pub fn summarize_image(reference: &str) -> ImageSummary {
    match reference.split_once('@') {
        Some((repository, digest)) => {
            let short = match digest.split_once(':') {
                Some((algorithm, hex)) => {
                    let cut: String = hex.chars().take(SHORT_DIGEST_HEX).collect();
                    format!("{algorithm}:{cut}")
                }
                None => digest.chars().take(SHORT_DIGEST_HEX).collect(),
            };
            ImageSummary {
                repository: repository.to_owned(),
                digest: Some(short),
            }
        }
        None => ImageSummary {
            repository: reference.to_owned(),
            digest: None,
        },
    }
}

/// One agent of the inventory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRow {
    /// AGENT, verbatim.
    pub agent: String,
    /// Its agent id.
    pub agent_id: String,
    /// The verified pod's name; `None` for an `absent` row.
    pub pod: Option<String>,
    /// The state, as `status` names it (never `foreign`: foreign pods are skipped).
    pub state: StatusState,
    /// Whole seconds since the pod's creation on the server clock; `None` without either
    /// timestamp. A creation time ahead of the clock reads as 0.
    pub age_seconds: Option<i64>,
    /// Restarts of the container `agent`; `None` when it has no status yet.
    pub restarts: Option<u32>,
    /// The pod's image, shortened.
    pub image: Option<ImageSummary>,
    /// The expiry instant (Unix seconds, server clock) of a well-formed `apiary.dev/expires-at`
    /// annotation (deploy.md § Expiry), when recorded.
    pub expires_at_unix: Option<i64>,
    /// Seconds from the server clock to the expiry (negative once expired); `None` without
    /// either.
    pub expires_in_seconds: Option<i64>,
    /// How many listed Secrets verify as this agent's.
    pub secrets: usize,
    /// The workspace claim the pod mounts (deploy.md § Persistent workspace), when any.
    pub workspace: Option<String>,
}

/// The inventory: rows sorted by agent, and how many listed objects were skipped.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Inventory {
    /// One row per agent, sorted by agent name (byte order).
    pub rows: Vec<AgentRow>,
    /// Listed pods that are not an agent's own (foreign, unverifiable, or not under the pod
    /// name their claimed agent derives).
    pub skipped_pods: usize,
    /// Listed Secrets that do not verify as the agent's they claim.
    pub skipped_secrets: usize,
}

/// The agent a listed object claims, when its claim holds: the name annotation derives names
/// and the object verifies against their id.
fn claimed(
    agent_name: Option<&str>,
    names: &impl Fn(&str) -> Option<AgentNames>,
) -> Option<(String, AgentNames)> {
    let agent = agent_name?;
    Some((agent.to_owned(), names(agent)?))
}

/// Build the inventory of one pod listing and one Secret listing, both by the same selector.
/// `server_now_unix` is the pod listing's `Date` (the same-clock rule of deploy.md § Age gate):
/// without it no age or time left is shown. A verified pod whose startup state waits on a
/// Secret check is settled from the Secret listing (a quorum list): a Secret of that name that
/// the listing did not return counts as missing.
pub fn inventory(
    pods: &[ListedPod],
    secrets: &[ListedSecret],
    server_now_unix: Option<i64>,
    options: InventoryOptions,
    names: impl Fn(&str) -> Option<AgentNames>,
) -> Inventory {
    let listed_secret_names: BTreeSet<&str> = secrets
        .iter()
        .filter_map(|s| s.observed.marks.name.as_deref())
        .collect();
    // Secret counts per agent id, with the agent name of the Secret that claimed it.
    let mut secret_counts: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut skipped_secrets = 0;
    for secret in secrets {
        match claimed(secret.agent_name.as_deref(), &names)
            .filter(|(_, n)| verify_secret(&secret.observed, &n.owner).is_some())
        {
            Some((agent, n)) => {
                secret_counts
                    .entry(n.owner.agent_id)
                    .or_insert((agent, 0))
                    .1 += 1
            }
            None => skipped_secrets += 1,
        }
    }
    let mut rows = Vec::new();
    let mut skipped_pods = 0;
    for pod in pods {
        match pod_row(pod, server_now_unix, &names, &listed_secret_names) {
            Some(mut row) => {
                row.secrets = secret_counts.get(&row.agent_id).map_or(0, |(_, n)| *n);
                rows.push(row);
            }
            None => skipped_pods += 1,
        }
    }
    if options.include_absent {
        let with_pod: BTreeSet<String> = rows.iter().map(|r| r.agent_id.clone()).collect();
        for (id, (agent, count)) in secret_counts {
            if !with_pod.contains(&id) {
                rows.push(AgentRow {
                    agent,
                    agent_id: id,
                    pod: None,
                    state: StatusState::Absent,
                    age_seconds: None,
                    restarts: None,
                    image: None,
                    expires_at_unix: None,
                    expires_in_seconds: None,
                    secrets: count,
                    workspace: None,
                });
            }
        }
    }
    rows.sort_by(|a, b| a.agent.cmp(&b.agent).then_with(|| a.pod.cmp(&b.pod)));
    Inventory {
        rows,
        skipped_pods,
        skipped_secrets,
    }
}

/// The row of one listed pod, or `None` when it is not an agent's own.
fn pod_row(
    pod: &ListedPod,
    server_now_unix: Option<i64>,
    names: &impl Fn(&str) -> Option<AgentNames>,
    listed_secrets: &BTreeSet<&str>,
) -> Option<AgentRow> {
    let (agent, derived) = claimed(pod.agent_name.as_deref(), names)?;
    let verified = verify_pod(&pod.observed, &derived.owner)?;
    // A copy of an agent's pod under another name is not that agent's pod.
    if verified.name() != derived.pod_name {
        return None;
    }
    let name = verified.name().to_owned();
    let created = verified.created_at_unix();
    let view = match verified.settle(None) {
        Ok(settled) => PodView::Settled(settled),
        Err(pending) => {
            let exists = listed_secrets.contains(pending.secret.as_str());
            match pending.pod.settle(Some(exists)) {
                Ok(settled) => PodView::Settled(settled),
                Err(pending) => PodView::Pending(pending),
            }
        }
    };
    let state = pod_status(&view, "").state;
    let expires_at = expiry_of(&pod.observed.marks);
    let image = pod
        .image
        .as_deref()
        .or(pod.observed.facts.image.as_deref())
        .map(summarize_image);
    Some(AgentRow {
        agent,
        agent_id: derived.owner.agent_id,
        pod: Some(name),
        state,
        age_seconds: server_now_unix
            .zip(created)
            .map(|(now, created)| now.saturating_sub(created).max(0)),
        restarts: pod.restarts,
        image,
        expires_at_unix: expires_at,
        expires_in_seconds: server_now_unix
            .zip(expires_at)
            .map(|(now, at)| seconds_left(at, now)),
        secrets: 0,
        workspace: pod.observed.facts.workspace_claim.clone(),
    })
}

#[cfg(test)]
mod tests;
