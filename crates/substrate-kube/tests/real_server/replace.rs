//! `deploy --replace` (deploy.md § Replacing a live agent) through the real driver and the real
//! `Cluster`, each scenario run twice: `<scenario>::sim` against the loopback simulator and
//! `<scenario>::real` against an upstream `kube-apiserver` + etcd with the fake kubelet
//! (`apiary-envtest`): one replace, a replace that changes nothing, replaces one after the other,
//! and concurrent replaces with one and with two configurations whose pod deletes are all held
//! until every contender has sent its own, so each of them really observed the old pod first.
//!
//! Layer: integration tests over real HTTP on 127.0.0.1. They decide nothing. The real runs skip
//! (one stderr line) without `KUBEBUILDER_ASSETS` and fail with `APIARY_ENVTEST_REQUIRED=1`.
//! No timed assertions: waits are bounded only to turn a hang into a failure.

use std::time::Duration;

use crate::real_support::{POD, Stage, agent, delete_fence, image, options};
use apiary_apiserver_sim::{Resource, Verb};
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::driver::{self, DeployOptions};

/// A generous deadline for scenarios that end well before it.
const LONG: Duration = Duration::from_secs(30);
/// Concurrent replaces.
const CONTENDERS: usize = 4;

fn replacing() -> DeployOptions {
    options(LONG).replacing(true)
}

/// The stage's configuration with CPU limit `cpu`: another create intent.
fn with_cpu(s: &Stage, cpu: &str) -> ValidConfig {
    let mut config = DeployConfig::new(s.namespace(), image(""));
    config.cpu_limit = cpu.to_owned();
    config.validate(&agent()).expect("valid")
}

/// Deploy the original configuration; answer the old pod's uid. The tap is cleared.
async fn original(s: &Stage) -> String {
    driver::deploy(&s.cluster(), &s.config(&image("")), &options(LONG))
        .await
        .expect("the original deploy");
    let uid = s.pod().await.and_then(|p| p.metadata.uid).expect("uid");
    s.tap.clear();
    uid
}

async fn intent(s: &Stage) -> String {
    s.pod()
        .await
        .and_then(|p| p.metadata.annotations)
        .and_then(|a| a.get("apiary.dev/create-intent").cloned())
        .expect("the pod records its intent")
}

/// One replace: the old pod's fenced delete, its Secret's delete once it is gone, then the Secret
/// and pod creates, in that order; the new pod records the new intent.
async fn one_replace(s: &Stage) {
    let old = original(s).await;
    let new = with_cpu(s, "3");
    let deployed = driver::deploy(&s.cluster(), &new, &replacing())
        .await
        .expect("replaced");
    assert_eq!(deployed.pod, POD);
    assert!(deployed.intent_matches);
    let deletes = s.of(Verb::Delete, Resource::Pods);
    assert_eq!(deletes.len(), 1);
    assert_eq!(delete_fence(&deletes[0]).0, old);
    let order: Vec<_> = s.mutations().iter().map(|r| r.target).collect();
    assert_eq!(
        order,
        [
            Some((Resource::Pods, Verb::Delete)),
            Some((Resource::Secrets, Verb::Delete)),
            Some((Resource::Secrets, Verb::Create)),
            Some((Resource::Pods, Verb::Create)),
        ]
    );
    assert_eq!(intent(s).await, new.fingerprint());
    assert_eq!(s.pod_names().await, [POD]);
    assert_eq!(s.secret_names().await.len(), 1, "only the new pod's Secret");
}
on_both_backends!(
    /// A replace deletes the started pod with its fence, awaits it, drops its Secret, then
    /// creates.
    self::one_replace
);

/// A replace with the intent unchanged is a no-op: reads only, nothing written, the pod kept.
async fn replace_with_the_same_intent_writes_nothing(s: &Stage) {
    let old = original(s).await;
    let deployed = driver::deploy(&s.cluster(), &s.config(&image("")), &replacing())
        .await
        .expect("no-op");
    assert!(deployed.intent_matches);
    assert!(
        s.mutations().is_empty(),
        "zero mutation: {:?}",
        s.mutations()
    );
    assert_eq!(s.pod().await.and_then(|p| p.metadata.uid), Some(old));
}
on_both_backends!(
    /// `--replace` with the running configuration writes nothing.
    self::replace_with_the_same_intent_writes_nothing
);

