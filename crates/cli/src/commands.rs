//! The deploy-side subcommands over any [`Substrate`]: call the driver, shape its result into
//! the contract's text and JSON (deploy.md § Deploy-side subcommands), map its errors to exit 1.
//!
//! Shell layer: decides nothing about the cluster (the driver and `apiary-classify` do); the
//! only choices here are wording and document shape. Must not: print an env value (nothing
//! here ever holds one: results carry names and redacted conditions only).

use apiary_classify::grace::GracePeriod;
use apiary_classify::settings::{SettingsDiff, differing_settings, setting_label};
use apiary_classify::workspace::{ClaimDifference, ClaimShape, claim_differences};
use std::time::Duration;

use apiary_classify::deploy::Left;
use apiary_classify::expiry::{format_instant, render_time_left};
use apiary_classify::workspace::ClaimReport;
use apiary_substrate::Substrate;
use apiary_substrate::config::ValidConfig;
use apiary_substrate::driver::{
    self, DeployOptions, StatusExpiry, StatusReport, UndeployError, UndeployOptions, UndeployReport,
};
use apiary_substrate::naming::AgentIdentity;
use serde_json::{Value, json};

use crate::outcome::{CommandResult, Failure, Report};
use crate::progress::StatusLine;
use crate::watched::describe;

/// `apiary deploy` with `options` (`--replace`: deploy.md § Replacing a live agent): run the
/// driver with progress; the pod name on success.
pub async fn deploy_with<S: Substrate>(
    substrate: &S,
    config: &ValidConfig,
    options: &DeployOptions,
    progress: &StatusLine,
) -> CommandResult {
    let agent = config.agent();
    let result = driver::deploy_watching(substrate, config, options, &mut |p| {
        progress.update(&describe(p, "no pod yet"));
    })
    .await;
    progress.finish();
    let deployed = result.map_err(|e| {
        let failure = Failure::deploy(&e, config.namespace());
        match e.left() {
            Some(left) => with_left(failure, &left, agent),
            None => failure,
        }
    })?;
    if !deployed.intent_matches {
        let diff = differing_settings(
            deployed.recorded_settings.as_deref(),
            &config.intent().settings(),
        );
        tracing::warn!(
            "pod {} was already running with a different configuration ({}); it keeps its old \
             configuration until it exits or is undeployed{}",
            deployed.pod,
            differs_text(&diff),
            if options.replace {
                " (a concurrent deploy replaced it first)"
            } else {
                "; deploy again with --replace to roll the new configuration onto it"
            }
        );
    }
    // deploy.md § Persistent workspace: a kept pod's claim is compared with what was asked, and
    // a difference reported with its fix (claims are never resized), never acted on.
    if deployed.workspace.is_none()
        && let Some(wanted) = &config.pod_options().workspace_claim
        && let Some(found) = driver::read_workspace(substrate, agent).await
        && found.ours
    {
        let wanted = ClaimShape {
            size: Some(wanted.size.clone()),
            storage_class: wanted.storage_class.clone(),
        };
        let differences = claim_differences(&wanted, &found.shape);
        if !differences.is_empty() {
            tracing::warn!("{}", claim_differs_text(&differences, &found.name));
        }
    }
    let mut report = deploy_report(agent, config.namespace(), &deployed.pod);
    // deploy.md § Persistent workspace: the claim's key only when the deploy prepared one.
    if let Some(claim) = &deployed.workspace {
        report.json["workspace"] = workspace_json(claim);
    }
    Ok(report)
}

/// deploy.md § What a failure leaves: the failure's message ends by naming what it left of the
/// agent and the command that removes it; the JSON document adds `left`.
pub fn with_left(mut failure: Failure, left: &Left, agent: &AgentIdentity) -> Failure {
    let name = shell_word(agent.name());
    let (sentence, pod, state) = match left {
        Left::Pod(pod) => (
            format!(
                "Left in the cluster: pod {pod} and its Secret, kept for `apiary logs {name}`; \
                 `apiary undeploy {name}` removes them"
            ),
            pod,
            "kept",
        ),
        Left::MaybePod(pod) => (
            format!(
                "Pod {pod} and its Secret may be left in the cluster: `apiary status {name}` \
                 tells, `apiary undeploy {name}` removes them"
            ),
            pod,
            "unknown",
        ),
        Left::Terminating(pod) => (
            format!(
                "No new pod was created: once pod {pod} is gone nothing of the agent runs; run \
                 this deploy again to create the new pod (it waits for {pod} to go), or `apiary \
                 undeploy {name}` to remove the agent"
            ),
            pod,
            "terminating",
        ),
    };
    failure.message = format!("{}. {sentence}", failure.message.trim_end_matches('.'));
    failure.with_detail("left", json!({ "pod": pod, "state": state }))
}

