//! One GC pass (deploy.md § Execution) as a sans-IO machine in the deploy machine's style: list,
//! plan, re-read each planned pod and delete it with the re-read fence when still ours and
//! terminated, then delete the planned Secrets. The execution policy is here, not in the driver.
//!
//! Pure. A list or re-read failure aborts the pass (`Finish(Err)`); individual delete failures
//! do not: every other deletion is still attempted and the failures are reported. A dry run ends
//! after the list with the plan. GC has no deadline and never waits: it does not await
//! disappearance (the deploy loop's row 2 does).

use crate::binding::Owner;
use std::collections::VecDeque;

use super::plan::{GcPlan, GcPodDecision, OrphanSweep, decide_gc_reread, plan_gc};
use crate::answer::DeleteAnswer;
use crate::facts::{ObservedPod, ObservedSecret};
use crate::failure::RequestFailure;
use crate::progress::{self, Machine};
use crate::verify::{PodDeletion, SecretDeletion, view_pod};

/// What one pass works with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GcSpec {
    /// The binding and full agent id verification compares against.
    pub owner: Owner,
    /// Whether to stop after planning (reads only).
    pub dry_run: bool,
}

/// The pods and Secrets listed by the agent's selector, with the pod list's server clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcListing {
    /// The listed pods.
    pub pods: Vec<ObservedPod>,
    /// The listed Secrets.
    pub secrets: Vec<ObservedSecret>,
    /// The pod list's `Date` in Unix seconds; `None` when absent or malformed.
    pub server_now: Option<i64>,
}

/// What one GC pass collected (or, in dry-run, planned).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Whether this was a dry run (reads only).
    pub dry_run: bool,
    /// Pods whose delete the apiserver accepted (planned ones in dry-run).
    pub pods: Vec<String>,
    /// Secrets whose delete the apiserver accepted (planned ones in dry-run).
    pub secrets: Vec<String>,
    /// Whether the orphan sweep ran (it needs the server clock).
    pub orphan_sweep: Option<OrphanSweep>,
    /// Individual delete failures; every other deletion was still attempted.
    pub failures: Vec<RequestFailure>,
    /// Whether the pass left the agent with nothing (deploy.md § Egress control): the listing
    /// showed no pod under the agent's selector and every listed Secret's delete was accepted.
    /// Only then may `gc` delete the agent's NetworkPolicy; never in a dry run.
    pub agent_emptied: bool,
    /// The agent's NetworkPolicy deleted after an emptying pass (filled by the shell).
    pub network_policy: Option<String>,
}

/// The answer to the previous effect.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one event per apiserver request, as the deploy machine's"
)]
pub enum GcEvent {
    /// Begin the pass (the first event).
    Start,
    /// Answer to [`GcEffect::List`].
    Listed(Result<GcListing, RequestFailure>),
    /// Answer to [`GcEffect::GetPod`] (`Ok(None)` = confirmed absent).
    PodRead(Result<Option<ObservedPod>, RequestFailure>),
    /// Answer to [`GcEffect::DeletePod`].
    PodDeleted(Result<DeleteAnswer, RequestFailure>),
    /// Answer to [`GcEffect::DeleteSecret`].
    SecretDeleted(Result<DeleteAnswer, RequestFailure>),
}

