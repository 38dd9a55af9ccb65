//! Conformance scenarios of the deploy loop (deploy.md § Deploy loop) that need the fake's own
//! scripting (a hook on a poll or before a delete, a scripted answer or failure), against the
//! real driver and the in-memory fake substrate, asserting on the fake's ordered call log. The
//! scenarios every backend can stage, the lost create races among them, are rows of the
//! scenario table (`substrate-kube/tests/scenarios`), which runs them on this fake too. No I/O:
//! the fake's virtual clock advances only when the driver waits.

#[allow(
    dead_code,
    reason = "each conformance test binary uses a different subset"
)]
use std::time::Duration;

use crate::conformance_support::*;
use apiary_classify::deploy::DeploySpec;
use apiary_classify::failure::Operation;
use apiary_cluster_model::kubelet::PodScript;
use apiary_substrate::DeleteAnswer;
use apiary_substrate::driver::{
    DeployError, DeployOptions, Deployed, deploy, deploy_spec, spec_for,
};
use apiary_substrate::fake::{FakeCluster, Step, transport_failure};

fn options(config: &apiary_substrate::config::ValidConfig) -> DeployOptions {
    DeployOptions::for_config(config)
}

/// The default deploy's result; the recorded settings are checked once, by
/// `a_created_pod_records_its_settings`, and left out of every other comparison.
fn deploy_default(fake: &FakeCluster) -> Result<Deployed, DeployError> {
    let config = config();
    unsettled(run(deploy(fake, &config, &options(&config))))
}

fn unsettled(result: Result<Deployed, DeployError>) -> Result<Deployed, DeployError> {
    result.map(|d| Deployed {
        recorded_settings: None,
        ..d
    })
}

fn ok(pod: &str, intent_matches: bool) -> Result<Deployed, DeployError> {
    Ok(Deployed {
        pod: pod.into(),
        intent_matches,
        workspace: None,
        recorded_settings: None,
    })
}

/// deploy.md § Naming what differs: the pod a deploy creates records its settings, and a
/// redeploy returns them, equal to the configuration's own.
#[test]
fn a_created_pod_records_its_settings() {
    let fake = FakeCluster::new(NS);
    let config = config();
    run(deploy(&fake, &config, &options(&config))).expect("deployed");
    let again = run(deploy(&fake, &config, &options(&config))).expect("kept");
    let settings = config.intent().settings();
    assert!(settings.contains("image="), "{settings}");
    assert_eq!(again.recorded_settings.as_deref(), Some(settings.as_str()));
}

fn deadline() -> Duration {
    Duration::from_secs(600)
}

/// R6: terminated pod; GC's delete answers PreconditionFailed; the loop deletes on its own
/// observation; the recreated pod runs → exactly two pod deletes, both with the observed rv.
#[test]
fn r6_gc_precondition_failed_loop_deletes_on_own_observation() {
    let fake = FakeCluster::new(NS);
    let (dead, _) = seed(&fake, &config(), 1, &Shape::Terminated(1), true);
    let (_, rv) = fence_of(&dead);
    fake.answer_next_delete_pod(DeleteAnswer::PreconditionFailed);
    assert_eq!(deploy_default(&fake), ok(POD, true));
    let deletes = fake.pod_deletes();
    assert_eq!(deletes.len(), 2, "{:?}", fake.call_summaries());
    assert!(deletes.iter().all(|(_, f)| f.resource_version() == rv));
}

/// R7: GC disabled; terminated pod; the loop's delete answers PreconditionFailed because the
/// pod started meanwhile → NoOp success with exactly one delete (the observed rv): the
/// read-then-delete race preserves a live agent.
#[test]
fn r7_started_between_read_and_delete_is_preserved() {
    let fake = FakeCluster::new(NS);
    let (dead, _) = seed(&fake, &config(), 1, &Shape::Terminated(1), true);
    let (_, rv) = fence_of(&dead);
    fake.before_next(Operation::DeletePod, |m| {
        m.start_pod(NS, POD).expect("pod exists");
    });
    let config = config();
    let spec = DeploySpec {
        preflight_gc: false,
        ..spec_for(&config, &options(&config))
    };
    assert_eq!(
        unsettled(run(deploy_spec(&fake, &config, spec, &mut |_| {}))),
        ok(POD, true)
    );
    let deletes = fake.pod_deletes();
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].1.resource_version(), rv);
    assert!(fake.pod(POD).is_some());
}

