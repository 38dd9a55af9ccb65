//! The pod fields apiary's pod options set (deploy.md § Pod options), field by field, on the
//! simulator and on the real kube-apiserver: valid values are accepted by both and returned as
//! set (in the apiserver's canonical form, which both write); every invalid value is refused by
//! both with the same status, `reason`, `details.causes` (field, reason, message) and message.
//! Each case pins the real server's status, reason and cause fields, so without
//! `KUBEBUILDER_ASSETS` the simulator is still held to them (the full messages are pinned by
//! the cluster model's unit tests, `model/pods/validation/tests.rs`).
//!
//! Where the model deliberately differs (a class name no class has; what Priority admission
//! writes), the step records the README row that decides it in place of the answer and asserts
//! each side's own literal answer: cluster-model README § Pod validation against the real
//! apiserver.
//!
//! Layer: integration test, over the shared harness; loopback only.

use std::future::Future;
use std::pin::Pin;

use serde_json::{Value, json};

use super::harness::{Side, differential};

/// The PriorityClass the valid pod names; created on the real server only.
const PRIORITY_CLASS: &str = "apiary-diff-high";

/// Its value, which the real server's Priority admission writes into `spec.priority`.
const PRIORITY: i64 = 1000;

/// The RuntimeClass the valid pod names; created on the real server only.
const RUNTIME_CLASS: &str = "apiary-diff-runc";

/// The tolerations the DefaultTolerationSeconds admission appends (both sides).
fn default_tolerations() -> [Value; 2] {
    ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"].map(|key| {
        json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    })
}

/// A pod with one container and nothing else set (no labels: an empty map is dropped by the
/// real server and kept by the model, which says nothing about the fields under test).
fn bare_pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "agent", "image": "registry.example/unschedulable:1"}],
        },
    })
}

/// The fields a pod option sets, as a created pod carries them. A container without resources
/// reads as none: the real server writes `resources: {}` there, as it writes every container
/// default, which the model does not (README row "Container defaults").
fn option_fields(pod: &Value) -> Value {
    let spec = &pod["spec"];
    let resources = &spec["containers"][0]["resources"];
    let resources = if resources == &json!({}) {
        &Value::Null
    } else {
        resources
    };
    json!({
        "labels": pod["metadata"]["labels"],
        "annotations": pod["metadata"]["annotations"],
        "nodeSelector": spec["nodeSelector"],
        "tolerations": spec["tolerations"],
        "runtimeClassName": spec["runtimeClassName"],
        "priorityClassName": spec["priorityClassName"],
        "imagePullSecrets": spec["imagePullSecrets"],
        "resources": resources,
    })
}

fn resources(p: &mut Value, value: Value) {
    p["spec"]["containers"][0]["resources"] = value;
}

/// Sets a field of a pod under test.
type Change = fn(&mut Value);

/// One invalid value of one pod field, and what the real server answered.
struct Refusal {
    /// The pod's name (the message quotes it).
    name: &'static str,
    /// Sets the invalid value on [`bare_pod`].
    change: Change,
    /// HTTP status and `reason`.
    status: (u16, &'static str),
    /// `details.causes[].field`, in order (none for a 403).
    fields: &'static [&'static str],
}

const GPU_LIMIT: &str = "spec.containers[0].resources.limits[nvidia.com/gpu]";
const GPU_REQUEST: &str = "spec.containers[0].resources.requests[nvidia.com/gpu]";

