//! Property tests of the model over arbitrary operation sequences: the single resourceVersion
//! counter is gap-free and every change is in the event log, stored objects carry the rv of
//! their latest event, fenced deletes never remove a pod whose fence is stale, graceful
//! deletion ends exactly at `deletionTimestamp`, and the clock never runs backwards. Pure; no
//! I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvFromSource, PodSpec, SecretEnvSource};
use proptest::prelude::*;

use super::*;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::error::{Kind, ModelError};
use crate::kubelet::{self, PodScript};
use crate::selector::LabelSelector;

const NS: &str = "agents";
const NAMES: [&str; 3] = ["a", "b", "c"];

#[derive(Clone, Debug)]
enum Action {
    CreatePod(usize, usize),
    CreateSecret(usize),
    DeletePodFresh(usize),
    DeletePodStale(usize),
    DeleteSecret(usize),
    Advance(u64),
    Start(usize),
    Terminate(usize, i32),
    Remove(usize),
    Compact,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        (0..3usize, 0..5usize).prop_map(|(n, s)| Action::CreatePod(n, s)),
        (0..3usize).prop_map(Action::CreateSecret),
        (0..3usize).prop_map(Action::DeletePodFresh),
        (0..3usize).prop_map(Action::DeletePodStale),
        (0..3usize).prop_map(Action::DeleteSecret),
        (0..90u64).prop_map(Action::Advance),
        (0..3usize).prop_map(Action::Start),
        (0..3usize, 0..3i32).prop_map(|(n, c)| Action::Terminate(n, c)),
        (0..3usize).prop_map(Action::Remove),
        Just(Action::Compact),
    ]
}

fn script(i: usize) -> PodScript {
    match i {
        0 => PodScript::Start {
            after: Duration::from_secs(1),
        },
        1 => PodScript::Exit {
            after: Duration::from_secs(2),
            run_for: Duration::from_secs(5),
            exit_code: 1,
        },
        2 => PodScript::PullFailure {
            after: Duration::from_secs(1),
            failure: kubelet::PullFailure::ManifestUnknown,
        },
        3 => PodScript::Vanish {
            after: Duration::from_secs(20),
        },
        _ => PodScript::NeverStarts,
    }
}

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "agent".into(),
                image: Some("r.io/agent@sha256:aa".into()),
                env_from: Some(vec![EnvFromSource {
                    secret_ref: Some(SecretEnvSource {
                        name: format!("{name}-s"),
                        optional: Some(false),
                    }),
                    ..EnvFromSource::default()
                }]),
                ..Container::default()
            }],
            termination_grace_period_seconds: Some(30),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn secret(name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(format!("{name}-s")),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    }
}

fn apply(m: &mut ClusterModel, action: &Action) {
    let fence = |p: &Pod| Preconditions {
        uid: p.metadata.uid.clone(),
        resource_version: p.metadata.resource_version.clone(),
    };
    // Refusals (NotFound, AlreadyExists, Conflict) are part of the explored space.
    match action {
        Action::CreatePod(n, s) => {
            m.queue_pod_scripts(NS, NAMES[*n], [script(*s)]);
            if m.create_pod(NS, pod(NAMES[*n])).is_err() {
                m.kubelet.clear_queued_scripts();
            }
        }
        Action::CreateSecret(n) => {
            let _ = m.create_secret(NS, secret(NAMES[*n]));
        }
        Action::DeletePodFresh(n) => {
            if let Ok(p) = m.get_pod(NS, NAMES[*n]) {
                let answer = m.delete_pod(NS, NAMES[*n], &fence(&p), None);
                assert!(answer.is_ok(), "a fresh fence is accepted: {answer:?}");
            }
        }
        Action::DeletePodStale(n) => {
            if let Ok(p) = m.get_pod(NS, NAMES[*n]) {
                let mut stale = fence(&p);
                let rv: u64 = p
                    .metadata
                    .resource_version
                    .as_deref()
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0);
                stale.resource_version = Some(rv.saturating_sub(1).to_string());
                let answer = m.delete_pod(NS, NAMES[*n], &stale, None);
                assert!(
                    matches!(answer, Err(ModelError::Conflict { .. })),
                    "a stale fence is refused: {answer:?}"
                );
                assert_eq!(
                    m.get_pod(NS, NAMES[*n]).ok(),
                    Some(p),
                    "and changes nothing"
                );
            }
        }
        Action::DeleteSecret(n) => {
            let _ = m.delete_secret(NS, &format!("{}-s", NAMES[*n]), &Preconditions::default());
        }
        Action::Advance(s) => m.advance(Duration::from_secs(*s)),
        Action::Start(n) => {
            let _ = m.start_pod(NS, NAMES[*n]);
        }
        Action::Terminate(n, c) => {
            let _ = m.terminate_pod(NS, NAMES[*n], *c);
        }
        Action::Remove(n) => {
            let _ = m.remove_pod(NS, NAMES[*n]);
        }
        Action::Compact => m.compact(),
    }
}

