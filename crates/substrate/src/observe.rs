//! Observation (deploy.md § Observation): maps Kubernetes pods and Secrets onto the plain facts
//! of `apiary_classify::facts` — marks, the `agent` container's state, conditions, the first
//! `envFrom` Secret reference — and the node of a pod that will not go away onto
//! `apiary_classify::stuck::NodeFacts`.
//!
//! Pure mapping: no I/O, no clock, and no decision. Verification, settling and classification
//! live in `apiary-classify`; this module only copies what the objects say. It never reads a
//! Secret's payload.

use apiary_classify::settings::ANNOTATION_INTENT_SETTINGS;
use std::collections::BTreeMap;

use apiary_classify::expiry::ANNOTATION_EXPIRES_AT;
use apiary_classify::facts::{
    ConditionFacts, ContainerState, ObjectMarks, ObservedPod, ObservedSecret, PodFacts,
};
use apiary_classify::stuck::NodeFacts;
use k8s_openapi::api::core::v1::{self as core, Container, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use apiary_classify::binding::Binding;

use crate::build::CONTAINER_NAME;

/// The identity marks of `meta` read under `binding`'s keys: name, uid, resourceVersion, the two
/// marker labels, the agent-id, create-intent and expiry annotations, the deletion mark and the
/// creation time. Verification then compares them against an owner of the same binding, so an
/// object of the other binding never carries the markers it asks for.
#[must_use]
pub fn object_marks(meta: &ObjectMeta, binding: Binding) -> ObjectMarks {
    let label = |key: &str| lookup(meta.labels.as_ref(), key);
    let annotation = |key: &str| lookup(meta.annotations.as_ref(), key);
    ObjectMarks {
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        managed_by: label(binding.label_managed_by),
        binding_version: label(binding.label_binding_version),
        agent_id: annotation(binding.annotation_agent_id),
        create_intent: annotation(binding.annotation_create_intent),
        deletion_marked: meta.deletion_timestamp.is_some(),
        created_at_unix: meta.creation_timestamp.as_ref().map(|t| t.0.as_second()),
        expires_at: annotation(ANNOTATION_EXPIRES_AT),
        intent_settings: annotation(ANNOTATION_INTENT_SETTINGS),
    }
}

fn lookup(map: Option<&BTreeMap<String, String>>, key: &str) -> Option<String> {
    map.and_then(|m| m.get(key)).cloned()
}

/// The pod as observed under `binding`: its marks and its facts.
#[must_use]
pub fn observe_pod(pod: &Pod, binding: Binding) -> ObservedPod {
    ObservedPod {
        marks: object_marks(&pod.metadata, binding),
        facts: pod_facts(pod),
    }
}

/// The Secret as observed under `binding`: only its marks, never its data.
#[must_use]
pub fn observe_secret(secret: &Secret, binding: Binding) -> ObservedSecret {
    ObservedSecret {
        marks: object_marks(&secret.metadata, binding),
    }
}

/// The status and spec facts of `pod` (deploy.md § Decoding a pod supplies their meaning).
#[must_use]
pub fn pod_facts(pod: &Pod) -> PodFacts {
    let status = pod.status.as_ref();
    PodFacts {
        phase: status.and_then(|s| s.phase.clone()),
        agent: status
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|all| all.iter().find(|c| c.name == CONTAINER_NAME))
            .and_then(|c| c.state.as_ref())
            .map(container_state),
        conditions: status
            .and_then(|s| s.conditions.as_ref())
            .map(|all| all.iter().map(condition_facts).collect())
            .unwrap_or_default(),
        env_from_secret: env_from_secret(pod),
        image: agent_image(pod),
        workspace_claim: workspace_claim(pod),
    }
}

/// The claim the pod's workspace volume mounts, when it is a claim (deploy.md § Persistent
/// workspace).
fn workspace_claim(pod: &Pod) -> Option<String> {
    pod.spec
        .as_ref()?
        .volumes
        .as_ref()?
        .iter()
        .find(|v| v.name == crate::build::WORKSPACE_VOLUME)?
        .persistent_volume_claim
        .as_ref()
        .map(|c| c.claim_name.clone())
}

/// Running beats terminated beats waiting; a state with none of the three is `Empty`.
fn container_state(state: &core::ContainerState) -> ContainerState {
    if state.running.is_some() {
        ContainerState::Running
    } else if let Some(t) = &state.terminated {
        ContainerState::Terminated {
            exit_code: t.exit_code,
            reason: t.reason.clone(),
        }
    } else if let Some(w) = &state.waiting {
        ContainerState::Waiting {
            reason: w.reason.clone(),
            message: w.message.clone(),
        }
    } else {
        ContainerState::Empty
    }
}

fn condition_facts(condition: &core::PodCondition) -> ConditionFacts {
    ConditionFacts {
        kind: condition.type_.clone(),
        status: condition.status.clone(),
        reason: condition.reason.clone(),
        message: condition.message.clone(),
    }
}

/// What a read node shows for the warning of deploy.md § When a pod will not go away: its `Ready`
/// condition, when it reports one (the first of that type).
#[must_use]
pub fn node_facts(node: &core::Node) -> NodeFacts {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|conditions| conditions.iter().find(|c| c.type_ == "Ready"))
        .map(|c| ConditionFacts {
            kind: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
        });
    NodeFacts::Read { ready }
}

/// The spec `image` of the container named `agent`, when any (the pull-failure classifier strips
/// it from the kubelet's message).
fn agent_image(pod: &Pod) -> Option<String> {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice());
    containers
        .unwrap_or_default()
        .iter()
        .find(|c| c.name == CONTAINER_NAME)
        .and_then(|c| c.image.clone())
}

/// The pod's own Secret: the `envFrom[].secretRef.name` named `<pod>-…` (deploy.md § Secret),
/// else the first `envFrom[].secretRef.name` across the pod's containers, in order. A pod with
/// `--env-from-secret` references other Secrets too, listed before its own (the last source
/// wins a key, so apiary's own keys do).
#[must_use]
pub fn env_from_secret(pod: &Pod) -> Option<String> {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice());
    let mut refs = containers.unwrap_or_default().iter().flat_map(secret_refs);
    let prefix = pod.metadata.name.as_deref().map(|name| format!("{name}-"));
    let first = refs.next()?;
    let own = |name: &String| prefix.as_deref().is_some_and(|p| name.starts_with(p));
    if own(&first) {
        return Some(first);
    }
    refs.find(own).or(Some(first))
}

fn secret_refs(container: &Container) -> impl Iterator<Item = String> + '_ {
    container
        .env_from
        .iter()
        .flatten()
        .filter_map(|source| source.secret_ref.as_ref())
        .map(|secret| secret.name.clone())
}

#[cfg(test)]
mod tests;
