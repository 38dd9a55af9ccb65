//! Unit tests of `observe`: the mapping parts of O8, O9, O10, O12 and the deploy.md § Decoding a
//! pod container-state inputs (deploy.md § Decoding and verification). Pure; pods are built as JSON
//! fixtures.

use apiary_classify::binding::APIARY;
use apiary_classify::facts::{ConditionFacts, ContainerState};
use k8s_openapi::api::core::v1::{Pod, Secret};
use serde_json::json;

use super::*;

fn pod(value: serde_json::Value) -> Pod {
    serde_json::from_value(value).unwrap()
}

fn marked_meta() -> serde_json::Value {
    json!({
        "name": "apiary-bot-0123456789ab",
        "uid": "uid-1",
        "resourceVersion": "100",
        "creationTimestamp": "2026-08-02T04:00:00Z",
        "labels": {
            "app.kubernetes.io/managed-by": "apiary",
            "apiary.dev/binding-version": "1",
            "apiary.dev/agent": "0123"
        },
        "annotations": {
            "apiary.dev/agent-id": "ID",
            "apiary.dev/agent-name": "bot",
            "apiary.dev/create-intent": "INTENT",
            "apiary.dev/image": "x@sha256:0"
        }
    })
}

fn with_state(state: serde_json::Value) -> Pod {
    pod(json!({
        "metadata": marked_meta(),
        "spec": {"containers": [{"name": "agent"}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "sidecar", "image": "", "imageID": "", "ready": true, "restartCount": 0,
                 "state": {"running": {}}},
                {"name": "agent", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                 "state": state}
            ]
        }
    }))
}

/// O8/O9/O10 mapping: every mark is copied from metadata verbatim.
#[test]
fn marks_copied() {
    let p = pod(json!({"metadata": marked_meta()}));
    let marks = observe_pod(&p, APIARY).marks;
    assert_eq!(marks.name.as_deref(), Some("apiary-bot-0123456789ab"));
    assert_eq!(marks.uid.as_deref(), Some("uid-1"));
    assert_eq!(marks.resource_version.as_deref(), Some("100"));
    assert_eq!(marks.managed_by.as_deref(), Some("apiary"));
    assert_eq!(marks.binding_version.as_deref(), Some("1"));
    assert_eq!(marks.agent_id.as_deref(), Some("ID"));
    assert_eq!(marks.create_intent.as_deref(), Some("INTENT"));
    assert!(!marks.deletion_marked);
    // 2026-08-02T04:00:00Z.
    assert_eq!(marks.created_at_unix, Some(1_785_643_200));
}

/// O8 mapping: stripped labels and annotations map to absent marks.
#[test]
fn o8_stripped_marks_absent() {
    let p = pod(json!({"metadata": {"name": "x"}}));
    let marks = observe_pod(&p, APIARY).marks;
    assert_eq!(marks.managed_by, None);
    assert_eq!(marks.binding_version, None);
    assert_eq!(marks.agent_id, None);
    assert_eq!(marks.uid, None);
    assert_eq!(marks.resource_version, None);
    assert_eq!(marks.created_at_unix, None);
    // A label of the same key as an annotation is not mistaken for it, and vice versa.
    let swapped = pod(json!({"metadata": {
        "labels": {"apiary.dev/agent-id": "ID", "apiary.dev/create-intent": "I"},
        "annotations": {"app.kubernetes.io/managed-by": "apiary", "apiary.dev/binding-version": "1"}
    }}));
    let marks = observe_pod(&swapped, APIARY).marks;
    assert_eq!(marks.managed_by, None);
    assert_eq!(marks.binding_version, None);
    assert_eq!(marks.agent_id, None);
    assert_eq!(marks.create_intent, None);
}

/// O8 mapping: binding version 999 and another agent id are copied as they are.
#[test]
fn o8_foreign_values_copied() {
    let mut meta = marked_meta();
    meta["labels"]["apiary.dev/binding-version"] = json!("999");
    meta["annotations"]["apiary.dev/agent-id"] = json!("OTHER");
    let marks = observe_pod(&pod(json!({"metadata": meta})), APIARY).marks;
    assert_eq!(marks.binding_version.as_deref(), Some("999"));
    assert_eq!(marks.agent_id.as_deref(), Some("OTHER"));
}

/// O9: deletionTimestamp set → deletion_marked, fence fields still carried.
#[test]
fn o9_deletion_mark() {
    let mut meta = marked_meta();
    meta["deletionTimestamp"] = json!("2026-08-02T04:01:00Z");
    let marks = observe_pod(&pod(json!({"metadata": meta})), APIARY).marks;
    assert!(marks.deletion_marked);
    assert_eq!(marks.uid.as_deref(), Some("uid-1"));
    assert_eq!(marks.resource_version.as_deref(), Some("100"));
}

