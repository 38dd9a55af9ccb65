//! End-to-end secret redaction (deploy.md § Environment, rule 7; CLI contract output rule 4):
//! a distinctive env value, given through every input path (`--env KEY=VALUE`, `--env KEY`,
//! `--env-file`), never appears in anything apiary prints at the highest verbosity (`-vvv`, and
//! `RUST_LOG=trace`), on success or failure paths (deploy, status, list, logs, renew, gc and
//! undeploy), nor in the server's record of the pod nor any pod request it received. The
//! scenario runs against the simulator (`::sim`) and against a real `kube-apiserver` (`::real`,
//! through the envtest proxy's request log; skipped without `KUBEBUILDER_ASSETS`).

use crate::common::{IMAGE, Run, base64, image, on_both_backends};

const CANARY_FLAG: &str = "canary-flag-4f9d2b7e1a";
const CANARY_ENV: &str = "canary-inherited-8c3e5a0f6d";
const CANARY_FILE: &str = "canary-file-2b6f8d1c9e";

fn assert_clean(what: &str, run: &Run) {
    for canary in [CANARY_FLAG, CANARY_ENV, CANARY_FILE] {
        for needle in [canary.to_owned(), base64(canary.as_bytes())] {
            assert!(
                !run.stdout.contains(&needle),
                "{what}: stdout leaks {needle}"
            );
            assert!(
                !run.stderr.contains(&needle),
                "{what}: stderr leaks {needle}"
            );
        }
    }
}

on_both_backends! {
    /// Every command, at `-vvv` and with `RUST_LOG=trace`, in both output modes: no value anywhere.
    fn v11_env_values_never_reach_any_output_or_the_pod(fx) {
        let env_file = fx.dir().join("agent.env");
        std::fs::write(&env_file, format!("FILE_SECRET=\"{CANARY_FILE}\"\n")).expect("write");
        let env_file = env_file.to_str().expect("utf-8").to_owned();
        let flag = format!("FLAG_SECRET={CANARY_FLAG}");
        let env_args = |img: &str| -> Vec<String> {
            [
                "--image",
                img,
                "--env",
                &flag,
                "--env",
                "INHERITED_SECRET",
                "--env-file",
                &env_file,
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
        };
        let run_all = |verbosity: &[&str], rust_log: Option<&str>| {
            let crash_image = image("agent-crash");
            let mut scripts: Vec<(String, Vec<String>)> = Vec::new();
            let mut with = |name: &str, head: &[&str], tail: Vec<String>| {
                let mut args: Vec<String> = verbosity.iter().map(|s| (*s).to_owned()).collect();
                args.extend(head.iter().map(|s| (*s).to_owned()));
                args.extend(tail);
                scripts.push((name.to_owned(), args));
            };
            with("deploy", &["deploy", "keeper"], env_args(IMAGE));
            with(
                "redeploy json",
                &["-o", "json", "deploy", "keeper"],
                env_args(IMAGE),
            );
            with("status", &["status", "keeper"], env_args(IMAGE));
            with(
                "status json",
                &["-o", "json", "status", "keeper"],
                env_args(IMAGE),
            );
            with("crash", &["deploy", "crasher"], env_args(&crash_image));
            with(
                "crash json",
                &["-o", "json", "deploy", "crasher"],
                env_args(&crash_image),
            );
            with("bad key", &["deploy", "keeper"], {
                let mut a = env_args(IMAGE);
                a.extend(["--env".to_owned(), format!("bad.key={CANARY_FLAG}")]);
                a
            });
            // The day-two commands read the same objects: rows, log lines, the renewed expiry.
            with("list", &["list", "--all"], vec![]);
            with("list json", &["-o", "json", "list", "--all"], vec![]);
            with("logs", &["logs", "keeper"], vec![]);
            with("logs json", &["-o", "json", "logs", "keeper"], vec![]);
            with("renew", &["renew", "keeper", "--ttl", "1h"], vec![]);
            with(
                "renew json",
                &["-o", "json", "renew", "keeper", "--ttl", "2h"],
                vec![],
            );
            with("gc dry", &["gc", "crasher", "--dry-run"], vec![]);
            if rust_log.is_some() {
                // Last pass: collect and remove, after the pod records were checked below.
                with("gc", &["-o", "json", "gc", "crasher"], vec![]);
                with("undeploy", &["undeploy", "keeper"], vec![]);
            }
            for (name, args) in scripts {
                let mut cmd = fx.command(&args);
                cmd.env("INHERITED_SECRET", CANARY_ENV);
                if let Some(filter) = rust_log {
                    cmd.env("RUST_LOG", filter);
                }
                let run = crate::common::run(cmd);
                assert!(
                    run.code == 0 || run.code == 1 || run.code == 2,
                    "{name}: {run:?}"
                );
                assert_clean(&format!("{name} {verbosity:?} {rust_log:?}"), &run);
            }
        };
        run_all(&["-vvv"], None);

        // The server's record of every pod, and every pod request body, is value-free.
        let pods = fx.pods();
        assert!(!pods.is_empty(), "the deploys created pods");
        for pod in pods {
            let recorded = serde_json::to_string(&pod).expect("json");
            for canary in [CANARY_FLAG, CANARY_ENV, CANARY_FILE] {
                assert!(!recorded.contains(canary), "pod record leaks {canary}");
            }
        }
        for request in fx.requests() {
            if request.path.contains("/pods") {
                for canary in [CANARY_FLAG, CANARY_ENV, CANARY_FILE] {
                    assert!(!request.body.contains(canary), "pod request leaks {canary}");
                }
            }
        }
        run_all(&[], Some("trace"));
        assert!(fx.pod_names().is_empty(), "gc and undeploy ran");
    }
}

/// The encoder used above is right (so the base64 check can fail).
#[test]
fn base64_encoder_matches_known_vectors() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foobar"), "Zm9vYmFy");
}

/// The demo's own env value (`GREETING`, set in `demo.rs`) appears nowhere in its `-vvv`
/// output, although the demo deploys it through the real Secret path. (Only in a build with the
/// default `demo` feature: without it there is no `demo` subcommand.)
#[cfg(feature = "demo")]
#[test]
fn demo_env_value_never_reaches_the_output() {
    const DEMO_VALUE: &str = "hello from the demo";
    let home = tempfile::tempdir().expect("dir");
    let mut cmd = crate::common::bare_command(home.path());
    cmd.args(["-vvv", "demo"]);
    let run = crate::common::run(cmd);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.lines().count() > 50, "-vvv really logged");
    for needle in [DEMO_VALUE.to_owned(), base64(DEMO_VALUE.as_bytes())] {
        assert!(!run.stdout.contains(&needle), "stdout leaks {needle}");
        assert!(!run.stderr.contains(&needle), "stderr leaks {needle}");
    }
}
