//! The real deploy driver with the real `Cluster` (a `kube::Client` built from the simulator's
//! kubeconfig) against the loopback apiserver simulator, for what the scenario table
//! (`tests/scenarios`) cannot stage: the orphan sweep under each `Date` header mode, and create
//! answers lost in flight. The deploy loop's own scenarios are rows of that table.
//!
//! Layer: integration tests over real HTTP on 127.0.0.1. They decide nothing and must never
//! contact a real cluster. Time runs faster in the simulator (grace periods, kubelet delays);
//! deadlines and polls are short real durations so the file runs in seconds.

use std::time::Duration;

use crate::sim_support::{
    FAST, NS, POD, Weather, agent, attempt, config, delete_fence, image, options, secret_ref, start,
};
use apiary_apiserver_sim::{DateMode, FaultAction, FaultRule, Matcher, Resource, Verb};
use apiary_classify::gc::OrphanSweep;
use apiary_cluster_model::kubelet::PodScript;
use apiary_substrate::driver;
use apiary_substrate_kube::RetryPolicy;

/// A generous deadline for scenarios that end well before it.
const LONG: Duration = Duration::from_secs(15);
/// The poll interval of every scenario (watching usually wakes the driver sooner).
const POLL: Duration = Duration::from_millis(200);

/// deploy.md § Age gate (the same-clock rule), through a deploy's preflight GC: with the
/// apiserver's `Date` header an unreferenced Secret older than 1200 s is swept and a young one
/// kept; without it the sweep is skipped and both stay — and `gc --dry-run` reports which happens.
/// Terminated residue (pod and its Secret) is collected either way (G8/S9), with the re-read
/// fence.
async fn g5_g7_orphan_sweep_needs_the_date_header(weather: Weather, date: DateMode) {
    // 10× time: the young Secret stays far below 1200 s for the whole test.
    let s = start(10.0, true).await;
    s.set_weather(weather);
    s.sim.faults().set_date_mode(date);
    let desired = config(&image(""));
    let now = s.sim.now();
    let mut names = Vec::new();
    for (generation, age) in [(0x0000_00a1_u32, 5000_u64), (0x0000_00a2, 10)] {
        let (_, mut secret) = attempt(&desired, generation);
        secret.metadata.creation_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                now.checked_sub(Duration::from_secs(age)).expect("in range"),
            ));
        names.push(secret.metadata.name.clone().expect("name"));
        s.sim
            .with_model(|m| m.insert_secret(secret).expect("inserted"));
    }
    let (old, young) = (names[0].clone(), names[1].clone());
    // Terminated residue of an earlier attempt: collected with or without a clock (G8/S9).
    let (residue, residue_secret) = attempt(&desired, 0x0000_00a3);
    let residue_secret_name = residue_secret.metadata.name.clone().expect("name");
    let residue_fence = s.sim.with_model(|m| {
        m.script_pods_named(NS, POD, PodScript::Inert);
        m.create_secret(NS, residue_secret).expect("secret");
        m.create_pod(NS, residue).expect("pod");
        let pod = m.terminate_pod(NS, POD, 1).expect("terminated");
        m.script_pods_named(
            NS,
            POD,
            PodScript::Start {
                after: Duration::from_secs(1),
            },
        );
        (
            pod.metadata.uid.expect("uid"),
            pod.metadata.resource_version.expect("rv"),
        )
    });

    let cluster = s.cluster().await;
    let swept = date == DateMode::Normal;
    // `gc --dry-run` says whether the sweep would run and what it would take.
    let report = driver::gc(&cluster, &agent(), true).await.expect("gc");
    let expected_sweep = if swept {
        OrphanSweep::Ran
    } else {
        OrphanSweep::Skipped
    };
    assert_eq!(report.orphan_sweep, Some(expected_sweep));
    assert_eq!(report.pods, [POD]);
    let mut planned = report.secrets.clone();
    planned.sort();
    let mut expected = vec![residue_secret_name.clone()];
    if swept {
        expected.push(old.clone());
    }
    expected.sort();
    assert_eq!(planned, expected);
    assert!(s.mutations().is_empty(), "a dry run only reads");

    let deployed = driver::deploy(&cluster, &desired, &options(LONG, POLL))
        .await
        .expect("deployed");
    assert_eq!(deployed.pod, POD);
    let current = secret_ref(&s.pod().expect("pod")).expect("envFrom");
    let mut remaining = s.secret_names();
    remaining.sort();
    let mut expected = vec![current, young.clone()];
    if !swept {
        expected.push(old.clone());
    }
    expected.sort();
    assert_eq!(remaining, expected);
    let secret_deletes = s.succeeded(Verb::Delete, Resource::Secrets);
    assert_eq!(secret_deletes.len(), 1 + usize::from(swept));
    for delete in &secret_deletes {
        assert!(
            delete.path.ends_with(&residue_secret_name) || (swept && delete.path.ends_with(&old)),
            "{delete:?}"
        );
        let body = delete.body_json().expect("body");
        assert!(
            body["preconditions"]["uid"].is_string(),
            "uid-fenced: {body}"
        );
    }
    let pod_deletes = s.of(Verb::Delete, Resource::Pods);
    assert!(!pod_deletes.is_empty(), "the residue was collected");
    for delete in &pod_deletes {
        assert_eq!(delete_fence(delete), residue_fence);
    }
}

