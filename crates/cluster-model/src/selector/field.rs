//! Field selectors: the `fieldSelector` parameter parsed for one kind (`label=value`, `==`,
//! `!=`), the field labels each kind supports, and [`HasFields`], how an object's fields are
//! read.
//!
//! Layer: pure parsing and matching; performs no I/O.

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Secret, ServiceAccount};

use super::validation::bad;
use crate::error::{Kind, ModelError};

/// Objects whose fields a [`FieldSelector`] can read.
pub trait HasFields {
    /// The kind, which decides which field labels are supported.
    const KIND: Kind;
    /// The value of a supported field label (`None` when the object lacks it; it then compares
    /// as the empty string, as on the apiserver).
    fn field(&self, label: &str) -> Option<String>;
}

impl HasFields for Pod {
    const KIND: Kind = Kind::Pod;
    fn field(&self, label: &str) -> Option<String> {
        match label {
            "metadata.name" => self.metadata.name.clone(),
            "metadata.namespace" => self.metadata.namespace.clone(),
            "status.phase" => self.status.as_ref().and_then(|s| s.phase.clone()),
            "spec.nodeName" => self.spec.as_ref().and_then(|s| s.node_name.clone()),
            _ => None,
        }
    }
}

impl HasFields for Secret {
    const KIND: Kind = Kind::Secret;
    fn field(&self, label: &str) -> Option<String> {
        match label {
            "metadata.name" => self.metadata.name.clone(),
            "metadata.namespace" => self.metadata.namespace.clone(),
            "type" => self.type_.clone(),
            _ => None,
        }
    }
}

impl HasFields for Namespace {
    const KIND: Kind = Kind::Namespace;
    fn field(&self, label: &str) -> Option<String> {
        match label {
            "metadata.name" => self.metadata.name.clone(),
            "status.phase" => self.status.as_ref().and_then(|s| s.phase.clone()),
            _ => None,
        }
    }
}

impl HasFields for ServiceAccount {
    const KIND: Kind = Kind::ServiceAccount;
    fn field(&self, label: &str) -> Option<String> {
        match label {
            "metadata.name" => self.metadata.name.clone(),
            "metadata.namespace" => self.metadata.namespace.clone(),
            _ => None,
        }
    }
}

impl HasFields for Node {
    const KIND: Kind = Kind::Node;
    fn field(&self, label: &str) -> Option<String> {
        match label {
            "metadata.name" => self.metadata.name.clone(),
            _ => None,
        }
    }
}

fn supported_fields(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Pod => &[
            "metadata.name",
            "metadata.namespace",
            "status.phase",
            "spec.nodeName",
        ],
        Kind::Secret => &["metadata.name", "metadata.namespace", "type"],
        Kind::Namespace => &["metadata.name", "status.phase"],
        Kind::ServiceAccount => &["metadata.name", "metadata.namespace"],
        Kind::Node => &["metadata.name"],
    }
}

/// One field requirement: `label=value` (also `==`) or `label!=value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field label (`metadata.name`).
    pub label: String,
    /// The compared value.
    pub value: String,
    /// `true` for `!=`.
    pub negated: bool,
}

/// A parsed field selector for one kind: the conjunction of its requirements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parse the `fieldSelector` query parameter for objects of `kind`.
    ///
    /// # Errors
    /// [`ModelError::BadRequest`] for a requirement without an operator
    /// (`invalid selector: 'x'; can't understand 'x'`) or a field label the kind does not support
    /// (`field label not supported: x`).
    pub fn parse(kind: Kind, input: &str) -> Result<Self, ModelError> {
        let mut requirements = Vec::new();
        if input.trim().is_empty() {
            return Ok(Self::default());
        }
        for part in input.split(',') {
            let (label, value, negated) = if let Some((l, v)) = part.split_once("!=") {
                (l, v, true)
            } else if let Some((l, v)) = part.split_once("==") {
                (l, v, false)
            } else if let Some((l, v)) = part.split_once('=') {
                (l, v, false)
            } else {
                return Err(bad(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                )));
            };
            let label = label.trim();
            if !supported_fields(kind).contains(&label) {
                return Err(bad(format!("field label not supported: {label}")));
            }
            requirements.push(FieldRequirement {
                label: label.to_owned(),
                value: value.trim().to_owned(),
                negated,
            });
        }
        Ok(Self { requirements })
    }

    /// The requirements, in the order written.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether `object` satisfies every requirement.
    pub fn matches<T: HasFields>(&self, object: &T) -> bool {
        self.requirements.iter().all(|r| {
            let have = object.field(&r.label).unwrap_or_default();
            (have == r.value) != r.negated
        })
    }
}