/// The refusals, each as the real kube-apiserver v1.20.2 answered it.
const REFUSALS: &[Refusal] = &[
    Refusal {
        name: "fractional-gpu",
        change: |p| {
            resources(
                p,
                json!({"requests": {"nvidia.com/gpu": "0.5"}, "limits": {"nvidia.com/gpu": "0.5"}}),
            );
        },
        status: (422, "Invalid"),
        fields: &[GPU_LIMIT, GPU_REQUEST],
    },
    Refusal {
        name: "gpu-request-ne-limit",
        change: |p| {
            resources(
                p,
                json!({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}),
            );
        },
        status: (422, "Invalid"),
        fields: &["spec.containers[0].resources.requests"],
    },
    Refusal {
        name: "gpu-request-only",
        change: |p| resources(p, json!({"requests": {"nvidia.com/gpu": "1"}})),
        status: (422, "Invalid"),
        fields: &["spec.containers[0].resources.limits"],
    },
    Refusal {
        name: "resource-name-unqualified",
        change: |p| {
            resources(
                p,
                json!({
                    "requests": {"example.com/-widget": "1"},
                    "limits": {"example.com/-widget": "1"},
                }),
            );
        },
        status: (422, "Invalid"),
        fields: &[
            "spec.containers[0].resources.limits[example.com/-widget]",
            "spec.containers[0].resources.limits[example.com/-widget]",
            "spec.containers[0].resources.requests[example.com/-widget]",
            "spec.containers[0].resources.requests[example.com/-widget]",
        ],
    },
    Refusal {
        name: "resource-name-unprefixed",
        change: |p| {
            resources(
                p,
                json!({"requests": {"widget": "1"}, "limits": {"widget": "1"}}),
            )
        },
        status: (422, "Invalid"),
        fields: &[
            "spec.containers[0].resources.limits[widget]",
            "spec.containers[0].resources.limits[widget]",
            "spec.containers[0].resources.requests[widget]",
            "spec.containers[0].resources.requests[widget]",
        ],
    },
    Refusal {
        name: "ephemeral-negative",
        change: |p| resources(p, json!({"requests": {"ephemeral-storage": "-1Gi"}})),
        status: (422, "Invalid"),
        fields: &["spec.containers[0].resources.requests[ephemeral-storage]"],
    },
    Refusal {
        name: "ephemeral-request-above-limit",
        change: |p| {
            resources(
                p,
                json!({
                    "requests": {"ephemeral-storage": "2Gi"},
                    "limits": {"ephemeral-storage": "1Gi"},
                }),
            );
        },
        status: (422, "Invalid"),
        fields: &["spec.containers[0].resources.requests"],
    },
    Refusal {
        name: "node-selector-bad-key",
        change: |p| p["spec"]["nodeSelector"] = json!({"bad key": "x"}),
        status: (422, "Invalid"),
        fields: &["spec.nodeSelector"],
    },
    Refusal {
        name: "node-selector-bad-value",
        change: |p| p["spec"]["nodeSelector"] = json!({"pool": "bad value"}),
        status: (422, "Invalid"),
        fields: &["spec.nodeSelector"],
    },
    Refusal {
        name: "toleration-exists-with-value",
        change: |p| {
            p["spec"]["tolerations"] =
                json!([{"key": "k", "operator": "Exists", "value": "v", "effect": "NoSchedule"}]);
        },
        status: (422, "Invalid"),
        fields: &["spec.tolerations[0].operator"],
    },
    Refusal {
        name: "toleration-bad-effect",
        change: |p| {
            p["spec"]["tolerations"] =
                json!([{"key": "k", "operator": "Equal", "value": "v", "effect": "Bogus"}]);
        },
        status: (422, "Invalid"),
        fields: &["spec.tolerations[0].effect"],
    },
    Refusal {
        name: "toleration-bad-key",
        change: |p| p["spec"]["tolerations"] = json!([{"key": "bad key", "operator": "Exists"}]),
        status: (422, "Invalid"),
        fields: &["spec.tolerations[0].key"],
    },
    Refusal {
        name: "toleration-bad-value",
        change: |p| {
            p["spec"]["tolerations"] =
                json!([{"key": "k", "operator": "Equal", "value": "bad value"}]);
        },
        status: (422, "Invalid"),
        fields: &["spec.tolerations[0].operator"],
    },
    Refusal {
        name: "toleration-bad-operator",
        change: |p| p["spec"]["tolerations"] = json!([{"key": "k", "operator": "Maybe"}]),
        status: (422, "Invalid"),
        fields: &["spec.tolerations[0].operator"],
    },
    Refusal {
        name: "toleration-empty-key-equal",
        change: |p| p["spec"]["tolerations"] = json!([{"operator": "Equal", "value": "v"}]),
        status: (422, "Invalid"),
        fields: &["spec.tolerations[0].operator"],
    },
    Refusal {
        name: "toleration-seconds-noschedule",
        change: |p| {
            p["spec"]["tolerations"] = json!([
                {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60}
            ]);
        },
        status: (422, "Invalid"),
        fields: &["spec.tolerations[0].effect"],
    },
    Refusal {
        name: "runtime-class-invalid",
        change: |p| p["spec"]["runtimeClassName"] = json!("Not_A_Subdomain"),
        status: (403, "Forbidden"),
        fields: &[],
    },
    Refusal {
        name: "priority-class-invalid",
        change: |p| p["spec"]["priorityClassName"] = json!("Not_A_Subdomain"),
        status: (403, "Forbidden"),
        fields: &[],
    },
    Refusal {
        name: "label-bad-key",
        change: |p| p["metadata"]["labels"] = json!({"bad key": "x"}),
        status: (422, "Invalid"),
        fields: &["metadata.labels"],
    },
    Refusal {
        name: "label-bad-value",
        change: |p| p["metadata"]["labels"] = json!({"team": "bad value"}),
        status: (422, "Invalid"),
        fields: &["metadata.labels"],
    },
    Refusal {
        name: "label-uppercase-prefix",
        change: |p| p["metadata"]["labels"] = json!({"Example.com/team": "x"}),
        status: (422, "Invalid"),
        fields: &["metadata.labels"],
    },
    Refusal {
        name: "annotation-bad-key",
        change: |p| p["metadata"]["annotations"] = json!({"bad key": "x"}),
        status: (422, "Invalid"),
        fields: &["metadata.annotations"],
    },
    Refusal {
        name: "several-fields",
        change: |p| {
            p["metadata"]["labels"] = json!({"bad key": "x"});
            p["spec"]["nodeSelector"] = json!({"pool": "bad value"});
            p["spec"]["tolerations"] = json!([{"key": "k", "effect": "Bogus"}]);
            resources(p, json!({"requests": {"nvidia.com/gpu": "1"}}));
        },
        status: (422, "Invalid"),
        fields: &[
            "metadata.labels",
            "spec.containers[0].resources.limits",
            "spec.nodeSelector",
            "spec.tolerations[0].effect",
        ],
    },
];

