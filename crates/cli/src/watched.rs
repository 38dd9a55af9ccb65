//! A [`Substrate`] decorator that feeds every observation of the agent's pod to a
//! [`Progress`] display, because the driver reports progress only as log lines while the
//! terminal spinner needs the latest redacted condition (issue "What a person sees").
//!
//! Shell layer: every call is passed through unchanged; the condition text comes from
//! `apiary-classify` (`condition_text`, deploy.md § Redacted condition text) over the
//! substrate's own observation and verification. Must not: change, delay or add any request, or
//! show anything of a pod that is not verified as this agent's.

use std::time::Duration;

use apiary_classify::condition::{NO_CONDITION, condition_text};
use apiary_classify::verify::{PodDeletion, SecretDeletion, verify_pod};
use apiary_substrate::observe::observe_pod;
use apiary_substrate::{
    CreateOutcome, DeleteOutcome, Listed, NamespaceError, Substrate, SubstrateError,
};
use k8s_openapi::api::core::v1::{Pod, Secret};

use crate::progress::Progress;

/// `inner`, with reads of the pod `pod_name` shown on `progress`.
pub struct Watched<'a, S> {
    inner: &'a S,
    progress: &'a Progress,
    pod_name: String,
    agent_id: String,
    absent: &'static str,
}

impl<'a, S: Substrate> Watched<'a, S> {
    /// Watch reads of `pod_name` (verified against `agent_id`) through `inner`; `absent` is
    /// the text shown while the pod does not exist ("no pod yet", "the pod is gone").
    pub fn new(
        inner: &'a S,
        progress: &'a Progress,
        pod_name: String,
        agent_id: String,
        absent: &'static str,
    ) -> Self {
        Self {
            inner,
            progress,
            pod_name,
            agent_id,
            absent,
        }
    }

    fn observed(&self, name: &str, pod: Option<&Pod>) {
        if name == self.pod_name {
            let text = match pod {
                None => self.absent.to_owned(),
                Some(pod) => describe(pod, &self.agent_id),
            };
            self.progress.update(&text);
        }
    }
}

/// The progress text for one read of the agent's pod.
pub fn describe(pod: &Pod, agent_id: &str) -> String {
    match verify_pod(&observe_pod(pod), agent_id) {
        Some(verified) => {
            let text = condition_text(verified.facts()).unwrap_or_else(|| NO_CONDITION.to_owned());
            if verified.deletion_marked() {
                format!("terminating: {text}")
            } else {
                text
            }
        }
        None => "the pod is not apiary's for this agent".to_owned(),
    }
}

impl<S: Substrate> Substrate for Watched<'_, S> {
    fn namespace(&self) -> &str {
        self.inner.namespace()
    }

    async fn ensure_namespace(&self) -> Result<(), NamespaceError> {
        self.inner.ensure_namespace().await
    }

    async fn list_pods(&self, selector: &str) -> Result<Listed<Pod>, SubstrateError> {
        self.inner.list_pods(selector).await
    }

    async fn list_secrets(&self, selector: &str) -> Result<Vec<Secret>, SubstrateError> {
        self.inner.list_secrets(selector).await
    }

    async fn get_pod(&self, name: &str) -> Result<Option<Pod>, SubstrateError> {
        let read = self.inner.get_pod(name).await;
        if let Ok(pod) = &read {
            self.observed(name, pod.as_ref());
        }
        read
    }

    async fn secret_exists(&self, name: &str) -> Result<bool, SubstrateError> {
        self.inner.secret_exists(name).await
    }

    async fn service_account_exists(&self, name: &str) -> Result<bool, SubstrateError> {
        self.inner.service_account_exists(name).await
    }

    async fn create_secret(&self, secret: &Secret) -> Result<CreateOutcome, SubstrateError> {
        self.inner.create_secret(secret).await
    }

    async fn create_pod(&self, pod: &Pod) -> Result<CreateOutcome, SubstrateError> {
        self.inner.create_pod(pod).await
    }

    async fn delete_pod(&self, deletion: &PodDeletion) -> Result<DeleteOutcome, SubstrateError> {
        self.inner.delete_pod(deletion).await
    }

    async fn delete_secret(
        &self,
        deletion: &SecretDeletion,
    ) -> Result<DeleteOutcome, SubstrateError> {
        self.inner.delete_secret(deletion).await
    }

    async fn sleep(&self, duration: Duration) {
        self.inner.sleep(duration).await;
    }

    async fn wait_for_pod_change(&self, name: &str, resource_version: Option<&str>, max: Duration) {
        self.inner
            .wait_for_pod_change(name, resource_version, max)
            .await;
    }

    fn now(&self) -> Duration {
        self.inner.now()
    }
}

