//! Property test of the real driver against the fake (deploy.md § What apiary guarantees, § One
//! create attempt per call, § Losing the create race): for arbitrary starting states, race
//! winners, kubelet scripts and refused or lost requests, the call log of one deploy never
//! deletes a pod after its first pod create, never deletes a foreign pod, deletes only Secrets
//! this call created or GC proved ours, keeps the Secret of every pod it created, and a success
//! names a pod that is running. No I/O: virtual clock.

#[allow(
    dead_code,
    reason = "each conformance test binary uses a different subset"
)]
use apiary_classify::binding::APIARY;
use std::collections::BTreeSet;
use std::time::Duration;

use crate::conformance_support::*;
use apiary_classify::failure::Operation;
use apiary_cluster_model::kubelet::PodScript;
use apiary_substrate::driver::{DeployOptions, deploy};
use apiary_substrate::fake::{Call, FakeCluster, transport_failure};
use apiary_substrate::observe::observe_pod;
use proptest::prelude::*;

fn shape(kind: u8) -> Shape {
    match kind {
        0 => Shape::Running,
        1 => Shape::Terminated(1),
        2 => Shape::Waiting("ContainerCreating", None),
        3 => Shape::Waiting("CreateContainerConfigError", None),
        4 => Shape::Waiting("ErrImagePull", Some("manifest unknown")),
        5 => Shape::Waiting("InvalidImageName", None),
        _ => Shape::Unschedulable,
    }
}

fn script(kind: u8) -> PodScript {
    let after = Duration::from_secs(1);
    match kind {
        0 => PodScript::Start { after },
        1 => PodScript::Exit {
            after,
            run_for: Duration::ZERO,
            exit_code: 1,
        },
        2 => PodScript::NeverStarts,
        3 => PodScript::Vanish { after },
        _ => PodScript::Unschedulable,
    }
}

#[derive(Debug, Clone)]
struct Scenario {
    /// None: no pod; Some((shape, own, with_secret, deleting)).
    initial: Option<(u8, bool, bool, bool)>,
    /// A race winner inserted at the first pod create: (shape, own).
    winner: Option<(u8, bool)>,
    /// Kubelet scripts of pods this call creates.
    scripts: Vec<u8>,
    /// 0: none; 1: pod create refused; 2: pod create transport failure; 3: GC list forbidden.
    fault: u8,
    /// Whether the other config differs for the seeded pod (stale intent).
    stale: bool,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop::option::of((
            0u8..7,
            any::<bool>(),
            any::<bool>(),
            prop::bool::weighted(0.15),
        )),
        prop::option::weighted(0.3, (0u8..7, any::<bool>())),
        prop::collection::vec(0u8..5, 1..3),
        0u8..4,
        any::<bool>(),
    )
        .prop_map(|(initial, winner, scripts, fault, stale)| Scenario {
            initial,
            winner,
            scripts,
            fault,
            stale,
        })
}

fn check(s: &Scenario) -> Result<(), TestCaseError> {
    let fake = FakeCluster::new(NS);
    let config = config_with(|c| c.timeout = Duration::from_secs(60));
    let seed_config = if s.stale {
        config_with(|c| c.cpu_limit = "3".into())
    } else {
        config.clone()
    };
    let mut initial_own_secrets = BTreeSet::new();
    let mut foreign_uid = None;
    if let Some((kind, own, with_secret, dying)) = s.initial {
        let (pod, secret, secret_name) = attempt(&seed_config, 1);
        if with_secret {
            fake.insert_secret(secret).unwrap();
            initial_own_secrets.insert(secret_name);
        }
        let mut pod = shaped(&fake, pod, &shape(kind));
        if !own {
            pod = other_agent(pod);
        }
        if dying {
            pod = deleting(&fake, pod);
        }
        let stored = fake.insert_pod(pod).unwrap();
        if !own {
            foreign_uid = stored.metadata.uid.clone();
        }
    }
    if let Some((kind, own)) = s.winner {
        let (pod, _, _) = attempt(&config, 2);
        let mut pod = shaped(&fake, pod, &shape(kind));
        if !own {
            pod = other_agent(pod);
        }
        fake.race_next_pod_create(pod);
    }
    fake.queue_pod_scripts(POD, s.scripts.iter().map(|k| script(*k)));
    match s.fault {
        1 => {
            let refusal = fake.quota_exceeded(Operation::CreatePod, &format!("pod/{POD}"));
            fake.fail_next(Operation::CreatePod, refusal);
        }
        2 => fake.fail_next(
            Operation::CreatePod,
            transport_failure(Operation::CreatePod, &format!("pod/{POD}")),
        ),
        3 => {
            let forbidden = fake.forbidden(Operation::ListPods, "pods");
            fake.fail_next(Operation::ListPods, forbidden);
        }
        _ => {}
    }

    let result = run(deploy(&fake, &config, &DeployOptions::for_config(&config)));
    let calls = fake.calls();

    // No pod delete after this call's first pod create.
    if let Some(first_create) = calls
        .iter()
        .position(|c| matches!(c, Call::CreatePod { .. }))
    {
        prop_assert!(
            !calls[first_create..]
                .iter()
                .any(|c| matches!(c, Call::DeletePod { .. })),
            "pod delete after create: {:?}",
            fake.call_summaries()
        );
    }
    // A foreign pod is never deleted.
    if let Some(uid) = &foreign_uid {
        prop_assert!(fake.pod_deletes().iter().all(|(_, f)| f.uid() != uid));
    }
    // Only Secrets this call created, or seeded own Secrets, are ever deleted.
    let created: BTreeSet<String> = fake
        .creates_of_secrets()
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    for (name, _) in fake.secret_deletes() {
        prop_assert!(
            created.contains(&name) || initial_own_secrets.contains(&name),
            "deleted {} which is neither created here nor a seeded own Secret",
            name
        );
    }
    // Every pod still present that this call created keeps its Secret.
    for pod in fake.pods() {
        let observed = observe_pod(&pod, APIARY);
        if let Some(secret) = observed.facts.env_from_secret
            && created.contains(&secret)
        {
            prop_assert!(fake.secret(&secret).is_some(), "{} lost its Secret", secret);
        }
    }
    // A success names a running pod.
    if let Ok(deployed) = &result {
        let pod = fake.pod(&deployed.pod).expect("the returned pod exists");
        let observed = observe_pod(&pod, APIARY);
        prop_assert_eq!(
            observed.facts.agent,
            Some(apiary_classify::facts::ContainerState::Running)
        );
    }
    // The call ends within the deadline plus one poll.
    prop_assert!(
        fake.elapsed() <= Duration::from_secs(62),
        "{:?}",
        fake.elapsed()
    );
    // At most one Secret per pod create attempt.
    let pod_creates = fake.creates_of_pods().len();
    prop_assert!(created.len() <= pod_creates.max(1));
    Ok(())
}

proptest! {
    /// One deploy over any starting state keeps the safety rules in its call log.
    #[test]
    fn deploy_call_log_keeps_the_safety_rules(s in scenario()) {
        check(&s)?;
    }
}
