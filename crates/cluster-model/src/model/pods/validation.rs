//! What the apiserver (v1.20) does to a created pod in the fields apiary's pod options set
//! (deploy.md § Pod options), in its order: the decoder refuses a malformed quantity (400);
//! defaulting copies each limit without a request into the requests and rounds every quantity
//! up to milli; the Priority and RuntimeClass admission plugins refuse a class that cannot exist
//! (403); validation refuses labels, annotations, resources, the node selector and tolerations
//! with the apiserver's causes, word for word (422); the stored pod carries every quantity in
//! canonical form. Checked field by field against a real kube-apiserver by
//! `apiserver-sim/tests/differential/pod_fields.rs`; what is deliberately not modelled is listed
//! in the cluster-model README § Pod validation against the real apiserver.
//!
//! Layer: part of the pure model; pure functions over a pod. Performs no I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;

use super::super::quantity::{Quantity, go_quote};
use crate::error::{FieldCause, Kind, ModelError};
use crate::selector::validation::{is_dns_subdomain, label_value_errors, qualified_name_errors};

/// The most bytes an object's annotations (keys and values) may sum to.
const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// The resource names the apiserver knows without a prefix (`IsStandardResourceName`).
const STANDARD_RESOURCES: [&str; 20] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// The standard names whose quantities must be whole (`IsIntegerResourceName`, with every
/// extended resource).
const INTEGER_RESOURCES: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// The containers and init containers with the field path of each.
fn containers(pod: &Pod) -> Vec<(String, &Container)> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let mut all: Vec<(String, &Container)> = spec
        .containers
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("spec.containers[{i}]"), c))
        .collect();
    all.extend(
        spec.init_containers
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, c)| (format!("spec.initContainers[{i}]"), c)),
    );
    all
}

/// Every container's and init container's resource lists, to change.
fn resource_lists(pod: &mut Pod) -> impl Iterator<Item = &mut ResourceRequirements> {
    pod.spec.iter_mut().flat_map(|spec| {
        spec.containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
            .filter_map(|c| c.resources.as_mut())
    })
}

/// The quantities of one resource list (`limits` or `requests`).
fn quantities(
    list: Option<&BTreeMap<String, WireQuantity>>,
) -> impl Iterator<Item = (&String, &str)> {
    list.into_iter()
        .flatten()
        .map(|(name, WireQuantity(q))| (name, q.as_str()))
}

