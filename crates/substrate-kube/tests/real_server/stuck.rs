//! deploy.md § When a pod will not go away, through the real driver and the real `Cluster`, run as
//! `<scenario>::sim` against the loopback simulator and `<scenario>::real` against an upstream
//! `kube-apiserver` + etcd with the fake kubelet (`apiary-envtest`): a finalizer keeps the agent's
//! pod terminating past its grace period, undeploy says so once (naming the finalizer and the
//! kubectl commands), never forces, and ends at its deadline with the pod still there; once the
//! finalizer is removed the pod goes. When the pod's node is not Ready (a Node object created here
//! with `Ready=False` on the real server, the model's node on the simulator) the warning names the
//! node and its condition; as a user without node rights nothing is said about the node and nothing
//! fails, and with `rbac/apiary-node-reader.yaml` bound the same user's warning names the condition
//! again (the role is sufficient).
//!
//! Layer: integration tests over real HTTP on 127.0.0.1. They decide nothing. The real run skips
//! (one stderr line) without `KUBEBUILDER_ASSETS`. No timed assertions: waits are bounded only
//! to turn a hang into a failure.

use std::time::{Duration, Instant};

use crate::real_support::{Captured, HANG, POD, Stage, Tap, agent, image};
use apiary_apiserver_sim::{Resource, Verb};
use apiary_cluster_model::NodeReady;
use apiary_envtest::Identity;
use apiary_substrate::build::{Attempt, build_attempt};
use apiary_substrate::driver::{self, UndeployOptions};
use apiary_substrate::naming::Generation;
use apiary_substrate_kube::Cluster;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

const FINALIZER: &str = "example.com/hold";

