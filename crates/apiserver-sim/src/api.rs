//! Resource requests (namespaces, pods, Secrets: get, list, create, delete; a merge patch of a
//! pod's annotations; any other update or patch is answered but never performed) mapped onto the shared cluster model, plus the request
//! validation the apiserver does before storage (names, Secret keys and size).
//!
//! Layer: the mapping between HTTP and model operations. The model decides every outcome about
//! objects (stamping, conflicts, preconditions, graceful deletion); this module only decodes
//! requests, validates what the model does not, and encodes answers in the apiserver's JSON
//! shapes. It keeps no object state and must not duplicate the model's rules.

use std::sync::Arc;

use apiary_cluster_model::{ListPage, ModelError, PodDeletion, Preconditions};
use bytes::Bytes;
use http::{Response, StatusCode};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret, ServiceAccount};
use serde::Serialize;
use serde_json::{Value, json};

use crate::response::{SimBody, error_response, json_response};
use crate::route::{Query, Resource, ResourceRequest, Verb};
use crate::selection::list_options;
use crate::shared::Shared;
use crate::status::{ApiError, model_error, success_deleted};
use crate::{protobuf, table, watch};

/// The most bytes a Secret's values may sum to (deploy.md § Semantics relied on, item 9).
pub const SECRET_DATA_LIMIT: usize = 1024 * 1024;

/// Answers one request on a served resource.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    req: &ResourceRequest,
    query: &Query,
    body: &Bytes,
    content_type: Option<&str>,
    accept: Option<&str>,
) -> Response<SimBody> {
    // ServiceAccounts are served for reading and creating only.
    if req.resource == Resource::ServiceAccounts && !matches!(req.verb, Verb::Get | Verb::Create) {
        return error_response(&ApiError::method_not_allowed());
    }
    // Nodes are served for reading only (apiary only reads one: deploy.md § When a pod will not go
    // away); tests register them in the model.
    if req.resource == Resource::Nodes && req.verb != Verb::Get {
        return error_response(&ApiError::method_not_allowed());
    }
    let answer = match req.verb {
        Verb::Get => get(shared, req).map(|(s, v)| (s, as_table(shared, req.resource, accept, v))),
        Verb::List => {
            list(shared, req, query).map(|(s, v)| (s, as_table(shared, req.resource, accept, v)))
        }
        Verb::Watch => return watch::start(shared, req, query),
        Verb::Create if req.resource == Resource::Pods && query.get("dryRun") == Some("All") => {
            dry_run_pod(shared, req, &decode_body(body, content_type))
        }
        Verb::Create => create(shared, req, &decode_body(body, content_type)),
        Verb::Delete => delete(shared, req, query, body),
        Verb::Patch if req.resource == Resource::Pods => {
            crate::patch::patch_pod(shared, req, body, content_type)
        }
        Verb::Update | Verb::Patch => refuse_update(shared, req),
    };
    match answer {
        Ok((status, value)) => json_response(status, &value),
        Err(e) => error_response(&e),
    }
}

type Answer = Result<(StatusCode, Value), ApiError>;

