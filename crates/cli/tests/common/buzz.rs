//! The buzz provider's half of the CLI end-to-end fixture: runs the built
//! `buzz-backend-kubernetes` binary against a [`Fixture`] (one JSON request on stdin, the normal
//! `KUBECONFIG`, one JSON line back), and builds pods and Secrets **the way the original buzz
//! backend creates them**, from buzz-provider.md § 6's templates written out here as JSON and
//! § 7's create-intent fingerprint computed here with `sha2` from the canonical form, never by
//! apiary's builders, so an interop test compares apiary against the spec and not against itself.
//!
//! Test-only code: it decides nothing about apiary, only ever talks to loopback, and never prints
//! an environment value, the nsec or a token (assertion messages name keys, never values).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use apiary_envtest::Identity;
use apiary_envtest::proxy::FaultProxy;
use k8s_openapi::api::core::v1::{Pod, PodStatus, Secret};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::{BackendKind, Fixture, Run, script_for};

/// The NIP-19 test key every fixture of buzz-provider.md § 2.5 uses.
pub const NSEC: &str = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";

/// Its x-only public key (buzz-provider.md § 2.5).
pub const PUBKEY: &str = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e";

/// The pod name and `agent_id` of [`NSEC`]: `buzz-agent-` + 12 hex.
pub const POD: &str = "buzz-agent-7e7e9c42a91b";

/// The `buzz.block.xyz/agent-pubkey` label value: the first 32 hex of [`PUBKEY`].
pub const LABEL: &str = "7e7e9c42a91bfef19fa929e5fda1b72e";

/// The management marker's value.
pub const MANAGED_BY: &str = "buzz-backend-kubernetes";

/// The relay URL of every request here.
pub const RELAY_URL: &str = "wss://relay.buzz.example.test";

/// The owner attestation (an env value: it must never be printed).
pub const AUTH_TAG: &str = "auth-tag-value-0c1d9e77";

/// `launch.owner_pubkey` (64 × `b`; not a secret, but distinct from every image digest here).
pub const OWNER: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// A relay token in the user's env (the desktop redacts every `sprt_tok_…`).
pub const TOKEN: &str = "sprt_tok_f00dfeedcafe1234";

/// `launch.env` (tier 2).
pub const LAUNCH_ENV: [(&str, &str); 2] = [
    ("GOOSE_MODEL", "goose-model-value-77aa"),
    ("USER_KEY", TOKEN),
];

/// `launch.policy_env` (tier 1).
pub const POLICY_ENV: [(&str, &str); 2] = [
    ("BUZZ_ACP_AGENTS", "10"),
    ("BUZZ_ACP_DISPLAY_NAME", "display-name-value-5e5e"),
];

/// The Secret key the reconciler restamps per attempt with the generation.
pub const NONCE_KEY: &str = "BUZZ_MANAGED_AGENT_START_NONCE";

/// How far ahead the shifted server clock runs: past the 1200 s orphan age gate.
pub const PAST_THE_AGE_GATE: Duration = Duration::from_secs(1300);

/// `registry.example.com/team/<repo>@sha256:<64 × c>`: digest-pinned as the buzz image rules
/// want, the repository keyword choosing the kubelet's script as for apiary (`agent-crash`, …).
pub fn buzz_image(repo: &str) -> String {
    format!("registry.example.com/team/{repo}@sha256:{}", "c".repeat(64))
}

/// A `deploy` request as the desktop sends it (buzz-provider.md § 2.4, shaped like the full-launch
/// fixture): owner by `auth_tag` and `launch.owner_pubkey`, respond-to `owner-only`, a launch
/// with command, args, env and policy env, and fields the provider ignores.
pub fn deploy_request(namespace: &str, image: &str) -> Value {
    let env: serde_json::Map<String, Value> = LAUNCH_ENV
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect();
    let policy: serde_json::Map<String, Value> = POLICY_ENV
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect();
    json!({
        "op": "deploy",
        "request_id": "req-buzz-scenario",
        "agent": {
            "name": "scenario agent",
            "model": "ignored-model",
            "relay_url": RELAY_URL,
            "private_key_nsec": NSEC,
            "auth_tag": AUTH_TAG,
            "respond_to": "owner-only",
            "launch": {
                "command": "goose",
                "args": ["acp"],
                "env": env,
                "policy_env": policy,
                "owner_pubkey": OWNER,
            },
        },
        "provider_config": {"namespace": namespace, "image": image},
    })
}

