//! `apiary renew` as a sans-IO machine (deploy.md § Expiry): observe the agent's pod and the
//! apiserver's clock in one quorum list, then write the new expiry guarded by the
//! `resourceVersion` of that very observation; a conflict re-observes and tries again within the
//! deadline.
//!
//! Pure. The write ([`ExpiryWrite`]) can only be built here, from a verified observation, and
//! carries that observation's `resourceVersion`: the machine never writes with a version it has
//! not just seen, so it never overwrites a change it has not seen. The new instant is the
//! observation's server clock plus the TTL, never a local clock.

use crate::binding::Owner;
use std::time::Duration;

use crate::expiry::{expires_at, expiry_of};
use crate::failure::RequestFailure;
use crate::request::{Answer, ExpiryWrite, Listing, Request, Step, WriteAnswer};
use crate::startup::{Decoded, StartupState};
use crate::verify::verify_pod;
use crate::wait::Deadline;

/// What one renew works with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenewSpec {
    /// The agent's pod name.
    pub pod_name: String,
    /// The binding and full agent id verification compares against.
    pub owner: Owner,
    /// The new TTL, counted from the server clock of the observation that authorises the write.
    pub ttl_secs: u64,
    /// The operation deadline (conflict retries stop there).
    pub deadline: Duration,
    /// The pause before re-observing after a second or later conflict in a row.
    pub backoff: Duration,
}

/// What one step of the renew machine returns.
pub type RenewStep = Step<Result<Renewed, RenewError>>;

/// A renew that landed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renewed {
    /// The pod renewed.
    pub pod: String,
    /// The expiry before, when the pod had a well-formed one.
    pub previous: Option<i64>,
    /// The new expiry (apiserver clock, Unix seconds).
    pub expires_at: i64,
    /// The server clock it was computed from.
    pub server_now: i64,
    /// How many conflicts were retried.
    pub conflicts: u32,
}

/// Why a renew did not land. Nothing was written in any of these cases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RenewError {
    /// No pod of this agent.
    Absent {
        /// The pod name.
        pod: String,
    },
    /// The name holds a pod apiary cannot verify as this agent's.
    Foreign {
        /// The pod name.
        pod: String,
    },
    /// The pod is being deleted.
    Deleting {
        /// The pod name.
        pod: String,
    },
    /// The agent's container has terminated: GC collects it whatever its expiry.
    Terminated {
        /// The pod name.
        pod: String,
    },
    /// The list answer had no usable `Date` header: no server clock to count from.
    NoServerClock,
    /// Conflicts kept coming until the deadline.
    Deadline {
        /// The pod name.
        pod: String,
        /// The deadline.
        deadline: Duration,
        /// How many conflicts were met.
        conflicts: u32,
    },
    /// A request failed.
    Request(RequestFailure),
}

impl std::fmt::Display for RenewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RenewError::Absent { pod } => write!(f, "pod {pod} does not exist: nothing to renew"),
            RenewError::Foreign { pod } => {
                write!(
                    f,
                    "pod {pod} is not apiary's pod for this agent: not changed"
                )
            }
            RenewError::Deleting { pod } => write!(f, "pod {pod} is being deleted"),
            RenewError::Terminated { pod } => {
                write!(f, "the agent container of pod {pod} has terminated")
            }
            RenewError::NoServerClock => f.write_str(
                "the apiserver's answer carried no usable Date header: no server clock to count \
                 the ttl from",
            ),
            RenewError::Deadline {
                pod,
                deadline,
                conflicts,
            } => write!(
                f,
                "pod {pod} kept changing: {conflicts} conflict(s) within {}s, nothing overwritten",
                deadline.as_secs()
            ),
            RenewError::Request(failure) => write!(f, "{failure}"),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Phase {
    #[default]
    Start,
    Observing,
    Writing {
        previous: Option<i64>,
        server_now: i64,
    },
    Waiting,
    Done(Result<Renewed, RenewError>),
}

/// One renew. Feed [`Answer::Start`] first, then the answer to each effect, with a monotonic
/// `now` at every step (the deadline counts from the first).
#[derive(Clone, Debug)]
pub struct RenewMachine {
    spec: RenewSpec,
    phase: Phase,
    deadline: Deadline,
    conflicts: u32,
}

