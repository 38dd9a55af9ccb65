//! The model's refusals, spelled as the real apiserver spells them (`Status.code`, `Status.reason`,
//! `Status.message`), so the fake and the simulator answer with the same literals a real cluster
//! would. Pure data: performs no I/O.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};

/// The kinds of object the model stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `v1/Namespace` (cluster-scoped).
    Namespace,
    /// `v1/Pod`.
    Pod,
    /// `v1/Secret`.
    Secret,
    /// `v1/ServiceAccount`.
    ServiceAccount,
    /// `v1/Node` (cluster-scoped).
    Node,
}

impl Kind {
    /// The lower-case plural resource name the apiserver uses in URLs and messages (`pods`).
    pub fn resource(self) -> &'static str {
        match self {
            Self::Namespace => "namespaces",
            Self::Pod => "pods",
            Self::Secret => "secrets",
            Self::ServiceAccount => "serviceaccounts",
            Self::Node => "nodes",
        }
    }

    /// The `kind` field of the object (`Pod`).
    pub fn kind_name(self) -> &'static str {
        match self {
            Self::Namespace => "Namespace",
            Self::Pod => "Pod",
            Self::Secret => "Secret",
            Self::ServiceAccount => "ServiceAccount",
            Self::Node => "Node",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.resource())
    }
}

/// One field error of a 422 `Invalid`: an entry of `Status.details.causes`, spelled as the
/// apiserver's `field.Error` spells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldCause {
    /// The error type: `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`,
    /// `FieldValueTooLong`, …
    pub reason: &'static str,
    /// The field path (`spec.tolerations[0].effect`).
    pub field: String,
    /// The error without the field (`Unsupported value: "Bogus": supported values: …`).
    pub message: String,
}

impl FieldCause {
    /// A `FieldValueInvalid` cause: `Invalid value: <value>: <detail>`, where `value` is
    /// already written as the apiserver writes the bad value (a quoted string, a Go dump).
    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> Self {
        Self {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: {value}: {detail}"),
        }
    }

    /// A `FieldValueRequired` cause: `Required value` (`: <detail>` when there is one).
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        Self {
            reason: "FieldValueRequired",
            field: field.into(),
            message: if detail.is_empty() {
                "Required value".to_owned()
            } else {
                format!("Required value: {detail}")
            },
        }
    }

    /// A `FieldValueNotSupported` cause: `Unsupported value: <value>: supported values: …`.
    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let supported: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        Self {
            reason: "FieldValueNotSupported",
            field: field.into(),
            message: format!(
                "Unsupported value: {value}: supported values: {}",
                supported.join(", ")
            ),
        }
    }

    /// A `FieldValueTooLong` cause: `Too long: must have at most <limit> bytes`.
    pub fn too_long(field: impl Into<String>, limit: usize) -> Self {
        Self {
            reason: "FieldValueTooLong",
            field: field.into(),
            message: format!("Too long: must have at most {limit} bytes"),
        }
    }
}

