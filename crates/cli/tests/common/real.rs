//! The real-server half of the CLI end-to-end fixture: a fresh namespace on the `apiary-envtest`
//! control plane, the fake kubelet running that namespace's pods, the envtest fault proxy in
//! pass-through mode in front of the apiserver (the binary's kubeconfig points at it, so its
//! request log is exactly what a command sent), and the shared stage (`apiary_envtest::stage`,
//! the admin client `apiary-substrate-kube`'s `real_support` stages with too) that sets up and
//! inspects objects directly, behind the proxy's back. What is left here is the CLI's own: the
//! proxy and its log, and running the binary as a user RBAC denies one verb.
//!
//! Test-only code: it decides nothing about apiary and never prints a token or a Secret value.

use std::path::Path;
use std::time::Duration;

use apiary_apiserver_sim::{LoggedRequest, Resource, Verb};
use apiary_envtest::kubelet::{self, Kubelet};
use apiary_envtest::proxy::FaultProxy;
use apiary_envtest::stage::{self, Admin};
use apiary_envtest::{ControlPlane, Identity, TestNamespace};
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::api::{Api, ListParams};

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
    stage: Admin,
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
        let kubelet = stage::start_kubelet(plane, &namespace, kubelet::Options::default());
        let (proxy, stage) = runtime.block_on(async {
            let proxy = FaultProxy::start(
                &plane.server_url(),
                plane.ca_pem(),
                plane.token(Identity::Admin),
            )
            .await
            .expect("the fault proxy starts");
            let admin = plane.client(Identity::Admin);
            (proxy, Admin::new(admin, namespace.to_string()))
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
            stage,
        }
    }

    /// The test's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The admin's stage in the test's namespace (call it through the fixture's runtime).
    pub fn stage(&self) -> &Admin {
        &self.stage
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
            for role in [&namespaced_role, &cluster_role] {
                self.stage.create_cluster_object(role).await;
            }
            self.stage.create_object(&role_binding).await;
            self.stage.create_cluster_object(&cluster_binding).await;
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
