//! `deploy --ttl`, `apiary renew` and `apiary gc [--all]` end to end (deploy.md § Expiry):
//! the built binary against the simulator (and, where no clock must pass, the real API server
//! tier too). The expiry comes from the server's `Date`, a renew is one guarded PATCH that a
//! conflict makes re-read and retry, `gc --all` collects expired agents only (pod first, Secret
//! after it is gone) and `--dry-run` deletes nothing; bad input is exit 2 before any request.
//!
//! Layer: CLI integration tests; loopback only.

use std::time::Duration;

use crate::common::{Fixture, IMAGE, on_both_backends};
use apiary_apiserver_sim::{FaultAction, FaultRule, Matcher, Resource, Verb};
use apiary_classify::expiry::parse_instant;

const AGENT: &str = "Research Bot #1";
const POD: &str = "apiary-research-bot-1-72bea12366a3";
const EXPIRES: &str = "apiary.dev/expires-at";

fn expiry_of(fx: &Fixture, pod: &str) -> Option<i64> {
    fx.pod(pod)?
        .metadata
        .annotations?
        .get(EXPIRES)
        .and_then(|v| parse_instant(v))
}

fn created_at(fx: &Fixture, pod: &str) -> i64 {
    fx.pod(pod)
        .and_then(|p| p.metadata.creation_timestamp)
        .map(|t| t.0.as_second())
        .expect("created")
}

fn pod_of(agent: &str) -> String {
    apiary_substrate::naming::AgentIdentity::new(agent)
        .expect("agent")
        .pod_name()
}

