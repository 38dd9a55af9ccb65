//! The differential harness shared by the sequences of `differential.rs` and its child
//! modules: a [`Side`] is one backend (the simulator, or the real `kube-apiserver` of
//! `apiary-envtest` with an optional fake kubelet) with a client, the sequence's namespace and a
//! transcript; [`differential`] runs a sequence on both and asserts the transcripts agree step by
//! step.
//!
//! What is recorded (see `Side::shape`): HTTP status; for a `Status` body `kind`, `apiVersion`,
//! `status`, `message`, `reason`, `details` and `code`; for an object its `kind`, `apiVersion`,
//! name, namespace, the presence of `uid`, `resourceVersion` and `deletionTimestamp`,
//! `deletionGracePeriodSeconds` and `status.phase`; for a list its item names, the presence of
//! `continue` and `resourceVersion` and `remainingItemCount`; for a watch the event types and the
//! shapes of their objects. Values that differ by nature (uids, resourceVersions) are replaced by
//! names the sequence gives them before messages are compared. A sequence may also record an
//! entry of its own ([`Side::record`]), such as the fields of a pod it set.
//!
//! Layer: integration-test support. It talks only to loopback; the waits are bounds against
//! hangs, never performance assertions.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use apiary_apiserver_sim::{SimOptions, Simulator};
use apiary_envtest::kubelet::{Kubelet, Options as KubeletOptions};
use apiary_envtest::{ControlPlane, Identity, TestNamespace};
use http_body_util::BodyExt as _;
use kube::client::Body;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};

/// Model seconds per real second on both sides (the simulator's clock and the fake kubelet's):
/// a 60 s grace period lasts 6 s, long enough to observe the deletion mark on either.
const TIME_SCALE: f64 = 10.0;

/// A bound against hangs while waiting for a pod to reach a phase; not a performance assertion.
const WAIT_BOUND: Duration = Duration::from_secs(60);

/// An image the kubelet scripts (both of them) start after the start delay.
pub(crate) const RUNNING_IMAGE: &str = "registry.example/agent:1";

/// An image both kubelets leave unscheduled (`PodScheduled=False`, `Unschedulable`).
pub(crate) const UNSCHEDULABLE_IMAGE: &str = "registry.example/unschedulable:1";

/// A uid no object has.
pub(crate) const STALE_UID: &str = "00000000-0000-0000-0000-000000000000";

/// What a side runs against, kept alive for the sequence.
enum Backend {
    Sim(Simulator),
    Real {
        plane: &'static ControlPlane,
        _namespace: TestNamespace,
        kubelet: Option<Kubelet>,
    },
}

/// One backend with a client, the sequence's namespace and the transcript being recorded.
pub(crate) struct Side {
    pub(crate) label: &'static str,
    backend: Backend,
    client: Client,
    pub(crate) ns: String,
    aliases: std::sync::Mutex<Vec<(String, String)>>,
    transcript: std::sync::Mutex<Vec<Value>>,
}

/// A sequence: what it sends, written once.
pub(crate) type Sequence = for<'a> fn(&'a Side) -> Pin<Box<dyn Future<Output = ()> + 'a>>;

/// A raw answer: HTTP status and the JSON body (`Null` when empty or not JSON).
pub(crate) struct Answer {
    pub(crate) code: u16,
    pub(crate) body: Value,
}

