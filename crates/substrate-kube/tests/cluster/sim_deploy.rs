//! The real deploy driver with the real `Cluster` (a `kube::Client` built from the simulator's
//! kubeconfig) against the loopback apiserver simulator: every deploy.md § Deploy loop scenario
//! that involves the apiserver, each asserting the outcome AND the simulator's request log, and
//! each run twice — on a healthy apiserver and on one that fails a fraction of requests transiently
//! (500, 503, 429 with `Retry-After`, dropped connections), where it must reach the same outcome.
//!
//! Layer: integration tests over real HTTP on 127.0.0.1. They decide nothing and must never
//! contact a real cluster. Time runs 1000× faster in the simulator (grace periods, kubelet
//! delays); deadlines and polls are short real durations so the file runs in seconds.

use std::time::{Duration, Instant};

use crate::sim_support::{
    FAST, NS, POD, Sim, Weather, after_preflight, agent, attempt, config, config_with,
    delete_fence, image, options, secret_ref, start,
};
use apiary_apiserver_sim::{DateMode, FaultAction, FaultRule, Matcher, Resource, Verb};
use apiary_classify::gc::OrphanSweep;
use apiary_cluster_model::kubelet::PodScript;
use apiary_substrate::driver::{self, DeployError};
use apiary_substrate_kube::RetryPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A generous deadline for scenarios that end well before it.
const LONG: Duration = Duration::from_secs(15);
/// The poll interval of every scenario (watching usually wakes the driver sooner).
const POLL: Duration = Duration::from_millis(200);

