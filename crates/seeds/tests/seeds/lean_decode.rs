//! The lean decoder's wire rules (seeds.md § Lean decoding): every needed field may be absent or
//! `null`; a wrong type in a needed field or a non-JSON body is a decode error; `containerPort` is
//! 64-bit; list metadata and watch events are read.
//!
//! Pure tests over literal JSON bytes.

use crate::support::full::decode_pod_list_full;
use crate::support::*;
use apiary_seeds::{
    LeanContainer, LeanPod, LeanPort, LeanStatus, LeanWatchEvent, SkipReason, decode_pod_list,
    decode_watch_event, extract,
};

fn one_pod(pod_json: &str) -> LeanPod {
    let text = format!(r#"{{"items": [{pod_json}]}}"#);
    let mut list = decode_pod_list(text.as_bytes()).expect(&text);
    assert_eq!(list.items.len(), 1);
    list.items.remove(0)
}

/// Every needed field null or absent decodes to an empty record, as the full type does.
#[test]
fn nulls_and_absences_decode_to_defaults() {
    let nulls = r#"{"metadata": {"name": null, "uid": null, "resourceVersion": null, "deletionTimestamp": null},
        "spec": {"containers": null, "initContainers": null},
        "status": {"phase": null, "podIP": null, "podIPs": null}}"#;
    assert_eq!(one_pod(nulls), LeanPod::default());
    assert_eq!(
        one_pod(r#"{"metadata": null, "spec": null, "status": null}"#),
        LeanPod::default()
    );
    assert_eq!(one_pod("{}"), LeanPod::default());
    let ports = one_pod(
        r#"{"spec": {"containers": [{"ports": null, "restartPolicy": null}, {"ports": [{"name": null}]}]}}"#,
    );
    assert_eq!(
        ports.containers,
        vec![
            LeanContainer::default(),
            LeanContainer {
                name: None,
                restart_always: false,
                ports: vec![LeanPort {
                    name: None,
                    container_port: 0
                }]
            }
        ]
    );
    for empty in [r#"{}"#, r#"{"metadata": null, "items": null}"#] {
        let list = decode_pod_list(empty.as_bytes()).unwrap();
        assert!(list.items.is_empty());
        assert_eq!(list.continue_token, None);
    }
    let empty_ips = one_pod(r#"{"status": {"podIPs": []}}"#);
    assert!(empty_ips.pod_ips.is_empty());
    let no_ip = one_pod(r#"{"status": {"podIPs": [{"ip": null}, {}, {"ip": "fd00::1"}]}}"#);
    assert_eq!(no_ip.pod_ips, ["", "", "fd00::1"]);
    let statuses = one_pod(
        r#"{"status": {"containerStatuses": null, "initContainerStatuses": [{"name": null, "state": {"running": {}}},
                        {"name": "w", "state": null}, {"name": "r", "state": {"running": null}}]}}"#,
    );
    assert!(statuses.running_containers.is_empty());
}

/// Every needed field is read: name, uid, resourceVersion, deletion mark, phase, addresses,
/// ports, sidecar flag.
#[test]
fn needed_fields_are_read() {
    let pod = one_pod(
        r#"{"metadata": {"name": "a", "uid": "u1", "resourceVersion": "42", "deletionTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {"x": "y"}, "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"containers": [{"name": "c", "env": [{"name": "K", "value": "V"}],
                                     "ports": [{"name": "gossip", "containerPort": 7000, "protocol": "UDP"}]}],
                     "initContainers": [{"name": "s", "restartPolicy": "Always", "ports": [{"containerPort": 9}]}]},
            "status": {"phase": "Failed", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "c", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                                              "lastState": {"running": {}}, "ready": true},
                                             {"name": "w", "state": {"waiting": {"reason": "ContainerCreating"}}}],
                       "initContainerStatuses": [{"name": "s", "state": {"running": {}}}]}}"#,
    );
    assert_eq!(
        pod,
        LeanPod {
            name: Some("a".to_owned()),
            uid: Some("u1".to_owned()),
            resource_version: Some("42".to_owned()),
            terminating: true,
            finished: true,
            pod_ip: Some("10.0.0.1".to_owned()),
            pod_ips: vec!["10.0.0.1".to_owned(), "fd00::1".to_owned()],
            running_containers: vec!["c".to_owned(), "s".to_owned()],
            containers: vec![LeanContainer {
                name: Some("c".to_owned()),
                restart_always: false,
                ports: vec![LeanPort {
                    name: Some("gossip".to_owned()),
                    container_port: 7000
                }],
            }],
            init_containers: vec![LeanContainer {
                name: Some("s".to_owned()),
                restart_always: true,
                ports: vec![LeanPort {
                    name: None,
                    container_port: 9
                }],
            }],
        }
    );
}

