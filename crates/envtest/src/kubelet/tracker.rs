//! The fake kubelet's bookkeeping: which pods it runs, which script each follows (chosen by
//! `apiary_cluster_model`'s image convention), where each is in it, and what work falls due
//! next (a script step, the termination write of a deletion-marked pod, or the final delete).
//!
//! Pure: observations and the current `Instant` come in, [`Work`] goes out; the shell performs
//! the requests and reports back. No I/O, no clock reading, no Kubernetes client. The status
//! shapes and their order are `apiary_cluster_model::kubelet::sequence::step`'s, never decided
//! here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use apiary_cluster_model::kubelet::PodScript;
use apiary_cluster_model::kubelet::sequence::KubeletMemory;
use apiary_cluster_model::kubelet::{Placement, Stage};
use k8s_openapi::api::core::v1::Pod;

/// A pod's namespace and name.
pub(crate) type Key = (String, String);

/// Pod IPs and container IDs are numbered per process, so two kubelets of one test binary
/// never hand out the same address.
static POD_IPS: AtomicU64 = AtomicU64::new(0);
static CONTAINERS: AtomicU64 = AtomicU64::new(0);

/// The `n`th sandbox address of the pod CIDR 10.244.0.0/16 (hosts .1 to .254 of each /24).
pub(crate) fn pod_ip(n: u64) -> String {
    let n = n % (256 * 254);
    format!("10.244.{}.{}", n / 254, n % 254 + 1)
}

/// A fresh containerd container ID (64 hex digits, unique in this process).
pub(crate) fn next_container_id() -> String {
    let n = CONTAINERS.fetch_add(1, Ordering::Relaxed) + 1;
    // The process id keeps two test processes sharing a cluster apart.
    format!("containerd://{:016x}{:048x}", std::process::id(), n)
}

/// Converts between model time (what scripts and grace periods count in) and real time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Scale(f64);

impl Scale {
    /// Model seconds per real second; anything not finite and positive means real time.
    pub(crate) fn new(model_per_real: f64) -> Self {
        if model_per_real.is_finite() && model_per_real > 0.0 {
            Self(model_per_real)
        } else {
            Self(1.0)
        }
    }

    /// The real time that `model` takes.
    pub(crate) fn to_real(self, model: Duration) -> Duration {
        Duration::try_from_secs_f64(model.as_secs_f64() / self.0).unwrap_or(Duration::MAX)
    }

    /// The model time that `real` amounts to.
    pub(crate) fn to_model(self, real: Duration) -> Duration {
        Duration::try_from_secs_f64(real.as_secs_f64() * self.0).unwrap_or(Duration::MAX)
    }
}

/// What the shell should do next for one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// Run the pod's next script step (binding it first when the step schedules it).
    Step(Key),
    /// Write the containers of a deletion-marked pod as terminated (they got SIGTERM).
    Terminate(Key),
    /// Finish a deletion-marked pod: `DELETE` with `gracePeriodSeconds: 0` and this uid.
    Finish {
        /// The pod.
        key: Key,
        /// The uid precondition: only the pod that was marked may be removed.
        uid: String,
    },
}

impl Work {
    /// The pod the work is for.
    pub(crate) fn key(&self) -> &Key {
        match self {
            Self::Step(key) | Self::Terminate(key) | Self::Finish { key, .. } => key,
        }
    }
}

/// The deletion of a marked pod, as the kubelet carries it out.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Deletion {
    /// When the kubelet saw the mark (the termination write is due then).
    marked_at: Instant,
    /// When the (scaled) grace period is over.
    finish_at: Instant,
    /// The termination write is still to do.
    terminate_pending: bool,
    /// The final delete was handed to the shell and not reported back yet.
    finishing: bool,
}

/// One pod the kubelet runs.
#[derive(Clone)]
pub(crate) struct Tracked {
    /// The pod's uid: a pod recreated under the same name is a different pod.
    pub(crate) uid: String,
    /// Its script, chosen once when first seen.
    pub(crate) script: PodScript,
    /// Where it is in the script.
    pub(crate) progress: KubeletMemory,
    /// When the script was attached (its delays count from here).
    pub(crate) anchor: Instant,
    /// When the next script step falls due.
    due: Option<Instant>,
    /// Where it runs, once placed.
    pub(crate) placement: Option<Placement>,
    /// Its container ID, once started.
    pub(crate) container_id: Option<String>,
    /// The newest version of the pod seen (watch event or write answer).
    pub(crate) latest: Pod,
    deletion: Option<Deletion>,
}

impl Tracked {
    fn next_at(&self) -> Option<(Instant, u8)> {
        match &self.deletion {
            // A deletion-marked pod's script is frozen: only its termination and removal remain.
            Some(d) if d.terminate_pending => Some((d.marked_at, 1)),
            Some(d) if d.finishing => None,
            Some(d) => Some((d.finish_at, 2)),
            None => self.due.map(|t| (t, 0)),
        }
    }
}

