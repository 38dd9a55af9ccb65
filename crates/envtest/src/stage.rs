//! The shared stage of the real-server harnesses (`apiary-substrate-kube`'s `real_support` and the
//! CLI's `common::real`): an admin client bound to one test namespace that sets up objects
//! behind the back of the client under test and reads back what happened, plus the filters over
//! a request log both harnesses assert with.
//!
//! Everything here goes over HTTP through an ordinary `kube::Client` (never through a model), so
//! the same [`Admin`] serves the loopback simulator and the real apiserver alike. Every method is
//! async; the CLI harness, which has no async test body, calls them through its runtime's
//! `block_on`.
//!
//! Layer: test support. It decides nothing about apiary; it panics (a failed test) when the
//! admin's request fails, except where a caller that may be unwinding needs the error.

use std::time::{Duration, Instant};

use apiary_apiserver_sim::{LoggedRequest, Resource, Verb};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Namespace, Pod, PodStatus, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ClusterResourceScope, NamespaceResourceScope};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ControlPlane;
use crate::Identity;
use crate::kubelet::{self, Kubelet};
use crate::webhook::LabelWebhook;

/// How long [`Admin::until_pod`] waits before the test fails as hung (not a performance bound).
pub const HANG: Duration = Duration::from_secs(60);

/// Model seconds per real second for a stage's fake kubelet ([`start_kubelet`]): a 60 s grace
/// period passes in 0.6 s.
pub const KUBELET_SCALE: f64 = 100.0;

/// The node [`Admin::create_inert_pod`] binds pods to: no kubelet runs it, so nothing touches them.
pub const NOBODYS_NODE: &str = "apiary-cli-test-nobodys-node";

/// A finalizer that keeps a deletion-marked pod in place (nothing removes it).
pub const KEEP_FINALIZER: &str = "apiary.test/keep";

/// The namespace label a test's webhook configuration selects ([`Admin::register_label_webhook`]).
const WEBHOOK_LABEL: &str = "apiary-test-webhook";

/// A namespaced kind the admin can list and read.
pub trait Namespaced:
    kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
{
}
impl<K> Namespaced for K where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
{
}

/// A cluster-scoped kind the admin can read and delete.
pub trait ClusterScoped:
    kube::Resource<DynamicType = (), Scope = ClusterResourceScope>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
{
}
impl<K> ClusterScoped for K where
    K: kube::Resource<DynamicType = (), Scope = ClusterResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
{
}

/// The admin's hands on one test namespace: staging and observation, never logged by the tap or
/// the proxy in front of the client under test.
#[derive(Clone)]
pub struct Admin {
    client: kube::Client,
    namespace: String,
}

impl Admin {
    /// The admin `client` (an identity every request is allowed to) working in `namespace`.
    pub fn new(client: kube::Client, namespace: impl Into<String>) -> Self {
        Self {
            client,
            namespace: namespace.into(),
        }
    }

    /// The namespace staged and read.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The admin client.
    pub fn admin(&self) -> kube::Client {
        self.client.clone()
    }

    /// The API of kind `K` in the namespace.
    pub fn api<K: Namespaced>(&self) -> Api<K> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Create `pod` in the namespace.
    pub async fn create_pod(&self, pod: &Pod) -> Pod {
        self.create_object(pod).await
    }

    /// Create `secret` in the namespace.
    pub async fn create_secret(&self, secret: &Secret) -> Secret {
        self.create_object(secret).await
    }

    /// Create `object` in the namespace (a pod, a Secret, a ResourceQuota, ...).
    pub async fn create_object<K: Namespaced + Serialize>(&self, object: &K) -> K {
        self.api::<K>()
            .create(&PostParams::default(), object)
            .await
            .unwrap_or_else(|e| panic!("the admin creates the {}: {e}", K::kind(&())))
    }

    /// Delete pod `name` gracefully (no preconditions).
    pub async fn delete_pod(&self, name: &str) {
        self.api::<Pod>()
            .delete(name, &DeleteParams::default())
            .await
            .expect("the admin deletes the pod");
    }

