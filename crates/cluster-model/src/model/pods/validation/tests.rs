//! Unit tests of a created pod's checks in the fields apiary's pod options set: each expected
//! answer is what kube-apiserver v1.20.2 answered for the same pod (recorded by
//! `apiserver-sim/tests/differential/pod_fields.rs`, which also replays them live). Pure; no I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::json;

use crate::error::ModelError;
use crate::model::test_support::*;

/// The name-part rule of a qualified name, as the apiserver words it.
const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', \
     and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or \
     '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// The label-value rule, as the apiserver words it.
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric \
     characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
     'MyValue',  or 'my_value',  or '12345', regex used for validation is \
     '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn list(entries: &[(&str, &str)]) -> Option<BTreeMap<String, Quantity>> {
    Some(
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect(),
    )
}

/// A pod named `name` whose container has these requests and limits.
fn with_resources(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Pod {
    let mut pod = pod_named(name, IMAGE, None);
    let container = &mut pod.spec.as_mut().expect("spec").containers[0];
    container.resources = Some(ResourceRequirements {
        requests: (!requests.is_empty()).then(|| list(requests)).flatten(),
        limits: (!limits.is_empty()).then(|| list(limits)).flatten(),
        ..ResourceRequirements::default()
    });
    pod
}

fn with_toleration(name: &str, toleration: serde_json::Value) -> Pod {
    let mut pod = pod_named(name, IMAGE, None);
    let toleration: Toleration = serde_json::from_value(toleration).expect("a toleration");
    pod.spec.as_mut().expect("spec").tolerations = Some(vec![toleration]);
    pod
}

/// The create's refusal: code, reason, message and `(field, reason, message)` per cause.
fn refusal(pod: Pod) -> (u16, &'static str, String, Vec<(String, String, String)>) {
    let err = model().create_pod(NS, pod).expect_err("refused");
    let status = err.to_status();
    let causes = status
        .details
        .and_then(|d| d.causes)
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            (
                c.field.unwrap_or_default(),
                c.reason.unwrap_or_default(),
                c.message.unwrap_or_default(),
            )
        })
        .collect();
    (err.code(), err.reason(), err.to_string(), causes)
}

fn cause(field: &str, reason: &str, message: &str) -> (String, String, String) {
    (field.to_owned(), reason.to_owned(), message.to_owned())
}

fn int_dump(value: i64, scale: i32, s: &str) -> String {
    format!(
        "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, \
         d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:\"{s}\", Format:\"DecimalSI\"}}"
    )
}

/// The known gap this module closed: a fractional extended resource (`nvidia.com/gpu: 0.5` as
/// request and limit) is 422 with one `must be an integer` cause for the limit, then one for
/// the request, each quoting the apiserver's `resource.Quantity` dump.
#[test]
fn a_fractional_extended_resource_is_invalid() {
    let (code, reason, message, causes) = refusal(with_resources(
        "fractional-gpu",
        &[("nvidia.com/gpu", "0.5")],
        &[("nvidia.com/gpu", "0.5")],
    ));
    assert_eq!((code, reason), (422, "Invalid"));
    let body = format!("Invalid value: {}: must be an integer", int_dump(5, -1, ""));
    assert_eq!(
        causes,
        [
            cause(
                "spec.containers[0].resources.limits[nvidia.com/gpu]",
                "FieldValueInvalid",
                &body
            ),
            cause(
                "spec.containers[0].resources.requests[nvidia.com/gpu]",
                "FieldValueInvalid",
                &body
            ),
        ]
    );
    assert_eq!(
        message,
        format!(
            "Pod \"fractional-gpu\" is invalid: \
             [spec.containers[0].resources.limits[nvidia.com/gpu]: {body}, \
             spec.containers[0].resources.requests[nvidia.com/gpu]: {body}]"
        )
    );
    // A cached canonical input shows in the dump (`s:"500m"`); a limit-only value is requested
    // too, so it is refused twice.
    let (_, _, _, causes) = refusal(with_resources("m", &[], &[("example.com/g", "500m")]));
    assert_eq!(causes.len(), 2);
    assert_eq!(
        causes[0].2,
        format!(
            "Invalid value: {}: must be an integer",
            int_dump(500, -3, "500m")
        )
    );
}