/// The pods one kubelet runs, and when each needs it next.
pub(crate) struct Tracker {
    node_name: String,
    start_delay: Duration,
    default_script: Option<PodScript>,
    scale: Scale,
    pods: BTreeMap<Key, Tracked>,
    /// Uids the kubelet finished or gave up (events about them may still trail in): never
    /// tracked again. An entry goes when the pod's DELETED event arrives.
    done: BTreeSet<String>,
}

fn resource_version(pod: &Pod) -> Option<u64> {
    pod.metadata.resource_version.as_deref()?.parse().ok()
}

/// Replace `latest` by `pod` unless `pod` is older: watch events may trail the kubelet's own
/// writes (and its writes may finish after newer events), and it never steps back.
fn keep_newer(latest: &mut Pod, pod: Pod) {
    let newer = match (resource_version(&pod), resource_version(latest)) {
        (Some(seen), Some(have)) => seen >= have,
        _ => true,
    };
    if newer {
        *latest = pod;
    }
}

fn key_of(pod: &Pod) -> Option<Key> {
    Some((pod.metadata.namespace.clone()?, pod.metadata.name.clone()?))
}

impl Tracker {
    /// A kubelet on `node_name` that starts unscripted pods after `start_delay` (model time)
    /// unless `default_script` says otherwise, at `scale`.
    pub(crate) fn new(
        node_name: String,
        start_delay: Duration,
        default_script: Option<PodScript>,
        scale: Scale,
    ) -> Self {
        Self {
            node_name,
            start_delay,
            default_script,
            scale,
            pods: BTreeMap::new(),
            done: BTreeSet::new(),
        }
    }

    /// The script the image convention (or the default) picks for a pod seen for the first time.
    pub(crate) fn script_for(&self, pod: &Pod) -> PodScript {
        PodScript::from_pod(pod, self.start_delay)
            .or_else(|| self.default_script.clone())
            .unwrap_or(PodScript::Start {
                after: self.start_delay,
            })
    }

    /// Whether this kubelet runs `pod`: unbound, or bound to its node.
    fn is_ours(&self, pod: &Pod) -> bool {
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_none_or(|n| n.is_empty() || n == self.node_name)
    }

    /// A pod was added or changed (a watch event, or the answer to the kubelet's own write).
    pub(crate) fn observe(&mut self, pod: Pod, now: Instant) {
        let Some(key) = key_of(&pod) else {
            return;
        };
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if self.done.contains(&uid) {
            return;
        }
        if !self.is_ours(&pod) {
            self.pods.remove(&key);
            return;
        }
        let fresh = match self.pods.get(&key) {
            Some(t) if t.uid == uid => false,
            // A new uid under a known name: the old pod is gone, this one starts from scratch.
            _ => true,
        };
        if fresh {
            let terminal = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .is_some_and(|p| p == "Succeeded" || p == "Failed");
            if terminal && pod.metadata.deletion_timestamp.is_none() {
                // Finished before this kubelet saw it: nothing left to run.
                self.pods.remove(&key);
                return;
            }
            let script = self.script_for(&pod);
            let due = (script != PodScript::Inert).then_some(now);
            self.pods.insert(
                key.clone(),
                Tracked {
                    uid,
                    script,
                    progress: KubeletMemory::new(),
                    anchor: now,
                    due,
                    placement: None,
                    container_id: None,
                    latest: pod.clone(),
                    deletion: None,
                },
            );
        }
        let scale = self.scale;
        let Some(tracked) = self.pods.get_mut(&key) else {
            return;
        };
        keep_newer(&mut tracked.latest, pod.clone());
        if pod.metadata.deletion_timestamp.is_some() && tracked.deletion.is_none() {
            let grace = pod
                .metadata
                .deletion_grace_period_seconds
                .unwrap_or(0)
                .max(0)
                .unsigned_abs();
            tracked.deletion = Some(Deletion {
                marked_at: now,
                finish_at: now + scale.to_real(Duration::from_secs(grace)),
                terminate_pending: tracked.progress.stage == Stage::Running,
                finishing: false,
            });
        }
    }

    /// A pod was removed (a watch DELETED event): forget it if it is the one tracked.
    pub(crate) fn forget(&mut self, pod: &Pod) {
        if let Some(uid) = pod.metadata.uid.as_ref() {
            self.done.remove(uid);
        }
        let Some(key) = key_of(pod) else {
            return;
        };
        if self
            .pods
            .get(&key)
            .is_some_and(|t| Some(&t.uid) == pod.metadata.uid.as_ref())
        {
            self.pods.remove(&key);
        }
    }

    /// Forget the pod `key` with `uid` for good (the shell finished it, or learned it is gone
    /// or not ours): later events about that uid are ignored.
    pub(crate) fn drop_key(&mut self, key: &Key, uid: &str) {
        self.done.insert(uid.to_owned());
        if self.pods.get(key).is_some_and(|t| t.uid == uid) {
            self.pods.remove(key);
        }
    }

    /// A relist of `namespace` (`None`: every namespace) is complete and listed exactly `seen`:
    /// pods tracked there but not listed were deleted while the watch was away.
    pub(crate) fn relisted(&mut self, namespace: Option<&str>, seen: &BTreeSet<Key>) {
        self.pods
            .retain(|key, _| namespace.is_some_and(|ns| key.0 != ns) || seen.contains(key));
    }

