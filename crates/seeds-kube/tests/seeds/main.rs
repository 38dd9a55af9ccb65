//! The mock and simulator tier of `PodSeeds` (seeds.md § Scenario inventory), one test binary:
//! list mode (`list`) and watch mode (`watch`) through a real `kube::Client` over a scripted
//! service (`mock`), the loopback simulator (`sim`), the `seeds_resolve` span (`span`), the
//! `tellus` feature (`tellus`, compiled only with it) and its dependency hygiene (`features`), and
//! the shipped Role (`rbac`).
//!
//! One binary rather than one per file: each test binary links kube, tokio and the simulator on
//! its own, and the modules share the scripted service. Layer: integration tests; loopback only.

mod features;
mod list;
mod mock;
mod rbac;
mod sim;
mod span;
mod tellus;
mod watch;
