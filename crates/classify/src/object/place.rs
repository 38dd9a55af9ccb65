//! The deploy's prepare step for one of the agent's other objects (deploy.md § Egress control,
//! § Persistent workspace): create it first (one round trip when there is none); when the name is
//! taken, read it and decide: ours is used, or updated fenced by the read when its kind updates
//! and it differs; a foreign or deleting one is refused. Gone since the create that found it: one
//! create more, and a second `AlreadyExists` gives up (another writer is at work).
//!
//! Pure: a sans-IO machine, requests out and answers in.

use super::vocabulary::{
    Found, Kind, ObjectAnswer, ObjectRequest, Problem, Step, fence_of, unexpected,
};
use crate::answer::CreateAnswer;
use crate::binding::Owner;

/// What [`Place`] did with the object, when it is in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placed<S> {
    /// A create of this call made it.
    Created,
    /// It was found ours and is used as it is; what the read found.
    Found(S),
    /// It was found ours and differing, and the update fenced by the read replaced it.
    Updated,
}

/// What [`Place`] ends with.
pub type PlaceOutput<K> = Result<Placed<<K as Kind>::Shape>, <K as Kind>::Failure>;

/// Puts the agent's object of kind `K` in place as the deploy builds it.
#[derive(Clone, Debug)]
pub struct Place<K: Kind> {
    owner: Owner,
    wanted: K::Shape,
    phase: Phase<K>,
}

#[derive(Clone, Debug)]
enum Phase<K: Kind> {
    Start,
    /// The create was sent; `again` when it is the one more after the object vanished.
    Creating {
        again: bool,
    },
    Reading,
    Updating,
    Done(PlaceOutput<K>),
}

impl<K: Kind> Place<K> {
    /// The machine for the object of `owner` that the deploy builds with shape `wanted`.
    pub fn new(owner: Owner, wanted: K::Shape) -> Place<K> {
        Place {
            owner,
            wanted,
            phase: Phase::Start,
        }
    }

    /// Feed the answer to the previous request ([`ObjectAnswer::Start`] first); get the next
    /// request or the end, which every later step repeats.
    pub fn step(&mut self, answer: ObjectAnswer<K>) -> Step<K, PlaceOutput<K>> {
        let phase = std::mem::replace(&mut self.phase, Phase::Start);
        let step = self.transition(phase, answer);
        if let Step::Done(output) = &step {
            self.phase = Phase::Done(output.clone());
        }
        step
    }

    fn transition(&mut self, phase: Phase<K>, answer: ObjectAnswer<K>) -> Step<K, PlaceOutput<K>> {
        match (phase, answer) {
            (Phase::Done(output), _) => Step::Done(output),
            (Phase::Start, ObjectAnswer::Start) => self.create(false),
            (Phase::Creating { again }, ObjectAnswer::Created(created)) => match created {
                Ok(CreateAnswer::Created) => Step::Done(Ok(Placed::Created)),
                Ok(CreateAnswer::AlreadyExists) if again => problem(Problem::Raced),
                Ok(CreateAnswer::AlreadyExists) => {
                    self.request(Phase::Reading, ObjectRequest::Read)
                }
                Err(failure) => Step::Done(Err(K::failed(failure))),
            },
            (Phase::Reading, ObjectAnswer::Read(read)) => match read {
                Ok(Some(found)) => self.decide(found),
                // Deleted since the create found it: one create more, then give up.
                Ok(None) => self.create(true),
                Err(failure) => Step::Done(Err(K::failed(failure))),
            },
            (Phase::Updating, ObjectAnswer::Updated(updated)) => match updated {
                Ok(true) => Step::Done(Ok(Placed::Updated)),
                // A 409 (changed since the read) or a 404 (gone since the read): someone else
                // is changing it, and the deploy never overwrites a newer object.
                Ok(false) => problem(Problem::Raced),
                Err(failure) if failure.reason() == Some("NotFound") => problem(Problem::Raced),
                Err(failure) => Step::Done(Err(K::failed(failure))),
            },
            (_, _) => Step::Done(Err(K::failed(unexpected("a prepare")))),
        }
    }

    fn create(&mut self, again: bool) -> Step<K, PlaceOutput<K>> {
        self.request(Phase::Creating { again }, ObjectRequest::Create)
    }

    fn request(&mut self, phase: Phase<K>, request: ObjectRequest<K>) -> Step<K, PlaceOutput<K>> {
        self.phase = phase;
        Step::Request(request)
    }

    /// The object found under the name: foreign (or unfenceable), deleting, to update, or used.
    fn decide(&mut self, found: Found<K>) -> Step<K, PlaceOutput<K>> {
        let Some(fence) = fence_of(&found.marks, &self.owner) else {
            return problem(Problem::Foreign);
        };
        if found.marks.deletion_marked {
            // A pod created now could start without the object (an unisolated pod once the
            // policy's deletion completes) or never start (its claim gone).
            return problem(Problem::Deleting);
        }
        if K::UPDATES && K::differs(&self.wanted, &found.shape) {
            return self.request(Phase::Updating, ObjectRequest::Update(fence));
        }
        Step::Done(Ok(Placed::Found(found.shape)))
    }
}

fn problem<K: Kind>(problem: Problem) -> Step<K, PlaceOutput<K>> {
    Step::Done(Err(K::problem(problem)))
}
