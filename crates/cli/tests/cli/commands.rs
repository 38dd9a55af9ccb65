//! End-to-end: each deploy-side command's success and failure paths through the built binary,
//! asserting on exit codes, stdout/stderr contract shapes, the server's request log and its
//! objects. Every scenario that needs no simulator-only control runs twice (README.md § Testing):
//! `<name>::sim` against the loopback simulator and `<name>::real` against a real `kube-apiserver`
//! with the fake kubelet (skipped without `KUBEBUILDER_ASSETS`). The rest fail before any contact,
//! or play with the simulator's `Date` header, and run on the simulator only.

use crate::common::{Fixture, IMAGE, NAMESPACE, container_state, image, on_both_backends};
use apiary_apiserver_sim::{Resource, Verb};

const AGENT: &str = "Research Bot #1";
const POD: &str = "apiary-research-bot-1-72bea12366a3";

on_both_backends! {
    /// deploy text mode: stdout is the pod name alone; the pod runs.
    fn deploy_prints_the_pod_name(fx) {
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, format!("{POD}\n"));
        assert_eq!(fx.pod_names(), [POD]);
        assert_eq!(fx.secret_names().len(), 1);
    }

    /// deploy json mode: exactly the contract document; a second deploy of a started pod writes
    /// nothing (R2: no-op means zero mutation).
    fn deploy_json_and_noop_redeploy_writes_nothing(fx) {
        let run = fx.apiary(&["-o", "json", "deploy", AGENT, "--image", IMAGE]);
        assert_eq!(run.code, 0, "{run:?}");
        let doc = run.json();
        assert_eq!(doc["agent"], AGENT);
        assert_eq!(
            doc["agent_id"],
            "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98"
        );
        assert_eq!(doc["namespace"], fx.namespace());
        assert_eq!(doc["pod"], POD);
        assert_eq!(doc["state"], "started");
        assert_eq!(doc.as_object().map(|o| o.len()), Some(5));
        fx.clear_requests();
        let again = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--output", "json"]);
        assert_eq!(again.code, 0, "{again:?}");
        assert_eq!(again.json(), doc);
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    }

    /// R3 via the CLI: a started pod with another configuration is returned, with a warning on
    /// stderr that it keeps its old configuration; nothing is deleted.
    fn r3_stale_intent_warns_and_keeps_the_pod(fx) {
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE]).code, 0);
        fx.clear_requests();
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--cpu-limit", "3"]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, format!("{POD}\n"));
        assert!(run.stderr.contains("old configuration"), "{}", run.stderr);
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    }

    /// A crashing image: exit 1, the exit code in the message, not retried: exactly one Secret.
    fn crash_is_reported_with_exit_code_and_one_secret(fx) {
        let run = fx.apiary(&["deploy", "crasher", "--image", &image("agent-crash")]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stdout.is_empty());
        assert!(run.stderr.contains("exited with code 1"), "{}", run.stderr);
        assert!(run.stderr.contains("kubectl logs"), "{}", run.stderr);
        // deploy.md § What a failure leaves: what is left, and the command that removes it.
        assert!(
            run.stderr.contains("Left in the cluster: pod apiary-crasher-"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("`apiary undeploy crasher` removes them"), "{}", run.stderr);
        assert_eq!(fx.secret_names().len(), 1, "{:?}", fx.secret_names());
        let creates = fx
            .requests()
            .iter()
            .filter(|r| r.is(Verb::Create, Resource::Pods))
            .count();
        assert_eq!(creates, 1, "not retried");
    }

    /// The same crash in json mode: exit 1 and one `{"error": …}` document on stdout.
    fn crash_in_json_mode_is_one_error_document(fx) {
        let run = fx.apiary(&[
            "-o",
            "json",
            "deploy",
            "crasher",
            "--image",
            &image("agent-crash"),
        ]);
        assert_eq!(run.code, 1, "{run:?}");
        let error = run.json()["error"]
            .as_str()
            .expect("error string")
            .to_owned();
        assert!(error.contains("exited with code 1"), "{error}");
        assert_eq!(run.json()["left"]["state"], "kept", "{run:?}");
    }

    /// A pull failure that will not heal: exit 1 at once (E3), nothing deleted.
    fn pull_failure_is_reported_without_delete(fx) {
        let run = fx.apiary(&[
            "deploy",
            "puller",
            "--image",
            &image("agent-pullfail-manifest"),
        ]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains("has no image at"), "{}", run.stderr);
        assert!(
            !fx.requests().iter().any(|r| r.method == "DELETE"),
            "{:?}",
            fx.mutations()
        );
        assert_eq!(fx.pod_names().len(), 1);
    }

    /// R31/E11: the namespace is missing and its creation forbidden → exit 1 naming the literal
    /// `kubectl create namespace <ns>`; nothing written. (Real server: RBAC's own 403, for the
    /// unprivileged user bound to everything else.)
    fn r31_forbidden_namespace_names_the_kubectl_command(mut fx) {
        fx.deny(Verb::Create, Some(Resource::Namespaces));
        let fresh = fx.absent_namespace();
        let hint = format!("kubectl create namespace {fresh}");
        let run = fx.apiary(&["-n", &fresh, "deploy", AGENT, "--image", IMAGE]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains(&hint), "{}", run.stderr);
        let json = fx.apiary(&["-n", &fresh, "-o", "json", "deploy", AGENT, "--image", IMAGE]);
        assert_eq!(json.code, 1);
        assert!(
            json.json()["error"]
                .as_str()
                .is_some_and(|e| e.contains(&hint))
        );
        assert!(
            !fx.requests()
                .iter()
                .any(|r| r.is(Verb::Create, Resource::Secrets) || r.is(Verb::Create, Resource::Pods)),
            "nothing written"
        );
    }

    /// A deploy whose pod create is refused (403) names the refused verb and resource (the
    /// server's message) and the manifest that grants it (deploy.md § RBAC).
    fn forbidden_pod_create_names_the_deployer_role(mut fx) {
        fx.deny(Verb::Create, Some(Resource::Pods));
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--timeout", "60"]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains("rbac/apiary-deployer.yaml"), "{}", run.stderr);
        assert!(run.stderr.contains("create"), "{}", run.stderr);
    }

    /// status and undeploy whose pod read is refused (403) name the deployer role as deploy does.
    fn forbidden_pod_read_names_the_deployer_role(mut fx) {
        fx.deny(Verb::Get, Some(Resource::Pods));
        for args in [&["status", AGENT][..], &["undeploy", AGENT][..]] {
            let run = fx.apiary(args);
            assert_eq!(run.code, 1, "{args:?}: {run:?}");
            assert!(
                run.stderr.contains("rbac/apiary-deployer.yaml"),
                "{args:?}: {}",
                run.stderr
            );
        }
    }

    /// Eight concurrent `apiary deploy` processes of one agent: one pod, the same output from all.
    fn eight_concurrent_deploys_make_one_pod_and_agree(fx) {
        let children: Vec<_> = (0..8)
            .map(|_| {
                fx.command(&["deploy", AGENT, "--image", IMAGE, "--timeout", "120"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        let outputs: Vec<_> = children
            .into_iter()
            .map(|c| c.wait_with_output().expect("wait"))
            .collect();
        for out in &outputs {
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{POD}\n"));
        }
        assert_eq!(fx.pod_names(), [POD]);
        let pod_creates = fx
            .requests()
            .iter()
            .filter(|r| r.is(Verb::Create, Resource::Pods) && r.status == Some(201))
            .count();
        assert_eq!(pod_creates, 1);
    }

    /// S1: `status` reports every state with its contract word, in both modes.
    fn s1_status_reports_every_state(fx) {
        /// How the kubelet leaves the pod once the state is reached.
        type Settled = fn(&k8s_openapi::api::core::v1::Pod) -> bool;
        /// Agent, image (`None`: no pod), with its Secret, deletion-marked, state word, settled.
        type Case = (&'static str, Option<String>, bool, bool, &'static str, Settled);
        let cases: [Case; 7] = [
            ("absent-agent", None, true, false, "absent", |_| true),
            (
                "starting-agent",
                Some(image("agent-never-starts")),
                true,
                false,
                "starting",
                |p| container_state(p) == "waiting:ContainerCreating",
            ),
            (
                "started-agent",
                Some(IMAGE.to_owned()),
                true,
                false,
                "started",
                |p| container_state(p) == "running",
            ),
            (
                "terminated-agent",
                Some(image("agent-crash")),
                true,
                false,
                "terminated",
                |p| container_state(p) == "terminated",
            ),
            (
                "broken-agent",
                Some(IMAGE.to_owned()),
                false,
                false,
                "broken",
                |p| container_state(p) == "waiting:CreateContainerConfigError",
            ),
            (
                "pull-agent",
                Some(image("agent-pullfail-unauthorized")),
                true,
                false,
                "pull-failing",
                |p| {
                    let state = container_state(p);
                    state == "waiting:ErrImagePull" || state == "waiting:ImagePullBackOff"
                },
            ),
            (
                "deleting-agent",
                Some(IMAGE.to_owned()),
                true,
                true,
                "deleting",
                |p| p.metadata.deletion_timestamp.is_some(),
            ),
        ];
        let mut pods = Vec::new();
        for (agent, image, with_secret, deleting, _, _) in &cases {
            if let Some(image) = image {
                let attempt = fx.insert_attempt(agent, image, *with_secret, *deleting);
                pods.push(attempt.pod.metadata.name.clone().expect("named pod"));
            }
        }
        for ((_, _, _, _, state, settled), pod) in cases.iter().skip(1).zip(&pods) {
            fx.wait_pod(pod, state, settled);
        }
        fx.clear_requests();
        for (agent, _, _, _, state, _) in &cases {
            let text = fx.apiary(&["status", agent]);
            assert_eq!(text.code, 0, "{agent}: {text:?}");
            assert!(
                text.stdout.starts_with(&format!("state: {state}\n")),
                "{agent}: {}",
                text.stdout
            );
            let json = fx.apiary(&["-o", "json", "status", agent]);
            assert_eq!(json.code, 0);
            let doc = json.json();
            assert_eq!(doc["state"], *state, "{agent}: {doc}");
            assert!(doc["intent_matches"].is_null());
        }
        assert!(fx.mutations().is_empty(), "status is read-only");
    }

    /// S1: a foreign pod under the name is `foreign`, with no condition and no Secret.
    fn s1_status_foreign_reports_nothing_of_it(fx) {
        let attempt = fx.insert_attempt("someone-else", IMAGE, true, false);
        // Put another agent's pod under this agent's pod name.
        fx.insert_foreign_pod(&attempt.pod, POD);
        let doc = fx.apiary(&["-o", "json", "status", AGENT]).json();
        assert_eq!(doc["state"], "foreign");
        assert!(doc["condition"].is_null());
        assert!(doc["secret"].is_null());
    }

    /// S2: status with an identical configuration → intent matches; a changed image → differs.
    fn s2_status_compares_the_intent(fx) {
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE]).code, 0);
        let same = fx
            .apiary(&["-o", "json", "status", AGENT, "--image", IMAGE])
            .json();
        assert_eq!(same["intent_matches"], true);
        assert_eq!(same["secret"]["exists"], true);
        let text = fx.apiary(&["status", AGENT, "--image", &image("other")]);
        assert!(text.stdout.contains("intent: differs"), "{}", text.stdout);
    }

    /// S3: undeploy deletes the pod (waiting for it) and its Secret; text and json shapes.
    fn s3_undeploy_deletes_pod_and_secret(fx) {
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE]).code, 0);
        let secret = fx.secret_names().remove(0);
        let run = fx.apiary(&["undeploy", AGENT]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(
            run.stdout,
            format!("pod/{POD} deleted\nsecret/{secret} deleted\n")
        );
        assert!(fx.pod_names().is_empty());
        assert!(fx.secret_names().is_empty());
        // S4: nothing left → success with empty output; json still one document.
        let again = fx.apiary(&["undeploy", AGENT]);
        assert_eq!(again.code, 0);
        assert_eq!(again.stdout, "");
        let doc = fx.apiary(&["-o", "json", "undeploy", AGENT]).json();
        assert!(doc["pod"].is_null());
        assert_eq!(doc["secrets"], serde_json::json!([]));
        let absent = fx.apiary(&["status", AGENT]);
        assert!(absent.stdout.starts_with("state: absent\n"));
    }

    /// S6: undeploy --no-wait issues the delete, keeps the Secret and reports it.
    fn s6_undeploy_no_wait_keeps_the_secret(fx) {
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE]).code, 0);
        let secret = fx.secret_names().remove(0);
        let doc = fx
            .apiary(&["-o", "json", "undeploy", AGENT, "--no-wait"])
            .json();
        assert_eq!(doc["pod"], POD);
        assert_eq!(doc["pod_deleted"], true);
        assert_eq!(doc["waited"], false);
        assert_eq!(doc["kept_secrets"], serde_json::json!([secret]));
    }

    /// deploy.md § Grace periods: `deploy --grace-period` is the pod's termination grace (and a
    /// change of intent), and `undeploy --grace-period` shortens the one delete it sends.
    fn grace_period_sets_the_pods_grace_and_one_deletes(fx) {
        let grace_of = |fx: &Fixture| {
            fx.pod(POD)
                .and_then(|p| p.spec)
                .and_then(|s| s.termination_grace_period_seconds)
        };
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE]).code, 0);
        assert_eq!(grace_of(&fx), Some(60), "the default");
        let status = fx.apiary(&["status", AGENT, "--image", IMAGE, "--grace-period", "7s"]);
        assert!(status.stdout.contains("intent: differs"), "{}", status.stdout);
        let replaced = fx.apiary(&[
            "deploy", AGENT, "--image", IMAGE, "--grace-period", "7s", "--replace",
        ]);
        assert_eq!(replaced.code, 0, "{replaced:?}");
        assert_eq!(grace_of(&fx), Some(7));
        fx.clear_requests();
        let doc = fx
            .apiary(&["-o", "json", "undeploy", AGENT, "--no-wait", "--grace-period", "3"])
            .json();
        assert_eq!(doc["pod_deleted"], true, "{doc}");
        let deletes: Vec<_> = fx
            .requests()
            .into_iter()
            .filter(|r| r.is(Verb::Delete, Resource::Pods))
            .filter_map(|r| r.body_json())
            .collect();
        assert_eq!(deletes.len(), 1, "{deletes:?}");
        assert_eq!(deletes[0]["gracePeriodSeconds"], 3, "{}", deletes[0]);
        assert!(deletes[0]["preconditions"]["uid"].is_string(), "still fenced");
    }

    /// S5: undeploy of a foreign pod is refused (E8) and touches nothing.
    fn s5_undeploy_foreign_pod_is_refused_and_untouched(fx) {
        let attempt = fx.insert_attempt("someone-else", IMAGE, true, false);
        fx.insert_foreign_pod(&attempt.pod, POD);
        let run = fx.apiary(&["undeploy", AGENT]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(
            run.stderr.contains("not managed by apiary"),
            "{}",
            run.stderr
        );
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
        assert!(fx.pod_names().contains(&POD.to_owned()));
    }

    /// S8: gc --dry-run prints the plan and deletes nothing; gc then collects it (both modes).
    fn s8_gc_dry_run_changes_nothing_then_gc_collects(fx) {
        let crash = fx.apiary(&["deploy", AGENT, "--image", &image("agent-crash")]);
        assert_eq!(crash.code, 1);
        let secret = fx.secret_names().remove(0);
        fx.clear_requests();
        let plan = fx.apiary(&["gc", AGENT, "--dry-run"]);
        assert_eq!(plan.code, 0, "{plan:?}");
        assert_eq!(plan.stdout, format!("pod/{POD}\nsecret/{secret}\n"));
        let doc = fx.apiary(&["-o", "json", "gc", AGENT, "--dry-run"]).json();
        assert_eq!(doc["dry_run"], true);
        assert_eq!(doc["pods"], serde_json::json!([POD]));
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
        assert_eq!(fx.pod_names(), [POD]);
        let done = fx.apiary(&["-o", "json", "gc", AGENT]).json();
        assert_eq!(done["dry_run"], false);
        assert_eq!(done["orphan_sweep"], "ran");
        assert_eq!(done["pods"], serde_json::json!([POD]));
        assert_eq!(done["secrets"], serde_json::json!([secret]));
        assert!(fx.secret_names().is_empty());
        let nothing = fx.apiary(&["gc", AGENT]);
        assert_eq!(nothing.code, 0);
        assert_eq!(nothing.stdout, "");
    }

    /// V7: an authoritative key in user input is dropped with a warning naming the key (never
    /// the value); apiary's own value is what the Secret holds.
    fn v7_authoritative_keys_are_replaced_with_a_warning(fx) {
        let run = fx.apiary(&[
            "deploy",
            AGENT,
            "--image",
            IMAGE,
            "--env",
            "APIARY_AGENT_ID=forged-value-123",
        ]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(run.stderr.contains("APIARY_AGENT_ID"), "{}", run.stderr);
        assert!(!run.stderr.contains("forged-value-123"));
        let secret = fx.secret_names().remove(0);
        let stored = fx.secret(&secret);
        let value = stored
            .data
            .as_ref()
            .and_then(|d| d.get("APIARY_AGENT_ID"))
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
            .or_else(|| {
                stored
                    .string_data
                    .as_ref()
                    .and_then(|d| d.get("APIARY_AGENT_ID").cloned())
            });
        assert_eq!(
            value.as_deref(),
            Some("72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98")
        );
    }
}

// Simulator only: these fail before any request (so no server can change them), or need the
// simulator's `Date` header control.

/// V4: no `-n` and no namespace on the context → exit 2 before any request; never `default`.
#[test]
fn v4_no_namespace_is_refused_before_contact() {
    let fx = Fixture::start();
    let kubeconfig = fx.kubeconfig_without_namespace();
    for args in [
        &["deploy", AGENT, "--image", IMAGE][..],
        &["status", AGENT][..],
        &["undeploy", AGENT][..],
        &["gc", AGENT][..],
    ] {
        let run = crate::common::run_with_kubeconfig(fx.dir(), &kubeconfig, args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stderr.contains("-n"), "{}", run.stderr);
    }
    fx.assert_no_requests("no namespace");
}

/// An unreadable kubeconfig is exit 2 (E13) naming the path, before any request.
#[test]
fn unreadable_kubeconfig_is_refused() {
    let fx = Fixture::start();
    let missing = fx.dir().join("nope.kubeconfig");
    let run = crate::common::run_with_kubeconfig(
        fx.dir(),
        &missing,
        &["deploy", AGENT, "--image", IMAGE],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("nope.kubeconfig"), "{}", run.stderr);
    fx.assert_no_requests("unreadable kubeconfig");
}

/// A10: a kubeconfig pointing at a closed port → exit 1 with one error naming the connection
/// failure; no panic, no crypto-provider text.
#[test]
fn a10_unreachable_apiserver_is_exit_1_without_panic() {
    let dir = tempfile::tempdir().expect("dir");
    let kubeconfig = dir.path().join("kc");
    std::fs::write(
        &kubeconfig,
        apiary_apiserver_sim::kubeconfig_yaml("http://127.0.0.1:9", NAMESPACE),
    )
    .expect("write");
    let run = crate::common::run_with_kubeconfig(
        dir.path(),
        &kubeconfig,
        &["deploy", AGENT, "--image", IMAGE, "--timeout", "5"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!run.stderr.contains("CryptoProvider"), "{}", run.stderr);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].starts_with("error: "), "{}", run.stderr);
    assert!(lines[0].contains("onnect"), "{}", run.stderr);
}

