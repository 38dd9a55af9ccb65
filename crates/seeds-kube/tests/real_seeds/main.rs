//! The real-server tier of `PodSeeds` (README.md § Testing, crates/envtest/README.md), one test
//! binary: list and watch mode against a real `kube-apiserver` + etcd (`seeds`), and its bytes
//! on the wire with and without compression (`gzip`). Its name starts with `real_`, which is how
//! `cargo xtask ci` and `.config/nextest.toml` tell this tier from the mock tier.
//!
//! Layer: integration tests; loopback only; every test skips without `KUBEBUILDER_ASSETS` (and
//! fails instead with `APIARY_ENVTEST_REQUIRED=1`).

mod gzip;
mod seeds;
mod stage;
