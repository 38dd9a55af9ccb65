//! The two opt-in narrowings (seeds.md § Address family and running containers): with an IP
//! family, a pod's first address of that family instead of its primary one, `no_family_address`
//! when it has none; with `require_running`, `not_running` for a pod whose serving container is
//! not running yet. Each rule once, with the check order around it.
//!
//! Pure tests over JSON fixtures; every fixture also runs through the full `Pod` decoder and must
//! agree (`crate::support::resolve_with`). No client, no network.

use crate::support::*;
use apiary_seeds::{Filter, IpFamily, SkipReason};
use serde_json::json;

fn family(family: IpFamily) -> Filter {
    Filter {
        ip_family: Some(family),
        ..Filter::default()
    }
}

fn running_required() -> Filter {
    Filter {
        require_running: true,
        ..Filter::default()
    }
}

/// A dual-stack pod: `podIP` 10.0.0.1, `podIPs` [10.0.0.1, fd00::1].
fn dual_stack(name: &str) -> serde_json::Value {
    with_ips(
        running(name, "10.0.0.1"),
        Some("10.0.0.1"),
        &["10.0.0.1", "fd00::1"],
    )
}

/// `ipv6` takes the dual-stack pod's IPv6 entry of `podIPs`, `ipv4` its primary address.
#[test]
fn family_takes_the_first_address_of_that_family() {
    let items = [dual_stack("a")];
    assert_eq!(
        resolve_with(&items, &number(7000), family(IpFamily::Ipv6)).addresses,
        addrs(&["[fd00::1]:7000"])
    );
    assert_eq!(
        resolve_with(&items, &number(7000), family(IpFamily::Ipv4)).addresses,
        addrs(&["10.0.0.1:7000"])
    );
    assert_eq!(
        resolve(&items, &number(7000)).addresses,
        addrs(&["10.0.0.1:7000"]),
        "without a family the primary address, as before"
    );
}

/// An IPv6-primary pod (`podIP` null) gives its later IPv4 entry under `ipv4`.
#[test]
fn family_looks_past_an_ipv6_primary() {
    let items = [with_ips(
        running("b", "unused"),
        None,
        &["fd00::2", "10.0.0.2"],
    )];
    let result = resolve_with(&items, &number(7000), family(IpFamily::Ipv4));
    assert_eq!(result.addresses, addrs(&["10.0.0.2:7000"]));
}

/// Still one address per pod: two entries of the family give the first.
#[test]
fn family_gives_one_address_per_pod() {
    let items = [with_ips(
        running("c", "fd00::5"),
        Some("fd00::5"),
        &["fd00::5", "fd00::6"],
    )];
    let result = resolve_with(&items, &number(7000), family(IpFamily::Ipv6));
    assert_eq!(result.addresses, addrs(&["[fd00::5]:7000"]));
}

/// A single-stack pod of the other family is skipped as `no_family_address`, without a warning,
/// and the zero-address diagnostic names the family.
#[test]
fn pod_without_an_address_of_the_family_is_counted_no_family_address() {
    let items = [running("a", "10.0.0.1"), running("b", "10.0.0.2")];
    let result = resolve_with(&items, &number(7000), family(IpFamily::Ipv6));
    assert!(result.addresses.is_empty());
    assert_eq!(result.report.skipped.get(SkipReason::NoFamilyAddress), 2);
    assert_eq!(result.report.skipped.total(), 2);
    assert!(result.warnings.is_empty(), "{:?}", result.warnings);
    let error = result
        .into_result(&pods(number(7000)), "ring")
        .expect_err("no address");
    assert!(
        error
            .to_string()
            .ends_with("; skipped 2 without an ipv6 address"),
        "{error}"
    );
}

/// With a family, an address-less pod is still `no_address` (checked first).
#[test]
fn no_address_at_all_is_no_address_under_a_family() {
    let items = [
        pending_without_address("a"),
        with_ips(running("b", ""), Some(""), &[""]),
    ];
    let result = resolve_with(&items, &number(7000), family(IpFamily::Ipv4));
    assert_eq!(result.report.skipped.get(SkipReason::NoAddress), 2);
}

