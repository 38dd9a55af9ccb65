//! The end-to-end tests of the built `apiary` binary, in one test binary (each module was its own
//! binary once; one binary links once): the scenarios on both backends (`<scenario>::sim` and
//! `<scenario>::real`), the refusals, the message snapshots, the buzz provider's wire and
//! interop, and the demo (with the `demo` feature). The real-node tier is the `real_node` binary.

#[path = "../common/mod.rs"]
mod common;

mod buzz_interop;
mod buzz_scenarios;
mod buzz_wire;
mod commands;
#[cfg(feature = "demo")]
mod demo;
mod expiry;
mod isolate;
mod list;
mod logs;
mod messages;
mod pod_options;
mod redaction;
mod refusals;
mod refused;
mod replace;
mod seeds;
mod staying_up;
mod terminal;
mod workspace;
