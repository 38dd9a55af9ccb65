//! `deploy --isolate` through the real driver over the fake substrate (deploy.md § Egress
//! control): the agent's NetworkPolicy is created before the Secret, kept when it says what the
//! configuration wants, replaced with the read's fence when the allow-list changed, never touched
//! when it is not apiary's (E15, zero writes after it), and deleted by undeploy and by a GC pass
//! that leaves the agent with nothing. No I/O: the fake's virtual clock.

use crate::conformance_support::*;
#[allow(
    dead_code,
    reason = "each conformance test binary uses a different subset"
)]
use apiary_classify::deploy::DeployError;
use apiary_classify::failure::Operation;
use apiary_classify::policy::{PolicyFailure, PolicyProblem};
use apiary_substrate::build::policy::{LABEL_ISOLATED, build_network_policy};
use apiary_substrate::config::ValidConfig;
use apiary_substrate::driver::{
    DeployOptions, UndeployError, UndeployOptions, deploy, gc, undeploy,
};
use apiary_substrate::fake::{FakeCluster, api_error};
use apiary_substrate::pod_options::EgressRule;

fn isolated(egress: &[(&str, Option<u16>)]) -> ValidConfig {
    config_with(|c| {
        c.pod_options.isolate = true;
        c.pod_options.allow_egress = egress
            .iter()
            .map(|(cidr, port)| EgressRule {
                cidr: (*cidr).to_owned(),
                port: *port,
            })
            .collect();
    })
}

fn deploy_isolated(
    fake: &FakeCluster,
    config: &ValidConfig,
    replace: bool,
) -> Result<String, DeployError> {
    let options = DeployOptions::for_config(config).replacing(replace);
    run(deploy(fake, config, &options)).map(|d| d.pod)
}

/// The policy is created before the Secret (one request), selects the agent's isolated pods,
/// allows DNS and the allow-list only; the pod carries the isolation label.
#[test]
fn the_policy_is_created_before_the_secret() {
    let fake = FakeCluster::new(NS);
    let config = isolated(&[("10.0.0.0/8", Some(443)), ("192.0.2.0/24", None)]);
    assert_eq!(deploy_isolated(&fake, &config, false), Ok(POD.to_owned()));
    let writes = fake.mutation_summaries();
    assert_eq!(
        writes[1],
        format!("create_network_policy {POD}"),
        "{writes:?}"
    );
    assert!(writes[2].starts_with("create_secret "), "{writes:?}");
    let policies = fake.network_policies();
    assert_eq!(policies.len(), 1);
    let spec = serde_json::to_value(policies[0].spec.as_ref().unwrap()).unwrap();
    assert_eq!(spec["podSelector"]["matchLabels"][LABEL_ISOLATED], "true");
    assert_eq!(
        spec["policyTypes"],
        serde_json::json!(["Ingress", "Egress"])
    );
    assert_eq!(
        spec.get("ingress"),
        None,
        "no ingress rule: nothing may connect in"
    );
    assert_eq!(
        spec["egress"],
        serde_json::json!([
            {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
            {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"protocol": "TCP", "port": 443}]},
            {"to": [{"ipBlock": {"cidr": "192.0.2.0/24"}}]},
        ])
    );
    let pod = fake.model().get_pod(NS, POD).unwrap();
    assert_eq!(pod.metadata.labels.unwrap()[LABEL_ISOLATED], "true");
}

/// The same deploy again keeps the started pod and never touches the policy; `--replace` with
/// another allow-list replaces the policy (one fenced update, the read's uid and
/// resourceVersion) before the running pod is deleted (deploy.md § Replacing a live agent, rule
/// 1a) and so before the new Secret, and a policy that already says it is kept as is.
#[test]
fn a_changed_allow_list_is_rolled_on_with_a_fenced_update() {
    let fake = FakeCluster::new(NS);
    let first = isolated(&[("10.0.0.0/8", None)]);
    deploy_isolated(&fake, &first, false).unwrap();
    fake.clear_calls();
    deploy_isolated(&fake, &first, false).unwrap();
    assert!(
        !fake
            .call_summaries()
            .iter()
            .any(|c| c.contains("network_policy")),
        "{:?}",
        fake.call_summaries()
    );
    let before = fake.network_policies()[0].clone();
    let second = isolated(&[("10.1.0.0/16", Some(8443))]);
    fake.clear_calls();
    deploy_isolated(&fake, &second, true).unwrap();
    let writes = fake.mutation_summaries();
    let update = format!(
        "update_network_policy {POD} uid={} rv={}",
        before.metadata.uid.as_deref().unwrap(),
        before.metadata.resource_version.as_deref().unwrap()
    );
    let at = writes
        .iter()
        .position(|w| *w == update)
        .expect("a fenced update");
    assert!(writes[at + 1].starts_with("delete_pod "), "{writes:?}");
    let secret = writes.iter().position(|w| w.starts_with("create_secret "));
    assert!(secret > Some(at), "{writes:?}");
    assert_eq!(
        fake.network_policies()[0].spec,
        build_network_policy(&second).unwrap().spec
    );
}

