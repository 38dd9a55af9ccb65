//! Fixtures shared by the model's unit tests: a model with the `agents` namespace, pods and
//! Secrets shaped as apiary builds them, and readers for the status fields the tests pin. Test
//! support only; no I/O.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, EnvFromSource, Pod, PodSpec, Secret, SecretEnvSource,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::model::*;

pub(crate) const NS: &str = "agents";

pub(crate) const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaa";

pub(crate) fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

pub(crate) fn model() -> ClusterModel {
    let mut m = ClusterModel::default();
    m.ensure_namespace(NS);
    m
}

pub(crate) fn pod_named(name: &str, image: &str, secret: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("app".to_owned(), name.to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "agent".into(),
                image: Some(image.into()),
                env_from: secret.map(|s| {
                    vec![EnvFromSource {
                        secret_ref: Some(SecretEnvSource {
                            name: s.into(),
                            optional: Some(false),
                        }),
                        ..EnvFromSource::default()
                    }]
                }),
                ..Container::default()
            }],
            termination_grace_period_seconds: Some(60),
            restart_policy: Some("Never".into()),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

pub(crate) fn secret_named(name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([("K".to_owned(), "v".to_owned())])),
        immutable: Some(true),
        ..Secret::default()
    }
}

pub(crate) fn rv_of(meta: &ObjectMeta) -> u64 {
    meta.resource_version.as_deref().unwrap().parse().unwrap()
}

pub(crate) fn agent_state(pod: &Pod) -> ContainerState {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == "agent"))
        .and_then(|c| c.state.clone())
        .expect("agent container state")
}

pub(crate) fn waiting_reason(pod: &Pod) -> Option<String> {
    agent_state(pod).waiting.and_then(|w| w.reason)
}

pub(crate) fn waiting_message(pod: &Pod) -> Option<String> {
    agent_state(pod).waiting.and_then(|w| w.message)
}

pub(crate) fn phase(pod: &Pod) -> Option<String> {
    pod.status.as_ref().and_then(|s| s.phase.clone())
}

pub(crate) fn fence(pod: &Pod) -> Preconditions {
    Preconditions {
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
    }
}