mod g5_orphan_sweep_runs_with_date {
    use super::*;
    /// G5: with the `Date` header, a 5000 s old orphan Secret is swept by preflight GC.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calm() {
        g5_g7_orphan_sweep_needs_the_date_header(Weather::Calm, DateMode::Normal).await;
    }
    /// G5 under injected transient faults.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stormy() {
        g5_g7_orphan_sweep_needs_the_date_header(Weather::Stormy, DateMode::Normal).await;
    }
}

mod g7_orphan_sweep_skipped_without_date {
    use super::*;
    /// G7/S9: without a `Date` header no Secret is old enough to prove: the sweep is skipped.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calm() {
        g5_g7_orphan_sweep_needs_the_date_header(Weather::Calm, DateMode::Omit).await;
    }
    /// G7/S9 under injected transient faults.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stormy() {
        g5_g7_orphan_sweep_needs_the_date_header(Weather::Stormy, DateMode::Omit).await;
    }
    /// G7 with a garbled `Date` header: no clock, so the sweep is skipped too.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn garbled() {
        g5_g7_orphan_sweep_needs_the_date_header(Weather::Calm, DateMode::Garbled).await;
    }
}

/// deploy.md § Create (transient failures are survived): creates whose answers are lost — the
/// client gives up on the attempt, the apiserver still applies it — are retried; the retried Secret
/// create answering `AlreadyExists` is success, and the retried pod create answering
/// `AlreadyExists` goes the adopt path, which verifies the pod as this agent's and returns its name
/// once started. One pod, one Secret (referenced), nothing deleted.
///
/// The simulator answers faults before its model sees a request, and hyper drops a request
/// whose client hung up, so "applied but the answer lost" is staged by hand: the first create of
/// each kind is held past the client's attempt timeout, and while it is held the test applies
/// its logged body to the model, as the apiserver would have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_create_answers_are_retried_and_adopted() {
    let s = std::sync::Arc::new(start(FAST, true).await);
    for resource in [Resource::Secrets, Resource::Pods] {
        s.sim.faults().add(FaultRule::times(
            1,
            Matcher::verb(Verb::Create, resource),
            FaultAction::Delay(Duration::from_millis(300)),
        ));
    }
    let applier = {
        let s = std::sync::Arc::clone(&s);
        tokio::spawn(async move {
            for resource in [Resource::Secrets, Resource::Pods] {
                s.until("the held create", |s| {
                    !s.of(Verb::Create, resource).is_empty()
                })
                .await;
                let body = s.of(Verb::Create, resource)[0]
                    .body_json()
                    .expect("a JSON body");
                s.sim
                    .with_model(|m| match resource {
                        Resource::Secrets => m
                            .create_secret(NS, serde_json::from_value(body).expect("a Secret"))
                            .map(|_| ()),
                        _ => m
                            .create_pod(NS, serde_json::from_value(body).expect("a pod"))
                            .map(|_| ()),
                    })
                    .expect("applied");
            }
        })
    };
    let cluster = s.cluster().await.with_retry_policy(RetryPolicy {
        budget: Duration::from_secs(10),
        attempt_timeout: Duration::from_millis(100),
        base: Duration::from_millis(400),
        cap: Duration::from_millis(400),
    });
    let deployed = driver::deploy(&cluster, &config(&image("")), &options(LONG, POLL))
        .await
        .expect("deployed");
    applier.await.expect("applier");
    assert_eq!(deployed.pod, POD);
    for resource in [Resource::Secrets, Resource::Pods] {
        let statuses: Vec<_> = s
            .of(Verb::Create, resource)
            .iter()
            .map(|r| r.status)
            .collect();
        assert_eq!(
            statuses,
            [None, Some(409)],
            "{resource:?}: the first answer was lost, the retry found the object"
        );
    }
    assert!(s.sim.requests().iter().all(|r| r.method != "DELETE"));
    let pod = s.pod().expect("pod");
    assert_eq!(s.secret_names(), [secret_ref(&pod).expect("envFrom")]);
}
