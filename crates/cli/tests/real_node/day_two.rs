//! The day-two commands of the built `apiary` binary on the real node (crates/envtest/README.md
//! § The real node): `deploy`, `list -o json` with a foreign pod, `logs`, `logs -f`, `deploy
//! --ttl`, `renew` and `gc --all --dry-run`, in namespace `apiary-e2e` (the namespace
//! `e2e/kind/namespace.yaml` gives a kind cluster; here the test creates it). These were the kind
//! tests; they run on every CI run, and `crates/substrate-kube/tests/real_node.rs` covers the
//! same commands through the library. Without a node each test returns at once after one line
//! (a failure under `APIARY_NODE_REQUIRED=1`).
//!
//! The binary runs with `--kubeconfig` at the node's admin, `RUST_LOG` removed, and `-n
//! apiary-e2e` always given; the admin stages the one object apiary never writes (a foreign
//! pod). Unique agent names per run; everything deployed is undeployed.
//!
//! Layer: end-to-end tests against a real apiserver and kubelet. They decide nothing.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use apiary_substrate::build::build_attempt;
use apiary_substrate::naming::{AgentIdentity, Generation};
use k8s_openapi::api::core::v1::{Event, Namespace, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, PostParams};

/// The namespace of `e2e/kind/namespace.yaml`.
const NS: &str = "apiary-e2e";
/// A container that runs until told to stop and stops at once on `SIGTERM` (a plain `sleep` as
/// PID 1 ignores it and would hold every graceful delete for the whole 60 s grace).
const SLEEPER: &str = "trap 'exit 0' TERM; sleep 3600 & wait";

/// A unique agent name for this run.
fn agent(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("e2e cli {test} {nanos:08x}")
}

/// The node of this test run (the caller checked [`on_node`] first).
fn node() -> &'static apiary_envtest::node::NodeHandle {
    apiary_envtest::node::shared().expect("on_node was checked first")
}

