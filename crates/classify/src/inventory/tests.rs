//! Tests of the inventory (deploy.md § list): which listed objects become rows, their state,
//! age, restarts, image and Secret count, the sort, and `--all`'s absent rows.

use super::*;
use crate::binding::Owner;
use crate::facts::{ContainerState, ObjectMarks, PodFacts};

/// A stand-in derivation: id `id-<name>`, pod `apiary-<name>` (the shell's is SHA-256).
fn names(agent: &str) -> Option<AgentNames> {
    (!agent.is_empty()).then(|| AgentNames {
        owner: Owner::apiary(format!("id-{agent}")),
        pod_name: format!("apiary-{agent}"),
    })
}

#[allow(
    clippy::field_reassign_with_default,
    reason = "field by field, so a mark added later keeps its default"
)]
fn marks(name: &str, agent: &str) -> ObjectMarks {
    // Field by field, so a mark added later keeps its default here.
    let mut marks = ObjectMarks::default();
    marks.name = Some(name.to_owned());
    marks.uid = Some(format!("uid-{name}"));
    marks.resource_version = Some("5".to_owned());
    marks.managed_by = Some("apiary".to_owned());
    marks.binding_version = Some("1".to_owned());
    marks.agent_id = Some(format!("id-{agent}"));
    marks.created_at_unix = Some(1_000);
    marks
}

fn pod(agent: &str, state: Option<ContainerState>) -> ListedPod {
    ListedPod {
        observed: ObservedPod {
            marks: marks(&format!("apiary-{agent}"), agent),
            facts: PodFacts {
                phase: Some("Running".to_owned()),
                agent: state,
                conditions: Vec::new(),
                env_from_secret: Some(format!("apiary-{agent}-00000001")),
                image: Some("spec.example/agent@sha256:ffffffffffffffffff".to_owned()),
                workspace_claim: None,
            },
        },
        agent_name: Some(agent.to_owned()),
        restarts: Some(0),
        image: Some(
            "registry.example.com/team/agent@sha256:0123456789abcdef0123456789abcdef".to_owned(),
        ),
    }
}

fn secret(agent: &str, generation: &str) -> ListedSecret {
    ListedSecret {
        observed: ObservedSecret {
            marks: marks(&format!("apiary-{agent}-{generation}"), agent),
        },
        agent_name: Some(agent.to_owned()),
    }
}

fn run(pods: &[ListedPod], secrets: &[ListedSecret], all: bool) -> Inventory {
    inventory(
        pods,
        secrets,
        Some(1_090),
        InventoryOptions {
            include_absent: all,
        },
        names,
    )
}

/// Rows are sorted by agent name, whatever the listing order.
#[test]
fn rows_are_sorted_by_agent() {
    let pods = [
        pod("zeta", Some(ContainerState::Running)),
        pod("alpha", Some(ContainerState::Running)),
        pod("mid", Some(ContainerState::Running)),
    ];
    let agents: Vec<_> = run(&pods, &[], false)
        .rows
        .into_iter()
        .map(|r| r.agent)
        .collect();
    assert_eq!(agents, ["alpha", "mid", "zeta"]);
}

/// A row carries the status vocabulary's state, the server-clock age, restarts, the short
/// image and the agent's Secret count.
#[test]
fn a_row_shows_state_age_restarts_image_and_secrets() {
    let mut running = pod("alpha", Some(ContainerState::Running));
    running.restarts = Some(3);
    let secrets = [secret("alpha", "00000001"), secret("alpha", "00000002")];
    let inventory = run(&[running], &secrets, false);
    assert_eq!(inventory.skipped_pods, 0);
    let row = &inventory.rows[0];
    assert_eq!(row.agent, "alpha");
    assert_eq!(row.agent_id, "id-alpha");
    assert_eq!(row.pod.as_deref(), Some("apiary-alpha"));
    assert_eq!(row.state, StatusState::Started);
    assert_eq!(row.age_seconds, Some(90));
    assert_eq!(row.restarts, Some(3));
    assert_eq!(
        row.image,
        Some(ImageSummary {
            repository: "registry.example.com/team/agent".to_owned(),
            digest: Some("sha256:0123456789ab".to_owned()),
        })
    );
    assert_eq!(row.secrets, 2);
}

/// Each settled startup state and the deletion mark map to the `status` names.
#[test]
fn states_use_the_status_vocabulary() {
    let terminated = pod(
        "b",
        Some(ContainerState::Terminated {
            exit_code: 1,
            reason: Some("Error".to_owned()),
        }),
    );
    let starting = pod(
        "c",
        Some(ContainerState::Waiting {
            reason: Some("ContainerCreating".to_owned()),
            message: None,
        }),
    );
    let mut deleting = pod("d", Some(ContainerState::Running));
    deleting.observed.marks.deletion_marked = true;
    let states: Vec<_> = run(&[terminated, starting, deleting], &[], false)
        .rows
        .iter()
        .map(|r| r.state.as_str())
        .collect();
    assert_eq!(states, ["terminated", "starting", "deleting"]);
}

/// A pod waiting on its Secret is settled from the Secret listing: listed → still starting,
/// not listed → broken (deploy.md § Pull-failure classifier and Secret settling).
#[test]
fn a_pending_secret_check_is_settled_from_the_secret_listing() {
    let waiting = || {
        pod(
            "alpha",
            Some(ContainerState::Waiting {
                reason: Some("CreateContainerConfigError".to_owned()),
                message: Some("secret \"apiary-alpha-00000001\" not found".to_owned()),
            }),
        )
    };
    let with = run(&[waiting()], &[secret("alpha", "00000001")], false);
    assert_eq!(with.rows[0].state, StatusState::Starting);
    let without = run(&[waiting()], &[], false);
    assert_eq!(without.rows[0].state, StatusState::Broken);
}