impl Side {
    async fn simulator(ns: &str) -> Self {
        let sim = Simulator::start(SimOptions::default().with_time_scale(TIME_SCALE))
            .await
            .expect("the simulator starts");
        sim.ensure_namespace(ns);
        let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig_yaml(ns)).expect("kubeconfig");
        let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("kubeconfig is usable");
        config.default_retry = false;
        let client = Client::try_from(config).expect("client builds");
        Self::new("simulator", Backend::Sim(sim), client, ns)
    }

    fn real(plane: &'static ControlPlane, namespace: TestNamespace, kubelet: bool) -> Self {
        let ns = namespace.name().to_owned();
        let kubelet = kubelet.then(|| {
            let options = KubeletOptions::in_namespace(&ns).with_time_scale(TIME_SCALE);
            Kubelet::start(plane.config(Identity::Admin), options)
                .expect("the fake kubelet registers its node")
        });
        let mut config = plane.config(Identity::Admin);
        config.default_retry = false;
        let client = Client::try_from(config).expect("client builds");
        let backend = Backend::Real {
            plane,
            _namespace: namespace,
            kubelet,
        };
        Self::new("real server", backend, client, &ns)
    }

    fn new(label: &'static str, backend: Backend, client: Client, ns: &str) -> Self {
        Self {
            label,
            backend,
            client,
            ns: ns.to_owned(),
            aliases: std::sync::Mutex::new(Vec::new()),
            transcript: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// From now on, `value` reads as `name` in recorded messages and details.
    pub(crate) fn alias(&self, name: &str, value: &str) {
        self.aliases
            .lock()
            .expect("aliases")
            .push((value.to_owned(), name.to_owned()));
    }

    /// Records `entry`, as given, as the answer of the step `what`.
    pub(crate) fn record(&self, what: &str, entry: Value) {
        self.transcript
            .lock()
            .expect("transcript")
            .push(json!({"step": what, "answer": entry}));
    }

    fn transcript(&self) -> Vec<Value> {
        self.transcript.lock().expect("transcript").clone()
    }

    /// Whether this side is the simulator: for the steps where the model deliberately differs
    /// from the real server, each side's own literal answer is asserted (the README row that
    /// decides the difference is named where the step is written).
    pub(crate) fn is_simulator(&self) -> bool {
        matches!(self.backend, Backend::Sim(_))
    }

    /// Creates a cluster-scoped object of a kind the simulator does not serve (a PriorityClass,
    /// a RuntimeClass) on the real server, where admission looks it up; on the simulator it does
    /// nothing, since the model treats every well-formed class name as an existing class
    /// (cluster-model README § Pod validation against the real apiserver). An object left by an
    /// earlier sequence on the shared control plane (`409 AlreadyExists`) is fine.
    pub(crate) async fn ensure_on_real_server(&self, path: &str, body: &Value) {
        if self.is_simulator() {
            return;
        }
        let answer = self.send("POST", path, Some(body)).await;
        assert!(
            matches!(answer.code, 201 | 409),
            "{}: POST {path}: {} {}",
            self.label,
            answer.code,
            answer.body
        );
    }

    /// `/api/v1/namespaces/<ns>/<rest>`.
    pub(crate) fn path(&self, rest: &str) -> String {
        format!("/api/v1/namespaces/{}/{rest}", self.ns)
    }

    /// Sends one request without recording it.
    pub(crate) async fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(Body::from(bytes))
            .expect("request builds");
        let response = self
            .client
            .send(request)
            .await
            .unwrap_or_else(|e| panic!("{}: {method} {path}: {e}", self.label));
        let code = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_else(|e| panic!("{}: {method} {path} body: {e}", self.label));
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer { code, body }
    }

    /// Sends one request and records its shape under `what`.
    pub(crate) async fn call(
        &self,
        what: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Answer {
        let answer = self.send(method, path, body).await;
        let entry = json!({"code": answer.code, "body": self.shape(&answer.body)});
        self.record(what, entry);
        answer
    }

    /// Opens a watch (`path` carries `watch=true` and a `timeoutSeconds`), reads it until the
    /// server ends it or `max_events` arrived, and records the code and every event's shape.
    pub(crate) async fn watch(&self, what: &str, path: &str, max_events: usize) -> Vec<Value> {
        let request = http::Request::builder()
            .method("GET")
            .uri(path)
            .header(http::header::ACCEPT, "application/json")
            .body(Body::empty())
            .expect("request builds");
        let response = self
            .client
            .send(request)
            .await
            .unwrap_or_else(|e| panic!("{}: watch {path}: {e}", self.label));
        let code = response.status().as_u16();
        let mut body = response.into_body();
        let mut buffer = Vec::new();
        let mut events = Vec::new();
        let deadline = Instant::now() + WAIT_BOUND;
        while events.len() < max_events {
            let left = deadline.saturating_duration_since(Instant::now());
            let frame = match tokio::time::timeout(left, body.frame()).await {
                Ok(Some(Ok(frame))) => frame,
                Ok(None) => break,
                Ok(Some(Err(e))) => panic!("{}: watch {path} broke: {e}", self.label),
                Err(_) => panic!(
                    "{}: watch {path} still open after {WAIT_BOUND:?}",
                    self.label
                ),
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buffer.extend_from_slice(&data);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let event: Value = serde_json::from_slice(&line)
                    .unwrap_or_else(|e| panic!("{}: watch line is not JSON ({e})", self.label));
                events.push(event);
            }
        }
        if events.len() < max_events && !buffer.is_empty() {
            events.push(serde_json::from_slice(&buffer).unwrap_or(Value::Null));
        }
        let shaped: Vec<Value> = events
            .iter()
            .map(|e| {
                let mut object = self.shape(&e["object"]);
                if e["type"] == "ERROR" && object["code"] == 410 {
                    // The wording depends on the apiserver's watch cache: with it (the default,
                    // and the simulator) `too old resource version: X (Y)`; without it (envtest,
                    // so that etcd compaction is visible) `The resourceVersion for the provided
                    // watch is too old.`. apiary reads only the code and reason.
                    object["message"] = json!("<too old>");
                }
                json!({"type": e["type"], "object": object})
            })
            .collect();
        self.record(what, json!({"code": code, "events": shaped}));
        events
    }

    /// Compacts the backend's history at its current resourceVersion (etcd compaction on the
    /// real server, the model's event log in the simulator).
    pub(crate) fn compact(&self) {
        match &self.backend {
            Backend::Sim(sim) => sim.with_model(|m| m.compact()),
            Backend::Real { plane, .. } => {
                tokio::task::block_in_place(|| plane.compact_etcd()).expect("etcd compacts");
            }
        }
    }

    /// Stops the kubelet stand-in from acting further. The simulator's kubelet stops scripting a
    /// pod once it is deletion-marked, while the fake kubelet writes its containers `terminated`
    /// (and the pod `Failed`) at once, as a real kubelet does; sequences that compare the
    /// apiserver's view of a marked pod freeze the fake one first.
    pub(crate) fn pause_kubelet(&self) {
        if let Backend::Real {
            kubelet: Some(kubelet),
            ..
        } = &self.backend
        {
            tokio::task::block_in_place(|| kubelet.pause());
        }
    }

    /// Sends one request and records its shape, with the `message` cut after `prefix` when it
    /// starts with it: for answers whose tail is the Go runtime's own wording (a JSON decoder
    /// error, with its path through the object and the bytes around the fault), which the
    /// simulator does not imitate.
    pub(crate) async fn call_up_to(
        &self,
        what: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
        prefix: &str,
    ) -> Answer {
        let answer = self.send(method, path, body).await;
        let mut shape = self.shape(&answer.body);
        if let Some(message) = shape["message"].as_str()
            && message.starts_with(prefix)
        {
            shape["message"] = json!(format!("{prefix}…"));
        }
        self.record(what, json!({"code": answer.code, "body": shape}));
        answer
    }

    /// Polls a pod until `ready` holds for it (not recorded) and returns it.
    pub(crate) async fn wait_pod(&self, name: &str, ready: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT_BOUND;
        loop {
            let answer = self
                .send("GET", &self.path(&format!("pods/{name}")), None)
                .await;
            if answer.code == 200 && ready(&answer.body) {
                return answer.body;
            }
            assert!(
                Instant::now() < deadline,
                "{}: pod {name} not ready after {WAIT_BOUND:?}: {}",
                self.label,
                answer.body
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Replaces every alias in a string, token by token (uids and resourceVersions are whole
    /// tokens in the apiserver's messages).
    fn unalias(&self, text: &str) -> String {
        let aliases = self.aliases.lock().expect("aliases");
        let mut out = String::with_capacity(text.len());
        let mut token = String::new();
        let flush = |token: &mut String, out: &mut String| {
            let replaced = aliases
                .iter()
                .rev()
                .find(|(value, _)| value == token)
                .map_or(token.as_str(), |(_, name)| name.as_str());
            out.push_str(replaced);
            token.clear();
        };
        for c in text.chars() {
            if c.is_ascii_alphanumeric() || c == '-' {
                token.push(c);
            } else {
                flush(&mut token, &mut out);
                out.push(c);
            }
        }
        flush(&mut token, &mut out);
        out
    }

    fn unalias_value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.unalias(s)),
            Value::Array(items) => items.iter().map(|v| self.unalias_value(v)).collect(),
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| (k.clone(), self.unalias_value(v)))
                .collect(),
            other => other.clone(),
        }
    }

    /// The part of a body apiary reads (see the module doc).
    fn shape(&self, body: &Value) -> Value {
        let present = |v: &Value| !v.is_null();
        match body["kind"].as_str() {
            Some("Status") => {
                let mut shape = BTreeMap::new();
                for key in [
                    "kind",
                    "apiVersion",
                    "status",
                    "message",
                    "reason",
                    "details",
                    "code",
                ] {
                    if present(&body[key]) {
                        shape.insert(key, self.unalias_value(&body[key]));
                    }
                }
                json!(shape)
            }
            Some(kind) if kind.ends_with("List") => {
                let names: Vec<Value> = body["items"]
                    .as_array()
                    .map(|items| {
                        items
                            .iter()
                            .map(|i| i["metadata"]["name"].clone())
                            .collect()
                    })
                    .unwrap_or_default();
                json!({
                    "kind": kind,
                    "apiVersion": body["apiVersion"],
                    "items": names,
                    "continue": body["metadata"]["continue"].as_str().is_some_and(|c| !c.is_empty()),
                    "resourceVersion": present(&body["metadata"]["resourceVersion"]),
                    "remainingItemCount": body["metadata"]["remainingItemCount"],
                })
            }
            _ if body.is_null() => Value::Null,
            _ => {
                let meta = &body["metadata"];
                json!({
                    "kind": body["kind"],
                    "apiVersion": body["apiVersion"],
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "uid": present(&meta["uid"]),
                    "resourceVersion": present(&meta["resourceVersion"]),
                    "deletionTimestamp": present(&meta["deletionTimestamp"]),
                    "deletionGracePeriodSeconds": meta["deletionGracePeriodSeconds"],
                    "phase": body["status"]["phase"],
                })
            }
        }
    }
}

/// A pod as apiary's tests send it: one container, a 60 s grace period.
pub(crate) fn pod(name: &str, image: &str, labels: &Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 60,
            "containers": [{"name": "agent", "image": image}],
        },
    })
}

