//! The expiry driver over the in-memory fake: `deploy --ttl` stamps the server clock's instant,
//! `renew` moves it with a guarded write, `gc` collects an expired agent (pod gracefully, then
//! its Secret) and leaves a live one, and `gc --all` visits every agent. Test-only; no I/O.

use apiary_classify::binding::APIARY;
use std::time::Duration;

use apiary_classify::expiry::expiry_of;
use apiary_classify::renew::RenewError;
use apiary_classify::request::{Answer, Listing, Machine as _, Request, Step};

use super::*;
use crate::config::DeployConfig;
use crate::driver::{
    DeployOptions, EXPIRE_DEADLINE, all_agents_selector, deploy, gc_agent, gc_all,
};
use crate::fake::{FakeCluster, ServerClock};
use crate::observe::observe_pod;

const NS: &str = "agents";
const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

use crate::fake::run_now as block;

fn config(name: &str) -> ValidConfig {
    DeployConfig::new(NS, IMAGE)
        .validate(&AgentIdentity::new(name).expect("agent"))
        .expect("valid")
}

fn fake() -> FakeCluster {
    let fake = FakeCluster::new(NS);
    fake.set_server_clock(ServerClock::Model);
    fake
}

fn expiry(fake: &FakeCluster, agent: &AgentIdentity) -> Option<i64> {
    fake.pod(&agent.pod_name())
        .map(|p| observe_pod(&p, APIARY))
        .and_then(|p| expiry_of(&p.marks))
}

/// Deploy a started agent expiring `ttl` seconds after the server clock.
fn deploy_expiring(fake: &FakeCluster, name: &str, ttl: u64) -> AgentIdentity {
    let stamped = block(stamp_expiry(fake, config(name), ttl)).expect("stamped");
    let options = DeployOptions::for_config(&stamped);
    block(deploy(fake, &stamped, &options)).expect("deployed");
    stamped.agent().clone()
}

/// The instant is the server clock (the model's, as the `Date` header) plus the TTL, and the
/// fingerprint is the plain configuration's.
#[test]
fn ttl_counts_from_the_server_clock() {
    let fake = fake();
    let start = fake.now().timestamp();
    let stamped = block(stamp_expiry(&fake, config("a"), 7_200)).expect("stamped");
    assert_eq!(stamped.expires_at(), Some(start + 7_200));
    assert_eq!(stamped.fingerprint(), config("a").fingerprint());
    let agent = deploy_expiring(&fake, "b", 3_600);
    assert_eq!(expiry(&fake, &agent), Some(start + 3_600));
}

/// Without a server clock nothing is stamped and nothing is written.
#[test]
fn no_server_clock_refuses_the_ttl() {
    let fake = FakeCluster::new(NS);
    assert_eq!(
        block(stamp_expiry(&fake, config("a"), 60)),
        Err(StampError::NoServerClock)
    );
    assert!(fake.pods().is_empty() && fake.secrets().is_empty());
}

/// Renew moves the expiry to the server clock at the observation plus the new TTL, with a
/// guarded write; an absent agent is refused.
#[test]
fn renew_moves_the_expiry() {
    let fake = fake();
    let agent = deploy_expiring(&fake, "a", 600);
    fake.advance(Duration::from_secs(100));
    let now = fake.now().timestamp();
    let options = RenewOptions {
        ttl_secs: 7_200,
        deadline: Duration::from_secs(30),
        backoff: RENEW_BACKOFF,
    };
    let renewed = block(renew(&fake, &agent, &options)).expect("renewed");
    assert_eq!(renewed.expires_at, now + 7_200);
    assert_eq!(renewed.server_now, now);
    assert_eq!(expiry(&fake, &agent), Some(now + 7_200));
    let absent = AgentIdentity::new("nobody").expect("agent");
    assert!(matches!(
        block(renew(&fake, &absent, &options)),
        Err(RenewError::Absent { .. })
    ));
}

/// `gc` leaves a live agent alone, and once it has expired on the server clock deletes its pod
/// gracefully, waits for it to go, then deletes its Secret; a dry run only says so.
#[test]
fn gc_collects_an_expired_agent_pod_then_secret() {
    let fake = fake();
    let agent = deploy_expiring(&fake, "a", 120);
    let live = block(gc_agent(&fake, &agent, false, EXPIRE_DEADLINE, None));
    assert_eq!(live.expired, Some(Ok(ExpireReportOf::default())));
    assert!(fake.pod(&agent.pod_name()).is_some());
    fake.advance(Duration::from_secs(121));
    let dry = block(gc_agent(&fake, &agent, true, EXPIRE_DEADLINE, None));
    let Some(Ok(planned)) = dry.expired else {
        panic!("dry run plans")
    };
    assert_eq!(planned.pod, Some(agent.pod_name()));
    assert!(
        fake.pod(&agent.pod_name()).is_some(),
        "a dry run deletes nothing"
    );
    let done = block(gc_agent(&fake, &agent, false, EXPIRE_DEADLINE, None));
    assert!(!done.failed());
    let Some(Ok(collected)) = done.expired else {
        panic!("collected")
    };
    assert_eq!(collected.pod, Some(agent.pod_name()));
    assert_eq!(collected.secrets.len(), 1);
    assert!(fake.pod(&agent.pod_name()).is_none());
    assert!(fake.secrets().is_empty());
}

