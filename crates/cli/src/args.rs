//! The command-line surface of `apiary` (deploy.md § CLI contract, seeds.md § CLI contract), as
//! clap derive types. Shell layer: it only describes flags and turns raw arguments into typed
//! values; it validates nothing the libraries validate (image, quantities, env keys, timeout
//! range) and never touches the cluster, the environment or the file system.
//!
//! None of these types derives `Debug`: `--env KEY=VALUE` values are secrets and must not be
//! printable by accident.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::TypedValueParser as _;
use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

/// Deploy an agent to Kubernetes as exactly one started pod; discover cluster seeds from pods.
#[derive(Parser)]
#[command(name = "apiary", version, about, propagate_version = true)]
pub struct Cli {
    /// Flags shared by every subcommand, accepted before or after it.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Global flags (deploy.md § CLI contract, shared part). In every `--help` they stand under their
/// own heading, after the command's own options (deploy.md § A quieter, more familiar terminal).
#[derive(Args, Clone)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Kubeconfig file [default: $KUBECONFIG, else ~/.kube/config, else in-cluster]
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context [default: the file's current context]
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// Namespace to work in [default: the context's namespace; never a silent `default`]
    #[arg(short = 'n', long, global = true, value_name = "NS")]
    pub namespace: Option<String>,
    /// Result format on stdout
    #[arg(
        short = 'o',
        long,
        global = true,
        value_enum,
        value_name = "FORMAT",
        default_value_t = OutputFormat::Text
    )]
    pub output: OutputFormat,
    /// More logging on stderr (default: warnings only; -v adds apiary's log lines, -vv apiary
    /// trace, -vvv everything); RUST_LOG replaces this filter
    #[arg(short = 'v', long = "verbose", global = true, action = ArgAction::Count)]
    pub verbose: u8,
}

/// What stdout carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Plain text for people.
    Text,
    /// Exactly one JSON document and a newline.
    Json,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Deploy AGENT: converge the namespace to exactly one started pod for it
    Deploy(DeployArgs),
    /// Report the state of AGENT's pod (read-only)
    Status(StatusArgs),
    /// Delete AGENT's pod and its Secrets
    Undeploy(UndeployArgs),
    /// Collect AGENT's terminated and expired pods and orphaned Secrets (--all: every agent)
    Gc(GcArgs),
    /// Move the expiry of AGENT's running pod to DURATION from now (the API server's clock)
    Renew(RenewArgs),
    /// List every agent in the namespace, one row each (read-only)
    List(ListArgs),
    /// Print the log of AGENT's container (read-only)
    Logs(LogsArgs),
    /// Print the seed addresses of the pods matching a label selector
    Seeds(SeedsArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
    /// Show apiary working against an embedded, simulated cluster (needs no cluster)
    #[cfg(feature = "demo")]
    Demo,
}

/// `apiary deploy`.
#[derive(Args)]
pub struct DeployArgs {
    /// The agent's name (any UTF-8 text, 1-253 bytes)
    #[arg(value_name = "AGENT", value_parser = clap::value_parser!(OsString))]
    pub agent: OsString,
    /// Container image, pinned by digest: NAME@sha256:<64 hex>
    #[arg(long, value_name = "REF")]
    pub image: String,
    /// The pod's shape and environment.
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Give up after this long: 90, 90s, 5m, 2m30s (at most 600s) [default: 600s]
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Roll this configuration onto a started pod whose configuration differs: delete it
    /// (fenced, graceful), wait until it is gone, then create [default: keep a started pod]
    #[arg(long)]
    pub replace: bool,
    /// Succeed only once the container has been running continuously this long: 0, 3s, 2m,
    /// 1m30s (shorter than --timeout); a crash inside it is reported with its exit code
    /// [default: 0s, succeed once started]
    #[arg(long, value_name = "DURATION")]
    pub min_running: Option<String>,
    /// Expire the agent this long after the API server's clock at deploy: 2h, 90m, 1d12h (at
    /// least 1m, at most 366d); `apiary gc` then collects it [default: never]
    #[arg(long, value_name = "DURATION")]
    pub ttl: Option<String>,
}

