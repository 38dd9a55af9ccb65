//! Pods in the model: create (defaults, `Pending` status, a kubelet script attached), insert (a
//! test hook that keeps what the pod carries), get, list, graceful deletion on the model clock
//! (finalizers keep a deleted pod until they are removed), removal, and direct changes (test
//! hooks). Every change takes the next resourceVersion and is
//! logged.
//!
//! Layer: part of the pure model; performs no I/O and reads no clock.

use std::time::Duration;

use jiff::SignedDuration;
use k8s_openapi::api::core::v1::{Pod, PodStatus, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::ClusterModel;
use super::list::{ListOptions, ListPage};
use super::object::PodDeletion;
use super::runtime::inferred_stage;
use super::store::{Key, Preconditions, key};
use super::time::add;
use super::watch::EventType;
use crate::error::{Kind, ModelError};
use crate::kubelet::{PodScript, Stage};

impl ClusterModel {
    /// Create a pod: stamps metadata, resets `status` to `{phase: Pending, qosClass}`, defaults
    /// `terminationGracePeriodSeconds` to 30, `restartPolicy` to `Always` and each limit without
    /// a request to a request, adds the DefaultTolerationSeconds admission's two tolerations
    /// (`add_default_tolerations`), checks the pod as the apiserver does in the fields apiary's
    /// pod options set (the Priority and RuntimeClass admission of a class name no class can
    /// have; labels, annotations, resources, node selector, tolerations), stores every
    /// quantity in the apiserver's canonical form (`1024Mi` is `1Gi`), and attaches a kubelet
    /// script: the next one queued for this name ([`ClusterModel::queue_pod_scripts`]),
    /// else the one set for this name ([`ClusterModel::script_pods_named`]), else the image
    /// convention ([`PodScript::from_image`]), else the default script. The kubelet's first step
    /// (scheduling) is due at the creation time and runs at the next clock movement or
    /// [`ClusterModel::settle`].
    ///
    /// # Errors
    /// In the apiserver's order: `BadRequest` for a malformed quantity (the decoder's refusal)
    /// or when the object names another namespace; `Invalid` without a name; `NotFound` (kind
    /// Namespace, message `namespaces "X" not found`) when the namespace does not exist;
    /// `ServiceAccountMissing` (403) when ServiceAccount admission is on and the pod's account
    /// does not exist; `AdmissionForbidden` (403) for a `priorityClassName` or
    /// `runtimeClassName` that is not a DNS subdomain; `Invalid` with the apiserver's causes for
    /// a field validation refuses; `AlreadyExists` when the name is taken.
    pub fn create_pod(&mut self, namespace: &str, mut pod: Pod) -> Result<Pod, ModelError> {
        validation::decode_quantities(&pod)?;
        validation::default_requests(&mut pod);
        add_default_tolerations(&mut pod);
        let name = pod.metadata.name.clone().unwrap_or_default();
        // Validated as sent (the refusal quotes quantities as parsed), stored canonical; the
        // refusal is answered after admission, as the apiserver validates after admitting.
        let invalid = validation::validate(&name, &pod);
        validation::canonicalize_quantities(&mut pod);
        self.accounts.default_account(&mut pod);
        let pod = self.create_object(Some(namespace), pod, |model, pod: &Pod| {
            model.accounts.admit(namespace, &name, pod)?;
            validation::admit_classes(&name, pod)?;
            invalid
        })?;
        let key = key(namespace, pod.metadata.name.as_deref().unwrap_or_default());
        let script = self.kubelet.script_for_new_pod(&key, &pod);
        self.kubelet.attach(key, script, Stage::Created, self.now);
        Ok(pod)
    }

    /// Check a pod create without writing it: the dry run of `dryRun=All`. The checks of
    /// [`ClusterModel::create_pod`] (namespace, ServiceAccount admission, classes, validation)
    /// under the pod's `generateName` (or name), and no store, kubelet or event.
    ///
    /// # Errors
    /// As [`ClusterModel::create_pod`], but never `AlreadyExists`.
    pub fn check_pod_create(&self, namespace: &str, mut pod: Pod) -> Result<(), ModelError> {
        validation::decode_quantities(&pod)?;
        validation::default_requests(&mut pod);
        add_default_tolerations(&mut pod);
        // The API server appends five random characters to a `generateName`.
        let name = match (&pod.metadata.name, &pod.metadata.generate_name) {
            (Some(name), _) => name.clone(),
            (None, Some(prefix)) => format!("{prefix}dryrn"),
            (None, None) => String::new(),
        };
        let invalid = validation::validate(&name, &pod);
        self.require_namespace(namespace)?;
        self.accounts.admit(namespace, &name, &pod)?;
        validation::admit_classes(&name, &pod)?;
        invalid
    }

    /// Insert a pod directly (a test hook: a foreign pod, a race winner, residue with a chosen
    /// age). Unlike a create it keeps what the pod carries — `status`, `spec.nodeName`, labels,
    /// `uid`, `creationTimestamp`, even a `deletionTimestamp` (honoured: the pod is removed once
    /// the clock reaches it, so give a future one) — and only fills what is missing
    /// (uid, creationTimestamp = now). An explicit numeric `resourceVersion` greater than the
    /// counter is kept and moves the counter there; otherwise a fresh one is stamped. The
    /// namespace (from `metadata.namespace`) is created when missing. The kubelet leaves the pod
    /// alone ([`PodScript::Inert`]); use [`ClusterModel::insert_pod_with_script`] to script it.
    ///
    /// # Errors
    /// `Invalid` without a name or namespace; `AlreadyExists` when the name is taken.
    pub fn insert_pod(&mut self, pod: Pod) -> Result<Pod, ModelError> {
        self.insert_pod_with_script(pod, PodScript::Inert)
    }

    /// [`ClusterModel::insert_pod`] with a kubelet script, which starts from the pod's current
    /// shape: a pod inserted without a node is scheduled first; one already bound (with
    /// `spec.nodeName` or container statuses) continues from there.
    ///
    /// # Errors
    /// As [`ClusterModel::insert_pod`].
    pub fn insert_pod_with_script(
        &mut self,
        pod: Pod,
        script: PodScript,
    ) -> Result<Pod, ModelError> {
        let pod = self.insert_object(pod)?;
        let key = key(
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default(),
        );
        let delete_at = pod.metadata.deletion_timestamp.as_ref().map(|t| t.0);
        self.kubelet
            .attach(key.clone(), script, inferred_stage(&pod), self.now);
        self.kubelet.set_delete_at(&key, delete_at);
        Ok(pod)
    }

    /// Read a pod.
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn get_pod(&self, namespace: &str, name: &str) -> Result<Pod, ModelError> {
        self.get_object(namespace, name)
    }

    /// List pods in `namespace` (`None`: all namespaces).
    ///
    /// # Errors
    /// `BadRequest` for a malformed selector or continue token; `Expired` for a compacted token.
    pub fn list_pods(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ListPage<Pod>, ModelError> {
        self.list_objects(namespace, options)
    }

    /// Delete a pod. Preconditions are checked first (uid, then resourceVersion → `Conflict`).
    /// A pod in phase `Succeeded`/`Failed`, or never bound (no `spec.nodeName` and no container
    /// statuses), or deleted with `grace_seconds` 0, is removed at once. Any other pod is marked:
    /// grace = `grace_seconds`, else its `terminationGracePeriodSeconds` (else 30);
    /// `deletionTimestamp` = now + grace, `deletionGracePeriodSeconds` = grace, rv bumped, a
    /// MODIFIED event; the kubelet stops scripting it and it is removed (DELETED) when the grace
    /// has elapsed on the model clock. A second delete of a marked pod returns it unchanged
    /// (or removes it at once with `grace_seconds` 0).
    ///
    /// # Errors
    /// `NotFound`; `Conflict` when a precondition fails.
    pub fn delete_pod(
        &mut self,
        namespace: &str,
        name: &str,
        preconditions: &Preconditions,
        grace_seconds: Option<i64>,
    ) -> Result<PodDeletion, ModelError> {
        let existing: Pod = self.fenced(namespace, name, preconditions)?;
        let key = key(namespace, name);
        let force = grace_seconds == Some(0);
        if existing.metadata.deletion_timestamp.is_some() && !force {
            return Ok(PodDeletion::Marked(existing));
        }
        let grace = grace_seconds
            .or_else(|| {
                existing
                    .spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
            })
            .unwrap_or(30)
            .max(0);
        if grace == 0 || !is_graceful(&existing) {
            // As the apiserver: the zero grace is written first (a MODIFIED event carrying
            // `deletionTimestamp` and `deletionGracePeriodSeconds: 0`), then the pod is removed;
            // the answer is that last state. A mark keeps the time of the first delete.
            let mut pod = existing;
            let requested_at = match (
                &pod.metadata.deletion_timestamp,
                pod.metadata.deletion_grace_period_seconds,
            ) {
                (Some(Time(at)), Some(old_grace)) => at
                    .checked_sub(SignedDuration::from_secs(old_grace))
                    .unwrap_or(self.now),
                _ => self.now,
            };
            pod.metadata.deletion_timestamp = Some(Time(requested_at));
            pod.metadata.deletion_grace_period_seconds = Some(0);
            let marked = self.store_modified(&key, pod);
            if has_finalizers(&marked) {
                // Finalizers keep the object (as the apiserver does) until they are removed.
                self.kubelet.forget(&key);
                return Ok(PodDeletion::Marked(marked));
            }
            let removed = self.remove_pod_key(&key).unwrap_or(marked);
            return Ok(PodDeletion::Removed(removed));
        }
        let delete_at = add(self.now, Duration::from_secs(grace.unsigned_abs()));
        let rv = self.next_rv();
        let mut pod = existing;
        pod.metadata.deletion_timestamp = Some(Time(delete_at));
        pod.metadata.deletion_grace_period_seconds = Some(grace);
        pod.metadata.resource_version = Some(rv.to_string());
        self.pods.put(key.clone(), pod.clone());
        self.kubelet.set_delete_at(&key, Some(delete_at));
        self.record(EventType::Modified, rv, &pod);
        Ok(PodDeletion::Marked(pod))
    }

    /// Remove a pod from the store at once, whatever its state (a test hook for "the pod
    /// vanishes": eviction, node loss, someone else's force delete). Returns its last state.
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn remove_pod(&mut self, namespace: &str, name: &str) -> Result<Pod, ModelError> {
        self.remove_pod_key(&key(namespace, name))
            .ok_or_else(|| ModelError::NotFound {
                kind: Kind::Pod,
                name: name.to_owned(),
            })
    }

    /// Take a pod out of the store and stop its kubelet.
    pub(super) fn remove_pod_key(&mut self, key: &Key) -> Option<Pod> {
        if !self.pods.contains(key) {
            return None;
        }
        self.kubelet.forget(key);
        self.remove_object(key)
    }

    /// Change a pod directly (a test hook): `change` may edit anything but its namespace and
    /// name; the pod gets a new resourceVersion and a MODIFIED event. The kubelet script is
    /// unchanged — it may overwrite the status at its next step; attach
    /// [`PodScript::Inert`] with [`ClusterModel::set_pod_script`] to stop it.
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn modify_pod(
        &mut self,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut Pod),
    ) -> Result<Pod, ModelError> {
        let key = key(namespace, name);
        let mut pod = self.get_pod(namespace, name)?;
        change(&mut pod);
        pod.metadata.namespace = Some(key.0.clone());
        pod.metadata.name = Some(key.1.clone());
        let stored = self.store_modified(&key, pod);
        if self.held_only_by_finalizers(&key, &stored) {
            // The last finalizer of a pod whose graceful deletion has ended went: the apiserver
            // removes it at once.
            return Ok(self.remove_pod_key(&key).unwrap_or(stored));
        }
        Ok(stored)
    }

    /// Hold a pod whose graceful removal fell due but which still has finalizers: its kubelet
    /// is done (the containers stopped, as the kubelet's final zero-grace delete says), and it
    /// stays, `deletionGracePeriodSeconds: 0`, until its finalizers are removed
    /// ([`ClusterModel::modify_pod`]).
    pub(super) fn hold_for_finalizers(&mut self, key: &Key) {
        self.kubelet.forget(key);
        if let Some(mut pod) = self.pods.get(key).cloned() {
            pod.metadata.deletion_timestamp = Some(Time(self.now));
            pod.metadata.deletion_grace_period_seconds = Some(0);
            self.store_modified(key, pod);
        }
    }

    /// Whether `pod` is deletion-marked with no finalizers left and no kubelet removal pending:
    /// only its finalizers were keeping it.
    fn held_only_by_finalizers(&self, key: &Key, pod: &Pod) -> bool {
        pod.metadata.deletion_timestamp.is_some()
            && !has_finalizers(pod)
            && self.kubelet.runtime(key).is_none()
    }

    /// Replace a pod's `status` (a test hook); as [`ClusterModel::modify_pod`].
    ///
    /// # Errors
    /// `NotFound` when the pod does not exist.
    pub fn set_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: PodStatus,
    ) -> Result<Pod, ModelError> {
        self.modify_pod(namespace, name, |pod| pod.status = Some(status))
    }

    /// Store a changed pod: the next resourceVersion, a MODIFIED event, and the kubelet learns
    /// its deletion mark.
    pub(super) fn store_modified(&mut self, key: &Key, mut pod: Pod) -> Pod {
        let rv = self.next_rv();
        pod.metadata.resource_version = Some(rv.to_string());
        self.pods.put(key.clone(), pod.clone());
        self.kubelet
            .set_delete_at(key, pod.metadata.deletion_timestamp.as_ref().map(|t| t.0));
        self.record(EventType::Modified, rv, &pod);
        pod
    }
}