/// The last writer wins: replaces one after the other each roll their configuration on, one pod
/// delete each.
async fn sequential_replaces_the_last_one_wins(s: &Stage) {
    original(s).await;
    for cpu in ["3", "5", "3"] {
        let desired = with_cpu(s, cpu);
        let deployed = driver::deploy(&s.cluster(), &desired, &replacing())
            .await
            .expect("replaced");
        assert!(deployed.intent_matches);
        assert_eq!(intent(s).await, desired.fingerprint());
    }
    assert_eq!(s.succeeded(Verb::Delete, Resource::Pods).len(), 3);
    assert_eq!(s.pod_names().await, [POD]);
}
on_both_backends!(
    /// Replaces one after the other: each rolls its configuration on.
    self::sequential_replaces_the_last_one_wins
);

/// `CONTENDERS` replaces at once, the `i`th with `configs[i % len]`, their pod deletes held until
/// all have sent one. Answers whether each call's result matches the pod that remains.
async fn concurrent(s: &Stage, old: &str, configs: &[ValidConfig]) -> Vec<bool> {
    let gate = s
        .tap
        .hold(CONTENDERS, |r| r.is(Verb::Delete, Resource::Pods));
    let clusters: Vec<_> = (0..CONTENDERS).map(|_| s.cluster()).collect();
    let opts = replacing();
    let (results, ()) = tokio::join!(
        futures::future::join_all(clusters.iter().enumerate().map(|(i, c)| driver::deploy(
            c,
            &configs[i % configs.len()],
            &opts
        ))),
        async {
            gate.held(CONTENDERS).await;
            gate.release();
        }
    );
    assert_eq!(s.pod_names().await, [POD], "exactly one pod");
    assert_eq!(s.succeeded(Verb::Create, Resource::Pods).len(), 1);
    let deletes = s.of(Verb::Delete, Resource::Pods);
    assert_eq!(deletes.len(), CONTENDERS, "one delete per contender");
    for delete in &deletes {
        assert_eq!(delete_fence(delete).0, old, "only the old pod is deleted");
    }
    let landed = intent(s).await;
    results
        .iter()
        .enumerate()
        .map(|(i, result)| {
            let deployed = result.as_ref().expect("every replace ends started");
            assert_eq!(deployed.pod, POD);
            assert_eq!(
                deployed.intent_matches,
                configs[i % configs.len()].fingerprint() == landed
            );
            deployed.intent_matches
        })
        .collect()
}

/// Concurrent replaces with one configuration converge on one new pod of it.
async fn concurrent_replaces_one_configuration(s: &Stage) {
    let old = original(s).await;
    let new = with_cpu(s, "3");
    let matched = concurrent(s, &old, std::slice::from_ref(&new)).await;
    assert!(matched.iter().all(|m| *m), "{matched:?}");
    assert_eq!(intent(s).await, new.fingerprint());
}
on_both_backends!(
    /// Concurrent replaces with one configuration: one new pod, every call matching it.
    self::concurrent_replaces_one_configuration
);

/// Concurrent replaces with two configurations: one pod of one of them, no delete of it.
async fn concurrent_replaces_two_configurations(s: &Stage) {
    let old = original(s).await;
    let configs = [with_cpu(s, "3"), with_cpu(s, "5")];
    let matched = concurrent(s, &old, &configs).await;
    assert!(matched.iter().any(|m| *m), "one configuration landed");
    let landed = intent(s).await;
    assert!(configs.iter().any(|c| c.fingerprint() == landed));
}
on_both_backends!(
    /// Concurrent replaces with two configurations end on one pod without a delete loop.
    self::concurrent_replaces_two_configurations
);
