//! The real-node tier: the built `apiary` binary, as users run it, against a real kubelet v1.20.2
//! running real containers (containerd + runc) pulled from real loopback registries — the
//! referee for everything a kubelet decides (crates/envtest/README.md § The real node). Each test
//! gets a namespace of its own on the one node of the test run; without a node (`APIARY_NODE`
//! unset) each returns at once after one line, and fails instead under `APIARY_NODE_REQUIRED=1`.
//!
//! These replace the `#[ignore]`d kind tests for every scenario a real kubelet decides (the kind
//! manifests stay in `e2e/kind/` for users). Durations are printed, never asserted as figures;
//! the only time assertions are the spec's own (a grace period honoured, a deadline kept).
//!
//! Test-only code: it decides nothing about apiary, talks only to loopback and the node's
//! bridge, and never prints a token or an env value.

use std::process::Child;
use std::time::{Duration, Instant};

use crate::common::node::{
    SLEEPER, Scene, agent_status, deploy_args, finish, pod_name, running, uid,
};
use apiary_substrate::build::build_attempt;
use apiary_substrate::naming::{AgentIdentity, Generation};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, PostParams};

/// deploy.md § What apiary guarantees, on a real kubelet: a deploy returns once the container
/// runs (the real status says so), a second deploy is a no-op on the same pod, and undeploy of a
/// container that traps SIGTERM removes pod and Secret after a graceful stop.
#[test]
fn fresh_deploy_runs_the_container_and_a_redeploy_is_a_no_op() {
    let Some(scene) = Scene::new("fresh") else {
        return;
    };
    let agent = "fresh agent";
    let image = scene.image();
    let first = scene.apiary(&deploy_args(agent, &image, SLEEPER, &[])).ok();
    let pod = scene.pod(&pod_name(agent)).expect("the pod exists");
    assert!(running(Some(&pod)), "running when deploy returned: {pod:?}");
    assert!(first.stdout.contains(&pod_name(agent)), "{first:?}");
    let status = scene.apiary(&["-o", "json", "status", agent]).ok().json();
    assert_eq!(status["state"], "started", "{status}");
    assert_eq!(status["secret"]["exists"], true, "{status}");

    let again = scene.apiary(&deploy_args(agent, &image, SLEEPER, &[])).ok();
    let after = scene.pod(&pod_name(agent)).expect("still there");
    assert_eq!(uid(&after), uid(&pod), "the no-op kept the pod");
    assert_eq!(scene.pods().len(), 1);

    let undeploy = scene.apiary(&["-o", "json", "undeploy", agent]).ok();
    let doc = undeploy.json();
    assert_eq!(doc["pod_deleted"], true, "{doc}");
    assert!(
        scene.pod(&pod_name(agent)).is_none(),
        "undeploy waited for the pod"
    );
    let secrets: Api<Secret> = Api::namespaced(scene.admin.clone(), &scene.namespace);
    let left = scene
        .rt
        .block_on(
            secrets.list(&ListParams::default().labels("app.kubernetes.io/managed-by=apiary")),
        )
        .expect("list secrets");
    assert!(
        left.items.is_empty(),
        "undeploy removed the Secret: {:?}",
        left.items.len()
    );
    eprintln!(
        "figures: deploy {:?}, no-op {:?}, undeploy (TERM trapped) {:?}",
        first.took, again.took, undeploy.took
    );
}

/// R16 and deploy.md § logs on a real kubelet: a container that exits 3 is reported once with
/// its real exit code (E2), left in place as evidence, and its output stays readable with
/// `logs`; `--previous` has nothing (restartPolicy Never keeps no earlier instance) and says so
/// quoting the kubelet. The window (`--min-running`) is what makes the report certain: the real
/// kubelet can publish `running` for a container that lives a few milliseconds, and keep it for
/// more than 2 s after the exit on a loaded machine (both seen here), and a window of reads that
/// all say running is a success (deploy.md § Staying up).
#[test]
fn a_crash_is_reported_once_with_its_exit_code_and_kept_for_logs() {
    let Some(scene) = Scene::new("crash") else {
        return;
    };
    let agent = "crash agent";
    let image = scene.image();
    let run = scene.apiary(&deploy_args(
        agent,
        &image,
        "echo about to fail; exit 3",
        &["--min-running", "10s"],
    ));
    assert_eq!(run.code, 1, "{run:?}");
    let errors = run.error_lines();
    assert_eq!(errors.len(), 1, "one error line: {run:?}");
    assert!(errors[0].contains("exited with code 3 (Error)"), "{run:?}");
    assert!(errors[0].contains("did not stay running"), "{run:?}");
    let pod = scene
        .pod(&pod_name(agent))
        .expect("the crashed pod is kept");
    assert_eq!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Failed"),
        "{pod:?}"
    );
    let logs = scene.apiary(&["logs", agent]).ok();
    assert_eq!(logs.stdout, "about to fail\n", "{logs:?}");
    let previous = scene.apiary(&["logs", agent, "--previous"]);
    assert_eq!(previous.code, 1, "{previous:?}");
    assert!(
        previous.stderr.contains("previous terminated container"),
        "{previous:?}"
    );
    scene.apiary(&["undeploy", agent]).ok();
}

