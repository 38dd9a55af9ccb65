//! Tests of the GC plan and re-read decisions (deploy.md § Garbage collection; scenarios
//! G1–G20 as far as they are pure).

use super::*;
use crate::binding::Owner;
use crate::testkit::{
    AGENT_ID, OTHER_AGENT_ID, POD, marks, own_pod, own_secret, running, terminated, waiting,
};
use crate::verify::view_pod;

const NOW: i64 = 1_000_000;

fn dead_pod(name: &str, secret: &str) -> ObservedPod {
    let mut pod = own_pod(terminated(1, Some("Error")));
    pod.marks = marks(name, &format!("uid-{name}"), "100");
    pod.facts.env_from_secret = Some(secret.into());
    pod
}

fn live_pod(name: &str, secret: &str) -> ObservedPod {
    let mut pod = dead_pod(name, secret);
    pod.facts.agent = waiting(Some("ContainerCreating"), None);
    pod
}

fn secret_names(plan: &GcPlan) -> Vec<&str> {
    plan.secrets.iter().map(|s| s.name()).collect()
}

/// G1: a terminated pod and the listed, verified Secret it references are planned.
#[test]
fn g1_terminated_pod_and_its_secret() {
    let plan = plan_gc(
        &[dead_pod("x", "x-g")],
        &[own_secret("x-g", Some(NOW))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(plan.pods, ["x"]);
    assert_eq!(secret_names(&plan), ["x-g"]);
    assert_eq!(plan.secrets[0].uid(), "s-x-g");
    assert_eq!(plan.orphan_sweep, OrphanSweep::Ran);
}

/// G2: a non-terminated pod gives an empty plan.
#[test]
fn g2_non_terminated_pod_empty_plan() {
    for agent in [running(), waiting(Some("ContainerCreating"), None)] {
        let mut pod = dead_pod("x", "x-g");
        pod.facts.agent = agent;
        let plan = plan_gc(
            &[pod],
            &[own_secret("x-g", Some(NOW))],
            Some(NOW),
            &Owner::apiary(AGENT_ID),
        );
        assert!(plan.pods.is_empty() && plan.secrets.is_empty());
    }
}

/// G3: unmarked or other-agent terminated pods and very old foreign Secrets → empty plan.
#[test]
fn g3_foreign_pods_and_secrets_empty_plan() {
    let mut unmarked = dead_pod("x", "x-g");
    unmarked.marks.managed_by = None;
    let mut other = dead_pod("y", "y-g");
    other.marks.agent_id = Some(OTHER_AGENT_ID.into());
    let mut s1 = own_secret("x-g", Some(NOW - 100_000));
    s1.marks.managed_by = None;
    let mut s2 = own_secret("y-g", Some(NOW - 100_000));
    s2.marks.agent_id = Some(OTHER_AGENT_ID.into());
    let plan = plan_gc(
        &[unmarked, other],
        &[s1, s2],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert!(plan.pods.is_empty() && plan.secrets.is_empty());
}

/// G4: an unreferenced Secret aged 5 s is kept.
#[test]
fn g4_young_orphan_kept() {
    let plan = plan_gc(
        &[],
        &[own_secret("s", Some(NOW - 5))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert!(plan.secrets.is_empty());
}

/// G5: aged 1201 s → collected.
#[test]
fn g5_old_orphan_collected() {
    let plan = plan_gc(
        &[],
        &[own_secret("s", Some(NOW - 1201))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(secret_names(&plan), ["s"]);
}

/// G6: 1199 s kept; 1200 s collected (the gate is inclusive).
#[test]
fn g6_age_gate_boundary() {
    let plan = plan_gc(
        &[],
        &[own_secret("s", Some(NOW - 1199))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert!(plan.secrets.is_empty());
    let plan = plan_gc(
        &[],
        &[own_secret("s", Some(NOW - 1200))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(secret_names(&plan), ["s"]);
    assert!(!orphan_old_enough(NOW, NOW - 1199));
    assert!(orphan_old_enough(NOW, NOW - 1200));
    assert_eq!(ORPHAN_AGE_GATE_SECS, 1200);
}

/// G7: a 10,000,000 s-old Secret without a server clock is kept; the sweep is skipped.
#[test]
fn g7_no_clock_keeps_ancient_orphan() {
    let plan = plan_gc(
        &[],
        &[own_secret("s", Some(NOW - 10_000_000))],
        None,
        &Owner::apiary(AGENT_ID),
    );
    assert!(plan.secrets.is_empty());
    assert_eq!(plan.orphan_sweep, OrphanSweep::Skipped);
    assert_eq!(plan.orphan_sweep.as_str(), "skipped");
    assert_eq!(OrphanSweep::Ran.as_str(), "ran");
}

/// G8: without a clock, a terminated pod and its Secret are still collected.
#[test]
fn g8_no_clock_still_collects_terminated() {
    let plan = plan_gc(
        &[dead_pod("x", "x-g")],
        &[own_secret("x-g", Some(NOW))],
        None,
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(plan.pods, ["x"]);
    assert_eq!(secret_names(&plan), ["x-g"]);
}

/// G9: an ancient Secret referenced by a non-terminated pod is kept — also when a terminated pod
/// references it too.
#[test]
fn g9_protected_secret_kept() {
    let plan = plan_gc(
        &[live_pod("p", "s")],
        &[own_secret("s", Some(0))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert!(plan.secrets.is_empty());
    let plan = plan_gc(
        &[live_pod("p", "s"), dead_pod("q", "s")],
        &[own_secret("s", Some(0))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(plan.pods, ["q"]);
    assert!(plan.secrets.is_empty());
}

/// G10: no creationTimestamp → no age proof → kept.
#[test]
fn g10_no_creation_timestamp_kept() {
    let plan = plan_gc(
        &[],
        &[own_secret("s", None)],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert!(plan.secrets.is_empty());
}

/// G11: a dead pod's ancient Secret is planned once.
#[test]
fn g11_secret_planned_once() {
    let plan = plan_gc(
        &[dead_pod("x", "x-g"), dead_pod("y", "x-g")],
        &[own_secret("x-g", Some(0)), own_secret("x-g", Some(0))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(secret_names(&plan), ["x-g"]);
}

/// G12: a doomed pod's Secret missing from the list or unverified → pod planned, Secret not.
#[test]
fn g12_missing_or_unverified_secret_not_planned() {
    let plan = plan_gc(
        &[dead_pod("x", "x-g")],
        &[],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(plan.pods, ["x"]);
    assert!(plan.secrets.is_empty());
    let mut forged = own_secret("x-g", Some(NOW));
    forged.marks.agent_id = Some(OTHER_AGENT_ID.into());
    let plan = plan_gc(
        &[dead_pod("x", "x-g")],
        &[forged],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(plan.pods, ["x"]);
    assert!(plan.secrets.is_empty());
}

/// G13: an old Secret referenced only by an unverified pod is collected.
#[test]
fn g13_unverified_pod_protects_nothing() {
    let mut foreign = live_pod("p", "s");
    foreign.marks.agent_id = Some(OTHER_AGENT_ID.into());
    let plan = plan_gc(
        &[foreign],
        &[own_secret("s", Some(NOW - 1300))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(secret_names(&plan), ["s"]);
}

/// G14: a negative age is kept.
#[test]
fn g14_negative_age_kept() {
    let plan = plan_gc(
        &[],
        &[own_secret("s", Some(NOW + 5000))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert!(plan.secrets.is_empty());
    assert!(!orphan_old_enough(i64::MIN, i64::MAX));
}

/// G15: A's Secret exists, A's pod not yet, B's GC runs → A's young Secret kept.
#[test]
fn g15_in_flight_secret_kept() {
    let plan = plan_gc(
        &[],
        &[own_secret("a-s", Some(NOW - 30))],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert!(plan.secrets.is_empty());
}

/// G17: a planned pod that is no longer terminated at re-read is not deleted.
#[test]
fn g17_reread_not_terminated_skipped() {
    let view = view_pod(Some(&live_pod(POD, "s")), &Owner::apiary(AGENT_ID));
    assert_eq!(decide_gc_reread(&view), GcPodDecision::SkipNotTerminated);
    let view = view_pod(Some(&own_pod(running())), &Owner::apiary(AGENT_ID));
    assert_eq!(decide_gc_reread(&view), GcPodDecision::SkipNotTerminated);
    let pending = view_pod(
        Some(&own_pod(waiting(Some("CreateContainerConfigError"), None))),
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(decide_gc_reread(&pending), GcPodDecision::SkipNotTerminated);
}

/// G18: a planned pod gone at re-read is skipped.
#[test]
fn g18_reread_gone_skipped() {
    assert_eq!(
        decide_gc_reread(&view_pod(None, &Owner::apiary(AGENT_ID))),
        GcPodDecision::SkipGone
    );
}

/// G20: an unverified terminated pod under the name at re-read is not deleted.
#[test]
fn g20_reread_unverified_skipped() {
    let mut pod = dead_pod(POD, "s");
    pod.marks.binding_version = Some("999".into());
    assert_eq!(
        decide_gc_reread(&view_pod(Some(&pod), &Owner::apiary(AGENT_ID))),
        GcPodDecision::SkipForeign
    );
}

/// Step 3: a still-terminated pod is deleted with the re-read fence, not the listed one.
#[test]
fn reread_terminated_deletes_with_reread_fence() {
    let mut reread = dead_pod(POD, "s");
    reread.marks.resource_version = Some("205".into());
    match decide_gc_reread(&view_pod(Some(&reread), &Owner::apiary(AGENT_ID))) {
        GcPodDecision::Delete(d) => {
            assert_eq!(d.name(), POD);
            assert_eq!(d.fence().uid(), format!("uid-{POD}"));
            assert_eq!(d.fence().resource_version(), "205");
        }
        other => panic!("{other:?}"),
    }
}

/// A doomed pod's Secret without a uid cannot be deleted and is not planned; an orphan without
/// a name or uid neither.
#[test]
fn secrets_without_uid_are_not_planned() {
    let mut s = own_secret("x-g", Some(0));
    s.marks.uid = None;
    let plan = plan_gc(
        &[dead_pod("x", "x-g")],
        &[s.clone()],
        Some(NOW),
        &Owner::apiary(AGENT_ID),
    );
    assert!(plan.secrets.is_empty());
    let mut nameless = own_secret("n", Some(0));
    nameless.marks.name = None;
    let plan = plan_gc(&[], &[s, nameless], Some(NOW), &Owner::apiary(AGENT_ID));
    assert!(plan.secrets.is_empty());
}