    /// Delete the Secret `name`.
    pub async fn delete_secret(&self, name: &str) {
        self.api::<Secret>()
            .delete(name, &DeleteParams::default())
            .await
            .expect("the admin deletes the Secret");
    }

    /// The pod `name` now (a quorum read), if it exists.
    pub async fn pod_named(&self, name: &str) -> Option<Pod> {
        self.api::<Pod>()
            .get_opt(name)
            .await
            .expect("the admin reads the pod")
    }

    /// Every object of kind `K` in the namespace now.
    pub async fn objects<K: Namespaced>(&self) -> Vec<K> {
        self.api::<K>()
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("the admin lists {}s: {e}", K::kind(&())))
            .items
    }

    /// The pods of the namespace now.
    pub async fn pods(&self) -> Vec<Pod> {
        self.objects().await
    }

    /// The Secrets of the namespace now.
    pub async fn secrets(&self) -> Vec<Secret> {
        self.objects().await
    }

    /// Names of the pods in the namespace now, sorted.
    pub async fn pod_names(&self) -> Vec<String> {
        sorted_names(self.pods().await)
    }

    /// Names of the Secrets in the namespace now, sorted.
    pub async fn secret_names(&self) -> Vec<String> {
        sorted_names(self.secrets().await)
    }

    /// Wait (bounded by [`HANG`]) until pod `name` satisfies `check`; returns it. `what` names
    /// the awaited state in the failure message.
    pub async fn until_pod(&self, what: &str, name: &str, check: impl Fn(&Pod) -> bool) -> Pod {
        let started = Instant::now();
        loop {
            let pod = self.pod_named(name).await;
            if let Some(pod) = &pod
                && check(pod)
            {
                return pod.clone();
            }
            assert!(
                started.elapsed() < HANG,
                "timed out waiting for {what} ({name}); last seen: {:?}",
                pod.map(|p| (p.metadata, p.status))
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Merge `status` into the status of the object `name` of kind `K`, as a controller would
    /// (the tier runs no controller manager).
    pub async fn patch_status<K: Namespaced>(&self, name: &str, status: serde_json::Value) {
        let patch = Patch::Merge(serde_json::json!({ "status": status }));
        self.api::<K>()
            .patch_status(name, &PatchParams::default(), &patch)
            .await
            .expect("the admin patches the object's status");
    }

    /// Create the cluster-scoped `object` (a RuntimeClass, a webhook configuration, ...).
    pub async fn create_cluster_object<K: ClusterScoped + Serialize>(&self, object: &K) {
        Api::<K>::all(self.client.clone())
            .create(&PostParams::default(), object)
            .await
            .expect("the admin creates a cluster-scoped object");
    }

    /// Delete the cluster-scoped object `name` of kind `K`; already gone is fine.
    ///
    /// # Errors
    /// The kube error of any other failure (the caller may be unwinding and must not panic).
    pub async fn delete_cluster_object<K: ClusterScoped>(
        &self,
        name: &str,
    ) -> Result<(), kube::Error> {
        match Api::<K>::all(self.client.clone())
            .delete(name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Create `pod` (and `secret` first, when given); `deleting` then deletion-marks the pod but
    /// leaves it present, held by [`KEEP_FINALIZER`] (nothing removes it).
    pub async fn create_attempt(&self, secret: Option<&Secret>, mut pod: Pod, deleting: bool) {
        if let Some(secret) = secret {
            self.create_secret(secret).await;
        }
        if deleting {
            pod.metadata.finalizers = Some(vec![KEEP_FINALIZER.to_owned()]);
        }
        let created = self.create_pod(&pod).await;
        if deleting {
            self.delete_pod(&name_of(&created)).await;
        }
    }

    /// Create `pod` bound to [`NOBODYS_NODE`] (so no kubelet runs it), write `status` through the
    /// status subresource, then deletion-mark it when `deleting` (its grace period never ends:
    /// nobody finishes it).
    pub async fn create_inert_pod(&self, mut pod: Pod, status: PodStatus, deleting: bool) {
        if let Some(spec) = pod.spec.as_mut() {
            spec.node_name = Some(NOBODYS_NODE.to_owned());
        }
        let name = name_of(&self.create_pod(&pod).await);
        let api = self.api::<Pod>();
        let mut current = api.get(&name).await.expect("the admin reads the pod");
        current.status = Some(status);
        api.replace_status(&name, &PostParams::default(), &current)
            .await
            .expect("the admin writes the pod's status");
        if deleting {
            self.delete_pod(&name).await;
        }
    }

    /// Serve a webhook denying pods without the label `required` and register it as the
    /// ValidatingWebhookConfiguration `name` for pod creation in this namespace only: the
    /// namespace gets the label `apiary-test-webhook: <namespace>` and the configuration selects
    /// it (a 1.20 server sets no `kubernetes.io/metadata.name`), so tests sharing the control
    /// plane are never refused. The caller deletes the configuration.
    pub async fn register_label_webhook(&self, name: &str, required: &str) -> LabelWebhook {
        let webhook = LabelWebhook::start(required)
            .await
            .expect("the webhook starts");
        let label = serde_json::json!({"metadata": {"labels": {WEBHOOK_LABEL: self.namespace}}});
        Api::<Namespace>::all(self.client.clone())
            .patch(
                &self.namespace,
                &PatchParams::default(),
                &Patch::Merge(&label),
            )
            .await
            .expect("the admin labels the test namespace");
        // k8s-openapi's ByteString serializes as base64, exactly as `caBundle` wants.
        let ca_bundle = k8s_openapi::ByteString(webhook.ca_pem().as_bytes().to_vec());
        let configuration: ValidatingWebhookConfiguration =
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "webhooks": [{
                    "name": name,
                    "clientConfig": {"url": webhook.url(), "caBundle": ca_bundle},
                    "rules": [{
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                        "scope": "Namespaced",
                    }],
                    "namespaceSelector": {"matchLabels": {WEBHOOK_LABEL: self.namespace}},
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 5,
                }],
            }))
            .expect("a webhook configuration");
        self.create_cluster_object(&configuration).await;
        webhook
    }
}

/// The fake kubelet of a test's `namespace` on `plane`, started from `options` with its scope set
/// to that namespace only (tests sharing the plane never see each other's pods driven) and its
/// time at [`KUBELET_SCALE`]. It blocks until its node is registered: async code calls it
/// through `tokio::task::block_in_place`.
///
/// # Panics
/// When the kubelet cannot register its node.
pub fn start_kubelet(plane: &ControlPlane, namespace: &str, options: kubelet::Options) -> Kubelet {
    let options = kubelet::Options {
        scope: kubelet::Scope::Namespaces(vec![namespace.to_owned()]),
        time_scale: KUBELET_SCALE,
        ..options
    };
    Kubelet::start(plane.config(Identity::Admin), options)
        .expect("the fake kubelet registers its node")
}

fn name_of(pod: &Pod) -> String {
    pod.metadata.name.clone().expect("a named pod")
}

fn sorted_names<K: kube::Resource>(objects: Vec<K>) -> Vec<String> {
    let mut names: Vec<String> = objects
        .into_iter()
        .filter_map(|o| o.meta().name.clone())
        .collect();
    names.sort();
    names
}

/// Requests of `verb` on `resource` in `log`, in order.
pub fn of(log: &[LoggedRequest], verb: Verb, resource: Resource) -> Vec<LoggedRequest> {
    log.iter()
        .filter(|r| r.is(verb, resource))
        .cloned()
        .collect()
}

/// Requests of `verb` on `resource` in `log` answered 2xx, in order.
pub fn succeeded(log: &[LoggedRequest], verb: Verb, resource: Resource) -> Vec<LoggedRequest> {
    log.iter()
        .filter(|r| r.is(verb, resource) && r.status.is_some_and(|s| (200..300).contains(&s)))
        .cloned()
        .collect()
}

/// Requests in `log` that could change state (POST, PUT, PATCH, DELETE), in order.
pub fn mutations(log: &[LoggedRequest]) -> Vec<LoggedRequest> {
    log.iter().filter(|r| r.is_mutation()).cloned().collect()
}
