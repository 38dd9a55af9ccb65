//! The pod → address rules of seeds.md § Which pods count, § Named container port and § Output,
//! as the named scenarios of § Scenario inventory (K1–K5, K11–K19, K29–K31).
//!
//! Pure tests over JSON fixtures; every fixture also runs through the full `Pod` decoder and must
//! agree (see `crate::support::resolve`). No client, no network.

use crate::support::*;
use apiary_seeds::{LeanContainer, LeanPod, LeanPort, SkipReason, Verdict, evaluate};
use serde_json::json;

/// K1: terminating, finished and address-less pods are skipped, each under its reason.
#[test]
fn k1_fixed_port_filters_terminating_finished_and_unaddressed() {
    let items = [
        running("a", "10.0.0.1"),
        terminating("b", "10.0.0.2"),
        in_phase("c", "10.0.0.3", "Succeeded"),
        pending_without_address("d"),
        running("e", "10.0.0.5"),
    ];
    let result = resolve(&items, &number(7878));
    assert_eq!(result.addresses, addrs(&["10.0.0.1:7878", "10.0.0.5:7878"]));
    let skipped = result.report.skipped;
    assert_eq!(skipped.get(SkipReason::Terminating), 1);
    assert_eq!(skipped.get(SkipReason::Finished), 1);
    assert_eq!(skipped.get(SkipReason::NoAddress), 1);
    assert_eq!(skipped.total(), 3);
    assert_eq!(result.report.matched, 5);
    assert!(result.warnings.is_empty(), "these skips never warn");
}

