//! Seed discovery's pure half (seeds.md): the configuration and its validation, lean decoding of
//! pod list bytes, the filter, the port lookup, the report and sorted output.
//!
//! This crate decides and decodes; it never depends on a Kubernetes client (`kube`), so any
//! transport can feed it bytes. The I/O half, `PodSeeds`, lives in `apiary-seeds-kube`. It
//! chooses no k8s-openapi version feature (the crate where the build ends does), and its modules
//! are private: every public item has one path, the crate root.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod config;
mod diagnostic;
mod extract;
mod filter;
mod lean;
mod pod;
mod warn;

pub use config::{InvalidPods, Pods, Port};
pub use diagnostic::{NoAddresses, PORT_NAMES_SHOWN};
pub use extract::{
    Extraction, Extractor, PodWarning, Report, SkipCounts, SkipReason, Verdict, WarningDetail,
    evaluate, evaluate_with, extract, extract_with,
};
pub use filter::{Filter, IpFamily, UnknownIpFamily};
pub use lean::{
    DecodeError, LeanContainer, LeanPod, LeanPodList, LeanPort, LeanStatus, LeanWatchEvent,
    decode_pod_list, decode_watch_event,
};
pub use warn::WarnOnce;

impl Extraction {
    /// Zero addresses become [`NoAddresses`] (seeds.md § The consumer contract, rule 1).
    ///
    /// # Errors
    /// [`NoAddresses`] carrying the selector, namespace, port and report when no pod contributed
    /// an address.
    pub fn into_result(self, pods: &Pods, namespace: &str) -> Result<Extraction, Box<NoAddresses>> {
        if self.addresses.is_empty() {
            return Err(Box::new(NoAddresses {
                selector: pods.label_selector.clone(),
                namespace: namespace.to_owned(),
                port: pods.port.clone(),
                filter: self.filter,
                report: self.report,
            }));
        }
        Ok(self)
    }
}
