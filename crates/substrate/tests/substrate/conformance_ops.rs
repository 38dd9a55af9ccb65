//! Conformance scenarios of GC execution (deploy.md § Garbage collection, G1–G20 as executed),
//! `status`, `undeploy` and `gc` (§ status, undeploy, gc, S1–S9) against the real driver and
//! the in-memory fake substrate, asserting on the fake's ordered call log. No I/O.

#[allow(
    dead_code,
    reason = "each conformance test binary uses a different subset"
)]
use std::time::Duration;

use crate::conformance_support::*;
use apiary_classify::failure::Operation;
use apiary_classify::gc::OrphanSweep;
use apiary_classify::status::StatusState;
use apiary_substrate::DeleteAnswer;
use apiary_substrate::driver::{
    SecretStatus, UndeployError, UndeployOptions, gc, status, undeploy,
};
use apiary_substrate::fake::{FakeCluster, ServerClock};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The Secret of attempt `generation`, created `age` before the fake's now.
fn aged_secret(fake: &FakeCluster, generation: u32, age: Duration) -> (Secret, String) {
    let (_, mut secret, name) = attempt(&config(), generation);
    let now = fake.model().now();
    let created = now.checked_sub(jiff_span(age)).expect("in range");
    secret.metadata.creation_timestamp = Some(Time(created));
    (secret, name)
}

fn jiff_span(age: Duration) -> k8s_openapi::jiff::SignedDuration {
    k8s_openapi::jiff::SignedDuration::try_from(age).expect("small duration")
}

// ---- GC execution -------------------------------------------------------------------------

/// G1/G8: a terminated pod and its Secret are collected (no server clock needed); the delete
/// carries the re-read fence.
#[test]
fn g1_g8_terminated_pod_and_secret_collected() {
    let fake = FakeCluster::new(NS);
    let (dead, secret) = seed(&fake, &config(), 1, &Shape::Terminated(1), true);
    let report = run(gc(&fake, &agent(), false)).unwrap();
    assert_eq!(report.pods, [POD]);
    assert_eq!(report.secrets, std::slice::from_ref(&secret));
    assert!(report.failures.is_empty());
    let (uid, rv) = fence_of(&dead);
    let deletes = fake.pod_deletes();
    assert_eq!(deletes.len(), 1);
    assert_eq!(
        (
            deletes[0].1.uid().to_owned(),
            deletes[0].1.resource_version().to_owned()
        ),
        (uid, rv)
    );
    assert_eq!(fake.secret_deletes()[0].0, secret);
    assert_eq!(report.orphan_sweep, Some(OrphanSweep::Skipped));
}

/// G2: a running pod and its Secret stay.
#[test]
fn g2_running_pod_untouched() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Running, true);
    fake.set_server_clock(ServerClock::Model);
    let report = run(gc(&fake, &agent(), false)).unwrap();
    assert!(report.pods.is_empty() && report.secrets.is_empty());
    assert!(fake.mutations().is_empty());
}

/// G5/G6: on the server clock, 1199 s is kept and 1200 s and 1201 s are collected.
#[test]
fn g5_g6_age_gate_on_the_server_clock() {
    let fake = FakeCluster::new(NS);
    fake.set_server_clock(ServerClock::Model);
    let (young, young_name) = aged_secret(&fake, 1, Duration::from_secs(1199));
    let (edge, edge_name) = aged_secret(&fake, 2, Duration::from_secs(1200));
    let (old, old_name) = aged_secret(&fake, 3, Duration::from_secs(1201));
    for s in [young, edge, old] {
        fake.insert_secret(s).unwrap();
    }
    let report = run(gc(&fake, &agent(), false)).unwrap();
    assert_eq!(report.orphan_sweep, Some(OrphanSweep::Ran));
    let mut collected = report.secrets.clone();
    collected.sort();
    let mut expected = vec![edge_name, old_name];
    expected.sort();
    assert_eq!(collected, expected);
    assert!(fake.secret(&young_name).is_some());
}