/// K2: only the primary address of a dual-stack pod counts; `podIPs[0]` stands in for a null
/// `podIP`.
#[test]
fn k2_dual_stack_uses_the_primary_address_only() {
    let mut dual = running("a", "10.0.0.1");
    dual["status"]["podIPs"] = json!([{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]);
    let mut v6_first = running("b", "unused");
    v6_first["status"]["podIP"] = json!(null);
    v6_first["status"]["podIPs"] = json!([{"ip": "fd00::2"}, {"ip": "10.0.0.2"}]);
    let result = resolve(&[dual, v6_first], &number(7878));
    assert_eq!(
        result.addresses,
        addrs(&["10.0.0.1:7878", "[fd00::2]:7878"])
    );
}

/// K3: the named port is looked up per pod; missing and out-of-range names are skips.
#[test]
fn k3_named_port_per_pod_with_missing_and_out_of_range() {
    let mut udp = with_ports("e", "10.0.0.5", &[("gossip", 70000)]);
    udp["spec"]["containers"][0]["ports"][0]["protocol"] = json!("UDP");
    let items = [
        with_ports("a", "10.0.0.1", &[("gossip", 7878)]),
        with_ports("b", "10.0.0.2", &[("gossip", 8888)]),
        with_ports("c", "10.0.0.3", &[("http", 80)]),
        with_ports("d", "10.0.0.4", &[("gossip", 0)]),
        udp,
    ];
    let result = resolve(&items, &name("gossip"));
    assert_eq!(result.addresses, addrs(&["10.0.0.1:7878", "10.0.0.2:8888"]));
    assert_eq!(result.report.skipped.get(SkipReason::MissingPortName), 1);
    assert_eq!(result.report.skipped.get(SkipReason::PortOutOfRange), 2);
    let seen: Vec<&str> = result
        .report
        .port_names_seen
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(seen, ["http"]);
}

/// K4: an unparsable address skips only that pod, with one warning naming it.
#[test]
fn k4_unparsable_address_is_skipped_with_one_warning() {
    let items = [
        running("bad", "not-an-address"),
        running("good", "10.0.0.1"),
    ];
    let result = resolve(&items, &number(7000));
    assert_eq!(result.addresses, addrs(&["10.0.0.1:7000"]));
    assert_eq!(result.report.skipped.get(SkipReason::UnparsableAddress), 1);
    assert_eq!(result.warnings.len(), 1);
    assert_eq!(result.warnings[0].pod, "bad");
}

/// K5: an empty list is `NoAddresses` carrying the selector, with 0 matched.
#[test]
fn k5_empty_list_is_no_addresses() {
    let result = resolve(&[], &number(7000));
    let error = result.into_result(&pods(number(7000)), "ring").unwrap_err();
    assert_eq!(error.selector, "app=ring-node");
    assert_eq!(error.namespace, "ring");
    assert_eq!(error.report.matched, 0);
}

/// A non-empty result passes `into_result` unchanged (rule 1 only turns zero into an error).
#[test]
fn non_empty_result_is_ok() {
    let result = resolve(&[running("a", "10.0.0.1")], &number(7000));
    let ok = result
        .clone()
        .into_result(&pods(number(7000)), "ring")
        .unwrap();
    assert_eq!(ok, result);
}

/// K11: a `Failed` pod is finished.
#[test]
fn k11_failed_phase_is_finished() {
    let result = resolve(&[in_phase("a", "10.0.0.1", "Failed")], &number(7000));
    assert!(result.addresses.is_empty());
    assert_eq!(result.report.skipped.get(SkipReason::Finished), 1);
}

/// K12, K13: `Pending` with an address, `Unknown`, and no phase at all are included.
#[test]
fn k12_k13_pending_unknown_and_phaseless_pods_with_an_address_are_included() {
    let mut no_phase = running("c", "10.0.0.3");
    no_phase["status"]["phase"] = json!(null);
    let items = [
        in_phase("a", "10.0.0.1", "Pending"),
        in_phase("b", "10.0.0.2", "Unknown"),
        no_phase,
    ];
    let result = resolve(&items, &number(7000));
    assert_eq!(
        result.addresses,
        addrs(&["10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"])
    );
}

/// K14: a pod without any status has no address.
#[test]
fn k14_no_status_is_no_address() {
    let pod = json!({"metadata": {"name": "a"}, "spec": {"containers": []}});
    let result = resolve(&[pod], &number(7000));
    assert_eq!(result.report.skipped.get(SkipReason::NoAddress), 1);
}

/// K15: empty `podIPs` and absent `podIP` is no address; an empty `podIP` falls back to
/// `podIPs[0]`.
#[test]
fn k15_empty_pod_ip_falls_back_to_pod_ips() {
    let mut none = running("a", "x");
    none["status"]["podIPs"] = json!([]);
    none["status"].as_object_mut().unwrap().remove("podIP");
    let mut fallback = running("b", "");
    fallback["status"]["podIPs"] = json!([{"ip": "10.0.0.9"}]);
    let mut empty_first = running("c", "");
    empty_first["status"]["podIPs"] = json!([{"ip": ""}, {"ip": "10.0.0.8"}]);
    let result = resolve(&[none, fallback, empty_first], &number(7000));
    assert_eq!(result.addresses, addrs(&["10.0.0.9:7000"]));
    assert_eq!(result.report.skipped.get(SkipReason::NoAddress), 2);
}

/// K16: an IPv6 address with a named port.
#[test]
fn k16_ipv6_with_named_port() {
    let result = resolve(
        &[with_ports("a", "fd00::3", &[("gossip", 7000)])],
        &name("gossip"),
    );
    assert_eq!(result.addresses, addrs(&["[fd00::3]:7000"]));
    assert_eq!(result.addresses[0].to_string(), "[fd00::3]:7000");
}

/// K17: a named port declared only in the second container is found.
#[test]
fn k17_named_port_in_second_container() {
    let mut pod = running("a", "10.0.0.1");
    pod["spec"]["containers"] = json!([
        {"name": "first", "ports": [{"name": "http", "containerPort": 80}]},
        {"name": "second", "ports": [{"name": "gossip", "containerPort": 7001}]}
    ]);
    let result = resolve(&[pod], &name("gossip"));
    assert_eq!(result.addresses, addrs(&["10.0.0.1:7001"]));
}

/// K18: the first port of the name in declaration order decides, even when out of range.
#[test]
fn k18_first_declared_port_of_the_name_decides() {
    let mut in_range_first = running("a", "10.0.0.1");
    in_range_first["spec"]["containers"] = json!([
        {"name": "one", "ports": [{"name": "gossip", "containerPort": 7001}]},
        {"name": "two", "ports": [{"name": "gossip", "containerPort": 7002}]}
    ]);
    let mut out_of_range_first = running("b", "10.0.0.2");
    out_of_range_first["spec"]["containers"] = json!([
        {"name": "one", "ports": [{"name": "gossip", "containerPort": 0}]},
        {"name": "two", "ports": [{"name": "gossip", "containerPort": 7002}]}
    ]);
    let mut same_container = running("c", "10.0.0.3");
    same_container["spec"]["containers"][0]["ports"] =
        ports_json(&[("gossip", 7003), ("gossip", 7004)]);
    let result = resolve(
        &[in_range_first, out_of_range_first, same_container],
        &name("gossip"),
    );
    assert_eq!(result.addresses, addrs(&["10.0.0.1:7001", "10.0.0.3:7003"]));
    assert_eq!(result.report.skipped.get(SkipReason::PortOutOfRange), 1);
}

/// K19: plain init containers are never searched, native sidecars are, after regular
/// containers.
#[test]
fn k19_native_sidecars_are_searched_after_regular_containers() {
    let mut plain_init = running("a", "10.0.0.1");
    plain_init["spec"]["initContainers"] =
        json!([{"name": "init", "ports": [{"name": "gossip", "containerPort": 7001}]}]);
    let mut sidecar = running("b", "10.0.0.2");
    sidecar["spec"]["initContainers"] = json!([
        {"name": "init", "restartPolicy": "OnFailure", "ports": [{"name": "gossip", "containerPort": 7009}]},
        {"name": "side", "restartPolicy": "Always", "ports": [{"name": "gossip", "containerPort": 7002}]}
    ]);
    let mut both = with_ports("c", "10.0.0.3", &[("gossip", 7003)]);
    both["spec"]["initContainers"] = json!([{"name": "side", "restartPolicy": "Always", "ports": [{"name": "gossip", "containerPort": 7999}]}]);
    let result = resolve(&[plain_init, sidecar, both], &name("gossip"));
    assert_eq!(result.addresses, addrs(&["10.0.0.2:7002", "10.0.0.3:7003"]));
    assert_eq!(result.report.skipped.get(SkipReason::MissingPortName), 1);
}

/// K19 (port names seen): a plain init container's port names are not "seen", a sidecar's are.
#[test]
fn k19_port_names_seen_come_from_searched_containers_only() {
    let mut pod = with_ports("a", "10.0.0.1", &[("http", 80)]);
    pod["spec"]["initContainers"] = json!([
        {"name": "init", "ports": [{"name": "setup", "containerPort": 1}]},
        {"name": "side", "restartPolicy": "Always", "ports": [{"name": "metrics", "containerPort": 9090}]}
    ]);
    let result = resolve(&[pod], &name("gossip"));
    let seen: Vec<&str> = result
        .report
        .port_names_seen
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(seen, ["http", "metrics"]);
}

/// Port range boundaries: 1 and 65535 are valid, 0, -1 and 65536 are out of range.
#[test]
fn named_port_range_boundaries() {
    let items = [
        with_ports("a", "10.0.0.1", &[("gossip", 1)]),
        with_ports("b", "10.0.0.2", &[("gossip", 65535)]),
        with_ports("c", "10.0.0.3", &[("gossip", 0)]),
        with_ports("d", "10.0.0.4", &[("gossip", -1)]),
        with_ports("e", "10.0.0.5", &[("gossip", 65536)]),
    ];
    let result = resolve(&items, &name("gossip"));
    assert_eq!(result.addresses, addrs(&["10.0.0.1:1", "10.0.0.2:65535"]));
    assert_eq!(result.report.skipped.get(SkipReason::PortOutOfRange), 3);
}

/// Port names are matched exactly and case-sensitively.
#[test]
fn port_name_match_is_exact_and_case_sensitive() {
    let items = [
        with_ports("a", "10.0.0.1", &[("Gossip", 7001)]),
        with_ports("b", "10.0.0.2", &[("gossip ", 7002)]),
    ];
    let result = resolve(&items, &name("gossip"));
    assert!(result.addresses.is_empty());
    assert_eq!(result.report.skipped.get(SkipReason::MissingPortName), 2);
}

/// K29: output does not depend on list order; two pods with one address and a fixed port give
/// one address.
#[test]
fn k29_order_invariant_and_deduplicated() {
    let items = vec![
        running("a", "fd00::1"),
        running("b", "10.0.0.2"),
        running("c", "10.0.0.10"),
        running("host-1", "192.168.1.5"),
        running("host-2", "192.168.1.5"),
    ];
    let forward = resolve(&items, &number(7000));
    let mut reversed_items = items.clone();
    reversed_items.reverse();
    let reversed = resolve(&reversed_items, &number(7000));
    assert_eq!(forward.addresses, reversed.addresses);
    assert_eq!(
        forward.addresses,
        addrs(&[
            "10.0.0.2:7000",
            "10.0.0.10:7000",
            "192.168.1.5:7000",
            "[fd00::1]:7000"
        ])
    );
    assert_eq!(forward.report.matched, 5);
}

/// Checks run in order: a terminating pod that is also finished and address-less counts as
/// terminating only; a finished pod without an address counts as finished.
#[test]
fn each_skipped_pod_counts_under_its_first_failed_check() {
    let mut all = pending_without_address("a");
    all["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    all["status"]["phase"] = json!("Failed");
    let mut finished = pending_without_address("b");
    finished["status"]["phase"] = json!("Succeeded");
    let mut bad_ip_no_port = with_ports("c", "bad", &[("http", 80)]);
    bad_ip_no_port["status"]["phase"] = json!("Running");
    let result = resolve(&[all, finished, bad_ip_no_port], &name("gossip"));
    let skipped = result.report.skipped;
    assert_eq!(skipped.get(SkipReason::Terminating), 1);
    assert_eq!(skipped.get(SkipReason::Finished), 1);
    assert_eq!(skipped.get(SkipReason::UnparsableAddress), 1);
    assert_eq!(skipped.total(), 3);
    assert!(result.report.port_names_seen.is_empty());
}

/// `evaluate` on a hand-built record: a named port found in a sidecar pairs with the primary
/// address.
#[test]
fn evaluate_pairs_primary_address_with_sidecar_port() {
    let pod = LeanPod {
        name: Some("a".to_owned()),
        pod_ip: Some("10.1.2.3".to_owned()),
        init_containers: vec![LeanContainer {
            name: Some("s".to_owned()),
            restart_always: true,
            ports: vec![LeanPort {
                name: Some("gossip".to_owned()),
                container_port: 7100,
            }],
        }],
        ..LeanPod::default()
    };
    assert_eq!(
        evaluate(&pod, &name("gossip")),
        Verdict::Address(addr("10.1.2.3:7100"))
    );
}

/// The eight reason names are the JSON keys of the CLI contract, in check order.
#[test]
fn skip_reason_wire_names() {
    let names: Vec<&str> = SkipReason::ALL
        .iter()
        .map(|reason| reason.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "terminating",
            "finished",
            "no_address",
            "unparsable_address",
            "no_family_address",
            "missing_port_name",
            "port_out_of_range",
            "not_running"
        ]
    );
}