/// The answer of a get or list as a `Table` when the client asked for one (`kubectl get`).
fn as_table(shared: &Shared, resource: Resource, accept: Option<&str>, value: Value) -> Value {
    if !table::wants_table(accept) {
        return value;
    }
    let now = shared.clock.now();
    match value.get("items").and_then(Value::as_array) {
        Some(items) => {
            let rv = value["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default();
            let mut t = table::table(resource, items, rv, now);
            if let Some(token) = value["metadata"].get("continue") {
                t["metadata"]["continue"] = token.clone();
            }
            t
        }
        None => {
            let rv = value["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default();
            table::table(resource, std::slice::from_ref(&value), rv, now)
        }
    }
}

pub(crate) fn to_json<T: Serialize>(value: &T) -> Value {
    // k8s-openapi types serialize infallibly (maps, strings, numbers); Null is never reached.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn name_of(req: &ResourceRequest) -> &str {
    req.name.as_deref().unwrap_or_default()
}

fn namespace_of(req: &ResourceRequest) -> &str {
    req.namespace.as_deref().unwrap_or_default()
}

fn get(shared: &Shared, req: &ResourceRequest) -> Answer {
    let m = shared.model();
    let (ns, name) = (namespace_of(req), name_of(req));
    let value = match req.resource {
        Resource::Namespaces => to_json(&m.get_namespace(name).map_err(|e| model_error(&e))?),
        Resource::Pods => to_json(&m.get_pod(ns, name).map_err(|e| model_error(&e))?),
        Resource::Secrets => to_json(&m.get_secret(ns, name).map_err(|e| model_error(&e))?),
        Resource::ServiceAccounts => to_json(
            &m.get_service_account(ns, name)
                .map_err(|e| model_error(&e))?,
        ),
        Resource::Nodes => to_json(&m.get_node(name).map_err(|e| model_error(&e))?),
    };
    Ok((StatusCode::OK, value))
}

fn list(shared: &Shared, req: &ResourceRequest, query: &Query) -> Answer {
    let options = list_options(query)?;
    let m = shared.model();
    let ns = req.namespace.as_deref();
    let value = match req.resource {
        Resource::Namespaces => list_json("NamespaceList", m.list_namespaces(&options)),
        Resource::Pods => list_json("PodList", m.list_pods(ns, &options)),
        Resource::Secrets => list_json("SecretList", m.list_secrets(ns, &options)),
        // Refused before dispatch (`serve`): only get (and create) are served.
        Resource::ServiceAccounts | Resource::Nodes => return Err(ApiError::method_not_allowed()),
    }?;
    Ok((StatusCode::OK, value))
}

/// A list document as the apiserver sends it: items without their own `apiVersion`/`kind`.
fn list_json<T: Serialize>(
    kind: &str,
    page: Result<ListPage<T>, ModelError>,
) -> Result<Value, ApiError> {
    let page = page.map_err(|e| model_error(&e))?;
    let items: Vec<Value> = page
        .items
        .iter()
        .map(|item| {
            let mut v = to_json(item);
            if let Some(obj) = v.as_object_mut() {
                obj.remove("apiVersion");
                obj.remove("kind");
            }
            v
        })
        .collect();
    let mut metadata = json!({ "resourceVersion": page.resource_version });
    if let Some(token) = page.continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(remaining) = page.remaining_item_count {
        metadata["remainingItemCount"] = json!(remaining);
    }
    Ok(json!({ "kind": kind, "apiVersion": "v1", "metadata": metadata, "items": items }))
}

/// A create body: JSON as sent, or a protobuf Namespace or Secret (as `kubectl create` sends
/// them) decoded to JSON, or the refusal of an undecodable protobuf body.
enum CreateBody<'a> {
    Json(&'a Bytes),
    Decoded(Value),
    Unsupported(&'static str),
}

fn decode_body<'a>(body: &'a Bytes, content_type: Option<&str>) -> CreateBody<'a> {
    if content_type.is_some_and(|t| t.starts_with(protobuf::MEDIA_TYPE)) {
        match protobuf::decode_object(body) {
            Ok(v) => CreateBody::Decoded(v),
            Err(protobuf::DecodeError(why)) => CreateBody::Unsupported(why),
        }
    } else {
        CreateBody::Json(body)
    }
}

fn decode<T: serde::de::DeserializeOwned>(
    kind: &str,
    body: &CreateBody<'_>,
) -> Result<T, ApiError> {
    let decoded = match body {
        CreateBody::Json(bytes) => serde_json::from_slice(bytes),
        CreateBody::Decoded(v) => serde_json::from_value(v.clone()),
        CreateBody::Unsupported(why) => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "the body of the request was in an unknown format ({why}) - accepted media \
                     types include: application/json"
                ),
                None,
            ));
        }
    };
    decoded.map_err(|e| {
        // serde's message can quote the offending value; a Secret's values must not be echoed.
        let why = if kind == "Secret" {
            format!("line {} column {}", e.line(), e.column())
        } else {
            e.to_string()
        };
        ApiError::bad_request(format!(
            "the body of the request was in an unknown format: cannot decode {kind}: {why}"
        ))
    })
}

