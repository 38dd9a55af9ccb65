//! The in-memory apiserver + kubelet model (object store, resourceVersions, graceful deletion,
//! kubelet scripts) shared by `apiary-substrate`'s fake and `apiary-apiserver-sim`. Time is an
//! input: the caller advances the model's clock; the model never reads a real clock.
#![deny(missing_docs)]
