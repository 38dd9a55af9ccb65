//! Kubernetes `Status` bodies with the apiserver's own `reason` spelling, codes and messages.
//!
//! Layer: pure wire vocabulary of the simulator. Every error answer the simulator gives is built
//! here, so the reason strings (`NotFound`, `AlreadyExists`, `Conflict`, `Forbidden`, `Invalid`,
//! `Expired`, `Gone`, …) are spelled in exactly one place. This module performs no I/O and must not
//! decide *when* an error happens, only what it looks like on the wire.

use apiary_cluster_model::ModelError;
use serde_json::{Value, json};

/// A failure answer: the HTTP status code and the `Status` object sent as its body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status code, equal to the body's `code`.
    pub code: u16,
    /// The `Status` object (`kind: Status`, `status: Failure`).
    pub body: Value,
}

impl ApiError {
    /// Builds a failure `Status` with the given code, reason, message and optional details.
    pub fn new(
        code: u16,
        reason: &str,
        message: impl Into<String>,
        details: Option<Value>,
    ) -> Self {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message.into(),
            "reason": reason,
            "code": code,
        });
        if let Some(details) = details {
            body["details"] = details;
        }
        ApiError { code, body }
    }

    /// The `reason` string of the body (empty when absent).
    pub fn reason(&self) -> &str {
        self.body["reason"].as_str().unwrap_or_default()
    }

    /// 404 `NotFound` for a named object: `pods "x" not found`.
    pub fn not_found(resource: &str, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{resource} \"{name}\" not found"),
            Some(json!({ "name": name, "kind": resource })),
        )
    }

    /// 404 `NotFound` for a path the simulator does not serve, as the apiserver words it.
    pub fn unknown_path() -> Self {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Some(json!({})),
        )
    }

    /// 409 `AlreadyExists`: `pods "x" already exists`.
    pub fn already_exists(resource: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{resource} \"{name}\" already exists"),
            Some(json!({ "name": name, "kind": resource })),
        )
    }

    /// 409 `Conflict` for a failed delete precondition, naming both values as the apiserver does
    /// (`kind` is the kind's name, `Pod`: the apiserver names it so here, not by resource).
    pub fn precondition_failed(
        kind: &str,
        name: &str,
        field: &str,
        wanted: &str,
        actual: &str,
    ) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {kind} \"{name}\": the {field} in the \
                 precondition ({wanted}) does not match the {field} in record ({actual}). The \
                 object might have been {}",
                if field == "UID" {
                    "deleted and then recreated"
                } else {
                    "modified"
                }
            ),
            Some(json!({ "name": name, "kind": kind })),
        )
    }

    /// 403 `Forbidden` in the authorizer's wording for `verb` on `resource`.
    ///
    /// `namespace` is `None` for cluster-scoped requests; `name` is `None` for collection verbs.
    pub fn forbidden(
        verb: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Self {
        let subject = match name {
            Some(name) => format!("{resource} \"{name}\""),
            None => resource.to_owned(),
        };
        let scope = match namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_owned(),
        };
        let mut details = json!({ "kind": resource });
        if let Some(name) = name {
            details["name"] = json!(name);
        }
        ApiError::new(
            403,
            "Forbidden",
            format!(
                "{subject} is forbidden: User \"system:anonymous\" cannot {verb} resource \
                 \"{resource}\" in API group \"\" {scope}"
            ),
            Some(details),
        )
    }

    /// 422 `Invalid` for one invalid field of a `kind` object named `name`. The cause's
    /// `reason` follows the detail's leading words, as the apiserver's field error types do
    /// (`Required value` is `FieldValueRequired`, `Forbidden` `FieldValueForbidden`, …).
    pub fn invalid(kind: &str, name: &str, field: &str, detail: &str) -> Self {
        ApiError::new(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {field}: {detail}"),
            Some(json!({
                "name": name,
                "kind": kind,
                "causes": [{ "reason": cause_reason(detail), "message": detail, "field": field }],
            })),
        )
    }

    /// 400 `BadRequest` with a message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message, None)
    }

    /// 405 `MethodNotAllowed` for a verb the simulator does not serve on a path.
    pub fn method_not_allowed() -> Self {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            Some(json!({})),
        )
    }

    /// 410 `Expired` for a `continue` token that outlived the server's history.
    pub fn continue_expired() -> Self {
        ApiError::new(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. \
             You can start a new list without the continue parameter.",
            None,
        )
    }

    /// 410 `Expired` for a watch from a `resourceVersion` older than the retained history, with
    /// the apiserver's "too old resource version" message.
    pub fn too_old_resource_version(requested: u64, oldest: u64) -> Self {
        ApiError::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
            None,
        )
    }

    /// 410 `Gone` with a message (the deprecated reason some apiserver paths still send).
    pub fn gone(message: impl Into<String>) -> Self {
        ApiError::new(410, "Gone", message, None)
    }

    /// 500 `InternalError`.
    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
            Some(json!({ "causes": [{ "message": "injected by the simulator" }] })),
        )
    }

    /// 503 `ServiceUnavailable`.
    pub fn service_unavailable() -> Self {
        ApiError::new(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
            None,
        )
    }

    /// 429 `TooManyRequests` carrying `retryAfterSeconds` in its details, as the apiserver's
    /// priority-and-fairness rejection does.
    pub fn too_many_requests(retry_after_seconds: u32) -> Self {
        ApiError::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
            Some(json!({ "retryAfterSeconds": retry_after_seconds })),
        )
    }
}

