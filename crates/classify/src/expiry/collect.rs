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

/// The pods (and, after the pod is gone, Secrets) listed by the agent's selector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpireListing {
    /// The listed pods.
    pub pods: Vec<ObservedPod>,
    /// The listed Secrets (empty for the first listing, which needs only pods).
    pub secrets: Vec<ObservedSecret>,
    /// The pod list's `Date` in Unix seconds.
    pub server_now: Option<i64>,
}

/// The answer to the previous effect.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one event per apiserver request, as the deploy machine's"
)]
pub enum ExpireEvent {
    /// Begin.
    Start,
    /// Answer to [`ExpireEffect::ListPods`] or [`ExpireEffect::ListBoth`].
    Listed(Result<ExpireListing, RequestFailure>),
    /// Answer to [`ExpireEffect::DeletePod`].
    PodDeleted(Result<DeleteAnswer, RequestFailure>),
    /// A [`ExpireEffect::Wait`] ended.
    Waited,
    /// Answer to [`ExpireEffect::GetPod`] (`Ok(None)` = confirmed absent).
    PodRead(Result<Option<ObservedPod>, RequestFailure>),
    /// Answer to [`ExpireEffect::DeleteSecret`].
    SecretDeleted(Result<DeleteAnswer, RequestFailure>),
}

/// The next thing the driver must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpireEffect {
    /// Quorum-list pods by the agent's selector, keeping the `Date` clock.
    ListPods,
    /// Fenced delete with the fence of the listing that showed the pod expired; no grace
    /// override (the pod's own shutdown budget applies).
    DeletePod(PodDeletion),
    /// Wait for a change of the pod, at most `max`.
    Wait {
        /// The pod.
        pod: String,
        /// The resourceVersion last seen.
        resource_version: Option<String>,
        /// The longest wait.
        max: Duration,
    },
    /// Quorum re-read of the pod while awaiting its disappearance.
    GetPod {
        /// The pod.
        name: String,
    },
    /// Quorum-list pods, then Secrets, by the agent's selector.
    ListBoth,
    /// uid-fenced delete of the collected pod's Secret.
    DeleteSecret(SecretDeletion),
    /// Done.
    Finish(Result<ExpireReport, ExpireError>),
}

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

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Start,
    Listing,
    Deleting { uid: String },
    Waiting { uid: String },
    Rereading { uid: String },
    ListingSecrets,
    DeletingSecret(String),
    Done(Result<ExpireReport, ExpireError>),
}

/// One collection of an expired agent. Feed [`ExpireEvent::Start`] first, then each answer,
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

    /// Feed the answer to the previous effect; get the next effect. Once finished, every further
    /// step repeats the `Finish`.
    pub fn step(&mut self, now: Duration, event: ExpireEvent) -> ExpireEffect {
        self.deadline.anchor(now);
        let phase = std::mem::replace(&mut self.phase, Phase::Start);
        let effect = self.transition(now, phase, event);
        if let ExpireEffect::Finish(result) = &effect {
            self.phase = Phase::Done(result.clone());
        }
        effect
    }

    fn finish_ok(&mut self) -> ExpireEffect {
        ExpireEffect::Finish(Ok(std::mem::take(&mut self.report)))
    }

    fn transition(&mut self, now: Duration, phase: Phase, event: ExpireEvent) -> ExpireEffect {
        match (phase, event) {
            (Phase::Done(result), _) => ExpireEffect::Finish(result),
            (Phase::Start, ExpireEvent::Start) => {
                self.phase = Phase::Listing;
                ExpireEffect::ListPods
            }
            (Phase::Listing, ExpireEvent::Listed(listed)) => match listed {
                Ok(listing) => self.decide(now, &listing),
                Err(failure) => ExpireEffect::Finish(Err(ExpireError::Failed(failure))),
            },
            (Phase::Deleting { uid }, ExpireEvent::PodDeleted(answer)) => match answer {
                Ok(DeleteAnswer::Accepted) => self.wait(now, uid, None),
                Ok(DeleteAnswer::NotFound) => self.list_secrets(),
                // The pod changed since the listing (renewed, perhaps): decide again on a
                // fresh listing, never with the old fence.
                Ok(DeleteAnswer::PreconditionFailed) => {
                    self.report.pod = None;
                    self.report.expired_at = None;
                    self.phase = Phase::Listing;
                    ExpireEffect::ListPods
                }
                Err(failure) => ExpireEffect::Finish(Err(ExpireError::Failed(failure))),
            },
            (Phase::Waiting { uid }, ExpireEvent::Waited) => {
                self.phase = Phase::Rereading { uid };
                ExpireEffect::GetPod {
                    name: self.spec.pod_name.clone(),
                }
            }
            (Phase::Rereading { uid }, ExpireEvent::PodRead(read)) => match read {
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
                Err(failure) => ExpireEffect::Finish(Err(ExpireError::Failed(failure))),
            },
            (Phase::ListingSecrets, ExpireEvent::Listed(listed)) => match listed {
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
                Err(failure) => ExpireEffect::Finish(Err(ExpireError::Failed(failure))),
            },
            (Phase::DeletingSecret(name), ExpireEvent::SecretDeleted(answer)) => {
                match answer {
                    Ok(DeleteAnswer::Accepted) => self.report.secrets.push(name),
                    Ok(DeleteAnswer::NotFound | DeleteAnswer::PreconditionFailed) => {}
                    Err(failure) => self.report.failures.push(failure),
                }
                self.next_secret()
            }
            (_, _) => ExpireEffect::Finish(Err(ExpireError::Failed(RequestFailure::unsent(
                "internal error in apiary: the driver answered an expiry effect that was not \
                 asked for",
            )))),
        }
    }

    fn decide(&mut self, now: Duration, listing: &ExpireListing) -> ExpireEffect {
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
                    return ExpireEffect::Finish(Err(ExpireError::Timeout {
                        pod: self.spec.pod_name.clone(),
                        deadline: self.deadline.limit(),
                    }));
                }
                self.secret = secret;
                self.phase = Phase::Deleting {
                    uid: deletion.fence().uid().to_owned(),
                };
                ExpireEffect::DeletePod(deletion)
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

    fn wait(
        &mut self,
        now: Duration,
        uid: String,
        resource_version: Option<String>,
    ) -> ExpireEffect {
        if self.deadline.expired(now) {
            return ExpireEffect::Finish(Err(ExpireError::Timeout {
                pod: self.spec.pod_name.clone(),
                deadline: self.deadline.limit(),
            }));
        }
        self.phase = Phase::Waiting { uid };
        ExpireEffect::Wait {
            pod: self.spec.pod_name.clone(),
            resource_version,
            max: self.deadline.wait_max(now),
        }
    }

    fn list_secrets(&mut self) -> ExpireEffect {
        if self.secret.is_none() {
            return self.finish_ok();
        }
        self.phase = Phase::ListingSecrets;
        ExpireEffect::ListBoth
    }

    fn next_secret(&mut self) -> ExpireEffect {
        match self.pending.pop() {
            Some(deletion) => {
                self.phase = Phase::DeletingSecret(deletion.name().to_owned());
                ExpireEffect::DeleteSecret(deletion)
            }
            None => self.finish_ok(),
        }
    }
}

#[cfg(test)]
mod tests;
