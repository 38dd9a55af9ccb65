//! The `apiary` binary: argument parsing, wiring, output and exit codes. Decides nothing itself:
//! every rule of deploy.md and seeds.md lives in the libraries; this crate parses, calls, prints
//! and picks the exit code (deploy.md § CLI contract).
//!
//! Must not: contact a cluster before every input has been validated (exit 2 means "no request
//! was sent"), print an env value anywhere, or print anything but the result on stdout.

mod args;
mod commands;
mod config_input;
mod connect;
#[cfg(feature = "demo")]
mod demo;
mod env_input;
mod expiry_cmd;
mod invocation;
mod list_cmd;
mod logging;
mod logs_cmd;
mod outcome;
mod progress;
mod runtime;
mod seeds_cmd;
mod staying_up;
mod watched;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use apiary_seeds_kube::PodSeeds;
use apiary_substrate::Substrate;
use apiary_substrate::config::DeployConfig;
use apiary_substrate::driver::DeployOptions;
use apiary_substrate::naming::AgentIdentity;
use apiary_substrate_kube::Cluster;
use args::{Cli, Command, CompletionShell};
use outcome::{CommandResult, Exit, Failure, Report};
use progress::{StatusLine, Style};
use runtime::block_on;

fn main() -> ExitCode {
    let raw: Vec<OsString> = std::env::args_os().collect();
    let json = args::requests_json(&raw);
    // Named after argv[0], so `kubectl apiary …` (a symlink named kubectl-apiary) says so.
    let parsed = invocation::command(raw.first().map(OsString::as_os_str))
        .try_get_matches_from(&raw)
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(err) => return exit_code(usage_error(&err, json)),
    };
    logging::init(cli.global.verbose);
    // Before any client exists: rustls must not be left to choose a provider (deploy.md § Semantics
    // relied on, item 11).
    apiary_substrate_kube::install_crypto_provider();
    let format = cli.global.output;
    let result = run(cli);
    exit_code(outcome::emit(format, &result))
}

fn exit_code(exit: Exit) -> ExitCode {
    ExitCode::from(exit as u8)
}

/// Report a clap error: help and version go to stdout with exit 0; every other error is a usage
/// error, exit 2, printed by clap in text mode and as `{"error": …}` on stdout in json mode.
fn usage_error(err: &clap::Error, json: bool) -> Exit {
    if !err.use_stderr() {
        let _ = err.print();
        return Exit::Success;
    }
    if json {
        let rendered = err.render().to_string();
        let message = rendered
            .trim()
            .strip_prefix("error: ")
            .unwrap_or(rendered.trim())
            .to_owned();
        outcome::write_stdout(&outcome::document(&outcome::usage_error_json(&message)));
    } else {
        let _ = err.print();
    }
    Exit::Refused
}

