//! Maps the parsed flags onto the library's inputs: AGENT → `AgentIdentity`, deploy/status
//! flags → `DeployConfig`, then `DeployConfig::validate` (deploy.md § Configuration). Shell
//! layer: every rule is the library's; this module only moves values and turns library errors
//! into exit-2 refusals. Must not: contact a cluster, or print an env value.

use std::ffi::OsStr;
use std::time::Duration;

use apiary_classify::duration::DurationError;
use apiary_classify::grace::{GracePeriod, parse_grace};
use apiary_substrate::config::{DeployConfig, ValidConfig, parse_timeout};
use apiary_substrate::env::Env;
use apiary_substrate::naming::AgentIdentity;
use apiary_substrate::pod_options::flags::{
    Flag, PodOptionError, key_values, parse_egress, parse_env_secret, parse_toleration,
};
use apiary_substrate::pod_options::overrides::Overrides;
use apiary_substrate::pod_options::{PodOptions, WorkspaceClaim};

use crate::args::ShapeArgs;
use crate::outcome::Failure;

/// AGENT from the command line: valid UTF-8 (deploy.md § AGENT and agent_id, rule 1), then the
/// library's identity rules.
///
/// # Errors
///
/// Exit 2 when AGENT is not UTF-8 or breaks a naming rule (the message names the rule).
pub fn agent_identity(raw: &OsStr) -> Result<AgentIdentity, Failure> {
    let name = raw.to_str().ok_or_else(|| {
        Failure::refused(
            "AGENT is not valid UTF-8: an agent name must be UTF-8 text of 1 to 253 bytes; \
             pass it in a UTF-8 locale or rename the agent",
        )
    })?;
    AgentIdentity::new(name).map_err(|e| Failure::refused(e.to_string()))
}

/// `--grace-period` (deploy.md § Grace periods): `None` when not given.
///
/// # Errors
///
/// Exit 2 when it does not parse, is zero (a forced delete, which apiary never sends) or is
/// longer than an hour; the message names the flag, the value as typed and the fix.
pub fn grace_flag(text: Option<&str>) -> Result<Option<GracePeriod>, Failure> {
    let Some(text) = text else {
        return Ok(None);
    };
    parse_grace(text).map(Some).map_err(|error| {
        let problem = match error {
            DurationError::Malformed => "is not a duration in whole seconds",
            DurationError::TooShort { .. } => {
                "is shorter than 1s; a zero grace period forces the delete, which apiary never does"
            }
            DurationError::TooLong { .. } => "is longer than 60m",
        };
        Failure::refused(format!(
            "--grace-period {text:?} {problem}: write it as 5, 5s, 2m or 1m30s, from 1s to 60m"
        ))
    })
}

/// The `--timeout` of a command other than deploy: `None` when not given (the command's own
/// default applies).
///
/// # Errors
///
/// Exit 2 when it does not parse or is outside 1..=600 s (the message names the flag).
pub fn timeout_flag(text: Option<&str>) -> Result<Option<Duration>, Failure> {
    text.map(|text| parse_timeout(text).map_err(|e| Failure::refused(e.to_string())))
        .transpose()
}

/// The deploy configuration for `namespace`, `image`, the shape flags, `--timeout` and `env`.
///
/// # Errors
///
/// Exit 2 when `--timeout` does not parse (the message names the flag).
pub fn deploy_config(
    namespace: &str,
    image: &str,
    shape: &ShapeArgs,
    timeout: Option<&str>,
    env: Env,
) -> Result<DeployConfig, Failure> {
    let mut config = DeployConfig::new(namespace, image);
    if let Some(q) = &shape.cpu_request {
        config.cpu_request = q.clone();
    }
    if let Some(q) = &shape.memory_request {
        config.memory_request = q.clone();
    }
    if let Some(q) = &shape.cpu_limit {
        config.cpu_limit = q.clone();
    }
    if let Some(q) = &shape.memory_limit {
        config.memory_limit = q.clone();
    }
    config.service_account = shape.service_account.clone();
    config.command = shape.command.clone().map(|cmd| vec![cmd]);
    config.args = shape.args.clone();
    if let Some(path) = &shape.workspace {
        config.workspace_mount_path = path.clone();
    }
    if let Some(uid) = shape.run_as_user {
        config.run_as_user = uid;
    }
    if let Some(gid) = shape.run_as_group {
        config.run_as_group = gid;
    }
    if let Some(text) = timeout {
        config.timeout = parse_timeout(text).map_err(|e| Failure::refused(e.to_string()))?;
    }
    config.env = env;
    config.pod_options = pod_options(shape).map_err(|e| Failure::refused(e.to_string()))?;
    config.pod_options.overrides = shape.overrides.as_deref().map(overrides).transpose()?;
    config.grace_period = grace_flag(shape.grace_period.as_deref())?;
    Ok(config)
}