/// Run a scenario on a calm and on a stormy apiserver, as two named tests.
macro_rules! in_both_weathers {
    ($(#[doc = $doc:literal])* $scenario:ident) => {
        mod $scenario {
            $(#[doc = $doc])*
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn calm() {
                super::$scenario(super::Weather::Calm).await;
            }
            $(#[doc = $doc])*
            /// (Under injected transient faults.)
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stormy() {
                super::$scenario(super::Weather::Stormy).await;
            }
        }
    };
}

/// A simulator with [`NS`] and the weather applied. Stormy weather also fails a few early
/// requests for certain (a dropped namespace read, a 429 with `Retry-After` on the first pod
/// list, a 503 on the first pod read), so every stormy run really exercises the retries.
async fn stage(weather: Weather) -> Sim {
    let s = start(FAST, true).await;
    if weather == Weather::Stormy {
        let faults = s.sim.faults();
        faults.add(FaultRule::times(
            1,
            Matcher::verb(Verb::Get, Resource::Namespaces),
            FaultAction::DropConnection,
        ));
        faults.add(FaultRule::times(
            1,
            Matcher::verb(Verb::List, Resource::Pods),
            FaultAction::TooManyRequests {
                retry_after_seconds: 1,
            },
        ));
        faults.add(FaultRule::times(
            1,
            Matcher::verb(Verb::Get, Resource::Pods),
            FaultAction::ServiceUnavailable,
        ));
    }
    s.set_weather(weather);
    s
}

/// A short deadline that still leaves a stormy run (with its `Retry-After` waits) time to
/// create the pod before it expires.
fn short_deadline(weather: Weather) -> Duration {
    match weather {
        Weather::Calm => Duration::from_millis(1500),
        Weather::Stormy => Duration::from_secs(4),
    }
}

/// In stormy weather, faults were really injected.
fn assert_weather(s: &Sim, weather: Weather) {
    if weather == Weather::Stormy {
        assert!(s.sim.faults().injected() > 0, "no fault was injected");
    }
}

/// Index in the request log of the first 2xx-answered `verb` on `resource`.
fn position(s: &Sim, verb: Verb, resource: Resource) -> usize {
    s.sim
        .requests()
        .iter()
        .position(|r| r.is(verb, resource) && r.status.is_some_and(|c| (200..300).contains(&c)))
        .unwrap_or_else(|| panic!("no successful {verb:?} {resource:?}"))
}

/// R1: an empty namespace ends with exactly one started pod whose name is returned; exactly one
/// Secret and one pod are created (the Secret first), nothing is deleted, every read is a
/// quorum read.
async fn r1_fresh_deploy(weather: Weather) {
    let s = stage(weather).await;
    let cluster = s.cluster().await;
    let deployed = driver::deploy(&cluster, &config(&image("")), &options(LONG, POLL))
        .await
        .expect("deployed");
    assert_eq!(deployed.pod, POD);
    assert!(deployed.intent_matches);

    let secrets = s.succeeded(Verb::Create, Resource::Secrets);
    let pods = s.succeeded(Verb::Create, Resource::Pods);
    assert_eq!((secrets.len(), pods.len()), (1, 1));
    assert!(
        position(&s, Verb::Create, Resource::Secrets) < position(&s, Verb::Create, Resource::Pods)
    );
    assert!(s.served().iter().all(|r| r.method != "DELETE"));
    for read in s.served().iter().filter(|r| r.method == "GET") {
        if read.query_param("watch").is_none() {
            assert_eq!(read.query_param("resourceVersion"), None, "{read:?}");
        }
    }
    let pod = s.pod().expect("the pod exists");
    assert_eq!(s.secret_names(), [secret_ref(&pod).expect("envFrom")]);
    assert_eq!(s.pod_names(), [POD]);
    if weather == Weather::Calm {
        // The fixed prefix of a fresh deploy (the preflight's four requests in any order that
        // keeps GC's own, then the creates); only watch wake-ups and re-reads follow.
        let served = s.served();
        let targets: Vec<_> = served.iter().map(|r| r.target).collect();
        assert_eq!(
            after_preflight(&targets, true)[..2],
            [
                Some((Resource::Secrets, Verb::Create)),
                Some((Resource::Pods, Verb::Create)),
            ],
            "{targets:?}"
        );
        assert!(
            served[6..]
                .iter()
                .all(|r| r.target == Some((Resource::Pods, Verb::Watch))
                    || r.target == Some((Resource::Pods, Verb::Get)))
        );
        assert!(served.len() <= 12, "{} requests", served.len());
    }
    assert_weather(&s, weather);
}
in_both_weathers!(
    /// R1: a fresh deploy creates one Secret then one pod, deletes nothing, returns the name.
    r1_fresh_deploy
);

/// R2/R4 and deploy.md § Latest condition, deadline, zero mutation: deploying an agent whose pod is
/// started writes nothing — only the namespace GET and reads — even with a changed
/// configuration, which is reported as a non-matching intent.
async fn r2_noop_zero_mutation(weather: Weather) {
    let s = stage(weather).await;
    let cluster = s.cluster().await;
    driver::deploy(&cluster, &config(&image("")), &options(LONG, POLL))
        .await
        .expect("first deploy");
    let uid = s.pod().and_then(|p| p.metadata.uid).expect("uid");
    let secrets = s.secret_names();

    for (edited, matches) in [(false, true), (true, false)] {
        s.sim.clear_requests();
        let config = config_with(&image(""), |c| {
            if edited {
                c.cpu_limit = "3".to_owned();
            }
        });
        let deployed = driver::deploy(&cluster, &config, &options(LONG, POLL))
            .await
            .expect("no-op");
        assert_eq!(deployed.pod, POD);
        assert_eq!(deployed.intent_matches, matches);
        let served = s.served();
        assert!(
            served.iter().all(|r| r.method == "GET"),
            "zero mutation: {served:?}"
        );
        assert!(
            s.sim.requests().iter().all(|r| !r.is_mutation()),
            "not even a faulted write"
        );
        if weather == Weather::Calm {
            let targets: Vec<_> = served.iter().map(|r| r.target).collect();
            assert_eq!(after_preflight(&targets, true), [], "{targets:?}");
        }
    }
    assert_eq!(s.pod().and_then(|p| p.metadata.uid), Some(uid));
    assert_eq!(s.secret_names(), secrets);
    assert_weather(&s, weather);
}
in_both_weathers!(
    /// R2/R4: a no-op deploy performs only the namespace GET and reads.
    r2_noop_zero_mutation
);

/// R16 (the 107-Secrets regression): a pod that exits at once is reported once — exactly one
/// Secret and one pod created, E2 with the exit code, no delete of anything, well before the
/// deadline; the pod and its Secret stay as evidence.
async fn r16_crash_reported_once(weather: Weather) {
    let s = stage(weather).await;
    let cluster = s.cluster().await;
    // The error is not DeadlineExceeded: it was reported before the deadline.
    let error = driver::deploy(&cluster, &config(&image("crash")), &options(LONG, POLL))
        .await
        .expect_err("the pod crashes");
    assert!(
        matches!(error, DeployError::CreatedPodFailed { ref pod, .. } if pod == POD),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains("exited with code 1"), "{text}");
    assert!(
        text.contains(&format!("kubectl logs -n {NS} {POD} -c agent")),
        "{text}"
    );
    assert_eq!(s.succeeded(Verb::Create, Resource::Secrets).len(), 1);
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    assert!(s.sim.requests().iter().all(|r| r.method != "DELETE"));
    let pod = s.pod().expect("the crashed pod stays");
    assert_eq!(s.secret_names(), [secret_ref(&pod).expect("envFrom")]);
    assert_weather(&s, weather);
}
in_both_weathers!(
    /// R16: a crashing pod is reported once (E2, exit code) with exactly one Secret created.
    r16_crash_reported_once
);

/// R10: an image whose manifest does not exist is reported at once (E3 naming the registry and
/// image), long before the deadline, and nothing is deleted.
async fn r10_pull_failure_reported_without_delete(weather: Weather) {
    let s = stage(weather).await;
    let cluster = s.cluster().await;
    let image = image("pullfail-manifest");
    // The error is not DeadlineExceeded: it was reported before the deadline.
    let error = driver::deploy(&cluster, &config(&image), &options(LONG, POLL))
        .await
        .expect_err("the pull fails");
    assert!(
        matches!(error, DeployError::PullFailing { ref pod, .. } if pod == POD),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains("has no image at"), "{text}");
    assert!(text.contains(&image), "{text}");
    assert!(text.contains("registry.example.com"), "{text}");
    assert!(s.sim.requests().iter().all(|r| r.method != "DELETE"));
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    assert_eq!(s.pod_names(), [POD]);
    assert_weather(&s, weather);
}
in_both_weathers!(
    /// R10: a pull failure is E3 at once with no delete.
    r10_pull_failure_reported_without_delete
);

/// C9 / deploy.md § Create-intent fingerprint (the wedge escape): a never-started pod whose
/// recorded intent differs from this configuration is deleted with exactly the observed fence (no
/// grace override), waited for through its grace period, and recreated; the new pod starts.
async fn c9_wedge_escape_on_changed_intent(weather: Weather) {
    let s = stage(weather).await;
    let wedged = config(&image("never-starts"));
    let (pod, secret) = attempt(&wedged, 0x0bad_cafe);
    s.sim.with_model(|m| {
        m.create_secret(NS, secret).expect("secret");
        m.create_pod(NS, pod).expect("pod");
    });
    s.until("the wedged pod waits in ContainerCreating", |s| {
        s.pod().is_some_and(|p| {
            p.status
                .and_then(|st| st.container_statuses)
                .is_some_and(|c| !c.is_empty())
        })
    })
    .await;
    let observed = s.pod().expect("wedged pod");
    let old = (
        observed.metadata.uid.clone().expect("uid"),
        observed.metadata.resource_version.clone().expect("rv"),
    );

    let cluster = s.cluster().await;
    let deployed = driver::deploy(&cluster, &config(&image("")), &options(LONG, POLL))
        .await
        .expect("replaced and started");
    assert_eq!(deployed.pod, POD);
    assert!(deployed.intent_matches);

    let deletes = s.of(Verb::Delete, Resource::Pods);
    assert!(!deletes.is_empty());
    for delete in &deletes {
        assert_eq!(delete_fence(delete), old, "only ever the observed fence");
    }
    assert_eq!(s.succeeded(Verb::Delete, Resource::Pods).len(), 1);
    assert!(
        position(&s, Verb::Delete, Resource::Pods) < position(&s, Verb::Create, Resource::Pods)
    );
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    let now = s.pod().expect("the new pod");
    assert_ne!(now.metadata.uid.as_deref(), Some(old.0.as_str()));
    assert_weather(&s, weather);
}
in_both_weathers!(
    /// C9: a never-started pod with a changed intent is fence-deleted and recreated.
    c9_wedge_escape_on_changed_intent
);

/// R13: a pod waiting `CreateContainerConfigError` whose Secret exists is recoverable and has
/// the desired intent: it is observed to a short deadline (E1), never deleted, nothing created.
async fn r13_config_error_with_present_secret_keeps_observing(weather: Weather) {
    let s = stage(weather).await;
    let desired = config(&image(""));
    let (pod, secret) = attempt(&desired, 0x0000_0001);
    let secret_name = secret.metadata.name.clone().expect("name");
    s.sim.with_model(|m| {
        m.script_pods_named(NS, POD, PodScript::Inert);
        m.create_secret(NS, secret).expect("secret");
        m.create_pod(NS, pod).expect("pod");
        m.set_pod_waiting(
            NS,
            POD,
            "CreateContainerConfigError",
            Some("couldn't find key FOO in Secret agents/x"),
        )
        .expect("waiting");
    });
    let cluster = s.cluster().await;
    let deadline = short_deadline(weather);
    let started = Instant::now();
    let error = driver::deploy(&cluster, &desired, &options(deadline, POLL))
        .await
        .expect_err("never starts");
    assert!(started.elapsed() >= deadline);
    assert!(
        matches!(error, DeployError::DeadlineExceeded { ref pod, .. } if pod == POD),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("CreateContainerConfigError"),
        "{error}"
    );
    assert!(
        !s.succeeded(Verb::Get, Resource::Secrets).is_empty(),
        "the Secret was checked by a quorum GET"
    );
    assert!(
        s.succeeded(Verb::Get, Resource::Secrets)
            .iter()
            .all(|r| r.path.ends_with(&secret_name))
    );
    assert!(s.mutations().is_empty(), "{:?}", s.mutations());
    assert_weather(&s, weather);
}
in_both_weathers!(
    /// R13: `CreateContainerConfigError` with its Secret present: E1, no delete.
    r13_config_error_with_present_secret_keeps_observing
);

/// R14: a pod waiting `CreateContainerConfigError` whose Secret is confirmed absent is provably
/// broken: fenced delete, wait, recreate with a fresh Secret; the new pod starts.
async fn r14_config_error_with_absent_secret_replaced(weather: Weather) {
    let s = stage(weather).await;
    let desired = config(&image(""));
    let (pod, _never_created) = attempt(&desired, 0x0000_0002);
    s.sim.with_model(|m| m.create_pod(NS, pod).expect("pod"));
    s.until("the kubelet reports CreateContainerConfigError", |s| {
        s.pod().is_some_and(|p| {
            serde_json::to_string(&p.status).is_ok_and(|t| t.contains("CreateContainerConfigError"))
        })
    })
    .await;
    let observed = s.pod().expect("broken pod");
    let old = (
        observed.metadata.uid.clone().expect("uid"),
        observed.metadata.resource_version.clone().expect("rv"),
    );

    let cluster = s.cluster().await;
    let deployed = driver::deploy(&cluster, &desired, &options(LONG, POLL))
        .await
        .expect("replaced and started");
    assert_eq!(deployed.pod, POD);
    let secret_reads = s.of(Verb::Get, Resource::Secrets);
    assert!(
        secret_reads.iter().any(|r| r.status == Some(404)),
        "confirmed absence"
    );
    for delete in s.of(Verb::Delete, Resource::Pods) {
        assert_eq!(delete_fence(&delete), old);
    }
    assert_eq!(s.succeeded(Verb::Delete, Resource::Pods).len(), 1);
    assert_eq!(s.succeeded(Verb::Create, Resource::Secrets).len(), 1);
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    assert!(
        position(&s, Verb::Delete, Resource::Pods) < position(&s, Verb::Create, Resource::Secrets)
    );
    let now = s.pod().expect("the new pod");
    assert_ne!(now.metadata.uid, Some(old.0));
    assert_eq!(s.secret_names(), [secret_ref(&now).expect("envFrom")]);
    assert_weather(&s, weather);
}
in_both_weathers!(
    /// R14: `CreateContainerConfigError` with its Secret absent: delete and recreate.
    r14_config_error_with_absent_secret_replaced
);

/// R29/R30 and deploy.md § Latest condition, deadline, zero mutation: a pod that never starts fails
/// with E1 at the deadline naming the latest condition; expiry cleans nothing — the pod and its
/// Secret stay, no delete is sent.
async fn r29_deadline_expiry_cleans_nothing(weather: Weather) {
    let s = stage(weather).await;
    let cluster = s.cluster().await;
    let deadline = short_deadline(weather);
    let started = Instant::now();
    let error = driver::deploy(
        &cluster,
        &config(&image("never-starts")),
        &options(deadline, POLL),
    )
    .await
    .expect_err("never starts");
    let elapsed = started.elapsed();
    // Not before the deadline; that it is overrun by at most one request is the deploy
    // machine's property test (classify's machine_props), not a clock reading here.
    assert!(elapsed >= deadline, "{elapsed:?}");
    assert!(
        matches!(error, DeployError::DeadlineExceeded { ref pod, .. } if pod == POD),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains("ContainerCreating"), "{text}");
    assert!(text.contains(POD), "{text}");
    assert!(s.sim.requests().iter().all(|r| r.method != "DELETE"));
    assert_eq!(s.succeeded(Verb::Create, Resource::Secrets).len(), 1);
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    let pod = s.pod().expect("the pod stays");
    assert_eq!(s.secret_names(), [secret_ref(&pod).expect("envFrom")]);
    assert_weather(&s, weather);
}
in_both_weathers!(
    /// R29: deadline expiry is E1 and deletes nothing.
    r29_deadline_expiry_cleans_nothing
);

/// R21 / deploy.md § Verification: a pod under the agent's name that is not apiary's for this agent
/// is never touched: E8 naming the pod, and no write of any kind reaches the apiserver.
async fn r21_foreign_pod_never_touched(weather: Weather) {
    let s = stage(weather).await;
    let (mut pod, _) = attempt(&config(&image("")), 3);
    pod.metadata = ObjectMeta {
        name: Some(POD.to_owned()),
        namespace: Some(NS.to_owned()),
        ..ObjectMeta::default()
    };
    let uid = s
        .sim
        .with_model(|m| m.create_pod(NS, pod).expect("pod"))
        .metadata
        .uid;
    let cluster = s.cluster().await;
    let error = driver::deploy(&cluster, &config(&image("")), &options(LONG, POLL))
        .await
        .expect_err("foreign");
    assert_eq!(
        error,
        DeployError::ForeignPod {
            pod: POD.to_owned()
        }
    );
    assert!(
        error.to_string().contains("not managed by apiary"),
        "{error}"
    );
    assert!(
        s.sim.requests().iter().all(|r| !r.is_mutation()),
        "no write at all: {:?}",
        s.mutations()
    );
    assert_eq!(s.pod().and_then(|p| p.metadata.uid), uid);
    assert!(s.secret_names().is_empty());
    assert_weather(&s, weather);
}
in_both_weathers!(
    /// R21: a foreign pod under the name is E8 with no writes.
    r21_foreign_pod_never_touched
);

/// R31 / deploy.md § Namespace ensure: a missing namespace whose creation is forbidden (403) is E11
/// carrying `kubectl create namespace <ns>`; nothing is written: the only pod and Secret requests
/// are the preflight's reads, sent with the namespace ensure (deploy.md § Sequence).
async fn r31_forbidden_namespace(weather: Weather) {
    let s = start(FAST, false).await;
    s.sim
        .faults()
        .deny(Verb::Create, Some(Resource::Namespaces));
    s.set_weather(weather);
    let cluster = s.cluster().await;
    let error = driver::deploy(&cluster, &config(&image("")), &options(LONG, POLL))
        .await
        .expect_err("forbidden");
    assert_eq!(
        error,
        DeployError::NamespaceMissing {
            namespace: NS.to_owned()
        }
    );
    assert!(
        error
            .to_string()
            .contains("kubectl create namespace agents"),
        "{error}"
    );
    let requests = s.sim.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.method == "GET"
                || r.target.is_some_and(|(res, _)| res == Resource::Namespaces)),
        "{requests:?}"
    );
    let creates: Vec<_> = requests.iter().filter(|r| r.method == "POST").collect();
    assert_eq!(creates.len(), 1, "a 403 is not retried");
    assert_eq!(creates[0].status, Some(403));
    assert!(s.secret_names().is_empty() && s.pod_names().is_empty());
}
in_both_weathers!(
    /// R31: forbidden namespace creation is E11 naming the kubectl command, nothing written.
    r31_forbidden_namespace
);

/// deploy.md § Age gate (the same-clock rule), through a deploy's preflight GC: with the
/// apiserver's `Date` header an unreferenced Secret older than 1200 s is swept and a young one
/// kept; without it the sweep is skipped and both stay — and `gc --dry-run` reports which happens.
/// Terminated residue (pod and its Secret) is collected either way (G8/S9), with the re-read
/// fence.
async fn g5_g7_orphan_sweep_needs_the_date_header(weather: Weather, date: DateMode) {
    // 10× time: the young Secret stays far below 1200 s for the whole test.
    let s = start(10.0, true).await;
    s.set_weather(weather);
    s.sim.faults().set_date_mode(date);
    let desired = config(&image(""));
    let now = s.sim.now();
    let mut names = Vec::new();
    for (generation, age) in [(0x0000_00a1_u32, 5000_u64), (0x0000_00a2, 10)] {
        let (_, mut secret) = attempt(&desired, generation);
        secret.metadata.creation_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                now.checked_sub(Duration::from_secs(age)).expect("in range"),
            ));
        names.push(secret.metadata.name.clone().expect("name"));
        s.sim
            .with_model(|m| m.insert_secret(secret).expect("inserted"));
    }
    let (old, young) = (names[0].clone(), names[1].clone());
    // Terminated residue of an earlier attempt: collected with or without a clock (G8/S9).
    let (residue, residue_secret) = attempt(&desired, 0x0000_00a3);
    let residue_secret_name = residue_secret.metadata.name.clone().expect("name");
    let residue_fence = s.sim.with_model(|m| {
        m.script_pods_named(NS, POD, PodScript::Inert);
        m.create_secret(NS, residue_secret).expect("secret");
        m.create_pod(NS, residue).expect("pod");
        let pod = m.terminate_pod(NS, POD, 1).expect("terminated");
        m.script_pods_named(
            NS,
            POD,
            PodScript::Start {
                after: Duration::from_secs(1),
            },
        );
        (
            pod.metadata.uid.expect("uid"),
            pod.metadata.resource_version.expect("rv"),
        )
    });

    let cluster = s.cluster().await;
    let swept = date == DateMode::Normal;
    // `gc --dry-run` says whether the sweep would run and what it would take.
    let report = driver::gc(&cluster, &agent(), true).await.expect("gc");
    let expected_sweep = if swept {
        OrphanSweep::Ran
    } else {
        OrphanSweep::Skipped
    };
    assert_eq!(report.orphan_sweep, Some(expected_sweep));
    assert_eq!(report.pods, [POD]);
    let mut planned = report.secrets.clone();
    planned.sort();
    let mut expected = vec![residue_secret_name.clone()];
    if swept {
        expected.push(old.clone());
    }
    expected.sort();
    assert_eq!(planned, expected);
    assert!(s.mutations().is_empty(), "a dry run only reads");

    let deployed = driver::deploy(&cluster, &desired, &options(LONG, POLL))
        .await
        .expect("deployed");
    assert_eq!(deployed.pod, POD);
    let current = secret_ref(&s.pod().expect("pod")).expect("envFrom");
    let mut remaining = s.secret_names();
    remaining.sort();
    let mut expected = vec![current, young.clone()];
    if !swept {
        expected.push(old.clone());
    }
    expected.sort();
    assert_eq!(remaining, expected);
    let secret_deletes = s.succeeded(Verb::Delete, Resource::Secrets);
    assert_eq!(secret_deletes.len(), 1 + usize::from(swept));
    for delete in &secret_deletes {
        assert!(
            delete.path.ends_with(&residue_secret_name) || (swept && delete.path.ends_with(&old)),
            "{delete:?}"
        );
        let body = delete.body_json().expect("body");
        assert!(
            body["preconditions"]["uid"].is_string(),
            "uid-fenced: {body}"
        );
    }
    let pod_deletes = s.of(Verb::Delete, Resource::Pods);
    assert!(!pod_deletes.is_empty(), "the residue was collected");
    for delete in &pod_deletes {
        assert_eq!(delete_fence(delete), residue_fence);
    }
}