/// R9: the same pod running from poll 5 → success before the deadline.
#[test]
fn r9_pod_running_from_poll_5_succeeds() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Unschedulable, true);
    fake.on_poll(5, |m| {
        m.start_pod(NS, POD).expect("pod exists");
    });
    assert_eq!(deploy_default(&fake), ok(POD, true));
    assert!(fake.elapsed() < deadline());
    assert!(fake.pod_deletes().is_empty());
}

/// R12: a running pod with `deletionTimestamp` vanishes, the recreated pod runs → success; no
/// delete issued.
#[test]
fn r12_deleting_pod_awaited_then_recreated_without_delete() {
    let fake = FakeCluster::new(NS);
    let (pod, _) = seed(&fake, &config(), 1, &Shape::Running, true);
    fake.remove_pod(POD).unwrap();
    let dying = deleting(&fake, pod.clone());
    fake.insert_pod(dying).unwrap();
    assert_eq!(deploy_default(&fake), ok(POD, true));
    assert!(fake.pod_deletes().is_empty());
    let now = fake.pod(POD).unwrap();
    assert_ne!(now.metadata.uid, pod.metadata.uid);
}

/// R18: two consecutive crashing deploys (clock reset between) → finally exactly one pod and
/// one Secret exist.
#[test]
fn r18_two_crashing_deploys_leave_one_pod_one_secret() {
    let fake = FakeCluster::new(NS);
    let config = config_with(|c| c.image = image_with("crash"));
    run(deploy(&fake, &config, &options(&config))).unwrap_err();
    fake.reset_elapsed();
    run(deploy(&fake, &config, &options(&config))).unwrap_err();
    assert_eq!(fake.pods().len(), 1);
    assert_eq!(fake.secrets().len(), 1);
}

/// R30: `--timeout 60`, the pod never starts → E1 naming 60s; 60 ≤ elapsed < 600.
#[test]
fn r30_lowered_timeout_honoured() {
    let fake = FakeCluster::new(NS);
    let config = config_with(|c| {
        c.image = image_with("never-starts");
        c.timeout = Duration::from_secs(60);
    });
    let error = run(deploy(&fake, &config, &options(&config))).unwrap_err();
    assert!(error.to_string().contains("60s"), "{error}");
    assert!(fake.elapsed() >= Duration::from_secs(60));
    assert!(fake.elapsed() < deadline());
}

/// R32: GC's list is Forbidden and the pod runs → deploy succeeds.
#[test]
fn r32_gc_forbidden_swallowed() {
    let fake = FakeCluster::new(NS);
    seed(&fake, &config(), 1, &Shape::Running, true);
    let forbidden = fake.forbidden(Operation::ListPods, "pods");
    fake.fail_next(Operation::ListPods, forbidden);
    assert_eq!(deploy_default(&fake), ok(POD, true));
}

/// R33: the pod create is refused (quota) → E10; own Secret deleted.
#[test]
fn r33_refused_pod_create_drops_own_secret() {
    let fake = FakeCluster::new(NS);
    let refusal = fake.quota_exceeded(Operation::CreatePod, &format!("pod/{POD}"));
    fake.fail_next(Operation::CreatePod, refusal);
    let error = deploy_default(&fake).unwrap_err();
    assert!(matches!(error, DeployError::CreateFailed { .. }), "{error}");
    assert!(error.to_string().contains("exceeded quota"), "{error}");
    let own = fake.creates_of_secrets()[0].metadata.name.clone().unwrap();
    assert_eq!(fake.secret_deletes().len(), 1);
    assert!(fake.secret(&own).is_none());
    assert!(error.to_string().contains("was removed"), "{error}");
}

/// R34: a pod create transport failure → E10; the Secret is left in place.
#[test]
fn r34_transport_failure_leaves_secret() {
    let fake = FakeCluster::new(NS);
    fake.fail_next(
        Operation::CreatePod,
        transport_failure(Operation::CreatePod, &format!("pod/{POD}")),
    );
    let error = deploy_default(&fake).unwrap_err();
    assert!(matches!(error, DeployError::CreateFailed { .. }), "{error}");
    assert!(fake.secret_deletes().is_empty());
    let own = fake.creates_of_secrets()[0].metadata.name.clone().unwrap();
    assert!(fake.secret(&own).is_some());
}

/// R35: this call's pod vanishes after create → the loop may create again within the call.
#[test]
fn r35_vanished_own_pod_recreated() {
    let fake = FakeCluster::new(NS);
    fake.queue_pod_scripts(
        POD,
        [
            PodScript::Vanish {
                after: Duration::from_secs(1),
            },
            PodScript::Start {
                after: Duration::from_secs(1),
            },
        ],
    );
    assert_eq!(deploy_default(&fake), ok(POD, true));
    assert_eq!(fake.creates_of_pods().len(), 2);
    assert!(fake.pod_deletes().is_empty());
}