/// Foreign and unverifiable pods are skipped and counted, never rows: another agent's id, a
/// missing name annotation, an unknown binding version, no uid, and a copy of an agent's pod
/// under a name that is not that agent's pod name.
#[test]
fn foreign_and_unverifiable_pods_are_skipped_and_counted() {
    let mut other_id = pod("a", Some(ContainerState::Running));
    other_id.observed.marks.agent_id = Some("id-b".to_owned());
    let mut no_name = pod("b", Some(ContainerState::Running));
    no_name.agent_name = None;
    let mut binding = pod("c", Some(ContainerState::Running));
    binding.observed.marks.binding_version = Some("2".to_owned());
    let mut no_uid = pod("d", Some(ContainerState::Running));
    no_uid.observed.marks.uid = None;
    let mut renamed = pod("e", Some(ContainerState::Running));
    renamed.observed.marks.name = Some("copy-of-e".to_owned());
    let mut underivable = pod("f", Some(ContainerState::Running));
    underivable.agent_name = Some(String::new());
    let own = pod("g", Some(ContainerState::Running));
    let inventory = run(
        &[
            other_id,
            no_name,
            binding,
            no_uid,
            renamed,
            underivable,
            own,
        ],
        &[],
        false,
    );
    assert_eq!(inventory.skipped_pods, 6);
    assert_eq!(inventory.rows.len(), 1);
    assert_eq!(inventory.rows[0].agent, "g");
}

/// Without `--all` an agent with Secrets and no pod is not shown; with it, it is `absent` with
/// its Secret count and nothing else.
#[test]
fn all_adds_absent_agents_with_their_secret_count() {
    let pods = [pod("alpha", Some(ContainerState::Running))];
    let secrets = [
        secret("alpha", "00000001"),
        secret("orphan", "00000001"),
        secret("orphan", "00000002"),
        secret("orphan", "00000003"),
    ];
    let plain = run(&pods, &secrets, false);
    assert_eq!(plain.rows.len(), 1);
    let all = run(&pods, &secrets, true);
    assert_eq!(all.rows.len(), 2);
    let orphan = &all.rows[1];
    assert_eq!(orphan.agent, "orphan");
    assert_eq!(orphan.state, StatusState::Absent);
    assert_eq!(orphan.pod, None);
    assert_eq!(orphan.secrets, 3);
    assert_eq!(orphan.age_seconds, None);
    assert_eq!(orphan.image, None);
}

/// An agent whose pod name holds a foreign pod has no row of its own pod; `--all` shows it as
/// absent when it has Secrets.
#[test]
fn an_agent_behind_a_foreign_pod_is_absent_with_all() {
    let mut foreign = pod("alpha", Some(ContainerState::Running));
    foreign.observed.marks.agent_id = Some("id-someone-else".to_owned());
    let inventory = run(&[foreign], &[secret("alpha", "00000001")], true);
    assert_eq!(inventory.skipped_pods, 1);
    assert_eq!(inventory.rows.len(), 1);
    assert_eq!(inventory.rows[0].state, StatusState::Absent);
}

/// Secrets that do not verify as the agent they claim are counted as skipped, not as the
/// agent's.
#[test]
fn unverified_secrets_count_for_no_agent() {
    let mut forged = secret("alpha", "00000002");
    forged.observed.marks.agent_id = Some("id-beta".to_owned());
    let inventory = run(
        &[pod("alpha", Some(ContainerState::Running))],
        &[secret("alpha", "00000001"), forged],
        true,
    );
    assert_eq!(inventory.skipped_secrets, 1);
    assert_eq!(inventory.rows[0].secrets, 1);
    assert_eq!(inventory.rows.len(), 1);
}

/// Without the server clock no age or time left is shown (the local clock is never used); a
/// creation time ahead of the clock reads as age 0; time left is negative once expired.
#[test]
fn age_and_expiry_come_from_the_server_clock_only() {
    let mut p = pod("alpha", Some(ContainerState::Running));
    p.observed.marks.expires_at = Some(crate::expiry::format_instant(1_060));
    let no_clock = inventory(
        std::slice::from_ref(&p),
        &[],
        None,
        InventoryOptions::default(),
        names,
    );
    assert_eq!(no_clock.rows[0].age_seconds, None);
    assert_eq!(no_clock.rows[0].expires_in_seconds, None);
    assert_eq!(no_clock.rows[0].expires_at_unix, Some(1_060));
    let early = inventory(
        std::slice::from_ref(&p),
        &[],
        Some(900),
        InventoryOptions::default(),
        names,
    );
    assert_eq!(early.rows[0].age_seconds, Some(0));
    assert_eq!(early.rows[0].expires_in_seconds, Some(160));
    assert_eq!(run(&[p], &[], false).rows[0].expires_in_seconds, Some(-30));
}

/// The image summary keeps the repository and 12 hex of the digest; a reference without a
/// digest keeps its whole text; the spec image stands in when the annotation is missing.
#[test]
fn image_summaries() {
    assert_eq!(
        summarize_image("r.example/a/b@sha256:abcdefabcdefabcdef"),
        ImageSummary {
            repository: "r.example/a/b".to_owned(),
            digest: Some("sha256:abcdefabcdef".to_owned()),
        }
    );
    assert_eq!(
        summarize_image("r.example/a/b:1.0"),
        ImageSummary {
            repository: "r.example/a/b:1.0".to_owned(),
            digest: None,
        }
    );
    let mut p = pod("alpha", Some(ContainerState::Running));
    p.image = None;
    let row = &run(&[p], &[], false).rows[0];
    assert_eq!(
        row.image.as_ref().map(|i| i.repository.as_str()),
        Some("spec.example/agent")
    );
}
