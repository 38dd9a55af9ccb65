//! A loopback Kubernetes apiserver simulator serving a subset of core/v1 (namespaces, pods,
//! Secrets) over HTTP on 127.0.0.1, as the HTTP face of `apiary-cluster-model` on a scaled real
//! clock.
//!
//! Layer: test and demo infrastructure. It owns no object state (the cluster model does); it
//! routes requests, injects faults, logs requests, stamps `Date` headers and writes kubeconfigs.
//! It must never contact a real cluster or touch the user's kubeconfig.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use apiary_apiserver_sim::{SimOptions, Simulator};
//! let sim = Simulator::start(SimOptions::default().with_time_scale(1000.0)).await?;
//! sim.write_kubeconfig(std::path::Path::new("/tmp/sim.kubeconfig"), "default")?;
//! println!("serving on {}", sim.url());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod api;
mod clock;
mod discovery;
mod faults;
mod kubeconfig;
mod log;
mod protobuf;
mod route;
mod server;
mod status;
mod table;
mod watch;

pub use apiary_cluster_model as model;
pub use clock::{ScaledClock, http_date};
pub use faults::{
    Budget, DateMode, FaultAction, FaultRule, Faults, GARBLED_DATE, Matcher, RequestFacts, RuleId,
};
pub use kubeconfig::{CONTEXT_NAME, kubeconfig_yaml};
pub use log::{LoggedRequest, RequestLog};
pub use route::{Resource, Verb};
pub use server::{SimOptions, Simulator};
pub use status::ApiError;