/// deploy.md § Delete and waiting for disappearance: the wait expires → E4; the fake's step
/// scripting keeps the dying pod.
#[test]
fn e4_dying_pod_outlives_deadline() {
    let fake = FakeCluster::new(NS);
    let (pod, _, _) = attempt(&config(), 1);
    // A deletion-marked pod the model never removes within the 60 s timeout.
    let hour = Duration::from_secs(3600);
    fake.insert_pod(deleting_for(
        &fake,
        shaped(&fake, pod, &Shape::Running),
        hour,
    ))
    .unwrap();
    let config = config_with(|c| c.timeout = Duration::from_secs(60));
    let error = run(deploy(&fake, &config, &options(&config))).unwrap_err();
    assert!(
        matches!(error, DeployError::DisappearanceTimeout { .. }),
        "{error}"
    );
    assert!(fake.pod_deletes().is_empty());
}

/// Steps are logged: a scripted Step is consumed by the driver's call of that kind.
#[test]
fn scripted_secret_create_not_found_is_e11() {
    let fake = FakeCluster::new(NS);
    let missing = apiary_substrate::fake::api_error(
        Operation::CreateSecret,
        "secret/x",
        404,
        "NotFound",
        "namespaces \"agents\" not found",
    );
    fake.queue(Operation::CreateSecret, Step::Fail(missing));
    let error = deploy_default(&fake).unwrap_err();
    assert!(
        matches!(error, DeployError::NamespaceMissing { .. }),
        "{error}"
    );
    assert!(fake.creates_of_pods().is_empty());
}

/// deploy.md § Environment rule 7: no error of any failing path carries an env value, in
/// `Display` or `Debug` — refused create, transport failure, crash, deadline, foreign pod.
#[test]
fn env_values_never_reach_errors() {
    const VALUE: &str = "SUPERSECRET-ENV-VALUE";
    let with_env = |image: Option<String>| {
        config_with(|c| {
            c.env.set("API_TOKEN", VALUE);
            c.timeout = Duration::from_secs(10);
            if let Some(image) = image {
                c.image = image;
            }
        })
    };
    let mut errors = Vec::new();
    let fake = FakeCluster::new(NS);
    let refusal = fake.quota_exceeded(Operation::CreatePod, &format!("pod/{POD}"));
    fake.fail_next(Operation::CreatePod, refusal);
    let config = with_env(None);
    errors.push(run(deploy(&fake, &config, &options(&config))).unwrap_err());
    let fake = FakeCluster::new(NS);
    fake.fail_next(
        Operation::CreatePod,
        transport_failure(Operation::CreatePod, &format!("pod/{POD}")),
    );
    errors.push(run(deploy(&fake, &config, &options(&config))).unwrap_err());
    for keyword in ["crash", "never-starts", "pullfail-unauthorized"] {
        let fake = FakeCluster::new(NS);
        let config = with_env(Some(image_with(keyword)));
        errors.push(run(deploy(&fake, &config, &options(&config))).unwrap_err());
        // The created Secret does hold the value: the test would notice a builder change.
        let secret = &fake.creates_of_secrets()[0];
        assert_eq!(secret.string_data.as_ref().unwrap()["API_TOKEN"], VALUE);
    }
    let fake = FakeCluster::new(NS);
    let (pod, _, _) = attempt(&config, 1);
    fake.insert_pod(other_agent(pod)).unwrap();
    errors.push(run(deploy(&fake, &config, &options(&config))).unwrap_err());
    assert_eq!(errors.len(), 6);
    for error in errors {
        assert!(!error.to_string().contains(VALUE), "{error}");
        assert!(!format!("{error:?}").contains(VALUE), "{error:?}");
    }
}

// ---- deploy.md § Namespace ensure, item 4: a just-created namespace has no service account yet

/// A fake whose model runs ServiceAccount admission and a ServiceAccount controller that creates
/// `default` `delay` after each new namespace (`None`: no controller at all).
fn admitting_fake(delay: Option<Duration>) -> FakeCluster {
    let fake = FakeCluster::new(NS);
    fake.with_model(|m| {
        m.set_service_account_admission(true);
        m.set_service_account_controller(delay);
    });
    fake
}

