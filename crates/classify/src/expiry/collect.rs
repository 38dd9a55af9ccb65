//! Collecting an expired agent (deploy.md § Expiry): the decision whether the agent's pod has
//! expired on the apiserver's clock, and the collection as a sans-IO machine — a fenced,
//! graceful delete with the fence of the very listing that showed it expired, the wait for its
//! disappearance, then its Secret when no listed pod references it.
//!
//! Pure. Terminated pods are not this machine's: the GC pass collects them without waiting
//! (deploy.md § Execution). A pod without a well-formed expiry, or a listing without a server
//! clock, is never collectable: no local clock and no ambiguity ever kills a live agent.

use crate::binding::Owner;
use std::time::Duration;

use super::rules::{expiry_of, is_expired};
use crate::answer::DeleteAnswer;
use crate::facts::{ObservedPod, ObservedSecret};
use crate::failure::RequestFailure;
use crate::request::{Answer, Listing, Request, Step};
use crate::startup::{Decoded, StartupState};
use crate::verify::{PodDeletion, SecretDeletion, verify_pod, verify_secret};
use crate::wait::{Deadline, Disappearance, disappearance};

/// What the listing says about the agent's pod and its expiry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpiryDecision {
    /// No pod under the agent's name.
    Absent,
    /// The name holds a pod apiary cannot verify as this agent's: never touched.
    Foreign,
    /// Ours, but without a (well-formed) expiry.
    NoExpiry,
    /// Ours with an expiry, but the listing had no server clock: nothing is decided.
    NoClock {
        /// The recorded expiry.
        expires_at: i64,
    },
    /// Ours, not yet expired.
    Alive {
        /// The recorded expiry.
        expires_at: i64,
    },
    /// Expired, but already being deleted (only awaited by whoever deleted it).
    Deleting,
    /// Expired and terminated: the GC pass collects it.
    Terminated,
    /// Expired and alive: delete it with this observation's fence.
    Collect {
        /// The fenced delete.
        deletion: PodDeletion,
        /// The Secret it references, to delete once it is gone.
        secret: Option<String>,
        /// The recorded expiry.
        expires_at: i64,
    },
}

/// Decide about the agent's pod `pod_name` from one quorum listing with its server clock.
pub fn decide_expiry(
    pods: &[ObservedPod],
    pod_name: &str,
    owner: &Owner,
    server_now: Option<i64>,
) -> ExpiryDecision {
    let Some(pod) = pods
        .iter()
        .find(|p| p.marks.name.as_deref() == Some(pod_name))
    else {
        return ExpiryDecision::Absent;
    };
    let Some(verified) = verify_pod(pod, owner) else {
        return ExpiryDecision::Foreign;
    };
    let Some(expires_at) = expiry_of(&pod.marks) else {
        return ExpiryDecision::NoExpiry;
    };
    let Some(now) = server_now else {
        return ExpiryDecision::NoClock { expires_at };
    };
    if !is_expired(expires_at, now) {
        return ExpiryDecision::Alive { expires_at };
    }
    if verified.deletion_marked() {
        return ExpiryDecision::Deleting;
    }
    if verified.decode() == Decoded::Settled(StartupState::Terminated) {
        return ExpiryDecision::Terminated;
    }
    ExpiryDecision::Collect {
        deletion: verified.deletion(),
        secret: verified.facts().env_from_secret.clone(),
        expires_at,
    }
}

/// The Secrets to delete after the collected pod is gone: the verified Secret `secret` if it is
/// listed and no listed pod (ours or not) references it.
pub fn secrets_after_collection(
    secret: &str,
    pods: &[ObservedPod],
    secrets: &[ObservedSecret],
    owner: &Owner,
) -> Vec<SecretDeletion> {
    if pods
        .iter()
        .any(|p| p.facts.env_from_secret.as_deref() == Some(secret))
    {
        return Vec::new();
    }
    secrets
        .iter()
        .filter(|s| s.marks.name.as_deref() == Some(secret))
        .filter_map(|s| verify_secret(s, owner))
        .filter_map(|s| s.deletion())
        .take(1)
        .collect()
}

