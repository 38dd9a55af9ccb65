//! The integration tests of `apiary-seeds`, in one test binary (each module was its own binary
//! once; one binary links once): extraction, configuration, diagnostics, logging, the lean decoder,
//! the serde form (with the `serde` feature) and the properties.

#[path = "../support/mod.rs"]
mod support;

mod bench_fixture;
mod config;
mod diagnostic;
mod extraction;
mod family_and_running;
mod lean_decode;
mod logging;
mod properties;
mod serde_form;