/// A `Status` with `status: Success`, as answered by a DELETE that removed a Secret at once:
/// the details name the object, its resource and its uid.
pub fn success_deleted(resource: &str, name: &str, uid: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": { "name": name, "kind": resource, "uid": uid },
    })
}

/// The `StatusCause.reason` of a field error, from the words its detail starts with (the
/// apiserver's `field.ErrorType` strings).
fn cause_reason(detail: &str) -> &'static str {
    const TYPES: [(&str, &str); 8] = [
        ("Required value", "FieldValueRequired"),
        ("Forbidden", "FieldValueForbidden"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Not found", "FieldValueNotFound"),
        ("Internal error", "InternalError"),
    ];
    TYPES
        .iter()
        .find(|(words, _)| detail.starts_with(words))
        .map_or("FieldValueInvalid", |(_, reason)| reason)
}

/// The model's refusal as the apiserver's `Status` answer.
pub(crate) fn model_error(e: &ModelError) -> ApiError {
    ApiError {
        code: e.code(),
        // A k8s-openapi Status serializes infallibly (strings and numbers); Null is never reached.
        body: serde_json::to_value(e.to_status()).unwrap_or(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the literal wire shape of a NotFound Status, the one substrate-kube reads as absence.
    #[test]
    fn not_found_has_literal_reason_code_and_details() {
        let e = ApiError::not_found("pods", "web-0");
        assert_eq!(e.code, 404);
        assert_eq!(e.body["kind"], "Status");
        assert_eq!(e.body["apiVersion"], "v1");
        assert_eq!(e.body["status"], "Failure");
        assert_eq!(e.body["reason"], "NotFound");
        assert_eq!(e.body["code"], 404);
        assert_eq!(e.body["message"], "pods \"web-0\" not found");
        assert_eq!(e.body["details"]["name"], "web-0");
        assert_eq!(e.body["details"]["kind"], "pods");
    }

    /// AlreadyExists and Conflict share 409 but differ in reason: the split of deploy.md
    /// § Semantics relied on.
    #[test]
    fn already_exists_and_conflict_share_409_with_distinct_reasons() {
        let a = ApiError::already_exists("pods", "p");
        let c = ApiError::precondition_failed("Pod", "p", "UID", "u1", "u2");
        assert_eq!((a.code, c.code), (409, 409));
        assert_eq!(a.reason(), "AlreadyExists");
        assert_eq!(c.reason(), "Conflict");
        assert_eq!(
            c.body["message"],
            "Operation cannot be fulfilled on Pod \"p\": the UID in the precondition (u1) does not \
             match the UID in record (u2). The object might have been deleted and then recreated"
        );
    }

    /// Forbidden uses the authorizer's wording, with namespace or cluster scope.
    #[test]
    fn forbidden_wording_names_verb_resource_and_scope() {
        let ns = ApiError::forbidden("create", "namespaces", None, None);
        assert_eq!(ns.code, 403);
        assert_eq!(ns.reason(), "Forbidden");
        assert_eq!(
            ns.body["message"],
            "namespaces is forbidden: User \"system:anonymous\" cannot create resource \
             \"namespaces\" in API group \"\" at the cluster scope"
        );
        let pod = ApiError::forbidden("delete", "pods", Some("agents"), Some("p"));
        assert_eq!(
            pod.body["message"],
            "pods \"p\" is forbidden: User \"system:anonymous\" cannot delete resource \"pods\" \
             in API group \"\" in the namespace \"agents\""
        );
        assert_eq!(pod.body["details"]["name"], "p");
    }

    /// Every 410 the simulator sends carries code 410; the reasons are `Expired` or `Gone`.
    #[test]
    fn gone_family_is_410() {
        assert_eq!(ApiError::continue_expired().reason(), "Expired");
        assert_eq!(ApiError::continue_expired().code, 410);
        let old = ApiError::too_old_resource_version(3, 9);
        assert_eq!(old.reason(), "Expired");
        assert_eq!(old.body["message"], "too old resource version: 3 (9)");
        assert_eq!(ApiError::gone("x").reason(), "Gone");
        assert_eq!(ApiError::gone("x").body["code"], 410);
    }

    /// 429 carries retryAfterSeconds; Invalid names the field in its causes.
    #[test]
    fn throttle_and_invalid_shapes() {
        let t = ApiError::too_many_requests(2);
        assert_eq!((t.code, t.reason()), (429, "TooManyRequests"));
        assert_eq!(t.body["details"]["retryAfterSeconds"], 2);
        let i = ApiError::invalid("Pod", "Bad", "metadata.name", "Invalid value: \"Bad\"");
        assert_eq!((i.code, i.reason()), (422, "Invalid"));
        assert_eq!(i.body["details"]["causes"][0]["field"], "metadata.name");
    }

    /// A Secret removed at once answers a Success Status naming it.
    #[test]
    fn success_status_names_deleted_object() {
        let s = success_deleted("secrets", "s", "u");
        assert_eq!(s["status"], "Success");
        assert_eq!(s["details"]["uid"], "u");
        assert_eq!(s["details"]["kind"], "secrets");
    }
}