/// R10 and deploy.md § Pull-failure classifier and Secret settling, on a real registry and kubelet: each of the three
/// pull failures is classified from the message the real kubelet wrote, reported at once (exit
/// 1, one error line), and nothing is deleted.
#[test]
fn each_pull_failure_is_classified_from_the_real_kubelet_message() {
    let Some(scene) = Scene::new("pull") else {
        return;
    };
    let images = scene.node.info().images.clone();
    let cases = [
        ("missing", images.missing.clone(), "has no image at"),
        (
            "unauthorized",
            images.auth.clone(),
            "is not authorized to pull",
        ),
        (
            "arm64",
            images.arm64.clone(),
            "has no variant for the architecture",
        ),
    ];
    let runs: Vec<(String, Child, Instant, &str)> = cases
        .iter()
        .map(|(name, image, expect)| {
            let agent = format!("pull {name}");
            let (child, began) = scene.spawn(&deploy_args(&agent, image, SLEEPER, &[]));
            (agent, child, began, *expect)
        })
        .collect();
    for (agent, child, began, expect) in runs {
        let run = finish(child, began);
        assert_eq!(run.code, 1, "{agent}: {run:?}");
        let errors = run.error_lines();
        assert_eq!(errors.len(), 1, "{agent}: {run:?}");
        assert!(errors[0].contains(expect), "{agent}: {run:?}");
        assert!(
            errors[0].contains("127.0.0.1:500"),
            "names the registry: {run:?}"
        );
        assert!(
            scene.pod(&pod_name(&agent)).is_some(),
            "{agent}: nothing deleted"
        );
        eprintln!(
            "figures: pull failure {agent} reported after {:?}",
            run.took
        );
    }
}

/// deploy.md § Pull-failure classifier and Secret settling, on a real kubelet: a pod of the agent
/// whose Secret does not exist yet waits in `CreateContainerConfigError` (the real kubelet's
/// `secret "…" not found`); once the Secret exists, a deploy settles it as recoverable, waits, and
/// returns the same pod running (no second pod, nothing deleted).
#[test]
fn a_missing_secret_is_waited_out_once_it_exists() {
    let Some(scene) = Scene::new("config-error") else {
        return;
    };
    let agent = "config agent";
    let image = scene.image();
    let identity = AgentIdentity::new(agent).expect("a valid agent");
    // The same configuration as the deploy below builds (deploy_args' flags).
    let mut draft = apiary_substrate::config::DeployConfig::new(&*scene.namespace, image.clone());
    draft.command = Some(vec!["sh".to_owned()]);
    draft.args = vec!["-c".to_owned(), SLEEPER.to_owned()];
    draft.cpu_request = "10m".to_owned();
    draft.memory_request = "16Mi".to_owned();
    draft.cpu_limit = "200m".to_owned();
    draft.memory_limit = "64Mi".to_owned();
    let config = draft.validate(&identity).expect("a valid configuration");
    let attempt = build_attempt(&config, Generation::from_u32(1));
    let pods = scene.pods_api();
    scene
        .rt
        .block_on(pods.create(&PostParams::default(), &attempt.pod))
        .expect("the pod is staged without its Secret");
    let name = pod_name(agent);
    let waiting = scene.wait_pod(&name, "CreateContainerConfigError", |pod| {
        pod.and_then(agent_status)
            .and_then(|s| s.state.as_ref()?.waiting.as_ref()?.reason.clone())
            .is_some_and(|r| r == "CreateContainerConfigError")
    });
    let message = waiting
        .as_ref()
        .and_then(agent_status)
        .and_then(|s| s.state.as_ref()?.waiting.as_ref()?.message.clone())
        .unwrap_or_default();
    let secret_name = attempt.secret.metadata.name.clone().expect("a Secret name");
    assert_eq!(message, format!("secret \"{secret_name}\" not found"));
    let staged_uid = uid(waiting.as_ref().expect("the pod"));
    let secrets: Api<Secret> = Api::namespaced(scene.admin.clone(), &scene.namespace);
    scene
        .rt
        .block_on(secrets.create(&PostParams::default(), &attempt.secret))
        .expect("the Secret appears");
    let run = scene.apiary(&deploy_args(agent, &image, SLEEPER, &[])).ok();
    let pod = scene.pod(&name).expect("the pod");
    assert_eq!(uid(&pod), staged_uid, "the same pod recovered: {run:?}");
    assert!(running(Some(&pod)));
    assert_eq!(scene.pods().len(), 1);
    eprintln!(
        "figures: recovery from CreateContainerConfigError took {:?}",
        run.took
    );
    scene.apiary(&["undeploy", agent]).ok();
}

