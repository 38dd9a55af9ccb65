//! The real-server half of the CLI end-to-end fixture: a fresh namespace on the `apiary-envtest`
//! control plane, the fake kubelet running that namespace's pods, the envtest fault proxy in
//! pass-through mode in front of the apiserver (the binary's kubeconfig points at it, so its
//! request log is exactly what a command sent), and an admin client that sets up and inspects
//! objects directly, behind the proxy's back.
//!
//! Test-only code: it decides nothing about apiary and never prints a token or a Secret value.

use std::path::Path;
use std::time::Duration;

use apiary_apiserver_sim::{LoggedRequest, Resource, Verb};
use apiary_envtest::kubelet::{self, Kubelet};
use apiary_envtest::proxy::FaultProxy;
use apiary_envtest::webhook::LabelWebhook;
use apiary_envtest::{ControlPlane, Identity, TestNamespace};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Namespace, Pod, PodStatus, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

/// Model seconds per real second for the fake kubelet: a 60 s grace period passes in 0.6 s.
pub const KUBELET_TIME_SCALE: f64 = 100.0;

/// The node pods are bound to when no kubelet may touch them (nothing runs it).
pub const NOBODYS_NODE: &str = "apiary-cli-test-nobodys-node";

/// A finalizer that keeps a deletion-marked pod in place (nothing removes it).
pub const KEEP_FINALIZER: &str = "apiary.test/keep";

/// The namespace label a test's webhook configuration selects (see [`Real::register_label_webhook`]).
const WEBHOOK_LABEL: &str = "apiary-test-webhook";

/// Every verb the RBAC rules of [`Real::deny`] grant (minus the denied one).
const VERBS: [Verb; 7] = [
    Verb::Get,
    Verb::List,
    Verb::Watch,
    Verb::Create,
    Verb::Delete,
    Verb::Update,
    Verb::Patch,
];

/// The resources apiary touches.
const RESOURCES: [Resource; 4] = [
    Resource::Namespaces,
    Resource::Pods,
    Resource::Secrets,
    Resource::ServiceAccounts,
];

/// The real backend of one test.
pub struct Real {
    plane: &'static ControlPlane,
    namespace: TestNamespace,
    /// The proxy the binary's kubeconfig points at now.
    proxy: FaultProxy,
    /// Proxies replaced by [`Real::deny`], kept so their connections outlive nothing surprising.
    retired: Vec<FaultProxy>,
    kubelet: Option<Kubelet>,
    admin: kube::Client,
}

impl Real {
    /// A fresh namespace named after `scenario`, its kubelet, the admin proxy, and the
    /// kubeconfig at `kubeconfig` pointing at the proxy with the namespace on its context.
    pub fn start(
        plane: &'static ControlPlane,
        runtime: &tokio::runtime::Runtime,
        scenario: &str,
        kubeconfig: &Path,
    ) -> Self {
        let prefix: String = scenario
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(30)
            .collect();
        let namespace = plane.namespace(prefix.trim_matches('-'));
        let kubelet = Kubelet::start(
            plane.config(Identity::Admin),
            kubelet::Options::in_namespace(&namespace).with_time_scale(KUBELET_TIME_SCALE),
        )
        .expect("the fake kubelet registers its node");
        let (proxy, admin) = runtime.block_on(async {
            let proxy = FaultProxy::start(
                &plane.server_url(),
                plane.ca_pem(),
                plane.token(Identity::Admin),
            )
            .await
            .expect("the fault proxy starts");
            (proxy, plane.client(Identity::Admin))
        });
        proxy
            .kubeconfig(kubeconfig, &namespace)
            .expect("kubeconfig written");
        Self {
            plane,
            namespace,
            proxy,
            retired: Vec::new(),
            kubelet: Some(kubelet),
            admin,
        }
    }

