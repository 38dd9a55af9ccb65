//! The object machines as data (deploy.md § Egress control, § Persistent workspace): each row
//! is the answers fed in, the requests that must come out, in order, and the end. Every branch
//! of `Place` and `Settle` is a row, over the policy and over the claim, and the kinds' data is
//! pinned by literals.

use std::fmt::Debug;

use super::*;
use crate::answer::{CreateAnswer, DeleteAnswer};
use crate::binding::Owner;
use crate::facts::ObjectMarks;
use crate::failure::RequestFailure;
use crate::fence::Fence;
use crate::policy::{Policy, PolicyFailure, PolicyProblem, policy_deletion};
use crate::workspace::{Claim, ClaimFailure, ClaimProblem, ClaimShape, claim_deletion};

mod place;
mod settle;

const AGENT: &str = "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98";
const OTHER: &str = "f9b32d5e68dde69e024b9bb5268f0b7a00000000000000000000000000000000";
const INTENT: &str = "intent-a";

/// A row: its name, the answers fed in, the requests that must come out, and the end.
type Row<K, O> = (&'static str, Vec<ObjectAnswer<K>>, Vec<ObjectRequest<K>>, O);

/// A settle's row: its name, whether it deletes, and as a [`Row`].
type DeleteRow<K> = (
    &'static str,
    bool,
    Vec<ObjectAnswer<K>>,
    Vec<ObjectRequest<K>>,
    SettleOutput<K>,
);

fn owner() -> Owner {
    Owner::apiary(AGENT)
}

/// Our object `name` as read, with `uid`/`rv` and the create intent.
fn ours(uid: &str, rv: &str) -> ObjectMarks {
    ObjectMarks {
        name: Some("obj".into()),
        uid: Some(uid.into()),
        resource_version: Some(rv.into()),
        managed_by: Some("apiary".into()),
        binding_version: Some("1".into()),
        agent_id: Some(AGENT.into()),
        create_intent: Some(INTENT.into()),
        ..ObjectMarks::default()
    }
}

fn deleting(mut marks: ObjectMarks) -> ObjectMarks {
    marks.deletion_marked = true;
    marks
}

/// Marks that are not proven ours, or cannot be fenced; each must be foreign.
fn foreigners() -> Vec<ObjectMarks> {
    let other = ObjectMarks {
        agent_id: Some(OTHER.into()),
        ..ours("u1", "7")
    };
    let unmarked = ObjectMarks {
        managed_by: None,
        ..ours("u1", "7")
    };
    let old_binding = ObjectMarks {
        binding_version: Some("0".into()),
        ..ours("u1", "7")
    };
    let no_uid = ObjectMarks {
        uid: None,
        ..ours("u1", "7")
    };
    let empty_rv = ours("u1", "");
    vec![
        other,
        unmarked,
        old_binding,
        no_uid,
        ours("", "7"),
        empty_rv,
    ]
}

fn fence(uid: &str, rv: &str) -> Fence {
    Fence::new(uid.into(), rv.into())
}

fn fail(code: u16, reason: &str) -> RequestFailure {
    RequestFailure::api(code, reason, "refused")
}

fn policy_read(marks: ObjectMarks) -> ObjectAnswer<Policy> {
    let shape = marks.create_intent.clone();
    ObjectAnswer::Read(Ok(Some(Found { marks, shape })))
}

fn size(size: &str) -> ClaimShape {
    ClaimShape {
        size: Some(size.into()),
        storage_class: None,
    }
}

fn claim_read(marks: ObjectMarks, shape: ClaimShape) -> ObjectAnswer<Claim> {
    ObjectAnswer::Read(Ok(Some(Found { marks, shape })))
}

/// Feed `Start` and then `answers`; the requests asked for and the end. Every answer must be
/// consumed, the end must come right after the last, and a further step must repeat it.
fn run<K: Kind, O: Clone + Debug + PartialEq>(
    mut step: impl FnMut(ObjectAnswer<K>) -> Step<K, O>,
    answers: Vec<ObjectAnswer<K>>,
) -> (Vec<ObjectRequest<K>>, O) {
    let mut requests = Vec::new();
    let mut answers = answers.into_iter();
    let mut next = step(ObjectAnswer::Start);
    loop {
        match next {
            Step::Request(request) => {
                requests.push(request);
                let answer = answers.next().expect("an answer for every request");
                next = step(answer);
            }
            Step::Done(output) => {
                assert_eq!(answers.next(), None, "the end came before the last answer");
                let again = step(ObjectAnswer::Created(Ok(CreateAnswer::Created)));
                assert_eq!(again, Step::Done(output.clone()), "a finish is repeated");
                return (requests, output);
            }
        }
    }
}

fn place_policy(
    answers: Vec<ObjectAnswer<Policy>>,
) -> (Vec<ObjectRequest<Policy>>, PlaceOutput<Policy>) {
    let mut machine = Place::<Policy>::new(owner(), Some(INTENT.into()));
    run(|answer| machine.step(answer), answers)
}

fn place_claim(
    answers: Vec<ObjectAnswer<Claim>>,
) -> (Vec<ObjectRequest<Claim>>, PlaceOutput<Claim>) {
    let mut machine = Place::<Claim>::new(owner(), size("1Gi"));
    run(|answer| machine.step(answer), answers)
}

fn settle<K: Kind>(
    delete: bool,
    answers: Vec<ObjectAnswer<K>>,
) -> (Vec<ObjectRequest<K>>, SettleOutput<K>) {
    let mut machine = Settle::<K>::new(owner(), delete);
    run(|answer| machine.step(answer), answers)
}

fn created(answer: CreateAnswer) -> ObjectAnswer<Policy> {
    ObjectAnswer::Created(Ok(answer))
}

fn policy_problem(problem: PolicyProblem) -> PlaceOutput<Policy> {
    Err(PolicyFailure::Problem(problem))
}

/// An answer to no request of the machine (a bug in the shell) ends it with an internal error,
/// whatever the phase, and the end is repeated.
#[test]
fn an_answer_not_asked_for_is_an_internal_error() {
    let internal =
        |failure: &RequestFailure| failure.to_string().contains("internal error in apiary");
    let policy_failure = |output: PlaceOutput<Policy>| match output {
        Err(PolicyFailure::Failed(failure)) => internal(&failure),
        _ => false,
    };
    let stray = || ObjectAnswer::<Policy>::Deleted(Ok(DeleteAnswer::Accepted));
    let mut place = Place::<Policy>::new(owner(), Some(INTENT.into()));
    let Step::Done(output) = place.step(stray()) else {
        panic!("a stray first answer ends it")
    };
    assert!(policy_failure(output));
    for answers in [
        vec![stray()],
        vec![created(CreateAnswer::AlreadyExists), stray()],
        vec![
            created(CreateAnswer::AlreadyExists),
            policy_read(ObjectMarks {
                create_intent: None,
                ..ours("u1", "7")
            }),
            stray(),
        ],
    ] {
        let (_, output) = place_policy(answers);
        assert!(policy_failure(output));
    }
    let mut settle = Settle::<Claim>::new(owner(), true);
    let Step::Done(Err(failure)) = settle.step(ObjectAnswer::Read(Ok(None))) else {
        panic!("a stray first answer ends it")
    };
    assert!(internal(&failure));
    for answers in [
        vec![ObjectAnswer::<Claim>::Updated(Ok(true))],
        vec![
            claim_read(ours("u1", "7"), size("1Gi")),
            ObjectAnswer::Read(Ok(None)),
        ],
    ] {
        let (_, output) = self::settle::<Claim>(true, answers);
        assert!(matches!(output, Err(failure) if internal(&failure)));
    }
}

/// The kinds' data, pinned: the policy updates and deletes once, skipping a refused read; the
/// claim never updates, reads three times, and skips nothing; each names its problems.
#[test]
fn the_kinds_differ_only_in_data() {
    const { assert!(<Policy as Kind>::UPDATES) };
    assert_eq!(<Policy as Kind>::DELETE_ATTEMPTS, 1);
    const { assert!(<Policy as Kind>::SKIPS_FORBIDDEN_READ) };
    const { assert!(!<Claim as Kind>::UPDATES) };
    assert_eq!(<Claim as Kind>::DELETE_ATTEMPTS, 3);
    const { assert!(!<Claim as Kind>::SKIPS_FORBIDDEN_READ) };

    let intent = |i: &str| Some(i.to_owned());
    assert!(!Policy::differs(&intent("a"), &intent("a")));
    assert!(Policy::differs(&intent("a"), &intent("b")));
    assert!(Policy::differs(&intent("a"), &None));
    assert!(!Claim::differs(&size("1Gi"), &size("1024Mi")));
    assert!(Claim::differs(&size("1Gi"), &size("2Gi")));

    let problems = [Problem::Foreign, Problem::Deleting, Problem::Raced];
    assert_eq!(
        problems.map(Policy::problem),
        [
            PolicyProblem::Foreign,
            PolicyProblem::Deleting,
            PolicyProblem::Conflict
        ]
        .map(PolicyFailure::Problem)
    );
    assert_eq!(
        problems.map(Claim::problem),
        [
            ClaimProblem::Foreign,
            ClaimProblem::Deleting,
            ClaimProblem::Contended
        ]
        .map(ClaimFailure::Problem)
    );
    assert_eq!(
        Policy::failed(fail(500, "x")),
        PolicyFailure::Failed(fail(500, "x"))
    );
    assert_eq!(
        Claim::failed(fail(500, "x")),
        ClaimFailure::Failed(fail(500, "x"))
    );
    assert_eq!(
        Policy::deletion(&ours("u1", "7"), &owner()),
        policy_deletion(&ours("u1", "7"), &owner())
    );
    assert!(Policy::deletion(&ours("u1", "7"), &owner()).is_some());
    assert_eq!(
        Claim::deletion(&ours("u1", "7"), &owner()),
        claim_deletion(&ours("u1", "7"), &owner())
    );
    assert!(Claim::deletion(&ours("u1", "7"), &owner()).is_some());
}

/// The fence of an object proven ours is its uid and resourceVersion; a foreign or unfenceable
/// one has none.
#[test]
fn only_an_object_proven_ours_has_a_fence() {
    assert_eq!(fence_of(&ours("u1", "7"), &owner()), Some(fence("u1", "7")));
    for marks in foreigners() {
        assert_eq!(fence_of(&marks, &owner()), None, "{marks:?}");
    }
}
