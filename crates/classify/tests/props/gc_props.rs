//! Property tests of the GC plan (deploy.md § Plan) over arbitrary listings: a planned
//! Secret is always verified, never referenced by a living verified pod, planned once, and
//! either referenced by a doomed pod or at least 1200 s old on the server clock; planned pods
//! are exactly the verified terminated ones. Pure: no I/O.

use apiary_classify::binding::Owner;
use std::collections::BTreeSet;

use apiary_classify::facts::{ContainerState, ObjectMarks, ObservedPod, ObservedSecret, PodFacts};
use apiary_classify::gc::{OrphanSweep, plan_gc};
use apiary_classify::startup::{StartupState, decode};
use apiary_classify::verify::{verify_pod, verify_secret};
use proptest::prelude::*;

const AGENT_ID: &str = "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98";
const NAMES: [&str; 4] = ["s0", "s1", "s2", "s3"];

fn marks(name: String, own: bool, created: Option<i64>) -> ObjectMarks {
    ObjectMarks {
        uid: Some(format!("uid-{name}")),
        name: Some(name),
        resource_version: Some("1".into()),
        managed_by: Some("apiary".into()),
        binding_version: Some("1".into()),
        agent_id: Some(if own { AGENT_ID } else { "other" }.into()),
        create_intent: None,
        deletion_marked: false,
        created_at_unix: created,
        expires_at: None,
        intent_settings: None,
    }
}

fn pod_strategy() -> impl Strategy<Value = ObservedPod> {
    (0usize..4, any::<bool>(), 0u8..3, 0usize..5, 0u32..1000).prop_map(
        |(state, own, phase, secret, n)| ObservedPod {
            marks: marks(format!("p{n}"), own, Some(0)),
            facts: PodFacts {
                phase: Some(["Running", "Failed", "Pending"][usize::from(phase)].into()),
                agent: match state {
                    0 => Some(ContainerState::Running),
                    1 => Some(ContainerState::Terminated {
                        exit_code: 1,
                        reason: None,
                    }),
                    2 => Some(ContainerState::Waiting {
                        reason: Some("CreateContainerConfigError".into()),
                        message: None,
                    }),
                    _ => None,
                },
                conditions: Vec::new(),
                env_from_secret: NAMES.get(secret).map(|s| (*s).to_owned()),
                image: None,
                workspace_claim: None,
            },
        },
    )
}

fn secret_strategy() -> impl Strategy<Value = ObservedSecret> {
    (0usize..4, any::<bool>(), prop::option::of(-2000i64..3000)).prop_map(|(name, own, age)| {
        ObservedSecret {
            marks: marks(NAMES[name].into(), own, age.map(|a| 10_000 - a)),
        }
    })
}

proptest! {
    /// The GC plan keeps every protection rule for every listing.
    #[test]
    fn gc_plan_keeps_protection_rules(
        mut pods in prop::collection::vec(pod_strategy(), 0..6),
        secrets in prop::collection::vec(secret_strategy(), 0..6),
        clock in any::<bool>(),
    ) {
        // Pod names are unique in a namespace.
        for (i, pod) in pods.iter_mut().enumerate() {
            pod.marks.name = Some(format!("p{i}"));
        }
        let now = clock.then_some(10_000i64);
        let plan = plan_gc(&pods, &secrets, now, &Owner::apiary(AGENT_ID));
        let ours: Vec<_> = pods.iter().filter_map(|p| verify_pod(p, &Owner::apiary(AGENT_ID))).collect();
        let is_dead = |p: &apiary_classify::verify::VerifiedPod| {
            p.decode() == apiary_classify::startup::Decoded::Settled(StartupState::Terminated)
        };
        let protected: BTreeSet<_> = ours.iter().filter(|p| !is_dead(p))
            .filter_map(|p| p.facts().env_from_secret.clone()).collect();
        let doomed_refs: BTreeSet<_> = ours.iter().filter(|p| is_dead(p))
            .filter_map(|p| p.facts().env_from_secret.clone()).collect();
        let expected_pods: Vec<_> = ours.iter().filter(|p| is_dead(p))
            .map(|p| p.name().to_owned()).collect();
        prop_assert_eq!(&plan.pods, &expected_pods);
        let mut once = BTreeSet::new();
        for planned in &plan.secrets {
            prop_assert!(once.insert(planned.name().to_owned()), "planned twice");
            prop_assert!(!protected.contains(planned.name()), "protected Secret planned");
            let listed: Vec<_> = secrets.iter()
                .filter(|s| s.marks.uid.as_deref() == Some(planned.uid()))
                .filter_map(|s| verify_secret(s, &Owner::apiary(AGENT_ID))).collect();
            prop_assert!(!listed.is_empty(), "unverified Secret planned");
            let old = listed.iter().any(|s| {
                matches!((now, s.created_at_unix()), (Some(n), Some(c)) if n - c >= 1200)
            });
            prop_assert!(doomed_refs.contains(planned.name()) || old);
        }
        prop_assert_eq!(plan.orphan_sweep == OrphanSweep::Ran, clock);
        // Decoding alone is what the plan used: a pending pod is never doomed.
        for p in &pods {
            if matches!(decode(&p.facts), apiary_classify::startup::Decoded::PendingSecretCheck { .. }) {
                prop_assert!(!plan.pods.contains(p.marks.name.as_ref().unwrap()));
            }
        }
    }
}
