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

/// Each case's arguments are refused as [`refused`] asserts, its needles in stderr.
fn refused_each(cases: &[(&[&str], &[&str])]) {
    for (args, needles) in cases {
        refused(args, needles);
    }
}

/// `deploy a --image IMAGE` followed by `flags`.
fn deploy<'a>(flags: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["deploy", "a", "--image", IMAGE];
    args.extend_from_slice(flags);
    args
}

/// Runs `deploy a --image IMAGE --env-file <file>` and asserts exit 2; returns the run.
fn deploy_with_env_file(fx: &Fixture, file: &std::path::Path) -> Run {
    let run = fx.apiary(&deploy(&["--env-file", file.to_str().expect("utf-8 path")]));
    assert_eq!(run.code, 2, "{run:?}");
    run
}

/// N1: an AGENT with leading or trailing whitespace, a control character, or empty is refused
/// (never trimmed).
#[test]
fn n1_bad_agent_names_are_refused_before_contact() {
    refused_each(&[
        (
            &["deploy", " lead", "--image", IMAGE],
            &["AGENT", "whitespace"],
        ),
        (&["deploy", "trail ", "--image", IMAGE], &["whitespace"]),
        (&["deploy", "", "--image", IMAGE], &["empty"]),
        (&["deploy", "bell\u{7}", "--image", IMAGE], &["control"]),
        (&["status", " lead"], &["whitespace"]),
        (&["undeploy", " lead"], &["whitespace"]),
        (&["gc", " lead"], &["whitespace"]),
    ]);
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
    refused_each(&[
        (
            &["deploy", "a", "--image", "nginx:latest"],
            &["nginx:latest", "sha256:"],
        ),
        (
            &["deploy", "a", "--image", "registry.example.com/x:v1.2.3"],
            &["sha256:"],
        ),
    ]);
}

/// I6/I7/I8: malformed digests and an empty image are refused.
#[test]
fn i7_malformed_digests_are_refused() {
    let upper = format!("x@sha256:{}", "A".repeat(64));
    let short = format!("x@sha256:{}", "a".repeat(63));
    refused_each(&[
        (&["deploy", "a", "--image", &upper], &[]),
        (&["deploy", "a", "--image", &short], &[]),
        (&["deploy", "a", "--image", "   "], &["image"]),
    ]);
}

/// V6: a non-POSIX env key is refused naming the key (never the value).
#[test]
fn v6_bad_env_key_is_refused_naming_it() {
    let run = refused(&deploy(&["--env", "foo.bar=hunter2-value"]), &["foo.bar"]);
    assert!(!run.stderr.contains("hunter2-value"));
    refused(&deploy(&["--env", "1LEADING=x"]), &["1LEADING"]);
}

/// V8: values over 1 MiB in total are refused stating the size and the limit.
#[test]
fn v8_environment_over_one_mib_is_refused() {
    let fx = Fixture::start();
    let file = fx.dir().join("big.env");
    std::fs::write(&file, format!("BIG={}\n", "x".repeat(1_048_576))).expect("write");
    let run = deploy_with_env_file(&fx, &file);
    assert!(run.stderr.contains("1048576"), "{}", run.stderr);
    fx.assert_no_requests("oversized env");
}

/// V5: a timeout over 600 s, of 0, or fractional is refused naming `--timeout`.
#[test]
fn v5_timeout_out_of_range_is_refused() {
    for value in ["601", "11m", "0", "1.5s"] {
        refused(&deploy(&["--timeout", value]), &["--timeout"]);
    }
}

/// V12: non-numeric `--run-as-user`, `--timeout soon` and an unknown flag are refused naming
/// the flag; in json mode stdout is one `{"error": …}` document.
#[test]
fn v12_malformed_flags_name_the_flag_also_in_json() {
    let cases: [(&[&str], &str); 3] = [
        (&["--run-as-user", "root"], "--run-as-user"),
        (&["--timeout", "soon"], "--timeout"),
        (&["--frobnicate"], "--frobnicate"),
    ];
    for (flags, flag) in cases {
        refused(&deploy(flags), &[flag]);
    }
    let json_first = |flags: &[&'static str]| [&["-o", "json"][..], &deploy(flags)].concat();
    for (args, flag) in [
        (json_first(&["--frobnicate"]), "--frobnicate"),
        (
            deploy(&["--run-as-user", "root", "--output=json"]),
            "--run-as-user",
        ),
        (json_first(&["--timeout", "soon"]), "--timeout"),
    ] {
        let fx = Fixture::start();
        let run = fx.apiary(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        let doc = run.json();
        let error = doc["error"].as_str().expect("string error");
        assert!(error.contains(flag), "{args:?}: {error}");
        fx.assert_no_requests(&format!("{args:?}"));
    }
}

/// V1 range rules: UID 0 and a negative GID are refused.
#[test]
fn run_as_ids_out_of_range_are_refused() {
    refused(&deploy(&["--run-as-user", "0"]), &["--run-as-user"]);
    refused(&deploy(&["--run-as-group=-1"]), &["--run-as-group"]);
}

/// V10: an unreadable env file is refused naming it; a malformed line names file and line but
/// not the content.
#[test]
fn v10_env_file_problems_are_refused() {
    let fx = Fixture::start();
    let run = deploy_with_env_file(&fx, &fx.dir().join("missing.env"));
    assert!(run.stderr.contains("missing.env"), "{}", run.stderr);
    let bad = fx.dir().join("bad.env");
    std::fs::write(&bad, "OK=1\nthis line is secret-ish content\n").expect("write");
    let run = deploy_with_env_file(&fx, &bad);
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
    let mut cmd = fx.command(&deploy(&["--env", "APIARY_TEST_UNSET_KEY"]));
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
    let cases: [(&[&str], &[&str]); 4] = [
        (&["--port", "0"], &["--port"]),
        (&["--port", "70000"], &["--port"]),
        (&[], &[]),
        (&["--port", "1", "--port-name", "g"], &[]),
    ];
    for (flags, needles) in cases {
        refused(
            &[&["seeds", "--selector", "app=x"][..], flags].concat(),
            needles,
        );
    }
}

/// seeds.md § The seeds subcommand, rule 2: a blank selector or port name is exit 2 before any
/// request.
#[test]
fn k39_blank_seeds_values_are_refused() {
    refused_each(&[
        (
            &["seeds", "--selector", "  ", "--port", "7000"],
            &["--selector"],
        ),
        (
            &["seeds", "--selector", "app=x", "--port-name", " "],
            &["--port-name"],
        ),
    ]);
}

/// `status --image` validates the configuration exactly as deploy does.
#[test]
fn status_with_a_tag_only_image_is_refused() {
    refused_each(&[
        (
            &["status", "a", "--image", "nginx:latest"],
            &["nginx:latest"],
        ),
        (
            &["status", "a", "--image", IMAGE, "--env", "bad-key=1"],
            &["bad-key"],
        ),
    ]);
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
        refused(&deploy(flags), needles);
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
            &deploy(&["--grace-period", value]),
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
        &deploy(&["--allow-egress", "10.0.0.0/8:443"]),
        &["10.0.0.0/8:443", "add --isolate"],
    );
}
