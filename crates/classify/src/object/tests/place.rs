//! `Place` as data: the prepare step of the policy and of the claim, row by row.

use super::*;

/// The policy's prepare step, row by row: created at once; taken and ours (kept, or updated
/// fenced by the read, the update's 409 and 404 a conflict); foreign; deleting; gone since the
/// create (one create more); and every failure passed on.
#[test]
fn the_policy_is_created_kept_updated_or_refused() {
    use CreateAnswer::{AlreadyExists as Taken, Created};
    use ObjectRequest::{Create, Read, Update};
    let stale = ObjectMarks {
        create_intent: Some("intent-b".into()),
        ..ours("u1", "7")
    };
    let unannotated = ObjectMarks {
        create_intent: None,
        ..ours("u1", "7")
    };
    let update = |marks: ObjectMarks, answer| {
        vec![
            created(Taken),
            policy_read(marks),
            ObjectAnswer::Updated(answer),
        ]
    };
    let rows: Vec<Row<Policy, PlaceOutput<Policy>>> = vec![
        (
            "created",
            vec![created(Created)],
            vec![Create],
            Ok(Placed::Created),
        ),
        (
            "the create fails",
            vec![ObjectAnswer::Created(Err(fail(403, "Forbidden")))],
            vec![Create],
            Err(PolicyFailure::Failed(fail(403, "Forbidden"))),
        ),
        (
            "ours, as wanted",
            vec![created(Taken), policy_read(ours("u1", "7"))],
            vec![Create, Read],
            Ok(Placed::Found(Some(INTENT.into()))),
        ),
        (
            "ours, another intent: updated",
            update(stale.clone(), Ok(true)),
            vec![Create, Read, Update(fence("u1", "7"))],
            Ok(Placed::Updated),
        ),
        (
            "ours, no intent: updated",
            update(unannotated, Ok(true)),
            vec![Create, Read, Update(fence("u1", "7"))],
            Ok(Placed::Updated),
        ),
        (
            "the update loses to a write (409)",
            update(stale.clone(), Ok(false)),
            vec![Create, Read, Update(fence("u1", "7"))],
            policy_problem(PolicyProblem::Conflict),
        ),
        (
            "gone since the read (404)",
            update(stale.clone(), Err(fail(404, "NotFound"))),
            vec![Create, Read, Update(fence("u1", "7"))],
            policy_problem(PolicyProblem::Conflict),
        ),
        (
            "the update fails",
            update(stale.clone(), Err(fail(403, "Forbidden"))),
            vec![Create, Read, Update(fence("u1", "7"))],
            Err(PolicyFailure::Failed(fail(403, "Forbidden"))),
        ),
        (
            "ours, deleting: never updated",
            vec![created(Taken), policy_read(deleting(stale))],
            vec![Create, Read],
            policy_problem(PolicyProblem::Deleting),
        ),
        (
            "ours, deleting, as wanted",
            vec![created(Taken), policy_read(deleting(ours("u1", "7")))],
            vec![Create, Read],
            policy_problem(PolicyProblem::Deleting),
        ),
        (
            "the read fails",
            vec![
                created(Taken),
                ObjectAnswer::Read(Err(fail(500, "InternalError"))),
            ],
            vec![Create, Read],
            Err(PolicyFailure::Failed(fail(500, "InternalError"))),
        ),
        (
            "gone since the create: created again",
            vec![
                created(Taken),
                ObjectAnswer::Read(Ok(None)),
                created(Created),
            ],
            vec![Create, Read, Create],
            Ok(Placed::Created),
        ),
        (
            "gone since the create, taken again",
            vec![created(Taken), ObjectAnswer::Read(Ok(None)), created(Taken)],
            vec![Create, Read, Create],
            policy_problem(PolicyProblem::Conflict),
        ),
        (
            "gone since the create, the second create fails",
            vec![
                created(Taken),
                ObjectAnswer::Read(Ok(None)),
                ObjectAnswer::Created(Err(fail(500, "InternalError"))),
            ],
            vec![Create, Read, Create],
            Err(PolicyFailure::Failed(fail(500, "InternalError"))),
        ),
    ];
    for (name, answers, requests, output) in rows {
        assert_eq!(place_policy(answers), (requests, output), "{name}");
    }
    for marks in foreigners() {
        for marks in [marks.clone(), deleting(marks)] {
            assert_eq!(
                place_policy(vec![created(Taken), policy_read(marks.clone())]),
                (vec![Create, Read], policy_problem(PolicyProblem::Foreign)),
                "{marks:?}"
            );
        }
    }
}

/// The claim's prepare step: ours is used as it is, whatever its size (never an update); a
/// foreign or deleting one is refused; taken again after it vanished is contended.
#[test]
fn the_claim_is_created_or_used_as_it_is_and_never_updated() {
    use CreateAnswer::{AlreadyExists as Taken, Created};
    use ObjectRequest::{Create, Read};
    let taken = || ObjectAnswer::<Claim>::Created(Ok(Taken));
    let problem = |p| Err(ClaimFailure::Problem(p));
    let rows: Vec<Row<Claim, PlaceOutput<Claim>>> = vec![
        (
            "created",
            vec![ObjectAnswer::Created(Ok(Created))],
            vec![Create],
            Ok(Placed::Created),
        ),
        (
            "ours, as asked",
            vec![taken(), claim_read(ours("u1", "7"), size("1024Mi"))],
            vec![Create, Read],
            Ok(Placed::Found(size("1024Mi"))),
        ),
        (
            "ours, another size: used as it is",
            vec![taken(), claim_read(ours("u1", "7"), size("5Gi"))],
            vec![Create, Read],
            Ok(Placed::Found(size("5Gi"))),
        ),
        (
            "ours, deleting",
            vec![taken(), claim_read(deleting(ours("u1", "7")), size("1Gi"))],
            vec![Create, Read],
            problem(ClaimProblem::Deleting),
        ),
        (
            "foreign",
            vec![taken(), claim_read(foreigners()[0].clone(), size("1Gi"))],
            vec![Create, Read],
            problem(ClaimProblem::Foreign),
        ),
        (
            "gone since the create, taken again",
            vec![taken(), ObjectAnswer::Read(Ok(None)), taken()],
            vec![Create, Read, Create],
            problem(ClaimProblem::Contended),
        ),
        (
            "the read fails",
            vec![taken(), ObjectAnswer::Read(Err(fail(403, "Forbidden")))],
            vec![Create, Read],
            Err(ClaimFailure::Failed(fail(403, "Forbidden"))),
        ),
    ];
    for (name, answers, requests, output) in rows {
        assert_eq!(place_claim(answers), (requests, output), "{name}");
    }
}
