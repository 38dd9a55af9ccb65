//! The model's kubelet seen from outside: choosing scripts (by name, by queue, by default),
//! running a pod's due step or graceful removal when the clock reaches it, and playing the
//! kubelet by hand (test hooks that start, terminate, hold or refuse a pod now).
//!
//! Layer: part of the pure model. The sequencing itself is [`crate::kubelet::sequence::step`]
//! (through `runtime::Kubelet::step`); this module stores what a step produced. It performs no
//! I/O and reads no clock.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use super::ClusterModel;
use super::pods::has_finalizers;
use super::runtime::inferred_stage;
use super::store::{Key, key};
use crate::error::{Kind, ModelError};
use crate::kubelet::sequence::Outcome;
use crate::kubelet::{self, PodScript, Stage};

impl ClusterModel {
    /// The delay the image convention and the built-in default script use (default 1 s).
    pub fn set_start_delay(&mut self, delay: Duration) {
        self.kubelet.set_start_delay(delay);
    }

    /// The script for pods that nothing else selects one for (`None`: [`PodScript::Start`]
    /// after the start delay).
    pub fn set_default_script(&mut self, script: Option<PodScript>) {
        self.kubelet.set_default_script(script);
    }

    /// Every future pod created under this name gets `script` (unless one is queued).
    pub fn script_pods_named(&mut self, namespace: &str, name: &str, script: PodScript) {
        self.kubelet.script_name(key(namespace, name), script);
    }

    /// The next pods created under this name get these scripts, one per create, in order; after
    /// that the usual selection applies.
    pub fn queue_pod_scripts(
        &mut self,
        namespace: &str,
        name: &str,
        scripts: impl IntoIterator<Item = PodScript>,
    ) {
        self.kubelet.queue_scripts(key(namespace, name), scripts);
    }

    /// Give an existing pod a new script, starting now from the pod's current stage (for
    /// example [`PodScript::Start`] on a pod waiting `ContainerCreating` starts it `after` from
    /// now; [`PodScript::Inert`] freezes it).
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn set_pod_script(
        &mut self,
        namespace: &str,
        name: &str,
        script: PodScript,
    ) -> Result<(), ModelError> {
        let key = key(namespace, name);
        let Some(pod) = self.pods.get(&key) else {
            return Err(ModelError::NotFound {
                kind: Kind::Pod,
                name: name.to_owned(),
            });
        };
        let stage = self
            .kubelet
            .runtime(&key)
            .map_or_else(|| inferred_stage(pod), |r| r.stage);
        self.kubelet.attach(key, script, stage, self.now);
        Ok(())
    }

    /// The script currently attached to a pod.
    pub fn pod_script(&self, namespace: &str, name: &str) -> Option<PodScript> {
        self.kubelet
            .runtime(&key(namespace, name))
            .map(|r| r.script.clone())
    }

    /// Run the due step of one pod: its graceful removal, or its kubelet script's next step
    /// (the sequencing is [`kubelet::sequence::step`], shared with `apiary-envtest`'s kubelet).
    pub(super) fn run_due(&mut self, key: &Key) {
        let Some(runtime) = self.kubelet.runtime(key) else {
            return;
        };
        if runtime.removal_due(self.now) {
            if self.pods.get(key).is_some_and(has_finalizers) {
                self.hold_for_finalizers(key);
            } else {
                self.remove_pod_key(key);
            }
            return;
        }
        let Some(mut pod) = self.pods.get(key).cloned() else {
            self.kubelet.forget(key);
            return;
        };
        match self.kubelet.step(key, &mut pod, &self.secrets, self.now) {
            Outcome::Remove => {
                self.remove_pod_key(key);
            }
            Outcome::Reshaped { .. } => {
                if self.pods.get(key) != Some(&pod) {
                    self.store_modified(key, pod);
                }
            }
        }
    }