/// What one collection works with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpireSpec {
    /// The agent's pod name.
    pub pod_name: String,
    /// The binding and full agent id verification compares against.
    pub owner: Owner,
    /// Stop after the decision (reads only).
    pub dry_run: bool,
    /// The bound of the wait for disappearance.
    pub deadline: Duration,
    /// The poll interval of that wait.
    pub poll: Duration,
}

/// What one step of the expiry collection machine returns.
pub type ExpireStep = Step<Result<ExpireReport, ExpireError>>;

/// What one collection did (or, in a dry run, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpireReport {
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// The expired pod collected (planned in a dry run).
    pub pod: Option<String>,
    /// Its recorded expiry.
    pub expired_at: Option<i64>,
    /// Secrets deleted (planned in a dry run).
    pub secrets: Vec<String>,
    /// A concurrent deploy put a new pod under the name while this one was awaited; the new
    /// pod was left untouched.
    pub replaced: bool,
    /// Individual Secret delete failures.
    pub failures: Vec<RequestFailure>,
}

/// Why a collection failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpireError {
    /// The expired pod did not disappear within the deadline; its Secret was kept.
    Timeout {
        /// The pod.
        pod: String,
        /// The bound.
        deadline: Duration,
    },
    /// A list, read or pod delete failed.
    Failed(RequestFailure),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Phase {
    #[default]
    Start,
    Listing,
    Deleting {
        uid: String,
    },
    Waiting {
        uid: String,
    },
    Rereading {
        uid: String,
    },
    ListingSecrets,
    DeletingSecret(String),
    Done(Result<ExpireReport, ExpireError>),
}

/// One collection of an expired agent. Feed [`Answer::Start`] first, then each answer,
/// with a monotonic `now` (the deadline counts from the first step).
#[derive(Clone, Debug)]
pub struct ExpireMachine {
    spec: ExpireSpec,
    phase: Phase,
    deadline: Deadline,
    report: ExpireReport,
    secret: Option<String>,
    pending: Vec<SecretDeletion>,
}

impl ExpireMachine {
    /// A machine for one collection.
    pub fn new(spec: ExpireSpec) -> ExpireMachine {
        ExpireMachine {
            deadline: Deadline::new(spec.deadline, spec.poll),
            report: ExpireReport {
                dry_run: spec.dry_run,
                ..ExpireReport::default()
            },
            spec,
            phase: Phase::Start,
            secret: None,
            pending: Vec::new(),
        }
    }

    fn finish_ok(&mut self) -> ExpireStep {
        Step::Done(Ok(std::mem::take(&mut self.report)))
    }

