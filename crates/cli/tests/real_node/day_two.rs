//! The day-two commands of the built `apiary` binary on the real node (crates/envtest/README.md
//! § The real node): `deploy`, `list -o json` with a foreign pod, `logs`, `logs -f`, `deploy
//! --ttl`, `renew` and `gc --all --dry-run`. These were the kind tests; they run on every CI run,
//! and `crates/substrate-kube/tests/real_node.rs` covers the same commands through the library.
//! Each test has a namespace of its own from the shared [`Scene`] (the kind tests' fixed
//! `apiary-e2e` was shared with the library's day-two tests, whose real `gc --all` then visited
//! these agents too). Without a node each test returns at once (a failure under
//! `APIARY_NODE_REQUIRED=1`).
//!
//! The admin stages the one object apiary never writes (a foreign pod); everything deployed is
//! undeployed.
//!
//! Layer: end-to-end tests against a real apiserver and kubelet. They decide nothing.

use std::time::{Duration, Instant};

use apiary_substrate::build::build_attempt;
use apiary_substrate::naming::{AgentIdentity, Generation};
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

use crate::common::node::{NodeRun, SLEEPER, Scene, deploy_args, pod_name};

/// `apiary deploy AGENT` running `sh -c script` in the node's image, plus `extra`; a failure
/// shows the Events of the agent's pod, which say who stopped the container (a delete, a sandbox
/// change, the kubelet) if a sleeper that only exits on `SIGTERM` ends during the deploy.
fn deploy(scene: &Scene, agent: &str, script: &str, extra: &[&str]) -> NodeRun {
    let image = scene.image();
    let mut args = deploy_args(agent, &image, script, &["--timeout", "300s"]);
    args.extend_from_slice(extra);
    let run = scene.apiary(&args);
    if run.code != 0 {
        panic!(
            "{run:?}\nEvents of the agent's pod:\n{}",
            pod_events(scene, agent)
        );
    }
    run
}

/// The Events in the scene's namespace about `agent`'s pod, one line each (time, type, reason,
/// source, message), or why they could not be read.
fn pod_events(scene: &Scene, agent: &str) -> String {
    let events: Api<Event> = Api::namespaced(scene.admin.clone(), &scene.namespace);
    let field = format!("involvedObject.name={}", pod_name(agent));
    match scene
        .rt
        .block_on(events.list(&ListParams::default().fields(&field)))
    {
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
}

/// `apiary undeploy AGENT`, which must succeed.
fn undeploy(scene: &Scene, agent: &str) {
    scene.apiary(&["undeploy", agent]).ok();
}

/// The value of `agent`'s selector label `apiary.dev/agent`.
fn agent_label(agent: &str) -> String {
    let identity = AgentIdentity::new(agent).expect("valid agent name");
    let selector = identity.selector();
    let first = selector.split(',').next().expect("a term");
    first.split_once('=').expect("key=value").1.to_owned()
}

/// deploy.md § list through the binary: two agents deployed by `apiary deploy` are listed by
/// `apiary -o json list` as one array, sorted by agent, each `started` with 0 restarts, the
/// image's repository and short digest, its pod and one Secret; a copy of one agent's pod under
/// a foreign name is not listed, and stderr says one pod was skipped.
#[test]
fn e2e_cli_list_json_shows_both_agents_and_skips_a_foreign_pod() {
    let Some(scene) = Scene::new("list") else {
        return;
    };
    let image = scene.image();
    let (first, second) = ("list a", "list b");
    deploy(&scene, first, SLEEPER, &[]);
    deploy(&scene, second, SLEEPER, &[]);
    let identity = AgentIdentity::new(first).expect("valid agent name");
    let config = apiary_substrate::config::DeployConfig::new(&*scene.namespace, image.clone())
        .validate(&identity)
        .expect("valid configuration");
    let mut copy = build_attempt(&config, Generation::from_u32(7)).pod;
    let foreign = format!("apiary-e2e-cli-not-its-name-{}", &identity.id()[..12]);
    copy.metadata.name = Some(foreign.clone());
    scene
        .rt
        .block_on(scene.pods_api().create(&PostParams::default(), &copy))
        .expect("the foreign pod is staged");

    let selector = format!(
        "apiary.dev/agent in ({},{})",
        agent_label(first),
        agent_label(second)
    );
    let listed = scene.apiary(&["-o", "json", "list", "--selector", &selector]);

    let _gone = scene
        .rt
        .block_on(scene.pods_api().delete(&foreign, &DeleteParams::default()));
    undeploy(&scene, first);
    undeploy(&scene, second);

    let doc = listed.json();
    let rows = doc
        .as_array()
        .unwrap_or_else(|| panic!("an array: {listed:?}"));
    let names: Vec<&str> = rows.iter().filter_map(|r| r["agent"].as_str()).collect();
    assert_eq!(names, [first, second], "{listed:?}");
    let (repository, digest) = image.split_once('@').expect("a digest-pinned image");
    let short: String = digest.chars().take("sha256:".len() + 12).collect();
    for (row, agent) in rows.iter().zip([first, second]) {
        assert_eq!(row["pod"], pod_name(agent), "{row}");
        assert_eq!(row["namespace"], &*scene.namespace, "{row}");
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
    let Some(scene) = Scene::new("logs") else {
        return;
    };
    let name = "logs";
    deploy(
        &scene,
        name,
        "echo 'first line'; echo 'second line'; sleep 10; echo 'last line'",
        &[],
    );
    let started = Instant::now();
    let followed = scene.apiary(&["logs", "-f", name]);
    let waited = started.elapsed();
    let tail = scene.apiary(&["logs", name, "--tail", "1"]);
    undeploy(&scene, name);

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
    let Some(scene) = Scene::new("ttl") else {
        return;
    };
    let name = "ttl";
    deploy(&scene, name, SLEEPER, &["--ttl", "1h"]);
    let status = scene.apiary(&["-o", "json", "status", name]);
    let renewed = scene.apiary(&["-o", "json", "renew", name, "--ttl", "3h"]);
    let selector = format!("apiary.dev/agent={}", agent_label(name));
    let listed = scene.apiary(&["-o", "json", "list", "--selector", &selector]);
    let dry = scene.apiary(&["-o", "json", "gc", "--all", "--dry-run"]);
    let after = scene.apiary(&["-o", "json", "status", name]);
    undeploy(&scene, name);

    // Within the few minutes a slow run may take between the stamp and the read.
    let about = |seconds: i64, target: i64| (target - 300..=target).contains(&seconds);
    let status = status.ok().json();
    let left = status["expires_in_seconds"].as_i64().expect("an expiry");
    assert!(about(left, 3_600), "{status}");
    let renewed = renewed.ok().json();
    assert_eq!(renewed["pod"], pod_name(name), "{renewed}");
    assert!(renewed["previous_expires_at"].is_string(), "{renewed}");
    let listed = listed.ok().json();
    let left = listed[0]["expires_in_seconds"].as_i64().expect("an expiry");
    assert!(about(left, 3 * 3_600), "{listed} after {renewed}");
    let dry = dry.ok().json();
    assert_eq!(dry["dry_run"], true, "{dry}");
    let ours = dry["agents"]
        .as_array()
        .and_then(|all| all.iter().find(|a| a["agent"] == name))
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