on_both_backends! {
    /// `deploy --ttl 2h` records the instant 2 h after the server clock read before the create:
    /// at most 2 h after the server-assigned creationTimestamp, and not much less; `status`
    /// shows it with the time left on the server's clock, in JSON and as its last text line.
    fn deploy_ttl_records_the_server_expiry(fx) {
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--ttl", "2h"]);
        assert_eq!(run.code, 0, "{run:?}");
        let expires = expiry_of(&fx, POD).expect("expiry annotation");
        let ttl = expires - created_at(&fx, POD);
        assert!((7_200 - 120..=7_200).contains(&ttl), "ttl {ttl}");
        let status = fx.apiary(&["status", AGENT, "-o", "json"]);
        assert_eq!(status.code, 0, "{status:?}");
        let doc = status.json();
        assert_eq!(
            doc["expires_at"].as_str().and_then(parse_instant),
            Some(expires),
            "{doc}"
        );
        let left = doc["expires_in_seconds"].as_i64().expect("time left");
        assert!((7_200 - 120..=7_200).contains(&left), "{doc}");
        let text = fx.apiary(&["status", AGENT]);
        assert_eq!(text.code, 0, "{text:?}");
        let line = text.stdout.lines().last().unwrap_or_default();
        let instant = doc["expires_at"].as_str().unwrap_or_default();
        assert!(line.starts_with(&format!("expires: {instant} (in ")), "{}", text.stdout);
    }

    /// `status` lists the agent's pods once, for the server clock, only when its pod records an
    /// expiry: a pod without one shows none and needs no clock.
    fn status_reads_the_server_clock_only_for_an_expiry(fx) {
        let pod_lists = |fx: &Fixture| {
            fx.requests().iter().filter(|r| r.is(Verb::List, Resource::Pods)).count()
        };
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE]);
        assert_eq!(run.code, 0, "{run:?}");
        fx.clear_requests();
        let plain = fx.apiary(&["status", AGENT, "-o", "json"]);
        assert_eq!(plain.code, 0, "{plain:?}");
        assert!(plain.json().get("expires_at").is_none(), "{plain:?}");
        assert_eq!(pod_lists(&fx), 0);
        let renewed = fx.apiary(&["renew", AGENT, "--ttl", "1h"]);
        assert_eq!(renewed.code, 0, "{renewed:?}");
        fx.clear_requests();
        let expiring = fx.apiary(&["status", AGENT, "-o", "json"]);
        assert_eq!(expiring.code, 0, "{expiring:?}");
        assert!(expiring.json()["expires_at"].is_string(), "{expiring:?}");
        assert_eq!(pod_lists(&fx), 1);
    }

    /// `renew --ttl 5h` moves the expiry with one guarded PATCH and says where it is now.
    fn renew_moves_the_expiry(fx) {
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--ttl", "1h"]);
        assert_eq!(run.code, 0, "{run:?}");
        let before = expiry_of(&fx, POD).expect("expiry");
        fx.clear_requests();
        let renewed = fx.apiary(&["renew", AGENT, "--ttl", "5h", "-o", "json"]);
        assert_eq!(renewed.code, 0, "{renewed:?}");
        let doc = renewed.json();
        let after = expiry_of(&fx, POD).expect("expiry");
        assert_eq!(doc["expires_at"].as_str().and_then(parse_instant), Some(after));
        assert_eq!(doc["previous_expires_at"].as_str().and_then(parse_instant), Some(before));
        assert!(after - before >= 4 * 3_600, "{before} -> {after}");
        assert_eq!(doc["conflicts"], 0);
        let mutations = fx.mutations();
        assert_eq!(mutations.len(), 1, "{mutations:?}");
        assert!(mutations[0].starts_with("PATCH "), "{mutations:?}");
    }

    /// Refusals come before any request: a malformed or out-of-range `--ttl`, `gc` with neither
    /// or both of AGENT and `--all`.
    fn bad_expiry_input_is_refused_before_contact(fx) {
        for args in [
            &["deploy", AGENT, "--image", IMAGE, "--ttl", "2x"][..],
            &["deploy", AGENT, "--image", IMAGE, "--ttl", "30s"][..],
            &["renew", AGENT, "--ttl", "400d"][..],
            &["renew", AGENT][..],
            &["gc"][..],
            &["gc", AGENT, "--all"][..],
        ] {
            let run = fx.apiary(args);
            assert_eq!(run.code, 2, "{args:?}: {run:?}");
            let named = ["--ttl", "--all", "AGENT"].iter().any(|f| run.stderr.contains(f));
            assert!(named, "{args:?}: {}", run.stderr);
        }
        let json = fx.apiary(&["-o", "json", "renew", AGENT, "--ttl", "soon"]);
        assert_eq!(json.code, 2, "{json:?}");
        assert!(json.json()["error"].as_str().is_some_and(|e| e.contains("--ttl")), "{json:?}");
        fx.assert_no_requests("bad expiry input");
    }

    /// Renewing an agent that has no pod fails naming the fix and writes nothing.
    fn renew_of_an_absent_agent_fails(fx) {
        let run = fx.apiary(&["renew", AGENT, "--ttl", "1h"]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains("no pod"), "{}", run.stderr);
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    }
}

/// A 409 `Conflict` on the PATCH (someone changed the pod) makes renew re-read and write again
/// with the fresh resourceVersion, never the old one.
#[test]
fn renew_conflict_rereads_and_retries() {
    let fx = Fixture::on_sim();
    let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--ttl", "1h"]);
    assert_eq!(run.code, 0, "{run:?}");
    fx.sim().faults().add(FaultRule::times(
        1,
        Matcher::verb(Verb::Patch, Resource::Pods),
        FaultAction::Status {
            code: 409,
            reason: "Conflict".into(),
            message: "the object has been modified".into(),
        },
    ));
    fx.clear_requests();
    let renewed = fx.apiary(&["renew", AGENT, "--ttl", "3h", "-o", "json"]);
    assert_eq!(renewed.code, 0, "{renewed:?}");
    assert_eq!(renewed.json()["conflicts"], 1);
    let methods: Vec<String> = fx.requests().iter().map(|r| r.method.clone()).collect();
    let patches = methods.iter().filter(|m| *m == "PATCH").count();
    assert_eq!(patches, 2, "{methods:?}");
    let lists_before_each_patch = methods
        .split(|m| m == "PATCH")
        .take(2)
        .all(|before| before.iter().any(|m| m == "GET"));
    assert!(lists_before_each_patch, "{methods:?}");
    let versions: Vec<String> = fx
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH")
        .map(|r| {
            let body: serde_json::Value = serde_json::from_str(&r.body).expect("JSON patch");
            body["metadata"]["resourceVersion"]
                .as_str()
                .expect("every patch is guarded")
                .to_owned()
        })
        .collect();
    assert_eq!(versions.len(), 2);
    assert_eq!(
        versions[0], versions[1],
        "the injected conflict changed nothing, so the re-read sees the same version: the retry \
         carries what it just read, never a guess"
    );
}