/// G7/S9: without a server clock the orphan sweep is skipped (a 10,000,000 s-old Secret
/// stays) while terminated pods are still collected.
#[test]
fn g7_s9_no_server_clock_skips_sweep_only() {
    let fake = FakeCluster::new(NS);
    let (ancient, ancient_name) = aged_secret(&fake, 9, Duration::from_secs(10_000_000));
    fake.insert_secret(ancient).unwrap();
    seed(&fake, &config(), 1, &Shape::Terminated(0), true);
    let report = run(gc(&fake, &agent(), false)).unwrap();
    assert_eq!(report.orphan_sweep, Some(OrphanSweep::Skipped));
    assert_eq!(report.pods, [POD]);
    assert!(fake.secret(&ancient_name).is_some());
}

/// G15: a young unreferenced Secret of an in-flight attempt survives another caller's GC.
#[test]
fn g15_in_flight_secret_survives_gc() {
    let fake = FakeCluster::new(NS);
    fake.set_server_clock(ServerClock::Model);
    let (young, name) = aged_secret(&fake, 1, Duration::from_secs(5));
    fake.insert_secret(young).unwrap();
    run(gc(&fake, &agent(), false)).unwrap();
    assert!(fake.secret(&name).is_some());
    assert!(fake.secret_deletes().is_empty());
}

/// G16: only the apiserver's clock ages Secrets — a server clock one hour behind the
/// creationTimestamps keeps an otherwise old Secret (the local clock is never read).
#[test]
fn g16_only_the_server_clock_counts() {
    let fake = FakeCluster::new(NS);
    fake.set_server_clock(ServerClock::ModelOffset(-3600));
    let (old, name) = aged_secret(&fake, 1, Duration::from_secs(1800));
    fake.insert_secret(old).unwrap();
    run(gc(&fake, &agent(), false)).unwrap();
    assert!(fake.secret(&name).is_some());
}

/// G17: a planned pod replaced by a running one before the re-read is not deleted.
#[test]
fn g17_replaced_before_reread_not_deleted() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Terminated(1), true);
    let (fresh, _, _) = attempt(&config(), 2);
    let fresh = shaped(&fake, fresh, &Shape::Running);
    fake.before_next(Operation::GetPod, move |m| {
        m.remove_pod(NS, POD).unwrap();
        m.insert_pod(fresh).unwrap();
    });
    let report = run(gc(&fake, &agent(), false)).unwrap();
    assert!(report.pods.is_empty());
    assert!(fake.pod_deletes().is_empty());
}

/// G18: a planned pod gone at re-read is skipped; its Secret is still deleted.
#[test]
fn g18_gone_at_reread_secret_still_deleted() {
    let fake = FakeCluster::new(NS);
    let (_, secret) = seed(&fake, &config(), 1, &Shape::Terminated(1), true);
    fake.before_next(Operation::GetPod, |m| {
        m.remove_pod(NS, POD).unwrap();
    });
    let report = run(gc(&fake, &agent(), false)).unwrap();
    assert!(fake.pod_deletes().is_empty());
    assert_eq!(report.secrets, [secret]);
}

/// G19: a GC pod delete answering PreconditionFailed is silently skipped.
#[test]
fn g19_precondition_failed_silently_skipped() {
    let fake = FakeCluster::new(NS);
    let (_, secret) = seed(&fake, &config(), 1, &Shape::Terminated(1), true);
    fake.answer_next_delete_pod(DeleteAnswer::PreconditionFailed);
    let report = run(gc(&fake, &agent(), false)).unwrap();
    assert!(report.pods.is_empty());
    assert!(report.failures.is_empty());
    assert_eq!(fake.pod_deletes().len(), 1);
    assert_eq!(report.secrets, [secret]);
}

/// G20: at re-read the name holds an unverified terminated pod → not deleted.
#[test]
fn g20_unverified_at_reread_not_deleted() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Terminated(1), true);
    let (look_alike, _, _) = attempt(&config(), 2);
    let look_alike = other_agent(shaped(&fake, look_alike, &Shape::Terminated(1)));
    fake.before_next(Operation::GetPod, move |m| {
        m.remove_pod(NS, POD).unwrap();
        m.insert_pod(look_alike).unwrap();
    });
    run(gc(&fake, &agent(), false)).unwrap();
    assert!(fake.pod_deletes().is_empty());
}