pub(crate) fn secret(name: &str, immutable: bool) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": {"app": "agent"}},
        "immutable": immutable,
        "type": "Opaque",
        "stringData": {"KEY": "value"},
    })
}

pub(crate) fn uid(body: &Value) -> String {
    body["metadata"]["uid"].as_str().expect("uid").to_owned()
}

pub(crate) fn rv(body: &Value) -> String {
    body["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_owned()
}

pub(crate) fn phase_is(phase: &'static str) -> impl Fn(&Value) -> bool {
    move |pod| pod["status"]["phase"] == phase
}

/// Runs `sequence` on the simulator and, unless the tier is skipped, on the real server, and
/// asserts the transcripts agree step by step.
pub(crate) async fn differential(prefix: &str, kubelet: bool, sequence: Sequence) {
    let plane = tokio::task::block_in_place(apiary_envtest::private);
    let real = plane.map(|plane| {
        let namespace = tokio::task::block_in_place(|| plane.namespace(prefix));
        Side::real(plane, namespace, kubelet)
    });
    // The same namespace name on both sides, so messages naming it compare equal.
    let ns = real
        .as_ref()
        .map_or_else(|| format!("{prefix}-sim"), |r| r.ns.clone());
    let sim = Side::simulator(&ns).await;
    sequence(&sim).await;
    let Some(real) = real else { return };
    sequence(&real).await;
    let (ours, theirs) = (sim.transcript(), real.transcript());
    if std::env::var_os("APIARY_DIFFERENTIAL_SHOW").is_some() {
        for (ours, theirs) in ours.iter().zip(&theirs) {
            eprintln!("simulator:   {ours}\nreal server: {theirs}\n");
        }
    }
    let disagreements: Vec<String> = ours
        .iter()
        .zip(&theirs)
        .filter(|(ours, theirs)| ours != theirs)
        .map(|(ours, theirs)| format!("simulator:   {ours}\nreal server: {theirs}"))
        .collect();
    assert!(
        disagreements.is_empty(),
        "the simulator disagrees with the real server in {} step(s):\n{}",
        disagreements.len(),
        disagreements.join("\n\n")
    );
    assert_eq!(
        ours.len(),
        theirs.len(),
        "both ran the same number of steps"
    );
}

pub(crate) fn status_of(answer: &Answer) -> (u16, &str) {
    (answer.code, answer.body["reason"].as_str().unwrap_or(""))
}