/// `gc --all` collects the expired agents only: the expired pod gracefully, then its Secret;
/// `--dry-run` first says what would go and deletes nothing.
#[test]
fn gc_all_collects_expired_agents_only() {
    let fx = Fixture::on_sim();
    for (agent, ttl) in [("short", Some("1m")), ("long", Some("2h")), ("plain", None)] {
        let mut args = vec!["deploy", agent, "--image", IMAGE];
        if let Some(ttl) = ttl {
            args.extend(["--ttl", ttl]);
        }
        let run = fx.apiary(&args);
        assert_eq!(run.code, 0, "{agent}: {run:?}");
    }
    fx.wait_model(Duration::from_secs(75));
    fx.clear_requests();
    let dry = fx.apiary(&["gc", "--all", "--dry-run", "-o", "json"]);
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    let doc = dry.json();
    let agents = doc["agents"].as_array().expect("agents");
    let names: Vec<&str> = agents.iter().filter_map(|a| a["agent"].as_str()).collect();
    assert_eq!(names, ["long", "plain", "short"], "{doc}");
    let expired: Vec<&str> = agents
        .iter()
        .filter_map(|a| a["expired"]["pod"].as_str())
        .collect();
    assert_eq!(expired, [pod_of("short")], "{doc}");

    let run = fx.apiary(&["gc", "--all", "-o", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(fx.pod(&pod_of("short")).is_none());
    assert!(fx.pod(&pod_of("long")).is_some());
    assert!(fx.pod(&pod_of("plain")).is_some());
    let short_secrets = fx
        .secret_names()
        .into_iter()
        .filter(|s| s.starts_with(&pod_of("short")))
        .count();
    assert_eq!(short_secrets, 0);
    let mutations = fx.mutations();
    let pod_delete = mutations
        .iter()
        .position(|m| m.starts_with("DELETE") && m.contains("/pods/"));
    let secret_delete = mutations
        .iter()
        .position(|m| m.starts_with("DELETE") && m.contains("/secrets/"));
    assert!(
        matches!((pod_delete, secret_delete), (Some(p), Some(s)) if p < s),
        "{mutations:?}"
    );
    assert_eq!(mutations.len(), 2, "{mutations:?}");

    let text = fx.apiary(&["gc", "long"]);
    assert_eq!(text.code, 0, "{text:?}");
    assert!(fx.pod(&pod_of("long")).is_some(), "not expired: kept");
}

on_both_backends! {
    /// `gc` with nothing to collect says so on stderr, with and without `--dry-run`, for one
    /// agent and for `--all`; stdout stays the list, empty, and nothing is written.
    fn gc_with_nothing_to_collect_says_so_on_stderr(fx) {
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE]).code, 0);
        fx.clear_requests();
        let ns = fx.namespace();
        for args in [
            vec!["gc", "--all", "--dry-run"],
            vec!["gc", "--all"],
            vec!["gc", AGENT, "--dry-run"],
            vec!["gc", AGENT],
        ] {
            let run = fx.apiary(&args);
            assert_eq!(run.code, 0, "{args:?}: {run:?}");
            assert_eq!(run.stdout, "", "{args:?}");
            let scope = if args[1] == "--all" {
                format!("namespace {ns}")
            } else {
                format!("agent {AGENT:?} in namespace {ns}")
            };
            assert_eq!(run.stderr, format!("nothing to collect in {scope}\n"), "{args:?}");
        }
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    }
}
