//! End-to-end: apiary as the buzz desktop's Kubernetes provider (docs/buzz-provider.md § Tests).
//! Every scenario runs the built `buzz-backend-kubernetes` binary (one JSON request on stdin,
//! `KUBECONFIG` pointing at the fixture, one JSON line back) twice: `<name>::sim` against the
//! loopback simulator and `<name>::real` against a real `kube-apiserver` with the fake kubelet
//! (skipped without `KUBEBUILDER_ASSETS`). The kubelet's per-image scripts (`agent-crash`,
//! `agent-pullfail-manifest`) choose what the pod does; what the server holds afterwards is
//! compared with buzz-provider.md § 6's templates and § 7's fingerprint as this file's support code
//! writes them out (`crate::common::buzz`), never with apiary's own builders.
//!
//! Test-only code: it asserts on answers, request logs and server objects, never on durations,
//! and never prints an env value (failure messages name keys).

use std::time::Duration;

use crate::common::buzz::{
    NSEC, POD, PUBKEY, Template, assert_no_leak_on_server, assert_spec_pod, assert_spec_secret,
    buzz_image, deploy_request, env_from_secret, finish, leak_in, original_secret,
    provider_command, secret_name, spawn,
};
use crate::common::{BackendKind, container_state, on_both_backends};
use apiary_apiserver_sim::{Resource, Verb};

/// How many desktops deploy the one agent at once.
const CONTENDERS: usize = 16;

/// The test-side fingerprint reproduces buzz-provider.md § 7's test vector, so the interop and
/// template checks compare against the spec's canonical form, not against apiary's code.
#[test]
fn test_side_fingerprint_matches_the_spec_vector() {
    let mut template = Template::for_request(
        "buzz-agents-test",
        &format!("ghcr.io/block/buzz-sprig@sha256:{}", "a".repeat(64)),
    );
    template.env_keys = vec!["BUZZ_RELAY_URL".to_owned()];
    assert_eq!(
        template.canonical(),
        format!(
            "{{\"template_version\":1,\"namespace\":\"buzz-agents-test\",\"image\":\
             \"ghcr.io/block/buzz-sprig@sha256:{}\",\"cpu_request\":\"1\",\"memory_request\":\
             \"2Gi\",\"cpu_limit\":\"2\",\"memory_limit\":\"4Gi\",\"service_account\":null,\
             \"restart_policy\":\"Never\",\"termination_grace_period_seconds\":60,\"env_keys\":\
             [\"BUZZ_RELAY_URL\"],\"env_from_secret\":\"<per-attempt-secret>\",\
             \"workspace_mount_path\":\"/home/agent\",\"run_as_user\":10001,\
             \"run_as_group\":10001}}",
            "a".repeat(64)
        )
    );
    assert_eq!(
        template.intent(),
        "8ad2592a0cf5416dc57fe986f6fb7113443444f76d364e74391cdbbcdb8f6a81"
    );
}

/// The fixture key's identity is the spec's: the support code's constants are not a guess.
#[test]
fn fixture_key_names_are_the_spec_examples() {
    assert_eq!(POD, format!("buzz-agent-{}", &PUBKEY[..12]));
    assert_eq!(POD, "buzz-agent-7e7e9c42a91b");
    assert!(NSEC.starts_with("nsec1"));
}

