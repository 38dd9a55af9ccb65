//! `PodSeeds` against the loopback apiserver simulator (seeds.md § Resolving, § Watch mode):
//! pagination across real pages, the kubeconfig's namespace, a 403 from the authorizer, and
//! watch-mode updates (a pod added, terminating, deleted) with no LIST while the watch is healthy.
//!
//! I/O tests over real HTTP on 127.0.0.1; the simulator's request log is the witness.

use std::num::NonZeroU32;
use std::time::Duration;

use apiary_apiserver_sim::{Resource, SimOptions, Simulator, Verb};
use apiary_cluster_model::Preconditions;
use apiary_seeds::{Pods, Port, SkipReason};
use apiary_seeds_kube::{PodSeeds, SeedsError, SeedsMode, SeedsOptions};
use k8s_openapi::api::core::v1::Pod;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

use crate::mock::eventually;
use crate::watch::{addrs, resolves_to};

async fn client(sim: &Simulator) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig_yaml("ring"))
        .expect("the simulator's kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client configuration");
    kube::Client::try_from(config).expect("a client")
}

fn seed_pod(name: &str, ip: &str, port: i32) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ring", "labels": {"app": "ring-node"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "main", "image": "ring:1",
                 "ports": [{"name": "gossip", "containerPort": port}]}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
    }))
    .expect("a pod")
}

fn pods(namespace: Option<&str>) -> Pods {
    Pods {
        namespace: namespace.map(str::to_owned),
        label_selector: "app=ring-node".to_owned(),
        port: Port::Name("gossip".to_owned()),
    }
}

fn list_requests(sim: &Simulator) -> Vec<apiary_apiserver_sim::LoggedRequest> {
    sim.requests()
        .into_iter()
        .filter(|request| request.target == Some((Resource::Pods, Verb::List)))
        .collect()
}

async fn started() -> Simulator {
    let sim = Simulator::start(SimOptions::default().with_time_scale(1000.0))
        .await
        .expect("the simulator starts");
    sim.ensure_namespace("ring");
    sim
}

/// Pagination across real pages: 12 pods in pages of 5 take three LISTs, the later two with
/// `continue`, and equal one unpaginated LIST; a pod of another app is not matched.
#[tokio::test]
async fn pages_of_the_simulator_are_followed() {
    let sim = started().await;
    sim.with_model(|model| {
        for i in 0..12 {
            model
                .insert_pod(seed_pod(
                    &format!("pod-{i:02}"),
                    &format!("10.0.0.{}", i + 1),
                    7000,
                ))
                .unwrap();
        }
        let mut stranger = seed_pod("stranger", "10.0.9.9", 7000);
        stranger.metadata.labels = Some([("app".to_owned(), "other".to_owned())].into());
        model.insert_pod(stranger).unwrap();
    });
    let options = SeedsOptions {
        page_size: NonZeroU32::new(5).unwrap(),
        mode: SeedsMode::List,
    };
    let mut paged = PodSeeds::with_client(pods(None), client(&sim).await)
        .unwrap()
        .with_options(options);
    assert_eq!(
        paged.namespace(),
        "ring",
        "the kubeconfig context's namespace"
    );
    sim.clear_requests();
    let result = paged.resolve_detailed().await.unwrap();
    assert_eq!(result.addresses.len(), 12);
    assert_eq!(result.report.matched, 12);
    let lists = list_requests(&sim);
    assert_eq!(lists.len(), 3);
    assert_eq!(lists[0].query_param("continue"), None);
    assert!(
        lists[1].query_param("continue").is_some() && lists[2].query_param("continue").is_some()
    );
    assert!(
        lists
            .iter()
            .all(|request| request.query_param("resourceVersion").is_none())
    );
    assert!(
        lists
            .iter()
            .all(|request| request.query_param("limit").as_deref() == Some("5"))
    );

    let mut whole = PodSeeds::with_client(pods(Some("ring")), client(&sim).await).unwrap();
    assert_eq!(whole.resolve_detailed().await.unwrap(), result);
}

/// A 403 from the authorizer is a `Client` error with status 403.
#[tokio::test]
async fn forbidden_list_is_a_client_error() {
    let sim = started().await;
    sim.with_model(|model| model.insert_pod(seed_pod("a", "10.0.0.1", 7000)).map(drop))
        .unwrap();
    sim.faults().deny(Verb::List, Some(Resource::Pods));
    let mut seeds = PodSeeds::with_client(pods(Some("ring")), client(&sim).await).unwrap();
    let error = seeds.resolve().await.unwrap_err();
    assert!(matches!(error, SeedsError::Client(_)), "{error:?}");
    assert_eq!(error.status_code(), Some(403));
}

/// Watch mode: a pod added appears, a terminating pod leaves the addresses, a deleted pod is
/// gone, and none of it costs a LIST while the watch is healthy.
#[tokio::test]
async fn watch_mode_follows_the_simulator() {
    let sim = started().await;
    sim.with_model(|model| model.insert_pod(seed_pod("a", "10.0.0.1", 7000)).map(drop))
        .unwrap();
    let options = SeedsOptions {
        mode: SeedsMode::Watch,
        ..SeedsOptions::default()
    };
    let mut seeds = PodSeeds::with_client(pods(Some("ring")), client(&sim).await)
        .unwrap()
        .with_options(options);
    sim.clear_requests();
    assert_eq!(seeds.resolve().await.unwrap(), addrs(&["10.0.0.1:7000"]));
    eventually("the watch synced", || seeds.watch_synced()).await;

    sim.with_model(|model| model.insert_pod(seed_pod("b", "10.0.0.2", 7001)).map(drop))
        .unwrap();
    resolves_to(&mut seeds, &["10.0.0.1:7000", "10.0.0.2:7001"]).await;

    // A graceful delete of a running pod marks it terminating first.
    sim.with_model(|model| {
        model
            .delete_pod("ring", "b", &Preconditions::default(), Some(3600))
            .map(drop)
    })
    .unwrap();
    resolves_to(&mut seeds, &["10.0.0.1:7000"]).await;
    let report = seeds.resolve_detailed().await.unwrap().report;
    assert_eq!(report.skipped.get(SkipReason::Terminating), 1);

    sim.with_model(|model| {
        model
            .delete_pod("ring", "b", &Preconditions::default(), Some(0))
            .map(drop)
    })
    .unwrap();
    for _ in 0..500 {
        if seeds.resolve_detailed().await.unwrap().report.matched == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        seeds.resolve_detailed().await.unwrap().report.matched,
        1,
        "the deleted pod is gone"
    );
    assert_eq!(list_requests(&sim).len(), 1, "only the initial LIST");
}
