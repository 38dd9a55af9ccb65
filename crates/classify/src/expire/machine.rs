//! Collecting an expired agent (deploy.md § Expiry) as a sans-IO machine: a fenced, graceful
//! delete with the fence of the very listing that showed it expired (`decide`), the wait for its
//! disappearance, then its Secret when no listed pod references it.
//!
//! Pure.

use crate::binding::Owner;
use std::time::Duration;

use super::decide::{ExpiryDecision, decide_expiry, secrets_after_collection};
use crate::answer::DeleteAnswer;
use crate::failure::RequestFailure;
use crate::grace::GracePeriod;
use crate::request::{Answer, Listing, Request, Step};
use crate::verify::SecretDeletion;
use crate::wait::{Deadline, Disappearance, disappearance};

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
    /// `gc --grace-period`: the expired pod's delete grace override; `None` keeps the pod's own
    /// (deploy.md § Grace periods).
    pub grace: Option<GracePeriod>,
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
                Step::Request(Request::List {
                    secrets: false,
                    dropping: None,
                })
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
                    Step::Request(Request::List {
                        secrets: false,
                        dropping: None,
                    })
                }
                Err(failure) => Step::Done(Err(ExpireError::Failed(failure))),
            },
            (Phase::Waiting { uid }, Answer::Waited) => {
                self.phase = Phase::Rereading { uid };
                Step::Request(Request::GetPod {
                    name: self.spec.pod_name.clone(),
                    watch_stuck: false,
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
                Step::Request(Request::DeletePod {
                    deletion: deletion.with_grace(self.spec.grace),
                    note: Some("deleting the expired pod"),
                })
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
        Step::Request(Request::List {
            secrets: true,
            dropping: None,
        })
    }

    fn next_secret(&mut self) -> ExpireStep {
        match self.pending.pop() {
            Some(deletion) => {
                self.phase = Phase::DeletingSecret(deletion.name().to_owned());
                Step::Request(Request::DeleteSecret {
                    deletion,
                    warn_on_failure: false,
                })
            }
            None => self.finish_ok(),
        }
    }
}

crate::progress::machine!(ExpireMachine => Result<ExpireReport, ExpireError>, deadline: deadline);

#[cfg(test)]
mod tests;
