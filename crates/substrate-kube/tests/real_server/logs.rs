//! The pod log endpoint's refusals, simulator against the real `kube-apiserver` (deploy.md
//! § logs): for a missing pod and a container the pod does not have both servers answer the same
//! code, reason and message, and for a pod no node was assigned both answer an empty `200` (the
//! real apiserver asks no kubelet then); `PodLogs` reports such a never-started container as not
//! started from the pod's own status (never as an empty log), reports a missing pod, and refuses
//! a foreign pod without asking for its log.
//!
//! Layer: integration tests over loopback; the real half skips without `KUBEBUILDER_ASSETS`.

use crate::real_support::{Backend, Stage, attempt, image};
use apiary_substrate::naming::AgentIdentity;
use apiary_substrate_kube::{LogsError, LogsOptions, PodLogs};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};

/// The body of a log request's answer, or `(code, reason, message)` of its refusal.
async fn refusal(
    pods: &Api<Pod>,
    name: &str,
    container: Option<&str>,
) -> Result<String, (u16, String, String)> {
    let params = LogParams {
        container: container.map(str::to_owned),
        ..LogParams::default()
    };
    match pods.logs(name, &params).await {
        Ok(body) => Ok(body),
        Err(kube::Error::Api(status)) => Err((status.code, status.reason, status.message)),
        Err(other) => panic!("expected an answer, got {other:?}"),
    }
}

/// What one backend answers, and what `PodLogs` makes of it.
async fn answers(stage: &Stage) -> Vec<Result<String, (u16, String, String)>> {
    let agent = AgentIdentity::new("log agent").expect("agent");
    let (pod, _) = attempt(&stage.config_for(&agent, &image("")), 1);
    let name = pod.metadata.name.clone().expect("name");
    if let Some(sim) = stage.sim() {
        // The simulator's kubelet places every pod; this one stays unscheduled, as every pod
        // does on the kubelet-less real stage.
        let namespace = stage.namespace().to_owned();
        sim.with_model(|m| {
            m.script_pods_named(
                &namespace,
                &name,
                apiary_cluster_model::kubelet::PodScript::Unschedulable,
            );
        });
    }
    stage.create_pod(&pod).await;
    let pods: Api<Pod> = Api::namespaced(stage.admin(), stage.namespace());
    let answers = vec![
        refusal(&pods, "apiary-nobody-000000000000", None).await,
        refusal(&pods, &name, Some("sidecar")).await,
        refusal(&pods, &name, None).await,
    ];
    let logs = PodLogs::new(stage.admin(), stage.namespace());
    let mut sink = |_: &str| panic!("no line is printed");
    match logs.read(&agent, &LogsOptions::default(), &mut sink).await {
        Err(LogsError::NotStarted { message, .. }) => {
            assert!(message.contains("has not started"), "{message}");
        }
        other => panic!("expected not started, got {other:?}"),
    }
    let nobody = AgentIdentity::new("nobody here").expect("agent");
    assert!(matches!(
        logs.read(&nobody, &LogsOptions::default(), &mut sink).await,
        Err(LogsError::PodMissing { .. })
    ));
    // Another agent's pod under this agent's name is foreign.
    let impostor = AgentIdentity::new("impostor").expect("agent");
    let (mut copy, _) = attempt(&stage.config_for(&agent, &image("")), 2);
    copy.metadata.name = Some(impostor.pod_name());
    stage.create_pod(&copy).await;
    assert!(matches!(
        logs.read(&impostor, &LogsOptions::default(), &mut sink)
            .await,
        Err(LogsError::Foreign { .. })
    ));
    answers
}

/// The simulator answers the log endpoint's refusals as the real apiserver does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_refusals_match_the_real_apiserver() {
    let sim = Stage::start_with(Backend::Sim, None)
        .await
        .expect("simulator");
    let simulated = answers(&sim).await;
    assert_eq!(
        simulated[0],
        Err((
            404,
            "NotFound".to_owned(),
            "pods \"apiary-nobody-000000000000\" not found".to_owned()
        ))
    );
    assert_eq!(simulated[2], Ok(String::new()));
    let Some(real) = Stage::start_with(Backend::Real, None).await else {
        return;
    };
    let actual = answers(&real).await;
    assert_eq!(simulated, actual);
}
