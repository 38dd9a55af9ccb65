//! The removal or settle of one of the agent's other objects (deploy.md § Egress control,
//! § Persistent workspace): read it; leave a foreign one alone; keep ours unless asked to delete
//! it; delete it fenced by the read; after the delete, report it deleted or gone, or, when it
//! changed since the read, read it again up to the kind's attempts and then give up for this
//! call.
//!
//! Pure: a sans-IO machine, requests out and answers in.

use super::vocabulary::{Found, Kind, ObjectAnswer, ObjectRequest, Step, unexpected};
use crate::answer::DeleteAnswer;
use crate::binding::Owner;
use crate::failure::RequestFailure;

/// What [`Settle`] found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled<D> {
    /// No object holds the name (or it went away before the delete): nothing to report.
    Absent,
    /// The read failed, and this settle may do without it (it asked for no delete, or the kind
    /// skips a refused read): nothing to report but a debug line.
    Unread(RequestFailure),
    /// Not apiary's for this agent: left alone, with a warning.
    Foreign,
    /// Ours, and no delete was asked for: kept.
    Kept,
    /// Ours, and this fenced delete was accepted.
    Deleted(D),
    /// It changed at every one of the kind's reads: kept for this call.
    GaveUp,
}

/// What [`Settle`] ends with: a read or delete that failed is the caller's failure.
pub type SettleOutput<K> = Result<Settled<<K as Kind>::Deletion>, RequestFailure>;

/// Reads the agent's object of kind `K` and, when asked, deletes it fenced by that read.
#[derive(Clone, Debug)]
pub struct Settle<K: Kind> {
    owner: Owner,
    delete: bool,
    phase: Phase<K>,
}

#[derive(Clone, Debug)]
enum Phase<K: Kind> {
    Start,
    /// The `attempt`th read (1-based) was sent.
    Reading {
        attempt: u32,
    },
    /// The fenced delete after the `attempt`th read was sent.
    Deleting {
        attempt: u32,
        deletion: K::Deletion,
    },
    Done(SettleOutput<K>),
}

impl<K: Kind> Settle<K> {
    /// The machine for the object of `owner`; `delete` when the operation deletes it
    /// (`--delete-workspace`, once no pod of the agent runs; always for the policy).
    pub fn new(owner: Owner, delete: bool) -> Settle<K> {
        Settle {
            owner,
            delete,
            phase: Phase::Start,
        }
    }

    /// Feed the answer to the previous request ([`ObjectAnswer::Start`] first); get the next
    /// request or the end, which every later step repeats.
    pub fn step(&mut self, answer: ObjectAnswer<K>) -> Step<K, SettleOutput<K>> {
        let phase = std::mem::replace(&mut self.phase, Phase::Start);
        let step = self.transition(phase, answer);
        if let Step::Done(output) = &step {
            self.phase = Phase::Done(output.clone());
        }
        step
    }

    fn transition(&mut self, phase: Phase<K>, answer: ObjectAnswer<K>) -> Step<K, SettleOutput<K>> {
        match (phase, answer) {
            (Phase::Done(output), _) => Step::Done(output),
            (Phase::Start, ObjectAnswer::Start) => self.read(1),
            (Phase::Reading { attempt }, ObjectAnswer::Read(read)) => match read {
                Ok(Some(found)) => self.decide(attempt, &found),
                Ok(None) => Step::Done(Ok(Settled::Absent)),
                Err(failure) if self.may_skip(&failure) => Step::Done(Ok(Settled::Unread(failure))),
                Err(failure) => Step::Done(Err(failure)),
            },
            (Phase::Deleting { attempt, deletion }, ObjectAnswer::Deleted(deleted)) => {
                match deleted {
                    Ok(DeleteAnswer::Accepted) => Step::Done(Ok(Settled::Deleted(deletion))),
                    Ok(DeleteAnswer::NotFound) => Step::Done(Ok(Settled::Absent)),
                    // It changed since the read: read it again and decide afresh.
                    Ok(DeleteAnswer::PreconditionFailed) if attempt < K::DELETE_ATTEMPTS => {
                        self.read(attempt + 1)
                    }
                    Ok(DeleteAnswer::PreconditionFailed) => Step::Done(Ok(Settled::GaveUp)),
                    Err(failure) => Step::Done(Err(failure)),
                }
            }
            (_, _) => Step::Done(Err(unexpected("a settle"))),
        }
    }

    fn read(&mut self, attempt: u32) -> Step<K, SettleOutput<K>> {
        self.phase = Phase::Reading { attempt };
        Step::Request(ObjectRequest::Read)
    }

    /// A read failure this settle goes on without: any, when it deletes nothing (it only loses a
    /// report line); a refusal, when the kind allows it.
    fn may_skip(&self, failure: &RequestFailure) -> bool {
        !self.delete || (K::SKIPS_FORBIDDEN_READ && failure.reason() == Some("Forbidden"))
    }

    /// The object read: foreign, kept, or deleted fenced by this read.
    fn decide(&mut self, attempt: u32, found: &Found<K>) -> Step<K, SettleOutput<K>> {
        let Some(deletion) = K::deletion(&found.marks, &self.owner) else {
            return Step::Done(Ok(Settled::Foreign));
        };
        if !self.delete {
            return Step::Done(Ok(Settled::Kept));
        }
        self.phase = Phase::Deleting {
            attempt,
            deletion: deletion.clone(),
        };
        Step::Request(ObjectRequest::Delete(deletion))
    }
}
