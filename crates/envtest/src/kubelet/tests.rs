//! Unit tests of the fake kubelet's pure parts: the time scale, the address numbering, the
//! Node it registers, and the tracker's schedule (what falls due when, for which pod). No I/O:
//! the real-server behaviour is in `tests/kubelet.rs`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use apiary_cluster_model::kubelet::PodScript;
use apiary_cluster_model::kubelet::Stage;
use apiary_cluster_model::kubelet::sequence::KubeletMemory;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use super::node::{node_object, node_status_patch};
use super::tracker::{Scale, Stepped, Tracker, Work, next_container_id, pod_ip};
use super::*;

fn pod(name: &str, uid: &str, image: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("ns".to_owned()),
            uid: Some(uid.to_owned()),
            resource_version: Some("10".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "agent".to_owned(),
                image: Some(image.to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn key(name: &str) -> (String, String) {
    ("ns".to_owned(), name.to_owned())
}

/// The tests' shorthand: nothing is in flight.
trait TakeDue {
    fn take_due_now(&mut self, now: Instant) -> Option<Work>;
}

impl TakeDue for Tracker {
    fn take_due_now(&mut self, now: Instant) -> Option<Work> {
        self.take_due(now, &BTreeSet::new())
    }
}

fn tracker() -> Tracker {
    Tracker::new(
        "node-a".to_owned(),
        Duration::from_secs(1),
        None,
        Scale::new(10.0),
    )
}

fn marked(mut pod: Pod, grace: i64) -> Pod {
    pod.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    pod.metadata.deletion_grace_period_seconds = Some(grace);
    pod.metadata.resource_version = Some("20".to_owned());
    pod
}

fn running(progress_of: &mut Tracker, name: &str, uid: &str, now: Instant) {
    progress_of.stepped(
        &key(name),
        uid,
        Stepped {
            progress: KubeletMemory {
                stage: Stage::Running,
                pull_attempts: 0,
                started_at: None,
            },
            placement: None,
            container_id: None,
            written: None,
            next: None,
        },
        now,
    );
}

/// Model time divides by the scale; a nonsense scale means real time.
#[test]
fn scale_converts_model_and_real_time() {
    let scale = Scale::new(10.0);
    assert_eq!(
        scale.to_real(Duration::from_secs(30)),
        Duration::from_secs(3)
    );
    assert_eq!(
        scale.to_model(Duration::from_millis(100)),
        Duration::from_secs(1)
    );
    for nonsense in [0.0, -2.0, f64::NAN, f64::INFINITY] {
        let real = Scale::new(nonsense);
        assert_eq!(real.to_real(Duration::from_secs(7)), Duration::from_secs(7));
    }
}

/// Sandbox addresses are distinct hosts of 10.244.0.0/16 (never .0 or .255).
#[test]
fn pod_ips_are_distinct_hosts_of_the_cidr() {
    let ips: Vec<String> = (0..600).map(pod_ip).collect();
    let distinct: BTreeSet<&String> = ips.iter().collect();
    assert_eq!(distinct.len(), ips.len());
    assert_eq!(ips[0], "10.244.0.1");
    assert_eq!(ips[253], "10.244.0.254");
    assert_eq!(ips[254], "10.244.1.1");
    assert!(
        ips.iter()
            .all(|ip| ip.starts_with("10.244.") && !ip.ends_with(".0") && !ip.ends_with(".255"))
    );
}

/// Container IDs are containerd-shaped (64 hex digits) and never repeat.
#[test]
fn container_ids_are_containerd_shaped_and_unique() {
    let a = next_container_id();
    let b = next_container_id();
    assert_ne!(a, b);
    let hex = a.strip_prefix("containerd://").unwrap_or_default();
    assert_eq!(hex.len(), 64, "{a}");
    assert!(hex.chars().all(|c| c.is_ascii_hexdigit()));
}

/// The node carries its pod CIDR and hostname label; its status says Ready with its address.
#[test]
fn node_is_registered_ready_with_addresses() {
    let node = node_object("node-a");
    assert_eq!(node.metadata.name.as_deref(), Some("node-a"));
    let spec = node.spec.unwrap_or_default();
    assert_eq!(spec.pod_cidr.as_deref(), Some("10.244.0.0/16"));
    let patch = node_status_patch("node-a", Timestamp::UNIX_EPOCH);
    let conditions = patch["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ready = conditions.iter().find(|c| c["type"] == "Ready");
    assert_eq!(ready.map(|c| c["status"].clone()), Some("True".into()));
    assert_eq!(patch["status"]["addresses"][0]["type"], "InternalIP");
    assert_eq!(patch["status"]["addresses"][0]["address"], "127.0.0.1");
}

/// A new pod gets the image convention's script and is due at once; the next step is due the
/// scaled delay later.
#[test]
fn new_pod_is_scripted_by_image_and_due_at_once() {
    let mut t = tracker();
    let now = Instant::now();
    t.observe(pod("p", "u1", "r.io/team/agent-crash@sha256:aa"), now);
    assert!(matches!(
        t.get(&key("p")).map(|p| p.script.clone()),
        Some(PodScript::Exit { exit_code: 1, .. })
    ));
    assert_eq!(t.next_due(&BTreeSet::new()), Some(now));
    assert_eq!(t.take_due_now(now), Some(Work::Step(key("p"))));
    assert_eq!(
        t.take_due_now(now),
        None,
        "a taken step is off the schedule"
    );
    t.stepped(
        &key("p"),
        "u1",
        Stepped {
            progress: KubeletMemory {
                stage: Stage::Scheduled,
                pull_attempts: 0,
                started_at: None,
            },
            placement: None,
            container_id: None,
            written: None,
            next: Some(Duration::from_secs(1)),
        },
        now,
    );
    assert_eq!(
        t.next_due(&BTreeSet::new()),
        Some(now + Duration::from_millis(100))
    );
    assert_eq!(t.take_due_now(now), None);
}

/// Unrecognised images start after the start delay (or the configured default script).
#[test]
fn default_script_applies_to_other_images() {
    let t = tracker();
    assert_eq!(
        t.script_for(&pod("p", "u", "r.io/agent")),
        PodScript::Start {
            after: Duration::from_secs(1)
        }
    );
    let t = Tracker::new(
        "n".to_owned(),
        Duration::from_secs(1),
        Some(PodScript::NeverStarts),
        Scale::new(1.0),
    );
    assert_eq!(
        t.script_for(&pod("p", "u", "r.io/agent")),
        PodScript::NeverStarts
    );
}

/// Pods bound to another node are not this kubelet's.
#[test]
fn pods_of_other_nodes_are_ignored() {
    let mut t = tracker();
    let mut other = pod("p", "u1", "r.io/agent");
    if let Some(spec) = other.spec.as_mut() {
        spec.node_name = Some("node-b".to_owned());
    }
    t.observe(other, Instant::now());
    assert!(t.get(&key("p")).is_none());
    assert_eq!(t.next_due(&BTreeSet::new()), None);
}

/// A pod recreated under the same name is a new pod: new uid, script from the start.
#[test]
fn recreated_pod_starts_afresh() {
    let mut t = tracker();
    let now = Instant::now();
    t.observe(pod("p", "u1", "r.io/agent"), now);
    running(&mut t, "p", "u1", now);
    t.observe(pod("p", "u2", "r.io/agent"), now);
    let tracked = t.get(&key("p")).map(|p| (p.uid.clone(), p.progress.stage));
    assert_eq!(tracked, Some(("u2".to_owned(), Stage::Created)));
    // A DELETED event of the old uid does not forget the new pod.
    t.forget(&pod("p", "u1", "r.io/agent"));
    assert!(t.get(&key("p")).is_some());
    t.forget(&pod("p", "u2", "r.io/agent"));
    assert!(t.get(&key("p")).is_none());
}

/// A marked running pod: its containers are terminated at once, the uid-fenced delete follows
/// after the scaled grace, and no script step runs meanwhile.
#[test]
fn deletion_mark_terminates_then_finishes_after_grace() {
    let mut t = tracker();
    let now = Instant::now();
    t.observe(pod("p", "u1", "r.io/agent"), now);
    assert_eq!(t.take_due_now(now), Some(Work::Step(key("p"))));
    running(&mut t, "p", "u1", now);
    t.observe(marked(pod("p", "u1", "r.io/agent"), 30), now);
    assert_eq!(t.take_due_now(now), Some(Work::Terminate(key("p"))));
    assert_eq!(t.take_due_now(now), None);
    let grace = now + Duration::from_secs(3);
    assert_eq!(t.next_due(&BTreeSet::new()), Some(grace));
    assert_eq!(t.take_due_now(grace - Duration::from_millis(1)), None);
    assert_eq!(
        t.take_due_now(grace),
        Some(Work::Finish {
            key: key("p"),
            uid: "u1".to_owned()
        })
    );
    assert_eq!(t.take_due_now(grace), None, "the delete is handed out once");
    t.retry(
        &Work::Finish {
            key: key("p"),
            uid: "u1".to_owned(),
        },
        grace,
    );
    assert!(matches!(t.take_due_now(grace), Some(Work::Finish { .. })));
}

/// A marked pod whose containers never started gets no termination write.
#[test]
fn deletion_mark_of_waiting_pod_only_finishes() {
    let mut t = tracker();
    let now = Instant::now();
    t.observe(marked(pod("p", "u1", "r.io/never-starts"), 0), now);
    assert_eq!(
        t.take_due_now(now),
        Some(Work::Finish {
            key: key("p"),
            uid: "u1".to_owned()
        })
    );
}

/// A pod with work in flight gets no second piece of work until the first is reported.
#[test]
fn busy_pods_get_no_second_work() {
    let mut t = tracker();
    let now = Instant::now();
    t.observe(pod("p", "u1", "r.io/agent"), now);
    t.observe(pod("q", "u2", "r.io/agent"), now);
    let busy = BTreeSet::from([key("p")]);
    assert_eq!(t.take_due(now, &busy), Some(Work::Step(key("q"))));
    assert_eq!(t.take_due(now, &busy), None);
    assert_eq!(t.next_due(&busy), None);
    assert_eq!(t.take_due_now(now), Some(Work::Step(key("p"))));
}

/// Older watch events do not replace a newer version the kubelet wrote itself.
#[test]
fn older_versions_never_replace_newer_ones() {
    let mut t = tracker();
    let now = Instant::now();
    let mut newer = pod("p", "u1", "r.io/agent");
    newer.metadata.resource_version = Some("12".to_owned());
    t.observe(newer, now);
    t.observe(pod("p", "u1", "r.io/agent"), now);
    let rv = t
        .get(&key("p"))
        .and_then(|p| p.latest.metadata.resource_version.clone());
    assert_eq!(rv.as_deref(), Some("12"));
}

/// A Secret appearing wakes the namespace's pods held in CreateContainerConfigError.
#[test]
fn secret_wakes_config_errors() {
    let mut t = tracker();
    let now = Instant::now();
    t.observe(pod("p", "u1", "r.io/agent"), now);
    t.take_due_now(now);
    t.stepped(
        &key("p"),
        "u1",
        Stepped {
            progress: KubeletMemory {
                stage: Stage::ConfigError,
                pull_attempts: 0,
                started_at: None,
            },
            placement: None,
            container_id: None,
            written: None,
            next: Some(Duration::from_secs(10)),
        },
        now,
    );
    let later = now + Duration::from_millis(10);
    assert_eq!(t.take_due_now(later), None);
    t.secret_appeared("other", later);
    assert_eq!(t.take_due_now(later), None);
    t.secret_appeared("ns", later);
    assert_eq!(t.take_due_now(later), Some(Work::Step(key("p"))));
}

/// After a relist, pods of that scope that were not listed are forgotten; other namespaces
/// are kept.
#[test]
fn relist_forgets_unlisted_pods_of_its_scope() {
    let mut t = tracker();
    let now = Instant::now();
    t.observe(pod("a", "u1", "r.io/agent"), now);
    t.observe(pod("b", "u2", "r.io/agent"), now);
    let mut elsewhere = pod("c", "u3", "r.io/agent");
    elsewhere.metadata.namespace = Some("other".to_owned());
    t.observe(elsewhere, now);
    let seen = BTreeSet::from([key("a")]);
    t.relisted(Some("ns"), &seen);
    assert!(t.get(&key("a")).is_some());
    assert!(t.get(&key("b")).is_none());
    assert!(t.get(&("other".to_owned(), "c".to_owned())).is_some());
    t.relisted(None, &seen);
    assert!(t.get(&("other".to_owned(), "c".to_owned())).is_none());
}

/// Options: the defaults a test wants, and the builders.
#[test]
fn options_defaults_and_builders() {
    let o = Options::in_namespace("agents")
        .with_time_scale(100.0)
        .with_node_name("n2")
        .with_start_delay(Duration::from_secs(2))
        .with_default_script(PodScript::NeverStarts);
    assert_eq!(o.scope, Scope::Namespaces(vec!["agents".to_owned()]));
    assert_eq!(o.node_name, "n2");
    assert_eq!(o.time_scale, 100.0);
    assert_eq!(o.start_delay, Duration::from_secs(2));
    assert_eq!(o.default_script, Some(PodScript::NeverStarts));
    let d = Options::default();
    assert_eq!(d.node_name, DEFAULT_NODE_NAME);
    assert_eq!(d.time_scale, DEFAULT_TIME_SCALE);
    assert_eq!(d.scope, Scope::AllNamespaces);
}

/// Events trailing the kubelet's final delete never bring the finished pod back; its DELETED
/// event ends the tombstone.
#[test]
fn finished_pods_stay_finished() {
    let mut t = tracker();
    let now = Instant::now();
    t.observe(marked(pod("p", "u1", "r.io/agent"), 0), now);
    t.drop_key(&key("p"), "u1");
    t.observe(marked(pod("p", "u1", "r.io/agent"), 0), now);
    assert!(t.get(&key("p")).is_none());
    assert_eq!(t.next_due(&BTreeSet::new()), None);
    t.forget(&pod("p", "u1", "r.io/agent"));
    t.observe(pod("p", "u2", "r.io/agent"), now);
    assert!(t.get(&key("p")).is_some());
}
