//! Unit tests of `config`: V1, V2, V3, V5 and V11 of deploy.md § Templates, fingerprint, names,
//! image, input, plus every field rule with its boundaries. Pure; no I/O.

use std::time::Duration;

use super::*;
use crate::naming::AgentIdentity;

const SECRET: &str = "pa55word-VALUE-never-shown";

fn image() -> String {
    format!("registry.example.com/team/agent@sha256:{}", "a".repeat(64))
}

fn agent() -> AgentIdentity {
    AgentIdentity::new("Research Bot #1").unwrap()
}

fn config() -> DeployConfig {
    DeployConfig::new("agents", image())
}

fn refused(config: &DeployConfig) -> ConfigError {
    config.validate(&agent()).unwrap_err()
}

/// V1: defaults 100m/256Mi/2/4Gi, no service account, `/home/agent`, 10001/10001, 600 s.
#[test]
fn v1_defaults() {
    let c = config();
    assert_eq!(c.cpu_request, "100m");
    assert_eq!(c.memory_request, "256Mi");
    assert_eq!(c.cpu_limit, "2");
    assert_eq!(c.memory_limit, "4Gi");
    assert_eq!(c.service_account, None);
    assert_eq!(c.command, None);
    assert!(c.args.is_empty());
    assert_eq!(c.workspace_mount_path, "/home/agent");
    assert_eq!(c.run_as_user, 10001);
    assert_eq!(c.run_as_group, 10001);
    assert_eq!(c.timeout, Duration::from_secs(600));
    assert!(c.env.is_empty());
    let v = c.validate(&agent()).unwrap();
    assert_eq!(v.cpu_request(), "100m");
    assert_eq!(v.memory_request(), "256Mi");
    assert_eq!(v.cpu_limit(), "2");
    assert_eq!(v.memory_limit(), "4Gi");
    assert_eq!(v.service_account(), None);
    assert_eq!(v.command(), None);
    assert_eq!(v.args(), None);
    assert_eq!(v.workspace_mount_path(), "/home/agent");
    assert_eq!(v.run_as_user(), 10001);
    assert_eq!(v.run_as_group(), 10001);
    assert_eq!(v.timeout(), Duration::from_secs(600));
    assert_eq!(v.namespace(), "agents");
    assert_eq!(v.image().as_str(), image());
    assert_eq!(v.agent(), &agent());
    assert_eq!(v.pod_name(), "apiary-research-bot-1-72bea12366a3");
    assert!(v.removed_env_keys().is_empty());
}

/// V2: configured quantities are honoured verbatim.
#[test]
fn v2_quantities_honoured() {
    let mut c = config();
    c.cpu_request = "500m".into();
    c.memory_request = "1Gi".into();
    c.cpu_limit = "4".into();
    c.memory_limit = "8Gi".into();
    let v = c.validate(&agent()).unwrap();
    assert_eq!(
        [
            v.cpu_request(),
            v.memory_request(),
            v.cpu_limit(),
            v.memory_limit()
        ],
        ["500m", "1Gi", "4", "8Gi"]
    );
}

/// deploy.md § Fields: only empty or all-whitespace quantities are refused, naming the flag.
#[test]
fn blank_resources_refused() {
    let fields = [
        (ResourceField::CpuRequest, "--cpu-request"),
        (ResourceField::MemoryRequest, "--memory-request"),
        (ResourceField::CpuLimit, "--cpu-limit"),
        (ResourceField::MemoryLimit, "--memory-limit"),
    ];
    for (field, flag) in fields {
        for blank in ["", "  \t"] {
            let mut c = config();
            match field {
                ResourceField::CpuRequest => c.cpu_request = blank.into(),
                ResourceField::MemoryRequest => c.memory_request = blank.into(),
                ResourceField::CpuLimit => c.cpu_limit = blank.into(),
                ResourceField::MemoryLimit => c.memory_limit = blank.into(),
            }
            let err = refused(&c);
            assert_eq!(err, ConfigError::BlankResource { field });
            assert!(err.to_string().contains(flag), "{err}");
        }
    }
    // Anything else is sent verbatim: the apiserver's grammar is authoritative.
    let mut c = config();
    c.cpu_request = " lots ".into();
    assert_eq!(c.validate(&agent()).unwrap().cpu_request(), " lots ");
}

/// V3: namespaces that are not RFC 1123 labels are refused, naming the rule.
#[test]
fn v3_namespaces_refused() {
    let cases = [
        (String::new(), NamespaceProblem::Empty),
        ("Agents".to_owned(), NamespaceProblem::InvalidCharacter),
        ("-lead".to_owned(), NamespaceProblem::BadStart),
        ("trail-".to_owned(), NamespaceProblem::BadEnd),
        (
            "has_underscore".to_owned(),
            NamespaceProblem::InvalidCharacter,
        ),
        ("n".repeat(64), NamespaceProblem::TooLong),
        ("dot.ted".to_owned(), NamespaceProblem::InvalidCharacter),
        ("ünï".to_owned(), NamespaceProblem::InvalidCharacter),
    ];
    for (namespace, problem) in cases {
        let mut c = config();
        c.namespace.clone_from(&namespace);
        let err = refused(&c);
        assert_eq!(
            err,
            ConfigError::Namespace {
                namespace: namespace.clone(),
                problem
            }
        );
        let text = err.to_string();
        assert!(text.contains("--namespace"), "{text}");
        assert!(text.contains(&problem.to_string()), "{text}");
    }
    for ok in ["a", "0", "a-b", "agents", &"n".repeat(63), "1-2-3"] {
        assert_eq!(validate_namespace(ok), Ok(()), "{ok}");
    }
}