on_both_backends! {
    /// deploy: `{"ok":true,"agent_id":"buzz-agent-7e7e9c42a91b"}` once the container runs; the
    /// server holds exactly one pod and one Secret, shaped exactly as buzz-provider.md § 6
    /// says (labels, annotations, spec, the fingerprint of buzz-provider.md § 7 computed here),
    /// the Secret holding the keys of buzz-provider.md § 5.1 with the nonce equal to its name's
    /// suffix.
    fn deploy_creates_the_spec_pod_and_secret(fx) {
        let image = buzz_image("agent");
        let answer = fx.buzz_deploy(&image);
        answer.assert_ok();
        assert_eq!(
            answer.json(),
            serde_json::json!({"ok": true, "agent_id": POD}),
            "exactly the two fields"
        );
        assert_eq!(fx.pod_names(), [POD]);
        let pod = fx.pod(POD).expect("the pod");
        assert_eq!(container_state(&pod), "running", "returned only once started");
        let secrets = fx.secrets();
        assert_eq!(secrets.len(), 1, "{:?}", fx.secret_names());
        let generation = assert_spec_secret(&secrets[0]);
        let template = Template::for_request(fx.namespace(), &image);
        assert_spec_pod(&pod, &template, &secret_name(&generation), &template.intent());
        let creates = fx
            .requests()
            .iter()
            .filter(|r| r.is(Verb::Create, Resource::Secrets) || r.is(Verb::Create, Resource::Pods))
            .count();
        assert_eq!(creates, 2, "one Secret, one pod");
    }

    /// no-op: a second deploy of the started agent answers the same `agent_id` and writes
    /// nothing (same pod uid, no new Secret, no mutation at all).
    fn second_deploy_is_a_noop(fx) {
        let image = buzz_image("agent");
        fx.buzz_deploy(&image).assert_ok();
        let uid = fx.pod_uid(POD);
        let secrets = fx.sorted_secret_names();
        fx.clear_requests();
        fx.buzz_deploy(&image).assert_ok();
        assert_eq!(fx.pod_uid(POD), uid);
        assert_eq!(fx.sorted_secret_names(), secrets);
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    }

    /// crash: the container exits; the answer is `ok:false` carrying the redacted condition
    /// (the exit code, no process output, no env value); the call made one attempt and left its
    /// one pod and one Secret as evidence (deploy.md § One create attempt per call); the next
    /// deploy collects both and starts a fresh pod.
    fn crash_is_reported_with_the_redacted_condition(fx) {
        let error = fx.buzz_deploy(&buzz_image("agent-crash")).error();
        assert!(error.contains("exited with code 1"), "{error}");
        assert_eq!(leak_in(&error), None);
        let creates = fx
            .requests()
            .iter()
            .filter(|r| r.is(Verb::Create, Resource::Pods))
            .count();
        assert_eq!(creates, 1, "not retried within the call");
        assert!(
            !fx.requests().iter().any(|r| r.method == "DELETE"),
            "nothing deleted: {:?}",
            fx.mutations()
        );
        let crashed = fx.pod(POD).expect("the crashed pod stays");
        assert_eq!(container_state(&crashed), "terminated");
        let evidence = env_from_secret(&crashed).expect("envFrom");
        assert_eq!(fx.secret_names(), std::slice::from_ref(&evidence));

        let healthy = buzz_image("agent");
        fx.buzz_deploy(&healthy).assert_ok();
        let pod = fx.pod(POD).expect("the new pod");
        assert_ne!(pod.metadata.uid, crashed.metadata.uid, "replaced");
        let current = env_from_secret(&pod).expect("envFrom");
        assert_ne!(current, evidence);
        assert_eq!(fx.secret_names(), [current], "the residue's Secret was collected");
    }

    /// pull failure: a manifest the registry does not have; the answer is `ok:false` at once
    /// naming the image problem; nothing is deleted, the pulling pod and its Secret stay.
    fn pull_failure_names_the_image(fx) {
        let image = buzz_image("agent-pullfail-manifest");
        let error = fx.buzz_deploy(&image).error();
        assert!(error.contains("has no image at"), "{error}");
        assert!(error.contains(&image), "{error}");
        assert!(error.contains(POD), "{error}");
        assert!(
            !fx.requests().iter().any(|r| r.method == "DELETE"),
            "{:?}",
            fx.mutations()
        );
        assert_eq!(fx.pod_names(), [POD]);
        let pod = fx.pod(POD).expect("pod");
        assert_eq!(fx.secret_names(), [env_from_secret(&pod).expect("envFrom")]);
    }

    /// 16 desktops deploy one nsec at once: every one answers (exit 0, one JSON line), every
    /// `ok:true` names the one pod, there is exactly one pod, and the losers dropped their own
    /// Secrets (deploy.md § Losing the create race): exactly the winner's Secret is left.
    fn sixteen_concurrent_deploys_make_one_pod(fx) {
        let request = deploy_request(fx.namespace(), &buzz_image("agent"));
        let children: Vec<_> = (0..CONTENDERS)
            .map(|_| spawn(fx.provider(), &request))
            .collect();
        let answers: Vec<_> = children.into_iter().map(finish).collect();
        let mut ok = 0;
        for answer in &answers {
            assert_eq!(answer.run.code, 0, "{}", answer.describe());
            let doc = answer.json();
            if doc["ok"] == true {
                assert_eq!(doc["agent_id"], POD, "{}", answer.describe());
                ok += 1;
            } else {
                let error = doc["error"].as_str().unwrap_or_default();
                assert!(!error.is_empty(), "{}", answer.describe());
                assert_eq!(leak_in(error), None);
            }
        }
        assert!(ok >= 1, "at least the winner succeeded");
        assert_eq!(fx.pod_names(), [POD]);
        let pod = fx.pod(POD).expect("pod");
        assert_eq!(container_state(&pod), "running");
        let pod_creates = fx
            .requests()
            .iter()
            .filter(|r| r.is(Verb::Create, Resource::Pods) && r.status == Some(201))
            .count();
        assert_eq!(pod_creates, 1, "one create won");
        assert_eq!(
            fx.secret_names(),
            [env_from_secret(&pod).expect("envFrom")],
            "only the winner's Secret is left"
        );
        eprintln!("{ok} of {CONTENDERS} answered ok:true");
    }

    /// GC of Secrets left by a previous attempt (deploy.md § Age gate): an unreferenced buzz
    /// Secret at least 1200 s old on the server clock is deleted, a young one is kept. On the
    /// simulator the two are inserted with old and new `creationTimestamp`s and one deploy
    /// sorts them; on the real server (which stamps its own times) both are young at the first
    /// deploy and kept, and a second deploy with the server's `Date` clock 1300 s ahead (a
    /// second proxy) collects them, never the running pod's Secret.
    fn gc_collects_old_orphan_secrets_only(fx) {
        let ns = fx.namespace().to_owned();
        let old = original_secret(&ns, "0000a001");
        let young = original_secret(&ns, "0000a002");
        let (old_name, young_name) = (secret_name("0000a001"), secret_name("0000a002"));
        match fx.kind() {
            BackendKind::Sim => {
                fx.insert_original(&[old], None, Duration::from_secs(1300));
                fx.insert_original(&[young], None, Duration::from_secs(60));
            }
            BackendKind::Real => fx.insert_original(&[old, young], None, Duration::ZERO),
        }
        fx.buzz_deploy(&buzz_image("agent")).assert_ok();
        let uid = fx.pod_uid(POD);
        let current = env_from_secret(&fx.pod(POD).expect("pod")).expect("envFrom");
        let mut kept = match fx.kind() {
            BackendKind::Sim => vec![current.clone(), young_name.clone()],
            BackendKind::Real => vec![current.clone(), old_name.clone(), young_name.clone()],
        };
        kept.sort();
        assert_eq!(fx.sorted_secret_names(), kept);
        let deleted: Vec<String> = fx
            .requests()
            .iter()
            .filter(|r| r.is(Verb::Delete, Resource::Secrets))
            .map(|r| r.path.rsplit('/').next().unwrap_or_default().to_owned())
            .collect();
        match fx.kind() {
            BackendKind::Sim => assert_eq!(deleted, [old_name]),
            BackendKind::Real => {
                assert!(deleted.is_empty(), "{deleted:?}");
                let request = deploy_request(&ns, &buzz_image("agent"));
                let answer = fx.provide_with_clock_ahead(&request);
                answer.assert_ok();
                assert_eq!(fx.pod_uid(POD), uid, "a no-op");
                assert_eq!(fx.secret_names(), [current], "both orphans collected");
            }
        }
    }

    /// Redaction: with `RUST_LOG=trace`, a crash, a fresh deploy and a no-op leave no `nsec1…`, no
    /// env value and no `sprt_tok_…` in the provider's stdout or stderr, nor in any label or
    /// annotation on the server (nor anywhere in a pod).
    fn trace_output_and_server_objects_carry_no_secret(fx) {
        let run = |image: &str| {
            let mut cmd = fx.provider();
            cmd.env("RUST_LOG", "trace");
            finish(spawn(cmd, &deploy_request(fx.namespace(), image)))
        };
        let answers = [
            run(&buzz_image("agent-crash")),
            run(&buzz_image("agent")),
            run(&buzz_image("agent")),
        ];
        assert_eq!(answers[0].json()["ok"], false, "{}", answers[0].describe());
        answers[1].assert_ok();
        answers[2].assert_ok();
        for answer in &answers {
            // The scan means something only if trace logging is really on.
            assert!(!answer.run.stderr.is_empty(), "RUST_LOG=trace logs on stderr");
            assert_eq!(leak_in(&answer.run.stdout), None, "stdout");
            assert_eq!(leak_in(&answer.run.stderr), None, "stderr");
        }
        assert_no_leak_on_server(&fx);
    }
}