/// deploy.md § Staying up on a real kubelet: a container that exits after a second is reported
/// inside a 3 s window with its exit code; one that stays up succeeds after the window.
#[test]
fn min_running_catches_a_container_that_exits_after_a_second() {
    let Some(scene) = Scene::new("min-running") else {
        return;
    };
    let image = scene.image();
    let (short, short_began) = scene.spawn(&deploy_args(
        "short lived",
        &image,
        "sleep 1; exit 4",
        &["--min-running", "3s"],
    ));
    let (long, long_began) = scene.spawn(&deploy_args(
        "long lived",
        &image,
        SLEEPER,
        &["--min-running", "3s"],
    ));
    let short = finish(short, short_began);
    assert_eq!(short.code, 1, "{short:?}");
    assert!(
        short.error_lines().len() == 1 && short.stderr.contains("exited with code 4"),
        "{short:?}"
    );
    let long = finish(long, long_began).ok();
    assert!(
        long.took >= Duration::from_secs(3),
        "the window was waited: {long:?}"
    );
    let pod = scene.pod(&pod_name("long lived"));
    assert!(running(pod.as_ref()));
    scene.apiary(&["undeploy", "long lived"]).ok();
    scene.apiary(&["undeploy", "short lived"]).ok();
}

/// deploy.md § logs on a real kubelet: `logs -f` prints the lines in order as the container
/// writes them over time and ends (exit 0) when it exits; `--tail 1` is the last line.
#[test]
fn logs_follow_a_container_that_writes_over_time() {
    let Some(scene) = Scene::new("logs") else {
        return;
    };
    let agent = "logs agent";
    let image = scene.image();
    scene
        .apiary(&deploy_args(
            agent,
            &image,
            "echo first; sleep 1; echo second; sleep 3; echo last",
            &[],
        ))
        .ok();
    let followed = scene.apiary(&["logs", "-f", agent]).ok();
    assert_eq!(followed.stdout, "first\nsecond\nlast\n", "{followed:?}");
    let tail = scene.apiary(&["logs", agent, "--tail", "1"]).ok();
    assert_eq!(tail.stdout, "last\n");
    let json = scene.apiary(&["-o", "json", "logs", agent]).ok().json();
    assert_eq!(
        json["lines"],
        serde_json::json!(["first", "second", "last"]),
        "{json}"
    );
    scene.apiary(&["undeploy", agent]).ok();
}

/// deploy.md § Delete and waiting for disappearance on a real kubelet: undeploy of a container
/// that ignores SIGTERM honours the whole 60 s grace period (the kubelet kills it at its end),
/// is never forced, and waits until the pod is gone.
#[test]
fn undeploy_honours_the_grace_period_of_a_container_ignoring_sigterm() {
    let Some(scene) = Scene::new("grace") else {
        return;
    };
    let agent = "stubborn agent";
    let image = scene.image();
    scene
        .apiary(&deploy_args(agent, &image, "exec sleep 3600", &[]))
        .ok();
    let name = pod_name(agent);
    let run = scene
        .apiary(&["-o", "json", "undeploy", agent, "--timeout", "300s"])
        .ok();
    assert!(
        run.took >= Duration::from_secs(55),
        "the grace period was honoured: {run:?}"
    );
    assert!(scene.pod(&name).is_none(), "the pod is gone");
    eprintln!(
        "figures: undeploy (TERM ignored, 60 s grace) {:?}",
        run.took
    );
}