/// The environment buzz-provider.md § 5.1 resolves for [`deploy_request`], with `nonce` as the
/// start nonce.
pub fn expected_env(nonce: &str) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = POLICY_ENV
        .iter()
        .chain(LAUNCH_ENV.iter())
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    for (k, v) in [
        ("BUZZ_RELAY_URL", RELAY_URL),
        ("BUZZ_PRIVATE_KEY", NSEC),
        ("NOSTR_PRIVATE_KEY", NSEC),
        ("BUZZ_AUTH_TAG", AUTH_TAG),
        ("BUZZ_ACP_AGENT_OWNER", OWNER),
        ("BUZZ_ACP_AGENT_COMMAND", "goose"),
        ("BUZZ_ACP_AGENT_ARGS", "acp"),
        ("BUZZ_ACP_MCP_COMMAND", "buzz-dev-mcp"),
        ("BUZZ_ACP_RESPOND_TO", "owner-only"),
        ("BUZZ_ACP_EXIT_AFTER_INACTIVITY", "7200"),
        (NONCE_KEY, nonce),
    ] {
        env.insert(k.to_owned(), v.to_owned());
    }
    env
}

/// Every value that must never appear in output, logs, labels or annotations: the nsec, the
/// auth tag, and each env value of four characters or more (what the desktop redacts).
pub fn secret_values() -> Vec<&'static str> {
    let mut values = vec![NSEC, AUTH_TAG];
    values.extend(
        POLICY_ENV
            .iter()
            .chain(LAUNCH_ENV.iter())
            .map(|(_, v)| *v)
            .filter(|v| v.len() >= 4),
    );
    values
}

/// The first secret marker found in `text`: an `nsec1` key, a `sprt_tok_` token or one of
/// [`secret_values`]; the marker's description, never the value.
pub fn leak_in(text: &str) -> Option<String> {
    if text.contains("nsec1") {
        return Some("an nsec1 key".to_owned());
    }
    if text.contains("sprt_tok_") {
        return Some("a sprt_tok_ token".to_owned());
    }
    secret_values()
        .iter()
        .position(|v| text.contains(v))
        .map(|i| format!("secret value #{i}"))
}

/// The pre-binding template of buzz-provider.md § 7 (the fields a request can change).
#[derive(Debug, Clone)]
pub struct Template {
    /// `namespace`.
    pub namespace: String,
    /// `image`, normalised.
    pub image: String,
    /// `cpu_request`.
    pub cpu_request: String,
    /// `memory_request`.
    pub memory_request: String,
    /// `cpu_limit`.
    pub cpu_limit: String,
    /// `memory_limit`.
    pub memory_limit: String,
    /// `service_account`.
    pub service_account: Option<String>,
    /// The env map's keys (sorted when hashed).
    pub env_keys: Vec<String>,
}

impl Template {
    /// Default resources, no service account, the keys of [`expected_env`].
    pub fn for_request(namespace: &str, image: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            image: image.to_owned(),
            cpu_request: "1".to_owned(),
            memory_request: "2Gi".to_owned(),
            cpu_limit: "2".to_owned(),
            memory_limit: "4Gi".to_owned(),
            service_account: None,
            env_keys: expected_env("00000000").into_keys().collect(),
        }
    }

    /// The canonical bytes of buzz-provider.md § 7: compact JSON, fields in the declared order,
    /// `null` for none.
    pub fn canonical(&self) -> String {
        let s = |v: &str| serde_json::to_string(v).expect("string");
        let mut keys = self.env_keys.clone();
        keys.sort();
        format!(
            "{{\"template_version\":1,\"namespace\":{},\"image\":{},\"cpu_request\":{},\
             \"memory_request\":{},\"cpu_limit\":{},\"memory_limit\":{},\"service_account\":{},\
             \"restart_policy\":\"Never\",\"termination_grace_period_seconds\":60,\
             \"env_keys\":{},\"env_from_secret\":\"<per-attempt-secret>\",\
             \"workspace_mount_path\":\"/home/agent\",\"run_as_user\":10001,\
             \"run_as_group\":10001}}",
            s(&self.namespace),
            s(&self.image),
            s(&self.cpu_request),
            s(&self.memory_request),
            s(&self.cpu_limit),
            s(&self.memory_limit),
            self.service_account
                .as_deref()
                .map_or_else(|| "null".to_owned(), s),
            serde_json::to_string(&keys).expect("keys"),
        )
    }

    /// The create-intent fingerprint: lowercase hex SHA-256 of [`Template::canonical`].
    pub fn intent(&self) -> String {
        format!("{:x}", Sha256::digest(self.canonical().as_bytes()))
    }
}

