//! The model's kubelet runtime: which script each pod runs, where it is in it and when its next
//! step is due, how scripts are chosen for new pods, and the node-placement and container-ID
//! numbering. [`Kubelet::step`] runs one due step through [`kubelet::sequence::step`], the
//! sequencing shared with `apiary-envtest`'s kubelet.
//!
//! Layer: part of the pure model. It reshapes pod values it is handed and never touches the
//! store: the model stores what a step produced, with its resourceVersion and watch event. It
//! reads no clock (the model passes `now`).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Secret};

use super::store::{Key, Store};
use super::time::add;
use crate::kubelet::sequence::{KubeletMemory, Moment, Outcome, Resources};
use crate::kubelet::{self, Placement, PodScript, Stage};

/// The simulated kubelet's bookkeeping for one pod.
#[derive(Clone, Debug)]
pub(crate) struct Runtime {
    pub(crate) script: PodScript,
    anchor: Timestamp,
    pub(crate) stage: Stage,
    due: Option<Timestamp>,
    delete_at: Option<Timestamp>,
    pull_attempts: u32,
    pub(crate) started_at: Option<Timestamp>,
    container_id: Option<String>,
    placement: Option<Placement>,
}

impl Runtime {
    fn next_at(&self) -> Option<Timestamp> {
        // A deletion-marked pod's kubelet is frozen: only its removal is pending.
        self.delete_at.or(self.due)
    }

    /// Whether the pod's graceful removal is due at `now`.
    pub(crate) fn removal_due(&self, now: Timestamp) -> bool {
        self.delete_at.is_some_and(|t| t <= now)
    }
}

/// The kubelet's state across all pods.
#[derive(Clone, Debug)]
pub(crate) struct Kubelet {
    runtimes: BTreeMap<Key, Runtime>,
    start_delay: Duration,
    default_script: Option<PodScript>,
    name_scripts: BTreeMap<Key, PodScript>,
    queued_scripts: BTreeMap<Key, VecDeque<PodScript>>,
    placements: u32,
    containers: u64,
}

impl Default for Kubelet {
    fn default() -> Self {
        Self {
            runtimes: BTreeMap::new(),
            start_delay: Duration::from_secs(1),
            default_script: None,
            name_scripts: BTreeMap::new(),
            queued_scripts: BTreeMap::new(),
            placements: 0,
            containers: 0,
        }
    }
}

impl Kubelet {
    /// The delay the image convention and the built-in default script use.
    pub(crate) fn set_start_delay(&mut self, delay: Duration) {
        self.start_delay = delay;
    }

    /// The script for pods nothing else selects one for.
    pub(crate) fn set_default_script(&mut self, script: Option<PodScript>) {
        self.default_script = script;
    }

    /// Every future pod created under `key` gets `script` (unless one is queued).
    pub(crate) fn script_name(&mut self, key: Key, script: PodScript) {
        self.name_scripts.insert(key, script);
    }

    /// The next pods created under `key` get these scripts, one per create.
    pub(crate) fn queue_scripts(&mut self, key: Key, scripts: impl IntoIterator<Item = PodScript>) {
        self.queued_scripts.entry(key).or_default().extend(scripts);
    }

    /// The script a pod created under `key` gets: the next queued one, else the one set for its
    /// name, else the image convention, else the default.
    pub(crate) fn script_for_new_pod(&mut self, key: &Key, pod: &Pod) -> PodScript {
        if let Some(queue) = self.queued_scripts.get_mut(key)
            && let Some(script) = queue.pop_front()
        {
            return script;
        }
        if let Some(script) = self.name_scripts.get(key) {
            return script.clone();
        }
        PodScript::from_pod(pod, self.start_delay)
            .or_else(|| self.default_script.clone())
            .unwrap_or(PodScript::Start {
                after: self.start_delay,
            })
    }

    /// Forget every queued script (property tests undo a queue whose create was refused).
    #[cfg(test)]
    pub(crate) fn clear_queued_scripts(&mut self) {
        self.queued_scripts.clear();
    }

    /// The pod's runtime, if the kubelet has it.
    pub(crate) fn runtime(&self, key: &Key) -> Option<&Runtime> {
        self.runtimes.get(key)
    }

