//! Unit tests of the clap surface: every flag of the contract parses, global flags work on both
//! sides of the subcommand, and malformed input is a usage error (exit 2). No I/O.

use std::ffi::OsString;

use clap::Parser;
use clap::error::ErrorKind;

use super::*;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("apiary").chain(args.iter().copied()))
}

fn os(args: &[&str]) -> Vec<OsString> {
    std::iter::once("apiary")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect()
}

const IMAGE: &str =
    "reg.example/agent@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// Every deploy flag of deploy.md § Deploy-side subcommands parses into its field.
#[test]
fn deploy_accepts_every_contract_flag() {
    let cli = parse(&[
        "deploy",
        "Research Bot #1",
        "--image",
        IMAGE,
        "--env",
        "A=1",
        "--env",
        "B",
        "--env-file",
        "one.env",
        "--env-file",
        "two.env",
        "--cpu-request",
        "500m",
        "--memory-request",
        "1Gi",
        "--cpu-limit",
        "4",
        "--memory-limit",
        "8Gi",
        "--service-account",
        "runner",
        "--command",
        "agentd",
        "--arg",
        "serve",
        "--arg=--port=8080",
        "--workspace",
        "/work",
        "--run-as-user",
        "1000",
        "--run-as-group",
        "0",
        "--timeout",
        "2m30s",
    ])
    .expect("parses");
    let Command::Deploy(d) = cli.command else {
        panic!("not deploy")
    };
    assert_eq!(d.agent, OsString::from("Research Bot #1"));
    assert_eq!(d.image, IMAGE);
    assert_eq!(d.shape.env, ["A=1", "B"]);
    assert_eq!(
        d.shape.env_file,
        [PathBuf::from("one.env"), PathBuf::from("two.env")]
    );
    assert_eq!(d.shape.cpu_request.as_deref(), Some("500m"));
    assert_eq!(d.shape.memory_request.as_deref(), Some("1Gi"));
    assert_eq!(d.shape.cpu_limit.as_deref(), Some("4"));
    assert_eq!(d.shape.memory_limit.as_deref(), Some("8Gi"));
    assert_eq!(d.shape.service_account.as_deref(), Some("runner"));
    assert_eq!(d.shape.command.as_deref(), Some("agentd"));
    assert_eq!(d.shape.args, ["serve", "--port=8080"]);
    assert_eq!(d.shape.workspace.as_deref(), Some("/work"));
    assert_eq!(d.shape.run_as_user, Some(1000));
    assert_eq!(d.shape.run_as_group, Some(0));
    assert_eq!(d.timeout.as_deref(), Some("2m30s"));
}

/// `--arg=VALUE` and `--arg VALUE` accept values that start with `-` (deploy.md § Fields).
#[test]
fn arg_accepts_values_starting_with_a_dash() {
    let cli = parse(&[
        "deploy", "a", "--image", IMAGE, "--arg=-v", "--arg", "--serve",
    ])
    .expect("parses");
    let Command::Deploy(d) = cli.command else {
        panic!("not deploy")
    };
    assert_eq!(d.shape.args, ["-v", "--serve"]);
}

/// Global flags are accepted before and after the subcommand (CLI contract, shared part).
#[test]
fn global_flags_before_and_after_the_subcommand() {
    for args in [
        &[
            "--kubeconfig",
            "/k",
            "--context",
            "c",
            "-n",
            "agents",
            "-o",
            "json",
            "-vv",
            "status",
            "a",
        ][..],
        &[
            "status",
            "a",
            "--kubeconfig",
            "/k",
            "--context",
            "c",
            "--namespace",
            "agents",
            "--output",
            "json",
            "-v",
            "-v",
        ][..],
    ] {
        let cli = parse(args).expect("parses");
        assert_eq!(cli.global.kubeconfig, Some(PathBuf::from("/k")));
        assert_eq!(cli.global.context.as_deref(), Some("c"));
        assert_eq!(cli.global.namespace.as_deref(), Some("agents"));
        assert_eq!(cli.global.output, OutputFormat::Json);
        assert_eq!(cli.global.verbose, 2);
    }
}

/// Without `-o` the output is text and verbosity is zero.
#[test]
fn defaults_are_text_and_quiet() {
    let cli = parse(&["gc", "a"]).expect("parses");
    assert_eq!(cli.global.output, OutputFormat::Text);
    assert_eq!(cli.global.verbose, 0);
    assert!(cli.global.namespace.is_none());
}

