//! The buzz provider binding: the wire protocol, configuration, identity and environment of the
//! buzz desktop's Kubernetes provider, as pure functions over values.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
