//! How a fresh deploy notices its container start, through the real driver and real `Cluster`
//! against the loopback apiserver simulator (deploy.md § Cluster interface and requests, the
//! optional pod watch): with the pod watch, the start itself wakes the wait; with the `watch` verb
//! denied (403), only the next poll's re-read sees it. Asserted on the simulator's request log,
//! never on the clock: the latency figures are measured by the `bench_start_latency` example
//! (BENCHMARKS.md § Deploy: startup detection latency).
//!
//! Layer: integration test over real HTTP on 127.0.0.1. Decides nothing; never contacts a real
//! cluster.

use std::sync::Arc;
use std::time::Duration;

use crate::sim_support::{
    POD, Sim, after_preflight, config, image, options, start, start_after_first_reread,
};
use apiary_apiserver_sim::{LoggedRequest, Resource, Verb};
use apiary_substrate::driver;

/// What a logged request did.
type Target = Option<(Resource, Verb)>;

const GET: Target = Some((Resource::Pods, Verb::Get));
const WATCH: Target = Some((Resource::Pods, Verb::Watch));

/// What a fresh deploy sends after its preflight (namespace check, preflight GC listings and the
/// pod read that finds the name free, four requests at once): the Secret, the pod.
const CREATE_SEQUENCE: [Target; 2] = [
    Some((Resource::Secrets, Verb::Create)),
    Some((Resource::Pods, Verb::Create)),
];

/// Deploys with `poll`, starting the container by hand right after the driver's first
/// successful re-read of the created pod (so the deploy is waiting when it starts), and checks
/// that the deploy sent the [`CREATE_SEQUENCE`] right after its preflight. Returns the requests
/// logged, their targets, and how many had been logged when the container started.
async fn deploy_starting_after_first_reread(
    s: &Arc<Sim>,
    poll: Duration,
) -> (Vec<LoggedRequest>, Vec<Target>, usize) {
    let cluster = s.cluster().await;
    let kubelet = start_after_first_reread(s);
    let deployed = driver::deploy(
        &cluster,
        &config(&image("")),
        &options(Duration::from_secs(3600), poll),
    )
    .await
    .expect("deployed");
    assert_eq!(deployed.pod, POD);
    let at_start = kubelet.await.expect("kubelet").0;
    let requests = s.sim.requests();
    let targets: Vec<_> = requests.iter().map(|r| r.target).collect();
    assert_eq!(
        after_preflight(&targets, true)[..2],
        CREATE_SEQUENCE,
        "{targets:?}"
    );
    (requests, targets, at_start)
}

/// deploy.md § Loop (waiting): with watching, the container start wakes the wait. The poll is an
/// hour, so only a watch event can end a wait in this test; the requests are the create sequence,
/// then one watch from the resourceVersion the pod create answered (no baseline read), which serves
/// every later wait, each wake-up followed by a quorum re-read, the last of which saw the pod
/// running; after the start nothing but that re-read (and no new watch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_deploy_requests_and_start_wakeup_with_watch() {
    let s = Arc::new(start(1.0, true).await);
    let (requests, targets, at_start) =
        deploy_starting_after_first_reread(&s, Duration::from_secs(3600)).await;
    assert_eq!(targets[6], WATCH, "no baseline read: {targets:?}");
    assert!(
        requests[6].query_param("resourceVersion").is_some(),
        "the watch starts from the create's answer: {}",
        requests[6].query
    );
    assert!(
        targets[7..].iter().all(|t| *t == GET),
        "one watch: {targets:?}"
    );
    assert!(targets.len() >= 8, "at least one wake-up: {targets:?}");
    assert!(
        requests.len() - at_start <= 2,
        "after the start only re-reads: {targets:?} (start after {at_start})"
    );
    assert!(requests.len() <= 10, "{} requests", requests.len());
}

/// deploy.md § Cluster interface and requests: with the `watch` verb denied (403), waiting falls
/// back to the poll: every wait after the create (which answered the resourceVersion, so no
/// baseline read) is a refused watch and then a re-read one poll later, the deploy still succeeds,
/// and the start is seen by the first re-read after it (at most one refused watch comes between).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_seen_by_the_next_poll_without_watch() {
    let s = Arc::new(start(1.0, true).await);
    s.sim.faults().deny(Verb::Watch, Some(Resource::Pods));
    let (requests, targets, at_start) =
        deploy_starting_after_first_reread(&s, Duration::from_millis(200)).await;
    assert!(
        targets[6..].chunks(2).all(|pair| pair == [WATCH, GET]),
        "{targets:?}"
    );
    assert!(
        requests
            .iter()
            .filter(|r| r.is(Verb::Watch, Resource::Pods))
            .all(|r| r.status == Some(403)),
        "every watch was refused"
    );
    let after: Vec<_> = targets[at_start..].to_vec();
    assert!(
        after == [GET] || after == [WATCH, GET],
        "the next re-read saw the start: {after:?} ({targets:?})"
    );
}
