//! The expiry driver over the in-memory fake: `deploy --ttl` stamps the server clock's instant,
//! `renew` moves it with a guarded write, `gc` collects an expired agent (pod gracefully, then
//! its Secret) and leaves a live one, and `gc --all` visits every agent. Test-only; no I/O.

use apiary_classify::binding::APIARY;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use apiary_classify::expiry::{RenewError, expiry_of};

use super::*;
use crate::config::DeployConfig;
use crate::driver::{DeployOptions, EXPIRE_DEADLINE, deploy, gc_agent, gc_all};
use crate::fake::{FakeCluster, ServerClock};
use crate::observe::observe_pod;

const NS: &str = "agents";
const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn block<F: Future>(future: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut cx) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("a driver future over the fake must complete without yielding"),
    }
}

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
    let live = block(gc_agent(&fake, &agent, false, EXPIRE_DEADLINE));
    assert_eq!(live.expired, Some(Ok(ExpireReportOf::default())));
    assert!(fake.pod(&agent.pod_name()).is_some());
    fake.advance(Duration::from_secs(121));
    let dry = block(gc_agent(&fake, &agent, true, EXPIRE_DEADLINE));
    let Some(Ok(planned)) = dry.expired else {
        panic!("dry run plans")
    };
    assert_eq!(planned.pod, Some(agent.pod_name()));
    assert!(
        fake.pod(&agent.pod_name()).is_some(),
        "a dry run deletes nothing"
    );
    let done = block(gc_agent(&fake, &agent, false, EXPIRE_DEADLINE));
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
    let all = block(gc_all(&fake, false, EXPIRE_DEADLINE)).expect("listed");
    let names: Vec<&str> = all.agents.iter().map(|a| a.agent.name()).collect();
    assert_eq!(names, ["long", "plain", "short"]);
    assert_eq!(all.skipped, 0);
    assert!(fake.pod(&short.pod_name()).is_none());
    assert!(fake.pod(&long.pod_name()).is_some());
    assert!(fake.pod(&plain.pod_name()).is_some());
}

type ExpireReportOf = apiary_classify::expiry::ExpireReport;
