//! The paths between the happy ones, on the real node (crates/envtest/README.md § The real
//! node), where only a real kubelet shows them: a key missing from a referenced Secret reported
//! at once with the kubelet's words (deploy.md § Credentials from the cluster), and an agent that
//! ignores SIGTERM undeployed with `--grace-period` (deploy.md § Grace periods).
//!
//! Test-only code: it decides nothing about apiary and never prints a credential.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::node::{Scene, deploy_args, pod_name, running};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::serde::Deserialize;
use kube::api::{Api, PostParams};

/// `--env-secret VAR=creds/NO_SUCH_KEY` of a Secret that exists: the kubelet's
/// `CreateContainerConfigError` (`couldn't find key …`) ends the deploy at once, well inside its
/// timeout, naming the key and quoting the kubelet's words; the pod is kept, `status` shows the
/// same words, and no value is printed.
#[test]
fn a_missing_key_of_a_referenced_secret_fails_at_once() {
    let Some(scene) = Scene::new("missing-key") else {
        return;
    };
    let value = "sk-node-key-value-77c1";
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("creds".to_owned()),
            ..Default::default()
        },
        string_data: Some(BTreeMap::from([("TOKEN".to_owned(), value.to_owned())])),
        ..Secret::default()
    };
    let secrets: Api<Secret> = Api::namespaced(scene.admin.clone(), &scene.namespace);
    scene
        .rt
        .block_on(secrets.create(&PostParams::default(), &secret))
        .expect("the team's Secret");
    let agent = "missing key";
    let sleeper = "trap 'exit 0' TERM; sleep 3600 & wait";
    let timeout = Duration::from_secs(120);
    let run = scene.apiary(&deploy_args(
        agent,
        &scene.image(),
        sleeper,
        &["--env-secret", "X=creds/NO_SUCH_KEY", "--timeout", "120"],
    ));
    assert_eq!(run.code, 1, "{run:?}");
    let words = format!(
        "couldn't find key NO_SUCH_KEY in Secret {}/creds",
        &*scene.namespace
    );
    assert!(
        run.stderr.contains("secret creds has no key NO_SUCH_KEY"),
        "{run:?}"
    );
    assert!(run.stderr.contains(&words), "{run:?}");
    assert!(run.stderr.contains("The pod is kept"), "{run:?}");
    assert!(
        run.took < timeout / 2,
        "reported from the first read that shows it, not at the deadline: {run:?}"
    );
    let status = scene.apiary(&["status", agent]).ok();
    assert!(status.stdout.contains(&words), "{status:?}");
    for out in [&run.stdout, &run.stderr, &status.stdout, &status.stderr] {
        assert!(!out.contains(value), "a value was printed");
    }
    assert!(scene.pod(&pod_name(agent)).is_some(), "the pod is kept");
}

/// An agent whose PID 1 ignores SIGTERM (`sh -c '…; sleep …'`), undeployed with `--grace-period
/// 5s`: the delete carries the 5 s grace, the kubelet kills the container once it is over, the
/// undeploy succeeds, and the progress line says the container did not exit on SIGTERM instead
/// of suggesting a node fault.
#[test]
fn a_term_ignoring_agent_goes_within_its_shortened_grace() {
    let Some(scene) = Scene::new("grace") else {
        return;
    };
    let agent = "ignores term";
    let ignores = "echo started; sleep 3600";
    scene
        .apiary(&deploy_args(agent, &scene.image(), ignores, &[]))
        .ok();
    let name = pod_name(agent);
    assert!(running(scene.pod(&name).as_ref()));
    let run = scene
        .apiary(&["undeploy", agent, "--grace-period", "5s"])
        .ok();
    assert!(scene.pod(&name).is_none(), "{run:?}");
    assert!(
        run.stderr
            .contains("did not exit on SIGTERM within the grace period"),
        "{run:?}"
    );
    assert!(run.stderr.contains("(grace period 5 s)"), "{run:?}");
    assert!(!run.stderr.contains("the API shows no reason"), "{run:?}");
}

/// deploy.md § Grace periods, on the real kubelet v1.20: an undeploy of a pod whose image pull
/// is backing off lingers until the kubelet's periodic sandbox cleanup (22 to 70 s measured),
/// whatever the grace. The undeploy waits it out and succeeds, and once the pod outlives its
/// (here 5 s) grace the progress says its container never started, not a node fault.
#[test]
fn an_image_pull_back_off_undeploy_says_what_it_waits_for() {
    let Some(scene) = Scene::new("pull-back-off") else {
        return;
    };
    let agent = "never pulls";
    let missing = scene.node.info().images.missing.clone();
    let failed = scene.apiary(&deploy_args(agent, &missing, "sleep 3600", &[]));
    assert_eq!(failed.code, 1, "{failed:?}");
    assert!(failed.stderr.contains("has no image at"), "{failed:?}");
    let name = pod_name(agent);
    assert!(scene.pod(&name).is_some(), "the pod is kept for logs");
    let run = scene
        .apiary(&["undeploy", agent, "--grace-period", "5s"])
        .ok();
    assert!(scene.pod(&name).is_none(), "{run:?}");
    assert!(
        run.stderr.contains("its container never started"),
        "the lingering explained: {run:?}"
    );
    assert!(!run.stderr.contains("the API shows no reason"), "{run:?}");
}