/// An unparsable entry does not hide a good address of the family; without one it is reported
/// as `unparsable_address` (with its warning), since it may be the family's address.
#[test]
fn unparsable_entries_under_a_family() {
    let items = [with_ips(
        running("a", "not-an-address"),
        Some("not-an-address"),
        &["not-an-address", "10.0.0.7"],
    )];
    let v4 = resolve_with(&items, &number(7000), family(IpFamily::Ipv4));
    assert_eq!(v4.addresses, addrs(&["10.0.0.7:7000"]));
    assert!(v4.warnings.is_empty());
    let v6 = resolve_with(&items, &number(7000), family(IpFamily::Ipv6));
    assert!(v6.addresses.is_empty());
    assert_eq!(v6.report.skipped.get(SkipReason::UnparsableAddress), 1);
    assert_eq!(v6.warnings.len(), 1);
}

/// An IPv4-mapped IPv6 address is IPv6, as reported.
#[test]
fn ipv4_mapped_address_is_ipv6() {
    let items = [running("a", "::ffff:10.0.0.1")];
    let v6 = resolve_with(&items, &number(7000), family(IpFamily::Ipv6));
    assert_eq!(v6.addresses, addrs(&["[::ffff:10.0.0.1]:7000"]));
    let v4 = resolve_with(&items, &number(7000), family(IpFamily::Ipv4));
    assert_eq!(v4.report.skipped.get(SkipReason::NoFamilyAddress), 1);
}

/// `ipv4` and `ipv6` parse exactly; anything else is refused naming both values.
#[test]
fn ip_family_parses_exactly() {
    assert_eq!("ipv4".parse(), Ok(IpFamily::Ipv4));
    assert_eq!("ipv6".parse(), Ok(IpFamily::Ipv6));
    for bad in ["IPv4", " ipv4", "inet6", "v6", "", "ipv46"] {
        let error = bad.parse::<IpFamily>().expect_err(bad);
        assert_eq!(
            error.to_string(),
            format!("unknown IP family {bad:?}: use ipv4 or ipv6")
        );
    }
    for family in IpFamily::ALL {
        assert_eq!(family.as_str().parse(), Ok(family));
        assert_eq!(family.to_string(), family.as_str());
    }
}

/// The named port's container decides: waiting or terminated → `not_running`, running →
/// counted; without `require_running` both count.
#[test]
fn require_running_follows_the_named_ports_container() {
    let pod = |name: &str, ip: &str, state: &str| {
        let mut pod = with_ports(name, ip, &[("gossip", 7000)]);
        pod = with_container_states(pod, &[("main", state)]);
        pod
    };
    let items = [
        pod("a", "10.0.0.1", "running"),
        pod("b", "10.0.0.2", "waiting"),
        pod("c", "10.0.0.3", "terminated"),
    ];
    let required = resolve_with(&items, &name("gossip"), running_required());
    assert_eq!(required.addresses, addrs(&["10.0.0.1:7000"]));
    assert_eq!(required.report.skipped.get(SkipReason::NotRunning), 2);
    assert!(
        required.warnings.is_empty(),
        "a starting container is normal"
    );
    assert_eq!(resolve(&items, &name("gossip")).addresses.len(), 3);
}

/// A running sibling does not stand in for the serving container, for a named port and for a
/// fixed number declared by the second container.
#[test]
fn require_running_checks_the_serving_container_not_a_sibling() {
    let mut pod = running("a", "10.0.0.1");
    pod["spec"]["containers"] = json!([
        {"name": "proxy", "image": "p:1"},
        {"name": "node", "image": "ring:1", "ports": [{"name": "gossip", "containerPort": 7000}]},
    ]);
    let waiting = with_container_states(pod.clone(), &[("proxy", "running"), ("node", "waiting")]);
    for port in [name("gossip"), number(7000)] {
        let result = resolve_with(std::slice::from_ref(&waiting), &port, running_required());
        assert_eq!(
            result.report.skipped.get(SkipReason::NotRunning),
            1,
            "{port:?}"
        );
    }
    let up = with_container_states(pod, &[("proxy", "waiting"), ("node", "running")]);
    for port in [name("gossip"), number(7000)] {
        let result = resolve_with(std::slice::from_ref(&up), &port, running_required());
        assert_eq!(result.addresses.len(), 1, "{port:?}");
    }
}

