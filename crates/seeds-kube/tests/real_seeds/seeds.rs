//! `PodSeeds` against a real `kube-apiserver` + etcd (the real-server tier, README.md § Testing):
//! list mode over 2,000 real pods with real pagination, the `410 Expired` restart provoked for real
//! (etcd compacted while the listing is paused between two pages), the third 410 surfaced as an
//! error, and watch mode through real watch events (add, IP change, delete) with a relist after a
//! real `410` from a watch resumed at a compacted `resourceVersion`; and the IP family and
//! running-container narrowings over dual-stack `podIPs` and container statuses the real server
//! stored.
//!
//! How the listing is paused: the client's tap (`apiary_envtest::tap`) holds the `continue` request
//! until the test has written an unrelated object and compacted etcd at the new revision, so the
//! token's snapshot is gone when the request reaches the server. How the watch is made stale: the
//! tap ends the open stream and holds the re-watch while a pod is added and etcd compacted. No
//! fake kubelet runs here: pods are bound by `spec.nodeName` and given their IPs by status writes.
//!
//! Layer: integration tests; loopback only; they skip without `KUBEBUILDER_ASSETS`. No timed
//! assertions (durations are printed, not asserted).

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use apiary_apiserver_sim::{LoggedRequest, Resource, Verb};
use apiary_envtest::tap::{Gate, tapped_client};
use apiary_seeds::{Filter, IpFamily, Pods, Port, SkipReason};
use apiary_seeds_kube::{PodSeeds, SeedsError, SeedsMode, SeedsOptions};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::stage::{HANG, Stage, real_stage};

/// The seed pods' label.
const SELECTOR: &str = "app=ring-node";
/// Their container port.
const PORT: u16 = 7000;

/// The `i`-th pod address: 10.1.x.y, unique for i < 65,000.
fn ip(i: usize) -> String {
    format!("10.1.{}.{}", i / 250, i % 250 + 1)
}

fn seed_pod(name: &str, app: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {
            "nodeName": "seeds-node",
            "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "main", "image": "ring:1",
                            "ports": [{"name": "gossip", "containerPort": PORT}]}],
        },
    }))
    .expect("a pod")
}

/// Create pod `name` (label `app`) and, with `address`, write a `Running` status carrying it.
async fn create_seed(pods: &Api<Pod>, name: &str, app: &str, address: Option<&str>) {
    pods.create(&PostParams::default(), &seed_pod(name, app))
        .await
        .expect("the admin creates the pod");
    if let Some(address) = address {
        set_ip(pods, name, address).await;
    }
}

/// Write a `Running` status with `address` through the status subresource, as a kubelet would.
async fn set_ip(pods: &Api<Pod>, name: &str, address: &str) {
    let status = json!({"status": {
        "phase": "Running",
        "podIP": address,
        "podIPs": [{"ip": address}],
    }});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("the status is written");
}

/// Write an unrelated object (so etcd's revision moves past every earlier snapshot), then compact
/// etcd at the current revision: a token or watch from any earlier resourceVersion is gone.
async fn bump_and_compact(s: &Stage, n: usize) {
    let config_maps: Api<ConfigMap> = Api::namespaced(s.admin(), s.namespace());
    let bump: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": format!("bump-{n}")}})).expect("cm");
    config_maps
        .create(&PostParams::default(), &bump)
        .await
        .expect("the admin writes a ConfigMap");
    let plane = s.plane().expect("a real stage");
    let revision = tokio::task::spawn_blocking(move || plane.compact_etcd())
        .await
        .expect("the compaction thread")
        .expect("etcd compacts");
    assert!(revision > 0);
}

fn seeds(s: &Stage, page_size: u32, mode: SeedsMode) -> PodSeeds {
    let pods = Pods {
        namespace: Some(s.namespace().to_owned()),
        label_selector: SELECTOR.to_owned(),
        port: Port::Name("gossip".to_owned()),
    };
    let client = tapped_client(
        s.plane()
            .expect("real")
            .config(apiary_envtest::Identity::Admin),
        &s.tap,
    );
    PodSeeds::with_client(pods, client)
        .expect("a valid configuration")
        .with_options(SeedsOptions {
            page_size: NonZeroU32::new(page_size).expect("non-zero"),
            mode,
        })
}

fn pod_lists(log: &[LoggedRequest]) -> Vec<&LoggedRequest> {
    log.iter()
        .filter(|r| r.is(Verb::List, Resource::Pods))
        .collect()
}

