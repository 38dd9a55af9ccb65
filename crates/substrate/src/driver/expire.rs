//! The collection of expired agents (deploy.md § Expiry): the drive of `apiary-classify`'s
//! `ExpireMachine` for one agent, `gc` for one agent (the GC pass, then the
//! expiry collection), and `gc --all` (every agent apiary manages in the namespace).
//!
//! Imperative shell: it lists, deletes, waits and maps answers. Whether a pod has expired, with
//! which fence it goes, when its Secret may follow — the machines decide. `gc --all` only finds
//! which agents to visit (from the `apiary.dev/agent-name` claims of marked objects whose derived
//! id matches their `apiary.dev/agent-id`); every pass then verifies each object itself, so a
//! wrong claim can make it visit an agent, never delete anything that is not that agent's.

use std::collections::BTreeSet;
use std::time::Duration;

use apiary_classify::expire::{ExpireError, ExpireMachine, ExpireReport, ExpireSpec};
use apiary_classify::failure::RequestFailure;
use apiary_classify::gc::GcReport;
use apiary_classify::grace::GracePeriod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::gc::gc;
use super::perform::{Performer, drive};
use super::shared::{DEFAULT_POLL, Operation, ignore, in_span};
use apiary_classify::binding::APIARY;

use crate::naming::AgentIdentity;
use crate::substrate::Substrate;

/// How long one expired pod is awaited: its 60 s grace period twice over, well inside the CLI's
/// 600 s bound.
pub const EXPIRE_DEADLINE: Duration = Duration::from_secs(180);

/// Collect `agent`'s pod if it has expired on the apiserver's clock (deploy.md § Expiry).
///
/// # Errors
/// [`ExpireError`]: a list, read or pod delete failed, or the pod outlived `deadline` (its
/// Secret is then kept).
pub async fn collect_expired<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    dry_run: bool,
    deadline: Duration,
    grace: Option<GracePeriod>,
) -> Result<ExpireReport, ExpireError> {
    let machine = ExpireMachine::new(ExpireSpec {
        pod_name: agent.pod_name(),
        owner: agent.owner(),
        dry_run,
        deadline,
        poll: DEFAULT_POLL,
        grace,
    });
    let mut performer = Performer::new(substrate, agent);
    let mut on_progress = ignore;
    let run = drive(machine, &mut performer, &mut on_progress);
    in_span(Operation::Expire, agent, &agent.pod_name(), run).await
}

/// What `gc` did for one agent: the GC pass and the expiry collection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentGc {
    /// The agent.
    pub agent: AgentIdentity,
    /// The GC pass (terminated pods, their Secrets, old orphans), or why it failed.
    pub pass: Result<GcReport, RequestFailure>,
    /// The expiry collection, or why it failed; not run when the pass failed.
    pub expired: Option<Result<ExpireReport, ExpireError>>,
}

impl AgentGc {
    /// Whether anything failed (a pass, a collection or an individual deletion).
    #[must_use]
    pub fn failed(&self) -> bool {
        match (&self.pass, &self.expired) {
            (Err(_), _) | (_, Some(Err(_))) => true,
            (Ok(pass), expired) => {
                !pass.failures.is_empty()
                    || matches!(expired, Some(Ok(report)) if !report.failures.is_empty())
            }
        }
    }
}

/// `gc AGENT`: the GC pass (deploy.md § Execution), then the collection of the agent's pod if it
/// has expired (deploy.md § Expiry), deleted with `grace` when given (deploy.md § Grace periods).
/// A failed pass skips the collection.
pub async fn gc_agent<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    dry_run: bool,
    deadline: Duration,
    grace: Option<GracePeriod>,
) -> AgentGc {
    let pass = gc(substrate, agent, dry_run).await;
    let expired = match &pass {
        Ok(_) => Some(collect_expired(substrate, agent, dry_run, deadline, grace).await),
        Err(_) => None,
    };
    AgentGc {
        agent: agent.clone(),
        pass,
        expired,
    }
}

/// What `gc --all` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcAll {
    /// One entry per agent visited, sorted by agent name.
    pub agents: Vec<AgentGc>,
    /// Marked objects whose agent claim was missing, invalid or inconsistent: not visited.
    pub skipped: usize,
}

/// What `gc --all` sends, as core-group RBAC grants (resource, verbs): the discovery lists, the
/// GC pass's re-reads, Secret settle reads and fenced deletes, and the wait for an expired pod's
/// disappearance (`watch` is optional: without it the wait polls). `deploy/cronjob-gc.yaml`'s
/// Role is checked against this table.
pub const GC_ALL_GRANTS: &[(&str, &[&str])] = &[
    ("pods", &["get", "list", "delete", "watch"]),
    ("secrets", &["get", "list", "delete"]),
];

/// The selector of `gc --all`'s discovery: apiary's marker label (only apiary's binding names
/// its agents, so only its agents can be discovered).
#[must_use]
pub fn all_agents_selector() -> String {
    format!("{}={}", APIARY.label_managed_by, APIARY.managed_by)
}

/// The agent a marked object claims, when its name is a valid AGENT whose id is the object's
/// `apiary.dev/agent-id`.
fn claimed_agent(meta: &ObjectMeta) -> Option<AgentIdentity> {
    let annotations = meta.annotations.as_ref()?;
    let agent = AgentIdentity::new(annotations.get(APIARY.annotation_agent_name?)?).ok()?;
    (annotations
        .get(APIARY.annotation_agent_id)
        .map(String::as_str)
        == Some(agent.id()))
    .then_some(agent)
}

/// `gc --all`: one pod list and one Secret list by apiary's marker label find the agents; then
/// `gc AGENT` runs for each, in agent order. Every agent is attempted whatever the others gave.
///
/// # Errors
/// The discovery listing failed (nothing was deleted).
pub async fn gc_all<S: Substrate>(
    substrate: &S,
    dry_run: bool,
    deadline: Duration,
    grace: Option<GracePeriod>,
) -> Result<GcAll, RequestFailure> {
    let selector = all_agents_selector();
    let pods = substrate.list_pods(&selector).await?;
    let secrets = substrate.list_secrets(&selector).await?;
    let metas = pods
        .items
        .iter()
        .map(|p| &p.metadata)
        .chain(secrets.iter().map(|s| &s.metadata));
    let mut agents: BTreeSet<(String, String)> = BTreeSet::new();
    let mut skipped = 0;
    for meta in metas {
        match claimed_agent(meta) {
            Some(agent) => {
                agents.insert((agent.name().to_owned(), agent.id().to_owned()));
            }
            None => skipped += 1,
        }
    }
    let mut report = GcAll {
        agents: Vec::new(),
        skipped,
    };
    for (name, _) in agents {
        let Ok(agent) = AgentIdentity::new(&name) else {
            continue;
        };
        report
            .agents
            .push(gc_agent(substrate, &agent, dry_run, deadline, grace).await);
    }
    Ok(report)
}
