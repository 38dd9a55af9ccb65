//! End-to-end: every invalid input is refused with exit 2 **before any request reaches the
//! cluster** (deploy.md § CLI contract, exit codes; § Configuration: "All validation happens
//! before any cluster contact"). Each test runs the built binary against the loopback simulator
//! and asserts on the simulator's request log that nothing was sent.

use std::ffi::OsString;

use crate::common::{Fixture, IMAGE, Run};

/// Run `args` against a fresh simulator, assert exit 2, no request, an empty stdout in text
/// mode, and each of `needles` in stderr. Returns the run.
fn refused(args: &[&str], needles: &[&str]) -> Run {
    let fx = Fixture::start();
    let run = fx.apiary(args);
    assert_eq!(run.code, 2, "{args:?}: {run:?}");
    assert!(run.stdout.is_empty(), "{args:?}: stdout {:?}", run.stdout);
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "{args:?}: stderr lacks {needle:?}: {}",
            run.stderr
        );
    }
    fx.assert_no_requests(&format!("{args:?}"));
    run
}

/// N1: an AGENT with leading or trailing whitespace, a control character, or empty is refused
/// (never trimmed).
#[test]
fn n1_bad_agent_names_are_refused_before_contact() {
    refused(
        &["deploy", " lead", "--image", IMAGE],
        &["AGENT", "whitespace"],
    );
    refused(&["deploy", "trail ", "--image", IMAGE], &["whitespace"]);
    refused(&["deploy", "", "--image", IMAGE], &["empty"]);
    refused(&["deploy", "bell\u{7}", "--image", IMAGE], &["control"]);
    refused(&["status", " lead"], &["whitespace"]);
    refused(&["undeploy", " lead"], &["whitespace"]);
    refused(&["gc", " lead"], &["whitespace"]);
}

/// AGENT must be valid UTF-8 (deploy.md § AGENT and agent_id, rule 1).
#[cfg(unix)]
#[test]
fn non_utf8_agent_is_refused_before_contact() {
    use std::os::unix::ffi::OsStringExt;
    let fx = Fixture::start();
    let agent = OsString::from_vec(vec![b'a', 0xff, b'b']);
    let args: Vec<OsString> = vec!["deploy".into(), agent, "--image".into(), IMAGE.into()];
    let run = fx.apiary(&args);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("UTF-8"), "{}", run.stderr);
    fx.assert_no_requests("non-UTF-8 AGENT");
}

/// I5: a tag-only image is refused quoting the reference and showing how to pin.
#[test]
fn i5_tag_only_image_is_refused_with_pinning_advice() {
    refused(
        &["deploy", "a", "--image", "nginx:latest"],
        &["nginx:latest", "sha256:"],
    );
    refused(
        &["deploy", "a", "--image", "registry.example.com/x:v1.2.3"],
        &["sha256:"],
    );
}

/// I6/I7/I8: malformed digests and an empty image are refused.
#[test]
fn i7_malformed_digests_are_refused() {
    let upper = format!("x@sha256:{}", "A".repeat(64));
    let short = format!("x@sha256:{}", "a".repeat(63));
    refused(&["deploy", "a", "--image", &upper], &[]);
    refused(&["deploy", "a", "--image", &short], &[]);
    refused(&["deploy", "a", "--image", "   "], &["image"]);
}

/// V6: a non-POSIX env key is refused naming the key (never the value).
#[test]
fn v6_bad_env_key_is_refused_naming_it() {
    let run = refused(
        &[
            "deploy",
            "a",
            "--image",
            IMAGE,
            "--env",
            "foo.bar=hunter2-value",
        ],
        &["foo.bar"],
    );
    assert!(!run.stderr.contains("hunter2-value"));
    refused(
        &["deploy", "a", "--image", IMAGE, "--env", "1LEADING=x"],
        &["1LEADING"],
    );
}