    fn transition(&mut self, phase: Phase, now: Duration, event: Answer) -> ExpireStep {
        match (phase, event) {
            (Phase::Done(result), _) => Step::Done(result),
            (Phase::Start, Answer::Start) => {
                self.phase = Phase::Listing;
                Step::Request(Request::List { secrets: false })
            }
            (Phase::Listing, Answer::Listed(listed)) => match listed {
                Ok(listing) => self.decide(now, &listing),
                Err(failure) => Step::Done(Err(ExpireError::Failed(failure))),
            },
            (Phase::Deleting { uid }, Answer::Deleted(answer)) => match answer {
                Ok(DeleteAnswer::Accepted) => self.wait(now, uid, None),
                Ok(DeleteAnswer::NotFound) => self.list_secrets(),
                // The pod changed since the listing (renewed, perhaps): decide again on a
                // fresh listing, never with the old fence.
                Ok(DeleteAnswer::PreconditionFailed) => {
                    self.report.pod = None;
                    self.report.expired_at = None;
                    self.phase = Phase::Listing;
                    Step::Request(Request::List { secrets: false })
                }
                Err(failure) => Step::Done(Err(ExpireError::Failed(failure))),
            },
            (Phase::Waiting { uid }, Answer::Waited) => {
                self.phase = Phase::Rereading { uid };
                Step::Request(Request::GetPod {
                    name: self.spec.pod_name.clone(),
                })
            }
            (Phase::Rereading { uid }, Answer::PodRead(read)) => match read {
                Ok(pod) => match disappearance(&uid, pod.as_ref()) {
                    Disappearance::Gone => self.list_secrets(),
                    Disappearance::Replaced => {
                        self.report.replaced = true;
                        self.list_secrets()
                    }
                    Disappearance::Present => {
                        let rv = pod.and_then(|p| p.marks.resource_version);
                        self.wait(now, uid, rv)
                    }
                },
                Err(failure) => Step::Done(Err(ExpireError::Failed(failure))),
            },
            (Phase::ListingSecrets, Answer::Listed(listed)) => match listed {
                Ok(listing) => {
                    let secret = self.secret.clone().unwrap_or_default();
                    self.pending = secrets_after_collection(
                        &secret,
                        &listing.pods,
                        &listing.secrets,
                        &self.spec.owner,
                    );
                    self.next_secret()
                }
                Err(failure) => Step::Done(Err(ExpireError::Failed(failure))),
            },
            (Phase::DeletingSecret(name), Answer::Deleted(answer)) => {
                match answer {
                    Ok(DeleteAnswer::Accepted) => self.report.secrets.push(name),
                    Ok(DeleteAnswer::NotFound | DeleteAnswer::PreconditionFailed) => {}
                    Err(failure) => self.report.failures.push(failure),
                }
                self.next_secret()
            }
            (_, _) => Step::Done(Err(ExpireError::Failed(RequestFailure::unsent(
                "internal error in apiary: the driver answered an expiry effect that was not \
                 asked for",
            )))),
        }
    }

    fn decide(&mut self, now: Duration, listing: &Listing) -> ExpireStep {
        match decide_expiry(
            &listing.pods,
            &self.spec.pod_name,
            &self.spec.owner,
            listing.server_now,
        ) {
            ExpiryDecision::Collect {
                deletion,
                secret,
                expires_at,
            } => {
                self.report.pod = Some(deletion.name().to_owned());
                self.report.expired_at = Some(expires_at);
                if self.spec.dry_run {
                    self.report.secrets.extend(secret);
                    return self.finish_ok();
                }
                if self.deadline.expired(now) {
                    return Step::Done(Err(ExpireError::Timeout {
                        pod: self.spec.pod_name.clone(),
                        deadline: self.deadline.limit(),
                    }));
                }
                self.secret = secret;
                self.phase = Phase::Deleting {
                    uid: deletion.fence().uid().to_owned(),
                };
                Step::Request(Request::DeletePod(deletion))
            }
            ExpiryDecision::Absent
            | ExpiryDecision::Foreign
            | ExpiryDecision::NoExpiry
            | ExpiryDecision::NoClock { .. }
            | ExpiryDecision::Alive { .. }
            | ExpiryDecision::Deleting
            | ExpiryDecision::Terminated => self.finish_ok(),
        }
    }

    fn wait(&mut self, now: Duration, uid: String, resource_version: Option<String>) -> ExpireStep {
        if self.deadline.expired(now) {
            return Step::Done(Err(ExpireError::Timeout {
                pod: self.spec.pod_name.clone(),
                deadline: self.deadline.limit(),
            }));
        }
        self.phase = Phase::Waiting { uid };
        Step::Request(Request::Wait {
            pod: self.spec.pod_name.clone(),
            resource_version,
            max: self.deadline.wait_max(now),
        })
    }

    fn list_secrets(&mut self) -> ExpireStep {
        if self.secret.is_none() {
            return self.finish_ok();
        }
        self.phase = Phase::ListingSecrets;
        Step::Request(Request::List { secrets: true })
    }

    fn next_secret(&mut self) -> ExpireStep {
        match self.pending.pop() {
            Some(deletion) => {
                self.phase = Phase::DeletingSecret(deletion.name().to_owned());
                Step::Request(Request::DeleteSecret(deletion))
            }
            None => self.finish_ok(),
        }
    }
}

crate::progress::machine!(ExpireMachine => Result<ExpireReport, ExpireError>, deadline: deadline);

#[cfg(test)]
mod tests;
