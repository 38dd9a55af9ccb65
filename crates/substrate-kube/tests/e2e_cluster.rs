//! Cluster tests: the real driver with the real `Cluster` against the cluster of the current
//! kubeconfig (a kind cluster set up from `e2e/kind/`, see README § Cluster tests on kind), in
//! namespace `apiary-e2e`. Every test is `#[ignore]`d: they compile in CI and never run there;
//! `cargo xtask e2e` runs them.
//!
//! The image must be public and digest-pinned and contain `sleep` and `sh` (busybox works). Set
//! it in `APIARY_E2E_IMAGE`, for example the digest `docker buildx imagetools inspect busybox`
//! prints: `APIARY_E2E_IMAGE=docker.io/library/busybox@sha256:<64 hex> cargo xtask e2e`. The
//! tests refuse to guess a digest.
//!
//! Layer: integration tests against a real apiserver. They decide nothing, use unique agent
//! names per run, and undeploy what they deployed; they must never touch any namespace but
//! `apiary-e2e`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use apiary_classify::status::StatusState;
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::driver::{self, DeployError, DeployOptions, UndeployOptions};
use apiary_substrate::naming::AgentIdentity;
use apiary_substrate_kube::Cluster;
use apiary_substrate_kube::{ClientOptions, connect, install_crypto_provider};

/// The namespace of `e2e/kind/namespace.yaml`.
const NS: &str = "apiary-e2e";

/// A unique agent name for this run.
fn agent(test: &str) -> AgentIdentity {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    AgentIdentity::new(&format!("e2e {test} {nanos:08x}")).expect("valid agent name")
}

/// The digest-pinned image under test, from `APIARY_E2E_IMAGE`.
fn e2e_image() -> String {
    std::env::var("APIARY_E2E_IMAGE").unwrap_or_else(|_| {
        panic!(
            "set APIARY_E2E_IMAGE to a public digest-pinned image with sleep and sh, e.g. \
             docker.io/library/busybox@sha256:<64 hex> (see README § Cluster tests on kind)"
        )
    })
}

/// A configuration running `command` in the e2e image.
fn config(agent: &AgentIdentity, image: &str, command: &[&str]) -> ValidConfig {
    let mut config = DeployConfig::new(NS, image);
    config.command = Some(command.iter().map(|s| (*s).to_owned()).collect());
    config.cpu_request = "50m".to_owned();
    config.memory_request = "32Mi".to_owned();
    config.cpu_limit = "200m".to_owned();
    config.memory_limit = "64Mi".to_owned();
    config.timeout = Duration::from_secs(300);
    config.validate(agent).expect("valid configuration")
}

/// A `Cluster` for the current kubeconfig's cluster, in [`NS`].
async fn cluster() -> Cluster {
    install_crypto_provider();
    let connection = connect(&ClientOptions::default())
        .await
        .expect("the current kubeconfig is usable");
    Cluster::new(connection.client, NS)
}

/// Remove everything of `agent`, so a failed run leaves nothing behind.
async fn clean_up(cluster: &Cluster, agent: &AgentIdentity) {
    driver::undeploy(cluster, agent, &UndeployOptions::default())
        .await
        .expect("undeploy");
}

/// deploy.md § What apiary guarantees: a deploy returns the started pod's name, `status` sees
/// it started with a matching intent, a second deploy is a no-op returning the same name, and
/// undeploy deletes the pod (waiting for it) and its Secret, leaving the agent absent.
#[tokio::test]
#[ignore = "needs a cluster: run cargo xtask e2e against kind, see README"]
async fn e2e_deploy_status_noop_undeploy() {
    let cluster = cluster().await;
    let agent = agent("lifecycle");
    let config = config(&agent, &e2e_image(), &["sleep", "3600"]);
    let options = DeployOptions::for_config(&config);

    let deployed = driver::deploy(&cluster, &config, &options)
        .await
        .expect("deployed");
    assert_eq!(deployed.pod, agent.pod_name());
    assert!(deployed.intent_matches);

    let status = driver::status(&cluster, &agent, Some(&config))
        .await
        .expect("status");
    assert_eq!(status.state, StatusState::Started);
    assert_eq!(status.intent_matches, Some(true));
    assert!(status.secret.is_some_and(|s| s.exists));

    let again = driver::deploy(&cluster, &config, &options)
        .await
        .expect("no-op");
    assert_eq!(again.pod, deployed.pod);

    let report = driver::undeploy(&cluster, &agent, &UndeployOptions::default())
        .await
        .expect("undeployed");
    assert!(report.pod_deleted && report.waited, "{report:?}");
    assert_eq!(report.secrets.len(), 1, "{report:?}");
    let status = driver::status(&cluster, &agent, None)
        .await
        .expect("status");
    assert_eq!(status.state, StatusState::Absent);
}

/// R16 on a real kubelet: a container that exits at once is reported once (E2 with its exit
/// code) and left in place as evidence; undeploy then removes it.
#[tokio::test]
#[ignore = "needs a cluster: run cargo xtask e2e against kind, see README"]
async fn e2e_crash_reported_once() {
    let cluster = cluster().await;
    let agent = agent("crash");
    let config = config(&agent, &e2e_image(), &["sh", "-c", "exit 3"]);
    let error = driver::deploy(&cluster, &config, &DeployOptions::for_config(&config))
        .await
        .expect_err("the container exits");
    assert!(
        matches!(error, DeployError::CreatedPodFailed { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("exited with code 3"), "{error}");
    let status = driver::status(&cluster, &agent, None)
        .await
        .expect("status");
    assert_eq!(status.state, StatusState::Terminated);
    clean_up(&cluster, &agent).await;
}

/// R10 on a real registry: a digest that does not exist in the image's repository is reported
/// at once as a pull failure (E3), deleting nothing; undeploy then removes the pod.
#[tokio::test]
#[ignore = "needs a cluster: run cargo xtask e2e against kind, see README"]
async fn e2e_pull_failure_reported() {
    let cluster = cluster().await;
    let agent = agent("pull");
    let image = e2e_image();
    let repository = image.split('@').next().expect("a repository");
    let missing = format!("{repository}@sha256:{}", "0".repeat(64));
    let config = config(&agent, &missing, &["sleep", "3600"]);
    let error = driver::deploy(&cluster, &config, &DeployOptions::for_config(&config))
        .await
        .expect_err("the pull fails");
    assert!(
        matches!(error, DeployError::PullFailing { .. }),
        "{error:?}"
    );
    let status = driver::status(&cluster, &agent, Some(&config))
        .await
        .expect("status");
    assert_eq!(status.state, StatusState::PullFailing);
    clean_up(&cluster, &agent).await;
}
