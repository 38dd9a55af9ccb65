//! `deploy --workspace-size` through the real driver over the fake substrate (deploy.md
//! § Persistent workspace): the agent's claim is created before the Secret (with the policy, in
//! one step), the pod mounts it, and it outlives everything but `undeploy --delete-workspace`: a
//! redeploy, `--replace`, a crash revival, a refused pod create, a GC pass, a plain undeploy. A
//! claim of another size is used as is and reported; a foreign or deleting one is never used
//! (E16, zero writes after it). No I/O: the fake's virtual clock.

use crate::conformance_support::*;
use apiary_classify::deploy::DeployError;
#[allow(
    dead_code,
    reason = "each conformance test binary uses a different subset"
)]
use apiary_classify::failure::Operation;
use apiary_classify::workspace::{ClaimDifference, ClaimFailure, ClaimProblem};
use apiary_substrate::DeleteAnswer;
use apiary_substrate::build::workspace::build_workspace_claim;
use apiary_substrate::config::ValidConfig;
use apiary_substrate::driver::{
    DeployOptions, Deployed, EXPIRE_DEADLINE, UndeployError, UndeployOptions, deploy, gc, gc_all,
    status, undeploy,
};
use apiary_substrate::fake::FakeCluster;
use apiary_substrate::fake::{Step, api_error};
use apiary_substrate::pod_options::WorkspaceClaim;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

const CLAIM: &str = "apiary-research-bot-1-72bea12366a3-workspace";

fn with_workspace(size: &str, class: Option<&str>, isolate: bool) -> ValidConfig {
    config_with(|c| {
        c.pod_options.workspace_claim = Some(WorkspaceClaim {
            size: size.to_owned(),
            storage_class: class.map(str::to_owned),
        });
        c.pod_options.isolate = isolate;
    })
}

fn deploy_with(
    fake: &FakeCluster,
    config: &ValidConfig,
    replace: bool,
) -> Result<Deployed, DeployError> {
    let options = DeployOptions::for_config(config).replacing(replace);
    run(deploy(fake, config, &options))
}

fn claim_writes(fake: &FakeCluster) -> Vec<String> {
    fake.mutation_summaries()
        .into_iter()
        .filter(|w| w.contains("workspace_claim"))
        .collect()
}

/// The claim is created before the Secret, in the same prepare step as the policy; the pod's
/// workspace volume mounts it; the report says it was created.
#[test]
fn the_claim_is_created_before_the_secret_and_mounted() {
    let fake = FakeCluster::new(NS);
    let config = with_workspace("10Gi", Some("fast"), true);
    let deployed = deploy_with(&fake, &config, false).unwrap();
    assert_eq!(deployed.pod, POD);
    let report = deployed.workspace.expect("a claim report");
    assert_eq!((report.name.as_str(), report.created), (CLAIM, true));
    let writes = fake.mutation_summaries();
    let prepare = &writes[1..3];
    assert!(
        prepare.contains(&format!("create_workspace_claim {CLAIM}")),
        "{writes:?}"
    );
    assert!(
        prepare.contains(&format!("create_network_policy {POD}")),
        "{writes:?}"
    );
    assert!(writes[3].starts_with("create_secret "), "{writes:?}");
    let claims = fake.workspace_claims();
    assert_eq!(claims.len(), 1);
    let spec = claims[0].spec.as_ref().unwrap();
    assert_eq!(
        spec.access_modes.as_deref(),
        Some(&["ReadWriteOnce".to_owned()][..])
    );
    assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
    assert_eq!(
        spec.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"],
        Quantity("10Gi".into())
    );
    let pod = fake.model().get_pod(NS, POD).unwrap();
    let volumes = pod.spec.unwrap().volumes.unwrap();
    let workspace = volumes.iter().find(|v| v.name == "workspace").unwrap();
    assert_eq!(
        workspace
            .persistent_volume_claim
            .as_ref()
            .unwrap()
            .claim_name,
        CLAIM
    );
    assert_eq!(workspace.empty_dir, None);
}

