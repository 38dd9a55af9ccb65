//! The one update the simulator performs: `PATCH` of a pod with a JSON merge patch of
//! `metadata.annotations`, optionally guarded by `metadata.resourceVersion` — what `apiary renew`
//! sends (deploy.md § Expiry).
//!
//! Layer: the mapping between HTTP and one model operation (`ClusterModel::annotate_pod`, which
//! decides the conflict). It decodes and refuses what it does not perform (another patch type:
//! 415; another field: 422); it keeps no state.

use apiary_cluster_model::ModelError;
use bytes::Bytes;
use http::StatusCode;
use serde_json::{Value, json};

use crate::route::ResourceRequest;
use crate::shared::Shared;
use crate::status::{ApiError, model_error};

/// A status and a JSON body, or the refusal.
type Answer = Result<(StatusCode, Value), ApiError>;

/// The media type of a JSON merge patch (RFC 7386), the only patch the simulator performs.
pub const MERGE_PATCH: &str = "application/merge-patch+json";

/// `PATCH` of a pod with a JSON merge patch that changes `metadata.annotations` only, optionally
/// guarded by `metadata.resourceVersion` (409 `Conflict` when it is not the stored one, as the
/// apiserver answers a patch that carries one). Any other patch type is 415, any other field 422:
/// the simulator performs exactly what `apiary renew` sends.
pub(crate) fn patch_pod(
    shared: &Shared,
    req: &ResourceRequest,
    body: &Bytes,
    content_type: Option<&str>,
) -> Answer {
    if !content_type.is_some_and(|t| t.starts_with(MERGE_PATCH)) {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the simulator performs only {MERGE_PATCH} patches (got {})",
                content_type.unwrap_or("no content type")
            ),
            None,
        ));
    }
    let ns = req.namespace.as_deref().unwrap_or_default();
    let name = req.name.as_deref().unwrap_or_default();
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("cannot decode the merge patch: {e}")))?;
    let only_metadata = patch
        .as_object()
        .is_some_and(|o| o.keys().all(|k| k == "metadata"));
    let metadata = patch.get("metadata").and_then(Value::as_object);
    let only_annotations = metadata.is_some_and(|m| {
        m.keys()
            .all(|k| k == "annotations" || k == "resourceVersion")
    });
    if !only_metadata || !only_annotations {
        return Err(ApiError::invalid(
            "Pod",
            name,
            "metadata",
            "the simulator patches only metadata.annotations (guarded by metadata.resourceVersion)",
        ));
    }
    let resource_version = metadata
        .and_then(|m| m.get("resourceVersion"))
        .and_then(Value::as_str);
    let mut changes = std::collections::BTreeMap::new();
    for (key, value) in metadata
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let value = match value {
            Value::Null => None,
            Value::String(v) => Some(v.clone()),
            _ => {
                return Err(ApiError::invalid(
                    "Pod",
                    name,
                    "metadata.annotations",
                    "annotation values must be strings",
                ));
            }
        };
        changes.insert(key.clone(), value);
    }
    let pod = {
        let mut m = shared.model();
        m.annotate_pod(ns, name, resource_version, &changes)
            .map_err(|e| match e {
                // An update's conflict, in the apiserver's wording for a stale resourceVersion.
                ModelError::Conflict { .. } => ApiError::new(
                    409,
                    "Conflict",
                    format!(
                        "Operation cannot be fulfilled on pods \"{name}\": the object has been \
                         modified; please apply your changes to the latest version and try again"
                    ),
                    Some(json!({"name": name, "kind": "pods"})),
                ),
                other => model_error(&other),
            })?
    };
    shared.publish();
    Ok((
        StatusCode::OK,
        serde_json::to_value(&pod).unwrap_or(Value::Null),
    ))
}