/// Extended resources cannot be overcommitted: a request must equal its limit, and a request
/// needs a limit.
#[test]
fn an_extended_request_must_equal_its_limit() {
    let (code, _, message, causes) = refusal(with_resources(
        "gpu-request-ne-limit",
        &[("nvidia.com/gpu", "1")],
        &[("nvidia.com/gpu", "2")],
    ));
    assert_eq!(code, 422);
    assert_eq!(
        causes,
        [cause(
            "spec.containers[0].resources.requests",
            "FieldValueInvalid",
            "Invalid value: \"1\": must be equal to nvidia.com/gpu limit"
        )]
    );
    assert_eq!(
        message,
        "Pod \"gpu-request-ne-limit\" is invalid: spec.containers[0].resources.requests: Invalid \
         value: \"1\": must be equal to nvidia.com/gpu limit"
    );
    let (_, _, _, causes) = refusal(with_resources(
        "gpu-request-only",
        &[("nvidia.com/gpu", "1")],
        &[],
    ));
    assert_eq!(
        causes,
        [cause(
            "spec.containers[0].resources.limits",
            "FieldValueRequired",
            "Required value: Limit must be set for non overcommitable resources"
        )]
    );
}

/// A limit without a request is requested too (defaulting), so a GPU set only as a limit is
/// accepted with an equal request; native resources may be overcommitted but a request above
/// its limit is refused.
#[test]
fn limits_default_requests_and_requests_stay_below_limits() {
    let mut m = model();
    let created = m
        .create_pod(
            NS,
            with_resources("limit-only", &[], &[("nvidia.com/gpu", "1")]),
        )
        .expect("accepted");
    let resources = serde_json::to_value(&created.spec.unwrap().containers[0].resources).unwrap();
    assert_eq!(
        resources,
        json!({"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}})
    );
    let (_, _, _, causes) = refusal(with_resources(
        "above",
        &[("ephemeral-storage", "2Gi")],
        &[("ephemeral-storage", "1Gi")],
    ));
    assert_eq!(
        causes,
        [cause(
            "spec.containers[0].resources.requests",
            "FieldValueInvalid",
            "Invalid value: \"2Gi\": must be less than or equal to ephemeral-storage limit"
        )]
    );
    assert!(
        m.create_pod(
            NS,
            with_resources(
                "below",
                &[("ephemeral-storage", "1Gi")],
                &[("ephemeral-storage", "2Gi")]
            )
        )
        .is_ok()
    );
}

/// A negative quantity is refused with its canonical spelling; an extended one also as not
/// whole when it is fractional.
#[test]
fn negative_quantities_are_invalid() {
    let (_, _, message, causes) = refusal(with_resources(
        "ephemeral-negative",
        &[("ephemeral-storage", "-1Gi")],
        &[],
    ));
    assert_eq!(
        causes,
        [cause(
            "spec.containers[0].resources.requests[ephemeral-storage]",
            "FieldValueInvalid",
            "Invalid value: \"-1Gi\": must be greater than or equal to 0"
        )]
    );
    assert_eq!(
        message,
        "Pod \"ephemeral-negative\" is invalid: \
         spec.containers[0].resources.requests[ephemeral-storage]: Invalid value: \"-1Gi\": \
         must be greater than or equal to 0"
    );
    let (_, _, _, causes) = refusal(with_resources("g", &[], &[("example.com/g", "-0.5")]));
    let fields: Vec<&str> = causes.iter().map(|c| c.2.as_str()).collect();
    assert_eq!(
        fields,
        [
            "Invalid value: \"-500m\": must be greater than or equal to 0",
            &format!(
                "Invalid value: {}: must be an integer",
                int_dump(-5, -1, "")
            ),
            "Invalid value: \"-500m\": must be greater than or equal to 0",
            &format!(
                "Invalid value: {}: must be an integer",
                int_dump(-5, -1, "")
            ),
        ]
    );
}

/// Resource names: a qualified name that is an extended-resource name, or a standard one.
#[test]
fn resource_names_follow_the_apiservers_rules() {
    let field = "spec.containers[0].resources.limits[example.com/-widget]";
    let (_, _, _, causes) = refusal(with_resources(
        "unqualified",
        &[("example.com/-widget", "1")],
        &[("example.com/-widget", "1")],
    ));
    assert_eq!(causes.len(), 4, "two for the limit, two for the request");
    assert_eq!(
        causes[..2],
        [
            cause(
                field,
                "FieldValueInvalid",
                &format!("Invalid value: \"example.com/-widget\": {NAME_PART}")
            ),
            cause(
                field,
                "FieldValueInvalid",
                "Invalid value: \"example.com/-widget\": doesn't follow extended resource name \
                 standard"
            ),
        ]
    );
    let (_, _, _, causes) = refusal(with_resources("unprefixed", &[], &[("widget", "1")]));
    let messages: Vec<&str> = causes.iter().map(|c| c.2.as_str()).collect();
    assert_eq!(
        messages,
        [
            "Invalid value: \"widget\": must be a standard resource type or fully qualified",
            "Invalid value: \"widget\": must be a standard resource for containers",
            "Invalid value: \"widget\": must be a standard resource type or fully qualified",
            "Invalid value: \"widget\": must be a standard resource for containers",
        ]
    );
    let (_, _, _, causes) = refusal(with_resources("slashes", &[], &[("a/b/c", "1")]));
    assert!(causes[0].2.starts_with(
        "Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters"
    ));
    assert_eq!(
        causes[1].2,
        "Invalid value: \"a/b/c\": doesn't follow extended resource name standard"
    );
    let mut m = model();
    let fine = with_resources(
        "fine",
        &[("cpu", "100m"), ("kubernetes.io/thing", "1")],
        &[("example.com/widget", "2"), ("nvidia.com/gpu", "1")],
    );
    assert!(m.create_pod(NS, fine).is_ok());
}

/// Node selector keys and values follow the label rules, both reported on `spec.nodeSelector`.
#[test]
fn node_selector_entries_are_labels() {
    let mut pod = pod_named("node-selector-bad-key", IMAGE, None);
    pod.spec.as_mut().unwrap().node_selector =
        Some(BTreeMap::from([("bad key".to_owned(), "x".to_owned())]));
    let (_, _, message, causes) = refusal(pod);
    assert_eq!(
        causes,
        [cause(
            "spec.nodeSelector",
            "FieldValueInvalid",
            &format!("Invalid value: \"bad key\": {NAME_PART}")
        )]
    );
    assert_eq!(
        message,
        format!(
            "Pod \"node-selector-bad-key\" is invalid: spec.nodeSelector: \
             Invalid value: \"bad key\": {NAME_PART}"
        )
    );
    let mut pod = pod_named("v", IMAGE, None);
    pod.spec.as_mut().unwrap().node_selector = Some(BTreeMap::from([(
        "pool".to_owned(),
        "bad value".to_owned(),
    )]));
    let (_, _, _, causes) = refusal(pod);
    assert_eq!(
        causes,
        [cause(
            "spec.nodeSelector",
            "FieldValueInvalid",
            &format!("Invalid value: \"bad value\": {LABEL_VALUE}")
        )]
    );
}

/// Every toleration rule, with the field and words of the apiserver.
#[test]
fn tolerations_follow_the_apiservers_rules() {
    for (toleration, field, reason, message) in [
        (
            json!({"key": "k", "operator": "Exists", "value": "v", "effect": "NoSchedule"}),
            "operator",
            "FieldValueInvalid",
            "Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", \
             Effect:\"NoSchedule\", TolerationSeconds:(*int64)(nil)}: value must be empty when \
             `operator` is 'Exists'"
                .to_owned(),
        ),
        (
            json!({"key": "k", "operator": "Equal", "value": "v", "effect": "Bogus"}),
            "effect",
            "FieldValueNotSupported",
            "Unsupported value: \"Bogus\": supported values: \"NoSchedule\", \
             \"PreferNoSchedule\", \"NoExecute\""
                .to_owned(),
        ),
        (
            json!({"key": "bad key", "operator": "Exists"}),
            "key",
            "FieldValueInvalid",
            format!("Invalid value: \"bad key\": {NAME_PART}"),
        ),
        (
            json!({"key": "k", "operator": "Equal", "value": "bad value"}),
            "operator",
            "FieldValueInvalid",
            format!("Invalid value: \"bad value\": {LABEL_VALUE}"),
        ),
        (
            json!({"key": "k", "operator": "Maybe"}),
            "operator",
            "FieldValueNotSupported",
            "Unsupported value: \"Maybe\": supported values: \"Equal\", \"Exists\"".to_owned(),
        ),
        (
            json!({"operator": "Equal", "value": "v"}),
            "operator",
            "FieldValueInvalid",
            "Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \
             \"match all values and all keys\""
                .to_owned(),
        ),
        (
            json!({
                "key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60
            }),
            "effect",
            "FieldValueInvalid",
            "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` \
             is set"
                .to_owned(),
        ),
    ] {
        let (code, _, _, causes) = refusal(with_toleration("t", toleration.clone()));
        assert_eq!(code, 422, "{toleration}");
        assert_eq!(
            causes,
            [cause(
                &format!("spec.tolerations[0].{field}"),
                reason,
                &message
            )],
            "{toleration}"
        );
    }
    let mut m = model();
    for (i, fine) in [
        json!({"operator": "Exists"}),
        json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}),
        json!({"key": "k", "value": "v", "effect": "PreferNoSchedule"}),
    ]
    .into_iter()
    .enumerate()
    {
        assert!(
            m.create_pod(NS, with_toleration(&format!("ok-{i}"), fine))
                .is_ok()
        );
    }
}

