//! `Settle` as data: the removal of the policy and the settle of the claim, row by row.

use super::*;

/// The removal of the policy: always a delete; a refused read is done without, any other failure
/// is the caller's; one fenced delete, whose lost precondition gives up at once.
#[test]
fn the_policy_is_removed_fenced_once() {
    use ObjectRequest::{Delete, Read};
    let deletion = policy_deletion(&ours("u1", "7"), &owner()).expect("ours");
    let deleted = |answer| vec![policy_read(ours("u1", "7")), ObjectAnswer::Deleted(answer)];
    let rows: Vec<Row<Policy, SettleOutput<Policy>>> = vec![
        (
            "absent",
            vec![ObjectAnswer::Read(Ok(None))],
            vec![Read],
            Ok(Settled::Absent),
        ),
        (
            "not allowed to read",
            vec![ObjectAnswer::Read(Err(fail(403, "Forbidden")))],
            vec![Read],
            Ok(Settled::Unread(fail(403, "Forbidden"))),
        ),
        (
            "the read fails",
            vec![ObjectAnswer::Read(Err(fail(500, "InternalError")))],
            vec![Read],
            Err(fail(500, "InternalError")),
        ),
        (
            "foreign",
            vec![policy_read(foreigners()[0].clone())],
            vec![Read],
            Ok(Settled::Foreign),
        ),
        (
            "deleted",
            deleted(Ok(DeleteAnswer::Accepted)),
            vec![Read, Delete(deletion.clone())],
            Ok(Settled::Deleted(deletion.clone())),
        ),
        (
            "gone since the read",
            deleted(Ok(DeleteAnswer::NotFound)),
            vec![Read, Delete(deletion.clone())],
            Ok(Settled::Absent),
        ),
        (
            "changed since the read: left to the next undeploy or gc",
            deleted(Ok(DeleteAnswer::PreconditionFailed)),
            vec![Read, Delete(deletion.clone())],
            Ok(Settled::GaveUp),
        ),
        (
            "the delete fails",
            deleted(Err(fail(403, "Forbidden"))),
            vec![Read, Delete(deletion.clone())],
            Err(fail(403, "Forbidden")),
        ),
    ];
    for (name, answers, requests, output) in rows {
        assert_eq!(
            settle::<Policy>(true, answers),
            (requests, output),
            "{name}"
        );
    }
    for marks in foreigners() {
        assert_eq!(
            settle::<Policy>(true, vec![policy_read(marks.clone())]),
            (vec![Read], Ok(Settled::Foreign)),
            "{marks:?}"
        );
    }
}

/// The settle of the claim: kept unless asked to delete it; a read that fails is done without
/// only when nothing is deleted; a lost precondition reads again, three reads in all.
#[test]
fn the_claim_is_kept_or_deleted_fenced_reading_again_up_to_three_times() {
    use ObjectRequest::{Delete, Read};
    let read = |uid: &str, rv: &str| claim_read(ours(uid, rv), size("1Gi"));
    let delete_of = |uid: &str, rv: &str| claim_deletion(&ours(uid, rv), &owner()).expect("ours");
    let lost = || ObjectAnswer::<Claim>::Deleted(Ok(DeleteAnswer::PreconditionFailed));
    let rows: Vec<DeleteRow<Claim>> = vec![
        (
            "kept",
            false,
            vec![read("u1", "7")],
            vec![Read],
            Ok(Settled::Kept),
        ),
        (
            "absent",
            true,
            vec![ObjectAnswer::Read(Ok(None))],
            vec![Read],
            Ok(Settled::Absent),
        ),
        (
            "foreign, kept",
            false,
            vec![claim_read(foreigners()[1].clone(), size("1Gi"))],
            vec![Read],
            Ok(Settled::Foreign),
        ),
        (
            "foreign, never deleted",
            true,
            vec![claim_read(foreigners()[1].clone(), size("1Gi"))],
            vec![Read],
            Ok(Settled::Foreign),
        ),
        (
            "unread, nothing to delete",
            false,
            vec![ObjectAnswer::Read(Err(fail(500, "InternalError")))],
            vec![Read],
            Ok(Settled::Unread(fail(500, "InternalError"))),
        ),
        (
            "not allowed to read it, asked to delete it",
            true,
            vec![ObjectAnswer::Read(Err(fail(403, "Forbidden")))],
            vec![Read],
            Err(fail(403, "Forbidden")),
        ),
        (
            "deleted at the second read",
            true,
            vec![
                read("u1", "7"),
                lost(),
                read("u1", "8"),
                ObjectAnswer::Deleted(Ok(DeleteAnswer::Accepted)),
            ],
            vec![
                Read,
                Delete(delete_of("u1", "7")),
                Read,
                Delete(delete_of("u1", "8")),
            ],
            Ok(Settled::Deleted(delete_of("u1", "8"))),
        ),
        (
            "gone after a lost precondition",
            true,
            vec![read("u1", "7"), lost(), ObjectAnswer::Read(Ok(None))],
            vec![Read, Delete(delete_of("u1", "7")), Read],
            Ok(Settled::Absent),
        ),
        (
            "changed at each of three reads: kept",
            true,
            vec![
                read("u1", "7"),
                lost(),
                read("u1", "8"),
                lost(),
                read("u1", "9"),
                lost(),
            ],
            vec![
                Read,
                Delete(delete_of("u1", "7")),
                Read,
                Delete(delete_of("u1", "8")),
                Read,
                Delete(delete_of("u1", "9")),
            ],
            Ok(Settled::GaveUp),
        ),
        (
            "the delete fails",
            true,
            vec![
                read("u1", "7"),
                ObjectAnswer::Deleted(Err(fail(500, "InternalError"))),
            ],
            vec![Read, Delete(delete_of("u1", "7"))],
            Err(fail(500, "InternalError")),
        ),
    ];
    for (name, delete, answers, requests, output) in rows {
        assert_eq!(
            settle::<Claim>(delete, answers),
            (requests, output),
            "{name}"
        );
    }
}