/// The status of each pod list in the stage's log, in order.
fn pod_list_statuses(s: &Stage) -> Vec<Option<u16>> {
    pod_lists(&s.requests()).iter().map(|r| r.status).collect()
}

/// Holds the next pod list that continues a paginated listing until the gate is released.
fn hold_a_continued_list(s: &Stage) -> Gate {
    s.tap.hold(1, |r| {
        r.is(Verb::List, Resource::Pods) && r.query_param("continue").is_some()
    })
}

fn addresses(range: impl Iterator<Item = usize>) -> Vec<SocketAddr> {
    let mut all: Vec<SocketAddr> = range
        .map(|i| format!("{}:{PORT}", ip(i)).parse().expect("an address"))
        .collect();
    all.sort();
    all
}

/// List mode over 2,000 real pods in pages of 500 follows every `continue` (the first page a
/// quorum read without `resourceVersion`), leaves out pods of another app, and — when etcd is
/// compacted while the listing waits between pages 1 and 2 — gets the real `410 Expired`,
/// discards the first page and lists again from the start, returning the same 2,000 addresses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_mode_pages_2000_real_pods_and_restarts_after_a_real_410() {
    const PODS: usize = 2000;
    let Some(s) = real_stage().await else { return };
    let pods: Api<Pod> = Api::namespaced(s.admin(), s.namespace());
    let began = Instant::now();
    futures::stream::iter(0..PODS)
        .map(|i| {
            let pods = pods.clone();
            async move { create_seed(&pods, &format!("seed-{i:04}"), "ring-node", Some(&ip(i))).await }
        })
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;
    for i in 0..3 {
        create_seed(&pods, &format!("stranger-{i}"), "other", Some("10.9.9.9")).await;
    }
    println!("created and bound {PODS} pods in {:?}", began.elapsed());

    let mut seeds = seeds(&s, 500, SeedsMode::List);
    let began = Instant::now();
    let resolved = seeds.resolve().await.expect("resolved");
    println!("list mode over {PODS} real pods: {:?}", began.elapsed());
    assert_eq!(resolved, addresses(0..PODS));
    let log = s.requests();
    let lists = pod_lists(&log);
    // Five, not four: the real server pages over the namespace's keys, not over the matches.
    // The fourth page fills its 500 at seed-1999 while keys remain (the three strangers), so it
    // carries a continue token, and the fifth page is empty without one.
    assert_eq!(lists.len(), 5, "{lists:?}");
    assert_eq!(lists[0].query_param("continue"), None);
    assert_eq!(lists[0].query_param("resourceVersion"), None);
    assert_eq!(lists[0].query_param("limit").as_deref(), Some("500"));
    assert!(
        lists[1..]
            .iter()
            .all(|r| r.query_param("continue").is_some())
    );
    assert!(lists.iter().all(|r| r.status == Some(200)));

    s.tap.clear();
    let gate = hold_a_continued_list(&s);
    let (resolved, ()) = tokio::join!(seeds.resolve(), async {
        gate.held(1).await;
        bump_and_compact(&s, 0).await;
        gate.release();
    });
    assert_eq!(
        resolved.expect("resolved after the restart"),
        addresses(0..PODS)
    );
    let ok = Some(200);
    let expired = Some(410);
    assert_eq!(
        pod_list_statuses(&s),
        [ok, expired, ok, ok, ok, ok, ok],
        "{:?}",
        s.requests()
    );
    let log = s.requests();
    let continued: Vec<_> = pod_lists(&log)
        .iter()
        .map(|r| r.query_param("continue").is_some())
        .collect();
    assert_eq!(continued, [false, true, false, true, true, true, true]);
}

/// The third real `410 Expired` in one resolve is surfaced as a `Client` error carrying the
/// server's Status (code 410, reason `Expired`), never as an empty or partial list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_mode_third_real_410_is_an_error() {
    let Some(s) = real_stage().await else { return };
    let pods: Api<Pod> = Api::namespaced(s.admin(), s.namespace());
    for i in 0..3 {
        create_seed(&pods, &format!("seed-{i}"), "ring-node", Some(&ip(i))).await;
    }
    let gates: Vec<_> = (0..3).map(|_| hold_a_continued_list(&s)).collect();
    let mut seeds = seeds(&s, 1, SeedsMode::List);
    let (resolved, ()) = tokio::join!(seeds.resolve(), async {
        for (n, gate) in gates.iter().enumerate() {
            gate.held(1).await;
            bump_and_compact(&s, n).await;
            gate.release();
        }
    });
    let error = resolved.expect_err("three expired tokens");
    match &error {
        SeedsError::Client(kube::Error::Api(status)) => {
            assert_eq!(
                (status.code, status.reason.as_str()),
                (410, "Expired"),
                "{status:?}"
            );
        }
        other => panic!("not the server's 410: {other:?}"),
    }
    assert_eq!(error.status_code(), Some(410));
    let (ok, expired) = (Some(200), Some(410));
    assert_eq!(
        pod_list_statuses(&s),
        [ok, expired, ok, expired, ok, expired],
        "{:?}",
        s.requests()
    );
}

