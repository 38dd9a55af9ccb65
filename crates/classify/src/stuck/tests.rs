//! Unit tests of the stuck-pod decisions: when the watch reports (once per pod, only past the
//! grace it had when first seen), what each node answer and finalizer list becomes, the
//! commands named, and the rendered message (never a force). Pure.

use super::*;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn pod(uid: &str, grace: i64) -> TerminatingPod {
    TerminatingPod {
        namespace: "agents".into(),
        name: "apiary-bot-1".into(),
        uid: Some(uid.into()),
        finalizers: Vec::new(),
        node: Some("node-1".into()),
        grace_seconds: Some(grace),
        agent: None,
    }
}

fn overdue(terminating_for: u64, grace: u64) -> Option<Overdue> {
    Some(Overdue {
        terminating_for: secs(terminating_for),
        grace: secs(grace),
    })
}

/// Overdue by `terminating_for` seconds with the 60 s grace of [`pod`] calls.
fn late(terminating_for: u64) -> Overdue {
    Overdue {
        terminating_for: secs(terminating_for),
        grace: secs(60),
    }
}

fn ready(status: &str, reason: Option<&str>) -> NodeFacts {
    NodeFacts::Read {
        ready: Some(ConditionFacts {
            kind: "Ready".into(),
            status: status.into(),
            reason: reason.map(str::to_owned),
            message: Some("kubelet stopped posting node status".into()),
        }),
    }
}

/// The watch reports the first read past the grace (strictly), measured from the first read
/// that saw the pod marked, and only once.
#[test]
fn watch_reports_once_past_the_grace() {
    let mut watch = TerminationWatch::default();
    let p = pod("u1", 60);
    assert_eq!(watch.observe(secs(100), Some(&p)), None);
    assert_eq!(watch.observe(secs(130), Some(&p)), None);
    assert_eq!(
        watch.observe(secs(160), Some(&p)),
        None,
        "exactly the grace"
    );
    assert_eq!(watch.observe(secs(161), Some(&p)), overdue(61, 60));
    assert_eq!(watch.observe(secs(200), Some(&p)), None, "once");
}

/// The grace is the one the pod had when first seen marked: the kubelet's final zero-grace
/// write does not shorten it.
#[test]
fn watch_keeps_the_first_grace() {
    let mut watch = TerminationWatch::default();
    assert_eq!(watch.observe(secs(0), Some(&pod("u1", 60))), None);
    assert_eq!(watch.observe(secs(30), Some(&pod("u1", 0))), None);
    assert_eq!(
        watch.observe(secs(61), Some(&pod("u1", 0))),
        overdue(61, 60)
    );
}

/// A zero-grace pod held only by its finalizers is reported on the first read after any wait.
#[test]
fn watch_reports_a_zero_grace_pod_after_any_wait() {
    let mut watch = TerminationWatch::default();
    let p = pod("u1", 0);
    assert_eq!(watch.observe(secs(5), Some(&p)), None);
    assert_eq!(watch.observe(secs(5), Some(&p)), None);
    assert_eq!(
        watch.observe(secs(5) + Duration::from_millis(1), Some(&p)),
        Some(Overdue {
            terminating_for: Duration::from_millis(1),
            grace: Duration::ZERO
        })
    );
}

/// A new uid under the name, or a read that found it gone or unmarked, starts over.
#[test]
fn watch_starts_over_for_another_pod_or_a_gap() {
    let mut watch = TerminationWatch::default();
    assert_eq!(watch.observe(secs(0), Some(&pod("u1", 10))), None);
    assert_eq!(watch.observe(secs(11), Some(&pod("u2", 10))), None);
    assert_eq!(watch.observe(secs(21), Some(&pod("u2", 10))), None);
    assert_eq!(
        watch.observe(secs(22), Some(&pod("u2", 10))),
        overdue(11, 10)
    );
    assert_eq!(watch.observe(secs(23), None), None);
    assert_eq!(watch.observe(secs(30), Some(&pod("u2", 10))), None);
    assert_eq!(
        watch.observe(secs(41), Some(&pod("u2", 10))),
        overdue(11, 10)
    );
}

/// A negative or absent grace counts as zero.
#[test]
fn grace_is_never_negative() {
    let mut p = pod("u", -5);
    assert_eq!(p.grace(), Duration::ZERO);
    p.grace_seconds = None;
    assert_eq!(p.grace(), Duration::ZERO);
    p.grace_seconds = Some(45);
    assert_eq!(p.grace(), secs(45));
}