/// `gc --all` visits every agent in the namespace and collects only the expired ones.
#[test]
fn gc_all_collects_only_expired_agents() {
    let fake = fake();
    let short = deploy_expiring(&fake, "short", 60);
    let long = deploy_expiring(&fake, "long", 7_200);
    let plain = config("plain");
    block(deploy(&fake, &plain, &DeployOptions::for_config(&plain))).expect("deployed");
    fake.advance(Duration::from_secs(61));
    let all = block(gc_all(&fake, false, EXPIRE_DEADLINE, None)).expect("listed");
    let names: Vec<&str> = all.agents.iter().map(|a| a.agent.name()).collect();
    assert_eq!(names, ["long", "plain", "short"]);
    assert_eq!(all.skipped, 0);
    assert!(fake.pod(&short.pod_name()).is_none());
    assert!(fake.pod(&long.pod_name()).is_some());
    assert!(fake.pod(&plain.pod_name()).is_some());
}

/// `gc --all` discovers agents by apiary's marker label only: an unmarked pod is not listed at
/// all, and a marked pod whose agent claim is missing is listed, not visited, and counted.
#[test]
fn gc_all_lists_by_the_marker_and_counts_unclaimed_objects() {
    assert_eq!(all_agents_selector(), "app.kubernetes.io/managed-by=apiary");
    let fake = fake();
    let agent = deploy_expiring(&fake, "kept", 7_200);
    let pod = |name: &str, labels: serde_json::Value| -> k8s_openapi::api::core::v1::Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "agent", "image": IMAGE}]},
        }))
        .expect("pod")
    };
    fake.insert_pod(pod("foreign", serde_json::json!({"app": "web"})))
        .expect("inserted");
    fake.insert_pod(pod(
        "unclaimed",
        serde_json::json!({"app.kubernetes.io/managed-by": "apiary"}),
    ))
    .expect("inserted");
    let all = block(gc_all(&fake, false, EXPIRE_DEADLINE, None)).expect("listed");
    let names: Vec<&str> = all.agents.iter().map(|a| a.agent.name()).collect();
    assert_eq!(names, ["kept"]);
    assert_eq!(all.skipped, 1, "only the marked, unclaimed pod is counted");
    assert!(fake.pod(&agent.pod_name()).is_some());
    assert!(fake.pod("foreign").is_some() && fake.pod("unclaimed").is_some());
}

/// A gc fails when its pass or its collection failed, or when either had a failed deletion.
#[test]
fn agent_gc_fails_on_any_failed_deletion() {
    use crate::driver::{AgentGc, GcReport};
    use apiary_classify::failure::Operation;
    let failure = || {
        RequestFailure::answered(
            Operation::DeleteSecret,
            "agents/s",
            500,
            "InternalError",
            "boom",
        )
    };
    let clean = AgentGc {
        agent: AgentIdentity::new("a").expect("agent"),
        pass: Ok(GcReport::default()),
        expired: Some(Ok(ExpireReportOf::default())),
    };
    assert!(!clean.failed());
    assert!(
        !AgentGc {
            expired: None,
            ..clean.clone()
        }
        .failed()
    );
    let pass_deletion = AgentGc {
        pass: Ok(GcReport {
            failures: vec![failure()],
            ..GcReport::default()
        }),
        ..clean.clone()
    };
    assert!(pass_deletion.failed());
    let collect_deletion = AgentGc {
        expired: Some(Ok(ExpireReportOf {
            failures: vec![failure()],
            ..ExpireReportOf::default()
        })),
        ..clean.clone()
    };
    assert!(collect_deletion.failed());
    assert!(
        AgentGc {
            pass: Err(failure()),
            expired: None,
            ..clean.clone()
        }
        .failed()
    );
}

/// The merge patch carries the authorising observation's `resourceVersion` (the guard) and the
/// expiry annotation, nothing else.
#[test]
fn expiry_patch_is_the_guard_and_the_annotation_only() {
    let fake = fake();
    let agent = deploy_expiring(&fake, "a", 600);
    let observed = observe_pod(&fake.pod(&agent.pod_name()).expect("pod"), APIARY);
    let version = observed.marks.resource_version.clone().expect("versioned");
    let mut machine = RenewMachine::new(RenewSpec {
        pod_name: agent.pod_name(),
        owner: agent.owner(),
        ttl_secs: 60,
        deadline: Duration::from_secs(30),
        backoff: RENEW_BACKOFF,
    });
    assert_eq!(
        machine.step(Duration::ZERO, Answer::Start),
        Step::Request(Request::List {
            secrets: false,
            dropping: None,
        })
    );
    let listing = Listing {
        pods: vec![observed],
        secrets: Vec::new(),
        // 2026-08-02T04:00:00Z
        server_now: Some(1_785_643_200),
    };
    let Step::Request(Request::WriteExpiry(write)) =
        machine.step(Duration::ZERO, Answer::Listed(Ok(listing)))
    else {
        panic!("a renew of a verified pod writes")
    };
    assert_eq!(
        expiry_patch(&write),
        serde_json::json!({
            "metadata": {
                "resourceVersion": version,
                "annotations": {"apiary.dev/expires-at": "2026-08-02T04:01:00Z"},
            }
        })
    );
}

type ExpireReportOf = apiary_classify::expire::ExpireReport;
