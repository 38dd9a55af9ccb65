//! Property tests of seed extraction (seeds.md § Lean decoding equivalence K37, § Output,
//! § The consumer contract, § Address family and running containers): lean ≡ full decoding
//! under every filter, order invariance, monotonicity, narrowing never adds, at most one address
//! per pod, and no panic on arbitrary input.
//!
//! Pure tests over generated pod JSON; case counts come from `ProptestConfig::default()` so
//! `PROPTEST_CASES` can raise them.

use std::collections::BTreeSet;

use crate::support::*;
use apiary_seeds::{
    Filter, IpFamily, Port, SkipReason, Verdict, decode_pod_list, evaluate_with, extract_with,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn address_strategy() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!("")),
        (0u8..4, 0u8..3).prop_map(|(a, b)| json!(format!("10.0.{a}.{b}"))),
        (0u16..4).prop_map(|a| json!(format!("fd00::{a:x}"))),
        Just(json!("not-an-address")),
        Just(json!("10.0.0.1 ")),
    ]
}

fn port_name_strategy() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!("gossip")),
        Just(json!("http")),
        Just(json!("metrics")),
        Just(json!("Gossip")),
    ]
}

fn container_port_strategy() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        Just(-1),
        Just(1),
        Just(7000),
        Just(65535),
        Just(65536),
        Just(70000),
        any::<i32>().prop_map(i64::from),
    ]
}

fn container_strategy() -> impl Strategy<Value = Value> {
    (
        proptest::collection::vec((port_name_strategy(), container_port_strategy()), 0..3),
        prop_oneof![Just(Value::Null), Just(json!("Always")), Just(json!("OnFailure"))],
        any::<bool>(),
        container_name_strategy(),
    )
        .prop_map(|(ports, restart_policy, with_env, name)| {
            let ports: Vec<Value> = ports
                .into_iter()
                .map(|(name, number)| json!({"name": name, "containerPort": number, "protocol": "TCP"}))
                .collect();
            let mut container = json!({"name": name, "image": "img:1", "ports": ports, "restartPolicy": restart_policy});
            if with_env {
                container["env"] = json!([{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]);
            }
            container
        })
}

fn container_name_strategy() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("c"), Just("d"), Just("side")]
}

/// A container status as the kubelet writes it: running, waiting, terminated, or no state.
fn container_status_strategy() -> impl Strategy<Value = Value> {
    (
        container_name_strategy(),
        prop_oneof![
            Just(Value::Null),
            Just(json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}})),
            Just(json!({"waiting": {"reason": "ContainerCreating"}})),
            Just(json!({"terminated": {"exitCode": 1}})),
        ],
    )
        .prop_map(|(name, state)| {
            json!({"name": name, "image": "img:1", "imageID": "", "ready": false,
                   "restartCount": 0, "state": state})
        })
}

fn pod_strategy() -> impl Strategy<Value = Value> {
    (
        (0u32..6, proptest::option::of(0u32..6), any::<bool>()),
        prop_oneof![
            Just(Value::Null),
            Just(json!("Pending")),
            Just(json!("Running")),
            Just(json!("Succeeded")),
            Just(json!("Failed")),
            Just(json!("Unknown")),
        ],
        address_strategy(),
        proptest::collection::vec(address_strategy(), 0..3),
        proptest::collection::vec(container_strategy(), 0..3),
        proptest::collection::vec(container_strategy(), 0..3),
        any::<bool>(),
        (
            proptest::collection::vec(container_status_strategy(), 0..3),
            proptest::collection::vec(container_status_strategy(), 0..2),
        ),
    )
        .prop_map(
            |(
                (name, uid, deleting),
                phase,
                pod_ip,
                pod_ips,
                containers,
                init,
                has_status,
                (statuses, init_statuses),
            )| {
                let ips: Vec<Value> = pod_ips.into_iter().map(|ip| json!({"ip": ip})).collect();
                let mut pod = json!({
                    "metadata": {"name": format!("pod-{name}"), "labels": {"app": "ring-node"},
                                 "annotations": {"a": "b"}, "resourceVersion": "5"},
                    "spec": {"containers": containers, "initContainers": init,
                             "volumes": [{"name": "v", "emptyDir": {}}]},
                });
                if let Some(uid) = uid {
                    pod["metadata"]["uid"] = json!(format!("uid-{uid}"));
                }
                if deleting {
                    pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
                }
                if has_status {
                    pod["status"] = json!({"phase": phase, "podIP": pod_ip, "podIPs": ips,
                                       "conditions": [{"type": "Ready", "status": "False"}],
                                       "containerStatuses": statuses,
                                       "initContainerStatuses": init_statuses});
                }
                pod
            },
        )
}

