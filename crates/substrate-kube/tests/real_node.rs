//! The real-node tier of the library: the real driver with the real `Cluster` against a real
//! kubelet v1.20.2 running real containers (crates/envtest/README.md § The real node), in
//! namespace `apiary-e2e`, set up from `e2e/kind/namespace.yaml` and `rbac/apiary-deployer.yaml`
//! exactly as a user sets up a kind cluster. Without a node (`APIARY_NODE` unset) each test
//! returns at once after one line; under `APIARY_NODE_REQUIRED=1` it fails instead. These were
//! the kind tests; they run here on every CI run, and the kind manifests stay for users.
//!
//! The first-version tests (deploy, status, no-op, undeploy, a crash, a pull failure) run as the
//! node's admin. The day-two tests (list, logs, expiry, replace, min-running, a pod that will not
//! go away) run as the ServiceAccount `apiary-e2e-deployer` of `e2e/kind/namespace.yaml`, bound
//! to `rbac/apiary-deployer.yaml`'s ClusterRole, through the admin's impersonation (authorized by
//! RBAC exactly like the account's own token), so they also prove that role sufficient on a real
//! cluster; `gc --all` runs as the CronJob's ServiceAccount of `deploy/cronjob-gc.yaml`. The
//! admin only stages what apiary never does (a foreign pod, a finalizer) and installs that
//! account. Their requests go through the client-side tap of the real-server tier, so the tests
//! assert fences and the absence of any forced delete on the wire.
//!
//! Layer: integration tests against a real apiserver and kubelet. They decide nothing, use
//! unique agent names per run, and undeploy what they deployed; they never touch any namespace
//! but `apiary-e2e`.

#[allow(
    dead_code,
    reason = "the tap's holds and watch cuts serve the real-server tier, not these tests"
)]
#[path = "real_support/tap.rs"]
mod tap;

#[path = "fixtures/mod.rs"]
mod fixtures;

use std::num::NonZeroU32;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use apiary_apiserver_sim::{LoggedRequest, Resource, Verb};
use apiary_classify::expiry::{ANNOTATION_EXPIRES_AT, format_instant};
use apiary_classify::inventory::summarize_image;
use apiary_classify::status::StatusState;
use apiary_substrate::build::build_attempt;
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::driver::{
    self, DeployError, DeployOptions, EXPIRE_DEADLINE, ListOptions, RENEW_BACKOFF, RenewOptions,
    UndeployOptions,
};
use apiary_substrate::naming::{AgentIdentity, Generation};
use apiary_substrate_kube::Cluster;
use apiary_substrate_kube::{
    ClientOptions, LogsEnd, LogsOptions, PodLogs, connect, install_crypto_provider,
};
use fixtures::{Captured, delete_fence, documents, shipped};
use k8s_openapi::api::core::v1::{Pod, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use tap::Tap;

/// The namespace of `e2e/kind/namespace.yaml`.
const NS: &str = "apiary-e2e";
/// The ServiceAccount of `e2e/kind/namespace.yaml` bound to the `apiary-deployer` ClusterRole.
const DEPLOYER: &str = "apiary-e2e-deployer";
/// The CronJob's ServiceAccount of `deploy/cronjob-gc.yaml`.
const GC_ACCOUNT: &str = "apiary-gc";
/// How long any wait of these tests may take (an image pull included) before it fails as hung.
const HANG: Duration = Duration::from_secs(180);
/// A container that runs until it is told to stop, and stops at once on `SIGTERM` (a plain
/// `sleep` as PID 1 ignores it and would hold every graceful delete for the whole 60 s grace).
const SLEEPER: &[&str] = &["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"];

/// A unique agent name for this run.
fn agent(test: &str) -> AgentIdentity {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    AgentIdentity::new(&format!("e2e {test} {nanos:08x}")).expect("valid agent name")
}

/// The node of this test run (the caller checked [`on_node`] first).
fn node() -> &'static apiary_envtest::node::NodeHandle {
    apiary_envtest::node::shared().expect("on_node was checked first")
}