/// Wait (bounded by [`HANG`]) until `done` holds for the agent's pod as read now.
async fn until(
    s: &Stage,
    what: &str,
    done: impl Fn(Option<&k8s_openapi::api::core::v1::Pod>) -> bool,
) {
    let started = Instant::now();
    while !done(s.pod().await.as_ref()) {
        assert!(started.elapsed() < HANG, "hung waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

on_both_backends!(
    /// A finalizer keeps the pod: undeploy explains it once, never forces, and times out.
    self::finalizer_keeps_the_pod_and_undeploy_says_why
);

async fn finalizer_keeps_the_pod_and_undeploy_says_why(s: &Stage) {
    let attempt = held_attempt(s);
    s.create_secret(&attempt.secret).await;
    s.create_pod(&attempt.pod).await;
    until(s, "the pod runs", |p| {
        p.and_then(|p| p.status.as_ref())
            .and_then(|st| st.phase.as_deref())
            == Some("Running")
    })
    .await;

    let (stuck, all, _) = undeploy_held(&s.cluster()).await;
    assert_eq!(stuck.len(), 1, "{all:?}");
    let ns = s.namespace();
    assert!(stuck[0].contains(&format!("pod {ns}/{POD}")), "{all:?}");
    if s.sim().is_none() {
        // The simulator's scaled clock ends the 1 s grace before the first read, which then
        // shows the kubelet's final zero grace.
        assert!(stuck[0].contains("(grace period 1 s)"), "{all:?}");
    }
    assert!(
        stuck[0].contains(&format!("it has finalizers ({FINALIZER})")),
        "{all:?}"
    );
    assert!(
        stuck[0].contains(&format!("kubectl describe pod -n {ns} {POD}")),
        "{all:?}"
    );
    assert!(
        stuck[0].contains("apiary does not force the delete"),
        "{all:?}"
    );
    let held = s.pod().await.expect("the finalizer keeps the pod");
    assert!(held.metadata.deletion_timestamp.is_some());
    let deletes: Vec<_> = s
        .tap
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE" && r.path.ends_with(&format!("/pods/{POD}")))
        .collect();
    assert_eq!(
        deletes.len(),
        1,
        "one graceful fenced delete, never a force"
    );
    assert!(
        !deletes[0].body.contains("\"gracePeriodSeconds\":0"),
        "{}",
        deletes[0].body
    );

    // Let the pod go: the finalizer's owner removes it.
    remove_finalizer(s).await;
    until(s, "the pod goes", |p| p.is_none()).await;
}

/// The agent's first attempt, its pod held by [`FINALIZER`] with a 1 s grace period.
fn held_attempt(s: &Stage) -> Attempt {
    let config = s.config(&image(""));
    let mut attempt = build_attempt(&config, Generation::from_u32(1));
    attempt.pod.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    let spec = attempt.pod.spec.as_mut().expect("a pod spec");
    spec.termination_grace_period_seconds = Some(1);
    attempt
}

/// The finalizer's owner (the test, never apiary) removes [`FINALIZER`] from the agent's pod.
async fn remove_finalizer(s: &Stage) {
    let ns = s.namespace();
    match s.sim() {
        Some(sim) => sim.with_model(|m| {
            m.modify_pod(ns, POD, |pod| pod.metadata.finalizers = None)
                .map(|_| ())
                .expect("finalizer removed");
        }),
        None => {
            let pods: Api<Pod> = Api::namespaced(s.admin(), ns);
            pods.patch(
                POD,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await
            .expect("finalizer removed");
        }
    }
}

/// The condition the scenarios' node reports, and how the warning words it.
const NOT_READY_REASON: &str = "KubeletNotReady";

/// The agent's pod, held by [`FINALIZER`], with a 1 s grace, bound to a node that is not Ready;
/// returns the node's name. On the real server the Node is created here (`Ready=False`, reason
/// [`NOT_READY_REASON`]) and the pod is created bound to it, so no kubelet ever confirms its
/// containers stopped; on the simulator the model's kubelet runs the pod and the node it placed
/// it on is registered in the model with the same condition.
async fn stuck_on_a_not_ready_node(s: &Stage) -> String {
    let mut attempt = held_attempt(s);
    s.create_secret(&attempt.secret).await;
    if let Some(sim) = s.sim() {
        s.create_pod(&attempt.pod).await;
        until(s, "the pod is placed", |p| node_of(p).is_some()).await;
        let node = node_of(s.pod().await.as_ref()).expect("placed");
        sim.with_model(|m| {
            m.create_node(
                &node,
                Some(NodeReady::with("False", Some(NOT_READY_REASON))),
            )
            .expect("the node registers")
        });
        return node;
    }
    let node = format!("stuck-{}", s.namespace());
    let nodes: Api<Node> = Api::all(s.admin());
    let object: Node = serde_json::from_value(json!({"metadata": {"name": node}})).expect("a Node");
    nodes
        .create(&PostParams::default(), &object)
        .await
        .expect("the admin creates the Node");
    let status = json!({"status": {"conditions": [{
        "type": "Ready",
        "status": "False",
        "reason": NOT_READY_REASON,
        "message": "container runtime network not ready",
    }]}});
    nodes
        .patch_status(&node, &PatchParams::default(), &Patch::Merge(status))
        .await
        .expect("the admin writes the Node's status");
    attempt.pod.spec.as_mut().expect("a pod spec").node_name = Some(node.clone());
    s.create_pod(&attempt.pod).await;
    node
}

fn node_of(pod: Option<&Pod>) -> Option<String> {
    pod?.spec
        .as_ref()?
        .node_name
        .clone()
        .filter(|n| !n.is_empty())
}

/// Undeploy through `cluster` with a 6 s deadline: the warnings that say a pod is still
/// terminating, all warnings logged, and the operation's error (it always ends at the deadline:
/// the finalizer keeps the pod).
async fn undeploy_held(cluster: &Cluster) -> (Vec<String>, Vec<String>, String) {
    let captured = Captured::default();
    let options = UndeployOptions {
        wait: true,
        deadline: Duration::from_secs(6),
        poll: Duration::from_millis(200),
        ..UndeployOptions::default()
    };
    let outcome = {
        let _guard = tracing::dispatcher::set_default(&captured.dispatch());
        driver::undeploy(cluster, &agent(), &options).await
    };
    let error = outcome.expect_err("the finalizer keeps the pod past the deadline");
    let text = captured.text();
    let all: Vec<String> = text.lines().map(str::to_owned).collect();
    let stuck = all
        .iter()
        .filter(|l| l.contains("is still terminating"))
        .cloned()
        .collect();
    (stuck, all, error.to_string())
}

/// The node sentence of the warning for [`NOT_READY_REASON`].
fn not_ready_sentence(node: &str) -> String {
    format!("its node {node} is not Ready (Ready=False, {NOT_READY_REASON})")
}

/// Let the held pod go and clean up what the scenario created outside its namespace: on the real
/// server the pod's node has no kubelet, so the test (never apiary) removes the pod with grace 0
/// once the finalizer is gone, and deletes the Node.
async fn release(s: &Stage, node: &str) {
    remove_finalizer(s).await;
    if s.sim().is_none() {
        let pods: Api<Pod> = Api::namespaced(s.admin(), s.namespace());
        let _gone = pods
            .delete(POD, &DeleteParams::default().grace_period(0))
            .await;
        let nodes: Api<Node> = Api::all(s.admin());
        nodes
            .delete(node, &DeleteParams::default())
            .await
            .expect("the Node deleted");
    }
    until(s, "the pod goes", |p| p.is_none()).await;
}

on_both_backends!(
    /// A stuck pod on a node that is not Ready: the one warning names the finalizer, the node
    /// and its Ready condition with its reason, after one GET of the node.
    self::a_not_ready_node_is_named_in_the_warning
);

async fn a_not_ready_node_is_named_in_the_warning(s: &Stage) {
    let node = stuck_on_a_not_ready_node(s).await;
    let (stuck, _, _) = undeploy_held(&s.cluster()).await;
    assert_eq!(stuck.len(), 1, "{stuck:?}");
    assert!(stuck[0].contains(&not_ready_sentence(&node)), "{stuck:?}");
    assert!(
        stuck[0].contains(&format!("it has finalizers ({FINALIZER})")),
        "{stuck:?}"
    );
    assert!(
        stuck[0].contains(&format!("kubectl get node {node} -o yaml")),
        "{stuck:?}"
    );
    let reads: Vec<_> = s
        .of(Verb::Get, Resource::Nodes)
        .into_iter()
        .filter(|r| r.path == format!("/api/v1/nodes/{node}"))
        .collect();
    assert_eq!(reads.len(), 1, "one node read: {reads:?}");
    assert_eq!(reads[0].status, Some(200));
    release(s, &node).await;
}

on_both_backends!(
    /// As a user who may not read nodes: the node read is refused (403), the warning says
    /// nothing about the node, nothing else is warned and the error is the deadline's alone;
    /// with `rbac/apiary-node-reader.yaml` bound, the same user's warning names the condition.
    self::without_node_rights_nothing_is_said_about_the_node
);

async fn without_node_rights_nothing_is_said_about_the_node(s: &Stage) {
    let node = stuck_on_a_not_ready_node(s).await;
    let tap = Tap::new();
    let user = format!("apiary-stuck-{}", s.namespace());
    let cluster = match s.plane() {
        None => {
            let sim = s.sim().expect("a simulator stage");
            sim.faults().deny(Verb::Get, Some(Resource::Nodes));
            s.cluster_tapped(&tap)
        }
        Some(plane) => {
            grant_undeploy(s, &user).await;
            let mut config = plane.config(Identity::Admin);
            config.auth_info.impersonate = Some(user.clone());
            s.cluster_as(config, &tap)
        }
    };
    let (stuck, all, error) = undeploy_held(&cluster).await;
    assert_eq!(stuck.len(), 1, "{all:?}");
    assert_eq!(all.len(), 1, "no other warning: {all:?}");
    assert!(!stuck[0].contains("its node"), "{stuck:?}");
    assert!(!stuck[0].contains("Ready"), "{stuck:?}");
    assert!(!stuck[0].to_lowercase().contains("forbidden"), "{stuck:?}");
    assert!(
        stuck[0].contains(&format!("it has finalizers ({FINALIZER})")),
        "{stuck:?}"
    );
    assert!(!error.contains("node"), "{error}");
    let reads: Vec<_> = tap
        .requests()
        .into_iter()
        .filter(|r| r.is(Verb::Get, Resource::Nodes))
        .collect();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(reads[0].status, Some(403));

    // The node reader role is enough: bound, the same user is told about the node.
    match s.plane() {
        None => s.sim().expect("a simulator stage").faults().allow_all(),
        Some(_) => bind_node_reader(s, &user).await,
    }
    let (stuck, _, _) = undeploy_held(&cluster).await;
    assert_eq!(stuck.len(), 1, "{stuck:?}");
    assert!(stuck[0].contains(&not_ready_sentence(&node)), "{stuck:?}");
    if s.plane().is_some() {
        unbind_node_reader(s, &user).await;
    }
    release(s, &node).await;
}

/// A Role in the stage's namespace with what undeploy needs (pods get/list/watch/delete, Secrets
/// get/list/delete), bound to `user`: no rights on nodes.
async fn grant_undeploy(s: &Stage, user: &str) {
    let ns = s.namespace();
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "apiary-undeploy"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "delete"]},
        ],
    }))
    .expect("a Role");
    Api::<Role>::namespaced(s.admin(), ns)
        .create(&PostParams::default(), &role)
        .await
        .expect("Role created");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "apiary-undeploy"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "apiary-undeploy"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}],
    }))
    .expect("a RoleBinding");
    Api::<RoleBinding>::namespaced(s.admin(), ns)
        .create(&PostParams::default(), &binding)
        .await
        .expect("RoleBinding created");
}

