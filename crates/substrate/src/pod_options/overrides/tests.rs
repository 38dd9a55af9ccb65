//! Unit and property tests of `overrides` (deploy.md § Pod options): RFC 7386's own examples,
//! parsing and the canonical form, one refusal per invariant, and two properties: whatever
//! `apply` accepts keeps every invariant (judged by a checker of this module's own, over the
//! pods' JSON), and a patch of harmless fields is always accepted. Pure; no I/O.

use k8s_openapi::api::core::v1::Pod;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::build::build_pod;
use crate::config::DeployConfig;
use crate::naming::{AgentIdentity, Generation};

fn image() -> String {
    format!("registry.example.com/team/agent@sha256:{}", "a".repeat(64))
}

/// The reference pod, as the real builder makes it: with a user label and annotation, and
/// (`setup_pending`) an explicit `env` variable of apiary's own.
fn built() -> Pod {
    let mut c = DeployConfig::new("agents", image());
    c.env.set("TOKEN", "tok-NEVER-IN-POD");
    c.pod_options.setup_pending = true;
    c.pod_options.labels.insert("team".into(), "ml".into());
    c.pod_options
        .annotations
        .insert("example.com/note".into(), "hi".into());
    let agent = AgentIdentity::new("Research Bot #1").unwrap();
    build_pod(&c.validate(&agent).unwrap(), Generation::from_u32(7))
}

/// The reference pod without any `env`.
fn built_plain() -> Pod {
    let c = DeployConfig::new("agents", image());
    let agent = AgentIdentity::new("Research Bot #1").unwrap();
    build_pod(&c.validate(&agent).unwrap(), Generation::from_u32(7))
}

/// The built agent container as JSON, to restate in a patch of `spec.containers`.
fn agent_json(pod: &Pod) -> Value {
    serde_json::to_value(&pod.spec.as_ref().unwrap().containers[0]).unwrap()
}

/// The agent container with `patch` merged into it.
fn agent_with(pod: &Pod, patch: Value) -> Value {
    let mut agent = agent_json(pod);
    merge_patch(&mut agent, &patch);
    agent
}

/// A container hardened as apiary requires of one the patch adds.
fn sidecar(name: &str) -> Value {
    json!({
        "name": name,
        "image": "busybox",
        "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
    })
}

fn apply(pod: &Pod, patch: &Value) -> Result<Pod, OverridesError> {
    Overrides::parse(&patch.to_string()).unwrap().apply(pod)
}

/// Applies `patch` to [`built`], expects a refusal at `path`, and checks the message names
/// `--overrides` and the path; returns the message.
fn refused_at(pod: &Pod, patch: Value, path: &str) -> String {
    let error = apply(pod, &patch).expect_err("the patch must be refused");
    let message = error.to_string();
    assert!(message.starts_with("--overrides"), "{message}");
    assert!(message.contains(path), "{message} does not name {path}");
    match error {
        OverridesError::Refused { path: got, .. } => assert_eq!(got, path),
        other => panic!("not a refusal: {other:?}"),
    }
    message
}

// --- merge_patch: RFC 7386 ---