/// Finalizers and a node that is not Ready are both named, finalizers first; both commands.
#[test]
fn finalizers_and_a_not_ready_node() {
    let mut p = pod("u", 60);
    p.finalizers = vec!["example.com/a".into(), "example.com/b".into()];
    let d = diagnose(&p, &ready("Unknown", Some("NodeStatusUnknown")), late(75));
    assert_eq!(
        d.causes,
        [
            Cause::Finalizers(vec!["example.com/a".into(), "example.com/b".into()]),
            Cause::NodeNotReady {
                node: "node-1".into(),
                status: Some("Unknown".into()),
                reason: Some("NodeStatusUnknown".into()),
            },
        ]
    );
    assert_eq!(
        d.commands,
        [
            "kubectl describe pod -n agents apiary-bot-1",
            "kubectl get node node-1 -o yaml"
        ]
    );
    assert_eq!((d.terminating_for, d.grace), (secs(75), secs(60)));
    assert_eq!(
        (d.namespace.as_str(), d.pod.as_str()),
        ("agents", "apiary-bot-1")
    );
    assert_eq!(
        d.to_string(),
        "pod agents/apiary-bot-1 is still terminating after 75 s (grace period 60 s); it has \
         finalizers (example.com/a, example.com/b), and the API server keeps it until whatever \
         owns them removes them; its node node-1 is not Ready (Ready=Unknown, \
         NodeStatusUnknown), so its kubelet cannot confirm the containers have stopped. apiary \
         does not force the delete; a cluster administrator can look with: kubectl describe \
         pod -n agents apiary-bot-1 and kubectl get node node-1 -o yaml"
    );
}

/// A Ready node is no cause; with no finalizers the message says the API shows no reason.
#[test]
fn a_ready_node_and_no_finalizers_show_no_reason() {
    let d = diagnose(&pod("u", 30), &ready("True", None), late(31));
    assert!(d.causes.is_empty());
    assert_eq!(d.commands.len(), 2);
    let text = d.to_string();
    assert!(
        text.starts_with(
            "pod agents/apiary-bot-1 is still terminating after 31 s (grace period 60 s); the \
             API shows no reason. apiary does not force"
        ),
        "{text}"
    );
}

/// Ready=False without a reason; a node with no Ready condition; a node gone.
#[test]
fn each_node_answer() {
    let p = pod("u", 30);
    let d = diagnose(&p, &ready("False", None), late(40));
    assert_eq!(
        d.causes,
        [Cause::NodeNotReady {
            node: "node-1".into(),
            status: Some("False".into()),
            reason: None
        }]
    );
    assert_eq!(
        d.causes[0].to_string(),
        "its node node-1 is not Ready (Ready=False), so its kubelet cannot confirm the \
         containers have stopped"
    );
    let d = diagnose(&p, &NodeFacts::Read { ready: None }, late(40));
    assert_eq!(
        d.causes[0].to_string(),
        "its node node-1 reports no Ready condition, so its kubelet cannot confirm the \
         containers have stopped"
    );
    let d = diagnose(&p, &NodeFacts::Missing, late(40));
    assert_eq!(
        d.causes,
        [Cause::NodeGone {
            node: "node-1".into()
        }]
    );
    assert_eq!(
        d.causes[0].to_string(),
        "its node node-1 no longer exists, so no kubelet will confirm the containers have \
         stopped"
    );
}

/// A node the user may not read (or could not be read) is skipped silently, and its command is
/// still named for an administrator.
#[test]
fn an_unreadable_node_is_skipped_silently() {
    let mut p = pod("u", 30);
    p.finalizers = vec!["example.com/a".into()];
    for node in [NodeFacts::NotPermitted, NodeFacts::Unknown] {
        let d = diagnose(&p, &node, late(40));
        assert_eq!(d.causes, [Cause::Finalizers(vec!["example.com/a".into()])]);
        assert_eq!(d.commands[1], "kubectl get node node-1 -o yaml");
        assert!(!d.to_string().contains("403"), "{d}");
        assert!(!d.to_string().contains("Forbidden"), "{d}");
    }
}

/// An unbound pod: nothing about a node, only the describe command.
#[test]
fn an_unbound_pod_names_no_node() {
    let mut p = pod("u", 30);
    p.node = None;
    p.finalizers = vec!["example.com/a".into()];
    let d = diagnose(&p, &NodeFacts::Missing, late(40));
    assert_eq!(d.causes, [Cause::Finalizers(vec!["example.com/a".into()])]);
    assert_eq!(d.commands, ["kubectl describe pod -n agents apiary-bot-1"]);
    assert!(!d.to_string().contains("node"), "{d}");
}

/// The message never proposes a forced delete.
#[test]
fn never_a_force() {
    let mut p = pod("u", 30);
    p.finalizers = vec!["example.com/a".into()];
    for node in [ready("Unknown", None), NodeFacts::Missing] {
        let text = diagnose(&p, &node, late(99)).to_string();
        assert!(!text.contains("--force"), "{text}");
        assert!(!text.contains("grace-period=0"), "{text}");
        assert!(!text.contains("patch"), "{text}");
    }
}

