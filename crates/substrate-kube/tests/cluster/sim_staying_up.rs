//! `deploy --min-running` (deploy.md § Staying up) through the real driver and a real `Cluster`
//! against the loopback simulator, whose kubelet script runs the container for a while and then
//! crashes it: without a window the deploy succeeds as soon as the pod runs (the crash comes
//! later); with a window longer than the run the crash is reported with its exit code (E2), and
//! nothing is deleted; a pod that stays up succeeds once the window has passed.
//!
//! Layer: integration test over real HTTP on 127.0.0.1. Decides nothing; never contacts a real
//! cluster. The simulator runs 10× faster than real time here, so the scripted 20 s run lasts
//! 2 s of the driver's clock, the window's clock.

use std::time::Duration;

use crate::sim_support::{NS, POD, Sim, config, image, options, start};
use apiary_apiserver_sim::{Resource, Verb};
use apiary_cluster_model::kubelet::PodScript;
use apiary_substrate::driver::{self, DeployError};

/// Model seconds per real second.
const SCALE: f64 = 10.0;
const LONG: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(200);

/// A simulator whose agent container runs 20 model seconds (2 s real), then exits with 3.
async fn crashing_after_a_while() -> Sim {
    let s = start(SCALE, true).await;
    s.sim.with_model(|m| {
        m.script_pods_named(
            NS,
            POD,
            PodScript::Exit {
                after: Duration::from_secs(1),
                run_for: Duration::from_secs(20),
                exit_code: 3,
            },
        );
    });
    s
}

/// Without `--min-running` the deploy succeeds once the pod runs: the later crash is unseen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_window_a_late_crash_goes_unseen() {
    let s = crashing_after_a_while().await;
    let deployed = driver::deploy(
        &s.cluster().await,
        &config(&image("")),
        &options(LONG, POLL),
    )
    .await
    .expect("deployed before the crash");
    assert_eq!(deployed.pod, POD);
}

/// With a window longer than the run, the crash inside it is reported as the crash (E2 with
/// exit code 3), after exactly one Secret and one pod create, and nothing is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_inside_the_window_is_reported_with_its_exit_code() {
    let s = crashing_after_a_while().await;
    let opts = options(LONG, POLL).staying_up(Duration::from_secs(10));
    let error = driver::deploy(&s.cluster().await, &config(&image("")), &opts)
        .await
        .expect_err("the crash is reported");
    assert!(
        matches!(error, DeployError::CreatedPodFailed { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("exited with code 3"), "{error}");
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    assert_eq!(s.succeeded(Verb::Create, Resource::Secrets).len(), 1);
    assert!(s.of(Verb::Delete, Resource::Pods).is_empty());
}

/// A pod that stays up succeeds once the window has passed: the driver kept reading the
/// running pod after its first started read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_stays_up_succeeds_after_the_window() {
    let s = start(SCALE, true).await;
    let opts = options(LONG, POLL).staying_up(Duration::from_secs(1));
    let deployed = driver::deploy(&s.cluster().await, &config(&image("")), &opts)
        .await
        .expect("deployed");
    assert_eq!(deployed.pod, POD);
    let created = s
        .sim
        .requests()
        .iter()
        .position(|r| r.is(Verb::Create, Resource::Pods))
        .expect("created");
    let reads_after = s.sim.requests()[created..]
        .iter()
        .filter(|r| r.is(Verb::Get, Resource::Pods) && r.status == Some(200))
        .count();
    assert!(reads_after >= 2, "{reads_after} reads of the running pod");
}
