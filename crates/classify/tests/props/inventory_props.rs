//! Property tests of the `list` inventory (deploy.md § list) over arbitrary listings: rows are
//! sorted by agent and unique per agent; every pod row is a listed pod that verifies as its
//! claimed agent's and sits under that agent's pod name; every listed pod is either a row or
//! counted as skipped; no row is `foreign`; `absent` rows appear only with `--all`, for agents
//! with Secrets and no pod; with `--all` every verified Secret is counted exactly once. Pure.

use apiary_classify::binding::Owner;
use apiary_classify::facts::{ContainerState, ObjectMarks, ObservedPod, ObservedSecret, PodFacts};
use apiary_classify::inventory::{
    AgentNames, InventoryOptions, ListedPod, ListedSecret, inventory,
};
use apiary_classify::status::StatusState;
use apiary_classify::verify::{verify_pod, verify_secret};
use proptest::prelude::*;

const AGENTS: [&str; 4] = ["alpha", "beta", "gamma", "delta"];

fn names(agent: &str) -> Option<AgentNames> {
    AGENTS.contains(&agent).then(|| AgentNames {
        owner: Owner::apiary(format!("id-{agent}")),
        pod_name: format!("apiary-{agent}"),
    })
}

/// Marks that claim agent `claim`, with an id annotation of agent `id` (or none), optionally a
/// wrong binding version and a name that is the claimed agent's pod name or not.
#[allow(
    clippy::field_reassign_with_default,
    reason = "field by field, so a mark added later keeps its default"
)]
fn marks_strategy(prefix: &'static str) -> impl Strategy<Value = (Option<String>, ObjectMarks)> {
    (
        prop::option::of(0usize..5),
        prop::option::of(0usize..4),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        0u8..8,
    )
        .prop_map(
            move |(claim, id, binding_ok, own_name, marked, generation)| {
                let claim = claim.map(|i| AGENTS.get(i).copied().unwrap_or("unknown").to_owned());
                let base = claim.clone().unwrap_or_else(|| "nobody".to_owned());
                let name = if own_name {
                    format!("{prefix}{base}")
                } else {
                    format!("other-{base}")
                };
                let name = if prefix.is_empty() {
                    format!("{name}-{generation}")
                } else {
                    name
                };
                // Field by field, so a mark added later keeps its default here.
                let mut marks = ObjectMarks::default();
                marks.uid = Some(format!("uid-{name}"));
                marks.name = Some(name);
                marks.resource_version = Some("3".to_owned());
                marks.managed_by = Some("apiary".to_owned());
                marks.binding_version = Some(if binding_ok { "1" } else { "2" }.to_owned());
                marks.agent_id = id.map(|i| format!("id-{}", AGENTS[i]));
                marks.deletion_marked = marked;
                marks.created_at_unix = Some(10);
                (claim, marks)
            },
        )
}

fn pod_strategy() -> impl Strategy<Value = ListedPod> {
    (marks_strategy("apiary-"), 0u8..4).prop_map(|((claim, marks), state)| ListedPod {
        observed: ObservedPod {
            marks,
            facts: PodFacts {
                phase: Some("Running".to_owned()),
                agent: match state {
                    0 => Some(ContainerState::Running),
                    1 => Some(ContainerState::Terminated {
                        exit_code: 1,
                        reason: None,
                    }),
                    2 => Some(ContainerState::Waiting {
                        reason: Some("CreateContainerConfigError".to_owned()),
                        message: None,
                    }),
                    _ => None,
                },
                conditions: Vec::new(),
                env_from_secret: Some("apiary-alpha-1".to_owned()),
                image: Some("r.example/a@sha256:0123456789abcdef".to_owned()),
                workspace_claim: None,
            },
        },
        agent_name: claim,
        restarts: Some(u32::from(state)),
        image: None,
    })
}

fn secret_strategy() -> impl Strategy<Value = ListedSecret> {
    marks_strategy("").prop_map(|(claim, marks)| ListedSecret {
        observed: ObservedSecret { marks },
        agent_name: claim,
    })
}

/// Whether `pod` is `agent`'s own by the rules the inventory must apply.
fn is_agents_own(pod: &ListedPod, agent: &str) -> bool {
    let Some(derived) = names(agent) else {
        return false;
    };
    pod.agent_name.as_deref() == Some(agent)
        && verify_pod(&pod.observed, &derived.owner).is_some()
        && pod.observed.marks.name.as_deref() == Some(derived.pod_name.as_str())
}

/// The first of each name, as a namespace holds it.
fn unique_by_name<T>(items: Vec<T>, name: impl Fn(&T) -> Option<String>) -> Vec<T> {
    let mut seen = std::collections::BTreeSet::new();
    items.into_iter().filter(|i| seen.insert(name(i))).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The inventory keeps its rules over arbitrary listings.
    #[test]
    fn inventory_keeps_its_rules_over_arbitrary_listings(
        pods in prop::collection::vec(pod_strategy(), 0..8),
        secrets in prop::collection::vec(secret_strategy(), 0..8),
        include_absent in any::<bool>(),
        now in prop::option::of(0i64..100),
    ) {
        // A listing holds each name at most once.
        let pods = unique_by_name(pods, |p| p.observed.marks.name.clone());
        let secrets = unique_by_name(secrets, |s| s.observed.marks.name.clone());
        let inv = inventory(&pods, &secrets, now, InventoryOptions { include_absent }, names);
        // Sorted and one row per agent.
        for pair in inv.rows.windows(2) {
            prop_assert!(pair[0].agent < pair[1].agent, "{:?}", inv.rows);
        }
        let with_pod: Vec<_> = inv.rows.iter().filter(|r| r.pod.is_some()).collect();
        prop_assert_eq!(with_pod.len() + inv.skipped_pods, pods.len());
        for row in &inv.rows {
            prop_assert_ne!(row.state, StatusState::Foreign);
            match &row.pod {
                Some(name) => {
                    let listed = pods.iter().filter(|p| {
                        p.observed.marks.name.as_deref() == Some(name.as_str())
                            && is_agents_own(p, &row.agent)
                    });
                    prop_assert!(listed.count() >= 1, "row {:?} has no own listed pod", row);
                }
                None => {
                    prop_assert!(include_absent);
                    prop_assert_eq!(row.state, StatusState::Absent);
                    prop_assert!(row.secrets > 0);
                    prop_assert!(!pods.iter().any(|p| is_agents_own(p, &row.agent)));
                }
            }
            if now.is_none() {
                prop_assert_eq!(row.age_seconds, None);
            }
        }
        let verified_secrets = secrets
            .iter()
            .filter(|s| {
                s.agent_name
                    .as_deref()
                    .and_then(names)
                    .is_some_and(|n| verify_secret(&s.observed, &n.owner).is_some())
            })
            .count();
        prop_assert_eq!(verified_secrets + inv.skipped_secrets, secrets.len());
        if include_absent {
            let counted: usize = inv.rows.iter().map(|r| r.secrets).sum();
            prop_assert_eq!(counted, verified_secrets);
        }
    }
}