    /// Attach `script` to the pod under `key` at `now`, starting from `stage`; what the kubelet
    /// already knew about the pod (its removal time, start, container and placement) is kept.
    pub(crate) fn attach(&mut self, key: Key, script: PodScript, stage: Stage, now: Timestamp) {
        let mut runtime = Runtime {
            script,
            anchor: now,
            stage,
            due: None,
            delete_at: None,
            pull_attempts: 0,
            started_at: None,
            container_id: None,
            placement: None,
        };
        if let Some(previous) = self.runtimes.remove(&key) {
            runtime.delete_at = previous.delete_at;
            runtime.started_at = previous.started_at;
            runtime.container_id = previous.container_id;
            runtime.placement = previous.placement;
            runtime.pull_attempts = previous.pull_attempts;
        }
        runtime.due = initial_due(&runtime);
        self.runtimes.insert(key, runtime);
    }

    /// Forget the pod under `key` (it left the store).
    pub(crate) fn forget(&mut self, key: &Key) {
        self.runtimes.remove(key);
    }

    /// The pod's removal time (its `deletionTimestamp`), when the kubelet has it.
    pub(crate) fn set_delete_at(&mut self, key: &Key, at: Option<Timestamp>) {
        if let Some(runtime) = self.runtimes.get_mut(key) {
            runtime.delete_at = at;
        }
    }

    /// Stop scripting the pod (someone plays its kubelet by hand): it gets [`PodScript::Inert`]
    /// with nothing due.
    pub(crate) fn freeze(&mut self, key: &Key, now: Timestamp) {
        if !self.runtimes.contains_key(key) {
            self.attach(key.clone(), PodScript::Inert, Stage::Created, now);
        }
        if let Some(runtime) = self.runtimes.get_mut(key) {
            runtime.script = PodScript::Inert;
            runtime.due = None;
        }
    }

    /// Record where the pod is now (and when it started, if it did).
    pub(crate) fn set_stage(&mut self, key: &Key, stage: Stage, started_at: Option<Timestamp>) {
        if let Some(runtime) = self.runtimes.get_mut(key) {
            runtime.stage = stage;
            if started_at.is_some() {
                runtime.started_at = started_at;
            }
        }
    }

    /// Pods waiting `CreateContainerConfigError` in `namespace` check their Secrets at `now`.
    pub(crate) fn wake_config_errors(&mut self, namespace: &str, now: Timestamp) {
        for (key, runtime) in &mut self.runtimes {
            if key.0 == namespace && runtime.stage == Stage::ConfigError {
                runtime.due = Some(now);
            }
        }
    }

    /// The earliest due step or removal, and whose.
    pub(crate) fn next_due(&self) -> Option<(Timestamp, Key)> {
        self.runtimes
            .iter()
            .filter_map(|(k, r)| r.next_at().map(|t| (t, k.clone())))
            .min()
    }

    /// The pod's placement: the one it has, else the next in the numbering (recorded).
    pub(crate) fn placement_for(&mut self, key: &Key) -> Placement {
        if let Some(p) = self.runtimes.get(key).and_then(|r| r.placement.clone()) {
            return p;
        }
        let n = self.placements;
        self.placements += 1;
        let node = n % 3 + 1;
        let ip = n + 2;
        let placement = Placement {
            node_name: format!("node-{node}"),
            host_ip: format!("172.18.0.{}", node + 1),
            pod_ip: format!("10.244.{}.{}", ip / 250, ip % 250),
        };
        if let Some(runtime) = self.runtimes.get_mut(key) {
            runtime.placement = Some(placement.clone());
        }
        placement
    }

    /// The pod's container ID: the one it has, else the next in the numbering (recorded).
    pub(crate) fn container_id_for(&mut self, key: &Key) -> String {
        if let Some(id) = self.runtimes.get(key).and_then(|r| r.container_id.clone()) {
            return id;
        }
        self.containers += 1;
        let id = format!("containerd://{:064x}", self.containers);
        if let Some(runtime) = self.runtimes.get_mut(key) {
            runtime.container_id = Some(id.clone());
        }
        id
    }