/// Dispatch one parsed command.
fn run(cli: Cli) -> CommandResult {
    let global = cli.global;
    match cli.command {
        Command::Completions(c) => Ok(completions(c.shell)),
        Command::Deploy(d) => run_deploy(&global, &d),
        Command::Status(s) => run_status(&global, &s),
        Command::Undeploy(u) => {
            let agent = config_input::agent_identity(&u.agent)?;
            let timeout = config_input::timeout_flag(u.timeout.as_deref())?;
            let grace = config_input::grace_flag(u.grace_period.as_deref())?;
            block_on(async {
                let cluster = bounded(cluster(&global).await?, timeout);
                let progress = StatusLine::start(
                    format!("undeploying {}", agent.pod_name()),
                    Style::for_stderr(),
                );
                let how = commands::UndeployHow {
                    wait: !u.no_wait,
                    delete_workspace: u.delete_workspace,
                    deadline: timeout,
                    grace,
                };
                commands::undeploy(&cluster, &agent, how, &progress).await
            })
        }
        Command::Gc(g) => {
            let agent = g
                .agent
                .as_deref()
                .map(config_input::agent_identity)
                .transpose()?;
            let timeout = config_input::timeout_flag(g.timeout.as_deref())?;
            let grace = config_input::grace_flag(g.grace_period.as_deref())?;
            block_on(async {
                let cluster = bounded(cluster(&global).await?, timeout);
                match &agent {
                    Some(agent) => expiry_cmd::gc(&cluster, agent, g.dry_run, timeout, grace).await,
                    None => expiry_cmd::gc_all(&cluster, g.dry_run, timeout, grace).await,
                }
            })
        }
        Command::Renew(r) => {
            let agent = config_input::agent_identity(&r.agent)?;
            let ttl = expiry_cmd::ttl_flag(&r.ttl)?;
            let timeout = config_input::timeout_flag(r.timeout.as_deref())?;
            block_on(async {
                let cluster = bounded(cluster(&global).await?, timeout);
                expiry_cmd::renew(&cluster, &agent, ttl, timeout).await
            })
        }
        Command::List(l) => {
            let options = list_cmd::list_options(&l)?;
            let timeout = config_input::timeout_flag(l.timeout.as_deref())?;
            block_on(async {
                let cluster = bounded(cluster(&global).await?, timeout);
                list_cmd::list(&cluster, &options).await
            })
        }
        Command::Logs(l) => logs_cmd::run(&global, &l),
        Command::Seeds(s) => {
            let pods = seeds_cmd::pods_from_args(&s, global.namespace.as_deref())?;
            block_on(async {
                let connection = connect::connect(&global).await?;
                // seeds.md § The seeds subcommand, rule 1: -n, else the client's default namespace
                // (listing is read-only).
                let seeds = PodSeeds::with_client(pods, connection.client)
                    .map_err(|e| Failure::refused(e.to_string()))?
                    .with_filter(seeds_cmd::filter_from_args(&s));
                if s.watch {
                    seeds_cmd::watch(seeds, global.output).await
                } else {
                    let mut seeds = seeds;
                    seeds_cmd::resolve_once(&mut seeds).await
                }
            })
        }
        #[cfg(feature = "demo")]
        Command::Demo => demo::run(global.output),
    }
}

/// The client for the global flags, bound to the deploy-side namespace (deploy.md § Namespace
/// resolution), with its operation clock started.
async fn cluster(global: &args::GlobalArgs) -> Result<Cluster, Failure> {
    let connection = connect::connect(global).await?;
    let namespace =
        connect::deploy_namespace(global.namespace.as_deref(), connection.namespace.as_deref())?;
    apiary_substrate::config::validate_namespace(&namespace)
        .map_err(|e| Failure::refused(e.to_string()))?;
    Ok(Cluster::new(connection.client, namespace))
}

/// `cluster` with the operation bounded by `--timeout` when one was given: every request and
/// its retries end within it (one request in flight at the deadline aside), so a dead server
/// makes the command give up at its timeout, not after a 30 s request budget.
fn bounded(cluster: Cluster, timeout: Option<std::time::Duration>) -> Cluster {
    match timeout {
        Some(timeout) => cluster.with_request_timeout(timeout).with_deadline(timeout),
        None => cluster,
    }
}

/// `apiary deploy`: validate everything, build the client, then run the deploy with progress.
fn run_deploy(global: &args::GlobalArgs, d: &args::DeployArgs) -> CommandResult {
    let (agent, mut config) = prepare_deploy(global, d)?;
    let min_running = staying_up::min_running_flag(d.min_running.as_deref(), config.timeout)?;
    let ttl = d.ttl.as_deref().map(expiry_cmd::ttl_flag).transpose()?;
    block_on(async {
        // One request never outlives a lowered deadline (it stays capped at 30 s otherwise),
        // and no request is retried past the deadline.
        let cluster = bounded(cluster(global).await?, Some(config.timeout));
        config.namespace = cluster.namespace().to_owned();
        let valid = config_input::validate(&config, &agent)?;
        config_input::warn_removed_keys(&valid);
        // The expiry instant comes from the API server's clock, read before any write.
        let valid = match ttl {
            Some(ttl) => expiry_cmd::stamp(&cluster, valid, ttl).await?,
            None => valid,
        };
        let progress = StatusLine::start(
            format!("deploying {}", valid.pod_name()),
            Style::for_stderr(),
        );
        let options = DeployOptions::for_config(&valid)
            .replacing(d.replace)
            .staying_up(min_running);
        commands::deploy_with(&cluster, &valid, &options, &progress).await
    })
}