/// O10: no create-intent annotation → none recorded.
#[test]
fn o10_no_intent_annotation() {
    let mut meta = marked_meta();
    meta["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("apiary.dev/create-intent");
    let marks = observe_pod(&pod(json!({"metadata": meta})), APIARY).marks;
    assert_eq!(marks.create_intent, None);
    assert_eq!(marks.agent_id.as_deref(), Some("ID"));
}

/// O12 mapping: a Secret's marks are read the same way, and its data never.
#[test]
fn o12_secret_marks() {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": marked_meta(),
        "stringData": {"TOKEN": "v"}
    }))
    .unwrap();
    let observed = observe_secret(&secret, APIARY);
    assert_eq!(observed.marks.agent_id.as_deref(), Some("ID"));
    assert_eq!(observed.marks.managed_by.as_deref(), Some("apiary"));
    assert_eq!(observed.marks.binding_version.as_deref(), Some("1"));
    assert_eq!(observed.marks.uid.as_deref(), Some("uid-1"));
    assert_eq!(observed.marks.created_at_unix, Some(1_785_643_200));
    let bare = observe_secret(&Secret::default(), APIARY);
    assert_eq!(bare.marks.managed_by, None);
    assert_eq!(bare.marks.agent_id, None);
}

/// O1: running is read from the container named `agent`, not another one.
#[test]
fn o1_running() {
    let facts = pod_facts(&with_state(json!({"running": {}})));
    assert_eq!(facts.agent, Some(ContainerState::Running));
    assert_eq!(facts.phase.as_deref(), Some("Running"));
}

/// deploy.md § Decoding a pod: running beats terminated beats waiting when several are present.
#[test]
fn state_precedence() {
    let all = json!({"running": {}, "terminated": {"exitCode": 1}, "waiting": {"reason": "X"}});
    assert_eq!(
        pod_facts(&with_state(all)).agent,
        Some(ContainerState::Running)
    );
    let two = json!({"terminated": {"exitCode": 3, "reason": "Error"}, "waiting": {"reason": "X"}});
    assert_eq!(
        pod_facts(&with_state(two)).agent,
        Some(ContainerState::Terminated {
            exit_code: 3,
            reason: Some("Error".into())
        })
    );
}

/// O3: terminated with exit code and without reason.
#[test]
fn o3_terminated() {
    let facts = pod_facts(&with_state(json!({"terminated": {"exitCode": 0}})));
    assert_eq!(
        facts.agent,
        Some(ContainerState::Terminated {
            exit_code: 0,
            reason: None
        })
    );
}

/// O2/O5/O6: waiting reason and message are both carried (the message only for classifying).
#[test]
fn waiting_reason_and_message() {
    let facts = pod_facts(&with_state(
        json!({"waiting": {"reason": "ErrImagePull", "message": "401 Unauthorized"}}),
    ));
    assert_eq!(
        facts.agent,
        Some(ContainerState::Waiting {
            reason: Some("ErrImagePull".into()),
            message: Some("401 Unauthorized".into())
        })
    );
    let bare = pod_facts(&with_state(json!({"waiting": {}})));
    assert_eq!(
        bare.agent,
        Some(ContainerState::Waiting {
            reason: None,
            message: None
        })
    );
}

/// deploy.md § Decoding a pod: a `state` with none of the three members is `Empty`.
#[test]
fn empty_state() {
    assert_eq!(
        pod_facts(&with_state(json!({}))).agent,
        Some(ContainerState::Empty)
    );
}

/// O4 inputs: no status for `agent`, or a status without state → no agent state.
#[test]
fn o4_no_agent_status() {
    let p = pod(json!({"status": {"phase": "Failed"}}));
    let facts = pod_facts(&p);
    assert_eq!(facts.agent, None);
    assert_eq!(facts.phase.as_deref(), Some("Failed"));
    let other_only = pod(json!({"status": {"containerStatuses": [
        {"name": "sidecar", "image": "", "imageID": "", "ready": true, "restartCount": 0,
         "state": {"running": {}}}
    ]}}));
    assert_eq!(pod_facts(&other_only).agent, None);
    let stateless = pod(json!({"status": {"containerStatuses": [
        {"name": "agent", "image": "", "imageID": "", "ready": false, "restartCount": 0}
    ]}}));
    assert_eq!(pod_facts(&stateless).agent, None);
    let nothing = pod_facts(&Pod::default());
    assert_eq!(nothing.phase, None);
    assert_eq!(nothing.agent, None);
    assert!(nothing.conditions.is_empty());
    assert_eq!(nothing.env_from_secret, None);
}

