//! Resource requests (namespaces, pods, Secrets) answered from the shared cluster model.
//!
//! Layer: the mapping between HTTP requests and model operations. Placeholder until the model's
//! API is committed.

use bytes::Bytes;
use http::Response;

use crate::route::{Query, ResourceRequest};
use crate::server::{Shared, SimBody, error_response};
use crate::status::ApiError;

pub(crate) fn serve(
    _shared: &Shared,
    _req: &ResourceRequest,
    _query: &Query,
    _body: &Bytes,
) -> Response<SimBody> {
    error_response(&ApiError::unknown_path())
}