/// A pod create with `dryRun=All`: validated and admitted as a create is, under its
/// `generateName` or name, and answered `201` with the pod, stored nowhere.
fn dry_run_pod(shared: &Shared, req: &ResourceRequest, body: &CreateBody<'_>) -> Answer {
    let ns = namespace_of(req);
    let mut object: Pod = decode("Pod", body)?;
    // The API server appends five random characters to a `generateName`.
    if object.metadata.name.is_none() {
        object.metadata.name = object
            .metadata
            .generate_name
            .as_ref()
            .map(|prefix| format!("{prefix}dryrn"));
    }
    validate_name(NameRule::Subdomain, "Pod", object.metadata.name.as_deref())?;
    validate_pod(&object)?;
    shared
        .model()
        .check_pod_create(ns, object.clone())
        .map_err(|e| model_error(&e))?;
    Ok((StatusCode::CREATED, to_json(&object)))
}

fn create(shared: &Shared, req: &ResourceRequest, body: &CreateBody<'_>) -> Answer {
    let ns = namespace_of(req);
    let value = match req.resource {
        Resource::Namespaces => {
            let object: Namespace = decode("Namespace", body)?;
            validate_name(
                NameRule::Label,
                "Namespace",
                object.metadata.name.as_deref(),
            )?;
            let mut m = shared.model();
            let created = m.create_namespace(object).map_err(|e| model_error(&e))?;
            to_json(&created)
        }
        Resource::Pods => {
            let object: Pod = decode("Pod", body)?;
            validate_name(NameRule::Subdomain, "Pod", object.metadata.name.as_deref())?;
            validate_pod(&object)?;
            let mut m = shared.model();
            let created = m.create_pod(ns, object).map_err(|e| model_error(&e))?;
            to_json(&created)
        }
        Resource::Secrets => {
            let mut object: Secret = decode("Secret", body)?;
            // The apiserver defaults an empty type to Opaque, as it does an absent one.
            if object.type_.as_deref() == Some("") {
                object.type_ = None;
            }
            validate_name(
                NameRule::Subdomain,
                "Secret",
                object.metadata.name.as_deref(),
            )?;
            validate_secret(&object)?;
            let mut m = shared.model();
            let created = m.create_secret(ns, object).map_err(|e| model_error(&e))?;
            to_json(&created)
        }
        Resource::ServiceAccounts => {
            let object: ServiceAccount = decode("ServiceAccount", body)?;
            validate_name(
                NameRule::Subdomain,
                "ServiceAccount",
                object.metadata.name.as_deref(),
            )?;
            let mut m = shared.model();
            let created = m
                .create_service_account(ns, object)
                .map_err(|e| model_error(&e))?;
            to_json(&created)
        }
        Resource::Nodes => return Err(ApiError::method_not_allowed()),
    };
    shared.publish();
    Ok((StatusCode::CREATED, value))
}

/// What a DELETE asked for: its preconditions and an explicit grace period, if any.
fn delete_options(query: &Query, body: &Bytes) -> Result<(Preconditions, Option<i64>), ApiError> {
    let options: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("cannot decode DeleteOptions: {e}")))?
    };
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let preconditions = Preconditions {
        uid: options["preconditions"].get("uid").and_then(text),
        resource_version: options["preconditions"]
            .get("resourceVersion")
            .and_then(text),
    };
    let grace =
        match options.get("gracePeriodSeconds").and_then(Value::as_i64) {
            Some(g) => Some(g),
            None => match query.non_empty("gracePeriodSeconds") {
                Some(g) => Some(g.parse::<i64>().map_err(|_| {
                    ApiError::bad_request(format!("invalid gracePeriodSeconds {g:?}"))
                })?),
                None => None,
            },
        };
    Ok((preconditions, grace))
}

