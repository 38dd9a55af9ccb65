//! The undeploy operation (deploy.md § undeploy) as a sans-IO machine: fed the answer to each
//! effect with a monotonic `now`, it returns the next effect, like the deploy machine.
//!
//! Pure. The order is the spec's: read the pod; a foreign pod ends it with nothing touched; a
//! verified pod gets a fenced delete (a deletion-marked one is only awaited); a failed precondition
//! waits one poll and re-observes; unless told not to wait, the observed uid is awaited to the
//! deadline (E4 deletes no Secret); then the listed, unreferenced verified Secrets are deleted one
//! by one. The report and the progress are outputs; the driver only executes.

use crate::binding::Owner;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use super::decide::{SecretsPlan, UndeployPodStep, undeploy_pod_step, undeploy_secrets};
use crate::answer::DeleteAnswer;
use crate::facts::ObservedPod;
use crate::failure::RequestFailure;
use crate::grace::GracePeriod;
use crate::progress::PodWatch;
use crate::request::{Answer, Request, Step};
use crate::verify::SecretDeletion;
use crate::wait::{Deadline, Disappearance, disappearance};

/// What one undeploy works towards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndeploySpec {
    /// The deterministic pod name.
    pub pod_name: String,
    /// The binding and full agent id verification compares against.
    pub owner: Owner,
    /// Wait for the pod to disappear before deleting Secrets (`--no-wait` turns it off).
    pub wait: bool,
    /// The bound of the operation.
    pub deadline: Duration,
    /// The poll interval.
    pub poll: Duration,
    /// `--delete-workspace`: delete the agent's workspace claim (fenced) once its pod is gone
    /// (deploy.md § Persistent workspace); otherwise it is only reported kept.
    pub delete_workspace: bool,
    /// `--grace-period`: the delete's grace period override; `None` keeps the pod's own
    /// (deploy.md § Grace periods).
    pub grace: Option<GracePeriod>,
}

/// What undeploy did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UndeployReport {
    /// The pod name when a pod of ours was found.
    pub pod: Option<String>,
    /// Whether this call's delete of the pod was accepted.
    pub pod_deleted: bool,
    /// Whether the pod was waited for until gone.
    pub waited: bool,
    /// Secrets deleted.
    pub secrets: Vec<String>,
    /// Secrets kept because a listed pod still references them (or changed since listing).
    pub kept_secrets: Vec<String>,
    /// The agent's NetworkPolicy (`--isolate`) deleted after its pod was gone (deploy.md § Egress
    /// control).
    pub network_policy: Option<String>,
    /// The agent's workspace claim, when it has one of apiary's: kept, or deleted by
    /// `--delete-workspace` once its pod was gone (deploy.md § Persistent workspace).
    pub workspace: Option<crate::workspace::ClaimFate>,
}

/// Whether an undeploy that ended with `report` may delete the agent's policy: only once no pod
/// of the agent can be running (none was found, or it was waited for until gone). After
/// `--no-wait` the pod is still terminating, and removing its policy would lift its isolation
/// for its last seconds; `gc` collects the policy later.
pub fn undeploy_removes_policy(report: &UndeployReport) -> bool {
    report.pod.is_none() || report.waited
}

/// Why undeploy failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UndeployError {
    /// E8: the pod name holds an object that is not apiary's for this agent; nothing touched.
    ForeignPod {
        /// The pod name.
        pod: String,
    },
    /// E4: the pod did not disappear in time; no Secret was deleted.
    Timeout {
        /// The pod name.
        pod: String,
        /// The bound.
        deadline: Duration,
    },
    /// A concurrent deploy created a new pod under the name; it was left untouched.
    Replaced {
        /// The pod name.
        pod: String,
        /// What was done before and after noticing (boxed: the error stays small).
        report: Box<UndeployReport>,
    },
    /// E12: a read or delete failed (for Secret deletes: the first failure, after every other
    /// planned Secret was still attempted).
    Failed(RequestFailure),
    /// The driver answered an effect the machine did not ask for: a bug in apiary.
    Internal {
        /// What disagreed (names only).
        detail: String,
    },
}

impl fmt::Display for UndeployError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UndeployError::ForeignPod { pod } => write!(
                f,
                "pod {pod} exists but is not managed by apiary for this agent (missing marker, \
                 different agent identity, or different binding version); remove it or use \
                 another namespace"
            ),
            UndeployError::Timeout { pod, deadline } => write!(
                f,
                "timed out after {}s waiting for pod {pod} to finish terminating",
                deadline.as_secs()
            ),
            UndeployError::Replaced { pod, .. } => write!(
                f,
                "a concurrent deploy created a new pod {pod} while undeploying; it was left \
                 untouched"
            ),
            UndeployError::Failed(failure) => write!(f, "{failure}"),
            UndeployError::Internal { detail } => {
                write!(f, "internal error in apiary (please report it): {detail}")
            }
        }
    }
}

impl std::error::Error for UndeployError {}

