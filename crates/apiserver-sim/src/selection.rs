//! What a list or watch request selects, in the model's terms: the model kind of a served
//! resource and the list options (selectors, `limit`, `continue`) of a query.
//!
//! Layer: pure decoding between the route's vocabulary and the model's. It performs no I/O,
//! touches no model and must not decide which objects match (the model does).

use apiary_cluster_model::{Kind, ListOptions};

use crate::route::{Query, Resource};
use crate::status::ApiError;

/// The model kind of a resource.
pub(crate) fn kind_of(resource: Resource) -> Kind {
    match resource {
        Resource::Namespaces => Kind::Namespace,
        Resource::Pods => Kind::Pod,
        Resource::Secrets => Kind::Secret,
        Resource::ServiceAccounts => Kind::ServiceAccount,
        Resource::Nodes => Kind::Node,
    }
}

/// The list options of a list or watch query.
pub(crate) fn list_options(query: &Query) -> Result<ListOptions, ApiError> {
    let limit = match query.non_empty("limit") {
        None => None,
        Some(l) => Some(l.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!(
                "invalid value for limit: {l:?} is not a non-negative integer"
            ))
        })?),
    };
    Ok(ListOptions {
        label_selector: query.non_empty("labelSelector").map(str::to_owned),
        field_selector: query.non_empty("fieldSelector").map(str::to_owned),
        limit,
        continue_token: query.non_empty("continue").map(str::to_owned),
    })
}