fn delete(shared: &Shared, req: &ResourceRequest, query: &Query, body: &Bytes) -> Answer {
    let (preconditions, grace) = delete_options(query, body)?;
    let (ns, name) = (namespace_of(req), name_of(req));
    let value = {
        let mut m = shared.model();
        match req.resource {
            Resource::Namespaces => to_json(
                &m.delete_namespace(name, &preconditions)
                    .map_err(|e| model_error(&e))?,
            ),
            // A pod delete answers the pod: still present with its deletion mark while it
            // terminates gracefully, or its last state when it was removed at once.
            Resource::Pods => match m
                .delete_pod(ns, name, &preconditions, grace)
                .map_err(|e| model_error(&e))?
            {
                PodDeletion::Marked(pod) | PodDeletion::Removed(pod) => to_json(&pod),
            },
            Resource::Secrets => {
                let gone = m
                    .delete_secret(ns, name, &preconditions)
                    .map_err(|e| model_error(&e))?;
                success_deleted(
                    "secrets",
                    name,
                    gone.metadata.uid.as_deref().unwrap_or_default(),
                )
            }
            Resource::ServiceAccounts | Resource::Nodes => {
                return Err(ApiError::method_not_allowed());
            }
        }
    };
    shared.publish();
    Ok((StatusCode::OK, value))
}

/// PUT and PATCH are never performed. On an immutable Secret they answer what the apiserver
/// answers (422 `Invalid`, the payload is immutable); otherwise 405.
fn refuse_update(shared: &Shared, req: &ResourceRequest) -> Answer {
    let (ns, name) = (namespace_of(req), name_of(req));
    let m = shared.model();
    match req.resource {
        Resource::Secrets => {
            let secret = m.get_secret(ns, name).map_err(|e| model_error(&e))?;
            if secret.immutable == Some(true) {
                return Err(ApiError::invalid(
                    "Secret",
                    name,
                    "data",
                    "Forbidden: field is immutable when `immutable` is set",
                ));
            }
        }
        Resource::Pods => {
            m.get_pod(ns, name).map_err(|e| model_error(&e))?;
        }
        Resource::Namespaces => {
            m.get_namespace(name).map_err(|e| model_error(&e))?;
        }
        Resource::ServiceAccounts | Resource::Nodes => {}
    }
    Err(ApiError::method_not_allowed())
}

/// Which name syntax an object kind requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// RFC 1123 label (namespaces): at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
    Label,
    /// RFC 1123 subdomain (pods, Secrets): labels joined by `.`, at most 253 characters.
    Subdomain,
}

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Whether `name` satisfies `rule`.
pub(crate) fn name_is_valid(rule: NameRule, name: &str) -> bool {
    match rule {
        NameRule::Label => is_label(name),
        NameRule::Subdomain => name.len() <= 253 && name.split('.').all(is_label),
    }
}

/// Refuses a present but malformed name with the apiserver's 422 wording. An absent name is left
/// to the model, which answers `Invalid` for it.
fn validate_name(rule: NameRule, kind: &str, name: Option<&str>) -> Result<(), ApiError> {
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Ok(());
    };
    if name_is_valid(rule, name) {
        return Ok(());
    }
    let what = match rule {
        NameRule::Label => {
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
             '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        }
        NameRule::Subdomain => {
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        }
    };
    Err(ApiError::invalid(
        kind,
        name,
        "metadata.name",
        &format!("Invalid value: \"{name}\": {what}"),
    ))
}

fn validate_pod(pod: &Pod) -> Result<(), ApiError> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    if pod.spec.as_ref().is_none_or(|s| s.containers.is_empty()) {
        return Err(ApiError::invalid(
            "Pod",
            name,
            "spec.containers",
            "Required value",
        ));
    }
    Ok(())
}

/// Whether `key` is a valid Secret data key (`[-._a-zA-Z0-9]+`).
pub(crate) fn is_config_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && key != "."
        && key != ".."
}