/// What one step of the undeploy machine returns.
pub type UndeployStep = Step<Result<UndeployReport, UndeployError>>;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Phase {
    #[default]
    Start,
    Observe,
    Deleting {
        uid: String,
    },
    RetryWait,
    DisappearRead {
        uid: String,
    },
    DisappearWait {
        uid: String,
    },
    Listing,
    DeletingSecret {
        current: SecretDeletion,
    },
    RemovingPolicy,
    SettlingWorkspace,
    Done(Result<UndeployReport, UndeployError>),
}

/// One undeploy call. Feed it [`Answer::Start`] first, then the answer to each effect.
#[derive(Clone, Debug)]
pub struct UndeployMachine {
    spec: UndeploySpec,
    phase: Phase,
    deadline: Deadline,
    report: UndeployReport,
    replaced: bool,
    queue: VecDeque<SecretDeletion>,
    first_failure: Option<RequestFailure>,
    watch: PodWatch,
}

impl UndeployMachine {
    /// A machine for one undeploy call.
    pub fn new(spec: UndeploySpec) -> UndeployMachine {
        UndeployMachine {
            deadline: Deadline::new(spec.deadline, spec.poll),
            spec,
            phase: Phase::Start,
            report: UndeployReport::default(),
            replaced: false,
            queue: VecDeque::new(),
            first_failure: None,
            watch: PodWatch::default(),
        }
    }

    fn transition(&mut self, phase: Phase, now: Duration, event: Answer) -> UndeployStep {
        match (phase, event) {
            (Phase::Done(result), _) => Step::Done(result),
            (Phase::Start, Answer::Start) | (Phase::RetryWait, Answer::Waited) => self.observe(now),
            (Phase::Observe, Answer::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(pod) => match undeploy_pod_step(pod.as_ref(), &self.spec.owner) {
                    UndeployPodStep::Absent => self.list(),
                    UndeployPodStep::Foreign => finish(Err(UndeployError::ForeignPod {
                        pod: self.spec.pod_name.clone(),
                    })),
                    UndeployPodStep::AwaitOnly { name, uid } => {
                        self.report.pod = Some(name);
                        self.await_uid(now, uid)
                    }
                    UndeployPodStep::Delete(deletion) => {
                        self.report.pod = Some(deletion.name().to_owned());
                        let uid = deletion.fence().uid().to_owned();
                        let deletion = deletion.with_grace(self.spec.grace);
                        let delete = Request::DeletePod {
                            deletion,
                            note: None,
                        };
                        self.go(Phase::Deleting { uid }, delete)
                    }
                },
            },
            (Phase::Deleting { uid }, Answer::Deleted(answer)) => match answer {
                Ok(DeleteAnswer::Accepted) => {
                    self.report.pod_deleted = true;
                    self.await_uid(now, uid)
                }
                Ok(DeleteAnswer::NotFound) => self.list(),
                // The pod changed since the observation: wait one poll as the deploy loop does,
                // then re-observe and decide again; never retry with a fresher fence.
                Ok(DeleteAnswer::PreconditionFailed) => self.wait(now, Phase::RetryWait),
                Err(failure) => finish(Err(UndeployError::Failed(failure))),
            },
            (Phase::DisappearRead { uid }, Answer::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(pod) => match disappearance(&uid, pod.as_ref()) {
                    Disappearance::Gone => {
                        self.report.waited = true;
                        self.list()
                    }
                    // A concurrent deploy's pod: leave it, still delete what no pod references.
                    Disappearance::Replaced => {
                        self.replaced = true;
                        self.list()
                    }
                    Disappearance::Present => self.wait(now, Phase::DisappearWait { uid }),
                },
            },
            (Phase::DisappearWait { uid }, Answer::Waited) => self.disappear_top(now, uid),
            (Phase::Listing, Answer::Listed(listed)) => match listed {
                Ok(listing) => {
                    let SecretsPlan { delete, kept } =
                        undeploy_secrets(&listing.pods, &listing.secrets, &self.spec.owner);
                    self.report.kept_secrets = kept;
                    self.queue = delete.into();
                    self.next_secret()
                }
                Err(failure) => finish(Err(UndeployError::Failed(failure))),
            },
            (Phase::RemovingPolicy, Answer::PolicyRemoved(removed)) => match removed {
                Ok(name) => {
                    self.report.network_policy = name;
                    self.settle_workspace(true)
                }
                Err(failure) => finish(Err(UndeployError::Failed(failure))),
            },
            (Phase::SettlingWorkspace, Answer::WorkspaceSettled(settled)) => match settled {
                Ok(fate) => {
                    self.report.workspace = fate;
                    finish(Ok(std::mem::take(&mut self.report)))
                }
                Err(failure) => finish(Err(UndeployError::Failed(failure))),
            },
            (Phase::DeletingSecret { current }, Answer::Deleted(answer)) => {
                let name = current.name().to_owned();
                match answer {
                    Ok(DeleteAnswer::Accepted | DeleteAnswer::NotFound) => {
                        self.report.secrets.push(name);
                    }
                    // Changed since listing (a new object under the name): kept and reported.
                    Ok(DeleteAnswer::PreconditionFailed) => self.report.kept_secrets.push(name),
                    Err(failure) => {
                        self.first_failure.get_or_insert(failure);
                    }
                }
                self.next_secret()
            }
            (phase, event) => finish(Err(UndeployError::Internal {
                detail: format!(
                    "the driver answered {} while undeploy waited for {}",
                    event.name(),
                    phase_name(&phase)
                ),
            })),
        }
    }