/// Whether the node tier runs; if it does, [`NS`] exists with its default ServiceAccount.
fn on_node() -> bool {
    if apiary_envtest::node::shared().is_none() {
        return false;
    }
    runtime().block_on(async {
        let client = node().client().await;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let mut object = Namespace::default();
        object.metadata.name = Some(NS.to_owned());
        match namespaces.create(&PostParams::default(), &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(other) => panic!("could not create namespace {NS}: {other}"),
        }
        let accounts: Api<ServiceAccount> = Api::namespaced(client, NS);
        let deadline = Instant::now() + Duration::from_secs(120);
        while accounts.get_opt("default").await.ok().flatten().is_none() {
            assert!(
                Instant::now() < deadline,
                "no default ServiceAccount in {NS}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    true
}

/// The digest-pinned image under test: the node's busybox image.
fn e2e_image() -> String {
    node().info().images.agent.clone()
}

/// What one run of the binary gave.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn ok(self) -> Run {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }

    /// `ok` for a deploy of `agent`; a failure also shows the Events of its pod, which say who
    /// stopped the container (a delete, a sandbox change, the kubelet) when a sleeper that only
    /// exits on `SIGTERM` is reported ended during the deploy.
    fn deployed(self, agent: &str) -> Run {
        if self.code != 0 {
            panic!(
                "{self:?}\nEvents of the agent's pod:\n{}",
                pod_events(agent)
            );
        }
        self
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is one JSON document ({e}): {self:?}"))
    }
}

/// The binary with the node's kubeconfig, `-n apiary-e2e` and `args`, without `RUST_LOG`.
fn apiary(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_apiary"))
        .arg("--kubeconfig")
        .arg(node().kubeconfig(NS))
        .env_remove("KUBECONFIG")
        .arg("-n")
        .arg(NS)
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("the apiary binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `apiary deploy AGENT` running `sh -c script` in the e2e image, small enough for a two-core node, plus
/// `extra` flags.
fn deploy(agent: &str, script: &str, extra: &[&str]) -> Run {
    let image = e2e_image();
    let mut args = vec![
        "deploy",
        agent,
        "--image",
        &image,
        "--command",
        "sh",
        "--arg=-c",
        "--arg",
        script,
        "--cpu-request",
        "50m",
        "--memory-request",
        "32Mi",
        "--cpu-limit",
        "200m",
        "--memory-limit",
        "64Mi",
        "--timeout",
        "300s",
    ];
    args.extend_from_slice(extra);
    apiary(&args)
}

/// `apiary undeploy AGENT`, which must succeed.
fn undeploy(agent: &str) {
    apiary(&["undeploy", agent]).ok();
}

/// The Events in [`NS`] about `agent`'s pod, one line each (time, type, reason, source,
/// message), or why they could not be read.
fn pod_events(agent: &str) -> String {
    let pod = AgentIdentity::new(agent)
        .expect("valid agent name")
        .pod_name();
    runtime().block_on(async {
        let events: Api<Event> = Api::namespaced(node().client().await, NS);
        let field = format!("involvedObject.name={pod}");
        match events.list(&ListParams::default().fields(&field)).await {
            Ok(list) => list
                .items
                .iter()
                .map(|e| {
                    format!(
                        "{:?} {} {} {}: {}",
                        e.last_timestamp.as_ref().map(|t| t.0),
                        e.type_.as_deref().unwrap_or("-"),
                        e.reason.as_deref().unwrap_or("-"),
                        e.source
                            .as_ref()
                            .and_then(|s| s.component.as_deref())
                            .unwrap_or("-"),
                        e.message.as_deref().unwrap_or("-"),
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Err(error) => format!("(could not list them: {error})"),
        }
    })
}

/// The value of `agent`'s selector label `apiary.dev/agent`.
fn agent_label(agent: &str) -> String {
    let identity = AgentIdentity::new(agent).expect("valid agent name");
    let selector = identity.selector();
    let first = selector.split(',').next().expect("a term");
    first.split_once('=').expect("key=value").1.to_owned()
}

/// A current-thread runtime for the kubeconfig user's staging requests.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The node admin's pod API in [`NS`].
async fn pods() -> Api<Pod> {
    Api::namespaced(node().client().await, NS)
}

/// deploy.md § list through the binary: two agents deployed by `apiary deploy` are listed by
/// `apiary -o json list` as one array, sorted by agent, each `started` with 0 restarts, the
/// image's repository and short digest, its pod and one Secret; a copy of one agent's pod under
/// a foreign name is not listed, and stderr says one pod was skipped.
#[test]
fn e2e_cli_list_json_shows_both_agents_and_skips_a_foreign_pod() {
    if !on_node() {
        return;
    }
    let image = e2e_image();
    let first = agent("list a");
    let second = agent("list b");
    deploy(&first, SLEEPER, &[]).deployed(&first);
    deploy(&second, SLEEPER, &[]).deployed(&second);
    let identity = AgentIdentity::new(&first).expect("valid agent name");
    let config = apiary_substrate::config::DeployConfig::new(NS, image.clone())
        .validate(&identity)
        .expect("valid configuration");
    let mut copy = build_attempt(&config, Generation::from_u32(7)).pod;
    let foreign = format!("apiary-e2e-cli-not-its-name-{}", &identity.id()[..12]);
    copy.metadata.name = Some(foreign.clone());
    let rt = runtime();
    rt.block_on(async {
        pods()
            .await
            .create(&PostParams::default(), &copy)
            .await
            .expect("the foreign pod is staged");
    });

    let selector = format!(
        "apiary.dev/agent in ({},{})",
        agent_label(&first),
        agent_label(&second)
    );
    let listed = apiary(&["-o", "json", "list", "--selector", &selector]);

    rt.block_on(async {
        let _ = pods()
            .await
            .delete(&foreign, &DeleteParams::default())
            .await;
    });
    undeploy(&first);
    undeploy(&second);

    let doc = listed.json();
    let rows = doc
        .as_array()
        .unwrap_or_else(|| panic!("an array: {listed:?}"));
    let names: Vec<&str> = rows.iter().filter_map(|r| r["agent"].as_str()).collect();
    assert_eq!(names, [first.as_str(), second.as_str()], "{listed:?}");
    let (repository, digest) = image.split_once('@').expect("a digest-pinned image");
    let short: String = digest.chars().take("sha256:".len() + 12).collect();
    for (row, agent) in rows.iter().zip([&first, &second]) {
        let identity = AgentIdentity::new(agent).expect("valid agent name");
        assert_eq!(row["pod"], identity.pod_name(), "{row}");
        assert_eq!(row["namespace"], NS, "{row}");
        assert_eq!(row["state"], "started", "{row}");
        assert_eq!(row["restarts"], 0, "{row}");
        assert_eq!(row["image"]["repository"], repository, "{row}");
        assert_eq!(row["image"]["digest"], short.as_str(), "{row}");
        assert_eq!(row["secrets"], 1, "{row}");
        assert!(row["expires_at"].is_null(), "{row}");
    }
    assert!(listed.stderr.contains("skipped 1 pod(s)"), "{listed:?}");
}

/// deploy.md § logs through the binary: `apiary logs -f` prints the lines the container wrote, in
/// order, keeps following while it runs, prints the line it writes 10 s later, and exits 0 when
/// the container ends; then `apiary logs --tail 1` is the last line only.
#[test]
fn e2e_cli_logs_and_follow_until_the_container_ends() {
    if !on_node() {
        return;
    }
    let name = agent("logs");
    deploy(
        &name,
        "echo 'first line'; echo 'second line'; sleep 10; echo 'last line'",
        &[],
    )
    .ok();
    let started = Instant::now();
    let followed = apiary(&["logs", "-f", &name]);
    let waited = started.elapsed();
    let tail = apiary(&["logs", &name, "--tail", "1"]);
    undeploy(&name);

    let followed = followed.ok();
    assert_eq!(
        followed.stdout, "first line\nsecond line\nlast line\n",
        "{followed:?}"
    );
    assert!(
        waited < Duration::from_secs(180),
        "the follow ended with the container"
    );
    assert_eq!(tail.ok().stdout, "last line\n");
}

/// deploy.md § Expiry through the binary: `deploy --ttl 1h` records an expiry about an hour
/// ahead on the server's clock, shown by `status` and `list`; `renew --ttl 3h` moves it about
/// three hours ahead; `gc --all --dry-run` plans nothing for an agent that has not expired and
/// deletes nothing.
#[test]
fn e2e_cli_ttl_renew_and_gc_dry_run() {
    if !on_node() {
        return;
    }
    let name = agent("ttl");
    deploy(&name, SLEEPER, &["--ttl", "1h"]).deployed(&name);
    let status = apiary(&["-o", "json", "status", &name]);
    let renewed = apiary(&["-o", "json", "renew", &name, "--ttl", "3h"]);
    let selector = format!("apiary.dev/agent={}", agent_label(&name));
    let listed = apiary(&["-o", "json", "list", "--selector", &selector]);
    let dry = apiary(&["-o", "json", "gc", "--all", "--dry-run"]);
    let after = apiary(&["-o", "json", "status", &name]);
    undeploy(&name);

    // Within the few minutes a slow run may take between the stamp and the read.
    let about = |seconds: i64, target: i64| (target - 300..=target).contains(&seconds);
    let status = status.ok().json();
    let left = status["expires_in_seconds"].as_i64().expect("an expiry");
    assert!(about(left, 3_600), "{status}");
    let renewed = renewed.ok().json();
    let pod = AgentIdentity::new(&name)
        .expect("valid agent name")
        .pod_name();
    assert_eq!(renewed["pod"], pod.as_str(), "{renewed}");
    assert!(renewed["previous_expires_at"].is_string(), "{renewed}");
    let listed = listed.ok().json();
    let left = listed[0]["expires_in_seconds"].as_i64().expect("an expiry");
    assert!(about(left, 3 * 3_600), "{listed} after {renewed}");
    let dry = dry.ok().json();
    assert_eq!(dry["dry_run"], true, "{dry}");
    let ours = dry["agents"]
        .as_array()
        .and_then(|all| all.iter().find(|a| a["agent"] == name.as_str()))
        .unwrap_or_else(|| panic!("gc --all visits the agent: {dry}"));
    assert!(
        ours["expired"].is_null(),
        "not expired, nothing planned: {ours}"
    );
    assert_eq!(ours["pods"], serde_json::json!([]), "{ours}");
    let after = after.ok().json();
    assert_eq!(
        after["state"], "started",
        "the dry run deleted nothing: {after}"
    );
}
