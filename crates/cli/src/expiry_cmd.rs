//! Expiry on the command line (deploy.md § Expiry): `deploy --ttl` (the instant stamped from the
//! API server's clock before any write), `apiary renew`, and `apiary gc` for one agent or
//! `--all` — the GC pass plus the collection of expired agents — with their text and JSON forms.
//!
//! Wiring and rendering only: the `--ttl` syntax, the expiry decision, the guarded write and
//! the collection are the libraries'. Must not: send a request before `--ttl` parsed (exit 2),
//! read the local clock for anything shown or written, or print anything but the result on
//! stdout.

use apiary_classify::grace::GracePeriod;
use std::time::Duration;

use apiary_classify::expire::{ExpireError, ExpireReport};
use apiary_classify::expiry::{TtlError, format_instant, parse_ttl};
use apiary_classify::failure::RequestFailure;
use apiary_classify::renew::Renewed;
use apiary_substrate::Substrate;
use apiary_substrate::config::ValidConfig;
use apiary_substrate::driver::{
    self, AgentGc, EXPIRE_DEADLINE, GcAll, RENEW_BACKOFF, RenewOptions, StampError,
};
use apiary_substrate::naming::AgentIdentity;
use serde_json::{Value, json};

use crate::outcome::{CommandResult, Failure, Report};

/// How long `renew` retries conflicts without `--timeout`.
const RENEW_DEADLINE: Duration = Duration::from_secs(60);

/// `--ttl` in seconds; exit 2 naming the flag, the problem and the fix.
///
/// # Errors
/// The value is malformed or out of range.
pub fn ttl_flag(text: &str) -> Result<u64, Failure> {
    parse_ttl(text).map_err(|error: TtlError| Failure::refused(format!("--ttl {text:?} {error}")))
}

/// `config` with the expiry `ttl_secs` after the API server's clock (one pod list reads it).
///
/// # Errors
/// The list failed, or its answer had no usable `Date` header (nothing was written).
pub async fn stamp<S: Substrate>(
    substrate: &S,
    config: ValidConfig,
    ttl_secs: u64,
) -> Result<ValidConfig, Failure> {
    driver::stamp_expiry(substrate, config, ttl_secs)
        .await
        .map_err(|error| match error {
            StampError::Request(failure) => Failure::request(&failure, substrate.namespace()),
            StampError::NoServerClock => Failure::failed(error.to_string()),
        })
}

/// `apiary renew AGENT --ttl DURATION`, conflicts retried within `deadline` (`--timeout`; 60 s
/// when not given).
pub async fn renew<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    ttl_secs: u64,
    deadline: Option<Duration>,
) -> CommandResult {
    let options = RenewOptions {
        ttl_secs,
        deadline: deadline.unwrap_or(RENEW_DEADLINE),
        backoff: RENEW_BACKOFF,
    };
    let ns = substrate.namespace();
    let renewed = driver::renew(substrate, agent, &options)
        .await
        .map_err(|error| Failure::renew(&error, agent.name(), ns))?;
    Ok(renew_report(agent, ns, &renewed))
}

fn renew_report(agent: &AgentIdentity, ns: &str, renewed: &Renewed) -> Report {
    let expires = format_instant(renewed.expires_at);
    Report::new(
        format!("pod/{} expires at {expires}", renewed.pod),
        json!({
            "agent": agent.name(),
            "agent_id": agent.id(),
            "namespace": ns,
            "pod": renewed.pod,
            "expires_at": expires,
            "previous_expires_at": renewed.previous.map(format_instant),
            "server_time": format_instant(renewed.server_now),
            "conflicts": renewed.conflicts,
        }),
    )
}

/// One thing that went wrong in one agent's `gc`.
enum Problem {
    /// A request failed (a pass, a collection, or one deletion).
    Request(RequestFailure),
    /// The expired pod outlived the wait; its Secret was kept.
    Timeout(String),
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Request(failure) => write!(f, "{failure}"),
            Problem::Timeout(text) => f.write_str(text),
        }
    }
}

/// The failures of one agent's `gc`: the pass's or the collection's error, then the individual
/// deletion failures.
fn agent_failures(result: &AgentGc) -> Vec<Problem> {
    let mut out = Vec::new();
    match &result.pass {
        Err(failure) => out.push(Problem::Request(failure.clone())),
        Ok(pass) => out.extend(pass.failures.iter().cloned().map(Problem::Request)),
    }
    match &result.expired {
        Some(Err(ExpireError::Timeout { pod, deadline })) => out.push(Problem::Timeout(format!(
            "expired pod/{pod} did not disappear within {}s: its Secret was kept for a later gc",
            deadline.as_secs()
        ))),
        Some(Err(ExpireError::Failed(failure))) => out.push(Problem::Request(failure.clone())),
        Some(Ok(report)) => out.extend(report.failures.iter().cloned().map(Problem::Request)),
        None => {}
    }
    out
}

/// The command's failure for `problems` (not empty), as `gc` words it: the first one with its
/// fix (an RBAC refusal names the role to grant), and how many more were logged.
fn gc_failure(problems: &[Problem], ns: &str) -> Failure {
    let mut failure = match problems.first() {
        Some(Problem::Request(first)) => Failure::request(first, ns),
        Some(Problem::Timeout(text)) => Failure::failed(text.clone()),
        None => Failure::failed("a deletion failed"),
    };
    if problems.len() > 1 {
        failure.message = format!(
            "{}; {} more deletion(s) failed too (logged above), the others were attempted",
            failure.message,
            problems.len() - 1
        );
    }
    failure
}