    /// Start the pod's containers now, as the kubelet would (binding it to a node first if
    /// needed, assigning its IP); the script becomes [`PodScript::Inert`]. Does not check
    /// Secrets.
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn start_pod(&mut self, namespace: &str, name: &str) -> Result<Pod, ModelError> {
        let key = self.take_over(namespace, name)?;
        let now = self.now;
        let placement = self.kubelet.placement_for(&key);
        let container_id = self.kubelet.container_id_for(&key);
        let mut pod = self.get_pod(namespace, name)?;
        if !is_bound(&pod) {
            kubelet::apply_scheduled(&mut pod, &placement, now);
        }
        kubelet::apply_running(&mut pod, &placement.pod_ip, &container_id, now);
        self.kubelet.set_stage(&key, Stage::Running, Some(now));
        Ok(self.store_modified(&key, pod))
    }

    /// Terminate the pod's containers now with `exit_code` (phase `Failed`, or `Succeeded` for
    /// 0); the script becomes [`PodScript::Inert`].
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn terminate_pod(
        &mut self,
        namespace: &str,
        name: &str,
        exit_code: i32,
    ) -> Result<Pod, ModelError> {
        let key = self.take_over(namespace, name)?;
        let now = self.now;
        let placement = self.kubelet.placement_for(&key);
        let container_id = self.kubelet.container_id_for(&key);
        let started_at = self
            .kubelet
            .runtime(&key)
            .and_then(|r| r.started_at)
            .unwrap_or(now);
        let mut pod = self.get_pod(namespace, name)?;
        if !is_bound(&pod) {
            kubelet::apply_scheduled(&mut pod, &placement, now);
        }
        kubelet::apply_terminated(&mut pod, exit_code, &container_id, started_at, now);
        self.kubelet.set_stage(&key, Stage::Finished, None);
        Ok(self.store_modified(&key, pod))
    }

    /// Put the pod's containers in `waiting` with `reason` and `message` now (binding it to a
    /// node first if needed); the script becomes [`PodScript::Inert`].
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn set_pod_waiting(
        &mut self,
        namespace: &str,
        name: &str,
        reason: &str,
        message: Option<&str>,
    ) -> Result<Pod, ModelError> {
        let key = self.take_over(namespace, name)?;
        let now = self.now;
        let placement = self.kubelet.placement_for(&key);
        let mut pod = self.get_pod(namespace, name)?;
        if !is_bound(&pod) {
            kubelet::apply_scheduled(&mut pod, &placement, now);
        }
        let ip = (reason != "ContainerCreating").then_some(placement.pod_ip.as_str());
        kubelet::apply_waiting(&mut pod, reason, message, ip, now);
        self.kubelet.set_stage(&key, Stage::Scheduled, None);
        Ok(self.store_modified(&key, pod))
    }

    /// Mark the pod unschedulable now (`PodScheduled` False, reason `Unschedulable`); the script
    /// becomes [`PodScript::Inert`].
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn set_pod_unschedulable(
        &mut self,
        namespace: &str,
        name: &str,
    ) -> Result<Pod, ModelError> {
        let key = self.take_over(namespace, name)?;
        let now = self.now;
        let mut pod = self.get_pod(namespace, name)?;
        kubelet::apply_unschedulable(&mut pod, now);
        self.kubelet.set_stage(&key, Stage::Unschedulable, None);
        Ok(self.store_modified(&key, pod))
    }

    /// The pod's key, its script frozen so the hand-played step is the only one.
    fn take_over(&mut self, namespace: &str, name: &str) -> Result<Key, ModelError> {
        let key = key(namespace, name);
        if !self.pods.contains(&key) {
            return Err(ModelError::NotFound {
                kind: Kind::Pod,
                name: name.to_owned(),
            });
        }
        self.kubelet.freeze(&key, self.now);
        Ok(key)
    }
}

/// Whether the pod names a node.
fn is_bound(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some()
}

#[cfg(test)]
mod tests;