/// deploy.md § Who refused it, on the real node: 16 concurrent deploys of one agent **as a user
/// bound to rbac/apiary-deployer.yaml's ClusterRole** (not `system:masters`), while the only API
/// server they talk to (a second apiserver of this test's own, on the node's etcd) is down when
/// they start and comes back while they retry. A restarted server refuses with RBAC's words
/// until its authorization caches have loaded, even once `/readyz` is ok; a deploy that saw the
/// server down takes those refusals for the restart's and waits them out, until its deadline
/// rather than one request's 30 s budget (on the 2-core machine under load the restart can
/// outlast the budget). Every deploy exits 0 with the one pod's name; one pod, one Secret.
#[test]
fn concurrent_deploys_as_the_deployer_survive_an_apiserver_restart() {
    let Some(scene) = Scene::new("restart-deployer") else {
        return;
    };
    bind_the_deployer(&scene, "limited");
    let apiserver = scene.node.private_apiserver();
    let token = std::fs::read_to_string(scene.node.info().dir.join("certs/limited.token"))
        .expect("the limited user's token");
    let yaml = scene
        .node
        .info()
        .kubeconfig_yaml(token.trim(), &scene.namespace)
        .replace(&scene.node.info().server_url, apiserver.url());
    let kubeconfig = scene.home.path().join("kubeconfig-limited");
    std::fs::write(&kubeconfig, yaml).expect("kubeconfig written");
    apiserver.stop();
    deploys_across_a_restart(&scene, &kubeconfig, "restarted twice", || {
        std::thread::sleep(Duration::from_millis(500));
        apiserver.start();
    });
}

/// The same race as `system:masters` (which skips RBAC), with the server stopped 0.2 s into it:
/// an admission plugin's own lookup failing while the server shuts down (`Get "…/limitranges":
/// dial tcp …: connection refused`) is a transient refusal, retried, not a missing role.
#[test]
fn concurrent_deploys_as_an_admin_survive_a_restart_early_in_the_race() {
    let Some(scene) = Scene::new("restart-early") else {
        return;
    };
    let apiserver = scene.node.private_apiserver();
    let kubeconfig = scene.node.kubeconfig_on(apiserver.url(), &scene.namespace);
    deploys_across_a_restart(&scene, &kubeconfig, "restarted early", || {
        std::thread::sleep(Duration::from_millis(200));
        apiserver.stop();
        std::thread::sleep(Duration::from_millis(500));
        apiserver.start();
    });
}

/// Sixteen deploys of `agent` through `kubeconfig`, with `restart` run while they race: every
/// deploy exits 0 with the one pod's name, and one running pod with one container and one
/// Secret is left (none by a loser).
fn deploys_across_a_restart(
    scene: &Scene,
    kubeconfig: &std::path::Path,
    agent: &str,
    restart: impl FnOnce(),
) {
    let image = scene.image();
    let children: Vec<_> = (0..16)
        .map(|_| scene.spawn_with(kubeconfig, &deploy_args(agent, &image, SLEEPER_TRAP, &[])))
        .collect();
    restart();
    let runs: Vec<_> = children
        .into_iter()
        .map(|(child, began)| crate::common::node::finish(child, began))
        .collect();
    let name = pod_name(agent);
    for run in &runs {
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, format!("{name}\n"), "{run:?}");
    }
    let pods = scene.pods();
    assert_eq!(pods.len(), 1, "{pods:?}");
    assert!(running(Some(&pods[0])));
    let containers = pods[0].spec.as_ref().map_or(0, |s| s.containers.len());
    assert_eq!(containers, 1);
    let secrets: Api<Secret> = Api::namespaced(scene.admin.clone(), &scene.namespace);
    let left = scene
        .rt
        .block_on(secrets.list(&kube::api::ListParams::default()))
        .expect("list Secrets")
        .items;
    let own: Vec<_> = left
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .filter(|n| n.starts_with(&name))
        .collect();
    assert_eq!(own.len(), 1, "one Secret, none left by a loser: {own:?}");
    eprintln!(
        "figures: 16 deploys of {agent:?} across an apiserver restart, slowest {:?}",
        runs.iter().map(|r| r.took).max()
    );
}

/// A container that exits on SIGTERM (so the scene's cleanup is quick).
const SLEEPER_TRAP: &str = "trap 'exit 0' TERM; sleep 3600 & wait";

/// Bind `user` in the scene's namespace to `rbac/apiary-deployer.yaml`'s ClusterRole, created
/// from the shipped manifest when the cluster does not have it yet.
fn bind_the_deployer(scene: &Scene, user: &str) {
    use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../rbac/apiary-deployer.yaml"),
    )
    .expect("rbac/apiary-deployer.yaml");
    let role: ClusterRole = serde_yaml::Deserializer::from_str(&manifest)
        .filter_map(|doc| serde_yaml::Value::deserialize(doc).ok())
        .filter(|doc| doc["kind"] == "ClusterRole" && doc["metadata"]["name"] == "apiary-deployer")
        .find_map(|doc| serde_yaml::from_value(doc).ok())
        .expect("the deployer ClusterRole");
    let roles: Api<ClusterRole> = Api::all(scene.admin.clone());
    match scene
        .rt
        .block_on(roles.create(&PostParams::default(), &role))
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.reason == "AlreadyExists" => {}
        Err(error) => panic!("create the deployer ClusterRole: {error}"),
    }
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("apiary-{user}")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "apiary-deployer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))
    .expect("a RoleBinding");
    let bindings: Api<RoleBinding> = Api::namespaced(scene.admin.clone(), &scene.namespace);
    scene
        .rt
        .block_on(bindings.create(&PostParams::default(), &binding))
        .expect("bind the deployer");
}