/// Whether the node tier runs; if it does, the namespace, the deployer ClusterRole and the
/// objects of `e2e/kind/namespace.yaml` exist (created once, as a user applies them to kind).
async fn on_node() -> bool {
    let Some(node) = apiary_envtest::node::shared() else {
        return false;
    };
    let client = node.client().await;
    let mut manifests = fixtures::documents("rbac/apiary-deployer.yaml");
    manifests.extend(fixtures::documents("e2e/kind/namespace.yaml"));
    for doc in manifests.into_iter().filter(|d| !d.is_null()) {
        let object: kube::api::DynamicObject =
            serde_json::from_value(doc.clone()).expect("a manifest object");
        let kind = doc["kind"].as_str().expect("a kind");
        let (group, version) = match doc["apiVersion"]
            .as_str()
            .expect("an apiVersion")
            .split_once('/')
        {
            Some((group, version)) => (group.to_owned(), version.to_owned()),
            None => (
                String::new(),
                doc["apiVersion"].as_str().unwrap_or("v1").to_owned(),
            ),
        };
        let resource = kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            &group, &version, kind,
        ));
        let api: Api<kube::api::DynamicObject> = match object.metadata.namespace.as_deref() {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        match api.create(&PostParams::default(), &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(other) => panic!("could not apply {kind}: {other}"),
        }
    }
    // Pods are refused until the controller manager has made the namespace's default account.
    let accounts: Api<ServiceAccount> = Api::namespaced(client, NS);
    let deadline = Instant::now() + HANG;
    while accounts.get_opt("default").await.ok().flatten().is_none() {
        assert!(
            Instant::now() < deadline,
            "no default ServiceAccount in {NS}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

/// The digest-pinned image under test: the node's busybox image.
fn e2e_image() -> String {
    node().info().images.agent.clone()
}

/// The unvalidated configuration running `command` in the e2e image, small enough for kind.
fn draft(image: &str, command: &[&str]) -> DeployConfig {
    let mut config = DeployConfig::new(NS, image);
    config.command = Some(command.iter().map(|s| (*s).to_owned()).collect());
    config.cpu_request = "50m".to_owned();
    config.memory_request = "32Mi".to_owned();
    config.cpu_limit = "200m".to_owned();
    config.memory_limit = "64Mi".to_owned();
    config.timeout = Duration::from_secs(300);
    config
}

/// A configuration running `command` in the e2e image.
fn config(agent: &AgentIdentity, image: &str, command: &[&str]) -> ValidConfig {
    draft(image, command)
        .validate(agent)
        .expect("valid configuration")
}

/// A `Cluster` for the node's admin, in [`NS`].
async fn cluster() -> Cluster {
    let kubeconfig = node().kubeconfig(NS);
    let connection = connect(&ClientOptions {
        kubeconfig: Some(kubeconfig),
        ..ClientOptions::default()
    })
    .await
    .expect("the node's kubeconfig is usable");
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
async fn e2e_deploy_status_noop_undeploy() {
    if !on_node().await {
        return;
    }
    let cluster = cluster().await;
    let agent = agent("lifecycle");
    let config = config(&agent, &e2e_image(), SLEEPER);
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
/// code) and left in place as evidence; undeploy then removes it. A 10 s window makes the report
/// certain: the real kubelet can publish `running` for a container that lives a few
/// milliseconds, and keep it `running` for more than 2 s after the exit on a loaded machine (both
/// seen on the node: the kind-era version of this test got a success without a window, and once
/// with a 2 s one), and a window of reads that all say running is a success (deploy.md § Staying
/// up).
#[tokio::test]
async fn e2e_crash_reported_once() {
    if !on_node().await {
        return;
    }
    let cluster = cluster().await;
    let agent = agent("crash");
    let config = config(&agent, &e2e_image(), &["sh", "-c", "exit 3"]);
    let options = DeployOptions::for_config(&config).staying_up(Duration::from_secs(10));
    let error = driver::deploy(&cluster, &config, &options)
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
async fn e2e_pull_failure_reported() {
    if !on_node().await {
        return;
    }
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

// ----- Day two: list, logs, expiry, replace, staying up, a pod that will not go away -----

/// The node admin's configuration as apiary's client construction leaves it (kube's own
/// retries off).
async fn kube_config() -> kube::Config {
    install_crypto_provider();
    let kubeconfig = kube::config::Kubeconfig::read_from(node().kubeconfig(NS))
        .expect("the node's kubeconfig reads");
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("the node's kubeconfig is usable");
    config.default_retry = false;
    config
}

/// The kubeconfig user's client: it stages and inspects what apiary never does.
async fn admin() -> kube::Client {
    kube::Client::try_from(kube_config().await).expect("a client for the kubeconfig")
}

/// The kubeconfig's configuration acting as ServiceAccount `account` of [`NS`].
async fn as_account(account: &str) -> kube::Config {
    let mut config = kube_config().await;
    config.auth_info.impersonate = Some(format!("system:serviceaccount:{NS}:{account}"));
    config.auth_info.impersonate_groups = Some(vec![
        "system:serviceaccounts".to_owned(),
        format!("system:serviceaccounts:{NS}"),
        "system:authenticated".to_owned(),
    ]);
    config
}

/// A client from `config` with `tap` in front of its service stack.
fn tapped_client(config: kube::Config, tap: &Tap) -> kube::Client {
    kube::client::ClientBuilder::try_from(config)
        .expect("a client stack builds from the configuration")
        .with_layer(&tap.layer())
        .build()
}

/// A `Cluster` in [`NS`] acting as [`DEPLOYER`], every request logged by `tap`.
async fn deployer(tap: &Tap) -> Cluster {
    Cluster::new(tapped_client(as_account(DEPLOYER).await, tap), NS)
}

fn pods(client: &kube::Client) -> Api<Pod> {
    Api::namespaced(client.clone(), NS)
}

/// The pod named `name`, read by the kubeconfig user.
async fn pod_named(client: &kube::Client, name: &str) -> Option<Pod> {
    pods(client).get_opt(name).await.expect("pod read")
}

fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().expect("a stored pod has a uid")
}

/// The value of the selector label `apiary.dev/agent` of `agent` (from its own selector).
fn agent_label(agent: &AgentIdentity) -> String {
    let selector = agent.selector();
    let first = selector.split(',').next().expect("a term");
    first.split_once('=').expect("key=value").1.to_owned()
}

/// Logged requests of `verb` on `resource` whose path ends with `/<name>`.
fn on_object(log: &[LoggedRequest], verb: Verb, resource: Resource, name: &str) -> usize {
    log.iter()
        .filter(|r| r.is(verb, resource) && r.path.ends_with(&format!("/{name}")))
        .count()
}

/// No request of `log` forces a delete: no grace override in a body or a query.
fn assert_never_forced(log: &[LoggedRequest]) {
    for request in log.iter().filter(|r| r.method == "DELETE") {
        assert!(
            !request.body.contains("gracePeriodSeconds") && !request.query.contains("gracePeriod"),
            "a delete overrode the grace period: {} {}?{} {}",
            request.method,
            request.path,
            request.query,
            request.body
        );
    }
}

/// deploy.md § list on a real cluster: two deployed agents are listed by one paginated LIST per
/// kind (one object per page here, so the real server's `continue` tokens are followed), sorted,
/// started, with restarts 0, the image's repository and short digest, their Secret and no
/// expiry; a copy of one agent's pod under another name carries its labels and annotations but
/// is skipped and counted, never listed.
#[tokio::test]
async fn e2e_list_two_agents_skips_a_foreign_pod() {
    if !on_node().await {
        return;
    }
    let tap = Tap::new();
    let cluster = deployer(&tap).await;
    let admin = admin().await;
    let image = e2e_image();
    let first = agent("list a");
    let second = agent("list b");
    for agent in [&first, &second] {
        let config = config(agent, &image, SLEEPER);
        driver::deploy(&cluster, &config, &DeployOptions::for_config(&config))
            .await
            .expect("deployed");
    }
    // A copy under a foreign name: apiary's labels and the first agent's claim, not its pod.
    let mut copy = build_attempt(&config(&first, &image, SLEEPER), Generation::from_u32(7)).pod;
    let foreign = format!("apiary-e2e-not-its-name-{}", &first.id()[..12]);
    copy.metadata.name = Some(foreign.clone());
    pods(&admin)
        .create(&PostParams::default(), &copy)
        .await
        .expect("the foreign pod is staged");

    tap.clear();
    let options = ListOptions {
        selector: Some(format!(
            "apiary.dev/agent in ({},{})",
            agent_label(&first),
            agent_label(&second)
        )),
        include_absent: true,
        page_size: NonZeroU32::new(1).expect("1"),
    };
    let listed = driver::list(&cluster, &options).await;
    let log = tap.requests();

    let _ = pods(&admin)
        .delete(&foreign, &DeleteParams::default())
        .await;
    clean_up(&cluster, &first).await;
    clean_up(&cluster, &second).await;

    let inventory = listed.expect("the listings succeed");
    let names: Vec<&str> = inventory.rows.iter().map(|r| r.agent.as_str()).collect();
    assert_eq!(names, [first.name(), second.name()]);
    assert_eq!(inventory.skipped_pods, 1, "{inventory:?}");
    let summary = summarize_image(&image);
    for (row, agent) in inventory.rows.iter().zip([&first, &second]) {
        assert_eq!(row.pod.as_deref(), Some(agent.pod_name().as_str()));
        assert_eq!(row.state, StatusState::Started, "{row:?}");
        assert_eq!(row.restarts, Some(0), "{row:?}");
        assert_eq!(row.image.as_ref(), Some(&summary), "{row:?}");
        assert_eq!(row.secrets, 1, "{row:?}");
        assert!(row.age_seconds.is_some(), "the server's Date: {row:?}");
        assert_eq!(row.expires_at_unix, None, "{row:?}");
    }
    // Three pods and two Secrets, one per page: only the pages of one LIST per kind, each
    // asking for one object (a real server may end a listing with an empty page when other
    // objects of the namespace follow the last match, so the page counts are lower bounds).
    let lists = |resource| log.iter().filter(|r| r.is(Verb::List, resource)).count();
    assert!(lists(Resource::Pods) >= 3, "{log:?}");
    assert!(lists(Resource::Secrets) >= 2, "{log:?}");
    assert_eq!(
        lists(Resource::Pods) + lists(Resource::Secrets),
        log.len(),
        "only the paged lists, no per-agent read: {log:?}"
    );
    assert!(
        log.iter()
            .all(|r| r.query_param("limit").as_deref() == Some("1")),
        "{log:?}"
    );
}

/// deploy.md § logs on a real kubelet: the agent container's lines, in order, as it wrote them;
/// `-f` follows a running container until it ends (the line written after the follow began
/// included) and ends as complete; `--tail 1` is the last line only.
#[tokio::test]
async fn e2e_logs_and_follow_until_the_container_ends() {
    if !on_node().await {
        return;
    }
    let tap = Tap::new();
    let cluster = deployer(&tap).await;
    let agent = agent("logs");
    let config = config(
        &agent,
        &e2e_image(),
        &[
            "sh",
            "-c",
            "echo 'line one'; echo 'line two'; sleep 8; echo 'line three: the end'",
        ],
    );
    driver::deploy(&cluster, &config, &DeployOptions::for_config(&config))
        .await
        .expect("deployed while it sleeps");
    let logs = PodLogs::new(tapped_client(as_account(DEPLOYER).await, &tap), NS);
    let started = Instant::now();
    let mut followed = Vec::new();
    let end = logs
        .read(
            &agent,
            &LogsOptions {
                follow: true,
                ..LogsOptions::default()
            },
            &mut |line: &str| followed.push(line.to_owned()),
        )
        .await;
    let waited = started.elapsed();
    let mut tail = Vec::new();
    let tailed = logs
        .read(
            &agent,
            &LogsOptions {
                tail_lines: Some(1),
                ..LogsOptions::default()
            },
            &mut |line: &str| tail.push(line.to_owned()),
        )
        .await;
    clean_up(&cluster, &agent).await;

    assert_eq!(end, Ok(LogsEnd::Complete));
    assert_eq!(followed, ["line one", "line two", "line three: the end"]);
    assert!(waited < HANG, "the follow ended with the container");
    assert_eq!(tailed, Ok(LogsEnd::Complete));
    assert_eq!(tail, ["line three: the end"]);
}

/// Create `object` unless it exists (a rerun finds the previous run's).
async fn create_once<K>(api: &Api<K>, object: &K)
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(other) => panic!("could not create {object:?}: {other}"),
    }
}

/// The ServiceAccount, Role and RoleBinding of `deploy/cronjob-gc.yaml` (never the CronJob), in
/// [`NS`], created by the kubeconfig user.
async fn install_gc_account(admin: &kube::Client) {
    let account: ServiceAccount =
        serde_json::from_value(shipped("ServiceAccount", NS)).expect("ServiceAccount");
    create_once(&Api::namespaced(admin.clone(), NS), &account).await;
    let role: Role = serde_json::from_value(shipped("Role", NS)).expect("Role");
    create_once(&Api::namespaced(admin.clone(), NS), &role).await;
    let binding: RoleBinding =
        serde_json::from_value(shipped("RoleBinding", NS)).expect("RoleBinding");
    create_once(&Api::namespaced(admin.clone(), NS), &binding).await;
}

/// deploy.md § Expiry on a real cluster: `deploy --ttl` stamps the expiry from the apiserver's
/// clock (a 5 s TTL, which only the CLI's 1 min floor forbids); `renew` moves another agent's
/// expiry by a guarded merge patch; once the short one has expired on the server's clock,
/// `gc --all` as the CronJob's ServiceAccount plans it in a dry run (reads only, the pod stays),
/// then collects exactly it: one fenced, graceful pod delete (the uid of the pod deployed, no
/// grace override), the pod gone when it returns, then its Secret; the renewed agent is kept.
#[tokio::test]
async fn e2e_ttl_renew_and_gc_all_collects_the_expired_agent() {
    if !on_node().await {
        return;
    }
    let tap = Tap::new();
    let cluster = deployer(&tap).await;
    let admin = admin().await;
    install_gc_account(&admin).await;
    let image = e2e_image();
    let short = agent("ttl short");
    let long = agent("ttl long");
    let short_config = driver::stamp_expiry(&cluster, config(&short, &image, SLEEPER), 5)
        .await
        .expect("the server's clock is read");
    let long_config = driver::stamp_expiry(&cluster, config(&long, &image, SLEEPER), 3_600)
        .await
        .expect("the server's clock is read");
    for config in [&short_config, &long_config] {
        driver::deploy(&cluster, config, &DeployOptions::for_config(config))
            .await
            .expect("deployed");
    }
    let short_uid = uid(&pod_named(&admin, &short.pod_name())
        .await
        .expect("deployed"));
    let short_at = short_config.expires_at().expect("stamped");
    let stamped = pod_named(&admin, &short.pod_name())
        .await
        .and_then(|p| p.metadata.annotations)
        .and_then(|a| a.get(ANNOTATION_EXPIRES_AT).cloned());
    assert_eq!(stamped, Some(format_instant(short_at)));

    let renewed = driver::renew(
        &cluster,
        &long,
        &RenewOptions {
            ttl_secs: 7_200,
            deadline: Duration::from_secs(60),
            backoff: RENEW_BACKOFF,
        },
    )
    .await
    .expect("renewed");
    assert_eq!(renewed.pod, long.pod_name());
    assert_eq!(renewed.previous, long_config.expires_at());
    assert_eq!(renewed.expires_at, renewed.server_now + 7_200);
    let moved = pod_named(&admin, &long.pod_name())
        .await
        .and_then(|p| p.metadata.annotations)
        .and_then(|a| a.get(ANNOTATION_EXPIRES_AT).cloned());
    assert_eq!(moved, Some(format_instant(renewed.expires_at)));

    // Until the short TTL has passed on the server's clock (never the local one).
    let started = Instant::now();
    loop {
        let now = driver::server_clock(&cluster, &short)
            .await
            .expect("listed")
            .expect("a real apiserver sends Date");
        if now > short_at {
            break;
        }
        assert!(
            started.elapsed() < HANG,
            "the server's clock never passed {short_at}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let gc_tap = Tap::new();
    let gc = Cluster::new(tapped_client(as_account(GC_ACCOUNT).await, &gc_tap), NS);
    let dry = driver::gc_all(&gc, true, EXPIRE_DEADLINE, None).await;
    let dry_log = gc_tap.requests();
    let after_dry = pod_named(&admin, &short.pod_name()).await;
    gc_tap.clear();
    let done = driver::gc_all(&gc, false, EXPIRE_DEADLINE, None).await;
    let gc_log = gc_tap.requests();
    let short_after = pod_named(&admin, &short.pod_name()).await;
    let short_status = driver::status(&cluster, &short, None).await;
    let long_status = driver::status(&cluster, &long, None).await;
    clean_up(&cluster, &short).await;
    clean_up(&cluster, &long).await;

    let dry = dry.expect("discovery as the CronJob's account");
    let planned = |all: &driver::GcAll, agent: &AgentIdentity| {
        let entry = all
            .agents
            .iter()
            .find(|a| a.agent.name() == agent.name())
            .unwrap_or_else(|| panic!("{} visited: {all:?}", agent.name()));
        assert!(!entry.failed(), "{entry:?}");
        entry
            .expired
            .clone()
            .expect("the collection ran")
            .expect("the collection succeeded")
    };
    let dry_short = planned(&dry, &short);
    assert!(dry_short.dry_run);
    assert_eq!(dry_short.pod, Some(short.pod_name()));
    assert_eq!(
        planned(&dry, &long).pod,
        None,
        "the renewed agent is not expired"
    );
    assert!(
        dry_log.iter().all(|r| r.method == "GET"),
        "a dry run reads only"
    );
    assert!(after_dry.is_some_and(|p| uid(&p) == short_uid));

    let done = done.expect("gc --all as the CronJob's account");
    let collected = planned(&done, &short);
    assert_eq!(collected.pod, Some(short.pod_name()));
    assert_eq!(collected.secrets.len(), 1, "{collected:?}");
    assert!(
        collected.secrets[0].starts_with(&short.pod_name()),
        "{collected:?}"
    );
    assert_eq!(planned(&done, &long).pod, None);
    assert!(
        gc_log.iter().all(|r| r.status != Some(403)),
        "the shipped Role is sufficient"
    );
    assert_never_forced(&gc_log);
    let deletes: Vec<&LoggedRequest> = gc_log
        .iter()
        .filter(|r| {
            r.is(Verb::Delete, Resource::Pods)
                && r.path.ends_with(&format!("/{}", short.pod_name()))
        })
        .collect();
    assert_eq!(deletes.len(), 1, "one fenced delete of the expired pod");
    assert_eq!(delete_fence(deletes[0]).0, short_uid);
    assert_eq!(
        on_object(&gc_log, Verb::Delete, Resource::Pods, &long.pod_name()),
        0
    );
    assert!(short_after.is_none(), "gc waited for the pod to go");
    assert_eq!(short_status.expect("status").state, StatusState::Absent);
    assert_eq!(long_status.expect("status").state, StatusState::Started);
}

/// deploy.md § Replacing a live agent on a real cluster: `--replace` with the configuration the
/// started pod already has changes nothing (same uid, no mutation); a plain deploy of another
/// configuration keeps the started pod and reports the difference; `--replace` with it deletes
/// that pod once, fenced by its uid and graceful, waits for it, then creates the new pod, which
/// records the new intent.
#[tokio::test]
async fn e2e_replace_rolls_a_new_configuration_and_is_a_no_op_otherwise() {
    if !on_node().await {
        return;
    }
    let tap = Tap::new();
    let cluster = deployer(&tap).await;
    let admin = admin().await;
    let image = e2e_image();
    let agent = agent("replace");
    let original = config(&agent, &image, SLEEPER);
    let changed = {
        let mut draft = draft(&image, SLEEPER);
        draft.cpu_limit = "300m".to_owned();
        draft.validate(&agent).expect("valid configuration")
    };
    assert_ne!(original.fingerprint(), changed.fingerprint());
    let plain = DeployOptions::for_config(&original);
    let replacing = plain.replacing(true);

    driver::deploy(&cluster, &original, &plain)
        .await
        .expect("deployed");
    let old = uid(&pod_named(&admin, &agent.pod_name())
        .await
        .expect("deployed"));
    tap.clear();
    let same = driver::deploy(&cluster, &original, &replacing).await;
    let same_log = tap.requests();
    let after_same = pod_named(&admin, &agent.pod_name()).await;
    tap.clear();
    let kept = driver::deploy(&cluster, &changed, &plain).await;
    let kept_log = tap.requests();
    let after_kept = pod_named(&admin, &agent.pod_name()).await;
    tap.clear();
    let replaced = driver::deploy(&cluster, &changed, &replacing).await;
    let replace_log = tap.requests();
    let after_replace = pod_named(&admin, &agent.pod_name()).await;
    clean_up(&cluster, &agent).await;

    let same = same.expect("a no-op");
    assert!(same.intent_matches);
    assert!(
        !same_log.iter().any(LoggedRequest::is_mutation),
        "{same_log:?}"
    );
    assert!(after_same.is_some_and(|p| uid(&p) == old));

    let kept = kept.expect("the started pod is kept");
    assert!(!kept.intent_matches, "the difference is reported");
    assert!(
        !kept_log.iter().any(LoggedRequest::is_mutation),
        "{kept_log:?}"
    );
    assert!(after_kept.is_some_and(|p| uid(&p) == old));

    let replaced = replaced.expect("replaced");
    assert_eq!(replaced.pod, agent.pod_name());
    assert!(replaced.intent_matches);
    assert_never_forced(&replace_log);
    let pod_mutations: Vec<(Resource, Verb)> = replace_log
        .iter()
        .filter(|r| r.is_mutation())
        .filter_map(|r| r.target)
        .filter(|(resource, _)| *resource == Resource::Pods)
        .collect();
    assert_eq!(
        pod_mutations,
        [
            (Resource::Pods, Verb::Delete),
            (Resource::Pods, Verb::Create)
        ],
        "one delete, then the create"
    );
    let delete = replace_log
        .iter()
        .find(|r| r.is(Verb::Delete, Resource::Pods))
        .expect("the delete");
    assert_eq!(delete_fence(delete).0, old);
    let new = after_replace.expect("the new pod");
    assert_ne!(uid(&new), old);
    let intent = new
        .metadata
        .annotations
        .and_then(|a| a.get("apiary.dev/create-intent").cloned());
    assert_eq!(intent, Some(changed.fingerprint()));
}

/// deploy.md § Staying up on a real kubelet: inside an 8 s `--min-running` window, a container
/// that crashes after about four seconds fails the deploy as the crash it is (E2, its exit code),
/// while the same container without a window is reported deployed (it was running when first
/// read); a container that keeps running succeeds, and only once the window has passed.
///
/// The crash comes after 4 s so that the kubelet (whose pod lifecycle events relist every
/// second) reports it running first even on a loaded machine: the contrast needs a start that
/// is seen (after 2 s, a CI run with six test slots once saw the crash first).
#[tokio::test]
async fn e2e_min_running_reports_a_crash_inside_the_window() {
    if !on_node().await {
        return;
    }
    let tap = Tap::new();
    let cluster = deployer(&tap).await;
    let image = e2e_image();
    let window = Duration::from_secs(8);
    let crashing = &["sh", "-c", "sleep 4; exit 4"];

    let watched = agent("min running crash");
    let watched_config = config(&watched, &image, crashing);
    let crashed = driver::deploy(
        &cluster,
        &watched_config,
        &DeployOptions::for_config(&watched_config).staying_up(window),
    )
    .await;
    let unwatched = agent("min running unseen");
    let unwatched_config = config(&unwatched, &image, crashing);
    let unseen = driver::deploy(
        &cluster,
        &unwatched_config,
        &DeployOptions::for_config(&unwatched_config),
    )
    .await;
    let steady = agent("min running steady");
    let steady_config = config(&steady, &image, SLEEPER);
    let started = Instant::now();
    let stayed = driver::deploy(
        &cluster,
        &steady_config,
        &DeployOptions::for_config(&steady_config).staying_up(window),
    )
    .await;
    let took = started.elapsed();
    let steady_status = driver::status(&cluster, &steady, None).await;
    let log = tap.requests();
    for agent in [&watched, &unwatched, &steady] {
        clean_up(&cluster, agent).await;
    }

    let error = crashed.expect_err("the crash inside the window is reported");
    assert!(
        matches!(error, DeployError::CreatedPodFailed { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("exited with code 4"), "{error}");
    assert_eq!(
        on_object(&log, Verb::Delete, Resource::Pods, &watched.pod_name()),
        0,
        "a crashed pod of this call is left as evidence"
    );
    assert_eq!(
        unseen
            .expect("without a window the later crash is unseen")
            .pod,
        unwatched.pod_name()
    );
    assert_eq!(stayed.expect("it stayed up").pod, steady.pod_name());
    assert!(
        took >= window,
        "succeeded after {took:?}, before the window"
    );
    assert_eq!(steady_status.expect("status").state, StatusState::Started);
}

/// The pod's state as the kubeconfig user reads it now: whether its container runs.
async fn is_running(admin: &kube::Client, name: &str) -> bool {
    pod_named(admin, name)
        .await
        .and_then(|p| p.status)
        .and_then(|s| s.container_statuses)
        .is_some_and(|all| {
            all.iter()
                .any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
        })
}

/// On a real cluster (deploy.md § Delete and waiting for disappearance, § When a pod will not go
/// away): a finalizer the test put on the agent's pod keeps it terminating past its 1 s grace
/// period; undeploy says so exactly once (the finalizer, the grace period, the `kubectl describe`
/// command, that it does not force), sends one fenced, graceful delete and never a forced one,
/// keeps the Secret, and ends at its deadline with the pod still there. The deployer account may
/// not read nodes, so nothing about the node may show up (reading nodes is optional and skipped
/// silently; today's driver does not read the node at all). Once the test removes the finalizer the
/// pod goes, and undeploy then finishes.
#[tokio::test]
async fn e2e_undeploy_of_a_pod_held_by_a_finalizer_warns_and_never_forces() {
    if !on_node().await {
        return;
    }
    const FINALIZER: &str = "example.com/apiary-e2e-hold";
    let tap = Tap::new();
    let cluster = deployer(&tap).await;
    let admin = admin().await;
    let agent = agent("finalizer");
    let pod_name = agent.pod_name();
    // Staged as apiary builds it, with the finalizer and a 1 s grace period (apiary's own 60 s
    // would make the wait 60 s long before anything is overdue).
    let mut attempt = build_attempt(
        &config(&agent, &e2e_image(), SLEEPER),
        Generation::from_u32(1),
    );
    attempt.pod.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    if let Some(spec) = attempt.pod.spec.as_mut() {
        spec.termination_grace_period_seconds = Some(1);
    }
    let secret_name = attempt.secret_name.clone();
    Api::<Secret>::namespaced(admin.clone(), NS)
        .create(&PostParams::default(), &attempt.secret)
        .await
        .expect("the Secret is staged");
    pods(&admin)
        .create(&PostParams::default(), &attempt.pod)
        .await
        .expect("the pod is staged");
    let started = Instant::now();
    while !is_running(&admin, &pod_name).await {
        assert!(started.elapsed() < HANG, "the staged pod never ran");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    tap.clear();
    let captured = Captured::default();
    let options = UndeployOptions {
        wait: true,
        deadline: Duration::from_secs(8),
        poll: Duration::from_millis(250),
        ..UndeployOptions::default()
    };
    let outcome = {
        let _guard = tracing::dispatcher::set_default(&captured.dispatch());
        driver::undeploy(&cluster, &agent, &options).await
    };
    let log = tap.requests();
    let held = pod_named(&admin, &pod_name).await;

    // Clean up first: the finalizer's owner (this test) removes it, and the pod goes.
    pods(&admin)
        .patch(
            &pod_name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("the finalizer is removed");
    let releasing = Instant::now();
    while pod_named(&admin, &pod_name).await.is_some() {
        assert!(releasing.elapsed() < HANG, "the released pod never went");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let finished = driver::undeploy(&cluster, &agent, &UndeployOptions::default()).await;

    assert!(outcome.is_err(), "the pod never goes: {outcome:?}");
    let text = captured.text();
    let stuck: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("is still terminating"))
        .collect();
    assert_eq!(stuck.len(), 1, "{text}");
    for expected in [
        format!("pod {NS}/{pod_name}"),
        "(grace period ".to_owned(),
        format!("it has finalizers ({FINALIZER})"),
        format!("kubectl describe pod -n {NS} {pod_name}"),
        "apiary does not force the delete".to_owned(),
    ] {
        assert!(stuck[0].contains(&expected), "{expected:?} in {text}");
    }
    assert!(
        !text.contains("forbidden") && !text.contains("its node"),
        "nothing about a node the account may not read: {text}"
    );
    let held = held.expect("the finalizer keeps the pod");
    assert!(held.metadata.deletion_timestamp.is_some());
    assert_never_forced(&log);
    assert_eq!(
        on_object(&log, Verb::Delete, Resource::Pods, &pod_name),
        1,
        "one graceful fenced delete, never a second or a forced one"
    );
    let delete = log
        .iter()
        .find(|r| r.is(Verb::Delete, Resource::Pods))
        .expect("the delete");
    assert_eq!(delete_fence(delete).0, uid(&held));
    // Asserted on undeploy's own requests, not on the Secret's presence: `gc --all` in the TTL
    // test shares this namespace and may rightly collect a terminated pod's Secret meanwhile.
    assert!(
        !log.iter().any(|r| r.is(Verb::Delete, Resource::Secrets)),
        "undeploy deletes no Secret while its pod stays: {log:?}"
    );
    let finished = finished.expect("undeploy finishes once the pod is gone");
    assert!(
        finished.secrets.is_empty() || finished.secrets == [secret_name.clone()],
        "{finished:?}"
    );
    let left = Api::<Secret>::namespaced(admin.clone(), NS)
        .get_opt(&secret_name)
        .await
        .expect("Secret read");
    assert!(left.is_none(), "the finished undeploy leaves no Secret");
}

/// Not a cluster test (it runs in CI): `e2e/kind/namespace.yaml` creates the namespace, the
/// ServiceAccount the day-two tests act as and its RoleBinding to `rbac/apiary-deployer.yaml`'s
/// ClusterRole, whose rules grant what those tests send (`renew`'s patch, `logs`' `pods/log`
/// get, deploy's watch) and nothing on nodes, so the stuck-pod test's silent skip is real.
#[test]
fn e2e_manifests_grant_what_the_day_two_tests_act_as() {
    let docs = documents("e2e/kind/namespace.yaml");
    let of = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in e2e/kind/namespace.yaml"))
    };
    assert_eq!(of("Namespace")["metadata"]["name"], NS);
    let account = of("ServiceAccount");
    assert_eq!(account["metadata"]["name"], DEPLOYER);
    assert_eq!(account["metadata"]["namespace"], NS);
    let binding = of("RoleBinding");
    assert_eq!(binding["metadata"]["namespace"], NS);
    assert_eq!(
        binding["roleRef"],
        serde_json::json!({
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "apiary-deployer",
        })
    );
    assert_eq!(
        binding["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": DEPLOYER, "namespace": NS}])
    );

    let rbac = documents("rbac/apiary-deployer.yaml");
    let role = rbac
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "apiary-deployer")
        .expect("the deployer ClusterRole");
    let grants = |resource: &str| -> Vec<String> {
        role["rules"]
            .as_array()
            .expect("rules")
            .iter()
            .filter(|r| {
                r["resources"]
                    .as_array()
                    .is_some_and(|all| all.iter().any(|x| x == resource))
            })
            .flat_map(|r| r["verbs"].as_array().cloned().unwrap_or_default())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    for verb in ["get", "list", "create", "delete", "watch", "patch"] {
        assert!(grants("pods").iter().any(|v| v == verb), "pods {verb}");
    }
    assert!(grants("pods/log").iter().any(|v| v == "get"));
    for verb in ["get", "list", "create", "delete"] {
        assert!(
            grants("secrets").iter().any(|v| v == verb),
            "secrets {verb}"
        );
    }
    assert!(grants("nodes").is_empty(), "no node read for the deployer");
}