/// The next thing the driver must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GcEffect {
    /// Quorum-list pods (keeping the `Date` clock), then Secrets, by the agent's selector.
    List,
    /// Quorum re-read of a planned pod.
    GetPod {
        /// The pod name.
        name: String,
    },
    /// Fenced delete with the fence of the re-read.
    DeletePod(PodDeletion),
    /// uid-fenced delete of a planned Secret.
    DeleteSecret(SecretDeletion),
    /// The pass is over.
    Finish(Result<GcReport, RequestFailure>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Phase {
    #[default]
    Start,
    Listing,
    Rereading(String),
    DeletingPod(String),
    DeletingSecret(String),
    Done(Result<GcReport, RequestFailure>),
}

/// One GC pass. Feed it [`GcEvent::Start`] first, then the answer to each effect.
#[derive(Clone, Debug)]
pub struct GcMachine {
    spec: GcSpec,
    phase: Phase,
    report: GcReport,
    pods: VecDeque<String>,
    secrets: VecDeque<SecretDeletion>,
    /// From the listing: whether it showed no pod, and how many Secrets it showed.
    listed: (bool, usize),
}

impl GcMachine {
    /// A machine for one pass.
    pub fn new(spec: GcSpec) -> GcMachine {
        GcMachine {
            report: GcReport {
                dry_run: spec.dry_run,
                ..GcReport::default()
            },
            spec,
            phase: Phase::Start,
            pods: VecDeque::new(),
            secrets: VecDeque::new(),
            listed: (false, 0),
        }
    }

    /// Feed the answer to the previous effect; get the next effect. Once finished, every further
    /// step repeats the `Finish`.
    pub fn step(&mut self, event: GcEvent) -> GcEffect {
        progress::step(self, event)
    }

    fn transition(&mut self, phase: Phase, event: GcEvent) -> GcEffect {
        match (phase, event) {
            (Phase::Done(result), _) => GcEffect::Finish(result),
            (Phase::Start, GcEvent::Start) => self.go(Phase::Listing, GcEffect::List),
            (Phase::Listing, GcEvent::Listed(listed)) => match listed {
                Ok(listing) => self.plan(&listing),
                Err(failure) => GcEffect::Finish(Err(failure)),
            },
            (Phase::Rereading(name), GcEvent::PodRead(read)) => match read {
                Ok(pod) => match decide_gc_reread(&view_pod(pod.as_ref(), &self.spec.owner)) {
                    GcPodDecision::Delete(deletion) => {
                        self.go(Phase::DeletingPod(name), GcEffect::DeletePod(deletion))
                    }
                    // Gone, foreign or no longer terminated at re-read: skipped (its Secret is
                    // still deleted: a terminated pod never runs again).
                    GcPodDecision::SkipGone
                    | GcPodDecision::SkipForeign
                    | GcPodDecision::SkipNotTerminated => self.next(),
                },
                Err(failure) => GcEffect::Finish(Err(failure)),
            },
            (Phase::DeletingPod(name), GcEvent::PodDeleted(answer)) => {
                match answer {
                    Ok(DeleteAnswer::Accepted) => self.report.pods.push(name),
                    // Changed or already gone since the re-read: silently accepted.
                    Ok(DeleteAnswer::NotFound | DeleteAnswer::PreconditionFailed) => {}
                    Err(failure) => self.report.failures.push(failure),
                }
                self.next()
            }
            (Phase::DeletingSecret(name), GcEvent::SecretDeleted(answer)) => {
                match answer {
                    Ok(DeleteAnswer::Accepted) => self.report.secrets.push(name),
                    // Gone, or changed since listing (a new object under the name): skipped.
                    Ok(DeleteAnswer::NotFound | DeleteAnswer::PreconditionFailed) => {}
                    Err(failure) => self.report.failures.push(failure),
                }
                self.next()
            }
            (_, _) => GcEffect::Finish(Err(RequestFailure::unsent(
                "internal error in apiary: the driver answered a GC effect that was not asked for",
            ))),
        }
    }

    fn go(&mut self, phase: Phase, effect: GcEffect) -> GcEffect {
        self.phase = phase;
        effect
    }

    fn plan(&mut self, listing: &GcListing) -> GcEffect {
        let GcPlan {
            pods,
            secrets,
            orphan_sweep,
        } = plan_gc(
            &listing.pods,
            &listing.secrets,
            listing.server_now,
            &self.spec.owner,
        );
        self.report.orphan_sweep = Some(orphan_sweep);
        self.listed = (listing.pods.is_empty(), listing.secrets.len());
        if self.spec.dry_run {
            self.report.pods = pods;
            self.report.secrets = secrets.iter().map(|s| s.name().to_owned()).collect();
            return GcEffect::Finish(Ok(std::mem::take(&mut self.report)));
        }
        self.pods = pods.into();
        self.secrets = secrets.into();
        self.next()
    }

    /// The next planned pod re-read, then the next planned Secret, then the report.
    fn next(&mut self) -> GcEffect {
        if let Some(name) = self.pods.pop_front() {
            return self.go(Phase::Rereading(name.clone()), GcEffect::GetPod { name });
        }
        if let Some(secret) = self.secrets.pop_front() {
            return self.go(
                Phase::DeletingSecret(secret.name().to_owned()),
                GcEffect::DeleteSecret(secret),
            );
        }
        let (no_pod, secrets) = self.listed;
        self.report.agent_emptied = no_pod && self.report.secrets.len() == secrets;
        GcEffect::Finish(Ok(std::mem::take(&mut self.report)))
    }
}

impl Machine for GcMachine {
    type Phase = Phase;
    type Input = GcEvent;
    type Effect = GcEffect;

    fn phase_mut(&mut self) -> &mut Phase {
        &mut self.phase
    }

    fn apply(&mut self, phase: Phase, event: GcEvent) -> GcEffect {
        self.transition(phase, event)
    }

    fn finished(effect: &GcEffect) -> Option<Phase> {
        match effect {
            GcEffect::Finish(result) => Some(Phase::Done(result.clone())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
