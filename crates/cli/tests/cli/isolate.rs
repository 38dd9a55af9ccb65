//! End-to-end: `deploy --isolate` (deploy.md § Egress control) through the built binary on a
//! real `kube-apiserver` with the fake kubelet (the simulator has no NetworkPolicy kind): the
//! server holds the policy apiary built before the pod, a replace with another allow-list updates
//! it, a plain redeploy leaves it alone, and undeploy deletes it and says so.
//!
//! Test-only code: it asserts on exit codes, output and the server's objects.

use crate::common::{Fixture, IMAGE};

const AGENT: &str = "isolated agent";

/// The policy's egress rules, as the server returns them.
fn egress(fx: &Fixture) -> serde_json::Value {
    let policies = fx.network_policies();
    assert_eq!(policies.len(), 1, "{policies:?}");
    serde_json::to_value(policies[0].spec.as_ref().expect("a spec")).unwrap()["egress"].clone()
}

#[test]
fn an_isolated_agent_gets_its_policy_until_undeploy() {
    let Some(fx) = Fixture::on_real("isolate") else {
        return;
    };
    let first = [
        "deploy",
        AGENT,
        "--image",
        IMAGE,
        "--isolate",
        "--allow-egress",
        "10.0.0.0/8:443",
    ];
    let run = fx.apiary(&first);
    assert_eq!(run.code, 0, "{run:?}");
    let pod_name = run.stdout.trim().to_owned();
    let policies = fx.network_policies();
    assert_eq!(
        policies[0].metadata.name.as_deref(),
        Some(pod_name.as_str())
    );
    let spec = serde_json::to_value(policies[0].spec.as_ref().unwrap()).unwrap();
    assert_eq!(
        spec["policyTypes"],
        serde_json::json!(["Ingress", "Egress"])
    );
    assert_eq!(
        spec["podSelector"]["matchLabels"]["apiary.dev/isolated"],
        "true"
    );
    assert_eq!(
        egress(&fx),
        serde_json::json!([
            {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
            {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"protocol": "TCP", "port": 443}]},
        ])
    );
    let pod = fx.pod(&pod_name).expect("the pod");
    assert_eq!(pod.metadata.labels.unwrap()["apiary.dev/isolated"], "true");

    // Another allow-list without --replace: the started pod and its policy are kept.
    let second = [
        "deploy",
        AGENT,
        "--image",
        IMAGE,
        "--isolate",
        "--allow-egress",
        "192.0.2.0/24",
    ];
    fx.clear_requests();
    let kept = fx.apiary(&second);
    assert_eq!(kept.code, 0, "{kept:?}");
    assert!(kept.stderr.contains("old configuration"), "{kept:?}");
    assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    // With --replace the policy is updated before the new pod.
    let mut replacing = second.to_vec();
    replacing.push("--replace");
    let replaced = fx.apiary(&replacing);
    assert_eq!(replaced.code, 0, "{replaced:?}");
    assert_eq!(egress(&fx)[1]["to"][0]["ipBlock"]["cidr"], "192.0.2.0/24");

    let gone = fx.apiary(&["undeploy", AGENT]);
    assert_eq!(gone.code, 0, "{gone:?}");
    assert!(
        gone.stdout
            .contains(&format!("networkpolicy/{pod_name} deleted")),
        "{gone:?}"
    );
    assert!(fx.network_policies().is_empty());
}

/// The simulator serves no NetworkPolicy API, like an apiserver without it: `--isolate` fails
/// before anything else is written (E15, not the missing-namespace E11), naming the policy.
#[test]
fn isolate_against_an_apiserver_without_network_policies_writes_nothing() {
    let fx = Fixture::on_sim();
    let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--isolate"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("networkpolicy"), "{run:?}");
    assert!(!run.stderr.contains("kubectl create namespace"), "{run:?}");
    assert!(run.stderr.contains("no pod was created"), "{run:?}");
    assert!(fx.pod_names().is_empty());
    assert!(fx.secret_names().is_empty());
}
