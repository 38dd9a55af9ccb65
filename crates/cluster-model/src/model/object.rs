//! The values the model hands out beside the typed objects: [`Object`] (an object of any stored
//! kind, as a watch event carries it) and [`PodDeletion`] (what a pod delete did).
//!
//! Layer: part of the pure model; plain data. Its `Debug` output never shows a Secret's values.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::error::Kind;
use crate::selector::{FieldSelector, LabelSelector};

/// An object of any stored kind. `Debug` shows a Secret's name and keys, never its values.
#[allow(clippy::large_enum_variant)] // reason: plain values matched by the simulator; boxing adds noise for no measurable gain.
#[derive(Clone, PartialEq)]
pub enum Object {
    /// A namespace.
    Namespace(Namespace),
    /// A pod.
    Pod(Pod),
    /// A Secret.
    Secret(Secret),
}

/// The names of a Secret's keys, for value-free `Debug` output.
fn secret_keys(secret: &Secret) -> Vec<&String> {
    let mut keys: Vec<&String> = secret
        .data
        .iter()
        .flat_map(BTreeMap::keys)
        .chain(secret.string_data.iter().flat_map(BTreeMap::keys))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Namespace(o) => f.debug_tuple("Namespace").field(o).finish(),
            Self::Pod(o) => f.debug_tuple("Pod").field(o).finish(),
            Self::Secret(o) => f
                .debug_struct("Secret")
                .field("metadata", &o.metadata)
                .field("keys", &secret_keys(o))
                .field("immutable", &o.immutable)
                .finish_non_exhaustive(),
        }
    }
}

impl Object {
    /// The object's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Self::Namespace(_) => Kind::Namespace,
            Self::Pod(_) => Kind::Pod,
            Self::Secret(_) => Kind::Secret,
        }
    }

    /// The object's metadata.
    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            Self::Namespace(o) => &o.metadata,
            Self::Pod(o) => &o.metadata,
            Self::Secret(o) => &o.metadata,
        }
    }

    /// Whether the object matches the selectors (absent = match everything). Field selectors
    /// must have been parsed for this object's kind.
    pub fn matches(&self, labels: &LabelSelector, fields: &FieldSelector) -> bool {
        labels.matches(self.metadata().labels.as_ref())
            && match self {
                Self::Namespace(o) => fields.matches(o),
                Self::Pod(o) => fields.matches(o),
                Self::Secret(o) => fields.matches(o),
            }
    }

    /// The object as the apiserver serializes it (with `apiVersion` and `kind`).
    pub fn to_json(&self) -> serde_json::Value {
        let value = match self {
            Self::Namespace(o) => serde_json::to_value(o),
            Self::Pod(o) => serde_json::to_value(o),
            Self::Secret(o) => serde_json::to_value(o),
        };
        // k8s-openapi objects serialize infallibly (plain maps, strings and numbers).
        value.unwrap_or(serde_json::Value::Null)
    }
}

/// What a successful pod delete did.
#[derive(Clone, Debug, PartialEq)]
pub enum PodDeletion {
    /// Removed from the store at once (terminal or unscheduled pod, or grace 0); the pod's last
    /// state.
    Removed(Pod),
    /// Marked for graceful deletion: `deletionTimestamp` (= now + grace) and
    /// `deletionGracePeriodSeconds` set; removed once the grace has elapsed on the model clock.
    /// Deleting a pod that is already marked returns it unchanged.
    Marked(Pod),
}

impl PodDeletion {
    /// The pod the delete answered with.
    pub fn pod(&self) -> &Pod {
        match self {
            Self::Removed(p) | Self::Marked(p) => p,
        }
    }
}