    /// The test's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn pods_api(&self) -> Api<Pod> {
        Api::namespaced(self.admin.clone(), &self.namespace)
    }

    fn secrets_api(&self) -> Api<Secret> {
        Api::namespaced(self.admin.clone(), &self.namespace)
    }

    /// The proxy's request log (what the binary sent).
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.proxy
            .requests()
            .into_iter()
            .map(|r| r.request)
            .collect()
    }

    /// Empties the proxy's request log.
    pub fn clear_requests(&self) {
        self.proxy.clear();
    }

    /// The pods of the namespace (read directly, not through the proxy).
    pub fn pods(&self, runtime: &tokio::runtime::Runtime) -> Vec<Pod> {
        runtime
            .block_on(self.pods_api().list(&ListParams::default()))
            .expect("list pods")
            .items
    }

    /// Pod `name`, if it exists.
    pub fn pod(&self, runtime: &tokio::runtime::Runtime, name: &str) -> Option<Pod> {
        runtime
            .block_on(self.pods_api().get_opt(name))
            .expect("get pod")
    }

    /// The Secrets of the namespace.
    pub fn secrets(&self, runtime: &tokio::runtime::Runtime) -> Vec<Secret> {
        runtime
            .block_on(self.secrets_api().list(&ListParams::default()))
            .expect("list secrets")
            .items
    }

    /// The NetworkPolicies of the namespace.
    pub fn network_policies(
        &self,
        runtime: &tokio::runtime::Runtime,
    ) -> Vec<k8s_openapi::api::networking::v1::NetworkPolicy> {
        self.objects(runtime)
    }

    /// Every object of kind `K` in the namespace, listed as the admin.
    pub fn objects<K>(&self, runtime: &tokio::runtime::Runtime) -> Vec<K>
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + for<'de> k8s_openapi::serde::Deserialize<'de>
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.admin.clone(), &self.namespace);
        runtime
            .block_on(api.list(&ListParams::default()))
            .expect("list the namespace's objects")
            .items
    }

    /// Creates `pod` in the namespace (the kubelet then runs it, unless it is bound elsewhere).
    pub fn create_pod(&self, runtime: &tokio::runtime::Runtime, mut pod: Pod) {
        pod.metadata.namespace = Some(self.namespace.to_string());
        runtime
            .block_on(self.pods_api().create(&PostParams::default(), &pod))
            .expect("create pod");
    }

    /// Create the cluster-scoped `object` as the admin (a RuntimeClass, ...).
    pub fn create_namespaced_object<K>(&self, runtime: &tokio::runtime::Runtime, object: &K)
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + k8s_openapi::serde::Serialize
            + for<'de> k8s_openapi::serde::Deserialize<'de>
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.admin.clone(), &self.namespace);
        runtime
            .block_on(api.create(&PostParams::default(), object))
            .expect("create an object in the namespace");
    }

    pub fn patch_namespaced_status<K>(
        &self,
        runtime: &tokio::runtime::Runtime,
        name: &str,
        status: serde_json::Value,
    ) where
        K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + for<'de> k8s_openapi::serde::Deserialize<'de>
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.admin.clone(), &self.namespace);
        let patch = kube::api::Patch::Merge(serde_json::json!({ "status": status }));
        runtime
            .block_on(api.patch_status(name, &kube::api::PatchParams::default(), &patch))
            .expect("patch the object's status");
    }

    pub fn create_cluster_object<K>(&self, runtime: &tokio::runtime::Runtime, object: &K)
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::ClusterResourceScope>
            + Clone
            + k8s_openapi::serde::Serialize
            + for<'de> k8s_openapi::serde::Deserialize<'de>
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::all(self.admin.clone());
        runtime
            .block_on(api.create(&PostParams::default(), object))
            .expect("create a cluster-scoped object");
    }

    /// Serves a webhook denying pods without the label `required` and registers it as the
    /// ValidatingWebhookConfiguration `name` for pod creation in this test's namespace only:
    /// the namespace gets the label `apiary-test-webhook: <namespace>` and the configuration
    /// selects it (`kubernetes.io/metadata.name` is not set by a 1.20 server), so tests sharing
    /// the control plane are never refused. The caller deletes the configuration.
    pub fn register_label_webhook(
        &self,
        runtime: &tokio::runtime::Runtime,
        name: &str,
        required: &str,
    ) -> LabelWebhook {
        let webhook = runtime
            .block_on(LabelWebhook::start(required))
            .expect("the webhook starts");
        let namespaces: Api<Namespace> = Api::all(self.admin.clone());
        let label = serde_json::json!({"metadata": {"labels": {WEBHOOK_LABEL: self.namespace.to_string()}}});
        runtime
            .block_on(namespaces.patch(
                &self.namespace,
                &PatchParams::default(),
                &Patch::Merge(&label),
            ))
            .expect("label the test namespace");
        let configuration: ValidatingWebhookConfiguration =
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "webhooks": [{
                    "name": name,
                    "clientConfig": {
                        "url": webhook.url(),
                        "caBundle": super::base64(webhook.ca_pem().as_bytes()),
                    },
                    "rules": [{
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                        "scope": "Namespaced",
                    }],
                    "namespaceSelector": {"matchLabels": {WEBHOOK_LABEL: self.namespace.to_string()}},
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 5,
                }],
            }))
            .expect("a webhook configuration");
        self.create_cluster_object(runtime, &configuration);
        webhook
    }

    /// Delete the cluster-scoped object `name` of kind `K` as the admin; already gone is fine.
    ///
    /// # Errors
    /// The kube error of any other failure (the caller may be unwinding and must not panic).
    pub fn delete_cluster_object<K>(
        &self,
        runtime: &tokio::runtime::Runtime,
        name: &str,
    ) -> Result<(), kube::Error>
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::ClusterResourceScope>
            + Clone
            + for<'de> k8s_openapi::serde::Deserialize<'de>
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::all(self.admin.clone());
        match runtime.block_on(api.delete(name, &DeleteParams::default())) {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Create `secret` (a user's, not apiary's).
    pub fn create_secret(&self, runtime: &tokio::runtime::Runtime, secret: &Secret) {
        runtime
            .block_on(self.secrets_api().create(&PostParams::default(), secret))
            .expect("create secret");
    }

    /// Delete the Secret `name`.
    pub fn delete_secret(&self, runtime: &tokio::runtime::Runtime, name: &str) {
        runtime
            .block_on(self.secrets_api().delete(name, &DeleteParams::default()))
            .expect("delete secret");
    }

    pub fn insert_attempt(
        &self,
        runtime: &tokio::runtime::Runtime,
        secret: Option<Secret>,
        mut pod: Pod,
        deleting: bool,
    ) {
        if let Some(secret) = secret {
            runtime
                .block_on(self.secrets_api().create(&PostParams::default(), &secret))
                .expect("create secret");
        }
        if deleting {
            pod.metadata.finalizers = Some(vec![KEEP_FINALIZER.to_owned()]);
        }
        let name = pod.metadata.name.clone().expect("named pod");
        self.create_pod(runtime, pod);
        if deleting {
            runtime
                .block_on(self.pods_api().delete(&name, &DeleteParams::default()))
                .expect("delete pod");
        }
    }

    /// A pod no kubelet runs (bound to [`NOBODYS_NODE`]), its status written through the
    /// status subresource, then deletion-marked when `deleting`.
    pub fn insert_inert_pod(
        &self,
        runtime: &tokio::runtime::Runtime,
        mut pod: Pod,
        status: PodStatus,
        deleting: bool,
    ) {
        let name = pod.metadata.name.clone().expect("named pod");
        if let Some(spec) = pod.spec.as_mut() {
            spec.node_name = Some(NOBODYS_NODE.to_owned());
        }
        self.create_pod(runtime, pod);
        let api = self.pods_api();
        runtime.block_on(async {
            let mut current = api.get(&name).await.expect("get pod");
            current.status = Some(status);
            api.replace_status(&name, &PostParams::default(), &current)
                .await
                .expect("write status");
            if deleting {
                api.delete(&name, &DeleteParams::default())
                    .await
                    .expect("delete pod");
            }
        });
    }

    /// A second namespace, created.
    pub fn other_namespace(&self) -> String {
        // The TestNamespace value only carries the failure-log guard; the name is what is used.
        self.plane.namespace("other").name().to_owned()
    }

    /// From now on the binary runs as the unprivileged user through a proxy holding its token,
    /// granted every verb of [`VERBS`] on every resource of [`RESOURCES`] except `verb` on
    /// `resource` (on every resource when `None`): the namespaced resources through a
    /// RoleBinding in the test's namespace, `namespaces` through a ClusterRoleBinding (it is
    /// cluster-scoped, so tests sharing one control plane share that grant: at most one test per
    /// process may deny a namespace verb). Returns once the bindings are in force.
    pub fn deny(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        verb: Verb,
        resource: Option<Resource>,
        kubeconfig: &Path,
    ) {
        let name = format!("apiary-cli-test-{}", self.namespace);
        let rule = |r: Resource| {
            let denied = resource.is_none_or(|d| d == r);
            let verbs: Vec<&str> = VERBS
                .iter()
                .filter(|v| !(denied && **v == verb))
                .map(|v| v.as_str())
                .collect();
            serde_json::json!({"apiGroups": [""], "resources": [r.plural()], "verbs": verbs})
        };
        let namespaced: Vec<serde_json::Value> = RESOURCES
            .into_iter()
            .filter(|r| *r != Resource::Namespaces)
            .map(rule)
            .collect();
        let role = |name: &str, rules: serde_json::Value| -> ClusterRole {
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "rules": rules}))
                .expect("cluster role")
        };
        let subjects = serde_json::json!([{
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "User",
            "name": Identity::User.user_name(),
        }]);
        let role_ref = |name: &str| serde_json::json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name});
        let namespaced_name = format!("{name}-namespaced");
        let cluster_name = format!("{name}-namespaces");
        let namespaced_role = role(&namespaced_name, serde_json::Value::from(namespaced));
        let cluster_role = role(
            &cluster_name,
            serde_json::json!([rule(Resource::Namespaces)]),
        );
        let role_binding: RoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": namespaced_name, "namespace": self.namespace.to_string()},
            "roleRef": role_ref(&namespaced_name),
            "subjects": subjects,
        }))
        .expect("role binding");
        let cluster_binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": cluster_name},
            "roleRef": role_ref(&cluster_name),
            "subjects": subjects,
        }))
        .expect("cluster role binding");
        let probe = if verb == Verb::List && resource.is_none_or(|r| r == Resource::Pods) {
            Resource::Secrets
        } else {
            Resource::Pods
        };
        let proxy = runtime.block_on(async {
            let roles = Api::<ClusterRole>::all(self.admin.clone());
            for role in [&namespaced_role, &cluster_role] {
                roles
                    .create(&PostParams::default(), role)
                    .await
                    .expect("create cluster role");
            }
            Api::<RoleBinding>::namespaced(self.admin.clone(), &self.namespace)
                .create(&PostParams::default(), &role_binding)
                .await
                .expect("create role binding");
            Api::<ClusterRoleBinding>::all(self.admin.clone())
                .create(&PostParams::default(), &cluster_binding)
                .await
                .expect("create cluster role binding");
            // RBAC's authorizer reads bindings from an informer: wait until the user's list of
            // an allowed resource is answered, so the bindings are in force (both were written
            // before the probe's binding was read).
            let user = self.plane.client(Identity::User);
            let mut allowed = false;
            for _ in 0..500 {
                let answer = match probe {
                    Resource::Secrets => Api::<Secret>::namespaced(user.clone(), &self.namespace)
                        .list(&ListParams::default())
                        .await
                        .map(drop),
                    _ => Api::<Pod>::namespaced(user.clone(), &self.namespace)
                        .list(&ListParams::default())
                        .await
                        .map(drop),
                };
                if answer.is_ok() {
                    allowed = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                allowed,
                "the RBAC role binding for the user never took effect"
            );
            let namespace_get_denied =
                verb == Verb::Get && resource.is_none_or(|r| r == Resource::Namespaces);
            if !namespace_get_denied {
                let namespaces = Api::<Namespace>::all(user.clone());
                let mut allowed = false;
                for _ in 0..500 {
                    if namespaces.get(&self.namespace).await.is_ok() {
                        allowed = true;
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                assert!(allowed, "the RBAC cluster role binding never took effect");
            }
            FaultProxy::start(
                &self.plane.server_url(),
                self.plane.ca_pem(),
                self.plane.token(Identity::User),
            )
            .await
            .expect("the user's proxy starts")
        });
        proxy
            .kubeconfig(kubeconfig, &self.namespace)
            .expect("kubeconfig written");
        let old = std::mem::replace(&mut self.proxy, proxy);
        self.retired.push(old);
    }
}

impl Drop for Real {
    fn drop(&mut self) {
        // The kubelet first: it must not act on a namespace whose test has finished.
        drop(self.kubelet.take());
    }
}
