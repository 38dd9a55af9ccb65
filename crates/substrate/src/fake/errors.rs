//! The fake substrate's errors: ready-made apiserver refusals ([`api_error`], [`server_error`],
//! [`transport_failure`]) worded like the real apiserver's, and the translation of model errors
//! into [`RequestFailure`]s. Pure functions, test-only; no state, and no environment value ever
//! enters a message.

use apiary_classify::failure::{Operation, RequestFailure, TransportCause};
use apiary_cluster_model::ModelError;

/// An apiserver refusal with a chosen status.
pub fn api_error(
    operation: Operation,
    object: &str,
    code: u16,
    reason: &str,
    message: &str,
) -> RequestFailure {
    RequestFailure::answered(operation, object, code, reason, message)
}

/// No answer at all (`connection reset by peer`): a transport failure carries no reason.
pub fn transport_failure(operation: Operation, object: &str) -> RequestFailure {
    RequestFailure::lost(
        operation,
        object,
        TransportCause::Other,
        "connection reset by peer",
    )
}

/// 500 `InternalError`.
pub fn server_error(operation: Operation, object: &str) -> RequestFailure {
    api_error(
        operation,
        object,
        500,
        "InternalError",
        "Internal error occurred: etcdserver: request timed out",
    )
}

/// The name in an object (`agents/x` → `x`); empty for a list's `in agents matching …`.
pub(crate) fn object_name(object: &str) -> &str {
    if object.starts_with("in ") {
        return "";
    }
    object.split_once('/').map_or("", |(_, n)| n)
}

pub(crate) fn model_error(
    operation: Operation,
    object: &str,
    error: &ModelError,
) -> RequestFailure {
    api_error(
        operation,
        object,
        error.code(),
        error.reason(),
        &error.to_string(),
    )
}