/// V8: values over 1 MiB in total are refused stating the size and the limit.
#[test]
fn v8_environment_over_one_mib_is_refused() {
    let fx = Fixture::start();
    let file = fx.dir().join("big.env");
    std::fs::write(&file, format!("BIG={}\n", "x".repeat(1_048_576))).expect("write");
    let run = fx.apiary(&[
        "deploy",
        "a",
        "--image",
        IMAGE,
        "--env-file",
        file.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("1048576"), "{}", run.stderr);
    fx.assert_no_requests("oversized env");
}

/// V5: a timeout over 600 s, of 0, or fractional is refused naming `--timeout`.
#[test]
fn v5_timeout_out_of_range_is_refused() {
    refused(
        &["deploy", "a", "--image", IMAGE, "--timeout", "601"],
        &["--timeout"],
    );
    refused(
        &["deploy", "a", "--image", IMAGE, "--timeout", "11m"],
        &["--timeout"],
    );
    refused(
        &["deploy", "a", "--image", IMAGE, "--timeout", "0"],
        &["--timeout"],
    );
    refused(
        &["deploy", "a", "--image", IMAGE, "--timeout", "1.5s"],
        &["--timeout"],
    );
}

/// V12: non-numeric `--run-as-user`, `--timeout soon` and an unknown flag are refused naming
/// the flag; in json mode stdout is one `{"error": …}` document.
#[test]
fn v12_malformed_flags_name_the_flag_also_in_json() {
    refused(
        &["deploy", "a", "--image", IMAGE, "--run-as-user", "root"],
        &["--run-as-user"],
    );
    refused(
        &["deploy", "a", "--image", IMAGE, "--timeout", "soon"],
        &["--timeout"],
    );
    refused(
        &["deploy", "a", "--image", IMAGE, "--frobnicate"],
        &["--frobnicate"],
    );
    for args in [
        &[
            "-o",
            "json",
            "deploy",
            "a",
            "--image",
            IMAGE,
            "--frobnicate",
        ][..],
        &[
            "deploy",
            "a",
            "--image",
            IMAGE,
            "--run-as-user",
            "root",
            "--output=json",
        ][..],
        &[
            "-o",
            "json",
            "deploy",
            "a",
            "--image",
            IMAGE,
            "--timeout",
            "soon",
        ][..],
    ] {
        let fx = Fixture::start();
        let run = fx.apiary(args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        let doc = run.json();
        let error = doc["error"].as_str().expect("string error");
        assert!(
            error.contains("--frobnicate")
                || error.contains("--run-as-user")
                || error.contains("--timeout"),
            "{error}"
        );
        fx.assert_no_requests(&format!("{args:?}"));
    }
}

/// V1 range rules: UID 0 and a negative GID are refused.
#[test]
fn run_as_ids_out_of_range_are_refused() {
    refused(
        &["deploy", "a", "--image", IMAGE, "--run-as-user", "0"],
        &["--run-as-user"],
    );
    refused(
        &["deploy", "a", "--image", IMAGE, "--run-as-group=-1"],
        &["--run-as-group"],
    );
}

/// V10: an unreadable env file is refused naming it; a malformed line names file and line but
/// not the content.
#[test]
fn v10_env_file_problems_are_refused() {
    let fx = Fixture::start();
    let missing = fx.dir().join("missing.env");
    let run = fx.apiary(&[
        "deploy",
        "a",
        "--image",
        IMAGE,
        "--env-file",
        missing.to_str().expect("utf-8"),
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("missing.env"), "{}", run.stderr);
    let bad = fx.dir().join("bad.env");
    std::fs::write(&bad, "OK=1\nthis line is secret-ish content\n").expect("write");
    let run = fx.apiary(&[
        "deploy",
        "a",
        "--image",
        IMAGE,
        "--env-file",
        bad.to_str().expect("utf-8"),
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("bad.env") && run.stderr.contains("line 2"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("secret-ish"));
    fx.assert_no_requests("env files");
}

/// V9: `--env KEY` with KEY unset in apiary's environment is refused naming KEY.
#[test]
fn v9_unset_inherited_key_is_refused() {
    let fx = Fixture::start();
    let mut cmd = fx.command(&[
        "deploy",
        "a",
        "--image",
        IMAGE,
        "--env",
        "APIARY_TEST_UNSET_KEY",
    ]);
    cmd.env_remove("APIARY_TEST_UNSET_KEY");
    let run = crate::common::run(cmd);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("APIARY_TEST_UNSET_KEY"),
        "{}",
        run.stderr
    );
    fx.assert_no_requests("unset --env KEY");
}

/// V3: an invalid `-n` is refused before contact.
#[test]
fn v3_invalid_namespace_is_refused() {
    for ns in ["Agents", "-lead", "trail-", "has_underscore"] {
        let flag = format!("--namespace={ns}");
        refused(&[&flag, "deploy", "a", "--image", IMAGE], &["namespace"]);
    }
}

/// `status` shape flags mean nothing without `--image`: refused rather than ignored.
#[test]
fn status_shape_flags_without_image_are_refused() {
    refused(
        &["status", "a", "--cpu-limit", "3"],
        &["--cpu-limit", "--image"],
    );
}

/// A missing subcommand or AGENT is a usage error (exit 2) with no request.
#[test]
fn usage_errors_are_exit_2() {
    let fx = Fixture::start();
    for args in [
        &[][..],
        &["deploy"][..],
        &["status"][..],
        &["completions", "tcsh"][..],
    ] {
        let run = fx.apiary(args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stdout.is_empty(), "{args:?}");
    }
    let run = fx.apiary(&["-o", "json", "deploy"]);
    assert_eq!(run.code, 2);
    assert!(run.json()["error"].is_string());
    fx.assert_no_requests("usage errors");
}

/// K39: seeds flags out of range, both or neither port flag → exit 2 before contact.
#[test]
fn k39_seeds_flag_refusals() {
    refused(
        &["seeds", "--selector", "app=x", "--port", "0"],
        &["--port"],
    );
    refused(
        &["seeds", "--selector", "app=x", "--port", "70000"],
        &["--port"],
    );
    refused(&["seeds", "--selector", "app=x"], &[]);
    refused(
        &[
            "seeds",
            "--selector",
            "app=x",
            "--port",
            "1",
            "--port-name",
            "g",
        ],
        &[],
    );
}

/// seeds.md § The seeds subcommand, rule 2: a blank selector or port name is exit 2 before any
/// request.
#[test]
fn k39_blank_seeds_values_are_refused() {
    refused(
        &["seeds", "--selector", "  ", "--port", "7000"],
        &["--selector"],
    );
    refused(
        &["seeds", "--selector", "app=x", "--port-name", " "],
        &["--port-name"],
    );
}

/// `status --image` validates the configuration exactly as deploy does.
#[test]
fn status_with_a_tag_only_image_is_refused() {
    refused(
        &["status", "a", "--image", "nginx:latest"],
        &["nginx:latest"],
    );
    refused(
        &["status", "a", "--image", IMAGE, "--env", "bad-key=1"],
        &["bad-key"],
    );
}

/// deploy.md § Pod options: each option's certain rules refuse the flag before any request,
/// naming the flag, the problem and the fix — keys apiary owns, a bad label key or value, a
/// taint effect, a base resource given as an extended one, an object name that is not one.
#[test]
fn pod_option_flags_are_refused_before_contact() {
    let cases: [(&[&str], &[&str]); 22] = [
        (
            &["--label", "apiary.dev/agent=x"],
            &["--label", "the key apiary.dev/agent is apiary's own"],
        ),
        (
            &["--annotation", "app.kubernetes.io/managed-by=me"],
            &["--annotation", "apiary's own"],
        ),
        (&["--label", "team"], &["--label", "expected KEY=VALUE"]),
        (&["--label", "team=has space"], &["--label", "the value"]),
        (
            &["--node-selector", "Bad.Prefix/pool=x"],
            &["--node-selector", "not a DNS subdomain"],
        ),
        (
            &["--toleration", "gpu:Always"],
            &["--toleration", "NoSchedule, PreferNoSchedule, NoExecute"],
        ),
        (
            &["--resource", "memory=1Gi"],
            &["--resource", "--memory-request"],
        ),
        (
            &["--runtime-class", "gVisor"],
            &["--runtime-class", "not a valid object name"],
        ),
        (
            &["--image-pull-secret", "reg cred"],
            &["--image-pull-secret", "not a valid object name"],
        ),
        (
            &["--ephemeral-storage-limit", " "],
            &["--ephemeral-storage-limit", "not a Kubernetes quantity"],
        ),
        (
            &["--env-from-secret", "Team_Creds"],
            &["--env-from-secret", "not a valid object name"],
        ),
        (
            &["--env-secret", "TOKEN=creds"],
            &["--env-secret", "expected VAR=SECRET/KEY"],
        ),
        (
            &["--env-secret", "APIARY_AGENT_ID=creds/id"],
            &["--env-secret", "set by apiary itself"],
        ),
        (
            &["--env-secret", "TOKEN=creds/a b"],
            &["--env-secret", "the key"],
        ),
        (
            &["--env-secret", "TOKEN=creds/t", "--env", "TOKEN=x"],
            &["--env-secret", "also set by --env"],
        ),
        (
            &["--overrides", r#"{"spec":{"restartPolicy":"Always"}}"#],
            &["--overrides", "spec.restartPolicy"],
        ),
        (
            &[
                "--overrides",
                r#"{"spec":{"containers":[{"name":"agent","image":"evil"}]}}"#,
            ],
            &["--overrides", "spec.containers[agent]"],
        ),
        (
            &["--overrides", "[1]"],
            &["--overrides must be a JSON object"],
        ),
        (
            &["--isolate", "--allow-egress", "10.0.0.0"],
            &["--allow-egress", "prefix length"],
        ),
        (
            &["--isolate", "--allow-egress", "10.0.0.0/8:0"],
            &["--allow-egress", "from 1 to 65535"],
        ),
        (
            &["--allow-egress", "10.0.0.0/8"],
            &["--allow-egress", "add --isolate"],
        ),
        (
            &["--overrides", "@/nonexistent/overrides.json"],
            &["--overrides @/nonexistent/overrides.json", "cannot be read"],
        ),
    ];
    for (flags, needles) in cases {
        let mut args = vec!["deploy", "agent", "--image", IMAGE];
        args.extend_from_slice(flags);
        refused(&args, needles);
    }
}

/// deploy.md § Grace periods: `--grace-period` of 0 (a forced delete), over an hour or in
/// another spelling is refused on `deploy`, `undeploy` and `gc`, naming the flag and the value
/// as typed, before any request.
#[test]
fn bad_grace_periods_are_refused_before_contact() {
    for value in ["0", "0s", "61m", "5x", "1.5s"] {
        let quoted = format!("--grace-period {value:?}");
        refused(
            &["deploy", "a", "--image", IMAGE, "--grace-period", value],
            &[&quoted, "from 1s to 60m"],
        );
        refused(&["undeploy", "a", "--grace-period", value], &[&quoted]);
        refused(&["gc", "--all", "--grace-period", value], &[&quoted]);
    }
    let run = refused(&["undeploy", "a", "--grace-period", "0"], &[]);
    assert!(run.stderr.contains("forces the delete"), "{}", run.stderr);
}

/// `--allow-egress` without `--isolate` quotes the rule as typed, its port included.
#[test]
fn allow_egress_without_isolate_quotes_the_rule_as_typed() {
    refused(
        &[
            "deploy",
            "a",
            "--image",
            IMAGE,
            "--allow-egress",
            "10.0.0.0/8:443",
        ],
        &["10.0.0.0/8:443", "add --isolate"],
    );
}