/// `-vvv` counts three (everything trace).
#[test]
fn verbosity_counts_repetitions() {
    let cli = parse(&["-vvv", "completions", "bash"]).expect("parses");
    assert_eq!(cli.global.verbose, 3);
}

/// V12: a non-numeric `--run-as-user`, an unknown flag and an unknown output format are usage
/// errors whose message names the flag.
#[test]
fn v12_malformed_flags_are_usage_errors_naming_the_flag() {
    for (args, flag) in [
        (
            &["deploy", "a", "--image", IMAGE, "--run-as-user", "root"][..],
            "--run-as-user",
        ),
        (
            &["deploy", "a", "--image", IMAGE, "--run-as-group", "x"][..],
            "--run-as-group",
        ),
        (&["deploy", "a", "--image", IMAGE, "--bogus"][..], "--bogus"),
        (&["-o", "yaml", "status", "a"][..], "--output"),
    ] {
        let err = parse(args).err().expect("refused");
        assert_eq!(err.exit_code(), 2, "{args:?}");
        assert!(err.to_string().contains(flag), "{args:?}: {err}");
    }
}

/// `deploy` without `--image` is a usage error (the image is required).
#[test]
fn deploy_requires_an_image() {
    let err = parse(&["deploy", "a"]).err().expect("refused");
    assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
    assert_eq!(err.exit_code(), 2);
}

/// Every subcommand that names an agent requires AGENT as its first positional argument.
#[test]
fn agent_is_required() {
    for sub in ["deploy", "status", "undeploy", "gc"] {
        let err = parse(&[sub]).err().expect("refused");
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument, "{sub}");
    }
}

/// seeds.md § The seeds subcommand, rule 2: exactly one of `--port` and `--port-name`; `--port` in
/// 1-65535.
#[test]
fn k39_seeds_port_flags_are_exclusive_and_ranged() {
    for args in [
        &["seeds", "--selector", "app=x"][..],
        &[
            "seeds",
            "--selector",
            "app=x",
            "--port",
            "1",
            "--port-name",
            "g",
        ][..],
        &["seeds", "--selector", "app=x", "--port", "0"][..],
        &["seeds", "--selector", "app=x", "--port", "65536"][..],
        &["seeds", "--selector", "app=x", "--port", "70000"][..],
        &["seeds", "--port", "7000"][..],
    ] {
        let err = parse(args).err().expect("refused");
        assert_eq!(err.exit_code(), 2, "{args:?}");
    }
    let cli = parse(&["seeds", "--selector", "app=x", "--port", "65535", "--watch"]).expect("ok");
    let Command::Seeds(s) = cli.command else {
        panic!("not seeds")
    };
    assert_eq!(s.port, Some(65535));
    assert!(s.watch);
    let cli = parse(&["seeds", "--selector", "app=x", "--port", "1"]).expect("ok");
    let Command::Seeds(s) = cli.command else {
        panic!("not seeds")
    };
    assert_eq!(s.port, Some(1));
    assert!(!s.watch);
}

/// `undeploy --no-wait` and `gc --dry-run` parse; their defaults are off.
#[test]
fn undeploy_and_gc_switches() {
    let Command::Undeploy(u) = parse(&["undeploy", "a", "--no-wait"]).expect("ok").command else {
        panic!("not undeploy")
    };
    assert!(u.no_wait);
    let Command::Undeploy(u) = parse(&["undeploy", "a"]).expect("ok").command else {
        panic!("not undeploy")
    };
    assert!(!u.no_wait);
    let Command::Gc(g) = parse(&["gc", "a", "--dry-run"]).expect("ok").command else {
        panic!("not gc")
    };
    assert!(g.dry_run);
}

/// Completions exist for exactly bash, zsh and fish.
#[test]
fn completions_for_bash_zsh_fish_only() {
    for (name, shell) in [
        ("bash", CompletionShell::Bash),
        ("zsh", CompletionShell::Zsh),
        ("fish", CompletionShell::Fish),
    ] {
        let Command::Completions(c) = parse(&["completions", name]).expect("ok").command else {
            panic!("not completions")
        };
        assert_eq!(c.shell, shell);
    }
    assert!(parse(&["completions", "tcsh"]).is_err());
}