/// A fixed number no container declares: one running container suffices; none → `not_running`;
/// no container statuses at all → `not_running`.
#[test]
fn require_running_with_an_undeclared_number_needs_any_running_container() {
    let mut pod = running("a", "10.0.0.1");
    pod["spec"]["containers"] =
        json!([{"name": "x", "image": "i:1"}, {"name": "y", "image": "i:1"}]);
    let one = with_container_states(pod.clone(), &[("x", "waiting"), ("y", "running")]);
    let none = with_container_states(pod.clone(), &[("x", "waiting"), ("y", "terminated")]);
    let result = resolve_with(&[one, none, pod], &number(9999), running_required());
    assert_eq!(result.addresses, addrs(&["10.0.0.1:9999"]));
    assert_eq!(result.report.skipped.get(SkipReason::NotRunning), 2);
}

/// A named port on a native sidecar: the sidecar's status in `initContainerStatuses` decides.
#[test]
fn require_running_reads_a_sidecars_init_container_status() {
    let mut pod = running("a", "10.0.0.1");
    pod["spec"]["initContainers"] = json!([{"name": "side", "image": "s:1", "restartPolicy": "Always",
                                             "ports": [{"name": "gossip", "containerPort": 7100}]}]);
    let mut up = with_container_states(pod.clone(), &[("main", "waiting")]);
    up["status"]["initContainerStatuses"] = json!([container_status(&("side", "running"))]);
    let mut down = with_container_states(pod, &[("main", "running")]);
    down["status"]["initContainerStatuses"] = json!([container_status(&("side", "waiting"))]);
    let result = resolve_with(&[up, down], &name("gossip"), running_required());
    assert_eq!(result.addresses, addrs(&["10.0.0.1:7100"]));
    assert_eq!(result.report.skipped.get(SkipReason::NotRunning), 1);
}

/// `not_running` is the last check: an address-less or portless pod keeps its earlier reason,
/// and the diagnostic describes the new count.
#[test]
fn not_running_is_checked_last() {
    let waiting = |pod| with_container_states(pod, &[("main", "waiting")]);
    let items = [
        waiting(pending_without_address("a")),
        waiting(running("b", "not-an-address")),
        waiting(with_ports("c", "10.0.0.3", &[("http", 80)])),
        waiting(with_ports("d", "10.0.0.4", &[("gossip", 0)])),
        waiting(with_ports("e", "10.0.0.5", &[("gossip", 7000)])),
    ];
    let result = resolve_with(&items, &name("gossip"), running_required());
    let skipped = result.report.skipped;
    for reason in [
        SkipReason::NoAddress,
        SkipReason::UnparsableAddress,
        SkipReason::MissingPortName,
        SkipReason::PortOutOfRange,
        SkipReason::NotRunning,
    ] {
        assert_eq!(skipped.get(reason), 1, "{reason:?}");
    }
    let error = result
        .into_result(&pods(name("gossip")), "ring")
        .expect_err("no address");
    assert!(
        error
            .to_string()
            .ends_with(", 1 whose serving container is not running yet"),
        "{error}"
    );
}

/// Both narrowings at once: the family picks the address, the container state gates the pod.
#[test]
fn family_and_running_combine() {
    let up = with_container_states(dual_stack("a"), &[("main", "running")]);
    let down = with_container_states(
        with_ips(
            running("b", "10.0.0.2"),
            Some("10.0.0.2"),
            &["10.0.0.2", "fd00::2"],
        ),
        &[("main", "waiting")],
    );
    let filter = Filter {
        ip_family: Some(IpFamily::Ipv6),
        require_running: true,
    };
    let result = resolve_with(&[up, down], &number(7000), filter);
    assert_eq!(result.addresses, addrs(&["[fd00::1]:7000"]));
    assert_eq!(result.report.skipped.get(SkipReason::NotRunning), 1);
}
