//! Label and field selectors with the apiserver's grammar, messages and matching rules (its
//! v1.20 parser, checked against a real one by `apiserver-sim/tests/sim/differential.rs`): equality
//! (`=`, `==`, `!=`), set-based (`in`, `notin`), existence (`key`, `!key`) and integer (`>`, `<`)
//! label requirements, and
//! the field selectors `metadata.name`, `metadata.namespace` and (pods) `status.phase` /
//! `spec.nodeName`, (Secrets) `type`. Parse errors are reported as
//! [`ModelError::BadRequest`](crate::ModelError::BadRequest), as
//! the apiserver answers a malformed selector with 400. Pure: performs no I/O.
//!
//! One path per item: the selector types live here, in `selector`; the files below are private.

mod field;
mod label;
mod lexer;
pub(crate) mod validation;

pub use field::{FieldRequirement, FieldSelector, HasFields};
pub use label::{LabelSelector, Requirement};

#[cfg(test)]
mod tests;
