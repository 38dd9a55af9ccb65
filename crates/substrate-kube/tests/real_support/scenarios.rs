//! The `Cluster` scenarios of the real-server tier (README.md § Testing) that are not one deploy
//! or undeploy (those are rows of the scenario table, `tests/scenarios`), each defined once over
//! a [`Stage`] and run by `tests/real_server/cluster.rs` against the simulator and against the
//! real apiserver: lost race, 16 concurrent deploys, status in every state, and gc with the
//! young-orphan gate (plus the old-orphan case as a pure plan over objects and a clock read from
//! the server).
//!
//! Each asserts the outcome and the order of what apiary sent (the [`super::Tap`] log), and the
//! final objects as the admin reads them. Layer: test scenarios; they decide nothing and stage
//! objects only through the API.

use std::time::Duration;

use apiary_apiserver_sim::{Resource, Verb};
use apiary_classify::gc::{OrphanSweep, plan_gc};
use apiary_classify::status::StatusState;
use apiary_substrate::Substrate as _;
use apiary_substrate::driver;
use apiary_substrate::naming::AgentIdentity;
use apiary_substrate::observe::{observe_pod, observe_secret};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{
    POD, Stage, Tap, agent, attempt, delete_fence, fence_of, has_container_status, image,
    is_running, options, phase, secret_ref, succeeded, waiting_reason,
};

/// A generous deadline for scenarios that end well before it.
const LONG: Duration = Duration::from_secs(30);
/// A short deadline for scenarios that must reach it.
const SHORT: Duration = Duration::from_secs(2);

/// Index in `log` of the first 2xx-answered `verb` on `resource`.
fn position(log: &[apiary_apiserver_sim::LoggedRequest], verb: Verb, resource: Resource) -> usize {
    log.iter()
        .position(|r| r.is(verb, resource) && r.status.is_some_and(|c| (200..300).contains(&c)))
        .unwrap_or_else(|| panic!("no successful {verb:?} {resource:?}"))
}

/// deploy.md § Losing the create race: a contender that read the name as free and whose pod
/// create meets the winner's pod (409 `AlreadyExists`) verifies it, drops only its own Secret
/// (uid-fenced), never deletes a pod, and returns the winner's name once it started. The race
/// is staged without timing: the loser's Secret create is held until the winner has deployed.
pub async fn lost_race_adopts_the_winner(s: &Stage) {
    let loser_tap = Tap::new();
    let gate = loser_tap.hold(1, |r| r.is(Verb::Create, Resource::Secrets));
    let loser = s.cluster_tapped(&loser_tap);
    let winner = s.cluster();
    let config = s.config(&image(""));
    let opts = options(LONG);
    let (lost, won) = tokio::join!(driver::deploy(&loser, &config, &opts), async {
        gate.held(1).await;
        let won = driver::deploy(&winner, &config, &opts).await;
        gate.release();
        won
    });
    assert_eq!(won.expect("the winner deploys").pod, POD);
    let lost = lost.expect("the loser adopts the winner's pod");
    assert_eq!(lost.pod, POD);
    let log = loser_tap.requests();
    let creates: Vec<_> = super::of(&log, Verb::Create, Resource::Pods)
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(creates, [Some(409)], "{log:?}");
    let own_secret = super::of(&log, Verb::Create, Resource::Secrets)[0]
        .body_json()
        .and_then(|b| b["metadata"]["name"].as_str().map(str::to_owned))
        .expect("the loser's Secret name");
    let secret_deletes = succeeded(&log, Verb::Delete, Resource::Secrets);
    assert_eq!(secret_deletes.len(), 1, "{log:?}");
    assert!(secret_deletes[0].path.ends_with(&own_secret));
    assert!(
        secret_deletes[0]
            .body_json()
            .is_some_and(|b| b["preconditions"]["uid"].is_string()),
        "uid-fenced"
    );
    assert!(super::of(&log, Verb::Delete, Resource::Pods).is_empty());
    assert!(s.of(Verb::Delete, Resource::Pods).is_empty());
    let pod = s.pod().await.expect("the winner's pod");
    assert_eq!(s.secret_names().await, [secret_ref(&pod).expect("envFrom")]);
}

