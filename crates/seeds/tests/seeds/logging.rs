//! Warn-once logging (seeds.md § Logging; K26): unparsable addresses, out-of-range ports and
//! missing names warn with structured fields; other skips do not; an identical second resolve
//! warns nothing; a changed detail, or a relapse after recovery, warns again.
//!
//! Pure tests with a capturing `tracing` subscriber; no client.

use std::io;
use std::sync::{Arc, Mutex};

use crate::support::*;
use apiary_seeds::{Extraction, PodWarning, WarnOnce, WarningDetail};
use serde_json::Value;
use tracing_subscriber::fmt::MakeWriter;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Runs `log` on the extraction of each listing in turn with one `WarnOnce`, returning the
/// captured output of each resolve.
fn log_resolves(listings: &[Vec<Value>], port: &apiary_seeds::Port) -> Vec<String> {
    let mut memory = WarnOnce::new();
    listings
        .iter()
        .map(|items| {
            let extraction: Extraction = resolve(items, port);
            let captured = Captured::default();
            let subscriber = tracing_subscriber::fmt()
                .with_writer(captured.clone())
                .with_ansi(false)
                .with_max_level(tracing::Level::DEBUG)
                .finish();
            tracing::subscriber::with_default(subscriber, || memory.log(&extraction, 1));
            String::from_utf8(captured.0.lock().unwrap().clone()).unwrap()
        })
        .collect()
}

fn warnings(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|line| line.contains("WARN"))
        .collect()
}

/// K26: the three warned reasons warn with their fields; no address, terminating and finished
/// do not; the summary is one debug line.
#[test]
fn k26_only_three_reasons_warn_with_structured_fields() {
    let items = vec![
        running("bad-ip", "not-an-address"),
        with_ports("too-big", "10.0.0.2", &[("gossip", 70000)]),
        with_ports("no-name", "10.0.0.3", &[("http", 80), ("metrics", 9090)]),
        pending_without_address("starting"),
        terminating("leaving", "10.0.0.5"),
        in_phase("done", "10.0.0.6", "Succeeded"),
        with_ports("good", "10.0.0.7", &[("gossip", 7000)]),
    ];
    let output = log_resolves(&[items], &name("gossip")).remove(0);
    let warned = warnings(&output);
    assert_eq!(warned.len(), 3, "{output}");
    assert!(warned[0].contains("cannot parse the pod IP") && warned[0].contains("pod=\"bad-ip\""));
    assert!(warned[0].contains("ip=\"not-an-address\"") && warned[0].contains("error="));
    assert!(
        warned[1].contains("container port out of range") && warned[1].contains("pod=\"too-big\"")
    );
    assert!(
        warned[1].contains("port_name=\"gossip\"") && warned[1].contains("container_port=70000")
    );
    assert!(
        warned[2].contains("no container port of this name")
            && warned[2].contains("pod=\"no-name\"")
    );
    assert!(
        warned[2].contains("port_name=\"gossip\"")
            && warned[2].contains("declared=\"http,metrics\"")
    );
    let debug: Vec<&str> = output
        .lines()
        .filter(|line| line.contains("DEBUG"))
        .collect();
    assert_eq!(debug.len(), 1, "{output}");
    assert!(debug[0].contains("resolved seed addresses"));
    for field in [
        "matched=7",
        "addresses=1",
        "pages=1",
        "terminating=1",
        "finished=1",
        "no_address=1",
        "unparsable_address=1",
        "missing_port_name=1",
        "port_out_of_range=1",
    ] {
        assert!(debug[0].contains(field), "{field} in {}", debug[0]);
    }
}

/// K26: an identical second resolve warns nothing; a changed detail warns again.
#[test]
fn k26_second_identical_resolve_is_silent_and_changed_detail_warns() {
    let first = vec![
        running("a", "bad-1"),
        with_ports("b", "10.0.0.2", &[("gossip", 0)]),
    ];
    let changed = vec![
        running("a", "bad-2"),
        with_ports("b", "10.0.0.2", &[("gossip", 0)]),
    ];
    let outputs = log_resolves(&[first.clone(), first, changed], &name("gossip"));
    assert_eq!(warnings(&outputs[0]).len(), 2);
    assert!(warnings(&outputs[1]).is_empty(), "{}", outputs[1]);
    let third = warnings(&outputs[2]);
    assert_eq!(third.len(), 1);
    assert!(third[0].contains("bad-2"));
}

/// A pod that recovers and relapses warns again: memory holds only the previous resolve.
#[test]
fn relapse_after_recovery_warns_again() {
    let broken = vec![running("a", "bad")];
    let healthy = vec![running("a", "10.0.0.1")];
    let outputs = log_resolves(&[broken.clone(), healthy, broken], &number(7000));
    assert_eq!(warnings(&outputs[0]).len(), 1);
    assert!(warnings(&outputs[1]).is_empty());
    assert_eq!(warnings(&outputs[2]).len(), 1);
}

/// The warn-once key is the uid, else the name: two unnamed-uid pods with different names are
/// different pods, and a pod without name logs `<unnamed>`.
#[test]
fn warn_once_key_is_uid_else_name() {
    let mut a = running("a", "bad");
    a["metadata"]["uid"] = Value::Null;
    let mut b = running("b", "bad");
    b["metadata"]["uid"] = Value::Null;
    let result = resolve(&[a, b], &number(7000));
    let keys: Vec<&str> = result
        .warnings
        .iter()
        .map(|warning| warning.key.as_str())
        .collect();
    assert_eq!(keys, ["name:a", "name:b"]);
    let mut same_name = running("c", "bad");
    same_name["metadata"]["uid"] = Value::from("u-1");
    same_name["metadata"]["name"] = Value::Null;
    let result = resolve(&[same_name], &number(7000));
    assert_eq!(result.warnings[0].key, "uid:u-1");
    assert_eq!(result.warnings[0].pod, "<unnamed>");
    let mut empty_uid = running("d", "bad");
    empty_uid["metadata"]["uid"] = Value::from("");
    assert_eq!(
        resolve(&[empty_uid], &number(7000)).warnings[0].key,
        "name:d"
    );
}

/// `fresh` returns the new warnings in input order and forgets what the last call did not see.
#[test]
fn fresh_keeps_input_order_and_forgets() {
    let warning = |key: &str, ip: &str| PodWarning {
        key: key.to_owned(),
        pod: key.to_owned(),
        detail: WarningDetail::UnparsableAddress {
            ip: ip.to_owned(),
            error: "e".to_owned(),
        },
    };
    let mut memory = WarnOnce::new();
    let batch = [warning("b", "x"), warning("a", "x")];
    assert_eq!(memory.fresh(&batch), batch.to_vec());
    assert_eq!(
        memory.fresh(&[warning("a", "x"), warning("c", "x")]),
        vec![warning("c", "x")]
    );
    assert_eq!(memory.fresh(&[warning("b", "x")]), vec![warning("b", "x")]);
}