/// deploy.md § Replacing a live agent on a real kubelet: `--replace` with another command
/// deletes the started pod (fenced, graceful), waits until it is gone and starts the new one.
#[test]
fn replace_rolls_a_changed_configuration_onto_a_new_container() {
    let Some(scene) = Scene::new("replace") else {
        return;
    };
    let agent = "replaced agent";
    let image = scene.image();
    scene.apiary(&deploy_args(agent, &image, SLEEPER, &[])).ok();
    let old = scene.pod(&pod_name(agent)).expect("the first pod");
    let changed = format!("echo v2; {SLEEPER}");
    let kept = scene
        .apiary(&deploy_args(agent, &image, &changed, &[]))
        .ok();
    let same = scene.pod(&pod_name(agent)).expect("kept");
    assert_eq!(
        uid(&same),
        uid(&old),
        "without --replace a started pod is kept: {kept:?}"
    );
    let run = scene
        .apiary(&deploy_args(agent, &image, &changed, &["--replace"]))
        .ok();
    let new = scene.pod(&pod_name(agent)).expect("the new pod");
    assert_ne!(uid(&new), uid(&old), "{run:?}");
    assert!(running(Some(&new)));
    assert_eq!(scene.pods().len(), 1);
    let logs = scene.apiary(&["logs", agent]).ok();
    assert_eq!(logs.stdout, "v2\n");
    eprintln!("figures: replace {:?}", run.took);
    scene.apiary(&["undeploy", agent]).ok();
}

/// deploy.md § Expiry on a real cluster: `deploy --ttl 1m` on the server's clock; `gc --all`
/// before it is due collects nothing, after it is due collects the pod (graceful, fenced) and its
/// Secret.
#[test]
fn ttl_expiry_is_collected_by_gc_all() {
    let Some(scene) = Scene::new("ttl") else {
        return;
    };
    let agent = "expiring agent";
    let image = scene.image();
    scene
        .apiary(&deploy_args(agent, &image, SLEEPER, &["--ttl", "1m"]))
        .ok();
    let early = scene.apiary(&["-o", "json", "gc", "--all"]).ok().json();
    let ours = |doc: &serde_json::Value| {
        doc["agents"]
            .as_array()
            .and_then(|all| all.iter().find(|a| a["agent"] == agent).cloned())
            .unwrap_or_else(|| panic!("gc --all visits the agent: {doc}"))
    };
    assert!(ours(&early)["expired"].is_null(), "not due yet: {early}");
    let status = scene.apiary(&["-o", "json", "status", agent]).ok().json();
    let left = status["expires_in_seconds"].as_u64().expect("an expiry");
    std::thread::sleep(Duration::from_secs(left + 2));
    let late = scene.apiary(&["-o", "json", "gc", "--all"]).ok().json();
    assert_eq!(ours(&late)["expired"]["pod"], pod_name(agent), "{late}");
    assert!(scene.pod(&pod_name(agent)).is_none(), "collected");
}

/// R3 on a real kubelet: eight concurrent deploys of one agent all succeed with the same pod,
/// and exactly one container ever ran (restart count 0, one pod).
#[test]
fn eight_concurrent_deploys_start_one_container() {
    let Some(scene) = Scene::new("race") else {
        return;
    };
    let agent = "racing agent";
    let image = scene.image();
    let runs: Vec<(Child, Instant)> = (0..8)
        .map(|_| scene.spawn(&deploy_args(agent, &image, SLEEPER, &[])))
        .collect();
    for (child, began) in runs {
        let run = finish(child, began).ok();
        assert!(run.stdout.contains(&pod_name(agent)), "{run:?}");
    }
    let pods = scene.pods();
    assert_eq!(pods.len(), 1, "one pod");
    let status = agent_status(&pods[0]).expect("a status");
    assert_eq!(status.restart_count, 0);
    assert!(running(Some(&pods[0])));
    scene.apiary(&["undeploy", agent]).ok();
}

/// seeds.md on a real node: `apiary seeds` prints one `ip:port` per running pod, the pod IPs
/// the real CNI bridge gave them.
#[test]
fn seeds_are_the_real_pod_ips() {
    let Some(scene) = Scene::new("seeds") else {
        return;
    };
    let image = scene.image();
    for agent in ["seed one", "seed two"] {
        scene.apiary(&deploy_args(agent, &image, SLEEPER, &[])).ok();
    }
    let mut ips: Vec<String> = scene
        .pods()
        .iter()
        .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
        .map(|ip| format!("{ip}:7000"))
        .collect();
    ips.sort();
    assert_eq!(ips.len(), 2);
    assert!(ips.iter().all(|ip| ip.starts_with("10.88.")), "{ips:?}");
    let run = scene
        .apiary(&[
            "seeds",
            "--selector",
            "app.kubernetes.io/managed-by=apiary",
            "--port",
            "7000",
            "--require-running",
        ])
        .ok();
    let mut printed: Vec<String> = run.stdout.lines().map(str::to_owned).collect();
    printed.sort();
    assert_eq!(printed, ips, "{run:?}");
    for agent in ["seed one", "seed two"] {
        scene.apiary(&["undeploy", agent]).ok();
    }
}