/// A deploy into a namespace it creates, whose `default` account appears 2 s later, waits for
/// the account and retries the pod create with the same Secret: it succeeds with exactly one
/// Secret, and nothing is deleted.
#[test]
fn fresh_namespace_waits_for_the_default_account_and_keeps_one_secret() {
    let fake = admitting_fake(Some(Duration::from_secs(2)));
    assert_eq!(deploy_default(&fake), ok(POD, true));
    let secrets = fake.creates_of_secrets();
    assert_eq!(secrets.len(), 1, "{:?}", fake.call_summaries());
    let pods = fake.creates_of_pods();
    assert_eq!(pods.len(), 2, "one refused, one created");
    let referenced = |pod: &k8s_openapi::api::core::v1::Pod| {
        apiary_substrate::observe::env_from_secret(pod)
            .into_iter()
            .collect::<Vec<_>>()
    };
    assert_eq!(referenced(&pods[0]), referenced(&pods[1]));
    assert_eq!(
        referenced(&pods[1]),
        [secrets[0].metadata.name.clone().unwrap()]
    );
    assert!(fake.secret_deletes().is_empty());
    assert!(fake.pod_deletes().is_empty());
    let calls = fake.call_summaries();
    let refused = calls
        .iter()
        .position(|c| c.starts_with("create_pod"))
        .unwrap();
    let account_read = calls
        .iter()
        .position(|c| c == "service_account_exists default")
        .unwrap();
    let retried = calls
        .iter()
        .rposition(|c| c.starts_with("create_pod"))
        .unwrap();
    assert!(
        refused < account_read && account_read < retried,
        "{calls:?}"
    );
    assert_eq!(fake.secrets().len(), 1);
}

/// The same wait applies when the namespace already existed but has no `default` yet; at the
/// deadline E1 names the missing account and leaves the Secret (a deadline cleans up nothing).
#[test]
fn an_account_that_never_appears_ends_in_e1_naming_it() {
    let fake = admitting_fake(None);
    fake.with_model(|m| {
        m.ensure_namespace(NS);
    });
    let config = config_with(|c| c.timeout = Duration::from_secs(10));
    let error = run(deploy(&fake, &config, &options(&config))).unwrap_err();
    assert!(
        matches!(error, DeployError::ServiceAccountMissing { ref account, .. } if account == "default"),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains("within 10s"), "{text}");
    assert!(
        text.contains(&format!("kubectl create serviceaccount default -n {NS}")),
        "{text}"
    );
    assert_eq!(fake.creates_of_secrets().len(), 1);
    assert!(fake.secret_deletes().is_empty());
    assert_eq!(fake.secrets().len(), 1);
    assert!(fake.elapsed() >= Duration::from_secs(10));
}

/// A pod that names its own account (`--service-account missing`) is reported at once: E10 with
/// the `kubectl create serviceaccount` fix, the attempt's Secret dropped, no wait, no retry.
#[test]
fn a_named_missing_account_fails_at_once_with_the_fix() {
    let fake = admitting_fake(Some(Duration::from_secs(2)));
    let config = config_with(|c| c.service_account = Some("missing".into()));
    let error = run(deploy(&fake, &config, &options(&config))).unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, DeployError::CreateFailed { .. }), "{text}");
    for needle in [
        "403 Forbidden",
        "serviceaccount \"missing\" not found",
        &format!("kubectl create serviceaccount missing -n {NS}"),
        "was removed",
    ] {
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
    assert_eq!(fake.creates_of_pods().len(), 1);
    assert_eq!(fake.secret_deletes().len(), 1);
    assert!(fake.secrets().is_empty());
    let calls = fake.call_summaries();
    assert!(
        !calls
            .iter()
            .any(|c| c.starts_with("wait_for_pod_change") || c.starts_with("service_account")),
        "{calls:?}"
    );
}

/// `--min-running` and `--replace` reach the options they set and change nothing else. Kills
/// `delete field min_running from struct DeployOptions expression in DeployOptions::staying_up`
/// and `delete field replace ... in DeployOptions::replacing` (both missed on 2026-12-02).
#[test]
fn option_builders_set_their_field_only() {
    let config = config();
    let base = DeployOptions::for_config(&config);
    let window = Duration::from_secs(7);
    let staying = base.staying_up(window);
    assert_eq!(staying.min_running, window);
    assert_eq!(
        DeployOptions {
            min_running: base.min_running,
            ..staying
        },
        base
    );
    let replacing = base.replacing(!base.replace);
    assert_eq!(replacing.replace, !base.replace);
    assert_eq!(
        DeployOptions {
            replace: base.replace,
            ..replacing
        },
        base
    );
}
