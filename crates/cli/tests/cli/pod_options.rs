//! End-to-end: the pod options of deploy.md § Pod options through the built binary, on both
//! backends (`<name>::sim` against the loopback simulator, `<name>::real` against a real
//! `kube-apiserver` with the fake kubelet): the server accepts and returns exactly the fields
//! the flags set, a second deploy with the same options is a no-op, and `list --selector`
//! selects on a user label.
//!
//! Test-only code: it asserts on exit codes, the server's objects and request logs.

use crate::common::{IMAGE, on_both_backends};

const AGENT: &str = "gpu agent";

/// Every option flag but `--runtime-class` and `--priority-class`, which name objects the
/// apiserver's admission looks up (the real-node tier creates them).
const OPTIONS: [&str; 18] = [
    "--node-selector",
    "example.com/pool=agents",
    "--toleration",
    "nvidia.com/gpu:NoSchedule",
    "--toleration",
    "dedicated=agents",
    "--resource",
    "example.com/widget=2",
    "--ephemeral-storage-request",
    "1Gi",
    "--ephemeral-storage-limit",
    "2Gi",
    "--image-pull-secret",
    "regcred",
    "--label",
    "team=ml",
    "--annotation",
    "example.com/owner=ml-infra",
];

fn deploy_args() -> Vec<&'static str> {
    let mut args = vec!["deploy", AGENT, "--image", IMAGE];
    args.extend_from_slice(&OPTIONS);
    args
}

on_both_backends! {
    /// deploy.md § Pod options: the server holds exactly the fields the flags set, and the same
    /// deploy again changes nothing.
    fn every_option_reaches_the_server_and_a_redeploy_is_a_no_op(fx) {
        let run = fx.apiary(&deploy_args());
        assert_eq!(run.code, 0, "{run:?}");
        let pod_name = run.stdout.trim().to_owned();
        let pod = fx.pod(&pod_name).expect("the pod");
        let spec = pod.spec.as_ref().expect("a spec");
        assert_eq!(
            serde_json::to_value(&spec.node_selector).unwrap(),
            serde_json::json!({"example.com/pool": "agents"})
        );
        assert_eq!(
            serde_json::to_value(&spec.tolerations).unwrap(),
            serde_json::json!([
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "dedicated", "operator": "Equal", "value": "agents"},
                // Added by the apiserver's DefaultTolerationSeconds admission (the model too).
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ])
        );
        assert_eq!(
            serde_json::to_value(&spec.image_pull_secrets).unwrap(),
            serde_json::json!([{"name": "regcred"}])
        );
        let container = &spec.containers[0];
        let resources = serde_json::to_value(&container.resources).unwrap();
        assert_eq!(resources["requests"]["example.com/widget"], "2", "{resources}");
        assert_eq!(resources["limits"]["example.com/widget"], "2", "{resources}");
        assert_eq!(resources["requests"]["ephemeral-storage"], "1Gi", "{resources}");
        assert_eq!(resources["limits"]["ephemeral-storage"], "2Gi", "{resources}");
        let labels = pod.metadata.labels.as_ref().expect("labels");
        assert_eq!(labels.get("team").map(String::as_str), Some("ml"));
        let annotations = pod.metadata.annotations.as_ref().expect("annotations");
        assert_eq!(annotations.get("example.com/owner").map(String::as_str), Some("ml-infra"));
        let secret = fx.secrets().into_iter().next().expect("the Secret");
        assert_eq!(
            secret.metadata.labels.as_ref().and_then(|l| l.get("team")).map(String::as_str),
            Some("ml")
        );

        fx.clear_requests();
        let again = fx.apiary(&deploy_args());
        assert_eq!(again.code, 0, "{again:?}");
        assert!(!again.stderr.contains("old configuration"), "{again:?}");
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());

        let other = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--label", "team=other"]);
        assert_eq!(other.code, 0, "{other:?}");
        assert!(other.stderr.contains("old configuration"), "an option is part of the intent: {other:?}");
    }

    /// deploy.md § list: `--selector` on a user label selects the agent that carries it.
    fn list_selects_on_a_user_label(fx) {
        assert_eq!(fx.apiary(&deploy_args()).code, 0);
        let ours = fx.apiary(&["-o", "json", "list", "--selector", "team=ml"]);
        assert_eq!(ours.code, 0, "{ours:?}");
        assert_eq!(ours.json()[0]["agent"], AGENT, "{ours:?}");
        let none = fx.apiary(&["-o", "json", "list", "--selector", "team=other"]);
        assert_eq!(none.code, 0, "{none:?}");
        assert_eq!(none.json(), serde_json::json!([]), "{none:?}");
    }
}