/// Namespace problem texts are distinct.
#[test]
fn namespace_problem_texts() {
    let all = [
        NamespaceProblem::Empty,
        NamespaceProblem::TooLong,
        NamespaceProblem::InvalidCharacter,
        NamespaceProblem::BadStart,
        NamespaceProblem::BadEnd,
    ];
    let texts: std::collections::BTreeSet<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(texts.len(), 5);
    assert!(NamespaceProblem::TooLong.to_string().contains("63"));
}

/// deploy.md § Fields: an empty service account is refused; a given one is kept.
#[test]
fn service_account_non_empty() {
    let mut c = config();
    c.service_account = Some(String::new());
    let err = refused(&c);
    assert_eq!(err, ConfigError::EmptyServiceAccount);
    assert!(err.to_string().contains("--service-account"));
    c.service_account = Some("runner".into());
    assert_eq!(
        c.validate(&agent()).unwrap().service_account(),
        Some("runner")
    );
}

/// deploy.md § Fields: command is a non-empty list of non-empty strings; args empty means none.
#[test]
fn command_and_args_rules() {
    let mut c = config();
    c.command = Some(vec![]);
    let err = refused(&c);
    assert_eq!(err, ConfigError::EmptyCommand);
    assert!(err.to_string().contains("--command"));
    c.command = Some(vec!["agentd".into(), String::new()]);
    let err = refused(&c);
    assert_eq!(err, ConfigError::EmptyCommandElement { index: 1 });
    assert!(err.to_string().contains("element 1"));
    c.command = Some(vec![String::new()]);
    assert_eq!(refused(&c), ConfigError::EmptyCommandElement { index: 0 });
    c.command = Some(vec!["agentd".into()]);
    c.args = vec!["--serve".into(), String::new(), "-x".into()];
    let v = c.validate(&agent()).unwrap();
    assert_eq!(v.command(), Some(&["agentd".to_owned()][..]));
    assert_eq!(
        v.args(),
        Some(&["--serve".to_owned(), String::new(), "-x".to_owned()][..])
    );
}

/// deploy.md § Fields: workspace path rules, each named.
#[test]
fn workspace_path_rules() {
    let cases = [
        ("", WorkspaceProblem::NotAbsolute),
        ("home/agent", WorkspaceProblem::NotAbsolute),
        ("/", WorkspaceProblem::Root),
        ("//", WorkspaceProblem::Root),
        ("/a/../b", WorkspaceProblem::ParentComponent),
        ("/..", WorkspaceProblem::ParentComponent),
        ("/a/..", WorkspaceProblem::ParentComponent),
        ("/a:b", WorkspaceProblem::Colon),
        ("/a\0b", WorkspaceProblem::Nul),
    ];
    for (path, problem) in cases {
        let mut c = config();
        c.workspace_mount_path = path.into();
        let err = refused(&c);
        assert_eq!(
            err,
            ConfigError::Workspace {
                path: path.into(),
                problem
            },
            "{path:?}"
        );
        let text = err.to_string();
        assert!(text.contains("--workspace"), "{text}");
        assert!(text.contains(&problem.to_string()), "{text}");
    }
    for ok in ["/work", "/a/..b/c", "/a/.../b", "/home/agent/", "/a/./b"] {
        assert_eq!(validate_workspace(ok), Ok(()), "{ok}");
    }
}

/// Workspace problem texts are distinct.
#[test]
fn workspace_problem_texts() {
    let all = [
        WorkspaceProblem::NotAbsolute,
        WorkspaceProblem::Root,
        WorkspaceProblem::ParentComponent,
        WorkspaceProblem::Colon,
        WorkspaceProblem::Nul,
    ];
    let texts: std::collections::BTreeSet<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(texts.len(), 5);
}

/// deploy.md § Fields: run_as_user 1..=2147483647 (UID 0 refused), run_as_group 0..=2147483647.
#[test]
fn run_as_boundaries() {
    let mut c = config();
    for bad in [0, -1, 2_147_483_648] {
        c.run_as_user = bad;
        let err = refused(&c);
        assert_eq!(err, ConfigError::RunAsUser { value: bad });
        assert!(err.to_string().contains("--run-as-user"));
    }
    for ok in [1, 2_147_483_647] {
        c.run_as_user = ok;
        assert_eq!(c.validate(&agent()).unwrap().run_as_user(), ok);
    }
    for bad in [-1, 2_147_483_648] {
        c.run_as_group = bad;
        let err = refused(&c);
        assert_eq!(err, ConfigError::RunAsGroup { value: bad });
        assert!(err.to_string().contains("--run-as-group"));
    }
    for ok in [0, 2_147_483_647] {
        c.run_as_group = ok;
        assert_eq!(c.validate(&agent()).unwrap().run_as_group(), ok);
    }
}