/// A kubelet restart while a deploy waits: the deploy still returns once the container runs,
/// with one pod and one container start.
#[test]
fn a_kubelet_restart_while_a_deploy_waits() {
    let Some(scene) = Scene::new("kubelet-restart") else {
        return;
    };
    let agent = "patient agent";
    let image = scene.image();
    let (child, began) = scene.spawn(&deploy_args(
        agent,
        &image,
        SLEEPER,
        &["--min-running", "5s"],
    ));
    scene.wait_pod(&pod_name(agent), "created", |pod| pod.is_some());
    scene.node.restart_kubelet(Duration::from_secs(2));
    let run = finish(child, began).ok();
    let pods = scene.pods();
    assert_eq!(pods.len(), 1, "{run:?}");
    assert!(running(Some(&pods[0])));
    assert_eq!(agent_status(&pods[0]).map(|s| s.restart_count), Some(0));
    eprintln!("figures: deploy across a kubelet restart {:?}", run.took);
    scene.apiary(&["undeploy", agent]).ok();
}

/// An apiserver restart while a deploy waits (a second apiserver of this test's own on the
/// node's etcd): the deploy finishes inside its deadline; killed for good, the next deploy fails
/// with one `error:` line naming the server and the context.
#[test]
fn an_apiserver_restart_while_a_deploy_waits_and_one_killed_for_good() {
    let Some(scene) = Scene::new("apiserver-restart") else {
        return;
    };
    let apiserver = scene.node.private_apiserver();
    let kubeconfig = scene.node.kubeconfig_on(apiserver.url(), &scene.namespace);
    let image = scene.image();
    let agent = "resilient agent";
    let (child, began) = scene.spawn_with(
        &kubeconfig,
        &deploy_args(agent, &image, SLEEPER, &["--min-running", "10s"]),
    );
    scene.wait_pod(&pod_name(agent), "running", running);
    apiserver.stop();
    apiserver.start();
    let run = finish(child, began).ok();
    assert!(
        run.took < Duration::from_secs(120),
        "inside its deadline: {run:?}"
    );
    assert_eq!(scene.pods().len(), 1);
    eprintln!("figures: deploy across an apiserver restart {:?}", run.took);

    apiserver.kill();
    let dead = finish(
        scene
            .command(
                &kubeconfig,
                &deploy_args("orphan agent", &image, SLEEPER, &["--timeout", "8s"]),
            )
            .spawn()
            .expect("apiary runs"),
        Instant::now(),
    );
    assert_eq!(dead.code, 1, "{dead:?}");
    let errors = dead.error_lines();
    assert_eq!(errors.len(), 1, "{dead:?}");
    assert!(
        errors[0].contains(apiserver.url()),
        "names the server: {dead:?}"
    );
    assert!(
        errors[0].contains("admin@node"),
        "names the context: {dead:?}"
    );
    scene.apiary(&["undeploy", agent]).ok();
}

/// buzz-provider.md on a real node: the buzz desktop's `deploy` through the
/// `buzz-backend-kubernetes` binary starts the agent's container (the image's own entrypoint,
/// the resolved environment in the pod's Secret) and answers `ok:true` once it runs; the same
/// request again is a no-op on the same pod.
#[test]
fn the_buzz_provider_deploys_a_running_container() {
    let Some(scene) = Scene::new("buzz") else {
        return;
    };
    let mut request = crate::common::buzz::deploy_request(&scene.namespace, &scene.image());
    // Sized for a two-core node; the binding's own defaults are for real agents.
    for (key, value) in [
        ("cpu_request", "10m"),
        ("memory_request", "16Mi"),
        ("cpu_limit", "200m"),
        ("memory_limit", "64Mi"),
    ] {
        request["provider_config"][key] = value.into();
    }
    let deploy = || {
        let began = Instant::now();
        let answer = crate::common::buzz::finish(crate::common::buzz::spawn(
            crate::common::buzz::provider_command(scene.home.path(), &scene.kubeconfig),
            &request,
        ));
        (answer, began.elapsed())
    };
    let (first, took) = deploy();
    first.assert_ok();
    let pods = scene.pods();
    assert_eq!(pods.len(), 1, "{}", first.describe());
    assert!(
        running(Some(&pods[0])),
        "running when the provider answered"
    );
    let (again, _) = deploy();
    again.assert_ok();
    let after = scene.pods();
    assert_eq!(after.len(), 1);
    assert_eq!(uid(&after[0]), uid(&pods[0]), "the no-op kept the pod");
    eprintln!("figures: buzz provider deploy {took:?}");
}