/// Every refusal of [`REFUSALS`] on both sides: the whole `Status` is compared, and each side
/// is held to the real server's status, reason and cause fields. The known gap this closed:
/// the simulator used to accept a fractional `nvidia.com/gpu`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_pod_option_fields_are_refused_alike() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            for refusal in REFUSALS {
                let mut body = bare_pod(refusal.name);
                (refusal.change)(&mut body);
                let answer = s
                    .call(refusal.name, "POST", &s.path("pods"), Some(&body))
                    .await;
                let reason = answer.body["reason"].as_str().unwrap_or("");
                assert_eq!(
                    (answer.code, reason),
                    refusal.status,
                    "{}: {}: {}",
                    s.label,
                    refusal.name,
                    answer.body
                );
                let fields: Vec<&str> = answer.body["details"]["causes"]
                    .as_array()
                    .map(|causes| causes.iter().filter_map(|c| c["field"].as_str()).collect())
                    .unwrap_or_default();
                assert_eq!(fields, refusal.fields, "{}: {}", s.label, refusal.name);
            }
            let gpu = s.send("GET", &s.path("pods/fractional-gpu"), None).await;
            assert_eq!(gpu.code, 404, "{}: nothing was stored", s.label);
        })
    }
    differential("diff-fields", false, sequence).await;
}

