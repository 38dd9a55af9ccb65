//! The seam between apiary's pure decisions and the apiserver: the `Substrate` trait, builders,
//! observation and the driver. Performs no I/O itself.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod build;
pub mod config;
pub mod dotenv;
pub mod driver;
pub mod env;
#[cfg(feature = "fake")]
pub mod fake;
pub mod image;
pub mod intent;
pub mod naming;
pub mod observe;
pub mod pod_options;
// Private: its items have one public path, the crate root (re-exported below).
mod substrate;
mod timeout;

pub use substrate::{
    CreateAnswer, DeleteAnswer, Listed, NamespaceCheck, NamespaceFailure, Substrate,
};
