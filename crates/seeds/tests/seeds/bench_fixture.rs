//! The benchmark's synthetic pods (seeds.md § Lean decoding, cost): each is 3–6 KB of JSON of an
//! ordinary workload pod, decodes as a full `Pod`, and the lean and full paths agree on them
//! (K37 on a realistic fixture).
//!
//! Pure tests; the fixture is shared with `examples/bench_decode.rs`.

#[path = "../../examples/support/synthetic.rs"]
mod synthetic;

use crate::support::full::decode_pod_list_full;
use apiary_seeds::{Port, SkipReason, decode_pod_list, extract};

/// Every synthetic pod weighs 3–6 KB of JSON, as the benchmark requires.
#[test]
fn synthetic_pods_weigh_three_to_six_kilobytes() {
    for index in [0, 9, 13, 24, 4321, 9999] {
        let size = serde_json::to_vec(&synthetic::pod(index)).unwrap().len();
        assert!((3_000..=6_000).contains(&size), "pod {index}: {size} bytes");
    }
}

/// K37 on the realistic fixture: identical addresses and report from both decoders.
#[test]
fn k37_lean_equals_full_on_synthetic_pods() {
    let bytes = synthetic::pod_list_bytes(300);
    let port = Port::Name("gossip".to_owned());
    let lean = extract(&decode_pod_list(&bytes).unwrap().items, &port);
    let full = extract(&decode_pod_list_full(&bytes).unwrap().items, &port);
    assert_eq!(lean, full);
    assert_eq!(lean.report.matched, 300);
    assert_eq!(lean.report.skipped.get(SkipReason::Terminating), 30);
    assert!(lean.addresses.len() > 250);
}