#[cfg(test)]
mod tests {
    //! The progress text: absent, verified (with the deploy.md § Redacted condition text),
    //! deletion-marked, foreign.

    use std::collections::BTreeMap;

    use apiary_substrate::naming::{
        ANNOTATION_AGENT_ID, AgentIdentity, BINDING_VERSION, LABEL_BINDING_VERSION,
        LABEL_MANAGED_BY, MANAGED_BY,
    };
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateWaiting, ContainerStatus, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn pod(agent_id: &str, reason: &str, message: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("apiary-a-0123".into()),
                uid: Some("u1".into()),
                resource_version: Some("7".into()),
                labels: Some(BTreeMap::from([
                    (LABEL_MANAGED_BY.to_owned(), MANAGED_BY.to_owned()),
                    (LABEL_BINDING_VERSION.to_owned(), BINDING_VERSION.to_owned()),
                ])),
                annotations: Some(BTreeMap::from([(
                    ANNOTATION_AGENT_ID.to_owned(),
                    agent_id.to_owned(),
                )])),
                ..ObjectMeta::default()
            },
            status: Some(PodStatus {
                container_statuses: Some(vec![ContainerStatus {
                    name: "agent".into(),
                    state: Some(ContainerState {
                        waiting: Some(ContainerStateWaiting {
                            reason: Some(reason.into()),
                            message: Some(message.into()),
                        }),
                        ..ContainerState::default()
                    }),
                    ..ContainerStatus::default()
                }]),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    /// A verified pod shows the redacted condition: the reason, never the waiting message
    /// (which can echo registry credentials).
    #[test]
    fn verified_pod_shows_the_redacted_condition() {
        let agent = AgentIdentity::new("a").expect("agent");
        let p = pod(agent.id(), "ErrImagePull", "token=SUPERSECRET");
        let text = describe(&p, agent.id());
        assert!(text.contains("ErrImagePull"), "{text}");
        assert!(!text.contains("SUPERSECRET"));
    }

    /// The decorator adds, drops and reorders no call: a deploy through it makes exactly the
    /// calls a deploy without it makes, and the progress saw the started pod.
    #[tokio::test]
    async fn deploy_through_the_decorator_makes_the_same_calls() {
        use apiary_substrate::config::DeployConfig;
        use apiary_substrate::driver::{self, DeployOptions};
        use apiary_substrate::fake::FakeCluster;

        use crate::progress::Style;

        let agent = AgentIdentity::new("a").expect("agent");
        let image = format!("registry.example.com/x@sha256:{}", "a".repeat(64));
        let config = DeployConfig::new("agents", image)
            .validate(&agent)
            .expect("config");
        let options = DeployOptions::for_config(&config);

        let plain = FakeCluster::new("agents");
        let direct = driver::deploy(&plain, &config, &options).await;

        let fake = FakeCluster::new("agents");
        let progress = Progress::start("t", Style::Silent);
        let watched = Watched::new(
            &fake,
            &progress,
            config.pod_name(),
            agent.id().to_owned(),
            "no pod yet",
        );
        let through = driver::deploy(&watched, &config, &options).await;

        assert_eq!(
            direct.as_ref().map(|d| &d.pod),
            through.as_ref().map(|d| &d.pod)
        );
        assert!(through.is_ok());
        let ops = |f: &FakeCluster| f.calls().iter().map(|c| c.op()).collect::<Vec<_>>();
        assert_eq!(ops(&plain), ops(&fake));
        assert!(
            progress
                .last()
                .is_some_and(|c| c.contains("Running") || c.contains("running")),
            "{:?}",
            progress.last()
        );
    }

    /// A foreign pod shows nothing of itself.
    #[test]
    fn foreign_pod_shows_nothing_of_itself() {
        let agent = AgentIdentity::new("a").expect("agent");
        let other = AgentIdentity::new("b").expect("agent");
        let p = pod(other.id(), "ContainerCreating", "");
        let text = describe(&p, agent.id());
        assert!(!text.contains("ContainerCreating"), "{text}");
    }
}