fn check(m: &ClusterModel, log: &mut Vec<WatchEvent>, last_rv: &mut u64, last_now: &mut Timestamp) {
    assert!(m.now() >= *last_now, "the clock never runs backwards");
    *last_now = m.now();
    let fresh = m
        .events_since(*last_rv)
        .expect("the model's own rv is never too old");
    for event in &fresh {
        *last_rv += 1;
        assert_eq!(
            event.resource_version, *last_rv,
            "gap-free counter, every change logged"
        );
    }
    assert_eq!(*last_rv, m.resource_version());
    log.extend(fresh);
    let mut latest: BTreeMap<(Kind, String), &WatchEvent> = BTreeMap::new();
    for event in log.iter() {
        let name = event.object.metadata().name.clone().unwrap_or_default();
        latest.insert((event.object.kind(), name), event);
    }
    for pod in m.pods.in_namespace(None) {
        let event = latest[&(Kind::Pod, pod.0.1.clone())];
        assert_ne!(event.event_type, EventType::Deleted);
        assert_eq!(
            event.object,
            Object::Pod(pod.1.clone()),
            "stored = last event"
        );
        if let Some(at) = &pod.1.metadata.deletion_timestamp {
            assert!(
                at.0 > m.now(),
                "a marked pod is gone once its grace elapsed"
            );
        }
    }
    for ((kind, name), event) in &latest {
        if *kind == Kind::Pod && event.event_type == EventType::Deleted {
            assert!(!m.pods.contains(&(NS.to_owned(), name.clone())));
        }
    }
}

proptest! {
    /// Every operation sequence keeps the model's bookkeeping consistent (see the file docs).
    #[test]
    fn model_invariants_hold(actions in proptest::collection::vec(action(), 1..40)) {
        let mut m = ClusterModel::default();
        m.ensure_namespace(NS);
        let mut log = m.events_since(0).unwrap();
        let mut last_rv = m.resource_version();
        let mut last_now = m.now();
        for action in &actions {
            apply(&mut m, action);
            check(&m, &mut log, &mut last_rv, &mut last_now);
        }
    }

    /// `!=` is the negation of `=`, `notin` of `in`, `!k` of `k`, for any labels; the parsed
    /// text form matches like the requirement it names.
    #[test]
    fn selector_negations(
        labels in proptest::collection::btree_map("[ab]", "[xyz]", 0..3),
        key in "[ab]",
        value in "[xyz]",
        values in proptest::collection::vec("[xyz]", 1..3),
    ) {
        use crate::selector::Requirement;
        let eq = Requirement::Equals(key.clone(), value.clone());
        let ne = Requirement::NotEquals(key.clone(), value.clone());
        prop_assert_eq!(eq.matches(&labels), !ne.matches(&labels));
        let inn = Requirement::In(key.clone(), values.clone());
        let notin = Requirement::NotIn(key.clone(), values.clone());
        prop_assert_eq!(inn.matches(&labels), !notin.matches(&labels));
        prop_assert_eq!(
            Requirement::Exists(key.clone()).matches(&labels),
            !Requirement::DoesNotExist(key.clone()).matches(&labels)
        );
        let parsed = LabelSelector::parse(&format!("{key} in ({})", values.join(","))).unwrap();
        prop_assert_eq!(parsed.matches(Some(&labels)), inn.matches(&labels));
        let parsed = LabelSelector::parse(&format!("{key}!={value}")).unwrap();
        prop_assert_eq!(parsed.matches(Some(&labels)), ne.matches(&labels));
    }
}