/// S9: without a server clock (no `Date` header) the orphan sweep is reported skipped — in the
/// json document and on stderr — and terminated pods are still collected.
#[test]
fn s9_gc_without_server_clock_reports_the_sweep_skipped() {
    let fx = Fixture::start();
    assert_eq!(
        fx.apiary(&["deploy", AGENT, "--image", &image("agent-crash")])
            .code,
        1
    );
    fx.sim()
        .faults()
        .set_date_mode(apiary_apiserver_sim::DateMode::Omit);
    let run = fx.apiary(&["-o", "json", "gc", AGENT]);
    assert_eq!(run.code, 0, "{run:?}");
    let doc = run.json();
    assert_eq!(doc["orphan_sweep"], "skipped");
    assert_eq!(doc["pods"], serde_json::json!([POD]));
    assert!(
        run.stderr.contains("orphan sweep skipped"),
        "{}",
        run.stderr
    );
}

/// `completions` prints a script in text mode and `{"script": …}` in json mode, with no
/// cluster involved.
#[test]
fn completions_in_both_modes() {
    let fx = Fixture::start();
    for shell in ["bash", "zsh", "fish"] {
        let run = fx.apiary(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {run:?}");
        assert!(run.stdout.contains("deploy"), "{shell}");
        let doc = fx.apiary(&["-o", "json", "completions", shell]).json();
        assert!(
            doc["script"]
                .as_str()
                .is_some_and(|s| s.contains("undeploy"))
        );
    }
    fx.assert_no_requests("completions");
}

/// E13: a kubeconfig whose exec credential plugin is not installed is refused (exit 2) naming
/// the context and the missing command, and saying to install it or fix PATH.
#[test]
fn e13_missing_credential_plugin_names_context_and_command() {
    let dir = tempfile::tempdir().expect("dir");
    let kubeconfig = dir.path().join("kc");
    std::fs::write(&kubeconfig, crate::common::MISSING_PLUGIN_KUBECONFIG).expect("write");
    let run = crate::common::run_with_kubeconfig(
        dir.path(),
        &kubeconfig,
        &["deploy", AGENT, "--image", IMAGE],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("team-ctx"), "{}", run.stderr);
    assert!(
        run.stderr.contains("apiary-test-no-such-plugin"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("PATH"), "{}", run.stderr);
}

/// How each shell's script registers the command it completes, by name.
fn registers(shell: &str, script: &str, name: &str) -> bool {
    match shell {
        "bash" => script.lines().any(|line| {
            let line = line.trim();
            line.starts_with(&format!("complete -F _{name} "))
                && line.ends_with(&format!(" {name}"))
        }),
        "zsh" => script.starts_with(&format!("#compdef {name}\n")),
        "fish" => script.contains(&format!("complete -c {name} ")),
        other => panic!("no such shell {other}"),
    }
}

/// `apiary completions <shell>` completes the command `apiary` in bash, zsh and fish, and says
/// the same when run as `kubectl-apiary` (kubectl's plugin name): the script is for the
/// `apiary` binary on PATH, and naming it `kubectl apiary` would register a command with a
/// space in its name that no shell could complete.
#[test]
fn completion_scripts_complete_apiary_under_either_name() {
    let fx = Fixture::start();
    let link = fx.dir().join("kubectl-apiary");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_apiary"), &link).expect("symlink");
    for shell in ["bash", "zsh", "fish"] {
        let run = fx.apiary(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {run:?}");
        assert!(
            registers(shell, &run.stdout, "apiary"),
            "{shell}: {}",
            run.stdout
        );
        let mut cmd = std::process::Command::new(&link);
        cmd.args(["completions", shell]);
        let plugin = crate::common::run(cmd);
        assert_eq!(plugin.code, 0, "{shell}: {plugin:?}");
        assert_eq!(
            plugin.stdout, run.stdout,
            "{shell}: the same script under either name"
        );
        assert!(
            !plugin.stdout.contains("kubectl"),
            "{shell}: {}",
            plugin.stdout
        );
    }
    fx.assert_no_requests("completions");
}

/// `--timeout` of status, undeploy, gc, list and renew is checked like deploy's before any
/// request: exit 2 naming the flag.
#[test]
fn bad_timeouts_are_refused_before_contact() {
    let fx = Fixture::start();
    for bad in ["0", "601", "1.5s", "soon"] {
        for args in [
            &["status", AGENT][..],
            &["undeploy", AGENT][..],
            &["gc", AGENT][..],
            &["gc", "--all"][..],
            &["list"][..],
            &["renew", AGENT, "--ttl", "1h"][..],
        ] {
            let run = fx.apiary(&[args, &["--timeout", bad][..]].concat());
            assert_eq!(run.code, 2, "{args:?} {bad}: {run:?}");
            assert!(run.stderr.contains("--timeout"), "{}", run.stderr);
        }
    }
    fx.assert_no_requests("bad timeouts");
}

on_both_backends! {
    /// deploy.md § Naming what differs: `status` with a configuration and the no-op warning of
    /// `deploy` name the settings that differ by flag (text and JSON), and never a value of the
    /// environment.
    fn a_differing_intent_names_its_settings(fx) {
        assert_eq!(
            fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--env", "MODE=fast"]).code,
            0
        );
        let run = fx.apiary(&[
            "status", AGENT, "--image", IMAGE, "--cpu-limit", "3", "--env", "MODE=slow",
            "--env", "EXTRA=secret-extra-value",
        ]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            run.stdout.contains(
                "intent: differs (--cpu-limit, the environment's keys (--env, --env-file))"
            ),
            "{}",
            run.stdout
        );
        let doc = fx
            .apiary(&["-o", "json", "status", AGENT, "--image", IMAGE, "--cpu-limit", "3"])
            .json();
        assert_eq!(doc["intent_differs"], serde_json::json!(["--cpu-limit", "the environment's keys (--env, --env-file)"]), "{doc}");
        let kept = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--cpu-limit", "3", "--env", "MODE=fast"]);
        assert_eq!(kept.code, 0, "{kept:?}");
        assert!(kept.stderr.contains("(--cpu-limit)"), "{}", kept.stderr);
        for out in [&run.stdout, &run.stderr, &kept.stderr] {
            assert!(!out.contains("secret-extra-value") && !out.contains("fast"), "{out}");
        }
    }
}
