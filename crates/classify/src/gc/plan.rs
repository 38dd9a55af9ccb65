//! The GC plan and the re-read decision (deploy.md § Plan, § Age gate, § Execution): which
//! terminated pods and which Secrets one pass may delete, on the apiserver's clock only. Pure;
//! the pass that executes it is the sibling machine.

use crate::binding::Owner;
use std::collections::BTreeSet;

use crate::facts::{ObservedPod, ObservedSecret};
use crate::startup::{Decoded, StartupState};
use crate::verify::{PodDeletion, PodView, SecretDeletion, VerifiedPod, verify_pod, verify_secret};

/// The orphan-Secret age gate in seconds: 2 × the 600 s maximum deadline, whatever the timeout.
pub const ORPHAN_AGE_GATE_SECS: i64 = 1200;

/// Whether the orphan sweep ran in a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrphanSweep {
    /// It ran on the server clock.
    Ran,
    /// There was no server clock: no age proof, so no orphan was considered.
    Skipped,
}

impl OrphanSweep {
    /// `ran` or `skipped`, as in `apiary gc` output.
    pub fn as_str(self) -> &'static str {
        match self {
            OrphanSweep::Ran => "ran",
            OrphanSweep::Skipped => "skipped",
        }
    }
}

/// One GC pass's plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GcPlan {
    /// Names of the terminated verified pods to re-read and delete.
    pub pods: Vec<String>,
    /// Secrets to delete (uid-fenced), each once.
    pub secrets: Vec<SecretDeletion>,
    /// Whether the orphan sweep ran.
    pub orphan_sweep: OrphanSweep,
}

/// Whether an unreferenced Secret created at `created_at` is old enough to sweep at `server_now`
/// (both Unix seconds from the apiserver): age ≥ 1200 s; negative ages are kept.
pub fn orphan_old_enough(server_now: i64, created_at: i64) -> bool {
    server_now.saturating_sub(created_at) >= ORPHAN_AGE_GATE_SECS
}

/// Whether a verified pod's settled state is Terminated. A pod pending a Secret check is waiting
/// (`CreateContainerConfigError`), so it can never be Terminated whatever the check answers.
fn terminated(pod: &VerifiedPod) -> bool {
    pod.decode() == Decoded::Settled(StartupState::Terminated)
}

/// Plan one GC pass over the listed pods and Secrets; `server_now` is the pod list's `Date` in
/// Unix seconds, `None` when absent or malformed.
pub fn plan_gc(
    pods: &[ObservedPod],
    secrets: &[ObservedSecret],
    server_now: Option<i64>,
    owner: &Owner,
) -> GcPlan {
    let ours: Vec<VerifiedPod> = pods.iter().filter_map(|p| verify_pod(p, owner)).collect();
    let (doomed, living): (Vec<&VerifiedPod>, Vec<&VerifiedPod>) =
        ours.iter().partition(|pod| terminated(pod));
    let protected: BTreeSet<&str> = living
        .iter()
        .filter_map(|pod| pod.facts().env_from_secret.as_deref())
        .collect();
    let doomed_refs: BTreeSet<&str> = doomed
        .iter()
        .filter_map(|pod| pod.facts().env_from_secret.as_deref())
        .collect();
    let verified: Vec<_> = secrets
        .iter()
        .filter_map(|s| verify_secret(s, owner))
        .collect();

    let mut planned: Vec<SecretDeletion> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for secret in &verified {
        let Some(name) = secret.name() else { continue };
        if protected.contains(name) || !doomed_refs.contains(name) {
            continue;
        }
        if let Some(deletion) = secret.deletion()
            && seen.insert(name.to_owned())
        {
            planned.push(deletion);
        }
    }
    if let Some(now) = server_now {
        for secret in &verified {
            let Some(name) = secret.name() else { continue };
            let Some(created) = secret.created_at_unix() else {
                continue;
            };
            if protected.contains(name) || seen.contains(name) || !orphan_old_enough(now, created) {
                continue;
            }
            if let Some(deletion) = secret.deletion() {
                seen.insert(name.to_owned());
                planned.push(deletion);
            }
        }
    }
    GcPlan {
        pods: doomed.iter().map(|pod| pod.name().to_owned()).collect(),
        secrets: planned,
        orphan_sweep: if server_now.is_some() {
            OrphanSweep::Ran
        } else {
            OrphanSweep::Skipped
        },
    }
}

/// What GC does with a planned pod after re-reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GcPodDecision {
    /// Still ours and still terminated: fenced delete with the **re-read** fence.
    Delete(PodDeletion),
    /// Gone at re-read (G18); its Secret is still deleted.
    SkipGone,
    /// The name now holds an unverified object (G20).
    SkipForeign,
    /// No longer terminated — replaced or otherwise changed (G17).
    SkipNotTerminated,
}

/// Decide about a planned pod from its quorum re-read (deploy.md § Execution step 3).
pub fn decide_gc_reread(view: &PodView) -> GcPodDecision {
    match view {
        PodView::Absent => GcPodDecision::SkipGone,
        PodView::Foreign => GcPodDecision::SkipForeign,
        PodView::Settled(settled) if settled.startup() == StartupState::Terminated => {
            GcPodDecision::Delete(settled.pod().deletion())
        }
        PodView::Settled(_) | PodView::Pending(_) => GcPodDecision::SkipNotTerminated,
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