/// Both finished phases are recognised, other phases are not, escaped strings included.
#[test]
fn phase_and_restart_policy_are_compared_exactly() {
    for (phase, finished) in [
        ("Succeeded", true),
        ("Failed", true),
        ("Running", false),
        ("Pending", false),
        ("failed", false),
        (r"Succ\u0065eded", true),
    ] {
        let pod = one_pod(&format!(r#"{{"status": {{"phase": "{phase}"}}}}"#));
        assert_eq!(pod.finished, finished, "{phase}");
    }
    for (policy, always) in [("Always", true), ("OnFailure", false), ("always", false)] {
        let pod = one_pod(&format!(
            r#"{{"spec": {{"initContainers": [{{"restartPolicy": "{policy}"}}]}}}}"#
        ));
        assert_eq!(pod.init_containers[0].restart_always, always, "{policy}");
    }
}

/// A `containerPort` beyond 32 bits is a skip reason, not a decode failure.
#[test]
fn container_port_is_read_as_64_bits() {
    let bytes = page(&[with_ports("a", "10.0.0.1", &[("gossip", 1 << 40)])], None);
    let list = decode_pod_list(&bytes).unwrap();
    assert_eq!(list.items[0].containers[0].ports[0].container_port, 1 << 40);
    let result = extract(&list.items, &name("gossip"));
    assert_eq!(result.report.skipped.get(SkipReason::PortOutOfRange), 1);
}

/// A wrong type in any needed field, or a body that is not JSON, fails to decode.
#[test]
fn wrong_types_and_garbage_are_decode_errors() {
    let wrong = [
        r#"{"items": [{"metadata": {"name": 5}}]}"#,
        r#"{"items": [{"metadata": {"uid": []}}]}"#,
        r#"{"items": [{"metadata": {"resourceVersion": 1}}]}"#,
        r#"{"items": [{"metadata": {"deletionTimestamp": 1}}]}"#,
        r#"{"items": [{"status": {"phase": 1}}]}"#,
        r#"{"items": [{"status": {"podIP": 1}}]}"#,
        r#"{"items": [{"status": {"podIPs": [{"ip": 1}]}}]}"#,
        r#"{"items": [{"status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": 2}]}}]}"#,
        r#"{"items": [{"status": {"podIPs": {"ip": "10.0.0.1"}}}]}"#,
        r#"{"items": [{"spec": {"containers": [{"ports": [{"containerPort": "80"}]}]}}]}"#,
        r#"{"items": [{"spec": {"containers": [{"ports": [{"name": 80}]}]}}]}"#,
        r#"{"items": [{"spec": {"initContainers": [{"restartPolicy": true}]}}]}"#,
        r#"{"items": [{"spec": {"containers": [{"name": 7}]}}]}"#,
        r#"{"items": [{"status": {"containerStatuses": [{"name": 1}]}}]}"#,
        r#"{"items": [{"status": {"containerStatuses": [{"name": "c", "state": {"running": 1}}]}}]}"#,
        r#"{"items": [{"status": {"initContainerStatuses": [{"name": "c", "state": 5}]}}]}"#,
        r#"{"items": [{"status": {"containerStatuses": {}}}]}"#,
        r#"{"items": {}}"#,
        r#"{"metadata": {"continue": 3}}"#,
        "<html>502 Bad Gateway</html>",
        "",
    ];
    for body in wrong {
        let error = decode_pod_list(body.as_bytes()).expect_err(body);
        assert!(
            error
                .to_string()
                .starts_with("cannot decode the pod list: "),
            "{error}"
        );
        assert!(
            decode_pod_list_full(body.as_bytes()).is_err(),
            "the full path agrees: {body}"
        );
    }
}

/// Decode errors say what was expected of the needed field.
#[test]
fn decode_errors_name_the_expected_shape() {
    let phase = decode_pod_list(br#"{"items": [{"status": {"phase": 1}}]}"#).unwrap_err();
    assert!(phase.to_string().contains("expected a string"), "{phase}");
    let ips =
        decode_pod_list(br#"{"items": [{"status": {"podIPs": {"ip": "10.0.0.1"}}}]}"#).unwrap_err();
    assert!(ips.to_string().contains("expected a sequence"), "{ips}");
    let running = decode_pod_list(
        br#"{"items": [{"status": {"containerStatuses": [{"name": "c", "state": {"running": 1}}]}}]}"#,
    )
    .unwrap_err();
    assert!(
        running.to_string().contains("expected an object"),
        "{running}"
    );
}

/// The list's continue token and resourceVersion are read; an empty token means the last page.
#[test]
fn list_metadata_continue_and_resource_version() {
    let list = decode_pod_list(&page(&[], Some("tok-2"))).unwrap();
    assert_eq!(list.continue_token.as_deref(), Some("tok-2"));
    assert_eq!(list.resource_version.as_deref(), Some("100"));
    let last = decode_pod_list(&page(&[], Some(""))).unwrap();
    assert_eq!(last.continue_token, None);
    let full = decode_pod_list_full(&page(&[], Some(""))).unwrap();
    assert_eq!(full.continue_token, None);
    let full = decode_pod_list_full(&page(&[], Some("tok-2"))).unwrap();
    assert_eq!(full.continue_token.as_deref(), Some("tok-2"));
}

/// Watch events decode by type; the object may come before the type; unknown types fail.
#[test]
fn watch_events_decode_by_type() {
    let pod = r#"{"metadata": {"name": "a", "uid": "u", "resourceVersion": "7"}, "status": {"podIP": "10.0.0.1"}}"#;
    let expected = LeanPod {
        name: Some("a".to_owned()),
        uid: Some("u".to_owned()),
        resource_version: Some("7".to_owned()),
        pod_ip: Some("10.0.0.1".to_owned()),
        ..LeanPod::default()
    };
    let event = |kind: &str| {
        decode_watch_event(format!(r#"{{"type": "{kind}", "object": {pod}}}"#).as_bytes())
    };
    assert_eq!(
        event("ADDED").unwrap(),
        LeanWatchEvent::Added(expected.clone())
    );
    assert_eq!(
        event("MODIFIED").unwrap(),
        LeanWatchEvent::Modified(expected.clone())
    );
    assert_eq!(
        event("DELETED").unwrap(),
        LeanWatchEvent::Deleted(expected.clone())
    );
    assert_eq!(
        event("BOOKMARK").unwrap(),
        LeanWatchEvent::Bookmark {
            resource_version: Some("7".to_owned())
        }
    );
    assert!(event("RENAMED").is_err());
    let reversed =
        decode_watch_event(format!(r#"{{"object": {pod}, "type": "ADDED"}}"#).as_bytes()).unwrap();
    assert_eq!(reversed, LeanWatchEvent::Added(expected));
    let error = decode_watch_event(
        br#"{"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
             "message": "too old resource version: 1 (5)", "reason": "Expired", "code": 410}}"#,
    )
    .unwrap();
    assert_eq!(
        error,
        LeanWatchEvent::Error(LeanStatus {
            code: 410,
            reason: "Expired".to_owned(),
            message: "too old resource version: 1 (5)".to_owned()
        })
    );
    let bare = decode_watch_event(br#"{"type": "ERROR", "object": {}}"#).unwrap();
    assert_eq!(bare, LeanWatchEvent::Error(LeanStatus::default()));
    assert!(decode_watch_event(b"not json").is_err());
}