/// R15/R22: 16 concurrent deploys of one agent (each its own client), all having read the name
/// as free (their Secret creates are held until all 16 are in flight): exactly one pod create is
/// accepted, all 16 return its name, no pod is deleted, and after the next deploy (with its GC)
/// exactly one pod and one Secret — the winner's — remain.
pub async fn r15_sixteen_concurrent_deploys_one_pod(s: &Stage) {
    const CONTENDERS: usize = 16;
    let gate = s
        .tap
        .hold(CONTENDERS, |r| r.is(Verb::Create, Resource::Secrets));
    let config = s.config(&image(""));
    let clusters: Vec<_> = (0..CONTENDERS).map(|_| s.cluster()).collect();
    let opts = options(LONG);
    let (results, ()) = tokio::join!(
        futures::future::join_all(clusters.iter().map(|c| driver::deploy(c, &config, &opts))),
        async {
            gate.held(CONTENDERS).await;
            gate.release();
        }
    );
    for result in &results {
        let deployed = result.as_ref().expect("every contender succeeds");
        assert_eq!(deployed.pod, POD);
    }
    assert_eq!(s.pod_names().await, [POD], "exactly one pod");
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    assert_eq!(
        s.succeeded(Verb::Create, Resource::Secrets).len(),
        CONTENDERS
    );
    let lost = s
        .of(Verb::Create, Resource::Pods)
        .iter()
        .filter(|r| r.status == Some(409))
        .count();
    assert_eq!(lost, CONTENDERS - 1, "every loser met AlreadyExists");
    assert!(s.of(Verb::Delete, Resource::Pods).is_empty());
    let winner_secret = secret_ref(&s.pod().await.expect("pod")).expect("envFrom");
    let after_race = s.secret_names().await;
    let next = driver::deploy(&s.cluster(), &config, &opts)
        .await
        .expect("the next deploy is a no-op");
    assert_eq!(next.pod, POD);
    assert_eq!(s.secret_names().await, [winner_secret]);
    assert_eq!(s.pod_names().await, [POD]);
    println!(
        "{:?}: {CONTENDERS} deploys, {lost} lost pod creates, {} Secrets after the race, {} \
         requests",
        s.backend,
        after_race.len(),
        s.requests().len()
    );
}

/// A pod under the agent's name that apiary did not make (no labels or annotations).
fn foreign_pod(s: &Stage, name: &str) -> Pod {
    let (mut pod, _) = attempt(&s.config(&image("")), 3);
    pod.metadata = ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    pod
}