/// `--overrides JSON` or `--overrides @FILE` (deploy.md § Pod options): the text, or the file's,
/// parsed as a merge patch. A file that cannot be read is refused naming it.
fn overrides(text: &str) -> Result<Overrides, Failure> {
    let json = match text.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| {
            Failure::refused(format!(
                "--overrides @{path}: the file cannot be read ({e}); give a readable file holding a JSON object, or the JSON itself"
            ))
        })?,
        None => text.to_owned(),
    };
    Overrides::parse(&json).map_err(|e| Failure::refused(e.to_string()))
}

/// The pod options of the flags (deploy.md § Pod options); the syntax is the library's.
fn pod_options(shape: &ShapeArgs) -> Result<PodOptions, PodOptionError> {
    Ok(PodOptions {
        node_selector: key_values(Flag::NodeSelector, &shape.node_selector)?,
        tolerations: shape
            .toleration
            .iter()
            .map(|text| parse_toleration(text))
            .collect::<Result<_, _>>()?,
        runtime_class: shape.runtime_class.clone(),
        priority_class: shape.priority_class.clone(),
        extended_resources: key_values(Flag::Resource, &shape.resource)?,
        ephemeral_storage_request: shape.ephemeral_storage_request.clone(),
        ephemeral_storage_limit: shape.ephemeral_storage_limit.clone(),
        image_pull_secrets: shape.image_pull_secret.clone(),
        labels: key_values(Flag::Label, &shape.label)?,
        annotations: key_values(Flag::Annotation, &shape.annotation)?,
        env_from_secrets: shape.env_from_secret.clone(),
        // A later entry for the same variable wins (as for `--env`).
        env_secrets: shape
            .env_secret
            .iter()
            .map(|text| parse_env_secret(text))
            .collect::<Result<_, _>>()?,
        isolate: shape.isolate,
        allow_egress: shape
            .allow_egress
            .iter()
            .map(|text| parse_egress(text))
            .collect::<Result<_, _>>()?,
        workspace_claim: workspace_claim(shape)?,
        ..PodOptions::default()
    })
}

/// `--workspace-size SIZE [--storage-class NAME]`; a class alone is refused.
fn workspace_claim(shape: &ShapeArgs) -> Result<Option<WorkspaceClaim>, PodOptionError> {
    match (&shape.workspace_size, &shape.storage_class) {
        (Some(size), class) => Ok(Some(WorkspaceClaim {
            size: size.clone(),
            storage_class: class.clone(),
        })),
        (None, Some(class)) => Err(PodOptionError {
            flag: Flag::StorageClass,
            text: class.clone(),
            problem: "a storage class only means something with a persistent workspace; add \
                      --workspace-size SIZE"
                .to_owned(),
        }),
        (None, None) => Ok(None),
    }
}

/// Validate `config` for `agent`, and warn (naming the key, never the value) about each
/// authoritative key the user set (deploy.md § Environment, rule 5).
///
/// # Errors
///
/// Exit 2 with the library's message for the first refused field.
pub fn validate(config: &DeployConfig, agent: &AgentIdentity) -> Result<ValidConfig, Failure> {
    let valid = config
        .validate(agent)
        .map_err(|e| Failure::refused(e.to_string()))?;
    Ok(valid)
}

/// Warn once about each authoritative key removed from the user's input.
pub fn warn_removed_keys(valid: &ValidConfig) {
    for key in valid.removed_env_keys() {
        tracing::warn!(
            "ignoring {key} from --env/--env-file: apiary sets {key} itself for every pod"
        );
    }
}

#[cfg(test)]
mod tests {
    //! Flag → configuration mapping and the refusals that come back as exit 2.

    use std::ffi::OsString;
    use std::time::Duration;

    use super::*;
    use crate::outcome::Exit;

    const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    /// V1: with no shape flags every default of the library applies.
    #[test]
    fn v1_no_flags_means_library_defaults() {
        let config = deploy_config("agents", IMAGE, &ShapeArgs::default(), None, Env::new())
            .expect("config");
        assert_eq!(config, DeployConfig::new("agents", IMAGE));
        assert_eq!(config.timeout, Duration::from_secs(600));
    }