/// Labels and annotations: label keys and values, annotation keys (checked lower-cased, so an
/// upper-case prefix is fine there but not in a label), and the 256 KiB annotation total.
#[test]
fn labels_and_annotations_follow_the_apiservers_rules() {
    let labelled = |labels: &[(&str, &str)], annotations: &[(&str, &str)]| {
        let mut pod = pod_named("p", IMAGE, None);
        let map = |e: &[(&str, &str)]| {
            e.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>()
        };
        pod.metadata.labels = Some(map(labels));
        pod.metadata.annotations = Some(map(annotations));
        pod
    };
    let (_, _, _, causes) = refusal(labelled(&[("bad key", "x")], &[]));
    assert_eq!(
        causes,
        [cause(
            "metadata.labels",
            "FieldValueInvalid",
            &format!("Invalid value: \"bad key\": {NAME_PART}")
        )]
    );
    let (_, _, _, causes) = refusal(labelled(&[("team", "bad value")], &[]));
    assert_eq!(
        causes[0].2,
        format!("Invalid value: \"bad value\": {LABEL_VALUE}")
    );
    let (_, _, _, causes) = refusal(labelled(&[("Example.com/team", "x")], &[]));
    assert!(causes[0].2.starts_with(
        "Invalid value: \"Example.com/team\": prefix part a lowercase RFC 1123 subdomain"
    ));
    let (_, _, _, causes) = refusal(labelled(&[], &[("bad key", "x")]));
    assert_eq!(
        causes,
        [cause(
            "metadata.annotations",
            "FieldValueInvalid",
            &format!("Invalid value: \"bad key\": {NAME_PART}")
        )]
    );
    let big = "x".repeat(256 * 1024);
    let (_, _, _, causes) = refusal(labelled(&[], &[("a", &big)]));
    assert_eq!(
        causes,
        [cause(
            "metadata.annotations",
            "FieldValueTooLong",
            "Too long: must have at most 262144 bytes"
        )]
    );
    let mut m = model();
    let fine = labelled(&[("team", "")], &[("Example.COM/Owner", "x")]);
    assert!(m.create_pod(NS, fine).is_ok());
}