/// A redeploy keeps the started pod without touching the claim; `--replace` asking another size
/// and class keeps it too (the claim's size is not the pod's intent: deploy.md § Create-intent
/// fingerprint, rule 5), deleting nothing; a crash revival mounts the same claim, found and used
/// as is with the difference reported. The claim is created once and never deleted.
#[test]
fn the_claim_outlives_redeploys_replace_and_crash_revival() {
    let fake = FakeCluster::new(NS);
    let first = with_workspace("1Gi", None, false);
    deploy_with(&fake, &first, false).unwrap();
    fake.clear_calls();
    let kept = deploy_with(&fake, &first, false).unwrap();
    assert_eq!(kept.workspace, None);
    assert!(
        !fake
            .call_summaries()
            .iter()
            .any(|c| c.contains("workspace_claim"))
    );

    let bigger = with_workspace("2Gi", Some("fast"), false);
    fake.clear_calls();
    let replaced = deploy_with(&fake, &bigger, true).unwrap();
    assert!(replaced.intent_matches, "the pod's intent is the same");
    assert_eq!(replaced.workspace, None, "the running pod is kept");
    assert!(fake.pod_deletes().is_empty(), "{:?}", fake.call_summaries());
    fake.terminate_pod(POD, 1).unwrap();
    let revived = deploy_with(&fake, &bigger, false).unwrap();
    let report = revived.workspace.expect("found");
    assert!(!report.created);
    assert_eq!(
        report.differences,
        [
            ClaimDifference::Size {
                wanted: "2Gi".into(),
                found: Some("1Gi".into())
            },
            ClaimDifference::StorageClass {
                wanted: "fast".into(),
                found: None
            },
        ]
    );
    assert_eq!(
        fake.workspace_claims()[0].spec,
        build_workspace_claim(&first).unwrap().spec,
        "never recreated or resized"
    );
    let all: Vec<String> = fake
        .call_summaries()
        .into_iter()
        .filter(|c| c.starts_with("delete_workspace_claim"))
        .collect();
    assert!(all.is_empty(), "{all:?}");
}

/// A refused pod create drops the attempt's Secret and keeps the claim; a GC pass and `gc --all`
/// over a terminated pod never touch it; a plain undeploy reports it kept.
#[test]
fn failures_gc_and_a_plain_undeploy_keep_the_claim() {
    let fake = FakeCluster::new(NS);
    let config = with_workspace("1Gi", None, false);
    fake.fail_next(
        Operation::CreatePod,
        api_error(
            Operation::CreatePod,
            &format!("{NS}/{POD}"),
            422,
            "Invalid",
            "nope",
        ),
    );
    assert!(deploy_with(&fake, &config, false).is_err());
    assert_eq!(
        fake.workspace_claims().len(),
        1,
        "kept after a refused create"
    );
    deploy_with(&fake, &config, false).unwrap();
    fake.terminate_pod(POD, 0).unwrap();
    fake.clear_calls();
    run(gc(&fake, &agent(), false)).unwrap();
    run(gc_all(&fake, false, EXPIRE_DEADLINE, None)).unwrap();
    assert!(
        claim_writes(&fake).is_empty(),
        "{:?}",
        fake.mutation_summaries()
    );
    assert_eq!(fake.workspace_claims().len(), 1);
    let report = run(undeploy(&fake, &agent(), &UndeployOptions::default())).unwrap();
    let fate = report.workspace.expect("reported");
    assert_eq!((fate.name.as_str(), fate.deleted), (CLAIM, false));
    assert_eq!(fake.workspace_claims().len(), 1);
    assert!(claim_writes(&fake).is_empty());
}

/// `--delete-workspace` deletes the claim once the pod is gone, fenced by the read that proved
/// it ours; a lost precondition re-reads and deletes with the new fence.
#[test]
fn delete_workspace_is_a_fenced_delete_after_the_pod() {
    let fake = FakeCluster::new(NS);
    let config = with_workspace("1Gi", None, false);
    deploy_with(&fake, &config, false).unwrap();
    let claim = fake.workspace_claims()[0].clone();
    fake.clear_calls();
    fake.queue(
        Operation::DeleteWorkspaceClaim,
        Step::Delete(DeleteAnswer::PreconditionFailed),
    );
    let options = UndeployOptions {
        delete_workspace: true,
        ..UndeployOptions::default()
    };
    let report = run(undeploy(&fake, &agent(), &options)).unwrap();
    assert!(report.workspace.expect("reported").deleted);
    assert!(fake.workspace_claims().is_empty());
    let writes = fake.mutation_summaries();
    let fenced = format!(
        "delete_workspace_claim {CLAIM} uid={} rv={}",
        claim.metadata.uid.as_deref().unwrap(),
        claim.metadata.resource_version.as_deref().unwrap()
    );
    assert_eq!(claim_writes(&fake), [fenced.clone(), fenced], "{writes:?}");
    let pod_delete = writes
        .iter()
        .position(|w| w.starts_with("delete_pod"))
        .unwrap();
    let claim_delete = writes
        .iter()
        .position(|w| w.starts_with("delete_workspace_claim"))
        .unwrap();
    assert!(pod_delete < claim_delete, "{writes:?}");
}