    /// V2: given flags land in their fields verbatim; `--command` is one element.
    #[test]
    fn v2_flags_are_honoured() {
        let shape = ShapeArgs {
            cpu_request: Some("500m".into()),
            memory_request: Some("1Gi".into()),
            cpu_limit: Some("4".into()),
            memory_limit: Some("8Gi".into()),
            service_account: Some("runner".into()),
            command: Some("agentd".into()),
            args: vec!["--serve".into(), "-v".into()],
            workspace: Some("/work".into()),
            run_as_user: Some(1000),
            run_as_group: Some(0),
            ..ShapeArgs::default()
        };
        let config = deploy_config("ns", IMAGE, &shape, Some("2m30s"), Env::new()).expect("ok");
        assert_eq!(config.cpu_request, "500m");
        assert_eq!(config.memory_request, "1Gi");
        assert_eq!(config.cpu_limit, "4");
        assert_eq!(config.memory_limit, "8Gi");
        assert_eq!(config.service_account.as_deref(), Some("runner"));
        assert_eq!(config.command, Some(vec!["agentd".to_owned()]));
        assert_eq!(config.args, ["--serve", "-v"]);
        assert_eq!(config.workspace_mount_path, "/work");
        assert_eq!(config.run_as_user, 1000);
        assert_eq!(config.run_as_group, 0);
        assert_eq!(config.timeout, Duration::from_secs(150));
    }

    /// V5/V12: a malformed or out-of-range `--timeout` is exit 2 naming the flag.
    #[test]
    fn v12_bad_timeout_is_refused_naming_the_flag() {
        for text in ["soon", "0", "601", "1.5s"] {
            let err = deploy_config("ns", IMAGE, &ShapeArgs::default(), Some(text), Env::new())
                .expect_err("refused");
            assert_eq!(err.exit, Exit::Refused, "{text}");
            assert!(err.message.contains("--timeout"), "{text}: {}", err.message);
        }
    }

