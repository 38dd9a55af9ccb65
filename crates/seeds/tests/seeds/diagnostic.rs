//! The zero-address diagnostic (seeds.md § The zero-address diagnostic; K30, K31) and the JSON
//! form of the report that the CLI prints.
//!
//! Pure tests over JSON fixtures; no client.

use crate::support::*;
use apiary_seeds::{NoAddresses, Report};
use serde_json::json;

fn no_addresses(items: &[serde_json::Value], port: apiary_seeds::Port) -> NoAddresses {
    resolve(items, &port)
        .into_result(&pods(port.clone()), "ring")
        .expect_err("these fixtures yield no address")
        .as_ref()
        .clone()
}

/// K30: the message names selector, namespace, matched count, each non-zero count, the port
/// name and the sorted names seen.
#[test]
fn k30_message_explains_every_skip() {
    let items = [
        terminating("a", "10.0.0.1"),
        terminating("b", "10.0.0.2"),
        pending_without_address("c"),
        with_ports("d", "10.0.0.4", &[("metrics", 9090)]),
        with_ports("e", "10.0.0.5", &[("http", 80)]),
    ];
    let error = no_addresses(&items, name("gossip"));
    assert_eq!(
        error.to_string(),
        "no pod address for selector app=ring-node in namespace ring: 5 pods matched; skipped 2 \
         terminating, 1 without an address yet, 2 without a container port named gossip (ports \
         seen: http, metrics)"
    );
}

/// The other three reasons have their own wording; one pod reads "1 pod".
#[test]
fn message_wording_for_finished_unparsable_and_out_of_range() {
    let finished = no_addresses(&[in_phase("a", "10.0.0.1", "Failed")], number(7000));
    assert_eq!(
        finished.to_string(),
        "no pod address for selector app=ring-node in namespace ring: 1 pod matched; skipped 1 finished"
    );
    let items = [
        running("a", "nope"),
        with_ports("b", "10.0.0.2", &[("gossip", 0)]),
    ];
    let mixed = no_addresses(&items, name("gossip"));
    assert_eq!(
        mixed.to_string(),
        "no pod address for selector app=ring-node in namespace ring: 2 pods matched; skipped 1 \
         with an unparsable address, 1 with container port gossip out of range"
    );
}

/// Zero matched points at the selector and namespace and lists no skips.
#[test]
fn k5_zero_matched_message_points_at_selector_and_namespace() {
    let error = no_addresses(&[], number(7000));
    assert_eq!(
        error.to_string(),
        "no pod address for selector app=ring-node in namespace ring: 0 pods matched (check the \
         selector and the namespace)"
    );
}

/// Pods lacking the name and declaring no named ports say so.
#[test]
fn missing_name_without_any_declared_ports() {
    let error = no_addresses(&[running("a", "10.0.0.1")], name("gossip"));
    assert!(
        error
            .to_string()
            .ends_with("1 without a container port named gossip (no named ports declared)"),
        "{error}"
    );
}

/// K31: more than 16 distinct names: the first 16 sorted, then "and N more"; exactly 16 shows
/// all without the suffix.
#[test]
fn k31_port_names_are_capped_at_sixteen() {
    let declare = |count: usize| -> Vec<serde_json::Value> {
        (0..count)
            .map(|i| {
                with_ports(
                    &format!("p{i}"),
                    "10.0.0.1",
                    &[(format!("n{i:02}").as_str(), 80)],
                )
            })
            .collect()
    };
    let seventeen = no_addresses(&declare(18), name("gossip")).to_string();
    let shown: Vec<String> = (0..16).map(|i| format!("n{i:02}")).collect();
    assert!(
        seventeen.contains(&format!("(ports seen: {}, and 2 more)", shown.join(", "))),
        "{seventeen}"
    );
    assert!(!seventeen.contains("n16"));
    let sixteen = no_addresses(&declare(16), name("gossip")).to_string();
    assert!(
        sixteen.ends_with(&format!("(ports seen: {})", shown.join(", "))),
        "{sixteen}"
    );
}

/// The report's JSON has all eight skip keys in check order, the matched count and the names.
#[test]
fn report_serializes_with_all_eight_keys() {
    let items = [
        terminating("a", "10.0.0.1"),
        with_ports("b", "10.0.0.2", &[("http", 80)]),
    ];
    let report: Report = resolve(&items, &name("gossip")).report;
    assert_eq!(
        serde_json::to_string(&report).unwrap(),
        r#"{"matched":2,"skipped":{"terminating":1,"finished":0,"no_address":0,"unparsable_address":0,"no_family_address":0,"missing_port_name":1,"port_out_of_range":0,"not_running":0},"port_names_seen":["http"]}"#
    );
    assert_eq!(
        serde_json::to_value(Report::default()).unwrap()["skipped"],
        json!({
            "terminating": 0, "finished": 0, "no_address": 0,
            "unparsable_address": 0, "no_family_address": 0, "missing_port_name": 0,
            "port_out_of_range": 0, "not_running": 0
        })
    );
}