/// Below 10 s a duration keeps its tenths; whole seconds and longer ones do not.
#[test]
fn short_durations_keep_their_tenths() {
    let p = pod("u", 1);
    let at = |terminating_for: Duration, grace: Duration| {
        diagnose(
            &p,
            &NodeFacts::Unknown,
            Overdue {
                terminating_for,
                grace,
            },
        )
        .to_string()
    };
    assert!(
        at(Duration::from_millis(1250), Duration::ZERO).contains("after 1.2 s (grace period 0 s)"),
    );
    assert!(at(secs(3), secs(1)).contains("after 3 s (grace period 1 s)"));
    assert!(at(Duration::from_millis(10_900), secs(1)).contains("after 10 s "));
}

/// A refused node read is split on the literal reason: `NotFound` says the node is gone,
/// `Forbidden` is skipped silently, and any other reason (or none, or another case) says
/// nothing about the node.
#[test]
fn node_refusals_split_on_the_literal_reason() {
    assert_eq!(NodeFacts::refused("NotFound"), NodeFacts::Missing);
    assert_eq!(NodeFacts::refused("Forbidden"), NodeFacts::NotPermitted);
    for other in [
        "",
        "notfound",
        "forbidden",
        "InternalError",
        "Unauthorized",
        "Conflict",
    ] {
        assert_eq!(NodeFacts::refused(other), NodeFacts::Unknown, "{other:?}");
    }
    let held = pod("u", 60);
    let gone = diagnose(&held, &NodeFacts::refused("NotFound"), late(61));
    assert_eq!(
        gone.causes,
        [Cause::NodeGone {
            node: "node-1".into()
        }]
    );
    let denied = diagnose(&held, &NodeFacts::refused("Forbidden"), late(61));
    assert!(denied.causes.is_empty());
    assert!(!denied.to_string().contains("its node"), "{denied}");
}

/// deploy.md § When a pod will not go away: with nothing in the API holding the pod, a running
/// container at the end of the grace is one that ignored SIGTERM (the kubelet kills it now), and
/// a waiting one never started; neither reads as a node fault, and the commands stay.
#[test]
fn with_no_cause_the_container_state_says_what_the_wait_is() {
    let mut running = pod("u", 60);
    running.agent = Some(ContainerState::Running);
    let d = diagnose(&running, &ready("True", None), late(61));
    assert_eq!(d.likely, Likely::IgnoredSigterm);
    assert_eq!(
        d.to_string(),
        "pod agents/apiary-bot-1 is still terminating after 61 s (grace period 60 s): its \
         container did not exit on SIGTERM within the grace period, so the kubelet kills it now \
         and the pod goes once the kill is confirmed; an agent that exits on SIGTERM stops in \
         seconds (README.md § Writing an agent image), and --grace-period shortens the wait. \
         apiary does not force the delete; if it stays, a cluster administrator can look with: \
         kubectl describe pod -n agents apiary-bot-1 and kubectl get node node-1 -o yaml"
    );
    // Read a moment after the kubelet's SIGKILL (seen on the real node): the same diagnosis.
    let mut killed = pod("u", 60);
    killed.agent = Some(ContainerState::Terminated {
        exit_code: 137,
        reason: Some("Error".into()),
    });
    assert_eq!(
        diagnose(&killed, &ready("True", None), late(61)).likely,
        Likely::IgnoredSigterm
    );
    let mut ended = pod("u", 60);
    ended.agent = Some(ContainerState::Terminated {
        exit_code: 0,
        reason: Some("Completed".into()),
    });
    assert_eq!(
        diagnose(&ended, &ready("True", None), late(61)).likely,
        Likely::Unknown
    );
    let mut waiting = pod("u", 60);
    waiting.agent = Some(ContainerState::Waiting {
        reason: Some("ImagePullBackOff".into()),
        message: None,
    });
    let d = diagnose(&waiting, &ready("True", None), late(61));
    assert_eq!(d.likely, Likely::NeverStarted);
    assert!(
        d.to_string().contains(": its container never started"),
        "{d}"
    );
    // A real cause keeps its diagnosis whatever the container did.
    let mut held = running.clone();
    held.finalizers = vec!["example.com/hold".into()];
    let text = diagnose(&held, &ready("True", None), late(61)).to_string();
    assert!(
        text.contains("it has finalizers (example.com/hold)"),
        "{text}"
    );
    assert!(!text.contains("SIGTERM"), "{text}");
    assert!(
        text.contains("; a cluster administrator can look with"),
        "{text}"
    );
}
