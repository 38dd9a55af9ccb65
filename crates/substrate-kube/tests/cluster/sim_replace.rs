//! `deploy --replace` (deploy.md § Replacing a live agent) through the real driver and real
//! `Cluster`s against the loopback apiserver simulator: one replace deletes the started pod of
//! another intent with exactly the observed fence, waits for it to go and creates the new one; a
//! replace with the intent unchanged writes nothing; concurrent replaces with one configuration
//! converge on one new pod; concurrent replaces with two configurations end on one pod of one of
//! them, every delete aimed at the old pod only (no delete loop).
//!
//! Layer: integration test over real HTTP on 127.0.0.1. Decides nothing; never contacts a real
//! cluster. The simulator runs 1000× faster than real time, so grace periods pass in
//! milliseconds.

use std::time::Duration;

use crate::sim_support::{
    FAST, POD, Sim, config, config_with, delete_fence, image, options, start,
};
use apiary_apiserver_sim::{Resource, Verb};
use apiary_substrate::config::ValidConfig;
use apiary_substrate::driver::{self, DeployOptions, Deployed};

/// A deadline that every scenario ends well before.
const LONG: Duration = Duration::from_secs(15);
/// The poll interval (watching usually wakes the driver sooner).
const POLL: Duration = Duration::from_millis(200);

fn replacing() -> DeployOptions {
    options(LONG, POLL).replacing(true)
}

/// The configuration with a different CPU limit: another create intent.
fn changed(cpu: &str) -> ValidConfig {
    config_with(&image(""), |c| c.cpu_limit = cpu.to_owned())
}

/// A simulator whose agent runs the original configuration; answers the old pod's uid and
/// resourceVersion. The request log is cleared.
async fn running_original() -> (Sim, String) {
    let s = start(FAST, true).await;
    let cluster = s.cluster().await;
    driver::deploy(&cluster, &config(&image("")), &options(LONG, POLL))
        .await
        .expect("the original deploy");
    let uid = s.pod().and_then(|p| p.metadata.uid).expect("uid");
    s.sim.clear_requests();
    (s, uid)
}

fn intent(s: &Sim) -> String {
    s.pod()
        .and_then(|p| p.metadata.annotations)
        .and_then(|a| a.get("apiary.dev/create-intent").cloned())
        .expect("the pod records its intent")
}

/// One replace: a fenced, graceful delete of the old pod with the fence the read observed, the
/// disappearance awaited, the old pod's Secret deleted, then one Secret and one pod created; the
/// new pod records the new intent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_rolls_a_new_configuration_onto_a_started_pod() {
    let (s, old_uid) = running_original().await;
    let cluster = s.cluster().await;
    let new = changed("3");
    let deployed = driver::deploy(&cluster, &new, &replacing())
        .await
        .expect("replaced");
    assert_eq!(
        Deployed {
            recorded_settings: None,
            ..deployed
        },
        Deployed {
            pod: POD.to_owned(),
            intent_matches: true,
            workspace: None,
            recorded_settings: None,
        }
    );
    let deletes = s.of(Verb::Delete, Resource::Pods);
    assert_eq!(deletes.len(), 1, "one delete");
    let (uid, _) = delete_fence(&deletes[0]);
    assert_eq!(uid, old_uid, "fenced by the observed pod");
    let order: Vec<_> = s
        .served()
        .iter()
        .filter(|r| r.is_mutation())
        .map(|r| r.target)
        .collect();
    assert_eq!(
        order,
        [
            Some((Resource::Pods, Verb::Delete)),
            Some((Resource::Secrets, Verb::Delete)),
            Some((Resource::Secrets, Verb::Create)),
            Some((Resource::Pods, Verb::Create)),
        ]
    );
    assert_eq!(
        s.secret_names().len(),
        1,
        "only the new pod's Secret is left"
    );
    assert_ne!(s.pod().and_then(|p| p.metadata.uid), Some(old_uid));
    assert_eq!(intent(&s), new.fingerprint());
}

/// A replace with the intent unchanged is today's no-op: reads only, nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_with_the_same_intent_writes_nothing() {
    let (s, uid) = running_original().await;
    let cluster = s.cluster().await;
    let deployed = driver::deploy(&cluster, &config(&image("")), &replacing())
        .await
        .expect("no-op");
    assert!(deployed.intent_matches);
    assert!(
        s.sim.requests().iter().all(|r| !r.is_mutation()),
        "zero mutation"
    );
    assert_eq!(s.pod().and_then(|p| p.metadata.uid), Some(uid));
}

/// Concurrent replaces with one configuration converge on one new pod: every call returns it
/// with its intent matching, exactly one pod create lands, every delete is of the old pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_replaces_with_one_configuration_converge_on_one_pod() {
    let (s, old_uid) = running_original().await;
    let new = changed("3");
    let mut clusters = Vec::new();
    for _ in 0..4 {
        clusters.push(s.cluster().await);
    }
    let opts = replacing();
    let results =
        futures::future::join_all(clusters.iter().map(|c| driver::deploy(c, &new, &opts))).await;
    for result in &results {
        let deployed = result.as_ref().expect("every replace succeeds");
        assert_eq!(deployed.pod, POD);
        assert!(deployed.intent_matches);
    }
    assert_eq!(s.pod_names(), [POD]);
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    let deletes = s.of(Verb::Delete, Resource::Pods);
    assert!(
        (1..=4).contains(&deletes.len()),
        "{} deletes",
        deletes.len()
    );
    for delete in &deletes {
        assert_eq!(delete_fence(delete).0, old_uid, "only the old pod");
    }
    assert_eq!(intent(&s), new.fingerprint());
}

/// Concurrent replaces with two configurations: one pod remains, built from one of them; every
/// delete was of the old pod (never of a contender's new pod), so nothing loops; the calls of the
/// configuration that landed match, the others report the differing intent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_replaces_with_two_configurations_end_without_a_delete_loop() {
    let (s, old_uid) = running_original().await;
    let (a, b) = (changed("3"), changed("5"));
    let mut clusters = Vec::new();
    for _ in 0..4 {
        clusters.push(s.cluster().await);
    }
    let opts = replacing();
    let results = futures::future::join_all(clusters.iter().enumerate().map(|(i, c)| {
        let desired = if i % 2 == 0 { &a } else { &b };
        driver::deploy(c, desired, &opts)
    }))
    .await;
    assert_eq!(s.pod_names(), [POD]);
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    for delete in &s.of(Verb::Delete, Resource::Pods) {
        assert_eq!(delete_fence(delete).0, old_uid, "only the old pod");
    }
    let landed = intent(&s);
    let fingerprints = [a.fingerprint(), b.fingerprint()];
    assert!(fingerprints.contains(&landed));
    for (i, result) in results.iter().enumerate() {
        let deployed = result.as_ref().expect("every replace ends started");
        assert_eq!(deployed.pod, POD);
        assert_eq!(deployed.intent_matches, fingerprints[i % 2] == landed);
    }
}

/// The last writer wins: replaces one after the other each roll their configuration on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_replaces_the_last_one_wins() {
    let (s, _) = running_original().await;
    let cluster = s.cluster().await;
    for cpu in ["3", "5", "3"] {
        let desired = changed(cpu);
        let deployed = driver::deploy(&cluster, &desired, &replacing())
            .await
            .expect("replaced");
        assert!(deployed.intent_matches);
        assert_eq!(intent(&s), desired.fingerprint());
    }
    assert_eq!(s.succeeded(Verb::Delete, Resource::Pods).len(), 3);
}
