//! Tests of the scripted container logs: lines appear on the model clock from the container's
//! start, the query parameters filter them, and each refusal has the real wording.

use std::time::Duration;

use crate::kubelet::PodScript;
use crate::model::test_support::{IMAGE, NS, model, pod_named, secs};
use crate::model::*;

/// Create pod `name` in the namespace, run by `script`.
fn create(m: &mut ClusterModel, name: &str, script: PodScript) {
    m.script_pods_named(NS, name, script);
    m.create_pod(NS, pod_named(name, IMAGE, None)).expect("pod");
}

fn lines(read: &LogRead) -> Vec<&str> {
    read.lines.iter().map(|l| l.text.as_str()).collect()
}

fn scripted(m: &mut ClusterModel, name: &str) {
    m.script_pod_log(
        NS,
        name,
        "agent",
        [
            (secs(0), "starting".to_owned()),
            (secs(5), "working".to_owned()),
            (secs(10), "done".to_owned()),
        ],
    );
}

/// Lines appear as the model clock passes their offset from the container's start; a running
/// container has not ended.
#[test]
fn lines_appear_on_the_model_clock_from_the_start() {
    let mut m = model();
    scripted(&mut m, "p");
    create(&mut m, "p", PodScript::Start { after: secs(1) });
    m.advance(secs(1));
    let read = m.read_pod_log(NS, "p", &LogQuery::default()).expect("log");
    assert_eq!(lines(&read), ["starting"]);
    assert!(!read.ended);
    m.advance(secs(6));
    let read = m.read_pod_log(NS, "p", &LogQuery::default()).expect("log");
    assert_eq!(lines(&read), ["starting", "working"]);
    assert!(read.lines[1].at > read.lines[0].at);
}

/// A terminated container's log holds what it wrote before it ended, and has ended.
#[test]
fn a_terminated_container_has_ended() {
    let mut m = model();
    scripted(&mut m, "p");
    create(
        &mut m,
        "p",
        PodScript::Exit {
            after: Duration::ZERO,
            run_for: secs(7),
            exit_code: 1,
        },
    );
    m.advance(secs(60));
    let read = m.read_pod_log(NS, "p", &LogQuery::default()).expect("log");
    assert_eq!(lines(&read), ["starting", "working"]);
    assert!(read.ended);
}

/// `tailLines`, `sinceSeconds` and `sinceTime` filter as the endpoint does.
#[test]
fn query_parameters_filter() {
    let mut m = model();
    scripted(&mut m, "p");
    create(
        &mut m,
        "p",
        PodScript::Start {
            after: Duration::ZERO,
        },
    );
    m.advance(secs(12));
    let all = m.read_pod_log(NS, "p", &LogQuery::default()).expect("log");
    let tail = LogQuery {
        tail_lines: Some(2),
        ..LogQuery::default()
    };
    assert_eq!(
        lines(&m.read_pod_log(NS, "p", &tail).expect("log")),
        ["working", "done"]
    );
    let since = LogQuery {
        since_seconds: Some(4),
        ..LogQuery::default()
    };
    assert_eq!(
        lines(&m.read_pod_log(NS, "p", &since).expect("log")),
        ["done"]
    );
    let since_time = LogQuery {
        since_time: Some(all.lines[1].at),
        ..LogQuery::default()
    };
    assert_eq!(
        lines(&m.read_pod_log(NS, "p", &since_time).expect("log")),
        ["working", "done"]
    );
    let none = LogQuery {
        tail_lines: Some(0),
        ..LogQuery::default()
    };
    assert!(
        m.read_pod_log(NS, "p", &none)
            .expect("log")
            .lines
            .is_empty()
    );
}

/// Every refusal carries the real apiserver's or kubelet's wording.
#[test]
fn refusals_have_the_real_wording() {
    let mut m = model();
    let message = |m: &ClusterModel, name: &str, query: &LogQuery| {
        let err = m.read_pod_log(NS, name, query).expect_err("refused");
        (err.code(), err.to_string())
    };
    assert_eq!(
        message(&m, "nope", &LogQuery::default()),
        (404, "pods \"nope\" not found".to_owned())
    );
    create(&mut m, "unscheduled", PodScript::Unschedulable);
    // No node: the apiserver answers an empty log, not a refusal.
    let empty = m
        .read_pod_log(NS, "unscheduled", &LogQuery::default())
        .expect("an empty log");
    assert!(empty.lines.is_empty() && empty.ended);
    let other = LogQuery {
        container: Some("sidecar".to_owned()),
        ..LogQuery::default()
    };
    assert_eq!(
        message(&m, "unscheduled", &other),
        (
            400,
            "container sidecar is not valid for pod unscheduled".to_owned()
        )
    );
    create(&mut m, "creating", PodScript::NeverStarts);
    m.advance(secs(1));
    assert_eq!(
        message(&m, "creating", &LogQuery::default()),
        (
            400,
            "container \"agent\" in pod \"creating\" is waiting to start: ContainerCreating"
                .to_owned()
        )
    );
    let previous = LogQuery {
        previous: true,
        ..LogQuery::default()
    };
    assert_eq!(
        message(&m, "creating", &previous),
        (
            400,
            "previous terminated container \"agent\" in pod \"creating\" not found".to_owned()
        )
    );
    create(
        &mut m,
        "pulling",
        PodScript::PullFailure {
            after: Duration::ZERO,
            failure: crate::kubelet::PullFailure::ManifestUnknown,
        },
    );
    m.advance(secs(5));
    assert_eq!(
        message(&m, "pulling", &LogQuery::default()),
        (
            400,
            "container \"agent\" in pod \"pulling\" is waiting to start: image can't be pulled"
                .to_owned()
        )
    );
}

/// `previous` reads the earlier instance when one was given.
#[test]
fn previous_reads_the_earlier_instance() {
    let mut m = model();
    m.set_previous_pod_log(NS, "p", "agent", ["before".to_owned()]);
    create(
        &mut m,
        "p",
        PodScript::Start {
            after: Duration::ZERO,
        },
    );
    m.advance(secs(1));
    let previous = LogQuery {
        previous: true,
        ..LogQuery::default()
    };
    let read = m.read_pod_log(NS, "p", &previous).expect("log");
    assert_eq!(lines(&read), ["before"]);
    assert!(read.ended);
}