/// deploy.md § status: every state a report can carry, each for its own agent in one namespace
/// (absent, started, starting, pull-failing, terminated, broken, deleting, foreign), with the
/// referenced Secret's presence for verified pods; and status sends reads only.
pub async fn status_in_every_state(s: &Stage) {
    let cases: [(&str, &str, bool, StatusState); 8] = [
        ("absent", "", false, StatusState::Absent),
        ("started", "", true, StatusState::Started),
        ("starting", "never-starts", true, StatusState::Starting),
        (
            "pulling",
            "pullfail-manifest",
            true,
            StatusState::PullFailing,
        ),
        ("crashed", "crash", true, StatusState::Terminated),
        ("broken", "", false, StatusState::Broken),
        ("deleting", "", true, StatusState::Deleting),
        ("foreign", "", false, StatusState::Foreign),
    ];
    let mut staged = Vec::new();
    for (index, (name, keyword, with_secret, state)) in cases.into_iter().enumerate() {
        let agent = AgentIdentity::new(&format!("status {name}")).expect("agent");
        let config = s.config_for(&agent, &image(keyword));
        let generation = u32::try_from(index).expect("small") + 0x100;
        let (mut pod, secret) = attempt(&config, generation);
        let pod_name = config.pod_name();
        match state {
            StatusState::Absent => {}
            StatusState::Foreign => {
                s.create_pod(&foreign_pod(s, &pod_name)).await;
            }
            _ => {
                if with_secret {
                    s.create_secret(&secret).await;
                }
                if state == StatusState::Deleting
                    && let Some(spec) = pod.spec.as_mut()
                {
                    // Long enough that neither kubelet finishes the deletion during the test.
                    spec.termination_grace_period_seconds = Some(1_000_000);
                }
                s.create_pod(&pod).await;
            }
        }
        staged.push((agent, config, pod_name, state, with_secret));
    }
    for (_, _, pod_name, state, _) in &staged {
        let settled = |p: &Pod| match state {
            StatusState::Started | StatusState::Deleting => is_running(p),
            // The foreign pod names a Secret nobody made: it waits, like a starting one.
            StatusState::Starting | StatusState::Foreign => has_container_status(p),
            StatusState::PullFailing => {
                waiting_reason(p).is_some_and(|r| r == "ErrImagePull" || r == "ImagePullBackOff")
            }
            StatusState::Terminated => phase(p) == Some("Failed"),
            StatusState::Broken => {
                waiting_reason(p).as_deref() == Some("CreateContainerConfigError")
            }
            _ => true,
        };
        if *state != StatusState::Absent {
            s.until_pod("the pod settles", pod_name, settled).await;
        }
        if *state == StatusState::Deleting {
            s.delete_pod(pod_name).await;
            s.until_pod("the deletion mark", pod_name, |p| {
                p.metadata.deletion_timestamp.is_some()
            })
            .await;
        }
    }
    let cluster = s.cluster();
    s.tap.clear();
    for (agent, config, pod_name, state, with_secret) in &staged {
        let report = driver::status(&cluster, agent, Some(config))
            .await
            .expect("status");
        assert_eq!(report.state, *state, "{pod_name}: {report:?}");
        match state {
            StatusState::Absent | StatusState::Foreign => {
                assert_eq!(
                    (report.condition.clone(), report.secret.clone()),
                    (None, None)
                );
                assert_eq!(report.intent_matches, None);
            }
            _ => {
                let secret = report
                    .secret
                    .as_ref()
                    .expect("a verified pod names its Secret");
                assert_eq!(secret.exists, *with_secret, "{report:?}");
                assert_eq!(report.intent_matches, Some(true));
            }
        }
        match state {
            StatusState::PullFailing => {
                let condition = report.condition.as_deref().expect("condition");
                assert!(condition.contains("has no image at"), "{condition}");
            }
            StatusState::Terminated => {
                let condition = report.condition.as_deref().expect("condition");
                assert!(condition.contains("code 1"), "{condition}");
            }
            StatusState::Broken => {
                let condition = report.condition.as_deref().expect("condition");
                assert!(
                    condition.contains("CreateContainerConfigError"),
                    "{condition}"
                );
            }
            _ => {}
        }
    }
    assert!(s.mutations().is_empty(), "status only reads");
}
/// G5/G8 with the age gate: an unreferenced Secret created just now is young (the server's own
/// `creationTimestamp` and `Date` clock), so `gc --dry-run` plans only the terminated residue
/// (pod and its Secret) while reporting that the orphan sweep ran; the next deploy's preflight
/// GC collects the residue with the re-read fence and keeps the young orphan.
///
/// The old-orphan case needs a clock 1200 s ahead, which a real server cannot give; it is
/// expressed as the pure plan over the same objects as read from the server, with the server's
/// own `Date` clock moved by hand: 1199 s keeps the orphan, 1200 s plans it.
pub async fn g5_gc_keeps_the_young_orphan(s: &Stage) {
    let desired = s.config(&image(""));
    let (_, young) = attempt(&desired, 0x0000_00a2);
    let young_name = young.metadata.name.clone().expect("name");
    s.create_secret(&young).await;
    let (residue, residue_secret) = attempt(&s.config(&image("crash")), 0x0000_00a3);
    let residue_secret_name = residue_secret.metadata.name.clone().expect("name");
    s.create_secret(&residue_secret).await;
    s.create_pod(&residue).await;
    let terminated = s
        .until_pod("the residue terminates", POD, |p| {
            phase(p) == Some("Failed")
        })
        .await;
    let cluster = s.cluster();

    // The pure old-orphan case over what the server returns.
    let selector = agent().selector();
    let pods = cluster.list_pods(&selector).await.expect("pods");
    let secrets = cluster.list_secrets(&selector).await.expect("secrets");
    let server_now = pods
        .server_now
        .expect("the server sends a Date header")
        .timestamp();
    let observed_pods: Vec<_> = pods
        .items
        .iter()
        .map(|p| observe_pod(p, agent().binding()))
        .collect();
    let observed_secrets: Vec<_> = secrets
        .iter()
        .map(|x| observe_secret(x, agent().binding()))
        .collect();
    let created = secrets
        .iter()
        .find(|x| x.metadata.name.as_deref() == Some(young_name.as_str()))
        .and_then(|x| x.metadata.creation_timestamp.as_ref())
        .expect("the server stamped the orphan")
        .0
        .as_second();
    assert!(
        server_now - created < 1200,
        "the orphan is young on the server clock"
    );
    for (shift, planned) in [(1199, false), (1200, true)] {
        let plan = plan_gc(
            &observed_pods,
            &observed_secrets,
            Some(created + shift),
            &agent().owner(),
        );
        assert_eq!(plan.orphan_sweep, OrphanSweep::Ran);
        let names: Vec<_> = plan.secrets.iter().map(|d| d.name().to_owned()).collect();
        assert_eq!(
            names.contains(&young_name),
            planned,
            "age {shift}: {names:?}"
        );
        assert!(names.contains(&residue_secret_name));
    }
    s.tap.clear();

    let report = driver::gc(&cluster, &agent(), true).await.expect("gc");
    assert_eq!(report.orphan_sweep, Some(OrphanSweep::Ran));
    assert_eq!(report.pods, [POD]);
    assert_eq!(report.secrets, std::slice::from_ref(&residue_secret_name));
    assert!(s.mutations().is_empty(), "a dry run only reads");

    let deployed = driver::deploy(&cluster, &desired, &options(LONG))
        .await
        .expect("deployed");
    assert_eq!(deployed.pod, POD);
    let current = secret_ref(&s.pod().await.expect("pod")).expect("envFrom");
    let mut expected = vec![current, young_name.clone()];
    expected.sort();
    assert_eq!(s.secret_names().await, expected);
    let secret_deletes = s.succeeded(Verb::Delete, Resource::Secrets);
    assert_eq!(secret_deletes.len(), 1, "{secret_deletes:?}");
    assert!(secret_deletes[0].path.ends_with(&residue_secret_name));
    let pod_deletes = s.of(Verb::Delete, Resource::Pods);
    assert!(!pod_deletes.is_empty(), "the residue was collected");
    for delete in &pod_deletes {
        assert_eq!(delete_fence(delete).0, fence_of(&terminated).0);
    }
}