fn filter_strategy() -> impl Strategy<Value = Filter> {
    (
        prop_oneof![
            Just(None),
            Just(Some(IpFamily::Ipv4)),
            Just(Some(IpFamily::Ipv6))
        ],
        any::<bool>(),
    )
        .prop_map(|(ip_family, require_running)| Filter {
            ip_family,
            require_running,
        })
}

fn port_strategy() -> impl Strategy<Value = Port> {
    prop_oneof![
        (1u16..=u16::MAX).prop_map(number),
        Just(name("gossip")),
        Just(name("http")),
    ]
}

proptest! {
    /// K37: lean decoding then the rules equals full `Pod` decoding then the rules: addresses,
    /// report and warnings, under every filter (IP family, running containers;
    /// `crate::support::resolve_with` asserts the equality).
    #[test]
    fn k37_lean_decoding_equals_full_decoding(
        items in proptest::collection::vec(pod_strategy(), 0..12),
        port in port_strategy(),
        filter in filter_strategy(),
    ) {
        let _ = resolve_with(&items, &port, filter);
    }

    /// The narrowings never add a pod: `require_running` only moves counted pods to
    /// `not_running`, and with an IP family every address is of that family and the pods counted
    /// are at most those with any address (seeds.md § Address family and running containers).
    #[test]
    fn narrowing_never_adds_and_family_is_respected(
        items in proptest::collection::vec(pod_strategy(), 0..12),
        port in port_strategy(),
        filter in filter_strategy(),
    ) {
        let narrowed = resolve_with(&items, &port, filter);
        let loose = resolve_with(&items, &port, Filter { require_running: false, ..filter });
        let loose_set: BTreeSet<_> = loose.addresses.iter().collect();
        prop_assert!(narrowed.addresses.iter().all(|address| loose_set.contains(address)));
        prop_assert_eq!(narrowed.report.matched, loose.report.matched);
        prop_assert_eq!(
            narrowed.report.skipped.get(SkipReason::NotRunning),
            narrowed.report.skipped.total() - loose.report.skipped.total(),
        );
        if let Some(family) = filter.ip_family {
            prop_assert!(narrowed.addresses.iter().all(|address| family.contains(&address.ip())));
        } else {
            prop_assert_eq!(narrowed.report.skipped.get(SkipReason::NoFamilyAddress), 0);
        }
        if !filter.require_running {
            prop_assert_eq!(narrowed.report.skipped.get(SkipReason::NotRunning), 0);
        }
    }

    /// Output is independent of list order (seeds.md § Output): same addresses, report and warning
    /// set.
    #[test]
    fn order_invariance(
        items in proptest::collection::vec(pod_strategy(), 0..12),
        port in port_strategy(),
        seed in any::<u64>(),
    ) {
        let mut shuffled = items.clone();
        // A deterministic permutation from the seed: rotate, then reverse when odd.
        let len = shuffled.len().max(1);
        shuffled.rotate_left((seed as usize) % len);
        if seed % 2 == 1 {
            shuffled.reverse();
        }
        let original = resolve(&items, &port);
        let permuted = resolve(&shuffled, &port);
        prop_assert_eq!(&original.addresses, &permuted.addresses);
        prop_assert_eq!(&original.report, &permuted.report);
        let set = |warnings: &[apiary_seeds::PodWarning]| warnings.iter().cloned().collect::<BTreeSet<_>>();
        prop_assert_eq!(set(&original.warnings), set(&permuted.warnings));
        let mut sorted = original.addresses.clone();
        sorted.sort();
        sorted.dedup();
        prop_assert_eq!(sorted, original.addresses);
    }

    /// Marking a pod terminating or finished never adds an address (seeds.md § The consumer
    /// contract, rule 3).
    #[test]
    fn monotonicity_marking_gone_never_adds(
        items in proptest::collection::vec(pod_strategy(), 1..10),
        port in port_strategy(),
        which in any::<proptest::sample::Index>(),
        finished in any::<bool>(),
    ) {
        let before = resolve(&items, &port);
        let mut marked = items.clone();
        let pod = &mut marked[which.index(items.len())];
        if finished {
            pod["status"]["phase"] = json!(if which.index(2) == 0 { "Succeeded" } else { "Failed" });
        } else {
            pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        let after = resolve(&marked, &port);
        let before_set: BTreeSet<_> = before.addresses.iter().collect();
        prop_assert!(after.addresses.iter().all(|address| before_set.contains(address)));
        prop_assert_eq!(after.report.matched, before.report.matched);
    }

    /// Each pod yields at most one address and is either counted as an address or under exactly
    /// one skip reason (seeds.md § The consumer contract, rule 2).
    #[test]
    fn at_most_one_address_per_pod(
        items in proptest::collection::vec(pod_strategy(), 0..12),
        port in port_strategy(),
        filter in filter_strategy(),
    ) {
        let result = resolve_with(&items, &port, filter);
        let bytes = page(&items, None);
        let lean = decode_pod_list(&bytes).unwrap();
        let contributing = lean.items.iter().filter(|pod| matches!(evaluate_with(pod, &port, &filter), Verdict::Address(_))).count();
        prop_assert_eq!(result.report.matched, items.len());
        prop_assert_eq!(result.report.skipped.total() + contributing, items.len());
        prop_assert!(result.addresses.len() <= contributing);
        for pod in &lean.items {
            let alone = extract_with(std::iter::once(pod), &port, filter);
            prop_assert!(alone.addresses.len() <= 1);
        }
    }

    /// Arbitrary strings in every needed field never panic the decoder or the rules.
    #[test]
    fn no_panic_on_arbitrary_pods(
        name in ".*",
        ip in ".*",
        ips in proptest::collection::vec(".*", 0..3),
        phase in ".*",
        port_name in ".*",
        container_port in any::<i64>(),
        configured in "\\PC*",
    ) {
        let ips: Vec<Value> = ips.into_iter().map(|ip| json!({"ip": ip})).collect();
        let pod = json!({
            "metadata": {"name": name},
            "spec": {"containers": [{"ports": [{"name": port_name, "containerPort": container_port}]}],
                     "initContainers": [{"restartPolicy": "Always", "ports": [{"name": configured}]}]},
            "status": {"phase": phase, "podIP": ip, "podIPs": ips},
        });
        let bytes = page(&[pod], None);
        let lean = decode_pod_list(&bytes).unwrap();
        for port in [name_port(&configured), number(1)] {
            for filter in [Filter::default(), Filter { ip_family: Some(IpFamily::Ipv6), require_running: true }] {
                let result = extract_with(&lean.items, &port, filter);
                prop_assert!(result.addresses.len() <= 1);
            }
        }
    }

    /// Arbitrary bytes are decoded or refused, never a panic.
    #[test]
    fn no_panic_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_pod_list(&bytes);
        let _ = apiary_seeds::decode_watch_event(&bytes);
    }
}

fn name_port(text: &str) -> Port {
    Port::Name(text.to_owned())
}