/// `status` takes an optional `--image` and the shape flags; `given_flags` lists the shape
/// flags that were set so that they can be refused without `--image`.
#[test]
fn status_shape_flags_are_reported_when_given() {
    let Command::Status(s) = parse(&["status", "a", "--cpu-limit", "3", "--env", "K=v"])
        .expect("ok")
        .command
    else {
        panic!("not status")
    };
    assert!(s.image.is_none());
    assert_eq!(s.shape.given_flags(), ["--env", "--cpu-limit"]);
    assert!(ShapeArgs::default().given_flags().is_empty());
}

/// Every shape flag is reported by `given_flags` (so none can be silently ignored by `status`),
/// by the long name clap gives it.
#[test]
fn given_flags_covers_every_shape_flag() {
    let shape = ShapeArgs {
        env: vec!["A".into()],
        env_file: vec!["f".into()],
        cpu_request: Some("1".into()),
        memory_request: Some("1".into()),
        cpu_limit: Some("1".into()),
        memory_limit: Some("1".into()),
        service_account: Some("s".into()),
        command: Some("c".into()),
        args: vec!["a".into()],
        workspace: Some("/w".into()),
        run_as_user: Some(1),
        run_as_group: Some(1),
        node_selector: vec!["k=v".into()],
        toleration: vec!["k".into()],
        runtime_class: Some("r".into()),
        priority_class: Some("p".into()),
        resource: vec!["x/y=1".into()],
        ephemeral_storage_request: Some("1".into()),
        ephemeral_storage_limit: Some("1".into()),
        image_pull_secret: vec!["s".into()],
        label: vec!["k=v".into()],
        annotation: vec!["k=v".into()],
        env_from_secret: vec!["s".into()],
        env_secret: vec!["V=s/k".into()],
        overrides: Some("{}".into()),
        isolate: true,
        allow_egress: vec!["10.0.0.0/8".into()],
        workspace_size: Some("1Gi".into()),
        storage_class: Some("fast".into()),
        grace_period: Some("5s".into()),
    };
    let mut given = shape.given_flags();
    given.sort_unstable();
    let command = <ShapeArgs as clap::Args>::augment_args(clap::Command::new("shape"));
    let mut flags: Vec<String> = command
        .get_arguments()
        .map(|arg| format!("--{}", arg.get_long().expect("a long name")))
        .collect();
    flags.sort_unstable();
    assert_eq!(
        given, flags,
        "given_flags names each flag of ShapeArgs once"
    );
}

/// The JSON pre-scan recognises every spelling clap accepts, the last one winning.
#[test]
fn requests_json_recognises_every_spelling() {
    for args in [
        &["-o", "json", "x"][..],
        &["-ojson", "x"][..],
        &["-o=json", "x"][..],
        &["--output", "json"][..],
        &["--output=json"][..],
        &["-vvo", "json"][..],
        &["-vojson"][..],
        &["status", "a", "-o", "json", "--bogus"][..],
        &["-o", "text", "-o", "json"][..],
    ] {
        assert!(requests_json(&os(args)), "{args:?}");
    }
    for args in [
        &[][..],
        &["-o", "text"][..],
        &["-o", "json", "-o", "text"][..],
        &["--", "-o", "json"][..],
        &["--outputs", "json"][..],
        &["-v", "json"][..],
        &["--output"][..],
    ] {
        assert!(!requests_json(&os(args)), "{args:?}");
    }
}

/// Every flag of `deploy` (its own and the global ones it accepts) is in the one declaration
/// of the pod shape's settings (`apiary_classify::settings`: a setting, or a flag that enters
/// none with why), and every flag declared there is a flag of `deploy`: a new flag cannot be
/// missing from the settings, their labels or a file's keys, nor a declared one from the CLI.
#[test]
fn every_deploy_flag_is_declared_and_every_declared_flag_is_a_deploy_flag() {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    cli.build();
    let deploy = cli
        .get_subcommands()
        .find(|command| command.get_name() == "deploy")
        .expect("deploy is a subcommand");
    let mut flags: Vec<&str> = deploy
        .get_arguments()
        .filter(|arg| !arg.is_positional())
        .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
        .map(|arg| {
            arg.get_long()
                .expect("every flag of deploy has a long name")
        })
        .collect();
    flags.sort_unstable();
    let mut declared: Vec<&str> = apiary_classify::settings::deploy_flags().collect();
    declared.sort_unstable();
    assert_eq!(flags, declared);
    assert!(flags.contains(&"namespace") && flags.contains(&"grace-period"));
}
