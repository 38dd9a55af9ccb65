//! The only library crate that talks to the Kubernetes apiserver (through kube-rs).
#![deny(missing_docs)]
