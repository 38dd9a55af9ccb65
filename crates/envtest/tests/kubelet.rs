//! The fake kubelet against the real `kube-apiserver`: it registers a Ready node, binds pods
//! with a real `Binding`, and drives them through the real status subresource per image script
//! (running with a pod IP, a crash, the pull-failure loop, a missing `envFrom` Secret and its
//! recovery, a container that never starts, an unschedulable pod, a vanishing pod); a graceful
//! delete is finished after the scaled grace period with a uid-fenced `DELETE`; a stale status
//! write is re-read and retried; and the status shapes agree field for field with what the
//! simulator's model writes for the same script (they share the code).
//!
//! Layer: integration tests of test support. Every test skips (one stderr line) without
//! `KUBEBUILDER_ASSETS`. Loopback only. No timed assertions: waits are bounded only to turn a
//! hang into a failure, and the assertions are about order and final state.

use std::time::{Duration, Instant};

use apiary_cluster_model::ClusterModel;
use apiary_cluster_model::kubelet::PullFailure;
use apiary_envtest::kubelet::{
    Action, DEFAULT_NODE_NAME, FinishOutcome, Kubelet, Options, SIGTERM_EXIT_CODE,
};
use apiary_envtest::{ControlPlane, Identity, TestNamespace};
use k8s_openapi::api::core::v1::{ContainerState, Node, Pod, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

/// How long any wait may take before the test fails as hung (the kubelet runs 10× real time).
const HANG: Duration = Duration::from_secs(60);

const DIGEST: &str = "sha256:4b1d0e5c2f3a4b1d0e5c2f3a4b1d0e5c2f3a4b1d0e5c2f3a4b1d0e5c2f3a4b1d";

fn image(repo: &str) -> String {
    format!("registry.example.com/team/{repo}@{DIGEST}")
}

/// A pod shaped like apiary's: one `agent` container, `restartPolicy: Never`, optionally an
/// `envFrom` Secret, and the given grace period.
fn agent_pod(name: &str, image: &str, env_secret: Option<&str>, grace: i64) -> Pod {
    let mut container = serde_json::json!({ "name": "agent", "image": image });
    if let Some(secret) = env_secret {
        container["envFrom"] = serde_json::json!([{ "secretRef": { "name": secret } }]);
    }
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name },
        "spec": {
            "automountServiceAccountToken": false,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": grace,
            "containers": [container],
        },
    }))
    .expect("a valid pod")
}

fn kubelet(plane: &ControlPlane, options: Options) -> Kubelet {
    Kubelet::start(plane.config(Identity::Admin), options).expect("the kubelet registers its node")
}

fn agent_state(pod: &Pod) -> Option<&ContainerState> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == "agent")?
        .state
        .as_ref()
}

fn waiting(pod: &Pod) -> Option<(String, Option<String>)> {
    let w = agent_state(pod)?.waiting.as_ref()?;
    Some((w.reason.clone().unwrap_or_default(), w.message.clone()))
}

fn is_waiting(pod: &Pod, reason: &str) -> bool {
    waiting(pod).is_some_and(|(r, _)| r == reason)
}

