//! `list` over the in-memory fake: the marker selector (with the caller's), one row per agent
//! with what its objects say, foreign objects skipped, and `--all`'s absent rows. Test-only.

use apiary_classify::status::StatusState;
use serde_json::json;

use super::*;
use crate::config::DeployConfig;
use crate::driver::{DeployOptions, deploy};
use crate::fake::FakeCluster;

const NS: &str = "agents";
const IMAGE: &str = "registry.example.com/team/agent@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

use crate::fake::run_now as block;

/// Deploy a started agent `name` into `fake`.
fn deployed(fake: &FakeCluster, name: &str) -> AgentIdentity {
    let agent = AgentIdentity::new(name).expect("agent");
    let config = DeployConfig::new(NS, IMAGE)
        .validate(&agent)
        .expect("valid");
    block(deploy(fake, &config, &DeployOptions::for_config(&config))).expect("deployed");
    agent
}

/// The marker label alone, or ANDed with the caller's non-blank selector.
#[test]
fn the_selector_is_the_marker_and_the_callers() {
    let marker = "app.kubernetes.io/managed-by=apiary";
    assert_eq!(list_selector(None), marker);
    assert_eq!(list_selector(Some("")), marker);
    assert_eq!(list_selector(Some("  ")), marker);
    assert_eq!(
        list_selector(Some(" team=research ")),
        format!("{marker},team=research")
    );
}

/// One row per agent, sorted, with its pod, state, restarts of the `agent` container, the
/// image's repository and short digest and its Secret; foreign pods are not listed or counted,
/// and a marked pod under no valid claim is skipped and counted.
#[test]
fn rows_say_what_each_agents_objects_say() {
    let fake = FakeCluster::new(NS);
    let b = deployed(&fake, "bee");
    let a = deployed(&fake, "ant");
    let pod = |name: &str, labels: serde_json::Value, annotations: serde_json::Value| {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "spec": {"containers": [{"name": "agent", "image": IMAGE}]},
        }))
        .expect("pod")
    };
    fake.insert_pod(pod("web", json!({"app": "web"}), json!({})))
        .expect("inserted");
    fake.insert_pod(pod(
        "claims-nothing",
        json!({"app.kubernetes.io/managed-by": "apiary"}),
        json!({"apiary.dev/agent-name": "not a valid AGENT!"}),
    ))
    .expect("inserted");
    let inventory = block(list(&fake, &ListOptions::default())).expect("listed");
    let agents: Vec<&str> = inventory.rows.iter().map(|r| r.agent.as_str()).collect();
    assert_eq!(agents, ["ant", "bee"]);
    for (row, agent) in inventory.rows.iter().zip([&a, &b]) {
        assert_eq!(row.agent_id, agent.id());
        assert_eq!(row.pod, Some(agent.pod_name()));
        assert_eq!(row.state, StatusState::Started);
        assert_eq!(row.restarts, Some(0));
        let image = row.image.as_ref().expect("image");
        assert_eq!(image.repository, "registry.example.com/team/agent");
        assert_eq!(image.digest.as_deref(), Some("sha256:bbbbbbbbbbbb"));
        assert_eq!(row.secrets, 1);
    }
    assert_eq!(inventory.skipped_pods, 1, "only the marked, unclaimed pod");
    assert_eq!(inventory.skipped_secrets, 0);
}

/// Restarts are the `agent` container's, not another container's listed before it.
#[test]
fn restarts_are_the_agent_containers() {
    let fake = FakeCluster::new(NS);
    let agent = deployed(&fake, "ant");
    let mut pod = fake.pod(&agent.pod_name()).expect("pod");
    let status = pod.status.get_or_insert_default();
    let statuses = status.container_statuses.get_or_insert_default();
    let mut sidecar = statuses.first().expect("agent status").clone();
    sidecar.name = "sidecar".into();
    sidecar.restart_count = 7;
    statuses.insert(0, sidecar);
    statuses
        .iter_mut()
        .filter(|c| c.name == "agent")
        .for_each(|c| c.restart_count = 2);
    assert_eq!(listed_pod(&pod).restarts, Some(2));
    assert_eq!(
        listed_pod(&pod).agent_name.as_deref(),
        Some("ant"),
        "the agent-name claim is read"
    );
}

/// The caller's selector narrows both listings; `--all` adds an agent with only its Secret as
/// `absent`, and without it such an agent has no row.
#[test]
fn the_selector_narrows_and_all_adds_absent_agents() {
    let fake = FakeCluster::new(NS);
    let agent = deployed(&fake, "ant");
    let narrowed = ListOptions {
        selector: Some("team=nobody".into()),
        ..ListOptions::default()
    };
    assert!(
        block(list(&fake, &narrowed))
            .expect("listed")
            .rows
            .is_empty()
    );
    fake.remove_pod(&agent.pod_name()).expect("removed");
    let default = block(list(&fake, &ListOptions::default())).expect("listed");
    assert!(default.rows.is_empty(), "{default:?}");
    let all = ListOptions {
        include_absent: true,
        ..ListOptions::default()
    };
    let inventory = block(list(&fake, &all)).expect("listed");
    assert_eq!(inventory.rows.len(), 1, "{inventory:?}");
    assert_eq!(inventory.rows[0].state, StatusState::Absent);
    assert_eq!(inventory.rows[0].pod, None);
    assert_eq!(inventory.rows[0].secrets, 1);
    let secret = &fake.secrets()[0];
    assert_eq!(
        listed_secret(secret).agent_name.as_deref(),
        Some("ant"),
        "the Secret's claim is read"
    );
}
