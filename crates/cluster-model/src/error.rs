//! The model's refusals, spelled as the real apiserver spells them (`Status.code`, `Status.reason`,
//! `Status.message`), so the fake and the simulator answer with the same literals a real cluster
//! would. Pure data: performs no I/O.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusDetails};

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
    /// 422 `Invalid`: the object fails validation (for example it has no name).
    #[error("{kind} \"{name}\" is invalid: {detail}")]
    Invalid {
        /// The kind.
        kind: Kind,
        /// The object's name (may be empty).
        name: String,
        /// What is wrong.
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
            Self::ServiceAccountMissing { .. } => 403,
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
            Self::ServiceAccountMissing { .. } => "Forbidden",
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
            Self::NotFound { kind, name }
            | Self::AlreadyExists { kind, name }
            | Self::Invalid { kind, name, .. } => Some(StatusDetails {
                kind: Some(kind.resource().to_owned()),
                name: Some(name.clone()),
                ..StatusDetails::default()
            }),
            Self::ServiceAccountMissing { pod, .. } => Some(StatusDetails {
                kind: Some(Kind::Pod.resource().to_owned()),
                name: Some(pod.clone()),
                ..StatusDetails::default()
            }),
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
