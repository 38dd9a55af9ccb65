//! `status` and `undeploy` through the real driver and the real `Cluster` against the loopback
//! apiserver simulator (deploy.md § status, undeploy, gc; scenarios S1, S3, S5), calm and under
//! injected transient faults, asserting outcomes and the request log.
//!
//! Layer: integration tests over real HTTP on 127.0.0.1. Decides nothing; never contacts a real
//! cluster. The simulator runs 1000× faster, so the pod's 60 s grace period takes 60 ms.

use std::time::Duration;

use crate::sim_support::{
    FAST, NS, POD, Sim, Weather, agent, attempt, config, image, options, start,
};
use apiary_apiserver_sim::{Resource, Verb};
use apiary_classify::status::StatusState;
use apiary_substrate::driver::{self, UndeployError, UndeployOptions};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A simulator with [`NS`] and the weather applied.
async fn stage(weather: Weather) -> Sim {
    let s = start(FAST, true).await;
    s.set_weather(weather);
    s
}

fn undeploy_options() -> UndeployOptions {
    UndeployOptions {
        wait: true,
        deadline: Duration::from_secs(15),
        poll: Duration::from_millis(200),
        ..UndeployOptions::default()
    }
}

/// S1 + S3: a deployed agent's status is `started` with a present Secret; undeploy sends one
/// fenced delete without a grace override, waits the grace period out, deletes the Secret
/// (uid-fenced), and status is `absent` afterwards.
async fn s3_undeploy_started_pod(weather: Weather) {
    let s = stage(weather).await;
    let cluster = s.cluster().await;
    let desired = config(&image(""));
    driver::deploy(
        &cluster,
        &desired,
        &options(Duration::from_secs(15), Duration::from_millis(200)),
    )
    .await
    .expect("deployed");
    let pod = s.pod().expect("pod");
    let fence = (
        pod.metadata.uid.clone().expect("uid"),
        pod.metadata.resource_version.clone().expect("rv"),
    );
    let status = driver::status(&cluster, &agent(), Some(&desired))
        .await
        .expect("status");
    assert_eq!(status.state, StatusState::Started);
    assert_eq!(status.intent_matches, Some(true));
    assert!(status.secret.as_ref().is_some_and(|s| s.exists));
    s.sim.clear_requests();
    let report = driver::undeploy(&cluster, &agent(), &undeploy_options())
        .await
        .expect("undeployed");
    assert_eq!(report.pod.as_deref(), Some(POD));
    assert!(report.pod_deleted && report.waited, "{report:?}");
    assert_eq!(report.secrets.len(), 1, "{report:?}");
    assert!(report.kept_secrets.is_empty());

    let deletes = s.of(Verb::Delete, Resource::Pods);
    assert!(!deletes.is_empty());
    for delete in &deletes {
        let body = delete.body_json().expect("body");
        assert!(body.get("gracePeriodSeconds").is_none(), "{body}");
        assert_eq!(body["preconditions"]["uid"], fence.0.as_str());
        assert_eq!(body["preconditions"]["resourceVersion"], fence.1.as_str());
    }
    assert_eq!(s.succeeded(Verb::Delete, Resource::Pods).len(), 1);
    let secret_deletes = s.succeeded(Verb::Delete, Resource::Secrets);
    assert_eq!(secret_deletes.len(), 1);
    // The Secret goes only after the pod is gone (its last reference).
    let last_pod_read = s
        .sim
        .requests()
        .iter()
        .rposition(|r| r.is(Verb::Get, Resource::Pods) && r.status == Some(404))
        .expect("the wait saw the pod gone");
    let secret_delete = s
        .sim
        .requests()
        .iter()
        .position(|r| r.is(Verb::Delete, Resource::Secrets) && r.status == Some(200))
        .expect("secret deleted");
    assert!(last_pod_read < secret_delete);
    assert!(s.pod_names().is_empty() && s.secret_names().is_empty());
    let status = driver::status(&cluster, &agent(), None)
        .await
        .expect("status");
    assert_eq!(status.state, StatusState::Absent);
}

/// S1 + S5: a foreign pod under the name is reported `foreign` (no condition, no Secret) and
/// undeploy fails with E8 without sending a single write.
async fn s5_undeploy_foreign_pod_touches_nothing(weather: Weather) {
    let s = stage(weather).await;
    let (mut pod, _) = attempt(&config(&image("")), 9);
    pod.metadata = ObjectMeta {
        name: Some(POD.to_owned()),
        namespace: Some(NS.to_owned()),
        ..ObjectMeta::default()
    };
    s.sim.with_model(|m| m.create_pod(NS, pod).expect("pod"));
    let cluster = s.cluster().await;
    let status = driver::status(&cluster, &agent(), None)
        .await
        .expect("status");
    assert_eq!(status.state, StatusState::Foreign);
    assert_eq!((status.condition, status.secret), (None, None));
    let error = driver::undeploy(&cluster, &agent(), &undeploy_options())
        .await
        .expect_err("foreign");
    assert!(
        matches!(error, UndeployError::ForeignPod { ref pod } if pod == POD),
        "{error:?}"
    );
    assert!(s.sim.requests().iter().all(|r| !r.is_mutation()));
    assert_eq!(s.pod_names(), [POD]);
}

mod s3_undeploy_started_pod {
    use super::{Weather, s3_undeploy_started_pod};
    /// S3: undeploy fence-deletes the started pod, waits, then deletes its Secret.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calm() {
        s3_undeploy_started_pod(Weather::Calm).await;
    }
    /// S3 under injected transient faults.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stormy() {
        s3_undeploy_started_pod(Weather::Stormy).await;
    }
}

mod s5_undeploy_foreign_pod_touches_nothing {
    use super::{Weather, s5_undeploy_foreign_pod_touches_nothing};
    /// S5: undeploy of a foreign pod is E8 with no writes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calm() {
        s5_undeploy_foreign_pod_touches_nothing(Weather::Calm).await;
    }
    /// S5 under injected transient faults.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stormy() {
        s5_undeploy_foreign_pod_touches_nothing(Weather::Stormy).await;
    }
}