/// The messages of the cases a user of apiary meets most, pinned word for word on both sides
/// (the transcript compares every other message with the real server's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusal_messages_are_the_apiservers() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            let dump = "resource.Quantity{i:resource.int64Amount{value:5, scale:-1}, \
                        d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", \
                        Format:\"DecimalSI\"}";
            let expected = [
                (
                    "fractional-gpu",
                    format!(
                        "Pod \"fractional-gpu\" is invalid: [{GPU_LIMIT}: Invalid value: {dump}: \
                         must be an integer, {GPU_REQUEST}: Invalid value: {dump}: \
                         must be an integer]"
                    ),
                ),
                (
                    "gpu-request-only",
                    "Pod \"gpu-request-only\" is invalid: spec.containers[0].resources.limits: \
                     Required value: Limit must be set for non overcommitable resources"
                        .to_owned(),
                ),
                (
                    "toleration-bad-effect",
                    "Pod \"toleration-bad-effect\" is invalid: spec.tolerations[0].effect: \
                     Unsupported value: \"Bogus\": supported values: \"NoSchedule\", \
                     \"PreferNoSchedule\", \"NoExecute\""
                        .to_owned(),
                ),
                (
                    "runtime-class-invalid",
                    "pods \"runtime-class-invalid\" is forbidden: pod rejected: RuntimeClass \
                     \"Not_A_Subdomain\" not found"
                        .to_owned(),
                ),
                (
                    "priority-class-invalid",
                    "pods \"priority-class-invalid\" is forbidden: no PriorityClass with name \
                     Not_A_Subdomain was found"
                        .to_owned(),
                ),
            ];
            for (name, message) in expected {
                let refusal = REFUSALS
                    .iter()
                    .find(|r| r.name == name)
                    .expect("a listed refusal");
                let mut body = bare_pod(name);
                (refusal.change)(&mut body);
                let answer = s.call(name, "POST", &s.path("pods"), Some(&body)).await;
                assert_eq!(answer.body["message"], message, "{}: {name}", s.label);
            }
            // A malformed quantity is refused while decoding, naming no field; the tail (the
            // decoder's path through the object and the bytes around the fault) is Go's.
            let mut body = bare_pod("quantity-malformed");
            resources(&mut body, json!({"requests": {"ephemeral-storage": "1Gb"}}));
            let prefix = "Pod in version \"v1\" cannot be handled as a Pod: ";
            let answer = s
                .call_up_to(
                    "malformed quantity",
                    "POST",
                    &s.path("pods"),
                    Some(&body),
                    prefix,
                )
                .await;
            assert_eq!(answer.code, 400, "{}", s.label);
            assert_eq!(answer.body["reason"], "BadRequest", "{}", s.label);
        })
    }
    differential("diff-messages", false, sequence).await;
}