/// Several causes: all reported, in the apiserver's order (metadata, resources, node selector,
/// tolerations), the message bracketing them.
#[test]
fn several_causes_are_reported_in_the_apiservers_order() {
    let mut pod = with_resources("many", &[("ephemeral-storage", "-1")], &[]);
    pod.metadata.labels = Some(BTreeMap::from([("bad key".to_owned(), "x".to_owned())]));
    let spec = pod.spec.as_mut().unwrap();
    spec.node_selector = Some(BTreeMap::from([("bad key".to_owned(), "x".to_owned())]));
    spec.tolerations = Some(vec![Toleration {
        effect: Some("Bogus".into()),
        ..Toleration::default()
    }]);
    let (_, _, message, causes) = refusal(pod);
    let fields: Vec<&str> = causes.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        fields,
        [
            "metadata.labels",
            "spec.containers[0].resources.requests[ephemeral-storage]",
            "spec.nodeSelector",
            "spec.tolerations[0].operator",
            "spec.tolerations[0].effect",
        ]
    );
    assert!(message.starts_with("Pod \"many\" is invalid: [metadata.labels: Invalid value"));
    assert!(message.ends_with("\"PreferNoSchedule\", \"NoExecute\"]"));
}

/// A class name that no class can have (not a DNS subdomain) is refused by admission with 403,
/// Priority before RuntimeClass and both before validation; any other name is taken to exist.
#[test]
fn class_admission_refuses_names_no_class_can_have() {
    let classes = |priority: Option<&str>, runtime: Option<&str>| {
        let mut pod = pod_named("c", IMAGE, None);
        pod.metadata.labels = Some(BTreeMap::from([("bad key".to_owned(), "x".to_owned())]));
        let spec = pod.spec.as_mut().unwrap();
        spec.priority_class_name = priority.map(str::to_owned);
        spec.runtime_class_name = runtime.map(str::to_owned);
        pod
    };
    let (code, reason, message, _) = refusal(classes(Some("Not_A_Subdomain"), Some("Bad_Too")));
    assert_eq!((code, reason), (403, "Forbidden"));
    assert_eq!(
        message,
        "pods \"c\" is forbidden: no PriorityClass with name Not_A_Subdomain was found"
    );
    let (_, _, message, _) = refusal(classes(None, Some("Not_A_Subdomain")));
    assert_eq!(
        message,
        "pods \"c\" is forbidden: pod rejected: RuntimeClass \"Not_A_Subdomain\" not found"
    );
    let err = model()
        .create_pod(NS, classes(None, Some("x")))
        .expect_err("the label");
    assert_eq!(err.code(), 422, "a well-formed class passes admission");
    let details = err.to_status().details.expect("details");
    assert_eq!(details.kind.as_deref(), Some("Pod"));
    let mut ok = pod_named("ok", IMAGE, None);
    ok.spec.as_mut().unwrap().priority_class_name = Some("high".into());
    ok.spec.as_mut().unwrap().runtime_class_name = Some("gvisor".into());
    assert!(model().create_pod(NS, ok).is_ok());
}

