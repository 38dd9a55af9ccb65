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
use crate::failure::RequestFailure;
use crate::request::{Answer, Listing, Request, Step};
use crate::verify::{SecretDeletion, view_pod};
use std::time::Duration;

/// What one pass works with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GcSpec {
    /// The binding and full agent id verification compares against.
    pub owner: Owner,
    /// Whether to stop after planning (reads only).
    pub dry_run: bool,
    /// Whether a pass that empties the agent also removes its NetworkPolicy (deploy.md § Egress
    /// control): `gc`'s passes do; the deploy's preflight pass, about to create a pod under the
    /// policy, does not.
    pub remove_policy: bool,
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
    /// The agent's NetworkPolicy deleted after an emptying pass.
    pub network_policy: Option<String>,
}

/// What one step of the gc machine returns.
pub type GcStep = Step<Result<GcReport, RequestFailure>>;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Phase {
    #[default]
    Start,
    Listing,
    Rereading(String),
    DeletingPod(String),
    DeletingSecret(String),
    RemovingPolicy,
    Done(Result<GcReport, RequestFailure>),
}

/// One GC pass. Feed it [`Answer::Start`] first, then the answer to each effect.
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

    fn transition(&mut self, phase: Phase, _now: Duration, event: Answer) -> GcStep {
        match (phase, event) {
            (Phase::Done(result), _) => Step::Done(result),
            (Phase::Start, Answer::Start) => {
                let list = Request::List {
                    secrets: true,
                    dropping: None,
                };
                self.go(Phase::Listing, list)
            }
            (Phase::Listing, Answer::Listed(listed)) => match listed {
                Ok(listing) => self.plan(&listing),
                Err(failure) => Step::Done(Err(failure)),
            },
            (Phase::Rereading(name), Answer::PodRead(read)) => match read {
                Ok(pod) => match decide_gc_reread(&view_pod(pod.as_ref(), &self.spec.owner)) {
                    GcPodDecision::Delete(deletion) => {
                        let delete = Request::DeletePod {
                            deletion,
                            note: None,
                        };
                        self.go(Phase::DeletingPod(name), delete)
                    }
                    // Gone, foreign or no longer terminated at re-read: skipped (its Secret is
                    // still deleted: a terminated pod never runs again).
                    GcPodDecision::SkipGone
                    | GcPodDecision::SkipForeign
                    | GcPodDecision::SkipNotTerminated => self.next(),
                },
                Err(failure) => Step::Done(Err(failure)),
            },
            (Phase::DeletingPod(name), Answer::Deleted(answer)) => {
                match answer {
                    Ok(DeleteAnswer::Accepted) => self.report.pods.push(name),
                    // Changed or already gone since the re-read: silently accepted.
                    Ok(DeleteAnswer::NotFound | DeleteAnswer::PreconditionFailed) => {}
                    Err(failure) => self.report.failures.push(failure),
                }
                self.next()
            }
            (Phase::DeletingSecret(name), Answer::Deleted(answer)) => {
                match answer {
                    Ok(DeleteAnswer::Accepted) => self.report.secrets.push(name),
                    // Gone, or changed since listing (a new object under the name): skipped.
                    Ok(DeleteAnswer::NotFound | DeleteAnswer::PreconditionFailed) => {}
                    Err(failure) => self.report.failures.push(failure),
                }
                self.next()
            }
            // A policy that could not be removed is one more individual failure: the pass
            // itself succeeded, and a later pass tries again.
            (Phase::RemovingPolicy, Answer::PolicyRemoved(removed)) => {
                match removed {
                    Ok(name) => self.report.network_policy = name,
                    Err(failure) => self.report.failures.push(failure),
                }
                Step::Done(Ok(std::mem::take(&mut self.report)))
            }
            (_, _) => Step::Done(Err(RequestFailure::unsent(
                "internal error in apiary: the driver answered a GC effect that was not asked for",
            ))),
        }
    }

    fn go(&mut self, phase: Phase, request: Request) -> GcStep {
        self.phase = phase;
        Step::Request(request)
    }

    fn plan(&mut self, listing: &Listing) -> GcStep {
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
            return Step::Done(Ok(std::mem::take(&mut self.report)));
        }
        self.pods = pods.into();
        self.secrets = secrets.into();
        self.next()
    }

    /// The next planned pod re-read, then the next planned Secret, then the report.
    fn next(&mut self) -> GcStep {
        if let Some(name) = self.pods.pop_front() {
            let read = Request::GetPod {
                name: name.clone(),
                watch_stuck: false,
            };
            return self.go(Phase::Rereading(name), read);
        }
        if let Some(secret) = self.secrets.pop_front() {
            return self.go(
                Phase::DeletingSecret(secret.name().to_owned()),
                Request::DeleteSecret {
                    deletion: secret,
                    warn_on_failure: false,
                },
            );
        }
        let (no_pod, secrets) = self.listed;
        self.report.agent_emptied = no_pod && self.report.secrets.len() == secrets;
        if self.report.agent_emptied && self.spec.remove_policy {
            return self.go(Phase::RemovingPolicy, Request::RemovePolicy);
        }
        Step::Done(Ok(std::mem::take(&mut self.report)))
    }
}

crate::progress::machine!(GcMachine => Result<GcReport, RequestFailure>);

#[cfg(test)]
mod tests;
