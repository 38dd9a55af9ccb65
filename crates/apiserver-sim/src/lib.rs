//! A loopback Kubernetes apiserver simulator serving a subset of core/v1 over HTTP on 127.0.0.1.
#![deny(missing_docs)]