/// V5 / deploy.md § Timeout: the accepted spellings.
#[test]
fn v5_timeout_spellings_accepted() {
    for (text, secs) in [
        ("90", 90),
        ("90s", 90),
        ("5m", 300),
        ("2m30s", 150),
        ("1", 1),
        ("600", 600),
        ("10m", 600),
        ("9m60s", 600),
        ("0m1s", 1),
    ] {
        assert_eq!(parse_timeout(text), Ok(Duration::from_secs(secs)), "{text}");
    }
}

/// V5: 0, 601, `1.5s`, `soon` and other spellings are refused, naming the flag.
#[test]
fn v5_timeout_refused() {
    for text in ["0", "0s", "601", "10m1s", "11m", "99999999999999999999999"] {
        let err = parse_timeout(text).unwrap_err();
        assert!(matches!(err, TimeoutError::OutOfRange { .. }), "{text}");
        assert!(err.to_string().contains("--timeout"));
        assert!(err.to_string().contains("600"));
    }
    assert_eq!(
        parse_timeout("601"),
        Err(TimeoutError::OutOfRange { seconds: 601 })
    );
    for text in [
        "1.5s", "soon", "", "s", "m", "5ms", "2m30", "-5", "+5", " 90", "1h", "m30s", "1m2m", "5 m",
    ] {
        let err = parse_timeout(text).unwrap_err();
        assert_eq!(
            err,
            TimeoutError::Malformed {
                text: text.to_owned()
            },
            "{text:?}"
        );
        assert!(err.to_string().contains("--timeout"));
    }
}

/// V5: the library refuses 0, 601 s and fractional durations too.
#[test]
fn v5_library_timeout_bounds() {
    let mut c = config();
    c.timeout = Duration::from_secs(0);
    assert_eq!(
        refused(&c),
        ConfigError::Timeout(TimeoutError::OutOfRange { seconds: 0 })
    );
    c.timeout = Duration::from_secs(601);
    assert_eq!(
        refused(&c),
        ConfigError::Timeout(TimeoutError::OutOfRange { seconds: 601 })
    );
    c.timeout = Duration::from_millis(1500);
    let err = refused(&c);
    assert_eq!(err, ConfigError::Timeout(TimeoutError::Fractional));
    assert!(err.to_string().contains("whole seconds"));
    c.timeout = Duration::from_secs(1);
    assert_eq!(
        c.validate(&agent()).unwrap().timeout(),
        Duration::from_secs(1)
    );
    c.timeout = Duration::from_secs(600);
    assert!(c.validate(&agent()).is_ok());
}

/// deploy.md § Fields: image errors pass through validation unchanged.
#[test]
fn image_refusal_passes_through() {
    let mut c = config();
    c.image = "agent:latest".into();
    let err = refused(&c);
    assert!(matches!(
        err,
        ConfigError::Image(ImageError::TagOnly { .. })
    ));
    assert!(err.to_string().contains("mutable pointer"));
}

/// V11: env errors pass through without values, and Debug of both configurations redacts.
#[test]
fn v11_no_value_in_config_errors_or_debug() {
    let mut c = config();
    c.env.set("TOKEN", SECRET);
    c.env.set("APIARY_AGENT_ID", SECRET);
    assert!(!format!("{c:?}").contains(SECRET));
    let v = c.validate(&agent()).unwrap();
    assert_eq!(v.removed_env_keys(), ["APIARY_AGENT_ID"]);
    assert!(!format!("{v:?}").contains(SECRET));
    assert!(!format!("{v:#?}").contains(SECRET));
    c.env.set("bad-key", SECRET);
    let err = refused(&c);
    assert!(matches!(err, ConfigError::Env(EnvError::InvalidKey { .. })));
    assert!(err.to_string().contains("bad-key"));
    assert!(!err.to_string().contains(SECRET));
    assert!(!format!("{err:?}").contains(SECRET));
    let mut big = config();
    big.env.set("BIG", SECRET.repeat(50_000));
    let err = refused(&big);
    assert!(matches!(err, ConfigError::Env(EnvError::TooLarge { .. })));
    assert!(!err.to_string().contains(SECRET));
}

/// Validation order: the namespace is reported before the image, the image before resources.
#[test]
fn validation_order() {
    let mut c = config();
    c.namespace = "Bad".into();
    c.image = String::new();
    c.cpu_request = String::new();
    assert!(matches!(refused(&c), ConfigError::Namespace { .. }));
    c.namespace = "ok".into();
    assert!(matches!(
        refused(&c),
        ConfigError::Image(ImageError::Required)
    ));
}