/// Validation answers before the name is found taken, as the apiserver validates before it
/// stores; a malformed quantity is the decoder's 400 before anything else.
#[test]
fn validation_precedes_already_exists_and_decoding_precedes_all() {
    let mut m = model();
    m.create_pod(NS, pod_named("taken", IMAGE, None)).unwrap();
    let err = m
        .create_pod(NS, with_resources("taken", &[("nvidia.com/gpu", "1")], &[]))
        .unwrap_err();
    assert_eq!(err.reason(), "Invalid");
    let err = m
        .create_pod(
            NS,
            with_resources("taken", &[("ephemeral-storage", "1Gb")], &[]),
        )
        .unwrap_err();
    assert!(matches!(err, ModelError::BadRequest { .. }));
    assert_eq!(
        err.to_string(),
        "Pod in version \"v1\" cannot be handled as a Pod: unmarshalerDecoder: quantities must \
         match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
}

/// A created pod carries its quantities as the apiserver writes them.
#[test]
fn created_pods_carry_canonical_quantities() {
    let mut m = model();
    let created = m
        .create_pod(
            NS,
            with_resources(
                "canonical",
                &[
                    ("ephemeral-storage", "1024Mi"),
                    ("example.com/widget", "2000m"),
                ],
                &[("ephemeral-storage", "1.5Gi"), ("example.com/widget", "2")],
            ),
        )
        .expect("accepted");
    let resources = serde_json::to_value(&created.spec.unwrap().containers[0].resources).unwrap();
    assert_eq!(
        resources,
        json!({
            "limits": {"ephemeral-storage": "1536Mi", "example.com/widget": "2"},
            "requests": {"ephemeral-storage": "1Gi", "example.com/widget": "2"},
        })
    );
}

/// The name-required refusal is worded with the kind's name and carries its cause.
#[test]
fn a_missing_name_is_invalid_with_its_cause() {
    let mut pod = pod_named("x", IMAGE, None);
    pod.metadata.name = None;
    let (code, _, message, causes) = refusal(pod);
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    assert_eq!(
        causes,
        [cause(
            "metadata.name",
            "FieldValueRequired",
            "Required value: name or generateName is required"
        )]
    );
}