impl RenewMachine {
    /// A machine for one renew.
    pub fn new(spec: RenewSpec) -> RenewMachine {
        RenewMachine {
            deadline: Deadline::new(spec.deadline, spec.backoff),
            spec,
            phase: Phase::Start,
            conflicts: 0,
        }
    }

    fn transition(&mut self, phase: Phase, now: Duration, event: Answer) -> RenewStep {
        match (phase, event) {
            (Phase::Done(result), _) => Step::Done(result),
            (Phase::Start, Answer::Start) | (Phase::Waiting, Answer::Waited) => self.observe(now),
            (Phase::Observing, Answer::Listed(listed)) => match listed {
                Ok(listing) => self.decide(&listing),
                Err(failure) => Step::Done(Err(RenewError::Request(failure))),
            },
            (
                Phase::Writing {
                    previous,
                    server_now,
                },
                Answer::Written(answer),
            ) => match answer {
                Ok(WriteAnswer::Written) => {
                    // The instant written is the one computed from that observation.
                    let expires_at = expires_at(server_now, self.spec.ttl_secs);
                    Step::Done(Ok(Renewed {
                        pod: self.spec.pod_name.clone(),
                        previous,
                        expires_at,
                        server_now,
                        conflicts: self.conflicts,
                    }))
                }
                // Someone changed the pod since the observation: never overwrite it blind,
                // observe again (the first time at once, then after a pause).
                Ok(WriteAnswer::Conflict) => {
                    self.conflicts += 1;
                    if self.conflicts == 1 {
                        self.observe(now)
                    } else {
                        self.wait(now)
                    }
                }
                // Gone since the observation: the next observation reports it.
                Ok(WriteAnswer::NotFound) => self.observe(now),
                Err(failure) => Step::Done(Err(RenewError::Request(failure))),
            },
            (_, _) => Step::Done(Err(RenewError::Request(RequestFailure::unsent(
                "internal error in apiary: the driver answered a renew effect that was not \
                 asked for",
            )))),
        }
    }

    fn observe(&mut self, now: Duration) -> RenewStep {
        if self.deadline.expired(now) {
            return Step::Done(Err(RenewError::Deadline {
                pod: self.spec.pod_name.clone(),
                deadline: self.deadline.limit(),
                conflicts: self.conflicts,
            }));
        }
        self.phase = Phase::Observing;
        Step::Request(Request::List {
            secrets: false,
            dropping: None,
        })
    }

    fn wait(&mut self, now: Duration) -> RenewStep {
        let max = self.deadline.wait_max(now);
        if max.is_zero() {
            return self.observe(now);
        }
        self.phase = Phase::Waiting;
        Step::Request(Request::Sleep(max))
    }

    /// Decide from one observation: write guarded by its `resourceVersion`, or fail.
    fn decide(&mut self, listing: &Listing) -> RenewStep {
        let pod_name = &self.spec.pod_name;
        let fail = |error| Step::Done(Err(error));
        let Some(pod) = listing
            .pods
            .iter()
            .find(|p| p.marks.name.as_deref() == Some(pod_name.as_str()))
        else {
            return fail(RenewError::Absent {
                pod: pod_name.clone(),
            });
        };
        let Some(verified) = verify_pod(pod, &self.spec.owner) else {
            return fail(RenewError::Foreign {
                pod: pod_name.clone(),
            });
        };
        if verified.deletion_marked() {
            return fail(RenewError::Deleting {
                pod: pod_name.clone(),
            });
        }
        if verified.decode() == Decoded::Settled(StartupState::Terminated) {
            return fail(RenewError::Terminated {
                pod: pod_name.clone(),
            });
        }
        let Some(server_now) = listing.server_now else {
            return fail(RenewError::NoServerClock);
        };
        let write = ExpiryWrite::new(
            verified.name().to_owned(),
            verified.fence().resource_version().to_owned(),
            expires_at(server_now, self.spec.ttl_secs),
        );
        self.phase = Phase::Writing {
            previous: expiry_of(&pod.marks),
            server_now,
        };
        Step::Request(Request::WriteExpiry(write))
    }
}

crate::progress::machine!(RenewMachine => Result<Renewed, RenewError>, deadline: deadline);

#[cfg(test)]
mod tests;