/// The schema's default image (buzz-provider.md § 3.2): what a real kubelet pulls.
const DEFAULT_IMAGE: &str = concat!(
    "ghcr.io/block/buzz-sprig:sha-6530b58@sha256:",
    "17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76"
);

/// With a real kubelet: the default buzz-sprig image is pulled and its harness runs, so the
/// deploy answers the pod name, and a second deploy is the same pod. Uses the ambient
/// `KUBECONFIG` and the namespace `BUZZ_TEST_NAMESPACE` (default `buzz-agents-apiary-test`).
#[test]
#[ignore = "needs a cluster: a real kubelet pulls ghcr.io/block/buzz-sprig"]
fn default_image_is_pulled_and_started_on_a_real_cluster() {
    let kubeconfig = std::env::var_os("KUBECONFIG").expect("KUBECONFIG names the cluster");
    let namespace = std::env::var("BUZZ_TEST_NAMESPACE")
        .unwrap_or_else(|_| "buzz-agents-apiary-test".to_owned());
    let home = tempfile::tempdir().expect("temp dir");
    let request = deploy_request(&namespace, DEFAULT_IMAGE);
    let run = || {
        finish(spawn(
            provider_command(home.path(), std::path::Path::new(&kubeconfig)),
            &request,
        ))
    };
    run().assert_ok();
    run().assert_ok();
}