/// The ClusterRole of `rbac/apiary-node-reader.yaml` (renamed after `user`, since the control
/// plane is shared) bound cluster-wide to `user`, as its header says.
async fn bind_node_reader(s: &Stage, user: &str) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../rbac/apiary-node-reader.yaml"
    );
    let text = std::fs::read_to_string(path).expect("rbac/apiary-node-reader.yaml is shipped");
    let mut role: ClusterRole = serde_yaml::from_str(&text).expect("a ClusterRole");
    role.metadata.name = Some(user.to_owned());
    Api::<ClusterRole>::all(s.admin())
        .create(&PostParams::default(), &role)
        .await
        .expect("ClusterRole created");
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}],
    }))
    .expect("a ClusterRoleBinding");
    Api::<ClusterRoleBinding>::all(s.admin())
        .create(&PostParams::default(), &binding)
        .await
        .expect("ClusterRoleBinding created");
}

/// Remove what [`bind_node_reader`] created (cluster-scoped objects outlive the namespace).
async fn unbind_node_reader(s: &Stage, user: &str) {
    let _binding = Api::<ClusterRoleBinding>::all(s.admin())
        .delete(user, &DeleteParams::default())
        .await;
    let _role = Api::<ClusterRole>::all(s.admin())
        .delete(user, &DeleteParams::default())
        .await;
}
