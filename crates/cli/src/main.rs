//! The `apiary` binary: argument parsing, wiring, output and exit codes. Decides nothing itself:
//! every rule of deploy.md and seeds.md lives in the libraries; this crate parses, calls, prints
//! and picks the exit code (deploy.md § CLI contract).
//!
//! Must not: contact a cluster before every input has been validated (exit 2 means "no request
//! was sent"), print an env value anywhere, or print anything but the result on stdout.

mod args;
mod config_input;
mod env_input;
mod logging;
mod outcome;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use args::{Cli, Command, CompletionShell};
use outcome::{CommandResult, Exit, Failure, Report};

fn main() -> ExitCode {
    let raw: Vec<OsString> = std::env::args_os().collect();
    let json = args::requests_json(&raw);
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(err) => return exit_code(usage_error(&err, json)),
    };
    logging::init(cli.global.verbose);
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
    match cli.command {
        Command::Completions(c) => Ok(completions(c.shell)),
        Command::Deploy(d) => {
            let (agent, config) = prepare_deploy(&cli.global, &d)?;
            let valid = config_input::validate(&config, &agent)?;
            config_input::warn_removed_keys(&valid);
            Err(Failure::failed(
                "this subcommand is not wired to the cluster libraries in this build yet",
            ))
        }
        Command::Status(s) => {
            let _agent = config_input::agent_identity(&s.agent)?;
            if s.image.is_none() {
                let given = s.shape.given_flags();
                if !given.is_empty() {
                    return Err(Failure::refused(format!(
                        "{} only describe a configuration to compare with: pass --image too",
                        given.join(", ")
                    )));
                }
            }
            Err(Failure::failed(
                "this subcommand is not wired to the cluster libraries in this build yet",
            ))
        }
        Command::Undeploy(_) | Command::Gc(_) | Command::Seeds(_) | Command::Demo => {
            Err(Failure::failed(
                "this subcommand is not wired to the cluster libraries in this build yet",
            ))
        }
    }
}

/// A namespace that passes validation, used to check every other field before the real
/// namespace is known (it is re-validated once the client configuration has been read).
const PLACEHOLDER_NAMESPACE: &str = "apiary-validation-placeholder";

/// Everything `deploy` can check without a cluster: AGENT, the environment sources and the
/// configuration (with `-n` when given, else a placeholder namespace).
fn prepare_deploy(
    global: &args::GlobalArgs,
    d: &args::DeployArgs,
) -> Result<
    (
        apiary_substrate::naming::AgentIdentity,
        apiary_substrate::config::DeployConfig,
    ),
    Failure,
> {
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
            for sub in [
                "deploy",
                "status",
                "undeploy",
                "gc",
                "seeds",
                "completions",
                "demo",
            ] {
                assert!(report.text.contains(sub), "{shell:?} lacks {sub}");
            }
        }
    }
}