/// A policy apiary did not create under the agent's name is never used or changed: the deploy
/// fails with E15 and writes nothing after the refused create.
#[test]
fn a_foreign_policy_is_refused_and_never_touched() {
    let fake = FakeCluster::new(NS);
    let config = isolated(&[]);
    let mut foreign = build_network_policy(&config).unwrap();
    foreign.metadata.labels = None;
    foreign.metadata.annotations = None;
    let inserted = fake.insert_network_policy(foreign);
    let error = deploy_isolated(&fake, &config, false).unwrap_err();
    assert_eq!(
        error,
        DeployError::Policy {
            namespace: NS.into(),
            name: POD.into(),
            failure: PolicyFailure::Problem(PolicyProblem::Foreign),
        }
    );
    assert!(error.to_string().contains("remove it"), "{error}");
    let writes = fake.mutation_summaries();
    assert_eq!(
        writes.last().map(String::as_str),
        Some(format!("create_network_policy {POD}").as_str()),
        "{writes:?}"
    );
    assert_eq!(fake.network_policies(), [inserted]);
    assert!(fake.model().get_pod(NS, POD).is_err(), "no pod");
}

/// undeploy deletes the verified policy, fenced, once the pod is gone; a GC pass that leaves
/// the agent with nothing deletes a policy left behind, and a dry run never does.
#[test]
fn undeploy_and_an_emptying_gc_delete_the_policy() {
    let fake = FakeCluster::new(NS);
    let config = isolated(&[]);
    deploy_isolated(&fake, &config, false).unwrap();
    let policy = fake.network_policies()[0].clone();
    let report = run(undeploy(&fake, &agent(), &UndeployOptions::default())).unwrap();
    assert_eq!(report.network_policy.as_deref(), Some(POD));
    assert!(fake.network_policies().is_empty());
    let delete = format!(
        "delete_network_policy {POD} uid={} rv={}",
        policy.metadata.uid.as_deref().unwrap(),
        policy.metadata.resource_version.as_deref().unwrap()
    );
    assert!(
        fake.mutation_summaries().contains(&delete),
        "{:?}",
        fake.mutation_summaries()
    );

    let left = fake.insert_network_policy(build_network_policy(&config).unwrap());
    let dry = run(gc(&fake, &agent(), true)).unwrap();
    assert_eq!(dry.network_policy, None);
    assert_eq!(fake.network_policies(), [left]);
    let pass = run(gc(&fake, &agent(), false)).unwrap();
    assert_eq!(pass.network_policy.as_deref(), Some(POD));
    assert!(fake.network_policies().is_empty());
}

/// undeploy `--no-wait` keeps the policy (the pod is still terminating), and a GC pass that
/// still finds the pod keeps it too.
#[test]
fn the_policy_outlives_a_terminating_pod() {
    let fake = FakeCluster::new(NS);
    let config = isolated(&[]);
    deploy_isolated(&fake, &config, false).unwrap();
    let options = UndeployOptions {
        wait: false,
        ..UndeployOptions::default()
    };
    let report = run(undeploy(&fake, &agent(), &options)).unwrap();
    assert_eq!(report.network_policy, None);
    assert_eq!(fake.network_policies().len(), 1);
    let terminating = fake.model().get_pod(NS, POD).expect("still terminating");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let pass = run(gc(&fake, &agent(), false)).unwrap();
    assert!(!pass.agent_emptied);
    assert_eq!(pass.network_policy, None);
    assert_eq!(fake.network_policies().len(), 1);
}

/// A deployer role from before `--isolate` may not read policies: undeploy then ends well without
/// touching one; any other failure of the read fails the undeploy with it (E12), the pod already
/// gone.
#[test]
fn undeploy_survives_a_forbidden_policy_read_and_fails_on_any_other() {
    let fake = FakeCluster::new(NS);
    let config = isolated(&[]);
    deploy_isolated(&fake, &config, false).unwrap();
    fake.fail_next(
        Operation::GetNetworkPolicy,
        fake.forbidden(Operation::GetNetworkPolicy, POD),
    );
    let report = run(undeploy(&fake, &agent(), &UndeployOptions::default())).unwrap();
    assert_eq!(report.network_policy, None);
    assert_eq!(fake.network_policies().len(), 1, "left for gc");

    deploy_isolated(&fake, &config, false).unwrap();
    let failure = api_error(
        Operation::GetNetworkPolicy,
        POD,
        500,
        "InternalError",
        "boom",
    );
    fake.fail_next(Operation::GetNetworkPolicy, failure.clone());
    let error = run(undeploy(&fake, &agent(), &UndeployOptions::default())).unwrap_err();
    assert_eq!(error, UndeployError::Failed(failure));
    assert!(fake.model().get_pod(NS, POD).is_err(), "the pod is gone");
}

/// A fenced update of our policy that finds it gone answers a conflict (someone else is changing
/// it: E15's wording), any other failure is reported as itself.
#[test]
fn an_update_of_a_vanished_policy_is_a_conflict() {
    for (failure, expected) in [
        (
            api_error(Operation::UpdateNetworkPolicy, POD, 404, "NotFound", "gone"),
            PolicyFailure::Problem(PolicyProblem::Conflict),
        ),
        (
            api_error(
                Operation::UpdateNetworkPolicy,
                POD,
                500,
                "InternalError",
                "boom",
            ),
            PolicyFailure::Failed(api_error(
                Operation::UpdateNetworkPolicy,
                POD,
                500,
                "InternalError",
                "boom",
            )),
        ),
    ] {
        let fake = FakeCluster::new(NS);
        fake.insert_network_policy(build_network_policy(&isolated(&[])).unwrap());
        fake.fail_next(Operation::UpdateNetworkPolicy, failure);
        let changed = isolated(&[("10.0.0.0/8", Some(443))]);
        match deploy_isolated(&fake, &changed, false) {
            Err(DeployError::Policy { failure, .. }) => assert_eq!(failure, expected),
            other => panic!("expected the policy's failure, got {other:?}"),
        }
    }
}