    /// N1 via the CLI: a non-UTF-8 AGENT and a rule-breaking AGENT are exit 2.
    #[cfg(unix)]
    #[test]
    fn n1_agent_must_be_utf8_and_follow_the_rules() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![b'a', 0xff]);
        let err = agent_identity(&bad).expect_err("refused");
        assert_eq!(err.exit, Exit::Refused);
        assert!(err.message.contains("UTF-8"));
        for name in ["", " lead", "trail ", "ctl\u{7}"] {
            let err = agent_identity(OsStr::new(name)).expect_err("refused");
            assert_eq!(err.exit, Exit::Refused, "{name:?}");
        }
        let ok = agent_identity(OsStr::new("Research Bot #1")).expect("valid");
        assert_eq!(ok.pod_name(), "apiary-research-bot-1-72bea12366a3");
    }

    /// Validation errors come back as exit 2 (a tag-only image here).
    #[test]
    fn validation_refusals_are_exit_2() {
        let agent = agent_identity(OsStr::new("a")).expect("agent");
        let config = deploy_config(
            "ns",
            "nginx:latest",
            &ShapeArgs::default(),
            None,
            Env::new(),
        )
        .expect("mapped");
        let err = validate(&config, &agent).expect_err("refused");
        assert_eq!(err.exit, Exit::Refused);
        assert!(err.message.contains("nginx:latest"));
    }

    /// The fingerprint and the settings of `deploy a` with `args` (and the usual image unless
    /// `args` give one), mapped and validated as `deploy` does.
    fn intent_of(args: &[&str]) -> (String, String) {
        use clap::Parser;
        let image: &[&str] = if args.contains(&"--image") {
            &[]
        } else {
            &["--image", IMAGE]
        };
        let all = ["apiary", "deploy", "a"].iter().chain(image).chain(args);
        let cli = crate::args::Cli::try_parse_from(all).expect("the arguments parse");
        let crate::args::Command::Deploy(deploy) = cli.command else {
            panic!("not deploy")
        };
        let shape = &deploy.shape;
        let env = crate::env_input::assemble(&shape.env_file, &shape.env, |_| None).expect("env");
        let namespace = cli.global.namespace.as_deref().unwrap_or("agents");
        let timeout = deploy.timeout.as_deref();
        let config = deploy_config(namespace, &deploy.image, shape, timeout, env).expect("mapped");
        let agent = agent_identity(OsStr::new("a")).expect("agent");
        let valid = validate(&config, &agent).unwrap_or_else(|e| panic!("{args:?}: {}", e.message));
        (valid.fingerprint(), valid.intent().settings())
    }

    /// deploy.md § Naming what differs: each flag the one declaration of the settings
    /// (`apiary_classify::settings`) gives a setting changes the fingerprint and exactly that
    /// setting, by the declared name, when it is given on the command line; each flag declared
    /// as not the pod's shape changes neither. Every declared flag has a case here.
    #[test]
    fn each_declared_flag_changes_exactly_its_setting() {
        use apiary_classify::settings::{SETTINGS, SettingsDiff, deploy_flags, differing_settings};
        let file = std::env::temp_dir().join(format!("apiary-flags-{}.env", std::process::id()));
        std::fs::write(&file, "FROM_FILE=1\n").expect("a temporary file");
        let file = file.to_str().expect("a UTF-8 path").to_owned();
        let other_image = format!("registry.example.com/team/agent@sha256:{}", "b".repeat(64));
        // (the flag, the arguments giving it, those of the configuration it is compared with)
        let isolate: &[&str] = &["--isolate"];
        let claim: &[&str] = &["--workspace-size", "1Gi"];
        let cases: [(&str, &[&str], &[&str]); 39] = [
            ("namespace", &["-n", "other"], &[]),
            ("image", &["--image", &other_image], &[]),
            ("cpu-request", &["--cpu-request", "500m"], &[]),
            ("memory-request", &["--memory-request", "1Gi"], &[]),
            ("cpu-limit", &["--cpu-limit", "3"], &[]),
            ("memory-limit", &["--memory-limit", "8Gi"], &[]),
            ("service-account", &["--service-account", "runner"], &[]),
            ("command", &["--command", "agentd"], &[]),
            ("arg", &["--arg", "--serve"], &[]),
            ("grace-period", &["--grace-period", "5s"], &[]),
            ("env", &["--env", "MODE=fast"], &[]),
            ("env-file", &["--env-file", &file], &[]),
            ("workspace", &["--workspace", "/work"], &[]),
            ("run-as-user", &["--run-as-user", "20001"], &[]),
            ("run-as-group", &["--run-as-group", "20002"], &[]),
            ("node-selector", &["--node-selector", "pool=gpu"], &[]),
            ("toleration", &["--toleration", "gpu=yes:NoSchedule"], &[]),
            (
                "ephemeral-storage-request",
                &["--ephemeral-storage-request", "1Gi"],
                &[],
            ),
            (
                "ephemeral-storage-limit",
                &["--ephemeral-storage-limit", "2Gi"],
                &[],
            ),
            ("runtime-class", &["--runtime-class", "gvisor"], &[]),
            ("priority-class", &["--priority-class", "high"], &[]),
            ("resource", &["--resource", "nvidia.com/gpu=1"], &[]),
            (
                "image-pull-secret",
                &["--image-pull-secret", "regcred"],
                &[],
            ),
            ("label", &["--label", "team=ml"], &[]),
            ("annotation", &["--annotation", "example.com/note=x"], &[]),
            ("env-from-secret", &["--env-from-secret", "creds"], &[]),
            ("env-secret", &["--env-secret", "TOKEN=creds/token"], &[]),
            ("isolate", isolate, &[]),
            (
                "allow-egress",
                &["--allow-egress", "10.0.0.0/8:443"],
                isolate,
            ),
            ("workspace-size", claim, &[]),
            (
                "overrides",
                &["--overrides", r#"{"spec":{"dnsPolicy":"Default"}}"#],
                &[],
            ),
            ("storage-class", &["--storage-class", "fast"], claim),
            ("timeout", &["--timeout", "60"], &[]),
            ("replace", &["--replace"], &[]),
            ("min-running", &["--min-running", "5s"], &[]),
            ("ttl", &["--ttl", "2h"], &[]),
            ("kubeconfig", &["--kubeconfig", "/nowhere"], &[]),
            ("context", &["--context", "other"], &[]),
            ("output", &["-o", "json"], &[]),
        ];
        let covered: std::collections::BTreeSet<&str> =
            cases.iter().map(|case| case.0).chain(["verbose"]).collect();
        assert_eq!(covered, deploy_flags().collect());
        for (flag, given, compared) in cases {
            let before = intent_of(compared);
            let after = intent_of(&[given, compared].concat());
            match SETTINGS
                .iter()
                .find(|setting| setting.flags.contains(&flag))
            {
                Some(setting) => {
                    assert_ne!(after.0, before.0, "--{flag} changes the fingerprint");
                    assert_eq!(
                        differing_settings(Some(&before.1), &after.1),
                        SettingsDiff::Named(vec![setting.name.to_owned()]),
                        "--{flag}"
                    );
                }
                None => assert_eq!(after, before, "--{flag} is not the pod's shape"),
            }
        }
        assert_eq!(intent_of(&["-vv"]), intent_of(&[]));
        drop(std::fs::remove_file(&file));
    }
}
