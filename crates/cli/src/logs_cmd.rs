//! `apiary logs AGENT [-f] [--previous] [--since DURATION] [--tail N]` (deploy.md § logs): the
//! agent container's log, after verifying the pod is the agent's own.
//!
//! Shell layer: it checks the flags before any request (exit 2), connects, and copies the lines
//! `apiary-substrate-kube`'s `PodLogs` reads to stdout as they arrive. Text mode prints the lines
//! verbatim; json mode prints one document `{"agent", "agent_id", "namespace", "pod", "lines"}`,
//! or with `-f` one `{"line": …}` document per line (like `seeds --watch`, the one other
//! streaming command). Must not: log a line of the agent's output, or print anything but lines
//! on stdout.

use std::io::Write;

use apiary_classify::duration::{DurationError, DurationSyntax, parse_duration};
use apiary_substrate::naming::AgentIdentity;
use apiary_substrate_kube::{LogsEnd, LogsOptions, PodLogs};
use serde_json::json;

use crate::args::{GlobalArgs, LogsArgs, OutputFormat};
use crate::outcome::{CommandResult, Failure, Report};

/// The `--since` syntax: whole numbers with units `d`, `h`, `m`, `s`, more than zero and at most
/// a year (beyond it, it reads as a typo for "everything").
const SINCE_SYNTAX: DurationSyntax = DurationSyntax::unit_groups(1, 366 * 86_400);

/// Parse a `--since` duration: whole numbers with units `d`, `h`, `m`, `s` (`30s`, `5m`,
/// `1h30m`), more than zero.
///
/// # Errors
/// The refusal, naming the flag, the problem and the fix.
pub fn parse_since(text: &str) -> Result<u64, Failure> {
    parse_duration(text, &SINCE_SYNTAX).map_err(|error| {
        let problem = match error {
            DurationError::Malformed => "is not a duration",
            DurationError::TooShort { .. } => "is zero",
            DurationError::TooLong { .. } => "is longer than 366 days",
        };
        Failure::refused(format!(
            "--since {text:?} {problem}: write whole numbers with units d, h, m or s, such as \
             30s, 5m or 1h30m"
        ))
    })
}

/// AGENT and the read options, checked before any request.
///
/// # Errors
/// Exit 2 for a bad AGENT or `--since`.
pub fn prepare(args: &LogsArgs) -> Result<(AgentIdentity, LogsOptions), Failure> {
    let agent = crate::config_input::agent_identity(&args.agent)?;
    let since_seconds = args.since.as_deref().map(parse_since).transpose()?;
    Ok((
        agent,
        LogsOptions {
            follow: args.follow,
            previous: args.previous,
            since_seconds,
            tail_lines: args.tail,
        },
    ))
}

/// `apiary logs`: validate, connect, read.
pub fn run(global: &GlobalArgs, args: &LogsArgs) -> CommandResult {
    let (agent, options) = prepare(args)?;
    let format = global.output;
    crate::runtime::block_on(async {
        let connection = crate::connect::connect(global).await?;
        let namespace = crate::connect::deploy_namespace(
            global.namespace.as_deref(),
            connection.namespace.as_deref(),
        )?;
        let logs = PodLogs::new(connection.client, namespace.clone());
        read(&logs, &namespace, &agent, &options, format).await
    })
}

async fn read(
    logs: &PodLogs,
    namespace: &str,
    agent: &AgentIdentity,
    options: &LogsOptions,
    format: OutputFormat,
) -> CommandResult {
    let streaming = options.follow;
    let mut collected: Vec<String> = Vec::new();
    let mut sink = |line: &str| match (format, streaming) {
        (OutputFormat::Text, _) => print_line(line),
        (OutputFormat::Json, true) => print_line(&json!({ "line": line }).to_string()),
        (OutputFormat::Json, false) => collected.push(line.to_owned()),
    };
    let end = logs
        .read(agent, options, &mut sink)
        .await
        .map_err(|error| Failure::logs(&error, namespace))?;
    let pod = agent.pod_name();
    match end {
        LogsEnd::Complete => {}
        LogsEnd::PodGone => tracing::warn!("pod {pod} went away; the log ends here"),
        LogsEnd::PodReplaced => tracing::warn!(
            "a new pod took the name {pod}; its log is not this one: run `apiary logs` again to \
             read it"
        ),
    }
    if format == OutputFormat::Json && !streaming {
        return Ok(Report::new(
            String::new(),
            json!({
                "agent": agent.name(),
                "agent_id": agent.id(),
                "namespace": namespace,
                "pod": pod,
                "lines": collected,
            }),
        ));
    }
    Ok(Report {
        text: String::new(),
        json: serde_json::Value::Null,
        printed: true,
    })
}

/// One line on stdout at once (a follower reads it as it comes).
fn print_line(line: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (`apiary logs -f | head`) ends nothing here; the next write fails the same.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    //! The `--since` refusals.

    use super::*;

    /// `--since` accepts unit groups and refuses anything else, zero and more than a year.
    #[test]
    fn since_durations() {
        for (text, secs) in [("30s", 30), ("5m", 300), ("1h30m", 5_400), ("2d", 172_800)] {
            assert_eq!(parse_since(text).ok(), Some(secs), "{text}");
        }
        for bad in ["", "5", "m", "5x", "-5m", "0s", "1.5h", "367d"] {
            let err = parse_since(bad).expect_err(bad);
            assert_eq!(err.exit, crate::outcome::Exit::Refused);
            assert!(err.message.contains("--since"), "{}", err.message);
        }
    }
}
