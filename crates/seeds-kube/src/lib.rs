//! Seed discovery's I/O half: `PodSeeds` resolves the `ip:port` of every live pod matching a
//! label selector through the apiserver (kube-rs), in list mode or watch mode, and with the
//! `tellus` feature implements `tellus::cluster::SeedDiscovery`. The pure half (configuration,
//! lean decoding, the filter, the report) is `apiary-seeds`.
//!
//! Layer: the imperative shell of seed discovery. It depends on no other apiary crate than
//! `apiary-seeds`, so a user who only discovers seeds compiles no deploy code. The HTTP exchange
//! layer it sends through is public for `apiary-substrate-kube` (the deploy shell), which shares
//! it, and hidden from the documentation; every other public item has one path, the crate root.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

#[doc(hidden)]
pub mod exchange;
mod pod_seeds;

pub use pod_seeds::{PodSeeds, SeedsError, SeedsMode, SeedsOptions, SeedsResolution};