/// Whether `metadata.finalizers` names any finalizer: the apiserver keeps a deleted object until
/// they are all removed.
pub(super) fn has_finalizers(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| !f.is_empty())
}

/// Whether deleting this pod waits for its grace period: it is not terminal and a kubelet has
/// it (bound to a node, or reporting container statuses).
fn is_graceful(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let terminal = status
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed");
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let reported = status
        .and_then(|s| s.container_statuses.as_ref())
        .is_some_and(|c| !c.is_empty());
    !terminal && (bound || reported)
}

/// The taints the apiserver's DefaultTolerationSeconds admission plugin (on by default) makes
/// every new pod tolerate for 300 s, in the order it appends them.
pub const DEFAULT_TOLERATED_TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// What the real apiserver does to a new pod (seen on kube-apiserver v1.20.2, the CLI's
/// `pod_options` test): for each of [`DEFAULT_TOLERATED_TAINTS`] that no toleration of the pod
/// already tolerates with effect `NoExecute` (or every effect), it appends `{key, operator:
/// Exists, effect: NoExecute, tolerationSeconds: 300}`.
pub fn add_default_tolerations(pod: &mut Pod) {
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    for taint in DEFAULT_TOLERATED_TAINTS {
        let tolerated = spec.tolerations.iter().flatten().any(|t| {
            let effect_ok = matches!(t.effect.as_deref(), None | Some("" | "NoExecute"));
            let exists = t.operator.as_deref() == Some("Exists");
            let key_ok = t.key.as_deref() == Some(taint)
                || (t.key.as_deref().unwrap_or("").is_empty() && exists);
            effect_ok && key_ok && (exists || t.value.as_deref().unwrap_or("").is_empty())
        });
        if !tolerated {
            spec.tolerations
                .get_or_insert_with(Vec::new)
                .push(Toleration {
                    key: Some(taint.to_owned()),
                    operator: Some("Exists".to_owned()),
                    effect: Some("NoExecute".to_owned()),
                    toleration_seconds: Some(300),
                    value: None,
                });
        }
    }
}

mod validation;

#[cfg(test)]
mod tests;