/// S8: `gc --dry-run` reports the plan and performs no delete.
#[test]
fn s8_dry_run_plans_without_deleting() {
    let fake = FakeCluster::new(NS);
    let (_, secret) = seed(&fake, &config(), 1, &Shape::Terminated(1), true);
    let report = run(gc(&fake, &agent(), true)).unwrap();
    assert!(report.dry_run);
    assert_eq!(report.pods, [POD]);
    assert_eq!(report.secrets, [secret]);
    assert!(fake.mutations().is_empty());
}

/// deploy.md § gc: a list error fails the command.
#[test]
fn gc_list_error_fails() {
    let fake = FakeCluster::new(NS);
    let forbidden = fake.forbidden(Operation::ListPods, "pods");
    fake.fail_next(Operation::ListPods, forbidden);
    assert!(run(gc(&fake, &agent(), false)).is_err());
}

// ---- status --------------------------------------------------------------------------------

/// S1: absent, foreign, deleting and each startup state map to their `state`; a foreign pod
/// reports no condition and no Secret.
#[test]
fn s1_each_observation_maps_to_its_state() {
    let fake = FakeCluster::new(NS);
    let report = run(status(&fake, &agent(), None)).unwrap();
    assert_eq!(report.state, StatusState::Absent);
    assert_eq!((report.condition, report.secret), (None, None));

    let cases: [(Shape, bool, &str); 6] = [
        (Shape::Running, true, "started"),
        (Shape::Terminated(1), true, "terminated"),
        (Shape::Waiting("ContainerCreating", None), true, "starting"),
        (
            Shape::Waiting("CreateContainerConfigError", None),
            false,
            "broken",
        ),
        (
            Shape::Waiting("CreateContainerConfigError", None),
            true,
            "starting",
        ),
        (
            Shape::Waiting("ErrImagePull", Some("manifest unknown")),
            true,
            "pull-failing",
        ),
    ];
    for (shape, with_secret, name) in cases {
        let fake = FakeCluster::new(NS);
        let (_, secret) = seed(&fake, &config(), 1, &shape, with_secret);
        let report = run(status(&fake, &agent(), None)).unwrap();
        assert_eq!(report.state.as_str(), name, "{shape:?}");
        assert_eq!(
            report.secret,
            Some(SecretStatus {
                name: secret,
                exists: with_secret
            })
        );
        assert!(report.condition.is_some());
        assert_eq!(report.intent_matches, None);
        assert!(fake.mutations().is_empty());
    }

    let fake = FakeCluster::new(NS);
    let (pod, _, _) = attempt(&config(), 1);
    fake.insert_pod(other_agent(shaped(&fake, pod, &Shape::Terminated(1))))
        .unwrap();
    let report = run(status(&fake, &agent(), Some(&config()))).unwrap();
    assert_eq!(report.state, StatusState::Foreign);
    assert_eq!(
        (report.condition, report.secret, report.intent_matches),
        (None, None, None)
    );

    let fake = FakeCluster::new(NS);
    let (pod, _, _) = attempt(&config(), 1);
    fake.insert_pod(deleting(&fake, shaped(&fake, pod, &Shape::Running)))
        .unwrap();
    assert_eq!(
        run(status(&fake, &agent(), None)).unwrap().state,
        StatusState::Deleting
    );
}

/// S1: a pull-failing pod's condition is the registry report, never the kubelet message.
#[test]
fn s1_pull_failing_condition_is_the_report() {
    let fake = FakeCluster::new(NS);
    let shape = Shape::Waiting("ErrImagePull", Some("401 Unauthorized token=SUPERSECRET"));
    seed(&fake, &config(), 1, &shape, true);
    let condition = run(status(&fake, &agent(), None))
        .unwrap()
        .condition
        .unwrap();
    assert!(condition.contains("registry.example.com"), "{condition}");
    assert!(condition.contains(IMAGE), "{condition}");
    assert!(!condition.contains("SUPERSECRET"));
}

/// S2: an identical configuration → `intent_matches` true; a changed image → false.
#[test]
fn s2_intent_matches_against_given_config() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Running, true);
    let same = run(status(&fake, &agent(), Some(&config()))).unwrap();
    assert_eq!(same.intent_matches, Some(true));
    let changed = config_with(|c| c.image = image_with("other"));
    let report = run(status(&fake, &agent(), Some(&changed))).unwrap();
    assert_eq!(report.intent_matches, Some(false));
}

// ---- undeploy ------------------------------------------------------------------------------

