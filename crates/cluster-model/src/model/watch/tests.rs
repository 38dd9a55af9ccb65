//! Unit tests of the watch event log: events in resourceVersion order, 410 below the compaction
//! horizon, and a bounded log moving the horizon. Pure; no I/O.

use crate::error::Kind;
use crate::model::test_support::*;

/// The watch log: ADDED/MODIFIED/DELETED with the objects' resourceVersions, in order; events
/// below the compaction horizon answer 410 Expired ("too old resource version").
#[test]
fn watch_log_and_too_old() {
    let mut m = model();
    let start = m.resource_version();
    let p = m
        .create_pod(NS, pod_named("p", "r.io/crash@sha256:aa", None))
        .unwrap();
    m.advance(secs(1));
    let terminated = m.get_pod(NS, "p").unwrap();
    m.delete_pod(NS, "p", &fence(&terminated), None).unwrap();
    let events = m.events_since(start).unwrap();
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    // Created, started, exited, the zero grace written by the delete of a terminal pod, removed.
    assert_eq!(
        types,
        ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    );
    let rvs: Vec<u64> = events.iter().map(|e| e.resource_version).collect();
    assert!(rvs.windows(2).all(|w| w[1] == w[0] + 1), "{rvs:?}");
    assert_eq!(rvs[0], rv_of(&p.metadata));
    for e in &events {
        assert_eq!(rv_of(e.object.metadata()), e.resource_version);
        assert_eq!(e.object.kind(), Kind::Pod);
    }
    assert_eq!(m.events_since(rvs[4]).unwrap(), vec![]);
    m.compact();
    let err = m.events_since(start).unwrap_err();
    assert_eq!((err.code(), err.reason()), (410, "Expired"));
    assert_eq!(
        err.to_string(),
        format!(
            "too old resource version: {start} ({})",
            m.resource_version()
        )
    );
    assert!(m.events_since(m.resource_version()).unwrap().is_empty());
}

/// A bounded event log compacts its oldest events and moves the horizon.
#[test]
fn event_capacity_moves_horizon() {
    let mut m = model();
    m.set_event_capacity(2);
    for n in ["a", "b", "c", "d"] {
        m.create_secret(NS, secret_named(n)).unwrap();
    }
    let horizon = m.compaction_horizon();
    assert_eq!(horizon, m.resource_version() - 2);
    assert!(m.events_since(horizon - 1).is_err());
    assert_eq!(m.events_since(horizon).unwrap().len(), 2);
}