/// A claim that is not apiary's, or ours and being deleted, is never used: E16 before the
/// Secret, and nothing is written after the refused step.
#[test]
fn foreign_and_deleting_claims_are_refused_with_nothing_written() {
    let config = with_workspace("1Gi", None, false);
    for (problem, edit) in [
        (
            ClaimProblem::Foreign,
            (|_: &FakeCluster, c: &mut PersistentVolumeClaim| {
                c.metadata.annotations = None;
            }) as fn(&FakeCluster, &mut PersistentVolumeClaim),
        ),
        (ClaimProblem::Deleting, |fake, c| {
            c.metadata.deletion_timestamp = Some(Time(fake.model().now()));
        }),
    ] {
        let fake = FakeCluster::new(NS);
        let mut claim = build_workspace_claim(&config).unwrap();
        edit(&fake, &mut claim);
        let before = fake.insert_workspace_claim(claim);
        let error = deploy_with(&fake, &config, false).unwrap_err();
        assert_eq!(
            error,
            DeployError::Workspace {
                namespace: NS.into(),
                claim: CLAIM.into(),
                failure: ClaimFailure::Problem(problem),
            }
        );
        let writes = fake.mutation_summaries();
        assert!(
            writes.last().unwrap().starts_with("create_workspace_claim"),
            "{writes:?}"
        );
        assert_eq!(fake.workspace_claims(), [before]);
        let seen = run(status(&fake, &agent(), None))
            .unwrap()
            .workspace
            .unwrap();
        assert_eq!(seen.ours, problem != ClaimProblem::Foreign);
        assert_eq!(seen.deleting, problem == ClaimProblem::Deleting);
    }
}

/// Expiry (`gc --all` collecting an expired agent) deletes the pod and its Secret, never the
/// claim: the next deploy of the agent mounts the same one.
#[test]
fn expiry_keeps_the_claim() {
    let fake = FakeCluster::new(NS);
    fake.set_server_clock(apiary_substrate::fake::ServerClock::Model);
    let config = with_workspace("1Gi", None, false).expiring_at(1);
    deploy_with(&fake, &config, false).unwrap();
    let claim = fake.workspace_claims()[0].clone();
    fake.clear_calls();
    run(gc_all(&fake, false, EXPIRE_DEADLINE, None)).unwrap();
    assert!(
        fake.model().get_pod(NS, POD).is_err(),
        "the expired pod is collected"
    );
    assert!(
        claim_writes(&fake).is_empty(),
        "{:?}",
        fake.mutation_summaries()
    );
    assert_eq!(fake.workspace_claims(), [claim]);
    let again = deploy_with(&fake, &with_workspace("1Gi", None, false), false).unwrap();
    assert!(!again.workspace.unwrap().created);
}

/// An older deployer role may not read claims: without `--delete-workspace` a failed read only
/// loses the report line; with it, the undeploy fails with the failure (E12), the pod gone.
#[test]
fn a_failed_claim_read_loses_the_line_unless_the_claim_is_to_go() {
    for delete_workspace in [false, true] {
        let fake = FakeCluster::new(NS);
        let config = with_workspace("1Gi", None, false);
        deploy_with(&fake, &config, false).unwrap();
        let failure = api_error(
            Operation::GetWorkspaceClaim,
            CLAIM,
            500,
            "InternalError",
            "boom",
        );
        fake.fail_next(Operation::GetWorkspaceClaim, failure.clone());
        let options = UndeployOptions {
            delete_workspace,
            ..UndeployOptions::default()
        };
        let result = run(undeploy(&fake, &agent(), &options));
        if delete_workspace {
            assert_eq!(result, Err(UndeployError::Failed(failure)));
        } else {
            assert_eq!(result.expect("undeployed").workspace, None);
        }
        assert_eq!(fake.workspace_claims().len(), 1, "the claim is kept");
    }
}

/// A claim whose every fenced delete loses its precondition (its status keeps changing) is read
/// and tried again a bounded number of times, then kept and reported kept.
#[test]
fn a_claim_that_keeps_changing_is_kept_after_the_bounded_attempts() {
    let fake = FakeCluster::new(NS);
    let config = with_workspace("1Gi", None, false);
    deploy_with(&fake, &config, false).unwrap();
    fake.clear_calls();
    for _ in 0..apiary_classify::workspace::CLAIM_DELETE_ATTEMPTS {
        fake.queue(
            Operation::DeleteWorkspaceClaim,
            Step::Delete(DeleteAnswer::PreconditionFailed),
        );
    }
    let options = UndeployOptions {
        delete_workspace: true,
        ..UndeployOptions::default()
    };
    let report = run(undeploy(&fake, &agent(), &options)).unwrap();
    assert!(!report.workspace.expect("reported").deleted);
    assert_eq!(fake.workspace_claims().len(), 1);
    assert_eq!(
        claim_writes(&fake).len(),
        apiary_classify::workspace::CLAIM_DELETE_ATTEMPTS as usize
    );
}