mod g5_orphan_sweep_runs_with_date {
    use super::*;
    /// G5: with the `Date` header, a 5000 s old orphan Secret is swept by preflight GC.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calm() {
        g5_g7_orphan_sweep_needs_the_date_header(Weather::Calm, DateMode::Normal).await;
    }
    /// G5 under injected transient faults.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stormy() {
        g5_g7_orphan_sweep_needs_the_date_header(Weather::Stormy, DateMode::Normal).await;
    }
}

mod g7_orphan_sweep_skipped_without_date {
    use super::*;
    /// G7/S9: without a `Date` header no Secret is old enough to prove: the sweep is skipped.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calm() {
        g5_g7_orphan_sweep_needs_the_date_header(Weather::Calm, DateMode::Omit).await;
    }
    /// G7/S9 under injected transient faults.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stormy() {
        g5_g7_orphan_sweep_needs_the_date_header(Weather::Stormy, DateMode::Omit).await;
    }
    /// G7 with a garbled `Date` header: no clock, so the sweep is skipped too.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn garbled() {
        g5_g7_orphan_sweep_needs_the_date_header(Weather::Calm, DateMode::Garbled).await;
    }
}

/// deploy.md § Create (transient failures are survived): creates whose answers are lost — the
/// client gives up on the attempt, the apiserver still applies it — are retried; the retried Secret
/// create answering `AlreadyExists` is success, and the retried pod create answering
/// `AlreadyExists` goes the adopt path, which verifies the pod as this agent's and returns its name
/// once started. One pod, one Secret (referenced), nothing deleted.
///
/// The simulator answers faults before its model sees a request, and hyper drops a request
/// whose client hung up, so "applied but the answer lost" is staged by hand: the first create of
/// each kind is held past the client's attempt timeout, and while it is held the test applies
/// its logged body to the model, as the apiserver would have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_create_answers_are_retried_and_adopted() {
    let s = std::sync::Arc::new(start(FAST, true).await);
    for resource in [Resource::Secrets, Resource::Pods] {
        s.sim.faults().add(FaultRule::times(
            1,
            Matcher::verb(Verb::Create, resource),
            FaultAction::Delay(Duration::from_millis(300)),
        ));
    }
    let applier = {
        let s = std::sync::Arc::clone(&s);
        tokio::spawn(async move {
            for resource in [Resource::Secrets, Resource::Pods] {
                s.until("the held create", |s| {
                    !s.of(Verb::Create, resource).is_empty()
                })
                .await;
                let body = s.of(Verb::Create, resource)[0]
                    .body_json()
                    .expect("a JSON body");
                s.sim
                    .with_model(|m| match resource {
                        Resource::Secrets => m
                            .create_secret(NS, serde_json::from_value(body).expect("a Secret"))
                            .map(|_| ()),
                        _ => m
                            .create_pod(NS, serde_json::from_value(body).expect("a pod"))
                            .map(|_| ()),
                    })
                    .expect("applied");
            }
        })
    };
    let cluster = s.cluster().await.with_retry_policy(RetryPolicy {
        budget: Duration::from_secs(10),
        attempt_timeout: Duration::from_millis(100),
        base: Duration::from_millis(400),
        cap: Duration::from_millis(400),
    });
    let deployed = driver::deploy(&cluster, &config(&image("")), &options(LONG, POLL))
        .await
        .expect("deployed");
    applier.await.expect("applier");
    assert_eq!(deployed.pod, POD);
    for resource in [Resource::Secrets, Resource::Pods] {
        let statuses: Vec<_> = s
            .of(Verb::Create, resource)
            .iter()
            .map(|r| r.status)
            .collect();
        assert_eq!(
            statuses,
            [None, Some(409)],
            "{resource:?}: the first answer was lost, the retry found the object"
        );
    }
    assert!(s.sim.requests().iter().all(|r| r.method != "DELETE"));
    let pod = s.pod().expect("pod");
    assert_eq!(s.secret_names(), [secret_ref(&pod).expect("envFrom")]);
}