/// The decoder's refusal of a malformed quantity: 400, before any other check.
///
/// # Errors
/// `BadRequest` for the first quantity that does not parse.
pub(super) fn decode_quantities(pod: &Pod) -> Result<(), ModelError> {
    for (_, container) in containers(pod) {
        let Some(resources) = container.resources.as_ref() else {
            continue;
        };
        for (_, text) in
            quantities(resources.limits.as_ref()).chain(quantities(resources.requests.as_ref()))
        {
            if let Err(e) = Quantity::parse(text) {
                return Err(ModelError::BadRequest {
                    message: format!(
                        "Pod in version \"v1\" cannot be handled as a Pod: unmarshalerDecoder: {}",
                        e.message()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Defaulting: a limit without a request is requested too (`SetDefaults_Pod`).
pub(super) fn default_requests(pod: &mut Pod) {
    for resources in resource_lists(pod) {
        let Some(limits) = resources.limits.as_ref().filter(|l| !l.is_empty()) else {
            continue;
        };
        let requests = resources.requests.get_or_insert_with(BTreeMap::new);
        for (name, quantity) in limits {
            requests
                .entry(name.clone())
                .or_insert_with(|| quantity.clone());
        }
    }
}

/// The stored form: every quantity rounded up to milli and written canonically.
pub(super) fn canonicalize_quantities(pod: &mut Pod) {
    for resources in resource_lists(pod) {
        for list in [resources.limits.as_mut(), resources.requests.as_mut()] {
            for WireQuantity(text) in list.into_iter().flat_map(BTreeMap::values_mut) {
                if let Ok(mut quantity) = Quantity::parse(text) {
                    quantity.round_up_to_milli();
                    *text = quantity.to_canonical();
                }
            }
        }
    }
}

/// The Priority and RuntimeClass admission plugins: a class is looked up by name, and a name
/// that is not a DNS subdomain can name no class. Every other name is taken to exist: the model
/// holds no classes (cluster-model README § Pod validation against the real apiserver).
///
/// # Errors
/// `AdmissionForbidden` with the plugin's words; Priority runs first, as in the apiserver.
pub(super) fn admit_classes(name: &str, pod: &Pod) -> Result<(), ModelError> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(());
    };
    let refuse = |detail: String| ModelError::AdmissionForbidden {
        pod: name.to_owned(),
        detail,
    };
    if let Some(class) = spec.priority_class_name.as_deref()
        && !class.is_empty()
        && !is_dns_subdomain(class)
    {
        return Err(refuse(format!(
            "no PriorityClass with name {class} was found"
        )));
    }
    if let Some(class) = spec.runtime_class_name.as_deref()
        && !is_dns_subdomain(class)
    {
        return Err(refuse(format!(
            "pod rejected: RuntimeClass {} not found",
            go_quote(class)
        )));
    }
    Ok(())
}

/// Validation of the pod-option fields, in the apiserver's order: `metadata.labels`,
/// `metadata.annotations`, each container's resources, `spec.nodeSelector`,
/// `spec.tolerations`.
///
/// # Errors
/// `Invalid` with one cause per field error.
pub(super) fn validate(name: &str, pod: &Pod) -> Result<(), ModelError> {
    let mut causes = Vec::new();
    label_causes("metadata.labels", pod.metadata.labels.as_ref(), &mut causes);
    annotation_causes(pod.metadata.annotations.as_ref(), &mut causes);
    for (path, container) in containers(pod) {
        if let Some(resources) = container.resources.as_ref() {
            resource_causes(&format!("{path}.resources"), resources, &mut causes);
        }
    }
    if let Some(spec) = pod.spec.as_ref() {
        label_causes(
            "spec.nodeSelector",
            spec.node_selector.as_ref(),
            &mut causes,
        );
        for (i, toleration) in spec.tolerations.iter().flatten().enumerate() {
            toleration_causes(&format!("spec.tolerations[{i}]"), toleration, &mut causes);
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(ModelError::Invalid {
        kind: Kind::Pod,
        name: name.to_owned(),
        causes,
    })
}

/// `ValidateLabels`: every key a qualified name, every value a label value; both reported on
/// the map's own path.
fn label_causes(
    field: &str,
    labels: Option<&BTreeMap<String, String>>,
    causes: &mut Vec<FieldCause>,
) {
    for (key, value) in labels.into_iter().flatten() {
        for message in qualified_name_errors(key) {
            causes.push(FieldCause::invalid(field, &go_quote(key), &message));
        }
        for message in label_value_errors(value) {
            causes.push(FieldCause::invalid(field, &go_quote(value), &message));
        }
    }
}

/// `ValidateAnnotations`: every key, lower-cased, a qualified name; at most 256 KiB in all.
fn annotation_causes(annotations: Option<&BTreeMap<String, String>>, causes: &mut Vec<FieldCause>) {
    const FIELD: &str = "metadata.annotations";
    let annotations = annotations.into_iter().flatten();
    let mut size = 0usize;
    for (key, value) in annotations {
        for message in qualified_name_errors(&key.to_lowercase()) {
            causes.push(FieldCause::invalid(FIELD, &go_quote(key), &message));
        }
        size = size.saturating_add(key.len()).saturating_add(value.len());
    }
    if size > ANNOTATIONS_LIMIT {
        causes.push(FieldCause::too_long(FIELD, ANNOTATIONS_LIMIT));
    }
}

/// Native: unprefixed, or prefixed with `kubernetes.io/`.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// An extended resource: not native, and `requests.<name>` is a qualified name.
fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && qualified_name_errors(&format!("requests.{name}")).is_empty()
}

/// Whether a request may be below its limit (native, not huge pages).
fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !name.starts_with("hugepages-")
}

/// `validateContainerResourceName`.
fn resource_name_causes(name: &str, field: &str, causes: &mut Vec<FieldCause>) {
    let quoted = go_quote(name);
    let errors = qualified_name_errors(name);
    for message in &errors {
        causes.push(FieldCause::invalid(field, &quoted, message));
    }
    let standard = STANDARD_RESOURCES.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-");
    if errors.is_empty() && !name.contains('/') && !standard {
        causes.push(FieldCause::invalid(
            field,
            &quoted,
            "must be a standard resource type or fully qualified",
        ));
    }
    if !name.contains('/') {
        let for_containers = matches!(name, "cpu" | "memory" | "ephemeral-storage")
            || name.starts_with("hugepages-");
        if !for_containers {
            causes.push(FieldCause::invalid(
                field,
                &quoted,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        causes.push(FieldCause::invalid(
            field,
            &quoted,
            "doesn't follow extended resource name standard",
        ));
    }
}

/// The quantity as validation sees it (after the milli rounding of defaulting).
fn defaulted(text: &str) -> Option<Quantity> {
    let mut quantity = Quantity::parse(text).ok()?;
    quantity.round_up_to_milli();
    Some(quantity)
}

/// `ValidateResourceQuantityValue`: not negative; whole for an integer resource.
fn quantity_causes(name: &str, quantity: &Quantity, field: &str, causes: &mut Vec<FieldCause>) {
    if quantity.is_negative() {
        causes.push(FieldCause::invalid(
            field,
            &go_quote(&quantity.to_canonical()),
            "must be greater than or equal to 0",
        ));
    }
    let integer = INTEGER_RESOURCES.contains(&name) || is_extended(name);
    if integer && !quantity.is_whole() {
        causes.push(FieldCause::invalid(
            field,
            &quantity.go_dump(),
            "must be an integer",
        ));
    }
}

/// `ValidateResourceRequirements` (huge pages' own rules aside): the names and quantities of
/// the limits, then of the requests, each request against its limit.
fn resource_causes(path: &str, resources: &ResourceRequirements, causes: &mut Vec<FieldCause>) {
    let limits = resources.limits.as_ref();
    for (name, text) in quantities(limits) {
        let field = format!("{path}.limits[{name}]");
        resource_name_causes(name, &field, causes);
        if let Some(quantity) = defaulted(text) {
            quantity_causes(name, &quantity, &field, causes);
        }
    }
    for (name, text) in quantities(resources.requests.as_ref()) {
        let field = format!("{path}.requests[{name}]");
        resource_name_causes(name, &field, causes);
        let Some(request) = defaulted(text) else {
            continue;
        };
        quantity_causes(name, &request, &field, causes);
        let limit = limits
            .and_then(|l| l.get(name))
            .and_then(|WireQuantity(q)| defaulted(q));
        let shown = go_quote(&request.to_canonical());
        match limit {
            Some(limit) if request.cmp_value(&limit).is_ne() && !overcommit_allowed(name) => {
                causes.push(FieldCause::invalid(
                    format!("{path}.requests"),
                    &shown,
                    &format!("must be equal to {name} limit"),
                ));
            }
            Some(limit) if request.cmp_value(&limit).is_gt() => {
                causes.push(FieldCause::invalid(
                    format!("{path}.requests"),
                    &shown,
                    &format!("must be less than or equal to {name} limit"),
                ));
            }
            Some(_) => {}
            None if !overcommit_allowed(name) => {
                causes.push(FieldCause::required(
                    format!("{path}.limits"),
                    "Limit must be set for non overcommitable resources",
                ));
            }
            None => {}
        }
    }
}

/// The Go `%#v` of the apiserver's `core.Toleration`, as the `Exists`-with-a-value refusal
/// quotes it. `tolerationSeconds` is a pointer there, whose address no model can know.
fn toleration_dump(t: &Toleration) -> String {
    let text = |s: &Option<String>| go_quote(s.as_deref().unwrap_or(""));
    format!(
        "core.Toleration{{Key:{}, Operator:{}, Value:{}, Effect:{}, \
         TolerationSeconds:(*int64)({})}}",
        text(&t.key),
        text(&t.operator),
        text(&t.value),
        text(&t.effect),
        if t.toleration_seconds.is_some() {
            "0xc000000000"
        } else {
            "nil"
        },
    )
}

/// `ValidateTolerations` for one toleration: key, empty key, `tolerationSeconds`, operator
/// and value, effect, in that order.
fn toleration_causes(path: &str, t: &Toleration, causes: &mut Vec<FieldCause>) {
    let key = t.key.as_deref().unwrap_or("");
    let operator = t.operator.as_deref().unwrap_or("");
    let value = t.value.as_deref().unwrap_or("");
    let effect = t.effect.as_deref().unwrap_or("");
    let (key_field, operator_field, effect_field) = (
        format!("{path}.key"),
        format!("{path}.operator"),
        format!("{path}.effect"),
    );
    if !key.is_empty() {
        for message in qualified_name_errors(key) {
            causes.push(FieldCause::invalid(&key_field, &go_quote(key), &message));
        }
    }
    if key.is_empty() && operator != "Exists" {
        causes.push(FieldCause::invalid(
            &operator_field,
            &go_quote(operator),
            "operator must be Exists when `key` is empty, which means \"match all values and all \
             keys\"",
        ));
    }
    if t.toleration_seconds.is_some() && effect != "NoExecute" {
        causes.push(FieldCause::invalid(
            &effect_field,
            &go_quote(effect),
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
    match operator {
        "Equal" | "" => {
            let errors = label_value_errors(value);
            if !errors.is_empty() {
                causes.push(FieldCause::invalid(
                    &operator_field,
                    &go_quote(value),
                    &errors.join(";"),
                ));
            }
        }
        "Exists" if !value.is_empty() => causes.push(FieldCause::invalid(
            &operator_field,
            &toleration_dump(t),
            "value must be empty when `operator` is 'Exists'",
        )),
        "Exists" => {}
        other => causes.push(FieldCause::not_supported(
            &operator_field,
            &go_quote(other),
            &["Equal", "Exists"],
        )),
    }
    if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        causes.push(FieldCause::not_supported(
            &effect_field,
            &go_quote(effect),
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
        ));
    }
}

#[cfg(test)]
mod tests;