fn is_running(pod: &Pod) -> bool {
    agent_state(pod).is_some_and(|s| s.running.is_some())
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

/// Phase and agent state, for failure messages (never the spec).
fn describe(pod: Option<&Pod>) -> String {
    match pod {
        None => "absent".to_owned(),
        Some(p) => format!("phase {:?}, agent {:?}", phase(p), agent_state(p)),
    }
}

/// Polls the pod until `done` holds; fails the test after [`HANG`].
async fn wait_for(api: &Api<Pod>, name: &str, what: &str, done: impl Fn(&Pod) -> bool) -> Pod {
    let start = Instant::now();
    loop {
        let pod = api.get_opt(name).await.expect("the apiserver answers");
        if let Some(p) = pod.as_ref().filter(|p| done(p)) {
            return p.clone();
        }
        assert!(
            start.elapsed() < HANG,
            "pod {name} never became {what}: {}",
            describe(pod.as_ref())
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn wait_gone(api: &Api<Pod>, name: &str) {
    let start = Instant::now();
    while let Some(pod) = api.get_opt(name).await.expect("the apiserver answers") {
        assert!(
            start.elapsed() < HANG,
            "pod {name} was never removed: {}",
            describe(Some(&pod))
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Waits until the kubelet's log holds an action matching `found`.
async fn wait_action(kubelet: &Kubelet, what: &str, found: impl Fn(&Action) -> bool) -> Action {
    let start = Instant::now();
    loop {
        if let Some(action) = kubelet.actions().into_iter().find(|a| found(a)) {
            return action;
        }
        assert!(
            start.elapsed() < HANG,
            "the kubelet never did {what}: {:?}",
            kubelet.actions()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn summaries(kubelet: &Kubelet, pod: &str) -> Vec<String> {
    kubelet
        .actions()
        .into_iter()
        .filter_map(|a| match a {
            Action::Bound { name, .. } if name == pod => Some("bound".to_owned()),
            Action::StatusWritten { name, summary, .. } if name == pod => Some(summary),
            Action::Conflict { name, .. } if name == pod => Some("conflict".to_owned()),
            Action::Finished { name, outcome, .. } if name == pod => {
                Some(format!("finished {outcome:?}"))
            }
            _ => None,
        })
        .collect()
}

/// The kubelet's log for `pod` once it holds `last` (the kubelet records a write when its
/// answer arrives, which may be just after the test saw the new state).
async fn log_through(kubelet: &Kubelet, pod: &str, last: &str) -> Vec<String> {
    let start = Instant::now();
    loop {
        let seen = summaries(kubelet, pod);
        if seen.iter().any(|s| s == last) {
            return seen;
        }
        assert!(start.elapsed() < HANG, "no {last:?} for {pod} in {seen:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn create(api: &Api<Pod>, pod: &Pod) -> Pod {
    api.create(&PostParams::default(), pod)
        .await
        .expect("the pod is created")
}

/// A pod of the given image with no `envFrom` Secret and a 30 s grace period.
fn plain(name: &str, repo: &str) -> Pod {
    agent_pod(name, &image(repo), None, 30)
}

fn is_terminated(pod: &Pod) -> bool {
    agent_state(pod).is_some_and(|s| s.terminated.is_some())
}

/// One test's namespace on the shared control plane, a kubelet serving it, and the admin's
/// pod API there.
struct Bench {
    plane: &'static ControlPlane,
    ns: TestNamespace,
    kubelet: Kubelet,
    pods: Api<Pod>,
}

/// A [`Bench`] in a fresh namespace named after `prefix`, its kubelet started with `options`;
/// `None` (the test skips) without `KUBEBUILDER_ASSETS`.
fn bench(prefix: &str, options: impl FnOnce(Options) -> Options) -> Option<Bench> {
    let plane = apiary_envtest::private()?;
    let ns = plane.namespace(prefix);
    let kubelet = kubelet(plane, options(Options::in_namespace(&ns)));
    let pods = Api::namespaced(plane.client(Identity::Admin), &ns);
    Some(Bench {
        plane,
        ns,
        kubelet,
        pods,
    })
}

/// Waits for the kubelet's final delete of `agent-0` and asserts it was fenced on `uid` with
/// `gracePeriodSeconds: 0` and answered `outcome`.
async fn assert_final_delete(bench: &Bench, uid: String, outcome: FinishOutcome) {
    let finished = wait_action(&bench.kubelet, "the final delete", |a| {
        matches!(a, Action::Finished { .. })
    })
    .await;
    assert_eq!(
        finished,
        Action::Finished {
            namespace: bench.ns.to_string(),
            name: "agent-0".to_owned(),
            uid,
            grace_period_seconds: 0,
            outcome,
        }
    );
}

/// A normal image: the node is Ready, the pod is bound to it, goes through ContainerCreating and
/// runs with a sandbox IP from the pod CIDR and a containerd container ID.
#[tokio::test]
async fn normal_image_runs_with_a_pod_ip_on_a_ready_node() {
    let Some(b) = bench("kubelet-run", |o| o) else {
        return;
    };
    let node = Api::<Node>::all(b.plane.client(Identity::Admin))
        .get(DEFAULT_NODE_NAME)
        .await
        .expect("the node is registered");
    let ready = node
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status);
    assert_eq!(ready.as_deref(), Some("True"));

    create(&b.pods, &plain("agent-0", "agent")).await;
    let pod = wait_for(&b.pods, "agent-0", "running", is_running).await;
    assert_eq!(phase(&pod), "Running");
    let spec = pod.spec.clone().unwrap_or_default();
    assert_eq!(spec.node_name.as_deref(), Some(DEFAULT_NODE_NAME));
    let status = pod.status.clone().unwrap_or_default();
    let ip = status.pod_ip.unwrap_or_default();
    assert!(ip.starts_with("10.244."), "pod IP {ip}");
    assert_eq!(status.host_ip.as_deref(), Some("127.0.0.1"));
    let container = status
        .container_statuses
        .unwrap_or_default()
        .into_iter()
        .next()
        .expect("a container status");
    assert!(container.ready);
    assert!(
        container
            .container_id
            .is_some_and(|id| id.starts_with("containerd://"))
    );
    assert_eq!(
        log_through(&b.kubelet, "agent-0", "Running/running").await,
        ["bound", "Pending/ContainerCreating", "Running/running"]
    );
}

/// Two pods get two different sandbox addresses.
#[tokio::test]
async fn pod_ips_are_unique() {
    let Some(b) = bench("kubelet-ips", |o| o) else {
        return;
    };
    create(&b.pods, &plain("a", "agent")).await;
    create(&b.pods, &plain("b", "agent")).await;
    let a = wait_for(&b.pods, "a", "running", is_running).await;
    let other = wait_for(&b.pods, "b", "running", is_running).await;
    let ip = |p: &Pod| p.status.as_ref().and_then(|s| s.pod_ip.clone());
    assert_ne!(ip(&a), ip(&other));
}

/// `crash`: straight from ContainerCreating to terminated with exit code 1, phase Failed.
#[tokio::test]
async fn crash_terminates_with_exit_code_1() {
    let Some(b) = bench("kubelet-crash", |o| o) else {
        return;
    };
    create(&b.pods, &plain("agent-0", "agent-crash")).await;
    let pod = wait_for(&b.pods, "agent-0", "terminated", is_terminated).await;
    let terminated = agent_state(&pod).and_then(|s| s.terminated.clone());
    assert_eq!(terminated.as_ref().map(|t| t.exit_code), Some(1));
    assert_eq!(terminated.and_then(|t| t.reason).as_deref(), Some("Error"));
    assert_eq!(phase(&pod), "Failed");
    assert_eq!(
        log_through(&b.kubelet, "agent-0", "Failed/terminated(1)").await,
        ["bound", "Pending/ContainerCreating", "Failed/terminated(1)"]
    );
}

/// `pullfail-*`: ErrImagePull with containerd's message, then ImagePullBackOff carrying it, then
/// ErrImagePull again — for a 401, a missing manifest and a platform mismatch.
#[tokio::test]
async fn pull_failures_loop_with_containerd_messages() {
    let Some(b) = bench("kubelet-pull", |o| o) else {
        return;
    };
    let cases = [
        ("unauthorized", PullFailure::Unauthorized),
        ("manifest", PullFailure::ManifestUnknown),
        ("platform", PullFailure::PlatformMismatch),
    ];
    let repo = |suffix: &str| format!("agent-pullfail-{suffix}");
    for (suffix, _) in cases {
        create(&b.pods, &plain(suffix, &repo(suffix))).await;
    }
    for (suffix, failure) in cases {
        let image = image(&repo(suffix));
        let first = wait_for(&b.pods, suffix, "ErrImagePull", |p| {
            is_waiting(p, "ErrImagePull")
        })
        .await;
        assert_eq!(
            waiting(&first).and_then(|(_, m)| m),
            Some(failure.message(&image))
        );
        let backoff = wait_for(&b.pods, suffix, "ImagePullBackOff", |p| {
            is_waiting(p, "ImagePullBackOff")
        })
        .await;
        assert_eq!(
            waiting(&backoff).and_then(|(_, m)| m),
            Some(failure.backoff_message(&image))
        );
        assert_eq!(phase(&backoff), "Pending");
    }
    // The loop: each pod goes back to ErrImagePull after its back-off.
    for (suffix, _) in cases {
        let start = Instant::now();
        while summaries(&b.kubelet, suffix)
            .iter()
            .filter(|s| *s == "Pending/ErrImagePull")
            .count()
            < 2
        {
            assert!(
                start.elapsed() < HANG,
                "{:?}",
                summaries(&b.kubelet, suffix)
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert_eq!(
            summaries(&b.kubelet, suffix)[..5],
            [
                "bound",
                "Pending/ContainerCreating",
                "Pending/ErrImagePull",
                "Pending/ImagePullBackOff",
                "Pending/ErrImagePull"
            ]
        );
    }
}

/// A missing `envFrom` Secret holds the pod in CreateContainerConfigError (with the pod IP
/// already assigned); creating the Secret lets it run.
#[tokio::test]
async fn missing_env_secret_is_a_config_error_until_it_is_created() {
    let Some(b) = bench("kubelet-secret", |o| o) else {
        return;
    };
    let pod = agent_pod("agent-0", &image("agent"), Some("agent-env"), 30);
    create(&b.pods, &pod).await;
    let held = wait_for(&b.pods, "agent-0", "CreateContainerConfigError", |p| {
        is_waiting(p, "CreateContainerConfigError")
    })
    .await;
    assert_eq!(
        waiting(&held).and_then(|(_, m)| m).as_deref(),
        Some("secret \"agent-env\" not found")
    );
    assert!(held.status.as_ref().is_some_and(|s| s.pod_ip.is_some()));
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": "agent-env" },
        "stringData": { "TOKEN": "not-a-real-value" },
    }))
    .expect("a valid Secret");
    Api::<Secret>::namespaced(b.plane.client(Identity::Admin), &b.ns)
        .create(&PostParams::default(), &secret)
        .await
        .expect("the Secret is created");
    let running = wait_for(&b.pods, "agent-0", "running", is_running).await;
    assert_eq!(phase(&running), "Running");
    let seen = log_through(&b.kubelet, "agent-0", "Running/running").await;
    let held_at = seen
        .iter()
        .position(|s| s == "Pending/CreateContainerConfigError");
    let ran_at = seen.iter().position(|s| s == "Running/running");
    assert!(held_at < ran_at && held_at.is_some(), "{seen:?}");
}

/// `never-starts` stays in ContainerCreating: a pod with the same start delay created after it
/// has run (due work runs in due order), and the first one never got past waiting.
#[tokio::test]
async fn never_starts_stays_waiting() {
    let Some(b) = bench("kubelet-never", |o| o) else {
        return;
    };
    create(&b.pods, &plain("stuck", "agent-never-starts")).await;
    wait_for(&b.pods, "stuck", "ContainerCreating", |p| {
        is_waiting(p, "ContainerCreating")
    })
    .await;
    create(&b.pods, &plain("sentinel", "agent")).await;
    wait_for(&b.pods, "sentinel", "running", is_running).await;
    let stuck = b.pods.get("stuck").await.expect("the pod exists");
    assert!(
        is_waiting(&stuck, "ContainerCreating"),
        "{}",
        describe(Some(&stuck))
    );
    log_through(&b.kubelet, "sentinel", "Running/running").await;
    assert_eq!(
        summaries(&b.kubelet, "stuck"),
        ["bound", "Pending/ContainerCreating"]
    );
}

/// `unschedulable`: never bound; `PodScheduled=False`, reason Unschedulable.
#[tokio::test]
async fn unschedulable_is_never_bound() {
    let Some(b) = bench("kubelet-unsched", |o| o) else {
        return;
    };
    create(&b.pods, &plain("agent-0", "agent-unschedulable")).await;
    let pod = wait_for(&b.pods, "agent-0", "unschedulable", |p| {
        p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter().any(|c| {
                    c.type_ == "PodScheduled"
                        && c.status == "False"
                        && c.reason.as_deref() == Some("Unschedulable")
                })
            })
    })
    .await;
    assert_eq!(pod.spec.and_then(|s| s.node_name), None);
    assert_eq!(
        log_through(&b.kubelet, "agent-0", "Pending/Unschedulable").await,
        ["Pending/Unschedulable"]
    );
}

/// `vanish`: bound, then removed by the kubelet's uid-fenced delete (as after an eviction).
#[tokio::test]
async fn vanish_is_removed_with_a_uid_precondition() {
    let Some(b) = bench("kubelet-vanish", |o| o) else {
        return;
    };
    let created = create(&b.pods, &plain("agent-0", "agent-vanish")).await;
    wait_gone(&b.pods, "agent-0").await;
    assert_final_delete(&b, uid(&created), FinishOutcome::Deleted).await;
}

/// A graceful delete of a running pod only marks it; the kubelet writes its container as
/// killed by SIGTERM, and once the (scaled) grace period has passed removes it with
/// `gracePeriodSeconds: 0` and the pod's uid.
#[tokio::test]
async fn graceful_delete_is_finished_after_the_grace_period() {
    let Some(b) = bench("kubelet-delete", |o| o) else {
        return;
    };
    create(&b.pods, &agent_pod("agent-0", &image("agent"), None, 20)).await;
    let running = wait_for(&b.pods, "agent-0", "running", is_running).await;
    let answer = b
        .pods
        .delete("agent-0", &DeleteParams::default())
        .await
        .expect("the delete is accepted");
    let marked = answer.left().expect("a running pod is only marked");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(20));
    let terminated = wait_for(&b.pods, "agent-0", "terminated", is_terminated).await;
    let code = agent_state(&terminated)
        .and_then(|s| s.terminated.as_ref())
        .map(|t| t.exit_code);
    assert_eq!(code, Some(SIGTERM_EXIT_CODE));
    wait_gone(&b.pods, "agent-0").await;
    assert_eq!(
        log_through(&b.kubelet, "agent-0", "finished Deleted").await,
        [
            "bound",
            "Pending/ContainerCreating",
            "Running/running",
            "Failed/terminated(143)",
            "finished Deleted"
        ]
    );
    assert_final_delete(&b, uid(&running), FinishOutcome::Deleted).await;
}

/// The kubelet's final delete carries the uid precondition: when the marked pod was replaced by
/// a new pod under the same name behind the (paused) kubelet's back, its delete answers 409 and
/// the new pod survives — and then runs.
#[tokio::test]
async fn final_delete_never_removes_a_recreated_pod() {
    let Some(b) = bench("kubelet-fence", |o| o) else {
        return;
    };
    let spec = agent_pod("agent-0", &image("agent"), None, 10);
    let old = create(&b.pods, &spec).await;
    wait_for(&b.pods, "agent-0", "running", is_running).await;
    b.pods
        .delete("agent-0", &DeleteParams::default())
        .await
        .expect("the delete is accepted");
    // The kubelet has seen the mark once it wrote the SIGTERM exit.
    wait_for(&b.pods, "agent-0", "terminated", is_terminated).await;
    b.kubelet.pause();
    let started_pause = Instant::now();
    b.pods
        .delete("agent-0", &DeleteParams::default().grace_period(0))
        .await
        .expect("the force delete is accepted");
    wait_gone(&b.pods, "agent-0").await;
    let new = create(&b.pods, &spec).await;
    assert_ne!(uid(&new), uid(&old));
    // Let the old pod's grace period (10 s model = 1 s real) run out while paused, so its
    // final delete is due before the kubelet learns about the replacement.
    let grace = Duration::from_millis(1_200);
    if let Some(rest) = grace.checked_sub(started_pause.elapsed()) {
        tokio::time::sleep(rest).await;
    }
    b.kubelet.resume();
    assert_final_delete(&b, uid(&old), FinishOutcome::PreconditionFailed).await;
    let survivor = wait_for(&b.pods, "agent-0", "running", is_running).await;
    assert_eq!(uid(&survivor), uid(&new));
    assert!(survivor.metadata.deletion_timestamp.is_none());
}

/// A status write computed from a stale resourceVersion answers 409: the kubelet re-reads the
/// pod and writes again, and the pod still reaches Running (the change made meanwhile kept).
#[tokio::test]
async fn stale_status_write_is_reread_and_retried() {
    // A 20 s (model) start delay: 2 s real between ContainerCreating and the start.
    let Some(b) = bench("kubelet-conflict", |o| {
        o.with_start_delay(Duration::from_secs(20))
    }) else {
        return;
    };
    create(&b.pods, &plain("agent-0", "agent")).await;
    wait_for(&b.pods, "agent-0", "ContainerCreating", |p| {
        is_waiting(p, "ContainerCreating")
    })
    .await;
    b.kubelet.pause();
    let paused_at = Instant::now();
    let label = serde_json::json!({ "metadata": { "labels": { "touched": "yes" } } });
    b.pods
        .patch("agent-0", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .expect("the label patch is accepted");
    if let Some(rest) = Duration::from_millis(2_200).checked_sub(paused_at.elapsed()) {
        tokio::time::sleep(rest).await;
    }
    b.kubelet.resume();
    let pod = wait_for(&b.pods, "agent-0", "running", is_running).await;
    let labels = pod.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("touched").map(String::as_str), Some("yes"));
    assert_eq!(
        log_through(&b.kubelet, "agent-0", "Running/running").await,
        [
            "bound",
            "Pending/ContainerCreating",
            "conflict",
            "Running/running"
        ]
    );
}

/// A kubelet can be started and stopped from a plain synchronous test: it runs on its own
/// thread and runtime, and dropping it joins that thread.
#[test]
fn starts_and_stops_from_a_sync_test() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    let ns = plane.namespace("kubelet-sync");
    let kubelet = kubelet(plane, Options::in_namespace(&ns));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the test's own client");
    runtime.block_on(async {
        let pods: Api<Pod> = Api::namespaced(plane.client(Identity::Admin), &ns);
        create(&pods, &plain("agent-0", "agent")).await;
        wait_for(&pods, "agent-0", "running", is_running).await;
    });
    drop(kubelet);
}

// ---- the simulator writes the same shapes ---------------------------------------------------

/// The fields apiary reads from a pod (deploy.md § Observation), normalised for comparison:
/// phase; each container's name, ready, started and state (reason, message, exit code);
/// every condition's type, status, reason and message; whether a pod IP is set.
fn shape(pod: &Pod) -> serde_json::Value {
    let status = pod.status.clone().unwrap_or_default();
    let containers: Vec<serde_json::Value> = status
        .container_statuses
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            let state = c.state.unwrap_or_default();
            let state = if let Some(w) = state.waiting {
                serde_json::json!({ "waiting": { "reason": w.reason, "message": w.message } })
            } else if let Some(t) = state.terminated {
                serde_json::json!({ "terminated": { "exitCode": t.exit_code, "reason": t.reason,
                    "containerID": t.container_id.is_some() } })
            } else if state.running.is_some() {
                serde_json::json!({ "running": {} })
            } else {
                serde_json::json!({})
            };
            serde_json::json!({ "name": c.name, "ready": c.ready, "started": c.started,
                "state": state, "containerID": c.container_id.is_some() })
        })
        .collect();
    let mut conditions: Vec<serde_json::Value> = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            serde_json::json!({ "type": c.type_, "status": c.status, "reason": c.reason,
                "message": c.message })
        })
        .collect();
    conditions.sort_by_key(|c| c["type"].as_str().unwrap_or_default().to_owned());
    serde_json::json!({
        "phase": status.phase,
        "qosClass": status.qos_class,
        "podIP": status.pod_ip.is_some(),
        "containers": containers,
        "conditions": conditions,
    })
}

/// Runs `pod` through the simulator's model until `done` holds, and answers its shape.
fn simulated_shape(namespace: &str, pod: &Pod, done: impl Fn(&Pod) -> bool) -> serde_json::Value {
    let mut model = ClusterModel::default();
    model.ensure_namespace(namespace);
    let name = pod.metadata.name.clone().unwrap_or_default();
    model
        .create_pod(namespace, pod.clone())
        .expect("the model creates the pod");
    for _ in 0..600 {
        model.advance(Duration::from_millis(100));
        let now = model
            .get_pod(namespace, &name)
            .expect("the pod is in the model");
        if done(&now) {
            return shape(&now);
        }
    }
    panic!("the model never brought {name} to the expected state");
}

/// Same script, same shapes: the real-server kubelet and the simulator agree on every field
/// apiary reads — running, crashed, pull failure (and its back-off), missing Secret, never
/// starting.
#[tokio::test]
async fn status_shapes_agree_with_the_simulator() {
    let Some(b) = bench("kubelet-shapes", |o| o) else {
        return;
    };
    type Done = fn(&Pod) -> bool;
    let cases: [(&str, String, Option<&str>, &str, Done); 6] = [
        ("run", image("agent"), None, "running", is_running),
        (
            "crash",
            image("agent-crash"),
            None,
            "terminated",
            is_terminated,
        ),
        (
            "pull",
            image("agent-pullfail-platform"),
            None,
            "ErrImagePull",
            |p| is_waiting(p, "ErrImagePull"),
        ),
        (
            "backoff",
            image("agent-pullfail-unauthorized"),
            None,
            "ImagePullBackOff",
            |p| is_waiting(p, "ImagePullBackOff"),
        ),
        (
            "secret",
            image("agent"),
            Some("absent-env"),
            "CreateContainerConfigError",
            |p| is_waiting(p, "CreateContainerConfigError"),
        ),
        (
            "never",
            image("agent-never-starts"),
            None,
            "ContainerCreating",
            |p| {
                is_waiting(p, "ContainerCreating")
                    && p.status.as_ref().is_some_and(|s| s.host_ip.is_some())
            },
        ),
    ];
    for (name, image, secret, _, _) in &cases {
        create(&b.pods, &agent_pod(name, image, *secret, 30)).await;
    }
    for (name, image, secret, what, done) in &cases {
        let real = shape(&wait_for(&b.pods, name, what, done).await);
        let simulated = simulated_shape(&b.ns, &agent_pod(name, image, *secret, 30), done);
        assert_eq!(real, simulated, "pod {name} ({what})");
    }
}

/// Environment values never reach the kubelet's action log or its `Debug` output: it records
/// names and status summaries only.
#[tokio::test]
async fn environment_values_stay_out_of_the_kubelet_log() {
    let Some(b) = bench("kubelet-redact", |o| o) else {
        return;
    };
    let value = "h2-env-value-never-shown";
    let mut pod = plain("agent-0", "agent");
    if let Some(container) = pod.spec.as_mut().and_then(|s| s.containers.first_mut()) {
        container.env = Some(vec![k8s_openapi::api::core::v1::EnvVar {
            name: "TOKEN".to_owned(),
            value: Some(value.to_owned()),
            value_from: None,
        }]);
    }
    create(&b.pods, &pod).await;
    wait_for(&b.pods, "agent-0", "running", is_running).await;
    log_through(&b.kubelet, "agent-0", "Running/running").await;
    let shown = format!("{:?} {:?}", b.kubelet.actions(), b.kubelet);
    assert!(!shown.contains(value), "{shown}");
}
