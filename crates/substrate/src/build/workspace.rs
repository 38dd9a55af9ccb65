//! The agent's workspace claim (deploy.md § Persistent workspace): built from a validated
//! configuration with `--workspace-size`, one PersistentVolumeClaim per agent, named from the
//! agent identity and marked like its Secret, so verification can prove it apiary's before the
//! pod mounts it and before the only delete that may ever touch it.
//!
//! Pure. ReadWriteOnce: one agent has one pod, and a replace deletes the old pod before the new
//! one is created.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimSpec, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::config::ValidConfig;

/// The access mode of every workspace claim.
pub const ACCESS_MODE: &str = "ReadWriteOnce";

/// The agent's claim, when the configuration asks for a persistent workspace.
#[must_use]
pub fn build_workspace_claim(config: &ValidConfig) -> Option<PersistentVolumeClaim> {
    let asked = config.pod_options().workspace_claim.as_ref()?;
    let agent = config.agent();
    let mut labels = config.pod_options().labels.clone();
    labels.extend(agent.labels());
    Some(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(agent.workspace_claim_name()),
            namespace: Some(config.namespace().to_owned()),
            labels: Some(labels),
            annotations: Some(agent.annotations()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec![ACCESS_MODE.to_owned()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_owned(),
                    Quantity(asked.size.clone()),
                )])),
                limits: None,
            }),
            storage_class_name: asked.storage_class.clone(),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    })
}
