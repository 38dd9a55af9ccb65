//! Tests of the undeploy decisions (deploy.md § status, undeploy, gc; scenarios S3–S7 as far as
//! they are pure).

use super::*;
use crate::binding::Owner;
use crate::testkit::{AGENT_ID, OTHER_AGENT_ID, POD, own_pod, own_secret, running};

/// S3: a verified started pod → fenced delete with the observed fence.
#[test]
fn s3_verified_pod_fenced_delete() {
    match undeploy_pod_step(Some(&own_pod(running())), &Owner::apiary(AGENT_ID)) {
        UndeployPodStep::Delete(d) => {
            assert_eq!(d.name(), POD);
            assert_eq!(d.fence().uid(), "u1");
            assert_eq!(d.fence().resource_version(), "100");
        }
        other => panic!("{other:?}"),
    }
}

/// S4: no pod → straight to the Secrets.
#[test]
fn s4_absent_pod() {
    assert_eq!(
        undeploy_pod_step(None, &Owner::apiary(AGENT_ID)),
        UndeployPodStep::Absent
    );
}

/// S5: a foreign pod stops undeploy.
#[test]
fn s5_foreign_pod() {
    let mut pod = own_pod(running());
    pod.marks.agent_id = Some(OTHER_AGENT_ID.into());
    assert_eq!(
        undeploy_pod_step(Some(&pod), &Owner::apiary(AGENT_ID)),
        UndeployPodStep::Foreign
    );
}

/// A deletion-marked pod is only waited for.
#[test]
fn deletion_marked_pod_only_awaited() {
    let mut pod = own_pod(running());
    pod.marks.deletion_marked = true;
    assert_eq!(
        undeploy_pod_step(Some(&pod), &Owner::apiary(AGENT_ID)),
        UndeployPodStep::AwaitOnly {
            name: POD.into(),
            uid: "u1".into()
        }
    );
}

/// S7: after PreconditionFailed the new observation's fence is used, never the old one.
#[test]
fn s7_new_observation_new_fence() {
    let mut pod = own_pod(running());
    pod.marks.resource_version = Some("200".into());
    match undeploy_pod_step(Some(&pod), &Owner::apiary(AGENT_ID)) {
        UndeployPodStep::Delete(d) => assert_eq!(d.fence().resource_version(), "200"),
        other => panic!("{other:?}"),
    }
}

/// S4/S6: unreferenced verified Secrets are deleted without an age gate; referenced ones kept;
/// foreign ones untouched.
#[test]
fn s4_s6_secret_plan() {
    let mut pod = own_pod(running());
    pod.facts.env_from_secret = Some("kept".into());
    let mut foreign = own_secret("foreign", Some(0));
    foreign.marks.agent_id = Some(OTHER_AGENT_ID.into());
    let plan = undeploy_secrets(
        &[pod],
        &[
            own_secret("kept", Some(0)),
            own_secret("young", Some(i64::MAX)),
            own_secret("young", Some(i64::MAX)),
            foreign,
        ],
        &Owner::apiary(AGENT_ID),
    );
    assert_eq!(plan.kept, ["kept"]);
    let names: Vec<_> = plan.delete.iter().map(|d| (d.name(), d.uid())).collect();
    assert_eq!(names, [("young", "s-young")]);
}

/// No pods and no Secrets: nothing to do.
#[test]
fn s4_nothing_to_delete() {
    let plan = undeploy_secrets(&[], &[], &Owner::apiary(AGENT_ID));
    assert!(plan.delete.is_empty() && plan.kept.is_empty());
}

/// deploy.md § Egress control: undeploy deletes the agent's policy only once no pod of the
/// agent can run: none was found, or it was waited for until gone; never after `--no-wait`.
#[test]
fn the_policy_goes_only_once_no_pod_can_run() {
    use crate::undeploy::{UndeployReport, undeploy_removes_policy};
    let report = |pod: Option<&str>, waited: bool| UndeployReport {
        pod: pod.map(str::to_owned),
        waited,
        ..UndeployReport::default()
    };
    assert!(undeploy_removes_policy(&report(None, false)));
    assert!(undeploy_removes_policy(&report(Some("p"), true)));
    assert!(!undeploy_removes_policy(&report(Some("p"), false)));
}