/// Valid values of every field are accepted by both and returned as set: the one pod apiary's
/// flags would build with every option, and edge values (an empty label value, an upper-case
/// annotation prefix, a match-all toleration, a pull-secret name that is no object name, a
/// GPU set only as a limit, quantities not in canonical form), each returned as the real
/// server writes it. The classes are created on the real server (admission resolves them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_pod_option_fields_are_returned_as_set() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            s.ensure_on_real_server(
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                &json!({
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": PRIORITY_CLASS},
                    "value": PRIORITY,
                }),
            )
            .await;
            s.ensure_on_real_server(
                "/apis/node.k8s.io/v1/runtimeclasses",
                &json!({
                    "apiVersion": "node.k8s.io/v1",
                    "kind": "RuntimeClass",
                    "metadata": {"name": RUNTIME_CLASS},
                    "handler": "runc",
                }),
            )
            .await;

            let mut every = bare_pod("every-option");
            every["metadata"]["labels"] = json!({"team": "ml", "example.com/tier": "gpu"});
            every["metadata"]["annotations"] = json!({"example.com/owner": "ml-infra"});
            every["spec"]["nodeSelector"] = json!({"example.com/pool": "agents"});
            every["spec"]["tolerations"] = json!([
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "dedicated", "operator": "Equal", "value": "agents"},
            ]);
            every["spec"]["runtimeClassName"] = json!(RUNTIME_CLASS);
            every["spec"]["priorityClassName"] = json!(PRIORITY_CLASS);
            every["spec"]["imagePullSecrets"] = json!([{"name": "regcred"}, {"name": "other"}]);
            resources(
                &mut every,
                json!({
                    "requests": {
                        "nvidia.com/gpu": "1", "example.com/widget": "2", "ephemeral-storage": "1Gi"
                    },
                    "limits": {
                        "nvidia.com/gpu": "1", "example.com/widget": "2", "ephemeral-storage": "2Gi"
                    },
                }),
            );
            let answer = s.send("POST", &s.path("pods"), Some(&every)).await;
            assert_eq!(answer.code, 201, "{}: {}", s.label, answer.body);
            let mut expected = option_fields(&every);
            let mut tolerations = every["spec"]["tolerations"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            tolerations.extend(default_tolerations());
            expected["tolerations"] = json!(tolerations);
            let returned = option_fields(&answer.body);
            assert_eq!(returned, expected, "{}: returned as set", s.label);
            s.record(
                "every option",
                json!({"code": answer.code, "fields": returned}),
            );

            // What the real server's Priority admission writes besides (README row "Priority
            // admission"): recorded as the row, asserted per side.
            let spec = &answer.body["spec"];
            if s.is_simulator() {
                assert!(spec["priority"].is_null(), "{}", s.label);
            } else {
                assert_eq!(spec["priority"], PRIORITY, "{}", s.label);
                assert_eq!(
                    spec["preemptionPolicy"], "PreemptLowerPriority",
                    "{}",
                    s.label
                );
            }
            s.record(
                "priority written by admission",
                json!({"difference": "Priority admission"}),
            );

            let edges: [(&str, Change, Value); 5] = [
                (
                    "edge-labels",
                    |p| {
                        p["metadata"]["labels"] = json!({"empty": ""});
                        p["metadata"]["annotations"] = json!({"Example.COM/Owner": "x"});
                    },
                    json!({"labels": {"empty": ""}, "annotations": {"Example.COM/Owner": "x"}}),
                ),
                (
                    "edge-match-all-toleration",
                    |p| p["spec"]["tolerations"] = json!([{"operator": "Exists"}]),
                    json!({"tolerations": [{"operator": "Exists"}]}),
                ),
                (
                    "edge-pull-secret-name",
                    |p| p["spec"]["imagePullSecrets"] = json!([{"name": "Not_A_Subdomain"}]),
                    json!({"imagePullSecrets": [{"name": "Not_A_Subdomain"}]}),
                ),
                (
                    "edge-gpu-limit-only",
                    |p| resources(p, json!({"limits": {"nvidia.com/gpu": "1"}})),
                    json!({"resources": {
                        "limits": {"nvidia.com/gpu": "1"},
                        "requests": {"nvidia.com/gpu": "1"},
                    }}),
                ),
                (
                    "edge-quantities",
                    |p| {
                        resources(
                            p,
                            json!({
                                "requests": {
                                    "ephemeral-storage": "1024Mi",
                                    "example.com/widget": "2000m",
                                    "cpu": "0.5",
                                },
                                "limits": {
                                    "ephemeral-storage": "1.5Gi",
                                    "example.com/widget": "2",
                                    "cpu": "1.0000000001",
                                },
                            }),
                        );
                    },
                    json!({"resources": {
                        "requests": {
                            "ephemeral-storage": "1Gi", "example.com/widget": "2", "cpu": "500m"
                        },
                        "limits": {
                            "ephemeral-storage": "1536Mi", "example.com/widget": "2", "cpu": "1001m"
                        },
                    }}),
                ),
            ];
            for (name, change, returned) in edges {
                let mut body = bare_pod(name);
                change(&mut body);
                let answer = s.send("POST", &s.path("pods"), Some(&body)).await;
                assert_eq!(answer.code, 201, "{}: {name}: {}", s.label, answer.body);
                let fields = option_fields(&answer.body);
                for (field, value) in returned.as_object().into_iter().flatten() {
                    assert_eq!(&fields[field], value, "{}: {name}: {field}", s.label);
                }
                s.record(name, json!({"code": answer.code, "fields": fields}));
            }
        })
    }
    differential("diff-valid", false, sequence).await;
}

/// A well-formed class name that names no class: the real server's admission answers 403, the
/// model takes every such name to exist (README row "Classes that do not exist"). Recorded as
/// the row, each side held to its own literal answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_class_is_the_documented_difference() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            for (name, field, real) in [
                (
                    "priority-class-missing",
                    "priorityClassName",
                    "pods \"priority-class-missing\" is forbidden: no PriorityClass with name \
                     missing was found",
                ),
                (
                    "runtime-class-missing",
                    "runtimeClassName",
                    "pods \"runtime-class-missing\" is forbidden: pod rejected: RuntimeClass \
                     \"missing\" not found",
                ),
            ] {
                let mut body = bare_pod(name);
                body["spec"][field] = json!("missing");
                let answer = s.send("POST", &s.path("pods"), Some(&body)).await;
                if s.is_simulator() {
                    assert_eq!(answer.code, 201, "{}: {name}: {}", s.label, answer.body);
                } else {
                    assert_eq!(answer.code, 403, "{}: {name}", s.label);
                    assert_eq!(answer.body["reason"], "Forbidden", "{}", s.label);
                    assert_eq!(answer.body["message"], real, "{}", s.label);
                }
                s.record(name, json!({"difference": "Classes that do not exist"}));
            }
        })
    }
    differential("diff-classes", false, sequence).await;
}
