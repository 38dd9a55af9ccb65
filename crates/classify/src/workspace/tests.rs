//! Tests of the workspace claim decisions (deploy.md § Persistent workspace): use ours as it is,
//! never a foreign or unfenceable one, never a deleting one; sizes compared by value; the delete
//! fenced by the observation that proved the claim ours.

use super::*;
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, marks};

fn owner() -> Owner {
    Owner::apiary(AGENT_ID)
}

#[test]
fn ours_has_a_delete_carrying_this_observation() {
    let claim = marks("apiary-x-workspace", "u1", "7");
    let deletion = claim_deletion(&claim, &owner()).expect("ours");
    assert_eq!(deletion.name(), "apiary-x-workspace");
    assert_eq!(deletion.fence().uid(), "u1");
    assert_eq!(deletion.fence().resource_version(), "7");
}

#[test]
fn foreign_and_unfenceable_claims_have_no_delete() {
    let mut other = marks("apiary-x-workspace", "u1", "7");
    other.agent_id = Some(OTHER_AGENT_ID.into());
    let mut unmarked = marks("apiary-x-workspace", "u1", "7");
    unmarked.managed_by = None;
    let mut old_binding = marks("apiary-x-workspace", "u1", "7");
    old_binding.binding_version = Some("0".into());
    let no_uid = marks("apiary-x-workspace", "", "7");
    let no_rv = marks("apiary-x-workspace", "u1", "");
    for claim in [other, unmarked, old_binding, no_uid, no_rv] {
        assert_eq!(claim_deletion(&claim, &owner()), None, "{claim:?}");
    }
    let mut deleting = marks("apiary-x-workspace", "u1", "7");
    deleting.deletion_marked = true;
    // Deleting it again is harmless and still fenced (undeploy may meet it so).
    assert!(claim_deletion(&deleting, &owner()).is_some());
    let mut nameless = marks("apiary-x-workspace", "u1", "7");
    nameless.name = None;
    assert_eq!(claim_deletion(&nameless, &owner()), None);
}

fn shape(size: Option<&str>, class: Option<&str>) -> ClaimShape {
    ClaimShape {
        size: size.map(str::to_owned),
        storage_class: class.map(str::to_owned),
    }
}

#[test]
fn sizes_compare_by_value_and_classes_only_when_asked() {
    let wanted = shape(Some("1Gi"), Some("fast"));
    assert!(claim_differences(&wanted, &shape(Some("1024Mi"), Some("fast"))).is_empty());
    assert!(claim_differences(&wanted, &shape(Some("1Gi"), Some("fast"))).is_empty());
    assert_eq!(
        claim_differences(&wanted, &shape(Some("2Gi"), None)),
        [
            ClaimDifference::Size {
                wanted: "1Gi".into(),
                found: Some("2Gi".into())
            },
            ClaimDifference::StorageClass {
                wanted: "fast".into(),
                found: None
            },
        ]
    );
    // No class asked: whichever class the claim has is fine.
    assert!(
        claim_differences(&shape(Some("1G"), None), &shape(Some("1000M"), Some("x"))).is_empty()
    );
    // An unparsable size found is compared as text.
    assert_eq!(
        claim_differences(&shape(Some("1Gi"), None), &shape(Some("lots"), None)).len(),
        1
    );
    assert!(claim_differences(&shape(Some("junk"), None), &shape(Some("junk"), None)).is_empty());
    assert_eq!(
        claim_differences(&shape(Some("1Gi"), None), &shape(None, None))[0].to_string(),
        "size none (asked 1Gi)"
    );
    assert_eq!(
        ClaimDifference::StorageClass {
            wanted: "fast".into(),
            found: Some("slow".into())
        }
        .to_string(),
        "storage class slow (asked fast)"
    );
}