    fn go(&mut self, phase: Phase, request: Request) -> UndeployStep {
        self.phase = phase;
        Step::Request(request)
    }

    fn get_pod(&mut self, phase: Phase) -> UndeployStep {
        let name = self.spec.pod_name.clone();
        self.go(
            phase,
            Request::GetPod {
                name,
                watch_stuck: true,
            },
        )
    }

    fn timeout(&self) -> UndeployStep {
        finish(Err(UndeployError::Timeout {
            pod: self.spec.pod_name.clone(),
            deadline: self.deadline.limit(),
        }))
    }

    /// deploy.md § undeploy, step 1 (again after a failed precondition): deadline, then read.
    fn observe(&mut self, now: Duration) -> UndeployStep {
        if self.deadline.expired(now) {
            return self.timeout();
        }
        self.get_pod(Phase::Observe)
    }

    /// deploy.md § undeploy, step 3: wait for the uid unless told not to.
    fn await_uid(&mut self, now: Duration, uid: String) -> UndeployStep {
        if self.spec.wait {
            self.disappear_top(now, uid)
        } else {
            self.list()
        }
    }

    fn disappear_top(&mut self, now: Duration, uid: String) -> UndeployStep {
        if self.deadline.expired(now) {
            return self.timeout();
        }
        self.get_pod(Phase::DisappearRead { uid })
    }

    /// One poll, never past the deadline; with no time left, continue at once (the next step
    /// then fails on the deadline).
    fn wait(&mut self, now: Duration, then: Phase) -> UndeployStep {
        let max = self.deadline.wait_max(now);
        if max.is_zero() {
            return self.transition(then, now, Answer::Waited);
        }
        self.phase = then;
        Step::Request(Request::Wait {
            max,
            pod: self.spec.pod_name.clone(),
            resource_version: self.watch.resource_version(),
        })
    }

    #[allow(
        clippy::result_large_err,
        reason = "the error is the next effect itself, returned at once by every caller"
    )]
    fn read(
        &mut self,
        read: Result<Option<ObservedPod>, RequestFailure>,
    ) -> Result<Option<ObservedPod>, UndeployStep> {
        match read {
            Ok(pod) => {
                self.watch.observe(pod.as_ref(), &self.spec.owner);
                Ok(pod)
            }
            Err(failure) => Err(finish(Err(UndeployError::Failed(failure)))),
        }
    }

    /// deploy.md § undeploy, step 4.
    fn list(&mut self) -> UndeployStep {
        let list = Request::List {
            secrets: true,
            dropping: None,
        };
        self.go(Phase::Listing, list)
    }

    fn next_secret(&mut self) -> UndeployStep {
        if let Some(current) = self.queue.pop_front() {
            return self.go(
                Phase::DeletingSecret {
                    current: current.clone(),
                },
                Request::DeleteSecret {
                    deletion: current,
                    warn_on_failure: true,
                },
            );
        }
        let report = std::mem::take(&mut self.report);
        if let Some(failure) = self.first_failure.take() {
            return finish(Err(UndeployError::Failed(failure)));
        }
        if self.replaced {
            return finish(Err(UndeployError::Replaced {
                pod: self.spec.pod_name.clone(),
                report: Box::new(report),
            }));
        }
        self.report = report;
        // deploy.md § Egress control and § Persistent workspace: the agent's policy goes, and its
        // claim may go, only once no pod of the agent can be running.
        if undeploy_removes_policy(&self.report) {
            return self.go(Phase::RemovingPolicy, Request::RemovePolicy);
        }
        self.settle_workspace(false)
    }

    fn settle_workspace(&mut self, pod_gone: bool) -> UndeployStep {
        let delete = self.spec.delete_workspace && pod_gone;
        self.go(
            Phase::SettlingWorkspace,
            Request::SettleWorkspace { delete },
        )
    }
}

crate::progress::machine!(UndeployMachine => Result<UndeployReport, UndeployError>, deadline: deadline, progress: watch);

fn finish(result: Result<UndeployReport, UndeployError>) -> UndeployStep {
    Step::Done(result)
}

fn phase_name(phase: &Phase) -> &'static str {
    match phase {
        Phase::Start => "Start",
        Phase::Observe | Phase::DisappearRead { .. } => "PodRead",
        Phase::Deleting { .. } => "Deleted",
        Phase::RetryWait | Phase::DisappearWait { .. } => "Waited",
        Phase::Listing => "Listed",
        Phase::DeletingSecret { .. } => "Deleted",
        Phase::RemovingPolicy => "PolicyRemoved",
        Phase::SettlingWorkspace => "WorkspaceSettled",
        Phase::Done(_) => "nothing",
    }
}

#[cfg(test)]
mod tests;