    /// Run the due script step of the pod under `key` (stored as `pod`) at `now`: reshapes
    /// `pod` and moves the runtime on. `Outcome::Remove` means the pod leaves the store.
    pub(crate) fn step(
        &mut self,
        key: &Key,
        pod: &mut Pod,
        secrets: &Store<Secret>,
        now: Timestamp,
    ) -> Outcome {
        let Some(runtime) = self.runtimes.get(key).cloned() else {
            return Outcome::Reshaped { next: None };
        };
        let mut next = runtime.clone();
        let mut progress = KubeletMemory {
            stage: runtime.stage,
            pull_attempts: runtime.pull_attempts,
            started_at: runtime.started_at,
        };
        let moment = Moment {
            now,
            since_anchor: Duration::try_from(now.duration_since(runtime.anchor))
                .unwrap_or(Duration::ZERO),
        };
        let mut resources = StepResources {
            // Only the scheduling step records the placement in the runtime; later steps reuse
            // it from there (so an inserted, already-bound pod is placed at each start attempt).
            record_placement: runtime.stage == Stage::Created,
            kubelet: self,
            secrets,
            key,
            runtime: &mut next,
        };
        let outcome =
            kubelet::sequence::step(&runtime.script, &mut progress, pod, moment, &mut resources);
        if let Outcome::Reshaped { next: delay } = outcome {
            next.due = delay.map(|d| add(now, d));
            next.stage = progress.stage;
            next.pull_attempts = progress.pull_attempts;
            next.started_at = progress.started_at;
            self.runtimes.insert(key.clone(), next);
        }
        outcome
    }
}

/// The model's answers to the kubelet step's questions: its placement and container-ID
/// numbering, and its Secret store.
struct StepResources<'a> {
    kubelet: &'a mut Kubelet,
    secrets: &'a Store<Secret>,
    key: &'a Key,
    runtime: &'a mut Runtime,
    record_placement: bool,
}

impl Resources for StepResources<'_> {
    fn placement(&mut self) -> Placement {
        let placement = self.kubelet.placement_for(self.key);
        if self.record_placement {
            self.runtime.placement = Some(placement.clone());
        }
        placement
    }

    fn container_id(&mut self) -> String {
        let id = self.kubelet.container_id_for(self.key);
        self.runtime.container_id = Some(id.clone());
        id
    }

    fn missing_secret(&mut self, pod: &Pod) -> Option<String> {
        kubelet::required_secrets(pod)
            .into_iter()
            .find(|s| !self.secrets.contains(&(self.key.0.clone(), s.clone())))
    }
}

/// The script stage an inserted pod is at, judged from its shape.
pub(crate) fn inferred_stage(pod: &Pod) -> Stage {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return Stage::Finished;
    }
    let states = status.and_then(|s| s.container_statuses.as_ref());
    if states.is_some_and(|c| {
        c.iter()
            .any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
    }) {
        return Stage::Running;
    }
    if states.is_some_and(|c| {
        c.iter()
            .any(|c| c.state.as_ref().is_some_and(|s| s.terminated.is_some()))
    }) {
        return Stage::Finished;
    }
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if bound || states.is_some_and(|c| !c.is_empty()) {
        Stage::Scheduled
    } else {
        Stage::Created
    }
}

/// When a timed script's next step falls due, counted from its anchor.
fn timed_due(script: &PodScript, anchor: Timestamp) -> Option<Timestamp> {
    kubelet::sequence::script_delay(script).map(|d| add(anchor, d))
}

/// The first due time of a freshly attached script.
fn initial_due(runtime: &Runtime) -> Option<Timestamp> {
    match (&runtime.script, runtime.stage) {
        (PodScript::Inert, _) => None,
        (_, Stage::Created) => Some(runtime.anchor),
        (PodScript::Exit { run_for, .. }, Stage::Running) => Some(add(runtime.anchor, *run_for)),
        (PodScript::Vanish { after }, _) => Some(add(runtime.anchor, *after)),
        (PodScript::Start { .. } | PodScript::Exit { .. }, Stage::Running | Stage::Finished) => {
            None
        }
        (_, Stage::Finished) => None,
        (script, _) => timed_due(script, runtime.anchor),
    }
}
