//! Pure deploy decisions (deploy.md §6–§9): no Kubernetes types, no clock, no I/O, no randomness.
#![deny(missing_docs)]

pub mod facts;
pub mod fence;

pub use fence::Fence;