    /// A Secret appeared in `namespace`: pods held in `CreateContainerConfigError` there check
    /// again now instead of at their next retry.
    pub(crate) fn secret_appeared(&mut self, namespace: &str, now: Instant) {
        for (key, tracked) in &mut self.pods {
            if key.0 == namespace && tracked.progress.stage == Stage::ConfigError {
                tracked.due = Some(now);
            }
        }
    }

    /// A copy of what is known about `key`.
    pub(crate) fn get(&self, key: &Key) -> Option<&Tracked> {
        self.pods.get(key)
    }

    /// When the next work falls due for a pod not in `busy` (pods with work in flight).
    pub(crate) fn next_due(&self, busy: &BTreeSet<Key>) -> Option<Instant> {
        self.pods
            .iter()
            .filter(|(k, _)| !busy.contains(*k))
            .filter_map(|(_, t)| t.next_at())
            .map(|(t, _)| t)
            .min()
    }

    /// The earliest work due at `now` for a pod not in `busy` (ties: steps, then termination
    /// writes, then deletes, each in namespace/name order), taken off the schedule: the shell
    /// reports back with [`Tracker::stepped`], [`Tracker::terminated`] or [`Tracker::retry`].
    pub(crate) fn take_due(&mut self, now: Instant, busy: &BTreeSet<Key>) -> Option<Work> {
        let (key, (_, kind)) = self
            .pods
            .iter()
            .filter(|(k, _)| !busy.contains(*k))
            .filter_map(|(k, t)| t.next_at().map(|n| (k, n)))
            .filter(|(_, (t, _))| *t <= now)
            .min_by_key(|(k, (t, kind))| (*t, *kind, (*k).clone()))
            .map(|(k, n)| (k.clone(), n))?;
        let tracked = self.pods.get_mut(&key)?;
        Some(match kind {
            0 => {
                tracked.due = None;
                Work::Step(key)
            }
            1 => {
                if let Some(d) = tracked.deletion.as_mut() {
                    d.terminate_pending = false;
                }
                Work::Terminate(key)
            }
            _ => {
                // Until the shell reports, the delete is not handed out again.
                if let Some(d) = tracked.deletion.as_mut() {
                    d.finishing = true;
                }
                Work::Finish {
                    uid: tracked.uid.clone(),
                    key,
                }
            }
        })
    }

    /// A script step was carried out: the new progress, where it runs and its container, the
    /// pod as written (if it was), and the model time until the next step.
    pub(crate) fn stepped(&mut self, key: &Key, uid: &str, step: Stepped, now: Instant) {
        let Some(tracked) = self.pods.get_mut(key).filter(|t| t.uid == uid) else {
            return;
        };
        tracked.progress = step.progress;
        tracked.placement = step.placement.or(tracked.placement.take());
        tracked.container_id = step.container_id.or(tracked.container_id.take());
        if let Some(pod) = step.written {
            keep_newer(&mut tracked.latest, pod);
        }
        tracked.due = step.next.map(|d| now + self.scale.to_real(d));
    }

    /// The termination write of a marked pod was carried out.
    pub(crate) fn terminated(&mut self, key: &Key, uid: &str, written: Pod) {
        if let Some(tracked) = self.pods.get_mut(key).filter(|t| t.uid == uid) {
            keep_newer(&mut tracked.latest, written);
        }
    }

    /// The work failed for a reason worth retrying (the apiserver is away): do it again at `at`.
    pub(crate) fn retry(&mut self, work: &Work, at: Instant) {
        let (key, uid) = match work {
            Work::Step(k) | Work::Terminate(k) => (k, None),
            Work::Finish { key, uid } => (key, Some(uid)),
        };
        let Some(tracked) = self.pods.get_mut(key) else {
            return;
        };
        if uid.is_some_and(|u| *u != tracked.uid) {
            return;
        }
        match (work, tracked.deletion.as_mut()) {
            (Work::Step(_), _) => tracked.due = Some(at),
            (Work::Terminate(_), Some(d)) => d.terminate_pending = true,
            (Work::Finish { .. }, Some(d)) => {
                d.finish_at = at;
                d.finishing = false;
            }
            (_, None) => {}
        }
    }
}

/// A placement on `node_name` with a new sandbox address.
pub(crate) fn new_placement(node_name: &str) -> Placement {
    Placement {
        node_name: node_name.to_owned(),
        host_ip: crate::kubelet::NODE_IP.to_owned(),
        pod_ip: pod_ip(POD_IPS.fetch_add(1, Ordering::Relaxed)),
    }
}

/// The result of one script step, reported to [`Tracker::stepped`].
pub(crate) struct Stepped {
    /// The progress after the step.
    pub(crate) progress: KubeletMemory,
    /// The placement the step used (new or kept).
    pub(crate) placement: Option<Placement>,
    /// The container ID the step used (new or kept).
    pub(crate) container_id: Option<String>,
    /// The pod as the apiserver answered the status write, if there was one.
    pub(crate) written: Option<Pod>,
    /// Model time until the next step.
    pub(crate) next: Option<Duration>,
}