/// Resolve from the synced view until the addresses equal `expected` (the watch applies events
/// asynchronously); never resolves while unsynced (that would LIST). Bounded by [`HANG`].
async fn resolve_until(seeds: &mut PodSeeds, what: &str, expected: &[SocketAddr]) {
    let started = Instant::now();
    loop {
        if seeds.watch_synced()
            && let Ok(resolved) = seeds.resolve().await
            && resolved == expected
        {
            return;
        }
        assert!(started.elapsed() < HANG, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Watch mode through real watch events: after the initial LIST, an added pod, an IP change and
/// a deleted pod reach the view through the watch alone (no further LIST); then the stream is
/// ended and the re-watch held while a pod is added and etcd compacted, so the re-watch resumes
/// at a compacted `resourceVersion`: the server answers 410, the task relists (a LIST before the
/// next WATCH) and the view holds the pod it never saw an event for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_mode_follows_real_events_and_relists_after_a_real_410() {
    let Some(s) = real_stage().await else { return };
    let pods: Api<Pod> = Api::namespaced(s.admin(), s.namespace());
    for i in 0..3 {
        create_seed(&pods, &format!("seed-{i}"), "ring-node", Some(&ip(i))).await;
    }
    let mut seeds = seeds(&s, 500, SeedsMode::Watch);
    assert_eq!(
        seeds.resolve().await.expect("first resolve"),
        addresses(0..3)
    );
    resolve_until(&mut seeds, "the watch is synced", &addresses(0..3)).await;

    // Add: created, then given an address.
    create_seed(&pods, "seed-3", "ring-node", Some(&ip(3))).await;
    resolve_until(&mut seeds, "the added pod", &addresses(0..4)).await;
    // IP change: seed-0 moves to address 10.
    set_ip(&pods, "seed-0", &ip(10)).await;
    resolve_until(
        &mut seeds,
        "the IP change",
        &addresses([1, 2, 3, 10].into_iter()),
    )
    .await;
    // Delete: graceful (terminating, skipped at once), then finished with grace 0.
    pods.delete("seed-1", &DeleteParams::default())
        .await
        .expect("graceful delete");
    resolve_until(
        &mut seeds,
        "the terminating pod",
        &addresses([2, 3, 10].into_iter()),
    )
    .await;
    pods.delete("seed-1", &DeleteParams::default().grace_period(0))
        .await
        .expect("final delete");
    let lists = pod_lists(&s.requests()).len();
    assert_eq!(lists, 1, "only the initial LIST while the watch is healthy");

    // A stale resume point: end the stream, hold the re-watch, add a pod, compact.
    s.tap.clear();
    let gate = s.tap.hold(1, |r| r.is(Verb::Watch, Resource::Pods));
    s.tap.cut_watches();
    gate.held(1).await;
    create_seed(&pods, "seed-4", "ring-node", Some(&ip(4))).await;
    bump_and_compact(&s, 0).await;
    gate.release();
    let started = Instant::now();
    let relisted = loop {
        let log = s.requests();
        let targets: Vec<_> = log.iter().map(|r| r.target).collect();
        if let Some(at) = targets
            .iter()
            .position(|t| *t == Some((Resource::Pods, Verb::List)))
            && targets[at..].contains(&Some((Resource::Pods, Verb::Watch)))
        {
            break log;
        }
        assert!(
            started.elapsed() < HANG,
            "no relist after the stale watch: {log:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let held_watch = &relisted[0];
    assert!(held_watch.is(Verb::Watch, Resource::Pods));
    println!(
        "the watch resumed at a compacted resourceVersion was answered {:?} (410 in the stream \
         when 200); log: {relisted:?}",
        held_watch.status
    );
    let expected = addresses([2, 3, 4, 10].into_iter());
    resolve_until(&mut seeds, "the relisted view", &expected).await;
    let lists_now = pod_lists(&s.requests()).len();
    assert_eq!(
        lists_now, 1,
        "the relist only; resolves answered from the view"
    );
}

/// Write a status with these addresses (`podIP` = the first) and the `main` container running or
/// waiting, through the status subresource, as a kubelet would.
async fn set_dual_status(pods: &Api<Pod>, name: &str, ips: &[&str], running: bool) {
    let state = if running {
        json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}})
    } else {
        json!({"waiting": {"reason": "ContainerCreating"}})
    };
    let ip_entries: Vec<_> = ips.iter().map(|ip| json!({"ip": ip})).collect();
    let status = json!({"status": {
        "phase": if running { "Running" } else { "Pending" },
        "podIP": ips[0],
        "podIPs": ip_entries,
        "containerStatuses": [{"name": "main", "image": "ring:1", "imageID": "", "ready": false,
                               "restartCount": 0, "state": state}],
    }});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("the status is written");
}

fn socket(text: &str) -> SocketAddr {
    text.parse().expect("an address")
}

/// seeds.md § Address family and running containers, on what a real apiserver stores: a
/// dual-stack pod (IPv4 primary), an IPv6-primary dual-stack pod whose container is still
/// waiting, and a single-stack IPv4 pod. Without a filter the primary addresses; `ipv6` the IPv6
/// entries (the single-stack pod counted `no_family_address`); `ipv4` looks past the IPv6
/// primary; with `require_running` too the waiting pod is `not_running`; and in watch mode the
/// same filter follows the real status write that starts the waiting container.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ip_family_and_require_running_over_real_pod_statuses() {
    let Some(s) = real_stage().await else { return };
    let pods: Api<Pod> = Api::namespaced(s.admin(), s.namespace());
    create_seed(&pods, "dual-a", "ring-node", None).await;
    set_dual_status(&pods, "dual-a", &["10.2.0.1", "fd00::1"], true).await;
    create_seed(&pods, "dual-b", "ring-node", None).await;
    set_dual_status(&pods, "dual-b", &["fd00::2", "10.2.0.2"], false).await;
    create_seed(&pods, "single-c", "ring-node", None).await;
    set_dual_status(&pods, "single-c", &["10.2.0.3"], true).await;
    let stored = pods.get("dual-b").await.expect("the pod");
    let stored_ips: Vec<String> = stored
        .status
        .and_then(|status| status.pod_ips)
        .unwrap_or_default()
        .into_iter()
        .map(|entry| entry.ip)
        .collect();
    assert_eq!(
        stored_ips,
        ["fd00::2", "10.2.0.2"],
        "the server keeps both families"
    );

    let resolve = |filter: Filter| {
        let mut seeds = seeds(&s, 500, SeedsMode::List).with_filter(filter);
        async move { seeds.resolve_detailed().await.expect("resolved") }
    };
    let loose = resolve(Filter::default()).await;
    assert_eq!(
        loose.addresses,
        [
            socket("10.2.0.1:7000"),
            socket("10.2.0.3:7000"),
            socket("[fd00::2]:7000")
        ]
    );
    let v6 = resolve(Filter {
        ip_family: Some(IpFamily::Ipv6),
        ..Filter::default()
    })
    .await;
    assert_eq!(
        v6.addresses,
        [socket("[fd00::1]:7000"), socket("[fd00::2]:7000")]
    );
    assert_eq!(v6.report.skipped.get(SkipReason::NoFamilyAddress), 1);
    let v4 = resolve(Filter {
        ip_family: Some(IpFamily::Ipv4),
        ..Filter::default()
    })
    .await;
    assert_eq!(
        v4.addresses,
        [
            socket("10.2.0.1:7000"),
            socket("10.2.0.2:7000"),
            socket("10.2.0.3:7000")
        ]
    );
    let strict = Filter {
        ip_family: Some(IpFamily::Ipv6),
        require_running: true,
    };
    let both = resolve(strict).await;
    assert_eq!(both.addresses, [socket("[fd00::1]:7000")]);
    assert_eq!(both.report.skipped.get(SkipReason::NotRunning), 1);
    assert_eq!(both.report.skipped.get(SkipReason::NoFamilyAddress), 1);

    let mut watching = seeds(&s, 500, SeedsMode::Watch).with_filter(strict);
    assert_eq!(
        watching.resolve().await.expect("first resolve"),
        [socket("[fd00::1]:7000")]
    );
    resolve_until(
        &mut watching,
        "the watch is synced",
        &[socket("[fd00::1]:7000")],
    )
    .await;
    set_dual_status(&pods, "dual-b", &["fd00::2", "10.2.0.2"], true).await;
    resolve_until(
        &mut watching,
        "the started container",
        &[socket("[fd00::1]:7000"), socket("[fd00::2]:7000")],
    )
    .await;
}