/// `apiary status`: with `--image`, the configuration is validated exactly as for deploy.
fn run_status(global: &args::GlobalArgs, s: &args::StatusArgs) -> CommandResult {
    let agent = config_input::agent_identity(&s.agent)?;
    let timeout = config_input::timeout_flag(s.timeout.as_deref())?;
    let mut config = match &s.image {
        None => {
            let given = s.shape.given_flags();
            if !given.is_empty() {
                return Err(Failure::refused(format!(
                    "{} only describe a configuration to compare with: pass --image too",
                    given.join(", ")
                )));
            }
            None
        }
        Some(image) => {
            let env =
                env_input::assemble(&s.shape.env_file, &s.shape.env, |key| std::env::var_os(key))?;
            let namespace = global.namespace.as_deref().unwrap_or(PLACEHOLDER_NAMESPACE);
            let config = config_input::deploy_config(namespace, image, &s.shape, None, env)?;
            config_input::validate(&config, &agent)?;
            Some(config)
        }
    };
    block_on(async {
        let cluster = bounded(cluster(global).await?, timeout);
        let valid = match config.as_mut() {
            Some(config) => {
                config.namespace = cluster.namespace().to_owned();
                Some(config_input::validate(config, &agent)?)
            }
            None => None,
        };
        commands::status(&cluster, &agent, valid.as_ref()).await
    })
}

/// A namespace that passes validation, used to check every other field before the real
/// namespace is known (it is re-validated once the client configuration has been read).
const PLACEHOLDER_NAMESPACE: &str = "apiary-validation-placeholder";

/// Everything `deploy` can check without a cluster: AGENT, the environment sources and the
/// configuration (with `-n` when given, else a placeholder namespace).
fn prepare_deploy(
    global: &args::GlobalArgs,
    d: &args::DeployArgs,
) -> Result<(AgentIdentity, DeployConfig), Failure> {
    let agent = config_input::agent_identity(&d.agent)?;
    let env = env_input::assemble(&d.shape.env_file, &d.shape.env, |key| std::env::var_os(key))?;
    let namespace = global.namespace.as_deref().unwrap_or(PLACEHOLDER_NAMESPACE);
    let config =
        config_input::deploy_config(namespace, &d.image, &d.shape, d.timeout.as_deref(), env)?;
    config_input::validate(&config, &agent)?;
    Ok((agent, config))
}

/// `apiary completions <shell>`: the script goes to stdout as the result.
fn completions(shell: CompletionShell) -> Report {
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "apiary", &mut script);
    let text = String::from_utf8_lossy(&script).trim_end().to_owned();
    Report::new(text.clone(), serde_json::json!({ "script": text }))
}

#[cfg(test)]
mod tests {
    //! The clap definition is internally consistent and completions name every subcommand.

    use super::*;

    /// clap's own consistency check of the derive definition.
    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Each shell's completion script mentions every subcommand.
    #[test]
    fn completions_cover_every_subcommand() {
        for shell in [
            CompletionShell::Bash,
            CompletionShell::Zsh,
            CompletionShell::Fish,
        ] {
            let report = completions(shell);
            let mut subcommands = vec![
                "deploy",
                "status",
                "undeploy",
                "gc",
                "renew",
                "seeds",
                "completions",
            ];
            // `demo` exists only with the default-on `demo` feature.
            if cfg!(feature = "demo") {
                subcommands.push("demo");
            }
            for sub in subcommands {
                assert!(report.text.contains(sub), "{shell:?} lacks {sub}");
            }
        }
    }
}
