//! When a pod will not go away (issue 11 § 6) through the real driver and the real `Cluster`,
//! run as `<scenario>::sim` against the loopback simulator and `<scenario>::real` against an
//! upstream `kube-apiserver` + etcd with the fake kubelet (`apiary-envtest`): a finalizer keeps
//! the agent's pod terminating past its grace period, undeploy says so once (naming the
//! finalizer and the kubectl commands), never forces, and ends at its deadline with the pod still
//! there; once the finalizer is removed the pod goes.
//!
//! Layer: integration tests over real HTTP on 127.0.0.1. They decide nothing. The real run skips
//! (one stderr line) without `KUBEBUILDER_ASSETS`. No timed assertions: waits are bounded only
//! to turn a hang into a failure.

mod real_support;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apiary_substrate::build::build_attempt;
use apiary_substrate::driver::{self, UndeployOptions};
use apiary_substrate::naming::Generation;
use kube::api::{Api, Patch, PatchParams};
use real_support::{HANG, POD, Stage, agent, image};

/// Run a scenario of this file on both backends, as `<scenario>::sim` and `<scenario>::real`.
macro_rules! on_both {
    ($(#[doc = $doc:literal])* $scenario:ident) => {
        mod $scenario {
            $(#[doc = $doc])*
            /// (Against the simulator.)
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sim() {
                let stage = crate::real_support::Stage::start(crate::real_support::Backend::Sim)
                    .await
                    .expect("a simulator stage always starts");
                super::$scenario(&stage).await;
            }
            $(#[doc = $doc])*
            /// (Against the real kube-apiserver with the fake kubelet.)
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn real() {
                let Some(stage) =
                    crate::real_support::Stage::start(crate::real_support::Backend::Real).await
                else {
                    return;
                };
                super::$scenario(&stage).await;
            }
        }
    };
}

const FINALIZER: &str = "example.com/hold";

/// Everything the driver logs while `f` runs on this thread, as formatted lines.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log buffer")).into_owned()
    }
}

/// Wait (bounded by [`HANG`]) until `done` holds for the agent's pod as read now.
async fn until(
    s: &Stage,
    what: &str,
    done: impl Fn(Option<&k8s_openapi::api::core::v1::Pod>) -> bool,
) {
    let started = Instant::now();
    while !done(s.pod().await.as_ref()) {
        assert!(started.elapsed() < HANG, "hung waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

on_both!(
    /// A finalizer keeps the pod: undeploy explains it once, never forces, and times out.
    finalizer_keeps_the_pod_and_undeploy_says_why
);

async fn finalizer_keeps_the_pod_and_undeploy_says_why(s: &Stage) {
    let config = s.config(&image(""));
    let mut attempt = build_attempt(&config, Generation::from_u32(1));
    attempt.pod.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    if let Some(spec) = attempt.pod.spec.as_mut() {
        spec.termination_grace_period_seconds = Some(1);
    }
    s.create_secret(&attempt.secret).await;
    s.create_pod(&attempt.pod).await;
    until(s, "the pod runs", |p| {
        p.and_then(|p| p.status.as_ref())
            .and_then(|st| st.phase.as_deref())
            == Some("Running")
    })
    .await;

    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let options = UndeployOptions {
        wait: true,
        deadline: Duration::from_secs(6),
        poll: Duration::from_millis(200),
    };
    let cluster = s.cluster();
    let outcome = {
        let _guard = tracing::subscriber::set_default(subscriber);
        driver::undeploy(&cluster, &agent(), &options).await
    };
    assert!(outcome.is_err(), "the pod never goes: {outcome:?}");
    let text = captured.text();
    let stuck: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("is still terminating"))
        .collect();
    assert_eq!(stuck.len(), 1, "{text}");
    let ns = s.namespace();
    assert!(stuck[0].contains(&format!("pod {ns}/{POD}")), "{text}");
    if s.sim().is_none() {
        // The simulator's scaled clock ends the 1 s grace before the first read, which then
        // shows the kubelet's final zero grace.
        assert!(stuck[0].contains("(grace period 1 s)"), "{text}");
    }
    assert!(
        stuck[0].contains(&format!("it has finalizers ({FINALIZER})")),
        "{text}"
    );
    assert!(
        stuck[0].contains(&format!("kubectl describe pod -n {ns} {POD}")),
        "{text}"
    );
    assert!(
        stuck[0].contains("apiary does not force the delete"),
        "{text}"
    );
    let held = s.pod().await.expect("the finalizer keeps the pod");
    assert!(held.metadata.deletion_timestamp.is_some());
    let deletes: Vec<_> = s
        .tap
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE" && r.path.ends_with(&format!("/pods/{POD}")))
        .collect();
    assert_eq!(
        deletes.len(),
        1,
        "one graceful fenced delete, never a force"
    );
    assert!(
        !deletes[0].body.contains("\"gracePeriodSeconds\":0"),
        "{}",
        deletes[0].body
    );

    // Let the pod go: the finalizer's owner removes it.
    match s.sim() {
        Some(sim) => sim.with_model(|m| {
            m.modify_pod(ns, POD, |pod| pod.metadata.finalizers = None)
                .map(|_| ())
                .expect("finalizer removed");
        }),
        None => {
            let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(s.admin(), ns);
            pods.patch(
                POD,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
            )
            .await
            .expect("finalizer removed");
        }
    }
    until(s, "the pod goes", |p| p.is_none()).await;
}