#[test]
fn quantities_have_exact_values() {
    for (text, value) in [
        ("0", 0),
        ("1", 1000),
        ("+2", 2000),
        ("500m", 500),
        ("1.5", 1500),
        ("1Ki", 1_024_000),
        ("1Mi", 1_048_576_000),
        ("1Gi", 1_073_741_824_000),
        ("1Ti", 1_099_511_627_776_000),
        ("1Pi", 1_125_899_906_842_624_000),
        ("1Ei", 1_152_921_504_606_846_976_000),
        ("0.5Gi", 536_870_912_000),
        ("1k", 1_000_000),
        ("1M", 1_000_000_000),
        ("1G", 1_000_000_000_000),
        ("1T", 1_000_000_000_000_000),
        ("1P", 1_000_000_000_000_000_000),
        ("1E", 1_000_000_000_000_000_000_000),
        ("1e3", 1_000_000),
        ("1E-3", 1),
        ("5000000u", 5000),
        ("1000000000n", 1000),
        (".5", 500),
        ("5.", 5000),
    ] {
        assert_eq!(quantity_value(text), Some(value), "{text}");
    }
    for text in [
        "", "-1", "Gi", "1Qi", "1.2.3", "1x", "1n", "abc", ".", "1e", "1Gi5",
    ] {
        assert_eq!(quantity_value(text), None, "{text}");
    }
}

#[test]
fn problems_say_what_to_do() {
    assert!(
        ClaimProblem::Foreign
            .to_string()
            .contains("never uses or changes it")
    );
    assert!(
        ClaimProblem::Deleting
            .to_string()
            .contains("new, empty workspace")
    );
    assert!(ClaimProblem::Contended.to_string().contains("deploy again"));
}

#[test]
fn a_claim_status_reads_as_one_line() {
    let mut status = ClaimStatus {
        name: "c".into(),
        ours: true,
        shape: shape(Some("1Gi"), Some("fast")),
        phase: Some("Bound".into()),
        deleting: false,
    };
    assert_eq!(status.to_string(), "c (1Gi, class fast, Bound)");
    status.deleting = true;
    status.ours = false;
    assert_eq!(
        status.to_string(),
        "c (not apiary's: never used, 1Gi, class fast, Bound, deleting)"
    );
    let bare = ClaimStatus {
        name: "c".into(),
        ours: true,
        shape: ClaimShape::default(),
        phase: None,
        deleting: false,
    };
    assert_eq!(bare.to_string(), "c");
}

/// `status` calls a claim ours only when its marks prove it and it can be fenced, and says when
/// it is being deleted.
#[test]
fn a_claim_status_is_ours_only_when_proven() {
    let ours = marks("apiary-x-workspace", "u1", "7");
    let status = ClaimStatus::of(
        "c".into(),
        &ours,
        &owner(),
        shape(Some("1Gi"), None),
        Some("Bound".into()),
    );
    assert_eq!(
        status,
        ClaimStatus {
            name: "c".into(),
            ours: true,
            shape: shape(Some("1Gi"), None),
            phase: Some("Bound".into()),
            deleting: false,
        }
    );
    let mut foreign = ours.clone();
    foreign.agent_id = Some(OTHER_AGENT_ID.into());
    foreign.deletion_marked = true;
    let status = ClaimStatus::of("c".into(), &foreign, &owner(), ClaimShape::default(), None);
    assert!(!status.ours);
    assert!(status.deleting);
    let unfenceable = marks("apiary-x-workspace", "", "7");
    let status = ClaimStatus::of(
        "c".into(),
        &unfenceable,
        &owner(),
        ClaimShape::default(),
        None,
    );
    assert!(!status.ours);
}

/// A deploy reports a created claim as created and without differences, and a found one with
/// how it differs from what was asked (a claim is never updated, so an update reports nothing).
#[test]
fn a_claim_report_says_created_or_how_it_differs() {
    let wanted = shape(Some("1Gi"), Some("fast"));
    let found = shape(Some("2Gi"), Some("fast"));
    assert_eq!(
        claim_report("c".into(), Placed::Created, &wanted),
        ClaimReport {
            name: "c".into(),
            created: true,
            differences: Vec::new(),
        }
    );
    assert_eq!(
        claim_report("c".into(), Placed::Found(found.clone()), &wanted),
        ClaimReport {
            name: "c".into(),
            created: false,
            differences: claim_differences(&wanted, &found),
        }
    );
    assert_eq!(claim_differences(&wanted, &found).len(), 1);
    assert_eq!(
        claim_report("c".into(), Placed::Updated, &wanted),
        ClaimReport {
            name: "c".into(),
            created: false,
            differences: Vec::new(),
        }
    );
}