/// RFC 7386 Appendix A, every example: (target, patch, result).
#[test]
fn merge_patch_matches_rfc_7386_appendix() {
    let cases = [
        (r#"{"a":"b"}"#, r#"{"a":"c"}"#, r#"{"a":"c"}"#),
        (r#"{"a":"b"}"#, r#"{"b":"c"}"#, r#"{"a":"b","b":"c"}"#),
        (r#"{"a":"b"}"#, r#"{"a":null}"#, r#"{}"#),
        (r#"{"a":"b","b":"c"}"#, r#"{"a":null}"#, r#"{"b":"c"}"#),
        (r#"{"a":["b"]}"#, r#"{"a":"c"}"#, r#"{"a":"c"}"#),
        (r#"{"a":"c"}"#, r#"{"a":["b"]}"#, r#"{"a":["b"]}"#),
        (
            r#"{"a":{"b":"c"}}"#,
            r#"{"a":{"b":"d","c":null}}"#,
            r#"{"a":{"b":"d"}}"#,
        ),
        (r#"{"a":[{"b":"c"}]}"#, r#"{"a":[1]}"#, r#"{"a":[1]}"#),
        (r#"["a","b"]"#, r#"["c","d"]"#, r#"["c","d"]"#),
        (r#"{"a":"b"}"#, r#"["c"]"#, r#"["c"]"#),
        (r#"{"a":"foo"}"#, "null", "null"),
        (r#"{"a":"foo"}"#, r#""bar""#, r#""bar""#),
        (r#"{"e":null}"#, r#"{"a":1}"#, r#"{"e":null,"a":1}"#),
        (r#"[1,2]"#, r#"{"a":"b","c":null}"#, r#"{"a":"b"}"#),
        (
            r#"{}"#,
            r#"{"a":{"bb":{"ccc":null}}}"#,
            r#"{"a":{"bb":{}}}"#,
        ),
    ];
    for (target, patch, result) in cases {
        let mut value: Value = serde_json::from_str(target).unwrap();
        merge_patch(&mut value, &serde_json::from_str(patch).unwrap());
        let expected: Value = serde_json::from_str(result).unwrap();
        assert_eq!(value, expected, "{target} patched with {patch}");
    }
}

/// RFC 7386 § 3's worked example: nested deletion, array replacement, a new member.
#[test]
fn merge_patch_matches_rfc_7386_section_3() {
    let mut target = json!({
        "title": "Goodbye!",
        "author": {"givenName": "John", "familyName": "Doe"},
        "tags": ["example", "sample"],
        "content": "This will be unchanged",
    });
    let patch = json!({
        "title": "Hello!",
        "phoneNumber": "+01-123-456-7890",
        "author": {"familyName": null},
        "tags": ["example"],
    });
    merge_patch(&mut target, &patch);
    assert_eq!(
        target,
        json!({
            "title": "Hello!",
            "author": {"givenName": "John"},
            "tags": ["example"],
            "content": "This will be unchanged",
            "phoneNumber": "+01-123-456-7890",
        })
    );
}

// --- parse and canonical ---

/// Text that is not JSON is refused, naming `--overrides` and where the parser stopped.
#[test]
fn parse_refuses_invalid_json() {
    for text in ["", "{", "{\"spec\":}", "spec: {}", "{} {}"] {
        let error = Overrides::parse(text).unwrap_err();
        assert!(matches!(error, OverridesError::NotJson { .. }), "{text:?}");
        let message = error.to_string();
        assert!(
            message.starts_with("--overrides is not valid JSON ("),
            "{message}"
        );
        assert!(message.contains("line 1 column"), "{message}");
    }
}

/// JSON that is not an object is refused, saying what it is.
#[test]
fn parse_refuses_non_objects() {
    for (text, kind) in [
        ("[]", "an array"),
        ("\"spec\"", "a string"),
        ("1", "a number"),
        ("true", "a boolean"),
        ("null", "null"),
    ] {
        let error = Overrides::parse(text).unwrap_err();
        assert_eq!(error, OverridesError::NotObject { kind });
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("--overrides must be a JSON object, not {kind};")),
            "{message}"
        );
    }
}

/// An object parses, and an empty patch leaves the pod as built.
#[test]
fn empty_patch_keeps_the_pod() {
    let overrides = Overrides::parse(" { } ").unwrap();
    assert_eq!(overrides.canonical(), "{}");
    let pod = built();
    assert_eq!(overrides.apply(&pod), Ok(pod));
}

/// The canonical form ignores key order and whitespace at every depth, and is compact.
#[test]
fn canonical_is_stable_across_spellings() {
    let a = Overrides::parse(r#"{"spec":{"dnsPolicy":"None","affinity":{"b":1,"a":[{"y":2,"x":"é\""}]}},"metadata":null}"#)
        .unwrap();
    let b = Overrides::parse(
        "{ \"metadata\" : null,\n  \"spec\": { \"affinity\": { \"a\": [ { \"x\": \"\\u00e9\\\"\", \"y\": 2 } ], \"b\": 1 },\n \"dnsPolicy\": \"None\" } }",
    )
    .unwrap();
    assert_eq!(a, b);
    assert_eq!(a.canonical(), b.canonical());
    assert_eq!(
        a.canonical(),
        r#"{"metadata":null,"spec":{"affinity":{"a":[{"x":"é\"","y":2}],"b":1},"dnsPolicy":"None"}}"#
    );
}

/// Different objects have different canonical forms (array order is content).
#[test]
fn canonical_differs_for_different_objects() {
    let forms: Vec<String> = [
        r#"{"spec":{"dnsPolicy":"None"}}"#,
        r#"{"spec":{"dnsPolicy":"Default"}}"#,
        r#"{"spec":{"dnsPolicy":null}}"#,
        r#"{"spec":{}}"#,
        r#"{"a":[1,2]}"#,
        r#"{"a":[2,1]}"#,
        r#"{"a":"1"}"#,
        r#"{"a":1}"#,
        r#"{}"#,
    ]
    .iter()
    .map(|text| Overrides::parse(text).unwrap().canonical())
    .collect();
    for (i, a) in forms.iter().enumerate() {
        for b in &forms[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

// --- apply: what is allowed ---

/// A benign patch (affinity, dnsConfig, an extra volume, a user label) is applied.
#[test]
fn benign_patch_is_applied() {
    let pod = built();
    let mut volumes = serde_json::to_value(&pod.spec.as_ref().unwrap().volumes).unwrap();
    volumes
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "cache", "emptyDir": {"medium": "Memory"}}));
    let patch = json!({
        "metadata": {"labels": {"tier": "gold", "team": null}},
        "spec": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]}
                ]}]
            }}},
            "dnsConfig": {"nameservers": ["10.0.0.10"]},
            "volumes": volumes,
        },
    });
    let patched = apply(&pod, &patch).unwrap();
    let labels = patched.metadata.labels.as_ref().unwrap();
    assert_eq!(labels.get("tier").map(String::as_str), Some("gold"));
    assert!(!labels.contains_key("team"), "a user label may be removed");
    let spec = patched.spec.as_ref().unwrap();
    assert!(spec.affinity.as_ref().unwrap().node_affinity.is_some());
    assert_eq!(
        spec.dns_config.as_ref().unwrap().nameservers,
        Some(vec!["10.0.0.10".to_owned()])
    );
    let names: Vec<&str> = spec
        .volumes
        .iter()
        .flatten()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(names, ["workspace", "cache"]);
    // Everything else is as built.
    let mut expected = serde_json::to_value(&pod).unwrap();
    merge_patch(&mut expected, &patch);
    assert_eq!(serde_json::to_value(&patched).unwrap(), expected);
}

/// User annotations may be changed and removed; apiary's are untouched.
#[test]
fn user_annotations_are_free() {
    let pod = built();
    let patch = json!({"metadata": {"annotations": {"example.com/note": null, "mine": "x"}}});
    let patched = apply(&pod, &patch).unwrap();
    let annotations = patched.metadata.annotations.unwrap();
    assert!(!annotations.contains_key("example.com/note"));
    assert_eq!(annotations["mine"], "x");
}

/// A patch of `spec.containers` that restates the agent container unchanged may add a
/// hardened sidecar and a user variable to the agent; an init container is accepted too.
#[test]
fn restated_agent_with_hardened_sidecar_is_accepted() {
    let pod = built();
    let mut agent = agent_json(&pod);
    agent["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "MODE", "value": "fast"}));
    let patch = json!({"spec": {
        "containers": [sidecar("log"), agent],
        "initContainers": [sidecar("init")],
    }});
    let patched = apply(&pod, &patch).unwrap();
    let spec = patched.spec.unwrap();
    assert_eq!(spec.containers.len(), 2);
    assert_eq!(spec.containers[1].env.as_ref().unwrap().len(), 2);
    assert_eq!(spec.init_containers.unwrap()[0].name, "init");
}

/// Restating an invariant field with its built value, or setting a host namespace to false,
/// is no change.
#[test]
fn restating_built_values_is_accepted() {
    let pod = built();
    let patch = json!({"spec": {
        "restartPolicy": "Never",
        "automountServiceAccountToken": false,
        "hostNetwork": false, "hostPID": false, "hostIPC": false,
        "ephemeralContainers": [],
    }, "status": null});
    assert!(apply(&pod, &patch).is_ok());
}

// --- apply: the result must be a pod ---

/// A misspelled field is refused, not silently dropped; nested and in a list, too.
#[test]
fn unknown_fields_are_refused() {
    let pod = built();
    for (patch, path) in [
        (json!({"spec": {"afinity": {}}}), "spec.afinity"),
        (json!({"metadata": {"label": {"a": "b"}}}), "metadata.label"),
        (json!({"spce": {}}), "spce"),
        (
            json!({"spec": {"containers": [agent_with(&pod, json!({"imagePullPolicyy": "Always"}))]}}),
            "spec.containers[agent].imagePullPolicyy",
        ),
        (
            json!({"spec": {"tolerations": [{"key": "a", "operater": "Exists"}]}}),
            "spec.tolerations[0].operater",
        ),
    ] {
        let error = apply(&pod, &patch).unwrap_err();
        assert_eq!(
            error,
            OverridesError::UnknownField {
                path: path.to_owned()
            }
        );
        assert!(
            error
                .to_string()
                .starts_with(&format!("--overrides: {path} is not a field of a pod;")),
            "{error}"
        );
    }
}

/// A field of the wrong type, or a changed `kind`, leaves no pod.
#[test]
fn non_pods_are_refused() {
    let pod = built();
    for patch in [
        json!({"spec": {"hostNetwork": "yes"}}),
        json!({"kind": "Deployment"}),
        json!({"spec": {"containers": {"name": "agent"}}}),
    ] {
        let error = apply(&pod, &patch).unwrap_err();
        assert!(
            matches!(error, OverridesError::NotAPod { .. }),
            "{patch}: {error:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with("--overrides does not leave a valid pod: "),
            "{error}"
        );
    }
}

// --- apply: one refusal per invariant ---

/// Invariant 1: the pod's name and namespace are apiary's.
#[test]
fn name_and_namespace_are_kept() {
    let pod = built();
    let message = refused_at(
        &pod,
        json!({"metadata": {"name": "other"}}),
        "metadata.name",
    );
    assert_eq!(
        message,
        "--overrides: metadata.name is changed by the patch; remove it from the patch; apiary sets this field itself"
    );
    refused_at(&pod, json!({"metadata": {"name": null}}), "metadata.name");
    let message = refused_at(
        &pod,
        json!({"metadata": {"namespace": "default"}}),
        "metadata.namespace",
    );
    assert!(
        message.ends_with("choose the namespace with --namespace"),
        "{message}"
    );
}

/// Invariant 1: apiary's labels keep their values, none is removed, none is added.
#[test]
fn owned_labels_are_kept() {
    let pod = built();
    let message = refused_at(
        &pod,
        json!({"metadata": {"labels": {"apiary.dev/agent": "x"}}}),
        r#"metadata.labels["apiary.dev/agent"]"#,
    );
    assert!(message.contains("is changed by the patch"), "{message}");
    assert!(message.contains("apiary's own"), "{message}");
    let message = refused_at(
        &pod,
        json!({"metadata": {"labels": {"app.kubernetes.io/managed-by": null}}}),
        r#"metadata.labels["app.kubernetes.io/managed-by"]"#,
    );
    assert!(message.contains("is removed by the patch"), "{message}");
    let message = refused_at(
        &pod,
        json!({"metadata": {"labels": {"apiary.dev/extra": "x"}}}),
        r#"metadata.labels["apiary.dev/extra"]"#,
    );
    assert!(message.contains("is added by the patch"), "{message}");
    refused_at(
        &pod,
        json!({"metadata": {"labels": {"buzz.block.xyz/agent-pubkey": "x"}}}),
        r#"metadata.labels["buzz.block.xyz/agent-pubkey"]"#,
    );
    // Deleting every label removes apiary's too (the first in key order is named).
    refused_at(
        &pod,
        json!({"metadata": {"labels": null}}),
        r#"metadata.labels["apiary.dev/agent"]"#,
    );
}

/// Invariant 1: apiary's annotations likewise.
#[test]
fn owned_annotations_are_kept() {
    let pod = built();
    refused_at(
        &pod,
        json!({"metadata": {"annotations": {"apiary.dev/create-intent": "0"}}}),
        r#"metadata.annotations["apiary.dev/create-intent"]"#,
    );
    refused_at(
        &pod,
        json!({"metadata": {"annotations": {"apiary.dev/image": null}}}),
        r#"metadata.annotations["apiary.dev/image"]"#,
    );
    refused_at(
        &pod,
        json!({"metadata": {"annotations": {"apiary.dev/expires-at": "2000-01-01T00:00:00Z"}}}),
        r#"metadata.annotations["apiary.dev/expires-at"]"#,
    );
    // `managed-by` is owned as a whole key only: a longer key is the user's.
    assert!(
        apply(
            &pod,
            &json!({"metadata": {"annotations": {"app.kubernetes.io/managed-by-x": "y"}}})
        )
        .is_ok()
    );
}

/// Invariant 2: the agent container must remain, and the message says why a list patch drops it.
#[test]
fn agent_container_is_kept() {
    let pod = built();
    let message = refused_at(
        &pod,
        json!({"spec": {"containers": [sidecar("log")]}}),
        "spec.containers[agent]",
    );
    assert!(message.contains("is missing"), "{message}");
    assert!(message.contains("replaces spec.containers whole: restate the agent container"));
    refused_at(&pod, json!({"spec": null}), "spec.containers[agent]");
    let message = refused_at(
        &pod,
        json!({"spec": {"containers": [agent_json(&pod), agent_json(&pod)]}}),
        "spec.containers[agent]",
    );
    assert!(message.contains("appears twice"), "{message}");
}

/// Invariant 2: the agent's image, envFrom and securityContext are unchanged.
#[test]
fn agent_fields_are_kept() {
    let pod = built();
    let secret_ref = json!({"secretRef": {"name": "apiary-x", "optional": false}});
    for (change, path) in [
        (json!({"image": "busybox"}), "spec.containers[agent].image"),
        (json!({"image": null}), "spec.containers[agent].image"),
        (json!({"envFrom": null}), "spec.containers[agent].envFrom"),
        (
            json!({"envFrom": [secret_ref]}),
            "spec.containers[agent].envFrom",
        ),
        (
            json!({"securityContext": {"privileged": true}}),
            "spec.containers[agent].securityContext",
        ),
        (
            json!({"securityContext": null}),
            "spec.containers[agent].securityContext",
        ),
    ] {
        let message = refused_at(
            &pod,
            json!({"spec": {"containers": [agent_with(&pod, change)]}}),
            path,
        );
        assert!(
            message.contains("must restate the agent container exactly"),
            "{message}"
        );
    }
    // A second source after apiary's Secret would beat it, so envFrom only equals the built.
    let mut agent = agent_json(&pod);
    agent["envFrom"]
        .as_array_mut()
        .unwrap()
        .push(json!({"configMapRef": {"name": "cm"}}));
    refused_at(
        &pod,
        json!({"spec": {"containers": [agent]}}),
        "spec.containers[agent].envFrom",
    );
}

/// Invariant 2: an explicit `env` beats `envFrom`, so apiary's variables cannot be added,
/// changed or removed there.
#[test]
fn agent_env_cannot_spoof_apiarys_variables() {
    let pod = built();
    let with_env = |pod: &Pod, env: Value| json!({"spec": {"containers": [agent_with(pod, json!({"env": env}))]}});
    let mut env = agent_json(&pod)["env"].clone();
    env.as_array_mut()
        .unwrap()
        .push(json!({"name": "APIARY_AGENT_ID", "value": "spoof"}));
    let message = refused_at(
        &pod,
        with_env(&pod, env),
        "spec.containers[agent].env[APIARY_AGENT_ID]",
    );
    assert!(
        message.contains("is one of apiary's own variables"),
        "{message}"
    );
    for key in ["APIARY_AGENT_NAME", "APIARY_START_NONCE"] {
        refused_at(
            &built_plain(),
            with_env(&built_plain(), json!([{"name": key, "value": "x"}])),
            &format!("spec.containers[agent].env[{key}]"),
        );
    }
    // The pod-uid variable, when apiary did not set it, is still its own.
    refused_at(
        &built_plain(),
        with_env(
            &built_plain(),
            json!([{"name": "BUZZ_PILOT_POD_UID", "value": "x"}]),
        ),
        "spec.containers[agent].env[BUZZ_PILOT_POD_UID]",
    );
    let message = refused_at(
        &pod,
        with_env(&pod, json!([{"name": "BUZZ_PILOT_POD_UID", "value": "x"}])),
        "spec.containers[agent].env[BUZZ_PILOT_POD_UID]",
    );
    assert!(message.contains("is changed by the patch"), "{message}");
    let message = refused_at(
        &pod,
        with_env(&pod, json!([{"name": "MODE", "value": "x"}])),
        "spec.containers[agent].env[BUZZ_PILOT_POD_UID]",
    );
    assert!(message.contains("is removed by the patch"), "{message}");
    refused_at(
        &pod,
        with_env(&pod, Value::Null),
        "spec.containers[agent].env[BUZZ_PILOT_POD_UID]",
    );
    // A user variable, also on a pod without env, is the user's.
    assert!(
        apply(
            &built_plain(),
            &with_env(&built_plain(), json!([{"name": "MODE", "value": "x"}]))
        )
        .is_ok()
    );
}

/// Invariant 3: restartPolicy, automountServiceAccountToken and the pod securityContext.
#[test]
fn pod_lifecycle_and_security_are_kept() {
    let pod = built();
    refused_at(
        &pod,
        json!({"spec": {"restartPolicy": "Always"}}),
        "spec.restartPolicy",
    );
    refused_at(
        &pod,
        json!({"spec": {"restartPolicy": null}}),
        "spec.restartPolicy",
    );
    let message = refused_at(
        &pod,
        json!({"spec": {"automountServiceAccountToken": true}}),
        "spec.automountServiceAccountToken",
    );
    assert!(message.contains("must stay false"), "{message}");
    refused_at(
        &pod,
        json!({"spec": {"automountServiceAccountToken": null}}),
        "spec.automountServiceAccountToken",
    );
    for context in [json!({"runAsUser": 0}), json!({"fsGroup": 1}), Value::Null] {
        refused_at(
            &pod,
            json!({"spec": {"securityContext": context}}),
            "spec.securityContext",
        );
    }
}

/// Invariant 4: no host namespaces.
#[test]
fn host_namespaces_are_refused() {
    let pod = built();
    for field in ["hostNetwork", "hostPID", "hostIPC"] {
        let message = refused_at(
            &pod,
            json!({"spec": {field: true}}),
            &format!("spec.{field}"),
        );
        assert!(message.contains("is true"), "{message}");
    }
}

/// Invariant 4 (decision): no hostPath volume, no ephemeral container.
#[test]
fn host_paths_and_ephemeral_containers_are_refused() {
    let pod = built();
    refused_at(
        &pod,
        json!({"spec": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}}),
        "spec.volumes[root].hostPath",
    );
    refused_at(
        &pod,
        json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox"}]}}),
        "spec.ephemeralContainers",
    );
}

/// Invariant 4: every container the patch adds is hardened, field by field; init containers
/// too.
#[test]
fn added_containers_are_hardened() {
    let pod = built();
    let cases = [
        (json!({"securityContext": null}), "allowPrivilegeEscalation"),
        (
            json!({"securityContext": {"allowPrivilegeEscalation": true}}),
            "allowPrivilegeEscalation",
        ),
        (
            json!({"securityContext": {"privileged": true}}),
            "privileged",
        ),
        (
            json!({"securityContext": {"capabilities": null}}),
            "capabilities.drop",
        ),
        (
            json!({"securityContext": {"capabilities": {"drop": ["NET_RAW"]}}}),
            "capabilities.drop",
        ),
        (
            json!({"securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}),
            "capabilities.add",
        ),
        (
            json!({"securityContext": {"runAsNonRoot": false}}),
            "runAsNonRoot",
        ),
        (json!({"securityContext": {"runAsUser": 0}}), "runAsUser"),
        (
            json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
            "seccompProfile.type",
        ),
    ];
    for (change, field) in cases {
        let mut container = sidecar("log");
        merge_patch(&mut container, &change);
        let message = refused_at(
            &pod,
            json!({"spec": {"containers": [agent_json(&pod), container.clone()]}}),
            &format!("spec.containers[log].securityContext.{field}"),
        );
        assert!(message.contains("harden the container"), "{message}");
        refused_at(
            &pod,
            json!({"spec": {"initContainers": [container]}}),
            &format!("spec.initContainers[log].securityContext.{field}"),
        );
    }
    // What remains allowed: an empty add list, a non-root user, the default seccomp profile.
    let mut container = sidecar("log");
    merge_patch(
        &mut container,
        &json!({"securityContext": {"capabilities": {"add": [], "drop": ["NET_RAW", "ALL"]},
            "runAsUser": 1000, "runAsNonRoot": true, "privileged": false,
            "seccompProfile": {"type": "RuntimeDefault"}}}),
    );
    assert!(apply(&pod, &json!({"spec": {"initContainers": [container]}})).is_ok());
}

/// Invariant 5: a patch may not set `status`.
#[test]
fn status_is_refused() {
    let pod = built();
    for status in [json!({}), json!({"phase": "Running"})] {
        let message = refused_at(&pod, json!({"status": status}), "status");
        assert!(message.contains("created without a status"), "{message}");
    }
}

/// `verify_invariants` of a pod against itself holds, and every refusal is a `Refused`.
#[test]
fn built_pod_keeps_its_own_invariants() {
    for pod in [built(), built_plain()] {
        assert_eq!(verify_invariants(&pod, &pod), Ok(()));
    }
}

/// The module's copies of other modules' constants (copied to keep it free of a module cycle)
/// equal their sources.
#[test]
fn copied_constants_match_their_sources() {
    assert_eq!(CONTAINER_NAME, crate::build::CONTAINER_NAME);
    assert_eq!(PILOT_POD_UID_ENV, crate::build::PILOT_POD_UID_ENV);
    assert_eq!(DROPPED_CAPABILITIES, crate::build::DROPPED_CAPABILITIES);
    assert_eq!(OWNED_KEYS, crate::pod_options::flags::OWNED_KEYS);
}

// --- properties ---

/// apiary's variable names and owned key prefixes, spelled out here so the checker does not
/// share the module's constants.
const OWN_VARIABLES: [&str; 4] = [
    "APIARY_AGENT_NAME",
    "APIARY_AGENT_ID",
    "APIARY_START_NONCE",
    "BUZZ_PILOT_POD_UID",
];

fn owned(key: &str) -> bool {
    key.starts_with("apiary.dev/")
        || key.starts_with("buzz.block.xyz/")
        || key == "app.kubernetes.io/managed-by"
}

/// The invariants, judged independently over the pods' JSON; `Err` names the one broken.
fn check(built: &Value, patched: &Value) -> Result<(), String> {
    let ensure = |ok: bool, what: &str| if ok { Ok(()) } else { Err(what.to_owned()) };
    for field in ["name", "namespace"] {
        ensure(
            patched["metadata"][field] == built["metadata"][field],
            field,
        )?;
    }
    for field in ["labels", "annotations"] {
        let owned_of = |pod: &Value| -> Vec<(String, Value)> {
            pod["metadata"][field]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| owned(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        ensure(owned_of(patched) == owned_of(built), field)?;
    }
    let containers = |pod: &Value, list: &str| -> Vec<Value> {
        pod["spec"][list].as_array().cloned().unwrap_or_default()
    };
    let built_agent = containers(built, "containers")[0].clone();
    let agents: Vec<Value> = containers(patched, "containers")
        .into_iter()
        .filter(|c| c["name"] == "agent")
        .collect();
    ensure(agents.len() == 1, "one agent")?;
    let agent = &agents[0];
    for field in ["image", "envFrom", "securityContext"] {
        ensure(agent[field] == built_agent[field], field)?;
    }
    let env = |c: &Value| c["env"].as_array().cloned().unwrap_or_default();
    for var in env(agent) {
        let same_name: Vec<Value> = env(&built_agent)
            .into_iter()
            .filter(|b| b["name"] == var["name"])
            .collect();
        let own = OWN_VARIABLES.iter().any(|k| var["name"] == *k);
        ensure(same_name.iter().all(|b| *b == var), "env value")?;
        ensure(!same_name.is_empty() || !own, "own env")?;
    }
    for var in env(&built_agent) {
        ensure(env(agent).contains(&var), "env kept")?;
    }
    for field in ["restartPolicy", "securityContext"] {
        ensure(patched["spec"][field] == built["spec"][field], field)?;
    }
    ensure(
        patched["spec"]["automountServiceAccountToken"] == json!(false),
        "automount",
    )?;
    for field in ["hostNetwork", "hostPID", "hostIPC"] {
        ensure(patched["spec"][field] != json!(true), field)?;
    }
    let others = containers(patched, "containers")
        .into_iter()
        .filter(|c| c["name"] != "agent")
        .chain(containers(patched, "initContainers"));
    for c in others {
        let sc = &c["securityContext"];
        ensure(sc["allowPrivilegeEscalation"] == json!(false), "escalation")?;
        ensure(sc["privileged"] != json!(true), "privileged")?;
        let drop = sc["capabilities"]["drop"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        ensure(drop.contains(&json!("ALL")), "drop ALL")?;
        let add = sc["capabilities"]["add"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        ensure(add.is_empty(), "add")?;
    }
    ensure(patched.get("status").is_none(), "status")
}

/// An object of the members that are set.
fn object(members: Vec<(&str, Option<Value>)>) -> Value {
    Value::Object(
        members
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
            .collect(),
    )
}

/// A value, or (one time in five) a deletion.
fn or_null(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    prop_oneof![4 => value, 1 => Just(Value::Null)]
}

/// A member of a patch, present with probability `p`. Each invariant path is touched rarely
/// enough that the checks behind the first one still see many patches.
fn maybe(p: f64, value: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    proptest::option::weighted(p, value)
}

fn one_of<const N: usize>(choices: [Value; N]) -> impl Strategy<Value = Value> {
    proptest::sample::select(choices.to_vec())
}

fn text(choices: &'static [&'static str]) -> impl Strategy<Value = Value> {
    proptest::sample::select(choices).prop_map(Value::from)
}

/// A boolean member: mostly the safe `false`, sometimes `true`, sometimes deleted.
fn flag(p: f64) -> impl Strategy<Value = Option<Value>> {
    maybe(
        p,
        or_null(prop_oneof![3 => Just(json!(false)), 1 => Just(json!(true))]),
    )
}

/// A label or annotation map patch over owned (existing and new) and user keys.
fn key_map() -> BoxedStrategy<Value> {
    let keys = proptest::sample::select(
        &[
            "apiary.dev/agent",
            "apiary.dev/agent-id",
            "apiary.dev/create-intent",
            "apiary.dev/new",
            "app.kubernetes.io/managed-by",
            "buzz.block.xyz/x",
            "team",
            "example.com/note",
            "mine",
        ][..],
    );
    let values = or_null(text(&["apiary", "ml", "x", "hi"]));
    prop_oneof![
        9 => proptest::collection::btree_map(keys, values, 0..3)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        1 => Just(Value::Null),
    ]
    .boxed()
}

/// A patch of a container securityContext: mostly the hardened values, sometimes not.
fn security_context() -> BoxedStrategy<Value> {
    let drop = prop_oneof![
        3 => Just(json!(["ALL"])),
        1 => Just(json!(["NET_RAW", "ALL"])),
        1 => Just(json!(["NET_RAW"])),
        1 => Just(json!([])),
        1 => Just(Value::Null),
    ];
    let add = one_of([Value::Null, json!([]), json!(["NET_ADMIN"])]);
    let capabilities = (maybe(0.2, drop), maybe(0.2, add))
        .prop_map(|(drop, add)| object(vec![("drop", drop), ("add", add)]));
    (
        flag(0.2),
        flag(0.2),
        maybe(0.2, or_null(capabilities)),
        flag(0.1),
        maybe(0.1, one_of([json!(0), json!(1000), Value::Null])),
        maybe(
            0.1,
            one_of([
                json!({"type": "RuntimeDefault"}),
                json!({"type": "Unconfined"}),
            ]),
        ),
    )
        .prop_map(
            |(escalation, privileged, capabilities, non_root, user, seccomp)| {
                object(vec![
                    ("allowPrivilegeEscalation", escalation),
                    ("privileged", privileged),
                    ("capabilities", capabilities),
                    ("runAsNonRoot", non_root),
                    ("runAsUser", user),
                    ("seccompProfile", seccomp),
                ])
            },
        )
        .boxed()
}

/// A container other than the agent: hardened, then changed by a random securityContext patch
/// (or none at all); sometimes named `agent`.
fn other_container() -> BoxedStrategy<Value> {
    let name = prop_oneof![9 => text(&["log", "init"]), 1 => Just(json!(CONTAINER_NAME))];
    let context = prop_oneof![8 => security_context().prop_map(Some), 1 => Just(None)];
    (name, context)
        .prop_map(|(name, context)| {
            let mut container = sidecar(name.as_str().unwrap());
            match context {
                Some(context) => merge_patch(&mut container, &json!({"securityContext": context})),
                None => merge_patch(&mut container, &json!({"securityContext": null})),
            }
            container
        })
        .boxed()
}

/// The built agent container, restated and changed by a random patch of its invariant fields.
fn agent_container(agent: Value) -> BoxedStrategy<Value> {
    let built_env = agent["env"].as_array().cloned().unwrap_or_default();
    let var = (
        text(&[
            "MODE",
            "APIARY_AGENT_NAME",
            "APIARY_AGENT_ID",
            "APIARY_START_NONCE",
            "BUZZ_PILOT_POD_UID",
        ]),
        text(&["x", "y"]),
    )
        .prop_map(|(name, value)| json!({"name": name, "value": value}));
    // The built variables kept, dropped or not, plus up to two more.
    let env =
        (any::<bool>(), proptest::collection::vec(var, 0..3)).prop_map(move |(keep, more)| {
            let mut vars = if keep { built_env.clone() } else { Vec::new() };
            vars.extend(more);
            Value::from(vars)
        });
    let mut extra_source = agent["envFrom"].clone();
    if let Some(sources) = extra_source.as_array_mut() {
        sources.push(json!({"configMapRef": {"name": "cm"}}));
    }
    let env_from = prop_oneof![
        Just(agent["envFrom"].clone()),
        Just(extra_source),
        Just(json!([{"secretRef": {"name": "other", "optional": false}}])),
        Just(Value::Null),
    ];
    (
        maybe(0.1, or_null(text(&["busybox"]))),
        maybe(0.15, env_from),
        maybe(0.4, or_null(env)),
        maybe(0.2, or_null(security_context())),
    )
        .prop_map(move |(image, env_from, env, context)| {
            let mut container = agent.clone();
            merge_patch(
                &mut container,
                &object(vec![
                    ("image", image),
                    ("envFrom", env_from),
                    ("env", env),
                    ("securityContext", context),
                ]),
            );
            container
        })
        .boxed()
}

/// A patch biased toward the invariant paths of `pod`, with harmless fields and deletions
/// mixed in.
fn any_patch(pod: &Pod) -> BoxedStrategy<Value> {
    let name = Value::from(pod.metadata.name.clone());
    let metadata = (
        maybe(0.1, or_null(prop_oneof![Just(name), Just(json!("other"))])),
        maybe(0.1, or_null(text(&["agents", "default"]))),
        maybe(0.2, key_map()),
        maybe(0.2, key_map()),
    )
        .prop_map(|(name, namespace, labels, annotations)| {
            object(vec![
                ("name", name),
                ("namespace", namespace),
                ("labels", labels),
                ("annotations", annotations),
            ])
        });
    // Mostly one agent container among others; sometimes none, sometimes two.
    let agents = prop_oneof![
        8 => agent_container(agent_json(pod)).prop_map(|a| vec![a]),
        1 => Just(Vec::new()),
        1 => proptest::collection::vec(agent_container(agent_json(pod)), 2),
    ];
    let containers = (
        agents,
        proptest::collection::vec(other_container(), 0..3),
        any::<usize>(),
    )
        .prop_map(|(agents, mut others, at)| {
            let at = at % (others.len() + 1);
            others.splice(at..at, agents);
            Value::from(others)
        });
    let inits = proptest::collection::vec(other_container(), 0..3).prop_map(Value::from);
    let pod_context = or_null(one_of([
        json!({"runAsUser": 0}),
        json!({"fsGroup": 5}),
        json!({"runAsNonRoot": true}),
    ]));
    let spec = (
        (
            maybe(0.1, or_null(text(&["Never", "Always", "OnFailure"]))),
            flag(0.1),
            maybe(0.05, pod_context),
            flag(0.05),
            flag(0.05),
            flag(0.05),
        ),
        (
            maybe(0.6, prop_oneof![19 => containers, 1 => Just(Value::Null)]),
            maybe(0.3, or_null(inits)),
            maybe(0.3, harmless_spec()),
        ),
    )
        .prop_map(
            |((restart, automount, context, network, pid, ipc), (containers, inits, harmless))| {
                let mut spec = object(vec![
                    ("restartPolicy", restart),
                    ("automountServiceAccountToken", automount),
                    ("securityContext", context),
                    ("hostNetwork", network),
                    ("hostPID", pid),
                    ("hostIPC", ipc),
                    ("containers", containers),
                    ("initContainers", inits),
                ]);
                if let Some(harmless) = harmless {
                    merge_patch(&mut spec, &harmless);
                }
                spec
            },
        );
    let spec =
        prop_oneof![30 => spec.prop_map(Some), 1 => Just(Some(Value::Null)), 3 => Just(None)];
    let status = or_null(text(&["Running", "Pending"]).prop_map(|p| json!({"phase": p})));
    (maybe(0.5, metadata), spec, maybe(0.05, status))
        .prop_map(|(metadata, spec, status)| {
            object(vec![
                ("metadata", metadata),
                ("spec", spec),
                ("status", status),
            ])
        })
        .boxed()
}

/// Harmless spec fields, set or deleted.
fn harmless_spec() -> BoxedStrategy<Value> {
    let affinity = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}
    ]}});
    let spread =
        json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]);
    let volumes = json!([
        {"name": "workspace", "emptyDir": {}},
        {"name": "cache", "emptyDir": {"medium": "Memory"}},
        {"name": "conf", "configMap": {"name": "conf"}},
    ]);
    (
        maybe(0.5, or_null(Just(affinity))),
        maybe(
            0.5,
            or_null(Just(
                json!({"nameservers": ["1.1.1.1"], "searches": ["svc"]}),
            )),
        ),
        maybe(0.3, or_null(text(&["None", "Default", "ClusterFirst"]))),
        maybe(0.3, or_null(Just(spread))),
        maybe(0.5, or_null(Just(volumes))),
        maybe(0.3, or_null(Just(json!({"zone": "a"})))),
        maybe(0.3, or_null((1i64..600).prop_map(Value::from))),
        maybe(0.3, or_null(text(&["bot"]))),
    )
        .prop_map(
            |(affinity, dns, policy, spread, volumes, selector, grace, hostname)| {
                object(vec![
                    ("affinity", affinity),
                    ("dnsConfig", dns),
                    ("dnsPolicy", policy),
                    ("topologySpreadConstraints", spread),
                    ("volumes", volumes),
                    ("nodeSelector", selector),
                    ("terminationGracePeriodSeconds", grace),
                    ("hostname", hostname),
                ])
            },
        )
        .boxed()
}

/// A patch of the user's own label or annotation keys.
fn user_keys() -> BoxedStrategy<Value> {
    proptest::collection::btree_map(
        text(&["team", "tier", "example.com/note", "mine"])
            .prop_map(|k| k.as_str().unwrap().to_owned()),
        or_null(text(&["a", "b"])),
        0..3,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()))
    .boxed()
}