fn validate_secret(secret: &Secret) -> Result<(), ApiError> {
    let name = secret.metadata.name.as_deref().unwrap_or_default();
    let data = secret
        .data
        .iter()
        .flatten()
        .map(|(k, ByteString(v))| (k, v.len()));
    let string_data = secret
        .string_data
        .iter()
        .flatten()
        .map(|(k, v)| (k, v.len()));
    let mut total = 0usize;
    for (key, len) in data.chain(string_data) {
        if !is_config_key(key) {
            return Err(ApiError::invalid(
                "Secret",
                name,
                &format!("data[{key}]"),
                &format!(
                    "Invalid value: \"{key}\": a valid config key must consist of alphanumeric \
                     characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or \
                     'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
                ),
            ));
        }
        total = total.saturating_add(len);
    }
    if total > SECRET_DATA_LIMIT {
        return Err(ApiError::invalid(
            "Secret",
            name,
            "data",
            &format!("Too long: must have at most {SECRET_DATA_LIMIT} bytes"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Namespace names are RFC 1123 labels; pod and Secret names subdomains (boundaries 63/253).
    #[test]
    fn name_rules_match_the_apiserver() {
        for ok in ["a", "a-b", "0x", &"a".repeat(63)] {
            assert!(name_is_valid(NameRule::Label, ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", &"a".repeat(64)] {
            assert!(!name_is_valid(NameRule::Label, bad), "{bad}");
        }
        assert!(name_is_valid(NameRule::Subdomain, "a.b-c.d"));
        let long = format!(
            "{}.{}.{}.{}",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61)
        );
        assert_eq!(long.len(), 253);
        assert!(name_is_valid(NameRule::Subdomain, &long));
        assert!(!name_is_valid(NameRule::Subdomain, &format!("{long}e")));
        for bad in ["a..b", ".a", "a.", "Agent"] {
            assert!(!name_is_valid(NameRule::Subdomain, bad), "{bad}");
        }
    }

    /// Secret keys follow the config-key rule.
    #[test]
    fn config_keys() {
        for ok in ["A_B", "a.b", "-x", "k1"] {
            assert!(is_config_key(ok), "{ok}");
        }
        for bad in ["", ".", "..", "a b", "a/b", "ä"] {
            assert!(!is_config_key(bad), "{bad}");
        }
    }

    /// A Secret at exactly 1 MiB of values is accepted, one byte more is Invalid.
    #[test]
    fn secret_size_boundary() {
        let secret = |n: usize| Secret {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("s".into()),
                ..Default::default()
            },
            data: Some([("a".to_owned(), ByteString(vec![0; n]))].into()),
            ..Default::default()
        };
        assert!(validate_secret(&secret(SECRET_DATA_LIMIT)).is_ok());
        let e = validate_secret(&secret(SECRET_DATA_LIMIT + 1)).expect_err("too big");
        assert_eq!((e.code, e.reason()), (422, "Invalid"));
    }

    /// Delete options come from the body (preconditions, grace) or the query (grace).
    #[test]
    fn delete_options_decoding() {
        let body = Bytes::from(r#"{"preconditions":{"uid":"u","resourceVersion":"9"}}"#);
        let (p, g) = delete_options(&Query::default(), &body).expect("decodes");
        assert_eq!(p.uid.as_deref(), Some("u"));
        assert_eq!(p.resource_version.as_deref(), Some("9"));
        assert_eq!(g, None);
        let (p, g) =
            delete_options(&Query::parse("gracePeriodSeconds=0"), &Bytes::new()).expect("decodes");
        assert_eq!(p, Preconditions::default());
        assert_eq!(g, Some(0));
        let (_, g) = delete_options(
            &Query::default(),
            &Bytes::from(r#"{"gracePeriodSeconds":5}"#),
        )
        .expect("decodes");
        assert_eq!(g, Some(5));
        assert!(delete_options(&Query::default(), &Bytes::from("{nope")).is_err());
    }
}