/// `text` as one word of a POSIX shell command line: as it is when it holds only characters no
/// shell treats specially, otherwise in single quotes.
pub fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '@' | '+' | '=')
        });
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// What a deploy did about its workspace claim, in JSON.
pub fn workspace_json(claim: &ClaimReport) -> Value {
    json!({
        "name": claim.name,
        "created": claim.created,
        "differences": claim.differences.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

/// The deploy result: text is the pod name alone.
pub fn deploy_report(agent: &AgentIdentity, namespace: &str, pod: &str) -> Report {
    Report::new(
        pod,
        json!({
            "agent": agent.name(),
            "agent_id": agent.id(),
            "namespace": namespace,
            "pod": pod,
            "state": "started",
        }),
    )
}

/// `apiary status`: read-only report; exit 0 whenever a report is produced.
pub async fn status<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    config: Option<&ValidConfig>,
) -> CommandResult {
    let report = driver::status(substrate, agent, config)
        .await
        .map_err(|e| Failure::request(&e, substrate.namespace()))?;
    Ok(status_report(agent, substrate.namespace(), &report))
}

/// The status result in both forms.
pub fn status_report(agent: &AgentIdentity, namespace: &str, report: &StatusReport) -> Report {
    let state = report.state.as_str();
    let pod = (state != "absent").then_some(report.pod.as_str());
    let secret = report
        .secret
        .as_ref()
        .map(|s| json!({ "name": s.name, "exists": s.exists }));
    let mut doc = json!({
        "agent": agent.name(),
        "agent_id": agent.id(),
        "namespace": namespace,
        "pod": pod,
        "state": state,
        "condition": report.condition,
        "secret": secret.unwrap_or(Value::Null),
        "intent_matches": report.intent_matches,
        "intent_differs": report.intent_differs.as_ref().map(differs_json),
        "environment_differs": report.env_differs,
        "workspace": report.workspace.as_ref().map(|claim| json!({
            "name": claim.name,
            "apiary_owned": claim.ours,
            "size": claim.shape.size,
            "storage_class": claim.shape.storage_class,
            "phase": claim.phase,
            "deleting": claim.deleting,
        })),
        "workspace_differs": report.workspace_differs.as_ref().map(|all| {
            all.iter().map(ToString::to_string).collect::<Vec<_>>()
        }),
    });
    // deploy.md § Expiry: the keys (and the last line) only for a verified pod with an expiry.
    if let Some(expiry) = report.expiry {
        doc["expires_at"] = json!(format_instant(expiry.expires_at));
        doc["expires_in_seconds"] = json!(expiry.seconds_left);
    }
    let dash = |v: Option<&str>| v.unwrap_or("-").to_owned();
    let text = [
        format!("state: {state}"),
        format!("pod: {}", dash(pod)),
        format!("condition: {}", dash(report.condition.as_deref())),
        format!(
            "secret: {}",
            report.secret.as_ref().map_or_else(
                || "-".to_owned(),
                |s| format!(
                    "{} ({})",
                    s.name,
                    if s.exists { "present" } else { "missing" }
                )
            )
        ),
        format!(
            "intent: {}",
            match (report.intent_matches, &report.intent_differs) {
                (Some(true), _) => "matches".to_owned(),
                (Some(false), Some(diff)) => format!("differs ({})", differs_text(diff)),
                (Some(false), None) => "differs".to_owned(),
                (None, _) => "-".to_owned(),
            }
        ),
    ]
    .into_iter()
    // Keys only, never a value; the line only when a configuration was compared.
    .chain(
        report
            .env_differs
            .as_ref()
            .map(|keys| match keys.as_slice() {
                [] => "environment: matches".to_owned(),
                keys => format!("environment differs: {}", keys.join(", ")),
            }),
    )
    // deploy.md § Persistent workspace: the line only when a claim holds the agent's name.
    .chain(
        report
            .workspace
            .as_ref()
            .map(|claim| format!("workspace: {claim}")),
    )
    // Claims are never resized: a difference is reported with its fix, never acted on.
    .chain(
        report
            .workspace_differs
            .as_ref()
            .filter(|all| !all.is_empty())
            .zip(report.workspace.as_ref())
            .map(|(all, claim)| claim_differs_text(all, &claim.name)),
    )
    .chain(report.expiry.map(expiry_line))
    .collect::<Vec<_>>()
    .join("\n");
    Report::new(text, doc)
}

/// The `expires:` line of `status`: the instant and, with a server clock, the time left.
fn expiry_line(expiry: StatusExpiry) -> String {
    let instant = format_instant(expiry.expires_at);
    match expiry.seconds_left {
        Some(left) if left <= 0 => format!("expires: {instant} (expired)"),
        Some(left) => format!("expires: {instant} (in {})", render_time_left(left)),
        None => format!("expires: {instant}"),
    }
}

/// The settings that differ, as a person reads them (deploy.md § Naming what differs).
pub fn differs_text(diff: &SettingsDiff) -> String {
    match diff {
        SettingsDiff::Named(names) if !names.is_empty() => names
            .iter()
            .map(|name| setting_label(name))
            .collect::<Vec<_>>()
            .join(", "),
        SettingsDiff::Named(_) => "no recorded setting differs".to_owned(),
        SettingsDiff::Unrecorded => {
            "the pod records no settings: it was created by an older apiary".to_owned()
        }
    }
}

/// The settings that differ in JSON: their labels, or `null` when the pod records none.
fn differs_json(diff: &SettingsDiff) -> Value {
    match diff {
        SettingsDiff::Named(names) => {
            json!(names.iter().map(|n| setting_label(n)).collect::<Vec<_>>())
        }
        SettingsDiff::Unrecorded => Value::Null,
    }
}

/// The line that reports how the agent's claim differs from what was asked, with the fix.
pub fn claim_differs_text(differences: &[ClaimDifference], claim: &str) -> String {
    let all: Vec<String> = differences.iter().map(ToString::to_string).collect();
    format!(
        "workspace differs: {}; a claim is never resized or recreated by apiary (the running pod \
         is kept): expand it with `kubectl patch pvc {claim}` where its StorageClass allows \
         expansion, or `apiary undeploy --delete-workspace` (its data is deleted) and deploy again",
        all.join(", ")
    )
}

/// How `apiary undeploy` runs: its flags.
#[derive(Clone, Copy, Debug)]
pub struct UndeployHow {
    /// Wait for the pod to go (not `--no-wait`).
    pub wait: bool,
    /// `--delete-workspace`.
    pub delete_workspace: bool,
    /// `--timeout`; the 600 s bound when not given.
    pub deadline: Option<Duration>,
    /// `--grace-period`; the pod's own when not given.
    pub grace: Option<GracePeriod>,
}

impl Default for UndeployHow {
    fn default() -> UndeployHow {
        UndeployHow {
            wait: true,
            delete_workspace: false,
            deadline: None,
            grace: None,
        }
    }
}

/// `apiary undeploy`: delete the pod (waiting unless `--no-wait`) and its Secrets, and with
/// `--delete-workspace` its workspace claim, within the deadline.
pub async fn undeploy<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    how: UndeployHow,
    progress: &StatusLine,
) -> CommandResult {
    let defaults = UndeployOptions::default();
    let options = UndeployOptions {
        wait: how.wait,
        deadline: how.deadline.unwrap_or(defaults.deadline),
        delete_workspace: how.delete_workspace,
        grace: how.grace,
        ..defaults
    };
    let result = driver::undeploy_watching(substrate, agent, &options, &mut |p| {
        progress.update(&describe(p, "the pod is gone"));
    })
    .await;
    progress.finish();
    match result {
        Ok(report) => Ok(undeploy_report(agent, substrate.namespace(), &report)),
        Err(UndeployError::Replaced { pod, report }) => {
            let done = undeploy_report(agent, substrate.namespace(), &report);
            Err(Failure::failed(format!(
                "a concurrent deploy created a new pod {pod} while undeploying; it was left \
                 untouched: run `apiary undeploy` again once that deploy has finished"
            ))
            .with_detail("undeploy", done.json))
        }
        Err(UndeployError::Failed(failure)) => {
            Err(Failure::request(&failure, substrate.namespace()))
        }
        Err(error) => Err(Failure::failed(error.to_string())),
    }
}

/// The undeploy result: one line per object, nothing when there was nothing to delete.
pub fn undeploy_report(agent: &AgentIdentity, namespace: &str, report: &UndeployReport) -> Report {
    let mut lines = Vec::new();
    if let Some(pod) = &report.pod {
        let word = if report.waited { "deleted" } else { "deleting" };
        lines.push(format!("pod/{pod} {word}"));
    }
    lines.extend(report.secrets.iter().map(|s| format!("secret/{s} deleted")));
    lines.extend(
        report
            .kept_secrets
            .iter()
            .map(|s| format!("secret/{s} kept")),
    );
    lines.extend(
        report
            .network_policy
            .iter()
            .map(|p| format!("networkpolicy/{p} deleted")),
    );
    // deploy.md § Persistent workspace: a kept claim is said, so its data is never forgotten.
    lines.extend(report.workspace.iter().map(|claim| {
        if claim.deleted {
            format!("persistentvolumeclaim/{} deleted", claim.name)
        } else {
            format!(
                "persistentvolumeclaim/{} kept (its data stays; undeploy --delete-workspace \
                 deletes the claim, and its volume follows its reclaim policy)",
                claim.name
            )
        }
    }));
    Report::new(
        lines.join("\n"),
        json!({
            "agent": agent.name(),
            "agent_id": agent.id(),
            "namespace": namespace,
            "pod": report.pod,
            "pod_deleted": report.pod_deleted,
            "waited": report.waited,
            "secrets": report.secrets,
            "kept_secrets": report.kept_secrets,
            "network_policy": report.network_policy,
            "workspace": report
                .workspace
                .as_ref()
                .map(|claim| json!({ "name": claim.name, "deleted": claim.deleted })),
        }),
    )
}

#[cfg(test)]
mod tests;
