//! The buzz provider binding: the wire protocol, configuration, identity and environment of the
//! buzz desktop's Kubernetes provider, as pure functions over values.
//!
//! Layer: the functional core of the `buzz-backend-kubernetes` binary. Nothing here performs
//! I/O, reads the process environment or a clock; the only randomness (the generation
//! placeholder and the schema's namespace default) comes through [`entropy::Entropy`], which
//! tests replace.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod binding;
pub mod config;
pub mod entropy;
pub mod env;
pub mod identity;
pub mod image;
pub mod outcome;
pub mod path;
pub mod plan;
pub mod pod;
pub mod schema;
pub mod wire;