/// A patch of harmless fields only: user labels and annotations, harmless spec fields, and
/// invariant fields restated with their built values.
fn harmless_patch() -> BoxedStrategy<Value> {
    let restated = (
        maybe(0.3, text(&["Never"])),
        maybe(0.3, Just(json!(false))),
        maybe(0.3, Just(json!(false))),
    )
        .prop_map(|(restart, automount, network)| {
            object(vec![
                ("restartPolicy", restart),
                ("automountServiceAccountToken", automount),
                ("hostNetwork", network),
            ])
        });
    (
        maybe(0.5, user_keys()),
        maybe(0.5, user_keys()),
        harmless_spec(),
        restated,
        any::<bool>(),
    )
        .prop_map(|(labels, annotations, mut spec, restated, no_status)| {
            merge_patch(&mut spec, &restated);
            object(vec![
                (
                    "metadata",
                    Some(object(vec![
                        ("labels", labels),
                        ("annotations", annotations),
                    ])),
                ),
                ("spec", Some(spec)),
                ("status", no_status.then_some(Value::Null)),
            ])
        })
        .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever `apply` accepts keeps every invariant, as judged by an independent checker;
    /// and what it refuses, it refuses with a message naming `--overrides`.
    #[test]
    fn accepted_patches_keep_every_invariant(patch in any_patch(&built())) {
        let pod = built();
        match apply(&pod, &patch) {
            Ok(patched) => {
                let verdict = check(
                    &serde_json::to_value(&pod).unwrap(),
                    &serde_json::to_value(&patched).unwrap(),
                );
                prop_assert_eq!(verdict, Ok(()), "accepted {}", patch);
            }
            Err(error) => prop_assert!(error.to_string().starts_with("--overrides")),
        }
    }

    /// A patch of harmless fields is always accepted, and the pod carries it.
    #[test]
    fn harmless_patches_are_accepted(patch in harmless_patch()) {
        let pod = built();
        let patched = apply(&pod, &patch);
        prop_assert!(patched.is_ok(), "{} refused: {:?}", patch, patched);
        let mut expected = serde_json::to_value(&pod).unwrap();
        merge_patch(&mut expected, &patch);
        prop_assert_eq!(serde_json::to_value(patched.unwrap()).unwrap(), expected);
    }

    /// The canonical form ignores whitespace and is its own fixed point.
    #[test]
    fn canonical_is_a_fixed_point(patch in any_patch(&built())) {
        let compact = Overrides::parse(&patch.to_string()).unwrap().canonical();
        let pretty = serde_json::to_string_pretty(&patch).unwrap();
        prop_assert_eq!(&Overrides::parse(&pretty).unwrap().canonical(), &compact);
        prop_assert_eq!(&Overrides::parse(&compact).unwrap().canonical(), &compact);
        prop_assert_eq!(serde_json::from_str::<Value>(&compact).unwrap(), patch);
    }

    /// Applying a merge patch twice is applying it once (RFC 7386 patches are idempotent).
    #[test]
    fn merge_patch_is_idempotent(target in any_patch(&built()), patch in any_patch(&built())) {
        let mut once = target.clone();
        merge_patch(&mut once, &patch);
        let mut twice = once.clone();
        merge_patch(&mut twice, &patch);
        prop_assert_eq!(once, twice);
    }
}
