//! The provider wire protocol against the built `buzz-backend-kubernetes` binary
//! (buzz-provider.md § 2.1, § 2.5): the golden fixtures under `fixtures/provider-wire/` compared
//! as JSON values, the process contract (one line, exit codes, arguments, stdin failure), the
//! release smoke test against an unreachable kubeconfig, the PATH rule for credential plugins,
//! and the absence of the nsec, env values and `sprt_tok_…` tokens at every `RUST_LOG` level.
//!
//! Test-only. Each run gets a clean environment (`HOME` and `KUBECONFIG` in a temporary
//! directory); the only network use is a connection attempt to 127.0.0.1:9, which refuses.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_buzz-backend-kubernetes");
const NSEC: &str = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/provider-wire")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).expect("fixture is JSON")
}

/// A clean environment for one run: `HOME` is the temporary directory and `KUBECONFIG` names a
/// file in it (absent unless a test writes it).
struct Env {
    dir: tempfile::TempDir,
    rust_log: Option<&'static str>,
    path: String,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().expect("tempdir"),
            rust_log: None,
            path: "/usr/bin:/bin".to_owned(),
        }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// A kubeconfig whose only cluster is `server` (and whose user is `user_yaml`).
    fn write_kubeconfig(&self, server: &str, user_yaml: &str) {
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    \
             server: {server}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             users:\n- name: u\n  user:\n{user_yaml}\n"
        );
        std::fs::write(self.kubeconfig(), text).expect("write kubeconfig");
    }

    fn run(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env_clear()
            .env("HOME", self.dir.path())
            .env("KUBECONFIG", self.kubeconfig())
            .env("PATH", &self.path)
            .current_dir(self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(level) = self.rust_log {
            command.env("RUST_LOG", level);
        }
        let mut child = command.spawn().expect("spawn the provider");
        let mut input = child.stdin.take().expect("stdin");
        // A provider that answers from its arguments alone may exit before it reads stdin;
        // the pipe is then closed, and that is not a failure of the process contract.
        match input.write_all(stdin) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(e) => panic!("write the request: {e}"),
        }
        drop(input);
        child.wait_with_output().expect("wait")
    }
}

/// Exactly one line on stdout, as JSON; exit 0.
fn one_response(output: &Output) -> Value {
    let stdout = String::from_utf8(output.stdout.clone()).expect("utf-8 stdout");
    assert_eq!(
        output.status.code(),
        Some(0),
        "exit; stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.ends_with('\n'), "{stdout:?}");
    assert_eq!(stdout.matches('\n').count(), 1, "{stdout:?}");
    serde_json::from_str(&stdout).expect("stdout is one JSON object")
}

fn error_of(response: &Value) -> &str {
    assert_eq!(response["ok"], false, "{response}");
    assert_eq!(response.as_object().map(|o| o.len()), Some(2), "{response}");
    response["error"].as_str().expect("error string")
}

/// The values that must never be printed, from a request.
fn secrets_of(request: &Value) -> Vec<String> {
    let mut secrets = vec![NSEC.to_owned(), "nsec1".to_owned(), "sprt_tok_".to_owned()];
    let agent = &request["agent"];
    let mut maps = vec![
        &agent["env_vars"],
        &agent["launch"]["env"],
        &agent["launch"]["policy_env"],
    ];
    maps.retain(|map| map.is_object());
    for map in maps {
        for value in map.as_object().into_iter().flat_map(|m| m.values()) {
            // Flag-like values ("10", "true", "auto") occur naturally in any log text; every
            // value of eight or more characters is distinctive enough to mean a leak.
            if let Some(value) = value.as_str().filter(|v| v.len() >= 8) {
                secrets.push(value.to_owned());
            }
        }
    }
    if let Some(tag) = agent["auth_tag"].as_str() {
        secrets.push(tag.to_owned());
    }
    secrets
}

fn assert_no_secrets(output: &Output, secrets: &[String]) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for secret in secrets {
        assert!(
            !stdout.contains(secret.as_str()),
            "stdout holds a secret ({} chars)",
            secret.len()
        );
        assert!(
            !stderr.contains(secret.as_str()),
            "stderr holds a secret ({} chars)",
            secret.len()
        );
    }
}