/// The three labels of every buzz pod and Secret (buzz-provider.md § 4.2).
pub fn labels() -> Value {
    json!({
        "buzz.block.xyz/agent-pubkey": LABEL,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "buzz.block.xyz/binding-version": "1",
    })
}

/// The pod the original backend creates (buzz-provider.md § 6.2), as JSON: for `template`,
/// referring to Secret `secret`, with the create-intent annotation `intent`.
pub fn original_pod_json(template: &Template, secret: &str, intent: &str) -> Value {
    let container = json!({
        "name": "agent",
        "image": template.image,
        "envFrom": [{"secretRef": {"name": secret, "optional": false}}],
        "resources": {
            "requests": {"cpu": template.cpu_request, "memory": template.memory_request},
            "limits": {"cpu": template.cpu_limit, "memory": template.memory_limit},
        },
        "volumeMounts": [{"name": "workspace", "mountPath": "/home/agent"}],
        "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
    });
    let mut spec = json!({
        "containers": [container],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 60,
        "automountServiceAccountToken": false,
        "securityContext": {
            "runAsNonRoot": true,
            "runAsUser": 10001,
            "runAsGroup": 10001,
            "fsGroup": 10001,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumes": [{"name": "workspace", "emptyDir": {}}],
    });
    if let Some(account) = &template.service_account {
        spec["serviceAccountName"] = Value::from(account.as_str());
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": POD,
            "namespace": template.namespace,
            "labels": labels(),
            "annotations": {
                "buzz.block.xyz/agent-pubkey-full": PUBKEY,
                "buzz.block.xyz/create-intent": intent,
                "buzz.block.xyz/image": template.image,
            },
        },
        "spec": spec,
    })
}

/// [`original_pod_json`] as a typed pod.
pub fn original_pod(template: &Template, secret: &str, intent: &str) -> Pod {
    serde_json::from_value(original_pod_json(template, secret, intent)).expect("pod json")
}

/// The Secret name of attempt `generation` (8 hex).
pub fn secret_name(generation: &str) -> String {
    format!("{POD}-{generation}")
}

/// The Secret the original backend creates for one attempt (buzz-provider.md § 6.1), as JSON.
pub fn original_secret_json(namespace: &str, generation: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(generation),
            "namespace": namespace,
            "labels": labels(),
            "annotations": {"buzz.block.xyz/agent-pubkey-full": PUBKEY},
        },
        "stringData": expected_env(generation),
        "immutable": true,
    })
}

/// [`original_secret_json`] as a typed Secret.
pub fn original_secret(namespace: &str, generation: &str) -> Secret {
    serde_json::from_value(original_secret_json(namespace, generation)).expect("secret json")
}

/// The Secret a pod's `agent` container takes its environment from.
pub fn env_from_secret(pod: &Pod) -> Option<String> {
    pod.spec
        .as_ref()?
        .containers
        .first()?
        .env_from
        .as_ref()?
        .first()?
        .secret_ref
        .as_ref()
        .map(|r| r.name.clone())
}

/// A Secret's data, decoded (the server keeps `stringData` as `data`).
pub fn secret_env(secret: &Secret) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned()))
        .collect();
    if let Some(string_data) = &secret.string_data {
        env.extend(string_data.clone());
    }
    env
}