/// `apiary status`.
#[derive(Args)]
pub struct StatusArgs {
    /// The agent's name
    #[arg(value_name = "AGENT", value_parser = clap::value_parser!(OsString))]
    pub agent: OsString,
    /// Compare the pod with this configuration (digest-pinned image)
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// The configuration to compare with (only with --image).
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Give up after this long: 90, 90s, 5m, 2m30s (at most 600s) [default: each request
    /// gives up after 30s]
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

/// The pod shape and environment flags shared by `deploy` and `status`.
#[derive(Args, Clone, Default)]
pub struct ShapeArgs {
    /// Environment entry: KEY=VALUE, or KEY to take the value from apiary's own environment
    /// (repeatable; later entries win)
    #[arg(long = "env", value_name = "KEY=VALUE|KEY", action = ArgAction::Append)]
    pub env: Vec<String>,
    /// Read environment entries from a dotenv file (repeatable; read before every --env)
    #[arg(long = "env-file", value_name = "PATH", action = ArgAction::Append)]
    pub env_file: Vec<PathBuf>,
    /// CPU request (a Kubernetes quantity) [default: 100m]
    #[arg(long, value_name = "Q")]
    pub cpu_request: Option<String>,
    /// Memory request [default: 256Mi]
    #[arg(long, value_name = "Q")]
    pub memory_request: Option<String>,
    /// CPU limit [default: 2]
    #[arg(long, value_name = "Q")]
    pub cpu_limit: Option<String>,
    /// Memory limit [default: 4Gi]
    #[arg(long, value_name = "Q")]
    pub memory_limit: Option<String>,
    /// Service account to run as (its token is never mounted)
    #[arg(long, value_name = "SA")]
    pub service_account: Option<String>,
    /// The container's command, replacing the image entrypoint
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// A container argument (repeatable, in order; use --arg=-x for values starting with -)
    #[arg(long = "arg", value_name = "ARG", action = ArgAction::Append, allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// Where the emptyDir workspace is mounted [default: /home/agent]
    #[arg(long = "workspace", value_name = "PATH")]
    pub workspace: Option<String>,
    /// User id of the agent process (1-2147483647) [default: 10001]
    #[arg(long, value_name = "UID")]
    pub run_as_user: Option<i64>,
    /// Group id, also used as fsGroup (0-2147483647) [default: 10001]
    #[arg(long, value_name = "GID")]
    pub run_as_group: Option<i64>,
    /// Schedule only onto nodes with this label (repeatable; later entries win)
    #[arg(long = "node-selector", value_name = "KEY=VALUE", action = ArgAction::Append)]
    pub node_selector: Vec<String>,
    /// Tolerate a node taint (the taint syntax): KEY=VALUE:EFFECT, KEY:EFFECT (any value),
    /// KEY=VALUE or KEY (every effect); EFFECT is NoSchedule, PreferNoSchedule or NoExecute
    /// (repeatable)
    #[arg(long = "toleration", value_name = "KEY[=VALUE][:EFFECT]", action = ArgAction::Append)]
    pub toleration: Vec<String>,
    /// Run the pod with this RuntimeClass (gVisor, Kata, ...)
    #[arg(long = "runtime-class", value_name = "NAME")]
    pub runtime_class: Option<String>,
    /// The pod's PriorityClass
    #[arg(long = "priority-class", value_name = "NAME")]
    pub priority_class: Option<String>,
    /// An extended resource such as nvidia.com/gpu=1, set as request and limit (repeatable)
    #[arg(long = "resource", value_name = "NAME=QUANTITY", action = ArgAction::Append)]
    pub resource: Vec<String>,
    /// Ephemeral-storage request [default: none]
    #[arg(long = "ephemeral-storage-request", value_name = "Q")]
    pub ephemeral_storage_request: Option<String>,
    /// Ephemeral-storage limit [default: none]
    #[arg(long = "ephemeral-storage-limit", value_name = "Q")]
    pub ephemeral_storage_limit: Option<String>,
    /// A Secret of type kubernetes.io/dockerconfigjson to pull the image with (repeatable)
    #[arg(long = "image-pull-secret", value_name = "NAME", action = ArgAction::Append)]
    pub image_pull_secret: Vec<String>,
    /// A label on the pod and its Secret; never a key apiary owns (repeatable)
    #[arg(long = "label", value_name = "KEY=VALUE", action = ArgAction::Append)]
    pub label: Vec<String>,
    /// An annotation on the pod; never a key apiary owns (repeatable)
    #[arg(long = "annotation", value_name = "KEY=VALUE", action = ArgAction::Append)]
    pub annotation: Vec<String>,
    /// A Secret in the namespace whose every key becomes a variable; must exist (repeatable)
    #[arg(long = "env-from-secret", value_name = "NAME", action = ArgAction::Append)]
    pub env_from_secret: Vec<String>,
    /// The variable VAR from key KEY of Secret SECRET in the namespace; must exist (repeatable)
    #[arg(long = "env-secret", value_name = "VAR=SECRET/KEY", action = ArgAction::Append)]
    pub env_secret: Vec<String>,
    /// Isolate the agent with a NetworkPolicy: no ingress, egress only to DNS and --allow-egress
    /// (enforced only where the cluster's network plugin enforces NetworkPolicy)
    #[arg(long = "isolate")]
    pub isolate: bool,
    /// With --isolate, also allow egress to CIDR (every port, or one TCP PORT) (repeatable)
    #[arg(long = "allow-egress", value_name = "CIDR[:PORT]", action = ArgAction::Append)]
    pub allow_egress: Vec<String>,
    /// Give the agent a persistent workspace: its own PersistentVolumeClaim of SIZE (10Gi, ...),
    /// kept across redeploys, --replace and expiry, deleted only by undeploy --delete-workspace
    #[arg(long = "workspace-size", value_name = "SIZE")]
    pub workspace_size: Option<String>,
    /// With --workspace-size, the claim's StorageClass [default: the cluster's default class]
    #[arg(long = "storage-class", value_name = "NAME")]
    pub storage_class: Option<String>,
    /// A JSON merge patch (RFC 7386) applied to the pod apiary built, or @FILE holding one; apiary's
    /// identity, image, Secret reference and hardening cannot be changed by it
    #[arg(long = "overrides", value_name = "JSON|@FILE")]
    pub overrides: Option<String>,
    /// How long the agent has to exit after SIGTERM before the kubelet kills it: 5, 5s, 2m,
    /// 1m30s (1s to 60m); with --replace also the grace of the old pod's delete [default: 60s]
    #[arg(long = "grace-period", value_name = "DURATION")]
    pub grace_period: Option<String>,
}

impl ShapeArgs {
    /// The long names of the shape/env flags that were given, for `status` without `--image`.
    pub fn given_flags(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        let mut note = |present: bool, flag: &'static str| {
            if present {
                given.push(flag);
            }
        };
        note(!self.env.is_empty(), "--env");
        note(!self.env_file.is_empty(), "--env-file");
        note(self.cpu_request.is_some(), "--cpu-request");
        note(self.memory_request.is_some(), "--memory-request");
        note(self.cpu_limit.is_some(), "--cpu-limit");
        note(self.memory_limit.is_some(), "--memory-limit");
        note(self.service_account.is_some(), "--service-account");
        note(self.command.is_some(), "--command");
        note(!self.args.is_empty(), "--arg");
        note(self.workspace.is_some(), "--workspace");
        note(self.run_as_user.is_some(), "--run-as-user");
        note(self.run_as_group.is_some(), "--run-as-group");
        note(!self.node_selector.is_empty(), "--node-selector");
        note(!self.toleration.is_empty(), "--toleration");
        note(self.runtime_class.is_some(), "--runtime-class");
        note(self.priority_class.is_some(), "--priority-class");
        note(!self.resource.is_empty(), "--resource");
        note(
            self.ephemeral_storage_request.is_some(),
            "--ephemeral-storage-request",
        );
        note(
            self.ephemeral_storage_limit.is_some(),
            "--ephemeral-storage-limit",
        );
        note(!self.image_pull_secret.is_empty(), "--image-pull-secret");
        note(!self.label.is_empty(), "--label");
        note(!self.annotation.is_empty(), "--annotation");
        note(!self.env_from_secret.is_empty(), "--env-from-secret");
        note(!self.env_secret.is_empty(), "--env-secret");
        note(self.isolate, "--isolate");
        note(!self.allow_egress.is_empty(), "--allow-egress");
        note(self.workspace_size.is_some(), "--workspace-size");
        note(self.storage_class.is_some(), "--storage-class");
        note(self.overrides.is_some(), "--overrides");
        note(self.grace_period.is_some(), "--grace-period");
        given
    }
}

/// `apiary undeploy`.
#[derive(Args)]
pub struct UndeployArgs {
    /// The agent's name
    #[arg(value_name = "AGENT", value_parser = clap::value_parser!(OsString))]
    pub agent: OsString,
    /// Do not wait for the pod to finish terminating (its Secret is then kept for `gc`)
    #[arg(long)]
    pub no_wait: bool,
    /// Also delete the agent's persistent workspace claim once the pod is gone (its volume
    /// follows its reclaim policy: Delete removes the data, Retain keeps it); without it the
    /// claim is kept
    #[arg(long, conflicts_with = "no_wait")]
    pub delete_workspace: bool,
    /// Give the agent this long to exit after SIGTERM, instead of its pod's own grace period:
    /// 5, 5s, 2m (1s to 60m; never 0, apiary never forces a delete) [default: the pod's own]
    #[arg(long = "grace-period", value_name = "DURATION")]
    pub grace_period: Option<String>,
    /// Give up after this long, the wait for the pod included: 90, 90s, 5m, 2m30s (at most
    /// 600s) [default: 600s]
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

/// `apiary gc`.
#[derive(Args)]
pub struct GcArgs {
    /// The agent's name
    #[arg(
        value_name = "AGENT",
        value_parser = clap::value_parser!(OsString),
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub agent: Option<OsString>,
    /// Every agent apiary manages in the namespace (for a CronJob), instead of one AGENT
    #[arg(long)]
    pub all: bool,
    /// Only print what would be collected
    #[arg(long)]
    pub dry_run: bool,
    /// Give an expired agent this long to exit after SIGTERM, instead of its pod's own grace
    /// period: 5, 5s, 2m (1s to 60m; never 0) [default: the pod's own]
    #[arg(long = "grace-period", value_name = "DURATION")]
    pub grace_period: Option<String>,
    /// Give up after this long (per agent), the wait for an expired pod included: 90, 90s,
    /// 5m, 2m30s (at most 600s) [default: 180s]
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

/// `apiary list`.
#[derive(Args)]
pub struct ListArgs {
    /// Only agents whose pods and Secrets match this label selector (ANDed with apiary's own
    /// marker label)
    #[arg(long, value_name = "SEL")]
    pub selector: Option<String>,
    /// Also show agents that have Secrets but no pod, as state `absent` with their Secret count
    #[arg(long)]
    pub all: bool,
    /// Give up after this long: 90, 90s, 5m, 2m30s (at most 600s) [default: each request
    /// gives up after 30s]
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

/// `apiary renew`.
#[derive(Args)]
pub struct RenewArgs {
    /// The agent's name
    #[arg(value_name = "AGENT", value_parser = clap::value_parser!(OsString))]
    pub agent: OsString,
    /// The new time to live, from the API server's clock now: 2h, 90m, 1d12h (at least 1m, at
    /// most 366d)
    #[arg(long, value_name = "DURATION")]
    pub ttl: String,
    /// Give up after this long, conflicts retried within it: 90, 90s, 5m, 2m30s (at most
    /// 600s) [default: 60s]
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

/// `apiary logs`.
#[derive(Args)]
pub struct LogsArgs {
    /// The agent's name
    #[arg(value_name = "AGENT", value_parser = clap::value_parser!(OsString))]
    pub agent: OsString,
    /// Keep printing new lines until the container ends (or Ctrl-C), across reconnects
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// The previous, terminated instance of the container
    #[arg(long)]
    pub previous: bool,
    /// Only lines written in the last DURATION: 30s, 5m, 1h30m
    #[arg(long, value_name = "DURATION")]
    pub since: Option<String>,
    /// Only the last N lines
    #[arg(long, value_name = "N")]
    pub tail: Option<u64>,
}

/// `apiary seeds`.
#[derive(Args)]
#[command(group = clap::ArgGroup::new("port-choice").required(true).args(["port", "port_name"]))]
pub struct SeedsArgs {
    /// Label selector of the peer pods (any server-side syntax)
    #[arg(long, value_name = "SEL")]
    pub selector: String,
    /// Port number every pod listens on (1-65535)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// Name of the container port to look up in each pod's spec
    #[arg(long, value_name = "NAME")]
    pub port_name: Option<String>,
    /// Take each pod's first address of this family from status.podIPs instead of its primary
    /// address (dual-stack clusters); pods without one are skipped as no_family_address
    #[arg(
        long,
        value_name = "FAMILY",
        value_parser = clap::builder::PossibleValuesParser::new(["ipv4", "ipv6"])
            .try_map(|family| family.parse::<apiary_seeds::IpFamily>())
    )]
    pub ip_family: Option<apiary_seeds::IpFamily>,
    /// Also skip pods whose container serving the port is not running yet (counted as
    /// not_running)
    #[arg(long)]
    pub require_running: bool,
    /// Keep running and print the full set again after every change
    #[arg(long)]
    pub watch: bool,
}

/// `apiary completions`.
#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// The shells completions are generated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    /// GNU bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

/// Whether the raw arguments ask for JSON output, judged without clap so that a usage error can
/// still be reported as a JSON document (deploy.md § CLI contract, output rule 2). The last
/// `-o`/`--output` wins; parsing stops at `--`.
pub fn requests_json(raw: &[OsString]) -> bool {
    let mut json = false;
    let mut iter = raw.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(arg) = iter.next() {
        if arg == "--" {
            break;
        }
        let value = if let Some(rest) = arg.strip_prefix("--output") {
            match rest.strip_prefix('=') {
                Some(v) => Some(v.to_owned()),
                None if rest.is_empty() => iter.next().map(|v| v.into_owned()),
                None => None,
            }
        } else if let Some(shorts) = arg.strip_prefix('-').filter(|s| !s.starts_with('-')) {
            // A cluster of short flags: any number of `v`, then `o` with its value attached
            // (`-ojson`, `-o=json`, `-vvojson`) or in the next argument.
            let rest = shorts.trim_start_matches('v');
            match rest.strip_prefix('o') {
                Some("") => iter.next().map(|v| v.into_owned()),
                Some(v) => Some(v.strip_prefix('=').unwrap_or(v).to_owned()),
                None => None,
            }
        } else {
            None
        };
        if let Some(value) = value {
            json = value == "json";
        }
    }
    json
}

#[cfg(test)]
mod tests;
