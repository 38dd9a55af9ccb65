//! `apiary list`'s listings (deploy.md § list) on both backends, the real `kube-apiserver` and
//! the simulator: `Cluster`'s paginated LISTs with a small page size (real `limit`/`continue`
//! pagination), the inventory they feed (sorted rows, a copied pod under a foreign name skipped
//! and counted, `--all`'s absent agent with its Secret count), and the request count: one request
//! per page per kind, nothing else. No kubelet runs: pods are created as apiary builds them.
//!
//! Layer: integration tests over loopback; the real tier skips without `KUBEBUILDER_ASSETS`.
//! Assertions are on rows and on the request log, never on timings.

use std::num::NonZeroU32;

use crate::real_support::{self, Backend, Stage, attempt, image};
use apiary_apiserver_sim::{Resource, Verb};
use apiary_classify::status::StatusState;
use apiary_substrate::driver::{self, ListOptions};
use apiary_substrate::naming::AgentIdentity;

/// Seven agents, a foreign copy and an agent with only Secrets, listed three per page.
async fn scenario(backend: Backend) {
    let Some(stage) = Stage::start_with(backend, None).await else {
        return;
    };
    let names: Vec<String> = (0..7).map(|i| format!("list agent {i}")).collect();
    for name in &names {
        let agent = AgentIdentity::new(name).expect("agent");
        let (pod, secret) = attempt(&stage.config_for(&agent, &image("")), 1);
        stage.create_secret(&secret).await;
        stage.create_pod(&pod).await;
    }
    let copied = AgentIdentity::new(&names[0]).expect("agent");
    let (mut copy, _) = attempt(&stage.config_for(&copied, &image("")), 2);
    copy.metadata.name = Some("apiary-not-its-name-000000000000".to_owned());
    stage.create_pod(&copy).await;
    let orphan = AgentIdentity::new("list orphan").expect("agent");
    for generation in [5, 6] {
        let (_, secret) = attempt(&stage.config_for(&orphan, &image("")), generation);
        stage.create_secret(&secret).await;
    }
    stage.tap.clear();
    let options = ListOptions {
        selector: None,
        include_absent: true,
        page_size: NonZeroU32::new(3).expect("3"),
    };
    let inventory = driver::list(&stage.cluster(), &options)
        .await
        .expect("the listings succeed");
    let agents: Vec<&str> = inventory.rows.iter().map(|r| r.agent.as_str()).collect();
    let mut expected: Vec<&str> = names.iter().map(String::as_str).collect();
    expected.push("list orphan");
    assert_eq!(agents, expected, "{backend:?}");
    assert_eq!(inventory.skipped_pods, 1, "{backend:?}");
    let orphan_row = inventory.rows.last().expect("rows");
    assert_eq!(orphan_row.state, StatusState::Absent);
    assert_eq!(orphan_row.secrets, 2);
    assert!(
        inventory.rows[..7]
            .iter()
            .all(|r| r.secrets == 1 && r.pod.is_some())
    );
    let log = stage.requests();
    // Eight pods and nine Secrets, three per page.
    assert_eq!(
        real_support::of(&log, Verb::List, Resource::Pods).len(),
        3,
        "{backend:?}"
    );
    assert_eq!(
        real_support::of(&log, Verb::List, Resource::Secrets).len(),
        3,
        "{backend:?}"
    );
    assert_eq!(log.len(), 6, "only the paged lists: {backend:?}");
    for request in &log {
        assert_eq!(request.query_param("limit").as_deref(), Some("3"));
        assert!(request.query_param("resourceVersion").is_none());
        assert!(
            request
                .query_param("labelSelector")
                .is_some_and(|s| s == "app.kubernetes.io/managed-by=apiary")
        );
    }
}

/// On the simulator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pages_and_inventory_on_the_simulator() {
    scenario(Backend::Sim).await;
}

/// On the real `kube-apiserver`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pages_and_inventory_on_the_real_server() {
    scenario(Backend::Real).await;
}