/// `info.request.json`: checked on fields (the namespace default is random per call).
#[test]
fn info_fixture_is_answered_on_fields() {
    let env = Env::new();
    let first = one_response(&env.run(&[], fixture("info.request.json").as_bytes()));
    assert_eq!(first["ok"], true);
    assert_eq!(first["name"], "kubernetes");
    assert_eq!(first["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(first["protocol_version"], 1);
    assert_eq!(
        first["description"],
        "Runs agents as pods in a Kubernetes cluster"
    );
    let schema = &first["config_schema"];
    assert_eq!(schema["required"], json!(["namespace", "image"]));
    let properties = schema["properties"].as_object().expect("properties");
    for key in [
        "context",
        "namespace",
        "image",
        "cpu_request",
        "memory_request",
        "cpu_limit",
        "memory_limit",
        "inactivity_seconds",
        "service_account",
        "pod_options",
    ] {
        assert!(properties.contains_key(key), "{key}");
    }
    assert_eq!(properties.len(), 10);
    let namespace = properties["namespace"]["default"]
        .as_str()
        .expect("default");
    let suffix = namespace.strip_prefix("buzz-agents-").expect("prefix");
    assert!(
        suffix.len() == 6
            && suffix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    );
    assert!(
        !String::from_utf8_lossy(
            &env.run(&[], b"{\"op\":\"info\",\"request_id\":\"req-1\"}")
                .stdout
        )
        .contains("req-1")
    );
}

/// The refusal fixtures: each response equals its file as a JSON value.
#[test]
fn refusal_fixtures_match_as_json_values() {
    for name in [
        "deploy-relay-mesh",
        "deploy-relay-mesh-padded",
        "deploy-tag-image",
        "deploy-no-owner",
    ] {
        let env = Env::new();
        let request = fixture(&format!("{name}.request.json"));
        let output = env.run(&[], request.as_bytes());
        let response = one_response(&output);
        assert_eq!(
            response,
            fixture_json(&format!("{name}.response.json")),
            "{name}"
        );
        assert_no_secrets(
            &output,
            &secrets_of(&fixture_json(&format!("{name}.request.json"))),
        );
    }
}

/// `deploy-full-launch.request.json` passes every local rule and reaches the cluster stage:
/// with no kubeconfig (and no in-cluster fallback) the error names the kubeconfig.
#[test]
fn full_launch_reaches_the_cluster_stage() {
    let env = Env::new();
    let request = fixture("deploy-full-launch.request.json");
    let output = env.run(&[], request.as_bytes());
    let response = one_response(&output);
    let error = error_of(&response);
    assert!(error.contains("kubeconfig"), "{error}");
    assert_no_secrets(
        &output,
        &secrets_of(&fixture_json("deploy-full-launch.request.json")),
    );
}

/// The release smoke test (buzz-provider.md § 2.1): a kubeconfig pointing at `http://127.0.0.1:9` gives exit 0,
/// exactly one stdout line with `ok:false` and a non-empty error, and no panic or
/// crypto-provider text anywhere.
#[test]
fn release_smoke_unreachable_kubeconfig() {
    let env = Env::new();
    env.write_kubeconfig("http://127.0.0.1:9", "    token: smoke-test-token-value");
    let output = env.run(&[], fixture("deploy-full-launch.request.json").as_bytes());
    let response = one_response(&output);
    assert!(!error_of(&response).is_empty());
    for stream in [&output.stdout, &output.stderr] {
        let text = String::from_utf8_lossy(stream).to_lowercase();
        assert!(!text.contains("panic"), "{text}");
        assert!(!text.contains("crypto provider"), "{text}");
    }
    let mut secrets = secrets_of(&fixture_json("deploy-full-launch.request.json"));
    secrets.push("smoke-test-token-value".to_owned());
    assert_no_secrets(&output, &secrets);
}

/// No nsec, env value or `sprt_tok_…` in stdout or stderr at any `RUST_LOG` level, on the
/// local refusals, the cluster-stage error and the unreachable server.
#[test]
fn no_secret_in_output_at_any_log_level() {
    let mut request = fixture_json("deploy-full-launch.request.json");
    request["agent"]["launch"]["env"]["RELAY_TOKEN"] = json!("sprt_tok_0123456789abcdef");
    request["agent"]["auth_tag"] = json!("auth-tag-secret-value");
    let mut refused = request.clone();
    refused["agent"]["launch"]["env"]["BAD-KEY"] = json!("bad-key-secret-value");
    let secrets = {
        let mut s = secrets_of(&request);
        s.push("bad-key-secret-value".to_owned());
        s
    };
    // Every combination at once: the unreachable server's runs spend their time waiting on the
    // retry budget, not the CPU.
    let mut runs = Vec::new();
    for level in [
        None,
        Some("warn"),
        Some("info"),
        Some("debug"),
        Some("trace"),
    ] {
        for (reachable, body) in [(false, &request), (true, &request), (false, &refused)] {
            let body = body.to_string();
            runs.push(std::thread::spawn(move || {
                let mut env = Env::new();
                env.rust_log = level;
                if reachable {
                    env.write_kubeconfig("http://127.0.0.1:9", "    token: t");
                }
                env.run(&[], body.as_bytes())
            }));
        }
    }
    for run in runs {
        let output = run.join().expect("run");
        let response = one_response(&output);
        assert_eq!(response["ok"], false);
        assert_no_secrets(&output, &secrets);
    }
}

/// Exec credential plugins run with the rewritten PATH: a plugin installed only in
/// `$HOME/.local/bin` is found although the inherited PATH lacks it (buzz-provider.md § 3.5).
#[test]
fn credential_plugin_is_found_through_home_local_bin() {
    let env = Env::new();
    let bin = env.dir.path().join(".local/bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let marker = env.dir.path().join("plugin-ran");
    let plugin = bin.join("apiary-buzz-test-credential-plugin");
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\ntouch '{}'\nprintf '%s' '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\
             \"kind\":\"ExecCredential\",\"status\":{{\"token\":\"plugin-token\"}}}}'\n",
            marker.display()
        ),
    )
    .expect("write plugin");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    env.write_kubeconfig(
        "http://127.0.0.1:9",
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      \
         command: apiary-buzz-test-credential-plugin\n      interactiveMode: Never",
    );
    let output = env.run(&[], fixture("deploy-full-launch.request.json").as_bytes());
    let response = one_response(&output);
    let error = error_of(&response);
    assert!(!error.contains("was not found on PATH"), "{error}");
    assert!(marker.exists(), "the plugin never ran; error: {error}");
}

/// Arguments (newer revisions): `--check-identity` is answered in-band as unsupported, any
/// other vector is "unsupported provider arguments"; both exit 0 with one line.
#[test]
fn argument_vectors_are_answered_in_band() {
    let env = Env::new();
    let check = one_response(&env.run(&["--check-identity"], b"{\"op\":\"info\"}"));
    assert!(error_of(&check).contains("--check-identity"));
    for args in [&["--help"][..], &["info"], &["--check-identity", "extra"]] {
        let response = one_response(&env.run(args, b"{\"op\":\"info\"}"));
        assert_eq!(
            response,
            json!({"ok":false,"error":"unsupported provider arguments"})
        );
    }
}

/// Malformed input still produces one response and exit 0; only an unreadable stdin exits 1,
/// with the message on stderr and nothing on stdout.
#[test]
fn malformed_input_and_unreadable_stdin() {
    let env = Env::new();
    for input in [&b""[..], b"{", b"[1]", b"{\"op\":\"undeploy\"}"] {
        let response = one_response(&env.run(&[], input));
        assert_eq!(response["ok"], false);
    }
    let empty = one_response(&env.run(&[], b""));
    assert!(error_of(&empty).starts_with("request is not valid JSON: "));
    let unknown = one_response(&env.run(&[], b"{\"op\":\"undeploy\"}"));
    assert!(error_of(&unknown).starts_with("could not understand the request: "));
    let output = env.run(&[], b"\xff\xfe{\"op\":\"info\"}");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("could not read the request from stdin: "),
        "{stderr}"
    );
}
