//! The integration tests of the loopback simulator, in one test binary (each module was its own
//! binary once; one binary links once): the HTTP shell, kube-rs and kubectl against it, objects,
//! watches, pod patches, nodes, service accounts, the binary, and the differential checks against
//! the real kube-apiserver.

#[path = "../common/mod.rs"]
mod common;

mod binary;
mod differential;
mod http_shell;
mod kube_client;
mod kubectl;
mod nodes;
mod objects;
mod pod_patch;
mod service_accounts;
mod watch;