/// S4: no pod and no Secrets → success with no writes; no pod but an unreferenced Secret →
/// that Secret deleted.
#[test]
fn s4_undeploy_without_pod() {
    let fake = FakeCluster::new(NS);
    let report = run(undeploy(&fake, &agent(), &UndeployOptions::default())).unwrap();
    assert_eq!(report, Default::default());
    assert!(fake.mutations().is_empty());

    let fake = FakeCluster::new(NS);
    let (young, name) = aged_secret(&fake, 1, Duration::from_secs(1));
    fake.insert_secret(young).unwrap();
    let report = run(undeploy(&fake, &agent(), &UndeployOptions::default())).unwrap();
    assert_eq!(report.secrets, std::slice::from_ref(&name));
    assert!(fake.secret(&name).is_none());
}

/// S6: `--no-wait` → the pod delete is issued, its Secret kept and reported.
#[test]
fn s6_undeploy_no_wait_keeps_referenced_secret() {
    let fake = FakeCluster::new(NS);
    let (_, secret) = seed(&fake, &config(), 1, &Shape::Running, true);
    let options = UndeployOptions {
        wait: false,
        ..UndeployOptions::default()
    };
    let report = run(undeploy(&fake, &agent(), &options)).unwrap();
    assert!(report.pod_deleted && !report.waited);
    assert_eq!(report.kept_secrets, std::slice::from_ref(&secret));
    assert!(report.secrets.is_empty());
    assert_eq!(fake.pod_deletes().len(), 1);
    assert!(fake.secret(&secret).is_some());
}

/// S7: a PreconditionFailed delete → re-observation and a delete with the new fence, never
/// the old one again.
#[test]
fn s7_undeploy_precondition_failed_uses_new_fence() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Running, true);
    fake.before_next(Operation::DeletePod, |m| {
        m.modify_pod(NS, POD, |p| {
            p.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert("touched".into(), "yes".into());
        })
        .unwrap();
    });
    run(undeploy(&fake, &agent(), &UndeployOptions::default())).unwrap();
    let deletes = fake.pod_deletes();
    assert_eq!(deletes.len(), 2, "{:?}", fake.call_summaries());
    assert_ne!(
        deletes[0].1.resource_version(),
        deletes[1].1.resource_version()
    );
    assert_eq!(deletes[0].1.uid(), deletes[1].1.uid());
}

/// deploy.md § undeploy, step 3: a pod with a different uid appearing under the name is left alone,
/// its Secret protected, and undeploy fails saying a concurrent deploy created it.
#[test]
fn undeploy_concurrent_replacement_left_alone() {
    let fake = FakeCluster::new(NS);
    let (_, old_secret) = seed(&fake, &config(), 1, &Shape::Running, true);
    let (fresh, fresh_secret, fresh_secret_name) = attempt(&config(), 2);
    let fresh = shaped(&fake, fresh, &Shape::Running);
    fake.on_poll(1, move |m| {
        m.remove_pod(NS, POD).unwrap();
        m.insert_secret(fresh_secret).unwrap();
        m.insert_pod(fresh).unwrap();
    });
    let error = run(undeploy(&fake, &agent(), &UndeployOptions::default())).unwrap_err();
    match error {
        UndeployError::Replaced { report, .. } => {
            assert_eq!(report.secrets, [old_secret]);
            assert_eq!(
                report.kept_secrets,
                std::slice::from_ref(&fresh_secret_name)
            );
        }
        other => panic!("{other}"),
    }
    assert_eq!(fake.pod_deletes().len(), 1);
    assert!(fake.pod(POD).is_some());
    assert!(fake.secret(&fresh_secret_name).is_some());
}

/// E4 for undeploy: the pod outlives the bound → timeout and no Secret deleted.
#[test]
fn undeploy_timeout_deletes_no_secret() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Running, true);
    fake.with_model(|m| {
        m.modify_pod(NS, POD, |p| {
            p.spec.as_mut().unwrap().termination_grace_period_seconds = Some(3600)
        })
        .unwrap();
    });
    let options = UndeployOptions {
        deadline: Duration::from_secs(30),
        ..UndeployOptions::default()
    };
    let error = run(undeploy(&fake, &agent(), &options)).unwrap_err();
    assert!(matches!(error, UndeployError::Timeout { .. }), "{error}");
    assert!(fake.secret_deletes().is_empty());
}