/// deploy.md § Pod options, on the real kube-apiserver (its validation is the referee): a value
/// only the server refuses (a fractional quantity of an extended resource, which must be whole)
/// is a `422 Invalid` naming the field, and the message names the flag that set it; no pod is
/// created and the attempt's Secret is removed.
#[test]
fn an_invalid_option_names_the_flag_that_set_it_on_the_real_server() {
    let Some(fx) = crate::common::Fixture::on_real("invalid-option") else {
        return;
    };
    let run = fx.apiary(&[
        "deploy",
        AGENT,
        "--image",
        IMAGE,
        "--resource",
        "example.com/widget=500m",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("422 Invalid"), "{run:?}");
    assert!(
        run.stderr.contains("resources.requests[example.com/widget] was set by --resource: correct that flag's value"),
        "{run:?}"
    );
    assert!(fx.pod_names().is_empty(), "no pod");
}

/// A value only the user's Secret holds; it must never reach apiary's output.
const CLUSTER_VALUE: &str = "sk-cluster-value-5f1d";

on_both_backends! {
    /// deploy.md § Credentials from the cluster: `--env-from-secret` and `--env-secret` reach
    /// the pod as references (the user's Secret before the attempt's own, so apiary's keys win;
    /// a `secretKeyRef` for the variable), the pod starts, and no value is ever printed.
    fn cluster_secrets_are_referenced_never_read(fx) {
        fx.create_user_secret("team-creds", &[("OPENAI_API_KEY", CLUSTER_VALUE)]);
        let run = fx.apiary(&[
            "deploy", AGENT, "--image", IMAGE,
            "--env-from-secret", "team-creds",
            "--env-secret", "TOKEN=team-creds/OPENAI_API_KEY",
        ]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(!run.stdout.contains(CLUSTER_VALUE) && !run.stderr.contains(CLUSTER_VALUE));
        let pod = fx.pod(run.stdout.trim()).expect("the pod");
        let container = &pod.spec.as_ref().expect("a spec").containers[0];
        let env_from = serde_json::to_value(&container.env_from).unwrap();
        assert_eq!(env_from[0], serde_json::json!({"secretRef": {"name": "team-creds", "optional": false}}));
        let own = env_from[1]["secretRef"]["name"].as_str().expect("the own Secret last");
        assert!(own.starts_with(run.stdout.trim()), "{env_from}");
        assert_eq!(
            serde_json::to_value(&container.env).unwrap(),
            serde_json::json!([{"name": "TOKEN", "valueFrom": {"secretKeyRef": {
                "name": "team-creds", "key": "OPENAI_API_KEY", "optional": false}}}])
        );
        let status = fx.apiary(&["-o", "json", "status", AGENT]);
        assert_eq!(status.json()["secret"]["name"], own, "status names the pod's own Secret");
    }

    /// A referenced Secret that does not exist is refused before anything is written (exit 1),
    /// naming it and the command that creates it.
    fn a_missing_cluster_secret_is_refused_before_any_write(fx) {
        fx.create_user_secret("team-creds", &[("K", CLUSTER_VALUE)]);
        let run = fx.apiary(&[
            "deploy", AGENT, "--image", IMAGE,
            "--env-from-secret", "team-creds",
            "--env-secret", "TOKEN=absent-creds/K",
        ]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains("secret absent-creds"), "{run:?}");
        assert!(run.stderr.contains("nothing was created"), "{run:?}");
        assert!(run.stderr.contains("kubectl create secret generic absent-creds"), "{run:?}");
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    }
}

on_both_backends! {
    /// deploy.md § Pod options, The escape hatch: an `--overrides` patch (here from a file)
    /// reaches the server as given, beside apiary's own fields, and the same patch again is a
    /// no-op.
    fn an_overrides_patch_reaches_the_server(fx) {
        let file = fx.dir().join("overrides.json");
        std::fs::write(&file, r#"{"spec": {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.0.0.10"]},
            "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [
                    {"key": "example.com/pool", "operator": "In", "values": ["agents"]}]}}]}}}}"#).unwrap();
        let arg = format!("@{}", file.display());
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--overrides", &arg]);
        assert_eq!(run.code, 0, "{run:?}");
        let pod = fx.pod(run.stdout.trim()).expect("the pod");
        let spec = pod.spec.as_ref().expect("a spec");
        assert_eq!(spec.dns_policy.as_deref(), Some("None"));
        assert_eq!(
            serde_json::to_value(&spec.dns_config).unwrap(),
            serde_json::json!({"nameservers": ["10.0.0.10"]})
        );
        let affinity = serde_json::to_value(&spec.affinity).unwrap();
        assert_eq!(affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"], 1);
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.automount_service_account_token, Some(false));
        fx.clear_requests();
        let again = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--overrides", &arg]);
        assert_eq!(again.code, 0, "{again:?}");
        assert!(!again.stderr.contains("old configuration"), "{again:?}");
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    }
}