/// One agent's lines (`pod/x`, `secret/y`, expired pods marked) and JSON object.
fn agent_parts(result: &AgentGc) -> (Vec<String>, Value) {
    let (pods, secrets, sweep, dry_run) = match &result.pass {
        Ok(pass) => (
            pass.pods.clone(),
            pass.secrets.clone(),
            pass.orphan_sweep.map_or("skipped", |s| s.as_str()),
            pass.dry_run,
        ),
        Err(_) => (Vec::new(), Vec::new(), "skipped", false),
    };
    let policy = result
        .pass
        .as_ref()
        .ok()
        .and_then(|pass| pass.network_policy.clone());
    let expired: Option<&ExpireReport> = match &result.expired {
        Some(Ok(report)) => Some(report),
        _ => None,
    };
    let mut lines: Vec<String> = pods.iter().map(|p| format!("pod/{p}")).collect();
    let mut all_secrets = secrets.clone();
    let mut expired_json = Value::Null;
    if let Some(report) = expired
        && let Some(pod) = &report.pod
    {
        let at = report.expired_at.map(format_instant);
        lines.push(format!(
            "pod/{pod} (expired at {})",
            at.as_deref().unwrap_or("?")
        ));
        all_secrets.extend(report.secrets.iter().cloned());
        expired_json = json!({
            "pod": pod,
            "expired_at": at,
            "secrets": report.secrets,
            "replaced": report.replaced,
        });
    }
    lines.extend(all_secrets.iter().map(|s| format!("secret/{s}")));
    lines.extend(policy.iter().map(|p| format!("networkpolicy/{p}")));
    let failures: Vec<String> = agent_failures(result)
        .iter()
        .map(Problem::to_string)
        .collect();
    let json = json!({
        "agent": result.agent.name(),
        "agent_id": result.agent.id(),
        "dry_run": dry_run,
        "orphan_sweep": sweep,
        "pods": pods,
        "secrets": all_secrets,
        "expired": expired_json,
        "network_policy": policy,
        "failures": failures,
    });
    (lines, json)
}

/// `apiary gc AGENT`: the GC pass, then the agent's pod if it has expired, waited for within
/// `deadline` (`--timeout`; 180 s when not given).
pub async fn gc<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    dry_run: bool,
    deadline: Option<Duration>,
    grace: Option<GracePeriod>,
) -> CommandResult {
    let ns = substrate.namespace();
    let deadline = deadline.unwrap_or(EXPIRE_DEADLINE);
    let result = driver::gc_agent(substrate, agent, dry_run, deadline, grace).await;
    if let Err(failure) = &result.pass {
        return Err(Failure::request(failure, ns));
    }
    if let Ok(pass) = &result.pass
        && pass.orphan_sweep.is_some_and(|s| s.as_str() == "skipped")
    {
        tracing::warn!(
            "orphan sweep skipped: the apiserver's answer carried no usable Date header, so no \
             Secret's age could be proven; terminated pods were still collected"
        );
    }
    let (lines, mut json) = agent_parts(&result);
    json["namespace"] = json!(ns);
    let problems = agent_failures(&result);
    let report = Report::new(lines.join("\n"), json);
    if problems.is_empty() {
        if lines.is_empty() {
            say_nothing_to_collect(&format!("agent {:?} in namespace {ns}", agent.name()));
        }
        return Ok(report);
    }
    for problem in &problems {
        tracing::error!("gc: {problem}");
    }
    Err(gc_failure(&problems, ns).with_detail("gc", report.json))
}

/// `apiary gc --all`: every agent apiary manages in the namespace, each attempted (each
/// expired pod waited for within `deadline`, 180 s when not given).
pub async fn gc_all<S: Substrate>(
    substrate: &S,
    dry_run: bool,
    deadline: Option<Duration>,
    grace: Option<GracePeriod>,
) -> CommandResult {
    let ns = substrate.namespace();
    let deadline = deadline.unwrap_or(EXPIRE_DEADLINE);
    let all: GcAll = driver::gc_all(substrate, dry_run, deadline, grace)
        .await
        .map_err(|failure| Failure::request(&failure, ns))?;
    if all.skipped > 0 {
        tracing::warn!(
            "{} marked object(s) carry no valid agent claim and were not visited",
            all.skipped
        );
    }
    let mut lines = Vec::new();
    let mut agents = Vec::new();
    let mut failed = Vec::new();
    for result in &all.agents {
        let (agent_lines, json) = agent_parts(result);
        lines.extend(
            agent_lines
                .into_iter()
                .map(|line| format!("{}: {line}", result.agent.name())),
        );
        agents.push(json);
        if result.failed() {
            for failure in agent_failures(result) {
                tracing::error!("gc of agent {:?}: {failure}", result.agent.name());
            }
            failed.push(result.agent.name().to_owned());
        }
    }
    let json = json!({
        "namespace": ns,
        "dry_run": dry_run,
        "agents": agents,
        "skipped": all.skipped,
    });
    let report = Report::new(lines.join("\n"), json);
    if failed.is_empty() {
        if lines.is_empty() {
            say_nothing_to_collect(&format!("namespace {ns}"));
        }
        return Ok(report);
    }
    Err(Failure::failed(format!(
        "gc --all did not complete for {} agent(s): {}; every other agent was collected (see \
         the log above)",
        failed.len(),
        failed.join(", ")
    ))
    .with_detail("gc", report.json))
}

/// Say on stderr, at every verbosity, that a gc pass found nothing to collect in `scope`
/// (deploy.md § gc): stdout stays the list, empty, so a script reading it is unchanged, and a
/// person is not left guessing whether the command did anything.
fn say_nothing_to_collect(scope: &str) {
    crate::progress::notice(&format!("nothing to collect in {scope}"));
}