impl std::fmt::Display for FieldCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The causes as the apiserver's message joins them: one alone, or several in brackets,
/// separated by commas, each distinct text once.
fn joined(causes: &[FieldCause]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for cause in causes {
        let text = cause.to_string();
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    match seen.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A request the model refuses. Every variant maps onto one apiserver `Status` (see
/// [`ModelError::code`], [`ModelError::reason`], [`ModelError::to_status`]); the `Display` text is
/// the apiserver's `Status.message`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// 404 `NotFound`: the object (or, on create, its namespace) does not exist.
    #[error("{kind} \"{name}\" not found")]
    NotFound {
        /// The kind that is missing (`Namespace` when a create targets a missing namespace).
        kind: Kind,
        /// Its name.
        name: String,
    },
    /// 409 `AlreadyExists`: a create named an object that exists.
    #[error("{kind} \"{name}\" already exists")]
    AlreadyExists {
        /// The kind.
        kind: Kind,
        /// The taken name.
        name: String,
    },
    /// 409 `Conflict`: a delete precondition (uid or resourceVersion) did not hold. Worded as
    /// the apiserver words it, with the kind's name (`Pod`, not `pods`), also in `details.kind`.
    #[error("Operation cannot be fulfilled on {} \"{name}\": {detail}", kind.kind_name())]
    Conflict {
        /// The kind.
        kind: Kind,
        /// The object's name.
        name: String,
        /// `the UID in the precondition (…) does not match the UID in record (…). The object
        /// might have been deleted and then recreated` (or the resourceVersion equivalent).
        detail: String,
    },
    /// 422 `Invalid`: the object fails validation (it has no name; a pod field the apiserver
    /// refuses). Worded as the apiserver words it, with the kind's name (`Pod`), also in
    /// `details.kind`, and one `details.causes` entry per field error.
    #[error("{} \"{name}\" is invalid: {}", kind.kind_name(), joined(causes))]
    Invalid {
        /// The kind.
        kind: Kind,
        /// The object's name (may be empty).
        name: String,
        /// The field errors, in the apiserver's order (at least one).
        causes: Vec<FieldCause>,
    },
    /// 403 `Forbidden` from an admission plugin that resolves a class a created pod names
    /// (Priority, RuntimeClass) when no class of that name can exist (see
    /// [`crate::ClusterModel::create_pod`]). The message is the real apiserver's, word for word.
    #[error("pods \"{pod}\" is forbidden: {detail}")]
    AdmissionForbidden {
        /// The refused pod's name.
        pod: String,
        /// The plugin's words (`no PriorityClass with name X was found`).
        detail: String,
    },
    /// 403 `Forbidden` from ServiceAccount admission: the account a created pod runs as does not
    /// exist in its namespace (see [`crate::ClusterModel::set_service_account_admission`]). The
    /// message is the real apiserver's, word for word.
    #[error(
        "pods \"{pod}\" is forbidden: error looking up service account {namespace}/{account}: \
         serviceaccount \"{account}\" not found"
    )]
    ServiceAccountMissing {
        /// The refused pod's name.
        pod: String,
        /// Its namespace.
        namespace: String,
        /// The missing account.
        account: String,
    },
    /// 400 `BadRequest`: a malformed selector, continue token or mismatched namespace.
    #[error("{message}")]
    BadRequest {
        /// The apiserver's message.
        message: String,
    },
    /// 410 `Expired`: a continue token or watch resourceVersion is older than the compaction
    /// horizon (see [`crate::ClusterModel::compact`]).
    #[error("{message}")]
    Expired {
        /// The apiserver's message.
        message: String,
    },
}

impl ModelError {
    /// The HTTP status code the apiserver answers with.
    pub fn code(&self) -> u16 {
        match self {
            Self::NotFound { .. } => 404,
            Self::AlreadyExists { .. } | Self::Conflict { .. } => 409,
            Self::Invalid { .. } => 422,
            Self::ServiceAccountMissing { .. } | Self::AdmissionForbidden { .. } => 403,
            Self::BadRequest { .. } => 400,
            Self::Expired { .. } => 410,
        }
    }

    /// The literal `Status.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "NotFound",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Conflict { .. } => "Conflict",
            Self::Invalid { .. } => "Invalid",
            Self::ServiceAccountMissing { .. } | Self::AdmissionForbidden { .. } => "Forbidden",
            Self::BadRequest { .. } => "BadRequest",
            Self::Expired { .. } => "Expired",
        }
    }

    /// The `Status` object the apiserver would send as the response body.
    pub fn to_status(&self) -> Status {
        let details = match self {
            Self::Conflict { kind, name, .. } => Some(StatusDetails {
                kind: Some(kind.kind_name().to_owned()),
                name: Some(name.clone()),
                ..StatusDetails::default()
            }),
            Self::Invalid { kind, name, causes } => Some(StatusDetails {
                kind: Some(kind.kind_name().to_owned()),
                name: Some(name.clone()),
                causes: Some(
                    causes
                        .iter()
                        .map(|c| StatusCause {
                            field: Some(c.field.clone()),
                            message: Some(c.message.clone()),
                            reason: Some(c.reason.to_owned()),
                        })
                        .collect(),
                ),
                ..StatusDetails::default()
            }),
            Self::NotFound { kind, name } | Self::AlreadyExists { kind, name } => {
                Some(StatusDetails {
                    kind: Some(kind.resource().to_owned()),
                    name: Some(name.clone()),
                    ..StatusDetails::default()
                })
            }
            Self::ServiceAccountMissing { pod, .. } | Self::AdmissionForbidden { pod, .. } => {
                Some(StatusDetails {
                    kind: Some(Kind::Pod.resource().to_owned()),
                    name: Some(pod.clone()),
                    ..StatusDetails::default()
                })
            }
            Self::BadRequest { .. } | Self::Expired { .. } => None,
        };
        Status {
            code: Some(i32::from(self.code())),
            details,
            message: Some(self.to_string()),
            reason: Some(self.reason().to_owned()),
            status: Some("Failure".to_owned()),
            ..Status::default()
        }
    }
}