/// Assert that every member of `expected` is in `actual` with the same value: objects by key
/// (extra keys in `actual` allowed: server defaults), arrays element by element with the same
/// length, scalars equal. `path` names the place in the failure message.
pub fn assert_contains(actual: &Value, expected: &Value, path: &str) {
    match (expected, actual) {
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                let here = format!("{path}.{key}");
                let got = have.get(key).unwrap_or_else(|| panic!("{here} is missing"));
                assert_contains(got, value, &here);
            }
        }
        (Value::Array(want), Value::Array(have)) => {
            assert_eq!(have.len(), want.len(), "{path}: length");
            for (i, (w, h)) in want.iter().zip(have).enumerate() {
                assert_contains(h, w, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(actual, expected, "{path}"),
    }
}

/// Assert that `pod`, as read from the server, is exactly buzz-provider.md § 6.2's pod for
/// `template` and Secret `secret` with intent `intent`: the template's every field, exactly the
/// three labels and three annotations, and none of the fields the backend never sets.
pub fn assert_spec_pod(pod: &Pod, template: &Template, secret: &str, intent: &str) {
    let actual = serde_json::to_value(pod).expect("pod value");
    let expected = original_pod_json(template, secret, intent);
    assert_eq!(
        actual["metadata"]["labels"], expected["metadata"]["labels"],
        "exactly the three labels"
    );
    // The server may add annotations under its own domain (kube-apiserver 1.20 mirrors
    // `seccompProfile` into `seccomp.security.alpha.kubernetes.io/pod`); apart from those,
    // exactly the backend's three.
    let ours: serde_json::Map<String, Value> = actual["metadata"]["annotations"]
        .as_object()
        .expect("annotations")
        .iter()
        .filter(|(k, _)| {
            !k.split_once('/')
                .is_some_and(|(prefix, _)| prefix.ends_with("kubernetes.io"))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(
        Value::Object(ours),
        expected["metadata"]["annotations"],
        "exactly the three annotations"
    );
    assert_contains(&actual["spec"], &expected["spec"], "spec");
    assert!(
        actual["metadata"]["ownerReferences"].is_null(),
        "no ownerReferences"
    );
    let spec = &actual["spec"];
    // The DefaultTolerationSeconds admission plugin of a real server adds the two
    // `node.kubernetes.io/{not-ready,unreachable}` NoExecute tolerations; nothing else may be.
    for toleration in spec["tolerations"].as_array().into_iter().flatten() {
        let key = toleration["key"].as_str().unwrap_or_default();
        assert!(
            matches!(
                key,
                "node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable"
            ) && toleration["effect"] == "NoExecute",
            "spec.tolerations is never set: {toleration}"
        );
    }
    for never in [
        "nodeSelector",
        "hostPID",
        "hostNetwork",
        "hostIPC",
        "activeDeadlineSeconds",
    ] {
        assert!(spec[never].is_null(), "spec.{never} is never set");
    }
    let container = &spec["containers"][0];
    for never in [
        "command",
        "args",
        "env",
        "ports",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
    ] {
        assert!(container[never].is_null(), "container.{never} is never set");
    }
    let security = &container["securityContext"];
    assert!(security["privileged"].is_null(), "never privileged");
    assert!(
        security["readOnlyRootFilesystem"].is_null(),
        "readOnlyRootFilesystem deliberately unset"
    );
    assert!(
        spec["volumes"][0]["hostPath"].is_null(),
        "the workspace is an emptyDir"
    );
}

/// Assert that `secret`, as read from the server, is buzz-provider.md § 6.1's Secret: its name
/// `buzz-agent-<12>-<8 hex>`, exactly the labels and the one annotation, immutable, Opaque, no
/// ownerReferences, and exactly § 5.1's environment with the nonce equal to the name's suffix.
/// Returns the generation. Failures name keys, never values.
pub fn assert_spec_secret(secret: &Secret) -> String {
    let name = secret.metadata.name.clone().expect("named");
    let generation = name
        .strip_prefix(&format!("{POD}-"))
        .unwrap_or_else(|| panic!("{name} is {POD}-<generation>"))
        .to_owned();
    assert!(
        generation.len() == 8
            && generation
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
        "the generation of {name} is 8 lowercase hex"
    );
    let actual = serde_json::to_value(&secret.metadata).expect("metadata");
    let expected = original_secret_json("", &generation);
    assert_eq!(
        actual["labels"], expected["metadata"]["labels"],
        "{name}: labels"
    );
    assert_eq!(
        actual["annotations"], expected["metadata"]["annotations"],
        "{name}: annotations"
    );
    assert!(actual["ownerReferences"].is_null(), "{name}: no owners");
    assert_eq!(secret.immutable, Some(true), "{name} is immutable");
    assert_eq!(secret.type_.as_deref(), Some("Opaque"), "{name}: type");
    let env = secret_env(secret);
    let want = expected_env(&generation);
    assert_eq!(
        env.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{name}: exactly § 5.1's keys"
    );
    let differing: Vec<&String> = want
        .iter()
        .filter(|(k, v)| env.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    assert!(
        differing.is_empty(),
        "{name}: values differ for keys {differing:?}"
    );
    generation
}

/// Assert that no label or annotation of any pod or Secret in the namespace, and nothing in any
/// pod at all, carries a secret marker ([`leak_in`]).
pub fn assert_no_leak_on_server(fx: &Fixture) {
    for pod in fx.pods() {
        let text = serde_json::to_string(&pod).expect("pod json");
        if let Some(what) = leak_in(&text) {
            panic!("pod {:?} carries {what}", pod.metadata.name);
        }
    }
    for secret in fx.secrets() {
        let meta = json!({
            "labels": secret.metadata.labels,
            "annotations": secret.metadata.annotations,
        })
        .to_string();
        if let Some(what) = leak_in(&meta) {
            panic!(
                "Secret {:?} labels/annotations carry {what}",
                secret.metadata.name
            );
        }
    }
}

/// One finished provider run.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Exit code, stdout and stderr.
    pub run: Run,
}

impl Answer {
    /// The one JSON line on stdout.
    pub fn json(&self) -> Value {
        self.run.json()
    }

    /// Assert exit 0 and `{"ok":true,"agent_id":<POD>}`.
    pub fn assert_ok(&self) {
        assert_eq!(self.run.code, 0, "{}", self.describe());
        let doc = self.json();
        assert_eq!(doc["ok"], true, "{}", self.describe());
        assert_eq!(doc["agent_id"], POD, "{}", self.describe());
    }

    /// Assert exit 0 and `{"ok":false,"error":…}`; the error.
    pub fn error(&self) -> String {
        assert_eq!(self.run.code, 0, "{}", self.describe());
        let doc = self.json();
        assert_eq!(doc["ok"], false, "{}", self.describe());
        doc["error"].as_str().expect("error string").to_owned()
    }

    /// stdout and stderr for a failure message, unless they carry a secret (then only that).
    pub fn describe(&self) -> String {
        let all = format!("{}{}", self.run.stdout, self.run.stderr);
        match leak_in(&all) {
            Some(what) => format!("exit {}; the output carries {what}", self.run.code),
            None => format!(
                "exit {}; stdout {:?}; stderr {:?}",
                self.run.code, self.run.stdout, self.run.stderr
            ),
        }
    }
}

/// A provider command on `kubeconfig`: a clean environment (no `RUST_LOG`, no in-cluster
/// variables), `HOME` and the working directory in the fixture's temporary directory.
pub fn provider_command(home: &Path, kubeconfig: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_buzz-backend-kubernetes"));
    cmd.env_remove("RUST_LOG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home)
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Start `cmd` and write `request` to its stdin, then close it.
pub fn spawn(mut cmd: Command, request: &Value) -> Child {
    let mut child = cmd.spawn().expect("the provider binary starts");
    let mut stdin = child.stdin.take().expect("stdin piped");
    // A provider that exits without reading its request is caught by the answer's checks.
    if let Err(e) = stdin.write_all(request.to_string().as_bytes()) {
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe,
            "request written: {e}"
        );
    }
    drop(stdin);
    child
}

/// Wait for a spawned provider.
pub fn finish(child: Child) -> Answer {
    Answer {
        run: Run::from_output(child.wait_with_output().expect("the provider finishes")),
    }
}

impl Fixture {
    /// A provider command on the fixture's kubeconfig.
    pub fn provider(&self) -> Command {
        provider_command(self.dir(), &self.kubeconfig)
    }

    /// Run the provider once with `request`.
    pub fn provide(&self, request: &Value) -> Answer {
        finish(spawn(self.provider(), request))
    }

    /// Deploy [`deploy_request`] with `image` in the fixture's namespace.
    pub fn buzz_deploy(&self, image: &str) -> Answer {
        self.provide(&deploy_request(self.namespace(), image))
    }

    /// Run the provider with the server's `Date` clock [`PAST_THE_AGE_GATE`] ahead, through a
    /// second fault proxy whose only change is that shift (real server only: the simulator's
    /// ages are set by inserting objects with old `creationTimestamp`s instead).
    ///
    /// # Panics
    /// On the simulator.
    pub fn provide_with_clock_ahead(&self, request: &Value) -> Answer {
        assert_eq!(self.kind(), BackendKind::Real, "real server only");
        let plane = apiary_envtest::shared().expect("the control plane runs");
        let proxy = self.runtime.block_on(async {
            FaultProxy::start(
                &plane.server_url(),
                plane.ca_pem(),
                plane.token(Identity::Admin),
            )
            .await
            .expect("the shifted proxy starts")
        });
        proxy.set_date_shift(PAST_THE_AGE_GATE);
        let kubeconfig = self.dir().join("kubeconfig-clock-ahead");
        proxy
            .kubeconfig(&kubeconfig, self.namespace())
            .expect("kubeconfig written");
        let answer = finish(spawn(provider_command(self.dir(), &kubeconfig), request));
        let _guard = self.runtime.enter();
        drop(proxy);
        answer
    }

    /// Put objects shaped by the original backend in the fixture's namespace, behind the
    /// request log's back: each Secret (on the simulator created `age` ago by its
    /// `creationTimestamp`; the real server stamps its own), then the pod, which the kubelet runs
    /// by its image's script. The request log is cleared afterwards.
    pub fn insert_original(&self, secrets: &[Secret], pod: Option<Pod>, age: Duration) {
        match self.kind() {
            BackendKind::Sim => {
                let created =
                    self.sim().now() - jiff::SignedDuration::try_from(age).expect("age fits");
                self.with_model(|m| {
                    for secret in secrets {
                        let mut secret = secret.clone();
                        secret.metadata.creation_timestamp = Some(
                            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(created),
                        );
                        m.insert_secret(secret).expect("secret inserted");
                    }
                    if let Some(pod) = pod {
                        let script = script_for(&pod);
                        m.insert_pod_with_script(pod, script).expect("pod inserted");
                    }
                });
            }
            BackendKind::Real => {
                let plane = apiary_envtest::shared().expect("the control plane runs");
                let namespace = self.namespace().to_owned();
                self.runtime.block_on(async {
                    let admin = plane.client(Identity::Admin);
                    let secrets_api: Api<Secret> = Api::namespaced(admin.clone(), &namespace);
                    for secret in secrets {
                        secrets_api
                            .create(&PostParams::default(), secret)
                            .await
                            .expect("create secret");
                    }
                    if let Some(pod) = pod {
                        Api::<Pod>::namespaced(admin, &namespace)
                            .create(&PostParams::default(), &pod)
                            .await
                            .expect("create pod");
                    }
                });
            }
        }
        self.clear_requests();
    }

    /// The uid of pod `name`.
    ///
    /// # Panics
    /// When it does not exist.
    pub fn pod_uid(&self, name: &str) -> String {
        self.pod(name)
            .and_then(|p| p.metadata.uid)
            .unwrap_or_else(|| panic!("pod {name} exists"))
    }

    /// The sorted names of the Secrets in the namespace.
    pub fn sorted_secret_names(&self) -> Vec<String> {
        let mut names = self.secret_names();
        names.sort();
        names
    }
}

/// A pod status with the `agent` container waiting `ContainerCreating` (never started, may still
/// start: deploy.md § Startup states, NeverStartedRecoverable).
pub fn creating_status(image: &str) -> PodStatus {
    agent_status(
        image,
        "Pending",
        json!({"waiting": {"reason": "ContainerCreating"}}),
    )
}

/// A pod status with the `agent` container running.
pub fn running_status(image: &str) -> PodStatus {
    agent_status(
        image,
        "Running",
        json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}}),
    )
}

fn agent_status(image: &str, phase: &str, state: Value) -> PodStatus {
    let running = state.get("running").is_some();
    serde_json::from_value(json!({
        "phase": phase,
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [{
            "name": "agent",
            "image": image,
            "imageID": "",
            "ready": running,
            "started": running,
            "restartCount": 0,
            "state": state,
        }],
    }))
    .expect("status json")
}

impl Fixture {
    /// Replace pod `name`'s status behind the request log's back (the simulator's test hook; on
    /// the real server a write through the status subresource). For pods no kubelet runs
    /// ([`Fixture::insert_inert_pod`]).
    pub fn set_pod_status(&self, name: &str, status: PodStatus) {
        match self.kind() {
            BackendKind::Sim => {
                let namespace = self.namespace().to_owned();
                self.with_model(|m| m.set_pod_status(&namespace, name, status))
                    .expect("status set");
            }
            BackendKind::Real => {
                let plane = apiary_envtest::shared().expect("the control plane runs");
                let namespace = self.namespace().to_owned();
                self.runtime.block_on(async {
                    let api: Api<Pod> = Api::namespaced(plane.client(Identity::Admin), &namespace);
                    let mut pod = api.get(name).await.expect("get pod");
                    pod.status = Some(status);
                    api.replace_status(name, &PostParams::default(), &pod)
                        .await
                        .expect("write status");
                });
            }
        }
    }
}