/// deploy.md § Redacted condition text, inputs: conditions are copied in order with type, status,
/// reason and message.
#[test]
fn conditions_copied_in_order() {
    let p = pod(json!({"status": {"conditions": [
        {"type": "Ready", "status": "False"},
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/3 nodes are available: Insufficient memory"}
    ]}}));
    assert_eq!(
        pod_facts(&p).conditions,
        vec![
            ConditionFacts {
                kind: "Ready".into(),
                status: "False".into(),
                reason: None,
                message: None
            },
            ConditionFacts {
                kind: "PodScheduled".into(),
                status: "False".into(),
                reason: Some("Unschedulable".into()),
                message: Some("0/3 nodes are available: Insufficient memory".into())
            }
        ]
    );
}

/// O7 inputs: the first envFrom secretRef across containers, skipping ConfigMap sources.
#[test]
fn o7_first_env_from_secret() {
    let p = pod(json!({"spec": {"containers": [
        {"name": "sidecar", "envFrom": [{"configMapRef": {"name": "cm"}}]},
        {"name": "agent", "envFrom": [
            {"configMapRef": {"name": "cm2"}},
            {"secretRef": {"name": "S"}},
            {"secretRef": {"name": "T"}}
        ]},
        {"name": "third", "envFrom": [{"secretRef": {"name": "U"}}]}
    ],
    "initContainers": [{"name": "init", "envFrom": [{"secretRef": {"name": "I"}}]}]}}));
    assert_eq!(env_from_secret(&p).as_deref(), Some("S"));
    assert_eq!(pod_facts(&p).env_from_secret.as_deref(), Some("S"));
    let none = pod(json!({"spec": {"containers": [{"name": "agent"}]}}));
    assert_eq!(env_from_secret(&none), None);
    assert_eq!(env_from_secret(&Pod::default()), None);
}

/// A pod that references other Secrets (`--env-from-secret`, listed first) names its own by
/// the `<pod>-` prefix, wherever it stands; without one named so, the first is taken.
#[test]
fn the_own_secret_is_the_one_named_after_the_pod() {
    let p = pod(
        json!({"metadata": {"name": "agent-x"}, "spec": {"containers": [
            {"name": "agent", "envFrom": [
                {"secretRef": {"name": "team-creds"}},
                {"secretRef": {"name": "agent-x-0badc0de"}}
            ]}
        ]}}),
    );
    assert_eq!(env_from_secret(&p).as_deref(), Some("agent-x-0badc0de"));
    let p = pod(
        json!({"metadata": {"name": "agent-x"}, "spec": {"containers": [
            {"name": "agent", "envFrom": [
                {"secretRef": {"name": "agent-x-0badc0de"}},
                {"secretRef": {"name": "agent-x-team"}}
            ]}
        ]}}),
    );
    assert_eq!(env_from_secret(&p).as_deref(), Some("agent-x-0badc0de"));
    let p = pod(
        json!({"metadata": {"name": "agent-x"}, "spec": {"containers": [
            {"name": "agent", "envFrom": [
                {"secretRef": {"name": "team-creds"}},
                {"secretRef": {"name": "other"}}
            ]}
        ]}}),
    );
    assert_eq!(env_from_secret(&p).as_deref(), Some("team-creds"));
}

/// The pull-failure classifier strips the agent container's spec image, so observation copies
/// exactly that one (not another container's, not the status's resolved image).
#[test]
fn agent_image_is_the_spec_image_of_container_agent() {
    let p = pod(json!({"spec": {"containers": [
        {"name": "sidecar", "image": "side@sha256:11"},
        {"name": "agent", "image": "reg.example/a@sha256:22"}
    ]}}));
    assert_eq!(
        pod_facts(&p).image.as_deref(),
        Some("reg.example/a@sha256:22")
    );
    let other_only = pod(json!({"spec": {"containers": [
        {"name": "sidecar", "image": "side@sha256:11"}
    ]}}));
    assert_eq!(pod_facts(&other_only).image, None);
    assert_eq!(pod_facts(&Pod::default()).image, None);
}

/// deploy.md § Persistent workspace: the claim the pod's `workspace` volume mounts, and nothing
/// for an emptyDir workspace or a claim under another volume name.
#[test]
fn the_workspace_claim_is_read_from_the_workspace_volume() {
    let with = |volumes: serde_json::Value| {
        pod_facts(&pod(
            json!({"spec": {"containers": [], "volumes": volumes}}),
        ))
        .workspace_claim
    };
    assert_eq!(
        with(json!([{"name": "cache", "emptyDir": {}},
                    {"name": "workspace", "persistentVolumeClaim": {"claimName": "a-workspace"}}])),
        Some("a-workspace".to_owned())
    );
    assert_eq!(with(json!([{"name": "workspace", "emptyDir": {}}])), None);
    assert_eq!(
        with(json!([{"name": "data", "persistentVolumeClaim": {"claimName": "x"}}])),
        None
    );
    assert_eq!(pod_facts(&pod(json!({}))).workspace_claim, None);
}
